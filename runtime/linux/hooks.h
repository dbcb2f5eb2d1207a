/* OCI hooks: run one hook list with the state JSON on stdin. */
#ifndef AGENTCAGE_HOOKS_H
#define AGENTCAGE_HOOKS_H

#include "runtime/util/error.h"
#include "spec/spec.h"

/* Run each hook in order: fork, exec path with args and env, the state JSON
 * written to its stdin, stdout/stderr to the runtime's stderr; kill it after
 * its timeout. Returns -1 at the first hook that fails (non-zero exit,
 * signal, timeout, exec failure) with *err naming the hook kind, index and
 * path. */
int hooks_run(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json,
              ac_error_t *err);

/* An entry "NAME=value" every hook run from now on gets in its environment
 * besides its own (NULL: none): a tiered container's denials counter,
 * $AGENTCAGE_DENIALS, for its egress proxy. The string must outlive the runs. */
void hooks_set_extra_env(const char *entry);

/* The same for hooks whose failure only warns (poststart, poststop): every
 * hook runs, a failing one is logged as a warning. */
void hooks_run_warn(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json);

#endif
