/* cgroup v1 backend: one hierarchy per controller (or co-mounted group),
 * the container's cgroup at the same path in each. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup_internal.h"
#include "runtime/util/utils.h"

static int write_i64(const char *dir, const char *file, int64_t v, ac_error_t *err)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return cg_write(dir, file, buf, err);
}

static int write_u64(const char *dir, const char *file, uint64_t v, ac_error_t *err)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    return cg_write(dir, file, buf, err);
}

/* memory.limit_in_bytes must stay <= memory.memsw.limit_in_bytes at every
 * step, so the order of the two writes depends on where the limits move. */
static int apply_memory(const char *dir, const struct oci_memory *m, ac_error_t *err)
{
    bool swap_supported = cg_file_exists(dir, "memory.memsw.limit_in_bytes");
    /* 0 means "not set" for these, as in runc: never a limit of 0 bytes */
    bool set_limit = m->has_limit && m->limit != 0;
    bool set_swap = m->has_swap && m->swap != 0;
    if (set_swap && !swap_supported) {
        ac_debug("cgroup: memory.swap ignored: the kernel has no swap accounting");
        set_swap = false;
    }
    if (set_limit && set_swap) {
        uint64_t cur_swap = 0;
        bool swap_first = m->swap == -1 ||
                          (cg_read_u64(dir, "memory.memsw.limit_in_bytes", &cur_swap) == 0 &&
                           (uint64_t)m->swap > cur_swap);
        if (swap_first) {
            if (write_i64(dir, "memory.memsw.limit_in_bytes", m->swap, err) < 0 ||
                write_i64(dir, "memory.limit_in_bytes", m->limit, err) < 0)
                return -1;
        } else {
            if (write_i64(dir, "memory.limit_in_bytes", m->limit, err) < 0 ||
                write_i64(dir, "memory.memsw.limit_in_bytes", m->swap, err) < 0)
                return -1;
        }
    } else if (set_limit) {
        /* With swap accounting, an unlimited memory limit also lifts the
         * swap limit (a bounded memsw below it would make the write fail). */
        if (m->limit == -1 && swap_supported &&
            write_i64(dir, "memory.memsw.limit_in_bytes", -1, err) < 0)
            return -1;
        if (write_i64(dir, "memory.limit_in_bytes", m->limit, err) < 0)
            return -1;
    } else if (set_swap) {
        if (write_i64(dir, "memory.memsw.limit_in_bytes", m->swap, err) < 0)
            return -1;
    }
    if (m->has_reservation && m->reservation != 0 &&
        write_i64(dir, "memory.soft_limit_in_bytes", m->reservation, err) < 0)
        return -1;
    if (m->has_swappiness) {
        if (m->swappiness > 100)
            return ac_error(err, 0,
                            "cgroup: linux.resources.memory.swappiness %" PRIu64
                            ": valid range is 0-100",
                            m->swappiness);
        if (write_u64(dir, "memory.swappiness", m->swappiness, err) < 0)
            return -1;
    }
    if (m->has_disable_oom_killer &&
        cg_write(dir, "memory.oom_control", m->disable_oom_killer ? "1" : "0", err) < 0)
        return -1;
    if (m->has_kernel || m->has_kernel_tcp)
        ac_warn("cgroup: linux.resources.memory.kernel and kernelTCP are ignored (deprecated by the kernel; runc ignores them too)");
    return 0;
}

