/* cgroup v2 backend: the unified hierarchy (all of a pure v2 host, or the
 * controllers a hybrid host left to cgroup2). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cgroup/cgroup_internal.h"
#include "runtime/util/utils.h"

static int write_u64(const char *dir, const char *file, uint64_t v, ac_error_t *err)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    return cg_write(dir, file, buf, err);
}

/* -1 (or any negative) means unlimited: "max". */
static int write_limit(const char *dir, const char *file, int64_t v, ac_error_t *err)
{
    if (v < 0)
        return cg_write(dir, file, "max", err);
    return write_u64(dir, file, (uint64_t)v, err);
}

/* The v2 controllers a resources object asks for (CG_BIT()s, only those
 * driven on cgroup2 here), and for each a name for error messages. */
static uint32_t requested_v2(const struct cg_layout *l, const struct oci_resources *r)
{
    uint32_t mask = 0;
    if (r == NULL)
        return 0;
    if (r->has_memory && (r->memory.has_limit || r->memory.has_reservation || r->memory.has_swap))
        mask |= CG_BIT(CG_MEMORY);
    if (r->has_cpu && (r->cpu.has_shares || r->cpu.has_quota || r->cpu.has_period ||
                       r->cpu.has_burst || r->cpu.has_idle))
        mask |= CG_BIT(CG_CPU);
    if (r->has_cpu && ((r->cpu.cpus && *r->cpu.cpus) || (r->cpu.mems && *r->cpu.mems)))
        mask |= CG_BIT(CG_CPUSET);
    if (r->has_pids && r->has_pids_limit)
        mask |= CG_BIT(CG_PIDS);
    if (r->has_blkio)
        mask |= CG_BIT(CG_BLKIO);
    if (r->n_hugepage_limits)
        mask |= CG_BIT(CG_HUGETLB);
    uint32_t on_v2 = 0;
    for (int c = 0; c < CG_CONTROLLER_COUNT; c++)
        if ((mask & CG_BIT(c)) && cg_controller_where(l, c) == CG_ON_V2)
            on_v2 |= CG_BIT(c);
    /* unified keys name their controller ("memory.high"): it must be
     * enabled on cgroup2 wherever v1 drives the rest */
    for (size_t i = 0; i < r->n_unified; i++) {
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++) {
            const char *n = cg_v2_name(c);
            size_t len = n ? strlen(n) : 0;
            if (n && c != CG_CPUACCT && strncmp(r->unified[i].key, n, len) == 0 &&
                r->unified[i].key[len] == '.')
                on_v2 |= CG_BIT(c);
        }
    }
    return on_v2;
}

static const char *resource_name(enum cg_controller c)
{
    switch (c) {
    case CG_MEMORY: return "linux.resources.memory";
    case CG_CPU: return "linux.resources.cpu";
    case CG_CPUSET: return "linux.resources.cpu.cpus/mems";
    case CG_PIDS: return "linux.resources.pids";
    case CG_BLKIO: return "linux.resources.blockIO";
    case CG_HUGETLB: return "linux.resources.hugepageLimits";
    default: return "linux.resources.unified";
    }
}

static bool word_in(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == '\n')
            p++;
        if (strncmp(p, word, len) == 0 && (p[len] == '\0' || p[len] == ' ' || p[len] == '\n'))
            return true;
        p = strpbrk(p, " \n");
    }
    return false;
}

