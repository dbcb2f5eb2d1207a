# The egress proxy decides on what leaves (issue 18): every request of a
# connection on its own, bodies by their framing, one TLS session per
# CONNECT, the address a name leads to, wildcards of one label. Driven from
# inside real tier-2 containers against servers this test starts on
# loopback, or on addresses it gives the loopback of a network namespace
# of its own (which the proxy's host side then lives in); never any
# outside address. Where it makes sense the attack is first shown to work
# without the protection (straight at the server, or with the operator's
# exception), then refused through the proxy and audited.

source "$IT_DIR/egress_lib.sh"

# fnv TEXT: the upstreams' FNV-1a of TEXT (printf escapes), in hex.
fnv() {
    "$PYTHON3" -c 'import sys
h = 2166136261
for x in sys.argv[1].encode().decode("unicode_escape").encode("latin-1"): h = ((h ^ x) * 16777619) & 0xffffffff
print("%08x" % h)' "$1"
}

# direct PORT REQUEST: REQUEST (printf escapes) straight to the host's
# loopback server, bypassing the proxy; the replies' body lines.
direct() {
    local out
    # (the server closes after the last answer; the timeout is a cap for a
    # loaded host: 3 s once cut a full suite's answer off)
    out="$(exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "$2" >&3 && timeout 15 cat <&3)"
    echo "$out" | tr -d '\r' | grep '^vhost' | tr '\n' '|'
}

get() { # HOST:PORT PATH [HOST-HEADER]: a request line and head, escaped
    printf 'GET http://%s%s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' "$1" "$2" "${3:-$1}"
}

test_egress_every_request_of_a_connection_decided() {
    eh_upstreams; eh_hooks_dir
    local id v="allowed.test:$VHOST_PORT" e0; id="$(new_id)"
    e0="$(fnv '')"
    eh_start "$id" "other.test:$VHOST_PORT"
    # keep-alive: two requests, one connection upstream, each audited
    ein "$id" /xbin/egress-client conv "$(get "$v" /a)$(get "$v" /b)"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /a body=0:$e0 conn=([0-9]+) \| HTTP/1.1 200 OK \| vhost $v /b body=0:$e0 conn=\1$" "keep-alive"
    eh_audit_has "\"method\":\"GET\",\"host\":\"allowed.test\",\"port\":$VHOST_PORT,\"address\":\"127.0.0.1\",\"path\":\"/a\""
    eh_audit_has "\"method\":\"GET\",\"host\":\"allowed.test\",\"port\":$VHOST_PORT,\"address\":\"127.0.0.1\",\"path\":\"/b\""
    # the second request to another allowed host: its own upstream, its own Host
    ein "$id" /xbin/egress-client conv "$(get "$v" /a)$(get "other.test:$VHOST_PORT" /c)"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /a .* \| HTTP/1.1 200 OK \| vhost other.test:$VHOST_PORT /c " "two hosts"

    # a pipelined second request to a host not on the list: refused, in
    # order, audited, and never at the server
    ein "$id" /xbin/egress-client conv "$(get "$v" /a)$(get unlisted.test /secret)"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /a .* \| HTTP/1.1 403 Forbidden \| agentcage egress: unlisted.test:80 refused: host not in allowlist$" "pipelined to an unlisted host"
    eh_audit_has '"method":"GET","host":"unlisted.test","port":80,"reason":"host not in allowlist"'
    grep -q /secret "$T/ports.vhost" && fail "the pipelined request reached a server"

    # fronting through Host: the server answers for whatever Host says ...
    assert_match "$(direct "$VHOST_PORT" 'GET /f HTTP/1.1\r\nHost: fronted.test\r\nConnection: close\r\n\r\n')" \
        "^vhost fronted.test /f body=0:$e0 conn=[0-9]+\|$" "a virtual-host server, straight"
    # ... so through the proxy Host must be the URL's, on every request
    ein "$id" /xbin/egress-client conv "$(get "$v" /a)$(get "$v" /f fronted.test)"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /a .* \| HTTP/1.1 403 Forbidden \| agentcage egress: allowed.test:$VHOST_PORT refused: Host header .fronted.test. differs from the URL's host$" "fronting on the second request"
    eh_audit_has '"reason":"Host header `fronted.test` differs from the URL'"'"'s host"'
    [ "$(grep -c ' /f$' "$T/ports.vhost")" == 1 ] || fail "a fronted request reached the server through the proxy"
    ein "$id" /xbin/egress-client req "GET http://$v/ HTTP/1.1\r\nHost: $v\r\nHost: fronted.test\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.1 400 Bad Request" "two Host headers"
    ein "$id" /xbin/egress-client req "GET http://$v/ HTTP/1.1\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.1 400 Bad Request" "HTTP/1.1 without Host"
    eh_good "$id" "after the per-request refusals"
    eh_stop "$id"
    eh_stop_upstreams
}

