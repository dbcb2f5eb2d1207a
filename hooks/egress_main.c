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
 * CONNECT host, caps bytes per second and in total, has no UDP toward the
 * container, and audits every decision.
 *
 * The daemon is two processes, split like OpenSSH's privilege separation:
 *   - the worker handles the container's bytes (egress_parse.c parses
 *     them). Before it reads one it enters helper_sandbox_enter: an empty
 *     read-only root, an unprivileged uid, no capabilities, no_new_privs,
 *     Landlock, a seccomp allow-list. Its decisions go to the writer as
 *     records over a SOCK_SEQPACKET socket;
 *   - the writer, its parent, checks each record's shape
 *     (egress_record_parse), appends it to the audit log, counts refusals
 *     and kills the container past io.agentcage.max-denials. It keeps only
 *     root's uid and CAP_KILL. A record of the wrong shape, or the worker's
 *     death, ends the proxy (audited). It exits when the container's init
 *     exits (pidfd); `agentcage-egress --stop` (poststop) kills it, and the
 *     worker dies with it (PR_SET_PDEATHSIG). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <malloc.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/inotify.h>
#include <sys/mman.h>

#include "runtime/linux/helper_sandbox.h"
#include "runtime/linux/hooks.h"
#include "runtime/linux/rootless.h"
#include "runtime/linux/sync.h"
#include "runtime/util/utils.h"
#include "hooks/approvals.h"
#include "hooks/audit.h"
#include "hooks/egress_proxy.h"
#include "hooks/hook_state.h"
#include "hooks/policy_hooks.h"

#define PROG "agentcage-egress"
#define DEFAULT_PID_DIR "/run/agentcage-egress"
#define DEFAULT_USER "agentcage-egress"
#define DEFAULT_RATE EGRESS_DEFAULT_RATE
#define DEFAULT_BYTES EGRESS_DEFAULT_BYTES
#define DEFAULT_MAX_DENIALS 20
#define DEFAULT_HEAD_TIMEOUT_S 10        /* for a request head or a ClientHello, in all */
#define DEFAULT_ASK_TIMEOUT_S 60         /* a held request waits this long for the operator */
#define MAX_HELD EGRESS_MAX_CONNECTIONS
#define SHED_AFTER_IDLE_MS 50            /* the writer's idle time before it sheds its file pages */

/* The writer's configuration, fixed before the daemon starts (the worker's
 * is egress_conf, egress_proxy.h). */
static struct {
    const char *audit_log;
    const char *pid_dir;
    const char *allow_text; /* as given, for the start record */
    const char *approvals_dir; /* where held requests wait (--approvals-dir) */
    char *id;
    int port;
    long max_denials;
    int pidfd;
    struct denials_counter *denials; /* the container's counter (create's file), or NULL */
    const char *denials_path; /* its path ($AGENTCAGE_DENIALS), or NULL */
    bool in_runtime; /* started by the runtime in its own process (egress_builtin), not exec'd */
    struct helper_sandbox sandbox;
} conf = {.port = EGRESS_PROXY_PORT, .pid_dir = DEFAULT_PID_DIR, .pidfd = -1};

/* The requests held for the operator, by the writer. */
static struct {
    unsigned ask; /* 0: a free slot */
    char host[EGRESS_HOST_MAX + 1];
    int port;
    long long deadline_ms; /* CLOCK_MONOTONIC */
} held[MAX_HELD];

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
            "operator's ceilings below; io.agentcage.egress-ask: true holds a request to another host for\n"
            "the operator (agentcage pending, approve ID --egress, deny ID --egress) when --ask allows it.\n"
            "The process reading the container's bytes runs as USER, with no capabilities, seccomp,\n"
            "Landlock and an empty read-only root (rootless: as the invoking user).\n\n"
            "Options:\n"
            "  --audit-log FILE     audit trail (default " AUDIT_DEFAULT_LOG ")\n"
            "  --port N             proxy port inside the container (default %d)\n"
            "  --allow LIST         allowlist instead of the annotation\n"
            "  --max-rate SIZE      ceiling of bytes per second\n"
            "  --max-bytes SIZE     ceiling of total bytes\n"
            "  --max-denials N      ceiling of refused requests before the container is killed (0: never;\n"
            "                       the runtime's denials counter, when it hands one, decides instead)\n"
            "  --allow-cidr LIST    addresses the proxy may connect to although they are special (loopback,\n"
            "                       private, link-local, the host's own ...): a.b.c.d/N, v6::/N, comma-separated\n"
            "  --deep-wildcards     let the allowlist have **.suffix entries (names of any depth)\n"
            "  --ask                let io.agentcage.egress-ask hold requests for the operator\n"
            "  --ask-timeout SECS   how long a held request waits (default %d)\n"
            "  --approvals-dir DIR  where held requests and the operator's answers live\n"
            "                       (default " APPROVALS_DEFAULT_DIR ", as DIR/egress)\n"
            "  --head-timeout SECS  time for a request head or a ClientHello to arrive (default %d)\n"
            "  --user USER          the unprivileged user of the proxy (default " DEFAULT_USER ")\n"
            "  --resolv-conf FILE   the resolver configuration the proxy uses (default /etc/resolv.conf)\n"
            "  --hosts FILE         the hosts file the proxy's resolver reads (default /etc/hosts)\n"
            "  --pid-dir DIR        where the proxy's pid file lives (default " DEFAULT_PID_DIR ")\n"
            "  --test-resolve LIST  name=ip,...: resolve these names to these addresses (tests only;\n"
            "                       also $AGENTCAGE_EGRESS_TEST_RESOLVE)\n"
            "  --stop               kill the container's proxy (poststop)\n"
            "  --help\n",
            DEFAULT_MAX_DENIALS, EGRESS_PROXY_PORT, DEFAULT_ASK_TIMEOUT_S, DEFAULT_HEAD_TIMEOUT_S);
}

static void __attribute__((noreturn)) die_error(ac_error_t *err)
{
    cleanup_free char *msg = ac_error_string(*err);
    fprintf(stderr, PROG ": %s\n", msg);
    exit(1);
}

static __attribute__((hot)) long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int parse_test_resolve(const char *list, ac_error_t *err)
{
    cleanup_free char *copy = xstrdup(list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !egress_is_ip_literal(eq + 1))
            return ac_error(err, 0, "--test-resolve: expected name=ip, got `%s`", tok);
        *eq = '\0';
        struct egress_proxy_conf *w = &egress_conf;
        w->test = xrealloc(w->test, (w->n_test + 1) * sizeof(*w->test));
        w->test[w->n_test].name = xstrdup(tok);
        for (char *c = w->test[w->n_test].name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        w->test[w->n_test++].addr = xstrdup(eq + 1);
    }
    return 0;
}

/* ================================================================ the worker's start */

/* /proc/self/maps and pagemap, open for helper_shed_file_pages later (a
 * sandbox or Landlock then hides /proc); both -1 when they cannot be had. */
