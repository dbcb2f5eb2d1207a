# Cage integrity (issue 13): a tier is a boundary against config.json, the
# annotations and the caller too. Each class is first shown to work in a
# plain container (the same request, no tier), then refused or neutralised
# at every tier, checked from the host.

source "$IT_DIR/tiers_lib.sh"

# run_cfg TIER [RUNTIME-FLAGS...]: `run` the current $BUNDLE as $CID, with
# the tier annotation set (or none for "plain"); output in $OUT, status $RC.
run_cfg() {
    local tier="$1"; shift
    [ "$tier" == plain ] || cfg --arg t "$tier" '.annotations = ((.annotations // {}) + {"io.agentcage.tier": $t})'
    OUT="$(trt "$@" run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
}

# assert_refused_plain WHAT: refused at create (exit 1, one line naming WHAT),
# nothing left behind; unlike assert_refused, the line need not name a tier.
assert_refused_plain() {
    assert_eq "$RC" 1 "refusal exit status ($OUT)"
    assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "one line: $OUT"
    assert_contains "$OUT" "$1" "refusal names the request"
    [ -e "$ROOT/$CID" ] && fail "state dir left after refusal: $ROOT/$CID"
    [ -z "$(test_cgroups)" ] || fail "cgroup left after refusal: $(test_cgroups)"
    return 0
}

# ---------------------------------------------------------------- 1. the tier annotation

test_tier_annotation_that_does_not_parse_is_refused() {
    cp -a "$ROOTFS" "$T/rootfs"
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
    cfg '.root = {path: "'"$T/rootfs"'", readonly: false}'
    run_cfg plain
    assert_eq "$OUT" ok "plain container writes its root"
    rm -f "$T/rootfs/etc/pwned"
    local v flags
    for flags in "" "--default-tier 1 --allowed-tiers 1"; do
        for v in none 4 "1 " " 1" "" -1 01 "write\t" "3\r"; do
            CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
            cfg '.root = {path: "'"$T/rootfs"'", readonly: false}'
            # shellcheck disable=SC2086
            run_cfg "$(printf -- "$v")" $flags
            assert_refused_plain "annotation io.agentcage.tier: expected 0|read"
            [ -e "$T/rootfs/etc/pwned" ] && fail "tier \`$v\` ($flags) ran without a cage"
        done
        # not a string at all
        CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
        cfg '.root = {path: "'"$T/rootfs"'", readonly: false} | .annotations = {"io.agentcage.tier": 1}'
        # shellcheck disable=SC2086
        OUT="$(trt $flags run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
        assert_refused_plain "got \`1\`"
    done
    [ -e "$T/rootfs/etc/pwned" ] && fail "a malformed tier ran without a cage"
    return 0
}

test_duplicate_keys_refused_at_a_tier() {
    cp -a "$ROOTFS" "$T/rootfs"
    # plain: a duplicate key anywhere is read as Go reads it (the last wins)
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
    cfg '.root = {path: "'"$T/rootfs"'", readonly: false}'
    sed -i 's/"hostname": "agentcage-it"/"hostname": "a", "hostname": "agentcage-it"/' "$BUNDLE/config.json"
    run_cfg plain
    assert_eq "$OUT" ok "plain runs a config with a duplicate key"
    rm -f "$T/rootfs/etc/pwned"
    # two tier values: a reviewer reads one, a parser might take the other
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
    cfg '.root = {path: "'"$T/rootfs"'", readonly: false} | .annotations = {"io.agentcage.tier": "1"}'
    sed -i 's/"io.agentcage.tier": "1"/"io.agentcage.tier": "1", "io.agentcage.tier": "3"/' "$BUNDLE/config.json"
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "duplicate key annotations.io.agentcage.tier"
    # a second annotations object, with the tier in either one
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
    cfg '.root = {path: "'"$T/rootfs"'", readonly: false}'
    sed -i 's/^{/{"annotations": {}, "annotations": {"io.agentcage.tier": "1"},/' "$BUNDLE/config.json"
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused_plain "duplicate key annotations"
    # a duplicate deep inside, at a tier
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
    cfg '.annotations = {"io.agentcage.tier": "1"}'
    sed -i 's/"destination": "\/proc",/"destination": "\/proc", "destination": "\/mnt\/p",/' "$BUNDLE/config.json"
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "duplicate key mounts[0].destination"
    # a key that only reads like the tier annotation
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /etc/pwned
    cfg '.root = {path: "'"$T/rootfs"'", readonly: false} | .annotations = {"IO.AgentCage.Tier": "1"}'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused_plain "misspelt"
    [ -e "$T/rootfs/etc/pwned" ] && fail "a duplicate or misspelt tier ran without a cage"
    return 0
}