test_egress_request_smuggling_refused() {
    eh_upstreams; eh_hooks_dir
    local id v="allowed.test:$VHOST_PORT"; id="$(new_id)"
    eh_start "$id"
    local head="POST http://$v/s HTTP/1.1\r\nHost: $v\r\n" after; after="$(get unlisted.test /smuggled)"
    # the server reads Content-Length + Transfer-Encoding as chunked, so
    # what follows the empty chunk is a second request to it
    assert_match "$(direct "$VHOST_PORT" "POST /s HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")" \
        '^vhost a /s .*\|vhost a /smuggled ' "the smuggling shape, straight at the server"
    : > "$T/ports.vhost"
    local req why
    for req in "Content-Length: 4\r\nTransfer-Encoding: chunked|both Content-Length and Transfer-Encoding (request smuggling)" \
               "Transfer-Encoding: chunked\r\nContent-Length: 4|both Content-Length and Transfer-Encoding (request smuggling)" \
               "Content-Length: 4\r\nContent-Length: 5|more than one Content-Length" \
               "Content-Length: 4, 4|a Content-Length that is not a decimal number" \
               "Transfer-Encoding: gzip, chunked|a Transfer-Encoding other than chunked" \
               "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked|more than one Transfer-Encoding"; do
        why="${req#*|}"
        ein "$id" /xbin/egress-client conv "$head${req%%|*}\r\n\r\n0\r\n\r\n$after"
        assert_eq "$OUT" "HTTP/1.1 400 Bad Request" "$why"
        eh_audit_has "\"reason\":\"$why\""
    done
    [ -s "$T/ports.vhost" ] && fail "a refused request reached the server: $(cat "$T/ports.vhost")"
    # bodies pass by their framing, and the next request is read where the
    # body ended: chunked with extensions and trailers, and Content-Length
    ein "$id" /xbin/egress-client conv "${head}Transfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n$(get "$v" /after)"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /s body=11:$(fnv 'hello world') conn=[0-9]+ \| HTTP/1.1 200 OK \| vhost $v /after " "a chunked body"
    ein "$id" /xbin/egress-client conv "${head}Content-Length: 5\r\n\r\nhello$(get "$v" /after)"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /s body=5:$(fnv hello) conn=[0-9]+ \| HTTP/1.1 200 OK \| vhost $v /after " "a Content-Length body"
    # a chunked body with a bare LF: the connection ends there, audited;
    # what followed it is not read as a request
    ein "$id" /xbin/egress-client conv "${head}Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n$after"
    assert_not_contains "$OUT" "403" "a bare LF in a chunk line"
    eh_audit_has '"reason":"malformed chunked request body"'
    grep -q /smuggled "$T/ports.vhost" && fail "a request after a malformed body reached the server"
    eh_good "$id" "after smuggling attempts"
    eh_stop "$id"
    eh_stop_upstreams
}

test_egress_connect_is_one_tls_session() {
    eh_upstreams; eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id"
    # two ClientHellos for the CONNECT host: both pass (the second of a
    # HelloRetryRequest is one)
    ein "$id" /xbin/egress-client hello2 "allowed.test:$SINK_PORT" allowed.test allowed.test
    assert_match "$OUT" '^HTTP/1.1 200 Connection established \| heard ([0-9]+ [0-9a-f]{8}) \| sent \1$' "two hellos for the host"
    # a second session for another name in the same tunnel: cut before it leaves
    ein "$id" /xbin/egress-client hello2 "allowed.test:$SINK_PORT" allowed.test other.test
    assert_match "$OUT" '^HTTP/1.1 200 Connection established \| closed \| sent ' "a second hello naming another host"
    eh_audit_has '"reason":"TLS SNI `other.test` of a later ClientHello differs from CONNECT host"'
    local first; first="$(tail -1 "$T/ports.sink" | cut -d' ' -f2)"
    [ "$first" -lt 800 ] || fail "the sink heard $first bytes: more than the first hello"
    eh_good "$id" "after a second TLS session"
    eh_stop "$id"
    eh_stop_upstreams
}

