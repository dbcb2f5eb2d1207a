# Installing agentcage as a system runtime: --version and features name the
# build and its libraries, `check` reports the host, the helpers are found
# (--helpers-dir, the config file, beside the binary, the compiled-in
# directory; --hooks-dir for the hook program alone, as before), `make install` lays out bin/ and
# libexec/agentcage/, the bash completion completes, an operator's config a
# rootless runtime cannot read is skipped, and `install [--check] ENGINE`
# registers the binary with a real engine's own configuration.
# The Debian package in a fresh root is integration/package/run.sh.
XFAIL_RUNC=""

# the version of a Debian package without epoch and revision: 1:2.66-4 -> 2.66
deb_version() { dpkg-query -W -f='${Version}' "$1" | sed -E 's/^[0-9]+://; s/-[^-]*$//; s/\+.*$//'; }

# tier1_bundle: $BUNDLE of a fresh id ($CID) at tier 1 showing its cage
tier1_bundle() {
    CID="$(new_id)"
    make_bundle "$CID" sh -c 'touch /x 2>/dev/null && echo root-rw || echo root-ro; grep ^Seccomp: /proc/self/status | tr -s "\t" " "'
    cfg '.annotations = {"io.agentcage.tier": "1"}'
}

test_version_names_build_and_libraries() {
    is_runc && return 0
    ok "$RUNTIME" --version
    local v="$OUT"
    assert_match "$v" "^agentcage version [0-9]+\.[0-9]+\.[0-9]+" "version line"
    assert_match "$v" $'\n''commit: [0-9a-f]{7,}' "commit line"
    assert_contains "$v" "yajl: $(deb_version libyajl2)" "yajl as loaded"
    assert_contains "$v" "libseccomp: $(deb_version libseccomp2)" "libseccomp as loaded"
    assert_contains "$v" "libcap: $(deb_version libcap2)" "libcap"
    assert_contains "$v" "glibc: $(deb_version libc6)" "glibc (linked in)"
    ok "$RUNTIME" features
    local f="$OUT"
    assert_eq "$(echo "$f" | jq -r '.annotations["io.agentcage.commit"]')" "$(echo "$v" | sed -n 's/^commit: //p')" "features commit"
    assert_eq "$(echo "$f" | jq -r '.annotations["io.agentcage.version"]')" "$(echo "$v" | sed -n 's/^agentcage version //p')" "features version"
    assert_eq "$(echo "$f" | jq -r '.annotations["io.agentcage.yajl.version"]')" "$(deb_version libyajl2)" "features yajl"
    assert_eq "$(echo "$f" | jq -r '.annotations["io.github.seccomp.libseccomp.version"]')" "$(deb_version libseccomp2)" "features libseccomp"
    assert_eq "$(echo "$f" | jq -r '.annotations["io.agentcage.libcap.version"]')" "$(deb_version libcap2)" "features libcap"
    assert_eq "$(echo "$f" | jq -r '.annotations["io.agentcage.glibc.version"]')" "$(deb_version libc6)" "features glibc"
}

