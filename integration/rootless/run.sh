#!/bin/bash
# Rootless tests: agentcage without host root, as a developer's laptop runs
# it.  Run as root (it prepares an unprivileged user), every container is
# made by that user:
#   (a) agentcage driven directly: inside a user namespace made with
#       `unshare --user --map-root-user` (as rootless Podman runs its OCI
#       runtime), and as the plain user with a user namespace in config.json;
#   (b) rootless Podman with `--runtime agentcage` (plain, a tier, -it, exec,
#       stop, rm), when rootless Podman works on this machine at all; and
#       after a root-side `agentcage approve` with an operator config the
#       user cannot read (issue 16: it failed every rootless container).
# Prints ok/FAIL/skip lines and `N passed, M failed`; exits non-zero on a
# failure.
#
# The user (agentcage-rl, with /etc/subuid and /etc/subgid ranges) is made if
# missing and kept; everything else lives under $W and is removed at the end.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$HERE/../.." && pwd)"
RL_USER="${RL_USER:-agentcage-rl}"
W="${AGENTCAGE_ROOTLESS_DIR:-/tmp/agentcage-rootless-it}"
PYTHON3="${PYTHON3:-/usr/bin/python3}"
PASSED=0 FAILED=0

ok_() { echo "ok - rootless/$1"; PASSED=$((PASSED + 1)); }
fail_() { echo "FAIL - rootless/$1: $2"; FAILED=$((FAILED + 1)); }
skip_() { echo "skip - rootless/$1: $2"; }
# check NAME CONDITION-OUTPUT: "yes" passes, anything else is the reason.
check() { if [ "$2" == yes ]; then ok_ "$1"; else fail_ "$1" "$2"; fi; }
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }
why() { echo "$1" | tr '\n' ' ' | tail -c 400; }

if [ "$(id -u)" != 0 ]; then
    echo "rootless/run.sh: run it as root (it prepares the unprivileged user)" >&2
    exit 2
fi

# ---------------------------------------------------------------- setup

command -v newuidmap > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q uidmap > /dev/null 2>&1
if ! id "$RL_USER" > /dev/null 2>&1; then
    useradd -m -s /bin/bash "$RL_USER" || { echo "rootless: useradd failed" >&2; exit 1; }
fi
grep -q "^$RL_USER:" /etc/subuid || usermod --add-subuids 200000-265535 "$RL_USER"
grep -q "^$RL_USER:" /etc/subgid || usermod --add-subgids 200000-265535 "$RL_USER"
RL_UID="$(id -u "$RL_USER")" RL_GID="$(id -g "$RL_USER")" RL_HOME="$(getent passwd "$RL_USER" | cut -d: -f6)"
# the user's egress proxies keep their pid files here (hooks/egress_main.c):
# made by the tier-2 test, removed at the end when it was not there before
proxy_pid_dir="/tmp/agentcage-egress-$RL_UID"
made_proxy_pid_dir=1; [ -e "$proxy_pid_dir" ] && made_proxy_pid_dir=0
RUNDIR="/run/user/$RL_UID"
made_rundir=0
[ -d "$RUNDIR" ] || { mkdir -p "$RUNDIR" && made_rundir=1; }
chown "$RL_UID:$RL_GID" "$RUNDIR" && chmod 700 "$RUNDIR"

ROOTFS="${ROOTFS:-$("$REPO_DIR/integration/rootfs.sh")}" || { echo "rootless: no rootfs" >&2; exit 1; }
rm -rf "$W"
mkdir -p "$W/bin" "$W/b" "$W/podman"
# the runtime finds its helpers (watchdog, policy hooks) next to itself
# the user's own copy of the rootfs, as a rootless developer's image is
# theirs: the runtime makes missing mount points (/workspace) in it
cp -a "$ROOTFS" "$W/rootfs" && ROOTFS="$W/rootfs"
for f in agentcage agentcage-watchdog agentcage-egress agentcage-audit; do
    [ -e "$REPO_DIR/$f" ] && cp "$REPO_DIR/$f" "$W/bin/$f"
done
chown -R "$RL_UID:$RL_GID" "$W"
chmod 755 "$W"
A="$W/bin/agentcage"

# U CMD...: CMD as the unprivileged user, with a login-like environment.
U() {
    (cd "$W" && runuser -u "$RL_USER" -- env -i HOME="$RL_HOME" USER="$RL_USER" LOGNAME="$RL_USER" \
        PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin XDG_RUNTIME_DIR="$RUNDIR" "$@")
}
# In the user's user namespace: root there, but not the host's.
UNS() { U unshare --user --map-root-user "$@"; }

