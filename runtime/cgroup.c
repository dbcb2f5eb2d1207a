/* cgroup facade: detects the host's cgroup layout (v1, hybrid, v2) from
 * /proc/self/mountinfo, resolves a container's cgroup path, and drives each
 * controller on the hierarchy that has it (cgroup_v1.c, cgroup_v2.c). */
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

#include "cgroup.h"
#include "cgroup_internal.h"
#include "utils.h"

static const char *const v1_names[CG_CONTROLLER_COUNT] = {
    [CG_CPU] = "cpu",         [CG_CPUACCT] = "cpuacct",     [CG_CPUSET] = "cpuset",
    [CG_MEMORY] = "memory",   [CG_DEVICES] = "devices",     [CG_FREEZER] = "freezer",
    [CG_BLKIO] = "blkio",     [CG_PIDS] = "pids",           [CG_HUGETLB] = "hugetlb",
    [CG_NET_CLS] = "net_cls", [CG_NET_PRIO] = "net_prio",   [CG_PERF_EVENT] = "perf_event",
    [CG_RDMA] = "rdma",       [CG_MISC] = "misc",           [CG_NAME_SYSTEMD] = "name=systemd",
};

/* cgroup2 has cpu accounting in "cpu", blkio as "io"; devices and freezer
 * are core features there. */
static const char *const v2_names[CG_CONTROLLER_COUNT] = {
    [CG_CPU] = "cpu",       [CG_CPUACCT] = "cpu",   [CG_CPUSET] = "cpuset",
    [CG_MEMORY] = "memory", [CG_BLKIO] = "io",      [CG_PIDS] = "pids",
    [CG_HUGETLB] = "hugetlb", [CG_RDMA] = "rdma",   [CG_MISC] = "misc",
    [CG_PERF_EVENT] = "perf_event",
};

const char *cg_v1_name(enum cg_controller c) { return v1_names[c]; }
const char *cg_v2_name(enum cg_controller c) { return v2_names[c]; }

/* ---- file helpers ------------------------------------------------------ */

int cg_write(const char *dir, const char *file, const char *value, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, file);
    cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "cgroup: write %s=%s", file, value);
    if (write_all(fd, value, strlen(value)) < 0)
        return ac_error(err, errno, "cgroup: write %s=%s", file, value);
    ac_debug("cgroup: wrote %s/%s=%s", dir, file, value);
    return 0;
}

int cg_read(const char *dir, const char *file, char **out)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, file);
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    cleanup_error ac_error_t err = NULL;
    char *buf = NULL;
    size_t len = 0;
    if (read_all_fd(fd, &buf, &len, &err) < 0) {
        errno = err && err->errno_value ? err->errno_value : EIO;
        return -1;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    *out = buf;
    return 0;
}

bool cg_file_exists(const char *dir, const char *file)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

int cg_read_u64(const char *dir, const char *file, uint64_t *out)
{
    cleanup_free char *text = NULL;
    if (cg_read(dir, file, &text) < 0)
        return -1;
    if (strcmp(text, "max") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    return parse_uint64(text, out);
}

int cg_keyed_u64(const char *text, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            const char *v = line + klen + 1;
            if (strncmp(v, "max", 3) == 0) {
                *out = UINT64_MAX;
                return 0;
            }
            *out = strtoull(v, NULL, 10);
            return 0;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

/* ---- layout ------------------------------------------------------------ */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *mountinfo_unescape(const char *s)
{
    char *r = xstrdup(s), *w = r;
    for (const char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *w++ = *p;
        }
    }
    *w = '\0';
    return r;
}

static uint32_t v1_controllers_of(const char *super_options)
{
    uint32_t mask = 0;
    cleanup_free char *opts = xstrdup(super_options);
    char *save = NULL;
    for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
            if (strcmp(o, v1_names[c]) == 0)
                mask |= CG_BIT(c);
    }
    return mask;
}

static uint32_t v2_controllers_of(const char *list)
{
    uint32_t mask = 0;
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *w = strtok_r(copy, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
            if (v2_names[c] && strcmp(w, v2_names[c]) == 0)
                mask |= CG_BIT(c);
    }
    return mask;
}

void cg_layout_release(struct cg_layout *l)
{
    for (size_t i = 0; i < l->n_v1; i++) {
        free(l->v1[i].mountpoint);
        free(l->v1[i].root);
        free(l->v1[i].options);
    }
    free(l->v2_mount);
    memset(l, 0, sizeof(*l));
}

static bool preferred_v2_mount(const char *mp)
{
    return strcmp(mp, "/sys/fs/cgroup") == 0 || strcmp(mp, "/sys/fs/cgroup/unified") == 0;
}

