#!/bin/sh
# The host-matrix tests.  Runs INSIDE the test guest (busybox sh, no jq) as
# root, on whatever cgroup layout the guest booted with ($VM_MODE: v2, v1 or
# hybrid; $VM_KERNEL).  Every check prints one line:
#   ok - NAME | FAIL - NAME: REASON | skip - NAME: REASON
# and the last line is "N passed, M failed".  Exit status 0 when none failed.
#
# usage: guest-tests.sh [NAME-SUBSTRING...]   (default: every group)
RT="${AGENTCAGE:-/usr/local/bin/agentcage}"
ROOTFS="${ROOTFS:-/rootfs}"
PARENT=agentcage-vm
B=/tmp/bundles
MODE="${VM_MODE:-unknown}"
KVER="${VM_KERNEL:-$(uname -r)}"
mkdir -p "$B"

passed=0 failed=0
ok() { echo "ok - [$MODE $KVER] $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - [$MODE $KVER] $1: $(echo "$2" | tr '\n' ' ' | cut -c1-400)"; failed=$((failed + 1)); }
skip() { echo "skip - [$MODE $KVER] $1: $2"; }
# check NAME ACTUAL EXPECTED
check() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "expected '$3', got '$2'"; fi; }

# Every runtime call is bounded: a hang must cost one check, not the boot.
rt() { timeout 60 "$RT" "$@"; }

# ------------------------------------------------------------------ bundles

# mkbundle ID ARGS-JSON [RESOURCES-JSON-TAIL] [LINUX-JSON-HEAD] [TOP-JSON-HEAD]
# writes $B/ID/config.json: the integration suite's default container (no
# capabilities beyond runc's three, read-only root, all devices denied but
# the default ones) running ARGS.  The tails/heads are JSON members with
# their separating comma: ', "pids": {"limit": 10}'.  $DEVRULES: more
# device cgroup rules after the deny-all one, same form.
mkbundle() {
    mkdir -p "$B/$1"
    cat > "$B/$1/config.json" <<EOF
{
  "ociVersion": "1.0.2-dev",
  ${5:-}
  "process": {
    "terminal": false,
    "user": {"uid": 0, "gid": 0},
    "args": $2,
    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    "cwd": "/",
    "capabilities": {
      "bounding": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
      "effective": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
      "permitted": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
    },
    "noNewPrivileges": true
  },
  "root": {"path": "$ROOTFS", "readonly": true},
  "hostname": "vm-test",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}
  ],
  "linux": {
    ${4:-}
    "cgroupsPath": "/$PARENT/$1",
    "resources": {"devices": [{"allow": false, "access": "rwm"}${DEVRULES:-}] ${3:-}},
    "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
    "maskedPaths": ["/proc/kcore", "/proc/keys", "/sys/firmware"],
    "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"]
  }
}
EOF
}
SLEEPER='["/bin/probe", "sleep", "600"]'
SPINNER='["/bin/sh", "-c", "while :; do :; done"]'

# create ID: `create` with the container's stdio in files; error text in $ERR.
create() {
    rt create --bundle "$B/$1" "$1" > "$B/$1.out" 2> "$B/$1.err" < /dev/null
    local rc=$?
    ERR="$(cat "$B/$1.err")"
    return $rc
}
# run ID: `run` in the foreground; output in $OUT, status in $RC.
run() { OUT="$(rt run --bundle "$B/$1" "$1" 2>&1 < /dev/null)"; RC=$?; }
# field ID NAME: a string or number field of `state`.
field() {
    rt state "$1" 2>/dev/null | tr -d '\n' |
        sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p"
}
# wait_status ID STATUS: poll `state` for up to 20 s.
wait_status() {
    local i=0
    while [ $i -lt 100 ]; do
        [ "$(field "$1" status)" = "$2" ] && return 0
        sleep 0.2; i=$((i + 1))
    done
    return 1
}
destroy() { rt delete --force "$1" > /dev/null 2>&1; }

