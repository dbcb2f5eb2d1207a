/* The tiers' precompiled seccomp filters: they exist, have sane sizes, and
 * a child that loads one gets the answers the tier promises. At tiers 1-3
 * the refusals go to a listener: the test answers them as the watchdog
 * does (EPERM) and counts them. Needs no root: tier_seccomp_load sets
 * no_new_privs, with which any task may load a filter. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/linux/tier_seccomp.h"
#include "tests/testlib.h"

TEST(filters_exist_for_every_tier)
{
    for (int t = 0; t < 4; t++) {
        for (int notify = 0; notify < 2; notify++) {
            const struct sock_filter *insns = notify ? tier_filters[t].notify_insns : tier_filters[t].insns;
            unsigned len = notify ? tier_filters[t].notify_len : tier_filters[t].len;
            CHECK(insns != NULL);
            /* more than a stub, yet the range tree's size (about 100: a
             * boundary per run of allowed numbers, where libseccomp's
             * program had a JEQ per syscall, over 400) */
            CHECK(len > 50);
            CHECK(len < 200);
            /* it starts by loading the arch (seccomp_data offset 4) and
             * ends with return instructions */
            CHECK_EQ_UINT(insns[0].code, BPF_LD | BPF_W | BPF_ABS);
            CHECK_EQ_UINT(insns[0].k, 4);
            CHECK_EQ_UINT(BPF_CLASS(insns[len - 1].code), BPF_RET);
            /* the listener variant returns USER_NOTIF where the other ERRNO */
            bool notif = false, eperm = false;
            for (unsigned i = 0; i < len; i++)
                if (insns[i].code == (BPF_RET | BPF_K)) {
                    notif |= insns[i].k == SECCOMP_RET_USER_NOTIF;
                    eperm |= insns[i].k == (SECCOMP_RET_ERRNO | EPERM);
                }
            CHECK(notify ? notif && !eperm : eperm && !notif);
        }
    }
    /* tier 0 differs in its socket rules */
    CHECK(tier_filters[0].len != tier_filters[1].len ||
          memcmp(tier_filters[0].insns, tier_filters[1].insns, tier_filters[0].len * sizeof(struct sock_filter)) != 0);
}

/* What the child saw: a syscall's result or -errno. */
enum probe {
    P_GETPID, P_OPENAT, P_WRITE, P_MOUNT, P_KEYCTL, P_BPF, P_PTRACE, P_CLONE3, P_UNSHARE_USER, P_SETNS,
    P_PACKET, P_RAW, P_INET_STREAM, P_INET6_DGRAM, P_UNIX, P_SOCKETPAIR, P_PERSONALITY32, P_PERSONALITY_QUERY,
    P_IO_URING, P_USERFAULTFD, P_LISTENER, P_OWN_FILTER, P_FORK, P_THREAD, P_I386, P_COUNT
};

/* the refusals among the probes (those the listener answers) */
#define REFUSED_PROBES 12

static void *thread_fn(void *arg) { return arg; }

static long probe_result(long r) { return r < 0 ? -errno : 0; }

