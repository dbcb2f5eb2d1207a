/* User namespaces of tiered containers: container root is never host root.
 *
 * Each tiered container gets a slice of USERNS_SLICE host ids from the
 * operator's range (--userns-range START:SIZE), claimed by creating
 * /run/agentcage-userns/slice-N exclusively, so two containers never share
 * one, whatever their --root. The runtime makes the user namespace itself
 * (a child unshares it, the runtime writes its maps and keeps an fd), so
 * the container's init can do its whole setup as host root in namespaces
 * the host owns and join the user namespace last: then the container's
 * root has capabilities over nothing but its user namespace, not even over
 * its own mounts or network. The same fd idmaps the rootfs, so the image's
 * files are the container's own. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/linux/userns.h"
#include "runtime/util/utils.h"

#define SLICE_DIR "/run/agentcage-userns"

/* "ROOT\nID\n" of a slice file, into root and id. */
static bool read_owner(int dfd, const char *name, char *root, size_t rlen, char *id, size_t ilen)
{
    cleanup_close int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char buf[8192];
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *nl = strchr(buf, '\n');
    if (nl == NULL)
        return false;
    *nl = '\0';
    snprintf(root, rlen, "%s", buf);
    snprintf(id, ilen, "%s", nl + 1);
    id[strcspn(id, "\n")] = '\0';
    return true;
}

/* A slice whose container's state directory is gone (a create killed
 * midway, a state root removed): free for the next one. */
static bool slice_stale(int dfd, const char *name)
{
    char root[8192], id[1100];
    if (!read_owner(dfd, name, root, sizeof(root), id, sizeof(id)))
        return false; /* being written, or not ours to judge */
    cleanup_free char *state = xasprintf("%s/%s", root, id);
    struct stat st;
    return stat(state, &st) < 0 && errno == ENOENT;
}

int userns_slice_acquire(const char *state_root, const char *id, uint32_t start, uint32_t size, int *slice,
                         uint32_t *host_base, ac_error_t *err)
{
    *slice = -1;
    uint32_t n = size / USERNS_SLICE;
    if (n == 0)
        return ac_error(err, 0, "--userns-range: %u ids hold no slice of %u", size, USERNS_SLICE);
    if (mkdir_p(SLICE_DIR, 0700, err) < 0)
        return -1;
    cleanup_close int dfd = open(SLICE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return ac_error(err, errno, "open `%s`", SLICE_DIR);
    cleanup_free char *owner = xasprintf("%s\n%s\n", state_root, id);
    /* start where this id hashes to: concurrent creates rarely collide */
    uint32_t h = 2166136261u;
    for (const char *p = id; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t k = 0; k < n; k++) {
            uint32_t s = (h + k) % n;
            char name[32];
            snprintf(name, sizeof(name), "slice-%u", s);
            int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0) {
                if (errno != EEXIST)
                    return ac_error(err, errno, "claim `%s/%s`", SLICE_DIR, name);
                if (pass == 1 && slice_stale(dfd, name))
                    unlinkat(dfd, name, 0), k--; /* try this one again */
                continue;
            }
            int w = (int)write_all(fd, owner, strlen(owner));
            close(fd);
            if (w < 0) {
                unlinkat(dfd, name, 0);
                return ac_error(err, errno, "write `%s/%s`", SLICE_DIR, name);
            }
            *slice = (int)s;
            *host_base = start + s * USERNS_SLICE;
            return 0;
        }
    }
    return ac_error(err, 0, "user namespaces: all %u slices of --userns-range %u:%u are in use", n, start, size);
}