static void open_own_maps(int *maps_fd, int *pagemap_fd)
{
    *maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    *pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (*maps_fd < 0 || *pagemap_fd < 0) {
        helper_shed_file_pages(*maps_fd, -1); /* closes what was opened, sheds nothing */
        helper_shed_file_pages(-1, *pagemap_fd);
        *maps_fd = *pagemap_fd = -1;
    }
}

static int worker_maps_fd = -1, worker_pagemap_fd = -1;

/* The worker waits for the first time: what stays mapped is what the
 * wait runs (the idle proxy's resident set, issue 20). */
static __attribute__((hot)) void worker_first_idle(void)
{
    helper_shed_file_pages(worker_maps_fd, worker_pagemap_fd);
    worker_maps_fd = worker_pagemap_fd = -1;
}

/* The worker, just forked: its fds in place, the sandbox on, then it tells
 * the writer through status (one byte 'R', or the error's line). It keeps
 * the page of the denials file that counts bytes, not the one that counts
 * denials. */
static void __attribute__((noreturn)) run_worker(int listen_fd, int record_fd, int control_fd, int status_fd,
                                                 pid_t writer)
{
    ac_error_t err = NULL;
    /* the listening, record and control sockets at fixed numbers, every
     * other fd (the container's pidfd, the denials file, the ready pipe)
     * closed; first all above the targets, so no dup2 meets another's fd */
    int fds[4] = {listen_fd, record_fd, control_fd, status_fd};
    for (int i = 0; i < 4; i++)
        if ((fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16)) < 0)
            _exit(1);
    for (int i = 0; i < 4; i++)
        if (dup2(fds[i], WORKER_LISTEN_FD + i) < 0)
            _exit(1);
    if (close_range(WORKER_LISTEN_FD + 4, ~0U, 0) < 0)
        _exit(1);
    status_fd = WORKER_LISTEN_FD + 3;
    if (conf.denials && munmap(conf.denials, DENIALS_PAGE) < 0)
        _exit(1);
    conf.denials = NULL;
    /* one malloc arena: a thread per connection needs no arena of its own */
    mallopt(M_ARENA_MAX, 1);
    int maps_fd = -1, pagemap_fd = -1;
    open_own_maps(&maps_fd, &pagemap_fd);
    conf.sandbox.parent = writer;
    if (helper_sandbox_enter(&conf.sandbox, &err) < 0) {
        char *msg = ac_error_string(err);
        if (write_all(status_fd, msg, strlen(msg)) < 0)
            _exit(1);
        _exit(1);
    }
    if (write(status_fd, "R", 1) != 1)
        _exit(1);
    close(status_fd);
    worker_maps_fd = maps_fd;
    worker_pagemap_fd = pagemap_fd;
    egress_conf.first_idle = worker_first_idle;
    egress_worker_serve();
}

/* ================================================================ the writer */

static char *pid_file_path(const char *id) { return xasprintf("%s/%s.pid", conf.pid_dir, id); }

static void audit_or_warn(const char *event, ...) __attribute__((sentinel));
/* Audit from the writer: a failure to write is reported on stderr (the
 * hook's while it starts, /dev/null later), so the decision stands either
 * way (a refusal stays a refusal). */
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

/* A record the worker sent, whose shape egress_record_parse checked: to
 * the log, under our container id. */
static void audit_worker_record(const struct egress_record *rec)
{
    cleanup_free char *members = xstrdup("");
    for (size_t i = 0; i < rec->n; i++) {
        bool number = rec->key[i][0] == '=';
        cleanup_free char *key = audit_json_string(number ? rec->key[i] + 1 : rec->key[i]);
        cleanup_free char *value = number ? xstrdup(rec->value[i]) : audit_json_string(rec->value[i]);
        char *grown = xasprintf("%s%s%s:%s", members, i ? "," : "", key, value);
        free(members);
        members = grown;
    }
    ac_error_t err = NULL;
    if (audit_append(conf.audit_log, rec->event, conf.id, members, &err) < 0)
        ac_error_free(&err);
}

static const char *record_get(const struct egress_record *rec, const char *key)
{
    for (size_t i = 0; i < rec->n; i++)
        if (strcmp(rec->key[i], key) == 0)
            return rec->value[i];
    return NULL;
}

static long long realtime_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A refusal counted; at the limit the container is treated as compromised
 * and killed. With the runtime's denials file the count is the
 * container's (seccomp denials too) and so is the limit; without it (the
 * hook under another runtime) the proxy's own, up to --max-denials. */
static void count_denial(const struct egress_record *rec)
{
    static long own;
    static bool killed;
    long count, limit;
    bool kill_now;
    if (conf.denials) {
        struct denial *slot;
        kill_now = denials_add(conf.denials, DENIAL_EGRESS, (uint64_t)realtime_ms(), &slot) == 1;
        const char *host = record_get(rec, "host"), *port = record_get(rec, "=port"),
                   *reason = record_get(rec, "reason");
        snprintf(slot->text, sizeof(slot->text), "%s%s%s%s%s", host ? host : "", port ? ":" : "", port ? port : "",
                 host ? ": " : "", reason ? reason : "");
        count = (long)__atomic_load_n(&conf.denials->count, __ATOMIC_RELAXED);
        limit = (long)conf.denials->limit;
    } else {
        count = ++own;
        limit = conf.max_denials;
        kill_now = limit > 0 && count >= limit && !killed;
        killed |= kill_now;
    }
    if (!kill_now)
        return;
    char count_s[32], limit_s[32];
    snprintf(count_s, sizeof(count_s), "%ld", count);
    snprintf(limit_s, sizeof(limit_s), "%ld", limit);
    int r = pidfd_send_signal(conf.pidfd, SIGKILL, NULL, 0);
    audit_or_warn("denial-kill", "=denials", count_s, "=limit", limit_s, "source", "egress", "result",
                  r == 0 ? "killed" : "kill failed", "last", record_get(rec, "reason") ? record_get(rec, "reason") : "",
                  NULL);
}

/* remove our pid file unless a newer proxy took the name */
static void remove_pid_file(void)
{
    cleanup_free char *path = pid_file_path(conf.id);
    cleanup_free char *text = NULL;
    size_t len;
    ac_error_t err = NULL;
    if (read_all_file(path, &text, &len, &err) == 0 && atoi(text) == getpid())
        unlink(path);
    ac_error_free(&err);
}

/* How the worker ended, for the audit record. */
static void worker_exit_text(int worker_pidfd, char *out, size_t len)
{
    siginfo_t si = {0};
    if (waitid(P_PIDFD, (id_t)worker_pidfd, &si, WEXITED) < 0)
        snprintf(out, len, "unknown");
    else if (si.si_code == CLD_EXITED)
        snprintf(out, len, "exit %d", si.si_status);
    else
        snprintf(out, len, "signal %s", sigabbrev_np(si.si_status) ? sigabbrev_np(si.si_status) : "?");
}

/* ---------------------------------------------------------------- what the writer tells the worker */

