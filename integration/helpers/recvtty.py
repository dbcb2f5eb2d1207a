#!/usr/bin/python3
"""Console-socket receiver for the integration tests.

usage: recvtty.py SOCKET OUTFILE [INPUT]
Listens on the unix SOCKET, receives the pty master over SCM_RIGHTS from the
runtime, optionally writes INPUT to it, and copies everything read from the
master to OUTFILE until the slave side is closed (EIO) or EOF.
"""
import os
import socket
import sys


def main():
    path, out = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + ".tmp")
    srv.listen(1)
    os.rename(path + ".tmp", path)  # the socket appears only once listening
    conn, _ = srv.accept()
    _, fds, _, _ = socket.recv_fds(conn, 4096, 1)
    conn.close()
    srv.close()
    if not fds:
        print("recvtty: no fd received", file=sys.stderr)
        sys.exit(1)
    master = fds[0]
    with open(out, "wb", buffering=0) as f:
        if len(sys.argv) > 3:
            os.write(master, sys.argv[3].encode())
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            f.write(data)


if __name__ == "__main__":
    main()
