// What file system an open file is on, and opening a file without access-time updates (Swift's Glibc module has
// neither statfs nor O_NOATIME).
#ifndef COATY_EDGE_FILE_SYSTEM_TYPE_H
#define COATY_EDGE_FILE_SYSTEM_TYPE_H

/// 1 when the open file is on sysfs (f_type SYSFS_MAGIC), 0 when it is on another file system or fstatfs fails.
int coaty_file_is_on_sysfs(int descriptor);

/// Opens a file to read (close-on-exec) that is read again and again: without access-time updates (O_NOATIME) where
/// the kernel allows it (the process owns the file or may act as its owner), as a plain open where not (EPERM). The
/// descriptor, or -1 with errno set.
int coaty_open_for_rereading(const char *path);

#endif
