/* The egress proxy's annotations and the denials limit, checked at the
 * mapping so that a refusal names the annotation before anything starts:
 *   io.agentcage.egress      the allowlist; "**." entries only where the
 *                            operator allows them (egress.deep-wildcards);
 *   io.agentcage.egress-ask  true|false: hold requests to other hosts for
 *                            the operator, at tiers 2 and 3 where the
 *                            operator allows it (egress.ask);
 *   io.agentcage.max-denials the denials (seccomp, the proxy) before the
 *                            watchdog kills, at most the operator's
 *                            max-denials; written back as the effective
 *                            count for the runtime and the proxy. */
#include <stdio.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"
#include "hooks/egress_parse.h"

int tier_map_denials(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val annotations = tj_get(c->config, "annotations");
    const char *v = tj_get_str(annotations, "io.agentcage.max-denials");
    int64_t ceiling = c->op->max_denials, eff = ceiling;
    if (v) {
        uint64_t n;
        if (parse_uint64(v, &n) < 0 || n == 0 || n > INT32_MAX)
            return tier_reject(c, err, "annotation io.agentcage.max-denials: expected a positive number, got `%s`", v);
        if (ceiling > 0 && (int64_t)n > ceiling)
            return tier_refuse(c, err, "io.agentcage.max-denials=%s: above the operator's max-denials %lld", v,
                               (long long)ceiling);
        eff = (int64_t)n;
    }
    if (eff > 0) {
        char buf[24];
        snprintf(buf, sizeof(buf), "%lld", (long long)eff);
        tj_set(tj_get_object(c->config, "annotations"), "io.agentcage.max-denials", tj_new_string(buf));
        tier_decide(c, "denials: the container is killed at its %lld%s refused syscall or egress request "
                       "(io.agentcage.max-denials)",
                    (long long)eff, eff == 1 ? "st" : eff == 2 ? "nd" : eff == 3 ? "rd" : "th");
    } else {
        tier_decide(c, "denials: counted, never a reason to kill (the operator's max-denials is 0)");
    }
    return 0;
}

int tier_map_egress(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val annotations = tj_get(c->config, "annotations");
    const char *allow = tj_get_str(annotations, "io.agentcage.egress");
    const char *ask = tj_get_str(annotations, "io.agentcage.egress-ask");
    bool proxy = tier_has_egress_proxy(c->tier);
    if (ask && strcmp(ask, "true") != 0 && strcmp(ask, "false") != 0)
        return tier_reject(c, err, "annotation io.agentcage.egress-ask: expected true or false, got `%s`", ask);
    if (ask && strcmp(ask, "true") == 0) {
        if (!proxy)
            return tier_refuse(c, err, "io.agentcage.egress-ask (no egress proxy here: tiers 2 and 3 have one)");
        if (!c->op->egress_ask)
            return tier_refuse(c, err, "io.agentcage.egress-ask (the operator does not allow holding requests: "
                                       "egress.ask in agentcage.conf)");
        tier_decide(c, "egress: a request to a host outside the allowlist is held for the operator for %llds "
                       "(agentcage pending, approve ID --egress HOST, deny ID --egress HOST)",
                    (long long)(c->op->egress_ask_timeout_ms / 1000));
    }
    if (proxy && (c->op->egress_max_rate > 0 || c->op->egress_max_bytes > 0))
        tier_decide(c, "egress: the operator's ceilings %lld bytes/s, %lld bytes in all (egress.max-rate, "
                       "egress.max-bytes; io.agentcage.egress-rate and -bytes may only go lower)",
                    (long long)(c->op->egress_max_rate > 0 ? c->op->egress_max_rate : (int64_t)EGRESS_DEFAULT_RATE),
                    (long long)(c->op->egress_max_bytes > 0 ? c->op->egress_max_bytes : (int64_t)EGRESS_DEFAULT_BYTES));
    if (!proxy || !allow)
        return 0;
    struct egress_allowlist list;
    ac_error_t e = NULL;
    if (egress_allowlist_parse(allow, c->op->egress_deep_wildcards ? EGRESS_HOST_DEEP_WILDCARD : 0, &list, &e) < 0) {
        tier_reject(c, err, "annotation %s", e->msg);
        ac_error_free(&e);
        return -1;
    }
    egress_allowlist_free(&list);
    if (c->op->egress_allow_cidr)
        tier_decide(c, "egress: the operator allows connecting to %s although special (egress.allow-cidr)",
                    c->op->egress_allow_cidr);
    return 0;
}
