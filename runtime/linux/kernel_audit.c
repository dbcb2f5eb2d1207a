/* The kernel's audit: a reader for Landlock's records, and its state (see
 * kernel_audit.h). Netlink by hand: two requests and one socket do not
 * call for libaudit. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "runtime/linux/kernel_audit.h"
#include "runtime/linux/landlock_abi.h"
#include "runtime/util/utils.h"

/* The initial namespaces' fixed inode numbers (linux/proc_ns.h); the
 * network namespace's is fixed only in newer kernels, so it is compared
 * with pid 1's too. */
#define PROC_PID_INIT_INO 0xEFFFFFFCu
#define PROC_NET_INIT_INO 0xEFFFFFF9u

static bool same_ns(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

const char *kernel_audit_unreachable(void)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) < 0 || st.st_ino != PROC_PID_INIT_INO)
        return "the runtime is not in the host's pid namespace (the records' pids would not be its)";
    if ((stat("/proc/self/ns/net", &st) < 0 || st.st_ino != PROC_NET_INIT_INO) &&
        !same_ns("/proc/self/ns/net", "/proc/1/ns/net"))
        return "the runtime is not in the host's network namespace (the kernel sends its audit there only)";
    return NULL;
}

int kernel_audit_reader(ac_error_t *err)
{
    /* Landlock's two record types; each kept to 512 bytes (the watchdog
     * reads the start), every other record dropped before it is queued */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, offsetof(struct nlmsghdr, nlmsg_type)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(AC_AUDIT_LANDLOCK_ACCESS), 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(AC_AUDIT_LANDLOCK_DOMAIN), 1, 0),
        BPF_STMT(BPF_RET | BPF_K, 0),
        BPF_STMT(BPF_RET | BPF_K, 512),
    };
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
    cleanup_close int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
    if (fd < 0)
        return ac_error(err, errno, "the kernel's audit: socket");
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
        return ac_error(err, errno, "the kernel's audit: socket filter");
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1u << (AUDIT_NLGRP_READLOG - 1)};
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return ac_error(err, errno, "the kernel's audit: join its multicast");
    return ac_steal_fd(&fd);
}

/* One request (an audit_status when status) and its answers: the ack's
 * error, and for AUDIT_GET the kernel's status (which may come after the
 * ack: the kernel sends it from a thread of its own). */
static int audit_request(uint16_t type, const struct audit_status *set, struct audit_status *got, ac_error_t *err)
{
    cleanup_close int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
    struct timeval tv = {.tv_sec = 2};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
        return ac_error(err, errno, "the kernel's audit: socket");
    struct {
        struct nlmsghdr h;
        struct audit_status s;
    } req = {.h = {.nlmsg_len = NLMSG_LENGTH(set ? sizeof(*set) : 0), .nlmsg_type = type,
                   .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = 1}};
    if (set)
        req.s = *set;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
        return ac_error(err, errno, "the kernel's audit: send");
    bool acked = false, have = got == NULL;
    while (!acked || !have) {
        union {
            struct nlmsghdr h;
            char bytes[1024];
        } buf;
        ssize_t n = recv(fd, &buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < (ssize_t)sizeof(buf.h))
            return ac_error(err, n < 0 ? errno : EPROTO, "the kernel's audit: no answer");
        if (buf.h.nlmsg_type == NLMSG_ERROR && n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
            const struct nlmsgerr *e = NLMSG_DATA(&buf.h);
            if (e->error)
                return ac_error(err, -e->error, "the kernel's audit");
            acked = true;
        } else if (got && buf.h.nlmsg_type == AUDIT_GET) {
            memset(got, 0, sizeof(*got));
            size_t len = (size_t)n - NLMSG_HDRLEN;
            memcpy(got, NLMSG_DATA(&buf.h), len < sizeof(*got) ? len : sizeof(*got));
            have = true;
        }
    }
    return 0;
}

int kernel_audit_state(ac_error_t *err)
{
    struct audit_status s;
    if (audit_request(AUDIT_GET, NULL, &s, err) < 0)
        return -1;
    return (int)s.enabled;
}

int kernel_audit_enable(ac_error_t *err)
{
    struct audit_status s = {.mask = AUDIT_STATUS_ENABLED, .enabled = 1};
    return audit_request(AUDIT_SET, &s, NULL, err);
}
