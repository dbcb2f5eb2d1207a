/* What the cgroup facade (cgroup.c) and its backends (cgroup_v1.c,
 * cgroup_v2.c, cgroup_bpf.c) share: the host's hierarchy layout from
 * /proc/self/mountinfo, controller names, where a controller lives, and the
 * small file helpers. It calls nothing above it, so the backends never call
 * back into the facade. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cgroup/cgroup_internal.h"
#include "runtime/util/utils.h"

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

/* The controllers named in a list (v1 mount options split by ",", v2's
 * cgroup.controllers by blanks), as a mask. */
static uint32_t controllers_named(const char *list, const char *seps, const char *const names[CG_CONTROLLER_COUNT])
{
    uint32_t mask = 0;
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *w = strtok_r(copy, seps, &save); w; w = strtok_r(NULL, seps, &save))
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
            if (names[c] && strcmp(w, names[c]) == 0)
                mask |= CG_BIT(c);
    return mask;
}

static uint32_t v1_controllers_of(const char *super_options) { return controllers_named(super_options, ",", v1_names); }
static uint32_t v2_controllers_of(const char *list) { return controllers_named(list, " \n", v2_names); }

void cg_layout_release(struct cg_layout *l)
{
    for (size_t i = 0; i < l->n_v1; i++) {
        free(l->v1[i].mountpoint);
        free(l->v1[i].root);
        free(l->v1[i].options);
    }
    free(l->v2_mount);
    free(l->v2_root);
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
                free(l->v2_root);
                l->v2_mount = mountinfo_unescape(fields[4]);
                l->v2_root = mountinfo_unescape(fields[3]);
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

const char *cgroup_controller_where(const char *name)
{
    cleanup_error ac_error_t err = NULL;
    const struct cg_layout *l = cg_layout_get(&err);
    for (int c = 0; l && c < CG_CONTROLLER_COUNT; c++) {
        if (strcmp(v1_names[c], name) != 0)
            continue;
        enum cg_where w = cg_controller_where(l, c);
        return w == CG_ON_V1 ? "v1" : w == CG_ON_V2 ? "v2" : NULL;
    }
    return NULL;
}

int cgroup_hierarchy_mount(const char *controllers, const char **mountpoint, const char **root)
{
    cleanup_error ac_error_t err = NULL;
    const struct cg_layout *l = cg_layout_get(&err);
    return l ? cg_layout_hierarchy_mount(l, controllers, mountpoint, root) : -1;
}

int cg_layout_hierarchy_mount(const struct cg_layout *l, const char *controllers, const char **mountpoint,
                              const char **root)
{
    if (*controllers == '\0') {
        *mountpoint = l->v2_mount;
        *root = l->v2_root;
        return l->v2_mount ? 1 : 0;
    }
    for (size_t i = 0; i < l->n_v1; i++) {
        if (list_has_all(l->v1[i].options, ',', controllers)) {
            *mountpoint = l->v1[i].mountpoint;
            *root = l->v1[i].root;
            return 1;
        }
    }
    /* not mounted, when the layout would have kept a mount of it: every
     * controller named is one it knows */
    cleanup_free char *copy = xstrdup(controllers);
    char *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (v1_controllers_of(w) == 0)
            return -1;
    return 0;
}

const char *cgroup_v2_mount(void)
{
    cleanup_error ac_error_t err = NULL;
    const struct cg_layout *l = cg_layout_get(&err);
    return l ? l->v2_mount : NULL;
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
