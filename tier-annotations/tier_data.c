/* The tier definitions: tier-annotations/tiers.json, turned into a C string
 * at build time (the Makefile writes build/tiers_json.h) and parsed with
 * yajl_tree by the build's generator (tier-annotations/gen/), which writes
 * them out as C data: the runtime is built with TIER_DEFS_COMPILED and
 * reads that. Without it (the fuzz build) they are parsed once per process;
 * the strings point into the tree, which lives as long as the process. */
#include <string.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

bool tier_strv_has(const struct tier_strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0)
            return true;
    return false;
}

#ifdef TIER_DEFS_COMPILED
int tier_defs_get(const struct tier_defs **out, ac_error_t *err)
{
    *out = &tier_defs_compiled;
    return 0;
}
#else
#include "tiers_json.h" /* static const char tiers_json[] */

static struct tier_defs defs;
/* what defs points into; volatile so the store is kept (LeakSanitizer sees
 * the tree reachable through it) */
static yajl_val volatile defs_tree;
static bool defs_loaded;

static int load_strv(yajl_val root, const char *key, struct tier_strv *out, ac_error_t *err)
{
    yajl_val arr = tj_get(root, key);
    if (!YAJL_IS_ARRAY(arr))
        return ac_error(err, 0, "tiers.json: %s: expected an array of strings", key);
    out->v = xcalloc(arr->u.array.len + 1, sizeof(*out->v));
    for (size_t i = 0; i < arr->u.array.len; i++) {
        if (!YAJL_IS_STRING(arr->u.array.values[i]))
            return ac_error(err, 0, "tiers.json: %s[%zu]: expected a string", key, i);
        out->v[i] = arr->u.array.values[i]->u.string;
    }
    out->n = arr->u.array.len;
    return 0;
}

static int load_limit(yajl_val limits, const char *key, int (*parse)(const char *, int64_t *), int64_t *out,
                      size_t t, ac_error_t *err)
{
    yajl_val v = tj_get(limits, key);
    if (YAJL_IS_NUMBER(v) && tj_get_int(limits, key, out) && *out > 0)
        return 0;
    if (YAJL_IS_STRING(v) && parse(v->u.string, out) == 0 && *out > 0)
        return 0;
    return ac_error(err, 0, "tiers.json: tiers[%zu].limits.%s: expected a positive limit", t, key);
}

static int parse_count(const char *s, int64_t *out)
{
    return parse_uint64(s, (uint64_t *)out) < 0 || *out < 0 ? -1 : 0;
}

static int load_tier(yajl_val v, size_t t, struct tier_def *def, ac_error_t *err)
{
    int64_t n;
    if (!tj_get_int(v, "tier", &n) || n != (int64_t)t)
        return ac_error(err, 0, "tiers.json: tiers[%zu].tier: expected %zu", t, t);
    def->name = tj_get_str(v, "name");
    def->network = tj_get_str(v, "network");
    def->seccomp = tj_get_str(v, "seccomp");
    const char *binds = tj_get_str(v, "bindMounts");
    if (def->name == NULL || def->network == NULL || def->seccomp == NULL || binds == NULL)
        return ac_error(err, 0, "tiers.json: tiers[%zu]: name, network, seccomp and bindMounts are required", t);
    def->binds_readonly = strcmp(binds, "read-only") == 0;
    def->approval = YAJL_IS_TRUE(tj_get(v, "approval"));
    def->audit = YAJL_IS_TRUE(tj_get(v, "audit"));
    yajl_val lim = tj_get(v, "limits");
    struct tier_limits *l = &def->limits;
    if (load_limit(lim, "memory", tier_parse_size, &l->memory, t, err) < 0 ||
        load_limit(lim, "cpus", tier_parse_cpus, &l->cpus_milli, t, err) < 0 ||
        load_limit(lim, "pids", parse_count, &l->pids, t, err) < 0 ||
        load_limit(lim, "workspace", tier_parse_size, &l->workspace, t, err) < 0 ||
        load_limit(lim, "timeout", tier_parse_duration, &l->timeout_ms, t, err) < 0)
        return -1;
    return 0;
}