test_check_reports_this_host() {
    is_runc && return 0
    assert_exit 0 "$RUNTIME" check --json
    local j="$OUT" want_mode want_abi
    # the cgroup layout, as /proc/self/mountinfo has it
    if grep -q ' - cgroup2 ' /proc/self/mountinfo && ! grep -q ' - cgroup ' /proc/self/mountinfo; then want_mode=v2
    elif grep -q ' - cgroup2 ' /proc/self/mountinfo; then want_mode=hybrid; else want_mode=v1; fi
    assert_eq "$(echo "$j" | jq -r .cgroupMode)" "$want_mode" "cgroup layout"
    # the Landlock ABI, asked of the kernel directly (landlock_create_ruleset VERSION)
    want_abi="$("$PYTHON3" -c 'import ctypes; print(max(0, ctypes.CDLL(None).syscall(444, None, 0, 1)))')"
    assert_eq "$(echo "$j" | jq -r .landlockABI)" "$want_abi" "Landlock ABI"
    local userns=false; unshare --user true 2>/dev/null && userns=true
    assert_eq "$(echo "$j" | jq -r '.checks["user namespaces"].ok')" "$userns" "user namespaces"
    assert_eq "$(echo "$j" | jq -r '.checks["seccomp filters"].ok')" true "seccomp filters"
    assert_eq "$(echo "$j" | jq -r '.checks["seccomp notify"].ok')" true "seccomp notify (kernel >= 5.0)"
    assert_eq "$(echo "$j" | jq -r '.checks["idmapped mounts"] | has("ok")')" true "idmapped mounts reported"
    assert_eq "$(echo "$j" | jq -r '[.tiers[] | select(.enforceable)] | length')" 4 "every tier enforceable here"
    assert_exit 0 "$RUNTIME" check
    assert_match "$OUT" "^cgroups: yes - $want_mode;" "text: cgroups"
    assert_contains "$OUT" "landlock: yes - ABI $want_abi" "text: landlock"
    assert_contains "$OUT" "tier 3 (irreversible): enforceable" "text: tier 3"
    # Landlock's refusals are counted only while the kernel's audit is on
    # (a host-wide switch this check reads and leaves alone)
    local audit; audit="$("$PYTHON3" "$IT_DIR/helpers/kernel_audit.py" get)"
    if [ "$want_abi" -ge 7 ] && [ "$audit" != 0 ]; then
        assert_contains "$OUT" "landlock denials: yes - counted: the kernel's audit is on" "text: landlock denials"
    else
        assert_contains "$OUT" "landlock denials: no - not counted: " "text: landlock denials"
    fi
    # no tier needs it: a report, not something missing
    assert_contains "$OUT" "missing: nothing" "text: missing"
    assert_eq "$("$PYTHON3" "$IT_DIR/helpers/kernel_audit.py" get)" "$audit" "the kernel's audit left as it was"
    # it changed nothing: no mount left, no namespace
    assert_fails "$RUNTIME" check --frobnicate
    assert_contains "$OUT" "check: unknown flag \`--frobnicate\`"
}

test_check_names_what_is_missing() {
    is_runc && return 0
    mkdir -p "$T/empty" "$T/open"
    chmod 777 "$T/open"
    assert_exit 1 "$RUNTIME" --helpers-dir "$T/empty" --approvals-dir "$T/open" check
    assert_contains "$OUT" "tier 0 (read): not fully enforceable here: no watchdog" "tier 0"
    assert_contains "$OUT" "tier 2 (network): not fully enforceable here: no watchdog, egress proxy" "tier 2"
    assert_contains "$OUT" "tier 3 (irreversible): not fully enforceable here: no watchdog, egress proxy, approvals" "tier 3"
    assert_contains "$OUT" "watchdog: $T/empty/agentcage-watchdog: No such file or directory" "missing names the path"
    assert_contains "$OUT" "approvals: $T/open: not a directory of uid 0 that only it may write" "untrusted approvals"
    assert_exit 1 "$RUNTIME" --helpers-dir "$T/empty" check --json
    assert_eq "$(echo "$OUT" | jq -c '.tiers[1].missing')" '["watchdog"]' "json: tier 1 missing"
}

