# Container lifecycle: create / start / state / delete (runtime-spec "Lifecycle").

test_create_start_stop_delete() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'read x < /dev/null; /bin/probe sleep 0.5'
    rt_create "$id"
    ok rt state "$id"
    assert_eq "$(echo "$OUT" | jq -r .status)" created "status after create"
    assert_eq "$(echo "$OUT" | jq -r .id)" "$id" "state id"
    assert_eq "$(echo "$OUT" | jq -r .bundle)" "$BUNDLE" "state bundle"
    assert_match "$(echo "$OUT" | jq -r .ociVersion)" '^1\.' "state ociVersion"
    local pid; pid="$(echo "$OUT" | jq -r .pid)"
    assert_match "$pid" '^[1-9][0-9]*$' "pid"
    [ -d "/proc/$pid" ] || fail "init pid $pid not alive after create"
    ok rt start "$id"
    assert_eq "$(cstatus "$id")" running "status after start"
    wait_status "$id" stopped
    ok rt delete "$id"
    assert_fails rt state "$id"
    [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" && fail "pid $pid alive after delete"
    return 0
}

test_created_process_has_not_run_user_code() {
    # between create and start the user process must not have been executed
    local id; id="$(new_id)"
    make_bundle "$id" /bin/probe write /tmp/ran
    cfg '.mounts |= map(if .destination == "/tmp" then {destination: "/tmp", type: "bind", source: $t, options: ["bind"]} else . end)' --arg t "$T/shared"
    mkdir -p "$T/shared"
    rt_create "$id"
    sleep 0.3
    [ -e "$T/shared/ran" ] && fail "user process ran before start"
    ok rt start "$id"
    wait_status "$id" stopped
    [ -e "$T/shared/ran" ] || fail "user process did not run after start"
    ok rt delete "$id"
}

test_state_unknown_id() {
    assert_fails rt state "nonexistent-$TEST_ID"
    assert_contains "$OUT" "does not exist"
}

test_delete_unknown_id() {
    assert_fails rt delete "nonexistent-$TEST_ID"
    assert_contains "$OUT" "does not exist"
}

test_start_unknown_id() {
    assert_fails rt start "nonexistent-$TEST_ID"
    assert_contains "$OUT" "does not exist"
}

test_start_twice_fails() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    ok rt start "$id"
    assert_fails rt start "$id"
    ok rt delete --force "$id"
}

test_create_duplicate_id_fails() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    rt create --bundle "$BUNDLE" "$id" >/dev/null 2>&1 </dev/null && fail "second create with the same id succeeded"
    assert_eq "$(cstatus "$id")" created "first container still there"
    ok rt delete --force "$id"
}

test_delete_created_container() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    local pid; pid="$(cpid "$id")"
    ok rt delete --force "$id"
    sleep 0.1
    [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" && fail "init $pid still alive"
    assert_fails rt state "$id"
}

XFAIL_RUNC+=" test_delete_created_without_force_fails"
test_delete_running_without_force_fails() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    ok rt start "$id"
    OUT="$(rt delete "$id" 2>&1)" && { rt delete --force "$id" >/dev/null 2>&1; fail "delete of a running container without --force succeeded"; }
    assert_eq "$(cstatus "$id")" running "still running after refused delete"
    ok rt delete --force "$id"
}

test_delete_created_without_force_fails() {
    # runtime-spec: delete of a container that is not stopped MUST error
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    OUT="$(rt delete "$id" 2>&1)" && { fail "delete of a created container without --force succeeded"; }
    ok rt delete --force "$id"
}

test_delete_force_running() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    ok rt start "$id"
    local pid; pid="$(cpid "$id")"
    ok rt delete --force "$id"
    assert_fails rt state "$id"
    sleep 0.1
    [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" && fail "init $pid alive after delete --force"
    return 0
}

test_pid_file() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id" --pid-file "$T/pidfile"
    [ -f "$T/pidfile" ] || fail "no pid file"
    local content; content="$(cat "$T/pidfile")"
    assert_match "$content" '^[0-9]+$' "pid file content"
    assert_eq "$(wc -c < "$T/pidfile" | tr -d ' ')" "${#content}" "pid file has no trailing newline"
    assert_eq "$content" "$(cpid "$id")" "pid file matches state pid"
    ok rt delete --force "$id"
}

test_pid_file_relative() {
    local id; id="$(new_id)"
    make_bundle "$id"
    ( cd "$T" && "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" --pid-file rel.pid "$id" >/dev/null 2>&1 </dev/null ) \
        || fail "create with relative pid file failed"
    track_pid "$(cpid "$id")"
    assert_eq "$(cat "$T/rel.pid")" "$(cpid "$id")" "relative pid file"
    ok rt delete --force "$id"
}

test_bundle_defaults_to_cwd() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/echo hi
    OUT="$(cd "$BUNDLE" && "$RUNTIME" --root "$ROOT" run "$id" 2>&1 </dev/null)" || fail "run from bundle dir failed: $OUT"
    assert_eq "$OUT" hi
}
