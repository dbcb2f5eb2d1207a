/* The tiers' precompiled seccomp filters: they exist, have sane sizes, and
 * a child that loads one gets the answers the tier promises. Needs no root:
 * tier_seccomp_load sets no_new_privs, with which any task may load a
 * filter. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/linux/tier_seccomp.h"
#include "tests/testlib.h"

TEST(filters_exist_for_every_tier)
{
    for (int t = 0; t < 4; t++) {
        const struct tier_filter *f = &tier_filters[t];
        CHECK(f->insns != NULL);
        /* more than a stub, within BPF_MAXINSNS */
        CHECK(f->len > 100);
        CHECK(f->len <= BPF_MAXINSNS);
        /* libseccomp starts by loading the arch (seccomp_data offset 4)
         * and ends with return instructions */
        CHECK_EQ_UINT(f->insns[0].code, BPF_LD | BPF_W | BPF_ABS);
        CHECK_EQ_UINT(f->insns[0].k, 4);
        CHECK_EQ_UINT(BPF_CLASS(f->insns[f->len - 1].code), BPF_RET);
    }
    /* tier 0 differs in its socket rules */
    CHECK(tier_filters[0].len != tier_filters[1].len ||
          memcmp(tier_filters[0].insns, tier_filters[1].insns, tier_filters[0].len * sizeof(struct sock_filter)) != 0);
}

/* What the child saw: a syscall's result or -errno. */
enum probe {
    P_GETPID, P_OPENAT, P_WRITE, P_MOUNT, P_KEYCTL, P_BPF, P_PTRACE, P_CLONE3, P_UNSHARE_USER, P_SETNS,
    P_PACKET, P_RAW, P_INET_STREAM, P_INET6_DGRAM, P_UNIX, P_SOCKETPAIR, P_PERSONALITY32, P_PERSONALITY_QUERY,
    P_IO_URING, P_USERFAULTFD, P_FORK, P_THREAD, P_I386, P_COUNT
};

static void *thread_fn(void *arg) { return arg; }

static long probe_result(long r) { return r < 0 ? -errno : 0; }

static void run_probes(int tier, volatile long *out)
{
    ac_error_t err = NULL;
    if (tier_seccomp_load(tier, &err) < 0)
        _exit(3);
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
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); /* i386 getpid */
        _exit(0);
    }
    status = 0;
    out[P_I386] = pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    _exit(0);
}

/* Run the probes in a child under tier's filter; results in out. */
static int probe_tier(int tier, long *out)
{
    volatile long *shared = mmap(NULL, P_COUNT * sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return -1;
    for (int i = 0; i < P_COUNT; i++)
        shared[i] = 12345;
    pid_t pid = fork();
    if (pid == 0)
        run_probes(tier, shared);
    int status = 0;
    waitpid(pid, &status, 0);
    for (int i = 0; i < P_COUNT; i++)
        out[i] = shared[i];
    munmap((void *)shared, P_COUNT * sizeof(long));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
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
    CHECK_EQ_INT(r[P_FORK], 0);
    CHECK_EQ_INT(r[P_THREAD], 0);
    CHECK_EQ_INT(r[P_I386], SIGSYS);
}

TEST(tier0_filter_refuses_ip_sockets)
{
    long r[P_COUNT];
    REQUIRE(probe_tier(0, r) == 0);
    check_common(r);
    CHECK_EQ_INT(r[P_INET_STREAM], -EPERM);
    CHECK_EQ_INT(r[P_INET6_DGRAM], -EPERM);
}

TEST(tier1_to_3_filters_allow_ip_but_not_raw)
{
    for (int t = 1; t < 4; t++) {
        long r[P_COUNT];
        REQUIRE(probe_tier(t, r) == 0);
        check_common(r);
        CHECK_EQ_INT(r[P_INET_STREAM], 0);
        CHECK_EQ_INT(r[P_INET6_DGRAM], 0);
    }
}
