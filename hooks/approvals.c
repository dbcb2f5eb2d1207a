/* Approval grants and requests (approvals.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "hooks/approvals.h"
#include "hooks/audit.h"
#include "hooks/egress_parse.h"
#include "hooks/hook_state.h"
#include "hooks/sha256.h"

void approval_digest(const char *text, size_t len, char out[APPROVAL_DIGEST_LEN + 1])
{
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(text, len, hex);
    snprintf(out, APPROVAL_DIGEST_LEN + 1, "sha256:%s", hex);
}

static bool valid_digest(const char *d)
{
    if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != APPROVAL_DIGEST_LEN)
        return false;
    for (const char *p = d + 7; *p; p++)
        if (!strchr("0123456789abcdef", *p))
            return false;
    return true;
}

/* Only the operator writes here: a directory or file another user could
 * have written (or one reached through a symlink) holds no approval. */
static bool trusted(const struct stat *st, bool dir)
{
    return (dir ? S_ISDIR(st->st_mode) : S_ISREG(st->st_mode)) && st->st_uid == geteuid() && !(st->st_mode & 022);
}

/* The directory, made 0700 when missing; an fd, or -1 with *err. */
static int open_dir(const char *dir, bool create, ac_error_t *err)
{
    if (create && mkdir_p(dir, 0700, err) < 0)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "open `%s`", dir);
    struct stat st;
    if (fstat(fd, &st) < 0 || !trusted(&st, true)) {
        close(fd);
        return ac_error(err, 0, "`%s`: not a directory of the runtime's user that only it may write", dir);
    }
    return fd;
}

/* Write DIRFD/FILE atomically: a temporary name, then rename. */
static int write_atomically(int dfd, const char *dir, const char *file, const char *text, ac_error_t *err)
{
    cleanup_free char *tmp = xasprintf(".%s.tmp%d", file, getpid());
    cleanup_close int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ac_error(err, errno, "create `%s/%s`", dir, tmp);
    if (write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 || renameat(dfd, tmp, dfd, file) < 0) {
        int e = errno;
        unlinkat(dfd, tmp, 0);
        return ac_error(err, e, "write `%s/%s`", dir, file);
    }
    return 0;
}

int approval_grant(const char *dir, const char *name, const char *digest, int64_t expires, ac_error_t *err)
{
    if (!hook_valid_name(name))
        return ac_error(err, 0, "approve: invalid name `%s`", name);
    if (!valid_digest(digest))
        return ac_error(err, 0, "approve: --digest: expected sha256:HEX (64 hex digits), got `%s`", digest);
    cleanup_close int dfd = open_dir(dir, true, err);
    if (dfd < 0)
        return -1;
    cleanup_free char *file = xasprintf("%s.grant", name);
    cleanup_free char *text = xasprintf("digest=%s\nexpires=%lld\n", digest, (long long)expires);
    return write_atomically(dfd, dir, file, text, err);
}

/* "digest=...\nexpires=...\n": 0, or -1 when malformed. */
static int parse_grant(char *text, char **digest, long long *expires)
{
    *digest = NULL;
    *expires = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *end;
        if (strncmp(line, "digest=", 7) == 0 && valid_digest(line + 7))
            *digest = line + 7;
        else if (strncmp(line, "expires=", 8) == 0 && (*expires = strtoll(line + 8, &end, 10)) > 0 && *end == '\0')
            continue;
        else
            return -1;
    }
    return *digest && *expires > 0 ? 0 : -1;
}

