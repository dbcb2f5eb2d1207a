# Helpers for the agentcage integration tests (sourced by run-all.sh and by
# every test process).  A test is a shell function `test_NAME` in
# integration/tests/*.sh; the runner runs each one in its own bash process
# with a fresh temp dir ($T), a fresh --root ($ROOT) and a unique $TEST_ID.
#
# Tests talk to the runtime only through `rt` so that any runc-compatible
# runtime can be checked: RUNTIME=/usr/sbin/runc or the agentcage binary.

IT_DIR="${IT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
REPO_DIR="${REPO_DIR:-$(cd "$IT_DIR/.." && pwd)}"
RUNTIME="${RUNTIME:-$REPO_DIR/agentcage}"
ROOTFS="${ROOTFS:-$IT_DIR/.cache/rootfs}"
CGROUP_PARENT="agentcage-it"
PYTHON3="${PYTHON3:-/usr/bin/python3}"

# ---------------------------------------------------------------- basics

# fail MSG: record why the test failed and stop it.
fail() {
    echo "$*" > "$T/.fail_reason"
    echo "FAILED: $*" >&2
    exit 1
}

is_runc() { case "$(basename "$RUNTIME")" in runc*) return 0 ;; esac; return 1; }

# rt ARGS...: the runtime under test, with this test's own state root.
rt() { "$RUNTIME" --root "$ROOT" "$@"; }

# ---------------------------------------------------------------- assertions

assert_eq() { # ACTUAL EXPECTED [WHAT]
    [ "$1" == "$2" ] || fail "${3:-value}: expected '$2', got '$1'"
}
assert_ne() {
    [ "$1" != "$2" ] || fail "${3:-value}: expected something other than '$2'"
}
assert_contains() { # HAYSTACK NEEDLE [WHAT]
    case "$1" in *"$2"*) ;; *) fail "${3:-output}: expected to contain '$2', got '$(echo "$1" | head -c 400)'" ;; esac
}
assert_not_contains() {
    case "$1" in *"$2"*) fail "${3:-output}: expected not to contain '$2', got '$(echo "$1" | head -c 400)'" ;; esac
}
assert_match() { # STRING ERE [WHAT]
    echo "$1" | grep -Eq -- "$2" || fail "${3:-output}: expected to match /$2/, got '$(echo "$1" | head -c 400)'"
}
# assert_exit EXPECTED CMD...: run CMD, check its exit status; its stdout+stderr land in $OUT.
assert_exit() {
    local want="$1"; shift
    OUT="$("$@" 2>&1)"; local rc=$?
    [ "$rc" == "$want" ] || fail "'$*' exited $rc, expected $want: $(echo "$OUT" | head -c 400)"
}
# assert_fails CMD...: CMD must exit non-zero; output in $OUT.
assert_fails() {
    OUT="$("$@" 2>&1)"; local rc=$?
    [ "$rc" != 0 ] || fail "'$*' succeeded, expected failure: $(echo "$OUT" | head -c 400)"
}
# ok CMD...: CMD must succeed; output in $OUT.
ok() {
    OUT="$("$@" 2>&1)"; local rc=$?
    [ "$rc" == 0 ] || fail "'$*' exited $rc: $(echo "$OUT" | head -c 600)"
}

# ---------------------------------------------------------------- bundles

# new_id: a container id unique to this test (the counter lives in a file
# because callers use $(new_id), a subshell).
new_id() {
    local n; n=$(( $(cat "$T/.next" 2>/dev/null || echo 0) + 1 ))
    echo "$n" > "$T/.next"
    echo "${TEST_ID}-${n}"
}

