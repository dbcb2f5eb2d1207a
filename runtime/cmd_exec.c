/* exec: a new process in a running container.
 *
 * The runtime joins the container's pid namespace for its children, clones
 * the process straight into the container's cgroup, and the child joins the
 * other namespaces (user first, mount last), then takes the same
 * process_setup path as a container's init. The sync socket is close-on-exec:
 * EOF means the execve succeeded, a message is the error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../hooks/audit.h"
#include "cgroup.h"
#include "commands.h"
#include "linux.h"
#include "sync.h"
#include "terminal.h"
#include "utils.h"
#include "../tier-annotations/tier.h"

enum { OPT_CONSOLE = 256, OPT_CWD, OPT_PID_FILE, OPT_PRESERVE, OPT_LABEL, OPT_APPARMOR, OPT_NNP, OPT_IGNORE_PAUSED,
       OPT_CGROUP };

struct exec_flags {
    const char *process_file, *console_socket, *cwd, *pid_file, *label, *apparmor, *user;
    char **env; size_t n_env;
    char **caps; size_t n_caps;
    char **gids; size_t n_gids;
    bool tty, detach, nnp;
    int preserve_fds;
};

static void push(char ***list, size_t *n, const char *s)
{
    *list = xrealloc(*list, (*n + 2) * sizeof(char *));
    (*list)[(*n)++] = (char *)s;
    (*list)[*n] = NULL;
}

static int parse_exec_flags(int argc, char **argv, struct exec_flags *f, ac_error_t *err)
{
    static const struct option opts[] = {
        {"process", required_argument, NULL, 'p'},
        {"console-socket", required_argument, NULL, OPT_CONSOLE},
        {"cwd", required_argument, NULL, OPT_CWD},
        {"env", required_argument, NULL, 'e'},
        {"tty", no_argument, NULL, 't'},
        {"user", required_argument, NULL, 'u'},
        {"additional-gids", required_argument, NULL, 'g'},
        {"process-label", required_argument, NULL, OPT_LABEL},
        {"apparmor", required_argument, NULL, OPT_APPARMOR},
        {"no-new-privs", no_argument, NULL, OPT_NNP},
        {"cap", required_argument, NULL, 'c'},
        {"detach", no_argument, NULL, 'd'},
        {"pid-file", required_argument, NULL, OPT_PID_FILE},
        {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
        {"ignore-paused", no_argument, NULL, OPT_IGNORE_PAUSED},
        {"cgroup", required_argument, NULL, OPT_CGROUP},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = cli_getopt(argc, argv, "+p:e:tu:g:c:d", opts)) != -1) {
        switch (c) {
        case 'p': f->process_file = optarg; break;
        case OPT_CONSOLE: f->console_socket = optarg; break;
        case OPT_CWD: f->cwd = optarg; break;
        case 'e': push(&f->env, &f->n_env, optarg); break;
        case 't': f->tty = true; break;
        case 'u': f->user = optarg; break;
        case 'g': push(&f->gids, &f->n_gids, optarg); break;
        case OPT_LABEL: f->label = optarg; break;
        case OPT_APPARMOR: f->apparmor = optarg; break;
        case OPT_NNP: f->nnp = true; break;
        case 'c': push(&f->caps, &f->n_caps, optarg); break;
        case 'd': f->detach = true; break;
        case OPT_PID_FILE: f->pid_file = optarg; break;
        case OPT_IGNORE_PAUSED: break;
        case OPT_CGROUP: break;
        case OPT_PRESERVE: {
            uint64_t n;
            if (parse_uint64(optarg, &n) < 0 || n > 65536)
                return ac_error(err, 0, "exec: --preserve-fds: expected a number, got `%s`", optarg);
            f->preserve_fds = (int)n;
            break;
        }
        default:
            return ac_error(err, 0, "exec: unknown flag `%s`", argv[optind - 1]);
        }
    }
    return 0;
}

static int parse_uid_gid(const char *user, uint32_t *uid, uint32_t *gid, bool *has_gid, ac_error_t *err)
{
    cleanup_free char *u = xstrdup(user);
    char *colon = strchr(u, ':');
    uint64_t v;
    *has_gid = false;
    if (colon) {
        *colon = '\0';
        if (parse_uint64(colon + 1, &v) < 0 || v > UINT32_MAX)
            return ac_error(err, 0, "exec: --user `%s`: expected UID[:GID] as numbers", user);
        *gid = (uint32_t)v;
        *has_gid = true;
    }
    if (parse_uint64(u, &v) < 0 || v > UINT32_MAX)
        return ac_error(err, 0, "exec: --user `%s`: expected UID[:GID] as numbers", user);
    *uid = (uint32_t)v;
    return 0;
}

/* The process to run: --process FILE, or the container's own process with
 * argv and the flags applied (as runc does). */
