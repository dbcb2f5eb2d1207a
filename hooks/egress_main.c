/* agentcage-egress: the per-container egress proxy of tiers 2 and 3.
 *
 * As a createRuntime hook it starts a proxy daemon whose listening socket
 * lives INSIDE the container's network namespace (127.0.0.1:3128; the
 * container has nothing but lo) while every outgoing connection is made
 * from the host's namespace. So the only way out of the container is this
 * proxy, and a proxy that dies closes the door instead of opening it.
 *
 * It speaks HTTP CONNECT and plain absolute-URI HTTP, only to hosts on the
 * allowlist (io.agentcage.egress), resolves names itself, refuses IP
 * literals unless listed, checks the TLS ClientHello's SNI against the
 * CONNECT host, caps bytes per second and in total, has no UDP toward the
 * container, and audits every decision.
 *
 * The daemon is two processes, split like OpenSSH's privilege separation:
 *   - the worker handles the container's bytes (egress_parse.c parses
 *     them). Before it reads one it enters helper_sandbox_enter: an empty
 *     read-only root, an unprivileged uid, no capabilities, no_new_privs,
 *     Landlock, a seccomp allow-list. Its decisions go to the writer as
 *     records over a SOCK_SEQPACKET socket;
 *   - the writer, its parent, checks each record's shape
 *     (egress_record_parse), appends it to the audit log, counts refusals
 *     and kills the container past io.agentcage.max-denials. It keeps only
 *     root's uid and CAP_KILL. A record of the wrong shape, or the worker's
 *     death, ends the proxy (audited). It exits when the container's init
 *     exits (pidfd); `agentcage-egress --stop` (poststop) kills it, and the
 *     worker dies with it (PR_SET_PDEATHSIG). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <malloc.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/linux/helper_sandbox.h"
#include "runtime/linux/rootless.h"
#include "runtime/linux/sync.h"
#include "runtime/util/utils.h"
#include "hooks/audit.h"
#include "hooks/egress_parse.h"
#include "hooks/hook_state.h"
#include "hooks/policy_hooks.h"

#define PROG "agentcage-egress"
#define DEFAULT_PID_DIR "/run/agentcage-egress"
#define DEFAULT_USER "agentcage-egress"
#define DEFAULT_RATE (1ULL << 20)        /* bytes per second */
#define DEFAULT_BYTES (100ULL << 20)     /* per container, both directions */
#define DEFAULT_MAX_DENIALS 20
#define DEFAULT_HEAD_TIMEOUT_S 10        /* for a request head or a ClientHello, in all */
#define MAX_CONNECTIONS 64
#define IO_TIMEOUT_S 30
#define THREAD_STACK (256 * 1024)
/* the worker's fds: the listening socket and its end of the record socket */
#define WORKER_LISTEN_FD 3
#define WORKER_RECORD_FD 4

struct test_name {
    char *name;
    char *addr;
};

/* The proxy's configuration, fixed before the daemon starts. */
static struct {
    const char *audit_log;
    const char *pid_dir;
    const char *allow_text; /* as given, for the start record */
    char *id;
    int port;
    struct egress_allowlist allow;
    struct test_name *test;
    size_t n_test;
    uint64_t rate, cap;
    long max_denials;
    int head_timeout_s;
    int pidfd;
    struct helper_sandbox sandbox;
} conf = {.port = EGRESS_PROXY_PORT, .pid_dir = DEFAULT_PID_DIR, .pidfd = -1, .head_timeout_s = DEFAULT_HEAD_TIMEOUT_S};

/* The worker's, shared by its connection threads. */
static atomic_uint_fast64_t bytes_total;
static atomic_int connections;
static atomic_bool cap_reported;
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static long long rate_next_ns;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [options] < state.json     (OCI createRuntime hook)\n"
            "       " PROG " --stop [options] < state.json  (OCI poststop hook)\n\n"
            "Starts the container's egress proxy: it listens on 127.0.0.1:PORT inside the container's\n"
            "network namespace and connects out from the host, only to hosts in the annotation\n"
            "io.agentcage.egress (comma-separated host[:port], *.suffix wildcards; no port = 80 and 443).\n"
            "Annotations io.agentcage.egress-rate (bytes/s, default 1MiB), io.agentcage.egress-bytes\n"
            "(total, default 100MiB) and io.agentcage.max-denials (default %d) may only tighten the\n"
            "operator's ceilings below. The process reading the container's bytes runs as USER, with no\n"
            "capabilities, seccomp, Landlock and an empty read-only root (rootless: as the invoking user).\n\n"
            "Options:\n"
            "  --audit-log FILE     audit trail (default " AUDIT_DEFAULT_LOG ")\n"
            "  --port N             proxy port inside the container (default %d)\n"
            "  --allow LIST         allowlist instead of the annotation\n"
            "  --max-rate SIZE      ceiling of bytes per second\n"
            "  --max-bytes SIZE     ceiling of total bytes\n"
            "  --max-denials N      ceiling of refused requests before the container is killed (0: never)\n"
            "  --head-timeout SECS  time for a request head or a ClientHello to arrive (default %d)\n"
            "  --user USER          the unprivileged user of the proxy (default " DEFAULT_USER ")\n"
            "  --resolv-conf FILE   the resolver configuration the proxy uses (default /etc/resolv.conf)\n"
            "  --pid-dir DIR        where the proxy's pid file lives (default " DEFAULT_PID_DIR ")\n"
            "  --test-resolve LIST  name=ip,...: resolve these names to these addresses (tests only;\n"
            "                       also $AGENTCAGE_EGRESS_TEST_RESOLVE)\n"
            "  --stop               kill the container's proxy (poststop)\n"
            "  --help\n",
            DEFAULT_MAX_DENIALS, EGRESS_PROXY_PORT, DEFAULT_HEAD_TIMEOUT_S);
}

