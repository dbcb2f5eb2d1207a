/* libFuzzer harness: the egress proxy's request head, as the worker reads
 * it from a container: where the head ends (egress_head_end), the request
 * line and headers (egress_request_parse), then what the proxy does next
 * with them: a CONNECT target through egress_parse_host_port, any other
 * target through egress_parse_http_url, its Host header, its body's
 * framing and the rebuilt head sent upstream.
 * The input is the head's bytes, cut to the proxy's 16 KiB. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/egress_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > EGRESS_HEAD_MAX)
        size = EGRESS_HEAD_MAX;
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    long end = egress_head_end(buf, size);
    struct egress_request req;
    const char *why;
    if (end > 0 && egress_request_parse(buf, (size_t)end, &req, &why) == 0) {
        char *host = NULL, *path = NULL;
        int port;
        if (strcmp(req.method, "CONNECT") == 0) {
            if (egress_parse_host_port(req.target, 0, &host, &port, &why) == 0)
                free(host);
        } else if (egress_parse_http_url(req.target, &host, &port, &path, &why) == 0) {
            size_t len;
            struct egress_framing f;
            char *h2 = NULL;
            int p2;
            bool close = egress_request_framing(&req, &f, &why) == 0 ? f.close : true;
            if (egress_request_host(&req, &h2, &p2, &why) == 0)
                free(h2);
            char *out = egress_request_rebuild(&req, host, port, path, close, &len);
            /* the head sent upstream is one head: it ends once, at its end */
            if (len < 4 || memcmp(out + len - 4, "\r\n\r\n", 4) != 0 || egress_head_end(out, len) != (long)len)
                abort();
            free(out);
            free(host);
            free(path);
        }
    }
    free(buf);
    return 0;
}
