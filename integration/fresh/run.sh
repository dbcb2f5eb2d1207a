#!/bin/bash
# The fresh-machine check: the README's first command, run once, in a
# minimal Debian 12 root that has never seen the project's packages (only
# ca-certificates, git and make, as a new user's machine would have).
# Prints "ok - fresh-machine: make demo" or "FAIL - fresh-machine: <the first
# error line>", then "N passed, M failed".
#
# The base root is built once with mmdebstrap from Debian's archive and kept
# as a tarball in integration/.cache; every run unpacks a new copy of it, so
# what `make demo` installs never carries over to the next run.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="$here/../.cache"
base="$cache/fresh-debian12-minbase.tar"
mirror="${FRESH_MIRROR:-http://deb.debian.org/debian}"

result() {  # ok|FAIL message
    echo "$1 - fresh-machine: $2"
    if [ "$1" = ok ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
    [ "$1" = ok ]
}

if [ "$(id -u)" != 0 ]; then result FAIL "must run as root (it unpacks and enters a Debian root)"; exit; fi

if [ ! -s "$base" ]; then
    if ! command -v mmdebstrap >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2 ||
            { result FAIL "cannot install mmdebstrap"; exit; }
    fi
    mkdir -p "$cache"
    if ! mmdebstrap --quiet --variant=minbase --include=ca-certificates,git,make \
            bookworm "$cache/fresh-base.tmp.tar" \
            "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
            "deb ${mirror%/debian}/debian-security bookworm-security main" >"$cache/fresh-mmdebstrap.log" 2>&1; then
        rm -f "$cache/fresh-base.tmp.tar"
        result FAIL "mmdebstrap failed: $(grep -m1 -iE 'error|fail' "$cache/fresh-mmdebstrap.log")"; exit
    fi
    mv "$cache/fresh-base.tmp.tar" "$base"
fi

root="$(mktemp -d /var/tmp/agentcage-fresh.XXXXXX)"
log="$root.log"
cleanup() {
    # the child's private mount namespace is gone with it; only the files stay
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -xf "$base" -C "$root" || { result FAIL "cannot unpack $base"; exit; }

# The checkout as it stands (tracked files, with any uncommitted edits), no
# build products: what a clone of this commit gives a new user.
mkdir -p "$root/src/agentcage"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
    (cd "$repo" && tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$root/src/agentcage"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

# A private mount namespace for the root's /proc, /sys, /dev and /run: the
# demo creates real containers, so it needs the host's cgroups and devices.
unshare --mount --propagation private -- /bin/sh -ec '
    root=$1
    # a machine'"'"'s / is a mount point; a plain directory is not
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/run"
    mount -t tmpfs tmpfs "$root/tmp"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
        /bin/sh -c "cd /src/agentcage && make demo"
' _ "$root" >"$log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "exit status: 7" "$log"; then
    rm -f "$log"
    result ok "make demo on a minimal Debian 12 root"
else
    first="$(grep -v '^agentcage: installing' "$log" | grep -m1 -E 'undefined reference|^agentcage: |error: |undefined reference|^E: |\*\*\*' || tail -1 "$log")"
    echo "# fresh-machine log kept at $log" >&2
    result FAIL "make demo exited $rc: $first"
fi