# cgdir CONTROLLER ID: the container's cgroup directory for CONTROLLER: its
# v1 hierarchy when one is mounted, else the unified one.
cgdir() {
    if [ -d "/sys/fs/cgroup/$1" ] && [ "$MODE" != v2 ]; then
        echo "/sys/fs/cgroup/$1/$PARENT/$2"
    elif [ "$MODE" = hybrid ]; then
        echo "/sys/fs/cgroup/unified/$PARENT/$2"
    else
        echo "/sys/fs/cgroup/$PARENT/$2"
    fi
}
# cgval CONTROLLER V1FILE V2FILE ID: prints the file for this layout.
cgval() {
    local d; d="$(cgdir "$1" "$4")"
    if [ "$MODE" = v2 ]; then cat "$d/$3" 2>&1; else cat "$d/$2" 2>&1; fi
}
# v1_has CONTROLLER: is there a v1 hierarchy for it (6.12 has no memory, cpuset)?
v1_has() { [ -d "/sys/fs/cgroup/$1" ]; }
# all cgroup directories under our parent, in every hierarchy
leftover_cgroups() {
    for h in /sys/fs/cgroup /sys/fs/cgroup/*/ /sys/fs/cgroup/unified; do
        [ -d "$h/$PARENT" ] && find "$h/$PARENT" -mindepth 1 -type d 2>/dev/null
    done | sort -u
}

# unusable CONTROLLER: a v1 or hybrid host whose kernel has no v1 hierarchy
# for it (6.12: memory, cpuset) and whose cgroup2 mount does not delegate it
# (systemd's hybrid layout enables nothing there): the runtime must refuse.
unusable() {
    [ "$MODE" != v2 ] && ! v1_has "$1" &&
        ! grep -qw "$1" /sys/fs/cgroup/unified/cgroup.subtree_control 2>/dev/null
}
no_memory_v1() { unusable memory; }

want() {
    [ -z "$FILTER" ] && return 0
    for f in $FILTER; do case "$1" in *"$f"*) return 0 ;; esac; done
    return 1
}

# ------------------------------------------------------------------ tests

t_lifecycle() {
    mkbundle life "$SLEEPER"
    if ! create life; then fail lifecycle-create "$ERR"; return; fi
    check lifecycle-created "$(field life status)" created
    local pid; pid="$(field life pid)"
    [ -n "$pid" ] && [ -d "/proc/$pid" ] && ok lifecycle-pid || fail lifecycle-pid "pid '$pid' not alive"
    local procs; procs="$(cat "$(cgdir pids life)/cgroup.procs" 2>&1)"
    case " $(echo $procs) " in *" $pid "*) ok lifecycle-in-cgroup ;; *) fail lifecycle-in-cgroup "pid $pid not in $(cgdir pids life): $procs" ;; esac
    OUT="$(rt start life 2>&1)" && ok lifecycle-start || fail lifecycle-start "$OUT"
    check lifecycle-running "$(field life status)" running
    # KILL: a pid-namespace init without a handler ignores TERM.
    OUT="$(rt kill life KILL 2>&1)" || fail lifecycle-kill "$OUT"
    wait_status life stopped && ok lifecycle-stopped || fail lifecycle-stopped "status $(field life status)"
    OUT="$(rt delete life 2>&1)" && ok lifecycle-delete || fail lifecycle-delete "$OUT"
    rt state life > /dev/null 2>&1 && fail lifecycle-gone "state still answers" || ok lifecycle-gone
    [ -d "$(cgdir pids life)" ] && fail lifecycle-cgroup-removed "$(cgdir pids life) still exists" || ok lifecycle-cgroup-removed
    run_exit
}
run_exit() {
    mkbundle runx '["/bin/sh", "-c", "echo out; exit 7"]'
    run runx
    check run-exit-status "$RC" 7
    check run-output "$OUT" out
}

t_memory() {
    mkbundle mem "$SLEEPER" ', "memory": {"limit": 67108864}'
    if no_memory_v1; then
        # 6.12 has no v1 memory controller (and systemd's hybrid layout does
        # not delegate it on cgroup2): the limit cannot be honoured, so the
        # runtime must refuse it, clearly, and leave nothing behind.
        if create mem; then
            fail memory-refused-without-v1-memory "create accepted a memory limit with no memory controller"
            destroy mem
        else
            case "$ERR" in
                *memory*) ok memory-refused-without-v1-memory ;;
                *) fail memory-refused-without-v1-memory "error does not name memory: $ERR" ;;
            esac
            rt state mem > /dev/null 2>&1 && fail memory-refused-no-state "state left" || ok memory-refused-no-state
        fi
        mkbundle memupd "$SLEEPER"
        if create memupd; then
            OUT="$(rt update --memory 50331648 memupd 2>&1)" &&
                fail update-memory-refused "update accepted a memory limit: $OUT" || ok update-memory-refused
            destroy memupd
        else
            fail update-memory-refused "create without limits failed: $ERR"
        fi
        return
    fi
    if ! create mem; then fail memory-create "$ERR"; return; fi
    check memory-limit-read-back "$(cgval memory memory.limit_in_bytes memory.max mem)" 67108864
    OUT="$(rt update --memory 50331648 mem 2>&1)" || fail update-memory "$OUT"
    check update-memory-read-back "$(cgval memory memory.limit_in_bytes memory.max mem)" 50331648
    destroy mem

    mkbundle oom '["/bin/probe", "hog-mem", "200"]' ', "memory": {"limit": 33554432, "swap": 33554432}'
    run oom
    case "$OUT" in
        *"ok 200 MB"*) fail memory-oom-kill "200 MB allocated under a 32 MB limit (exit $RC)" ;;
        *) if [ "$RC" = 137 ]; then ok memory-oom-kill; else fail memory-oom-kill "exit $RC, expected 137 (SIGKILL): $OUT"; fi ;;
    esac
}

t_pids() {
    mkbundle pids "$SLEEPER" ', "pids": {"limit": 42}'
    if create pids; then
        check pids-limit-read-back "$(cgval pids pids.max pids.max pids)" 42
        OUT="$(rt update --pids-limit 17 pids 2>&1)" || fail update-pids "$OUT"
        check update-pids-read-back "$(cgval pids pids.max pids.max pids)" 17
        destroy pids
    else
        fail pids-create "$ERR"
    fi
    mkbundle bomb '["/bin/probe", "fork-bomb", "100"]' ', "pids": {"limit": 10}'
    run bomb
    case "$OUT" in
        "forked "[0-9]" EAGAIN") ok pids-fork-bomb-stopped ;;
        *) fail pids-fork-bomb-stopped "exit $RC: $OUT" ;;
    esac
}

t_cpu() {
    mkbundle cpu "$SPINNER" ', "cpu": {"shares": 512, "quota": 10000, "period": 100000}'
    if ! create cpu; then fail cpu-create "$ERR"; return; fi
    if [ "$MODE" = v2 ]; then
        # runc's mapping of shares onto cpu.weight: 1 + (512-2)*9999/262142
        check cpu-weight-read-back "$(cgval cpu cpu.shares cpu.weight cpu)" 20
        check cpu-max-read-back "$(cgval cpu cpu.cfs_quota_us cpu.max cpu)" "10000 100000"
    else
        check cpu-shares-read-back "$(cgval cpu cpu.shares cpu.weight cpu)" 512
        check cpu-quota-read-back "$(cgval cpu cpu.cfs_quota_us cpu.max cpu)" 10000
        check cpu-period-read-back "$(cgval cpu cpu.cfs_period_us cpu.max cpu)" 100000
    fi
    rt start cpu > /dev/null 2>&1
    sleep 2
    local throttled
    throttled="$(awk '$1 == "nr_throttled" {print $2}' "$(cgdir cpu cpu)/cpu.stat")"
    if [ -n "$throttled" ] && [ "$throttled" -gt 0 ]; then ok cpu-quota-throttles
    else fail cpu-quota-throttles "nr_throttled '$throttled' after 2 s of spinning at 10%"; fi
    destroy cpu
}

t_cpuset() {
    mkbundle cpuset "$SLEEPER" ', "cpu": {"cpus": "1", "mems": "0"}'
    if unusable cpuset; then
        if create cpuset; then
            fail cpuset-refused-without-v1-cpuset "create accepted a cpuset with no cpuset controller"
            destroy cpuset
        else
            case "$ERR" in
                *cpuset*|*cpus*) ok cpuset-refused-without-v1-cpuset ;;
                *) fail cpuset-refused-without-v1-cpuset "error does not name cpuset: $ERR" ;;
            esac
        fi
        return
    fi
    if ! create cpuset; then fail cpuset-create "$ERR"; return; fi
    check cpuset-cpus-read-back "$(cgval cpuset cpuset.cpus cpuset.cpus cpuset)" 1
    check cpuset-mems-read-back "$(cgval cpuset cpuset.mems cpuset.mems cpuset)" 0
    local pid; pid="$(field cpuset pid)"
    check cpuset-enforced "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$pid/status)" 1
    destroy cpuset
}

t_io() {
    mkbundle io "$SLEEPER" ', "blockIO": {"weight": 500}'
    if [ "$MODE" != v2 ] && [ ! -f /sys/fs/cgroup/blkio/blkio.weight ] && [ ! -f /sys/fs/cgroup/blkio/blkio.bfq.weight ]; then
        # No CFQ/BFQ (6.12 builds BFQ as a module, not loaded here): the
        # weight cannot be honoured and must be refused.
        if create io; then fail io-weight-refused-without-scheduler "create accepted a blkio weight"; destroy io
        else case "$ERR" in *weight*) ok io-weight-refused-without-scheduler ;; *) fail io-weight-refused-without-scheduler "$ERR" ;; esac; fi
        return
    fi
    if ! create io; then fail io-weight-create "$ERR"; return; fi
    local d v; d="$(cgdir blkio io)"
    if [ "$MODE" = v2 ]; then
        d="$(cgdir io io)"
        if [ -f "$d/io.bfq.weight" ]; then v="$(cat "$d/io.bfq.weight")"; want_v="default 500"
        else v="$(cat "$d/io.weight")"; want_v="default 4950"; fi
    else
        if [ -f "$d/blkio.weight" ]; then v="$(cat "$d/blkio.weight")"; else v="$(cat "$d/blkio.bfq.weight")"; fi
        want_v=500
    fi
    case "$v" in "$want_v"|*" $want_v"|"$want_v "*) ok io-weight-read-back ;; *) fail io-weight-read-back "expected '$want_v', got '$v'" ;; esac
    destroy io
}

t_hugetlb() {
    grep -q hugetlb /proc/cgroups || { skip hugetlb "no hugetlb controller"; return; }
    mkbundle huge "$SLEEPER" ', "hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}]'
    if ! create huge; then fail hugetlb-create "$ERR"; return; fi
    check hugetlb-limit-read-back "$(cgval hugetlb hugetlb.2MB.limit_in_bytes hugetlb.2MB.max huge)" 4194304
    destroy huge
}

t_devices() {
    # /dev/vmtest (10:200, the tun device) is created in the container (linux.devices) but no rule
    # allows it: the device controller (an eBPF program on v2) must deny the
    # open, while a default device stays usable.
    mkbundle dev '["/bin/sh", "-c", "probe read /dev/vmtest; probe read /dev/zero"]' '' \
        '"devices": [{"path": "/dev/vmtest", "type": "c", "major": 10, "minor": 200, "fileMode": 420}],'
    run dev
    local name=devices-deny; [ "$MODE" = v2 ] && name=devices-ebpf-deny
    check "$name" "$(echo "$OUT" | sed -n 1p)" EPERM
    check devices-default-allowed "$(echo "$OUT" | sed -n 2p)" ok
    DEVRULES=', {"allow": true, "type": "c", "major": 10, "minor": 200, "access": "r"}' \
        mkbundle devok '["/bin/sh", "-c", "probe read /dev/vmtest"]' '' \
        '"devices": [{"path": "/dev/vmtest", "type": "c", "major": 10, "minor": 200, "fileMode": 420}],'
    run devok
    case "$OUT" in EPERM*) fail devices-allow-rule "allowed device denied: $OUT" ;; *) ok devices-allow-rule ;; esac
}

# cpu_ticks PID: utime + stime
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

t_pause() {
    mkbundle pause "$SPINNER"
    if ! create pause; then fail pause-create "$ERR"; return; fi
    rt start pause > /dev/null 2>&1
    local pid; pid="$(field pause pid)"
    sleep 0.5
    OUT="$(rt pause pause 2>&1)" || { fail pause "$OUT"; destroy pause; return; }
    check pause-status "$(field pause status)" paused
    if [ "$MODE" = v2 ]; then
        check pause-v2-freezer "$(awk '$1 == "frozen" {print $2}' "$(cgdir freezer pause)/cgroup.events")" 1
    else
        check pause-v1-freezer "$(cat "$(cgdir freezer pause)/freezer.state")" FROZEN
    fi
    local a b; a="$(cpu_ticks "$pid")"; sleep 1; b="$(cpu_ticks "$pid")"
    check pause-stops-cpu "$b" "$a"
    OUT="$(rt resume pause 2>&1)" || fail resume "$OUT"
    check resume-status "$(field pause status)" running
    a="$(cpu_ticks "$pid")"; sleep 1; b="$(cpu_ticks "$pid")"
    [ "$b" -gt "$a" ] && ok resume-runs-again || fail resume-runs-again "cpu ticks $a -> $b"
    destroy pause
}

t_events() {
    mkbundle ev "$SLEEPER" ', "pids": {"limit": 100}'
    if ! create ev; then fail events-create "$ERR"; return; fi
    rt start ev > /dev/null 2>&1
    OUT="$(timeout 20 "$RT" events --stats ev 2>&1 < /dev/null | head -n 1)"
    local line; line="$(echo "$OUT" | tr -d ' \n')"
    case "$line" in *'"type":"stats"'*'"id":"ev"'* | *'"id":"ev"'*'"type":"stats"'*) ok events-stats-line ;; *) fail events-stats-line "$OUT" ;; esac
    local cur; cur="$(echo "$line" | sed -n 's/.*"pids":{"current":\([0-9]*\).*/\1/p')"
    [ -n "$cur" ] && [ "$cur" -ge 1 ] && ok events-stats-pids || fail events-stats-pids "no pids.current in: $(echo "$line" | cut -c1-300)"
    if no_memory_v1; then
        skip events-stats-memory "no memory controller"
    else
        local mem; mem="$(echo "$line" | sed -n 's/.*"memory":{"usage":{[^}]*"usage":\([0-9]*\).*/\1/p')"
        [ -n "$mem" ] && [ "$mem" -gt 0 ] && ok events-stats-memory || fail events-stats-memory "no memory usage in: $(echo "$line" | cut -c1-300)"
    fi
    destroy ev
}

