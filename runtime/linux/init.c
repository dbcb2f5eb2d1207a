/* The container process's side of create and exec.
 *
 * init_main() is the whole setup of a new container as one checklist, in the
 * order a reviewer should audit it:
 *   join the cgroup -> wait for the runtime (ids mapped) -> join namespaces ->
 *   become root in the user namespace -> cgroup namespace -> session ->
 *   loopback -> mounts -> createRuntime/createContainer hooks -> sysctl ->
 *   pivot_root, masks, read-only paths -> hostname -> (tier: join the
 *   user namespace, Landlock) ->
 *   terminal -> cwd, rlimits, scheduling, labels -> executable lookup ->
 *   seccomp (early only without no_new_privs) -> user and capabilities ->
 *   no_new_privs -> (tier: the tier's seccomp filter) -> ready -> wait for
 *   start -> seccomp -> startContainer hooks -> execve. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/ioprio.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/caps.h"
#include "runtime/linux/hooks.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/init.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/process.h"
#include "runtime/linux/rootfs.h"
#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/linux/tier_seccomp.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier.h"
/* Rootless, a sysctl that is not namespaced (or whose namespace is not
 * ours) is refused by the kernel; config.json asked for it explicitly, so
 * the container is refused too, saying why. */
static int set_sysctls(const struct oci_spec *spec, bool rootless, ac_error_t *err)
{
    if (spec->linux == NULL)
        return 0;
    for (size_t i = 0; i < spec->linux->n_sysctl; i++) {
        const struct oci_kv *kv = &spec->linux->sysctl[i];
        cleanup_free char *path = xasprintf("/proc/sys/%s", kv->key);
        for (char *c = path + 10; *c; c++)
            if (*c == '.')
                *c = '/';
        if (strstr(kv->key, "..") || strchr(kv->key, '/'))
            return ac_error(err, 0, "linux.sysctl: invalid name `%s`", kv->key);
        if (write_file(path, kv->value, strlen(kv->value), err) < 0) {
            int e = (*err)->errno_value;
            if (rootless && (e == EACCES || e == EPERM || e == EROFS || e == ENOENT))
                return ac_error_wrap(err, "linux.sysctl `%s`: not settable rootless (it is not namespaced to the "
                                          "container's namespaces, or they are not the runtime's own)",
                                     kv->key);
            return ac_error_wrap(err, "linux.sysctl `%s`", kv->key);
        }
    }
    return 0;
}

static int set_names(const struct init_config *c, ac_error_t *err)
{
    const struct oci_spec *spec = c->spec;
    if (spec->hostname && *spec->hostname) {
        if (!c->own_utsns)
            return ac_error(err, 0, "hostname: setting it needs a uts namespace of the container's in linux.namespaces");
        if (sethostname(spec->hostname, strlen(spec->hostname)) < 0)
            return ac_error(err, errno, "hostname: sethostname `%s`", spec->hostname);
    }
    if (spec->domainname && *spec->domainname) {
        if (!c->own_utsns)
            return ac_error(err, 0, "domainname: setting it needs a uts namespace of the container's in linux.namespaces");
        if (setdomainname(spec->domainname, strlen(spec->domainname)) < 0)
            return ac_error(err, errno, "domainname: setdomainname `%s`", spec->domainname);
    }
    return 0;
}

static int apply_personality(const struct oci_spec *spec, ac_error_t *err)
{
    if (spec->linux == NULL || !spec->linux->has_personality)
        return 0;
    unsigned long persona;
    const char *d = spec->linux->personality_domain;
    if (d == NULL || strcmp(d, "LINUX") == 0)
        persona = PER_LINUX;
    else if (strcmp(d, "LINUX32") == 0)
        persona = PER_LINUX32;
    else
        return ac_error(err, 0, "linux.personality.domain: unknown `%s`", d);
    if (personality(persona) < 0)
        return ac_error(err, errno, "linux.personality: personality");
    return 0;
}

