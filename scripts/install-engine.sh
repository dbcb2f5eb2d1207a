#!/bin/bash
# install-engine.sh: registers agentcage as an OCI runtime with a container
# engine, the way runc/crun/kata are registered.
#
#   scripts/install-engine.sh docker|podman|containerd [options]
#
# Options:
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

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit "${1:-2}"; }

engine="${1:-}"
[ -n "$engine" ] || usage 2
shift
case "$engine" in docker | podman | containerd) ;; -h | --help) usage 0 ;; *) echo "install-engine.sh: unknown engine '$engine'" >&2; usage 2 ;; esac

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
        -h | --help) usage 0 ;;
        *) echo "install-engine.sh: unknown option '$1'" >&2; usage 2 ;;
    esac
done

if [ -z "$binary" ]; then
    binary="$(command -v agentcage 2>/dev/null || echo /usr/local/bin/agentcage)"
fi
case "$binary" in /*) ;; *) binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")" ;; esac
[ -x "$binary" ] || echo "install-engine.sh: warning: $binary is not an executable (yet)" >&2

TIER_NAMES=(read write network irreversible)
# tier_number N|NAME: prints the tier's number or fails
tier_number() {
    local i
    for i in 0 1 2 3; do
        if [ "$1" == "$i" ] || [ "$1" == "${TIER_NAMES[$i]}" ]; then echo "$i"; return 0; fi
    done
    echo "install-engine.sh: unknown tier '$1' (0|read 1|write 2|network 3|irreversible)" >&2
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
    echo "install-engine.sh: wrote $file" >&2
}

# tier_wrapper N: writes the wrapper that fixes the default tier; prints its path
tier_wrapper() {
    local n="$1" path="$wrapper_dir/agentcage-${TIER_NAMES[$1]}"
    printf '#!/bin/sh\nexec %q --default-tier %s "$@"\n' "$binary" "$n" | emit "$path" >&2
    [ "$print" == 1 ] || chmod 755 "$path"
    echo "$path"
}

case "$engine" in
docker)
    config="${config:-/etc/docker/daemon.json}"
    command -v jq > /dev/null || { echo "install-engine.sh: jq is needed to edit $config" >&2; exit 1; }
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
    [ "$print" == 1 ] || echo "install-engine.sh: restart dockerd, then: docker run --runtime agentcage-network IMAGE CMD" >&2
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
            echo "install-engine.sh: wrote $main_config" >&2
        elif grep -qF "\"$config\"" "$main_config"; then
            :
        elif grep -qE '^imports *= *\[' "$main_config"; then
            sed -i -E "s|^imports *= *\[|imports = [\"$config\", |" "$main_config"
            echo "install-engine.sh: added $config to imports of $main_config" >&2
        else
            sed -i "1i imports = [\"$config\"]" "$main_config"
            echo "install-engine.sh: added imports of $config to $main_config" >&2
        fi
        echo "install-engine.sh: restart containerd, then apply integration/kubernetes/runtimeclass.yaml" >&2
    fi
    ;;
esac
