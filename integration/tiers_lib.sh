# Helpers of the tier attack tests (integration/tests/tiers_*.sh), sourced
# by them after lib.sh.

# trt ARGS...: the runtime with this test's --root and tier 2/3's audit log
# and approvals under $T (never /var/log/agentcage or /etc/agentcage).
trt() { "$RUNTIME" --root "$ROOT" --audit-log "$T/state/audit.jsonl" --approvals-dir "$T/state/approvals" "$@"; }

# attack TIER ARGS...: runs ARGS with `run` in a fresh bundle built from the
# default config plus the jq filters in ATTACK_CFG; TIER is 0..3, or "plain"
# for no annotation. Extra annotations come from ATTACK_ANN (a JSON object);
# ATTACK_KERNEL=gvisor runs every tiered attack under gVisor
# (io.agentcage.kernel), the plain ones as they are.
# Output in $OUT, status in $RC, the container id in $CID.
ATTACK_CFG=()
ATTACK_ANN='{}'
attack() {
    local tier="$1"; shift
    CID="$(new_id)"
    make_bundle "$CID"
    # process.args set here, not by make_bundle, so a script may span lines
    local args; args="$(jq -n -c '$ARGS.positional' --args -- "$@")"
    cfg --argjson a "$args" '.process.args = $a'
    local f
    for f in "${ATTACK_CFG[@]}"; do cfg "$f"; done
    if [ "$tier" != plain ]; then
        cfg --arg t "$tier" --argjson a "$ATTACK_ANN" '.annotations = ((.annotations // {}) + $a + {"io.agentcage.tier": $t})'
        [ -z "${ATTACK_KERNEL:-}" ] || cfg --arg k "$ATTACK_KERNEL" '.annotations["io.agentcage.kernel"] = $k'
        # a config the tier refuses cannot be approved: run then shows the refusal
        [ "$tier" == 3 ] && trt approve "$CID" --bundle "$BUNDLE" > /dev/null 2>&1
    fi
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
}

# sh_attack TIER SCRIPT: attack TIER /bin/sh -c SCRIPT.
sh_attack() { local t="$1"; shift; attack "$t" /bin/sh -c "$1"; }

# assert_refused WHAT: the last attack's create was refused: exit 1, one line
# naming the tier and WHAT, and no state dir or cgroup left.
assert_refused() {
    assert_eq "$RC" 1 "refusal exit status ($OUT)"
    assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "one line: $OUT"
    # the symlink check runs in the runtime's mount code and says
    # "a tiered container's bind source" rather than the tier's number
    [ "$1" == symlink ] || assert_match "$OUT" "tier [0-3]" "refusal names the tier"
    assert_contains "$OUT" "$1" "refusal names the request"
    [ -e "$ROOT/$CID" ] && fail "state dir left after refusal: $ROOT/$CID"
    local cgs; cgs="$(ls -d /sys/fs/cgroup/*/"$CGROUP_PARENT/$CID" 2>/dev/null)"
    [ -z "$cgs" ] || fail "cgroup left after refusal: $cgs"
    return 0
}

bind_mount() { # DEST SRC [ro|rw]: a jq filter adding a bind mount
    echo '.mounts += [{destination: "'"$1"'", type: "bind", source: "'"$2"'", options: ["rbind", "'"${3:-rw}"'"]}]'
}

# a fake home: ssh key, aws credentials, rc file, git hook
plant_home() {
    local h="$1"
    mkdir -p "$h/.ssh" "$h/.aws" "$h/.git/hooks" "$h/proj/.git/hooks"
    echo "FAKE-PRIVATE-KEY" > "$h/.ssh/id_rsa"; chmod 600 "$h/.ssh/id_rsa"
    echo "aws_secret_access_key=FAKE-AWS" > "$h/.aws/credentials"
    echo "# original bashrc" > "$h/.bashrc"
    printf '#!/bin/sh\n# original hook\n' > "$h/.git/hooks/pre-commit"
    echo "[core]" > "$h/.git/config"
    printf '#!/bin/sh\n# original hook\n' > "$h/proj/.git/hooks/pre-commit"
    echo "[core]" > "$h/proj/.git/config"
}

# sum of the files' checksums: a cheap "nothing changed" on the host
tree_sum() { (cd "$1" && find . -type f -o -type l | sort | while read -r f; do
    if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; else echo "$f $(md5sum < "$f")"; fi; done) | md5sum; }

