/* The container's process, for init and exec alike: the caller's file
 * descriptors, the executable lookup, rlimits, scheduling, labels, cwd,
 * user and capabilities, seccomp, the tier's cage, and execve. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/ioprio.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/caps.h"
#include "runtime/linux/hooks.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/process.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/rootfs.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/linux/tier_seccomp.h"
#include "runtime/util/selinux.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier.h"
/* The caller's file descriptors a tiered container inherits (stdio and
 * --preserve-fds) must not be a handle on the host's file tree: a
 * directory, or an O_PATH fd, reopened through /proc/self/fd/N, opens
 * whatever lies beneath or behind it with the container's rights. */
int tier_check_caller_fds(int tier, int preserve_fds, ac_error_t *err)
{
    int last = 2 + (preserve_fds > 0 ? preserve_fds : 0);
    for (int fd = 0; fd <= last; fd++) {
        struct stat st;
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fstat(fd, &st) < 0)
            continue; /* not open */
        if (S_ISDIR(st.st_mode) || (flags & O_PATH))
            return ac_error(err, 0, "tier %d forbids %s as file descriptor %d (%s): a handle on the host's files", tier,
                            S_ISDIR(st.st_mode) ? "a directory" : "an O_PATH descriptor", fd,
                            fd == 0 ? "stdin" : fd == 1 ? "stdout" : fd == 2 ? "stderr" : "--preserve-fds");
    }
    return 0;
}

