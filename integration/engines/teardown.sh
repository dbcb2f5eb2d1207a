#!/bin/bash
# Undoes setup.sh: removes the containers through the engines first, stops
# exactly the daemons recorded in $E/pids/, unmounts what is left under $E,
# removes the cgroups the containers had under our cgroup parents and then
# $E itself.  The cached image tarball (integration/.cache) stays.
set -u
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
[ -d "$E" ] || exit 0

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2> /dev/null; }

# ---- containers, through their engines
if alive "$E/pids/dockerd.pid"; then
    ids="$(D ps -aq 2> /dev/null)"
    [ -z "$ids" ] || timeout 60 "$DOCKER_BIN" -H "unix://$E/docker/docker.sock" rm -f $ids > /dev/null 2>&1
fi
if [ -e "$E/podman/containers.conf" ]; then
    timeout 60 bash -c "$(declare -f P); E='$E'; ENG_NETNS_PATH='$ENG_NETNS_PATH'; P pod rm -af -t 0; P rm -af -t 0" > /dev/null 2>&1
fi
if alive "$E/pids/containerd.pid"; then
    # pods through the CRI first: it tears down their CNI network and netns
    [ -S "$E/containerd/containerd.sock" ] && [ -d "$E/cri" ] &&
        timeout 60 /usr/bin/python3 "$REPO_DIR/integration/kubernetes/cri.py" --gen "$E/cri" \
            --socket "$E/containerd/containerd.sock" cleanup > /dev/null 2>&1
    for ns in "$CTR_NS" k8s.io; do
        for t in $(ctr --address "$E/containerd/containerd.sock" -n "$ns" task ls -q 2> /dev/null); do
            ctr --address "$E/containerd/containerd.sock" -n "$ns" task kill -s SIGKILL "$t" > /dev/null 2>&1
            sleep 0.2
            ctr --address "$E/containerd/containerd.sock" -n "$ns" task rm -f "$t" > /dev/null 2>&1
        done
        for c in $(ctr --address "$E/containerd/containerd.sock" -n "$ns" c ls -q 2> /dev/null); do
            ctr --address "$E/containerd/containerd.sock" -n "$ns" c rm "$c" > /dev/null 2>&1
        done
    done
fi

# ---- agentcage state left in its default root (Podman passes no --root) for our bundles
if [ -x "$AGENTCAGE" ]; then
    for id in $("$AGENTCAGE" list 2> /dev/null | awk -v e="$E/" 'NR > 1 && index($4, e) == 1 {print $1}'); do
        timeout 10 "$AGENTCAGE" delete --force "$id" > /dev/null 2>&1
    done
fi

# ---- daemons we started (dockerd first: it is containerd's client)
stop_pid() { # PIDFILE
    local f="$1" p i
    [ -s "$f" ] || return 0
    p="$(cat "$f")"
    if kill -0 "$p" 2> /dev/null; then
        kill -TERM "$p" 2> /dev/null
        for ((i = 0; i < 100; i++)); do kill -0 "$p" 2> /dev/null || break; sleep 0.1; done
        kill -0 "$p" 2> /dev/null && kill -KILL "$p" 2> /dev/null
    fi
    rm -f "$f"
}
stop_pid "$E/pids/dockerd.pid"
stop_pid "$E/pids/containerd.pid"
stop_pid "$E/pids/www-8080.pid"
stop_pid "$E/pids/www-8081.pid"

# ---- shims and conmons left behind (their command line names our dir)
for p in $(ls /proc | grep -E '^[0-9]+$'); do
    cmd="$(tr "\\0" " " 2> /dev/null < "/proc/$p/cmdline")" || continue
    case "$cmd" in
        *containerd-shim*"$E/containerd/containerd.sock"* | */usr/bin/conmon*"$E/podman"*) kill -KILL "$p" 2> /dev/null ;;
    esac
done

