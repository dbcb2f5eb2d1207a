#!/bin/bash
# The ASan+UBSan+LeakSanitizer pass of `make check`: the unit tests and a
# few real busybox containers (spec, run, create/start/state/exec/ps/pause/
# resume/kill/delete, delete --force, error paths), all with the agentcage
# binary and unit tests of a sanitizer build (`make sanitize` builds them in
# build-asan/ first).
#
#   tests/sanitize.sh [BUILD_DIR]        (default build-asan)
#
# Every process writes its sanitizer reports to a log dir (log_path), so a
# report counts even when it comes from the container's init before its
# execve or from a process whose stderr belongs to the container. Fails on
# any report and on any step that does not do what it should; prints the
# reports and ends with "N passed, M failed".
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${1:-build-asan}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
bin="$build/agentcage"

if [ "$(id -u)" != 0 ]; then
    echo "sanitize.sh: must run as root (it creates real containers)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/agentcage-sanitize.XXXXXX")" || exit 2
logs="$tmp/logs"
root="$tmp/root"
mkdir -p "$logs" "$root"
cg_parent="agentcage-sanitize-$$"
ids=()

cleanup() {
    for id in "${ids[@]}"; do
        "$bin" --root "$root" delete --force "$id" >/dev/null 2>&1
    done
    for d in /sys/fs/cgroup/*/"$cg_parent" /sys/fs/cgroup/"$cg_parent"; do
        [ -d "$d" ] || continue
        find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
        rmdir "$d" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# detect_leaks: LeakSanitizer at every exit that returns through libc (the
# container init that execs, and children that _exit, are not checked).
# Leak stacks through libyajl (no frame pointers) stop at yajl; for the full
# stack rerun with SANITIZE_FULL_STACKS=1 (fast_unwind_on_malloc=0, about 30x
# slower on test_spec's big documents).
full=""
[ -n "${SANITIZE_FULL_STACKS:-}" ] && full="fast_unwind_on_malloc=0:"
export ASAN_OPTIONS="detect_leaks=1:${full}log_path=$logs/asan:abort_on_error=0:exitcode=86"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
export LSAN_OPTIONS="exitcode=86"

passed=0
failed=0
# check NAME: count a step, failing it when $why is set or a sanitizer
# logged something since the previous step.
why=""
check() {
    local reports
    reports=$(find "$logs" -type f | sort)
    if [ -n "$reports" ]; then
        why="${why:+$why; }sanitizer report"
        for r in $reports; do
            sed 's/^/    /' "$r"
            mv "$r" "$tmp/seen-$(basename "$r")"
        done
    fi
    if [ -n "$why" ]; then
        echo "FAIL - sanitize: $1: $why"
        failed=$((failed + 1))
    else
        echo "ok - sanitize: $1"
        passed=$((passed + 1))
    fi
    why=""
}
# expect RC CMD...: run CMD (output in $OUT), note a wrong exit status.
expect() {
    local want="$1"; shift
    # A file, not a pipe: a container init left behind by a failed step must
    # not hold our command substitution open. timeout: no step may hang.
    timeout -k 5 60 "$@" >"$tmp/step.out" 2>&1 </dev/null
    local rc=$?
    OUT="$(cat "$tmp/step.out")"
    # Some reports (UBSan in gcc's combined runtime) still go to stderr.
    if grep -qE 'runtime error:|ERROR: (Address|Leak)Sanitizer' "$tmp/step.out"; then
        why="${why:+$why; }sanitizer report from '${*#"$bin --root $root "}'"
        sed 's/^/    /' "$tmp/step.out"
    fi
    if [ "$rc" != "$want" ]; then
        why="${why:+$why; }'${*#"$bin --root $root "}' exited $rc, expected $want: $(echo "$OUT" | head -c 300)"
    fi
}
rt() { "$bin" --root "$root" "$@"; }
# The same as an argument list, for expect (timeout(1) runs programs only).
RT=("$bin" --root "$root")

# ---- unit tests
unit_bins=("$build"/tests/test_*)
if [ -x "${unit_bins[0]}" ]; then
    if "$here/run-unit.sh" "${unit_bins[@]}" >"$tmp/unit.out" 2>&1; then :; else
        why="$(tail -n 1 "$tmp/unit.out")"
        grep -E '^FAIL' "$tmp/unit.out" | sed 's/^/    /'
    fi
else
    why="no unit test binaries in $build/tests"
fi
check "unit tests ($(tail -n 1 "$tmp/unit.out" 2>/dev/null))"

# ---- containers
if [ ! -x "$bin" ]; then
    why="no $bin (run make sanitize)"
    check "agentcage binary"
    echo "$passed passed, $failed failed"
    exit 1
fi
rootfs="$("$repo/integration/rootfs.sh")" || { why="integration/rootfs.sh failed"; check rootfs; exit 1; }

# bundle ID ARGS...: $tmp/ID/config.json from `agentcage spec`, running ARGS
# in the busybox rootfs, cgroup under our own parent.
bundle() {
    local id="$1"; shift
    local b="$tmp/$id"
    mkdir -p "$b"
    (cd "$b" && "$bin" spec) || { why="spec failed"; return 1; }
    local args; args="$(printf '%s\n' "$@" | jq -R . | jq -s -c .)"
    jq --arg r "$rootfs" --arg cg "/$cg_parent/$id" --argjson a "$args" \
        '.root = {path: $r, readonly: true} | .process.terminal = false | .process.args = $a
         | .linux.cgroupsPath = $cg' "$b/config.json" > "$b/config.tmp" && mv "$b/config.tmp" "$b/config.json"
    ids+=("$id")
    B="$b"
}
status_of() { rt state "$1" 2>/dev/null | jq -r .status; }
wait_stopped() {
    for _ in $(seq 100); do
        [ "$(status_of "$1")" = stopped ] && return 0
        sleep 0.1
    done
    why="${why:+$why; }$1 did not stop"
}

expect 0 "$bin" --version
expect 0 "$bin" features
check "version, features"

id=san-run-$$
bundle "$id" /bin/sh -c 'echo hello from busybox; exit 7'
expect 7 "${RT[@]}" run --bundle "$B" "$id"
[ "$OUT" = "hello from busybox" ] || why="${why:+$why; }run output: $OUT"
expect 1 "${RT[@]}" state "$id" # run deletes the container when it exits
check "run (foreground, exit status 7, deleted at exit)"

id=san-life-$$
bundle "$id" /bin/sleep 60
expect 0 "${RT[@]}" create --bundle "$B" --pid-file "$tmp/$id.pid" "$id"
[ "$(status_of "$id")" = created ] || why="${why:+$why; }status after create is not created"
expect 0 "${RT[@]}" start "$id"
[ "$(status_of "$id")" = running ] || why="${why:+$why; }status after start is not running"
check "create, state, start"

expect 0 "${RT[@]}" exec "$id" /bin/sh -c 'echo exec ok'
[ "$OUT" = "exec ok" ] || why="${why:+$why; }exec output: $OUT"
echo '{"args":["/bin/true"],"cwd":"/","env":["PATH=/bin"]}' > "$tmp/process.json"
expect 0 "${RT[@]}" exec --process "$tmp/process.json" "$id"
check "exec (args and --process)"

expect 0 "${RT[@]}" list
expect 0 "${RT[@]}" list --format json
expect 0 "${RT[@]}" ps "$id"
expect 0 "${RT[@]}" ps --format json "$id"
expect 0 "${RT[@]}" events --stats "$id"
check "list, ps, events --stats"

expect 0 "${RT[@]}" pause "$id"
[ "$(status_of "$id")" = paused ] || why="${why:+$why; }status after pause is not paused"
expect 0 "${RT[@]}" resume "$id"
echo '{"pids":{"limit":512}}' > "$tmp/resources.json"
expect 0 "${RT[@]}" update --resources "$tmp/resources.json" "$id"
check "pause, resume, update --resources"

# KILL: sleep as a pid namespace's init ignores TERM (no handler)
expect 0 "${RT[@]}" kill "$id" KILL
wait_stopped "$id"
expect 0 "${RT[@]}" delete "$id"
expect 1 "${RT[@]}" state "$id"
check "kill, delete"

id=san-force-$$
bundle "$id" /bin/sleep 60
expect 0 "${RT[@]}" create --bundle "$B" "$id"
expect 0 "${RT[@]}" start "$id"
expect 0 "${RT[@]}" delete --force "$id"
check "delete --force of a running container"

# Error paths free what they allocated and print one line.
mkdir -p "$tmp/bad"
echo '{"ociVersion": "1.2.0", "process": ' > "$tmp/bad/config.json"
expect 1 "${RT[@]}" create --bundle "$tmp/bad" san-bad-$$
expect 1 "${RT[@]}" state does-not-exist
expect 1 "${RT[@]}" delete does-not-exist
# exec's own failures exit 255, as runc's (1 could be the process's status)
expect 255 "${RT[@]}" exec
expect 255 "${RT[@]}" exec does-not-exist /bin/true
expect 255 "${RT[@]}" exec --no-such-flag x
expect 1 "${RT[@]}" state ../escape
expect 1 "${RT[@]}" no-such-verb
check "error paths"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
