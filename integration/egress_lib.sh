# Helpers of the egress proxy's tests (integration/tests/egress_*.sh),
# sourced by them after lib.sh.

# the audit log in a directory of its own: a tier refuses bind sources that
# hold or lie in it
AUDIT="$T/audit/audit.jsonl"

# ert ARGS...: the runtime with this test's root, audit log, hooks dir,
# approvals dir and operator settings (eh_hooks_dir writes them; EH_CONF adds lines); create
# runs in EH_NS's network namespace, so the proxy's host side is there.
EH_NS=()
ert() {
    local pre=()
    [ "$1" == create ] && pre=("${EH_NS[@]}")
    AGENTCAGE_CONF="$T/agentcage.conf" "${pre[@]}" "$RUNTIME" --root "$ROOT" --audit-log "$AUDIT" --hooks-dir "$T/hooks" \
        --approvals-dir "$T/approvals" "$@"
}
# ein ID ARGS...: exec in the container; output in $OUT, status in $RC.
ein() { local id="$1"; shift; OUT="$(ert exec "$id" "$@" 2>&1 < /dev/null)"; RC=$?; }

# eh_upstreams: on the host's loopback, a fast HTTP/1.0 server answering
# every request with "hello-http", a sink that reads to EOF and answers
# with what it heard ("heard N FNV1A", also in $T/ports.sink), and an
# HTTP/1.1 keep-alive server answering each request with its Host, path,
# body and connection number ("vhost HOST PATH body=N:FNV1A conn=K", each
# request also in $T/ports.vhost; /big/length/N and /big/chunked/N answer
# N bytes, byte i being i % 251, framed so). Sets HTTP_PORT, SINK_PORT, VHOST_PORT.
# With EH_NS (a command prefix: nsenter --net=...) they run in the test's
# own network namespace.
eh_upstreams() {
    cat > "$T/upstreams.py" <<'PY'
import os, socket, sys, threading
out, bind = sys.argv[1], sys.argv[2]
def fnv1a(b):
    h = 2166136261
    for x in b: h = ((h ^ x) * 16777619) & 0xffffffff
    return h
def http(c):
    try:
        c.settimeout(5); d = b""
        while b"\r\n\r\n" not in d:
            x = c.recv(4096)
            if not x: break
            d += x
        open(out + ".heads", "ab").write(d.split(b"\r\n\r\n")[0] + b"\n--\n")
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 11\r\n\r\nhello-http\n")
    except Exception: pass
    c.close()
def sink(c):
    try:
        c.settimeout(5); d = b""
        while True:
            x = c.recv(65536)
            if not x: break
            d += x
        line = b"heard %d %08x\n" % (len(d), fnv1a(d))
        open(out + ".sink", "ab").write(line)
        c.sendall(line)
    except Exception: pass
    c.close()
conns = [0]
def vhost(c):
    # HTTP/1.1 with keep-alive: answers each request with what it got
    # (Host, path, the body's length and hash, which connection)
    conns[0] += 1; n = conns[0]; buf = b""
    try:
        c.settimeout(5)
        while True:
            while b"\r\n\r\n" not in buf:
                x = c.recv(65536)
                if not x: return
                buf += x
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            hdr = {}
            for l in lines[1:]:
                k, _, v = l.partition(b":"); hdr[k.strip().lower()] = v.strip()
            body = b""
            if hdr.get(b"transfer-encoding", b"").lower() == b"chunked":
                while True:
                    while b"\r\n" not in buf: buf += c.recv(65536)
                    size, buf = buf.split(b"\r\n", 1)
                    size = int(size.split(b";")[0], 16)
                    if size == 0:
                        # trailer lines, then the empty one
                        while not buf.startswith(b"\r\n"):
                            while b"\r\n" not in buf: buf += c.recv(65536)
                            buf = buf.split(b"\r\n", 1)[1]
                        buf = buf[2:]
                        break
                    while len(buf) < size + 2: buf += c.recv(65536)
                    body += buf[:size]; buf = buf[size + 2:]
            else:
                cl = int(hdr.get(b"content-length", b"0"))
                while len(buf) < cl: buf += c.recv(65536)
                body, buf = buf[:cl], buf[cl:]
            path = lines[0].split(b" ")[1]
            open(out + ".vhost", "ab").write(b"%d %s %s\n" % (n, hdr.get(b"host", b"-"), path))
            if path.startswith(b"/big/"):
                # /big/length/N, /big/chunked/N: N bytes, byte i being i % 251
                kind, size = path.split(b"/")[2], int(path.split(b"/")[3])
                data = (bytes(range(251)) * (size // 251 + 1))[:size]
                if kind == b"chunked":
                    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 65521]), data[i:i + 65521])
                                       for i in range(0, size, 65521)) + b"0\r\n\r\n")
                else:
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + data)
            else:
                text = b"vhost %s %s body=%d:%08x conn=%d\n" % (hdr.get(b"host", b"-"), path, len(body), fnv1a(body), n)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text))
            if hdr.get(b"connection", b"").lower() == b"close": return
    except Exception: pass
    finally: c.close()