test_helpers_found_by_flag_config_and_fallback() {
    is_runc && return 0
    # the binary alone, away from its helpers: it falls back to the compiled-in directory
    mkdir -p "$T/bin"
    cp "$RUNTIME" "$T/bin/agentcage"
    local compiled helpers
    compiled="$("$T/bin/agentcage" --help | sed -n 's/.*binary when they are there, else \(\/.*\))$/\1/p')"
    [ -n "$compiled" ] || fail "--help does not name the compiled-in helpers dir"
    "$T/bin/agentcage" check --json > "$T/check.json"
    assert_eq "$(jq -r .helpersDir "$T/check.json")" "$compiled" "the compiled-in dir when none is beside"
    helpers="$(dirname "$RUNTIME")"
    # --hooks-dir keeps its old meaning: the hook program alone, not the watchdog
    for how in "" "--hooks-dir $helpers"; do
        [ -x "$compiled/agentcage-watchdog" ] && break
        tier1_bundle
        # shellcheck disable=SC2086
        OUT="$("$T/bin/agentcage" --root "$ROOT" $how run -b "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
        assert_eq "$RC" 1 "a tier without its watchdog fails (${how:-no flag}: $OUT)"
        assert_contains "$OUT" "$compiled/agentcage-watchdog" "the error names where it looked"
        [ -e "$ROOT/$CID" ] && fail "state left after the failed start"
    done
    tier1_bundle
    OUT="$("$T/bin/agentcage" --root "$ROOT" --helpers-dir "$helpers" run -b "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "tier 1 with --helpers-dir ($OUT)"
    assert_contains "$OUT" "Seccomp: 2" "--helpers-dir: caged"
    echo "helpers-dir = $helpers" > "$T/agentcage.conf"
    tier1_bundle
    OUT="$(AGENTCAGE_CONF="$T/agentcage.conf" "$T/bin/agentcage" --root "$ROOT" run -b "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "tier 1 with helpers-dir in the config file ($OUT)"
    assert_contains "$OUT" "root-ro" "config file: caged"
    # the tier's hook: --hooks-dir over --helpers-dir (an older config naming a folder with the proxy alone)
    mkdir -p "$T/hooks"
    make_bundle "$(new_id)"
    cfg '.annotations = {"io.agentcage.tier": "2"}'
    ok "$T/bin/agentcage" --helpers-dir "$helpers" policy show --bundle "$BUNDLE"
    assert_contains "$OUT" "\"$helpers/agentcage-egress\"" "the proxy from --helpers-dir"
    ok "$T/bin/agentcage" --helpers-dir "$helpers" --hooks-dir "$T/hooks" policy show --bundle "$BUNDLE"
    assert_contains "$OUT" "\"$T/hooks/agentcage-egress\"" "the proxy from --hooks-dir"
    printf 'hooks-dir = %s\nhelpers-dir = %s\n' "$T/hooks" "$helpers" > "$T/agentcage.conf"
    OUT="$(AGENTCAGE_CONF="$T/agentcage.conf" "$T/bin/agentcage" --root "$ROOT" check 2>&1)"
    assert_contains "$OUT" "watchdog: yes - $helpers/agentcage-watchdog" "check: the watchdog from helpers-dir"
    assert_contains "$OUT" "egress proxy: no - $T/hooks/agentcage-egress" "check: the proxy from hooks-dir"
    echo "helpers-dir = relative/dir" > "$T/agentcage.conf"
    assert_fails env AGENTCAGE_CONF="$T/agentcage.conf" "$T/bin/agentcage" list
    assert_contains "$OUT" "agentcage.conf:1: --helpers-dir: expected an absolute path, got \`relative/dir\`"
}

