/* The tier mapping (placeholder: being written). */
#include <stdlib.h>

#include "tier.h"

void tier_decisions_free(struct tier_decisions *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->lines[i]);
    free(d->lines);
    d->lines = NULL;
    d->n = 0;
}

int tier_map(yajl_val config, const struct tier_operator *op, struct tier_decisions *d, ac_error_t *err)
{
    return TIER_NONE;
}

char *tier_tree_to_json(yajl_val v, bool pretty)
{
    return NULL;
}
