# Agent policy hooks (hooks/): the egress proxy, the audit trail and the
# approval gate, against real containers and real servers on the host's
# loopback. Until the tier mapping adds the hooks by itself, the tests put
# them into config.json by hand, as an operator of runc or crun would.
# The hook binaries live next to the agentcage binary; under another
# RUNTIME they are still taken from the repository.

HOOKS_BIN="${HOOKS_BIN:-$REPO_DIR}"
AUDIT="$T/audit/audit.jsonl"

# hp_servers: an HTTP and an HTTPS server (self-signed cert) on 127.0.0.1,
# serving $T/www; sets HTTP_PORT and TLS_PORT.
hp_servers() {
    mkdir -p "$T/www"
    echo hello-http > "$T/www/index.txt"
    head -c 2000000 /dev/zero | tr '\0' x > "$T/www/big.bin"
    head -c 1000000 /dev/zero | tr '\0' y > "$T/www/mid.bin"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=allowed.test -days 1 \
        -keyout "$T/key.pem" -out "$T/cert.pem" > /dev/null 2>&1 || fail "openssl cannot make a cert"
    cat > "$T/servers.py" <<'PY'
import functools, http.server, ssl, sys, threading
d, cert, key, out = sys.argv[1:5]
H = functools.partial(http.server.SimpleHTTPRequestHandler, directory=d)
H.log_message = lambda *a: None
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.set_ciphers("ALL:@SECLEVEL=0")  # busybox ssl_client's signature algorithms are old
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
for s in (plain, tls):
    threading.Thread(target=s.serve_forever, daemon=True).start()
open(out + ".tmp", "w").write("%d %d\n" % (plain.server_address[1], tls.server_address[1]))
import os; os.rename(out + ".tmp", out)
threading.Event().wait()
PY
    bg "$PYTHON3" "$T/servers.py" "$T/www" "$T/cert.pem" "$T/key.pem" "$T/ports"
    SERVERS_PID=$BG_PID
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$T/ports" ] && break; sleep 0.05; done
    [ -s "$T/ports" ] || fail "test servers did not start"
    read -r HTTP_PORT TLS_PORT < "$T/ports"
}

hp_stop_servers() {
    kill "$SERVERS_PID" 2>/dev/null
    wait "$SERVERS_PID" 2>/dev/null
    return 0
}

# hp_tools: busybox applets the rootfs has no links for, plus a TLS client
# through the proxy (tls_get_conn, run by `nc -e`, see tls_get below).
hp_tools() {
    mkdir -p "$T/xbin"
    local a
    for a in wget nc ssl_client nslookup env; do ln -sf /bin/busybox "$T/xbin/$a"; done
    cat > "$T/xbin/tls_get_conn" <<'SH'
#!/bin/sh
# run by nc -e: fd 0 and 1 are the proxy connection
exec 3<&0 4>&1
printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$TG_TARGET" "$TG_TARGET" >&4
read -r status <&3
echo "$status" > /tmp/tls_status
while read -r line <&3; do [ "${#line}" -le 1 ] && break; done
printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$TG_PATH" "$TG_SNI" | ssl_client -s 3 -n "$TG_SNI" > /tmp/tls_out 2>/tmp/tls_err
SH
    chmod 755 "$T/xbin/tls_get_conn"
}

# tls_get ID TARGET SNI PATH: output in $OUT (response or empty).
tls_get() {
    run_in "$1" env TG_TARGET="$2" TG_SNI="$3" TG_PATH="$4" /bin/sh -c \
        'rm -f /tmp/tls_out; nc 127.0.0.1 3128 -e /xbin/tls_get_conn; cat /tmp/tls_status /tmp/tls_out /tmp/tls_err 2>/dev/null'
}

# egress_hook_json [--stop]: the egress hook as config.json wants it.
egress_hook_json() {
    jq -n -c --arg p "$HOOKS_BIN/agentcage-egress" --arg log "$AUDIT" --arg run "$T/run" --arg stop "${1:-}" \
        --arg tr "allowed.test=127.0.0.1,other.test=127.0.0.1,unlisted.test=127.0.0.1" \
        '{path: $p, args: ([$p, "--audit-log", $log, "--pid-dir", $run, "--test-resolve", $tr, "--allow-cidr", "127.0.0.0/8"]
                           + (if $stop != "" then ["--stop"] else [] end)), timeout: 10}'
}

