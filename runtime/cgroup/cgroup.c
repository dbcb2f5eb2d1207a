/* Folder runtime/cgroup/ (layer 3): the facade (cgroup.c, cgroup.h) over
 * the v1 and v2 backends and the v2 device filter (cgroup_bpf.c); what they
 * share sits in cgroup_common.c, so no backend calls the facade. It calls
 * only runtime/util/. */
/* cgroup facade: resolves a container's cgroup path and drives each
 * controller on the hierarchy that has it (cgroup_v1.c, cgroup_v2.c), on
 * the host layout that cgroup_common.c detects. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cgroup/cgroup_internal.h"
#include "runtime/util/utils.h"

/* Every hierarchy root the container's cgroup lives in: each v1 hierarchy
 * once, then cgroup2. */
static size_t hierarchy_roots(const struct cg_layout *l, const char *roots[])
{
    size_t n = 0;
    for (size_t i = 0; i < l->n_v1; i++)
        roots[n++] = l->v1[i].mountpoint;
    if (l->v2_mount)
        roots[n++] = l->v2_mount;
    return n;
}

/* ---- path resolution --------------------------------------------------- */

/* Clean an absolute path: collapse '//', drop '.', refuse '..' (a container
 * must not name a cgroup outside the tree it was given). */
static int normalize_cgroup_path(const char *in, const char *what, char **out, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(in);
    cleanup_free char *res = xmalloc(strlen(in) + 2);
    size_t n = 0;
    char *save = NULL;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0)
            return ac_error(err, 0, "%s `%s`: must not contain `..`", what, in);
        res[n++] = '/';
        memcpy(res + n, c, strlen(c));
        n += strlen(c);
    }
    res[n] = '\0';
    if (n == 0)
        return ac_error(err, 0, "%s `%s`: a container cannot use the root cgroup", what, in);
    *out = ac_steal_ptr(&res);
    return 0;
}

/* The runtime's own cgroup, from the memory or pids v1 entry of
 * /proc/self/cgroup, or the cgroup2 "0::" entry. */
static int own_cgroup(char **out, ac_error_t *err)
{
    cleanup_free char *text = NULL;
    if (read_all_file("/proc/self/cgroup", &text, NULL, err) < 0)
        return -1;
    static const char *const wanted[] = {"memory", "pids", ""};
    for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++) {
        for (char *line = text; line && *line;) {
            char *next = strchr(line, '\n');
            size_t len = next ? (size_t)(next - line) : strlen(line);
            cleanup_free char *l = strndup(line, len);
            char *c1 = l ? strchr(l, ':') : NULL;
            char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (c2) {
                *c2 = '\0';
                const char *ctrls = c1 + 1, *path = c2 + 1;
                bool match = false;
                if (*wanted[w] == '\0') {
                    match = *ctrls == '\0';
                } else {
                    cleanup_free char *cs = xstrdup(ctrls);
                    char *save = NULL;
                    for (char *t = strtok_r(cs, ",", &save); t; t = strtok_r(NULL, ",", &save))
                        if (strcmp(t, wanted[w]) == 0)
                            match = true;
                }
                if (match) {
                    *out = xstrdup(path);
                    return 0;
                }
            }
            line = next ? next + 1 : NULL;
        }
    }
    return ac_error(err, 0, "cgroup: cannot find the runtime's own cgroup in /proc/self/cgroup");
}

/* "machine-x.slice" -> "/machine.slice/machine-x.slice"; "-.slice" -> "". */
static int expand_slice(const char *slice, const char *spec_path, char **out, ac_error_t *err)
{
    if (strcmp(slice, "-.slice") == 0) {
        *out = xstrdup("");
        return 0;
    }
    size_t len = strlen(slice);
    const size_t suffix = strlen(".slice");
    if (len <= suffix || strcmp(slice + len - suffix, ".slice") != 0 || strchr(slice, '/'))
        return ac_error(err, 0, "linux.cgroupsPath `%s`: invalid systemd slice `%s`", spec_path,
                        slice);
    cleanup_free char *name = strndup(slice, len - suffix);
    if (name == NULL || name[0] == '-' || name[strlen(name) - 1] == '-' || strstr(name, "--"))
        return ac_error(err, 0, "linux.cgroupsPath `%s`: invalid systemd slice `%s`", spec_path,
                        slice);
    cleanup_free char *res = xstrdup("");
    for (char *dash = strchr(name, '-'); dash; dash = strchr(dash + 1, '-')) {
        char *n = xasprintf("%s/%.*s.slice", res, (int)(dash - name), name);
        free(res);
        res = n;
    }
    char *n = xasprintf("%s/%s", res, slice);
    free(res);
    res = n;
    *out = ac_steal_ptr(&res);
    return 0;
}

