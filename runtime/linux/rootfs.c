/* The container's filesystem (see rootfs.h).
 *
 * Every mount target is resolved inside the rootfs with safe_openat /
 * safe_mkdir_p_at and then addressed through its fd ("/proc/self/fd/N", or
 * the fd itself with the new mount API), never through a path string the
 * kernel would walk again: a symlink in the image cannot redirect a mount to
 * the host. Bind mounts use open_tree(OPEN_TREE_CLONE) + move_mount, which
 * hands back an fd of the new mount itself for the follow-up remount,
 * propagation change and mount_setattr. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/linux/mount_options.h"
#include "runtime/linux/protect.h"
#include "runtime/linux/rootfs.h"
#include "runtime/linux/userns.h"
#include "runtime/util/selinux.h"
#include "runtime/util/utils.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct rootfs_ctx {
    const struct oci_spec *spec;
    const struct rootfs_options *opts;
    int rootfd;         /* the rootfs (after its self bind mount) */
    int raw_rootfd;     /* the rootfs under an idmapped bind, or -1: where host root makes mount points */
    const char *label;  /* linux.mountLabel when SELinux is on, else NULL */
};

/* "/proc/self/fd/N": how mount(2) is pointed at an fd we resolved. */
struct fd_path { char s[64]; };

static struct fd_path fd_path(int fd)
{
    struct fd_path p;
    snprintf(p.s, sizeof(p.s), "/proc/self/fd/%d", fd);
    return p;
}

static const char *fd_target(int fd, struct fd_path *buf)
{
    *buf = fd_path(fd);
    return buf->s;
}

static bool str_eq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* A destination must be absolute and its ".." may not climb above "/"
 * (the spec says it is a path in the container; an escaping one is a bug or
 * an attack either way). */
static int check_destination(const char *dest, size_t i, ac_error_t *err)
{
    if (dest == NULL || dest[0] != '/')
        return ac_error(err, 0, "mounts[%zu].destination `%s` is not an absolute path", i, dest ? dest : "");
    int depth = 0;
    const char *p = dest;
    while (*p) {
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return ac_error(err, 0, "mounts[%zu].destination `%s` escapes the container root", i, dest);
        } else if (len > 0 && !(len == 1 && p[0] == '.')) {
            depth++;
        }
        p += len;
    }
    return 0;
}

/* "/dev/" and "/dev" are the same destination. */
static bool dest_is(const char *dest, const char *want)
{
    if (dest == NULL)
        return false;
    size_t len = strlen(dest);
    while (len > 1 && dest[len - 1] == '/')
        len--;
    return strlen(want) == len && strncmp(dest, want, len) == 0;
}

/* Split "/a/b/c" into a parent ("/a/b") and a last component ("c"). */
static void split_path(const char *path, char **parent, char **base)
{
    cleanup_free char *copy = xstrdup(path);
    size_t len = strlen(copy);
    while (len > 1 && copy[len - 1] == '/')
        copy[--len] = '\0';
    char *slash = strrchr(copy, '/');
    if (slash == NULL) {
        *parent = xstrdup(".");
        *base = xstrdup(copy);
        return;
    }
    *base = xstrdup(slash + 1);
    *slash = '\0';
    *parent = xstrdup(*copy ? copy : "/");
}

static const char *selinux_mount_label(const struct oci_spec *spec)
{
    const char *label = spec->linux ? spec->linux->mount_label : NULL;
    if (label == NULL || *label == '\0')
        return NULL;
    /* -1 (not probed: create probes for a label) keeps the label, and
     * the mount then fails rather than drops it */
    if (ac_selinux_enabled() == 0) {
        ac_debug("SELinux is off: ignoring mountLabel `%s`", label);
        return NULL;
    }
    return label;
}

/* The filesystem data with the SELinux context added, as libselinux users
 * (runc, crun) pass it: `context="LABEL"`. */
static char *data_with_label(const char *data, const char *label)
{
    if (label == NULL)
        return data ? xstrdup(data) : NULL;
    if (data == NULL || *data == '\0')
        return xasprintf("context=\"%s\"", label);
    return xasprintf("%s,context=\"%s\"", data, label);
}

static bool fs_takes_label(const char *type)
{
    return str_eq(type, "tmpfs") || str_eq(type, "devpts") || str_eq(type, "mqueue");
}

/* MS_* flags of a mount as statvfs reports them: those a less privileged
 * mount namespace cannot change ("locked") and the atime mode. */
static unsigned long current_mount_flags(const char *target)
{
    struct statvfs sv;
    if (statvfs(target, &sv) < 0)
        return 0;
    unsigned long f = 0;
    if (sv.f_flag & ST_RDONLY) f |= MS_RDONLY;
    if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
    return f;
}

#define ATIME_FLAGS (MS_NOATIME | MS_RELATIME | MS_STRICTATIME)

/* MS_BIND|MS_REMOUNT with the requested flags. A bind of a mount that came
 * from a more privileged namespace has locked flags (nosuid, ro, atime...)
 * that a remount must repeat or get EPERM, so on EPERM retry with the
 * current flags kept, except what the options explicitly cleared (that
 * remains an error, as it should). keep_current does that from the start
 * (remounting "/" or a readonlyPath read-only must not drop nosuid...). */
static int remount_bind(const char *target, unsigned long flags, unsigned long cleared, bool keep_current)
{
    unsigned long keep = current_mount_flags(target) & ~cleared;
    if (flags & ATIME_FLAGS || cleared & ATIME_FLAGS)
        keep &= ~ATIME_FLAGS;
    if (keep_current)
        flags |= keep;
    if (mount("", target, NULL, MS_BIND | MS_REMOUNT | flags, NULL) == 0)
        return 0;
    if (errno != EPERM || keep_current)
        return -1;
    return mount("", target, NULL, MS_BIND | MS_REMOUNT | flags | keep, NULL);
}

/* MS_* per-mount flags as MOUNT_ATTR_* (mount_setattr(2)); the atime mode
 * is one of three values under MOUNT_ATTR__ATIME. */
static uint64_t mount_attrs_of(unsigned long flags)
{
    uint64_t a = 0;
    if (flags & MS_RDONLY) a |= MOUNT_ATTR_RDONLY;
    if (flags & MS_NOSUID) a |= MOUNT_ATTR_NOSUID;
    if (flags & MS_NODEV) a |= MOUNT_ATTR_NODEV;
    if (flags & MS_NOEXEC) a |= MOUNT_ATTR_NOEXEC;
    if (flags & MS_NODIRATIME) a |= MOUNT_ATTR_NODIRATIME;
    return a;
}

