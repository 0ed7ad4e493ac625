#define _GNU_SOURCE
#include "CFileSystemType.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>

int coaty_file_is_on_sysfs(int descriptor) {
    struct statfs status;
    if (fstatfs(descriptor, &status) != 0) return 0;
    return status.f_type == SYSFS_MAGIC;
}

int coaty_open_for_rereading(const char *path) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
    if (descriptor < 0 && errno == EPERM) descriptor = open(path, O_RDONLY | O_CLOEXEC);
    return descriptor;
}
