/* agentcage-watchdog: the resident guard of a tiered container, one per
 * container for its whole life.
 *
 *   agentcage-watchdog TIMEOUT_MS ID [await-start]
 *                                        fd 3: pidfd of the container's init
 *                                        fd 4: the container's state dir
 *                                        fd 5 (optional): the engine's termination
 *                                        message file (Kubernetes' terminationMessagePath)
 *                                        fd 6 (optional): the container's denials counter
 *                                        fd 7 (optional): the listener of the init's tier
 *                                        seccomp filter
 *                                        fd 8 (optional): a listening unix socket on which
 *                                        `agentcage exec` hands over the listeners of the
 *                                        processes it starts
 *                                        fd 9 (optional): a netlink socket on the kernel's
 *                                        audit multicast, Landlock's records only
 *
 * With await-start (`agentcage run`, which starts it while the init sets
 * itself up) the wall-clock limit waits for the go on fd 8: "s", with the
 * init's listener (SCM_RIGHTS) when it has one, answered by one byte.
 *
 * Started detached by `agentcage start` (own session, stdio on /dev/null,
 * no other fds), so it is a static program that does nothing but wait: it
 * polls the pidfd, the listeners and the socket with the time left
 * (TIMEOUT_MS 0: no limit) and
 *   - answers every refused syscall a listener reports with EPERM and
 *     counts it in the denials counter (runtime/linux/denials.h, shared with
 *     the egress proxy's writer); when the count reaches the container's
 *     limit it SIGKILLs the init (killed_by says why), with fd 5 writing why
 *     into that file first;
 *   - counts the same way every refusal of the container's Landlock domain
 *     the kernel reports to its audit (fd 9): the domain is the one whose
 *     record names the init's pid, or the pid of a process exec handed a
 *     listener over for (landlock_records.h); refused already, nothing to
 *     answer;
 *   - on the wall-clock limit writes the marker `timeout` into the state dir
 *     (the runtime records it in the audit log at delete), and with fd 5 the
 *     reason, then sends SIGKILL to the init through the pidfd (the init of a
 *     pid namespace takes every process of it along);
 *   - once the init has exited, writes the marker `exit` ({"wallMs":N})
 *     for delete's exit record, then waits (a few seconds at most) for its
 *     parent (the engine's shim) to reap it, reads its exit status through
 *     the pidfd (PIDFD_INFO_EXIT, Linux 6.15) and writes the marker again
 *     ({"wallMs":N,"exitCode":WAIT_STATUS}).
 * Writing through inherited fds means a deleted container (its state dir
 * gone) or a recycled pid can never be hit.
 *
 * Before it waits it drops what it does not need: of its capabilities it
 * keeps CAP_KILL alone (the container's init may run as another uid), sets
 * no_new_privs, restricts itself with Landlock to writing files in the
 * state dir (no other file access, no TCP; fd 5 is open already, the
 * counter mapped, fd 9 bound by the runtime, which has CAP_AUDIT_READ) and
 * loads a seccomp filter of the syscalls below (built by filter_gen.c with
 * libseccomp); anything else kills it. It allocates nothing: an event is a
 * few hundred bytes of stack. */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/ioctl.h>
#include <linux/mman.h>
#include <linux/poll.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/time.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "runtime/linux/denials.h"
#include "runtime/linux/landlock_abi.h"
#include "runtime/watchdog/landlock_records.h"
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
#define SIG_SETMASK 2
#define EINTR 4
#define ESRCH 3
#define EPERM 1
#define PIDFD 3
#define STATE_DIRFD 4
#define MESSAGE_FD 5
#define DENIALS_FD 6
#define NOTIFY_FD 7
#define EXEC_SOCKET_FD 8
#define AUDIT_FD 9
#define MAX_LISTENERS 16
#define FIRST_LISTENER 3 /* fds[]: the pidfd, the exec socket, the audit socket, then the listeners */
#define REAP_WAIT_MS 5000

/* pidfd's exit information (linux/pidfd.h of Linux 6.15) */
struct pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define PIDFD_INFO_EXIT 8u
#define PIDFD_GET_INFO _IOWR(0xFF, 11, struct pidfd_info)

