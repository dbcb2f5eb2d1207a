#!/bin/bash
# install-engine.sh: registers agentcage as an OCI runtime with a container
# engine, the way runc/crun/kata are registered.
#
#   agentcage install docker|podman|containerd [options]
#   agentcage install --check docker|podman|containerd [options]
#   (or this script itself: scripts/install-engine.sh ENGINE [options];
#   installed as $(LIBEXECDIR)/agentcage/agentcage-install-engine)
#
# Options:
#   --check          do not write: ask the engine whether it sees the
#                    runtime and which binary it runs (exit 0 when it sees
#                    --binary, 1 when not).  docker: `docker info` (DOCKER_HOST
#                    is honoured); podman: `podman --runtime agentcage info` on a
#                    throwaway store (CONTAINERS_CONF is honoured); containerd:
#                    `containerd config dump` of --main-config, the config the
#                    daemon loads when it (re)starts
#   --binary PATH    the agentcage binary (default: agentcage on PATH, else
#                    /usr/local/bin/agentcage)
#   --tier N         also make N (0|read 1|write 2|network 3|irreversible) the
#                    default tier of the plain `agentcage` runtime
#   --config FILE    file to write (defaults below); parent dirs are created
#   --print          print what would be written instead of writing it
#
# What it writes:
#   docker      merges into /etc/docker/daemon.json (jq) the runtimes
#               `agentcage` and `agentcage-read|-write|-network|-irreversible`,
#               the latter with runtimeArgs ["--default-tier","N"]
#               (Docker 20.10 has no --annotation: the runtime name picks the
#               tier).  Restart dockerd afterwards.
#               Use: docker run --runtime agentcage-network ...
#   podman      a drop-in /etc/containers/containers.conf.d/50-agentcage.conf
#               with [engine.runtimes] agentcage and runtime_supports_json
#               (so Podman passes --log/--log-format json to it).  The tier
#               is chosen per container: podman --runtime agentcage run
#               --annotation io.agentcage.tier=2 ...
#   containerd  a snippet /etc/containerd/conf.d/agentcage.toml with a CRI
#               runtime handler `agentcage` (io.containerd.runc.v2, options
#               BinaryName/Root/SystemdCgroup, pod_annotations io.agentcage.*)
#               and adds it to `imports` of /etc/containerd/config.toml
#               (--main-config FILE to change, --no-import to skip).  Pair it
#               with integration/kubernetes/runtimeclass.yaml; pods pick the
#               tier with the annotation io.agentcage.tier.
#
# Podman and containerd have no per-runtime arguments, so with --tier N the
# script also writes a two-line wrapper (<wrapper-dir>/agentcage-<tier>, default
# /usr/local/libexec/agentcage) that runs `agentcage --default-tier N "$@"`
# and registers it under the name agentcage-<tier>.
set -euo pipefail

prog="${AGENTCAGE_INSTALL_PROG:-install-engine.sh}"
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit "${1:-2}"; }

check=0
if [ "${1:-}" == --check ]; then check=1; shift; fi
engine="${1:-}"
[ -n "$engine" ] || usage 2
shift
case "$engine" in docker | podman | containerd) ;; -h | --help) usage 0 ;; *) echo "$prog: unknown engine '$engine'" >&2; usage 2 ;; esac

binary=""
tier=""
config=""
main_config="/etc/containerd/config.toml"
do_import=1
print=0
wrapper_dir="/usr/local/libexec/agentcage"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --binary=*) binary="${1#*=}"; shift ;;
        --tier) tier="$2"; shift 2 ;;
        --tier=*) tier="${1#*=}"; shift ;;
        --config) config="$2"; shift 2 ;;
        --config=*) config="${1#*=}"; shift ;;
        --main-config) main_config="$2"; shift 2 ;;
        --no-import) do_import=0; shift ;;
        --wrapper-dir) wrapper_dir="$2"; shift 2 ;;
        --print) print=1; shift ;;
        --check) check=1; shift ;;
        -h | --help) usage 0 ;;
        *) echo "$prog: unknown option '$1'" >&2; usage 2 ;;
    esac
done

if [ -z "$binary" ]; then
    binary="$(command -v agentcage 2>/dev/null || echo /usr/local/bin/agentcage)"