# A network namespace of the test's own, standing in for the host's side
# of the proxy: loopback up, and "public" addresses on it that are the
# "host's" own. EH_NS runs a command there.
eh_netns() {
    NETNS="ac-${TEST_ID}"
    ip netns add "$NETNS" || fail "ip netns add"
    trap eh_netns_del EXIT
    EH_NS=(nsenter "--net=/run/netns/$NETNS")
    "${EH_NS[@]}" ip link set lo up
    "${EH_NS[@]}" ip addr add 8.8.8.8/32 dev lo
    "${EH_NS[@]}" ip addr add 2001:4860::8888/128 dev lo
}
eh_netns_del() { ip netns del "$NETNS" 2>/dev/null; return 0; }

# own_upstreams ADDR: the upstream servers bound on ADDR (in the netns);
# sets OWN_PORT (its vhost) and OWN_PID.
own_upstreams() {
    rm -f "$T/own"
    bg "${EH_NS[@]}" "$PYTHON3" "$T/upstreams.py" "$T/own" "$1"
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$T/own" ] && break; sleep 0.05; done
    [ -s "$T/own" ] || fail "servers on $1 did not start"
    OWN_PORT="$(awk '{print $3}' "$T/own")"
    OWN_PID=$BG_PID
}

test_egress_addresses_a_name_must_not_lead_to() {
    eh_netns
    eh_upstreams
    own_upstreams 8.8.8.8
    # every special range and the host's own addresses, by name through
    # the proxy's hosts file
    local names=(own.test=8.8.8.8 own6.test=2001:4860::8888 loop.test=127.0.0.1 ten.test=10.0.0.1
                 sixteen.test=172.16.5.4 home.test=192.168.1.1 cgnat.test=100.64.0.1 meta.test=169.254.169.254
                 zero.test=0.0.0.0 multi.test=224.0.0.1 doc.test=192.0.2.2 v6loop.test=::1 ula.test=fc00::1
                 aws6.test=fd00:ec2::254 linklocal6.test=fe80::1 mapped10.test=::ffff:10.0.0.1
                 mapped127.test=::ffff:127.0.0.1 mappedmeta.test=::ffff:169.254.169.254 nat64.test=64:ff9b::a9fe:a9fe
                 sixto4.test=2002:a00:1::1) n allow=""
    : > "$T/hosts"
    for n in "${names[@]}"; do
        echo "${n#*=} ${n%%=*}" >> "$T/hosts"
        allow+="${allow:+,}${n%%=*}:$OWN_PORT"
    done
    allow+=",nine.test:$OWN_PORT" # resolves once the host has the address
    EH_HOOK_ARGS="--hosts $T/hosts"
    # first with the operator's exception for the host's own address and
    # loopback: an allowed name reaches the host's own service
    EH_ALLOW_CIDR="8.8.8.8/32,127.0.0.0/8"
    eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id" "$allow"
    ein "$id" /xbin/egress-client req "$(get "own.test:$OWN_PORT" /)"
    assert_eq "$OUT" "HTTP/1.1 200 OK" "the host's own address, allowed by the operator"
    eh_stop "$id"
    # then without it: refused, each with its reason, before any connect
    EH_ALLOW_CIDR=""
    eh_hooks_dir
    id="$(new_id)"
    eh_start "$id" "$allow"
    local before; before="$(wc -l < "$T/own.vhost" 2>/dev/null || echo 0)"
    for n in "${names[@]}"; do
        ein "$id" /xbin/egress-client req "$(get "${n%%=*}:$OWN_PORT" /)"
        assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "${n%%=*}"
        eh_audit_has "\"host\":\"${n%%=*}\",\"port\":$OWN_PORT,\"reason\":\"address ${n#*=} refused: "
    done
    eh_audit_has "\"host\":\"own.test\",\"port\":$OWN_PORT,\"reason\":\"address 8.8.8.8 refused: one of the host's own addresses\""
    eh_audit_has "\"reason\":\"address ::ffff:169.254.169.254 refused: a link-local address (169.254.0.0/16: cloud metadata)\""
    assert_eq "$(wc -l < "$T/own.vhost" 2>/dev/null || echo 0)" "$before" "requests at the host's own server"
    # an address the host gets while the proxy runs is its own at once
    "${EH_NS[@]}" ip addr add 9.9.9.9/32 dev lo
    sleep 0.3
    echo "9.9.9.9 nine.test" >> "$T/hosts"
    # (the hosts file is bound into the proxy's root: an append is seen)
    ein "$id" /xbin/egress-client req "$(get "nine.test:$OWN_PORT" /)"
    assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "an address added later"
    eh_audit_has "\"host\":\"nine.test\",\"port\":$OWN_PORT,\"reason\":\"address 9.9.9.9 refused: one of the host's own addresses\""
    eh_stop "$id"
    eh_stop_upstreams
    kill "$OWN_PID"; wait "$OWN_PID" 2>/dev/null
    eh_netns_del
}

