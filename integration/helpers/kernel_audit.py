#!/usr/bin/env python3
"""The kernel's audit switch, for tests that need Landlock's refusals
reported (they are only while audit is enabled): host-wide state, so a test
reads it first and puts it back.

  kernel_audit.py get      prints audit_enabled (0 off, 1 on, 2 locked)
  kernel_audit.py set N    sets it to 0 or 1 (as auditctl -e N)
"""
import socket
import struct
import sys

NETLINK_AUDIT, AUDIT_GET, AUDIT_SET, NLMSG_ERROR = 9, 1000, 1001, 2
NLM_F_REQUEST, NLM_F_ACK, AUDIT_STATUS_ENABLED = 1, 4, 1


def request(kind, payload=b""):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    s.settimeout(2)
    s.bind((0, 0))
    s.send(struct.pack("=IHHII", 16 + len(payload), kind, NLM_F_REQUEST | NLM_F_ACK, 1, 0) + payload)
    status, acked = None, False
    while not acked or (kind == AUDIT_GET and status is None):
        data = s.recv(8192)
        _, t, _, _, _ = struct.unpack("=IHHII", data[:16])
        if t == NLMSG_ERROR:
            err = struct.unpack("=i", data[16:20])[0]
            if err:
                raise OSError(-err, "the kernel's audit")
            acked = True
        elif t == AUDIT_GET:
            status = struct.unpack("=3I", data[16:28])
    return status


if len(sys.argv) == 2 and sys.argv[1] == "get":
    print(request(AUDIT_GET)[1])
elif len(sys.argv) == 3 and sys.argv[1] == "set" and sys.argv[2] in ("0", "1"):
    request(AUDIT_SET, struct.pack("=10I", AUDIT_STATUS_ENABLED, int(sys.argv[2]), *([0] * 8)))
else:
    sys.exit("usage: kernel_audit.py get | set 0|1")
