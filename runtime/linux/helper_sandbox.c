/* The confinement of the host-side helpers that read container input
 * (see helper_sandbox.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/helper_sandbox.h"
#include "runtime/linux/caps.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/landlock_abi.h"
#include "runtime/util/utils.h"
#include "worker_filter.h" /* generated: build/gen/ */

/* The worker's empty root is a tmpfs mounted over /proc (a directory every
 * host has) in its own mount namespace, then made the root. */
#define NEW_ROOT "/proc"

/* What glibc's resolver reads: bound read-only into the empty root. */
static const char *const resolver_files[] = {"resolv.conf", "hosts", "nsswitch.conf", "gai.conf", "host.conf"};
#define N_RESOLVER_FILES (sizeof(resolver_files) / sizeof(resolver_files[0]))

static int landlock_add(int ruleset, int type, const void *attr, const char *what, ac_error_t *err)
{
    if (syscall(SYS_landlock_add_rule, ruleset, type, attr, 0) < 0)
        return ac_error(err, errno, "sandbox: Landlock rule for %s", what);
    return 0;
}

/* A ruleset handling every filesystem right (and, from ABI 4, TCP bind and
 * connect; from ABI 6 the given scopes). */
static int landlock_ruleset(int abi, uint64_t scoped, bool any_port, ac_error_t *err)
{
    if (abi < 1)
        return ac_error(err, 0, "sandbox: this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, lsm=)");
    struct ac_landlock_ruleset_attr attr = {
        .handled_access_fs = AC_LANDLOCK_FS_ALL(abi),
        .handled_access_net = abi >= 4 ? AC_LANDLOCK_ACCESS_NET_BIND_TCP |
                                             (any_port ? 0 : AC_LANDLOCK_ACCESS_NET_CONNECT_TCP)
                                       : 0,
        .scoped = abi >= 6 ? scoped : 0,
    };
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, AC_LANDLOCK_RULESET_SIZE(abi), 0);
    if (fd < 0)
        return ac_error(err, errno, "sandbox: Landlock ruleset");
    return fd;
}

static int landlock_allow_path(int ruleset, const char *path, uint64_t access, ac_error_t *err)
{
    cleanup_close int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "sandbox: open `%s`", path);
    struct landlock_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
    return landlock_add(ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, path, err);
}

static int landlock_enforce(int ruleset, ac_error_t *err)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "sandbox: prctl(PR_SET_NO_NEW_PRIVS)");
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
        return ac_error(err, errno, "sandbox: Landlock restrict");
    return 0;
}

/* The bounding set: of what it holds (a mask), everything but keep goes,
 * where we may. Returns 1, or 0 when a drop was refused (EPERM: no
 * CAP_SETPCAP, rootless; no_new_privs bars regaining any), or -1. */
static int drop_bounding(uint64_t keep, uint64_t holds, ac_error_t *err)
{
    int max = caps_known_max(), all = 1;
    for (int cap = 0; cap <= max; cap++) {
        if (!(holds & ~keep & (1ULL << cap)) || prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL)
            continue;
        if (errno != EPERM)
            return ac_error(err, errno, "sandbox: drop capability %d from the bounding set", cap);
        all = 0;
    }
    return all;
}

/* Permitted and effective: only those of keep we have now; inheritable and
 * ambient: nothing. */
static int caps_keep_only(uint64_t keep, ac_error_t *err)
{
    int max = caps_known_max();
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return ac_error(err, errno, "sandbox: clear the ambient capabilities");
    cap_t now = cap_get_proc(), want = cap_init();
    if (!now || !want) {
        cap_free(now);
        cap_free(want);
        return ac_error(err, errno, "sandbox: cap_get_proc");
    }
    for (int cap = 0; cap <= max; cap++) {
        cap_flag_value_t have = CAP_CLEAR;
        cap_value_t v = cap;
        if ((keep & (1ULL << cap)) && cap_get_flag(now, v, CAP_PERMITTED, &have) == 0 && have == CAP_SET) {
            cap_set_flag(want, CAP_PERMITTED, 1, &v, CAP_SET);
            cap_set_flag(want, CAP_EFFECTIVE, 1, &v, CAP_SET);
        }
    }
    int r = cap_set_proc(want);
    int saved = errno;
    cap_free(now);
    cap_free(want);
    if (r < 0)
        return ac_error(err, saved, "sandbox: set capabilities");
    return 0;
}