test_egress_a_host_with_many_addresses() {
    # A host with hundreds of addresses (bridges, a cluster's pods): the
    # proxy's list of the host's own addresses must still hold every one
    # the special-range rule would not refuse anyway. Before, the list
    # ended at 256 addresses and a public address after them was reached.
    eh_netns
    eh_upstreams
    local i cmds="$T/addrs"
    : > "$cmds"
    for ((i = 0; i < 300; i++)); do echo "addr add 10.77.$((i / 250)).$((i % 250 + 1))/32 dev lo"; done >> "$cmds"
    for ((i = 0; i < 40; i++)); do echo "addr add 8.8.9.$((i + 1))/32 dev lo"; done >> "$cmds"
    "${EH_NS[@]}" ip -batch "$cmds" || fail "ip -batch: the addresses"
    own_upstreams 8.8.9.40
    echo "8.8.9.40 last.test" > "$T/hosts"
    EH_HOOK_ARGS="--hosts $T/hosts"
    # the operator's exception shows the server is there to be reached
    EH_ALLOW_CIDR="8.8.9.40/32"
    eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id" "last.test:$OWN_PORT"
    ein "$id" /xbin/egress-client req "$(get "last.test:$OWN_PORT" /)"
    assert_eq "$OUT" "HTTP/1.1 200 OK" "the host's 342nd address, allowed by the operator"
    eh_stop "$id"
    EH_ALLOW_CIDR=""
    eh_hooks_dir
    id="$(new_id)"
    eh_start "$id" "last.test:$OWN_PORT"
    local before; before="$(wc -l < "$T/own.vhost" 2>/dev/null || echo 0)"
    ein "$id" /xbin/egress-client req "$(get "last.test:$OWN_PORT" /)"
    assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "the host's 342nd address"
    eh_audit_has "\"host\":\"last.test\",\"port\":$OWN_PORT,\"reason\":\"address 8.8.9.40 refused: one of the host's own addresses\""
    assert_eq "$(wc -l < "$T/own.vhost" 2>/dev/null || echo 0)" "$before" "requests at the host's own server"
    eh_stop "$id"
    kill "$OWN_PID"; wait "$OWN_PID" 2>/dev/null
    # more public addresses than the list holds: no proxy, so no container
    : > "$cmds"
    for ((i = 0; i < 4100; i++)); do echo "addr add 9.$((i / 250 + 1)).$((i % 250 + 1)).1/32 dev lo"; done >> "$cmds"
    "${EH_NS[@]}" ip -batch "$cmds" || fail "ip -batch: 4100 addresses"
    id="$(new_id)"
    make_bundle "$id" /bin/sleep 600
    cfg --arg allow "last.test:$OWN_PORT" '.annotations = {"io.agentcage.tier": "2", "io.agentcage.egress": $allow}'
    ert create --bundle "$BUNDLE" "$id" > "$T/$id.out" 2> "$T/$id.err" < /dev/null &&
        fail "create with 4140 public host addresses succeeded"
    grep -q "egress proxy: the host has more than 4096 addresses outside the special-purpose ranges" "$T/$id.err" ||
        fail "create's error: $(cat "$T/$id.err")"
    [ -e "$ROOT/$id" ] && fail "a failed create left $ROOT/$id"
    eh_stop_upstreams
    eh_netns_del
}

