/* config.json (runtime-spec 1.2) -> struct oci_spec.
 *
 * The text is parsed into a yajl tree, then walked field by field into
 * structs allocated in the spec's arena. The walk keeps the JSON path of the
 * value being looked at ("linux.resources.memory.limit", "mounts[3]") so
 * every error can name the exact place that is wrong. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "spec/spec.h"
#include "spec/spec_internal.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* yajl_tree recurses once per nesting level (parse and free), so deeply
 * nested input could exhaust the stack; no real config nests more than ~8. */
#define SPEC_MAX_DEPTH 64
#define SPEC_MAX_SIZE (64u * 1024 * 1024)

const char *const oci_hook_kind_names[HOOK_KIND_COUNT] = {
    [HOOK_PRESTART] = "prestart",
    [HOOK_CREATE_RUNTIME] = "createRuntime",
    [HOOK_CREATE_CONTAINER] = "createContainer",
    [HOOK_START_CONTAINER] = "startContainer",
    [HOOK_POSTSTART] = "poststart",
    [HOOK_POSTSTOP] = "poststop",
};

struct name_value { const char *name; int value; };

static const struct name_value namespace_types[] = {
    { "pid", CLONE_NEWPID }, { "network", CLONE_NEWNET }, { "mount", CLONE_NEWNS },
    { "ipc", CLONE_NEWIPC }, { "uts", CLONE_NEWUTS }, { "user", CLONE_NEWUSER },
    { "cgroup", CLONE_NEWCGROUP }, { "time", CLONE_NEWTIME }, { NULL, 0 },
};

static const struct name_value rlimit_types[] = {
    { "RLIMIT_AS", RLIMIT_AS }, { "RLIMIT_CORE", RLIMIT_CORE }, { "RLIMIT_CPU", RLIMIT_CPU },
    { "RLIMIT_DATA", RLIMIT_DATA }, { "RLIMIT_FSIZE", RLIMIT_FSIZE },
    { "RLIMIT_LOCKS", RLIMIT_LOCKS }, { "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
    { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE }, { "RLIMIT_NICE", RLIMIT_NICE },
    { "RLIMIT_NOFILE", RLIMIT_NOFILE }, { "RLIMIT_NPROC", RLIMIT_NPROC },
    { "RLIMIT_RSS", RLIMIT_RSS }, { "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
    { "RLIMIT_RTTIME", RLIMIT_RTTIME }, { "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
    { "RLIMIT_STACK", RLIMIT_STACK }, { NULL, 0 },
};

/* Values from <linux/ioprio.h>, which glibc does not expose. */
static const struct name_value ioprio_classes[] = {
    { "IOPRIO_CLASS_RT", 1 }, { "IOPRIO_CLASS_BE", 2 }, { "IOPRIO_CLASS_IDLE", 3 }, { NULL, 0 },
};

static const struct name_value sched_policies[] = {
    { "SCHED_OTHER", SCHED_OTHER }, { "SCHED_FIFO", SCHED_FIFO }, { "SCHED_RR", SCHED_RR },
    { "SCHED_BATCH", SCHED_BATCH }, { "SCHED_ISO", 4 }, { "SCHED_IDLE", SCHED_IDLE },
    { "SCHED_DEADLINE", 6 }, { NULL, 0 },
};

static const struct name_value seccomp_actions[] = {
    { "SCMP_ACT_KILL", SECCOMP_ACTION_KILL },
    { "SCMP_ACT_KILL_PROCESS", SECCOMP_ACTION_KILL_PROCESS },
    { "SCMP_ACT_KILL_THREAD", SECCOMP_ACTION_KILL_THREAD },
    { "SCMP_ACT_TRAP", SECCOMP_ACTION_TRAP }, { "SCMP_ACT_ERRNO", SECCOMP_ACTION_ERRNO },
    { "SCMP_ACT_TRACE", SECCOMP_ACTION_TRACE }, { "SCMP_ACT_ALLOW", SECCOMP_ACTION_ALLOW },
    { "SCMP_ACT_LOG", SECCOMP_ACTION_LOG }, { "SCMP_ACT_NOTIFY", SECCOMP_ACTION_NOTIFY },
    { NULL, 0 },
};

static const struct name_value seccomp_ops[] = {
    { "SCMP_CMP_NE", SECCOMP_OP_NE }, { "SCMP_CMP_LT", SECCOMP_OP_LT },
    { "SCMP_CMP_LE", SECCOMP_OP_LE }, { "SCMP_CMP_EQ", SECCOMP_OP_EQ },
    { "SCMP_CMP_GE", SECCOMP_OP_GE }, { "SCMP_CMP_GT", SECCOMP_OP_GT },
    { "SCMP_CMP_MASKED_EQ", SECCOMP_OP_MASKED_EQ }, { NULL, 0 },
};

static const char *const rootfs_propagations[] = {
    "private", "rprivate", "slave", "rslave", "shared", "rshared", "unbindable", "runbindable", NULL,
};

static const struct name_value *lookup_name(const struct name_value *table, const char *name)
{
    for (; table->name; table++)
        if (strcmp(table->name, name) == 0)
            return table;
    return NULL;
}

/* ---- the walk's context: document name, current JSON path, error ---- */

struct walk {
    struct oci_spec *spec;
    const char *what;
    ac_error_t *err;
    size_t path_len;
    char path[512];
};

static size_t path_push_key(struct walk *w, const char *key)
{
    size_t saved = w->path_len;
    int n = snprintf(w->path + w->path_len, sizeof(w->path) - w->path_len, "%s%s",
                     w->path_len ? "." : "", key);
    if (n > 0)
        w->path_len += (size_t)n;
    if (w->path_len >= sizeof(w->path))
        w->path_len = sizeof(w->path) - 1; /* truncated; still names the start */
    return saved;
}

static size_t path_push_index(struct walk *w, size_t index)
{
    size_t saved = w->path_len;
    int n = snprintf(w->path + w->path_len, sizeof(w->path) - w->path_len, "[%zu]", index);
    if (n > 0)
        w->path_len += (size_t)n;
    if (w->path_len >= sizeof(w->path))
        w->path_len = sizeof(w->path) - 1;
    return saved;
}

static void path_pop(struct walk *w, size_t saved)
{
    w->path_len = saved;
    w->path[saved] = '\0';
}

/* "config.json: <path>: <message>" (or "config.json: <message>" at the top). */
__attribute__((format(printf, 2, 3))) static int fail(struct walk *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    if (w->path_len)
        ac_error(w->err, 0, "%s: %s: %s", w->what, w->path, msg ? msg : "invalid value");
    else
        ac_error(w->err, 0, "%s: %s", w->what, msg ? msg : "invalid value");
    free(msg);
    return -1;
}

/* Same, for a message about member KEY of the current object. */
__attribute__((format(printf, 3, 4))) static int fail_at(struct walk *w, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    size_t saved = path_push_key(w, key);
    fail(w, "%s", msg ? msg : "invalid value");
    path_pop(w, saved);
    free(msg);
    return -1;
}

static void *walk_alloc_array(struct walk *w, size_t n, size_t size)
{
    /* n is bounded by the document size (<= 64 MiB), so this cannot overflow. */
    return spec_alloc(w->spec, (n ? n : 1) * size);
}

/* ---- typed access to object members ----
 * A member that is absent or JSON null counts as absent (Go's encoding/json,
 * which the engines use, writes null for some empty values). */

static yajl_val member(yajl_val obj, const char *key)
{
    yajl_val found = NULL;
    if (!YAJL_IS_OBJECT(obj))
        return NULL;
    /* The last duplicate wins, as in Go's encoding/json. */
    for (size_t i = 0; i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], key) == 0)
            found = obj->u.object.values[i];
    if (YAJL_IS_NULL(found))
        return NULL;
    return found;
}

static int get_object(struct walk *w, yajl_val obj, const char *key, yajl_val *out)
{
    yajl_val v = member(obj, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_OBJECT(v))
        return fail_at(w, key, "expected an object");
    *out = v;
    return 0;
}

static int get_array(struct walk *w, yajl_val obj, const char *key, yajl_val *out)
{
    yajl_val v = member(obj, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_ARRAY(v))
        return fail_at(w, key, "expected an array");
    *out = v;
    return 0;
}

static int get_string(struct walk *w, yajl_val obj, const char *key, char **out)
{
    yajl_val v = member(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_STRING(v))
        return fail_at(w, key, "expected a string");
    *out = spec_strdup(w->spec, v->u.string);
    return 0;
}

static int get_required_string(struct walk *w, yajl_val obj, const char *key, char **out)
{
    if (get_string(w, obj, key, out) < 0)
        return -1;
    if (*out == NULL)
        return fail_at(w, key, "required");
    return 0;
}

static int get_bool(struct walk *w, yajl_val obj, const char *key, bool *has, bool *out)
{
    yajl_val v = member(obj, key);
    if (has)
        *has = false;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
        return fail_at(w, key, "expected a boolean");
    *out = YAJL_IS_TRUE(v);
    if (has)
        *has = true;
    return 0;
}

/* Integers are read from the number's text, not yajl's int64, so unsigned
 * values above INT64_MAX (e.g. RLIM_INFINITY in rlimits) survive. */
static bool number_text_is_integer(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int get_uint(struct walk *w, yajl_val obj, const char *key, uint64_t max, bool *has, uint64_t *out)
{
    yajl_val v = member(obj, key);
    *has = false;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_NUMBER(v) || v->u.number.r == NULL || !number_text_is_integer(v->u.number.r))
        return fail_at(w, key, "expected an integer");
    const char *text = v->u.number.r;
    if (text[0] == '-') {
        if (strspn(text + 1, "0") == strlen(text + 1)) { /* "-0" */
            *out = 0;
            *has = true;
            return 0;
        }
        return fail_at(w, key, "%s is out of range (0..%" PRIu64 ")", text, max);
    }
    errno = 0;
    unsigned long long value = strtoull(text, NULL, 10);
    if (errno == ERANGE || value > max)
        return fail_at(w, key, "%s is out of range (0..%" PRIu64 ")", text, max);
    *out = value;
    *has = true;
    return 0;
}

static int get_int(struct walk *w, yajl_val obj, const char *key, int64_t min, int64_t max, bool *has, int64_t *out)
{
    yajl_val v = member(obj, key);
    *has = false;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_NUMBER(v) || v->u.number.r == NULL || !number_text_is_integer(v->u.number.r))
        return fail_at(w, key, "expected an integer");
    errno = 0;
    long long value = strtoll(v->u.number.r, NULL, 10);
    if (errno == ERANGE || value < min || value > max)
        return fail_at(w, key, "%s is out of range (%" PRId64 "..%" PRId64 ")", v->u.number.r, min, max);
    *out = value;
    *has = true;
    return 0;
}

