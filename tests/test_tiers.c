/* Unit tests of the tier mapping (tier-annotations/): golden JSON-in,
 * JSON-out cases, plus the unit and flag parsers. No root needed.
 *
 * Every directory tests/tiers/<case>/ is one test:
 *   config.json        the input, or
 *   base               one line: a file under tests/data/ to start from
 *   annotations        optional: key=value lines added to the annotations
 *                      (-key= removes one)
 *   flags              optional: operator flags, name=value lines
 *                      ("default-tier=1", "max-memory=256m")
 *   expected.json      the effective config.json (pretty), and
 *   expected.decisions the decision lines, or
 *   expected.error     the refusal, one line
 * UPDATE_GOLDEN=1 build/tests/test_tiers writes the expected files from the
 * current output (review them with git diff before committing). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#define TESTLIB_NO_MAIN
#include "runtime/util/utils.h"
#include "spec/spec.h"
#include "tier-annotations/tier_internal.h"
#include "tests/testlib.h"

static char tests_dir[PATH_MAX];

/* tests/, found from the current directory or from the binary's place. */
static void find_tests_dir(void)
{
    if (access("tests/tiers", R_OK) == 0) {
        snprintf(tests_dir, sizeof(tests_dir), "tests");
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(tests_dir, sizeof(tests_dir), "%.*s/../../tests", (int)(sizeof(tests_dir) - 20), exe);
    }
}

/* NULL when absent */
static char *read_opt(const char *dir, const char *name)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, name);
    char *text = NULL;
    size_t len;
    ac_error_t err = NULL;
    if (read_all_file(path, &text, &len, &err) < 0) {
        ac_error_free(&err);
        return NULL;
    }
    return text;
}

static void write_golden(const char *dir, const char *name, const char *text)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        FAIL("write %s: %s", path, strerror(errno));
        return;
    }
    fputs(text, f);
    fclose(f);
}

static void remove_golden(const char *dir, const char *name)
{
    cleanup_free char *path = xasprintf("%s/%s", dir, name);
    unlink(path);
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

/* key=value lines; calls fn for each. */
static bool each_setting(char *text, bool (*fn)(void *, const char *, const char *), void *arg)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *eq = strchr(line, '=');
        if (eq == NULL) {
            FAIL("expected key=value, got `%s`", line);
            return false;
        }
        *eq = '\0';
        if (!fn(arg, line, eq + 1))
            return false;
    }
    return true;
}

/* key=value sets an annotation; -key= removes one the base has */
static bool add_annotation(void *arg, const char *key, const char *value)
{
    if (key[0] == '-')
        tj_remove(tj_get_object((yajl_val)arg, "annotations"), key + 1);
    else
        tj_set(tj_get_object((yajl_val)arg, "annotations"), key, tj_new_string(value));
    return true;
}

static bool set_flag(void *arg, const char *name, const char *value)
{
    cleanup_error ac_error_t err = NULL;
    /* values must outlive the operator struct: kept for the test's life,
     * reachable from here */
    static char **kept;
    static size_t n_kept;
    kept = xrealloc(kept, (n_kept + 1) * sizeof(char *));
    kept[n_kept] = xstrdup(value);
    int r = tier_operator_set(arg, name, kept[n_kept++], &err);
    if (r <= 0) {
        cleanup_free char *msg = err ? ac_error_string(err) : xstrdup("not a tier flag");
        FAIL("flag %s=%s: %s", name, value, msg);
        return false;
    }
    return true;
}

static char *join_decisions(const struct tier_decisions *d)
{
    char *out = xstrdup("");
    for (size_t i = 0; i < d->n; i++) {
        char *next = xasprintf("%s%s\n", out, d->lines[i]);
        free(out);
        out = next;
    }
    return out;
}

static void compare(const char *dir, const char *name, const char *actual, bool update)
{
    if (update) {
        write_golden(dir, name, actual);
        return;
    }
    cleanup_free char *expected = read_opt(dir, name);
    if (expected == NULL) {
        FAIL("%s/%s is missing (UPDATE_GOLDEN=1 writes it)", dir, name);
        return;
    }
    if (strcmp(expected, actual) == 0)
        return;
    /* the first differing line says most */
    const char *e = expected, *a = actual;
    unsigned line = 1;
    while (*e && *e == *a) {
        if (*e == '\n')
            line++;
        e++, a++;
    }
    FAIL("%s/%s differs at line %u: expected `%.*s`, got `%.*s`", dir, name, line, (int)strcspn(e, "\n"), e,
         (int)strcspn(a, "\n"), a);
}

static yajl_val load_input(const char *dir)
{
    cleanup_free char *text = read_opt(dir, "config.json");
    if (text == NULL) {
        cleanup_free char *base = read_opt(dir, "base");
        if (base == NULL) {
            FAIL("%s: neither config.json nor base", dir);
            return NULL;
        }
        chomp(base);
        cleanup_free char *path = xasprintf("%s/data/%s", tests_dir, base);
        size_t len;
        cleanup_error ac_error_t err = NULL;
        if (read_all_file(path, &text, &len, &err) < 0) {
            FAIL("%s: base %s unreadable", dir, path);
            return NULL;
        }
    }
    yajl_val tree = NULL;
    cleanup_error ac_error_t err = NULL;
    if (spec_parse_json_tree(text, strlen(text), "config.json", &tree, &err) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        FAIL("%s: %s", dir, msg);
        return NULL;
    }
    cleanup_free char *annotations = read_opt(dir, "annotations");
    if (annotations && !each_setting(annotations, add_annotation, tree)) {
        yajl_tree_free(tree);
        return NULL;
    }
    return tree;
}

