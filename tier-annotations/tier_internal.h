/* Internals of the tier mapping: yajl tree editing, the tier definitions
 * (tiers.json compiled in), unit parsers, decision lines. */
#ifndef AGENTCAGE_TIER_INTERNAL_H
#define AGENTCAGE_TIER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "tier-annotations/tier.h"

/* --- yajl tree editing (tier_json.c) ---
 * yajl_tree_free releases every node, key, string and array with free(), so
 * new nodes are plain malloc'd struct yajl_val_s in the same layout. */
yajl_val tj_new_string(const char *s);
yajl_val tj_new_int(long long n);
yajl_val tj_new_bool(bool b);
yajl_val tj_new_object(void);
yajl_val tj_new_array(void);
/* The value under key, or NULL (also when obj is not an object). */
yajl_val tj_get(yajl_val obj, const char *key);
/* The object under key, created (and replacing a non-object) when absent. */
yajl_val tj_get_object(yajl_val obj, const char *key);
/* The array under key, created when absent or not an array. */
yajl_val tj_get_array(yajl_val obj, const char *key);
/* Set key to value (takes ownership), replacing and freeing an old value. */
void tj_set(yajl_val obj, const char *key, yajl_val value);
/* Remove key (freeing its value); true if it was there. */
bool tj_remove(yajl_val obj, const char *key);
void tj_push(yajl_val arr, yajl_val value);
void tj_insert(yajl_val arr, size_t at, yajl_val value);
/* Remove and free arr[i]. */
void tj_remove_at(yajl_val arr, size_t i);
/* The string under key, or NULL. */
const char *tj_get_str(yajl_val obj, const char *key);
/* The integer under key (number text that is an integer); false if absent. */
bool tj_get_int(yajl_val obj, const char *key, int64_t *out);
bool tj_array_has_string(yajl_val arr, const char *s);
/* The JSON path of the first key that appears twice in one object
 * ("annotations.io.agentcage.tier", "mounts[1].options"), malloc'd; NULL
 * when every object's keys are unique. */
char *tj_first_duplicate_key(yajl_val v);

/* --- the tier definitions (tier_data.c) --- */
struct tier_strv {
    const char **v;
    size_t n;
};
struct tier_limits {
    int64_t memory;     /* bytes */
    int64_t cpus_milli; /* 1000 = one CPU */
    int64_t pids;
    int64_t workspace;  /* bytes */
    int64_t timeout_ms;
};
struct tier_def {
    const char *name;
    struct tier_limits limits;
    bool binds_readonly;
    const char *network; /* "none" | "egress-proxy" */
    const char *seccomp; /* name of the precompiled filter */
    bool approval, audit;
};
struct tier_device {
    const char *path, *type;
    int64_t major, minor; /* minor -1: any */
};
struct tier_defs {
    struct tier_def tier[TIER_COUNT];
    struct tier_strv masked_paths, readonly_paths, credential_paths, rc_files, home_dot_allow, safe_env, secret_value_prefixes, forbidden_sources,
        plumbing_mounts, mount_types, refused_caps, default_bind_roots, kernel_mounts, sysctls, bundle_annotations,
        mapping_annotations, accepted_fields;
    struct tier_device *devices;
    size_t n_devices;
};
/* The compiled-in tiers.json: the build's generator writes it out as C
 * (tier_defs_compiled); a build without it parses it once per process. */
int tier_defs_get(const struct tier_defs **out, ac_error_t *err);
extern const struct tier_defs tier_defs_compiled;
bool tier_strv_has(const struct tier_strv *sv, const char *s);

/* --- units (units.c) --- */
/* "512m", "1g", "64Mi", "1048576": bytes (binary multipliers). */
int tier_parse_size(const char *s, int64_t *out);
/* "500ms", "30s", "5m", "1h", "90" (seconds): milliseconds. */
int tier_parse_duration(const char *s, int64_t *out);
/* "1.5": 1500. */
int tier_parse_cpus(const char *s, int64_t *out);
/* "0".."3" or read/write/network/irreversible: the tier, -1 otherwise. */
int tier_parse_name(const char *s);
/* For messages: "512m", "1g", "1.5", "5m" (into buf). */
const char *tier_format_size(int64_t bytes, char *buf, size_t len);
const char *tier_format_duration(int64_t ms, char *buf, size_t len);
const char *tier_format_cpus(int64_t milli, char *buf, size_t len);
extern const char *const tier_names[TIER_COUNT];

