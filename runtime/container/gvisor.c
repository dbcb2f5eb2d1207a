/* A tier's container under gVisor: the second kernel for the least-trusted
 * work.
 *
 * agentcage stays the runtime the engine talks to. create maps the tier,
 * gates it (approval), makes the state directory, the cgroup (with the
 * tier's limits, for the whole sandbox) and the user namespace's ids as at
 * every tier; then runsc creates the sandbox from a config derived from the
 * effective one (below), under ROOT/ID/sandbox, in that cgroup. The later
 * verbs go through runsc with the same global flags (runsc.args), or act on
 * the sandbox's cgroup as on any container's (pause, resume, update,
 * delete's kill).
 *
 * What the namespace tiers do in their init, the config for runsc says as
 * mounts, because runsc's own init is gVisor's: masked paths and read-only
 * paths under the project's binds become mounts over them (an empty tmpfs,
 * an empty file, a read-only bind), a mounted home's dot entries are
 * hidden the same way; /proc and /sys are gVisor's own, with no host
 * kernel interface behind them. The network: none at tiers 0-1 (gVisor's
 * netstack with loopback only); at tiers 2-3 runsc's host network inside
 * the sandbox's own new network namespace, which has nothing but the lo
 * where the egress proxy listens (the createRuntime hook create runs). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/container/gvisor.h"
#include "runtime/linux/userns.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h" /* tj_*: the effective tree edited for runsc */

extern char **environ;

/* A new file of ours with this content and mode. */
static int create_file(const char *path, const char *data, mode_t mode, ac_error_t *err)
{
    cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 || write_all(fd, data, strlen(data)) < 0 || fchmod(fd, mode) < 0)
        return ac_error(err, errno, "write `%s`", path);
    return 0;
}

/* ---- runsc itself ------------------------------------------------------ */

/* The program the runtime (root) will run: a regular executable of
 * root's that nobody else may change. */
static int runsc_trusted(const struct global_opts *g, int tier, struct stat *sb, ac_error_t *err)
{
    const char *path = g->tier.runsc;
    if (stat(path, sb) < 0)
        return ac_error(err, 0,
                        "tier %d runs under gVisor, but its runtime `%s` is %s: refused (install runsc, or set "
                        "--runsc)",
                        tier, path, errno == ENOENT ? "missing" : strerror(errno));
    if (!S_ISREG(sb->st_mode) || !(sb->st_mode & S_IXUSR))
        return ac_error(err, 0, "tier %d runs under gVisor, but `%s` is not an executable: refused", tier, path);
    if (sb->st_uid != 0 || (sb->st_mode & (S_IWGRP | S_IWOTH)))
        return ac_error(err, 0,
                        "tier %d runs under gVisor, but `%s` is not root's alone (owner %u, mode %o): refused", tier,
                        path, sb->st_uid, sb->st_mode & 07777);
    return 0;
}

/* posix_spawn argv with stdio inherited (or on /dev/null); waits when
 * status is not NULL. */
static int spawn_argv(char *const argv[], bool quiet, pid_t *pid, int *status, ac_error_t *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int i = 0; quiet && i < 3; i++)
        posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
    pid_t child;
    int r = posix_spawn(&child, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return ac_error(err, r, "gVisor: start `%s`", argv[0]);
    if (pid)
        *pid = child;
    if (status) {
        int ws = 0;
        while (waitpid(child, &ws, 0) < 0 && errno == EINTR)
            ;
        *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    }
    return 0;
}

/* Booting a sandbox once proves runsc and its platform work on this host
 * (ptrace allowed, KVM usable ...); remembered per runsc binary (device,
 * inode, size, mtime) and platform, so a replaced runsc is checked again. */
