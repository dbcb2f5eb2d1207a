/* The container lifecycle shared by the CLI verbs. */
#ifndef AGENTCAGE_CONTAINER_H
#define AGENTCAGE_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/util/error.h"
#include "runtime/container/state.h"
#include "spec/spec.h"
#include "tier-annotations/tier.h"

struct global_opts {
    const char *root;       /* --root, default /run/agentcage */
    const char *log;        /* --log */
    enum ac_log_format log_format;
    bool debug;
    bool systemd_cgroup;    /* --systemd-cgroup / --cgroup-manager systemd */
    bool cgroups_disabled;  /* --cgroup-manager disabled */
    const char *rootless;   /* --rootless true|false|auto */
    bool is_rootless;       /* what --rootless decided (rootless.c), for every verb */
    bool rootless_best_effort; /* --rootless-limits best-effort: run tiers whose limits cannot be enforced */
    struct tier_operator tier; /* --default-tier, --allowed-tiers, ceilings */
    int error_status;          /* exit status of a failed verb: 1, or what the verb set (exec: 255, as runc) */
};

/* ---- state.c ---- */
/* Container ids: [A-Za-z0-9][A-Za-z0-9_.+-]*, at most 1024 bytes. */
int state_validate_id(const char *id, ac_error_t *err);
char *state_dir_path(const struct global_opts *g, const char *id);
/* Open ROOT/ID and take its lock (flock LOCK_EX) for the life of *lockfd.
 * A missing container is "container `ID` does not exist". */
int state_lock(const struct global_opts *g, const char *id, int *lockfd, ac_error_t *err);
/* What most verbs start with: take the lock (when lockfd is not NULL), read
 * the state and work out the live status. */
int state_open(const struct global_opts *g, const char *id, int *lockfd, struct container_state **st,
               enum container_status *status, ac_error_t *err);
/* Read ROOT/ID/state.json. */
int state_load(const struct global_opts *g, const char *id, struct container_state **out, ac_error_t *err);
/* Atomically (tmp + rename) write ROOT/ID/state.json. */
int state_save(const struct global_opts *g, const struct container_state *st, ac_error_t *err);
void state_free(struct container_state *st);
/* A deep copy (state_free frees it). */
struct container_state *state_dup(const struct container_state *st);
/* The value of one of the state's annotations, or NULL. */
const char *state_annotation(const struct container_state *st, const char *key);
static inline void state_freep(struct container_state **s) { if (*s) state_free(*s); }
#define cleanup_state __attribute__((cleanup(state_freep)))
/* The live status: stopped when the init process is gone (or its PID was
 * reused), created while the exec fifo exists, paused when frozen. */
enum container_status state_status(const struct global_opts *g, const struct container_state *st);
/* The runtime-spec state JSON ("ociVersion", "id", "status", "pid",
 * "bundle", "annotations"), pretty when pretty. malloc'd. */
char *state_oci_json(const struct container_state *st, enum container_status status, bool pretty);
/* All container ids under ROOT (sorted). */
int state_list_ids(const struct global_opts *g, char ***ids, size_t *n, ac_error_t *err);
/* Remove ROOT/ID and everything in it. */
int state_remove(const struct global_opts *g, const char *id, ac_error_t *err);
/* A container without a mount namespace makes its mounts in the runtime's:
 * on a private bind of its rootfs at STATE_DIR/rootfs (*mountpoint), its
 * own, so that no other container's (of the same rootfs) stack on it.
 * state_remove detaches it with everything mounted beneath, and keeps the
 * state if it cannot. */
int state_host_rootfs_mount(const char *state_dir, const char *rootfs, char **mountpoint, ac_error_t *err);
/* Write a pid file as runc does: bare digits, no newline, atomically. */
int write_pid_file(const char *path, pid_t pid, ac_error_t *err);

/* ---- create.c / start.c / delete.c ---- */
struct create_options {
    const char *bundle;
    const char *config_path;   /* --config (crun), default BUNDLE/config.json */
    const char *pid_file;
    const char *console_socket;
    bool no_pivot;
    bool no_new_keyring;
    int preserve_fds;
    bool foreground;           /* `run` without --detach: we stay the parent */
    bool start_here;           /* `run`: this process starts it (over the sync socket, no exec fifo) */
};
struct create_result {
    pid_t pid;           /* the container's init process */
    int console_master;  /* foreground with a terminal and no console socket: the pty master, else -1 */
    bool running;        /* gVisor's `run` fast path: the workload runs already (start only records it) */
    int start_fd;        /* start_here: the sync socket the init waits on for its go (container_start_here), else -1 */
    struct container_state *state; /* start_here: the state as saved (the caller's to state_free), else NULL */
    struct oci_spec *config;       /* start_here: the config create parsed (the caller's to spec_free), else NULL */
};
/* Create the container: on success its init process waits for `start`. */
int container_create(const struct global_opts *g, const char *id, const struct create_options *o,
                     struct create_result *res, ac_error_t *err);
/* One record in the audit trail (tiered containers only); a failure to
 * write it is a warning, never the caller's failure. members are JSON
 * object members (`"a":1,"b":"x"`) or NULL. */
void container_audit(const struct global_opts *g, const char *event, const char *id, const char *members);

/* A tiered container's denials counter, ROOT/ID/denials (denials.c; the
 * layout is runtime/linux/denials.h): made by create with the limit (0:
 * never kill), opened for the watchdog (an fd or -1), read by delete. */
/* A tiered container's end in the audit trail (exit_record.c): its
 * timeout-kill or the watchdog's denial-kill, then container-exited with
 * its exit status or signal, why it ended, wall time, OOM kills, peak
 * memory, denials and bytes through the egress proxy. Before the cgroup
 * goes; after the watchdog has ended. */
