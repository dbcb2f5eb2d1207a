# Network scenarios at a tier with each engine's DEFAULT networking (sourced
# by scenarios.sh). The daemons run in the engines' own network namespace
# (common.sh), so docker0, Podman's CNI bridge and their NAT rules are real.
# These are agentcage-only scenarios: each first shows with runc that the
# engine's network does reach out (so the check can fail), then that a
# tiered container has only `lo` (tier 2: only the proxy) for its whole
# life and reaches nothing around the proxy.

# ifaces_in PID: the interfaces of the process's network namespace, sorted
ifaces_in() { nsenter --net="/proc/$1/ns/net" ip -o link 2> /dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort | tr '\n' ' ' | sed 's/ $//'; }
# the interfaces a command inside the container sees
IFACES_CMD='tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " " | sed "s/ $//"'
# reach URL [PROXY-OPTION]: the command a container runs to fetch URL, printing
# what it got or `unreached` (busybox wget without -T: -T crashes on refusal)
reach_cmd() { echo "timeout 4 wget ${2:--Y off} -q -O - $1 2>&1 | grep -q outside && echo reached || echo unreached"; }
HTTPD_CMD='echo inside > /tmp/index.html; exec httpd -f -p 8080 -h /tmp'

# ---------------------------------------------------------------- docker
DN() { echo "ac-net-$1"; }
drm() { D rm -f "$@" > /dev/null 2>&1; return 0; }

sc_docker_net_bridge() {
    want runc_ifaces "eth0 lo" "$(D run --rm --runtime runc "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    want runc_reaches reached "$(D run --rm --runtime runc "$IMAGE" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
    local rt
    for rt in agentcage-read agentcage-write agentcage-network; do
        want "${rt}_ifaces" lo "$(D run --rm --runtime "$rt" "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    done
    for rt in agentcage-write agentcage-network; do
        want "${rt}_reaches" unreached "$(D run --rm --runtime "$rt" "$IMAGE" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
    done
    # for its whole life: at start, in exec, after `network connect`, after a restart
    local c pid; c="$(DN bridge)"; drm "$c"; D network rm ac-net-user2 > /dev/null 2>&1
    D run -d --name "$c" --runtime agentcage-write "$IMAGE" sleep 300 > /dev/null 2>&1
    pid="$(D inspect -f '{{.State.Pid}}' "$c" 2> /dev/null)"
    want detached_ifaces lo "$(ifaces_in "$pid")"
    want exec_ifaces lo "$(D exec "$c" sh -c "$IFACES_CMD" 2>&1)"
    D network create ac-net-user2 > /dev/null 2>&1
    D network connect ac-net-user2 "$c" > /dev/null 2>&1
    want connect_ifaces lo "$(ifaces_in "$pid")"
    D restart -t 1 "$c" > /dev/null 2>&1
    pid="$(D inspect -f '{{.State.Pid}}' "$c" 2> /dev/null)"
    want restart_ifaces lo "$(ifaces_in "$pid")"
    drm "$c"; D network rm ac-net-user2 > /dev/null 2>&1
    return 0
}

sc_docker_net_user() {
    D network rm ac-net-user > /dev/null 2>&1
    D network create ac-net-user > /dev/null 2>&1
    want runc_ifaces "eth0 lo" "$(D run --rm --runtime runc --network ac-net-user "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    want tier1_ifaces lo "$(D run --rm --runtime agentcage-write --network ac-net-user "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    want tier2_ifaces lo "$(D run --rm --runtime agentcage-network --network ac-net-user "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    want tier1_reaches unreached "$(D run --rm --runtime agentcage-write --network ac-net-user "$IMAGE" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
    D network rm ac-net-user > /dev/null 2>&1
    return 0
}

# --network container:X, X a plain container with eth0 or a tiered one
sc_docker_net_container() {
    local plain tiered j1 j2; plain="$(DN plain)"; tiered="$(DN tiered)"; j1="$(DN j1)"; j2="$(DN j2)"
    drm "$plain" "$tiered" "$j1" "$j2"
    D run -d --name "$plain" --runtime runc "$IMAGE" sleep 300 > /dev/null 2>&1
    D run -d --name "$tiered" --runtime agentcage-write "$IMAGE" sh -c "$HTTPD_CMD" > /dev/null 2>&1
    want into_plain_ifaces lo "$(D run --rm --runtime agentcage-write --network "container:$plain" "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    want into_tiered_ifaces lo "$(D run --rm --runtime agentcage-write --network "container:$tiered" "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    drm "$plain" "$tiered"
    return 0
}

