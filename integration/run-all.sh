#!/bin/bash
# Runs the whole test suite: the unit test binaries given as arguments, then
# every integration test (integration/tests/*.sh, functions named test_*),
# and prints ONE final line "N passed, M failed"; exits non-zero on any failure.
#
# Environment:
#   RUNTIME       runtime under test (default: <repo>/agentcage); any
#                 runc-compatible binary works, e.g. RUNTIME=/usr/sbin/runc
#   TESTS         only run integration tests whose "file:test" matches this ERE
#   TEST_TIMEOUT  seconds per integration test (default 60)
#   VERBOSE=1     print each failing test's full log
#   SUITES        the other suites run after the integration tests (default:
#                 "engines rootless package vm fuzz sanitize bench"; "" for none). Skipped when
#                 TESTS is set.
#   TIMES=1       print how long each passing test took
# Tests listed in a file's XFAIL_RUNC variable are known runc bugs: under runc
# a failure there is reported as "ok ... # expected to fail on runc".
set -u
IT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$IT_DIR/.." && pwd)"
export IT_DIR REPO_DIR
export RUNTIME="${RUNTIME:-$REPO_DIR/agentcage}"
TEST_TIMEOUT="${TEST_TIMEOUT:-60}"
passed=0
failed=0

if [ "$(id -u)" != 0 ]; then
    echo "run-all.sh: must run as root (integration tests create real containers)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# ---- checks run before the build (.ci/run's fresh-machine check): their
# ok/FAIL lines, already printed, count in the final line
if [ -n "${AGENTCAGE_PRECHECKS:-}" ] && [ -f "$AGENTCAGE_PRECHECKS" ]; then
    passed=$((passed + $(grep -c '^ok ' "$AGENTCAGE_PRECHECKS")))
    failed=$((failed + $(grep -c '^FAIL ' "$AGENTCAGE_PRECHECKS")))
fi

# ---- unit tests
for bin in "$@"; do
    out="$("$bin" 2>&1)"; rc=$?
    printf '%s\n' "$out" | grep -Ev '^[0-9]+ passed, [0-9]+ failed' 
    summary="$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)"
    if [ -n "$summary" ]; then
        p="$(echo "$summary" | sed -E 's/^([0-9]+) passed.*/\1/')"
        f="$(echo "$summary" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')"
        passed=$((passed + p)); failed=$((failed + f))
        if [ "$rc" != 0 ] && [ "$f" == 0 ]; then
            echo "FAIL - $(basename "$bin"): exited $rc"; failed=$((failed + 1))
        fi
    else
        echo "FAIL - $(basename "$bin"): exited $rc without a summary line"; failed=$((failed + 1))
    fi
done

# ---- integration tests
source "$IT_DIR/lib.sh"
# the egress proxy's worker runs as this system user (make install makes it)
if ! "$REPO_DIR/scripts/egress-user.sh"; then
    echo "FAIL - integration: cannot make the system user agentcage-egress"
    failed=$((failed + 1))
fi
if ! ROOTFS="$("$IT_DIR/rootfs.sh")"; then
    echo "FAIL - integration: cannot build the test rootfs"
    echo "$passed passed, $((failed + 1)) failed"
    exit 1
fi
export ROOTFS

is_runc_runtime=0
is_runc && is_runc_runtime=1

if [ ! -x "$RUNTIME" ]; then
    echo "FAIL - integration: runtime $RUNTIME not found"
    failed=$((failed + 1))
