/* OCI hooks: each one runs with the state JSON on stdin and a timeout. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/linux/hooks.h"
#include "runtime/util/utils.h"

static const char *extra_env;

void hooks_set_extra_env(const char *entry) { extra_env = entry; }
const char *hooks_extra_env(void) { return extra_env; }

/* Below 3 means it sits where a standard fd belongs: move it up. */
static int above_stdio(int fd)
{
    return fd < 3 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
}

/* In the forked child: stdin from the pipe, stdout and stderr into the
 * output pipe (the runtime passes it on to its stderr and keeps the last
 * line for its error message), no other fd, then exec. On failure the errno
 * goes back through err_w. Never returns. */
static void __attribute__((noreturn))
exec_hook(const struct oci_hook *hook, int stdin_r, int err_w, int out_w)
{
    char *default_args[] = { hook->path, NULL };
    char *empty_env[] = { NULL };
    sigset_t none;

    /* the runtime's blocked or ignored signals must not leak into the hook */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signals_default_all();
    /* its own process group, so a timeout kills what it started too */
    setpgid(0, 0);

    stdin_r = above_stdio(stdin_r);
    err_w = above_stdio(err_w);
    out_w = above_stdio(out_w);
    if (stdin_r < 0 || err_w < 0 || out_w < 0 || dup2(stdin_r, 0) < 0 || dup2(out_w, 1) < 0 ||
        dup2(out_w, 2) < 0)
        goto fail;
    /* err_w must survive until execve succeeds: mark, don't close */
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        goto fail;
    char **env = hook->env ? hook->env : empty_env;
    if (extra_env) {
        size_t n = 0;
        while (env[n])
            n++;
        char **with = calloc(n + 2, sizeof(char *)); /* the forked child's own copy */
        if (!with)
            goto fail;
        memcpy(with, env, n * sizeof(char *));
        with[n] = (char *)extra_env;
        env = with;
    }
    execve(hook->path, hook->args ? hook->args : default_args, env);
fail:;
    int e = errno;
    if (write(err_w, &e, sizeof(e)) < 0) {
        /* nothing more we can do */
    }
    _exit(127);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The hook's output: passed on to our stderr (when we have one), the tail
 * kept for the error message. */
#define TAIL_CAP 512
struct hook_output {
    int fd;            /* read end, non-blocking; -1 at EOF */
    bool relay;
    char tail[TAIL_CAP + 1]; /* + the NUL last_line writes */
    size_t len;
};

static void drain_output(struct hook_output *o)
{
    char buf[4096];
    while (o->fd >= 0) {
        ssize_t n = read(o->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0) {
                close(o->fd);
                o->fd = -1;
            }
            return;
        }
        if (o->relay && write_all(2, buf, (size_t)n) < 0)
            o->relay = false;
        if ((size_t)n >= TAIL_CAP) {
            memcpy(o->tail, buf + n - TAIL_CAP, TAIL_CAP);
            o->len = TAIL_CAP;
        } else {
            size_t keep = o->len + (size_t)n > TAIL_CAP ? TAIL_CAP - (size_t)n : o->len;
            memmove(o->tail, o->tail + o->len - keep, keep);
            memcpy(o->tail + keep, buf, (size_t)n);
            o->len = keep + (size_t)n;
        }
    }
}

/* The last non-empty line the hook printed ("" when none). */
static const char *last_line(struct hook_output *o)
{
    size_t end = o->len;
    while (end > 0 && (o->tail[end - 1] == '\n' || o->tail[end - 1] == '\r' || o->tail[end - 1] == ' '))
        end--;
    size_t start = end;
    while (start > 0 && o->tail[start - 1] != '\n')
        start--;
    o->tail[end] = '\0';
    return o->tail + start;
}

/* Feed the state to the hook's stdin while waiting for it to exit, so a
 * hook that never reads stdin still meets its timeout. Returns 1 when the
 * hook exited, 0 on timeout. */
static int feed_and_wait(int pidfd, int *stdin_w, struct hook_output *out, const char *state, long long deadline,
                         ac_error_t *err)
{
    size_t len = strlen(state), off = 0;

    for (;;) {
        if (*stdin_w >= 0 && off == len) {
            close(*stdin_w);
            *stdin_w = -1;
        }
        struct pollfd fds[3] = { { .fd = pidfd, .events = POLLIN }, { .fd = out->fd, .events = POLLIN },
                                 { .fd = *stdin_w, .events = POLLOUT } };
        int timeout = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            timeout = left > 0 ? (int) left : 0;
        }
        int ret = poll(fds, *stdin_w >= 0 ? 3 : 2, timeout);
        if (ret < 0 && errno == EINTR)
            continue;
        if (ret < 0)
            return ac_error(err, errno, "poll");
        if (ret == 0)
            return 0;
        if (fds[1].revents)
            drain_output(out);
        if (fds[0].revents)
            return 1;
        if (*stdin_w < 0 || fds[2].revents == 0)
            continue;
        ssize_t n = write(*stdin_w, state + off, len - off);
        if (n >= 0)
            off += n;
        else if (errno == EPIPE)
            off = len; /* the hook closed its stdin: it does not want the state */
        else if (errno != EAGAIN && errno != EINTR)
            return ac_error(err, errno, "write the state to the hook");
    }
}