int cg_layout_parse(const char *mountinfo, struct cg_layout *l, ac_error_t *err)
{
    memset(l, 0, sizeof(*l));
    for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
        l->v1_index[c] = -1;

    cleanup_free char *text = xstrdup(mountinfo);
    char *save_line = NULL;
    for (char *line = strtok_r(text, "\n", &save_line); line;
         line = strtok_r(NULL, "\n", &save_line)) {
        /* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
        char *fields[8] = {0};
        size_t nf = 0;
        char *sep = strstr(line, " - ");
        if (sep == NULL)
            continue;
        *sep = '\0';
        char *save = NULL;
        for (char *f = strtok_r(line, " ", &save); f && nf < 5; f = strtok_r(NULL, " ", &save))
            fields[nf++] = f;
        if (nf < 5)
            continue;
        char *tail[3] = {0};
        size_t nt = 0;
        save = NULL;
        for (char *f = strtok_r(sep + 3, " ", &save); f && nt < 3; f = strtok_r(NULL, " ", &save))
            tail[nt++] = f;
        if (nt < 3)
            continue;
        const char *fstype = tail[0], *super = tail[2];

        if (strcmp(fstype, "cgroup2") == 0) {
            /* Keep the first cgroup2 mount, unless a later one is at a
             * standard place (a bind mount elsewhere may come first). */
            if (l->v2_mount == NULL || (!preferred_v2_mount(l->v2_mount) &&
                                        preferred_v2_mount(fields[4]))) {
                free(l->v2_mount);
                l->v2_mount = mountinfo_unescape(fields[4]);
            }
            continue;
        }
        if (strcmp(fstype, "cgroup") != 0)
            continue;
        uint32_t mask = v1_controllers_of(super);
        if (mask == 0)
            continue; /* a named hierarchy we do not know: not ours to populate */
        /* The same hierarchy can be mounted more than once (bind mounts):
         * the first mount of a controller wins. */
        bool seen = false;
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
            if ((mask & CG_BIT(c)) && l->v1_index[c] >= 0)
                seen = true;
        if (seen)
            continue;
        if (l->n_v1 >= CG_MAX_HIERARCHIES)
            return ac_error(err, 0, "cgroup: too many cgroup v1 hierarchies");
        struct cg_hierarchy *h = &l->v1[l->n_v1];
        h->mountpoint = mountinfo_unescape(fields[4]);
        h->root = mountinfo_unescape(fields[3]);
        h->options = xstrdup(super);
        h->controllers = mask;
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
            if (mask & CG_BIT(c))
                l->v1_index[c] = (int)l->n_v1;
        l->n_v1++;
    }

    if (l->v2_mount) {
        cleanup_free char *list = NULL;
        if (cg_read(l->v2_mount, "cgroup.controllers", &list) == 0)
            l->v2_controllers = v2_controllers_of(list);
    }

    bool v1_has_controllers = false;
    for (size_t i = 0; i < l->n_v1; i++)
        if (l->v1[i].controllers & ~CG_BIT(CG_NAME_SYSTEMD))
            v1_has_controllers = true;
    if (l->v2_mount && !v1_has_controllers)
        l->mode = CGROUP_MODE_V2;
    else if (l->v2_mount)
        l->mode = CGROUP_MODE_HYBRID;
    else
        l->mode = CGROUP_MODE_V1;
    return 0;
}

static struct cg_layout host_layout;
static bool host_layout_ready;

const struct cg_layout *cg_layout_get(ac_error_t *err)
{
    if (host_layout_ready)
        return &host_layout;
    cleanup_free char *text = NULL;
    if (read_all_file("/proc/self/mountinfo", &text, NULL, err) < 0)
        return NULL;
    if (cg_layout_parse(text, &host_layout, err) < 0)
        return NULL;
    if (host_layout.n_v1 == 0 && host_layout.v2_mount == NULL) {
        ac_error(err, 0, "cgroup: no cgroup filesystem is mounted");
        return NULL;
    }
    host_layout_ready = true;
    ac_debug("cgroup: host mode %s, %zu v1 hierarchies, cgroup2 at %s",
             host_layout.mode == CGROUP_MODE_V2       ? "v2"
             : host_layout.mode == CGROUP_MODE_HYBRID ? "hybrid"
                                                      : "v1",
             host_layout.n_v1, host_layout.v2_mount ? host_layout.v2_mount : "(none)");
    return &host_layout;
}

enum cgroup_mode cgroup_host_mode(void)
{
    cleanup_error ac_error_t err = NULL;
    const struct cg_layout *l = cg_layout_get(&err);
    return l ? l->mode : CGROUP_MODE_V1;
}

enum cg_where cg_controller_where(const struct cg_layout *l, enum cg_controller c)
{
    if (l->v1_index[c] >= 0)
        return CG_ON_V1;
    if (l->v2_mount == NULL)
        return CG_NOWHERE;
    if (c == CG_DEVICES || c == CG_FREEZER)
        return CG_ON_V2;
    if (v2_names[c] && (l->v2_controllers & CG_BIT(c)))
        return CG_ON_V2;
    return CG_NOWHERE;
}

