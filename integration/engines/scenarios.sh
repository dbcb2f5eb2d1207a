# Engine scenarios (sourced by run.sh).  A scenario is a function
# `sc_<engine>_<name>` (engine: docker, podman, ctr) run once with RT=runc and
# once with RT=agentcage.  It records what a user of the engine can observe
# with `obs KEY VALUE`; run.sh compares agentcage's observations with runc's.
# `want KEY EXPECTED ACTUAL` also records ACTUAL and notes when it differs
# from what the scenario expects, so a broken runc baseline shows up too.
# `skip REASON` (return 77) ends a scenario as skipped.
#
# Set by run.sh: ENGINE, RT (runc|agentcage), OBS (file), NOTES (file).

obs() { printf '%s=%s\n' "$1" "$(norm "${*:2}")" >> "$OBS"; }
norm() { printf '%s' "$*" | tr -d '\r' | tr '\n' '|' | sed 's/|$//'; }
want() { local got; got="$(norm "$3")"; obs "$1" "$got"; [ "$2" == "$got" ] || echo "$1: expected '$2', got '$got'" >> "$NOTES"; }
note() { echo "$*" >> "$NOTES"; }
skip() { echo "$*" > "$OBS.skip"; return 77; }

# ---------------------------------------------------------------- docker / podman
# X: the engine's CLI; XRUN: `run` with the runtime under test, no network
X() { case "$ENGINE" in docker) D "$@" ;; podman) P --runtime "$RT" "$@" ;; esac; }
XRUN() {
    case "$ENGINE" in
        docker) D run --runtime "$RT" --network none "$@" ;;
        podman) P --runtime "$RT" run --network none --cgroup-parent "$CG_PODMAN" "$@" ;;
    esac
}
cn() { echo "ac-$ENGINE-$RT-$1"; }            # container name for this run
xstatus() { X inspect -f '{{.State.Status}}' "$1" 2> /dev/null; }
xexit() { X inspect -f '{{.State.ExitCode}}' "$1" 2> /dev/null; }
xpid() { X inspect -f '{{.State.Pid}}' "$1" 2> /dev/null; }
xrm() { X rm -f "$@" > /dev/null 2>&1; return 0; }
# wait_until SECONDS CMD...: polls CMD every 0.1 s
wait_until() {
    local n=$(($1 * 10)) i; shift
    for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
not_running() { [ "$(xstatus "$1")" != running ]; }
# cg_path PID CONTROLLER: the process's cgroup in that v1 hierarchy
cg_path() { awk -F: -v c="$2" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$1/cgroup" 2> /dev/null; }
# cg_read PID CONTROLLER FILE
cg_read() { cat "/sys/fs/cgroup/$2$(cg_path "$1" "$2")/$3" 2> /dev/null || echo "(no $2/$3)"; }
# runtime_log_tail NAME: the runtime's last error for the report (Docker: bundle log.json)
runtime_log_tail() {
    local id f
    case "$ENGINE" in
        docker)
            id="$(D inspect -f '{{.Id}}' "$1" 2> /dev/null)"
            f="$(ls "$E"/containerd/state/io.containerd.runtime.v2.task/moby/"$id"/log.json 2> /dev/null)"
            [ -n "$f" ] && tail -c 600 "$f"
            ;;
    esac
    return 0
}

sc_x_exit_codes() {
    XRUN --rm "$IMAGE" true > /dev/null 2>&1; want rc_true 0 "$?"
    XRUN --rm "$IMAGE" sh -c 'exit 3' > /dev/null 2>&1; want rc_exit3 3 "$?"
    local out; out="$(XRUN --rm "$IMAGE" /no/such/command 2>&1)"; local rc=$?
    want rc_missing_path 127 "$rc"; [ "$rc" == 127 ] || note "missing command: $out"
    out="$(XRUN --rm "$IMAGE" nosuchcommand 2>&1)"; rc=$?
    want rc_missing_in_path 127 "$rc"; [ "$rc" == 127 ] || note "missing command in PATH: $out"
    out="$(XRUN --rm "$IMAGE" /etc/passwd 2>&1)"; rc=$?
    want rc_not_executable 126 "$rc"; [ "$rc" == 126 ] || note "not executable: $out"
    want stdout out "$(XRUN --rm "$IMAGE" sh -c 'echo out; echo err >&2' 2> /dev/null)"
    want stderr err "$(XRUN --rm "$IMAGE" sh -c 'echo out; echo err >&2' 2>&1 > /dev/null)"
}

sc_x_detached_exec_logs() {
    local c; c="$(cn detached)"; xrm "$c"
    XRUN -d --name "$c" "$IMAGE" sh -c 'echo started; exec sleep 300' > /dev/null 2>&1
    want run_d_rc 0 "$?"
    wait_until 5 sh -c "$(declare -f X P D); E='$E' ENGINE='$ENGINE' RT='$RT' DOCKER_BIN='$DOCKER_BIN'; X logs '$c' 2>&1 | grep -q started"
    want logs started "$(X logs "$c" 2>&1)"
    want status running "$(xstatus "$c")"
    want exec_echo hi "$(X exec "$c" echo hi 2>&1)"
    X exec "$c" sh -c 'exit 5' > /dev/null 2>&1; want exec_rc 5 "$?"
    want exec_stdin piped "$(echo piped | X exec -i "$c" cat 2>&1)"
    want exec_tty /dev/pts/N "$(X exec -t "$c" tty 2>&1 | tr -d '\r' | sed -E 's|[0-9]+$|N|')"
    want exec_user 1000 "$(X exec -u 1000 "$c" id -u 2>&1)"
    want exec_env val "$(X exec -e FOO=val "$c" sh -c 'echo $FOO' 2>&1)"
    want exec_workdir /tmp "$(X exec -w /tmp "$c" pwd 2>&1)"
    X exec "$c" /no/such > /dev/null 2>&1; local rc=$?; want exec_missing_rc "$([ "$ENGINE" == docker ] && echo 126 || echo 127)" "$rc"
    X exec -d "$c" sleep 100 > /dev/null 2>&1; want exec_detach_rc 0 "$?"
    want exec_detach_seen yes "$(X exec "$c" ps 2>&1 | grep -q 'sleep 100' && echo yes || echo no)"
    xrm "$c"
}

sc_x_tty() {
    local out rc
    out="$(printf 'tty\necho in-$((40+2))\nexit 7\n' | case "$ENGINE" in
        docker) "$PYTHON3" "$ENG_DIR/ptyrun.py" 30 "$DOCKER_BIN" -H "unix://$E/docker/docker.sock" run --rm -it --network none --runtime "$RT" "$IMAGE" sh ;;
        podman) CONTAINERS_CONF="$E/podman/containers.conf" CONTAINERS_STORAGE_CONF="$E/podman/storage.conf" "$PYTHON3" "$ENG_DIR/ptyrun.py" 30 \
            nsenter -F --net="$ENG_NETNS_PATH" podman --root "$E/podman/graph" --runroot "$E/podman/run" --cgroup-manager cgroupfs --tmpdir "$E/podman/tmp" \
            --events-backend file --runtime "$RT" run --rm -it --network none --cgroup-parent "$CG_PODMAN" "$IMAGE" sh ;;
    esac)"; rc=$?
    want it_rc 7 "$rc"
    want it_tty yes "$(echo "$out" | tr -d '\r' | grep -qx '/dev/pts/0' && echo yes || echo "no: $(echo "$out" | tail -c 300)")"
    want it_typed yes "$(echo "$out" | tr -d '\r' | grep -qx 'in-42' && echo yes || echo no)"
    # a window size the terminal had reaches the container
    out="$(printf '' | case "$ENGINE" in
        docker) "$PYTHON3" "$ENG_DIR/ptyrun.py" 30 "$DOCKER_BIN" -H "unix://$E/docker/docker.sock" run --rm -t --network none --runtime "$RT" "$IMAGE" sh -c 'test -t 0 && test -t 1 && echo both-tty' ;;
        podman) CONTAINERS_CONF="$E/podman/containers.conf" CONTAINERS_STORAGE_CONF="$E/podman/storage.conf" "$PYTHON3" "$ENG_DIR/ptyrun.py" 30 \
            nsenter -F --net="$ENG_NETNS_PATH" podman --root "$E/podman/graph" --runroot "$E/podman/run" --cgroup-manager cgroupfs --tmpdir "$E/podman/tmp" \
            --events-backend file --runtime "$RT" run --rm -t --network none --cgroup-parent "$CG_PODMAN" "$IMAGE" sh -c 'test -t 0 && test -t 1 && echo both-tty' ;;
    esac)"
    want t_only both-tty "$(echo "$out" | tr -d '\r' | grep -x both-tty)"
}

