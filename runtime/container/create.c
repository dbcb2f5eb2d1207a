/* create: the runtime's side of setting up a container.
 *
 * No re-exec: the runtime clones the container's init directly, maps its
 * ids, puts it in its cgroup, runs the runtime-namespace hooks while the
 * child waits, records the state and returns. The child blocks on the exec
 * fifo until `start`. Any failure rolls back everything made so far. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "hooks/approvals.h"
#include "hooks/audit.h"
#include "hooks/hook_state.h"
#include "runtime/cgroup/cgroup.h"
#include "runtime/container/container.h"
#include "runtime/container/gvisor.h"
#include "runtime/linux/hooks.h"
#include "runtime/linux/init.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/process.h"
#include "runtime/linux/rootfs.h"
#include "runtime/linux/rootless.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/linux/userns.h"
#include "runtime/util/selinux.h"
#include "runtime/util/utils.h"

/* What create has made so far, for the rollback. */
struct create_ctx {
    const struct global_opts *g;
    const char *id;
    char *state_dir;
    bool state_dir_made;
    char *cgroup_path;
    bool cgroup_made;  /* the container has a cgroup */
    bool cgroup_ours;  /* this create made it: the rollback removes it */
    pid_t child;
    pid_t watchdog; /* `run`'s, started during create (our child) */
    int userns_slice; /* the tier's claim on a slice of host ids, -1: none */
    uid_t root_uid;   /* the container's root as the host knows it */
    gid_t root_gid;
    bool credentials_issued;
    bool overlays;    /* bind overlays may exist under the state directory */
    int notify_fd;    /* the tier filter's listener in the init (its fd number), 0: none */
    char *denials_env; /* AGENTCAGE_DENIALS=... for the hooks */
    bool gvisor;      /* a sandbox of runsc's: killed through its cgroup */
};

static void rollback(struct create_ctx *c)
{
    /* the watchdog first, and reaped: it writes into the state dir as the
     * init dies */
    if (c->watchdog > 0) {
        kill(c->watchdog, SIGKILL);
        waitpid(c->watchdog, NULL, 0);
    }
    if (c->child > 0) {
        kill(c->child, SIGKILL);
        waitpid(c->child, NULL, 0);
    }
    ac_error_t ignore = NULL;
    /* runsc's sandbox: the sentry, the gofer and their stubs, none ours */
    if (c->gvisor && c->cgroup_ours)
        gvisor_kill_sandbox(c->cgroup_path);
    if (c->gvisor && c->state_dir) {
        gvisor_delete_member(c->g, c->id); /* a pod's container: out of the pod's sandbox */
        gvisor_remove_sandbox(c->state_dir);
    }
    if (c->cgroup_ours && cgroup_destroy(c->cgroup_path, &ignore) < 0) {
        ac_warn("rollback: %s", ignore->msg);
        ac_error_free(&ignore);
    }
    if (c->credentials_issued && c->state_dir)
        credentials_revoke_all(c->g, c->state_dir, c->id, "create-failed");
    if (c->overlays && c->state_dir)
        bind_overlays_finish(c->g, c->state_dir, c->id, false, false);
    if (c->state_dir_made && state_remove(c->g, c->id, &ignore) < 0) {
        ac_warn("rollback: %s", ignore->msg);
        ac_error_free(&ignore);
    }
    userns_slice_release(c->g->root, c->id, c->userns_slice);
}

static int write_id_map(pid_t pid, const char *file, const struct oci_idmap *m, size_t n, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("/proc/%d/%s", pid, file);
    cleanup_free char *buf = xmalloc(n * 40 + 1);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(buf + len, "%u %u %u\n", m[i].container_id, m[i].host_id, m[i].size);
    if (write_file(path, buf, len, err) < 0)
        return ac_error_wrap(err, "linux.%s", strcmp(file, "uid_map") == 0 ? "uidMappings" : "gidMappings");
    return 0;
}

static int resolve_rootfs(const char *bundle, const struct oci_spec *spec, char **out, ac_error_t *err)
{
    if (spec->root_path == NULL || *spec->root_path == '\0')
        return ac_error(err, 0, "config.json: root.path: required");
    cleanup_free char *p = spec->root_path[0] == '/' ? xstrdup(spec->root_path)
                                                     : xasprintf("%s/%s", bundle, spec->root_path);
    char *real = realpath(p, NULL);
    if (real == NULL)
        return ac_error(err, errno, "config.json: root.path `%s`", spec->root_path);
    struct stat st;
    if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
        free(real);
        return ac_error(err, 0, "config.json: root.path `%s`: not a directory", spec->root_path);
    }
    *out = real;
    return 0;
}

static bool mount_is_bind(const struct oci_mount *m)
{
    bool bind = m->type && strcmp(m->type, "bind") == 0;
    for (size_t k = 0; k < m->n_options; k++)
        bind |= strcmp(m->options[k], "bind") == 0 || strcmp(m->options[k], "rbind") == 0;
    return bind;
}


/* Time namespace offsets can only be written before any process is in the
 * namespace, so the runtime unshares it for its children and writes them. */
static int prepare_time_namespace(const struct oci_spec *spec, ac_error_t *err)
{
    if (unshare(CLONE_NEWTIME) < 0)
        return ac_error(err, errno, "linux.namespaces: new time namespace");
    const struct oci_linux *l = spec->linux;
    if (!l->has_time_offsets)
        return 0;
    char buf[128];
    int len = 0;
    if (l->has_monotonic_offset)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len, "monotonic %lld %u\n", (long long)l->monotonic.secs,
                        l->monotonic.nanosecs);
    if (l->has_boottime_offset)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len, "boottime %lld %u\n", (long long)l->boottime.secs,
                        l->boottime.nanosecs);
    if (len && write_file("/proc/self/timens_offsets", buf, (size_t)len, err) < 0)
        return ac_error_wrap(err, "linux.timeOffsets");
    return 0;
}

static char **annotations_of(const struct oci_spec *spec)
{
    char **a = xcalloc(2 * spec->n_annotations + 1, sizeof(char *));
    for (size_t i = 0; i < spec->n_annotations; i++) {
        a[2 * i] = xstrdup(spec->annotations[i].key);
        a[2 * i + 1] = xstrdup(spec->annotations[i].value);
    }
    return a;
}

/* prestart, then createRuntime hooks; early: a createRuntime hook started
 * already (start_hooks_early; NULL: none), waited for at its turn, or,
 * when it is the only one, left to create to wait for once the init is
 * ready (nothing else waits on it, and the init sets itself up meanwhile). */
static int run_runtime_hooks(const struct oci_spec *spec, const char *state_json, struct hook_early *early,
                             ac_error_t *err)
{
    static const enum oci_hook_kind kinds[] = {HOOK_PRESTART, HOOK_CREATE_RUNTIME};
    for (size_t i = 0; i < 2; i++) {
        enum oci_hook_kind k = kinds[i];
        size_t n = spec->hooks.n_hooks[k];
        struct hook_early *started = k == HOOK_CREATE_RUNTIME ? early : NULL;
        if (n == 0 || (started && started->hook && n == 1))
            continue;
        if (hooks_run_started(k, spec->hooks.hooks[k], n, state_json, started, err) < 0)
            return -1;
    }
    return 0;
}

/* A tier's first createRuntime hook, its egress proxy (policy_hooks_add
 * puts it first), needs only the container's network namespace, which
 * exists from the clone on: started as soon as the init runs, it gets
 * ready while the init sets itself up, and is waited for before anything
 * after it runs, at the latest before create records the container (a
 * proxy that fails still fails the create, and the workload waits on the
 * exec fifo until then). Its listening socket is there from the start:
 * what connects early waits in its backlog. Only where its turn is the
 * first of all the runtime hooks (no prestart hook) and the namespace is
 * the clone's own (a joined one is entered by the init later). */
static bool hooks_may_start_early(int tier, const struct ns_plan *plan, const struct oci_spec *spec)
{
    return tier != TIER_NONE && plan->new_netns && spec->hooks.n_hooks[HOOK_PRESTART] == 0 &&
           spec->hooks.n_hooks[HOOK_CREATE_RUNTIME] > 0;
}

/* The runtime-side hooks are that one hook alone: the init need not stop
 * for them (create awaits it after READY, as it would at the stop). */
