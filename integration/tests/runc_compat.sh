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

# runc's -ENOSYS stub: a syscall newer than every one the profile names
# (here 1000, and clone3 for a profile of older calls) gets ENOSYS, so libc
# falls back, where the default action would give EPERM; a syscall the
# profile knows but does not allow still gets the default action.
test_compat_seccomp_unknown_syscalls_get_enosys() {
    local profile='{defaultAction: "SCMP_ACT_ERRNO", architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
                    syscalls: [{names: ["read", "write", "close", "exit", "exit_group", "execve", "brk", "arch_prctl",
                                        "mmap", "munmap", "mprotect", "rt_sigaction", "rt_sigprocmask", "fstat",
                                        "newfstatat", "set_tid_address", "set_robust_list", "prlimit64", "readlink",
                                        "getrandom", "rseq", "futex", "uname"], action: "SCMP_ACT_ALLOW"}]}'
    local what want
    for what in "nr 1000:ENOSYS" "nr 435:ENOSYS" "nr 83:EPERM" "nr 84:EPERM"; do
        want="${what#*:}"
        QUICK_CFG=(".linux.seccomp = $profile")
        # shellcheck disable=SC2086
        quick /bin/probe syscall ${what%:*}
        assert_eq "$RC" 0 "run under the profile: $OUT"
        assert_eq "$OUT" "$want" "syscall ${what%:*} (the profile's last is rseq, 334)"
    done
    # a default action that allows (nothing to fall back from): no stub
    QUICK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir"], action: "SCMP_ACT_ERRNO"}]}')
    quick /bin/probe syscall mkdir /tmp/x
    assert_eq "$OUT" EPERM "the rule still applies"
}

# A deny rule with a letter that is not r, w or m (runc's suite writes
# "rwa") is taken as denying rwm, with a warning; an allow rule like it is
# still refused.
test_compat_device_deny_rule_with_unknown_access_letter() {
    # /dev/kmsg (1:11), which no default rule allows: read allowed, then denied by "rwa"
    local syslog='.process.capabilities |= with_entries(.value += ["CAP_SYSLOG"])'
    QUICK_CFG=("$syslog" '.linux.devices = [{path: "/dev/kmsg", type: "c", major: 1, minor: 11}]'
               '.linux.resources.devices = [{allow: false, access: "rwm"}, {allow: true, type: "c", major: 1, minor: 11, access: "r"}, {allow: false, type: "c", major: 1, minor: 11, access: "rwa"}]')
    quick /bin/sh -c 'head -c 1 /dev/kmsg > /dev/null && echo read'
    assert_contains "$OUT" 'linux.resources.devices[2].access: "rwa" has letters other than r, w, m: this deny rule denies rwm'
    assert_contains "$OUT" "Operation not permitted" "/dev/kmsg denied by the deny rule"
    assert_not_contains "$OUT" read "no read"
    QUICK_CFG=("$syslog" '.linux.devices = [{path: "/dev/kmsg", type: "c", major: 1, minor: 11}]'
               '.linux.resources.devices = [{allow: false, access: "rwm"}, {allow: true, type: "c", major: 1, minor: 11, access: "r"}]')
    quick /bin/sh -c 'head -c 1 /dev/kmsg > /dev/null && echo read'
    assert_contains "$OUT" read "without the deny rule it is readable: $OUT"
    QUICK_CFG=('.linux.resources.devices = [{allow: true, type: "c", major: 1, minor: 3, access: "rwa"}]')
    quick /bin/true
    assert_ne "$RC" 0 "an allow rule with an unknown letter is refused"
    assert_contains "$OUT" 'linux.resources.devices[0].access: invalid device access "rwa"'
}

# A config without a mount namespace: the container shares the runtime's,
# its mounts go on a private bind of its rootfs, and nothing stays mounted
# after delete (nor after a failed create); a tier adds its own.
# our_mounts: the mounts beneath this test's folders (the machine's other
# mounts come and go with other people's work)
our_mounts() { findmnt -rn -o TARGET | grep -E "^($T|$ROOT)(/|\$)" | sort; }

