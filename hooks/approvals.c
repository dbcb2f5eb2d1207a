/* Approval grants (approvals.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/utils.h"
#include "approvals.h"
#include "hook_state.h"

int approval_grant(const char *dir, const char *name, int64_t expires, ac_error_t *err)
{
    if (!hook_valid_name(name))
        return ac_error(err, 0, "approve: invalid id `%s`", name);
    if (mkdir_p(dir, 0700, err) < 0)
        return -1;
    cleanup_free char *path = xasprintf("%s/%s", dir, name);
    cleanup_free char *tmp = xasprintf("%s/.%s.tmp%d", dir, name, getpid());
    cleanup_free char *text = xasprintf("expires=%lld\n", (long long)expires);
    cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ac_error(err, errno, "create `%s`", tmp);
    if (write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
        int e = errno;
        unlink(tmp);
        return ac_error(err, e, "write `%s`", tmp);
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return ac_error(err, e, "rename `%s` to `%s`", tmp, path);
    }
    return 0;
}

int approval_check(const char *dir, const char *name, time_t now, int64_t *expires, char **reason,
                   ac_error_t *err)
{
    *expires = 0;
    *reason = NULL;
    if (!hook_valid_name(name)) {
        *reason = xasprintf("invalid request id `%s`: no approval", name);
        return 0;
    }
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT) {
        *reason = xstrdup("no approval");
        return 0;
    }
    if (dfd < 0)
        return ac_error(err, errno, "open `%s`", dir);
    cleanup_close int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ELOOP)) {
        *reason = xstrdup("no approval");
        return 0;
    }
    if (fd < 0)
        return ac_error(err, errno, "open `%s/%s`", dir, name);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return ac_error(err, errno, "stat `%s/%s`", dir, name);
    /* only the operator may grant: a file others could have written is none */
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
        *reason = xstrdup("untrusted grant file (not a regular file of ours, mode 0600)");
        return 0;
    }
    cleanup_free char *text = NULL;
    size_t len;
    if (read_all_fd(fd, &text, &len, err) < 0)
        return -1;
    long long exp;
    char *end;
    if (strncmp(text, "expires=", 8) != 0 || (exp = strtoll(text + 8, &end, 10)) <= 0 ||
        (*end && *end != '\n')) {
        *reason = xstrdup("malformed grant (expected expires=UNIXTIME)");
        return 0;
    }
    *expires = exp;
    if (exp <= (long long)now) {
        char when[64];
        time_t t = (time_t)exp;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        *reason = xasprintf("approval expired at %s", when);
        return 0;
    }
    return 1;
}