# bundle NAME JQ-FILTER [ARGS...]: $W/b/NAME/config.json from `agentcage
# spec`, the shared rootfs, no terminal, then the filter.
bundle() {
    local name="$1" filter="$2"; shift 2
    local d="$W/b/$name" args
    mkdir -p "$d"
    args="$(printf '%s\n' "$@" | jq -R . | jq -s -c .)"
    (cd "$d" && rm -f config.json && "$A" spec > /dev/null)
    jq --arg root "$ROOTFS" --argjson args "$args" --argjson u "$RL_UID" --argjson g "$RL_GID" \
        '.root = {path: $root, readonly: true} | .process.terminal = false | .process.args = $args
         | del(.linux.resources) | '"$filter" "$d/config.json" > "$d/c" && mv "$d/c" "$d/config.json"
    chown -R "$RL_UID:$RL_GID" "$d"
    echo "$d"
}
# config.json with its own user namespace mapping the user's ids to root.
USERNS='.linux.namespaces += [{type: "user"}] | .linux.uidMappings = [{containerID: 0, hostID: $u, size: 1}]
        | .linux.gidMappings = [{containerID: 0, hostID: $g, size: 1}]'
TIER1='.annotations = {"io.agentcage.tier": "1"}'

# ---------------------------------------------------------------- (a) directly

t_unshare_run() {
    local b out rc
    b="$(bundle plain '.' sh -c 'id -u; grep -c . /proc/self/uid_map; grep " /dev/null " /proc/self/mountinfo | grep -c devtmpfs; ls /sys/class/net | tr "\n" " "; exit 3')"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-plain 2>&1)"; rc=$?
    check unshare_run "$( [ $rc == 3 ] && [ "$(echo "$out" | sed -n 1p)" == 0 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    check unshare_devices_bound "$( [ "$(echo "$out" | sed -n 3p)" == 1 ] && echo yes || echo "no bind of /dev/null: $(why "$out")")"
    check unshare_netns_empty "$( [ "$(echo "$out" | sed -n 4p)" == "lo " ] && echo yes || echo "$(why "$out")")"
}

t_unshare_lifecycle() {
    local b out
    b="$(bundle life '.' sleep 300)"
    cat > "$W/lifecycle.sh" << EOF
A="$A"; R="$W/state-ns"; set -x
\$A --root \$R create -b "$b" rl-life; echo "create=\$?"
echo "status=\$(\$A --root \$R state rl-life | jq -r .status)"
\$A --root \$R start rl-life; echo "start=\$?"
echo "status=\$(\$A --root \$R state rl-life | jq -r .status)"
\$A --root \$R exec rl-life sh -c 'echo exec-\$((40+2)) in \$(cat /proc/1/comm)'; echo "exec=\$?"
\$A --root \$R kill rl-life KILL; echo "kill=\$?"
for i in \$(seq 50); do [ "\$(\$A --root \$R state rl-life | jq -r .status)" == stopped ] && break; sleep 0.1; done
echo "status=\$(\$A --root \$R state rl-life | jq -r .status)"
\$A --root \$R delete rl-life; echo "delete=\$?"
echo "list=\$(\$A --root \$R list -q | wc -l)"
EOF
    chmod 755 "$W/lifecycle.sh"
    out="$(UNS bash "$W/lifecycle.sh" 2>&1)"
    local want="create=0 status=created start=0 status=running exec-42 in sleep exec=0 kill=0 status=stopped delete=0 list=0"
    local got; got="$(echo "$out" | grep -E '^(create|status|start|exec|kill|delete|list)=|^exec-' | tr '\n' ' ')"
    check unshare_lifecycle "$( [ "$got" == "$want " ] && echo yes || echo "got '$got': $(why "$out")")"
}

