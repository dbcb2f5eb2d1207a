/* The state a hook reads from stdin, and value parsers (hook_state.h). */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "hooks/hook_state.h"

int hook_valid_name(const char *s)
{
    if (!s || !isalnum((unsigned char)s[0]) || strlen(s) > 1024)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.+-", *p))
            return 0;
    return 1;
}

int hook_state_read(int fd, struct hook_state *st, ac_error_t *err)
{
    memset(st, 0, sizeof(*st));
    cleanup_free char *text = NULL;
    size_t len;
    if (read_all_fd(fd, &text, &len, err) < 0)
        return ac_error_wrap(err, "read the state on stdin");
    return hook_state_parse(text, st, err);
}

int hook_state_parse(const char *text, struct hook_state *st, ac_error_t *err)
{
    memset(st, 0, sizeof(*st));
    char errbuf[256];
    st->tree = yajl_tree_parse(text, errbuf, sizeof(errbuf));
    if (!st->tree || !YAJL_IS_OBJECT(st->tree)) {
        /* yajl's message spans lines: keep the first */
        errbuf[strcspn(errbuf, "\n")] = '\0';
        return ac_error(err, 0, "bad state on stdin: %s", st->tree ? "not a JSON object" : errbuf);
    }
    static const char *id_path[] = {"id", NULL}, *pid_path[] = {"pid", NULL}, *status_path[] = {"status", NULL},
                      *bundle_path[] = {"bundle", NULL}, *ann_path[] = {"annotations", NULL};
    yajl_val id = yajl_tree_get(st->tree, id_path, yajl_t_string);
    if (!id)
        return ac_error(err, 0, "bad state on stdin: no \"id\" string");
    st->id = id->u.string;
    if (!hook_valid_name(st->id))
        return ac_error(err, 0, "bad state on stdin: invalid container id `%s`", st->id);
    yajl_val pid = yajl_tree_get(st->tree, pid_path, yajl_t_any);
    if (pid) {
        if (!YAJL_IS_INTEGER(pid) || YAJL_GET_INTEGER(pid) < 0 || YAJL_GET_INTEGER(pid) > 0x7fffffff)
            return ac_error(err, 0, "bad state on stdin: \"pid\" is not a process id");
        st->pid = (pid_t)YAJL_GET_INTEGER(pid);
    }
    yajl_val status = yajl_tree_get(st->tree, status_path, yajl_t_string);
    st->status = status ? status->u.string : "";
    yajl_val bundle = yajl_tree_get(st->tree, bundle_path, yajl_t_string);
    st->bundle = bundle ? bundle->u.string : "";
    st->annotations = yajl_tree_get(st->tree, ann_path, yajl_t_object);
    return 0;
}

void hook_state_free(struct hook_state *st)
{
    if (st->tree)
        yajl_tree_free(st->tree);
    memset(st, 0, sizeof(*st));
}

const char *hook_state_annotation(const struct hook_state *st, const char *key)
{
    if (!st->annotations)
        return NULL;
    for (size_t i = 0; i < st->annotations->u.object.len; i++)
        if (strcmp(st->annotations->u.object.keys[i], key) == 0) {
            yajl_val v = st->annotations->u.object.values[i];
            return YAJL_IS_STRING(v) ? v->u.string : NULL;
        }
    return NULL;
}

/* digits then a unit suffix; the number must fit and be followed by a unit
 * from the table (or nothing, for multiplier 1). */
static int parse_with_units(const char *s, const char *const *units, const uint64_t *mult, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno)
        return -1;
    for (size_t i = 0; units[i]; i++)
        if (strcasecmp(end, units[i]) == 0) {
            if (n > UINT64_MAX / mult[i])
                return -1;
            *out = n * mult[i];
            return 0;
        }
    return -1;
}

int hook_parse_duration(const char *s, int64_t *seconds)
{
    static const char *const units[] = {"", "s", "m", "h", "d", NULL};
    static const uint64_t mult[] = {1, 1, 60, 3600, 86400};
    uint64_t v;
    if (parse_with_units(s, units, mult, &v) < 0 || v > INT64_MAX / 2)
        return -1;
    *seconds = (int64_t)v;
    return 0;
}

int hook_parse_size(const char *s, uint64_t *bytes)
{
    static const char *const units[] = {"", "b", "k", "kb", "kib", "m", "mb", "mib", "g", "gb", "gib", NULL};
    static const uint64_t mult[] = {1, 1, 1ULL << 10, 1ULL << 10, 1ULL << 10, 1ULL << 20, 1ULL << 20,
                                    1ULL << 20, 1ULL << 30, 1ULL << 30, 1ULL << 30};
    return parse_with_units(s, units, mult, bytes);
}
