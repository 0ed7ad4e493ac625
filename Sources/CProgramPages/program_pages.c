#define _GNU_SOURCE
#include "CProgramPages.h"

#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

struct unmapping {
    size_t advised;
    int error;
};

static int unmap_main_program(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct unmapping *unmapping = data;
    // The main program comes first, with an empty name; the shared libraries after it are not ours to touch.
    if (info->dlpi_name != NULL && info->dlpi_name[0] != 0) return 1;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (ElfW(Half) index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        // A writable segment holds data (relocated pointers, globals, the heap's start): never dropped.
        if (header->p_type != PT_LOAD || (header->p_flags & PF_W) != 0) continue;
        uintptr_t start = (info->dlpi_addr + header->p_vaddr) & ~(page - 1);
        // Only whole pages of the segment: a last page shared with a writable segment stays.
        uintptr_t end = (info->dlpi_addr + header->p_vaddr + header->p_filesz) & ~(page - 1);
        if (end <= start) continue;
        if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) {
            unmapping->error = errno;
            return 1;
        }
        unmapping->advised += end - start;
    }
    return 1;  // the first entry is the main program: done
}

int coaty_program_unmap_read_only_segments(size_t *advised) {
    struct unmapping unmapping = {0, 0};
    dl_iterate_phdr(unmap_main_program, &unmapping);
    *advised = unmapping.advised;
    if (unmapping.error != 0) {
        errno = unmapping.error;
        return -1;
    }
    return 0;
}
