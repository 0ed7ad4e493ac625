#define _GNU_SOURCE
#include "CBuildInfo.h"

#include <link.h>
#include <string.h>

// Package.swift defines COATY_EDGE_COMMIT for this target only, so that a new commit recompiles this file alone.
#ifndef COATY_EDGE_COMMIT
#define COATY_EDGE_COMMIT "unknown"
#endif

const char *coaty_edge_build_commit(void) { return COATY_EDGE_COMMIT; }

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