static bool runtime_hooks_all_early(int tier, const struct ns_plan *plan, const struct oci_spec *spec)
{
    if (!hooks_may_start_early(tier, plan, spec) || spec->hooks.n_hooks[HOOK_CREATE_RUNTIME] != 1)
        return false;
    container_hooks_builtin(tier);
    return hooks_can_start_early(&spec->hooks.hooks[HOOK_CREATE_RUNTIME][0]);
}

static int start_hooks_early(int tier, const struct ns_plan *plan, const struct oci_spec *spec,
                             const struct container_state *st, struct hook_early *early, ac_error_t *err)
{
    if (!hooks_may_start_early(tier, plan, spec))
        return 0;
    container_hooks_builtin(tier);
    cleanup_free char *state = container_hook_state(st, STATUS_CREATING);
    return hooks_start_early(HOOK_CREATE_RUNTIME, spec->hooks.hooks[HOOK_CREATE_RUNTIME],
                             spec->hooks.n_hooks[HOOK_CREATE_RUNTIME], state, early, err);
}

/* Wait for the child's messages until it is ready (or fails). */
static int supervise_setup(struct create_ctx *c, int sync_fd, const struct oci_spec *spec,
                           const struct container_state *st, struct hook_early *early, ac_error_t *err)
{
    for (;;) {
        enum sync_type t;
        cleanup_free char *data = NULL;
        if (sync_recv(sync_fd, &t, &data, NULL) < 0)
            return ac_error(err, errno, "container init: read from it");
        switch (t) {
        case SYNC_RUN_HOOKS: {
            cleanup_free char *state = container_hook_state(st, STATUS_CREATING);
            container_hooks_builtin(st->tier);
            if (run_runtime_hooks(spec, state, early, err) < 0)
                return -1;
            if (sync_send(sync_fd, SYNC_HOOKS_DONE, NULL, 0) < 0)
                return ac_error(err, errno, "container init: write to it");
            break;
        }
        case SYNC_SECCOMP_FD: {
            cleanup_free char *state = container_hook_state(st, STATUS_CREATING);
            if (seccomp_listener_forward(sync_fd, spec->linux->seccomp, state, err) < 0)
                return -1;
            break;
        }
        case SYNC_READY: {
            /* the payload: the fd number of the tier filter's listener */
            uint64_t fd;
            c->notify_fd = data && *data && parse_uint64(data, &fd) == 0 && fd > 2 && fd < INT32_MAX ? (int)fd : 0;
            return 0;
        }
        case SYNC_ERROR:
            return ac_error(err, 0, "%s", data ? data : "container init failed");
        case SYNC_EOF: {
            int status = 0;
            pid_t r = waitpid(c->child, &status, 0);
            if (r == c->child)
                c->child = 0;
            if (r == c->child && WIFSIGNALED(status))
                return ac_error(err, 0, "container init was killed by signal %d during setup", WTERMSIG(status));
            return ac_error(err, 0, "container init exited during setup");
        }
        default:
            return ac_error(err, 0, "container init: unexpected message %d", t);
        }
    }
}

/* The tier's Landlock paths and timeout, from the annotations the mapping
 * wrote into the effective config; and the kernel must offer Landlock, as
 * a tier promises it (refused here, before anything is made). */
static int tier_enforcement_of(const struct oci_spec *spec, int tier, const char **landlock_rw,
                               long long *timeout_ms, ac_error_t *err)
{
    if (landlock_abi() < 1)
        return ac_error(err, 0,
                        "tier %d needs Landlock, which this kernel does not offer (build it with "
                        "CONFIG_SECURITY_LANDLOCK=y and list `landlock` in the lsm= boot parameter)",
                        tier);
    *landlock_rw = spec_annotation(spec, "io.agentcage.landlock-rw");
    const char *t = spec_annotation(spec, "io.agentcage.timeout-ms");
    uint64_t ms = 0;
    if (t && (parse_uint64(t, &ms) < 0 || ms > (uint64_t)LLONG_MAX))
        return ac_error(err, 0, "tier %d: annotations.io.agentcage.timeout-ms: expected milliseconds, got `%s`",
                        tier, t);
    *timeout_ms = (long long)ms;
    return 0;
}

/* Rootless without a cgroup: a limit config.json asks for cannot be
 * enforced, and that is said once, never silently: a warning for a plain
 * container; a refusal for a tier (a silently unlimited cage is worse than
 * none) unless the operator allowed --rootless-limits best-effort. */
static int rootless_without_cgroup(const struct global_opts *g, const struct oci_spec *spec, int tier,
                                   const char *why, ac_error_t *err)
{
    cleanup_free char *limits = rootless_requested_limits(spec->linux ? spec->linux->resources : NULL);
    if (limits == NULL) {
        ac_debug("rootless: no cgroup for the container: %s", why);
        return 0;
    }
    if (tier != TIER_NONE && !g->rootless_best_effort)
        return ac_error(err, 0,
                        "tier %d: its %s limits cannot be enforced rootless: %s (run it unlimited with "
                        "--rootless-limits best-effort)",
                        tier, limits, why);
    ac_warn("rootless: %s limits not enforced: %s", limits, why);
    return 0;
}

/* A delegated cgroup that still refuses us (another user's path, a parent
 * with processes in it) is no cgroup, as for a host without delegation. */
static bool cgroup_refused(const ac_error_t e)
{
    int n = e ? e->errno_value : 0;
    return n == EACCES || n == EPERM || n == EROFS || n == EBUSY || n == ENOENT;
}

/* The container's place in its pod, as the tier mapping wrote it
 * (io.agentcage.pod-role; only at a tier). */
static bool pod_role_is(const struct oci_spec *spec, int tier, const char *role)
{
    const char *r = tier != TIER_NONE ? spec_annotation(spec, "io.agentcage.pod-role") : NULL;
    return r && strcmp(r, role) == 0;
}

/* The network namespace path config.json names, or NULL. */
static const char *spec_network_path(const struct oci_spec *spec)
{
    for (size_t i = 0; spec->linux && i < spec->linux->n_namespaces; i++)
        if (spec->linux->namespaces[i].type == CLONE_NEWNET && spec->linux->namespaces[i].path)
            return spec->linux->namespaces[i].path;
    return NULL;
}