static void __attribute__((noreturn)) die_error(ac_error_t *err)
{
    cleanup_free char *msg = ac_error_string(*err);
    fprintf(stderr, PROG ": %s\n", msg);
    exit(1);
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int parse_test_resolve(const char *list, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !egress_is_ip_literal(eq + 1))
            return ac_error(err, 0, "--test-resolve: expected name=ip, got `%s`", tok);
        *eq = '\0';
        conf.test = xrealloc(conf.test, (conf.n_test + 1) * sizeof(*conf.test));
        conf.test[conf.n_test].name = xstrdup(tok);
        for (char *c = conf.test[conf.n_test].name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        conf.test[conf.n_test++].addr = xstrdup(eq + 1);
    }
    return 0;
}

/* ================================================================ the worker */

/* A record for the writer (key, value pairs, NULL-terminated; keys with
 * '=' carry numbers). The worker never writes the audit log itself; it
 * waits for the writer's one-byte acknowledgement, so a decision is in the
 * log before the client sees its effect (one record at a time: the lock
 * keeps each acknowledgement with its record). */
static void record(const char *event, ...) __attribute__((sentinel));
static void record(const char *event, ...)
{
    const char *kv[2 * EGRESS_RECORD_PAIRS + 1];
    size_t n = 0;
    va_list ap;
    va_start(ap, event);
    const char *item;
    while (n < 2 * EGRESS_RECORD_PAIRS && (item = va_arg(ap, const char *)) != NULL)
        kv[n++] = item;
    va_end(ap);
    kv[n] = NULL;
    char buf[EGRESS_RECORD_MAX];
    size_t len = egress_record_encode(buf, sizeof(buf), event, kv);
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    char ack;
    pthread_mutex_lock(&lock);
    /* a lost writer ends the worker soon (PR_SET_PDEATHSIG) */
    if (len > 0 && send(WORKER_RECORD_FD, buf, len, MSG_NOSIGNAL) == (ssize_t)len &&
        recv(WORKER_RECORD_FD, &ack, 1, 0) != 1) {
        /* nothing to report to */
    }
    pthread_mutex_unlock(&lock);
}

