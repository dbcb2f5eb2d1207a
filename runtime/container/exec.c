/* exec: a new process in a running container.
 *
 * The runtime joins the container's pid namespace for its children, clones
 * the process straight into the container's cgroup, and the child joins the
 * other namespaces (user first, mount last), then takes the same
 * process_setup path as a container's init. The sync socket is close-on-exec:
 * EOF means the execve succeeded, a message is the error. At a tier, exec
 * gets the container's cage and nothing more. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hooks/audit.h"
#include "runtime/cgroup/cgroup.h"
#include "runtime/container/container.h"
#include "runtime/container/gvisor.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/process.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/linux/userns.h"
#include "runtime/util/selinux.h"
#include "runtime/util/utils.h"
#include "hooks/policy_hooks.h"
#include "tier-annotations/tier.h"

/* exec into a tiered container gets no capability the container does not
 * have. Engines build exec's process.json from the container's original
 * config (before the tier dropped capabilities), so extra capabilities are
 * narrowed away rather than refused; an explicit --cap asking for one is
 * refused, so a user at a terminal is not misled. */
static int tier_check_exec_process(const struct oci_spec *config, struct oci_process *p, int tier,
                                   const struct exec_options *o, ac_error_t *err)
{
    const struct oci_process *own = config->process;
    uint64_t allowed = own && own->has_capabilities ? own->capabilities.bounding : 0;
    for (size_t i = 0; i < o->n_caps; i++) {
        int cap = spec_cap_from_name(o->caps[i]);
        if (cap >= 0 && !(allowed & (1ULL << cap)))
            return ac_error(err, 0, "tier %d forbids exec with capability %s: the container does not have it", tier,
                            o->caps[i]);
    }
    if (p->has_capabilities) {
        uint64_t *sets[] = {&p->capabilities.bounding, &p->capabilities.effective, &p->capabilities.permitted,
                            &p->capabilities.inheritable, &p->capabilities.ambient};
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
            if (*sets[i] & ~allowed)
                ac_debug("tier %d: exec capabilities narrowed to the container's", tier);
            *sets[i] &= allowed;
        }
    }
    p->no_new_privileges = true;
    /* the cage's cgroup is the one its limits and watchdog look at */
    if (o->n_cgroup_subs)
        return ac_error(err, 0, "tier %d forbids exec --cgroup: the process runs in the container's cgroup", tier);
    return 0;
}

/* exec gets the environment rules the init got: engines build exec's
 * process from their own copy of the container's config (docker exec,
 * podman exec, CRI ExecSync), so the tier's allow-list applies to it and
 * at tiers 2 and 3 the proxy variables are put in (replacing the caller's)
 * here, as the mapping did for process.env. */
static void tier_exec_env(const struct tier_operator *op, const struct oci_spec *config, struct oci_process *p,
                          int tier, struct oci_spec *arena)
{
    const char *allow = spec_annotation(config, "io.agentcage.env-allow");
    size_t n_proxy = 0;
    while (tier >= 2 && policy_proxy_env[n_proxy])
        n_proxy++;
    char **env = spec_alloc(arena, (p->n_env + n_proxy + 1) * sizeof(char *));
    size_t n = 0;
    for (size_t i = 0; i < p->n_env; i++) {
        if (tier >= 2 && policy_proxy_env_name(p->env[i]))
            continue;
        if (!tier_env_keeps(op, allow, p->env[i])) {
            ac_debug("tier %d: exec: dropped the variable %.*s (the tier's environment rules)", tier,
                     (int)strcspn(p->env[i], "="), p->env[i]);
            continue;
        }
        env[n++] = p->env[i];
    }
    for (size_t i = 0; i < n_proxy; i++)
        env[n++] = spec_strdup(arena, policy_proxy_env[i]);
    env[n] = NULL;
    p->env = env;
    p->n_env = n;
}

struct exec_child {
    const struct oci_process *process;
    const struct oci_seccomp *seccomp;
    int join_fds[NS_COUNT];
    int sync_fd, console_fd, preserve_fds;
    struct cgroup_join *cgroup_join; /* joined first, by the child itself (cgroup.h) */
    int root_fd;             /* a container in the runtime's mount namespace: its chroot, else -1 */
    int tier;                /* the container's tier from its state, TIER_NONE when plain */
    bool userns_late;        /* the tier's user namespace: joined after the others, as its init did */
    bool cgroup2_placed;     /* no cgroup2 mount, or clone3 put us in ours: joining v1 is all */
    bool vforked;            /* started by clone_vfork: the runtime waits for our execve, we never wait for it */
    volatile int *at_exec;   /* vforked: set just before our execve (process_state.at_exec) */
    const char *landlock_rw;
};

