/* Terminals: the pty for process.terminal, passed out over the console
 * socket, and the proxy `run` uses when it owns the terminal itself. */
#ifndef AGENTCAGE_TERMINAL_H
#define AGENTCAGE_TERMINAL_H

#include "runtime/util/error.h"
#include "spec/spec.h"

/* In the container (after its root is in place): open a pty from /dev/ptmx,
 * size it, send the master over console_fd (SCM_RIGHTS), make the slave the
 * controlling terminal and fds 0, 1, 2. */
int terminal_setup(int console_fd, const struct oci_process *p, ac_error_t *err);
/* Connect to the --console-socket path. */
int console_socket_connect(const char *path, ac_error_t *err);
/* Copy between our stdin/stdout and master until the master closes; puts a
 * tty stdin in raw mode for the duration. */
void terminal_proxy(int master);

#endif