int approval_check(const char *dir, const char *name, const char *digest, time_t now, char **reason,
                   ac_error_t *err)
{
    *reason = NULL;
    if (!hook_valid_name(name)) {
        *reason = xasprintf("invalid request name `%s`: no approval", name);
        return 0;
    }
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT) {
        *reason = xstrdup("no approval");
        return 0;
    }
    if (dfd < 0)
        return ac_error(err, errno, "open `%s`", dir);
    struct stat st;
    if (fstat(dfd, &st) < 0 || !trusted(&st, true)) {
        *reason = xasprintf("untrusted approvals directory `%s` (others may write it)", dir);
        return 0;
    }
    cleanup_free char *file = xasprintf("%s.grant", name);
    cleanup_close int fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ELOOP)) {
        *reason = xstrdup("no approval");
        return 0;
    }
    if (fd < 0)
        return ac_error(err, errno, "open `%s/%s`", dir, file);
    if (fstat(fd, &st) < 0 || !trusted(&st, false)) {
        *reason = xstrdup("untrusted grant file (not a regular file of ours, mode 0600)");
        return 0;
    }
    cleanup_free char *text = NULL;
    size_t len;
    if (read_all_fd(fd, &text, &len, err) < 0)
        return -1;
    char *granted;
    long long expires;
    if (parse_grant(text, &granted, &expires) < 0) {
        *reason = xstrdup("malformed grant (expected digest=sha256:HEX and expires=UNIXTIME)");
        return 0;
    }
    if (expires <= (long long)now) {
        char when[64];
        time_t t = (time_t)expires;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        *reason = xasprintf("approval expired at %s", when);
        return 0;
    }
    if (strcmp(granted, digest) != 0) {
        *reason = xasprintf("approved for another config (%.19s...), this one is %.19s...", granted, digest);
        return 0;
    }
    return 1;
}

int approval_use(const char *dir, const char *name, char **reason, ac_error_t *err)
{
    *reason = NULL;
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return ac_error(err, errno, "open `%s`", dir);
    cleanup_free char *file = xasprintf("%s.grant", name);
    /* of several creates racing for one grant, only the one whose unlink
     * removes it goes through */
    if (unlinkat(dfd, file, 0) < 0) {
        if (errno == ENOENT) {
            *reason = xstrdup("approval already used");
            return 0;
        }
        return ac_error(err, errno, "use up `%s/%s`", dir, file);
    }
    cleanup_free char *request = xasprintf("%s.request", name);
    unlinkat(dfd, request, 0);
    return 1;
}

int approval_request(const char *dir, const char *name, const char *id, const char *digest, int tier,
                     const char *egress, ac_error_t *err)
{
    if (!hook_valid_name(name))
        return ac_error(err, 0, "approval request: invalid name `%s`", name);
    cleanup_close int dfd = open_dir(dir, true, err);
    if (dfd < 0)
        return -1;
    cleanup_free char *jname = audit_json_string(name), *jid = audit_json_string(id),
                      *jegress = audit_json_string(egress ? egress : "");
    cleanup_free char *text = xasprintf("{\"name\":%s,\"id\":%s,\"digest\":\"%s\",\"tier\":%d,\"egress\":%s,"
                                        "\"created\":%lld}\n",
                                        jname, jid, digest, tier, jegress, (long long)time(NULL));
    cleanup_free char *file = xasprintf("%s.request", name);
    return write_atomically(dfd, dir, file, text, err);
}

/* The request file NAME (already NAME.request) as a tree, or NULL. */
static yajl_val read_request(int dfd, const char *file)
{
    cleanup_close int fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !trusted(&st, false))
        return NULL;
    cleanup_free char *text = NULL;
    size_t len;
    ac_error_t e = NULL;
    if (read_all_fd(fd, &text, &len, &e) < 0) {
        ac_error_free(&e);
        return NULL;
    }
    return yajl_tree_parse(text, NULL, 0);
}

int approval_request_digest(const char *dir, const char *name, char out[APPROVAL_DIGEST_LEN + 1], ac_error_t *err)
{
    if (!hook_valid_name(name))
        return ac_error(err, 0, "approve: invalid name `%s`", name);
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_free char *file = xasprintf("%s.request", name);
    yajl_val req = dfd < 0 ? NULL : read_request(dfd, file);
    const char *path[] = {"digest", NULL};
    yajl_val d = req ? yajl_tree_get(req, path, yajl_t_string) : NULL;
    int ret = 0;
    if (d == NULL || !valid_digest(d->u.string))
        ret = ac_error(err, 0,
                       "approve: no pending request `%s` in %s (a refused create leaves one; or give --digest or "
                       "--bundle)",
                       name, dir);
    else
        snprintf(out, APPROVAL_DIGEST_LEN + 1, "%s", d->u.string);
    if (req)
        yajl_tree_free(req);
    return ret;
}