void prepare_inherited_fds(int preserve_fds)
{
    unsigned int first = 3 + (unsigned int)(preserve_fds > 0 ? preserve_fds : 0);
    if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
        for (int fd = (int)first; fd < 65536; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    for (int fd = 3; fd < (int)first; fd++) {
        int fl = fcntl(fd, F_GETFD);
        if (fl >= 0)
            fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
    }
}

static const char *env_get(char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

static int check_executable(const char *path, ac_error_t *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return ac_error(err, 0, "exec: \"%s\": stat %s: no such file or directory", path, path);
    if (S_ISDIR(st.st_mode))
        return ac_error(err, 0, "exec: \"%s\": is a directory: permission denied", path);
    if (access(path, X_OK) < 0)
        return ac_error(err, 0, "exec: \"%s\": permission denied", path);
    return 0;
}

int find_executable(const char *name, char *const *env, char **out, ac_error_t *err)
{
    if (name == NULL || *name == '\0')
        return ac_error(err, 0, "process.args: no command given: no such file or directory");
    if (strchr(name, '/')) {
        if (check_executable(name, err) < 0)
            return -1;
        *out = xstrdup(name);
        return 0;
    }
    const char *path = env_get(env, "PATH");
    if (path == NULL)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    cleanup_free char *copy = xstrdup(path);
    char *save = NULL;
    bool denied = false;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        cleanup_free char *cand = xasprintf("%s/%s", *dir ? dir : ".", name);
        struct stat st;
        if (stat(cand, &st) < 0 || S_ISDIR(st.st_mode))
            continue;
        if (access(cand, X_OK) < 0) {
            denied = true;
            continue;
        }
        *out = ac_steal_ptr(&cand);
        return 0;
    }
    if (denied)
        return ac_error(err, 0, "exec: \"%s\": permission denied", name);
    return ac_error(err, 0, "exec: \"%s\": executable file not found in $PATH", name);
}

static int apply_rlimits(const struct oci_process *p, ac_error_t *err)
{
    for (size_t i = 0; i < p->n_rlimits; i++) {
        struct rlimit rl = {.rlim_cur = p->rlimits[i].soft, .rlim_max = p->rlimits[i].hard};
        if (setrlimit(p->rlimits[i].resource, &rl) < 0) {
            int e = errno;
            struct rlimit cur;
            /* raising a hard limit takes CAP_SYS_RESOURCE of the host: rootless, never */
            if (e == EPERM && getrlimit(p->rlimits[i].resource, &cur) == 0 && rl.rlim_max > cur.rlim_max)
                return ac_error(err, e, "process.rlimits[%zu]: %s hard limit %llu is above this user's %llu, "
                                        "which only host root can raise",
                                i, p->rlimits[i].type, (unsigned long long)rl.rlim_max,
                                (unsigned long long)cur.rlim_max);
            return ac_error(err, e, "process.rlimits[%zu]: setrlimit %s", i, p->rlimits[i].type);
        }
    }
    return 0;
}

static int apply_scheduling(const struct oci_process *p, ac_error_t *err)
{
    if (p->has_io_priority) {
        int v = IOPRIO_PRIO_VALUE(p->io_priority_class_value, p->io_priority);
        if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, v) < 0)
            return ac_error(err, errno, "process.ioPriority: ioprio_set");
    }
    if (p->scheduler) {
        struct sched_attr_v1 {
            uint32_t size, sched_policy;
            uint64_t sched_flags;
            int32_t sched_nice;
            uint32_t sched_priority;
            uint64_t sched_runtime, sched_deadline, sched_period;
        } attr = {.size = sizeof(attr)};
        const struct oci_scheduler *s = p->scheduler;
        attr.sched_policy = (uint32_t)s->policy_value;
        attr.sched_nice = s->has_nice ? s->nice : 0;
        attr.sched_priority = s->has_priority ? (uint32_t)s->priority : 0;
        attr.sched_runtime = s->has_runtime ? s->runtime : 0;
        attr.sched_deadline = s->has_deadline ? s->deadline : 0;
        attr.sched_period = s->has_period ? s->period : 0;
        for (size_t i = 0; i < s->n_flags; i++) {
            if (strcmp(s->flags[i], "SCHED_FLAG_RESET_ON_FORK") == 0)
                attr.sched_flags |= 0x01;
            else if (strcmp(s->flags[i], "SCHED_FLAG_RECLAIM") == 0)
                attr.sched_flags |= 0x02;
            else if (strcmp(s->flags[i], "SCHED_FLAG_DL_OVERRUN") == 0)
                attr.sched_flags |= 0x04;
            else if (strcmp(s->flags[i], "SCHED_FLAG_KEEP_POLICY") == 0)
                attr.sched_flags |= 0x08;
            else if (strcmp(s->flags[i], "SCHED_FLAG_KEEP_PARAMS") == 0)
                attr.sched_flags |= 0x10;
            else if (strcmp(s->flags[i], "SCHED_FLAG_UTIL_CLAMP_MIN") == 0)
                attr.sched_flags |= 0x20;
            else if (strcmp(s->flags[i], "SCHED_FLAG_UTIL_CLAMP_MAX") == 0)
                attr.sched_flags |= 0x40;
        }
        if (syscall(SYS_sched_setattr, 0, &attr, 0) < 0)
            return ac_error(err, errno, "process.scheduler: sched_setattr %s", s->policy);
    }
    return 0;
}

/* AppArmor and SELinux labels take effect at execve. Where the LSM is off
 * the label is ignored with a debug line, as a config written for another
 * host should still run. */
static int apply_labels(const struct oci_process *p, ac_error_t *err)
{
    if (p->apparmor_profile && *p->apparmor_profile) {
        cleanup_free char *enabled = NULL;
        ac_error_t ignore = NULL;
        if (read_all_file("/sys/module/apparmor/parameters/enabled", &enabled, NULL, &ignore) == 0 &&
            enabled[0] == 'Y') {
            cleanup_free char *cmd = xasprintf("exec %s", p->apparmor_profile);
            ac_error_t e2 = NULL;
            if (write_file("/proc/self/attr/apparmor/exec", cmd, strlen(cmd), &e2) < 0) {
                ac_error_free(&e2);
                if (write_file("/proc/self/attr/exec", cmd, strlen(cmd), err) < 0)
                    return ac_error_wrap(err, "process.apparmorProfile `%s`", p->apparmor_profile);
            }
        } else {
            ac_debug("AppArmor is not enabled: ignoring process.apparmorProfile `%s`", p->apparmor_profile);
        }
        ac_error_free(&ignore);
    }
    if (p->selinux_label && *p->selinux_label) {
        /* not probed (-1): the write is tried, never the label ignored */
        if (ac_selinux_enabled() != 0) {
            if (ac_selinux_setexeccon(p->selinux_label) < 0)
                return ac_error(err, errno, "process.selinuxLabel `%s`", p->selinux_label);
        } else {
            ac_debug("SELinux is not enabled: ignoring process.selinuxLabel");
        }
    }
    return 0;
}