# ---- mounts under $E (deepest first), then the cgroups under our parents
for ((i = 0; i < 3; i++)); do
    grep -F " $E/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do
        umount "$m" 2> /dev/null || umount -l "$m" 2> /dev/null
    done
done
parents=("$CG_DOCKER" "$CG_PODMAN" "$CG_CTR" "$CG_CRI")
[ "$(cat "$E/libpod-parent-preexisted" 2> /dev/null)" == no ] && parents+=(/libpod_parent)
rmdir_tree() {
    local d="$1" sub
    # Podman's cgroupfs manager also makes its folders (and a `tasks` file)
    # for controllers listed in /proc/cgroups that no v1 hierarchy mounts
    # (hugetlb, which cgroup2 holds here; net_cls, net_prio, perf_event):
    # plain folders on /sys/fs/cgroup's tmpfs, removed as such
    if [ "$(stat -f -c %T "$d" 2> /dev/null)" == tmpfs ]; then rm -rf --one-file-system "$d"; return; fi
    for sub in "$d"/*/; do [ -d "$sub" ] && rmdir_tree "${sub%/}"; done
    rmdir "$d" 2> /dev/null
}
for parent in "${parents[@]}"; do
    for d in /sys/fs/cgroup/*"$parent" /sys/fs/cgroup/unified"$parent"; do
        [ -d "$d" ] || continue
        [ -f "$d/freezer.state" ] && echo THAWED > "$d/freezer.state" 2> /dev/null
        for p in $(cat "$d"/cgroup.procs "$d"/*/cgroup.procs 2> /dev/null); do kill -KILL "$p" 2> /dev/null; done
    done
done
# exiting processes leave their cgroups a moment later: retry for a few seconds
for ((i = 0; i < 30; i++)); do
    sleep 0.2
    left=0
    for parent in "${parents[@]}"; do
        for d in /sys/fs/cgroup/*"$parent" /sys/fs/cgroup/unified"$parent"; do
            [ -d "$d" ] || continue
            rmdir_tree "$d"
            if [ -d "$d" ]; then
                left=1
                for p in $(cat "$d"/cgroup.procs "$d"/*/cgroup.procs 2> /dev/null); do kill -KILL "$p" 2> /dev/null; done
            fi
        done
    done
    [ $left == 0 ] && break
done
[ $left == 0 ] || echo "teardown.sh: cgroups left: $(ls -d /sys/fs/cgroup/*{$CG_DOCKER,$CG_PODMAN,$CG_CTR,$CG_CRI} 2> /dev/null | tr '\n' ' ')" >&2

# containerd 1.6 shims keep their sockets in /run/containerd/s; remove the dir only if we made it
if [ "$(cat "$E/run-containerd-preexisted" 2> /dev/null)" == no ] && [ -d /run/containerd ]; then
    # only our containerd and its shims used it (sockets of killed shims stay behind)
    rm -rf /run/containerd
fi

# the engines' network namespace (its bridges, NAT rules and veths go with it)
if [ "$(cat "$E/netns-made" 2> /dev/null)" == yes ] && [ -e "$ENG_NETNS_PATH" ]; then
    ip netns del "$ENG_NETNS" 2> /dev/null || { umount "$ENG_NETNS_PATH" 2> /dev/null; rm -f "$ENG_NETNS_PATH"; }
fi
# CNI's result cache: all of it if we made /var/lib/cni, else our networks' entries
if [ "$(cat "$E/var-lib-cni-preexisted" 2> /dev/null)" == no ]; then
    rm -rf /var/lib/cni
elif [ -d /var/lib/cni ]; then
    rm -rf /var/lib/cni/results/"$PODMAN_NET"-* /var/lib/cni/results/"$CRI_NET"-*
fi

if grep -qF " $E/" /proc/self/mountinfo; then
    echo "teardown.sh: mounts left under $E:" >&2
    grep -F " $E/" /proc/self/mountinfo | awk '{print "  " $5}' >&2
    exit 1
fi
rm -rf "$E" "$AC_POLICY"
exit 0