static bool same_string(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* One pod, one cage: a tiered pod's container joins the network namespace
 * its sandbox got from agentcage (recorded in the sandbox's state by dev
 * and inode, and still the namespace of the sandbox's live init) when the
 * sandbox's network is the one this container's tier has (none, or the
 * egress proxy with the same allow-list). Any other namespace by path is
 * refused, however it is spelled. */
/* Podman's pods: the infra container holds the pod's namespaces, and
 * Podman marks it with nothing (it is a plain container to agentcage); the
 * pod's containers name it in io.kubernetes.cri-o.SandboxID and join
 * /proc/INFRA/ns/net, where the engine's network is (CNI, eth0). So a
 * tiered member gets the pod's cage instead: one loopback-only namespace
 * per infra, made by the first tiered member, pinned in the infra's state
 * folder (removed with it) and joined by the pod's later tiered members.
 * Only when the namespace named is the live one of that infra, which the
 * engine gave. Tiers 0-1 only: a tier-2 pod would share one proxy, and a
 * proxy lives as long as the container that starts it, while no tiered
 * container lives as long as a Podman pod. Returns 1 when the container is
 * not a Podman pod member (the caller refuses), 0 with *fd the cage's. */
static int podman_pod_cage(const struct global_opts *g, const struct oci_spec *spec, int tier, int *fd,
                           const struct stat *want, const char *path, ac_error_t *err)
{
    const char *infra = spec_annotation(spec, "io.kubernetes.cri-o.SandboxID");
    ac_error_t e = NULL;
    if (infra == NULL || state_validate_id(infra, &e) < 0) {
        ac_error_free(&e);
        return 1;
    }
    cleanup_close int lock = -1;
    cleanup_state struct container_state *st = NULL;
    if (state_lock(g, infra, &lock, &e) < 0 || state_load(g, infra, &st, &e) < 0) {
        ac_error_free(&e);
        return 1;
    }
    cleanup_free char *live = xasprintf("/proc/%d/ns/net", st->pid);
    struct stat ls;
    if (st->pid <= 0 || process_start_time(st->pid) != st->pid_start_time || stat(live, &ls) < 0 ||
        ls.st_ino != want->st_ino || ls.st_dev != want->st_dev)
        return 1;
    if (tier_has_egress_proxy(tier))
        return ac_error(err, 0,
                        "tier %d in a Podman pod (io.kubernetes.cri-o.SandboxID %s): the pod's containers would "
                        "share one egress proxy that nothing in a Podman pod keeps; tiers 0-1 only (run a tier-2 "
                        "agent as a single container, or as a Kubernetes pod)",
                        tier, infra);
    cleanup_free char *dir = state_dir_path(g, infra);
    cleanup_free char *cage = xasprintf("%s/pod-cage.net", dir);
    int cage_fd = -1;
    if (netns_pinned_open(cage, &cage_fd, err) < 0)
        return -1;
    ac_debug("tier %d: joins the pod cage of Podman infra %s instead of `%s`", tier, infra, path);
    close(*fd);
    *fd = cage_fd;
    return 0;
}

/* The pod sandbox's network is the one this container's tier has: none,
 * or the egress proxy with the same allow-list. */
static bool same_pod_network(const struct container_state *sandbox, const struct oci_spec *spec, int tier)
{
    const char *egress = state_annotation(sandbox, "io.agentcage.egress");
    return tier_has_egress_proxy(sandbox->tier) == tier_has_egress_proxy(tier) &&
           (!tier_has_egress_proxy(tier) || same_string(egress, spec_annotation(spec, "io.agentcage.egress")));
}

static int pod_cage_check(const struct global_opts *g, const struct oci_spec *spec, int tier, bool gvisor,
                          int *join_fd, const char *path, ac_error_t *err)
{
    struct stat want;
    int fd = *join_fd;
    if (fstat(fd, &want) < 0)
        return ac_error(err, errno, "linux.namespaces: network namespace `%s`", path);
    char **ids = NULL;
    size_t n = 0;
    if (state_list_ids(g, &ids, &n, err) < 0)
        return -1;
    const char *found = NULL;
    int sandbox_tier = TIER_NONE;
    bool network_differs = false, kernel_differs = false;
    for (size_t i = 0; i < n && !found; i++) {
        cleanup_state struct container_state *st = NULL;
        ac_error_t e = NULL;
        if (state_load(g, ids[i], &st, &e) < 0) {
            ac_error_free(&e);
            continue;
        }
        if (st->tier == TIER_NONE || st->netns_ino != (unsigned long long)want.st_ino ||
            st->netns_dev != (unsigned long long)want.st_dev || st->pid <= 0 ||
            process_start_time(st->pid) != st->pid_start_time)
            continue;
        cleanup_free char *live = xasprintf("/proc/%d/ns/net", st->pid);
        struct stat ls;
        if (stat(live, &ls) < 0 || ls.st_ino != want.st_ino || ls.st_dev != want.st_dev)
            continue;
        found = ids[i];
        sandbox_tier = st->tier;
        network_differs = !same_pod_network(st, spec, tier);
        kernel_differs = st->gvisor != gvisor;
    }
    /* not a tiered sandbox's: a Podman pod's member gets its pod's cage */
    int ret = found ? 0 : podman_pod_cage(g, spec, tier, join_fd, &want, path, err);
    if (ret == 1)
        ret = ac_error(err, 0,
                       "tier %d forbids joining the network namespace `%s`: not the cage of a tiered pod sandbox "
                       "agentcage runs, nor the Podman infra container's its io.kubernetes.cri-o.SandboxID names "
                       "(linux.namespaces)",
                       tier, path);
    else if (!found)
        ; /* the Podman pod's cage, or why not */
    else if (kernel_differs)
        ret = ac_error(err, 0,
                       "tier %d forbids joining the pod's cage `%s`: its sandbox %s runs on %s kernel and this "
                       "container on %s; a pod is one sandbox (io.agentcage.kernel, kernel-for-tier)",
                       tier, path, found, gvisor ? "the host's" : "gVisor's", gvisor ? "gVisor's" : "the host's");
    else if (network_differs)
        ret = ac_error(err, 0,
                       "tier %d forbids joining the pod's cage `%s`: its sandbox %s has another network (tier %d%s)",
                       tier, path, found, sandbox_tier,
                       tier_has_egress_proxy(sandbox_tier) ? ", or another io.agentcage.egress" : "");
    else
        ac_debug("tier %d: joins the cage of pod sandbox %s", tier, found);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return ret;
}

/* Docker does not pass published ports (-p, -P) to the runtime, but keeps
 * them in hostconfig.json of the container's folder, which is where the
 * /etc/hostname it bind-mounts lives. At a tier nothing could reach a
 * published port (the container has only lo), so a container that asks for
 * one is refused rather than shown by Docker as published. Read only when
 * the folder looks like Docker's (hostconfig.json and config.v2.json next to
 * the hostname file), never through a symlink; what cannot be read is not
 * refused (the ports lead nowhere anyway). */
static int docker_published_ports(const struct oci_spec *spec, int tier, ac_error_t *err)
{
    const char *hostname = NULL;
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (spec->mounts[i].destination && strcmp(spec->mounts[i].destination, "/etc/hostname") == 0)
            hostname = spec->mounts[i].source;
    const char *slash = hostname ? strrchr(hostname, '/') : NULL;
    if (slash == NULL || slash == hostname)
        return 0;
    cleanup_free char *dir = xasprintf("%.*s", (int)(slash - hostname), hostname);
    cleanup_free char *v2 = xasprintf("%s/config.v2.json", dir);
    cleanup_free char *hc = xasprintf("%s/hostconfig.json", dir);
    struct stat sb;
    if (lstat(v2, &sb) < 0 || !S_ISREG(sb.st_mode))
        return 0;
    cleanup_close int fd = open(hc, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > (1 << 20))
        return 0;
    cleanup_free char *text = NULL;
    size_t len = 0;
    ac_error_t e = NULL;
    if (read_all_fd(fd, &text, &len, &e) < 0) {
        ac_error_free(&e);
        return 0;
    }
    yajl_val tree = yajl_tree_parse(text, NULL, 0);
    if (tree == NULL)
        return 0;
    const char *bindings_path[] = {"PortBindings", NULL};
    const char *all_path[] = {"PublishAllPorts", NULL};
    yajl_val bindings = yajl_tree_get(tree, bindings_path, yajl_t_object);
    cleanup_free char *ports = NULL;
    for (size_t i = 0; bindings && i < bindings->u.object.len; i++) {
        yajl_val list = bindings->u.object.values[i];
        for (size_t k = 0; YAJL_IS_ARRAY(list) && k < list->u.array.len; k++) {
            const char *port_path[] = {"HostPort", NULL};
            yajl_val hp = yajl_tree_get(list->u.array.values[k], port_path, yajl_t_string);
            char *more = xasprintf("%s%s%s:%s", ports ? ports : "", ports ? ", " : "",
                                   hp && YAJL_GET_STRING(hp)[0] ? YAJL_GET_STRING(hp) : "(any)",
                                   bindings->u.object.keys[i]);
            free(ports);
            ports = more;
        }
    }
    bool all = YAJL_IS_TRUE(yajl_tree_get(tree, all_path, yajl_t_true));
    yajl_tree_free(tree);
    if (!ports && !all)
        return 0;
    return ac_error(err, 0,
                    "tier %d forbids published ports (docker run %s%s): a tiered container has only lo, nothing "
                    "would reach them",
                    tier, ports ? "-p " : "-P", ports ? ports : "");
}

/* The name an approval is addressed by: io.agentcage.request-id, else for
 * a pod's container NAMESPACE_POD_CONTAINER from the engine's annotations
 * (known before the container exists, the same for every kubelet retry),
 * else the container id. */
static const char *approval_name(const struct oci_spec *spec, const char *id)
{
    const char *rid = spec_annotation(spec, "io.agentcage.request-id");
    if (rid)
        return rid;
    static const char *const keys[][3] = {
        {"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.container-name"},
        {"io.kubernetes.pod.namespace", "io.kubernetes.pod.name", "io.kubernetes.container.name"},
    };
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        const char *ns = spec_annotation(spec, keys[k][0]), *pod = spec_annotation(spec, keys[k][1]),
                   *ctr = spec_annotation(spec, keys[k][2]);
        if (ns && pod && ctr && *ns && *pod && *ctr) {
            cleanup_free char *name = xasprintf("%s_%s_%s", ns, pod, ctr);
            if (hook_valid_name(name))
                return spec_strdup((struct oci_spec *)spec, name);
        }
    }
    return id;
}

/* The approval gate of a tier that needs one (tier 3): a grant of the
 * operator's, for this name (the container id, or io.agentcage.request-id)
 * and this effective config's digest. Checked here, before the state
 * directory, a mount or any hook; used up once the container exists. A
 * refused create leaves a request that `agentcage approve NAME` grants. */
static int approval_gate(const struct global_opts *g, const char *id, const struct oci_spec *spec, int tier,
                         const char *digest, const char **name, ac_error_t *err)
{
    *name = approval_name(spec, id);
    cleanup_free char *reason = NULL;
    int r = approval_check(g->tier.approvals_dir, *name, digest, time(NULL), &reason, err);
    if (r != 0)
        return r < 0 ? ac_error_wrap(err, "tier %d: approval gate", tier) : 0;
    ac_error_t e = NULL;
    if (approval_request(g->tier.approvals_dir, *name, id, digest, tier, spec_annotation(spec, "io.agentcage.egress"),
                         &e) < 0) {
        ac_warn("tier %d: the approval request was not recorded: %s", tier, e->msg);
        ac_error_free(&e);
    }
    return ac_error(err, 0, "tier %d: %s for container %s (config %.19s...): run `agentcage approve %s`", tier,
                    reason, id, digest, *name);
}

/* Listening Unix sockets of the host that a tiered bind mount would put in
 * reach (an ssh or gpg agent, an IDE's, a Docker or Podman socket under a
 * mounted home): connecting needs only the path, and no mount flag or
 * Landlock right of this kernel closes it. The host's /proc/net/unix lists
 * every bound pathname socket of the host's network namespace; each one
 * below a bind source is masked at its place in the container (a socket
 * bound there after create is not; see SECURITY.md). */
static bool host_bind(const struct oci_mount *m)
{
    return mount_is_bind(m) && m->source && m->source[0] == '/' && m->destination;
}

static void add_socket_masks(struct oci_spec *spec)
{
    if (spec->linux == NULL)
        return;
    /* the host's socket list only when a bind could carry one in */
    bool binds = false;
    for (size_t i = 0; i < spec->n_mounts && !binds; i++)
        binds = host_bind(&spec->mounts[i]);
    if (!binds)
        return;
    cleanup_file FILE *f = fopen("/proc/net/unix", "re");
    if (f == NULL)
        return;
    char *line = NULL;
    size_t cap = 0;
    char **masks = NULL;
    size_t n = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        /* Num RefCount Protocol Flags Type St Inode Path */
        char *path = line;
        for (int field = 0; field < 7 && path; field++) {
            path = strchr(path, ' ');
            while (path && *path == ' ')
                path++;
        }
        if (path == NULL || path[0] != '/')
            continue; /* abstract (@...) or unnamed: the container's own network namespace has its own */
        for (size_t i = 0; i < spec->n_mounts; i++) {
            const struct oci_mount *m = &spec->mounts[i];
            if (!host_bind(m))
                continue;
            size_t sl = path_below(path, m->source);
            if (sl == 0)
                continue;
            masks = xrealloc(masks, (n + 1) * sizeof(*masks));
            masks[n++] = xasprintf("%s%s", m->destination, path + sl);
        }
    }
    free(line);
    if (n == 0)
        return;
    struct oci_linux *lx = spec->linux;
    char **all = spec_alloc(spec, (lx->n_masked_paths + n) * sizeof(char *));
    memcpy(all, lx->masked_paths, lx->n_masked_paths * sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        ac_debug("tier: host socket masked at %s", masks[i]);
        all[lx->n_masked_paths + i] = spec_strdup(spec, masks[i]);
        free(masks[i]);
    }
    free(masks);
    lx->masked_paths = all;
    lx->n_masked_paths += n;
}

