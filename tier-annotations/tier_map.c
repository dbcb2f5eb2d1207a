/* The tier mapping: (config.json tree, operator settings) -> (effective
 * config.json tree, decisions). Pure: it edits the tree and never touches the
 * kernel. The pieces by concern: tier_resources.c (limits and cgroups),
 * tier_process.c (capabilities, no_new_privs, environment, namespaces),
 * tier_mounts.c (mounts, masked paths, devices). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/utils.h"
#include "tier_internal.h"
#include "../hooks/policy_hooks.h"

void tier_decisions_free(struct tier_decisions *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->lines[i]);
    free(d->lines);
    d->lines = NULL;
    d->n = 0;
}

void tier_decide(struct tier_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = xvasprintf(fmt, ap);
    va_end(ap);
    if (line == NULL)
        return;
    c->d->lines = xrealloc(c->d->lines, (c->d->n + 1) * sizeof(*c->d->lines));
    c->d->lines[c->d->n++] = line;
}

int tier_refuse(struct tier_ctx *c, ac_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    ac_error(err, 0, "tier %d forbids %s", c->tier, what ? what : "this config");
    free(what);
    return -1;
}

void tier_landlock_add(struct tier_ctx *c, const char *path)
{
    if (strchr(path, ':')) {
        /* the list is colon-separated: such a path stays unwritable */
        tier_decide(c, "landlock: %s has a `:` and stays read-only under Landlock", path);
        return;
    }
    /* each entry once */
    size_t n = strlen(path);
    for (const char *p = c->landlock_rw; p && *p;) {
        const char *end = strchrnul(p, ':');
        if ((size_t)(end - p) == n && strncmp(p, path, n) == 0)
            return;
        p = *end ? end + 1 : end;
    }
    char *joined = c->landlock_rw ? xasprintf("%s:%s", c->landlock_rw, path) : xstrdup(path);
    free(c->landlock_rw);
    c->landlock_rw = joined;
}

void tier_protect_add(struct tier_ctx *c, const char *dest, bool home)
{
    if (strchr(dest, ':') || strchr(dest, '='))
        return; /* cannot be listed; Landlock keeps it read-only anyway */
    char *entry = xasprintf("%s%s", dest, home ? "=home" : "");
    char *joined = c->protect_roots ? xasprintf("%s:%s", c->protect_roots, entry) : xstrdup(entry);
    free(entry);
    free(c->protect_roots);
    c->protect_roots = joined;
}

static void format_tier_list(unsigned bits, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int t = 0; t < TIER_COUNT && off < len; t++)
        if (bits & (1u << t))
            off += snprintf(buf + off, len - off, "%s%d", off ? "," : "", t);
}

/* Which tier, from the annotation or the operator's default. */
static int choose_tier(yajl_val config, const struct tier_operator *op, bool *from_default, ac_error_t *err)
{
    yajl_val annotations = tj_get(config, "annotations");
    yajl_val v = tj_get(annotations, "io.agentcage.tier");
    *from_default = false;
    if (v == NULL) {
        *from_default = op->default_tier != TIER_NONE;
        return op->default_tier;
    }
    int tier = YAJL_IS_STRING(v) ? tier_parse_name(v->u.string) : -1;
    if (tier < 0)
        return ac_error(err, 0, "annotation io.agentcage.tier: expected 0|read, 1|write, 2|network or 3|irreversible, got `%s`",
                        YAJL_IS_STRING(v) ? v->u.string : "a non-string");
    return tier;
}

/* Tier 2 and 3 hook points. The egress proxy (tier 2) and the approval gate
 * and exec audit (tier 3) are OCI hooks of their own issue; until they are
 * wired here the container keeps the empty network namespace, which is the
 * safe side of both. */
static int map_network_and_hooks(struct tier_ctx *c, int tier, ac_error_t *err)
{
    if (strcmp(c->def->network, "egress-proxy") == 0) {
        const char *egress = tj_get_str(tj_get(c->config, "annotations"), "io.agentcage.egress");
        tier_decide(c, "network: loopback only; egress to [%s] through the agentcage-egress proxy on 127.0.0.1:%d "
                       "(HTTP_PROXY/HTTPS_PROXY set), names resolved by the proxy, no DNS inside",
                    egress ? egress : "nothing: no io.agentcage.egress hosts", EGRESS_PROXY_PORT);
    } else {
        tier_decide(c, "network: none (a new network namespace with loopback only)");
    }
    if (c->def->approval)
        tier_decide(c, "hooks: approval gate: create needs a grant in %s (agentcage approve ID)", c->op->approvals_dir);
    if (c->def->audit)
        tier_decide(c, "audit: every exec is recorded in %s", c->op->audit_log);
    if (tier >= 2 && policy_hooks_add(c->config, tier, c->op->hooks_dir, c->op, err) < 0)
        return -1;
    return 0;
}

