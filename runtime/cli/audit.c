/* audit verify FILE: recompute the audit trail's hash chain.
 * audit show ID [--json] [--log FILE]: one container's records, in order,
 * as lines of "TIME EVENT key=value ..." or as a JSON array. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "hooks/audit.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier.h"

/* The members a line of the human form leaves out (they head it, or are
 * the chain's). */
static bool shown_apart(const char *key)
{
    static const char *const apart[] = {"seq", "time", "prev", "event", "id"};
    for (size_t i = 0; i < sizeof(apart) / sizeof(apart[0]); i++)
        if (strcmp(key, apart[i]) == 0)
            return true;
    return false;
}

/* A record as "TIME EVENT key=value ...": strings bare (quoted when they
 * hold a blank), the rest as compact JSON. */
static void print_human(yajl_val rec)
{
    const char *time = NULL, *event = NULL;
    for (size_t i = 0; i < rec->u.object.len; i++) {
        yajl_val v = rec->u.object.values[i];
        if (strcmp(rec->u.object.keys[i], "time") == 0 && YAJL_IS_STRING(v))
            time = v->u.string;
        if (strcmp(rec->u.object.keys[i], "event") == 0 && YAJL_IS_STRING(v))
            event = v->u.string;
    }
    printf("%s  %-22s", time ? time : "?", event ? event : "?");
    for (size_t i = 0; i < rec->u.object.len; i++) {
        const char *key = rec->u.object.keys[i];
        yajl_val v = rec->u.object.values[i];
        if (shown_apart(key))
            continue;
        cleanup_free char *text = YAJL_IS_STRING(v) ? NULL : tier_tree_to_json(v, false);
        if (YAJL_IS_STRING(v) && strpbrk(v->u.string, " \t\"") == NULL && v->u.string[0])
            printf(" %s=%s", key, v->u.string);
        else if (YAJL_IS_STRING(v)) {
            cleanup_free char *q = audit_json_string(v->u.string);
            printf(" %s=%s", key, q);
        } else
            printf(" %s=%s", key, text ? text : "?");
    }
    printf("\n");
}

static int show(const char *log, const char *id, bool json, ac_error_t *err)
{
    cleanup_file FILE *f = fopen(log, "re");
    if (!f)
        return ac_error(err, errno, "audit show: open `%s`", log);
    char *line = NULL;
    size_t cap = 0, shown = 0;
    ssize_t n;
    unsigned long lineno = 0;
    if (json)
        printf("[");
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        char ebuf[128];
        yajl_val rec = yajl_tree_parse(line, ebuf, sizeof(ebuf));
        if (!rec || !YAJL_IS_OBJECT(rec)) {
            free(line);
            if (rec)
                yajl_tree_free(rec);
            return ac_error(err, 0, "audit show: %s:%lu: not a JSON record (`agentcage audit verify` names what broke)",
                            log, lineno);
        }
        const char *path[] = {"id", NULL};
        yajl_val v = yajl_tree_get(rec, path, yajl_t_string);
        if (v && strcmp(v->u.string, id) == 0) {
            if (json)
                printf("%s\n%s", shown ? "," : "", line);
            else
                print_human(rec);
            shown++;
        }
        yajl_tree_free(rec);
    }
    free(line);
    if (json)
        printf("%s]\n", shown ? "\n" : "");
    if (!shown && !json)
        return ac_error(err, 0, "audit show: no records of `%s` in %s", id, log);
    return 0;
}

COMMAND(audit)
{
    const char *usage = "usage: agentcage audit verify FILE\n"
                        "       agentcage audit show ID [--json] [--log FILE]";
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("%s\n\n"
               "verify recomputes the hash chain of an audit log (default " AUDIT_DEFAULT_LOG ") and names\n"
               "the first line where it breaks: a removed, reordered or edited record.\n"
               "show prints container ID's records in order (its creation, every egress decision, its\n"
               "denials and its end), one line each, or as a JSON array with --json; the log is the\n"
               "runtime's (--audit-log) unless --log names another.\n",
               usage);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "show") == 0) {
        static const struct option opts[] = {
            {"json", no_argument, NULL, 'j'}, {"log", required_argument, NULL, 'l'}, {NULL, 0, NULL, 0}};
        const char *log = g->tier.audit_log ? g->tier.audit_log : AUDIT_DEFAULT_LOG, *id;
        bool json = false;
        int c;
        optind = 2;
        while ((c = cli_getopt(argc, argv, "", opts)) != -1) {
            switch (c) {
            case 'j': json = true; break;
            case 'l': log = optarg; break;
            default: return ac_error(err, 0, "%s", usage);
            }
        }
        if (cli_one_id(argc, argv, "agentcage audit show ID [--json] [--log FILE]", &id, err) < 0)
            return -1;
        return show(log, id, json, err);
    }
    if (argc != 3 || strcmp(argv[1], "verify") != 0)
        return ac_error(err, 0, "%s", usage);
    char last[SHA256_HEX_LEN + 1];
    long n = audit_verify(argv[2], last, err);
    if (n < 0)
        return -1;
    printf("%ld records, chain intact (last hash %s)\n", n, last);
    return 0;
}
