/* The runtime-spec 1.2 config.json as C structs.
 *
 * Everything a spec holds (structs, arrays, strings) lives in one arena that
 * spec_free() releases at once. Optional scalars come with a has_ flag; absent
 * strings and arrays are NULL / 0. String arrays are also NULL-terminated.
 * Unknown JSON fields are ignored; a wrong type or value is an error that
 * names the JSON path: "config.json: linux.resources.memory.limit: expected
 * an integer". */
#ifndef AGENTCAGE_SPEC_H
#define AGENTCAGE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/util/error.h"

/* gnu11 predefines `linux` as 1; the spec has a member of that name. */
#undef linux

#define OPT(type, name) bool has_##name; type name

struct oci_kv { char *key; char *value; };

struct oci_rlimit {
    char *type; /* "RLIMIT_NOFILE" */
    int resource; /* RLIMIT_NOFILE */
    uint64_t hard, soft;
};

struct oci_user {
    uint32_t uid, gid;
    OPT(uint32_t, umask);
    uint32_t *additional_gids; size_t n_additional_gids;
    char *username;
};

/* Capability sets as bitmasks (bit n = capability n); a name libcap does not
 * know is a parse error. */
struct oci_capabilities {
    uint64_t bounding, effective, inheritable, permitted, ambient;
};

struct oci_scheduler {
    char *policy; /* SCHED_OTHER ... */
    int policy_value;
    OPT(int32_t, nice);
    OPT(int32_t, priority);
    char **flags; size_t n_flags;
    OPT(uint64_t, runtime);
    OPT(uint64_t, deadline);
    OPT(uint64_t, period);
};

struct oci_process {
    bool terminal;
    bool has_console_size; uint32_t console_height, console_width;
    struct oci_user user;
    char **args; size_t n_args;
    char *command_line; /* Windows only; ignored */
    char **env; size_t n_env;
    char *cwd;
    bool has_capabilities; struct oci_capabilities capabilities;
    struct oci_rlimit *rlimits; size_t n_rlimits;
    bool no_new_privileges;
    char *apparmor_profile;
    char *selinux_label;
    OPT(int, oom_score_adj);
    bool has_io_priority; char *io_priority_class; int io_priority_class_value; int io_priority;
    struct oci_scheduler *scheduler;
};

struct oci_idmap { uint32_t container_id, host_id, size; };

struct oci_mount {
    char *destination;
    char *type;
    char *source;
    char **options; size_t n_options;
    struct oci_idmap *uid_mappings; size_t n_uid_mappings;
    struct oci_idmap *gid_mappings; size_t n_gid_mappings;
};

struct oci_hook {
    char *path;
    char **args; size_t n_args;
    char **env; size_t n_env;
    OPT(int, timeout); /* seconds, > 0 */
};

enum oci_hook_kind {
    HOOK_PRESTART,
    HOOK_CREATE_RUNTIME,
    HOOK_CREATE_CONTAINER,
    HOOK_START_CONTAINER,
    HOOK_POSTSTART,
    HOOK_POSTSTOP,
    HOOK_KIND_COUNT
};
extern const char *const oci_hook_kind_names[HOOK_KIND_COUNT]; /* "prestart", "createRuntime", ... */

struct oci_hooks {
    struct oci_hook *hooks[HOOK_KIND_COUNT];
    size_t n_hooks[HOOK_KIND_COUNT];
};

struct oci_namespace {
    int type; /* CLONE_NEWPID, CLONE_NEWNET, ... CLONE_NEWTIME */
    char *type_name; /* "pid", "network", ... */
    char *path; /* join an existing one when set */
};

struct oci_device {
    char *path;
    char type; /* 'c', 'b', 'u', 'p' */
    int64_t major, minor;
    OPT(uint32_t, file_mode);
    OPT(uint32_t, uid);
    OPT(uint32_t, gid);
};

struct oci_device_rule {
    bool allow;
    char type; /* 'a' (default when absent), 'c', 'b' */
    int64_t major, minor; /* -1 = wildcard (absent) */
    char *access; /* "rwm" or NULL = all */
};

