/* kill [--all] ID [SIGNAL] */
#include <errno.h>
#include <getopt.h>
#include <signal.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/container/gvisor.h"
#include "runtime/util/utils.h"

COMMAND(kill)
{
    static const struct option opts[] = {{"all", no_argument, NULL, 'a'}, {NULL, 0, NULL, 0}};
    bool all = false;
    int c;
    while ((c = cli_getopt(argc, argv, "+a", opts)) != -1) {
        if (c != 'a')
            return ac_error(err, 0, "kill: unknown flag `%s`", argv[optind - 1]);
        all = true;
    }
    if (optind >= argc)
        return ac_error(err, 0, "kill: missing container id (usage: kill [--all] ID [SIGNAL])");
    const char *id = argv[optind];
    int sig = SIGTERM;
    if (optind + 1 < argc) {
        sig = parse_signal(argv[optind + 1]);
        if (sig < 0)
            return ac_error(err, 0, "kill: unknown signal `%s`", argv[optind + 1]);
    }
    if (optind + 2 < argc)
        return ac_error(err, 0, "kill: unexpected argument `%s`", argv[optind + 2]);
    cleanup_state struct container_state *st = NULL;
    enum container_status status;
    if (state_open(g, id, NULL, &st, &status, err) < 0)
        return -1;
    if (st->gvisor && status != STATUS_STOPPED) /* the signal is for the workload inside gVisor, not for its sentry */
        return gvisor_forward(g, st, argc, argv, err);
    /* --all signals what is left in the cgroup, which may be nothing once
     * the init is gone (runc succeeds there too) */
    if (all)
        return st->cgroup_path[0] ? cgroup_kill_all(st->cgroup_path, sig, err) : 0;
    if (status == STATUS_STOPPED)
        return ac_error(err, 0, "container not running: `%s` is stopped", id);
    if (kill(st->pid, sig) < 0)
        return ac_error(err, errno, "kill container `%s` (pid %d)", id, st->pid);
    return 0;
}
