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
#include <sched.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/container/gvisor.h"
#include "runtime/linux/init.h" /* struct credential_secret */
#include "runtime/linux/rootfs.h"
#include "runtime/linux/tier_seccomp.h"
#include "runtime/linux/userns.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h" /* tj_*: the effective tree edited for runsc */

extern char **environ;

/* runsc binaries and platforms that booted a sandbox on this host */
#define GVISOR_CHECKED "/run/agentcage-gvisor-checked"
/* the sandboxes' folders: reachable (o+x) by the containers' roots on the
 * host, wherever the engine keeps its state root and images */
#define GVISOR_SANDBOXES "/run/agentcage-gvisor"

/* ROOT/ID/sandbox is a symlink to the container's folder below
 * GVISOR_SANDBOXES: runsc gets the real path, as it cannot pass through
 * an engine's state root (0700) to reach it. */
static char *sandbox_path(const char *state_dir)
{
    cleanup_free char *link = xasprintf("%s/sandbox", state_dir);
    char *real = realpath(link, NULL);
    return real ? real : xstrdup(link);
}

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

/* Wait for a child of ours: its status as a shell tells it (128+N for a
 * signal). */
static int wait_exit(pid_t child)
{
    int ws = 0;
    while (waitpid(child, &ws, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
}

/* argv with stdio on an anonymous file of its own, in a process group of
 * its own that is killed after timeout_ms (a platform that hangs, as KVM
 * without VMX does); its exit status in *status, -1 when it timed out.
 * Never the host's /dev/null: `runsc do` hands its stdio to a sandbox
 * that runs as nobody and chowns them, which would re-own the device. */
static int run_quietly(char *const argv[], char *const envp[], int timeout_ms, int *status, ac_error_t *err)
{
    cleanup_close int stdio = memfd_create("agentcage-runsc-check", MFD_CLOEXEC);
    if (stdio < 0)
        return ac_error(err, errno, "gVisor: memfd_create");
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    for (int i = 0; i < 3; i++)
        posix_spawn_file_actions_adddup2(&fa, stdio, i);
    pid_t child;
    int r = posix_spawn(&child, argv[0], &fa, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (r != 0)
        return ac_error(err, r, "gVisor: start `%s`", argv[0]);
    cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    int ready;
    while ((ready = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (pidfd >= 0 && ready == 0) {
        kill(-child, SIGKILL);
        wait_exit(child);
        *status = -1;
        return 0;
    }
    *status = wait_exit(child);
    kill(-child, SIGKILL); /* what it left in its group */
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
    const char *cache = GVISOR_CHECKED;
    cleanup_free char *known = NULL;
    size_t len = 0;
    ac_error_t e = NULL;
    if (read_all_file(cache, &known, &len, &e) == 0 && strstr(known, key))
        return 0;
    ac_error_free(&e);
    cleanup_free char *dir = xasprintf("/run/agentcage-gvisor-check-%d", getpid());
    cleanup_free char *root = xasprintf("--root=%s/state", dir);
    cleanup_free char *platform = xasprintf("--platform=%s", g->tier.runsc_platform);
    /* --ignore-cgroups: a sandbox that fails to boot (KVM without
     * /dev/kvm) left the cgroup runsc made for it ("runsc-<random>" at
     * each hierarchy's root, which no one else would remove); the check
     * needs none */
    char *argv[] = {(char *)g->tier.runsc, root, platform, "--ignore-cgroups", "--network=none", "do", "/bin/true",
                    NULL};
    /* `runsc do` writes its bundle in a fresh $TMPDIR/runsc-do* and leaves
     * it there: its TMPDIR is this check's own folder, removed below. */
    cleanup_free char *tmpdir = xasprintf("TMPDIR=%s", dir);
    char *envp[] = {tmpdir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return ac_error(err, errno, "gVisor: mkdir `%s`", dir);
    int status = -1;
    int r = run_quietly(argv, envp, 10000, &status, err);
    ac_error_t ignore = NULL;
    if (remove_dir(dir, 1, &ignore) < 0)
        ac_error_free(&ignore);
    if (r < 0)
        return -1;
    if (status != 0) {
        char how[32];
        snprintf(how, sizeof(how), status < 0 ? "did not finish in 10 s" : "exited %d", status);
        return ac_error(err, 0,
                        "tier %d runs under gVisor, but its self-check failed: `%s %s --ignore-cgroups --network=none do "
                        "/bin/true` "
                        "%s: refused",
                        tier, g->tier.runsc, platform, how);
    }
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
    cleanup_free char *sandbox = sandbox_path(state_dir);
    cleanup_free char *path = xasprintf("%s/runsc.log", sandbox);
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
        if (m && level && (strcmp(level, "error") == 0 || strcmp(level, "warning") == 0)) {
            free(msg);
            msg = xstrdup(m);
        }
        yajl_tree_free(v);
    }
    return msg ? msg : xstrdup("see runsc's messages above");
}

/* The user namespace runsc runs in (the container's, which create made):
 * the sandbox's own, or an ancestor of it (without a host network runsc
 * puts the sandbox in a namespace of its own below ours). Ours is the one
 * created by host root; runsc's are created by the container's root. */
static int runsc_userns(pid_t sandbox, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("/proc/%d/ns/user", sandbox);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "gVisor: the sandbox's user namespace `%s`", path);
    for (int depth = 0; depth < 4; depth++) {
        uid_t owner = (uid_t)-1;
        if (ioctl(fd, NS_GET_OWNER_UID, &owner) < 0)
            break;
        if (owner == 0)
            return fd;
        int parent = ioctl(fd, NS_GET_PARENT);
        close(fd);
        if (parent < 0)
            return ac_error(err, errno, "gVisor: the sandbox's user namespace: its parent");
        fd = parent;
    }
    close(fd);
    return ac_error(err, 0, "gVisor: the sandbox %d is not in a user namespace of agentcage's", sandbox);
}

bool gvisor_is_pod_member(const struct container_state *st)
{
    const char *role = st->gvisor ? state_annotation(st, "io.agentcage.pod-role") : NULL;
    return role && strcmp(role, "container") == 0;
}

/* The live process of the pod's sandbox a pod's container runs in (its
 * state's pid, checked by start time), or 0. */
static pid_t pod_sandbox_pid(const struct global_opts *g, const char *state_dir)
{
    cleanup_free char *path = xasprintf("%s/pod-sandbox", state_dir);
    cleanup_free char *id = NULL;
    size_t len = 0;
    ac_error_t e = NULL;
    cleanup_state struct container_state *pod = NULL;
    if (read_all_file(path, &id, &len, &e) < 0 || state_load(g, id, &pod, &e) < 0) {
        ac_error_free(&e);
        return 0;
    }
    return pod->pid > 0 && process_start_time(pod->pid) == pod->pid_start_time ? pod->pid : 0;
}

/* A process in the container's user namespace: its own (the sandbox, a pod
 * container's keeper) while it lives, else, for a pod's container, the
 * pod's sandbox. */
static pid_t userns_holder(const struct global_opts *g, const struct container_state *st)
{
    if (!gvisor_is_pod_member(st) || (st->pid > 0 && process_start_time(st->pid) == st->pid_start_time))
        return st->pid;
    cleanup_free char *dir = state_dir_path(g, st->id);
    pid_t pod = pod_sandbox_pid(g, dir);
    return pod > 0 ? pod : st->pid;
}

/* runsc VERB ...: with the container's flags, as root of the container's
 * user namespace (runsc's control socket answers only its own uid); its
 * exit status in *status. */
static int runsc_in(pid_t holder, const char *dir, char *const *extra, size_t n_extra, int *status, ac_error_t *err)
{
    cleanup_close int userns = runsc_userns(holder, err);
    if (userns < 0)
        return -1;
    char **argv = runsc_argv(dir, extra, n_extra, err);
    if (argv == NULL)
        return -1;
    pid_t child = fork();
    if (child == 0) {
        if (setns(userns, CLONE_NEWUSER) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
            _exit(126);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    free_argv(argv);
    if (child < 0)
        return ac_error(err, errno, "gVisor: fork");
    *status = wait_exit(child);
    return 0;
}

static int runsc_run(const struct global_opts *g, const struct container_state *st, char *const *extra,
                     size_t n_extra, int *status, ac_error_t *err)
{
    cleanup_free char *dir = state_dir_path(g, st->id);
    return runsc_in(userns_holder(g, st), dir, extra, n_extra, status, err);
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

/* .git folders near the top of a writable project (as protect.c finds
 * them): each bound onto itself, so it cannot be renamed away (a mount
 * point), and its hooks and config read-only. */
static void pin_git_dirs(yajl_val mounts, const char *host, const char *dest, int depth, int *budget)
{
    DIR *d = opendir(host);
    struct dirent *de;
    static const char *const rw[] = {"rbind", "rw", NULL}, *const ro[] = {"rbind", "ro", NULL};
    while (d && (de = readdir(d)) != NULL && *budget > 0) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_free char *h = xasprintf("%s/%s", host, de->d_name);
        cleanup_free char *c = xasprintf("%s/%s", strcmp(dest, "/") == 0 ? "" : dest, de->d_name);
        struct stat sb;
        if (lstat(h, &sb) < 0 || !S_ISDIR(sb.st_mode))
            continue;
        (*budget)--;
        if (strcmp(de->d_name, ".git") == 0) {
            tj_push(mounts, new_mount(c, "bind", h, rw));
            static const char *const parts[] = {"hooks", "config"};
            for (int k = 0; k < 2; k++) {
                cleanup_free char *ph = xasprintf("%s/%s", h, parts[k]);
                cleanup_free char *pc = xasprintf("%s/%s", c, parts[k]);
                if (lstat(ph, &sb) == 0 && !S_ISLNK(sb.st_mode))
                    tj_push(mounts, new_mount(pc, "bind", ph, ro));
            }
        } else if (depth > 1) {
            pin_git_dirs(mounts, h, c, depth - 1, budget);
        }
    }
    if (d)
        closedir(d);
}

/* A home-like writable mount keeps its existing entries writable but gets
 * no new name at its top: the home bound again read-only over itself,
 * then each entry onto itself. */
static void pin_home_top(yajl_val mounts, const char *host, const char *dest)
{
    static const char *const rw[] = {"rbind", "rw", NULL}, *const ro[] = {"rbind", "ro", NULL};
    tj_push(mounts, new_mount(dest, "bind", host, ro));
    DIR *d = opendir(host);
    struct dirent *de;
    for (int n = 0; d && (de = readdir(d)) != NULL && n < 1024; n++) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_free char *h = xasprintf("%s/%s", host, de->d_name);
        cleanup_free char *c = xasprintf("%s/%s", strcmp(dest, "/") == 0 ? "" : dest, de->d_name);
        struct stat sb;
        if (lstat(h, &sb) == 0 && !S_ISLNK(sb.st_mode))
            tj_push(mounts, new_mount(c, "bind", h, rw));
    }
    if (d)
        closedir(d);
}

/* io.agentcage.protect-roots ("DEST" or "DEST=home", colon-separated): what
 * the namespace tiers' protect.c does with mounts in the init, as mounts
 * of the config. */
static void protect_roots(yajl_val mounts, const struct oci_spec *spec, const char *rootfs)
{
    const char *roots = spec_annotation(spec, "io.agentcage.protect-roots");
    cleanup_free char *copy = roots ? xstrdup(roots) : NULL;
    char *save = NULL;
    for (char *dest = copy ? strtok_r(copy, ":", &save) : NULL; dest; dest = strtok_r(NULL, ":", &save)) {
        char *eq = strchr(dest, '=');
        bool home = eq && strcmp(eq + 1, "home") == 0;
        if (eq)
            *eq = '\0';
        cleanup_free char *host = host_path_of(spec, rootfs, dest);
        if (host == NULL)
            continue;
        if (home)
            pin_home_top(mounts, host, dest);
        int budget = 4096;
        pin_git_dirs(mounts, host, dest, 3, &budget);
    }
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

/* runsc orders the mounts by depth, and those at one destination in no
 * order of the config's: of several at a destination, only the last one
 * stays (the one that would be on top). */
static void last_mount_wins(yajl_val mounts)
{
    for (size_t i = mounts->u.array.len; i-- > 0;) {
        const char *dest = tj_get_str(mounts->u.array.values[i], "destination");
        for (size_t k = i + 1; dest && k < mounts->u.array.len; k++) {
            const char *later = tj_get_str(mounts->u.array.values[k], "destination");
            if (later && strcmp(later, dest) == 0) {
                tj_remove_at(mounts, i);
                break;
            }
        }
    }
}

static bool lets_through(const char *action)
{
    return action && (strcmp(action, "SCMP_ACT_ALLOW") == 0 || strcmp(action, "SCMP_ACT_LOG") == 0);
}

/* Does a config's own seccomp profile let this syscall through at all?
 * Not when a rule without conditions refuses it; else when its default or
 * any rule naming it allows. */
static bool profile_allows(yajl_val profile, const char *name)
{
    bool allowed = lets_through(tj_get_str(profile, "defaultAction"));
    yajl_val rules = tj_get(profile, "syscalls");
    for (size_t i = 0; YAJL_IS_ARRAY(rules) && i < rules->u.array.len; i++) {
        yajl_val rule = rules->u.array.values[i], names = tj_get(rule, "names"), args = tj_get(rule, "args");
        bool through = lets_through(tj_get_str(rule, "action"));
        bool conditional = YAJL_IS_ARRAY(args) && args->u.array.len > 0;
        for (size_t k = 0; YAJL_IS_ARRAY(names) && k < names->u.array.len; k++) {
            if (!YAJL_IS_STRING(names->u.array.values[k]) || strcmp(names->u.array.values[k]->u.string, name) != 0)
                continue;
            if (!through && !conditional)
                return false;
            allowed |= through;
        }
    }
    return allowed;
}

/* The tier's allow-list as the profile runsc applies inside gVisor
 * (--oci-seccomp); a config's own profile only narrows it: a syscall that
 * profile refuses outright is not allowed either (its conditions are not
 * carried over: the tier's hold). */
static int tier_seccomp_profile(yajl_val lx, int tier, ac_error_t *err)
{
    yajl_val tier_profile = yajl_tree_parse(tier_oci_seccomp[tier], NULL, 0);
    if (tier_profile == NULL)
        return ac_error(err, 0, "gVisor: the tier %d seccomp profile does not parse", tier);
    yajl_val own = tj_get(lx, "seccomp");
    yajl_val rules = tj_get(tier_profile, "syscalls");
    for (size_t i = rules->u.array.len; YAJL_IS_OBJECT(own) && i-- > 0;) {
        yajl_val names = tj_get(rules->u.array.values[i], "names");
        const char *action = tj_get_str(rules->u.array.values[i], "action");
        if (!action || strcmp(action, "SCMP_ACT_ALLOW") != 0 || !YAJL_IS_ARRAY(names))
            continue;
        for (size_t k = names->u.array.len; k-- > 0;)
            if (!profile_allows(own, names->u.array.values[k]->u.string))
                tj_remove_at(names, k);
        if (names->u.array.len == 0)
            tj_remove_at(rules, i);
    }
    tj_set(lx, "seccomp", tier_profile);
    return 0;
}

/* The effective config, as runsc runs it: our rootfs, no hooks (create
 * runs the tier's own), no cgroup or user namespace of its own, and the
 * masks as mounts. */
static char *sandbox_config(const struct gvisor_create_args *a, const char *rootfs, const char *empty_file,
                            ac_error_t *err)
{
    yajl_val tree = NULL;
    if (spec_parse_json_tree(a->config_text, a->config_len, "effective config.json", &tree, err) < 0)
        return NULL;
    tj_set(tj_get_object(tree, "root"), "path", tj_new_string(rootfs));
    tj_remove(tree, "hooks");
    /* the OOM score is the runtime's to write on the sandbox (after
     * create): runsc start, an unprivileged id, writes it too late and may
     * find a short workload's sandbox gone already */
    tj_remove(tj_get_object(tree, "process"), "oomScoreAdj");
    /* runsc runs inside the container's user namespace and cgroup
     * (gvisor_create): neither is runsc's to make */
    yajl_val lx = tj_get_object(tree, "linux");
    if (tier_seccomp_profile(lx, a->tier, err) < 0) {
        yajl_tree_free(tree);
        return NULL;
    }
    tj_remove(lx, "cgroupsPath");
    tj_remove(lx, "uidMappings");
    tj_remove(lx, "gidMappings");
    yajl_val namespaces = tj_get_array(lx, "namespaces");
    for (size_t i = namespaces->u.array.len; i-- > 0;) {
        const char *type = tj_get_str(namespaces->u.array.values[i], "type");
        if (type && strcmp(type, "user") == 0)
            tj_remove_at(namespaces, i);
    }
    yajl_val mounts = tj_get_array(tree, "mounts");
    /* the sources create rewrote (a writable host folder's capped overlay,
     * the credentials' tmpfs, now a bind: read-only) */
    for (size_t i = 0; i < mounts->u.array.len && i < a->spec->n_mounts; i++) {
        const char *source = a->spec->mounts[i].source;
        const char *was = tj_get_str(mounts->u.array.values[i], "source");
        if (source && (was == NULL || strcmp(source, was) != 0))
            tj_set(mounts->u.array.values[i], "source", tj_new_string(source));
        const char *type = tj_get_str(mounts->u.array.values[i], "type");
        if (is_bind(&a->spec->mounts[i]) && type && strcmp(type, "tmpfs") == 0) {
            static const char *const ro[] = {"rbind", "ro", "nosuid", "nodev", "noexec", NULL};
            tj_set(mounts->u.array.values[i], "type", tj_new_string("bind"));
            yajl_val opts = tj_new_array();
            for (const char *const *o = ro; *o; o++)
                tj_push(opts, tj_new_string(*o));
            tj_set(mounts->u.array.values[i], "options", opts);
        }
    }
    /* runsc's read-only bind is read-only all the way down (its mounts of
     * the host's files do not carry their submounts' flags): the
     * recursive options are the plain ones to it */
    static const char *const recursive[] = {"rro", "rrw", "rnosuid", "rsuid", "rnodev", "rdev", "rnoexec", "rexec"};
    for (size_t i = 0; i < mounts->u.array.len; i++) {
        yajl_val opts = tj_get(mounts->u.array.values[i], "options");
        for (size_t k = 0; YAJL_IS_ARRAY(opts) && k < opts->u.array.len; k++) {
            yajl_val o = opts->u.array.values[k];
            for (size_t r = 0; YAJL_IS_STRING(o) && r < sizeof(recursive) / sizeof(recursive[0]); r++)
                if (strcmp(o->u.string, recursive[r]) == 0)
                    memmove(o->u.string, o->u.string + 1, strlen(o->u.string));
        }
    }
    const struct oci_linux *sl = a->spec->linux;
    protect_roots(mounts, a->spec, rootfs); /* first: the masks go over what it pins */
    for (size_t i = 0; sl && i < sl->n_masked_paths; i++)
        mask_path(mounts, a->spec, rootfs, sl->masked_paths[i], empty_file);
    for (size_t i = 0; sl && i < sl->n_readonly_paths; i++)
        readonly_path(mounts, a->spec, rootfs, sl->readonly_paths[i]);
    hide_home_dots(mounts, a->spec, rootfs, empty_file);
    last_mount_wins(mounts);
    char *json = tier_tree_to_json(tree, false);
    yajl_tree_free(tree);
    return json;
}

/* ---- credentials ----------------------------------------------------------- */

int gvisor_secrets(const char *state_dir, struct oci_spec *spec, struct credential_secret *secrets, size_t n,
                   uint32_t uid, uint32_t gid, ac_error_t *err)
{
    struct oci_mount *m = NULL;
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (spec->mounts[i].destination && strcmp(spec->mounts[i].destination, "/run/secrets") == 0)
            m = &spec->mounts[i];
    if (m == NULL)
        return ac_error(err, 0, "credentials: no /run/secrets mount in the effective config");
    cleanup_free char *dir = xasprintf("%s/secrets", state_dir);
    cleanup_free char *opts = xasprintf("mode=0500,uid=%u,gid=%u,size=1m", uid, gid);
    if (mkdir(dir, 0700) < 0 || mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
        return ac_error(err, errno, "credentials: the secrets' tmpfs `%s`", dir);
    for (size_t i = 0; i < n; i++) {
        cleanup_free char *path = xasprintf("%s/%s", dir, secrets[i].name);
        cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        const char *v = secrets[i].secret;
        if (fd < 0 || write_all(fd, v, strlen(v)) < 0 || fchown(fd, uid, gid) < 0)
            return ac_error(err, errno, "credential %s: write `%s`", secrets[i].name, path);
        explicit_bzero(secrets[i].secret, strlen(v));
    }
    m->type = spec_strdup(spec, "bind");
    m->source = spec_strdup(spec, dir);
    return 0;
}

/* ---- the verbs ------------------------------------------------------------ */

/* The mount points in the rootfs, made by the runtime (host root) as runc
 * makes them: runsc's gofer, the container's root on the host, may not
 * create them in an image of root's. Only for mounts whose place is in
 * the rootfs itself (not inside another bind mount: the gofer binds onto
 * the rootfs on the host, below a tmpfs like /dev too, as /dev/shm of
 * Podman and Docker), never through a symlink out of it (safe_path.c). */
static int make_mountpoints(const struct oci_spec *spec, const char *rootfs, ac_error_t *err)
{
    cleanup_close int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return ac_error(err, errno, "gVisor: open the rootfs `%s`", rootfs);
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct oci_mount *m = &spec->mounts[i];
        const char *dest = m->destination;
        bool inside = false, inside_bind = false;
        for (size_t j = 0; dest && j < i; j++) {
            const char *outer = spec->mounts[j].destination;
            bool below = outer && strcmp(outer, "/") != 0 && path_below(dest, outer) > 0 && strcmp(dest, outer) != 0;
            inside |= below;
            inside_bind |= below && is_bind(&spec->mounts[j]);
        }
        /* below a tmpfs, only a bind needs a place on the host */
        if (!dest || inside_bind || (inside && !is_bind(m)) || strcmp(dest, "/") == 0)
            continue;
        ac_error_t e = NULL;
        int fd = safe_openat(rootfd, dest, O_PATH | O_CLOEXEC, 0, &e);
        if (fd >= 0 || errno != ENOENT) {
            if (fd >= 0)
                close(fd);
            ac_error_free(&e);
            continue;
        }
        ac_error_free(&e);
        struct stat sb;
        bool file = is_bind(m) && m->source && stat(m->source, &sb) == 0 && !S_ISDIR(sb.st_mode);
        cleanup_free char *parent = xstrdup(dest);
        char *slash = strrchr(parent, '/');
        *slash = '\0';
        cleanup_close int dirfd = safe_mkdir_p_at(rootfd, file ? parent : dest, 0755, err);
        if (dirfd < 0)
            return ac_error_wrap(err, "gVisor: mounts[%zu]: the mount point", i);
        if (file) {
            cleanup_close int dfd = openat(dirfd, ".", O_DIRECTORY | O_CLOEXEC);
            int f = dfd < 0 ? -1 : openat(dfd, slash + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (f < 0 && errno != EEXIST)
                return ac_error(err, errno, "gVisor: mounts[%zu]: create the mount point `%s`", i, dest);
            if (f >= 0)
                close(f);
        }
    }
    return 0;
}

/* The rootfs and every bind source, bound again inside the sandbox's
 * folder (rootfs, m-N), which the container's root on the host can reach
 * whatever the folders above the originals allow (an engine's image store
 * is 0700); the sources are rewritten to them. A source is opened without
 * following a symlink, as every tiered bind source. Returns the rootfs's
 * view. */
static char *make_views(struct oci_spec *spec, const char *rootfs, const char *sandbox, ac_error_t *err)
{
    char *root_view = xasprintf("%s/rootfs", sandbox);
    if (mkdir(root_view, 0755) < 0 || mount(rootfs, root_view, NULL, MS_BIND | MS_REC, NULL) < 0) {
        ac_error(err, errno, "gVisor: bind the rootfs `%s` on `%s`", rootfs, root_view);
        free(root_view);
        return NULL;
    }
    for (size_t i = 0; i < spec->n_mounts; i++) {
        struct oci_mount *m = &spec->mounts[i];
        if (!is_bind(m) || m->source == NULL || m->source[0] != '/')
            continue;
        struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
        cleanup_close int src = (int)syscall(SYS_openat2, AT_FDCWD, m->source, &how, sizeof(how));
        struct stat sb;
        if (src < 0 || fstat(src, &sb) < 0) {
            ac_error(err, errno == ELOOP ? 0 : errno,
                     errno == ELOOP ? "mounts[%zu].source `%s`: a tiered container's bind source must not go through "
                                      "a symlink (give the real path)"
                                    : "mounts[%zu].source `%s`",
                     i, m->source);
            free(root_view);
            return NULL;
        }
        cleanup_free char *view = xasprintf("%s/m-%zu", sandbox, i);
        cleanup_free char *fd_path = xasprintf("/proc/self/fd/%d", src);
        int made = S_ISDIR(sb.st_mode) ? mkdir(view, 0755) : create_file(view, "", 0444, err);
        if (made < 0 || mount(fd_path, view, NULL, MS_BIND | MS_REC, NULL) < 0) {
            if (made < 0 && err && *err)
                ac_error_free(err);
            ac_error(err, errno, "gVisor: mounts[%zu]: bind `%s` on `%s`", i, m->source, view);
            free(root_view);
            return NULL;
        }
        m->source = spec_strdup(spec, view);
    }
    return root_view;
}

/* A sandbox's folder: the views first, so nothing below a folder that is
 * still a mount point is ever removed (it would be the host's own files);
 * left, with a warning, when one cannot be unmounted. */
static void remove_sandbox_folder(const char *folder)
{
    DIR *d = opendir(folder);
    bool left = false;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, "rootfs") != 0 && strncmp(de->d_name, "m-", 2) != 0)
            continue;
        cleanup_free char *view = xasprintf("%s/%s", folder, de->d_name);
        if (umount2(view, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
            left = true;
        else if (rmdir(view) < 0 && errno != ENOENT && (errno != ENOTDIR || unlink(view) < 0))
            left = true;
    }
    if (d)
        closedir(d);
    ac_error_t e = NULL;
    if (left)
        ac_warn("gVisor: a view in `%s` is still mounted: the folder is left", folder);
    else if (remove_dir(folder, 1, &e) < 0) {
        ac_warn("gVisor: %s", e->msg);
        ac_error_free(&e);
    }
}

void gvisor_remove_sandbox(const char *state_dir)
{
    /* the credentials' tmpfs (its secrets gone with it) */
    cleanup_free char *secrets = xasprintf("%s/secrets", state_dir);
    if (umount2(secrets, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
        ac_warn("gVisor: unmount `%s`: %s", secrets, strerror(errno));
    cleanup_free char *link = xasprintf("%s/sandbox", state_dir);
    char target[PATH_MAX];
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return;
    target[n] = '\0';
    if (strncmp(target, GVISOR_SANDBOXES "/", strlen(GVISOR_SANDBOXES) + 1) != 0 || strstr(target, "..")) {
        ac_warn("gVisor: `%s` points at `%s`, not a sandbox of ours: left", link, target);
        return;
    }
    remove_sandbox_folder(target);
    unlink(link);
}

/* Folders whose container's state is gone without a delete (an engine
 * that removed its state root, a delete that failed): each folder's
 * `owner` names the link that points at it; a folder whose link does not,
 * older than a minute (a create may be between its mkdtemp and its link),
 * is removed. */
static void sweep_stale_sandboxes(void)
{
    DIR *d = opendir(GVISOR_SANDBOXES);
    struct dirent *de;
    time_t now = time(NULL);
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        cleanup_free char *folder = xasprintf("%s/%s", GVISOR_SANDBOXES, de->d_name);
        cleanup_free char *owner_path = xasprintf("%s/owner", folder);
        cleanup_free char *owner = NULL;
        size_t len = 0;
        ac_error_t e = NULL;
        struct stat sb;
        if (lstat(folder, &sb) < 0 || !S_ISDIR(sb.st_mode) || now - sb.st_mtime < 60)
            continue;
        char target[PATH_MAX] = "";
        if (read_all_file(owner_path, &owner, &len, &e) == 0) {
            ssize_t n = readlink(owner, target, sizeof(target) - 1);
            target[n > 0 ? n : 0] = '\0';
        }
        ac_error_free(&e);
        if (strcmp(target, folder) != 0)
            remove_sandbox_folder(folder);
    }
    if (d)
        closedir(d);
}

/* runsc's global flags for this container, kept for every later verb:
 * runsc requires the same ones (network, platform) throughout. */
static int write_runsc_args(const struct global_opts *g, const struct gvisor_create_args *a, const char *root,
                            const char *sandbox, ac_error_t *err)
{
    cleanup_free char *args = xasprintf("%s\n--root=%s\n--platform=%s\n--network=%s\n--log=%s/runsc.log\n"
                                        "--log-format=json\n--oci-seccomp\n--ignore-cgroups\n",
                                        g->tier.runsc, root, g->tier.runsc_platform,
                                        tier_has_egress_proxy(a->tier) ? "host" : "none", sandbox);
    cleanup_free char *path = xasprintf("%s/runsc.args", a->state_dir);
    return create_file(path, args, 0600, err);
}

/* An id map as /proc/PID/uid_map reads it: "inside host size" lines. */
static char *map_text(const struct oci_idmap *m, size_t n)
{
    char *buf = xstrdup("");
    for (size_t i = 0; i < n; i++) {
        char *more = xasprintf("%s%u %u %u\n", buf, m[i].container_id, m[i].host_id, m[i].size);
        free(buf);
        buf = more;
    }
    return buf;
}

static int write_map(pid_t pid, const char *file, const struct oci_idmap *m, size_t n, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("/proc/%d/%s", pid, file);
    cleanup_free char *buf = map_text(m, n);
    return write_file(path, buf, strlen(buf), err);
}

/* A map map_text wrote, back: at most max lines. */
static int parse_map(const char *path, struct oci_idmap *m, size_t max, size_t *n, ac_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len = 0;
    *n = 0;
    if (read_all_file(path, &text, &len, err) < 0)
        return ac_error_wrap(err, "gVisor: the pod sandbox's user namespace");
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned inside, host, size;
        if (*n == max || sscanf(line, "%u %u %u", &inside, &host, &size) != 3)
            return ac_error(err, 0, "gVisor: `%s`: expected up to %zu lines `INSIDE HOST SIZE`", path, max);
        m[(*n)++] = (struct oci_idmap){.container_id = inside, .host_id = host, .size = size};
    }
    return *n ? 0 : ac_error(err, 0, "gVisor: `%s` is empty", path);
}

int gvisor_pod_ids(struct gvisor_create_args *a, ac_error_t *err)
{
    size_t n[2];
    static const char *const files[] = {"gvisor-uid_map", "gvisor-gid_map"};
    for (int k = 0; k < 2; k++) {
        cleanup_free char *path = xasprintf("%s/%s", a->pod_state_dir, files[k]);
        if (parse_map(path, a->pod_maps[k], 8, &n[k], err) < 0)
            return -1;
    }
    a->uid_map = a->pod_maps[0], a->n_uid_map = n[0];
    a->gid_map = a->pod_maps[1], a->n_gid_map = n[1];
    if (userns_host_of(a->uid_map, n[0], 0, &a->root_uid) < 0 || userns_host_of(a->gid_map, n[1], 0, &a->root_gid) < 0)
        return ac_error(err, 0, "gVisor: the pod sandbox's user namespace does not map root");
    return 0;
}

/* argv in a new user namespace (the container's ids) as its root, in the
 * container's cgroup; waits for it. The child waits on a pipe until the
 * maps are written and it is in the cgroup, then execs. */
static int spawn_in_userns(char *const argv[], const struct gvisor_create_args *a, int userns_fd, const char *cgroup,
                           int *status, ac_error_t *err)
{
    int go[2] = {-1, -1}, ready[2] = {-1, -1};
    if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0) {
        ac_error(err, errno, "gVisor: pipe");
        goto fail_pipes;
    }
    pid_t child = fork();
    if (child < 0) {
        ac_error(err, errno, "gVisor: fork");
        goto fail_pipes;
    }
    if (child == 0) {
        char c = 0;
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if ((userns_fd >= 0 ? setns(userns_fd, CLONE_NEWUSER) : unshare(CLONE_NEWUSER)) < 0 ||
            write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1 ||
            setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
            _exit(126);
        prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    close(go[0]);
    close(ready[1]);
    char c;
    int r = read(ready[0], &c, 1) == 1 ? 0 : ac_error(err, 0, "gVisor: the user namespace for runsc");
    if (r == 0 && ((userns_fd < 0 && (write_map(child, "gid_map", a->gid_map, a->n_gid_map, err) < 0 ||
                                      write_map(child, "uid_map", a->uid_map, a->n_uid_map, err) < 0)) ||
                   (cgroup && cgroup[0] && cgroup_enter(cgroup, child, err) < 0)))
        r = ac_error_wrap(err, "gVisor: runsc's user namespace and cgroup");
    if (r == 0 && write(go[1], &c, 1) != 1)
        r = ac_error(err, errno, "gVisor: start runsc");
    close(go[1]);
    close(ready[0]);
    if (r < 0)
        kill(child, SIGKILL);
    *status = wait_exit(child);
    return r;
fail_pipes:
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (ready[i] >= 0)
            close(ready[i]);
    }
    return -1;
}

/* process.oomScoreAdj, on the container's process (the sandbox, or a pod
 * container's keeper) */
static int write_oom_score(const struct gvisor_create_args *a, pid_t pid, ac_error_t *err)
{
    const struct oci_process *p = a->spec->process;
    if (p && p->has_oom_score_adj) {
        cleanup_free char *path = xasprintf("/proc/%d/oom_score_adj", pid);
        cleanup_free char *val = xasprintf("%d", p->oom_score_adj);
        if (write_file(path, val, strlen(val), err) < 0)
            return ac_error_wrap(err, "process.oomScoreAdj");
    }
    return 0;
}

/* ---- a pod's container: created into the pod's sandbox ------------------- */

/* Every fd but stdio and keep[] (ascending) closed. */
static void close_all_but(const int *keep, size_t n)
{
    unsigned lo = 3;
    for (size_t i = 0; i < n; i++) {
        if (keep[i] < 0 || (unsigned)keep[i] < lo)
            continue;
        if ((unsigned)keep[i] > lo)
            syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
        lo = (unsigned)keep[i] + 1;
    }
    syscall(SYS_close_range, lo, ~0u, 0);
}

/* argv as a child that dies with us, its stdout on out (unless -1); its
 * status as a shell tells it. */
static int run_child(char *const argv[], int out)
{
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (out >= 0 && dup2(out, STDOUT_FILENO) < 0)
            _exit(126);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    return child < 0 ? 126 : wait_exit(child);
}

static int sort_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The keeper: the container's process for the engine. Until start it
 * waits on exec.fifo (go_fd); then runs `runsc start` with the container's
 * stdio (which runsc hands to the container), answers on started.fifo
 * (done_fd), runs `runsc wait` and exits with the container's status. Its
 * guard child runs `runsc kill --all` when the keeper dies without saying
 * the container is done: the watchdog's SIGKILL at the timeout, delete. */
static void keeper_main(int sync_fd, int userns_fd, int go_fd, int done_fd, char **start_argv, char **wait_argv,
                        char **kill_argv)
{
    char c = 'r';
    int guard[2];
    prctl(PR_SET_NAME, "agentcage-keep", 0, 0, 0);
    if (write(sync_fd, &c, 1) != 1 || read(sync_fd, &c, 1) != 1 || setns(userns_fd, CLONE_NEWUSER) < 0 ||
        setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 || pipe2(guard, O_CLOEXEC) < 0)
        _exit(126);
    pid_t guard_pid = fork();
    if (guard_pid == 0) {
        close(guard[1]);
        close_all_but(&guard[0], 1);
        ssize_t n;
        while ((n = read(guard[0], &c, 1)) < 0 && errno == EINTR)
            ;
        if (n == 1)
            _exit(0);
        execve(kill_argv[0], kill_argv, environ);
        _exit(127);
    }
    close(guard[0]);
    int keep[] = {go_fd, done_fd, guard[1]};
    qsort(keep, 3, sizeof(int), sort_int);
    close_all_but(keep, 3);
    ssize_t n;
    while ((n = read(go_fd, &c, 1)) < 0 && errno == EINTR)
        ;
    int status = n == 1 ? run_child(start_argv, -1) : 1;
    c = status == 0 ? '0' : '1';
    if (write(done_fd, &c, 1) != 1 || status != 0) {
        if (write(guard[1], "d", 1) != 1)
            _exit(1);
        _exit(1);
    }
    close(go_fd);
    close(done_fd);
    int out[2];
    char buf[4096];
    size_t len = 0;
    int code = 137; /* the sandbox went with the container in it */
    if (pipe2(out, O_CLOEXEC) == 0) {
        pid_t waiter = fork();
        if (waiter == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            dup2(out[1], STDOUT_FILENO);
            execve(wait_argv[0], wait_argv, environ);
            _exit(127);
        }
        close(out[1]);
        while (len < sizeof(buf) - 1 && (n = read(out[0], buf + len, sizeof(buf) - 1 - len)) != 0)
            if (n > 0)
                len += (size_t)n;
            else if (errno != EINTR)
                break;
        buf[len] = '\0';
        const char *at = strstr(buf, "\"exitStatus\":");
        if (waiter > 0 && wait_exit(waiter) == 0 && at)
            code = atoi(at + strlen("\"exitStatus\":")) & 0xff;
    }
    if (write(guard[1], "d", 1) != 1)
        _exit(code);
    _exit(code);
}

static int spawn_keeper(const struct gvisor_create_args *a, int userns_fd, pid_t *pid, ac_error_t *err)
{
    cleanup_free char *go = xasprintf("%s/exec.fifo", a->state_dir);
    cleanup_free char *done = xasprintf("%s/started.fifo", a->state_dir);
    if (mkfifo(done, 0600) < 0)
        return ac_error(err, errno, "mkfifo `%s`", done);
    char *start_extra[] = {"start", (char *)a->id}, *wait_extra[] = {"wait", (char *)a->id},
         *kill_extra[] = {"kill", "--all", (char *)a->id, "KILL"};
    char **start_argv = runsc_argv(a->state_dir, start_extra, 2, err);
    char **wait_argv = start_argv ? runsc_argv(a->state_dir, wait_extra, 2, err) : NULL;
    char **kill_argv = wait_argv ? runsc_argv(a->state_dir, kill_extra, 4, err) : NULL;
    int sync[2] = {-1, -1};
    int r = kill_argv ? 0 : -1;
    if (r == 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0)
        r = ac_error(err, errno, "gVisor: socketpair");
    pid_t child = r == 0 ? fork() : -1;
    if (child == 0) {
        int go_fd = open(go, O_RDWR | O_CLOEXEC), done_fd = open(done, O_RDWR | O_CLOEXEC);
        close(sync[0]);
        if (go_fd < 0 || done_fd < 0)
            _exit(126);
        keeper_main(sync[1], userns_fd, go_fd, done_fd, start_argv, wait_argv, kill_argv);
    }
    if (r == 0 && child < 0)
        r = ac_error(err, errno, "gVisor: fork the keeper");
    char c;
    if (r == 0) {
        close(sync[1]);
        sync[1] = -1;
        if (read(sync[0], &c, 1) != 1)
            r = ac_error(err, 0, "gVisor: the keeper of a pod's container did not start");
        else if (a->pod_cgroup && a->pod_cgroup[0] && cgroup_enter(a->pod_cgroup, child, err) < 0)
            r = ac_error_wrap(err, "gVisor: the keeper into the pod sandbox's cgroup");
        else if (write(sync[0], &c, 1) != 1)
            r = ac_error(err, errno, "gVisor: start the keeper");
        if (r < 0)
            kill(child, SIGKILL), wait_exit(child);
        else
            *pid = child;
    }
    for (int i = 0; i < 2; i++)
        if (sync[i] >= 0)
            close(sync[i]);
    free_argv(start_argv);
    free_argv(wait_argv);
    free_argv(kill_argv);
    return r;
}

/* runsc create of a pod's container into the pod's sandbox (as root of
 * the pod's user namespace, in the pod's cgroup: nothing of it runs until
 * start), then its keeper, the container's pid. */
static int create_member(const struct global_opts *g, const struct gvisor_create_args *a, const char *sandbox,
                         pid_t *pid, ac_error_t *err)
{
    (void)g;
    cleanup_free char *marker = xasprintf("%s/pod-sandbox", a->state_dir);
    if (create_file(marker, a->pod_sandbox, 0600, err) < 0)
        return -1;
    cleanup_close int userns = runsc_userns(a->pod_pid, err);
    if (userns < 0)
        return -1;
    char *extra[] = {"create", "--bundle", (char *)sandbox, NULL, NULL, NULL};
    size_t n = 3;
    if (a->console_socket) {
        extra[n++] = "--console-socket";
        extra[n++] = (char *)a->console_socket;
    }
    extra[n++] = (char *)a->id;
    char **argv = runsc_argv(a->state_dir, extra, n, err);
    if (argv == NULL)
        return -1;
    int status = -1;
    int r = spawn_in_userns(argv, a, userns, a->pod_cgroup, &status, err);
    free_argv(argv);
    if (r < 0)
        return -1;
    if (status != 0) {
        cleanup_free char *why = runsc_last_error(a->state_dir);
        return ac_error(err, 0, "tier %d: gVisor: runsc create (into the pod sandbox %s) exited %d: %s", a->tier,
                        a->pod_sandbox, status, why);
    }
    if (spawn_keeper(a, userns, pid, err) < 0)
        return -1;
    return write_oom_score(a, *pid, err);
}

int gvisor_create(const struct global_opts *g, const struct gvisor_create_args *a, pid_t *pid, ac_error_t *err)
{
    *pid = 0;
    if (mkdir(GVISOR_SANDBOXES, 0711) < 0 && errno != EEXIST)
        return ac_error(err, errno, "gVisor: mkdir `%s`", GVISOR_SANDBOXES);
    cleanup_free char *sandbox = xstrdup(GVISOR_SANDBOXES "/XXXXXX");
    if (mkdtemp(sandbox) == NULL || chmod(sandbox, 0711) < 0)
        return ac_error(err, errno, "gVisor: mkdir `%s`", sandbox);
    cleanup_free char *link = xasprintf("%s/sandbox", a->state_dir);
    if (symlink(sandbox, link) < 0) {
        rmdir(sandbox);
        return ac_error(err, errno, "gVisor: `%s`", link);
    }
    cleanup_free char *owner = xasprintf("%s/owner", sandbox);
    if (create_file(owner, link, 0444, err) < 0)
        return -1;
    sweep_stale_sandboxes();
    /* the masks' empty file: the gofer (the container's root on the host)
     * opens it, so readable by all */
    cleanup_free char *empty = xasprintf("%s/masked", sandbox);
    if (create_file(empty, "", 0444, err) < 0)
        return ac_error_wrap(err, "gVisor: the masks' empty file");
    if (make_mountpoints(a->spec, a->rootfs, err) < 0)
        return -1;
    cleanup_free char *rootfs_view = make_views(a->spec, a->rootfs, sandbox, err);
    if (rootfs_view == NULL)
        return -1;
    cleanup_free char *config = sandbox_config(a, rootfs_view, empty, err);
    if (config == NULL)
        return -1;
    cleanup_free char *config_path = xasprintf("%s/config.json", sandbox);
    /* a pod's container: in the pod sandbox's runsc root, where runsc
     * finds the sandbox its io.kubernetes.cri.sandbox-id names */
    cleanup_free char *pod_link = a->pod_sandbox ? xasprintf("%s/sandbox", a->pod_state_dir) : NULL;
    cleanup_free char *pod_root = pod_link ? realpath(pod_link, NULL) : NULL;
    if (pod_link && pod_root == NULL)
        return ac_error(err, errno, "gVisor: the pod sandbox's folder `%s`", pod_link);
    if (create_file(config_path, config, 0600, err) < 0 ||
        write_runsc_args(g, a, pod_root ? pod_root : sandbox, sandbox, err) < 0)
        return -1;
    /* runsc, the container's root, reads its bundle and writes its state there */
    if (chown(config_path, a->root_uid, a->root_gid) < 0 || chown(sandbox, a->root_uid, a->root_gid) < 0)
        return ac_error(err, errno, "gVisor: chown `%s`", sandbox);
    /* `run` waits for the sandbox, which runsc's create leaves behind: it
     * must be reparented to us, not to init */
    if (a->foreground && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "gVisor: become the sandbox's subreaper");
    if (a->pod_sandbox)
        return create_member(g, a, sandbox, pid, err);
    cleanup_free char *pid_file = xasprintf("%s/pid", sandbox);
    /* `run` with nothing between create and start: runsc's own run, one
     * process where create and start are two (each a Go start-up and a
     * reload of runsc's state) */
    char *extra[] = {a->run_now ? "run" : "create", "--bundle", sandbox, "--pid-file", pid_file, NULL, NULL, NULL, NULL};
    size_t n = 5;
    if (a->run_now)
        extra[n++] = "--detach";
    if (a->console_socket) {
        extra[n++] = "--console-socket";
        extra[n++] = (char *)a->console_socket;
    }
    extra[n++] = (char *)a->id;
    int status = -1;
    char **argv = runsc_argv(a->state_dir, extra, n, err);
    if (argv == NULL)
        return -1;
    int r = spawn_in_userns(argv, a, -1, a->cgroup_path, &status, err);
    free_argv(argv);
    if (r < 0)
        return -1;
    if (status != 0) {
        cleanup_free char *why = runsc_last_error(a->state_dir);
        return ac_error(err, 0, "tier %d: gVisor: runsc %s exited %d: %s", a->tier, extra[0], status, why);
    }
    /* a pod's sandbox: its user namespace, for the pod's containers */
    const char *role = spec_annotation(a->spec, "io.agentcage.pod-role");
    if (role && strcmp(role, "sandbox") == 0) {
        static const char *const files[] = {"gvisor-uid_map", "gvisor-gid_map"};
        for (int k = 0; k < 2; k++) {
            cleanup_free char *path = xasprintf("%s/%s", a->state_dir, files[k]);
            cleanup_free char *text = k == 0 ? map_text(a->uid_map, a->n_uid_map) : map_text(a->gid_map, a->n_gid_map);
            if (create_file(path, text, 0600, err) < 0)
                return -1;
        }
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
    return write_oom_score(a, *pid, err);
}

void gvisor_delete_member(const struct global_opts *g, const char *id)
{
    cleanup_free char *dir = state_dir_path(g, id);
    cleanup_free char *marker = xasprintf("%s/pod-sandbox", dir);
    if (access(marker, F_OK) < 0)
        return;
    pid_t pod = pod_sandbox_pid(g, dir);
    if (pod <= 0)
        return; /* the pod's sandbox is gone, and the container with it */
    ac_error_t e = NULL;
    char *extra[] = {"delete", "--force", (char *)id};
    int status = -1;
    if (runsc_in(pod, dir, extra, 3, &status, &e) < 0) {
        ac_warn("gVisor: delete `%s` from its pod's sandbox: %s", id, e->msg);
        ac_error_free(&e);
        return;
    }
    if (status != 0)
        ac_debug("gVisor: runsc delete --force %s exited %d", id, status);
}

/* A pod's container: its keeper runs `runsc start` (with the container's
 * stdio) when exec.fifo says go, and answers on started.fifo. */
static int start_member(const struct global_opts *g, const struct container_state *st, ac_error_t *err)
{
    cleanup_free char *dir = state_dir_path(g, st->id);
    cleanup_free char *go = xasprintf("%s/exec.fifo", dir);
    cleanup_free char *done = xasprintf("%s/started.fifo", dir);
    cleanup_close int done_fd = open(done, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    cleanup_close int go_fd = open(go, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
    if (done_fd < 0 || go_fd < 0 || pidfd < 0 || process_start_time(st->pid) != st->pid_start_time)
        return ac_error(err, errno, "start `%s`: the keeper of the pod's container is gone", st->id);
    if (write(go_fd, "0", 1) != 1)
        return ac_error(err, errno, "start `%s`: write the exec fifo", st->id);
    struct pollfd pfd[2] = {{.fd = done_fd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    char c = 0;
    int ready;
    while ((ready = poll(pfd, 2, 60000)) < 0 && errno == EINTR)
        ;
    bool answered = ready > 0 && (pfd[0].revents & POLLIN) && read(done_fd, &c, 1) == 1;
    unlink(done);
    if (answered && c == '0')
        return 0;
    cleanup_free char *why = runsc_last_error(dir);
    return ac_error(err, 0, "start `%s`: gVisor: runsc start in the pod's sandbox %s: %s", st->id,
                    answered ? "failed" : ready == 0 ? "did not answer in 60 s" : "ended", why);
}

int gvisor_start(const struct global_opts *g, const struct container_state *st, ac_error_t *err)
{
    if (gvisor_is_pod_member(st))
        return start_member(g, st, err);
    char *extra[] = {"start", st->id};
    int status = -1;
    if (runsc_run(g, st, extra, 2, &status, err) < 0)
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
        return ac_error(err, 0, "exec: --preserve-fds under gVisor: runsc exec hands the process its stdio only "
                                "(it has no --preserve-fds)");
    cleanup_free char *dir = state_dir_path(g, st->id);
    cleanup_free char *sandbox = sandbox_path(dir);
    cleanup_free char *path = xasprintf("%s/exec-%d.json", sandbox, getpid());
    /* runsc writes as the container's root: its pid file is ours, copied */
    cleanup_free char *pid_file = xasprintf("%s/exec-%d.pid", sandbox, getpid());
    cleanup_free char *json = process_json(process);
    struct stat sb;
    if (stat(sandbox, &sb) < 0)
        return ac_error(err, errno, "gVisor: exec: `%s`", sandbox);
    /* read by runsc as the container's root, the owner of sandbox/ */
    if (create_file(path, json, 0600, err) < 0)
        return -1;
    if (chown(path, sb.st_uid, sb.st_gid) < 0) {
        unlink(path);
        return ac_error(err, errno, "gVisor: exec: chown `%s`", path);
    }
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
    int r = runsc_run(g, st, extra, n, &status, err);
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
    unlink(pid_file);
    if (rr < 0)
        return -1;
    text[strcspn(text, "\n")] = '\0';
    if (parse_uint64(text, &v) < 0 || v == 0 || v > INT_MAX)
        return ac_error(err, 0, "gVisor: exec: `%s`: expected a pid, got `%s`", pid_file, text);
    res->pid = (pid_t)v;
    return o->pid_file ? write_pid_file(o->pid_file, res->pid, err) : 0;
}

void gvisor_kill_sandbox(const char *cgroup_path)
{
    /* 1 ms steps: the gofer and the stubs go within a few of the sentry */
    for (int i = 0; cgroup_path && cgroup_path[0] && i < 5000; i++) {
        ac_error_t e = NULL;
        cleanup_free pid_t *pids = NULL;
        size_t n = 0;
        if (cgroup_pids(cgroup_path, &pids, &n, &e) < 0 || n == 0) {
            ac_error_free(&e);
            return;
        }
        if (cgroup_kill_all(cgroup_path, SIGKILL, &e) < 0)
            ac_error_free(&e);
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int gvisor_forward(const struct global_opts *g, const struct container_state *st, int argc, char **argv,
                   ac_error_t *err)
{
    int status = -1;
    if (runsc_run(g, st, argv, (size_t)argc, &status, err) < 0)
        return -1;
    if (status != 0)
        return ac_error(err, 0, "%s `%s`: gVisor: runsc %s exited %d", argv[0], st->id, argv[0], status);
    return 0;
}