sc_x_stop() {
    local c1 c2 t0 t1; c1="$(cn stop1)"; c2="$(cn stop2)"; xrm "$c1" "$c2"
    # PID 1 without a TERM handler ignores SIGTERM: stop must fall back to SIGKILL
    XRUN -d --name "$c1" "$IMAGE" sleep 300 > /dev/null 2>&1
    XRUN -d --name "$c2" "$IMAGE" sh -c 'trap "echo got-term; exit 0" TERM; while :; do sleep 0.1; done' > /dev/null 2>&1
    sleep 0.5
    t0=$(date +%s%N); X stop -t 2 "$c1" > /dev/null 2>&1; want stop_rc 0 "$?"; t1=$(date +%s%N)
    want stop_kill_exit 137 "$(xexit "$c1")"
    want stop_waited_timeout yes "$([ $(((t1 - t0) / 1000000)) -ge 1900 ] && echo yes || echo "no ($(((t1 - t0) / 1000000)) ms)")"
    t0=$(date +%s%N); X stop -t 10 "$c2" > /dev/null 2>&1; t1=$(date +%s%N)
    want stop_term_exit 0 "$(xexit "$c2")"
    want stop_term_fast yes "$([ $(((t1 - t0) / 1000000)) -lt 5000 ] && echo yes || echo "no ($(((t1 - t0) / 1000000)) ms)")"
    want stop_term_logs got-term "$(X logs "$c2" 2>&1)"
    # a stopped container starts again
    X start "$c2" > /dev/null 2>&1; want restart_rc 0 "$?"
    want restart_status running "$(xstatus "$c2")"
    xrm "$c1" "$c2"
}

