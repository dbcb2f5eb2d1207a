#!/bin/bash
# Bounded libFuzzer run: each harness for SECONDS on its seed corpus.
#
#   tests/fuzz/run.sh SECONDS build/fuzz/fuzz_config build/fuzz/fuzz_state ...
#
# tests/fuzz/corpus/HARNESS/ is the seed corpus and is only read; inputs the
# fuzzer finds go to build/fuzz/corpus/HARNESS/ (kept between runs, not in
# git). Any crash, leak, sanitizer report or timeout fails the run; its input
# is copied to tests/fuzz/corpus/HARNESS/regression-<sha1> so that every later
# run (which starts by executing the whole seed corpus) checks it again.
# Prints one line per harness: executions, coverage, corpus size.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
seconds=${1:?usage: run.sh SECONDS HARNESS...}
shift
failed=0
for bin in "$@"; do
    name=$(basename "$bin")
    seeds="$here/corpus/$name"
    work="$(dirname "$bin")/corpus/$name"
    artifacts="$(dirname "$bin")/artifacts/$name"
    log="$(dirname "$bin")/$name.log"
    # the harness's own dictionary (tests/fuzz/HARNESS.dict), else JSON's
    dict="$here/$name.dict"
    [ -f "$dict" ] || dict="$here/json.dict"
    mkdir -p "$seeds" "$work" "$artifacts"
    rm -f "$artifacts"/*
    # Leaks are findings too; a single slow input (>10 s) is a hang.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -dict="$dict" -artifact_prefix="$artifacts/" \
        "$work" "$seeds" >"$log" 2>&1
    status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    cov=$(grep -oE '#[0-9]+.*cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+')
    if [ "$status" -ne 0 ]; then
        failed=$((failed + 1))
        echo "FAIL - $name: exit $status after ${execs:-?} executions (log: $log)"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error:)' "$log" | head -n 5 | sed 's/^/    /'
        for crash in "$artifacts"/*; do
            [ -f "$crash" ] || continue
            keep="$seeds/regression-$(sha1sum "$crash" | cut -c1-16)"
            cp "$crash" "$keep"
            echo "    input kept as ${keep#"$(cd "$here/../.." && pwd)/"}"
        done
    else
        echo "ok - $name: ${execs:-?} executions in ${seconds}s, $cov"
    fi
done
[ "$failed" -eq 0 ]
