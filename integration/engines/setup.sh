#!/bin/bash
# Prepares the engine tests: installs docker.io, podman (+conmon, Debian's
# containers-common) and containerd from Debian when missing, builds the
# busybox image tarball (cached), writes every engine's configuration under
# $E (default /tmp/agentcage-engines), starts containerd and dockerd by hand
# with all their state in $E (PIDs in $E/pids/), and loads the image into the
# three engines.  Undo it all with teardown.sh.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

# ---------------------------------------------------------------- packages
need=()
command -v dockerd > /dev/null || need+=(docker.io)
command -v podman > /dev/null || need+=(podman)
command -v conmon > /dev/null || need+=(conmon)
[ -e /usr/share/containers/containers.conf ] || need+=(golang-github-containers-common)
command -v containerd > /dev/null || need+=(containerd)
command -v containerd-shim-runc-v2 > /dev/null || need+=(containerd)
[ -x /usr/bin/docker ] || need+=(docker.io)
command -v script > /dev/null || need+=(bsdutils)
command -v jq > /dev/null || need+=(jq)
command -v iptables > /dev/null || need+=(iptables)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
/usr/bin/python3 -c 'import grpc' 2> /dev/null || need+=(python3-grpcio)
/usr/bin/python3 -c 'import grpc_tools' 2> /dev/null || need+=(python3-grpc-tools)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # policy-rc.d (if present) keeps the packages from starting services
    apt-get install -y -qq --no-install-recommends "${need[@]}" crun catatonit >&2
fi

# ---------------------------------------------------------------- image
# image_tar TAR TAG CONFIG-JSON: a docker-archive of the rootfs layer with
# the given image config (Env, Cmd, Entrypoint ...)
image_tar() {
    local out="$1" tag="$2" conf="$3" tmp="$CACHE/engines-image.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp/layer"
    tar --numeric-owner --sort=name --mtime=@0 -C "$rootfs" -cf "$tmp/layer/layer.tar" .
    diff_id="sha256:$(sha256sum "$tmp/layer/layer.tar" | cut -d' ' -f1)"
    jq -n -c --arg d "$diff_id" --argjson conf "$conf" '{
        architecture: "amd64", os: "linux", created: "1970-01-01T00:00:00Z",
        config: $conf,
        rootfs: {type: "layers", diff_ids: [$d]},
        history: [{created: "1970-01-01T00:00:00Z", created_by: "integration/engines/setup.sh"}]
    }' > "$tmp/config.json"
    cfg="$(sha256sum "$tmp/config.json" | cut -d' ' -f1)"
    mv "$tmp/config.json" "$tmp/$cfg.json"
    jq -n -c --arg c "$cfg.json" --arg t "$tag" '[{Config: $c, RepoTags: [$t], Layers: ["layer/layer.tar"]}]' > "$tmp/manifest.json"
    tar --numeric-owner -C "$tmp" -cf "$out.tmp" manifest.json "$cfg.json" layer
    mv "$out.tmp" "$out"
    rm -rf "$tmp"
}
# One uncompressed layer of the integration rootfs (busybox-static + probe),
# as a docker-archive that docker load, podman load and ctr import all take.
rootfs="$("$REPO_DIR/integration/rootfs.sh")"
env_path='["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]'
if [ ! -s "$IMAGE_TAR" ] || [ "$rootfs.stamp" -nt "$IMAGE_TAR" ] || [ "$CACHE/rootfs.stamp" -nt "$IMAGE_TAR" ]; then
    log "building $IMAGE_TAR"
    image_tar "$IMAGE_TAR" "$IMAGE" "{\"Env\": $env_path, \"Cmd\": [\"/bin/sh\"], \"WorkingDir\": \"/\"}"
