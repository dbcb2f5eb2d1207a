/* start and delete: the steps after create. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/container/container.h"
#include "runtime/container/gvisor.h"
#include "runtime/linux/hooks.h"
#include "runtime/linux/kernel_audit.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/spawn.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/userns.h"
#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"
#include "hooks/audit.h"

int container_load_config(const struct global_opts *g, const char *id, struct oci_spec **spec, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("%s/%s/config.json", g->root, id);
    return spec_load(path, spec, err);
}

void container_hooks_builtin(int tier)
{
    if (tier == TIER_NONE) {
        hooks_builtin_enable(NULL);
        return;
    }
    /* the helpers installed with this binary (beside it, or the compiled-in
     * directory); an operator's --hooks-dir or --helpers-dir may hold a
     * wrapper of its own, which is exec'd */
    hooks_builtin_enable(helpers_default_dir());
}

/* Hooks whose failure only warns (poststart, poststop), as runtime-spec
 * says. */
static void run_hooks_warn(const struct global_opts *g, const struct container_state *st, enum oci_hook_kind kind,
                           enum container_status status)
{
    if (!(st->hooks_mask & (1u << kind)))
        return; /* no config.json to read on the hot path */
    cleanup_spec struct oci_spec *loaded = NULL;
    const struct oci_spec *spec = st->config;
    ac_error_t err = NULL;
    if (spec == NULL && container_load_config(g, st->id, &loaded, &err) < 0) {
        ac_warn("%s hooks not run: %s", oci_hook_kind_names[kind], err->msg);
        ac_error_free(&err);
        return;
    }
    if (spec == NULL)
        spec = loaded;
    if (spec->hooks.n_hooks[kind] == 0)
        return;
    cleanup_free char *state = container_hook_state(st, status);
    container_hooks_builtin(st->tier);
    hooks_run_warn(kind, spec->hooks.hooks[kind], spec->hooks.n_hooks[kind], state);
}

const char *termination_log_source(const struct oci_spec *spec)
{
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct oci_mount *m = &spec->mounts[i];
        if (m->destination && strcmp(m->destination, "/dev/termination-log") == 0 && m->source &&
            m->source[0] == '/')
            return m->source;
    }
    return "";
}

/* The host file behind a Kubernetes termination message (create recorded
 * it in the state; an older agentcage's state: from the config): opened
 * for the watchdog to write its reason into, -1 when the container has
 * none. Never through a symlink, only a regular file. */
static int termination_message_fd(const struct global_opts *g, const struct container_state *st)
{
    cleanup_spec struct oci_spec *spec = NULL;
    const char *source = st->termination_log;
    if (source == NULL) {
        ac_error_t e = NULL;
        if (container_load_config(g, st->id, &spec, &e) < 0) {
            ac_error_free(&e);
            return -1;
        }
        source = termination_log_source(spec);
    }
    if (source[0] == '\0')
        return -1;
    int fd = open(source, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Start the tier's watchdog for st's init, in its own session, with fd 3
 * the init's pidfd, fd 4 the state dir, fd 5 the termination message file
 * if the engine gave one, fd 6 the denials counter, fd 7 the listener of
 * the init's tier seccomp filter (taken from the init, which waits for us
 * on the exec fifo, with pidfd_getfd), fd 8 the socket on which exec hands
 * over its processes' listeners, fd 9 the kernel's audit multicast for
 * Landlock's refusals; stdio on /dev/null and nothing else, and
 * record its pid and start time in st. posix_spawn (a vfork underneath)
 * returns once the watchdog has exec'd, or with the exec's error: no copy
 * of the runtime, no report pipe. Once we exit, it is reparented like any
 * orphan (to the engine's subreaper, or init). */
/* A tier's credentials with a ttl: a small process of ours waits for the
 * next expiry (or the init's exit) and revokes them then
 * (`agentcage credentials-expire ID`, cli/credentials.c). Only containers
 * that asked for credentials have one. */
static int expirer_spawn(const struct global_opts *g, const struct container_state *st, ac_error_t *err)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n < 0)
        return ac_error(err, errno, "credentials: readlink /proc/self/exe");
    self[n] = '\0';
    char *argv[] = {self, "--root", (char *)g->root, "--audit-log", (char *)g->tier.audit_log, "credentials-expire",
                    st->id, NULL};
    const char *conf = getenv("AGENTCAGE_CONF");
    cleanup_free char *conf_env = conf ? xasprintf("AGENTCAGE_CONF=%s", conf) : NULL;
    char *env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", conf_env, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    for (int i = 0; i < 3; i++)
        posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawn_file_actions_addchdir_np(&fa, "/");
    pid_t pid;
    int r = posix_spawn(&pid, self, &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return r ? ac_error(err, r, "credentials: start the expirer") : 0;
}

/* The socket exec hands listeners over on: DIR/watchdog.sock (0600),
 * reached through the state dir's fd, so its path can be of any length. */
static int exec_socket_listen(int dirfd, ac_error_t *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, WATCHDOG_SOCKET);
    unlinkat(dirfd, WATCHDOG_SOCKET, 0);
    cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        fchmodat(dirfd, WATCHDOG_SOCKET, 0600, 0) < 0 || listen(fd, 8) < 0)
        return ac_error(err, errno, "watchdog: the exec socket");
    return ac_steal_fd(&fd);
}

