/* Writable host folders of a tiered container, with a disk cap.
 *
 * A bind mount the tier makes writable (io.agentcage.capped-binds) is not
 * written directly: the container gets an overlay whose lower layer is the
 * host folder (idmapped, so its owner is the container's root) and whose
 * upper layer is a tmpfs of the tier's workspace size
 * (io.agentcage.bind-cap). Writing more than that fails with ENOSPC inside
 * and the host's disk never sees it; the pages count against the
 * container's memory limit. At delete the changes are copied back into the
 * host folder (new files get the folder owner's ids, replaced ones keep
 * theirs, deleted ones go), or, for a container its watchdog killed or
 * with --bind-changes review, kept for review in the audit trail's
 * neighbourhood (/var/lib/agentcage/changes/ID.TIME). Copying back never
 * follows a symlink in the host folder: every step is an *at() call on a
 * directory fd opened without following one.
 *
 * The mounts live in the runtime's mount namespace under the container's
 * state directory (ov-N/{lower,upper,work,merged}) until delete; the
 * container's bind mount is of ov-N/merged. Its record: STATE/overlays,
 * one line per folder "N UID GID SOURCE". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "hooks/audit.h"
#include "runtime/container/container.h"
#include "runtime/linux/userns.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h" /* the tiers' rcFiles: execution points */

#define CHANGES_DIR "/var/lib/agentcage/changes"
#define MAX_DEPTH 128

static bool str_in_list(const char *list, const char *item) { return list_has(list, ':', item); }

static int mount_at(const char *what, const char *target, const char *type, const char *data, ac_error_t *err)
{
    if (mount(what, target, type, 0, data) < 0)
        return ac_error(err, errno, "capped bind: mount %s on `%s`", type, target);
    return 0;
}

/* The lower layer: a view of the source folder (srcfd, opened without
 * following a symlink) at target, idmapped so its owner is the container's
 * root when the mount has mappings. */
static int lower_layer(const struct oci_mount *m, int srcfd, const char *target, ac_error_t *err)
{
    cleanup_close int tree = (int)syscall(SYS_open_tree, srcfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0)
        return ac_error(err, errno, "capped bind: open_tree `%s`", m->source);
    if (m->n_uid_mappings) {
        cleanup_close int userns =
            userns_make(m->uid_mappings, m->n_uid_mappings, m->gid_mappings, m->n_gid_mappings, false, err);
        if (userns < 0)
            return -1;
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
            return ac_error(err, errno, "capped bind: `%s` cannot be idmapped (its filesystem)", m->source);
    }
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return ac_error(err, errno, "capped bind: attach `%s`", target);
    return 0;
}

