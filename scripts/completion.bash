# bash completion for agentcage (installed as
# $(DATADIR)/bash-completion/completions/agentcage)
_agentcage() {
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    }
    local commands="create start run state list kill delete exec ps pause resume update events spec features
        policy audit approve deny pending check install"
    local globals="--root --log --log-format --debug --systemd-cgroup --cgroup-manager --rootless --rootless-limits
        --default-tier --allowed-tiers --max-memory --max-cpus --max-pids --max-timeout --max-workspace --audit-log
        --approvals-dir --helpers-dir --hooks-dir --allowed-hooks --bind-roots --userns-range --env-allow
        --home-dot-allow --home-mounts --bind-changes --kernel-for-tier --runsc --runsc-platform --version --help"
    local root=/run/agentcage i verb=""
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            --root) root="${words[i+1]}" ;;
            -*) ;;
            *) case "${words[i-1]}" in
                   --root|--log|--log-format|--cgroup-manager|--rootless|--rootless-limits|--default-tier|--allowed-tiers|\
                   --max-*|--audit-log|--approvals-dir|--helpers-dir|--hooks-dir|--allowed-hooks|--bind-roots|\
                   --userns-range|--env-allow|--home-dot-allow|--home-mounts|--bind-changes|--kernel-for-tier|\
                   --runsc|--runsc-platform) ;;
                   *) verb="${words[i]}"; break ;;
               esac ;;
        esac
    done
    case "$prev" in
        --root|--approvals-dir|--helpers-dir|--hooks-dir|--bundle|-b) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --log|--audit-log|--pid-file|--config|--runsc) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --runsc-platform) COMPREPLY=($(compgen -W "ptrace systrap kvm" -- "$cur")); return ;;
        --kernel-for-tier) COMPREPLY=($(compgen -W "2:gvisor 3:gvisor 2:gvisor,3:gvisor" -- "$cur")); return ;;
        --log-format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return ;;
        --cgroup-manager) COMPREPLY=($(compgen -W "cgroupfs systemd disabled" -- "$cur")); return ;;
        --rootless) COMPREPLY=($(compgen -W "true false auto" -- "$cur")); return ;;
        --rootless-limits) COMPREPLY=($(compgen -W "refuse best-effort" -- "$cur")); return ;;
        --bind-changes) COMPREPLY=($(compgen -W "copy-back review direct" -- "$cur")); return ;;
        --default-tier|--tier) COMPREPLY=($(compgen -W "0 1 2 3 read write network irreversible" -- "$cur")); return ;;
    esac
    if [ -z "$verb" ]; then
        if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$globals" -- "$cur"))
        else COMPREPLY=($(compgen -W "$commands" -- "$cur")); fi
        return
    fi
    case "$verb" in
        install) COMPREPLY=($(compgen -W "docker podman containerd --check --tier --config --print" -- "$cur")) ;;
        check) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
        policy) COMPREPLY=($(compgen -W "show --tier --bundle" -- "$cur")) ;;
        audit) COMPREPLY=($(compgen -W "verify show --json --log" -- "$cur")) ;;
        approve) COMPREPLY=($(compgen -W "--for --digest --bundle --list --dir --egress" -- "$cur")) ;;
        deny) COMPREPLY=($(compgen -W "--egress" -- "$cur")) ;;
        pending) COMPREPLY=($(compgen -W "--json --dir" -- "$cur")) ;;
        spec) COMPREPLY=($(compgen -W "--bundle --rootless" -- "$cur")) ;;
        create|run) if [[ "$cur" == -* ]]; then
                COMPREPLY=($(compgen -W "--bundle --pid-file --console-socket --no-pivot --no-new-keyring --preserve-fds --detach" -- "$cur"))
            fi ;;
        *) # a container id
            COMPREPLY=($(compgen -W "$(ls "$root" 2>/dev/null)" -- "$cur")) ;;
    esac
}
complete -F _agentcage agentcage
