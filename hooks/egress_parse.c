/* The egress proxy's parsers (see egress_parse.h for the ownership rule:
 * out-parameters are written on success only, nothing given is freed). */
#include <arpa/inet.h>
#include <ctype.h>
#include <idn2.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "runtime/util/utils.h"
#include "hooks/egress_parse.h"

/* ---------------------------------------------------------------- hosts */

static bool is_label_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* How many characters of a wildcard prefix ("*." or "**.") h starts with,
 * as flags allow; 0 for none. */
static size_t wildcard_prefix(const char *h, int flags)
{
    if ((flags & EGRESS_HOST_DEEP_WILDCARD) && strncmp(h, "**.", 3) == 0)
        return 3;
    if ((flags & EGRESS_HOST_WILDCARD) && strncmp(h, "*.", 2) == 0)
        return 2;
    return 0;
}

/* Lowercase labels of 1..63 label characters, not starting or ending in
 * '-', dot-separated; with EGRESS_HOST_WILDCARD a leading "*." before
 * them (and "**." with EGRESS_HOST_DEEP_WILDCARD). */
static bool valid_name(const char *h, int flags)
{
    const char *p = h + wildcard_prefix(h, flags);
    size_t label = 0;
    for (; *p; p++) {
        if (*p == '.') {
            if (label == 0 || p[-1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!is_label_char((unsigned char)*p) || ++label > 63 || (label == 1 && *p == '-'))
            return false;
    }
    return label > 0 && p[-1] != '-';
}

/* Every "xn--" label of name is a valid IDNA A-label: it decodes, its
 * U-label is one IDNA2008 (with UTS 46's mapping) allows, and it encodes
 * back to itself (libidn2's round trip). */
static bool valid_a_labels(const char *name)
{
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, ".");
        if (n >= 4 && strncmp(p, "xn--", 4) == 0) {
            char label[64];
            if (n >= sizeof(label))
                return false;
            memcpy(label, p, n);
            label[n] = '\0';
            uint8_t *back = NULL;
            int r = idn2_lookup_u8((const uint8_t *)label, &back, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
            bool same = r == IDN2_OK && back && strcmp((const char *)back, label) == 0;
            idn2_free(back);
            if (!same)
                return false;
        }
        p += n + (p[n] == '.');
    }
    return true;
}

/* A host name as the proxy takes one: valid_name, valid A-labels, and not
 * one of the number forms (127.1, 0x7f000001, 2130706433) that the
 * resolver would take for an address while no allowlist entry spells one
 * that way. */
static bool valid_host_name(const char *name, int flags, const char **why)
{
    if (!valid_name(name, flags))
        return *why = "not a host name", false;
    if (!valid_a_labels(name))
        return *why = "an xn-- label that is not a valid IDNA A-label", false;
    struct in_addr a4;
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_aton(name, &a4) == 1 && inet_pton(AF_INET, name, addr) != 1)
        return *why = "an IPv4 address in a form other than a.b.c.d", false;
    return true;
}

bool egress_is_ip_literal(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Decimal 1..65535, digits only. */
static int parse_port(const char *s, size_t len, int *port)
{
    if (len == 0 || len > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

int egress_parse_host_port(const char *s, int flags, char **host, int *port, const char **why)
{
    const char *h, *port_s = NULL;
    size_t hlen;
    bool bracketed = s[0] == '[';
    if (bracketed) {
        const char *close = strchr(s, ']');
        if (!close)
            return *why = "unclosed [ in host", -1;
        h = s + 1;
        hlen = (size_t)(close - h);
        if (close[1] == ':')
            port_s = close + 2;
        else if (close[1])
            return *why = "junk after ]", -1;
    } else {
        const char *colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            return *why = "IPv6 address without brackets", -1;
        h = s;
        hlen = colon ? (size_t)(colon - s) : strlen(s);
        if (colon)
            port_s = colon + 1;
    }
    int p = 0;
    if (port_s && parse_port(port_s, strlen(port_s), &p) < 0)
        return *why = "bad port", -1;
    if (hlen == 0 || hlen > EGRESS_HOST_MAX + 1)
        return *why = "empty or too long host", -1;
    char name[EGRESS_HOST_MAX + 2];
    for (size_t i = 0; i < hlen; i++)
        name[i] = (char)tolower((unsigned char)h[i]);
    name[hlen] = '\0';
    unsigned char addr[sizeof(struct in6_addr)];
    if (bracketed) {
        if (inet_pton(AF_INET6, name, addr) != 1)
            return *why = "not an IPv6 address in [ ]", -1;
    } else {
        if (hlen > 1 && name[hlen - 1] == '.')
            name[--hlen] = '\0';
        if (hlen > EGRESS_HOST_MAX)
            return *why = "host name too long", -1;
        if (!valid_host_name(name, flags, why))
            return -1;
    }
    *host = xstrdup(name);
    *port = p;
    return 0;
}

/* ---------------------------------------------------------------- addresses */

/* IPv4 special-purpose ranges (RFC 6890 and its successors) a proxy for
 * the open internet never connects to. */
static const struct {
    uint32_t net;
    int prefix;
    const char *why;
} v4_refused[] = {
    {0x00000000, 8, "an address of \"this network\" (0.0.0.0/8)"},
    {0x0a000000, 8, "a private address (10.0.0.0/8)"},
    {0x64400000, 10, "a carrier-grade NAT address (100.64.0.0/10)"},
    {0x7f000000, 8, "a loopback address (127.0.0.0/8)"},
    {0xa9fe0000, 16, "a link-local address (169.254.0.0/16: cloud metadata)"},
    {0xac100000, 12, "a private address (172.16.0.0/12)"},
    {0xc0000000, 24, "an IETF protocol address (192.0.0.0/24)"},
    {0xc0000200, 24, "a documentation address (192.0.2.0/24)"},
    {0xc0586300, 24, "a 6to4 relay address (192.88.99.0/24)"},
    {0xc0a80000, 16, "a private address (192.168.0.0/16)"},
    {0xc6120000, 15, "a benchmarking address (198.18.0.0/15)"},
    {0xc6336400, 24, "a documentation address (198.51.100.0/24)"},
    {0xcb007100, 24, "a documentation address (203.0.113.0/24)"},
    {0xe0000000, 4, "a multicast address (224.0.0.0/4)"},
    {0xf0000000, 4, "a reserved or broadcast address (240.0.0.0/4)"},
};

static const char *v4_refusal(uint32_t a)
{
    for (size_t i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++)
        if ((a ^ v4_refused[i].net) >> (32 - v4_refused[i].prefix) == 0)
            return v4_refused[i].why;
    return NULL;
}

static uint32_t be32_at(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The IPv4 address an IPv6 spelling carries: ::ffff:a.b.c.d (mapped),
 * ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64), 2002:AABB:CCDD::/48
 * (6to4). */
static bool embedded_v4(const unsigned char *a, uint32_t *v4)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char zero[12] = {0};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, zero, 12) == 0 || memcmp(a, nat64, 12) == 0) {
        *v4 = be32_at(a + 12);
        return true;
    }
    if (a[0] == 0x20 && a[1] == 0x02) {
        *v4 = be32_at(a + 2);
        return true;
    }
    return false;
}

