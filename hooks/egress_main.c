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
 * CONNECT host, caps bytes per second and in total, has no UDP at all, and
 * writes every decision to the audit trail. It exits when the container's
 * init exits (pidfd); `agentcage-egress --stop` (poststop) kills it too. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/linux/sync.h"
#include "runtime/util/utils.h"
#include "hooks/audit.h"
#include "hooks/hook_state.h"
#include "hooks/policy_hooks.h"

#define PROG "agentcage-egress"
#define DEFAULT_PID_DIR "/run/agentcage-egress"
#define DEFAULT_RATE (1ULL << 20)        /* bytes per second */
#define DEFAULT_BYTES (100ULL << 20)     /* per container, both directions */
#define DEFAULT_MAX_DENIALS 20
#define MAX_HEADER 16384
#define MAX_CONNECTIONS 64
#define IO_TIMEOUT_S 30

struct allow_rule {
    char *host;     /* lowercase; for a wildcard the suffix with its dot: ".example.com" */
    bool wildcard;
    int port;       /* 0: 80 and 443 */
};

struct test_name {
    char *name;
    char *addr;
};

/* The proxy's configuration, fixed before the daemon starts. */
static struct {
    const char *audit_log;
    const char *pid_dir;
    char *id;
    int port;
    struct allow_rule *rules;
    size_t n_rules;
    struct test_name *test;
    size_t n_test;
    uint64_t rate, cap;
    long max_denials;
    int pidfd;
} conf = {.port = EGRESS_PROXY_PORT, .pid_dir = DEFAULT_PID_DIR, .pidfd = -1};

/* Shared by the connection threads. */
static atomic_uint_fast64_t bytes_total;
static atomic_long denials;
static atomic_int connections;
static atomic_bool cap_reported, killed;
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
            "operator's ceilings below.\n\n"
            "Options:\n"
            "  --audit-log FILE     audit trail (default " AUDIT_DEFAULT_LOG ")\n"
            "  --port N             proxy port inside the container (default %d)\n"
            "  --allow LIST         allowlist instead of the annotation\n"
            "  --max-rate SIZE      ceiling of bytes per second\n"
            "  --max-bytes SIZE     ceiling of total bytes\n"
            "  --max-denials N      ceiling of refused requests before the container is killed (0: never)\n"
            "  --pid-dir DIR        where the proxy's pid file lives (default " DEFAULT_PID_DIR ")\n"
            "  --test-resolve LIST  name=ip,...: resolve these names to these addresses (tests only;\n"
            "                       also $AGENTCAGE_EGRESS_TEST_RESOLVE)\n"
            "  --stop               kill the container's proxy (poststop)\n"
            "  --help\n",
            DEFAULT_MAX_DENIALS, EGRESS_PROXY_PORT);
}

static void __attribute__((noreturn)) die_error(ac_error_t *err)
{
    cleanup_free char *msg = ac_error_string(*err);
    fprintf(stderr, PROG ": %s\n", msg);
    exit(1);
}

static void audit_or_warn(const char *event, ...) __attribute__((sentinel));
/* Audit from the proxy: a failure to write is reported on stderr, which is
 * /dev/null in the daemon, so the decision itself stands either way (a
 * refusal stays a refusal). */
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

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void lowercase(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

static bool is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* "host", "host:port", "[v6]", "[v6]:port" -> host (malloc'd, lowercase,
 * no brackets, no trailing dot) and port (0 when absent). On failure *host
 * is NULL: what the helper allocated it has freed and cleared, so the
 * caller's cleanup_free never sees it twice. */
static int split_host_port(const char *s, char **host, int *port)
{
    const char *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close)
            return -1;
        s++;
        hlen = (size_t)(close - s);
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close[1] && !colon)
            return -1;
    } else {
        colon = strrchr(s, ':');
        if (colon && strchr(s, ':') != colon)
            return -1; /* bare IPv6 without brackets: ambiguous */
        hlen = colon ? (size_t)(colon - s) : strlen(s);
    }
    *port = 0;
    if (colon) {
        uint64_t p;
        if (parse_uint64(colon + 1, &p) < 0 || p == 0 || p > 65535)
            return -1;
        *port = (int)p;
    }
    if (hlen == 0 || hlen > 253)
        return -1;
    *host = strndup(s, hlen);
    lowercase(*host);
    size_t n = strlen(*host);
    if (n > 1 && (*host)[n - 1] == '.')
        (*host)[n - 1] = '\0';
    for (const char *p = *host; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-._:*", *p)) {
            free(*host);
            *host = NULL;
            return -1;
        }
    return 0;
}