# -p: not in config.json, but in Docker's hostconfig.json beside the
# container's /etc/hostname: refused at a tier with one line, and nothing
# is reached either way
sc_docker_net_publish() {
    local c out rc; c="$(DN pub)"; drm "$c"
    D run -d --name "$c" --runtime runc -p 18090:8080 "$IMAGE" sh -c "$HTTPD_CMD" > /dev/null 2>&1
    sleep 0.5
    want runc_published inside "$(IN_NS timeout 3 wget -q -O - http://127.0.0.1:18090/index.html 2>&1)"
    drm "$c"
    out="$(D run -d --name "$c" --runtime agentcage-write -p 18090:8080 "$IMAGE" sh -c "$HTTPD_CMD" 2>&1)"; rc=$?
    sleep 0.5
    local got
    got="$(IN_NS timeout 3 wget -q -O - http://127.0.0.1:18090/index.html 2>&1 | grep -q inside && echo reached || echo unreached)"
    want tier1_published unreached "$got"
    local ip; ip="$(D inspect -f '{{.NetworkSettings.IPAddress}}' "$c" 2> /dev/null)"
    if [ -n "$ip" ]; then
        want tier1_by_address unreached "$(IN_NS timeout 3 wget -q -O - "http://$ip:8080/index.html" 2>&1 | grep -q inside && echo reached || echo unreached)"
    fi
    want tier1_refused yes "$([ $rc != 0 ] && echo "$out" | grep -q 'tier 1 forbids published ports (docker run -p 18090:8080/tcp)' && echo yes || echo "rc=$rc: $out")"
    drm "$c"
    out="$(D run --rm --runtime agentcage-write -P --expose 8080 "$IMAGE" true 2>&1)"; rc=$?
    want tier1_publish_all_refused yes "$([ $rc != 0 ] && echo "$out" | grep -q 'forbids published ports' && echo yes || echo "rc=$rc: $out")"
    return 0
}

# tier 2: only the proxy; nothing around it; exec has the tier's environment
sc_docker_net_proxy() {
    local c; c="$(DN proxy)"; drm "$c"
    D run -d --name "$c" --runtime agentcage-network "$IMAGE" sleep 300 > /dev/null 2>&1
    want ifaces lo "$(D exec "$c" sh -c "$IFACES_CMD" 2>&1)"
    want direct unreached "$(D exec "$c" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
    # Docker 20.10 sets no annotations: no io.agentcage.egress, the proxy allows nothing
    want proxied_denied yes "$(D exec "$c" sh -c "http_proxy=http://127.0.0.1:3128 timeout 4 wget -q -O - http://$EXT_IP:8080/ 2>&1" | grep -q 403 && echo yes || echo no)"
    want exec_proxy_env http://127.0.0.1:3128 "$(D exec "$c" sh -c 'echo $HTTP_PROXY' 2>&1)"
    drm "$c"
    return 0
}

# ---------------------------------------------------------------- podman
PN() { echo "ac-net-$1"; }
prm() { P rm -f "$@" > /dev/null 2>&1; return 0; }
PRUN() { P --runtime "$1" run --cgroup-parent "$CG_PODMAN" "${@:2}"; }

sc_podman_net_default() {
    want runc_ifaces "eth0 lo" "$(PRUN runc --rm "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    want runc_reaches reached "$(PRUN runc --rm "$IMAGE" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
    local t
    for t in 0 1 2; do
        want "tier${t}_ifaces" lo "$(PRUN agentcage --rm --annotation io.agentcage.tier=$t "$IMAGE" sh -c "$IFACES_CMD" 2>&1)"
    done
    want tier1_reaches unreached "$(PRUN agentcage --rm --annotation io.agentcage.tier=1 "$IMAGE" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
    local c; c="$(PN detached)"; prm "$c"
    PRUN agentcage -d --name "$c" --annotation io.agentcage.tier=1 "$IMAGE" sleep 300 > /dev/null 2>&1
    want detached_ifaces lo "$(ifaces_in "$(P inspect -f '{{.State.Pid}}' "$c" 2> /dev/null)")"
    want exec_ifaces lo "$(P --runtime agentcage exec "$c" sh -c "$IFACES_CMD" 2>&1)"
    prm "$c"
    return 0
}