static uint64_t atime_attr_of(unsigned long flags)
{
    return flags & MS_NOATIME ? MOUNT_ATTR_NOATIME : flags & MS_STRICTATIME ? MOUNT_ATTR_STRICTATIME
                                                                              : MOUNT_ATTR_RELATIME;
}

/* remount_bind of the mount whose root mntfd is, by one mount_setattr on
 * the fd: the same flags come out (exactly these, with relatime unless an
 * atime flag is given; on EPERM, or with keep_current, these on top of the
 * mount's own but for what the options cleared), without statvfs and a
 * remount through /proc/self/fd (issue 20: two path walks through procfs
 * per mount). Kernels without mount_setattr (before 5.12) remount. */
static int remount_bind_fd(int mntfd, unsigned long flags, unsigned long cleared, bool keep_current)
{
    const uint64_t bools = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                           MOUNT_ATTR_NODIRATIME;
    uint64_t set = mount_attrs_of(flags);
    if (!keep_current) {
        struct mount_attr exact = {.attr_set = set | atime_attr_of(flags),
                                   .attr_clr = (bools & ~set) | MOUNT_ATTR__ATIME};
        if (mount_setattr(mntfd, "", AT_EMPTY_PATH, &exact, sizeof(exact)) == 0)
            return 0;
        if (errno == ENOSYS) {
            struct fd_path buf;
            return remount_bind(fd_target(mntfd, &buf), flags, cleared, false);
        }
        if (errno != EPERM)
            return -1;
    }
    /* the mount's own flags kept, but for the cleared ones */
    struct mount_attr keep = {.attr_set = set, .attr_clr = mount_attrs_of(cleared)};
    if ((flags | cleared) & ATIME_FLAGS) {
        keep.attr_set |= atime_attr_of(flags);
        keep.attr_clr |= MOUNT_ATTR__ATIME;
    }
    if (mount_setattr(mntfd, "", AT_EMPTY_PATH, &keep, sizeof(keep)) == 0)
        return 0;
    if (errno == ENOSYS) {
        struct fd_path buf;
        return remount_bind(fd_target(mntfd, &buf), flags, cleared, true);
    }
    return -1;
}

/* A user namespace with the mount's uid/gid mappings, for MOUNT_ATTR_IDMAP. */
static int idmap_userns_fd(const struct oci_mount *m, size_t i, ac_error_t *err)
{
    if (m->n_uid_mappings == 0 || m->n_gid_mappings == 0)
        return ac_error(err, 0, "mounts[%zu]: idmap needs uidMappings and gidMappings", i);
    int fd = userns_make(m->uid_mappings, m->n_uid_mappings, m->gid_mappings, m->n_gid_mappings, false, err);
    if (fd < 0)
        ac_error_wrap(err, "mounts[%zu]: idmap", i);
    return fd;
}

/* An idmapped rootfs has no id for host root: a mount point it must make
 * there (EOVERFLOW) is made in the rootfs below the idmapped bind instead,
 * the same directory on the same disk, and opened again above it. */
static int mkdir_in_root(struct rootfs_ctx *ctx, const char *path, ac_error_t *err)
{
    int fd = safe_mkdir_p_at(ctx->rootfd, path, 0755, err);
    if (fd >= 0 || ctx->raw_rootfd < 0 || errno != EOVERFLOW)
        return fd;
    ac_error_free(err);
    int raw = safe_mkdir_p_at(ctx->raw_rootfd, path, 0755, err);
    if (raw < 0)
        return -1;
    close(raw);
    return safe_openat(ctx->rootfd, path, O_PATH | O_DIRECTORY, 0, err);
}

/* Open (creating if missing) the destination of a bind of a non-directory:
 * an empty regular file, created inside the rootfs. */
static int open_file_destination(struct rootfs_ctx *ctx, const char *dest, ac_error_t *err)
{
    int rootfd = ctx->rootfd;
    int fd = safe_openat(rootfd, dest, O_PATH, 0, NULL);
    if (fd >= 0 || errno != ENOENT) {
        if (fd < 0)
            return ac_error(err, errno, "open `%s` in the container rootfs", dest);
        return fd;
    }
    cleanup_free char *parent = NULL;
    cleanup_free char *base = NULL;
    split_path(dest, &parent, &base);
    cleanup_close int parentfd = mkdir_in_root(ctx, parent, err);
    if (parentfd < 0)
        return -1;
    int cfd = openat(parentfd, base, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (cfd < 0 && errno == EOVERFLOW && ctx->raw_rootfd >= 0) {
        cleanup_close int rawparent = safe_openat(ctx->raw_rootfd, parent, O_PATH | O_DIRECTORY, 0, err);
        if (rawparent < 0)
            return -1;
        cfd = openat(rawparent, base, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    }
    if (cfd < 0 && errno != EEXIST)
        return ac_error(err, errno, "create `%s` in the container rootfs", dest);
    if (cfd >= 0)
        close(cfd);
    return safe_openat(rootfd, dest, O_PATH, 0, err);
}

/* Clone `source` under srcfd (srcfd itself when source is "";
 * recursively when asked), optionally idmap it, and attach it on destfd.
 * Returns an O_PATH fd of the new mount's root. */
static int bind_onto_at(int srcfd, const char *source, int destfd, bool recursive, int userns_fd,
                        bool recursive_idmap, ac_error_t *err)
{
    cleanup_close int tree = open_tree(srcfd, source,
                                       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0) |
                                           (srcfd != AT_FDCWD && !*source ? AT_EMPTY_PATH : 0));
    if (tree < 0)
        return ac_error(err, errno, "open_tree");
    if (userns_fd >= 0) {
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd };
        if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive_idmap ? AT_RECURSIVE : 0), &attr, sizeof(attr)) < 0)
            return ac_error(err, errno, "idmap");
    }
    if (move_mount(tree, "", destfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return ac_error(err, errno, "move_mount");
    return ac_steal_fd(&tree);
}

static int bind_onto(const char *source, int destfd, bool recursive, int userns_fd, bool recursive_idmap,
                     ac_error_t *err)
{
    return bind_onto_at(AT_FDCWD, source, destfd, recursive, userns_fd, recursive_idmap, err);
}

/* A tier's bind source: opened without following a symlink in any
 * component, so one planted in a shared folder by an earlier container
 * (project -> ../secret) cannot redirect the mount. Returns an O_PATH fd. */
static int open_bind_source_nofollow(const struct oci_mount *m, size_t i, ac_error_t *err)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, m->source, &how, sizeof(how));
    if (fd < 0 && errno == ELOOP)
        return ac_error(err, 0,
                        "mounts[%zu].source `%s`: a tiered container's bind source must not go through a "
                        "symlink (give the real path)", i, m->source);
    if (fd < 0)
        return ac_error(err, errno, "mounts[%zu].source `%s`", i, m->source);
    return fd;
}