test_egress_wildcards_one_label_deep() {
    eh_upstreams
    printf '127.0.0.1 a.wild.test\n127.0.0.1 a.b.wild.test\n127.0.0.1 x.y.z.wild.test\n' > "$T/hosts"
    EH_HOOK_ARGS="--hosts $T/hosts"
    eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id" "*.wild.test:$VHOST_PORT"
    ein "$id" /xbin/egress-client req "$(get "a.wild.test:$VHOST_PORT" /)"
    assert_eq "$OUT" "HTTP/1.1 200 OK" "one label under *."
    local h
    for h in a.b.wild.test x.y.z.wild.test; do
        ein "$id" /xbin/egress-client req "$(get "$h:$VHOST_PORT" /)"
        assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "$h under *.wild.test"
        eh_audit_has "\"host\":\"$h\",\"port\":$VHOST_PORT,\"reason\":\"more than one label under a *. wildcard\""
    done
    # names are normalised before they are matched: case and trailing dot
    ein "$id" /xbin/egress-client req "$(get "A.WILD.test.:$VHOST_PORT" / "a.wild.test:$VHOST_PORT")"
    assert_eq "$OUT" "HTTP/1.1 200 OK" "a name in another case, with its trailing dot"
    ein "$id" /xbin/egress-client req "GET http://xn--abc.wild.test:$VHOST_PORT/ HTTP/1.1\r\nHost: xn--abc.wild.test:$VHOST_PORT\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "an xn-- label that is no A-label"
    eh_stop "$id"
    # any depth is "**.", which only the operator may allow
    id="$(new_id)"
    make_bundle "$id" /bin/sleep 600
    cfg --arg allow "**.wild.test:$VHOST_PORT" '.annotations = {"io.agentcage.tier": "2", "io.agentcage.egress": $allow}'
    assert_fails ert create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" 'tier 2: annotation io.agentcage.egress: entry `**.wild.test'
    assert_contains "$OUT" '`**.` wildcards (any depth) are not allowed here (the operator'"'"'s egress.deep-wildcards)'
    [ -e "$ROOT/$id" ] && fail "a refused create left its state"
    EH_CONF="egress.deep-wildcards = true"
    eh_hooks_dir
    id="$(new_id)"
    eh_start "$id" "**.wild.test:$VHOST_PORT"
    ein "$id" /xbin/egress-client req "$(get "x.y.z.wild.test:$VHOST_PORT" /)"
    assert_eq "$OUT" "HTTP/1.1 200 OK" "any depth under an operator's **."
    eh_stop "$id"
    eh_stop_upstreams
}

# The proxy's refusals and the seccomp filter's count in one counter: two
# refused syscalls and two refused requests reach a limit of 4, and the
# proxy kills. The container's end says so, with the bytes that went
# through the proxy.
test_egress_and_seccomp_denials_share_one_counter() {
    eh_upstreams
    EH_CONF="max-denials = 10"
    eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id" "" '{"io.agentcage.max-denials": "4"}'
    eh_good "$id" "a request that passes"
    ein "$id" /bin/sh -c '/bin/probe syscall mount /tmp; /bin/probe syscall keyctl' 2>/dev/null
    ein "$id" /xbin/egress-client req "$(get unlisted.test /)"
    assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "the third denial"
    ein "$id" /xbin/egress-client req "$(get unlisted.test /again)"
    wait_status "$id" stopped 5
    eh_audit_has "\"event\":\"denial-kill\",\"id\":\"$id\",\"denials\":4,\"limit\":4,\"source\":\"egress\",\"result\":\"killed\""
    eh_stop "$id"
    local r; r="$(grep -F "\"event\":\"container-exited\",\"id\":\"$id\"" "$AUDIT")"
    assert_contains "$r" '"cause":"denial-kill","signal":"KILL"'
    assert_contains "$r" '"denials":4,"seccompDenials":2,"egressDenials":2,"egressBytesOut":'
    local out in
    out="$(echo "$r" | grep -o '"egressBytesOut":[0-9]*' | cut -d: -f2)"
    in="$(echo "$r" | grep -o '"egressBytesIn":[0-9]*' | cut -d: -f2)"
    [ "$out" -ge 40 ] && [ "$in" -ge 49 ] || fail "bytes through the proxy: out $out, in $in"
    eh_stop_upstreams
}