int cg_v2_enable_controllers(const struct cg_layout *l, const char *path, size_t created_depth,
                             const struct oci_resources *r, ac_error_t *err)
{
    if (l->v2_mount == NULL)
        return 0;
    uint32_t required = requested_v2(l, r);
    /* On a pure v2 host every available controller is enabled down to the
     * container (as runc does) so its stats and later updates work; on a
     * hybrid host only what the container's limits require. */
    uint32_t wanted = required;
    if (l->mode == CGROUP_MODE_V2)
        wanted |= l->v2_controllers;
    if (wanted == 0)
        return 0;

    size_t depth = 0;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            depth++;
    /* The ancestors are the mount root and the first depth-1 levels; level
     * i (0-based, the mount root is level -1 here) is ours when it is among
     * the last created_depth components. */
    cleanup_free char *dir = xstrdup(l->v2_mount);
    const char *rest = path;
    for (size_t lvl = 0; lvl < depth; lvl++) {
        /* dir is the ancestor at index lvl-1 (0 = the mount root). */
        bool ours = lvl >= 1 && (lvl - 1) >= depth - created_depth;
        cleanup_free char *available = NULL, *enabled = NULL;
        if (cg_read(dir, "cgroup.controllers", &available) < 0 ||
            cg_read(dir, "cgroup.subtree_control", &enabled) < 0)
            return ac_error(err, errno, "cgroup: read `%s/cgroup.subtree_control`", dir);
        for (int c = 0; c < CG_CONTROLLER_COUNT; c++) {
            const char *name = cg_v2_name(c);
            if (!(wanted & CG_BIT(c)) || name == NULL || c == CG_CPUACCT)
                continue;
            if (word_in(enabled, name))
                continue;
            bool needed = required & CG_BIT(c);
            if (!word_in(available, name)) {
                if (needed)
                    return ac_error(err, 0,
                                    "cgroup: %s requested but the %s controller is not available "
                                    "in `%s`",
                                    resource_name(c), name, dir);
                wanted &= ~CG_BIT(c);
                continue;
            }
            if (!ours && l->mode != CGROUP_MODE_V2) {
                /* A hybrid host's cgroup2 tree belongs to the host: do not
                 * reconfigure a cgroup we did not create. */
                if (needed)
                    return ac_error(err, 0,
                                    "cgroup: %s requires the %s controller enabled in "
                                    "`%s/cgroup.subtree_control`; agentcage does not change a "
                                    "cgroup it did not create",
                                    resource_name(c), name, dir);
                wanted &= ~CG_BIT(c);
                continue;
            }
            cleanup_free char *value = xasprintf("+%s", name);
            cleanup_error ac_error_t werr = NULL;
            if (cg_write(dir, "cgroup.subtree_control", value, &werr) < 0) {
                if (needed) {
                    *err = ac_steal_ptr(&werr);
                    return ac_error_wrap(err, "cgroup: `%s`", dir);
                }
                cleanup_free char *msg = ac_error_string(werr);
                ac_debug("cgroup: cannot enable %s in `%s`: %s", name, dir, msg);
                wanted &= ~CG_BIT(c);
            }
        }
        const char *next = strchr(rest + 1, '/');
        size_t len = next ? (size_t)(next - rest) : strlen(rest);
        char *nd = xasprintf("%s%.*s", dir, (int)len, rest);
        free(dir);
        dir = nd;
        rest += len;
        if (lvl + 1 == depth)
            break;
    }
    return 0;
}

/* OCI memory.swap is memory+swap; cgroup2's memory.swap.max is swap alone
 * (the same conversion runc makes). */
static int swap_v2_value(const struct oci_memory *m, int64_t *out, ac_error_t *err)
{
    int64_t limit = m->has_limit ? m->limit : 0;
    int64_t swap = m->swap;
    if (swap == -1) {
        *out = -1;
        return 0;
    }
    if (limit == 0 || limit == -1)
        return ac_error(err, 0,
                        "cgroup: linux.resources.memory.swap: cannot set a swap limit without a "
                        "memory limit");
    if (swap < limit)
        return ac_error(err, 0,
                        "cgroup: linux.resources.memory.swap (%" PRId64
                        ") must be >= memory.limit (%" PRId64 ")",
                        swap, limit);
    *out = swap - limit;
    return 0;
}

static int apply_memory(const char *dir, const struct oci_memory *m, ac_error_t *err)
{
    if (m->has_swap && m->swap != 0) {
        int64_t swap = 0;
        if (swap_v2_value(m, &swap, err) < 0)
            return -1;
        if (!cg_file_exists(dir, "memory.swap.max"))
            ac_debug("cgroup: memory.swap ignored: the kernel has no swap accounting");
        else if (write_limit(dir, "memory.swap.max", swap, err) < 0)
            return -1;
    } else if (m->has_limit && m->limit == -1 && cg_file_exists(dir, "memory.swap.max")) {
        if (cg_write(dir, "memory.swap.max", "max", err) < 0)
            return -1;
    }
    if (m->has_limit && m->limit != 0 && write_limit(dir, "memory.max", m->limit, err) < 0)
        return -1;
    if (m->has_reservation && m->reservation != 0 &&
        write_limit(dir, "memory.low", m->reservation, err) < 0)
        return -1;
    if (m->has_swappiness)
        ac_debug("cgroup: memory.swappiness ignored: not available on cgroup v2");
    if (m->has_disable_oom_killer && m->disable_oom_killer)
        ac_debug("cgroup: memory.disableOOMKiller ignored: not available on cgroup v2");
    if (m->has_kernel || m->has_kernel_tcp)
        ac_warn("cgroup: linux.resources.memory.kernel and kernelTCP are ignored (deprecated by the kernel; runc ignores them too)");
    return 0;
}