static int build_process(struct oci_spec *config, struct exec_flags *f, int argc, char **argv,
                         struct oci_spec **holder, struct oci_process **out, ac_error_t *err)
{
    struct oci_process *p;
    struct oci_spec *arena = config;
    if (f->process_file) {
        cleanup_free char *text = NULL;
        size_t len = 0;
        if (strcmp(f->process_file, "-") == 0 ? read_all_fd(0, &text, &len, err) < 0
                                               : read_all_file(f->process_file, &text, &len, err) < 0)
            return -1;
        if (spec_parse_process(text, len, "process.json", holder, err) < 0)
            return -1;
        p = (*holder)->process;
        arena = *holder;
    } else {
        if (optind >= argc)
            return ac_error(err, 0, "exec: no command given (usage: exec [flags] ID COMMAND [ARGS...] or --process FILE)");
        p = spec_alloc(config, sizeof(*p));
        *p = *config->process;
        p->args = &argv[optind];
        p->n_args = (size_t)(argc - optind);
        p->terminal = f->tty;
    }
    if (f->tty)
        p->terminal = true;
    if (f->cwd)
        p->cwd = spec_strdup(arena, f->cwd);
    if (f->n_env) {
        char **env = spec_alloc(arena, (p->n_env + f->n_env + 1) * sizeof(char *));
        for (size_t i = 0; i < p->n_env; i++)
            env[i] = p->env[i];
        for (size_t i = 0; i < f->n_env; i++)
            env[p->n_env + i] = f->env[i];
        p->n_env += f->n_env;
        env[p->n_env] = NULL;
        p->env = env;
    }
    if (f->user) {
        bool has_gid;
        if (parse_uid_gid(f->user, &p->user.uid, &p->user.gid, &has_gid, err) < 0)
            return -1;
    }
    if (f->n_gids) {
        p->user.additional_gids = spec_alloc(arena, f->n_gids * sizeof(uint32_t));
        for (size_t i = 0; i < f->n_gids; i++) {
            uint64_t v;
            if (parse_uint64(f->gids[i], &v) < 0 || v > UINT32_MAX)
                return ac_error(err, 0, "exec: --additional-gids `%s`: expected a number", f->gids[i]);
            p->user.additional_gids[i] = (uint32_t)v;
        }
        p->user.n_additional_gids = f->n_gids;
    }
    for (size_t i = 0; i < f->n_caps; i++) {
        int cap = spec_cap_from_name(f->caps[i]);
        if (cap < 0)
            return ac_error(err, 0, "exec: --cap: unknown capability `%s`", f->caps[i]);
        uint64_t bit = 1ULL << cap;
        p->has_capabilities = true;
        p->capabilities.bounding |= bit;
        p->capabilities.effective |= bit;
        p->capabilities.permitted |= bit;
        if (p->capabilities.inheritable)
            p->capabilities.ambient |= bit;
    }
    if (f->nnp)
        p->no_new_privileges = true;
    if (f->label)
        p->selinux_label = spec_strdup(arena, f->label);
    if (f->apparmor)
        p->apparmor_profile = spec_strdup(arena, f->apparmor);
    *out = p;
    return 0;
}

/* At a tier, exec gets the container's cage and nothing more: no
 * capability beyond the container's own (a --cap or a process.json asking
 * for more is refused), no_new_privs always. */
