/* exec [flags] ID COMMAND... | --process FILE: runc's flags, the process
 * they describe, and the wait; the exec itself is container_exec
 * (runtime/container/exec.c). */
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

#include "hooks/audit.h"
#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/linux/init.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier.h"

enum { OPT_CONSOLE = 256, OPT_CWD, OPT_PID_FILE, OPT_PRESERVE, OPT_LABEL, OPT_APPARMOR, OPT_NNP, OPT_IGNORE_PAUSED,
       OPT_CGROUP };

struct exec_flags {
    const char *process_file, *console_socket, *cwd, *pid_file, *label, *apparmor, *user;
    char **env; size_t n_env;
    char **caps; size_t n_caps;
    char **gids; size_t n_gids;
    char **cgroups; size_t n_cgroups;
    bool tty, detach, nnp, ignore_paused;
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
        case OPT_IGNORE_PAUSED: f->ignore_paused = true; break;
        case OPT_CGROUP: push(&f->cgroups, &f->n_cgroups, optarg); break;
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

COMMAND(exec)
{
    struct exec_flags f = {0};
    int ret = -1;
    /* declared before the first goto: the cleanups run on every path */
    cleanup_state struct container_state *st = NULL;
    cleanup_spec struct oci_spec *config = NULL;
    cleanup_spec struct oci_spec *holder = NULL;
    /* exec's own failures exit 255, as runc's do, so a caller can tell them
     * from the process's exit status */
    g->error_status = 255;
    if (parse_exec_flags(argc, argv, &f, err) < 0)
        goto out;
    if (optind >= argc) {
        ac_error(err, 0, "exec: missing container id");
        goto out;
    }
    const char *id = argv[optind++];
    if (state_load(g, id, &st, err) < 0)
        goto out;
    enum container_status status = state_status(g, st);
    if (status == STATUS_STOPPED) {
        ac_error(err, 0, "cannot exec in a stopped container `%s`", id);
        goto out;
    }
    /* --ignore-paused: the process starts frozen and runs on resume */
    if (status == STATUS_PAUSED && !f.ignore_paused) {
        ac_error(err, 0, "cannot exec in a paused container `%s` (resume it, or exec --ignore-paused)", id);
        goto out;
    }
    struct oci_process *process = NULL;
    if (container_load_config(g, id, &config, err) < 0 ||
        build_process(config, &f, argc, argv, &holder, &process, err) < 0)
        goto out;
    if (process->terminal && f.detach && !f.console_socket) {
        ac_error(err, 0, "exec: --tty with --detach needs --console-socket");
        goto out;
    }
    struct exec_options o = {.console_socket = f.console_socket, .pid_file = f.pid_file, .detach = f.detach,
                             .preserve_fds = f.preserve_fds, .caps = (const char *const *)f.caps, .n_caps = f.n_caps,
                             .cgroup_subs = (const char *const *)f.cgroups, .n_cgroup_subs = f.n_cgroups};
    struct exec_result res;
    if (container_exec(g, st, status, config, process, &o, &res, err) < 0)
        goto out;
    if (f.detach) {
        ret = 0;
        goto out;
    }
    if (res.console_master >= 0) {
        terminal_proxy(res.console_master);
        close(res.console_master);
    }
    ret = wait_forwarding_signals(res.pid);
out:
    free(f.env);
    free(f.caps);
    free(f.gids);
    free(f.cgroups);
    return ret;
}