fi
# the CRI plugin's sandbox ("pause") image: the same layer, sleeping
if [ ! -s "$PAUSE_TAR" ] || [ "$IMAGE_TAR" -nt "$PAUSE_TAR" ]; then
    log "building $PAUSE_TAR"
    image_tar "$PAUSE_TAR" "$PAUSE_IMAGE" "{\"Env\": $env_path, \"Entrypoint\": [\"/bin/sleep\", \"2147483647\"], \"WorkingDir\": \"/\"}"
fi

# ---------------------------------------------------------------- network namespace
mkdir -p "$E"/{pids,bin,docker,containerd,podman/{graph,run,tmp,net},ctr-root,cni/{net.d,ipam}}
# the engines' own network, with loopback up and the dummy "outside" address
if [ ! -e "$ENG_NETNS_PATH" ]; then
    log "creating network namespace $ENG_NETNS"
    ip netns add "$ENG_NETNS"
    echo yes > "$E/netns-made"
fi
ip -n "$ENG_NETNS" link set lo up
# (on lo: this kernel has no dummy interfaces; not a 127/8 address, so the
# egress proxy treats it as any outside host)
ip -n "$ENG_NETNS" addr show dev lo | grep -qF " $EXT_IP/32 " || ip -n "$ENG_NETNS" addr add "$EXT_IP/32" dev lo
# CNI keeps its result cache in /var/lib/cni (no option for it in Podman 4.3
# or the CRI plugin): removed at teardown if we made it, else our entries only
[ -e "$E/var-lib-cni-preexisted" ] || { [ -d /var/lib/cni ] && echo yes || echo no; } > "$E/var-lib-cni-preexisted"
# cni_bridge NAME BRIDGE SUBNET: a conflist for the standard bridge plugin,
# its address leases kept under $E/cni/ipam
cni_bridge() {
    jq -n --arg name "$1" --arg br "$2" --arg subnet "$3" --arg ipam "$E/cni/ipam/$1" '{
        cniVersion: "0.4.0", name: $name,
        plugins: [
            {type: "bridge", bridge: $br, isGateway: true, ipMasq: true, hairpinMode: true,
             ipam: {type: "host-local", dataDir: $ipam, routes: [{dst: "0.0.0.0/0"}], ranges: [[{subnet: $subnet}]]}},
            {type: "portmap", capabilities: {portMappings: true}},
            {type: "firewall"}
        ]}'
}
cni_bridge "$PODMAN_NET" ac-podman0 10.89.0.0/24 > "$E/podman/net/$PODMAN_NET.conflist"
cni_bridge "$CRI_NET" ac-cri0 10.90.0.0/24 > "$E/cni/net.d/10-$CRI_NET.conflist"

# ---------------------------------------------------------------- configs
[ -x "$AGENTCAGE_SRC" ] || { echo "setup.sh: $AGENTCAGE_SRC is not built" >&2; exit 1; }
# a snapshot of the binary (kept while the daemons run: they know its path)
# with its helpers (agentcage-watchdog, ...), which it finds next to itself
for f in "$AGENTCAGE_SRC" "$(dirname "$AGENTCAGE_SRC")"/agentcage-*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    t="$E/bin/$(basename "$f")"
    [ "$f" == "$AGENTCAGE_SRC" ] && t="$AGENTCAGE"
    cmp -s "$f" "$t" || { cp "$f" "$t.tmp" && mv "$t.tmp" "$t"; }
done
# podman creates /libpod_parent (conmon) in every hierarchy: remove it at teardown only if we made it
[ -e "$E/libpod-parent-preexisted" ] || { [ -d /sys/fs/cgroup/memory/libpod_parent ] && echo yes || echo no; } > "$E/libpod-parent-preexisted"
# remember whether containerd's shim socket dir existed (teardown removes it only if we made it)
[ -e "$E/run-containerd-preexisted" ] || { [ -d /run/containerd ] && echo yes || echo no; } > "$E/run-containerd-preexisted"

