/* Operator settings for tiers: global flags and /etc/agentcage/agentcage.conf.
 * (placeholder: being written) */
#include <string.h>

#include "tier.h"

void tier_operator_init(struct tier_operator *op)
{
    memset(op, 0, sizeof(*op));
    op->default_tier = TIER_NONE;
    op->allowed_tiers = 0xf;
    op->audit_log = "/var/log/agentcage/audit.jsonl";
    op->approvals_dir = "/etc/agentcage/approvals";
}

int tier_operator_set(struct tier_operator *op, const char *name, const char *value, ac_error_t *err)
{
    return 0;
}

int tier_operator_load_file(struct tier_operator *op, const char *path, ac_error_t *err)
{
    return 0;
}
