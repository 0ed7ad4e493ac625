// Avahi's client library: browsing and resolving DNS-SD services through avahi-daemon (over the D-Bus system bus).
// libavahi-client is loaded with dlopen when an agent or a command first browses (a broker given as "mdns"), so that
// an agent with a broker URL maps neither it nor what it pulls in (libdbus, libsystemd, libgcrypt, liblzma, libzstd,
// liblz4, libcap: about 1 MiB resident). The types and constants are the headers'; the calls go through the table
// that coaty_avahi_load fills, by the wrappers below.
#ifndef COATY_EDGE_AVAHI_H
#define COATY_EDGE_AVAHI_H

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/address.h>
#include <avahi-common/error.h>
#include <avahi-common/thread-watch.h>
#include <net/if.h>
#include <stddef.h>

/// The library loaded (its soname, as the package's dependency libavahi-client3 installs it).
#define COATY_AVAHI_LIBRARY "libavahi-client.so.3"

typedef struct {
    __typeof__(avahi_threaded_poll_new) *threaded_poll_new;
    __typeof__(avahi_threaded_poll_get) *threaded_poll_get;
    __typeof__(avahi_threaded_poll_start) *threaded_poll_start;
    __typeof__(avahi_threaded_poll_stop) *threaded_poll_stop;
    __typeof__(avahi_threaded_poll_free) *threaded_poll_free;
    __typeof__(avahi_client_new) *client_new;
    __typeof__(avahi_client_free) *client_free;
    __typeof__(avahi_client_errno) *client_errno;
    __typeof__(avahi_strerror) *strerror;
    __typeof__(avahi_service_browser_new) *service_browser_new;
    __typeof__(avahi_service_resolver_new) *service_resolver_new;
    __typeof__(avahi_service_resolver_free) *service_resolver_free;
    __typeof__(avahi_address_snprint) *address_snprint;
} coaty_avahi_calls;

/// Filled by coaty_avahi_load; not to be used before it succeeded.
extern coaty_avahi_calls coaty_avahi;

/// Loads libavahi-client once (later calls return at once): 0, or -1 with the reason in `error`.
int coaty_avahi_load(char *error, size_t error_size);

static inline AvahiThreadedPoll *coaty_avahi_threaded_poll_new(void) { return coaty_avahi.threaded_poll_new(); }
static inline const AvahiPoll *coaty_avahi_threaded_poll_get(AvahiThreadedPoll *poll) {
    return coaty_avahi.threaded_poll_get(poll);
}
static inline int coaty_avahi_threaded_poll_start(AvahiThreadedPoll *poll) {
    return coaty_avahi.threaded_poll_start(poll);
}
static inline int coaty_avahi_threaded_poll_stop(AvahiThreadedPoll *poll) {
    return coaty_avahi.threaded_poll_stop(poll);
}
static inline void coaty_avahi_threaded_poll_free(AvahiThreadedPoll *poll) { coaty_avahi.threaded_poll_free(poll); }
static inline AvahiClient *coaty_avahi_client_new(const AvahiPoll *poll, AvahiClientFlags flags,
                                                  AvahiClientCallback callback, void *userdata, int *error) {
    return coaty_avahi.client_new(poll, flags, callback, userdata, error);
}
static inline void coaty_avahi_client_free(AvahiClient *client) { coaty_avahi.client_free(client); }
static inline int coaty_avahi_client_errno(AvahiClient *client) { return coaty_avahi.client_errno(client); }
static inline const char *coaty_avahi_strerror(int error) { return coaty_avahi.strerror(error); }
static inline AvahiServiceBrowser *coaty_avahi_service_browser_new(AvahiClient *client, AvahiIfIndex interface,
                                                                   AvahiProtocol protocol, const char *type,
                                                                   const char *domain, AvahiLookupFlags flags,
                                                                   AvahiServiceBrowserCallback callback,
                                                                   void *userdata) {
    return coaty_avahi.service_browser_new(client, interface, protocol, type, domain, flags, callback, userdata);
}
static inline AvahiServiceResolver *coaty_avahi_service_resolver_new(
    AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol, const char *name, const char *type,
    const char *domain, AvahiProtocol aprotocol, AvahiLookupFlags flags, AvahiServiceResolverCallback callback,
    void *userdata) {
    return coaty_avahi.service_resolver_new(client, interface, protocol, name, type, domain, aprotocol, flags,
                                            callback, userdata);
}
static inline int coaty_avahi_service_resolver_free(AvahiServiceResolver *resolver) {
    return coaty_avahi.service_resolver_free(resolver);
}
static inline char *coaty_avahi_address_snprint(char *text, size_t length, const AvahiAddress *address) {
    return coaty_avahi.address_snprint(text, length, address);
}

#endif