static void run_case(const char *dir)
{
    bool update = getenv("UPDATE_GOLDEN") && strcmp(getenv("UPDATE_GOLDEN"), "1") == 0;
    struct tier_operator op;
    tier_operator_init(&op);
    op.hooks_dir = "/usr/lib/agentcage"; /* a fixed path, so the goldens hold on any clone */
    cleanup_free char *flags = read_opt(dir, "flags");
    if (flags && !each_setting(flags, set_flag, &op))
        return;
    yajl_val tree = load_input(dir);
    if (tree == NULL)
        return;
    struct tier_decisions d = {0};
    cleanup_error ac_error_t err = NULL;
    int tier = tier_map(tree, "/bundle", &op, &d, &err);
    if (tier < TIER_NONE) {
        cleanup_free char *msg = ac_error_string(err);
        cleanup_free char *line = xasprintf("%s\n", msg);
        if (update) {
            remove_golden(dir, "expected.json");
            remove_golden(dir, "expected.decisions");
        } else {
            cleanup_free char *expected = read_opt(dir, "expected.error");
            if (expected == NULL)
                FAIL("%s: refused: %s", dir, msg);
        }
        compare(dir, "expected.error", line, update);
    } else {
        cleanup_free char *json = tier_tree_to_json(tree, true);
        cleanup_free char *json_nl = xasprintf("%s\n", json);
        cleanup_free char *lines = join_decisions(&d);
        if (update)
            remove_golden(dir, "expected.error");
        compare(dir, "expected.json", json_nl, update);
        compare(dir, "expected.decisions", lines, update);
        /* create must accept what the mapping writes */
        struct oci_spec *spec = NULL;
        cleanup_error ac_error_t perr = NULL;
        if (spec_parse_tree(tree, "effective config.json", &spec, &perr) < 0) {
            cleanup_free char *msg = ac_error_string(perr);
            FAIL("%s: the effective config does not parse: %s", dir, msg);
        } else {
            spec_free(spec);
        }
        /* the mapping is idempotent: the effective config maps to itself */
        if (tier != TIER_NONE) {
            struct tier_decisions d2 = {0};
            cleanup_error ac_error_t err2 = NULL;
            int again = tier_map(tree, "/bundle", &op, &d2, &err2);
            cleanup_free char *json2 = tier_tree_to_json(tree, true);
            CHECK_EQ_INT(again, tier);
            if (json2 == NULL || strcmp(json, json2) != 0)
                FAIL("%s: mapping the effective config again changed it", dir);
            tier_decisions_free(&d2);
        }
    }
    tier_decisions_free(&d);
    yajl_tree_free(tree);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* ---- parsers ---- */

TEST(tiers_json_loads)
{
    const struct tier_defs *defs;
    cleanup_error ac_error_t err = NULL;
    REQUIRE(tier_defs_get(&defs, &err) == 0);
    CHECK_EQ_STR(defs->tier[0].name, "read");
    CHECK_EQ_STR(defs->tier[3].name, "irreversible");
    CHECK(defs->tier[0].binds_readonly);
    CHECK(!defs->tier[1].binds_readonly);
    CHECK_EQ_INT(defs->tier[1].limits.memory, 512 << 20);
    CHECK_EQ_INT(defs->tier[1].limits.cpus_milli, 1000);
    CHECK_EQ_INT(defs->tier[1].limits.pids, 64);
    CHECK_EQ_INT(defs->tier[1].limits.workspace, 1 << 30);
    CHECK_EQ_INT(defs->tier[1].limits.timeout_ms, 5 * 60 * 1000);
    CHECK_EQ_INT(defs->tier[0].limits.workspace, 64 << 20);
    CHECK(defs->tier[3].limits.memory < defs->tier[2].limits.memory);
    CHECK(tier_strv_has(&defs->refused_caps, "CAP_SYS_ADMIN"));
    CHECK(tier_strv_has(&defs->masked_paths, "/proc/kcore"));
    CHECK_EQ_INT(defs->n_devices, 8);
}

TEST(parse_units)
{
    int64_t n;
    CHECK(tier_parse_size("512m", &n) == 0 && n == 512 << 20);
    CHECK(tier_parse_size("1g", &n) == 0 && n == 1 << 30);
    CHECK(tier_parse_size("64MiB", &n) == 0 && n == 64 << 20);
    CHECK(tier_parse_size("4096", &n) == 0 && n == 4096);
    CHECK(tier_parse_size("1.5g", &n) < 0);
    CHECK(tier_parse_size("-1", &n) < 0);
    CHECK(tier_parse_size("99999999999999999999", &n) < 0);
    CHECK(tier_parse_size("9999999999999t", &n) < 0);
    CHECK(tier_parse_duration("30s", &n) == 0 && n == 30000);
    CHECK(tier_parse_duration("5m", &n) == 0 && n == 300000);
    CHECK(tier_parse_duration("1h", &n) == 0 && n == 3600000);
    CHECK(tier_parse_duration("250ms", &n) == 0 && n == 250);
    CHECK(tier_parse_duration("90", &n) == 0 && n == 90000);
    CHECK(tier_parse_duration("5 m", &n) < 0);
    CHECK(tier_parse_cpus("1.5", &n) == 0 && n == 1500);
    CHECK(tier_parse_cpus("0.25", &n) == 0 && n == 250);
    CHECK(tier_parse_cpus("2", &n) == 0 && n == 2000);
    CHECK(tier_parse_cpus("0.0001", &n) < 0);
    CHECK(tier_parse_cpus("1.", &n) < 0);
    CHECK_EQ_INT(tier_parse_name("2"), 2);
    CHECK_EQ_INT(tier_parse_name("irreversible"), 3);
    CHECK_EQ_INT(tier_parse_name("Read"), 0);
    CHECK_EQ_INT(tier_parse_name("4"), -1);
    CHECK_EQ_INT(tier_parse_name(""), -1);
    char b[32];
    CHECK_EQ_STR(tier_format_size(512 << 20, b, sizeof(b)), "512m");
    CHECK_EQ_STR(tier_format_cpus(1500, b, sizeof(b)), "1.5");
    CHECK_EQ_STR(tier_format_duration(120000, b, sizeof(b)), "2m");
}

TEST(operator_flags)
{
    struct tier_operator op;
    tier_operator_init(&op);
    cleanup_error ac_error_t err = NULL;
    CHECK_EQ_INT(op.default_tier, TIER_NONE);
    CHECK_EQ_UINT(op.allowed_tiers, 0xf);
    CHECK_EQ_INT(tier_operator_set(&op, "default-tier", "write", &err), 1);
    CHECK_EQ_INT(op.default_tier, 1);
    CHECK_EQ_INT(tier_operator_set(&op, "allowed-tiers", "0,write", &err), 1);
    CHECK_EQ_UINT(op.allowed_tiers, 0x3);
    CHECK_EQ_INT(tier_operator_set(&op, "max-memory", "1g", &err), 1);
    CHECK_EQ_INT(op.max_memory, 1 << 30);
    CHECK_EQ_INT(tier_operator_set(&op, "max-cpus", "0.5", &err), 1);
    CHECK_EQ_INT(op.max_cpus_milli, 500);
    CHECK_EQ_INT(tier_operator_set(&op, "max-timeout", "30s", &err), 1);
    CHECK_EQ_INT(op.max_timeout_ms, 30000);
    CHECK_EQ_INT(tier_operator_set(&op, "max-pids", "10", &err), 1);
    CHECK_EQ_INT(op.max_pids, 10);
    CHECK_EQ_INT(tier_operator_set(&op, "root", "/x", &err), 0);
    CHECK_EQ_INT(tier_operator_set(&op, "max-memory", "lots", &err), -1);
    REQUIRE(err != NULL);
    CHECK(strstr(err->msg, "--max-memory") != NULL);
    ac_error_free(&err);
    CHECK_EQ_INT(tier_operator_set(&op, "allowed-tiers", "0,7", &err), -1);
    ac_error_free(&err);
    CHECK_EQ_INT(tier_operator_set(&op, "default-tier", "none", &err), 1);
    CHECK_EQ_INT(op.default_tier, TIER_NONE);
}

TEST(operator_file)
{
    char path[] = "/tmp/agentcage-test-tiers.XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *good = "# operator settings\n\ndefault-tier = 0   # read\nallowed-tiers=0,1\nmax-memory = 256m\n"
                       "audit-log = /tmp/audit.jsonl\n";
    REQUIRE(write(fd, good, strlen(good)) == (ssize_t)strlen(good));
    close(fd);
    struct tier_operator op;
    tier_operator_init(&op);
    cleanup_error ac_error_t err = NULL;
    CHECK_EQ_INT(tier_operator_load_file(&op, path, false, &err), 0);
    CHECK_EQ_INT(op.default_tier, 0);
    CHECK_EQ_UINT(op.allowed_tiers, 0x3);
    CHECK_EQ_INT(op.max_memory, 256 << 20);
    CHECK_EQ_STR(op.audit_log, "/tmp/audit.jsonl");
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("max-pids = 8\nmax-cpus = many\n", f);
    fclose(f);
    CHECK_EQ_INT(tier_operator_load_file(&op, path, false, &err), -1);
    if (err) {
        CHECK(strstr(err->msg, ":2: --max-cpus") != NULL);
        ac_error_free(&err);
    }
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("colour = blue\n", f);
    fclose(f);
    CHECK_EQ_INT(tier_operator_load_file(&op, path, false, &err), -1);
    if (err) {
        CHECK(strstr(err->msg, "unknown setting `colour`") != NULL);
        ac_error_free(&err);
    }
    unlink(path);
    CHECK_EQ_INT(tier_operator_load_file(&op, "/nonexistent/agentcage.conf", false, &err), 0);
}

TEST(tree_to_json_round_trip)
{
    const char *text = "{\"a\":[1,2.5,\"x/y\",true,false,null],\"b\":{\"c\":-3}}";
    yajl_val tree = yajl_tree_parse(text, NULL, 0);
    REQUIRE(tree != NULL);
    cleanup_free char *out = tier_tree_to_json(tree, false);
    CHECK_EQ_STR(out, text);
    yajl_tree_free(tree);
}

TEST(plain_without_tier_is_untouched)
{
    const char *text = "{\"ociVersion\":\"1.2.0\",\"annotations\":{\"io.agentcage.timeout\":\"1s\"}}";
    yajl_val tree = yajl_tree_parse(text, NULL, 0);
    REQUIRE(tree != NULL);
    struct tier_operator op;
    tier_operator_init(&op);
    struct tier_decisions d = {0};
    cleanup_error ac_error_t err = NULL;
    CHECK_EQ_INT(tier_map(tree, NULL, &op, &d, &err), TIER_NONE);
    CHECK_EQ_INT(d.n, 0);
    cleanup_free char *out = tier_tree_to_json(tree, false);
    CHECK_EQ_STR(out, text);
    yajl_tree_free(tree);
}

/* ---- cage integrity: what config.json and the annotations may ask for at
 * a tier. Each case is a small config built from pieces; want is a
 * substring of the refusal, or NULL when the tier must accept it. */

struct integrity_case {
    const char *label;
    const char *tier;     /* the annotation's value, as JSON (a string, a number, null) */
    const char *extra;    /* more top-level members, each with its leading comma */
    const char *linux;    /* more members of linux */
    const char *mounts;   /* more mounts, each with its leading comma */
    const char *flags;    /* operator settings: name=value;name=value */
    const char *want;
};

static char *integrity_config(const struct integrity_case *k)
{
    return xasprintf("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
                     "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"env\":[\"PATH=/bin\"]},"
                     "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"}%s],"
                     "\"annotations\":{\"io.agentcage.tier\":%s}%s,"
                     "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"network\"},"
                     "{\"type\":\"mount\"}]%s}}",
                     k->mounts ? k->mounts : "", k->tier ? k->tier : "\"1\"", k->extra ? k->extra : "",
                     k->linux ? k->linux : "");
}