/* Each directory bind mount (only those in the list `only` when given)
 * idmapped so that its owner on the host is the container's root: files
 * the container writes there land with the owner's ids, not the
 * container's. */
static void idmap_bind_mounts(struct oci_spec *spec, uint32_t root_uid, uint32_t root_gid, const char *only)
{
    for (size_t i = 0; i < spec->n_mounts; i++) {
        struct oci_mount *m = &spec->mounts[i];
        struct stat st;
        if (!mount_is_bind(m) || m->n_uid_mappings || m->source == NULL || stat(m->source, &st) < 0 ||
            !S_ISDIR(st.st_mode) || (only && (m->destination == NULL || !list_has(only, ':', m->destination))))
            continue;
        struct oci_idmap *maps = spec_alloc(spec, 2 * sizeof(*maps));
        maps[0] = (struct oci_idmap){.container_id = (uint32_t)st.st_uid, .host_id = root_uid, .size = 1};
        maps[1] = (struct oci_idmap){.container_id = (uint32_t)st.st_gid, .host_id = root_gid, .size = 1};
        m->uid_mappings = &maps[0], m->n_uid_mappings = 1;
        m->gid_mappings = &maps[1], m->n_gid_mappings = 1;
        char **options = spec_alloc(spec, (m->n_options + 1) * sizeof(char *));
        memcpy(options, m->options, m->n_options * sizeof(char *));
        options[m->n_options++] = spec_strdup(spec, "idmap");
        m->options = options;
    }
}

/* A tier's user namespace: container root is never host root. The bundle's
 * own mappings when it brings a user namespace (the mapping refused any to
 * host id 0), else a slice of the operator's range. The runtime makes the
 * namespace and the init joins it after its setup (userns.c); the clone
 * makes none. Each directory bind mount is idmapped (idmap_bind_mounts). */
static int tier_user_namespace(struct create_ctx *c, struct oci_spec *spec, struct ns_plan *plan, int *userns_fd,
                               ac_error_t *err)
{
    struct oci_linux *lx = spec->linux;
    static struct oci_idmap slice_map;
    const struct oci_idmap *uids = &slice_map, *gids = &slice_map;
    size_t n_uids = 1, n_gids = 1;
    if (plan->new_userns) {
        if (userns_maps_host_root(lx->uid_mappings, lx->n_uid_mappings) ||
            userns_maps_host_root(lx->gid_mappings, lx->n_gid_mappings))
            return ac_error(err, 0, "a tier forbids a user namespace that maps host id 0 (linux.uidMappings)");
        uids = lx->uid_mappings, n_uids = lx->n_uid_mappings;
        gids = lx->gid_mappings, n_gids = lx->n_gid_mappings;
        plan->new_userns = false;
        plan->clone_flags &= ~(unsigned long)CLONE_NEWUSER;
    } else {
        uint32_t base;
        if (userns_slice_acquire(c->g->root, c->id, c->g->tier.userns_start, c->g->tier.userns_size,
                                 &c->userns_slice, &base, err) < 0)
            return -1;
        slice_map = (struct oci_idmap){.container_id = 0, .host_id = base, .size = USERNS_SLICE};
    }
    uint32_t root_uid, root_gid;
    if (userns_host_of(uids, n_uids, 0, &root_uid) < 0 || userns_host_of(gids, n_gids, 0, &root_gid) < 0)
        return ac_error(err, 0, "a tier's user namespace must map the container's root (linux.uidMappings)");
    c->root_uid = root_uid;
    c->root_gid = root_gid;
    *userns_fd = userns_make(uids, n_uids, gids, n_gids, true, err);
    if (*userns_fd < 0)
        return ac_error_wrap(err, "tier: the container's user namespace");
    idmap_bind_mounts(spec, root_uid, root_gid, NULL);
    userns_give_stdio(root_uid, root_gid);
    return 0;
}

/* `run`'s watchdog, started during create (container_watchdog_ahead). */
static int watchdog_ahead(const struct global_opts *g, struct create_ctx *c, struct container_state *st,
                          ac_error_t *err)
{
    st->pid_start_time = process_start_time(c->child);
    if (container_watchdog_ahead(g, st, err) < 0)
        return -1;
    c->watchdog = st->watchdog_pid;
    return 0;
}