const char *egress_address_refusal(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return v4_refusal(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6)
        return "not an IPv4 or IPv6 address";
    const struct in6_addr *in6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    const unsigned char *a = in6->s6_addr;
    if (IN6_IS_ADDR_UNSPECIFIED(in6))
        return "the unspecified IPv6 address (::)";
    if (IN6_IS_ADDR_LOOPBACK(in6))
        return "the loopback IPv6 address (::1)";
    uint32_t v4;
    if (embedded_v4(a, &v4))
        return v4_refusal(v4);
    if ((a[0] & 0xe0) != 0x20) {
        if (a[0] == 0xfc || a[0] == 0xfd)
            return "a unique-local IPv6 address (fc00::/7)";
        if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
            return "a link-local IPv6 address (fe80::/10)";
        if (a[0] == 0xff)
            return "a multicast IPv6 address (ff00::/8)";
        return "not a global unicast IPv6 address (2000::/3)";
    }
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)
        return "a documentation IPv6 address (2001:db8::/32)";
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] < 0x02)
        return "an IETF protocol IPv6 address (2001::/23: Teredo, ORCHID ...)";
    return NULL;
}

void egress_cidrs_free(struct egress_cidrs *c)
{
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

/* "addr[/prefix]" into *out; NULL, or why not. */
static const char *parse_cidr(const char *s, struct egress_cidr *out)
{
    char addr[INET6_ADDRSTRLEN + 1];
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    if (alen == 0 || alen >= sizeof(addr))
        return "not an address";
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    struct egress_cidr c = {0};
    if (inet_pton(AF_INET, addr, c.addr) == 1)
        c.family = AF_INET;
    else if (inet_pton(AF_INET6, addr, c.addr) == 1)
        c.family = AF_INET6;
    else
        return "not an address";
    int max = c.family == AF_INET ? 32 : 128;
    c.prefix = max;
    if (slash) {
        const char *d = slash + 1;
        size_t n = strlen(d);
        if (n == 0 || n > 3 || strspn(d, "0123456789") != n || (n > 1 && d[0] == '0'))
            return "bad prefix length";
        c.prefix = atoi(d);
        if (c.prefix > max)
            return "prefix length too long";
    }
    for (int bit = c.prefix; bit < max; bit++)
        if (c.addr[bit / 8] & (0x80 >> (bit % 8)))
            return "host bits set below the prefix";
    *out = c;
    return NULL;
}

int egress_cidrs_parse(const char *list, const char *name, struct egress_cidrs *out, ac_error_t *err)
{
    struct egress_cidrs parsed = {0};
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        struct egress_cidr c;
        const char *why = parsed.n == EGRESS_CIDRS_MAX ? "too many entries" : parse_cidr(tok, &c);
        if (why) {
            egress_cidrs_free(&parsed);
            return ac_error(err, 0, "%s: bad entry `%s` (%s; expected a.b.c.d/N or v6::/N)", name, tok, why);
        }
        parsed.v = xrealloc(parsed.v, (parsed.n + 1) * sizeof(*parsed.v));
        parsed.v[parsed.n++] = c;
    }
    *out = parsed;
    return 0;
}

bool egress_cidrs_contain(const struct egress_cidrs *c, const struct sockaddr *sa)
{
    unsigned char a[16];
    int family = sa->sa_family;
    if (family == AF_INET) {
        memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (family == AF_INET6) {
        memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)a)) {
            memmove(a, a + 12, 4);
            family = AF_INET;
        }
    } else {
        return false;
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct egress_cidr *r = &c->v[i];
        if (r->family != family)
            continue;
        int bits = r->prefix, full = bits / 8;
        if (memcmp(a, r->addr, (size_t)full) != 0)
            continue;
        if (bits % 8 && ((a[full] ^ r->addr[full]) & (0xff00 >> (bits % 8))) != 0)
            continue;
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------- allowlist */

void egress_allowlist_free(struct egress_allowlist *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->rules[i].host);
    free(list->rules);
    list->rules = NULL;
    list->n = 0;
}

