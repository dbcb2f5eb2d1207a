# What engines bring to a tier (issue 22), at the runtime's level: Docker's
# network hook, exec's environment, single-file binds. The engines
# themselves are in integration/engines (scenarios_net.sh) and
# integration/kubernetes (cri-test.sh).

source "$IT_DIR/tiers_lib.sh"

# Docker's libnetwork-setkey prestart hook (argv[0] is what names it):
# plain containers run it, a tier drops it, whatever its path, and says so
test_docker_setkey_hook_dropped_at_a_tier() {
    printf '#!/bin/sh\ntouch "$1"\n' > "$T/hook.sh"; chmod 755 "$T/hook.sh"
    ATTACK_CFG=(".hooks = {prestart: [{path: \"$T/hook.sh\", args: [\"libnetwork-setkey\", \"$T/ran\"]}]}")
    attack plain /bin/true
    assert_eq "$RC" 0 "plain: $OUT"
    [ -e "$T/ran" ] || fail "plain did not run the hook"
    rm -f "$T/ran"
    local t
    for t in 0 1 2 3; do
        [ $t == 3 ] && continue # tier 3 needs a grant; the mapping is the same
        attack $t /bin/true
        assert_eq "$RC" 0 "tier $t runs without Docker's hook: $OUT"
        [ -e "$T/ran" ] && fail "tier $t ran libnetwork-setkey"
    done
    # `policy show` tells it; another prestart hook is still refused
    OUT="$(trt policy show --tier 1 --bundle "$BUNDLE" 2>&1)"
    assert_contains "$OUT" "libnetwork-setkey: dropped" "policy show names the dropped hook"
    ATTACK_CFG=(".hooks = {prestart: [{path: \"$T/hook.sh\", args: [\"hook.sh\", \"$T/ran\"]}]}")
    attack 1 /bin/true
    assert_refused "hooks.prestart[0] $T/hook.sh"
    return 0
}

# exec gets what the init got: the tier's environment allow-list and its
# credential-looking values dropped (an engine's exec process carries the
# original environment), and at tier 2 the proxy variables, replacing the
# caller's
test_exec_gets_the_tiers_environment() {
    local t
    for t in plain 1 2; do
        CID="$(new_id)"; make_bundle "$CID" sleep 300
        cfg '.process.env += ["GITHUB_TOKEN=ghp_x", "KEEP_ME=1"]'
        [ "$t" == plain ] || cfg --arg t "$t" '.annotations = {"io.agentcage.tier": $t, "io.agentcage.env-allow": "KEEP_ME,GITHUB_TOKEN"}'
        trt create --bundle "$BUNDLE" "$CID" > "$T/create.out" 2>&1 < /dev/null || fail "tier $t create: $(cat "$T/create.out")"
        trt start "$CID" || fail "tier $t start"
        OUT="$(trt exec -e AWS_SECRET_ACCESS_KEY=s -e HTTP_PROXY=http://evil:1 "$CID" \
            sh -c 'echo "${GITHUB_TOKEN:-none} ${AWS_SECRET_ACCESS_KEY:-none} ${KEEP_ME:-none} ${HTTP_PROXY:-none} ${https_proxy:-none}"' 2>&1)"
        case "$t" in
            plain) assert_eq "$OUT" "ghp_x s 1 http://evil:1 none" "plain exec keeps its environment" ;;
            1) assert_eq "$OUT" "none none 1 none none" "tier 1 exec: the allow-list, no credential values" ;;
            2) assert_eq "$OUT" "none none 1 http://127.0.0.1:3128 http://127.0.0.1:3128" "tier 2 exec: the proxy's variables" ;;
        esac
        trt delete --force "$CID" > /dev/null 2>&1 || fail "tier $t delete --force"
    done
    return 0
}

