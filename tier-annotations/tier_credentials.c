/* Task-scoped credentials (io.agentcage.credentials: NAME[=TTL],...): each
 * from a broker the operator configured for the tier (credential.NAME in
 * agentcage.conf), for at most the container's lifetime. The mapping
 * checks the request and adds the tmpfs the secrets live in,
 * /run/secrets (on top of every other mount there); the runtime calls the
 * brokers, the init writes each secret as /run/secrets/NAME (mode 0400,
 * the container root's), never into the environment, argv, state or
 * logs, and the runtime revokes it at its ttl or at delete. */
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

int tier_map_credentials(struct tier_ctx *c, ac_error_t *err)
{
    const char *list = tj_get_str(tj_get(c->config, "annotations"), "io.agentcage.credentials");
    if (list == NULL)
        return 0;
    const char *pos = list;
    char name[64], b[32], b2[32];
    int64_t ttl;
    int r, ret = 0;
    size_t n = 0;
    cleanup_free char *names = NULL;
    while ((r = tier_credentials_next(&pos, name, &ttl, err)) != 0) {
        if (r < 0) {
            c->refused++;
            tier_decide(c, "refused: %s", (*err)->msg);
            return -1;
        }
        const struct tier_credential *cred = tier_credential_find(c->op, name);
        if (cred == NULL || cred->broker == NULL) {
            ret = tier_refuse(c, err, "credential %s (io.agentcage.credentials): the operator has no broker for it "
                                      "(credential.%s in agentcage.conf)",
                              name, name);
            continue;
        }
        if (!(cred->tiers & (1u << c->tier))) {
            ret = tier_refuse(c, err, "credential %s (io.agentcage.credentials): not for this tier "
                                      "(credential.%s.tiers)",
                              name, name);
            continue;
        }
        if (ttl > c->limits.timeout_ms) {
            ret = tier_refuse(c, err, "credential %s=%s: longer than the container's timeout %s", name,
                              tier_format_duration(ttl, b, sizeof(b)),
                              tier_format_duration(c->limits.timeout_ms, b2, sizeof(b2)));
            continue;
        }
        char *joined = names ? xasprintf("%s, %s", names, name) : xstrdup(name);
        free(names);
        names = joined;
        n++;
    }
    if (ret < 0 || n == 0)
        return ret;
    yajl_val mounts = tj_get_array(c->config, "mounts");
    size_t len = mounts->u.array.len;
    for (size_t i = 0; i < len; i++) {
        const char *dest = tj_get_str(mounts->u.array.values[i], "destination");
        if (dest && strncmp(dest, "/run/secrets", 12) == 0 && (dest[12] == '\0' || dest[12] == '/')) {
            /* ours, last, from mapping this config before: as it was */
            if (i == len - 1 && strcmp(dest, "/run/secrets") == 0 &&
                strcmp(tj_get_str(mounts->u.array.values[i], "type") ?: "", "tmpfs") == 0)
                goto decided;
            return tier_refuse(c, err, "a mount on %s (mounts[%zu]) with io.agentcage.credentials: the secrets' "
                                       "place is the runtime's",
                               dest, i);
        }
    }
    yajl_val m = tj_new_object();
    tj_set(m, "destination", tj_new_string("/run/secrets"));
    tj_set(m, "type", tj_new_string("tmpfs"));
    tj_set(m, "source", tj_new_string("tmpfs"));
    yajl_val options = tj_new_array();
    static const char *const opts[] = {"nosuid", "nodev", "noexec", "mode=0711", "size=1m"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        tj_push(options, tj_new_string(opts[i]));
    tj_set(m, "options", options);
    tj_push(mounts, m);
decided:
    tier_decide(c, "credentials: %s from the operator's brokers, as files in /run/secrets (a new tmpfs, last of "
                   "the mounts), revoked at their ttl or at delete",
                names);
    return 0;
}
