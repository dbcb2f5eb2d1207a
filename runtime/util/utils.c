/* Small helpers shared by every part of the runtime: whole files, small
 * writes, mkdir -p, number parsing. They report through error.c; the
 * allocation helpers they use are in alloc.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int mkdir_p(const char *path, mode_t mode, ac_error_t *err)
{
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

unsigned long long process_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* comm may hold spaces and parens: fields start after the last ')' */
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    p += 2; /* field 3: state */
    if (*p == 'Z' || *p == 'X')
        return 0; /* a zombie is as good as gone */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

bool list_has(const char *list, char sep, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}