test_make_install_layout() {
    is_runc && return 0
    [ -f "$REPO_DIR/Makefile" ] || return 0
    ok make --no-print-directory -C "$REPO_DIR" install-files DESTDIR="$T/inst" PREFIX=/usr/local
    local p="$T/inst/usr/local" f
    assert_eq "$(ls "$p/bin")" agentcage "bin/ holds agentcage alone"
    assert_eq "$(ls "$p/libexec/agentcage" | tr '\n' ' ')" \
        "agentcage-audit agentcage-broker agentcage-egress agentcage-install-engine agentcage-watchdog " "libexec/agentcage/"
    for f in share/man/man8/agentcage.8 share/man/man7/agentcage-tiers.7 share/bash-completion/completions/agentcage \
             share/agentcage/engines/docker-daemon.json share/agentcage/engines/podman-50-agentcage.conf \
             share/agentcage/engines/containerd-agentcage.toml share/agentcage/engines/runtimeclass.yaml; do
        [ -s "$p/$f" ] || fail "make install left out $f"
    done
    assert_eq "$(jq -r .runtimes.agentcage.path "$p/share/agentcage/engines/docker-daemon.json")" /usr/local/bin/agentcage \
        "the docker snippet names the installed binary"
    # the man pages render without a warning
    local w; w="$(man --warnings -E UTF-8 -l "$p/share/man/man8/agentcage.8" 2>&1 > /dev/null)"
    assert_eq "$w" "" "agentcage(8) renders cleanly"
    w="$(man --warnings -E UTF-8 -l "$p/share/man/man7/agentcage-tiers.7" 2>&1 > /dev/null)"
    assert_eq "$w" "" "agentcage-tiers(7) renders cleanly"
    # the installed pair works (the compiled-in dir is PREFIX's, here under DESTDIR)
    tier1_bundle
    OUT="$("$p/bin/agentcage" --root "$ROOT" --helpers-dir "$p/libexec/agentcage" run -b "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "the installed binary runs tier 1 ($OUT)"
    assert_contains "$OUT" "root-ro"
    ok make --no-print-directory -C "$REPO_DIR" uninstall DESTDIR="$T/inst" PREFIX=/usr/local
    assert_eq "$(find "$T/inst" -type f | head -3)" "" "make uninstall removes every file"
}

test_bash_completion() {
    is_runc && return 0
    local id; id="$(new_id)"
    make_bundle "$id"
    rt_create "$id"
    # complete WORDS...: COMPREPLY for the last word
    complete_words() {
        bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _agentcage; echo "${COMPREPLY[*]}"' \
            _ "$REPO_DIR/scripts/completion.bash" "$@"
    }
    assert_eq "$(complete_words agentcage ch)" check "verb"
    assert_eq "$(complete_words agentcage install "")" "docker podman containerd --check --tier --config --print" "install"
    assert_eq "$(complete_words agentcage --root "$ROOT" kill "")" "$id" "container ids from --root"
    assert_contains "$(complete_words agentcage --helpers)" "--helpers-dir" "global flag"
    assert_eq "$(complete_words agentcage --default-tier w)" "write" "tier names"
    ok rt delete --force "$id"
}

# An operator's config that a rootless runtime cannot read: inside a user
# namespace (as rootless Podman runs its runtime) the euid is 0, and the file
# is still not ours. unshare --map-root-user as host root maps 0 alone: a
# file of an unmapped uid in a 0700 folder is out of reach there.
test_unreadable_config_skipped_rootless_only() {
    is_runc && return 0
    mkdir -p "$T/etc"
    echo "max-memory = 64m" > "$T/etc/agentcage.conf"
    chown -R 54321:54321 "$T/etc"
    chmod 700 "$T/etc"
    chmod 600 "$T/etc/agentcage.conf"
    local conf="$T/etc/agentcage.conf"
    OUT="$(AGENTCAGE_CONF="$conf" unshare --user --map-root-user "$RUNTIME" --root "$ROOT" list -q 2>&1)"; RC=$?
    assert_eq "$RC" 0 "rootless in a user namespace: the unreadable config is skipped ($OUT)"
    assert_eq "$OUT" "" "and silently without --debug"
    OUT="$(AGENTCAGE_CONF="$conf" unshare --user --map-root-user "$RUNTIME" --root "$ROOT" --debug list -q 2>&1)"
    assert_eq "$(echo "$OUT" | grep -c "is not readable")" 1 "one debug line says so: $OUT"
    assert_contains "$OUT" "$conf"
    # a container runs there: the file never fails it
    local id; id="$(new_id)"
    make_bundle "$id" echo ran-in-userns
    cfg 'del(.linux.resources) | del(.linux.cgroupsPath) | .root.readonly = true'
    OUT="$(AGENTCAGE_CONF="$conf" unshare --user --map-root-user "$RUNTIME" --root "$ROOT" run -b "$BUNDLE" "$id" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 0 "a container in the user namespace ($OUT)"
    assert_contains "$OUT" "ran-in-userns"
    # not rootless: the same file is an error, never silently dropped
    OUT="$(AGENTCAGE_CONF="$conf" unshare --user --map-root-user "$RUNTIME" --rootless false --root "$ROOT" list -q 2>&1)"; RC=$?
    assert_eq "$RC" 1 "not rootless: refused ($OUT)"
    assert_contains "$OUT" "open \`$conf\`: Permission denied"
    # and host root reads it
    OUT="$(AGENTCAGE_CONF="$conf" "$RUNTIME" --root "$ROOT" policy show --tier 1 2>&1)"
    assert_contains "$OUT" "67108864" "host root applies the file's max-memory"
}

