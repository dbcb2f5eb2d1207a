#!/bin/bash
# Checks the Kubernetes integration files: the shipped CRI snippet is what
# `scripts/install-engine.sh containerd` writes, containerd parses it (config
# dump shows the agentcage handler with its options and pod_annotations),
# and the containerd started by integration/engines/setup.sh (which imports
# the snippet) has its CRI plugin loaded.  Prints ok/FAIL/skip lines.
set -u
K8S_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$K8S_DIR/../engines/common.sh"
failed=0
pass() { echo "ok - kubernetes/$1"; }
flunk() { echo "FAIL - kubernetes/$1: $2"; failed=1; }

# 1. the example snippet is the installer's output
want="$("$REPO_DIR/scripts/install-engine.sh" containerd --print --binary /usr/local/bin/agentcage 2> /dev/null | tail -n +2)"
if [ "$want" == "$(cat "$K8S_DIR/containerd-agentcage.toml")" ]; then
    pass snippet-matches-installer
else
    flunk snippet-matches-installer "containerd-agentcage.toml differs from install-engine.sh containerd --print"
fi

# 2. containerd parses a config importing it
tmp="$(mktemp -d /tmp/agentcage-k8s.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
printf 'version = 2\nimports = ["%s"]\nroot = "%s/root"\nstate = "%s/state"\n' \
    "$K8S_DIR/containerd-agentcage.toml" "$tmp" "$tmp" > "$tmp/config.toml"
dump="$(containerd --config "$tmp/config.toml" config dump 2>&1)"
handler="$(printf '%s\n' "$dump" | sed -n '/runtimes.agentcage\]/,/^ *\[plugins.*runtimes\.[a-z]*\]$/p')"
if printf '%s\n' "$handler" | grep -q 'runtime_type = "io.containerd.runc.v2"' &&
    printf '%s\n' "$handler" | grep -q 'pod_annotations = \["io.agentcage.\*"\]' &&
    printf '%s\n' "$dump" | grep -q 'BinaryName = "/usr/local/bin/agentcage"' &&
    printf '%s\n' "$dump" | grep -q 'Root = "/run/agentcage/containerd"'; then
    pass containerd-config-dump
else
    flunk containerd-config-dump "handler not in the dump: $(printf '%s\n' "$dump" | grep -i -m3 -E 'error|agentcage' | tr '\n' ' ')"
fi

# 3. the running test containerd (with the snippet imported) has CRI up
if C version > /dev/null 2>&1; then
    cri="$(C plugins ls 2> /dev/null | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" {print $NF}')"
    if [ "$cri" == ok ]; then
        pass containerd-cri-plugin-loaded
    else
        flunk containerd-cri-plugin-loaded "cri plugin status '$cri'"
    fi
else
    echo "skip - kubernetes/containerd-cri-plugin-loaded: no test containerd (run integration/engines/setup.sh)"
fi

# 4. the manifests name the same handler and annotation
if grep -q '^handler: agentcage$' "$K8S_DIR/runtimeclass.yaml" &&
    grep -q 'runtimeClassName: agentcage' "$K8S_DIR/pod-tier2.yaml" &&
    grep -q 'io.agentcage.tier: "2"' "$K8S_DIR/pod-tier2.yaml" &&
    grep -q 'runtimeClassName: agentcage' "$K8S_DIR/sandbox-agent.yaml" &&
    grep -q 'io.agentcage.tier: "2"' "$K8S_DIR/sandbox-agent.yaml"; then
    pass manifests
else
    flunk manifests "runtimeclass.yaml / pod-tier2.yaml / sandbox-agent.yaml do not agree on handler/annotation"
fi
exit $failed
