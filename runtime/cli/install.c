/* install [--check] docker|podman|containerd [options]: register this
 * binary as an OCI runtime with a container engine, or ask the engine
 * whether it sees it. The work is the helper agentcage-install-engine
 * (scripts/install-engine.sh, installed with the other helpers): it edits
 * the engines' own config formats with their own tools (jq, TOML
 * snippets). This verb runs it with --binary set to this very binary, so
 * an engine registered from an installed agentcage runs that one. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cli/commands.h"
#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"

COMMAND(install)
{
    cleanup_free char *script = helper_path(g->tier.helpers_dir, "agentcage-install-engine");
    if (access(script, X_OK) != 0)
        return ac_error(err, errno, "install: the helper `%s` (see --helpers-dir)", script);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return ac_error(err, errno, "install: readlink /proc/self/exe");
    self[n] = '\0';
    /* --binary right after the engine (the script's first option), so a
     * --binary the caller gives comes later and wins */
    int engine = argc > 1 && strcmp(argv[1], "--check") == 0 ? 2 : 1;
    char **args = xcalloc((size_t)argc + 3, sizeof(char *));
    size_t k = 0;
    args[k++] = script;
    for (int i = 1; i < argc; i++) {
        args[k++] = argv[i];
        if (i == engine) {
            args[k++] = "--binary";
            args[k++] = self;
        }
    }
    args[k] = NULL;
    setenv("AGENTCAGE_INSTALL_PROG", "agentcage install", 1);
    fflush(stdout);
    execv(script, args);
    int e = errno;
    free(args);
    return ac_error(err, e, "install: run `%s`", script);
}