/* The init's listener, taken with pidfd_getfd (the init is blocked on the
 * exec fifo, and its copy is close-on-exec): -1 when it has none. */
static int take_init_listener(int pidfd, const struct container_state *st, ac_error_t *err)
{
    if (st->notify_fd <= 0)
        return -1;
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, st->notify_fd, 0);
    if (fd < 0)
        return ac_error(err, errno, "tier %d: watchdog: take the seccomp listener of the init", st->tier);
    char link[64], target[64] = "";
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    if (readlink(link, target, sizeof(target) - 1) < 0 || strcmp(target, "anon_inode:seccomp notify") != 0) {
        close(fd);
        return ac_error(err, 0, "tier %d: watchdog: fd %d of the init is no seccomp listener", st->tier,
                        st->notify_fd);
    }
    return fd;
}

/* fd 9 of the watchdog: the kernel's audit multicast, where Landlock (ABI
 * 7) reports the container's refusals at tiers 1-3 while audit is enabled
 * (kernel_audit.h); -1 when they cannot be read here. Audit off is no
 * reason to go without: the operator may turn it on while the container
 * runs. The runtime turns it on only when agentcage.conf says
 * `kernel-audit = true`. */
static int landlock_audit_fd(const struct global_opts *g, const struct container_state *st)
{
    if (st->tier < 1 || st->gvisor || landlock_abi() < 7)
        return -1;
    const char *why = kernel_audit_unreachable();
    if (why) {
        ac_debug("tier %d: Landlock's refusals are not counted: %s", st->tier, why);
        return -1;
    }
    ac_error_t e = NULL;
    if (g->tier.kernel_audit && kernel_audit_state(&e) == 0 && kernel_audit_enable(&e) == 0)
        ac_debug("kernel-audit = true: the kernel's audit turned on, for Landlock's refusals to be counted");
    if (e) {
        cleanup_free char *msg = ac_error_string(e);
        ac_warn("kernel-audit = true, but %s: Landlock's refusals are not counted", msg);
        ac_error_free(&e);
    }
    int fd = kernel_audit_reader(&e);
    if (fd < 0) {
        cleanup_free char *msg = ac_error_string(e);
        ac_debug("tier %d: Landlock's refusals are not counted: %s", st->tier, msg);
        ac_error_free(&e);
    }
    return fd;
}

/* await_start: `run`'s, started while the init sets itself up; its
 * wall-clock limit and the init's listener come with the go at start
 * (watchdog_go). */
