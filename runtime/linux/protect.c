/* Writable project mounts of a tiered container: keep the protections on
 * their rc files, git hooks and credential folders from being undone.
 *
 * The tier mapping masks and makes read-only what exists under each writable
 * bind mount (~/.ssh, .bashrc, .git/hooks ...). Two tricks would get around
 * that, and both are closed here, by mounts, after pivot_root and before the
 * masks are applied (no container process exists yet):
 *  - renaming a parent away (mv .git .git.old; mkdir -p .git/hooks): every
 *    .git directory found near the top of the mount (depth <= 3) is bound
 *    onto itself, and a mount point cannot be renamed or removed (EBUSY);
 *    its hooks and config are made read-only, nested repositories included;
 *  - creating what did not exist (~/.profile, ~/.ssh/authorized_keys) in a
 *    home directory: for a home-like mount ("DEST=home"), each existing
 *    entry in it is bound onto itself and then the mount itself becomes
 *    read-only, so existing files and folders stay writable but no new name
 *    can appear at the top, and nothing at the top can be renamed away. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/protect.h"
#include "runtime/util/utils.h"

#define MAX_TOP_ENTRIES 1024 /* entries of a home-like mount we pin */
#define MAX_SCAN_DIRS 4096   /* directories visited looking for .git */
#define GIT_SCAN_DEPTH 3

static int self_bind(const char *path, ac_error_t *err)
{
    if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
        return ac_error(err, errno, "protect: bind `%s` onto itself", path);
    return 0;
}

/* A read-only bind of path onto itself (recursive), for hooks and config. */
static int readonly_bind(const char *path, ac_error_t *err)
{
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path,
                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
    if (tree < 0)
        return ac_error(err, errno, "protect: open_tree `%s`", path);
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
    int r = (int)syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr));
    if (r == 0)
        r = (int)syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH);
    int e = errno;
    close(tree);
    if (r < 0)
        return ac_error(err, e, "protect: make `%s` read-only", path);
    return 0;
}

/* The kind of path without following a symlink: 'd', 'f', or 0 (absent,
 * symlink, anything else). */
static char kind_of(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    return S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 0;
}

static int protect_git_dir(const char *git, bool pin, ac_error_t *err)
{
    if (pin && self_bind(git, err) < 0)
        return -1;
    static const char *const inner[] = {"hooks", "config"};
    for (size_t i = 0; i < 2; i++) {
        cleanup_free char *p = xasprintf("%s/%s", git, inner[i]);
        if (kind_of(p) && readonly_bind(p, err) < 0)
            return -1;
    }
    return 0;
}

/* Breadth-first, bounded: .git directories up to GIT_SCAN_DEPTH below root. */
static int scan_for_git(const char *root, bool top_pinned, ac_error_t *err)
{
    struct item { char *path; int depth; };
    size_t cap = 64, head = 0, tail = 0, visited = 0;
    struct item *queue = xcalloc(cap, sizeof(*queue));
    queue[tail++] = (struct item){xstrdup(root), 0};
    int ret = 0;
    while (head < tail && ret == 0) {
        struct item it = queue[head++];
        if (++visited > MAX_SCAN_DIRS) {
            free(it.path);
            continue;
        }
        DIR *d = opendir(it.path);
        struct dirent *de;
        while (d && ret == 0 && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            cleanup_free char *p = xasprintf("%s/%s", it.path, de->d_name);
            if (kind_of(p) != 'd')
                continue;
            if (strcmp(de->d_name, ".git") == 0) {
                /* a top-level .git of a home-like mount is pinned already */
                ret = protect_git_dir(p, !(top_pinned && it.depth == 0), err);
                continue;
            }
            if (it.depth + 1 >= GIT_SCAN_DEPTH)
                continue;
            if (tail == cap) {
                cap *= 2;
                queue = xrealloc(queue, cap * sizeof(*queue));
            }
            queue[tail++] = (struct item){ac_steal_ptr(&p), it.depth + 1};
        }
        if (d)
            closedir(d);
        free(it.path);
    }
    while (head < tail)
        free(queue[head++].path);
    free(queue);
    return ret;
}

static int protect_home(const char *root, ac_error_t *err)
{
    /* first each entry bound onto itself (a bind copies its source mount's
     * flags: done while the mount is still writable), then the mount itself
     * read-only: only this mount, not the ones just made on it */
    DIR *d = opendir(root);
    if (d == NULL)
        return ac_error(err, errno, "protect: open `%s`", root);
    size_t n = 0;
    struct dirent *de;
    int ret = 0;
    while (ret == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_free char *p = xasprintf("%s/%s", root, de->d_name);
        if (!kind_of(p))
            continue; /* symlinks and the like: the read-only parent keeps them as they are */
        if (++n > MAX_TOP_ENTRIES)
            ret = ac_error(err, 0, "protect: `%s` has more than %d entries; mount a smaller folder", root,
                           MAX_TOP_ENTRIES);
        else
            ret = self_bind(p, err);
    }
    closedir(d);
    if (ret < 0)
        return -1;
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, AT_FDCWD, root, AT_SYMLINK_NOFOLLOW, &attr, sizeof(attr)) < 0)
        return ac_error(err, errno, "protect: make `%s` read-only", root);
    return 0;
}

int protect_writable_roots(const char *roots, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(roots);
    char *save = NULL;
    for (char *entry = strtok_r(copy, ":", &save); entry; entry = strtok_r(NULL, ":", &save)) {
        char *mark = strchr(entry, '=');
        bool home = mark && strcmp(mark + 1, "home") == 0;
        if (mark)
            *mark = '\0';
        if (kind_of(entry) != 'd')
            continue;
        if (home && protect_home(entry, err) < 0)
            return -1;
        if (scan_for_git(entry, home, err) < 0)
            return -1;
    }
    return 0;
}

/* Hide one dot entry of a home: a folder under an empty tmpfs the
 * container may use as scratch (gone with it), a file under /dev/null. */
static int hide_entry(const char *path, char kind, ac_error_t *err)
{
    if (kind == 'd') {
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=16m") < 0)
            return ac_error(err, errno, "protect: hide `%s`", path);
        return 0;
    }
    if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0)
        return ac_error(err, errno, "protect: hide `%s`", path);
    return 0;
}

int hide_home_dot_entries(const char *roots, const char *allow, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(roots);
    char *save = NULL;
    for (char *root = strtok_r(copy, ":", &save); root; root = strtok_r(NULL, ":", &save)) {
        if (kind_of(root) != 'd')
            continue;
        DIR *d = opendir(root);
        if (d == NULL)
            return ac_error(err, errno, "protect: open `%s`", root);
        int ret = 0;
        size_t n = 0;
        for (struct dirent *de; ret == 0 && (de = readdir(d)) != NULL;) {
            if (de->d_name[0] != '.' || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                list_has(allow, ':', de->d_name))
                continue;
            cleanup_free char *p = xasprintf("%s/%s", root, de->d_name);
            char kind = kind_of(p);
            if (kind == 0)
                continue; /* a symlink: leads nowhere the container could not see anyway */
            if (++n > MAX_TOP_ENTRIES)
                ret = ac_error(err, 0, "protect: `%s` has more than %d dot entries; mount a smaller folder", root,
                               MAX_TOP_ENTRIES);
            else
                ret = hide_entry(p, kind, err);
        }
        closedir(d);
        if (ret < 0)
            return -1;
    }
    return 0;
}
