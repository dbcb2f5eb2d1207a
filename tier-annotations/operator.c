/* Operator settings for tiers: global flags and /etc/agentcage/agentcage.conf.
 * The operator decides which tiers exist on this host and how far any limit
 * may go; annotations only choose within that. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"
#include "hooks/egress_parse.h"

void tier_operator_init(struct tier_operator *op)
{
    memset(op, 0, sizeof(*op));
    op->default_tier = TIER_NONE;
    op->allowed_tiers = (1u << TIER_COUNT) - 1;
    op->audit_log = "/var/log/agentcage/audit.jsonl";
    op->approvals_dir = "/var/lib/agentcage/approvals";
    op->userns_start = 1000000000u;
    op->userns_size = 1u << 30; /* 16384 containers at once */
    op->max_denials = 20;
    op->egress_ask_timeout_ms = 60000;
    op->runsc = "/usr/bin/runsc";
    op->runsc_platform = "ptrace";
}

/* kernel-for-tier: "3:gvisor", "2:gvisor,3:gvisor", "3:linux" (entries
 * separated by commas or blanks): each sets the kernel of its tier. */
static int set_kernel_for_tier(struct tier_operator *op, const char *value, ac_error_t *err)
{
    unsigned bits = op->gvisor_tiers;
    cleanup_free char *copy = xstrdup(value);
    char *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save), n++) {
        char *colon = strchr(tok, ':');
        if (colon)
            *colon = '\0';
        int t = tier_parse_name(tok);
        if (t < 0 || !colon || (strcmp(colon + 1, "gvisor") != 0 && strcmp(colon + 1, "linux") != 0))
            return ac_error(err, 0, "--kernel-for-tier: expected TIER:gvisor or TIER:linux entries like 3:gvisor, got `%s`",
                            value);
        if (strcmp(colon + 1, "gvisor") == 0)
            bits |= 1u << t;
        else
            bits &= ~(1u << t);
    }
    if (n == 0)
        return ac_error(err, 0, "--kernel-for-tier: expected TIER:gvisor entries like 3:gvisor, got `%s`", value);
    op->gvisor_tiers = bits;
    return 0;
}

const char *tier_hooks_dir(const struct tier_operator *op)
{
    if (op->hooks_dir)
        return op->hooks_dir;
    return op->helpers_dir ? op->helpers_dir : helpers_default_dir();
}

/* "0,1", "read,write", "0, write": a bit per tier. */
static int parse_tier_list(const char *value, unsigned *out)
{
    unsigned bits = 0;
    cleanup_free char *copy = xstrdup(value);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int t = tier_parse_name(tok);
        if (t < 0)
            return -1;
        bits |= 1u << t;
    }
    if (bits == 0)
        return -1;
    *out = bits;
    return 0;
}

/* parse then check: 0 for a positive value */
static int parse_positive(int (*parse)(const char *, int64_t *), const char *value, int64_t *n)
{
    return parse(value, n) == 0 && *n > 0 ? 0 : -1;
}

/* Absolute, and no empty, "." or ".." component, no trailing slash. */
static bool path_is_normal(const char *p)
{
    if (p[0] != '/')
        return false;
    if (strcmp(p, "/") == 0)
        return true;
    for (const char *c = p + 1;; ) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (c[n] == '\0')
            return true;
        c += n + 1;
    }
}

/* A colon-separated list of normal paths. Bind roots may not be / or a
 * system folder (or below /usr, /etc, /proc, /sys, /boot): whatever lies
 * there is the host's own configuration or programs. */
static int check_path_list(const char *name, const char *value, bool roots, ac_error_t *err)
{
    static const char *const system_dirs[] = {"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64",
                                              "/libx32", "/opt", "/proc", "/root", "/run", "/sbin", "/sys",
                                              "/usr", "/var", "/var/lib", "/var/run", "/var/log"};
    static const char *const system_trees[] = {"/usr/", "/etc/", "/proc/", "/sys/", "/boot/"};
    cleanup_free char *copy = xstrdup(value);
    char *save = NULL;
    for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        if (!path_is_normal(p))
            return ac_error(err, 0, "--%s: `%s` is not an absolute, normalised path", name, p);
        bool system = false;
        for (size_t i = 0; roots && i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
            system |= strcmp(p, system_dirs[i]) == 0;
        for (size_t i = 0; roots && i < sizeof(system_trees) / sizeof(system_trees[0]); i++)
            system |= strncmp(p, system_trees[i], strlen(system_trees[i])) == 0;
        if (system)
            return ac_error(err, 0, "--%s: `%s` is a system folder: bind sources below it would be the host's own",
                            name, p);
    }
    return 0;
}