static int systemd_path(const char *spec_path, char **out, ac_error_t *err)
{
    const char *c1 = strchr(spec_path, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL || strchr(c2 + 1, ':') || c2[1] == '\0')
        return ac_error(err, 0,
                        "linux.cgroupsPath `%s`: expected \"slice:prefix:name\" for the systemd "
                        "cgroup driver",
                        spec_path);
    cleanup_free char *slice = strndup(spec_path, (size_t)(c1 - spec_path));
    cleanup_free char *prefix = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
    const char *name = c2 + 1;
    if (slice == NULL || prefix == NULL)
        return ac_error(err, ENOMEM, "cgroup path");
    if (strchr(prefix, '/') || strchr(name, '/'))
        return ac_error(err, 0, "linux.cgroupsPath `%s`: prefix and name must not contain `/`",
                        spec_path);
    cleanup_free char *parent = NULL;
    if (expand_slice(*slice ? slice : "system.slice", spec_path, &parent, err) < 0)
        return -1;
    size_t nlen = strlen(name);
    cleanup_free char *unit = NULL;
    if (nlen > 6 && strcmp(name + nlen - 6, ".slice") == 0)
        unit = xstrdup(name); /* a slice below the parent, as systemd names it */
    else if (*prefix)
        unit = xasprintf("%s-%s.scope", prefix, name);
    else
        unit = xasprintf("%s.scope", name);
    cleanup_free char *full = xasprintf("%s/%s", parent, unit);
    return normalize_cgroup_path(full, "linux.cgroupsPath", out, err);
}

int cgroup_resolve_path(const char *cgroups_path, const char *id, bool systemd_cgroup, char **out,
                        ac_error_t *err)
{
    bool absent = cgroups_path == NULL || *cgroups_path == '\0';
    if (systemd_cgroup) {
        if (absent) {
            cleanup_free char *def = xasprintf("system.slice:agentcage:%s", id);
            return systemd_path(def, out, err);
        }
        return systemd_path(cgroups_path, out, err);
    }
    if (absent) {
        cleanup_free char *def = xasprintf(CG_DEFAULT_PARENT "/%s", id);
        return normalize_cgroup_path(def, "cgroup path", out, err);
    }
    if (cgroups_path[0] == '/')
        return normalize_cgroup_path(cgroups_path, "linux.cgroupsPath", out, err);
    cleanup_free char *own = NULL;
    if (own_cgroup(&own, err) < 0)
        return -1;
    cleanup_free char *full = xasprintf("%s/%s", own, cgroups_path);
    return normalize_cgroup_path(full, "linux.cgroupsPath", out, err);
}

/* ---- resources the host can enforce ---------------------------------- */

static int need(const struct cg_layout *l, enum cg_controller c, const char *resource,
                ac_error_t *err)
{
    if (cg_controller_where(l, c) != CG_NOWHERE)
        return 0;
    return ac_error(err, 0, "cgroup: %s requested but the host has no %s cgroup controller",
                    resource, cg_v1_name(c));
}

