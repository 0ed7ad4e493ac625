// Avahi's client library: browsing and resolving DNS-SD services through avahi-daemon (over the D-Bus system bus).
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/address.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/thread-watch.h>
#include <net/if.h>