/* Rootless without CAP_SYS_ADMIN: a user namespace of our own, mapping
 * just our ids to themselves, to own the mount namespace. */
static int own_user_namespace(ac_error_t *err)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        return ac_error(err, errno, "sandbox: unshare a user and mount namespace");
    char map[64];
    snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
    if (write_file("/proc/self/setgroups", "deny", 4, err) < 0 || write_file("/proc/self/uid_map", map, strlen(map), err) < 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
    return write_file("/proc/self/gid_map", map, strlen(map), err);
}

static int mount_or_fail(const char *src, const char *dst, const char *type, unsigned long flags, const char *data,
                         ac_error_t *err)
{
    if (mount(src, dst, type, flags, data) < 0)
        return ac_error(err, errno, "sandbox: mount `%s` on `%s`", src ? src : "(none)", dst);
    return 0;
}

/* The empty read-only root with the resolver's files; *own_userns: it
 * took a user namespace of its own (whose bounding set is full again). */
static int empty_root(const struct helper_sandbox *sb, bool *own_userns, ac_error_t *err)
{
    char sources[N_RESOLVER_FILES][PATH_MAX];
    for (size_t i = 0; i < N_RESOLVER_FILES; i++) {
        /* the operator's resolv.conf and hosts instead of the host's */
        const char *given = i == 0 ? sb->resolv_conf : i == 1 ? sb->hosts : NULL;
        cleanup_free char *path = given ? xstrdup(given) : xasprintf("/etc/%s", resolver_files[i]);
        struct stat st;
        /* the host's files as they resolve now (resolv.conf is often a
         * symlink into /run); a missing one is left out */
        if (!realpath(path, sources[i]) || stat(sources[i], &st) < 0 || !S_ISREG(st.st_mode)) {
            if (given)
                return ac_error(err, 0, "--%s `%s`: not a regular file", i == 0 ? "resolv-conf" : "hosts", path);
            sources[i][0] = '\0';
        }
    }
    if (unshare(CLONE_NEWNS) < 0) {
        if (errno != EPERM || sb->change_user)
            return ac_error(err, errno, "sandbox: unshare the mount namespace");
        if (own_user_namespace(err) < 0)
            return -1;
        *own_userns = true;
    }
    if (mount_or_fail(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, err) < 0 ||
        mount_or_fail("agentcage-egress", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "size=64k,nr_inodes=16,mode=0755", err) < 0)
        return -1;
    if (mkdir(NEW_ROOT "/etc", 0755) < 0)
        return ac_error(err, errno, "sandbox: mkdir");
    for (size_t i = 0; i < N_RESOLVER_FILES; i++) {
        if (!sources[i][0])
            continue;
        cleanup_free char *dst = xasprintf(NEW_ROOT "/etc/%s", resolver_files[i]);
        int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        if (fd < 0)
            return ac_error(err, errno, "sandbox: create `%s`", dst);
        close(fd);
        if (mount_or_fail(sources[i], dst, NULL, MS_BIND, NULL, err) < 0 ||
            mount_or_fail(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
                          err) < 0)
            return -1;
    }
    if (mount_or_fail(NULL, NEW_ROOT, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      NULL, err) < 0)
        return -1;
    /* pivot_root(".", "."): the old root ends up on top and is detached */
    if (chdir(NEW_ROOT) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 ||
        chdir("/") < 0)
        return ac_error(err, errno, "sandbox: pivot into the empty root");
    return 0;
}

static int set_limits(unsigned max_fds, ac_error_t *err)
{
    const struct { int res; rlim_t v; const char *name; } limits[] = {
        {RLIMIT_NOFILE, max_fds, "RLIMIT_NOFILE"}, {RLIMIT_CORE, 0, "RLIMIT_CORE"},
        {RLIMIT_FSIZE, 0, "RLIMIT_FSIZE"},         {RLIMIT_MEMLOCK, 0, "RLIMIT_MEMLOCK"},
    };
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        struct rlimit rl = {limits[i].v, limits[i].v};
        if (setrlimit(limits[i].res, &rl) < 0)
            return ac_error(err, errno, "sandbox: %s", limits[i].name);
    }
    return 0;
}

