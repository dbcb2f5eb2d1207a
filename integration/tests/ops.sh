# pause/resume, update, events, list, ps, spec, features.

started() {
    CID="$(new_id)"
    make_bundle "$CID" "$@"
    rt_create "$CID"
    ok rt start "$CID"
}

test_pause_resume() {
    started
    ok rt pause "$CID"
    assert_eq "$(cstatus "$CID")" paused "status after pause"
    local pid; pid="$(cpid "$CID")"
    assert_match "$(grep '^State:' /proc/$pid/status)" 'D|S|T' "init state while frozen"
    ok rt resume "$CID"
    assert_eq "$(cstatus "$CID")" running "status after resume"
    ok rt delete --force "$CID"
}

test_paused_container_does_not_run() {
    started /bin/sh -c 'while :; do echo tick >> /tmp/ticks; sleep 0.05; done'
    ok rt pause "$CID"
    local pid; pid="$(cpid "$CID")"
    local before after
    before="$(awk '{print $14 + $15}' /proc/$pid/stat)"
    sleep 0.5
    after="$(awk '{print $14 + $15}' /proc/$pid/stat)"
    assert_eq "$after" "$before" "cpu time of a frozen init"
    ok rt resume "$CID"
    ok rt delete --force "$CID"
}

test_delete_force_paused() {
    started
    ok rt pause "$CID"
    ok rt delete --force "$CID"
    assert_fails rt state "$CID"
}

test_pause_stopped_fails() {
    started /bin/true
    wait_status "$CID" stopped
    assert_fails rt pause "$CID"
    ok rt delete "$CID"
}

test_update_memory() {
    started
    ok rt update --memory 50331648 "$CID"
    assert_eq "$(cat /sys/fs/cgroup/memory/$CGROUP_PARENT/$CID/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/$CGROUP_PARENT/$CID/memory.max)" 50331648 "memory limit after update"
    ok rt delete --force "$CID"
}

test_update_resources_file() {
    started
    echo '{"memory": {"limit": 41943040}, "pids": {"limit": 33}, "cpu": {"shares": 256}}' > "$T/res.json"
    ok rt update --resources "$T/res.json" "$CID"
    assert_eq "$(cat /sys/fs/cgroup/memory/$CGROUP_PARENT/$CID/memory.limit_in_bytes)" 41943040 "memory limit"
    assert_eq "$(cat /sys/fs/cgroup/pids/$CGROUP_PARENT/$CID/pids.max)" 33 "pids.max"
    assert_eq "$(cat /sys/fs/cgroup/cpu/$CGROUP_PARENT/$CID/cpu.shares)" 256 "cpu.shares"
    ok rt delete --force "$CID"
}

test_update_pids() {
    started
    ok rt update --pids-limit 17 "$CID"
    assert_eq "$(cat /sys/fs/cgroup/pids/$CGROUP_PARENT/$CID/pids.max)" 17 "pids.max"
    ok rt delete --force "$CID"
}

test_events_stats() {
    started
    OUT="$(timeout 10 "$RUNTIME" --root "$ROOT" events --stats "$CID" 2>&1 </dev/null)" || fail "events --stats failed: $OUT"
    local line; line="$(echo "$OUT" | head -1)"
    assert_eq "$(echo "$line" | jq -r .type)" stats "event type"
    assert_eq "$(echo "$line" | jq -r .id)" "$CID" "event id"
    local usage; usage="$(echo "$line" | jq -r .data.memory.usage.usage)"
    assert_match "$usage" '^[1-9][0-9]*$' "memory usage"
    assert_match "$(echo "$line" | jq -r .data.pids.current)" '^[1-9][0-9]*$' "pids.current"
    ok rt delete --force "$CID"
}

test_list_quiet() {
    started
    local id2; id2="$(new_id)"
    make_bundle "$id2"
    rt_create "$id2"
    ok rt list -q
    assert_eq "$(echo "$OUT" | sort | tr '\n' ' ')" "$(printf '%s\n' "$CID" "$id2" | sort | tr '\n' ' ')" "list -q"
    ok rt delete --force "$CID"
    ok rt delete --force "$id2"
}

test_list_json() {
    started
    ok rt list --format json
    assert_eq "$(echo "$OUT" | jq -r '.[0].id')" "$CID" "id"
    assert_eq "$(echo "$OUT" | jq -r '.[0].status')" running "status"
    assert_eq "$(echo "$OUT" | jq -r '.[0].pid')" "$(cpid "$CID")" "pid"
    assert_eq "$(echo "$OUT" | jq -r '.[0].bundle')" "$BUNDLE" "bundle"
    ok rt delete --force "$CID"
}

test_list_empty() {
    ok rt list -q
    assert_eq "$OUT" "" "list -q with no containers"
    ok rt list --format json
    [ -z "$OUT" ] || [ "$OUT" == null ] || echo "$OUT" | jq -e 'length == 0' >/dev/null \
        || fail "list --format json with no containers: $OUT"
}

test_ps_json() {
    started /bin/sh -c 'probe sleep 600 & wait'
    sleep 0.2
    ok rt ps --format json "$CID"
    local pids; pids="$(echo "$OUT" | jq -r '.[]' | sort -n | tr '\n' ' ')"
    local want; want="$(cat /sys/fs/cgroup/pids/$CGROUP_PARENT/$CID/cgroup.procs | sort -n | tr '\n' ' ')"
    assert_eq "$pids" "$want" "ps pids"
    assert_contains " $pids" " $(cpid "$CID") " "init in ps"
    ok rt delete --force "$CID"
}

test_spec_creates_usable_config() {
    mkdir -p "$T/specb"
    ( cd "$T/specb" && "$RUNTIME" spec ) || fail "spec failed"
    [ -f "$T/specb/config.json" ] || fail "spec wrote no config.json"
    jq -e . "$T/specb/config.json" >/dev/null || fail "spec output is not JSON"
    assert_match "$(jq -r .ociVersion "$T/specb/config.json")" '^1\.' "ociVersion"
    BUNDLE="$T/specb"
    local id; id="$(new_id)"
    cfg --arg r "$ROOTFS" --arg cg "/$CGROUP_PARENT/$id" \
        '.root.path = $r | .process.terminal = false | .process.args = ["/bin/echo", "spec-ok"] | .linux.cgroupsPath = $cg'
    OUT="$(rt run --bundle "$BUNDLE" "$id" 2>&1 </dev/null)" || fail "run of a spec config failed: $OUT"
    assert_eq "$OUT" spec-ok
}

test_spec_refuses_to_overwrite() {
    mkdir -p "$T/specb" && echo '{}' > "$T/specb/config.json"
    ( cd "$T/specb" && "$RUNTIME" spec ) >/dev/null 2>&1 && fail "spec overwrote an existing config.json"
    assert_eq "$(cat "$T/specb/config.json")" '{}' "config untouched"
}

test_features() {
    is_runc && return 0  # runc 1.1 has no features command
    ok rt features
    echo "$OUT" | jq -e '.ociVersionMin and .ociVersionMax and (.hooks | length > 0) and (.mountOptions | length > 0)' >/dev/null \
        || fail "features output lacks fields: $(echo "$OUT" | head -c 300)"
}

test_version() {
    ok "$RUNTIME" --version
    assert_contains "$OUT" "spec: 1."
}