static void put_be(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

/* Is the address one the worker refuses whatever the host holds (loopback,
 * private, link-local, ...)? Such an address need not be in the host's
 * list, which then holds the few public ones however many special ones the
 * host has: containers' bridges, a cluster's pod addresses. */
static bool refused_anyway(int family, const void *addr)
{
    struct sockaddr_in in = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    if (family == AF_INET)
        memcpy(&in.sin_addr, addr, 4);
    else
        memcpy(&in6.sin6_addr, addr, 16);
    return egress_address_refusal(family == AF_INET ? (struct sockaddr *)&in : (struct sockaddr *)&in6) != NULL;
}

/* The host's own addresses, every interface's but those refused anyway,
 * into m (17 bytes each: the family, 4 or 6, and the address) from len up
 * to max; the new length. One
 * RTM_GETADDR dump: getifaddrs dumps every link first, which cost the
 * proxy's start more than the addresses did (issue 20). An address's
 * IFA_LOCAL when it has one (on a point-to-point link IFA_ADDRESS is the
 * peer's), else its IFA_ADDRESS: what getifaddrs reports as ifa_addr.
 * -1 (errno set) when the dump could not be read to its end, or its
 * addresses do not fit (E2BIG): a partial list would let a name lead to an
 * address it lacks. */
static ssize_t read_host_addresses(unsigned char *m, size_t len, size_t max)
{
    cleanup_close int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    struct {
        struct nlmsghdr h;
        struct ifaddrmsg a;
    } req = {.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETADDR, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
                   .nlmsg_seq = 1},
             .a = {.ifa_family = AF_UNSPEC}};
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (fd < 0 || sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
        return -1;
    static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            errno = n == 0 ? EPIPE : errno;
            return -1;
        }
        int left = (int)n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_type == NLMSG_DONE)
                return (ssize_t)len;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                errno = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? -e->error : EIO;
                return -1;
            }
            if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)))
                continue;
            struct ifaddrmsg *a = NLMSG_DATA(h);
            size_t alen = a->ifa_family == AF_INET ? 4 : a->ifa_family == AF_INET6 ? 16 : 0;
            const void *local = NULL, *address = NULL;
            int rlen = (int)IFA_PAYLOAD(h);
            for (struct rtattr *r = IFA_RTA(a); RTA_OK(r, rlen); r = RTA_NEXT(r, rlen)) {
                if (RTA_PAYLOAD(r) < alen)
                    continue;
                if (r->rta_type == IFA_LOCAL)
                    local = RTA_DATA(r);
                else if (r->rta_type == IFA_ADDRESS)
                    address = RTA_DATA(r);
            }
            const void *addr = local ? local : address;
            if (alen == 0 || !addr || refused_anyway(a->ifa_family, addr))
                continue;
            if (len + 17 > max) {
                errno = E2BIG;
                return -1;
            }
            memset(m + len, 0, 17);
            m[len] = alen == 16 ? 6 : 4;
            memcpy(m + len + 1, addr, alen);
            len += 17;
        }
    }
}

/* The host's own addresses (every interface's, read now) to the worker:
 * a name must not lead to one of them. -1 when they could not be read:
 * nothing is sent, so the worker keeps the list it has (at the start it
 * has none and serves nothing: the proxy's start fails). */
static int send_host_addresses(int control_fd)
{
    static unsigned char m[EGRESS_CONTROL_MAX];
    m[0] = 'H';
    ssize_t len = read_host_addresses(m, 1, sizeof(m));
    if (len < 0)
        return -1;
    if (send(control_fd, m, (size_t)len, MSG_NOSIGNAL) < 0) {
        /* the worker is gone: the loop sees it */
    }
    return 0;
}

static void send_answer(int control_fd, char answer, unsigned ask)
{
    unsigned char m[5] = {(unsigned char)answer};
    put_be(m + 1, ask, 4);
    if (send(control_fd, m, sizeof(m), MSG_NOSIGNAL) < 0) {
        /* the worker is gone */
    }
}

/* A netlink socket told of the host's address changes (-1 when none can be
 * had: the list read at start stands). */