# ---------------------------------------------------------------- 2. the bundle's hooks

test_bundle_hooks_refused_at_a_tier() {
    printf '#!/bin/sh\ntouch "$1"\n' > "$T/hook.sh"; chmod 755 "$T/hook.sh"
    local stage
    for stage in prestart createRuntime createContainer startContainer poststart poststop; do
        ATTACK_CFG=(".hooks = {\"$stage\": [{path: \"$T/hook.sh\", args: [\"hook.sh\", \"$T/ran-$stage\"]}]}")
        # startContainer runs inside the container, where $T is not
        if [ "$stage" != startContainer ]; then
            attack plain /bin/true
            [ -e "$T/ran-$stage" ] || fail "plain did not run its $stage hook: $OUT"
            rm -f "$T/ran-$stage"
        fi
        local t
        for t in 0 1 2 3; do
            attack $t /bin/true
            assert_refused "hooks.$stage[0] $T/hook.sh"
            [ -e "$T/ran-$stage" ] && fail "tier $t ran the bundle's $stage hook on the host"
        done
    done
    # a hook program the operator allows runs
    CID="$(new_id)"; make_bundle "$CID" /bin/true
    cfg ".hooks = {prestart: [{path: \"$T/hook.sh\", args: [\"hook.sh\", \"$T/ran-allowed\"]}]}"
    run_cfg 1 --allowed-hooks "/usr/bin/none:$T/hook.sh"
    assert_eq "$RC" 0 "tier 1 with an allowed hook: $OUT"
    [ -e "$T/ran-allowed" ] || fail "the operator's allowed hook did not run"
    return 0
}

# ---------------------------------------------------------------- 3. sysctl

test_host_sysctls_refused_at_a_tier() {
    local pattern; pattern="$(cat /proc/sys/kernel/core_pattern)"
    # plain: the runtime writes a host-wide sysctl (the host's own value, so
    # nothing changes here)
    ATTACK_CFG=(".linux.sysctl = {\"kernel.core_pattern\": $(jq -n --arg p "$pattern" '$p')}")
    attack plain /bin/echo ran
    assert_eq "$OUT" ran "plain writes kernel.core_pattern"
    local key t
    for key in kernel.core_pattern kernel.modprobe fs.suid_dumpable vm.overcommit_memory kernel/core_pattern \
        net..kernel.core_pattern; do
        ATTACK_CFG=(".linux.sysctl = {\"$key\": \"1\"}")
        for t in 0 1 2 3; do
            attack $t /bin/echo ran
            assert_refused "linux.sysctl $key"
        done
    done
    assert_eq "$(cat /proc/sys/kernel/core_pattern)" "$pattern" "host core_pattern unchanged"
    # the container's own network namespace: kept, and only its own
    local host_fwd; host_fwd="$(cat /proc/sys/net/ipv4/ip_forward)"
    ATTACK_CFG=('.linux.sysctl = {"net.ipv4.ip_forward": "1", "kernel.shmmni": "1000"}')
    attack 1 /bin/cat /proc/sys/net/ipv4/ip_forward
    assert_eq "$OUT" 1 "tier 1 sets its own netns's ip_forward"
    assert_eq "$(cat /proc/sys/net/ipv4/ip_forward)" "$host_fwd" "host ip_forward unchanged"
    return 0
}

# ---------------------------------------------------------------- 4. kernel filesystems elsewhere

