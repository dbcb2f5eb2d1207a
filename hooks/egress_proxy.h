/* The egress proxy's two processes share this: its configuration, fixed
 * before the daemon starts, and the messages between them.
 *
 * The worker (hooks/egress_relay.c, confined by egress_main.c before it
 * reads a byte) serves the container's connections: every request of a
 * connection is parsed, checked and audited on its own; a CONNECT tunnel
 * carries one TLS session to the CONNECT host. Its decisions go to the
 * writer as records (egress_record_encode) on WORKER_RECORD_FD, each
 * acknowledged by one byte once it is in the audit log. The writer sends
 * it, on WORKER_CONTROL_FD, SOCK_SEQPACKET:
 *   'H' then (family byte, 16 address bytes) * n: the host's own addresses
 *       that the special-range rule would let through, the whole list, at
 *       start (before the worker serves) and whenever they change;
 *   'Y', 'N' or 'T' then a 4-byte ask number: the operator allowed the held
 *       request, refused it, or did not answer in time;
 *   'G' then 8 bytes of expiry (unix seconds), 2 of port (0: 80 and 443),
 *       the host: an approval that allows host:port until then. */
#ifndef AGENTCAGE_EGRESS_PROXY_H
#define AGENTCAGE_EGRESS_PROXY_H

#include <stdbool.h>
#include <stdint.h>

#include "hooks/egress_parse.h"
#include "runtime/linux/denials.h"

/* the worker's fds: the listening socket, its end of the record socket, of
 * the control socket */
#define WORKER_LISTEN_FD 3
#define WORKER_RECORD_FD 4
#define WORKER_CONTROL_FD 5

#define EGRESS_MAX_CONNECTIONS 64
/* The most host addresses the writer sends (those egress_address_refusal
 * would not refuse anyway); a host with more fails the proxy's start. */
#define EGRESS_HOST_ADDRESSES_MAX 4096
#define EGRESS_CONTROL_MAX (1 + EGRESS_HOST_ADDRESSES_MAX * 17)

struct egress_test_name {
    char *name;
    char *addr;
};

struct egress_proxy_conf {
    struct egress_allowlist allow;
    struct egress_cidrs allow_cidr; /* the operator's: addresses allowed though special */
    struct egress_test_name *test;  /* --test-resolve */
    size_t n_test;
    uint64_t rate, cap;
    int head_timeout_s;
    bool ask;                       /* hold requests outside the allowlist for the operator */
    int ask_timeout_s;
    struct denials_bytes *bytes;    /* shared with the writer */
    void (*first_idle)(void);       /* called once, single-threaded, when the worker first waits with nothing to do */
};

extern struct egress_proxy_conf egress_conf;

/* The worker's loop, once it is confined: accept and serve until the
 * writer goes. */
void egress_worker_serve(void) __attribute__((noreturn));

#endif
