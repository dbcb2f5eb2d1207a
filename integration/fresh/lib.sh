# The fresh Debian 12 root, shared by the fresh-machine check (run.sh) and
# the package suite (integration/package/run.sh). Sourced; needs root.
#
# The base root is built once with mmdebstrap's minbase from Debian's
# archive (only ca-certificates, git and make added, as a new user's machine
# would have) and kept as a tarball in integration/.cache; every use unpacks
# a new copy of it, so nothing carries over from one run to the next.
FRESH_DIR="${FRESH_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
FRESH_CACHE="$FRESH_DIR/../.cache"
FRESH_BASE="$FRESH_CACHE/fresh-debian12-minbase.tar"
FRESH_MIRROR="${FRESH_MIRROR:-http://deb.debian.org/debian}"

# fresh_base: make sure the cached base tarball exists; on failure prints
# the reason and returns 1.
fresh_base() {
    [ -s "$FRESH_BASE" ] && return 0
    if ! command -v mmdebstrap > /dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2 ||
            { echo "cannot install mmdebstrap"; return 1; }
    fi
    mkdir -p "$FRESH_CACHE"
    if ! mmdebstrap --quiet --variant=minbase --include=ca-certificates,git,make \
            bookworm "$FRESH_CACHE/fresh-base.tmp.tar" \
            "deb $FRESH_MIRROR bookworm main" "deb $FRESH_MIRROR bookworm-updates main" \
            "deb ${FRESH_MIRROR%/debian}/debian-security bookworm-security main" \
            > "$FRESH_CACHE/fresh-mmdebstrap.log" 2>&1; then
        rm -f "$FRESH_CACHE/fresh-base.tmp.tar"
        echo "mmdebstrap failed: $(grep -m1 -iE 'error|fail' "$FRESH_CACHE/fresh-mmdebstrap.log")"
        return 1
    fi
    mv "$FRESH_CACHE/fresh-base.tmp.tar" "$FRESH_BASE"
}

# fresh_unpack: a new copy of the base root in a new directory under
# /var/tmp; prints its path.
fresh_unpack() {
    local root
    root="$(mktemp -d /var/tmp/agentcage-fresh.XXXXXX)" || return 1
    tar -xf "$FRESH_BASE" -C "$root" || { rm -rf --one-file-system "$root"; return 1; }
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true
    echo "$root"
}

# fresh_remove ROOT: the copy's files (its mounts lived in a private mount
# namespace and are gone with it).
fresh_remove() {
    rm -rf --one-file-system "$1"
}

# fresh_chroot ROOT CMD: runs the shell command CMD in ROOT, as a new
# user's machine would: a private mount namespace whose root ROOT is (by
# pivot_root, not chroot: the kernel refuses a chrooted process a new user
# namespace, which every tier makes), with its own /proc, the host's /sys
# (cgroups) and /dev, a fresh /run and /tmp, and a clean environment.
fresh_chroot() {
    unshare --mount --propagation private -- /bin/sh -ec '
        root=$1
        # a machine'"'"'s / is a mount point; a plain directory is not
        mount --bind "$root" "$root"
        mount -t proc proc "$root/proc"
        mount --rbind /sys "$root/sys"
        mount --rbind /dev "$root/dev"
        mount -t tmpfs tmpfs "$root/run"
        mount -t tmpfs tmpfs "$root/tmp"
        mkdir -p "$root/run/old-root"
        cd "$root"
        pivot_root . run/old-root
        exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
            /bin/sh -c "cd / && umount -l /run/old-root && rmdir /run/old-root && $2"
    ' _ "$1" "$2"
}
