#!/bin/bash
# agentcage against runc and crun, side by side (issue 6).
#
#   integration/bench/run.sh [--quick] [--check] [--only 1,3,4,5,6,7,8,9] [--report FILE] [--json FILE]
#
# --check (for integration/run-all.sh) adds functional ok/FAIL lines (each
# runtime ran, no batch failed, everything cleaned up, the host's cgroup2
# mount still there) and an "N passed, M failed" line; the performance
# targets are reported in the table, never failed on (the machine is noisy).
#
# Builds agentcage, the timing helper (timeit.c) and the static probes of a
# syscall's cost (sysbench.c) and a request's first byte (firstbyte.c),
# copies the shared busybox rootfs (integration/rootfs.sh) with the probes
# added, then runs bench.py inside a private mount namespace in
# which /sys/fs/cgroup/unified is unmounted: on this hybrid-cgroup host
# Debian's crun 1.8.1 otherwise makes no cgroup at all, and runc and agentcage get the same namespace
# so the comparison stays fair.  The host's mounts are untouched (checked at
# the end).  Everything it makes lives in a temp dir, in its own --root state
# directories and under the cgroup parent /agentcage-bench, all removed at
# the end.  Must run as root.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/../.." && pwd)"
RUNC=${RUNC:-/usr/sbin/runc}
CRUN=${CRUN:-/usr/bin/crun}
RUNSC=${RUNSC:-/usr/bin/runsc}
DOCKER_CONFIG=${DOCKER_CONFIG:-}

