#include "CFileSystemType.h"

#include <linux/magic.h>
#include <sys/vfs.h>

int coaty_file_is_on_sysfs(int descriptor) {
    struct statfs status;
    if (fstatfs(descriptor, &status) != 0) return 0;
    return status.f_type == SYSFS_MAGIC;
}