static int apply_cpu(const char *dir, const struct oci_cpu *c, ac_error_t *err)
{
    if (c->has_shares && c->shares != 0) {
        /* shares 2..262144 onto weight 1..10000, as runc does */
        uint64_t shares = c->shares < 2 ? 2 : c->shares > 262144 ? 262144 : c->shares;
        uint64_t weight = 1 + ((shares - 2) * 9999) / 262142;
        if (write_u64(dir, "cpu.weight", weight, err) < 0)
            return -1;
    }
    bool quota_set = c->has_quota && c->quota != 0;
    bool period_set = c->has_period && c->period != 0;
    if (quota_set || period_set) {
        /* cpu.max is "QUOTA PERIOD"; keep the half that is not updated. */
        cleanup_free char *cur = NULL;
        char quota[32] = "max";
        uint64_t period = 100000;
        if (cg_read(dir, "cpu.max", &cur) == 0) {
            char q[32];
            unsigned long long p;
            if (sscanf(cur, "%31s %llu", q, &p) == 2) {
                snprintf(quota, sizeof(quota), "%s", q);
                period = p;
            }
        }
        if (quota_set) {
            if (c->quota < 0)
                snprintf(quota, sizeof(quota), "max");
            else
                snprintf(quota, sizeof(quota), "%" PRId64, c->quota);
        }
        if (period_set)
            period = c->period;
        char value[64];
        snprintf(value, sizeof(value), "%s %" PRIu64, quota, period);
        if (cg_write(dir, "cpu.max", value, err) < 0)
            return -1;
    }
    if (c->has_burst && write_u64(dir, "cpu.max.burst", c->burst, err) < 0)
        return -1;
    if (c->has_idle) {
        char v[32];
        snprintf(v, sizeof(v), "%" PRId64, c->idle);
        if (cg_write(dir, "cpu.idle", v, err) < 0)
            return -1;
    }
    return 0;
}

/* blkio weight 10..1000 onto io weight 1..10000, as runc does. */
static uint64_t io_weight(uint64_t blkio_weight)
{
    if (blkio_weight < 10)
        blkio_weight = 10;
    return 1 + (blkio_weight - 10) * 9999 / 990;
}

static int write_io_max(const char *dir, const char *key, const struct oci_blkio_throttle *t,
                        size_t n, ac_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        char v[128];
        if (t[i].rate == 0) /* 0 lifts the limit */
            snprintf(v, sizeof(v), "%" PRId64 ":%" PRId64 " %s=max", t[i].major, t[i].minor, key);
        else
            snprintf(v, sizeof(v), "%" PRId64 ":%" PRId64 " %s=%" PRIu64, t[i].major, t[i].minor,
                     key, t[i].rate);
        if (cg_write(dir, "io.max", v, err) < 0)
            return -1;
    }
    return 0;
}

static int apply_io(const char *dir, const struct oci_blkio *b, ac_error_t *err)
{
    /* BFQ takes blkio-range weights; io.weight wants 1..10000. */
    bool bfq = cg_file_exists(dir, "io.bfq.weight");
    if (b->has_weight && b->weight != 0) {
        if (bfq) {
            if (write_u64(dir, "io.bfq.weight", b->weight, err) < 0)
                return -1;
        } else {
            if (!cg_file_exists(dir, "io.weight"))
                return ac_error(err, 0,
                                "cgroup: linux.resources.blockIO.weight: the host's I/O scheduler "
                                "supports no io weight");
            char v[48];
            snprintf(v, sizeof(v), "default %" PRIu64, io_weight(b->weight));
            if (cg_write(dir, "io.weight", v, err) < 0)
                return -1;
        }
    }
    if (b->has_leaf_weight)
        ac_debug("cgroup: blockIO.leafWeight ignored: not available on cgroup v2");
    for (size_t i = 0; i < b->n_weight_device; i++) {
        const struct oci_blkio_weight_device *wd = &b->weight_device[i];
        if (!wd->has_weight)
            continue;
        char v[96];
        snprintf(v, sizeof(v), "%" PRId64 ":%" PRId64 " %" PRIu64, wd->major, wd->minor,
                 bfq ? (uint64_t)wd->weight : io_weight(wd->weight));
        if (cg_write(dir, bfq ? "io.bfq.weight" : "io.weight", v, err) < 0)
            return -1;
    }
    if (write_io_max(dir, "rbps", b->throttle_read_bps_device, b->n_throttle_read_bps_device, err) < 0 ||
        write_io_max(dir, "wbps", b->throttle_write_bps_device, b->n_throttle_write_bps_device, err) < 0 ||
        write_io_max(dir, "riops", b->throttle_read_iops_device, b->n_throttle_read_iops_device, err) < 0 ||
        write_io_max(dir, "wiops", b->throttle_write_iops_device, b->n_throttle_write_iops_device, err) < 0)
        return -1;
    return 0;
}

