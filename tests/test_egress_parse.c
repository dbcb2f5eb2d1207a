/* The egress proxy's parsers (hooks/egress_parse.c) against hostile input:
 * hosts with bytes no host name has, number forms the resolver would take
 * for addresses, broken request heads, ClientHellos split across records or
 * lying about their lengths, allowlist wildcards, and the records the
 * worker hands to the audit writer. Every refusal also checks the ownership
 * rule: a failing parser leaves its out-parameters untouched. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "hooks/egress_parse.h"
#include "runtime/util/utils.h"
#include "tests/testlib.h"

static char untouched[] = "untouched";

/* host:port parsed; the host (malloc'd) or NULL when refused. */
static char *host_of(const char *s, int flags, int *port)
{
    char *host = untouched;
    const char *why = NULL;
    *port = -7;
    if (egress_parse_host_port(s, flags, &host, port, &why) < 0) {
        CHECK(host == untouched);
        CHECK(*port == -7);
        CHECK(why != NULL);
        return NULL;
    }
    return host;
}

TEST(host_port_accepts_names_and_literals)
{
    static const struct { const char *in, *host; int port; } ok[] = {
        {"example.com", "example.com", 0},     {"Example.COM.", "example.com", 0},
        {"a-b_c.test:8080", "a-b_c.test", 8080}, {"1.2.3.4:443", "1.2.3.4", 443},
        {"[::1]:443", "::1", 443},             {"[2001:DB8::1]", "2001:db8::1", 0},
        {"x:1", "x", 1},                       {"x:65535", "x", 65535},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int port;
        cleanup_free char *h = host_of(ok[i].in, 0, &port);
        if (!h) {
            FAIL("`%s` refused", ok[i].in);
            continue;
        }
        CHECK_EQ_STR(h, ok[i].host);
        CHECK_EQ_INT(port, ok[i].port);
    }
}

TEST(host_port_refuses_hostile_hosts)
{
    char long_label[80], long_name[300];
    memset(long_label, 'a', 64);
    long_label[64] = '\0';
    memset(long_name, 'a', sizeof(long_name) - 1);
    for (size_t i = 1; i < sizeof(long_name) - 1; i += 2)
        long_name[i] = '.';
    long_name[sizeof(long_name) - 1] = '\0';
    const char *bad[] = {
        "a%41.test", "a\\b.test", "a b", "a\tb", "", ":80", "a:", "a:0", "a:65536", "a:+80", "a:8 0",
        "a:0x50", "::1", "[::1", "[::1]x", "[::1]:", "[::1%lo]", "[fe80::1%25eth0]:80", "[1.2.3.4]",
        "127.1", "0x7f000001", "2130706433", "017700000001", "1", "a..b", ".a", "..", ".", "a:80:80",
        "*.a.test", "*", "user@host", "a/b", "a?b", "a#b", "\xc3\xa9.test", long_label, long_name, "-", "-a.test", "a-.test", "a.-b",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int port;
        char *h = host_of(bad[i], 0, &port);
        if (h) {
            FAIL("`%s` accepted as `%s`", bad[i], h);
            free(h);
        }
    }
}