/* An entry written with U-labels (bytes above 0x7f) as A-labels, malloc'd;
 * NULL when it is not a name libidn2 can map (IDNA2008, UTS 46). A
 * wildcard prefix and a port stay as they are. */
static char *entry_to_a_labels(const char *entry)
{
    size_t pre = wildcard_prefix(entry, EGRESS_HOST_WILDCARD | EGRESS_HOST_DEEP_WILDCARD);
    const char *name = entry + pre, *colon = strrchr(name, ':');
    cleanup_free char *u = colon ? strndup(name, (size_t)(colon - name)) : xstrdup(name);
    uint8_t *a = NULL;
    if (idn2_lookup_u8((const uint8_t *)u, &a, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL) != IDN2_OK) {
        idn2_free(a);
        return NULL;
    }
    char *out = xasprintf("%.*s%s%s", (int)pre, entry, (const char *)a, colon ? colon : "");
    idn2_free(a);
    return out;
}

static bool has_high_bytes(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return true;
    return false;
}

int egress_allowlist_parse(const char *list, int flags, struct egress_allowlist *out, ac_error_t *err)
{
    struct egress_allowlist parsed = {0};
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    flags = EGRESS_HOST_WILDCARD | (flags & EGRESS_HOST_DEEP_WILDCARD);
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (!*tok)
            continue;
        struct egress_rule r = {0};
        const char *why;
        if (parsed.n == EGRESS_ALLOWLIST_MAX) {
            egress_allowlist_free(&parsed);
            return ac_error(err, 0, "io.agentcage.egress: more than %d entries", EGRESS_ALLOWLIST_MAX);
        }
        if (!(flags & EGRESS_HOST_DEEP_WILDCARD) && strncmp(tok, "**.", 3) == 0) {
            ac_error(err, 0, "io.agentcage.egress: entry `%s`: `**.` wildcards (any depth) are not allowed here "
                             "(the operator's egress.deep-wildcards)",
                     tok);
            egress_allowlist_free(&parsed);
            return -1;
        }
        cleanup_free char *ascii = has_high_bytes(tok) ? entry_to_a_labels(tok) : NULL;
        if ((has_high_bytes(tok) && !ascii) ||
            egress_parse_host_port(ascii ? ascii : tok, flags, &r.host, &r.port, &why) < 0) {
            ac_error(err, 0, "io.agentcage.egress: bad entry `%s` (expected host[:port] or *.suffix[:port])", tok);
            egress_allowlist_free(&parsed);
            return -1;
        }
        size_t pre = wildcard_prefix(r.host, flags);
        if (pre) {
            r.depth = pre == 3 ? -1 : 1;
            memmove(r.host, r.host + pre - 1, strlen(r.host + pre - 1) + 1); /* keep the dot */
        }
        parsed.rules = xrealloc(parsed.rules, (parsed.n + 1) * sizeof(*parsed.rules));
        parsed.rules[parsed.n++] = r;
    }
    *out = parsed;
    return 0;
}

void egress_allowlist_add(struct egress_allowlist *list, const char *host, int port)
{
    list->rules = xrealloc(list->rules, (list->n + 1) * sizeof(*list->rules));
    list->rules[list->n++] = (struct egress_rule){.host = xstrdup(host), .port = port};
}

/* Does host fall under rule r's name: equal, or under its suffix by one
 * label (depth 1) or any number (-1)? */
static bool rule_names(const struct egress_rule *r, const char *host, size_t hl, bool literal)
{
    if (r->depth == 0)
        return strcmp(host, r->host) == 0;
    size_t sl = strlen(r->host);
    if (literal || hl <= sl || strcmp(host + hl - sl, r->host) != 0)
        return false;
    return r->depth < 0 || memchr(host, '.', hl - sl) == NULL;
}

const char *egress_allowlist_check(const struct egress_allowlist *list, const char *host, int port)
{
    bool literal = egress_is_ip_literal(host);
    bool name_listed = false, deeper = false;
    size_t hl = strlen(host);
    for (size_t i = 0; i < list->n; i++) {
        const struct egress_rule *r = &list->rules[i];
        if (!rule_names(r, host, hl, literal)) {
            struct egress_rule any = *r;
            any.depth = -1;
            deeper |= r->depth == 1 && rule_names(&any, host, hl, literal);
            continue;
        }
        name_listed = true;
        if (r->port ? r->port == port : (port == 80 || port == 443))
            return NULL;
    }
    if (name_listed)
        return "port not allowed for this host";
    if (deeper)
        return "more than one label under a *. wildcard";
    return literal ? "IP literal not in allowlist" : "host not in allowlist";
}

/* ---------------------------------------------------------------- the request head */

static bool is_tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

long egress_head_end(const char *buf, size_t len)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    size_t scanned = end ? (size_t)(end - buf) + 4 : len;
    if (memchr(buf, '\0', scanned))
        return -1;
    return end ? (long)scanned : 0;
}

/* The token at *p up to stop (which it replaces by NUL); its length must
 * be 1..max. */
static char *take_token(char **p, char stop, size_t max, bool (*ok)(unsigned char))
{
    char *start = *p, *q = start;
    while (*q != stop) {
        if (!ok((unsigned char)*q))
            return NULL;
        q++;
    }
    if (q == start || (size_t)(q - start) > max)
        return NULL;
    *q = '\0';
    *p = q + 1;
    return start;
}

static bool is_visible(unsigned char c) { return c > 0x20 && c < 0x7f; }