static void run_integrity_cases(const struct integrity_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct integrity_case *k = &cases[i];
        cleanup_free char *text = integrity_config(k);
        char ebuf[256];
        yajl_val tree = yajl_tree_parse(text, ebuf, sizeof(ebuf));
        if (tree == NULL) {
            FAIL("%s: the test's JSON does not parse: %s", k->label, ebuf);
            continue;
        }
        struct tier_operator op;
        tier_operator_init(&op);
        op.hooks_dir = "/usr/lib/agentcage";
        cleanup_free char *flags = k->flags ? xstrdup(k->flags) : NULL;
        char *save = NULL;
        for (char *f = flags ? strtok_r(flags, ";", &save) : NULL; f; f = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(f, '=');
            *eq = '\0';
            cleanup_error ac_error_t ferr = NULL;
            if (tier_operator_set(&op, f, eq + 1, &ferr) <= 0)
                FAIL("%s: flag %s", k->label, f);
        }
        struct tier_decisions d = {0};
        cleanup_error ac_error_t err = NULL;
        int tier = tier_map(tree, "/bundle", &op, &d, &err);
        cleanup_free char *msg = err ? ac_error_string(err) : NULL;
        if (k->want == NULL && tier < 0)
            FAIL("%s: refused: %s", k->label, msg ? msg : "(no message)");
        else if (k->want && tier != -2)
            FAIL("%s: accepted (tier %d), expected a refusal with `%s`", k->label, tier, k->want);
        else if (k->want && (msg == NULL || strstr(msg, k->want) == NULL))
            FAIL("%s: refusal `%s` does not say `%s`", k->label, msg ? msg : "(none)", k->want);
        tier_decisions_free(&d);
        yajl_tree_free(tree);
    }
}

