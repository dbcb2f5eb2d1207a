# exec: extra processes in a running container.

# running ID-VAR: creates and starts a default container, id in $CID.
running() {
    CID="$(new_id)"
    make_bundle "$CID" "$@"
    rt_create "$CID"
    ok rt start "$CID"
}

test_exec_argv_and_output() {
    running
    run_in "$CID" /bin/echo hello "two words"
    assert_eq "$RC" 0
    assert_eq "$OUT" "hello two words"
    ok rt delete --force "$CID"
}

test_exec_exit_code() {
    running
    run_in "$CID" /bin/sh -c 'exit 7'
    assert_eq "$RC" 7 "exec exit status"
    run_in "$CID" /bin/probe exit 0
    assert_eq "$RC" 0 "exec exit status"
    ok rt delete --force "$CID"
}

test_exec_joins_namespaces() {
    running
    run_in "$CID" /bin/sh -c 'hostname; cat /proc/1/cmdline | tr "\0" " "; echo; readlink /proc/self/ns/net'
    assert_eq "$(echo "$OUT" | sed -n 1p)" agentcage-it "hostname"
    assert_eq "$(echo "$OUT" | sed -n 2p)" "/bin/probe sleep 600 " "pid 1 is the container init"
    assert_eq "$(echo "$OUT" | sed -n 3p)" "$(readlink /proc/$(cpid "$CID")/ns/net)" "net ns"
    ok rt delete --force "$CID"
}

# Every hierarchy, the cgroup2 one of a hybrid host included: the exec'd
# process joins them itself (v1 by the tasks files, cgroup2 by clone3), as
# a vfork-like child the runtime does not wait on, before its execve.
test_exec_joins_cgroup() {
    running
    run_in "$CID" /bin/cat /proc/self/cgroup
    assert_match "$(echo "$OUT" | grep ':memory:')" "/$CGROUP_PARENT/$CID\$" "exec'd process memory cgroup"
    local want; want="$(awk '$9 ~ /^cgroup2?$/ && $5 ~ "^/sys/fs/cgroup/?" {n++} END {print n+0}' /proc/self/mountinfo)"
    assert_eq "$(echo "$OUT" | grep -c ":/$CGROUP_PARENT/$CID\$")" "$want" "every hierarchy: $OUT"
    # the runtime goes on after it (pid file, audit), and a second exec too
    rt exec --detach --pid-file "$T/p1" "$CID" /bin/probe sleep 600 >/dev/null 2>&1 </dev/null || fail "exec -d failed"
    track_pid "$(cat "$T/p1")"
    assert_eq "$(grep -c ":/$CGROUP_PARENT/$CID\$" "/proc/$(cat "$T/p1")/cgroup")" "$want" "detached exec's cgroups"
    ok rt delete --force "$CID"
}

test_exec_env_cwd_user() {
    running
    OUT="$(rt exec --env FOO=bar --cwd /tmp --user 1000:1000 "$CID" /bin/sh -c 'echo $FOO; pwd; probe ids' 2>&1 </dev/null)"; RC=$?
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$(echo "$OUT" | sed -n 1p)" bar "env"
    assert_eq "$(echo "$OUT" | sed -n 2p)" /tmp "cwd"
    assert_contains "$(echo "$OUT" | sed -n 3p)" "uid=1000 gid=1000" "user"
    ok rt delete --force "$CID"
}

test_exec_process_file() {
    running
    jq -n '{terminal: false, user: {uid: 65534, gid: 65534}, args: ["/bin/sh", "-c", "echo $X; pwd; id -u"],
        env: ["PATH=/bin", "X=from-process-json"], cwd: "/mnt", capabilities: {bounding: [], effective: [], permitted: []}}' > "$T/process.json"
    OUT="$(rt exec --process "$T/process.json" "$CID" 2>&1 </dev/null)"; RC=$?
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$OUT" "from-process-json
/mnt
65534" "process.json"
    ok rt delete --force "$CID"
}