static int check_enforceable(const struct cg_layout *l, const struct oci_resources *r,
                             ac_error_t *err)
{
    if (r == NULL)
        return 0;
    if (r->has_memory) {
        const struct oci_memory *m = &r->memory;
        if ((m->has_limit || m->has_reservation || m->has_swap || m->has_swappiness ||
             m->has_disable_oom_killer) &&
            need(l, CG_MEMORY, "linux.resources.memory", err) < 0)
            return -1;
    }
    if (r->has_cpu) {
        const struct oci_cpu *c = &r->cpu;
        if ((c->has_shares || c->has_quota || c->has_period || c->has_burst ||
             c->has_realtime_runtime || c->has_realtime_period || c->has_idle) &&
            need(l, CG_CPU, "linux.resources.cpu", err) < 0)
            return -1;
        if ((c->has_realtime_runtime || c->has_realtime_period) &&
            cg_controller_where(l, CG_CPU) == CG_ON_V2)
            return ac_error(err, 0,
                            "cgroup: linux.resources.cpu.realtimeRuntime/realtimePeriod are not "
                            "supported on cgroup v2");
        if (((c->cpus && *c->cpus) || (c->mems && *c->mems)) &&
            need(l, CG_CPUSET, "linux.resources.cpu.cpus/mems", err) < 0)
            return -1;
    }
    if (r->has_pids && r->has_pids_limit && need(l, CG_PIDS, "linux.resources.pids", err) < 0)
        return -1;
    if (r->has_blkio) {
        const struct oci_blkio *b = &r->blkio;
        if ((b->has_weight || b->has_leaf_weight || b->n_weight_device ||
             b->n_throttle_read_bps_device || b->n_throttle_write_bps_device ||
             b->n_throttle_read_iops_device || b->n_throttle_write_iops_device) &&
            need(l, CG_BLKIO, "linux.resources.blockIO", err) < 0)
            return -1;
    }
    if (r->n_hugepage_limits && need(l, CG_HUGETLB, "linux.resources.hugepageLimits", err) < 0)
        return -1;
    if (r->n_devices && need(l, CG_DEVICES, "linux.resources.devices", err) < 0)
        return -1;
    if (r->has_network && r->has_net_class_id &&
        cg_controller_where(l, CG_NET_CLS) != CG_ON_V1)
        return ac_error(err, 0,
                        "cgroup: linux.resources.network.classID requested but the host has no "
                        "net_cls v1 cgroup controller");
    if (r->n_net_priorities && cg_controller_where(l, CG_NET_PRIO) != CG_ON_V1)
        return ac_error(err, 0,
                        "cgroup: linux.resources.network.priorities requested but the host has no "
                        "net_prio v1 cgroup controller");
    if (r->n_unified && l->v2_mount == NULL)
        return ac_error(err, 0,
                        "cgroup: invalid configuration: linux.resources.unified requires cgroup v2, but this host only "
                        "has cgroup v1");
    /* A hybrid host: a unified key of a controller that v1 drives names a
     * file the container's cgroup2 directory can never have. */
    for (size_t i = 0; i < r->n_unified; i++) {
        size_t len = strcspn(r->unified[i].key, ".");
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++) {
            const char *n = cg_v2_name(c);
            if (n && strlen(n) == len && strncmp(n, r->unified[i].key, len) == 0 &&
                cg_controller_where(l, c) == CG_ON_V1)
                return ac_error(err, 0,
                                "cgroup: invalid configuration: linux.resources.unified `%s`: the %s controller "
                                "is on cgroup v1 on this host",
                                r->unified[i].key, n);
        }
    }
    return 0;
}

/* ---- lifecycle ----------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* rmdir, retrying EBUSY while tasks finish exiting. */
static int rmdir_retry(const char *dir, ac_error_t *err)
{
    long deadline = now_ms() + 2000;
    for (;;) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY || now_ms() > deadline)
            return ac_error(err, errno, "cgroup: rmdir `%s`", dir);
        sleep_ms(10);
    }
}

/* Remove dir and every cgroup below it, deepest first. */
static int remove_tree(const char *dir, ac_error_t *err)
{
    /* the common case, an empty cgroup without children: one rmdir (the
     * kernel answers EBUSY for one with children or tasks) */
    if (rmdir(dir) == 0 || errno == ENOENT)
        return 0;
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return ac_error(err, errno, "cgroup: opendir `%s`", dir);
    }
    int ret = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_free char *child = xasprintf("%s/%s", dir, de->d_name);
        if (remove_tree(child, err) < 0)
            ret = -1;
    }
    closedir(d);
    if (ret < 0)
        return -1;
    return rmdir_retry(dir, err);
}

/* Per-hierarchy record of what cgroup_create made, for rollback and for the
 * levels whose settings are ours to write. */
struct created {
    const char *root;
    size_t first_new; /* index of the first path level we created; = depth when none */
};

