/* Mounts, masked and read-only paths, devices.
 *
 * Bind mounts are where the host reaches into a cage, so each source is
 * checked against the forbidden list (the host's configuration, kernel
 * interfaces, engine sockets, credential folders), tier 0 makes every bind
 * read-only, and every tier hides the credential paths under each project
 * mount; writable tiers also keep the rc files and git hooks there
 * read-only, as they run on the host later. */
#include <stdio.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

/* Lexical normalisation: "//", "." and ".." folded. NULL when a relative
 * path climbs out of where it starts (for bind sources: the bundle). */
static char *normalise(const char *path)
{
    bool absolute = path[0] == '/';
    char *out = xmalloc(strlen(path) + 2);
    size_t len = 0;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.')) {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (len == 0 && !absolute) {
                free(out);
                return NULL;
            }
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--;
        } else {
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
    }
    out[len] = '\0';
    if (absolute && len == 0)
        strcpy(out, "/");
    else if (!absolute && len == 0)
        strcpy(out, ".");
    else if (!absolute)
        memmove(out, out + 1, len);
    return out;
}

/* path is dir or below it */
static bool path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/' || strcmp(dir, "/") == 0);
}

/* Has the relative path rel (".ssh", ".config/gcloud") as components. */
static bool has_components(const char *path, const char *rel)
{
    size_t n = strlen(rel);
    for (const char *p = path; (p = strstr(p, rel)) != NULL; p++)
        if ((p == path || p[-1] == '/') && (p[n] == '\0' || p[n] == '/'))
            return true;
    return false;
}

static bool source_forbidden(const struct tier_defs *defs, const char *src)
{
    if (src[0] == '/') {
        if (strcmp(src, "/") == 0)
            return true;
        for (size_t i = 0; i < defs->forbidden_sources.n; i++) {
            const char *f = defs->forbidden_sources.v[i];
            /* below a forbidden path, or a folder holding one (/var, /run) */
            if (path_within(src, f) || path_within(f, src))
                return true;
        }
    }
    for (size_t i = 0; i < defs->credential_paths.n; i++)
        if (has_components(src, defs->credential_paths.v[i]))
            return true;
    return false;
}

static bool has_option(yajl_val options, const char *opt) { return tj_array_has_string(options, opt); }

static bool is_bind(yajl_val m)
{
    const char *type = tj_get_str(m, "type");
    yajl_val options = tj_get(m, "options");
    return (type && strcmp(type, "bind") == 0) || has_option(options, "bind") || has_option(options, "rbind");
}

static void remove_option(yajl_val options, const char *opt)
{
    for (size_t i = 0; i < options->u.array.len;)
        if (YAJL_IS_STRING(options->u.array.values[i]) && strcmp(options->u.array.values[i]->u.string, opt) == 0)
            tj_remove_at(options, i);
        else
            i++;
}

/* true when something changed; recursive (rro) for binds, whose rbind
 * brings the host's submounts along */
static bool make_readonly(yajl_val m, bool recursive)
{
    yajl_val options = tj_get_array(m, "options");
    bool changed = false;
    if (has_option(options, "rw")) {
        remove_option(options, "rw");
        changed = true;
    }
    static const char *const ro[] = {"ro", "rro"};
    for (size_t i = 0; i < (recursive ? 2u : 1u); i++)
        if (!has_option(options, ro[i])) {
            tj_push(options, tj_new_string(ro[i]));
            changed = true;
        }
    return changed;
}

static void add_path(yajl_val list, const char *path, size_t *added)
{
    if (!tj_array_has_string(list, path)) {
        tj_push(list, tj_new_string(path));
        (*added)++;
    }
}

/* Credential paths under a project mount are masked at every tier (a
 * read-only ~/.ssh/id_rsa is still a stolen key); rc files and hooks are
 * made read-only where the mount is writable. */
