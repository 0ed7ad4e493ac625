#define _GNU_SOURCE
#include "CMosquittoSocket.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

typedef ssize_t (*read_function)(int, void *, size_t);
typedef ssize_t (*write_function)(int, const void *, size_t);

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

// Writes gathered into a connection's buffer.

/// The write() that the patched slots held before (glibc's, or an LD_PRELOAD library's).
static write_function system_write;

struct coaty_write_buffer {
    pthread_mutex_t lock;
    /// libmosquitto's descriptor of the socket, which its writes name.
    int descriptor;
    /// A descriptor of the same socket that stays open until the buffer is attached elsewhere: held bytes are written
    /// to it, as libmosquitto may have closed its own (and the number been reused) by then.
    int output;
    /// The errno of the socket's failure, once a write of held bytes failed; 0 before.
    int failure;
    size_t capacity;
    size_t start;
    size_t end;
    uint64_t system_writes;
    unsigned char bytes[];
};

/// The buffer the calling thread gathers for, between `coaty_write_gather_begin` and `coaty_write_gather_end`.
static _Thread_local struct coaty_write_buffer *gathering_buffer;

static ssize_t write_to_system(int descriptor, const void *bytes, size_t count) {
    if (system_write == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return system_write(descriptor, bytes, count);
}

/// Gathered bytes go to a socket with MSG_NOSIGNAL: a peer that went away is an error (EPIPE) for the caller, not a
/// signal for the process. Anything else (a test's pipe) is written.
static ssize_t send_to_system(int descriptor, const void *bytes, size_t count) {
    ssize_t sent = send(descriptor, bytes, count, MSG_NOSIGNAL);
    if (sent < 0 && errno == ENOTSOCK) return write_to_system(descriptor, bytes, count);
    return sent;
}

struct coaty_write_buffer *coaty_write_buffer_create(size_t capacity) {
    struct coaty_write_buffer *buffer = malloc(sizeof(struct coaty_write_buffer) + capacity);
    if (buffer == NULL) return NULL;
    if (pthread_mutex_init(&buffer->lock, NULL) != 0) {
        free(buffer);
        return NULL;
    }
    buffer->descriptor = -1;
    buffer->output = -1;
    buffer->failure = 0;
    buffer->capacity = capacity;
    buffer->start = 0;
    buffer->end = 0;
    buffer->system_writes = 0;
    return buffer;
}

void coaty_write_buffer_destroy(struct coaty_write_buffer *buffer) {
    if (buffer == NULL) return;
    pthread_mutex_destroy(&buffer->lock);
    free(buffer);
}

size_t coaty_write_buffer_attach(struct coaty_write_buffer *buffer, int descriptor, int output) {
    if (buffer == NULL) return 0;
    pthread_mutex_lock(&buffer->lock);
    size_t dropped = buffer->end - buffer->start;
    buffer->descriptor = descriptor;
    buffer->output = output;
    buffer->failure = 0;
    buffer->start = 0;
    buffer->end = 0;
    pthread_mutex_unlock(&buffer->lock);
    return dropped;
}

size_t coaty_write_buffer_pending(struct coaty_write_buffer *buffer) {
    if (buffer == NULL) return 0;
    pthread_mutex_lock(&buffer->lock);
    size_t pending = buffer->end - buffer->start;
    pthread_mutex_unlock(&buffer->lock);
    return pending;
}

uint64_t coaty_write_buffer_system_writes(struct coaty_write_buffer *buffer) {
    if (buffer == NULL) return 0;
    pthread_mutex_lock(&buffer->lock);
    uint64_t writes = buffer->system_writes;
    pthread_mutex_unlock(&buffer->lock);
    return writes;
}

/// Writes the held bytes as far as the socket takes them; with the lock held. A failure other than a full send
/// buffer drops them and is kept for every later write.
static void write_held(struct coaty_write_buffer *buffer) {
    while (buffer->failure == 0 && buffer->start < buffer->end) {
        buffer->system_writes++;
        ssize_t written =
            send_to_system(buffer->output, buffer->bytes + buffer->start, buffer->end - buffer->start);
        if (written > 0) {
            buffer->start += (size_t)written;
        } else if (written < 0 && errno == EINTR) {
            continue;
        } else if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            buffer->failure = written < 0 ? errno : EPIPE;
            buffer->start = buffer->end;
        }
    }
    if (buffer->start == buffer->end) {
        buffer->start = 0;
        buffer->end = 0;
    }
}

void coaty_write_gather_begin(struct coaty_write_buffer *buffer) { gathering_buffer = buffer; }

int coaty_write_gather_end(void) {
    struct coaty_write_buffer *buffer = gathering_buffer;
    gathering_buffer = NULL;
    if (buffer == NULL) return 0;
    pthread_mutex_lock(&buffer->lock);
    write_held(buffer);
    int failure = buffer->failure;
    pthread_mutex_unlock(&buffer->lock);
    if (failure == 0) return 0;
    errno = failure;
    return -1;
}