static int apply_unified(const char *dir, const struct oci_kv *kv, size_t n, ac_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        const char *key = kv[i].key;
        if (key == NULL || *key == '\0' || *key == '.' || strchr(key, '/') ||
            strncmp(key, "cgroup.", 7) == 0)
            return ac_error(err, 0, "cgroup: linux.resources.unified: invalid key `%s`",
                            key ? key : "");
        if (!cg_file_exists(dir, key))
            return ac_error(err, 0,
                            "cgroup: linux.resources.unified: `%s` does not exist in `%s` (is its "
                            "controller enabled?)",
                            key, dir);
        if (cg_write(dir, key, kv[i].value ? kv[i].value : "", err) < 0)
            return -1;
    }
    return 0;
}

/* Not root of the initial user namespace: not root, or root of a user
 * namespace that does not map every id (as rootless Podman runs us). */
static bool not_host_root(void)
{
    if (geteuid() != 0)
        return true;
    cleanup_free char *map = NULL;
    ac_error_t e = NULL;
    if (read_all_file("/proc/self/uid_map", &map, NULL, &e) < 0) {
        ac_error_free(&e);
        return false;
    }
    unsigned long a = 1, b = 1, n = 0;
    return sscanf(map, "%lu %lu %lu", &a, &b, &n) != 3 || a != 0 || b != 0 || n != 4294967295UL;
}