const struct tier_credential *tier_credential_find(const struct tier_operator *op, const char *name)
{
    for (size_t i = 0; i < op->n_credentials; i++)
        if (strcmp(op->credentials[i].name, name) == 0)
            return &op->credentials[i];
    return NULL;
}

static bool credential_name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

/* credential.NAME = BROKER [ARGS], credential.NAME.tiers = LIST */
static int set_credential(struct tier_operator *op, const char *name, const char *value, ac_error_t *err)
{
    const char *rest = name + strlen("credential.");
    const char *dot = strchr(rest, '.');
    size_t n = dot ? (size_t)(dot - rest) : strlen(rest);
    if (!credential_name_ok(rest, n) || (dot && strcmp(dot, ".tiers") != 0))
        return ac_error(err, 0, "`%s`: expected credential.NAME or credential.NAME.tiers (NAME: letters, digits, - _)",
                        name);
    struct tier_credential *cred = NULL;
    for (size_t i = 0; i < op->n_credentials; i++)
        if (strlen(op->credentials[i].name) == n && strncmp(op->credentials[i].name, rest, n) == 0)
            cred = &op->credentials[i];
    if (cred == NULL) {
        if (op->n_credentials == TIER_MAX_CREDENTIALS)
            return ac_error(err, 0, "`%s`: at most %d credentials", name, TIER_MAX_CREDENTIALS);
        cred = &op->credentials[op->n_credentials++];
        memcpy(cred->name, rest, n);
        cred->name[n] = '\0';
        cred->tiers = (1u << TIER_COUNT) - 1;
    }
    if (dot)
        return parse_tier_list(value, &cred->tiers) < 0
                   ? ac_error(err, 0, "`%s`: expected a list of tiers like 2,3, got `%s`", name, value)
                   : 0;
    if (value[0] != '/')
        return ac_error(err, 0, "`%s`: expected the broker's absolute path, got `%s`", name, value);
    cred->broker = value;
    return 0;
}

int tier_credentials_next(const char **pos, char name[64], int64_t *ttl_ms, ac_error_t *err)
{
    const char *p = *pos;
    while (*p == ',' || *p == ' ')
        p++;
    if (*p == '\0')
        return 0;
    size_t len = strcspn(p, ",");
    cleanup_free char *entry = strndup(p, len);
    *pos = p + len;
    char *end = entry + strlen(entry);
    while (end > entry && end[-1] == ' ')
        *--end = '\0';
    char *eq = strchr(entry, '=');
    size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
    *ttl_ms = 0;
    if (!credential_name_ok(entry, n) || (eq && (tier_parse_duration(eq + 1, ttl_ms) < 0 || *ttl_ms <= 0)))
        return ac_error(err, 0, "io.agentcage.credentials: expected NAME[=TTL] entries like github=10m, got `%s`",
                        entry);
    memcpy(name, entry, n);
    name[n] = '\0';
    return 1;
}

static int parse_bool(const char *name, const char *value, bool *out, ac_error_t *err)
{
    if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
        return ac_error(err, 0, "%s: expected true or false, got `%s`", name, value);
    *out = strcmp(value, "true") == 0;
    return 0;
}

/* The egress proxy's settings (agentcage.conf only): 1 when name is one. */
static int set_egress(struct tier_operator *op, const char *name, const char *value, ac_error_t *err)
{
    int64_t ms;
    if (strcmp(name, "egress.allow-cidr") == 0) {
        struct egress_cidrs c;
        if (egress_cidrs_parse(value, name, &c, err) < 0)
            return -1;
        egress_cidrs_free(&c);
        op->egress_allow_cidr = value;
    } else if (strcmp(name, "egress.ask") == 0) {
        return parse_bool(name, value, &op->egress_ask, err) < 0 ? -1 : 1;
    } else if (strcmp(name, "egress.deep-wildcards") == 0) {
        return parse_bool(name, value, &op->egress_deep_wildcards, err) < 0 ? -1 : 1;
    } else if (strcmp(name, "egress.max-rate") == 0 || strcmp(name, "egress.max-bytes") == 0) {
        int64_t n;
        if (parse_positive(tier_parse_size, value, &n) < 0)
            return ac_error(err, 0, "%s: expected a size like 10m, got `%s`", name, value);
        *(name[11] == 'r' ? &op->egress_max_rate : &op->egress_max_bytes) = n;
    } else if (strcmp(name, "egress.ask-timeout") == 0) {
        if (parse_positive(tier_parse_duration, value, &ms) < 0 || ms < 1000 || ms > 3600000)
            return ac_error(err, 0, "%s: expected a duration from 1s to 1h like 60s, got `%s`", name, value);
        op->egress_ask_timeout_ms = ms;
    } else {
        return 0;
    }
    return 1;
}

