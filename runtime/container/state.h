/* Container state under --root: one directory per container.
 *
 *   ROOT/ID/state.json   written atomically (tmp + rename)
 *   ROOT/ID/exec.fifo    exists between create and start
 *   ROOT/ID/lock         flock()ed by every command that changes the container
 */
#ifndef AGENTCAGE_STATE_H
#define AGENTCAGE_STATE_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/util/error.h"

enum container_status { STATUS_CREATING, STATUS_CREATED, STATUS_RUNNING, STATUS_PAUSED, STATUS_STOPPED };
extern const char *const container_status_names[];

struct container_state {
    char *id;
    char *bundle;          /* absolute */
    char *rootfs;          /* absolute */
    char *cgroup_path;     /* resolved cgroup path, "" if none */
    char *created;         /* RFC3339 with nanoseconds */
    char *owner;           /* "" */
    pid_t pid;             /* init process, 0 when not started */
    unsigned long long pid_start_time; /* /proc/PID/stat starttime, guards PID reuse */
    bool systemd_cgroup;
    bool shared_pidns;     /* no new pid namespace: kill must walk the cgroup */
    bool creating;         /* written before the cgroup is made, replaced once the
                              container exists: a create that died leaves this,
                              which `delete --force` cleans up and `list` skips */
    char **annotations;    /* key, value, key, value..., NULL */
    int tier;              /* the tier the mapping applied, -1 (TIER_NONE) for a plain container */
    long long timeout_ms;  /* the tier's wall-clock limit, 0 = none */
    unsigned hooks_mask;   /* bit k: config.json has hooks of kind k (start and delete
                              read the config only when they have some to run) */
    int notify_fd;         /* the fd number of the tier seccomp filter's listener in the init, which start
                              hands to the watchdog (pidfd_getfd) before the init runs the process; 0 = none */
    pid_t watchdog_pid;    /* the tier's watchdog, started by start; 0 = none */
    unsigned long long watchdog_start; /* its /proc/PID/stat starttime */
    bool watchdog_awaits;  /* (not saved) `run`'s watchdog, started by create: start sends it the go */
    int userns_slice;      /* a tier's slice of host ids (userns.c), -1: none */
    bool gvisor;           /* a tier's sandbox under gVisor (runsc, gvisor.c): its verbs go through runsc */
    bool userns_late;      /* the init joined its user namespace after its setup: exec joins it last */
    unsigned long long netns_dev, netns_ino; /* a tiered pod sandbox: its cage network namespace,
                                                which the pod's containers may join; 0 = none */
    const struct oci_spec *config; /* not saved: `run`'s own container, the config its create parsed (hooks
                                      after start read it, not config.json again); NULL: read the file */
    char *termination_log; /* a tier's /dev/termination-log source the watchdog writes its reason to:
                              "" none; NULL in an older agentcage's state (start reads the config) */
};

#endif
