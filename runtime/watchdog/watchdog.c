/* agentcage-watchdog: enforces a tiered container's wall-clock limit
 * (io.agentcage.timeout-ms).
 *
 *   agentcage-watchdog TIMEOUT_MS ID     fd 3: pidfd of the container's init
 *                                        fd 4: the container's state dir
 *                                        fd 5 (optional): the engine's termination
 *                                        message file (Kubernetes' terminationMessagePath)
 *
 * Started detached by `agentcage start` (own session, stdio on /dev/null,
 * no other fds), one per tiered container for the container's whole life,
 * so it is a static program that does nothing but wait: it polls the pidfd
 * with the time left and
 *   - exits as soon as the init exits;
 *   - on expiry writes the marker `timeout` into the state dir (the
 *     runtime records it in the audit log at delete, and it tells anyone
 *     looking why the container died), sends SIGKILL to the init through
 *     the pidfd (the init of a pid namespace takes every process of it
 *     along) and exits; with fd 5 it first writes why into that file,
 *     which the kubelet shows as the container's termination message.
 * Writing through inherited fds means a deleted container (its state dir
 * gone) or a recycled pid can never be hit.
 *
 * Before it waits it drops what it does not need: of its capabilities it
 * keeps CAP_KILL alone (the container's init may run as another uid), sets
 * no_new_privs, restricts itself with Landlock to writing files in the
 * state dir (no other file access, no TCP; fd 5 is open already) and loads
 * a seccomp filter of the syscalls below (built by filter_gen.c with
 * libseccomp); anything else kills it. */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/poll.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/time.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "runtime/linux/landlock_abi.h"
#include "watchdog_filter.h" /* generated: build/gen/ */

/* No libc: static glibc's start-up alone touches over half a MiB, and this
 * program needs eight syscalls. _start below calls main and exit_group. */
#ifndef __x86_64__
#error "agentcage-watchdog is written for x86_64 (raw syscalls)"
#endif

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret; /* -errno on failure */
}
#define sys(nr, a, b, c, d) sys6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

__asm__(".text\n.global _start\n_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov (%rsp), %rdi\n"        /* argc */
        "  lea 8(%rsp), %rsi\n"       /* argv */
        "  and $-16, %rsp\n"
        "  call watchdog_main\n"
        "  mov %eax, %edi\n"
        "  mov $231, %eax\n"          /* exit_group */
        "  syscall\n");

/* gcc may emit calls to these for struct copies and initialisers. */
void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *dp = d;
    const unsigned char *sp = s;
    while (n--)
        *dp++ = *sp++;
    return d;
}

void *memset(void *d, int c, size_t n)
{
    unsigned char *dp = d;
    while (n--)
        *dp++ = (unsigned char)c;
    return d;
}

static size_t str_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

#define SIGKILL 9
#define EINTR 4
#define ESRCH 3
#define PIDFD 3
#define STATE_DIRFD 4
#define MESSAGE_FD 5

