# Filesystem: root, mounts, masked and readonly paths.

test_readonly_root() {
    quick /bin/probe write /etc/should-fail
    assert_eq "$OUT" EROFS "write to readonly root"
}

test_writable_tmpfs_on_readonly_root() {
    quick /bin/probe write /tmp/ok
    assert_eq "$OUT" ok "write to /tmp tmpfs"
}

test_bind_mount_ro() {
    mkdir -p "$T/src" && echo bound > "$T/src/file"
    QUICK_CFG=('.mounts += [{destination: "/mnt/a", type: "bind", source: "'"$T/src"'", options: ["rbind", "ro"]}]')
    quick /bin/sh -c 'cat /mnt/a/file; /bin/probe write /mnt/a/new'
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$OUT" "bound
EROFS" "read ok, write refused"
    [ -e "$T/src/new" ] && fail "write went through a ro bind"
    return 0
}

test_bind_mount_rw() {
    mkdir -p "$T/src"
    QUICK_CFG=('.mounts += [{destination: "/mnt/a", type: "bind", source: "'"$T/src"'", options: ["rbind", "rw"]}]')
    quick /bin/probe write /mnt/a/new
    assert_eq "$OUT" ok "write into rw bind"
    assert_eq "$(cat "$T/src/new")" probe "file visible on host"
}

test_bind_mount_file() {
    echo file-content > "$T/onefile"
    QUICK_CFG=('.mounts += [{destination: "/etc/hostname", type: "bind", source: "'"$T/onefile"'", options: ["bind", "ro"]}]')
    quick /bin/cat /etc/hostname
    assert_eq "$OUT" file-content "bind-mounted file"
}

test_tmpfs_size() {
    QUICK_CFG=('.mounts += [{destination: "/mnt/b", type: "tmpfs", source: "tmpfs", options: ["size=2m"]}]')
    quick /bin/sh -c 'df -k /mnt/b | tail -1 | awk "{print \$2}"'
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$OUT" 2048 "tmpfs size in KiB"
}

XFAIL_RUNC+=" test_tmpfs_mode"  # runc 1.1 chmods a tmpfs back to the mount point's mode
test_tmpfs_mode() {
    QUICK_CFG=('.mounts += [{destination: "/mnt/b", type: "tmpfs", source: "tmpfs", options: ["mode=1777"]}]')
    quick /bin/stat -c %A /mnt/b
    assert_eq "$OUT" drwxrwxrwt "tmpfs mode"
}

test_mount_options_nosuid_noexec() {
    QUICK_CFG=('.mounts += [{destination: "/mnt/b", type: "tmpfs", source: "tmpfs", options: ["nosuid", "noexec", "nodev"]}]')
    quick /bin/sh -c 'grep " /mnt/b " /proc/self/mountinfo'
    assert_contains "$OUT" nosuid
    assert_contains "$OUT" noexec
    assert_contains "$OUT" nodev
}

test_mount_propagation_rprivate() {
    # a host mount under a shared bind source must not reach an rprivate bind
    mkdir -p "$T/prop"
    mount --bind "$T/prop" "$T/prop" || fail "bind"
    mount --make-shared "$T/prop" || fail "make-shared"
    mkdir -p "$T/prop/sub"
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.mounts += [{destination: "/mnt/a", type: "bind", source: "'"$T/prop"'", options: ["rbind", "rprivate"]}]'
    rt_create "$id"
    ok rt start "$id"
    mount -t tmpfs tmpfs "$T/prop/sub" || fail "host mount failed"
    touch "$T/prop/sub/marker"
    run_in "$id" /bin/ls /mnt/a/sub
    local seen="$OUT" rc="$RC"
    umount "$T/prop/sub"
    ok rt delete --force "$id"
    umount "$T/prop"
    [ "$rc" == 0 ] || fail "exec failed: $seen"
    assert_eq "$seen" "" "private bind sees the host's new mount"
}

test_mount_propagation_rslave() {
    mkdir -p "$T/prop"
    mount --bind "$T/prop" "$T/prop" || fail "bind"
    mount --make-shared "$T/prop" || fail "make-shared"
    mkdir -p "$T/prop/sub"
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.mounts += [{destination: "/mnt/a", type: "bind", source: "'"$T/prop"'", options: ["rbind", "rslave"]}] | .linux.rootfsPropagation = "rslave"'
    rt_create "$id"
    ok rt start "$id"
    mount -t tmpfs tmpfs "$T/prop/sub" || fail "host mount failed"
    touch "$T/prop/sub/marker"
    run_in "$id" /bin/ls /mnt/a/sub
    local seen="$OUT" rc="$RC"
    umount "$T/prop/sub"
    ok rt delete --force "$id"
    umount "$T/prop"
    [ "$rc" == 0 ] || fail "exec failed: $seen"
    assert_eq "$seen" marker "slave bind sees the host's new mount"
}