static size_t path_depth(const char *path)
{
    size_t n = 0;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            n++;
    return n;
}

/* The hierarchy dir of the first `level` components of path. */
static char *level_dir(const char *root, const char *path, size_t level)
{
    const char *p = path;
    for (size_t i = 0; i <= level && p; i++) {
        p = strchr(p + 1, '/');
    }
    size_t len = p ? (size_t)(p - path) : strlen(path);
    return xasprintf("%s%.*s", root, (int)len, path);
}

static void rollback(struct created *made, size_t n, const char *path)
{
    size_t depth = path_depth(path);
    for (size_t i = 0; i < n; i++) {
        for (size_t lvl = depth; lvl-- > made[i].first_new;) {
            cleanup_free char *dir = level_dir(made[i].root, path, lvl);
            if (rmdir(dir) < 0 && errno != ENOENT)
                ac_warn("cgroup: cannot remove `%s`: %s", dir, strerror(errno));
        }
    }
}

static int make_levels(struct created *made, const char *path, ac_error_t *err)
{
    size_t depth = path_depth(path);
    made->first_new = depth;
    /* the common case, the parents there already: the leaf alone (EEXIST:
     * all there, none ours); the levels from the top only on ENOENT */
    cleanup_free char *leaf = depth ? level_dir(made->root, path, depth - 1) : NULL;
    if (leaf && mkdir(leaf, 0755) == 0) {
        made->first_new = depth - 1;
        return 0;
    }
    if (leaf && errno == EEXIST)
        return 0;
    /* a level found there can be gone by the next mkdir (the last container
     * below the default parent deleted meanwhile removes it): from the top
     * again, a few times */
    for (int attempt = 0;; attempt++) {
        size_t lvl = 0;
        for (; lvl < depth; lvl++) {
            cleanup_free char *dir = level_dir(made->root, path, lvl);
            if (mkdir(dir, 0755) == 0) {
                if (made->first_new == depth)
                    made->first_new = lvl;
            } else if (errno != EEXIST) {
                if (errno == ENOENT && lvl > 0 && attempt < 3)
                    break;
                return ac_error(err, errno, "cgroup: mkdir `%s`", dir);
            }
        }
        if (lvl == depth)
            return 0;
    }
}

static int apply_resources(const struct cg_layout *l, const char *path,
                           const struct oci_resources *r, bool creating, ac_error_t *err)
{
    static const struct oci_resources none;
    if (r == NULL)
        r = &none;
    if (cg_v1_apply(l, path, r, creating, err) < 0)
        return -1;
    return cg_v2_apply(l, path, r, creating, err);
}

int cgroup_create(const char *path, const struct oci_resources *resources, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    if (check_enforceable(l, resources, err) < 0)
        return -1;
    const char *roots[CG_MAX_HIERARCHIES + 1];
    size_t n_roots = hierarchy_roots(l, roots);
    struct created made[CG_MAX_HIERARCHIES + 1];
    size_t n_made = 0, depth = path_depth(path);

    for (size_t i = 0; i < n_roots; i++) {
        made[n_made].root = roots[i];
        made[n_made].first_new = depth;
        n_made++;
        if (make_levels(&made[n_made - 1], path, err) < 0)
            goto fail;
        bool is_cpuset = l->v1_index[CG_CPUSET] >= 0 &&
                         roots[i] == l->v1[l->v1_index[CG_CPUSET]].mountpoint;
        /* Every level, not just ours: a parent made by someone else (a pod's
         * cgroup) with empty cpus/mems holds no task and none could join
         * below it; one already set is left as it is. */
        char *cpuset_values[2] = {NULL, NULL}; /* each level's, for the one below */
        int cpuset_ret = 0;
        for (size_t lvl = 0; is_cpuset && cpuset_ret == 0 && lvl < depth; lvl++) {
            cleanup_free char *dir = level_dir(roots[i], path, lvl);
            cpuset_ret = cg_v1_cpuset_init(dir, lvl >= made[n_made - 1].first_new, cpuset_values, err);
        }
        free(cpuset_values[0]);
        free(cpuset_values[1]);
        if (cpuset_ret < 0)
            goto fail;
        if (roots[i] == l->v2_mount &&
            cg_v2_enable_controllers(l, path, depth - made[n_made - 1].first_new, resources,
                                     err) < 0)
            goto fail;
    }
    if (apply_resources(l, path, resources, true, err) < 0)
        goto fail;
    for (size_t i = 0; i < n_made; i++)
        if (made[i].first_new < depth)
            return 1;
    return 0;
fail:
    rollback(made, n_made, path);
    return -1;
}

