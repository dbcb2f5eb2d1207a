#!/bin/bash
# The Debian package, as an operator installs it: `make deb` builds it
# (dpkg-buildpackage in a copy of the checkout), lintian shows no errors, its
# files are laid out like runc's (binary in /usr/bin, helpers in
# /usr/libexec/agentcage, man pages, completion, engine snippets, one
# conffile); then, in a fresh minimal Debian 12 root (integration/fresh/lib.sh):
# the packages its Depends line names, `dpkg -i`, `agentcage run` of a busybox
# bundle at tier 1 (and tier 2's egress proxy, from /usr/libexec), `dpkg -r`
# leaving only the conffile and what the runtime wrote (its audit trail), and
# `dpkg -P` leaving nothing.
# Prints ok/FAIL lines and "N passed, M failed"; exits non-zero on a failure.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${BUILD:-build}"
source "$repo/integration/fresh/lib.sh"
PASSED=0 FAILED=0
ok_() { echo "ok - package/$1"; PASSED=$((PASSED + 1)); }
fail_() { echo "FAIL - package/$1: $2"; FAILED=$((FAILED + 1)); }
check() { if [ "$2" == yes ]; then ok_ "$1"; else fail_ "$1" "$2"; fi; }
finish() { echo "$PASSED passed, $FAILED failed"; [ "$FAILED" == 0 ]; exit; }
one_line() { tr '\n' ' ' | tail -c 400; }

[ "$(id -u)" == 0 ] || { fail_ setup "must run as root"; finish; }
t0=$SECONDS

# ---------------------------------------------------------------- build
out="$(make --no-print-directory -C "$repo" BUILD="$build" deb 2>&1)"
deb="$(ls "$repo/$build"/deb/agentcage_*_*.deb 2>/dev/null | head -1)"
if [ -z "$deb" ]; then fail_ make_deb "$(echo "$out" | tail -5 | one_line)"; finish; fi
ok_ make_deb
echo "# built $(basename "$deb") in $((SECONDS - t0)) s"

command -v lintian > /dev/null || "$repo/scripts/setup-deps.sh" lintian > /dev/null 2>&1
lint="$(lintian --fail-on error "$deb" 2>&1)"; rc=$?
check lintian_no_errors "$( [ $rc == 0 ] && ! echo "$lint" | grep -q '^E: ' && echo yes || echo "rc=$rc: $(echo "$lint" | grep '^E: ' | one_line)")"
warnings="$(echo "$lint" | grep -c '^W: ')"
[ "$warnings" == 0 ] || echo "# lintian warnings: $(echo "$lint" | grep '^W: ' | one_line)"

files="$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')"
want="/usr/bin/agentcage /usr/libexec/agentcage/agentcage-watchdog /usr/libexec/agentcage/agentcage-egress
      /usr/libexec/agentcage/agentcage-audit /usr/libexec/agentcage/agentcage-broker /usr/libexec/agentcage/agentcage-install-engine
      /usr/share/man/man8/agentcage.8.gz /usr/share/man/man7/agentcage-tiers.7.gz
      /usr/share/bash-completion/completions/agentcage /usr/share/agentcage/engines/docker-daemon.json
      /usr/share/agentcage/engines/podman-50-agentcage.conf /usr/share/agentcage/engines/containerd-agentcage.toml
      /usr/share/agentcage/engines/runtimeclass.yaml /etc/agentcage/agentcage.conf"
missing=""
for f in $want; do echo "$files" | grep -qxF "$f" || missing="$missing $f"; done
extra="$(echo "$files" | grep -E '^/usr/bin/.|^/usr/sbin/.' | grep -vxF /usr/bin/agentcage | one_line)"
check layout "$( [ -z "$missing" ] && [ -z "$extra" ] && echo yes || echo "missing:$missing; extra in bin: $extra")"
conffiles="$(dpkg-deb -f "$deb" Package >/dev/null && dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles 2>/dev/null)"
check conffile "$( [ "$conffiles" == /etc/agentcage/agentcage.conf ] && echo yes || echo "conffiles: '$conffiles'")"
engines_bin="$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/agentcage/engines/docker-daemon.json | jq -r .runtimes.agentcage.path)"
check engine_snippets_name_installed_binary "$( [ "$engines_bin" == /usr/bin/agentcage ] && echo yes || echo "docker snippet runs '$engines_bin'")"
# Depends names the package of every shared library a packaged binary loads
# (what is linked statically, like libseccomp, needs none)
depends="$(dpkg-deb -f "$deb" Depends)"
unpacked="$(mktemp -d)"
dpkg-deb -x "$deb" "$unpacked"
missing=""
for so in $(find "$unpacked" -type f -perm -u+x -exec readelf -d {} \; 2>/dev/null |
            sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u); do
    pkg="$(dpkg -S "*/$so" 2>/dev/null | head -1 | cut -d: -f1)"
    if [ -n "$pkg" ] && ! echo "$depends" | grep -qE "(^|, )$pkg( |,|$)"; then missing="$missing $pkg($so)"; fi