/* exec into a tiered container gets no capability the container does not
 * have. Engines build exec's process.json from the container's original
 * config (before the tier dropped capabilities), so extra capabilities are
 * narrowed away rather than refused; an explicit --cap asking for one is
 * refused, so a user at a terminal is not misled. */
static int tier_check_exec_process(const struct oci_spec *config, struct oci_process *p, int tier,
                                   const struct exec_flags *f, ac_error_t *err)
{
    const struct oci_process *own = config->process;
    uint64_t allowed = own && own->has_capabilities ? own->capabilities.bounding : 0;
    for (size_t i = 0; i < f->n_caps; i++) {
        int cap = spec_cap_from_name(f->caps[i]);
        if (cap >= 0 && !(allowed & (1ULL << cap)))
            return ac_error(err, 0, "tier %d forbids exec with capability %s: the container does not have it", tier,
                            f->caps[i]);
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
    return 0;
}

struct exec_child {
    const struct oci_process *process;
    const struct oci_seccomp *seccomp;
    int join_fds[NS_COUNT];
    int sync_fd, console_fd, preserve_fds;
    int tier;                /* the container's tier from its state, TIER_NONE when plain */
    const char *landlock_rw;
};

__attribute__((noreturn)) static void exec_child_main(const struct exec_child *c)
{
    ac_error_t err = NULL;
    /* non-dumpable before joining the container (see init_main) */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    prepare_inherited_fds(c->preserve_fds);
    enum sync_type t;
    if (sync_recv(c->sync_fd, &t, NULL, NULL) < 0 || t != SYNC_GO)
        _exit(1);
    for (int i = 0; i < NS_COUNT; i++) {
        if (c->join_fds[i] >= 0 && setns(c->join_fds[i], ns_join_order[i]) < 0) {
            ac_error(&err, errno, "exec: join the container's %s namespace", ns_proc_name(ns_join_order[i]));
            goto fail;
        }
    }
    setsid();
    struct process_state ps = {.sync_fd = c->sync_fd};
    /* in the container's mount namespace now: its root is ours */
    if (c->tier != TIER_NONE && tier_enter_cage(c->tier, c->landlock_rw, &ps, &err) < 0)
        goto fail;
    if (process_setup(c->process, c->seccomp, c->console_fd, &ps, &err) < 0)
        goto fail;
    if (c->console_fd >= 0)
        close(c->console_fd);
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    process_exec(c->process, &ps, &err);
fail:;
    cleanup_free char *msg = ac_error_string(err);
    sync_send(c->sync_fd, SYNC_ERROR, msg, strlen(msg));
    _exit(1);
}

static bool same_namespace(pid_t pid, const char *name)
{
    char a[64], b[64];
    struct stat sa, sb;
    snprintf(a, sizeof(a), "/proc/%d/ns/%s", pid, name);
    snprintf(b, sizeof(b), "/proc/self/ns/%s", name);
    if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
        return stat(a, &sa) < 0; /* a kind the kernel lacks counts as shared */
    return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

COMMAND(exec)
{
    struct exec_flags f = {0};
    int ret = -1;
    /* declared before the first goto: the cleanups run on every path */
    cleanup_state struct container_state *st = NULL;
    cleanup_spec struct oci_spec *config = NULL;
    cleanup_spec struct oci_spec *holder = NULL;
    cleanup_free char *msg = NULL;
    if (parse_exec_flags(argc, argv, &f, err) < 0)
        goto out_flags;
    if (optind >= argc) {
        ac_error(err, 0, "exec: missing container id");
        goto out_flags;
    }
    const char *id = argv[optind++];
    if (state_load(g, id, &st, err) < 0)
        goto out_flags;
    enum container_status status = state_status(g, st);
    if (status == STATUS_STOPPED) {
        ac_error(err, 0, "cannot exec in a stopped container `%s`", id);
        goto out_flags;
    }
    if (status == STATUS_PAUSED) {
        ac_error(err, 0, "cannot exec in a paused container `%s`", id);
        goto out_flags;
    }
    struct oci_process *process = NULL;
    if (container_load_config(g, id, &config, err) < 0 ||
        build_process(config, &f, argc, argv, &holder, &process, err) < 0)
        goto out_flags;
    if (st->tier != TIER_NONE && (tier_check_caller_fds(st->tier, f.preserve_fds, err) < 0 ||
                                  tier_check_exec_process(config, process, st->tier, &f, err) < 0))
        goto out_flags;

    struct exec_child c = {.process = process,
                           .seccomp = config->linux ? config->linux->seccomp : NULL,
                           .sync_fd = -1,
                           .console_fd = -1,
                           .preserve_fds = f.preserve_fds,
                           .tier = st->tier,
                           .landlock_rw = st->tier != TIER_NONE ? spec_annotation(config, "io.agentcage.landlock-rw")
                                                                : NULL};
    int sync_fds[2] = {-1, -1}, console_pair[2] = {-1, -1};
    int pid_fd = -1, saved_pidns = -1, cgroup_fd = -1;
    pid_t child = -1;
    for (int i = 0; i < NS_COUNT; i++) {
        c.join_fds[i] = -1;
        const char *name = ns_proc_name(ns_join_order[i]);
        if (same_namespace(st->pid, name))
            continue;
        cleanup_free char *path = xasprintf("/proc/%d/ns/%s", st->pid, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            ac_error(err, errno, "exec: open `%s`", path);
            goto out;
        }
        if (ns_join_order[i] == CLONE_NEWPID)
            pid_fd = fd;
        else
            c.join_fds[i] = fd;
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
        if (f.console_socket) {
            c.console_fd = console_socket_connect(f.console_socket, err);
            if (c.console_fd < 0)
                goto out;
        } else if (!f.detach) {
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
    if (st->cgroup_path[0])
        cgroup_fd = cgroup_v2_dirfd(st->cgroup_path);
    bool into_cgroup;
    child = clone_child(0, cgroup_fd, &into_cgroup);
    if (child < 0) {
        ac_error(err, errno, "exec: fork");
        goto out;
    }
    if (child == 0) {
        close(sync_fds[0]);
        exec_child_main(&c);
    }
    if (saved_pidns >= 0)
        setns(saved_pidns, CLONE_NEWPID);
    close(sync_fds[1]);
    sync_fds[1] = -1;
    if (!into_cgroup && st->cgroup_path[0] && cgroup_enter(st->cgroup_path, child, err) < 0)
        goto out_kill;
    if (sync_send(sync_fds[0], SYNC_GO, NULL, 0) < 0) {
        ac_error(err, errno, "exec: start the process");
        goto out_kill;
    }
    enum sync_type t;
    int r = sync_recv(sync_fds[0], &t, &msg, NULL);
    if (r == 0 && t == SYNC_SECCOMP_FD) {
        cleanup_free char *state = state_oci_json(st, status, false);
        if (seccomp_listener_forward(sync_fds[0], c.seccomp, state, err) < 0)
            goto out_kill;
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
    if (f.pid_file && write_pid_file(f.pid_file, child, err) < 0)
        goto out_kill;
    if (st->tier != TIER_NONE) {
        cleanup_free char *argv_json = audit_json_argv(process->args);
        cleanup_free char *members = xasprintf("\"tier\":%d,\"pid\":%d,\"argv\":%s,\"user\":\"%u:%u\"", st->tier,
                                               child, argv_json, process->user.uid, process->user.gid);
        container_audit(g, "exec", id, members);
    }
    if (f.detach) {
        ret = 0;
        goto out;
    }
    if (console_pair[0] >= 0) {
        int master = recv_fd(console_pair[0]);
        if (master >= 0) {
            close(console_pair[1]);
            console_pair[1] = -1;
            c.console_fd = -1;
            terminal_proxy(master);
            close(master);
        }
    }
    ret = wait_forwarding_signals(child);
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
    if (pid_fd >= 0)
        close(pid_fd);
    if (saved_pidns >= 0)
        close(saved_pidns);
    if (cgroup_fd >= 0)
        close(cgroup_fd);
out_flags:
    free(f.env);
    free(f.caps);
    free(f.gids);
    return ret;
}
