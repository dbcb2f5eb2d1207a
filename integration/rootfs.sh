#!/bin/bash
# Builds (once) the busybox-static rootfs the integration tests share, with
# the probe binary in /bin/probe.  Prints the rootfs's absolute path.
# Rebuilds when probe.c or this script is newer than the cached rootfs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/.cache"
rootfs="$cache/rootfs"
stamp="$cache/rootfs.stamp"

if [ -f "$stamp" ] && command -v jq >/dev/null && [ -x /usr/bin/python3 ] && [ -x /usr/bin/runsc ] && [ "$stamp" -nt "$here/probe/probe.c" ] && [ "$stamp" -nt "$here/rootfs.sh" ] \
   && [ -x "$rootfs/bin/probe" ]; then
    echo "$rootfs"
    exit 0
fi

# what the rootfs and the tests need on the host
need=""
for p in busybox-static libc6-dev gcc binutils jq python3 runsc; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
    echo "rootfs.sh: installing$need" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >&2
fi
busybox=/bin/busybox
[ -x "$busybox" ] || busybox=/usr/bin/busybox
if readelf -l "$busybox" 2>/dev/null | grep -q "program interpreter"; then
    echo "rootfs.sh: $busybox is not statically linked" >&2
    exit 1
fi

mkdir -p "$cache"
rm -rf "$rootfs" "$stamp"
tmp="$cache/rootfs.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,root,home/agent,run,var/tmp,mnt/a,mnt/b,mnt/c,mnt/d}
chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
cp "$busybox" "$tmp/bin/busybox"
# busybox --install -s needs /proc/self/exe to be the copy: do it in a chroot.
chroot "$tmp" /bin/busybox --install -s
cat > "$tmp/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
agent:x:1000:1000:agent:/home/agent:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
P
cat > "$tmp/etc/group" <<'G'
root:x:0:
agent:x:1000:
nogroup:x:65534:
G
echo "agentcage-it" > "$tmp/etc/hostname"
chown 1000:1000 "$tmp/home/agent"

gcc -static -O2 -Wall -Wextra -o "$tmp/bin/probe" "$here/probe/probe.c"
strip "$tmp/bin/probe" 2>/dev/null || true
mv "$tmp" "$rootfs"
touch "$stamp"
echo "$rootfs"
