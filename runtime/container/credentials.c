/* Task-scoped credentials from the operator's brokers (see
 * tier-annotations/tier_credentials.c for what a config may ask).
 *
 * At create the runtime runs each broker with a JSON request on stdin,
 *   {"action":"issue","name":N,"container":ID,"tier":T,"ttl":SECONDS,"annotations":{...}}
 * and reads {"secret":"...","expires":UNIXTIME} from its stdout; the init
 * writes the secret as /run/secrets/N. The state directory keeps which
 * credentials were issued until when ("credentials": NAME EXPIRY_MS
 * REVOKED), never a secret. At the ttl a small expirer (started by start)
 * removes the file inside the container and revokes it,
 *   {"action":"revoke","name":N,"container":ID}
 * and delete revokes whatever is left, also for a container that was
 * killed. The audit trail records issue and revoke (name, ttl), never the
 * secret. A broker must be a regular file owned by root that nobody else
 * may write. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "hooks/audit.h"
#include "runtime/container/container.h"
#include "runtime/linux/init.h"
#include "runtime/util/utils.h"
#include "tier-annotations/tier.h"

#define BROKER_TIMEOUT_MS 10000
#define BROKER_MAX_REPLY (64 * 1024)

extern char **environ;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The broker's argv: its path and the blank-separated arguments after it. */
static char **broker_argv(const char *broker)
{
    char *copy = xstrdup(broker);
    size_t n = 0;
    char **argv = xcalloc(strlen(broker) / 2 + 2, sizeof(char *));
    char *save = NULL;
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        argv[n++] = w;
    return argv; /* argv[0] is the start of copy: free(argv[0]) then free(argv) */
}

static int check_broker(const char *path, const char *name, ac_error_t *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return ac_error(err, errno, "credential %s: broker `%s`", name, path);
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) || !(st.st_mode & 0100))
        return ac_error(err, 0, "credential %s: broker `%s` must be an executable owned by root that nobody else "
                                "may write",
                        name, path);
    return 0;
}

/* Run the broker with request on stdin; its stdout (bounded) into *reply. */
static int run_broker(const char *broker, const char *name, const char *request, char **reply, ac_error_t *err)
{
    *reply = NULL;
    char **argv = broker_argv(broker);
    int ret = -1;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    pid_t pid = -1;
    if (argv[0] == NULL || check_broker(argv[0], name, err) < 0)
        goto done;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        ac_error(err, errno, "credential %s: pipe", name);
        goto done;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    static char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]), in[0] = -1;
    close(out[1]), out[1] = -1;
    if (r != 0) {
        pid = -1;
        ac_error(err, r, "credential %s: start broker `%s`", name, argv[0]);
        goto done;
    }
    if (write_all(in[1], request, strlen(request)) < 0 && errno != EPIPE) {
        ac_error(err, errno, "credential %s: write to the broker", name);
        goto done;
    }
    close(in[1]), in[1] = -1;
    size_t len = 0;
    char *buf = xmalloc(BROKER_MAX_REPLY + 1);
    long long deadline = now_ms() + BROKER_TIMEOUT_MS;
    for (;;) {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        long long left = deadline - now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            free(buf);
            ac_error(err, 0, "credential %s: the broker did not answer within %d s", name, BROKER_TIMEOUT_MS / 1000);
            goto done;
        }
        ssize_t n = read(out[0], buf + len, BROKER_MAX_REPLY - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == BROKER_MAX_REPLY)
            break;
    }
    buf[len] = '\0';
    *reply = buf;
    ret = 0;
done:
    if (pid > 0) {
        int status = 0;
        if (ret < 0)
            kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (ret == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            ret = ac_error(err, 0, "credential %s: the broker failed (status %d)", name,
                           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            explicit_bzero(*reply, strlen(*reply));
            free(*reply);
            *reply = NULL;
        }
    }
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
    free(argv[0]);
    free(argv);
    return ret;
}

