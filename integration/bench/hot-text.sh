#!/bin/bash
# Remakes runtime/hot-text.list: the functions a container's start and end
# run, which the build places first in agentcage's text (Makefile, "Hot text
# first"; docs/benchmark.md).
#
#   integration/bench/hot-text.sh [--from-scratch] [--rounds N]
#
# Runs the bench's paths once each (a plain, tier-1, tier-2 and tier-3
# `run`; create, state, start, kill, delete; `exec`, plain and at tier 1),
# in this mount namespace and in the bench's (without
# /sys/fs/cgroup/unified), under `perf record -e page-faults`. Every
# instruction fetch that faults in the binary's text names the function
# that ran; a function not on the list yet is added at its end, the binary
# relinked, and the paths run again, until a round adds nothing (or after
# N rounds, default 20). --from-scratch starts from the functions that
# `perf record -e cpu-clock` samples on those paths instead of the present
# list. The order of the list is the order of first use.
#
# A maintainer's tool, not part of `make test`: run it as root after a
# change that moves much code on the start path (or a glibc update), then
# measure with integration/bench/ab.py. Needs perf (linux-perf) and the
# tree's static-pie build. Its containers, state (/run/agentcage-hot-PID),
# cgroups (/agentcage-hot/...) and files are removed at the end.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/../.." && pwd)"
list="$top/runtime/hot-text.list"
bin="$top/agentcage"
rounds=20
scratch=0
while [ $# -gt 0 ]; do
    case "$1" in
        --from-scratch) scratch=1 ;;
        --rounds) rounds="$2"; shift ;;
        *) echo "hot-text.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "hot-text.sh: must run as root" >&2; exit 1; }
command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >&2

work="$(mktemp -d /tmp/agentcage-hot.XXXXXX)"
state="/run/agentcage-hot-$$"
cleanup() {
    set +e
    for id in $("$bin" --root "$state" list -q 2>/dev/null); do
        "$bin" --root "$state" delete --force "$id" >/dev/null 2>&1
    done
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
        [ -d "$h/agentcage-hot" ] || continue
        find "$h/agentcage-hot" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
        rmdir "$h/agentcage-hot" 2>/dev/null
    done
    rm -rf "$work" "$state"
}
trap cleanup EXIT

relink() {
    local out
    out="$(make -C "$top" -s agentcage 2>&1)" || { echo "$out" >&2; exit 1; }
}
relink
rootfs="$("$top/integration/rootfs.sh")"
mkdir -p "$work/approvals" "$state"
chmod 700 "$work/approvals"
# Two bundles: /bin/true, and a sleeper to exec into (each id its cgroup)
(cd "$work" && "$bin" spec)
python3 - "$work" "$rootfs" <<'EOF'
import json, os, sys
work, rootfs = sys.argv[1:]
c = json.load(open(os.path.join(work, "config.json")))
c["ociVersion"] = "1.0.2-dev"
c["process"]["terminal"] = False
c["root"] = {"path": rootfs, "readonly": True}
for name, args in (("true", ["/bin/true"]), ("sleeper", ["/bin/sleep", "1000"])):
    os.makedirs(os.path.join(work, name))
    c["process"]["args"] = args
    c["linux"]["cgroupsPath"] = "/agentcage-hot/" + name
    json.dump(c, open(os.path.join(work, name, "config.json"), "w"))
EOF

# The paths, once each, as a script perf runs (a step that fails is named:
# its functions would be missing from the list)
cat > "$work/paths.sh" <<EOF
#!/bin/sh
a() { "$bin" --root "$state" --approvals-dir "$work/approvals" "\$@" >/dev/null 2>&1 ||
      echo "hot-text.sh: agentcage \$* failed" >&2; }
a run --bundle "$work/true" hot-run
a --default-tier 1 run --bundle "$work/true" hot-t1
a --default-tier 2 run --bundle "$work/true" hot-t2
a --default-tier 3 approve hot-t3 --for 10m --bundle "$work/true"
a --default-tier 3 run --bundle "$work/true" hot-t3
a create --bundle "$work/true" hot-csd
a state hot-csd
a start hot-csd
a delete --force hot-csd
for t in 0 1; do
    a --default-tier \$t create --bundle "$work/sleeper" hot-x\$t
    a --default-tier \$t start hot-x\$t
    a --default-tier \$t exec hot-x\$t /bin/true
    a --default-tier \$t kill hot-x\$t KILL
    a --default-tier \$t delete --force hot-x\$t
