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

# exec gets what the init got: secret-looking variables scrubbed (an
# engine's exec process carries the original environment), and at tier 2
# the proxy variables, replacing the caller's
test_exec_gets_the_tiers_environment() {
    local t
    for t in plain 1 2; do
        CID="$(new_id)"; make_bundle "$CID" sleep 300
        cfg '.process.env += ["GITHUB_TOKEN=ghp_x", "KEEP_ME=1"]'
        [ "$t" == plain ] || cfg --arg t "$t" '.annotations = {"io.agentcage.tier": $t}'
        trt create --bundle "$BUNDLE" "$CID" > "$T/create.out" 2>&1 || fail "tier $t create: $(cat "$T/create.out")"
        trt start "$CID" || fail "tier $t start"
        OUT="$(trt exec -e AWS_SECRET_ACCESS_KEY=s -e HTTP_PROXY=http://evil:1 "$CID" \
            sh -c 'echo "${GITHUB_TOKEN:-none} ${AWS_SECRET_ACCESS_KEY:-none} ${KEEP_ME:-none} ${HTTP_PROXY:-none} ${https_proxy:-none}"' 2>&1)"
        case "$t" in
            plain) assert_eq "$OUT" "ghp_x s 1 http://evil:1 none" "plain exec keeps its environment" ;;
            1) assert_eq "$OUT" "none none 1 http://evil:1 none" "tier 1 exec: secrets scrubbed" ;;
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
        if [ "$t" == 0 ]; then
            assert_not_contains "$OUT" wrote "tier 0 binds are read-only"
        else
            assert_contains "$OUT" wrote "tier $t writes its writable file bind"
        fi
    done
    return 0
}