sc_x_kill_signal() {
    local c c2; c="$(cn kill)"; c2="$(cn kill9)"; xrm "$c" "$c2"
    XRUN -d --name "$c" "$IMAGE" sh -c 'trap "echo got-usr1; exit 0" USR1; while :; do sleep 0.1; done' > /dev/null 2>&1
    XRUN -d --name "$c2" "$IMAGE" sleep 300 > /dev/null 2>&1
    sleep 0.5
    X kill --signal USR1 "$c" > /dev/null 2>&1; want kill_usr1_rc 0 "$?"
    wait_until 5 not_running "$c"
    want kill_usr1_logs got-usr1 "$(X logs "$c" 2>&1)"
    want kill_usr1_exit 0 "$(xexit "$c")"
    X kill "$c2" > /dev/null 2>&1; want kill_rc 0 "$?"
    wait_until 5 not_running "$c2"
    want kill_exit 137 "$(xexit "$c2")"
    X kill "$c2" > /dev/null 2>&1; obs kill_stopped_rc "$?"
    xrm "$c" "$c2"
}

sc_x_pause_unpause() {
    local c pid; c="$(cn pause)"; xrm "$c"
    XRUN -d --name "$c" "$IMAGE" sleep 300 > /dev/null 2>&1
    pid="$(xpid "$c")"
    X pause "$c" > /dev/null 2>&1; want pause_rc 0 "$?"
    want paused_status paused "$(xstatus "$c")"
    want freezer FROZEN "$(cg_read "$pid" freezer freezer.state)"
    X unpause "$c" > /dev/null 2>&1; want unpause_rc 0 "$?"
    want unpaused_status running "$(xstatus "$c")"
    want freezer_after THAWED "$(cg_read "$pid" freezer freezer.state)"
    want exec_after ok "$(X exec "$c" echo ok 2>&1)"
    xrm "$c"
}

sc_x_top() {
    local c; c="$(cn top)"; xrm "$c"
    XRUN -d --name "$c" "$IMAGE" sleep 300 > /dev/null 2>&1
    local out; out="$(X top "$c" 2>&1)"
    want top_shows_sleep yes "$(echo "$out" | grep -q 'sleep 300' && echo yes || echo "no: $out")"
    X exec -d "$c" sleep 77 > /dev/null 2>&1; sleep 0.3
    want top_shows_exec yes "$(X top "$c" 2>&1 | grep -q 'sleep 77' && echo yes || echo no)"
    xrm "$c"
}