__attribute__((noreturn)) static void exec_child_main(const struct exec_child *c)
{
    ac_error_t err = NULL;
    /* non-dumpable before joining the container (see init_main); a vfork
     * child shares the runtime's memory, which the runtime made so */
    if (!c->vforked)
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    prepare_inherited_fds(c->preserve_fds);
    bool joined = false;
    if (c->cgroup_join && c->cgroup_join->n)
        joined = cgroup_join_report(c->cgroup_join, c->sync_fd);
    else if (c->cgroup_join)
        cgroup_join_close(c->cgroup_join);
    ac_log_keep_stderr();
    /* (debug lines with runc's words for the same steps, see init_main) */
    ac_debug("child process in init(): the exec process, pid %d", (int) getpid());
    /* in all our cgroups by ourselves: the runtime has nothing to do before
     * we go on, and sends no go-ahead (cgroup_join_finish's *alone) */
    enum sync_type t;
    if (c->vforked && !joined)
        _exit(1); /* (the runtime has the reason from the report) */
    if (!(joined && c->cgroup2_placed) && (sync_recv(c->sync_fd, &t, NULL, NULL) < 0 || t != SYNC_GO))
        _exit(1);
    ac_debug("nsexec container setup: joining the container's namespaces");
    /* user first (it grants the capabilities for the others), except a
     * tier's: its other namespaces are the host's to enter, so it comes last */
    for (int k = 0; k < NS_COUNT; k++) {
        int i = c->userns_late ? (k + 1) % NS_COUNT : k;
        if (c->join_fds[i] >= 0 && setns(c->join_fds[i], ns_join_order[i]) < 0) {
            ac_error(&err, errno, "exec: join the container's %s namespace", ns_proc_name(ns_join_order[i]));
            goto fail;
        }
    }
    if (c->userns_late && c->join_fds[0] >= 0 && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)) {
        ac_error(&err, errno, "exec: become root of the container's user namespace");
        goto fail;
    }
    /* no mount namespace of its own: the container is a chroot in ours */
    if (c->root_fd >= 0 && (fchdir(c->root_fd) < 0 || chroot(".") < 0)) {
        ac_error(&err, errno, "exec: chroot to the container's root");
        goto fail;
    }
    setsid();
    struct process_state ps = {.sync_fd = c->sync_fd, .at_exec = c->at_exec};
    /* in the container's mount namespace now: its root is ours */
    if (c->tier != TIER_NONE && tier_enter_cage(c->tier, c->landlock_rw, &ps, &err) < 0)
        goto fail;
    if (process_setup(c->process, c->seccomp, c->console_fd, &ps, &err) < 0)
        goto fail;
    if (c->console_fd >= 0)
        close(c->console_fd);
    /* a tier's filter now, and its listener to the watchdog (through the
     * runtime) before anything of the process runs */
    if (tier_seccomp_now(&ps, &err) < 0)
        goto fail;
    if (ps.tier_loaded && ps.notify_fd >= 0) {
        enum sync_type reply;
        if (sync_send(c->sync_fd, SYNC_TIER_NOTIFY_FD, NULL, 0) < 0 || send_fd(c->sync_fd, ps.notify_fd, "n") < 0 ||
            sync_recv(c->sync_fd, &reply, NULL, NULL) < 0 || reply != SYNC_SECCOMP_DONE)
            _exit(1);
        close(ps.notify_fd);
    }
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    ac_debug("setns_init: about to exec (joined by setns, set up)");
    process_exec(c->process, &ps, &err);
fail:;
    cleanup_free char *msg = ac_error_string(err);
    sync_send(c->sync_fd, SYNC_ERROR, msg, strlen(msg));
    _exit(1);
}

/* The exec's stdio, as the init's: the engine's pipes for this process
 * belong to the container's root (userns_give_stdio). */
static void give_stdio_to_container_root(pid_t pid)
{
    uint32_t ids[2];
    static const char *const files[] = {"uid_map", "gid_map"};
    for (int k = 0; k < 2; k++) {
        cleanup_free char *path = xasprintf("/proc/%d/%s", pid, files[k]);
        cleanup_file FILE *f = fopen(path, "re");
        unsigned long inside, outside, count;
        if (f == NULL || fscanf(f, "%lu %lu %lu", &inside, &outside, &count) != 3 || inside != 0)
            return;
        ids[k] = (uint32_t)outside;
    }
    userns_give_stdio(ids[0], ids[1]);
}