t_user_run() {
    local b out rc
    b="$(bundle user "$USERNS" sh -c 'id -u; cat /proc/self/uid_map')"
    out="$(U "$A" --rootless true run -b "$b" rl-user 2>&1)"; rc=$?
    check user_run "$( [ $rc == 0 ] && has "$out" " $RL_UID " && echo yes || echo "rc=$rc: $(why "$out")")"
    # auto: detected from the uid; state under $XDG_RUNTIME_DIR/agentcage
    b="$(bundle user2 "$USERNS" sleep 300)"
    # the init keeps create's stdio (no terminal): a file, not a pipe we would wait on
    U "$A" create -b "$b" rl-auto > "$W/create.out" 2>&1; rc=$?; out="$(cat "$W/create.out")"
    local st; st="$(U "$A" state rl-auto 2>&1 | jq -r .status 2>&1)"
    check user_default_root "$( [ $rc == 0 ] && [ -d "$RUNDIR/agentcage/rl-auto" ] && [ "$st" == created ] && echo yes ||
        echo "rc=$rc status=$st: $(why "$out")")"
    U "$A" start rl-auto > /dev/null 2>&1
    st="$(U "$A" state rl-auto 2>&1 | jq -r .status 2>&1)"
    U "$A" kill rl-auto KILL > /dev/null 2>&1
    for _ in $(seq 50); do [ "$(U "$A" state rl-auto 2>&1 | jq -r .status 2>&1)" == stopped ] && break; sleep 0.1; done
    out="$(U "$A" delete rl-auto 2>&1)"; rc=$?
    check user_lifecycle "$( [ "$st" == running ] && [ $rc == 0 ] && [ ! -e "$RUNDIR/agentcage/rl-auto" ] && echo yes ||
        echo "running=$st delete rc=$rc: $(why "$out")")"
    # `--rootless false` as a plain user: the host refuses what root would do
    out="$(U "$A" --rootless false run -b "$b" rl-false 2>&1)"; rc=$?
    check user_rootless_false_refused "$( [ $rc != 0 ] && echo yes || echo "it ran: $(why "$out")")"
    U "$A" --rootless false delete -f rl-false > /dev/null 2>&1
}

t_tier_limits() {
    local b out rc n
    b="$(bundle tier1 "$USERNS | $TIER1" sh -c \
        'touch /rootfs-write 2>/dev/null && echo root-rw || echo root-ro; touch /workspace/f && echo ws-ok; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "')"
    out="$(U "$A" run -b "$b" rl-tier 2>&1)"; rc=$?
    n="$(echo "$out" | grep -c .)"
    check tier1_refused_without_best_effort "$( [ $rc == 1 ] && [ "$n" == 1 ] && has "$out" "cannot be enforced rootless" &&
        has "$out" "--rootless-limits best-effort" && [ ! -e "$RUNDIR/agentcage/rl-tier" ] && echo yes ||
        echo "rc=$rc lines=$n: $(why "$out")")"
    out="$(U "$A" --rootless-limits best-effort run -b "$b" rl-tier 2>&1)"; rc=$?
    n="$(echo "$out" | grep -c 'warning: rootless: memory, cpu, pids limits not enforced')"
    check tier1_best_effort_warns_once "$( [ $rc == 0 ] && [ "$n" == 1 ] && echo yes || echo "rc=$rc warnings=$n: $(why "$out")")"
    check tier1_cage_applies "$(has "$out" root-ro && has "$out" ws-ok && has "$out" "NoNewPrivs: 1" &&
        has "$out" "Seccomp: 2" && echo yes || echo "$(why "$out")")"
    # the same in the user namespace of unshare (Podman's way)
    b="$(bundle tier1ns "$TIER1" sh -c 'touch /workspace/f && echo ws-ok')"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-tier-ns 2>&1)"; rc=$?
    check unshare_tier1_refused "$( [ $rc == 1 ] && has "$out" "cannot be enforced rootless" && echo yes || echo "rc=$rc: $(why "$out")")"
    out="$(UNS "$A" --root "$W/state-ns" --rootless-limits best-effort run -b "$b" rl-tier-ns 2>&1)"; rc=$?
    check unshare_tier1_best_effort "$( [ $rc == 0 ] && has "$out" ws-ok && has "$out" "limits not enforced" && echo yes ||
        echo "rc=$rc: $(why "$out")")"
    out="$(U "$A" --rootless-limits sometimes list 2>&1)"; rc=$?
    check rootless_limits_flag_checked "$( [ $rc == 1 ] && has "$out" "expected refuse or best-effort" && echo yes || echo "rc=$rc: $(why "$out")")"
}

