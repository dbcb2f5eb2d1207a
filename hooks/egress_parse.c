/* The egress proxy's parsers (see egress_parse.h for the ownership rule:
 * out-parameters are written on success only, nothing given is freed). */
#include <arpa/inet.h>
#include <ctype.h>
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

/* Lowercase labels of 1..63 label characters, not starting or ending in
 * '-', dot-separated; with EGRESS_HOST_WILDCARD a leading "*." before
 * them. */
static bool valid_name(const char *h, int flags)
{
    const char *p = h;
    if ((flags & EGRESS_HOST_WILDCARD) && p[0] == '*' && p[1] == '.')
        p += 2;
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

/* A host name as the proxy takes one: valid_name, and not one of the
 * number forms (127.1, 0x7f000001, 2130706433) that the resolver would
 * take for an address while no allowlist entry spells one that way. */
static bool valid_host_name(const char *name, int flags, const char **why)
{
    if (!valid_name(name, flags))
        return *why = "not a host name", false;
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

bool egress_forbidden_address(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127 || (a >> 24) == 0 || (a >> 16) == 0xa9fe;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
            struct sockaddr_in v4 = {.sin_family = AF_INET};
            memcpy(&v4.sin_addr, &a->s6_addr[12], 4);
            return egress_forbidden_address((const struct sockaddr *)&v4);
        }
        return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LINKLOCAL(a);
    }
    return true;
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

int egress_allowlist_parse(const char *list, struct egress_allowlist *out, ac_error_t *err)
{
    struct egress_allowlist parsed = {0};
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
        struct egress_rule r = {0};
        const char *why;
        if (parsed.n == EGRESS_ALLOWLIST_MAX) {
            egress_allowlist_free(&parsed);
            return ac_error(err, 0, "io.agentcage.egress: more than %d entries", EGRESS_ALLOWLIST_MAX);
        }
        if (egress_parse_host_port(tok, EGRESS_HOST_WILDCARD, &r.host, &r.port, &why) < 0) {
            egress_allowlist_free(&parsed);
            return ac_error(err, 0, "io.agentcage.egress: bad entry `%s` (expected host[:port] or *.suffix[:port])",
                            tok);
        }
        if (r.host[0] == '*') {
            r.wildcard = true;
            memmove(r.host, r.host + 1, strlen(r.host)); /* keep the dot */
        }
        parsed.rules = xrealloc(parsed.rules, (parsed.n + 1) * sizeof(*parsed.rules));
        parsed.rules[parsed.n++] = r;
    }
    *out = parsed;
    return 0;
}

const char *egress_allowlist_check(const struct egress_allowlist *list, const char *host, int port)
{
    bool literal = egress_is_ip_literal(host);
    bool name_listed = false;
    size_t hl = strlen(host);
    for (size_t i = 0; i < list->n; i++) {
        const struct egress_rule *r = &list->rules[i];
        bool match;
        if (r->wildcard) {
            size_t sl = strlen(r->host);
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

char *egress_request_rebuild(const struct egress_request *req, const char *host, int port, const char *path,
                             size_t *len)
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
    memcpy(out + n, "Connection: close\r\n\r\n", 22);
    n += 21;
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

enum egress_hello egress_client_hello(const unsigned char *buf, size_t len, char *sni, size_t sni_cap)
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
    return result;
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
    {"egress-allow", {{"method", true}, {"host", true}, {"=port", true}, {"address", true}, {"path", false}}},
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