int egress_request_parse(char *buf, size_t head_len, struct egress_request *req, const char **why)
{
    if (head_len < 4 || memcmp(buf + head_len - 4, "\r\n\r\n", 4) != 0)
        return *why = "incomplete request head", -1;
    char *line_end = memmem(buf, head_len, "\r\n", 2);
    /* the request line: METHOD SP TARGET SP HTTP/1.x, then CR LF */
    *line_end = ' ';
    char *p = buf;
    char *method = take_token(&p, ' ', 32, is_tchar);
    char *target = method ? take_token(&p, ' ', 8192, is_visible) : NULL;
    char *version = target ? take_token(&p, ' ', 8, is_visible) : NULL;
    if (!version || p != line_end + 1 || (strcmp(version, "HTTP/1.0") != 0 && strcmp(version, "HTTP/1.1") != 0))
        return *why = "malformed request line", -1;
    /* the header lines, up to the empty line that ends the head */
    char *headers = line_end + 2, *end = buf + head_len - 2;
    size_t n = 0;
    for (char *h = headers; h < end; n++) {
        char *eol = memmem(h, (size_t)(end - h), "\r\n", 2);
        if (n == EGRESS_HEADERS_MAX)
            return *why = "too many header lines", -1;
        char *colon = h;
        while (colon < eol && is_tchar((unsigned char)*colon))
            colon++;
        if (colon == h || *colon != ':')
            return *why = "malformed header line", -1;
        for (char *v = colon + 1; v < eol; v++)
            if ((unsigned char)*v < 0x20 ? *v != '\t' : *v == 0x7f)
                return *why = "control byte in a header value", -1;
        h = eol + 2;
    }
    *end = '\0';
    req->method = method;
    req->target = target;
    req->version = version;
    req->headers = headers;
    req->head_len = head_len;
    return 0;
}

int egress_parse_http_url(const char *target, char **host, int *port, char **path, const char **why)
{
    if (strncasecmp(target, "http://", 7) != 0)
        return *why = strncasecmp(target, "https://", 8) == 0 ? "https:// URL without CONNECT"
                                                              : "not an absolute http:// URL (a proxy request)",
               -1;
    const char *authority = target + 7;
    size_t alen = strcspn(authority, "/?#");
    if (memchr(authority, '@', alen))
        return *why = "userinfo in the URL", -1;
    if (alen > EGRESS_HOST_MAX + 8)
        return *why = "malformed URL authority", -1;
    char auth[EGRESS_HOST_MAX + 9];
    memcpy(auth, authority, alen);
    auth[alen] = '\0';
    char *h;
    int p;
    const char *host_why;
    if (egress_parse_host_port(auth, 0, &h, &p, &host_why) < 0)
        return *why = "malformed URL authority", -1;
    const char *rest = authority + alen;
    size_t plen = strcspn(rest, "#");
    if (*rest == '/')
        *path = xasprintf("%.*s", (int)plen, rest);
    else if (*rest == '?')
        *path = xasprintf("/%.*s", (int)plen, rest);
    else
        *path = xstrdup("/");
    *host = h;
    *port = p ? p : 80;
    return 0;
}

static bool header_named(const char *line, const char *name)
{
    size_t n = strlen(name);
    return strncasecmp(line, name, n) == 0 && line[n] == ':';
}

/* The value of a header line (line points at its name, the line ends in
 * CRLF) without the blanks around it, into out (cap bytes); false when it
 * does not fit. */
static bool header_value(const char *line, char *out, size_t cap)
{
    const char *v = strchr(line, ':') + 1, *eol = strstr(line, "\r\n");
    while (v < eol && (*v == ' ' || *v == '\t'))
        v++;
    while (eol > v && (eol[-1] == ' ' || eol[-1] == '\t'))
        eol--;
    if ((size_t)(eol - v) >= cap)
        return false;
    memcpy(out, v, (size_t)(eol - v));
    out[eol - v] = '\0';
    return true;
}

/* How many header lines are named name; the last one's line in *found. */
static int count_headers(const char *headers, const char *name, const char **found)
{
    int n = 0;
    for (const char *line = headers; *line; line = strstr(line, "\r\n") + 2)
        if (header_named(line, name)) {
            *found = line;
            n++;
        }
    return n;
}

/* Does the comma-separated list value hold token (any case)? */
static bool list_has_token(const char *value, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = value; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = strcspn(p, ", \t");
        if (n == tl && strncasecmp(p, token, n) == 0)
            return true;
        p += n;
    }
    return false;
}

int egress_request_host(const struct egress_request *req, char **host, int *port, const char **why)
{
    const char *line = NULL;
    int n = count_headers(req->headers, "Host", &line);
    if (n == 0) {
        *host = NULL;
        *port = 0;
        return 0;
    }
    char value[EGRESS_HOST_MAX + 16];
    const char *host_why;
    if (n > 1)
        return *why = "more than one Host header", -1;
    if (!header_value(line, value, sizeof(value)) || egress_parse_host_port(value, 0, host, port, &host_why) < 0)
        return *why = "a Host header that is not host[:port]", -1;
    return 0;
}

/* 1..18 decimal digits. */
static bool parse_length(const char *s, unsigned long long *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
        return false;
    *out = strtoull(s, NULL, 10);
    return true;
}