test_exec_detach_pid_file() {
    running
    rt exec --detach --pid-file "$T/exec.pid" "$CID" /bin/probe sleep 600 >/dev/null 2>"$T/err" </dev/null || fail "exec -d failed: $(cat "$T/err")"
    local p; p="$(cat "$T/exec.pid")"
    track_pid "$p"
    assert_match "$p" '^[0-9]+$' "pid file"
    assert_eq "$(tr '\0' ' ' < /proc/$p/cmdline)" "/bin/probe sleep 600 " "detached exec process"
    ok rt delete --force "$CID"
    sleep 0.1
    [ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" && fail "exec'd process survived delete --force"
    return 0
}

test_exec_no_fd_leak() {
    running
    OUT="$(rt exec "$CID" /bin/probe fds 5>"$T/extra" 2>&1 </dev/null)" || fail "exec failed: $OUT"
    assert_eq "$(echo "$OUT" | awk '{print $1}' | tr '\n' ' ')" "0 1 2 " "fds of an exec'd process"
    ok rt delete --force "$CID"
}

test_exec_inherits_seccomp_and_nnp() {
    CID="$(new_id)"
    make_bundle "$CID"
    cfg '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO"}]}'
    rt_create "$CID"
    ok rt start "$CID"
    run_in "$CID" /bin/sh -c 'probe syscall mkdir /tmp/x; probe caps'
    assert_eq "$(echo "$OUT" | sed -n 1p)" EPERM "seccomp in exec'd process"
    assert_contains "$OUT" "NoNewPrivs=1"
    assert_contains "$OUT" "CapBnd=0000000020000420"
    ok rt delete --force "$CID"
}

test_exec_in_stopped_container_fails() {
    running /bin/true
    wait_status "$CID" stopped
    run_in "$CID" /bin/true
    assert_ne "$RC" 0 "exec into a stopped container"
    ok rt delete "$CID"
}

test_exec_missing_binary() {
    running
    run_in "$CID" /bin/nope
    assert_ne "$RC" 0 "exec of a missing binary"
    ok rt delete --force "$CID"
}

# The exec'd process killed during its setup, before its execve (here while
# it opens the container's /etc/passwd, a FIFO, to find HOME): a vfork child
# shares the runtime's memory until then, so the runtime must not go on as
# if nothing happened (it may have been stopped halfway through a malloc).
# It fails with one line, on stderr and in a JSON --log as engines read it,
# and the container runs on.
test_exec_killed_during_setup() {
    cp -a "$ROOTFS" "$T/rootfs" || fail "cannot copy the rootfs"
    rm -f "$T/rootfs/etc/passwd"
    mkfifo "$T/rootfs/etc/passwd"
    CID="$(new_id)"
    make_bundle "$CID"
    # (the init has its HOME: it reads no /etc/passwd)
    cfg --arg r "$T/rootfs" '.root.path = $r | .process.env += ["HOME=/"]'
    rt_create "$CID"
    ok rt start "$CID"
    jq -n '{terminal: false, user: {uid: 0, gid: 0}, args: ["/bin/true"], env: ["PATH=/bin"], cwd: "/"}' > "$T/process.json"
    # (a forked child, as in a sanitizer build, is reported as died)
    local want="exec failed: the process (was killed|died) during (its )?setup" log
    for log in "" "$T/log.json"; do
        "$RUNTIME" --root "$ROOT" ${log:+--log "$log" --log-format json} exec --process "$T/process.json" "$CID" \
            > "$T/exec.out" 2>&1 < /dev/null &
        local runtime=$! child="" i
        track_pid "$runtime"
        for i in $(seq 200); do
            child="$(cat "/proc/$runtime/task/$runtime/children" 2>/dev/null | tr -d ' ')"
            [ -n "$child" ] && [ "$(cat "/proc/$child/wchan" 2>/dev/null)" = wait_for_partner ] && break
            child=""
            sleep 0.05
        done
        [ -n "$child" ] || fail "the exec'd process never blocked on /etc/passwd: $(cat "$T/exec.out")"
        kill -KILL "$child"
        wait "$runtime"; RC=$?
        assert_ne "$RC" 0 "exit status of an exec whose process was killed${log:+ (--log)}"
        OUT="$(cat "$T/exec.out")"
        assert_eq "$(echo "$OUT" | wc -l)" 1 "one line: $OUT"
        assert_match "$OUT" "$want" "the error"
        if [ -n "$log" ]; then
            assert_match "$(jq -r 'select(.level == "error") | .msg' "$log")" "^$want\$" "the error in the JSON log"
        fi
    done
    assert_eq "$(cstatus "$CID")" running "the container"
    ok rt delete --force "$CID"
}
