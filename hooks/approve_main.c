/* agentcage-approve: the approval gate of tier 3, a createRuntime hook.
 *
 * create succeeds only when the operator's approvals directory holds a
 * grant named after the container id (or the request id carried in the
 * annotation io.agentcage.request-id) whose expiry lies in the future.
 * `agentcage approve ID [--for 10m]` writes one. A grant is not consumed:
 * a retried create within its lifetime may use it again. Every decision is
 * audited. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/utils.h"
#include "approvals.h"
#include "audit.h"
#include "hook_state.h"
#include "policy_hooks.h"

#define PROG "agentcage-approve"

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " [--approvals-dir DIR] [--audit-log FILE] < state.json   (OCI createRuntime hook)\n\n"
               "Succeeds only when DIR (default " APPROVALS_DEFAULT_DIR ") holds an unexpired grant named after\n"
               "the container id, or after the annotation io.agentcage.request-id when set.\n"
               "Grant one with: agentcage approve ID [--for 10m]\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"approvals-dir", required_argument, NULL, 'd'},
        {"audit-log", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = APPROVALS_DEFAULT_DIR, *log = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'l': log = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument `%s` (see --help)\n", argv[optind]);
        return 2;
    }
    cleanup_error ac_error_t err = NULL;
    struct hook_state st;
    if (hook_state_read(0, &st, &err) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        fprintf(stderr, PROG ": %s\n", msg);
        return 1;
    }
    const char *name = hook_state_annotation(&st, "io.agentcage.request-id");
    if (!name)
        name = st.id;
    cleanup_free char *reason = NULL;
    int64_t expires = 0;
    int r = approval_check(dir, name, time(NULL), &expires, &reason, &err);
    if (r < 0) {
        cleanup_free char *msg = ac_error_string(err);
        reason = xasprintf("cannot read approval: %s", msg);
    }
    char exp_s[32];
    snprintf(exp_s, sizeof(exp_s), "%lld", (long long)expires);
    if (r == 1) {
        ac_error_t aerr = NULL;
        if (audit_record(log, "approval-used", st.id, &aerr, "grant", name, "=expires", exp_s, NULL) < 0) {
            /* an approval whose use cannot be recorded is no approval */
            cleanup_free char *msg = ac_error_string(aerr);
            ac_error_free(&aerr);
            fprintf(stderr, PROG ": container %s: %s\n", st.id, msg);
            hook_state_free(&st);
            return 1;
        }
        hook_state_free(&st);
        return 0;
    }
    ac_error_t aerr = NULL;
    audit_record(log, "refused", st.id, &aerr, "by", "approval-gate", "grant", name, "reason", reason, NULL);
    ac_error_free(&aerr);
    if (strcmp(reason, "no approval") == 0)
        fprintf(stderr, "no approval for container %s (run: agentcage approve %s)\n", st.id, name);
    else
        fprintf(stderr, "no valid approval for container %s: %s (run: agentcage approve %s)\n", st.id, reason, name);
    hook_state_free(&st);
    return 1;
}
