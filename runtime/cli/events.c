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
    /* the counters are read every tick, so an OOM kill is reported within
     * one (as runc's "oom" event); stats go out every interval */
    const long long tick_ms = once || interval_ms < 200 ? interval_ms : 200;
    long long since_stats = interval_ms;
    bool first = true;
    uint64_t oom_kills = 0;
    for (;;) {
        cleanup_state struct container_state *st = NULL;
        if (state_load(g, id, &st, err) < 0)
            return -1;
        bool stopped = state_status(g, st) == STATUS_STOPPED;
        if (stopped && (once || first))
            return once ? ac_error(err, 0, "container `%s` is not running", id) : 0;
        if (!st->cgroup_path[0])
            return ac_error(err, 0, "container `%s` has no cgroup", id);
        struct cgroup_stats stats;
        if (cgroup_stats(st->cgroup_path, &stats, stopped ? NULL : err) < 0)
            return stopped ? 0 : -1;
        /* an OOM kill of the init stops the container: still reported */
        if (!first && stats.oom_kill_count > oom_kills)
            printf("{\"type\":\"oom\",\"id\":\"%s\"}\n", id);
        oom_kills = stats.oom_kill_count;
        first = false;
        if (stopped) {
            fflush(stdout);
            return 0;
        }
        if (since_stats >= interval_ms) {
            cleanup_free char *data = cgroup_stats_json(&stats);
            printf("{\"type\":\"stats\",\"id\":\"%s\",\"data\":%s}\n", id, data);
            since_stats = 0;
        }
        fflush(stdout);
        if (once)
            return 0;
        struct timespec ts = {tick_ms / 1000, (tick_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        since_stats += tick_ms;
    }
}