static int parse_allowlist(const char *list, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (!*tok)
            continue;
        struct allow_rule r = {0};
        if (split_host_port(tok, &r.host, &r.port) < 0)
            return ac_error(err, 0, "io.agentcage.egress: bad entry `%s` (expected host[:port] or *.suffix[:port])",
                            tok);
        if (strncmp(r.host, "*.", 2) == 0) {
            r.wildcard = true;
            memmove(r.host, r.host + 1, strlen(r.host)); /* keep the dot */
        }
        if (strchr(r.host, '*') || (r.wildcard && strlen(r.host) < 2))
            return ac_error(err, 0, "io.agentcage.egress: bad wildcard `%s` (only a leading *. is allowed)", tok);
        conf.rules = xrealloc(conf.rules, (conf.n_rules + 1) * sizeof(*conf.rules));
        conf.rules[conf.n_rules++] = r;
    }
    return 0;
}

static int parse_test_resolve(const char *list, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !is_ip_literal(eq + 1))
            return ac_error(err, 0, "--test-resolve: expected name=ip, got `%s`", tok);
        *eq = '\0';
        conf.test = xrealloc(conf.test, (conf.n_test + 1) * sizeof(*conf.test));
        conf.test[conf.n_test].name = xstrdup(tok);
        lowercase(conf.test[conf.n_test].name);
        conf.test[conf.n_test++].addr = xstrdup(eq + 1);
    }
    return 0;
}

/* NULL when host:port is allowed, else why not. */
static const char *check_allowed(const char *host, int port)
{
    bool literal = is_ip_literal(host);
    bool name_listed = false;
    for (size_t i = 0; i < conf.n_rules; i++) {
        const struct allow_rule *r = &conf.rules[i];
        bool match;
        if (r->wildcard) {
            size_t hl = strlen(host), sl = strlen(r->host);
            match = !literal && hl > sl && strcmp(host + hl - sl, r->host) == 0;
        } else {
            match = strcmp(host, r->host) == 0;
        }
        if (!match)
            continue;
        name_listed = true;
        if (r->port ? r->port == port : (port == 80 || port == 443))
            return NULL;
    }
    if (name_listed)
        return "port not allowed for this host";
    return literal ? "IP literal not in allowlist" : "host not in allowlist";
}

/* Addresses the host side must never be led to by a name: its own
 * loopback, link-local (cloud metadata) and unspecified addresses. */
static bool forbidden_address(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127 || (a >> 24) == 0 || (a >> 16) == 0xa9fe;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            struct sockaddr_in v4 = {.sin_family = AF_INET};
            memcpy(&v4.sin_addr, &a->s6_addr[12], 4);
            return forbidden_address((const struct sockaddr *)&v4);
        }
        return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LINKLOCAL(a);
    }
    return true;
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

/* Resolve on the host side (or through the test map) and connect; the
 * address used goes to addr_out. -1 with a reason. */