static void protect_under(struct tier_ctx *c, size_t i, const char *dest, bool writable)
{
    yajl_val lx = tj_get_object(c->config, "linux");
    yajl_val masked = tj_get_array(lx, "maskedPaths");
    yajl_val readonly = tj_get_array(lx, "readonlyPaths");
    size_t n_masked = 0, n_readonly = 0;
    const char *sep = strcmp(dest, "/") == 0 ? "" : "/";
    for (size_t k = 0; k < c->defs->credential_paths.n; k++) {
        cleanup_free char *p = xasprintf("%s%s%s", dest, sep, c->defs->credential_paths.v[k]);
        add_path(masked, p, &n_masked);
    }
    for (size_t k = 0; writable && k < c->defs->rc_files.n; k++) {
        cleanup_free char *p = xasprintf("%s%s%s", dest, sep, c->defs->rc_files.v[k]);
        add_path(readonly, p, &n_readonly);
    }
    if (writable)
        tier_decide(c, "mounts[%zu] %s: writable; %zu credential paths under it masked, %zu rc files and hooks read-only",
                    i, dest, n_masked, n_readonly);
    else
        tier_decide(c, "mounts[%zu] %s: %zu credential paths under it masked", i, dest, n_masked);
}

/* A size-capped tmpfs: tier 0's small scratch, or any tier's /workspace. */
static yajl_val new_tmpfs(const char *dest, int64_t size)
{
    yajl_val m = tj_new_object();
    tj_set(m, "destination", tj_new_string(dest));
    tj_set(m, "type", tj_new_string("tmpfs"));
    tj_set(m, "source", tj_new_string("tmpfs"));
    yajl_val options = tj_new_array();
    tj_push(options, tj_new_string("nosuid"));
    tj_push(options, tj_new_string("nodev"));
    tj_push(options, tj_new_string("mode=1777"));
    char buf[48];
    snprintf(buf, sizeof(buf), "size=%lld", (long long)size);
    tj_push(options, tj_new_string(buf));
    tj_set(m, "options", options);
    return m;
}

/* Cap an existing tmpfs's size= at limit. */
static void cap_tmpfs(struct tier_ctx *c, size_t i, yajl_val m, const char *dest, int64_t limit)
{
    yajl_val options = tj_get_array(m, "options");
    int64_t size = 0;
    for (size_t k = 0; k < options->u.array.len; k++) {
        yajl_val o = options->u.array.values[k];
        if (YAJL_IS_STRING(o) && strncmp(o->u.string, "size=", 5) == 0) {
            if (tier_parse_size(o->u.string + 5, &size) < 0)
                size = 0; /* "50%": replaced */
            tj_remove_at(options, k);
            break;
        }
    }
    char buf[48], b[32];
    if (size > 0 && size <= limit) {
        snprintf(buf, sizeof(buf), "size=%lld", (long long)size);
        tj_push(options, tj_new_string(buf));
        return;
    }
    snprintf(buf, sizeof(buf), "size=%lld", (long long)limit);
    tj_push(options, tj_new_string(buf));
    tier_decide(c, "mounts[%zu] %s: tmpfs capped at %s", i, dest, tier_format_size(limit, b, sizeof(b)));
}

/* Insert a mount before the first one under dest, so it does not hide them. */
static size_t insert_position(yajl_val mounts, const char *dest)
{
    for (size_t i = 0; i < mounts->u.array.len; i++) {
        const char *d = tj_get_str(mounts->u.array.values[i], "destination");
        if (d && path_within(d, dest))
            return i;
    }
    return mounts->u.array.len;
}

/* The engine's own copy of a plumbing file (/etc/hosts, /etc/resolv.conf,
 * /dev/shm ...), kept in its state folders (/var/lib/docker/containers/ID/,
 * /var/lib/containers/.../userdata/, /run/user/UID/containers/... for
 * rootless Podman, /var/lib/kubelet/pods/... for the termination log),
 * which are otherwise forbidden sources: the same name as the destination,
 * and nowhere near the host's own /etc, /proc, /sys, /dev, /boot or /root. */
