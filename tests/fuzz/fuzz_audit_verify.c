/* libFuzzer harness: the audit-log reader of `agentcage audit verify`
 * (audit_verify_stream), on the input as the log's contents. A log it
 * calls intact must be as long as the records it counted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        abort();
    char last[SHA256_HEX_LEN + 1];
    ac_error_t err = NULL;
    long n = audit_verify_stream(f, "fuzz.jsonl", last, &err);
    if (n >= 0) {
        long lines = 0;
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n';
        if (lines != n || strlen(last) != SHA256_HEX_LEN)
            abort();
    }
    ac_error_free(&err);
    fclose(f);
    return 0;
}