static int write_secrets(const struct init_config *c, ac_error_t *err)
{
    /* the folder too is the container root's, and only readable */
    if (chown("/run/secrets", c->secrets_uid, c->secrets_gid) < 0 || chmod("/run/secrets", 0500) < 0)
        return ac_error(err, errno, "credentials: `/run/secrets`");
    for (size_t i = 0; i < c->n_secrets; i++) {
        cleanup_free char *path = xasprintf("/run/secrets/%s", c->secrets[i].name);
        cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        const char *v = c->secrets[i].secret;
        if (fd < 0 || write_all(fd, v, strlen(v)) < 0 || fchown(fd, c->secrets_uid, c->secrets_gid) < 0)
            return ac_error(err, errno, "credential %s: write `%s`", c->secrets[i].name, path);
        explicit_bzero(c->secrets[i].secret, strlen(v));
    }
    return 0;
}

/* Is a namespace of this type given by path in linux.namespaces? */
static bool joins_ns(const struct init_config *c, int type)
{
    for (int i = 0; i < NS_COUNT; i++)
        if (ns_join_order[i] == type)
            return c->join_fds[i] >= 0;
    return false;
}

/* Report the error to the runtime and die. */
__attribute__((noreturn)) static void init_fail(int sync_fd, ac_error_t *err)
{
    cleanup_free char *msg = ac_error_string(*err);
    sync_send(sync_fd, SYNC_ERROR, msg, strlen(msg));
    _exit(1);
}

static void run_container_hooks(const struct init_config *c, enum oci_hook_kind kind, const char *state,
                                 ac_error_t *err)
{
    const struct oci_hooks *h = &c->spec->hooks;
    if (h->n_hooks[kind] && hooks_run(kind, h->hooks[kind], h->n_hooks[kind], state, err) < 0)
        init_fail(c->sync_fd, err);
}

