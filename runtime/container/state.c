/* Container state under --root: ROOT/ID/{state.json,config.json,exec.fifo}.
 * state.json is tiny and written atomically; the directory fd is the lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/container/container.h"
#include "runtime/util/utils.h"

const char *const container_status_names[] = {"creating", "created", "running", "paused", "stopped"};

int state_validate_id(const char *id, ac_error_t *err)
{
    size_t len = id ? strlen(id) : 0;
    if (len == 0)
        return ac_error(err, 0, "container id cannot be empty");
    if (len > 1024)
        return ac_error(err, 0, "invalid container id: longer than 1024 bytes");
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '+' && c != '-')))
            return ac_error(err, 0, "invalid container id `%s`: use letters, digits and _ . + - only, starting with a letter or digit", id);
    }
    return 0;
}

char *state_dir_path(const struct global_opts *g, const char *id)
{
    return xasprintf("%s/%s", g->root, id);
}

int state_lock(const struct global_opts *g, const char *id, int *lockfd, ac_error_t *err)
{
    if (state_validate_id(id, err) < 0)
        return -1;
    cleanup_free char *dir = state_dir_path(g, id);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return ac_error(err, 0, "container `%s` does not exist", id);
        return ac_error(err, errno, "open `%s`", dir);
    }
    if (flock(fd, LOCK_EX) < 0) {
        int e = errno;
        close(fd);
        return ac_error(err, e, "lock `%s`", dir);
    }
    *lockfd = fd;
    return 0;
}

int state_open(const struct global_opts *g, const char *id, int *lockfd, struct container_state **st,
               enum container_status *status, ac_error_t *err)
{
    if (lockfd && state_lock(g, id, lockfd, err) < 0)
        return -1;
    if (state_load(g, id, st, err) < 0)
        return -1;
    *status = state_status(g, *st);
    return 0;
}

const char *state_annotation(const struct container_state *st, const char *key)
{
    for (char **a = st->annotations; a && a[0] && a[1]; a += 2)
        if (strcmp(a[0], key) == 0)
            return a[1];
    return NULL;
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

struct container_state *state_dup(const struct container_state *src)
{
    struct container_state *st = xmalloc(sizeof(*st));
    *st = *src;
    st->id = dup_or_null(src->id);
    st->bundle = dup_or_null(src->bundle);
    st->rootfs = dup_or_null(src->rootfs);
    st->cgroup_path = dup_or_null(src->cgroup_path);
    st->created = dup_or_null(src->created);
    st->owner = dup_or_null(src->owner);
    st->termination_log = dup_or_null(src->termination_log);
    size_t n = 0;
    while (src->annotations && src->annotations[n])
        n++;
    st->annotations = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        st->annotations[i] = xstrdup(src->annotations[i]);
    return st;
}

void state_free(struct container_state *st)
{
    if (st == NULL)
        return;
    free(st->id);
    free(st->bundle);
    free(st->rootfs);
    free(st->cgroup_path);
    free(st->created);
    free(st->owner);
    free(st->termination_log);
    if (st->annotations)
        for (char **a = st->annotations; *a; a++)
            free(*a);
    free(st->annotations);
    free(st);
}

static void gen_str(yajl_gen gen, const char *s)
{
    yajl_gen_string(gen, (const unsigned char *)s, strlen(s));
}

static void gen_kv(yajl_gen gen, const char *k, const char *v)
{
    gen_str(gen, k);
    gen_str(gen, v ? v : "");
}

static void gen_annotations(yajl_gen gen, char **annotations)
{
    if (annotations == NULL || annotations[0] == NULL)
        return;
    gen_str(gen, "annotations");
    yajl_gen_map_open(gen);
    for (char **a = annotations; a && a[0] && a[1]; a += 2)
        gen_kv(gen, a[0], a[1]);
    yajl_gen_map_close(gen);
}

static char *gen_finish(yajl_gen gen)
{
    const unsigned char *buf = NULL;
    size_t len = 0;
    yajl_gen_get_buf(gen, &buf, &len);
    char *out = xmalloc(len + 2);
    memcpy(out, buf, len);
    out[len] = '\0';
    yajl_gen_free(gen);
    return out;
}

int state_save(const struct global_opts *g, const struct container_state *st, ac_error_t *err)
{
    yajl_gen gen = yajl_gen_alloc(NULL);
    yajl_gen_map_open(gen);
    gen_kv(gen, "id", st->id);
    gen_str(gen, "pid");
    yajl_gen_integer(gen, st->pid);
    gen_str(gen, "pidStart");
    yajl_gen_integer(gen, (long long)st->pid_start_time);
    gen_kv(gen, "bundle", st->bundle);
    gen_kv(gen, "rootfs", st->rootfs);
    gen_kv(gen, "cgroup", st->cgroup_path);
    gen_kv(gen, "created", st->created);
    gen_kv(gen, "owner", st->owner);
    gen_str(gen, "systemdCgroup");
    yajl_gen_bool(gen, st->systemd_cgroup);
    gen_str(gen, "sharedPidns");
    yajl_gen_bool(gen, st->shared_pidns);
    gen_annotations(gen, st->annotations);
    if (st->creating) {
        gen_str(gen, "creating");
        yajl_gen_bool(gen, true);
    }
    if (st->hooks_mask) {
        gen_str(gen, "hooks");
        yajl_gen_integer(gen, st->hooks_mask);
    }
    /* only for tiered containers: a plain one's state stays as it was */
    if (st->tier >= 0) {
        gen_str(gen, "tier");
        yajl_gen_integer(gen, st->tier);
        gen_str(gen, "timeoutMs");
        yajl_gen_integer(gen, st->timeout_ms);
        if (st->userns_slice >= 0) {
            gen_str(gen, "usernsSlice");
            yajl_gen_integer(gen, st->userns_slice);
        }
        if (st->gvisor)
            gen_kv(gen, "kernel", "gvisor");
        if (st->userns_late) {
            gen_str(gen, "usernsLate");
            yajl_gen_bool(gen, true);
        }
        if (st->netns_ino) {
            char buf[48];
            snprintf(buf, sizeof(buf), "%llu:%llu", st->netns_dev, st->netns_ino);
            gen_str(gen, "podNetns");
            gen_str(gen, buf);
        }
        if (st->notify_fd > 0) {
            gen_str(gen, "tierNotifyFd");
            yajl_gen_integer(gen, st->notify_fd);
        }
        if (st->termination_log)
            gen_kv(gen, "terminationLog", st->termination_log);
        if (st->watchdog_pid > 0) {
            gen_str(gen, "watchdogPid");
            yajl_gen_integer(gen, st->watchdog_pid);
            gen_str(gen, "watchdogStart");
            yajl_gen_integer(gen, (long long)st->watchdog_start);
        }
    }
    yajl_gen_map_close(gen);
    cleanup_free char *json = gen_finish(gen);

    cleanup_free char *dir = state_dir_path(g, st->id);
    cleanup_free char *tmp = xasprintf("%s/.state.json.tmp", dir);
    cleanup_free char *final = xasprintf("%s/state.json", dir);
    /* The state the last save swapped out is still there under tmp: it is
     * overwritten in place (write, then cut to length; no O_TRUNC, which
     * makes ext4 flush on close) and swapped in, the old one kept for the
     * next save. A new inode each time would cost more than the write: ext4
     * without a journal scans past every inode deleted in the last minute
     * for a free one, and a busy host deletes thousands. */
    cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return ac_error(err, errno, "write state `%s`", tmp);
    size_t len = strlen(json);
    if (write_all(fd, json, len) < 0 || ftruncate(fd, (off_t)len) < 0) {
        int e = errno;
        unlink(tmp);
        return ac_error(err, e, "write state `%s`", tmp);
    }
    if (rename_exchange(tmp, final) < 0) {
        int e = errno;
        unlink(tmp);
        return ac_error(err, e, "rename state to `%s`", final);
    }
    return 0;
}

