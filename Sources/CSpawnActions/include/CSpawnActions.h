#ifndef C_SPAWN_ACTIONS_H
#define C_SPAWN_ACTIONS_H

#include <spawn.h>

/// Adds to `actions` the closing of every descriptor from `lowest` on in the child (glibc 2.34 or newer), which the
/// Swift Glibc module does not declare: it is a GNU extension.
int c_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int lowest);

#endif