# held BACKGROUND-OUTPUT REQUEST: REQUEST from inside the container, in the
# background (it waits for the operator); its reply line lands in the file.
held() {
    bg_exec_out="$1"
    ( ert exec "$id" /xbin/egress-client req "$2" > "$bg_exec_out" 2>&1 < /dev/null ) &
    HELD_PID=$!
    track_pid "$HELD_PID"
}
# wait_pending HOST: until `pending` lists a request to HOST (5 s at most)
wait_pending() {
    local i
    for ((i = 0; i < 100; i++)); do
        ert pending | grep -q " $1 " && return 0
        sleep 0.05
    done
    fail "nothing held for $1: $(ert pending 2>&1)"
}

# A human in the loop: with io.agentcage.egress-ask a request outside the
# allowlist is held; the operator sees it (pending), lets it through
# (approve ID --egress), refuses the next (deny), allows ahead (--for), and
# one nobody answers is refused at the timeout. Every decision is audited.
test_egress_ask_held_approved_and_denied() {
    eh_upstreams
    EH_CONF="$(printf 'egress.ask = true\negress.ask-timeout = 4s')"
    eh_hooks_dir
    local id o="other.test:$VHOST_PORT"; id="$(new_id)"
    eh_start "$id" "" '{"io.agentcage.egress-ask": "true"}'
    # held, listed, approved: the request completes
    held "$T/r1" "$(get "$o" /held)"
    wait_pending other.test
    ok ert pending
    assert_match "$OUT" "^CONTAINER +HOST +PORT +METHOD +HELD" "pending's header"
    assert_match "$OUT" "$id +other.test +$VHOST_PORT +GET +20[0-9-]+T" "pending's line"
    ok ert pending --json
    assert_eq "$(echo "$OUT" | jq -r '.[0] | "\(.container) \(.host) \(.port) \(.method)"')" "$id other.test $VHOST_PORT GET" "pending --json"
    ok ert approve "$id" --egress "$o"
    assert_eq "$OUT" "approved 1 held request of container $id to $o" "approve"
    wait "$HELD_PID"
    assert_eq "$(cat "$T/r1")" "HTTP/1.1 200 OK" "the held request, approved"
    eh_audit_has "\"event\":\"egress-ask\",\"id\":\"$id\",\"method\":\"GET\",\"host\":\"other.test\",\"port\":$VHOST_PORT,\"ask\":1"
    eh_audit_has "\"event\":\"egress-approved\",\"id\":\"$id\",\"host\":\"other.test\",\"port\":$VHOST_PORT,\"held\":1,\"until\":0"
    eh_audit_has "\"host\":\"other.test\",\"port\":$VHOST_PORT,\"address\":\"127.0.0.1\",\"path\":\"/held\",\"via\":\"approval\""
    ok ert pending
    assert_eq "$OUT" "nothing held" "pending after the answer"
    # the approval was for what was held: the next request is held again, and denied
    held "$T/r2" "$(get "$o" /again)"
    wait_pending other.test
    ok ert deny "$id" --egress other.test
    assert_eq "$OUT" "denied 1 held request of container $id to other.test" "deny"
    wait "$HELD_PID"
    assert_eq "$(cat "$T/r2")" "HTTP/1.1 403 Forbidden" "the held request, denied"
    eh_audit_has "\"event\":\"egress-refused\",\"id\":\"$id\",\"host\":\"other.test\",\"port\":0,\"held\":1"
    eh_audit_has "\"host\":\"other.test\",\"port\":$VHOST_PORT,\"reason\":\"refused by the operator\""
    grep -q ' /again$' "$T/ports.vhost" && fail "a denied request reached the server"
    # answers for nothing held are refused, unless they allow ahead
    assert_fails ert approve "$id" --egress "nothing.test"
    assert_eq "$OUT" "agentcage: approve: nothing of container $id is held for nothing.test (\`agentcage pending\` lists what is); --for DURATION allows it ahead" "approve of nothing"
    assert_fails ert deny "$id" --egress "a b"
    assert_contains "$OUT" "deny: --egress: \`a b\` is not HOST[:PORT]"
    assert_fails ert deny "$id"
    assert_contains "$OUT" "usage: agentcage deny ID --egress HOST[:PORT]"
    ok ert approve "$id" --egress "$o" --for 10m
    assert_eq "$OUT" "approved $o for container $id for 10m (0 held requests let through)" "approve ahead"
    sleep 0.3
    ein "$id" /xbin/egress-client req "$(get "$o" /ahead)"
    assert_eq "$OUT" "HTTP/1.1 200 OK" "a request approved ahead"
    eh_audit_has "\"path\":\"/ahead\",\"via\":\"approval\""
    # nobody answers: refused at the operator's timeout
    local t0=$SECONDS
    ein "$id" /xbin/egress-client req "$(get "other.test:$HTTP_PORT" /late)"
    assert_eq "$OUT" "HTTP/1.1 403 Forbidden" "an unanswered request"
    [ $((SECONDS - t0)) -ge 3 ] || fail "refused after $((SECONDS - t0)) s, before the 4 s timeout"
    eh_audit_has "\"reason\":\"no operator decision in time\""
    [ -z "$(ls "$T/approvals/egress")" ] || fail "files left in the approvals dir: $(ls "$T/approvals/egress")"
    eh_stop "$id"
    eh_stop_upstreams
    # without the operator's egress.ask the annotation is refused at create
    EH_CONF=""
    eh_hooks_dir
    id="$(new_id)"
    make_bundle "$id" /bin/sleep 600
    cfg '.annotations = {"io.agentcage.tier": "2", "io.agentcage.egress-ask": "true"}'
    assert_fails ert create --bundle "$BUNDLE" "$id"
    assert_contains "$OUT" "tier 2 forbids io.agentcage.egress-ask (the operator does not allow holding requests: egress.ask in agentcage.conf)"
}