static int64_t now_ms(void)
{
    struct timespec ts;
    /* counts time spent suspended: the limit is wall-clock */
    sys(SYS_clock_gettime, CLOCK_BOOTTIME, &ts, 0, 0);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_ms(const char *s, int64_t *out)
{
    int64_t v = 0;
    if (s == NULL || *s == '\0')
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

/* Decimal digits of v, zero-padded to width, at p; returns the end. */
static char *put_num(char *p, uint64_t v, int width)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width)
        tmp[n++] = '0';
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_str(char *p, const char *s)
{
    size_t n = str_len(s);
    memcpy(p, s, n);
    return p + n;
}

/* UTC "YYYY-MM-DDTHH:MM:SS.mmmZ" (days to civil date after H. Hinnant's
 * public-domain algorithm). */
static char *put_time(char *p)
{
    struct timespec ts;
    sys(SYS_clock_gettime, CLOCK_REALTIME, &ts, 0, 0);
    int64_t secs = ts.tv_sec, days = secs / 86400, rem = secs % 86400;
    days += 719468;
    int64_t era = days / 146097, doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
    p = put_num(p, (uint64_t)y, 4);
    *p++ = '-';
    p = put_num(p, (uint64_t)m, 2);
    *p++ = '-';
    p = put_num(p, (uint64_t)d, 2);
    *p++ = 'T';
    p = put_num(p, (uint64_t)(rem / 3600), 2);
    *p++ = ':';
    p = put_num(p, (uint64_t)(rem % 3600 / 60), 2);
    *p++ = ':';
    p = put_num(p, (uint64_t)(rem % 60), 2);
    *p++ = '.';
    p = put_num(p, (uint64_t)(ts.tv_nsec / 1000000), 3);
    *p++ = 'Z';
    return p;
}

/* The marker: {"timeoutMs":N,"killedAt":"..."} */
static void write_marker(int64_t timeout_ms)
{
    char buf[128], *p = buf;
    p = put_str(p, "{\"timeoutMs\":");
    p = put_num(p, (uint64_t)timeout_ms, 1);
    p = put_str(p, ",\"killedAt\":\"");
    p = put_time(p);
    p = put_str(p, "\"}\n");
    long fd = sys(SYS_openat, STATE_DIRFD, "timeout.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return; /* the container was deleted meanwhile */
    long r = sys(SYS_write, fd, buf, p - buf, 0);
    sys(SYS_close, fd, 0, 0, 0);
    /* whole or not at all, for the reader */
    if (r == p - buf)
        sys(SYS_renameat, STATE_DIRFD, "timeout.tmp", STATE_DIRFD, "timeout");
    else
        sys(SYS_unlinkat, STATE_DIRFD, "timeout.tmp", 0, 0);
}

/* The reason, for the engine to show: replaces the file's content. */
static void write_message(int64_t timeout_ms)
{
    if (sys(SYS_fcntl, MESSAGE_FD, F_GETFD, 0, 0) < 0)
        return;
    char buf[160], *p = buf;
    p = put_str(p, "agentcage: killed at its tier's wall-clock timeout of ");
    p = put_num(p, (uint64_t)timeout_ms, 1);
    p = put_str(p, " ms (io.agentcage.timeout)\n");
    sys(SYS_ftruncate, MESSAGE_FD, 0, 0, 0);
    sys6(SYS_pwrite64, MESSAGE_FD, (long)buf, p - buf, 0, 0, 0);
}

/* CAP_KILL alone (where we have it), nothing in the other sets. Errors
 * that only mean "not ours to drop" (rootless: no CAP_SETPCAP for the
 * bounding set) are let be: no_new_privs keeps anything from coming back. */
static int drop_capabilities(void)
{
    for (long cap = 0; cap < 64; cap++)
        if (cap != CAP_KILL)
            sys6(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0, 0);
    sys6(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0);
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    if (sys(SYS_capget, &hdr, data, 0, 0) < 0)
        return -1;
    unsigned kill = data[0].permitted & (1u << CAP_KILL);
    memset(data, 0, sizeof(data));
    data[0].permitted = data[0].effective = kill;
    return sys(SYS_capset, &hdr, data, 0, 0) < 0 ? -1 : 0;
}

/* Landlock: creating, writing, renaming and removing files in the state
 * dir (fd 4) is all the filesystem access left; no TCP bind or connect. */
static int restrict_files(void)
{
    long abi = sys(SYS_landlock_create_ruleset, 0, 0, LANDLOCK_CREATE_RULESET_VERSION, 0);
    if (abi < 1)
        return 0; /* no Landlock: the tier refused to start already */
    struct ac_landlock_ruleset_attr attr = {
        .handled_access_fs = AC_LANDLOCK_FS_ALL(abi),
        .handled_access_net = abi >= 4 ? AC_LANDLOCK_ACCESS_NET_BIND_TCP | AC_LANDLOCK_ACCESS_NET_CONNECT_TCP : 0,
        .scoped = abi >= 6 ? AC_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET : 0, /* not signals: the init is outside */
    };
    long ruleset = sys(SYS_landlock_create_ruleset, &attr, AC_LANDLOCK_RULESET_SIZE(abi), 0, 0);
    if (ruleset < 0)
        return -1;
    struct landlock_path_beneath_attr dir = {
        .allowed_access = (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                           LANDLOCK_ACCESS_FS_TRUNCATE) & AC_LANDLOCK_FS_ALL(abi),
        .parent_fd = STATE_DIRFD,
    };
    long r = sys(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &dir, 0);
    if (r == 0)
        r = sys(SYS_landlock_restrict_self, ruleset, 0, 0, 0);
    sys(SYS_close, ruleset, 0, 0, 0);
    return r < 0 ? -1 : 0;
}

static int drop_privileges(void)
{
    struct sock_fprog prog = {.len = sizeof(watchdog_filter) / sizeof(watchdog_filter[0]),
                              .filter = (struct sock_filter *)watchdog_filter};
    if (drop_capabilities() < 0 || sys6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0) < 0 || restrict_files() < 0)
        return -1;
    return sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog, 0) < 0 ? -1 : 0;
}

int watchdog_main(int argc, char **argv);

__attribute__((used)) int watchdog_main(int argc, char **argv)
{
    int64_t timeout_ms;
    if (argc < 2 || parse_ms(argv[1], &timeout_ms) < 0) {
        static const char usage[] = "usage: agentcage-watchdog TIMEOUT_MS [ID] (fd 3: pidfd, fd 4: state dir)\n";
        sys(SYS_write, 2, usage, sizeof(usage) - 1, 0);
        return 2;
    }
    int64_t deadline = now_ms() + timeout_ms;
    /* The limit is the promise: a watchdog that could not confine itself
     * (a kernel without seccomp or Landlock cannot run a tier anyway)
     * still guards it. */
    if (drop_privileges() < 0) {
        static const char msg[] = "agentcage-watchdog: cannot drop privileges; guarding anyway\n";
        sys(SYS_write, 2, msg, sizeof(msg) - 1, 0);
    }
    struct pollfd pfd = {.fd = PIDFD, .events = POLLIN};
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            break;
        long r = sys(SYS_poll, &pfd, 1, left > 3600000 ? 3600000 : left, 0);
        if (r > 0)
            return 0; /* the init exited (or the pidfd is bad: nothing to guard) */
        if (r < 0 && r != -EINTR)
            return 1;
    }
    /* The marker first: the runtime's delete may stop us as soon as the
     * init is gone. */
    write_marker(timeout_ms);
    write_message(timeout_ms);
    long r = sys(SYS_pidfd_send_signal, PIDFD, SIGKILL, 0, 0);
    if (r < 0) {
        /* already gone: not our doing */
        sys(SYS_unlinkat, STATE_DIRFD, "timeout", 0, 0);
        return r == -ESRCH ? 0 : 1;
    }
    return 0;
}
