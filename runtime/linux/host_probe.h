/* What this host's kernel gives a container runtime, found by trying it
 * (for `agentcage check`): each probe runs in a child process or on a
 * detached mount, so it changes nothing on the host. */
#ifndef AGENTCAGE_HOST_PROBE_H
#define AGENTCAGE_HOST_PROBE_H

#include <stdbool.h>

/* One finding: ok, or not with a reason ("EPERM: ..."). */
struct probe {
    bool ok;
    char *detail; /* malloc'd; what was found, or why not */
};
void probe_release(struct probe *p);

/* seccomp filters (SECCOMP_SET_MODE_FILTER is known) */
struct probe probe_seccomp_filter(void);
/* SECCOMP_RET_USER_NOTIF, the seccomp notify action */
struct probe probe_seccomp_notify(void);
/* a child can unshare(CLONE_NEWUSER) */
struct probe probe_user_namespaces(void);
/* a detached copy of PATH's mount takes MOUNT_ATTR_IDMAP */
struct probe probe_idmapped_mount(const char *path);
/* the namespace kinds of /proc/self/ns, as "cgroup ipc mnt ..." */
struct probe probe_namespaces(const char *const *needed);

#endif
