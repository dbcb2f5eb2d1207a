/* Rootless operation: the runtime without host root, as a user's own
 * account runs it (directly, or inside rootless Podman's user namespace).
 * What it cannot do there is decided here, in one place: see
 * docs/rootless.md for the list. */
#ifndef AGENTCAGE_ROOTLESS_H
#define AGENTCAGE_ROOTLESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/util/error.h"
#include "spec/spec.h"

/* --rootless true|false|auto (NULL is auto). auto: rootless when not root,
 * or when root only of a user namespace that does not map the whole id
 * range (/proc/self/uid_map is not "0 0 4294967295"). */
int rootless_detect(const char *flag, bool *rootless, ac_error_t *err);
/* --rootless-limits refuse|best-effort */
int rootless_limits_parse(const char *value, bool *best_effort, ac_error_t *err);
/* The default --root of a rootless runtime: $XDG_RUNTIME_DIR/agentcage,
 * else /tmp/agentcage-<uid>. malloc'd. */
char *rootless_state_root(void);
/* The default audit log of a rootless runtime (the system one is root's):
 * $XDG_STATE_HOME/agentcage/audit.jsonl, else ~/.local/state/... malloc'd. */
char *rootless_audit_log(void);
/* The default approvals directory of a rootless runtime (the system one,
 * /var/lib/agentcage/approvals, is root's), beside its audit log:
 * $XDG_STATE_HOME/agentcage/approvals, else ~/.local/state/... malloc'd. */
char *rootless_approvals_dir(void);
/* The resource limits config.json asks for, as "memory, pids", or NULL when
 * it asks for none. Device rules are not counted: rootless, /dev holds
 * bind mounts of host nodes, usable only as far as the user's own
 * permissions go. malloc'd. */
char *rootless_requested_limits(const struct oci_resources *r);
/* May the runtime try cgroups? Only on a pure cgroup v2 host where its own
 * cgroup is delegated to it (the directory and its cgroup.subtree_control
 * writable). Otherwise *why (malloc'd) says why not. */
bool rootless_cgroups_delegated(char **why);
/* Write the uid/gid maps of pid's new user namespace without host root:
 * a single mapping of our own uid and gid is written directly (after
 * "deny" to setgroups, as the kernel demands); anything else goes through
 * the setuid newuidmap/newgidmap helpers (Debian's uidmap package), which
 * check the ranges against /etc/subuid and /etc/subgid. */
int rootless_write_id_maps(pid_t pid, const struct oci_linux *l, ac_error_t *err);

#endif