struct oci_memory {
    OPT(int64_t, limit);
    OPT(int64_t, reservation);
    OPT(int64_t, swap);
    OPT(int64_t, kernel);
    OPT(int64_t, kernel_tcp);
    OPT(uint64_t, swappiness);
    OPT(bool, disable_oom_killer);
    OPT(bool, use_hierarchy);
    OPT(bool, check_before_update);
};

struct oci_cpu {
    OPT(uint64_t, shares);
    OPT(int64_t, quota);
    OPT(uint64_t, burst);
    OPT(uint64_t, period);
    OPT(int64_t, realtime_runtime);
    OPT(uint64_t, realtime_period);
    char *cpus;
    char *mems;
    OPT(int64_t, idle);
};

struct oci_blkio_weight_device {
    int64_t major, minor;
    OPT(uint16_t, weight);
    OPT(uint16_t, leaf_weight);
};
struct oci_blkio_throttle { int64_t major, minor; uint64_t rate; };

struct oci_blkio {
    OPT(uint16_t, weight);
    OPT(uint16_t, leaf_weight);
    struct oci_blkio_weight_device *weight_device; size_t n_weight_device;
    struct oci_blkio_throttle *throttle_read_bps_device; size_t n_throttle_read_bps_device;
    struct oci_blkio_throttle *throttle_write_bps_device; size_t n_throttle_write_bps_device;
    struct oci_blkio_throttle *throttle_read_iops_device; size_t n_throttle_read_iops_device;
    struct oci_blkio_throttle *throttle_write_iops_device; size_t n_throttle_write_iops_device;
};

struct oci_hugepage_limit { char *page_size; /* "2MB" */ uint64_t limit; };
struct oci_net_priority { char *name; uint32_t priority; };

struct oci_resources {
    struct oci_device_rule *devices; size_t n_devices;
    bool has_memory; struct oci_memory memory;
    bool has_cpu; struct oci_cpu cpu;
    bool has_pids; OPT(int64_t, pids_limit);
    bool has_blkio; struct oci_blkio blkio;
    struct oci_hugepage_limit *hugepage_limits; size_t n_hugepage_limits;
    bool has_network; OPT(uint32_t, net_class_id);
    struct oci_net_priority *net_priorities; size_t n_net_priorities;
    struct oci_kv *unified; size_t n_unified;
};

enum oci_seccomp_action {
    SECCOMP_ACTION_KILL, /* SCMP_ACT_KILL = kill thread */
    SECCOMP_ACTION_KILL_PROCESS,
    SECCOMP_ACTION_KILL_THREAD,
    SECCOMP_ACTION_TRAP,
    SECCOMP_ACTION_ERRNO,
    SECCOMP_ACTION_TRACE,
    SECCOMP_ACTION_ALLOW,
    SECCOMP_ACTION_LOG,
    SECCOMP_ACTION_NOTIFY,
};
enum oci_seccomp_op {
    SECCOMP_OP_NE, SECCOMP_OP_LT, SECCOMP_OP_LE, SECCOMP_OP_EQ,
    SECCOMP_OP_GE, SECCOMP_OP_GT, SECCOMP_OP_MASKED_EQ,
};
struct oci_seccomp_arg { uint32_t index; uint64_t value; uint64_t value_two; enum oci_seccomp_op op; };
struct oci_seccomp_syscall {
    char **names; size_t n_names;
    enum oci_seccomp_action action;
    OPT(uint32_t, errno_ret);
    struct oci_seccomp_arg *args; size_t n_args;
};
struct oci_seccomp {
    enum oci_seccomp_action default_action;
    OPT(uint32_t, default_errno_ret);
    char **architectures; size_t n_architectures; /* "SCMP_ARCH_X86_64" */
    char **flags; size_t n_flags; /* "SECCOMP_FILTER_FLAG_LOG" ... */
    char *listener_path;
    char *listener_metadata;
    struct oci_seccomp_syscall *syscalls; size_t n_syscalls;
};

struct oci_time_offset { int64_t secs; uint32_t nanosecs; };

