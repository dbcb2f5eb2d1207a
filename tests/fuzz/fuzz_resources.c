/* libFuzzer harness: `update --resources FILE` text -> spec_parse_resources. */
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct oci_spec *spec = NULL;
    ac_error_t err = NULL;
    if (spec_parse_resources((const char *)data, size, "resources.json", &spec, &err) == 0)
        spec_free(spec);
    ac_error_free(&err);
    return 0;
}