static int send_notify_fd(int sync_fd, int notify_fd, ac_error_t *err)
{
    enum sync_type t;
    if (sync_fd < 0)
        return ac_error(err, 0, "linux.seccomp.listenerPath: no runtime to hand the notify fd to");
    if (sync_send(sync_fd, SYNC_SECCOMP_FD, NULL, 0) < 0 || send_fd(sync_fd, notify_fd, "s") < 0 ||
        sync_recv(sync_fd, &t, NULL, NULL) < 0)
        return ac_error(err, errno, "linux.seccomp.listenerPath: hand the notify fd to the runtime");
    if (t != SYNC_SECCOMP_DONE)
        return ac_error(err, 0, "linux.seccomp.listenerPath: the runtime could not reach the listener");
    return 0;
}

int seccomp_listener_forward(int sync_fd, const struct oci_seccomp *seccomp, const char *state_json,
                             ac_error_t *err)
{
    cleanup_close int fd = recv_fd(sync_fd);
    if (fd < 0)
        return ac_error(err, errno, "linux.seccomp: receive the notify fd");
    /* runtime-spec's container process state around the state */
    const char *meta = seccomp && seccomp->listener_metadata ? seccomp->listener_metadata : "";
    cleanup_free char *meta_json = xstrdup(meta);
    for (char *c = meta_json; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = '_';
    const char *pid = strstr(state_json, "\"pid\":");
    long pidv = pid ? strtol(pid + 6, NULL, 10) : 0;
    cleanup_free char *msg = xasprintf("{\"ociVersion\":\"1.2.0\",\"fds\":[\"seccompFd\"],\"pid\":%ld,"
                                       "\"metadata\":\"%s\",\"state\":%s}",
                                       pidv, meta_json, state_json);
    if (seccomp_send_listener(seccomp->listener_path, fd, msg, err) < 0) {
        sync_send(sync_fd, SYNC_ERROR, NULL, 0);
        return -1;
    }
    return sync_send(sync_fd, SYNC_SECCOMP_DONE, NULL, 0) < 0 ? ac_error(err, errno, "sync") : 0;
}

/* The home directory of uid in the container's /etc/passwd, or "/". */
static char *home_of(uint32_t uid)
{
    cleanup_file FILE *f = fopen("/etc/passwd", "re");
    char line[1024];
    while (f && fgets(line, sizeof(line), f)) {
        char *fields[7] = {0};
        char *cur = line, *tok;
        int n = 0;
        /* strsep keeps empty fields (gecos is often empty) */
        while (n < 7 && (tok = strsep(&cur, ":\n")) != NULL)
            fields[n++] = tok;
        uint64_t v;
        if (n >= 6 && parse_uint64(fields[2], &v) == 0 && v == uid && fields[5][0])
            return xstrdup(fields[5]);
    }
    return xstrdup("/");
}

/* runc sets HOME from the container's passwd when the config has none
 * (Docker's configs leave it to the runtime). */
static void add_home(const struct oci_process *p, struct process_state *ps)
{
    for (size_t i = 0; i < p->n_env; i++)
        if (strncmp(p->env[i], "HOME=", 5) == 0)
            return;
    cleanup_free char *home = home_of(p->user.uid);
    ps->env = xcalloc(p->n_env + 2, sizeof(char *));
    for (size_t i = 0; i < p->n_env; i++)
        ps->env[i] = p->env[i];
    ps->env[p->n_env] = xasprintf("HOME=%s", home);
}

int process_setup(const struct oci_process *p, const struct oci_seccomp *seccomp, int console_fd,
                  struct process_state *ps, ac_error_t *err)
{
    if (p->terminal && console_fd >= 0 && terminal_setup(console_fd, p, err) < 0)
        return -1;
    /* Resolved inside the container's root, and never through a /proc
     * magic link: a cwd of /proc/self/fd/N would otherwise land in
     * whatever directory fd N is, even one of the host's that a caller
     * leaked to us (the mechanism of CVE-2024-21626). */
    const char *cwd = p->cwd && *p->cwd ? p->cwd : "/";
    {
        cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        cleanup_close int dir = root < 0 ? -1 : safe_openat(root, cwd, O_PATH | O_DIRECTORY, 0, NULL);
        if (dir < 0 || fchdir(dir) < 0)
            return ac_error(err, errno, "process.cwd: chdir `%s`", cwd);
    }
    if (apply_rlimits(p, err) < 0 || apply_scheduling(p, err) < 0 || apply_labels(p, err) < 0)
        return -1;
    if (p->n_args == 0)
        return ac_error(err, 0, "process.args: must not be empty");
    add_home(p, ps);
    if (find_executable(p->args[0], p->env, &ps->exe, err) < 0)
        return -1;
    if (seccomp) {
        if (seccomp_prepare(seccomp, &ps->seccomp, err) < 0)
            return ac_error_wrap(err, "linux.seccomp");
        /* Without no_new_privs the kernel only takes a filter from a task
         * with CAP_SYS_ADMIN: load it before the capabilities go. A filter
         * with a listener is loaded now too, while the runtime is there to
         * hand its notify fd to the listener. */
        bool listener = seccomp->listener_path && *seccomp->listener_path;
        if (!p->no_new_privileges || listener) {
            int notify = -1;
            if (seccomp_load_prepared(ps->seccomp, &notify, err) < 0)
                return ac_error_wrap(err, "linux.seccomp");
            ps->seccomp_loaded = true;
            if (notify >= 0 && listener && send_notify_fd(ps->sync_fd, notify, err) < 0)
                return -1;
            if (notify >= 0)
                close(notify);
        }
    }
    umask(p->user.has_umask ? p->user.umask : 022);
    if (caps_apply_user_and_capabilities(p, err) < 0)
        return -1;
    if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "process.noNewPrivileges: prctl");
    return 0;
}