static char *annotations_json(const struct oci_spec *spec)
{
    char *out = xstrdup("{");
    for (size_t i = 0; i < spec->n_annotations; i++) {
        cleanup_free char *k = audit_json_string(spec->annotations[i].key);
        cleanup_free char *v = audit_json_string(spec->annotations[i].value);
        char *next = xasprintf("%s%s%s:%s", out, i ? "," : "", k, v);
        free(out);
        out = next;
    }
    char *done = xasprintf("%s}", out);
    free(out);
    return done;
}

static void revoke_one(const struct global_opts *g, const char *id, const char *name, const char *why)
{
    const struct tier_credential *cred = tier_credential_find(&g->tier, name);
    cleanup_free char *jname = audit_json_string(name), *jid = audit_json_string(id);
    cleanup_free char *request = xasprintf("{\"action\":\"revoke\",\"name\":%s,\"container\":%s}\n", jname, jid);
    cleanup_free char *reply = NULL;
    ac_error_t e = NULL;
    bool ok = cred && cred->broker && run_broker(cred->broker, name, request, &reply, &e) == 0;
    cleanup_free char *members = xasprintf("\"name\":%s,\"why\":\"%s\",\"revoked\":%s", jname, why, ok ? "true" : "false");
    container_audit(g, "credential-revoked", id, members);
    if (!ok) {
        ac_warn("credential %s of %s: revoke: %s", name, id, e ? e->msg : "no broker");
        ac_error_free(&e);
    }
}

int credentials_issue(const struct global_opts *g, const char *state_dir, const char *id, int tier,
                      const struct oci_spec *spec, long long timeout_ms, struct credential_secret **out, size_t *n_out,
                      ac_error_t *err)
{
    *out = NULL;
    *n_out = 0;
    const char *list = spec_annotation(spec, "io.agentcage.credentials");
    if (list == NULL)
        return 0;
    cleanup_free char *ann = annotations_json(spec);
    cleanup_free char *record_path = xasprintf("%s/credentials", state_dir);
    cleanup_file FILE *record = fopen(record_path, "wex");
    if (record == NULL)
        return ac_error(err, errno, "write `%s`", record_path);
    const char *pos = list;
    char name[64];
    int64_t ttl_ms;
    int r;
    while ((r = tier_credentials_next(&pos, name, &ttl_ms, err)) > 0) {
        const struct tier_credential *cred = tier_credential_find(&g->tier, name);
        if (cred == NULL || cred->broker == NULL)
            return ac_error(err, 0, "credential %s: no broker", name);
        if (ttl_ms <= 0 || ttl_ms > timeout_ms)
            ttl_ms = timeout_ms;
        cleanup_free char *jname = audit_json_string(name), *jid = audit_json_string(id);
        cleanup_free char *request =
            xasprintf("{\"action\":\"issue\",\"name\":%s,\"container\":%s,\"tier\":%d,\"ttl\":%lld,\"annotations\":%s}\n",
                      jname, jid, tier, (long long)(ttl_ms + 999) / 1000, ann);
        char *reply = NULL;
        if (run_broker(cred->broker, name, request, &reply, err) < 0)
            return -1;
        char ebuf[128];
        yajl_val tree = yajl_tree_parse(reply, ebuf, sizeof(ebuf));
        explicit_bzero(reply, strlen(reply));
        free(reply);
        const char *sp[] = {"secret", NULL};
        yajl_val secret = tree ? yajl_tree_get(tree, sp, yajl_t_string) : NULL;
        if (secret == NULL || secret->u.string[0] == '\0') {
            if (tree) {
                if (secret)
                    explicit_bzero(secret->u.string, strlen(secret->u.string));
                yajl_tree_free(tree);
            }
            return ac_error(err, 0, "credential %s: the broker's answer has no \"secret\"", name);
        }
        *out = xrealloc(*out, (*n_out + 1) * sizeof(**out));
        struct credential_secret *cs = &(*out)[(*n_out)++];
        snprintf(cs->name, sizeof(cs->name), "%s", name);
        cs->secret = xstrdup(secret->u.string);
        explicit_bzero(secret->u.string, strlen(secret->u.string));
        yajl_tree_free(tree);
        long long expires = now_ms() + ttl_ms;
        fprintf(record, "%s %lld 0\n", name, expires);
        fflush(record);
        cleanup_free char *members = xasprintf("\"name\":%s,\"ttlMs\":%lld", jname, (long long)ttl_ms);
        container_audit(g, "credential-issued", id, members);
    }
    return r < 0 ? -1 : 0;
}

