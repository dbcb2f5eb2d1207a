/* Rootless operation: detection, the rootless defaults, delegated cgroups
 * and id maps written without host root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/linux/rootless.h"
#include "runtime/util/utils.h"

/* Root of a user namespace that maps only part of the id range is not the
 * host's root: mounts, cgroups, sysctls and devices are what that user may
 * do, no more. */
static bool in_partial_userns(void)
{
    cleanup_file FILE *f = fopen("/proc/self/uid_map", "re");
    if (f == NULL)
        return false;
    unsigned long long inside, outside, count;
    int lines = 0;
    bool full = false;
    while (fscanf(f, "%llu %llu %llu", &inside, &outside, &count) == 3) {
        lines++;
        full = inside == 0 && outside == 0 && count == 4294967295ULL;
    }
    return !(lines == 1 && full);
}

int rootless_detect(const char *flag, bool *rootless, ac_error_t *err)
{
    if (flag && strcmp(flag, "true") == 0) {
        *rootless = true;
        return 0;
    }
    if (flag && strcmp(flag, "false") == 0) {
        *rootless = false;
        return 0;
    }
    if (flag && strcmp(flag, "auto") != 0)
        return ac_error(err, 0, "--rootless: expected true, false or auto, got `%s`", flag);
    *rootless = geteuid() != 0 || in_partial_userns();
    return 0;
}

int rootless_limits_parse(const char *value, bool *best_effort, ac_error_t *err)
{
    if (strcmp(value, "best-effort") == 0)
        *best_effort = true;
    else if (strcmp(value, "refuse") == 0)
        *best_effort = false;
    else
        return ac_error(err, 0, "--rootless-limits: expected refuse or best-effort, got `%s`", value);
    return 0;
}

char *rootless_state_root(void)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && xdg[0] == '/')
        return xasprintf("%s/agentcage", xdg);
    return xasprintf("/tmp/agentcage-%u", (unsigned)geteuid());
}

/* The host uid behind uid in our user namespace, from /proc/self/uid_map. */
static uid_t host_uid_of(uid_t uid)
{
    cleanup_file FILE *f = fopen("/proc/self/uid_map", "re");
    unsigned long long inside, outside, count;
    while (f && fscanf(f, "%llu %llu %llu", &inside, &outside, &count) == 3)
        if (uid >= inside && uid - inside < count)
            return (uid_t)(outside + (uid - inside));
    return uid;
}

/* $XDG_STATE_HOME/agentcage/NAME, else ~/.local/state/agentcage/NAME. */
static char *user_state_path(const char *name)
{
    const char *state = getenv("XDG_STATE_HOME");
    if (state && state[0] == '/')
        return xasprintf("%s/agentcage/%s", state, name);
    /* the home of the host user we are (inside rootless Podman's user
     * namespace, uid 0 and HOME=/root are not that user) */
    uid_t host_uid = host_uid_of(geteuid());
    cleanup_free char *pw_home = NULL;
    const char *home = host_uid != 0 && passwd_file_user(NULL, host_uid, NULL, NULL, &pw_home) == 0 &&
                               pw_home[0] == '/'
                           ? pw_home
                           : getenv("HOME");
    if (home && home[0] == '/')
        return xasprintf("%s/.local/state/agentcage/%s", home, name);
    return xasprintf("/tmp/agentcage-%u/%s", (unsigned)geteuid(), name);
}

char *rootless_audit_log(void)
{
    return user_state_path("audit.jsonl");
}

char *rootless_approvals_dir(void)
{
    return user_state_path("approvals");
}

static void add_name(char **list, const char *name)
{
    char *old = *list;
    *list = old ? xasprintf("%s, %s", old, name) : xstrdup(name);
    free(old);
}

char *rootless_requested_limits(const struct oci_resources *r)
{
    if (r == NULL)
        return NULL;
    char *list = NULL;
    const struct oci_memory *m = &r->memory;
    if (r->has_memory && (m->has_limit || m->has_reservation || m->has_swap || m->has_swappiness ||
                          m->has_disable_oom_killer))
        add_name(&list, "memory");
    const struct oci_cpu *c = &r->cpu;
    if (r->has_cpu && (c->has_shares || c->has_quota || c->has_period || c->has_burst || c->has_realtime_runtime ||
                       c->has_realtime_period || c->has_idle || (c->cpus && *c->cpus) || (c->mems && *c->mems)))
        add_name(&list, "cpu");
    if (r->has_pids && r->has_pids_limit)
        add_name(&list, "pids");
    const struct oci_blkio *b = &r->blkio;
    if (r->has_blkio && (b->has_weight || b->has_leaf_weight || b->n_weight_device || b->n_throttle_read_bps_device ||
                         b->n_throttle_write_bps_device || b->n_throttle_read_iops_device ||
                         b->n_throttle_write_iops_device))
        add_name(&list, "blockIO");
    if (r->n_hugepage_limits)
        add_name(&list, "hugepageLimits");
    if ((r->has_network && r->has_net_class_id) || r->n_net_priorities)
        add_name(&list, "network");
    if (r->n_unified)
        add_name(&list, "unified");
    return list;
}

