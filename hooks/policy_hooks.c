/* Adding the policy hooks and proxy variables to a config.json tree (see
 * policy_hooks.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"
#include "hooks/audit.h"
#include "hooks/policy_hooks.h"

/* Our hooks answer within milliseconds; a stuck one must not hang create. */
#define POLICY_HOOK_TIMEOUT 10

static yajl_val node_new(yajl_type type)
{
    yajl_val v = xcalloc(1, sizeof(*v));
    v->type = type;
    return v;
}

static yajl_val node_string(const char *s)
{
    yajl_val v = node_new(yajl_t_string);
    v->u.string = xstrdup(s);
    return v;
}

static yajl_val node_int(long long n)
{
    yajl_val v = node_new(yajl_t_number);
    v->u.number.i = n;
    v->u.number.d = (double)n;
    v->u.number.r = xasprintf("%lld", n);
    v->u.number.flags = YAJL_NUMBER_INT_VALID | YAJL_NUMBER_DOUBLE_VALID;
    return v;
}

static void array_insert(yajl_val arr, size_t at, yajl_val v)
{
    size_t n = arr->u.array.len;
    arr->u.array.values = xrealloc(arr->u.array.values, (n + 1) * sizeof(yajl_val));
    memmove(arr->u.array.values + at + 1, arr->u.array.values + at, (n - at) * sizeof(yajl_val));
    arr->u.array.values[at] = v;
    arr->u.array.len = n + 1;
}

static void object_put(yajl_val obj, const char *key, yajl_val v)
{
    size_t n = obj->u.object.len;
    obj->u.object.keys = xrealloc(obj->u.object.keys, (n + 1) * sizeof(char *));
    obj->u.object.values = xrealloc(obj->u.object.values, (n + 1) * sizeof(yajl_val));
    obj->u.object.keys[n] = xstrdup(key);
    obj->u.object.values[n] = v;
    obj->u.object.len = n + 1;
}

static yajl_val object_get(yajl_val obj, const char *key)
{
    for (size_t i = 0; i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], key) == 0)
            return obj->u.object.values[i];
    return NULL;
}

/* obj[key] as the given container type, created when missing; NULL when it
 * exists with another type. */
static yajl_val object_child(yajl_val obj, const char *key, yajl_type type)
{
    yajl_val v = object_get(obj, key);
    if (!v) {
        v = node_new(type);
        object_put(obj, key, v);
    }
    return v->type == type ? v : NULL;
}

/* {"path": PATH, "args": [ARGS...], "timeout": N} */
static yajl_val hook_node(const char *path, const char *const *args)
{
    yajl_val hook = node_new(yajl_t_object), argv = node_new(yajl_t_array);
    object_put(hook, "path", node_string(path));
    for (size_t i = 0; args[i]; i++)
        array_insert(argv, argv->u.array.len, node_string(args[i]));
    object_put(hook, "args", argv);
    object_put(hook, "timeout", node_int(POLICY_HOOK_TIMEOUT));
    return hook;
}

/* Drop the hooks of list that run path: ours are put back in their place,
 * so adding them twice (mapping an effective config again) changes nothing. */
static void remove_hooks_running(yajl_val list, const char *path)
{
    for (size_t i = 0; i < list->u.array.len;) {
        yajl_val h = list->u.array.values[i];
        yajl_val p = YAJL_IS_OBJECT(h) ? object_get(h, "path") : NULL;
        if (p && YAJL_IS_STRING(p) && strcmp(p->u.string, path) == 0) {
            yajl_tree_free(h);
            memmove(list->u.array.values + i, list->u.array.values + i + 1,
                    (list->u.array.len - i - 1) * sizeof(yajl_val));
            list->u.array.len--;
        } else {
            i++;
        }
    }
}

const char *const policy_proxy_env[] = {
    "HTTP_PROXY=" EGRESS_PROXY_URL, "HTTPS_PROXY=" EGRESS_PROXY_URL, "http_proxy=" EGRESS_PROXY_URL,
    "https_proxy=" EGRESS_PROXY_URL, "NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1", NULL,
};

bool policy_proxy_env_name(const char *entry)
{
    size_t n = strcspn(entry, "=");
    for (size_t i = 0; policy_proxy_env[i]; i++)
        if (strncmp(policy_proxy_env[i], entry, n) == 0 && policy_proxy_env[i][n] == '=')
            return true;
    return false;
}

/* Replace NAME=... entries of env by NAME=value. */
static void env_set(yajl_val env, const char *name, const char *value)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < env->u.array.len;) {
        yajl_val e = env->u.array.values[i];
        if (YAJL_IS_STRING(e) && strncmp(e->u.string, name, len) == 0 && e->u.string[len] == '=') {
            yajl_tree_free(e);
            memmove(env->u.array.values + i, env->u.array.values + i + 1,
                    (env->u.array.len - i - 1) * sizeof(yajl_val));
            env->u.array.len--;
        } else {
            i++;
        }
    }
    cleanup_free char *entry = xasprintf("%s=%s", name, value);
    array_insert(env, env->u.array.len, node_string(entry));
}

