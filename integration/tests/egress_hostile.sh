# The egress proxy against hostile input (issue 23), driven from inside a
# real tier-2 container: the tier mapping adds the proxy itself, from the
# operator's hooks dir ($T/hooks: the real agentcage-egress with test
# names, a pid dir under $T and the denial kill off, so a long stream of
# refusals does not end the container). Everything is checked from the
# host: the proxy process stays up and answers the next good request, and
# each refusal is in the audit log.

# the audit log in a directory of its own: a tier refuses bind sources that
# hold or lie in it
AUDIT="$T/audit/audit.jsonl"

# ert ARGS...: the runtime with this test's root, audit log and hooks dir.
ert() { "$RUNTIME" --root "$ROOT" --audit-log "$AUDIT" --hooks-dir "$T/hooks" "$@"; }
# ein ID ARGS...: exec in the container; output in $OUT, status in $RC.
ein() { local id="$1"; shift; OUT="$(ert exec "$id" "$@" 2>&1 < /dev/null)"; RC=$?; }

# eh_upstreams: on the host's loopback, a fast HTTP server answering every
# request with "hello-http", and a sink that reads to EOF and answers with
# what it heard ("heard N FNV1A"). Sets HTTP_PORT, SINK_PORT.
eh_upstreams() {
    cat > "$T/upstreams.py" <<'PY'
import os, socket, sys, threading
out = sys.argv[1]
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
        c.sendall(b"heard %d %08x\n" % (len(d), fnv1a(d)))
    except Exception: pass
    c.close()
def serve(s, f):
    while True:
        c, _ = s.accept()
        threading.Thread(target=f, args=(c,), daemon=True).start()
ports = []
for f in (http, sink):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0)); s.listen(512); ports.append(s.getsockname()[1])
    threading.Thread(target=serve, args=(s, f), daemon=True).start()
open(out + ".tmp", "w").write("%d %d\n" % tuple(ports)); os.rename(out + ".tmp", out)
threading.Event().wait()
PY
    bg "$PYTHON3" "$T/upstreams.py" "$T/ports"
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$T/ports" ] && break; sleep 0.05; done
    [ -s "$T/ports" ] || fail "upstream servers did not start"
    read -r HTTP_PORT SINK_PORT < "$T/ports"
    UPSTREAMS_PID=$BG_PID
}
eh_stop_upstreams() { kill "$UPSTREAMS_PID" 2>/dev/null; wait "$UPSTREAMS_PID" 2>/dev/null; return 0; }

# eh_hooks_dir: the operator's hooks dir, with the client for the container.
eh_hooks_dir() {
    mkdir -p "$T/hooks" "$T/xbin" "$T/run"
    cat > "$T/hooks/agentcage-egress" <<SH
#!/bin/sh
exec "$REPO_DIR/agentcage-egress" --test-resolve allowed.test=127.0.0.1,other.test=127.0.0.1 \\
    --pid-dir "$T/run" --max-denials 0 "\$@"
SH
    chmod 755 "$T/hooks/agentcage-egress"
    gcc -static -O2 -Wall -o "$T/xbin/egress-client" "$REPO_DIR/integration/helpers/egress_client.c" ||
        fail "cannot build egress-client"
}

# eh_start ID: a tier-2 container running sleep, allowed to reach the two
# upstreams by name; sets PROXY to the proxy's pid.
eh_start() {
    local id="$1"
    make_bundle "$id" /bin/sleep 600
    cfg --arg allow "allowed.test:$HTTP_PORT,allowed.test:$SINK_PORT,other.test:$SINK_PORT" --arg xbin "$T/xbin" \
        '.annotations = {"io.agentcage.tier": "2", "io.agentcage.egress": $allow}
         | .mounts += [{destination: "/xbin", type: "bind", source: $xbin, options: ["rbind", "ro"]}]'
    ert create --bundle "$BUNDLE" "$id" > "$T/$id.out" 2> "$T/$id.err" < /dev/null ||
        fail "create $id: $(head -c 600 "$T/$id.err")"
    track_pid "$(cpid "$id")"
    PROXY="$(cat "$T/run/$id.pid" 2>/dev/null)"
    [ -n "$PROXY" ] || fail "no proxy pid file after create"
    track_pid "$PROXY"
    ok ert start "$id"
}

# eh_good ID WHAT: the proxy is alive and passes an allowed request.
eh_good() {
    [ -d "/proc/$PROXY" ] && ! grep -q '^State:.*Z' "/proc/$PROXY/status" || fail "$2: the proxy $PROXY is gone"
    ein "$1" /xbin/egress-client req "GET http://allowed.test:$HTTP_PORT/ok HTTP/1.1\r\nHost: x\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.0 200 OK" "$2: the next good request"
}

eh_audit_has() { grep -F -- "$1" "$AUDIT" > /dev/null || fail "audit log lacks '$1': $(tail -3 "$AUDIT")"; }

eh_stop() {
    ok ert delete --force "$1"
    local i
    for ((i = 0; i < 40; i++)); do [ -d "/proc/$PROXY" ] || break; sleep 0.05; done
    [ ! -d "/proc/$PROXY" ] || fail "proxy $PROXY outlived its container"
}

# Hosts with characters no host name has: before issue 23 the `%` and `\`
# check freed the host and the caller freed it again (a double free the
# container could trigger at will, which killed the proxy).
test_egress_bad_hosts_keep_proxy_up() {
    eh_upstreams; eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id"
    eh_good "$id" "before"
    local target
    for target in 'http://a%41.test/' 'http://a\x5cb.test/' 'http://al\x00lowed.test/' 'http://allowed.test%2f@x/' \
                  'http://[::1%25lo]/' 'http://a b/'; do
        ein "$id" /xbin/egress-client req "GET $target HTTP/1.1\r\n\r\n"
        assert_match "$OUT" '^HTTP/1.1 (400|403) ' "GET $target"
        eh_good "$id" "after GET $target"
    done
    for target in 'a%41.test:443' 'a\x5cb.test:443' 'allowed.test%00:443' '[::1%25lo]:443' 'allowed.test:44%33'; do
        ein "$id" /xbin/egress-client req "CONNECT $target HTTP/1.1\r\n\r\n"
        assert_match "$OUT" '^HTTP/1.1 (400|403) ' "CONNECT $target"
        eh_good "$id" "after CONNECT $target"
    done
    eh_audit_has '"host":"a%41.test:443","port":0,"reason":"malformed CONNECT target"'
    eh_stop "$id"
    eh_stop_upstreams
}
