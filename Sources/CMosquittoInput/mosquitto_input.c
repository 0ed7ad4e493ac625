#define _GNU_SOURCE
#include "CMosquittoInput.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef ssize_t (*read_function)(int, void *, size_t);

#if __ELF_NATIVE_CLASS == 64
#define RELOCATION_SYMBOL(info) ELF64_R_SYM(info)
#else
#define RELOCATION_SYMBOL(info) ELF32_R_SYM(info)
#endif

/// The read() that libmosquitto's slots held before: the one the dynamic linker binds for everybody (glibc's, or an
/// LD_PRELOAD library's such as umockdev's).
static read_function system_read;

struct read_buffer {
    int descriptor;
    size_t capacity;
    size_t start;
    size_t end;
    uint64_t system_reads;
    unsigned char bytes[];
};

/// The buffer of the connection that the calling thread serves; each connection has its own network thread.
static _Thread_local struct read_buffer *thread_buffer;

static ssize_t read_from_system(int descriptor, void *bytes, size_t count) {
    if (system_read == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return system_read(descriptor, bytes, count);
}

ssize_t coaty_buffered_read(int descriptor, void *bytes, size_t count) {
    struct read_buffer *buffer = thread_buffer;
    if (buffer == NULL || buffer->descriptor != descriptor || count == 0) {
        return read_from_system(descriptor, bytes, count);
    }
    if (buffer->start == buffer->end) {
        // Nothing buffered: a read as large as the buffer gains nothing from it.
        if (count >= buffer->capacity) {
            buffer->system_reads++;
            return read_from_system(descriptor, bytes, count);
        }
        buffer->system_reads++;
        ssize_t filled = read_from_system(descriptor, buffer->bytes, buffer->capacity);
        // End of file and errors (EAGAIN when nothing has arrived) reach libmosquitto as the system said them.
        if (filled <= 0) return filled;
        buffer->start = 0;
        buffer->end = (size_t)filled;
    }
    size_t available = buffer->end - buffer->start;
    size_t taken = count < available ? count : available;
    memcpy(bytes, buffer->bytes + buffer->start, taken);
    buffer->start += taken;
    return (ssize_t)taken;
}

int coaty_read_buffer_attach(int descriptor, size_t capacity) {
    struct read_buffer *buffer = thread_buffer;
    if (buffer == NULL || buffer->capacity < capacity) {
        coaty_read_buffer_detach();
        buffer = malloc(sizeof(struct read_buffer) + capacity);
        if (buffer == NULL) return -1;
        buffer->capacity = capacity;
        thread_buffer = buffer;
    }
    buffer->descriptor = descriptor;
    buffer->start = 0;
    buffer->end = 0;
    buffer->system_reads = 0;
    return 0;
}

void coaty_read_buffer_detach(void) {
    free(thread_buffer);
    thread_buffer = NULL;
}

size_t coaty_read_buffer_pending(void) {
    struct read_buffer *buffer = thread_buffer;
    return buffer == NULL ? 0 : buffer->end - buffer->start;
}

uint64_t coaty_read_buffer_system_reads(void) {
    struct read_buffer *buffer = thread_buffer;
    return buffer == NULL ? 0 : buffer->system_reads;
}

// Finding libmosquitto's relocation slots for read().

struct dynamic_tables {
    uintptr_t base;
    const ElfW(Sym) *symbols;
    const char *names;
    size_t names_size;
};

/// glibc relocates most addresses of a loaded object's dynamic section in place, but not on every architecture: an
/// address below the object's base is still relative to it.
static uintptr_t loaded_address(uintptr_t base, ElfW(Addr) address) {
    return address < base ? base + address : address;
}

static bool names_read(const struct dynamic_tables *tables, size_t symbol) {
    if (symbol == 0) return false;
    ElfW(Word) name = tables->symbols[symbol].st_name;
    return name < tables->names_size && strcmp(tables->names + name, "read") == 0;
}

/// Points the slot at `address` to `coaty_buffered_read`; a slot in the RELRO region, which the loader made read-only
/// after relocating it (whole pages of it: the page it shares with writable data at its end stays writable), is made
/// writable for the moment of the write.
static bool patch_slot(uintptr_t address, uintptr_t relro_start, uintptr_t relro_end) {
    void **slot = (void **)address;
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page_mask = ~(page_size - 1);
    bool is_read_only = address >= (relro_start & page_mask) && address < (relro_end & page_mask);
    void *page = (void *)(address & page_mask);
    if (is_read_only && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
    __atomic_store_n(slot, (void *)coaty_buffered_read, __ATOMIC_RELEASE);
    if (is_read_only) mprotect(page, page_size, PROT_READ);
    return true;
}

/// Patches the slots of the relocations in `table` (`size` bytes of Rela entries when `has_addends`, else Rel) that
/// refer to the symbol read.
static int patch_table(const struct dynamic_tables *tables, uintptr_t table, size_t size, bool has_addends,
                       uintptr_t relro_start, uintptr_t relro_end) {
    int patched = 0;
    size_t entry_size = has_addends ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    for (size_t offset = 0; table != 0 && offset + entry_size <= size; offset += entry_size) {
        // Rela begins with the same two fields as Rel.
        const ElfW(Rel) *relocation = (const ElfW(Rel) *)(table + offset);
        if (!names_read(tables, RELOCATION_SYMBOL(relocation->r_info))) continue;
        if (patch_slot(tables->base + relocation->r_offset, relro_start, relro_end)) patched++;
    }
    return patched;
}

static int patch_library(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    int *patched = data;
    const char *name = info->dlpi_name;
    const char *file = name == NULL ? NULL : strrchr(name, '/');
    file = file == NULL ? name : file + 1;
    if (file == NULL || strncmp(file, "libmosquitto.so", strlen("libmosquitto.so")) != 0) return 0;

    const ElfW(Dyn) *dynamic = NULL;
    uintptr_t relro_start = 0, relro_end = 0;
    for (ElfW(Half) index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type == PT_DYNAMIC) dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + header->p_vaddr);
        if (header->p_type == PT_GNU_RELRO) {
            relro_start = info->dlpi_addr + header->p_vaddr;
            relro_end = relro_start + header->p_memsz;
        }
    }
    if (dynamic == NULL) return 1;

    struct dynamic_tables tables = {info->dlpi_addr, NULL, NULL, 0};
    uintptr_t plt_table = 0, rela_table = 0, rel_table = 0;
    size_t plt_size = 0, rela_size = 0, rel_size = 0;
    bool plt_has_addends = false;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_SYMTAB: tables.symbols = (const ElfW(Sym) *)loaded_address(tables.base, entry->d_un.d_ptr); break;
        case DT_STRTAB: tables.names = (const char *)loaded_address(tables.base, entry->d_un.d_ptr); break;
        case DT_STRSZ: tables.names_size = entry->d_un.d_val; break;
        case DT_JMPREL: plt_table = loaded_address(tables.base, entry->d_un.d_ptr); break;
        case DT_PLTRELSZ: plt_size = entry->d_un.d_val; break;
        case DT_PLTREL: plt_has_addends = entry->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela_table = loaded_address(tables.base, entry->d_un.d_ptr); break;
        case DT_RELASZ: rela_size = entry->d_un.d_val; break;
        case DT_REL: rel_table = loaded_address(tables.base, entry->d_un.d_ptr); break;
        case DT_RELSZ: rel_size = entry->d_un.d_val; break;
        default: break;
        }
    }
    if (tables.symbols == NULL || tables.names == NULL) return 1;
    // The calls (PLT slots), and the slots of code built without a PLT or taking read's address.
    *patched += patch_table(&tables, plt_table, plt_size, plt_has_addends, relro_start, relro_end);
    *patched += patch_table(&tables, rela_table, rela_size, true, relro_start, relro_end);
    *patched += patch_table(&tables, rel_table, rel_size, false, relro_start, relro_end);
    return 1;
}

static pthread_once_t patch_once = PTHREAD_ONCE_INIT;
static int patched_slots;

static void patch_libmosquitto(void) {
    system_read = (read_function)dlsym(RTLD_DEFAULT, "read");
    if (system_read == NULL || system_read == coaty_buffered_read) return;
    dl_iterate_phdr(patch_library, &patched_slots);
}

int coaty_mosquitto_buffer_reads(void) {
    pthread_once(&patch_once, patch_libmosquitto);
    return patched_slots;
}
