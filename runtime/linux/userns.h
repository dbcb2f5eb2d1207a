/* User namespaces of tiered containers (userns.c). */
#ifndef AGENTCAGE_LINUX_USERNS_H
#define AGENTCAGE_LINUX_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/util/error.h"
#include "spec/spec.h"

/* Host ids per container: uid and gid 0..65535 inside. */
#define USERNS_SLICE 65536u

/* Claim a free slice of [start, start + size) for the container id of
 * state_root: its index in *slice and its first host id in *host_base. */
int userns_slice_acquire(const char *state_root, const char *id, uint32_t start, uint32_t size, int *slice,
                         uint32_t *host_base, ac_error_t *err);
/* Give a claimed slice back (a no-op for -1, or for a slice no longer ours). */
void userns_slice_release(const char *state_root, const char *id, int slice);
/* A new user namespace with these maps ("container host size"), as an fd.
 * It is made by a short-lived holder process, killed before this returns
 * and reaped here, or with defer_reap by userns_reap_holder once the caller
 * has other work done (its exit takes as long as making the namespace). */
int userns_make(const struct oci_idmap *uids, size_t n_uids, const struct oci_idmap *gids, size_t n_gids,
                bool defer_reap, ac_error_t *err);
/* Reap the holder a userns_make left (a no-op when there is none). */
void userns_reap_holder(void);
/* Does a map send any id to host id 0? */
bool userns_maps_host_root(const struct oci_idmap *map, size_t n);
/* The host id of container id `id`, or -1 when it is not mapped. */
int userns_host_of(const struct oci_idmap *map, size_t n, uint32_t id, uint32_t *host);
/* fchown the standard streams that are anonymous pipes or sockets made for
 * the container (never a file, a device or a named fifo of the host) to its
 * root, so /dev/stdout opens inside the user namespace. */
void userns_give_stdio(uid_t uid, gid_t gid);

#endif
