/* state ID, list [-q] [--format table|json] */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

COMMAND(state)
{
    static const struct option opts[] = {{NULL, 0, NULL, 0}};
    const char *id;
    if (cli_getopt(argc, argv, "+", opts) != -1)
        return ac_error(err, 0, "state: unknown flag `%s`", argv[optind - 1]);
    if (cli_one_id(argc, argv, "state ID", &id, err) < 0)
        return -1;
    cleanup_state struct container_state *st = NULL;
    enum container_status status;
    if (state_open(g, id, NULL, &st, &status, err) < 0)
        return -1;
    cleanup_free char *json = state_oci_json(st, status, true);
    printf("%s\n", json);
    return 0;
}

COMMAND(list)
{
    static const struct option opts[] = {
        {"quiet", no_argument, NULL, 'q'}, {"format", required_argument, NULL, 'f'}, {NULL, 0, NULL, 0}};
    bool quiet = false, json = false;
    int c;
    while ((c = cli_getopt(argc, argv, "+qf:", opts)) != -1) {
        if (c == 'q')
            quiet = true;
        else if (c == 'f' && (strcmp(optarg, "json") == 0 || strcmp(optarg, "table") == 0))
            json = strcmp(optarg, "json") == 0;
        else if (c == 'f')
            return ac_error(err, 0, "list: --format: expected table or json, got `%s`", optarg);
        else
            return ac_error(err, 0, "list: unknown flag `%s`", argv[optind - 1]);
    }
    char **ids = NULL;
    size_t n = 0;
    if (state_list_ids(g, &ids, &n, err) < 0)
        return -1;
    if (json)
        fputs("[", stdout);
    else if (!quiet)
        printf("%-20s %-8s %-10s %-40s %-32s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER");
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        struct container_state *st = NULL;
        ac_error_t e = NULL;
        if (state_load(g, ids[i], &st, &e) < 0) {
            ac_error_free(&e); /* deleted meanwhile */
        } else if (st->creating) {
            state_free(st); /* half-made: not a container (yet, or ever) */
        } else {
            enum container_status s = state_status(g, st);
            if (quiet) {
                printf("%s\n", st->id);
            } else if (json) {
                cleanup_free char *one = state_oci_json(st, s, false);
                printf("%s%s", first ? "" : ",", one);
            } else {
                printf("%-20s %-8d %-10s %-40s %-32s %s\n", st->id, s == STATUS_STOPPED ? 0 : st->pid,
                       container_status_names[s], st->bundle, st->created, st->owner[0] ? st->owner : "root");
            }
            first = false;
            state_free(st);
        }
        free(ids[i]);
    }
    free(ids);
    if (json)
        puts("]");
    return 0;
}
