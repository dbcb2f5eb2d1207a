# The process section: user, groups, umask, env, cwd, rlimits, oom score.

test_user_uid_gid() {
    QUICK_CFG=('.process.user = {uid: 1000, gid: 1000}')
    quick /bin/probe ids
    assert_contains "$OUT" "uid=1000 gid=1000 euid=1000 egid=1000 "
}

test_user_without_passwd_entry() {
    QUICK_CFG=('.process.user = {uid: 4321, gid: 4322}')
    quick /bin/probe ids
    assert_contains "$OUT" "uid=4321 gid=4322 euid=4321 egid=4322 "
}

test_additional_gids() {
    QUICK_CFG=('.process.user = {uid: 1000, gid: 1000, additionalGids: [10, 20]}')
    quick /bin/probe ids
    local groups; groups="$(echo "$OUT" | sed -E 's/.*groups=([0-9,]*).*/\1/' | tr ',' '\n' | sort -n | tr '\n' ' ')"
    assert_contains " $groups" " 10 " "supplementary groups"
    assert_contains " $groups" " 20 " "supplementary groups"
}

test_no_supplementary_groups_leak() {
    quick /bin/probe ids
    local groups; groups="$(echo "$OUT" | sed -E 's/.*groups=([0-9,]*).*/\1/')"
    case "$groups" in "" | 0) ;; *) fail "unexpected supplementary groups: $groups" ;; esac
}

test_umask_from_config() {
    QUICK_CFG=('.process.user.umask = 63')
    quick /bin/probe ids
    assert_contains "$OUT" "umask=0077"
}

test_umask_default() {
    quick /bin/probe ids
    assert_contains "$OUT" "umask=0022"
}

test_env() {
    QUICK_CFG=('.process.env += ["FOO=bar baz", "EMPTY="]')
    quick /bin/probe env
    assert_contains "$OUT" "FOO=bar baz"
    assert_contains "$OUT" "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "$OUT" | grep -qx "EMPTY=" || fail "EMPTY= missing: $OUT"
}

test_env_not_inherited_from_runtime() {
    export AGENTCAGE_IT_SECRET=leak
    quick /bin/probe env
    assert_not_contains "$OUT" AGENTCAGE_IT_SECRET
}

test_cwd() {
    QUICK_CFG=('.process.cwd = "/mnt/a"')
    quick /bin/pwd
    assert_eq "$OUT" /mnt/a "cwd"
}

test_args_preserved() {
    quick /bin/sh -c 'for a in "$@"; do echo "[$a]"; done' sh "a b" "" 'c"d'
    assert_eq "$OUT" '[a b]
[]
[c"d]' "argv"
}

test_rlimit_nofile() {
    QUICK_CFG=('.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 100, hard: 200}]')
    quick /bin/probe rlimit NOFILE
    assert_eq "$OUT" "soft=100 hard=200" "RLIMIT_NOFILE"
}

test_rlimit_nproc_and_core() {
    QUICK_CFG=('.process.rlimits = [{type: "RLIMIT_NPROC", soft: 77, hard: 88}, {type: "RLIMIT_CORE", soft: 0, hard: 0}]')
    quick /bin/sh -c 'probe rlimit NPROC; probe rlimit CORE'
    assert_eq "$OUT" "soft=77 hard=88
soft=0 hard=0" "rlimits"
}

test_oom_score_adj() {
    QUICK_CFG=('.process.oomScoreAdj = 123')
    quick /bin/cat /proc/self/oom_score_adj
    assert_eq "$OUT" 123 "oom_score_adj"
}

test_sysctl() {
    QUICK_CFG=('.linux.sysctl = {"net.ipv4.ip_forward": "1", "kernel.msgmax": "4096"}')
    quick /bin/sh -c 'cat /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/msgmax'
    assert_eq "$OUT" "1
4096" "sysctls"
}

test_terminal_false_no_tty() {
    quick /bin/sh -c 'tty; true'
    assert_contains "$OUT" "not a tty"
}

test_home_from_passwd_when_missing() {
    # Docker leaves HOME out of config.json; the runtime takes it from the
    # container's /etc/passwd (as runc does), "/" for an unknown uid.
    QUICK_CFG=('.process.env = ["PATH=/bin"]' '.process.user.uid = 1000')
    quick /bin/sh -c 'echo "$HOME"'
    assert_eq "$OUT" /home/agent "HOME of uid 1000"
    QUICK_CFG=('.process.env = ["PATH=/bin"]' '.process.user.uid = 4242')
    quick /bin/sh -c 'echo "$HOME"'
    assert_eq "$OUT" / "HOME of a uid without a passwd entry"
    QUICK_CFG=('.process.env = ["PATH=/bin", "HOME=/x"]')
    quick /bin/sh -c 'echo "$HOME"'
    assert_eq "$OUT" /x "HOME given in the config is kept"
}

# SELinux labels where SELinux is off (this host: no selinuxfs): ignored,
# as crun ignores them, by create (process and mount label) and by exec
# --process-label alike; the workload runs. (runc 1.1 refuses the create:
# "selinux label is specified in config, but selinux is disabled".)
test_selinux_labels_ignored_where_selinux_is_off() {
    is_runc && return 0
    if [ -d /sys/fs/selinux ] && [ -e /etc/selinux/config ]; then
        return 0 # SELinux on: the labels would be applied
    fi
    local id; id="$(new_id)"
    make_bundle "$id" /bin/sleep 1000
    cfg '.process.selinuxLabel = "system_u:system_r:container_t:s0:c1,c2"'
    cfg '.linux.mountLabel = "system_u:object_r:container_file_t:s0:c1,c2"'
    rt_create "$id"
    ok rt start "$id"
    run_in "$id" /bin/probe ids
    assert_eq "$RC" 0 "exec into the labelled container"
    OUT="$(rt exec --process-label "system_u:system_r:container_t:s0:c3,c4" "$id" /bin/echo labelled 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "exec --process-label"
    assert_eq "$OUT" "labelled"
    ok rt delete --force "$id"
}
