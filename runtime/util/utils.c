/* Small helpers shared by every part of the runtime: whole files, small
 * writes, mkdir -p, number parsing. They report through error.c; the
 * allocation helpers they use are in alloc.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/util/utils.h"

int read_all_fd(int fd, char **out, size_t *len, ac_error_t *err)
{
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            return ac_error(err, e, "read");
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int read_all_file(const char *path, char **out, size_t *len, ac_error_t *err)
{
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "open `%s`", path);
    if (read_all_fd(fd, out, len, err) < 0)
        return ac_error_wrap(err, "`%s`", path);
    return 0;
}

int write_file_at(int dirfd, const char *name, const char *data, size_t len, ac_error_t *err)
{
    cleanup_close int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "open `%s`", name);
    if (write_all(fd, data, len) < 0)
        return ac_error(err, errno, "write `%s`", name);
    return 0;
}

int write_file(const char *path, const char *data, size_t len, ac_error_t *err)
{
    return write_file_at(AT_FDCWD, path, data, len, err);
}

/* 1: swapped, 0: renamed, -1: neither */
static int swap_or_rename(const char *from, const char *to)
{
    /* RENAME_EXCHANGE (linux/fs.h) */
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 2) == 0)
        return 1;
    return rename(from, to);
}

int rename_over(const char *from, const char *to)
{
    int r = swap_or_rename(from, to);
    if (r == 1)
        unlink(from);
    return r < 0 ? -1 : 0;
}

int rename_exchange(const char *from, const char *to) { return swap_or_rename(from, to) < 0 ? -1 : 0; }

int mkdir_p(const char *path, mode_t mode, ac_error_t *err)
{
    /* the common case, the parents there already: one mkdir */
    if (mkdir(path, mode) == 0 || errno == EEXIST)
        return 0;
    cleanup_free char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            return ac_error(err, errno, "mkdir `%s`", p);
        *s = '/';
    }
    if (mkdir(p, mode) < 0 && errno != EEXIST)
        return ac_error(err, errno, "mkdir `%s`", p);
    return 0;
}

int parse_uint64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* The fields of /proc/PID/stat after comm (which may hold spaces and
 * parens), from field 3 (state) on, in buf; NULL when unreadable. */
static char *proc_stat_fields(pid_t pid, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

/* Field number `want` (3 = state) of the fields proc_stat_fields found. */
static const char *proc_stat_field(const char *p, int want)
{
    for (int field = 3; field < want && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p;
}

unsigned long long process_start_time(pid_t pid)
{
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof(buf));
    if (p == NULL || *p == 'Z' || *p == 'X')
        return 0; /* a zombie is as good as gone */
    p = proc_stat_field(p, 22);
    return p ? strtoull(p, NULL, 10) : 0;
}

pid_t process_parent(pid_t pid)
{
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof(buf));
    if (p == NULL || (p = proc_stat_field(p, 4)) == NULL)
        return -1;
    return (pid_t)strtol(p, NULL, 10);
}

int zombie_exit_status(pid_t pid, unsigned long long start_time)
{
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof(buf));
    if (p == NULL || *p != 'Z')
        return -1;
    const char *start = proc_stat_field(p, 22), *code = proc_stat_field(p, 52);
    if (start == NULL || code == NULL || strtoull(start, NULL, 10) != start_time)
        return -1;
    return (int)strtol(code, NULL, 10);
}

/* The mask after "NAME:" in a /proc status text, hex; false if missing. */
static bool status_mask(const char *text, const char *name, unsigned long long *mask)
{
    const char *p = strstr(text, name);
    if (p == NULL)
        return false;
    char *end;
    errno = 0;
    *mask = strtoull(p + strlen(name), &end, 16);
    return errno == 0 && end != p + strlen(name);
}

void signals_default_all(void)
{
    /* one read of the process's own masks, not a sigaction per signal:
     * 19 us against 70 us for all 64 on the bench host (issue 20) */
    char text[4096];
    unsigned long long ignored = 0, caught = 0;
    int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0) {
        text[n] = '\0';
        if (status_mask(text, "\nSigIgn:", &ignored) && status_mask(text, "\nSigCgt:", &caught)) {
            unsigned long long set = ignored | caught;
            for (int sig = 1; sig < NSIG && sig <= 64; sig++)
                if (set & (1ULL << (sig - 1)))
                    signal(sig, SIG_DFL);
            return;
        }
    }
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
}

static bool list_has_n(const char *list, char sep, const char *item, size_t n)
{
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

bool list_has(const char *list, char sep, const char *item)
{
    return list_has_n(list, sep, item, strlen(item));
}

bool list_has_all(const char *list, char sep, const char *items)
{
    for (const char *p = items; *p;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && !list_has_n(list, sep, p, len))
            return false;
        p += len + (end != NULL);
    }
    return true;
}

size_t path_below(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 0 || strncmp(path, dir, n) != 0 || (path[n] != '/' && path[n] != '\0' && !(n == 1 && dir[0] == '/')))
        return 0;
    return n;
}

int remove_dir(const char *dir, int depth, ac_error_t *err)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return ac_error(err, errno, "open `%s`", dir);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT)
            continue;
        int e = errno;
        cleanup_free char *sub = xasprintf("%s/%s", dir, de->d_name);
        /* busy: something of ours mounted on it (a pinned namespace, a
         * bind view), unmounted first */
        if (e == EBUSY && umount2(sub, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 && unlinkat(dirfd(d), de->d_name, 0) == 0)
            continue;
        if (e == EISDIR && depth > 0 && remove_dir(sub, depth - 1, err) == 0)
            continue;
        closedir(d);
        return e == EISDIR && depth > 0 ? -1 : ac_error(err, e, "remove `%s`", sub);
    }
    closedir(d);
    if (rmdir(dir) < 0 && errno != ENOENT)
        return ac_error(err, errno, "remove `%s`", dir);
    return 0;
}

int passwd_file_user(const char *name, uid_t uid, uid_t *uid_out, gid_t *gid_out, char **home)
{
    return passwd_file_user_in("/etc/passwd", name, uid, uid_out, gid_out, home);
}

int passwd_file_user_in(const char *path, const char *name, uid_t uid, uid_t *uid_out, gid_t *gid_out,
                        char **home)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    struct passwd pw, *found = NULL;
    size_t size = 4096;
    cleanup_free char *buf = xmalloc(size);
    int r;
    for (;;) {
        r = fgetpwent_r(f, &pw, buf, size, &found);
        /* a longer line: glibc puts the stream back at its start, read
         * again into a larger buffer */
        if (r == ERANGE && size < (1u << 20)) {
            size *= 2;
            free(buf);
            buf = xmalloc(size);
            continue;
        }
        if (r != 0 || (name ? strcmp(pw.pw_name, name) == 0 : pw.pw_uid == uid))
            break;
        found = NULL;
    }
    fclose(f);
    if (!found) {
        errno = r == ENOENT || r == 0 ? ENOENT : r;
        return -1;
    }
    if (uid_out)
        *uid_out = pw.pw_uid;
    if (gid_out)
        *gid_out = pw.pw_gid;
    if (home)
        *home = xstrdup(pw.pw_dir);
    return 0;
}
