/* A tiered container's end in the audit trail, written by delete from
 * what the container left behind:
 *   - the watchdog's markers in the state dir: `exit` (its wall time and,
 *     once the engine's shim had reaped the init, its exit status) and
 *     `timeout` (it killed the container at the wall-clock limit);
 *   - the denials counter (denials.c): how many syscalls, file accesses
 *     (Landlock) and egress requests were refused, whether that killed the container and the last
 *     of them, and the bytes through the egress proxy;
 *   - the cgroup, before it goes: OOM kills and peak memory.
 * Records: `timeout-kill`, `denial-kill` (when the watchdog killed; the
 * proxy audits its own), then always `container-exited`. */
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "hooks/audit.h"
#include "runtime/cgroup/cgroup.h"
#include "runtime/container/container.h"
#include "runtime/linux/denials.h"
#include "runtime/util/utils.h"

/* A marker's JSON object without its braces ("a":1,"b":2), or NULL. */
static char *marker_members(const char *dir, const char *name)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, name);
    char *text = NULL;
    size_t len = 0;
    ac_error_t e = NULL;
    if (read_all_file(path, &text, &len, &e) < 0) {
        ac_error_free(&e);
        return NULL;
    }
    while (len && (text[len - 1] == '\n' || text[len - 1] == '}'))
        text[--len] = '\0';
    /* written by the watchdog: digits, quotes, colons and commas only */
    if (text[0] != '{' || strspn(text + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\":,.-TZ") !=
                              len - 1) {
        free(text);
        return NULL;
    }
    memmove(text, text + 1, len);
    return text;
}

/* A number from a marker's members ("key":N), or -1. */
static long long marker_number(const char *members, const char *key)
{
    cleanup_free char *pat = xasprintf("\"%s\":", key);
    const char *p = members ? strstr(members, pat) : NULL;
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static const char *source_name(uint32_t source)
{
    return source == DENIAL_SECCOMP    ? "seccomp"
           : source == DENIAL_EGRESS   ? "egress"
           : source == DENIAL_LANDLOCK ? "landlock"
                                       : "?";
}

/* The last denials, oldest first, as a JSON array. */
static char *last_denials_json(const struct denials_counter *c)
{
    char *out = xstrdup("[");
    uint64_t last = c->count, first = last > DENIALS_RING ? last - DENIALS_RING + 1 : 1;
    for (uint64_t seq = first; seq <= last && seq; seq++) {
        const struct denial *d = &c->last[(seq - 1) % DENIALS_RING];
        if (d->seq != seq)
            continue; /* overwritten meanwhile */
        cleanup_free char *what = NULL;
        if (d->source == DENIAL_SECCOMP) {
            char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, d->nr);
            cleanup_free char *jname = audit_json_string(name ? name : "?");
            free(name);
            what = xasprintf("\"syscall\":%s,\"nr\":%d,\"pid\":%d", jname, d->nr, d->pid);
        } else if (d->source == DENIAL_LANDLOCK) {
            /* the kernel's "RIGHT[,RIGHT] OBJECT": fs.make_reg path="/etc" dev="vda" ino=12 */
            size_t n = strcspn(d->text, " ");
            cleanup_free char *rights = strndup(d->text, n);
            cleanup_free char *jrights = audit_json_string(rights);
            cleanup_free char *jobject = audit_json_string(d->text[n] ? d->text + n + 1 : "");
            what = xasprintf("\"blockers\":%s,\"object\":%s", jrights, jobject);
        } else {
            cleanup_free char *jtext = audit_json_string(d->text);
            what = xasprintf("\"request\":%s", jtext);
        }
        char *grown = xasprintf("%s%s{\"seq\":%llu,\"timeMs\":%llu,\"source\":\"%s\",%s}", out,
                                out[1] ? "," : "", (unsigned long long)seq, (unsigned long long)d->time_ms,
                                source_name(d->source), what);
        free(out);
        out = grown;
    }
    char *done = xasprintf("%s]", out);
    free(out);
    return done;
}

/* How it ended, from the exit status (W, -1 unknown) and the causes. */
static const char *cause_of(int w, bool timeout, bool denial_kill, bool by_delete, uint64_t oom_kills)
{
    if (timeout)
        return "timeout-kill";
    if (denial_kill)
        return "denial-kill";
    if (by_delete)
        return "delete-kill";
    if (w >= 0 && WIFSIGNALED(w) && WTERMSIG(w) == SIGKILL && oom_kills)
        return "oom-kill";
    if (w < 0)
        return oom_kills ? "oom-kill" : "unknown";
    return WIFSIGNALED(w) ? "signal" : "exited";
}

