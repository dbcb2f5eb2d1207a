# Every denial is a signal and every end is in the trail (issue 18), in
# real tiered containers: a refused syscall at tiers 1-3 goes to the
# container's watchdog, which answers EPERM and counts it with the egress
# proxy's refusals; at io.agentcage.max-denials it kills the container and
# delete audits denial-kill with the last denials. Each container's end is
# a container-exited record: exit status or signal, why (exited, signal,
# oom-kill, timeout-kill, denial-kill, delete-kill), wall time, peak memory,
# OOM kills, denials.

source "$IT_DIR/tiers_lib.sh"

AUDIT="$T/state/audit.jsonl"

# the last record of EVENT for the last attack's container
record_of() { grep -F "\"event\":\"$1\",\"id\":\"$CID\"" "$AUDIT" | tail -1; }
# started TIER ANNOTATIONS ARGS...: a created and started container (CID)
# of TIER, with more annotations (JSON), running ARGS
started() {
    local tier="$1" ann="$2"; shift 2
    CID="$(new_id)"
    make_bundle "$CID" "$@"
    cfg --arg t "$tier" --argjson a "$ann" '.annotations = ({"io.agentcage.tier": $t} + $a)'
    trt create --bundle "$BUNDLE" "$CID" > "$T/c.out" 2>&1 < /dev/null || fail "create: $(cat "$T/c.out")"
    track_pid "$(cpid "$CID")"
    ok trt start "$CID"
}

# has RECORD FRAGMENT...: the record holds every fragment
has() {
    local r="$1" f; shift
    for f in "$@"; do
        case "$r" in *"$f"*) ;; *) fail "record lacks '$f': $r" ;; esac
    done
}

test_seccomp_denials_kill_at_the_limit() {
    local loop='i=0; while [ $i -lt 30 ]; do /bin/probe syscall mount /tmp > /dev/null; i=$((i + 1)); done; echo survived'
    # without a limit (the operator's max-denials 0) the loop of refused
    # syscalls runs through, each refusal counted
    export AGENTCAGE_CONF="$T/agentcage.conf"
    echo "max-denials = 0" > "$AGENTCAGE_CONF"
    sh_attack 1 "$loop"
    assert_eq "$OUT" survived "30 refused syscalls, no limit"
    has "$(record_of container-exited)" '"cause":"exited","exitStatus":0' '"denials":30,"seccompDenials":30,"egressDenials":0'
    # with the operator's default ceiling and a tighter annotation: killed at the 5th
    rm -f "$AGENTCAGE_CONF"
    ATTACK_ANN='{"io.agentcage.max-denials": "5"}'
    sh_attack 1 "$loop"
    assert_eq "$RC" 137 "the container killed ($OUT)"
    assert_not_contains "$OUT" survived
    has "$(record_of denial-kill)" '"denials":5,"limit":5,"source":"seccomp","result":"killed","last":[{"seq":1,' \
        '"source":"seccomp","syscall":"mount","nr":165,'
    has "$(record_of container-exited)" '"cause":"denial-kill","signal":"KILL",' '"seccompDenials":5,'
    # the killed container's last refused call never returned to it
    [ "$(record_of denial-kill | grep -o '"source":"seccomp","syscall"' | wc -l)" == 5 ] ||
        fail "five denials listed: $(record_of denial-kill)"
    ok "$REPO_DIR/agentcage" audit verify "$AUDIT"
}

test_exec_denials_count_too() {
    started 2 '{"io.agentcage.max-denials": "3"}' /bin/sleep 60
    OUT="$(trt exec "$CID" /bin/sh -c '/bin/probe syscall mount /tmp; /bin/probe syscall keyctl' 2>&1 < /dev/null)"
    assert_eq "$(echo $OUT)" "EPERM EPERM" "refused in an exec"
    OUT="$(trt exec "$CID" /bin/sh -c '/bin/probe syscall bpf; echo after' 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 137 "the exec at the third denial ($OUT)"
    wait_status "$CID" stopped 5
    ok trt delete "$CID"
    has "$(record_of denial-kill)" '"denials":3,"limit":3' '"syscall":"mount"' '"syscall":"keyctl"' '"syscall":"bpf"'
    has "$(record_of container-exited)" '"cause":"denial-kill"' '"egressBytesOut":0,"egressBytesIn":0'
}

