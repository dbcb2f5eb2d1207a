#!/bin/sh
# The tier filters' generator on rule shapes syscalls.list does not have
# (tests/data/tier-seccomp-shapes.list: a line outside the shared key, a
# subsumed line, 64-bit masks, a datum outside its mask, conditional
# enosys...): it must compile every tier and prove its range tree against
# libseccomp's, as it does for the real list at every build. Reads BUILD
# (default build); prints ok/FAIL lines and "N passed, M failed".
build="${BUILD:-build}"
cd "$(dirname "$0")/.." || exit 2
gen="$build/gen/tier-seccomp-gen"
out=$(mktemp "${TMPDIR:-/tmp}/agentcage-tier-gen.XXXXXX") || exit 2
trap 'rm -f "$out" "$out.err"' EXIT INT TERM
if [ ! -x "$gen" ]; then
    echo "FAIL - tier-seccomp-gen: no $gen (run make)"
    echo "0 passed, 1 failed"
    exit 1
fi
if ! "$gen" tests/data/tier-seccomp-shapes.list >"$out" 2>"$out.err"; then
    echo "FAIL - tier-seccomp-gen: the shapes list: $(grep -v ': note: ' "$out.err" | head -n 1)"
    echo "0 passed, 1 failed"
    exit 1
fi
# eight programs (4 tiers, 2 variants), each proven
proven=$(grep -c '^/\* the range tree: [0-9]* instructions, libseccomp.s [0-9]*; the same answers to [0-9]* inputs \*/$' "$out")
if [ "$proven" != 8 ]; then
    echo "FAIL - tier-seccomp-gen: the shapes list: $proven programs proven, not 8"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "ok - tier-seccomp-gen: the shapes list's 8 programs answer as libseccomp's"
echo "1 passed, 0 failed"
