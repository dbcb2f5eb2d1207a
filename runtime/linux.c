/* The container process's side of create and exec.
 *
 * init_main() is the whole setup of a new container as one checklist, in the
 * order a reviewer should audit it:
 *   wait for the runtime (ids mapped, cgroup joined) -> join namespaces ->
 *   become root in the user namespace -> cgroup namespace -> session ->
 *   loopback -> mounts -> createRuntime/createContainer hooks -> sysctl ->
 *   pivot_root, masks, read-only paths -> hostname -> (tier: Landlock) ->
 *   terminal -> cwd, rlimits, scheduling, labels -> executable lookup ->
 *   seccomp (early only without no_new_privs) -> user and capabilities ->
 *   no_new_privs -> ready -> wait for start -> startContainer hooks ->
 *   seccomp -> (tier: the tier's seccomp filter) -> execve. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/ioprio.h>
#include <net/if.h>
#include <sched.h>
#include <selinux/selinux.h>
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

#include "caps.h"
#include "hooks.h"
#include "landlock.h"
#include "linux.h"
#include "rootfs.h"
#include "sync.h"
#include "terminal.h"
#include "tier_seccomp.h"
#include "utils.h"
#include "../tier-annotations/tier.h"

const int ns_join_order[NS_COUNT] = {CLONE_NEWUSER, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET,
                                     CLONE_NEWPID,  CLONE_NEWCGROUP, CLONE_NEWTIME, CLONE_NEWNS};

const char *ns_proc_name(int type)
{
    switch (type) {
    case CLONE_NEWUSER: return "user";
    case CLONE_NEWIPC: return "ipc";
    case CLONE_NEWUTS: return "uts";
    case CLONE_NEWNET: return "net";
    case CLONE_NEWPID: return "pid";
    case CLONE_NEWCGROUP: return "cgroup";
    case CLONE_NEWTIME: return "time";
    case CLONE_NEWNS: return "mnt";
    default: return "?";
    }
}

int loopback_up(ac_error_t *err)
{
    cleanup_close int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return ac_error(err, errno, "network: socket");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        return ac_error(err, errno, "network: get flags of lo");
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        return ac_error(err, errno, "network: bring lo up");
    return 0;
}

pid_t clone_child(unsigned long flags, int cgroup_fd, bool *into_cgroup)
{
    *into_cgroup = false;
    if (cgroup_fd >= 0) {
        struct clone_args {
            uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
                set_tid_size, cgroup;
        } args = {.flags = flags | 0x200000000ULL /* CLONE_INTO_CGROUP */,
                  .exit_signal = SIGCHLD,
                  .cgroup = (uint64_t)cgroup_fd};
        long r = syscall(SYS_clone3, &args, sizeof(args));
        if (r >= 0) {
            *into_cgroup = true;
            return (pid_t)r;
        }
        if (errno != ENOSYS && errno != E2BIG && errno != EINVAL)
            return -1;
    }
    return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

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
        if (is_selinux_enabled() > 0) {
            if (setexeccon(p->selinux_label) < 0)
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
    return 0;
}

int process_exec(const struct oci_process *p, struct process_state *ps, ac_error_t *err)
{
    if (ps->seccomp && !ps->seccomp_loaded) {
        int notify = -1;
        if (seccomp_load_prepared(ps->seccomp, &notify, err) < 0)
            return ac_error_wrap(err, "linux.seccomp");
        ps->seccomp_loaded = true;
    }
    /* Last, so that nothing the runtime still does needs a syscall the
     * tier refuses; stacked on the config's filter. */
    if (ps->tiered && tier_seccomp_load(ps->tier, err) < 0)
        return -1;
    static char *const empty_env[] = {NULL};
    execve(ps->exe, p->args, ps->env ? ps->env : p->env ? p->env : empty_env);
    int e = errno;
    if (e == ENOENT)
        return ac_error(err, 0, "exec: \"%s\": no such file or directory", ps->exe);
    if (e == EACCES)
        return ac_error(err, 0, "exec: \"%s\": permission denied", ps->exe);
    return ac_error(err, e, "exec: \"%s\"", ps->exe);
}

/* Rootless, a sysctl that is not namespaced (or whose namespace is not
 * ours) is refused by the kernel; config.json asked for it explicitly, so
 * the container is refused too, saying why. */
