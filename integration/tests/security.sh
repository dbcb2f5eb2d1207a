# Security: seccomp, capabilities, no_new_privs.

SECCOMP_DENY_MKDIR='.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO"}]}'

test_seccomp_deny_mkdir_eperm() {
    QUICK_CFG=("$SECCOMP_DENY_MKDIR")
    quick /bin/sh -c 'probe syscall mkdir /tmp/x; probe write /tmp/y; probe seccomp'
    assert_eq "$RC" 0 "exit: $OUT"
    assert_eq "$OUT" "EPERM
ok
Seccomp=2" "mkdir denied with EPERM, other syscalls allowed, filter mode"
}

test_seccomp_errno_ret() {
    QUICK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW",
        syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 13}]}')
    quick /bin/probe syscall mkdir /tmp/x
    assert_eq "$OUT" EACCES "errnoRet 13"
}

test_seccomp_without_profile_mkdir_works() {
    quick /bin/sh -c 'probe syscall mkdir /tmp/x; probe seccomp'
    assert_eq "$OUT" "ok
Seccomp=0"
}

test_seccomp_default_errno_allowlist() {
    # default action ERRNO; a broad allow list that leaves out mkdir/mkdirat
    local allow='["accept","accept4","access","arch_prctl","bind","brk","capget","capset","chdir","chmod","chown",
        "clock_getres","clock_gettime","clock_nanosleep","close","close_range","connect","dup","dup2","dup3",
        "epoll_create1","epoll_ctl","epoll_pwait","epoll_wait","eventfd2","execve","execveat","exit","exit_group",
        "faccessat","faccessat2","fchdir","fchmod","fchmodat","fchown","fchownat","fcntl","fstat","fstatfs","futex",
        "getcwd","getdents64","getegid","geteuid","getgid","getgroups","getpgrp","getpid","getppid","getrandom",
        "getrlimit","gettid","getuid","ioctl","kill","lseek","lstat","madvise","mmap","mprotect","munmap","nanosleep",
        "newfstatat","open","openat","openat2","pipe","pipe2","poll","ppoll","prctl","pread64","prlimit64","read",
        "readlink","readlinkat","rseq","rt_sigaction","rt_sigprocmask","rt_sigreturn","sched_getaffinity",
        "sched_yield","select","set_robust_list","set_tid_address","setgid","setgroups","setresgid","setresuid",
        "setsid","setuid","sigaltstack","stat","statfs","statx","sysinfo","tgkill","umask","uname","wait4","write",
        "writev","unshare","setns","keyctl","seccomp","pidfd_open","pidfd_send_signal","socket","sendmsg","recvmsg",
        "getsockopt","setsockopt","exit","mount","umount2","pivot_root","sethostname","setdomainname","personality"]'
    QUICK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ERRNO", defaultErrnoRet: 1, syscalls: [{names: '"$allow"', action: "SCMP_ACT_ALLOW"}]}')
    quick /bin/probe syscall mkdir /tmp/x
    assert_eq "$OUT" EPERM "mkdir under a default-deny profile"
}

test_seccomp_kill() {
    QUICK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_KILL"}]}')
    quick /bin/probe syscall mkdir /tmp/x
    assert_ne "$RC" 0 "exit status of a process killed by seccomp"
    assert_not_contains "$OUT" ok
}

test_seccomp_arg_filter() {
    # personality(0xffffffff) (a query) allowed, personality(8) denied
    QUICK_CFG=('.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW",
        syscalls: [{names: ["personality"], action: "SCMP_ACT_ERRNO", args: [{index: 0, value: 8, op: "SCMP_CMP_EQ"}]}]}')
    quick /bin/sh -c 'probe syscall personality 0xffffffff; probe syscall personality 8'
    assert_eq "$OUT" "ok
EPERM" "arg-filtered personality"
}

test_capabilities_match_config() {
    quick /bin/probe caps
    # CAP_KILL(5) CAP_NET_BIND_SERVICE(10) CAP_AUDIT_WRITE(29)
    assert_contains "$OUT" "CapInh=0000000000000000"
    assert_contains "$OUT" "CapPrm=0000000020000420"
    assert_contains "$OUT" "CapEff=0000000020000420"
    assert_contains "$OUT" "CapBnd=0000000020000420"
    # ambient needs the cap in inheritable too, which this config lacks
}