int approval_list_requests(const char *dir, FILE *f, ac_error_t *err)
{
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : ac_error(err, errno, "open `%s`", dir);
    DIR *d = fdopendir(dup(dfd));
    if (d == NULL)
        return ac_error(err, errno, "read `%s`", dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n < 9 || strcmp(e->d_name + n - 8, ".request") != 0)
            continue;
        yajl_val req = read_request(dfd, e->d_name);
        if (req == NULL)
            continue;
        const char *pn[] = {"name", NULL}, *pd[] = {"digest", NULL}, *pe[] = {"egress", NULL};
        yajl_val vn = yajl_tree_get(req, pn, yajl_t_string), vd = yajl_tree_get(req, pd, yajl_t_string),
                 ve = yajl_tree_get(req, pe, yajl_t_string);
        if (vn && vd)
            fprintf(f, "%s\t%s\tegress=%s\n", vn->u.string, vd->u.string, ve ? ve->u.string : "");
        yajl_tree_free(req);
    }
    closedir(d);
    return 0;
}

/* ---------------------------------------------------------------- held egress requests */

char *approval_egress_dir(const char *dir) { return xasprintf("%s/egress", dir); }

int approval_egress_hold(const char *dir, const char *id, unsigned ask, const char *method, const char *host, int port,
                         ac_error_t *err)
{
    cleanup_free char *edir = approval_egress_dir(dir);
    cleanup_close int dfd = open_dir(edir, true, err);
    if (dfd < 0)
        return -1;
    cleanup_free char *file = xasprintf("%s.%u.pending", id, ask);
    cleanup_free char *text = xasprintf("method=%s\nhost=%s\nport=%d\nsince=%lld\npid=%d\n", method, host, port,
                                        (long long)time(NULL), (int)getpid());
    return write_atomically(dfd, edir, file, text, err);
}

void approval_egress_release(const char *dir, const char *id, unsigned ask)
{
    cleanup_free char *path = xasprintf("%s/egress/%s.%u.pending", dir, id, ask);
    unlink(path);
}

int approval_egress_answer(const char *dir, const char *id, const struct egress_answer *a, ac_error_t *err)
{
    if (!hook_valid_name(id))
        return ac_error(err, 0, "invalid container id `%s`", id);
    cleanup_free char *edir = approval_egress_dir(dir);
    cleanup_close int dfd = open_dir(edir, true, err);
    if (dfd < 0)
        return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cleanup_free char *file = xasprintf("%s.%lld%09ld.answer", id, (long long)ts.tv_sec, ts.tv_nsec);
    cleanup_free char *text = xasprintf("decision=%s\nhost=%s\nport=%d\nuntil=%lld\n", a->allow ? "allow" : "deny",
                                        a->host, a->port, (long long)a->until);
    return write_atomically(dfd, edir, file, text, err);
}

/* "key=value" lines into the given keys' values (pointers into text); every
 * line must be one of them, each once. false when not. */
static bool parse_lines(char *text, const char *const *keys, char **values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        size_t i = 0;
        while (eq && i < n && (strlen(keys[i]) != (size_t)(eq - line) || strncmp(line, keys[i], (size_t)(eq - line))))
            i++;
        if (!eq || i == n || values[i])
            return false;
        values[i] = eq + 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!values[i])
            return false;
    return true;
}

static bool parse_int64(const char *s, int64_t max, int64_t *out)
{
    uint64_t v;
    if (parse_uint64(s, &v) < 0 || v > (uint64_t)max)
        return false;
    *out = (int64_t)v;
    return true;
}

/* The text of a trusted regular file dfd/name (ours, not group or world
 * writable, not through a symlink), or NULL. */
static char *read_trusted(int dfd, const char *name)
{
    cleanup_close int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !trusted(&st, false) || st.st_size > 4096)
        return NULL;
    char *text = NULL;
    size_t len;
    ac_error_t e = NULL;
    if (read_all_fd(fd, &text, &len, &e) < 0) {
        ac_error_free(&e);
        return NULL;
    }
    return text;
}