static int self_check(const struct global_opts *g, int tier, const struct stat *sb, ac_error_t *err)
{
    cleanup_free char *key = xasprintf("%llu:%llu:%lld:%lld:%s\n", (unsigned long long)sb->st_dev,
                                       (unsigned long long)sb->st_ino, (long long)sb->st_size,
                                       (long long)sb->st_mtime, g->tier.runsc_platform);
    cleanup_free char *cache = xasprintf("%s/.gvisor-checked", g->root);
    cleanup_free char *known = NULL;
    size_t len = 0;
    ac_error_t e = NULL;
    if (read_all_file(cache, &known, &len, &e) == 0 && strstr(known, key))
        return 0;
    ac_error_free(&e);
    if (mkdir_p(g->root, 0711, err) < 0)
        return -1;
    cleanup_free char *root = xasprintf("--root=%s/.gvisor-check-%d", g->root, getpid());
    cleanup_free char *platform = xasprintf("--platform=%s", g->tier.runsc_platform);
    char *argv[] = {(char *)g->tier.runsc, root, platform, "--network=none", "do", "/bin/true", NULL};
    int status = -1;
    if (spawn_argv(argv, true, NULL, &status, err) < 0)
        return -1;
    rmdir(root + strlen("--root="));
    if (status != 0)
        return ac_error(err, 0,
                        "tier %d runs under gVisor, but its self-check failed: `%s %s --network=none do /bin/true` "
                        "exited %d: refused",
                        tier, g->tier.runsc, platform, status);
    cleanup_close int fd = open(cache, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0)
        write_all(fd, key, strlen(key));
    return 0;
}

int gvisor_check(const struct global_opts *g, int tier, ac_error_t *err)
{
    struct stat sb;
    if (g->is_rootless)
        return ac_error(err, 0, "tier %d runs under gVisor, which agentcage runs only as root: refused", tier);
    if (runsc_trusted(g, tier, &sb, err) < 0)
        return -1;
    return self_check(g, tier, &sb, err);
}

/* runsc and the container's global flags (runsc.args) followed by extra
 * arguments: NULL-terminated, malloc'd strings. */
static char **runsc_argv(const char *state_dir, char *const *extra, size_t n_extra, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("%s/runsc.args", state_dir);
    cleanup_free char *text = NULL;
    size_t len = 0;
    if (read_all_file(path, &text, &len, err) < 0)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    char **argv = xcalloc(n + n_extra + 1, sizeof(char *));
    size_t k = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        argv[k++] = xstrdup(line);
    for (size_t i = 0; i < n_extra; i++)
        argv[k++] = xstrdup(extra[i]);
    if (k == 0) {
        free(argv);
        ac_error(err, 0, "gVisor: `%s` is empty", path);
        return NULL;
    }
    return argv;
}

static void free_argv(char **argv)
{
    for (char **a = argv; a && *a; a++)
        free(*a);
    free(argv);
}

/* The last error runsc logged (its --log is JSON lines), for our one line. */
static char *runsc_last_error(const char *state_dir)
{
    cleanup_free char *path = xasprintf("%s/sandbox/runsc.log", state_dir);
    cleanup_free char *text = NULL;
    size_t len = 0;
    ac_error_t e = NULL;
    if (read_all_file(path, &text, &len, &e) < 0) {
        ac_error_free(&e);
        return xstrdup("see runsc's messages above");
    }
    char *msg = NULL;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        yajl_val v = yajl_tree_parse(line, NULL, 0);
        const char *m = tj_get_str(v, "msg"), *level = tj_get_str(v, "level");
        if (m && level && strcmp(level, "error") == 0) {
            free(msg);
            msg = xstrdup(m);
        }
        yajl_tree_free(v);
    }
    return msg ? msg : xstrdup("see runsc's messages above");
}

/* runsc VERB ...: with the container's flags; its exit status in *status. */
static int runsc_run(const struct global_opts *g, const char *id, char *const *extra, size_t n_extra, pid_t *pid,
                     int *status, ac_error_t *err)
{
    cleanup_free char *dir = state_dir_path(g, id);
    char **argv = runsc_argv(dir, extra, n_extra, err);
    if (argv == NULL)
        return -1;
    int r = spawn_argv(argv, false, pid, status, err);
    free_argv(argv);
    return r;
}

