/* The tiers' seccomp filters: compiled to BPF at build time from
 * tier-annotations/seccomp/syscalls.list (build/gen/tier_filters.c) and
 * loaded as is, with no libseccomp at run time. Each tier has two: refusals
 * fail with EPERM, or go to a listener (SECCOMP_RET_USER_NOTIF), the
 * container's watchdog, which answers EPERM and counts them. */
#ifndef AGENTCAGE_TIER_SECCOMP_H
#define AGENTCAGE_TIER_SECCOMP_H

#include <linux/filter.h>

#include "runtime/util/error.h"

struct tier_filter {
    const struct sock_filter *insns;        /* refusals: EPERM */
    unsigned short len;
    const struct sock_filter *notify_insns; /* refusals: to the listener */
    unsigned short notify_len;
};

/* Indexed by tier, 0..3 (generated). */
extern const struct tier_filter tier_filters[4];

/* The same filters as OCI linux.seccomp objects (JSON), refusals EPERM:
 * for runsc, which applies the config's profile inside gVisor. */
extern const char *const tier_oci_seccomp[4];

/* The tiers whose refusals are counted (through the listener). */
#define TIER_SECCOMP_COUNTED(tier) ((tier) >= 1)

/* Set no_new_privs and load the filter of tier (0..3) on the calling
 * thread, on top of any filter already loaded: the kernel runs them all and
 * takes the most restrictive answer. At a counted tier the listener
 * variant, with its new listener's fd (close-on-exec) in *notify_fd; where
 * the kernel gives no listener (a filter already loaded has one: EBUSY) the
 * EPERM variant with SECCOMP_FILTER_FLAG_LOG (refusals in the kernel's
 * audit log, not counted) and *notify_fd -1, as at tier 0. */
int tier_seccomp_load(int tier, int *notify_fd, ac_error_t *err);

#endif
