#!/bin/bash
# Runs the engine scenarios (scenarios.sh, scenarios_net.sh) for Docker,
# Podman and ctr, each against runc and against agentcage, plus the
# Kubernetes tests (the CRI config, and pods driven over the CRI), and
# prints `ok - name`, `FAIL - name: reason`, `skip - name: reason` lines and
# a final `N passed, M failed` line; exits non-zero on any failure.
#
# A scenario fails when what agentcage lets the user observe differs from
# what runc does (both runs in the same engine, same image, same flags).
#
# Environment:
#   ENGINES="docker podman ctr"   engines to run
#   SCENARIOS=ERE                 only scenarios whose "engine/name" matches
#   KEEP=1                        leave the daemons and $E (default
#                                 /tmp/agentcage-engines) running afterwards
#   AGENTCAGE_SRC=PATH            the binary under test (default: <repo>/agentcage;
#                                 copied to $E/bin/agentcage for the run)
set -u
ENG_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$ENG_DIR/common.sh"
source "$ENG_DIR/scenarios.sh"
export ENG_DIR REPO_DIR AGENTCAGE_SRC E
export PYTHON3="${PYTHON3:-/usr/bin/python3}"
ENGINES="${ENGINES:-docker podman ctr}"
SCENARIOS="${SCENARIOS:-.}"
SCEN_TIMEOUT="${SCEN_TIMEOUT:-150}"
passed=0
failed=0
skipped=0

if [ "$(id -u)" != 0 ]; then
    echo "FAIL - engines: must run as root"
    echo "0 passed, 1 failed"
    exit 1
fi
[ -x "$AGENTCAGE_SRC" ] || { echo "FAIL - engines: $AGENTCAGE_SRC not built"; echo "0 passed, 1 failed"; exit 1; }

t_start=$(date +%s)
W="$(mktemp -d /tmp/agentcage-engines-results.XXXXXX)"
# the engines' helpers write into their working directory (conmon leaves an
# `oom` file after an OOM kill): a scratch folder, never the checkout
cd "$W"
finish() {
    [ "${KEEP:-0}" == 1 ] || "$ENG_DIR/teardown.sh" || { echo "FAIL - engines/teardown: left state behind"; failed=$((failed + 1)); }
    rm -rf "$W"
}
trap 'finish; exit 130' INT TERM

if ! "$ENG_DIR/setup.sh" > "$W/setup.log" 2>&1; then
    echo "FAIL - engines/setup: $(tail -5 "$W/setup.log" | tr '\n' ' ')"
    finish
    echo "0 passed, 1 failed"
    exit 1
fi
echo "# engines set up in $(($(date +%s) - t_start)) s"

# run_one ENGINE NAME RT: runs the scenario, observations in $W/ENGINE.NAME.RT.{obs,notes}
run_one() {
    local eng="$1" name="$2" rt="$3" fn
    fn="$(ENGINE="$eng" bash -c "source '$ENG_DIR/common.sh'; source '$ENG_DIR/scenarios.sh'; scenario_fn '$eng' '$name'")"
    : > "$W/$eng.$name.$rt.obs"; : > "$W/$eng.$name.$rt.notes"
    ENGINE="$eng" RT="$rt" OBS="$W/$eng.$name.$rt.obs" NOTES="$W/$eng.$name.$rt.notes" \
        timeout -k 5 "$SCEN_TIMEOUT" bash -c "source '$ENG_DIR/common.sh'; source '$ENG_DIR/scenarios.sh'; $fn" \
        > "$W/$eng.$name.$rt.log" 2>&1
    local rc=$?
    [ $rc == 124 ] && echo "timed out after $SCEN_TIMEOUT s" >> "$W/$eng.$name.$rt.notes"
    return $rc
}

# compare ENGINE NAME: prints the differences between runc's and agentcage's observations
compare() {
    local a="$W/$1.$2.runc.obs" b="$W/$1.$2.agentcage.obs"
    join -t '=' -a 1 -a 2 -e '(missing)' -o 0,1.2,2.2 <(sort -t= -k1,1 -s "$a") <(sort -t= -k1,1 -s "$b") |
        awk -F'=' '$2 != $3 { printf "%s: runc \x27%s\x27, agentcage \x27%s\x27; ", $1, $2, $3 }'
}

