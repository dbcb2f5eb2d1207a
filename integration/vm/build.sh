#!/bin/bash
# Builds (and caches under integration/.cache/vm/) what a test guest needs:
#   vmlinux-<K>      an uncompressed kernel per Debian kernel K (6.1, 6.12),
#                    booted through its PVH entry (6-8 s faster than the
#                    bzImage under TCG: no self-decompression in emulation)
#   base.cpio        busybox-static + /init (integration/vm/init)
#   payload.cpio     agentcage + its shared libraries, the test rootfs and
#                    the guest tests; rebuilt on every call (the binary changes)
# Nothing is installed on the host except qemu-system-x86 and, if missing,
# busybox-static; kernels are fetched with `apt-get download` and unpacked
# with `dpkg -x`.
#
# usage: build.sh [--kernel 6.1|6.12]...   (default: both)
# Prints nothing on success but progress on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="$repo/integration/.cache/vm"
mkdir -p "$cache"

log() { echo "vm/build: $*" >&2; }

# Debian meta-package for each supported kernel line.
meta_package() {
    case "$1" in
        6.1) echo linux-image-amd64 ;;
        6.12) echo linux-image-6.12-amd64 ;;
        *) echo "vm/build: unknown kernel '$1' (6.1 or 6.12)" >&2; return 1 ;;
    esac
}

apt_install() { # PACKAGE...
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 \
        || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
             DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2; }
}

ensure_host_tools() {
    command -v qemu-system-x86_64 >/dev/null || { log "installing qemu-system-x86"; apt_install qemu-system-x86; }
    command -v xz >/dev/null || apt_install xz-utils
    command -v zstd >/dev/null || apt_install zstd
    [ -x /bin/busybox ] || apt_install busybox-static
}

