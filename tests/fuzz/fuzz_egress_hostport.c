/* libFuzzer harness: host:port splitting, as for a CONNECT authority, a
 * URL's authority and an allowlist entry (the first input byte picks
 * wildcards on or off, the rest is the text, up to a NUL). An accepted
 * host must parse again to itself, and match itself in an allowlist. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/egress_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int flags = data[0] & 1 ? EGRESS_HOST_WILDCARD : 0;
    char *text = strndup((const char *)data + 1, size - 1);
    char *host = NULL;
    int port;
    const char *why;
    if (egress_parse_host_port(text, flags, &host, &port, &why) == 0) {
        if (port < 0 || port > 65535 || strlen(host) > EGRESS_HOST_MAX)
            abort();
        /* the canonical form is a fixed point (IPv6 goes back in brackets) */
        char *again = NULL, *canon = malloc(strlen(host) + 3);
        strcpy(canon, strchr(host, ':') ? "[" : "");
        strcat(canon, host);
        strcat(canon, strchr(host, ':') ? "]" : "");
        int port2;
        if (egress_parse_host_port(canon, flags, &again, &port2, &why) != 0 || strcmp(again, host) != 0 || port2 != 0)
            abort();
        free(again);
        free(canon);
        if (!flags && host[0] != '*') {
            struct egress_rule rule = {.host = host, .port = port};
            struct egress_allowlist list = {.rules = &rule, .n = 1};
            if (egress_allowlist_check(&list, host, port ? port : 443) != NULL)
                abort();
        }
        free(host);
    }
    free(text);
    return 0;
}
