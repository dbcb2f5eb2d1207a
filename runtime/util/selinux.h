/* libselinux, loaded only for a config that names an SELinux label: a
 * container without one never maps it (nor libpcre2, which it pulls in), nor
 * runs its constructor (which probes /sys/fs/selinux and /proc/filesystems)
 * on the hot path.
 *
 * ac_selinux_load is called on the host before the container's processes
 * are cloned (create, exec): they inherit the loaded library, and never load
 * one themselves, least of all from inside the container's root. */
#ifndef AGENTCAGE_SELINUX_H
#define AGENTCAGE_SELINUX_H

#include "runtime/util/error.h"

/* dlopen libselinux.so.1 (once). -1 with *err when it cannot be loaded. */
int ac_selinux_load(ac_error_t *err);
/* is_selinux_enabled(): 1, 0, or -1 when libselinux was not loaded. */
int ac_selinux_enabled(void);
/* setexeccon(label); -1 with errno (ENOSYS: libselinux not loaded). */
int ac_selinux_setexeccon(const char *label);

#endif
