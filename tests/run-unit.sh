#!/bin/sh
# Run unit-test binaries and total their results.
#
#   tests/run-unit.sh build/tests/test_spec build/tests/test_foo ...
#
# Each binary prints "ok - name" / "FAIL - name: reason" lines and ends with
# "N passed, M failed". This prints every binary's output, then one total
# line "N passed, M failed" (last line, so a caller can add it to its own
# counts), and exits 1 if anything failed. A binary that dies before its
# summary line (crash, exit without summary) counts as one failure.

total_passed=0
total_failed=0
out=$(mktemp "${TMPDIR:-/tmp}/agentcage-unit.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT INT TERM

for bin in "$@"; do
    name=$(basename "$bin")
    echo "# $name"
    if [ ! -x "$bin" ]; then
        echo "FAIL - $name: not an executable"
        total_failed=$((total_failed + 1))
        continue
    fi
    "$bin" >"$out" 2>&1
    status=$?
    # Everything but the binary's own summary line.
    grep -Ev '^[0-9]+ passed, [0-9]+ failed$' "$out"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -z "$summary" ]; then
        echo "FAIL - $name: exited with status $status before printing its summary"
        total_failed=$((total_failed + 1))
        continue
    fi
    passed=${summary%% passed*}
    failed=${summary#*passed, }
    failed=${failed%% failed*}
    echo "# $name: $summary"
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    # A binary that reports no failure but exits non-zero still failed.
    if [ "$failed" -eq 0 ] && [ "$status" -ne 0 ]; then
        echo "FAIL - $name: exited with status $status"
        total_failed=$((total_failed + 1))
    fi
done

echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
