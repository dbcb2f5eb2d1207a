/* The process and its namespaces: capabilities, no_new_privs, the secret
 * scrubber on the environment, new namespaces. */
#include <ctype.h>
#include <fnmatch.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

static const char *const cap_sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};

/* "sys_admin", "CAP_SYS_ADMIN" -> "CAP_SYS_ADMIN" */
static void cap_canonical(const char *name, char *buf, size_t len)
{
    size_t off = 0;
    if (strncasecmp(name, "CAP_", 4) != 0)
        off = (size_t)snprintf(buf, len, "CAP_");
    for (; *name && off + 1 < len; name++)
        buf[off++] = (char)toupper((unsigned char)*name);
    buf[off] = '\0';
}

/* A line listing names, each once. */
static void list_add(char **list, const char *name)
{
    if (*list) {
        size_t n = strlen(name);
        for (const char *p = *list; (p = strstr(p, name)) != NULL; p += n)
            if ((p == *list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
                return;
    }
    char *joined = *list ? xasprintf("%s, %s", *list, name) : xstrdup(name);
    free(*list);
    *list = joined;
}

static int map_capabilities(struct tier_ctx *c, yajl_val process, ac_error_t *err)
{
    yajl_val caps = tj_get(process, "capabilities");
    cleanup_free char *dropped = NULL;
    for (size_t s = 0; s < sizeof(cap_sets) / sizeof(cap_sets[0]); s++) {
        yajl_val set = tj_get(caps, cap_sets[s]);
        for (size_t i = 0; YAJL_IS_ARRAY(set) && i < set->u.array.len; i++) {
            yajl_val v = set->u.array.values[i];
            if (!YAJL_IS_STRING(v))
                continue;
            char name[64];
            cap_canonical(v->u.string, name, sizeof(name));
            if (tier_strv_has(&c->defs->refused_caps, name)) {
                tier_refuse(c, err, "capability %s (process.capabilities.%s)", name, cap_sets[s]);
                continue;
            }
            list_add(&dropped, name);
        }
    }
    yajl_val empty = tj_new_object();
    for (size_t s = 0; s < sizeof(cap_sets) / sizeof(cap_sets[0]); s++)
        tj_set(empty, cap_sets[s], tj_new_array());
    tj_set(process, "capabilities", empty);
    if (dropped)
        tier_decide(c, "process.capabilities: all dropped (%s)", dropped);
    else
        tier_decide(c, "process.capabilities: none");
    return 0;
}

/* An allow entry of "NAME1, NAME2=raw, PREFIX_*": does it allow name, and
 * keep even a credential-looking value (=raw)? */
static bool env_listed(const char *list, const char *name, bool *raw)
{
    for (const char *p = list; p && *p;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        size_t len = strcspn(p, ", \t\n");
        if (len == 0)
            break;
        cleanup_free char *entry = strndup(p, len);
        char *eq = strchr(entry, '=');
        bool is_raw = eq && strcmp(eq + 1, "raw") == 0;
        if (eq)
            *eq = '\0';
        if (fnmatch(entry, name, 0) == 0) {
            *raw = is_raw;
            return true;
        }
        p += len;
    }
    return false;
}

static bool env_safe(const struct tier_defs *defs, const char *name)
{
    for (size_t i = 0; i < defs->safe_env.n; i++)
        if (fnmatch(defs->safe_env.v[i], name, 0) == 0)
            return true;
    return false;
}

/* log2 of a positive normal double without libm, whose load alone cost
 * every agentcage command 0.05 ms for this one call: x = m * 2^e with m in
 * [sqrt(1/2), sqrt(2)), and log2 m = 2 atanh(z) / ln 2 with z = (m - 1) /
 * (m + 1), |z| < 0.18, summed until the terms vanish. Exact for powers of
 * two (m = 1); elsewhere within 1e-15 of libm's (every c/n, n <= 4096; no
 * entropy of 200000 random strings on the other side of 4.0). */
static double log2_positive(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ~(0x7ffULL << 52)) | (1023ULL << 52);
    double m;
    memcpy(&m, &bits, sizeof(m));
    if (m > 1.4142135623730951) { /* no cancellation of e and log2 m near x = 1 */
        m /= 2;
        e++;
    }
    double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
    for (int k = 1; term != 0 && k < 80; k += 2) {
        sum += term / k;
        term *= z2;
    }
    return e + 2 * sum / 0.69314718055994530942;
}

/* Bits of Shannon entropy per character. */
static double entropy(const char *s, size_t n)
{
    unsigned counts[256] = {0};
    for (size_t i = 0; i < n; i++)
        counts[(unsigned char)s[i]]++;
    double h = 0;
    for (int c = 0; c < 256; c++)
        if (counts[c]) {
            double p = (double)counts[c] / (double)n;
            h -= p * log2_positive(p);
        }
    return h;
}

/* Does a value look like a credential, whatever its name: a known token
 * prefix, a PEM block, a URL with a password, a JSON web token, or a long
 * string of token characters with letters and digits and high entropy. */
static bool value_secret(const struct tier_defs *defs, const char *v)
{
    for (size_t i = 0; i < defs->secret_value_prefixes.n; i++)
        if (strncmp(v, defs->secret_value_prefixes.v[i], strlen(defs->secret_value_prefixes.v[i])) == 0)
            return true;
    if (strstr(v, "-----BEGIN"))
        return true;
    const char *scheme = strstr(v, "://");
    if (scheme) {
        const char *auth = scheme + 3;
        size_t host_len = strcspn(auth, "/?#");
        const char *at = memchr(auth, '@', host_len);
        if (at && memchr(auth, ':', (size_t)(at - auth)))
            return true;
    }
    if (strncmp(v, "eyJ", 3) == 0 && strchr(v, '.') && strchr(strchr(v, '.') + 1, '.'))
        return true;
    size_t n = strlen(v);
    if (n >= 32 && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-") == n &&
        strpbrk(v, "0123456789") && strpbrk(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") &&
        entropy(v, n) >= 4.0)
        return true;
    return false;
}

/* The environment at a tier is an allow-list: the safe names, the
 * operator's --env-allow and the container's io.agentcage.env-allow; and a
 * value that looks like a credential goes even under an allowed name,
 * unless the allow entry says NAME=raw. Decision lines name variables,
 * never their values. */
enum env_verdict { ENV_KEEP, ENV_KEEP_LISTED, ENV_NOT_LISTED, ENV_SECRET_VALUE };

/* One "NAME=value" entry under the tier's rules; shared by the init's
 * environment (the mapping) and every exec's (the runtime). */
static enum env_verdict env_verdict(const struct tier_defs *defs, const char *op_allow, const char *allow,
                                    const char *entry)
{
    const char *eq = strchr(entry, '=');
    cleanup_free char *name = strndup(entry, eq ? (size_t)(eq - entry) : strlen(entry));
    if (name == NULL)
        return ENV_NOT_LISTED;
    bool raw = false;
    bool listed = env_listed(op_allow, name, &raw) || env_listed(allow, name, &raw);
    if (!listed && !env_safe(defs, name))
        return ENV_NOT_LISTED;
    if (!raw && value_secret(defs, eq ? eq + 1 : ""))
        return ENV_SECRET_VALUE;
    return listed ? ENV_KEEP_LISTED : ENV_KEEP;
}

bool tier_env_keeps(const struct tier_operator *op, const char *env_allow, const char *entry)
{
    const struct tier_defs *defs;
    ac_error_t e = NULL;
    if (tier_defs_get(&defs, &e) < 0) {
        ac_error_free(&e);
        return false; /* fail closed: without the lists nothing passes */
    }
    enum env_verdict v = env_verdict(defs, op ? op->env_allow : NULL, env_allow, entry);
    return v == ENV_KEEP || v == ENV_KEEP_LISTED;
}

static void map_env(struct tier_ctx *c, yajl_val process)
{
    yajl_val env = tj_get(process, "env");
    const char *allow = tj_get_str(tj_get(c->config, "annotations"), "io.agentcage.env-allow");
    cleanup_free char *dropped = NULL, *secret = NULL, *kept = NULL;
    for (size_t i = 0; YAJL_IS_ARRAY(env) && i < env->u.array.len;) {
        yajl_val v = env->u.array.values[i];
        if (!YAJL_IS_STRING(v)) {
            i++;
            continue;
        }
        const char *eq = strchr(v->u.string, '=');
        cleanup_free char *name = strndup(v->u.string, eq ? (size_t)(eq - v->u.string) : strlen(v->u.string));
        enum env_verdict verdict = env_verdict(c->defs, c->op->env_allow, allow, v->u.string);
        if (verdict == ENV_NOT_LISTED) {
            list_add(&dropped, name);
            tj_remove_at(env, i);
        } else if (verdict == ENV_SECRET_VALUE) {
            list_add(&secret, name);
            tj_remove_at(env, i);
        } else {
            if (verdict == ENV_KEEP_LISTED)
                list_add(&kept, name);
            i++;
        }
    }
    if (dropped)
        tier_decide(c, "process.env: dropped %s (not on the allow-list)", dropped);
    if (secret)
        tier_decide(c, "process.env: dropped %s (the value looks like a credential; NAME=raw in "
                       "io.agentcage.env-allow keeps it)",
                    secret);
    if (kept)
        tier_decide(c, "process.env: kept %s (io.agentcage.env-allow, --env-allow)", kept);
}

/* Scheduling a tier does not hand out: real-time policies and I/O class
 * (they starve the host), a negative nice; a negative OOM score (the host
 * would kill its own processes first) is raised to 0. */
static void map_scheduling(struct tier_ctx *c, yajl_val process, ac_error_t *err)
{
    int64_t n;
    if (tj_get_int(process, "oomScoreAdj", &n) && n < 0) {
        tj_set(process, "oomScoreAdj", tj_new_int(0));
        tier_decide(c, "process.oomScoreAdj: 0 (config.json asked %lld: the cage is not shielded from the OOM killer)",
                    (long long)n);
    }
    yajl_val sched = tj_get(process, "scheduler");
    const char *policy = tj_get_str(sched, "policy");
    if (policy && (strcmp(policy, "SCHED_FIFO") == 0 || strcmp(policy, "SCHED_RR") == 0 ||
                   strcmp(policy, "SCHED_DEADLINE") == 0))
        tier_refuse(c, err, "process.scheduler.policy %s (a real-time policy)", policy);
    if (tj_get_int(sched, "nice", &n) && n < 0)
        tier_refuse(c, err, "process.scheduler.nice %lld (above the host's own processes)", (long long)n);
    const char *io_class = tj_get_str(tj_get(process, "ioPriority"), "class");
    if (io_class && strcmp(io_class, "IOPRIO_CLASS_RT") == 0)
        tier_refuse(c, err, "process.ioPriority.class IOPRIO_CLASS_RT (real-time I/O)");
}

int tier_map_process(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val process = tj_get(c->config, "process");
    if (!YAJL_IS_OBJECT(process))
        return 0; /* nothing to run yet; create refuses such a config anyway */
    map_scheduling(c, process, err);
    if (map_capabilities(c, process, err) < 0)
        return -1;
    if (!YAJL_IS_TRUE(tj_get(process, "noNewPrivileges"))) {
        tj_set(process, "noNewPrivileges", tj_new_bool(true));
        tier_decide(c, "process.noNewPrivileges: true");
    }
    map_env(c, process);
    return 0;
}

/* Container root is never host root: at a tier the runtime puts the
 * container in a user namespace (the bundle's own when it maps root to an
 * unprivileged host id, else a slice of the operator's --userns-range). */
static void map_user_namespace(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val lx = tj_get(c->config, "linux");
    static const char *const maps[] = {"uidMappings", "gidMappings"};
    bool own = false;
    for (size_t k = 0; k < 2; k++) {
        yajl_val arr = tj_get(lx, maps[k]);
        for (size_t i = 0; YAJL_IS_ARRAY(arr) && i < arr->u.array.len; i++) {
            int64_t host = -1, size = 0;
            tj_get_int(arr->u.array.values[i], "hostID", &host);
            tj_get_int(arr->u.array.values[i], "size", &size);
            own = true;
            /* rootless, id 0 of the runtime's user namespace is the user */
            if (host == 0 && size > 0 && !c->op->rootless)
                tier_refuse(c, err, "linux.%s[%zu]: a user namespace that maps host id 0", maps[k], i);
        }
    }
    if (c->op->rootless)
        tier_decide(c, "user namespace: the rootless runtime's own (container root is the user, or one of its "
                       "subordinate ids)");
    else if (own)
        tier_decide(c, "user namespace: config.json's own mappings (no host id 0), joined after the setup");
    else
        tier_decide(c, "user namespace: container root is an unprivileged host id (a slice of %u from "
                       "--userns-range %u:%u), joined after the setup; bind mounts idmapped to their owner",
                    65536u, c->op->userns_start, c->op->userns_size);
}

/* Every tier runs in new pid, ipc, uts, mount, cgroup and network
 * namespaces. The host's pid, ipc or network namespace (no entry) is
 * refused; uts, mount and cgroup are simply added. A network namespace by
 * path (a pod's) is replaced by a new empty one: the tier's network is
 * loopback only. pid, ipc, uts and cgroup by path are kept (a pod's
 * sharing), but not the host's, and never a mount namespace by path. */
enum tier_pod_role tier_pod_role_of(yajl_val config)
{
    static const char *const keys[] = {"io.kubernetes.cri.container-type", "io.kubernetes.cri-o.ContainerType"};
    yajl_val annotations = tj_get(config, "annotations");
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v = tj_get_str(annotations, keys[i]);
        if (v && strcmp(v, "sandbox") == 0)
            return POD_SANDBOX;
        if (v && strcmp(v, "container") == 0)
            return POD_MEMBER;
    }
    return POD_NONE;
}

int tier_map_namespaces(struct tier_ctx *c, ac_error_t *err)
{
    static const char *const required[] = {"pid", "ipc", "network", "uts", "mount", "cgroup"};
    yajl_val namespaces = tj_get_array(tj_get_object(c->config, "linux"), "namespaces");
    bool present[6] = {false};
    for (size_t i = 0; i < namespaces->u.array.len; i++) {
        yajl_val ns = namespaces->u.array.values[i];
        const char *type = tj_get_str(ns, "type");
        const char *path = tj_get_str(ns, "path");
        for (size_t r = 0; type && r < 6; r++)
            if (strcmp(type, required[r]) == 0)
                present[r] = true;
        if (type == NULL || path == NULL)
            continue;
        /* By spelling here; the runtime compares what the path opens with
         * the host's own namespaces, whatever the spelling. */
        if (strcmp(type, "network") == 0 && c->pod_role == POD_MEMBER) {
            tier_decide(c, "linux.namespaces[%zu]: joins its pod's cage, network namespace %s (the runtime checks it is "
                           "the cage of a tiered pod sandbox it runs, with this tier's network, or for a Podman pod's "
                           "member the namespace of its infra, which it replaces by the pod's cage; refused "
                           "otherwise)",
                        i, path);
        } else if (strcmp(type, "network") == 0) {
            tier_decide(c, "linux.namespaces[%zu]: network namespace %s replaced by a new empty one (loopback only%s)",
                        i, path,
                        c->pod_role == POD_SANDBOX ? "): the pod's cage, which its containers join (the engine's "
                                                     "pod address and ports lead nowhere"
                                                   : "");
            tj_remove(ns, "path"); /* frees path */
        } else if (strcmp(type, "mount") == 0) {
            tier_refuse(c, err, "joining the mount namespace %s (linux.namespaces[%zu])", path, i);
        } else if (strcmp(type, "user") == 0) {
            tier_refuse(c, err, "joining the user namespace %s (linux.namespaces[%zu]): a tier makes its own", path, i);
        } else if (strncmp(path, "/proc/1/", 8) == 0 || strncmp(path, "/proc/self/", 11) == 0) {
            tier_refuse(c, err, "the host's %s namespace %s (linux.namespaces[%zu])", type, path, i);
        } else if (strcmp(type, "user") != 0 && strcmp(type, "time") != 0) {
            tier_decide(c, "linux.namespaces[%zu]: %s namespace %s kept (shared with its pod; the runtime refuses "
                           "the host's)",
                        i, type, path);
        }
    }
    map_user_namespace(c, err);
    for (size_t r = 0; r < 6; r++) {
        if (present[r])
            continue;
        if (r < 3) {
            tier_refuse(c, err, "the host's %s namespace (linux.namespaces has no %s)", required[r], required[r]);
            continue;
        }
        yajl_val ns = tj_new_object();
        tj_set(ns, "type", tj_new_string(required[r]));
        tj_push(namespaces, ns);
        tier_decide(c, "linux.namespaces: added a new %s namespace", required[r]);
    }
    return 0;
}

/* A sysctl name as the kernel spells it below /proc/sys, dots for
 * slashes: letters, digits, "_" and "-", no empty component. */
static bool sysctl_name_ok(const char *key)
{
    if (*key == '\0' || *key == '.')
        return false;
    for (const char *p = key; *p; p++) {
        if (*p == '.' && (p[1] == '.' || p[1] == '\0'))
            return false;
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
            return false;
    }
    return true;
}

/* linux.sysctl at a tier: only names the container's own network and IPC
 * namespaces hold (tiers.json's sysctls). Any other one is the host's
 * kernel: kernel.core_pattern runs a program as host root. */
int tier_map_sysctl(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val sysctl = tj_get(tj_get(c->config, "linux"), "sysctl");
    if (!YAJL_IS_OBJECT(sysctl))
        return 0;
    int ret = 0;
    for (size_t i = 0; i < sysctl->u.object.len; i++) {
        const char *key = sysctl->u.object.keys[i];
        bool allowed = false;
        for (size_t k = 0; sysctl_name_ok(key) && k < c->defs->sysctls.n && !allowed; k++)
            allowed = fnmatch(c->defs->sysctls.v[k], key, 0) == 0;
        if (!allowed)
            ret = tier_refuse(c, err, "linux.sysctl %s (not namespaced to the container: the host's kernel)", key);
    }
    if (ret == 0 && sysctl->u.object.len)
        tier_decide(c, "linux.sysctl: %zu namespaced settings kept", sysctl->u.object.len);
    return ret;
}
