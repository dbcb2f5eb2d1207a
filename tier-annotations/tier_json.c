/* Editing yajl trees in place, and writing them back as JSON.
 *
 * yajl_tree_free walks a tree and free()s every node, object key, string,
 * number text and child array, so nodes made here with malloc in the same
 * layout mix freely with parsed ones. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

static yajl_val new_node(yajl_type type)
{
    yajl_val v = xcalloc(1, sizeof(*v));
    v->type = type;
    return v;
}

yajl_val tj_new_string(const char *s)
{
    yajl_val v = new_node(yajl_t_string);
    v->u.string = xstrdup(s);
    return v;
}

yajl_val tj_new_int(long long n)
{
    yajl_val v = new_node(yajl_t_number);
    v->u.number.i = n;
    v->u.number.d = (double)n;
    v->u.number.r = xasprintf("%lld", n);
    v->u.number.flags = YAJL_NUMBER_INT_VALID | YAJL_NUMBER_DOUBLE_VALID;
    return v;
}

yajl_val tj_new_bool(bool b) { return new_node(b ? yajl_t_true : yajl_t_false); }
yajl_val tj_new_object(void) { return new_node(yajl_t_object); }
yajl_val tj_new_array(void) { return new_node(yajl_t_array); }

static void free_value(yajl_val v)
{
    if (v)
        yajl_tree_free(v);
}

yajl_val tj_get(yajl_val obj, const char *key)
{
    if (!YAJL_IS_OBJECT(obj))
        return NULL;
    for (size_t i = 0; i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], key) == 0)
            return obj->u.object.values[i];
    return NULL;
}

void tj_set(yajl_val obj, const char *key, yajl_val value)
{
    for (size_t i = 0; i < obj->u.object.len; i++) {
        if (strcmp(obj->u.object.keys[i], key) == 0) {
            if (obj->u.object.values[i] != value)
                free_value(obj->u.object.values[i]);
            obj->u.object.values[i] = value;
            return;
        }
    }
    size_t n = obj->u.object.len;
    obj->u.object.keys = xrealloc(obj->u.object.keys, (n + 1) * sizeof(*obj->u.object.keys));
    obj->u.object.values = xrealloc(obj->u.object.values, (n + 1) * sizeof(*obj->u.object.values));
    obj->u.object.keys[n] = xstrdup(key);
    obj->u.object.values[n] = value;
    obj->u.object.len = n + 1;
}

bool tj_remove(yajl_val obj, const char *key)
{
    if (!YAJL_IS_OBJECT(obj))
        return false;
    for (size_t i = 0; i < obj->u.object.len; i++) {
        if (strcmp(obj->u.object.keys[i], key) != 0)
            continue;
        free((char *)obj->u.object.keys[i]);
        free_value(obj->u.object.values[i]);
        memmove(&obj->u.object.keys[i], &obj->u.object.keys[i + 1],
                (obj->u.object.len - i - 1) * sizeof(*obj->u.object.keys));
        memmove(&obj->u.object.values[i], &obj->u.object.values[i + 1],
                (obj->u.object.len - i - 1) * sizeof(*obj->u.object.values));
        obj->u.object.len--;
        return true;
    }
    return false;
}

/* obj[key] as an object or an array, made (replacing another type) when
 * it is not one. */
static yajl_val get_container(yajl_val obj, const char *key, yajl_type type)
{
    yajl_val v = tj_get(obj, key);
    if (v == NULL || v->type != type) {
        v = new_node(type);
        tj_set(obj, key, v);
    }
    return v;
}

yajl_val tj_get_object(yajl_val obj, const char *key) { return get_container(obj, key, yajl_t_object); }
yajl_val tj_get_array(yajl_val obj, const char *key) { return get_container(obj, key, yajl_t_array); }

void tj_insert(yajl_val arr, size_t at, yajl_val value)
{
    size_t n = arr->u.array.len;
    if (at > n)
        at = n;
    arr->u.array.values = xrealloc(arr->u.array.values, (n + 1) * sizeof(*arr->u.array.values));
    memmove(&arr->u.array.values[at + 1], &arr->u.array.values[at], (n - at) * sizeof(*arr->u.array.values));
    arr->u.array.values[at] = value;
    arr->u.array.len = n + 1;
}

void tj_push(yajl_val arr, yajl_val value) { tj_insert(arr, arr->u.array.len, value); }

void tj_remove_at(yajl_val arr, size_t i)
{
    free_value(arr->u.array.values[i]);
    memmove(&arr->u.array.values[i], &arr->u.array.values[i + 1],
            (arr->u.array.len - i - 1) * sizeof(*arr->u.array.values));
    arr->u.array.len--;
}