/* --- the mapping's pieces --- */
/* A container's place in a pod, as the engine's annotations say:
 * io.kubernetes.cri.container-type (containerd's CRI) or
 * io.kubernetes.cri-o.ContainerType (CRI-O, Podman) "sandbox" or
 * "container". The sandbox holds the pod's cage network namespace; its
 * containers join it (the runtime checks by inode that it is one). */
enum tier_pod_role { POD_NONE, POD_SANDBOX, POD_MEMBER };
enum tier_pod_role tier_pod_role_of(yajl_val config);

struct tier_ctx {
    yajl_val config;
    int tier;
    const struct tier_def *def;
    const struct tier_defs *defs;
    const struct tier_operator *op;
    struct tier_decisions *d;
    struct tier_limits limits; /* effective: tier default, tightened, capped */
    char *landlock_rw;         /* colon-separated, grows */
    char *protect_roots;       /* colon-separated writable bind destinations ("DEST" or "DEST=home") */
    char *home_roots;          /* colon-separated home-like bind destinations, read-only ones too */
    char *capped_binds;        /* colon-separated writable bind destinations written through a capped overlay */
    const char *bundle;        /* the bundle directory (absolute), or NULL */
    enum tier_pod_role pod_role; /* what the engine says the container is in its pod */
    bool gvisor;               /* the container runs under gVisor (tier_kernel.c) */
    unsigned refused;          /* refusals so far: the first is in *err, each is a decision line */
};
void tier_decide(struct tier_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Refusal: "tier N forbids <what>". The mapping goes on after one, so that
 * `policy show` can list them all: each is a decision line "refused: ...",
 * the first one is *err. Returns -1. */
int tier_refuse(struct tier_ctx *c, ac_error_t *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same for a value that does not parse: "tier N: <what>". */
int tier_reject(struct tier_ctx *c, ac_error_t *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tier_landlock_add(struct tier_ctx *c, const char *path);
/* A writable bind mount destination whose protections the runtime pins
 * (io.agentcage.protect-roots); home-like ones get no new names at the top. */
void tier_protect_add(struct tier_ctx *c, const char *dest, bool home);
/* A home-like bind destination, whose top-level dot entries the runtime
 * hides but for the allowed ones (io.agentcage.home-roots). */
void tier_home_add(struct tier_ctx *c, const char *dest);
/* A writable bind destination the runtime puts behind a capped overlay
 * (io.agentcage.capped-binds, with io.agentcage.bind-cap its size). */
void tier_capped_add(struct tier_ctx *c, const char *dest);

int tier_map_limits(struct tier_ctx *c, ac_error_t *err);    /* tier_resources.c: annotations, ceilings */
int tier_map_resources(struct tier_ctx *c, ac_error_t *err); /* tier_resources.c: cgroup limits */
int tier_map_mounts(struct tier_ctx *c, ac_error_t *err);    /* tier_mounts.c */
int tier_map_devices(struct tier_ctx *c, ac_error_t *err);   /* tier_mounts.c */
int tier_map_process(struct tier_ctx *c, ac_error_t *err);   /* tier_process.c: caps, nnp, env */
int tier_map_namespaces(struct tier_ctx *c, ac_error_t *err); /* tier_process.c */
int tier_map_fields(struct tier_ctx *c, ac_error_t *err);     /* tier_fields.c: the accepted fields */
int tier_map_denials(struct tier_ctx *c, ac_error_t *err);    /* tier_egress.c: io.agentcage.max-denials */
int tier_map_egress(struct tier_ctx *c, ac_error_t *err);     /* tier_egress.c: the egress annotations */
int tier_map_hooks(struct tier_ctx *c, ac_error_t *err);      /* tier_hooks.c: the bundle's hooks */
int tier_map_sysctl(struct tier_ctx *c, ac_error_t *err);     /* tier_process.c */
int tier_map_credentials(struct tier_ctx *c, ac_error_t *err); /* tier_credentials.c */
int tier_map_kernel(struct tier_ctx *c, ac_error_t *err);      /* tier_kernel.c: gVisor or the host's */

#endif
