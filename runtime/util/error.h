/* Error values carried from the place that fails up to the one place that
 * prints them (main), crun-style: every fallible function returns a negative
 * int and fills *err. */
#ifndef AGENTCAGE_ERROR_H
#define AGENTCAGE_ERROR_H

#include <stdarg.h>

struct ac_error {
    int errno_value; /* 0 when the message says everything */
    char *msg;
};
typedef struct ac_error *ac_error_t;

/* Fill *err (if err and *err is NULL) with a formatted message; errno_value
 * non-zero appends ": strerror(errno_value)". Always returns -1. */
int ac_error(ac_error_t *err, int errno_value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepend "prefix: " to an existing error's message. Returns -1. */
int ac_error_wrap(ac_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The full message of an error ("msg: strerror"), owned by the caller. */
char *ac_error_string(const ac_error_t err);
void ac_error_free(ac_error_t *err);
static inline void ac_error_cleanup(ac_error_t *err) { ac_error_free(err); }

/* Logging. The log goes to --log FILE (or stderr) as text or json lines. */
enum ac_log_format { AC_LOG_TEXT, AC_LOG_JSON };
enum ac_log_level { AC_LOG_DEBUG, AC_LOG_INFO, AC_LOG_WARNING, AC_LOG_ERROR };
void ac_log_init(const char *path, enum ac_log_format format, int debug);
void ac_log(enum ac_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ac_debug(...) ac_log(AC_LOG_DEBUG, __VA_ARGS__)
#define ac_warn(...) ac_log(AC_LOG_WARNING, __VA_ARGS__)
/* Report a fatal error: to the log (json/text) and to stderr as
 * "agentcage: msg". Frees the error. */
void ac_error_report(ac_error_t *err);
/* The same report of a constant message (one line, nothing in it to escape)
 * without allocating: for a process whose heap may be inconsistent. */
void ac_error_report_fixed(const char *msg);
int ac_log_debug_enabled(void);
/* In a child that will hand its stdio to the container (a terminal): debug
 * lines stay on the runtime's stderr (a private copy, close-on-exec) when
 * that is where the log goes, until ac_log_release_stderr (before a wait
 * that must not hold the runtime's stderr open, as create's for start). */
void ac_log_keep_stderr(void);
void ac_log_release_stderr(void);

#endif
