/* seccomp filters from config.json (through libseccomp). */
#ifndef AGENTCAGE_SECCOMP_H
#define AGENTCAGE_SECCOMP_H

#include "runtime/util/error.h"
#include "spec/spec.h"

/* Compile the spec's seccomp section to a loadable filter. Done before the
 * container process drops privileges; loading is separate so the filter is
 * installed as the very last step before execve. Unknown syscall names are
 * skipped (as runc does); an unknown architecture or flag is an error. */
struct seccomp_prepared;
int seccomp_prepare(const struct oci_seccomp *seccomp, struct seccomp_prepared **out, ac_error_t *err);
/* Load it into the calling thread. If the spec asked for a listener
 * (SCMP_ACT_NOTIFY), *notify_fd receives the listener fd (else -1).
 * (Not named seccomp_load: that is libseccomp's own function.) */
int seccomp_load_prepared(struct seccomp_prepared *p, int *notify_fd, ac_error_t *err);
void seccomp_prepared_free(struct seccomp_prepared *p);
/* Send the notify fd with the container state to listenerPath (SCM_RIGHTS),
 * as runtime-spec describes. */
int seccomp_send_listener(const char *listener_path, int notify_fd, const char *state_json, ac_error_t *err);

#endif