# `agentcage install ENGINE` writes the engine's own configuration for this
# binary; `install --check` asks the engine itself.
test_install_writes_engine_configs() {
    is_runc && return 0
    local bin; bin="$(readlink -f "$RUNTIME")"
    ok "$RUNTIME" install docker --config "$T/daemon.json"
    assert_eq "$(jq -r .runtimes.agentcage.path "$T/daemon.json")" "$bin" "docker: this binary"
    assert_eq "$(jq -c '.runtimes["agentcage-write"].runtimeArgs' "$T/daemon.json")" '["--default-tier","1"]' "docker: tier runtimes"
    echo '{"debug": true, "runtimes": {"other": {"path": "/bin/other"}}}' > "$T/daemon2.json"
    ok "$RUNTIME" install docker --config "$T/daemon2.json"
    assert_eq "$(jq -c '[.debug, .runtimes.other.path, .runtimes.agentcage.path]' "$T/daemon2.json")" "[true,\"/bin/other\",\"$bin\"]" "docker: merged"
    ok "$RUNTIME" install podman --config "$T/50-agentcage.conf"
    assert_contains "$(cat "$T/50-agentcage.conf")" "agentcage = [\"$bin\"]" "podman drop-in"
    ok "$RUNTIME" install containerd --config "$T/c/agentcage.toml" --main-config "$T/c/config.toml"
    assert_contains "$(cat "$T/c/agentcage.toml")" "BinaryName = \"$bin\"" "containerd snippet"
    assert_contains "$(cat "$T/c/config.toml")" "imports = [\"$T/c/agentcage.toml\"]" "containerd import"
    ok "$RUNTIME" install podman --print --binary /opt/x/agentcage
    assert_contains "$OUT" 'agentcage = ["/opt/x/agentcage"]' "--binary given wins"
    assert_exit 2 "$RUNTIME" install lxc
    assert_contains "$OUT" "agentcage install: unknown engine 'lxc'"
    assert_fails "$RUNTIME" --helpers-dir "$T/none" install docker
    assert_contains "$OUT" "install: the helper \`$T/none/agentcage-install-engine\`"
}

test_install_check_containerd() {
    is_runc && return 0
    command -v containerd > /dev/null || return 0
    local bin; bin="$(readlink -f "$RUNTIME")"
    mkdir -p "$T/c"
    printf 'version = 2\nroot = "%s/c/root"\nstate = "%s/c/state"\n' "$T" "$T" > "$T/c/config.toml"
    assert_exit 1 "$RUNTIME" install --check containerd --main-config "$T/c/config.toml"
    assert_contains "$OUT" "has no CRI runtime handler agentcage"
    ok "$RUNTIME" install containerd --config "$T/c/agentcage.toml" --main-config "$T/c/config.toml"
    assert_exit 0 "$RUNTIME" install --check containerd --main-config "$T/c/config.toml"
    assert_contains "$OUT" "containerd: sees agentcage: the CRI runtime handler agentcage"
    assert_contains "$OUT" "runs $bin"
    # another binary registered: seen, but not this one
    ok "$RUNTIME" install containerd --binary /usr/bin/true --config "$T/c/agentcage.toml" --main-config "$T/c/config.toml"
    assert_exit 1 "$RUNTIME" install --check containerd --main-config "$T/c/config.toml"
    assert_contains "$OUT" "runs /usr/bin/true, not $bin"
}