const char *tj_get_str(yajl_val obj, const char *key)
{
    yajl_val v = tj_get(obj, key);
    return YAJL_IS_STRING(v) ? v->u.string : NULL;
}

bool tj_get_int(yajl_val obj, const char *key, int64_t *out)
{
    yajl_val v = tj_get(obj, key);
    if (!YAJL_IS_NUMBER(v) || v->u.number.r == NULL)
        return false;
    char *end;
    long long n = strtoll(v->u.number.r, &end, 10);
    if (*end != '\0')
        return false;
    *out = n;
    return true;
}

bool tj_array_has_string(yajl_val arr, const char *s)
{
    for (size_t i = 0; YAJL_IS_ARRAY(arr) && i < arr->u.array.len; i++)
        if (YAJL_IS_STRING(arr->u.array.values[i]) && strcmp(arr->u.array.values[i]->u.string, s) == 0)
            return true;
    return false;
}

static int cmp_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A key that appears twice in one object of v, or NULL; its path into
 * *path (malloc'd: "annotations.io.agentcage.tier", "mounts[2].source").
 * Each object's keys are sorted, so a hostile object of a million keys
 * costs n log n, not n squared. */
static const char *duplicate_in(yajl_val v, char **path)
{
    if (YAJL_IS_ARRAY(v)) {
        for (size_t i = 0; i < v->u.array.len; i++) {
            const char *dup = duplicate_in(v->u.array.values[i], path);
            if (dup) {
                char *p = xasprintf("[%zu]%s%s", i, (*path)[0] && (*path)[0] != '[' ? "." : "", *path);
                free(*path);
                *path = p;
                return dup;
            }
        }
        return NULL;
    }
    if (!YAJL_IS_OBJECT(v) || v->u.object.len == 0)
        return NULL;
    size_t n = v->u.object.len;
    cleanup_free const char **keys = xmalloc(n * sizeof(*keys));
    memcpy(keys, v->u.object.keys, n * sizeof(*keys));
    qsort(keys, n, sizeof(*keys), cmp_key);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(keys[i - 1], keys[i]) == 0) {
            *path = xstrdup(keys[i]);
            return keys[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        const char *dup = duplicate_in(v->u.object.values[i], path);
        if (dup) {
            char *p = xasprintf("%s%s%s", v->u.object.keys[i], (*path)[0] == '[' ? "" : ".", *path);
            free(*path);
            *path = p;
            return dup;
        }
    }
    return NULL;
}

char *tj_first_duplicate_key(yajl_val v)
{
    char *path = NULL;
    if (duplicate_in(v, &path) == NULL) {
        free(path);
        return NULL;
    }
    return path;
}

static void gen_value(yajl_gen g, yajl_val v)
{
    switch (v ? v->type : yajl_t_null) {
    case yajl_t_string:
        yajl_gen_string(g, (const unsigned char *)v->u.string, strlen(v->u.string));
        break;
    case yajl_t_number:
        yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
        break;
    case yajl_t_object:
        yajl_gen_map_open(g);
        for (size_t i = 0; i < v->u.object.len; i++) {
            const char *k = v->u.object.keys[i];
            yajl_gen_string(g, (const unsigned char *)k, strlen(k));
            gen_value(g, v->u.object.values[i]);
        }
        yajl_gen_map_close(g);
        break;
    case yajl_t_array:
        yajl_gen_array_open(g);
        for (size_t i = 0; i < v->u.array.len; i++)
            gen_value(g, v->u.array.values[i]);
        yajl_gen_array_close(g);
        break;
    case yajl_t_true:
        yajl_gen_bool(g, 1);
        break;
    case yajl_t_false:
        yajl_gen_bool(g, 0);
        break;
    default:
        yajl_gen_null(g);
        break;
    }
}

char *tier_tree_to_json(yajl_val v, bool pretty)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return NULL;
    yajl_gen_config(g, yajl_gen_beautify, pretty ? 1 : 0);
    yajl_gen_config(g, yajl_gen_indent_string, "  ");
    gen_value(g, v);
    const unsigned char *buf;
    size_t len;
    char *out = NULL;
    if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
        out = xmalloc(len + 1);
        memcpy(out, buf, len);
        out[len] = '\0';
        /* yajl's beautifier ends with a newline; callers add their own */
        while (len > 0 && out[len - 1] == '\n')
            out[--len] = '\0';
    }
    yajl_gen_free(g);
    return out;
}