static int set_sysctls(const struct oci_spec *spec, bool rootless, ac_error_t *err)
{
    if (spec->linux == NULL)
        return 0;
    for (size_t i = 0; i < spec->linux->n_sysctl; i++) {
        const struct oci_kv *kv = &spec->linux->sysctl[i];
        cleanup_free char *path = xasprintf("/proc/sys/%s", kv->key);
        for (char *c = path + 10; *c; c++)
            if (*c == '.')
                *c = '/';
        if (strstr(kv->key, "..") || strchr(kv->key, '/'))
            return ac_error(err, 0, "linux.sysctl: invalid name `%s`", kv->key);
        if (write_file(path, kv->value, strlen(kv->value), err) < 0) {
            int e = (*err)->errno_value;
            if (rootless && (e == EACCES || e == EPERM || e == EROFS || e == ENOENT))
                return ac_error_wrap(err, "linux.sysctl `%s`: not settable rootless (it is not namespaced to the "
                                          "container's namespaces, or they are not the runtime's own)",
                                     kv->key);
            return ac_error_wrap(err, "linux.sysctl `%s`", kv->key);
        }
    }
    return 0;
}

static int set_names(const struct init_config *c, ac_error_t *err)
{
    const struct oci_spec *spec = c->spec;
    if (spec->hostname && *spec->hostname) {
        if (!c->new_utsns)
            return ac_error(err, 0, "hostname: setting it needs a new uts namespace in linux.namespaces");
        if (sethostname(spec->hostname, strlen(spec->hostname)) < 0)
            return ac_error(err, errno, "hostname: sethostname `%s`", spec->hostname);
    }
    if (spec->domainname && *spec->domainname) {
        if (!c->new_utsns)
            return ac_error(err, 0, "domainname: setting it needs a new uts namespace in linux.namespaces");
        if (setdomainname(spec->domainname, strlen(spec->domainname)) < 0)
            return ac_error(err, errno, "domainname: setdomainname `%s`", spec->domainname);
    }
    return 0;
}

static int apply_personality(const struct oci_spec *spec, ac_error_t *err)
{
    if (spec->linux == NULL || !spec->linux->has_personality)
        return 0;
    unsigned long persona;
    const char *d = spec->linux->personality_domain;
    if (d == NULL || strcmp(d, "LINUX") == 0)
        persona = PER_LINUX;
    else if (strcmp(d, "LINUX32") == 0)
        persona = PER_LINUX32;
    else
        return ac_error(err, 0, "linux.personality.domain: unknown `%s`", d);
    if (personality(persona) < 0)
        return ac_error(err, errno, "linux.personality: personality");
    return 0;
}

/* Report the error to the runtime and die. */
__attribute__((noreturn)) static void init_fail(int sync_fd, ac_error_t *err)
{
    cleanup_free char *msg = ac_error_string(*err);
    sync_send(sync_fd, SYNC_ERROR, msg, strlen(msg));
    _exit(1);
}

static void run_container_hooks(const struct init_config *c, enum oci_hook_kind kind, const char *state,
                                 ac_error_t *err)
{
    const struct oci_hooks *h = &c->spec->hooks;
    if (h->n_hooks[kind] && hooks_run(kind, h->hooks[kind], h->n_hooks[kind], state, err) < 0)
        init_fail(c->sync_fd, err);
}