/* ---- the config runsc gets ---------------------------------------------- */

static yajl_val new_mount(const char *dest, const char *type, const char *source, const char *const *options)
{
    yajl_val m = tj_new_object();
    tj_set(m, "destination", tj_new_string(dest));
    tj_set(m, "type", tj_new_string(type));
    tj_set(m, "source", tj_new_string(source));
    yajl_val opts = tj_new_array();
    for (const char *const *o = options; *o; o++)
        tj_push(opts, tj_new_string(*o));
    tj_set(m, "options", opts);
    return m;
}

static bool is_bind(const struct oci_mount *m)
{
    bool bind = m->type && strcmp(m->type, "bind") == 0;
    for (size_t k = 0; k < m->n_options; k++)
        bind |= strcmp(m->options[k], "bind") == 0 || strcmp(m->options[k], "rbind") == 0;
    return bind;
}

/* The host file behind a container path: below the last bind mount that
 * covers it, else in the rootfs; NULL under /proc and /sys (gVisor's own,
 * with no host kernel interface behind them) and under other mounts
 * (tmpfs: the container's own). */
static char *host_path_of(const struct oci_spec *spec, const char *rootfs, const char *path)
{
    if (strncmp(path, "/proc", 5) == 0 && (path[5] == '/' || path[5] == '\0'))
        return NULL;
    if (strncmp(path, "/sys", 4) == 0 && (path[4] == '/' || path[4] == '\0'))
        return NULL;
    for (size_t i = spec->n_mounts; i-- > 0;) {
        const struct oci_mount *m = &spec->mounts[i];
        size_t n = m->destination ? path_below(path, m->destination) : 0;
        if (n == 0)
            continue;
        if (!is_bind(m) || !m->source || m->source[0] != '/')
            return NULL;
        return xasprintf("%s%s", m->source, path + n);
    }
    return xasprintf("%s%s", rootfs, path);
}

/* What the namespace tiers' init masks, a mount over it: an empty
 * read-only tmpfs on a folder, an empty read-only file on a file. A path
 * that is not there is not masked (as runc does). */
static void mask_path(yajl_val mounts, const struct oci_spec *spec, const char *rootfs, const char *path,
                      const char *empty_file)
{
    cleanup_free char *host = host_path_of(spec, rootfs, path);
    struct stat sb;
    if (host == NULL || lstat(host, &sb) < 0)
        return;
    static const char *const tmpfs_opts[] = {"ro", "nosuid", "nodev", "noexec", "mode=000", NULL};
    static const char *const file_opts[] = {"rbind", "ro", "nosuid", "nodev", "noexec", NULL};
    if (S_ISDIR(sb.st_mode))
        tj_push(mounts, new_mount(path, "tmpfs", "tmpfs", tmpfs_opts));
    else
        tj_push(mounts, new_mount(path, "bind", empty_file, file_opts));
}

static void readonly_path(yajl_val mounts, const struct oci_spec *spec, const char *rootfs, const char *path)
{
    cleanup_free char *host = host_path_of(spec, rootfs, path);
    struct stat sb;
    if (host == NULL || lstat(host, &sb) < 0 || S_ISLNK(sb.st_mode))
        return;
    static const char *const opts[] = {"rbind", "ro", NULL};
    tj_push(mounts, new_mount(path, "bind", host, opts));
}

/* io.agentcage.home-roots: every dot entry at the top of a mounted home
 * hidden but the allowed ones (io.agentcage.home-allow). */
static void hide_home_dots(yajl_val mounts, const struct oci_spec *spec, const char *rootfs, const char *empty_file)
{
    const char *roots = spec_annotation(spec, "io.agentcage.home-roots");
    const char *allow = spec_annotation(spec, "io.agentcage.home-allow");
    cleanup_free char *copy = roots ? xstrdup(roots) : NULL;
    char *save = NULL;
    for (char *dest = copy ? strtok_r(copy, ":", &save) : NULL; dest; dest = strtok_r(NULL, ":", &save)) {
        cleanup_free char *host = host_path_of(spec, rootfs, dest);
        DIR *d = host ? opendir(host) : NULL;
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (de->d_name[0] != '.' || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                (allow && list_has(allow, ':', de->d_name)))
                continue;
            cleanup_free char *path = xasprintf("%s/%s", strcmp(dest, "/") == 0 ? "" : dest, de->d_name);
            mask_path(mounts, spec, rootfs, path, empty_file);
        }
        if (d)
            closedir(d);
    }
}

