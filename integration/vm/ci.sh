#!/bin/bash
# The host matrix in CI: boots a QEMU guest per (cgroup mode, kernel) and runs
# integration/vm/guest-tests.sh in it, one boot per pair; a v2 boot then
# also runs integration/vm/guest-rootless.sh (the rootless set on a
# delegated cgroup v2 subtree), whose text goes in on the command line.
#
#   integration/vm/ci.sh          v2 on 6.1 and pure v1 on 6.12 (what .ci/run calls)
#   integration/vm/ci.sh --all    v2, v1 and hybrid on both 6.1 and 6.12
#   integration/vm/ci.sh v2:6.12 hybrid:6.1 ...   chosen pairs
#
# Prints the guests' ok/FAIL/skip lines, a "# MODE KERNEL: N s" line per
# boot, and last "N passed, M failed"; exits 0 only when nothing failed.
# A guest that times out or dies counts as one failure with its reason.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

pairs=()
for a in "$@"; do
    case "$a" in
        --all) pairs+=(v2:6.1 v1:6.1 hybrid:6.1 v2:6.12 v1:6.12 hybrid:6.12) ;;
        v2:*|v1:*|hybrid:*) pairs+=("$a") ;;
        *) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ ${#pairs[@]} -gt 0 ] || pairs=(v2:6.1 v1:6.12)
# one guest under single-threaded TCG on a busy 2-core machine takes 1-3 min
per_boot_timeout="${VM_TIMEOUT:-420}"

kernels=()
for p in "${pairs[@]}"; do
    k="${p#*:}"
    case " ${kernels[*]:-} " in *" $k "*) ;; *) kernels+=(--kernel "$k") ;; esac
done
if ! "$here/build.sh" "${kernels[@]}"; then
    echo "FAIL - vm: building the guest failed"
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0 failed=0
for p in "${pairs[@]}"; do
    mode="${p%%:*}" kernel="${p#*:}"
    start=$SECONDS
    cmd=(sh /vm/guest-tests.sh) scripts=1
    if [ "$mode" = v2 ]; then
        # both sets, the exit status the worse one; the rootless script is not
        # in the payload, so it is written to /tmp from the argument
        cmd=(sh -c 'sh /vm/guest-tests.sh; a=$?
            printf "%s\n" "$1" > /tmp/guest-rootless.sh && sh /tmp/guest-rootless.sh; b=$?
            [ "$a" = 0 ] && exit "$b"; exit "$a"' sh "$(cat "$here/guest-rootless.sh")")
        scripts=2
    fi
    out="$(VM_SKIP_BUILD=1 "$here/run.sh" --mode "$mode" --kernel "$kernel" \
        --timeout "$per_boot_timeout" -- "${cmd[@]}" 2>&1)"
    rc=$?
    echo "$out" | grep -E '^(ok|FAIL|skip) - '
    # one "N passed, M failed" per script run in the boot
    summaries="$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$')"
    while read -r summary; do
        [ -n "$summary" ] || continue
        passed=$((passed + ${summary%% *}))
        f="${summary#*, }"; failed=$((failed + ${f%% *}))
    done <<< "$summaries"
    summary="$summaries"
    [ "$(echo "$summaries" | grep -c .)" = "$scripts" ] || summary=""
    if [ -z "$summary" ] || { [ "$rc" != 0 ] && [ "$rc" != 1 ]; }; then
        case "$rc" in
            124) why="guest timed out after ${per_boot_timeout}s" ;;
            125) why="guest died" ;;
            *) why="guest tests exited $rc without a summary" ;;
        esac
        echo "FAIL - [$mode $kernel] boot: $why"
        echo "$out" | grep -vE '^(ok|FAIL|skip) - ' | tail -n 25 | sed 's/^/#   /'
        failed=$((failed + 1))
    fi
    echo "# $mode $kernel: $((SECONDS - start)) s"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
