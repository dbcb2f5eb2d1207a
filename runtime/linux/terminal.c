/* Terminals for process.terminal. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "runtime/linux/sync.h"
#include "runtime/linux/terminal.h"
#include "runtime/util/utils.h"

int terminal_setup(int console_fd, const struct oci_process *p, ac_error_t *err)
{
    cleanup_close int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        return ac_error(err, errno, "terminal: open /dev/ptmx");
    int unlock = 0;
    if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
        return ac_error(err, errno, "terminal: unlock pty");
    /* TIOCGPTPEER opens the slave through the master, with no path lookup
     * a container could redirect. */
    cleanup_close int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
    if (slave < 0)
        return ac_error(err, errno, "terminal: open pty slave");
    /* The terminal belongs to the process's user (its group stays devpts's
     * gid=, the tty group), so it can set its modes and `mesg` works; a user
     * namespace that does not map the user leaves it as it is. */
    if (fchown(slave, p->user.uid, (gid_t)-1) < 0 && errno != EINVAL && errno != EPERM)
        return ac_error(err, errno, "terminal: chown the pty to uid %u", p->user.uid);
    if (p->has_console_size) {
        struct winsize ws = {.ws_row = (unsigned short)p->console_height, .ws_col = (unsigned short)p->console_width};
        if (ioctl(slave, TIOCSWINSZ, &ws) < 0)
            return ac_error(err, errno, "terminal: set size");
    }
    if (send_fd(console_fd, master, "/dev/ptmx") < 0)
        return ac_error(err, errno, "terminal: send the pty master over the console socket");
    if (ioctl(slave, TIOCSCTTY, 0) < 0)
        return ac_error(err, errno, "terminal: make it the controlling terminal");
    for (int i = 0; i < 3; i++)
        if (dup2(slave, i) < 0)
            return ac_error(err, errno, "terminal: dup2");
    return 0;
}

int console_socket_connect(const char *path, ac_error_t *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(addr.sun_path))
        return ac_error(err, 0, "--console-socket `%s`: path too long", path);
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ac_error(err, errno, "--console-socket: socket");
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int e = errno;
        close(fd);
        return ac_error(err, e, "--console-socket: connect to `%s`", path);
    }
    return fd;
}

static struct termios saved_termios;
static int termios_saved;

static void restore_tty(void)
{
    if (termios_saved)
        tcsetattr(0, TCSANOW, &saved_termios);
}

void terminal_proxy(int master)
{
    if (isatty(0) && tcgetattr(0, &saved_termios) == 0) {
        struct termios raw = saved_termios;
        cfmakeraw(&raw);
        if (tcsetattr(0, TCSANOW, &raw) == 0) {
            termios_saved = 1;
            atexit(restore_tty);
        }
        struct winsize ws;
        if (ioctl(0, TIOCGWINSZ, &ws) == 0)
            ioctl(master, TIOCSWINSZ, &ws);
    }
    struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = master, .events = POLLIN}};
    char buf[8192];
    for (;;) {
        int r = poll(fds, 2, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[0].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n <= 0)
                fds[0].fd = -1; /* stdin closed: keep draining output */
            else if (write_all(master, buf, (size_t)n) < 0)
                break;
        }
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(master, buf, sizeof(buf));
            if (n <= 0)
                break;
            if (write_all(1, buf, (size_t)n) < 0)
                break;
        }
    }
    restore_tty();
    termios_saved = 0;
}