t_tiers() {
    if ! rt policy show --tier 1 > /dev/null 2>&1; then
        skip tiers "agentcage policy show --tier 1: $(rt policy show --tier 1 2>&1 | head -n 1)"
        return
    fi
    local t
    for t in 0 1 2 3; do
        local pol; pol="$(rt policy show --tier $t 2>&1)"
        mkbundle "tier$t" "$SLEEPER" '' '' "\"annotations\": {\"io.agentcage.tier\": \"$t\"},"
        # tier 3 needs a human's grant first (the approval gate), of this config
        [ "$t" = 3 ] && rt approve tier3 --for 5m --bundle "$B/tier3" > /dev/null 2>&1
        if ! create "tier$t"; then
            if no_memory_v1; then
                case "$ERR" in *memory*) ok "tier$t-refused-without-v1-memory" ;; *) fail "tier$t-create" "$ERR" ;; esac
            else
                fail "tier$t-create" "$ERR"
            fi
            continue
        fi
        # what the tier promises (policy show prints the effective config)
        local flat want_mem want_pids mem pids
        flat="$(echo "$pol" | tr -d ' \n')"
        want_mem="$(echo "$flat" | sed -n 's/.*"memory":{"limit":\([0-9]*\).*/\1/p')"
        want_pids="$(echo "$flat" | sed -n 's/.*"pids":{"limit":\([0-9]*\).*/\1/p')"
        mem="$(cgval memory memory.limit_in_bytes memory.max "tier$t" 2>/dev/null)"
        pids="$(cgval pids pids.max pids.max "tier$t")"
        if [ -n "$want_pids" ]; then check "tier$t-pids-limit" "$pids" "$want_pids"
        elif [ "$pids" != max ] && [ -n "$pids" ]; then ok "tier$t-pids-limit ($pids)"
        else fail "tier$t-pids-limit" "pids.max '$pids'"; fi
        if no_memory_v1; then skip "tier$t-memory-limit" "no memory controller"
        elif [ -n "$want_mem" ]; then check "tier$t-memory-limit" "$mem" "$want_mem"
        elif [ "$mem" != max ] && [ "$mem" != 9223372036854771712 ] && [ -n "$mem" ]; then ok "tier$t-memory-limit ($mem)"
        else fail "tier$t-memory-limit" "memory limit '$mem'"; fi
        destroy "tier$t"
    done
}

t_leftovers() {
    local left; left="$(leftover_cgroups)"
    [ -z "$left" ] && ok delete-leaves-no-cgroup || fail delete-leaves-no-cgroup "$left"
    left="$(ls /run/agentcage 2>/dev/null)"
    [ -z "$left" ] && ok delete-leaves-no-state || fail delete-leaves-no-state "$left"
}

FILTER="$*"
echo "# agentcage host-matrix tests: mode $MODE, kernel $KVER, $(nproc) cpus"
for group in lifecycle memory pids cpu cpuset io hugetlb devices pause events tiers; do
    want "$group" && "t_$group"
done
# leftovers of anything that failed half-way must not hide in later boots
for d in "$B"/*/; do destroy "$(basename "$d")"; done
t_leftovers
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
