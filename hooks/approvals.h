/* Approval grants: one file per container id (or request id) in the
 * operator's approvals directory, holding "expires=UNIXTIME". Written by
 * `agentcage approve`, checked by agentcage-approve. */
#ifndef AGENTCAGE_APPROVALS_H
#define AGENTCAGE_APPROVALS_H

#include <stdint.h>
#include <time.h>

#include "../runtime/error.h"

/* Write DIR/NAME atomically (tmp + rename, 0600; DIR created 0700). */
int approval_grant(const char *dir, const char *name, int64_t expires, ac_error_t *err);
/* 1: a grant valid at now (its expiry in *expires); 0: refused with a
 * one-phrase *reason ("no approval", "approval expired at ..."); -1: error. */
int approval_check(const char *dir, const char *name, time_t now, int64_t *expires, char **reason,
                   ac_error_t *err);

#endif
