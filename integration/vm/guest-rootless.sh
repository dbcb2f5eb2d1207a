#!/bin/sh
# The rootless set on pure cgroup v2 with a delegated subtree, the one layout
# where a rootless runtime can and therefore must enforce limits.  Runs
# INSIDE the test guest (busybox sh) as root, after guest-tests.sh in the v2
# boot.  It is not part of the payload: integration/vm/ci.sh hands its text
# in on the command line and the guest writes it to /tmp, by hand:
#
#   integration/vm/run.sh --mode v2 --kernel 6.1 -- sh -c \
#       'printf "%s\n" "$1" > /tmp/r.sh && sh /tmp/r.sh' - "$(cat integration/vm/guest-rootless.sh)"
#
# As root it delegates /sys/fs/cgroup/user-1000 to uid 1000 the way systemd
# delegates user@1000.service (the directory and its cgroup.procs,
# cgroup.threads and cgroup.subtree_control chowned, nothing enabled in its
# subtree_control), puts a shell in the leaf user-1000/session (like
# user@1000.service/init.scope: a cgroup with processes cannot hand
# controllers down), and runs agentcage there as uid 1000 with a user
# namespace in config.json and --rootless true:
#   - a plain container's memory and pids limits land in its cgroup below
#     user-1000 and are enforced (OOM kill, fork bomb stopped), no warning;
#   - a tier-1 container without --rootless-limits runs with the tier's
#     memory.max and pids.max;
#   - delete leaves no cgroup below user-1000 and no state.
# Prints ok/FAIL/skip lines as guest-tests.sh does and "N passed, M failed".
RT="${AGENTCAGE:-/usr/local/bin/agentcage}"
ROOTFS="${ROOTFS:-/rootfs}"
MODE="${VM_MODE:-unknown}"
KVER="${VM_KERNEL:-$(uname -r)}"
RL_UID=1000
CG=/sys/fs/cgroup/user-$RL_UID
HOME_RL=/tmp/rl-home
RL_ROOTFS=/tmp/rl-rootfs
B=/tmp/rl-bundles

passed=0 failed=0
ok() { echo "ok - [$MODE $KVER] rootless-$1"; passed=$((passed + 1)); }
fail() { echo "FAIL - [$MODE $KVER] rootless-$1: $(echo "$2" | tr '\n' ' ' | cut -c1-400)"; failed=$((failed + 1)); }
skip() { echo "skip - [$MODE $KVER] rootless-$1: $2"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "expected '$3', got '$2'"; fi; }

# ------------------------------------------------------------ as uid 1000

rt() { timeout 60 "$RT" --rootless true "$@"; }

# mkbundle ID ARGS-JSON [RESOURCES-JSON] [TOP-JSON-HEAD]: a rootless
# container: its own user namespace mapping root to our uid and gid, the
# cgroup /user-1000/ID (below the delegated subtree, beside our session).
mkbundle() {
    mkdir -p "$B/$1"
    cat > "$B/$1/config.json" <<EOF
{
  "ociVersion": "1.0.2-dev",
  ${4:-}
  "process": {
    "terminal": false,
    "user": {"uid": 0, "gid": 0},
    "args": $2,
    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    "cwd": "/",
    "capabilities": {
      "bounding": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
      "effective": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
      "permitted": ["CAP_KILL", "CAP_NET_BIND_SERVICE"]
    },
    "noNewPrivileges": true
  },
  "root": {"path": "$RL_ROOTFS", "readonly": true},
  "hostname": "vm-rootless",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}
  ],
  "linux": {
    "uidMappings": [{"containerID": 0, "hostID": $RL_UID, "size": 1}],
    "gidMappings": [{"containerID": 0, "hostID": $RL_UID, "size": 1}],
    "cgroupsPath": "/user-$RL_UID/$1",
    "resources": {${3:-}},
    "namespaces": [{"type": "user"}, {"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
    "maskedPaths": ["/proc/kcore", "/proc/keys", "/sys/firmware"],
    "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"]
  }
}
EOF
}
SLEEPER='["/bin/probe", "sleep", "600"]'

