/* agentcage-audit: the audit trail for any runtime.
 *
 *   agentcage-audit --event NAME [--audit-log FILE] < state.json
 *       an OCI hook (e.g. poststart "container-started", poststop
 *       "container-exited") that appends one record with the state's id,
 *       status, pid and bundle; for runc or crun, which write no records.
 *   agentcage-audit verify FILE
 *       the same check as `agentcage audit verify`. */
#include <getopt.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "hooks/audit.h"
#include "hooks/hook_state.h"

#define PROG "agentcage-audit"

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " --event NAME [--audit-log FILE] < state.json   (OCI hook)\n"
               "       " PROG " verify FILE\n\n"
               "Appends one hash-chained record (default log " AUDIT_DEFAULT_LOG "), or checks the chain\n"
               "of a log and names the first line where it breaks.\n");
}

static int report(ac_error_t *err)
{
    cleanup_free char *msg = ac_error_string(*err);
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

int main(int argc, char **argv)
{
    cleanup_error ac_error_t err = NULL;
    if (argc >= 2 && strcmp(argv[1], "verify") == 0) {
        if (argc != 3) {
            usage(stderr);
            return 2;
        }
        char last[SHA256_HEX_LEN + 1];
        long n = audit_verify(argv[2], last, &err);
        if (n < 0)
            return report(&err);
        printf("%ld records, chain intact (last hash %s)\n", n, last);
        return 0;
    }
    static const struct option opts[] = {
        {"event", required_argument, NULL, 'e'},
        {"audit-log", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *event = NULL, *log = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'e': event = optarg; break;
        case 'l': log = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!event || optind < argc) {
        fprintf(stderr, PROG ": %s (see --help)\n", event ? "unexpected argument" : "--event NAME is required");
        return 2;
    }
    struct hook_state st;
    if (hook_state_read(0, &st, &err) < 0)
        return report(&err);
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", st.pid);
    int r = audit_record(log, event, st.id, &err, "status", st.status, "=pid", pid, "bundle", st.bundle, NULL);
    hook_state_free(&st);
    return r < 0 ? report(&err) : 0;
}