test_every_end_is_in_the_trail() {
    # an exit status
    attack 1 /bin/probe exit 3
    assert_eq "$RC" 3 "exit 3"
    local r; r="$(record_of container-exited)"
    has "$r" '"tier":1,"cause":"exited","exitStatus":3,"wallMs":' '"oomKills":0,"peakMemoryBytes":' '"killedByDelete":false'
    # a signal (from the host: a pid namespace's init takes none of its own)
    started 1 '{}' /bin/sleep 60
    ok trt kill "$CID" KILL
    wait_status "$CID" stopped 5
    ok trt delete "$CID"
    has "$(record_of container-exited)" '"cause":"signal","signal":"KILL","coreDumped":false' '"killedByDelete":false'
    # out of memory: killed by the kernel, seen in the cgroup's events
    ATTACK_ANN='{"io.agentcage.memory": "64m"}'
    attack 1 /bin/probe hog-mem 300
    assert_eq "$RC" 137 "hog-mem at 64m ($OUT)"
    r="$(record_of container-exited)"
    has "$r" '"cause":"oom-kill","signal":"KILL"' '"oomKills":1,'
    local peak; peak="$(echo "$r" | grep -o '"peakMemoryBytes":[0-9]*' | cut -d: -f2)"
    [ "$peak" -gt $((32 << 20)) ] && [ "$peak" -le $((64 << 20)) ] || fail "peak memory $peak at a 64m limit"
    # the wall-clock limit
    ATTACK_ANN='{"io.agentcage.timeout": "1s"}'
    attack 1 /bin/sleep 30
    assert_eq "$RC" 137 "sleep past the timeout"
    has "$(record_of timeout-kill)" '"timeoutMs":1000,"killedAt":'
    r="$(record_of container-exited)"
    has "$r" '"cause":"timeout-kill","signal":"KILL"'
    local wall; wall="$(echo "$r" | grep -o '"wallMs":[0-9]*' | cut -d: -f2)"
    [ "$wall" -ge 1000 ] && [ "$wall" -lt 5000 ] || fail "wall time $wall ms at a 1 s timeout"
    # killed by delete --force
    started 0 '{}' /bin/sleep 60
    ok trt delete --force "$CID"
    has "$(record_of container-exited)" '"tier":0,"cause":"delete-kill","signal":"KILL"' '"killedByDelete":true'
    ok "$REPO_DIR/agentcage" audit verify "$AUDIT"
}

# an init its parent reaps only after delete returns (a caller that is the
# init's subreaper and waits for the runtime first): delete takes the exit
# status from /proc while the init is unreaped, rather than waiting for the
# watchdog, which can only read it after the reap
test_unreaped_init_status_at_delete() {
    CID="$(new_id)"; make_bundle "$CID" /bin/sleep 60
    cfg '.annotations = {"io.agentcage.tier": "1"}'
    OUT="$(python3 -c 'import ctypes, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the init is ours, left unreaped
bundle, cid, rt = sys.argv[1], sys.argv[2], sys.argv[3:]
for verb in (["create", "--bundle", bundle, cid], ["start", cid], ["delete", "--force", cid]):
    subprocess.run(rt + verb, check=True, stdin=subprocess.DEVNULL)
print("deleted")' "$BUNDLE" "$CID" "$RUNTIME" --root "$ROOT" --audit-log "$T/state/audit.jsonl" \
        --approvals-dir "$T/state/approvals" 2>&1)"
    assert_eq "$OUT" deleted "create, start, delete --force under a subreaper that does not reap"
    has "$(record_of container-exited)" '"tier":1,"cause":"delete-kill","signal":"KILL"' '"wallMs":' '"killedByDelete":true'
}