/* Optional members straight into an OPT(type, name) field pair. */
#define OPT_UINT(w, obj, key, max, s, field)                                     \
    do {                                                                         \
        uint64_t v_ = 0;                                                         \
        if (get_uint(w, obj, key, max, &(s)->has_##field, &v_) < 0)              \
            return -1;                                                           \
        if ((s)->has_##field)                                                    \
            (s)->field = v_;                                                     \
    } while (0)
#define OPT_INT(w, obj, key, min, max, s, field)                                 \
    do {                                                                         \
        int64_t v_ = 0;                                                          \
        if (get_int(w, obj, key, min, max, &(s)->has_##field, &v_) < 0)          \
            return -1;                                                           \
        if ((s)->has_##field)                                                    \
            (s)->field = v_;                                                     \
    } while (0)
#define OPT_BOOL(w, obj, key, s, field)                                          \
    do {                                                                         \
        if (get_bool(w, obj, key, &(s)->has_##field, &(s)->field) < 0)           \
            return -1;                                                           \
    } while (0)
/* Members the spec marks REQUIRED. */
#define REQ_UINT(w, obj, key, max, dst)                                          \
    do {                                                                         \
        uint64_t v_ = 0;                                                         \
        bool h_ = false;                                                         \
        if (get_uint(w, obj, key, max, &h_, &v_) < 0)                            \
            return -1;                                                           \
        if (!h_)                                                                 \
            return fail_at(w, key, "required");                                  \
        (dst) = v_;                                                              \
    } while (0)
#define REQ_INT(w, obj, key, min, max, dst)                                      \
    do {                                                                         \
        int64_t v_ = 0;                                                          \
        bool h_ = false;                                                         \
        if (get_int(w, obj, key, min, max, &h_, &v_) < 0)                        \
            return -1;                                                           \
        if (!h_)                                                                 \
            return fail_at(w, key, "required");                                  \
        (dst) = v_;                                                              \
    } while (0)

static int get_string_array(struct walk *w, yajl_val obj, const char *key, char ***out, size_t *n_out)
{
    yajl_val v = member(obj, key);
    if (v == NULL)
        return 0;
    if (!YAJL_IS_ARRAY(v))
        return fail_at(w, key, "expected an array of strings");
    size_t n = v->u.array.len;
    char **strings = walk_alloc_array(w, n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        yajl_val item = v->u.array.values[i];
        if (!YAJL_IS_STRING(item))
            return fail_at(w, key, "expected an array of strings");
        strings[i] = spec_strdup(w->spec, item->u.string);
    }
    strings[n] = NULL;
    *out = strings;
    *n_out = n;
    return 0;
}

/* A JSON object whose values are all strings (annotations, sysctl, unified). */
static int get_string_map(struct walk *w, yajl_val obj, const char *key, struct oci_kv **out, size_t *n_out)
{
    yajl_val v;
    if (get_object(w, obj, key, &v) < 0)
        return -1;
    if (v == NULL)
        return 0;
    size_t n = v->u.object.len;
    struct oci_kv *kvs = walk_alloc_array(w, n, sizeof(*kvs));
    size_t saved = path_push_key(w, key);
    for (size_t i = 0; i < n; i++) {
        yajl_val value = v->u.object.values[i];
        if (!YAJL_IS_STRING(value)) {
            fail_at(w, v->u.object.keys[i], "expected a string");
            path_pop(w, saved);
            return -1;
        }
        kvs[i].key = spec_strdup(w->spec, v->u.object.keys[i]);
        kvs[i].value = spec_strdup(w->spec, value->u.string);
    }
    path_pop(w, saved);
    *out = kvs;
    *n_out = n;
    return 0;
}

/* Walk an array of objects: allocate n elements of elem_size and call
 * parse_one(w, item, element) for each with the path at "key[i]". */
typedef int (*parse_element_fn)(struct walk *w, yajl_val item, void *element);

/* The typed parse_x(w, v, struct x *) functions, callable as parse_element_fn. */
#define ELEMENT_PARSER(fn, type) \
    static int fn##_any(struct walk *w, yajl_val v, void *dst) { return fn(w, v, (type *)dst); }

static int get_object_array(struct walk *w, yajl_val obj, const char *key, size_t elem_size,
                            parse_element_fn parse_one, void **out, size_t *n_out)
{
    yajl_val v;
    if (get_array(w, obj, key, &v) < 0)
        return -1;
    if (v == NULL)
        return 0;
    size_t n = v->u.array.len;
    unsigned char *elements = walk_alloc_array(w, n, elem_size);
    size_t saved = path_push_key(w, key);
    for (size_t i = 0; i < n; i++) {
        size_t saved_index = path_push_index(w, i);
        yajl_val item = v->u.array.values[i];
        int r = YAJL_IS_OBJECT(item) ? parse_one(w, item, elements + i * elem_size)
                                     : fail(w, "expected an object");
        path_pop(w, saved_index);
        if (r < 0) {
            path_pop(w, saved);
            return -1;
        }
    }
    path_pop(w, saved);
    *out = elements;
    *n_out = n;
    return 0;
}

#define GET_OBJECT_ARRAY(w, obj, key, parse_one, arr, n)                                      \
    get_object_array(w, obj, key, sizeof(*(arr)), parse_one##_any, (void **)&(arr), &(n))

/* Parse member KEY (an object) with parse_one(w, value, dst) at path "key";
 * *present tells whether it was there. */
static int get_sub_object(struct walk *w, yajl_val obj, const char *key, parse_element_fn parse_one,
                          void *dst, bool *present)
{
    yajl_val v;
    if (present)
        *present = false;
    if (get_object(w, obj, key, &v) < 0)
        return -1;
    if (v == NULL)
        return 0;
    size_t saved = path_push_key(w, key);
    int r = parse_one(w, v, dst);
    path_pop(w, saved);
    if (r < 0)
        return -1;
    if (present)
        *present = true;
    return 0;
}

/* An enum-valued string member: the name must be in table. */
static int get_enum(struct walk *w, yajl_val obj, const char *key, const struct name_value *table,
                    const char *what_kind, bool required, char **name_out, int *value_out)
{
    char *name = NULL;
    if (get_string(w, obj, key, &name) < 0)
        return -1;
    if (name == NULL)
        return required ? fail_at(w, key, "required") : 0;
    const struct name_value *entry = lookup_name(table, name);
    if (entry == NULL)
        return fail_at(w, key, "unknown %s \"%s\"", what_kind, name);
    if (name_out)
        *name_out = name;
    *value_out = entry->value;
    return 0;
}

/* ---- process ---- */

int spec_cap_from_name(const char *name)
{
    cap_value_t value;
    /* libcap also takes lower case and bare numbers; config.json uses the
     * canonical "CAP_XXX" spelling only. */
    if (name == NULL || strncmp(name, "CAP_", 4) != 0)
        return -1;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return -1;
    if (cap_from_name(name, &value) < 0 || value < 0 || value > 63)
        return -1;
    return value;
}

static int get_cap_set(struct walk *w, yajl_val obj, const char *key, uint64_t *mask)
{
    yajl_val v = member(obj, key);
    *mask = 0;
    if (v == NULL)
        return 0;
    if (!YAJL_IS_ARRAY(v))
        return fail_at(w, key, "expected an array of strings");
    size_t saved = path_push_key(w, key);
    for (size_t i = 0; i < v->u.array.len; i++) {
        yajl_val item = v->u.array.values[i];
        if (!YAJL_IS_STRING(item)) {
            fail(w, "expected an array of strings");
            path_pop(w, saved);
            return -1;
        }
        int cap = spec_cap_from_name(item->u.string);
        if (cap < 0) {
            size_t saved_index = path_push_index(w, i);
            fail(w, "unknown capability \"%s\"", item->u.string);
            path_pop(w, saved_index);
            path_pop(w, saved);
            return -1;
        }
        *mask |= UINT64_C(1) << cap;
    }
    path_pop(w, saved);
    return 0;
}

static int parse_capabilities(struct walk *w, yajl_val v, struct oci_capabilities *caps)
{
    if (get_cap_set(w, v, "bounding", &caps->bounding) < 0
        || get_cap_set(w, v, "effective", &caps->effective) < 0
        || get_cap_set(w, v, "inheritable", &caps->inheritable) < 0
        || get_cap_set(w, v, "permitted", &caps->permitted) < 0
        || get_cap_set(w, v, "ambient", &caps->ambient) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_capabilities, struct oci_capabilities)

static int parse_user(struct walk *w, yajl_val v, struct oci_user *user)
{
    bool has;
    uint64_t value;
    if (get_uint(w, v, "uid", UINT32_MAX, &has, &value) < 0)
        return -1;
    user->uid = has ? (uint32_t)value : 0;
    if (get_uint(w, v, "gid", UINT32_MAX, &has, &value) < 0)
        return -1;
    user->gid = has ? (uint32_t)value : 0;
    OPT_UINT(w, v, "umask", 07777, user, umask);
    if (get_string(w, v, "username", &user->username) < 0)
        return -1;

    yajl_val gids;
    if (get_array(w, v, "additionalGids", &gids) < 0)
        return -1;
    if (gids) {
        size_t n = gids->u.array.len;
        user->additional_gids = walk_alloc_array(w, n, sizeof(uint32_t));
        for (size_t i = 0; i < n; i++) {
            yajl_val item = gids->u.array.values[i];
            if (!YAJL_IS_NUMBER(item) || item->u.number.r == NULL || item->u.number.r[0] == '-'
                || !number_text_is_integer(item->u.number.r))
                return fail_at(w, "additionalGids", "expected an array of non-negative integers");
            errno = 0;
            unsigned long long gid = strtoull(item->u.number.r, NULL, 10);
            if (errno == ERANGE || gid > UINT32_MAX)
                return fail_at(w, "additionalGids", "%s is out of range (0..%u)", item->u.number.r, UINT32_MAX);
            user->additional_gids[i] = (uint32_t)gid;
        }
        user->n_additional_gids = n;
    }
    return 0;
}
ELEMENT_PARSER(parse_user, struct oci_user)

static int parse_rlimit(struct walk *w, yajl_val v, struct oci_rlimit *rl)
{
    if (get_enum(w, v, "type", rlimit_types, "rlimit", true, &rl->type, &rl->resource) < 0)
        return -1;
    REQ_UINT(w, v, "hard", UINT64_MAX, rl->hard);
    REQ_UINT(w, v, "soft", UINT64_MAX, rl->soft);
    return 0;
}
ELEMENT_PARSER(parse_rlimit, struct oci_rlimit)

static int parse_console_size(struct walk *w, yajl_val v, struct oci_process *p)
{
    REQ_UINT(w, v, "height", UINT32_MAX, p->console_height);
    REQ_UINT(w, v, "width", UINT32_MAX, p->console_width);
    return 0;
}
ELEMENT_PARSER(parse_console_size, struct oci_process)

static int parse_io_priority(struct walk *w, yajl_val v, struct oci_process *p)
{
    if (get_enum(w, v, "class", ioprio_classes, "I/O priority class", true, &p->io_priority_class,
                 &p->io_priority_class_value) < 0)
        return -1;
    bool has;
    int64_t prio = 0;
    if (get_int(w, v, "priority", 0, 7, &has, &prio) < 0)
        return -1;
    p->io_priority = (int)prio;
    return 0;
}
ELEMENT_PARSER(parse_io_priority, struct oci_process)

static int parse_scheduler(struct walk *w, yajl_val v, struct oci_scheduler *s)
{
    if (get_enum(w, v, "policy", sched_policies, "scheduler policy", true, &s->policy, &s->policy_value) < 0)
        return -1;
    OPT_INT(w, v, "nice", -20, 19, s, nice);
    OPT_INT(w, v, "priority", INT32_MIN, INT32_MAX, s, priority);
    if (get_string_array(w, v, "flags", &s->flags, &s->n_flags) < 0)
        return -1;
    OPT_UINT(w, v, "runtime", UINT64_MAX, s, runtime);
    OPT_UINT(w, v, "deadline", UINT64_MAX, s, deadline);
    OPT_UINT(w, v, "period", UINT64_MAX, s, period);
    return 0;
}
ELEMENT_PARSER(parse_scheduler, struct oci_scheduler)

static int parse_process(struct walk *w, yajl_val v, struct oci_process *p)
{
    if (get_bool(w, v, "terminal", NULL, &p->terminal) < 0)
        return -1;
    if (get_sub_object(w, v, "consoleSize", parse_console_size_any, p, &p->has_console_size) < 0)
        return -1;
    if (get_sub_object(w, v, "user", parse_user_any, &p->user, NULL) < 0)
        return -1;
    if (get_string_array(w, v, "args", &p->args, &p->n_args) < 0)
        return -1;
    if (get_string(w, v, "commandLine", &p->command_line) < 0)
        return -1;
    if (get_string_array(w, v, "env", &p->env, &p->n_env) < 0)
        return -1;
    if (get_string(w, v, "cwd", &p->cwd) < 0)
        return -1;
    if (p->cwd && p->cwd[0] != '/')
        return fail_at(w, "cwd", "must be an absolute path, got \"%s\"", p->cwd);
    if (get_sub_object(w, v, "capabilities", parse_capabilities_any, &p->capabilities,
                       &p->has_capabilities) < 0)
        return -1;
    if (GET_OBJECT_ARRAY(w, v, "rlimits", parse_rlimit, p->rlimits, p->n_rlimits) < 0)
        return -1;
    if (get_bool(w, v, "noNewPrivileges", NULL, &p->no_new_privileges) < 0)
        return -1;
    if (get_string(w, v, "apparmorProfile", &p->apparmor_profile) < 0)
        return -1;
    if (get_string(w, v, "selinuxLabel", &p->selinux_label) < 0)
        return -1;
    OPT_INT(w, v, "oomScoreAdj", -1000, 1000, p, oom_score_adj);
    if (get_sub_object(w, v, "ioPriority", parse_io_priority_any, p, &p->has_io_priority) < 0)
        return -1;
    yajl_val sched;
    if (get_object(w, v, "scheduler", &sched) < 0)
        return -1;
    if (sched) {
        p->scheduler = spec_alloc(w->spec, sizeof(*p->scheduler));
        if (get_sub_object(w, v, "scheduler", parse_scheduler_any, p->scheduler, NULL) < 0)
            return -1;
    }
    return 0;
}
ELEMENT_PARSER(parse_process, struct oci_process)

/* ---- mounts, hooks ---- */

static int parse_idmap(struct walk *w, yajl_val v, struct oci_idmap *m)
{
    REQ_UINT(w, v, "containerID", UINT32_MAX, m->container_id);
    REQ_UINT(w, v, "hostID", UINT32_MAX, m->host_id);
    REQ_UINT(w, v, "size", UINT32_MAX, m->size);
    return 0;
}
ELEMENT_PARSER(parse_idmap, struct oci_idmap)

static int parse_mount(struct walk *w, yajl_val v, struct oci_mount *m)
{
    if (get_required_string(w, v, "destination", &m->destination) < 0
        || get_string(w, v, "type", &m->type) < 0
        || get_string(w, v, "source", &m->source) < 0
        || get_string_array(w, v, "options", &m->options, &m->n_options) < 0)
        return -1;
    if (GET_OBJECT_ARRAY(w, v, "uidMappings", parse_idmap, m->uid_mappings, m->n_uid_mappings) < 0
        || GET_OBJECT_ARRAY(w, v, "gidMappings", parse_idmap, m->gid_mappings, m->n_gid_mappings) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_mount, struct oci_mount)

static int parse_hook(struct walk *w, yajl_val v, struct oci_hook *h)
{
    if (get_required_string(w, v, "path", &h->path) < 0
        || get_string_array(w, v, "args", &h->args, &h->n_args) < 0
        || get_string_array(w, v, "env", &h->env, &h->n_env) < 0)
        return -1;
    OPT_INT(w, v, "timeout", INT_MIN, INT_MAX, h, timeout);
    if (h->has_timeout && h->timeout <= 0)
        return fail_at(w, "timeout", "must be greater than 0");
    return 0;
}
ELEMENT_PARSER(parse_hook, struct oci_hook)

static int parse_hooks(struct walk *w, yajl_val v, struct oci_hooks *hooks)
{
    for (int kind = 0; kind < HOOK_KIND_COUNT; kind++)
        if (GET_OBJECT_ARRAY(w, v, oci_hook_kind_names[kind], parse_hook, hooks->hooks[kind],
                             hooks->n_hooks[kind]) < 0)
            return -1;
    return 0;
}
ELEMENT_PARSER(parse_hooks, struct oci_hooks)

/* ---- linux.resources ---- */

static int parse_device_rule(struct walk *w, yajl_val v, struct oci_device_rule *d)
{
    bool has;
    if (get_bool(w, v, "allow", &has, &d->allow) < 0)
        return -1;
    if (!has)
        return fail_at(w, "allow", "required");
    char *type = NULL;
    if (get_string(w, v, "type", &type) < 0)
        return -1;
    if (type == NULL)
        d->type = 'a';
    else if (strcmp(type, "a") == 0 || strcmp(type, "c") == 0 || strcmp(type, "b") == 0)
        d->type = type[0];
    else
        return fail_at(w, "type", "unknown device type \"%s\" (expected \"a\", \"c\" or \"b\")", type);
    d->major = d->minor = -1;
    int64_t value;
    if (get_int(w, v, "major", -1, INT64_MAX, &has, &value) < 0)
        return -1;
    if (has)
        d->major = value;
    if (get_int(w, v, "minor", -1, INT64_MAX, &has, &value) < 0)
        return -1;
    if (has)
        d->minor = value;
    if (get_string(w, v, "access", &d->access) < 0)
        return -1;
    if (d->access && d->access[strspn(d->access, "rwm")] != '\0') {
        /* runc ignores letters other than r, w, m. An allow rule whose
         * letters are not understood is refused (it could grant what was not
         * meant); a deny rule is taken to deny every access (rwm), so it
         * denies at least what its author meant. */
        if (d->allow)
            return fail_at(w, "access", "invalid device access \"%s\" (expected letters of \"rwm\")", d->access);
        size_t saved = path_push_key(w, "access");
        ac_warn("%s: \"%s\" has letters other than r, w, m: this deny rule denies rwm", w->path, d->access);
        path_pop(w, saved);
        d->access = spec_strdup(w->spec, "rwm");
    }
    return 0;
}
ELEMENT_PARSER(parse_device_rule, struct oci_device_rule)

static int parse_memory(struct walk *w, yajl_val v, struct oci_memory *m)
{
    OPT_INT(w, v, "limit", INT64_MIN, INT64_MAX, m, limit);
    OPT_INT(w, v, "reservation", INT64_MIN, INT64_MAX, m, reservation);
    OPT_INT(w, v, "swap", INT64_MIN, INT64_MAX, m, swap);
    OPT_INT(w, v, "kernel", INT64_MIN, INT64_MAX, m, kernel);
    OPT_INT(w, v, "kernelTCP", INT64_MIN, INT64_MAX, m, kernel_tcp);
    OPT_UINT(w, v, "swappiness", UINT64_MAX, m, swappiness);
    OPT_BOOL(w, v, "disableOOMKiller", m, disable_oom_killer);
    OPT_BOOL(w, v, "useHierarchy", m, use_hierarchy);
    OPT_BOOL(w, v, "checkBeforeUpdate", m, check_before_update);
    return 0;
}
ELEMENT_PARSER(parse_memory, struct oci_memory)

static int parse_cpu(struct walk *w, yajl_val v, struct oci_cpu *c)
{
    OPT_UINT(w, v, "shares", UINT64_MAX, c, shares);
    OPT_INT(w, v, "quota", INT64_MIN, INT64_MAX, c, quota);
    OPT_UINT(w, v, "burst", UINT64_MAX, c, burst);
    OPT_UINT(w, v, "period", UINT64_MAX, c, period);
    OPT_INT(w, v, "realtimeRuntime", INT64_MIN, INT64_MAX, c, realtime_runtime);
    OPT_UINT(w, v, "realtimePeriod", UINT64_MAX, c, realtime_period);
    if (get_string(w, v, "cpus", &c->cpus) < 0 || get_string(w, v, "mems", &c->mems) < 0)
        return -1;
    OPT_INT(w, v, "idle", INT64_MIN, INT64_MAX, c, idle);
    return 0;
}
ELEMENT_PARSER(parse_cpu, struct oci_cpu)

static int parse_pids(struct walk *w, yajl_val v, struct oci_resources *r)
{
    OPT_INT(w, v, "limit", INT64_MIN, INT64_MAX, r, pids_limit);
    return 0;
}
ELEMENT_PARSER(parse_pids, struct oci_resources)

static int parse_weight_device(struct walk *w, yajl_val v, struct oci_blkio_weight_device *d)
{
    REQ_INT(w, v, "major", 0, INT64_MAX, d->major);
    REQ_INT(w, v, "minor", 0, INT64_MAX, d->minor);
    OPT_UINT(w, v, "weight", UINT16_MAX, d, weight);
    OPT_UINT(w, v, "leafWeight", UINT16_MAX, d, leaf_weight);
    return 0;
}
ELEMENT_PARSER(parse_weight_device, struct oci_blkio_weight_device)

static int parse_throttle(struct walk *w, yajl_val v, struct oci_blkio_throttle *t)
{
    REQ_INT(w, v, "major", 0, INT64_MAX, t->major);
    REQ_INT(w, v, "minor", 0, INT64_MAX, t->minor);
    REQ_UINT(w, v, "rate", UINT64_MAX, t->rate);
    return 0;
}
ELEMENT_PARSER(parse_throttle, struct oci_blkio_throttle)

static int parse_blkio(struct walk *w, yajl_val v, struct oci_blkio *b)
{
    OPT_UINT(w, v, "weight", UINT16_MAX, b, weight);
    OPT_UINT(w, v, "leafWeight", UINT16_MAX, b, leaf_weight);
    if (GET_OBJECT_ARRAY(w, v, "weightDevice", parse_weight_device, b->weight_device, b->n_weight_device) < 0
        || GET_OBJECT_ARRAY(w, v, "throttleReadBpsDevice", parse_throttle, b->throttle_read_bps_device,
                            b->n_throttle_read_bps_device) < 0
        || GET_OBJECT_ARRAY(w, v, "throttleWriteBpsDevice", parse_throttle, b->throttle_write_bps_device,
                            b->n_throttle_write_bps_device) < 0
        || GET_OBJECT_ARRAY(w, v, "throttleReadIOPSDevice", parse_throttle, b->throttle_read_iops_device,
                            b->n_throttle_read_iops_device) < 0
        || GET_OBJECT_ARRAY(w, v, "throttleWriteIOPSDevice", parse_throttle, b->throttle_write_iops_device,
                            b->n_throttle_write_iops_device) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_blkio, struct oci_blkio)

static int parse_hugepage_limit(struct walk *w, yajl_val v, struct oci_hugepage_limit *h)
{
    if (get_required_string(w, v, "pageSize", &h->page_size) < 0)
        return -1;
    REQ_UINT(w, v, "limit", UINT64_MAX, h->limit);
    return 0;
}
ELEMENT_PARSER(parse_hugepage_limit, struct oci_hugepage_limit)

static int parse_net_priority(struct walk *w, yajl_val v, struct oci_net_priority *p)
{
    if (get_required_string(w, v, "name", &p->name) < 0)
        return -1;
    REQ_UINT(w, v, "priority", UINT32_MAX, p->priority);
    return 0;
}
ELEMENT_PARSER(parse_net_priority, struct oci_net_priority)

static int parse_network(struct walk *w, yajl_val v, struct oci_resources *r)
{
    OPT_UINT(w, v, "classID", UINT32_MAX, r, net_class_id);
    if (GET_OBJECT_ARRAY(w, v, "priorities", parse_net_priority, r->net_priorities, r->n_net_priorities) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_network, struct oci_resources)

static int parse_resources(struct walk *w, yajl_val v, struct oci_resources *r)
{
    if (GET_OBJECT_ARRAY(w, v, "devices", parse_device_rule, r->devices, r->n_devices) < 0)
        return -1;
    if (get_sub_object(w, v, "memory", parse_memory_any, &r->memory, &r->has_memory) < 0
        || get_sub_object(w, v, "cpu", parse_cpu_any, &r->cpu, &r->has_cpu) < 0
        || get_sub_object(w, v, "pids", parse_pids_any, r, &r->has_pids) < 0
        || get_sub_object(w, v, "blockIO", parse_blkio_any, &r->blkio, &r->has_blkio) < 0
        || get_sub_object(w, v, "network", parse_network_any, r, &r->has_network) < 0)
        return -1;
    if (GET_OBJECT_ARRAY(w, v, "hugepageLimits", parse_hugepage_limit, r->hugepage_limits,
                         r->n_hugepage_limits) < 0)
        return -1;
    if (get_string_map(w, v, "unified", &r->unified, &r->n_unified) < 0)
        return -1;
    /* rdma is not supported by agentcage and ignored, like unknown fields. */
    return 0;
}
ELEMENT_PARSER(parse_resources, struct oci_resources)

/* ---- linux.seccomp ---- */

static int parse_seccomp_arg(struct walk *w, yajl_val v, struct oci_seccomp_arg *a)
{
    int op = 0;
    REQ_UINT(w, v, "index", UINT32_MAX, a->index);
    REQ_UINT(w, v, "value", UINT64_MAX, a->value);
    bool has;
    uint64_t two = 0;
    if (get_uint(w, v, "valueTwo", UINT64_MAX, &has, &two) < 0)
        return -1;
    a->value_two = two;
    if (get_enum(w, v, "op", seccomp_ops, "seccomp operator", true, NULL, &op) < 0)
        return -1;
    a->op = (enum oci_seccomp_op)op;
    return 0;
}
ELEMENT_PARSER(parse_seccomp_arg, struct oci_seccomp_arg)

static int parse_seccomp_syscall(struct walk *w, yajl_val v, struct oci_seccomp_syscall *s)
{
    int action = 0;
    if (get_string_array(w, v, "names", &s->names, &s->n_names) < 0)
        return -1;
    if (s->names == NULL)
        return fail_at(w, "names", "required");
    if (get_enum(w, v, "action", seccomp_actions, "seccomp action", true, NULL, &action) < 0)
        return -1;
    s->action = (enum oci_seccomp_action)action;
    OPT_UINT(w, v, "errnoRet", UINT32_MAX, s, errno_ret);
    if (GET_OBJECT_ARRAY(w, v, "args", parse_seccomp_arg, s->args, s->n_args) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_seccomp_syscall, struct oci_seccomp_syscall)

static int parse_seccomp(struct walk *w, yajl_val v, struct oci_seccomp *s)
{
    int action = 0;
    if (get_enum(w, v, "defaultAction", seccomp_actions, "seccomp action", true, NULL, &action) < 0)
        return -1;
    s->default_action = (enum oci_seccomp_action)action;
    OPT_UINT(w, v, "defaultErrnoRet", UINT32_MAX, s, default_errno_ret);
    if (get_string_array(w, v, "architectures", &s->architectures, &s->n_architectures) < 0
        || get_string_array(w, v, "flags", &s->flags, &s->n_flags) < 0
        || get_string(w, v, "listenerPath", &s->listener_path) < 0
        || get_string(w, v, "listenerMetadata", &s->listener_metadata) < 0)
        return -1;
    if (GET_OBJECT_ARRAY(w, v, "syscalls", parse_seccomp_syscall, s->syscalls, s->n_syscalls) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_seccomp, struct oci_seccomp)

/* ---- linux ---- */

static int parse_namespace(struct walk *w, yajl_val v, struct oci_namespace *ns)
{
    if (get_enum(w, v, "type", namespace_types, "namespace type", true, &ns->type_name, &ns->type) < 0)
        return -1;
    if (get_string(w, v, "path", &ns->path) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_namespace, struct oci_namespace)

static int parse_device(struct walk *w, yajl_val v, struct oci_device *d)
{
    char *type = NULL;
    if (get_required_string(w, v, "path", &d->path) < 0 || get_required_string(w, v, "type", &type) < 0)
        return -1;
    if (strlen(type) != 1 || strchr("cbup", type[0]) == NULL)
        return fail_at(w, "type", "unknown device type \"%s\" (expected \"c\", \"b\", \"u\" or \"p\")", type);
    d->type = type[0];
    bool has_major, has_minor;
    if (get_int(w, v, "major", 0, INT64_MAX, &has_major, &d->major) < 0
        || get_int(w, v, "minor", 0, INT64_MAX, &has_minor, &d->minor) < 0)
        return -1;
    /* FIFOs have no device number; the others need both. */
    if (d->type != 'p' && !has_major)
        return fail_at(w, "major", "required for device type \"%c\"", d->type);
    if (d->type != 'p' && !has_minor)
        return fail_at(w, "minor", "required for device type \"%c\"", d->type);
    OPT_UINT(w, v, "fileMode", 07777, d, file_mode);
    OPT_UINT(w, v, "uid", UINT32_MAX, d, uid);
    OPT_UINT(w, v, "gid", UINT32_MAX, d, gid);
    return 0;
}
ELEMENT_PARSER(parse_device, struct oci_device)

static int parse_personality(struct walk *w, yajl_val v, struct oci_linux *l)
{
    if (get_required_string(w, v, "domain", &l->personality_domain) < 0)
        return -1;
    if (strcmp(l->personality_domain, "LINUX") != 0 && strcmp(l->personality_domain, "LINUX32") != 0)
        return fail_at(w, "domain", "unknown personality domain \"%s\" (expected \"LINUX\" or \"LINUX32\")",
                       l->personality_domain);
    if (get_string_array(w, v, "flags", &l->personality_flags, &l->n_personality_flags) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_personality, struct oci_linux)

static int parse_time_offset(struct walk *w, yajl_val v, struct oci_time_offset *t)
{
    bool has;
    int64_t secs = 0;
    uint64_t nanosecs = 0;
    if (get_int(w, v, "secs", INT64_MIN, INT64_MAX, &has, &secs) < 0)
        return -1;
    if (get_uint(w, v, "nanosecs", 999999999, &has, &nanosecs) < 0)
        return -1;
    t->secs = secs;
    t->nanosecs = (uint32_t)nanosecs;
    return 0;
}
ELEMENT_PARSER(parse_time_offset, struct oci_time_offset)

static int parse_time_offsets(struct walk *w, yajl_val v, struct oci_linux *l)
{
    if (get_sub_object(w, v, "boottime", parse_time_offset_any, &l->boottime,
                       &l->has_boottime_offset) < 0
        || get_sub_object(w, v, "monotonic", parse_time_offset_any, &l->monotonic,
                          &l->has_monotonic_offset) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_time_offsets, struct oci_linux)

static int parse_linux(struct walk *w, yajl_val v, struct oci_linux *l)
{
    if (GET_OBJECT_ARRAY(w, v, "namespaces", parse_namespace, l->namespaces, l->n_namespaces) < 0)
        return -1;
    for (size_t i = 0; i < l->n_namespaces; i++)
        for (size_t j = 0; j < i; j++)
            if (l->namespaces[i].type == l->namespaces[j].type) {
                size_t saved = path_push_key(w, "namespaces");
                path_push_index(w, i);
                fail(w, "duplicate namespace type \"%s\"", l->namespaces[i].type_name);
                path_pop(w, saved);
                return -1;
            }
    if (GET_OBJECT_ARRAY(w, v, "uidMappings", parse_idmap, l->uid_mappings, l->n_uid_mappings) < 0
        || GET_OBJECT_ARRAY(w, v, "gidMappings", parse_idmap, l->gid_mappings, l->n_gid_mappings) < 0
        || GET_OBJECT_ARRAY(w, v, "devices", parse_device, l->devices, l->n_devices) < 0)
        return -1;
    if (get_string(w, v, "cgroupsPath", &l->cgroups_path) < 0)
        return -1;

    yajl_val sub;
    if (get_object(w, v, "resources", &sub) < 0)
        return -1;
    if (sub) {
        l->resources = spec_alloc(w->spec, sizeof(*l->resources));
        if (get_sub_object(w, v, "resources", parse_resources_any, l->resources, NULL) < 0)
            return -1;
    }
    if (get_string_map(w, v, "sysctl", &l->sysctl, &l->n_sysctl) < 0)
        return -1;
    if (get_object(w, v, "seccomp", &sub) < 0)
        return -1;
    if (sub) {
        l->seccomp = spec_alloc(w->spec, sizeof(*l->seccomp));
        if (get_sub_object(w, v, "seccomp", parse_seccomp_any, l->seccomp, NULL) < 0)
            return -1;
    }

    if (get_string(w, v, "rootfsPropagation", &l->rootfs_propagation) < 0)
        return -1;
    if (l->rootfs_propagation) {
        const char *const *p;
        for (p = rootfs_propagations; *p; p++)
            if (strcmp(*p, l->rootfs_propagation) == 0)
                break;
        if (*p == NULL)
            return fail_at(w, "rootfsPropagation",
                           "unknown propagation \"%s\" (expected one of private, rprivate, slave, rslave, "
                           "shared, rshared, unbindable, runbindable)",
                           l->rootfs_propagation);
    }
    if (get_string_array(w, v, "maskedPaths", &l->masked_paths, &l->n_masked_paths) < 0
        || get_string_array(w, v, "readonlyPaths", &l->readonly_paths, &l->n_readonly_paths) < 0
        || get_string(w, v, "mountLabel", &l->mount_label) < 0)
        return -1;
    if (get_sub_object(w, v, "personality", parse_personality_any, l, &l->has_personality) < 0)
        return -1;
    if (get_sub_object(w, v, "timeOffsets", parse_time_offsets_any, l, &l->has_time_offsets) < 0)
        return -1;
    /* intelRdt: accepted and ignored (no RDT support). */
    return 0;
}
ELEMENT_PARSER(parse_linux, struct oci_linux)

/* ---- the document ---- */

static int parse_root(struct walk *w, yajl_val v, struct oci_spec *spec)
{
    if (get_required_string(w, v, "path", &spec->root_path) < 0)
        return -1;
    if (get_bool(w, v, "readonly", NULL, &spec->root_readonly) < 0)
        return -1;
    return 0;
}
ELEMENT_PARSER(parse_root, struct oci_spec)

static int parse_config(struct walk *w, yajl_val v, struct oci_spec *spec)
{
    if (get_required_string(w, v, "ociVersion", &spec->oci_version) < 0)
        return -1;
    if (strncmp(spec->oci_version, "1.", 2) != 0)
        return fail_at(w, "ociVersion", "unsupported version \"%s\" (agentcage supports 1.x)", spec->oci_version);
    if (get_sub_object(w, v, "root", parse_root_any, spec, NULL) < 0)
        return -1;

    yajl_val sub;
    if (get_object(w, v, "process", &sub) < 0)
        return -1;
    if (sub) {
        spec->process = spec_alloc(spec, sizeof(*spec->process));
        if (get_sub_object(w, v, "process", parse_process_any, spec->process, NULL) < 0)
            return -1;
    }
    if (get_string(w, v, "hostname", &spec->hostname) < 0 || get_string(w, v, "domainname", &spec->domainname) < 0)
        return -1;
    if (GET_OBJECT_ARRAY(w, v, "mounts", parse_mount, spec->mounts, spec->n_mounts) < 0)
        return -1;
    if (get_sub_object(w, v, "hooks", parse_hooks_any, &spec->hooks, NULL) < 0)
        return -1;
    if (get_string_map(w, v, "annotations", &spec->annotations, &spec->n_annotations) < 0)
        return -1;
    if (get_object(w, v, "linux", &sub) < 0)
        return -1;
    if (sub) {
        spec->linux = spec_alloc(spec, sizeof(*spec->linux));
        if (get_sub_object(w, v, "linux", parse_linux_any, spec->linux, NULL) < 0)
            return -1;
    }
    return 0;
}

static int parse_process_document(struct walk *w, yajl_val v, struct oci_spec *spec)
{
    spec->process = spec_alloc(spec, sizeof(*spec->process));
    return parse_process(w, v, spec->process);
}

static int parse_resources_document(struct walk *w, yajl_val v, struct oci_spec *spec)
{
    spec->linux = spec_alloc(spec, sizeof(*spec->linux));
    spec->linux->resources = spec_alloc(spec, sizeof(*spec->linux->resources));
    return parse_resources(w, v, spec->linux->resources);
}

/* yajl_tree recurses per nesting level: refuse deep documents before
 * handing them over. Strings are skipped so brackets inside them do not
 * count; malformed input is left for yajl to report. */
static bool json_too_deep(const char *json, size_t len)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = json[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > SPEC_MAX_DEPTH)
                return true;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return false;
}

static void yajl_tree_freep(yajl_val *v)
{
    if (*v)
        yajl_tree_free(*v);
}

typedef int (*parse_document_fn)(struct walk *w, yajl_val v, struct oci_spec *spec);

static int convert_tree(yajl_val tree, const char *what, parse_document_fn parse_top, struct oci_spec **out,
                        ac_error_t *err)
{
    if (!YAJL_IS_OBJECT(tree))
        return ac_error(err, 0, "%s: expected a JSON object at the top level", what);
    cleanup_spec struct oci_spec *spec = spec_new_empty();
    struct walk w = { .spec = spec, .what = what, .err = err };
    if (parse_top(&w, tree, spec) < 0)
        return -1;
    *out = ac_steal_ptr(&spec);
    return 0;
}

int spec_parse_json_tree(const char *json, size_t len, const char *what, yajl_val *out, ac_error_t *err)
{
    if (what == NULL)
        what = "config.json";
    *out = NULL;
    if (json == NULL)
        len = 0, json = "";
    if (len > SPEC_MAX_SIZE)
        return ac_error(err, 0, "%s: document too large (%zu bytes, the limit is %u MiB)", what, len,
                        SPEC_MAX_SIZE / (1024 * 1024));
    if (memchr(json, '\0', len) != NULL)
        return ac_error(err, 0, "%s: not valid JSON: contains a NUL byte", what);
    if (json_too_deep(json, len))
        return ac_error(err, 0, "%s: not valid JSON: nested deeper than %d levels", what, SPEC_MAX_DEPTH);

    char errbuf[1024] = "";
    __attribute__((cleanup(yajl_tree_freep))) yajl_val tree = json_tree_parse(json, len, errbuf, sizeof(errbuf));
    if (tree == NULL) {
        /* yajl's message is several lines (message, excerpt, arrow); keep the first. */
        errbuf[strcspn(errbuf, "\n")] = '\0';
        size_t n = strlen(errbuf);
        while (n > 0 && (errbuf[n - 1] == ' ' || errbuf[n - 1] == '\t'))
            errbuf[--n] = '\0';
        return ac_error(err, 0, "%s: not valid JSON: %s", what, errbuf[0] ? errbuf : "parse error");
    }
    if (!YAJL_IS_OBJECT(tree))
        return ac_error(err, 0, "%s: expected a JSON object at the top level", what);
    *out = ac_steal_ptr(&tree);
    return 0;
}

static int parse_document(const char *json, size_t len, const char *what, parse_document_fn parse_top,
                          struct oci_spec **out, ac_error_t *err)
{
    if (what == NULL)
        what = "config.json";
    *out = NULL;
    __attribute__((cleanup(yajl_tree_freep))) yajl_val tree = NULL;
    if (spec_parse_json_tree(json, len, what, &tree, err) < 0)
        return -1;
    return convert_tree(tree, what, parse_top, out, err);
}

int spec_parse_tree(yajl_val tree, const char *what, struct oci_spec **out, ac_error_t *err)
{
    *out = NULL;
    return convert_tree(tree, what ? what : "config.json", parse_config, out, err);
}

int spec_parse(const char *json, size_t len, const char *what, struct oci_spec **out, ac_error_t *err)
{
    return parse_document(json, len, what, parse_config, out, err);
}

int spec_parse_process(const char *json, size_t len, const char *what, struct oci_spec **out, ac_error_t *err)
{
    return parse_document(json, len, what ? what : "process.json", parse_process_document, out, err);
}

int spec_parse_resources(const char *json, size_t len, const char *what, struct oci_spec **out, ac_error_t *err)
{
    return parse_document(json, len, what ? what : "resources", parse_resources_document, out, err);
}

int spec_load(const char *path, struct oci_spec **out, ac_error_t *err)
{
    cleanup_free char *text = NULL;
    size_t len = 0;
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "open %s", path);
    /* Refuse oversized files without reading them into memory. */
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > SPEC_MAX_SIZE)
        return ac_error(err, 0, "%s: document too large (%lld bytes, the limit is %u MiB)", path,
                        (long long)st.st_size, SPEC_MAX_SIZE / (1024 * 1024));
    if (read_all_fd(fd, &text, &len, err) < 0)
        return ac_error_wrap(err, "%s", path);
    return spec_parse(text, len, path, out, err);
}

const char *spec_annotation(const struct oci_spec *spec, const char *key)
{
    if (spec == NULL || key == NULL)
        return NULL;
    for (size_t i = 0; i < spec->n_annotations; i++)
        if (strcmp(spec->annotations[i].key, key) == 0)
            return spec->annotations[i].value;
    return NULL;
}

const struct oci_namespace *spec_namespace(const struct oci_spec *spec, int type)
{
    if (spec == NULL || spec->linux == NULL)
        return NULL;
    for (size_t i = 0; i < spec->linux->n_namespaces; i++)
        if (spec->linux->namespaces[i].type == type)
            return &spec->linux->namespaces[i];
    return NULL;
}
