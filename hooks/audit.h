/* The audit trail: append-only JSON lines, each carrying the SHA-256 of the
 * line before it, so a removed, reordered or edited line breaks the chain
 * at a place `agentcage audit verify` can name.
 *
 *   {"seq":7,"time":"2024-05-01T10:00:00.123Z","prev":"<64 hex>","event":"egress-deny","id":"c1",...}
 *
 * The first line's "prev" is 64 zeros. Writers (the runtime and every hook,
 * in separate processes) serialise on flock(LOCK_EX) of the log file, which
 * is opened O_APPEND; the log's directory is created 0700. The log lives on
 * the host and nothing mounts it into a container. */
#ifndef AGENTCAGE_AUDIT_H
#define AGENTCAGE_AUDIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "runtime/util/error.h"
#include "hooks/sha256.h"

#define AUDIT_DEFAULT_LOG "/var/log/agentcage/audit.jsonl"

/* Append one record. After err comes a NULL-terminated list of (key, value)
 * string pairs; each value is written as a JSON string, except when the key
 * starts with '=': then the value is already JSON (a number, an array from
 * audit_json_argv ...) and the key is written without the '='. A NULL
 * log_path means AUDIT_DEFAULT_LOG. id may be NULL.
 *
 *   audit_record(log, "container-exited", id, &err, "=status", "0", "signal", "KILL", NULL);
 */
int audit_record(const char *log_path, const char *event, const char *id, ac_error_t *err, ...)
    __attribute__((sentinel));
int audit_recordv(const char *log_path, const char *event, const char *id, ac_error_t *err, va_list ap);
/* The same with the members already encoded: `"a":1,"b":"x"` (or NULL). */
int audit_append(const char *log_path, const char *event, const char *id, const char *members, ac_error_t *err);

/* JSON encoding helpers (malloc'd): a quoted, escaped string; an array of
 * strings. Invalid UTF-8 bytes are written as \u00XX so the line stays JSON. */
char *audit_json_string(const char *s);
char *audit_json_argv(char *const *argv);

/* Recompute the chain of the log at path. Returns the number of records
 * (>= 0) with the last line's hash in last_hex, or -1 with *err naming the
 * first bad line: "PATH:17: previous-hash mismatch (line removed, reordered
 * or edited)". */
long audit_verify(const char *path, char last_hex[SHA256_HEX_LEN + 1], ac_error_t *err);
/* The same on an open stream; path only names it in errors. */
long audit_verify_stream(FILE *f, const char *path, char last_hex[SHA256_HEX_LEN + 1], ac_error_t *err);

#endif
