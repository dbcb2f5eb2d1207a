/* agentcage: the CLI. Global flags first (as the engines pass them), then
 * one verb from the table below. Errors are printed in one place: here. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hooks/policy_hooks.h"
#include "runtime/cli/commands.h"
#include "runtime/linux/rootless.h"
#include "runtime/util/build_info.h"
#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"

static COMMAND(unsupported)
{
    return ac_error(err, 0, "%s is not supported by agentcage", argv[0]);
}

/* The value of --NAME VALUE or --NAME=VALUE among argv (NULL: absent). */
static const char *flag_value(int argc, char **argv, const char *name)
{
    size_t len = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, len) != 0)
            continue;
        if (a[2 + len] == '=')
            return a + 3 + len;
        if (a[2 + len] == '\0' && i + 1 < argc)
            return argv[i + 1];
    }
    return NULL;
}

/* checkpoint: agentcage has no CRIU support; a wrong --parent-path is
 * reported first, as runc checks it before it calls CRIU (the parent
 * image is a folder relative to --image-path, default ./checkpoint). */
static COMMAND(checkpoint)
{
    const char *parent = flag_value(argc, argv, "parent-path");
    if (parent && *parent) {
        if (parent[0] == '/')
            return ac_error(err, 0, "checkpoint: --parent-path must be relative (to --image-path), not `%s`", parent);
        const char *image = flag_value(argc, argv, "image-path");
        cleanup_free char *dir = xasprintf("%s/%s", image && *image ? image : "checkpoint", parent);
        struct stat st;
        if (stat(dir, &st) < 0)
            return ac_error(err, errno, "checkpoint: invalid --parent-path `%s`", dir);
        if (!S_ISDIR(st.st_mode))
            return ac_error(err, 0, "checkpoint: --parent-path `%s` is not a folder", dir);
    }
    return cmd_unsupported(g, argc, argv, err);
}

struct command {
    const char *name;
    int (*fn)(struct global_opts *, int, char **, ac_error_t *);
    const char *help;
    /* how the verb relates to runc's verb of the same name, for its help
     * (NULL: agentcage's own verb) */
    const char *runc;
};

#define DROP_IN "drop-in for"
#define NO_CRIU "no CRIU support, unlike"

static const struct command commands[] = {
    {"create", cmd_create, "create a container (it waits for start)", DROP_IN},
    {"start", cmd_start, "start a created container", DROP_IN},
    {"run", cmd_run, "create and start a container, wait for it unless --detach", DROP_IN},
    {"state", cmd_state, "print the state of a container", DROP_IN},
    {"list", cmd_list, "list containers", DROP_IN},
    {"kill", cmd_kill, "send a signal to a container", DROP_IN},
    {"delete", cmd_delete, "delete a container", DROP_IN},
    {"exec", cmd_exec, "run a new process in a container", DROP_IN},
    {"ps", cmd_ps, "list the processes of a container", DROP_IN},
    {"pause", cmd_pause, "freeze a container", DROP_IN},
    {"resume", cmd_resume, "thaw a paused container", DROP_IN},
    {"update", cmd_update, "change a container's resource limits", DROP_IN},
    {"events", cmd_events, "print a container's resource statistics", DROP_IN},
    {"spec", cmd_spec, "write a default config.json", DROP_IN},
    {"features", cmd_features, "print the runtime-spec features document", DROP_IN},
    {"policy", cmd_policy, "show the effective config and decisions of a tier (policy show)"},
    {"audit", cmd_audit, "audit verify FILE: check the audit trail's hash chain; audit show ID: one container's"},
    {"approve", cmd_approve, "approve NAME [--for 10m]: let a tier-3 container be created once; approve ID --egress HOST"},
    {"deny", cmd_deny, "deny ID --egress HOST[:PORT]: refuse the egress requests held for HOST"},
    {"pending", cmd_pending, "the egress requests proxies hold for the operator (io.agentcage.egress-ask)"},
    {"credentials-expire", cmd_credentials_expire, NULL}, /* started by start, not for users */
    {"check", cmd_check, "report what this host can enforce: cgroups, Landlock, seccomp, namespaces, tiers"},
    {"install", cmd_install, "install docker|podman|containerd [--check]: register agentcage with an engine"},
    {"checkpoint", cmd_checkpoint, "not supported; --parent-path is checked", NO_CRIU},
    {"restore", cmd_unsupported, "not supported", NO_CRIU},
};