done
rm -rf "$unpacked"
check shlibs_depends "$( [ -z "$missing" ] && echo yes || echo "no$missing in Depends: $depends")"

# ---------------------------------------------------------------- fresh root
echo "# lintian and layout: $((SECONDS - t0)) s"
why="$(fresh_base)" || { fail_ fresh_root "$why"; finish; }
root="$(fresh_unpack)" || { fail_ fresh_root "cannot unpack $FRESH_BASE"; finish; }
id="pkg$$"
cleanup() {
    # the cgroups of the containers (their state lived in the root's /run, a tmpfs)
    local d
    for d in /sys/fs/cgroup/*/agentcage-pkg-it /sys/fs/cgroup/agentcage-pkg-it; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    fresh_remove "$root"
}
trap cleanup EXIT
rootfs="$("$repo/integration/rootfs.sh")" || { fail_ fresh_root "no busybox rootfs"; finish; }
cp "$deb" "$root/root/"
# bundles made here (the fresh root has no jq): busybox, tier 1 and tier 2
bundle() { # NAME TIER ARGS...
    local d="$root/root/$1" tier="$2"; shift 2
    mkdir -p "$d"
    cp -a "$rootfs" "$d/rootfs"
    (cd "$d" && "$repo/agentcage" spec > /dev/null)
    jq --arg t "$tier" --arg cg "/agentcage-pkg-it/$id-$tier" --argjson a "$(printf '%s\n' "$@" | jq -R . | jq -s -c .)" \
        '.process.terminal = false | .process.args = $a | .annotations = {"io.agentcage.tier": $t}
         | .linux.cgroupsPath = $cg' "$d/config.json" > "$d/c" && mv "$d/c" "$d/config.json"
}
bundle b1 1 sh -c 'touch /x 2>/dev/null && echo root-rw || echo root-ro; echo written > /workspace/f && cat /workspace/f; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "'
bundle b2 2 sh -c 'echo "proxy=$HTTP_PROXY"; wget -q -O- http://denied.test/ 2>&1 | head -1'
pkgs="$(echo "$depends" | tr ',' '\n' | sed -E 's/\(.*\)//; s/ //g' | grep . | tr '\n' ' ')"

# the steps in the root, each line "STEP rc" then its output, in one log
cat > "$root/root/steps.sh" << EOF
#!/bin/bash
export DEBIAN_FRONTEND=noninteractive
step() { local name="\$1"; shift; echo "=== \$name"; "\$@" > /tmp/out 2>&1; echo "=== \$name rc=\$?"; cat /tmp/out; }
snapshot() { find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /root \\
    -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/log/apt -o -path /var/log/dpkg.log \\
    -o -path /var/log/alternatives.log \\) -prune -o -print | sort; }
step deps sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs'
snapshot > /root/before
step install dpkg -i /root/$(basename "$deb")
step user id agentcage-egress
step version agentcage --version
step check agentcage check
step tier1 sh -c 'cd /root/b1 && agentcage run $id-1'
step tier2 sh -c 'cd /root/b2 && agentcage run $id-2'
step list agentcage list -q
step remove dpkg -r agentcage
snapshot > /root/after-remove
step purge dpkg -P agentcage
snapshot > /root/after-purge
step diff-remove diff /root/before /root/after-remove
step diff-purge diff /root/before /root/after-purge
EOF
chmod 755 "$root/root/steps.sh"
echo "# fresh root prepared: $((SECONDS - t0)) s"
t1=$SECONDS
fresh_chroot "$root" /root/steps.sh > "$root.log" 2>&1
echo "# fresh root: $((SECONDS - t1)) s"
log="$root.log"
# out_of STEP: that step's output; rc_of STEP: its exit status
out_of() { awk -v s="=== $1 rc=" 'index($0, s) == 1 {on = 1; next} /^=== / {on = 0} on' "$log"; }
rc_of() { grep -m1 "^=== $1 rc=" "$log" | sed 's/.*rc=//'; }

check fresh_deps_from_depends "$( [ "$(rc_of deps)" == 0 ] && echo yes || echo "apt-get install $pkgs: $(out_of deps | tail -3 | one_line)")"
check fresh_dpkg_install "$( [ "$(rc_of install)" == 0 ] && echo yes || echo "$(out_of install | tail -3 | one_line)")"
check fresh_egress_user "$( [ "$(rc_of user)" == 0 ] && echo yes || echo "no system user agentcage-egress: $(out_of user | one_line)")"
v="$(out_of version)"
check fresh_version "$( [ "$(rc_of version)" == 0 ] && echo "$v" | grep -q "^agentcage version $(dpkg-deb -f "$deb" Version)$" &&
    echo "$v" | grep -q '^commit: [0-9a-f]' && echo yes || echo "$(echo "$v" | one_line)")"
c="$(out_of check)"
check fresh_check_finds_libexec_helpers "$(echo "$c" | grep -q '^helpers: /usr/libexec/agentcage$' &&
    echo "$c" | grep -q '^watchdog: yes - /usr/libexec/agentcage/agentcage-watchdog' && echo yes || echo "$(echo "$c" | one_line)")"
o="$(out_of tier1)"
check fresh_tier1_run "$( [ "$(rc_of tier1)" == 0 ] && echo "$o" | grep -qx root-ro && echo "$o" | grep -qx written &&
    echo "$o" | grep -qx 'NoNewPrivs: 1' && echo "$o" | grep -qx 'Seccomp: 2' && echo yes || echo "rc=$(rc_of tier1): $(echo "$o" | one_line)")"
o="$(out_of tier2)"
check fresh_tier2_egress_from_libexec "$( [ "$(rc_of tier2)" == 0 ] && echo "$o" | grep -q 'proxy=http://127.0.0.1:3128' &&
    echo "$o" | grep -q 403 && echo yes || echo "rc=$(rc_of tier2): $(echo "$o" | one_line)")"
check fresh_nothing_running "$( [ "$(rc_of list)" == 0 ] && [ -z "$(out_of list)" ] && echo yes || echo "$(out_of list | one_line)")"
check fresh_dpkg_remove "$( [ "$(rc_of remove)" == 0 ] && echo yes || echo "$(out_of remove | tail -3 | one_line)")"
# after remove: the conffile (and its folder), and what the runtime wrote (the audit trail)
# (the system user agentcage-egress stays, as Debian's packages keep their
# accounts: the shadow tools' backups are the only files that shows in)
account='/etc/(passwd|group|shadow|gshadow)-'
left="$(out_of diff-remove | grep '^>' | sed 's/^> //' | grep -vxE "/etc/agentcage|/etc/agentcage/agentcage.conf|/var/log/agentcage|/var/log/agentcage/audit.jsonl|$account" | one_line)"
gone="$(out_of diff-remove | grep '^<' | one_line)"
check fresh_remove_leaves_only_conffiles "$( [ -z "$left" ] && [ -z "$gone" ] && out_of diff-remove | grep -qx '> /etc/agentcage/agentcage.conf' &&
    echo yes || echo "left: $left; removed: $gone")"
left="$(out_of diff-purge | grep -E '^[<>]' | grep -vxE "> $account" | one_line)"
check fresh_purge_leaves_nothing "$( [ "$(rc_of purge)" == 0 ] && [ -z "$left" ] && echo yes ||
    echo "rc=$(rc_of purge): $left")"
if [ "$FAILED" != 0 ]; then cp "$log" "/tmp/agentcage-package-it.log"; echo "# log kept at /tmp/agentcage-package-it.log"; fi
rm -f "$log"
echo "# package suite: $((SECONDS - t0)) s"
finish