def serve(s, f):
    while True:
        c, _ = s.accept()
        threading.Thread(target=f, args=(c,), daemon=True).start()
ports = []
for f in (http, sink, vhost):
    fam = socket.AF_INET6 if ":" in bind else socket.AF_INET
    s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((bind, 0)); s.listen(512); ports.append(s.getsockname()[1])
    threading.Thread(target=serve, args=(s, f), daemon=True).start()
open(out + ".tmp", "w").write("%d %d %d\n" % tuple(ports)); os.rename(out + ".tmp", out)
threading.Event().wait()
PY
    bg "${EH_NS[@]}" "$PYTHON3" "$T/upstreams.py" "$T/ports" 127.0.0.1
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$T/ports" ] && break; sleep 0.05; done
    [ -s "$T/ports" ] || fail "upstream servers did not start"
    read -r HTTP_PORT SINK_PORT VHOST_PORT < "$T/ports"
    UPSTREAMS_PID=$BG_PID
}
eh_stop_upstreams() { kill "$UPSTREAMS_PID" 2>/dev/null; wait "$UPSTREAMS_PID" 2>/dev/null; return 0; }

# eh_hooks_dir: the operator's hooks dir, with the client for the container.
# The proxy gets test names, a pid dir under $T, no denial kill, a head
# timeout of 2 s (slow-loris in a test's time) and a resolv.conf naming
# $DNS_ADDR, where only eh_dns answers (nothing here asks the host's DNS).
eh_hooks_dir() {
    mkdir -p "$T/hooks" "$T/xbin" "$T/run"
    DNS_ADDR="127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
    echo "nameserver $DNS_ADDR" > "$T/resolv.conf"
    cat > "$T/hooks/agentcage-egress" <<SH
#!/bin/sh
exec "$REPO_DIR/agentcage-egress" --test-resolve allowed.test=127.0.0.1,other.test=127.0.0.1 \\
    --pid-dir "$T/run" --head-timeout 2 --resolv-conf "$T/resolv.conf" ${EH_HOOK_ARGS:-} "\$@"
SH
    chmod 755 "$T/hooks/agentcage-egress"
    printf 'max-denials = 0\negress.allow-cidr = %s\n%s\n' "${EH_ALLOW_CIDR-127.0.0.0/8}" "${EH_CONF:-}" > "$T/agentcage.conf"
    gcc -static -O2 -Wall -o "$T/xbin/egress-client" "$REPO_DIR/integration/helpers/egress_client.c" ||
        fail "cannot build egress-client"
}

