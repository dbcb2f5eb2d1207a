# The egress proxy against hostile input (issues 23 and 18), driven from
# inside a real tier-2 container: the tier mapping adds the proxy itself,
# from the operator's hooks dir ($T/hooks: the real agentcage-egress with
# test names and a pid dir under $T), with the operator's settings in
# $T/agentcage.conf (the denial kill off, so a long stream of refusals does
# not end the container, and the host's loopback allowed: the test servers
# live there). Everything is checked from the host: the proxy process
# stays up and answers the next good request, and each refusal is in the
# audit log.

source "$IT_DIR/egress_lib.sh"

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

# Hostile requests of every kind, from inside the container; after each
# kind the proxy must still be up and pass a good request, and each refusal
# must be in the audit log. Then 10,000 connections one after the other,
# with the worker's memory read before and after.
test_egress_hostile_requests_tier2() {
    eh_upstreams; eh_hooks_dir
    local id; id="$(new_id)"
    eh_start "$id"
    local good="GET http://allowed.test:$HTTP_PORT/ok HTTP/1.1\r\nHost: allowed.test:$HTTP_PORT\r\n\r\n"

    # huge heads: over 16 KiB of headers, too many lines, a huge target;
    # smuggling shapes: bare LF, a fold, a NUL
    local big many u="http://allowed.test:$HTTP_PORT"
    big="$(head -c 17000 /dev/zero | tr '\0' a)"
    many="$(for i in $(seq 101); do printf 'X%d: y\\r\\n' "$i"; done)"
    eh_refused "$id" "GET $u/ HTTP/1.1\r\nX: $big\r\n\r\n" "431 Request Header Fields Too Large" "request head over 16 KiB"
    eh_refused "$id" "GET $u/ HTTP/1.1\r\n$many\r\n" "400 Bad Request" "too many header lines"
    eh_refused "$id" "GET $u/$(head -c 9000 /dev/zero | tr '\0' p) HTTP/1.1\r\n\r\n" "400 Bad Request" "malformed request line"
    eh_refused "$id" "GET $u/ HTTP/1.1\r\nX: a\nHost: evil.test\r\n\r\n" "400 Bad Request" "control byte in a header value"
    eh_refused "$id" "GET $u/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n" "400 Bad Request" "malformed header line"
    eh_refused "$id" "GET $u/ HTTP/1.1\r\nX: \x00\r\n\r\n" "400 Bad Request" "NUL byte in the request head"
    eh_good "$id" "after huge and malformed heads"
    # the upstream got Host from the URL; a Host naming another host is
    # refused before anything leaves
    grep -q "^Host: allowed.test:$HTTP_PORT" "$T/ports.heads" || fail "upstream head: $(tail -5 "$T/ports.heads")"
    eh_refused "$id" "GET $u/ HTTP/1.1\r\nHost: x\r\n\r\n" "403 Forbidden" 'Host header `x` differs from the URL'"'"'s host'
    grep -qi "^Host: x" "$T/ports.heads" && fail "the client's Host reached the upstream"

    # slow-loris: a byte every 300 ms gets 408 after the 2 s head timeout,
    # and while 8 of them drip, a good request passes
    ein "$id" sh -c "for i in 1 2 3 4 5 6 7 8; do /xbin/egress-client slow 300 '$good' > /tmp/slow.\$i & done
        sleep 0.5; /xbin/egress-client req '$good'; wait; cat /tmp/slow.*"
    assert_eq "$(echo "$OUT" | head -1)" "HTTP/1.0 200 OK" "a good request beside 8 slow ones"
    assert_eq "$(echo "$OUT" | grep -c '^HTTP/1.1 408 Request Timeout after')" 8 "slow-loris answers: $OUT"
    assert_eq "$(grep -c '"reason":"request head not complete within the head timeout"' "$AUDIT")" 8 "slow-loris audited"
    # a CONNECT that never sends its ClientHello
    ein "$id" /xbin/egress-client req "CONNECT allowed.test:$SINK_PORT HTTP/1.1\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.1 200 Connection established" "CONNECT without a hello"
    eh_audit_has '"reason":"no complete TLS ClientHello within the head timeout"'
    eh_good "$id" "after slow-loris"

    # half-closed: a whole request still gets its answer; a cut head a 400;
    # a connection that says nothing, nothing (and no audit)
    ein "$id" /xbin/egress-client halfclose "$good"
    assert_eq "$OUT" "HTTP/1.0 200 OK" "half-closed after a whole request"
    ein "$id" /xbin/egress-client halfclose "GET http://allowed.test:$HTTP_PORT/ HTTP/1.1\r\n"
    assert_eq "$OUT" "HTTP/1.1 400 Bad Request" "half-closed inside the head"
    eh_audit_has '"reason":"connection closed inside the request head"'
    local before; before="$(grep -c '"event":"egress-' "$AUDIT")"
    ein "$id" /xbin/egress-client halfclose ""
    assert_eq "$OUT" "closed" "half-closed at once"
    assert_eq "$(grep -c '"event":"egress-' "$AUDIT")" "$before" "a silent connection audited"
    eh_good "$id" "after half-closed connections"

    # a ClientHello split across records, cut in its header and in the
    # server_name: the sink hears exactly what was sent; naming another
    # host in the later record is refused before anything leaves
    ein "$id" /xbin/egress-client hello "allowed.test:$SINK_PORT" allowed.test 2,40,330
    assert_match "$OUT" '^HTTP/1.1 200 Connection established \| heard ([0-9]+ [0-9a-f]{8}) \| sent \1$' "split hello"
    eh_audit_has "\"method\":\"CONNECT\",\"host\":\"allowed.test\",\"port\":$SINK_PORT"
    ein "$id" /xbin/egress-client hello "allowed.test:$SINK_PORT" other.test 40,330
    assert_match "$OUT" '^HTTP/1.1 200 Connection established \| closed \| sent' "split hello naming another host"
    eh_audit_has '"reason":"TLS SNI `other.test` differs from CONNECT host"'
    eh_good "$id" "after split ClientHellos"

    # more connections at once than the proxy serves: the rest get 503
    ein "$id" /xbin/egress-client flood 80 "$good"
    assert_eq "$OUT" "200=64 503=16" "80 connections at once"
    eh_audit_has '"event":"egress-busy","id":"'"$id"'","connections":64'
    eh_good "$id" "after a flood"

    # 10,000 connections one after the other: good, refused, silent
    local rss0 rss1 t0 t1 n=10000
    rss0="$(rss_kib "$WORKER")"
    t0=$(date +%s%N)
    ein "$id" /xbin/egress-client loop "$n" "$good" "GET http://unlisted.test/ HTTP/1.1\r\nHost: unlisted.test\r\n\r\n" ""
    t1=$(date +%s%N)
    rss1="$(rss_kib "$WORKER")"
    local third=$((n / 3))
    assert_eq "$OUT" "200=$((n - 2 * third)) 403=$third closed=$third" "$n connections"
    echo "$n sequential connections in $(( (t1 - t0) / 1000000 )) ms; worker RSS $rss0 -> $rss1 KiB"
    [ "$rss1" -le $((rss0 + 512)) ] || fail "worker RSS grew from $rss0 to $rss1 KiB over $n connections"
    [ "$rss1" -le 8192 ] || fail "worker RSS $rss1 KiB"
    [ "$(grep -c '"host":"unlisted.test","port":80,"reason":"host not in allowlist"' "$AUDIT")" -ge "$third" ] ||
        fail "not every refusal of the $n is audited"
    eh_good "$id" "after $n connections"
    eh_stop "$id"
    eh_stop_upstreams
}

