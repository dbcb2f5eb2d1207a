#!/bin/bash
# The fresh-machine check: the README's first command, run once, in a
# minimal Debian 12 root that has never seen the project's packages (only
# ca-certificates, git and make, as a new user's machine would have).
# Prints "ok - fresh-machine: make demo" or "FAIL - fresh-machine: <the first
# error line>", then "N passed, M failed". The root: lib.sh.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/lib.sh"

result() {  # ok|FAIL message
    echo "$1 - fresh-machine: $2"
    if [ "$1" = ok ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
    [ "$1" = ok ]
}

if [ "$(id -u)" != 0 ]; then result FAIL "must run as root (it unpacks and enters a Debian root)"; exit; fi
why="$(fresh_base)" || { result FAIL "$why"; exit; }
root="$(fresh_unpack)" || { result FAIL "cannot unpack $FRESH_BASE"; exit; }
log="$root.log"
trap 'fresh_remove "$root"' EXIT

# The checkout as it stands (tracked files, with any uncommitted edits), no
# build products: what a clone of this commit gives a new user.
mkdir -p "$root/src/agentcage"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
    (cd "$repo" && tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$root/src/agentcage"

# The demo creates real containers, so it needs the host's cgroups and devices.
fresh_chroot "$root" "cd /src/agentcage && make demo" > "$log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "exit status: 7" "$log"; then
    rm -f "$log"
    result ok "make demo on a minimal Debian 12 root"
else
    first="$(grep -v '^agentcage: installing' "$log" | grep -m1 -E 'undefined reference|^agentcage: |error: |undefined reference|^E: |\*\*\*' || tail -1 "$log")"
    echo "# fresh-machine log kept at $log" >&2
    result FAIL "make demo exited $rc: $first"
fi
