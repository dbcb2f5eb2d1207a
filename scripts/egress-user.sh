#!/bin/sh
# The system user the egress proxy's worker runs as (agentcage-egress): no
# home, no shell, no password, a group of its own. Made when missing, by
# `make install` and by the integration tests; kept afterwards (an account
# like the ones packages make). Must run as root.
set -e
name=${1:-agentcage-egress}
id "$name" >/dev/null 2>&1 && exit 0
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
    --comment "agentcage egress proxy" "$name"