# egress_bundle ID EXTRA-ANNOTATIONS-JSON: a container with the egress hook,
# the proxy variables and /xbin.
egress_bundle() {
    local id="$1"
    make_bundle "$id" /bin/probe sleep 600
    cfg --argjson start "$(egress_hook_json)" --argjson stop "$(egress_hook_json --stop)" \
        --arg allow "allowed.test:$HTTP_PORT,allowed.test:$TLS_PORT,other.test:$TLS_PORT" \
        --argjson extra "${2:-{\}}" --arg xbin "$T/xbin" \
        '.hooks = {createRuntime: [$start], poststop: [$stop]}
         | .annotations = ({"io.agentcage.egress": $allow} + $extra)
         | .process.env = ["PATH=/xbin:/bin", "HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
                           "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
                           "NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"]
         | .mounts += [{destination: "/xbin", type: "bind", source: $xbin, options: ["rbind", "ro"]}]'
}

proxy_pid() { cat "$T/run/$1.pid" 2>/dev/null; }

# start_egress_container ID [ANNOTATIONS]: create + start, the proxy tracked.
start_egress_container() {
    egress_bundle "$1" "${2:-}"
    rt_create "$1"
    local p; p="$(proxy_pid "$1")"
    [ -n "$p" ] || fail "no proxy pid file after create: $(cat "$T/$1.err")"
    track_pid "$p"
    echo "$p" > "$T/$1.proxy"
    [ "$(readlink "/proc/$p/exe")" == "$HOOKS_BIN/agentcage-egress" ] || fail "pid $p is not the proxy"
    rt_start "$1"
}

# stop_egress_container ID: delete; the proxy must be gone with it.
stop_egress_container() {
    local p; p="$(cat "$T/$1.proxy")"
    ok rt delete --force "$1"
    local i
    for ((i = 0; i < 40; i++)); do [ -d "/proc/$p" ] || break; sleep 0.05; done
    [ ! -d "/proc/$p" ] || fail "proxy $p outlived its container"
    [ ! -e "$T/run/$1.pid" ] || fail "proxy pid file left"
}

audit_has() { grep -F -- "$1" "$AUDIT" > /dev/null || fail "audit log lacks '$1': $(tail -3 "$AUDIT")"; }