int tier_operator_set(struct tier_operator *op, const char *name, const char *value, ac_error_t *err)
{
    if (strncmp(name, "credential.", 11) == 0)
        return set_credential(op, name, value, err) < 0 ? -1 : 1;
    if (strncmp(name, "egress.", 7) == 0)
        return set_egress(op, name, value, err);
    int64_t n = 0;
    if (strcmp(name, "default-tier") == 0) {
        int t = tier_parse_name(value);
        if (t < 0 && strcmp(value, "none") != 0)
            return ac_error(err, 0, "--default-tier: expected 0..3, read, write, network, irreversible or none, got `%s`",
                            value);
        op->default_tier = t < 0 ? TIER_NONE : t;
    } else if (strcmp(name, "allowed-tiers") == 0) {
        if (parse_tier_list(value, &op->allowed_tiers) < 0)
            return ac_error(err, 0, "--allowed-tiers: expected a list of tiers like 0,1 or read,write, got `%s`", value);
    } else if (strcmp(name, "max-memory") == 0) {
        if (parse_positive(tier_parse_size, value, &n) < 0)
            return ac_error(err, 0, "--max-memory: expected a size like 512m or 1g, got `%s`", value);
        op->max_memory = n;
    } else if (strcmp(name, "max-workspace") == 0) {
        if (parse_positive(tier_parse_size, value, &n) < 0)
            return ac_error(err, 0, "--max-workspace: expected a size like 64m or 1g, got `%s`", value);
        op->max_workspace = n;
    } else if (strcmp(name, "max-cpus") == 0) {
        if (parse_positive(tier_parse_cpus, value, &n) < 0)
            return ac_error(err, 0, "--max-cpus: expected a CPU count like 1 or 1.5, got `%s`", value);
        op->max_cpus_milli = n;
    } else if (strcmp(name, "max-pids") == 0) {
        uint64_t u;
        if (parse_uint64(value, &u) < 0 || u == 0 || u > INT32_MAX)
            return ac_error(err, 0, "--max-pids: expected a positive number, got `%s`", value);
        op->max_pids = (int64_t)u;
    } else if (strcmp(name, "max-denials") == 0) {
        uint64_t u;
        if (parse_uint64(value, &u) < 0 || u > INT32_MAX)
            return ac_error(err, 0, "max-denials: expected a number (0: never kill), got `%s`", value);
        op->max_denials = (int64_t)u;
    } else if (strcmp(name, "kernel-audit") == 0) {
        if (parse_bool(name, value, &op->kernel_audit, err) < 0)
            return -1;
    } else if (strcmp(name, "max-timeout") == 0) {
        if (parse_positive(tier_parse_duration, value, &n) < 0)
            return ac_error(err, 0, "--max-timeout: expected a duration like 30s, 5m or 1h, got `%s`", value);
        op->max_timeout_ms = n;
    } else if (strcmp(name, "rootless") == 0) {
        op->rootless = strcmp(value, "true") == 0;
    } else if (strcmp(name, "userns-range") == 0) {
        uint64_t start, size;
        const char *colon = strchr(value, ':');
        cleanup_free char *first = colon ? strndup(value, (size_t)(colon - value)) : NULL;
        if (!first || parse_uint64(first, &start) < 0 || parse_uint64(colon + 1, &size) < 0 || start == 0 ||
            size < 65536 || start + size > 4294967294ull)
            return ac_error(err, 0,
                            "--userns-range: expected START:SIZE of host ids (START > 0, SIZE >= 65536, below "
                            "4294967294), got `%s`",
                            value);
        op->userns_start = (uint32_t)start;
        op->userns_size = (uint32_t)size;
    } else if (strcmp(name, "kernel-for-tier") == 0) {
        if (set_kernel_for_tier(op, value, err) < 0)
            return -1;
    } else if (strcmp(name, "runsc-platform") == 0) {
        if (strcmp(value, "ptrace") != 0 && strcmp(value, "systrap") != 0 && strcmp(value, "kvm") != 0)
            return ac_error(err, 0, "--runsc-platform: expected ptrace, systrap or kvm, got `%s`", value);
        op->runsc_platform = value;
    } else if (strcmp(name, "env-allow") == 0) {
        op->env_allow = value;
    } else if (strcmp(name, "home-dot-allow") == 0) {
        for (const char *p = value; *p;) {
            size_t n = strcspn(p, ":");
            if (n == 0 || p[0] != '.' || memchr(p, '/', n) || (n == 2 && p[1] == '.') || n == 1)
                return ac_error(err, 0, "--home-dot-allow: expected dot entries like .gitconfig:.cache, got `%s`", value);
            p += n + (p[n] == ':');
        }
        op->home_dot_allow = value;
    } else if (strcmp(name, "bind-changes") == 0) {
        if (strcmp(value, "copy-back") != 0 && strcmp(value, "review") != 0 && strcmp(value, "direct") != 0)
            return ac_error(err, 0, "--bind-changes: expected copy-back, review or direct, got `%s`", value);
        op->bind_changes = value;
    } else if (strcmp(name, "home-mounts") == 0) {
        if (check_path_list(name, value, false, err) < 0)
            return -1;
        op->home_mounts = value;
    } else if (strcmp(name, "allowed-hooks") == 0 || strcmp(name, "bind-roots") == 0) {
        if (check_path_list(name, value, strcmp(name, "bind-roots") == 0, err) < 0)
            return -1;
        if (strcmp(name, "allowed-hooks") == 0)
            op->allowed_hooks = value;
        else
            op->bind_roots = value;
    } else if (strcmp(name, "audit-log") == 0 || strcmp(name, "approvals-dir") == 0 ||
               strcmp(name, "helpers-dir") == 0 || strcmp(name, "hooks-dir") == 0 || strcmp(name, "runsc") == 0) {
        if (value[0] != '/')
            return ac_error(err, 0, "--%s: expected an absolute path, got `%s`", name, value);
        /* flags point into argv; file values are kept for the process's life */
        if (strcmp(name, "audit-log") == 0)
            op->audit_log = value;
        else if (strcmp(name, "approvals-dir") == 0)
            op->approvals_dir = value;
        else if (strcmp(name, "helpers-dir") == 0)
            op->helpers_dir = value;
        else if (strcmp(name, "runsc") == 0)
            op->runsc = value;
        else
            op->hooks_dir = value;
    } else {
        return 0;
    }
    return 1;
}