static int apply_cpu(const char *dir, const struct oci_cpu *c, ac_error_t *err)
{
    if (c->has_shares && c->shares != 0 && write_u64(dir, "cpu.shares", c->shares, err) < 0)
        return -1;
    if (c->has_period && c->period != 0) {
        /* The period/quota pair is checked against the parent's bandwidth:
         * if the new period does not fit with the old quota, set the quota
         * first. */
        cleanup_error ac_error_t perr = NULL;
        if (write_u64(dir, "cpu.cfs_period_us", c->period, &perr) < 0) {
            if (!c->has_quota || perr->errno_value != EINVAL) {
                *err = ac_steal_ptr(&perr);
                return -1;
            }
            if (write_i64(dir, "cpu.cfs_quota_us", c->quota, err) < 0 ||
                write_u64(dir, "cpu.cfs_period_us", c->period, err) < 0)
                return -1;
        }
    }
    if (c->has_quota && c->quota != 0 && write_i64(dir, "cpu.cfs_quota_us", c->quota, err) < 0)
        return -1;
    if (c->has_burst) {
        if (!cg_file_exists(dir, "cpu.cfs_burst_us"))
            return ac_error(err, 0, "cgroup: linux.resources.cpu.burst: not supported by the kernel");
        if (write_u64(dir, "cpu.cfs_burst_us", c->burst, err) < 0)
            return -1;
    }
    if (c->has_realtime_period && c->realtime_period != 0 &&
        write_u64(dir, "cpu.rt_period_us", c->realtime_period, err) < 0)
        return -1;
    if (c->has_realtime_runtime && c->realtime_runtime != 0 &&
        write_i64(dir, "cpu.rt_runtime_us", c->realtime_runtime, err) < 0)
        return -1;
    if (c->has_idle) {
        if (!cg_file_exists(dir, "cpu.idle"))
            return ac_error(err, 0, "cgroup: linux.resources.cpu.idle: not supported by the kernel");
        if (write_i64(dir, "cpu.idle", c->idle, err) < 0)
            return -1;
    }
    return 0;
}

static int write_dev_value(const char *dir, const char *file, int64_t major, int64_t minor,
                           uint64_t value, ac_error_t *err)
{
    char buf[96];
    snprintf(buf, sizeof(buf), "%" PRId64 ":%" PRId64 " %" PRIu64, major, minor, value);
    return cg_write(dir, file, buf, err);
}

static int write_throttles(const char *dir, const char *file, const struct oci_blkio_throttle *t,
                           size_t n, ac_error_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (write_dev_value(dir, file, t[i].major, t[i].minor, t[i].rate, err) < 0)
            return -1;
    return 0;
}