static void run_probes(int tier, volatile long *out, int to_parent)
{
    ac_error_t err = NULL;
    int notify;
    if (tier_seccomp_load(tier, &notify, &err) < 0)
        _exit(3);
    if ((notify >= 0) != (tier >= 1))
        _exit(4);
    /* the listener to the parent, which answers as the watchdog does */
    char c = 'n';
    struct iovec iov = {.iov_base = &c, .iov_len = 1};
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (notify >= 0) {
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof(cbuf);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &notify, sizeof(int));
    }
    if (sendmsg(to_parent, &mh, 0) != 1)
        _exit(5);
    if (notify >= 0)
        close(notify);
    out[P_GETPID] = probe_result(syscall(SYS_getpid));
    int fd = openat(AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC);
    out[P_OPENAT] = probe_result(fd);
    out[P_WRITE] = probe_result(write(fd, "x", 1));
    out[P_MOUNT] = probe_result(mount("none", "/tmp", "tmpfs", 0, NULL));
    out[P_KEYCTL] = probe_result(syscall(SYS_keyctl, 0, 0, 0, 0, 0));
    out[P_BPF] = probe_result(syscall(SYS_bpf, 0, NULL, 0));
    out[P_PTRACE] = probe_result(syscall(SYS_ptrace, 0, 0, 0, 0));
    out[P_CLONE3] = probe_result(syscall(SYS_clone3, NULL, 0));
    out[P_UNSHARE_USER] = probe_result(unshare(CLONE_NEWUSER));
    out[P_SETNS] = probe_result(setns(0, 0));
    out[P_PACKET] = probe_result(socket(AF_PACKET, SOCK_RAW, 0));
    out[P_RAW] = probe_result(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, 1));
    out[P_INET_STREAM] = probe_result(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    out[P_INET6_DGRAM] = probe_result(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    out[P_UNIX] = probe_result(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int sv[2];
    out[P_SOCKETPAIR] = probe_result(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
    out[P_PERSONALITY32] = probe_result(syscall(SYS_personality, PER_LINUX32));
    out[P_PERSONALITY_QUERY] = probe_result(syscall(SYS_personality, 0xffffffffUL));
    out[P_IO_URING] = probe_result(syscall(SYS_io_uring_setup, 1, NULL));
    out[P_USERFAULTFD] = probe_result(syscall(SYS_userfaultfd, 0));
    /* a filter of its own: yes, but none with a listener of its own (it
     * would be asked first for what both refuse) */
    struct sock_filter allow_all = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog own = {.len = 1, .filter = &allow_all};
    out[P_LISTENER] = probe_result(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &own));
    out[P_OWN_FILTER] = probe_result(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &own));
    pid_t pid = fork();
    if (pid == 0)
        _exit(7);
    int status = 0;
    out[P_FORK] = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 7
                      ? 0 : -EINVAL;
    /* glibc tries clone3 first and falls back to clone on ENOSYS */
    pthread_t th;
    out[P_THREAD] = pthread_create(&th, NULL, thread_fn, NULL) == 0 && pthread_join(th, NULL) == 0 ? 0 : -EINVAL;
    /* the i386 ABI (int 0x80) from a 64-bit process: killed */
    pid = fork();
    if (pid == 0) {
        long r;
        signal(SIGSEGV, SIG_DFL); /* (a sanitizer build's handler would make it an exit) */
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); /* i386 getpid */
        _exit(0);
    }
    status = 0;
    out[P_I386] = pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    _exit(0);
}

/* Answer the child's refusals through the listener until it is gone:
 * EPERM, as the watchdog does; how many. */
