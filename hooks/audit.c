/* The audit trail's writer and verifier (see audit.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "hooks/audit.h"

static const char genesis_hash[] = "0000000000000000000000000000000000000000000000000000000000000000";

/* A string builder: enough for one audit line. */
struct buf {
    char *data;
    size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}
static void buf_str(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *s)
{
    size_t n;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4;
    else
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static void buf_json_string(struct buf *b, const char *s)
{
    char esc[8];
    buf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p;
            buf_add(b, esc, 2);
            p++;
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", *p);
            buf_str(b, esc);
            p++;
        } else {
            size_t n = utf8_seq_len(p);
            if (n == 0) {
                snprintf(esc, sizeof(esc), "\\u%04x", *p);
                buf_str(b, esc);
                p++;
            } else {
                buf_add(b, (const char *)p, n);
                p += n;
            }
        }
    }
    buf_add(b, "\"", 1);
}

char *audit_json_string(const char *s)
{
    struct buf b = {0};
    buf_json_string(&b, s ? s : "");
    return b.data;
}

char *audit_json_argv(char *const *argv)
{
    struct buf b = {0};
    buf_add(&b, "[", 1);
    for (size_t i = 0; argv && argv[i]; i++) {
        if (i)
            buf_add(&b, ",", 1);
        buf_json_string(&b, argv[i]);
    }
    buf_add(&b, "]", 1);
    return b.data;
}

static void utc_timestamp(char out[40])
{
    struct timespec ts;
    char day[UTC_DATE_TIME_LEN];
    clock_gettime(CLOCK_REALTIME, &ts);
    utc_date_time(ts.tv_sec, day);
    snprintf(out, 40, "%.19s.%03dZ", day, (int)(ts.tv_nsec / 1000000));
}

/* The last line of the open log (without its newline), or NULL for an empty
 * log. Read backwards in chunks: the log can be large, lines are small. */
static int read_last_line(int fd, char **out, ac_error_t *err)
{
    struct stat st;
    *out = NULL;
    if (fstat(fd, &st) < 0)
        return ac_error(err, errno, "audit log: fstat");
    off_t end = st.st_size;
    if (end == 0)
        return 0;
    char last;
    if (pread(fd, &last, 1, end - 1) != 1)
        return ac_error(err, errno, "audit log: read");
    if (last == '\n')
        end--; /* a torn last line (no newline) is hashed as it is */
    cleanup_free char *tail = NULL;
    size_t tail_len = 0;
    off_t pos = end;
    for (;;) {
        size_t chunk = pos > 4096 ? 4096 : (size_t)pos;
        if (chunk == 0)
            break;
        pos -= (off_t)chunk;
        char *grown = xmalloc(tail_len + chunk + 1);
        ssize_t n = pread(fd, grown, chunk, pos);
        if (n != (ssize_t)chunk) {
            free(grown);
            return ac_error(err, n < 0 ? errno : EIO, "audit log: read");
        }
        if (tail_len)
            memcpy(grown + chunk, tail, tail_len);
        free(tail);
        tail = grown;
        tail_len += chunk;
        tail[tail_len] = '\0';
        char *nl = memrchr(tail, '\n', chunk);
        if (nl) {
            *out = xstrdup(nl + 1);
            return 0;
        }
    }
    *out = ac_steal_ptr(&tail);
    return 0;
}

static unsigned long long line_seq(const char *line)
{
    const char *p = strstr(line, "\"seq\":");
    return p ? strtoull(p + 6, NULL, 10) : 0;
}

/* Create the log's directory 0700 when missing (an existing one is the
 * operator's choice and left alone). */
static int ensure_log_dir(const char *log_path, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(log_path);
    const char *dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) == 0)
        return 0;
    return mkdir_p(dir, 0700, err);
}

