/* The container's filesystem: mounts, /dev, pivot_root, masked and
 * read-only paths. Runs in the container process, inside its new mount
 * namespace, as (namespaced) root, before capabilities are dropped. */
#ifndef AGENTCAGE_ROOTFS_H
#define AGENTCAGE_ROOTFS_H

#include <stdbool.h>

#include "runtime/util/error.h"
#include "spec/spec.h"

struct rootfs_options {
    const char *rootfs;   /* absolute host path of the rootfs */
    bool no_pivot;        /* --no-pivot: MS_MOVE + chroot instead of pivot_root */
    bool host_mntns;      /* in the runtime's mount namespace: "/" untouched, chroot, mounts private */
    bool in_user_ns;      /* a new user namespace: bind devices instead of mknod */
    bool rootless;        /* also: /sys may need a read-only bind instead of sysfs */
    bool nofollow_bind_sources; /* tiers: refuse a bind source with a symlink in any component */
    const char *protect_roots;  /* tiers: io.agentcage.protect-roots (see protect.h), or NULL */
    const char *home_roots;     /* tiers: io.agentcage.home-roots, or NULL */
    const char *home_allow;     /* tiers: io.agentcage.home-allow */
    int rootfs_idmap_fd;        /* a user namespace to idmap the rootfs with, or -1 */
    const int *idmap_fds;       /* per mount: its idmap's user namespace, made before the clone, or -1; or NULL */
    const int *bind_tree_fds;   /* per mount: its bind tree made before the clone (rootfs_make_bind_trees), or -1; or NULL */
    bool cgroupns_is_runtimes;  /* no cgroup namespace of the container's (new or joined) and no mount
                                   namespace joined by path: a cgroup mount may use the hierarchies'
                                   mounts as the runtime read them (same roots, same mountpoints) */
    bool tiered;                /* a masked or read-only path beneath a file (a tier's protection paths
                                   under a single-file bind) protects nothing, as one that does not exist */
};

/* Step 1 (before createContainer hooks): make "/" rslave (or the spec's
 * rootfsPropagation), bind the rootfs onto itself, mount every spec mount in
 * order (bind/rbind with every option incl. ro/nosuid/..., recursive r*
 * options through mount_setattr, propagation flags, idmapped mounts, tmpfs,
 * proc, sysfs, mqueue, devpts, cgroup/cgroup2 ...), create linux.devices and
 * the default devices (null zero full random urandom tty, ptmx -> pts/ptmx,
 * /dev/fd, stdin/out/err, core symlinks) when /dev is not a bind of the host,
 * apply mountLabel (a context= option) when SELinux is on (ignored when off).
 * Every destination is resolved inside the rootfs without following
 * symlinks out of it. */
int rootfs_prepare(const struct oci_spec *spec, const struct rootfs_options *opts, ac_error_t *err);
/* Before the clone, as host root: a detached copy (open_tree) of each
 * plain bind mount's source, so that a container in a new user namespace
 * still mounts a source its root could not reach (a 0700 folder of host
 * root's), as runc does. NULL when none; -1 for mounts without one (the
 * init then binds them itself). */
int *rootfs_make_bind_trees(const struct oci_spec *spec);
/* Step 2 (after createContainer hooks): pivot_root into the rootfs (or
 * move+chroot), detach the old root, chdir("/"); mask linux.maskedPaths
 * (/dev/null over files, empty read-only tmpfs over directories), make
 * linux.readonlyPaths read-only binds, and remount "/" read-only when
 * root.readonly. Finally set the rootfsPropagation on "/". */
int rootfs_finalize(const struct oci_spec *spec, const struct rootfs_options *opts, ac_error_t *err);

/* Safe path resolution under a container-controlled root: every lookup goes
 * through openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so a symlink in
 * the rootfs can never lead out of it. */
int safe_openat(int rootfd, const char *path, int flags, mode_t mode, ac_error_t *err);
/* mkdir -p under rootfd (each component created with mkdirat and checked),
 * returning an O_PATH|O_DIRECTORY fd of the result. */
int safe_mkdir_p_at(int rootfd, const char *path, mode_t mode, ac_error_t *err);

#endif
