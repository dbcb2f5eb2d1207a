/* What tiers 2 and 3 add to a container's config.json, for the tier
 * mapping to call on the yajl tree it rewrites:
 *   tier >= 2: createRuntime hook agentcage-egress (the allowlist proxy,
 *              listening on 127.0.0.1:3128 inside the container's netns),
 *              poststop hook `agentcage-egress --stop`, and HTTP_PROXY,
 *              HTTPS_PROXY, http_proxy, https_proxy, NO_PROXY, no_proxy in
 *              process.env (replacing any the config had).
 * Tier 3's approval gate is the runtime's own (create checks the grant
 * before anything is made or any hook runs). Our hook goes first in
 * createRuntime. It reads the allowlist (io.agentcage.egress) and limits
 * from the annotations in the state on its stdin; the operator's settings
 * (max-denials, egress.allow-cidr, egress.deep-wildcards, egress.ask and
 * its timeout, the approvals directory) are its flags. */
#ifndef AGENTCAGE_POLICY_HOOKS_H
#define AGENTCAGE_POLICY_HOOKS_H

#include <stdbool.h>

#include "runtime/util/error.h"
#include "tier-annotations/tier.h"

#define EGRESS_PROXY_PORT 3128
#define EGRESS_PROXY_URL "http://127.0.0.1:3128"

/* The environment a tier-2/3 process gets ("NAME=value", NULL-ended): the
 * init through process.env, every exec through the runtime. */
extern const char *const policy_proxy_env[];
/* Is entry ("NAME=value" or "NAME") one of policy_proxy_env's names? */
bool policy_proxy_env_name(const char *entry);
#define APPROVALS_DEFAULT_DIR "/var/lib/agentcage/approvals"

/* Edit config (a parsed config.json object) in place; new nodes are
 * malloc'd like yajl_tree's own, so yajl_tree_free frees them. hooks_dir is
 * where agentcage-egress lives (NULL: helpers_default_dir(), see
 * runtime/util/helpers.h). op may be NULL (defaults). Tiers
 * below 2 add nothing. */
int policy_hooks_add(yajl_val config, int tier, const char *hooks_dir, const struct tier_operator *op,
                     ac_error_t *err);

/* Only the proxy variables in process.env (tier >= 2 containers that join
 * their pod's cage, whose sandbox runs the proxy). */
int policy_proxy_env_add(yajl_val config, ac_error_t *err);

#endif