# a single-file bind mount (a kubelet's /etc/hosts, a user's ~/.bashrc or
# config file) works at a tier: the protection paths go only beneath folders
test_single_file_bind_at_a_tier() {
    mkdir -p "$T/proj/.git/hooks"
    echo 'alias ll=ls' > "$T/proj/.bashrc"
    echo 'key=1' > "$T/proj/settings.conf"
    local t
    for t in plain 0 1 2; do
        CID="$(new_id)"; make_bundle "$CID" sh -c 'cat /home/agent/.bashrc; { echo more >> /etc/app/settings.conf && echo wrote; } 2>/dev/null; true'
        cfg --arg p "$T/proj" '.mounts += [
            {destination: "/home/agent/.bashrc", type: "bind", source: ($p + "/.bashrc"), options: ["rbind"]},
            {destination: "/etc/app/settings.conf", type: "bind", source: ($p + "/settings.conf"), options: ["rbind"]}]'
        [ "$t" == plain ] || cfg --arg t "$t" '.annotations = {"io.agentcage.tier": $t}'
        OUT="$(trt --bind-roots "$T/proj" run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
        assert_eq "$RC" 0 "tier $t with single-file binds: $OUT"
        assert_contains "$OUT" "alias ll=ls" "tier $t reads the bound file"
        # tier 0 binds are read-only; at tiers 1-2 a file bind is not
        # idmapped (only folders are, docs/tiers.md): root's file stays root's
        case "$t" in
            plain) assert_contains "$OUT" wrote "plain writes its file bind" ;;
            *) assert_not_contains "$OUT" wrote "tier $t cannot write a file of the host's root" ;;
        esac
    done
    return 0
}

# pod_ctr ROLE TIER NETNS-PATH|- [EXTRA-ANNOTATIONS-JSON] -- ARGS...: creates
# and starts a container as a CRI engine writes it (its role in
# io.kubernetes.cri.container-type, the pod's network namespace by path);
# its id in $CID, create's output in $OUT and status in $RC
pod_ctr() {
    local role="$1" tier="$2" net="$3" extra='{}'
    shift 3
    [ "$1" != -- ] && { extra="$1"; shift; }
    shift
    CID="$(new_id)"; make_bundle "$CID" "$@"
    cfg --arg role "$role" --argjson extra "$extra" \
        '.annotations = ({"io.kubernetes.cri.container-type": $role, "io.kubernetes.cri.sandbox-namespace": "default",
                          "io.kubernetes.cri.sandbox-name": "pod1", "io.kubernetes.cri.container-name": "c"} + $extra)'
    [ "$tier" == plain ] || cfg --arg t "$tier" '.annotations["io.agentcage.tier"] = $t'
    [ "$net" == - ] || cfg --arg p "$net" '.linux.namespaces = [.linux.namespaces[] | if .type == "network" then .path = $p else . end]'
    trt create --bundle "$BUNDLE" "$CID" > "$T/$CID.out" 2>&1 < /dev/null; RC=$?
    OUT="$(cat "$T/$CID.out")"
    [ $RC == 0 ] && { track_pid "$(trt state "$CID" | jq -r .pid)"; trt start "$CID"; }
    return 0
}
netns_of() { readlink "/proc/$(trt state "$1" | jq -r .pid)/ns/net"; }

# one pod, one cage: the sandbox replaces the engine's (CNI) namespace by an
# empty one of its own; the pod's containers join it, and only it: checked
# by inode against what agentcage recorded for a live tiered sandbox with
# the same network
test_pod_cage_joined_by_inode_only() {
    bg unshare --net sleep 300; local holder="$BG_PID" cni="/proc/$BG_PID/ns/net"
    sleep 0.2
    pod_ctr sandbox 1 "$cni" '{"io.agentcage.timeout": "1s"}' -- sleep 300; local sb="$CID"
    assert_eq "$RC" 0 "the tiered sandbox runs: $OUT"
    [ "$(netns_of "$sb")" == "$(readlink "$cni")" ] && fail "the sandbox kept the engine's namespace"
    pod_ctr container 1 "/proc/$(trt state "$sb" | jq -r .pid)/ns/net" -- sleep 300; local m1="$CID"
    assert_eq "$RC" 0 "a tier-1 container joins its sandbox's cage: $OUT"
    assert_eq "$(netns_of "$m1")" "$(netns_of "$sb")" "one pod, one network namespace"
    OUT="$(trt exec "$m1" sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "' 2>&1)"
    assert_eq "$OUT" lo "only lo in the pod's cage"
    # the sandbox keeps no timeout (its containers do)
    sleep 1.5
    assert_eq "$(cstatus "$sb")" running "the sandbox outlives the tier's timeout"
    # any other namespace is refused, however it is named
    pod_ctr container 1 "$cni" -- true
    assert_refused "not the cage of a tiered pod sandbox"
    pod_ctr container 2 "/proc/$(trt state "$sb" | jq -r .pid)/ns/net" -- true
    assert_refused "has another network"
    # a plain container that calls itself a sandbox is no cage
    pod_ctr sandbox plain - -- sleep 300; local plain_sb="$CID"
    pod_ctr container 1 "/proc/$(trt state "$plain_sb" | jq -r .pid)/ns/net" -- true
    assert_refused "not the cage of a tiered pod sandbox"
    # nor is a tiered container that is not a sandbox
    pod_ctr "" 1 - -- sleep 300; local other="$CID"
    pod_ctr container 1 "/proc/$(trt state "$other" | jq -r .pid)/ns/net" -- true
    assert_refused "not the cage of a tiered pod sandbox"
    local id
    for id in "$m1" "$sb" "$plain_sb" "$other"; do trt delete --force "$id" > /dev/null 2>&1; done
    kill "$holder"; wait "$holder" 2> /dev/null
    return 0
}