sc_x_update_memory() {
    [ "$ENGINE" == docker ] || { skip "podman 4.3 has no update"; return 77; }
    local c pid; c="$(cn update)"; xrm "$c"
    XRUN -d --name "$c" --memory 64m --memory-swap 128m "$IMAGE" sleep 300 > /dev/null 2>&1
    pid="$(xpid "$c")"
    want mem_before 67108864 "$(cg_read "$pid" memory memory.limit_in_bytes)"
    local out; out="$(X update --memory 96m --memory-swap 192m "$c" 2>&1)"; local rc=$?
    want update_rc 0 "$rc"; [ "$rc" == 0 ] || note "update: $out $(runtime_log_tail "$c")"
    want mem_after 100663296 "$(cg_read "$pid" memory memory.limit_in_bytes)"
    want inspect_mem 100663296 "$(X inspect -f '{{.HostConfig.Memory}}' "$c")"
    X update --pids-limit 33 --cpus 0.25 "$c" > /dev/null 2>&1; want update2_rc 0 "$?"
    want pids_after 33 "$(cg_read "$pid" pids pids.max)"
    want quota_after 25000 "$(cg_read "$pid" cpu cpu.cfs_quota_us)"
    xrm "$c"
}

sc_x_limits() {
    local c pid parent; c="$(cn limits)"; xrm "$c"
    XRUN -d --name "$c" --memory 64m --memory-swap 64m --pids-limit 50 --cpus 0.5 "$IMAGE" sleep 300 > /dev/null 2>&1
    pid="$(xpid "$c")"
    want memory 67108864 "$(cg_read "$pid" memory memory.limit_in_bytes)"
    want pids 50 "$(cg_read "$pid" pids pids.max)"
    want cpu_quota 50000 "$(cg_read "$pid" cpu cpu.cfs_quota_us)"
    want cpu_period 100000 "$(cg_read "$pid" cpu cpu.cfs_period_us)"
    parent="$([ "$ENGINE" == docker ] && echo "$CG_DOCKER" || echo "$CG_PODMAN")"
    want cgroup_under_parent yes "$(case "$(cg_path "$pid" memory)" in "$parent"/*) echo yes ;; *) echo "no: $(cg_path "$pid" memory)" ;; esac)"
    want same_cgroup_all yes "$([ "$(cg_path "$pid" memory)" == "$(cg_path "$pid" pids)" ] && echo yes || echo no)"
    xrm "$c"
    # enforced: the OOM killer ends a balloon, fork fails past the pids limit
    local out rc
    out="$(XRUN --rm --memory 32m --memory-swap 32m "$IMAGE" probe hog-mem 200 2>&1)"; rc=$?
    want oom_rc 137 "$rc"
    want fork_limited "forked 9 EAGAIN" "$(XRUN --rm --pids-limit 10 "$IMAGE" probe fork-bomb 30 2>&1 | grep forked)"
}

sc_x_network() {
    want none_ifaces lo "$(XRUN --rm "$IMAGE" sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "' 2>&1)"
    # "host": the engines' network namespace (see common.sh)
    local host_n; host_n="$(IN_NS ip -o link | wc -l)"
    local n
    case "$ENGINE" in
        docker) n="$(D run --rm --runtime "$RT" --network host "$IMAGE" sh -c 'ls /sys/class/net | wc -l' 2>&1)" ;;
        podman) n="$(P --runtime "$RT" run --rm --network host --cgroup-parent "$CG_PODMAN" "$IMAGE" sh -c 'ls /sys/class/net | wc -l' 2>&1)" ;;
    esac
    want host_ifaces "$host_n" "$n"
}

sc_x_read_only() {
    want ro "root=1 tmp=0" "$(XRUN --rm --read-only --tmpfs /tmp "$IMAGE" sh -c 'touch /x 2>/dev/null; a=$?; touch /tmp/y; echo "root=$a tmp=$?"' 2>&1)"
    want rw "root=0" "$(XRUN --rm "$IMAGE" sh -c 'touch /x; echo "root=$?"' 2>&1)"
}

sc_x_user() {
    want uid_gid "1000 1000 1000" "$(XRUN --rm --user 1000:1000 "$IMAGE" sh -c 'echo $(id -u) $(id -g) $(id -G)' 2>&1)"
    want user_name "1000 /home/agent" "$(XRUN --rm --user agent "$IMAGE" sh -c 'echo $(id -u) $HOME' 2>&1)"
    want groups_add "1000 1000 1000 5" "$(XRUN --rm --user 1000:1000 --group-add 5 "$IMAGE" sh -c 'echo $(id -u) $(id -g) $(id -G)' 2>&1)"
}

