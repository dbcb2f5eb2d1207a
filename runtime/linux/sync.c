/* Messages between the runtime and the process it is setting up. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/linux/sync.h"
#include "runtime/util/utils.h"

struct sync_header {
    uint32_t type;
    uint32_t len;
};

static int read_exact(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            return got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

int sync_send(int fd, enum sync_type type, const void *data, size_t len)
{
    struct sync_header h = {.type = type, .len = (uint32_t)len};
    if (write_all(fd, &h, sizeof(h)) < 0)
        return -1;
    if (len && write_all(fd, data, len) < 0)
        return -1;
    return 0;
}

int sync_recv(int fd, enum sync_type *type, char **data, size_t *len)
{
    struct sync_header h;
    if (data)
        *data = NULL;
    int r = read_exact(fd, &h, sizeof(h));
    if (r < 0)
        return -1;
    if (r == 0) {
        *type = SYNC_EOF;
        return 0;
    }
    if (h.len > (64u << 20)) {
        errno = EPROTO;
        return -1;
    }
    char *buf = xmalloc(h.len + 1);
    if (h.len && read_exact(fd, buf, h.len) != 1) {
        free(buf);
        errno = EPROTO;
        return -1;
    }
    buf[h.len] = '\0';
    *type = (enum sync_type)h.type;
    if (len)
        *len = h.len;
    if (data)
        *data = buf;
    else
        free(buf);
    return 0;
}

int send_fd(int sock, int fd, const char *name)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof(cbuf));
    struct iovec iov = {.iov_base = (void *)name, .iov_len = strlen(name)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    ssize_t r;
    do
        r = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -1 : 0;
}

int recv_fd(int sock)
{
    char name[4096];
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = name, .iov_len = sizeof(name)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t r;
    do
        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS) {
        errno = EBADMSG;
        return -1;
    }
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}
