/* The operator's side of held egress requests (io.agentcage.egress-ask):
 *   pending [--json] [--dir DIR]             what the proxies hold now
 *   approve ID --egress HOST[:PORT] [--for 10m]
 *                                            let the held requests to HOST
 *                                            (on PORT, or any) go; with --for
 *                                            HOST:PORT (no port: 80 and 443)
 *                                            stays allowed that long, held or not
 *   deny ID --egress HOST[:PORT]             refuse them
 * An answer is a file the container's proxy takes (hooks/approvals.h);
 * each decision is audited here (egress-approved, egress-refused), and the
 * request it lets through by the proxy (egress-allow, "via":"approval"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks/approvals.h"
#include "hooks/audit.h"
#include "hooks/egress_parse.h"
#include "hooks/hook_state.h"
#include "hooks/policy_hooks.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

static const char *approvals_dir(const struct global_opts *g)
{
    return g->tier.approvals_dir ? g->tier.approvals_dir : APPROVALS_DEFAULT_DIR;
}

/* How many of the held requests an answer for host (port 0: any) takes. */
static size_t held_for(const struct egress_held *h, size_t n, const char *host, int port)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(h[i].host, host) == 0 && (!port || port == h[i].port);
    return k;
}

int cli_egress_answer(struct global_opts *g, const char *id, const char *target, const char *duration, bool allow,
                      ac_error_t *err)
{
    const char *verb = allow ? "approve" : "deny";
    if (!hook_valid_name(id))
        return ac_error(err, 0, "%s: invalid container id `%s`", verb, id);
    struct egress_answer a = {.allow = allow};
    char *host = NULL;
    const char *why;
    if (egress_parse_host_port(target, 0, &host, &a.port, &why) < 0)
        return ac_error(err, 0, "%s: --egress: `%s` is not HOST[:PORT] (%s)", verb, target, why);
    snprintf(a.host, sizeof(a.host), "%s", host);
    free(host);
    int64_t seconds = 0;
    if (duration && (hook_parse_duration(duration, &seconds) < 0 || seconds <= 0))
        return ac_error(err, 0, "%s: --for: expected a duration like 30s, 10m, 2h, got `%s`", verb, duration);
    if (duration)
        a.until = (int64_t)time(NULL) + seconds;
    struct egress_held *held = NULL;
    size_t n = 0;
    if (approval_egress_list(approvals_dir(g), id, &held, &n, err) < 0)
        return -1;
    size_t taken = held_for(held, n, a.host, a.port);
    free(held);
    if (taken == 0 && !a.until)
        return ac_error(err, 0, "%s: nothing of container %s is held for %s (`agentcage pending` lists what is)%s",
                        verb, id, target, allow ? "; --for DURATION allows it ahead" : "");
    if (approval_egress_answer(approvals_dir(g), id, &a, err) < 0)
        return -1;
    char port_s[16], until_s[24], held_s[24];
    snprintf(port_s, sizeof(port_s), "%d", a.port);
    snprintf(until_s, sizeof(until_s), "%lld", (long long)a.until);
    snprintf(held_s, sizeof(held_s), "%zu", taken);
    if (audit_record(g->tier.audit_log, allow ? "egress-approved" : "egress-refused", id, err, "host", a.host, "=port",
                     port_s, "=held", held_s, "=until", until_s, NULL) < 0)
        return -1;
    if (allow && a.until)
        printf("approved %s for container %s for %s (%zu held request%s let through)\n", target, id, duration, taken,
               taken == 1 ? "" : "s");
    else
        printf("%s %zu held request%s of container %s to %s\n", allow ? "approved" : "denied", taken,
               taken == 1 ? "" : "s", id, target);
    return 0;
}

COMMAND(deny)
{
    static const struct option opts[] = {
        {"egress", required_argument, NULL, 'e'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *usage = "usage: agentcage deny ID --egress HOST[:PORT]";
    const char *target = NULL;
    int c;
    while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'e': target = optarg; break;
        case 'h':
            printf("%s\n\nRefuses the requests container ID's egress proxy holds for HOST (on PORT, or any\n"
                   "port): they get 403 and count as denials. See `agentcage pending`.\n",
                   usage);
            return 0;
        default: return ac_error(err, 0, "%s", usage);
        }
    }
    if (!target || optind != argc - 1)
        return ac_error(err, 0, "%s", usage);
    return cli_egress_answer(g, argv[optind], target, NULL, false, err);
}

COMMAND(pending)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"dir", required_argument, NULL, 'd'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *usage = "usage: agentcage pending [--json] [--dir DIR]";
    bool json = false;
    int c;
    while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'd': g->tier.approvals_dir = optarg; break;
        case 'h':
            printf("%s\n\nThe requests egress proxies hold for the operator (containers with\n"
                   "io.agentcage.egress-ask: true): container, host, port, method and since when.\n"
                   "Answer with `agentcage approve ID --egress HOST[:PORT]` or `agentcage deny ID --egress ...`.\n",
                   usage);
            return 0;
        default: return ac_error(err, 0, "%s", usage);
        }
    }
    if (optind != argc)
        return ac_error(err, 0, "%s", usage);
    struct egress_held *h = NULL;
    size_t n = 0;
    if (approval_egress_list(approvals_dir(g), NULL, &h, &n, err) < 0)
        return -1;
    time_t now = time(NULL);
    if (json)
        printf("[");
    else if (n)
        printf("%-32s %-40s %-5s %-8s %s\n", "CONTAINER", "HOST", "PORT", "METHOD", "HELD");
    for (size_t i = 0; i < n; i++) {
        char since[32];
        time_t t = (time_t)h[i].since;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (json) {
            cleanup_free char *jc = audit_json_string(h[i].container), *jh = audit_json_string(h[i].host),
                              *jm = audit_json_string(h[i].method);
            printf("%s{\"container\":%s,\"host\":%s,\"port\":%d,\"method\":%s,\"since\":\"%s\",\"request\":%u}",
                   i ? "," : "", jc, jh, h[i].port, jm, since, h[i].ask);
        } else {
            printf("%-32s %-40s %-5d %-8s %s (%llds ago)\n", h[i].container, h[i].host, h[i].port, h[i].method, since,
                   (long long)(now - h[i].since));
        }
    }
    if (json)
        printf("]\n");
    else if (n == 0)
        printf("nothing held\n");
    free(h);
    return 0;
}
