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

/* A string shown bare: visible ASCII only, nothing a reader could take for
 * a second member or a second line. */
static bool bare(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s <= ' ' || *s >= 0x7f || *s == '"' || *s == '\\')
            return false;
    return true;
}

/* A record as "TIME EVENT key=value ...": strings bare where they can be,
 * else as JSON strings, the rest as compact JSON. */
static void print_human(FILE *out, yajl_val rec)
{
    const char *time = NULL, *event = NULL;
    for (size_t i = 0; i < rec->u.object.len; i++) {
        yajl_val v = rec->u.object.values[i];
        if (strcmp(rec->u.object.keys[i], "time") == 0 && YAJL_IS_STRING(v))
            time = v->u.string;
        if (strcmp(rec->u.object.keys[i], "event") == 0 && YAJL_IS_STRING(v))
            event = v->u.string;
    }
    fprintf(out, "%s  %-22s", time ? time : "?", event ? event : "?");
    for (size_t i = 0; i < rec->u.object.len; i++) {
        const char *key = rec->u.object.keys[i];
        yajl_val v = rec->u.object.values[i];
        if (shown_apart(key))
            continue;
        cleanup_free char *text =
            YAJL_IS_STRING(v) ? (bare(v->u.string) ? NULL : audit_json_string(v->u.string)) : tier_tree_to_json(v, false);
        fprintf(out, " %s=%s", key, text ? text : YAJL_IS_STRING(v) ? v->u.string : "?");
    }
    fputc('\n', out);
}

/* Container ID's records of LOG, whole or not at all: a line that is not a
 * record refuses the show before anything is printed. */
static int show(const char *log, const char *id, bool json, ac_error_t *err)
{
    cleanup_file FILE *f = fopen(log, "re");
    if (!f)
        return ac_error(err, errno, "audit show: open `%s`", log);
    cleanup_free char *text = NULL;
    size_t text_len = 0;
    cleanup_file FILE *out = open_memstream(&text, &text_len);
    if (!out)
        return ac_error(err, errno, "audit show: open_memstream");
    cleanup_free char *line = NULL;
    size_t cap = 0, shown = 0;
    ssize_t n;
    unsigned long lineno = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        char ebuf[128];
        yajl_val rec = yajl_tree_parse(line, ebuf, sizeof(ebuf));
        if (!rec || !YAJL_IS_OBJECT(rec)) {
            if (rec)
                yajl_tree_free(rec);
            return ac_error(err, 0, "audit show: %s:%lu: not a JSON record (`agentcage audit verify` names what broke)",
                            log, lineno);
        }
        const char *path[] = {"id", NULL};
        yajl_val v = yajl_tree_get(rec, path, yajl_t_string);
        if (v && strcmp(v->u.string, id) == 0) {
            if (json)
                fprintf(out, "%s\n%s", shown ? "," : "[", line);
            else
                print_human(out, rec);
            shown++;
        }
        yajl_tree_free(rec);
    }
    if (ferror(f))
        return ac_error(err, errno, "audit show: read `%s`", log);
    if (!shown)
        return ac_error(err, 0, "audit show: no records of `%s` in %s", id, log);
    if (json)
        fputs("\n]\n", out);
    if (fflush(out) != 0)
        return ac_error(err, errno, "audit show: open_memstream");
    fwrite(text, 1, text_len, stdout);
    return 0;
}

COMMAND(audit)
{
    const char *show_usage = "agentcage audit show ID [--json] [--log FILE]";
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
        /* flags before or after the id: getopt starts afresh on "show ..." */
        argc--, argv++;
        optind = 0;
        while ((c = cli_getopt(argc, argv, "", opts)) != -1) {
            switch (c) {
            case 'j': json = true; break;
            case 'l': log = optarg; break;
            default:
                return ac_error(err, 0, "audit show: unknown option `%s` (usage: %s)", argv[optind - 1], show_usage);
            }
        }
        if (optind == argc)
            return ac_error(err, 0, "audit show: missing container id (usage: %s)", show_usage);
        if (optind != argc - 1)
            return ac_error(err, 0, "audit show: unexpected argument `%s` (usage: %s)", argv[optind + 1], show_usage);
        id = argv[optind];
        return show(log, id, json, err);
    }
    if (argc != 3 || strcmp(argv[1], "verify") != 0)
        return ac_error(err, 0, "audit: usage: agentcage audit verify FILE | %s", show_usage);
    char last[SHA256_HEX_LEN + 1];
    long n = audit_verify(argv[2], last, err);
    if (n < 0)
        return -1;
    printf("%ld records, chain intact (last hash %s)\n", n, last);
    return 0;
}
