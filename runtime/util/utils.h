/* Small helpers shared by every part of the runtime. */
#ifndef AGENTCAGE_UTILS_H
#define AGENTCAGE_UTILS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "runtime/util/error.h"

/* cleanup helpers: a variable declared with one of these is freed/closed
 * when it goes out of scope, so error paths need no manual unwinding. */
static inline void ac_freep(void *p) { free(*(void **)p); }
static inline void ac_closep(int *fd) { if (*fd >= 0) close(*fd); }
static inline void ac_fclosep(FILE **f) { if (*f) fclose(*f); }
#define cleanup_free __attribute__((cleanup(ac_freep)))
#define cleanup_close __attribute__((cleanup(ac_closep)))
#define cleanup_file __attribute__((cleanup(ac_fclosep)))
#define cleanup_error __attribute__((cleanup(ac_error_cleanup)))

/* Hand an fd/pointer out of a cleanup variable. */
static inline int ac_steal_fd(int *fd) { int r = *fd; *fd = -1; return r; }
static inline void *ac_steal_ptr(void *p) { void *r = *(void **)p; *(void **)p = NULL; return r; }

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Whole-file read (NUL terminated; *len without the NUL). */
int read_all_file(const char *path, char **out, size_t *len, ac_error_t *err);
int read_all_fd(int fd, char **out, size_t *len, ac_error_t *err);
/* write(2) loop; returns -1 with errno set. */
ssize_t write_all(int fd, const void *buf, size_t len);
/* Write a small file (e.g. a cgroup or proc file): open O_WRONLY|O_CLOEXEC,
 * write, close. Errors name the path. */
int write_file(const char *path, const char *data, size_t len, ac_error_t *err);
int write_file_at(int dirfd, const char *name, const char *data, size_t len, ac_error_t *err);
/* mkdir -p with mode; existing directories are fine. */
/* rename(from, to) for a small file that replaces to, without ext4's
 * replace-via-rename flush (auto_da_alloc starts writing from's data out
 * when to exists: 0.1-4 ms here, for state that lives seconds): the two
 * are swapped (RENAME_EXCHANGE, as atomic for a reader of to as rename)
 * and the old one unlinked; a plain rename when to does not exist or the
 * file system cannot swap. */
int rename_over(const char *from, const char *to);
/* The same swap, the old one kept under from (for a writer that overwrites
 * it next time instead of making a new file); a plain rename when to does
 * not exist or the file system cannot swap. */
int rename_exchange(const char *from, const char *to);
int mkdir_p(const char *path, mode_t mode, ac_error_t *err);
/* rm -r of a folder holding files, and folders of files down to depth
 * more levels (an entry something is mounted on is unmounted first); a
 * missing folder is fine. */
int remove_dir(const char *dir, int depth, ac_error_t *err);
/* Is item one of the entries of a list separated by sep ("a:b:c")? */
bool list_has(const char *list, char sep, const char *item);
/* Is every (non-empty) entry of items, separated by sep as well, in list?
 * ("cpu,cpuacct" among a cgroup mount's "rw,cpu,cpuacct") */
bool list_has_all(const char *list, char sep, const char *items);
/* Parse a non-negative decimal integer fully; -1 on junk. */
int parse_uint64(const char *s, uint64_t *out);
/* Is path dir itself or below it (whole components; dir's trailing
 * slashes ignored)? The length of dir's part of path, 0 when not. */
size_t path_below(const char *path, const char *dir);

/* "YYYY-MM-DDTHH:MM:SS" of t in UTC, as strftime's "%Y-%m-%dT%H:%M:%S" of
 * gmtime_r gives it for years 1000-9999 (clock.c) */
#define UTC_DATE_TIME_LEN 80 /* room for any int the format could print */
void utc_date_time(time_t t, char out[UTC_DATE_TIME_LEN]);
/* Now, RFC 3339 in UTC with nanoseconds (clock.c): into a buffer, or malloc'd. */
#define RFC3339_LEN 64
void rfc3339_format(char buf[RFC3339_LEN]);
char *rfc3339_now(void);

/* Process start time (field 22 of /proc/PID/stat) or 0 if no such process. */
unsigned long long process_start_time(pid_t pid);
/* The parent's pid (field 4 of /proc/PID/stat), -1 if no such process. */
pid_t process_parent(pid_t pid);
/* The exit status (wait(2)'s form) of pid when it has exited and its parent
 * has not reaped it yet and it is the process that started at start_time
 * (/proc/PID/stat's exit_code); -1 otherwise. */
int zombie_exit_status(pid_t pid, unsigned long long start_time);

/* A user of /etc/passwd, by name (name non-NULL) or by uid: 0 with its
 * uid, gid and home (malloc'd, into *home when home is non-NULL), -1 with
 * errno (ENOENT: no such user there). The file alone, read by glibc's
 * fgetpwent_r, never an NSS module: the runtime links glibc statically,
 * where getpwnam would dlopen one (libnss_systemd, libnss_sss ...) with a
 * libc of its own, and crash in it. */
int passwd_file_user(const char *name, uid_t uid, uid_t *uid_out, gid_t *gid_out, char **home);
/* The same in another file of that format (a line of any length). */
int passwd_file_user_in(const char *path, const char *name, uid_t uid, uid_t *uid_out, gid_t *gid_out,
                        char **home);

/* Every signal's disposition back to SIG_DFL, for a child that sheds what
 * it inherited (an exec would: ignored signals survive it, handlers do
 * not): only those /proc/thread-self/status lists as ignored or caught,
 * else all of them. */
void signals_default_all(void);

#endif