done
EOF
chmod +x "$work/paths.sh"
# record OUT EVENT...: perf record of the paths in both namespaces, into
# OUT.host and OUT.bench
record() {
    local out="$1"
    shift
    perf record -q -o "$out.host" "$@" -- "$work/paths.sh"
    unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' sh \
        perf record -q -o "$out.bench" "$@" -- "$work/paths.sh"
}

# The functions of the binary (not the kernel's, the vdso's or the
# container's programs') in a recording, one "COMM FUNCTION" line each:
# the sampled ones, or those whose instruction fetch faulted (the address
# is the ip)
sampled_functions() {
    perf script -i "$1" -F comm,ip,sym,dso 2>/dev/null | awk -v dso="($bin)" '$4 == dso { print $1, $3 }'
}
faulting_functions() {
    perf script -i "$1" -F comm,addr,ip,sym,dso 2>/dev/null |
        awk -v dso="($bin)" '$2 == $5 && $7 == dso { print $1, $6 }'
}
not_placeable=' (\[unknown\]|@plt|_start|_init|_fini)$'

# The list has two groups: what the runtime and the init run, then, after
# the marker line, what only the egress proxy's processes (comm
# agentcage-egres) run, so that an idle proxy, which sheds its file pages
# and faults back only its loop, maps few windows of code.
marker="# The egress proxy's processes only:"
helper_comm=agentcage-egres
sed -n '1,/^[^#]/{/^#/p}' "$list" | grep -v -x -F "$marker" > "$work/header" || true
split_list() { # FILE: the names before the marker into $work/list, after it into $work/helpers
    awk -v m="$marker" -v a="$work/list" -v b="$work/helpers" '
        $0 == m { after = 1; next } { sub(/#.*/, "") } NF { print $1 > (after ? b : a) }' "$1"
    touch "$work/list" "$work/helpers"
}
# add PAIRS: the functions of "COMM FUNCTION" lines that neither group has,
# to the runtime's group if any process but the proxy's ran them; prints
# how many
add() {
    awk -v hc="$helper_comm" -v a="$work/list" -v b="$work/helpers" -v pairs="$1" '
        FILENAME != pairs { known[$1] = 1; next }
        !($2 in known) { if (!($2 in seen)) order[++n] = $2; seen[$2] = 1; if ($1 != hc) runtime[$2] = 1 }
        END { for (i = 1; i <= n; i++) print order[i] >> (order[i] in runtime ? a : b); print n + 0 }' \
        "$work/list" "$work/helpers" "$1"
}
write_list() {
    { cat "$work/header" "$work/list"; echo "$marker"; cat "$work/helpers"; } > "$work/list.new"
    cmp -s "$work/list.new" "$list" || cp "$work/list.new" "$list"
}

rm -f "$work/list" "$work/helpers"
if [ "$scratch" = 1 ]; then
    touch "$work/list" "$work/helpers"
    for i in 1 2 3; do
        record "$work/seed$i" -e cpu-clock -F 20000
        sampled_functions "$work/seed$i.host"
        sampled_functions "$work/seed$i.bench"
    done | grep -v -E "$not_placeable" > "$work/pairs" || true
    add "$work/pairs" > /dev/null
else
    split_list "$list"
fi

added=0
for round in $(seq 1 "$rounds"); do
    write_list  # only a changed list relinks
    relink
    record "$work/faults" -e page-faults -c 1 -d
    { faulting_functions "$work/faults.host"; faulting_functions "$work/faults.bench"; } |
        grep -v -E "$not_placeable" > "$work/pairs" || true
    n="$(add "$work/pairs")"
    echo "hot-text.sh: round $round: $(wc -l < "$work/pairs") text faults, $n functions added" >&2
    [ "$n" = 0 ] && break
    added=$((added + n))
done
write_list
relink
echo "hot-text.sh: $(cat "$work/list" "$work/helpers" | wc -l) functions in $list ($(wc -l < "$work/helpers") the proxy's only; $added added)" >&2
