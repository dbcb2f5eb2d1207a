/* egress-client: a static client the egress tests run INSIDE a tier-2
 * container to feed its proxy (127.0.0.1:$EGRESS_PORT, default 3128) what
 * busybox cannot: exact bytes, slow bytes, half-closed and many connections,
 * and a TLS ClientHello split across records. Requests are given with C
 * escapes (\r \n \t \\ \xHH). Every command prints one line.
 *
 *   req REQ              the first line of the reply ("HTTP/1.1 403 ..."),
 *                        "closed" (no reply) or "timeout"
 *   halfclose REQ        the same after shutdown(SHUT_WR) behind REQ
 *   slow MS REQ          REQ one byte every MS ms until the proxy answers:
 *                        "<reply line> after N bytes"
 *   flood N REQ          N connections open at once, idle for 0.5 s, then REQ on each:
 *                        counts of the replies' status codes ("403=60 503=4")
 *   loop N REQ...        N connections one after the other, the i-th sending
 *                        REQ number i mod count and reading to the end;
 *                        counts as for flood ("" sends nothing: "closed")
 *   hello TARGET SNI CUTS  CONNECT TARGET, then a ClientHello naming SNI in
 *                        handshake records cut at the byte offsets CUTS
 *                        ("40,200"), then half-close: "<CONNECT reply> |
 *                        <first line from upstream> | sent N HASH"
 *   hello2 TARGET SNI1 SNI2  the same with two ClientHellos in the tunnel
 *                        (a second TLS session in it), uncut
 *   conv REQ             REQ (any number of requests at once), then every
 *                        status line and body line of what comes back until
 *                        the proxy closes or is silent, joined by " | "
 *   fetch REQ            REQ, then everything to the close: "<status line> |
 *                        got N HASH" of the bytes after the head (a chunked
 *                        body as it came, framing and all)
 *   upload KIND SIZE REQ REQ (a head without its empty line) with a body of
 *                        SIZE pattern bytes (byte i is i % 251), framed by
 *                        KIND: "length" (Content-Length) or "chunked" (chunks
 *                        of 100003 bytes); the reply as conv prints it
 *   tunnel TARGET SNI N  CONNECT TARGET, a ClientHello naming SNI, N
 *                        application-data records of 16 KiB pattern bytes,
 *                        half-close: as hello prints it */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REPLY_WAIT_MS 8000

static int proxy_port(void)
{
    const char *p = getenv("EGRESS_PORT");
    return p ? atoi(p) : 3128;
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)proxy_port()),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        printf("connect: %s\n", strerror(errno));
        exit(1);
    }
    return fd;
}

/* C escapes of s decoded into a malloc'd buffer; its length in *len. */
static char *unescape(const char *s, size_t *len)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            *o++ = *s;
            continue;
        }
        s++;
        switch (*s) {
        case 'r': *o++ = '\r'; break;
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'x': {
            char hex[3] = {s[1], s[1] ? s[2] : 0, 0};
            *o++ = (char)strtol(hex, NULL, 16);
            s += 2;
            break;
        }
        default: *o++ = *s;
        }
    }
    *len = (size_t)(o - out);
    return out;
}

static void send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return; /* the proxy may close first: what it answered counts */
        p += n;
        len -= (size_t)n;
    }
}

/* Read until EOF or wait_ms of silence; the first line (no CR/LF) in line.
 * Returns the number of bytes read, -1 on a timeout before any. */
static long read_reply(int fd, char *line, size_t cap, int wait_ms)
{
    char buf[4096];
    long total = 0;
    line[0] = '\0';
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, wait_ms) <= 0)
            return total ? total : -1;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return total;
        if (total == 0) {
            size_t l = strcspn(buf, "\r\n");
            if (l >= (size_t)n)
                l = (size_t)n;
            if (l >= cap)
                l = cap - 1;
            memcpy(line, buf, l);
            line[l] = '\0';
        }
        total += n;
    }
}

static void print_reply(long n, const char *line)
{
    if (n < 0)
        printf("timeout\n");
    else if (n == 0)
        printf("closed\n");
    else
        printf("%s\n", line);
}

static int cmd_req(const char *req, int half_close)
{
    size_t len;
    char *data = unescape(req, &len), line[512];
    int fd = dial();
    send_all(fd, data, len);
    if (half_close)
        shutdown(fd, SHUT_WR);
    print_reply(read_reply(fd, line, sizeof(line), REPLY_WAIT_MS), line);
    close(fd);
    free(data);
    return 0;
}

