/* libFuzzer harness: the state-file reader. The input becomes
 * ROOT/fuzz/state.json in a private temporary --root, then state_load reads
 * it the way every verb does, and state_oci_json writes the loaded state
 * back out (what `agentcage state` and the hooks get). runtime/container/state.c is
 * used unchanged: the file on disk is the interface. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/container/container.h"

static char root[] = "/tmp/agentcage-fuzz-state.XXXXXX";
static char state_path[sizeof(root) + 32];
static struct global_opts opts;

static void remove_root(void)
{
    unlink(state_path);
    char dir[sizeof(root) + 8];
    snprintf(dir, sizeof(dir), "%s/fuzz", root);
    rmdir(dir);
    rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (mkdtemp(root) == NULL) {
        perror("mkdtemp");
        abort();
    }
    char dir[sizeof(root) + 8];
    snprintf(dir, sizeof(dir), "%s/fuzz", root);
    if (mkdir(dir, 0700) < 0) {
        perror("mkdir");
        abort();
    }
    snprintf(state_path, sizeof(state_path), "%s/state.json", dir);
    opts.root = root;
    atexit(remove_root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = open(state_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    close(fd);

    struct container_state *st = NULL;
    ac_error_t err = NULL;
    if (state_load(&opts, "fuzz", &st, &err) == 0) {
        for (int status = STATUS_CREATING; status <= STATUS_STOPPED; status++)
            free(state_oci_json(st, status, status & 1));
        state_free(st);
    }
    ac_error_free(&err);
    return 0;
}
