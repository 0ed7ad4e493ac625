// What the binary can say about how it was built (coaty-edge --version).
#ifndef COATY_EDGE_BUILD_INFO_H
#define COATY_EDGE_BUILD_INFO_H

#include <stdbool.h>

/// Whether the Swift runtime (libswiftCore) was loaded from a shared library: false for a build with
/// --static-swift-stdlib, whose binary needs no Swift toolchain on the machine that runs it.
bool coaty_edge_swift_runtime_is_shared(void);

#endif
