/* A helper started detached, without posix_spawn (spawn.h).
 *
 * glibc's posix_spawn queries and resets the disposition of all 64 signals
 * in its child (121 rt_sigaction calls here) because the child shares the
 * parent's memory until execve. This child instead runs with every signal
 * blocked, so no handler of ours can run in it, and leaves the mask to the
 * program it execs: about 15 syscalls between clone and execve instead of
 * 140, on the path of every tiered container's start (the watchdog). */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/linux/spawn.h"
#include "runtime/util/utils.h"

struct spawn_args {
    const char *path;
    char *const *argv;
    const int *high; /* the fds, above every target */
    int n_fds;
    int error;       /* set by the child when it fails; we share its memory */
};

/* Runs on its own stack in our memory while we wait (CLONE_VFORK): only
 * plain syscalls, and never a return into our frames. */
static int spawn_child(void *arg)
{
    struct spawn_args *a = arg;
    static char *const empty_env[] = {NULL};
    if (setsid() < 0)
        goto fail;
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd < 0)
        goto fail;
    for (int fd = 0; fd < 3; fd++)
        if (fd != null_fd && dup2(null_fd, fd) < 0)
            goto fail;
    /* (null_fd, when above 2, is replaced or closed below) */
    for (int i = 0; i < a->n_fds; i++) {
        if (a->high[i] >= 0 ? dup2(a->high[i], 3 + i) < 0 : close(3 + i) < 0 && errno != EBADF)
            goto fail;
    }
    if (syscall(SYS_close_range, 3 + a->n_fds, ~0U, 0) < 0 || chdir("/") < 0)
        goto fail;
    execve(a->path, a->argv, empty_env);
fail:
    a->error = errno ? errno : EINVAL;
    _exit(127);
}

int spawn_detached(const char *path, char *const argv[], const int *fds, int n_fds, pid_t *pid, ac_error_t *err)
{
    if (n_fds > SPAWN_MAX_FDS)
        return ac_error(err, EINVAL, "start `%s`: too many fds", path);
    int high[SPAWN_MAX_FDS];
    int ret = -1;
    for (int i = 0; i < n_fds; i++)
        high[i] = -1;
    /* every fd above every target first, so no dup2 meets its own target */
    for (int i = 0; i < n_fds; i++)
        if (fds[i] >= 0 && (high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3 + SPAWN_MAX_FDS)) < 0) {
            ac_error(err, errno, "start `%s`: dup an fd", path);
            goto out;
        }
    struct spawn_args a = {.path = path, .argv = argv, .high = high, .n_fds = n_fds};
    /* the child's stack until it execs: ours is suspended meanwhile */
    char stack[16384] __attribute__((aligned(16)));
    /* by the raw syscall: glibc's wrapper keeps its own two signals open */
    uint64_t all = ~0ULL, old = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(all));
    pid_t child = clone(spawn_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    int clone_errno = errno;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
    if (child < 0) {
        ac_error(err, clone_errno, "start `%s`", path);
        goto out;
    }
    if (a.error) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
        ac_error(err, a.error, "start `%s`", path);
        goto out;
    }
    *pid = child;
    ret = 0;
out:
    for (int i = 0; i < n_fds; i++)
        if (high[i] >= 0)
            close(high[i]);
    return ret;
}
