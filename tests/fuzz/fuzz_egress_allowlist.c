/* libFuzzer harness: the allowlist (io.agentcage.egress) and its wildcard
 * matching. The input is the list, a newline, then host:port lines to
 * check against it, each first through the request's host parser as the
 * proxy does; a list starting with '!' takes "**." (the operator's deep
 * wildcards). A host that matches must match an entry by the rule: the
 * same name, a name one label under a "*." suffix, or any name under a
 * "**." suffix. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/egress_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *)data, size);
    char *nl = strchr(text, '\n');
    char *hosts = nl ? nl + 1 : NULL;
    if (nl)
        *nl = '\0';
    struct egress_allowlist list = {0};
    ac_error_t err = NULL;
    int flags = text[0] == '!' ? EGRESS_HOST_DEEP_WILDCARD : 0;
    if (egress_allowlist_parse(text + (flags != 0), flags, &list, &err) < 0) {
        ac_error_free(&err);
        free(text);
        return 0;
    }
    char *save = NULL;
    for (char *line = hosts ? strtok_r(hosts, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        char *host;
        int port;
        const char *why;
        if (egress_parse_host_port(line, 0, &host, &port, &why) < 0)
            continue;
        if (port == 0)
            port = 443;
        if (egress_allowlist_check(&list, host, port) == NULL) {
            bool justified = false;
            size_t hl = strlen(host);
            for (size_t i = 0; i < list.n; i++) {
                const struct egress_rule *r = &list.rules[i];
                size_t sl = strlen(r->host);
                bool under = hl > sl && strcmp(host + hl - sl, r->host) == 0 && !egress_is_ip_literal(host);
                bool name = r->depth == 0 ? strcmp(host, r->host) == 0
                            : r->depth < 0 ? under
                                           : under && memchr(host, '.', hl - sl) == NULL;
                justified |= name && (r->port ? r->port == port : port == 80 || port == 443);
            }
            if (!justified)
                abort();
        }
        free(host);
    }
    egress_allowlist_free(&list);
    free(text);
    return 0;
}