static int run_hook(const char *kind, size_t i, const struct oci_hook *hook, const char *state, ac_error_t *err)
{
    cleanup_close int stdin_r = -1, stdin_w = -1, err_r = -1, err_w = -1, pidfd = -1, out_w = -1;
    int fds[2], status, exec_errno;
    struct hook_output out = { .fd = -1, .relay = fcntl(2, F_GETFD) >= 0 }; /* before the pipes take free fds */

    if (pipe2(fds, O_CLOEXEC) < 0)
        return ac_error(err, errno, "%s hook #%zu (%s): pipe", kind, i, hook->path);
    stdin_r = fds[0], stdin_w = fds[1];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return ac_error(err, errno, "%s hook #%zu (%s): pipe", kind, i, hook->path);
    err_r = fds[0], err_w = fds[1];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return ac_error(err, errno, "%s hook #%zu (%s): pipe", kind, i, hook->path);
    out.fd = fds[0], out_w = fds[1];
    fcntl(out.fd, F_SETFL, O_NONBLOCK);

    pid_t pid = fork();
    if (pid < 0) {
        close(out.fd);
        return ac_error(err, errno, "%s hook #%zu (%s): fork", kind, i, hook->path);
    }
    if (pid == 0)
        exec_hook(hook, stdin_r, err_w, out_w);
    setpgid(pid, pid); /* also here: no race with kill(-pid) below */
    close(ac_steal_fd(&stdin_r));
    close(ac_steal_fd(&err_w));
    close(ac_steal_fd(&out_w));

    /* EOF: execve succeeded and closed err_w; an int: it failed */
    ssize_t n;
    do
        n = read(err_r, &exec_errno, sizeof(exec_errno));
    while (n < 0 && errno == EINTR);
    if (n == sizeof(exec_errno)) {
        waitpid(pid, NULL, 0);
        close(out.fd);
        return ac_error(err, exec_errno, "%s hook #%zu (%s): exec", kind, i, hook->path);
    }

    pidfd = pidfd_open(pid, 0);
    if (pidfd < 0) {
        int saved = errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(out.fd);
        return ac_error(err, saved, "%s hook #%zu (%s): pidfd_open", kind, i, hook->path);
    }
    if (fcntl(stdin_w, F_SETFL, O_NONBLOCK) < 0) {
        close(out.fd);
        return ac_error(err, errno, "%s hook #%zu (%s): set O_NONBLOCK", kind, i, hook->path);
    }

    /* a hook that exits without reading must not kill us with SIGPIPE */
    struct sigaction ignore = { .sa_handler = SIG_IGN }, old_sigpipe;
    sigaction(SIGPIPE, &ignore, &old_sigpipe);
    long long deadline = hook->has_timeout ? now_ms() + hook->timeout * 1000LL : -1;
    int exited = feed_and_wait(pidfd, &stdin_w, &out, state, deadline, err);
    sigaction(SIGPIPE, &old_sigpipe, NULL);

    if (exited <= 0)
        kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* what is already written; a daemon it left behind may hold the pipe */
    drain_output(&out);
    if (out.fd >= 0)
        close(out.fd);
    const char *said = last_line(&out);
    const char *sep = said[0] ? ": " : "";
    if (exited < 0)
        return ac_error_wrap(err, "%s hook #%zu (%s)", kind, i, hook->path);
    if (exited == 0)
        return ac_error(err, 0, "%s hook #%zu (%s) timed out after %ds", kind, i, hook->path, hook->timeout);
    if (WIFSIGNALED(status)) {
        /* "SIGSYS: bad system call": the name, and the description in
         * lower case as it reads inside a sentence */
        int sig = WTERMSIG(status);
        const char *abbrev = sigabbrev_np(sig);
        char what[64];
        snprintf(what, sizeof(what), "%s", strsignal(sig));
        what[0] = (char) tolower((unsigned char) what[0]);
        return ac_error(err, 0, "%s hook #%zu (%s) killed by signal %d (SIG%s: %s)%s%s", kind, i, hook->path, sig,
                        abbrev ? abbrev : "?", what, sep, said);
    }
    if (WEXITSTATUS(status) != 0)
        return ac_error(err, 0, "%s hook #%zu (%s) exited with status %d%s%s", kind, i, hook->path,
                        WEXITSTATUS(status), sep, said);
    return 0;
}