# the operator's ceilings (egress.max-rate, egress.max-bytes in
# agentcage.conf) reach the proxy, policy show names them, a bad value is
# one line naming the setting
test_egress_operator_ceilings() {
    eh_upstreams
    EH_CONF="$(printf 'egress.max-rate = 2m\negress.max-bytes = 1k')"
    eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id"
    local args; args="$(tr '\0' ' ' < "/proc/$PROXY/cmdline")"
    assert_contains "$args" "--max-rate 2097152" "the proxy's rate ceiling"
    assert_contains "$args" "--max-bytes 1024" "the proxy's byte ceiling"
    OUT="$(ert policy show --bundle "$BUNDLE" 2>&1)"
    assert_contains "$OUT" "the operator's ceilings 2097152 bytes/s, 1024 bytes in all" "policy show"
    ok ert delete --force "$id"
    EH_CONF="egress.max-bytes = lots"
    eh_hooks_dir
    id="$(new_id)"; make_bundle "$id" /bin/true
    cfg '.annotations = {"io.agentcage.tier": "2"}'
    OUT="$(ert run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"; RC=$?
    assert_ne "$RC" 0 "a bad egress.max-bytes"
    assert_contains "$OUT" 'egress.max-bytes: expected a size like 10m, got `lots`' "the error names the setting"
    eh_stop_upstreams
    return 0
}

# pattern_fnv SIZE [chunked]: the FNV-1a of SIZE pattern bytes (byte i is
# i % 251), or of them as the upstream frames them chunked (chunks of
# 65521) or egress-client uploads them chunked (chunks of 100003).
pattern_fnv() {
    "$PYTHON3" -c 'import sys
size, kind = int(sys.argv[1]), sys.argv[2]
data = (bytes(range(251)) * (size // 251 + 1))[:size]
if kind != "raw":
    step = int(kind)
    data = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + step]), data[i:i + step]) for i in range(0, size, step)) + b"0\r\n\r\n"
