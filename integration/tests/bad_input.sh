# Malformed and hostile bundles (issue 7), table-driven. Each row breaks one
# thing; `create` must answer with exit 1 and ONE line naming the problem
# (the row's ERE, case-insensitive), and create nothing: no state dir under
# --root, no cgroup, no process.

# bad_row NAME ERE SETUP [ID]: a fresh bundle, SETUP (shell code, may use
# cfg and $BUNDLE) applied, then `create`; problems go to $T/problems.
bad_row() {
    local name="$1" ere="$2" setup="$3" id="${4-$(new_id)}"
    rm -rf "$T/bundle-$TEST_ID-bad"
    make_bundle "$TEST_ID-bad"
    eval "$setup" || { echo "$name: setup failed" >> "$T/problems"; return; }
    OUT="$(timeout 30 "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"
    local rc=$?
    if [ $rc != 1 ]; then
        echo "$name: exit $rc, expected 1: $(echo "$OUT" | head -c 200)" >> "$T/problems"
        timeout 10 "$RUNTIME" --root "$ROOT" delete --force "$id" > /dev/null 2>&1
    fi
    local lines; lines="$(printf '%s\n' "$OUT" | wc -l)"
    [ "$lines" == 1 ] || echo "$name: $lines lines of error: $(echo "$OUT" | head -c 300 | tr '\n' '|')" >> "$T/problems"
    echo "$OUT" | grep -Eqi -- "$ere" || echo "$name: error does not match /$ere/: $(echo "$OUT" | head -c 200)" >> "$T/problems"
    [ "$(printf '%s' "$OUT" | wc -c)" -le 1000 ] || echo "$name: error is $(printf '%s' "$OUT" | wc -c) bytes long" >> "$T/problems"
    [ -n "$(ls -A "$ROOT" 2>/dev/null)" ] && { echo "$name: left in --root: $(ls -A "$ROOT" | tr '\n' ' ')" >> "$T/problems"; rm -rf "${ROOT:?}"/*; }
    local cgs; cgs="$(test_cgroups | tr '\n' ' ')"
    [ -z "$cgs" ] || { echo "$name: cgroups left: $cgs" >> "$T/problems"; for d in $(test_cgroups); do rmdir_tree "$d"; done; }
    echo "$name: exit $rc: $OUT"
}

# long_string N: N bytes of 'a'.
long_string() { head -c "$1" /dev/zero | tr '\0' a; }

# nested N: N levels of [ ... ] (JSON).
nested() { local n="$1"; printf '%*s' "$n" '' | tr ' ' '['; printf '%*s' "$n" '' | tr ' ' ']'; }

# deepen: replaces the string "DEEP" in $BUNDLE/config.json by $T/deep.
deepen() {
    "$PYTHON3" -c 'import sys; c = open(sys.argv[1]).read(); d = open(sys.argv[2]).read(); open(sys.argv[1], "w").write(c.replace("\"DEEP\"", d))' \
        "$BUNDLE/config.json" "$T/deep"
}

bad_problems() {
    [ -s "$T/problems" ] && fail "$(tr '\n' ';' < "$T/problems")"
    return 0
}

test_bad_config_files() {
    : > "$T/problems"
    bad_row "missing config.json" 'config\.json' 'rm "$BUNDLE/config.json"'
    bad_row "config.json a directory" 'config\.json' 'rm "$BUNDLE/config.json"; mkdir "$BUNDLE/config.json"'
    bad_row "empty config.json" 'config|json|empty|parse' ': > "$BUNDLE/config.json"'
    bad_row "not JSON" 'config|json|parse' 'echo "this is { not json" > "$BUNDLE/config.json"'
    bad_row "truncated JSON" 'config|json|parse' 'head -c 300 "$BUNDLE/config.json" > "$T/c" && mv "$T/c" "$BUNDLE/config.json"'
    bad_row "JSON array at top" 'object|config' 'echo "[1,2]" > "$BUNDLE/config.json"'
    bad_row "NUL bytes" 'config|json|parse|nul' 'printf "{\"ociVersion\":\"1.0.2\0\"}" > "$BUNDLE/config.json"'
    bad_row "bundle does not exist" 'bundle|no such file' 'BUNDLE="$T/no-such-bundle"'
    bad_row "bundle is a file" 'bundle|directory|config' 'BUNDLE="$BUNDLE/config.json"'
    bad_problems
}

test_bad_types_and_values() {
    : > "$T/problems"
    bad_row "args a string" 'process\.args|args' 'cfg ".process.args = \"sh\""'
    bad_row "args empty" 'process\.args|args' 'cfg ".process.args = []"'
    bad_row "uid a string" 'uid' 'cfg ".process.user.uid = \"root\""'
    bad_row "uid negative" 'uid' 'cfg ".process.user.uid = -1"'
    bad_row "uid huge" 'uid' 'cfg ".process.user.uid = 99999999999999999999"'
    bad_row "uid fraction" 'uid' 'cfg ".process.user.uid = 1.5"'
    bad_row "namespaces an object" 'namespaces' 'cfg ".linux.namespaces = {}"'
    bad_row "unknown namespace" 'namespace' 'cfg ".linux.namespaces += [{type: \"bogus\"}]"'
    bad_row "mount options a number" 'mounts|options' 'cfg ".mounts[0].options = 5"'
    bad_row "root a number" 'root' 'cfg ".root = 3"'
    bad_row "no root" 'root' 'cfg "del(.root)"'
    bad_row "no process" 'process' 'cfg "del(.process)"'
    bad_row "rlimit huge" 'rlimit' 'cfg ".process.rlimits[0].hard = 1e30"'
    bad_row "rlimit unknown" 'rlimit' 'cfg ".process.rlimits[0].type = \"RLIMIT_BOGUS\""'
    bad_row "memory limit huge" 'memory|limit' 'cfg ".linux.resources.memory = {limit: 1e300}"'
    bad_row "pids limit a string" 'pids|limit' 'cfg ".linux.resources.pids = {limit: \"many\"}"'
    bad_row "cpu shares negative" 'shares|cpu' 'cfg ".linux.resources.cpu = {shares: -5}"'
    bad_row "capability unknown" 'cap' 'cfg ".process.capabilities.bounding += [\"CAP_BOGUS\"]"'
    bad_row "ociVersion a number" 'ociVersion' 'cfg ".ociVersion = 1"'
    bad_problems
}

test_bad_huge_and_nested() {
    : > "$T/problems"
    long_string $((10 * 1024 * 1024)) > "$T/big"
    bad_row "10 MB hostname" 'hostname' 'cfg --rawfile s "$T/big" ".hostname = \$s"'
    bad_row "10 MB mount destination" 'destination|mount|long' 'cfg --rawfile s "$T/big" ".mounts += [{destination: (\"/\" + \$s), type: \"tmpfs\", source: \"tmpfs\"}]"'
    bad_row "10 MB cwd" 'cwd|long' 'cfg --rawfile s "$T/big" ".process.cwd = (\"/\" + \$s)"'
    bad_row "100 kB id" 'id' 'true' "$(long_string $((10 * 1024 * 1024)) | head -c 100000)"
    nested 100000 > "$T/deep"
    bad_row "100000 levels in process.args" 'args|nest|deep|json|parse' 'cfg ".process.args = \"DEEP\"" && deepen'
    bad_row "100000 levels in an unknown key" 'nest|deep|json|parse' 'cfg ".x = \"DEEP\"" && deepen'
    bad_problems
}

test_bad_ids() {
    : > "$T/problems"
    bad_row "id empty" 'id' 'true' ""
    bad_row "id with slash" 'id' 'true' "a/b"
    bad_row "id .." 'id' 'true' ".."
    bad_row "id ." 'id' 'true' "."
    bad_row "id ../x" 'id' 'true' "../x-$TEST_ID"
    bad_row "id with newline" 'id' 'true' "$(printf 'a\nb')"
    bad_row "id starting with -" 'id|flag|option' 'true' "-x"
    [ -e "$T/x-$TEST_ID" ] && echo "id ../x: made $T/x-$TEST_ID outside --root" >> "$T/problems"
    bad_problems
}

test_bad_mount_destinations() {
    : > "$T/problems"
    bad_row "destination relative with .." 'destination|\.\.' 'cfg ".mounts += [{destination: \"../../../tmp/escape-$TEST_ID\", type: \"tmpfs\", source: \"tmpfs\"}]"'
    bad_row "destination /../.." 'destination|\.\.' 'cfg ".mounts += [{destination: \"/../../../tmp/escape-$TEST_ID\", type: \"tmpfs\", source: \"tmpfs\"}]"'
    bad_row "destination /tmp/../../.." 'destination|\.\.' 'cfg ".mounts += [{destination: \"/tmp/../../../etc\", type: \"tmpfs\", source: \"tmpfs\"}]"'
    bad_row "destination empty" 'destination' 'cfg ".mounts += [{destination: \"\", type: \"tmpfs\", source: \"tmpfs\"}]"'
    bad_row "bind source missing" 'source|no such' 'cfg ".mounts += [{destination: \"/mnt\", type: \"bind\", source: \"$T/nothing\", options: [\"bind\"]}]"'
    bad_row "unknown fs type" 'mount|type|no such device' 'cfg ".mounts += [{destination: \"/mnt\", type: \"bogusfs\", source: \"x\"}]"'
    bad_row "rootfs missing" 'root|no such' 'cfg ".root.path = \"$T/no-rootfs\""'
    bad_row "rootfs a file" 'root|directory' 'cfg ".root.path = \"$BUNDLE/config.json\""'
    bad_problems
}

# own_rootfs: a private copy of the test rootfs in $T/rootfs (to break).
own_rootfs() {
    [ -d "$T/rootfs" ] || cp -a "$ROOTFS" "$T/rootfs" || fail "cannot copy the rootfs"
}

# A rootfs whose /proc or /dev is a symlink to a host dir: either refused with
# one line, or the mount lands inside the rootfs (the symlink resolved with
# the rootfs as /). Never on the host dir the link names.
test_bad_symlinked_rootfs_pieces() {
    : > "$T/problems"
    own_rootfs
    mkdir -p "$T/victim"
    local piece
    for piece in proc dev; do
        rm -rf "$T/rootfs/$piece"
        ln -s "$T/victim" "$T/rootfs/$piece"
        local id; id="$(new_id)"
        make_bundle "$id" /bin/sh -c "ls $T/victim | head -3; [ -e /proc/self/status ] && echo proc-ok; [ -e /dev/null ] && echo dev-ok; :"
        cfg --arg r "$T/rootfs" '.root.path = $r'
        OUT="$(timeout 30 "$RUNTIME" --root "$ROOT" run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"; local rc=$?
        echo "rootfs /$piece -> $T/victim: exit $rc: $OUT"
        if [ $rc == 0 ]; then
            # ran: the mount must be inside the rootfs, i.e. at $T/rootfs$T/victim
            [ "$piece" == proc ] && ! echo "$OUT" | grep -q proc-ok && echo "/proc symlink: proc not reachable through the link inside: $OUT" >> "$T/problems"
        else
            [ $rc == 1 ] || echo "/$piece symlink: exit $rc: $OUT" >> "$T/problems"
            [ "$(printf '%s\n' "$OUT" | wc -l)" == 1 ] || echo "/$piece symlink: error not one line: $OUT" >> "$T/problems"
            echo "$OUT" | grep -Eqi "$piece|symlink|link" || echo "/$piece symlink: error does not name it: $OUT" >> "$T/problems"
        fi
        [ -n "$(ls -A "$T/victim")" ] && echo "/$piece symlink: host dir $T/victim got entries: $(ls -A "$T/victim" | head -5 | tr '\n' ' ')" >> "$T/problems"
        grep -qF "$T/victim" /proc/self/mountinfo && echo "/$piece symlink: a mount on the host dir" >> "$T/problems"
        timeout 10 "$RUNTIME" --root "$ROOT" delete --force "$id" > /dev/null 2>&1
        rm -f "$T/rootfs/$piece"; mkdir "$T/rootfs/$piece"
    done
    # the rootfs itself a symlink is fine (runc follows it too)
    ln -s "$T/rootfs" "$T/rootfs-link"
    local id; id="$(new_id)"
    make_bundle "$id" /bin/probe write /tmp/x
    cfg --arg r "$T/rootfs-link" '.root.path = $r'
    OUT="$(timeout 30 "$RUNTIME" --root "$ROOT" run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)" ||
        echo "rootfs a symlink: refused: $OUT" >> "$T/problems"
    # a bind mount whose destination in the rootfs is a symlink out of it
    ln -s "$T/victim" "$T/rootfs/mnt/out"
    id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'echo x > /mnt/out/planted; :'
    mkdir -p "$T/src"
    cfg --arg r "$T/rootfs" --arg s "$T/src" '.root.path = $r | .mounts += [{destination: "/mnt/out", type: "bind", source: $s, options: ["bind", "rw"]}]'
    OUT="$(timeout 30 "$RUNTIME" --root "$ROOT" run --bundle "$BUNDLE" "$id" 2>&1 < /dev/null)"
    echo "bind on /mnt/out -> $T/victim: exit $?: $OUT"
    [ -n "$(ls -A "$T/victim")" ] && echo "bind over a symlinked destination: host dir $T/victim got entries" >> "$T/problems"
    timeout 10 "$RUNTIME" --root "$ROOT" delete --force "$id" > /dev/null 2>&1
    bad_problems
}