struct oci_linux {
    struct oci_namespace *namespaces; size_t n_namespaces;
    struct oci_idmap *uid_mappings; size_t n_uid_mappings;
    struct oci_idmap *gid_mappings; size_t n_gid_mappings;
    struct oci_device *devices; size_t n_devices;
    char *cgroups_path;
    struct oci_resources *resources; /* NULL when absent */
    struct oci_kv *sysctl; size_t n_sysctl;
    struct oci_seccomp *seccomp; /* NULL when absent */
    char *rootfs_propagation; /* "shared", "slave", "private", "unbindable" */
    char **masked_paths; size_t n_masked_paths;
    char **readonly_paths; size_t n_readonly_paths;
    char *mount_label;
    bool has_personality; char *personality_domain; char **personality_flags; size_t n_personality_flags;
    bool has_time_offsets; struct oci_time_offset boottime, monotonic;
    bool has_boottime_offset, has_monotonic_offset;
};

struct spec_arena;

struct oci_spec {
    struct spec_arena *arena;
    char *oci_version;
    char *root_path; /* as written in config.json (may be relative to the bundle) */
    bool root_readonly;
    struct oci_process *process; /* NULL when absent */
    char *hostname;
    char *domainname;
    struct oci_mount *mounts; size_t n_mounts;
    struct oci_hooks hooks;
    struct oci_kv *annotations; size_t n_annotations;
    struct oci_linux *linux; /* NULL when absent */
};

/* Parse config.json text. "what" names the document in errors
 * ("config.json"). Returns 0 or -1 with *err set. */
int spec_parse(const char *json, size_t len, const char *what, struct oci_spec **out, ac_error_t *err);
/* The two halves of spec_parse, so that the tier mapping can rewrite the
 * JSON tree in between: text -> yajl tree (same checks and errors as
 * spec_parse; the caller frees the tree with yajl_tree_free), and tree ->
 * spec (the tree is not kept: strings are copied into the spec's arena). */
typedef struct yajl_val_s *yajl_val;
int spec_parse_json_tree(const char *json, size_t len, const char *what, yajl_val *out, ac_error_t *err);
int spec_parse_tree(yajl_val tree, const char *what, struct oci_spec **out, ac_error_t *err);
/* yajl_tree_parse's tree of the len bytes at text (no NUL needed), built
 * without its per-member reallocs (spec/json_tree.c); NULL with yajl's
 * message in errbuf when it does not parse. Free with yajl_tree_free. */
yajl_val json_tree_parse(const char *text, size_t len, char *errbuf, size_t errlen);
/* Read and parse BUNDLE/config.json (or an explicit path). */
int spec_load(const char *path, struct oci_spec **out, ac_error_t *err);
/* Parse a runtime-spec "process" object alone (exec --process FILE); the
 * result is an oci_spec whose only member is process. */
int spec_parse_process(const char *json, size_t len, const char *what, struct oci_spec **out, ac_error_t *err);
/* Parse a LinuxResources object alone (update --resources); the result is an
 * oci_spec with linux->resources set. */
int spec_parse_resources(const char *json, size_t len, const char *what, struct oci_spec **out, ac_error_t *err);
void spec_free(struct oci_spec *spec);
static inline void spec_freep(struct oci_spec **s) { if (*s) spec_free(*s); }
#define cleanup_spec __attribute__((cleanup(spec_freep)))

/* Allocation inside a spec's arena (used by the runtime when it adds to a
 * spec, e.g. tiers or exec flags). */
void *spec_alloc(struct oci_spec *spec, size_t size);
char *spec_strdup(struct oci_spec *spec, const char *s);
struct oci_spec *spec_new_empty(void);

/* Look an annotation up; NULL when absent. */
const char *spec_annotation(const struct oci_spec *spec, const char *key);
/* The namespace entry of a type (CLONE_NEW*), or NULL. */
const struct oci_namespace *spec_namespace(const struct oci_spec *spec, int type);

/* The default config.json of `agentcage spec` (rootless variant when
 * rootless; a cgroup namespace when cgroupns, which runc gives a pure
 * cgroup v2 host), as a NUL-terminated JSON string the caller frees. */
char *spec_default_json(bool rootless, bool cgroupns);
/* The runtime-spec "features" document for `agentcage features`. */
char *spec_features_json(void);

/* Capability helpers: name ("CAP_SYS_ADMIN") <-> number; -1 when unknown. */
int spec_cap_from_name(const char *name);

#endif