int bind_overlays_prepare(const char *state_dir, struct oci_spec *spec, mode_t base_mode, ac_error_t *err)
{
    const char *capped = spec_annotation(spec, "io.agentcage.capped-binds");
    const char *cap = spec_annotation(spec, "io.agentcage.bind-cap");
    if (capped == NULL || cap == NULL)
        return 0;
    cleanup_free char *record_path = xasprintf("%s/overlays", state_dir);
    cleanup_file FILE *record = fopen(record_path, "wex");
    if (record == NULL)
        return ac_error(err, errno, "write `%s`", record_path);
    for (size_t i = 0; i < spec->n_mounts; i++) {
        struct oci_mount *m = &spec->mounts[i];
        struct stat st;
        if (m->destination == NULL || !str_in_list(capped, m->destination) || m->source == NULL)
            continue;
        /* as every tiered bind source: no symlink on the way (a shared
         * folder's project -> ../secret must not redirect the mount) */
        struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
        cleanup_close int srcfd = (int)syscall(SYS_openat2, AT_FDCWD, m->source, &how, sizeof(how));
        if (srcfd < 0 && errno == ELOOP)
            return ac_error(err, 0,
                            "mounts[%zu].source `%s`: a tiered container's bind source must not go through a symlink "
                            "(give the real path)",
                            i, m->source);
        if (srcfd < 0)
            return ac_error(err, errno, "mounts[%zu].source `%s`", i, m->source);
        if (fstat(srcfd, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        cleanup_free char *base = xasprintf("%s/ov-%zu", state_dir, i);
        cleanup_free char *data = xasprintf("size=%s,mode=0%o", cap, (unsigned)base_mode);
        if (mkdir(base, 0700) < 0 || mount_at("tmpfs", base, "tmpfs", data, err) < 0)
            return ac_error(err, errno, "capped bind: `%s`", base);
        /* recorded as soon as there is something to take down */
        fprintf(record, "%zu %u %u %s\n", i, (unsigned)st.st_uid, (unsigned)st.st_gid, m->source);
        fflush(record);
        static const char *const dirs[] = {"lower", "upper", "work", "merged"};
        for (size_t k = 0; k < 4; k++) {
            cleanup_free char *d = xasprintf("%s/%s", base, dirs[k]);
            if (mkdir(d, 0755) < 0)
                return ac_error(err, errno, "capped bind: mkdir `%s`", d);
        }
        cleanup_free char *lower = xasprintf("%s/lower", base);
        cleanup_free char *merged = xasprintf("%s/merged", base);
        /* the merged folder's own owner and mode are the upper one's: as
         * the container sees the host folder (its owner is the container's
         * root through the idmap) */
        cleanup_free char *upper = xasprintf("%s/upper", base);
        uid_t ou = m->n_uid_mappings ? m->uid_mappings[0].host_id : st.st_uid;
        gid_t og = m->n_gid_mappings ? m->gid_mappings[0].host_id : st.st_gid;
        if (chown(upper, ou, og) < 0 || chmod(upper, st.st_mode & 07777) < 0)
            return ac_error(err, errno, "capped bind: `%s`", upper);
        if (lower_layer(m, srcfd, lower, err) < 0)
            return -1;
        cleanup_free char *ov = xasprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work,redirect_dir=off,"
                                          "index=off,metacopy=off",
                                          lower, base, base);
        if (mount_at("overlay", merged, "overlay", ov, err) < 0)
            return -1;
        /* the container binds the overlay; its lower is idmapped already */
        m->source = spec_strdup(spec, merged);
        m->n_uid_mappings = m->n_gid_mappings = 0;
        size_t k = 0;
        for (size_t j = 0; j < m->n_options; j++)
            if (strcmp(m->options[j], "idmap") != 0 && strcmp(m->options[j], "ridmap") != 0)
                m->options[k++] = m->options[j];
        m->n_options = k;
    }
    return 0;
}

/* ---- copying the upper layer back ---------------------------------- */

static int open_dir_at(int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Remove name under dfd, a whole tree if it is a folder, never following
 * a symlink. */
static void remove_at(int dfd, const char *name, int depth)
{
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT || depth > MAX_DEPTH)
        return;
    int sub = open_dir_at(dfd, name);
    if (sub < 0)
        return;
    DIR *d = fdopendir(sub);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            remove_at(dirfd(d), de->d_name, depth + 1);
    if (d)
        closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

static bool is_whiteout(const struct stat *st) { return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0); }

static bool is_opaque(int dfd, const char *name)
{
    cleanup_close int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char v[4] = "";
    return fd >= 0 && fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v) - 1) > 0 && v[0] == 'y';
}

struct copy_ctx {
    uid_t uid;   /* the host folder's owner: what a new file gets */
    gid_t gid;
    bool review; /* into a fresh folder: whiteouts become a list */
    FILE *deleted;
    unsigned files, removed, skipped;
    /* copying back: execution points (tiers.json rcFiles) are not written
     * into the host folder but held in held_dir (made on the first) */
    const struct tier_strv *hold;
    const char *held_dir;
    unsigned held;
};

/* copy_file_range where the kernel does it between these filesystems (not
 * from a tmpfs to ext4 here), else read and write */