static bool engine_file(const char *src, const char *dest)
{
    static const char *const host_dirs[] = {"/etc", "/proc", "/sys", "/dev", "/boot", "/root"};
    for (size_t k = 0; k < sizeof(host_dirs) / sizeof(host_dirs[0]); k++)
        if (path_within(src, host_dirs[k]))
            return false;
    if (strchr(src + 1, '/') == NULL)
        return false; /* a top-level folder is no engine's file */
    if (strcmp(dest, "/dev/termination-log") == 0)
        return path_within(src, "/var/lib/kubelet/pods");
    const char *sb = strrchr(src, '/') + 1, *db = strrchr(dest, '/') + 1;
    return strcmp(sb, db) == 0 || (strcmp(db, "resolv.conf") == 0 && strcmp(sb, "resolv.conf.d") != 0 &&
                                   strncmp(sb, "resolv", 6) == 0);
}

/* A home directory: /root or /home/NAME (as a bind's source or destination),
 * where no new name may appear at the top (.profile, .ssh ...). */
static bool home_like(const char *path)
{
    if (strcmp(path, "/root") == 0)
        return true;
    if (strncmp(path, "/home/", 6) != 0 || path[6] == '\0')
        return false;
    return strchr(path + 6, '/') == NULL;
}

/* Strictly below one of the colon-separated roots. */
static bool below_root_list(const char *list, const char *path)
{
    for (const char *p = list; p && *p;) {
        const char *end = strchrnul(p, ':');
        size_t n = (size_t)(end - p);
        if (n > 0 && strncmp(path, p, n) == 0 && path[n] == '/' && path[n + 1] != '\0')
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* An allow-list of where a bind source may come from: the bundle, or
 * strictly below one of the operator's bind roots (tiers.json's default
 * roots when the operator named none). The host's programs, libraries and
 * configuration (/usr/local/bin, /opt, /boot ...) are below none. */
static bool source_allowed(const struct tier_ctx *c, const char *norm)
{
    if (norm[0] != '/')
        return true; /* relative: the bundle's own (normalise keeps it inside) */
    if (c->bundle && path_within(norm, c->bundle))
        return true;
    if (c->op->bind_roots)
        return below_root_list(c->op->bind_roots, norm);
    for (size_t i = 0; i < c->defs->default_bind_roots.n; i++)
        if (below_root_list(c->defs->default_bind_roots.v[i], norm))
            return true;
    return false;
}

/* The operator's approvals and the audit trail, wherever they were put
 * (--approvals-dir, --audit-log): a container that could reach them would
 * approve itself or rewrite its record. */
static bool operator_state_near(const struct tier_operator *op, const char *norm)
{
    if (norm[0] != '/')
        return false;
    if (op->approvals_dir && (path_within(norm, op->approvals_dir) || path_within(op->approvals_dir, norm)))
        return true;
    if (op->audit_log) {
        cleanup_free char *dir = xstrdup(op->audit_log);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
        if (path_within(norm, dir) || path_within(dir, norm))
            return true;
    }
    return false;
}

/* Writable binds go through a capped overlay unless the operator says
 * --bind-changes direct, or the runtime is rootless (no host mounts). */
static bool capped_binds(const struct tier_ctx *c)
{
    return !c->op->rootless && !(c->op->bind_changes && strcmp(c->op->bind_changes, "direct") == 0);
}

static int map_bind(struct tier_ctx *c, size_t i, yajl_val m, const char *dest, ac_error_t *err)
{
    const char *source = tj_get_str(m, "source");
    if (source == NULL || source[0] == '\0')
        return tier_refuse(c, err, "a bind mount without a source (mounts[%zu])", i);
    cleanup_free char *norm = normalise(source);
    if (norm == NULL)
        return tier_refuse(c, err, "mount of %s (mounts[%zu]): a relative source leaving the bundle", source, i);
    bool plumbing = tier_strv_has(&c->defs->plumbing_mounts, dest);
    bool engine = plumbing && engine_file(norm, dest);
    if (source_forbidden(c->defs, norm) && !engine)
        return tier_refuse(c, err, "mount of %s (mounts[%zu])", source, i);
    if (operator_state_near(c->op, norm))
        return tier_refuse(c, err, "mount of %s (mounts[%zu]): it holds or lies in agentcage's approvals or audit trail",
                           source, i);
    if (!engine && !source_allowed(c, norm))
        return tier_refuse(c, err, "mount of %s (mounts[%zu]): not below the bundle or a bind root (%s)", source, i,
                           c->op->bind_roots ? c->op->bind_roots : "the default bind roots, see --bind-roots");
    /* /dev/shm stays writable: shared memory, under the /dev the runtime
     * gives Landlock itself */
    if (c->def->binds_readonly && strcmp(dest, "/dev/shm") != 0) {
        if (make_readonly(m, true))
            tier_decide(c, "mounts[%zu] %s -> %s: read-only (tier %d)", i, source, dest, c->tier);
    }
    if (plumbing)
        return 0; /* the engine's own files (hosts, resolv.conf ...), not a project */
    bool home = home_like(dest) || home_like(norm) || list_has(c->op->home_mounts, ':', dest) ||
                list_has(c->op->home_mounts, ':', norm);
    if (home)
        tier_home_add(c, dest);
    bool writable = !has_option(tj_get(m, "options"), "ro");
    protect_under(c, i, dest, writable);
    if (writable) {
        tier_landlock_add(c, dest);
        tier_protect_add(c, dest, home);
    }
    if (writable && capped_binds(c)) {
        /* its writes land in an overlay on a tmpfs of the workspace size,
         * copied back at delete (or kept for review) */
        char b[32];
        tier_capped_add(c, dest);
        tier_decide(c, "mounts[%zu] %s: writes capped at %s (an overlay on a tmpfs, %s at delete)", i, dest,
                    tier_format_size(c->limits.workspace, b, sizeof(b)),
                    c->op->bind_changes && strcmp(c->op->bind_changes, "review") == 0 ? "kept for review"
                                                                                        : "copied back");
    } else if (writable && strcmp(dest, "/workspace") == 0) {
        /* a host folder written directly cannot be size-capped: say so,
         * and refuse when a cap was asked for explicitly */
        if (tj_get_str(tj_get(c->config, "annotations"), "io.agentcage.workspace-size"))
            return tier_refuse(c, err,
                               "io.agentcage.workspace-size with a bind-mounted /workspace (mounts[%zu]): a host "
                               "folder written directly (--bind-changes direct) cannot be size-capped",
                               i);
        tier_decide(c, "mounts[%zu] /workspace: a host folder written directly, not capped in size (the host's disk)",
                    i);
    }
    return 0;
}

/* The place a kernel filesystem type may be mounted at (tiers.json's
 * kernelMounts, "type=/dest"), or NULL when the type is none of them. */
static const char *kernel_mount_place(const struct tier_defs *defs, const char *type)
{
    size_t n = strlen(type);
    for (size_t i = 0; i < defs->kernel_mounts.n; i++)
        if (strncmp(defs->kernel_mounts.v[i], type, n) == 0 && defs->kernel_mounts.v[i][n] == '=')
            return defs->kernel_mounts.v[i] + n + 1;
    return NULL;
}

/* The checks every mount gets, whatever its type: where it goes, how its
 * events propagate. -1 (recorded) when refused. */
static int check_mount_place(struct tier_ctx *c, size_t i, yajl_val m, const char *type, const char *norm_dest,
                             bool bind, const char **kernel_seen, ac_error_t *err)
{
    static const char *const propagation[] = {"shared", "rshared"};
    for (size_t k = 0; k < 2; k++)
        if (has_option(tj_get(m, "options"), propagation[k]))
            return tier_refuse(c, err, "mount option %s on %s (mounts[%zu]): mount events would reach the host",
                               propagation[k], norm_dest, i);
    const char *place = bind || type == NULL ? NULL : kernel_mount_place(c->defs, type);
    if (place) {
        /* once, and only at its own place: a second /proc elsewhere would
         * carry none of the masks */
        if (strcmp(norm_dest, place) != 0)
            return tier_refuse(c, err, "a %s mount at %s (mounts[%zu]): only at %s", type, norm_dest, i, place);
        size_t k = 0;
        for (; kernel_seen[k]; k++)
            if (strcmp(kernel_seen[k], place) == 0)
                return tier_refuse(c, err, "a second kernel filesystem at %s (mounts[%zu])", place, i);
        kernel_seen[k] = place; /* room for each of kernelMounts, and a NULL */
        return 0;
    }
    /* nothing else over the kernel's interfaces (which the masks keep) */
    if (path_within(norm_dest, "/proc") || (path_within(norm_dest, "/sys") && !(bind && strcmp(norm_dest, "/sys") == 0)))
        return tier_refuse(c, err, "a mount on %s (mounts[%zu]): below /proc or /sys", norm_dest, i);
    return 0;
}

int tier_map_mounts(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val mounts = tj_get_array(c->config, "mounts");
    bool have_workspace = false, have_tmp = false;
    char b[32];
    cleanup_free const char **kernel_seen = xcalloc(c->defs->kernel_mounts.n + 1, sizeof(char *));
    int ret = 0;
    for (size_t i = 0; i < mounts->u.array.len; i++) {
        yajl_val m = mounts->u.array.values[i];
        const char *dest = tj_get_str(m, "destination");
        const char *type = tj_get_str(m, "type");
        if (dest == NULL) {
            ret = tier_refuse(c, err, "a mount without a destination (mounts[%zu])", i);
            continue;
        }
        cleanup_free char *norm_dest = normalise(dest);
        if (norm_dest == NULL || norm_dest[0] != '/') {
            ret = tier_refuse(c, err, "mount on %s (mounts[%zu]): the destination must be absolute", dest, i);
            continue;
        }
        if (strcmp(norm_dest, "/") == 0) {
            ret = tier_refuse(c, err, "a mount on / (mounts[%zu])", i);
            continue;
        }
        if (check_mount_place(c, i, m, type, norm_dest, is_bind(m), kernel_seen, err) < 0) {
            ret = -1;
            continue;
        }
        have_workspace |= strcmp(norm_dest, "/workspace") == 0;
        have_tmp |= strcmp(norm_dest, "/tmp") == 0;
        if (is_bind(m) && strcmp(norm_dest, "/sys") == 0 && tj_get_str(m, "source") &&
            strcmp(tj_get_str(m, "source"), "/sys") == 0) {
            /* rootless configs bind the host's /sys: a fresh read-only
             * sysfs of the container's own network namespace instead (the
             * runtime falls back to a read-only bind where it cannot) */
            tj_set(m, "type", tj_new_string("sysfs"));
            tj_set(m, "source", tj_new_string("sysfs"));
            yajl_val options = tj_new_array();
            static const char *const sysfs_opts[] = {"nosuid", "noexec", "nodev", "ro"};
            for (size_t k = 0; k < 4; k++)
                tj_push(options, tj_new_string(sysfs_opts[k]));
            tj_set(m, "options", options);
            tier_decide(c, "mounts[%zu] /sys: the host's /sys bind replaced by a read-only sysfs", i);
            continue;
        }
        if (is_bind(m)) {
            if (map_bind(c, i, m, norm_dest, err) < 0)
                ret = -1;
            continue;
        }
        if (type == NULL || !tier_strv_has(&c->defs->mount_types, type)) {
            ret = tier_refuse(c, err, "mount of %s type %s (mounts[%zu])", tj_get_str(m, "source") ?: "?",
                              type ?: "(none)", i);
            continue;
        }
        if (strcmp(type, "sysfs") == 0 || strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0) {
            if (make_readonly(m, false))
                tier_decide(c, "mounts[%zu] %s: %s read-only", i, norm_dest, type);
        } else if (strcmp(type, "tmpfs") == 0 && !path_within(norm_dest, "/dev") &&
                   strcmp(norm_dest, "/run/secrets") != 0) {
            /* container-private memory, charged to its memory cgroup; each
             * capped like the workspace */
            cap_tmpfs(c, i, m, norm_dest, c->limits.workspace);
            tier_landlock_add(c, norm_dest);
        }
    }
    if (!have_workspace) {
        size_t at = insert_position(mounts, "/workspace");
        tj_insert(mounts, at, new_tmpfs("/workspace", c->limits.workspace));
        tier_decide(c, "mounts[%zu] /workspace: a new tmpfs of %s (nosuid, nodev, mode 1777), gone on delete", at,
                    tier_format_size(c->limits.workspace, b, sizeof(b)));
    }
    if (!have_tmp) {
        size_t at = insert_position(mounts, "/tmp");
        tj_insert(mounts, at, new_tmpfs("/tmp", c->limits.workspace));
        tier_decide(c, "mounts[%zu] /tmp: a new tmpfs of %s (nosuid, nodev, mode 1777)", at,
                    tier_format_size(c->limits.workspace, b, sizeof(b)));
    }
    /* the kernel interfaces beyond runc's defaults */
    yajl_val lx = tj_get_object(c->config, "linux");
    yajl_val masked = tj_get_array(lx, "maskedPaths");
    yajl_val readonly = tj_get_array(lx, "readonlyPaths");
    size_t n_masked = 0, n_readonly = 0;
    for (size_t k = 0; k < c->defs->masked_paths.n; k++)
        add_path(masked, c->defs->masked_paths.v[k], &n_masked);
    for (size_t k = 0; k < c->defs->readonly_paths.n; k++)
        add_path(readonly, c->defs->readonly_paths.v[k], &n_readonly);
    tier_decide(c, "linux.maskedPaths: %zu kernel interfaces added, linux.readonlyPaths: %zu added", n_masked,
                n_readonly);
    return ret;
}

static const struct tier_device *minimal_device(const struct tier_defs *defs, yajl_val dev)
{
    const char *path = tj_get_str(dev, "path");
    const char *type = tj_get_str(dev, "type");
    int64_t major = -1, minor = -1;
    tj_get_int(dev, "major", &major);
    tj_get_int(dev, "minor", &minor);
    for (size_t i = 0; path && type && i < defs->n_devices; i++) {
        const struct tier_device *d = &defs->devices[i];
        if (strcmp(d->type, type) != 0 || major != d->major || (d->minor >= 0 && minor != d->minor))
            continue;
        size_t n = strlen(d->path);
        bool wildcard = n > 0 && d->path[n - 1] == '*';
        if (wildcard ? strncmp(path, d->path, n - 1) == 0 && path[n - 1] != '\0' : strcmp(path, d->path) == 0)
            return d;
    }
    return NULL;
}

int tier_map_devices(struct tier_ctx *c, ac_error_t *err)
{
    yajl_val lx = tj_get_object(c->config, "linux");
    yajl_val devices = tj_get(lx, "devices");
    for (size_t i = 0; YAJL_IS_ARRAY(devices) && i < devices->u.array.len; i++) {
        yajl_val dev = devices->u.array.values[i];
        if (minimal_device(c->defs, dev) == NULL)
            return tier_refuse(c, err, "host device %s (linux.devices[%zu])", tj_get_str(dev, "path") ?: "?", i);
    }
    /* the device cgroup: deny everything, then the minimal set */
    yajl_val rules = tj_new_array();
    yajl_val deny = tj_new_object();
    tj_set(deny, "allow", tj_new_bool(false));
    tj_set(deny, "access", tj_new_string("rwm"));
    tj_push(rules, deny);
    cleanup_free char *names = NULL;
    for (size_t i = 0; i < c->defs->n_devices; i++) {
        const struct tier_device *d = &c->defs->devices[i];
        yajl_val rule = tj_new_object();
        tj_set(rule, "allow", tj_new_bool(true));
        tj_set(rule, "type", tj_new_string(d->type));
        tj_set(rule, "major", tj_new_int(d->major));
        if (d->minor >= 0)
            tj_set(rule, "minor", tj_new_int(d->minor));
        tj_set(rule, "access", tj_new_string("rwm"));
        tj_push(rules, rule);
        char *joined = names ? xasprintf("%s, %s", names, d->path) : xstrdup(d->path);
        free(names);
        names = joined;
    }
    yajl_val resources = tj_get_object(lx, "resources");
    yajl_val old = tj_get(resources, "devices");
    size_t n_old = YAJL_IS_ARRAY(old) ? old->u.array.len : 0;
    tj_set(resources, "devices", rules);
    tier_decide(c, "linux.resources.devices: deny all but %s (replaced %zu rules)", names ? names : "nothing", n_old);
    return 0;
}