static long answer_refusals(int notify, pid_t child)
{
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    long n = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = notify, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
        if (poll(p, 2, 10000) <= 0 || (p[1].revents & POLLIN && !(p[0].revents & POLLIN)))
            break;
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req));
        if (ioctl(notify, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
            continue;
        struct seccomp_notif_resp resp = {.id = req.id, .error = -EPERM};
        if (ioctl(notify, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0)
            n++;
    }
    close(pidfd);
    return n;
}

/* Run the probes in a child under tier's filter; results in out, the
 * refusals the listener answered in *answered. */
static int probe_tier(int tier, long *out, long *answered)
{
    volatile long *shared = mmap(NULL, P_COUNT * sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int sv[2];
    if (shared == MAP_FAILED || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    for (int i = 0; i < P_COUNT; i++)
        shared[i] = 12345;
    pid_t pid = fork();
    if (pid == 0)
        run_probes(tier, shared, sv[1]);
    close(sv[1]);
    char c;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &c, .iov_len = 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    int notify = -1;
    if (recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) == 1 && CMSG_FIRSTHDR(&mh))
        memcpy(&notify, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
    close(sv[0]);
    *answered = notify >= 0 ? answer_refusals(notify, pid) : 0;
    if (notify >= 0)
        close(notify);
    int status = 0;
    waitpid(pid, &status, 0);
    for (int i = 0; i < P_COUNT; i++)
        out[i] = shared[i];
    munmap((void *)shared, P_COUNT * sizeof(long));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* How an i386 syscall (int 0x80) ends without any filter: 0 when it runs.
 * A kernel without the i386 entry (ia32 emulation off, as in the PVM guest
 * seen on 2026-12-07) kills the caller with SIGSEGV itself, filter or not. */
static int i386_without_filter(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        long r;
        signal(SIGSEGV, SIG_DFL); /* (as in run_probes) */
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); /* i386 getpid */
        _exit(0);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void check_common(const long *r)
{
    CHECK_EQ_INT(r[P_GETPID], 0);
    CHECK_EQ_INT(r[P_OPENAT], 0);
    CHECK_EQ_INT(r[P_WRITE], 0);
    CHECK_EQ_INT(r[P_MOUNT], -EPERM);
    CHECK_EQ_INT(r[P_KEYCTL], -EPERM);
    CHECK_EQ_INT(r[P_BPF], -EPERM);
    CHECK_EQ_INT(r[P_PTRACE], -EPERM);
    CHECK_EQ_INT(r[P_CLONE3], -ENOSYS);
    CHECK_EQ_INT(r[P_UNSHARE_USER], -EPERM);
    CHECK_EQ_INT(r[P_SETNS], -EPERM);
    CHECK_EQ_INT(r[P_PACKET], -EPERM);
    CHECK_EQ_INT(r[P_RAW], -EPERM);
    CHECK_EQ_INT(r[P_UNIX], 0);
    CHECK_EQ_INT(r[P_SOCKETPAIR], 0);
    CHECK_EQ_INT(r[P_PERSONALITY32], -EPERM);
    CHECK_EQ_INT(r[P_PERSONALITY_QUERY], 0);
    CHECK_EQ_INT(r[P_IO_URING], -EPERM);
    CHECK_EQ_INT(r[P_USERFAULTFD], -EPERM);
    CHECK_EQ_INT(r[P_LISTENER], -EPERM);
    CHECK_EQ_INT(r[P_OWN_FILTER], 0);
    CHECK_EQ_INT(r[P_FORK], 0);
    CHECK_EQ_INT(r[P_THREAD], 0);
    /* the filter kills it where the kernel would run it */
    int bare = i386_without_filter();
    CHECK_EQ_INT(r[P_I386], bare == 0 ? SIGSYS : bare);
}

TEST(tier0_filter_refuses_ip_sockets)
{
    long r[P_COUNT], answered;
    REQUIRE(probe_tier(0, r, &answered) == 0);
    check_common(r);
    CHECK_EQ_INT(r[P_INET_STREAM], -EPERM);
    CHECK_EQ_INT(r[P_INET6_DGRAM], -EPERM);
    CHECK_EQ_INT(answered, 0);
}

TEST(tier1_to_3_filters_allow_ip_but_not_raw)
{
    for (int t = 1; t < 4; t++) {
        long r[P_COUNT], answered;
        REQUIRE(probe_tier(t, r, &answered) == 0);
        check_common(r);
        CHECK_EQ_INT(r[P_INET_STREAM], 0);
        CHECK_EQ_INT(r[P_INET6_DGRAM], 0);
        /* every refusal went through the listener, and only refusals */
        CHECK_EQ_INT(answered, REFUSED_PROBES);
    }
}

/* Each tier's EPERM variant loaded as it is, by the kernel itself, in a
 * child (tier_seccomp_load takes it at tiers 1-3 only when a listener
 * cannot be had): the range tree's leaves and edges, its argument blocks. */
enum edge {
    E_READ, E_GETPPID, E_MOUNT, E_PAST_LAST, E_NR_MINUS_1, E_CLONE3, E_UNIX, E_UNIX_HIGH_WORD, E_PACKET,
    E_INET_STREAM, E_INET_RAW, E_CLONE_NEWNET, E_SECCOMP_LISTENER, E_X32, E_COUNT
};

static void run_edges(const struct tier_filter *f, volatile long *out)
{
    struct sock_fprog prog = {.len = f->len, .filter = (struct sock_filter *)f->insns};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
        _exit(3);
    /* nr 0, the tree's first interval */
    out[E_READ] = probe_result(syscall(SYS_read, -1, NULL, 0));
    out[E_GETPPID] = probe_result(syscall(SYS_getppid));
    out[E_MOUNT] = probe_result(syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
    /* no syscall yet: refused, where the kernel alone says ENOSYS */
    out[E_PAST_LAST] = probe_result(syscall(1000));
    /* the one number with bit 30 that is not killed (refused) */
    out[E_NR_MINUS_1] = probe_result(syscall(-1L));
    out[E_CLONE3] = probe_result(syscall(SYS_clone3, NULL, 0));
    long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    out[E_UNIX] = probe_result(fd);
    /* AF_UNIX to the kernel (an int), not to the filter (64 bits) */
    out[E_UNIX_HIGH_WORD] = probe_result(syscall(SYS_socket, AF_UNIX | (1UL << 32), SOCK_STREAM | SOCK_CLOEXEC, 0));
    out[E_PACKET] = probe_result(syscall(SYS_socket, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
    out[E_INET_STREAM] = probe_result(syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    out[E_INET_RAW] = probe_result(syscall(SYS_socket, AF_INET, SOCK_RAW | SOCK_CLOEXEC, 1));
    /* clone with a namespace flag: refused before it forks (were it not,
     * the child would leave at once) */
    long child = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, NULL, NULL, NULL, 0);
    if (child == 0)
        _exit(0);
    if (child > 0)
        waitpid((pid_t)child, NULL, 0);
    out[E_CLONE_NEWNET] = probe_result(child);
    struct sock_filter allow_all = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog own = {.len = 1, .filter = &allow_all};
    out[E_SECCOMP_LISTENER] =
        probe_result(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &own));
    /* x32's getpid (bit 30): the process is killed */
    pid_t pid = fork();
    if (pid == 0) {
        syscall(SYS_getpid | 0x40000000L);
        _exit(0);
    }
    int status = 0;
    out[E_X32] = pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    _exit(0);
}

TEST(every_tier_filter_answers_at_the_range_tree_edges)
{
    for (int t = 0; t < 4; t++) {
        volatile long *r = mmap(NULL, E_COUNT * sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        REQUIRE(r != MAP_FAILED);
        for (int i = 0; i < E_COUNT; i++)
            r[i] = 12345;
        pid_t pid = fork();
        if (pid == 0)
            run_edges(&tier_filters[t], r);
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK_EQ_INT(r[E_READ], -EBADF);
        CHECK_EQ_INT(r[E_GETPPID], 0);
        CHECK_EQ_INT(r[E_MOUNT], -EPERM);
        CHECK_EQ_INT(r[E_PAST_LAST], -EPERM);
        CHECK_EQ_INT(r[E_NR_MINUS_1], -EPERM);
        CHECK_EQ_INT(r[E_CLONE3], -ENOSYS);
        CHECK_EQ_INT(r[E_UNIX], 0);
        CHECK_EQ_INT(r[E_UNIX_HIGH_WORD], -EPERM);
        CHECK_EQ_INT(r[E_PACKET], -EPERM);
        CHECK_EQ_INT(r[E_INET_STREAM], t == 0 ? -EPERM : 0);
        CHECK_EQ_INT(r[E_INET_RAW], -EPERM);
        CHECK_EQ_INT(r[E_CLONE_NEWNET], -EPERM);
        CHECK_EQ_INT(r[E_SECCOMP_LISTENER], -EPERM);
        CHECK_EQ_INT(r[E_X32], SIGSYS);
        munmap((void *)r, E_COUNT * sizeof(long));
    }
}

/* The kernel's seccomp action cache (5.11+): when a filter is loaded, the
 * kernel walks it once per syscall number with only nr and arch known;
 * where that walk reaches RET ALLOW without loading anything else
 * (arguments, instruction_pointer) the syscall is marked allowed, and from
 * then on it never runs the BPF of this filter or of any under it. What a
 * tier filter costs a hot syscall depends on this, so each filter is walked
 * here the way the kernel does (only the instructions it can follow; any
 * other ends the walk as not cacheable). */
enum walk { WALK_ALLOW, WALK_REFUSE, WALK_READS_DATA };

static enum walk const_walk(const struct sock_filter *f, unsigned len, unsigned nr, unsigned arch, bool *read_ip)
{
    unsigned a = 0;
    for (unsigned pc = 0; pc < len; pc++) {
        const struct sock_filter *in = &f[pc];
        switch (in->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (in->k == offsetof(struct seccomp_data, nr))
                a = nr;
            else if (in->k == offsetof(struct seccomp_data, arch))
                a = arch;
            else {
                *read_ip |= in->k >= offsetof(struct seccomp_data, instruction_pointer) &&
                            in->k < offsetof(struct seccomp_data, args);
                return WALK_READS_DATA;
            }
            break;
        case BPF_RET | BPF_K:
            return in->k == SECCOMP_RET_ALLOW ? WALK_ALLOW : WALK_REFUSE;
        case BPF_JMP | BPF_JA:
            pc += in->k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += a == in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += a >= in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += a > in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += (a & in->k) ? in->jt : in->jf;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= in->k;
            break;
        default:
            return WALK_READS_DATA; /* an instruction the kernel's walk does not follow */
        }
    }
    return WALK_REFUSE; /* ran off the end: the kernel rejects such a filter anyway */
}

/* x86_64 syscall numbers go up to ~470 today; 1024 leaves room */
#define WALK_NRS 1024

TEST(filters_leave_hot_syscalls_to_the_action_cache)
{
    /* the only syscalls whose rules look at an argument (syscalls.list):
     * every other allowed one is cached */
    static const int arg_checked[] = {SYS_socket, SYS_clone, SYS_personality, SYS_unshare, SYS_seccomp};
    static const int hot[] = {SYS_getppid, SYS_getpid, SYS_read, SYS_write, SYS_pread64, SYS_openat, SYS_close,
                              SYS_fstat, SYS_newfstatat, SYS_statx, SYS_lseek, SYS_fcntl, SYS_ioctl, SYS_mmap,
                              SYS_munmap, SYS_mprotect, SYS_madvise, SYS_brk, SYS_futex, SYS_rt_sigprocmask,
                              SYS_clock_gettime, SYS_wait4, SYS_poll, SYS_ppoll, SYS_epoll_wait, SYS_sched_yield,
                              SYS_getrandom, SYS_execve};
    for (int t = 0; t < 4; t++) {
        for (int notify = 0; notify < 2; notify++) {
            const struct sock_filter *insns = notify ? tier_filters[t].notify_insns : tier_filters[t].insns;
            unsigned len = notify ? tier_filters[t].notify_len : tier_filters[t].len;
            bool read_ip = false;
            int allowed = 0;
            for (unsigned nr = 0; nr < WALK_NRS; nr++) {
                enum walk w = const_walk(insns, len, nr, AUDIT_ARCH_X86_64, &read_ip);
                bool expect_args = false;
                for (size_t i = 0; i < sizeof(arg_checked) / sizeof(arg_checked[0]); i++)
                    expect_args |= (int)nr == arg_checked[i];
                /* tier 0 allows socketpair for AF_UNIX only */
                expect_args |= t == 0 && nr == SYS_socketpair;
                if (expect_args != (w == WALK_READS_DATA))
                    testlib_fail(__FILE__, __LINE__, "tier %d %s: syscall %u %s its arguments", t,
                                 notify ? "notify" : "eperm", nr, expect_args ? "does not read" : "reads");
                allowed += w == WALK_ALLOW;
                /* x32 numbers (bit 30) and other ABIs are refused as constants */
                CHECK(const_walk(insns, len, nr | 0x40000000u, AUDIT_ARCH_X86_64, &read_ip) == WALK_REFUSE);
                CHECK(const_walk(insns, len, nr, AUDIT_ARCH_I386, &read_ip) == WALK_REFUSE);
            }
            for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
                if (const_walk(insns, len, (unsigned)hot[i], AUDIT_ARCH_X86_64, &read_ip) != WALK_ALLOW)
                    testlib_fail(__FILE__, __LINE__, "tier %d: hot syscall %d not cached", t, hot[i]);
            /* an allowlist of a few hundred; the cache holds them all */
            CHECK(allowed > 250);
            /* where a path loads data, it is an argument, never the caller's address */
            CHECK(!read_ip);
        }
    }
}