void init_main(const struct init_config *c)
{
    ac_error_t err = NULL;
    const struct oci_spec *spec = c->spec;
    const struct oci_process *p = spec->process;

    /* Non-dumpable before any container namespace is entered: until execve
     * this process is a copy of agentcage, and /proc/<pid>/exe must not be
     * a handle on the runtime binary for the container. Die with the runtime
     * while it is setting us up. */
    /* Rootless, the runtime (or newuidmap, which checks the owner of
     * /proc/<pid>) must open our /proc files to map our ids, and the
     * createRuntime hooks (the egress proxy) our namespaces, which a
     * non-dumpable process denies to a user who is not host root. There
     * the attack does not apply: that user cannot write the runtime binary
     * anyway. So rootless we stay dumpable until execve. */
    if (!c->rootless)
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    prepare_inherited_fds(c->preserve_fds);

    /* 1. The runtime has mapped our ids and put us in the cgroup. */
    enum sync_type t;
    char *states = NULL;
    size_t states_len = 0;
    if (sync_recv(c->sync_fd, &t, &states, &states_len) < 0 || t != SYNC_GO)
        _exit(1);
    /* states = "creating" state JSON, NUL, "created" state JSON */
    const char *state_creating = states;
    const char *state_created = states + strlen(states) + 1;

    /* 2. Join the namespaces given by path: user first, mount last. */
    for (int i = 0; i < NS_COUNT; i++) {
        if (c->join_fds[i] >= 0 && setns(c->join_fds[i], ns_join_order[i]) < 0) {
            ac_error(&err, errno, "linux.namespaces: join the %s namespace", ns_proc_name(ns_join_order[i]));
            init_fail(c->sync_fd, &err);
        }
    }
    /* 3. Root of the user namespace (uid/gid 0 are mapped by now). */
    if (c->new_userns || c->join_fds[0] >= 0) {
        if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
            ac_error(&err, errno, "user namespace: become root (is uid/gid 0 mapped?)");
            init_fail(c->sync_fd, &err);
        }
    }
    /* 4. The cgroup namespace is made now, after the runtime put us in our
     * cgroup, so that the container sees its cgroup as its root. */
    if (c->new_cgroupns && unshare(CLONE_NEWCGROUP) < 0) {
        ac_error(&err, errno, "linux.namespaces: new cgroup namespace");
        init_fail(c->sync_fd, &err);
    }
    setsid();
    if (c->new_netns && loopback_up(&err) < 0)
        init_fail(c->sync_fd, &err);

    /* 5. Mounts, devices (relative sources were made absolute by create). */
    struct rootfs_options ro = {.rootfs = c->rootfs, .no_pivot = c->no_pivot,
                                .in_user_ns = c->new_userns || c->rootless, .rootless = c->rootless,
                                .nofollow_bind_sources = c->tier != TIER_NONE,
                                .protect_roots = c->tier != TIER_NONE
                                                     ? spec_annotation(spec, "io.agentcage.protect-roots")
                                                     : NULL};
    if (rootfs_prepare(spec, &ro, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 6. prestart and createRuntime run in the runtime's namespaces;
     * createContainer here, before pivot_root. */
    if (sync_send(c->sync_fd, SYNC_RUN_HOOKS, NULL, 0) < 0)
        _exit(1);
    char *reply = NULL;
    if (sync_recv(c->sync_fd, &t, &reply, NULL) < 0 || t != SYNC_HOOKS_DONE)
        _exit(1);
    free(reply);
    run_container_hooks(c, HOOK_CREATE_CONTAINER, state_creating, &err);

    /* 7. Kernel parameters, through /proc before it turns read-only (the
     * namespaced ones follow the writer's namespaces, which are ours). */
    if (set_sysctls(spec, c->rootless, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 8. pivot_root, masked and read-only paths, read-only root. */
    if (rootfs_finalize(spec, &ro, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 9. Names, keyring, personality. */
    if (set_names(c, &err) < 0 || apply_personality(spec, &err) < 0)
        init_fail(c->sync_fd, &err);
    if (!c->no_new_keyring) {
        cleanup_free char *name = xasprintf("_ses.%s", c->id);
        /* KEYCTL_JOIN_SESSION_KEYRING = 1; ENOSYS/EPERM (no keyrings) is fine */
        syscall(SYS_keyctl, 1, name, 0, 0, 0);
    }

    /* 10. A tier's Landlock: from here on, writes only beneath /dev and the
     * tier's writable paths (the root is the container's now; the caps are
     * still there but Landlock holds against them). */
    struct process_state ps = {.sync_fd = c->sync_fd};
    if (c->tier != TIER_NONE && tier_enter_cage(c->tier, c->landlock_rw, &ps, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 11. The process: terminal, cwd, rlimits, labels, user, caps, seccomp. */
    if (process_setup(p, spec->linux ? spec->linux->seccomp : NULL, c->console_fd, &ps, &err) < 0)
        init_fail(c->sync_fd, &err);
    if (c->console_fd >= 0)
        close(c->console_fd);

    /* 12. Ready: the runtime records us and returns from create. We no
     * longer die with it: the engine's shim is our parent from now on. */
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    if (sync_send(c->sync_fd, SYNC_READY, NULL, 0) < 0)
        _exit(1);

    /* 13. Wait for `start`: it writes one byte into the exec fifo. */
    char b;
    ssize_t r;
    do
        r = read(c->fifo_fd, &b, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1)
        _exit(1);

    /* 14. startContainer hooks, then seccomp (the config's, then the
     * tier's) and execve. The sync socket is
     * close-on-exec: the runtime (when it waits, as `run` does) sees EOF. */
    run_container_hooks(c, HOOK_START_CONTAINER, state_created, &err);
    process_exec(p, &ps, &err);
    cleanup_free char *msg = ac_error_string(err);
    sync_send(c->sync_fd, SYNC_ERROR, msg, strlen(msg));
    dprintf(2, "agentcage: %s\n", msg);
    _exit(127);
}
