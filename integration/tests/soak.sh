# The soak's short form (issue 7): integration/soak/run.sh with a few cycles
# per tier, so CI checks the cycle and the host accounting. The full run is
# `integration/soak/run.sh` (2000 cycles per tier); see docs/reliability.md.

test_soak_short() {
    OUT="$("$IT_DIR/soak/run.sh" --cycles "${SOAK_CYCLES:-50}" 2>&1)"; local rc=$?
    echo "$OUT"
    [ $rc == 0 ] || fail "soak: $(echo "$OUT" | grep -E '^FAIL' | tr '\n' ';' | head -c 600)"
}