void init_main(const struct init_config *c)
{
    ac_error_t err = NULL;
    const struct oci_spec *spec = c->spec;
    const struct oci_process *p = spec->process;

    /* Non-dumpable before any container namespace is entered: until execve
     * this process is a copy of agentcage, and /proc/<pid>/exe must not be
     * a handle on the runtime binary for the container. Die with the runtime
     * while it is setting us up. */
    /* Rootless, the runtime (or newuidmap, which checks the owner of
     * /proc/<pid>) must open our /proc files to map our ids, and the
     * createRuntime hooks (the egress proxy) our namespaces, which a
     * non-dumpable process denies to a user who is not host root. There
     * the attack does not apply: that user cannot write the runtime binary
     * anyway. So rootless we stay dumpable until execve. */
    if (!c->rootless)
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    prepare_inherited_fds(c->preserve_fds);
    ac_log_keep_stderr();
    /* (these debug lines name the steps with runc's words: runc's suite
     * looks for them, and agentcage's init takes the same steps) */
    ac_debug("child process in init(): container `%s`, pid %d", c->id, (int) getpid());

    /* 0. Our v1 cgroups, joined by ourselves (no grace-period wait, see
     * cgroup.h) before anything else; the runtime joins us the slow way
     * when we could not. */
    if (c->cgroup_join && c->cgroup_join->n)
        cgroup_join_report(c->cgroup_join, c->sync_fd);
    else if (c->cgroup_join)
        cgroup_join_close(c->cgroup_join);

    /* 1. The runtime has mapped our ids and put us in the cgroup. */
    enum sync_type t;
    char *states = NULL;
    size_t states_len = 0;
    if (sync_recv(c->sync_fd, &t, &states, &states_len) < 0 || t != SYNC_GO)
        _exit(1);
    /* states = "creating" state JSON, NUL, "created" state JSON */
    const char *state_creating = states;
    const char *state_created = states + strlen(states) + 1;

    /* 2. Join the namespaces given by path: user first, mount last. */
    ac_debug("nsexec container setup: the namespaces (cloned new, then joined by path)");
    for (int i = 0; i < NS_COUNT; i++) {
        if (c->join_fds[i] >= 0 && setns(c->join_fds[i], ns_join_order[i]) < 0) {
            ac_error(&err, errno, "linux.namespaces: join the %s namespace", ns_proc_name(ns_join_order[i]));
            init_fail(c->sync_fd, &err);
        }
    }
    /* 3. Root of the user namespace (uid/gid 0 are mapped by now). */
    if (c->new_userns || c->join_fds[0] >= 0) {
        if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
            ac_error(&err, errno, "user namespace: become root (is uid/gid 0 mapped?)");
            init_fail(c->sync_fd, &err);
        }
    }
    /* 4. The cgroup namespace is made now, after the runtime put us in our
     * cgroup, so that the container sees its cgroup as its root. */
    if (c->new_cgroupns && unshare(CLONE_NEWCGROUP) < 0) {
        ac_error(&err, errno, "linux.namespaces: new cgroup namespace");
        init_fail(c->sync_fd, &err);
    }
    setsid();
    if (c->new_netns && loopback_up(&err) < 0)
        init_fail(c->sync_fd, &err);

    /* 5. Mounts, devices (relative sources were made absolute by create). */
    struct rootfs_options ro = {.rootfs = c->rootfs, .no_pivot = c->no_pivot, .host_mntns = c->host_mntns,
                                .in_user_ns = c->new_userns || c->rootless, .rootless = c->rootless,
                                .nofollow_bind_sources = c->tier != TIER_NONE, .tiered = c->tier != TIER_NONE,
                                .protect_roots = c->tier != TIER_NONE
                                                     ? spec_annotation(spec, "io.agentcage.protect-roots")
                                                     : NULL,
                                .home_roots = c->tier != TIER_NONE ? spec_annotation(spec, "io.agentcage.home-roots")
                                                                   : NULL,
                                .home_allow = c->tier != TIER_NONE ? spec_annotation(spec, "io.agentcage.home-allow")
                                                                   : NULL,
                                .cgroupns_is_runtimes = !c->new_cgroupns && !joins_ns(c, CLONE_NEWCGROUP) &&
                                                        !joins_ns(c, CLONE_NEWNS),
                                .rootfs_idmap_fd = c->late_userns_fd,
                                .idmap_fds = c->idmap_fds, .bind_tree_fds = c->bind_tree_fds};
    if (rootfs_prepare(spec, &ro, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 6. prestart and createRuntime run in the runtime's namespaces (when
     * the spec has any); createContainer here, before pivot_root. */
    if (hooks_runtime_side(spec) && !c->runtime_hooks_early) {
        if (sync_send(c->sync_fd, SYNC_RUN_HOOKS, NULL, 0) < 0)
            _exit(1);
        char *reply = NULL;
        if (sync_recv(c->sync_fd, &t, &reply, NULL) < 0 || t != SYNC_HOOKS_DONE)
            _exit(1);
        free(reply);
    }
    /* createContainer hooks start in the container's rootfs (runc does the
     * same): a hook's relative paths ("./lib/...") name the container's files. */
    if (chdir(ro.rootfs) < 0) {
        ac_error(&err, errno, "chdir to the rootfs `%s` for the createContainer hooks", ro.rootfs);
        init_fail(c->sync_fd, &err);
    }
    run_container_hooks(c, HOOK_CREATE_CONTAINER, state_creating, &err);

    /* 7. Kernel parameters, through /proc before it turns read-only (the
     * namespaced ones follow the writer's namespaces, which are ours). */
    if (set_sysctls(spec, c->rootless, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 8. pivot_root, masked and read-only paths, read-only root. */
    if (rootfs_finalize(spec, &ro, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 9. Names, keyring, personality. */
    if (set_names(c, &err) < 0 || apply_personality(spec, &err) < 0)
        init_fail(c->sync_fd, &err);
    if (!c->no_new_keyring) {
        cleanup_free char *name = xasprintf("_ses.%s", c->id);
        /* KEYCTL_JOIN_SESSION_KEYRING = 1; ENOSYS/EPERM (no keyrings) is fine */
        syscall(SYS_keyctl, 1, name, 0, 0, 0);
    }

    /* 9b. A tier's credentials: files in the tmpfs the mapping put at
     * /run/secrets, readable by the container's root alone. */
    if (c->n_secrets && write_secrets(c, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 10. A tier's user namespace, joined last: every step above ran as host
     * root in namespaces the host owns, so from here the container's root
     * (an unprivileged host id) has capabilities over its user namespace
     * alone, not over its mounts, network or hostname. */
    if (c->late_userns_fd >= 0) {
        if (setns(c->late_userns_fd, CLONE_NEWUSER) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
            ac_error(&err, errno, "tier %d: join the container's user namespace", c->tier);
            init_fail(c->sync_fd, &err);
        }
        close(c->late_userns_fd);
    }

    /* 11. A tier's Landlock: from here on, writes only beneath /dev and the
     * tier's writable paths (the root is the container's now; the caps are
     * still there but Landlock holds against them). */
    struct process_state ps = {.sync_fd = c->sync_fd};
    if (c->tier != TIER_NONE && tier_enter_cage(c->tier, c->landlock_rw, &ps, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 12. The process: terminal, cwd, rlimits, labels, user, caps, seccomp. */
    if (process_setup(p, spec->linux ? spec->linux->seccomp : NULL, c->console_fd, &ps, &err) < 0)
        init_fail(c->sync_fd, &err);
    if (c->console_fd >= 0)
        close(c->console_fd);

    /* 12b. A tier's seccomp filter, now: at tiers 1-3 its refusals go to
     * a listener, whose fd (close-on-exec) `start` takes from us and hands
     * to the watchdog before the process runs; what we still do from here
     * is allowed at every tier. */
    if (tier_seccomp_now(&ps, &err) < 0)
        init_fail(c->sync_fd, &err);

    /* 13. Ready: the runtime records us (and the listener's fd number) and
     * returns from create. We no longer die with it: the engine's shim is
     * our parent from now on. */
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    char notify[16] = "";
    if (ps.tier_loaded && ps.notify_fd >= 0)
        snprintf(notify, sizeof(notify), "%d", ps.notify_fd);
    if (sync_send(c->sync_fd, SYNC_READY, notify, strlen(notify)) < 0)
        _exit(1);

    /* 14. Wait for `start`: it writes one byte into the exec fifo (the
     * runtime's stderr not held open meanwhile: create has returned); a
     * `run` that starts us itself sends its go over the sync socket (its
     * end closed: it is gone, and so are we). */
    ac_log_release_stderr();
    if (c->fifo_fd < 0) {
        enum sync_type go;
        if (sync_recv(c->sync_fd, &go, NULL, NULL) < 0 || go != SYNC_GO)
            _exit(1);
    } else {
        char b;
        ssize_t r;
        do
            r = read(c->fifo_fd, &b, 1);
        while (r < 0 && errno == EINTR);
        if (r != 1)
            _exit(1);
    }

    /* 15. The config's seccomp filter, then the startContainer hooks under
     * it (as runc runs them: a hook is a program in the container; a tier's
     * filter is loaded already), then execve. The sync socket is close-on-exec: the
     * runtime (when it waits, as `run` does) sees EOF. */
    const struct oci_hooks *h = &spec->hooks;
    /* (logged before the filter, which may not allow the write) */
    ac_debug("init: closing the pipe to signal completion (the sync socket closes at execve)");
    if (process_load_seccomp(&ps, &err) == 0) {
        /* past create: its failure goes to the container's stderr below */
        if (h->n_hooks[HOOK_START_CONTAINER] &&
            hooks_run(HOOK_START_CONTAINER, h->hooks[HOOK_START_CONTAINER], h->n_hooks[HOOK_START_CONTAINER],
                      state_created, &err) < 0)
            ac_error_wrap(&err, "error running hook");
        else
            process_exec(p, &ps, &err);
    }
    cleanup_free char *msg = ac_error_string(err);
    sync_send(c->sync_fd, SYNC_ERROR, msg, strlen(msg));
    dprintf(2, "agentcage: %s\n", msg);
    _exit(127);
}