/* Propagation and recursive attributes, common to every kind of mount;
 * mntfd is the root of the new mount. */
static int apply_mount_extras(int mntfd, const struct mount_opts *mo, ac_error_t *err)
{
    struct fd_path buf;
    const char *target = fd_target(mntfd, &buf);
    if (mo->propagation && mount("", target, NULL, mo->propagation, NULL) < 0)
        return ac_error(err, errno, "set propagation");
    if (mo->has_rec_attr) {
        struct mount_attr attr = { .attr_set = mo->rec_attr_set, .attr_clr = mo->rec_attr_clr };
        if (mount_setattr(mntfd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
            return ac_error(err, errno, "mount_setattr (recursive options)");
    }
    return 0;
}

int *rootfs_make_bind_trees(const struct oci_spec *spec)
{
    int *trees = NULL;
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct oci_mount *m = &spec->mounts[i];
        cleanup_mount_opts struct mount_opts mo;
        if (m->source == NULL || mount_opts_parse(m->options, m->n_options, &mo, NULL) < 0 ||
            !(mo.bind || str_eq(m->type, "bind")) || mo.idmap)
            continue;
        int tree = open_tree(AT_FDCWD, m->source,
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (mo.recursive_bind ? AT_RECURSIVE : 0));
        if (tree < 0) /* the init tries itself and says why */
            continue;
        if (trees == NULL) {
            trees = xmalloc(spec->n_mounts * sizeof(int));
            for (size_t k = 0; k < spec->n_mounts; k++)
                trees[k] = -1;
        }
        trees[i] = tree;
    }
    return trees;
}

/* Attach a bind tree made by rootfs_make_bind_trees on destfd; returns an
 * O_PATH fd of the new mount's root. */
static int attach_bind_tree(int tree, int destfd, ac_error_t *err)
{
    if (move_mount(tree, "", destfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return ac_error(err, errno, "move_mount");
    int fd = dup(tree);
    if (fd < 0)
        return ac_error(err, errno, "dup");
    return fd;
}

static int mount_bind(struct rootfs_ctx *ctx, const struct oci_mount *m, size_t i, const struct mount_opts *mo,
                      ac_error_t *err)
{
    struct stat st;
    cleanup_close int srcfd = -1;
    const int *trees = ctx->opts->bind_tree_fds;
    int tree = trees && !mo->idmap ? trees[i] : -1;
    if (tree >= 0) {
        if (fstat(tree, &st) < 0)
            return ac_error(err, errno, "mounts[%zu].source `%s`", i, m->source);
    } else if (m->source && ctx->opts->nofollow_bind_sources) {
        srcfd = open_bind_source_nofollow(m, i, err);
        if (srcfd < 0 || fstat(srcfd, &st) < 0)
            return srcfd < 0 ? -1 : ac_error(err, errno, "mounts[%zu].source `%s`", i, m->source);
    } else if (m->source == NULL || stat(m->source, &st) < 0) {
        return ac_error(err, m->source ? errno : ENOENT, "mounts[%zu].source `%s`", i, m->source ? m->source : "");
    }
    cleanup_close int destfd = S_ISDIR(st.st_mode) ? mkdir_in_root(ctx, m->destination, err)
                                                   : open_file_destination(ctx, m->destination, err);
    if (destfd < 0)
        return ac_error_wrap(err, "mounts[%zu]", i);

    cleanup_close int userns_fd = -1;
    if (mo->idmap) {
        /* made by the runtime before the clone when it could (from inside a
         * new pid namespace the host's /proc names other processes) */
        const int *made = ctx->opts->idmap_fds;
        userns_fd = made && made[i] >= 0 ? dup(made[i]) : idmap_userns_fd(m, i, err);
        if (userns_fd < 0)
            return made && made[i] >= 0 ? ac_error(err, errno, "mounts[%zu]: idmap", i) : -1;
    }
    cleanup_close int mntfd = tree >= 0    ? attach_bind_tree(tree, destfd, err)
                              : srcfd >= 0 ? bind_onto_at(srcfd, "", destfd, mo->recursive_bind, userns_fd,
                                                          mo->recursive_idmap, err)
                                           : bind_onto(m->source, destfd, mo->recursive_bind, userns_fd,
                                                       mo->recursive_idmap, err);
    if (mntfd < 0)
        return ac_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])", m->source, m->destination, i);

    /* A bind mount takes the source's flags: options only apply through a
     * remount, needed only when one of them asks for something. */
    unsigned long remount_flags = mo->flags & ~MS_REMOUNT;
    if ((remount_flags || mo->cleared) && remount_bind_fd(mntfd, remount_flags, mo->cleared, false) < 0)
        return ac_error(err, errno, "remount `%s` to `%s` (mounts[%zu])", m->source, m->destination, i);
    if (apply_mount_extras(mntfd, mo, err) < 0)
        return ac_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])", m->source, m->destination, i);
    return 0;
}

/* Remove "gid=N" from devpts data: in a user namespace without a mapping
 * for the tty group the kernel refuses it, and crun/runc retry without. */
static char *data_without_gid(const char *data)
{
    char *out = xstrdup("");
    cleanup_free char *copy = xstrdup(data);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strncmp(tok, "gid=", 4) == 0)
            continue;
        char *n = *out ? xasprintf("%s,%s", out, tok) : xstrdup(tok);
        free(out);
        out = n;
    }
    return out;
}

/* mount(2) a filesystem onto destfd; returns 0 or -1 with errno. */
static int mount_fs_at(const char *source, int destfd, const char *type, unsigned long flags, const char *data)
{
    struct fd_path buf;
    return mount(source, fd_target(destfd, &buf), type, flags, data);
}

struct mountinfo_entry {
    char *root, *mountpoint, *fstype, *super_opts;
};

static void mountinfo_free(struct mountinfo_entry **entries)
{
    if (*entries == NULL)
        return;
    for (struct mountinfo_entry *e = *entries; e->fstype; e++) {
        free(e->root);
        free(e->mountpoint);
        free(e->fstype);
        free(e->super_opts);
    }
    free(*entries);
}

