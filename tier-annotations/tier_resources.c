/* Limits: the tier's defaults, tightened by io.agentcage.* annotations,
 * capped by the operator's --max-* ceilings; then written into the cgroup
 * section of config.json (never looser than what config.json asked).
 *
 * An annotation above the tier's default or the operator's ceiling is
 * refused rather than clamped: a cage silently looser than asked is worse
 * than one that does not start, and one silently tighter than asked fails
 * later in ways that are hard to trace. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

struct limit_kind {
    const char *annotation; /* io.agentcage.<name> */
    const char *flag;       /* --<flag> */
    const char *expected;   /* for errors */
    int (*parse)(const char *, int64_t *);
    const char *(*format)(int64_t, char *, size_t);
    size_t offset;          /* in struct tier_limits */
    size_t op_offset;       /* in struct tier_operator */
};

static int parse_count(const char *s, int64_t *out)
{
    uint64_t u;
    if (parse_uint64(s, &u) < 0 || u > INT32_MAX)
        return -1;
    *out = (int64_t)u;
    return 0;
}

static const char *format_count(int64_t n, char *buf, size_t len)
{
    snprintf(buf, len, "%lld", (long long)n);
    return buf;
}

#define LIMIT(a, f, e, p, fmt, field, opfield)                                                              \
    {a, f, e, p, fmt, offsetof(struct tier_limits, field), offsetof(struct tier_operator, opfield)}
static const struct limit_kind limit_kinds[] = {
    LIMIT("memory", "max-memory", "a size like 256m", tier_parse_size, tier_format_size, memory, max_memory),
    LIMIT("cpus", "max-cpus", "a CPU count like 0.5", tier_parse_cpus, tier_format_cpus, cpus_milli, max_cpus_milli),
    LIMIT("pids", "max-pids", "a number of processes", parse_count, format_count, pids, max_pids),
    LIMIT("workspace-size", "max-workspace", "a size like 64m", tier_parse_size, tier_format_size, workspace,
          max_workspace),
    LIMIT("timeout", "max-timeout", "a duration like 30s or 5m", tier_parse_duration, tier_format_duration,
          timeout_ms, max_timeout_ms),
};

int tier_map_limits(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val annotations = tj_get(c->config, "annotations");
    for (size_t i = 0; i < sizeof(limit_kinds) / sizeof(limit_kinds[0]); i++) {
        const struct limit_kind *k = &limit_kinds[i];
        int64_t deflt = *(const int64_t *)((const char *)&c->def->limits + k->offset);
        int64_t ceiling = *(const int64_t *)((const char *)c->op + k->op_offset);
        int64_t *eff = (int64_t *)((char *)&c->limits + k->offset);
        char name[64], b1[32], b2[32];
        snprintf(name, sizeof(name), "io.agentcage.%s", k->annotation);
        *eff = ceiling > 0 && ceiling < deflt ? ceiling : deflt;
        yajl_val v = tj_get(annotations, name);
        if (v == NULL) {
            if (*eff < deflt)
                tier_decide(c, "limits: %s %s (the operator's --%s caps the tier's %s)", k->annotation,
                            k->format(*eff, b1, sizeof(b1)), k->flag, k->format(deflt, b2, sizeof(b2)));
            continue;
        }
        int64_t asked;
        if (!YAJL_IS_STRING(v) || k->parse(v->u.string, &asked) < 0 || asked <= 0) {
            tier_reject(c, err, "annotation %s: expected %s, got `%s`", name, k->expected,
                        YAJL_IS_STRING(v) ? v->u.string : "a non-string");
            continue;
        }
        if (asked > deflt) {
            tier_refuse(c, err, "%s=%s: annotations may only tighten the tier's default %s", name, v->u.string,
                        k->format(deflt, b1, sizeof(b1)));
            continue;
        }
        if (asked > *eff) {
            tier_refuse(c, err, "%s=%s: above the operator's --%s %s", name, v->u.string, k->flag,
                        k->format(*eff, b1, sizeof(b1)));
            continue;
        }
        if (asked < *eff)
            tier_decide(c, "limits: %s %s (%s tightens %s)", k->annotation, k->format(asked, b1, sizeof(b1)), name,
                        k->format(*eff, b2, sizeof(b2)));
        *eff = asked;
    }
    return 0;
}

static void set_int(yajl_val obj, const char *key, int64_t n) { tj_set(obj, key, tj_new_int(n)); }