static int watchdog_spawn(const struct global_opts *g, struct container_state *st, bool await_start,
                          ac_error_t *err)
{
    cleanup_free char *path = helper_path(g->tier.helpers_dir, "agentcage-watchdog");
    cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
    if (pidfd < 0 || process_start_time(st->pid) != st->pid_start_time)
        return ac_error(err, pidfd < 0 ? errno : ESRCH, "tier %d: watchdog: the container's init %d", st->tier,
                        st->pid);
    cleanup_free char *dir = state_dir_path(g, st->id);
    cleanup_close int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return ac_error(err, errno, "tier %d: watchdog: open `%s`", st->tier, dir);
    cleanup_close int listener = await_start ? -1 : take_init_listener(pidfd, st, err);
    if (listener < 0 && *err)
        return -1;
    cleanup_close int sock = exec_socket_listen(dirfd, err);
    if (sock < 0)
        return -1;
    cleanup_close int denials = denials_file_open(dir);
    cleanup_close int message = termination_message_fd(g, st);
    cleanup_close int audit = landlock_audit_fd(g, st);
    /* fd 3 ... 9 in the watchdog */
    int fds[7] = {pidfd, dirfd, message, denials, listener, sock, audit};
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", st->timeout_ms);
    char *const argv[] = {path, ms, st->id, await_start ? "await-start" : NULL, NULL};
    pid_t wd = -1;
    if (spawn_detached(path, argv, fds, 7, &wd, err) < 0)
        return ac_error_wrap(err, "tier %d: watchdog", st->tier);
    st->watchdog_pid = wd;
    st->watchdog_start = process_start_time(wd); /* 0 if it is gone already: nothing to stop */
    st->watchdog_awaits = await_start;
    return 0;
}

int container_watchdog_ahead(const struct global_opts *g, struct container_state *st, ac_error_t *err)
{
    return watchdog_spawn(g, st, true, err);
}

int watchdog_hand_over(const struct global_opts *g, const char *id, int fd, const char *msg)
{
    cleanup_free char *dir = state_dir_path(g, id);
    cleanup_close int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, WATCHDOG_SOCKET);
    cleanup_close int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 5};
    char ack = 0;
    size_t len = strlen(msg);
    if (dirfd < 0 || sock < 0 || setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (fd >= 0 ? send_fd(sock, fd, msg) : write(sock, msg, len) == (ssize_t)len ? 0 : -1) < 0 ||
        read(sock, &ack, 1) != 1 || ack != 'A')
        return -1;
    return 0;
}

/* The go for a watchdog that awaits start: "s", with the init's listener
 * when it has one, and its byte back (it holds the listener, its clock
 * runs). Without it the init's refusals would go unanswered: no start. */
static int watchdog_go(const struct global_opts *g, struct container_state *st, ac_error_t *err)
{
    cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
    if (pidfd < 0)
        return ac_error(err, errno, "tier %d: watchdog: the container's init %d", st->tier, st->pid);
    cleanup_close int listener = take_init_listener(pidfd, st, err);
    if (listener < 0 && *err)
        return -1;
    if (watchdog_hand_over(g, st->id, listener, "s") < 0)
        return ac_error(err, errno, "tier %d: the container's watchdog does not take the go", st->tier);
    st->watchdog_awaits = false;
    return 0;
}

/* The watchdog of a container whose init is gone ends by itself once the
 * init's parent has reaped it (it writes the exit status then): wait for
 * that a while, then stop it if it still runs (a pidfd makes the kill
 * race-free against pid reuse) and wait until it is gone, so it cannot
 * write into a state dir being removed. An init still unreaped (its parent
 * may be the very caller of this delete, which reaps after it) gives its
 * status from /proc here, in *zombie_status: then the watchdog is waited
 * for only until its first `exit` marker (the wall time). */
