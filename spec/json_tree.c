/* A JSON document to a yajl tree, as yajl_tree_parse makes it (the same
 * nodes, freed by yajl_tree_free), built on yajl's own parser.
 *
 * Why not yajl_tree_parse itself: it grows every array and object by one
 * realloc per member, so a long array (a seccomp profile's syscall names,
 * hundreds per rule) is copied over and over; with the mallocs of each
 * node that made a 9 KB config.json of Docker's cost 0.25-0.45 ms to
 * parse, on every create (issue 20). Here members go into arrays that
 * double. What the tree holds is the same: duplicate keys are kept in
 * order (the tier mapping refuses them), numbers keep their text and the
 * integer and double readings yajl_tree gives, comments are allowed as
 * yajl_tree_parse allows them, and a parse error is yajl's own message. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "spec/spec.h"

/* An open array or object, and the key that waits for its value. */
struct open_node {
    yajl_val v;
    size_t cap;
    char *key;
};

struct builder {
    struct open_node *stack;
    size_t depth, cap;
    yajl_val root;
};

static yajl_val node_new(yajl_type type)
{
    yajl_val v = xcalloc(1, sizeof(*v));
    v->type = type;
    return v;
}

static char *text_copy(const unsigned char *s, size_t len)
{
    char *t = xmalloc(len + 1);
    memcpy(t, s, len);
    t[len] = '\0';
    return t;
}

/* v into the innermost open array or object (under its waiting key), or
 * as the document when none is open. 0 stops the parse. */
static int add_value(struct builder *b, yajl_val v)
{
    if (b->depth == 0) {
        if (b->root) {
            yajl_tree_free(v);
            return 0;
        }
        b->root = v;
        return 1;
    }
    struct open_node *o = &b->stack[b->depth - 1];
    if (o->v->type == yajl_t_array) {
        if (o->v->u.array.len == o->cap) {
            o->cap = o->cap ? o->cap * 2 : 8;
            o->v->u.array.values = xrealloc(o->v->u.array.values, o->cap * sizeof(yajl_val));
        }
        o->v->u.array.values[o->v->u.array.len++] = v;
        return 1;
    }
    if (!o->key) { /* yajl's parser gives a key before every value of an object */
        yajl_tree_free(v);
        return 0;
    }
    if (o->v->u.object.len == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 8;
        o->v->u.object.keys = xrealloc((void *)o->v->u.object.keys, o->cap * sizeof(char *));
        o->v->u.object.values = xrealloc(o->v->u.object.values, o->cap * sizeof(yajl_val));
    }
    o->v->u.object.keys[o->v->u.object.len] = o->key;
    o->v->u.object.values[o->v->u.object.len++] = v;
    o->key = NULL;
    return 1;
}

static int open_container(struct builder *b, yajl_type type)
{
    yajl_val v = node_new(type);
    if (!add_value(b, v))
        return 0;
    if (b->depth == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->stack = xrealloc(b->stack, b->cap * sizeof(*b->stack));
    }
    b->stack[b->depth++] = (struct open_node){.v = v};
    return 1;
}

static int close_container(void *ctx)
{
    struct builder *b = ctx;
    if (b->depth == 0)
        return 0;
    b->depth--;
    return 1;
}

static int on_null(void *ctx) { return add_value(ctx, node_new(yajl_t_null)); }

static int on_boolean(void *ctx, int value) { return add_value(ctx, node_new(value ? yajl_t_true : yajl_t_false)); }

/* The readings yajl_tree gives a number: an integer when the text is only
 * an optional sign and digits whose magnitude is within LLONG_MAX, a
 * double when strtod reads all of it, each with its flag. */
static int on_number(void *ctx, const char *s, size_t len)
{
    yajl_val v = node_new(yajl_t_number);
    char *text = text_copy((const unsigned char *)s, len);
    v->u.number.r = text;
    const char *p = text + (text[0] == '-');
    bool digits = *p != '\0';
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            digits = false;
    if (digits) {
        errno = 0;
        v->u.number.i = strtoll(text, NULL, 10);
        /* yajl reads the digits as a magnitude: LLONG_MIN is out of range */
        if (errno == 0 && v->u.number.i != LLONG_MIN)
            v->u.number.flags |= YAJL_NUMBER_INT_VALID;
    } else {
        v->u.number.i = text[0] == '-' ? LLONG_MIN : LLONG_MAX;
    }
    char *end = NULL;
    errno = 0;
    v->u.number.d = strtod(text, &end);
    if (errno == 0 && end && *end == '\0')
        v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
    return add_value(ctx, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    yajl_val v = node_new(yajl_t_string);
    v->u.string = text_copy(s, len);
    return add_value(ctx, v);
}

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    struct builder *b = ctx;
    if (b->depth == 0)
        return 0;
    struct open_node *o = &b->stack[b->depth - 1];
    free(o->key);
    o->key = text_copy(s, len);
    return 1;
}

static int on_start_map(void *ctx) { return open_container(ctx, yajl_t_object); }

static int on_start_array(void *ctx) { return open_container(ctx, yajl_t_array); }

static const yajl_callbacks tree_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = close_container,
    .yajl_start_array = on_start_array,
    .yajl_end_array = close_container,
};

yajl_val json_tree_parse(const char *text, size_t len, char *errbuf, size_t errlen)
{
    struct builder b = {0};
    yajl_handle h = yajl_alloc(&tree_callbacks, NULL, &b);
    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!h) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    yajl_config(h, yajl_allow_comments, 1);
    yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
    if (st == yajl_status_ok)
        st = yajl_complete_parse(h);
    if (st != yajl_status_ok || !b.root) {
        if (errbuf && errlen) {
            unsigned char *msg = yajl_get_error(h, 1, (const unsigned char *)text, len);
            snprintf(errbuf, errlen, "%s", msg ? (char *)msg : "parse error");
            if (msg)
                yajl_free_error(h, msg);
        }
        /* the open containers are already in the tree from its root */
        for (size_t i = 0; i < b.depth; i++)
            free(b.stack[i].key);
        if (b.root)
            yajl_tree_free(b.root);
        b.root = NULL;
    }
    yajl_free(h);
    free(b.stack);
    return b.root;
}
