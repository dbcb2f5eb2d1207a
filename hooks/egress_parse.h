/* The egress proxy's parsers, pure (no I/O, no globals), so the unit tests
 * and the fuzz harnesses reach every one of them: the request head (request
 * line and headers), the URL authority and host:port of plain HTTP and
 * CONNECT, the TLS records carrying a ClientHello and its SNI, the
 * allowlist and its wildcard matching, and the audit records the proxy's
 * unprivileged worker hands to its privileged writer.
 *
 * Ownership rule, the same for every function here: an out-parameter is
 * written only when the function succeeds. A function that fails leaves its
 * out-parameters as they were and has freed whatever it allocated; no
 * function frees or changes what the caller passed in, except the request
 * head, which egress_request_parse splits in place (its fields point into
 * it). Every returned string is malloc'd and belongs to the caller. */
#ifndef AGENTCAGE_EGRESS_PARSE_H
#define AGENTCAGE_EGRESS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "runtime/util/error.h"

/* ---- hosts and ports */

#define EGRESS_HOST_MAX 253

/* Let a host start with "*." (allowlist entries only). */
#define EGRESS_HOST_WILDCARD 1

/* "host", "host:port", "[v6]", "[v6]:port" -> *host (malloc'd, lowercase,
 * no brackets, no trailing dot) and *port (0 when absent). A host is a
 * DNS name (labels of 1..63 of [a-z0-9_-], 253 at most), a dotted-quad
 * IPv4 address or a bracketed IPv6 address (no zone); anything else (%, \,
 * NUL, spaces, userinfo, an empty label, the other number forms inet_aton
 * takes such as 127.1 or 0x7f000001) is refused. A port is 1..65535 in
 * decimal digits. Returns 0, or -1 with a reason in *why (static). */
int egress_parse_host_port(const char *s, int flags, char **host, int *port, const char **why);

/* A dotted-quad IPv4 or an IPv6 address (as the parser above returns). */
bool egress_is_ip_literal(const char *host);

/* Addresses a name must never lead the host side to: loopback, link-local
 * (cloud metadata), unspecified, IPv4-mapped forms of those; other families
 * count as forbidden. */
bool egress_forbidden_address(const struct sockaddr *sa);

/* ---- the allowlist (io.agentcage.egress) */

struct egress_rule {
    char *host;     /* lowercase; for a wildcard the suffix with its dot: ".example.com" */
    bool wildcard;
    int port;       /* 0: 80 and 443 */
};

struct egress_allowlist {
    struct egress_rule *rules;
    size_t n;
};

#define EGRESS_ALLOWLIST_MAX 1024

/* Comma-separated host[:port], *.suffix[:port], [v6]:port; blanks around
 * entries and empty entries are ignored. Errors name the entry:
 * "io.agentcage.egress: bad entry `a b` (expected host[:port] or *.suffix[:port])". */
int egress_allowlist_parse(const char *list, struct egress_allowlist *out, ac_error_t *err);
void egress_allowlist_free(struct egress_allowlist *list);
/* NULL when host (as egress_parse_host_port returns it) and port are
 * allowed, else why not (static text). A wildcard matches names under its
 * suffix, never the suffix itself nor an IP literal. */
const char *egress_allowlist_check(const struct egress_allowlist *list, const char *host, int port);

/* ---- the HTTP request head */

#define EGRESS_HEAD_MAX 16384
#define EGRESS_HEADERS_MAX 100

struct egress_request {
    char *method, *target, *version;
    char *headers;     /* the header lines, each ending in "\r\n" (empty: none) */
    size_t head_len;   /* bytes of the head including its final "\r\n\r\n" */
};

/* Where the head in buf ends (the byte after "\r\n\r\n"), 0 when it has not
 * ended yet. A NUL byte before the end also answers: -1. */
long egress_head_end(const char *buf, size_t len);

/* Split the head buf[0..head_len) (head_len from egress_head_end) in place:
 * the request line is METHOD SP TARGET SP HTTP/1.x with a token method and
 * a target of visible ASCII; each header line is a token name, ':' and a
 * value without control bytes other than tab. Bare CR or LF, folded
 * lines, more than EGRESS_HEADERS_MAX headers: refused. Returns 0, or -1
 * with why (static: "malformed request line", ...). */
int egress_request_parse(char *buf, size_t head_len, struct egress_request *req, const char **why);

/* "http://authority[/path][?query][#fragment]" (scheme in any case) ->
 * host, port (80 when absent) and the origin-form target "/path?query"
 * (malloc'd; "/" when empty; no fragment). Userinfo is refused. -1 with
 * why. */
int egress_parse_http_url(const char *target, char **host, int *port, char **path, const char **why);

/* The head sent upstream: "METHOD PATH VERSION", Host from host/port, the
 * client's headers without Host and the hop-by-hop ones (Connection,
 * Proxy-Connection, Keep-Alive, Proxy-Authorization, TE, Upgrade), then
 * "Connection: close" and the empty line. malloc'd, its length in *len. */
char *egress_request_rebuild(const struct egress_request *req, const char *host, int port, const char *path,
                             size_t *len);

/* ---- TLS */

#define EGRESS_HELLO_MAX 16384     /* the largest ClientHello message taken */
#define EGRESS_HELLO_RECORDS_MAX 64 /* the most records it may span */
#define EGRESS_HELLO_WIRE_MAX (EGRESS_HELLO_MAX + 4 + EGRESS_HELLO_RECORDS_MAX * 5) /* all of them, on the wire */

enum egress_hello {
    EGRESS_HELLO_BAD = -1,       /* not a well-formed ClientHello */
    EGRESS_HELLO_NEED_MORE = 0,  /* well-formed so far, more bytes needed */
    EGRESS_HELLO_SNI = 1,        /* complete, with a host_name in sni */
    EGRESS_HELLO_NO_SNI = 2,     /* complete, without server_name */
};

/* The ClientHello at the start of buf, reassembled from as many handshake
 * records as it spans (a record's fragment may hold part of it; the
 * message must end where a record ends). The SNI (one host_name of a DNS
 * name's characters, lowercase) goes to sni (sni_cap >= 256). */
enum egress_hello egress_client_hello(const unsigned char *buf, size_t len, char *sni, size_t sni_cap);

/* ---- audit records from the worker to the writer */

#define EGRESS_RECORD_MAX 4096
#define EGRESS_RECORD_PAIRS 6
#define EGRESS_RECORD_VALUE_MAX 512

/* A message: event NUL (key NUL value NUL)*, as egress_record_encode
 * writes it. Keys starting with '=' carry a number. */
struct egress_record {
    const char *event;
    size_t n;
    const char *key[EGRESS_RECORD_PAIRS];
    const char *value[EGRESS_RECORD_PAIRS];
};

/* Encode event and the NULL-terminated key, value list into buf; returns
 * the length, 0 when it does not fit (values are cut to fit first). */
size_t egress_record_encode(char *buf, size_t cap, const char *event, const char *const *kv);

/* Parse and check a message's shape against the events the worker may
 * send: egress-allow, egress-deny and egress-busy, each with its own set of
 * keys, none twice, numbers in decimal, values bounded. Fields point into
 * msg. -1 with why when the message is anything else. */
int egress_record_parse(const char *msg, size_t len, struct egress_record *rec, const char **why);

#endif
