/* Namespaces: the order they are joined in, their /proc names, the clone
 * of a container's first process, loopback in a new network namespace,
 * and the plan create makes of config.json's namespaces (which to make,
 * which to join, and at a tier that none joined is the host's). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/ioprio.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/caps.h"
#include "runtime/linux/hooks.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/rootfs.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/linux/tier_seccomp.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier.h"
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

static void *netns_ahead_thread(void *arg)
{
    struct netns_ahead *a = arg;
    ac_error_t err = NULL;
    /* what fails here fails again in the init, which reports it */
    a->own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (a->own >= 0 && unshare(CLONE_NEWNET) == 0 && loopback_up(&err) == 0)
        a->fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    ac_error_free(&err);
    return NULL;
}

void netns_ahead_start(struct netns_ahead *a)
{
    a->fd = a->own = -1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    a->started = pthread_create(&a->thread, &attr, netns_ahead_thread, a) == 0;
    pthread_attr_destroy(&attr);
}

bool netns_ahead_take(struct netns_ahead *a)
{
    if (a->started) {
        pthread_join(a->thread, NULL);
        a->started = false;
    }
    return a->fd >= 0 && a->own >= 0;
}

pid_t netns_ahead_clone(struct netns_ahead *a, unsigned long flags, int cgroup_fd, bool *into_cgroup, bool *lo_down)
{
    if (setns(a->fd, CLONE_NEWNET) < 0) {
        *lo_down = true; /* the clone's own namespace, as without one made ahead */
        return clone_child(flags, cgroup_fd, into_cgroup);
    }
    pid_t pid = clone_child(flags & ~(unsigned long)CLONE_NEWNET, cgroup_fd, into_cgroup);
    if (pid == 0)
        return 0;
    int e = errno;
    if (setns(a->own, CLONE_NEWNET) < 0) {
        /* the runtime would go on in the container's namespace: never */
        fprintf(stderr, "agentcage: back to the runtime's network namespace: %s\n", strerror(errno));
        abort();
    }
    errno = e;
    return pid;
}

void netns_ahead_close(struct netns_ahead *a)
{
    netns_ahead_take(a);
    if (a->fd >= 0)
        close(a->fd);
    if (a->own >= 0)
        close(a->own);
    a->fd = a->own = -1;
}

/* Is fd a namespace file (nsfs), not whatever a path was swapped for? */
static bool is_nsfs(int fd)
{
    struct statfs sfs;
    return fstatfs(fd, &sfs) == 0 && sfs.f_type == NSFS_MAGIC;
}

int netns_pinned_open(const char *path, int *fd, ac_error_t *err)
{
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd >= 0 && is_nsfs(*fd))
        return 0;
    if (*fd >= 0) {
        /* an empty file left by a maker that died before its mount */
        close(*fd);
        *fd = -1;
    } else if (errno != ENOENT) {
        return ac_error(err, errno, "network namespace `%s`", path);
    }
    cleanup_close int mark = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0400);
    if (mark < 0)
        return ac_error(err, errno, "create `%s`", path);
    /* made in this process, which goes back to its own namespace after */
    cleanup_close int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (own < 0)
        return ac_error(err, errno, "open /proc/self/ns/net");
    if (unshare(CLONE_NEWNET) < 0)
        return ac_error(err, errno, "new network namespace for `%s`", path);
    int ret = loopback_up(err);
    if (ret == 0 && mount("/proc/self/ns/net", path, NULL, MS_BIND, NULL) < 0)
        ret = ac_error(err, errno, "pin the network namespace at `%s`", path);
    if (setns(own, CLONE_NEWNET) < 0) {
        /* the runtime would go on in the wrong namespace: never */
        fprintf(stderr, "agentcage: back to the runtime's network namespace: %s\n", strerror(errno));
        abort();
    }
    if (ret < 0) {
        unlink(path);
        return -1;
    }
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0)
        return ac_error(err, errno, "network namespace `%s`", path);
    if (!is_nsfs(*fd)) {
        close(*fd);
        *fd = -1;
        return ac_error(err, 0, "network namespace `%s`: not a namespace once pinned", path);
    }
    return 0;
}

