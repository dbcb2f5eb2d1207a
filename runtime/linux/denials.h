/* A tiered container's denials counter: one file in its state directory
 * (ROOT/ID/denials), made by create, shared through MAP_SHARED by every
 * process that refuses something the container asked for:
 *   - the watchdog (runtime/watchdog/watchdog.c), which answers the tier
 *     seccomp filter's notifications with EPERM;
 *   - the egress proxy's writer (hooks/egress_main.c), for the proxy's
 *     refusals; the runtime hands it the file's path in its hook's
 *     environment ($AGENTCAGE_DENIALS);
 *   - the watchdog again for Landlock's refusals, which the kernel reports
 *     to its audit subsystem only (the watchdog reads them there).
 * Whoever makes the count reach the limit (io.agentcage.max-denials) kills
 * the container, once (killed_by is set by compare-and-swap); delete reads
 * the file for the container's exit record and the last denials.
 *
 * The second page holds the bytes through the egress proxy, written by the
 * proxy's unprivileged worker, which maps that page alone: it cannot touch
 * the count.
 *
 * Plain types and compiler builtins only: the watchdog has no libc. */
#ifndef AGENTCAGE_DENIALS_H
#define AGENTCAGE_DENIALS_H

#include <stdint.h>

#define DENIALS_FILE "denials"
#define DENIALS_MAGIC 0x32444341u /* "ACD2": by_source grew with Landlock */
#define DENIALS_PAGE 4096
#define DENIALS_SIZE (2 * DENIALS_PAGE)
#define DENIALS_RING 8
#define DENIALS_TEXT 112

enum denial_source {
    DENIAL_SECCOMP = 1, /* a syscall the tier's filter refuses */
    DENIAL_EGRESS = 2,  /* a request the egress proxy refuses */
    DENIAL_LANDLOCK = 3, /* a file access (or TCP port) the tier's Landlock refuses */
    DENIAL_SOURCES = 4,
};

struct denial {
    uint64_t seq;     /* the count this denial made (0: an empty slot) */
    uint64_t time_ms; /* CLOCK_REALTIME */
    uint32_t source;  /* enum denial_source */
    int32_t pid;      /* the process (seccomp; in the watchdog's pid namespace; 0: not known) */
    int32_t nr;       /* the syscall number (seccomp) */
    uint32_t arch;    /* its AUDIT_ARCH_* */
    char text[DENIALS_TEXT]; /* the proxy's "host:port: reason", Landlock's "blockers object"
                                (NUL-terminated) */
};

struct denials_counter {
    uint32_t magic;
    uint32_t limit;     /* kill at this count; 0: never */
    uint32_t killed_by; /* 0, or the enum denial_source whose denial reached the limit */
    uint32_t unused;
    uint64_t count;
    uint64_t by_source[DENIAL_SOURCES];
    struct denial last[DENIALS_RING]; /* the last ones, by seq */
};

struct denials_bytes {
    uint64_t out; /* container -> upstream, through the egress proxy */
    uint64_t in;  /* upstream -> container */
};

_Static_assert(sizeof(struct denials_counter) <= DENIALS_PAGE, "the counter fits its page");

/* Count one denial; its slot in the ring gets what the caller fills in
 * through *slot (may be NULL). Returns 1 when this denial reached the limit
 * and the caller is the one to kill (killed_by was 0), else 0. */
static inline int denials_add(struct denials_counter *c, uint32_t source, uint64_t now_ms, struct denial **slot)
{
    uint64_t n = __atomic_add_fetch(&c->count, 1, __ATOMIC_SEQ_CST);
    if (source < DENIAL_SOURCES)
        __atomic_add_fetch(&c->by_source[source], 1, __ATOMIC_RELAXED);
    struct denial *d = &c->last[(n - 1) % DENIALS_RING];
    d->time_ms = now_ms;
    d->source = source;
    d->pid = 0;
    d->nr = -1;
    d->arch = 0;
    d->text[0] = '\0';
    __atomic_store_n(&d->seq, n, __ATOMIC_RELEASE);
    if (slot)
        *slot = d;
    uint32_t limit = __atomic_load_n(&c->limit, __ATOMIC_RELAXED);
    uint32_t none = 0;
    return limit && n >= limit &&
           __atomic_compare_exchange_n(&c->killed_by, &none, source, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

#endif