#define WATCHDOG_FINISH_MS 2500
static void watchdog_stop(const struct global_opts *g, const struct container_state *st, int *zombie_status)
{
    *zombie_status = st->pid > 0 ? zombie_exit_status(st->pid, st->pid_start_time) : -1;
    if (st->watchdog_pid <= 0 || st->watchdog_start == 0)
        return;
    int pidfd = (int)syscall(SYS_pidfd_open, st->watchdog_pid, 0);
    if (pidfd < 0)
        return;
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    int wait_ms = WATCHDOG_FINISH_MS;
    if (*zombie_status >= 0) {
        cleanup_free char *marker = xasprintf("%s/%s/exit", g->root, st->id);
        /* its first marker (the wall time) comes at once; then it only
         * waits for a reap that comes after us */
        for (int waited = 0; waited < 500 && access(marker, F_OK) < 0 && poll(&pfd, 1, 2) == 0; waited += 2)
            ;
        wait_ms = 0;
    }
    if (process_start_time(st->watchdog_pid) == st->watchdog_start && poll(&pfd, 1, wait_ms) == 0 &&
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0) {
        while (poll(&pfd, 1, 5000) < 0 && errno == EINTR)
            ;
    }
    close(pidfd);
}

/* After the workload was started: the audit record, poststart hooks. */
static int started(const struct global_opts *g, const struct container_state *st)
{
    if (st->tier != TIER_NONE) {
        cleanup_free char *members = xasprintf("\"tier\":%d,\"pid\":%d", st->tier, st->pid);
        container_audit(g, "container-started", st->id, members);
    }
    run_hooks_warn(g, st, HOOK_POSTSTART, STATUS_RUNNING);
    return 0;
}

static int start_container(const struct global_opts *g, const char *id, struct container_state *known,
                           bool running, int start_fd, ac_error_t *err);
int container_start(const struct global_opts *g, const char *id, ac_error_t *err)
{
    return start_container(g, id, NULL, false, -1, err);
}
int container_start_running(const struct global_opts *g, const char *id, ac_error_t *err)
{
    return start_container(g, id, NULL, true, -1, err);
}
int container_start_here(const struct global_opts *g, struct container_state *st, int start_fd, ac_error_t *err)
{
    return start_container(g, st->id, st, false, start_fd, err);
}

/* The go for an init that waits on its sync socket (a `run` that starts
 * what it created): then, as with the fifo, the wait until it has exec'd
 * (the socket is close-on-exec in the init: EOF here). */
static int start_over_socket(const char *id, int fd, ac_error_t *err)
{
    if (sync_send(fd, SYNC_GO, NULL, 0) < 0)
        return ac_error(err, errno, "start `%s`: the container process is gone", id);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    return 0;
}

