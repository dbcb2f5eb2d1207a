#!/bin/bash
# The house's rule, checked on the built objects (docs/architecture.md):
# every call between files points down the layers, and no two files call
# each other (directly or round a loop). A file's layer is its folder's:
#
#   6  runtime/cli/, hooks/*_main.c      the programs: verbs and hook mains
#   5  runtime/container/                the lifecycle the verbs call
#   4  runtime/linux/                    the kernel work, the init's checklist
#   3  runtime/cgroup/, tier-annotations/, build/gen/ (the tier filters)
#   2  spec/, hooks/ (their library)     config.json, audit, approvals
#   1  runtime/util/                     allocation, errors, small helpers
#
# A call may go to a lower layer, or within one folder; never up, never
# sideways into another folder of the same layer. Reads the symbol tables
# of BUILD (default build) with nm; prints ok/FAIL lines and
# "N passed, M failed".
set -u
build="${BUILD:-build}"
cd "$(dirname "$0")/.."
[ -d "$build/runtime" ] || { echo "FAIL - layers: no objects in $build (run make)"; echo "0 passed, 1 failed"; exit 1; }

layer_of() {
    case "$1" in
        runtime/cli/*|hooks/*_main) echo 6 ;;
        runtime/container/*) echo 5 ;;
        runtime/linux/*) echo 4 ;;
        runtime/cgroup/*|tier-annotations/*|gen/*) echo 3 ;;
        spec/*|hooks/*) echo 2 ;;
        runtime/util/*) echo 1 ;;
        *) echo 0 ;;
    esac
}

# "file symbol" for every definition and every use
defs="$(mktemp)"; uses="$(mktemp)"
trap 'rm -f "$defs" "$uses"' EXIT
while read -r obj; do
    f="${obj#"$build"/}"; f="${f%.o}"
    # an object whose source is gone is left over from an older tree
    [ -f "$f.c" ] || [ -f "$build/$f.c" ] || continue
    nm "$obj" | awk -v f="$f" -v D="$defs" -v U="$uses" \
        'NF == 3 && $2 ~ /^[TDBR]$/ {print f, $3 >> D} NF == 2 && $1 == "U" {print f, $2 >> U}'
done < <(find "$build/runtime" "$build/spec" "$build/tier-annotations" "$build/hooks" "$build/gen" \
              -name '*.o' -not -path '*/fuzz/*' 2>/dev/null | sort)

# file -> file edges
edges="$(awk 'NR == FNR {def[$2] = $1; next} ($2 in def) && def[$2] != $1 {print $1, def[$2]}' "$defs" "$uses" | sort -u)"

passed=0; failed=0
bad=""
while read -r from to; do
    [ -n "$from" ] || continue
    lf="$(layer_of "$from")"; lt="$(layer_of "$to")"
    if [ "$lt" -gt "$lf" ]; then
        bad+="$from -> $to (up: layer $lf calls $lt); "
    elif [ "$lt" -eq "$lf" ] && [ "$(dirname "$from")" != "$(dirname "$to")" ]; then
        bad+="$from -> $to (sideways within layer $lf); "
    fi
done <<< "$edges"
if [ -z "$bad" ]; then echo "ok - layers: every call points down"; passed=$((passed + 1))
else echo "FAIL - layers: ${bad%; }"; failed=$((failed + 1)); fi

# loops: repeatedly drop files that call nobody left; what remains is loops
remaining="$edges"
while :; do
    sinks="$(printf '%s\n' "$remaining" | awk 'NF == 2 {from[$1] = 1; to[$2] = 1} END {for (t in to) if (!(t in from)) print t}')"
    [ -n "$sinks" ] || break
    remaining="$(printf '%s\n' "$remaining" | awk -v s="$sinks" 'BEGIN {n = split(s, a, "\n"); for (i = 1; i <= n; i++) sink[a[i]] = 1} NF == 2 && !($2 in sink)')"
done
if [ -z "$(printf '%s' "$remaining" | tr -d '[:space:]')" ]; then
    echo "ok - layers: no call loops"; passed=$((passed + 1))
else
    echo "FAIL - layers: files in call loops (or calling into one): $(printf '%s\n' "$remaining" | awk '{print $1}' | sort -u | tr '\n' ' ')"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" == 0 ]