#define N_CASES(a) (sizeof(a) / sizeof(a[0]))

/* The mapping of a whole config text with default operator settings. */
static int map_text(const char *text)
{
    yajl_val tree = yajl_tree_parse(text, NULL, 0);
    if (tree == NULL) {
        FAIL("the test's JSON does not parse: %s", text);
        return 0;
    }
    struct tier_operator op;
    tier_operator_init(&op);
    struct tier_decisions d = {0};
    cleanup_error ac_error_t err = NULL;
    int tier = tier_map(tree, NULL, &op, &d, &err);
    tier_decisions_free(&d);
    yajl_tree_free(tree);
    return tier;
}

TEST(tier_annotation_fails_closed)
{
    static const struct integrity_case cases[] = {
        {"none", "\"none\"", .want = "got `none`"},
        {"4", "\"4\"", .want = "got `4`"},
        {"trailing blank", "\"1 \"", .want = "got `1 `"},
        {"leading blank", "\" 1\"", .want = "got ` 1`"},
        {"empty", "\"\"", .want = "got ``"},
        {"-1", "\"-1\"", .want = "got `-1`"},
        {"01", "\"01\"", .want = "got `01`"},
        {"a number", "1", .want = "got `1`"},
        {"null", "null", .want = "got `null`"},
        {"an object", "{}", .want = "got `{}`"},
        {"with a default tier", "\"none\"", .flags = "default-tier=1;allowed-tiers=1", .want = "got `none`"},
        {"a name", "\"write\""},
        {"a digit", "\"1\""},
        {"duplicate tier keys", "\"1\",\"io.agentcage.tier\":\"3\"", .want = "duplicate key annotations.io.agentcage.tier"},
        {"duplicate annotations objects", "\"1\"", .extra = ",\"annotations\":{}", .want = "duplicate key annotations"},
        {"duplicate key elsewhere", "\"1\"", .extra = ",\"hostname\":\"a\",\"hostname\":\"b\"", .want = "duplicate key hostname"},
        {"duplicate key in an array element", "\"1\"",
         .mounts = ",{\"destination\":\"/mnt\",\"destination\":\"/x\",\"type\":\"tmpfs\",\"source\":\"t\"}",
         .want = "duplicate key mounts[1].destination"},
        {"misspelt key case", "\"1\",\"IO.agentcage.TIER\":\"1\"", .want = "`IO.agentcage.TIER`: not an agentcage annotation"},
        {"unknown agentcage annotation", "\"1\",\"io.agentcage.teir\":\"0\"", .want = "`io.agentcage.teir`: not an agentcage annotation"},
        {"the mapping's own annotation", "\"1\",\"io.agentcage.landlock-rw\":\"/\"", .want = "written by the tier mapping"},
        {"the mapping's own timeout", "\"1\",\"io.agentcage.timeout-ms\":\"999999999\"", .want = "written by the tier mapping"},
    };
    run_integrity_cases(cases, N_CASES(cases));
    /* a key that only reads like the tier annotation, with no real one */
    const char *texts[] = {"{\"ociVersion\":\"1.0.2\",\"annotations\":{\"IO.AgentCage.Tier\":\"1\"}}",
                           "{\"ociVersion\":\"1.0.2\",\"annotations\":{\" io.agentcage.tier\":\"1\"}}",
                           "{\"ociVersion\":\"1.0.2\",\"annotations\":{},\"annotations\":{\"io.agentcage.tier\":\"1\"}}"};
    for (size_t i = 0; i < N_CASES(texts); i++) {
        int tier = map_text(texts[i]);
        if (tier != -2)
            FAIL("%s: mapped to %d, expected a refusal", texts[i], tier);
    }
}