void credentials_forget(struct credential_secret *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        explicit_bzero(list[i].secret, strlen(list[i].secret));
        free(list[i].secret);
    }
    free(list);
}

/* The record: names, expiries, whether revoked. */
struct issued {
    char name[64];
    long long expires;
    int revoked;
};

static size_t read_issued(const char *state_dir, struct issued **out)
{
    cleanup_free char *path = xasprintf("%s/credentials", state_dir);
    cleanup_file FILE *f = fopen(path, "re");
    size_t n = 0;
    *out = NULL;
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
        struct issued it;
        if (sscanf(line, "%63s %lld %d", it.name, &it.expires, &it.revoked) != 3)
            continue;
        *out = xrealloc(*out, (n + 1) * sizeof(**out));
        (*out)[n++] = it;
    }
    return n;
}

static void write_issued(const char *state_dir, const struct issued *list, size_t n)
{
    cleanup_free char *tmp = xasprintf("%s/.credentials.tmp", state_dir);
    cleanup_free char *path = xasprintf("%s/credentials", state_dir);
    FILE *f = fopen(tmp, "we");
    if (f == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s %lld %d\n", list[i].name, list[i].expires, list[i].revoked);
    if (fclose(f) == 0)
        rename(tmp, path);
}

void credentials_revoke_all(const struct global_opts *g, const char *state_dir, const char *id, const char *why)
{
    struct issued *list;
    size_t n = read_issued(state_dir, &list);
    for (size_t i = 0; i < n; i++)
        if (!list[i].revoked) {
            revoke_one(g, id, list[i].name, why);
            list[i].revoked = 1;
        }
    if (n)
        write_issued(state_dir, list, n);
    free(list);
}

long long credentials_next_expiry(const char *state_dir)
{
    struct issued *list;
    size_t n = read_issued(state_dir, &list);
    long long next = 0;
    for (size_t i = 0; i < n; i++)
        if (!list[i].revoked && (next == 0 || list[i].expires < next))
            next = list[i].expires;
    free(list);
    return next;
}

int credentials_expire(const struct global_opts *g, const char *state_dir, const char *id, pid_t init_pid,
                       ac_error_t *err)
{
    struct issued *list;
    size_t n = read_issued(state_dir, &list);
    long long now = now_ms();
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        if (list[i].revoked || list[i].expires > now)
            continue;
        /* the file first, inside the container's mount namespace (under
         * gVisor: in the secrets' tmpfs on the host, which its gofer
         * serves), then the broker */
        cleanup_free char *host = xasprintf("%s/secrets/%s", state_dir, list[i].name);
        cleanup_free char *host_dir = xasprintf("%s/secrets", state_dir);
        pid_t child = access(host_dir, F_OK) == 0 ? (unlink(host) == 0 || errno == ENOENT ? -2 : -3) : fork();
        if (child == 0) {
            cleanup_free char *ns = xasprintf("/proc/%d/ns/mnt", init_pid);
            int fd = open(ns, O_RDONLY | O_CLOEXEC);
            if (fd < 0 || setns(fd, CLONE_NEWNS) < 0)
                _exit(1);
            cleanup_free char *file = xasprintf("/run/secrets/%s", list[i].name);
            _exit(unlink(file) == 0 || errno == ENOENT ? 0 : 1);
        }
        int status = child == -2 ? 0 : 1;
        if (child > 0)
            while (waitpid(child, &status, 0) < 0 && errno == EINTR)
                ;
        if (child == -3 || child == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ac_warn("credential %s of %s: remove /run/secrets/%s failed", list[i].name, id, list[i].name);
        revoke_one(g, id, list[i].name, "ttl");
        list[i].revoked = 1;
        changed = true;
    }
    if (changed)
        write_issued(state_dir, list, n);
    free(list);
    (void)err;
    return 0;
}
