/* agentcage-broker: an example credential broker, for tests and as a model.
 *
 *   credential.NAME = /usr/libexec/agentcage/agentcage-broker DIR    (agentcage.conf)
 *
 * It hands out static tokens: the secret of credential NAME is the content
 * of DIR/NAME (one line), and every issue and revoke is appended to
 * DIR/NAME.log ("issue CONTAINER TTL" / "revoke CONTAINER"), so a test can
 * see both. A real broker does the same dance with an STS or a GitHub App:
 * read the JSON request on stdin,
 *   {"action":"issue","name":N,"container":ID,"tier":T,"ttl":SECONDS,"annotations":{...}}
 * mint a credential valid for ttl seconds, print
 *   {"secret":"...","expires":UNIXTIME}
 * and exit 0; on {"action":"revoke","name":N,"container":ID} invalidate what
 * it minted for that container. See docs/tiers.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "hooks/audit.h"
#include "hooks/hook_state.h"
#include "runtime/util/utils.h"

#define PROG "agentcage-broker"

static int fail(const char *msg)
{
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

static const char *get_str(yajl_val tree, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(tree, path, yajl_t_string);
    return v ? v->u.string : NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] != '/')
        return fail("usage: " PROG " DIR   (a JSON request on stdin; see the source)");
    const char *dir = argv[1];
    cleanup_free char *text = NULL;
    size_t len;
    ac_error_t err = NULL;
    if (read_all_fd(0, &text, &len, &err) < 0)
        return fail("cannot read the request");
    char ebuf[128];
    yajl_val req = yajl_tree_parse(text, ebuf, sizeof(ebuf));
    if (req == NULL)
        return fail("the request is not JSON");
    const char *action = get_str(req, "action"), *name = get_str(req, "name"), *id = get_str(req, "container");
    if (!action || !name || !id || !hook_valid_name(name) || !hook_valid_name(id))
        return fail("the request lacks a valid action, name or container");
    const char *tp[] = {"ttl", NULL};
    yajl_val ttl = yajl_tree_get(req, tp, yajl_t_number);
    long long seconds = ttl && YAJL_IS_INTEGER(ttl) ? YAJL_GET_INTEGER(ttl) : 0;
    cleanup_free char *log = xasprintf("%s/%s.log", dir, name);
    cleanup_file FILE *lf = fopen(log, "ae");
    if (lf == NULL)
        return fail("cannot append to the log");
    if (strcmp(action, "revoke") == 0) {
        fprintf(lf, "revoke %s\n", id);
        return 0;
    }
    if (strcmp(action, "issue") != 0)
        return fail("unknown action");
    cleanup_free char *path = xasprintf("%s/%s", dir, name);
    cleanup_free char *secret = NULL;
    if (read_all_file(path, &secret, &len, &err) < 0)
        return fail("no token for this name");
    secret[strcspn(secret, "\n")] = '\0';
    cleanup_free char *json = audit_json_string(secret);
    printf("{\"secret\":%s,\"expires\":%lld}\n", json, (long long)time(NULL) + seconds);
    fprintf(lf, "issue %s %lld\n", id, seconds);
    yajl_tree_free(req);
    return 0;
}
