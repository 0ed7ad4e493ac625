// What the binary can say about how it was built (coaty-edge --version).
#ifndef COATY_EDGE_BUILD_INFO_H
#define COATY_EDGE_BUILD_INFO_H

#include <stdbool.h>

/// The git commit the binary was built from, as Package.swift found it (COATY_EDGE_COMMIT in the environment of the
/// build, else the checkout's HEAD, with "-dirty" for uncommitted changes), or "unknown" outside a git checkout.
const char *coaty_edge_build_commit(void);

/// Whether the Swift runtime (libswiftCore) was loaded from a shared library: false for a build with
/// --static-swift-stdlib, whose binary needs no Swift toolchain on the machine that runs it.
bool coaty_edge_swift_runtime_is_shared(void);

#endif