h = 2166136261
for x in data: h = ((h ^ x) * 16777619) & 0xffffffff
print(len(data), "%08x" % h)' "$1" "${2:-raw}"
}

# Large bodies and tunnels, relayed in many chunks: what arrives is byte
# for byte what was sent, in both directions, for Content-Length and
# chunked framing and a CONNECT tunnel's records; keep-alive still finds
# the next request where a large body ended; the byte cap cuts a body in
# the middle, and the bytes are counted for the exit record.
test_egress_large_bodies_byte_exact() {
    eh_upstreams
    EH_CONF="egress.max-rate = 1g"
    eh_hooks_dir
    local id v size=4194304; id="$(new_id)"
    v="allowed.test:$VHOST_PORT"
    eh_start "$id"
    local req="GET http://$v/big/length/$size HTTP/1.1\r\nHost: $v\r\nConnection: close\r\n\r\n"
    ein "$id" /xbin/egress-client fetch "$req"
    assert_eq "$OUT" "HTTP/1.1 200 OK | got $(pattern_fnv $size)" "a 4 MiB Content-Length response"
    ein "$id" /xbin/egress-client fetch "GET http://$v/big/chunked/$size HTTP/1.1\r\nHost: $v\r\nConnection: close\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.1 200 OK | got $(pattern_fnv $size 65521)" "a 4 MiB chunked response"
    local head="POST http://$v/up HTTP/1.1\r\nHost: $v\r\n" up
    up="$(pattern_fnv $size | tr ' ' :)"
    ein "$id" /xbin/egress-client upload length "$size" "$head"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /up body=$up conn=[0-9]+$" "a 4 MiB Content-Length request body"
    ein "$id" /xbin/egress-client upload chunked "$size" "$head"
    assert_match "$OUT" "^HTTP/1.1 200 OK \| vhost $v /up body=$up conn=[0-9]+$" "a 4 MiB chunked request body"
    # keep-alive after a large body: the next request on the connection
    # is read where the body ended, decided and answered
    ein "$id" /xbin/egress-client fetch "GET http://$v/big/length/1000000 HTTP/1.1\r\nHost: $v\r\n\r\nGET http://$v/after HTTP/1.1\r\nHost: $v\r\nConnection: close\r\n\r\n"
    local got; got="$(echo "$OUT" | grep -o 'got [0-9]*' | cut -d' ' -f2)"
    grep -q " /after$" "$T/ports.vhost" || fail "the request after a large response did not reach the server"
    [ -n "$got" ] && [ "$got" -gt 1000040 ] || fail "the reply to the request after a large response: $OUT"
    # a tunnel: 256 TLS records of 16 KiB after the ClientHello, heard whole
    ein "$id" /xbin/egress-client tunnel "allowed.test:$SINK_PORT" allowed.test 256
    local sent; sent="$(echo "$OUT" | grep -o 'sent [0-9]* [0-9a-f]*$' | cut -d' ' -f2-)"
    assert_match "$OUT" "^HTTP/1.1 200 Connection established \| heard $sent \| sent " "4 MiB through a CONNECT tunnel"
    eh_stop "$id"
    local r in out
    r="$(grep -F "\"event\":\"container-exited\",\"id\":\"$id\"" "$AUDIT")"
    out="$(echo "$r" | grep -o '"egressBytesOut":[0-9]*' | cut -d: -f2)"
    in="$(echo "$r" | grep -o '"egressBytesIn":[0-9]*' | cut -d: -f2)"
    [ "$in" -ge $((2 * size)) ] && [ "$out" -ge $((3 * size)) ] || fail "bytes through the proxy: out $out, in $in"
    # the byte cap cuts a body where the cap is
    EH_CONF="$(printf 'egress.max-rate = 1g\negress.max-bytes = 1m')"
    eh_hooks_dir
    id="$(new_id)"
    eh_start "$id"
    ein "$id" /xbin/egress-client fetch "$req"
    got="$(echo "$OUT" | grep -o 'got [0-9]*' | cut -d' ' -f2)"
    [ -n "$got" ] && [ "$got" -le 1048576 ] || fail "past the 1 MiB cap: $OUT"
    eh_audit_has '"reason":"byte cap reached, connection closed","cap":1048576'
    eh_stop "$id"
    eh_stop_upstreams
}
