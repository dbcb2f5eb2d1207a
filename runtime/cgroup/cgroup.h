/* cgroup facade: one interface over cgroup v1, v2 and hybrid hosts.
 *
 * The host's layout is read from /proc/self/mountinfo: each v1 hierarchy with
 * its controllers, and the cgroup2 mount (at /sys/fs/cgroup on a pure v2
 * host, at /sys/fs/cgroup/unified on a hybrid one). Each controller is driven
 * where the host has it: v1 hierarchy if there is one, otherwise cgroup2.
 * A container's cgroup is the same relative path in every hierarchy. */
#ifndef AGENTCAGE_CGROUP_H
#define AGENTCAGE_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/util/error.h"
#include "spec/spec.h"

enum cgroup_mode { CGROUP_MODE_V1, CGROUP_MODE_HYBRID, CGROUP_MODE_V2 };
enum cgroup_mode cgroup_host_mode(void);
/* Where this host drives a controller, by its v1 name ("memory", "cpu",
 * "pids", "freezer", "devices", ...): "v1", "v2", or NULL when it has none
 * (or there is no such controller). */
const char *cgroup_controller_where(const char *name);
/* The cgroup2 mount, or NULL when there is none. */
const char *cgroup_v2_mount(void);
/* The mount of a hierarchy, by a /proc/self/cgroup line's controllers
 * ("cpu,cpuacct", "name=systemd", "" for cgroup2), as this process's layout
 * has it: its mountpoint and its root inside the hierarchy. The root is as
 * the cgroup namespace of the process that read the layout sees it (the
 * runtime's, read before the clone: the init may use it only while it is
 * in that same cgroup namespace). Returns 1 when found, 0 when the
 * hierarchy is not mounted, -1 when the layout cannot tell (a named
 * hierarchy it does not know, or no layout). */
int cgroup_hierarchy_mount(const char *controllers, const char **mountpoint, const char **root);

/* Resolve the container's cgroup path (relative to each hierarchy's root,
 * starting with '/') from config.json's linux.cgroupsPath:
 *  - absolute: used as is;
 *  - relative: below the runtime's own cgroup (as runc does);
 *  - absent: "/agentcage/<id>" (CG_DEFAULT_PARENT: the runtime's own
 *    parent, removed with the last container below it);
 *  - systemd_cgroup: "slice:prefix:name" mapped to the cgroupfs path systemd
 *    would use ("/system.slice/prefix-name.scope", nested slices expanded),
 *    since no systemd manages cgroups here.
 * Returns a malloc'd string. */
#define CG_DEFAULT_PARENT "/agentcage"
int cgroup_resolve_path(const char *cgroups_path, const char *id, bool systemd_cgroup, char **out,
                        ac_error_t *err);

/* Create the cgroup in every hierarchy (parents as needed; v1 cpuset gets
 * cpus/mems copied from its parent so tasks can join) and apply resources
 * (may be NULL). Refuses a resource the host cannot enforce (e.g. memory
 * limits with no memory controller) with a clear error. On failure removes
 * whatever it created. Returns 1 when it made the cgroup (in some
 * hierarchy), 0 when it was there already (another container's, whose
 * create may still be on its way: not ours to remove). */
int cgroup_create(const char *path, const struct oci_resources *resources, ac_error_t *err);
/* Before create: a cgroup that already exists and is frozen is refused
 * (nothing is changed); one that already has processes gets a warning. */
int cgroup_check_reuse(const char *path, ac_error_t *err);
/* Put pid into the cgroup in every hierarchy. */
int cgroup_enter(const char *path, pid_t pid, ac_error_t *err);
/* Put pid into the cgroup in the cgroup2 hierarchy only (the v1 ones are
 * joined already). */
int cgroup_enter_v2(const char *path, pid_t pid, ac_error_t *err);

/* A process cloned into a container's cgroup joins it itself, without the
 * kernel's wait: writing a pid into cgroup.procs (the whole process) takes
 * the cgroup_threadgroup_rwsem for writing, whose first writer after a
 * quiet moment waits a whole RCU grace period (5-15 ms here), while a
 * thread moving itself ("0" into a v1 hierarchy's `tasks`) takes no such
 * lock; the cloned child is single-threaded, so its thread is all of it.
 * cgroup_join_open (the runtime, before the clone) opens the `tasks` file
 * of each v1 hierarchy and the cgroup2 directory (for
 * clone3(CLONE_INTO_CGROUP), which joins without the wait too);
 * cgroup_join_self runs in the child before anything else. */
#define CGROUP_JOIN_MAX 33
struct cgroup_join {
    int task_fds[CGROUP_JOIN_MAX];
    size_t n;
    int v2_fd; /* the cgroup2 directory, -1 when the host has none */
};
int cgroup_join_open(const char *path, struct cgroup_join *j, ac_error_t *err);
/* In the child: join every v1 hierarchy; closes every fd of j. */
int cgroup_join_self(struct cgroup_join *j, ac_error_t *err);
void cgroup_join_close(struct cgroup_join *j);
/* Put pid into sub-cgroups of the container's cgroup (exec --cgroup): each
 * of subs is "SUB" (every hierarchy) or "CTRL[,CTRL]:SUB" (those v1
 * controllers' hierarchies), SUB relative to path and never above it; the
 * other hierarchies get path itself. */
int cgroup_enter_sub(const char *path, pid_t pid, const char *const *subs, size_t n_subs, ac_error_t *err);
/* Apply (update) resources to an existing cgroup. */
int cgroup_update(const char *path, const struct oci_resources *resources, ac_error_t *err);
/* Freeze/thaw (v1 freezer or v2 cgroup.freeze); waits until done. */
int cgroup_freeze(const char *path, bool frozen, ac_error_t *err);
/* True when the cgroup is frozen. */
bool cgroup_is_frozen(const char *path);
/* The PIDs in the cgroup (and below), from the pids/memory/... hierarchy or
 * v2. *out malloc'd. */
int cgroup_pids(const char *path, pid_t **out, size_t *n, ac_error_t *err);
/* Send sig to every process in the cgroup (freezing around it so no fork
 * escapes). */
int cgroup_kill_all(const char *path, int sig, ac_error_t *err);
/* Remove the cgroup from every hierarchy (children first); waits briefly for
 * dying tasks. Missing directories are fine. */
int cgroup_destroy(const char *path, ac_error_t *err);

struct cgroup_stats {
    /* cpu */
    uint64_t cpu_usage_total_ns, cpu_usage_user_ns, cpu_usage_kernel_ns;
    uint64_t cpu_throttling_periods, cpu_throttled_periods, cpu_throttled_time_ns;
    /* memory */
    uint64_t memory_usage, memory_max_usage, memory_limit, memory_failcnt;
    uint64_t swap_usage, swap_limit;
    uint64_t memory_cache, memory_rss; /* from memory.stat */
    uint64_t oom_kill_count;
    /* pids */
    uint64_t pids_current, pids_limit; /* limit 0 = max */
    /* blkio */
    uint64_t io_read_bytes, io_write_bytes;
};
int cgroup_stats(const char *path, struct cgroup_stats *st, ac_error_t *err);
/* Only memory_max_usage, oom_kill_count (and memory_failcnt on cgroup2):
 * two files, not every controller's (an exit record's few fields). */
int cgroup_memory_peak(const char *path, struct cgroup_stats *st, ac_error_t *err);
/* The stats as the "data" object of runc's `events --stats` JSON. malloc'd. */
char *cgroup_stats_json(const struct cgroup_stats *st);

#endif