TEST(tier_refuses_bundle_hooks)
{
    static const struct integrity_case cases[] = {
        {"prestart", .extra = ",\"hooks\":{\"prestart\":[{\"path\":\"/bin/sh\"}]}", .want = "hooks.prestart[0] /bin/sh"},
        {"createRuntime", .extra = ",\"hooks\":{\"createRuntime\":[{\"path\":\"/tmp/x\"}]}", .want = "hooks.createRuntime[0]"},
        {"createContainer", .extra = ",\"hooks\":{\"createContainer\":[{\"path\":\"/x\"}]}", .want = "hooks.createContainer[0]"},
        {"startContainer", .extra = ",\"hooks\":{\"startContainer\":[{\"path\":\"/x\"}]}", .want = "hooks.startContainer[0]"},
        {"poststart", .extra = ",\"hooks\":{\"poststart\":[{\"path\":\"/x\"}]}", .want = "hooks.poststart[0]"},
        {"poststop", .extra = ",\"hooks\":{\"poststop\":[{\"path\":\"/x\"}]}", .want = "hooks.poststop[0]"},
        {"a stage of another name", .extra = ",\"hooks\":{\"preStart\":[{\"path\":\"/x\"}]}", .want = "field hooks.preStart"},
        {"at tier 0", "\"0\"", .extra = ",\"hooks\":{\"prestart\":[{\"path\":\"/x\"}]}", .want = "tier 0 forbids hooks.prestart[0]"},
        {"at tier 3", "\"3\"", .extra = ",\"hooks\":{\"poststop\":[{\"path\":\"/x\"}]}", .want = "tier 3 forbids hooks.poststop[0]"},
        {"the operator's", .extra = ",\"hooks\":{\"prestart\":[{\"path\":\"/usr/libexec/oci/hooks.d/ok\"}]}",
         .flags = "allowed-hooks=/usr/libexec/oci/hooks.d/ok"},
        {"not quite the operator's", .extra = ",\"hooks\":{\"prestart\":[{\"path\":\"/usr/libexec/oci/hooks.d/ok2\"}]}",
         .flags = "allowed-hooks=/usr/libexec/oci/hooks.d/ok", .want = "hooks.prestart[0]"},
        {"the tier's own egress, with other arguments",
         .extra = ",\"hooks\":{\"createRuntime\":[{\"path\":\"/usr/lib/agentcage/agentcage-egress\",\"args\":[\"x\",\"--allow\",\"*\"]}]}"},
        {"empty stages", .extra = ",\"hooks\":{\"prestart\":[],\"poststop\":null}"},
    };
    run_integrity_cases(cases, N_CASES(cases));
}

/* The egress annotations and the denials limit: within what the operator
 * allows, at the tiers that have a proxy. */
TEST(tier_egress_and_denials_within_the_operators)
{
    static const struct integrity_case cases[] = {
        {"ask at tier 2, allowed", "\"2\",\"io.agentcage.egress-ask\":\"true\"", .flags = "egress.ask=true"},
        {"ask off", "\"2\",\"io.agentcage.egress-ask\":\"false\""},
        {"ask not allowed", "\"2\",\"io.agentcage.egress-ask\":\"true\"",
         .want = "tier 2 forbids io.agentcage.egress-ask (the operator does not allow holding requests"},
        {"ask at tier 1", "\"1\",\"io.agentcage.egress-ask\":\"true\"", .flags = "egress.ask=true",
         .want = "tier 1 forbids io.agentcage.egress-ask (no egress proxy here"},
        {"ask yes", "\"3\",\"io.agentcage.egress-ask\":\"yes\"", .want = "expected true or false, got `yes`"},
        {"a single-star wildcard", "\"2\",\"io.agentcage.egress\":\"*.pypi.org\""},
        {"a deep wildcard", "\"2\",\"io.agentcage.egress\":\"pypi.org,**.example.com\"",
         .want = "entry `**.example.com`: `**.` wildcards (any depth) are not allowed here"},
        {"a deep wildcard, allowed", "\"2\",\"io.agentcage.egress\":\"**.example.com\"",
         .flags = "egress.deep-wildcards=true"},
        {"a bad entry", "\"2\",\"io.agentcage.egress\":\"a b\"", .want = "io.agentcage.egress: bad entry `a b`"},
        {"max-denials within", "\"1\",\"io.agentcage.max-denials\":\"5\""},
        {"max-denials above", "\"1\",\"io.agentcage.max-denials\":\"21\"",
         .want = "io.agentcage.max-denials=21: above the operator's max-denials 20"},
        {"max-denials when the operator never kills", "\"1\",\"io.agentcage.max-denials\":\"500\"",
         .flags = "max-denials=0"},
        {"max-denials 0", "\"1\",\"io.agentcage.max-denials\":\"0\"", .want = "expected a positive number, got `0`"},
    };
    run_integrity_cases(cases, N_CASES(cases));
    struct tier_operator op;
    tier_operator_init(&op);
    cleanup_error ac_error_t err = NULL;
    static const char *const bad[][2] = {{"egress.allow-cidr", "10.0.0.1/8"}, {"egress.ask", "1"},
                                         {"egress.ask-timeout", "0s"}, {"egress.deep-wildcards", "yes"},
                                         {"egress.max-rate", "0"},       {"egress.max-bytes", "lots"},
                                         {"max-denials", "-1"},          {"kernel-audit", "on"}};
    for (size_t i = 0; i < N_CASES(bad); i++) {
        if (tier_operator_set(&op, bad[i][0], bad[i][1], &err) != -1)
            FAIL("%s=%s accepted", bad[i][0], bad[i][1]);
        else
            CHECK(strstr(err->msg, bad[i][0]) != NULL);
        ac_error_free(&err);
    }
    CHECK_EQ_INT(tier_operator_set(&op, "egress.allow-cidr", "127.0.0.0/8, ::1/128", &err), 1);
    CHECK_EQ_INT(tier_operator_set(&op, "egress.ask-timeout", "2m", &err), 1);
    CHECK_EQ_INT(op.egress_ask_timeout_ms, 120000);
    CHECK_EQ_INT(tier_operator_set(&op, "egress.max-rate", "10m", &err), 1);
    CHECK_EQ_INT(op.egress_max_rate, 10 << 20);
    CHECK_EQ_INT(tier_operator_set(&op, "egress.max-bytes", "2g", &err), 1);
    CHECK_EQ_INT(op.egress_max_bytes == (int64_t)2 << 30, 1);
    CHECK_EQ_INT(op.kernel_audit, 0); /* the host's audit is the operator's to turn on */
    CHECK_EQ_INT(tier_operator_set(&op, "kernel-audit", "true", &err), 1);
    CHECK_EQ_INT(op.kernel_audit, 1);
}