test_second_proc_and_sysfs_refused_at_a_tier() {
    ATTACK_CFG=('.mounts += [{destination: "/mnt/p", type: "proc", source: "proc"}]')
    attack plain /bin/sh -c '/bin/probe open-w /mnt/p/sys/kernel/core_pattern; /bin/probe open-w /proc/sys/kernel/core_pattern'
    assert_eq "$(echo $OUT)" "ok EROFS" "plain: a second /proc has none of the read-only paths"
    local dest t
    for dest in /mnt/p /workspace/p /tmp/../mnt/p /proc; do
        ATTACK_CFG=(".mounts += [{destination: \"$dest\", type: \"proc\", source: \"proc\"}]")
        for t in 0 1 2 3; do
            attack $t /bin/true
            assert_refused proc
        done
    done
    ATTACK_CFG=('.mounts += [{destination: "/mnt/s", type: "sysfs", source: "sysfs", options: ["ro"]}]')
    attack plain /bin/sh -c 'ls /mnt/s/firmware > /dev/null && echo visible'
    assert_eq "$OUT" visible "plain: a second sysfs shows /sys/firmware"
    attack 1 /bin/true; assert_refused "a sysfs mount at /mnt/s"
    ATTACK_CFG=('.mounts += [{destination: "/proc/sys", type: "tmpfs", source: "tmpfs"}]')
    attack 1 /bin/true; assert_refused "a mount on /proc/sys"
    return 0
}

# ---------------------------------------------------------------- 5. namespaces by path

test_host_namespaces_by_path_refused_at_a_tier() {
    local host_init; host_init="$(cat /proc/1/comm)"
    mkdir -p "$T/ns"; touch "$T/ns/pid"
    mount --bind /proc/self/ns/pid "$T/ns/pid" || fail "bind the host's pid namespace file"
    local path t
    for path in /proc/2/ns/pid /proc/thread-self/ns/pid "/proc/$$/ns/pid" "$T/ns/pid"; do
        ATTACK_CFG=("(.linux.namespaces[] | select(.type == \"pid\")) += {path: \"$path\"}")
        attack plain /bin/cat /proc/1/comm
        if [ "$OUT" != "$host_init" ]; then umount "$T/ns/pid"; fail "plain $path: not the host's pid namespace: $OUT"; fi
        for t in 0 1 2 3; do
            attack $t /bin/cat /proc/1/comm
            if [ "$RC" != 1 ] || [[ "$OUT" != *"the host's pid namespace"* ]]; then
                umount "$T/ns/pid"; fail "tier $t joined $path: $OUT"
            fi
            [ -e "$ROOT/$CID" ] && { umount "$T/ns/pid"; fail "state left after refusal"; }
        done
    done
    umount "$T/ns/pid"
    # the other kinds, by a spelling the mapping does not know
    local type
    for type in ipc uts cgroup; do
        ATTACK_CFG=("(.linux.namespaces[] | select(.type == \"$type\")) += {path: \"/proc/2/ns/$type\"} |
                    if any(.linux.namespaces[]; .type == \"$type\") then . else .linux.namespaces += [{type: \"$type\", path: \"/proc/2/ns/$type\"}] end")
        attack 1 /bin/true
        assert_eq "$RC" 1 "tier 1 with the host's $type namespace: $OUT"
        assert_contains "$OUT" "the host's $type namespace"
    done
    return 0
}

# ---------------------------------------------------------------- 6. bind sources

test_bind_sources_outside_the_roots_refused() {
    local dirs=("/opt/agentcage-it-$TEST_ID" "/var/lib/agentcage-it-$TEST_ID" "/usr/local/share/agentcage-it-$TEST_ID")
    # expanded now: the local array is gone when the EXIT trap runs
    trap "rm -rf ${dirs[*]}" EXIT
    local d t
    for d in "${dirs[@]}"; do
        mkdir -p "$d"
        ATTACK_CFG=("$(bind_mount /mnt/a "$d" rw)")
        attack plain /bin/probe write /mnt/a/planted
        [ -f "$d/planted" ] || fail "plain did not write through a bind of $d: $OUT"
        rm -f "$d/planted"
        for t in 0 1 2 3; do
            attack $t /bin/probe write /mnt/a/planted
            assert_refused "not below the bundle or a bind root"
            [ -e "$d/planted" ] && fail "tier $t wrote into $d"
        done
    done
    # an operator's own root: what lies below it may be mounted
    mkdir -p "${dirs[0]}/proj"
    CID="$(new_id)"; make_bundle "$CID" /bin/probe write /mnt/a/made
    cfg "$(bind_mount /mnt/a "${dirs[0]}/proj" rw)"
    run_cfg 1 --bind-roots "${dirs[0]}"
    assert_eq "$OUT" ok "tier 1 below an operator's bind root"
    [ -f "${dirs[0]}/proj/made" ] || fail "write below the operator's root did not land"
    # the approvals and the audit trail are never a container's
    mkdir -p "$T/state/approvals"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/state" rw)")
    attack 3 /bin/true; assert_refused "approvals or audit trail"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T" rw)")
    attack 1 /bin/true; assert_refused "approvals or audit trail"
    return 0
}

