/* The helpers' seccomp filters as the build generated them (the egress
 * proxy's worker: runtime/linux/gen/worker_filter_gen.c; the watchdog:
 * runtime/watchdog/filter_gen.c): a child loads one and makes syscalls,
 * and the parent reads what each returned or how the child died. Needs no
 * root: with no_new_privs any task may load a filter. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testlib.h"
#include "watchdog_filter.h" /* generated: build/gen/ */
#include "worker_filter.h"

struct call {
    long nr, a0, a1, a2;
};

/* Runs calls[] in a child under the filter; out[i] gets each one's result
 * (>= 0, or -errno) until the child dies. Returns the child's wait status. */
static int run_under(const struct sock_filter *f, size_t len, const struct call *calls, size_t n, long *out,
                     size_t *got)
{
    int fds[2];
    *got = 0;
    if (pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct sock_fprog prog = {.len = (unsigned short)len, .filter = (struct sock_filter *)f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
            _exit(100);
        for (size_t i = 0; i < n; i++) {
            long r = syscall(calls[i].nr, calls[i].a0, calls[i].a1, calls[i].a2);
            if (r < 0)
                r = -errno;
            if (write(fds[1], &r, sizeof(r)) != sizeof(r))
                _exit(101);
        }
        syscall(SYS_exit_group, 0);
    }
    close(fds[1]);
    while (*got < n && read(fds[0], &out[*got], sizeof(long)) == sizeof(long))
        (*got)++;
    close(fds[0]);
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
}

/* The kernel's action cache is left empty on purpose (filter_export.h):
 * the first instruction loads instruction_pointer, which its emulation
 * does not follow, and the second is libseccomp's arch load over it. */
static void check_starts_without_cache(const struct sock_filter *f, size_t len)
{
    REQUIRE(len > 2);
    CHECK_EQ_UINT(f[0].code, BPF_LD | BPF_W | BPF_ABS);
    CHECK_EQ_UINT(f[0].k, offsetof(struct seccomp_data, instruction_pointer));
    CHECK_EQ_UINT(f[1].code, BPF_LD | BPF_W | BPF_ABS);
    CHECK_EQ_UINT(f[1].k, offsetof(struct seccomp_data, arch));
}

TEST(worker_filter_starts_with_a_load_the_action_cache_cannot_follow)
{
    check_starts_without_cache(worker_filter, sizeof(worker_filter) / sizeof(worker_filter[0]));
}

TEST(watchdog_filter_starts_with_a_load_the_action_cache_cannot_follow)
{
    check_starts_without_cache(watchdog_filter, sizeof(watchdog_filter) / sizeof(watchdog_filter[0]));
}

TEST(worker_filter_allows_inet_sockets_refuses_unix_and_netlink_and_kills_the_rest)
{
    const struct call calls[] = {
        {SYS_getpid, 0, 0, 0},
        {SYS_socket, AF_INET, SOCK_STREAM, 0},
        {SYS_socket, AF_INET6, SOCK_DGRAM, 0},
        {SYS_socket, AF_UNIX, SOCK_STREAM, 0},
        {SYS_socket, AF_NETLINK, SOCK_RAW, 0},
        {SYS_clone3, 0, 0, 0},
        {SYS_read, -1, 0, 0},
        {SYS_mkdir, (long)"/nonexistent-agentcage-test", 0700, 0}, /* not on the list: killed */
        {SYS_getpid, 0, 0, 0},
    };
    long r[9];
    size_t got;
    int status = run_under(worker_filter, sizeof(worker_filter) / sizeof(worker_filter[0]), calls, 9, r, &got);
    REQUIRE_EQ_INT((int)got, 7);
    CHECK(r[0] > 0);
    CHECK(r[1] >= 0);
    CHECK(r[2] >= 0);
    CHECK_EQ_INT((int)r[3], -EAFNOSUPPORT);
    CHECK_EQ_INT((int)r[4], -EAFNOSUPPORT);
    CHECK_EQ_INT((int)r[5], -ENOSYS);
    CHECK_EQ_INT((int)r[6], -EBADF);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS);
}

TEST(watchdog_filter_allows_its_waits_and_kills_anything_else)
{
    struct timespec ts;
    const struct call calls[] = {
        {SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0},
        {SYS_close, -1, 0, 0},
        {SYS_getpid, 0, 0, 0}, /* not on the list: killed */
        {SYS_close, -1, 0, 0},
    };
    long r[4];
    size_t got;
    int status = run_under(watchdog_filter, sizeof(watchdog_filter) / sizeof(watchdog_filter[0]), calls, 4, r, &got);
    /* the child's own write of each result is allowed (the list has write) */
    REQUIRE_EQ_INT((int)got, 2);
    CHECK_EQ_INT((int)r[0], 0);
    CHECK_EQ_INT((int)r[1], -EBADF);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS);
}