create() {
    rt create --bundle "$B/$1" "$1" > "$B/$1.out" 2> "$B/$1.err" < /dev/null
    local rc=$?
    ERR="$(cat "$B/$1.err")"
    return $rc
}
run() { OUT="$(rt run --bundle "$B/$1" "$1" 2>&1 < /dev/null)"; RC=$?; }
field() {
    rt state "$1" 2>/dev/null | tr -d '\n' |
        sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p"
}
destroy() { rt delete --force "$1" > /dev/null 2>&1; }
# no_warning NAME TEXT: limits are enforceable here, so nothing may say otherwise
no_warning() {
    case "$2" in *"not enforced"*|*warning*) fail "$1" "$2" ;; *) ok "$1" ;; esac
}

t_limits() {
    mkbundle rl-lim "$SLEEPER" '"memory": {"limit": 33554432}, "pids": {"limit": 20}'
    if ! create rl-lim; then fail limits-create "$ERR"; return; fi
    no_warning limits-no-warning "$ERR"
    check limits-memory-read-back "$(cat "$CG/rl-lim/memory.max" 2>&1)" 33554432
    check limits-pids-read-back "$(cat "$CG/rl-lim/pids.max" 2>&1)" 20
    local pid procs; pid="$(field rl-lim pid)"
    procs="$(cat "$CG/rl-lim/cgroup.procs" 2>&1)"
    case " $(echo $procs) " in
        *" $pid "*) ok limits-in-cgroup ;;
        *) fail limits-in-cgroup "pid '$pid' not in $CG/rl-lim: $procs" ;;
    esac
    OUT="$(rt delete --force rl-lim 2>&1)" && ok limits-delete || fail limits-delete "$OUT"

    mkbundle rl-oom '["/bin/probe", "hog-mem", "200"]' '"memory": {"limit": 33554432, "swap": 33554432}'
    run rl-oom
    case "$OUT" in
        *"ok 200 MB"*) fail memory-oom-kill "200 MB allocated under a 32 MB limit (exit $RC)" ;;
        *) if [ "$RC" = 137 ]; then ok memory-oom-kill; else fail memory-oom-kill "exit $RC, expected 137 (SIGKILL): $OUT"; fi ;;
    esac
    no_warning memory-no-warning "$OUT"

    mkbundle rl-bomb '["/bin/probe", "fork-bomb", "100"]' '"pids": {"limit": 10}'
    run rl-bomb
    case "$OUT" in
        "forked "[0-9]" EAGAIN") ok pids-fork-bomb-stopped ;;
        *) fail pids-fork-bomb-stopped "exit $RC: $OUT" ;;
    esac
}

t_tier1() {
    local flat want_mem want_pids
    flat="$(rt policy show --tier 1 2>&1 | tr -d ' \n')"
    want_mem="$(echo "$flat" | sed -n 's/.*"memory":{"limit":\([0-9]*\).*/\1/p')"
    want_pids="$(echo "$flat" | sed -n 's/.*"pids":{"limit":\([0-9]*\).*/\1/p')"
    if [ -z "$want_mem" ] || [ -z "$want_pids" ]; then
        fail tier1-policy "no memory or pids limit in policy show --tier 1: $(echo "$flat" | cut -c1-200)"
        return
    fi
    mkbundle rl-tier1 "$SLEEPER" '' '"annotations": {"io.agentcage.tier": "1"},'
    # no --rootless-limits best-effort: the limits are enforceable here,
    # so the tier must not be refused
    if ! create rl-tier1; then fail tier1-create "$ERR"; return; fi
    ok tier1-create
    no_warning tier1-no-warning "$ERR"
    check tier1-memory-limit "$(cat "$CG/rl-tier1/memory.max" 2>&1)" "$want_mem"
    check tier1-pids-limit "$(cat "$CG/rl-tier1/pids.max" 2>&1)" "$want_pids"
    # (not started: the payload has no agentcage-watchdog, which start needs)
    OUT="$(rt delete --force rl-tier1 2>&1)" && ok tier1-delete || fail tier1-delete "$OUT"
}

