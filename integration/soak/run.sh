#!/bin/bash
# Soak (issue 7): create / start / delete cycles of a busybox container,
# plain and at each tier 0..3, then checks that the host is back where it
# started (mounts, cgroup dirs under our own parent, network namespaces,
# processes of ours, --root entries, open files) and that the runtime's peak
# RSS did not grow between the first and the last cycles.
#
#   integration/soak/run.sh [--cycles N] [--tiers "plain 0 1 2 3"]
#
# Full run (issue 7): --cycles 2000 (the default), about 10,000 containers.
# CI runs a short form from integration/tests/soak.sh. Prints one "ok"/"FAIL"
# line per check, the figures, and "N passed, M failed"; exits 1 on a failure.
set -u
cycles=2000
tiers="plain 0 1 2 3"
while [ $# -gt 0 ]; do
    case "$1" in
        --cycles) cycles="$2"; shift 2 ;;
        --tiers) tiers="$2"; shift 2 ;;
        *) echo "usage: $0 [--cycles N] [--tiers LIST]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" == 0 ] || { echo "soak: must run as root" >&2; exit 1; }
IT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export IT_DIR
source "$IT_DIR/lib.sh"
ROOTFS="$("$IT_DIR/rootfs.sh")" || { echo "soak: cannot build the rootfs" >&2; exit 1; }
export ROOTFS
[ -x /usr/bin/time ] || { echo "soak: needs /usr/bin/time (Debian package time)" >&2; exit 1; }

T="$(mktemp -d /tmp/agentcage-soak.XXXXXX)"
ROOT="$T/root"
TEST_ID="soak$$"
PARENT="agentcage-soak-$$"
mkdir -p "$ROOT" "$T/approvals"
passed=0 failed=0
check() { # OK? WHAT
    if [ "$1" == 0 ]; then echo "ok - soak:$2"; passed=$((passed + 1))
    else echo "FAIL - soak:$2"; failed=$((failed + 1)); fi
}
srt() { "$RUNTIME" --root "$ROOT" --audit-log "$T/state/audit.jsonl" --approvals-dir "$T/state/approvals" "$@"; }

cleanup() {
    local id d p
    for id in $(ls -A "$ROOT" 2>/dev/null); do srt delete --force "$id" > /dev/null 2>&1; done
    for d in /sys/fs/cgroup/*/"$PARENT"; do
        [ -d "$d" ] || continue
        for p in $(cat "$d"/*/cgroup.procs 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        for p in "$d"/*/; do [ -d "$p" ] && rmdir "$p" 2>/dev/null; done
        rmdir "$d" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
# a run stopped by its timeout (TERM) cleans up too: the EXIT trap runs only
# when bash exits, which an unhandled TERM would not let it do
trap 'exit 143' TERM INT

# what the host holds that a leak would grow
snapshot() {
    echo "mounts $(wc -l < /proc/self/mountinfo)"
    echo "cgroups $(find /sys/fs/cgroup/*/"$PARENT" -mindepth 1 -type d 2>/dev/null | wc -l)"
    echo "netns-run $(ls /run/netns 2>/dev/null | wc -l)"
    echo "netns $(lsns -t net -n 2>/dev/null | wc -l)"
    echo "root-entries $(ls -A "$ROOT" | wc -l)"
    echo "our-processes $(pgrep -f -- "soak-mark-$$" | wc -l)"
    echo "open-files $(awk '{print $1}' /proc/sys/fs/file-nr)"
    echo "egress-daemons $(pgrep -x agentcage-egres | wc -l)"
    echo "egress-pidfiles $(ls /run/agentcage-egress 2>/dev/null | wc -l)"
    echo "user-processes $(ps -e -o args= | grep -cv '^\[')"
}
# open-files and user-processes are host-wide (other work on the host moves
# them): reported, checked with a margin.
declare -A margin=([open-files]=500 [user-processes]=50)