# eh_dns: a DNS server on $DNS_ADDR:53 answering every A query with
# 127.0.0.1 (and AAAA with nothing).
eh_dns() {
    cat > "$T/dns.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 53))
open(sys.argv[2], "w").write("up\n")
while True:
    q, peer = s.recvfrom(512)
    i = 12
    while q[i]: i += q[i] + 1
    qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
    ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1") if qtype == 1 else b""
    s.sendto(q[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if ans else 0, 0, 0) + q[12:i + 5] + ans, peer)
PY
    bg "${EH_NS[@]}" "$PYTHON3" "$T/dns.py" "$DNS_ADDR" "$T/dns.up"
    DNS_PID=$BG_PID
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$T/dns.up" ] && break; sleep 0.05; done
    [ -s "$T/dns.up" ] || fail "test DNS server did not start"
}

# eh_start ID [EXTRA-ALLOW [EXTRA-ANNOTATIONS-JSON]]: a tier-2 container
# running sleep, allowed to reach the upstreams by name; sets PROXY (the
# writer, in the pid file) and WORKER (its child, which reads the
# container's bytes).
eh_start() { # ID [EXTRA-ALLOW] [EXTRA-ANNOTATIONS-JSON]; the tier EH_TIER (default 2)
    local id="$1"
    make_bundle "$id" /bin/sleep 600
    cfg --arg allow "allowed.test:$HTTP_PORT,allowed.test:$SINK_PORT,other.test:$SINK_PORT,allowed.test:$VHOST_PORT${2:+,$2}" \
        --arg xbin "$T/xbin" --argjson extra "${3:-{\}}" --arg tier "${EH_TIER:-2}" \
        '.annotations = ({"io.agentcage.tier": $tier, "io.agentcage.egress": $allow} + $extra)
         | .mounts += [{destination: "/xbin", type: "bind", source: $xbin, options: ["rbind", "ro"]}]'
    ert create --bundle "$BUNDLE" "$id" > "$T/$id.out" 2> "$T/$id.err" < /dev/null ||
        fail "create $id: $(head -c 600 "$T/$id.err")"
    track_pid "$(cpid "$id")"
    PROXY="$(cat "$T/run/$id.pid" 2>/dev/null)"
    [ -n "$PROXY" ] || fail "no proxy pid file after create"
    track_pid "$PROXY"
    WORKER="$(ps -o pid= --ppid "$PROXY" | tr -d ' ')"
    [ -n "$WORKER" ] || fail "the proxy $PROXY has no worker"
    track_pid "$WORKER"
    ok ert start "$id"
}

alive() { [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# eh_good ID WHAT: the proxy is alive and passes an allowed request.
eh_good() {
    alive "$PROXY" && alive "$WORKER" || fail "$2: the proxy ($PROXY, worker $WORKER) is gone"
    ein "$1" /xbin/egress-client req "GET http://allowed.test:$HTTP_PORT/ok HTTP/1.1\r\nHost: allowed.test:$HTTP_PORT\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.0 200 OK" "$2: the next good request"
}

eh_audit_has() { grep -F -- "$1" "$AUDIT" > /dev/null || fail "audit log lacks '$1': $(tail -3 "$AUDIT")"; }

# eh_refused ID REQUEST STATUS REASON: the proxy answers REQUEST with STATUS
# and audits REASON.
eh_refused() {
    ein "$1" /xbin/egress-client req "$2"
    assert_eq "$OUT" "HTTP/1.1 $3" "$(echo "$2" | head -c 60)..."
    eh_audit_has "\"reason\":\"$4\""
}

eh_stop() {
    ok ert delete --force "$1"
    local i
    for ((i = 0; i < 40; i++)); do alive "$PROXY" || alive "$WORKER" || break; sleep 0.05; done
    alive "$PROXY" && fail "proxy $PROXY outlived its container"
    alive "$WORKER" && fail "the proxy's worker $WORKER outlived its container"
    ok "$REPO_DIR/agentcage" audit verify "$AUDIT"
}