static int apply_blkio(const char *dir, const struct oci_blkio *b, ac_error_t *err)
{
    /* CFQ's blkio.weight, or BFQ's blkio.bfq.weight on newer kernels. */
    const char *weight_file = cg_file_exists(dir, "blkio.weight")       ? "blkio.weight"
                              : cg_file_exists(dir, "blkio.bfq.weight") ? "blkio.bfq.weight"
                                                                        : NULL;
    const char *weight_dev_file = cg_file_exists(dir, "blkio.weight_device") ? "blkio.weight_device"
                                  : cg_file_exists(dir, "blkio.bfq.weight_device")
                                      ? "blkio.bfq.weight_device"
                                      : NULL;
    if (b->has_weight && b->weight != 0) {
        if (weight_file == NULL)
            return ac_error(err, 0,
                            "cgroup: linux.resources.blockIO.weight: the host's I/O scheduler "
                            "supports no blkio weight");
        if (write_u64(dir, weight_file, b->weight, err) < 0)
            return -1;
    }
    if (b->has_leaf_weight && b->leaf_weight != 0) {
        if (!cg_file_exists(dir, "blkio.leaf_weight"))
            return ac_error(err, 0,
                            "cgroup: linux.resources.blockIO.leafWeight: not supported by the host");
        if (write_u64(dir, "blkio.leaf_weight", b->leaf_weight, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < b->n_weight_device; i++) {
        const struct oci_blkio_weight_device *wd = &b->weight_device[i];
        if (wd->has_weight) {
            if (weight_dev_file == NULL)
                return ac_error(err, 0,
                                "cgroup: linux.resources.blockIO.weightDevice: the host's I/O "
                                "scheduler supports no blkio weight");
            if (write_dev_value(dir, weight_dev_file, wd->major, wd->minor, wd->weight, err) < 0)
                return -1;
        }
        if (wd->has_leaf_weight &&
            write_dev_value(dir, "blkio.leaf_weight_device", wd->major, wd->minor,
                            wd->leaf_weight, err) < 0)
            return -1;
    }
    if (write_throttles(dir, "blkio.throttle.read_bps_device", b->throttle_read_bps_device,
                        b->n_throttle_read_bps_device, err) < 0 ||
        write_throttles(dir, "blkio.throttle.write_bps_device", b->throttle_write_bps_device,
                        b->n_throttle_write_bps_device, err) < 0 ||
        write_throttles(dir, "blkio.throttle.read_iops_device", b->throttle_read_iops_device,
                        b->n_throttle_read_iops_device, err) < 0 ||
        write_throttles(dir, "blkio.throttle.write_iops_device", b->throttle_write_iops_device,
                        b->n_throttle_write_iops_device, err) < 0)
        return -1;
    return 0;
}

static void device_rule_string(const struct oci_device_rule *rule, char *buf, size_t size)
{
    if (rule->type == 'a' || rule->type == 0) {
        snprintf(buf, size, "a");
        return;
    }
    char maj[24], min[24];
    if (rule->major < 0)
        snprintf(maj, sizeof(maj), "*");
    else
        snprintf(maj, sizeof(maj), "%" PRId64, rule->major);
    if (rule->minor < 0)
        snprintf(min, sizeof(min), "*");
    else
        snprintf(min, sizeof(min), "%" PRId64, rule->minor);
    snprintf(buf, size, "%c %s:%s %s", rule->type, maj, min,
             rule->access && *rule->access ? rule->access : "rwm");
}

/* devices.deny (fd[0]) and devices.allow (fd[1]) of one cgroup, each opened
 * once for all the rules written to it: the kernel takes one rule a write. */
struct device_files {
    const char *dir;
    int fd[2];
    /* the rules written since the last one of the other kind: one of them
     * again changes nothing (a tier's list and the defaults every
     * container gets overlap: ten writes fewer) */
    char run[32][24];
    size_t n_run;
    bool run_allow;
};

static void device_files_close(struct device_files *f)
{
    for (int i = 0; i < 2; i++)
        if (f->fd[i] >= 0)
            close(f->fd[i]);
}

static int write_device_rule(struct device_files *f, bool allow, const char *rule, ac_error_t *err)
{
    if (allow != f->run_allow)
        f->n_run = 0, f->run_allow = allow;
    for (size_t i = 0; i < f->n_run; i++)
        if (strcmp(f->run[i], rule) == 0)
            return 0;
    if (f->n_run < sizeof(f->run) / sizeof(f->run[0]) && strlen(rule) < sizeof(f->run[0]))
        strcpy(f->run[f->n_run++], rule);
    const char *file = allow ? "devices.allow" : "devices.deny";
    int *fd = &f->fd[allow];
    if (*fd < 0) {
        cleanup_free char *path = xasprintf("%s/%s", f->dir, file);
        *fd = open(path, O_WRONLY | O_CLOEXEC);
    }
    if (*fd < 0 || write_all(*fd, rule, strlen(rule)) < 0)
        return ac_error(err, errno, "cgroup: write %s=%s", file, rule);
    ac_debug("cgroup: wrote %s/%s=%s", f->dir, file, rule);
    return 0;
}

static int write_device_rules(struct device_files *f, const struct oci_device_rule *rules, size_t n,
                              ac_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        char buf[96];
        device_rule_string(&rules[i], buf, sizeof(buf));
        if (write_device_rule(f, rules[i].allow, buf, err) < 0)
            return -1;
    }
    return 0;
}

static int apply_devices(const char *dir, const struct oci_resources *r, ac_error_t *err)
{
    /* Start from nothing allowed, then the rules in order (later ones win),
     * then the devices every container gets. */
    struct device_files f = {.dir = dir, .fd = {-1, -1}};
    int ret = write_device_rule(&f, false, "a", err) < 0 || write_device_rules(&f, r->devices, r->n_devices, err) < 0 ||
                      write_device_rules(&f, cg_default_device_rules, cg_n_default_device_rules, err) < 0
                  ? -1
                  : 0;
    device_files_close(&f);
    return ret;
}

int cg_v1_apply(const struct cg_layout *l, const char *path, const struct oci_resources *r,
                bool creating, ac_error_t *err)
{
    if (r->has_memory && cg_controller_where(l, CG_MEMORY) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_MEMORY, path);
        if (apply_memory(dir, &r->memory, err) < 0)
            return -1;
    }
    if (r->has_cpu && cg_controller_where(l, CG_CPU) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_CPU, path);
        if (apply_cpu(dir, &r->cpu, err) < 0)
            return -1;
    }
    if (r->has_cpu && cg_controller_where(l, CG_CPUSET) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_CPUSET, path);
        if (r->cpu.cpus && *r->cpu.cpus && cg_write(dir, "cpuset.cpus", r->cpu.cpus, err) < 0)
            return -1;
        if (r->cpu.mems && *r->cpu.mems && cg_write(dir, "cpuset.mems", r->cpu.mems, err) < 0)
            return -1;
    }
    if (r->has_pids && r->has_pids_limit && cg_controller_where(l, CG_PIDS) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_PIDS, path);
        if (r->pids_limit <= 0 ? cg_write(dir, "pids.max", "max", err) < 0
                               : write_i64(dir, "pids.max", r->pids_limit, err) < 0)
            return -1;
    }
    if (r->has_blkio && cg_controller_where(l, CG_BLKIO) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_BLKIO, path);
        if (apply_blkio(dir, &r->blkio, err) < 0)
            return -1;
    }
    if (r->n_hugepage_limits && cg_controller_where(l, CG_HUGETLB) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_HUGETLB, path);
        for (size_t i = 0; i < r->n_hugepage_limits; i++) {
            cleanup_free char *file =
                xasprintf("hugetlb.%s.limit_in_bytes", r->hugepage_limits[i].page_size);
            if (!cg_file_exists(dir, file))
                return ac_error(err, 0,
                                "cgroup: linux.resources.hugepageLimits: page size `%s` is not "
                                "supported by the host",
                                r->hugepage_limits[i].page_size);
            if (write_u64(dir, file, r->hugepage_limits[i].limit, err) < 0)
                return -1;
        }
    }
    if (r->has_network && r->has_net_class_id) {
        cleanup_free char *dir = cg_v1_dir(l, CG_NET_CLS, path);
        if (dir && write_u64(dir, "net_cls.classid", r->net_class_id, err) < 0)
            return -1;
    }
    if (r->n_net_priorities) {
        cleanup_free char *dir = cg_v1_dir(l, CG_NET_PRIO, path);
        for (size_t i = 0; dir && i < r->n_net_priorities; i++) {
            cleanup_free char *v =
                xasprintf("%s %u", r->net_priorities[i].name, r->net_priorities[i].priority);
            if (cg_write(dir, "net_prio.ifpriomap", v, err) < 0)
                return -1;
        }
    }
    if ((creating || r->n_devices) && cg_controller_where(l, CG_DEVICES) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_DEVICES, path);
        if (apply_devices(dir, r, err) < 0)
            return -1;
    }
    return 0;
}