# audit show ID: one container's trail, in order, human-readable and as JSON;
# another container's records are not in it; bad input is one clear line.
test_audit_show_prints_one_containers_trail() {
    sh_attack 1 '/bin/probe syscall mount /tmp; exit 4'
    assert_eq "$RC" 4 "exit 4 ($OUT)"
    local first="$CID"
    attack 0 /bin/true
    ok trt audit show "$first"
    local human="$OUT"
    assert_match "$(echo "$human" | head -1)" "^20[0-9-]+T[0-9:.]+Z +container-created +tier=1 " "the first line: the creation"
    assert_match "$(echo "$human" | tail -1)" "^20[0-9-]+T[0-9:.]+Z +container-exited +tier=1 cause=exited exitStatus=4 wallMs=[0-9]+ " \
        "the last line: the end"
    assert_contains "$human" "container-started"
    assert_contains "$human" "seccompDenials=1"
    assert_not_contains "$human" "$CID"
    assert_not_contains "$human" "prev="
    ok trt audit show "$first" --json
    assert_eq "$(echo "$OUT" | jq -r '[.[].event] | first + " " + last')" "container-created container-exited" "--json events"
    assert_eq "$(echo "$OUT" | jq -r '[.[].id] | unique | join(",")')" "$first" "--json: only its records"
    assert_eq "$(echo "$OUT" | jq -r 'length')" "$(echo "$human" | wc -l)" "as many records in both forms"
    assert_eq "$(echo "$OUT" | jq -r '.[-1].exitStatus')" 4 "--json exit status"
    # the records are the log's, byte for byte
    assert_eq "$(echo "$OUT" | jq -c '.[0]')" "$(grep -F "\"id\":\"$first\"" "$T/state/audit.jsonl" | head -1 | jq -c .)" "--json record"
    ok trt audit show "$first" --log "$T/state/audit.jsonl"
    assert_eq "$OUT" "$human" "--log names the same log"
    # nothing of an unknown container, a missing log, a broken line
    assert_fails trt audit show nosuchcontainer
    assert_eq "$OUT" "agentcage: audit show: no records of \`nosuchcontainer\` in $T/state/audit.jsonl" "unknown id"
    assert_fails trt audit show "$first" --log "$T/nolog"
    assert_contains "$OUT" "audit show: open \`$T/nolog\`"
    { head -2 "$T/state/audit.jsonl"; echo '{"seq": broken'; } > "$T/broken.jsonl"
    assert_fails trt audit show "$first" --log "$T/broken.jsonl"
    assert_eq "$OUT" "agentcage: audit show: $T/broken.jsonl:3: not a JSON record (\`agentcage audit verify\` names what broke)" "a broken line"
    assert_fails trt audit show
    assert_eq "$OUT" "agentcage: audit show: missing container id (usage: agentcage audit show ID [--json] [--log FILE])" "no id"
    ok "$REPO_DIR/agentcage" audit verify "$T/state/audit.jsonl"
}

# watchdog_stays_small REFUSAL FEW MORE: in the running container CID, an
# exec runs REFUSAL FEW times, another MORE times; the watchdog's RSS after
# the MORE is what it was after the FEW (no allocation per denial), and at
# most 512 KiB
watchdog_stays_small() {
    local loop='i=0; while [ $i -lt $0 ]; do '"$1"' > /dev/null; i=$((i + 1)); done; echo done' wd before after
    wd="$(jq -r '.watchdogPid // empty' "$ROOT/$CID/state.json")"
    [ -n "$wd" ] && [ -d "/proc/$wd" ] || fail "no watchdog in $(cat "$ROOT/$CID/state.json")"
    OUT="$(trt exec "$CID" /bin/sh -c "$loop" "$2" 2>&1 < /dev/null)"
    assert_eq "$OUT" done "$2 refusals"
    before="$(awk '/^VmRSS:/ {print $2}' "/proc/$wd/status")"
    OUT="$(trt exec "$CID" /bin/sh -c "$loop" "$3" 2>&1 < /dev/null)"
    assert_eq "$OUT" done "$3 refusals"
    after="$(awk '/^VmRSS:/ {print $2}' "/proc/$wd/status")"
    assert_eq "$after" "$before" "the watchdog's RSS in KiB after $3 more denials"
    [ "$after" -le 512 ] || fail "the watchdog's RSS is $after KiB"
}

# The watchdog stays tiny while it answers: no allocation per refused
# syscall (its RSS after 500 more is what it was after 10), under 512 KiB.
test_watchdog_stays_small_while_counting() {
    export AGENTCAGE_CONF="$T/agentcage.conf"
    echo "max-denials = 0" > "$AGENTCAGE_CONF"
    started 1 '{}' /bin/sleep 60
    watchdog_stays_small '/bin/probe syscall mount /tmp' 10 500
    ok trt delete --force "$CID"
    has "$(record_of container-exited)" '"denials":510,"seccompDenials":510,'
}

