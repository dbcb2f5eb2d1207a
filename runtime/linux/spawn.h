/* Starting a helper program detached from the runtime (spawn.c). */
#ifndef AGENTCAGE_LINUX_SPAWN_H
#define AGENTCAGE_LINUX_SPAWN_H

#include <sys/types.h>

#include "runtime/util/error.h"

/* Runs path with argv and an empty environment in a new session, cwd /,
 * stdio on /dev/null, fds[i] (>= 0) at fd 3 + i and no other fd, and
 * *every signal blocked*: the program must set its own mask (execve keeps
 * the mask, and a child that shares our memory must not run one of our
 * handlers before it). Ignored signals stay ignored, as with posix_spawn.
 * Returns once the program has exec'd (*pid) or failed to (-1 with *err).
 * n_fds <= SPAWN_MAX_FDS; the fds may be any numbers (they are moved above
 * the targets first). */
#define SPAWN_MAX_FDS 8
int spawn_detached(const char *path, char *const argv[], const int *fds, int n_fds, pid_t *pid, ac_error_t *err);

#endif