static int watch_addresses(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* ---------------------------------------------------------------- requests held for the operator */

static void hold_request(const struct egress_record *rec)
{
    uint64_t ask, port;
    const char *host = record_get(rec, "host"), *method = record_get(rec, "method");
    if (parse_uint64(record_get(rec, "=ask"), &ask) < 0 || ask > UINT32_MAX ||
        parse_uint64(record_get(rec, "=port"), &port) < 0)
        return;
    size_t slot = MAX_HELD;
    for (size_t i = 0; i < MAX_HELD && slot == MAX_HELD; i++)
        if (held[i].ask == 0)
            slot = i;
    ac_error_t err = NULL;
    if (slot == MAX_HELD || approval_egress_hold(conf.approvals_dir, conf.id, (unsigned)ask, method, host, (int)port,
                                                 &err) < 0) {
        ac_error_free(&err);
        return; /* the worker's own deadline refuses it */
    }
    held[slot].ask = (unsigned)ask;
    snprintf(held[slot].host, sizeof(held[slot].host), "%s", host);
    held[slot].port = (int)port;
    held[slot].deadline_ms = mono_ms() + egress_conf.ask_timeout_s * 1000LL;
}

static void release(size_t i, char answer, int control_fd)
{
    send_answer(control_fd, answer, held[i].ask);
    approval_egress_release(conf.approvals_dir, conf.id, held[i].ask);
    held[i].ask = 0;
}

/* The operator's answers for us: an allow with an expiry is an approval
 * the worker keeps; any answer releases the held requests it names. */
static void take_answers(int control_fd)
{
    struct egress_answer a;
    while (approval_egress_take_answer(conf.approvals_dir, conf.id, &a) == 1) {
        if (a.allow && a.until > (int64_t)time(NULL)) {
            unsigned char m[11 + EGRESS_HOST_MAX];
            size_t hl = strlen(a.host);
            m[0] = 'G';
            put_be(m + 1, (uint64_t)a.until, 8);
            put_be(m + 9, (uint64_t)a.port, 2);
            memcpy(m + 11, a.host, hl);
            if (send(control_fd, m, 11 + hl, MSG_NOSIGNAL) < 0) {
                /* the worker is gone */
            }
        }
        for (size_t i = 0; i < MAX_HELD; i++)
            if (held[i].ask && strcmp(held[i].host, a.host) == 0 && (!a.port || a.port == held[i].port))
                release(i, a.allow ? 'Y' : 'N', control_fd);
    }
}

/* Held requests whose time is up; the milliseconds to the next deadline
 * (-1: none). */
static __attribute__((hot)) int expire_held(int control_fd)
{
    long long now = mono_ms(), next = -1;
    for (size_t i = 0; i < MAX_HELD; i++) {
        if (!held[i].ask)
            continue;
        if (held[i].deadline_ms <= now)
            release(i, 'T', control_fd);
        else if (next < 0 || held[i].deadline_ms - now < next)
            next = held[i].deadline_ms - now;
    }
    return next < 0 ? -1 : next > INT_MAX ? INT_MAX : (int)next;
}

/* An inotify watch on the answers' directory (-1 without ask). */
static int watch_answers(void)
{
    if (!egress_conf.ask)
        return -1;
    cleanup_free char *dir = approval_egress_dir(conf.approvals_dir);
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd >= 0 && inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void drain(int fd)
{
    char buf[4096];
    while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* The writer's loop: records in, until the container's init or the worker
 * is gone, or the worker sends something that is not a record. */
static void __attribute__((noreturn, hot, noinline)) run_writer(int record_fd, int control_fd, int worker_pidfd, int maps_fd,
                                                 int pagemap_fd)
{
    static char msg[EGRESS_RECORD_MAX + 1];
    int netlink = watch_addresses(), answers = watch_answers();
    for (;;) {
        struct pollfd p[5] = {{.fd = record_fd, .events = POLLIN},
                              {.fd = conf.pidfd, .events = POLLIN},
                              {.fd = worker_pidfd, .events = POLLIN},
                              {.fd = netlink, .events = POLLIN},
                              {.fd = answers, .events = POLLIN}};
        int timeout = expire_held(control_fd);
        /* the first time there has been nothing to do for a while (and
         * the wait's own functions are bound): what stays mapped is what
         * the wait runs. Not at once: a proxy whose container is over in
         * a moment (a short job) never pays for the shedding */
        bool shed = maps_fd >= 0 && (timeout < 0 || timeout > SHED_AFTER_IDLE_MS);
        int ready = poll(p, 5, shed ? SHED_AFTER_IDLE_MS : timeout);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (ready == 0 && shed) {
            helper_shed_file_pages(maps_fd, pagemap_fd);
            maps_fd = -1;
            continue;
        }
        if (p[3].revents & POLLIN) {
            drain(netlink);
            /* a failed read keeps the list the worker has; the next change retries */
            (void)send_host_addresses(control_fd);
        }
        if (p[4].revents & POLLIN) {
            drain(answers);
            take_answers(control_fd);
        }
        if (p[0].revents & POLLIN) {
            ssize_t n = recv(record_fd, msg, sizeof(msg), MSG_TRUNC);
            struct egress_record rec;
            const char *why = "message too long";
            if (n > 0 && (size_t)n <= EGRESS_RECORD_MAX && egress_record_parse(msg, (size_t)n, &rec, &why) == 0) {
                audit_worker_record(&rec);
                if (send(record_fd, "A", 1, MSG_NOSIGNAL) != 1)
                    break;
                /* the cap's notice is the end of a transfer, not a refusal */
                if (strcmp(rec.event, "egress-deny") == 0 && !record_get(&rec, "=cap"))
                    count_denial(&rec);
                else if (strcmp(rec.event, "egress-ask") == 0 && egress_conf.ask) {
                    hold_request(&rec);
                    take_answers(control_fd);
                }
                continue;
            }
            if (n > 0) {
                /* a worker that sends anything else is not ours any more */
                pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
                audit_or_warn("egress-proxy-stopped", "reason", "bad record from the worker", "detail", why, NULL);
                break;
            }
        }
        if (p[1].revents)
            break; /* the container's init is gone */
        if (p[2].revents || (p[0].revents & (POLLHUP | POLLERR))) {
            char how[64];
            worker_exit_text(worker_pidfd, how, sizeof(how));
            audit_or_warn("egress-proxy-stopped", "reason", "the worker ended", "detail", how, NULL);
            break;
        }
    }
    pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
    for (size_t i = 0; i < MAX_HELD; i++)
        if (held[i].ask)
            approval_egress_release(conf.approvals_dir, conf.id, held[i].ask);
    remove_pid_file();
    _exit(0);
}

/* Our pid file, written whole or not at all. */
static int write_pid_file(ac_error_t *err)
{
    cleanup_free char *path = pid_file_path(conf.id);
    cleanup_free char *tmp = xasprintf("%s.tmp%d", path, getpid());
    cleanup_free char *text = xasprintf("%d", getpid());
    cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
        return ac_error(err, errno, "pid file `%s`", path);
    return 0;
}

static int audit_started(ac_error_t *err)
{
    char port_s[16], rate_s[32], cap_s[32], den_s[32];
    snprintf(port_s, sizeof(port_s), "%d", conf.port);
    snprintf(rate_s, sizeof(rate_s), "%llu", (unsigned long long)egress_conf.rate);
    snprintf(cap_s, sizeof(cap_s), "%llu", (unsigned long long)egress_conf.cap);
    snprintf(den_s, sizeof(den_s), "%ld", conf.denials ? (long)conf.denials->limit : conf.max_denials);
    return audit_record(conf.audit_log, "egress-proxy-started", conf.id, err, "allow", conf.allow_text, "=port",
                        port_s, "=rate", rate_s, "=cap", cap_s, "=max_denials", den_s, "ask",
                        egress_conf.ask ? "on" : "off", NULL);
}

/* Fork the worker and wait until it is confined (its status pipe says 'R'
 * or why not); in between, drop our own privileges. The record and control
 * sockets' ends and the worker's pidfd come back. */
static int start_worker(int listen_fd, int ready, int *record_fd, int *control_fd, int *worker_pidfd,
                        ac_error_t *err)
{
    int rec[2], ctl[2], status[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rec) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0)
        return ac_error(err, errno, "socketpair");
    if (pipe2(status, O_CLOEXEC) < 0)
        return ac_error(err, errno, "pipe");
    /* the writer's bounding set first, which the worker inherits: it then
     * has only CAP_KILL to drop of it */
    int bound = helper_bound_to(1ULL << CAP_KILL, err);
    if (bound < 0)
        return -1;
    conf.sandbox.bounding_left = bound ? 1ULL << CAP_KILL : 0;
    pid_t writer = getpid(), worker = fork();
    if (worker < 0)
        return ac_error(err, errno, "fork the worker");
    if (worker == 0) {
        close(ready);
        run_worker(listen_fd, rec[1], ctl[1], status[1], writer);
    }
    close(listen_fd);
    close(rec[1]);
    close(ctl[1]);
    close(status[1]);
    cleanup_close int status_fd = status[0];
    *record_fd = rec[0];
    *control_fd = ctl[0];
    *worker_pidfd = pidfd_open(worker, 0);
    if (*worker_pidfd < 0) {
        kill(worker, SIGKILL);
        return ac_error(err, errno, "pidfd_open of the worker");
    }
    /* before it serves: the host's addresses, which it waits for */
    if (send_host_addresses(*control_fd) < 0) {
        if (errno == E2BIG)
            return ac_error(err, 0, "egress proxy: the host has more than %d addresses outside the special-purpose "
                            "ranges, the most its list of the host's own addresses holds",
                            EGRESS_HOST_ADDRESSES_MAX);
        return ac_error(err, errno, "egress proxy: read the host's addresses (an RTM_GETADDR dump)");
    }
    /* the writer's own drop: what it writes is all it may touch */
    cleanup_free char *log_copy = xstrdup(conf.audit_log ? conf.audit_log : AUDIT_DEFAULT_LOG);
    cleanup_free char *asks = egress_conf.ask ? approval_egress_dir(conf.approvals_dir) : NULL;
    const char *dirs[] = {dirname(log_copy), conf.pid_dir, asks, NULL}; /* asks NULL: the list ends before */
    if (helper_keep_kill_only(dirs, err) < 0)
        return -1;
    char msg[512];
    ssize_t n;
    do
        n = read(status_fd, msg, sizeof(msg) - 1);
    while (n < 0 && errno == EINTR);
    if (n == 1 && msg[0] == 'R')
        return 0;
    msg[n > 0 ? n : 0] = '\0';
    return ac_error(err, 0, "%s", n > 0 ? msg : "the proxy's worker did not start");
}

/* The daemon, in its own session with stdio on /dev/null: pid file, start
 * record, the worker forked and confined, our own privileges dropped; then
 * 'R' (or the error's line) on ready and the writer's loop. */
static void __attribute__((noreturn)) run_daemon(int listen_fd, int ready)
{
    ac_error_t err = NULL;
    int record_fd = -1, control_fd = -1, worker_pidfd = -1, maps_fd, pagemap_fd;
    open_own_maps(&maps_fd, &pagemap_fd);
    /* no audit trail, no door */
    if (write_pid_file(&err) < 0 || audit_started(&err) < 0 ||
        start_worker(listen_fd, ready, &record_fd, &control_fd, &worker_pidfd, &err) < 0) {
        if (worker_pidfd >= 0)
            pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
        char *line = ac_error_string(err);
        if (write_all(ready, line, strlen(line)) < 0)
            _exit(1);
        remove_pid_file();
        _exit(1);
    }
    /* nobody to tell: the runtime gave the create up before its turn came
     * (it starts the proxy early), as if the container's init had ended */
    if (write(ready, "R", 1) != 1) {
        pidfd_send_signal(worker_pidfd, SIGKILL, NULL, 0);
        remove_pid_file();
        _exit(1);
    }
    close(ready);
    run_writer(record_fd, control_fd, worker_pidfd, maps_fd, pagemap_fd);
}

/* ================================================================ the hook */

/* Bring lo up in the current (the container's) namespace: the proxy binds
 * 127.0.0.1 there before the runtime's own setup may have done it. One
 * RTM_NEWLINK message: lo is interface 1 in every network namespace. */
static int loopback_up_here(ac_error_t *err)
{
    cleanup_close int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0)
        return ac_error(err, errno, "netlink socket in the container's netns");
    struct {
        struct nlmsghdr nh;
        struct ifinfomsg ifi;
    } req = {
        .nh = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_NEWLINK, .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
               .nlmsg_seq = 1},
        .ifi = {.ifi_family = AF_UNSPEC, .ifi_index = 1, .ifi_flags = IFF_UP, .ifi_change = IFF_UP},
    };
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)sizeof(req))
        return ac_error(err, errno, "bring lo up: netlink send");
    struct {
        struct nlmsghdr nh;
        struct nlmsgerr e;
    } ack;
    ssize_t n;
    do
        n = recv(s, &ack, sizeof(ack), 0);
    while (n < 0 && errno == EINTR);
    if (n < (ssize_t)sizeof(ack.nh) + (ssize_t)sizeof(int) || ack.nh.nlmsg_type != NLMSG_ERROR)
        return ac_error(err, n < 0 ? errno : EPROTO, "bring lo up: netlink answer");
    if (ack.e.error != 0)
        return ac_error(err, -ack.e.error, "bring lo up");
    return 0;
}