t_tier2_egress() {
    # tier 2 rootless: the egress proxy starts (it enters the container's
    # user namespace for its network namespace) and refuses an unlisted host
    local b out rc
    b="$(bundle tier2 "$USERNS |
        .annotations = {\"io.agentcage.tier\": \"2\", \"io.agentcage.egress\": \"allowed.test\"}" sh -c \
        'echo "proxy=$HTTP_PROXY"; wget -q -O- http://denied.test/ 2>&1 | head -1; sleep 2')"
    U "$A" --rootless-limits best-effort run -b "$b" rl-tier2 > "$W/tier2.out" 2>&1 &
    local run=$! i writer="" worker="" st
    # meanwhile, from the host: the proxy's worker is the user's, confined
    for ((i = 0; i < 30; i++)); do
        writer="$(cat "/tmp/agentcage-egress-$RL_UID/rl-tier2.pid" 2>/dev/null)"
        [ -n "$writer" ] && worker="$(ps -o pid= --ppid "$writer" | tr -d ' ')"
        [ -n "$worker" ] && break
        sleep 0.1
    done
    st="$(cat "/proc/$worker/status" 2>/dev/null)"
    wait "$run"; rc=$?
    out="$(cat "$W/tier2.out")"
    check tier2_egress_proxy "$( [ $rc == 0 ] && has "$out" "proxy=http://127.0.0.1:3128" && has "$out" "403" &&
        echo yes || echo "rc=$rc: $(why "$out")")"
    field() { echo "$st" | awk -v f="$1:" '$1 == f {print $2}'; }
    check tier2_egress_worker_confined "$( [ "$(field Uid)" == "$RL_UID" ] && [ "$(field CapEff)" == 0000000000000000 ] &&
        [ "$(field CapPrm)" == 0000000000000000 ] && [ "$(field NoNewPrivs)" == 1 ] && [ "$(field Seccomp)" == 2 ] &&
        echo yes || echo "worker '$worker' of '$writer': $(echo "$st" | grep -E '^(Uid|Cap(Eff|Prm)|NoNewPrivs|Seccomp):' | tr '\n\t' '  ')")"
}

t_plain_limits_warn() {
    local b out rc n
    b="$(bundle mem '.linux.resources = {memory: {limit: 268435456}, pids: {limit: 50}}' true)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-mem 2>&1)"; rc=$?
    n="$(echo "$out" | grep -c .)"
    check plain_limits_one_warning "$( [ $rc == 0 ] && [ "$n" == 1 ] && has "$out" "warning: rootless: memory, pids limits not enforced" &&
        echo yes || echo "rc=$rc lines=$n: $(why "$out")")"
    # device rules alone are not limits: no warning
    b="$(bundle dev '.linux.resources = {devices: [{allow: false, access: "rwm"}]}' true)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-dev 2>&1)"; rc=$?
    check plain_device_rules_quiet "$( [ $rc == 0 ] && [ -z "$out" ] && echo yes || echo "rc=$rc: $(why "$out")")"
}