# Docker: daemon.json written by the installer under test
"$REPO_DIR/scripts/install-engine.sh" docker --binary "$AGENTCAGE" --config "$E/docker/daemon.json" 2> /dev/null
# and a tier under gVisor (the gvisor scenario; Docker 20.10 has no --annotation)
jq --arg bin "$AGENTCAGE" '.runtimes["agentcage-gvisor"] = {path: $bin, runtimeArgs: ["--default-tier", "1", "--kernel-for-tier", "1:gvisor"]}' \
    "$E/docker/daemon.json" > "$E/docker/daemon.json.tmp" && mv "$E/docker/daemon.json.tmp" "$E/docker/daemon.json"

# containerd: our own root/state/sockets; the agentcage CRI handler is
# integration/kubernetes/containerd-agentcage.toml with the binary and Root
# pointed at this checkout and test directory.
sed -e "s|/usr/local/bin/agentcage|$AGENTCAGE|" -e "s|/run/agentcage/containerd|$E/cri-agentcage-root|" \
    "$REPO_DIR/integration/kubernetes/containerd-agentcage.toml" > "$E/containerd/agentcage.toml"
cat > "$E/containerd/config.toml" << EOF
version = 2
root = "$E/containerd/root"
state = "$E/containerd/state"
[grpc]
  address = "$E/containerd/containerd.sock"
[ttrpc]
  address = "$E/containerd/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  disable_cgroup = false
  sandbox_image = "$PAUSE_IMAGE"
  # this host's root lacks CAP_SYS_RESOURCE (runc fails the same way without it)
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$E/cni/net.d"
    max_conf_num = 1
EOF
# the snippet's tables go into the same file (an import would replace the CRI table above)
grep -v '^version' "$E/containerd/agentcage.toml" >> "$E/containerd/config.toml"

# Podman: storage and engine config in the test dir; both runtimes take JSON logs
cat > "$E/podman/storage.conf" << EOF
[storage]
driver = "vfs"
graphroot = "$E/podman/graph"
runroot = "$E/podman/run"
EOF
cat > "$E/podman/containers.conf" << EOF
[containers]
# no CAP_SYS_RESOURCE here: do not try to raise the limits beyond ours
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"

[network]
network_config_dir = "$E/podman/net"
default_network = "$PODMAN_NET"
cni_plugin_dirs = ["/usr/lib/cni"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$E/podman/events.log"
tmp_dir = "$E/podman/tmp"
static_dir = "$E/podman/graph/libpod"
volume_path = "$E/podman/graph/volumes"
runtime = "runc"
EOF
# the [engine.runtimes] and runtime_supports_json come from the installer's drop-in
# Podman hands the runtime a cleaned environment (conmon's): the operator
# settings (AGENTCAGE_CONF) reach it through a wrapper, as a rootless
# operator's do (docs/install.md)
printf '#!/bin/sh\nAGENTCAGE_CONF=%s exec %s "$@"\n' "$E/agentcage.conf" "$AGENTCAGE" > "$E/bin/podman-agentcage"
chmod 755 "$E/bin/podman-agentcage"
"$REPO_DIR/scripts/install-engine.sh" podman --binary "$E/bin/podman-agentcage" --config "$E/podman/agentcage.conf" 2> /dev/null
# one file for CONTAINERS_CONF: splice the drop-in's [engine] keys into ours
{
    cat "$E/podman/containers.conf"
    grep -E '^runtime_supports_json' "$E/podman/agentcage.conf"
    echo
    echo "[engine.runtimes]"
    echo "runc = [\"$RUNC_BIN\"]"
    sed -n '/^\[engine.runtimes\]/,$p' "$E/podman/agentcage.conf" | tail -n +2
} > "$E/podman/containers.conf.new"
mv "$E/podman/containers.conf.new" "$E/podman/containers.conf"

# agentcage's operator settings for every engine's runtime calls (the
# daemons and podman pass AGENTCAGE_CONF on): the audit trail and approvals
# in $AC_POLICY (not under $E: no tiered container may mount anything in
# or around them, and the engines' own files live in $E)
mkdir -p "$AC_POLICY/approvals" && chmod 700 "$AC_POLICY" "$AC_POLICY/approvals"
# The "outside world" of the network scenarios (EXT_IP) is a private
# address, which the egress proxy refuses unless the operator allows it.
printf 'audit-log = %s\napprovals-dir = %s\negress.allow-cidr = %s/32\n' "$AC_POLICY/audit.jsonl" "$AC_POLICY/approvals" \
    "$EXT_IP" > "$E/agentcage.conf"
export AGENTCAGE_CONF="$E/agentcage.conf"

# ---------------------------------------------------------------- daemons
# alive PIDFILE: true when the recorded process still runs
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2> /dev/null; }