static void close_fd_array(int *fds, size_t n)
{
    for (size_t i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

/* The user namespaces of idmapped mounts, made here before the clone (the
 * init, in its new pid namespace, would find other processes behind the
 * host's /proc/PID). NULL when no mount is idmapped; -1 for the others. */
static int *make_idmap_fds(const struct oci_spec *spec, ac_error_t *err)
{
    int *fds = NULL;
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const struct oci_mount *m = &spec->mounts[i];
        bool idmap = false;
        for (size_t k = 0; k < m->n_options; k++)
            idmap |= strcmp(m->options[k], "idmap") == 0 || strcmp(m->options[k], "ridmap") == 0;
        if (!idmap || m->n_uid_mappings == 0 || m->n_gid_mappings == 0)
            continue;
        if (fds == NULL) {
            fds = xmalloc(spec->n_mounts * sizeof(int));
            for (size_t k = 0; k < spec->n_mounts; k++)
                fds[k] = -1;
        }
        fds[i] = userns_make(m->uid_mappings, m->n_uid_mappings, m->gid_mappings, m->n_gid_mappings, false, err);
        if (fds[i] < 0) {
            ac_error_wrap(err, "mounts[%zu]: idmap", i);
            close_fd_array(fds, spec->n_mounts);
            return (int *)-1;
        }
    }
    return fds;
}

/* What the state records of a container made (or being made) by create. */
static void fill_state(struct container_state *st, const struct create_ctx *c, const char *bundle,
                       const char *rootfs, const struct oci_spec *spec, int tier, long long timeout_ms)
{
    st->id = (char *)c->id;
    st->bundle = (char *)bundle;
    st->rootfs = (char *)rootfs;
    st->cgroup_path = c->cgroup_path ? c->cgroup_path : "";
    st->created = rfc3339_now();
    st->owner = "";
    st->pid = c->child;
    st->systemd_cgroup = c->g->systemd_cgroup;
    st->annotations = annotations_of(spec);
    st->tier = tier;
    st->timeout_ms = timeout_ms;
    /* for the watchdog start spawns, which then need not read the config */
    if (tier != TIER_NONE)
        st->termination_log = (char *)termination_log_source(spec);
    st->userns_slice = c->userns_slice;
    st->gvisor = c->gvisor;
    for (int k = 0; k < HOOK_KIND_COUNT; k++)
        if (spec->hooks.n_hooks[k])
            st->hooks_mask |= 1u << k;
}

/* gVisor's sandbox in a user namespace whose root is an unprivileged host
 * id, as at every tier: the bundle's own mappings (the mapping refused any
 * to host id 0), else a slice of the operator's range. runsc makes the
 * namespace; the gofer, which opens the container's files on the host, runs
 * as that id (bind mounts are not idmapped: runsc cannot). */
static int gvisor_user_ids(struct create_ctx *c, const struct oci_spec *spec, struct gvisor_create_args *a,
                           ac_error_t *err)
{
    const struct oci_linux *lx = spec->linux;
    static struct oci_idmap slice_map;
    uint32_t uid, gid;
    if (spec_namespace(spec, CLONE_NEWUSER)) {
        if (userns_host_of(lx->uid_mappings, lx->n_uid_mappings, 0, &uid) < 0 ||
            userns_host_of(lx->gid_mappings, lx->n_gid_mappings, 0, &gid) < 0)
            return ac_error(err, 0, "a tier's user namespace must map the container's root (linux.uidMappings)");
        a->uid_map = lx->uid_mappings, a->n_uid_map = lx->n_uid_mappings;
        a->gid_map = lx->gid_mappings, a->n_gid_map = lx->n_gid_mappings;
    } else {
        if (userns_slice_acquire(c->g->root, c->id, c->g->tier.userns_start, c->g->tier.userns_size,
                                 &c->userns_slice, &uid, err) < 0)
            return -1;
        gid = uid;
        slice_map = (struct oci_idmap){.container_id = 0, .host_id = uid, .size = USERNS_SLICE};
        a->uid_map = a->gid_map = &slice_map;
        a->n_uid_map = a->n_gid_map = 1;
    }
    c->root_uid = a->root_uid = uid;
    c->root_gid = a->root_gid = gid;
    return 0;
}

/* A pod's container under gVisor runs in its pod's gVisor sandbox: the one
 * its engine's sandbox-id annotation names, which must be a live tiered
 * pod sandbox of agentcage's under gVisor with this tier's network; its
 * user namespace is the pod's. */
static int gvisor_pod_member(const struct global_opts *g, const struct oci_spec *spec, int tier,
                             struct gvisor_create_args *a, char **pod_state_dir, char **pod_cgroup, ac_error_t *err)
{
    const char *id = spec_annotation(spec, "io.kubernetes.cri.sandbox-id");
    if (id == NULL)
        id = spec_annotation(spec, "io.kubernetes.cri-o.SandboxID");
    ac_error_t e = NULL;
    cleanup_state struct container_state *st = NULL;
    const char *role = NULL;
    if (id && state_validate_id(id, &e) == 0 && state_load(g, id, &st, &e) == 0)
        role = state_annotation(st, "io.agentcage.pod-role");
    ac_error_free(&e);
    if (st == NULL || !st->gvisor || role == NULL || strcmp(role, "sandbox") != 0 || st->pid <= 0 ||
        process_start_time(st->pid) != st->pid_start_time)
        return ac_error(err, 0,
                        "tier %d: a pod's container under gVisor runs in its pod's gVisor sandbox, but `%s` "
                        "(io.kubernetes.cri.sandbox-id) is not a live pod sandbox agentcage runs under gVisor",
                        tier, id ? id : "(none)");
    if (!same_pod_network(st, spec, tier))
        return ac_error(err, 0,
                        "tier %d: the pod's gVisor sandbox %s has another network (tier %d%s): a pod's containers "
                        "share its sandbox's",
                        tier, id, st->tier, tier_has_egress_proxy(st->tier) ? ", or another io.agentcage.egress" : "");
    a->pod_sandbox = id;
    a->pod_pid = st->pid;
    a->pod_state_dir = *pod_state_dir = state_dir_path(g, id);
    a->pod_cgroup = *pod_cgroup = xstrdup(st->cgroup_path);
    return gvisor_pod_ids(a, err);
}

/* A tiered container refused at create: its reason in the audit trail. */
static void audit_refusal(const struct global_opts *g, const char *id, ac_error_t *err)
{
    if (err == NULL || *err == NULL)
        return;
    cleanup_free char *reason = audit_json_string((*err)->msg);
    cleanup_free char *members = xasprintf("\"reason\":%s", reason);
    container_audit(g, "refused", id, members);
}

int container_create(const struct global_opts *g, const char *id, const struct create_options *o,
                     struct create_result *res, ac_error_t *err)
{
    struct create_ctx c = {.g = g, .id = id, .userns_slice = -1};
    res->pid = 0;
    res->running = false;
    res->console_master = -1;
    res->start_fd = -1;
    res->state = NULL;
    res->config = NULL;
    if (state_validate_id(id, err) < 0)
        return -1;

    /* 1. Bundle, config.json, rootfs. */
    cleanup_free char *bundle = realpath(o->bundle ? o->bundle : ".", NULL);
    if (bundle == NULL)
        return ac_error(err, errno, "--bundle `%s`", o->bundle ? o->bundle : ".");
    cleanup_free char *config_path = o->config_path
                                         ? (o->config_path[0] == '/' ? xstrdup(o->config_path)
                                                                     : xasprintf("%s/%s", bundle, o->config_path))
                                         : xasprintf("%s/config.json", bundle);
    cleanup_free char *config_text = NULL;
    size_t config_len = 0;
    if (read_all_file(config_path, &config_text, &config_len, err) < 0)
        return -1;
    /* config.json -> tree -> (tier mapping) -> spec: parsed once. */
    cleanup_spec struct oci_spec *spec = NULL;
    struct tier_decisions decisions = {0};
    int tier;
    char policy_digest[APPROVAL_DIGEST_LEN + 1] = "";
    {
        yajl_val tree = NULL;
        if (spec_parse_json_tree(config_text, config_len, "config.json", &tree, err) < 0)
            return -1;
        tier = tier_map(tree, bundle, &g->tier, &decisions, err);
        if (tier < TIER_NONE)
            audit_refusal(g, id, err);
        if (tier < TIER_NONE || spec_parse_tree(tree, "config.json", &spec, err) < 0) {
            yajl_tree_free(tree);
            tier_decisions_free(&decisions);
            return -1;
        }
        if (tier != TIER_NONE) {
            /* the state keeps the effective config, which delete and exec use */
            free(config_text);
            config_text = tier_tree_to_json(tree, false);
            config_len = strlen(config_text);
            tier_approval_digest(tree, policy_digest); /* changes the tree: last */
        }
        yajl_tree_free(tree);
        for (size_t i = 0; i < decisions.n; i++)
            ac_debug("tier %d: %s", tier, decisions.lines[i]);
        tier_decisions_free(&decisions);
    }
    if (spec->process == NULL)
        return ac_error(err, 0, "config.json: process: required to create a container");
    /* whether SELinux is on, for a label only, looked at here on the host:
     * the init applies the label where it must not judge the host */
    if ((spec->process->selinux_label && *spec->process->selinux_label) ||
        (spec->linux && spec->linux->mount_label && *spec->linux->mount_label))
        ac_selinux_probe();
    /* What a tier enforces beyond config.json is keyed off the tier
     * tier_map returned, never off annotations alone: on a plain container
     * a user-written io.agentcage.* annotation does nothing. */
    const char *landlock_rw = NULL;
    long long timeout_ms = 0;
    if (tier != TIER_NONE && tier_enforcement_of(spec, tier, &landlock_rw, &timeout_ms, err) < 0)
        return -1;
    if (tier != TIER_NONE && tier_check_caller_fds(tier, o->preserve_fds, err) < 0) {
        audit_refusal(g, id, err);
        return -1;
    }
    /* gVisor: runsc there and working, or no container (never one without
     * the boundary); its sandbox's own threads count in the pids limit */
    c.gvisor = tier != TIER_NONE && tier_kernel_is_gvisor(spec_annotation(spec, "io.agentcage.kernel"));
    if (c.gvisor && gvisor_check(g, tier, err) < 0) {
        audit_refusal(g, id, err);
        return -1;
    }
    if (c.gvisor && spec->linux && spec->linux->resources && spec->linux->resources->has_pids_limit &&
        spec->linux->resources->pids_limit > 0)
        spec->linux->resources->pids_limit = spec->linux->resources->pids_limit * 2 + 64;
    const char *grant = NULL;
    /* a pod's sandbox holds the pod's namespaces and runs nothing of the
     * pod's: the gate is for its containers */
    if (tier != TIER_NONE && tier_requires_approval(tier) && !pod_role_is(spec, tier, "sandbox") &&
        approval_gate(g, id, spec, tier, policy_digest, &grant, err) < 0) {
        audit_refusal(g, id, err);
        return -1;
    }
    cleanup_free char *rootfs = NULL;
    cleanup_free char *host_rootfs = NULL; /* no mount namespace: the rootfs's private bind */
    if (resolve_rootfs(bundle, spec, &rootfs, err) < 0)
        return -1;
    /* Relative mount sources are relative to the bundle (as runc reads
     * them); resolved here, as the child may not be allowed into it. */
    for (size_t i = 0; i < spec->n_mounts; i++) {
        struct oci_mount *m = &spec->mounts[i];
        if (mount_is_bind(m) && m->source && m->source[0] != '/' && m->source[0] != '\0') {
            cleanup_free char *abs = xasprintf("%s/%s", bundle, m->source);
            struct stat sb;
            if (stat(abs, &sb) == 0)
                m->source = spec_strdup(spec, abs);
        }
    }
    if (tier != TIER_NONE && docker_published_ports(spec, tier, err) < 0) {
        audit_refusal(g, id, err);
        return -1;
    }
    if (tier != TIER_NONE)
        add_socket_masks(spec);
    struct ns_plan plan;
    int net_join = -1;
    for (int k = 0; k < NS_COUNT; k++)
        if (ns_join_order[k] == CLONE_NEWNET)
            net_join = k;
    if (plan_namespaces(spec, tier != TIER_NONE, &plan, err) < 0 ||
        (tier != TIER_NONE && net_join >= 0 && plan.join_fds[net_join] >= 0 &&
         pod_cage_check(g, spec, tier, c.gvisor, &plan.join_fds[net_join], spec_network_path(spec), err) < 0)) {
        if (tier != TIER_NONE)
            audit_refusal(g, id, err);
        ns_plan_close(&plan);
        return -1;
    }
    /* Rootless: a new mount namespace needs a user namespace we own, and
     * cgroups only where they are delegated to us; both decided before
     * anything is made. */
    bool use_cgroup = !g->cgroups_disabled;
    if (g->is_rootless) {
        if (!plan.new_userns && plan.join_fds[0] < 0 && geteuid() != 0) {
            ns_plan_close(&plan);
            return ac_error(err, 0, "rootless: linux.namespaces needs a user namespace with uidMappings and "
                                    "gidMappings when the runtime is not root (`agentcage spec --rootless` writes one)");
        }
        cleanup_free char *why = NULL;
        if (use_cgroup && !rootless_cgroups_delegated(&why)) {
            use_cgroup = false;
            if (rootless_without_cgroup(g, spec, tier, why, err) < 0) {
                ns_plan_close(&plan);
                return -1;
            }
        }
    }
    int ret = -1;
    int sync_fds[2] = {-1, -1}, console_pair[2] = {-1, -1};
    cleanup_close int fifo_fd = -1;
    cleanup_close int console_fd = -1;
    cleanup_close int lock_fd = -1;
    struct cgroup_join join = {.n = 0, .v2_fd = -1};
    cleanup_close int saved_pidns = -1;
    cleanup_close int saved_timens = -1;
    cleanup_close int late_userns_fd = -1;
    int *idmap_fds = NULL;
    int *bind_trees = NULL;
    struct credential_secret *secrets = NULL;
    size_t n_secrets = 0;
    struct container_state st = {0};
    struct hook_early early = HOOK_EARLY_NONE;
    /* The container's new network namespace, made meanwhile on a thread
     * (namespaces.h); the thread is done before step 3b. */
    struct netns_ahead netns_ahead = {.fd = -1, .own = -1};
    if (plan.new_netns && net_join >= 0 && plan.join_fds[net_join] < 0 && !plan.new_userns && plan.join_fds[0] < 0 &&
        !g->is_rootless && !c.gvisor)
        netns_ahead_start(&netns_ahead);

    /* 2. The state directory: its creation claims the id. */
    if (mkdir_p(g->root, 0711, err) < 0)
        goto out;
    c.state_dir = state_dir_path(g, id);
    if (mkdir(c.state_dir, 0711) < 0) {
        if (errno == EEXIST)
            ac_error(err, 0, "container `%s` already exists", id);
        else
            ac_error(err, errno, "create state directory `%s`", c.state_dir);
        goto out;
    }
    c.state_dir_made = true;
    if (plan.host_mntns) {
        if (state_host_rootfs_mount(c.state_dir, rootfs, &host_rootfs, err) < 0)
            goto out;
        ac_debug("no mount namespace: the container's mounts go on `%s`, in the runtime's namespace", host_rootfs);
    }
    lock_fd = open(c.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) < 0) {
        ac_error(err, errno, "lock `%s`", c.state_dir);
        goto out;
    }
    {
        cleanup_free char *copy = xasprintf("%s/config.json", c.state_dir);
        cleanup_close int fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write_all(fd, config_text, config_len) < 0) {
            ac_error(err, errno, "write `%s`", copy);
            goto out;
        }
    }

    if (tier != TIER_NONE && project_watch_start(c.state_dir, spec, err) < 0)
        goto out;
    /* A tier's denials counter, which the watchdog and the egress proxy
     * count in (its path in the hooks' environment). */
    if (tier != TIER_NONE) {
        uint64_t limit = 0;
        const char *max = spec_annotation(spec, "io.agentcage.max-denials");
        if (max && (parse_uint64(max, &limit) < 0 || limit > INT32_MAX)) {
            ac_error(err, 0, "tier %d: annotations.io.agentcage.max-denials: expected a number, got `%s`", tier, max);
            goto out;
        }
        if (denials_file_create(c.state_dir, (uint32_t)limit, err) < 0)
            goto out;
        cleanup_free char *path = denials_file_path(c.state_dir);
        c.denials_env = xasprintf("AGENTCAGE_DENIALS=%s", path);
        hooks_set_extra_env(c.denials_env);
    }

    /* 3. The cgroup (rootless: by default below our own, delegated one). */
    if (use_cgroup) {
        const char *cgroups_path = spec->linux ? spec->linux->cgroups_path : NULL;
        cleanup_free char *below_own = NULL;
        if (g->is_rootless && (cgroups_path == NULL || *cgroups_path == '\0') && !g->systemd_cgroup)
            cgroups_path = below_own = xasprintf("agentcage-%s", id);
        if (cgroup_resolve_path(cgroups_path, id, g->systemd_cgroup, &c.cgroup_path, err) < 0)
            goto out;
        /* Recorded before it is made: if this runtime dies from here on,
         * `delete --force` finds the cgroup (and whatever runs in it). */
        struct container_state pre = {.id = (char *)id, .bundle = bundle, .rootfs = rootfs,
                                      .cgroup_path = c.cgroup_path, .created = "", .owner = "",
                                      .tier = TIER_NONE, .creating = true};
        if (state_save(g, &pre, err) < 0)
            goto out;
        if (cgroup_check_reuse(c.cgroup_path, err) < 0)
            goto out;
        int made = cgroup_create(c.cgroup_path, spec->linux ? spec->linux->resources : NULL, err);
        if (made < 0) {
            if (!g->is_rootless || !cgroup_refused(*err))
                goto out;
            cleanup_free char *why = ac_error_string(*err);
            ac_error_free(err);
            if (rootless_without_cgroup(g, spec, tier, why, err) < 0)
                goto out;
            free(c.cgroup_path);
            c.cgroup_path = NULL;
        } else {
            c.cgroup_made = true;
            c.cgroup_ours = made == 1;
            /* not to be opened: the runtime joins the child the slow way */
            ac_error_t slow = NULL;
            if (!c.gvisor && cgroup_join_open(c.cgroup_path, &join, &slow) < 0) {
                ac_debug("%s", slow->msg);
                ac_error_free(&slow);
            }
        }
    }

    /* 3a. gVisor: runsc makes the sandbox in that cgroup (gvisor.c). */
    if (c.gvisor) {
        struct gvisor_create_args ga = {.id = id, .state_dir = c.state_dir, .rootfs = rootfs,
                                        .config_text = config_text, .config_len = config_len, .spec = spec,
                                        .cgroup_path = c.cgroup_made ? c.cgroup_path : NULL, .tier = tier,
                                        .console_socket = o->console_socket, .foreground = o->foreground};
        ga.run_now = o->foreground && grant == NULL && !pod_role_is(spec, tier, "container") &&
                     spec->hooks.n_hooks[HOOK_PRESTART] == 0 && spec->hooks.n_hooks[HOOK_CREATE_RUNTIME] == 0;
        cleanup_free char *pod_state_dir = NULL, *pod_cgroup = NULL;
        if (pod_role_is(spec, tier, "container")) {
            if (gvisor_pod_member(g, spec, tier, &ga, &pod_state_dir, &pod_cgroup, err) < 0) {
                audit_refusal(g, id, err);
                goto out;
            }
            c.root_uid = ga.root_uid;
            c.root_gid = ga.root_gid;
        } else if (gvisor_user_ids(&c, spec, &ga, err) < 0) {
            audit_refusal(g, id, err);
            goto out;
        }
        /* runsc cannot idmap a bind mount: the writable host folders get
         * the capped overlay, whose lower layer the runtime idmaps, as
         * their sources; runsc's gofer (the container's root on the host)
         * reaches it through the state directory */
        idmap_bind_mounts(spec, c.root_uid, c.root_gid, spec_annotation(spec, "io.agentcage.capped-binds"));
        c.overlays = true;
        if (bind_overlays_prepare(c.state_dir, spec, 0711, err) < 0) {
            audit_refusal(g, id, err);
            goto out;
        }
        /* a tier's credentials: files the gofer serves read-only at /run/secrets */
        if (spec_annotation(spec, "io.agentcage.credentials")) {
            c.credentials_issued = true;
            if (credentials_issue(g, c.state_dir, id, tier, spec, timeout_ms, &secrets, &n_secrets, err) < 0 ||
                gvisor_secrets(c.state_dir, spec, secrets, n_secrets, c.root_uid, c.root_gid, err) < 0) {
                audit_refusal(g, id, err);
                goto out;
            }
        }
        cleanup_free char *fifo = xasprintf("%s/exec.fifo", c.state_dir);
        if (mkfifo(fifo, 0600) < 0) { /* created until start, as for every container */
            ac_error(err, errno, "mkfifo `%s`", fifo);
            goto out;
        }
        if (gvisor_create(g, &ga, &c.child, err) < 0)
            goto out;
        res->running = ga.run_now;
        fill_state(&st, &c, bundle, rootfs, spec, tier, timeout_ms);
        cleanup_free char *state = container_hook_state(&st, STATUS_CREATING);
        if (run_runtime_hooks(spec, state, NULL, err) < 0)
            goto out;
        goto record;
    }

    /* The runtime is single-threaded again from here on: the user
     * namespace's holder and what forks run on one thread. */
    bool netns_made = netns_ahead_take(&netns_ahead);

    /* 3b. A tier's user namespace (rootless containers bring their own). */
    if (tier != TIER_NONE && !g->is_rootless && tier_user_namespace(&c, spec, &plan, &late_userns_fd, err) < 0) {
        audit_refusal(g, id, err);
        goto out;
    }

    /* 3b'. A tier's writable host folders behind capped overlays. */
    if (tier != TIER_NONE && !g->is_rootless) {
        c.overlays = true;
        if (bind_overlays_prepare(c.state_dir, spec, 0700, err) < 0) {
            audit_refusal(g, id, err);
            goto out;
        }
    }

    /* 3c. A tier's credentials, from the operator's brokers. */
    if (tier != TIER_NONE) {
        c.credentials_issued = true;
        if (credentials_issue(g, c.state_dir, id, tier, spec, timeout_ms, &secrets, &n_secrets, err) < 0) {
            audit_refusal(g, id, err);
            goto out;
        }
    }

    idmap_fds = make_idmap_fds(spec, err);
    if (idmap_fds == (int *)-1) {
        idmap_fds = NULL;
        goto out;
    }
    /* a plain container's root in a new user namespace is no host root:
     * its bind sources are cloned here, where they can be reached (a tier
     * binds its sources itself, without following symlinks) */
    if (tier == TIER_NONE && plan.new_userns)
        bind_trees = rootfs_make_bind_trees(spec);

    /* 4. The exec fifo the child blocks on (not for a `run` that starts
     * it itself: its go comes over the sync socket, with no file to make
     * and unlink), the sync socket, the console. */
    if (!o->start_here) {
        cleanup_free char *fifo = xasprintf("%s/exec.fifo", c.state_dir);
        if (mkfifo(fifo, 0600) < 0) {
            ac_error(err, errno, "mkfifo `%s`", fifo);
            goto out;
        }
        fifo_fd = open(fifo, O_RDWR | O_CLOEXEC);
        if (fifo_fd < 0) {
            ac_error(err, errno, "open `%s`", fifo);
            goto out;
        }
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync_fds) < 0) {
        ac_error(err, errno, "socketpair");
        goto out;
    }
    if (spec->process->terminal) {
        if (o->console_socket) {
            console_fd = console_socket_connect(o->console_socket, err);
            if (console_fd < 0)
                goto out;
        } else if (o->foreground) {
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, console_pair) < 0) {
                ac_error(err, errno, "socketpair");
                goto out;
            }
            console_fd = console_pair[1];
        } else {
            ac_error(err, 0, "process.terminal is true but no --console-socket was given");
            goto out;
        }
    } else if (o->console_socket) {
        ac_debug("--console-socket given but process.terminal is false: ignored");
    }

    /* 5. Namespaces the child cannot enter itself: pid (setns only moves
     * children) and a new time namespace (offsets before anyone enters). */
    if (plan.pid_join_fd >= 0) {
        saved_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
        if (setns(plan.pid_join_fd, CLONE_NEWPID) < 0) {
            ac_error(err, errno, "linux.namespaces: join the pid namespace");
            goto out;
        }
    }
    if (plan.new_timens) {
        saved_timens = open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
        if (prepare_time_namespace(spec, err) < 0)
            goto out;
    }

    /* 6. Clone the container's init. */
    struct init_config ic = {
        .spec = spec,
        .id = id,
        .bundle = bundle,
        .rootfs = host_rootfs ? host_rootfs : rootfs,
        .sync_fd = sync_fds[1],
        .fifo_fd = fifo_fd,
        .console_fd = console_fd,
        .new_userns = plan.new_userns,
        .new_netns = plan.new_netns && !netns_made, /* (one made ahead has lo up) */
        .own_utsns = plan.own_utsns,
        .new_cgroupns = plan.new_cgroupns,
        .no_pivot = o->no_pivot,
        .host_mntns = plan.host_mntns,
        .no_new_keyring = o->no_new_keyring,
        .preserve_fds = o->preserve_fds,
        .tier = tier,
        .runtime_hooks_early = runtime_hooks_all_early(tier, &plan, spec),
        .landlock_rw = landlock_rw,
        .rootless = g->is_rootless,
        .late_userns_fd = late_userns_fd,
        .idmap_fds = idmap_fds,
        .bind_tree_fds = bind_trees,
        .secrets = secrets,
        .n_secrets = n_secrets,
        .secrets_uid = c.root_uid,
        .secrets_gid = c.root_gid,
    };
    memcpy(ic.join_fds, plan.join_fds, sizeof(ic.join_fds));
    bool into_cgroup;
    ic.cgroup_join = &join;
    bool child_joins = join.n > 0, has_v2 = join.v2_fd >= 0;
    c.child = netns_made ? netns_ahead_clone(&netns_ahead, plan.clone_flags, plan.new_userns ? -1 : join.v2_fd,
                                             &into_cgroup, &ic.new_netns)
                         : clone_child(plan.clone_flags, plan.new_userns ? -1 : join.v2_fd, &into_cgroup);
    if (c.child < 0) {
        c.child = 0;
        ac_error(err, errno, "clone the container process");
        goto out;
    }
    if (c.child == 0) {
        /* the lock is per open file: the child must not hold it while it
         * waits for start */
        close(lock_fd);
        close(sync_fds[0]);
        netns_ahead_close(&netns_ahead); /* the host's namespace among them */
        init_main(&ic);
    }
    close(sync_fds[1]);
    sync_fds[1] = -1;
    cgroup_join_close(&join);
    if (saved_pidns >= 0)
        setns(saved_pidns, CLONE_NEWPID);
    if (saved_timens >= 0)
        setns(saved_timens, CLONE_NEWTIME);

    /* 7. From the outside: id maps, cgroup, OOM score. */
    if (plan.new_userns && g->is_rootless) {
        if (rootless_write_id_maps(c.child, spec->linux, err) < 0)
            goto out;
    } else if (plan.new_userns) {
        if (write_id_map(c.child, "gid_map", spec->linux->gid_mappings, spec->linux->n_gid_mappings, err) < 0 ||
            write_id_map(c.child, "uid_map", spec->linux->uid_mappings, spec->linux->n_uid_mappings, err) < 0)
            goto out;
    }
    if (c.cgroup_made &&
        cgroup_join_finish(sync_fds[0], child_joins, has_v2, into_cgroup, c.cgroup_path, c.child, NULL, err) < 0) {
        /* a cgroup another create made and removed in its rollback before
         * ours joined it (two containers naming one cgroupsPath): made
         * again, once */
        if ((*err)->errno_value != ENOENT)
            goto out;
        ac_error_free(err);
        int made = cgroup_create(c.cgroup_path, spec->linux ? spec->linux->resources : NULL, err);
        if (made < 0 || cgroup_enter(c.cgroup_path, c.child, err) < 0)
            goto out;
        c.cgroup_ours = c.cgroup_ours || made == 1;
    }
    if (spec->process->has_oom_score_adj) {
        cleanup_free char *path = xasprintf("/proc/%d/oom_score_adj", c.child);
        cleanup_free char *val = xasprintf("%d", spec->process->oom_score_adj);
        if (write_file(path, val, strlen(val), err) < 0) {
            if (g->is_rootless && ((*err)->errno_value == EACCES || (*err)->errno_value == EPERM))
                ac_error_wrap(err, "process.oomScoreAdj %d: lowering the OOM score needs host root (rootless)",
                              spec->process->oom_score_adj);
            else
                ac_error_wrap(err, "process.oomScoreAdj");
            goto out;
        }
    }

    /* 8. Let it run its setup; run our hooks when it asks. */
    fill_state(&st, &c, bundle, rootfs, spec, tier, timeout_ms);
    st.shared_pidns = !plan.new_pidns;
    st.userns_late = late_userns_fd >= 0;
    {
        cleanup_free char *creating = container_hook_state(&st, STATUS_CREATING);
        cleanup_free char *created = container_hook_state(&st, STATUS_CREATED);
        size_t l1 = strlen(creating), l2 = strlen(created);
        cleanup_free char *both = xmalloc(l1 + l2 + 2);
        memcpy(both, creating, l1 + 1);
        memcpy(both + l1 + 1, created, l2 + 1);
        if (sync_send(sync_fds[0], SYNC_GO, both, l1 + l2 + 2) < 0) {
            ac_error(err, errno, "container init: write to it");
            goto out;
        }
    }
    /* `run` at a tier: the watchdog starts during create, on the other CPU
     * while the init sets itself up, and gets its go from start (not for
     * gVisor, whose create took another path). Not where the egress proxy
     * starts early (tiers 2-3): it has that CPU, and in A/B the watchdog
     * then cost as much as it saved (docs/benchmark.md). */
    if (o->start_here && tier != TIER_NONE && !hooks_may_start_early(tier, &plan, spec) &&
        watchdog_ahead(g, &c, &st, err) < 0)
        goto out;
    if (start_hooks_early(tier, &plan, spec, &st, &early, err) < 0 ||
        supervise_setup(&c, sync_fds[0], spec, &st, &early, err) < 0 ||
        hooks_finish_early(HOOK_CREATE_RUNTIME, &early, err) < 0)
        goto out;
    st.notify_fd = c.notify_fd;

    /* 9. Record it (a tiered pod's sandbox: with its cage network
     * namespace, which the pod's containers may then join). */