t_refusals() {
    local b out rc hard
    b="$(bundle sysctl '.linux.sysctl = {"vm.swappiness": "10"}' true)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-sysctl 2>&1)"; rc=$?
    check sysctl_refused_clearly "$( [ $rc == 1 ] && has "$out" "linux.sysctl \`vm.swappiness\`: not settable rootless" && echo yes ||
        echo "rc=$rc: $(why "$out")")"
    # a namespaced sysctl of the container's own namespace still works
    b="$(bundle sysctl2 '.linux.sysctl = {"net.ipv4.ip_unprivileged_port_start": "80"}' cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-sysctl2 2>&1)"; rc=$?
    check sysctl_namespaced_set "$( [ $rc == 0 ] && [ "$out" == 80 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    hard="$(U bash -c 'ulimit -Hn')"
    b="$(bundle rlimit ".process.rlimits = [{type: \"RLIMIT_NOFILE\", soft: 1024, hard: $((hard + 1))}]" true)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-rlimit 2>&1)"; rc=$?
    check rlimit_raise_refused "$( [ $rc == 1 ] && has "$out" "only host root can raise" && echo yes || echo "rc=$rc: $(why "$out")")"
    b="$(bundle rlimit2 '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 100, hard: 200}]' sh -c 'ulimit -Hn')"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-rlimit2 2>&1)"; rc=$?
    check rlimit_lower_applies "$( [ $rc == 0 ] && [ "$out" == 200 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    b="$(bundle oom '.process.oomScoreAdj = -500' true)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-oom 2>&1)"; rc=$?
    check oom_score_lowering_refused "$( [ $rc == 1 ] && has "$out" "lowering the OOM score needs host root" && echo yes ||
        echo "rc=$rc: $(why "$out")")"
    b="$(bundle oom2 '.process.oomScoreAdj = 500' cat /proc/self/oom_score_adj)"
    out="$(UNS "$A" --root "$W/state-ns" run -b "$b" rl-oom2 2>&1)"; rc=$?
    check oom_score_raise_applies "$( [ $rc == 0 ] && [ "$out" == 500 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    # a user namespace is needed when the runtime is not root at all
    b="$(bundle nouserns '.' true)"
    out="$(U "$A" run -b "$b" rl-nouserns 2>&1)"; rc=$?
    check plain_user_needs_userns "$( [ $rc == 1 ] && has "$out" "needs a user namespace" && echo yes || echo "rc=$rc: $(why "$out")")"
    # several ranges go through newuidmap/newgidmap and /etc/subuid
    local sub; sub="$(grep "^$RL_USER:" /etc/subuid | head -1 | cut -d: -f2)"
    b="$(bundle subids ".linux.namespaces += [{type: \"user\"}] | .linux.uidMappings = [{containerID: 0, hostID: \$u, size: 1}, {containerID: 1, hostID: $sub, size: 1000}]
        | .linux.gidMappings = [{containerID: 0, hostID: \$g, size: 1}, {containerID: 1, hostID: $sub, size: 1000}]" sh -c 'cat /proc/self/uid_map | tr -s " " | tr "\n" ";"')"
    out="$(U "$A" run -b "$b" rl-subids 2>&1)"; rc=$?
    check newuidmap_ranges "$( [ $rc == 0 ] && has "$out" " 1 $sub 1000" && echo yes || echo "rc=$rc: $(why "$out")")"
}

t_rootless_state_defaults() {
    # tier 3 rootless: its request and grant in the user's own directory
    # (beside its audit trail), never the system's /var/lib/agentcage
    local b out rc dir="$RL_HOME/.local/state/agentcage/approvals"
    b="$(bundle tier3 "$USERNS | .annotations = {\"io.agentcage.tier\": \"3\"}" echo approved-run)"
    out="$(U "$A" --rootless-limits best-effort run -b "$b" rl-tier3 2>&1)"; rc=$?
    check rootless_tier3_refused_with_request "$( [ $rc == 1 ] && has "$out" "approve" && [ -s "$dir/rl-tier3.request" ] &&
        echo yes || echo "rc=$rc request=$(ls "$dir" 2>&1 | tr '\n' ' '): $(why "$out")")"
    out="$(U "$A" approve rl-tier3 2>&1)"; rc=$?
    check rootless_approve_own_dir "$( [ $rc == 0 ] && [ -s "$dir/rl-tier3.grant" ] &&
        [ "$(stat -c '%U %a' "$dir")" == "$RL_USER 700" ] && echo yes || echo "rc=$rc: $(why "$out")")"
    out="$(U "$A" --rootless-limits best-effort run -b "$b" rl-tier3 2>&1)"; rc=$?
    check rootless_tier3_runs_after_approval "$( [ $rc == 0 ] && has "$out" approved-run && [ ! -e "$dir/rl-tier3.grant" ] &&
        echo yes || echo "rc=$rc: $(why "$out")")"
    # check, rootless on this host: what cannot be enforced, and why
    out="$(U "$A" check 2>&1)"; rc=$?
    if rootless_cgroups_here; then
        check rootless_check "$( [ $rc == 0 ] && has "$out" ", rootless" && echo yes || echo "rc=$rc: $(why "$out")")"
    else
        check rootless_check_names_limits "$( [ $rc == 1 ] && has "$out" ", rootless" &&
            has "$out" "tier 1 (write): not fully enforceable here: no cgroup limits" &&
            has "$out" "--rootless-limits best-effort" && has "$out" "idmapped mounts: no - rootless" &&
            echo yes || echo "rc=$rc: $(why "$out")")"
    fi
}
# true when this host's cgroups can be delegated to a user (pure v2)
rootless_cgroups_here() { grep -q ' /sys/fs/cgroup cgroup2 ' /proc/self/mounts; }

# ---------------------------------------------------------------- (b) Podman

podman_store() { # STORE RUNROOT
    mkdir -p "$W/podman/$1/graph" "$W/podman/$1/tmp"
    echo "$2" > "$W/podman/$1/runroot"
    chown -R "$RL_UID:$RL_GID" "$W/podman"
}

podman_setup() {
    command -v podman > /dev/null || { echo "podman is not installed"; return 1; }
    # the user's containers.conf: no systemd user session here, so cgroupfs
    # and a file events log; agentcage as a named runtime (as docs/rootless.md says)
    mkdir -p "$RL_HOME/.config/containers"
    [ -e "$RL_HOME/.config/containers/containers.conf" ] && cp "$RL_HOME/.config/containers/containers.conf" "$W/containers.conf.saved"
    touch "$W/podman/wrote-conf"
    cat > "$RL_HOME/.config/containers/containers.conf" << EOF
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
# Debian's crun refuses hybrid cgroup hosts such as this one
runtime = "runc"

[engine.runtimes]
agentcage = ["$A"]
# the same runtime with an operator config file of this test's (root-owned)
agentcage-op = ["$W/bin/agentcage-op"]
EOF
    printf '#!/bin/sh\nAGENTCAGE_CONF=%s/opconf/agentcage.conf exec %s "$@"\n' "$W" "$A" > "$W/bin/agentcage-op"
    chmod 755 "$W/bin/agentcage-op"
    cat > "$W/podman/storage.conf" << EOF
[storage]
driver = "vfs"
EOF
    chown -R "$RL_UID:$RL_GID" "$RL_HOME/.config" "$W/podman"
    podman_store main "$RUNDIR/agentcage-it-podman"
    local out
    out="$(U env CONTAINERS_STORAGE_CONF="$W/podman/storage.conf" podman --root "$W/podman/main/graph" \
        --runroot "$RUNDIR/agentcage-it-podman" load -i "$REPO_DIR/integration/.cache/engines-image.tar" 2>&1)" ||
        { echo "podman load: $(why "$out")"; return 1; }
    # rootless Podman itself, with its default runtime: else nothing of ours is to blame
    out="$(PS main run --rm --network none agentcage-it:latest true 2>&1)" ||
        { echo "rootless podman with its default runtime fails here: $(why "$out")"; return 1; }
    return 0
}
PS() { local s="$1"; shift; U env CONTAINERS_STORAGE_CONF="$W/podman/storage.conf" podman --root "$W/podman/$s/graph" \
    --runroot "$(cat "$W/podman/$s/runroot")" --tmpdir "$W/podman/$s/tmp" "$@"; }

t_podman() {
    local reason out rc
    if [ ! -e "$REPO_DIR/integration/.cache/engines-image.tar" ]; then
        skip_ podman "no integration/.cache/engines-image.tar (built by integration/engines/setup.sh)"; return
    fi
    if ! reason="$(podman_setup)"; then
        skip_ podman "$reason"; return
    fi
    local IMG=agentcage-it:latest
    out="$(PS main --runtime agentcage run --rm --network none $IMG sh -c 'id -u; grep -c . /proc/self/uid_map; exit 4' 2>&1)"; rc=$?
    check podman_run "$( [ $rc == 4 ] && [ "$(echo "$out" | head -1)" == 0 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    out="$(PS main --runtime "$A" run --rm --network none $IMG echo by-path 2>&1)"; rc=$?
    check podman_runtime_path "$( [ $rc == 0 ] && [ "$out" == by-path ] && echo yes || echo "rc=$rc: $(why "$out")")"

    # a tier: refused without best-effort limits here (no delegated cgroups)
    out="$(PS main --runtime agentcage run --rm --network none --annotation io.agentcage.tier=1 $IMG true 2>&1)"; rc=$?
    if has "$out" "forbids mount of $RUNDIR"; then
        fail_ podman_tier1_refused "the tier mapping refuses Podman's own /etc/hosts etc. under \$XDG_RUNTIME_DIR/containers: $(why "$out")"
    else
        check podman_tier1_refused "$( [ $rc != 0 ] && has "$out" "cannot be enforced rootless" && echo yes || echo "rc=$rc: $(why "$out")")"
    fi
    out="$(PS main --runtime agentcage --runtime-flag rootless-limits=best-effort run --rm --network none \
        --annotation io.agentcage.tier=1 $IMG sh -c 'touch /x 2>/dev/null && echo root-rw || echo root-ro; touch /workspace/f && echo ws-ok; grep ^NoNewPrivs /proc/self/status | tr -s "\t" " "' 2>&1)"; rc=$?
    # (the "limits not enforced" warning goes to Podman's --log file, not to
    # the terminal; the direct tests above check its wording)
    check podman_tier1_best_effort "$( [ $rc == 0 ] && has "$out" root-ro && has "$out" ws-ok && has "$out" "NoNewPrivs: 1" &&
        echo yes || echo "rc=$rc: $(why "$out")")"
    # the same with Podman's run root outside /run/user (what the tier needs today)
    podman_store alt "$W/podman/alt/run"
    mkdir -p "$W/podman/alt/run"; chown "$RL_UID:$RL_GID" "$W/podman/alt/run"
    PS alt load -i "$REPO_DIR/integration/.cache/engines-image.tar" > /dev/null 2>&1
    out="$(PS alt --runtime agentcage --runtime-flag rootless-limits=best-effort run --rm --network none \
        --annotation io.agentcage.tier=1 $IMG sh -c 'touch /x 2>/dev/null && echo root-rw || echo root-ro; touch /workspace/f && echo ws-ok' 2>&1)"; rc=$?
    check podman_tier1_best_effort_alt_runroot "$( [ $rc == 0 ] && has "$out" root-ro && has "$out" ws-ok && echo yes || echo "rc=$rc: $(why "$out")")"

    # -it with a terminal
    out="$(printf 'tty\necho in-$((40+2))\nexit 7\n' | U env CONTAINERS_STORAGE_CONF="$W/podman/storage.conf" \
        "$PYTHON3" "$REPO_DIR/integration/engines/ptyrun.py" 60 podman --root "$W/podman/main/graph" \
        --runroot "$RUNDIR/agentcage-it-podman" --tmpdir "$W/podman/main/tmp" --runtime agentcage \
        run --rm -it --network none $IMG sh 2>&1)"; rc=$?
    check podman_tty "$( [ $rc == 7 ] && echo "$out" | tr -d '\r' | grep -qx '/dev/pts/0' && echo "$out" | tr -d '\r' | grep -qx in-42 &&
        echo yes || echo "rc=$rc: $(why "$out")")"

    # detached, exec, stop, rm
    out="$(PS main --runtime agentcage run -d --name rl-pod --network none $IMG sleep 300 2>&1)"; rc=$?
    check podman_detached "$( [ $rc == 0 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    out="$(PS main exec rl-pod sh -c 'echo exec-$((40+2))' 2>&1)"; rc=$?
    check podman_exec "$( [ $rc == 0 ] && [ "$out" == exec-42 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    out="$(PS main stop -t 2 rl-pod 2>&1)"; rc=$?
    local st; st="$(PS main inspect -f '{{.State.Status}}' rl-pod 2>&1)"
    check podman_stop "$( [ $rc == 0 ] && [ "$st" == exited ] && echo yes || echo "rc=$rc status=$st: $(why "$out")")"
    out="$(PS main rm rl-pod 2>&1)"; rc=$?
    check podman_rm "$( [ $rc == 0 ] && [ -z "$(PS main ps -aq 2>/dev/null)" ] && echo yes || echo "rc=$rc: $(why "$out")")"
    t_podman_after_root_approve
}

# Issue 16's regression: root approves a tier-3 container (the approvals
# directory used to be /etc/agentcage/approvals, made 0700, and from then on
# every rootless container failed on the unreadable agentcage.conf).
t_podman_after_root_approve() {
    local out rc IMG=agentcage-it:latest tier1 etc_before var_before
    tier1=(--runtime agentcage-op --runtime-flag rootless-limits=best-effort run --rm --network none
           --annotation io.agentcage.tier=1 "$IMG" sh -c 'touch /workspace/f && echo ws-ok')
    # the operator's file reaches the runtime: readable, it is applied (shown first)
    mkdir -p "$W/opconf"
    echo "allowed-tiers = 0" > "$W/opconf/agentcage.conf"
    chmod 755 "$W/opconf"; chmod 644 "$W/opconf/agentcage.conf"
    out="$(PS main "${tier1[@]}" 2>&1)"; rc=$?
    check podman_reads_operator_conf "$( [ $rc != 0 ] && has "$out" "tier 1 is not allowed here" && echo yes || echo "rc=$rc: $(why "$out")")"
    # root approves with the default directory
    etc_before="$( [ -e /etc/agentcage ] && echo yes || echo no)"
    var_before="$( [ -e /var/lib/agentcage ] && echo yes || echo no)"
    out="$("$A" approve rl-regress --digest "sha256:$(printf '0%.0s' $(seq 64))" 2>&1)"; rc=$?
    check root_approve_in_var_lib "$( [ $rc == 0 ] && [ -s /var/lib/agentcage/approvals/rl-regress.grant ] &&
        [ "$(stat -c %a /var/lib/agentcage/approvals)" == 700 ] && echo yes || echo "rc=$rc: $(why "$out")")"
    check root_approve_leaves_etc_alone "$( [ "$etc_before" == yes ] || [ ! -e /etc/agentcage ] && echo yes || echo "it made /etc/agentcage")"
    rm -f /var/lib/agentcage/approvals/rl-regress.grant
    if [ "$var_before" == no ]; then rm -rf /var/lib/agentcage; fi
    # the operator's folder and file unreadable to the user: skipped, never a failure
    chmod 700 "$W/opconf"; chmod 600 "$W/opconf/agentcage.conf"
    out="$(PS main --runtime agentcage-op run --rm --network none "$IMG" echo plain-ok 2>&1)"; rc=$?
    check podman_unreadable_conf_plain "$( [ $rc == 0 ] && [ "$out" == plain-ok ] && echo yes || echo "rc=$rc: $(why "$out")")"
    out="$(PS main "${tier1[@]}" 2>&1)"; rc=$?
    check podman_unreadable_conf_tier1 "$( [ $rc == 0 ] && has "$out" ws-ok && echo yes || echo "rc=$rc: $(why "$out")")"
    # the same, driven directly in the user's namespace: one --debug line says why
    out="$(UNS env AGENTCAGE_CONF="$W/opconf/agentcage.conf" "$A" --root "$W/state-ns" --debug list -q 2>&1)"; rc=$?
    check unshare_unreadable_conf_debug_line "$( [ $rc == 0 ] && [ "$(echo "$out" | grep -c 'is not readable')" == 1 ] &&
        echo yes || echo "rc=$rc: $(why "$out")")"
}

podman_teardown() {
    local s
    for s in main alt; do
        [ -e "$W/podman/$s/runroot" ] || continue
        PS "$s" rm -af -t 0 > /dev/null 2>&1
        # vfs layers and the runroot belong to the user's subordinate ids: remove them in its namespace
        PS "$s" unshare rm -rf "$W/podman/$s/graph" "$(cat "$W/podman/$s/runroot")" > /dev/null 2>&1
        rm -rf "$(cat "$W/podman/$s/runroot")"
    done
    if [ ! -e "$W/podman/wrote-conf" ]; then
        :
    elif [ -e "$W/containers.conf.saved" ]; then
        cp "$W/containers.conf.saved" "$RL_HOME/.config/containers/containers.conf"
    else
        rm -f "$RL_HOME/.config/containers/containers.conf"
        rmdir "$RL_HOME/.config/containers/podman" 2> /dev/null
    fi
}

cleanup() {
    local id
    for id in $(U "$A" list -q 2>/dev/null); do U "$A" delete -f "$id" > /dev/null 2>&1; done
    for id in $(UNS "$A" --root "$W/state-ns" list -q 2>/dev/null); do UNS "$A" --root "$W/state-ns" delete -f "$id" > /dev/null 2>&1; done
    podman_teardown
    # Podman's pause process (it holds the user namespace), by its pid file
    local pause; pause="$(cat "$RUNDIR/libpod/tmp/pause.pid" 2>/dev/null)"
    [ -n "$pause" ] && [ "$(stat -c %u /proc/"$pause" 2>/dev/null)" == "$RL_UID" ] && kill -9 "$pause" 2>/dev/null
    for _ in $(seq 30); do [ -z "$(ps -u "$RL_UID" -o pid= 2>/dev/null)" ] && break; sleep 0.2; done
    local left; left="$(ps -u "$RL_UID" -o pid=,comm= 2>/dev/null | tr '\n' ' ')"
    [ -z "$left" ] || echo "# rootless: processes of $RL_USER still running: $left" >&2
    rm -rf "$RUNDIR/agentcage" "$RUNDIR/containers" "$RUNDIR/libpod" "$RUNDIR/runc" "$RUNDIR/crun" "$W"
    rm -f "$RL_HOME/.local/state/agentcage/approvals/rl-tier3".*
    [ $made_rundir == 1 ] && rm -rf "$RUNDIR"
    [ $made_proxy_pid_dir == 1 ] && rmdir "$proxy_pid_dir" 2>/dev/null
    return 0
}

t_unshare_run
t_unshare_lifecycle
t_user_run
t_tier_limits
t_tier2_egress
t_plain_limits_warn
t_refusals
t_rootless_state_defaults
t_podman
cleanup
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" == 0 ]