int egress_request_framing(const struct egress_request *req, struct egress_framing *f, const char **why)
{
    const char *cl_line = NULL, *te_line = NULL, *conn_line = NULL;
    int n_cl = count_headers(req->headers, "Content-Length", &cl_line);
    int n_te = count_headers(req->headers, "Transfer-Encoding", &te_line);
    int n_conn = count_headers(req->headers, "Connection", &conn_line);
    bool v10 = strcmp(req->version, "HTTP/1.0") == 0;
    struct egress_framing r = {.kind = EGRESS_BODY_NONE, .close = v10};
    char value[64];
    if (n_cl && n_te)
        return *why = "both Content-Length and Transfer-Encoding (request smuggling)", -1;
    if (n_cl > 1 || n_te > 1)
        return *why = n_cl > 1 ? "more than one Content-Length" : "more than one Transfer-Encoding", -1;
    if (n_te) {
        if (v10)
            return *why = "Transfer-Encoding in an HTTP/1.0 request", -1;
        if (!header_value(te_line, value, sizeof(value)) || strcasecmp(value, "chunked") != 0)
            return *why = "a Transfer-Encoding other than chunked", -1;
        r.kind = EGRESS_BODY_CHUNKED;
    } else if (n_cl) {
        if (!header_value(cl_line, value, sizeof(value)) || !parse_length(value, &r.length))
            return *why = "a Content-Length that is not a decimal number", -1;
        r.kind = r.length ? EGRESS_BODY_LENGTH : EGRESS_BODY_NONE;
    }
    for (const char *line = req->headers; n_conn && *line; line = strstr(line, "\r\n") + 2) {
        char conn[256];
        if (header_named(line, "Connection") && header_value(line, conn, sizeof(conn)) &&
            list_has_token(conn, "close"))
            r.close = true;
    }
    *f = r;
    return 0;
}

/* ---------------------------------------------------------------- bodies */

enum {
    CH_SIZE,      /* hex digits of a chunk size */
    CH_EXT,       /* after ';': an extension up to the line's end */
    CH_SIZE_LF,   /* CR seen after the size line */
    CH_DATA,      /* chunk data */
    CH_DATA_CR,   /* the CR after the data */
    CH_DATA_LF,
    CH_TRAILER,   /* at the start of a trailer line (or the final empty one) */
    CH_TRAILER_LINE,
    CH_TRAILER_LF,
    CH_END_LF,    /* the CR of the final empty line seen */
    CH_DONE,
    CH_BAD,
};

#define CHUNK_TRAILERS_MAX 16384

void egress_chunked_init(struct egress_chunked *c, bool strict)
{
    *c = (struct egress_chunked){.state = CH_SIZE, .strict = strict};
}

bool egress_chunked_done(const struct egress_chunked *c) { return c->state == CH_DONE; }

static int hex_digit(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = (unsigned char)tolower(ch);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* a byte of an extension or a trailer line: no control bytes but tab */
static bool line_byte_ok(unsigned char ch) { return ch == '\t' || (ch >= 0x20 && ch != 0x7f); }

long egress_chunked_feed(struct egress_chunked *c, const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && c->state != CH_DONE && c->state != CH_BAD) {
        unsigned char ch = (unsigned char)buf[i];
        switch (c->state) {
        case CH_SIZE:
            if (hex_digit(ch) >= 0 && c->digits < 15) {
                c->left = c->left * 16 + (unsigned)hex_digit(ch);
                c->digits++;
            } else if (c->digits && ch == ';') {
                c->state = CH_EXT;
                c->line = 0;
            } else if (c->digits && ch == '\r') {
                c->state = CH_SIZE_LF;
            } else if (c->digits && ch == '\n' && !c->strict) {
                c->state = c->left ? CH_DATA : CH_TRAILER;
            } else {
                c->state = CH_BAD;
            }
            i++;
            break;
        case CH_EXT:
            if (ch == '\r')
                c->state = CH_SIZE_LF;
            else if (ch == '\n' && !c->strict)
                c->state = c->left ? CH_DATA : CH_TRAILER;
            else if ((c->strict && !line_byte_ok(ch)) || ++c->line > 4096)
                c->state = CH_BAD;
            i++;
            break;
        case CH_SIZE_LF:
            c->state = ch != '\n' ? CH_BAD : c->left ? CH_DATA : CH_TRAILER;
            c->line = 0;
            i++;
            break;
        case CH_DATA: {
            size_t take = len - i < c->left ? len - i : (size_t)c->left;
            c->left -= take;
            i += take;
            if (c->left == 0)
                c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            c->state = ch == '\r' ? CH_DATA_LF : ch == '\n' && !c->strict ? CH_SIZE : CH_BAD;
            c->digits = 0;
            i++;
            break;
        case CH_DATA_LF:
            c->state = ch == '\n' ? CH_SIZE : CH_BAD;
            c->digits = 0;
            c->left = 0;
            i++;
            break;
        case CH_TRAILER:
            if (ch == '\r')
                c->state = CH_END_LF;
            else if (ch == '\n' && !c->strict)
                c->state = CH_DONE;
            else if (c->strict ? is_tchar(ch) : line_byte_ok(ch))
                c->state = CH_TRAILER_LINE;
            else
                c->state = CH_BAD;
            c->line++;
            i++;
            break;
        case CH_TRAILER_LINE:
            if (ch == '\r')
                c->state = CH_TRAILER_LF;
            else if (ch == '\n' && !c->strict)
                c->state = CH_TRAILER;
            else if (c->strict && !line_byte_ok(ch))
                c->state = CH_BAD;
            if (++c->line > CHUNK_TRAILERS_MAX)
                c->state = CH_BAD;
            i++;
            break;
        case CH_TRAILER_LF:
            c->state = ch == '\n' ? CH_TRAILER : CH_BAD;
            i++;
            break;
        case CH_END_LF:
            c->state = ch == '\n' ? CH_DONE : CH_BAD;
            i++;
            break;
        }
    }
    return c->state == CH_BAD ? -1 : (long)i;
}

/* ---------------------------------------------------------------- the response head */

long egress_response_head_end(const char *buf, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] != '\n')
            continue;
        if (buf[i + 1] == '\n')
            return (long)(i + 2);
        if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
            return (long)(i + 3);
    }
    return 0;
}