test_install_check_podman() {
    is_runc && return 0
    command -v podman > /dev/null || return 0
    local bin; bin="$(readlink -f "$RUNTIME")"
    printf '[engine]\nruntime = "runc"\n' > "$T/containers.conf"
    local stores; stores="$(ls -d /tmp/agentcage-check-podman.* 2>/dev/null | wc -l)"
    OUT="$(CONTAINERS_CONF="$T/containers.conf" "$RUNTIME" install --check podman 2>&1)"; RC=$?
    assert_eq "$RC" 1 "unregistered ($OUT)"
    assert_contains "$OUT" "podman: podman does not see the runtime agentcage"
    ok "$RUNTIME" install podman --config "$T/containers.conf"
    OUT="$(CONTAINERS_CONF="$T/containers.conf" "$RUNTIME" install --check podman 2>&1)"; RC=$?
    assert_eq "$RC" 0 "registered ($OUT)"
    assert_contains "$OUT" "podman: sees agentcage: the runtime agentcage (podman info) runs $bin"
    assert_eq "$(ls -d /tmp/agentcage-check-podman.* 2>/dev/null | wc -l)" "$stores" "the throwaway stores are gone"
}

test_install_check_docker() {
    is_runc && return 0
    command -v dockerd > /dev/null || return 0
    local bin; bin="$(readlink -f "$RUNTIME")" d="$T/docker"
    mkdir -p "$d"
    echo '{}' > "$d/daemon.json"
    # a dockerd of this test's own: no bridge, no iptables, its state in $T
    dockerd --config-file "$d/daemon.json" --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/pid" \
        -H "unix://$d/sock" --iptables=false --ip-forward=false --ip-masq=false --bridge=none --storage-driver vfs \
        --cgroup-parent "/$CGROUP_PARENT/$TEST_ID-docker" --exec-opt native.cgroupdriver=cgroupfs --log-level error \
        < /dev/null > "$d/log" 2>&1 &
    local dpid=$!
    track_pid "$dpid"
    stop_dockerd() {
        local c; c="$(pgrep -P "$dpid" containerd 2>/dev/null)"
        kill "$dpid" 2>/dev/null
        for _ in $(seq 100); do [ -d "/proc/$dpid" ] || break; sleep 0.1; done
        [ -n "$c" ] && kill "$c" 2>/dev/null
        for _ in $(seq 50); do { [ -n "$c" ] && [ -d "/proc/$c" ]; } || break; sleep 0.1; done
        grep -F "$d" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount -l "$m"; done
    }
    local i
    for i in $(seq 100); do DOCKER_HOST="unix://$d/sock" /usr/bin/docker version > /dev/null 2>&1 && break; sleep 0.1; done
    OUT="$(DOCKER_HOST="unix://$d/sock" "$RUNTIME" install --check docker 2>&1)"; RC=$?
    [ $RC == 1 ] && [[ "$OUT" == *"dockerd has no runtime agentcage"* ]] || { stop_dockerd; fail "unregistered: rc=$RC $OUT"; }
    ok "$RUNTIME" install docker --config "$d/daemon.json"
    kill -HUP "$dpid"   # dockerd reloads its runtimes
    for i in $(seq 50); do
        OUT="$(DOCKER_HOST="unix://$d/sock" "$RUNTIME" install --check docker 2>&1)"; RC=$?
        [ $RC == 0 ] && break
        sleep 0.1
    done
    stop_dockerd
    assert_eq "$RC" 0 "registered after SIGHUP ($OUT)"
    assert_contains "$OUT" "docker: sees agentcage: the runtime agentcage (dockerd's runtimes: agentcage agentcage-irreversible"
    assert_contains "$OUT" "runs $bin"
}
