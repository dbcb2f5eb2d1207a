/* pause ID, resume ID: the freezer. */
#include <getopt.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/container/gvisor.h"
#include "runtime/util/utils.h"

static int set_frozen(struct global_opts *g, int argc, char **argv, bool frozen, ac_error_t *err)
{
    static const struct option opts[] = {{NULL, 0, NULL, 0}};
    const char *id;
    if (cli_getopt(argc, argv, "+", opts) != -1)
        return ac_error(err, 0, "%s: unknown flag `%s`", argv[0], argv[optind - 1]);
    if (cli_one_id(argc, argv, frozen ? "pause ID" : "resume ID", &id, err) < 0)
        return -1;
    cleanup_close int lock = -1;
    cleanup_state struct container_state *st = NULL;
    enum container_status s;
    if (state_open(g, id, &lock, &st, &s, err) < 0)
        return -1;
    if (frozen && s != STATUS_RUNNING && s != STATUS_CREATED)
        return ac_error(err, 0, "cannot pause container `%s`: it is %s", id, container_status_names[s]);
    if (!frozen && s != STATUS_PAUSED)
        return ac_error(err, 0, "cannot resume container `%s`: it is not paused but %s", id,
                        container_status_names[s]);
    /* its processes run in the pod's sentry, which freezes as one */
    if (gvisor_is_pod_member(st))
        return ac_error(err, 0,
                        "cannot %s container `%s`: a pod's container under gVisor runs in the pod's one sandbox; "
                        "%s the pod's sandbox",
                        argv[0], id, argv[0]);
    if (!st->cgroup_path[0])
        return ac_error(err, 0, "cannot %s container `%s`: it has no cgroup", argv[0], id);
    return cgroup_freeze(st->cgroup_path, frozen, err);
}

COMMAND(pause) { return set_frozen(g, argc, argv, true, err); }
COMMAND(resume) { return set_frozen(g, argc, argv, false, err); }
