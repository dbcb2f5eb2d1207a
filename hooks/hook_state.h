/* What every policy hook shares: the runtime-spec state JSON on stdin
 * (ociVersion, id, status, pid, bundle, annotations) and small parsers for
 * the annotations' values. */
#ifndef AGENTCAGE_HOOK_STATE_H
#define AGENTCAGE_HOOK_STATE_H

#include <stdint.h>
#include <sys/types.h>

#include "runtime/util/error.h"

typedef struct yajl_val_s *yajl_val;

struct hook_state {
    yajl_val tree;
    const char *id;
    const char *status;
    const char *bundle;
    pid_t pid;            /* 0 when absent (poststop) */
    yajl_val annotations; /* object or NULL */
};

/* Read and check the state from fd: "id" must be a string that is a valid
 * container id (so it can name a file), "pid" when present a positive
 * integer. Errors are one line: "bad state on stdin: no \"id\"". */
int hook_state_read(int fd, struct hook_state *st, ac_error_t *err);
/* The same from the text (a runtime that runs a hook in its own process). */
int hook_state_parse(const char *text, struct hook_state *st, ac_error_t *err);
void hook_state_free(struct hook_state *st);
/* An annotation's value, NULL when missing or not a string. */
const char *hook_state_annotation(const struct hook_state *st, const char *key);

/* [A-Za-z0-9][A-Za-z0-9_.+-]*: safe as a file name (no '/', no "..") */
int hook_valid_name(const char *s);
/* "90", "30s", "10m", "2h", "1d" -> seconds; -1 on junk. */
int hook_parse_duration(const char *s, int64_t *seconds);
/* "4096", "64k", "1M", "1MiB", "2G" (binary multiples) -> bytes; -1 on junk. */
int hook_parse_size(const char *s, uint64_t *bytes);

#endif