test_masked_paths() {
    QUICK_CFG=('.linux.maskedPaths += ["/mnt/c"]')
    quick /bin/sh -c 'cat /proc/timer_list | wc -c; ls /sys/firmware | wc -l; ls /mnt/c | wc -l'
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$(echo "$OUT" | tr -d ' ' | tr '\n' ' ')" "0 0 0 " "masked file empty, masked dirs empty"
}

test_readonly_paths() {
    QUICK_CFG=('.process.capabilities.effective += ["CAP_SYS_ADMIN"] | .process.capabilities.bounding += ["CAP_SYS_ADMIN"] | .process.capabilities.permitted += ["CAP_SYS_ADMIN"]')
    quick /bin/sh -c 'probe write /proc/sys/kernel/hostname; probe write /proc/sys/kernel/domainname'
    assert_eq "$OUT" "EROFS
EROFS" "writes to readonly paths"
}

# A readonly path that is a mount of the container's own (/dev, with
# /dev/shm on it): read-only with every mount beneath it, and the
# container sees one mount there, not a copy over the original.
test_readonly_path_on_a_mount() {
    QUICK_CFG=('.linux.readonlyPaths += ["/dev"]')
    quick /bin/sh -c 'probe write /dev/x; probe write /dev/shm/x; grep -c " /dev/shm " /proc/self/mountinfo; grep -c " /dev " /proc/self/mountinfo'
    assert_eq "$(echo "$OUT" | tr '\n' ' ')" "EROFS EROFS 1 1 " "/dev and /dev/shm read-only, once each"
}
# runc 1.1 binds /dev over itself without its submounts: /dev/shm stays
# writable, and both show twice
XFAIL_RUNC+=" test_readonly_path_on_a_mount"

test_proc_and_sys_mounted() {
    quick /bin/sh -c 'awk "{print \$5}" /proc/self/mountinfo | grep -Ex "/proc|/sys|/dev|/dev/pts|/dev/shm|/dev/mqueue" | sort | tr "\n" " "'
    assert_eq "$OUT" "/dev /dev/mqueue /dev/pts /dev/shm /proc /sys " "mount points"
}

test_default_devices() {
    quick /bin/sh -c 'for d in null zero full random urandom tty; do [ -c /dev/$d ] && echo -n "$d "; done; echo; readlink /dev/fd; readlink /dev/stdin; readlink /dev/ptmx'
    assert_eq "$(echo "$OUT" | sed -n 1p)" "null zero full random urandom tty " "default char devices"
    assert_eq "$(echo "$OUT" | sed -n 2p)" /proc/self/fd "/dev/fd link"
    assert_eq "$(echo "$OUT" | sed -n 3p)" /proc/self/fd/0 "/dev/stdin link"
    assert_eq "$(echo "$OUT" | sed -n 4p)" pts/ptmx "/dev/ptmx link"
}

test_dev_null_usable() {
    quick /bin/sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c'
    assert_eq "$OUT" 4
}

test_devices_denied_by_default() {
    # device cgroup: mknod of a char device not in the allow list fails
    QUICK_CFG=('.process.capabilities.effective += ["CAP_MKNOD"] | .process.capabilities.bounding += ["CAP_MKNOD"] | .process.capabilities.permitted += ["CAP_MKNOD"]')
    quick /bin/sh -c 'probe mknod /dev/kmsg2 1 11; probe write /dev/kmsg2'
    assert_eq "$OUT" "ok
EPERM" "mknod, then open of a device the cgroup does not allow"
}

test_linux_devices_created() {
    QUICK_CFG=('.linux.devices = [{path: "/dev/kmsg2", type: "c", major: 1, minor: 11, fileMode: 420, uid: 0, gid: 0}]')
    quick /bin/stat -c '%F %t %T %a' /dev/kmsg2
    assert_eq "$OUT" "character special file 1 b 644" "device node"
}

test_cgroup_mount() {
    QUICK_CFG=('.mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["nosuid", "noexec", "nodev", "relatime", "ro"]}]')
    quick /bin/sh -c 'ls /sys/fs/cgroup/memory/memory.limit_in_bytes'
    assert_eq "$RC" 0 "exit: $OUT"
}