/* Values from the file that the operator struct points to (paths): they
 * live as long as the process, reachable from here. */
static char *keep_value(const char *value)
{
    static char **kept;
    static size_t n;
    kept = xrealloc(kept, (n + 1) * sizeof(char *));
    kept[n] = xstrdup(value);
    return kept[n++];
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int tier_operator_load_file(struct tier_operator *op, const char *path, bool skip_unreadable, ac_error_t *err)
{
    cleanup_file FILE *f = fopen(path, "re");
    if (f == NULL) {
        if (errno == ENOENT)
            return 0;
        /* An operator's file (or folder) a rootless runtime cannot read: its
         * user chooses the runtime's flags anyway. Decided by rootlessness,
         * never by the euid: inside rootless Podman's user namespace the
         * euid is 0 and the file is still not ours. */
        if (skip_unreadable && (errno == EACCES || errno == EPERM)) {
            ac_debug("rootless: `%s` is not readable (%s): its settings are skipped", path, strerror(errno));
            return 0;
        }
        return ac_error(err, errno, "open `%s`", path);
    }
    char line[4096];
    for (unsigned lineno = 1; fgets(line, sizeof(line), f); lineno++) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (*s == '\0')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL)
            return ac_error(err, 0, "%s:%u: expected `name = value`", path, lineno);
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        if (strncmp(name, "--", 2) == 0)
            name += 2;
        /* paths must outlive this buffer: kept for the process's life */
        char *kept = keep_value(value);
        ac_error_t e = NULL;
        int r = tier_operator_set(op, name, kept, &e);
        if (r < 0) {
            cleanup_free char *msg = ac_error_string(e);
            ac_error_free(&e);
            return ac_error(err, 0, "%s:%u: %s", path, lineno, msg);
        }
        if (r == 0)
            return ac_error(err, 0, "%s:%u: unknown setting `%s`", path, lineno, name);
    }
    if (ferror(f))
        return ac_error(err, EIO, "read `%s`", path);
    return 0;
}