/* Whether the init (its /proc/PID/ns folder at theirs) and we (ours) share
 * the namespace of this kind: a short lookup in each folder, not a path
 * from /proc per stat (18 of them). */
static bool same_namespace(int theirs, int ours, const char *name)
{
    struct stat sa, sb;
    if (fstatat(theirs, name, &sa, 0) < 0)
        return true; /* a kind the kernel lacks counts as shared */
    return fstatat(ours, name, &sb, 0) == 0 && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/* The exec'd process's tier listener (SCM_RIGHTS on sync_fd) to the
 * container's watchdog, on its socket in the state dir, with the process's
 * pid (it made its own Landlock domain, whose audit records name it); the
 * watchdog's byte back says it holds it. Without it the process's refusals
 * would go unanswered: the exec fails instead. */
static int watchdog_take_listener(const struct global_opts *g, const char *id, pid_t child, int sync_fd,
                                  ac_error_t *err)
{
    cleanup_close int fd = recv_fd(sync_fd);
    if (fd < 0)
        return ac_error(err, errno, "exec: receive the process's seccomp listener");
    char name[16];
    snprintf(name, sizeof(name), "n%d", (int)child);
    if (watchdog_hand_over(g, id, fd, name) < 0)
        return ac_error(err, errno, "exec: the container's watchdog does not take the process's seccomp listener");
    return sync_send(sync_fd, SYNC_SECCOMP_DONE, NULL, 0) < 0 ? ac_error(err, errno, "exec: sync") : 0;
}

/* A tier's exec, in the audit trail. */
static void exec_audit(const struct global_opts *g, const struct container_state *st,
                       const struct oci_process *process, pid_t pid)
{
    if (st->tier == TIER_NONE)
        return;
    cleanup_free char *argv_json = audit_json_argv(process->args);
    cleanup_free char *members = xasprintf("\"tier\":%d,\"pid\":%d,\"argv\":%s,\"user\":\"%u:%u\"", st->tier, pid,
                                           argv_json, process->user.uid, process->user.gid);
    container_audit(g, "exec", st->id, members);
}

static int exec_child_vforked(void *arg)
{
    exec_child_main(arg);
}

/* A vfork child that ended before its execve had our memory until then. One
 * that exited by itself (after the report of an error) left our heap whole;
 * one killed by a signal (from inside the container: it was born in the
 * container's pid namespace) may have stopped halfway through a malloc or a
 * free of it. Then nothing of ours touches the heap again: one fixed line
 * (to the log too, as every error), and out. (A forked child's death costs
 * us nothing of the kind.) */
static void exec_vfork_child_ended(pid_t child)
{
    siginfo_t si = {0};
    if (waitid(P_PID, child, &si, WEXITED | WNOWAIT) == 0 && si.si_code == CLD_EXITED)
        return;
    ac_error_report_fixed("exec failed: the process was killed during its setup");
    _exit(1);
}

/* The exec child as vfork (clone_vfork) when nothing of its setup waits for
 * the runtime: it joins every cgroup by itself (v1 through the `tasks`
 * files, cgroup2 by clone3), and has no terminal to hand over, no listener
 * or tier watchdog to get its seccomp fd, no sub-cgroup for the runtime to
 * put it in; host root (a rootless runtime joins the container's user
 * namespace itself first). */
static bool exec_can_vfork(const struct exec_child *c, const struct cgroup_join *join, const struct exec_options *o,
                           bool console_pair)
{
#if defined(__SANITIZE_ADDRESS__)
    return false; /* ASan does not follow a child that shares its memory on another stack */
#endif
    return geteuid() == 0 && c->tier == TIER_NONE && c->console_fd < 0 && !console_pair && join->n > 0 &&
           o->n_cgroup_subs == 0 && !(c->seccomp && c->seccomp->listener_path && *c->seccomp->listener_path);
}

int container_exec(const struct global_opts *g, struct container_state *st, enum container_status status,
                   struct oci_spec *config, struct oci_process *process, const struct exec_options *o,
                   struct exec_result *res, ac_error_t *err)
{
    const char *id = st->id;
    res->pid = -1;
    res->console_master = -1;
    if (st->tier != TIER_NONE && (tier_check_caller_fds(st->tier, o->preserve_fds, err) < 0 ||
                                  tier_check_exec_process(config, process, st->tier, o, err) < 0))
        return -1;
    if (st->userns_late)
        give_stdio_to_container_root(st->pid);
    /* the process's strings live in its holder; new ones go in config's arena */
    if (st->tier != TIER_NONE)
        tier_exec_env(&g->tier, config, process, st->tier, config);
    if (st->gvisor) {
        if (gvisor_exec(g, st, process, o, res, err) < 0)
            return -1;
        exec_audit(g, st, process, res->pid);
        return 0;
    }
    struct exec_child c = {.process = process,
                           .seccomp = config->linux ? config->linux->seccomp : NULL,
                           .sync_fd = -1,
                           .console_fd = -1,
                           .root_fd = -1,
                           .preserve_fds = o->preserve_fds,
                           .tier = st->tier,
                           .userns_late = st->userns_late,
                           .landlock_rw = st->tier != TIER_NONE ? spec_annotation(config, "io.agentcage.landlock-rw")
                                                                : NULL};
    int sync_fds[2] = {-1, -1}, console_pair[2] = {-1, -1};
    int ret = -1;
    cleanup_free char *msg = NULL;
    int pid_fd = -1, saved_pidns = -1;
    struct cgroup_join join = {.n = 0, .v2_fd = -1};
    pid_t child = -1;
    bool same_mnt = false;
    for (int i = 0; i < NS_COUNT; i++)
        c.join_fds[i] = -1;
    {
        cleanup_free char *dir = xasprintf("/proc/%d/ns", st->pid);
        cleanup_close int theirs = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        cleanup_close int ours = open("/proc/self/ns", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (theirs < 0 || ours < 0) {
            ac_error(err, errno, "exec: open `%s`", theirs < 0 ? dir : "/proc/self/ns");
            goto out;
        }
        for (int i = 0; i < NS_COUNT; i++) {
            const char *name = ns_proc_name(ns_join_order[i]);
            if (same_namespace(theirs, ours, name)) {
                same_mnt |= ns_join_order[i] == CLONE_NEWNS;
                continue;
            }
            int fd = openat(theirs, name, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                ac_error(err, errno, "exec: open `%s/%s`", dir, name);
                goto out;
            }
            if (ns_join_order[i] == CLONE_NEWPID)
                pid_fd = fd;
            else
                c.join_fds[i] = fd;
        }
    }
    if (same_mnt) {
        cleanup_free char *root = xasprintf("/proc/%d/root", st->pid);
        c.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (c.root_fd < 0) {
            ac_error(err, errno, "exec: open `%s`", root);
            goto out;
        }
    }
    /* the container may have gone while we opened its namespaces */
    if (process_start_time(st->pid) != st->pid_start_time) {
        ac_error(err, 0, "cannot exec in a stopped container `%s`", id);
        goto out;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync_fds) < 0) {
        ac_error(err, errno, "socketpair");
        goto out;
    }
    if (process->terminal) {
        if (o->console_socket) {
            c.console_fd = console_socket_connect(o->console_socket, err);
            if (c.console_fd < 0)
                goto out;
        } else if (!o->detach) {
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, console_pair) < 0) {
                ac_error(err, errno, "socketpair");
                goto out;
            }
            c.console_fd = console_pair[1];
        } else {
            ac_error(err, 0, "exec: --tty with --detach needs --console-socket");
            goto out;
        }
    }
    /* Not host root: joining the container's pid namespace takes
     * CAP_SYS_ADMIN in its user namespace, so that one is joined first,
     * here (the child then has it already). */
    if (pid_fd >= 0 && geteuid() != 0 && c.join_fds[0] >= 0) {
        if (setns(c.join_fds[0], CLONE_NEWUSER) < 0) {
            ac_error(err, errno, "exec: join the container's user namespace");
            goto out;
        }
        close(c.join_fds[0]);
        c.join_fds[0] = -1;
    }
    if (pid_fd >= 0) {
        saved_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
        if (setns(pid_fd, CLONE_NEWPID) < 0) {
            ac_error(err, errno, "exec: join the container's pid namespace");
            goto out;
        }
    }
    c.sync_fd = sync_fds[1];
    /* the child sets the label inside the container: whether SELinux is
     * on is the host's answer, looked at here */
    if (c.process->selinux_label && *c.process->selinux_label)
        ac_selinux_probe();
    if (st->cgroup_path[0] && o->n_cgroup_subs == 0) {
        ac_error_t slow = NULL; /* not to be opened: joined the slow way */
        if (cgroup_join_open(st->cgroup_path, &join, &slow) < 0) {
            ac_debug("%s", slow->msg);
            ac_error_free(&slow);
        }
    }
    c.cgroup_join = &join;
    bool child_joins = join.n > 0, has_v2 = join.v2_fd >= 0, into_cgroup, alone = false, vforked = false;
    if (exec_can_vfork(&c, &join, o, console_pair[0] >= 0)) {
        /* the child's copies of what it closes and changes: its fd table is
         * its own, its memory ours */
        static char stack[256 * 1024] __attribute__((aligned(16)));
        volatile int at_exec = 0;
        struct cgroup_join child_join = join;
        struct exec_child vc = c;
        vc.cgroup_join = &child_join;
        vc.cgroup2_placed = true;
        vc.vforked = true;
        vc.at_exec = &at_exec;
        /* the child's memory is ours until its execve: not dumpable from
         * its first moment in the container's pid namespace (the flag is
         * the memory's, so ours too from here on) */
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        child = clone_vfork(exec_child_vforked, &vc, stack, sizeof(stack), join.v2_fd);
        vforked = child > 0;
        into_cgroup = vforked && has_v2;
        if (vforked && !at_exec)
            exec_vfork_child_ended(child);
    }
    if (!vforked)
        child = clone_child(0, join.v2_fd, &into_cgroup);
    if (child < 0) {
        ac_error(err, errno, "exec: fork");
        goto out;
    }
    if (child == 0) {
        close(sync_fds[0]);
        c.cgroup2_placed = !has_v2 || into_cgroup;
        exec_child_main(&c);
    }
    if (saved_pidns >= 0)
        setns(saved_pidns, CLONE_NEWPID);
    close(sync_fds[1]);
    sync_fds[1] = -1;
    cgroup_join_close(&join);
    if (vforked) {
        /* it has exec'd (or died): its report of the cgroups is there */
        enum sync_type joined_type;
        cleanup_free char *why = NULL;
        if (sync_recv(sync_fds[0], &joined_type, &why, NULL) < 0 || joined_type != SYNC_JOINED) {
            ac_error(err, 0, "exec failed: the process died during setup");
            goto out_kill;
        }
        if (why && *why) {
            ac_error(err, 0, "exec failed: %s", why);
            goto out_kill;
        }
        alone = true;
    } else if (st->cgroup_path[0] &&
        (o->n_cgroup_subs
             ? cgroup_enter_sub(st->cgroup_path, child, o->cgroup_subs, o->n_cgroup_subs, err)
             : cgroup_join_finish(sync_fds[0], child_joins, has_v2, into_cgroup, st->cgroup_path, child, &alone,
                                  err)) < 0)
        goto out_kill;
    if (!alone && sync_send(sync_fds[0], SYNC_GO, NULL, 0) < 0) {
        ac_error(err, errno, "exec: start the process");
        goto out_kill;
    }
    enum sync_type t;
    int r = sync_recv(sync_fds[0], &t, &msg, NULL);
    while (r == 0 && (t == SYNC_SECCOMP_FD || t == SYNC_TIER_NOTIFY_FD)) {
        if (t == SYNC_SECCOMP_FD) {
            cleanup_free char *state = state_oci_json(st, status, false);
            if (seccomp_listener_forward(sync_fds[0], c.seccomp, state, err) < 0)
                goto out_kill;
        } else if (watchdog_take_listener(g, id, child, sync_fds[0], err) < 0) {
            goto out_kill;
        }
        free(msg);
        msg = NULL;
        r = sync_recv(sync_fds[0], &t, &msg, NULL);
    }
    if (r < 0 || t == SYNC_ERROR) {
        ac_error(err, 0, "exec failed: %s", msg ? msg : "the process died during setup");
        waitpid(child, NULL, 0);
        child = -1;
        goto out;
    }
    if (o->pid_file && write_pid_file(o->pid_file, child, err) < 0)
        goto out_kill;
    exec_audit(g, st, process, child);
    /* a terminal without a console socket: the caller proxies the master */
    if (console_pair[0] >= 0) {
        res->console_master = recv_fd(console_pair[0]);
        if (res->console_master < 0) {
            ac_error(err, errno, "exec: receive the pty master");
            goto out_kill;
        }
    }
    res->pid = child;
    ret = 0;
    goto out;
out_kill:
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
out:
    for (int i = 0; i < 2; i++) {
        if (sync_fds[i] >= 0)
            close(sync_fds[i]);
        if (console_pair[i] >= 0)
            close(console_pair[i]);
    }
    if (c.console_fd >= 0 && c.console_fd != console_pair[1])
        close(c.console_fd);
    for (int i = 0; i < NS_COUNT; i++)
        if (c.join_fds[i] >= 0)
            close(c.join_fds[i]);
    if (c.root_fd >= 0)
        close(c.root_fd);
    if (pid_fd >= 0)
        close(pid_fd);
    if (saved_pidns >= 0)
        close(saved_pidns);
    cgroup_join_close(&join);
    return ret;
}
