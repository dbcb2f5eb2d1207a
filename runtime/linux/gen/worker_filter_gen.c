/* Build-time generator of the egress proxy worker's seccomp filter.
 *
 *   worker-filter-gen > build/gen/worker_filter.h
 *
 * libseccomp compiles the filter here, once, and helper_sandbox_enter
 * loads the BPF as is with one seccomp(2) call: compiling it at each
 * container's start cost the proxy's worker about 0.3 ms of its time to
 * ready (issue 20). The worker's syscalls: its threads (clone only with
 * CLONE_THREAD; clone3, whose flags a filter cannot see, answers ENOSYS
 * and glibc falls back), memory, the sockets it accepts and makes (inet
 * only; unix and netlink answer EAFNOSUPPORT), getaddrinfo's files and
 * DNS over UDP and TCP, clocks. Any other syscall, and any other ABI
 * (i386, x32), kills it. */
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "runtime/linux/gen/filter_export.h"

static const char *const allowed[] = {
    "read", "write", "readv", "writev", "pread64", "close", "poll", "ppoll", "accept4", "connect", "shutdown",
    "recvfrom", "recvmsg", "recvmmsg", "sendto", "sendmsg", "sendmmsg", "setsockopt", "getsockopt",
    "getsockname", "getpeername", "fcntl", "openat", "newfstatat", "fstat", "statx", "lseek", "mmap", "munmap",
    "mprotect", "mremap", "madvise", "brk", "futex", "set_robust_list", "rseq", "rt_sigprocmask",
    "rt_sigaction", "rt_sigreturn", "sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime",
    "gettimeofday", "getrandom", "getpid", "gettid", "uname", "sysinfo", "sched_getaffinity",
    "restart_syscall", "exit", "exit_group",
};

const char filter_generator[] = "worker-filter-gen";
#define fail filter_gen_fail

int main(void)
{
    scmp_filter_ctx ctx = filter_gen_x86_64();
    filter_gen_allow(ctx, allowed, sizeof(allowed) / sizeof(allowed[0]));
    int rc;
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, filter_gen_nr("clone"), 1,
                               SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD))) < 0)
        fail("clone", rc);
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), filter_gen_nr("clone3"), 0)) < 0)
        fail("clone3", rc);
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, filter_gen_nr("ioctl"), 1, SCMP_A1(SCMP_CMP_EQ, FIONREAD))) < 0)
        fail("ioctl", rc);
    static const int inet[] = {AF_INET, AF_INET6}, refused[] = {AF_UNIX, AF_NETLINK};
    for (size_t i = 0; i < 2; i++)
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, filter_gen_nr("socket"), 1, SCMP_A0(SCMP_CMP_EQ, inet[i]))) < 0 ||
            (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), filter_gen_nr("socket"), 1,
                                   SCMP_A0(SCMP_CMP_EQ, refused[i]))) < 0)
            fail("socket", rc);
    return filter_export_c(ctx, "worker_filter", "runtime/linux/gen/worker_filter_gen.c");
}