/* recvmsg's structures, as the x86_64 ABI lays them out (no libc) */
struct wd_iovec {
    void *base;
    size_t len;
};
struct wd_msghdr {
    void *name;
    int namelen;
    struct wd_iovec *iov;
    size_t iovlen;
    void *control;
    size_t controllen;
    unsigned flags;
};
struct wd_sockaddr_nl {
    uint16_t family, pad;
    uint32_t pid; /* the sender: 0 is the kernel */
    uint32_t groups;
};
struct wd_nlmsghdr {
    uint32_t len;
    uint16_t type, flags;
    uint32_t seq, pid;
};
struct wd_cmsg_fd {
    size_t len;
    int level, type;
    int fd;
    int pad;
};
#define WD_SOL_SOCKET 1
#define WD_SCM_RIGHTS 1
#define WD_MSG_CMSG_CLOEXEC 0x40000000
#define WD_MSG_DONTWAIT 0x40
#define ENOBUFS 105
#define WD_SOCK_CLOEXEC 02000000

static int64_t now_ms(void)
{
    struct timespec ts;
    /* counts time spent suspended: the limit is wall-clock */
    sys(SYS_clock_gettime, CLOCK_BOOTTIME, &ts, 0, 0);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t realtime_ms(void)
{
    struct timespec ts;
    sys(SYS_clock_gettime, CLOCK_REALTIME, &ts, 0, 0);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int fd_open(int fd) { return sys(SYS_fcntl, fd, F_GETFD, 0, 0) >= 0; }

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

/* A marker file in the state dir, whole or not at all (for the reader). */
static void write_state_file(const char *name, const char *tmp, const char *buf, long len)
{
    long fd = sys(SYS_openat, STATE_DIRFD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return; /* the container was deleted meanwhile */
    long r = sys(SYS_write, fd, buf, len, 0);
    sys(SYS_close, fd, 0, 0, 0);
    if (r == len)
        sys(SYS_renameat, STATE_DIRFD, tmp, STATE_DIRFD, name);
    else
        sys(SYS_unlinkat, STATE_DIRFD, tmp, 0, 0);
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
    write_state_file("timeout", "timeout.tmp", buf, p - buf);
}

/* The reason, for the engine to show: replaces the file's content. */
static void write_message(const char *what, uint64_t n, const char *unit)
{
    if (!fd_open(MESSAGE_FD))
        return;
    char buf[160], *p = buf;
    p = put_str(p, "agentcage: killed at its tier's ");
    p = put_str(p, what);
    p = put_str(p, " of ");
    p = put_num(p, n, 1);
    p = put_str(p, unit);
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

/* ---- the listeners: the refusals of the tier's seccomp filters */

static struct denials_counter *counter; /* the shared counter, or 0 */
static struct pollfd fds[FIRST_LISTENER + MAX_LISTENERS];
static int32_t fd_pid[FIRST_LISTENER + MAX_LISTENERS]; /* an exec'd listener's process; 0: the init's */
static int n_fds = FIRST_LISTENER;

/* pid: the process that made its Landlock domain (an exec'd one), 0 for the init's */
static void add_listener(int fd, int32_t pid)
{
    if (n_fds == FIRST_LISTENER + MAX_LISTENERS) {
        sys(SYS_close, fd, 0, 0, 0); /* its syscalls then fail with ENOSYS: refused, not counted */
        return;
    }
    fds[n_fds].fd = fd;
    fds[n_fds].events = POLLIN;
    fds[n_fds].revents = 0;
    fd_pid[n_fds] = pid;
    n_fds++;
}

static void kill_for_denials(void)
{
    write_message("limit on denials (io.agentcage.max-denials)", counter->limit,
                  " refused syscalls, requests or file accesses\n");
    sys(SYS_pidfd_send_signal, PIDFD, SIGKILL, 0, 0);
}

/* One refused syscall: counted, answered EPERM. The one that reaches the
 * limit is not answered: its caller stays in the syscall until the init's
 * death takes every process of the pid namespace along. */
static void answer(int fd)
{
    struct seccomp_notif req;
    memset(&req, 0, sizeof(req));
    if (sys(SYS_ioctl, fd, SECCOMP_IOCTL_NOTIF_RECV, &req, 0) < 0)
        return; /* the caller went meanwhile */
    if (counter) {
        struct denial *slot;
        int kill = denials_add(counter, DENIAL_SECCOMP, realtime_ms(), &slot);
        slot->pid = (int32_t)req.pid;
        slot->nr = req.data.nr;
        slot->arch = req.data.arch;
        if (kill) {
            kill_for_denials();
            return;
        }
    }
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof(resp));
    resp.id = req.id;
    resp.error = -EPERM;
    sys(SYS_ioctl, fd, SECCOMP_IOCTL_NOTIF_SEND, &resp, 0);
}

/* await-start: the wall clock runs once the go came (take_listener) */
static int awaiting_start;
static int64_t started_ms;

/* `agentcage exec` hands over the listener of the process it starts: one
 * fd (SCM_RIGHTS) with "n" and that process's pid in decimal (it made its
 * own Landlock domain); one byte back says we hold it. `run`'s start sends
 * "s" (await-start), with the init's listener if it has one. */
static void take_listener(void)
{
    long c = sys(SYS_accept4, EXEC_SOCKET_FD, 0, 0, WD_SOCK_CLOEXEC);
    if (c < 0)
        return;
    char msg[16];
    struct wd_iovec iov = {msg, sizeof(msg)};
    struct wd_cmsg_fd cm;
    memset(&cm, 0, sizeof(cm));
    struct wd_msghdr mh = {0, 0, &iov, 1, &cm, sizeof(cm), 0};
    long n = sys(SYS_recvmsg, c, &mh, WD_MSG_CMSG_CLOEXEC, 0);
    const char *p = msg + 1;
    int32_t pid = 0;
    int named = n > 1 && n < (long)sizeof(msg) && msg[0] == 'n' && ll_dec(&p, msg + n, &pid) && p == msg + n && pid > 0;
    int with_fd = mh.controllen >= 20 && cm.level == WD_SOL_SOCKET && cm.type == WD_SCM_RIGHTS && cm.len == 20;
    if (named && with_fd) {
        add_listener(cm.fd, pid);
        sys(SYS_write, c, "A", 1, 0);
    } else if (n == 1 && msg[0] == 's' && awaiting_start) {
        if (with_fd)
            add_listener(cm.fd, 0);
        awaiting_start = 0;
        started_ms = now_ms();
        sys(SYS_write, c, "A", 1, 0);
    } else if (mh.controllen >= 20 && cm.level == WD_SOL_SOCKET && cm.type == WD_SCM_RIGHTS) {
        sys(SYS_close, cm.fd, 0, 0, 0);
    }
    sys(SYS_close, c, 0, 0, 0);
}

/* ---- Landlock's refusals, from the kernel's audit (fd 9)
 *
 * The socket gets every Landlock record of the host (a socket filter
 * drops the other types). A refusal names its domain; the domain's
 * record, which follows its first refusal, names the pid that made it: the
 * init's, or an exec'd process's (while its listener is held). Those
 * domains are ours; a refusal of one seen before its domain's record waits
 * in a short list until that record comes. */
#define MAX_DOMAINS (16 * (1 + MAX_LISTENERS)) /* Landlock stacks 16 layers at most per process */
#define MAX_PENDING 4
static int32_t init_pid;
static uint64_t domains[MAX_DOMAINS]; /* 0: a free slot */
static struct {
    uint64_t domain, time_ms;
    char text[DENIALS_TEXT];
} pending[MAX_PENDING];
static unsigned next_pending;
static int64_t last_landlock_ms = -1000; /* CLOCK_BOOTTIME of the last refusal of ours */

static int our_pid(int32_t pid)
{
    if (pid == init_pid)
        return 1;
    for (int i = FIRST_LISTENER; i < n_fds; i++)
        if (fd_pid[i] == pid)
            return 1;
    return 0;
}

static uint64_t *domain_slot(uint64_t id)
{
    for (int i = 0; i < MAX_DOMAINS; i++)
        if (domains[i] == id)
            return &domains[i];
    return 0;
}

/* Refused by the kernel already: counted, and the container killed at the
 * limit. Once it is being killed, what it still does is not counted. */
static void count_landlock(const char *text, uint64_t time_ms)
{
    if (!counter || __atomic_load_n(&counter->killed_by, __ATOMIC_SEQ_CST))
        return;
    struct denial *slot;
    int kill = denials_add(counter, DENIAL_LANDLOCK, time_ms, &slot);
    memcpy(slot->text, text, DENIALS_TEXT);
    last_landlock_ms = now_ms();
    if (kill)
        kill_for_denials();
}

static void landlock_record(unsigned type, const char *text, size_t n)
{
    struct ll_record r;
    uint64_t *slot;
    switch (ll_record_parse(type, text, n, &r)) {
    case LL_RECORD_ACCESS: {
        char what[DENIALS_TEXT];
        ll_record_text(&r, what, sizeof(what));
        if (domain_slot(r.domain)) {
            count_landlock(what, realtime_ms());
            break;
        }
        unsigned i = next_pending++ % MAX_PENDING;
        pending[i].domain = r.domain;
        pending[i].time_ms = realtime_ms();
        memcpy(pending[i].text, what, DENIALS_TEXT);
        break;
    }
    case LL_RECORD_ALLOCATED:
        if (!our_pid(r.pid) || domain_slot(r.domain) || !(slot = domain_slot(0)))
            break;
        *slot = r.domain;
        for (unsigned i = 0; i < MAX_PENDING; i++)
            if (pending[i].domain == r.domain) {
                pending[i].domain = 0;
                count_landlock(pending[i].text, pending[i].time_ms);
            }
        break;
    case LL_RECORD_DEALLOCATED:
        if ((slot = domain_slot(r.domain)))
            *slot = 0;
        break;
    case LL_RECORD_NONE:
        break;
    }
}

/* What the socket holds, a bounded batch at a time; each datagram is one
 * record, and only its start matters (the rest is cut off). */
static void read_audit(void)
{
    for (int batch = 0; batch < 64; batch++) {
        union {
            struct wd_nlmsghdr h;
            char bytes[512];
        } buf;
        struct wd_sockaddr_nl from;
        memset(&from, 0, sizeof(from));
        struct wd_iovec iov = {buf.bytes, sizeof(buf.bytes)};
        struct wd_msghdr mh = {&from, sizeof(from), &iov, 1, 0, 0, 0};
        long n = sys(SYS_recvmsg, AUDIT_FD, &mh, WD_MSG_DONTWAIT, 0);
        if (n == -ENOBUFS || n == -EINTR)
            continue; /* records were lost (a burst): go on with the next */
        if (n < 0)
            return;
        if (n < (long)sizeof(buf.h) || from.pid != 0 || buf.h.len < sizeof(buf.h))
            continue; /* the kernel's records only */
        size_t len = (buf.h.len < (uint32_t)n ? buf.h.len : (size_t)n) - sizeof(buf.h);
        landlock_record(buf.h.type, buf.bytes + sizeof(buf.h), len);
    }
}

/* ---- the end */

/* The marker `exit` for delete: the wall time and, when known, the status. */
static void write_exit_marker(int64_t wall_ms, int have, int32_t code)
{
    char buf[96], *p = buf;
    p = put_str(p, "{\"wallMs\":");
    p = put_num(p, (uint64_t)wall_ms, 1);
    if (have) {
        p = put_str(p, ",\"exitCode\":");
        p = put_num(p, (uint64_t)(uint32_t)code, 1);
    }
    p = put_str(p, "}\n");
    write_state_file("exit", "exit.tmp", buf, p - buf);
}

/* The init's exit status once its parent has reaped it: 1 with *code,
 * 0 while it is unreaped, -1 on a kernel without exit information. */
static int reaped_status(int32_t *code)
{
    struct pidfd_info info;
    memset(&info, 0, sizeof(info));
    info.mask = PIDFD_INFO_EXIT;
    long r = sys(SYS_ioctl, PIDFD, PIDFD_GET_INFO, &info, 0);
    if (r == 0 && (info.mask & PIDFD_INFO_EXIT)) {
        *code = info.exit_code;
        return 1;
    }
    return r < 0 && r != -ESRCH ? -1 : 0;
}

/* The init has exited. Reaped already, or within a millisecond (`run`
 * reaps at once): one marker with its wall time and status. Else the
 * marker with its wall time (a delete that finds the init unreaped takes
 * the status from /proc and need not wait for us), then again with its
 * exit status once its parent has reaped it (a bounded wait: a pidfd
 * polled for no event wakes with POLLHUP when the process is reaped; the
 * 10 ms steps only bound it on a kernel that would not wake us). */
static void write_exit(int64_t started_ms)
{
    int64_t wall = now_ms() - started_ms;
    int32_t code = 0;
    int have = reaped_status(&code);
    struct pollfd reap = {.fd = PIDFD, .events = 0};
    /* A parent that waits for the init (`run`, an engine's shim) reaps it
     * within a moment: a millisecond's wait for that makes one marker of
     * two, and spares the second's rename over the first, which makes
     * ext4 start writing the new file out (auto_da_alloc). */
    if (have == 0) {
        sys(SYS_poll, &reap, 1, 1, 0);
        have = reaped_status(&code);
    }
    write_exit_marker(wall, have > 0, code);
    if (have != 0)
        return;
    for (int waited = 0; waited < REAP_WAIT_MS; waited += 10) {
        sys(SYS_poll, &reap, 1, 10, 0);
        have = reaped_status(&code);
        if (have > 0)
            write_exit_marker(wall, 1, code);
        if (have != 0)
            return;
    }
}

/* The init has exited. The kernel's audit thread sends records a moment
 * after the refusal: while ours were coming in, wait for the last ones
 * (until none came for 5 ms, 50 ms at most). */
static void drain_audit(void)
{
    if (fds[2].fd < 0 || now_ms() - last_landlock_ms > 100)
        return;
    struct pollfd p = {.fd = AUDIT_FD, .events = POLLIN};
    for (int i = 0; i < 10 && sys(SYS_poll, &p, 1, 5, 0) > 0; i++)
        read_audit();
}

int watchdog_main(int argc, char **argv);

__attribute__((used)) int watchdog_main(int argc, char **argv)
{
    /* The runtime starts us with every signal blocked (runtime/linux/
     * spawn.h): our own mask, none blocked, first. */
    uint64_t no_signals = 0;
    sys(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, 0, sizeof(no_signals));
    int64_t timeout_ms;
    if (argc < 2 || parse_ms(argv[1], &timeout_ms) < 0) {
        static const char usage[] = "usage: agentcage-watchdog TIMEOUT_MS [ID] (fd 3: pidfd, fd 4: state dir)\n";
        sys(SYS_write, 2, usage, sizeof(usage) - 1, 0);
        return 2;
    }
    if (argc > 3) {
        static const char await[] = "await-start";
        size_t i = 0;
        while (i < sizeof(await) && argv[3][i] == await[i])
            i++;
        awaiting_start = i == sizeof(await); /* the NUL matched too */
    }
    started_ms = now_ms();
    if (fd_open(DENIALS_FD)) {
        long m = sys6(SYS_mmap, 0, DENIALS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, DENIALS_FD, 0);
        if (m > 0 && ((struct denials_counter *)m)->magic == DENIALS_MAGIC)
            counter = (struct denials_counter *)m;
        sys(SYS_close, DENIALS_FD, 0, 0, 0);
    }
    /* The limit is the promise: a watchdog that could not confine itself
     * (a kernel without seccomp or Landlock cannot run a tier anyway)
     * still guards it. */
    if (drop_privileges() < 0) {
        static const char msg[] = "agentcage-watchdog: cannot drop privileges; guarding anyway\n";
        sys(SYS_write, 2, msg, sizeof(msg) - 1, 0);
    }
    fds[0].fd = PIDFD;
    fds[0].events = POLLIN;
    fds[1].fd = fd_open(EXEC_SOCKET_FD) ? EXEC_SOCKET_FD : -1;
    fds[1].events = POLLIN;
    fds[2].fd = -1;
    fds[2].events = POLLIN;
    if (fd_open(AUDIT_FD)) {
        struct pidfd_info info;
        memset(&info, 0, sizeof(info));
        if (sys(SYS_ioctl, PIDFD, PIDFD_GET_INFO, &info, 0) == 0 && info.tgid > 0) {
            init_pid = (int32_t)info.tgid;
            fds[2].fd = AUDIT_FD;
        }
    }
    if (fd_open(NOTIFY_FD))
        add_listener(NOTIFY_FD, 0);
    int timed_out = 0;
    for (;;) {
        int64_t left = timeout_ms && !awaiting_start ? started_ms + timeout_ms - now_ms() : 3600000;
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        long r = sys(SYS_poll, fds, n_fds, left > 3600000 ? 3600000 : left, 0);
        if (r < 0 && r != -EINTR)
            return 1;
        if (r <= 0)
            continue;
        if (fds[0].revents)
            break; /* the init exited (or the pidfd is bad: nothing to guard) */
        if (fds[1].revents & POLLIN)
            take_listener();
        if (fds[2].revents)
            read_audit();
        for (int i = FIRST_LISTENER; i < n_fds; i++) {
            if (fds[i].revents & POLLIN)
                answer(fds[i].fd);
            if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                /* no process uses that filter any more (nor its Landlock
                 * domain: both go with the last of them) */
                sys(SYS_close, fds[i].fd, 0, 0, 0);
                fd_pid[i] = fd_pid[n_fds - 1];
                fds[i--] = fds[--n_fds];
            }
        }
    }
    if (timed_out) {
        /* The marker first: the runtime's delete may stop us as soon as the
         * init is gone. */
        write_marker(timeout_ms);
        write_message("wall-clock timeout (io.agentcage.timeout)", (uint64_t)timeout_ms, " ms\n");
        long r = sys(SYS_pidfd_send_signal, PIDFD, SIGKILL, 0, 0);
        if (r < 0) /* already gone: not our doing */
            sys(SYS_unlinkat, STATE_DIRFD, "timeout", 0, 0);
        struct pollfd p = {.fd = PIDFD, .events = POLLIN};
        sys(SYS_poll, &p, 1, REAP_WAIT_MS, 0);
    }
    drain_audit();
    write_exit(started_ms);
    return 0;
}