static int load_devices(yajl_val root, ac_error_t *err)
{
    yajl_val arr = tj_get(root, "devices");
    if (!YAJL_IS_ARRAY(arr))
        return ac_error(err, 0, "tiers.json: devices: expected an array");
    defs.devices = xcalloc(arr->u.array.len, sizeof(*defs.devices));
    for (size_t i = 0; i < arr->u.array.len; i++) {
        yajl_val v = arr->u.array.values[i];
        struct tier_device *dev = &defs.devices[i];
        dev->path = tj_get_str(v, "path");
        dev->type = tj_get_str(v, "type");
        if (dev->path == NULL || dev->type == NULL || !tj_get_int(v, "major", &dev->major))
            return ac_error(err, 0, "tiers.json: devices[%zu]: path, type and major are required", i);
        if (!tj_get_int(v, "minor", &dev->minor))
            dev->minor = -1;
    }
    defs.n_devices = arr->u.array.len;
    return 0;
}

int tier_defs_get(const struct tier_defs **out, ac_error_t *err)
{
    if (!defs_loaded) {
        char errbuf[256] = "";
        yajl_val root = yajl_tree_parse(tiers_json, errbuf, sizeof(errbuf));
        if (root == NULL)
            return ac_error(err, 0, "tiers.json: %s", errbuf);
        yajl_val tiers = tj_get(root, "tiers");
        if (!YAJL_IS_ARRAY(tiers) || tiers->u.array.len != TIER_COUNT)
            return ac_error(err, 0, "tiers.json: tiers: expected %d tiers", TIER_COUNT);
        for (size_t t = 0; t < TIER_COUNT; t++)
            if (load_tier(tiers->u.array.values[t], t, &defs.tier[t], err) < 0)
                return -1;
        if (load_strv(root, "maskedPaths", &defs.masked_paths, err) < 0 ||
            load_strv(root, "readonlyPaths", &defs.readonly_paths, err) < 0 ||
            load_strv(root, "credentialPaths", &defs.credential_paths, err) < 0 ||
            load_strv(root, "rcFiles", &defs.rc_files, err) < 0 ||
            load_strv(root, "homeDotAllow", &defs.home_dot_allow, err) < 0 ||
            load_strv(root, "safeEnv", &defs.safe_env, err) < 0 ||
            load_strv(root, "secretValuePrefixes", &defs.secret_value_prefixes, err) < 0 ||
            load_strv(root, "forbiddenBindSources", &defs.forbidden_sources, err) < 0 ||
            load_strv(root, "enginePlumbingMounts", &defs.plumbing_mounts, err) < 0 ||
            load_strv(root, "allowedMountTypes", &defs.mount_types, err) < 0 ||
            load_strv(root, "refusedCapabilities", &defs.refused_caps, err) < 0 ||
            load_strv(root, "defaultBindRoots", &defs.default_bind_roots, err) < 0 ||
            load_strv(root, "kernelMounts", &defs.kernel_mounts, err) < 0 ||
            load_strv(root, "sysctls", &defs.sysctls, err) < 0 ||
            load_strv(root, "bundleAnnotations", &defs.bundle_annotations, err) < 0 ||
            load_strv(root, "mappingAnnotations", &defs.mapping_annotations, err) < 0 ||
            load_strv(root, "acceptedFields", &defs.accepted_fields, err) < 0 || load_devices(root, err) < 0)
            return -1;
        defs_tree = root;
        defs_loaded = true;
    }
    *out = &defs;
    return 0;
}
#endif

bool tier_requires_approval(int tier)
{
    const struct tier_defs *d;
    ac_error_t e = NULL;
    if (tier < 0 || tier >= TIER_COUNT || tier_defs_get(&d, &e) < 0) {
        ac_error_free(&e);
        return tier >= 0; /* a tier whose definition cannot be read: the safe side */
    }
    return d->tier[tier].approval;
}

bool tier_has_egress_proxy(int tier)
{
    const struct tier_defs *d;
    ac_error_t e = NULL;
    if (tier < 0 || tier >= TIER_COUNT || tier_defs_get(&d, &e) < 0) {
        ac_error_free(&e);
        return false;
    }
    return strcmp(d->tier[tier].network, "egress-proxy") == 0;
}
