/* start and delete: the steps after create. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "container.h"
#include "hooks.h"
#include "utils.h"

int container_load_config(const struct global_opts *g, const char *id, struct oci_spec **spec, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("%s/%s/config.json", g->root, id);
    return spec_load(path, spec, err);
}

/* Hooks whose failure only warns (poststart, poststop), as runtime-spec
 * says. */
static void run_hooks_warn(const struct global_opts *g, const struct container_state *st, enum oci_hook_kind kind,
                           enum container_status status)
{
    cleanup_spec struct oci_spec *spec = NULL;
    ac_error_t err = NULL;
    if (container_load_config(g, st->id, &spec, &err) < 0) {
        ac_warn("%s hooks not run: %s", oci_hook_kind_names[kind], err->msg);
        ac_error_free(&err);
        return;
    }
    if (spec->hooks.n_hooks[kind] == 0)
        return;
    cleanup_free char *state = container_hook_state(st, status);
    if (hooks_run(kind, spec->hooks.hooks[kind], spec->hooks.n_hooks[kind], state, &err) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        ac_warn("%s", msg);
        dprintf(2, "agentcage: warning: %s\n", msg);
        ac_error_free(&err);
    }
}

int container_start(const struct global_opts *g, const char *id, ac_error_t *err)
{
    cleanup_close int lock = -1;
    if (state_lock(g, id, &lock, err) < 0)
        return -1;
    cleanup_state struct container_state *st = NULL;
    if (state_load(g, id, &st, err) < 0)
        return -1;
    enum container_status status = state_status(g, st);
    if (status != STATUS_CREATED)
        return ac_error(err, 0, "cannot start container `%s`: it is %s, not created", id,
                        container_status_names[status]);
    cleanup_free char *fifo = xasprintf("%s/%s/exec.fifo", g->root, id);
    /* The child holds the fifo open for reading: a non-blocking open for
     * writing succeeds only while it is alive. */
    cleanup_close int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "start `%s`: the container process is gone", id);
    if (write(fd, "0", 1) != 1)
        return ac_error(err, errno, "start `%s`: write the exec fifo", id);
    unlink(fifo);
    /* Wait until the child has exec'd (its close-on-exec read end closes:
     * POLLERR on our write end), so poststart hooks run after the user
     * process is executed, as runtime-spec says. */
    struct pollfd pfd = {.fd = fd, .events = 0};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    run_hooks_warn(g, st, HOOK_POSTSTART, STATUS_RUNNING);
    return 0;
}

/* Wait until pid (checked by start time) is gone; bounded. */
static bool wait_gone(pid_t pid, unsigned long long start, int timeout_ms)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        if (process_start_time(pid) != start) {
            close(pidfd);
            return true;
        }
        struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
        int r = poll(&pfd, 1, timeout_ms);
        close(pidfd);
        /* POLLIN on a pidfd: exited (possibly a zombie not yet reaped) */
        return r > 0;
    }
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        unsigned long long now = process_start_time(pid);
        if (now == 0 || now != start)
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Kill everything of the container and wait for its init to be gone. */
static int kill_container(const struct container_state *st, enum container_status status, ac_error_t *err)
{
    if (st->cgroup_path[0]) {
        ac_error_t ignore = NULL;
        if (cgroup_kill_all(st->cgroup_path, SIGKILL, &ignore) < 0)
            ac_error_free(&ignore);
    }
    if (st->pid > 0 && process_start_time(st->pid) == st->pid_start_time)
        kill(st->pid, SIGKILL);
    if (status == STATUS_PAUSED && st->cgroup_path[0]) {
        /* frozen tasks die only once thawed */
        ac_error_t ignore = NULL;
        if (cgroup_freeze(st->cgroup_path, false, &ignore) < 0)
            ac_error_free(&ignore);
    }
    if (st->pid > 0 && !wait_gone(st->pid, st->pid_start_time, 10000))
        return ac_error(err, 0, "container `%s`: init process %d did not die after SIGKILL", st->id, st->pid);
    return 0;
}

int container_delete(const struct global_opts *g, const char *id, bool force, ac_error_t *err)
{
    cleanup_close int lock = -1;
    if (state_lock(g, id, &lock, err) < 0) {
        if (force && *err && strstr((*err)->msg, "does not exist")) {
            ac_error_free(err);
            return 0;
        }
        return -1;
    }
    cleanup_state struct container_state *st = NULL;
    if (state_load(g, id, &st, err) < 0) {
        /* A create that died before writing its state: nothing runs, only
         * the directory is left. */
        if (force || (*err && strstr((*err)->msg, "does not exist"))) {
            ac_error_free(err);
            return state_remove(g, id, err);
        }
        return -1;
    }
    enum container_status status = state_status(g, st);
    if (status != STATUS_STOPPED) {
        if (!force)
            return ac_error(err, 0, "cannot delete container `%s` that is not stopped: %s", id,
                            container_status_names[status]);
        if (kill_container(st, status, err) < 0)
            return -1;
    } else if (st->shared_pidns && st->cgroup_path[0]) {
        /* init is gone but, without a pid namespace, its children live on */
        ac_error_t ignore = NULL;
        if (cgroup_kill_all(st->cgroup_path, SIGKILL, &ignore) < 0)
            ac_error_free(&ignore);
    }
    run_hooks_warn(g, st, HOOK_POSTSTOP, STATUS_STOPPED);
    if (st->cgroup_path[0] && cgroup_destroy(st->cgroup_path, err) < 0)
        return -1;
    return state_remove(g, id, err);
}