TEST(host_port_wildcard_only_when_asked)
{
    int port;
    cleanup_free char *h = host_of("*.Example.com:443", EGRESS_HOST_WILDCARD, &port);
    REQUIRE(h != NULL);
    CHECK_EQ_STR(h, "*.example.com");
    CHECK_EQ_INT(port, 443);
    const char *bad[] = {"*.", "*", "a.*.b", "**.b", "*b.c", "*.*.b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(host_of(bad[i], EGRESS_HOST_WILDCARD, &port) == NULL);
}

TEST(forbidden_addresses)
{
    struct { const char *a; int family; int forbidden; } cases[] = {
        {"127.0.0.1", AF_INET, 1},   {"127.255.1.2", AF_INET, 1},  {"0.0.0.0", AF_INET, 1},
        {"169.254.169.254", AF_INET, 1}, {"10.0.0.1", AF_INET, 0}, {"93.184.216.34", AF_INET, 0},
        {"::1", AF_INET6, 1},        {"::", AF_INET6, 1},          {"fe80::1", AF_INET6, 1},
        {"::ffff:127.0.0.1", AF_INET6, 1}, {"::127.0.0.1", AF_INET6, 1}, {"::ffff:169.254.169.254", AF_INET6, 1},
        {"2001:db8::1", AF_INET6, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sockaddr_in v4 = {.sin_family = AF_INET};
        struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
        void *dst = cases[i].family == AF_INET ? (void *)&v4.sin_addr : (void *)&v6.sin6_addr;
        REQUIRE(inet_pton(cases[i].family, cases[i].a, dst) == 1);
        const struct sockaddr *sa = cases[i].family == AF_INET ? (void *)&v4 : (void *)&v6;
        if (egress_forbidden_address(sa) != cases[i].forbidden)
            FAIL("%s: forbidden should be %d", cases[i].a, cases[i].forbidden);
    }
    struct sockaddr un = {.sa_family = AF_UNIX};
    CHECK(egress_forbidden_address(&un));
}

TEST(allowlist_wildcards_ports_and_literals)
{
    struct egress_allowlist l = {0};
    ac_error_t err = NULL;
    REQUIRE(egress_allowlist_parse(" *.example.com , api.test:8443,,[::1]:9000, 10.0.0.1:80 ", &l, &err) == 0);
    REQUIRE_EQ_INT(l.n, 4);
    CHECK(egress_allowlist_check(&l, "a.example.com", 443) == NULL);
    CHECK(egress_allowlist_check(&l, "a.b.example.com", 80) == NULL);
    CHECK_EQ_STR(egress_allowlist_check(&l, "a.example.com", 22), "port not allowed for this host");
    CHECK_EQ_STR(egress_allowlist_check(&l, "example.com", 443), "host not in allowlist");
    CHECK_EQ_STR(egress_allowlist_check(&l, "aexample.com", 443), "host not in allowlist");
    CHECK_EQ_STR(egress_allowlist_check(&l, "example.com.evil.test", 443), "host not in allowlist");
    CHECK(egress_allowlist_check(&l, "api.test", 8443) == NULL);
    CHECK_EQ_STR(egress_allowlist_check(&l, "api.test", 443), "port not allowed for this host");
    CHECK(egress_allowlist_check(&l, "::1", 9000) == NULL);
    CHECK(egress_allowlist_check(&l, "10.0.0.1", 80) == NULL);
    CHECK_EQ_STR(egress_allowlist_check(&l, "10.0.0.2", 80), "IP literal not in allowlist");
    egress_allowlist_free(&l);
    /* a wildcard never matches an IP literal */
    REQUIRE(egress_allowlist_parse("*.1.1", &l, &err) == 0);
    CHECK_EQ_STR(egress_allowlist_check(&l, "1.1.1.1", 443), "IP literal not in allowlist");
    egress_allowlist_free(&l);
}

TEST(allowlist_refuses_bad_entries_and_keeps_out_untouched)
{
    const char *bad[] = {"a b", "a%41", "foo.*.com", "*", "*.", "a:0", "ok.test,bad host", "[::1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct egress_allowlist l = {.rules = (void *)untouched, .n = 77};
        ac_error_t err = NULL;
        if (egress_allowlist_parse(bad[i], &l, &err) == 0) {
            FAIL("`%s` accepted", bad[i]);
            continue;
        }
        CHECK(l.rules == (void *)untouched && l.n == 77);
        REQUIRE(err != NULL);
        CHECK(strstr(err->msg, "io.agentcage.egress: bad entry") != NULL);
        ac_error_free(&err);
    }
}

/* ---- request heads */

static int parse_head(const char *text, struct egress_request *req, char *buf, const char **why)
{
    size_t len = strlen(text);
    memcpy(buf, text, len + 1);
    long end = egress_head_end(buf, len);
    if (end <= 0) {
        *why = end < 0 ? "NUL" : "incomplete";
        return -1;
    }
    return egress_request_parse(buf, (size_t)end, req, why);
}

TEST(request_head_good)
{
    char buf[512];
    struct egress_request r;
    const char *why;
    REQUIRE(parse_head("GET http://a.test/x HTTP/1.1\r\nHost: a\r\nX-Y: 1\t2\r\n\r\nbody", &r, buf, &why) == 0);
    CHECK_EQ_STR(r.method, "GET");
    CHECK_EQ_STR(r.target, "http://a.test/x");
    CHECK_EQ_STR(r.version, "HTTP/1.1");
    CHECK_EQ_STR(r.headers, "Host: a\r\nX-Y: 1\t2\r\n");
    CHECK_EQ_INT(r.head_len, strlen("GET http://a.test/x HTTP/1.1\r\nHost: a\r\nX-Y: 1\t2\r\n\r\n"));
    REQUIRE(parse_head("CONNECT a.test:443 HTTP/1.0\r\n\r\n", &r, buf, &why) == 0);
    CHECK_EQ_STR(r.headers, "");
    CHECK_EQ_STR(r.target, "a.test:443");
}

TEST(request_head_hostile)
{
    const char *bad[] = {
        "GET http://a/ HTTP/1.1\r\nX: a\nHost: evil\r\n\r\n", /* bare LF in a header */
        "GET http://a/ HTTP/1.1\r\nX: a\rHost: evil\r\n\r\n", /* bare CR */
        "GET http://a/ HTTP/1.1\nHost: evil\r\n\r\n",         /* bare LF in the request line */
        "GET http://a/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",  /* obs-fold */
        "GET http://a/ HTTP/1.1\r\nno colon\r\n\r\n",
        "GET http://a/ HTTP/1.1\r\n: empty name\r\n\r\n",
        "GET http://a/ HTTP/1.1\r\nX : a\r\n\r\n",
        "GET http://a/ HTTP/1.1\r\nX: a\x01\r\n\r\n",
        "GET http://a/ HTTP/1.1\r\nX: a\x7f\r\n\r\n",
        "GET  http://a/ HTTP/1.1\r\n\r\n",
        "GET http://a/  HTTP/1.1\r\n\r\n",
        "GET http://a/ HTTP/1.1 \r\n\r\n",
        "GET http://a/ HTTP/2.0\r\n\r\n",
        "GET http://a/ http/1.1\r\n\r\n",
        "GET http://a/\r\n\r\n",
        "G(T http://a/ HTTP/1.1\r\n\r\n",
        "\r\nGET http://a/ HTTP/1.1\r\n\r\n",
        "\r\n\r\n",
        "GET http://a/\x80 HTTP/1.1\r\n\r\n",
        "GETGETGETGETGETGETGETGETGETGETGETGET http://a/ HTTP/1.1\r\n\r\n", /* method over 32 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[512];
        struct egress_request r = {.method = untouched};
        const char *why = NULL;
        if (parse_head(bad[i], &r, buf, &why) == 0)
            FAIL("head %zu accepted", i);
        CHECK(r.method == untouched);
    }
}

TEST(request_head_nul_and_header_count)
{
    char nul[] = "GET http://a/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
    CHECK_EQ_INT(egress_head_end(nul, sizeof(nul) - 1), -1);
    CHECK_EQ_INT(egress_head_end("GET / HTTP/1.1\r\n", 16), 0);
    /* a NUL after the end belongs to the body */
    char body_nul[] = "GET http://a/ HTTP/1.1\r\n\r\n\0";
    CHECK_EQ_INT(egress_head_end(body_nul, sizeof(body_nul) - 1), (long)sizeof(body_nul) - 2);
    struct buf { char b[4096]; } many;
    size_t n = (size_t)snprintf(many.b, sizeof(many.b), "GET http://a/ HTTP/1.1\r\n");
    for (int i = 0; i < EGRESS_HEADERS_MAX; i++)
        n += (size_t)snprintf(many.b + n, sizeof(many.b) - n, "X%d: y\r\n", i);
    char copy[4096];
    struct egress_request r;
    const char *why;
    strcpy(copy, many.b);
    strcat(copy, "\r\n");
    CHECK(egress_request_parse(copy, strlen(copy), &r, &why) == 0);
    strcpy(copy, many.b);
    strcat(copy, "Z: 1\r\n\r\n");
    CHECK(egress_request_parse(copy, strlen(copy), &r, &why) < 0);
    CHECK_EQ_STR(why, "too many header lines");
}

TEST(http_url_authority_and_path)
{
    static const struct { const char *url, *host; int port; const char *path; } ok[] = {
        {"http://a.test/x/y?q=1#frag", "a.test", 80, "/x/y?q=1"},
        {"HTTP://A.test:8080?x", "a.test", 8080, "/?x"},
        {"http://a.test", "a.test", 80, "/"},
        {"http://a.test#f", "a.test", 80, "/"},
        {"http://[::1]:81/p", "::1", 81, "/p"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char *host = NULL, *path = NULL;
        int port = 0;
        const char *why;
        if (egress_parse_http_url(ok[i].url, &host, &port, &path, &why) < 0) {
            FAIL("`%s` refused: %s", ok[i].url, why);
            continue;
        }
        CHECK_EQ_STR(host, ok[i].host);
        CHECK_EQ_INT(port, ok[i].port);
        CHECK_EQ_STR(path, ok[i].path);
        free(host);
        free(path);
    }
    const char *bad[] = {"https://a.test/", "ftp://a/", "/relative", "http://user@a.test/", "http://a.test%2f@x/",
                         "http://a%41.test/", "http:///x", "http://a.test:99999/", "http://a\\b/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *host = untouched, *path = untouched;
        int port = -7;
        const char *why = NULL;
        CHECK(egress_parse_http_url(bad[i], &host, &port, &path, &why) < 0);
        CHECK(host == untouched && path == untouched && port == -7 && why);
    }
}

TEST(rebuilt_head_sets_host_and_drops_hop_by_hop)
{
    char buf[512];
    struct egress_request r;
    const char *why;
    REQUIRE(parse_head("GET http://a.test/x HTTP/1.1\r\nHost: evil.test\r\nConnection: keep-alive\r\n"
                       "Proxy-Authorization: Basic x\r\nUser-Agent: t\r\nte: trailers\r\nUpgrade: h2c\r\n"
                       "Keep-Alive: 5\r\nProxy-Connection: x\r\nAccept: */*\r\n\r\n",
                       &r, buf, &why) == 0);
    size_t len;
    cleanup_free char *out = egress_request_rebuild(&r, "a.test", 80, "/x", &len);
    CHECK_EQ_STR(out, "GET /x HTTP/1.1\r\nHost: a.test\r\nUser-Agent: t\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    CHECK_EQ_INT(len, strlen(out));
    cleanup_free char *v6 = egress_request_rebuild(&r, "::1", 8080, "/", &len);
    CHECK(strncmp(v6, "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n", 34) == 0);
}

/* ---- TLS */

static size_t put16(unsigned char *p, size_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
    return 2;
}

/* A ClientHello handshake message; sni NULL: no server_name; extra_ext: a
 * raw extension appended after it. */
static size_t hello_msg(unsigned char *out, const char *sni, size_t sni_len, const unsigned char *extra, size_t extra_len)
{
    unsigned char *p = out + 4;
    p += put16(p, 0x0303);
    memset(p, 0x42, 32);
    p += 32;
    *p++ = 0;
    p += put16(p, 2);
    p += put16(p, 0x1301);
    *p++ = 1;
    *p++ = 0;
    unsigned char *ext = p;
    p += 2;
    p += put16(p, 0x000a); /* supported_groups, as real hellos have */
    p += put16(p, 4);
    p += put16(p, 2);
    p += put16(p, 0x001d);
    if (sni) {
        p += put16(p, 0);
        p += put16(p, sni_len + 5);
        p += put16(p, sni_len + 3);
        *p++ = 0;
        p += put16(p, sni_len);
        memcpy(p, sni, sni_len);
        p += sni_len;
    }
    if (extra_len)
        memcpy(p, extra, extra_len);
    p += extra_len;
    put16(ext, (size_t)(p - ext - 2));
    size_t body = (size_t)(p - out - 4);
    out[0] = 1;
    out[1] = (unsigned char)(body >> 16);
    out[2] = (unsigned char)(body >> 8);
    out[3] = (unsigned char)body;
    return body + 4;
}

/* msg in records cut at the offsets in cuts (ascending, 0-terminated). */
static size_t records(unsigned char *wire, const unsigned char *msg, size_t len, const size_t *cuts)
{
    size_t w = 0, from = 0;
    for (size_t i = 0;; i++) {
        size_t to = cuts[i] ? cuts[i] : len;
        wire[w++] = 0x16;
        wire[w++] = 3;
        wire[w++] = 1;
        w += put16(wire + w, to - from);
        memcpy(wire + w, msg + from, to - from);
        w += to - from;
        from = to;
        if (!cuts[i])
            return w;
    }
}

static enum egress_hello judge(const unsigned char *wire, size_t len, char *sni)
{
    strcpy(sni, untouched);
    return egress_client_hello(wire, len, sni, 256);
}

TEST(client_hello_whole_and_split_anywhere)
{
    unsigned char msg[512], wire[8192];
    char sni[256];
    size_t len = hello_msg(msg, "Allowed.Test", 12, NULL, 0);
    size_t none[] = {0};
    size_t w = records(wire, msg, len, none);
    CHECK_EQ_INT(judge(wire, w, sni), EGRESS_HELLO_SNI);
    CHECK_EQ_STR(sni, "allowed.test");
    /* every cut, including inside the 4-byte handshake header */
    for (size_t cut = 1; cut < len; cut++) {
        size_t cuts[] = {cut, 0};
        w = records(wire, msg, len, cuts);
        if (judge(wire, w, sni) != EGRESS_HELLO_SNI || strcmp(sni, "allowed.test") != 0)
            FAIL("cut at %zu", cut);
        /* and every prefix of that wire is "more, please" */
        for (size_t pre = 0; pre < w; pre += 7)
            if (judge(wire, pre, sni) != EGRESS_HELLO_NEED_MORE || strcmp(sni, untouched) != 0)
                FAIL("cut %zu, prefix %zu", cut, pre);
    }
    /* one byte per record: up to EGRESS_HELLO_RECORDS_MAX records */
    size_t cuts[EGRESS_HELLO_RECORDS_MAX + 2];
    for (size_t i = 0; i < EGRESS_HELLO_RECORDS_MAX - 1; i++)
        cuts[i] = i + 1;
    cuts[EGRESS_HELLO_RECORDS_MAX - 1] = 0;
    w = records(wire, msg, len, cuts);
    CHECK_EQ_INT(judge(wire, w, sni), EGRESS_HELLO_SNI);
    for (size_t i = 0; i < EGRESS_HELLO_RECORDS_MAX; i++)
        cuts[i] = i + 1;
    cuts[EGRESS_HELLO_RECORDS_MAX] = 0;
    w = records(wire, msg, len, cuts);
    CHECK_EQ_INT(judge(wire, w, sni), EGRESS_HELLO_BAD);
}

TEST(client_hello_without_sni)
{
    unsigned char msg[512], wire[1024];
    char sni[256];
    size_t none[] = {0};
    size_t len = hello_msg(msg, NULL, 0, NULL, 0);
    CHECK_EQ_INT(judge(wire, records(wire, msg, len, none), sni), EGRESS_HELLO_NO_SNI);
    CHECK_EQ_STR(sni, untouched);
}

TEST(client_hello_hostile)
{
    unsigned char msg[512], wire[1024];
    char sni[256];
    size_t none[] = {0}, len, w;
    /* a second server_name extension, naming another host */
    static const unsigned char dup_ext[] = {0, 0, 0, 15, 0, 13, 0, 0, 10, 'o', 't', 'h', 'e', 'r', '.', 't', 'e', 's', 't'};
    len = hello_msg(msg, "allowed.test", 12, dup_ext, sizeof(dup_ext));
    CHECK_EQ_INT(judge(wire, records(wire, msg, len, none), sni), EGRESS_HELLO_BAD);
    /* two host_names in one list */
    static const unsigned char two[] = {0, 0, 0, 12, 0, 10, 0, 0, 2, 'a', 'b', 0, 0, 2, 'c', 'd'};
    len = hello_msg(msg, NULL, 0, two, sizeof(two));
    CHECK_EQ_INT(judge(wire, records(wire, msg, len, none), sni), EGRESS_HELLO_BAD);
    /* names that strcmp would cut short, or no host has */
    const char *names[] = {"allowed.test\0evil", "allowed.test.", "a b.test", "a%41.test", "..", "a\\b", "127.1"};
    size_t lens[] = {17, 13, 8, 9, 2, 3, 5};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        len = hello_msg(msg, names[i], lens[i], NULL, 0);
        if (judge(wire, records(wire, msg, len, none), sni) != EGRESS_HELLO_BAD)
            FAIL("SNI name %zu accepted as `%s`", i, sni);
    }
    len = hello_msg(msg, "allowed.test", 12, NULL, 0);
    /* not a handshake record; not TLS at all; a record of length 0 */
    w = records(wire, msg, len, none);
    wire[0] = 0x17;
    CHECK_EQ_INT(judge(wire, w, sni), EGRESS_HELLO_BAD);
    CHECK_EQ_INT(judge((const unsigned char *)"GET / HTTP/1.1\r\n", 16, sni), EGRESS_HELLO_BAD);
    static const unsigned char empty_record[] = {0x16, 3, 1, 0, 0};
    CHECK_EQ_INT(judge(empty_record, sizeof(empty_record), sni), EGRESS_HELLO_BAD);
    /* more handshake data in the record the hello ends in */
    memcpy(msg + len, "\x02\x00\x00\x00", 4);
    CHECK_EQ_INT(judge(wire, records(wire, msg, len + 4, none), sni), EGRESS_HELLO_BAD);
    /* lengths that lie: the message claims more than its extensions, or less */
    len = hello_msg(msg, "allowed.test", 12, NULL, 0);
    msg[3] += 3;
    memset(msg + len, 0, 3);
    CHECK_EQ_INT(judge(wire, records(wire, msg, len + 3, none), sni), EGRESS_HELLO_BAD);
    len = hello_msg(msg, "allowed.test", 12, NULL, 0);
    msg[3] -= 1;
    CHECK_EQ_INT(judge(wire, records(wire, msg, len - 1, none), sni), EGRESS_HELLO_BAD);
    /* a handshake message that is not a ClientHello, or too large */
    len = hello_msg(msg, "allowed.test", 12, NULL, 0);
    msg[0] = 2;
    CHECK_EQ_INT(judge(wire, records(wire, msg, len, none), sni), EGRESS_HELLO_BAD);
    static const unsigned char huge[] = {0x16, 3, 1, 0, 4, 1, 0x01, 0, 0};
    CHECK_EQ_INT(judge(huge, sizeof(huge), sni), EGRESS_HELLO_BAD);
    CHECK_EQ_STR(sni, untouched);
}

/* ---- records */

TEST(record_round_trip)
{
    char buf[EGRESS_RECORD_MAX];
    const char *kv[] = {"method", "GET", "host", "a.test", "=port", "80", "address", "127.0.0.1", "path", "/", NULL};
    size_t n = egress_record_encode(buf, sizeof(buf), "egress-allow", kv);
    REQUIRE(n > 0);
    struct egress_record r;
    const char *why;
    REQUIRE(egress_record_parse(buf, n, &r, &why) == 0);
    CHECK_EQ_STR(r.event, "egress-allow");
    REQUIRE_EQ_INT(r.n, 5);
    CHECK_EQ_STR(r.key[2], "=port");
    CHECK_EQ_STR(r.value[2], "80");
    /* a long value is cut to the bound, and still parses */
    char big[5000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    const char *kv2[] = {"reason", big, NULL};
    n = egress_record_encode(buf, sizeof(buf), "egress-deny", kv2);
    REQUIRE(n > 0);
    REQUIRE(egress_record_parse(buf, n, &r, &why) == 0);
    CHECK_EQ_INT(strlen(r.value[0]), EGRESS_RECORD_VALUE_MAX);
}

static int parse_raw(const char *raw, size_t len, const char **why)
{
    struct egress_record r = {.event = untouched};
    int rc = egress_record_parse(raw, len, &r, why);
    if (rc < 0)
        CHECK(r.event == untouched);
    return rc;
}

TEST(record_shapes_refused)
{
#define RAW(s) s, sizeof(s) - 1
    static const struct { const char *raw; size_t len; const char *why; } bad[] = {
        {RAW("egress-allow\0method\0GET\0host\0a\0=port\0" "080\0address\0x\0"), "a number that is not decimal"},
        {RAW("egress-allow\0method\0GET\0host\0a\0=port\0-1\0address\0x\0"), "a number that is not decimal"},
        {RAW("egress-allow\0method\0GET\0host\0a\0address\0x\0"), "a required key missing"},
        {RAW("egress-deny\0reason\0x\0reason\0y\0"), "a key twice"},
        {RAW("egress-deny\0reason\0x\0id\0other-container\0"), "a key this event does not have"},
        {RAW("egress-deny\0reason\0x\0=\"injected\":1,\"a\0x\0"), "a key this event does not have"},
        {RAW("container-created\0reason\0x\0"), "unknown event"},
        {RAW("denial-kill\0=denials\0999\0"), "unknown event"},
        {RAW("egress-deny\0reason\0"), "a key without a value"},
        {RAW("egress-deny\0reason\0x"), "not NUL-terminated strings"},
        {RAW("egress-busy\0=connections\0\0"), "a number that is not decimal"},
        {RAW("egress-busy\0=connections\0" "12345678901234567890\0"), "a number that is not decimal"},
        {RAW("\0"), "unknown event"},
    };
#undef RAW
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = NULL;
        if (parse_raw(bad[i].raw, bad[i].len, &why) == 0)
            FAIL("record %zu accepted", i);
        else if (strcmp(why, bad[i].why) != 0)
            FAIL("record %zu: `%s`, expected `%s`", i, why, bad[i].why);
    }
    char many[EGRESS_RECORD_MAX];
    size_t n = (size_t)snprintf(many, sizeof(many), "egress-deny");
    for (int i = 0; i < EGRESS_RECORD_PAIRS + 1; i++)
        n += (size_t)snprintf(many + n + 1, sizeof(many) - n - 1, "reason%cx", 0) + 1 + 1;
    const char *why;
    CHECK(parse_raw(many, n + 1, &why) < 0);
    char long_value[EGRESS_RECORD_VALUE_MAX + 64] = "egress-deny\0reason";
    size_t at = sizeof("egress-deny\0reason");
    memset(long_value + at, 'y', EGRESS_RECORD_VALUE_MAX + 1);
    long_value[at + EGRESS_RECORD_VALUE_MAX + 1] = '\0';
    CHECK(parse_raw(long_value, at + EGRESS_RECORD_VALUE_MAX + 2, &why) < 0);
    CHECK_EQ_STR(why, "a value too long");
}
