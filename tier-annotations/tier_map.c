/* The tier mapping: (config.json tree, operator settings) -> (effective
 * config.json tree, decisions). Pure: it edits the tree and never touches the
 * kernel. This file chooses the tier and calls the pieces in order; the
 * pieces by concern: tier_fields.c (the accepted fields), tier_resources.c
 * (limits and cgroups), tier_process.c (capabilities, no_new_privs,
 * environment, namespaces, sysctl), tier_hooks.c (the bundle's hooks),
 * tier_mounts.c (mounts, masked paths, devices). They share the mapping
 * context and its decision log (tier_ctx.c), never this file. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"
#include "hooks/policy_hooks.h"

static void format_tier_list(unsigned bits, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int t = 0; t < TIER_COUNT && off < len; t++)
        if (bits & (1u << t))
            off += snprintf(buf + off, len - off, "%s%d", off ? "," : "", t);
}

/* "io.agentcage.tier", whatever its case or the blanks around it: a key a
 * reviewer would read as the tier annotation. */
static bool loosely_tier_key(const char *key)
{
    static const char want[] = "io.agentcage.tier";
    while (*key == ' ' || *key == '\t')
        key++;
    size_t n = strlen(key);
    while (n > 0 && (key[n - 1] == ' ' || key[n - 1] == '\t'))
        n--;
    return n == sizeof(want) - 1 && strncasecmp(key, want, n) == 0;
}

/* Does config.json ask for a tier: a key that reads as io.agentcage.tier in
 * any top-level "annotations" object (a duplicate "annotations" too)? */
static bool tier_requested(yajl_val config)
{
    for (size_t i = 0; i < config->u.object.len; i++) {
        yajl_val a = config->u.object.values[i];
        if (strcmp(config->u.object.keys[i], "annotations") != 0 || !YAJL_IS_OBJECT(a))
            continue;
        for (size_t k = 0; k < a->u.object.len; k++)
            if (loosely_tier_key(a->u.object.keys[k]))
                return true;
    }
    return false;
}

/* Which tier, from the annotation or the operator's default; -2 (with
 * *err) when the annotation does not parse: never "no tier". */
static int choose_tier(yajl_val config, const struct tier_operator *op, bool *from_default, ac_error_t *err)
{
    yajl_val annotations = tj_get(config, "annotations");
    yajl_val v = tj_get(annotations, "io.agentcage.tier");
    *from_default = false;
    if (v == NULL) {
        if (tier_requested(config)) {
            cleanup_free char *dup = tj_first_duplicate_key(config);
            if (dup)
                return ac_error(err, 0, "config.json: duplicate key %s (a tiered config has one value per key)", dup),
                       -2;
            return ac_error(err, 0, "annotation io.agentcage.tier: misspelt (only the exact lowercase key, without "
                                    "blanks, chooses a tier)"),
                   -2;
        }
        *from_default = op->default_tier != TIER_NONE;
        return op->default_tier;
    }
    int tier = YAJL_IS_STRING(v) ? tier_parse_name(v->u.string) : -1;
    if (tier < 0) {
        cleanup_free char *shown = YAJL_IS_STRING(v) ? xstrdup(v->u.string) : tier_tree_to_json(v, false);
        return ac_error(err, 0, "annotation io.agentcage.tier: expected 0|read, 1|write, 2|network or 3|irreversible, "
                                "got `%s`",
                        shown ? shown : "?"),
               -2;
    }
    return tier;
}

/* Every io.agentcage.* annotation at a tier is one the tier reads, or one
 * the mapping writes (checked against what it writes, at the end). */
static int check_annotations(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val annotations = tj_get(c->config, "annotations");
    for (size_t i = 0; YAJL_IS_OBJECT(annotations) && i < annotations->u.object.len; i++) {
        const char *key = annotations->u.object.keys[i];
        const char *k = key;
        while (*k == ' ' || *k == '\t')
            k++;
        if (strncasecmp(k, "io.agentcage.", 13) != 0)
            continue;
        if (!YAJL_IS_STRING(annotations->u.object.values[i]))
            tier_reject(c, err, "annotation %s: expected a string", key);
        else if (!tier_strv_has(&c->defs->bundle_annotations, key) &&
                 !tier_strv_has(&c->defs->mapping_annotations, key))
            tier_reject(c, err, "annotation `%s`: not an agentcage annotation (see agentcage-tiers(7) or docs/tiers.md)",
                        key);
    }
    return 0;
}

/* The mapping's own annotation, set by the bundle: only the value the
 * mapping writes (an effective config maps to itself), never another. */