static void usage(FILE *f)
{
    fprintf(f, "NAME:\n"
               "   agentcage - " DROP_IN " \"runc - Open Container Initiative runtime\" that turns an autonomy-tier\n"
               "   annotation into a kernel-enforced cage\n\n"
               "usage: agentcage [global flags] COMMAND [flags] [ID] [args]\n\n"
               "Global flags:\n"
               "  --root DIR            state directory (default /run/agentcage)\n"
               "  --log FILE            log file (default stderr)\n"
               "  --log-format text|json\n"
               "  --debug               log debug lines\n"
               "  --systemd-cgroup      read cgroupsPath as slice:prefix:name\n"
               "  --cgroup-manager cgroupfs|systemd|disabled\n"
               "  --rootless true|false|auto\n"
               "  --rootless-limits refuse|best-effort\n"
               "                        rootless without delegated cgroups: refuse tiers with limits (default)\n"
               "                        or run them with a warning that the limits are not enforced\n"
               "Tier settings (operator side; also in /etc/agentcage/agentcage.conf):\n"
               "  --default-tier N      tier for containers without io.agentcage.tier (default: none, plain OCI)\n"
               "  --allowed-tiers LIST  tiers an annotation may choose, e.g. 0,1\n"
               "  --max-memory SIZE, --max-cpus N, --max-pids N, --max-timeout DURATION, --max-workspace SIZE\n"
               "  --audit-log FILE, --approvals-dir DIR\n"
               "  --helpers-dir DIR     where agentcage-watchdog, -egress, -audit live (default: beside this\n"
               "                        binary when they are there, else %s)\n"
               "  --hooks-dir DIR       where the tier's hook program agentcage-egress lives (over --helpers-dir)\n"
               "  --allowed-hooks LIST  hook programs a bundle may run at a tier (colon-separated; default none)\n"
               "  --bind-roots LIST     host folders a tiered bind mount may come from (default\n"
               "                        /home:/srv:/tmp:/var/tmp:/mnt:/media, besides the bundle)\n"
               "  --userns-range START:SIZE  host ids of tiered containers' user namespaces, 65536 each\n"
               "                        (default 1000000000:1073741824)\n"
               "  --env-allow LIST      environment names (or PREFIX_*, NAME=raw) tiers keep besides the safe set\n"
               "  --home-dot-allow LIST dot entries a mounted home keeps visible (default none)\n"
               "  --home-mounts LIST    bind destinations or sources that are homes too (besides /root, /home/NAME)\n"
               "  --bind-changes copy-back|review|direct  writable binds at a tier: through an overlay capped at\n"
               "                        the workspace size, copied back at delete (default) or kept for review; or direct\n"
               "  --kernel-for-tier LIST  tiers whose containers run under gVisor, e.g. 3:gvisor or 2:gvisor,3:gvisor\n"
               "                        (default none: the host's kernel; io.agentcage.kernel=gvisor asks per container)\n"
               "  --runsc PATH          gVisor's runtime (default /usr/bin/runsc)\n"
               "  --runsc-platform ptrace|systrap|kvm  how gVisor traps the workload's system calls (default ptrace)\n"
               "  --version, --help\n\nCommands:\n", helpers_compiled_dir());
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].help)
            fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
}

static void print_version(void)
{
    printf("agentcage version %s\ncommit: %s\nspec: 1.2.0\n", build_version(), build_commit());
    struct build_lib libs[BUILD_LIB_COUNT];
    build_libs(libs);
    for (int i = 0; i < BUILD_LIB_COUNT; i++)
        printf("%s: %s%s\n", libs[i].name, libs[i].version, libs[i].loaded ? "" : " (built with)");
}

enum { OPT_ROOT = 256, OPT_LOG, OPT_LOG_FORMAT, OPT_DEBUG, OPT_SYSTEMD, OPT_ROOTLESS, OPT_CGMANAGER, OPT_VERSION,
       OPT_ROOTLESS_LIMITS, OPT_TIER_FLAG };

