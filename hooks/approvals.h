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

#include <stdbool.h>
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

/* Held egress requests (io.agentcage.egress-ask, tiers 2 and 3): the
 * proxy's writer holds a request to a host outside the allowlist and
 * waits for the operator, through files in DIR/egress (0700):
 *   ID.N.pending  the proxy's, while request N of container ID is held:
 *                 "method=M\nhost=H\nport=P\nsince=UNIXTIME\npid=WRITER\n"
 *   ID.T.answer   the operator's (`agentcage approve ID --egress`, `deny`):
 *                 "decision=allow|deny\nhost=H\nport=P\nuntil=UNIXTIME\n"
 *                 (port 0: any port of H; until 0: only what is held now,
 *                 else H:P is allowed until then), taken and removed by the
 *                 proxy of ID. */
#define EGRESS_ASK_HOST_MAX 253

struct egress_answer {
    bool allow;
    char host[EGRESS_ASK_HOST_MAX + 1];
    int port;
    int64_t until;
};

struct egress_held {
    char container[256];
    unsigned ask;
    char method[33];
    char host[EGRESS_ASK_HOST_MAX + 1];
    int port;
    int64_t since;
    int pid;
};

/* DIR/egress, malloc'd. */
char *approval_egress_dir(const char *dir);
/* Write ID.N.pending (the directory made 0700 when missing). */
int approval_egress_hold(const char *dir, const char *id, unsigned ask, const char *method, const char *host, int port,
                         ac_error_t *err);
/* Remove ID.N.pending. */
void approval_egress_release(const char *dir, const char *id, unsigned ask);
/* Write an answer for container ID. */
int approval_egress_answer(const char *dir, const char *id, const struct egress_answer *a, ac_error_t *err);
/* The next answer for ID: 1 with *a (its file removed), 0 when there is
 * none; a malformed or untrusted answer file is removed and skipped. */
int approval_egress_take_answer(const char *dir, const char *id, struct egress_answer *a);
/* The held requests (all containers, or id's when not NULL), malloc'd in
 * *out, oldest first; those of a proxy that is gone are left out. */
int approval_egress_list(const char *dir, const char *id, struct egress_held **out, size_t *n, ac_error_t *err);

#endif
