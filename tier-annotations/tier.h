/* Autonomy tiers: io.agentcage.tier on a container turns into an enforced
 * cage.
 *
 * The mapping is a pure function from (config.json, operator settings) to
 * (effective config.json, decisions): it rewrites the yajl tree of
 * config.json and never touches the kernel. The runtime then runs the
 * effective config with the same code paths as any plain config, plus the
 * pieces a config.json cannot express (the tier's precompiled seccomp
 * filter, Landlock, the watchdog), which it finds in the effective config's
 * annotations written by the mapping:
 *   io.agentcage.tier            "0".."3" (normalised)
 *   io.agentcage.timeout-ms      wall-clock limit in milliseconds
 *   io.agentcage.landlock-rw     colon-separated container paths writable
 *                                under Landlock (/workspace:/tmp:...)
 */
#ifndef AGENTCAGE_TIER_H
#define AGENTCAGE_TIER_H

#include <stdbool.h>
#include <stdint.h>

#include "hooks/approvals.h"
#include "runtime/util/error.h"

typedef struct yajl_val_s *yajl_val;

#define TIER_NONE (-1)
#define TIER_COUNT 4

/* A credential broker of the operator's (credential.NAME = /path/to/broker
 * [ARGS] and credential.NAME.tiers = 2,3 in agentcage.conf). */
#define TIER_MAX_CREDENTIALS 16
struct tier_credential {
    char name[64];
    const char *broker;   /* the program and its arguments, blank-separated */
    unsigned tiers;       /* bit n = tier n may ask for it; default every tier */
};

/* What the operator allows; from global flags and /etc/agentcage/agentcage.conf.
 * A ceiling of 0 means "the tier's default is the ceiling". */
struct tier_operator {
    int default_tier;          /* TIER_NONE: containers without the annotation run plain */
    unsigned allowed_tiers;    /* bit n = tier n allowed; default all */
    int64_t max_memory;        /* bytes */
    int64_t max_cpus_milli;    /* 1000 = one CPU */
    int64_t max_pids;
    int64_t max_timeout_ms;
    int64_t max_workspace;     /* bytes */
    const char *audit_log;     /* default /var/log/agentcage/audit.jsonl */
    const char *approvals_dir; /* default /var/lib/agentcage/approvals */
    const char *helpers_dir;   /* --helpers-dir: where the helper programs live (watchdog, egress proxy,
                                  installer); NULL: helpers_default_dir() (runtime/util/helpers.h) */
    const char *hooks_dir;     /* --hooks-dir, the older and narrower flag: where the tier's hook program
                                  (agentcage-egress) lives, over helpers_dir; NULL: as helpers_dir */
    const char *allowed_hooks; /* colon-separated hook programs a bundle may run at a tier; NULL: none */
    const char *bind_roots;    /* colon-separated host folders bind sources may lie below; NULL: tiers.json's */
    uint32_t userns_start;     /* the host ids tiered containers' user namespaces come from ... */
    uint32_t userns_size;      /* ... in slices of 65536: [start, start + size) */
    bool rootless;             /* the runtime is not host root: id 0 of its user namespace is the user */
    const char *env_allow;     /* environment names (or *-patterns, NAME=raw) a tier keeps; NULL: none */
    const char *home_dot_allow; /* colon-separated dot entries a home mount keeps visible (.gitconfig ...) */
    const char *home_mounts;   /* colon-separated bind destinations or sources that count as homes */
    const char *bind_changes;  /* writable binds: copy-back (default), review, or direct (uncapped) */
    struct tier_credential credentials[TIER_MAX_CREDENTIALS];
    size_t n_credentials;
    int64_t max_denials;       /* denials (seccomp, Landlock, the egress proxy) before the kill; 0: never */
    bool kernel_audit;         /* kernel-audit: the runtime may turn the kernel's audit on (for Landlock's
                                  refusals to be counted); default false */
    const char *egress_allow_cidr; /* egress.allow-cidr: addresses the proxy may reach though special */
    bool egress_ask;           /* egress.ask: io.agentcage.egress-ask may hold requests for the operator */
    int64_t egress_ask_timeout_ms; /* egress.ask-timeout: how long a held request waits */
    bool egress_deep_wildcards; /* egress.deep-wildcards: allowlists may have **.suffix entries */
    int64_t egress_max_rate;   /* egress.max-rate: the proxy's ceiling of bytes/s (0: its default, 1 MiB) */
    int64_t egress_max_bytes;  /* egress.max-bytes: the proxy's ceiling of bytes per container (0: 100 MiB) */
    unsigned gvisor_tiers;     /* bit n = tier n runs under gVisor (kernel-for-tier = 3:gvisor); default none */
    const char *runsc;         /* gVisor's runtime (--runsc), default /usr/bin/runsc */
    const char *runsc_platform; /* its platform: ptrace (default), systrap or kvm */
};