record:
    st.pid_start_time = process_start_time(c.child);
    if (plan.new_netns && pod_role_is(spec, tier, "sandbox")) {
        cleanup_free char *ns = xasprintf("/proc/%d/ns/net", c.child);
        struct stat nsb;
        if (stat(ns, &nsb) < 0) {
            ac_error(err, errno, "tier %d: the pod's cage `%s`", tier, ns);
            goto out;
        }
        st.netns_dev = nsb.st_dev;
        st.netns_ino = nsb.st_ino;
    }
    if (state_save(g, &st, err) < 0)
        goto out;
    if (o->pid_file && write_pid_file(o->pid_file, c.child, err) < 0)
        goto out;
    if (grant) {
        cleanup_free char *reason = NULL;
        int used = approval_use(g->tier.approvals_dir, grant, &reason, err);
        if (used <= 0) {
            if (used == 0)
                ac_error(err, 0, "tier %d: %s for container %s: run `agentcage approve %s`", tier, reason, id, grant);
            audit_refusal(g, id, err);
            goto out;
        }
        cleanup_free char *jgrant = audit_json_string(grant);
        cleanup_free char *used_members = xasprintf("\"grant\":%s,\"policy\":\"%s\"", jgrant, policy_digest);
        container_audit(g, "approval-used", id, used_members);
    }
    if (tier != TIER_NONE) {
        cleanup_free char *members = xasprintf("\"tier\":%d,\"pid\":%d,\"policy\":\"%s\"%s", tier, c.child,
                                               policy_digest, c.gvisor ? ",\"kernel\":\"gvisor\"" : "");
        container_audit(g, "container-created", id, members);
    }
    if (console_pair[0] >= 0) {
        res->console_master = recv_fd(console_pair[0]);
        if (res->console_master < 0) {
            ac_error(err, errno, "receive the pty master");
            goto out;
        }
    }
    res->pid = c.child;
    if (o->start_here && !c.gvisor) {
        res->start_fd = sync_fds[0];
        sync_fds[0] = -1;
        res->state = state_dup(&st);
    }
    c.child = 0;
    ret = 0;
out:
    netns_ahead_close(&netns_ahead);
    userns_reap_holder(); /* the tier's (dead long since: the init was set up meanwhile) */
    hooks_early_abandon(&early);
    if (ret < 0)
        rollback(&c);
    for (int i = 0; i < 2; i++) {
        if (sync_fds[i] >= 0)
            close(sync_fds[i]);
        if (console_pair[i] >= 0 && console_pair[i] != console_fd)
            close(console_pair[i]);
    }
    if (st.annotations)
        for (char **a = st.annotations; *a; a++)
            free(*a);
    free(st.annotations);
    free(st.created);
    free(c.state_dir);
    free(c.cgroup_path);
    hooks_set_extra_env(NULL);
    free(c.denials_env);
    cgroup_join_close(&join);
    close_fd_array(idmap_fds, spec->n_mounts);
    close_fd_array(bind_trees, spec->n_mounts);
    credentials_forget(secrets, n_secrets);
    ns_plan_close(&plan);
    if (res->state) {
        /* (the effective config, as saved in the state dir) */
        res->config = ac_steal_ptr(&spec);
        res->state->config = res->config;
    }
    return ret;
}