test_capabilities_distinct_sets() {
    QUICK_CFG=('.process.capabilities = {bounding: ["CAP_KILL", "CAP_NET_RAW", "CAP_CHOWN"], effective: ["CAP_NET_RAW"],
        permitted: ["CAP_NET_RAW", "CAP_CHOWN"], inheritable: ["CAP_CHOWN"], ambient: []}')
    quick /bin/probe caps
    # CAP_CHOWN(0) CAP_KILL(5) CAP_NET_RAW(13)
    assert_contains "$OUT" "CapInh=0000000000000001"
    assert_contains "$OUT" "CapPrm=0000000000002001"
    # uid 0 gets effective = permitted at execve (the kernel's root rules)
    assert_contains "$OUT" "CapEff=0000000000002001"
    assert_contains "$OUT" "CapBnd=0000000000002021"
    assert_contains "$OUT" "CapAmb=0000000000000000"
}

test_no_capabilities_section() {
    QUICK_CFG=('del(.process.capabilities)')
    quick /bin/probe caps
    assert_contains "$OUT" "CapEff=0000000000000000"
    assert_contains "$OUT" "CapBnd=0000000000000000"
}

test_raw_socket_needs_cap_net_raw() {
    quick /bin/probe socket inet raw
    assert_eq "$OUT" EPERM "raw socket without CAP_NET_RAW"
    QUICK_CFG=('.process.capabilities.effective += ["CAP_NET_RAW"] | .process.capabilities.bounding += ["CAP_NET_RAW"] | .process.capabilities.permitted += ["CAP_NET_RAW"]')
    quick /bin/probe socket inet raw
    assert_eq "$OUT" ok "raw socket with CAP_NET_RAW"
}

test_mount_denied_without_cap_sys_admin() {
    quick /bin/probe syscall mount /tmp
    assert_eq "$OUT" EPERM "mount without CAP_SYS_ADMIN"
}

test_chown_needs_cap_chown() {
    quick /bin/probe syscall chown /tmp
    assert_eq "$OUT" EPERM "chown without CAP_CHOWN"
}

XFAIL_RUNC+=" test_unknown_capability_refused"  # runc 1.1 only warns
test_unknown_capability_refused() {
    local id; id="$(new_id)"
    make_bundle "$id" /bin/true
    cfg '.process.capabilities.bounding += ["CAP_BOGUS_THING"]'
    rt create --bundle "$BUNDLE" "$id" >/dev/null 2>"$T/err" </dev/null; local rc=$?
    OUT="$(cat "$T/err")"
    if [ $rc == 0 ]; then rt delete --force "$id" >/dev/null 2>&1; fail "unknown capability accepted"; fi
    assert_contains "$OUT" CAP_BOGUS_THING "error names the capability"
    [ -z "$(ls -A "$ROOT")" ] || fail "state left after refused create"
}

test_no_new_privs_set() {
    quick /bin/probe caps
    assert_contains "$OUT" "NoNewPrivs=1"
}

test_no_new_privs_unset() {
    QUICK_CFG=('.process.noNewPrivileges = false')
    quick /bin/probe caps
    assert_contains "$OUT" "NoNewPrivs=0"
}

test_non_root_user_has_no_caps() {
    QUICK_CFG=('.process.user = {uid: 1000, gid: 1000} | .process.capabilities.ambient = []')
    quick /bin/probe caps
    assert_contains "$OUT" "CapEff=0000000000000000"
    assert_contains "$OUT" "CapPrm=0000000000000000"
}

test_non_root_user_ambient_caps() {
    QUICK_CFG=('.process.user = {uid: 1000, gid: 1000} | .process.capabilities.inheritable = .process.capabilities.ambient')
    quick /bin/probe caps
    assert_contains "$OUT" "CapEff=0000000020000420"
    assert_contains "$OUT" "CapAmb=0000000020000420"
}

test_seccomp_notify_listener_gets_fd_and_state() {
    # A listener on linux.seccomp.listenerPath receives the notify fd
    # (SCM_RIGHTS) with the container process state; it closes the fd at
    # once, so the notified mkdir fails with ENOSYS.
    local sock="$T/listener.sock"
    python3 - "$sock" "$T/got" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(1)
s.settimeout(20)
c, _ = s.accept()
msg, fds, _, _ = socket.recv_fds(c, 65536, 4)
open(sys.argv[2], "w").write(msg.decode() + "\nfds=%d\n" % len(fds))
for f in fds: os.close(f)
PY
    track_pid $!
    for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
    QUICK_CFG=(".linux.seccomp = {defaultAction: \"SCMP_ACT_ALLOW\", listenerPath: \"$sock\", listenerMetadata: \"m1\",
        syscalls: [{names: [\"mkdir\", \"mkdirat\"], action: \"SCMP_ACT_NOTIFY\"}]}")
    quick /bin/probe syscall mkdir /tmp/x
    assert_eq "$OUT" ENOSYS "notified mkdir once the listener closed the fd"
    assert_contains "$(cat "$T/got")" '"fds":["seccompFd"]' "container process state"
    assert_contains "$(cat "$T/got")" '"metadata":"m1"'
    assert_contains "$(cat "$T/got")" 'fds=1' "one fd attached"
}
