/* Protections of a tiered container's writable project mounts that must
 * survive renames and new names (see protect.c). */
#ifndef AGENTCAGE_PROTECT_H
#define AGENTCAGE_PROTECT_H

#include "runtime/util/error.h"

/* roots: the io.agentcage.protect-roots annotation, colon-separated container
 * paths, each "DEST" or "DEST=home". Runs after pivot_root. */
int protect_writable_roots(const char *roots, ac_error_t *err);
/* roots: io.agentcage.home-roots; every dot entry at the top of each is
 * hidden (a folder under an empty tmpfs, a file under /dev/null) but those
 * in allow (io.agentcage.home-allow, colon-separated). After pivot_root,
 * before protect_writable_roots. */
int hide_home_dot_entries(const char *roots, const char *allow, ac_error_t *err);

#endif
