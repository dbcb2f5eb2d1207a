/* Capabilities and the user the container process runs as. */
#ifndef AGENTCAGE_CAPS_H
#define AGENTCAGE_CAPS_H

#include <stdbool.h>

#include "runtime/util/error.h"
#include "spec/spec.h"

/* Become process->user (setgroups additionalGids, setresgid, setresuid)
 * while keeping capabilities across the uid change, then set the bounding,
 * permitted, effective, inheritable and ambient sets exactly as requested
 * (absent capabilities = none). Called last before seccomp and execve. */
int caps_apply_user_and_capabilities(const struct oci_process *process, ac_error_t *err);
/* Drop the bounding set to the process's bounding set; used early by exec. */
int caps_known_max(void); /* highest capability number the kernel knows */

#endif
