/* events [--stats] [--interval D] ID: resource statistics as JSON lines,
 * once with --stats, else every interval until the container stops. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

/* "5s", "500ms", "1m", plain seconds */
static int parse_interval(const char *s, long long *ms)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        *ms = (long long)(v * 1000);
    else if (strcmp(end, "ms") == 0)
        *ms = (long long)v;
    else if (strcmp(end, "m") == 0)
        *ms = (long long)(v * 60000);
    else
        return -1;
    return *ms > 0 ? 0 : -1;
}

COMMAND(events)
{
    static const struct option opts[] = {
        {"stats", no_argument, NULL, 's'}, {"interval", required_argument, NULL, 'i'}, {NULL, 0, NULL, 0}};
    bool once = false;
    long long interval_ms = 5000;
    int c;
    while ((c = cli_getopt(argc, argv, "+", opts)) != -1) {
        if (c == 's')
            once = true;
        else if (c == 'i') {
            if (parse_interval(optarg, &interval_ms) < 0)
                return ac_error(err, 0, "events: --interval: expected a duration like 5s, got `%s`", optarg);
        } else
            return ac_error(err, 0, "events: unknown flag `%s`", argv[optind - 1]);
    }
    const char *id;
    if (cli_one_id(argc, argv, "events [--stats] [--interval 5s] ID", &id, err) < 0)
        return -1;
    for (;;) {
        cleanup_state struct container_state *st = NULL;
        if (state_load(g, id, &st, err) < 0)
            return -1;
        if (state_status(g, st) == STATUS_STOPPED)
            return once ? ac_error(err, 0, "container `%s` is not running", id) : 0;
        if (!st->cgroup_path[0])
            return ac_error(err, 0, "container `%s` has no cgroup", id);
        struct cgroup_stats stats;
        if (cgroup_stats(st->cgroup_path, &stats, err) < 0)
            return -1;
        cleanup_free char *data = cgroup_stats_json(&stats);
        printf("{\"type\":\"stats\",\"id\":\"%s\",\"data\":%s}\n", id, data);
        fflush(stdout);
        if (once)
            return 0;
        struct timespec ts = {interval_ms / 1000, (interval_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}