char *cg_v1_dir(const struct cg_layout *l, enum cg_controller c, const char *path)
{
    if (l->v1_index[c] < 0)
        return NULL;
    return xasprintf("%s%s", l->v1[l->v1_index[c]].mountpoint, path);
}

char *cg_v2_dir(const struct cg_layout *l, const char *path)
{
    if (l->v2_mount == NULL)
        return NULL;
    return xasprintf("%s%s", l->v2_mount, path);
}

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
        cleanup_free char *def = xasprintf("/agentcage/%s", id);
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
                    resource, v1_names[c]);
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
                        "cgroup: linux.resources.unified requires cgroup v2, but this host only "
                        "has cgroup v1");
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
    for (size_t lvl = 0; lvl < depth; lvl++) {
        cleanup_free char *dir = level_dir(made->root, path, lvl);
        if (mkdir(dir, 0755) == 0) {
            if (made->first_new == depth)
                made->first_new = lvl;
        } else if (errno != EEXIST) {
            return ac_error(err, errno, "cgroup: mkdir `%s`", dir);
        }
    }
    return 0;
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
        for (size_t lvl = made[n_made - 1].first_new; is_cpuset && lvl < depth; lvl++) {
            cleanup_free char *dir = level_dir(roots[i], path, lvl);
            if (cg_v1_cpuset_init(dir, err) < 0)
                goto fail;
        }
        if (roots[i] == l->v2_mount &&
            cg_v2_enable_controllers(l, path, depth - made[n_made - 1].first_new, resources,
                                     err) < 0)
            goto fail;
    }
    if (apply_resources(l, path, resources, true, err) < 0)
        goto fail;
    return 0;
fail:
    rollback(made, n_made, path);
    return -1;
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

int cgroup_v2_dirfd(const char *path)
{
    cleanup_error ac_error_t err = NULL;
    const struct cg_layout *l = cg_layout_get(&err);
    if (l == NULL || l->mode != CGROUP_MODE_V2)
        return -1;
    cleanup_free char *dir = cg_v2_dir(l, path);
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
    return ret;
}

/* ---- stats ------------------------------------------------------------- */

int cgroup_stats(const char *path, struct cgroup_stats *st, ac_error_t *err)
{
    const struct cg_layout *l = cg_layout_get(err);
    if (l == NULL)
        return -1;
    memset(st, 0, sizeof(*st));
    cleanup_free char *dir = procs_dir(l, path);
    struct stat sb;
    if (stat(dir, &sb) < 0)
        return ac_error(err, errno, "cgroup: `%s`", dir);
    cg_v1_stats(l, path, st);
    cg_v2_stats(l, path, st);
    return 0;
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
            "\"raw\":{\"cache\":%llu,\"rss\":%llu,\"oom_kill\":%llu}},",
            (unsigned long long)st->memory_limit, (unsigned long long)st->memory_usage,
            (unsigned long long)st->memory_max_usage, (unsigned long long)st->memory_failcnt,
            (unsigned long long)st->swap_limit, (unsigned long long)st->swap_usage,
            (unsigned long long)st->memory_cache, (unsigned long long)st->memory_cache,
            (unsigned long long)st->memory_rss, (unsigned long long)st->oom_kill_count);
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

/* ---- default device rules --------------------------------------------- */

#define DEV_RULE(t, maj, min, acc) {.allow = true, .type = t, .major = maj, .minor = min, .access = acc}
const struct oci_device_rule cg_default_device_rules[] = {
    DEV_RULE('c', -1, -1, "m"),     /* mknod of any char device */
    DEV_RULE('b', -1, -1, "m"),     /* mknod of any block device */
    DEV_RULE('c', 1, 3, "rwm"),     /* /dev/null */
    DEV_RULE('c', 1, 8, "rwm"),     /* /dev/random */
    DEV_RULE('c', 1, 7, "rwm"),     /* /dev/full */
    DEV_RULE('c', 5, 0, "rwm"),     /* /dev/tty */
    DEV_RULE('c', 1, 5, "rwm"),     /* /dev/zero */
    DEV_RULE('c', 1, 9, "rwm"),     /* /dev/urandom */
    DEV_RULE('c', 136, -1, "rwm"),  /* /dev/pts/N */
    DEV_RULE('c', 5, 2, "rwm"),     /* /dev/ptmx */
    DEV_RULE('c', 5, 1, "rwm"),     /* /dev/console */
};
const size_t cg_n_default_device_rules =
    sizeof(cg_default_device_rules) / sizeof(cg_default_device_rules[0]);