int cgroup_check_reuse(const char *path, ac_error_t *err)
{
    /* A frozen cgroup would freeze the init in the middle of its setup
     * (and this runtime with it): refused, and left as it is. */
    if (cgroup_is_frozen(path))
        return ac_error(err, 0, "cgroup `%s`: container's cgroup unexpectedly frozen (thaw it first)", path);
    cleanup_error ac_error_t ignore = NULL;
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    if (cgroup_pids(path, &pids, &n, &ignore) == 0 && n > 0)
        ac_warn("cgroup `%s`: container's cgroup is not empty: %zu process(es) already run there (pid %d ...); "
                "its limits, stats, pause and kill --all cover them too",
                path, n, (int)pids[0]);
    return 0;
}

int cgroup_enter(const char *path, pid_t pid, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    const char *roots[CG_MAX_HIERARCHIES + 1];
    size_t n_roots = hierarchy_roots(l, roots);
    char value[32];
    snprintf(value, sizeof(value), "%d", (int)pid);
    for (size_t i = 0; i < n_roots; i++) {
        cleanup_free char *dir = xasprintf("%s%s", roots[i], path);
        if (cg_write(dir, "cgroup.procs", value, err) < 0)
            return ac_error_wrap(err, "cgroup: enter `%s`", dir);
    }
    return 0;
}

int cgroup_enter_v2(const char *path, pid_t pid, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    if (l->v2_mount == NULL)
        return 0;
    char value[32];
    snprintf(value, sizeof(value), "%d", (int)pid);
    cleanup_free char *dir = xasprintf("%s%s", l->v2_mount, path);
    if (cg_write(dir, "cgroup.procs", value, err) < 0)
        return ac_error_wrap(err, "cgroup: enter `%s`", dir);
    return 0;
}

void cgroup_join_close(struct cgroup_join *j)
{
    for (size_t i = 0; i < j->n; i++)
        if (j->task_fds[i] >= 0)
            close(j->task_fds[i]);
    j->n = 0;
    if (j->v2_fd >= 0)
        close(j->v2_fd);
    j->v2_fd = -1;
}

int cgroup_join_open(const char *path, struct cgroup_join *j, ac_error_t *err)
{
    j->n = 0;
    j->v2_fd = -1;
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    for (size_t i = 0; i < l->n_v1 && i < CGROUP_JOIN_MAX; i++) {
        cleanup_free char *tasks = xasprintf("%s%s/tasks", l->v1[i].mountpoint, path);
        j->task_fds[j->n] = open(tasks, O_WRONLY | O_CLOEXEC);
        if (j->task_fds[j->n] < 0) {
            ac_error(err, errno, "cgroup: open `%s`", tasks);
            cgroup_join_close(j);
            return -1;
        }
        j->n++;
    }
    if (l->v2_mount) {
        cleanup_free char *dir = cg_v2_dir(l, path);
        j->v2_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (j->v2_fd < 0) {
            ac_error(err, errno, "cgroup: open `%s`", dir);
            cgroup_join_close(j);
            return -1;
        }
    }
    return 0;
}

int cgroup_join_self(struct cgroup_join *j, ac_error_t *err)
{
    int ret = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (ret == 0 && write(j->task_fds[i], "0", 1) != 1)
            ret = ac_error(err, errno, "cgroup: join a v1 hierarchy (`tasks`)");
        close(j->task_fds[i]);
    }
    j->n = 0;
    cgroup_join_close(j); /* the cgroup2 directory: clone3 used it already */
    return ret;
}

/* A sub-cgroup of exec --cgroup, below the container's cgroup: "" for the
 * cgroup itself ("/" or "."), never above it. */
