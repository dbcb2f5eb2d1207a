/* A tier's container under gVisor (gvisor.c): agentcage maps the tier,
 * gates and records it as at every tier, and has runsc run the sandbox
 * under the container's own state directory:
 *
 *   ROOT/ID/runsc.args         runsc and its global flags, one per line (the
 *                              same for every later verb; its presence marks
 *                              the container as gVisor's)
 *   ROOT/ID/sandbox            a symlink to /run/agentcage-gvisor/XXXXXX (0711,
 *                              reachable by the container's root on the host
 *                              whatever the engine's state root allows):
 *                              runsc's bundle (config.json for runsc), its
 *                              --root (state, lock, control socket), and the
 *                              views it opens: rootfs and m-N, bind mounts of
 *                              the rootfs and of each bind source
 */
#ifndef AGENTCAGE_GVISOR_H
#define AGENTCAGE_GVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/container/container.h"

/* runsc is there, root's, and has booted a sandbox on this host with the
 * operator's platform (once per runsc binary and platform, remembered in
 * /run/agentcage-gvisor-checked). Otherwise the container is refused: a tier that
 * asks for gVisor never runs without it. */
int gvisor_check(const struct global_opts *g, int tier, ac_error_t *err);

struct gvisor_create_args {
    const char *id;
    const char *state_dir;      /* ROOT/ID, made and locked by create */
    const char *rootfs;         /* absolute */
    const char *config_text;    /* the effective config.json */
    size_t config_len;
    struct oci_spec *spec;      /* the same, parsed (bind sources rewritten to the sandbox's views) */
    const char *cgroup_path;    /* the cgroup create made (runsc joins it), or NULL */
    int tier;
    uint32_t root_uid, root_gid; /* the container's root on the host: its user namespace's */
    const struct oci_idmap *uid_map, *gid_map; /* that user namespace, in which runsc runs */
    size_t n_uid_map, n_gid_map;
    const char *console_socket;
    bool foreground;            /* `run`: the sandbox is reparented to us, who wait for it */
};
/* runsc create, run as root of the container's user namespace (a slice
 * of unprivileged host ids, as at every tier) and in its cgroup, so that
 * the sandbox, its gofer and everything they start are neither host root
 * nor outside the tier's limits: the sandbox, waiting for start. *pid is
 * the sandbox's process (the container's pid for the engine: it exits with
 * the workload's status). */
int gvisor_create(const struct global_opts *g, const struct gvisor_create_args *a, pid_t *pid, ac_error_t *err);
/* runsc start. */
int gvisor_start(const struct global_opts *g, const struct container_state *st, ac_error_t *err);
/* runsc exec of process (the tier's rules applied by container_exec);
 * res->pid is the process to wait for (it exits with the process's
 * status). */
int gvisor_exec(const struct global_opts *g, const struct container_state *st, const struct oci_process *process,
                const struct exec_options *o, struct exec_result *res, ac_error_t *err);
/* Kill everything in a sandbox's cgroup (the sentry, the gofer, their
 * stubs: none of them the runtime's children) and wait, bounded, until it
 * is empty, so the cgroup can be removed. */
void gvisor_kill_sandbox(const char *cgroup_path);
/* At delete and create's rollback, once the sandbox is dead: the views
 * unmounted, the sandbox's folder removed (left, with a warning, when a
 * view cannot be unmounted). */
void gvisor_remove_sandbox(const char *state_dir);
/* A verb runsc answers in runc's format (kill, ps, events): runsc with the
 * container's flags and argv (argv[0] the verb), its status returned. */
int gvisor_forward(const struct global_opts *g, const struct container_state *st, int argc, char **argv,
                   ac_error_t *err);

#endif
