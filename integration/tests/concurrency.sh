# Concurrency (issue 7): many runtimes at once on distinct ids and on one id.
# Nothing may crash (exit status >= 128 is a signal), leave a half state, or
# lose track of a container.

# leftovers_of ID: state dir, cgroups and processes of ID still there.
leftovers_of() {
    local id="$1" d p left=""
    [ -e "$ROOT/$id" ] && left+=" state-dir($(ls -A "$ROOT/$id" 2>/dev/null | tr '\n' ,))"
    for d in /sys/fs/cgroup/*/"$CGROUP_PARENT/$id"; do
        [ -d "$d" ] && left+=" cgroup:${d#/sys/fs/cgroup/}($(cat "$d/cgroup.procs" 2>/dev/null | tr '\n' ,))"
    done
    for p in $(pgrep -f -- "mark-$id( |$)"); do left+=" process:$p"; done
    echo "$left"
}

test_50_parallel_runs() {
    local i id pids=() ids=()
    for ((i = 0; i < 50; i++)); do
        id="$(new_id)"; ids+=("$id")
        make_bundle "$id" /bin/sh -c "exit $((i % 7))" "mark-$id"
    done
    for ((i = 0; i < 50; i++)); do
        ( "$RUNTIME" --root "$ROOT" run --bundle "$T/bundle-${ids[$i]}" "${ids[$i]}" \
              > "$T/run-$i.out" 2>&1 < /dev/null; echo $? > "$T/run-$i.rc" ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    local bad=""
    for ((i = 0; i < 50; i++)); do
        local rc; rc="$(cat "$T/run-$i.rc")"
        [ "$rc" == $((i % 7)) ] || bad+=" ${ids[$i]}: exit $rc (want $((i % 7))): $(head -c 150 "$T/run-$i.out");"
        local l; l="$(leftovers_of "${ids[$i]}")"
        [ -z "$l" ] || bad+=" ${ids[$i]} left:$l;"
    done
    [ -z "$bad" ] || fail "$bad"
    assert_eq "$(rt list | tail -n +2)" "" "list after 50 runs"
}

# one_id_storm ID: 8 each of kill, delete --force, state, list at once on ID.
one_id_storm() {
    local id="$1" i j k pids=()
    for ((i = 0; i < 8; i++)); do
        j=0
        for k in "kill $id KILL" "delete --force $id" "state $id" "list" "kill $id TERM" "delete $id"; do
            j=$((j + 1))
            # (one output file per call: "kill ID KILL" and "kill ID TERM" are the same length)
            # shellcheck disable=SC2086
            ( "$RUNTIME" --root "$ROOT" $k > "$T/storm-$i-$j.out" 2>&1 < /dev/null
              echo "$? $k" > "$T/storm-$i-$j.rc" ) &
            pids+=($!)
        done
    done
    wait "${pids[@]}"
}

test_concurrent_kill_delete_state_one_id() {
    local round id bad="" f rc
    for round in created running; do
        id="$(new_id)"
        make_bundle "$id" /bin/sh -c '/bin/probe sleep 600; :' "mark-$id"
        rt_create "$id"
        [ $round == running ] && ok rt start "$id"
        rm -f "$T"/storm-*
        one_id_storm "$id"
        for f in "$T"/storm-*.rc; do
            read -r rc _ < "$f"
            [ "$rc" -ge 128 ] && bad+=" $round: '$(cut -d' ' -f2- "$f")' died of signal $((rc - 128));"
            # a failure is one line (does not exist / not stopped / ...)
            if [ "$rc" != 0 ]; then
                local out="${f%.rc}.out"
                [ "$(wc -l < "$out")" -le 1 ] || bad+=" $round: '$(cut -d' ' -f2- "$f")' printed $(wc -l < "$out") lines: $(head -c 200 "$out" | tr '\n' '|');"
                grep -qiE "does not exist|not stopped|not running|no such process|cannot|already" "$out" ||
                    bad+=" $round: '$(cut -d' ' -f2- "$f")' exit $rc: $(head -c 200 "$out");"
            fi
        done
        # a state that answers at all must be a whole one
        for f in "$T"/storm-*-state-*.out; do
            grep -q '"status"' "$f" && { jq -e .status "$f" > /dev/null 2>&1 || bad+=" $round: half a state: $(head -c 200 "$f");"; }
        done
        # the storm always contains a delete --force that ran after a kill, or
        # one that killed: the container must be gone
        if rt state "$id" > /dev/null 2>&1; then
            bad+=" $round: still there after the storm ($(cstatus "$id"));"
            ok rt delete --force "$id"
        fi
        sleep 0.2
        local l; l="$(leftovers_of "$id")"
        [ -z "$l" ] || bad+=" $round: left:$l;"
    done
    [ -z "$bad" ] || fail "$bad"
}

test_parallel_create_same_id() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c '/bin/probe sleep 600; :' "mark-$id"
    local i pids=()
    for ((i = 0; i < 10; i++)); do
        ( "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$id" > "$T/c-$i.out" 2>&1 < /dev/null
          echo $? > "$T/c-$i.rc" ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    local won=0 bad=""
    for ((i = 0; i < 10; i++)); do
        local rc; rc="$(cat "$T/c-$i.rc")"
        if [ "$rc" == 0 ]; then
            won=$((won + 1))
        elif [ "$rc" == 1 ]; then
            grep -q "already exists" "$T/c-$i.out" || bad+=" loser $i: $(head -c 200 "$T/c-$i.out");"
            [ "$(wc -l < "$T/c-$i.out")" == 1 ] || bad+=" loser $i printed $(wc -l < "$T/c-$i.out") lines;"
        else
            bad+=" create $i exit $rc: $(head -c 200 "$T/c-$i.out");"
        fi
    done
    [ $won == 1 ] || bad+=" $won creates won;"
    assert_eq "$(cstatus "$id")" created "the winner's container"
    track_pid "$(cpid "$id")"
    # exactly one init in the container's cgroup
    local n; n="$(wc -l < /sys/fs/cgroup/pids/"$CGROUP_PARENT/$id"/cgroup.procs)"
    [ "$n" == 1 ] || bad+=" $n processes in the container's cgroup;"
    ok rt delete --force "$id"
    sleep 0.2
    local l; l="$(leftovers_of "$id")"
    [ -z "$l" ] || bad+=" left:$l;"
    [ -z "$bad" ] || fail "$bad"
}
