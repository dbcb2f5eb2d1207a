/* The kernel a tier's container runs on: the host's, behind namespaces,
 * seccomp and Landlock, or gVisor's user-space kernel (runsc), with the same
 * cage on top. The operator requires gVisor for a tier (kernel-for-tier =
 * 3:gvisor); a bundle may ask for it (io.agentcage.kernel: gvisor) and never
 * for less than the operator requires: the annotation only tightens. */
#include <string.h>

#include "tier-annotations/tier_internal.h"

bool tier_kernel_is_gvisor(const char *kernel_annotation)
{
    return kernel_annotation && strcmp(kernel_annotation, "gvisor") == 0;
}

int tier_map_kernel(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val annotations = tj_get(c->config, "annotations");
    const char *asked = tj_get_str(annotations, "io.agentcage.kernel");
    bool required = (c->op->gvisor_tiers >> c->tier) & 1u;
    if (asked && strcmp(asked, "gvisor") != 0 && strcmp(asked, "linux") != 0)
        return tier_reject(c, err, "annotation io.agentcage.kernel: expected gvisor or linux, got `%s`", asked);
    if (asked && strcmp(asked, "linux") == 0 && required)
        return tier_refuse(c, err,
                           "io.agentcage.kernel=linux: the operator runs tier %d under gVisor (kernel-for-tier "
                           "%d:gvisor); a bundle may only ask for the stronger boundary",
                           c->tier, c->tier);
    c->gvisor = required || tier_kernel_is_gvisor(asked);
    if (!c->gvisor)
        return 0;
    /* A pod is one sandbox: its sandbox (pause) container makes the runsc
     * sandbox, each of its containers is added into it (runsc's own
     * io.kubernetes.cri.container-type / sandbox-id annotations, kept in
     * the config runsc gets); create checks that the sandbox a container
     * names is a live gVisor pod sandbox of agentcage's with this tier's
     * network. */
    tj_set(tj_get_object(c->config, "annotations"), "io.agentcage.kernel", tj_new_string("gvisor"));
    tier_decide(c,
                "kernel: gVisor (%s --platform=%s): the workload's system calls are served by gVisor's user-space "
                "kernel, not the host's (%s); the limits hold for the whole sandbox, whose pids limit is twice "
                "linux.resources.pids and 64 more for gVisor's own threads",
                c->op->runsc, c->op->runsc_platform,
                required ? "the operator's kernel-for-tier" : "io.agentcage.kernel");
    return 0;
}