# extract_vmlinux BZIMAGE OUT: the bzImage carries the real kernel as one
# compressed stream (xz or zstd for Debian) after its setup code.  Try every
# offset where a stream's magic appears until one decompresses to an ELF.
extract_vmlinux() {
    local img="$1" out="$2" tmp="$2.tmp" off
    local xz_magic='\xFD7zXZ\x00' zstd_magic='\x28\xB5\x2F\xFD'
    for off in $(LC_ALL=C grep -obUaP "$xz_magic" "$img" | cut -d: -f1); do
        tail -c +"$((off + 1))" "$img" | xz -dc --single-stream > "$tmp" 2>/dev/null || true
        if is_elf "$tmp"; then mv "$tmp" "$out"; return 0; fi
    done
    for off in $(LC_ALL=C grep -obUaP "$zstd_magic" "$img" | cut -d: -f1); do
        # zstd complains about the bytes after the frame; the frame itself is complete.
        tail -c +"$((off + 1))" "$img" | zstd -dcq > "$tmp" 2>/dev/null || true
        if is_elf "$tmp"; then mv "$tmp" "$out"; return 0; fi
    done
    rm -f "$tmp"
    log "no xz or zstd stream in $img decompresses to an ELF kernel"
    return 1
}
is_elf() { [ -s "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

build_kernel() { # K
    local k="$1" meta pkg deb dir
    [ -s "$cache/vmlinux-$k" ] && return 0
    meta="$(meta_package "$k")"
    pkg="$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')"
    if [ -z "$pkg" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        pkg="$(apt-cache depends "$meta" | awk '/Depends: linux-image-/ {print $2; exit}')"
    fi
    [ -n "$pkg" ] || { log "cannot resolve $meta"; return 1; }
    mkdir -p "$cache/debs"
    deb="$(ls "$cache/debs/${pkg}"_*.deb 2>/dev/null | head -1 || true)"
    if [ -z "$deb" ]; then
        log "downloading $pkg"
        (cd "$cache/debs" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
        deb="$(ls "$cache/debs/${pkg}"_*.deb 2>/dev/null | head -1 || true)"
        [ -n "$deb" ] || { log "apt-get download $pkg failed"; return 1; }
    fi
    dir="$cache/pkg-$k"
    rm -rf "$dir"
    mkdir -p "$dir"
    dpkg -x "$deb" "$dir"
    log "extracting vmlinux from $pkg"
    extract_vmlinux "$(ls "$dir"/boot/vmlinuz-* | head -1)" "$cache/vmlinux-$k"
    cp "$(ls "$dir"/boot/config-* | head -1)" "$cache/config-$k"
    echo "$pkg" > "$cache/package-$k"
    # The modules (a few hundred MB unpacked) are not needed: everything the
    # guest uses (cgroups, 8250 serial, devtmpfs, namespaces) is built in.
    rm -rf "$dir"
}

# cpio_of DIR OUT: a newc archive of DIR's contents, owned by root.
cpio_of() {
    (cd "$1" && find . -mindepth 1 | sort | busybox cpio -o -H newc -R 0:0 2>/dev/null) > "$2"
}

build_base() {
    local stamp="$cache/base.cpio"
    if [ -s "$stamp" ] && [ "$stamp" -nt "$here/init" ] && [ "$stamp" -nt "$here/build.sh" ]; then
        return 0
    fi
    log "building base initramfs"
    local tmp="$cache/base.tmp"
    rm -rf "$tmp"
    mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,newroot,vm}
    cp /bin/busybox "$tmp/bin/busybox"
    chroot "$tmp" /bin/busybox --install -s
    install -m 0755 "$here/init" "$tmp/init"
    cpio_of "$tmp" "$cache/base.cpio.tmp"
    mv "$cache/base.cpio.tmp" "$cache/base.cpio"
    rm -rf "$tmp"
}

# The payload: the runtime under test and everything the guest tests need.
build_payload() {
    local bin="${AGENTCAGE:-$repo/agentcage}"
    [ -x "$bin" ] || { log "no agentcage binary at $bin (run make)"; return 1; }
    local rootfs
    rootfs="$("$repo/integration/rootfs.sh")"
    local tmp="$cache/payload.tmp"
    rm -rf "$tmp"
    mkdir -p "$tmp/usr/local/bin" "$tmp/vm"
    cp "$bin" "$tmp/usr/local/bin/agentcage"
    # its helpers live next to it: the watchdog and the policy hooks
    local helper
    for helper in "$(dirname "$bin")"/agentcage-*; do
        [ -x "$helper" ] && cp "$helper" "$tmp/usr/local/bin/"
    done
    # the libraries of the dynamic ones (agentcage itself is static-pie
    # unless built with STATIC_LIBC=0; its helper programs are not)
    local lib
    for lib in $(ldd "$bin" "$(dirname "$bin")"/agentcage-* 2>/dev/null | awk '/=> \// {print $3} /^\s*\/[^ ]+ \(/ {print $1}' | sort -u); do
        mkdir -p "$tmp$(dirname "$lib")"
        cp -L "$lib" "$tmp$lib"
    done
    # /lib64 is a symlink to usr/lib64 on merged-/usr hosts: copy the real path too.
    if [ -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e "$tmp/lib64/ld-linux-x86-64.so.2" ]; then
        mkdir -p "$tmp/lib64"
        cp -L /lib64/ld-linux-x86-64.so.2 "$tmp/lib64/"
    fi
    cp -a "$rootfs" "$tmp/rootfs"
    # the egress proxy's worker runs as the system user agentcage-egress
    # (the host's make install makes it; the guest has no passwd of its own)
    mkdir -p "$tmp/etc"
    printf 'root:x:0:0:root:/root:/bin/sh\nagentcage-egress:x:990:990::/nonexistent:/bin/false\n' > "$tmp/etc/passwd"
    printf 'root:x:0:\nagentcage-egress:x:990:\n' > "$tmp/etc/group"
    install -m 0755 "$here/guest-tests.sh" "$tmp/vm/guest-tests.sh"
    cpio_of "$tmp" "$cache/payload.cpio.tmp"
    mv "$cache/payload.cpio.tmp" "$cache/payload.cpio"
    rm -rf "$tmp"
}

kernels=()
while [ $# -gt 0 ]; do
    case "$1" in
        --kernel) kernels+=("$2"); shift 2 ;;
        --no-payload) no_payload=1; shift ;;
        *) echo "usage: build.sh [--kernel 6.1|6.12]... [--no-payload]" >&2; exit 2 ;;
    esac
done
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1 6.12)

ensure_host_tools
for k in "${kernels[@]}"; do build_kernel "$k"; done
build_base
[ -n "${no_payload:-}" ] || build_payload