static int cmd_slow(int ms, const char *req)
{
    size_t len, sent = 0;
    char *data = unescape(req, &len), line[512];
    int fd = dial();
    for (; sent < len; sent++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, ms) > 0)
            break; /* the proxy answered (or closed) */
        if (write(fd, data + sent, 1) != 1)
            break;
    }
    long n = read_reply(fd, line, sizeof(line), REPLY_WAIT_MS);
    printf("%s after %zu bytes\n", n < 0 ? "timeout" : n == 0 ? "closed" : line, sent);
    close(fd);
    free(data);
    return 0;
}

/* Tally of reply status codes ("403"), "closed" and "timeout". */
struct tally {
    char key[32][16];
    long count[32];
    int n;
};

static void tally_add(struct tally *t, long n, const char *line)
{
    char key[16];
    if (n < 0)
        strcpy(key, "timeout");
    else if (n == 0)
        strcpy(key, "closed");
    else if (strncmp(line, "HTTP/1.", 7) == 0 && strlen(line) >= 12)
        snprintf(key, sizeof(key), "%.3s", line + 9);
    else
        strcpy(key, "other");
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->key[i], key) == 0) {
            t->count[i]++;
            return;
        }
    if (t->n < 32) {
        strcpy(t->key[t->n], key);
        t->count[t->n++] = 1;
    }
}

