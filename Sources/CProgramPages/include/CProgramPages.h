// The pages of the program's and its libraries' file mappings (coaty-edge run: unmapping start-up code once the agent
// runs).
#ifndef COATY_EDGE_PROGRAM_PAGES_H
#define COATY_EDGE_PROGRAM_PAGES_H

#include <stddef.h>

/// Unmaps every read-only segment of the main program and of the shared libraries loaded (their code, read-only data,
/// symbol and unwind tables) with madvise(MADV_DONTNEED), so that only the pages used afterwards come back, each on its
/// first use as a minor fault from the page cache. The segments are file pages never written (the loader writes only
/// the writable ones, which stay as they are; objects with text relocations and the vDSO are left alone): nothing is
/// lost. Returns 0 and the bytes advised in *advised, or -1 with errno set by the first madvise that failed (the other
/// segments are advised all the same, and counted in *advised).
int coaty_program_unmap_read_only_segments(size_t *advised);

#endif