static void map_root_and_seccomp(struct tier_ctx *c)
{
    yajl_val root = tj_get(c->config, "root");
    if (YAJL_IS_OBJECT(root) && !YAJL_IS_TRUE(tj_get(root, "readonly"))) {
        tj_set(root, "readonly", tj_new_bool(true));
        tier_decide(c, "root.readonly: true (the image cannot be changed; write to /workspace or /tmp)");
    }
    yajl_val seccomp = tj_get(tj_get(c->config, "linux"), "seccomp");
    if (YAJL_IS_OBJECT(seccomp))
        tier_decide(c, "linux.seccomp: config.json's profile kept; the tier's filter (%s) is stacked on top, and "
                       "stacked filters can only tighten",
                    c->def->seccomp);
    else
        tier_decide(c, "linux.seccomp: the tier's filter (%s) applies", c->def->seccomp);
}

static void write_annotations(struct tier_ctx *c)
{
    yajl_val annotations = tj_get_object(c->config, "annotations");
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", c->tier);
    tj_set(annotations, "io.agentcage.tier", tj_new_string(buf));
    snprintf(buf, sizeof(buf), "%lld", (long long)c->limits.timeout_ms);
    tj_set(annotations, "io.agentcage.timeout-ms", tj_new_string(buf));
    tj_set(annotations, "io.agentcage.landlock-rw", tj_new_string(c->landlock_rw ? c->landlock_rw : ""));
    if (c->protect_roots) {
        tj_set(annotations, "io.agentcage.protect-roots", tj_new_string(c->protect_roots));
        tier_decide(c, "annotations: io.agentcage.protect-roots=%s (.git folders pinned, hooks and config read-only; "
                       "no new names at the top of a home)",
                    c->protect_roots);
    }
    tier_decide(c, "annotations: io.agentcage.tier=%d, io.agentcage.timeout-ms=%lld, io.agentcage.landlock-rw=%s",
                c->tier, (long long)c->limits.timeout_ms, c->landlock_rw ? c->landlock_rw : "");
}

int tier_map(yajl_val config, const struct tier_operator *op, struct tier_decisions *d, ac_error_t *err)
{
    if (!YAJL_IS_OBJECT(config))
        return ac_error(err, 0, "config.json: expected an object"), -2;
    bool from_default;
    int tier = choose_tier(config, op, &from_default, err);
    if (tier == TIER_NONE)
        return TIER_NONE; /* a plain OCI container: the tree stays as it is */
    if (tier < 0)
        return -2;
    if (!(op->allowed_tiers & (1u << tier))) {
        char list[32];
        format_tier_list(op->allowed_tiers, list, sizeof(list));
        return ac_error(err, 0, "tier %d is not allowed here (--allowed-tiers %s)", tier, list), -2;
    }
    const struct tier_defs *defs;
    if (tier_defs_get(&defs, err) < 0)
        return -2;
    struct tier_ctx c = {
        .config = config, .tier = tier, .def = &defs->tier[tier], .defs = defs, .op = op, .d = d};
    tier_decide(&c, "tier %d (%s)%s", tier, c.def->name,
                from_default ? ": no io.agentcage.tier annotation, the operator's --default-tier" : "");
    tier_landlock_add(&c, "/workspace");
    tier_landlock_add(&c, "/tmp");
    int ret = -2;
    if (tier_map_limits(&c, err) < 0 || tier_map_process(&c, err) < 0 || tier_map_namespaces(&c, err) < 0 ||
        tier_map_mounts(&c, err) < 0 || tier_map_devices(&c, err) < 0 || tier_map_resources(&c, err) < 0)
        goto out;
    map_root_and_seccomp(&c);
    if (map_network_and_hooks(&c, tier, err) < 0) {
        ret = -2;
        goto out;
    }
    write_annotations(&c);
    ret = tier;
out:
    free(c.landlock_rw);
    free(c.protect_roots);
    return ret;
}
