#!/bin/bash
# The bounded fuzz run of `make test`: build the libFuzzer harnesses (clang
# from Debian, installed when missing) and run each for FUZZ_SECONDS
# (default 20) on its seed corpus, FUZZ_JOBS (default 2) at a time. A crash
# fails and is kept as a regression input (tests/fuzz/run.sh). Ends with
# "N passed, M failed".
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
if ! command -v clang >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "ok installed"; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null 2>&1
fi
if ! make --no-print-directory fuzz >/tmp/agentcage-fuzz-build.$$ 2>&1; then
    echo "FAIL - build: make fuzz failed"
    tail -n 15 /tmp/agentcage-fuzz-build.$$ | sed 's/^/    | /'
    rm -f /tmp/agentcage-fuzz-build.$$
    echo "0 passed, 1 failed"
    exit 1
fi
rm -f /tmp/agentcage-fuzz-build.$$
bins=()
for src in tests/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    bins+=("build/fuzz/$name")
done
# FUZZ_JOBS runs (default 2, one per core here) side by side, the harnesses
# dealt out in turn: the wall time is FUZZ_SECONDS per harness / FUZZ_JOBS.
jobs=${FUZZ_JOBS:-2}
tmp="$(mktemp -d /tmp/agentcage-fuzz-ci.XXXXXX)"
for ((j = 0; j < jobs; j++)); do
    share=()
    for ((i = j; i < ${#bins[@]}; i += jobs)); do share+=("${bins[$i]}"); done
    [ ${#share[@]} -gt 0 ] && tests/fuzz/run.sh "${FUZZ_SECONDS:-20}" "${share[@]}" > "$tmp/$j" 2>&1 &
done
wait
out="$(cat "$tmp"/*)"
rm -rf "$tmp"
printf '%s\n' "$out"
p=$(printf '%s\n' "$out" | grep -c '^ok - ')
f=$(printf '%s\n' "$out" | grep -c '^FAIL - ')
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
