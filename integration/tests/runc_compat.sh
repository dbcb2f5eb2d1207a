# Behaviour of a plain container that runc's own integration suite and the
# OCI validation suite check (issue 24, docs/conformance.md), each as a user
# sees it; where a tier keeps a refusal, that is checked too.

source "$IT_DIR/tiers_lib.sh"

# host_ns_holder TYPE...: a host process in new namespaces of TYPEs
# (unshare flags), tracked; sets $BG_PID.
host_ns_holder() {
    bg unshare "$@" sleep 600
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(readlink /proc/$BG_PID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] ||
            [ "$(readlink /proc/$BG_PID/ns/uts)" != "$(readlink /proc/self/ns/uts)" ] && return 0
        sleep 0.05
    done
    fail "unshare $* did not start"
}

test_compat_join_mount_namespace_by_path() {
    host_ns_holder --mount --propagation private
    local holder=$BG_PID
    QUICK_CFG=('.linux.namespaces |= map(if .type == "mount" then .path = "/proc/'"$holder"'/ns/mnt" else . end)')
    quick /bin/readlink /proc/self/ns/mnt
    assert_eq "$RC" 0 "run in a joined mount namespace: $OUT"
    assert_eq "$OUT" "$(readlink /proc/$holder/ns/mnt)" "the container's mount namespace is the joined one"
    # at a tier the cage needs a mount namespace of its own
    ATTACK_CFG=('.linux.namespaces |= map(if .type == "mount" then .path = "/proc/'"$holder"'/ns/mnt" else . end)')
    attack 0 /bin/true
    assert_eq "$RC" 1 "tier 0 refuses a joined mount namespace: $OUT"
    assert_contains "$OUT" "forbids joining the mount namespace"
    kill "$holder"; wait "$holder" 2>/dev/null
    return 0
}

test_compat_hostname_in_joined_uts_namespace() {
    host_ns_holder --uts
    local holder=$BG_PID host_name; host_name="$(hostname)"
    QUICK_CFG=('.linux.namespaces |= map(if .type == "uts" then .path = "/proc/'"$holder"'/ns/uts" else . end)'
               '.hostname = "joined-uts"')
    quick /bin/hostname
    assert_eq "$RC" 0 "run: $OUT"
    assert_eq "$OUT" joined-uts "hostname inside"
    assert_eq "$(nsenter -t "$holder" -u hostname)" joined-uts "hostname of the joined namespace"
    assert_eq "$(hostname)" "$host_name" "the host's hostname is untouched"
    # the host's own uts namespace by path: its hostname is not the container's to set
    QUICK_CFG=('.linux.namespaces |= map(if .type == "uts" then .path = "/proc/'"$$"'/ns/uts" else . end)'
               '.hostname = "not-the-host"')
    quick /bin/hostname
    assert_ne "$RC" 0 "hostname in the host's uts namespace refused"
    assert_contains "$OUT" "hostname: setting it needs a uts namespace of the container's"
    assert_eq "$(hostname)" "$host_name" "the host's hostname is untouched"
    kill "$holder"; wait "$holder" 2>/dev/null
    return 0
}

test_compat_seccomp_notify_that_would_block_is_refused() {
    local filter
    for filter in \
        '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", listenerPath: "/nonexistent.sock", syscalls: [{names: ["write"], action: "SCMP_ACT_NOTIFY"}]}' \
        '.linux.seccomp = {defaultAction: "SCMP_ACT_NOTIFY", listenerPath: "/nonexistent.sock"}' \
        '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir"], action: "SCMP_ACT_NOTIFY"}]}'; do
        QUICK_CFG=("$filter")
        quick /bin/true
        assert_ne "$RC" 0 "refused: $filter"
        assert_match "$OUT" "SCMP_ACT_NOTIFY (cannot be used|needs a listener path)" "the reason is named"
    done
}

test_compat_readonly_dev_gets_its_devices() {
    QUICK_CFG=('.mounts |= map(if .destination == "/dev" then .options += ["ro"] else . end)')
    quick /bin/sh -c 'grep "^tmpfs /dev " /proc/mounts; ls /dev/null /dev/pts/ptmx; touch /dev/x 2>&1'
    assert_eq "$RC" 1 "touch fails: $OUT"
    assert_match "$(echo "$OUT" | head -1)" '^tmpfs /dev tmpfs ro,' "/dev is read-only"
    assert_contains "$OUT" "/dev/null"
    assert_contains "$OUT" "Read-only file system"
}

test_compat_exec_into_paused_container() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    rt_start "$id"
    ok rt pause "$id"
    run_in "$id" /bin/true
    assert_eq "$RC" 255 "exec's own failure exits 255 (as runc)"
    assert_contains "$OUT" "cannot exec in a paused container"
    # --ignore-paused: the process starts frozen and runs once resumed
    (sleep 1; rt resume "$id") &
    OUT="$(timeout 20 "$RUNTIME" --root "$ROOT" exec --ignore-paused "$id" /bin/echo ran 2>&1 < /dev/null)"
    RC=$?
    wait
    assert_eq "$RC" 0 "exec --ignore-paused: $OUT"
    assert_eq "$OUT" ran "its output once resumed"
    ok rt delete --force "$id"
}

test_compat_events_reports_an_oom_kill() {
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.linux.resources.memory = {limit: 33554432, swap: 33554432}'
    rt_create "$id"
    rt_start "$id"
    timeout 15 "$RUNTIME" --root "$ROOT" events "$id" > "$T/events.log" 2>&1 < /dev/null &
    local ev=$!
    track_pid "$ev"
    sleep 0.5
    rt exec -d "$id" /bin/sh -c 'x=$(cat /dev/urandom)' > /dev/null 2>&1 < /dev/null
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q '"type":"oom"' "$T/events.log" && break
        sleep 0.1
    done
    ok rt delete --force "$id"
    wait "$ev"
    assert_contains "$(cat "$T/events.log")" "{\"type\":\"oom\",\"id\":\"$id\"}" "the oom event"
    assert_contains "$(head -1 "$T/events.log")" '"type":"stats"' "stats first"
}

test_compat_userns_binds_a_source_only_host_root_reaches() {
    mkdir -p "$T/private/dir"
    echo secret-ok > "$T/private/dir/f"
    chmod 700 "$T/private"
    QUICK_CFG=('.linux.namespaces += [{type: "user"}]'
               '.linux.uidMappings = [{hostID: 100000, containerID: 0, size: 65536}]'
               '.linux.gidMappings = [{hostID: 100000, containerID: 0, size: 65536}]'
               '.mounts += [{destination: "/mnt", type: "bind", source: "'"$T/private/dir"'", options: ["bind", "ro"]}]')
    quick /bin/cat /mnt/f
    assert_eq "$RC" 0 "run: $OUT"
    assert_eq "$OUT" secret-ok "the bind source behind a 0700 folder of host root's is mounted"
}