test_egress_allowlist_sni_bypass_udp_and_cap() {
    hp_servers; hp_tools
    local id; id="$(new_id)"
    start_egress_container "$id" '{"io.agentcage.egress-bytes": "1500000"}'

    # allowed host, plain HTTP and TLS, through the proxy
    run_in "$id" wget -q -O- "http://allowed.test:$HTTP_PORT/index.txt"
    assert_eq "$OUT" "hello-http" "allowed http"
    tls_get "$id" "allowed.test:$TLS_PORT" allowed.test /index.txt
    assert_contains "$OUT" "200 Connection established" "CONNECT allowed"
    assert_contains "$OUT" "hello-http" "allowed https"
    audit_has "\"event\":\"egress-allow\",\"id\":\"$id\",\"method\":\"GET\",\"host\":\"allowed.test\",\"port\":$HTTP_PORT"
    audit_has "\"event\":\"egress-allow\",\"id\":\"$id\",\"method\":\"CONNECT\",\"host\":\"allowed.test\",\"port\":$TLS_PORT"

    # a host not on the list (it resolves, but is refused before any lookup)
    run_in "$id" wget -q -O- "http://unlisted.test:$HTTP_PORT/index.txt"
    assert_ne "$RC" 0 "unlisted host"
    assert_not_contains "$OUT" hello-http
    audit_has '"host":"unlisted.test","port":'"$HTTP_PORT"',"reason":"host not in allowlist"'
    # an allowed host on a port not listed for it
    run_in "$id" wget -q -O- "http://allowed.test:1/"
    assert_ne "$RC" 0 "unlisted port"
    audit_has '"host":"allowed.test","port":1,"reason":"port not allowed for this host"'

    # IP literals through the proxy
    run_in "$id" sh -c "no_proxy= NO_PROXY= wget -q -O- http://127.0.0.1:$HTTP_PORT/index.txt"
    assert_ne "$RC" 0 "IP literal"
    assert_not_contains "$OUT" hello-http
    audit_has '"host":"127.0.0.1","port":'"$HTTP_PORT"',"reason":"IP literal not in allowlist"'
    tls_get "$id" "127.0.0.1:$TLS_PORT" allowed.test /index.txt
    assert_not_contains "$OUT" hello-http "CONNECT to an IP literal"
    assert_contains "$OUT" "403" "CONNECT to an IP literal"

    # CONNECT to one allowed host, ClientHello naming another (allowed!) one
    tls_get "$id" "allowed.test:$TLS_PORT" other.test /index.txt
    assert_not_contains "$OUT" hello-http "SNI mismatch"
    audit_has '"reason":"TLS SNI `other.test` differs from CONNECT host"'

    # no proxy: straight TCP to the host's loopback servers, anywhere else, UDP/DNS
    run_in "$id" probe connect 127.0.0.1 "$HTTP_PORT"
    assert_eq "$OUT" ECONNREFUSED "direct TCP to the host's loopback port"
    run_in "$id" probe connect 1.1.1.1 443
    assert_eq "$OUT" ENETUNREACH "direct TCP out"
    run_in "$id" probe udp 1.1.1.1 53
    assert_eq "$OUT" ENETUNREACH "UDP out"
    run_in "$id" nslookup example.com 1.1.1.1
    assert_ne "$RC" 0 "DNS query"
    run_in "$id" sh -c 'printf "GET http://example.com:53/ HTTP/1.0\r\n\r\n" | nc 127.0.0.1 3128'
    assert_contains "$OUT" "403 Forbidden" "DNS port through the proxy"

    # the byte cap: 1.5 MB in all; 2 MB cannot pass, and nothing passes after it
    run_in "$id" sh -c "wget -q -O /tmp/big http://allowed.test:$HTTP_PORT/big.bin; echo rc=\$?; wc -c < /tmp/big"
    assert_not_contains "$OUT" "rc=0" "transfer over the cap"
    local got; got="$(echo "$OUT" | tail -1 | tr -d ' ')"
    [ "${got:-0}" -lt 1500000 ] || fail "got $got bytes past a 1500000-byte cap"
    audit_has '"reason":"byte cap reached, connection closed","cap":1500000'
    run_in "$id" wget -q -O- "http://allowed.test:$HTTP_PORT/index.txt"
    assert_ne "$RC" 0 "request after the cap"
    audit_has '"reason":"byte cap reached"'

    stop_egress_container "$id"
    hp_stop_servers
    ok "$REPO_DIR/agentcage" audit verify "$AUDIT"
    assert_contains "$OUT" "chain intact"
}

test_egress_rate_limit() {
    hp_servers; hp_tools
    local id; id="$(new_id)"
    start_egress_container "$id" '{"io.agentcage.egress-rate": "256k"}'
    local t0 t1
    t0=$(date +%s%N)
    run_in "$id" sh -c "wget -q -O /tmp/mid http://allowed.test:$HTTP_PORT/mid.bin && wc -c < /tmp/mid"
    t1=$(date +%s%N)
    assert_eq "$(echo "$OUT" | tr -d ' ')" 1000000 "download at 256 KiB/s"
    local ms=$(( (t1 - t0) / 1000000 ))
    echo "1000000 bytes at a 256 KiB/s cap (one second of burst): ${ms} ms"
    # 1 s of burst (256 KiB), the remaining ~740 KB at 256 KiB/s: ~2.8 s
    [ "$ms" -ge 2300 ] || fail "rate cap not applied: 1 MB took ${ms} ms"
    stop_egress_container "$id"
    hp_stop_servers
}

test_egress_denials_kill_container() {
    hp_servers; hp_tools
    local id; id="$(new_id)"
    start_egress_container "$id" '{"io.agentcage.max-denials": "3"}'
    local i
    for i in 1 2 3; do run_in "$id" wget -q -O- "http://unlisted.test:$HTTP_PORT/"; done
    wait_status "$id" stopped 5
    audit_has "\"event\":\"denial-kill\",\"id\":\"$id\",\"denials\":3,\"limit\":3"
    stop_egress_container "$id"
    hp_stop_servers
}