sc_x_cap_drop() {
    obs caps_default "$(XRUN --rm "$IMAGE" grep CapEff /proc/self/status 2>&1)"
    want caps_drop_all "CapEff:	0000000000000000" "$(XRUN --rm --cap-drop ALL "$IMAGE" grep CapEff /proc/self/status 2>&1)"
    want chown_dropped "1" "$(XRUN --rm --cap-drop CHOWN "$IMAGE" sh -c 'touch /tmp/f; chown 1000 /tmp/f 2>/dev/null; echo $?' 2>&1)"
    want chown_default "0" "$(XRUN --rm "$IMAGE" sh -c 'touch /tmp/f; chown 1000 /tmp/f; echo $?' 2>&1)"
    obs caps_add "$(XRUN --rm --cap-drop ALL --cap-add NET_ADMIN "$IMAGE" grep CapEff /proc/self/status 2>&1)"
}

sc_x_seccomp() {
    want seccomp_default "Seccomp:	2" "$(XRUN --rm "$IMAGE" grep '^Seccomp:' /proc/self/status 2>&1)"
    obs keyctl "$(XRUN --rm "$IMAGE" probe syscall keyctl 2>&1)"
    obs unshare "$(XRUN --rm "$IMAGE" probe syscall unshare 2>&1)"
    want seccomp_unconfined "Seccomp:	0" "$(XRUN --rm --security-opt seccomp=unconfined "$IMAGE" grep '^Seccomp:' /proc/self/status 2>&1)"
    want nnp_default "NoNewPrivs:	0" "$(XRUN --rm "$IMAGE" grep '^NoNewPrivs:' /proc/self/status 2>&1)"
    want nnp_set "NoNewPrivs:	1" "$(XRUN --rm --security-opt no-new-privileges "$IMAGE" grep '^NoNewPrivs:' /proc/self/status 2>&1)"
}

sc_x_stats() {
    local c; c="$(cn stats)"; xrm "$c"
    XRUN -d --name "$c" "$IMAGE" sleep 300 > /dev/null 2>&1
    sleep 1
    local m; m="$(X stats --no-stream --format '{{.MemUsage}}' "$c" 2>&1)"
    want mem_nonzero yes "$(echo "$m" | grep -Eq '^ *0 ?B' && echo "no: $m" || { echo "$m" | grep -Eq '^ *[0-9.]+ ?[kKMG]i?B' && echo yes || echo "no: $m"; })"
    want pids_stat 1 "$(X stats --no-stream --format '{{.PIDs}}' "$c" 2>&1)"
    xrm "$c"
}

# tier by annotation: should just run for now; the annotation must reach config.json
sc_podman_tier_annotation() {
    local c; c="$(cn tier)"; xrm "$c"
    XRUN -d --name "$c" --annotation io.agentcage.tier=1 "$IMAGE" sleep 300 > /dev/null 2>&1
    want run_rc 0 "$?"
    want status running "$(xstatus "$c")"
    want annotation 1 "$(jq -r '.annotations["io.agentcage.tier"]' "$(P inspect -f '{{.OCIConfigPath}}' "$c")" 2>&1)"
    want exec ok "$(X exec "$c" echo ok 2>&1)"
    xrm "$c"
}

# tier by runtime name (Docker 20.10 has no --annotation): agentcage only
sc_docker_tier_runtime() {
    if ! "$AGENTCAGE" --default-tier 1 list > /dev/null 2>&1; then
        skip "agentcage has no --default-tier yet"
        return 77
    fi
    local name rc out
    for name in agentcage-read agentcage-write agentcage-network; do
        D run --rm --runtime "$name" --network none "$IMAGE" true > /dev/null 2>&1; rc=$?
        want "rc_$name" 0 "$rc"
    done
    # tier 3 needs a human's grant first: without one Docker reports the
    # approval gate's refusal
    out="$(D run --rm --runtime agentcage-irreversible --network none "$IMAGE" true 2>&1)"; rc=$?
    want rc_agentcage-irreversible_refused yes "$( [ $rc != 0 ] && case "$out" in *"no approval"*) echo yes ;; *) echo "rc=$rc: $out" ;; esac)"
    # engines build exec's process.json from the container's original config
    local c; c="$(cn tier)"; xrm "$c"
    D run -d --name "$c" --runtime agentcage-write --network none "$IMAGE" sleep 300 > /dev/null 2>&1
    want exec ok "$(D exec "$c" echo ok 2>&1)"
    xrm "$c"
}