static void map_memory(struct tier_ctx *c, yajl_val resources)
{
    yajl_val memory = tj_get_object(resources, "memory");
    int64_t asked = 0, limit = c->limits.memory;
    char b1[32], b2[32];
    if (tj_get_int(memory, "limit", &asked) && asked > 0 && asked < limit)
        limit = asked;
    set_int(memory, "limit", limit);
    /* memory+swap = memory: no swap at all */
    set_int(memory, "swap", limit);
    if (asked > limit)
        tier_decide(c, "linux.resources.memory: limit %s, no swap (config.json asked %s)",
                    tier_format_size(limit, b1, sizeof(b1)), tier_format_size(asked, b2, sizeof(b2)));
    else
        tier_decide(c, "linux.resources.memory: limit %s, no swap", tier_format_size(limit, b1, sizeof(b1)));
    if (YAJL_IS_TRUE(tj_get(memory, "disableOOMKiller"))) {
        tj_set(memory, "disableOOMKiller", tj_new_bool(false));
        tier_decide(c, "linux.resources.memory.disableOOMKiller: false (a full cage is killed, not frozen)");
    }
}

static void map_cpu(struct tier_ctx *c, yajl_val resources)
{
    yajl_val cpu = tj_get_object(resources, "cpu");
    int64_t quota = 0, period = 0, milli = c->limits.cpus_milli, asked = 0;
    char b1[32], b2[32];
    if (!tj_get_int(cpu, "period", &period) || period <= 0)
        period = 100000;
    if (tj_get_int(cpu, "quota", &quota) && quota > 0) {
        asked = quota * 1000 / period;
        if (asked < milli)
            milli = asked;
    }
    set_int(cpu, "period", period);
    set_int(cpu, "quota", milli * period / 1000);
    if (asked > milli)
        tier_decide(c, "linux.resources.cpu: %s CPU (quota %lld per period %lld; config.json asked %s)",
                    tier_format_cpus(milli, b1, sizeof(b1)), (long long)(milli * period / 1000), (long long)period,
                    tier_format_cpus(asked, b2, sizeof(b2)));
    else
        tier_decide(c, "linux.resources.cpu: %s CPU (quota %lld per period %lld)", tier_format_cpus(milli, b1, sizeof(b1)),
                    (long long)(milli * period / 1000), (long long)period);
}

static void map_pids(struct tier_ctx *c, yajl_val resources)
{
    yajl_val pids = tj_get_object(resources, "pids");
    int64_t asked = 0, limit = c->limits.pids;
    if (tj_get_int(pids, "limit", &asked) && asked > 0 && asked < limit)
        limit = asked;
    set_int(pids, "limit", limit);
    if (asked > limit)
        tier_decide(c, "linux.resources.pids: limit %lld (config.json asked %lld)", (long long)limit, (long long)asked);
    else
        tier_decide(c, "linux.resources.pids: limit %lld", (long long)limit);
}

/* What would let the cage past its CPU limit, or out of its own cgroup. */
static void refuse_loosening(struct tier_ctx *c, yajl_val lx, yajl_val resources, ac_error_t *err)
{
    yajl_val cpu = tj_get(resources, "cpu");
    int64_t n;
    if (tj_get_int(cpu, "realtimeRuntime", &n) && n != 0)
        tier_refuse(c, err, "linux.resources.cpu.realtimeRuntime %lld (real-time CPU time)", (long long)n);
    if (tj_get_int(cpu, "burst", &n) && n != 0)
        tier_refuse(c, err, "linux.resources.cpu.burst %lld (CPU time beyond the tier's quota)", (long long)n);
    const char *path = tj_get_str(lx, "cgroupsPath");
    if (path) {
        for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
            if ((p == path || p[-1] == '/' || p[-1] == ':') && (p[2] == '\0' || p[2] == '/' || p[2] == ':')) {
                tier_refuse(c, err, "linux.cgroupsPath %s (a `..` leaves the container's cgroup)", path);
                break;
            }
    }
}

int tier_map_resources(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val lx = tj_get_object(c->config, "linux");
    yajl_val resources = tj_get_object(lx, "resources");
    refuse_loosening(c, lx, resources, err);
    map_memory(c, resources);
    map_cpu(c, resources);
    map_pids(c, resources);
    char b[32];
    if (c->limits.timeout_ms > 0) /* 0: a pod's sandbox, said where it is decided */
        tier_decide(c, "timeout: %s wall clock, then the whole container is killed",
                    tier_format_duration(c->limits.timeout_ms, b, sizeof(b)));
    return 0;
}