static int start_container(const struct global_opts *g, const char *id, struct container_state *known,
                           bool running, int start_fd, ac_error_t *err)
{
    cleanup_close int lock = -1, go_fd = start_fd;
    cleanup_state struct container_state *loaded = NULL;
    struct container_state *st = known;
    enum container_status status = STATUS_CREATED;
    /* `run`'s own container (known): created, as its create left it; an init
     * that died since fails the go */
    if (known ? state_lock(g, id, &lock, err) < 0 : state_open(g, id, &lock, &loaded, &status, err) < 0)
        return -1;
    if (!known)
        st = loaded;
    /* create's `runsc run` may have seen a short workload through already */
    if (status != STATUS_CREATED && !(running && status == STATUS_STOPPED))
        return ac_error(err, 0, "cannot start container `%s`: it is %s, not created", id,
                        container_status_names[status]);
    /* A tier's wall-clock limit runs from start, and its refused syscalls
     * go to the watchdog: the watchdog first, so no workload outruns it. */
    /* (create's `runsc run`: a workload that has ended already, a zombie
     * of ours, has nothing left to guard) */
    bool ended = running && process_start_time(st->pid) != st->pid_start_time;
    if (st->tier >= 0 && !ended && st->watchdog_awaits) {
        /* `run`'s, started by create (its pid already in the state) */
        if (watchdog_go(g, st, err) < 0)
            return -1;
    } else if (st->tier >= 0 && !ended) {
        if (watchdog_spawn(g, st, false, err) < 0 || state_save(g, st, err) < 0)
            return -1;
    }
    if (st->tier >= 0) {
        cleanup_free char *dir = state_dir_path(g, id);
        if (credentials_next_expiry(dir) > 0 && expirer_spawn(g, st, err) < 0)
            return -1;
    }
    cleanup_free char *fifo = xasprintf("%s/%s/exec.fifo", g->root, id);
    if (st->gvisor) {
        /* runsc's sandbox starts its workload (or did, in create's `runsc
         * run`); the fifo only marked it created */
        if (!running && gvisor_start(g, st, err) < 0)
            return -1;
        unlink(fifo);
        return started(g, st);
    }
    if (go_fd >= 0) {
        if (start_over_socket(id, go_fd, err) < 0)
            return -1;
        return started(g, st);
    }
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
    return started(g, st);
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

static int delete_container(const struct global_opts *g, const char *id, const struct container_state *known,
                            bool force, ac_error_t *err);
int container_delete(const struct global_opts *g, const char *id, bool force, ac_error_t *err)
{
    return delete_container(g, id, NULL, force, err);
}
int container_delete_known(const struct global_opts *g, const struct container_state *st, ac_error_t *err)
{
    return delete_container(g, st->id, st, true, err);
}

static int delete_container(const struct global_opts *g, const char *id, const struct container_state *known,
                            bool force, ac_error_t *err)
{
    cleanup_close int lock = -1;
    if (state_lock(g, id, &lock, err) < 0) {
        if (force && *err && strstr((*err)->msg, "does not exist")) {
            ac_error_free(err);
            return 0;
        }
        return -1;
    }
    cleanup_state struct container_state *loaded = NULL;
    const struct container_state *st = known;
    if (!known && state_load(g, id, &loaded, err) < 0) {
        /* A create that died before writing its state: nothing runs, only
         * the directory is left. */
        if (force || (*err && strstr((*err)->msg, "does not exist"))) {
            ac_error_free(err);
            return state_remove(g, id, err);
        }
        return -1;
    }
    if (!known)
        st = loaded;
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
    if (st->tier >= 0) {
        /* The exit status belongs to the process's parent (the engine's
         * shim); the watchdog reads it through its pidfd once reaped, or
         * /proc has it while it is not. */
        int zombie_status;
        watchdog_stop(g, st, &zombie_status);
        container_audit_end(g, st, status != STATUS_STOPPED, zombie_status);
    }
    run_hooks_warn(g, st, HOOK_POSTSTOP, STATUS_STOPPED);
    if (st->gvisor) {
        gvisor_delete_member(g, id); /* a pod's container: out of the pod's sandbox */
        gvisor_kill_sandbox(st->cgroup_path); /* the gofer and stubs outlive the sentry a little */
        cleanup_free char *dir = state_dir_path(g, id);
        gvisor_remove_sandbox(dir);
    }
    if (st->cgroup_path[0] && cgroup_destroy(st->cgroup_path, err) < 0)
        return -1;
    if (st->tier != TIER_NONE) {
        cleanup_free char *dir = state_dir_path(g, id);
        credentials_revoke_all(g, dir, id, "delete");
        /* a container killed at its timeout or for its denials (a
         * compromise signal) does not write its changes into the host
         * folder: they are kept for review */
        cleanup_free char *marker = xasprintf("%s/timeout", dir);
        bool killed = access(marker, F_OK) == 0 || denials_file_killed(dir);
        bool review = killed || (g->tier.bind_changes && strcmp(g->tier.bind_changes, "review") == 0);
        bind_overlays_finish(g, dir, id, true, review);
        project_watch_finish(g, dir, id);
    }
    userns_slice_release(g->root, id, st->userns_slice);
    return state_remove(g, id, err);
}