void userns_slice_release(const char *state_root, const char *id, int slice)
{
    if (slice < 0)
        return;
    cleanup_close int dfd = open(SLICE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    char name[32], root[8192], owner[1100];
    snprintf(name, sizeof(name), "slice-%d", slice);
    /* only our own claim: the slice may have been reclaimed as stale */
    if (read_owner(dfd, name, root, sizeof(root), owner, sizeof(owner)) && strcmp(root, state_root) == 0 &&
        strcmp(owner, id) == 0)
        unlinkat(dfd, name, 0);
}

static int userns_holder(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return 0;
}

/* A holder killed and not yet reaped; its stack is free once it is. */
static pid_t unreaped_holder = -1;

void userns_reap_holder(void)
{
    if (unreaped_holder > 0)
        while (waitpid(unreaped_holder, NULL, 0) < 0 && errno == EINTR)
            ;
    unreaped_holder = -1;
}

int userns_make(const struct oci_idmap *uids, size_t n_uids, const struct oci_idmap *gids, size_t n_gids,
                bool defer_reap, ac_error_t *err)
{
    userns_reap_holder(); /* before its stack is used again */
    if (n_uids == 0 || n_gids == 0)
        return ac_error(err, 0, "user namespace: uid and gid mappings are both needed");
    /* The holder shares our memory and fd table (CLONE_VM, CLONE_FILES: no
     * copy of the runtime's page tables or fds to make, nor to close at its
     * exit) and only waits on its own small stack until it is killed; one
     * at a time, so one stack. */
    static char holder_stack[16384] __attribute__((aligned(16)));
    pid_t pid = clone(userns_holder, holder_stack + sizeof(holder_stack),
                      CLONE_NEWUSER | CLONE_VM | CLONE_FILES | SIGCHLD, NULL);
    if (pid < 0)
        return ac_error(err, errno, "clone a user namespace");
    int ret = -1;
    cleanup_free char *ns = xasprintf("/proc/%d/ns/user", pid);
    const struct {
        const char *file;
        const struct oci_idmap *map;
        size_t n;
    } maps[] = {{"uid_map", uids, n_uids}, {"gid_map", gids, n_gids}};
    for (size_t k = 0; k < 2; k++) {
        cleanup_free char *text = xstrdup("");
        for (size_t j = 0; j < maps[k].n; j++) {
            char *next = xasprintf("%s%u %u %u\n", text, maps[k].map[j].container_id, maps[k].map[j].host_id,
                                   maps[k].map[j].size);
            free(text);
            text = next;
        }
        cleanup_free char *path = xasprintf("/proc/%d/%s", pid, maps[k].file);
        if (write_file(path, text, strlen(text), err) < 0)
            goto out;
    }
    ret = open(ns, O_RDONLY | O_CLOEXEC);
    if (ret < 0)
        ac_error(err, errno, "open `%s`", ns);
out:
    kill(pid, SIGKILL);
    unreaped_holder = pid;
    if (!defer_reap)
        userns_reap_holder();
    return ret;
}

bool userns_maps_host_root(const struct oci_idmap *map, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (map[i].size > 0 && map[i].host_id == 0)
            return true;
    return false;
}

int userns_host_of(const struct oci_idmap *map, size_t n, uint32_t id, uint32_t *host)
{
    for (size_t i = 0; i < n; i++)
        if (id >= map[i].container_id && id - map[i].container_id < map[i].size) {
            *host = map[i].host_id + (id - map[i].container_id);
            return 0;
        }
    return -1;
}

void userns_give_stdio(uid_t uid, gid_t gid)
{
    for (int fd = 0; fd <= 2; fd++) {
        struct statfs sfs;
        struct stat st;
        if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0)
            continue;
        /* an anonymous pipe or socket made for this container only; never
         * a file, a device (the host's /dev/null, a tty) or a named fifo */
        bool anonymous = (sfs.f_type == PIPEFS_MAGIC && S_ISFIFO(st.st_mode)) ||
                         (sfs.f_type == SOCKFS_MAGIC && S_ISSOCK(st.st_mode));
        if (anonymous && st.st_uid == 0 && fchown(fd, uid, gid) < 0)
            ac_debug("user namespace: stdio fd %d stays root's: %s", fd, strerror(errno));
    }
}