/* The effective config, as runsc runs it: our rootfs, our cgroup (made
 * with the tier's limits; runsc joins it), no hooks (create runs the
 * tier's own), a user namespace whose root is the container's host id,
 * and the masks as mounts. */
static char *sandbox_config(const struct gvisor_create_args *a, const char *empty_file, ac_error_t *err)
{
    yajl_val tree = NULL;
    if (spec_parse_json_tree(a->config_text, a->config_len, "effective config.json", &tree, err) < 0)
        return NULL;
    tj_set(tj_get_object(tree, "root"), "path", tj_new_string(a->rootfs));
    tj_remove(tree, "hooks");
    yajl_val lx = tj_get_object(tree, "linux");
    if (a->cgroup_path)
        tj_set(lx, "cgroupsPath", tj_new_string(a->cgroup_path));
    else
        tj_remove(lx, "cgroupsPath");
    yajl_val namespaces = tj_get_array(lx, "namespaces");
    bool has_user = false;
    for (size_t i = 0; i < namespaces->u.array.len; i++) {
        const char *type = tj_get_str(namespaces->u.array.values[i], "type");
        has_user |= type && strcmp(type, "user") == 0;
    }
    if (!has_user) {
        yajl_val ns = tj_new_object();
        tj_set(ns, "type", tj_new_string("user"));
        tj_push(namespaces, ns);
        static const char *const maps[] = {"uidMappings", "gidMappings"};
        for (int k = 0; k < 2; k++) {
            yajl_val m = tj_new_object();
            tj_set(m, "containerID", tj_new_int(0));
            tj_set(m, "hostID", tj_new_int(k == 0 ? a->root_uid : a->root_gid));
            tj_set(m, "size", tj_new_int(USERNS_SLICE));
            yajl_val arr = tj_new_array();
            tj_push(arr, m);
            tj_set(lx, maps[k], arr);
        }
    }
    yajl_val mounts = tj_get_array(tree, "mounts");
    const struct oci_linux *sl = a->spec->linux;
    for (size_t i = 0; sl && i < sl->n_masked_paths; i++)
        mask_path(mounts, a->spec, a->rootfs, sl->masked_paths[i], empty_file);
    for (size_t i = 0; sl && i < sl->n_readonly_paths; i++)
        readonly_path(mounts, a->spec, a->rootfs, sl->readonly_paths[i]);
    hide_home_dots(mounts, a->spec, a->rootfs, empty_file);
    char *json = tier_tree_to_json(tree, false);
    yajl_tree_free(tree);
    return json;
}

/* ---- the verbs ------------------------------------------------------------ */

/* runsc's global flags for this container, kept for every later verb:
 * runsc requires the same ones (network, platform) throughout. */
static int write_runsc_args(const struct global_opts *g, const struct gvisor_create_args *a, ac_error_t *err)
{
    cleanup_free char *args = xasprintf("%s\n--root=%s/sandbox\n--platform=%s\n--network=%s\n--log=%s/sandbox/runsc.log\n"
                                        "--log-format=json\n--oci-seccomp\n",
                                        g->tier.runsc, a->state_dir, g->tier.runsc_platform,
                                        tier_has_egress_proxy(a->tier) ? "host" : "none", a->state_dir);
    cleanup_free char *path = xasprintf("%s/runsc.args", a->state_dir);
    return create_file(path, args, 0600, err);
}

