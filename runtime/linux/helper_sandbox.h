/* Least privilege for the host-side helpers that read what a container
 * sends: today the egress proxy's two processes (hooks/egress_main.c; see
 * SECURITY.md, "Host-side helpers").
 *
 * The worker reads and writes the container's bytes. It enters a sandbox
 * once it holds its listening socket (made in the container's network
 * namespace) and before it reads a byte:
 *   - a private mount namespace whose root is an empty read-only tmpfs
 *     holding nothing but read-only binds of the resolver's files
 *     (/etc/resolv.conf, hosts, nsswitch.conf, gai.conf, host.conf);
 *   - an unprivileged uid and gid (the system user agentcage-egress, or
 *     --user), no supplementary groups; rootless it keeps the invoking
 *     user's uid (no other is its to take) in a user namespace of its own;
 *   - no capabilities in any set, bounding included; not dumpable; killed
 *     when its parent (the writer) dies; no_new_privs; rlimits on files, core dumps and locked memory;
 *   - Landlock: no filesystem access but reading those few files, TCP
 *     connect only to the allowlist's ports (and 53 for DNS over TCP; any
 *     port when the operator may approve hosts while they are asked for),
 *     no bind, no signals or abstract unix sockets beyond its own domain;
 *   - a seccomp allow-list (libseccomp): the syscalls of its threads,
 *     sockets (AF_INET and AF_INET6 only: AF_UNIX and AF_NETLINK fail with
 *     EAFNOSUPPORT, which glibc's resolver takes in stride) and
 *     getaddrinfo; anything else kills it.
 *
 * The writer (the worker's parent) appends the worker's records to the
 * audit log and kills the container after too many refusals: it keeps
 * root's uid and CAP_KILL only, sets no_new_privs, and Landlock limits it
 * to the audit log's and the pid file's directories (and the held
 * requests' directory), with no TCP. */
#ifndef AGENTCAGE_HELPER_SANDBOX_H
#define AGENTCAGE_HELPER_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/util/error.h"

#define HELPER_SANDBOX_PORTS_MAX 64

struct helper_sandbox {
    bool change_user;        /* false rootless: keep the uid we have */
    uid_t uid;
    gid_t gid;
    const char *resolv_conf; /* bound at /etc/resolv.conf (NULL: the host's) */
    const char *hosts;       /* bound at /etc/hosts (NULL: the host's) */
    int ports[HELPER_SANDBOX_PORTS_MAX]; /* TCP ports the worker may connect to */
    bool any_port;           /* Landlock does not judge TCP connect ports (any may be approved) */
    size_t n_ports;
    unsigned max_fds;
    pid_t parent;            /* > 0: die with it (PR_SET_PDEATHSIG) */
    uint64_t bounding_left;  /* the bounding set its parent left it (helper_bound_to), a mask; 0: all */
};

/* Confine the calling (single-threaded) process as described above. On
 * failure the process is half-confined and must exit. */
int helper_sandbox_enter(const struct helper_sandbox *sb, ac_error_t *err);

/* The bounding set cut to keep (a mask of capabilities). It is inherited:
 * a parent that cuts it before it forks a helper spares the helper the
 * syscall per capability (41 of them, 85 us on the bench host) when the
 * helper's helper_sandbox.bounding_left says what is left. Returns 1, 0
 * when the kernel refused a drop (no CAP_SETPCAP: the set is not keep), or
 * -1. */
int helper_bound_to(uint64_t keep, ac_error_t *err);

/* The writer's drop, after helper_bound_to(1 << CAP_KILL): CAP_KILL only,
 * no_new_privs, Landlock to the given directories (NULL-terminated). */
int helper_keep_kill_only(const char *const *rw_dirs, ac_error_t *err);

/* An idle helper's resident set kept small: forked from the runtime, it
 * maps the runtime's and its libraries' pages it has touched (and the
 * kernel's fault-around neighbours of each). Called single-threaded once
 * the helper is ready, with /proc/self/maps and /proc/self/pagemap open
 * (opened before a sandbox hides /proc), it drops the mappings of every
 * file page still shared with the page cache (never a private copy: a
 * relocated or written page stays) and turns fault-around off for the
 * files' mappings, so what it maps from then on is what it runs. The
 * pages stay in the page cache; a later use is a minor fault. The free
 * heap is trimmed first (malloc_trim), and the stack below the caller's
 * frame, which the start grew and nothing uses, dropped. Both files
 * are closed (-1: not there, nothing is shed). */
void helper_shed_file_pages(int maps_fd, int pagemap_fd);

#endif
