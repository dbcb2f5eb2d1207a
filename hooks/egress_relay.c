/* The egress proxy's worker: the process that reads the container's bytes
 * (see egress_proxy.h; egress_main.c confines it before it gets here).
 *
 * A thread per connection. Plain HTTP: every request of the connection is
 * parsed, checked (method, absolute http:// URL, a Host header equal to
 * it, the port, the allowlist or an operator's approval, the address the
 * name resolves to) and audited, one after the other; its body is passed
 * by its framing (Content-Length or chunked, nothing two parsers could read
 * two ways) and the response by its own, so that keep-alive works and the
 * next request is read only where this one ended. The upstream connection
 * is kept while the next request goes to the same host and port.
 *
 * CONNECT: the tunnel opens once the first ClientHello names the CONNECT
 * host, and stays a stream of TLS records whose every later ClientHello
 * names it too (one TLS session to the host it was opened for).
 *
 * Addresses: a name's address is checked before the connect that uses it
 * (the same sockaddr, no second lookup): none of the special-purpose ranges
 * (egress_address_refusal) and none of the host's own addresses (which the
 * writer sends), unless inside the operator's egress.allow-cidr. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hooks/egress_proxy.h"
#include "runtime/util/utils.h"

#define IO_TIMEOUT_S 30
#define THREAD_STACK (256 * 1024)
/* Reads from the upstream: large, as a download's cost is per read (poll,
 * read, write; 256 KiB took a 100 MiB download on loopback from 1.8x to 1.3x
 * a direct one, integration/bench section 7). The buffer is per connection
 * and its pages are touched only by a transfer that fills them. */
#define RELAY_BUF (256 << 10)
/* Reads from the container: what is read past a body's end is kept for the
 * next request (CONN_IN_MAX), so these stay the size that bound was made for. */
#define CLIENT_READ 65536
#define MAX_GRANTS 64

struct egress_proxy_conf egress_conf;

static atomic_uint_fast64_t bytes_total;
static atomic_int connections;
static atomic_bool cap_reported;
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static long long rate_next_ns;

/* What the writer told us, under state_lock: the host's own addresses,
 * the operator's approvals, the answers to held requests. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t answered;
static struct egress_cidrs host_addresses;
static struct {
    char host[EGRESS_HOST_MAX + 1];
    int port;
    int64_t until;
} grants[MAX_GRANTS];
static size_t n_grants;
static struct {
    uint32_t id; /* 0: a free slot */
    char answer; /* 0 while held, then 'Y', 'N' or 'T' */
} asks[EGRESS_MAX_CONNECTIONS];
static uint32_t last_ask;

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------- records */

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
        int blen = snprintf(body, sizeof(body), "agentcage egress: %.200s:%d refused: %.200s\n", host, port, reason);
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
 * status (400, 408, 431) unless NULL. */
static void refuse_request(int client, const char *status, const char *reason)
{
    record("egress-deny", "reason", reason, NULL);
    if (status)
        reply_status(client, status);
}

/* ---------------------------------------------------------------- limits */

/* Wait until n more bytes fit the per-container rate (a shared schedule:
 * each chunk books its slot; at most one second of burst). */
static void throttle(size_t n)
{
    pthread_mutex_lock(&rate_lock);
    long long now = mono_ns();
    if (rate_next_ns < now - 1000000000LL)
        rate_next_ns = now - 1000000000LL;
    rate_next_ns += (long long)((double)n * 1e9 / (double)egress_conf.rate);
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
    if (before + n <= egress_conf.cap)
        return true;
    if (!atomic_exchange(&cap_reported, true)) {
        char cap[32];
        snprintf(cap, sizeof(cap), "%llu", (unsigned long long)egress_conf.cap);
        record("egress-deny", "reason", "byte cap reached, connection closed", "=cap", cap, NULL);
    }
    return false;
}

/* Pass n bytes on to fd, within the cap and the rate; outward: from the
 * container. false when they may not or could not go. */
