/* Landlock's audit records, as the watchdog reads them from the kernel's
 * audit multicast (runtime/linux/kernel_audit.c makes the socket). Plain
 * C, no libc: the watchdog includes it, and so do the unit tests
 * (tests/test_landlock_records.c).
 *
 * The kernel's text of a record, after "audit(TIME:SERIAL): ":
 *   AUDIT_LANDLOCK_ACCESS  domain=HEX blockers=RIGHT[,RIGHT] OBJECT...
 *   AUDIT_LANDLOCK_DOMAIN  domain=HEX status=allocated mode=enforcing pid=N uid=N exe=... comm=...
 *   AUDIT_LANDLOCK_DOMAIN  domain=HEX status=deallocated denials=N
 * The allocated record comes once, right after the domain's first logged
 * refusal; pid is the process that made the domain (in the initial pid
 * namespace). Only those fixed prefixes are parsed: what follows (paths,
 * names) is the container's to shape, quoted or hex-encoded by the kernel,
 * and is only copied, bounded, into the denial's text. */
#ifndef AGENTCAGE_LANDLOCK_RECORDS_H
#define AGENTCAGE_LANDLOCK_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/linux/landlock_abi.h"

enum ll_record_kind {
    LL_RECORD_NONE = 0,      /* not a Landlock record this parser knows */
    LL_RECORD_ACCESS,        /* a refusal of the domain */
    LL_RECORD_ALLOCATED,     /* the domain and the pid that made it */
    LL_RECORD_DEALLOCATED,   /* the domain is gone: its id never shows again */
};

struct ll_record {
    enum ll_record_kind kind;
    uint64_t domain;  /* never 0 */
    int32_t pid;      /* LL_RECORD_ALLOCATED */
    const char *what; /* LL_RECORD_ACCESS: "RIGHT[,RIGHT] OBJECT...", what_len bytes (not NUL-terminated) */
    size_t what_len;
};

static inline int ll_take(const char **p, const char *end, const char *word)
{
    const char *q = *p;
    for (; *word; word++, q++)
        if (q == end || *q != *word)
            return 0;
    *p = q;
    return 1;
}

static inline int ll_hex(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    int digits = 0;
    for (; *p < end; (*p)++, digits++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        if (digits == 16)
            return 0;
        v = v * 16 + (uint64_t)d;
    }
    *out = v;
    return digits > 0;
}

static inline int ll_dec(const char **p, const char *end, int32_t *out)
{
    int64_t v = 0;
    int digits = 0;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++, digits++) {
        v = v * 10 + (**p - '0');
        if (v > INT32_MAX)
            return 0;
    }
    *out = (int32_t)v;
    return digits > 0 && (*p == end || **p == ' ');
}

/* One record's text (n bytes, a NUL ends it early) of netlink message
 * type `type`; returns r->kind (LL_RECORD_NONE for anything else). */
static inline enum ll_record_kind ll_record_parse(unsigned type, const char *s, size_t n, struct ll_record *r)
{
    const char *p = s, *end = s;
    while ((size_t)(end - s) < n && *end)
        end++;
    r->kind = LL_RECORD_NONE;
    r->pid = 0;
    r->what = 0;
    r->what_len = 0;
    if ((type != AC_AUDIT_LANDLOCK_ACCESS && type != AC_AUDIT_LANDLOCK_DOMAIN) || !ll_take(&p, end, "audit("))
        return LL_RECORD_NONE;
    while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == ':'))
        p++;
    if (!ll_take(&p, end, "): domain=") || !ll_hex(&p, end, &r->domain) || r->domain == 0)
        return LL_RECORD_NONE;
    if (type == AC_AUDIT_LANDLOCK_ACCESS) {
        if (!ll_take(&p, end, " blockers=") || p == end)
            return LL_RECORD_NONE;
        r->what = p;
        r->what_len = (size_t)(end - p);
        return r->kind = LL_RECORD_ACCESS;
    }
    if (ll_take(&p, end, " status=deallocated"))
        return r->kind = LL_RECORD_DEALLOCATED;
    if (!ll_take(&p, end, " status=allocated "))
        return LL_RECORD_NONE;
    /* the first " pid=": the quoted or hex values after it hold no blank */
    while (p < end && !ll_take(&p, end, " pid="))
        p++;
    if (!ll_dec(&p, end, &r->pid) || r->pid <= 0)
        return LL_RECORD_NONE;
    return r->kind = LL_RECORD_ALLOCATED;
}

/* A refusal's text for the denials ring: at most size - 1 bytes of what,
 * anything outside printable ASCII as '?', NUL-terminated. */
static inline void ll_record_text(const struct ll_record *r, char *out, size_t size)
{
    size_t i = 0;
    for (; i < r->what_len && i + 1 < size; i++) {
        char c = r->what[i];
        out[i] = c >= 0x20 && c <= 0x7e ? c : '?';
    }
    out[i] = '\0';
}

#endif