void container_audit_end(const struct global_opts *g, const struct container_state *st, bool killed_by_delete,
                         int zombie_status)
{
    cleanup_free char *dir = state_dir_path(g, st->id);
    cleanup_free char *timeout = marker_members(dir, "timeout");
    cleanup_free char *exit_m = marker_members(dir, "exit");
    if (timeout) {
        cleanup_free char *members = xasprintf("\"tier\":%d,%s", st->tier, timeout);
        ac_warn("container `%s` was killed by its tier %d timeout (%lld ms)", st->id, st->tier, st->timeout_ms);
        container_audit(g, "timeout-kill", st->id, members);
    }
    struct denials_counter c;
    struct denials_bytes b;
    bool have_counts = denials_file_read(dir, &c, &b);
    bool denial_kill = have_counts && c.killed_by != 0;
    /* the watchdog's kills (the proxy audits its own) */
    if (have_counts && (c.killed_by == DENIAL_SECCOMP || c.killed_by == DENIAL_LANDLOCK)) {
        cleanup_free char *last = last_denials_json(&c);
        cleanup_free char *members = xasprintf("\"denials\":%llu,\"limit\":%u,\"source\":\"%s\",\"result\":"
                                               "\"killed\",\"last\":%s",
                                               (unsigned long long)c.count, c.limit, source_name(c.killed_by), last);
        ac_warn("container `%s` was killed after %llu denials (io.agentcage.max-denials)", st->id,
                (unsigned long long)c.count);
        container_audit(g, "denial-kill", st->id, members);
    }
    struct cgroup_stats cs = {0};
    bool have_cgroup = false;
    if (st->cgroup_path && st->cgroup_path[0]) {
        ac_error_t e = NULL;
        have_cgroup = cgroup_memory_peak(st->cgroup_path, &cs, &e) == 0;
        ac_error_free(&e);
    }
    long long w = marker_number(exit_m, "exitCode"), wall = marker_number(exit_m, "wallMs");
    if (w < 0)
        w = zombie_status; /* read from /proc before its parent reaped it */
    char status[64];
    if (w < 0)
        snprintf(status, sizeof(status), "\"exitStatus\":null");
    else if (WIFSIGNALED((int)w))
        snprintf(status, sizeof(status), "\"signal\":\"%s\",\"coreDumped\":%s",
                 sigabbrev_np(WTERMSIG((int)w)) ? sigabbrev_np(WTERMSIG((int)w)) : "?",
                 WCOREDUMP((int)w) ? "true" : "false");
    else
        snprintf(status, sizeof(status), "\"exitStatus\":%d", WEXITSTATUS((int)w));
    cleanup_free char *counts = have_counts ? xasprintf(",\"denials\":%llu,\"seccompDenials\":%llu,"
                                                        "\"egressDenials\":%llu",
                                                        (unsigned long long)c.count,
                                                        (unsigned long long)c.by_source[DENIAL_SECCOMP],
                                                        (unsigned long long)c.by_source[DENIAL_EGRESS])
                                            : xstrdup("");
    /* Landlock's count after the bytes: the fields before it kept their order */
    cleanup_free char *bytes =
        !have_counts     ? xstrdup("")
        : st->tier >= 2 ? xasprintf(",\"egressBytesOut\":%llu,\"egressBytesIn\":%llu,\"landlockDenials\":%llu",
                                     (unsigned long long)b.out, (unsigned long long)b.in,
                                     (unsigned long long)c.by_source[DENIAL_LANDLOCK])
                        : xasprintf(",\"landlockDenials\":%llu", (unsigned long long)c.by_source[DENIAL_LANDLOCK]);
    cleanup_free char *memory = have_cgroup ? xasprintf(",\"oomKills\":%llu,\"peakMemoryBytes\":%llu",
                                                        (unsigned long long)cs.oom_kill_count,
                                                        (unsigned long long)cs.memory_max_usage)
                                            : xstrdup("");
    char wall_s[24] = "null";
    if (wall >= 0)
        snprintf(wall_s, sizeof(wall_s), "%lld", wall);
    cleanup_free char *members =
        xasprintf("\"tier\":%d,\"cause\":\"%s\",%s,\"wallMs\":%s%s%s%s,\"killedByDelete\":%s", st->tier,
                  cause_of((int)w, timeout != NULL, denial_kill, killed_by_delete, cs.oom_kill_count), status, wall_s,
                  memory, counts, bytes, killed_by_delete ? "true" : "false");
    container_audit(g, "container-exited", st->id, members);
}
