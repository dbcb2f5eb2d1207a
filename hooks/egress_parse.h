/* The egress proxy's parsers, pure (no I/O, no globals), so the unit tests
 * and the fuzz harnesses reach every one of them: the request head (request
 * line and headers, its Host and body framing), request and response
 * bodies (Content-Length, chunked), the response head, the URL authority
 * and host:port of plain HTTP and CONNECT, host names (IDNA A-labels), the
 * addresses a name may lead to, the TLS records of a tunnel and the
 * ClientHellos among them with their SNI, the allowlist and its wildcard
 * matching, and the audit records the proxy's unprivileged worker hands to
 * its privileged writer.
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

/* The proxy's ceilings unless the operator sets egress.max-rate and
 * egress.max-bytes (the mapping names them in its decisions). */
#define EGRESS_DEFAULT_RATE (1ULL << 20)    /* bytes per second */
#define EGRESS_DEFAULT_BYTES (100ULL << 20) /* per container, both directions */

/* Let a host start with "*." (allowlist entries only). */
#define EGRESS_HOST_WILDCARD 1
/* ... or with "**." (allowlist entries the operator allows, --deep-wildcards). */
#define EGRESS_HOST_DEEP_WILDCARD 2

/* "host", "host:port", "[v6]", "[v6]:port" -> *host (malloc'd, lowercase,
 * no brackets, no trailing dot) and *port (0 when absent). A host is a
 * DNS name (labels of 1..63 of [a-z0-9_-], 253 at most; a label starting
 * "xn--" must be a valid IDNA A-label, checked by libidn2), a dotted-quad
 * IPv4 address or a bracketed IPv6 address (no zone); anything else (%, \,
 * NUL, spaces, bytes above 0x7f, userinfo, an empty label, the other
 * number forms inet_aton takes such as 127.1 or 0x7f000001) is refused. A
 * port is 1..65535 in decimal digits. Returns 0, or -1 with a reason in
 * *why (static). */
int egress_parse_host_port(const char *s, int flags, char **host, int *port, const char **why);

/* A dotted-quad IPv4 or an IPv6 address (as the parser above returns). */
bool egress_is_ip_literal(const char *host);

/* ---- addresses */

/* Why the proxy must not connect to this address (static text: "a loopback
 * address", "a private address (10.0.0.0/8)", ...), NULL when it may: an
 * IPv4 address outside the special-purpose ranges (this network, private,
 * CGNAT, loopback, link-local with the cloud metadata services, IETF
 * protocol assignments, documentation, benchmarking, multicast, reserved,
 * broadcast), or an IPv6 global unicast address (2000::/3) outside
 * documentation and the IETF protocol block; an IPv6 spelling of an IPv4
 * address (IPv4-mapped, -compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) is
 * judged as that IPv4 address. Other families are refused. */
const char *egress_address_refusal(const struct sockaddr *sa);

struct egress_cidr {
    int family;              /* AF_INET or AF_INET6 */
    unsigned char addr[16];  /* network byte order; 4 bytes used for IPv4 */
    int prefix;
};

struct egress_cidrs {
    struct egress_cidr *v;
    size_t n;
};

#define EGRESS_CIDRS_MAX 256

/* Comma-separated a.b.c.d/N, v6/N (a bare address is /32 or /128); bits
 * below the prefix must be zero. name is the setting named in errors:
 * "egress.allow-cidr: bad entry `10.0.0.1/8` (host bits set)". */
int egress_cidrs_parse(const char *list, const char *name, struct egress_cidrs *out, ac_error_t *err);
void egress_cidrs_free(struct egress_cidrs *c);
/* Does one of them hold the address (IPv4-mapped IPv6 as its IPv4)? */
bool egress_cidrs_contain(const struct egress_cidrs *c, const struct sockaddr *sa);

/* ---- the allowlist (io.agentcage.egress) */

struct egress_rule {
    char *host;     /* lowercase; for a wildcard the suffix with its dot: ".example.com" */
    int depth;      /* 0: the name itself; 1 ("*."): one label more; -1 ("**."): any number */
    int port;       /* 0: 80 and 443 */
};

struct egress_allowlist {
    struct egress_rule *rules;
    size_t n;
};

#define EGRESS_ALLOWLIST_MAX 1024

/* Comma-separated host[:port], *.suffix[:port], [v6]:port, and with
 * EGRESS_HOST_DEEP_WILDCARD in flags **.suffix[:port]; a name may be
 * written with U-labels (bücher.example), which become A-labels
 * (xn--bcher-kva.example). Blanks around entries and empty entries are
 * ignored. Errors name the entry: "io.agentcage.egress: bad entry `a b`
 * (expected host[:port] or *.suffix[:port])". */
int egress_allowlist_parse(const char *list, int flags, struct egress_allowlist *out, ac_error_t *err);
void egress_allowlist_free(struct egress_allowlist *list);
/* Add one rule (host as egress_parse_host_port returns it, port 0 for 80
 * and 443): the operator's approvals. */
void egress_allowlist_add(struct egress_allowlist *list, const char *host, int port);
/* NULL when host (as egress_parse_host_port returns it) and port are
 * allowed, else why not (static text). "*.suffix" matches a name of one
 * label more than suffix, "**.suffix" any name under it; neither the suffix
 * itself nor an IP literal. */
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