/* The cgroup mounts of /proc/self/mountinfo; a NULL-fstype-terminated array. */
static int read_mounts(const char *const *fstypes, struct mountinfo_entry **out, ac_error_t *err);

static int read_cgroup_mounts(struct mountinfo_entry **out, ac_error_t *err)
{
    return read_mounts((const char *const[]){ "cgroup", "cgroup2", NULL }, out, err);
}

static bool str_in(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static int read_mounts(const char *const *fstypes, struct mountinfo_entry **out, ac_error_t *err)
{
    cleanup_free char *text = NULL;
    if (read_all_file("/proc/self/mountinfo", &text, NULL, err) < 0)
        return -1;
    size_t n = 0;
    struct mountinfo_entry *entries = xcalloc(1, sizeof(*entries));
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sep = strstr(line, " - ");
        if (sep == NULL)
            continue;
        *sep = '\0';
        char fstype[64], super[1024], root[4096], mnt[4096];
        if (sscanf(sep + 3, "%63s %*s %1023s", fstype, super) != 2)
            continue;
        if (!str_in(fstype, fstypes))
            continue;
        if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2)
            continue;
        entries = xrealloc(entries, (n + 2) * sizeof(*entries));
        entries[n] = (struct mountinfo_entry){ xstrdup(root), xstrdup(mnt), xstrdup(fstype), xstrdup(super) };
        memset(&entries[++n], 0, sizeof(*entries));
    }
    *out = entries;
    return 0;
}

/* The host mount of a /proc/self/cgroup line's hierarchy ("cpu,cpuacct",
 * "name=systemd", or "" for the unified one). */
static const struct mountinfo_entry *find_hierarchy(const struct mountinfo_entry *mounts, const char *controllers)
{
    for (const struct mountinfo_entry *e = mounts; e->fstype; e++) {
        if (*controllers == '\0') {
            if (strcmp(e->fstype, "cgroup2") == 0)
                return e;
            continue;
        }
        if (strcmp(e->fstype, "cgroup") != 0)
            continue;
        if (list_has_all(e->super_opts, ',', controllers))
            return e;
    }
    return NULL;
}

/* "cgroup" on a v1/hybrid host, as runc shows it: a tmpfs with, for each
 * hierarchy this process is in, a bind of its own cgroup directory from the
 * host mount (so the container sees its cgroup, not the host's tree). */
static int mount_cgroup_v1(struct rootfs_ctx *ctx, const struct oci_mount *m, size_t i, const struct mount_opts *mo,
                           int destfd, ac_error_t *err)
{
    cleanup_free char *tmpfs_data = data_with_label("mode=755", ctx->label);
    unsigned long flags = mo->flags & ~(MS_RDONLY | MS_REMOUNT);
    if (mount_fs_at("tmpfs", destfd, "tmpfs", flags, tmpfs_data) < 0)
        return ac_error(err, errno, "mount `tmpfs` to `%s` (mounts[%zu])", m->destination, i);
    cleanup_close int tmpfd = safe_openat(ctx->rootfd, m->destination, O_PATH | O_DIRECTORY, 0, err);
    if (tmpfd < 0)
        return -1;

    /* Each hierarchy's host mount: from the layout the runtime read before
     * the clone while we are in its cgroup namespace (the mount roots are
     * then the same for us; reading our mountinfo again cost 0.2-0.3 ms),
     * from our own mountinfo otherwise, and for a hierarchy that layout
     * does not have. */
    __attribute__((cleanup(mountinfo_free))) struct mountinfo_entry *mounts = NULL;
    if (!ctx->opts->cgroupns_is_runtimes && read_cgroup_mounts(&mounts, err) < 0)
        return -1;
    cleanup_free char *cgroups = NULL;
    if (read_all_file("/proc/self/cgroup", &cgroups, NULL, err) < 0)
        return -1;

    char *save = NULL;
    for (char *line = strtok_r(cgroups, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1, *path = c2 + 1;
        struct mountinfo_entry from_layout = {.fstype = (char *)(*controllers ? "cgroup" : "cgroup2")};
        const struct mountinfo_entry *h = NULL;
        int known = ctx->opts->cgroupns_is_runtimes
                        ? cgroup_hierarchy_mount(controllers, (const char **)&from_layout.mountpoint,
                                                 (const char **)&from_layout.root)
                        : -1;
        if (known == 1)
            h = &from_layout;
        else if (known < 0 && mounts == NULL && read_cgroup_mounts(&mounts, err) < 0)
            return -1;
        if (known < 0)
            h = find_hierarchy(mounts, controllers);
        if (h == NULL) {
            ac_debug("cgroup hierarchy `%s` is not mounted: not shown in the container", controllers);
            continue;
        }
        const char *name = strrchr(h->mountpoint, '/') ? strrchr(h->mountpoint, '/') + 1 : h->mountpoint;
        if (mkdirat(tmpfd, name, 0755) < 0 && errno != EEXIST)
            return ac_error(err, errno, "mkdir `%s/%s`", m->destination, name);
        cleanup_close int subfd = openat(tmpfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (subfd < 0)
            return ac_error(err, errno, "open `%s/%s`", m->destination, name);
        /* Our cgroup is visible in the host mount when the mount's root is
         * a prefix of our path (both relative to our cgroup namespace).
         * Inside a cgroup namespace it is not ("/.."): there a new mount of
         * the hierarchy shows exactly the namespace's root, our cgroup. */
        size_t rl = strcmp(h->root, "/") == 0 ? 0 : strlen(h->root);
        bool visible = rl == 0 || (strncmp(path, h->root, rl) == 0 && (path[rl] == '/' || path[rl] == '\0'));
        if (!visible) {
            bool v2 = strcmp(h->fstype, "cgroup2") == 0;
            if (mount_fs_at(h->fstype, subfd, h->fstype, mo->flags & ~MS_REMOUNT, v2 ? NULL : controllers) < 0)
                return ac_error(err, errno, "mount `%s` (%s) to `%s/%s` (mounts[%zu])", h->fstype, controllers,
                                m->destination, name, i);
        } else {
            cleanup_free char *source = xasprintf("%s%s", h->mountpoint, path + rl);
            cleanup_close int mntfd = bind_onto(source, subfd, false, -1, false, err);
            if (mntfd < 0)
                return ac_error_wrap(err, "mount `%s` to `%s/%s` (mounts[%zu])", source, m->destination, name, i);
            if (remount_bind_fd(mntfd, mo->flags & ~MS_REMOUNT, mo->cleared, false) < 0)
                return ac_error(err, errno, "remount `%s` to `%s/%s` (mounts[%zu])", source, m->destination, name,
                                i);
        }
        /* Co-mounted controllers get symlinks, as on the host ("cpu" ->
         * "cpu,cpuacct"). */
        cleanup_free char *copy = xstrdup(controllers);
        char *s2 = NULL;
        for (char *c = strtok_r(copy, ",", &s2); c; c = strtok_r(NULL, ",", &s2))
            if (strcmp(c, name) != 0 && strncmp(c, "name=", 5) != 0 && symlinkat(name, tmpfd, c) < 0 && errno != EEXIST)
                return ac_error(err, errno, "symlink `%s/%s`", m->destination, c);
    }
    if (mo->flags & MS_RDONLY) {
        struct fd_path buf;
        if (mount("", fd_target(tmpfd, &buf), NULL, MS_REMOUNT | mo->flags, tmpfs_data) < 0)
            return ac_error(err, errno, "remount `%s` read-only (mounts[%zu])", m->destination, i);
    }
    return apply_mount_extras(tmpfd, mo, err);
}

static int mount_cgroup(struct rootfs_ctx *ctx, const struct oci_mount *m, size_t i, const struct mount_opts *mo,
                        int destfd, ac_error_t *err)
{
    struct statfs sf;
    if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
        if (mount_fs_at("cgroup2", destfd, "cgroup2", mo->flags, NULL) == 0)
            return 0;
        int e = errno;
        if (e != EPERM && e != EBUSY)
            return ac_error(err, e, "mount `cgroup2` to `%s` (mounts[%zu])", m->destination, i);
        /* Not allowed to mount a new one (no cgroup namespace, or a user
         * namespace): show our own cgroup from the host mount instead. */
        cleanup_free char *cg = NULL;
        if (read_all_file("/proc/self/cgroup", &cg, NULL, err) < 0)
            return -1;
        char *path = strstr(cg, "0::");
        cleanup_free char *source = xasprintf("/sys/fs/cgroup%s", path ? path + 3 : "/");
        source[strcspn(source, "\n")] = '\0';
        cleanup_close int mntfd = bind_onto(source, destfd, true, -1, false, err);
        if (mntfd < 0)
            return ac_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])", source, m->destination, i);
        if (remount_bind_fd(mntfd, mo->flags & ~MS_REMOUNT, mo->cleared, false) < 0)
            return ac_error(err, errno, "remount `%s` to `%s` (mounts[%zu])", source, m->destination, i);
        return 0;
    }
    return mount_cgroup_v1(ctx, m, i, mo, destfd, err);
}