# Each hierarchy the host mounts shows the container's own cgroup, read-only
# (bound from the host mount, found in the runtime's cgroup layout); in a
# cgroup namespace of its own, a fresh mount of each hierarchy shows its root.
test_cgroup_mount_shows_the_containers_cgroup() {
    local cfg_mount='.mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["nosuid", "noexec", "nodev", "relatime", "ro"]}]'
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'awk '"'"'$9 ~ /^cgroup2?$/ {print $4, $5, $6}'"'"' /proc/self/mountinfo'
    cfg "$cfg_mount"
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 </dev/null)" || fail "run failed: $OUT"
    local n_host n_seen
    n_host="$(awk '$9 ~ /^cgroup2?$/ && $5 ~ "^/sys/fs/cgroup/" {n++} END {print n+0}' /proc/self/mountinfo)"
    n_seen="$(echo "$OUT" | grep -c " /sys/fs/cgroup/")"
    assert_eq "$n_seen" "$n_host" "one mount per host hierarchy: $OUT"
    local bad
    bad="$(echo "$OUT" | awk -v cg="/$CGROUP_PARENT/$id" '$1 != cg || $3 !~ /^ro,/')"
    assert_eq "$bad" "" "every one the container's cgroup ($id), read-only: $OUT"
    # a cgroup namespace of its own: each shows the namespace's root
    id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'awk '"'"'$9 ~ /^cgroup2?$/ {print $4, $5, $6}'"'"' /proc/self/mountinfo'
    cfg "$cfg_mount"
    cfg '.linux.namespaces += [{type: "cgroup"}]'
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 </dev/null)" || fail "run (cgroup namespace) failed: $OUT"
    n_seen="$(echo "$OUT" | grep -c " /sys/fs/cgroup/")"
    assert_eq "$n_seen" "$n_host" "one mount per host hierarchy (cgroup namespace): $OUT"
    bad="$(echo "$OUT" | awk '$1 != "/" || $3 !~ /^ro,/')"
    assert_eq "$bad" "" "every one the namespace's root, read-only: $OUT"
}

# A mount namespace joined by path with a cgroup mount: the init takes the
# hierarchies' mounts from that namespace (its own mountinfo), not from the
# runtime's. Here the namespace lacks the host's cgroup2 mounts: one bind
# per v1 hierarchy of that namespace, the container's cgroup, and no
# cgroup2 (as runc does). (The joined namespace is the holder's: the
# container's pivot_root is done in it.)
test_cgroup_mount_in_a_joined_mount_namespace() {
    bg unshare -m --propagation private /bin/sh -c \
        'for m in $(awk '"'"'$9 == "cgroup2" {print $5}'"'"' /proc/self/mountinfo); do umount "$m" || exit 1; done; exec sleep 60'
    local holder="$BG_PID" i
    for i in $(seq 100); do
        [ "$(cat "/proc/$holder/comm" 2>/dev/null)" = sleep ] && break
        sleep 0.05
    done
    assert_eq "$(cat "/proc/$holder/comm" 2>/dev/null)" sleep "the holder of the mount namespace"
    local want
    want="$(awk '$9 == "cgroup" && $5 ~ "^/sys/fs/cgroup/" {print $5}' "/proc/$holder/mountinfo" | sort -u)"
    assert_eq "$(awk '$9 == "cgroup2"' "/proc/$holder/mountinfo")" "" "no cgroup2 in the holder's namespace"
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'awk '"'"'$9 ~ /^cgroup2?$/ {print $4, $5, $6, $9}'"'"' /proc/self/mountinfo'
    cfg --arg p "/proc/$holder/ns/mnt" '.linux.namespaces |= map(if .type == "mount" then . + {path: $p} else . end)
        | .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["nosuid", "noexec", "nodev", "relatime", "ro"]}]'
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 </dev/null)" || fail "run failed: $OUT"
    kill "$holder"
    assert_eq "$(echo "$OUT" | awk '{print $2}' | sort -u)" "$want" "one mount per hierarchy of the joined namespace: $OUT"
    assert_eq "$(echo "$OUT" | awk '$4 == "cgroup2"')" "" "no cgroup2: $OUT"
    assert_eq "$(echo "$OUT" | awk -v cg="/$CGROUP_PARENT/$id" '$1 != cg || $3 !~ /^ro,/')" "" \
        "every one the container's cgroup ($id), read-only: $OUT"
}

test_root_path_relative_to_bundle() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/echo relative-root
    cfg --arg p "$(realpath --relative-to="$BUNDLE" "$ROOTFS")" '.root.path = $p'
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 </dev/null)" || fail "run failed: $OUT"
    assert_eq "$OUT" relative-root
}
