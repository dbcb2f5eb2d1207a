/* libFuzzer harness: the hook state reader. Every agentcage policy hook
 * (hooks/) reads the runtime-spec state on stdin with hook_state_read; the
 * input is handed to it through a memfd as the hook's stdin would be. On
 * success the accessors a hook uses next run on what it read: annotation
 * lookups and the duration/size parsers for their values. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "hooks/hook_state.h"

static int memfd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memfd < 0 && (memfd = memfd_create("state", MFD_CLOEXEC)) < 0)
        abort();
    if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) != (ssize_t)size || lseek(memfd, 0, SEEK_SET) < 0)
        abort();

    struct hook_state st;
    ac_error_t err = NULL;
    if (hook_state_read(memfd, &st, &err) == 0) {
        for (size_t i = 0; st.annotations && i < st.annotations->u.object.len; i++) {
            const char *v = hook_state_annotation(&st, st.annotations->u.object.keys[i]);
            if (v == NULL)
                continue;
            int64_t seconds;
            uint64_t bytes;
            (void)hook_parse_duration(v, &seconds);
            (void)hook_parse_size(v, &bytes);
            (void)hook_valid_name(v);
        }
        (void)hook_state_annotation(&st, "io.agentcage.tier");
    }
    hook_state_free(&st);
    ac_error_free(&err);
    return 0;
}
