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
IMAGE_TAR="$CACHE/engines-image.tar"
IMAGE="agentcage-it:latest"
CTR_IMAGE="docker.io/library/agentcage-it:latest"
CTR_NS="agentcage-engines"

# cgroup parents of the containers each engine creates (removed at teardown)
CG_DOCKER="/agentcage-engines-docker"
CG_PODMAN="/agentcage-engines-podman"
CG_CTR="/agentcage-engines-ctr"

DOCKER_BIN=/usr/bin/docker   # the Debian 20.10 client, not a newer one on PATH
D() { "$DOCKER_BIN" -H "unix://$E/docker/docker.sock" "$@"; }
P() {
    CONTAINERS_CONF="$E/podman/containers.conf" CONTAINERS_STORAGE_CONF="$E/podman/storage.conf" \
        podman --root "$E/podman/graph" --runroot "$E/podman/run" --cgroup-manager cgroupfs \
        --tmpdir "$E/podman/tmp" --events-backend file "$@"
}
C() { ctr --address "$E/containerd/containerd.sock" --namespace "$CTR_NS" "$@"; }

log() { echo "# $*" >&2; }

# rt_bin NAME: the binary behind a runtime name
rt_bin() { case "$1" in runc) echo "$RUNC_BIN" ;; *) echo "$AGENTCAGE" ;; esac; }
