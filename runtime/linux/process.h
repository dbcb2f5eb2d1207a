/* The container's process, for init and exec (process.c). */
#ifndef AGENTCAGE_LINUX_PROCESS_H
#define AGENTCAGE_LINUX_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/linux/seccomp.h"
#include "runtime/util/error.h"
#include "spec/spec.h"

/* The steps shared by init and exec once namespaces and the root are in
 * place: terminal, cwd, rlimits, scheduling, labels, user, capabilities,
 * no_new_privs, seccomp. After it, only execve (process_exec) is left. */
struct process_state {
    int sync_fd;             /* to the runtime, for the seccomp notify fd; -1 if none */
    char *exe;               /* resolved executable inside the container */
    char **env;              /* process.env, plus HOME when it was missing */
    struct seccomp_prepared *seccomp;
    bool seccomp_loaded;
    bool tiered;             /* load tier_filters[tier] too, on top of the config's */
    int tier;
    bool tier_loaded;
    int notify_fd;           /* the tier filter's listener (close-on-exec), -1 if none */
    volatile int *at_exec;   /* a vfork child's word in the runtime's memory: 1 from just
                              * before its execve, back to 0 if that fails (NULL if forked) */
};
int process_setup(const struct oci_process *p, const struct oci_seccomp *seccomp, int console_fd,
                  struct process_state *ps, ac_error_t *err);
/* Load the config's seccomp filter now if process_setup left it for the
 * end (idempotent; process_exec calls it too). */
int process_load_seccomp(struct process_state *ps, ac_error_t *err);
/* Load seccomp (if not yet), then the tier's filter (when tiered and not
 * yet), and execve. Returns only on failure. */
int process_exec(const struct oci_process *p, struct process_state *ps, ac_error_t *err);
/* Load the tier's filter now (after process_setup), so that its listener's
 * fd (ps->notify_fd, at counted tiers) can reach the watchdog before the
 * process runs anything of its own. Everything the runtime still does after
 * this is a syscall every tier allows. */
int tier_seccomp_now(struct process_state *ps, ac_error_t *err);
/* Runtime side of SYNC_SECCOMP_FD: receive the notify fd and send it with
 * the container process state to linux.seccomp.listenerPath. */
int seccomp_listener_forward(int sync_fd, const struct oci_seccomp *seccomp, const char *state_json,
                             ac_error_t *err);
/* Find the executable the way execvp would, in PATH from env (or a default
 * PATH). Errors use the words engines map to exit codes 126/127. */
int find_executable(const char *name, char *const *env, char **out, ac_error_t *err);
/* At a tier: -1 (with *err) when stdio or a --preserve-fds descriptor is
 * a directory or O_PATH, a handle on the host's files. */
int tier_check_caller_fds(int tier, int preserve_fds, ac_error_t *err);
/* Mark every fd >= 3 + preserve_fds close-on-exec, and clear it on the
 * preserved ones. */
void prepare_inherited_fds(int preserve_fds);
/* The tier's cage that a config.json cannot express, for init and exec
 * alike: Landlock (writes only beneath /dev and rw_paths) and no_new_privs
 * now; ps is marked so that the tier's seccomp filter is loaded too
 * (tier_seccomp_now, or process_exec at the latest). */
int tier_enter_cage(int tier, const char *rw_paths, struct process_state *ps, ac_error_t *err);


#endif