/* The next line of [*p, end) without its LF or CRLF; false at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *n)
{
    if (*p >= end)
        return false;
    const char *lf = memchr(*p, '\n', (size_t)(end - *p));
    if (!lf)
        return false;
    *line = *p;
    *n = (size_t)(lf - *p) - (lf > *p && lf[-1] == '\r');
    *p = lf + 1;
    return true;
}

/* A response header "Name: value" named name: its value, blanks trimmed, in
 * out; false when it is another header or too long. */
static bool response_header(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return false;
    const char *v = line + nl + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if ((size_t)(e - v) >= cap)
        return false;
    memcpy(out, v, (size_t)(e - v));
    out[e - v] = '\0';
    return true;
}

int egress_response_parse(const char *buf, size_t head_len, const char *method, struct egress_response *r,
                          const char **why)
{
    const char *p = buf, *end = buf + head_len, *line;
    size_t n;
    if (!next_line(&p, end, &line, &n) || n < 12 || strncmp(line, "HTTP/1.", 7) != 0 ||
        (line[7] != '0' && line[7] != '1') || line[8] != ' ' || !isdigit((unsigned char)line[9]) ||
        !isdigit((unsigned char)line[10]) || !isdigit((unsigned char)line[11]) || (n > 12 && line[12] != ' '))
        return *why = "malformed status line", -1;
    struct egress_response out = {.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0')};
    bool v10 = line[7] == '0', keep_alive = false, conn_close = false, chunked = false, have_te = false,
         have_cl = false;
    unsigned long long length = 0;
    char value[256];
    while (next_line(&p, end, &line, &n) && n > 0) {
        if (response_header(line, n, "Transfer-Encoding", value, sizeof(value))) {
            have_te = true;
            /* the last coding decides: chunked at the end, or read to close */
            const char *last = strrchr(value, ',');
            last = last ? last + 1 : value;
            while (*last == ' ' || *last == '\t')
                last++;
            chunked = strcasecmp(last, "chunked") == 0;
        } else if (response_header(line, n, "Content-Length", value, sizeof(value))) {
            unsigned long long l;
            if (!parse_length(value, &l) || (have_cl && l != length))
                return *why = "a bad or second Content-Length", -1;
            have_cl = true;
            length = l;
        } else if (response_header(line, n, "Connection", value, sizeof(value))) {
            conn_close |= list_has_token(value, "close");
            keep_alive |= list_has_token(value, "keep-alive");
        }
    }
    out.framing.close = conn_close || (v10 && !keep_alive);
    if (strcmp(method, "HEAD") == 0 || out.status / 100 == 1 || out.status == 204 || out.status == 304) {
        out.framing.kind = EGRESS_BODY_NONE;
    } else if (have_te) {
        out.framing.kind = chunked ? EGRESS_BODY_CHUNKED : EGRESS_BODY_CLOSE;
    } else if (have_cl) {
        out.framing.kind = length ? EGRESS_BODY_LENGTH : EGRESS_BODY_NONE;
        out.framing.length = length;
    } else {
        out.framing.kind = EGRESS_BODY_CLOSE;
    }
    if (out.framing.kind == EGRESS_BODY_CLOSE)
        out.framing.close = true;
    *r = out;
    return 0;
}

char *egress_request_rebuild(const struct egress_request *req, const char *host, int port, const char *path,
                             bool close, size_t *len)
{
    static const char *const dropped[] = {"Host", "Connection", "Proxy-Connection", "Keep-Alive",
                                          "Proxy-Authorization", "TE", "Upgrade"};
    bool v6 = strchr(host, ':') != NULL;
    char port_s[8] = "";
    if (port != 80)
        snprintf(port_s, sizeof(port_s), ":%d", port);
    size_t cap = strlen(req->method) + strlen(path) + strlen(req->version) + strlen(host) + strlen(req->headers) + 64;
    char *out = xmalloc(cap);
    size_t n = (size_t)snprintf(out, cap, "%s %s %s\r\nHost: %s%s%s%s\r\n", req->method, path, req->version,
                                v6 ? "[" : "", host, v6 ? "]" : "", port_s);
    for (const char *line = req->headers; *line;) {
        const char *eol = strstr(line, "\r\n");
        size_t l = (size_t)(eol - line) + 2;
        bool drop = false;
        for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
            drop |= header_named(line, dropped[i]);
        if (!drop) {
            memcpy(out + n, line, l);
            n += l;
        }
        line += l;
    }
    if (close) {
        memcpy(out + n, "Connection: close\r\n", 19);
        n += 19;
    }
    memcpy(out + n, "\r\n", 3);
    n += 2;
    *len = n;
    return out;
}

/* ---------------------------------------------------------------- TLS */

/* A ClientHello body (after its 4-byte header), exactly len bytes long. */
static enum egress_hello parse_client_hello(const unsigned char *p, size_t len, char *sni, size_t sni_cap)
{
    const unsigned char *end = p + len;
#define NEED(n)                                                                                                   \
    do {                                                                                                          \
        if ((size_t)(end - p) < (size_t)(n))                                                                      \
            return EGRESS_HELLO_BAD;                                                                              \
    } while (0)
    NEED(2 + 32 + 1);
    if (p[0] != 3)
        return EGRESS_HELLO_BAD;
    p += 2 + 32;
    size_t l = *p++; /* session id */
    if (l > 32)
        return EGRESS_HELLO_BAD;
    NEED(l + 2);
    p += l;
    l = (size_t)p[0] << 8 | p[1]; /* cipher suites */
    p += 2;
    if (l < 2 || l % 2)
        return EGRESS_HELLO_BAD;
    NEED(l + 1);
    p += l;
    l = *p++; /* compression methods */
    if (l < 1)
        return EGRESS_HELLO_BAD;
    NEED(l);
    p += l;
    if (p == end)
        return EGRESS_HELLO_NO_SNI;
    NEED(2);
    l = (size_t)p[0] << 8 | p[1];
    p += 2;
    if ((size_t)(end - p) != l)
        return EGRESS_HELLO_BAD; /* the extensions end where the message ends */
    char name[256];
    bool have_sni = false;
    while (p < end) {
        NEED(4);
        unsigned type = (unsigned)p[0] << 8 | p[1];
        size_t elen = (size_t)p[2] << 8 | p[3];
        p += 4;
        NEED(elen);
        const unsigned char *q = p, *qend = p + elen;
        p += elen;
        if (type != 0)
            continue;
        /* server_name: a list (length, then (type, length, name)...) with
         * exactly one host_name, and the extension only once */
        if (have_sni || elen < 2 || ((size_t)q[0] << 8 | q[1]) != elen - 2)
            return EGRESS_HELLO_BAD;
        q += 2;
        while (q < qend) {
            if ((size_t)(qend - q) < 3 || q[0] != 0 || have_sni)
                return EGRESS_HELLO_BAD;
            size_t nlen = (size_t)q[1] << 8 | q[2];
            q += 3;
            if (nlen == 0 || nlen >= sizeof(name) || (size_t)(qend - q) < nlen)
                return EGRESS_HELLO_BAD;
            for (size_t i = 0; i < nlen; i++)
                name[i] = (char)tolower(q[i]);
            name[nlen] = '\0';
            const char *why;
            if (strlen(name) != nlen || nlen > EGRESS_HOST_MAX || name[nlen - 1] == '.' ||
                !valid_host_name(name, 0, &why))
                return EGRESS_HELLO_BAD;
            q += nlen;
            have_sni = true;
        }
        if (!have_sni)
            return EGRESS_HELLO_BAD;
    }
#undef NEED
    if (!have_sni)
        return EGRESS_HELLO_NO_SNI;
    if (strlen(name) >= sni_cap)
        return EGRESS_HELLO_BAD;
    strcpy(sni, name);
    return EGRESS_HELLO_SNI;
}

/* egress_client_hello, with the bytes the hello's records take in *used. */
static enum egress_hello client_hello_records(const unsigned char *buf, size_t len, char *sni, size_t sni_cap,
                                              size_t *used)
{
    /* the handshake message, gathered from the records' fragments */
    unsigned char *msg = xmalloc(4 + EGRESS_HELLO_MAX);
    size_t have = 0, need = 0, off = 0;
    enum egress_hello result = EGRESS_HELLO_NEED_MORE;
    for (int records = 0; result == EGRESS_HELLO_NEED_MORE; records++) {
        size_t left = len - off;
        /* what can be judged of a record header before it is whole */
        if ((left >= 1 && buf[off] != 0x16) || (left >= 2 && buf[off + 1] != 3) ||
            records == EGRESS_HELLO_RECORDS_MAX) {
            result = EGRESS_HELLO_BAD;
            break;
        }
        if (left < 5)
            break;
        size_t rlen = (size_t)buf[off + 3] << 8 | buf[off + 4];
        if (rlen == 0 || rlen > 16384 || have + rlen > 4 + EGRESS_HELLO_MAX) {
            result = EGRESS_HELLO_BAD;
            break;
        }
        if (left - 5 < rlen)
            break;
        memcpy(msg + have, buf + off + 5, rlen);
        have += rlen;
        off += 5 + rlen;
        if (need == 0 && have >= 4) {
            size_t hl = (size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3];
            if (msg[0] != 1 || hl > EGRESS_HELLO_MAX) {
                result = EGRESS_HELLO_BAD;
                break;
            }
            need = 4 + hl;
        }
        if (need && have > need)
            result = EGRESS_HELLO_BAD; /* more handshake data in the record the hello ends in */
        else if (need && have == need)
            result = parse_client_hello(msg + 4, need - 4, sni, sni_cap);
    }
    free(msg);
    *used = off;
    return result;
}

enum egress_hello egress_client_hello(const unsigned char *buf, size_t len, char *sni, size_t sni_cap)
{
    size_t used;
    return client_hello_records(buf, len, sni, sni_cap, &used);
}

#define TLS_RECORD_MAX (16384 + 2048)

/* Could a handshake record's body start a ClientHello: type 1, a length a
 * hello may have, legacy_version 3.x? Only its first 6 bytes are looked at
 * (fewer: "maybe"). */
static bool may_start_hello(const unsigned char *body, size_t have)
{
    if (have >= 1 && body[0] != 1)
        return false;
    if (have >= 4 && ((size_t)body[1] << 16 | (size_t)body[2] << 8 | body[3]) > EGRESS_HELLO_MAX)
        return false;
    return have < 5 || body[4] == 3;
}

enum egress_tls_next egress_tls_next(struct egress_tls_stream *s, const unsigned char *buf, size_t len, size_t *take,
                                     char *sni, size_t sni_cap)
{
    if (s->body_left) {
        /* inside a record that is not a hello: pass what is there of it */
        *take = len < s->body_left ? len : s->body_left;
        s->body_left -= *take;
        return EGRESS_TLS_PASS;
    }
    if (len < 5)
        return (buf[0] >= 20 && buf[0] <= 23 && (len < 2 || buf[1] == 3)) ? EGRESS_TLS_NEED_MORE : EGRESS_TLS_BAD;
    size_t rlen = (size_t)buf[3] << 8 | buf[4];
    if (buf[0] < 20 || buf[0] > 23 || buf[1] != 3 || rlen == 0 || rlen > TLS_RECORD_MAX)
        return EGRESS_TLS_BAD;
    bool first = s->records == 0;
    if (first && buf[0] != 22)
        return EGRESS_TLS_BAD; /* a tunnel starts with a ClientHello */
    if (buf[0] == 22 && (first || may_start_hello(buf + 5, len - 5))) {
        /* a hello (or what starts like one) is judged whole */
        size_t used = 0;
        enum egress_hello h = client_hello_records(buf, len, sni, sni_cap, &used);
        if (h == EGRESS_HELLO_NEED_MORE)
            return len >= EGRESS_HELLO_WIRE_MAX ? EGRESS_TLS_BAD : EGRESS_TLS_NEED_MORE;
        if (h == EGRESS_HELLO_SNI || h == EGRESS_HELLO_NO_SNI) {
            if (h == EGRESS_HELLO_NO_SNI)
                sni[0] = '\0';
            s->records++;
            *take = used;
            return EGRESS_TLS_HELLO;
        }
        if (first || rlen < 6)
            return EGRESS_TLS_BAD;
        /* a later handshake record whose start only looked like a hello
         * (an encrypted TLS 1.2 Finished): passed as any record */
    }
    s->records++;
    s->body_left = rlen;
    *take = 5;
    return EGRESS_TLS_PASS;
}

/* ---------------------------------------------------------------- audit records */

struct record_key {
    const char *name; /* '=': a number */
    bool required;
};

static const struct {
    const char *event;
    struct record_key keys[EGRESS_RECORD_PAIRS];
} record_schemas[] = {
    {"egress-allow",
     {{"method", true}, {"host", true}, {"=port", true}, {"address", true}, {"path", false}, {"via", false}}},
    {"egress-ask", {{"method", true}, {"host", true}, {"=port", true}, {"=ask", true}}},
    {"egress-deny", {{"method", false}, {"host", false}, {"=port", false}, {"reason", true}, {"=cap", false}}},
    {"egress-busy", {{"=connections", true}}},
};

size_t egress_record_encode(char *buf, size_t cap, const char *event, const char *const *kv)
{
    size_t n = 0;
    const char *item;
    for (size_t i = 0; (item = i == 0 ? event : kv[i - 1]) != NULL; i++) {
        size_t l = strnlen(item, EGRESS_RECORD_VALUE_MAX);
        if (n + l + 1 > cap)
            return 0;
        memcpy(buf + n, item, l);
        n += l;
        buf[n++] = '\0';
    }
    return n;
}

static bool decimal(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 19 || (s[0] == '0' && n > 1))
        return false;
    return strspn(s, "0123456789") == n;
}