/* 127.0.0.1:PORT listening in the current network namespace, lo up. */
static int listen_here(ac_error_t *err)
{
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)conf.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (loopback_up_here(err) < 0)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ac_error(err, e, "listen on 127.0.0.1:%d in the container", conf.port);
    }
    return fd;
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
    /* Root (with CAP_SYS_ADMIN in the namespace's owner) steps into the
     * container's namespace for the socket and back: no process to fork. */
    if (geteuid() == 0) {
        if (setns(container_ns, CLONE_NEWNET) < 0)
            return ac_error(err, errno, "setns into the container's network namespace");
        int fd = listen_here(err);
        if (setns(host_ns, CLONE_NEWNET) < 0) {
            /* never carry on in the container's namespace */
            fprintf(stderr, PROG ": cannot return to our network namespace: %s\n", strerror(errno));
            _exit(1);
        }
        return fd;
    }
    /* Rootless, a child enters the container's namespaces, makes the
     * socket and hands it back; we never leave ours (there is no way back). */
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
        int fd = -1;
        /* The capability to enter the container's network namespace is
         * held in its user namespace: enter that first (a no-op when it is
         * ours). */
        char upath[64];
        snprintf(upath, sizeof(upath), "/proc/%d/ns/user", pid);
        int user_ns = open(upath, O_RDONLY | O_CLOEXEC);
        struct stat own, theirs;
        if (user_ns >= 0 && stat("/proc/self/ns/user", &own) == 0 && fstat(user_ns, &theirs) == 0 &&
            own.st_ino != theirs.st_ino && setns(user_ns, CLONE_NEWUSER) < 0)
            ac_error(&e, errno, "setns into the container's user namespace");
        else if (setns(container_ns, CLONE_NEWNET) < 0)
            ac_error(&e, errno, "setns into the container's network namespace");
        else
            fd = listen_here(&e);
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

/* The daemon's fds: the listening socket, the ready pipe and the
 * container's pidfd at fixed numbers above stdio (on /dev/null), every
 * other fd closed: a daemon forked from the runtime would otherwise hold
 * the runtime's (its state directory's lock, the engine's pipes). */
static int daemon_fds(int *listen_fd, int *ready, ac_error_t *err)
{
    int *keep[3] = {listen_fd, ready, &conf.pidfd};
    for (int i = 0; i < 3; i++)
        if ((*keep[i] = fcntl(*keep[i], F_DUPFD_CLOEXEC, 16)) < 0)
            return ac_error(err, errno, "fcntl");
    for (int i = 0; i < 3; i++) {
        if (dup3(*keep[i], 3 + i, O_CLOEXEC) < 0)
            return ac_error(err, errno, "dup3");
        *keep[i] = 3 + i;
    }
    if (close_range(6, ~0U, 0) < 0)
        return ac_error(err, errno, "close_range");
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0)
        return ac_error(err, errno, "/dev/null");
    if (null_fd > 2)
        close(null_fd);
    return 0;
}

/* The daemon start_daemon forked last, whose ready pipe daemon_ready reads
 * (it reaps the daemon when it failed). */
static pid_t daemon_pid;

/* The daemon is one fork in a session of its own, stdio on /dev/null, so
 * it holds no pipe of the runtime or the engine; it is reparented when we
 * exit. It tells us through a pipe that it and its worker are ready, or
 * why not: that pipe's read end is returned, for daemon_ready. Forked from
 * the runtime (conf.in_runtime) it first sheds what an exec would have:
 * the runtime's signal dispositions and mask, its environment (the
 * resolver reads RES_OPTIONS, LOCALDOMAIN, HOSTALIASES), its free heap,
 * and it takes the program's name. */