/* Operator settings for tiers, as flags (daemon.json runtimeArgs,
 * containerd options, containers.conf) over /etc/agentcage/agentcage.conf. */
static const char *const tier_flags[] = {"default-tier", "allowed-tiers", "max-memory", "max-cpus", "max-pids",
                                         "max-timeout", "max-workspace", "audit-log", "approvals-dir", "hooks-dir",
                                         "allowed-hooks", "bind-roots", "userns-range", "env-allow",
                                         "home-dot-allow", "home-mounts", "bind-changes", "helpers-dir",
                                         "kernel-for-tier", "runsc", "runsc-platform"};
#define N_TIER_FLAGS (sizeof(tier_flags) / sizeof(tier_flags[0]))

static int load_tier_settings(struct tier_operator *op, const char **values, bool rootless, ac_error_t *err)
{
    tier_operator_init(op);
    const char *conf = getenv("AGENTCAGE_CONF");
    if (tier_operator_load_file(op, conf ? conf : "/etc/agentcage/agentcage.conf", rootless, err) < 0)
        return -1;
    for (size_t i = 0; i < N_TIER_FLAGS; i++)
        if (values[i] && tier_operator_set(op, tier_flags[i], values[i], err) < 0)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct global_opts g = {.root = "/run/agentcage", .log_format = AC_LOG_TEXT};
    const char *log_format = NULL;
    bool root_given = false;
    const char *tier_values[N_TIER_FLAGS] = {0};
    static const struct option opts[] = {
        {"default-tier", required_argument, NULL, OPT_TIER_FLAG + 0},
        {"allowed-tiers", required_argument, NULL, OPT_TIER_FLAG + 1},
        {"max-memory", required_argument, NULL, OPT_TIER_FLAG + 2},
        {"max-cpus", required_argument, NULL, OPT_TIER_FLAG + 3},
        {"max-pids", required_argument, NULL, OPT_TIER_FLAG + 4},
        {"max-timeout", required_argument, NULL, OPT_TIER_FLAG + 5},
        {"max-workspace", required_argument, NULL, OPT_TIER_FLAG + 6},
        {"audit-log", required_argument, NULL, OPT_TIER_FLAG + 7},
        {"approvals-dir", required_argument, NULL, OPT_TIER_FLAG + 8},
        {"hooks-dir", required_argument, NULL, OPT_TIER_FLAG + 9},
        {"allowed-hooks", required_argument, NULL, OPT_TIER_FLAG + 10},
        {"bind-roots", required_argument, NULL, OPT_TIER_FLAG + 11},
        {"userns-range", required_argument, NULL, OPT_TIER_FLAG + 12},
        {"env-allow", required_argument, NULL, OPT_TIER_FLAG + 13},
        {"home-dot-allow", required_argument, NULL, OPT_TIER_FLAG + 14},
        {"home-mounts", required_argument, NULL, OPT_TIER_FLAG + 15},
        {"bind-changes", required_argument, NULL, OPT_TIER_FLAG + 16},
        {"helpers-dir", required_argument, NULL, OPT_TIER_FLAG + 17},
        {"kernel-for-tier", required_argument, NULL, OPT_TIER_FLAG + 18},
        {"runsc", required_argument, NULL, OPT_TIER_FLAG + 19},
        {"runsc-platform", required_argument, NULL, OPT_TIER_FLAG + 20},
        {"root", required_argument, NULL, OPT_ROOT},
        {"log", required_argument, NULL, OPT_LOG},
        {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
        {"debug", no_argument, NULL, OPT_DEBUG},
        {"systemd-cgroup", no_argument, NULL, OPT_SYSTEMD},
        {"rootless", required_argument, NULL, OPT_ROOTLESS},
        {"rootless-limits", required_argument, NULL, OPT_ROOTLESS_LIMITS},
        {"cgroup-manager", required_argument, NULL, OPT_CGMANAGER},
        {"version", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ac_error_t err = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_ROOT: g.root = optarg; root_given = true; break;
        case OPT_LOG: g.log = optarg; break;
        case OPT_LOG_FORMAT: log_format = optarg; break;
        case OPT_DEBUG: g.debug = true; break;
        case OPT_SYSTEMD: g.systemd_cgroup = true; break;
        case OPT_ROOTLESS: g.rootless = optarg; break;
        case OPT_ROOTLESS_LIMITS:
            if (rootless_limits_parse(optarg, &g.rootless_best_effort, &err) < 0)
                goto fail;
            break;
        case OPT_CGMANAGER:
            if (strcmp(optarg, "systemd") == 0)
                g.systemd_cgroup = true;
            else if (strcmp(optarg, "disabled") == 0)
                g.cgroups_disabled = true;
            else if (strcmp(optarg, "cgroupfs") != 0) {
                ac_error(&err, 0, "--cgroup-manager: expected cgroupfs, systemd or disabled, got `%s`", optarg);
                goto fail;
            }
            break;
        case 'v': print_version(); return 0;
        case OPT_TIER_FLAG + 0 ... OPT_TIER_FLAG + (int)N_TIER_FLAGS - 1:
            tier_values[c - OPT_TIER_FLAG] = optarg;
            break;
        case 'h': usage(stdout); return 0;
        default:
            ac_error(&err, 0, "unknown global flag `%s` (see --help)", argv[optind - 1]);
            goto fail;
        }
    }
    if (log_format && strcmp(log_format, "json") == 0)
        g.log_format = AC_LOG_JSON;
    else if (log_format && strcmp(log_format, "text") != 0) {
        ac_error(&err, 0, "--log-format: expected text or json, got `%s`", log_format);
        goto fail;
    }
    ac_log_init(g.log, g.log_format, g.debug);
    if (rootless_detect(g.rootless, &g.is_rootless, &err) < 0)
        goto fail;
    if (load_tier_settings(&g.tier, tier_values, g.is_rootless, &err) < 0)
        goto fail;
    g.tier.rootless = g.is_rootless;
    /* Rootless: state, audit trail and approvals in the user's own
     * directories (the system ones are root's), unless given. */
    if (g.is_rootless && !root_given)
        g.root = rootless_state_root(); /* lives as long as the process */
    if (g.is_rootless && !tier_values[7] && strcmp(g.tier.audit_log, "/var/log/agentcage/audit.jsonl") == 0)
        g.tier.audit_log = rootless_audit_log();
    if (g.is_rootless && !tier_values[8] && strcmp(g.tier.approvals_dir, APPROVALS_DEFAULT_DIR) == 0)
        g.tier.approvals_dir = rootless_approvals_dir();
    if (optind >= argc) {
        usage(stderr);
        return 1;
    }
    if (g.systemd_cgroup && access("/run/systemd/system", F_OK) != 0)
        ac_debug("no systemd is running: --systemd-cgroup paths are mapped onto cgroupfs");
    /* A reader of our stdout may go away (engines close pipes): no SIGPIPE
     * death in the middle of a lifecycle step. */
    signal(SIGPIPE, SIG_IGN);
    const char *verb = argv[optind];
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(verb, commands[i].name) != 0)
            continue;
        int sub_argc = argc - optind;
        char **sub_argv = argv + optind;
        /* `VERB -h`: a line on the verb, exit 0 (as runc's help) */
        if (sub_argc > 1 && commands[i].help && (strcmp(sub_argv[1], "-h") == 0 || strcmp(sub_argv[1], "--help") == 0)) {
            printf("NAME:\n   agentcage %s - %s", verb, commands[i].help);
            if (commands[i].runc)
                printf(" (%s \"runc %s\")", commands[i].runc, verb);
            printf("\n\nusage: agentcage [global flags] %s [flags] [ID] [args]\n", verb);
            return 0;
        }
        optind = 0; /* full getopt reset for the verb's flags */
        int r = commands[i].fn(&g, sub_argc, sub_argv, &err);
        if (r < 0)
            goto fail;
        return r;
    }
    if (argc - optind > 1 && (strcmp(argv[optind + 1], "-h") == 0 || strcmp(argv[optind + 1], "--help") == 0))
        ac_error(&err, 0, "No help topic for '%s': unknown command (see --help)", verb);
    else
        ac_error(&err, 0, "unknown command `%s` (see --help)", verb);
fail:
    if (!g.log)
        ac_log_init(NULL, g.log_format, g.debug);
    ac_error_report(&err);
    return g.error_status ? g.error_status : 1;
}
