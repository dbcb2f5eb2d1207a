#!/usr/bin/python3
"""ptyrun.py TIMEOUT CMD...: runs CMD on a fresh pseudo-terminal (so that
`docker run -it`, `podman run -it` and `ctr run -t` see a real terminal),
types the lines read from our stdin into it once CMD has printed something
(or after a second), prints everything CMD wrote to the terminal and exits
with CMD's exit status (124 on timeout)."""
import os
import pty
import select
import signal
import sys
import time


def main():
    timeout = float(sys.argv[1])
    cmd = sys.argv[2:]
    typed = sys.stdin.read().encode()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    out = b""
    start = time.monotonic()
    sent = not typed
    while True:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sys.stdout.write(out.decode(errors="replace"))
            sys.exit(124)
        if not sent and (out or time.monotonic() - start > 1.0):
            time.sleep(0.3)
            os.write(fd, typed)
            sent = True
        r, _, _ = select.select([fd], [], [], 0.1)
        if fd in r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            out += data
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(out.decode(errors="replace"))
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)


if __name__ == "__main__":
    main()