int egress_record_parse(const char *msg, size_t len, struct egress_record *rec, const char **why)
{
    if (len == 0 || len > EGRESS_RECORD_MAX || msg[len - 1] != '\0')
        return *why = "not NUL-terminated strings", -1;
    const char *items[1 + 2 * EGRESS_RECORD_PAIRS];
    size_t n = 0;
    for (const char *p = msg; p < msg + len; p += strlen(p) + 1) {
        if (n == sizeof(items) / sizeof(items[0]))
            return *why = "too many members", -1;
        items[n++] = p;
    }
    if (n % 2 == 0)
        return *why = "a key without a value", -1;
    size_t schema = sizeof(record_schemas) / sizeof(record_schemas[0]);
    for (size_t i = 0; i < sizeof(record_schemas) / sizeof(record_schemas[0]); i++)
        if (strcmp(items[0], record_schemas[i].event) == 0)
            schema = i;
    if (schema == sizeof(record_schemas) / sizeof(record_schemas[0]))
        return *why = "unknown event", -1;
    const struct record_key *keys = record_schemas[schema].keys;
    bool seen[EGRESS_RECORD_PAIRS] = {false};
    struct egress_record r = {.event = items[0], .n = (n - 1) / 2};
    for (size_t i = 0; i < r.n; i++) {
        const char *key = items[1 + 2 * i], *value = items[2 + 2 * i];
        size_t k = 0;
        while (k < EGRESS_RECORD_PAIRS && keys[k].name && strcmp(keys[k].name, key) != 0)
            k++;
        if (k == EGRESS_RECORD_PAIRS || !keys[k].name)
            return *why = "a key this event does not have", -1;
        if (seen[k])
            return *why = "a key twice", -1;
        seen[k] = true;
        if (key[0] == '=' ? !decimal(value) : strlen(value) > EGRESS_RECORD_VALUE_MAX)
            return *why = key[0] == '=' ? "a number that is not decimal" : "a value too long", -1;
        r.key[i] = key;
        r.value[i] = value;
    }
    for (size_t k = 0; k < EGRESS_RECORD_PAIRS && keys[k].name; k++)
        if (keys[k].required && !seen[k])
            return *why = "a required key missing", -1;
    *rec = r;
    return 0;
}