static char *tree_str(yajl_val root, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(root, path, yajl_t_string);
    return xstrdup(v ? YAJL_GET_STRING(v) : "");
}

static long long tree_int(yajl_val root, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(root, path, yajl_t_number);
    return v && YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : 0;
}

static bool tree_bool(yajl_val root, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(root, path, yajl_t_any);
    return v && YAJL_IS_TRUE(v);
}

int state_load(const struct global_opts *g, const char *id, struct container_state **out, ac_error_t *err)
{
    if (state_validate_id(id, err) < 0)
        return -1;
    cleanup_free char *path = xasprintf("%s/%s/state.json", g->root, id);
    cleanup_free char *text = NULL;
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return ac_error(err, 0, "container `%s` does not exist", id);
        return ac_error(err, errno, "open `%s`", path);
    }
    if (read_all_fd(fd, &text, NULL, err) < 0)
        return ac_error_wrap(err, "read state of `%s`", id);
    char ebuf[256];
    yajl_val root = yajl_tree_parse(text, ebuf, sizeof(ebuf));
    if (root == NULL || !YAJL_IS_OBJECT(root)) {
        yajl_tree_free(root);
        return ac_error(err, 0, "state of container `%s` is corrupt (%s)", id, path);
    }
    struct container_state *st = xcalloc(1, sizeof(*st));
    st->id = tree_str(root, "id");
    st->pid = (pid_t)tree_int(root, "pid");
    st->pid_start_time = (unsigned long long)tree_int(root, "pidStart");
    st->bundle = tree_str(root, "bundle");
    st->rootfs = tree_str(root, "rootfs");
    st->cgroup_path = tree_str(root, "cgroup");
    st->created = tree_str(root, "created");
    st->owner = tree_str(root, "owner");
    st->systemd_cgroup = tree_bool(root, "systemdCgroup");
    st->shared_pidns = tree_bool(root, "sharedPidns");
    const char *tpath[] = {"tier", NULL};
    yajl_val tier = yajl_tree_get(root, tpath, yajl_t_number);
    st->tier = tier && YAJL_IS_INTEGER(tier) ? (int)YAJL_GET_INTEGER(tier) : -1;
    st->timeout_ms = tree_int(root, "timeoutMs");
    st->hooks_mask = (unsigned)tree_int(root, "hooks");
    st->creating = tree_bool(root, "creating");
    st->notify_fd = (int)tree_int(root, "tierNotifyFd");
    st->watchdog_pid = (pid_t)tree_int(root, "watchdogPid");
    st->watchdog_start = (unsigned long long)tree_int(root, "watchdogStart");
    const char *spath[] = {"usernsSlice", NULL};
    yajl_val slice = yajl_tree_get(root, spath, yajl_t_number);
    st->userns_slice = slice && YAJL_IS_INTEGER(slice) ? (int)YAJL_GET_INTEGER(slice) : -1;
    st->userns_late = tree_bool(root, "usernsLate");
    const char *lpath[] = {"terminationLog", NULL};
    yajl_val log = yajl_tree_get(root, lpath, yajl_t_string);
    st->termination_log = log ? xstrdup(YAJL_GET_STRING(log)) : NULL;
    const char *kernel_path[] = {"kernel", NULL};
    const char *kernel = YAJL_GET_STRING(yajl_tree_get(root, kernel_path, yajl_t_string));
    st->gvisor = kernel && strcmp(kernel, "gvisor") == 0;
    cleanup_free char *pod_netns = tree_str(root, "podNetns");
    if (pod_netns == NULL || sscanf(pod_netns, "%llu:%llu", &st->netns_dev, &st->netns_ino) != 2)
        st->netns_dev = st->netns_ino = 0;
    const char *apath[] = {"annotations", NULL};
    yajl_val ann = yajl_tree_get(root, apath, yajl_t_object);
    size_t n = ann ? YAJL_GET_OBJECT(ann)->len : 0;
    st->annotations = xcalloc(2 * n + 1, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        yajl_val v = YAJL_GET_OBJECT(ann)->values[i];
        if (!YAJL_IS_STRING(v))
            continue;
        st->annotations[k++] = xstrdup(YAJL_GET_OBJECT(ann)->keys[i]);
        st->annotations[k++] = xstrdup(YAJL_GET_STRING(v));
    }
    yajl_tree_free(root);
    *out = st;
    return 0;
}

