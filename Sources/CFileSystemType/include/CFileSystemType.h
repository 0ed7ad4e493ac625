// What file system an open file is on (Swift's Glibc module has no statfs).
#ifndef COATY_EDGE_FILE_SYSTEM_TYPE_H
#define COATY_EDGE_FILE_SYSTEM_TYPE_H

/// 1 when the open file is on sysfs (f_type SYSFS_MAGIC), 0 when it is on another file system or fstatfs fails.
int coaty_file_is_on_sysfs(int descriptor);

#endif