static int connect_with_timeout(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Resolve (or take the test map's address) and connect; the address used
 * goes to addr_out. -1 with a reason. */
static int connect_upstream(const char *host, int port, char *addr_out, size_t addr_len, const char **why)
{
    const char *name = host;
    bool trusted = egress_is_ip_literal(host); /* listed literally by the operator or agent framework */
    for (size_t i = 0; i < conf.n_test; i++)
        if (strcmp(conf.test[i].name, host) == 0) {
            name = conf.test[i].addr;
            trusted = true;
        }
    char service[8];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    if (getaddrinfo(name, service, &hints, &res) != 0) {
        *why = "name does not resolve";
        return -1;
    }
    int fd = -1;
    *why = "connect failed";
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        if (!trusted && egress_forbidden_address(ai->ai_addr)) {
            *why = "name resolves to a loopback or link-local address";
            continue;
        }
        fd = connect_with_timeout(ai);
        if (fd >= 0) {
            void *a = ai->ai_family == AF_INET ? (void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                                               : (void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
            inet_ntop(ai->ai_family, a, addr_out, (socklen_t)addr_len);
        }
    }
    freeaddrinfo(res);
    return fd;
}

static void reply_status(int client, const char *status)
{
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status);
    if (write_all(client, msg, (size_t)n) < 0) {
        /* the client went away */
    }
}

/* A refusal: audited (the writer counts it), and with reply a 403 naming
 * it. host may be the raw text the client sent. */
static void deny(int client, const char *method, const char *host, int port, const char *reason, bool reply)
{
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    record("egress-deny", "method", method, "host", host, "=port", port_s, "reason", reason, NULL);
    if (reply) {
        char body[512], msg[768];
        int blen = snprintf(body, sizeof(body), "agentcage egress: %.200s:%d refused: %s\n", host, port, reason);
        int n = snprintf(msg, sizeof(msg),
                         "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                         "Content-Length: %d\r\n\r\n%s",
                         blen, body);
        if (write_all(client, msg, (size_t)n) < 0) {
            /* the client went away: nothing to tell */
        }
    }
}

/* A request the proxy cannot read: audited as a refusal, answered with
 * status (400, 408, 431). */
static void refuse_request(int client, const char *status, const char *reason)
{
    record("egress-deny", "reason", reason, NULL);
    reply_status(client, status);
}

/* Wait until n more bytes fit the per-container rate (a shared schedule:
 * each chunk books its slot; at most one second of burst). */
static void throttle(size_t n)
{
    pthread_mutex_lock(&rate_lock);
    long long now = mono_ns();
    if (rate_next_ns < now - 1000000000LL)
        rate_next_ns = now - 1000000000LL;
    rate_next_ns += (long long)((double)n * 1e9 / (double)conf.rate);
    long long wait = rate_next_ns - now;
    pthread_mutex_unlock(&rate_lock);
    if (wait > 0) {
        struct timespec ts = {.tv_sec = wait / 1000000000LL, .tv_nsec = wait % 1000000000LL};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
}

/* Book n bytes against the total; false once the cap would be passed. */
static bool account(size_t n)
{
    uint64_t before = atomic_fetch_add(&bytes_total, n);
    if (before + n <= conf.cap)
        return true;
    if (!atomic_exchange(&cap_reported, true)) {
        char cap[32];
        snprintf(cap, sizeof(cap), "%llu", (unsigned long long)conf.cap);
        record("egress-deny", "reason", "byte cap reached, connection closed", "=cap", cap, NULL);
    }
    return false;
}

/* Copy both ways until both sides are done, the cap is hit or nothing
 * moves for IO_TIMEOUT_S. */
static void relay(int client, int upstream)
{
    int fds[2] = {client, upstream};
    bool open_in[2] = {true, true};
    char buf[16384];
    while (open_in[0] || open_in[1]) {
        struct pollfd p[2] = {{.fd = open_in[0] ? client : -1, .events = POLLIN},
                              {.fd = open_in[1] ? upstream : -1, .events = POLLIN}};
        int r = poll(p, 2, IO_TIMEOUT_S * 1000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        for (int i = 0; i < 2; i++) {
            if (!open_in[i] || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(fds[i], buf, sizeof(buf));
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                open_in[i] = false;
                shutdown(fds[1 - i], SHUT_WR);
                continue;
            }
            if (!account((size_t)n))
                return;
            throttle((size_t)n);
            if (write_all(fds[1 - i], buf, (size_t)n) < 0)
                return;
        }
    }
}

/* One read before the deadline (CLOCK_MONOTONIC ns): >0 bytes, 0 at EOF,
 * -1 on an error, -2 when the deadline passed. */
static ssize_t read_by(int fd, void *buf, size_t len, long long deadline)
{
    for (;;) {
        long long left_ms = (deadline - mono_ns()) / 1000000;
        if (left_ms <= 0)
            return -2;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return -2;
        if (r < 0)
            return -1;
        ssize_t n = read(fd, buf, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        return n;
    }
}

static void handle_connect(int client, const char *target, const char *rest, size_t rest_len)
{
    cleanup_free char *host = NULL;
    int port;
    const char *why;
    if (egress_parse_host_port(target, 0, &host, &port, &why) < 0 || port == 0) {
        deny(client, "CONNECT", target, 0, "malformed CONNECT target", true);
        return;
    }
    why = egress_allowlist_check(&conf.allow, host, port);
    if (!why && atomic_load(&bytes_total) >= conf.cap)
        why = "byte cap reached";
    if (why) {
        deny(client, "CONNECT", host, port, why, true);
        return;
    }
    static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (write_all(client, established, sizeof(established) - 1) < 0)
        return;
    /* Nothing leaves before the ClientHello names the same host; it may
     * span several records, and must come within the head timeout. */
    cleanup_free unsigned char *hello = xmalloc(EGRESS_HELLO_WIRE_MAX);
    size_t have = rest_len > EGRESS_HELLO_WIRE_MAX ? EGRESS_HELLO_WIRE_MAX : rest_len;
    memcpy(hello, rest, have);
    char sni[256];
    long long deadline = mono_ns() + conf.head_timeout_s * 1000000000LL;
    enum egress_hello h;
    while ((h = egress_client_hello(hello, have, sni, sizeof(sni))) == EGRESS_HELLO_NEED_MORE &&
           have < EGRESS_HELLO_WIRE_MAX) {
        ssize_t n = read_by(client, hello + have, EGRESS_HELLO_WIRE_MAX - have, deadline);
        if (n <= 0) {
            deny(client, "CONNECT", host, port,
                 n == -2 ? "no complete TLS ClientHello within the head timeout" : "no TLS ClientHello", false);
            return;
        }
        have += (size_t)n;
    }
    if (h == EGRESS_HELLO_BAD || h == EGRESS_HELLO_NEED_MORE) {
        deny(client, "CONNECT", host, port, "no TLS ClientHello", false);
        return;
    }
    if (h == EGRESS_HELLO_NO_SNI && !egress_is_ip_literal(host)) {
        deny(client, "CONNECT", host, port, "TLS ClientHello without SNI", false);
        return;
    }
    if (h == EGRESS_HELLO_SNI && strcmp(sni, host) != 0) {
        cleanup_free char *reason = xasprintf("TLS SNI `%s` differs from CONNECT host", sni);
        deny(client, "CONNECT", host, port, reason, false);
        return;
    }
    char addr[INET6_ADDRSTRLEN] = "";
    cleanup_close int upstream = connect_upstream(host, port, addr, sizeof(addr), &why);
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    if (upstream < 0) {
        deny(client, "CONNECT", host, port, why, false);
        return;
    }
    record("egress-allow", "method", "CONNECT", "host", host, "=port", port_s, "address", addr, NULL);
    if (!account(have) || write_all(upstream, hello, have) < 0)
        return;
    relay(client, upstream);
}

/* Plain HTTP: "GET http://host[:port]/path HTTP/1.1". The request goes out
 * in origin form with Host set from the URL and Connection: close, so one
 * tunnel is one request. */
static void handle_http(int client, const struct egress_request *req, const char *rest, size_t rest_len)
{
    cleanup_free char *host = NULL, *path = NULL;
    int port;
    const char *why;
    if (egress_parse_http_url(req->target, &host, &port, &path, &why) < 0) {
        deny(client, req->method, req->target, 0, why, true);
        return;
    }
    why = egress_allowlist_check(&conf.allow, host, port);
    if (!why && atomic_load(&bytes_total) >= conf.cap)
        why = "byte cap reached";
    if (why) {
        deny(client, req->method, host, port, why, true);
        return;
    }
    char addr[INET6_ADDRSTRLEN] = "";
    cleanup_close int upstream = connect_upstream(host, port, addr, sizeof(addr), &why);
    if (upstream < 0) {
        deny(client, req->method, host, port, why, true);
        return;
    }
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    record("egress-allow", "method", req->method, "host", host, "=port", port_s, "address", addr, "path", path,
           NULL);
    size_t len;
    cleanup_free char *out = egress_request_rebuild(req, host, port, path, &len);
    if (!account(len + rest_len) || write_all(upstream, out, len) < 0 || write_all(upstream, rest, rest_len) < 0)
        return;
    relay(client, upstream);
}

static void *connection_thread(void *arg)
{
    cleanup_close int client = (int)(intptr_t)arg;
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    cleanup_free char *head = xmalloc(EGRESS_HEAD_MAX + 1);
    size_t have = 0;
    long end = 0;
    long long deadline = mono_ns() + conf.head_timeout_s * 1000000000LL;
    while (end == 0 && have < EGRESS_HEAD_MAX) {
        ssize_t n = read_by(client, head + have, EGRESS_HEAD_MAX - have, deadline);
        if (n == -2) {
            refuse_request(client, "408 Request Timeout", "request head not complete within the head timeout");
            goto out;
        }
        if (n <= 0) {
            /* a connection closed before it asked anything is no request */
            if (have > 0)
                refuse_request(client, "400 Bad Request", "connection closed inside the request head");
            goto out;
        }
        have += (size_t)n;
        end = egress_head_end(head, have);
    }
    if (end < 0) {
        refuse_request(client, "400 Bad Request", "NUL byte in the request head");
        goto out;
    }
    if (end == 0) {
        refuse_request(client, "431 Request Header Fields Too Large", "request head over 16 KiB");
        goto out;
    }
    struct egress_request req;
    const char *why;
    if (egress_request_parse(head, (size_t)end, &req, &why) < 0) {
        refuse_request(client, "400 Bad Request", why);
        goto out;
    }
    if (strcmp(req.method, "CONNECT") == 0)
        handle_connect(client, req.target, head + end, have - (size_t)end);
    else
        handle_http(client, &req, head + end, have - (size_t)end);
out:
    atomic_fetch_sub(&connections, 1);
    return NULL;
}

/* The worker's loop: accept until the writer goes (its end of the record
 * socket hangs up). */
static void __attribute__((noreturn)) serve(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    for (;;) {
        struct pollfd p[2] = {{.fd = WORKER_LISTEN_FD, .events = POLLIN}, {.fd = WORKER_RECORD_FD, .events = 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents & (POLLHUP | POLLERR))
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int client = accept4(WORKER_LISTEN_FD, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        if (atomic_fetch_add(&connections, 1) >= MAX_CONNECTIONS) {
            atomic_fetch_sub(&connections, 1);
            reply_status(client, "503 Too Many Connections");
            close(client);
            char n[16];
            snprintf(n, sizeof(n), "%d", MAX_CONNECTIONS);
            record("egress-busy", "=connections", n, NULL);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &attr, connection_thread, (void *)(intptr_t)client) != 0) {
            atomic_fetch_sub(&connections, 1);
            close(client);
        }
    }
    _exit(0);
}

/* The worker, just forked: its fds in place, the sandbox on, then it tells
 * the writer through status (one byte 'R', or the error's line). */
static void __attribute__((noreturn)) run_worker(int listen_fd, int record_fd, int status_fd, pid_t writer)
{
    ac_error_t err = NULL;
    /* the listening socket and the record socket at fixed numbers, every
     * other fd (the container's pidfd, the ready pipe) closed; first all
     * above the targets, so no dup2 meets another's fd */
    int fds[3] = {listen_fd, record_fd, status_fd};
    for (int i = 0; i < 3; i++)
        if ((fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0)
            _exit(1);
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], WORKER_LISTEN_FD + i) < 0)
            _exit(1);
    if (close_range(WORKER_LISTEN_FD + 3, ~0U, 0) < 0)
        _exit(1);
    status_fd = WORKER_LISTEN_FD + 2;
    /* one malloc arena: a thread per connection needs no arena of its own */
    mallopt(M_ARENA_MAX, 1);
    conf.sandbox.parent = writer;
    if (helper_sandbox_enter(&conf.sandbox, &err) < 0) {
        char *msg = ac_error_string(err);
        if (write_all(status_fd, msg, strlen(msg)) < 0)
            _exit(1);
        _exit(1);
    }
    if (write(status_fd, "R", 1) != 1)
        _exit(1);
    close(status_fd);
    serve();
}

/* ================================================================ the writer */

static char *pid_file_path(const char *id) { return xasprintf("%s/%s.pid", conf.pid_dir, id); }

static void audit_or_warn(const char *event, ...) __attribute__((sentinel));
/* Audit from the writer: a failure to write is reported on stderr (the
 * hook's while it starts, /dev/null later), so the decision stands either
 * way (a refusal stays a refusal). */
static void audit_or_warn(const char *event, ...)
{
    cleanup_error ac_error_t err = NULL;
    va_list ap;
    va_start(ap, event);
    if (audit_recordv(conf.audit_log, event, conf.id, &err, ap) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        fprintf(stderr, PROG ": audit: %s\n", msg);
    }
    va_end(ap);
}

/* A record the worker sent, whose shape egress_record_parse checked: to
 * the log, under our container id. */
static void audit_worker_record(const struct egress_record *rec)
{
    cleanup_free char *members = xstrdup("");
    for (size_t i = 0; i < rec->n; i++) {
        bool number = rec->key[i][0] == '=';
        cleanup_free char *key = audit_json_string(number ? rec->key[i] + 1 : rec->key[i]);
        cleanup_free char *value = number ? xstrdup(rec->value[i]) : audit_json_string(rec->value[i]);
        char *grown = xasprintf("%s%s%s:%s", members, i ? "," : "", key, value);
        free(members);
        members = grown;
    }
    ac_error_t err = NULL;
    if (audit_append(conf.audit_log, rec->event, conf.id, members, &err) < 0)
        ac_error_free(&err);
}

/* Refusals counted; past the threshold the container is treated as
 * compromised and killed. */
static void count_denial(void)
{
    static long denials;
    static bool killed;
    denials++;
    if (conf.max_denials <= 0 || denials < conf.max_denials || killed)
        return;
    killed = true;
    char count[32], limit[32];
    snprintf(count, sizeof(count), "%ld", denials);
    snprintf(limit, sizeof(limit), "%ld", conf.max_denials);
    int r = pidfd_send_signal(conf.pidfd, SIGKILL, NULL, 0);
    audit_or_warn("denial-kill", "=denials", count, "=limit", limit, "source", "egress", "result",
                  r == 0 ? "killed" : "kill failed", NULL);
}

static bool record_has(const struct egress_record *rec, const char *key)
{
    for (size_t i = 0; i < rec->n; i++)
        if (strcmp(rec->key[i], key) == 0)
            return true;
    return false;
}

/* remove our pid file unless a newer proxy took the name */
static void remove_pid_file(void)
{
    cleanup_free char *path = pid_file_path(conf.id);
    cleanup_free char *text = NULL;
    size_t len;
    ac_error_t err = NULL;
    if (read_all_file(path, &text, &len, &err) == 0 && atoi(text) == getpid())
        unlink(path);
    ac_error_free(&err);
}

/* How the worker ended, for the audit record. */
static void worker_exit_text(int worker_pidfd, char *out, size_t len)
{
    siginfo_t si = {0};
    if (waitid(P_PIDFD, (id_t)worker_pidfd, &si, WEXITED) < 0)
        snprintf(out, len, "unknown");
    else if (si.si_code == CLD_EXITED)
        snprintf(out, len, "exit %d", si.si_status);
    else
        snprintf(out, len, "signal %s", sigabbrev_np(si.si_status) ? sigabbrev_np(si.si_status) : "?");
}

/* The writer's loop: records in, until the container's init or the worker
 * is gone, or the worker sends something that is not a record. */
static void __attribute__((noreturn)) run_writer(int record_fd, int worker_pidfd)
{
    static char msg[EGRESS_RECORD_MAX + 1];
    for (;;) {
        struct pollfd p[3] = {{.fd = record_fd, .events = POLLIN},
                              {.fd = conf.pidfd, .events = POLLIN},
                              {.fd = worker_pidfd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents & POLLIN) {
            ssize_t n = recv(record_fd, msg, sizeof(msg), MSG_TRUNC);
            struct egress_record rec;
            const char *why = "message too long";
            if (n > 0 && (size_t)n <= EGRESS_RECORD_MAX && egress_record_parse(msg, (size_t)n, &rec, &why) == 0) {
                audit_worker_record(&rec);
                if (send(record_fd, "A", 1, MSG_NOSIGNAL) != 1)
                    break;
                /* the cap's notice is the end of a transfer, not a refusal */
                if (strcmp(rec.event, "egress-deny") == 0 && !record_has(&rec, "=cap"))
                    count_denial();
                continue;
            }
            if (n > 0) {
                /* a worker that sends anything else is not ours any more */
                pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
                audit_or_warn("egress-proxy-stopped", "reason", "bad record from the worker", "detail", why, NULL);
                break;
            }
        }
        if (p[1].revents)
            break; /* the container's init is gone */
        if (p[2].revents || (p[0].revents & (POLLHUP | POLLERR))) {
            char how[64];
            worker_exit_text(worker_pidfd, how, sizeof(how));
            audit_or_warn("egress-proxy-stopped", "reason", "the worker ended", "detail", how, NULL);
            break;
        }
    }
    pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
    remove_pid_file();
    _exit(0);
}

/* Our pid file, written whole or not at all. */
static int write_pid_file(ac_error_t *err)
{
    cleanup_free char *path = pid_file_path(conf.id);
    cleanup_free char *tmp = xasprintf("%s.tmp%d", path, getpid());
    cleanup_free char *text = xasprintf("%d", getpid());
    cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
        return ac_error(err, errno, "pid file `%s`", path);
    return 0;
}

static int audit_started(ac_error_t *err)
{
    char port_s[16], rate_s[32], cap_s[32], den_s[32];
    snprintf(port_s, sizeof(port_s), "%d", conf.port);
    snprintf(rate_s, sizeof(rate_s), "%llu", (unsigned long long)conf.rate);
    snprintf(cap_s, sizeof(cap_s), "%llu", (unsigned long long)conf.cap);
    snprintf(den_s, sizeof(den_s), "%ld", conf.max_denials);
    return audit_record(conf.audit_log, "egress-proxy-started", conf.id, err, "allow", conf.allow_text, "=port",
                        port_s, "=rate", rate_s, "=cap", cap_s, "=max_denials", den_s, NULL);
}

/* Fork the worker and wait until it is confined (its status pipe says 'R'
 * or why not); in between, drop our own privileges. The record socket's
 * end and the worker's pidfd come back. */
static int start_worker(int listen_fd, int ready, int *record_fd, int *worker_pidfd, ac_error_t *err)
{
    int rec[2], status[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rec) < 0)
        return ac_error(err, errno, "socketpair");
    if (pipe2(status, O_CLOEXEC) < 0)
        return ac_error(err, errno, "pipe");
    pid_t writer = getpid(), worker = fork();
    if (worker < 0)
        return ac_error(err, errno, "fork the worker");
    if (worker == 0) {
        close(ready);
        run_worker(listen_fd, rec[1], status[1], writer);
    }
    close(listen_fd);
    close(rec[1]);
    close(status[1]);
    cleanup_close int status_fd = status[0];
    *record_fd = rec[0];
    *worker_pidfd = pidfd_open(worker, 0);
    if (*worker_pidfd < 0) {
        kill(worker, SIGKILL);
        return ac_error(err, errno, "pidfd_open of the worker");
    }
    /* the writer's own drop: what it writes is all it may touch */
    cleanup_free char *log_copy = xstrdup(conf.audit_log ? conf.audit_log : AUDIT_DEFAULT_LOG);
    const char *dirs[] = {dirname(log_copy), conf.pid_dir, NULL};
    if (helper_keep_kill_only(dirs, err) < 0)
        return -1;
    char msg[512];
    ssize_t n;
    do
        n = read(status_fd, msg, sizeof(msg) - 1);
    while (n < 0 && errno == EINTR);
    if (n == 1 && msg[0] == 'R')
        return 0;
    msg[n > 0 ? n : 0] = '\0';
    return ac_error(err, 0, "%s", n > 0 ? msg : "the proxy's worker did not start");
}

/* The daemon, in its own session with stdio on /dev/null: pid file, start
 * record, the worker forked and confined, our own privileges dropped; then
 * 'R' (or the error's line) on ready and the writer's loop. */
static void __attribute__((noreturn)) run_daemon(int listen_fd, int ready)
{
    ac_error_t err = NULL;
    int record_fd = -1, worker_pidfd = -1;
    /* no audit trail, no door */
    if (write_pid_file(&err) < 0 || audit_started(&err) < 0 ||
        start_worker(listen_fd, ready, &record_fd, &worker_pidfd, &err) < 0) {
        if (worker_pidfd >= 0)
            pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
        char *line = ac_error_string(err);
        if (write_all(ready, line, strlen(line)) < 0)
            _exit(1);
        remove_pid_file();
        _exit(1);
    }
    if (write(ready, "R", 1) != 1)
        _exit(1);
    close(ready);
    run_writer(record_fd, worker_pidfd);
}

/* ================================================================ the hook */

/* Bring lo up in the current (the container's) namespace: the proxy binds
 * 127.0.0.1 there before the runtime's own setup may have done it. */
static int loopback_up_here(ac_error_t *err)
{
    cleanup_close int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    if (s < 0)
        return ac_error(err, errno, "socket in the container's netns");
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        return ac_error(err, errno, "get flags of lo");
    if (ifr.ifr_flags & IFF_UP)
        return 0;
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        return ac_error(err, errno, "bring lo up");
    return 0;
}

/* The listening socket, made inside the container's netns by a child: a
 * socket keeps the namespace it was created in, so the daemon accepts the
 * container's connections on it and connects out on the host. */
static int listen_in_container(pid_t pid, ac_error_t *err)
{
    cleanup_close int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (host_ns < 0)
        return ac_error(err, errno, "open /proc/self/ns/net");
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
    cleanup_close int container_ns = open(path, O_RDONLY | O_CLOEXEC);
    if (container_ns < 0)
        return ac_error(err, errno, "open %s", path);
    /* the pid might have been reused between pidfd_open and here */
    if (pidfd_send_signal(conf.pidfd, 0, NULL, 0) < 0)
        return ac_error(err, errno, "container init %d", pid);
    struct stat host_st, cont_st;
    if (fstat(host_ns, &host_st) < 0 || fstat(container_ns, &cont_st) < 0)
        return ac_error(err, errno, "fstat netns");
    if (host_st.st_ino == cont_st.st_ino && host_st.st_dev == cont_st.st_dev)
        return ac_error(err, 0, "the container shares the host's network namespace: an egress proxy "
                                "needs a network namespace of its own");
    /* A child enters the container's namespace, makes the socket and hands
     * it back; we never leave the host's (rootless, there is no way back). */
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
        return ac_error(err, errno, "socketpair");
    pid_t child = fork();
    if (child < 0) {
        close(pair[0]);
        close(pair[1]);
        return ac_error(err, errno, "fork");
    }
    if (child == 0) {
        close(pair[0]);
        ac_error_t e = NULL;
        int fd = -1, one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)conf.port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        /* Rootless, the capability to enter the container's network
         * namespace is held in its user namespace: enter that first (a
         * no-op when it is ours). */
        char upath[64];
        snprintf(upath, sizeof(upath), "/proc/%d/ns/user", pid);
        int user_ns = open(upath, O_RDONLY | O_CLOEXEC);
        struct stat own, theirs;
        if (user_ns >= 0 && geteuid() != 0 && stat("/proc/self/ns/user", &own) == 0 && fstat(user_ns, &theirs) == 0 &&
            own.st_ino != theirs.st_ino && setns(user_ns, CLONE_NEWUSER) < 0)
            ac_error(&e, errno, "setns into the container's user namespace");
        else if (setns(container_ns, CLONE_NEWNET) < 0)
            ac_error(&e, errno, "setns into the container's network namespace");
        else if (loopback_up_here(&e) == 0) {
            fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
                ac_error(&e, errno, "listen on 127.0.0.1:%d in the container", conf.port);
        }
        if (e) {
            char *msg = ac_error_string(e);
            if (write_all(pair[1], msg, strlen(msg)) < 0)
                _exit(1);
            _exit(1);
        }
        _exit(send_fd(pair[1], fd, "l") < 0 ? 1 : 0);
    }
    close(pair[1]);
    /* the socket (SCM_RIGHTS), or the child's one-line error as data */
    char msg[512] = "";
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof(msg) - 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t n = recvmsg(pair[0], &mh, MSG_CMSG_CLOEXEC);
    close(pair[0]);
    waitpid(child, NULL, 0);
    struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
    if (cm && cm->cmsg_type == SCM_RIGHTS) {
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        return fd;
    }
    msg[n > 0 ? n : 0] = '\0';
    return ac_error(err, 0, "%s", msg[0] ? msg : "make the listening socket in the container");
}

/* Double fork: the daemon is reparented, in a session of its own, with
 * stdio on /dev/null (so it holds no pipe of the runtime or the engine);
 * it tells us through a pipe that it and its worker are ready, or why
 * not. */
static int start_daemon(int listen_fd, ac_error_t *err)
{
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return ac_error(err, errno, "pipe");
    if (mkdir_p(conf.pid_dir, 0700, err) < 0)
        return -1;
    struct stat pd;
    if (lstat(conf.pid_dir, &pd) < 0 || !S_ISDIR(pd.st_mode) || pd.st_uid != geteuid())
        return ac_error(err, 0, "pid folder `%s` is not a folder of ours", conf.pid_dir);
    pid_t child = fork();
    if (child < 0)
        return ac_error(err, errno, "fork");
    if (child == 0) {
        close(ready[0]);
        setsid();
        pid_t daemon_pid = fork();
        if (daemon_pid != 0)
            _exit(daemon_pid < 0 ? 1 : 0);
        int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0)
            _exit(1);
        if (chdir("/") < 0)
            _exit(1);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        run_daemon(listen_fd, ready[1]);
    }
    close(ready[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    char msg[512];
    ssize_t n;
    do
        n = read(ready[0], msg, sizeof(msg) - 1);
    while (n < 0 && errno == EINTR);
    close(ready[0]);
    if (n == 1 && msg[0] == 'R')
        return 0;
    msg[n > 0 ? n : 0] = '\0';
    return ac_error(err, 0, "%s", n > 0 ? msg : "the proxy daemon did not start");
}

/* Annotation value tightened under the operator's ceiling. */
static int limit_from(const struct hook_state *st, const char *key, uint64_t ceiling, uint64_t *out,
                      ac_error_t *err)
{
    const char *v = hook_state_annotation(st, key);
    *out = ceiling;
    if (!v)
        return 0;
    uint64_t n;
    if (hook_parse_size(v, &n) < 0)
        return ac_error(err, 0, "annotation %s: bad value `%s`", key, v);
    if (n < *out)
        *out = n;
    return 0;
}

/* poststop: kill the proxy by its pid file, after making sure that pid is
 * still one of ours (/proc/PID/exe is this program). Its worker follows
 * (PR_SET_PDEATHSIG). */
static int stop_proxy(const struct hook_state *st, ac_error_t *err)
{
    cleanup_free char *path = pid_file_path(st->id);
    cleanup_free char *text = NULL;
    size_t len;
    if (read_all_file(path, &text, &len, err) < 0) {
        if (errno == ENOENT || ((*err) && (*err)->errno_value == ENOENT)) {
            ac_error_free(err);
            return 0; /* already gone (it exits with the container) */
        }
        return -1;
    }
    uint64_t pid;
    if (parse_uint64(text, &pid) < 0 || pid < 2 || pid > INT_MAX)
        return ac_error(err, 0, "%s: not a pid", path);
    char self[PATH_MAX] = "", exe[PATH_MAX] = "", link[64];
    ssize_t a = readlink("/proc/self/exe", self, sizeof(self) - 1);
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t b = readlink(link, exe, sizeof(exe) - 1);
    if (a > 0)
        self[a] = '\0';
    if (b > 0)
        exe[b] = '\0';
    /* a rebuilt binary shows as "PATH (deleted)" */
    char *deleted = strstr(exe, " (deleted)");
    if (deleted)
        *deleted = '\0';
    if (b > 0 && a > 0 && strcmp(self, exe) == 0) {
        int pidfd = pidfd_open((pid_t)pid, 0);
        if (pidfd >= 0) {
            pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            poll(&p, 1, 2000);
            close(pidfd);
        }
        audit_or_warn("egress-proxy-stopped", "=pid", text, NULL);
    }
    unlink(path);
    return 0;
}

/* Who the worker becomes: rootless, who we are (no other uid is ours to
 * take); with host root, the proxy's own system user. */
static int choose_user(const char *user, ac_error_t *err)
{
    bool rootless;
    if (rootless_detect(NULL, &rootless, err) < 0)
        return -1;
    if (rootless) {
        if (user)
            return ac_error(err, 0, "--user `%s`: rootless, the proxy runs as the invoking user", user);
        conf.sandbox.change_user = false;
        return 0;
    }
    const char *name = user ? user : DEFAULT_USER;
    errno = 0;
    struct passwd *pw = getpwnam(name);
    if (!pw)
        return ac_error(err, errno,
                        "the proxy's user `%s` does not exist (`make install` creates " DEFAULT_USER
                        ", or give --user)",
                        name);
    if (pw->pw_uid == 0 || pw->pw_gid == 0)
        return ac_error(err, 0, "the proxy's user `%s` is root's uid or gid: it must be unprivileged", name);
    conf.sandbox.change_user = true;
    conf.sandbox.uid = pw->pw_uid;
    conf.sandbox.gid = pw->pw_gid;
    return 0;
}

static void sandbox_port(int port)
{
    struct helper_sandbox *sb = &conf.sandbox;
    for (size_t i = 0; i < sb->n_ports; i++)
        if (sb->ports[i] == port)
            return;
    if (sb->n_ports < HELPER_SANDBOX_PORTS_MAX)
        sb->ports[sb->n_ports++] = port;
}

/* The TCP ports the worker may connect to: those of the allowlist (80 and
 * 443 for an entry without one) and 53 for DNS over TCP. */
static void sandbox_ports(void)
{
    sandbox_port(53);
    for (size_t i = 0; i < conf.allow.n; i++) {
        if (conf.allow.rules[i].port) {
            sandbox_port(conf.allow.rules[i].port);
        } else {
            sandbox_port(80);
            sandbox_port(443);
        }
    }
}

int main(int argc, char **argv)
{
    enum {
        OPT_AUDIT = 256, OPT_PORT, OPT_ALLOW, OPT_RATE, OPT_BYTES, OPT_DENIALS, OPT_PIDDIR, OPT_TEST, OPT_STOP,
        OPT_USER, OPT_RESOLV, OPT_HEAD_TIMEOUT
    };
    static const struct option opts[] = {
        {"audit-log", required_argument, NULL, OPT_AUDIT}, {"port", required_argument, NULL, OPT_PORT},
        {"allow", required_argument, NULL, OPT_ALLOW},     {"max-rate", required_argument, NULL, OPT_RATE},
        {"max-bytes", required_argument, NULL, OPT_BYTES}, {"max-denials", required_argument, NULL, OPT_DENIALS},
        {"pid-dir", required_argument, NULL, OPT_PIDDIR},  {"test-resolve", required_argument, NULL, OPT_TEST},
        {"user", required_argument, NULL, OPT_USER},       {"resolv-conf", required_argument, NULL, OPT_RESOLV},
        {"head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT},
        {"stop", no_argument, NULL, OPT_STOP},             {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cleanup_error ac_error_t err = NULL;
    const char *allow = NULL, *test = getenv("AGENTCAGE_EGRESS_TEST_RESOLVE"), *user = NULL;
    uint64_t max_rate = DEFAULT_RATE, max_bytes = DEFAULT_BYTES, max_denials = DEFAULT_MAX_DENIALS, v;
    bool stop = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_AUDIT: conf.audit_log = optarg; break;
        case OPT_PORT:
        case OPT_HEAD_TIMEOUT:
            if (parse_uint64(optarg, &v) < 0 || v == 0 || v > (c == OPT_PORT ? 65535 : 3600)) {
                fprintf(stderr, PROG ": %s: expected 1..%d, got `%s`\n", c == OPT_PORT ? "--port" : "--head-timeout",
                        c == OPT_PORT ? 65535 : 3600, optarg);
                return 2;
            }
            *(c == OPT_PORT ? &conf.port : &conf.head_timeout_s) = (int)v;
            break;
        case OPT_ALLOW: allow = optarg; break;
        case OPT_RATE:
        case OPT_BYTES:
            if (hook_parse_size(optarg, &v) < 0 || v == 0) {
                fprintf(stderr, PROG ": %s: bad size `%s`\n", c == OPT_RATE ? "--max-rate" : "--max-bytes", optarg);
                return 2;
            }
            *(c == OPT_RATE ? &max_rate : &max_bytes) = v;
            break;
        case OPT_DENIALS:
            if (parse_uint64(optarg, &max_denials) < 0) {
                fprintf(stderr, PROG ": --max-denials: bad number `%s`\n", optarg);
                return 2;
            }
            break;
        case OPT_PIDDIR: conf.pid_dir = optarg; break;
        case OPT_TEST: test = optarg; break;
        case OPT_USER: user = optarg; break;
        case OPT_RESOLV: {
            struct stat rs;
            if (stat(optarg, &rs) < 0 || !S_ISREG(rs.st_mode)) {
                fprintf(stderr, PROG ": --resolv-conf: `%s` is not a regular file\n", optarg);
                return 2;
            }
            conf.sandbox.resolv_conf = optarg;
            break;
        }
        case OPT_STOP: stop = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument `%s` (see --help)\n", argv[optind]);
        return 2;
    }
    /* a user who is not root cannot write under /run: the same per-user
     * place for the start and the --stop call */
    static char user_pid_dir[64];
    if (strcmp(conf.pid_dir, DEFAULT_PID_DIR) == 0 && geteuid() != 0) {
        snprintf(user_pid_dir, sizeof(user_pid_dir), "/tmp/agentcage-egress-%u", (unsigned)geteuid());
        conf.pid_dir = user_pid_dir;
    }
    struct hook_state st;
    if (hook_state_read(0, &st, &err) < 0)
        die_error(&err);
    conf.id = xstrdup(st.id);
    if (stop) {
        if (stop_proxy(&st, &err) < 0)
            die_error(&err);
        return 0;
    }
    if (st.pid <= 0) {
        fprintf(stderr, PROG ": bad state on stdin: no \"pid\" of the container's init (run as createRuntime hook)\n");
        return 1;
    }
    if (!allow)
        allow = hook_state_annotation(&st, "io.agentcage.egress");
    conf.allow_text = allow ? allow : "";
    if (egress_allowlist_parse(allow ? allow : "", &conf.allow, &err) < 0 ||
        (test && parse_test_resolve(test, &err) < 0) ||
        limit_from(&st, "io.agentcage.egress-rate", max_rate, &conf.rate, &err) < 0 ||
        limit_from(&st, "io.agentcage.egress-bytes", max_bytes, &conf.cap, &err) < 0 ||
        limit_from(&st, "io.agentcage.max-denials", max_denials ? max_denials : UINT64_MAX, &v, &err) < 0 ||
        choose_user(user, &err) < 0)
        die_error(&err);
    /* a ceiling of 0 (never kill) lets the annotation choose a count */
    conf.max_denials = v == UINT64_MAX ? 0 : v > LONG_MAX ? LONG_MAX : (long)v;
    if (conf.rate == 0)
        conf.rate = 1;
    conf.sandbox.max_fds = 2 * MAX_CONNECTIONS + 32;
    sandbox_ports();
    conf.pidfd = pidfd_open(st.pid, 0);
    if (conf.pidfd < 0) {
        ac_error(&err, errno, "pidfd_open of the container's init %d", st.pid);
        die_error(&err);
    }
    int listen_fd = listen_in_container(st.pid, &err);
    if (listen_fd < 0 || start_daemon(listen_fd, &err) < 0)
        die_error(&err);
    return 0;
}