# ---------------------------------------------------------------- 7. the caller's fds

test_caller_directory_fds_refused_at_a_tier() {
    mkdir -p "$T/hostdir"; echo host-secret > "$T/hostdir/marker"
    # plain: a directory the caller passes on is the container's to read
    CID="$(new_id)"; make_bundle "$CID" /bin/cat /proc/self/fd/3/marker
    OUT="$(trt run --preserve-fds 1 --bundle "$BUNDLE" "$CID" 2>&1 3< "$T/hostdir" < /dev/null)"; RC=$?
    assert_eq "$OUT" host-secret "plain reads through a preserved directory fd"
    local t
    for t in 0 1 2 3; do
        CID="$(new_id)"; make_bundle "$CID" /bin/cat /proc/self/fd/3/marker
        cfg --arg t "$t" '.annotations = {"io.agentcage.tier": $t}'
        [ "$t" == 3 ] && trt approve "$CID" --bundle "$BUNDLE" > /dev/null
        OUT="$(trt run --preserve-fds 1 --bundle "$BUNDLE" "$CID" 2>&1 3< "$T/hostdir" < /dev/null)"; RC=$?
        assert_refused "a directory as file descriptor 3"
        CID="$(new_id)"; make_bundle "$CID" /bin/cat /proc/self/fd/0/marker
        cfg --arg t "$t" '.annotations = {"io.agentcage.tier": $t}'
        [ "$t" == 3 ] && trt approve "$CID" --bundle "$BUNDLE" > /dev/null
        OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < "$T/hostdir")"; RC=$?
        assert_refused "a directory as file descriptor 0 (stdin)"
    done
    # a cwd through a leaked fd (CVE-2024-21626) lands nowhere, tier or not
    for t in plain 1; do
        CID="$(new_id)"; make_bundle "$CID" /bin/cat marker
        cfg '.process.cwd = "/proc/self/fd/3"'
        [ "$t" == plain ] || cfg '.annotations = {"io.agentcage.tier": "1"}'
        OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 3< "$T/hostdir" < /dev/null)"; RC=$?
        assert_ne "$RC" 0 "$t: cwd through /proc/self/fd/3"
        assert_not_contains "$OUT" host-secret "$t reached the host directory"
        assert_contains "$OUT" "process.cwd"
    done
    return 0
}

test_stdin_host_file_not_writable_at_a_tier() {
    echo original > "$T/input"
    CID="$(new_id)"; make_bundle "$CID" /bin/sh -c 'echo PWNED > /proc/self/fd/0; cat'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < "$T/input")"
    assert_eq "$(cat "$T/input")" PWNED "plain rewrites the host file given as stdin"
    local t
    for t in 0 1 2 3; do
        echo original > "$T/input"
        CID="$(new_id)"; make_bundle "$CID" /bin/sh -c 'echo PWNED > /proc/self/fd/0; echo PWNED > /dev/stdin; cat'
        cfg --arg t "$t" '.annotations = {"io.agentcage.tier": $t}'
        [ "$t" == 3 ] && trt approve "$CID" --bundle "$BUNDLE" > /dev/null
        OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < "$T/input")"
        assert_eq "$(cat "$T/input")" original "tier $t: host stdin file unchanged ($OUT)"
        assert_contains "$OUT" original "tier $t still reads its stdin"
    done
    # an output stays writable (a log file), but is not truncated by a reopen
    CID="$(new_id)"; make_bundle "$CID" /bin/sh -c 'echo one; echo two > /proc/self/fd/1'
    cfg '.annotations = {"io.agentcage.tier": "1"}'
    trt run --bundle "$BUNDLE" "$CID" > "$T/log" 2>&1 < /dev/null
    assert_eq "$(head -1 "$T/log")" one "tier 1 writes its stdout file"
    return 0
}

# ---------------------------------------------------------------- 8. tier 3 approving itself

