/* check [--json]: the doctor. What this host gives the runtime (cgroup
 * layout and controllers, Landlock, seccomp, namespaces, user namespaces,
 * idmapped mounts of / and of /tmp when that is another filesystem, the
 * helpers, the approvals directory), and for each tier whether everything
 * it promises can be enforced here, and if not, what is missing. Every finding is a real attempt (host_probe.h); nothing on the
 * host is changed. Exit status 0 when every tier is enforceable, 1 when
 * one is not. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/linux/host_probe.h"
#include "runtime/linux/kernel_audit.h"
#include "runtime/linux/landlock.h"
#include "runtime/linux/rootless.h"
#include "runtime/util/build_info.h"
#include "runtime/util/helpers.h"
#include "runtime/util/utils.h"

/* What a tier needs: every tier (T_ALL), or from tier 2 on (T_NET), or only
 * tier 3 (T_GATE); 0 for what no tier needs (reported only). */
enum { T_NONE = 0, T_ALL = 0xf, T_NET = 0xc, T_GATE = 0x8 };

struct finding {
    const char *name;
    struct probe p;
    unsigned tiers; /* bit n: tier n needs it */
};

#define MAX_FINDINGS 20
struct report {
    struct finding f[MAX_FINDINGS];
    size_t n;
};

static void add(struct report *r, const char *name, struct probe p, unsigned tiers)
{
    if (r->n < MAX_FINDINGS)
        r->f[r->n++] = (struct finding){.name = name, .p = p, .tiers = tiers};
    else
        probe_release(&p);
}

static struct probe yes(char *detail)
{
    return (struct probe){.ok = true, .detail = detail};
}

static struct probe no(char *detail)
{
    return (struct probe){.ok = false, .detail = detail};
}

static const char *mode_name(enum cgroup_mode m)
{
    return m == CGROUP_MODE_V2 ? "v2" : m == CGROUP_MODE_HYBRID ? "hybrid" : "v1";
}

/* The controllers a tier's limits use: memory, cpu, pids. Rootless they
 * count only where the user's cgroup is delegated. */
static struct probe tier_controllers(const struct global_opts *g)
{
    static const char *const needed[] = {"memory", "cpu", "pids"};
    char *missing = NULL;
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        if (cgroup_controller_where(needed[i]))
            continue;
        char *old = missing;
        missing = old ? xasprintf("%s, %s", old, needed[i]) : xstrdup(needed[i]);
        free(old);
    }
    if (missing) {
        char *d = xasprintf("no %s controller: the tiers' limits cannot be set", missing);
        free(missing);
        return no(d);
    }
    if (g->is_rootless) {
        cleanup_free char *why = NULL;
        if (!rootless_cgroups_delegated(&why))
            return no(xasprintf("rootless: %s; create refuses a tier unless --rootless-limits best-effort", why));
        return yes(xstrdup("memory, cpu, pids in the user's delegated cgroup"));
    }
    return yes(xstrdup("memory, cpu, pids"));
}

static struct probe cgroup_layout(void)
{
    static const char *const shown[] = {"memory", "cpu", "pids", "freezer", "devices", "cpuset", "blkio", "hugetlb"};
    enum cgroup_mode m = cgroup_host_mode();
    char *d = xasprintf("%s", mode_name(m));
    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
        const char *where = cgroup_controller_where(shown[i]);
        char *old = d;
        d = xasprintf("%s%s %s:%s", old, i == 0 ? ";" : "", shown[i], where ? where : "none");
        free(old);
    }
    const char *v2 = cgroup_v2_mount();
    if (v2) {
        char *old = d;
        d = xasprintf("%s; cgroup2 at %s", old, v2);
        free(old);
    }
    return yes(d);
}

static struct probe helper(const char *dir, const char *name)
{
    cleanup_free char *path = helper_path(dir, name);
    if (access(path, X_OK) == 0)
        return yes(xstrdup(path));
    return no(xasprintf("%s: %s", path, strerror(errno)));
}

/* The approvals directory: usable when it is absent (made on the first
 * refused create) or a directory only the runtime's user may write. */