int gvisor_create(const struct global_opts *g, const struct gvisor_create_args *a, pid_t *pid, ac_error_t *err)
{
    *pid = 0;
    cleanup_free char *sandbox = xasprintf("%s/sandbox", a->state_dir);
    if (mkdir(sandbox, 0711) < 0)
        return ac_error(err, errno, "gVisor: mkdir `%s`", sandbox);
    /* the masks' empty file: the gofer (the container's root on the host)
     * opens it, so readable by all */
    cleanup_free char *empty = xasprintf("%s/masked", sandbox);
    if (create_file(empty, "", 0444, err) < 0)
        return ac_error_wrap(err, "gVisor: the masks' empty file");
    cleanup_free char *config = sandbox_config(a, empty, err);
    if (config == NULL)
        return -1;
    cleanup_free char *config_path = xasprintf("%s/config.json", sandbox);
    if (create_file(config_path, config, 0600, err) < 0 || write_runsc_args(g, a, err) < 0)
        return -1;
    /* `run` waits for the sandbox, which runsc's create leaves behind: it
     * must be reparented to us, not to init */
    if (a->foreground && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "gVisor: become the sandbox's subreaper");
    cleanup_free char *pid_file = xasprintf("%s/pid", sandbox);
    char *extra[] = {"create", "--bundle", sandbox, "--pid-file", pid_file, NULL, NULL, NULL};
    size_t n = 5;
    if (a->console_socket) {
        extra[n++] = "--console-socket";
        extra[n++] = (char *)a->console_socket;
    }
    extra[n++] = (char *)a->id;
    int status = -1;
    if (runsc_run(g, a->id, extra, n, NULL, &status, err) < 0)
        return -1;
    if (status != 0) {
        cleanup_free char *why = runsc_last_error(a->state_dir);
        return ac_error(err, 0, "tier %d: gVisor: runsc create exited %d: %s", a->tier, status, why);
    }
    cleanup_free char *text = NULL;
    size_t len = 0;
    uint64_t v = 0;
    if (read_all_file(pid_file, &text, &len, err) < 0)
        return -1;
    text[strcspn(text, "\n")] = '\0';
    if (parse_uint64(text, &v) < 0 || v == 0 || v > INT_MAX)
        return ac_error(err, 0, "gVisor: `%s`: expected a pid, got `%s`", pid_file, text);
    *pid = (pid_t)v;
    return 0;
}

int gvisor_start(const struct global_opts *g, const struct container_state *st, ac_error_t *err)
{
    char *extra[] = {"start", st->id};
    int status = -1;
    if (runsc_run(g, st->id, extra, 2, NULL, &status, err) < 0)
        return -1;
    if (status != 0) {
        cleanup_free char *dir = state_dir_path(g, st->id);
        cleanup_free char *why = runsc_last_error(dir);
        return ac_error(err, 0, "start `%s`: gVisor: runsc start exited %d: %s", st->id, status, why);
    }
    return 0;
}

/* exec's process, as runsc reads it (--process): what container_exec made
 * of it under the tier's rules. A tier drops every capability, so the
 * sets are empty. */
static char *process_json(const struct oci_process *p)
{
    yajl_val v = tj_new_object();
    tj_set(v, "terminal", tj_new_bool(p->terminal));
    if (p->has_console_size) {
        yajl_val size = tj_get_object(v, "consoleSize");
        tj_set(size, "height", tj_new_int(p->console_height));
        tj_set(size, "width", tj_new_int(p->console_width));
    }
    yajl_val user = tj_get_object(v, "user");
    tj_set(user, "uid", tj_new_int(p->user.uid));
    tj_set(user, "gid", tj_new_int(p->user.gid));
    yajl_val gids = tj_get_array(user, "additionalGids");
    for (size_t i = 0; i < p->user.n_additional_gids; i++)
        tj_push(gids, tj_new_int(p->user.additional_gids[i]));
    yajl_val args = tj_get_array(v, "args"), env = tj_get_array(v, "env");
    for (size_t i = 0; i < p->n_args; i++)
        tj_push(args, tj_new_string(p->args[i]));
    for (size_t i = 0; i < p->n_env; i++)
        tj_push(env, tj_new_string(p->env[i]));
    tj_set(v, "cwd", tj_new_string(p->cwd && p->cwd[0] ? p->cwd : "/"));
    yajl_val caps = tj_get_object(v, "capabilities");
    static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
    for (int k = 0; k < 5; k++)
        tj_get_array(caps, sets[k]);
    tj_set(v, "noNewPrivileges", tj_new_bool(true));
    char *json = tier_tree_to_json(v, false);
    yajl_tree_free(v);
    return json;
}