enum container_status state_status(const struct global_opts *g, const struct container_state *st)
{
    if (st->creating)
        return STATUS_CREATING;
    if (st->pid <= 0)
        return STATUS_STOPPED;
    unsigned long long start = process_start_time(st->pid);
    if (start == 0 || start != st->pid_start_time)
        return STATUS_STOPPED;
    cleanup_free char *fifo = xasprintf("%s/%s/exec.fifo", g->root, st->id);
    if (access(fifo, F_OK) == 0)
        return STATUS_CREATED;
    if (st->cgroup_path[0] && cgroup_is_frozen(st->cgroup_path))
        return STATUS_PAUSED;
    return STATUS_RUNNING;
}

char *state_oci_json(const struct container_state *st, enum container_status status, bool pretty)
{
    yajl_gen gen = yajl_gen_alloc(NULL);
    if (pretty) {
        yajl_gen_config(gen, yajl_gen_beautify, 1);
        yajl_gen_config(gen, yajl_gen_indent_string, "  ");
    }
    yajl_gen_map_open(gen);
    gen_kv(gen, "ociVersion", "1.2.0");
    gen_kv(gen, "id", st->id);
    gen_str(gen, "pid");
    yajl_gen_integer(gen, status == STATUS_STOPPED ? 0 : st->pid);
    gen_kv(gen, "status", container_status_names[status]);
    gen_kv(gen, "bundle", st->bundle);
    gen_kv(gen, "rootfs", st->rootfs);
    gen_kv(gen, "created", st->created);
    gen_kv(gen, "owner", st->owner);
    gen_annotations(gen, st->annotations);
    yajl_gen_map_close(gen);
    return gen_finish(gen);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_list_ids(const struct global_opts *g, char ***ids, size_t *n, ac_error_t *err)
{
    *ids = NULL;
    *n = 0;
    DIR *d = opendir(g->root);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return ac_error(err, errno, "open `%s`", g->root);
    }
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        /* a container being created has no state.json yet: not listed */
        char *p = xasprintf("%s/%s/state.json", g->root, de->d_name);
        bool complete = access(p, F_OK) == 0;
        free(p);
        if (!complete)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *ids = xrealloc(*ids, cap * sizeof(char *));
        }
        (*ids)[(*n)++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*ids, *n, sizeof(char *), cmp_str);
    return 0;
}

