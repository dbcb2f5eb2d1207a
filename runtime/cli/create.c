/* create and run. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cli/commands.h"
#include "runtime/linux/terminal.h"
#include "runtime/util/utils.h"

enum { OPT_PID_FILE = 256, OPT_CONSOLE, OPT_NO_PIVOT, OPT_NO_KEYRING, OPT_PRESERVE, OPT_CONFIG, OPT_DETACH,
       OPT_NO_SUBREAPER, OPT_KEEP };

static const struct option create_opts[] = {
    {"bundle", required_argument, NULL, 'b'},
    {"pid-file", required_argument, NULL, OPT_PID_FILE},
    {"console-socket", required_argument, NULL, OPT_CONSOLE},
    {"no-pivot", no_argument, NULL, OPT_NO_PIVOT},
    {"no-new-keyring", no_argument, NULL, OPT_NO_KEYRING},
    {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"detach", no_argument, NULL, 'd'},
    {"no-subreaper", no_argument, NULL, OPT_NO_SUBREAPER},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_create_flags(int argc, char **argv, struct create_options *o, bool *detach, bool *keep,
                              ac_error_t *err)
{
    int c;
    while ((c = cli_getopt(argc, argv, "+b:d", create_opts)) != -1) {
        switch (c) {
        case 'b': o->bundle = optarg; break;
        case OPT_PID_FILE: o->pid_file = optarg; break;
        case OPT_CONSOLE: o->console_socket = optarg; break;
        case OPT_NO_PIVOT: o->no_pivot = true; break;
        case OPT_NO_KEYRING: o->no_new_keyring = true; break;
        case OPT_CONFIG: o->config_path = optarg; break;
        case OPT_PRESERVE: {
            uint64_t n;
            if (parse_uint64(optarg, &n) < 0 || n > 65536)
                return ac_error(err, 0, "--preserve-fds: expected a number, got `%s`", optarg);
            o->preserve_fds = (int)n;
            break;
        }
        case 'd': *detach = true; break;
        case OPT_NO_SUBREAPER: break;
        case OPT_KEEP: *keep = true; break;
        case 'h':
            return ac_error(err, 0, "usage: %s [--bundle DIR] [--pid-file F] [--console-socket S] ID", argv[0]);
        default:
            return ac_error(err, 0, "%s: unknown flag `%s`", argv[0], argv[optind - 1]);
        }
    }
    return 0;
}

COMMAND(create)
{
    struct create_options o = {0};
    bool detach = false, keep = false;
    const char *id;
    if (parse_create_flags(argc, argv, &o, &detach, &keep, err) < 0 ||
        cli_one_id(argc, argv, "create [flags] ID", &id, err) < 0)
        return -1;
    struct create_result res;
    return container_create(g, id, &o, &res, err);
}

COMMAND(run)
{
    struct create_options o = {0};
    bool detach = false, keep = false;
    const char *id;
    if (parse_create_flags(argc, argv, &o, &detach, &keep, err) < 0 ||
        cli_one_id(argc, argv, "run [flags] ID", &id, err) < 0)
        return -1;
    o.foreground = !detach;
    o.start_here = true;
    struct create_result res;
    if (container_create(g, id, &o, &res, err) < 0)
        return -1;
    /* our own container: start and delete take its state from create, not
     * from the state file again */
    cleanup_spec struct oci_spec *config = res.config; /* after st, which points to it */
    cleanup_state struct container_state *st = res.state;
    int started = res.running ? container_start_running(g, id, err)
                  : st        ? container_start_here(g, st, res.start_fd, err)
                              : container_start(g, id, err);
    if (started < 0) {
        ac_error_t ignore = NULL;
        container_delete(g, id, true, &ignore);
        ac_error_free(&ignore);
        return -1;
    }
    if (detach)
        return 0;
    if (res.console_master >= 0) {
        terminal_proxy(res.console_master);
        close(res.console_master);
    }
    int status = wait_forwarding_signals(res.pid);
    if (!keep && (st ? container_delete_known(g, st, err) : container_delete(g, id, true, err)) < 0)
        return -1;
    return status;
}