int audit_append(const char *log_path, const char *event, const char *id, const char *members, ac_error_t *err)
{
    if (!log_path)
        log_path = AUDIT_DEFAULT_LOG;
    if (ensure_log_dir(log_path, err) < 0)
        return ac_error_wrap(err, "audit log `%s`", log_path);
    cleanup_close int fd = open(log_path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return ac_error(err, errno, "open audit log `%s`", log_path);
    /* the lock goes with the fd: closing it (cleanup) releases it */
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR)
            return ac_error(err, errno, "lock audit log `%s`", log_path);

    cleanup_free char *last = NULL;
    if (read_last_line(fd, &last, err) < 0)
        return ac_error_wrap(err, "`%s`", log_path);
    char prev[SHA256_HEX_LEN + 1];
    if (last)
        sha256_hex(last, strlen(last), prev);
    else
        memcpy(prev, genesis_hash, sizeof(prev));
    char when[40], head[192];
    utc_timestamp(when);
    snprintf(head, sizeof(head), "{\"seq\":%llu,\"time\":\"%s\",\"prev\":\"%s\",\"event\":",
             last ? line_seq(last) + 1 : 1, when, prev);

    struct buf line = {0};
    buf_str(&line, head);
    buf_json_string(&line, event);
    if (id) {
        buf_str(&line, ",\"id\":");
        buf_json_string(&line, id);
    }
    if (members && *members) {
        buf_add(&line, ",", 1);
        buf_str(&line, members);
    }
    buf_str(&line, "}\n");
    cleanup_free char *text = line.data;
    if (write_all(fd, text, line.len) < 0)
        return ac_error(err, errno, "write audit log `%s`", log_path);
    return 0;
}

int audit_recordv(const char *log_path, const char *event, const char *id, ac_error_t *err, va_list ap)
{
    struct buf members = {0};
    const char *key;
    while ((key = va_arg(ap, const char *)) != NULL) {
        const char *value = va_arg(ap, const char *);
        bool raw = key[0] == '=';
        if (members.len)
            buf_add(&members, ",", 1);
        buf_json_string(&members, raw ? key + 1 : key);
        buf_add(&members, ":", 1);
        if (raw)
            buf_str(&members, value ? value : "null");
        else
            buf_json_string(&members, value ? value : "");
    }
    cleanup_free char *text = members.data;
    return audit_append(log_path, event, id, text, err);
}

int audit_record(const char *log_path, const char *event, const char *id, ac_error_t *err, ...)
{
    va_list ap;
    va_start(ap, err);
    int r = audit_recordv(log_path, event, id, err, ap);
    va_end(ap);
    return r;
}

static void tree_freep(yajl_val *v) { if (*v) yajl_tree_free(*v); }

long audit_verify(const char *path, char last_hex[SHA256_HEX_LEN + 1], ac_error_t *err)
{
    cleanup_file FILE *f = fopen(path, "re");
    if (!f)
        return ac_error(err, errno, "open `%s`", path);
    return audit_verify_stream(f, path, last_hex, err);
}

long audit_verify_stream(FILE *f, const char *path, char last_hex[SHA256_HEX_LEN + 1], ac_error_t *err)
{
    cleanup_free char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    char expected_prev[SHA256_HEX_LEN + 1];
    memcpy(expected_prev, genesis_hash, sizeof(expected_prev));

    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        else
            return ac_error(err, 0, "%s:%ld: truncated line (no newline at the end)", path, lineno);
        char errbuf[128];
        __attribute__((cleanup(tree_freep))) yajl_val rec = yajl_tree_parse(line, errbuf, sizeof(errbuf));
        if (!rec || !YAJL_IS_OBJECT(rec))
            return ac_error(err, 0, "%s:%ld: not a JSON record (line edited or torn)", path, lineno);
        static const char *prev_path[] = {"prev", NULL}, *seq_path[] = {"seq", NULL};
        yajl_val prev = yajl_tree_get(rec, prev_path, yajl_t_string);
        yajl_val seq = yajl_tree_get(rec, seq_path, yajl_t_number);
        if (!prev || !seq || !YAJL_IS_INTEGER(seq))
            return ac_error(err, 0, "%s:%ld: record without \"prev\" or \"seq\" (line edited)", path, lineno);
        if (!prev->u.string || strcmp(prev->u.string, expected_prev) != 0)
            return ac_error(err, 0,
                            "%s:%ld: previous-hash mismatch (line removed, reordered or edited; "
                            "the chain breaks between lines %ld and %ld)",
                            path, lineno, lineno - 1, lineno);
        if (YAJL_GET_INTEGER(seq) != lineno)
            return ac_error(err, 0, "%s:%ld: sequence number %lld where %ld belongs (line removed or reordered)",
                            path, lineno, YAJL_GET_INTEGER(seq), lineno);
        sha256_hex(line, (size_t)n, expected_prev);
    }
    if (ferror(f))
        return ac_error(err, errno, "read `%s`", path);
    memcpy(last_hex, expected_prev, SHA256_HEX_LEN + 1);
    return lineno;
}
