/* approve ID [--for DURATION] [--dir DIR]: grant a tier-3 container (or a
 * request id) the right to be created until now + DURATION (default 10m). */
#include <getopt.h>
#include <stdio.h>
#include <time.h>

#include "../hooks/approvals.h"
#include "../hooks/audit.h"
#include "../hooks/hook_state.h"
#include "../hooks/policy_hooks.h"
#include "commands.h"

COMMAND(approve)
{
    static const struct option opts[] = {
        {"for", required_argument, NULL, 'f'},
        {"dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *usage = "usage: agentcage approve ID [--for 10m] [--dir DIR]";
    const char *dir = g->tier.approvals_dir ? g->tier.approvals_dir : APPROVALS_DEFAULT_DIR;
    const char *duration = "10m";
    int c;
    while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'f': duration = optarg; break;
        case 'd': dir = optarg; break;
        case 'h':
            printf("%s\n\nWrites a grant (0600, atomically) into the approvals directory (default %s)\n"
                   "that lets `create` of the tier-3 container ID (or the request id in its\n"
                   "io.agentcage.request-id annotation) pass the approval gate until it expires.\n"
                   "A grant is not used up: a retry within its lifetime passes too.\n",
                   usage, APPROVALS_DEFAULT_DIR);
            return 0;
        default: return ac_error(err, 0, "%s", usage);
        }
    }
    if (optind != argc - 1)
        return ac_error(err, 0, "%s", usage);
    const char *id = argv[optind];
    int64_t seconds;
    if (hook_parse_duration(duration, &seconds) < 0 || seconds <= 0)
        return ac_error(err, 0, "approve: --for: expected a duration like 30s, 10m, 2h, got `%s`", duration);
    int64_t expires = (int64_t)time(NULL) + seconds;
    if (approval_grant(dir, id, expires, err) < 0)
        return -1;
    char exp_s[32];
    snprintf(exp_s, sizeof(exp_s), "%lld", (long long)expires);
    if (audit_record(g->tier.audit_log, "approval-granted", id, err, "=expires", exp_s, "dir", dir, NULL) < 0)
        return -1;
    printf("approved %s for %s (expires at unix time %lld)\n", id, duration, (long long)expires);
    return 0;
}
