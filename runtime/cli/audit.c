/* audit verify FILE: recompute the audit trail's hash chain. */
#include <stdio.h>
#include <string.h>

#include "hooks/audit.h"
#include "runtime/cli/commands.h"

COMMAND(audit)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: agentcage audit verify FILE\n\n"
               "Recomputes the hash chain of an audit log (default " AUDIT_DEFAULT_LOG ") and names the\n"
               "first line where it breaks: a removed, reordered or edited record.\n");
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "verify") != 0)
        return ac_error(err, 0, "usage: agentcage audit verify FILE");
    char last[SHA256_HEX_LEN + 1];
    long n = audit_verify(argv[2], last, err);
    if (n < 0)
        return -1;
    printf("%ld records, chain intact (last hash %s)\n", n, last);
    return 0;
}
