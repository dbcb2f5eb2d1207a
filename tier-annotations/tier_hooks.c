/* The bundle's OCI hooks at a tier. prestart, createRuntime and poststop
 * hooks run on the host as root outside every namespace of the container,
 * createContainer and startContainer with the runtime's privileges: a
 * hook a bundle brings is its author's code on the host. At a tier the only
 * hooks are the tier's own (added later by policy_hooks_add) and programs
 * the operator names in --allowed-hooks; every other one is refused. */
#include <string.h>

#include "hooks/policy_hooks.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

static const char *const hook_stages[] = {"prestart", "createRuntime", "createContainer",
                                          "startContainer", "poststart", "poststop"};

/* One of the tier's own hook programs (an effective config maps to itself:
 * they are dropped here and put back by policy_hooks_add). */
static bool tier_own_hook(const char *hooks_dir, const char *path)
{
    static const char *const own[] = {"agentcage-egress", "agentcage-approve"};
    size_t n = strlen(hooks_dir);
    if (strncmp(path, hooks_dir, n) != 0 || path[n] != '/')
        return false;
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (strcmp(path + n + 1, own[i]) == 0)
            return true;
    return false;
}

/* Docker's hook for its bridge and user-defined networks: a prestart hook
 * (`/proc/<dockerd>/exe`, argv[0] `libnetwork-setkey`) through which the
 * container's pid reaches dockerd, which then moves a veth into the
 * container's network namespace as eth0 with a default route. Without it
 * dockerd starts the container as before and plumbs nothing: the veth pair
 * stays in dockerd's namespace until stop, and a later `docker network
 * connect` plumbs nothing either (docs/engines.md has what was tried). So it
 * is dropped, never run, whatever its path. */
static bool docker_setkey_hook(yajl_val hook)
{
    yajl_val args = tj_get(hook, "args");
    return YAJL_IS_ARRAY(args) && args->u.array.len > 0 && YAJL_IS_STRING(args->u.array.values[0]) &&
           strcmp(args->u.array.values[0]->u.string, "libnetwork-setkey") == 0;
}

int tier_map_hooks(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val hooks = tj_get(c->config, "hooks");
    if (hooks == NULL || YAJL_IS_NULL(hooks))
        return 0;
    if (!YAJL_IS_OBJECT(hooks))
        return tier_reject(c, err, "hooks: expected an object");
    const char *hooks_dir = tier_hooks_dir(c->op);
    int ret = 0;
    for (size_t k = 0; k < hooks->u.object.len; k++) {
        bool known = false;
        for (size_t s = 0; s < sizeof(hook_stages) / sizeof(hook_stages[0]); s++)
            known |= strcmp(hooks->u.object.keys[k], hook_stages[s]) == 0;
        if (!known && !YAJL_IS_NULL(hooks->u.object.values[k]))
            ret = tier_refuse(c, err, "config.json field hooks.%s (not one a tier accepts)", hooks->u.object.keys[k]);
    }
    for (size_t s = 0; s < sizeof(hook_stages) / sizeof(hook_stages[0]); s++) {
        yajl_val list = tj_get(hooks, hook_stages[s]);
        if (list == NULL || YAJL_IS_NULL(list))
            continue;
        if (!YAJL_IS_ARRAY(list)) {
            ret = tier_reject(c, err, "hooks.%s: expected an array", hook_stages[s]);
            continue;
        }
        /* i: in the tree as it shrinks; in: in the input config.json */
        for (size_t i = 0, in = 0; i < list->u.array.len; in++) {
            const char *path = tj_get_str(list->u.array.values[i], "path");
            if (path && tier_own_hook(hooks_dir, path)) {
                tj_remove_at(list, i);
                continue;
            }
            if (strcmp(hook_stages[s], "prestart") == 0 && docker_setkey_hook(list->u.array.values[i])) {
                tier_decide(c, "hooks.prestart[%zu] %s libnetwork-setkey: dropped (Docker would move its bridge's "
                               "veth into the cage; the address and published ports docker inspect shows lead "
                               "nowhere)",
                            in, path ? path : "(no path)");
                tj_remove_at(list, i);
                continue;
            }
            if (path && list_has(c->op->allowed_hooks, ':', path))
                tier_decide(c, "hooks.%s[%zu] %s: kept (the operator's --allowed-hooks)", hook_stages[s], in, path);
            else
                ret = tier_refuse(c, err,
                                  "hooks.%s[%zu] %s (a bundle's hook runs on the host; only the tier's own and the "
                                  "operator's --allowed-hooks run at a tier)",
                                  hook_stages[s], in, path ? path : "without a path");
            i++;
        }
    }
    return ret;
}
