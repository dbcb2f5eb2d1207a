/* libFuzzer harness: the tier parser. The input is read as lines:
 *   "--name=value"  an operator flag, given to tier_operator_set
 *   "key=value"     an annotation of the container (key without "=": value "")
 * A small but complete config.json carrying those annotations is parsed into
 * a yajl tree, tier_map rewrites it, and the rewritten tree must still be a
 * config the parser accepts or rejects cleanly (the runtime parses it next).
 * Mostly io.agentcage.* keys matter; the seed corpus holds them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "spec/spec.h"
#include "tier-annotations/tier.h"

/* Everything a tier may have to rewrite or refuse: mounts, namespaces,
 * resources, capabilities, a socket bind. */
static const char config_head[] =
    "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"rootfs\",\"readonly\":false},"
    "\"hostname\":\"fuzz\","
    "\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],"
    "\"env\":[\"PATH=/bin\"],\"cwd\":\"/\",\"capabilities\":{\"bounding\":[\"CAP_NET_RAW\",\"CAP_SYS_ADMIN\"],"
    "\"effective\":[\"CAP_NET_RAW\"],\"permitted\":[\"CAP_NET_RAW\"]},\"noNewPrivileges\":false},"
    "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
    "{\"destination\":\"/workspace\",\"type\":\"bind\",\"source\":\"/tmp\",\"options\":[\"rbind\",\"rw\"]},"
    "{\"destination\":\"/var/run/docker.sock\",\"type\":\"bind\",\"source\":\"/var/run/docker.sock\",\"options\":[\"bind\"]}],"
    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"/proc/1/ns/net\"}],"
    "\"resources\":{\"memory\":{\"limit\":1073741824},\"cpu\":{\"quota\":200000,\"period\":100000},\"pids\":{\"limit\":4096}}},"
    "\"annotations\":";

static void gen_bytes(yajl_gen g, const char *s, size_t n)
{
    yajl_gen_string(g, (const unsigned char *)s, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tier_operator op;
    tier_operator_init(&op);
    yajl_gen g = yajl_gen_alloc(NULL);
    /* Annotation values are arbitrary bytes; the JSON must stay valid so the
     * fuzzer reaches tier_map rather than the JSON parser. */
    yajl_gen_config(g, yajl_gen_validate_utf8, 0);
    yajl_gen_map_open(g);

    /* Copy so that lines can be NUL-terminated for tier_operator_set. */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    char *line = text, *end = text + size;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *stop = nl ? nl : end;
        *stop = '\0';
        char *eq = memchr(line, '=', (size_t)(stop - line));
        if (line[0] == '-' && line[1] == '-') {
            if (eq) {
                *eq = '\0';
                ac_error_t err = NULL;
                tier_operator_set(&op, line + 2, eq + 1, &err);
                ac_error_free(&err);
            }
        } else if (stop > line) {
            size_t klen = eq ? (size_t)(eq - line) : (size_t)(stop - line);
            gen_bytes(g, line, klen);
            if (eq)
                gen_bytes(g, eq + 1, (size_t)(stop - eq - 1));
            else
                gen_bytes(g, "", 0);
        }
        line = stop + 1;
    }
    yajl_gen_map_close(g);

    const unsigned char *ann;
    size_t ann_len;
    yajl_gen_get_buf(g, &ann, &ann_len);
    size_t json_len = sizeof(config_head) - 1 + ann_len + 1;
    char *json = malloc(json_len + 1);
    memcpy(json, config_head, sizeof(config_head) - 1);
    memcpy(json + sizeof(config_head) - 1, ann, ann_len);
    json[json_len - 1] = '}';
    json[json_len] = '\0';
    yajl_gen_free(g);

    yajl_val tree = NULL;
    ac_error_t err = NULL;
    if (spec_parse_json_tree(json, json_len, "config.json", &tree, &err) == 0) {
        struct tier_decisions decisions = {0};
        int tier = tier_map(tree, "/bundle", &op, &decisions, &err);
        if (tier >= TIER_NONE) {
            free(tier_tree_to_json(tree, tier & 1));
            struct oci_spec *spec = NULL;
            ac_error_t perr = NULL;
            if (spec_parse_tree(tree, "config.json", &spec, &perr) == 0)
                spec_free(spec);
            ac_error_free(&perr);
        }
        tier_decisions_free(&decisions);
        yajl_tree_free(tree);
    }
    ac_error_free(&err);
    free(json);
    free(text);
    return 0;
}
