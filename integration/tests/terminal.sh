# terminal: true with --console-socket (pty master passed over SCM_RIGHTS).

# start_recvtty [INPUT]: starts the receiver on $T/console.sock, output in $T/console.out.
start_recvtty() {
    "$PYTHON3" "$IT_DIR/helpers/recvtty.py" "$T/console.sock" "$T/console.out" "$@" </dev/null >"$T/recvtty.err" 2>&1 &
    RECV_PID=$!
    track_pid "$RECV_PID"
    local i
    for i in $(seq 100); do [ -S "$T/console.sock" ] && return 0; sleep 0.05; done
    fail "console socket receiver did not start: $(cat "$T/recvtty.err")"
}

wait_recvtty() {
    local i
    for i in $(seq 100); do kill -0 "$RECV_PID" 2>/dev/null || return 0; sleep 0.05; done
    fail "console receiver still running"
}

test_console_socket_pty() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'tty; stty size; echo done'
    cfg '.process.terminal = true | .process.consoleSize = {height: 30, width: 100}'
    start_recvtty
    rt_create "$id" --console-socket "$T/console.sock"
    ok rt start "$id"
    wait_status "$id" stopped
    wait_recvtty
    local out; out="$(tr -d '\r' < "$T/console.out")"
    assert_contains "$out" "/dev/pts/0" "tty of the container process"
    assert_contains "$out" "30 100" "console size"
    assert_contains "$out" "done"
    ok rt delete "$id"
}

test_console_input() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'read line; echo "got:$line"'
    cfg '.process.terminal = true'
    start_recvtty $'hello-tty\n'
    rt_create "$id" --console-socket "$T/console.sock"
    ok rt start "$id"
    wait_status "$id" stopped
    wait_recvtty
    assert_contains "$(tr -d '\r' < "$T/console.out")" "got:hello-tty" "input through the pty"
    ok rt delete "$id"
}

test_console_stdio_are_the_pty() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/probe fds
    cfg '.process.terminal = true'
    start_recvtty
    rt_create "$id" --console-socket "$T/console.sock"
    ok rt start "$id"
    wait_status "$id" stopped
    wait_recvtty
    local out; out="$(tr -d '\r' < "$T/console.out")"
    assert_eq "$(echo "$out" | awk '{print $1 "=" $2}' | tr '\n' ' ')" "0=/dev/pts/0 1=/dev/pts/0 2=/dev/pts/0 " "fds of a terminal process"
    ok rt delete "$id"
}

test_terminal_without_console_socket_fails() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/true
    cfg '.process.terminal = true'
    rt create --bundle "$BUNDLE" "$id" >/dev/null 2>"$T/err" </dev/null && { track_pid "$(cpid "$id")"; rt delete -f "$id" >/dev/null 2>&1; fail "create with terminal but no console socket succeeded"; }
    [ -z "$(ls -A "$ROOT")" ] || fail "state left after failed create"
}
