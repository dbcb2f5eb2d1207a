# Namespaces (runtime-spec linux.namespaces).

test_pid_ns_init_is_pid1() {
    quick /bin/probe pid
    assert_eq "$RC" 0
    assert_eq "$OUT" 1 "pid inside container"
}

test_pid_ns_sees_only_own_processes() {
    quick /bin/ls /proc
    assert_eq "$RC" 0
    assert_eq "$(echo "$OUT" | grep -E '^[0-9]+$' | tr '\n' ' ')" "1 " "pids visible in the container"
}

test_uts_hostname() {
    QUICK_CFG=('.hostname = "cage-host"')
    quick /bin/hostname
    assert_eq "$RC" 0
    assert_eq "$OUT" cage-host "hostname"
}

XFAIL_RUNC+=" test_uts_domainname"  # runc 1.1 ignores domainname
test_uts_domainname() {
    QUICK_CFG=('.domainname = "cage.example"')
    quick /bin/cat /proc/sys/kernel/domainname
    assert_eq "$OUT" cage.example "domainname"
}

test_net_ns_only_lo() {
    quick /bin/sh -c 'ls /sys/class/net | tr "\n" " "'
    assert_eq "$RC" 0
    assert_eq "$OUT" "lo " "network interfaces"
}

test_net_ns_differs_from_host() {
    quick /bin/readlink /proc/self/ns/net
    assert_ne "$OUT" "$(readlink /proc/self/ns/net)" "net ns"
}

test_ipc_ns_differs_from_host() {
    quick /bin/readlink /proc/self/ns/ipc
    assert_ne "$OUT" "$(readlink /proc/self/ns/ipc)" "ipc ns"
}

test_mount_ns_differs_from_host() {
    quick /bin/readlink /proc/self/ns/mnt
    assert_ne "$OUT" "$(readlink /proc/self/ns/mnt)" "mnt ns"
}

test_cgroup_ns() {
    QUICK_CFG=('.linux.namespaces += [{type: "cgroup"}]')
    quick /bin/sh -c 'readlink /proc/self/ns/cgroup; grep memory /proc/self/cgroup'
    assert_eq "$RC" 0 "exit: $OUT"
    assert_ne "$(echo "$OUT" | head -1)" "$(readlink /proc/self/ns/cgroup)" "cgroup ns"
    assert_match "$(echo "$OUT" | tail -1)" ':memory:/$' "container sees its cgroup as root"
}

test_no_net_ns_shares_host() {
    QUICK_CFG=('.linux.namespaces |= map(select(.type != "network"))')
    quick /bin/readlink /proc/self/ns/net
    assert_eq "$OUT" "$(readlink /proc/self/ns/net)" "net ns shared with host"
}

test_join_net_ns_by_path() {
    bg unshare --net /bin/sleep 60
    local holder="$BG_PID" i
    for i in $(seq 50); do
        [ "$(readlink /proc/$holder/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
        sleep 0.05
    done
    local want; want="$(readlink /proc/$holder/ns/net)"
    assert_ne "$want" "$(readlink /proc/self/ns/net)" "holder in its own net ns"
    QUICK_CFG=(".linux.namespaces |= map(if .type == \"network\" then {type: \"network\", path: \"/proc/$holder/ns/net\"} else . end)")
    quick /bin/readlink /proc/self/ns/net
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$OUT" "$want" "joined net ns"
    kill "$holder"
}

test_join_missing_ns_path_fails() {
    QUICK_CFG=('.linux.namespaces |= map(if .type == "network" then {type: "network", path: "/proc/999999999/ns/net"} else . end)')
    quick /bin/true
    assert_ne "$RC" 0 "exit status"
}

test_user_ns_mappings() {
    QUICK_CFG=('.linux.namespaces += [{type: "user"}]
        | .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
        | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
        | .root.readonly = false')
    quick /bin/sh -c 'cat /proc/self/uid_map; cat /proc/self/gid_map; id -u'
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$(echo "$OUT" | sed -n 1p | tr -s ' ' | sed 's/^ //')" "0 100000 65536" "uid_map"
    assert_eq "$(echo "$OUT" | sed -n 2p | tr -s ' ' | sed 's/^ //')" "0 100000 65536" "gid_map"
    assert_eq "$(echo "$OUT" | sed -n 3p)" 0 "uid inside"
}

# host_listener: a TCP listener on the host's 127.0.0.1; port in $PORT.
host_listener() {
    "$PYTHON3" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(30)
try:
    while True: s.accept()[0].close()
except Exception: pass' "$T/port" </dev/null >/dev/null 2>&1 &
    track_pid $!
    LISTENER_PID=$!
    local i
    for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
    PORT="$(cat "$T/port")"
    [ -n "$PORT" ] || fail "host listener did not start"
}

test_net_ns_loopback_up() {
    # lo is up in a new network namespace: connecting to a closed port is refused, not unreachable
    quick /bin/probe connect 127.0.0.1 9
    assert_eq "$OUT" ECONNREFUSED "connect to a closed port on the container's lo"
}

test_net_ns_isolates_host_loopback() {
    host_listener
    quick /bin/probe connect 127.0.0.1 "$PORT"
    assert_eq "$OUT" ECONNREFUSED "connect from the container to a host-only listener"
    QUICK_CFG=('.linux.namespaces |= map(select(.type != "network"))')
    quick /bin/probe connect 127.0.0.1 "$PORT"
    assert_eq "$OUT" ok "connect with the host network namespace"
    kill "$LISTENER_PID"
}

test_packet_socket_needs_cap_net_raw() {
    quick /bin/sh -c 'probe socket packet raw; probe socket inet dgram; probe udp 127.0.0.1 9'
    assert_eq "$OUT" "EPERM
ok
ok" "AF_PACKET refused, UDP allowed"
}