/* A host as egress_parse_host_port takes it, into out. */
static bool copy_host(const char *s, char *out, size_t cap)
{
    char *h = NULL;
    int port;
    const char *why;
    if (egress_parse_host_port(s, 0, &h, &port, &why) < 0 || port != 0 || strlen(h) >= cap) {
        free(h);
        return false;
    }
    snprintf(out, cap, "%s", h);
    free(h);
    return true;
}

int approval_egress_take_answer(const char *dir, const char *id, struct egress_answer *a)
{
    cleanup_free char *edir = approval_egress_dir(dir);
    cleanup_close int dfd = open(edir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    DIR *d = fdopendir(dup(dfd));
    if (d == NULL)
        return 0;
    size_t idl = strlen(id);
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n <= idl + 8 || strncmp(e->d_name, id, idl) != 0 || e->d_name[idl] != '.' ||
            strcmp(e->d_name + n - 7, ".answer") != 0)
            continue;
        cleanup_free char *text = read_trusted(dfd, e->d_name);
        unlinkat(dfd, e->d_name, 0); /* taken, whatever it holds */
        static const char *const keys[] = {"decision", "host", "port", "until"};
        char *v[4];
        int64_t port, until;
        if (!text || !parse_lines(text, keys, v, 4) || (strcmp(v[0], "allow") && strcmp(v[0], "deny")) ||
            !copy_host(v[1], a->host, sizeof(a->host)) || !parse_int64(v[2], 65535, &port) ||
            !parse_int64(v[3], INT64_MAX, &until))
            continue;
        a->allow = strcmp(v[0], "allow") == 0;
        a->port = (int)port;
        a->until = until;
        found = 1;
    }
    closedir(d);
    return found;
}

static int held_since(const void *a, const void *b)
{
    const struct egress_held *x = a, *y = b;
    return x->since < y->since ? -1 : x->since > y->since ? 1 : (int)x->ask - (int)y->ask;
}

int approval_egress_list(const char *dir, const char *id, struct egress_held **out, size_t *n, ac_error_t *err)
{
    *out = NULL;
    *n = 0;
    cleanup_free char *edir = approval_egress_dir(dir);
    cleanup_close int dfd = open(edir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : ac_error(err, errno, "open `%s`", edir);
    DIR *d = fdopendir(dup(dfd));
    if (d == NULL)
        return ac_error(err, errno, "read `%s`", edir);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        char *dot = strchr(e->d_name, '.');
        if (e->d_name[0] == '.' || len < 10 || strcmp(e->d_name + len - 8, ".pending") != 0 || !dot)
            continue;
        struct egress_held h = {0};
        char *end;
        size_t cl = (size_t)(dot - e->d_name);
        if (cl >= sizeof(h.container))
            continue;
        memcpy(h.container, e->d_name, cl);
        unsigned long ask = strtoul(dot + 1, &end, 10);
        if (strcmp(end, ".pending") != 0 || !hook_valid_name(h.container) || (id && strcmp(id, h.container) != 0))
            continue;
        h.ask = (unsigned)ask;
        cleanup_free char *text = read_trusted(dfd, e->d_name);
        static const char *const keys[] = {"method", "host", "port", "since", "pid"};
        char *v[5];
        int64_t port, pid;
        if (!text || !parse_lines(text, keys, v, 5) || strlen(v[0]) >= sizeof(h.method) ||
            !copy_host(v[1], h.host, sizeof(h.host)) || !parse_int64(v[2], 65535, &port) ||
            !parse_int64(v[3], INT64_MAX, &h.since) || !parse_int64(v[4], INT32_MAX, &pid))
            continue;
        snprintf(h.method, sizeof(h.method), "%s", v[0]);
        h.port = (int)port;
        h.pid = (int)pid;
        /* a proxy killed before it could remove its file holds nothing */
        if (kill(h.pid, 0) < 0 && errno == ESRCH)
            continue;
        *out = xrealloc(*out, (*n + 1) * sizeof(**out));
        (*out)[(*n)++] = h;
    }
    closedir(d);
    qsort(*out, *n, sizeof(**out), held_since);
    return 0;
}
