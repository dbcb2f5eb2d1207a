/* libFuzzer harness: `exec --process FILE` text -> spec_parse_process. */
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct oci_spec *spec = NULL;
    ac_error_t err = NULL;
    if (spec_parse_process((const char *)data, size, "process.json", &spec, &err) == 0)
        spec_free(spec);
    ac_error_free(&err);
    return 0;
}
