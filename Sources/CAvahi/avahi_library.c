#include "CAvahi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

coaty_avahi_calls coaty_avahi;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;

int coaty_avahi_load(char *error, size_t error_size) {
    pthread_mutex_lock(&lock);
    if (loaded) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    // Never closed: Avahi's client keeps threads and D-Bus state of its own.
    void *handle = dlopen(COATY_AVAHI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, error_size, "cannot load %s (apt-get install libavahi-client3): %s", COATY_AVAHI_LIBRARY,
                 dlerror());
        pthread_mutex_unlock(&lock);
        return -1;
    }
    coaty_avahi_calls calls;
    // Symbols are looked up in libavahi-client and the libraries it depends on (libavahi-common's among them).
    struct {
        void **slot;
        const char *name;
    } symbols[] = {
        {(void **)&calls.threaded_poll_new, "avahi_threaded_poll_new"},
        {(void **)&calls.threaded_poll_get, "avahi_threaded_poll_get"},
        {(void **)&calls.threaded_poll_start, "avahi_threaded_poll_start"},
        {(void **)&calls.threaded_poll_stop, "avahi_threaded_poll_stop"},
        {(void **)&calls.threaded_poll_free, "avahi_threaded_poll_free"},
        {(void **)&calls.client_new, "avahi_client_new"},
        {(void **)&calls.client_free, "avahi_client_free"},
        {(void **)&calls.client_errno, "avahi_client_errno"},
        {(void **)&calls.strerror, "avahi_strerror"},
        {(void **)&calls.service_browser_new, "avahi_service_browser_new"},
        {(void **)&calls.service_resolver_new, "avahi_service_resolver_new"},
        {(void **)&calls.service_resolver_free, "avahi_service_resolver_free"},
        {(void **)&calls.address_snprint, "avahi_address_snprint"},
    };
    for (size_t index = 0; index < sizeof symbols / sizeof symbols[0]; index++) {
        *symbols[index].slot = dlsym(handle, symbols[index].name);
        if (*symbols[index].slot == NULL) {
            snprintf(error, error_size, "%s lacks %s", COATY_AVAHI_LIBRARY, symbols[index].name);
            dlclose(handle);
            pthread_mutex_unlock(&lock);
            return -1;
        }
    }
    coaty_avahi = calls;
    loaded = true;
    pthread_mutex_unlock(&lock);
    return 0;
}
