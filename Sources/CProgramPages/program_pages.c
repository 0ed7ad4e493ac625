#define _GNU_SOURCE
#include "CProgramPages.h"

#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct unmapping {
    size_t advised;
    int error;
};

/// Whether the object's code is relocated in place (text relocations): its read-only pages may then be private
/// copies that differ from the file, which MADV_DONTNEED would throw away.
static bool has_text_relocations(const struct dl_phdr_info *info) {
    for (ElfW(Half) index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type != PT_DYNAMIC) continue;
        for (const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + header->p_vaddr); entry->d_tag != DT_NULL;
             entry++) {
            if (entry->d_tag == DT_TEXTREL) return true;
            if (entry->d_tag == DT_FLAGS && (entry->d_un.d_val & DF_TEXTREL) != 0) return true;
        }
    }
    return false;
}

static int unmap_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct unmapping *unmapping = data;
    // The kernel's vDSO is not a file mapping; an object with text relocations may have written its code pages.
    if (info->dlpi_name != NULL && strstr(info->dlpi_name, "linux-vdso") != NULL) return 0;
    if (has_text_relocations(info)) return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (ElfW(Half) index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        // A writable segment holds data (relocated pointers, globals): never dropped.
        if (header->p_type != PT_LOAD || (header->p_flags & PF_W) != 0) continue;
        // Only the pages wholly inside the segment: a page it shares with a writable neighbour stays.
        uintptr_t start = (info->dlpi_addr + header->p_vaddr + page - 1) & ~(page - 1);
        uintptr_t end = (info->dlpi_addr + header->p_vaddr + header->p_filesz) & ~(page - 1);
        if (end <= start) continue;
        // A segment the kernel refuses (a sealed mapping: EPERM) stays as it is; the others are still advised.
        if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) {
            if (unmapping->error == 0) unmapping->error = errno;
            continue;
        }
        unmapping->advised += end - start;
    }
    return 0;
}

int coaty_program_unmap_read_only_segments(size_t *advised) {
    struct unmapping unmapping = {0, 0};
    dl_iterate_phdr(unmap_object, &unmapping);
    *advised = unmapping.advised;
    if (unmapping.error != 0) {
        errno = unmapping.error;
        return -1;
    }
    return 0;
}
