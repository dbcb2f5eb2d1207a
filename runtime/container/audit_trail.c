/* Folder runtime/container/ (layer 5): the container lifecycle as a library
 * the verbs call: create.c, lifecycle.c (start, kill, delete, the watchdog),
 * exec.c, state.c (the state directory), audit_trail.c. It calls down into
 * runtime/linux/ (the kernel work), runtime/cgroup/, the tier mapping,
 * spec/, hooks/ (audit, approvals) and runtime/util/; never up into cli/. */
/* The runtime's own records in the audit trail (container-created,
 * -started, exec, exit, refused, timeout-kill ...): one place, so that a
 * failure to write one is reported the same way everywhere. */
#include "hooks/audit.h"
#include "runtime/container/container.h"
#include "runtime/util/utils.h"

void container_audit(const struct global_opts *g, const char *event, const char *id, const char *members)
{
    ac_error_t e = NULL;
    if (audit_append(g->tier.audit_log, event, id, members, &e) < 0) {
        ac_warn("audit: %s", e->msg);
        ac_error_free(&e);
    }
}
