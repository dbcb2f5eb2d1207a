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

/* An address (v4 or v6 text) as a sockaddr in *ss. */
static const struct sockaddr *sockaddr_of(const char *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, a, &v4->sin_addr) == 1)
        v4->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, a, &v6->sin6_addr) == 1)
        v6->sin6_family = AF_INET6;
    else
        return NULL;
    return (const struct sockaddr *)ss;
}

/* Every spelling of the addresses a name must not lead to: the host's
 * loopback, private and CGNAT ranges, link-local (cloud metadata),
 * multicast, unspecified, reserved; and the same in IPv6 clothing. */
TEST(refused_addresses_in_every_spelling)
{
    static const char *const refused[] = {
        "127.0.0.1", "127.255.1.2", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "172.16.0.1",
        "172.31.255.254", "192.168.1.1", "100.64.0.1", "100.127.255.255", "100.100.100.200", "169.254.169.254",
        "192.0.0.192", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
        "240.0.0.1", "255.255.255.255",
        "::", "::1", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
        "::ffff:169.254.169.254", "::127.0.0.1", "::ffff:7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::127.0.0.1",
        "2002:7f00:1::1", "2002:a00:1::", "2001:db8::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "100::1", "fec0::1", "::ffff:0:7f00:1",
    };
    static const char *const allowed[] = {"93.184.216.34", "1.1.1.1", "172.32.0.1", "100.128.0.1", "169.253.1.1",
                                          "2606:4700::1111", "2a00:1450:4001::200e", "::ffff:93.184.216.34",
                                          "64:ff9b::5db8:d822", "2002:5db8:d822::1"};
    struct sockaddr_storage ss;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const struct sockaddr *sa = sockaddr_of(refused[i], &ss);
        REQUIRE(sa != NULL);
        if (!egress_address_refusal(sa))
            FAIL("%s allowed", refused[i]);
    }
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
        const char *why = egress_address_refusal(sockaddr_of(allowed[i], &ss));
        if (why)
            FAIL("%s refused: %s", allowed[i], why);
    }
    CHECK_EQ_STR(egress_address_refusal(sockaddr_of("::ffff:169.254.169.254", &ss)),
                 "a link-local address (169.254.0.0/16: cloud metadata)");
    struct sockaddr un = {.sa_family = AF_UNIX};
    CHECK(egress_address_refusal(&un) != NULL);
}