static int become_user(const struct helper_sandbox *sb, ac_error_t *err)
{
    if (!sb->change_user)
        return 0;
    if (setgroups(0, NULL) < 0)
        return ac_error(err, errno, "sandbox: setgroups");
    if (setresgid(sb->gid, sb->gid, sb->gid) < 0)
        return ac_error(err, errno, "sandbox: setresgid %u", sb->gid);
    if (setresuid(sb->uid, sb->uid, sb->uid) < 0)
        return ac_error(err, errno, "sandbox: setresuid %u", sb->uid);
    return 0;
}

static int worker_landlock(const struct helper_sandbox *sb, ac_error_t *err)
{
    int abi = landlock_abi();
    cleanup_close int ruleset =
        landlock_ruleset(abi, AC_LANDLOCK_SCOPE_SIGNAL | AC_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, sb->any_port, err);
    if (ruleset < 0)
        return -1;
    for (size_t i = 0; i < N_RESOLVER_FILES; i++) {
        cleanup_free char *path = xasprintf("/etc/%s", resolver_files[i]);
        if (access(path, F_OK) == 0 && landlock_allow_path(ruleset, path, LANDLOCK_ACCESS_FS_READ_FILE, err) < 0)
            return -1;
    }
    for (size_t i = 0; abi >= 4 && !sb->any_port && i < sb->n_ports; i++) {
        struct ac_landlock_net_port_attr attr = {.allowed_access = AC_LANDLOCK_ACCESS_NET_CONNECT_TCP,
                                                 .port = (__u64)sb->ports[i]};
        if (landlock_add(ruleset, AC_LANDLOCK_RULE_NET_PORT, &attr, "a TCP port", err) < 0)
            return -1;
    }
    return landlock_enforce(ruleset, err);
}

/* The worker's syscalls (runtime/linux/gen/worker_filter_gen.c says which),
 * compiled to BPF at build time and loaded as is; no_new_privs is on
 * already (Landlock's), set again for this step alone to hold. */
static int worker_seccomp(ac_error_t *err)
{
    struct sock_fprog prog = {.len = sizeof(worker_filter) / sizeof(worker_filter[0]),
                              .filter = (struct sock_filter *)worker_filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "sandbox: prctl(PR_SET_NO_NEW_PRIVS)");
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
        return ac_error(err, errno, "sandbox: seccomp filter");
    return 0;
}

