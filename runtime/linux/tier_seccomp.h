/* The tiers' seccomp filters: compiled to BPF at build time from
 * tier-annotations/seccomp/syscalls.list (build/gen/tier_filters.c) and
 * loaded as is, with no libseccomp at run time. */
#ifndef AGENTCAGE_TIER_SECCOMP_H
#define AGENTCAGE_TIER_SECCOMP_H

#include <linux/filter.h>

#include "runtime/util/error.h"

struct tier_filter {
    const struct sock_filter *insns;
    unsigned short len;
};

/* Indexed by tier, 0..3 (generated). */
extern const struct tier_filter tier_filters[4];

/* Set no_new_privs and load the filter of tier (0..3) on the calling
 * thread, on top of any filter already loaded: the kernel runs them all and
 * takes the most restrictive answer. Meant as the last step before execve. */
int tier_seccomp_load(int tier, ac_error_t *err);

#endif