/* The Host header's host and port (0 when it has none) into *host (malloc'd,
 * as egress_parse_host_port returns it); 0 with *host NULL when there is no
 * Host header. -1 with why for a second Host header or one that is not
 * host[:port]. */
int egress_request_host(const struct egress_request *req, char **host, int *port, const char **why);

/* How a message's body is delimited. */
enum egress_body_kind {
    EGRESS_BODY_NONE,    /* no body */
    EGRESS_BODY_LENGTH,  /* Content-Length bytes */
    EGRESS_BODY_CHUNKED, /* Transfer-Encoding: chunked */
    EGRESS_BODY_CLOSE,   /* until the connection closes (responses only) */
};

struct egress_framing {
    enum egress_body_kind kind;
    unsigned long long length; /* EGRESS_BODY_LENGTH */
    bool close;                /* the connection ends after this message */
};

/* The request's body framing, refusing what two parsers could read two
 * ways (request smuggling): Content-Length together with Transfer-Encoding,
 * more than one of either, a Content-Length that is not 1..18 decimal
 * digits, a Transfer-Encoding other than exactly "chunked", any
 * Transfer-Encoding in HTTP/1.0. close: HTTP/1.0, or "Connection: close".
 * -1 with why. */
int egress_request_framing(const struct egress_request *req, struct egress_framing *f, const char **why);

/* ---- bodies */

/* A chunked body, fed as it arrives: chunk-size (hex, at most 15 digits)
 * [; extensions] CRLF, data CRLF, ..., a last chunk 0, trailer lines, CRLF.
 * strict (requests): lines end in CRLF only, extensions and trailers hold
 * no control bytes, trailers at most 16 KiB. Lenient (responses, from an
 * allowed server): a bare LF ends a line too. */
struct egress_chunked {
    int state;
    bool strict;
    unsigned long long left; /* bytes of chunk data still to come */
    unsigned digits;
    size_t line;             /* bytes of the current extension or trailer line, trailers in all */
};

void egress_chunked_init(struct egress_chunked *c, bool strict);
/* How many bytes at the start of buf belong to the body (all of them until
 * it ends); -1 when the body is malformed (and from then on). */
long egress_chunked_feed(struct egress_chunked *c, const char *buf, size_t len);
bool egress_chunked_done(const struct egress_chunked *c);

/* ---- the response head */

#define EGRESS_RESPONSE_HEAD_MAX 65536

struct egress_response {
    int status;
    struct egress_framing framing;
};

/* Where the response head in buf ends (after the empty line; a bare LF
 * ends lines too), 0 when not yet. */
long egress_response_head_end(const char *buf, size_t len);
/* The status line "HTTP/1.x NNN ..." and the framing of what follows, for
 * a response to method (RFC 9112 6.3: HEAD, 1xx, 204 and 304 have no body;
 * then Transfer-Encoding ending in chunked; else Content-Length; else the
 * connection's close). -1 with why when the head is not one. */
int egress_response_parse(const char *buf, size_t head_len, const char *method, struct egress_response *r,
                          const char **why);

/* "http://authority[/path][?query][#fragment]" (scheme in any case) ->
 * host, port (80 when absent) and the origin-form target "/path?query"
 * (malloc'd; "/" when empty; no fragment). Userinfo is refused. -1 with
 * why. */
int egress_parse_http_url(const char *target, char **host, int *port, char **path, const char **why);

/* The head sent upstream: "METHOD PATH VERSION", Host from host/port, the
 * client's headers without Host and the hop-by-hop ones (Connection,
 * Proxy-Connection, Keep-Alive, Proxy-Authorization, TE, Upgrade), then
 * "Connection: close" when close, and the empty line. malloc'd, its length
 * in *len. */
char *egress_request_rebuild(const struct egress_request *req, const char *host, int port, const char *path,
                             bool close, size_t *len);

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

/* The client's side of a CONNECT tunnel as TLS records, fed as it arrives,
 * so that the tunnel carries one TLS session to the CONNECT host: every
 * record must be well-formed (content type 20..23, version 3.x, at most
 * 2^14 + 2048 bytes), and a ClientHello (the first handshake record, and
 * any later handshake record that starts like one: HelloRetryRequest's
 * second hello, or a new session) must be complete and name its SNI. */
struct egress_tls_stream {
    unsigned long long records;
    size_t body_left; /* bytes of the current record's body still to pass */
};

enum egress_tls_next {
    EGRESS_TLS_BAD = -1,      /* not a TLS record stream */
    EGRESS_TLS_NEED_MORE = 0, /* keep buf and read more (a record header or a hello is not whole) */
    EGRESS_TLS_PASS = 1,      /* forward the first *take bytes */
    EGRESS_TLS_HELLO = 2,     /* the first *take bytes are a whole ClientHello, its SNI in sni ("" without) */
};

/* What to do with buf (the bytes the tunnel holds, len > 0; the caller
 * keeps up to EGRESS_HELLO_WIRE_MAX). sni_cap >= 256. */
enum egress_tls_next egress_tls_next(struct egress_tls_stream *s, const unsigned char *buf, size_t len, size_t *take,
                                     char *sni, size_t sni_cap);

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
 * send: egress-allow, egress-deny, egress-ask and egress-busy, each with its
 * own set of keys, none twice, numbers in decimal, values bounded. Fields
 * point into msg. -1 with why when the message is anything else. */
int egress_record_parse(const char *msg, size_t len, struct egress_record *rec, const char **why);

#endif
