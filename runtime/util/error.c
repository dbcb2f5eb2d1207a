/* Errors and logging. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/util/error.h"
#include "runtime/util/utils.h"

static int log_fd = 2;
static enum ac_log_format log_format = AC_LOG_TEXT;
static int log_debug;
static int log_to_stderr_too; /* the log file is not stderr */

int ac_error(ac_error_t *err, int errno_value, const char *fmt, ...)
{
    if (err == NULL || *err != NULL)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    struct ac_error *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        free(msg);
        return -1;
    }
    e->errno_value = errno_value;
    e->msg = msg ? msg : strdup("out of memory");
    *err = e;
    return -1;
}

int ac_error_wrap(ac_error_t *err, const char *fmt, ...)
{
    if (err == NULL || *err == NULL)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    char *prefix = xvasprintf(fmt, ap);
    va_end(ap);
    if (prefix) {
        char *n = NULL;
        if (asprintf(&n, "%s: %s", prefix, (*err)->msg) >= 0) {
            free((*err)->msg);
            (*err)->msg = n;
        }
        free(prefix);
    }
    return -1;
}

char *ac_error_string(const ac_error_t err)
{
    if (err == NULL)
        return strdup("unknown error");
    if (err->errno_value)
        return xasprintf("%s: %s", err->msg, strerror(err->errno_value));
    return xstrdup(err->msg);
}

void ac_error_free(ac_error_t *err)
{
    if (err && *err) {
        free((*err)->msg);
        free(*err);
        *err = NULL;
    }
}

void ac_log_init(const char *path, enum ac_log_format format, int debug)
{
    log_format = format;
    log_debug = debug;
    if (path && *path) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
        if (fd >= 0) {
            log_fd = fd;
            log_to_stderr_too = 1;
        }
    }
}

int ac_log_debug_enabled(void) { return log_debug; }

static int log_kept_stderr = -1;

void ac_log_keep_stderr(void)
{
    if (log_fd != 2 || !log_debug)
        return;
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0)
        log_fd = log_kept_stderr = fd;
}

void ac_log_release_stderr(void)
{
    if (log_kept_stderr < 0)
        return;
    close(log_kept_stderr);
    log_kept_stderr = -1;
    log_fd = 2;
}

static const char *level_name(enum ac_log_level level)
{
    switch (level) {
    case AC_LOG_DEBUG: return "debug";
    case AC_LOG_INFO: return "info";
    case AC_LOG_WARNING: return "warning";
    default: return "error";
    }
}

/* JSON string escaping for log lines. */
static void json_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

static void log_write(enum ac_log_level level, const char *msg)
{
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (f == NULL)
        return;
    if (log_format == AC_LOG_JSON) {
        char when[RFC3339_LEN];
        rfc3339_format(when);
        fprintf(f, "{\"level\":\"%s\",\"msg\":\"", level_name(level));
        json_escape(f, msg);
        fprintf(f, "\",\"time\":\"%s\"}\n", when);
    } else if (level == AC_LOG_DEBUG || level == AC_LOG_INFO) {
        /* logfmt, as runc's (logrus) text lines: tools that read runc's
         * debug output find level= and msg= */
        char when[RFC3339_LEN];
        rfc3339_format(when);
        fprintf(f, "time=\"%s\" level=%s msg=\"", when, level_name(level));
        json_escape(f, msg);
        fputs("\"\n", f);
    } else {
        fprintf(f, "agentcage: %s%s%s\n", level == AC_LOG_ERROR ? "" : level_name(level),
                level == AC_LOG_ERROR ? "" : ": ", msg);
    }
    fclose(f);
    if (line) {
        if (write_all(log_fd, line, len) < 0) {
            /* nowhere left to report it */
        }
        free(line);
    }
}

void ac_log(enum ac_log_level level, const char *fmt, ...)
{
    if (level == AC_LOG_DEBUG && !log_debug)
        return;
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    if (msg) {
        /* A warning goes to the log only (stderr without --log), as runc's
         * do; an error is also printed on stderr (ac_error_report). */
        log_write(level, msg);
        free(msg);
    }
    errno = saved;
}

/* An error is one line, of a readable length, whatever values it quotes
 * (an id with a newline, a 10 MB hostname): control characters escaped, and
 * a long middle cut out (the head names the field, the tail the cause). */
static char *one_line(const char *msg)
{
    enum { HEAD = 600, TAIL = 300 };
    size_t len = strlen(msg);
    char *out = xmalloc(4 * len + 64);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (len > HEAD + TAIL + 64 && i == HEAD) {
            o += (size_t)sprintf(out + o, " [... %zu bytes ...] ", len - HEAD - TAIL);
            i = len - TAIL;
        }
        unsigned char c = (unsigned char)msg[i];
        if (c == '\n')
            o += (size_t)sprintf(out + o, "\\n");
        else if (c < 0x20 || c == 0x7f)
            o += (size_t)sprintf(out + o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
    return out;
}

void ac_error_report_fixed(const char *msg)
{
    char line[512], when[RFC3339_LEN];
    int n;
    if (log_format == AC_LOG_JSON) {
        rfc3339_format(when);
        n = snprintf(line, sizeof(line), "{\"level\":\"%s\",\"msg\":\"%s\",\"time\":\"%s\"}\n",
                     level_name(AC_LOG_ERROR), msg, when);
    } else {
        n = snprintf(line, sizeof(line), "agentcage: %s\n", msg);
    }
    if (n > 0 && (size_t)n < sizeof(line) && write_all(log_fd, line, (size_t)n) < 0) {
        /* nowhere left to report it */
    }
    n = snprintf(line, sizeof(line), "agentcage: %s\n", msg);
    if ((log_to_stderr_too || log_format == AC_LOG_JSON) && n > 0 && (size_t)n < sizeof(line) &&
        write_all(2, line, (size_t)n) < 0) {
        /* ignore */
    }
}

void ac_error_report(ac_error_t *err)
{
    char *full = ac_error_string(err ? *err : NULL);
    if (full == NULL)
        return;
    char *msg = one_line(full);
    free(full);
    log_write(AC_LOG_ERROR, msg);
    if (log_to_stderr_too || log_format == AC_LOG_JSON) {
        char *line = xasprintf("agentcage: %s\n", msg);
        if (write_all(2, line, strlen(line)) < 0) {
            /* ignore */
        }
        free(line);
    }
    free(msg);
    ac_error_free(err);
}