ssize_t coaty_gathered_write(int descriptor, const void *bytes, size_t count) {
    struct coaty_write_buffer *buffer = gathering_buffer;
    if (buffer == NULL || count == 0) return write_to_system(descriptor, bytes, count);
    pthread_mutex_lock(&buffer->lock);
    if (buffer->descriptor != descriptor || descriptor < 0) {
        pthread_mutex_unlock(&buffer->lock);
        return write_to_system(descriptor, bytes, count);
    }
    // What is held goes first: it was written (in libmosquitto's eyes) before these bytes.
    if (buffer->end + count > buffer->capacity) write_held(buffer);
    ssize_t result;
    if (buffer->failure != 0) {
        errno = buffer->failure;
        result = -1;
    } else if (buffer->start == buffer->end && count >= buffer->capacity) {
        buffer->system_writes++;
        result = send_to_system(descriptor, bytes, count);
    } else if (buffer->end - buffer->start + count <= buffer->capacity) {
        if (buffer->end + count > buffer->capacity) {
            memmove(buffer->bytes, buffer->bytes + buffer->start, buffer->end - buffer->start);
            buffer->end -= buffer->start;
            buffer->start = 0;
        }
        memcpy(buffer->bytes + buffer->end, bytes, count);
        buffer->end += count;
        result = (ssize_t)count;
    } else {
        // The socket took only part of what was held: libmosquitto keeps its packet and tries again later.
        errno = EAGAIN;
        result = -1;
    }
    pthread_mutex_unlock(&buffer->lock);
    return result;
}

// Finding libmosquitto's (and libcrypto's) relocation slots for read() and write().

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

static bool names(const struct dynamic_tables *tables, size_t symbol, const char *wanted) {
    if (symbol == 0) return false;
    ElfW(Word) name = tables->symbols[symbol].st_name;
    return name < tables->names_size && strcmp(tables->names + name, wanted) == 0;
}

/// Points the slot at `address` to `replacement`; a slot in the RELRO region, which the loader made read-only
/// after relocating it (whole pages of it: the page it shares with writable data at its end stays writable), is made
/// writable for the moment of the write.
static bool patch_slot(uintptr_t address, void *replacement, uintptr_t relro_start, uintptr_t relro_end) {
    void **slot = (void **)address;
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page_mask = ~(page_size - 1);
    bool is_read_only = address >= (relro_start & page_mask) && address < (relro_end & page_mask);
    void *page = (void *)(address & page_mask);
    if (is_read_only && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
    __atomic_store_n(slot, replacement, __ATOMIC_RELEASE);
    if (is_read_only) mprotect(page, page_size, PROT_READ);
    return true;
}

/// One function to point a library's slots of a symbol at.
struct redirection {
    const char *symbol;
    void *replacement;
    int *patched;
};

/// Patches the slots of the relocations in `table` (`size` bytes of Rela entries when `has_addends`, else Rel) that
/// refer to the redirections' symbols.
static void patch_table(const struct dynamic_tables *tables, uintptr_t table, size_t size, bool has_addends,
                        const struct redirection *redirections, size_t count, uintptr_t relro_start,
                        uintptr_t relro_end) {
    size_t entry_size = has_addends ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    for (size_t offset = 0; table != 0 && offset + entry_size <= size; offset += entry_size) {
        // Rela begins with the same two fields as Rel.
        const ElfW(Rel) *relocation = (const ElfW(Rel) *)(table + offset);
        for (size_t index = 0; index < count; index++) {
            const struct redirection *redirection = &redirections[index];
            if (!names(tables, RELOCATION_SYMBOL(relocation->r_info), redirection->symbol)) continue;
            if (patch_slot(tables->base + relocation->r_offset, redirection->replacement, relro_start, relro_end)) {
                (*redirection->patched)++;
            }
        }
    }
}

static int read_slots;
static int write_slots;

static bool has_prefix(const char *text, const char *prefix) { return strncmp(text, prefix, strlen(prefix)) == 0; }

/// libmosquitto's read() and write(), and libcrypto's write() (with TLS, libmosquitto writes through OpenSSL, whose
/// socket BIO calls write()). libcrypto's other users are not affected: the gathered write passes every write
/// through that is not of a socket the calling thread gathers for.
static int patch_library(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    const char *name = info->dlpi_name;
    const char *file = name == NULL ? NULL : strrchr(name, '/');
    file = file == NULL ? name : file + 1;
    if (file == NULL) return 0;
    struct redirection mosquitto[] = {
        {"read", (void *)coaty_buffered_read, &read_slots},
        {"write", (void *)coaty_gathered_write, &write_slots},
    };
    struct redirection crypto[] = {{"write", (void *)coaty_gathered_write, &write_slots}};
    const struct redirection *redirections;
    size_t count;
    if (has_prefix(file, "libmosquitto.so")) {
        redirections = mosquitto;
        count = 2;
    } else if (has_prefix(file, "libcrypto.so")) {
        redirections = crypto;
        count = 1;
    } else {
        return 0;
    }

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
    if (dynamic == NULL) return 0;

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
    if (tables.symbols == NULL || tables.names == NULL) return 0;
    // The calls (PLT slots), and the slots of code built without a PLT or taking the function's address.
    patch_table(&tables, plt_table, plt_size, plt_has_addends, redirections, count, relro_start, relro_end);
    patch_table(&tables, rela_table, rela_size, true, redirections, count, relro_start, relro_end);
    patch_table(&tables, rel_table, rel_size, false, redirections, count, relro_start, relro_end);
    // On to the next library: libmosquitto and libcrypto are both wanted.
    return 0;
}

static pthread_once_t patch_once = PTHREAD_ONCE_INIT;

static void patch_libraries(void) {
    system_read = (read_function)dlsym(RTLD_DEFAULT, "read");
    system_write = (write_function)dlsym(RTLD_DEFAULT, "write");
    if (system_read == NULL || system_read == coaty_buffered_read) return;
    if (system_write == NULL || system_write == coaty_gathered_write) return;
    dl_iterate_phdr(patch_library, NULL);
}

int coaty_mosquitto_buffer_reads(void) {
    pthread_once(&patch_once, patch_libraries);
    return read_slots;
}

int coaty_mosquitto_gather_writes(void) {
    pthread_once(&patch_once, patch_libraries);
    return write_slots;
}