# the "outside world" of the network scenarios: HTTP on EXT_IP:8080 (the
# host a tier-2 container may reach) and EXT_IP:8081 (one it may not)
for port in 8080 8081; do
    alive "$E/pids/www-$port.pid" && continue
    mkdir -p "$E/www/$port"
    echo "outside-$port" > "$E/www/$port/index.html"
    nsenter -F --net="$ENG_NETNS_PATH" /usr/bin/python3 -m http.server --bind "$EXT_IP" --directory "$E/www/$port" "$port" \
        < /dev/null > "$E/www/$port.log" 2>&1 &
    echo $! > "$E/pids/www-$port.pid"
done

if ! alive "$E/pids/containerd.pid"; then
    log "starting containerd"
    nsenter -F --net="$ENG_NETNS_PATH" containerd --config "$E/containerd/config.toml" --log-level warn \
        < /dev/null > "$E/containerd/containerd.log" 2>&1 &
    echo $! > "$E/pids/containerd.pid"
fi
for ((i = 0; i < 100; i++)); do
    C version > /dev/null 2>&1 && break
    sleep 0.1
done
C version > /dev/null 2>&1 || { echo "setup.sh: containerd did not come up: $(tail -5 "$E/containerd/containerd.log")" >&2; exit 1; }

if ! alive "$E/pids/dockerd.pid"; then
    log "starting dockerd"
    # its default networking (docker0, NAT, docker-proxy for -p), all inside $ENG_NETNS
    nsenter -F --net="$ENG_NETNS_PATH" dockerd --config-file "$E/docker/daemon.json" --data-root "$E/docker/data" --exec-root "$E/docker/exec" \
        --pidfile "$E/docker/dockerd.pidfile" -H "unix://$E/docker/docker.sock" \
        --containerd "$E/containerd/containerd.sock" --containerd-namespace moby \
        --storage-driver vfs \
        --cgroup-parent "$CG_DOCKER" --exec-opt native.cgroupdriver=cgroupfs --log-level warn \
        < /dev/null > "$E/docker/dockerd.log" 2>&1 &
    echo $! > "$E/pids/dockerd.pid"
fi
for ((i = 0; i < 200; i++)); do
    D version > /dev/null 2>&1 && break
    sleep 0.1
done
D version > /dev/null 2>&1 || { echo "setup.sh: dockerd did not come up: $(tail -5 "$E/docker/dockerd.log")" >&2; exit 1; }

# ---------------------------------------------------------------- image load
D image inspect "$IMAGE" > /dev/null 2>&1 || D load -q -i "$IMAGE_TAR" > /dev/null
P image exists "$IMAGE" 2> /dev/null || P load -q -i "$IMAGE_TAR" > /dev/null 2>&1
C image ls -q | grep -qxF "$CTR_IMAGE" || C image import "$IMAGE_TAR" > /dev/null
C image ls -q | grep -qxF "$CTR_IMAGE" || { echo "setup.sh: ctr import did not create $CTR_IMAGE" >&2; exit 1; }
# the CRI plugin's images (its namespace k8s.io): the test image and the sandbox's
for t in "$IMAGE_TAR" "$PAUSE_TAR"; do
    ctr --address "$E/containerd/containerd.sock" -n k8s.io image import "$t" > /dev/null
done
log "engines ready in $E"
