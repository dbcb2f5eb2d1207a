/* Host probes for `agentcage check` (host_probe.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/magic.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/linux/host_probe.h"
#include "runtime/util/utils.h"

void probe_release(struct probe *p)
{
    free(p->detail);
    p->detail = NULL;
}

static struct probe found(bool ok, char *detail)
{
    return (struct probe){.ok = ok, .detail = detail};
}

struct probe probe_seccomp_filter(void)
{
    /* a NULL filter: EFAULT when the kernel knows filters, EINVAL when not */
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, NULL);
    if (r < 0 && (errno == EFAULT || errno == EACCES)) /* EACCES: known, not ours to load here */
        return found(true, xstrdup("SECCOMP_SET_MODE_FILTER"));
    return found(false, xasprintf("seccomp filters: %s", strerror(errno)));
}

struct probe probe_seccomp_notify(void)
{
    unsigned action = SECCOMP_RET_USER_NOTIF;
    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0)
        return found(true, xstrdup("SECCOMP_RET_USER_NOTIF"));
    return found(false, xasprintf("SECCOMP_RET_USER_NOTIF: %s", strerror(errno)));
}

/* Run fn in a child; its exit status is 0 or an errno. */
static int in_child(int (*fn)(void *), void *arg)
{
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0)
        _exit(fn(arg));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
}

static int unshare_user(void *arg)
{
    return unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
}

struct probe probe_user_namespaces(void)
{
    int e = in_child(unshare_user, NULL);
    if (e == 0) {
        cleanup_free char *max = NULL;
        ac_error_t err = NULL;
        if (read_all_file("/proc/sys/user/max_user_namespaces", &max, NULL, &err) < 0)
            ac_error_free(&err);
        if (max)
            max[strcspn(max, "\n")] = '\0';
        return found(true, xasprintf("unshare(CLONE_NEWUSER) works; user.max_user_namespaces = %s",
                                     max ? max : "?"));
    }
    return found(false, xasprintf("unshare(CLONE_NEWUSER): %s", strerror(e)));
}

static const char *fs_name(long type)
{
    switch (type) {
    case EXT4_SUPER_MAGIC: return "ext4";
    case TMPFS_MAGIC: return "tmpfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case XFS_SUPER_MAGIC: return "xfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlay";
    default: return NULL;
    }
}

/* A user namespace to idmap with: a child that unshares one and waits on a
 * pipe until we have its fd. */
static int userns_fd(pid_t *child, int *hold)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0) {
        close(p[0]), close(p[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        close(ready[0]);
        char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        (void)!read(p[0], &c, 1); /* until the parent closes its end */
        _exit(0);
    }
    close(p[0]);
    close(ready[1]);
    char c = 'n';
    if (pid < 0 || read(ready[0], &c, 1) != 1 || c != 'y') {
        close(ready[0]);
        close(p[1]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        errno = EPERM;
        return -1;
    }
    close(ready[0]);
    /* map the namespace's root to nobody; root may write any map */
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
    ac_error_t err = NULL;
    int r = write_file(path, "0 65534 1\n", 10, &err);
    snprintf(path, sizeof(path), "/proc/%d/setgroups", pid);
    if (r == 0)
        r = write_file(path, "deny", 4, &err);
    snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
    if (r == 0)
        r = write_file(path, "0 65534 1\n", 10, &err);
    ac_error_free(&err);
    snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
    int fd = r == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    *child = pid;
    *hold = p[1];
    return fd;
}

struct probe probe_idmapped_mount(const char *path)
{
    struct statfs sfs;
    const char *fs = statfs(path, &sfs) == 0 ? fs_name(sfs.f_type) : NULL;
    char fsbuf[32];
    if (fs == NULL) {
        snprintf(fsbuf, sizeof(fsbuf), "fs 0x%lx", (unsigned long)sfs.f_type);
        fs = fsbuf;
    }
    /* a detached copy of the mount: never attached anywhere, gone on close */
    cleanup_close int tree = (int)open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0)
        return found(false, xasprintf("%s (%s): open_tree: %s", path, fs, strerror(errno)));
    pid_t child = -1;
    cleanup_close int hold = -1;
    cleanup_close int ns = userns_fd(&child, &hold);
    int e = 0;
    if (ns >= 0) {
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (unsigned long long)ns};
        if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
            e = errno;
    } else {
        e = errno;
    }
    if (hold >= 0)
        close(ac_steal_fd(&hold));
    if (child > 0)
        waitpid(child, NULL, 0);
    if (e == 0)
        return found(true, xasprintf("%s (%s)", path, fs));
    return found(false, xasprintf("%s (%s): mount_setattr(MOUNT_ATTR_IDMAP): %s", path, fs, strerror(e)));
}

struct probe probe_namespaces(const char *const *needed)
{
    char *have = NULL, *missing = NULL;
    for (const char *const *n = needed; *n; n++) {
        cleanup_free char *path = xasprintf("/proc/self/ns/%s", *n);
        char **list = access(path, F_OK) == 0 ? &have : &missing;
        char *old = *list;
        *list = old ? xasprintf("%s %s", old, *n) : xstrdup(*n);
        free(old);
    }
    if (missing == NULL)
        return found(true, have ? have : xstrdup(""));
    char *detail = xasprintf("missing: %s", missing);
    free(have);
    free(missing);
    return found(false, detail);
}