int helper_sandbox_enter(const struct helper_sandbox *sb, ac_error_t *err)
{
    bool own_userns = false;
    if (set_limits(sb->max_fds, err) < 0 || empty_root(sb, &own_userns, err) < 0)
        return -1;
    uint64_t holds = sb->bounding_left && !own_userns ? sb->bounding_left : ~0ULL;
    if (drop_bounding(0, holds, err) < 0 || become_user(sb, err) < 0 || caps_keep_only(0, err) < 0)
        return -1;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return ac_error(err, errno, "sandbox: prctl(PR_SET_DUMPABLE)");
    /* after the uid change, which clears it; then check the parent did not
     * go before it was set */
    if (sb->parent > 0 && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        return ac_error(err, errno, "sandbox: prctl(PR_SET_PDEATHSIG)");
    if (sb->parent > 0 && getppid() != sb->parent)
        return ac_error(err, 0, "sandbox: the parent is gone");
    if (worker_landlock(sb, err) < 0)
        return -1;
    return worker_seccomp(err);
}

int helper_bound_to(uint64_t keep, ac_error_t *err)
{
    return drop_bounding(keep, ~0ULL, err);
}

int helper_keep_kill_only(const char *const *rw_dirs, ac_error_t *err)
{
    if (caps_keep_only(1ULL << CAP_KILL, err) < 0)
        return -1;
    int abi = landlock_abi();
    cleanup_close int ruleset = landlock_ruleset(abi, AC_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, false, err);
    if (ruleset < 0)
        return -1;
    for (size_t i = 0; rw_dirs[i]; i++)
        if (landlock_allow_path(ruleset, rw_dirs[i], AC_LANDLOCK_FS_ALL(abi) & ~LANDLOCK_ACCESS_FS_EXECUTE, err) < 0)
            return -1;
    return landlock_enforce(ruleset, err);
}

/* ---------------------------------------------------------------- idle memory */

#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_FILE (1ULL << 61) /* a page-cache page (or shared anon), not a private copy */
#define PAGEMAP_BATCH 512
#define SHED_RUNS_MAX 512         /* runs of file pages dropped at most (more are left mapped) */

struct shed_runs {
    uintptr_t start[SHED_RUNS_MAX], end[SHED_RUNS_MAX];
    size_t n;
    uintptr_t stack_start; /* the main thread's stack's lowest address, 0: not found */
};

static void shed_run(struct shed_runs *r, uintptr_t start, uintptr_t end)
{
    if (r->n < SHED_RUNS_MAX) {
        r->start[r->n] = start;
        r->end[r->n++] = end;
    }
}

/* The runs of file pages in [start, end) that are still the page cache's
 * own; a private copy (a relocated page, written data) is in none, so
 * nothing but mappings goes. */
static void find_runs(int pagemap_fd, uintptr_t start, uintptr_t end, size_t page, struct shed_runs *r)
{
    uint64_t ent[PAGEMAP_BATCH];
    uintptr_t run = 0; /* start of the current run of file pages, 0: none */
    for (uintptr_t at = start; at < end;) {
        size_t n = (end - at) / page < PAGEMAP_BATCH ? (end - at) / page : PAGEMAP_BATCH;
        ssize_t got = pread(pagemap_fd, ent, n * sizeof(ent[0]), (off_t)(at / page * sizeof(ent[0])));
        if (got <= 0) {
            end = at;
            break;
        }
        n = (size_t)got / sizeof(ent[0]);
        for (size_t i = 0; i < n; i++, at += page) {
            bool file = (ent[i] & (PAGEMAP_PRESENT | PAGEMAP_FILE)) == (PAGEMAP_PRESENT | PAGEMAP_FILE);
            if (file && !run)
                run = at;
            if (!file && run) {
                shed_run(r, run, at);
                run = 0;
            }
        }
    }
    if (run)
        shed_run(r, run, end);
}

/* Every file mapping's runs of page-cache pages into r. */
static void find_file_runs(int maps_fd, int pagemap_fd, struct shed_runs *r)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), cap = 64 << 10, len = 0;
    cleanup_free char *maps = xmalloc(cap + 1);
    ssize_t n;
    if (lseek(maps_fd, 0, SEEK_SET) < 0)
        return;
    while ((n = read(maps_fd, maps + len, cap - len)) > 0) {
        len += (size_t)n;
        if (len == cap) {
            cap *= 2;
            maps = xrealloc(maps, cap + 1);
        }
    }
    maps[len] = '\0';
    for (char *line = maps, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        unsigned long start, end, inode;
        int name = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %n", &start, &end, &inode, &name) != 3)
            continue;
        if (inode == 0 && name > 0 && strcmp(line + name, "[stack]") == 0)
            r->stack_start = start;
        if (inode == 0)
            continue; /* anonymous: the heap, stacks, [vdso] */
        find_runs(pagemap_fd, start, end, page, r);
    }
}

__attribute__((hot)) void helper_shed_file_pages(int maps_fd, int pagemap_fd)
{
    /* everything else first (the parsing, freeing, closing): once a
     * library's pages went, each call into it would map them again */
    struct shed_runs r = {.n = 0};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    malloc_trim(0); /* the free heap's pages too (what the start allocated and freed) */
    if (maps_fd >= 0 && pagemap_fd >= 0)
        find_file_runs(maps_fd, pagemap_fd, &r);
    if (maps_fd >= 0)
        close(maps_fd);
    if (pagemap_fd >= 0)
        close(pagemap_fd);
    for (size_t i = 0; i < r.n; i++)
        madvise((void *)r.start[i], r.end[i] - r.start[i], MADV_DONTNEED);
    /* and the stack the start grew below us, which nothing uses any more
     * (single-threaded: this is the only stack; two pages kept for the
     * calls from here on; a signal below would fault in zeroed pages) */
    uintptr_t below = ((uintptr_t)__builtin_frame_address(0) & ~(uintptr_t)(page - 1)) - 2 * page;
    if (r.stack_start && below > r.stack_start)
        madvise((void *)r.stack_start, below - r.stack_start, MADV_DONTNEED);
}