fi
case "$binary" in /*) ;; *) binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")" ;; esac
[ -x "$binary" ] || [ "$check" == 1 ] || echo "$prog: warning: $binary is not an executable (yet)" >&2

TIER_NAMES=(read write network irreversible)
# tier_number N|NAME: prints the tier's number or fails
tier_number() {
    local i
    for i in 0 1 2 3; do
        if [ "$1" == "$i" ] || [ "$1" == "${TIER_NAMES[$i]}" ]; then echo "$i"; return 0; fi
    done
    echo "$prog: unknown tier '$1' (0|read 1|write 2|network 3|irreversible)" >&2
    exit 2
}
[ -z "$tier" ] || tier="$(tier_number "$tier")"

# emit FILE: writes stdin to FILE (or prints it with --print)
emit() {
    local file="$1"
    if [ "$print" == 1 ]; then
        echo "### $file"
        cat
        return 0
    fi
    mkdir -p "$(dirname "$file")"
    cat > "$file.tmp.$$"
    mv "$file.tmp.$$" "$file"
    echo "$prog: wrote $file" >&2
}

# tier_wrapper N: writes the wrapper that fixes the default tier; prints its path
tier_wrapper() {
    local n="$1" path="$wrapper_dir/agentcage-${TIER_NAMES[$1]}"
    printf '#!/bin/sh\nexec %q --default-tier %s "$@"\n' "$binary" "$n" | emit "$path" >&2
    [ "$print" == 1 ] || chmod 755 "$path"
    echo "$path"
}

# seen ENGINE PATH WHAT: the engine runs PATH for the runtime; 0 when that
# is --binary (or the wrapper of --tier)
seen() {
    local want="$binary"
    [ -z "$tier" ] || want="$wrapper_dir/agentcage-${TIER_NAMES[$tier]}"
    if [ "$2" == "$want" ]; then
        echo "$1: sees agentcage: $3 runs $2"
        return 0
    fi
    echo "$1: $3 runs $2, not $want"
    return 1
}

check_docker() {
    local out path names
    command -v docker > /dev/null || { echo "docker: no docker client on PATH"; return 1; }
    out="$(docker info --format '{{json .Runtimes}}' 2>&1)" || { echo "docker: cannot ask dockerd: $(echo "$out" | tail -1)"; return 1; }
    names="$(jq -r 'keys | join(" ")' <<< "$out" 2>/dev/null || true)"
    path="$(jq -r '.agentcage.path // empty' <<< "$out" 2>/dev/null || true)"
    if [ -z "$path" ]; then
        echo "docker: dockerd has no runtime agentcage (it has: $names); run \`agentcage install docker\` and restart (or SIGHUP) dockerd"
        return 1
    fi
    seen docker "$path" "the runtime agentcage (dockerd's runtimes: $names)"
}

check_podman() {
    local out rc tmp name=agentcage
    command -v podman > /dev/null || { echo "podman: not installed"; return 1; }
    [ -z "$tier" ] || name="agentcage-${TIER_NAMES[$tier]}"
    # a throwaway store: asking must not create or touch the user's own
    # (in /tmp: podman refuses a run root longer than 50 characters)
    tmp="$(mktemp -d /tmp/agentcage-check-podman.XXXXXX)"
    rc=0
    out="$(podman --root "$tmp/root" --runroot "$tmp/run" --tmpdir "$tmp/tmp" --storage-driver vfs \
        --runtime "$name" info --format '{{.Host.OCIRuntime.Path}}' 2>&1)" || rc=$?
    rm -rf "$tmp"
    if [ $rc != 0 ]; then
        echo "podman: podman does not see the runtime $name: $(echo "$out" | tail -1)"
        return 1
    fi
    seen podman "$out" "the runtime $name (podman info)"
}

check_containerd() {
    local out bin handler=agentcage
    command -v containerd > /dev/null || { echo "containerd: not installed"; return 1; }
    [ -z "$tier" ] || handler="agentcage-${TIER_NAMES[$tier]}"
    out="$(containerd --config "$main_config" config dump 2>&1)" || { echo "containerd: config dump of $main_config failed: $(echo "$out" | tail -1)"; return 1; }
    bin="$(awk -v t="[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.$handler.options]" '
        $0 ~ /^ *\[/ { inside = ($1 == t) } inside && $1 == "BinaryName" { gsub(/"/, "", $3); print $3; exit }' <<< "$out")"
    if [ -z "$bin" ]; then
        echo "containerd: $main_config (with its imports) has no CRI runtime handler $handler; run \`agentcage install containerd\`"
        return 1
    fi
    seen containerd "$bin" "the CRI runtime handler $handler (containerd config dump of $main_config; restart containerd to load a new one)"
}

if [ "$check" == 1 ]; then
    "check_$engine"
    exit
fi

case "$engine" in
docker)
    config="${config:-/etc/docker/daemon.json}"
    command -v jq > /dev/null || { echo "$prog: jq is needed to edit $config" >&2; exit 1; }
    current='{}'
    [ -s "$config" ] && current="$(cat "$config")"
    plain_args='[]'
    [ -z "$tier" ] || plain_args="[\"--default-tier\",\"$tier\"]"
    jq --arg bin "$binary" --argjson plain "$plain_args" '
        .runtimes = (.runtimes // {})
        | .runtimes.agentcage = ({path: $bin} + (if ($plain | length) > 0 then {runtimeArgs: $plain} else {} end))
        | .runtimes["agentcage-read"] = {path: $bin, runtimeArgs: ["--default-tier", "0"]}
        | .runtimes["agentcage-write"] = {path: $bin, runtimeArgs: ["--default-tier", "1"]}
        | .runtimes["agentcage-network"] = {path: $bin, runtimeArgs: ["--default-tier", "2"]}
        | .runtimes["agentcage-irreversible"] = {path: $bin, runtimeArgs: ["--default-tier", "3"]}
    ' <<< "$current" | emit "$config"
    [ "$print" == 1 ] || echo "$prog: restart dockerd, then: docker run --runtime agentcage-network IMAGE CMD" >&2
    ;;
podman)
    config="${config:-/etc/containers/containers.conf.d/50-agentcage.conf}"
    extra=""
    names='"agentcage"'
    if [ -n "$tier" ]; then
        w="$(tier_wrapper "$tier")"
        extra="agentcage-${TIER_NAMES[$tier]} = [\"$w\"]"
        names="$names, \"agentcage-${TIER_NAMES[$tier]}\""
    fi
    emit "$config" << EOF
# agentcage as a Podman OCI runtime: podman --runtime agentcage run ...
# pick a tier per container with --annotation io.agentcage.tier=0..3
[engine]
# runtimes that take --log FILE --log-format json (Podman's default list + agentcage)
runtime_supports_json = ["crun", "runc", "kata", "runsc", "youki", "krun", $names]

[engine.runtimes]
agentcage = ["$binary"]
$extra
EOF
    ;;
containerd)
    config="${config:-/etc/containerd/conf.d/agentcage.toml}"
    handler_bin="$binary"
    handler=agentcage
    if [ -n "$tier" ]; then
        handler_bin="$(tier_wrapper "$tier")"
        handler="agentcage-${TIER_NAMES[$tier]}"
    fi
    emit "$config" << EOF
# agentcage as a containerd CRI runtime handler (use with a RuntimeClass whose
# handler is "$handler"); pods choose a tier with the annotation
# io.agentcage.tier, which pod_annotations lets through to config.json.
# containerd 1.6 merges an imported file plugin by plugin: this file's CRI
# table replaces the one in config.toml, so it carries the runc handler too.
# If config.toml customises the CRI plugin, paste the tables below into it
# instead of importing this file.
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.$handler]
  runtime_type = "io.containerd.runc.v2"
  pod_annotations = ["io.agentcage.*"]
  container_annotations = ["io.agentcage.*"]

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.$handler.options]
  BinaryName = "$handler_bin"
  Root = "/run/agentcage/containerd"
  SystemdCgroup = false
EOF
    if [ "$print" == 0 ] && [ "$do_import" == 1 ]; then
        mkdir -p "$(dirname "$main_config")"
        if [ ! -s "$main_config" ]; then
            printf 'version = 2\nimports = ["%s"]\n' "$config" > "$main_config"
            echo "$prog: wrote $main_config" >&2
        elif grep -qF "\"$config\"" "$main_config"; then
            :
        elif grep -qE '^imports *= *\[' "$main_config"; then
            sed -i -E "s|^imports *= *\[|imports = [\"$config\", |" "$main_config"
            echo "$prog: added $config to imports of $main_config" >&2
        else
            sed -i "1i imports = [\"$config\"]" "$main_config"
            echo "$prog: added imports of $config to $main_config" >&2
        fi
        echo "$prog: restart containerd, then apply integration/kubernetes/runtimeclass.yaml" >&2
    fi
    ;;
esac
