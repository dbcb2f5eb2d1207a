/* libFuzzer harness: what flows after a request or response head: a
 * chunked body (egress_chunked_feed, strict for requests, lenient for
 * responses) and a server's response head (egress_response_head_end,
 * egress_response_parse). The first byte picks which and how the input is
 * cut into reads. The decoder must take the same bytes however the input
 * is cut, never more than it is given, and never go on after refusing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/egress_parse.h"

/* the bytes the decoder takes, fed step at a time; -1 when it refused */
static long feed(const char *data, size_t size, bool strict, size_t step)
{
    struct egress_chunked c;
    egress_chunked_init(&c, strict);
    size_t taken = 0;
    while (taken < size && !egress_chunked_done(&c)) {
        size_t n = size - taken < step ? size - taken : step;
        long t = egress_chunked_feed(&c, data + taken, n);
        if (t < 0)
            return egress_chunked_feed(&c, data, size) == -1 ? -1 : (abort(), -1);
        if ((size_t)t > n || ((size_t)t < n && !egress_chunked_done(&c)))
            abort();
        taken += (size_t)t;
    }
    return egress_chunked_done(&c) ? (long)taken : -2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned mode = data[0];
    const char *body = (const char *)data + 1;
    size--;
    if (mode & 0x80) {
        long end = egress_response_head_end(body, size > EGRESS_RESPONSE_HEAD_MAX ? EGRESS_RESPONSE_HEAD_MAX : size);
        struct egress_response r;
        const char *why;
        if (end < 0 || (size_t)end > size)
            abort();
        if (end > 0 && egress_response_parse(body, (size_t)end, (mode & 1) ? "HEAD" : "GET", &r, &why) == 0 &&
            (r.status < 0 || r.status > 999 || (r.framing.kind == EGRESS_BODY_CLOSE && !r.framing.close)))
            abort();
        return 0;
    }
    bool strict = mode & 1;
    long whole = feed(body, size, strict, size);
    long bytewise = feed(body, size, strict, 1);
    long cut = feed(body, size, strict, (mode >> 1) % 31 + 2);
    if (whole != bytewise || whole != cut)
        abort();
    return 0;
}
