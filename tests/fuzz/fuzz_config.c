/* libFuzzer harness: config.json text -> spec_parse -> spec_free.
 * Arbitrary bytes must give either a spec or an error, never a crash, a
 * leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct oci_spec *spec = NULL;
    ac_error_t err = NULL;
    if (spec_parse((const char *)data, size, "config.json", &spec, &err) == 0) {
        /* Touch the lookups the runtime does first on every spec. */
        (void)spec_annotation(spec, "io.agentcage.tier");
        (void)spec_namespace(spec, 0);
        spec_free(spec);
    }
    ac_error_free(&err);
    return 0;
}
