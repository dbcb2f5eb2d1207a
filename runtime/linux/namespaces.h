/* Namespaces (namespaces.c). */
#ifndef AGENTCAGE_LINUX_NAMESPACES_H
#define AGENTCAGE_LINUX_NAMESPACES_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/util/error.h"
#include "spec/spec.h"

/* Namespace types in the order they are joined: user first (it grants the
 * capabilities for the others), mount last among the joins. */
#define NS_COUNT 8
extern const int ns_join_order[NS_COUNT];
const char *ns_proc_name(int type); /* CLONE_NEWNET -> "net" */

/* Clone that returns in the child like fork(). With a cgroup2 directory fd
 * it is clone3 with CLONE_INTO_CGROUP, so the child starts in that cgroup
 * and *into_cgroup says no cgroup.procs write is needed there. */
pid_t clone_child(unsigned long flags, int cgroup_fd, bool *into_cgroup);
/* The two sides of a child joining its cgroup itself (cgroup.h): the
 * child joins its v1 hierarchies and tells the runtime over sync_fd;
 * the runtime (cgroup_join_finish) waits for that and puts the child in
 * what is left the slow way: every hierarchy when the child could not,
 * the cgroup2 one when clone3 did not (child_joins: the child had v1
 * hierarchies to join; has_v2: the host has a cgroup2 mount).
 * cgroup_join_report returns whether the child joined them all itself;
 * *alone (may be NULL) is set when that left the runtime nothing to do:
 * the child joined every v1 hierarchy, and the cgroup2 one is none or
 * clone3's. An exec's child and its runtime both know that and skip the
 * runtime's go-ahead then (one round trip fewer). */
bool cgroup_join_report(struct cgroup_join *j, int sync_fd);
int cgroup_join_finish(int sync_fd, bool child_joins, bool has_v2, bool into_cgroup, const char *path, pid_t pid,
                       bool *alone, ac_error_t *err);
/* Bring "lo" up in a fresh network namespace. */
int loopback_up(ac_error_t *err);
/* Open the network namespace pinned (bind-mounted) at path, making it first
 * when path does not exist: a new namespace with only lo, up. The caller
 * serialises makers (a lock); *fd is O_RDONLY|O_CLOEXEC. */
int netns_pinned_open(const char *path, int *fd, ac_error_t *err);

/* config.json's namespaces sorted into clone flags and fds to join. */
struct ns_plan {
    unsigned long clone_flags;
    int join_fds[NS_COUNT];
    bool new_userns, new_cgroupns, new_timens, new_netns, new_utsns, new_mntns, new_pidns;
    bool join_mntns;  /* a mount namespace joined by path (plain containers only) */
    bool host_mntns;  /* no mount namespace asked for: the runtime's own (plain containers only) */
    bool own_utsns;   /* a uts namespace, new or joined, that is not the host's: its hostname may be set */
    int pid_join_fd;
};
/* At a tier (tiered) a namespace given by path must not be the host's. */
int plan_namespaces(const struct oci_spec *spec, bool tiered, struct ns_plan *p, ac_error_t *err);
void ns_plan_close(struct ns_plan *p);

#endif
