/* Finding the helper programs (helpers.h). */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"

#ifndef AGENTCAGE_HELPERS_DIR
#define AGENTCAGE_HELPERS_DIR "/usr/local/libexec/agentcage"
#endif

const char *helpers_compiled_dir(void)
{
    return AGENTCAGE_HELPERS_DIR;
}

/* The running binary's directory, when its helpers are beside it. */
static char *beside_binary(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL || slash == exe)
        return NULL;
    *slash = '\0';
    cleanup_free char *watchdog = xasprintf("%s/agentcage-watchdog", exe);
    return access(watchdog, X_OK) == 0 ? xstrdup(exe) : NULL;
}

const char *helpers_default_dir(void)
{
    static char *dir; /* for the process's life */
    if (dir == NULL) {
        dir = beside_binary();
        if (dir == NULL)
            dir = xstrdup(AGENTCAGE_HELPERS_DIR);
    }
    return dir;
}

char *helper_path(const char *dir, const char *name)
{
    return xasprintf("%s/%s", dir ? dir : helpers_default_dir(), name);
}