static bool forward(int fd, const void *buf, size_t n, bool outward)
{
    if (n == 0)
        return true;
    if (!account(n))
        return false;
    throttle(n);
    if (write_all(fd, buf, n) < 0)
        return false;
    __atomic_add_fetch(outward ? &egress_conf.bytes->out : &egress_conf.bytes->in, n, __ATOMIC_RELAXED);
    return true;
}

/* ---------------------------------------------------------------- the writer's messages */

static bool granted(const char *host, int port)
{
    int64_t now = (int64_t)time(NULL);
    bool yes = false;
    pthread_mutex_lock(&state_lock);
    for (size_t i = 0; i < n_grants && !yes; i++)
        yes = grants[i].until > now && strcmp(grants[i].host, host) == 0 &&
              (grants[i].port ? grants[i].port == port : port == 80 || port == 443);
    pthread_mutex_unlock(&state_lock);
    return yes;
}

static uint64_t get_be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* One message from the writer (trusted: it is our parent), applied. */
static void control_message(const unsigned char *m, size_t len)
{
    pthread_mutex_lock(&state_lock);
    if (m[0] == 'H' && (len - 1) % 17 == 0 && (len - 1) / 17 <= EGRESS_HOST_ADDRESSES_MAX) {
        size_t n = (len - 1) / 17;
        host_addresses.v = xrealloc(host_addresses.v, (n ? n : 1) * sizeof(struct egress_cidr));
        host_addresses.n = n;
        for (size_t i = 0; i < n; i++) {
            struct egress_cidr *c = &host_addresses.v[i];
            c->family = m[1 + 17 * i] == 6 ? AF_INET6 : AF_INET;
            memcpy(c->addr, m + 2 + 17 * i, 16);
            c->prefix = c->family == AF_INET6 ? 128 : 32;
        }
    } else if ((m[0] == 'Y' || m[0] == 'N' || m[0] == 'T') && len == 5) {
        uint32_t id = (uint32_t)get_be(m + 1, 4);
        for (size_t i = 0; i < EGRESS_MAX_CONNECTIONS; i++)
            if (asks[i].id == id && asks[i].answer == 0)
                asks[i].answer = (char)m[0];
        pthread_cond_broadcast(&answered);
    } else if (m[0] == 'G' && len > 11 && len - 11 <= EGRESS_HOST_MAX) {
        size_t slot = n_grants < MAX_GRANTS ? n_grants++ : 0;
        for (size_t i = 0; i < n_grants; i++)
            if (grants[i].until < (int64_t)time(NULL))
                slot = i; /* an expired one makes room */
        grants[slot].until = (int64_t)get_be(m + 1, 8);
        grants[slot].port = (int)get_be(m + 9, 2);
        memcpy(grants[slot].host, m + 11, len - 11);
        grants[slot].host[len - 11] = '\0';
    }
    pthread_mutex_unlock(&state_lock);
}

static void read_control(void)
{
    static unsigned char m[EGRESS_CONTROL_MAX]; /* 70 KB: off the stack; one reader */
    ssize_t n = recv(WORKER_CONTROL_FD, m, sizeof(m), MSG_DONTWAIT);
    if (n > 0)
        control_message(m, (size_t)n);
}

/* Hold the request for the operator (`agentcage pending`, `approve`,
 * `deny`): NULL once allowed, else why not. The writer answers, or says
 * the time ran out; our own deadline only covers a writer that never does. */
