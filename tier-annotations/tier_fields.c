/* The fields of config.json a tier accepts: an allow-list (tiers.json's
 * acceptedFields), so a field this runtime does not know how to tighten, or
 * that a newer spec adds (netDevices, intelRdt, a memory policy ...), is
 * refused by name instead of being passed through to a kernel that would
 * honour it. The values of the accepted fields are the other mappers'
 * business.
 *
 * A pattern is a dotted path: "process.user.uid"; "x[]" stands for each
 * element of the array x; "*" for any one key; a trailing ".*" for
 * anything beneath. Keys that hold dots themselves (annotations, sysctl
 * names) only ever sit beneath a trailing ".*". */
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

#define MAX_DEPTH 16

/* A path in the tree as segments: object keys, or "[]" for an element. */
struct field_path {
    const char *seg[MAX_DEPTH];
    size_t idx[MAX_DEPTH]; /* the element's index, for messages */
    size_t n;
};

/* How a pattern relates to path: 2 covers it and all beneath (".*"),
 * 1 names it or something beneath it (so its members are checked in turn),
 * 0 neither. */
static int pattern_match(const char *pattern, const struct field_path *path)
{
    size_t i = 0;
    const char *p = pattern;
    while (*p) {
        size_t len = strcspn(p, ".[");
        if (len == 1 && p[0] == '*' && p[1] == '\0')
            return i <= path->n && i > 0 ? 2 : 0; /* trailing ".*": anything beneath what matched so far */
        if (i >= path->n)
            return 1; /* the path is an object or array on the way to the pattern */
        if (!(len == 1 && p[0] == '*') && (strlen(path->seg[i]) != len || strncmp(path->seg[i], p, len) != 0))
            return 0;
        i++;
        p += len;
        if (strncmp(p, "[]", 2) == 0) {
            if (i >= path->n)
                return 1;
            if (strcmp(path->seg[i], "[]") != 0)
                return 0;
            i++;
            p += 2;
        }
        if (*p == '.')
            p++;
    }
    return i == path->n ? 1 : 0;
}

/* "linux.resources.unified", "mounts[3].uidMappings" */
static char *path_string(const struct field_path *path)
{
    char *out = xstrdup("");
    for (size_t i = 0; i < path->n; i++) {
        char *next = strcmp(path->seg[i], "[]") == 0 ? xasprintf("%s[%zu]", out, path->idx[i])
                                                     : xasprintf("%s%s%s", out, i ? "." : "", path->seg[i]);
        free(out);
        out = next;
    }
    return out;
}

/* The patterns still in play at a path: those on the way to something
 * beneath it. A pattern that matches a path not at all matches nothing
 * beneath it either (its segments already differ, or it is shorter), so
 * each level tries only what the level above left. The lists live in one
 * row per depth (rows, stride entries each): a path of depth d writes row
 * d for its members, which read it at greater depths only, before the
 * next path of depth d writes it again. */
struct candidates {
    const size_t *idx;
    size_t n;
    size_t *rows;
    size_t stride;
};

static int check_value(struct tier_ctx *c, yajl_val v, struct field_path *path, struct candidates cand,
                       ac_error_t *err);

/* 0 accepted; -1 refused (recorded). */
static int check_field(struct tier_ctx *c, yajl_val v, struct field_path *path, struct candidates cand,
                       ac_error_t *err)
{
    int best = 0;
    size_t *next = cand.rows + path->n * cand.stride, n_next = 0;
    for (size_t i = 0; i < cand.n && best < 2; i++) {
        int m = pattern_match(c->defs->accepted_fields.v[cand.idx[i]], path);
        if (m == 1)
            next[n_next++] = cand.idx[i];
        if (m > best)
            best = m;
    }
    if (best == 0 && !YAJL_IS_NULL(v)) {
        cleanup_free char *name = path_string(path);
        return tier_refuse(c, err, "config.json field %s (not one a tier accepts)", name);
    }
    if (best == 1)
        return check_value(c, v, path, (struct candidates){next, n_next, cand.rows, cand.stride}, err);
    return 0;
}

static int check_value(struct tier_ctx *c, yajl_val v, struct field_path *path, struct candidates cand,
                       ac_error_t *err)
{
    if (path->n + 1 >= MAX_DEPTH)
        return 0; /* nothing accepted lies this deep but beneath a ".*" */
    int ret = 0;
    if (YAJL_IS_OBJECT(v)) {
        for (size_t i = 0; i < v->u.object.len; i++) {
            path->seg[path->n++] = v->u.object.keys[i];
            if (check_field(c, v->u.object.values[i], path, cand, err) < 0)
                ret = -1;
            path->n--;
        }
    } else if (YAJL_IS_ARRAY(v)) {
        for (size_t i = 0; i < v->u.array.len; i++) {
            path->idx[path->n] = i;
            path->seg[path->n++] = "[]";
            if (check_value(c, v->u.array.values[i], path, cand, err) < 0)
                ret = -1;
            path->n--;
        }
    }
    return ret;
}

int tier_map_fields(struct tier_ctx *c, ac_error_t *err)
{
    struct field_path path = {.n = 0};
    size_t n = c->defs->accepted_fields.n;
    /* row 0: all of them; rows 1 .. MAX_DEPTH - 1 for the paths */
    cleanup_free size_t *rows = xcalloc(MAX_DEPTH * (n ? n : 1), sizeof(*rows));
    for (size_t i = 0; i < n; i++)
        rows[i] = i;
    return check_value(c, c->config, &path, (struct candidates){rows, n, rows, n}, err);
}