TEST(cidrs_parse_and_contain)
{
    struct egress_cidrs c = {0};
    ac_error_t err = NULL;
    REQUIRE(egress_cidrs_parse("127.0.0.0/8, 10.1.2.3 ,fd00::/8,192.168.0.0/16", "egress.allow-cidr", &c, &err) == 0);
    REQUIRE_EQ_INT(c.n, 4);
    struct sockaddr_storage ss;
    static const char *const in[] = {"127.0.0.1", "127.9.9.9", "10.1.2.3", "::ffff:10.1.2.3", "fd12::1",
                                     "192.168.255.1"};
    static const char *const out[] = {"128.0.0.1", "10.1.2.4", "fe00::1", "::10.1.2.3", "192.169.0.0", "::1"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        if (!egress_cidrs_contain(&c, sockaddr_of(in[i], &ss)))
            FAIL("%s not contained", in[i]);
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
        if (egress_cidrs_contain(&c, sockaddr_of(out[i], &ss)))
            FAIL("%s contained", out[i]);
    egress_cidrs_free(&c);
    REQUIRE(egress_cidrs_parse("0.0.0.0/0", "x", &c, &err) == 0);
    CHECK(egress_cidrs_contain(&c, sockaddr_of("8.8.8.8", &ss)));
    CHECK(!egress_cidrs_contain(&c, sockaddr_of("2001:4860::8888", &ss)));
    egress_cidrs_free(&c);
    static const char *const bad[] = {"10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "a.b.c.d",
                                      "::1/129", "10.0.0.0/-1", "10/8"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct egress_cidrs u = {.v = (void *)untouched, .n = 3};
        if (egress_cidrs_parse(bad[i], "egress.allow-cidr", &u, &err) == 0) {
            FAIL("`%s` accepted", bad[i]);
            continue;
        }
        CHECK(u.v == (void *)untouched && u.n == 3);
        CHECK(strstr(err->msg, "egress.allow-cidr: bad entry `") == err->msg);
        ac_error_free(&err);
    }
}

/* IDNA: names on the wire are A-labels; a label starting xn-- must be
 * one; U-labels are written as such only in the allowlist. */
TEST(host_names_idna)
{
    int port;
    cleanup_free char *a = host_of("XN--bcher-kva.example:443", 0, &port);
    REQUIRE(a != NULL);
    CHECK_EQ_STR(a, "xn--bcher-kva.example");
    static const char *const bad[] = {"xn--abc.example", "xn--.example", "xn--ls8h.example", "b\xc3\xbc" "cher.example",
                                      "xn--a-ecp.test", "a.xn--zz--.test"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *h = host_of(bad[i], 0, &port);
        if (h)
            FAIL("`%s` accepted as `%s`", bad[i], h);
        free(h);
    }
    struct egress_allowlist l = {0};
    ac_error_t err = NULL;
    REQUIRE(egress_allowlist_parse("B\xc3\x9c" "CHER.example:443, *.m\xc3\xbc" "nchen.test", 0, &l, &err) == 0);
    REQUIRE_EQ_INT(l.n, 2);
    CHECK_EQ_STR(l.rules[0].host, "xn--bcher-kva.example");
    CHECK_EQ_STR(l.rules[1].host, ".xn--mnchen-3ya.test");
    CHECK(egress_allowlist_check(&l, "xn--bcher-kva.example", 443) == NULL);
    CHECK(egress_allowlist_check(&l, "a.xn--mnchen-3ya.test", 80) == NULL);
    egress_allowlist_free(&l);
    CHECK(egress_allowlist_parse("\xff\xfe.example", 0, &l, &err) < 0);
    ac_error_free(&err);
}

/* "*." is one label; deeper names (each label a lookup the proxy would
 * make: data out through DNS) only under "**.", which the operator allows. */
TEST(wildcard_depth)
{
    struct egress_allowlist l = {0};
    ac_error_t err = NULL;
    REQUIRE(egress_allowlist_parse("*.example.com", 0, &l, &err) == 0);
    CHECK(egress_allowlist_check(&l, "a.example.com", 443) == NULL);
    CHECK_EQ_STR(egress_allowlist_check(&l, "a.b.example.com", 443), "more than one label under a *. wildcard");
    CHECK_EQ_STR(egress_allowlist_check(&l, "secret.data.in.labels.example.com", 443),
                 "more than one label under a *. wildcard");
    CHECK_EQ_STR(egress_allowlist_check(&l, "example.com", 443), "host not in allowlist");
    egress_allowlist_free(&l);
    CHECK(egress_allowlist_parse("**.example.com", 0, &l, &err) < 0);
    CHECK(strstr(err->msg, "`**.` wildcards (any depth) are not allowed here") != NULL);
    ac_error_free(&err);
    REQUIRE(egress_allowlist_parse("**.example.com:443", EGRESS_HOST_DEEP_WILDCARD, &l, &err) == 0);
    CHECK_EQ_INT(l.rules[0].depth, -1);
    CHECK(egress_allowlist_check(&l, "a.example.com", 443) == NULL);
    CHECK(egress_allowlist_check(&l, "a.b.c.example.com", 443) == NULL);
    CHECK_EQ_STR(egress_allowlist_check(&l, "a.b.example.com", 80), "port not allowed for this host");
    CHECK_EQ_STR(egress_allowlist_check(&l, "example.com", 443), "host not in allowlist");
    egress_allowlist_free(&l);
    egress_allowlist_add(&l, "added.test", 8080);
    CHECK(egress_allowlist_check(&l, "added.test", 8080) == NULL);
    CHECK_EQ_STR(egress_allowlist_check(&l, "added.test", 80), "port not allowed for this host");
    egress_allowlist_free(&l);
}

TEST(allowlist_wildcards_ports_and_literals)
{
    struct egress_allowlist l = {0};
    ac_error_t err = NULL;
    REQUIRE(egress_allowlist_parse(" *.example.com , api.test:8443,,[::1]:9000, 10.0.0.1:80 ", 0, &l, &err) == 0);
    REQUIRE_EQ_INT(l.n, 4);
    CHECK(egress_allowlist_check(&l, "a.example.com", 443) == NULL);
    CHECK(egress_allowlist_check(&l, "b.example.com", 80) == NULL);
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
    REQUIRE(egress_allowlist_parse("*.1.1", 0, &l, &err) == 0);
    CHECK_EQ_STR(egress_allowlist_check(&l, "1.1.1.1", 443), "IP literal not in allowlist");
    egress_allowlist_free(&l);
}

TEST(allowlist_refuses_bad_entries_and_keeps_out_untouched)
{
    const char *bad[] = {"a b", "a%41", "foo.*.com", "*", "*.", "a:0", "ok.test,bad host", "[::1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct egress_allowlist l = {.rules = (void *)untouched, .n = 77};
        ac_error_t err = NULL;
        if (egress_allowlist_parse(bad[i], 0, &l, &err) == 0) {
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
    cleanup_free char *out = egress_request_rebuild(&r, "a.test", 80, "/x", true, &len);
    CHECK_EQ_STR(out, "GET /x HTTP/1.1\r\nHost: a.test\r\nUser-Agent: t\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    CHECK_EQ_INT(len, strlen(out));
    cleanup_free char *kept = egress_request_rebuild(&r, "a.test", 80, "/x", false, &len);
    CHECK_EQ_STR(kept, "GET /x HTTP/1.1\r\nHost: a.test\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n");
    CHECK_EQ_INT(len, strlen(kept));
    cleanup_free char *v6 = egress_request_rebuild(&r, "::1", 8080, "/", true, &len);
    CHECK(strncmp(v6, "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n", 34) == 0);
}

/* The Host header, one at most, as host[:port]. */
TEST(request_host_header)
{
    char buf[512];
    struct egress_request r;
    const char *why;
    char *host = untouched;
    int port = -7;
    REQUIRE(parse_head("GET http://a.test/ HTTP/1.1\r\nAccept: x\r\n\r\n", &r, buf, &why) == 0);
    REQUIRE(egress_request_host(&r, &host, &port, &why) == 0);
    CHECK(host == NULL && port == 0);
    REQUIRE(parse_head("GET http://a.test/ HTTP/1.1\r\nhost:  A.Test:8080 \r\n\r\n", &r, buf, &why) == 0);
    REQUIRE(egress_request_host(&r, &host, &port, &why) == 0);
    CHECK_EQ_STR(host, "a.test");
    CHECK_EQ_INT(port, 8080);
    free(host);
    static const char *const bad[] = {
        "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
        "GET http://a.test/ HTTP/1.1\r\nHost: a.test, b.test\r\n\r\n",
        "GET http://a.test/ HTTP/1.1\r\nHost: user@a.test\r\n\r\n",
        "GET http://a.test/ HTTP/1.1\r\nHost:\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        REQUIRE(parse_head(bad[i], &r, buf, &why) == 0);
        host = untouched;
        port = -7;
        CHECK(egress_request_host(&r, &host, &port, &why) < 0);
        CHECK(host == untouched && port == -7);
    }
}

/* Request bodies: one framing or none; the shapes two parsers read two
 * ways are refused. */
TEST(request_framing_refuses_smuggling)
{
    static const struct { const char *head; int kind; unsigned long long length; bool close; } ok[] = {
        {"GET http://a/ HTTP/1.1\r\n\r\n", EGRESS_BODY_NONE, 0, false},
        {"POST http://a/ HTTP/1.1\r\nContent-Length: 12\r\n\r\n", EGRESS_BODY_LENGTH, 12, false},
        {"POST http://a/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", EGRESS_BODY_NONE, 0, false},
        {"POST http://a/ HTTP/1.1\r\ntransfer-encoding:  Chunked \r\n\r\n", EGRESS_BODY_CHUNKED, 0, false},
        {"GET http://a/ HTTP/1.0\r\n\r\n", EGRESS_BODY_NONE, 0, true},
        {"GET http://a/ HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n", EGRESS_BODY_NONE, 0, true},
    };
    char buf[512];
    struct egress_request r;
    const char *why;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct egress_framing f;
        REQUIRE(parse_head(ok[i].head, &r, buf, &why) == 0);
        if (egress_request_framing(&r, &f, &why) < 0) {
            FAIL("%zu refused: %s", i, why);
            continue;
        }
        CHECK_EQ_INT(f.kind, ok[i].kind);
        CHECK(f.length == ok[i].length);
        CHECK(f.close == ok[i].close);
    }
    static const char *const bad[] = {
        "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length:\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n",
        "POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct egress_framing f = {.kind = 77};
        REQUIRE(parse_head(bad[i], &r, buf, &why) == 0);
        why = NULL;
        if (egress_request_framing(&r, &f, &why) == 0)
            FAIL("`%s` accepted", bad[i]);
        CHECK(f.kind == 77 && why != NULL);
    }
}

/* Feed a chunked body in pieces of step bytes: the bytes taken, or -1. */
static long chunked_all(const char *body, size_t len, bool strict, size_t step)
{
    struct egress_chunked c;
    egress_chunked_init(&c, strict);
    size_t taken = 0;
    while (taken < len && !egress_chunked_done(&c)) {
        size_t n = len - taken < step ? len - taken : step;
        long t = egress_chunked_feed(&c, body + taken, n);
        if (t < 0)
            return -1;
        taken += (size_t)t;
        if ((size_t)t < n && !egress_chunked_done(&c))
            return -2; /* stopped short without an end */
    }
    return egress_chunked_done(&c) ? (long)taken : -3;
}

TEST(chunked_bodies)
{
    static const char good[] = "5\r\nhello\r\n1A;ext=\"v\"\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n";
    static const char after[] = "GET http://next/ HTTP/1.1\r\n\r\n";
    char both[256];
    snprintf(both, sizeof(both), "%s%s", good, after);
    for (size_t step = 1; step <= sizeof(both); step++) {
        if (chunked_all(good, strlen(good), true, step) != (long)strlen(good))
            FAIL("step %zu", step);
        /* what follows the body is not the body's */
        struct egress_chunked c;
        egress_chunked_init(&c, true);
        size_t taken = 0;
        while (!egress_chunked_done(&c) && taken < strlen(both)) {
            size_t n = strlen(both) - taken < step ? strlen(both) - taken : step;
            taken += (size_t)egress_chunked_feed(&c, both + taken, n);
        }
        CHECK_EQ_INT(taken, strlen(good));
    }
    CHECK(chunked_all("0\r\n\r\n", 5, true, 1) == 5);
    CHECK(chunked_all("000\r\n\r\n", 7, true, 3) == 7);
    static const char *const strict_bad[] = {
        "5\nhello\r\n0\r\n\r\n",         /* bare LF after the size */
        "5\r\nhello\n0\r\n\r\n",         /* bare LF after the data */
        "5\r\nhelloX\r\n0\r\n\r\n",      /* data longer than its size */
        "0\r\n\n",                       /* bare LF at the end */
        " 5\r\nhello\r\n0\r\n\r\n",      /* blank before the size */
        "\r\n",                          /* no size */
        "g\r\n",                         /* not hex */
        "1000000000000000\r\n",          /* 16 hex digits */
        "5;a\x01\r\nhello\r\n0\r\n\r\n", /* a control byte in an extension */
        "0\r\nX\x00: y\r\n\r\n",         /* NUL in a trailer */
        "0\r\n: y\r\n\r\n",              /* a trailer line without a name */
        "0\r\nX: y\r\r\n\r\n",           /* a bare CR */
    };
    static const size_t lens[] = {14, 14, 17, 4, 17, 2, 3, 18, 19, 12, 11, 12};
    for (size_t i = 0; i < sizeof(strict_bad) / sizeof(strict_bad[0]); i++)
        if (chunked_all(strict_bad[i], lens[i], true, 1) >= 0)
            FAIL("strict accepted %zu", i);
    /* a server's bare LF is taken */
    CHECK(chunked_all("5\nhello\n0\n\n", 11, false, 1) == 11);
    /* after a malformed body nothing more is taken */
    struct egress_chunked c;
    egress_chunked_init(&c, true);
    CHECK(egress_chunked_feed(&c, "zz", 2) == -1);
    CHECK(egress_chunked_feed(&c, "0\r\n\r\n", 5) == -1);
}

TEST(response_heads_and_framing)
{
    static const struct { const char *head, *method; int status, kind; unsigned long long length; bool close; } ok[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", "GET", 200, EGRESS_BODY_LENGTH, 11, false},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n", "GET", 200,
         EGRESS_BODY_CHUNKED, 0, false},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", 200, EGRESS_BODY_CLOSE, 0, true},
        {"HTTP/1.1 200 OK\r\n\r\n", "GET", 200, EGRESS_BODY_CLOSE, 0, true},
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD", 200, EGRESS_BODY_NONE, 0, false},
        {"HTTP/1.1 204 No Content\r\n\r\n", "GET", 204, EGRESS_BODY_NONE, 0, false},
        {"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", "GET", 304, EGRESS_BODY_NONE, 0, false},
        {"HTTP/1.1 100 Continue\r\n\r\n", "POST", 100, EGRESS_BODY_NONE, 0, false},
        {"HTTP/1.0 200 OK\nContent-Length: 11\n\n", "GET", 200, EGRESS_BODY_LENGTH, 11, true},
        {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n", "GET", 200, EGRESS_BODY_LENGTH, 2,
         false},
        {"HTTP/1.1 200\r\nConnection: close\r\nContent-Length: 2\r\n\r\n", "GET", 200, EGRESS_BODY_LENGTH, 2, true},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        size_t len = strlen(ok[i].head);
        CHECK_EQ_INT(egress_response_head_end(ok[i].head, len), len);
        CHECK_EQ_INT(egress_response_head_end(ok[i].head, len - 1), 0);
        struct egress_response r;
        const char *why;
        if (egress_response_parse(ok[i].head, len, ok[i].method, &r, &why) < 0) {
            FAIL("%zu refused: %s", i, why);
            continue;
        }
        CHECK_EQ_INT(r.status, ok[i].status);
        CHECK_EQ_INT(r.framing.kind, ok[i].kind);
        CHECK(r.framing.length == ok[i].length);
        if (r.framing.close != ok[i].close)
            FAIL("%zu: close %d", i, r.framing.close);
    }
    static const char *const bad[] = {"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "ICY 200 OK\r\n\r\n",
                                      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                                      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 2000\r\n\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct egress_response r = {.status = 7};
        const char *why = NULL;
        if (egress_response_parse(bad[i], strlen(bad[i]), "GET", &r, &why) == 0)
            FAIL("`%s` accepted", bad[i]);
        CHECK(r.status == 7 && why);
    }
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

/* A tunnel as TLS records: the bytes passed and the hellos seen, fed in
 * pieces of step bytes (what the worker does with its buffer). Returns the
 * number of hellos, -1 on BAD; the SNIs joined by ',' in snis. */
static int tls_walk(const unsigned char *wire, size_t len, size_t step, char *snis, size_t cap)
{
    struct egress_tls_stream s = {0};
    unsigned char held[EGRESS_HELLO_WIRE_MAX];
    size_t have = 0, off = 0;
    int hellos = 0;
    snis[0] = '\0';
    while (off < len || have) {
        size_t n = len - off < step ? len - off : step;
        memcpy(held + have, wire + off, n);
        have += n;
        off += n;
        for (;;) {
            if (!have)
                break;
            size_t take = 0;
            char sni[256];
            enum egress_tls_next r = egress_tls_next(&s, held, have, &take, sni, sizeof(sni));
            if (r == EGRESS_TLS_BAD)
                return -1;
            if (r == EGRESS_TLS_NEED_MORE) {
                if (off == len)
                    return -2;
                break;
            }
            if (r == EGRESS_TLS_HELLO) {
                hellos++;
                snprintf(snis + strlen(snis), cap - strlen(snis), "%s%s", hellos > 1 ? "," : "", sni);
            }
            memmove(held, held + take, have - take);
            have -= take;
        }
    }
    return hellos;
}

static size_t app_record(unsigned char *w, unsigned char type, size_t n, unsigned char fill)
{
    w[0] = type;
    w[1] = 3;
    w[2] = 3;
    put16(w + 3, n);
    memset(w + 5, fill, n);
    return n + 5;
}

TEST(tls_stream_one_session)
{
    unsigned char msg[512], wire[40000];
    size_t none[] = {0}, cut[] = {30, 0};
    size_t len = hello_msg(msg, "allowed.test", 12, NULL, 0);
    size_t w = records(wire, msg, len, cut);
    w += app_record(wire + w, 20, 1, 1);
    w += app_record(wire + w, 23, 16384, 0x55);
    w += app_record(wire + w, 22, 40, 0x01); /* an encrypted Finished that starts 01 01 01 01: not a hello */
    w += app_record(wire + w, 21, 2, 0);
    char snis[512];
    for (size_t step = 1; step < 3000; step += step < 20 ? 1 : 997)
        if (tls_walk(wire, w, step, snis, sizeof(snis)) != 1 || strcmp(snis, "allowed.test") != 0)
            FAIL("step %zu: %s", step, snis);
    /* a second hello later in the tunnel (HelloRetryRequest, or a new
     * session) is found and named, whole or split */
    size_t w2 = w + records(wire + w, msg, hello_msg(msg, "other.test", 10, NULL, 0), cut);
    CHECK_EQ_INT(tls_walk(wire, w2, 7, snis, sizeof(snis)), 2);
    CHECK_EQ_STR(snis, "allowed.test,other.test");
    w2 = w + records(wire + w, msg, hello_msg(msg, NULL, 0, NULL, 0), none);
    CHECK_EQ_INT(tls_walk(wire, w2, 100, snis, sizeof(snis)), 2);
    CHECK_EQ_STR(snis, "allowed.test,");
    /* not TLS: the tunnel must start with a hello, records must be records */
    CHECK_EQ_INT(tls_walk((const unsigned char *)"GET / HTTP/1.1\r\n\r\n", 18, 5, snis, sizeof(snis)), -1);
    unsigned char appfirst[64];
    CHECK_EQ_INT(tls_walk(appfirst, app_record(appfirst, 23, 10, 0), 64, snis, sizeof(snis)), -1);
    memcpy(wire + w, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", 36);
    CHECK_EQ_INT(tls_walk(wire, w + 36, 50, snis, sizeof(snis)), -1);
    w2 = w + app_record(wire + w, 24, 3, 0);
    CHECK_EQ_INT(tls_walk(wire, w2, 50, snis, sizeof(snis)), -1);
    wire[w] = 23;
    wire[w + 3] = 0x48; /* 18432 + 1 bytes: too long for a record */
    wire[w + 4] = 0x01;
    CHECK_EQ_INT(tls_walk(wire, w + 5, 50, snis, sizeof(snis)), -1);
    /* a hello that never ends holds the tunnel (its head timeout ends it) */
    w = records(wire, msg, hello_msg(msg, "allowed.test", 12, NULL, 0), none);
    CHECK_EQ_INT(tls_walk(wire, w - 1, 50, snis, sizeof(snis)), -2);
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
