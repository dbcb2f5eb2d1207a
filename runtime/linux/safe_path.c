/* Path resolution confined to a container-controlled root directory.
 *
 * The rootfs belongs to the image (and so to whoever built it): any path
 * component may be a symlink such as "etc -> ../../../../etc". Every lookup
 * therefore resolves as if rootfd were "/": with openat2(RESOLVE_IN_ROOT)
 * when the kernel has it (5.6+), otherwise with a component-by-component
 * walk that reads each symlink itself and never lets ".." climb above the
 * root. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/rootfs.h"
#include "runtime/util/utils.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define MAX_SYMLINKS 40

/* Set once openat2 answered ENOSYS (old kernel, or a seccomp filter). */
static bool openat2_missing;

/* Exposed (not in a header) so tests can exercise the fallback on kernels
 * that have openat2. Returns an fd, or -1 with errno set. */
int safe_openat_walk(int rootfd, const char *path, int flags, mode_t mode);

struct fd_stack {
    int *fds;
    size_t depth; /* fds[0] is the root, borrowed; the rest are owned */
    size_t cap;
};

static int fd_stack_top(struct fd_stack *s) { return s->fds[s->depth]; }

static void fd_stack_push(struct fd_stack *s, int fd)
{
    if (s->depth + 1 >= s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->fds = xrealloc(s->fds, s->cap * sizeof(int));
    }
    s->fds[++s->depth] = fd;
}

static void fd_stack_pop_to(struct fd_stack *s, size_t depth)
{
    while (s->depth > depth)
        close(s->fds[s->depth--]);
}

static void fd_stack_release(struct fd_stack *s)
{
    if (s->fds) {
        fd_stack_pop_to(s, 0);
        free(s->fds);
    }
}

/* Replace *todo with "link/rest" (rest may be empty). */
static void splice_link(char **todo, const char *link, const char *rest)
{
    char *n = *rest ? xasprintf("%s/%s", link, rest) : xstrdup(link);
    free(*todo);
    *todo = n;
}

int safe_openat_walk(int rootfd, const char *path, int flags, mode_t mode)
{
    __attribute__((cleanup(fd_stack_release))) struct fd_stack stack = { 0 };
    cleanup_free char *todo = xstrdup(path);
    int links = 0;

    stack.cap = 16;
    stack.fds = xmalloc(stack.cap * sizeof(int));
    stack.fds[0] = rootfd;

    size_t pos = 0;
    for (;;) {
        while (todo[pos] == '/')
            pos++;
        if (todo[pos] == '\0') /* the walk ended on a directory */
            return openat(fd_stack_top(&stack), ".", (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC, mode);

        char *comp = todo + pos;
        size_t clen = strcspn(comp, "/");
        char *rest = comp + clen;
        while (*rest == '/')
            rest++;
        bool last = *rest == '\0';
        comp[clen] = '\0';
        pos = (size_t)(rest - todo);

        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            if (stack.depth > 0)
                fd_stack_pop_to(&stack, stack.depth - 1);
            continue;
        }

        int dirfd = fd_stack_top(&stack);
        cleanup_close int fd = openat(dirfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            if (last && errno == ENOENT && (flags & O_CREAT))
                return openat(dirfd, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
            return -1;
        }
        struct stat st;
        if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0)
            return -1;

        if (S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW))) {
            if (++links > MAX_SYMLINKS) {
                errno = ELOOP;
                return -1;
            }
            char target[4096];
            ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
            if (n < 0)
                return -1;
            target[n] = '\0';
            if (target[0] == '/') /* absolute links are relative to the root */
                fd_stack_pop_to(&stack, 0);
            cleanup_free char *rest_copy = xstrdup(rest);
            splice_link(&todo, target, rest_copy);
            pos = 0;
            continue;
        }
        if (last) {
            if ((flags & O_PATH) && !(flags & O_DIRECTORY))
                return ac_steal_fd(&fd);
            /* Re-open for the caller's access mode; O_NOFOLLOW keeps a
             * symlink swapped in meanwhile from being followed. */
            return openat(dirfd, comp, (flags & ~(O_CREAT | O_EXCL)) | O_NOFOLLOW | O_CLOEXEC, mode);
        }
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        fd_stack_push(&stack, ac_steal_fd(&fd));
    }
}

/* openat2 inside the root, or the walk; fd or -1 with errno set. */
static int openat_in_root(int rootfd, const char *path, int flags, mode_t mode)
{
    if (*path == '\0')
        path = ".";
    if (!openat2_missing) {
        struct open_how how = {
            .flags = (uint64_t)(flags | O_CLOEXEC),
            .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        for (;;) {
            int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
            if (fd >= 0)
                return fd;
            /* EAGAIN: a concurrent rename anywhere made the kernel unsure
             * the walk stayed inside; retrying is what the man page says. */
            if (errno == EAGAIN)
                continue;
            if (errno != ENOSYS)
                return -1;
            openat2_missing = true;
            break;
        }
    }
    return safe_openat_walk(rootfd, path, flags, mode);
}

int safe_openat(int rootfd, const char *path, int flags, mode_t mode, ac_error_t *err)
{
    int fd = openat_in_root(rootfd, path, flags, mode);
    if (fd < 0) {
        int e = errno;
        ac_error(err, e, "open `%s` in the container rootfs", path);
        errno = e;
    }
    return fd;
}

/* The last component of path (trailing slashes dropped) in *base and the
 * rest in *parent ("" for a component of the root); false when there is
 * none (path is the root). */
static bool split_last(const char *path, char **parent, char **base)
{
    size_t len = strlen(path);
    while (len > 0 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (start == len)
        return false;
    *parent = xasprintf("%.*s", (int)start, path);
    *base = xasprintf("%.*s", (int)(len - start), path + start);
    return true;
}

int safe_mkdir_p_at(int rootfd, const char *path, mode_t mode, ac_error_t *err)
{
    /* the common case, all there already */
    int whole = openat_in_root(rootfd, path, O_PATH | O_DIRECTORY, 0);
    if (whole >= 0)
        return whole;
    int e = errno;
    cleanup_free char *parent = NULL, *base = NULL;
    if (e != ENOENT || !split_last(path, &parent, &base)) {
        ac_error(err, e, "open `%s` in the container rootfs", *path ? path : "/");
        errno = e;
        return -1;
    }
    /* The parent first, made the same way (so /dev/pts under an existing
     * /dev costs one open of /dev, not one for each prefix from the root),
     * then only the missing last component in the directory the parent
     * resolved to, and the whole path resolved from the root again, so a
     * symlink met on the way (even "../../etc") is followed as if rootfd
     * were "/". */
    cleanup_close int dir = safe_mkdir_p_at(rootfd, parent, mode, err);
    if (dir < 0)
        return -1;
    if (mkdirat(dir, base, mode) < 0 && errno != EEXIST) {
        e = errno;
        ac_error(err, e, "mkdir `%s` in the container rootfs", path);
        errno = e;
        return -1;
    }
    int fd = openat_in_root(rootfd, path, O_PATH | O_DIRECTORY, 0);
    if (fd < 0) {
        e = errno;
        ac_error(err, e, "open `%s` in the container rootfs", path);
        errno = e;
    }
    return fd;
}
