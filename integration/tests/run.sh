# `run`: exit codes, detach, stdio passthrough, fd hygiene.

test_run_exit_zero() {
    quick /bin/probe exit 0
    assert_eq "$RC" 0 "exit status"
}

test_run_exit_code_propagates() {
    quick /bin/probe exit 3
    assert_eq "$RC" 3 "exit status"
}

test_run_shell_exit_code() {
    quick /bin/sh -c 'exit 42'
    assert_eq "$RC" 42 "exit status"
}

test_run_killed_by_signal_exit_code() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/probe sleep 30
    rt run --bundle "$BUNDLE" "$id" >/dev/null 2>&1 </dev/null &
    local runner=$!
    track_pid "$runner"
    wait_status "$id" running
    kill -KILL "$(cpid "$id")"
    wait "$runner"
    assert_eq "$?" 137 "exit status of run when init is SIGKILLed (128+9)"
}

test_run_missing_executable() {
    quick /bin/does-not-exist
    assert_ne "$RC" 0 "exit status"
    case "$OUT" in
        *"executable file not found"* | *"no such file or directory"* | *"No such file or directory"*) ;;
        *) fail "error does not name the problem: $OUT" ;;
    esac
}

test_run_missing_executable_in_path() {
    quick nosuchcommand
    assert_ne "$RC" 0 "exit status"
    case "$OUT" in
        *"executable file not found"* | *"no such file or directory"* | *"No such file or directory"*) ;;
        *) fail "error does not name the problem: $OUT" ;;
    esac
}

test_run_path_lookup() {
    quick probe exit 5
    assert_eq "$RC" 5 "exit status of PATH-resolved probe"
}

test_run_stdout_passthrough() {
    quick /bin/echo hello-from-container
    assert_eq "$RC" 0
    assert_eq "$OUT" hello-from-container
}

test_run_stdin_passthrough() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/cat
    OUT="$(echo piped-input | rt run --bundle "$BUNDLE" "$id" 2>&1)" || fail "run failed: $OUT"
    assert_eq "$OUT" piped-input
}

test_run_stderr_passthrough() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'echo to-stderr >&2; echo to-stdout'
    local out err
    out="$(rt run --bundle "$BUNDLE" "$id" 2>"$T/err" </dev/null)" || fail "run failed"
    assert_eq "$out" to-stdout "stdout"
    assert_eq "$(cat "$T/err")" to-stderr "stderr"
}

test_run_detach() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt run --detach --bundle "$BUNDLE" "$id" >/dev/null 2>"$T/err" </dev/null || fail "run -d failed: $(cat "$T/err")"
    track_pid "$(cpid "$id")"
    assert_eq "$(cstatus "$id")" running "status"
    ok rt delete --force "$id"
}

test_run_detach_pid_file() {
    local id; id="$(new_id)"
    make_bundle "$id"
    rt run -d --pid-file "$T/pid" --bundle "$BUNDLE" "$id" >/dev/null 2>"$T/err" </dev/null || fail "run -d failed: $(cat "$T/err")"
    track_pid "$(cpid "$id")"
    assert_eq "$(cat "$T/pid")" "$(cpid "$id")" "pid file"
    ok rt delete --force "$id"
}

test_run_removes_container_after_exit() {
    quick /bin/true
    assert_eq "$RC" 0
    [ -z "$(ls -A "$ROOT")" ] || fail "state left after run: $(ls -A "$ROOT")"
}

test_no_extra_fds_leak() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/probe fds
    OUT="$(rt run --bundle "$BUNDLE" "$id" 5>"$T/extra" 7<"$BUNDLE/config.json" 2>&1 </dev/null)" || fail "run failed: $OUT"
    local fds; fds="$(echo "$OUT" | awk '{print $1}' | tr '\n' ' ')"
    assert_eq "$fds" "0 1 2 " "open fds inside the container"
}

test_preserve_fds() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'echo via-fd3 >&3'
    rt run --preserve-fds 1 --bundle "$BUNDLE" "$id" 3>"$T/fd3" >/dev/null 2>"$T/err" </dev/null || fail "run failed: $(cat "$T/err")"
    assert_eq "$(cat "$T/fd3")" via-fd3 "data written to preserved fd 3"
}

test_start_output_reaches_create_stdio() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/echo detached-output
    rt_create "$id"
    ok rt start "$id"
    wait_status "$id" stopped
    assert_eq "$(cat "$T/$id.out")" detached-output "container stdout (create's stdout)"
    ok rt delete "$id"
}