static struct probe approvals(const struct global_opts *g)
{
    const char *dir = g->tier.approvals_dir;
    struct stat st;
    if (lstat(dir, &st) < 0) {
        if (errno == ENOENT)
            return yes(xasprintf("%s (absent: made on the first refused create)", dir));
        return no(xasprintf("%s: %s", dir, strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
        return no(xasprintf("%s: not a directory of uid %u that only it may write: no grant there counts", dir,
                            (unsigned)geteuid()));
    return yes(xstrdup(dir));
}

/* Whether the watchdog can count Landlock's refusals: the kernel reports
 * them (ABI 7) to its audit alone, and only while audit is enabled. The
 * multicast socket is joined and left, the state only read. */
static struct probe landlock_denials(const struct global_opts *g, int abi)
{
    if (abi < 7)
        return no(xasprintf("not counted: Landlock ABI %d reports no refusals (ABI 7, Linux 6.15, does)", abi));
    if (g->is_rootless)
        return no(xstrdup("not counted: reading the kernel's audit takes CAP_AUDIT_READ in the host's user namespace"));
    const char *why = kernel_audit_unreachable();
    if (why)
        return no(xasprintf("not counted: %s", why));
    ac_error_t e = NULL;
    int fd = kernel_audit_reader(&e);
    int on = fd < 0 ? -1 : kernel_audit_state(&e);
    if (fd >= 0)
        close(fd);
    if (on < 0) {
        cleanup_free char *msg = ac_error_string(e);
        ac_error_free(&e);
        return no(xasprintf("not counted: %s", msg));
    }
    if (on == 0 && g->tier.kernel_audit)
        return yes(xstrdup("counted: the kernel's audit is off; a tiered container's start turns it on "
                           "(kernel-audit = true)"));
    if (on == 0)
        return no(xstrdup("not counted: the kernel's audit is off, and Landlock reports refusals only while it is "
                          "on (auditctl -e 1, audit=1 at boot, or kernel-audit = true in agentcage.conf)"));
    return yes(xstrdup(on == 2 ? "counted: the kernel's audit is on (locked)" : "counted: the kernel's audit is on"));
}

static void probe_host(const struct global_opts *g, struct report *r)
{
    static const char *const tier_ns[] = {"mnt", "pid", "ipc", "uts", "net", "cgroup", NULL};
    static const char *const other_ns[] = {"user", "time", NULL};
    add(r, "cgroups", cgroup_layout(), T_NONE);
    add(r, "cgroup limits", tier_controllers(g), T_ALL);
    int abi = landlock_abi();
    add(r, "landlock", abi > 0 ? yes(xasprintf("ABI %d", abi)) : no(xstrdup("no Landlock (not built, or not in lsm=)")),
        T_ALL);
    add(r, "landlock denials", landlock_denials(g, abi), T_NONE);
    add(r, "seccomp filters", probe_seccomp_filter(), T_ALL);
    add(r, "seccomp notify", probe_seccomp_notify(), T_NONE);
    add(r, "namespaces", probe_namespaces(tier_ns), T_ALL);
    add(r, "other namespaces", probe_namespaces(other_ns), T_NONE);
    /* With host root a tier makes the container's user namespace and
     * idmaps its directory bind mounts (container/create.c); rootless, the
     * user namespace is the engine's and nothing is idmapped. */
    add(r, "user namespaces", probe_user_namespaces(), g->is_rootless ? T_NONE : T_ALL);
    if (g->is_rootless) {
        add(r, "idmapped mounts", no(xstrdup("rootless: an idmapped mount needs host root")), T_NONE);
    } else {
        add(r, "idmapped mounts", probe_idmapped_mount("/"), T_ALL);
        struct stat root, tmp; /* /tmp too when it is another filesystem (often a tmpfs) */
        if (stat("/", &root) == 0 && stat("/tmp", &tmp) == 0 && root.st_dev != tmp.st_dev)
            add(r, "idmapped mounts /tmp", probe_idmapped_mount("/tmp"), T_NONE);
    }
    add(r, "watchdog", helper(g->tier.helpers_dir, "agentcage-watchdog"), T_ALL);
    add(r, "egress proxy", helper(tier_hooks_dir(&g->tier), "agentcage-egress"), T_NET);
    add(r, "audit hook", helper(g->tier.helpers_dir, "agentcage-audit"), T_NONE);
    add(r, "approvals", approvals(g), T_GATE);
}

static const char *const tier_names[TIER_COUNT] = {"read", "write", "network", "irreversible"};

/* "landlock, watchdog": what tier t needs and lacks; NULL when nothing. */
static char *tier_missing(const struct report *r, int t)
{
    char *missing = NULL;
    for (size_t i = 0; i < r->n; i++) {
        if (!(r->f[i].tiers & (1u << t)) || r->f[i].p.ok)
            continue;
        char *old = missing;
        missing = old ? xasprintf("%s, %s", old, r->f[i].name) : xstrdup(r->f[i].name);
        free(old);
    }
    return missing;
}

static int print_text(const struct global_opts *g, const struct report *r)
{
    struct utsname u;
    uname(&u);
    printf("agentcage %s (commit %s), kernel %s %s, %s\n", build_version(), build_commit(), u.release, u.machine,
           g->is_rootless ? "rootless" : "root");
    printf("helpers: %s\n", g->tier.helpers_dir ? g->tier.helpers_dir : helpers_default_dir());
    for (size_t i = 0; i < r->n; i++)
        printf("%s: %s - %s\n", r->f[i].name, r->f[i].p.ok ? "yes" : "no", r->f[i].p.detail);
    bool all = true;
    for (int t = 0; t < TIER_COUNT; t++) {
        cleanup_free char *missing = tier_missing(r, t);
        if (missing)
            printf("tier %d (%s): not fully enforceable here: no %s\n", t, tier_names[t], missing);
        else
            printf("tier %d (%s): enforceable\n", t, tier_names[t]);
        all &= missing == NULL;
    }
    char *every = NULL;
    for (size_t i = 0; i < r->n; i++) {
        if (r->f[i].tiers == T_NONE || r->f[i].p.ok)
            continue;
        char *old = every;
        every = old ? xasprintf("%s; %s: %s", old, r->f[i].name, r->f[i].p.detail)
                    : xasprintf("%s: %s", r->f[i].name, r->f[i].p.detail);
        free(old);
    }
    printf("missing: %s\n", every ? every : "nothing");
    free(every);
    return all ? 0 : 1;
}

static void gen_str(yajl_gen gen, const char *s)
{
    yajl_gen_string(gen, (const unsigned char *)s, strlen(s));
}

static int print_json(const struct global_opts *g, const struct report *r)
{
    yajl_gen gen = yajl_gen_alloc(NULL);
    yajl_gen_config(gen, yajl_gen_beautify, 1);
    yajl_gen_map_open(gen);
    gen_str(gen, "version");
    gen_str(gen, build_version());
    gen_str(gen, "commit");
    gen_str(gen, build_commit());
    gen_str(gen, "rootless");
    yajl_gen_bool(gen, g->is_rootless);
    gen_str(gen, "helpersDir");
    gen_str(gen, g->tier.helpers_dir ? g->tier.helpers_dir : helpers_default_dir());
    gen_str(gen, "cgroupMode");
    gen_str(gen, mode_name(cgroup_host_mode()));
    gen_str(gen, "landlockABI");
    yajl_gen_integer(gen, landlock_abi());
    gen_str(gen, "checks");
    yajl_gen_map_open(gen);
    for (size_t i = 0; i < r->n; i++) {
        gen_str(gen, r->f[i].name);
        yajl_gen_map_open(gen);
        gen_str(gen, "ok");
        yajl_gen_bool(gen, r->f[i].p.ok);
        gen_str(gen, "detail");
        gen_str(gen, r->f[i].p.detail);
        yajl_gen_map_close(gen);
    }
    yajl_gen_map_close(gen);
    gen_str(gen, "tiers");
    yajl_gen_array_open(gen);
    bool all = true;
    for (int t = 0; t < TIER_COUNT; t++) {
        yajl_gen_map_open(gen);
        gen_str(gen, "tier");
        yajl_gen_integer(gen, t);
        gen_str(gen, "name");
        gen_str(gen, tier_names[t]);
        cleanup_free char *missing = tier_missing(r, t);
        all &= missing == NULL;
        gen_str(gen, "enforceable");
        yajl_gen_bool(gen, missing == NULL);
        gen_str(gen, "missing");
        yajl_gen_array_open(gen);
        for (size_t i = 0; i < r->n; i++)
            if ((r->f[i].tiers & (1u << t)) && !r->f[i].p.ok)
                gen_str(gen, r->f[i].name);
        yajl_gen_array_close(gen);
        yajl_gen_map_close(gen);
    }
    yajl_gen_array_close(gen);
    yajl_gen_map_close(gen);
    const unsigned char *buf;
    size_t len;
    yajl_gen_get_buf(gen, &buf, &len);
    fwrite(buf, 1, len, stdout);
    yajl_gen_free(gen);
    return all ? 0 : 1;
}

COMMAND(check)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool json = false;
    int c;
    while ((c = cli_getopt(argc, argv, "+h", opts)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'h') {
            printf("usage: agentcage check [--json]\n\nReports what this host gives the runtime and whether each "
                   "tier is fully enforceable here;\nexit status 1 when one is not.\n");
            return 0;
        } else
            return ac_error(err, 0, "check: unknown flag `%s` (usage: agentcage check [--json])", argv[optind - 1]);
    }
    if (optind < argc)
        return ac_error(err, 0, "check: unexpected argument `%s` (usage: agentcage check [--json])", argv[optind]);
    struct report r = {0};
    probe_host(g, &r);
    fflush(stdout);
    int status = json ? print_json(g, &r) : print_text(g, &r);
    for (size_t i = 0; i < r.n; i++)
        probe_release(&r.f[i].p);
    return status;
}
