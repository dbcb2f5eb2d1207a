# kill: signals by name and number, --all, errors.

TRAP_TERM='trap "echo got-term; exit 143" TERM; echo ready; while :; do sleep 0.1; done'

# trapping_container: a running container whose init traps SIGTERM; id in $CID.
trapping_container() {
    CID="$(new_id)"
    make_bundle "$CID" /bin/sh -c "$TRAP_TERM"
    rt_create "$CID"
    ok rt start "$CID"
    local i
    for i in $(seq 100); do grep -q ready "$T/$CID.out" && return 0; sleep 0.05; done
    fail "container did not get ready"
}

kill_with() {
    trapping_container
    ok rt kill "$CID" "$@"
    wait_status "$CID" stopped
    assert_contains "$(cat "$T/$CID.out")" got-term "signal delivered"
    ok rt delete "$CID"
}

test_kill_default_is_sigterm() { kill_with; }
test_kill_by_name() { kill_with TERM; }
test_kill_by_sig_name() { kill_with SIGTERM; }
test_kill_by_number() { kill_with 15; }

test_kill_sigkill() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    ok rt start "$id"
    ok rt kill "$id" KILL
    wait_status "$id" stopped
    ok rt delete "$id"
}

test_kill_created_container() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    ok rt kill "$id" KILL
    wait_status "$id" stopped
    ok rt delete "$id"
}

test_kill_all() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'probe sleep 600 & probe sleep 600 & wait'
    rt_create "$id"
    ok rt start "$id"
    sleep 0.3
    ok rt kill --all "$id" KILL
    wait_status "$id" stopped
    local d procs=""
    for d in $(test_cgroups); do procs="$procs$(cat "$d/cgroup.procs" 2>/dev/null)"; done
    assert_eq "$procs" "" "processes left in the container's cgroups"
    ok rt delete "$id"
}

test_kill_stopped_container_fails() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/true
    rt_create "$id"
    ok rt start "$id"
    wait_status "$id" stopped
    assert_fails rt kill "$id" KILL
    assert_eq "$(cstatus "$id")" stopped "still stopped"
    ok rt delete "$id"
}

test_kill_unknown_container() {
    assert_fails rt kill "nonexistent-$TEST_ID" KILL
    assert_contains "$OUT" "does not exist"
}

test_kill_invalid_signal() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    assert_fails rt kill "$id" NOTASIGNAL
    assert_eq "$(cstatus "$id")" created "container untouched"
    ok rt delete --force "$id"
}