static void set_mapping_annotation(struct tier_ctx *c, yajl_val annotations, const char *key, const char *value,
                                   ac_error_t *err)
{
    const char *given = tj_get_str(annotations, key);
    if (given && strcmp(given, value) != 0)
        tier_reject(c, err, "annotation %s=%s: written by the tier mapping (%s), not by a bundle", key, given,
                    value[0] ? value : "empty");
    tj_set(annotations, key, tj_new_string(value));
}

/* The pod's network namespace by path (a pod container's config). */
static bool pod_network_path(yajl_val config)
{
    yajl_val namespaces = tj_get(tj_get(config, "linux"), "namespaces");
    for (size_t i = 0; YAJL_IS_ARRAY(namespaces) && i < namespaces->u.array.len; i++) {
        const char *type = tj_get_str(namespaces->u.array.values[i], "type");
        if (type && strcmp(type, "network") == 0 && tj_get_str(namespaces->u.array.values[i], "path"))
            return true;
    }
    return false;
}

/* How the approval gate names this container, for the decision line. */
static const char *approval_name_hint(yajl_val config)
{
    yajl_val a = tj_get(config, "annotations");
    if (tj_get_str(a, "io.agentcage.request-id"))
        return "its io.agentcage.request-id";
    if (tj_get_str(a, "io.kubernetes.cri.container-name") || tj_get_str(a, "io.kubernetes.container.name"))
        return "NAMESPACE_POD_CONTAINER from the pod's annotations";
    return "the container id";
}

/* Tier 2 and 3 hook points. The egress proxy (tier 2) and the approval gate
 * and exec audit (tier 3) are OCI hooks of their own issue; until they are
 * wired here the container keeps the empty network namespace, which is the
 * safe side of both. */
static int map_network_and_hooks(struct tier_ctx *c, int tier, ac_error_t *err)
{
    bool joins_pod = c->pod_role == POD_MEMBER && pod_network_path(c->config);
    if (strcmp(c->def->network, "egress-proxy") == 0) {
        const char *egress = tj_get_str(tj_get(c->config, "annotations"), "io.agentcage.egress");
        tier_decide(c, "network: loopback only; egress to [%s] through %s on 127.0.0.1:%d "
                       "(HTTP_PROXY/HTTPS_PROXY set), names resolved by the proxy, no DNS inside",
                    egress ? egress : "nothing: no io.agentcage.egress hosts",
                    joins_pod ? "the pod sandbox's agentcage-egress proxy" : "the agentcage-egress proxy",
                    EGRESS_PROXY_PORT);
    } else if (joins_pod) {
        tier_decide(c, "network: the pod's cage (loopback only, shared with the pod's containers)");
    } else {
        tier_decide(c, "network: none (a new network namespace with loopback only)");
    }
    if (c->def->approval && c->pod_role == POD_SANDBOX)
        tier_decide(c, "approval gate: none for a pod's sandbox (each of the pod's containers needs its grant)");
    else if (c->def->approval)
        tier_decide(c, "approval gate: create needs a grant in %s (agentcage approve NAME: %s)", c->op->approvals_dir,
                    approval_name_hint(c->config));
    if (c->def->audit)
        tier_decide(c, "audit: every exec is recorded in %s", c->op->audit_log);
    /* a container joining its pod's cage uses the sandbox's proxy */
    if (tier >= 2 && joins_pod)
        return policy_proxy_env_add(c->config, err);
    if (tier >= 2 && policy_hooks_add(c->config, tier, tier_hooks_dir(c->op), c->op, err) < 0)
        return -1;
    return 0;
}

/* The root read-only and private; the config's seccomp profile kept
 * under the tier's, but neither a listener on the host (the runtime would
 * hand the notify fd and the container's state to a socket the bundle
 * names) nor a flag that turns a CPU mitigation off. */