static int copy_data(int in, int out)
{
    bool plain = false;
    char buf[65536];
    for (;;) {
        ssize_t n;
        if (!plain) {
            n = copy_file_range(in, NULL, out, NULL, 1 << 20, 0);
            if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
                plain = true;
                continue;
            }
        } else {
            n = read(in, buf, sizeof(buf));
            if (n > 0 && write_all(out, buf, (size_t)n) < 0)
                return -1;
        }
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static int copy_file_at(struct copy_ctx *x, int from_dir, int to_dir, const char *name, const struct stat *st)
{
    cleanup_close int in = openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return -1;
    struct stat old;
    bool replacing = fstatat(to_dir, name, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
    cleanup_free char *tmp = xasprintf(".%s.agentcage-%d", name, getpid());
    cleanup_close int out = openat(to_dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return -1;
    if (copy_data(in, out) < 0) {
        unlinkat(to_dir, tmp, 0);
        return -1;
    }
    fchown(out, replacing ? old.st_uid : x->uid, replacing ? old.st_gid : x->gid);
    fchmod(out, st->st_mode & 07777 & ~06000); /* never a set-id bit from the cage */
    struct timespec times[2] = {st->st_atim, st->st_mtim};
    futimens(out, times);
    if (renameat(to_dir, tmp, to_dir, name) < 0) {
        if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) {
            remove_at(to_dir, name, 0);
            if (renameat(to_dir, tmp, to_dir, name) == 0)
                return 0;
        }
        unlinkat(to_dir, tmp, 0);
        return -1;
    }
    x->files++;
    return 0;
}

static void copy_tree(struct copy_ctx *x, int from_dir, int to_dir, const char *rel, int depth);

/* Is rel (no leading slash) one of the execution points the next shell,
 * git or editor runs from the folder (.envrc, .git/hooks, .vscode ...)? */
static bool is_execution_point(const struct tier_strv *hold, const char *rel)
{
    return hold && tier_strv_has(hold, rel);
}

/* An execution point the container made or changed in a writable folder:
 * into the held folder (same relative path) for review, never into the
 * host folder, where the user's next command would run it. Those that
 * existed were read-only inside, so this is what it created. */
static void hold_entry(struct copy_ctx *x, int from_dir, const char *name, const char *path, const struct stat *st)
{
    cleanup_free char *parent = xasprintf("%s%.*s", x->held_dir, (int)(strrchr(path, '/') - path), path);
    ac_error_t e = NULL;
    if (mkdir_p(parent, 0700, &e) < 0) {
        ac_error_free(&e);
        x->skipped++;
        return;
    }
    cleanup_close int to = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct copy_ctx h = {.uid = x->uid, .gid = x->gid, .review = true};
    if (to < 0) {
        x->skipped++;
        return;
    }
    if (S_ISDIR(st->st_mode)) {
        mkdirat(to, name, 0700);
        cleanup_close int sub_from = open_dir_at(from_dir, name);
        cleanup_close int sub_to = open_dir_at(to, name);
        if (sub_from >= 0 && sub_to >= 0)
            copy_tree(&h, sub_from, sub_to, path, 1);
    } else if (S_ISREG(st->st_mode)) {
        copy_file_at(&h, from_dir, to, name, st);
    }
    x->held++;
}

static void copy_tree(struct copy_ctx *x, int from_dir, int to_dir, const char *rel, int depth)
{
    if (depth > MAX_DEPTH)
        return;
    DIR *d = fdopendir(dup(from_dir));
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(from_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        cleanup_free char *path = xasprintf("%s/%s", rel, name);
        if (!x->review && is_execution_point(x->hold, path + 1)) {
            if (!is_whiteout(&st))
                hold_entry(x, from_dir, name, path, &st);
            continue;
        }
        if (is_whiteout(&st)) {
            if (x->review && x->deleted) /* a held execution point lists none */
                fprintf(x->deleted, "%s\n", path + 1);
            else
                remove_at(to_dir, name, 0);
            x->removed++;
        } else if (S_ISDIR(st.st_mode)) {
            if (!x->review && is_opaque(from_dir, name))
                remove_at(to_dir, name, 0); /* the folder was replaced inside */
            struct stat cur;
            if (fstatat(to_dir, name, &cur, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(cur.st_mode))
                remove_at(to_dir, name, 0);
            if (mkdirat(to_dir, name, st.st_mode & 0777) == 0)
                fchownat(to_dir, name, x->uid, x->gid, AT_SYMLINK_NOFOLLOW);
            cleanup_close int sub_from = open_dir_at(from_dir, name);
            cleanup_close int sub_to = open_dir_at(to_dir, name);
            if (sub_from >= 0 && sub_to >= 0)
                copy_tree(x, sub_from, sub_to, path, depth + 1);
            else
                x->skipped++;
        } else if (S_ISREG(st.st_mode)) {
            if (copy_file_at(x, from_dir, to_dir, name, &st) < 0)
                x->skipped++;
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlinkat(from_dir, name, target, sizeof(target) - 1);
            cleanup_free char *tmp = xasprintf(".%s.agentcage-%d", name, getpid());
            if (n < 0 || (target[n] = '\0', symlinkat(target, to_dir, tmp)) < 0) {
                x->skipped++;
                continue;
            }
            fchownat(to_dir, tmp, x->uid, x->gid, AT_SYMLINK_NOFOLLOW);
            if (renameat(to_dir, tmp, to_dir, name) < 0) {
                unlinkat(to_dir, tmp, 0);
                x->skipped++;
            } else {
                x->files++;
            }
        } else {
            x->skipped++; /* fifos, sockets, devices: nothing a project needs back */
        }
    }
    if (d)
        closedir(d);
}

/* The host folder as a directory fd, no symlink on the way. */
static int open_source(const char *path)
{
    struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

static void take_down(const char *base)
{
    static const char *const under[] = {"merged", "lower"};
    for (size_t k = 0; k < 2; k++) {
        cleanup_free char *p = xasprintf("%s/%s", base, under[k]);
        umount2(p, MNT_DETACH);
    }
    umount2(base, MNT_DETACH);
    rmdir(base);
}

void bind_overlays_finish(const struct global_opts *g, const char *state_dir, const char *id, bool apply,
                          bool review)
{
    cleanup_free char *record_path = xasprintf("%s/overlays", state_dir);
    cleanup_file FILE *record = fopen(record_path, "re");
    if (record == NULL)
        return;
    char line[8192];
    while (fgets(line, sizeof(line), record)) {
        unsigned idx, uid, gid;
        int off = 0;
        if (sscanf(line, "%u %u %u %n", &idx, &uid, &gid, &off) != 3 || off == 0)
            continue;
        char *source = line + off;
        source[strcspn(source, "\n")] = '\0';
        cleanup_free char *base = xasprintf("%s/ov-%u", state_dir, idx);
        cleanup_free char *upper = xasprintf("%s/upper", base);
        cleanup_close int from = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct copy_ctx x = {.uid = uid, .gid = gid, .review = review};
        cleanup_free char *kept = NULL, *held = NULL;
        if (from >= 0 && apply && !review) {
            const struct tier_defs *defs = NULL;
            ac_error_t e = NULL;
            if (tier_defs_get(&defs, &e) == 0)
                x.hold = &defs->rc_files;
            ac_error_free(&e);
            held = xasprintf("%s/%s.%lld.%u.held", CHANGES_DIR, id, (long long)time(NULL), idx);
            x.held_dir = held;
            cleanup_close int to = open_source(source);
            if (to >= 0)
                copy_tree(&x, from, to, "", 0);
        } else if (from >= 0 && apply) {
            kept = xasprintf("%s/%s.%lld.%u", CHANGES_DIR, id, (long long)time(NULL), idx);
            ac_error_t e = NULL;
            if (mkdir_p(kept, 0700, &e) == 0) {
                cleanup_close int to = open(kept, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                cleanup_free char *list = xasprintf("%s/.deleted", kept);
                x.deleted = fopen(list, "we");
                if (to >= 0 && x.deleted)
                    copy_tree(&x, from, to, "", 0);
                if (x.deleted)
                    fclose(x.deleted);
            }
            ac_error_free(&e);
        }
        if (apply) {
            cleanup_free char *jsrc = audit_json_string(source);
            cleanup_free char *jkept = kept ? audit_json_string(kept) : NULL;
            cleanup_free char *members =
                xasprintf("\"source\":%s,\"written\":%u,\"removed\":%u,\"skipped\":%u,\"%s\":%s", jsrc, x.files,
                          x.removed, x.skipped, kept ? "keptAt" : "copiedBack", kept ? jkept : "true");
            if (x.held) {
                cleanup_free char *jheld = audit_json_string(held);
                char *more = xasprintf("%s,\"held\":%u,\"heldAt\":%s", members, x.held, jheld);
                free(members);
                members = more;
                ac_warn("container `%s`: %u new execution point%s (.envrc, .git/hooks, .vscode ...) held for review in "
                        "%s, not written into %s",
                        id, x.held, x.held == 1 ? "" : "s", held, source);
            }
            container_audit(g, kept ? "bind-changes-kept" : "bind-changes-applied", id, members);
        }
        take_down(base);
    }
    unlink(record_path);
}
