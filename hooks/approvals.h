/* Approvals of tier-3 containers.
 *
 * The runtime's gate (create, before anything is made and before any hook
 * runs) lets a tier-3 container through only with a grant the operator
 * wrote with `agentcage approve`. A grant is
 *   - addressed by a name: the container id, or io.agentcage.request-id;
 *   - bound to the digest (sha256) of the effective config.json, so it
 *     approves exactly the config the operator saw, not a later one under
 *     the same name;
 *   - single-use: the gate removes it as it lets the container through;
 *   - kept in a directory of the operator's (default
 *     /var/lib/agentcage/approvals, 0700, owned by the runtime's user),
 *     which no tiered container may mount.
 * A refused create leaves a request there (NAME.request: the digest and
 * what the container asks for) that `agentcage approve NAME` grants.
 * Files: NAME.grant ("digest=sha256:HEX\nexpires=UNIXTIME\n"), NAME.request
 * (one JSON object). */
#ifndef AGENTCAGE_APPROVALS_H
#define AGENTCAGE_APPROVALS_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "runtime/util/error.h"

#define APPROVAL_DIGEST_LEN (7 + 64) /* "sha256:" + hex */

/* "sha256:HEX" of text, into out[APPROVAL_DIGEST_LEN + 1]. */
void approval_digest(const char *text, size_t len, char out[APPROVAL_DIGEST_LEN + 1]);

/* Write DIR/NAME.grant atomically (tmp + rename, 0600; DIR made 0700). */
int approval_grant(const char *dir, const char *name, const char *digest, int64_t expires, ac_error_t *err);

/* Does the grant NAME hold for a config of this digest at now: 1 yes; 0 no
 * (none, expired, for another config, untrusted), with a one-phrase *reason
 * ("no approval", "approval expired at ...", "approved for another config
 * ..."); -1 on an error reading the directory. */
int approval_check(const char *dir, const char *name, const char *digest, time_t now, char **reason,
                   ac_error_t *err);
/* Use the grant up (remove it, and its request): 1 when this call removed
 * it, so that of concurrent creates only one gets it; 0 with *reason when
 * it was gone already; -1 on an error. */
int approval_use(const char *dir, const char *name, char **reason, ac_error_t *err);

/* Record the refused create's request: DIR/NAME.request holds
 * {"name","id","digest","tier","egress","created"}. */
int approval_request(const char *dir, const char *name, const char *id, const char *digest, int tier,
                     const char *egress, ac_error_t *err);

/* The digest of the pending request NAME, into out. 0 when there is one,
 * -1 (with *err) when there is none or it is unreadable. */
int approval_request_digest(const char *dir, const char *name, char out[APPROVAL_DIGEST_LEN + 1], ac_error_t *err);

/* The pending requests, one JSON object a line, on f. */
int approval_list_requests(const char *dir, FILE *f, ac_error_t *err);

#endif
