/* libFuzzer harness: the records the egress proxy's unprivileged worker
 * sends its privileged audit writer, which egress_record_parse checks
 * before anything is written. What it accepts must be what the writer may
 * trust: an event it knows, numbers in decimal, values within bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/egress_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct egress_record rec;
    const char *why;
    if (egress_record_parse((const char *)data, size, &rec, &why) == 0) {
        if (rec.n > EGRESS_RECORD_PAIRS || strncmp(rec.event, "egress-", 7) != 0)
            abort();
        for (size_t i = 0; i < rec.n; i++) {
            if (rec.key[i][0] == '=' && strspn(rec.value[i], "0123456789") != strlen(rec.value[i]))
                abort();
            if (strlen(rec.value[i]) > EGRESS_RECORD_VALUE_MAX)
                abort();
        }
        /* encoding what was parsed gives the same message back */
        const char *kv[2 * EGRESS_RECORD_PAIRS + 1];
        for (size_t i = 0; i < rec.n; i++) {
            kv[2 * i] = rec.key[i];
            kv[2 * i + 1] = rec.value[i];
        }
        kv[2 * rec.n] = NULL;
        char buf[EGRESS_RECORD_MAX];
        size_t n = egress_record_encode(buf, sizeof(buf), rec.event, kv);
        if (n != size || memcmp(buf, data, size) != 0)
            abort();
    }
    return 0;
}
