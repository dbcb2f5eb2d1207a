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
 *   ROOT/ID/gvisor-uid_map,    a pod sandbox's: its user namespace's maps,
 *   ROOT/ID/gvisor-gid_map     which the pod's containers run in too
 *   ROOT/ID/pod-sandbox        a pod's container's: the id of the pod's
 *                              sandbox, whose runsc sandbox it runs in
 *   ROOT/ID/started.fifo       a pod's container's, until start: its keeper
 *                              answers start's go on exec.fifo there
 *
 * A pod is one sandbox: the pod's sandbox (pause) container makes the runsc
 * sandbox; each of the pod's containers is created into it (runsc reads
 * io.kubernetes.cri.container-type and sandbox-id) with the sandbox's
 * runsc --root and user namespace. Its process for the engine is a keeper
 * of agentcage's in the pod's cgroup: it runs `runsc start` with the
 * container's stdio, then `runsc wait`, and exits with the container's
 * status; killed (the watchdog's timeout, delete), it takes the container
 * inside gVisor along (a guard child runs `runsc kill --all`).
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
    bool run_now;               /* `run` with nothing to do between create and start (no prestart or
                                 * createRuntime hook, no approval to use): one `runsc run --detach` */
    /* a pod's container: the pod's sandbox it is created into */
    const char *pod_sandbox;    /* its id */
    const char *pod_state_dir;  /* ROOT/SANDBOX-ID */
    const char *pod_cgroup;     /* its cgroup, where the container's helpers run */
    pid_t pod_pid;              /* its sandbox process (in the pod's user namespace) */
    struct oci_idmap pod_maps[2][8]; /* storage for uid_map/gid_map read from the pod */
};
/* A tier's credentials under gVisor: the secrets as files of a tmpfs at
 * ROOT/ID/secrets (0500, files 0400, the container root's), and the
 * mapping's /run/secrets tmpfs made a read-only bind of it, which runsc's
 * gofer serves (a file the expirer removes there is gone inside too). */
struct credential_secret;
int gvisor_secrets(const char *state_dir, struct oci_spec *spec, struct credential_secret *secrets, size_t n,
                   uint32_t uid, uint32_t gid, ac_error_t *err);

/* A pod's container: the pod's user namespace maps (uid_map, gid_map and
 * root_uid/gid of a), as its sandbox's create recorded them. */
int gvisor_pod_ids(struct gvisor_create_args *a, ac_error_t *err);
/* A container's state says it is a pod's container under gVisor. */
bool gvisor_is_pod_member(const struct container_state *st);
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
 * and the credentials' tmpfs unmounted, the sandbox's folder removed (left, with a warning, when a
 * view cannot be unmounted). */
void gvisor_remove_sandbox(const char *state_dir);
/* At delete of a pod's container: `runsc delete --force` of it in the
 * pod's sandbox (its processes inside gVisor, its gofer, runsc's state of
 * it), while that sandbox lives. */
void gvisor_delete_member(const struct global_opts *g, const char *id);
/* A verb runsc answers in runc's format (kill, ps, events): runsc with the
 * container's flags and argv (argv[0] the verb), its status returned. */
int gvisor_forward(const struct global_opts *g, const struct container_state *st, int argc, char **argv,
                   ac_error_t *err);

#endif
