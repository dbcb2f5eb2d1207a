/* libFuzzer harness: Landlock's audit records as the watchdog parses them
 * (runtime/watchdog/landlock_records.h). The first byte picks the record
 * type (even: a refusal, odd: a domain record), the rest is the kernel's
 * text, parts of which (paths, names) a container shapes. What the parser
 * reports must lie within the input, and the copied text must be bounded,
 * printable and NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/watchdog/landlock_records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned type = data[0] & 1 ? AC_AUDIT_LANDLOCK_DOMAIN : AC_AUDIT_LANDLOCK_ACCESS;
    /* a copy of exactly the text's size, so reading past it is caught */
    size_t n = size - 1;
    char *text = malloc(n ? n : 1);
    memcpy(text, data + 1, n);
    struct ll_record r;
    enum ll_record_kind kind = ll_record_parse(type, text, n, &r);
    if (kind != LL_RECORD_NONE && r.domain == 0)
        abort();
    if (kind == LL_RECORD_ALLOCATED && r.pid <= 0)
        abort();
    if (kind == LL_RECORD_ACCESS) {
        if (type != AC_AUDIT_LANDLOCK_ACCESS || r.what < text || r.what_len == 0 || r.what + r.what_len > text + n)
            abort();
        char out[112];
        ll_record_text(&r, out, sizeof(out));
        size_t len = strlen(out);
        if (len >= sizeof(out) || len > r.what_len)
            abort();
        for (size_t i = 0; i < len; i++)
            if (out[i] < 0x20 || out[i] > 0x7e)
                abort();
    } else if (kind != LL_RECORD_NONE && type != AC_AUDIT_LANDLOCK_DOMAIN) {
        abort();
    }
    free(text);
    return 0;
}
