#define _GNU_SOURCE
#include "CBuildInfo.h"

#include <link.h>
#include <string.h>

static int find_swift_core(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (info->dlpi_name != NULL && strstr(info->dlpi_name, "libswiftCore.so") != NULL) {
        *(bool *)found = true;
        return 1;
    }
    return 0;
}

// Asks the dynamic loader what it actually mapped rather than trusting a build flag: a binary that carries its own
// runtime never maps libswiftCore.so.
bool coaty_edge_swift_runtime_is_shared(void) {
    bool found = false;
    dl_iterate_phdr(find_swift_core, &found);
    return found;
}