static const char *ask_operator(const char *method, const char *host, int port)
{
    pthread_mutex_lock(&state_lock);
    size_t slot = EGRESS_MAX_CONNECTIONS;
    for (size_t i = 0; i < EGRESS_MAX_CONNECTIONS && slot == EGRESS_MAX_CONNECTIONS; i++)
        if (asks[i].id == 0)
            slot = i;
    if (slot == EGRESS_MAX_CONNECTIONS) {
        pthread_mutex_unlock(&state_lock);
        return "too many requests held for the operator";
    }
    uint32_t id = ++last_ask ? last_ask : ++last_ask;
    asks[slot].id = id;
    asks[slot].answer = 0;
    pthread_mutex_unlock(&state_lock);
    char port_s[16], id_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(id_s, sizeof(id_s), "%u", id);
    record("egress-ask", "method", method, "host", host, "=port", port_s, "=ask", id_s, NULL);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += egress_conf.ask_timeout_s + 10;
    pthread_mutex_lock(&state_lock);
    while (asks[slot].answer == 0 && pthread_cond_timedwait(&answered, &state_lock, &until) != ETIMEDOUT)
        ;
    char answer = asks[slot].answer;
    asks[slot].id = 0;
    pthread_mutex_unlock(&state_lock);
    return answer == 'Y' ? NULL : answer == 'N' ? "refused by the operator" : "no operator decision in time";
}

/* May the container reach host:port? NULL when it may (*via: "approval"
 * when an operator's approval let it), else why not. */
static const char *decide(const char *method, const char *host, int port, const char **via)
{
    *via = NULL;
    const char *why = egress_allowlist_check(&egress_conf.allow, host, port);
    if (why && granted(host, port)) {
        why = NULL;
        *via = "approval";
    }
    if (!why && atomic_load(&bytes_total) >= egress_conf.cap)
        return "byte cap reached";
    if (why && egress_conf.ask) {
        why = ask_operator(method, host, port);
        *via = why ? NULL : "approval";
    }
    return why;
}

/* ---------------------------------------------------------------- upstream */

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

/* Why the proxy may not connect to this address, NULL when it may. */
static const char *address_refusal(const struct sockaddr *sa)
{
    if (egress_cidrs_contain(&egress_conf.allow_cidr, sa))
        return NULL;
    pthread_mutex_lock(&state_lock);
    bool own = egress_cidrs_contain(&host_addresses, sa);
    pthread_mutex_unlock(&state_lock);
    return own ? "one of the host's own addresses" : egress_address_refusal(sa);
}

/* Resolve (or take the test map's address), check and connect; the
 * address used goes to addr_out. -1 with a reason in why (why_buf). */