void container_audit_end(const struct global_opts *g, const struct container_state *st, bool killed_by_delete,
                         int zombie_status);

/* the watchdog's socket for exec's listeners, in the state dir */
#define WATCHDOG_SOCKET "watchdog.sock"
struct denials_counter;
struct denials_bytes;
char *denials_file_path(const char *state_dir);
int denials_file_create(const char *state_dir, uint32_t limit, ac_error_t *err);
int denials_file_open(const char *state_dir);
bool denials_file_read(const char *state_dir, struct denials_counter *c, struct denials_bytes *b);
/* Whether the container was killed at its max-denials (by either counter's user). */
bool denials_file_killed(const char *state_dir);
/* The state JSON a hook of kind gets on stdin. malloc'd. */
char *container_hook_state(const struct container_state *st, enum container_status status);
/* The host file a Kubernetes termination message goes to (the source of
 * a bind on /dev/termination-log, absolute), "" when there is none. */
const char *termination_log_source(const struct oci_spec *spec);
int container_start(const struct global_opts *g, const char *id, ac_error_t *err);
/* start of a container whose create ran its workload already (gVisor's
 * one `runsc run --detach` for `run`): the watchdog, the state, the
 * poststart hooks, as start does them. */
int container_start_running(const struct global_opts *g, const char *id, ac_error_t *err);
/* start of a container `run` created with start_here: the go over
 * res->start_fd (closed here), not through an exec fifo; st is
 * res->state, which it updates (the state file is not read again). */
int container_start_here(const struct global_opts *g, struct container_state *st, int start_fd, ac_error_t *err);
/* A tier's watchdog for the init `run` creates, started while the init
 * sets itself up (st->pid and pid_start_time set): its wall-clock limit
 * and the init's listener wait for container_start_here's go. */
int container_watchdog_ahead(const struct global_opts *g, struct container_state *st, ac_error_t *err);
/* msg (and fd when >= 0, SCM_RIGHTS) to the container's watchdog on its
 * socket in the state dir, and its byte back: 0, or -1 (errno). */
int watchdog_hand_over(const struct global_opts *g, const char *id, int fd, const char *msg);
int container_delete(const struct global_opts *g, const char *id, bool force, ac_error_t *err);
/* delete --force of the container `run` created and started, whose state
 * it holds (st, as start left it): the state file is not read again. */
int container_delete_known(const struct global_opts *g, const struct container_state *st, ac_error_t *err);
/* Load the copy of config.json kept in the state dir. */
/* exec: a new process in the running container st. */
struct exec_options {
    const char *console_socket, *pid_file;
    bool detach;
    int preserve_fds;
    const char *const *caps; /* --cap names asked for (at a tier: none the container lacks) */
    size_t n_caps;
    const char *const *cgroup_subs; /* --cgroup [CTRL:]SUB: sub-cgroups to run in (cgroup_enter_sub) */
    size_t n_cgroup_subs;
};
struct exec_result {
    pid_t pid;
    int console_master; /* a terminal without --console-socket: the pty master to proxy, or -1 */
};
int container_exec(const struct global_opts *g, struct container_state *st, enum container_status status,
                   struct oci_spec *config, struct oci_process *process, const struct exec_options *o,
                   struct exec_result *res, ac_error_t *err);

/* Task-scoped credentials (credentials.c): issued by the operator's brokers
 * at create into *out (the init writes them; credentials_forget wipes the
 * copy), recorded in the state directory without the secrets; expired at
 * their ttl (credentials_expire, from the expirer start spawns) and
 * revoked at delete. */
struct credential_secret;
int credentials_issue(const struct global_opts *g, const char *state_dir, const char *id, int tier,
                      const struct oci_spec *spec, long long timeout_ms, struct credential_secret **out, size_t *n_out,
                      ac_error_t *err);
void credentials_forget(struct credential_secret *list, size_t n);
void credentials_revoke_all(const struct global_opts *g, const char *state_dir, const char *id, const char *why);
long long credentials_next_expiry(const char *state_dir); /* unix ms of the next one, 0 when none is left */
int credentials_expire(const struct global_opts *g, const char *state_dir, const char *id, pid_t init_pid,
                       ac_error_t *err);

/* Writable host folders of a tier behind an overlay capped at the workspace
 * size (bind_overlay.c): made before the clone (the mounts' sources are
 * rewritten to the overlays), taken down at delete, with the changes
 * copied back (apply), kept for review (apply && review) or dropped.
 * base_mode: each overlay's folder's (0711 when the container's root on the
 * host must reach it, as gVisor's gofer does). */
int bind_overlays_prepare(const char *state_dir, struct oci_spec *spec, mode_t base_mode, ac_error_t *err);
void bind_overlays_finish(const struct global_opts *g, const char *state_dir, const char *id, bool apply,
                          bool review);

/* Writable projects' tool-run files (project_watch.c): noted at create,
 * compared at delete, each change a "project-file" audit record. */
int project_watch_start(const char *state_dir, const struct oci_spec *spec, ac_error_t *err);
void project_watch_finish(const struct global_opts *g, const char *state_dir, const char *id);

/* At a tier (tier != TIER_NONE), the tier's own hook programs installed
 * with this binary (agentcage-egress in helpers_default_dir()) run in the
 * runtime's process instead of being exec'd (hooks_builtin_enable); a plain
 * container's hooks are all exec'd. */
void container_hooks_builtin(int tier);
int container_load_config(const struct global_opts *g, const char *id, struct oci_spec **spec, ac_error_t *err);

#endif