#define HOST_ROOTFS_NOTE "host-rootfs-mount"
#define HOST_ROOTFS_DIR "rootfs"

/* The id of the mount path is on (its topmost), or 0. */
static uint64_t mount_id_at(const char *path)
{
    struct statx stx;
    if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
        return 0;
    return stx.stx_mnt_id;
}

int state_host_rootfs_mount(const char *state_dir, const char *rootfs, char **mountpoint, ac_error_t *err)
{
    cleanup_free char *dir = xasprintf("%s/" HOST_ROOTFS_DIR, state_dir);
    if (mkdir(dir, 0700) < 0)
        return ac_error(err, errno, "create `%s`", dir);
    uint64_t before = mount_id_at(dir);
    if (before == 0)
        return ac_error(err, errno, "statx `%s`", dir);
    /* noted first: a failure from here on is detached by state_remove */
    cleanup_free char *path = xasprintf("%s/" HOST_ROOTFS_NOTE, state_dir);
    cleanup_free char *note = xasprintf("%" PRIu64 "\n", before);
    cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, note, strlen(note)) < 0)
        return ac_error(err, errno, "write `%s`", path);
    if (mount(rootfs, dir, NULL, MS_BIND | MS_REC, NULL) < 0)
        return ac_error(err, errno, "bind the rootfs `%s` at `%s`", rootfs, dir);
    /* nothing mounted beneath propagates to the host's mounts, or back */
    if (mount(NULL, dir, NULL, MS_PRIVATE | MS_REC, NULL) < 0)
        return ac_error(err, errno, "make `%s` rprivate", dir);
    *mountpoint = ac_steal_ptr(&dir);
    return 0;
}

/* Detach every mount stacked on STATE_DIR/rootfs since the note, each with
 * all mounted beneath it; an error if one stays (the folder is then not
 * removed: it would be the container's files). */
static int detach_host_rootfs(const char *state_dir, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("%s/" HOST_ROOTFS_NOTE, state_dir);
    cleanup_free char *note = NULL;
    size_t len;
    if (read_all_file(path, &note, &len, NULL) < 0)
        return 0;
    uint64_t before = strtoull(note, NULL, 10);
    cleanup_free char *dir = xasprintf("%s/" HOST_ROOTFS_DIR, state_dir);
    for (int i = 0; i < 16; i++) {
        uint64_t now = mount_id_at(dir);
        if (now == 0 && errno == ENOENT)
            return 0;
        if (now == before) {
            if (rmdir(dir) < 0 && errno != ENOENT)
                return ac_error(err, errno, "remove `%s`", dir);
            return 0;
        }
        if (now == 0 || umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
            break;
    }
    return ac_error(err, errno, "detach the container's mounts at `%s`", dir);
}

int state_remove(const struct global_opts *g, const char *id, ac_error_t *err)
{
    /* files, a pinned namespace (a Podman pod's cage), a folder of files
     * (a gVisor container's sandbox/) */
    cleanup_free char *dir = state_dir_path(g, id);
    if (detach_host_rootfs(dir, err) < 0)
        return -1;
    return remove_dir(dir, 1, err);
}

int write_pid_file(const char *path, pid_t pid, ac_error_t *err)
{
    cleanup_free char *tmp = NULL;
    const char *slash = strrchr(path, '/');
    if (slash)
        tmp = xasprintf("%.*s/.%s.tmp", (int)(slash - path), path, slash + 1);
    else
        tmp = xasprintf(".%s.tmp", path);
    cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ac_error(err, errno, "write pid file `%s`", path);
    char buf[32];
    int len = snprintf(buf, sizeof(buf), "%d", pid);
    if (write_all(fd, buf, (size_t)len) < 0 || rename_over(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return ac_error(err, e, "write pid file `%s`", path);
    }
    return 0;
}


char *container_hook_state(const struct container_state *st, enum container_status status)
{
    return state_oci_json(st, status, false);
}