# podman_ctr INFRA-ID TIER NETNS-PATH -- ARGS...: a container as Podman
# writes a pod's member (io.kubernetes.cri-o.ContainerType container, its
# infra's id in io.kubernetes.cri-o.SandboxID, the infra's namespaces by
# path); its id in $CID, create's output in $OUT and status in $RC
podman_ctr() {
    local infra="$1" tier="$2" net="$3"
    shift 4
    CID="$(new_id)"; make_bundle "$CID" "$@"
    cfg --arg infra "$infra" '.annotations = {"io.container.manager": "libpod",
        "io.kubernetes.cri-o.ContainerType": "container", "io.kubernetes.cri-o.SandboxID": $infra}'
    [ "$tier" == plain ] || cfg --arg t "$tier" '.annotations["io.agentcage.tier"] = $t'
    cfg --arg p "$net" '.linux.namespaces = [.linux.namespaces[] | if .type == "network" then .path = $p else . end]'
    trt create --bundle "$BUNDLE" "$CID" > "$T/$CID.out" 2>&1 < /dev/null; RC=$?
    OUT="$(cat "$T/$CID.out")"
    [ $RC == 0 ] && { track_pid "$(trt state "$CID" | jq -r .pid)"; trt start "$CID"; }
    return 0
}
ifaces_of() { trt exec "$1" sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\n" " "' 2>&1 | sed 's/ $//'; }

# a Podman pod: the infra is a plain container in the engine's network
# (here a namespace with a dummy interface, as CNI's eth0); a plain member
# joins that network, a tiered member gets the pod's cage (only lo), shared
# with the pod's other tiered members, made once, removed with the infra
test_podman_pod_members_share_a_cage() {
    bg unshare --net sh -c 'ip link add eth0 type veth peer name veth1 && exec sleep 300'
    local holder="$BG_PID" cni="/proc/$BG_PID/ns/net"
    sleep 0.3
    CID="$(new_id)"; make_bundle "$CID" sleep 300
    cfg --arg p "$cni" '.annotations = {"io.container.manager": "libpod"} |
        .linux.namespaces = [.linux.namespaces[] | if .type == "network" then .path = $p else . end]'
    trt create --bundle "$BUNDLE" "$CID" > "$T/infra.out" 2>&1 < /dev/null || fail "infra: $(cat "$T/infra.out")"
    trt start "$CID"; local infra="$CID" ipid; ipid="$(trt state "$CID" | jq -r .pid)"; track_pid "$ipid"
    # without a tier the member is in the engine's network
    podman_ctr "$infra" plain "/proc/$ipid/ns/net" -- sleep 300; local plain="$CID"
    assert_eq "$RC" 0 "a plain member runs: $OUT"
    assert_eq "$(ifaces_of "$plain")" "eth0 lo veth1" "a plain member has the engine's interface"
    podman_ctr "$infra" 1 "/proc/$ipid/ns/net" -- sleep 300; local m1="$CID"
    assert_eq "$RC" 0 "a tier-1 member runs: $OUT"
    assert_eq "$(ifaces_of "$m1")" lo "a tier-1 member has only lo"
    podman_ctr "$infra" 1 "/proc/$ipid/ns/net" -- sleep 300; local m2="$CID"
    assert_eq "$RC" 0 "a second tier-1 member runs: $OUT"
    assert_eq "$(netns_of "$m2")" "$(netns_of "$m1")" "the pod's tiered members share one cage"
    podman_ctr "$infra" 0 "/proc/$ipid/ns/net" -- sleep 300; local m0="$CID"
    assert_eq "$RC" 0 "a tier-0 member runs: $OUT"
    assert_eq "$(netns_of "$m0")" "$(netns_of "$m1")" "tier 0 shares the pod's cage too"
    [ "$(netns_of "$m1")" == "$(readlink "$cni")" ] && fail "the cage is the engine's namespace"
    # localhost between them: a listener in one, a connection from the other
    trt exec -d "$m1" nc -l -p 8080 -e echo inside > /dev/null 2>&1 || trt exec -d "$m1" sh -c 'echo inside | nc -l -p 8080' > /dev/null 2>&1
    sleep 0.3
    assert_eq "$(trt exec "$m2" sh -c 'nc 127.0.0.1 8080 < /dev/null' 2>&1)" inside "sidecars talk on localhost"
    # refused: tier 2 (one proxy for the pod), a SandboxID that is not the
    # namespace's owner, no SandboxID at all
    podman_ctr "$infra" 2 "/proc/$ipid/ns/net" -- true
    assert_refused "tiers 0-1 only"
    podman_ctr "$m1" 1 "/proc/$ipid/ns/net" -- true
    assert_refused "not the cage of a tiered pod sandbox"
    podman_ctr "" 1 "/proc/$ipid/ns/net" -- true
    assert_refused "not the cage of a tiered pod sandbox"
    grep -q "/$infra/pod-cage.net" /proc/self/mountinfo || fail "the cage is pinned in the infra's state"
    local id
    for id in "$m1" "$m2" "$m0" "$plain" "$infra"; do trt delete --force "$id" > /dev/null 2>&1 || fail "delete $id"; done
    grep -q "pod-cage.net" /proc/self/mountinfo && fail "the cage's pin outlived the infra"
    kill "$holder"; wait "$holder" 2> /dev/null
    return 0
}

# Docker's published ports (hostconfig.json beside the /etc/hostname it
# binds, as Docker lays out a container's folder): refused at a tier with
# one line; none published, or a plain container: runs
test_docker_published_ports_refused_at_a_tier() {
    local d="$T/docker/containers/abc"
    mkdir -p "$d"
    echo ctr > "$d/hostname"; echo '{}' > "$d/config.v2.json"
    echo '{"PortBindings":{"80/tcp":[{"HostIp":"","HostPort":"8080"}]},"PublishAllPorts":false}' > "$d/hostconfig.json"
    ATTACK_CFG=(".mounts += [{destination: \"/etc/hostname\", type: \"bind\", source: \"$d/hostname\", options: [\"rbind\", \"ro\"]}]")
    attack plain /bin/true
    assert_eq "$RC" 0 "plain with published ports: $OUT"
    local t
    for t in 0 1 2; do
        CID="$(new_id)"; make_bundle "$CID" /bin/true
        cfg "${ATTACK_CFG[0]}"
        run_tier "$t"
        assert_refused "tier $t forbids published ports (docker run -p 8080:80/tcp)"
    done
    echo '{"PortBindings":{},"PublishAllPorts":true}' > "$d/hostconfig.json"
    CID="$(new_id)"; make_bundle "$CID" /bin/true; cfg "${ATTACK_CFG[0]}"
    run_tier 1
    assert_refused "forbids published ports (docker run -P)"
    echo '{"PortBindings":{},"PublishAllPorts":false}' > "$d/hostconfig.json"
    CID="$(new_id)"; make_bundle "$CID" /bin/true; cfg "${ATTACK_CFG[0]}"
    run_tier 1
    assert_eq "$RC" 0 "tier 1 without published ports: $OUT"
    return 0
}
# run_tier TIER: `run` the current bundle at TIER, bind roots at $T
run_tier() {
    cfg --arg t "$1" '.annotations = {"io.agentcage.tier": $t}'
    OUT="$(trt --bind-roots "$T" run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
}