TEST(tier_refuses_host_sysctls)
{
    static const struct integrity_case cases[] = {
        {"core_pattern", .linux = ",\"sysctl\":{\"kernel.core_pattern\":\"|/tmp/x\"}", .want = "linux.sysctl kernel.core_pattern"},
        {"slashes", .linux = ",\"sysctl\":{\"kernel/core_pattern\":\"|/tmp/x\"}", .want = "linux.sysctl kernel/core_pattern"},
        {"climbing out of net", .linux = ",\"sysctl\":{\"net..kernel.core_pattern\":\"x\"}", .want = "linux.sysctl net..kernel"},
        {"net/../", .linux = ",\"sysctl\":{\"net/../kernel/core_pattern\":\"x\"}", .want = "linux.sysctl net/../"},
        {"modprobe", .linux = ",\"sysctl\":{\"kernel.modprobe\":\"/tmp/x\"}", .want = "kernel.modprobe"},
        {"vm", .linux = ",\"sysctl\":{\"vm.overcommit_memory\":\"1\"}", .want = "vm.overcommit_memory"},
        {"fs", .linux = ",\"sysctl\":{\"fs.suid_dumpable\":\"2\"}", .want = "fs.suid_dumpable"},
        {"kernel.shmmax kept", .linux = ",\"sysctl\":{\"kernel.shmmax\":\"1000\",\"kernel.msgmax\":\"10\",\"kernel.sem\":\"1 2 3 4\"}"},
        {"net kept", .linux = ",\"sysctl\":{\"net.ipv4.ip_unprivileged_port_start\":\"0\",\"net.ipv4.ping_group_range\":\"0 0\"}"},
        {"kernel.semX", .linux = ",\"sysctl\":{\"kernel.semx\":\"1\"}", .want = "kernel.semx"},
    };
    run_integrity_cases(cases, N_CASES(cases));
}

TEST(tier_refuses_kernel_mounts_elsewhere)
{
#define MNT(dest, type) ",{\"destination\":\"" dest "\",\"type\":\"" type "\",\"source\":\"" type "\"}"
    static const struct integrity_case cases[] = {
        {"proc in /tmp", .mounts = MNT("/tmp/p", "proc"), .want = "a proc mount at /tmp/p"},
        {"proc in /workspace", .mounts = MNT("/workspace/p", "proc"), .want = "a proc mount at /workspace/p"},
        {"proc spelt /x/../tmp/p", .mounts = MNT("/x/../tmp/p", "proc"), .want = "a proc mount at /tmp/p"},
        {"a second /proc", .mounts = MNT("/proc", "proc"), .want = "a second kernel filesystem at /proc"},
        {"/proc spelt //proc/", .mounts = MNT("//proc/", "proc"), .want = "a second kernel filesystem at /proc"},
        {"sysfs elsewhere", .mounts = MNT("/mnt/s", "sysfs"), .want = "a sysfs mount at /mnt/s"},
        {"cgroup elsewhere", .mounts = MNT("/mnt/c", "cgroup2"), .want = "a cgroup2 mount at /mnt/c"},
        {"mqueue elsewhere", .mounts = MNT("/mnt/q", "mqueue"), .want = "a mqueue mount at /mnt/q"},
        {"devpts elsewhere", .mounts = MNT("/mnt/pts", "devpts"), .want = "a devpts mount at /mnt/pts"},
        {"a tmpfs over /proc/sys", .mounts = MNT("/proc/sys", "tmpfs"), .want = "a mount on /proc/sys"},
        {"a tmpfs below /sys", .mounts = MNT("/sys/kernel", "tmpfs"), .want = "a mount on /sys/kernel"},
        {"sysfs and cgroup at home", .mounts = MNT("/sys", "sysfs") MNT("/sys/fs/cgroup", "cgroup")},
        {"shared propagation",
         .mounts = ",{\"destination\":\"/mnt\",\"type\":\"tmpfs\",\"source\":\"t\",\"options\":[\"rshared\"]}",
         .want = "mount option rshared"},
        {"shared root", .linux = ",\"rootfsPropagation\":\"shared\"", .want = "linux.rootfsPropagation shared"},
    };
    run_integrity_cases(cases, N_CASES(cases));
#undef MNT
}