int cg_v2_apply(const struct cg_layout *l, const char *path, const struct oci_resources *r,
                bool creating, ac_error_t *err)
{
    if (l->v2_mount == NULL)
        return 0;
    cleanup_free char *dir = cg_v2_dir(l, path);
    if (r->has_memory && cg_controller_where(l, CG_MEMORY) == CG_ON_V2 &&
        apply_memory(dir, &r->memory, err) < 0)
        return -1;
    if (r->has_cpu && cg_controller_where(l, CG_CPU) == CG_ON_V2 && apply_cpu(dir, &r->cpu, err) < 0)
        return -1;
    if (r->has_cpu && cg_controller_where(l, CG_CPUSET) == CG_ON_V2) {
        if (r->cpu.cpus && *r->cpu.cpus && cg_write(dir, "cpuset.cpus", r->cpu.cpus, err) < 0)
            return -1;
        if (r->cpu.mems && *r->cpu.mems && cg_write(dir, "cpuset.mems", r->cpu.mems, err) < 0)
            return -1;
    }
    if (r->has_pids && r->has_pids_limit && cg_controller_where(l, CG_PIDS) == CG_ON_V2 &&
        write_limit(dir, "pids.max", r->pids_limit <= 0 ? -1 : r->pids_limit, err) < 0)
        return -1;
    if (r->has_blkio && cg_controller_where(l, CG_BLKIO) == CG_ON_V2 &&
        apply_io(dir, &r->blkio, err) < 0)
        return -1;
    if (r->n_hugepage_limits && cg_controller_where(l, CG_HUGETLB) == CG_ON_V2) {
        for (size_t i = 0; i < r->n_hugepage_limits; i++) {
            cleanup_free char *file = xasprintf("hugetlb.%s.max", r->hugepage_limits[i].page_size);
            if (!cg_file_exists(dir, file))
                return ac_error(err, 0,
                                "cgroup: linux.resources.hugepageLimits: `%s` does not exist in "
                                "`%s` (page size `%s` unsupported or hugetlb controller not "
                                "enabled)",
                                file, dir, r->hugepage_limits[i].page_size);
            if (write_u64(dir, file, r->hugepage_limits[i].limit, err) < 0)
                return -1;
        }
    }
    if ((creating || r->n_devices) && cg_controller_where(l, CG_DEVICES) == CG_ON_V2 &&
        cg_bpf_devices_apply(dir, r->devices, r->n_devices, err) < 0) {
        /* Rootless, loading a BPF program is not ours to do (CAP_BPF of the
         * host); there the user namespace already keeps devices out (no
         * mknod, host devices only bound with the user's own access). */
        if ((*err)->errno_value != EPERM || !not_host_root())
            return -1;
        ac_debug("cgroup: no device filter rootless: %s", (*err)->msg);
        ac_error_free(err);
    }
    if (r->n_unified && apply_unified(dir, r->unified, r->n_unified, err) < 0)
        return -1;
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int frozen_state(const char *dir)
{
    cleanup_free char *events = NULL;
    uint64_t v = 0;
    if (cg_read(dir, "cgroup.events", &events) < 0 || cg_keyed_u64(events, "frozen", &v) < 0)
        return -1;
    return v == 1;
}

int cg_v2_freeze(const char *dir, bool frozen, ac_error_t *err)
{
    if (cg_write(dir, "cgroup.freeze", frozen ? "1" : "0", err) < 0)
        return -1;
    for (int i = 0; i < 500; i++) {
        int state = frozen_state(dir);
        if (state < 0)
            return ac_error(err, errno, "cgroup: read `%s/cgroup.events`", dir);
        if (state == (int)frozen)
            return 0;
        sleep_ms(10);
    }
    if (frozen) {
        cleanup_error ac_error_t ignored = NULL;
        cg_write(dir, "cgroup.freeze", "0", &ignored);
    }
    return ac_error(err, 0, "cgroup: timed out waiting for `%s` to %s", dir,
                    frozen ? "freeze" : "thaw");
}

bool cg_v2_is_frozen(const char *dir) { return frozen_state(dir) == 1; }

/* The peak and the OOM kills (what a tiered container's exit record
 * keeps), and the times the limit was hit. */
static void v2_memory_peak(const char *dir, struct cgroup_stats *st)
{
    cleanup_free char *events = NULL;
    cg_read_u64(dir, "memory.peak", &st->memory_max_usage);
    if (cg_read(dir, "memory.events", &events) == 0) {
        cg_keyed_u64(events, "max", &st->memory_failcnt);
        cg_keyed_u64(events, "oom_kill", &st->oom_kill_count);
    }
}

void cg_v2_memory_peak(const struct cg_layout *l, const char *path, struct cgroup_stats *st)
{
    if (l->v2_mount == NULL || cg_controller_where(l, CG_MEMORY) != CG_ON_V2)
        return;
    cleanup_free char *dir = cg_v2_dir(l, path);
    v2_memory_peak(dir, st);
}

void cg_v2_stats(const struct cg_layout *l, const char *path, struct cgroup_stats *st)
{
    if (l->v2_mount == NULL)
        return;
    cleanup_free char *dir = cg_v2_dir(l, path);
    if (cg_controller_where(l, CG_CPUACCT) == CG_ON_V2 || l->mode == CGROUP_MODE_V2) {
        cleanup_free char *text = NULL;
        if (cg_read(dir, "cpu.stat", &text) == 0) {
            uint64_t v;
            if (cg_keyed_u64(text, "usage_usec", &v) == 0)
                st->cpu_usage_total_ns = v * 1000;
            if (cg_keyed_u64(text, "user_usec", &v) == 0)
                st->cpu_usage_user_ns = v * 1000;
            if (cg_keyed_u64(text, "system_usec", &v) == 0)
                st->cpu_usage_kernel_ns = v * 1000;
            cg_keyed_u64(text, "nr_periods", &st->cpu_throttling_periods);
            cg_keyed_u64(text, "nr_throttled", &st->cpu_throttled_periods);
            if (cg_keyed_u64(text, "throttled_usec", &v) == 0)
                st->cpu_throttled_time_ns = v * 1000;
        }
    }
    if (cg_controller_where(l, CG_MEMORY) == CG_ON_V2) {
        v2_memory_peak(dir, st);
        cg_read_u64(dir, "memory.current", &st->memory_usage);
        cg_read_u64(dir, "memory.max", &st->memory_limit);
        cg_read_u64(dir, "memory.swap.current", &st->swap_usage);
        cg_read_u64(dir, "memory.swap.max", &st->swap_limit);
        cleanup_free char *stat = NULL;
        if (cg_read(dir, "memory.stat", &stat) == 0) {
            cg_keyed_u64(stat, "file", &st->memory_cache);
            cg_keyed_u64(stat, "anon", &st->memory_rss);
        }
    }
    if (cg_controller_where(l, CG_PIDS) == CG_ON_V2) {
        cg_read_u64(dir, "pids.current", &st->pids_current);
        if (cg_read_u64(dir, "pids.max", &st->pids_limit) == 0 && st->pids_limit == UINT64_MAX)
            st->pids_limit = 0;
    }
    if (cg_controller_where(l, CG_BLKIO) == CG_ON_V2) {
        cleanup_free char *text = NULL;
        if (cg_read(dir, "io.stat", &text) == 0) {
            for (const char *p = text; p && *p; p++) {
                unsigned long long v;
                if (sscanf(p, "rbytes=%llu", &v) == 1)
                    st->io_read_bytes += v;
                else if (sscanf(p, "wbytes=%llu", &v) == 1)
                    st->io_write_bytes += v;
                p = strpbrk(p, " \n");
                if (p == NULL)
                    break;
            }
        }
    }
}
