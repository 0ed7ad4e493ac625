#include <mosquitto.h>
// The transport's network thread waits on the broker socket and on an eventfd that wakes it for work from other
// threads; Glibc's module does not export eventfd.
#include <sys/eventfd.h>