static int sub_cgroup_path(const char *arg, const char *sub, char **out, ac_error_t *err)
{
    cleanup_free char *full = xasprintf("/x/%s", sub);
    cleanup_error ac_error_t ignore = NULL;
    cleanup_free char *clean = NULL;
    if (normalize_cgroup_path(full, "", &clean, &ignore) < 0)
        return ac_error(err, 0, "exec --cgroup `%s`: %s is not a sub cgroup path", arg, sub);
    *out = xstrdup(clean + 2); /* drop "/x": "" or "/a/b" */
    return 0;
}

static int controller_by_name(const char *name, size_t len)
{
    for (int c = 0; c < CG_CONTROLLER_COUNT; c++) {
        const char *n = cg_v1_name(c);
        if (n && strlen(n) == len && strncmp(n, name, len) == 0)
            return c;
    }
    return -1;
}

int cgroup_enter_sub(const char *path, pid_t pid, const char *const *subs, size_t n_subs, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    const char *roots[CG_MAX_HIERARCHIES + 1];
    size_t n_roots = hierarchy_roots(l, roots);
    char *sub_of[CG_MAX_HIERARCHIES + 1] = {0};
    char *every = NULL; /* a plain SUB: each hierarchy without its own */
    int ret = -1;
    for (size_t i = 0; i < n_subs; i++) {
        const char *colon = strchr(subs[i], ':');
        char *rel = NULL;
        if (sub_cgroup_path(subs[i], colon ? colon + 1 : subs[i], &rel, err) < 0)
            goto out;
        if (colon == NULL) {
            free(every);
            every = rel;
            continue;
        }
        if (l->mode == CGROUP_MODE_V2) {
            free(rel);
            ac_error(err, 0, "exec --cgroup `%s`: CONTROLLER:PATH needs cgroup v1; give only PATH", subs[i]);
            goto out;
        }
        for (const char *c = subs[i]; c < colon;) {
            size_t len = strcspn(c, ",:");
            int ctrl = controller_by_name(c, len);
            int idx = ctrl >= 0 ? l->v1_index[ctrl] : -1;
            if (idx < 0) {
                free(rel);
                ac_error(err, 0, "exec --cgroup `%s`: unknown controller `%.*s` (none mounted on this host)",
                         subs[i], (int)len, c);
                goto out;
            }
            free(sub_of[idx]);
            sub_of[idx] = xstrdup(rel);
            c += len + (c[len] == ',');
        }
        free(rel);
    }
    char value[32];
    snprintf(value, sizeof(value), "%d", (int)pid);
    for (size_t i = 0; i < n_roots; i++) {
        const char *rel = sub_of[i] ? sub_of[i] : every ? every : "";
        cleanup_free char *dir = xasprintf("%s%s%s", roots[i], path, rel);
        cleanup_free char *procs = xasprintf("%s/cgroup.procs", dir);
        cleanup_close int fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write_all(fd, value, strlen(value)) < 0) {
            /* a sub cgroup that is not there: the cause in words, as
             * inside a sentence */
            if (errno == ENOENT)
                ac_error(err, 0, "cgroup: adding pid %s to %s: no such file or directory (no sub cgroup `%s`)",
                         value, procs, rel);
            else
                ac_error(err, errno, "cgroup: adding pid %s to %s", value, procs);
            goto out;
        }
    }
    ret = 0;
out:
    for (size_t i = 0; i < n_roots; i++)
        free(sub_of[i]);
    free(every);
    return ret;
}

int cgroup_update(const char *path, const struct oci_resources *resources, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    if (resources == NULL)
        return 0;
    if (check_enforceable(l, resources, err) < 0)
        return -1;
    return apply_resources(l, path, resources, false, err);
}

int cgroup_freeze(const char *path, bool frozen, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    switch (cg_controller_where(l, CG_FREEZER)) {
    case CG_ON_V1: {
        cleanup_free char *dir = cg_v1_dir(l, CG_FREEZER, path);
        return cg_v1_freeze(dir, frozen, err);
    }
    case CG_ON_V2: {
        cleanup_free char *dir = cg_v2_dir(l, path);
        return cg_v2_freeze(dir, frozen, err);
    }
    default:
        return ac_error(err, 0, "cgroup: cannot %s: the host has no freezer cgroup controller",
                        frozen ? "pause" : "resume");
    }
}