int tier_enter_cage(int tier, const char *rw_paths, struct process_state *ps, ac_error_t *err)
{
    if (landlock_restrict_writes(rw_paths, tier, err) < 0)
        return -1;
    ps->tiered = true;
    ps->tier = tier;
    ps->notify_fd = -1;
    return 0;
}

int tier_seccomp_now(struct process_state *ps, ac_error_t *err)
{
    if (!ps->tiered || ps->tier_loaded)
        return 0;
    if (tier_seccomp_load(ps->tier, &ps->notify_fd, err) < 0)
        return -1;
    ps->tier_loaded = true;
    return 0;
}

int process_load_seccomp(struct process_state *ps, ac_error_t *err)
{
    if (ps->seccomp && !ps->seccomp_loaded) {
        int notify = -1;
        if (seccomp_load_prepared(ps->seccomp, &notify, err) < 0)
            return ac_error_wrap(err, "linux.seccomp");
        ps->seccomp_loaded = true;
    }
    return 0;
}

int process_exec(const struct oci_process *p, struct process_state *ps, ac_error_t *err)
{
    if (process_load_seccomp(ps, err) < 0)
        return -1;
    /* Stacked with the config's filter (either order: the kernel takes the
     * most restrictive answer). */
    if (tier_seccomp_now(ps, err) < 0)
        return -1;
    static char *const empty_env[] = {NULL};
    if (ps->at_exec)
        *ps->at_exec = 1;
    execve(ps->exe, p->args, ps->env ? ps->env : p->env ? p->env : empty_env);
    int e = errno;
    if (ps->at_exec)
        *ps->at_exec = 0;
    if (e == ENOENT)
        return ac_error(err, 0, "exec: \"%s\": no such file or directory", ps->exe);
    if (e == EACCES)
        return ac_error(err, 0, "exec: \"%s\": permission denied", ps->exe);
    return ac_error(err, e, "exec: \"%s\"", ps->exe);
}
