/* Folder runtime/cli/ (layer 6 of docs/architecture.md): main.c, the flag
 * helpers (cli.c) and one file per verb. A verb parses its flags and calls
 * the container lifecycle (runtime/container/) or, for the read-only
 * verbs, the state and cgroup layers below it; errors go up to main.c,
 * which prints them. Nothing calls into this folder. */
/* approve NAME [--for 10m] [--digest sha256:HEX | --bundle DIR]: grant the
 * tier-3 container NAME (its id, or its io.agentcage.request-id) one
 * create of exactly one effective config, until now + DURATION. Without
 * --digest or --bundle the config is the one the last refused create of
 * NAME asked for (its request). approve --list: the pending requests.
 * approve ID --egress HOST[:PORT] [--for 10m]: the egress requests
 * container ID's proxy holds (egress_answers.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_tree.h>

#include "hooks/approvals.h"
#include "hooks/audit.h"
#include "hooks/hook_state.h"
#include "hooks/policy_hooks.h"
#include "spec/spec.h"
#include "tier-annotations/tier.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

/* The digest create will see for DIR/config.json under these operator
 * settings: the same mapping, the same JSON writer. */
static int bundle_digest(const struct global_opts *g, const char *bundle, char out[APPROVAL_DIGEST_LEN + 1],
                         ac_error_t *err)
{
    cleanup_free char *dir = realpath(bundle, NULL);
    if (dir == NULL)
        return ac_error(err, errno, "approve: --bundle `%s`", bundle);
    cleanup_free char *path = xasprintf("%s/config.json", dir);
    cleanup_free char *text = NULL;
    size_t len = 0;
    if (read_all_file(path, &text, &len, err) < 0)
        return -1;
    yajl_val tree = NULL;
    if (spec_parse_json_tree(text, len, path, &tree, err) < 0)
        return -1;
    struct tier_decisions d = {0};
    int tier = tier_map(tree, dir, &g->tier, &d, err);
    tier_decisions_free(&d);
    if (tier >= 0 && tier_requires_approval(tier))
        tier_approval_digest(tree, out);
    yajl_tree_free(tree);
    if (tier < TIER_NONE)
        return ac_error_wrap(err, "approve: %s", path);
    if (tier < 0 || !tier_requires_approval(tier))
        return ac_error(err, 0, "approve: %s: its tier needs no approval", path);
    return 0;
}

COMMAND(approve)
{
    static const struct option opts[] = {
        {"for", required_argument, NULL, 'f'},   {"dir", required_argument, NULL, 'd'},
        {"digest", required_argument, NULL, 'g'}, {"bundle", required_argument, NULL, 'b'},
        {"list", no_argument, NULL, 'l'},        {"egress", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *usage = "usage: agentcage approve NAME [--for 10m] [--digest sha256:HEX | --bundle DIR] [--dir DIR]\n"
                        "       agentcage approve --list [--dir DIR]\n"
                        "       agentcage approve ID --egress HOST[:PORT] [--for 10m]";
    const char *dir = g->tier.approvals_dir ? g->tier.approvals_dir : APPROVALS_DEFAULT_DIR;
    const char *duration = "10m", *digest_arg = NULL, *bundle = NULL, *egress = NULL;
    bool list = false, for_given = false;
    int c;
    while ((c = cli_getopt(argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'f': duration = optarg; for_given = true; break;
        case 'e': egress = optarg; break;
        case 'd': dir = optarg; break;
        case 'g': digest_arg = optarg; break;
        case 'b': bundle = optarg; break;
        case 'l': list = true; break;
        case 'h':
            printf("%s\n\nGrants the tier-3 container NAME (its id, or its io.agentcage.request-id) one create\n"
                   "of one effective config.json, until it expires. The config is the one the last refused\n"
                   "create of NAME asked for (see --list), or --bundle DIR's config.json mapped as create\n"
                   "maps it, or --digest. The grant is used up by the create it lets through. Grants live in\n"
                   "the approvals directory (default %s).\n\n"
                   "With --egress, lets the requests container ID's egress proxy holds for HOST (on PORT,\n"
                   "or any port) go (see `agentcage pending`); with --for, HOST:PORT (no port: 80 and 443)\n"
                   "stays allowed that long, held or not.\n",
                   usage, APPROVALS_DEFAULT_DIR);
            return 0;
        default: return ac_error(err, 0, "%s", usage);
        }
    }
    if (list)
        return optind == argc ? approval_list_requests(dir, stdout, err) : ac_error(err, 0, "%s", usage);
    if (egress) {
        if (optind != argc - 1 || digest_arg || bundle)
            return ac_error(err, 0, "%s", usage);
        g->tier.approvals_dir = dir;
        return cli_egress_answer(g, argv[optind], egress, for_given ? duration : NULL, true, err);
    }
    if (optind != argc - 1)
        return ac_error(err, 0, "%s", usage);
    if (digest_arg && bundle)
        return ac_error(err, 0, "approve: --digest and --bundle: give one of them");
    const char *name = argv[optind];
    if (!hook_valid_name(name))
        return ac_error(err, 0, "approve: invalid name `%s`", name);
    int64_t seconds;
    if (hook_parse_duration(duration, &seconds) < 0 || seconds <= 0)
        return ac_error(err, 0, "approve: --for: expected a duration like 30s, 10m, 2h, got `%s`", duration);
    char digest[APPROVAL_DIGEST_LEN + 1];
    if (digest_arg)
        snprintf(digest, sizeof(digest), "%s", digest_arg);
    else if (bundle ? bundle_digest(g, bundle, digest, err) < 0 : approval_request_digest(dir, name, digest, err) < 0)
        return -1;
    int64_t expires = (int64_t)time(NULL) + seconds;
    if (approval_grant(dir, name, digest, expires, err) < 0)
        return -1;
    char exp_s[32];
    snprintf(exp_s, sizeof(exp_s), "%lld", (long long)expires);
    if (audit_record(g->tier.audit_log, "approval-granted", name, err, "=expires", exp_s, "policy", digest, "dir", dir,
                     NULL) < 0)
        return -1;
    printf("approved %s for %s, one create of config %s (expires at unix time %lld)\n", name, duration, digest,
           (long long)expires);
    return 0;
}
