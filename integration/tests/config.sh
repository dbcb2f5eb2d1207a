# config.json validation and ociVersion handling.

test_oci_version_1_0_2_dev() {
    QUICK_CFG=('.ociVersion = "1.0.2-dev"')
    quick /bin/echo ok
    assert_eq "$OUT" ok
}

test_oci_version_1_1_0() {
    QUICK_CFG=('.ociVersion = "1.1.0"')
    quick /bin/echo ok
    assert_eq "$OUT" ok
}

test_oci_version_1_2_0() {
    is_runc && return 0  # runc 1.1 predates runtime-spec 1.2
    QUICK_CFG=('.ociVersion = "1.2.0"')
    quick /bin/echo ok
    assert_eq "$OUT" ok
}

# refused_create: `create` must fail with exit 1, print an error containing
# every argument, and leave nothing behind.
refused_create() {
    local id="$1"; shift
    rt create --bundle "$BUNDLE" "$id" >/dev/null 2>"$T/err" </dev/null
    local rc=$?
    if [ $rc == 0 ]; then track_pid "$(cpid "$id")"; rt delete --force "$id" >/dev/null 2>&1; fail "invalid config accepted"; fi
    local err; err="$(cat "$T/err")"
    assert_eq "$rc" 1 "exit status ($err)"
    local w; for w in "$@"; do assert_contains "$err" "$w" "error message"; done
    [ -z "$(ls -A "$ROOT")" ] || fail "state left after refused create: $(ls -A "$ROOT")"
    [ -z "$(test_cgroups)" ] || fail "cgroups left after refused create"
}

test_memory_limit_string_refused() {
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.linux.resources.memory = {limit: "lots"}'
    refused_create "$id" limit
    is_runc || assert_eq "$(wc -l < "$T/err" | tr -d ' ')" 1 "error is one line: $(cat "$T/err")"
}

test_args_not_array_refused() {
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.process.args = "/bin/true"'
    refused_create "$id" args
}

test_invalid_json_refused() {
    local id; id="$(new_id)"
    make_bundle "$id"
    echo '{"ociVersion": "1.0.2", "process": {' > "$BUNDLE/config.json"
    refused_create "$id"
}

test_missing_config_refused() {
    local id; id="$(new_id)"
    BUNDLE="$T/empty-bundle"; mkdir -p "$BUNDLE"
    refused_create "$id"
}

test_missing_root_path_refused() {
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.root.path = "/nonexistent/rootfs"'
    refused_create "$id"
}

test_no_process_args_refused() {
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.process.args = []'
    refused_create "$id"
}

test_missing_oci_version_refused() {
    is_runc && return 0  # runc accepts it
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg 'del(.ociVersion)'
    refused_create "$id" ociVersion
}

test_bad_id_refused() {
    make_bundle "badid"
    rt create --bundle "$BUNDLE" "../escape" >/dev/null 2>"$T/err" </dev/null && fail "container id '../escape' accepted"
    [ -z "$(ls -A "$ROOT")" ] || fail "state left: $(ls -A "$ROOT")"
    [ -e "$T/escape" ] && fail "state written outside --root"
    return 0
}

test_unknown_fields_ignored() {
    QUICK_CFG=('.someFutureField = {x: 1} | .process.alsoUnknown = true')
    quick /bin/echo ok
    assert_eq "$OUT" ok
}

test_annotations_in_state() {
    local id; id="$(new_id)"
    make_bundle "$id"
    cfg '.annotations = {"org.example.key": "value-1"}'
    rt_create "$id"
    ok rt state "$id"
    assert_eq "$(echo "$OUT" | jq -r '.annotations["org.example.key"]')" value-1 "annotation in state"
    ok rt delete --force "$id"
}