for eng in $ENGINES; do
    t_eng=$(date +%s)
    list="SCEN_$eng"
    for name in ${!list}; do
        echo "$eng/$name" | grep -Eq -- "$SCENARIOS" || continue
        test="$eng/$name"
        if bash -c "source '$ENG_DIR/common.sh'; source '$ENG_DIR/scenarios.sh'; agentcage_only '$eng' '$name'"; then
            run_one "$eng" "$name" agentcage; rc=$?
            pending="$(bash -c "source '$ENG_DIR/common.sh'; source '$ENG_DIR/scenarios.sh'; echo \"\${PENDING[$test]:-}\"")"
            if [ $rc == 77 ]; then
                echo "skip - $test: $(cat "$W/$eng.$name.agentcage.obs.skip" 2> /dev/null)"; skipped=$((skipped + 1))
            elif [ -s "$W/$eng.$name.agentcage.notes" ] && [ -n "$pending" ]; then
                echo "skip - $test: $(tr '\n' ';' < "$W/$eng.$name.agentcage.notes" | head -c 300) (needs runtime change: $pending)"
                skipped=$((skipped + 1))
            elif [ -s "$W/$eng.$name.agentcage.notes" ]; then
                echo "FAIL - $test: $(tr '\n' ';' < "$W/$eng.$name.agentcage.notes")"; failed=$((failed + 1))
            else
                echo "ok - $test"; passed=$((passed + 1))
            fi
            continue
        fi
        run_one "$eng" "$name" runc; rc_runc=$?
        if [ $rc_runc == 77 ]; then
            echo "skip - $test: $(cat "$W/$eng.$name.runc.obs.skip" 2> /dev/null)"; skipped=$((skipped + 1))
            continue
        fi
        run_one "$eng" "$name" agentcage
        diff="$(compare "$eng" "$name")"
        if [ -s "$W/$eng.$name.runc.notes" ]; then
            # runc itself did not do what the scenario expects: say so (not a failure of agentcage)
            echo "# $test: runc baseline: $(tr '\n' ';' < "$W/$eng.$name.runc.notes" | head -c 400)"
        fi
        if [ -n "$diff" ]; then
            echo "FAIL - $test: $diff"
            if [ -s "$W/$eng.$name.agentcage.notes" ]; then
                echo "#   agentcage notes: $(tr '\n' ';' < "$W/$eng.$name.agentcage.notes" | head -c 1500)"
            fi
            failed=$((failed + 1))
        elif [ ! -s "$W/$eng.$name.runc.obs" ]; then
            echo "FAIL - $test: recorded no observation (scenario broken?)"; failed=$((failed + 1))
        else
            echo "ok - $test"; passed=$((passed + 1))
        fi
    done
    echo "# $eng scenarios took $(($(date +%s) - t_eng)) s"
done

# ---- timings: mean wall time of `run --rm IMAGE true` per engine and runtime
time_runs() { # LABEL CMD...
    local i t0 t1
    shift
    t0=$(date +%s%N)
    for i in 1 2 3 4 5; do "$@" > /dev/null 2>&1; done
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 5000000))"
}
for eng in $ENGINES; do
    echo "$eng/timing" | grep -Eq -- "$SCENARIOS" || continue
    line="# timing $eng run --rm true (mean of 5):"
    for rt in runc agentcage; do
        case "$eng" in
            docker) ms="$(time_runs x D run --rm --network none --runtime "$rt" "$IMAGE" true)" ;;
            podman) ms="$(time_runs x P --runtime "$rt" run --rm --network none "$IMAGE" true)" ;;
            ctr) ms="$(time_runs x C run --rm --runc-binary "$(rt_bin "$rt")" --runc-root "$E/ctr-root/$rt" --cgroup "$CG_CTR/timing" "$CTR_IMAGE" "timing-$rt" true)" ;;
        esac
        line="$line $rt ${ms} ms"
    done
    echo "$line"
done

# sub_suite NAME SCRIPT: runs a script printing ok/FAIL/skip lines and adds them up
sub_suite() {
    local out rc
    out="$("$2" 2>&1)"; rc=$?
    printf '%s\n' "$out" | grep -E '^(ok|FAIL|skip) - '
    passed=$((passed + $(printf '%s\n' "$out" | grep -c '^ok - ')))
    failed=$((failed + $(printf '%s\n' "$out" | grep -c '^FAIL - ')))
    skipped=$((skipped + $(printf '%s\n' "$out" | grep -c '^skip - ')))
    if [ $rc != 0 ] && ! printf '%s\n' "$out" | grep -q '^FAIL - '; then
        echo "FAIL - $1: $(basename "$2") exited $rc: $(printf '%s\n' "$out" | tail -3 | tr '\n' ' ')"; failed=$((failed + 1))
    fi
}
# ---- Kubernetes: containerd loads the CRI runtime handler config
if echo "kubernetes/containerd-config" | grep -Eq -- "$SCENARIOS"; then
    sub_suite kubernetes "$REPO_DIR/integration/kubernetes/test.sh"
fi
# ---- Kubernetes over CRI: pods as the kubelet runs them
if echo "kubernetes/cri" | grep -Eq -- "$SCENARIOS"; then
    t_k=$(date +%s)
    sub_suite kubernetes/cri "$REPO_DIR/integration/kubernetes/cri-test.sh"
    echo "# kubernetes CRI scenarios took $(($(date +%s) - t_k)) s"
fi

finish
trap - INT TERM
echo "# engines total $(($(date +%s) - t_start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" == 0 ]