static int start_daemon(int listen_fd, ac_error_t *err)
{
    if (mkdir_p(conf.pid_dir, 0700, err) < 0)
        return -1;
    struct stat pd;
    if (lstat(conf.pid_dir, &pd) < 0 || !S_ISDIR(pd.st_mode) || pd.st_uid != geteuid())
        return ac_error(err, 0, "pid folder `%s` is not a folder of ours", conf.pid_dir);
    /* (made last: an error above leaves no pipe open in the runtime) */
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return ac_error(err, errno, "pipe");
    pid_t child = fork();
    if (child < 0) {
        close(ready[0]);
        close(ready[1]);
        return ac_error(err, errno, "fork");
    }
    if (child == 0) {
        close(ready[0]);
        if (conf.in_runtime) {
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            signals_default_all();
            clearenv();
            prctl(PR_SET_NAME, PROG, 0, 0, 0);
            malloc_trim(0);
        }
        setsid();
        ac_error_t e = NULL;
        if (daemon_fds(&listen_fd, &ready[1], &e) < 0 || chdir("/") < 0)
            _exit(1);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        run_daemon(listen_fd, ready[1]);
    }
    close(ready[1]);
    daemon_pid = child;
    return ready[0];
}

/* The daemon's 'R' on ready (it and its worker confined), or why not. */
static int daemon_ready(int ready, ac_error_t *err)
{
    char msg[512];
    ssize_t n;
    do
        n = read(ready, msg, sizeof(msg) - 1);
    while (n < 0 && errno == EINTR);
    close(ready);
    if (n == 1 && msg[0] == 'R')
        return 0;
    /* it failed: reap it (it exits right after writing why) */
    while (daemon_pid > 0 && waitpid(daemon_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    msg[n > 0 ? n : 0] = '\0';
    return ac_error(err, 0, "%s", n > 0 ? msg : "the proxy daemon did not start");
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

/* Is pid still a proxy of ours? Its name is the program's (the exec'd
 * program's, or the one the runtime gives the daemon it forks) and its
 * executable this one or one beside it (the runtime, which may have
 * started it in-process). */
static bool is_our_proxy(pid_t pid)
{
    char self[PATH_MAX] = "", exe[PATH_MAX] = "", link[64], comm[32] = "";
    ssize_t a = readlink("/proc/self/exe", self, sizeof(self) - 1);
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t b = readlink(link, exe, sizeof(exe) - 1);
    if (a <= 0 || b <= 0)
        return false;
    self[a] = '\0';
    exe[b] = '\0';
    /* a rebuilt binary shows as "PATH (deleted)" */
    char *deleted = strstr(exe, " (deleted)");
    if (deleted)
        *deleted = '\0';
    snprintf(link, sizeof(link), "/proc/%d/comm", (int)pid);
    cleanup_close int fd = open(link, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
    comm[n > 0 ? n : 0] = '\0';
    comm[strcspn(comm, "\n")] = '\0';
    /* the kernel keeps 15 bytes of a name */
    if (strncmp(comm, PROG, 15) != 0)
        return false;
    char *s = strrchr(self, '/'), *e = strrchr(exe, '/');
    return strcmp(self, exe) == 0 || (s && e && s - self == e - exe && strncmp(self, exe, (size_t)(s - self)) == 0);
}

/* The proxy's worker, as a pidfd taken while its parent (the writer) is
 * alive, so the number cannot have gone to another process (checked: the
 * writer is still its parent); -1 when it has none. */
static int worker_pidfd(pid_t writer)
{
    char path[64], buf[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)writer, (int)writer);
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    buf[n > 0 ? n : 0] = '\0';
    long worker = strtol(buf, NULL, 10);
    if (worker < 2)
        return -1;
    int pidfd = pidfd_open((pid_t)worker, 0);
    if (pidfd >= 0 && process_parent((pid_t)worker) != writer) {
        close(pidfd);
        return -1;
    }
    return pidfd;
}

/* poststop: kill the proxy by its pid file, after making sure that pid is
 * still one of ours (is_our_proxy), and its worker. The worker would die
 * with the writer anyway (PR_SET_PDEATHSIG), but a moment later: both are
 * waited for, so delete returns with no process of the container left. */
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
    if (is_our_proxy((pid_t)pid)) {
        int fds[2] = {pidfd_open((pid_t)pid, 0), worker_pidfd((pid_t)pid)};
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                pidfd_send_signal(fds[i], SIGKILL, NULL, 0);
        for (int i = 0; i < 2; i++) {
            if (fds[i] < 0)
                continue;
            struct pollfd p = {.fd = fds[i], .events = POLLIN};
            poll(&p, 1, 2000);
            close(fds[i]);
        }
        audit_or_warn("egress-proxy-stopped", "=pid", text, NULL);
    }
    unlink(path);
    return 0;
}

/* Who the worker becomes: rootless, who we are (no other uid is ours to
 * take); with host root, the proxy's own system user. */
static int choose_user(const char *user, ac_error_t *err)
{
    bool rootless;
    if (rootless_detect(NULL, &rootless, err) < 0)
        return -1;
    if (rootless) {
        if (user)
            return ac_error(err, 0, "--user `%s`: rootless, the proxy runs as the invoking user", user);
        conf.sandbox.change_user = false;
        return 0;
    }
    const char *name = user ? user : DEFAULT_USER;
    uid_t uid;
    gid_t gid;
    /* /etc/passwd's, where `make install` and the package make it (a
     * system user) */
    if (passwd_file_user(name, 0, &uid, &gid, NULL) < 0)
        return ac_error(err, errno == ENOENT ? 0 : errno,
                        "the proxy's user `%s` does not exist (`make install` creates " DEFAULT_USER
                        ", or give --user)",
                        name);
    if (uid == 0 || gid == 0)
        return ac_error(err, 0, "the proxy's user `%s` is root's uid or gid: it must be unprivileged", name);
    conf.sandbox.change_user = true;
    conf.sandbox.uid = uid;
    conf.sandbox.gid = gid;
    return 0;
}

static void sandbox_port(int port)
{
    struct helper_sandbox *sb = &conf.sandbox;
    for (size_t i = 0; i < sb->n_ports; i++)
        if (sb->ports[i] == port)
            return;
    if (sb->n_ports < HELPER_SANDBOX_PORTS_MAX)
        sb->ports[sb->n_ports++] = port;
}

/* The TCP ports the worker may connect to: those of the allowlist (80 and
 * 443 for an entry without one) and 53 for DNS over TCP. An operator's
 * approval may name any port: with ask on, Landlock does not judge ports
 * (the allowlist and the approvals still do). */
static void sandbox_ports(void)
{
    conf.sandbox.any_port = egress_conf.ask;
    sandbox_port(53);
    for (size_t i = 0; i < egress_conf.allow.n; i++) {
        if (egress_conf.allow.rules[i].port) {
            sandbox_port(egress_conf.allow.rules[i].port);
        } else {
            sandbox_port(80);
            sandbox_port(443);
        }
    }
}

/* The runtime's denials counter for this container ($AGENTCAGE_DENIALS,
 * made by create: conf.denials_path): both pages mapped, the counter and the bytes. Without
 * one, the bytes are counted in memory shared with the worker only. */
static int map_denials(ac_error_t *err)
{
    const char *path = conf.denials_path;
    void *bytes = MAP_FAILED;
    if (path && *path) {
        cleanup_close int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
            return ac_error(err, errno, "the denials counter `%s`", path);
        if (!S_ISREG(st.st_mode) || st.st_size != DENIALS_SIZE || st.st_uid != geteuid())
            return ac_error(err, 0, "the denials counter `%s` is not one the runtime made", path);
        void *counter = mmap(NULL, DENIALS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        bytes = mmap(NULL, DENIALS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, DENIALS_PAGE);
        if (counter == MAP_FAILED || bytes == MAP_FAILED)
            return ac_error(err, errno, "map the denials counter `%s`", path);
        conf.denials = counter;
        if (conf.denials->magic != DENIALS_MAGIC)
            return ac_error(err, 0, "the denials counter `%s` is not one the runtime made", path);
    } else {
        bytes = mmap(NULL, DENIALS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (bytes == MAP_FAILED)
            return ac_error(err, errno, "mmap");
    }
    egress_conf.bytes = bytes;
    return 0;
}

/* io.agentcage.egress-ask: "true" turns holding on, where the operator
 * allows it (--ask); "false" or nothing leaves it off. */
static int ask_from(const struct hook_state *st, bool allowed, ac_error_t *err)
{
    const char *v = hook_state_annotation(st, "io.agentcage.egress-ask");
    if (!v || strcmp(v, "false") == 0)
        return 0;
    if (strcmp(v, "true") != 0)
        return ac_error(err, 0, "annotation io.agentcage.egress-ask: expected true or false, got `%s`", v);
    if (!allowed)
        return ac_error(err, 0, "annotation io.agentcage.egress-ask: the operator does not allow holding requests "
                                "(egress.ask in agentcage.conf)");
    egress_conf.ask = true;
    return 0;
}

/* What the command line (the hook's args) sets besides conf. */
struct egress_args {
    const char *allow, *test, *user, *cidrs;
    uint64_t max_rate, max_bytes, max_denials;
    bool stop, deep, ask_allowed;
    int head_timeout, ask_timeout;
};

#define EGRESS_ARGS_DEFAULT                                                                                    \
    {.max_rate = DEFAULT_RATE, .max_bytes = DEFAULT_BYTES, .max_denials = DEFAULT_MAX_DENIALS,                \
     .head_timeout = DEFAULT_HEAD_TIMEOUT_S, .ask_timeout = DEFAULT_ASK_TIMEOUT_S}

/* The options: 0, 1 after --help, -1 with *err set (a usage error). */
static int parse_args(int argc, char **argv, struct egress_args *a, ac_error_t *err)
{
    enum {
        OPT_AUDIT = 256, OPT_PORT, OPT_ALLOW, OPT_RATE, OPT_BYTES, OPT_DENIALS, OPT_PIDDIR, OPT_TEST, OPT_STOP,
        OPT_USER, OPT_RESOLV, OPT_HEAD_TIMEOUT, OPT_HOSTS, OPT_CIDR, OPT_DEEP, OPT_ASK, OPT_ASK_TIMEOUT, OPT_APPROVALS
    };
    static const struct option opts[] = {
        {"audit-log", required_argument, NULL, OPT_AUDIT}, {"port", required_argument, NULL, OPT_PORT},
        {"allow", required_argument, NULL, OPT_ALLOW},     {"max-rate", required_argument, NULL, OPT_RATE},
        {"max-bytes", required_argument, NULL, OPT_BYTES}, {"max-denials", required_argument, NULL, OPT_DENIALS},
        {"pid-dir", required_argument, NULL, OPT_PIDDIR},  {"test-resolve", required_argument, NULL, OPT_TEST},
        {"user", required_argument, NULL, OPT_USER},       {"resolv-conf", required_argument, NULL, OPT_RESOLV},
        {"head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT}, {"hosts", required_argument, NULL, OPT_HOSTS},
        {"allow-cidr", required_argument, NULL, OPT_CIDR}, {"deep-wildcards", no_argument, NULL, OPT_DEEP},
        {"ask", no_argument, NULL, OPT_ASK},               {"ask-timeout", required_argument, NULL, OPT_ASK_TIMEOUT},
        {"approvals-dir", required_argument, NULL, OPT_APPROVALS},
        {"stop", no_argument, NULL, OPT_STOP},             {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t v;
    conf.approvals_dir = APPROVALS_DEFAULT_DIR;
    int c;
    optind = 0; /* glibc: start over (the runtime may parse twice: create, then delete) */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_AUDIT: conf.audit_log = optarg; break;
        case OPT_PORT:
        case OPT_HEAD_TIMEOUT:
        case OPT_ASK_TIMEOUT: {
            const char *name = c == OPT_PORT ? "--port" : c == OPT_HEAD_TIMEOUT ? "--head-timeout" : "--ask-timeout";
            int max = c == OPT_PORT ? 65535 : 3600;
            if (parse_uint64(optarg, &v) < 0 || v == 0 || v > (uint64_t)max)
                return ac_error(err, 0, "%s: expected 1..%d, got `%s`", name, max, optarg);
            *(c == OPT_PORT ? &conf.port : c == OPT_HEAD_TIMEOUT ? &a->head_timeout : &a->ask_timeout) = (int)v;
            break;
        }
        case OPT_CIDR: a->cidrs = optarg; break;
        case OPT_DEEP: a->deep = true; break;
        case OPT_ASK: a->ask_allowed = true; break;
        case OPT_APPROVALS:
            if (optarg[0] != '/')
                return ac_error(err, 0, "--approvals-dir: expected an absolute path, got `%s`", optarg);
            conf.approvals_dir = optarg;
            break;
        case OPT_ALLOW: a->allow = optarg; break;
        case OPT_RATE:
        case OPT_BYTES:
            if (hook_parse_size(optarg, &v) < 0 || v == 0)
                return ac_error(err, 0, "%s: bad size `%s`", c == OPT_RATE ? "--max-rate" : "--max-bytes", optarg);
            *(c == OPT_RATE ? &a->max_rate : &a->max_bytes) = v;
            break;
        case OPT_DENIALS:
            if (parse_uint64(optarg, &a->max_denials) < 0)
                return ac_error(err, 0, "--max-denials: bad number `%s`", optarg);
            break;
        case OPT_PIDDIR: conf.pid_dir = optarg; break;
        case OPT_TEST: a->test = optarg; break;
        case OPT_USER: a->user = optarg; break;
        case OPT_RESOLV:
        case OPT_HOSTS: {
            struct stat rs;
            if (stat(optarg, &rs) < 0 || !S_ISREG(rs.st_mode))
                return ac_error(err, 0, "%s: `%s` is not a regular file", c == OPT_RESOLV ? "--resolv-conf" : "--hosts",
                                optarg);
            *(c == OPT_RESOLV ? &conf.sandbox.resolv_conf : &conf.sandbox.hosts) = optarg;
            break;
        }
        case OPT_STOP: a->stop = true; break;
        case 'h': usage(stdout); return 1;
        default: return ac_error(err, 0, "unknown option (see --help)");
        }
    }
    if (optind < argc)
        return ac_error(err, 0, "unexpected argument `%s` (see --help)", argv[optind]);
    /* a user who is not root cannot write under /run: the same per-user
     * place for the start and the --stop call */
    static char user_pid_dir[64];
    if (strcmp(conf.pid_dir, DEFAULT_PID_DIR) == 0 && geteuid() != 0) {
        snprintf(user_pid_dir, sizeof(user_pid_dir), "/tmp/agentcage-egress-%u", (unsigned)geteuid());
        conf.pid_dir = user_pid_dir;
    }
    return 0;
}

/* The hook's work once the options and the state are read: start the
 * container's proxy, its ready pipe in *pending for daemon_ready, or
 * (--stop) kill it (*pending HOOK_START_DONE: nothing to wait for). */
static int egress_hook(const struct egress_args *a, const struct hook_state *st, int *pending, ac_error_t *err)
{
    *pending = HOOK_START_DONE;
    conf.id = xstrdup(st->id);
    if (a->stop)
        return stop_proxy(st, err);
    if (st->pid <= 0)
        return ac_error(err, 0, "bad state on stdin: no \"pid\" of the container's init (run as createRuntime hook)");
    const char *allow = a->allow ? a->allow : hook_state_annotation(st, "io.agentcage.egress");
    uint64_t v;
    conf.allow_text = allow ? allow : "";
    egress_conf.head_timeout_s = a->head_timeout;
    egress_conf.ask_timeout_s = a->ask_timeout;
    if (egress_allowlist_parse(allow ? allow : "", a->deep ? EGRESS_HOST_DEEP_WILDCARD : 0, &egress_conf.allow, err) < 0 ||
        (a->cidrs && egress_cidrs_parse(a->cidrs, "--allow-cidr", &egress_conf.allow_cidr, err) < 0) ||
        (a->test && parse_test_resolve(a->test, err) < 0) ||
        limit_from(st, "io.agentcage.egress-rate", a->max_rate, &egress_conf.rate, err) < 0 ||
        limit_from(st, "io.agentcage.egress-bytes", a->max_bytes, &egress_conf.cap, err) < 0 ||
        limit_from(st, "io.agentcage.max-denials", a->max_denials ? a->max_denials : UINT64_MAX, &v, err) < 0 ||
        ask_from(st, a->ask_allowed, err) < 0 || choose_user(a->user, err) < 0 || map_denials(err) < 0)
        return -1;
    /* a ceiling of 0 (never kill) lets the annotation choose a count */
    conf.max_denials = v == UINT64_MAX ? 0 : v > LONG_MAX ? LONG_MAX : (long)v;
    if (egress_conf.rate == 0)
        egress_conf.rate = 1;
    if (egress_conf.ask && mkdir_p(conf.approvals_dir, 0700, err) < 0)
        return -1;
    if (egress_conf.ask) {
        cleanup_free char *dir = approval_egress_dir(conf.approvals_dir);
        if (mkdir_p(dir, 0700, err) < 0)
            return -1;
    }
    conf.sandbox.max_fds = 2 * EGRESS_MAX_CONNECTIONS + 32;
    sandbox_ports();
    conf.pidfd = pidfd_open(st->pid, 0);
    if (conf.pidfd < 0)
        return ac_error(err, errno, "pidfd_open of the container's init %d", st->pid);
    int listen_fd = listen_in_container(st->pid, err);
    if (listen_fd < 0)
        return -1;
    *pending = start_daemon(listen_fd, err);
    close(listen_fd);
    close(conf.pidfd);
    conf.pidfd = -1;
    if (*pending < 0) {
        *pending = HOOK_START_DONE;
        return -1;
    }
    return 0;
}

/* NAME's value in the hook's own env, then in what the runtime adds to
 * every hook's (hooks_extra_env): what an exec'd hook's getenv would see. */
static const char *hook_env(const struct oci_hook *hook, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < hook->n_env; i++)
        if (strncmp(hook->env[i], name, n) == 0 && hook->env[i][n] == '=')
            return hook->env[i] + n + 1;
    const char *extra = hooks_extra_env();
    if (extra && strncmp(extra, name, n) == 0 && extra[n] == '=')
        return extra + n + 1;
    return NULL;
}

/* The same from inside the runtime (hooks_builtin_register_early): the
 * hook's args and env as config.json has them, the state as text; errors
 * come back instead of an exit. The proxy's ready pipe is returned (or
 * HOOK_START_DONE), for egress_builtin_finish: the runtime starts the
 * proxy as soon as the container's network namespace exists and waits for
 * it at the hook's turn, while the container's init sets itself up. */
static int egress_builtin_start(const struct oci_hook *hook, const char *state_json, ac_error_t *err)
{
    struct egress_args a = EGRESS_ARGS_DEFAULT;
    a.test = hook_env(hook, "AGENTCAGE_EGRESS_TEST_RESOLVE");
    conf.denials_path = hook_env(hook, "AGENTCAGE_DENIALS");
    char *default_args[] = {hook->path, NULL};
    char **argv = hook->args ? hook->args : default_args;
    int argc = hook->args ? (int)hook->n_args : 1;
    struct hook_state st;
    int saved_opterr = opterr, r;
    opterr = 0; /* an unknown option is our error message, not getopt's */
    conf.in_runtime = true;
    r = parse_args(argc, argv, &a, err);
    opterr = saved_opterr;
    int pending = HOOK_START_DONE;
    if (r == 0)
        r = hook_state_parse(state_json, &st, err);
    if (r == 0) {
        r = egress_hook(&a, &st, &pending, err);
        hook_state_free(&st);
    }
    if (r < 0)
        return ac_error_wrap(err, PROG);
    return pending;
}

static int egress_builtin_finish(int pending, ac_error_t *err)
{
    return daemon_ready(pending, err) < 0 ? ac_error_wrap(err, PROG) : 0;
}

static int egress_builtin(const struct oci_hook *hook, const char *state_json, ac_error_t *err)
{
    int pending = egress_builtin_start(hook, state_json, err);
    if (pending == HOOK_START_DONE)
        return 0;
    return pending < 0 ? -1 : egress_builtin_finish(pending, err);
}

__attribute__((constructor)) static void egress_builtin_register(void)
{
    hooks_builtin_register_early(PROG, egress_builtin, egress_builtin_start, egress_builtin_finish);
}

int egress_program_main(int argc, char **argv)
{
    cleanup_error ac_error_t err = NULL;
    struct egress_args a = EGRESS_ARGS_DEFAULT;
    a.test = getenv("AGENTCAGE_EGRESS_TEST_RESOLVE");
    conf.denials_path = getenv("AGENTCAGE_DENIALS");
    int r = parse_args(argc, argv, &a, &err);
    if (r == 1)
        return 0;
    if (r < 0) {
        cleanup_free char *msg = ac_error_string(err);
        fprintf(stderr, PROG ": %s\n", msg);
        if (strstr(msg, "unknown option"))
            usage(stderr);
        return 2;
    }
    struct hook_state st;
    int pending;
    if (hook_state_read(0, &st, &err) < 0 || egress_hook(&a, &st, &pending, &err) < 0 ||
        (pending >= 0 && daemon_ready(pending, &err) < 0))
        die_error(&err);
    return 0;
}
