/* The container process's side of create and exec: one linear setup,
 * readable top to bottom as a checklist. */
#ifndef AGENTCAGE_LINUX_H
#define AGENTCAGE_LINUX_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "seccomp.h"
#include "../spec/spec.h"

/* Namespace types in the order they are joined: user first (it grants the
 * capabilities for the others), mount last among the joins. */
#define NS_COUNT 8
extern const int ns_join_order[NS_COUNT];
const char *ns_proc_name(int type); /* CLONE_NEWNET -> "net" */

/* Everything the container's init process needs, prepared by the runtime
 * before clone (so the child does no parsing). */
struct init_config {
    const struct oci_spec *spec;
    const char *id;
    const char *bundle;
    const char *rootfs;
    int sync_fd;          /* socketpair end */
    int fifo_fd;          /* exec fifo, O_RDWR: read blocks until start */
    int console_fd;       /* console socket or -1 */
    int join_fds[NS_COUNT]; /* setns fds by ns_join_order slot, or -1 */
    bool new_userns, new_netns, new_utsns, new_cgroupns;
    bool no_pivot, no_new_keyring;
    int preserve_fds;
    /* The tier the mapping applied (create.c passes what tier_map returned,
     * never an annotation a user could write), TIER_NONE (-1) for a plain
     * container; with a tier: Landlock and the tier's seccomp filter. */
    int tier;
    const char *landlock_rw; /* io.agentcage.landlock-rw of the effective config */
    bool rootless;           /* no host root: devices bound, unprivileged id maps (rootless.c) */
};

/* Runs in the cloned child; never returns. */
__attribute__((noreturn)) void init_main(const struct init_config *c);

/* The steps shared by init and exec once namespaces and the root are in
 * place: terminal, cwd, rlimits, scheduling, labels, user, capabilities,
 * no_new_privs, seccomp. After it, only execve (process_exec) is left. */
struct process_state {
    int sync_fd;             /* to the runtime, for the seccomp notify fd; -1 if none */
    char *exe;               /* resolved executable inside the container */
    char **env;              /* process.env, plus HOME when it was missing */
    struct seccomp_prepared *seccomp;
    bool seccomp_loaded;
    bool tiered;             /* load tier_filters[tier] last, on top of the config's */
    int tier;
};
int process_setup(const struct oci_process *p, const struct oci_seccomp *seccomp, int console_fd,
                  struct process_state *ps, ac_error_t *err);
/* Load seccomp (if not yet), then the tier's filter (when tiered), and
 * execve. Returns only on failure. */
int process_exec(const struct oci_process *p, struct process_state *ps, ac_error_t *err);
/* Runtime side of SYNC_SECCOMP_FD: receive the notify fd and send it with
 * the container process state to linux.seccomp.listenerPath. */
int seccomp_listener_forward(int sync_fd, const struct oci_seccomp *seccomp, const char *state_json,
                             ac_error_t *err);
/* Find the executable the way execvp would, in PATH from env (or a default
 * PATH). Errors use the words engines map to exit codes 126/127. */
int find_executable(const char *name, char *const *env, char **out, ac_error_t *err);
/* Clone that returns in the child like fork(). With a cgroup2 directory fd
 * (pure v2 hosts) it is clone3 with CLONE_INTO_CGROUP, so the child starts in
 * its cgroup and *into_cgroup says no cgroup.procs write is needed. */
pid_t clone_child(unsigned long flags, int cgroup_fd, bool *into_cgroup);
/* Mark every fd >= 3 + preserve_fds close-on-exec, and clear it on the
 * preserved ones. */
/* At a tier: -1 (with *err) when stdio or a --preserve-fds descriptor is
 * a directory or O_PATH, a handle on the host's files. */
int tier_check_caller_fds(int tier, int preserve_fds, ac_error_t *err);
void prepare_inherited_fds(int preserve_fds);
/* The tier's cage that a config.json cannot express, for init and exec
 * alike: Landlock (writes only beneath /dev and rw_paths) and no_new_privs
 * now; ps is marked so process_exec loads the tier's seccomp filter last. */
int tier_enter_cage(int tier, const char *rw_paths, struct process_state *ps, ac_error_t *err);
/* Bring "lo" up in a fresh network namespace. */
int loopback_up(ac_error_t *err);

#endif
