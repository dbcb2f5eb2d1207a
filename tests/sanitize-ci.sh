#!/bin/bash
# The sanitizer pass of `make test`: build agentcage, its watchdog and the
# unit tests with ASan+UBSan (LeakSanitizer) into build-asan/, then run
# tests/sanitize.sh (unit tests + real containers). Ends with
# "N passed, M failed".
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
if ! make --no-print-directory sanitize-build >/tmp/agentcage-asan-build.$$ 2>&1; then
    echo "FAIL - build: make sanitize-build failed"
    tail -n 15 /tmp/agentcage-asan-build.$$ | sed 's/^/    | /'
    rm -f /tmp/agentcage-asan-build.$$
    echo "0 passed, 1 failed"
    exit 1
fi
rm -f /tmp/agentcage-asan-build.$$
exec tests/sanitize.sh build-asan