static bool is_readonly_dev(const struct oci_mount *m, const struct mount_opts *mo)
{
    return str_eq(m->type, "tmpfs") && str_eq(m->destination, "/dev") && (mo->flags & MS_RDONLY);
}

static int mount_one(struct rootfs_ctx *ctx, const struct oci_mount *m, size_t i, ac_error_t *err)
{
    if (check_destination(m->destination, i, err) < 0)
        return -1;
    cleanup_mount_opts struct mount_opts mo;
    if (mount_opts_parse(m->options, m->n_options, &mo, err) < 0)
        return ac_error_wrap(err, "mounts[%zu].options", i);
    if (mo.tmpcopyup)
        ac_debug("mounts[%zu]: tmpcopyup is not supported, ignored", i);
    if (mo.bind || str_eq(m->type, "bind"))
        return mount_bind(ctx, m, i, &mo, err);
    if (m->type == NULL || *m->type == '\0')
        return ac_error(err, 0, "mounts[%zu] (`%s`): no type", i, m->destination);
    if (mo.idmap)
        return ac_error(err, EOPNOTSUPP, "mounts[%zu] (`%s`): idmap is only supported on bind mounts", i,
                        m->destination);

    /* proc or sysfs over a symlink would land where the link points, maybe
     * outside the container's /proc (runc refuses it the same way) */
    if (str_eq(m->type, "proc") || str_eq(m->type, "sysfs")) {
        cleanup_close int linkfd = safe_openat(ctx->rootfd, m->destination, O_PATH | O_NOFOLLOW, 0, NULL);
        struct stat st;
        if (linkfd >= 0 && fstat(linkfd, &st) == 0 && !S_ISDIR(st.st_mode))
            return ac_error(err, 0, "mounts[%zu]: %s must be mounted on ordinary directory, and `%s` is not one",
                            i, m->type, m->destination);
    }
    /* a read-only /dev still gets its devices and /dev/pts: it turns
     * read-only in rootfs_finalize */
    if (is_readonly_dev(m, &mo))
        mo.flags &= ~MS_RDONLY;
    cleanup_close int destfd = mkdir_in_root(ctx, m->destination, err);
    if (destfd < 0)
        return ac_error_wrap(err, "mounts[%zu]", i);
    if (str_eq(m->type, "cgroup"))
        return mount_cgroup(ctx, m, i, &mo, destfd, err);

    const char *source = m->source && *m->source ? m->source : m->type;
    cleanup_free char *data = fs_takes_label(m->type) ? data_with_label(mo.data, ctx->label)
                                                      : (mo.data ? xstrdup(mo.data) : NULL);
    int r = mount_fs_at(source, destfd, m->type, mo.flags, data);
    if (r < 0 && str_eq(m->type, "devpts") && (errno == EINVAL || errno == EPERM) && data && strstr(data, "gid=")) {
        cleanup_free char *nogid = data_without_gid(data);
        ac_debug("mounts[%zu]: devpts refused gid=, retrying without", i);
        r = mount_fs_at(source, destfd, m->type, mo.flags, nogid);
    }
    if (r < 0 && str_eq(m->type, "sysfs") && errno == EPERM && (ctx->opts->in_user_ns || ctx->opts->rootless)) {
        /* A user namespace without its own network namespace may not mount
         * sysfs: show the host's read-only instead, as runc does. */
        ac_debug("mounts[%zu]: sysfs not permitted, binding /sys instead", i);
        cleanup_close int mntfd = bind_onto("/sys", destfd, true, -1, false, err);
        if (mntfd < 0)
            return ac_error_wrap(err, "mount `/sys` to `%s` (mounts[%zu])", m->destination, i);
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                               MOUNT_ATTR_NOEXEC };
        if (mount_setattr(mntfd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
            return ac_error(err, errno, "make `%s` read-only (mounts[%zu])", m->destination, i);
        return apply_mount_extras(mntfd, &mo, err);
    }
    if (r < 0)
        return ac_error(err, errno, "mount `%s` to `%s` (mounts[%zu])", source, m->destination, i);

    if (mo.propagation || mo.has_rec_attr) {
        cleanup_close int mntfd = safe_openat(ctx->rootfd, m->destination, O_PATH | O_DIRECTORY, 0, err);
        if (mntfd < 0)
            return ac_error_wrap(err, "mounts[%zu]", i);
        if (apply_mount_extras(mntfd, &mo, err) < 0)
            return ac_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])", source, m->destination, i);
    }
    return 0;
}