if [ "${1:-}" = --as-user ]; then
    echo "# as uid $(id -u) gid $(id -g) in cgroup $(cut -d: -f3 /proc/self/cgroup)"
    mkdir -p "$B"
    t_limits
    t_tier1
    for d in "$B"/*/; do [ -d "$d" ] && destroy "$(basename "$d")"; done
    left="$(ls "$XDG_RUNTIME_DIR/agentcage" 2>/dev/null)"
    [ -z "$left" ] && ok delete-leaves-no-state || fail delete-leaves-no-state "$left"
    exit 0
fi

# ------------------------------------------------------------ as root

echo "# agentcage rootless tests: mode $MODE, kernel $KVER, delegated $CG"
if [ "$MODE" != v2 ]; then
    skip delegated-cgroup "only pure cgroup v2 delegates cgroups to a user (mode $MODE)"
    echo "0 passed, 0 failed"
    exit 0
fi

setup() {
    # busybox su needs the user in /etc/passwd; the guest has none
    mkdir -p /etc
    grep -q "^rl:" /etc/passwd 2>/dev/null || echo "rl:x:$RL_UID:$RL_UID:rootless tests:$HOME_RL:/bin/sh" >> /etc/passwd
    grep -q "^rl:" /etc/group 2>/dev/null || echo "rl:x:$RL_UID:" >> /etc/group
    mkdir -p "$HOME_RL" /tmp/rl-run
    chown "$RL_UID:$RL_UID" "$HOME_RL" /tmp/rl-run
    chmod 0700 /tmp/rl-run
    # the script itself, for the user (ci.sh writes it to /tmp)
    cp "$0" "$HOME_RL/guest-rootless.sh" 2>/dev/null || return 1
    chmod 0755 "$HOME_RL/guest-rootless.sh"
    # Debian's knob for unprivileged user namespaces (on by default)
    [ -w /proc/sys/kernel/unprivileged_userns_clone ] && echo 1 > /proc/sys/kernel/unprivileged_userns_clone
    # the user's own copy of the rootfs, as rootless Podman's storage is:
    # a tier creates mount points (/workspace) in it
    rm -rf "$RL_ROOTFS" && cp -a "$ROOTFS" "$RL_ROOTFS" && chown -R "$RL_UID:$RL_UID" "$RL_ROOTFS" || return 1
    # the root's controllers (the init enables them already)
    local c
    for c in memory pids cpu; do
        grep -qw "$c" /sys/fs/cgroup/cgroup.subtree_control ||
            echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control || return 1
    done
    # the delegation, as systemd does it for user@.service with Delegate=yes
    mkdir "$CG" "$CG/session" || return 1
    chown "$RL_UID:$RL_UID" "$CG" "$CG/cgroup.procs" "$CG/cgroup.threads" "$CG/cgroup.subtree_control" || return 1
    chown -R "$RL_UID:$RL_UID" "$CG/session" || return 1
}
# The kernel refuses CLONE_NEWUSER to a chrooted caller, root or not
# (EPERM): the init must make its bind mount of the initramfs the namespace's
# root (mount --move onto /, as switch_root does) rather than only chroot.
if ! unshare -U true 2>/dev/null; then
    fail user-namespaces "unshare -U fails in this guest: is integration/vm/init still a plain chroot into /newroot? (move it onto / first)"
    echo "$passed passed, $failed failed"
    exit 1
fi
if ! setup; then
    fail delegated-cgroup-setup "could not delegate $CG (or copy $0)"
    echo "$passed passed, $failed failed"
    exit 1
fi
ok delegated-cgroup-setup

# A shell moves itself into the session leaf (only root may move a process
# out of the root cgroup), then becomes uid 1000 for the tests.
out="$(sh -c 'echo $$ > "$1/session/cgroup.procs" && exec su -s /bin/sh rl -c "$2"' sh "$CG" \
    "HOME=$HOME_RL XDG_RUNTIME_DIR=/tmp/rl-run XDG_STATE_HOME=$HOME_RL/.local/state VM_MODE=$MODE VM_KERNEL=$KVER sh $HOME_RL/guest-rootless.sh --as-user" 2>&1)"
rc=$?
echo "$out"
p="$(echo "$out" | grep -c '^ok - ')"
f="$(echo "$out" | grep -c '^FAIL - ')"
passed=$((passed + p)) failed=$((failed + f))
if [ "$rc" != 0 ] || [ $((p + f)) = 0 ]; then
    fail run-as-user "the user's part exited $rc: $(echo "$out" | grep -vE '^(ok|FAIL|skip) - ' | tail -n 5)"
fi

# every container cgroup gone (the user deleted them all): only our session
left="$(find "$CG" -mindepth 1 -type d ! -path "$CG/session" 2>/dev/null)"
[ -z "$left" ] && ok delete-leaves-no-cgroup || fail delete-leaves-no-cgroup "$left"
# leave the guest as found: the session's processes have ended
rmdir "$CG/session" "$CG" 2>/dev/null
rm -rf "$RL_ROOTFS"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
