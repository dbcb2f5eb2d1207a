#!/bin/sh
# The README's first command ends here: build a busybox bundle and run it
# with agentcage, as a user would by hand.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
ac="$top/agentcage"
rootfs=$("$top/integration/rootfs.sh")
bundle=$(mktemp -d /tmp/agentcage-demo.XXXXXX)
trap 'rm -rf "$bundle"' EXIT
cd "$bundle"
ln -s "$rootfs" rootfs
"$ac" spec
# The default config runs an interactive sh on a terminal; the demo runs a
# short script instead, with no terminal, so it works from any shell or CI.
sed -i -e 's/"terminal": true/"terminal": false/' \
    -e 's|"sh"$|"sh", "-c", "echo \\"hello from $(hostname), pid $$ in its own pid namespace\\"; echo \\"network: $(ls /sys/class/net)\\"; echo \\"root filesystem: $(grep \\" / \\" /proc/mounts \| cut -d\\" \\" -f4 \| cut -d, -f1)\\"; exit 7"|' config.json
echo "+ agentcage run demo-$$"
set +e
"$ac" --root /run/agentcage run "demo-$$"
status=$?
set -e
echo "+ exit status: $status (the container's own)"
[ "$status" = 7 ]