/* ---- /dev ---- */

struct default_device { const char *path; unsigned major, minor; };
static const struct default_device default_devices[] = {
    { "/dev/null", 1, 3 },    { "/dev/zero", 1, 5 },    { "/dev/full", 1, 7 },
    { "/dev/random", 1, 8 },  { "/dev/urandom", 1, 9 }, { "/dev/tty", 5, 0 },
};

/* Bind the host's node of the same path: mknod is not allowed in a user
 * namespace. */
static int bind_device(int parentfd, const char *base, const char *path, ac_error_t *err)
{
    int cfd = openat(parentfd, base, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (cfd < 0)
        return ac_error(err, errno, "create `%s`", path);
    close(cfd);
    cleanup_close int destfd = openat(parentfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (destfd < 0)
        return ac_error(err, errno, "open `%s`", path);
    cleanup_close int mntfd = bind_onto(path, destfd, false, -1, false, err);
    if (mntfd < 0)
        return ac_error_wrap(err, "bind device `%s`", path);
    return 0;
}

/* The directory the last device went in, kept for the next one: the
 * default devices all go in /dev, one open for the six. */
struct device_dir {
    char *path;
    int fd;
    bool setgid; /* new files take its group */
    uid_t euid;  /* who a new node belongs to */
    gid_t egid;
};

static void device_dir_release(struct device_dir *d)
{
    free(d->path);
    if (d->fd >= 0)
        close(d->fd);
}

static int device_dir_open(struct rootfs_ctx *ctx, struct device_dir *d, const char *parent, ac_error_t *err)
{
    if (d->fd >= 0 && strcmp(d->path, parent) == 0)
        return d->fd;
    device_dir_release(d);
    d->path = xstrdup(parent);
    d->fd = mkdir_in_root(ctx, parent, err);
    struct stat st;
    d->setgid = d->fd < 0 || fstat(d->fd, &st) < 0 || (st.st_mode & S_ISGID);
    return d->fd;
}

static int create_device(struct rootfs_ctx *ctx, struct device_dir *dir, const char *path, char type, int64_t major,
                         int64_t minor, mode_t mode, uid_t uid, gid_t gid, ac_error_t *err)
{
    if (path == NULL || path[0] != '/')
        return ac_error(err, 0, "device path `%s` is not absolute", path ? path : "");
    cleanup_free char *parent = NULL;
    cleanup_free char *base = NULL;
    split_path(path, &parent, &base);
    if (strcmp(base, "..") == 0 || strcmp(base, ".") == 0 || *base == '\0')
        return ac_error(err, 0, "device path `%s` is invalid", path);
    int parentfd = device_dir_open(ctx, dir, parent, err);
    if (parentfd < 0)
        return -1;
    if (ctx->opts->in_user_ns)
        return bind_device(parentfd, base, path, err);

    mode_t kind;
    switch (type) {
    case 'c': case 'u': kind = S_IFCHR; break;
    case 'b': kind = S_IFBLK; break;
    case 'p': kind = S_IFIFO; break;
    default: return ac_error(err, 0, "device `%s`: unknown type `%c`", path, type);
    }
    if (mknodat(parentfd, base, kind | (mode & 07777), makedev((unsigned)major, (unsigned)minor)) < 0) {
        if (errno == EEXIST)
            return 0;
        if (errno == EPERM)
            return bind_device(parentfd, base, path, err);
        return ac_error(err, errno, "mknod `%s`", path);
    }
    /* a new node is ours already, unless the directory gives its group */
    if (uid == dir->euid && gid == dir->egid && !dir->setgid)
        return 0;
    if (fchownat(parentfd, base, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
        return ac_error(err, errno, "chown `%s`", path);
    return 0;
}

static int setup_dev(struct rootfs_ctx *ctx, ac_error_t *err)
{
    const struct oci_linux *lx = ctx->spec->linux;
    mode_t old_umask = umask(0);
    int r = 0;
    struct device_dir dir = {.fd = -1, .euid = geteuid(), .egid = getegid()};
    for (size_t d = 0; r == 0 && d < sizeof(default_devices) / sizeof(default_devices[0]); d++) {
        bool overridden = false;
        for (size_t j = 0; lx && j < lx->n_devices; j++)
            overridden |= str_eq(lx->devices[j].path, default_devices[d].path);
        if (!overridden)
            r = create_device(ctx, &dir, default_devices[d].path, 'c', default_devices[d].major,
                              default_devices[d].minor, 0666, 0, 0, err);
    }
    for (size_t j = 0; r == 0 && lx && j < lx->n_devices; j++) {
        const struct oci_device *dev = &lx->devices[j];
        r = create_device(ctx, &dir, dev->path, dev->type, dev->major, dev->minor,
                          dev->has_file_mode ? dev->file_mode : 0666, dev->has_uid ? dev->uid : 0,
                          dev->has_gid ? dev->gid : 0, err);
        if (r < 0)
            ac_error_wrap(err, "linux.devices[%zu]", j);
    }
    device_dir_release(&dir);
    umask(old_umask);
    if (r < 0)
        return -1;

    cleanup_close int devfd = mkdir_in_root(ctx, "/dev", err);
    if (devfd < 0)
        return -1;
    const char *links[][2] = {
        { "/proc/self/fd", "fd" }, { "/proc/self/fd/0", "stdin" },
        { "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
        { "/proc/kcore", "core" },
    };
    for (size_t k = 0; k < sizeof(links) / sizeof(links[0]); k++) {
        if (strcmp(links[k][1], "core") == 0 && access("/proc/kcore", F_OK) < 0)
            continue;
        if (symlinkat(links[k][0], devfd, links[k][1]) < 0 && errno != EEXIST)
            return ac_error(err, errno, "symlink `/dev/%s`", links[k][1]);
    }
    /* /dev/ptmx must be the devpts instance's ptmx of the container. */
    if (unlinkat(devfd, "ptmx", 0) < 0 && errno != ENOENT)
        return ac_error(err, errno, "remove `/dev/ptmx`");
    if (symlinkat("pts/ptmx", devfd, "ptmx") < 0)
        return ac_error(err, errno, "symlink `/dev/ptmx`");
    return 0;
}

/* /dev is set up by the runtime unless it is a bind of a host directory
 * (then it is the host's business). */
static bool dev_needs_setup(const struct oci_spec *spec)
{
    bool needs = true;
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct oci_mount *m = &spec->mounts[i];
        if (!dest_is(m->destination, "/dev"))
            continue;
        bool bind = str_eq(m->type, "bind");
        for (size_t j = 0; j < m->n_options; j++)
            bind |= str_eq(m->options[j], "bind") || str_eq(m->options[j], "rbind");
        needs = !bind;
    }
    return needs;
}

/* The propagation of "/" while preparing: rslave unless rprivate is asked
 * for (shared or unbindable are applied only at the end: pivot_root refuses
 * a shared root and an unbindable rootfs cannot be bound onto itself). */
static unsigned long root_propagation(const struct oci_spec *spec)
{
    const char *p = spec->linux ? spec->linux->rootfs_propagation : NULL;
    unsigned long f = mount_propagation_flags(p);
    if (f & MS_PRIVATE)
        return MS_PRIVATE | MS_REC;
    return MS_SLAVE | MS_REC;
}

int rootfs_prepare(const struct oci_spec *spec, const struct rootfs_options *opts, ac_error_t *err)
{
    const char *prop = spec->linux ? spec->linux->rootfs_propagation : NULL;
    if (prop && *prop && mount_propagation_flags(prop) == 0)
        return ac_error(err, 0, "linux.rootfsPropagation: unknown value `%s`", prop);
    /* in the runtime's own mount namespace "/" is the host's: not ours to change */
    if (!opts->host_mntns && mount(NULL, "/", NULL, root_propagation(spec), NULL) < 0)
        return ac_error(err, errno, "make `/` %s", root_propagation(spec) & MS_PRIVATE ? "rprivate" : "rslave");
    /* The rootfs must be a mount point for pivot_root / MS_MOVE. With the
     * container's user namespace as its idmap, the image's files are the
     * container's own (a filesystem that cannot be idmapped is bound as it
     * is: its files then show as the overflow id, readable by their mode). */
    bool bound = false;
    cleanup_close int raw_rootfd = -1;
    if (opts->rootfs_idmap_fd >= 0) {
        raw_rootfd = open(opts->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        cleanup_close int dest = open(opts->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ac_error_t e = NULL;
        cleanup_close int mnt = dest < 0 ? -1 : bind_onto(opts->rootfs, dest, true, opts->rootfs_idmap_fd, true, &e);
        bound = mnt >= 0;
        if (!bound) {
            ac_debug("rootfs `%s` not idmapped: %s", opts->rootfs, e ? e->msg : strerror(errno));
            ac_error_free(&e);
        }
    }
    if (!bound && mount(opts->rootfs, opts->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
        return ac_error(err, errno, "bind mount rootfs `%s` onto itself", opts->rootfs);
    /* The container's mounts then go on this copy alone: private, nothing
     * propagates to the host's other mounts (or back), and detaching it
     * (state_remove) takes them all away. */
    if (opts->host_mntns && mount(NULL, opts->rootfs, NULL, MS_PRIVATE | MS_REC, NULL) < 0)
        return ac_error(err, errno, "make the rootfs `%s` rprivate", opts->rootfs);

    struct rootfs_ctx ctx = { .spec = spec, .opts = opts, .label = selinux_mount_label(spec),
                              .raw_rootfd = bound ? raw_rootfd : -1 };
    cleanup_close int rootfd = open(opts->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return ac_error(err, errno, "open rootfs `%s`", opts->rootfs);
    ctx.rootfd = rootfd;

    for (size_t i = 0; i < spec->n_mounts; i++) {
        ac_debug("mounts[%zu]: %s %s -> %s", i, spec->mounts[i].type ? spec->mounts[i].type : "(none)",
                 spec->mounts[i].source ? spec->mounts[i].source : "", spec->mounts[i].destination);
        if (mount_one(&ctx, &spec->mounts[i], i, err) < 0)
            return -1;
    }
    if (dev_needs_setup(spec) && setup_dev(&ctx, err) < 0)
        return -1;
    return 0;
}

/* ---- after the createContainer hooks ---- */

static int pivot_into(const char *rootfs, ac_error_t *err)
{
    cleanup_close int oldroot = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (oldroot < 0)
        return ac_error(err, errno, "open `/`");
    cleanup_close int newroot = open(rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (newroot < 0)
        return ac_error(err, errno, "open rootfs `%s`", rootfs);
    if (fchdir(newroot) < 0)
        return ac_error(err, errno, "chdir to rootfs `%s`", rootfs);
    /* pivot_root(".", "."): the old root ends up stacked on top of the new
     * one, where it can be detached without needing a directory for it. */
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return ac_error(err, errno, "pivot_root to `%s`", rootfs);
    if (fchdir(oldroot) < 0)
        return ac_error(err, errno, "chdir to the old root");
    /* rslave first so the detach does not propagate to the host. */
    if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
        return ac_error(err, errno, "make the old root rslave");
    if (umount2(".", MNT_DETACH) < 0)
        return ac_error(err, errno, "detach the old root");
    return 0;
}

/* Without pivot_root the host's mounts stay in the namespace below the
 * chroot: a full proc or sysfs there would let the container mount a fresh
 * one (the kernel's "already visible" rule) and see the host's. Each is
 * detached, or covered by an empty tmpfs where it cannot be (runc does the
 * same). */
static int hide_host_proc_sys(const char *rootfs, ac_error_t *err)
{
    __attribute__((cleanup(mountinfo_free))) struct mountinfo_entry *mounts = NULL;
    if (read_mounts((const char *const[]){ "proc", "sysfs", NULL }, &mounts, err) < 0)
        return -1;
    size_t len = strlen(rootfs);
    for (struct mountinfo_entry *e = mounts; e->fstype; e++) {
        bool inside = strncmp(e->mountpoint, rootfs, len) == 0 &&
                      (e->mountpoint[len] == '/' || e->mountpoint[len] == '\0');
        if (strcmp(e->root, "/") != 0 || inside)
            continue;
        if (mount(NULL, e->mountpoint, NULL, MS_SLAVE | MS_REC, NULL) < 0) {
            if (errno == ENOENT || errno == EINVAL) /* gone with a parent detached before */
                continue;
            return ac_error(err, errno, "--no-pivot: make the host's `%s` rslave", e->mountpoint);
        }
        if (umount2(e->mountpoint, MNT_DETACH) == 0)
            continue;
        if ((errno != EINVAL && errno != EPERM) || mount("tmpfs", e->mountpoint, "tmpfs", 0, NULL) < 0)
            return ac_error(err, errno, "--no-pivot: hide the host's `%s`", e->mountpoint);
    }
    return 0;
}

static int move_into(const char *rootfs, ac_error_t *err)
{
    if (hide_host_proc_sys(rootfs, err) < 0)
        return -1;
    if (chdir(rootfs) < 0)
        return ac_error(err, errno, "chdir to rootfs `%s`", rootfs);
    if (mount(rootfs, "/", NULL, MS_MOVE, NULL) < 0)
        return ac_error(err, errno, "move rootfs `%s` to `/`", rootfs);
    if (chroot(".") < 0)
        return ac_error(err, errno, "chroot to rootfs `%s`", rootfs);
    return 0;
}

/* Nothing there to protect: the path does not exist, or (at a tier, whose
 * credential and rc paths go under every bind) a component is a file. runc
 * fails on the latter, which a plain container keeps. */
static bool nothing_there(int e, bool tiered) { return e == ENOENT || (tiered && e == ENOTDIR); }

static int mask_path(int rootfd, const char *path, const char *label, bool tiered, ac_error_t *err)
{
    cleanup_close int fd = safe_openat(rootfd, path, O_PATH, 0, NULL);
    if (fd < 0) {
        if (nothing_there(errno, tiered))
            return 0;
        return ac_error(err, errno, "linux.maskedPaths: open `%s`", path);
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return ac_error(err, errno, "linux.maskedPaths: stat `%s`", path);
    if (S_ISDIR(st.st_mode)) {
        cleanup_free char *data = data_with_label(NULL, label);
        struct fd_path buf;
        /* after pivot_root the container may have no /proc (ENOENT): then
         * the in-container path, as safe there since "/" is the container's */
        if (mount("tmpfs", fd_target(fd, &buf), "tmpfs", MS_RDONLY, data) < 0 &&
            (errno != ENOENT || mount("tmpfs", path, "tmpfs", MS_RDONLY, data) < 0))
            return ac_error(err, errno, "linux.maskedPaths: mount an empty tmpfs on `%s`", path);
        return 0;
    }
    cleanup_close int mntfd = bind_onto("/dev/null", fd, false, -1, false, err);
    if (mntfd < 0)
        return ac_error_wrap(err, "linux.maskedPaths: bind `/dev/null` on `%s`", path);
    return 0;
}

/* Is the file at fd the root of a mount (statx says so from 5.8)? */
static bool mount_root(int fd)
{
    struct statx stx;
    return statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) == 0 &&
           (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static int readonly_path(int rootfd, const char *path, bool tiered, ac_error_t *err)
{
    cleanup_close int fd = safe_openat(rootfd, path, O_PATH, 0, NULL);
    if (fd < 0) {
        if (nothing_there(errno, tiered))
            return 0;
        return ac_error(err, errno, "linux.readonlyPaths: open `%s`", path);
    }
    /* A mount of the container's already (a tier's /sys): read-only where
     * it is, with all beneath it. A copy laid over it would clone the
     * whole subtree (/sys holds the cgroup hierarchies) and leave the
     * writable original below. Every mount the root holds is the
     * container's own (the rootfs was bound onto itself, its submounts
     * copied with it), so no mount of the host's changes, not even in the
     * host's mount namespace. */
    struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
    if (mount_root(fd) && mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof(ro)) == 0)
        return 0;
    cleanup_close int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
    if (tree < 0)
        return ac_error(err, errno, "linux.readonlyPaths: clone `%s`", path);
    /* Read-only on the detached copy, recursively: no remount, so the
     * nosuid/nodev/noexec it had stay as they are. */
    struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
    if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
        return ac_error(err, errno, "linux.readonlyPaths: make `%s` read-only", path);
    if (move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return ac_error(err, errno, "linux.readonlyPaths: bind `%s`", path);
    return 0;
}

int rootfs_finalize(const struct oci_spec *spec, const struct rootfs_options *opts, ac_error_t *err)
{
    /* In the runtime's mount namespace neither pivot_root nor moving the
     * rootfs onto "/" is ours to do: chroot (as runc does there). */
    if (opts->host_mntns) {
        if (chdir(opts->rootfs) < 0 || chroot(".") < 0)
            return ac_error(err, errno, "chroot to rootfs `%s`", opts->rootfs);
    } else if ((opts->no_pivot ? move_into(opts->rootfs, err) : pivot_into(opts->rootfs, err)) < 0)
        return -1;
    if (chdir("/") < 0)
        return ac_error(err, errno, "chdir `/`");

    cleanup_close int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return ac_error(err, errno, "open `/`");
    const struct oci_linux *lx = spec->linux;
    const char *label = selinux_mount_label(spec);
    /* before the masks and read-only paths, which then sit on top */
    if (opts->home_roots && hide_home_dot_entries(opts->home_roots, opts->home_allow, err) < 0)
        return -1;
    if (opts->protect_roots && protect_writable_roots(opts->protect_roots, err) < 0)
        return -1;
    for (size_t i = 0; lx && i < lx->n_readonly_paths; i++)
        if (readonly_path(rootfd, lx->readonly_paths[i], opts->tiered, err) < 0)
            return -1;
    for (size_t i = 0; lx && i < lx->n_masked_paths; i++)
        if (mask_path(rootfd, lx->masked_paths[i], label, opts->tiered, err) < 0)
            return -1;

    if (spec->root_readonly && remount_bind("/", MS_RDONLY, 0, true) < 0)
        return ac_error(err, errno, "remount `/` read-only");
    for (size_t i = 0; i < spec->n_mounts; i++) {
        cleanup_mount_opts struct mount_opts mo;
        if (mount_opts_parse(spec->mounts[i].options, spec->mounts[i].n_options, &mo, NULL) == 0 &&
            is_readonly_dev(&spec->mounts[i], &mo) && remount_bind("/dev", MS_RDONLY, 0, true) < 0)
            return ac_error(err, errno, "mounts[%zu]: remount `/dev` read-only", i);
    }

    const char *prop = lx ? lx->rootfs_propagation : NULL;
    unsigned long pflags = mount_propagation_flags(prop);
    if (pflags && mount(NULL, "/", NULL, pflags | MS_REC, NULL) < 0)
        return ac_error(err, errno, "set rootfsPropagation `%s` on `/`", prop);
    return 0;
}
