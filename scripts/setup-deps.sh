#!/bin/sh
# Install the Debian packages agentcage needs to build and test, when missing;
# jq writes Docker's daemon.json (agentcage install, make install's snippets);
# more package names as arguments (`make deb`: debhelper dpkg-dev).
set -e
need=""
for p in gcc libc6-dev make pkg-config libseccomp-dev libyajl-dev libcap-dev libidn2-dev libunistring-dev busybox-static jq "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "agentcage: missing Debian packages:$need (run as root to install them)" >&2
    exit 1
fi
echo "agentcage: installing$need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $need >/dev/null