TEST(tier_bind_sources_are_an_allow_list)
{
#define BIND(src) ",{\"destination\":\"/mnt/a\",\"type\":\"bind\",\"source\":\"" src "\",\"options\":[\"rbind\",\"rw\"]}"
    static const struct integrity_case cases[] = {
        {"/usr/local/bin", .mounts = BIND("/usr/local/bin"), .want = "mount of /usr/local/bin"},
        {"/usr/lib", .mounts = BIND("/usr/lib"), .want = "mount of /usr/lib"},
        {"/opt", .mounts = BIND("/opt"), .want = "mount of /opt"},
        {"/opt/app", .mounts = BIND("/opt/app"), .want = "mount of /opt/app"},
        {"/boot", .mounts = BIND("/boot"), .want = "mount of /boot"},
        {"/var/lib/app", .mounts = BIND("/var/lib/app"), .want = "mount of /var/lib/app"},
        {"/srv itself", .mounts = BIND("/srv"), .want = "mount of /srv"},
        {"/home itself", .mounts = BIND("/home"), .want = "mount of /home"},
        {"/home/../usr/bin", .mounts = BIND("/home/../usr/bin"), .want = "mount of /home/../usr/bin"},
        {"a project in a home", .mounts = BIND("/home/alice/project")},
        {"a folder in /tmp", .mounts = BIND("/tmp/work")},
        {"the bundle's own", .mounts = BIND("/bundle/data")},
        {"relative, in the bundle", .mounts = BIND("data")},
        {"an operator's root", .mounts = BIND("/data/proj"), .flags = "bind-roots=/data"},
        {"outside the operator's roots", .mounts = BIND("/home/alice/project"), .flags = "bind-roots=/data",
         .want = "not below the bundle or a bind root (/data)"},
    };
    run_integrity_cases(cases, N_CASES(cases));
#undef BIND
    struct tier_operator op;
    tier_operator_init(&op);
    const char *bad[] = {"/", "/usr", "/usr/local", "/etc", "/var", "relative", "/home/../usr", "/home/"};
    for (size_t i = 0; i < N_CASES(bad); i++) {
        cleanup_error ac_error_t err = NULL;
        if (tier_operator_set(&op, "bind-roots", bad[i], &err) >= 0)
            FAIL("bind-roots=%s accepted", bad[i]);
    }
}

TEST(tier_accepts_only_known_fields)
{
    static const struct integrity_case cases[] = {
        {"intelRdt", .linux = ",\"intelRdt\":{\"closID\":\"x\"}", .want = "field linux.intelRdt"},
        {"netDevices", .linux = ",\"netDevices\":{\"eth0\":{}}", .want = "field linux.netDevices"},
        {"unified", .linux = ",\"resources\":{\"unified\":{\"memory.max\":\"max\"}}", .want = "field linux.resources.unified"},
        {"rdma", .linux = ",\"resources\":{\"rdma\":{}}", .want = "field linux.resources.rdma"},
        {"windows", .extra = ",\"windows\":{}", .want = "field windows"},
        {"a mount's idmap", .mounts = ",{\"destination\":\"/m\",\"type\":\"tmpfs\",\"source\":\"t\",\"uidMappings\":[]}",
         .want = "field mounts[1].uidMappings"},
        {"a null field is no field", .linux = ",\"intelRdt\":null"},
        {"seccomp listener", .linux = ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"/run/x.sock\"}",
         .want = "linux.seccomp.listenerPath /run/x.sock"},
        {"seccomp spec allow",
         .linux = ",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"]}",
         .want = "SECCOMP_FILTER_FLAG_SPEC_ALLOW"},
        {"realtime cpu", .linux = ",\"resources\":{\"cpu\":{\"realtimeRuntime\":1000}}", .want = "realtimeRuntime"},
        {"cpu burst", .linux = ",\"resources\":{\"cpu\":{\"burst\":1000}}", .want = "burst"},
        {"cgroupsPath climbing", .linux = ",\"cgroupsPath\":\"/agentcage/../../system.slice\"", .want = "linux.cgroupsPath"},
        {"cgroupsPath fine", .linux = ",\"cgroupsPath\":\"/agentcage/a..b\""},
        {"a user namespace mapping host root",
         .linux = ",\"uidMappings\":[{\"containerID\":0,\"hostID\":0,\"size\":65536}],\"gidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]",
         .want = "linux.uidMappings[0]: a user namespace that maps host id 0"},
        {"a user namespace of its own",
         .linux = ",\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}],\"gidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]"},
    };
    run_integrity_cases(cases, N_CASES(cases));
}

TEST(tier_scheduling_tightened)
{
    const char *texts[] = {
        "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"scheduler\":{\"policy\":\"SCHED_FIFO\"}},"
        "\"annotations\":{\"io.agentcage.tier\":\"1\"}}",
        "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"scheduler\":{\"policy\":\"SCHED_OTHER\","
        "\"nice\":-5}},\"annotations\":{\"io.agentcage.tier\":\"1\"}}",
        "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"ioPriority\":{\"class\":\"IOPRIO_CLASS_RT\"}},"
        "\"annotations\":{\"io.agentcage.tier\":\"1\"}}",
    };
    for (size_t i = 0; i < N_CASES(texts); i++)
        CHECK_EQ_INT(map_text(texts[i]), -2);
    yajl_val tree = yajl_tree_parse("{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\","
                                    "\"oomScoreAdj\":-997},\"annotations\":{\"io.agentcage.tier\":\"1\"},"
                                    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"network\"}]}}",
                                    NULL, 0);
    REQUIRE(tree != NULL);
    struct tier_operator op;
    tier_operator_init(&op);
    struct tier_decisions d = {0};
    cleanup_error ac_error_t err = NULL;
    int mapped = tier_map(tree, NULL, &op, &d, &err);
    if (mapped != 1) {
        cleanup_free char *msg = ac_error_string(err);
        FAIL("oomScoreAdj -997: %s", msg);
    }
    int64_t adj = -1;
    CHECK(tj_get_int(tj_get(tree, "process"), "oomScoreAdj", &adj) && adj == 0);
    tier_decisions_free(&d);
    yajl_tree_free(tree);
}