# ---------------------------------------------------------------- ctr
CN() { echo "ac-ctr-$RT-$1"; }
CRUN() { # CRUN ID ARGS...: ctr run with the runtime under test
    local id="$1"; shift
    C run --runc-binary "$(rt_bin "$RT")" --runc-root "$E/ctr-root/$RT" --cgroup "$CG_CTR/$id" "$@"
}
crm() {
    local id
    for id in "$@"; do
        C task kill -s SIGKILL "$id" > /dev/null 2>&1
        wait_until 3 sh -c "! ctr --address '$E/containerd/containerd.sock' -n '$CTR_NS' task ls 2>/dev/null | grep -q '^$id .*RUNNING'"
        C task rm -f "$id" > /dev/null 2>&1
        C container rm "$id" > /dev/null 2>&1
    done
    return 0
}
cstatus() { C task ls 2> /dev/null | awk -v id="$1" '$1 == id {print $3}'; }
cpid() { C task ls 2> /dev/null | awk -v id="$1" '$1 == id {print $2}'; }

sc_ctr_exit_codes() {
    local id; id="$(CN exit)"; crm "$id"
    CRUN "$id" --rm "$CTR_IMAGE" "$id" true > /dev/null 2>&1; want rc_true 0 "$?"
    CRUN "$id" --rm "$CTR_IMAGE" "$id" sh -c 'exit 3' > /dev/null 2>&1; want rc_exit3 3 "$?"
    local out rc; out="$(CRUN "$id" --rm "$CTR_IMAGE" "$id" /no/such 2>&1)"; rc=$?
    obs rc_missing "$rc"
    obs missing_msg_is_not_found "$(echo "$out" | grep -qE 'no such file or directory|executable file not found' && echo yes || echo "no: $out")"
    crm "$id"
    want stdout out "$(CRUN "$id" --rm "$CTR_IMAGE" "$id" sh -c 'echo out; echo err >&2' 2> /dev/null)"
    crm "$id"
    want stderr err "$(CRUN "$id" --rm "$CTR_IMAGE" "$id" sh -c 'echo out; echo err >&2' 2>&1 > /dev/null)"
    crm "$id"
}

sc_ctr_detached_exec() {
    local id; id="$(CN det)"; crm "$id"
    CRUN "$id" -d "$CTR_IMAGE" "$id" sleep 300 > /dev/null 2>&1; want run_d_rc 0 "$?"
    want status RUNNING "$(cstatus "$id")"
    want exec_echo hi "$(C task exec --exec-id e1 "$id" echo hi 2>&1)"
    C task exec --exec-id e2 "$id" sh -c 'exit 5' > /dev/null 2>&1; want exec_rc 5 "$?"
    local out; out="$(printf '' | "$PYTHON3" "$ENG_DIR/ptyrun.py" 20 ctr --address "$E/containerd/containerd.sock" --namespace "$CTR_NS" task exec -t --exec-id e3 "$id" tty)"
    want exec_tty /dev/pts/N "$(echo "$out" | tr -d '\r' | grep /dev/pts | sed -E 's|[0-9]+$|N|')"
    out="$(C task exec --exec-id e4 "$id" /no/such 2>&1)"; obs exec_missing_rc "$?"
    want ps_count 1 "$(C task ps "$id" 2>/dev/null | tail -n +2 | wc -l)"
    crm "$id"
}

sc_ctr_tty() {
    local id out rc; id="$(CN tty)"; crm "$id"
    out="$(printf 'tty\necho in-$((40+2))\nexit 7\n' | "$PYTHON3" "$ENG_DIR/ptyrun.py" 30 ctr --address "$E/containerd/containerd.sock" --namespace "$CTR_NS" \
        run --rm -t --runc-binary "$(rt_bin "$RT")" --runc-root "$E/ctr-root/$RT" --cgroup "$CG_CTR/$id" "$CTR_IMAGE" "$id" sh)"; rc=$?
    want it_rc 7 "$rc"
    want it_tty yes "$(echo "$out" | tr -d '\r' | grep -qx '/dev/pts/0' && echo yes || echo "no: $(echo "$out" | tail -c 300)")"
    want it_typed yes "$(echo "$out" | tr -d '\r' | grep -qx 'in-42' && echo yes || echo no)"
    crm "$id"
}