static void tally_print(const struct tally *t)
{
    /* sorted by key, so the line is stable */
    int order[32];
    for (int i = 0; i < t->n; i++)
        order[i] = i;
    for (int i = 0; i < t->n; i++)
        for (int j = i + 1; j < t->n; j++)
            if (strcmp(t->key[order[j]], t->key[order[i]]) < 0) {
                int x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
    for (int i = 0; i < t->n; i++)
        printf("%s%s=%ld", i ? " " : "", t->key[order[i]], t->count[order[i]]);
    printf("\n");
}

static int cmd_flood(int n, const char *req)
{
    size_t len;
    char *data = unescape(req, &len), line[512];
    int *fds = calloc((size_t)n, sizeof(int));
    struct tally t = {0};
    for (int i = 0; i < n; i++)
        fds[i] = dial();
    /* all of them idle until the proxy has taken (or turned away) each */
    struct timespec pause = {.tv_nsec = 500 * 1000 * 1000};
    nanosleep(&pause, NULL);
    for (int i = 0; i < n; i++)
        send_all(fds[i], data, len);
    for (int i = 0; i < n; i++) {
        tally_add(&t, read_reply(fds[i], line, sizeof(line), REPLY_WAIT_MS), line);
        close(fds[i]);
    }
    tally_print(&t);
    return 0;
}

static int cmd_loop(long n, int count, char **reqs)
{
    struct tally t = {0};
    size_t lens[16];
    char *data[16], line[512];
    if (count > 16)
        count = 16;
    for (int i = 0; i < count; i++)
        data[i] = unescape(reqs[i], &lens[i]);
    for (long i = 0; i < n; i++) {
        int k = (int)(i % count), fd = dial();
        if (lens[k]) {
            send_all(fd, data[k], lens[k]);
            tally_add(&t, read_reply(fd, line, sizeof(line), REPLY_WAIT_MS), line);
        } else {
            tally_add(&t, 0, "");
        }
        close(fd);
    }
    tally_print(&t);
    return 0;
}

/* FNV-1a: a short fingerprint of what was sent, for the upstream's echo. */
static uint32_t fnv1a(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    while (n--)
        h = (h ^ *p++) * 16777619u;
    return h;
}

static size_t put16(unsigned char *p, size_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
    return 2;
}

/* A TLS 1.2-style ClientHello handshake message (type, 24-bit length,
 * body) with a 300-byte padding extension before server_name, so a cut
 * early in the message puts the name in a later record. */
static size_t client_hello(unsigned char *out, const char *sni)
{
    unsigned char body[1024], *p = body;
    size_t nl = strlen(sni);
    p += put16(p, 0x0303);
    for (int i = 0; i < 32; i++)
        *p++ = (unsigned char)(i * 7);
    *p++ = 0;                       /* session id */
    p += put16(p, 2);               /* cipher suites */
    p += put16(p, 0x1301);
    *p++ = 1;                       /* compression methods */
    *p++ = 0;
    unsigned char *ext_len = p;
    p += 2;
    p += put16(p, 0x0015);          /* padding */
    p += put16(p, 300);
    memset(p, 0, 300);
    p += 300;
    p += put16(p, 0x0000);          /* server_name */
    p += put16(p, nl + 5);
    p += put16(p, nl + 3);
    *p++ = 0;                       /* host_name */
    p += put16(p, nl);
    memcpy(p, sni, nl);
    p += nl;
    put16(ext_len, (size_t)(p - ext_len - 2));
    size_t blen = (size_t)(p - body);
    out[0] = 1;
    out[1] = (unsigned char)(blen >> 16);
    out[2] = (unsigned char)(blen >> 8);
    out[3] = (unsigned char)blen;
    memcpy(out + 4, body, blen);
    return blen + 4;
}

/* What comes back into all (cap bytes, NUL-terminated) until the proxy
 * closes or is silent for wait_ms. */
static size_t read_all(int fd, char *all, size_t cap, int wait_ms)
{
    size_t have = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (have >= cap - 1 || poll(&p, 1, wait_ms) <= 0)
            break;
        ssize_t n = read(fd, all + have, cap - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    all[have] = '\0';
    return have;
}

/* Status lines and body lines of the replies (headers left out). */
static int cmd_conv(const char *req)
{
    size_t len;
    char *data = unescape(req, &len), all[65536];
    int fd = dial();
    send_all(fd, data, len);
    read_all(fd, all, sizeof(all), 3000);
    int in_head = 0, first = 1;
    for (char *line = all; *line;) {
        size_t l = strcspn(line, "\n");
        char *next = line + l + (line[l] == '\n');
        if (l && line[l - 1] == '\r')
            l--;
        line[l] = '\0';
        if (strncmp(line, "HTTP/1.", 7) == 0)
            in_head = 1;
        if (strncmp(line, "HTTP/1.", 7) == 0 || (!in_head && l)) {
            printf("%s%s", first ? "" : " | ", line);
            first = 0;
        } else if (in_head && l == 0) {
            in_head = 0;
        }
        line = next;
    }
    printf("%s\n", first ? "closed" : "");
    close(fd);
    free(data);
    return 0;
}

static int cmd_hello_with(const char *target, const char *sni, const char *cuts, const char *sni2, long records);

static int cmd_hello(const char *target, const char *sni, const char *cuts)
{
    return cmd_hello_with(target, sni, cuts, NULL, 0);
}

static int cmd_hello2(const char *target, const char *sni1, const char *sni2)
{
    return cmd_hello_with(target, sni1, "", sni2, 0);
}

#define RECORD_DATA 16384

/* CONNECT target, a ClientHello naming sni in records cut at cuts; with
 * sni2 a second, whole ClientHello naming it after the first; then
 * `records` application-data records of pattern bytes. */
static int cmd_hello_with(const char *target, const char *sni, const char *cuts, const char *sni2, long records)
{
    unsigned char hs[1100];
    size_t hlen = client_hello(hs, sni), wlen = 0, from = 0;
    unsigned char *wire = malloc(4096 + (size_t)records * (RECORD_DATA + 5));
    char cutlist[256];
    snprintf(cutlist, sizeof(cutlist), "%s", cuts);
    for (char *tok = strtok(cutlist, ","); ; tok = strtok(NULL, ",")) {
        size_t to = tok ? (size_t)atol(tok) : hlen;
        if (to > hlen)
            to = hlen;
        if (to <= from && tok)
            continue;
        wire[wlen++] = 0x16;        /* handshake record */
        wire[wlen++] = 3;
        wire[wlen++] = 1;
        wlen += put16(wire + wlen, to - from);
        memcpy(wire + wlen, hs + from, to - from);
        wlen += to - from;
        from = to;
        if (!tok)
            break;
    }
    if (sni2) {
        hlen = client_hello(hs, sni2);
        wire[wlen++] = 0x16;
        wire[wlen++] = 3;
        wire[wlen++] = 1;
        wlen += put16(wire + wlen, hlen);
        memcpy(wire + wlen, hs, hlen);
        wlen += hlen;
    }
    for (long r = 0; r < records; r++) {
        wire[wlen++] = 0x17; /* application data */
        wire[wlen++] = 3;
        wire[wlen++] = 3;
        wlen += put16(wire + wlen, RECORD_DATA);
        for (size_t i = 0; i < RECORD_DATA; i++, wlen++)
            wire[wlen] = (unsigned char)(wlen % 251);
    }
    int fd = dial();
    char connect_req[512], line[512], up[512];
    snprintf(connect_req, sizeof(connect_req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
    send_all(fd, connect_req, strlen(connect_req));
    /* the CONNECT reply: its head only, then the tunnel */
    char head[2048];
    size_t have = 0;
    while (have < sizeof(head) - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, REPLY_WAIT_MS) <= 0 || read(fd, head + have, 1) != 1)
            break;
        head[++have] = '\0';
        if (have >= 4 && memcmp(head + have - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    head[have] = '\0';
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(head, "\r\n"), head);
    if (strstr(line, " 200 ")) {
        send_all(fd, wire, wlen);
        shutdown(fd, SHUT_WR);
        long n = read_reply(fd, up, sizeof(up), REPLY_WAIT_MS);
        printf("%s | %s | sent %zu %08x\n", line, n < 0 ? "timeout" : n == 0 ? "closed" : up, wlen,
               fnv1a(wire, wlen));
    } else {
        printf("%s\n", line[0] ? line : "closed");
    }
    close(fd);
    free(wire);
    return 0;
}

/* Everything after REQ to the close: the status line, and the count and
 * hash of the bytes after the head. */
static int cmd_fetch(const char *req)
{
    size_t len, have = 0, body = 0;
    char *data = unescape(req, &len), head[8192], buf[65536], line[512];
    int fd = dial(), in_head = 1;
    uint32_t h = 2166136261u;
    send_all(fd, data, len);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, REPLY_WAIT_MS) <= 0)
            break;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        size_t at = 0;
        while (in_head && at < (size_t)n && have < sizeof(head) - 1) {
            head[have++] = buf[at++];
            in_head = !(have >= 4 && memcmp(head + have - 4, "\r\n\r\n", 4) == 0);
        }
        for (; at < (size_t)n; at++, body++)
            h = (h ^ (unsigned char)buf[at]) * 16777619u;
    }
    head[have] = '\0';
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(head, "\r\n"), head);
    printf("%s | got %zu %08x\n", line[0] ? line : "closed", body, h);
    close(fd);
    free(data);
    return 0;
}

