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

/* Does the spec have prestart or createRuntime hooks, those the runtime runs
 * in its own namespaces while the container's init waits after its mounts?
 * Both sides ask: without any, the init does not stop for them (one round
 * trip fewer). */
bool hooks_runtime_side(const struct oci_spec *spec);
/* Whether hooks_start_early can start hook (a builtin with a start). */
bool hooks_can_start_early(const struct oci_hook *hook);

/* An entry "NAME=value" every hook run from now on gets in its environment
 * besides its own (NULL: none): a tiered container's denials counter,
 * $AGENTCAGE_DENIALS, for its egress proxy. The string must outlive the runs. */
void hooks_set_extra_env(const char *entry);
/* That entry (NULL: none), for a hook run in-process (hooks_builtin_register). */
const char *hooks_extra_env(void);

/* The same for hooks whose failure only warns (poststart, poststop): every
 * hook runs, a failing one is logged as a warning. */
void hooks_run_warn(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json);

/* A hook program this binary also carries: run(hook, state, err) does in
 * the runtime's own process what the program would do with that hook's
 * args and env and the state on its stdin (no fork and exec of a program
 * on the hot path). Returns 0, or -1 with *err set. */
typedef int (*hook_builtin_fn)(const struct oci_hook *hook, const char *state_json, ac_error_t *err);

/* Register a carried program by its file name (at start-up: the program's
 * code registers itself from a constructor). */
void hooks_builtin_register(const char *name, hook_builtin_fn run);

/* A carried program whose work can begin before its turn comes and be
 * waited for at its turn: start(hook, state, err) begins it and returns a
 * pending fd (or -1 with *err set); finish(pending, err) waits for the
 * outcome, closes the fd and returns what run would have. Registered with
 * run, which runs it in one go where it is not started early. A start
 * that did all the work at once returns HOOK_START_DONE: nothing to wait for. */
#define HOOK_START_DONE (-2)
typedef int (*hook_builtin_start_fn)(const struct oci_hook *hook, const char *state_json, ac_error_t *err);
typedef int (*hook_builtin_finish_fn)(int pending, ac_error_t *err);
void hooks_builtin_register_early(const char *name, hook_builtin_fn run, hook_builtin_start_fn start,
                                  hook_builtin_finish_fn finish);

/* A hook started ahead of its turn: which one (NULL: none), the fd its
 * finish waits on. */
struct hook_early {
    const struct oci_hook *hook;
    int pending;
    hook_builtin_finish_fn finish;
};
#define HOOK_EARLY_NONE ((struct hook_early){.hook = NULL, .pending = -1, .finish = NULL})

/* Start hooks[0] now if it is a carried program that can start early (its
 * turn is first, so nothing it could depend on runs before it); *early
 * says which was started. Returns -1 with *err when its start failed. */
int hooks_start_early(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json,
                      struct hook_early *early, ac_error_t *err);

/* hooks_run, where the hook early names was started already: at its turn
 * it is waited for (finished) instead of run. */
int hooks_run_started(enum oci_hook_kind kind, const struct oci_hook *hooks, size_t n, const char *state_json,
                      struct hook_early *early, ac_error_t *err);

/* Wait for the early hook now (its finish), if there is one: its error
 * named as hooks_run names a hook's. */
int hooks_finish_early(enum oci_hook_kind kind, struct hook_early *early, ac_error_t *err);

/* An early hook whose turn never comes (the create failed first): its fd
 * closed; what it started ends with the container (its own business). */
void hooks_early_abandon(struct hook_early *early);

/* From now on, a hook whose path is DIR/NAME of a registered NAME runs
 * in-process; NULL: every hook is exec'd. The runtime enables its own
 * directory for a tier's container only: there the hooks are the tier's own
 * (tier_map_hooks refuses the bundle's), written by policy_hooks_add. */
void hooks_builtin_enable(const char *dir);

#endif