else
    for file in "$IT_DIR"/tests/*.sh; do
        fname="$(basename "$file" .sh)"
        meta="$(bash -c 'source "$1" >/dev/null 2>&1; echo "XFAIL ${XFAIL_RUNC:-}"; declare -F | awk "{print \$3}" | grep "^test_"' _ "$file")"
        xfails=" $(echo "$meta" | sed -n 's/^XFAIL //p') "
        for fn in $(echo "$meta" | grep '^test_'); do
            name="$fname:${fn#test_}"
            if [ -n "${TESTS:-}" ] && ! echo "$name" | grep -Eq -- "$TESTS"; then continue; fi
            T="$(mktemp -d /tmp/agentcage-it.XXXXXX)"
            ROOT="$T/root"
            TEST_ID="it$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
            export T ROOT TEST_ID
            mkdir -p "$ROOT"
            t0=$(date +%s%N)
            # the host's /dev/null is never re-owned (a runtime must not
            # chown a stdio it was handed): compared around every test
            DEVNULL_OWNER="$(stat -c %u:%g /dev/null)"
            export DEVNULL_OWNER
            timeout -k 5 "$TEST_TIMEOUT" bash -c 'source "$IT_DIR/lib.sh"; source "$1"; "$2"' _ "$file" "$fn" \
                > "$T/.log" 2>&1 < /dev/null
            rc=$?
            took="$(( ($(date +%s%N) - t0) / 1000000 ))ms"
            reason=""
            if [ $rc == 124 ] || [ $rc == 137 ]; then
                reason="timed out after ${TEST_TIMEOUT}s"
            elif [ $rc != 0 ]; then
                if [ -s "$T/.fail_reason" ]; then reason="$(head -c 600 "$T/.fail_reason")"
                else reason="exited $rc: $(tail -3 "$T/.log" | tr '\n' ' ' | head -c 400)"; fi
            else
                leaks="$(leak_check)"
                [ -z "$leaks" ] || reason="leak: $(echo "$leaks" | tr '\n' ';' | head -c 600)"
            fi
            if [ -z "$reason" ]; then
                if [ $is_runc_runtime == 1 ] && [[ "$xfails" == *" $fn "* ]]; then
                    echo "ok - $name # expected to fail on runc, but passed"
                elif [ "${TIMES:-0}" == 1 ]; then
                    echo "ok - $name # $took"
                else
                    echo "ok - $name"
                fi
                passed=$((passed + 1))
            elif [ $is_runc_runtime == 1 ] && [[ "$xfails" == *" $fn "* ]]; then
                echo "ok - $name # expected to fail on runc: $reason"
                passed=$((passed + 1))
            else
                echo "FAIL - $name: $reason"
                [ "${VERBOSE:-0}" == 1 ] && sed 's/^/    | /' "$T/.log"
                failed=$((failed + 1))
            fi
            cleanup_test
        done
    done
fi

# our own parent cgroups, only when empty
for d in /sys/fs/cgroup/*/"$CGROUP_PARENT" /sys/fs/cgroup/"$CGROUP_PARENT"; do
    [ -d "$d" ] && rmdir "$d" 2>/dev/null
done

# ---- the other suites: engines, rootless, the Debian package in a fresh
# root, the QEMU host matrix, fuzzing, sanitizers, the benchmark's smoke run. Each prints ok/FAIL lines and its own
# "N passed, M failed" line, which is added to ours. SUITES="" skips them;
# SUITES="engines vm" picks some.
declare -A suite_cmd=(
    [engines]="$IT_DIR/engines/run.sh"
    [rootless]="$IT_DIR/rootless/run.sh"
    [package]="$IT_DIR/package/run.sh"
    [vm]="$IT_DIR/vm/ci.sh"
    [fuzz]="$REPO_DIR/tests/fuzz/run-ci.sh"
    [sanitize]="$REPO_DIR/tests/sanitize-ci.sh"
    [bench]="$IT_DIR/bench/run.sh --quick --check"
)
if [ -z "${TESTS:-}" ]; then
    for suite in ${SUITES-engines rootless package vm fuzz sanitize bench}; do
        cmd="${suite_cmd[$suite]:-}"
        if [ -z "$cmd" ] || [ ! -x "${cmd%% *}" ]; then
            echo "FAIL - suite $suite: no runner ${cmd%% *}"; failed=$((failed + 1)); continue
        fi
        echo "# suite $suite: $cmd"
        start=$SECONDS
        devnull_before="$(stat -c %u:%g /dev/null)"
        out="$($cmd < /dev/null 2>&1)"; rc=$?
        devnull_after="$(stat -c %u:%g /dev/null)"
        if [ "$devnull_after" != "$devnull_before" ]; then
            # named, then put back so the next suite is not blamed for it
            echo "FAIL - suite $suite: the host's /dev/null changed owner: $devnull_before -> $devnull_after"
            failed=$((failed + 1))
            chown "$devnull_before" /dev/null
        fi
        printf '%s\n' "$out" | grep -E '^(ok|FAIL|skip) ' | sed "s/^\(ok\|FAIL\|skip\) - /\1 - $suite:/"
        summary="$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)"
        if [ -n "$summary" ]; then
            p="$(echo "$summary" | sed -E 's/^([0-9]+) passed.*/\1/')"
            f="$(echo "$summary" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')"
            passed=$((passed + p)); failed=$((failed + f))
            if [ "$rc" != 0 ] && [ "$f" == 0 ]; then
                echo "FAIL - suite $suite: exited $rc"; failed=$((failed + 1))
                printf '%s\n' "$out" | tail -5 | sed 's/^/    | /'
            fi
        else
            echo "FAIL - suite $suite: exited $rc without a summary line"; failed=$((failed + 1))
            printf '%s\n' "$out" | tail -15 | sed 's/^/    | /'
        fi
        echo "# suite $suite: $((SECONDS - start)) s"
    done
fi

echo "$passed passed, $failed failed"
[ "$failed" == 0 ]