/* REQ's head, then a body of size pattern bytes framed by kind; the reply
 * as cmd_conv prints it. */
static int cmd_upload(const char *kind, long size, const char *req)
{
    size_t len, n = 0;
    char *head = unescape(req, &len);
    int chunked = strcmp(kind, "chunked") == 0;
    char *msg = malloc(len + 64 + (size_t)size + ((size_t)size / 100003 + 2) * 16);
    memcpy(msg, head, len);
    n = len;
    n += (size_t)sprintf(msg + n, chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Content-Length: %ld\r\n\r\n", size);
    for (long i = 0, left = size; left > 0;) {
        long part = chunked ? (left < 100003 ? left : 100003) : left;
        if (chunked)
            n += (size_t)sprintf(msg + n, "%lx\r\n", part);
        for (long j = 0; j < part; j++, i++)
            msg[n++] = (char)(i % 251);
        if (chunked)
            n += (size_t)sprintf(msg + n, "\r\n");
        left -= part;
    }
    if (chunked)
        n += (size_t)sprintf(msg + n, "0\r\n\r\n");
    int fd = dial();
    send_all(fd, msg, n);
    char all[65536];
    read_all(fd, all, sizeof(all), REPLY_WAIT_MS);
    char *body_line = strstr(all, "\r\n\r\n");
    printf("%.*s | %s", (int)strcspn(all, "\r\n"), all, body_line ? body_line + 4 : "closed\n");
    close(fd);
    free(msg);
    free(head);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "req") == 0)
        return cmd_req(argv[2], 0);
    if (argc >= 3 && strcmp(argv[1], "halfclose") == 0)
        return cmd_req(argv[2], 1);
    if (argc >= 4 && strcmp(argv[1], "slow") == 0)
        return cmd_slow(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "flood") == 0)
        return cmd_flood(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "loop") == 0)
        return cmd_loop(atol(argv[2]), argc - 3, argv + 3);
    if (argc >= 5 && strcmp(argv[1], "hello") == 0)
        return cmd_hello(argv[2], argv[3], argv[4]);
    if (argc >= 5 && strcmp(argv[1], "hello2") == 0)
        return cmd_hello2(argv[2], argv[3], argv[4]);
    if (argc >= 3 && strcmp(argv[1], "conv") == 0)
        return cmd_conv(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "fetch") == 0)
        return cmd_fetch(argv[2]);
    if (argc >= 5 && strcmp(argv[1], "upload") == 0)
        return cmd_upload(argv[2], atol(argv[3]), argv[4]);
    if (argc >= 5 && strcmp(argv[1], "tunnel") == 0)
        return cmd_hello_with(argv[2], argv[3], "", NULL, atol(argv[4]));
    fprintf(stderr, "usage: egress-client req|halfclose|slow|flood|loop|hello|hello2|conv|fetch|upload|tunnel ...\n");
    return 2;
}