# Landlock's refusals count in the same counter (tiers 1-3). The kernel
# reports them to its audit only, and only while audit is enabled, a
# host-wide switch: the test lets the runtime turn it on (the operator's
# kernel-audit = true) and puts back what it found however the test ends,
# so no other test's refusals go to the kernel's log. The loop opens
# /proc/self/comm for writing (nothing written), on a writable mount but
# outside the tier's Landlock paths: a plain container may, a tier-1 one is
# refused by Landlock each time.
AUDIT_SWITCH="$IT_DIR/helpers/kernel_audit.py"
audit_put_back() { [ -z "${AUDIT_WAS:-}" ] || "$PYTHON3" "$AUDIT_SWITCH" set "$AUDIT_WAS"; }
test_landlock_denials_kill_at_the_limit() {
    local abi; abi="$("$PYTHON3" -c 'import ctypes; print(max(0, ctypes.CDLL(None).syscall(444, None, 0, 1)))')"
    [ "$abi" -ge 7 ] || return 0 # the kernel reports Landlock's refusals from ABI 7 (Linux 6.15) on
    AUDIT_WAS="$("$PYTHON3" "$AUDIT_SWITCH" get)" || fail "read the kernel's audit switch"
    [ "$AUDIT_WAS" == 2 ] && AUDIT_WAS="" # locked on: nothing to put back
    trap audit_put_back EXIT
    trap 'exit 143' TERM
    local loop='i=0; while [ $i -lt ${N:-30} ]; do /bin/probe open-w /proc/self/comm > /dev/null; i=$((i + 1)); done
        echo survived'
    # plain: every open works, nothing counts or kills
    attack plain /bin/sh -c "$loop"
    assert_eq "$OUT" survived "a plain container writes its tmpfs"
    # audit off: refused by Landlock, not counted (audit is what reports it)
    if [ "$AUDIT_WAS" == 0 ]; then
        sh_attack 1 "$loop"
        assert_eq "$OUT" survived "tier 1, audit off"
        has "$(record_of container-exited)" '"cause":"exited"' '"landlockDenials":0'
    fi
    # the operator's kernel-audit = true: the runtime turns audit on; with
    # no limit every refusal is counted
    export AGENTCAGE_CONF="$T/agentcage.conf"
    printf 'max-denials = 0\nkernel-audit = true\n' > "$AGENTCAGE_CONF"
    sh_attack 1 "$loop"
    assert_eq "$OUT" survived "30 refused writes, no limit"
    [ "$("$PYTHON3" "$AUDIT_SWITCH" get)" != 0 ] || fail "kernel-audit = true left the kernel's audit off"
    has "$(record_of container-exited)" '"cause":"exited","exitStatus":0' \
        '"denials":30,"seccompDenials":0,"egressDenials":0,"landlockDenials":30'
    ok trt check
    assert_contains "$OUT" "landlock denials: yes - counted: the kernel's audit is on"
    # the default ceiling and a tighter annotation: killed at the 5th
    printf 'kernel-audit = true\n' > "$AGENTCAGE_CONF"
    ATTACK_ANN='{"io.agentcage.max-denials": "5"}'
    sh_attack 1 "N=100000; $loop"
    assert_eq "$RC" 137 "the container killed ($OUT)"
    assert_not_contains "$OUT" survived
    has "$(record_of denial-kill)" '"denials":5,"limit":5,"source":"landlock","result":"killed","last":[{"seq":1,' \
        '"source":"landlock","blockers":"fs.write_file","object":"path=\"/proc/' 'comm\" dev=\"proc\" ino='
    has "$(record_of container-exited)" '"cause":"denial-kill","signal":"KILL",' '"landlockDenials":5'
    # an exec'd process has a Landlock domain of its own: it counts too
    started 1 '{"io.agentcage.max-denials": "3"}' /bin/sleep 60
    OUT="$(trt exec "$CID" /bin/sh -c '/bin/probe open-w /proc/self/comm; /bin/probe open-w /proc/1/comm' 2>&1 < /dev/null)"
    assert_eq "$(echo $OUT)" "EACCES EACCES" "refused in an exec"
    OUT="$(trt exec "$CID" /bin/sh -c 'while :; do /bin/probe open-w /proc/self/comm > /dev/null; done' 2>&1 < /dev/null)"
    RC=$?
    assert_eq "$RC" 137 "the exec at the third denial ($OUT)"
    wait_status "$CID" stopped 5
    ok trt delete "$CID"
    has "$(record_of denial-kill)" '"denials":3,"limit":3,"source":"landlock"'
    # no allocation per record: the watchdog's RSS after 300 more refusals
    # is what it was after 10
    printf 'max-denials = 0\nkernel-audit = true\n' > "$AGENTCAGE_CONF"
    started 1 '{}' /bin/sleep 60
    watchdog_stays_small '/bin/probe open-w /proc/self/comm' 10 300
    ok trt delete --force "$CID"
    has "$(record_of container-exited)" '"landlockDenials":310'
    # put back: from here on the kernel reports no refusal (nothing counted)
    audit_put_back
    if [ "$AUDIT_WAS" == 0 ]; then
        printf 'max-denials = 0\n' > "$AGENTCAGE_CONF"
        ATTACK_ANN='{}'
        sh_attack 1 "$loop"
        has "$(record_of container-exited)" '"cause":"exited"' '"landlockDenials":0'
    fi
    ok "$REPO_DIR/agentcage" audit verify "$AUDIT"
}