sc_ctr_kill_pause() {
    local id id2 pid; id="$(CN kill)"; id2="$(CN kill2)"; crm "$id" "$id2"
    CRUN "$id" -d "$CTR_IMAGE" "$id" sleep 300 > /dev/null 2>&1
    CRUN "$id2" -d "$CTR_IMAGE" "$id2" sh -c 'trap "exit 0" USR1; while :; do sleep 0.1; done' > /dev/null 2>&1
    pid="$(cpid "$id")"
    C task pause "$id" > /dev/null 2>&1; want pause_rc 0 "$?"
    want paused PAUSED "$(cstatus "$id")"
    want freezer FROZEN "$(cg_read "$pid" freezer freezer.state)"
    C task resume "$id" > /dev/null 2>&1; want resume_rc 0 "$?"
    want resumed RUNNING "$(cstatus "$id")"
    sleep 0.3
    C task kill -s SIGUSR1 "$id2" > /dev/null 2>&1; want kill_usr1_rc 0 "$?"
    wait_until 5 sh -c "[ \"\$(ctr --address '$E/containerd/containerd.sock' -n '$CTR_NS' task ls 2>/dev/null | awk '\$1 == \"$id2\" {print \$3}')\" == STOPPED ]"
    want usr1_stopped STOPPED "$(cstatus "$id2")"
    C task kill "$id" > /dev/null 2>&1; sleep 0.5
    want term_ignored_by_pid1 RUNNING "$(cstatus "$id")"
    C task kill -s SIGKILL "$id" > /dev/null 2>&1
    wait_until 5 sh -c "[ \"\$(ctr --address '$E/containerd/containerd.sock' -n '$CTR_NS' task ls 2>/dev/null | awk '\$1 == \"$id\" {print \$3}')\" == STOPPED ]"
    want killed STOPPED "$(cstatus "$id")"
    C task kill -s SIGKILL "$id" > /dev/null 2>&1; obs kill_stopped_rc "$?"
    crm "$id" "$id2"
}

sc_ctr_limits_metrics() {
    local id pid; id="$(CN lim)"; crm "$id"
    CRUN "$id" -d --memory-limit 67108864 "$CTR_IMAGE" "$id" sleep 300 > /dev/null 2>&1
    pid="$(cpid "$id")"
    want memory 67108864 "$(cg_read "$pid" memory memory.limit_in_bytes)"
    want cgroup_is_cgroups_path yes "$([ "$(cg_path "$pid" memory)" == "$CG_CTR/$id" ] && echo yes || echo "no: $(cg_path "$pid" memory)")"
    local m; m="$(C task metrics "$id" 2>&1 | awk '$1 == "memory.usage_in_bytes" {print $2}')"
    want metrics_mem_nonzero yes "$([ -n "$m" ] && [ "$m" -gt 0 ] 2> /dev/null && echo yes || echo "no: $m")"
    crm "$id"
    want oom "137" "$(CRUN "$id" --rm --memory-limit 33554432 "$CTR_IMAGE" "$id" probe hog-mem 200 > /dev/null 2>&1; echo $?)"
    crm "$id"
}

sc_ctr_network() {
    local id; id="$(CN net)"; crm "$id"
    want none_ifaces lo "$(CRUN "$id" --rm "$CTR_IMAGE" "$id" sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "' 2>&1)"
    crm "$id"
    want host_ifaces "$(IN_NS ip -o link | wc -l)" "$(CRUN "$id" --rm --net-host "$CTR_IMAGE" "$id" sh -c 'ls /sys/class/net | wc -l' 2>&1)"
    crm "$id"
}

sc_ctr_tier_annotation() {
    local id; id="$(CN tier)"; crm "$id"
    CRUN "$id" -d --annotation io.agentcage.tier=1 "$CTR_IMAGE" "$id" sleep 300 > /dev/null 2>&1; want run_rc 0 "$?"
    want status RUNNING "$(cstatus "$id")"
    want annotation 1 "$(jq -r '.annotations["io.agentcage.tier"]' "$E/containerd/state/io.containerd.runtime.v2.task/$CTR_NS/$id/config.json" 2>&1)"
    want exec ok "$(C task exec --exec-id e1 "$id" echo ok 2>&1)"
    crm "$id"
}