int gvisor_exec(const struct global_opts *g, const struct container_state *st, const struct oci_process *process,
                const struct exec_options *o, struct exec_result *res, ac_error_t *err)
{
    res->pid = -1;
    res->console_master = -1;
    if (process->terminal && !o->console_socket)
        return ac_error(err, 0, "exec: a terminal under gVisor needs --console-socket");
    if (o->preserve_fds > 0)
        return ac_error(err, 0, "exec: --preserve-fds under gVisor is not supported");
    cleanup_free char *dir = state_dir_path(g, st->id);
    cleanup_free char *path = xasprintf("%s/exec-%d.json", dir, getpid());
    cleanup_free char *pid_file = o->pid_file ? xstrdup(o->pid_file) : xasprintf("%s/exec-%d.pid", dir, getpid());
    cleanup_free char *json = process_json(process);
    if (create_file(path, json, 0600, err) < 0)
        return -1;
    /* Detached, runsc's exec leaves a process of its own that waits for
     * the workload's and exits with its status; in the foreground we are
     * its subreaper and wait for it ourselves. Either way runsc has read
     * the process file once it returns. */
    if (!o->detach && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        unlink(path);
        return ac_error(err, errno, "gVisor: exec: become the subreaper");
    }
    char *extra[] = {"exec", "--detach", "--process", path, "--pid-file", pid_file, NULL, NULL, NULL};
    size_t n = 6;
    if (o->console_socket) {
        extra[n++] = "--console-socket";
        extra[n++] = (char *)o->console_socket;
    }
    extra[n++] = st->id;
    int status = -1;
    int r = runsc_run(g, st->id, extra, n, NULL, &status, err);
    unlink(path);
    if (r < 0)
        return -1;
    if (status != 0) {
        cleanup_free char *why = runsc_last_error(dir);
        return ac_error(err, 0, "exec failed: gVisor: runsc exec exited %d: %s", status, why);
    }
    cleanup_free char *text = NULL;
    size_t len = 0;
    uint64_t v = 0;
    int rr = read_all_file(pid_file, &text, &len, err);
    if (!o->pid_file)
        unlink(pid_file);
    if (rr < 0)
        return -1;
    text[strcspn(text, "\n")] = '\0';
    if (parse_uint64(text, &v) < 0 || v == 0 || v > INT_MAX)
        return ac_error(err, 0, "gVisor: exec: `%s`: expected a pid, got `%s`", pid_file, text);
    res->pid = (pid_t)v;
    return 0;
}

void gvisor_kill_sandbox(const char *cgroup_path)
{
    for (int i = 0; cgroup_path && cgroup_path[0] && i < 500; i++) {
        ac_error_t e = NULL;
        cleanup_free pid_t *pids = NULL;
        size_t n = 0;
        if (cgroup_pids(cgroup_path, &pids, &n, &e) < 0 || n == 0) {
            ac_error_free(&e);
            return;
        }
        if (cgroup_kill_all(cgroup_path, SIGKILL, &e) < 0)
            ac_error_free(&e);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int gvisor_forward(const struct global_opts *g, const struct container_state *st, int argc, char **argv,
                   ac_error_t *err)
{
    int status = -1;
    if (runsc_run(g, st->id, argv, (size_t)argc, NULL, &status, err) < 0)
        return -1;
    if (status != 0)
        return ac_error(err, 0, "%s `%s`: gVisor: runsc %s exited %d", argv[0], st->id, argv[0], status);
    return 0;
}
