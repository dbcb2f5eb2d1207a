/* The container process's side of create: one linear setup, readable top
 * to bottom as a checklist (init.c). */
#ifndef AGENTCAGE_LINUX_INIT_H
#define AGENTCAGE_LINUX_INIT_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/linux/namespaces.h"
#include "runtime/util/error.h"
#include "spec/spec.h"

/* A task-scoped credential the init writes as /run/secrets/NAME. */
struct credential_secret {
    char name[64];
    char *secret;
};

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
    struct cgroup_join *cgroup_join; /* the v1 cgroups we join ourselves first (cgroup.h), or NULL */
    int join_fds[NS_COUNT]; /* setns fds by ns_join_order slot, or -1 */
    bool new_userns, new_netns, new_cgroupns;
    bool own_utsns; /* the uts namespace is the container's (new, or joined and not the host's) */
    bool no_pivot, no_new_keyring;
    bool host_mntns; /* no mount namespace: the runtime's (see rootfs_options) */
    int preserve_fds;
    /* The tier the mapping applied (create.c passes what tier_map returned,
     * never an annotation a user could write), TIER_NONE (-1) for a plain
     * container; with a tier: Landlock and the tier's seccomp filter. */
    int tier;
    bool runtime_hooks_early; /* the runtime-side hooks are one, which the runtime starts itself
                                 (start_hooks_early) and awaits after READY: no stop for them */
    const char *landlock_rw; /* io.agentcage.landlock-rw of the effective config */
    bool rootless;           /* no host root: devices bound, unprivileged id maps (rootless.c) */
    int late_userns_fd;      /* a tier's user namespace (userns.c), joined after the setup; -1: none */
    const int *idmap_fds;    /* per mount: the idmap's user namespace (rootfs_options), or NULL */
    const int *bind_tree_fds; /* per mount: a bind tree made before the clone (rootfs_options), or NULL */
    const struct credential_secret *secrets; /* written as /run/secrets/NAME, mode 0400 */
    size_t n_secrets;
    uid_t secrets_uid;       /* the container's root as the host knows it: owner of the secrets */
    gid_t secrets_gid;
};

/* Runs in the cloned child; never returns. */
__attribute__((noreturn)) void init_main(const struct init_config *c);

#endif