sc_podman_net_proxy() {
    local c; c="$(PN proxy)"; prm "$c"
    PRUN agentcage -d --name "$c" --annotation io.agentcage.tier=2 --annotation "io.agentcage.egress=$EXT_IP:8080" \
        "$IMAGE" sleep 300 > /dev/null 2>&1
    local X="P --runtime agentcage exec $c"
    want ifaces lo "$($X sh -c "$IFACES_CMD" 2>&1)"
    want allowed_via_proxy reached "$($X sh -c "http_proxy=http://127.0.0.1:3128 $(reach_cmd "http://$EXT_IP:8080/" -Y\ on)" 2>&1)"
    want other_via_proxy unreached "$($X sh -c "http_proxy=http://127.0.0.1:3128 $(reach_cmd "http://$EXT_IP:8081/" -Y\ on)" 2>&1)"
    want direct unreached "$($X sh -c "$(reach_cmd "http://$EXT_IP:8080/")" 2>&1)"
    want exec_proxy_env http://127.0.0.1:3128 "$($X sh -c 'echo $HTTP_PROXY' 2>&1)"
    prm "$c"
    return 0
}

# -p: Podman does not tell the runtime about published ports either; the
# published port leads into the pod's CNI namespace, not into the cage
sc_podman_net_publish() {
    local c; c="$(PN pub)"; prm "$c"
    PRUN runc -d --name "$c" -p 18091:8080 "$IMAGE" sh -c "$HTTPD_CMD" > /dev/null 2>&1
    sleep 0.5
    want runc_published inside "$(IN_NS timeout 3 wget -q -O - http://127.0.0.1:18091/index.html 2>&1)"
    prm "$c"
    PRUN agentcage -d --name "$c" -p 18091:8080 --annotation io.agentcage.tier=1 "$IMAGE" sh -c "$HTTPD_CMD" > /dev/null 2>&1
    sleep 0.5
    want tier1_published unreached "$(IN_NS timeout 3 wget -q -O - http://127.0.0.1:18091/index.html 2>&1 | grep -q inside && echo reached || echo unreached)"
    prm "$c"
    return 0
}

# podman pod: the members of a tiered pod share localhost (and only lo)
sc_podman_net_pod() {
    local rt pod m1 out
    for rt in runc agentcage; do
        pod="$(PN "pod-$rt")"; m1="$(PN "m1-$rt")"
        P pod rm -f "$pod" > /dev/null 2>&1
        P --runtime "$rt" pod create --name "$pod" --cgroup-parent "$CG_PODMAN" > /dev/null 2>&1
        local ann=()
        [ "$rt" == agentcage ] && ann=(--annotation io.agentcage.tier=1)
        P --runtime "$rt" run -d --pod "$pod" --name "$m1" "${ann[@]}" "$IMAGE" sh -c "$HTTPD_CMD" > /dev/null 2>&1
        sleep 0.5
        out="$(P --runtime "$rt" run --rm --pod "$pod" "${ann[@]}" "$IMAGE" sh -c 'timeout 4 wget -q -O - http://127.0.0.1:8080/index.html 2>&1' 2>&1)"
        want "${rt}_sidecar_localhost" inside "$out"
        if [ "$rt" == agentcage ]; then
            want member_ifaces lo "$(ifaces_in "$(P inspect -f '{{.State.Pid}}' "$m1" 2> /dev/null)")"
            want exec_ifaces lo "$(P exec "$m1" sh -c "$IFACES_CMD" 2>&1)"
            # the infra keeps Podman's network, the members do not reach it
            want infra_ifaces "eth0 lo" "$(ifaces_in "$(P inspect -f '{{.State.Pid}}' "$(P pod inspect -f '{{.InfraContainerID}}' "$pod")" 2> /dev/null)")"
            out="$(P --runtime "$rt" run --rm --pod "$pod" "${ann[@]}" "$IMAGE" sh -c "$(reach_cmd "http://$EXT_IP:8081/")" 2>&1)"
            want member_reaches unreached "$out"
            # tier 2 in a Podman pod: refused with one line
            out="$(P --runtime "$rt" run --rm --pod "$pod" --annotation io.agentcage.tier=2 "$IMAGE" true 2>&1)"
            case "$out" in *"tiers 0-1 only"*) out=refused ;; esac
            want tier2_member refused "$out"
        fi
        P pod rm -f "$pod" > /dev/null 2>&1
    done
    return 0
}

SCEN_docker="${SCEN_docker:-} net_bridge net_user net_container net_publish net_proxy"
SCEN_podman="${SCEN_podman:-} net_default net_proxy net_publish net_pod"
NET_SCENARIOS=" net_bridge net_user net_container net_publish net_proxy net_default net_pod "

# Scenarios whose fix has not landed: until it does their failure is
# reported as `skip - ... (needs runtime change ...)`.
declare -A PENDING=()
