/* Namespaces (namespaces.c). */
#ifndef AGENTCAGE_LINUX_NAMESPACES_H
#define AGENTCAGE_LINUX_NAMESPACES_H

#include <pthread.h>
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
/* A child that shares the caller's memory until it execs or exits, as
 * vfork does: the caller is suspended meanwhile, and no page table is
 * copied, faulted in again or torn down (in a paravirtualized guest those
 * were most of an `exec`'s fork). The child runs fn(arg) on its own stack
 * (stack_size bytes at stack, the top 16-byte aligned), never returns
 * from it and must never wait for the caller. With a cgroup2 directory fd
 * it starts in that cgroup (clone3 with CLONE_INTO_CGROUP: x86-64 only).
 * Returns the child's pid once it has exec'd or exited, -1 with errno when
 * the kernel refuses (the caller then forks). */
pid_t clone_vfork(int (*fn)(void *), void *arg, void *stack, size_t stack_size, int cgroup_fd);
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

/* A container's new network namespace, made on a thread of the runtime
 * while the runtime goes on with its state directory and cgroup (issue
 * 20): the kernel's work for one (the loopback device, its sysctl tables,
 * IPv6's addrconf) is 0.7-0.9 ms here, about as long as those steps, and on
 * a second CPU the two overlap. unshare(2) on a thread moves that thread
 * alone; lo is brought up there. The clone then happens in it (the runtime
 * enters it for the clone alone, netns_ahead_clone), so the init is born
 * in its network namespace as it would be with CLONE_NEWNET, which an early
 * hook that enters /proc/PID/ns/net relies on. Only where the clone would
 * have made it in the runtime's own user namespace, which owns it either
 * way. */
struct netns_ahead {
    pthread_t thread;
    bool started;
    int fd;  /* the new namespace; -1: none made (the clone makes it) */
    int own; /* the runtime's */
};
void netns_ahead_start(struct netns_ahead *a);
/* Wait for the thread (the runtime is single-threaded again after): has it
 * made the namespace? */
bool netns_ahead_take(struct netns_ahead *a);
/* clone_child in the namespace made ahead (flags without CLONE_NEWNET),
 * back in the runtime's own after; where it cannot be entered, with the
 * flags as they are, and *lo_down set before the clone (the child's copy
 * of it too: the init brings lo up then). */
pid_t netns_ahead_clone(struct netns_ahead *a, unsigned long flags, int cgroup_fd, bool *into_cgroup, bool *lo_down);
void netns_ahead_close(struct netns_ahead *a);

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