test_compat_no_mount_namespace_shares_the_runtimes() {
    local before; before="$(our_mounts)"
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.linux.namespaces |= map(select(.type != "mount"))'
    rt_create "$id"
    rt_start "$id"
    local pid; pid="$(cpid "$id")"
    assert_eq "$(readlink /proc/$pid/ns/mnt)" "$(readlink /proc/self/ns/mnt)" "the runtime's mount namespace"
    # its mounts on a private bind of the rootfs in its state folder
    assert_contains "$(findmnt -rn -o TARGET)" "$ROOT/$id/rootfs/proc" "the container's /proc"
    assert_eq "$(rt exec "$id" /bin/ls /bin/probe 2>&1)" /bin/probe "exec runs in the container's root"
    assert_eq "$(readlink /proc/$pid/root)" "$ROOT/$id/rootfs" "chrooted into it"
    ok rt delete --force "$id"
    assert_eq "$(our_mounts)" "$before" "nothing left mounted after delete"
    # a create that fails after its mounts were made leaves none either
    id="$(new_id)"
    make_bundle "$id" /bin/true
    cfg '.linux.namespaces |= map(select(.type != "mount"))'
    cfg '.mounts += [{destination: "/nonexistent-src", type: "bind", source: "/nonexistent-src", options: ["bind"]}]'
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"; RC=$?
    assert_ne "$RC" 0 "a missing bind source fails: $OUT"
    assert_eq "$(our_mounts)" "$before" "nothing left mounted after the failed create"
    # a tier's cage adds a mount namespace of its own
    ATTACK_CFG=('.linux.namespaces |= map(select(.type != "mount"))')
    attack 0 /bin/readlink /proc/self/ns/mnt
    assert_eq "$RC" 0 "tier 0: $OUT"
    assert_ne "$OUT" "$(readlink /proc/self/ns/mnt)" "the cage has a mount namespace of its own"
    assert_eq "$(our_mounts)" "$before" "nothing left mounted"
}

# runc's words where they say what agentcage does too (docs/conformance.md).
test_compat_wording_of_debug_help_and_errors() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/true
    OUT="$("$RUNTIME" --root "$ROOT" --debug run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"
    assert_contains "$OUT" "child process in init()"
    assert_contains "$OUT" "nsexec container setup"
    assert_contains "$OUT" "init: closing the pipe to signal completion"
    OUT="$(rt -h)"
    assert_eq "$(echo "$OUT" | head -1)" "NAME:"
    assert_contains "$(echo "$OUT" | sed -n 2p)" 'agentcage - drop-in for "runc - Open Container Initiative runtime"'
    assert_contains "$(rt delete -h | sed -n 2p)" 'agentcage delete - delete a container (drop-in for "runc delete")'
    OUT="$(rt foo -h 2>&1)"; RC=$?
    assert_ne "$RC" 0 "foo -h fails"
    assert_contains "$OUT" "No help topic for 'foo'"
    assert_match "$(rt -v | head -1)" '^agentcage version ' "the version names agentcage"
    # checkpoint is not supported, but a wrong --parent-path is named first
    OUT="$(rt checkpoint --parent-path /abs x 2>&1)"
    assert_contains "$OUT" "--parent-path must be relative"
    OUT="$(rt checkpoint x 2>&1)"
    assert_contains "$OUT" "checkpoint is not supported by agentcage"
    # a startContainer hook killed by the filter: the signal named in words
    QUICK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir"], action: "SCMP_ACT_KILL"}]}'
               '.hooks = {startContainer: [{path: "/bin/sh", args: ["sh", "-c", "mkdir /tmp/foo"]}]}')
    quick /bin/true
    assert_ne "$RC" 0 "the run fails"
    assert_contains "$OUT" "error running hook: startContainer hook #0 (/bin/sh) killed by signal 31 (SIGSYS: bad system call)"
}