static int connect_upstream(const char *host, int port, char *addr_out, size_t addr_len, const char **why)
{
    const char *name = host;
    bool trusted = is_ip_literal(host); /* listed literally by the operator or agent framework */
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
        if (!trusted && forbidden_address(ai->ai_addr)) {
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

/* Count a refusal; past the threshold the container is treated as
 * compromised and killed. */
static void count_denial(void)
{
    long n = atomic_fetch_add(&denials, 1) + 1;
    if (conf.max_denials <= 0 || n < conf.max_denials || atomic_exchange(&killed, true))
        return;
    char count[32], limit[32];
    snprintf(count, sizeof(count), "%ld", n);
    snprintf(limit, sizeof(limit), "%ld", conf.max_denials);
    int r = pidfd_send_signal(conf.pidfd, SIGKILL, NULL, 0);
    audit_or_warn("denial-kill", "=denials", count, "=limit", limit, "source", "egress", "result",
                  r == 0 ? "killed" : "kill failed", NULL);
}

static void deny(int client, const char *method, const char *host, int port, const char *reason, bool reply)
{
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    audit_or_warn("egress-deny", "method", method, "host", host, "=port", port_s, "reason", reason, NULL);
    if (reply) {
        char body[512], msg[768];
        int blen = snprintf(body, sizeof(body), "agentcage egress: %s:%d refused: %s\n", host, port, reason);
        int n = snprintf(msg, sizeof(msg),
                         "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                         "Content-Length: %d\r\n\r\n%s",
                         blen, body);
        if (write_all(client, msg, (size_t)n) < 0) {
            /* the client went away: nothing to tell */
        }
    }
    count_denial();
}

static void reply_status(int client, const char *status)
{
    cleanup_free char *msg = xasprintf("HTTP/1.1 %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status);
    if (write_all(client, msg, strlen(msg)) < 0) {
        /* the client went away */
    }
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
        audit_or_warn("egress-deny", "reason", "byte cap reached, connection closed", "=cap", cap, NULL);
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

/* The SNI of a TLS ClientHello: 1 with the name, 0 when the hello has
 * none, -1 when buf is not a (complete, first-record) ClientHello. */
static int client_hello_sni(const unsigned char *buf, size_t len, char *name, size_t name_len)
{
#define NEED(n)             \
    do {                    \
        if (p + (n) > end)  \
            return -1;      \
    } while (0)
    if (len < 5 || buf[0] != 0x16)
        return -1;
    size_t rec_len = (size_t)buf[3] << 8 | buf[4];
    if (len < 5 + rec_len)
        return -1;
    const unsigned char *p = buf + 5, *end = buf + 5 + rec_len;
    NEED(4);
    if (p[0] != 0x01) /* handshake type client_hello */
        return -1;
    size_t hs_len = (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
    p += 4;
    if (p + hs_len < end)
        end = p + hs_len;
    NEED(2 + 32 + 1);
    p += 2 + 32;                   /* version, random */
    p += 1 + p[0];                 /* session id */
    NEED(2);
    p += 2 + ((size_t)p[0] << 8 | p[1]); /* cipher suites */
    NEED(1);
    p += 1 + p[0];                 /* compression methods */
    if (p == end)
        return 0;                  /* no extensions */
    NEED(2);
    const unsigned char *ext_end = p + 2 + ((size_t)p[0] << 8 | p[1]);
    p += 2;
    if (ext_end > end)
        return -1;
    while (p + 4 <= ext_end) {
        unsigned type = (unsigned)p[0] << 8 | p[1];
        size_t elen = (size_t)p[2] << 8 | p[3];
        p += 4;
        if (p + elen > ext_end)
            return -1;
        if (type == 0) { /* server_name: list length, then (type, length, name) */
            const unsigned char *q = p + 2, *qend = p + elen;
            while (q + 3 <= qend) {
                size_t nlen = (size_t)q[1] << 8 | q[2];
                if (q + 3 + nlen > qend)
                    return -1;
                if (q[0] == 0) {
                    if (nlen == 0 || nlen >= name_len)
                        return -1;
                    memcpy(name, q + 3, nlen);
                    name[nlen] = '\0';
                    lowercase(name);
                    return 1;
                }
                q += 3 + nlen;
            }
            return -1;
        }
        p += elen;
    }
    return 0;
#undef NEED
}

/* Read until buf holds a whole first TLS record (or it cannot be one). */
static ssize_t read_client_hello(int fd, unsigned char *buf, size_t cap, size_t have)
{
    while (have < 5 || (buf[0] == 0x16 && have < 5 + ((size_t)buf[3] << 8 | buf[4]) && have < cap)) {
        if (have >= 1 && buf[0] != 0x16)
            break;
        ssize_t n = read(fd, buf + have, cap - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        have += (size_t)n;
    }
    return (ssize_t)have;
}

struct conn {
    int client;
};

static void handle_connect(int client, const char *target, const char *rest, size_t rest_len)
{
    cleanup_free char *host = NULL;
    int port;
    if (split_host_port(target, &host, &port) < 0 || port == 0) {
        deny(client, "CONNECT", target, 0, "malformed CONNECT target", true);
        return;
    }
    const char *why = check_allowed(host, port);
    if (!why && atomic_load(&bytes_total) >= conf.cap)
        why = "byte cap reached";
    if (why) {
        deny(client, "CONNECT", host, port, why, true);
        return;
    }
    static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (write_all(client, established, sizeof(established) - 1) < 0)
        return;
    /* Nothing leaves before the ClientHello names the same host. */
    cleanup_free unsigned char *hello = xmalloc(16384 + 5);
    size_t have = rest_len > 16384 + 5 ? 16384 + 5 : rest_len;
    memcpy(hello, rest, have);
    ssize_t n = read_client_hello(client, hello, 16384 + 5, have);
    char sni[256];
    int has_sni = n > 0 ? client_hello_sni(hello, (size_t)n, sni, sizeof(sni)) : -1;
    if (has_sni < 0) {
        deny(client, "CONNECT", host, port, "no TLS ClientHello", false);
        return;
    }
    if (has_sni == 0 && !is_ip_literal(host)) {
        deny(client, "CONNECT", host, port, "TLS ClientHello without SNI", false);
        return;
    }
    if (has_sni == 1 && strcmp(sni, host) != 0) {
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
    audit_or_warn("egress-allow", "method", "CONNECT", "host", host, "=port", port_s, "address", addr, NULL);
    if (!account((size_t)n) || write_all(upstream, hello, (size_t)n) < 0)
        return;
    relay(client, upstream);
}

static bool header_is(const char *line, const char *name)
{
    size_t n = strlen(name);
    return strncasecmp(line, name, n) == 0 && line[n] == ':';
}

/* Plain HTTP: "GET http://host[:port]/path HTTP/1.1". The request goes out
 * in origin form with Connection: close, so one tunnel is one request. */
static void handle_http(int client, const char *method, const char *target, const char *version,
                        char *headers, const char *rest, size_t rest_len)
{
    if (strncasecmp(target, "http://", 7) != 0) {
        deny(client, method, target, 0,
             strncasecmp(target, "https://", 8) == 0 ? "https:// URL without CONNECT"
                                                      : "not an absolute http:// URL (a proxy request)",
             true);
        return;
    }
    const char *authority = target + 7;
    size_t alen = strcspn(authority, "/?#");
    const char *path = authority[alen] == '/' ? authority + alen : "/";
    cleanup_free char *auth = strndup(authority, alen);
    cleanup_free char *host = NULL;
    int port;
    if (strchr(auth, '@') || split_host_port(auth, &host, &port) < 0) {
        deny(client, method, auth, 0, "malformed URL authority", true);
        return;
    }
    if (port == 0)
        port = 80;
    const char *why = check_allowed(host, port);
    if (!why && atomic_load(&bytes_total) >= conf.cap)
        why = "byte cap reached";
    if (why) {
        deny(client, method, host, port, why, true);
        return;
    }
    char addr[INET6_ADDRSTRLEN] = "";
    cleanup_close int upstream = connect_upstream(host, port, addr, sizeof(addr), &why);
    if (upstream < 0) {
        deny(client, method, host, port, why, true);
        return;
    }
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    audit_or_warn("egress-allow", "method", method, "host", host, "=port", port_s, "address", addr, "path", path,
                  NULL);
    /* rebuild the head: origin-form target, hop-by-hop headers dropped */
    size_t cap = strlen(headers) + strlen(path) + strlen(method) + 128;
    cleanup_free char *out = xmalloc(cap);
    int len = snprintf(out, cap, "%s %s %s\r\n", method, path, version);
    char *save = NULL;
    for (char *line = strtok_r(headers, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
        if (header_is(line, "Proxy-Connection") || header_is(line, "Proxy-Authorization") ||
            header_is(line, "Connection") || header_is(line, "Keep-Alive"))
            continue;
        len += snprintf(out + len, cap - (size_t)len, "%s\r\n", line);
    }
    len += snprintf(out + len, cap - (size_t)len, "Connection: close\r\n\r\n");
    if (!account((size_t)len + rest_len) || write_all(upstream, out, (size_t)len) < 0 ||
        write_all(upstream, rest, rest_len) < 0)
        return;
    relay(client, upstream);
}

static void *connection_thread(void *arg)
{
    struct conn *c = arg;
    cleanup_close int client = c->client;
    free(c);
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    cleanup_free char *head = xmalloc(MAX_HEADER + 1);
    size_t have = 0;
    char *end = NULL;
    while (!end && have < MAX_HEADER) {
        ssize_t n = read(client, head + have, MAX_HEADER - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto out;
        have += (size_t)n;
        head[have] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if (!end) {
        reply_status(client, "431 Request Header Fields Too Large");
        goto out;
    }
    *end = '\0';
    const char *rest = end + 4;
    size_t rest_len = have - (size_t)(rest - head);
    char *line_end = strstr(head, "\r\n");
    char *headers = line_end ? line_end + 2 : head + strlen(head);
    if (line_end)
        *line_end = '\0';
    char *save = NULL;
    char *method = strtok_r(head, " ", &save), *target = strtok_r(NULL, " ", &save),
         *version = strtok_r(NULL, " ", &save);
    if (!method || !target || !version || strncmp(version, "HTTP/1.", 7) != 0) {
        reply_status(client, "400 Bad Request");
        goto out;
    }
    if (strcmp(method, "CONNECT") == 0)
        handle_connect(client, target, rest, rest_len);
    else
        handle_http(client, method, target, version, headers, rest, rest_len);
out:
    atomic_fetch_sub(&connections, 1);
    return NULL;
}

static char *pid_file_path(const char *id) { return xasprintf("%s/%s.pid", conf.pid_dir, id); }

/* The daemon: accept until the container's init exits. */
static void __attribute__((noreturn)) serve(int listen_fd)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (;;) {
        struct pollfd p[2] = {{.fd = listen_fd, .events = POLLIN}, {.fd = conf.pidfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break; /* the container's init is gone */
        if (!(p[0].revents & POLLIN))
            continue;
        int client = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        if (atomic_fetch_add(&connections, 1) >= MAX_CONNECTIONS) {
            atomic_fetch_sub(&connections, 1);
            reply_status(client, "503 Too Many Connections");
            close(client);
            continue;
        }
        struct conn *c = xmalloc(sizeof(*c));
        c->client = client;
        pthread_t t;
        if (pthread_create(&t, &attr, connection_thread, c) != 0) {
            atomic_fetch_sub(&connections, 1);
            close(client);
            free(c);
        }
    }
    /* remove our pid file unless a newer proxy took the name */
    cleanup_free char *path = pid_file_path(conf.id);
    cleanup_free char *text = NULL;
    size_t len;
    ac_error_t err = NULL;
    if (read_all_file(path, &text, &len, &err) == 0 && atoi(text) == getpid())
        unlink(path);
    ac_error_free(&err);
    _exit(0);
}

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
 * it writes its pid file and tells us it is ready through a pipe. */
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
        cleanup_free char *path = pid_file_path(conf.id);
        cleanup_free char *tmp = xasprintf("%s.tmp%d", path, getpid());
        cleanup_free char *text = xasprintf("%d", getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
            _exit(1);
        close(fd);
        if (rename(tmp, path) < 0)
            _exit(1);
        if (write(ready[1], "R", 1) != 1)
            _exit(1);
        close(ready[1]);
        serve(listen_fd);
    }
    close(ready[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    char c;
    ssize_t n;
    do
        n = read(ready[0], &c, 1);
    while (n < 0 && errno == EINTR);
    close(ready[0]);
    if (n != 1)
        return ac_error(err, 0, "the proxy daemon did not start");
    return 0;
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
 * still one of ours (/proc/PID/exe is this program). */
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

int main(int argc, char **argv)
{
    enum { OPT_AUDIT = 256, OPT_PORT, OPT_ALLOW, OPT_RATE, OPT_BYTES, OPT_DENIALS, OPT_PIDDIR, OPT_TEST, OPT_STOP };
    static const struct option opts[] = {
        {"audit-log", required_argument, NULL, OPT_AUDIT}, {"port", required_argument, NULL, OPT_PORT},
        {"allow", required_argument, NULL, OPT_ALLOW},     {"max-rate", required_argument, NULL, OPT_RATE},
        {"max-bytes", required_argument, NULL, OPT_BYTES}, {"max-denials", required_argument, NULL, OPT_DENIALS},
        {"pid-dir", required_argument, NULL, OPT_PIDDIR},  {"test-resolve", required_argument, NULL, OPT_TEST},
        {"stop", no_argument, NULL, OPT_STOP},             {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cleanup_error ac_error_t err = NULL;
    const char *allow = NULL, *test = getenv("AGENTCAGE_EGRESS_TEST_RESOLVE");
    uint64_t max_rate = DEFAULT_RATE, max_bytes = DEFAULT_BYTES, max_denials = DEFAULT_MAX_DENIALS, v;
    bool stop = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_AUDIT: conf.audit_log = optarg; break;
        case OPT_PORT:
            if (parse_uint64(optarg, &v) < 0 || v == 0 || v > 65535) {
                fprintf(stderr, PROG ": --port: expected 1..65535, got `%s`\n", optarg);
                return 2;
            }
            conf.port = (int)v;
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
    if (parse_allowlist(allow ? allow : "", &err) < 0 || (test && parse_test_resolve(test, &err) < 0) ||
        limit_from(&st, "io.agentcage.egress-rate", max_rate, &conf.rate, &err) < 0 ||
        limit_from(&st, "io.agentcage.egress-bytes", max_bytes, &conf.cap, &err) < 0 ||
        limit_from(&st, "io.agentcage.max-denials", max_denials ? max_denials : UINT64_MAX, &v, &err) < 0)
        die_error(&err);
    /* a ceiling of 0 (never kill) lets the annotation choose a count */
    conf.max_denials = v == UINT64_MAX ? 0 : v > LONG_MAX ? LONG_MAX : (long)v;
    if (conf.rate == 0)
        conf.rate = 1;
    conf.pidfd = pidfd_open(st.pid, 0);
    if (conf.pidfd < 0) {
        ac_error(&err, errno, "pidfd_open of the container's init %d", st.pid);
        die_error(&err);
    }
    int listen_fd = listen_in_container(st.pid, &err);
    if (listen_fd < 0)
        die_error(&err);
    char port_s[16], rate_s[32], cap_s[32], den_s[32];
    snprintf(port_s, sizeof(port_s), "%d", conf.port);
    snprintf(rate_s, sizeof(rate_s), "%llu", (unsigned long long)conf.rate);
    snprintf(cap_s, sizeof(cap_s), "%llu", (unsigned long long)conf.cap);
    snprintf(den_s, sizeof(den_s), "%ld", conf.max_denials);
    if (audit_record(conf.audit_log, "egress-proxy-started", conf.id, &err, "allow", allow ? allow : "", "=port",
                     port_s, "=rate", rate_s, "=cap", cap_s, "=max_denials", den_s, NULL) < 0)
        die_error(&err); /* no audit trail, no door */
    if (start_daemon(listen_fd, &err) < 0)
        die_error(&err);
    return 0;
}