# bundle per tier: the default config, our own cgroup parent, a marker
for tier in $tiers; do
    BUNDLE="$T/bundle-$tier"; mkdir -p "$BUNDLE"
    default_config "soak" /bin/sh -c 'exit 0' "soak-mark-$$" > "$BUNDLE/config.json"
    jq --arg cg "/$PARENT/soak-$tier" --arg t "$tier" \
        '.linux.cgroupsPath = $cg | if $t == "plain" then . else .annotations = {"io.agentcage.tier": $t} end' \
        "$BUNDLE/config.json" > "$BUNDLE/c" && mv "$BUNDLE/c" "$BUNDLE/config.json"
done

snapshot > "$T/before"
start=$SECONDS
for tier in $tiers; do
    BUNDLE="$T/bundle-$tier"
    id="soak-$tier"
    : > "$T/rss-$tier"
    errors=0
    t0=$SECONDS
    for ((i = 0; i < cycles; i++)); do
        [ "$tier" == 3 ] && { srt approve "$id" --bundle "$BUNDLE" > /dev/null 2>&1 || { errors=$((errors + 1)); echo "approve $id failed" >> "$T/errors"; }; }
        if /usr/bin/time -f %M -a -o "$T/rss-$tier" "$RUNTIME" --root "$ROOT" --audit-log "$T/state/audit.jsonl" \
               --approvals-dir "$T/state/approvals" create --bundle "$BUNDLE" "$id" < /dev/null > /dev/null 2> "$T/err"; then
            srt start "$id" > /dev/null 2>> "$T/err" || { errors=$((errors + 1)); echo "$tier #$i start: $(head -c 300 "$T/err")" >> "$T/errors"; }
        else
            errors=$((errors + 1)); echo "$tier #$i create: $(head -c 300 "$T/err")" >> "$T/errors"
        fi
        /usr/bin/time -f %M -a -o "$T/rss-delete-$tier" "$RUNTIME" --root "$ROOT" --audit-log "$T/state/audit.jsonl" \
            delete --force "$id" > /dev/null 2>> "$T/err" || { errors=$((errors + 1)); echo "$tier #$i delete: $(head -c 300 "$T/err")" >> "$T/errors"; }
    done
    took=$((SECONDS - t0))
    # RSS: median of the first and of the last min(100, cycles/2) creates
    w=$((cycles / 2 < 100 ? cycles / 2 : 100)); [ $w -ge 1 ] || w=1
    grep -E '^[0-9]+$' "$T/rss-$tier" > "$T/rss-n"
    first="$(head -n $w "$T/rss-n" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
    last="$(tail -n $w "$T/rss-n" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
    maxrss="$(sort -n "$T/rss-n" | tail -1)"
    dl="$(grep -E '^[0-9]+$' "$T/rss-delete-$tier" | sort -n | tail -1)"
    echo "# tier $tier: $cycles cycles in ${took}s, $errors errors; create peak RSS median first $w: ${first} KiB, last $w: ${last} KiB, max ${maxrss} KiB; delete max ${dl} KiB"
    check $((errors != 0)) "tier-$tier-cycles ($errors errors$( [ $errors != 0 ] && echo ": $(grep -m1 "^$tier " "$T/errors")"))"
    # growth: more than 256 KiB between the medians is a leak (a page or two is noise)
    check $(( last > first + 256 )) "tier-$tier-rss (first ${first} KiB, last ${last} KiB)"
done
# a stopped egress proxy is reaped by the host's init a moment later
for ((i = 0; i < 50; i++)); do
    [ "$(pgrep -x agentcage-egres | wc -l)" -le "$(awk '$1 == "egress-daemons" {print $2}' "$T/before")" ] && break
    sleep 0.2
done
snapshot > "$T/after"
echo "# $((SECONDS - start)) s in all"
while read -r what n; do
    after="$(awk -v w="$what" '$1 == w {print $2}' "$T/after")"
    m="${margin[$what]:-0}"
    check $(( after > n + m )) "host-$what (before $n, after $after${m:+, margin $m})"
done < "$T/before"
echo "$passed passed, $failed failed"
[ $failed == 0 ]