static int connect_upstream(const char *host, int port, char *addr_out, size_t addr_len, char *why_buf,
                            size_t why_len)
{
    const char *name = host;
    for (size_t i = 0; i < egress_conf.n_test; i++)
        if (strcmp(egress_conf.test[i].name, host) == 0)
            name = egress_conf.test[i].addr;
    char service[8];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    if (getaddrinfo(name, service, &hints, &res) != 0) {
        snprintf(why_buf, why_len, "name does not resolve");
        return -1;
    }
    int fd = -1;
    snprintf(why_buf, why_len, "connect failed");
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        char shown[INET6_ADDRSTRLEN] = "?";
        void *a = ai->ai_family == AF_INET ? (void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                                           : (void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        inet_ntop(ai->ai_family, a, shown, sizeof(shown));
        const char *refused = address_refusal(ai->ai_addr);
        if (refused) {
            snprintf(why_buf, why_len, "address %s refused: %s", shown, refused);
            continue;
        }
        fd = connect_with_timeout(ai); /* this very address: no second lookup */
        if (fd >= 0)
            snprintf(addr_out, addr_len, "%s", shown);
    }
    freeaddrinfo(res);
    return fd;
}

/* ---------------------------------------------------------------- a connection */

struct conn {
    int client;
    int upstream; /* -1: none */
    char origin[EGRESS_HOST_MAX + 1];
    int origin_port;
    char addr[INET6_ADDRSTRLEN];
    char *in;     /* the client's bytes read but not yet handled */
    size_t have;
    char *buf;    /* RELAY_BUF */
};

#define CONN_IN_MAX (EGRESS_HEAD_MAX + CLIENT_READ)

enum step { STOP, KEEP };

/* One read before the deadline (CLOCK_MONOTONIC ns): >0 bytes, 0 at EOF,
 * -1 on an error, -2 when the deadline passed. */
static ssize_t read_by(int fd, void *buf, size_t len, long long deadline)
{
    for (;;) {
        long long left_ms = (deadline - mono_ns()) / 1000000;
        if (left_ms <= 0)
            return -2;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
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

static void drop_upstream(struct conn *c)
{
    if (c->upstream >= 0)
        close(c->upstream);
    c->upstream = -1;
    c->origin[0] = '\0';
}

/* A message body passing through, by its framing. */
struct body {
    enum egress_body_kind kind;
    unsigned long long left;
    struct egress_chunked chunked;
    bool done;
};

static void body_init(struct body *b, const struct egress_framing *f, bool strict)
{
    b->kind = f->kind;
    b->left = f->length;
    egress_chunked_init(&b->chunked, strict);
    b->done = f->kind == EGRESS_BODY_NONE;
}

/* How many of the n bytes at p are the body's (-1: a malformed body). */
static long body_take(struct body *b, const char *p, size_t n)
{
    if (b->done)
        return 0;
    switch (b->kind) {
    case EGRESS_BODY_LENGTH: {
        size_t t = n < b->left ? n : (size_t)b->left;
        b->left -= t;
        b->done = b->left == 0;
        return (long)t;
    }
    case EGRESS_BODY_CHUNKED: {
        long t = egress_chunked_feed(&b->chunked, p, n);
        b->done = t >= 0 && egress_chunked_done(&b->chunked);
        return t;
    }
    case EGRESS_BODY_CLOSE:
        return (long)n;
    default:
        b->done = true;
        return 0;
    }
}

/* The client's bytes after the body go back to c->in (the next request);
 * false when they do not fit. */
static bool keep_for_next(struct conn *c, const char *p, size_t n)
{
    if (c->have + n > CONN_IN_MAX)
        return false;
    memcpy(c->in + c->have, p, n);
    c->have += n;
    return true;
}

/* The response, as it comes: heads (interim 1xx ones, then the final
 * one) and the body of the final one. */
struct response {
    const char *method;
    char *head;
    size_t head_have;
    bool in_body, done, close;
    struct body body;
};

/* Pass upstream's n bytes at p to the client, by the response's framing.
 * false: stop the connection (malformed, or the client is gone). */
static bool response_bytes(struct conn *c, struct response *r, const char *p, size_t n)
{
    while (n > 0 && !r->done) {
        if (!r->in_body) {
            size_t room = EGRESS_RESPONSE_HEAD_MAX - r->head_have, t = n < room ? n : room;
            memcpy(r->head + r->head_have, p, t);
            long end = egress_response_head_end(r->head, r->head_have + t);
            if (end == 0) {
                r->head_have += t;
                if (r->head_have == EGRESS_RESPONSE_HEAD_MAX)
                    return false;
                return true;
            }
            size_t used = (size_t)end - r->head_have; /* of these n bytes */
            struct egress_response resp;
            const char *why;
            if (egress_response_parse(r->head, (size_t)end, r->method, &resp, &why) < 0 || resp.status == 101 ||
                !forward(c->client, r->head, (size_t)end, false))
                return false;
            r->head_have = 0;
            p += used;
            n -= used;
            if (resp.status / 100 == 1)
                continue; /* 100 Continue and the like: the final head follows */
            r->in_body = true;
            r->close = resp.framing.close;
            body_init(&r->body, &resp.framing, false);
            r->done = r->body.done;
            continue;
        }
        long t = body_take(&r->body, p, n);
        if (t < 0 || !forward(c->client, p, (size_t)t, false))
            return false;
        p += t;
        n -= (size_t)t;
        r->done = r->body.done;
    }
    if (n > 0)
        r->close = true; /* bytes past the response's end: no more on this connection */
    return true;
}

/* Send the request's body and pass the response back, until both are
 * whole. KEEP when the connection may carry another request. */
static enum step exchange(struct conn *c, const struct egress_framing *req_f, const char *method)
{
    struct body req;
    body_init(&req, req_f, true);
    struct response r = {.method = method};
    cleanup_free char *head = xmalloc(EGRESS_RESPONSE_HEAD_MAX);
    r.head = head;
    /* body bytes that came with the head */
    if (!req.done && c->have) {
        long t = body_take(&req, c->in, c->have);
        if (t < 0) {
            refuse_request(c->client, NULL, "malformed chunked request body");
            return STOP;
        }
        if (!forward(c->upstream, c->in, (size_t)t, true))
            return STOP;
        memmove(c->in, c->in + t, c->have - (size_t)t);
        c->have -= (size_t)t;
    }
    for (;;) {
        if (r.done)
            return req.done && !r.close && !req_f->close ? KEEP : STOP;
        struct pollfd p[2] = {{.fd = req.done ? -1 : c->client, .events = POLLIN},
                              {.fd = c->upstream, .events = POLLIN}};
        int pr = poll(p, 2, IO_TIMEOUT_S * 1000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return STOP;
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(c->client, c->buf, CLIENT_READ);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0)
                return STOP; /* the client went before its body ended */
            long t = body_take(&req, c->buf, (size_t)n);
            if (t < 0) {
                refuse_request(c->client, NULL, "malformed chunked request body");
                return STOP;
            }
            if (!forward(c->upstream, c->buf, (size_t)t, true) || !keep_for_next(c, c->buf + t, (size_t)(n - t)))
                return STOP;
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(c->upstream, c->buf, RELAY_BUF);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0)
                return STOP; /* the end of a response that runs to the close, or a cut one */
            if (!response_bytes(c, &r, c->buf, (size_t)n))
                return STOP;
            if (r.done && !req.done)
                return STOP; /* answered before the body ended: the rest of it has nowhere to go */
        }
    }
}

/* A host:port from the request, as the allowlist and the audit log name
 * it, compared with another: the same host, the same port (0 is 80). */
static bool same_origin(const char *h1, int p1, const char *h2, int p2)
{
    return strcmp(h1, h2) == 0 && (p1 ? p1 : 80) == (p2 ? p2 : 80);
}

/* Plain HTTP: "GET http://host[:port]/path HTTP/1.1" with Host equal to
 * it. The request goes out in origin form, Host from the URL. */
static enum step handle_http(struct conn *c, struct egress_request *req)
{
    cleanup_free char *host = NULL, *path = NULL, *host_header = NULL;
    int port, header_port;
    const char *why, *via;
    struct egress_framing f;
    if (egress_parse_http_url(req->target, &host, &port, &path, &why) < 0) {
        deny(c->client, req->method, req->target, 0, why, true);
        return STOP;
    }
    if (egress_request_host(req, &host_header, &header_port, &why) < 0 || egress_request_framing(req, &f, &why) < 0) {
        refuse_request(c->client, "400 Bad Request", why);
        return STOP;
    }
    if (!host_header && strcmp(req->version, "HTTP/1.1") == 0) {
        refuse_request(c->client, "400 Bad Request", "an HTTP/1.1 request without Host");
        return STOP;
    }
    if (host_header && !same_origin(host_header, header_port, host, port)) {
        char reason[EGRESS_HOST_MAX + 64];
        snprintf(reason, sizeof(reason), "Host header `%s` differs from the URL's host", host_header);
        deny(c->client, req->method, host, port, reason, true);
        return STOP;
    }
    why = decide(req->method, host, port, &via);
    if (why) {
        deny(c->client, req->method, host, port, why, true);
        return STOP;
    }
    if (c->upstream >= 0) {
        /* a kept connection the server has closed (or sent to unasked) is not used again */
        struct pollfd up = {.fd = c->upstream, .events = POLLIN};
        if (!same_origin(c->origin, c->origin_port, host, port) || poll(&up, 1, 0) != 0)
            drop_upstream(c);
    }
    if (c->upstream < 0) {
        char reason[128];
        c->upstream = connect_upstream(host, port, c->addr, sizeof(c->addr), reason, sizeof(reason));
        if (c->upstream < 0) {
            deny(c->client, req->method, host, port, reason, true);
            return STOP;
        }
        snprintf(c->origin, sizeof(c->origin), "%s", host);
        c->origin_port = port;
    }
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    record("egress-allow", "method", req->method, "host", host, "=port", port_s, "address", c->addr, "path", path,
           via ? "via" : NULL, via, NULL);
    size_t len;
    cleanup_free char *out = egress_request_rebuild(req, host, port, path, f.close, &len);
    if (!forward(c->upstream, out, len, true))
        return STOP;
    return exchange(c, &f, req->method);
}

/* The tunnel after the first hello: the client's side as TLS records
 * (any later hello must name host too), the upstream's passed as is. */
static void tunnel(struct conn *c, unsigned char *t, size_t th, struct egress_tls_stream *ts, const char *host,
                   int port)
{
    bool open_in[2] = {true, true};
    long long deadline = 0; /* while a record or hello is not whole */
    while (open_in[0] || open_in[1]) {
        /* what the client sent: pass its records on */
        while (th > 0) {
            size_t take = 0;
            char sni[256];
            enum egress_tls_next r = egress_tls_next(ts, t, th, &take, sni, sizeof(sni));
            if (r == EGRESS_TLS_BAD) {
                deny(c->client, "CONNECT", host, port, "not a TLS record in the tunnel", false);
                return;
            }
            if (r == EGRESS_TLS_NEED_MORE) {
                if (!deadline)
                    deadline = mono_ns() + egress_conf.head_timeout_s * 1000000000LL;
                break;
            }
            deadline = 0;
            if (r == EGRESS_TLS_HELLO && strcmp(sni, host) != 0 && !(sni[0] == '\0' && egress_is_ip_literal(host))) {
                char reason[EGRESS_HOST_MAX + 64];
                snprintf(reason, sizeof(reason), "TLS SNI `%s` of a later ClientHello differs from CONNECT host", sni);
                deny(c->client, "CONNECT", host, port, reason, false);
                return;
            }
            if (!forward(c->upstream, t, take, true))
                return;
            memmove(t, t + take, th - take);
            th -= take;
        }
        int wait_ms = IO_TIMEOUT_S * 1000;
        if (deadline) {
            long long left = (deadline - mono_ns()) / 1000000;
            if (left <= 0) {
                deny(c->client, "CONNECT", host, port, "TLS record not complete within the head timeout", false);
                return;
            }
            wait_ms = left < wait_ms ? (int)left : wait_ms;
        }
        struct pollfd p[2] = {{.fd = open_in[0] ? c->client : -1, .events = POLLIN},
                              {.fd = open_in[1] ? c->upstream : -1, .events = POLLIN}};
        int pr = poll(p, 2, wait_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0 || (pr == 0 && !deadline))
            return;
        if (open_in[0] && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(c->client, t + th, EGRESS_HELLO_WIRE_MAX - th);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                open_in[0] = false;
                shutdown(c->upstream, SHUT_WR);
            } else {
                th += (size_t)n;
            }
        }
        if (open_in[1] && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(c->upstream, c->buf, RELAY_BUF);
            if (n < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (n <= 0) {
                open_in[1] = false;
                shutdown(c->client, SHUT_WR);
            } else if (!forward(c->client, c->buf, (size_t)n, false)) {
                return;
            }
        }
    }
}

/* CONNECT host:port: one TLS session to that host. */
static void handle_connect(struct conn *c, struct egress_request *req)
{
    cleanup_free char *host = NULL, *host_header = NULL;
    int port, header_port;
    const char *why, *via;
    if (egress_parse_host_port(req->target, 0, &host, &port, &why) < 0 || port == 0) {
        deny(c->client, "CONNECT", req->target, 0, "malformed CONNECT target", true);
        return;
    }
    if (egress_request_host(req, &host_header, &header_port, &why) < 0) {
        refuse_request(c->client, "400 Bad Request", why);
        return;
    }
    if (host_header && (strcmp(host_header, host) != 0 || (header_port && header_port != port))) {
        char reason[EGRESS_HOST_MAX + 64];
        snprintf(reason, sizeof(reason), "Host header `%s` differs from the CONNECT target", host_header);
        deny(c->client, "CONNECT", host, port, reason, true);
        return;
    }
    why = decide("CONNECT", host, port, &via);
    if (why) {
        deny(c->client, "CONNECT", host, port, why, true);
        return;
    }
    static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (write_all(c->client, established, sizeof(established) - 1) < 0)
        return;
    /* Nothing leaves before the first ClientHello names the same host; it
     * may span several records, and must come within the head timeout. */
    cleanup_free unsigned char *t = xmalloc(EGRESS_HELLO_WIRE_MAX);
    size_t th = c->have > EGRESS_HELLO_WIRE_MAX ? EGRESS_HELLO_WIRE_MAX : c->have;
    memcpy(t, c->in, th);
    c->have = 0;
    struct egress_tls_stream ts = {0};
    char sni[256];
    size_t take = 0;
    long long deadline = mono_ns() + egress_conf.head_timeout_s * 1000000000LL;
    enum egress_tls_next r = EGRESS_TLS_NEED_MORE;
    while ((th == 0 || (r = egress_tls_next(&ts, t, th, &take, sni, sizeof(sni))) == EGRESS_TLS_NEED_MORE)) {
        ssize_t n = read_by(c->client, t + th, EGRESS_HELLO_WIRE_MAX - th, deadline);
        if (n <= 0) {
            deny(c->client, "CONNECT", host, port,
                 n == -2 ? "no complete TLS ClientHello within the head timeout" : "no TLS ClientHello", false);
            return;
        }
        th += (size_t)n;
    }
    if (r != EGRESS_TLS_HELLO) {
        deny(c->client, "CONNECT", host, port, "no TLS ClientHello", false);
        return;
    }
    if (sni[0] == '\0' && !egress_is_ip_literal(host)) {
        deny(c->client, "CONNECT", host, port, "TLS ClientHello without SNI", false);
        return;
    }
    if (sni[0] && strcmp(sni, host) != 0) {
        char reason[EGRESS_HOST_MAX + 64];
        snprintf(reason, sizeof(reason), "TLS SNI `%s` differs from CONNECT host", sni);
        deny(c->client, "CONNECT", host, port, reason, false);
        return;
    }
    char reason[128];
    c->upstream = connect_upstream(host, port, c->addr, sizeof(c->addr), reason, sizeof(reason));
    if (c->upstream < 0) {
        deny(c->client, "CONNECT", host, port, reason, false);
        return;
    }
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    record("egress-allow", "method", "CONNECT", "host", host, "=port", port_s, "address", c->addr, via ? "via" : NULL,
           via, NULL);
    if (!forward(c->upstream, t, take, true))
        return;
    memmove(t, t + take, th - take);
    tunnel(c, t, th - take, &ts, host, port);
}

/* Read the next request head into c->in. 1: there is one, of *end bytes;
 * 0: the connection ended quietly; -1: refused (audited, answered). */
static int read_head(struct conn *c, bool first, long *end)
{
    long long deadline = mono_ns() + egress_conf.head_timeout_s * 1000000000LL;
    *end = c->have ? egress_head_end(c->in, c->have) : 0;
    if (!first && c->have == 0) {
        /* an idle keep-alive connection may wait for its next request */
        struct pollfd p = {.fd = c->client, .events = POLLIN};
        if (poll(&p, 1, IO_TIMEOUT_S * 1000) <= 0)
            return 0;
        deadline = mono_ns() + egress_conf.head_timeout_s * 1000000000LL;
    }
    while (*end == 0 && c->have < EGRESS_HEAD_MAX) {
        ssize_t n = read_by(c->client, c->in + c->have, EGRESS_HEAD_MAX - c->have, deadline);
        if (n == -2) {
            refuse_request(c->client, "408 Request Timeout", "request head not complete within the head timeout");
            return -1;
        }
        if (n <= 0) {
            /* a connection closed before it asked anything is no request */
            if (c->have > 0)
                refuse_request(c->client, "400 Bad Request", "connection closed inside the request head");
            return c->have > 0 ? -1 : 0;
        }
        c->have += (size_t)n;
        *end = egress_head_end(c->in, c->have);
    }
    if (*end < 0) {
        refuse_request(c->client, "400 Bad Request", "NUL byte in the request head");
        return -1;
    }
    if (*end == 0) {
        refuse_request(c->client, "431 Request Header Fields Too Large", "request head over 16 KiB");
        return -1;
    }
    return 1;
}

static void serve_connection(struct conn *c)
{
    for (bool first = true;; first = false) {
        long end;
        if (read_head(c, first, &end) <= 0)
            return;
        /* the head is split in place: keep what follows it apart */
        cleanup_free char *head = xmalloc((size_t)end + 1);
        memcpy(head, c->in, (size_t)end);
        head[end] = '\0';
        memmove(c->in, c->in + end, c->have - (size_t)end);
        c->have -= (size_t)end;
        struct egress_request req;
        const char *why;
        if (egress_request_parse(head, (size_t)end, &req, &why) < 0) {
            refuse_request(c->client, "400 Bad Request", why);
            return;
        }
        if (strcmp(req.method, "CONNECT") == 0) {
            drop_upstream(c);
            handle_connect(c, &req);
            return;
        }
        if (handle_http(c, &req) == STOP)
            return;
    }
}

/* A connection's two buffers are mapped for it and unmapped after it:
 * their pages count only while a transfer has touched them. From malloc,
 * the first free of the 256 KiB relay buffer raises glibc's mmap threshold,
 * later ones come from the per-thread arenas and stay there when freed
 * (the worker's RSS grew by 0.9 MiB over 10,000 connections). */
static char *conn_buffer(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void *connection_thread(void *arg)
{
    struct conn c = {.client = (int)(intptr_t)arg, .upstream = -1};
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(c.client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    c.in = conn_buffer(CONN_IN_MAX);
    c.buf = conn_buffer(RELAY_BUF);
    if (c.in && c.buf)
        serve_connection(&c);
    drop_upstream(&c);
    close(c.client);
    if (c.in)
        munmap(c.in, CONN_IN_MAX);
    if (c.buf)
        munmap(c.buf, RELAY_BUF);
    atomic_fetch_sub(&connections, 1);
    return NULL;
}

/* ---------------------------------------------------------------- the loop */

__attribute__((hot)) void egress_worker_serve(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&answered, &ca);
    /* the host's addresses come first: nothing is served without them */
    struct pollfd first = {.fd = WORKER_CONTROL_FD, .events = POLLIN};
    if (poll(&first, 1, 10000) != 1)
        _exit(1);
    read_control();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    for (;;) {
        struct pollfd p[3] = {{.fd = WORKER_LISTEN_FD, .events = POLLIN},
                              {.fd = WORKER_RECORD_FD, .events = 0},
                              {.fd = WORKER_CONTROL_FD, .events = POLLIN}};
        /* no thread yet, and nothing to do for 50 ms (the wait's own
         * functions bound by then): the proxy of a container that is over in
         * a moment never pays for the shedding */
        if (egress_conf.first_idle && atomic_load(&connections) == 0 && poll(p, 3, 50) == 0) {
            egress_conf.first_idle();
            egress_conf.first_idle = NULL;
        }
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if ((p[1].revents | p[2].revents) & (POLLHUP | POLLERR))
            break;
        if (p[2].revents & POLLIN)
            read_control();
        if (!(p[0].revents & POLLIN))
            continue;
        int client = accept4(WORKER_LISTEN_FD, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        if (atomic_fetch_add(&connections, 1) >= EGRESS_MAX_CONNECTIONS) {
            atomic_fetch_sub(&connections, 1);
            reply_status(client, "503 Too Many Connections");
            close(client);
            char n[16];
            snprintf(n, sizeof(n), "%d", EGRESS_MAX_CONNECTIONS);
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
