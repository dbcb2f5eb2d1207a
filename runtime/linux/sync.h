/* Messages between the runtime and the process it is setting up, over a
 * socketpair: a type, a length and a payload (error text, state JSON). */
#ifndef AGENTCAGE_SYNC_H
#define AGENTCAGE_SYNC_H

#include <stddef.h>

enum sync_type {
    SYNC_EOF = 0,        /* the other side closed (exec'd or died) */
    SYNC_GO = 1,         /* runtime -> child: ids mapped, cgroup joined; payload: state JSONs
                          * (an exec's child that joined every cgroup itself gets none) */
    SYNC_RUN_HOOKS = 2,  /* child -> runtime: mounts done, run prestart/createRuntime hooks
                          * (only when the spec has any: hooks_runtime_side, and they are not
                          * one the runtime started early itself: runtime_hooks_early) */
    SYNC_HOOKS_DONE = 3, /* runtime -> child */
    SYNC_READY = 4,      /* child -> runtime: set up, waiting for start */
    SYNC_ERROR = 5,      /* either way: payload is the one-line error */
    SYNC_SECCOMP_FD = 6, /* child -> runtime: a seccomp notify fd follows (SCM_RIGHTS) */
    SYNC_SECCOMP_DONE = 7, /* runtime -> child: handed to linux.seccomp.listenerPath (or the watchdog) */
    SYNC_TIER_NOTIFY_FD = 8, /* exec child -> runtime: the tier filter's listener follows, for the watchdog */
    SYNC_JOINED = 9,     /* child -> runtime: joined its v1 cgroups itself; payload: "" or the error */
};

int sync_send(int fd, enum sync_type type, const void *data, size_t len);
/* Receive one message; *data is malloc'd and NUL-terminated (may be NULL when
 * not wanted). Returns -1 on a read error; SYNC_EOF type on a clean close. */
int sync_recv(int fd, enum sync_type *type, char **data, size_t *len);
/* Send/receive an fd with SCM_RIGHTS (the payload is name). */
int send_fd(int sock, int fd, const char *name);
int recv_fd(int sock);

#endif