/* The environment at a tier: an allow-list, and credential-looking values
 * dropped under any name. */
TEST(tier_env_is_an_allow_list)
{
    static const char *const dropped[] = {
        "OPENAI_API_KEY=x", "DATABASE_URL=postgres://u:p@db/x", "NPM_CONFIG__AUTH=abc", "SENTRY_DSN=https://k@s.io/1",
        "KUBECONFIG=/root/.kube/config", "GOOGLE_CREDENTIALS={}", "VAULT_ADDR=http://v", "VAULT_TOKEN=s.x",
        "vault_token=s.x", "aws_secret_access_key=x", "GITHUB_TOKEN=x", "SSH_AUTH_SOCK=/tmp/s", "MY_CREDENTIALS=x",
        "DOCKER_AUTH_CONFIG=x", "CI_JOB_JWT=x", "SLACK_WEBHOOK=https://hooks.slack.com/x", "STRIPE=x", "PGPASSWORD=x",
        "AZURE_CLIENT_SECRET=x", "TF_VAR_token=x", "HF_TOKEN=x", "KEYBOARD=us"};
    static const char *const value_dropped[] = {
        "PATH=ghp_0123456789abcdefghijklmnopqrstuvwxyz", "TERM=sk-proj-abcdef", "LANG=AKIAABCDEFGHIJKLMNOP",
        "TZ=-----BEGIN OPENSSH PRIVATE KEY-----", "HOSTNAME=https://user:secret@example.com/x",
        "USER=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "SHELL=Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0Lz"};
    static const char *const kept[] = {"PATH=/usr/bin:/bin", "HOME=/root", "LC_ALL=C.UTF-8", "TERM=xterm",
                                       "ALLOWED=1", "PFX_ONE=2", "RAWKEY=sk-keep-me", "HOSTNAME=abc123"};
    cleanup_free char *list = xstrdup("");
    const char *const *groups[] = {dropped, value_dropped, kept};
    size_t sizes[] = {N_CASES(dropped), N_CASES(value_dropped), N_CASES(kept)};
    for (size_t g = 0; g < 3; g++)
        for (size_t i = 0; i < sizes[g]; i++) {
            char *n = xasprintf("%s%s\"%s\"", list, list[0] ? "," : "", groups[g][i]);
            free(list);
            list = n;
        }
    cleanup_free char *text = xasprintf(
        "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"env\":[%s]},"
        "\"annotations\":{\"io.agentcage.tier\":\"1\",\"io.agentcage.env-allow\":\"ALLOWED, PFX_*, RAWKEY=raw\"},"
        "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"network\"}]}}",
        list);
    yajl_val tree = yajl_tree_parse(text, NULL, 0);
    REQUIRE(tree != NULL);
    struct tier_operator op;
    tier_operator_init(&op);
    struct tier_decisions d = {0};
    cleanup_error ac_error_t err = NULL;
    REQUIRE_EQ_INT(tier_map(tree, NULL, &op, &d, &err), 1);
    cleanup_free char *out = tier_tree_to_json(tj_get(tj_get(tree, "process"), "env"), false);
    for (size_t i = 0; i < N_CASES(dropped); i++)
        if (strstr(out, dropped[i]))
            FAIL("kept %s", dropped[i]);
    for (size_t i = 0; i < N_CASES(value_dropped); i++)
        if (strstr(out, value_dropped[i]))
            FAIL("kept a credential-looking value: %s", value_dropped[i]);
    for (size_t i = 0; i < N_CASES(kept); i++)
        if (!strstr(out, kept[i]))
            FAIL("dropped %s", kept[i]);
    /* decision lines name variables, never values */
    for (size_t i = 0; i < d.n; i++)
        if (strstr(d.lines[i], "secret@") || strstr(d.lines[i], "ghp_") || strstr(d.lines[i], "BEGIN"))
            FAIL("a decision line shows a value: %s", d.lines[i]);
    tier_decisions_free(&d);
    yajl_tree_free(tree);
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    find_tests_dir();
    int passed = 0, failed = 0;
    /* the golden cases, in name order */
    cleanup_free char *cases_dir = xasprintf("%s/tiers", tests_dir);
    DIR *dir = opendir(cases_dir);
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        names = xrealloc(names, (n + 1) * sizeof(*names));
        names[n++] = xstrdup(e->d_name);
    }
    if (dir)
        closedir(dir);
    else
        printf("FAIL - golden cases: no %s\n", cases_dir), failed++;
    qsort(names, n, sizeof(*names), cmp_names);
    for (int i = 0; i < testlib_n_cases + (int)n; i++) {
        const char *name;
        cleanup_free char *label = NULL;
        if (i < (int)n)
            name = label = xasprintf("tiers/%s", names[i]);
        else
            name = testlib_cases[i - n].name;
        if (filter && strstr(name, filter) == NULL)
            continue;
        testlib_current_failed = 0;
        testlib_first_reason[0] = '\0';
        if (i < (int)n) {
            cleanup_free char *case_dir = xasprintf("%s/%s", cases_dir, names[i]);
            run_case(case_dir);
        } else {
            testlib_cases[i - n].fn();
        }
        if (testlib_current_failed) {
            printf("FAIL - %s: %s\n", name, testlib_first_reason);
            failed++;
        } else {
            printf("ok - %s\n", name);
            passed++;
        }
        fflush(stdout);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