/* Our own cgroup2 path, from the "0::" line of /proc/self/cgroup. */
static char *own_v2_cgroup(void)
{
    cleanup_free char *text = NULL;
    ac_error_t ignore = NULL;
    if (read_all_file("/proc/self/cgroup", &text, NULL, &ignore) < 0) {
        ac_error_free(&ignore);
        return NULL;
    }
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "0::", 3) == 0)
            return xstrdup(line + 3);
        line = next;
    }
    return NULL;
}

bool rootless_cgroups_delegated(char **why)
{
    enum cgroup_mode mode = cgroup_host_mode();
    if (mode != CGROUP_MODE_V2) {
        *why = xstrdup(mode == CGROUP_MODE_HYBRID
                           ? "this host's cgroups are hybrid (v1 controllers), which are never delegated to users"
                           : "this host has cgroup v1, which is never delegated to users");
        return false;
    }
    cleanup_free char *own = own_v2_cgroup();
    if (own == NULL) {
        *why = xstrdup("no cgroup2 entry in /proc/self/cgroup");
        return false;
    }
    cleanup_free char *dir = xasprintf("/sys/fs/cgroup%s", strcmp(own, "/") == 0 ? "" : own);
    cleanup_free char *control = xasprintf("%s/cgroup.subtree_control", dir);
    if (access(dir, W_OK) < 0 || access(control, W_OK) < 0) {
        *why = xasprintf("cgroup `%s` is not delegated to this user (cgroup.subtree_control not writable; "
                         "run under a systemd user session with Delegate=yes)",
                         own);
        return false;
    }
    return true;
}

static bool single_own_map(const struct oci_idmap *m, size_t n, unsigned own)
{
    return n == 1 && m[0].host_id == own && m[0].size == 1;
}

static int write_map_file(pid_t pid, const char *file, const struct oci_idmap *m, ac_error_t *err)
{
    cleanup_free char *path = xasprintf("/proc/%d/%s", pid, file);
    char buf[64];
    int len = snprintf(buf, sizeof(buf), "%u %u %u\n", m->container_id, m->host_id, m->size);
    return write_file(path, buf, (size_t)len, err);
}

/* newuidmap PID INSIDE OUTSIDE COUNT...; its complaint becomes our error. */
static int run_map_helper(const char *helper, pid_t pid, const struct oci_idmap *m, size_t n, ac_error_t *err)
{
    char **argv = xcalloc(3 * n + 3, sizeof(char *));
    size_t a = 0;
    argv[a++] = xstrdup(helper);
    argv[a++] = xasprintf("%d", pid);
    for (size_t i = 0; i < n; i++) {
        argv[a++] = xasprintf("%u", m[i].container_id);
        argv[a++] = xasprintf("%u", m[i].host_id);
        argv[a++] = xasprintf("%u", m[i].size);
    }
    int out[2] = {-1, -1};
    int ret = -1;
    if (pipe2(out, O_CLOEXEC) < 0) {
        ac_error(err, errno, "%s: pipe", helper);
        goto done;
    }
    pid_t child = fork();
    if (child < 0) {
        ac_error(err, errno, "%s: fork", helper);
        goto done;
    }
    if (child == 0) {
        dup2(out[1], 1);
        dup2(out[1], 2);
        execvp(helper, argv);
        dprintf(2, "%s", errno == ENOENT ? "not installed (install Debian's uidmap package)" : strerror(errno));
        _exit(127);
    }
    close(out[1]);
    out[1] = -1;
    char msg[512];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(msg) - 1 && (r = read(out[0], msg + len, sizeof(msg) - 1 - len)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        len += (size_t)r;
    }
    msg[len] = '\0';
    while (len && msg[len - 1] == '\n')
        msg[--len] = '\0';
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    /* newuidmap names itself in its complaint already */
    size_t hl = strlen(helper);
    const char *text = strncmp(msg, helper, hl) == 0 && strncmp(msg + hl, ": ", 2) == 0 ? msg + hl + 2 : msg;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        ac_error(err, 0, "%s: %s", helper, *text ? text : "failed");
    else
        ret = 0;
done:
    for (int i = 0; i < 2; i++)
        if (out[i] >= 0)
            close(out[i]);
    for (size_t i = 0; i < a; i++)
        free(argv[i]);
    free(argv);
    return ret;
}

int rootless_write_id_maps(pid_t pid, const struct oci_linux *l, ac_error_t *err)
{
    if (single_own_map(l->gid_mappings, l->n_gid_mappings, (unsigned)getegid())) {
        cleanup_free char *setgroups = xasprintf("/proc/%d/setgroups", pid);
        if (write_file(setgroups, "deny", 4, err) < 0 ||
            write_map_file(pid, "gid_map", l->gid_mappings, err) < 0)
            return ac_error_wrap(err, "linux.gidMappings");
    } else if (run_map_helper("newgidmap", pid, l->gid_mappings, l->n_gid_mappings, err) < 0) {
        return ac_error_wrap(err, "linux.gidMappings (rootless: ranges other than our own gid need /etc/subgid)");
    }
    if (single_own_map(l->uid_mappings, l->n_uid_mappings, (unsigned)geteuid())) {
        if (write_map_file(pid, "uid_map", l->uid_mappings, err) < 0)
            return ac_error_wrap(err, "linux.uidMappings");
    } else if (run_map_helper("newuidmap", pid, l->uid_mappings, l->n_uid_mappings, err) < 0) {
        return ac_error_wrap(err, "linux.uidMappings (rootless: ranges other than our own uid need /etc/subuid)");
    }
    return 0;
}