/* clone3's arguments (linux/sched.h's struct clone_args, to version 2) */
struct clone3_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
        cgroup;
};
#define AC_CLONE_INTO_CGROUP 0x200000000ULL

pid_t clone_child(unsigned long flags, int cgroup_fd, bool *into_cgroup)
{
    *into_cgroup = false;
    if (cgroup_fd >= 0) {
        struct clone3_args args = {.flags = flags | AC_CLONE_INTO_CGROUP,
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

#if defined(__x86_64__)
/* clone3 whose child calls fn(arg) on the stack args gives it and exits
 * with what it returns: the child cannot come back through C code, whose
 * frames are on the caller's stack. */
static long clone3_run(struct clone3_args *args, int (*fn)(void *), void *arg)
{
    register long r12 __asm__("r12") = (long)arg;
    register long r13 __asm__("r13") = (long)fn;
    long ret;
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "mov %%r12, %%rdi\n\t"
                     "call *%%r13\n\t"
                     "mov %%eax, %%edi\n\t"
                     "mov $231, %%eax\n\t" /* exit_group */
                     "syscall\n\t"
                     "ud2\n"
                     "1:"
                     : "=a"(ret)
                     : "0"((long)SYS_clone3), "D"(args), "S"(sizeof(*args)), "r"(r12), "r"(r13)
                     : "rcx", "r11", "memory");
    return ret;
}
#endif

pid_t clone_vfork(int (*fn)(void *), void *arg, void *stack, size_t stack_size, int cgroup_fd)
{
    if (cgroup_fd < 0)
        return clone(fn, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
#if defined(__x86_64__)
    struct clone3_args args = {.flags = CLONE_VM | CLONE_VFORK | AC_CLONE_INTO_CGROUP,
                               .exit_signal = SIGCHLD,
                               .stack = (uint64_t)(uintptr_t)stack,
                               .stack_size = stack_size,
                               .cgroup = (uint64_t)cgroup_fd};
    long r = clone3_run(&args, fn, arg);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return (pid_t)r;
#else
    errno = ENOSYS;
    return -1;
#endif
}

bool cgroup_join_report(struct cgroup_join *j, int sync_fd)
{
    ac_error_t err = NULL;
    cleanup_free char *why = NULL;
    if (cgroup_join_self(j, &err) < 0) {
        why = ac_error_string(err);
        ac_error_free(&err);
    }
    if (sync_send(sync_fd, SYNC_JOINED, why ? why : "", why ? strlen(why) : 0) < 0)
        _exit(1);
    return why == NULL || *why == '\0'; /* as cgroup_join_finish reads it */
}

int cgroup_join_finish(int sync_fd, bool child_joins, bool has_v2, bool into_cgroup, const char *path, pid_t pid,
                       bool *alone, ac_error_t *err)
{
    if (alone)
        *alone = false;
    if (child_joins) {
        enum sync_type t;
        cleanup_free char *why = NULL;
        if (sync_recv(sync_fd, &t, &why, NULL) < 0 || t != SYNC_JOINED)
            return ac_error(err, 0, "container process: died before joining its cgroup");
        if (why == NULL || *why == '\0') {
            if (has_v2 && !into_cgroup)
                return cgroup_enter_v2(path, pid, err);
            if (alone)
                *alone = true;
            return 0;
        }
        ac_debug("%s: joined by the runtime", why);
    } else if (into_cgroup) {
        return 0; /* no v1 hierarchy: clone3 did it all */
    }
    return cgroup_enter(path, pid, err);
}

void ns_plan_close(struct ns_plan *p)
{
    for (int i = 0; i < NS_COUNT; i++)
        if (p->join_fds[i] >= 0)
            close(p->join_fds[i]);
    if (p->pid_join_fd >= 0)
        close(p->pid_join_fd);
}

/* At a tier a namespace given by path must be a namespace of its declared
 * type and not the host's: the inode it opens is compared with the
 * runtime's own and pid 1's namespaces of that type, so no spelling
 * (/proc/2/ns/pid, /proc/thread-self/ns/pid, a bind-mounted nsfs file)
 * gets the container into the host's. Checked on the fd that is joined. */
static int check_not_host_namespace(int fd, const struct oci_namespace *ns, size_t i, ac_error_t *err)
{
    struct statfs sfs;
    struct stat st;
    if (fstatfs(fd, &sfs) < 0 || sfs.f_type != NSFS_MAGIC || fstat(fd, &st) < 0)
        return ac_error(err, 0, "linux.namespaces[%zu]: `%s` is not a namespace", i, ns->path);
    int type = ioctl(fd, NS_GET_NSTYPE);
    if (type != ns->type)
        return ac_error(err, 0, "linux.namespaces[%zu]: `%s` is not a %s namespace", i, ns->path,
                        ns_proc_name(ns->type));
    static const char *const owners[] = {"self", "1"};
    for (size_t k = 0; k < 2; k++) {
        cleanup_free char *host = xasprintf("/proc/%s/ns/%s", owners[k], ns_proc_name(ns->type));
        struct stat hs;
        if (stat(host, &hs) == 0 && hs.st_dev == st.st_dev && hs.st_ino == st.st_ino)
            return ac_error(err, 0, "a tier forbids the host's %s namespace `%s` (linux.namespaces[%zu])",
                            ns_proc_name(ns->type), ns->path, i);
    }
    return 0;
}

int plan_namespaces(const struct oci_spec *spec, bool tiered, struct ns_plan *p, ac_error_t *err)
{
    memset(p, 0, sizeof(*p));
    for (int i = 0; i < NS_COUNT; i++)
        p->join_fds[i] = -1;
    p->pid_join_fd = -1;
    size_t n = spec->linux ? spec->linux->n_namespaces : 0;
    for (size_t i = 0; i < n; i++) {
        const struct oci_namespace *ns = &spec->linux->namespaces[i];
        if (ns->path && *ns->path) {
            int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return ac_error(err, errno, "linux.namespaces[%zu]: open `%s`", i, ns->path);
            if (tiered && check_not_host_namespace(fd, ns, i, err) < 0) {
                close(fd);
                return -1;
            }
            if (ns->type == CLONE_NEWPID) {
                p->pid_join_fd = fd;
                continue;
            }
            /* the cage is built in a mount namespace of its own: joining one
             * would share the caged view with whoever made it */
            if (ns->type == CLONE_NEWNS && tiered) {
                close(fd);
                return ac_error(err, 0, "linux.namespaces[%zu]: a tier forbids joining an existing mount namespace", i);
            }
            if (ns->type == CLONE_NEWNS)
                p->join_mntns = true;
            if (ns->type == CLONE_NEWUTS) {
                /* its hostname may be set, unless it is the host's own */
                ac_error_t host = NULL;
                p->own_utsns = check_not_host_namespace(fd, ns, i, &host) == 0;
                ac_error_free(&host);
            }
            for (int k = 0; k < NS_COUNT; k++)
                if (ns_join_order[k] == ns->type)
                    p->join_fds[k] = fd;
            continue;
        }
        switch (ns->type) {
        case CLONE_NEWCGROUP: p->new_cgroupns = true; break;
        case CLONE_NEWTIME: p->new_timens = true; break;
        default: p->clone_flags |= (unsigned long)ns->type; break;
        }
        if (ns->type == CLONE_NEWUSER) p->new_userns = true;
        if (ns->type == CLONE_NEWNET) p->new_netns = true;
        if (ns->type == CLONE_NEWUTS) p->new_utsns = p->own_utsns = true;
        if (ns->type == CLONE_NEWNS) p->new_mntns = true;
        if (ns->type == CLONE_NEWPID) p->new_pidns = true;
    }
    /* Without a mount namespace the container shares the runtime's (the
     * spec allows it, runc does it): its mounts are made there, under the
     * rootfs, and detached again at delete. A cage needs its own. */
    if (!p->new_mntns && !p->join_mntns) {
        if (tiered)
            return ac_error(err, 0, "linux.namespaces: a tier needs a mount namespace of the container's own");
        p->host_mntns = true;
    }
    if (p->new_userns && (spec->linux->n_uid_mappings == 0 || spec->linux->n_gid_mappings == 0))
        return ac_error(err, 0, "linux.uidMappings: a new user namespace needs uidMappings and gidMappings");
    return 0;
}