int cg_v1_cpuset_init(const char *dir, bool made_now, char *values[2], ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(dir);
    const char *parent = dirname(copy);
    static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
    for (size_t i = 0; i < 2; i++) {
        if (!made_now) {
            char *cur = NULL;
            if (cg_read(dir, files[i], &cur) < 0)
                return ac_error(err, errno, "cgroup: read `%s/%s`", dir, files[i]);
            if (*cur) {
                free(values[i]);
                values[i] = cur;
                continue;
            }
            free(cur);
        }
        if (values[i] == NULL && cg_read(parent, files[i], &values[i]) < 0)
            return ac_error(err, errno, "cgroup: read `%s/%s`", parent, files[i]);
        if (cg_write(dir, files[i], values[i], err) < 0)
            return -1;
    }
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int cg_v1_freeze(const char *dir, bool frozen, ac_error_t *err)
{
    const char *want = frozen ? "FROZEN" : "THAWED";
    /* Freezing can stay at FREEZING while a task is in an uninterruptible
     * sleep: write again now and then, give up after ~5s. */
    for (int i = 0; i < 500; i++) {
        if (i % 10 == 0 && cg_write(dir, "freezer.state", want, err) < 0)
            return -1;
        cleanup_free char *state = NULL;
        if (cg_read(dir, "freezer.state", &state) < 0)
            return ac_error(err, errno, "cgroup: read `%s/freezer.state`", dir);
        if (strcmp(state, want) == 0)
            return 0;
        sleep_ms(10);
    }
    if (frozen) {
        cleanup_error ac_error_t ignored = NULL;
        cg_write(dir, "freezer.state", "THAWED", &ignored);
    }
    return ac_error(err, 0, "cgroup: timed out waiting for `%s/freezer.state` to become %s", dir,
                    want);
}

bool cg_v1_is_frozen(const char *dir)
{
    cleanup_free char *state = NULL;
    return cg_read(dir, "freezer.state", &state) == 0 && strcmp(state, "FROZEN") == 0;
}

/* Sum the Read and Write lines of a blkio io_service_bytes file. */
static void blkio_bytes(const char *text, uint64_t *rd, uint64_t *wr)
{
    for (const char *line = text; line && *line;) {
        char dev[64], op[32];
        unsigned long long v;
        if (sscanf(line, "%63s %31s %llu", dev, op, &v) == 3) {
            if (strcmp(op, "Read") == 0)
                *rd += v;
            else if (strcmp(op, "Write") == 0)
                *wr += v;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
}

/* What a tiered container's exit record keeps: the peak and the OOM kills. */
static void v1_memory_peak(const char *dir, struct cgroup_stats *st)
{
    cleanup_free char *oom = NULL;
    cg_read_u64(dir, "memory.max_usage_in_bytes", &st->memory_max_usage);
    if (cg_read(dir, "memory.oom_control", &oom) == 0)
        cg_keyed_u64(oom, "oom_kill", &st->oom_kill_count);
}

void cg_v1_memory_peak(const struct cg_layout *l, const char *path, struct cgroup_stats *st)
{
    if (cg_controller_where(l, CG_MEMORY) != CG_ON_V1)
        return;
    cleanup_free char *dir = cg_v1_dir(l, CG_MEMORY, path);
    v1_memory_peak(dir, st);
}

void cg_v1_stats(const struct cg_layout *l, const char *path, struct cgroup_stats *st)
{
    if (cg_controller_where(l, CG_CPUACCT) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_CPUACCT, path);
        cg_read_u64(dir, "cpuacct.usage", &st->cpu_usage_total_ns);
        if (cg_read_u64(dir, "cpuacct.usage_user", &st->cpu_usage_user_ns) < 0 ||
            cg_read_u64(dir, "cpuacct.usage_sys", &st->cpu_usage_kernel_ns) < 0) {
            /* older kernels: cpuacct.stat in clock ticks */
            cleanup_free char *text = NULL;
            uint64_t user = 0, sys = 0;
            long hz = sysconf(_SC_CLK_TCK);
            if (hz > 0 && cg_read(dir, "cpuacct.stat", &text) == 0) {
                cg_keyed_u64(text, "user", &user);
                cg_keyed_u64(text, "system", &sys);
                st->cpu_usage_user_ns = user * (1000000000ull / (uint64_t)hz);
                st->cpu_usage_kernel_ns = sys * (1000000000ull / (uint64_t)hz);
            }
        }
    }
    if (cg_controller_where(l, CG_CPU) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_CPU, path);
        cleanup_free char *text = NULL;
        if (cg_read(dir, "cpu.stat", &text) == 0) {
            cg_keyed_u64(text, "nr_periods", &st->cpu_throttling_periods);
            cg_keyed_u64(text, "nr_throttled", &st->cpu_throttled_periods);
            cg_keyed_u64(text, "throttled_time", &st->cpu_throttled_time_ns);
        }
    }
    if (cg_controller_where(l, CG_MEMORY) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_MEMORY, path);
        v1_memory_peak(dir, st);
        cg_read_u64(dir, "memory.usage_in_bytes", &st->memory_usage);
        cg_read_u64(dir, "memory.limit_in_bytes", &st->memory_limit);
        cg_read_u64(dir, "memory.failcnt", &st->memory_failcnt);
        cg_read_u64(dir, "memory.memsw.usage_in_bytes", &st->swap_usage);
        cg_read_u64(dir, "memory.memsw.limit_in_bytes", &st->swap_limit);
        cleanup_free char *stat = NULL;
        if (cg_read(dir, "memory.stat", &stat) == 0) {
            if (cg_keyed_u64(stat, "total_cache", &st->memory_cache) < 0)
                cg_keyed_u64(stat, "cache", &st->memory_cache);
            if (cg_keyed_u64(stat, "total_rss", &st->memory_rss) < 0)
                cg_keyed_u64(stat, "rss", &st->memory_rss);
        }
    }
    if (cg_controller_where(l, CG_PIDS) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_PIDS, path);
        cg_read_u64(dir, "pids.current", &st->pids_current);
        if (cg_read_u64(dir, "pids.max", &st->pids_limit) == 0 && st->pids_limit == UINT64_MAX)
            st->pids_limit = 0;
    }
    if (cg_controller_where(l, CG_BLKIO) == CG_ON_V1) {
        cleanup_free char *dir = cg_v1_dir(l, CG_BLKIO, path);
        cleanup_free char *text = NULL;
        if (cg_read(dir, "blkio.throttle.io_service_bytes_recursive", &text) == 0 ||
            cg_read(dir, "blkio.throttle.io_service_bytes", &text) == 0)
            blkio_bytes(text, &st->io_read_bytes, &st->io_write_bytes);
    }
}
