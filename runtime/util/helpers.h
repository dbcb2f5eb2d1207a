/* Where the runtime's helper programs live (agentcage-watchdog,
 * agentcage-egress, agentcage-audit, agentcage-install-engine).
 *
 * In this order:
 *   1. --helpers-dir DIR, or `helpers-dir =` in the operator's config file
 *      (--hooks-dir, the older flag, for the tier's hook program alone:
 *      tier_hooks_dir()): the caller passes it, nothing here;
 *   2. the directory of the running binary, when agentcage-watchdog is
 *      there: a build tree, or a copy of all of them into one folder (the
 *      layout of older `make install`s). A binary beside its own helpers
 *      never mixes with another install's;
 *   3. the directory compiled in (AGENTCAGE_HELPERS_DIR, the Makefile's
 *      $(LIBEXECDIR)/agentcage: /usr/libexec/agentcage for the package). */
#ifndef AGENTCAGE_HELPERS_H
#define AGENTCAGE_HELPERS_H

/* The compiled-in directory (step 3). */
const char *helpers_compiled_dir(void);
/* The directory of steps 2-3 for this process, computed once; never NULL. */
const char *helpers_default_dir(void);
/* DIR/NAME (dir NULL: helpers_default_dir()). malloc'd. */
char *helper_path(const char *dir, const char *name);

#endif