bool cgroup_is_frozen(const char *path)
{
    cleanup_error ac_error_t err = NULL;
    const struct cg_layout *l = cg_layout_get(&err);
    if (l == NULL)
        return false;
    switch (cg_controller_where(l, CG_FREEZER)) {
    case CG_ON_V1: {
        cleanup_free char *dir = cg_v1_dir(l, CG_FREEZER, path);
        return cg_v1_is_frozen(dir);
    }
    case CG_ON_V2: {
        cleanup_free char *dir = cg_v2_dir(l, path);
        return cg_v2_is_frozen(dir);
    }
    default:
        return false;
    }
}

struct pid_list {
    pid_t *pids;
    size_t n, cap;
};

static int collect_pids(const char *dir, struct pid_list *list, ac_error_t *err)
{
    cleanup_free char *procs = NULL;
    if (cg_read(dir, "cgroup.procs", &procs) < 0) {
        if (errno == ENOENT)
            return 0; /* removed while we walked */
        return ac_error(err, errno, "cgroup: read `%s/cgroup.procs`", dir);
    }
    for (char *p = procs; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (list->n == list->cap) {
            list->cap = list->cap ? list->cap * 2 : 16;
            list->pids = xrealloc(list->pids, list->cap * sizeof(pid_t));
        }
        list->pids[list->n++] = (pid_t)v;
        p = end;
        while (*p == '\n')
            p++;
    }
    DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : ac_error(err, errno, "cgroup: opendir `%s`", dir);
    struct dirent *de;
    int ret = 0;
    while (ret == 0 && (de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        cleanup_free char *child = xasprintf("%s/%s", dir, de->d_name);
        ret = collect_pids(child, list, err);
    }
    closedir(d);
    return ret;
}

/* The hierarchy dir that lists the container's processes. */
static char *procs_dir(const struct cg_layout *l, const char *path)
{
    static const enum cg_controller order[] = {CG_PIDS, CG_MEMORY, CG_FREEZER, CG_DEVICES,
                                               CG_CPU, CG_CPUSET, CG_NAME_SYSTEMD};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (l->v1_index[order[i]] >= 0)
            return cg_v1_dir(l, order[i], path);
    if (l->n_v1 > 0)
        return xasprintf("%s%s", l->v1[0].mountpoint, path);
    return cg_v2_dir(l, path);
}

int cgroup_pids(const char *path, pid_t **out, size_t *n, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    cleanup_free char *dir = procs_dir(l, path);
    struct pid_list list = {0};
    if (collect_pids(dir, &list, err) < 0) {
        free(list.pids);
        return -1;
    }
    *out = list.pids ? list.pids : xcalloc(1, sizeof(pid_t));
    *n = list.n;
    return 0;
}

int cgroup_kill_all(const char *path, int sig, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    if (sig == SIGKILL && l->mode == CGROUP_MODE_V2) {
        cleanup_free char *dir = cg_v2_dir(l, path);
        if (cg_file_exists(dir, "cgroup.kill"))
            return cg_write(dir, "cgroup.kill", "1", err);
    }
    /* Freeze first so no process forks a child we would miss. A cgroup
     * that was already paused stays paused, except for SIGKILL, which only
     * lands once the tasks run again. */
    bool was_frozen = cgroup_is_frozen(path);
    bool froze = false;
    if (!was_frozen && cg_controller_where(l, CG_FREEZER) != CG_NOWHERE) {
        cleanup_error ac_error_t ferr = NULL;
        if (cgroup_freeze(path, true, &ferr) == 0) {
            froze = true;
        } else {
            cleanup_free char *msg = ac_error_string(ferr);
            ac_debug("cgroup: kill without freezing: %s", msg);
        }
    }
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    int ret = cgroup_pids(path, &pids, &n, err);
    for (size_t i = 0; ret == 0 && i < n; i++) {
        if (kill(pids[i], sig) < 0 && errno != ESRCH)
            ret = ac_error(err, errno, "cgroup: kill %d", (int)pids[i]);
    }
    if (froze || (was_frozen && sig == SIGKILL)) {
        if (cgroup_freeze(path, false, err) < 0)
            ret = -1;
    }
    return ret;
}

int cgroup_destroy(const char *path, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    const char *roots[CG_MAX_HIERARCHIES + 1];
    size_t n_roots = hierarchy_roots(l, roots);
    int ret = 0;
    for (size_t i = 0; i < n_roots; i++) {
        cleanup_free char *dir = xasprintf("%s%s", roots[i], path);
        /* keep going: the other hierarchies should still be cleaned up */
        if (remove_tree(dir, err) < 0)
            ret = -1;
    }
    /* The runtime's own parent goes with the last container below it. A
     * container under it is in every hierarchy, so the first one still
     * busy (EBUSY, ENOTEMPTY) says the others are too. */
    size_t plen = strlen(CG_DEFAULT_PARENT);
    if (ret == 0 && strncmp(path, CG_DEFAULT_PARENT "/", plen + 1) == 0 && !strchr(path + plen + 1, '/'))
        for (size_t i = 0; i < n_roots; i++) {
            cleanup_free char *parent = xasprintf("%s" CG_DEFAULT_PARENT, roots[i]);
            if (rmdir(parent) < 0 && errno != ENOENT)
                break;
        }
    return ret;
}

/* ---- stats ------------------------------------------------------------- */

static int stats_of(const char *path, struct cgroup_stats *st, bool memory_peak_only, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    memset(st, 0, sizeof(*st));
    cleanup_free char *dir = procs_dir(l, path);
    struct stat sb;
    if (stat(dir, &sb) < 0)
        return ac_error(err, errno, "cgroup: `%s`", dir);
    if (memory_peak_only) {
        cg_v1_memory_peak(l, path, st);
        cg_v2_memory_peak(l, path, st);
    } else {
        cg_v1_stats(l, path, st);
        cg_v2_stats(l, path, st);
    }
    return 0;
}

int cgroup_stats(const char *path, struct cgroup_stats *st, ac_error_t *err)
{
    return stats_of(path, st, false, err);
}

int cgroup_memory_peak(const char *path, struct cgroup_stats *st, ac_error_t *err)
{
    return stats_of(path, st, true, err);
}

char *cgroup_stats_json(const struct cgroup_stats *st)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    fprintf(f,
            "{\"cpu\":{\"usage\":{\"total\":%llu,\"percpu\":[],\"kernel\":%llu,\"user\":%llu},"
            "\"throttling\":{\"periods\":%llu,\"throttledPeriods\":%llu,\"throttledTime\":%llu}},",
            (unsigned long long)st->cpu_usage_total_ns, (unsigned long long)st->cpu_usage_kernel_ns,
            (unsigned long long)st->cpu_usage_user_ns, (unsigned long long)st->cpu_throttling_periods,
            (unsigned long long)st->cpu_throttled_periods,
            (unsigned long long)st->cpu_throttled_time_ns);
    fprintf(f,
            "\"memory\":{\"usage\":{\"limit\":%llu,\"usage\":%llu,\"max\":%llu,\"failcnt\":%llu},"
            "\"swap\":{\"limit\":%llu,\"usage\":%llu},\"cache\":%llu,"
            "\"raw\":{\"cache\":%llu,\"rss\":%llu}},",
            (unsigned long long)st->memory_limit, (unsigned long long)st->memory_usage,
            (unsigned long long)st->memory_max_usage, (unsigned long long)st->memory_failcnt,
            (unsigned long long)st->swap_limit, (unsigned long long)st->swap_usage,
            (unsigned long long)st->memory_cache, (unsigned long long)st->memory_cache,
            (unsigned long long)st->memory_rss);
    fprintf(f, "\"pids\":{\"current\":%llu,\"limit\":%llu},",
            (unsigned long long)st->pids_current, (unsigned long long)st->pids_limit);
    fprintf(f,
            "\"blkio\":{\"ioServiceBytesRecursive\":[{\"major\":0,\"minor\":0,\"op\":\"Read\","
            "\"value\":%llu},{\"major\":0,\"minor\":0,\"op\":\"Write\",\"value\":%llu}]},"
            "\"hugetlb\":{}}",
            (unsigned long long)st->io_read_bytes, (unsigned long long)st->io_write_bytes);
    fclose(f);
    return buf;
}