test_egress_hook_bad_input_and_help() {
    ok "$HOOKS_BIN/agentcage-egress" --help
    assert_contains "$OUT" "io.agentcage.egress"
    OUT="$(echo 'not json' | "$HOOKS_BIN/agentcage-egress" --audit-log "$AUDIT" 2>&1)"
    [ $? != 0 ] || fail "egress hook accepted garbage"
    assert_eq "$(echo "$OUT" | wc -l)" 1 "one line of error"
    assert_contains "$OUT" "agentcage-egress: bad state on stdin"
    OUT="$(echo '{"id":"../x","pid":1}' | "$HOOKS_BIN/agentcage-egress" --audit-log "$AUDIT" 2>&1)"
    [ $? != 0 ] || fail "egress hook accepted a bad id"
    assert_contains "$OUT" "invalid container id"
    OUT="$(echo '{"id":"x","pid":1,"annotations":{"io.agentcage.egress":"a b"}}' | "$HOOKS_BIN/agentcage-egress" --audit-log "$AUDIT" 2>&1)"
    [ $? != 0 ] || fail "egress hook accepted a bad allowlist"
    assert_contains "$OUT" "bad entry"
    # the host's own network namespace is never a proxy's home
    OUT="$(echo "{\"id\":\"x\",\"pid\":$$}" | "$HOOKS_BIN/agentcage-egress" --audit-log "$AUDIT" --pid-dir "$T/run" 2>&1)"
    [ $? != 0 ] || fail "egress hook started in the host's netns"
    assert_contains "$OUT" "shares the host's network namespace"
    ok "$HOOKS_BIN/agentcage-audit" --help
}

test_audit_verify_names_tampered_line() {
    local i
    for i in 1 2 3 4 5 6; do
        echo "{\"ociVersion\":\"1.2.0\",\"id\":\"c$i\",\"status\":\"running\",\"pid\":1,\"bundle\":\"/b\"}" |
            "$HOOKS_BIN/agentcage-audit" --event container-started --audit-log "$AUDIT" || fail "audit hook failed"
    done
    [ "$(stat -c %a "$(dirname "$AUDIT")")" == 700 ] || fail "audit dir not 0700"
    ok "$REPO_DIR/agentcage" audit verify "$AUDIT"
    assert_contains "$OUT" "6 records, chain intact"
    cp "$AUDIT" "$T/edit.jsonl"; sed -i '3s/"c3"/"cX"/' "$T/edit.jsonl"
    assert_fails "$REPO_DIR/agentcage" audit verify "$T/edit.jsonl"
    assert_contains "$OUT" "edit.jsonl:4: previous-hash mismatch (line removed, reordered or edited"
    cp "$AUDIT" "$T/del.jsonl"; sed -i '5d' "$T/del.jsonl"
    assert_fails "$REPO_DIR/agentcage" audit verify "$T/del.jsonl"
    assert_contains "$OUT" "del.jsonl:5: previous-hash mismatch"
    awk 'NR==2{x=$0;next} NR==3{print; print x; next} {print}' "$AUDIT" > "$T/order.jsonl"
    assert_fails "$REPO_DIR/agentcage" audit verify "$T/order.jsonl"
    assert_contains "$OUT" "order.jsonl:2: previous-hash mismatch"
    assert_fails "$HOOKS_BIN/agentcage-audit" verify "$T/order.jsonl"
    assert_contains "$OUT" "order.jsonl:2:"
}

# The approval gate of tier 3 is the runtime's own: create checks a grant
# for the container's name and its effective config's digest before it
# makes anything, and uses the grant up. art: the runtime with this
# test's approvals and audit trail.
art() { rt --audit-log "$AUDIT" --approvals-dir "$T/state/approvals" "$@"; }

# art_create ID: create with the container's stdio in files (it outlives
# the command), failing the test when create fails.
art_create() {
    art create --bundle "$BUNDLE" "$1" > "$T/$1.out" 2> "$T/$1.err" < /dev/null ||
        fail "create $1 exited $?: $(head -c 600 "$T/$1.err")"
    track_pid "$(cpid "$1")"
}

# approval_bundle ID: a tier-3 container.
approval_bundle() {
    make_bundle "$1" /bin/probe sleep 600
    cfg '.annotations = {"io.agentcage.tier": "3"}'
}

