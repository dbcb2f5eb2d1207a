/* Shared between the cgroup facade (cgroup.c) and its backends
 * (cgroup_v1.c, cgroup_v2.c, cgroup_bpf.c). Not part of the runtime's
 * public interface: everything else goes through cgroup.h. */
#ifndef AGENTCAGE_CGROUP_INTERNAL_H
#define AGENTCAGE_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/cgroup/cgroup.h"

/* The controllers the runtime knows, by their v1 names. */
enum cg_controller {
    CG_CPU,
    CG_CPUACCT,
    CG_CPUSET,
    CG_MEMORY,
    CG_DEVICES,
    CG_FREEZER,
    CG_BLKIO,
    CG_PIDS,
    CG_HUGETLB,
    CG_NET_CLS,
    CG_NET_PRIO,
    CG_PERF_EVENT,
    CG_RDMA,
    CG_MISC,
    CG_NAME_SYSTEMD,
    CG_CONTROLLER_COUNT
};
#define CG_BIT(c) (1u << (c))

/* v1 name ("cpu", "name=systemd") and cgroup2 name ("io" for blkio; NULL
 * when cgroup2 has no such controller, e.g. devices and freezer, which are
 * core features there). */
const char *cg_v1_name(enum cg_controller c);
const char *cg_v2_name(enum cg_controller c);

#define CG_MAX_HIERARCHIES 32

struct cg_hierarchy {
    char *mountpoint;
    char *root; /* the mount's root inside the hierarchy (mountinfo field 4) */
    char *options; /* the super options as written, e.g. "rw,cpu,cpuacct" */
    uint32_t controllers; /* CG_BIT()s */
};

struct cg_layout {
    enum cgroup_mode mode;
    struct cg_hierarchy v1[CG_MAX_HIERARCHIES];
    size_t n_v1;
    int v1_index[CG_CONTROLLER_COUNT]; /* index into v1[], -1 when none */
    char *v2_mount; /* NULL when there is no cgroup2 mount */
    char *v2_root;  /* that mount's root inside the hierarchy (mountinfo field 4) */
    uint32_t v2_controllers; /* available at the cgroup2 root (cgroup.controllers) */
};

/* Parse mountinfo text into a layout (reads <cgroup2>/cgroup.controllers
 * when it exists). Exposed for tests; the runtime uses cg_layout_get(). */
int cg_layout_parse(const char *mountinfo, struct cg_layout *layout, ac_error_t *err);
void cg_layout_release(struct cg_layout *layout);
/* cgroup_hierarchy_mount (cgroup.h) on a given layout. */
int cg_layout_hierarchy_mount(const struct cg_layout *l, const char *controllers, const char **mountpoint,
                              const char **root);
/* The host's layout, parsed once per process. */
const struct cg_layout *cg_layout_get(ac_error_t *err);

enum cg_where { CG_NOWHERE, CG_ON_V1, CG_ON_V2 };
/* Where a controller is driven on this host: its v1 hierarchy when there is
 * one, otherwise cgroup2 when cgroup2 has it. Devices and freezer count as
 * present on any cgroup2 (eBPF, cgroup.freeze). */
enum cg_where cg_controller_where(const struct cg_layout *l, enum cg_controller c);
/* "<mountpoint><path>" of the controller's v1 hierarchy, NULL when none. */
char *cg_v1_dir(const struct cg_layout *l, enum cg_controller c, const char *path);
/* "<cgroup2 mount><path>", NULL when there is no cgroup2 mount. */
char *cg_v2_dir(const struct cg_layout *l, const char *path);

/* File helpers. Writes fail with "cgroup: write FILE=VALUE: strerror". */
int cg_write(const char *dir, const char *file, const char *value, ac_error_t *err);
/* Read a cgroup file, trailing whitespace removed. -1 (errno set, no error
 * message) when it cannot be read: callers decide whether that matters. */
int cg_read(const char *dir, const char *file, char **out);
bool cg_file_exists(const char *dir, const char *file);
/* A single number; "max" reads as UINT64_MAX. -1 when missing or junk. */
int cg_read_u64(const char *dir, const char *file, uint64_t *out);
/* The value of "KEY VALUE" lines (memory.stat, cpu.stat, ...). */
int cg_keyed_u64(const char *text, const char *key, uint64_t *out);

/* Default device rules every container gets after its own (as runc does):
 * mknod of anything, and the standard /dev nodes. */
extern const struct oci_device_rule cg_default_device_rules[];
extern const size_t cg_n_default_device_rules;

/* v1 backend: applies every requested resource whose controller lives on a
 * v1 hierarchy. */
int cg_v1_apply(const struct cg_layout *l, const char *path, const struct oci_resources *r,
                bool creating, ac_error_t *err);
/* A v1 cpuset's cpus and mems: its own when set, else its parent's copied
 * in (an empty one holds no task). values[] holds the parent's (NULL: read
 * them) and the level's on return, for the level below; a level made_now
 * is empty, so written without a read. */
int cg_v1_cpuset_init(const char *dir, bool made_now, char *values[2], ac_error_t *err);
int cg_v1_freeze(const char *dir, bool frozen, ac_error_t *err);
bool cg_v1_is_frozen(const char *dir);
void cg_v1_stats(const struct cg_layout *l, const char *path, struct cgroup_stats *st);
void cg_v1_memory_peak(const struct cg_layout *l, const char *path, struct cgroup_stats *st);

/* v2 backend: applies every requested resource whose controller lives on
 * cgroup2 (and the unified map). */
int cg_v2_apply(const struct cg_layout *l, const char *path, const struct oci_resources *r,
                bool creating, ac_error_t *err);
/* Make the controllers this container needs available in its cgroup2 dir:
 * enable them in the subtree_control of every ancestor. created_depth = how
 * many trailing path components were created by us (their subtree_control is
 * ours to write). On a hybrid host a cgroup we did not create is never
 * changed: a missing hugetlb controller there is an error. */
int cg_v2_enable_controllers(const struct cg_layout *l, const char *path, size_t created_depth,
                             const struct oci_resources *r, ac_error_t *err);
int cg_v2_freeze(const char *dir, bool frozen, ac_error_t *err);
bool cg_v2_is_frozen(const char *dir);
void cg_v2_stats(const struct cg_layout *l, const char *path, struct cgroup_stats *st);
void cg_v2_memory_peak(const struct cg_layout *l, const char *path, struct cgroup_stats *st);

/* eBPF device filter for cgroup2 (cgroup_bpf.c). */
/* Build and load a BPF_PROG_TYPE_CGROUP_DEVICE program implementing rules
 * (in order, the last matching rule wins, default deny). Returns its fd. */
int cg_bpf_devices_load(const struct oci_device_rule *rules, size_t n_rules, ac_error_t *err);
/* Attach prog_fd to the cgroup2 dir with BPF_F_ALLOW_MULTI and detach the
 * device programs attached there before (so an update replaces them). */
int cg_bpf_devices_attach(int cgroup_fd, int prog_fd, ac_error_t *err);
/* Load rules + defaults and attach them to dir. */
int cg_bpf_devices_apply(const char *dir, const struct oci_device_rule *rules, size_t n_rules,
                         ac_error_t *err);

#endif