test_tier3_cannot_approve_itself() {
    local grants="$T/state/approvals"
    mkdir -p "$grants"; chmod 700 "$grants"
    # a hook that writes the container's own grant before the gate looks
    CID="$(new_id)"
    cat > "$T/self-approve.sh" << EOF
#!/bin/sh
( umask 077; printf 'digest=sha256:%064d\nexpires=%d\n' 0 \$(( \$(date +%s) + 600 )) > "$grants/$CID.grant" )
EOF
    chmod 755 "$T/self-approve.sh"
    make_bundle "$CID" /bin/true
    cfg ".hooks = {prestart: [{path: \"$T/self-approve.sh\"}]}"
    run_cfg plain
    [ -e "$grants/$CID.grant" ] || fail "plain did not run the self-approving hook"
    rm -f "$grants/$CID.grant"
    run_cfg 3
    assert_refused "hooks.prestart[0]"
    [ -e "$grants/$CID.grant" ] && fail "the bundle's hook wrote a grant"
    # a container cannot reach the grants by a mount either (see the bind test)
    return 0
}

# ---------------------------------------------------------------- 9. host sockets

test_host_unix_sockets_unreachable_at_a_tier() {
    mkdir -p "$T/home/proj" "$T/home/.config/ide"
    local sockets=("$T/home/proj/.ide.sock" "$T/home/.config/ide/agent.sock" "$T/home/S.docker")
    "$PYTHON3" -c '
import socket, sys, os, time
ls = []
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(8); ls.append(s)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(120)' "${sockets[@]}" &
    local server=$!
    echo "$server" >> "$T/.pids"
    local i
    for i in $(seq 50); do [ -e "${sockets[0]}.ready" ] && break; sleep 0.1; done
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    attack plain /bin/sh -c '/bin/probe connect-unix /home/agent/proj/.ide.sock; /bin/probe connect-unix /home/agent/.config/ide/agent.sock; /bin/probe connect-unix /home/agent/S.docker'
    assert_eq "$(echo $OUT)" "ok ok ok" "plain connects to the host's sockets"
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c '/bin/probe connect-unix /home/agent/proj/.ide.sock; /bin/probe connect-unix /home/agent/.config/ide/agent.sock; /bin/probe connect-unix /home/agent/S.docker'
        assert_eq "$RC" 0 "tier $t ran: $OUT"
        assert_not_contains "$OUT" ok "tier $t reached a host socket"
    done
    kill "$server" 2>/dev/null
    return 0
}

# ---------------------------------------------------------------- policy show

test_policy_show_lists_every_refusal() {
    CID="$(new_id)"; make_bundle "$CID" /bin/true
    cfg '.annotations = {"io.agentcage.tier": "1"} | .hooks = {prestart: [{path: "/bin/x"}]} |
         .linux.sysctl = {"kernel.core_pattern": "x"} | .mounts += [{destination: "/mnt/p", type: "proc", source: "proc"}]'
    assert_fails trt policy show --bundle "$BUNDLE"
    assert_eq "$(printf '%s\n' "$OUT" | grep -c '^# refused: tier 1 forbids')" 3 "three refusals listed: $OUT"
    assert_contains "$OUT" "hooks.prestart[0] /bin/x"
    assert_contains "$OUT" "linux.sysctl kernel.core_pattern"
    assert_contains "$OUT" "a proc mount at /mnt/p"
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "create says one line"
    assert_contains "$OUT" "(and 2 more: \`agentcage policy show\` lists them)"
}

test_exec_caller_directory_fds_refused_at_a_tier() {
    mkdir -p "$T/hostdir"; echo host-secret > "$T/hostdir/marker"
    local id; id="$(new_id)"; make_bundle "$id"
    cfg '.annotations = {"io.agentcage.tier": "1"}'
    trt create --bundle "$BUNDLE" "$id" > "$T/$id.out" 2>&1 < /dev/null || fail "create: $(cat "$T/$id.out")"
    track_pid "$(cpid "$id")"
    ok trt start "$id"
    OUT="$(trt exec --preserve-fds 1 "$id" /bin/cat /proc/self/fd/3/marker 2>&1 3< "$T/hostdir" < /dev/null)"
    assert_not_contains "$OUT" host-secret "exec read through a preserved directory fd"
    assert_contains "$OUT" "a directory as file descriptor 3"
    OUT="$(trt exec --cwd /proc/self/fd/3 "$id" /bin/cat marker 2>&1 3< "$T/hostdir" < /dev/null)"
    assert_not_contains "$OUT" host-secret "exec cwd through a leaked fd"
    ok trt delete --force "$id"
}