static int proxy_env_set(yajl_val env)
{
    for (size_t i = 0; policy_proxy_env[i]; i++) {
        const char *e = policy_proxy_env[i];
        size_t n = strcspn(e, "=");
        char name[32];
        snprintf(name, sizeof(name), "%.*s", (int)n, e);
        env_set(env, name, e + n + 1);
    }
    return 0;
}

int policy_hooks_add(yajl_val config, int tier, const char *hooks_dir, const struct tier_operator *op,
                     ac_error_t *err)
{
    if (tier < 2)
        return 0;
    if (!config || !YAJL_IS_OBJECT(config))
        return ac_error(err, 0, "policy hooks: config.json is not an object");
    const char *log = op && op->audit_log ? op->audit_log : AUDIT_DEFAULT_LOG;
    cleanup_free char *egress = helper_path(hooks_dir, "agentcage-egress");
    /* an older effective config may still carry the approval hook program */
    cleanup_free char *approve = helper_path(hooks_dir, "agentcage-approve");

    yajl_val hooks = object_child(config, "hooks", yajl_t_object);
    if (!hooks)
        return ac_error(err, 0, "policy hooks: `hooks` is not an object");
    yajl_val create_runtime = object_child(hooks, "createRuntime", yajl_t_array);
    yajl_val poststop = object_child(hooks, "poststop", yajl_t_array);
    if (!create_runtime || !poststop)
        return ac_error(err, 0, "policy hooks: `hooks.createRuntime` or `hooks.poststop` is not an array");
    yajl_val process = object_get(config, "process");
    if (process && !YAJL_IS_OBJECT(process))
        return ac_error(err, 0, "policy hooks: `process` is not an object");
    yajl_val env = process ? object_child(process, "env", yajl_t_array) : NULL;
    if (process && !env)
        return ac_error(err, 0, "policy hooks: `process.env` is not an array");

    remove_hooks_running(create_runtime, approve);
    remove_hooks_running(create_runtime, egress);
    remove_hooks_running(poststop, egress);
    /* the operator's egress settings travel as the hook's flags */
    const char *start_args[24] = {egress, "--audit-log", log};
    size_t n = 3;
    char denials[24], ask_timeout[24], rate[24], bytes[24];
    snprintf(denials, sizeof(denials), "%lld", (long long)(op ? op->max_denials : 20));
    start_args[n++] = "--max-denials";
    start_args[n++] = denials;
    if (op && op->egress_allow_cidr) {
        start_args[n++] = "--allow-cidr";
        start_args[n++] = op->egress_allow_cidr;
    }
    if (op && op->egress_deep_wildcards)
        start_args[n++] = "--deep-wildcards";
    if (op && op->egress_max_rate > 0) {
        snprintf(rate, sizeof(rate), "%lld", (long long)op->egress_max_rate);
        start_args[n++] = "--max-rate";
        start_args[n++] = rate;
    }
    if (op && op->egress_max_bytes > 0) {
        snprintf(bytes, sizeof(bytes), "%lld", (long long)op->egress_max_bytes);
        start_args[n++] = "--max-bytes";
        start_args[n++] = bytes;
    }
    if (op && op->egress_ask) {
        snprintf(ask_timeout, sizeof(ask_timeout), "%lld", (long long)(op->egress_ask_timeout_ms / 1000));
        start_args[n++] = "--ask";
        start_args[n++] = "--ask-timeout";
        start_args[n++] = ask_timeout;
        start_args[n++] = "--approvals-dir";
        start_args[n++] = op->approvals_dir ? op->approvals_dir : APPROVALS_DEFAULT_DIR;
    }
    start_args[n] = NULL;
    array_insert(create_runtime, 0, hook_node(egress, start_args));
    const char *stop_args[] = {egress, "--stop", "--audit-log", log, NULL};
    array_insert(poststop, poststop->u.array.len, hook_node(egress, stop_args));

    return env ? proxy_env_set(env) : 0;
}

int policy_proxy_env_add(yajl_val config, ac_error_t *err)
{
    yajl_val process = config && YAJL_IS_OBJECT(config) ? object_get(config, "process") : NULL;
    if (process == NULL)
        return 0;
    yajl_val env = YAJL_IS_OBJECT(process) ? object_child(process, "env", yajl_t_array) : NULL;
    if (env == NULL)
        return ac_error(err, 0, "policy hooks: `process.env` is not an array");
    return proxy_env_set(env);
}