# ---------------------------------------------------------------- gVisor (issue 25)
# A tier under gVisor through the engine (agentcage only): gVisor's kernel
# answers inside, exec, exit codes and removal work, no sandbox folder left.
# Docker 20.10 has no --annotation: the test daemon has a runtime
# agentcage-gvisor (--default-tier 1 --kernel-for-tier 1:gvisor).
# gv_left ID: sandbox folders whose runsc state still names the container
gv_left() { ls /run/agentcage-gvisor/*/ 2> /dev/null | grep -cxF -- "${1}_sandbox:${1}.state"; }
gv_scenario() { # ENGINE-RUN-ARGS...: the engine's run command; image and command appended
    local c id; c="$(cn gvisor)"; xrm "$c"
    "$@" -d --name "$c" "$IMAGE" sleep 300 > /dev/null 2>&1; want run_rc 0 "$?"
    id="$(X inspect -f '{{.Id}}' "$c" 2> /dev/null)"
    want status running "$(xstatus "$c")"
    want sandbox_of_the_container 1 "$(gv_left "${id:-none}")"
    want gvisor_kernel 1 "$(X exec "$c" sh -c 'uname -v | grep -c "Jan 10 15:06:54 PST 2016"' 2>&1)"
    want exec ok "$(X exec "$c" echo ok 2>&1)"
    xrm "$c"
    want sandbox_left 0 "$(gv_left "${id:-none}")"
    want rm_output hi "$("$@" --rm "$IMAGE" echo hi 2>&1)"
    local out rc; out="$("$@" --rm "$IMAGE" sh -c 'exit 3' 2>&1)"; rc=$?
    want exit_code 3 "$rc"; [ "$rc" == 3 ] || note "exit 3: $out"
}
sc_docker_gvisor() { gv_scenario D run --runtime agentcage-gvisor --network none; }
sc_podman_gvisor() {
    gv_scenario P --runtime "$RT" run --network none --cgroup-parent "$CG_PODMAN" \
        --annotation io.agentcage.tier=1 --annotation io.agentcage.kernel=gvisor
}
sc_ctr_gvisor() {
    local id; id="$(CN gvisor)"; crm "$id"
    CRUN "$id" -d --annotation io.agentcage.tier=1 --annotation io.agentcage.kernel=gvisor "$CTR_IMAGE" "$id" sleep 300 > /dev/null 2>&1
    want run_rc 0 "$?"
    want status RUNNING "$(cstatus "$id")"
    want sandbox_of_the_container 1 "$(gv_left "$id")"
    want gvisor_kernel 1 "$(C task exec --exec-id e1 "$id" sh -c 'uname -v | grep -c "Jan 10 15:06:54 PST 2016"' 2>&1)"
    crm "$id"
    want sandbox_left 0 "$(gv_left "$id")"
    want rm_output hi "$(CRUN "$id" --rm --annotation io.agentcage.tier=1 --annotation io.agentcage.kernel=gvisor "$CTR_IMAGE" "$id" echo hi 2>&1)"
    crm "$id"
}

# scenario lists per engine (function suffixes)
SCEN_docker="exit_codes detached_exec_logs tty stop kill_signal pause_unpause top update_memory limits network read_only user cap_drop seccomp stats tier_runtime gvisor"
SCEN_podman="exit_codes detached_exec_logs tty stop kill_signal pause_unpause top update_memory limits network read_only user cap_drop seccomp stats tier_annotation gvisor"
SCEN_ctr="exit_codes detached_exec tty kill_pause limits_metrics network tier_annotation gvisor"

# scenario_fn ENGINE NAME: the function implementing it
scenario_fn() {
    if declare -F "sc_$1_$2" > /dev/null; then echo "sc_$1_$2"; else echo "sc_x_$2"; fi
}
source "$ENG_DIR/scenarios_net.sh"

# agentcage_only ENGINE NAME: scenarios without a runc counterpart (they
# check their runc baseline themselves)
agentcage_only() { [ "$2" == tier_runtime ] || [ "$2" == gvisor ] || [[ "$NET_SCENARIOS" == *" $2 "* ]]; }
