#!/bin/sh
# Hot text first (Makefile; docs/benchmark.md): in the static-pie build the
# functions of runtime/hot-text.list sit together at the front of
# agentcage's text, in the output section .text.agentcage_hot. Checks that
# they do, and that the list still names functions the binary has (renames
# make it go stale: integration/bench/hot-text.sh remakes it). Reads the
# binary of BUILD (default build: ./agentcage) with readelf and nm; prints
# ok/FAIL lines and "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
build="${BUILD:-build}"
if [ "$build" = build ]; then bin=agentcage; else bin="$build/agentcage"; fi
passed=0
failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" = 0 ]; exit $?; }

[ -x "$bin" ] || { fail "hot text: no binary $bin (run make)"; finish; }
if readelf -lW "$bin" | grep -q ' INTERP '; then
    ok "hot text: $bin is linked dynamically (STATIC_LIBS=0, or no libc.a): no hot section expected"
    finish
fi

# the section's start and end, and every text symbol's address
section="$(readelf -SW "$bin" | awk '{ for (i = 1; i <= NF; i++) if ($i == ".text.agentcage_hot") print $(i + 2), $(i + 4) }')"
if [ -z "$section" ]; then
    fail "hot text: $bin has no .text.agentcage_hot section"
    finish
fi
ok "hot text: $bin has the section .text.agentcage_hot ($(printf '%d' "0x${section#* }") bytes)"

# Every listed name: in the section, outside it, or not in the binary; and
# the same for a few functions of the start path by name, listed or not
# (ours and the C library's)
must="main container_create clone_child init_main rootfs_prepare spec_parse_json_tree __libc_start_main_impl _int_malloc"
report="$(nm "$bin" | awk -v sec="$section" -v must="$must" '
    function hex(h,    i, v) { v = 0; h = tolower(h)
        for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
        return v }
    function where(f) { return !(f in addr) ? "absent" : (addr[f] >= start && addr[f] < end) ? "inside" : "outside" }
    BEGIN { split(sec, s, " "); start = hex(s[1]); end = start + hex(s[2]) }
    FNR == NR { if (NF == 3 && $2 ~ /^[tTWi]$/ && !($3 in addr)) addr[$3] = hex($1); next }
    { sub(/#.*/, ""); if (NF == 0) next; count[where($1)]++
      # (crtbegin'"'"'s three functions have no section of their own to place)
      if (where($1) == "outside" && $1 !~ /^(deregister_tm_clones|__do_global_dtors_aux|frame_dummy)$/) out = out " " $1 }
    END { n = split(must, m, " "); for (i = 1; i <= n; i++) print "must", m[i], where(m[i])
          printf "list %d %d %d%s\n", count["inside"] + 0, count["outside"] + 0, count["absent"] + 0, out }' - runtime/hot-text.list)"

while read -r kind f place; do
    [ "$kind" = must ] || continue
    case "$place" in
        inside) ok "hot text: $f is in the hot section" ;;
        outside) fail "hot text: $f is not in the hot section" ;;
        *) fail "hot text: $bin has no function $f" ;;
    esac
done <<EOF
$report
EOF

set -- $(echo "$report" | sed -n 's/^list //p')
inside=$1 outside=$2 absent=$3
shift 3
have=$((inside + outside))
listed=$((have + absent))
if [ $((inside * 100)) -ge $((have * 95)) ]; then
    ok "hot text: $inside of the $have listed functions the binary has are in the hot section"
else
    fail "hot text: only $inside of the $have listed functions the binary has are in the hot section (outside: $*)"
fi
if [ $((absent * 10)) -le "$listed" ]; then
    ok "hot text: $absent of the $listed listed names are not in the binary (at most a tenth)"
else
    fail "hot text: $absent of the $listed listed names are not in the binary: remake the list (integration/bench/hot-text.sh)"
fi
finish