static void map_root_and_seccomp(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val root = tj_get(c->config, "root");
    if (YAJL_IS_OBJECT(root) && !YAJL_IS_TRUE(tj_get(root, "readonly"))) {
        tj_set(root, "readonly", tj_new_bool(true));
        tier_decide(c, "root.readonly: true (the image cannot be changed; write to /workspace or /tmp)");
    }
    yajl_val lx = tj_get(c->config, "linux");
    const char *propagation = tj_get_str(lx, "rootfsPropagation");
    if (propagation && strstr(propagation, "shared"))
        tier_refuse(c, err, "linux.rootfsPropagation %s (mounts would propagate between the container and the host)",
                    propagation);
    yajl_val seccomp = tj_get(lx, "seccomp");
    if (!YAJL_IS_OBJECT(seccomp)) {
        tier_decide(c, "linux.seccomp: the tier's filter (%s) applies", c->def->seccomp);
        return;
    }
    const char *listener = tj_get_str(seccomp, "listenerPath");
    if (listener && *listener)
        tier_refuse(c, err, "linux.seccomp.listenerPath %s (a seccomp agent on the host)", listener);
    yajl_val flags = tj_get(seccomp, "flags");
    for (size_t i = 0; YAJL_IS_ARRAY(flags) && i < flags->u.array.len; i++) {
        yajl_val f = flags->u.array.values[i];
        if (YAJL_IS_STRING(f) && strcmp(f->u.string, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
            tier_refuse(c, err, "linux.seccomp.flags[%zu] SECCOMP_FILTER_FLAG_SPEC_ALLOW (turns off the speculative "
                                "store bypass mitigation)",
                        i);
    }
    tier_decide(c, "linux.seccomp: config.json's profile kept; the tier's filter (%s) is stacked on top, and "
                   "stacked filters can only tighten",
                c->def->seccomp);
}

static void write_annotations(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val annotations = tj_get_object(c->config, "annotations");
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", c->tier);
    tj_set(annotations, "io.agentcage.tier", tj_new_string(buf));
    snprintf(buf, sizeof(buf), "%lld", (long long)c->limits.timeout_ms);
    set_mapping_annotation(c, annotations, "io.agentcage.timeout-ms", buf, err);
    static const char *const roles[] = {[POD_SANDBOX] = "sandbox", [POD_MEMBER] = "container"};
    if (c->pod_role != POD_NONE)
        set_mapping_annotation(c, annotations, "io.agentcage.pod-role", roles[c->pod_role], err);
    set_mapping_annotation(c, annotations, "io.agentcage.landlock-rw", c->landlock_rw ? c->landlock_rw : "", err);
    if (c->protect_roots) {
        set_mapping_annotation(c, annotations, "io.agentcage.protect-roots", c->protect_roots, err);
        tier_decide(c, "annotations: io.agentcage.protect-roots=%s (.git folders pinned, hooks and config read-only; "
                       "no new names at the top of a home)",
                    c->protect_roots);
    } else if (tj_get(annotations, "io.agentcage.protect-roots")) {
        set_mapping_annotation(c, annotations, "io.agentcage.protect-roots", "", err);
        tj_remove(annotations, "io.agentcage.protect-roots");
    }
    if (c->capped_binds) {
        char size[32];
        snprintf(size, sizeof(size), "%lld", (long long)c->limits.workspace);
        set_mapping_annotation(c, annotations, "io.agentcage.capped-binds", c->capped_binds, err);
        set_mapping_annotation(c, annotations, "io.agentcage.bind-cap", size, err);
    } else {
        static const char *const unset[] = {"io.agentcage.capped-binds", "io.agentcage.bind-cap"};
        for (size_t i = 0; i < 2; i++)
            if (tj_get(annotations, unset[i])) {
                set_mapping_annotation(c, annotations, unset[i], "", err);
                tj_remove(annotations, unset[i]);
            }
    }
    if (c->home_roots) {
        cleanup_free char *allow = xstrdup("");
        for (size_t i = 0; i < c->defs->home_dot_allow.n; i++) {
            char *next = xasprintf("%s%s%s", allow, allow[0] ? ":" : "", c->defs->home_dot_allow.v[i]);
            free(allow);
            allow = next;
        }
        if (c->op->home_dot_allow) {
            char *next = xasprintf("%s%s%s", allow, allow[0] ? ":" : "", c->op->home_dot_allow);
            free(allow);
            allow = next;
        }
        set_mapping_annotation(c, annotations, "io.agentcage.home-roots", c->home_roots, err);
        set_mapping_annotation(c, annotations, "io.agentcage.home-allow", allow, err);
        tier_decide(c, "annotations: io.agentcage.home-roots=%s (every dot entry at the top hidden but [%s])",
                    c->home_roots, allow);
    } else {
        static const char *const unset[] = {"io.agentcage.home-roots", "io.agentcage.home-allow"};
        for (size_t i = 0; i < 2; i++)
            if (tj_get(annotations, unset[i])) {
                set_mapping_annotation(c, annotations, unset[i], "", err);
                tj_remove(annotations, unset[i]);
            }
    }
    tier_decide(c, "annotations: io.agentcage.tier=%d, io.agentcage.timeout-ms=%lld, io.agentcage.landlock-rw=%s",
                c->tier, (long long)c->limits.timeout_ms, c->landlock_rw ? c->landlock_rw : "");
}

int tier_map(yajl_val config, const char *bundle, const struct tier_operator *op, struct tier_decisions *d,
             ac_error_t *err)
{
    if (!YAJL_IS_OBJECT(config))
        return ac_error(err, 0, "config.json: expected an object"), -2;
    bool from_default;
    int tier = choose_tier(config, op, &from_default, err);
    if (tier == TIER_NONE)
        return TIER_NONE; /* a plain OCI container: the tree stays as it is */
    if (tier < 0)
        return -2;
    /* Parse once: the mapping and the runtime read the same tree, so no key
     * may have two values a reader could pick differently. */
    cleanup_free char *dup = tj_first_duplicate_key(config);
    if (dup)
        return ac_error(err, 0, "tier %d: config.json: duplicate key %s (a tiered config has one value per key)", tier,
                        dup),
               -2;
    if (!(op->allowed_tiers & (1u << tier))) {
        char list[32];
        format_tier_list(op->allowed_tiers, list, sizeof(list));
        return ac_error(err, 0, "tier %d is not allowed here (--allowed-tiers %s)", tier, list), -2;
    }
    const struct tier_defs *defs;
    if (tier_defs_get(&defs, err) < 0)
        return -2;
    struct tier_ctx c = {.config = config, .tier = tier, .def = &defs->tier[tier], .defs = defs, .op = op, .d = d,
                         .bundle = bundle, .pod_role = tier_pod_role_of(config)};
    tier_decide(&c, "tier %d (%s)%s", tier, c.def->name,
                from_default ? ": no io.agentcage.tier annotation, the operator's --default-tier" : "");
    tier_landlock_add(&c, "/workspace");
    tier_landlock_add(&c, "/tmp");
    /* Each part goes on after a refusal, so that every refusal is listed. */
    tier_map_fields(&c, err);
    check_annotations(&c, err);
    tier_map_limits(&c, err);
    if (c.pod_role == POD_SANDBOX) {
        c.limits.timeout_ms = 0;
        tier_decide(&c, "timeout: none for a pod's sandbox (the pod's containers keep theirs)");
    }
    tier_map_process(&c, err);
    tier_map_namespaces(&c, err);
    tier_map_sysctl(&c, err);
    tier_map_hooks(&c, err);
    tier_map_mounts(&c, err);
    tier_map_devices(&c, err);
    tier_map_resources(&c, err);
    tier_map_credentials(&c, err);
    tier_map_denials(&c, err);
    tier_map_egress(&c, err);
    map_root_and_seccomp(&c, err);
    tier_map_kernel(&c, err);
    if (c.refused == 0 && map_network_and_hooks(&c, tier, err) < 0)
        c.refused++;
    if (c.refused == 0)
        write_annotations(&c, err);
    free(c.landlock_rw);
    free(c.protect_roots);
    free(c.home_roots);
    free(c.capped_binds);
    if (c.refused > 1 && err && *err) {
        char *msg = xasprintf("%s (and %u more: `agentcage policy show` lists them)", (*err)->msg, c.refused - 1);
        free((*err)->msg);
        (*err)->msg = msg;
    }
    return c.refused ? -2 : tier;
}

/* What an approval is bound to: the effective config without what the
 * engine makes anew for each attempt of the same container (its cgroup
 * path, which holds the container id, and the sources of its plumbing
 * files: a kubelet's termination log has a new name each time). The tier
 * mapping checked those; the rest is what the operator approves. */
void tier_approval_digest(yajl_val effective, char out[APPROVAL_DIGEST_LEN + 1])
{
    const struct tier_defs *defs;
    ac_error_t e = NULL;
    if (tier_defs_get(&defs, &e) < 0)
        ac_error_free(&e);
    else {
        tj_remove(tj_get(effective, "linux"), "cgroupsPath");
        yajl_val mounts = tj_get(effective, "mounts");
        for (size_t i = 0; YAJL_IS_ARRAY(mounts) && i < mounts->u.array.len; i++) {
            yajl_val m = mounts->u.array.values[i];
            const char *dest = tj_get_str(m, "destination");
            if (dest && tier_strv_has(&defs->plumbing_mounts, dest))
                tj_remove(m, "source");
        }
    }
    cleanup_free char *text = tier_tree_to_json(effective, false);
    approval_digest(text ? text : "", text ? strlen(text) : 0, out);
}