/* The hook programs this binary carries (registered by name), and the
 * directory whose copies of them it runs in-process (NULL: none). */
#define BUILTINS_MAX 4
struct builtin {
    const char *name;
    hook_builtin_fn run;
    hook_builtin_start_fn start; /* NULL: it runs in one go only */
    hook_builtin_finish_fn finish;
};
static struct builtin builtins[BUILTINS_MAX];
static size_t n_builtins;
static char *builtin_dir;

bool hooks_runtime_side(const struct oci_spec *spec)
{
    return spec->hooks.n_hooks[HOOK_PRESTART] || spec->hooks.n_hooks[HOOK_CREATE_RUNTIME];
}

void hooks_builtin_register_early(const char *name, hook_builtin_fn run, hook_builtin_start_fn start,
                                  hook_builtin_finish_fn finish)
{
    if (n_builtins < BUILTINS_MAX)
        builtins[n_builtins++] = (struct builtin){name, run, start, finish};
}

void hooks_builtin_register(const char *name, hook_builtin_fn run)
{
    hooks_builtin_register_early(name, run, NULL, NULL);
}

void hooks_builtin_enable(const char *dir)
{
    free(builtin_dir);
    builtin_dir = dir ? xstrdup(dir) : NULL;
}

static const struct builtin *builtin_of(const struct oci_hook *hook)
{
    size_t n = builtin_dir ? strlen(builtin_dir) : 0;
    if (!builtin_dir || !hook->path || strncmp(hook->path, builtin_dir, n) != 0 || hook->path[n] != '/')
        return NULL;
    for (size_t i = 0; i < n_builtins; i++)
        if (strcmp(hook->path + n + 1, builtins[i].name) == 0)
            return &builtins[i];
    return NULL;
}

static const char *kind_name_of(enum oci_hook_kind kind)
{
    return (unsigned) kind < HOOK_KIND_COUNT ? oci_hook_kind_names[kind] : "unknown";
}

static int run_one(const char *kind, size_t i, const struct oci_hook *hook, const char *state, ac_error_t *err)
{
    const struct builtin *builtin = builtin_of(hook);
    if (builtin == NULL)
        return run_hook(kind, i, hook, state, err);
    if (builtin->run(hook, state, err) < 0)
        return ac_error_wrap(err, "%s hook #%zu (%s)", kind, i, hook->path);
    return 0;
}

bool hooks_can_start_early(const struct oci_hook *hook)
{
    const struct builtin *builtin = builtin_of(hook);
    return builtin && builtin->start;
}

int hooks_start_early(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json,
                      struct hook_early *early, ac_error_t *err)
{
    *early = HOOK_EARLY_NONE;
    const struct builtin *builtin = n > 0 ? builtin_of(&hooks[0]) : NULL;
    if (builtin == NULL || builtin->start == NULL)
        return 0;
    int pending = builtin->start(&hooks[0], state_json, err);
    if (pending < 0 && pending != HOOK_START_DONE)
        return ac_error_wrap(err, "%s hook #0 (%s)", kind_name_of(kind), hooks[0].path);
    *early = (struct hook_early){.hook = &hooks[0], .pending = pending, .finish = builtin->finish};
    return 0;
}

void hooks_early_abandon(struct hook_early *early)
{
    if (early->pending >= 0)
        close(early->pending);
    *early = HOOK_EARLY_NONE;
}

int hooks_finish_early(enum oci_hook_kind kind, struct hook_early *early, ac_error_t *err)
{
    const struct oci_hook *hook = early->hook;
    int pending = ac_steal_fd(&early->pending);
    hook_builtin_finish_fn finish = early->finish;
    *early = HOOK_EARLY_NONE;
    /* an early hook is always its list's first (hooks_start_early) */
    if (hook && pending >= 0 && finish(pending, err) < 0)
        return ac_error_wrap(err, "%s hook #0 (%s)", kind_name_of(kind), hook->path);
    return 0;
}

int hooks_run_started(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json,
                      struct hook_early *early, ac_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        if (early && early->hook == &hooks[i]) {
            if (hooks_finish_early(kind, early, err) < 0)
                return -1;
            continue;
        }
        if (run_one(kind_name_of(kind), i, &hooks[i], state_json, err) < 0)
            return -1;
    }
    return 0;
}

int hooks_run(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json,
              ac_error_t *err)
{
    return hooks_run_started(kind, hooks, n, state_json, NULL, err);
}

void hooks_run_warn(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json)
{
    const char *kind_name = kind_name_of(kind);
    for (size_t i = 0; i < n; i++) {
        ac_error_t err = NULL;
        if (run_one(kind_name, i, &hooks[i], state_json, &err) < 0) {
            char *msg = ac_error_string(err);
            ac_warn("%s", msg);
            dprintf(2, "agentcage: warning: %s\n", msg);
            free(msg);
            ac_error_free(&err);
        }
    }
}