test_approval_gate_refuses_without_grant() {
    local id; id="$(new_id)"
    approval_bundle "$id"
    assert_fails art create --bundle "$BUNDLE" "$id"
    assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "one line: $OUT"
    assert_contains "$OUT" "tier 3: no approval for container $id (config sha256:"
    assert_contains "$OUT" "run \`agentcage approve $id\`"
    assert_fails art state "$id"
    [ -z "$(test_cgroups)" ] || fail "refused create left cgroups: $(test_cgroups)"
    audit_has "\"event\":\"refused\",\"id\":\"$id\""
    # the refusal left a request the operator can see and grant
    ok art approve --list
    assert_contains "$OUT" "$id	sha256:"
}

test_approval_gate_runs_once_with_grant() {
    local id; id="$(new_id)"
    approval_bundle "$id"
    assert_fails art create --bundle "$BUNDLE" "$id"
    ok art approve "$id" --for 10m
    assert_contains "$OUT" "approved $id for 10m, one create of config sha256:"
    assert_eq "$(stat -c %a "$T/state/approvals/$id.grant")" 600 "grant mode"
    assert_eq "$(stat -c %a "$T/state/approvals")" 700 "approvals directory mode"
    art_create "$id"
    ok art start "$id"
    assert_eq "$(cstatus "$id")" running
    ok art delete --force "$id"
    audit_has "\"event\":\"approval-granted\",\"id\":\"$id\""
    audit_has "\"event\":\"approval-used\",\"id\":\"$id\""
    [ -e "$T/state/approvals/$id.grant" ] && fail "the grant was not used up"
    # a grant is used up: the same container again needs a new one
    assert_fails art create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" "no approval for container $id"
    # approving ahead of the first create: the bundle's config, mapped as create maps it
    ok art approve "$id" --bundle "$BUNDLE"
    art_create "$id"
    ok art delete --force "$id"
}

test_approval_bound_to_the_config() {
    local id; id="$(new_id)"
    approval_bundle "$id"
    ok art approve "$id" --bundle "$BUNDLE"
    # the bundle changes after the operator looked: the grant does not hold
    cfg '.annotations["io.agentcage.egress"] = "evil.example.com"'
    assert_fails art create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" "approved for another config"
    assert_fails art state "$id"
}

test_approval_request_id_cannot_be_reused() {
    local a b; a="$(new_id)"; b="$(new_id)"
    approval_bundle "$a"
    cfg '.annotations["io.agentcage.request-id"] = "task-42"'
    ok art approve task-42 --bundle "$BUNDLE"
    art_create "$a"
    ok art delete --force "$a"
    # a new container under the same request id: the grant is gone
    assert_fails art create --bundle "$BUNDLE" "$b"
    assert_contains "$OUT" "no approval for container $b"
    assert_contains "$OUT" "agentcage approve task-42"
}

test_approval_gate_refuses_expired_and_untrusted_grants() {
    local id; id="$(new_id)"
    approval_bundle "$id"
    assert_fails art create --bundle "$BUNDLE" "$id"
    ok art approve "$id" --for 1s
    sleep 2
    assert_fails art create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" "approval expired at"
    # a grant file anyone may write is none
    ok art approve "$id" --for 10m
    chmod 0666 "$T/state/approvals/$id.grant"
    assert_fails art create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" "untrusted grant file"
    # a hand-made grant without a digest is none either
    rm -f "$T/state/approvals/$id.grant"
    ( umask 077; echo "expires=$(( $(date +%s) + 600 ))" > "$T/state/approvals/$id.grant" )
    assert_fails art create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" "malformed grant"
    assert_fails art state "$id"
}

test_approval_one_grant_one_create_under_a_race() {
    local ids=() i
    approval_bundle x
    cfg '.annotations["io.agentcage.request-id"] = "race"'
    ok art approve race --bundle "$BUNDLE"
    for i in 1 2 3 4; do ids+=("$(new_id)"); done
    for i in "${ids[@]}"; do art create --bundle "$BUNDLE" "$i" > "$T/race-$i" 2>&1 < /dev/null & done
    wait
    local made=0
    for i in "${ids[@]}"; do art state "$i" > /dev/null 2>&1 && made=$((made + 1)); done
    assert_eq "$made" 1 "containers created with one grant"
    for i in "${ids[@]}"; do art delete --force "$i" > /dev/null 2>&1; done
    return 0
}