/* The operator's broker for a credential name, or NULL. */
const struct tier_credential *tier_credential_find(const struct tier_operator *op, const char *name);
/* One entry of io.agentcage.credentials ("NAME[=TTL]") at a time: *pos
 * walks the list; returns 1 with the name and ttl (ms, 0 when none given),
 * 0 at the end, -1 on a malformed entry (err names it). */
int tier_credentials_next(const char **pos, char name[64], int64_t *ttl_ms, ac_error_t *err);

void tier_operator_init(struct tier_operator *op);
/* Where the tier's hook programs are: --hooks-dir, else --helpers-dir,
 * else helpers_default_dir(). */
const char *tier_hooks_dir(const struct tier_operator *op);
/* A global flag of the runtime (name without "--": "default-tier",
 * "allowed-tiers", "max-memory", "max-cpus", "max-pids", "max-timeout",
 * "max-workspace", "audit-log", "approvals-dir", "helpers-dir", "hooks-dir",
 * "allowed-hooks", "bind-roots", ...), or a setting of agentcage.conf only
 * ("max-denials", "kernel-audit", "egress.allow-cidr", "egress.ask", "egress.ask-timeout",
 * "egress.deep-wildcards"). Returns 1 when name is a tier setting and was
 * applied, 0 when it is not one, -1 on a bad value (err names the setting). */
int tier_operator_set(struct tier_operator *op, const char *name, const char *value, ac_error_t *err);
/* Read "name = value" lines (same names as the flags) from path; a missing
 * file is fine, and so is one that cannot be read when skip_unreadable (a
 * rootless runtime: one --debug line says so). Flags given on the command
 * line win over the file. */
int tier_operator_load_file(struct tier_operator *op, const char *path, bool skip_unreadable, ac_error_t *err);

/* Decisions the mapping made, one human-readable line each, for
 * `agentcage policy show` and the audit trail. */
struct tier_decisions {
    char **lines;
    size_t n;
};
void tier_decisions_free(struct tier_decisions *d);

/* The mapping. bundle is the bundle's absolute path (bind sources below it
 * are the bundle's own), or NULL. Returns the tier applied (0..3),
 * TIER_NONE when the container runs plain (no annotation, no default
 * tier), or -2 with *err when config.json asks for something the tier
 * forbids, the annotation does not parse or its tier is not allowed:
 * "tier 1 forbids mount of /var/run/docker.sock (mounts[3])". After a
 * refusal the mapping goes on: every refusal is a decision line
 * "refused: ...", *err is the first with a count of the others. */
int tier_map(yajl_val config, const char *bundle, const struct tier_operator *op, struct tier_decisions *d,
             ac_error_t *err);

/* Does this tier need an operator's approval to be created (tiers.json's
 * "approval")? */
bool tier_requires_approval(int tier);
/* The kernel an effective config's container runs on: true for gVisor's
 * (io.agentcage.kernel=gvisor, which the mapping writes at a tier that
 * runs under gVisor), false for the host's. */
bool tier_kernel_is_gvisor(const char *kernel_annotation);
/* Does the tier's network have the egress proxy (tiers 2 and 3)? */
bool tier_has_egress_proxy(int tier);

/* The tier's environment rules on one "NAME=value" entry (exec's
 * environment gets the rules process.env got): true when it is kept, that
 * is its name is a safe one or allowed (the operator's --env-allow, the
 * container's io.agentcage.env-allow, which may be NULL) and its value does
 * not look like a credential (unless allowed as NAME=raw). */
bool tier_env_keeps(const struct tier_operator *op, const char *env_allow, const char *entry);

/* The digest an approval of this effective config (a tree the call may
 * change) is bound to, "sha256:HEX" into out[APPROVAL_DIGEST_LEN + 1]. */
void tier_approval_digest(yajl_val effective, char out[APPROVAL_DIGEST_LEN + 1]);

/* A yajl tree back to JSON text (pretty or compact); malloc'd. For golden
 * tests and `policy show`. */
char *tier_tree_to_json(yajl_val v, bool pretty);

#endif
