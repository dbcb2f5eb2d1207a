# Shared settings for the engine tests (sourced by setup.sh, scenarios.sh,
# teardown.sh and run.sh).  Everything the engines keep lives under $E so
# that the host's /var/lib/docker, /var/lib/containers and /etc are never
# touched; the daemons we start are recorded in $E/pids/ and only those are
# stopped.

ENG_DIR="${ENG_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
REPO_DIR="${REPO_DIR:-$(cd "$ENG_DIR/../.." && pwd)}"
E="${AGENTCAGE_ENGINES_DIR:-/tmp/agentcage-engines}"
# The binary under test is copied into $E/bin at setup: a `make` running in
# the work tree meanwhile cannot swap it (or remove it) under the engines.
AGENTCAGE_SRC="${AGENTCAGE_SRC:-$REPO_DIR/agentcage}"
AGENTCAGE="$E/bin/agentcage"
RUNC_BIN="${RUNC_BIN:-$(command -v runc || echo /usr/sbin/runc)}"
CACHE="$REPO_DIR/integration/.cache"
AC_POLICY="$E.policy"   # agentcage's audit trail and approvals for the engines' containers
IMAGE_TAR="$CACHE/engines-image.tar"
IMAGE="agentcage-it:latest"
CTR_IMAGE="docker.io/library/agentcage-it:latest"
PAUSE_TAR="$CACHE/engines-pause.tar"
PAUSE_IMAGE="docker.io/library/agentcage-pause:latest"
CTR_NS="agentcage-engines"

# cgroup parents of the containers each engine creates (removed at teardown)
CG_DOCKER="/agentcage-engines-docker"
CG_PODMAN="/agentcage-engines-podman"
CG_CTR="/agentcage-engines-ctr"
CG_CRI="/agentcage-engines-cri"   # the kubelet's cgroup parent in integration/kubernetes/cri-test.sh

# The daemons (containerd, dockerd) and every podman command run in a network
# namespace of our own, with the engines' DEFAULT networking (docker0 and its
# NAT, Podman's CNI bridge, the CRI plugin's CNI bridge): their bridges,
# iptables rules and traffic never touch the host's namespace. It also holds
# EXT_IP (on its lo), the "outside world" the network scenarios
# try to reach (an HTTP server there, see net_server in scenarios.sh).
ENG_NETNS="agentcage-engines"
ENG_NETNS_PATH="/run/netns/$ENG_NETNS"
EXT_IP="10.222.0.1"
IN_NS() { nsenter -F --net="$ENG_NETNS_PATH" "$@"; }
# network names (and CNI IPAM folders under $E/cni) of the bridges we define
PODMAN_NET="agentcage-it"
CRI_NET="agentcage-it-cri"

DOCKER_BIN=/usr/bin/docker   # the Debian 20.10 client, not a newer one on PATH
D() { "$DOCKER_BIN" -H "unix://$E/docker/docker.sock" "$@"; }
P() {
    AGENTCAGE_CONF="$E/agentcage.conf" CONTAINERS_CONF="$E/podman/containers.conf" CONTAINERS_STORAGE_CONF="$E/podman/storage.conf" \
        nsenter -F --net="$ENG_NETNS_PATH" podman --root "$E/podman/graph" --runroot "$E/podman/run" --cgroup-manager cgroupfs \
        --tmpdir "$E/podman/tmp" --events-backend file "$@"
}
C() { ctr --address "$E/containerd/containerd.sock" --namespace "$CTR_NS" "$@"; }

log() { echo "# $*" >&2; }

# rt_bin NAME: the binary behind a runtime name
rt_bin() { case "$1" in runc) echo "$RUNC_BIN" ;; *) echo "$AGENTCAGE" ;; esac; }
