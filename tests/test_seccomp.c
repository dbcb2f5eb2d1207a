/* config.json seccomp profiles and runc's -ENOSYS stub: a child loads a
 * profile and reports what its syscalls return. Needs no root: with
 * no_new_privs any task may load a filter. */
#include <errno.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/linux/seccomp.h"
#include "tests/testlib.h"

/* What syscall numbers nrs[] return (0 or -errno) in a child under the
 * profile; false if the child could not load it. */
static bool errnos_under(const struct oci_seccomp *profile, const long *nrs, size_t n, int *out)
{
    int fds[2];
    if (pipe(fds) < 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct seccomp_prepared *p = NULL;
        ac_error_t err = NULL;
        int notify;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_prepare(profile, &p, &err) < 0 ||
            seccomp_load_prepared(p, &notify, &err) < 0)
            _exit(1);
        for (size_t i = 0; i < n; i++) {
            int e = syscall(nrs[i], -1L, 0L, 0L) < 0 ? -errno : 0;
            if (write(fds[1], &e, sizeof(e)) != sizeof(e))
                _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < n && read(fds[0], &out[got], sizeof(int)) == sizeof(int))
        got++;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return got == n && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* what the child needs, and what a sanitizer's runtime does in it (an
 * error report's alternate stack, its thread id, its allocator's mmap); all
 * below rseq (334), the last named */
static char *allowed_names[] = { "read",     "write",       "close", "exit",   "exit_group", "getpid",
                                 "sigaltstack", "gettid",   "mmap",  "munmap", "madvise",    "mprotect",
                                 "rt_sigprocmask", "rseq" };
static char *x86_64_arch[] = { "SCMP_ARCH_X86_64", "SCMP_ARCH_X86" };

TEST(errno_default_gives_enosys_above_the_last_named_syscall)
{
    struct oci_seccomp_syscall allow = { .names = allowed_names, .n_names = sizeof(allowed_names) / sizeof(*allowed_names), .action = SECCOMP_ACTION_ALLOW };
    struct oci_seccomp profile = { .default_action = SECCOMP_ACTION_ERRNO, .architectures = x86_64_arch,
                                   .n_architectures = 2, .syscalls = &allow, .n_syscalls = 1 };
    /* rseq (334) is the last named: getpid allowed, mkdir below it EPERM,
     * clone3 (435) and 1000 above it ENOSYS */
    long nrs[] = { SYS_getpid, SYS_mkdir, SYS_clone3, 1000 };
    int e[4];
    REQUIRE(errnos_under(&profile, nrs, 4, e));
    CHECK(e[0] >= 0);
    CHECK_EQ_INT(e[1], -EPERM);
    CHECK_EQ_INT(e[2], -ENOSYS);
    CHECK_EQ_INT(e[3], -ENOSYS);
}

TEST(errno_default_with_its_own_errno_keeps_it_below_the_last)
{
    struct oci_seccomp_syscall allow = { .names = allowed_names, .n_names = sizeof(allowed_names) / sizeof(*allowed_names), .action = SECCOMP_ACTION_ALLOW };
    struct oci_seccomp profile = { .default_action = SECCOMP_ACTION_ERRNO, .has_default_errno_ret = true,
                                   .default_errno_ret = ENXIO, .syscalls = &allow, .n_syscalls = 1 };
    /* no architectures listed: the native one still gets the stub */
    long nrs[] = { SYS_mkdir, 1000 };
    int e[2];
    REQUIRE(errnos_under(&profile, nrs, 2, e));
    CHECK_EQ_INT(e[0], -ENXIO);
    CHECK_EQ_INT(e[1], -ENOSYS);
}

TEST(allow_default_has_no_stub)
{
    static char *mkdir_name[] = { "mkdir" };
    struct oci_seccomp_syscall deny = { .names = mkdir_name, .n_names = 1, .action = SECCOMP_ACTION_ERRNO };
    struct oci_seccomp profile = { .default_action = SECCOMP_ACTION_ALLOW, .syscalls = &deny, .n_syscalls = 1 };
    /* 1000 is the kernel's own ENOSYS; getpid (39, below mkdir) allowed */
    long nrs[] = { SYS_mkdir, SYS_getpid, 1000 };
    int e[3];
    REQUIRE(errnos_under(&profile, nrs, 3, e));
    CHECK_EQ_INT(e[0], -EPERM);
    CHECK(e[1] >= 0);
    CHECK_EQ_INT(e[2], -ENOSYS);
}