# The proxy's worker as the host sees it: an unprivileged uid, no
# capabilities, no_new_privs, seccomp, an empty read-only root of its own;
# the writer keeps root with CAP_KILL only. Its resolver still works (a
# name through the test DNS server, refused for resolving to loopback).
test_egress_proxy_unprivileged() {
    eh_upstreams; eh_hooks_dir; eh_dns
    local id; id="$(new_id)"
    eh_start "$id" "dns.test:$HTTP_PORT"
    local st="/proc/$WORKER/status" euid
    euid="$(awk '/^Uid:/ {print $3}' "$st")"
    assert_eq "$euid" "$(id -u agentcage-egress)" "worker uid"
    assert_match "$(grep '^Uid:' "$st")" "^Uid:\s+$euid\s+$euid\s+$euid\s+$euid$" "worker real/saved/fs uid"
    assert_match "$(grep '^Gid:' "$st")" '^Gid:\s+[1-9][0-9]*\s' "worker gid"
    assert_match "$(grep '^Groups:' "$st")" '^Groups:\s*$' "worker groups"
    local f
    for f in CapEff CapPrm CapInh CapBnd CapAmb; do
        assert_eq "$(awk -v f="$f:" '$1 == f {print $2}' "$st")" 0000000000000000 "worker $f"
    done
    assert_eq "$(awk '$1 == "NoNewPrivs:" {print $2}' "$st")" 1 "worker NoNewPrivs"
    assert_eq "$(awk '$1 == "Seccomp:" {print $2}' "$st")" 2 "worker Seccomp"
    [ "$(readlink "/proc/$WORKER/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || fail "worker in the host's mount namespace"
    assert_eq "$(ls "/proc/$WORKER/root/" | tr '\n' ' ')" "etc " "the worker's root"
    assert_eq "$(ls "/proc/$WORKER/root/etc" | tr '\n' ' ')" "gai.conf host.conf hosts nsswitch.conf resolv.conf " "its /etc"
    assert_contains "$(grep ' / ' "/proc/$WORKER/mountinfo" | head -1)" " ro," "its root mounted read-only"
    # the writer
    st="/proc/$PROXY/status"
    assert_eq "$(awk '/^Uid:/ {print $3}' "$st")" 0 "writer uid"
    assert_eq "$(awk '$1 == "CapEff:" {print $2}' "$st")" 0000000000000020 "writer CapEff (CAP_KILL)"
    assert_eq "$(awk '$1 == "CapBnd:" {print $2}' "$st")" 0000000000000020 "writer CapBnd"
    assert_eq "$(awk '$1 == "NoNewPrivs:" {print $2}' "$st")" 1 "writer NoNewPrivs"
    # names resolve in the sandbox: hosts (localhost is not listed, so it
    # goes unresolved) and DNS through resolv.conf
    ein "$id" /xbin/egress-client req "GET http://dns.test:$HTTP_PORT/ HTTP/1.1\r\nHost: dns.test:$HTTP_PORT\r\n\r\n"
    assert_eq "$OUT" "HTTP/1.0 200 OK" "a name through DNS (to loopback, which the operator allows here)"
    eh_audit_has '"method":"GET","host":"dns.test","port":'"$HTTP_PORT"',"address":"127.0.0.1"'
    eh_good "$id" "after a DNS lookup"
    eh_stop "$id"
    eh_stop_upstreams
    kill "$DNS_PID"; wait "$DNS_PID" 2>/dev/null
    return 0
}

# The proxy's sandbox settings, wrong: one line naming the setting, a
# non-zero exit, nothing left behind (no pid file, no process).
test_egress_hook_bad_sandbox_settings() {
    mkdir -p "$T/run"
    local state="{\"id\":\"x\",\"pid\":$$}" e="$REPO_DIR/agentcage-egress"
    OUT="$(echo "$state" | "$e" --audit-log "$AUDIT" --pid-dir "$T/run" --user no-such-user-i23 2>&1)"
    [ $? != 0 ] || fail "a missing user accepted"
    assert_eq "$OUT" "agentcage-egress: the proxy's user \`no-such-user-i23\` does not exist (\`make install\` creates agentcage-egress, or give --user)" "missing user"
    OUT="$(echo "$state" | "$e" --audit-log "$AUDIT" --pid-dir "$T/run" --user root 2>&1)"
    [ $? != 0 ] || fail "root accepted as the proxy's user"
    assert_contains "$OUT" "the proxy's user \`root\` is root's uid or gid"
    OUT="$(echo "$state" | "$e" --audit-log "$AUDIT" --resolv-conf "$T/none" 2>&1)"
    [ $? != 0 ] || fail "a missing --resolv-conf accepted"
    assert_eq "$OUT" "agentcage-egress: --resolv-conf: \`$T/none\` is not a regular file" "missing resolv.conf"
    OUT="$(echo "$state" | "$e" --audit-log "$AUDIT" --head-timeout 0 2>&1)"
    [ $? != 0 ] || fail "--head-timeout 0 accepted"
    assert_contains "$OUT" "--head-timeout: expected 1..3600, got \`0\`"
    assert_eq "$(ls -A "$T/run")" "" "left in the pid dir"
    [ ! -e "$AUDIT" ] || fail "refused starts audited a proxy: $(cat "$AUDIT")"
}
