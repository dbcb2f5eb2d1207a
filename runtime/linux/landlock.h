/* Landlock for tiered containers: writes only under the paths the tier
 * leaves writable; reading and executing are not restricted. */
#ifndef AGENTCAGE_LANDLOCK_H
#define AGENTCAGE_LANDLOCK_H

#include "runtime/util/error.h"

/* The kernel's Landlock ABI version, or 0 when it has none (not built, or
 * not in the lsm= list). */
int landlock_abi(void);

/* Restrict the calling process and its future children: every filesystem
 * write access the kernel's ABI knows is denied except beneath /dev and
 * each path of rw_paths (colon-separated, absolute, as seen from the
 * current root; missing ones are skipped). Sets no_new_privs (Landlock
 * requires it without CAP_SYS_ADMIN; tiers set it anyway). Fails when the
 * kernel has no Landlock: a tier promises it. */
int landlock_restrict_writes(const char *rw_paths, int tier, ac_error_t *err);

#endif