# default_config ID ARGS...: prints the default config.json for container ID.
default_config() {
    local id="$1"; shift
    local args; args="$(printf '%s\n' "$@" | jq -R . | jq -s -c .)"
    jq -n --arg root "$ROOTFS" --arg cg "/$CGROUP_PARENT/$id" --argjson args "$args" '{
  ociVersion: "1.0.2-dev",
  process: {
    terminal: false,
    user: {uid: 0, gid: 0},
    args: $args,
    env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
    cwd: "/",
    capabilities: {
      bounding: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
      effective: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
      permitted: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
      ambient: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
    },
    rlimits: [{type: "RLIMIT_NOFILE", hard: 1024, soft: 1024}],
    noNewPrivileges: true
  },
  root: {path: $root, readonly: true},
  hostname: "agentcage-it",
  mounts: [
    {destination: "/proc", type: "proc", source: "proc"},
    {destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"]},
    {destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"]},
    {destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777", "size=16m"]}
  ],
  linux: {
    cgroupsPath: $cg,
    resources: {devices: [{allow: false, access: "rwm"}]},
    namespaces: [{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"}],
    maskedPaths: ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                  "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
    readonlyPaths: ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
  }
}'
}

# make_bundle ID [ARGS...]: creates a bundle dir for container ID whose
# process runs ARGS (default: probe sleep 600); sets $BUNDLE and prints nothing.
make_bundle() {
    local id="$1"; shift
    [ $# -gt 0 ] || set -- /bin/probe sleep 600
    BUNDLE="$T/bundle-$id"
    mkdir -p "$BUNDLE"
    default_config "$id" "$@" > "$BUNDLE/config.json" || fail "cannot generate config.json"
}

# cfg [JQ-ARGS...] FILTER: edits $BUNDLE/config.json in place with jq.
cfg() {
    local tmp="$BUNDLE/config.json.tmp"
    jq "$@" "$BUNDLE/config.json" > "$tmp" || fail "jq edit failed: $*"
    mv "$tmp" "$BUNDLE/config.json"
}

# ---------------------------------------------------------------- containers

# rt_create ID [EXTRA-ARGS...]: `create` with stdio sent to $T/ID.out/.err
# (never the caller's pipe, which a detached container would hold open).
rt_create() {
    local id="$1"; shift
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$@" "$id" \
        > "$T/$id.out" 2> "$T/$id.err" < /dev/null
    local rc=$?
    [ $rc == 0 ] || fail "create $id exited $rc: $(head -c 600 "$T/$id.err")"
    track_pid "$(cpid "$id")"
}

# rt_run_detached ID: create + start, fails the test on error.
rt_start() {
    local id="$1"
    ok rt start "$id"
}

# cstatus ID: the container's status from `state`.
cstatus() { rt state "$1" 2>/dev/null | jq -r .status; }
# cpid ID: the container's init pid from `state`.
cpid() { rt state "$1" 2>/dev/null | jq -r .pid; }

# wait_status ID STATUS [SECONDS]: waits until `state` reports STATUS.
wait_status() {
    local i s
    for ((i = 0; i < ${3:-10} * 20; i++)); do
        s="$(cstatus "$1")"
        [ "$s" == "$2" ] && return 0
        sleep 0.05
    done
    fail "container $1 did not reach status '$2' (is '$s')"
}

# run_in ID ARGS...: `exec` ARGS in running container ID; output in $OUT, status in $RC.
run_in() {
    local id="$1"; shift
    OUT="$(rt exec "$id" "$@" 2>&1 < /dev/null)"; RC=$?
}

# quick ARGS...: runs ARGS in a fresh default container with `run`, after
# applying the jq filters in the QUICK_CFG array; output in $OUT, status in $RC.
quick() {
    local id; id="$(new_id)"
    make_bundle "$id" "$@"
    local f
    for f in "${QUICK_CFG[@]}"; do cfg "$f"; done
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"; RC=$?
}
QUICK_CFG=()

# ---------------------------------------------------------------- host processes

# track_pid PID: remember a pid this test is responsible for (leak check + cleanup).
track_pid() {
    [ -n "$1" ] && [ "$1" != null ] && [ "$1" != 0 ] && echo "$1" >> "$T/.pids"
    return 0
}
# bg CMD...: start CMD in the background on the host, tracked; sets $BG_PID.
bg() {
    "$@" < /dev/null > /dev/null 2>&1 &
    BG_PID=$!
    track_pid "$BG_PID"
}

# ---------------------------------------------------------------- leak check + cleanup

# cgroup dirs belonging to this test, in every hierarchy.
test_cgroups() {
    local d
    for d in /sys/fs/cgroup/*/"$CGROUP_PARENT"/"$TEST_ID"* /sys/fs/cgroup/"$CGROUP_PARENT"/"$TEST_ID"*; do
        [ -d "$d" ] && echo "$d"
    done
    return 0
}

# leak_check: prints one line per leaked resource; silent when clean.
leak_check() {
    local p
    [ -z "${DEVNULL_OWNER:-}" ] || [ "$(stat -c %u:%g /dev/null)" == "$DEVNULL_OWNER" ] ||
        echo "the host's /dev/null changed owner: $DEVNULL_OWNER -> $(stat -c %u:%g /dev/null)"
    if grep -F -e "$T" -e "$ROOTFS" /proc/self/mountinfo > /dev/null 2>&1; then
        echo "mounts left: $(grep -F -e "$T" -e "$ROOTFS" /proc/self/mountinfo | awk '{print $5}' | tr '\n' ' ')"
    fi
    local cgs; cgs="$(test_cgroups | tr '\n' ' ')"
    [ -z "$cgs" ] || echo "cgroups left: $cgs"
    if [ -f "$T/.pids" ]; then
        for p in $(sort -u "$T/.pids"); do
            if [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
                echo "process left: $p ($(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | head -c 80))"
            fi
        done
    fi
    if [ -d "$ROOT" ] && [ -n "$(ls -A "$ROOT" 2>/dev/null)" ]; then
        echo "state left in --root: $(ls -A "$ROOT" | tr '\n' ' ')"
    fi
    # a tier's claim on a slice of host ids (runtime/linux/userns.c)
    local slices; slices="$(grep -lx -- "$ROOT" /run/agentcage-userns/slice-* 2>/dev/null | tr '\n' ' ')"
    [ -z "$slices" ] || echo "user namespace slices left: $slices"
}

# rmdir_tree DIR: removes an (empty of tasks) cgroup dir depth-first.
rmdir_tree() {
    local d="$1" sub
    for sub in "$d"/*/; do
        [ -d "$sub" ] && rmdir_tree "${sub%/}"
    done
    rmdir "$d" 2>/dev/null
}

# cleanup_test: removes whatever the test left behind; touches only what it owns.
cleanup_test() {
    local p id d
    if [ -d "$ROOT" ]; then
        for id in $(ls -A "$ROOT" 2>/dev/null); do
            timeout 10 "$RUNTIME" --root "$ROOT" delete --force "$id" > /dev/null 2>&1
        done
    fi
    if [ -f "$T/.pids" ]; then
        for p in $(sort -u "$T/.pids"); do kill -KILL "$p" 2>/dev/null; done
    fi
    # processes still in this test's cgroups were started by its containers
    for d in $(test_cgroups); do
        [ -f "$d/freezer.state" ] && echo THAWED > "$d/freezer.state" 2>/dev/null
        for p in $(cat "$d"/cgroup.procs "$d"/*/cgroup.procs 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    sleep 0.1
    for d in $(test_cgroups); do rmdir_tree "$d"; done
    # mounts under the test dir (never the host's)
    grep -F "$T" /proc/self/mountinfo 2>/dev/null | awk '{print $5}' | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null
    done
    [ -n "$T" ] && [ -d "$T" ] && rm -rf "$T"
}
