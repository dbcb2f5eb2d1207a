/* The audit trail: SHA-256 against the FIPS 180-2 vectors, the hash chain
 * and its verifier against removed, reordered and edited lines. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hooks/audit.h"
#include "runtime/util/utils.h"
#include "tests/testlib.h"

static void hex_of(const char *s, size_t len, char out[65]) { sha256_hex(s, len, out); }

TEST(sha256_known_vectors)
{
    char h[65];
    hex_of("", 0, h);
    CHECK_EQ_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, h);
    CHECK_EQ_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two_blocks, strlen(two_blocks), h);
    CHECK_EQ_STR(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(sha256_million_a_in_odd_pieces)
{
    struct sha256_ctx c;
    uint8_t d[32];
    char chunk[997];
    memset(chunk, 'a', sizeof(chunk));
    sha256_init(&c);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        sha256_update(&c, chunk, n);
        left -= n;
    }
    sha256_final(&c, d);
    char h[65];
    for (int i = 0; i < 32; i++)
        snprintf(h + 2 * i, 3, "%02x", d[i]);
    CHECK_EQ_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* A fresh log of five records in a temp dir; path in buf. */
static int make_log(char *dir, char *path, size_t len)
{
    strcpy(dir, "/tmp/test_audit.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, len, "%s/sub/audit.jsonl", dir); /* sub/ is created 0700 */
    char *argv[] = {"sh", "-c", "echo \"hi\"\n\x01", "\xff\xfe", NULL};
    cleanup_free char *argv_json = audit_json_argv(argv);
    ac_error_t err = NULL;
    int r = 0;
    r |= audit_record(path, "container-created", "c1", &err, "tier", "2", NULL);
    r |= audit_record(path, "exec", "c1", &err, "=argv", argv_json, "user", "0:0", NULL);
    r |= audit_record(path, "egress-allow", "c1", &err, "host", "example.com", "=port", "443", NULL);
    r |= audit_record(path, "egress-deny", "c1", &err, "host", "evil.test", "reason", "not in allowlist", NULL);
    r |= audit_append(path, "container-exited", "c1", "\"status\":0", &err);
    if (err)
        ac_error_free(&err);
    return r;
}

static char *verify_error(const char *path, long *n)
{
    ac_error_t err = NULL;
    char last[65];
    *n = audit_verify(path, last, &err);
    if (*n >= 0)
        return NULL;
    char *s = ac_error_string(err);
    ac_error_free(&err);
    return s;
}

static void rm_tree(const char *dir)
{
    cleanup_free char *cmd = xasprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* Rewrite the log with its lines reshuffled by a sed/awk program. */
static void edit_log(const char *path, const char *shell_edit)
{
    cleanup_free char *cmd = xasprintf("%s '%s' > '%s.new' && mv '%s.new' '%s'", shell_edit, path, path, path, path);
    if (system(cmd) != 0)
        FAIL("edit failed: %s", cmd);
}

TEST(chain_intact_and_fields)
{
    char dir[64], path[128];
    REQUIRE_EQ_INT(make_log(dir, path, sizeof(path)), 0);
    long n;
    cleanup_free char *e = verify_error(path, &n);
    CHECK(e == NULL);
    CHECK_EQ_INT(n, 5);
    cleanup_free char *text = NULL;
    size_t len;
    ac_error_t err = NULL;
    REQUIRE_EQ_INT(read_all_file(path, &text, &len, &err), 0);
    CHECK(strncmp(text, "{\"seq\":1,\"time\":\"", 17) == 0);
    CHECK(strstr(text, "\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"") != NULL);
    CHECK(strstr(text, "\"argv\":[\"sh\",\"-c\",\"echo \\\"hi\\\"\\u000a\\u0001\",\"\\u00ff\\u00fe\"]") != NULL);
    CHECK(strstr(text, "\"port\":443") != NULL);
    CHECK(strstr(text, "\"seq\":5,") != NULL);
    rm_tree(dir);
}

TEST(verify_names_edited_line)
{
    char dir[64], path[128];
    REQUIRE_EQ_INT(make_log(dir, path, sizeof(path)), 0);
    edit_log(path, "sed '3s/example.com/evil.test/'");
    long n;
    cleanup_free char *e = verify_error(path, &n);
    REQUIRE(e != NULL);
    CHECK(strstr(e, "audit.jsonl:4: previous-hash mismatch") != NULL);
    rm_tree(dir);
}

TEST(verify_names_removed_line)
{
    char dir[64], path[128];
    REQUIRE_EQ_INT(make_log(dir, path, sizeof(path)), 0);
    edit_log(path, "sed '2d'");
    long n;
    cleanup_free char *e = verify_error(path, &n);
    REQUIRE(e != NULL);
    CHECK(strstr(e, "audit.jsonl:2: previous-hash mismatch (line removed, reordered or edited") != NULL);
    rm_tree(dir);
}

TEST(verify_names_reordered_lines)
{
    char dir[64], path[128];
    REQUIRE_EQ_INT(make_log(dir, path, sizeof(path)), 0);
    edit_log(path, "awk 'NR==3{x=$0;next} NR==4{print; print x; next} {print}'");
    long n;
    cleanup_free char *e = verify_error(path, &n);
    REQUIRE(e != NULL);
    CHECK(strstr(e, "audit.jsonl:3: previous-hash mismatch") != NULL);
    rm_tree(dir);
}

TEST(verify_rejects_removed_first_line_and_garbage)
{
    char dir[64], path[128];
    REQUIRE_EQ_INT(make_log(dir, path, sizeof(path)), 0);
    edit_log(path, "sed '1d'");
    long n;
    cleanup_free char *e = verify_error(path, &n);
    REQUIRE(e != NULL);
    CHECK(strstr(e, "audit.jsonl:1: previous-hash mismatch") != NULL);
    edit_log(path, "sed '2s/^{/x{/'");
    cleanup_free char *e2 = verify_error(path, &n);
    REQUIRE(e2 != NULL);
    CHECK(strstr(e2, "audit.jsonl:1:") != NULL);
    rm_tree(dir);
}

TEST(append_continues_chain_after_verify)
{
    char dir[64], path[128];
    REQUIRE_EQ_INT(make_log(dir, path, sizeof(path)), 0);
    ac_error_t err = NULL;
    REQUIRE_EQ_INT(audit_record(path, "timeout-kill", NULL, &err, NULL), 0);
    long n;
    cleanup_free char *e = verify_error(path, &n);
    CHECK(e == NULL);
    CHECK_EQ_INT(n, 6);
    struct stat st;
    cleanup_free char *sub = xasprintf("%s/sub", dir);
    REQUIRE(stat(sub, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0700);
    REQUIRE(stat(path, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0600);
    rm_tree(dir);
}

/* What the tier mapping gets from policy_hooks_add. */
#include <yajl/yajl_tree.h>
#include "hooks/policy_hooks.h"

/* The operator's egress settings reach the proxy as its flags. */
TEST(policy_hooks_pass_the_operators_egress_settings)
{
    yajl_val cfg = yajl_tree_parse("{\"process\":{\"env\":[]}}", NULL, 0);
    REQUIRE(cfg != NULL);
    struct tier_operator op = {.audit_log = "/l", .approvals_dir = "/ap", .max_denials = 7,
                               .egress_allow_cidr = "127.0.0.0/8", .egress_deep_wildcards = true, .egress_ask = true,
                               .egress_ask_timeout_ms = 90000};
    ac_error_t err = NULL;
    REQUIRE_EQ_INT(policy_hooks_add(cfg, 2, "/h", &op, &err), 0);
    cleanup_free char *out = tier_tree_to_json(cfg, false);
    CHECK(strstr(out, "\"args\":[\"/h/agentcage-egress\",\"--audit-log\",\"/l\",\"--max-denials\",\"7\","
                      "\"--allow-cidr\",\"127.0.0.0/8\",\"--deep-wildcards\",\"--ask\",\"--ask-timeout\",\"90\","
                      "\"--approvals-dir\",\"/ap\"]") != NULL);
    yajl_tree_free(cfg);
}

TEST(policy_hooks_add_tier3_and_tier1)
{
    const char *json = "{\"process\":{\"env\":[\"PATH=/bin\",\"HTTP_PROXY=http://evil:1\"]},"
                       "\"hooks\":{\"createRuntime\":[{\"path\":\"/usr/bin/own\"}]}}";
    char errbuf[128];
    yajl_val cfg = yajl_tree_parse(json, errbuf, sizeof(errbuf));
    REQUIRE(cfg != NULL);
    struct tier_operator op = {.audit_log = "/var/log/a.jsonl", .approvals_dir = "/etc/ap"};
    ac_error_t err = NULL;
    REQUIRE_EQ_INT(policy_hooks_add(cfg, 3, "/opt/ac", &op, &err), 0);
    cleanup_free char *out = tier_tree_to_json(cfg, false);
    /* the approval gate is the runtime's own: tier 3 adds the proxy only */
    CHECK(strstr(out, "\"createRuntime\":[{\"path\":\"/opt/ac/agentcage-egress\",\"args\":[\"/opt/ac/agentcage-egress\","
                      "\"--audit-log\",\"/var/log/a.jsonl\",\"--max-denials\",\"0\"],\"timeout\":10}") != NULL);
    CHECK(strstr(out, "agentcage-approve") == NULL);
    CHECK(strstr(out, "{\"path\":\"/usr/bin/own\"}]") != NULL);
    CHECK(strstr(out, "\"poststop\":[{\"path\":\"/opt/ac/agentcage-egress\",\"args\":[\"/opt/ac/agentcage-egress\",\"--stop\"") != NULL);
    CHECK(strstr(out, "\"env\":[\"PATH=/bin\",\"HTTP_PROXY=http://127.0.0.1:3128\",\"HTTPS_PROXY=http://127.0.0.1:3128\"") != NULL);
    CHECK(strstr(out, "evil") == NULL);
    CHECK(strstr(out, "\"NO_PROXY=localhost,127.0.0.1\"") != NULL);
    yajl_tree_free(cfg);

    yajl_val plain = yajl_tree_parse("{\"process\":{}}", errbuf, sizeof(errbuf));
    REQUIRE(plain != NULL);
    REQUIRE_EQ_INT(policy_hooks_add(plain, 1, NULL, NULL, &err), 0);
    cleanup_free char *out1 = tier_tree_to_json(plain, false);
    CHECK_EQ_STR(out1, "{\"process\":{}}");
    yajl_tree_free(plain);
}