[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root" >&2; exit 1; }
check=0
args=()
for arg in "$@"; do
    if [ "$arg" = --check ]; then check=1; else args+=("$arg"); fi
done

# Debian packages the bench needs beyond the build's own.
need=""
for p in runc crun runsc python3 util-linux; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
    echo "run.sh: installing$need" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >&2
fi

# The tier-2/3 rows start the egress proxy, whose worker runs as this system
# user (make install and the test suite make it too; a fresh machine has none).
"$top/scripts/egress-user.sh" || { echo "run.sh: cannot make the system user agentcage-egress" >&2; exit 1; }
# Docker's default seccomp profile, as Docker put it in a real config.json.
if [ -z "$DOCKER_CONFIG" ]; then
    for c in "$top/../shared/reference/engine-calls/config.json-docker-run.json" \
             /work/shared/reference/engine-calls/config.json-docker-run.json \
             "$here/docker-default-config.json"; do
        [ -f "$c" ] && { DOCKER_CONFIG="$c"; break; }
    done
fi
if [ ! -f "$DOCKER_CONFIG" ]; then
    echo "run.sh: no Docker config.json with linux.seccomp found (set DOCKER_CONFIG): Docker-profile rows skipped" >&2
    DOCKER_CONFIG=""
fi

# AGENTCAGE=path benchmarks a given binary; by default the tree's, rebuilt
# first (if the rebuild fails, e.g. mid-edit, the last built binary is used).
if [ -z "${AGENTCAGE:-}" ]; then
    if ! make_log="$(make -C "$top" -s all 2>&1)"; then
        echo "$make_log" | grep -E 'error|Error' | head -5 >&2
        echo "run.sh: WARNING: make failed; benchmarking the existing $top/agentcage" >&2
    fi
    AGENTCAGE="$top/agentcage"
fi
[ -x "$AGENTCAGE" ] || { echo "run.sh: no agentcage binary at $AGENTCAGE" >&2; exit 1; }
shared_rootfs="$("$top/integration/rootfs.sh")"

tag="ab$$-"
work="$(mktemp -d /tmp/agentcage-bench.XXXXXX)"
# runsc alone (section 9) reads the rootfs as root; agentcage binds it
# into the sandbox's own reachable folder, so the 0700 folder stays
stateroot="/run/agentcage-bench-$tag"
cleanup() {
    local rc=$?
    set +e +o pipefail  # a clean-up step that fails must not skip the others
    # The bench deletes its containers itself; this sweeps what a crash left.
    for rt in "$work/bin/agentcage" "$RUNC" "$CRUN" "$RUNSC"; do
        [ -x "$rt" ] || continue
        [ -d "$stateroot/$(basename "$rt")" ] || continue
        for id in $("$rt" --root "$stateroot/$(basename "$rt")" list -q 2>/dev/null); do
            "$rt" --root "$stateroot/$(basename "$rt")" delete --force "$id" >/dev/null 2>&1 || true
        done
    done
    # Our cgroups only: children of /agentcage-bench named with this run's tag,
    # then the parent when empty (another run may still use it).
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
        [ -d "$h/agentcage-bench" ] || continue
        find "$h/agentcage-bench" -mindepth 1 -depth -type d -name "$tag*" -exec rmdir {} \; 2>/dev/null || true
        rmdir "$h/agentcage-bench" 2>/dev/null || true
    done
    local checks=""
    [ -f "$work/checks" ] && checks="$(cat "$work/checks")"
    rm -rf "$work" "$stateroot"
    if ! grep -q " /sys/fs/cgroup/unified cgroup2 " /proc/self/mounts; then
        echo "run.sh: WARNING: /sys/fs/cgroup/unified is not mounted on the host any more" >&2
        checks+=$'\nFAIL - the host\'s /sys/fs/cgroup/unified is still mounted'
        rc=1
    else
        checks+=$'\nok - the host\'s /sys/fs/cgroup/unified is still mounted'
    fi
    local left
    left="$(ls -d /sys/fs/cgroup/*/agentcage-bench/"$tag"* /run/agentcage-bench-"$tag" "$work" 2>/dev/null | head -3)"
    left+="$(ps -eo args | grep -F -- "$tag" | grep -v grep | head -3)"
    if [ -z "$left" ]; then
        checks+=$'\nok - no container, cgroup, state or process of the bench left'
    else
        checks+=$'\nFAIL - left behind: '"$(echo $left)"
        rc=1
    fi
    if [ "$check" = 1 ]; then
        [ $rc = 0 ] || checks+=$'\nFAIL - run.sh exited '"$rc"
        checks="$(printf '%s\n' "$checks" | grep -E '^(ok|FAIL) ')"
        printf '%s\n' "$checks"
        echo "$(printf '%s\n' "$checks" | grep -c '^ok ') passed, $(printf '%s\n' "$checks" | grep -c '^FAIL ') failed"
        printf '%s\n' "$checks" | grep -q '^FAIL ' && rc=1
    fi
    exit $rc
}
trap cleanup EXIT

gcc -O2 -Wall -Wextra -o "$work/timeit" "$here/timeit.c"
# A private copy, so a rebuild of the tree during the bench changes nothing;
# with it the helpers agentcage finds next to itself (agentcage-watchdog).
mkdir -p "$work/bin"
cp "$AGENTCAGE" "$work/bin/agentcage"
for helper in "$(dirname "$AGENTCAGE")"/agentcage-*; do
    [ -f "$helper" ] && [ -x "$helper" ] && cp "$helper" "$work/bin/"
done
rootfs="$work/rootfs"
cp -a "$shared_rootfs" "$rootfs"
gcc -static -O2 -Wall -Wextra -o "$rootfs/bin/sysbench" "$here/sysbench.c"
strip "$rootfs/bin/sysbench" 2>/dev/null || true
gcc -static -O2 -Wall -Wextra -o "$rootfs/bin/firstbyte" "$here/firstbyte.c"
strip "$rootfs/bin/firstbyte" 2>/dev/null || true
mkdir -p "$stateroot"

echo "# agentcage bench $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r)" >&2
echo "# $("$work/bin/agentcage" --version | head -2 | tr '\n' ' ')" >&2
echo "# $("$RUNC" --version | head -1); $("$CRUN" --version | head -1); $("$RUNSC" --version 2>/dev/null | head -1)" >&2

# The namespace: private propagation, so the umount stays inside.  A check
# that crun really works there comes first: without it the bench is moot.
unshare -m --propagation private sh -c '
    umount /sys/fs/cgroup/unified 2>/dev/null || true
    exec "$@"' sh python3 "$here/bench.py" \
    --workdir "$work" --stateroot "$stateroot" --rootfs "$rootfs" --timeit "$work/timeit" \
    --agentcage "$work/bin/agentcage" --runc "$RUNC" --crun "$CRUN" --runsc "$RUNSC" --docker-config "$DOCKER_CONFIG" \
    --tag "$tag" --checks "$work/checks" ${args[@]+"${args[@]}"}

# The A/B tool (ab.py) against itself, a smoke run for --check: it must
# time both sides and remove its state roots (/run/agentcage-abPID-*) and
# cgroups (/agentcage-bench/abPID-*) itself.
if [ "$check" = 1 ]; then
    ab_out="$("$here/ab.py" --rounds 2 --per 2 "$work/bin/agentcage" "$work/bin/agentcage" 2>&1)" || true
    ab_pid="$(echo "$ab_out" | sed -n 's/^# ab\.py pid \([0-9]*\)$/\1/p')"
    ab_left="$(ls -d /run/agentcage-ab"$ab_pid"-* /sys/fs/cgroup/*/agentcage-bench/ab"$ab_pid"-* 2>/dev/null || true)"
    if echo "$ab_out" | grep -q '^  B/A: wall ' && [ -n "$ab_pid" ] && [ -z "$ab_left" ]; then
        echo "ok - ab.py times two binaries interleaved and leaves nothing" >> "$work/checks"
    else
        echo "FAIL - ab.py: $(echo "$ab_out $ab_left" | tail -1)" >> "$work/checks"
    fi
fi
