/* libFuzzer harness: the TLS records a container sends after CONNECT, as
 * egress_client_hello reassembles and reads them (up to the bytes the
 * proxy would buffer), and as egress_tls_next walks the whole tunnel. A
 * name it returns must be a host name the allowlist parser takes, and no
 * prefix of an input may be judged differently from "more, please" or the
 * whole input's answer once it is complete. The walk takes what it is
 * given, never more, and never passes bytes without a hello first. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/egress_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > EGRESS_HELLO_WIRE_MAX)
        size = EGRESS_HELLO_WIRE_MAX;
    char sni[256];
    enum egress_hello h = egress_client_hello(data, size, sni, sizeof(sni));
    if (h == EGRESS_HELLO_SNI) {
        char *host = NULL;
        int port;
        const char *why;
        if (egress_parse_host_port(sni, 0, &host, &port, &why) != 0 || strcmp(host, sni) != 0)
            abort();
        free(host);
    }
    /* a shorter read never gives a final answer the whole one contradicts */
    if (size > 0) {
        enum egress_hello part = egress_client_hello(data, size / 2, sni, sizeof(sni));
        if (part != EGRESS_HELLO_NEED_MORE && part != h)
            abort();
    }
    struct egress_tls_stream s = {0};
    size_t off = 0;
    bool hello = false;
    while (off < size) {
        size_t take = 0;
        enum egress_tls_next r = egress_tls_next(&s, data + off, size - off, &take, sni, sizeof(sni));
        if (r == EGRESS_TLS_BAD || r == EGRESS_TLS_NEED_MORE)
            break;
        if (take == 0 || take > size - off || (r == EGRESS_TLS_PASS && !hello))
            abort();
        if (r == EGRESS_TLS_HELLO) {
            hello = true;
            if (sni[0] && egress_client_hello(data + off, take, sni, sizeof(sni)) != EGRESS_HELLO_SNI)
                abort();
        }
        off += take;
    }
    return 0;
}
