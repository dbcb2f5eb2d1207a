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
