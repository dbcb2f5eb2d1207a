/* Build-time generator of the tiers' seccomp filters.
 *
 *   tier-seccomp-gen syscalls.list > build/gen/tier_filters.c
 *
 * Reads the syscall rules (format in syscalls.list), compiles two filters
 * per tier with libseccomp for x86_64 (other ABIs kill the process) and
 * prints a C file holding each as a `struct sock_filter` array, so the
 * runtime loads one with one seccomp(2) call and no libseccomp at run time:
 * the one whose refusals fail with EPERM, and the one whose refusals go to
 * a user-space listener (SECCOMP_RET_USER_NOTIF: the container's watchdog
 * answers EPERM and counts them). Any mistake in the list (unknown syscall
 * or name, a denied syscall also allowed, a rule libseccomp refuses) fails
 * the build. */
#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define TIERS 4
#define MAX_RULES 1024
#define MAX_CONDS 4

/* CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: for
 * clone (whose low byte is the exit signal, so CLONE_NEWTIME 0x80 is not a
 * flag there) and, with CLONE_NEWTIME, for unshare. */
#define CLONE_NS_MASK 0x7e020000ULL
#define UNSHARE_NS_MASK (CLONE_NS_MASK | 0x80ULL)

static const struct { const char *name; unsigned long long value; } constants[] = {
    {"AF_UNIX", AF_UNIX},         {"AF_INET", AF_INET},           {"AF_INET6", AF_INET6},
    {"AF_NETLINK", AF_NETLINK},   {"AF_PACKET", AF_PACKET},       {"SOCK_STREAM", SOCK_STREAM},
    {"SOCK_DGRAM", SOCK_DGRAM},   {"SOCK_SEQPACKET", SOCK_SEQPACKET}, {"SOCK_RAW", SOCK_RAW},
    {"SOCK_TYPE_MASK", 0xf},      {"CLONE_NS_MASK", CLONE_NS_MASK}, {"UNSHARE_NS_MASK", UNSHARE_NS_MASK},
    {"SECCOMP_FILTER_FLAG_NEW_LISTENER", 8},
};

enum action { ACT_ALLOW, ACT_ENOSYS, ACT_DENY };

struct rule {
    enum action action;
    char name[64];
    int nr;
    unsigned tiers; /* bit n = tier n */
    unsigned n_conds;
    struct scmp_arg_cmp conds[MAX_CONDS];
    int line;
};

static struct rule rules[MAX_RULES];
static size_t n_rules;
static const char *list_path;

__attribute__((noreturn, format(printf, 2, 3))) static void die(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (line > 0)
        fprintf(stderr, "%s:%d: ", list_path, line);
    else
        fprintf(stderr, "tier-seccomp-gen: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static unsigned long long parse_value(const char *s, int line)
{
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
        if (strcmp(s, constants[i].name) == 0)
            return constants[i].value;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *s == '\0' || *end != '\0')
        die(line, "`%s`: not a number nor a known name", s);
    return v;
}

/* argN==VALUE or argN&MASK==VALUE */
static void parse_cond(char *tok, struct scmp_arg_cmp *c, int line)
{
    if (strncmp(tok, "arg", 3) != 0 || tok[3] < '0' || tok[3] > '5')
        die(line, "`%s`: a condition is argN==VALUE or argN&MASK==VALUE", tok);
    char *eq = strstr(tok, "==");
    if (eq == NULL)
        die(line, "`%s`: only == conditions are supported", tok);
    *eq = '\0';
    c->arg = (unsigned)(tok[3] - '0');
    c->datum_b = parse_value(eq + 2, line);
    if (tok[4] == '&') {
        c->op = SCMP_CMP_MASKED_EQ;
        c->datum_a = parse_value(tok + 5, line);
    } else if (tok[4] == '\0') {
        c->op = SCMP_CMP_EQ;
        c->datum_a = c->datum_b;
    } else {
        die(line, "`%s`: a condition is argN==VALUE or argN&MASK==VALUE", tok);
    }
}

/* @0  @1-3  @2,3 */
static unsigned parse_tiers(const char *s, int line)
{
    unsigned bits = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            die(line, "bad tier set `%s`", s);
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s)
                die(line, "bad tier set `%s`", s);
        }
        if (a < 0 || b >= TIERS || a > b)
            die(line, "tier out of range 0..%d", TIERS - 1);
        for (long t = a; t <= b; t++)
            bits |= 1u << t;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            die(line, "bad tier set");
    }
    return bits;
}

static void read_list(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        die(0, "open %s: %s", path, strerror(errno));
    char buf[512];
    int line = 0;
    while (fgets(buf, sizeof(buf), f)) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL, *tok = strtok_r(buf, " \t\r\n", &save);
        if (tok == NULL)
            continue;
        if (n_rules == MAX_RULES)
            die(line, "too many rules");
        struct rule *r = &rules[n_rules];
        memset(r, 0, sizeof(*r));
        r->line = line;
        r->tiers = (1u << TIERS) - 1;
        if (strcmp(tok, "allow") == 0)
            r->action = ACT_ALLOW;
        else if (strcmp(tok, "enosys") == 0)
            r->action = ACT_ENOSYS;
        else if (strcmp(tok, "deny") == 0)
            r->action = ACT_DENY;
        else
            die(line, "unknown action `%s`", tok);
        char *name = strtok_r(NULL, " \t\r\n", &save);
        if (name == NULL)
            die(line, "missing syscall name");
        bool optional = name[0] == '?';
        if (optional)
            name++;
        snprintf(r->name, sizeof(r->name), "%s", name);
        r->nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name);
        if (r->nr == __NR_SCMP_ERROR) {
            if (!optional)
                die(line, "`%s` is not an x86_64 syscall libseccomp knows", name);
            fprintf(stderr, "tier-seccomp-gen: note: this libseccomp does not know `%s`: left out\n", name);
            continue;
        }
        while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
            if (tok[0] == '@') {
                r->tiers = parse_tiers(tok + 1, line);
                continue;
            }
            if (r->action == ACT_DENY)
                die(line, "deny lines take no conditions");
            if (r->n_conds == MAX_CONDS)
                die(line, "too many conditions");
            parse_cond(tok, &r->conds[r->n_conds++], line);
        }
        n_rules++;
    }
    fclose(f);
    for (size_t i = 0; i < n_rules; i++) {
        if (rules[i].action != ACT_DENY)
            continue;
        for (size_t j = 0; j < n_rules; j++)
            if (rules[j].action != ACT_DENY && rules[j].nr == rules[i].nr)
                die(rules[j].line, "`%s` is denied at line %d and may never be allowed", rules[j].name,
                    rules[i].line);
    }
}

static void check(int rc, int line, const char *what)
{
    if (rc < 0)
        die(line, "%s: %s", what, strerror(-rc));
}

/* One tier's filter as libseccomp compiles it, through a memfd
 * (seccomp_export_bpf writes to an fd), into out (BPF_MAXINSNS room);
 * notify: refusals go to the listener instead of failing. Returns its
 * length; *allowed_out: the rules it holds. */
static size_t libseccomp_filter(int tier, bool notify, struct sock_filter *out, size_t *allowed_out)
{
    scmp_filter_ctx ctx = seccomp_init(notify ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM));
    if (ctx == NULL)
        die(0, "seccomp_init failed");
    check(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), 0, "bad-arch action");
    /* the runtime sets no_new_privs itself; the export ignores it anyway */
    check(seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0), 0, "nnp attribute");
    /* a binary tree of syscall numbers instead of a linear scan */
    check(seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2), 0, "optimize attribute");
    size_t allowed = 0;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = &rules[i];
        if (!(r->tiers & (1u << tier)) || r->action == ACT_DENY)
            continue; /* denied: the default action already refuses it */
        uint32_t act = r->action == ACT_ALLOW ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(ENOSYS);
        check(seccomp_rule_add_exact_array(ctx, act, r->nr, r->n_conds, r->conds), r->line, r->name);
        allowed++;
    }
    int fd = memfd_create("tier-filter", MFD_CLOEXEC);
    if (fd < 0)
        die(0, "memfd_create: %s", strerror(errno));
    check(seccomp_export_bpf(ctx, fd), 0, "seccomp_export_bpf");
    seccomp_release(ctx);
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % 8 != 0)
        die(0, "tier %d: exported filter has a bad size %lld", tier, (long long)size);
    size_t n = (size_t)size / 8;
    if (n > BPF_MAXINSNS)
        die(0, "tier %d: %zu instructions exceed BPF_MAXINSNS", tier, n);
    if (pread(fd, out, (size_t)size, 0) != (ssize_t)size)
        die(0, "tier %d: short read of the exported filter", tier);
    close(fd);
    *allowed_out = allowed;
    return n;
}

static void print_filter(int tier, bool notify, const struct sock_filter *f, size_t n, size_t allowed)
{
    printf("/* tier %d: %zu rules, refusals %s */\nstatic const struct sock_filter tier%d_%s[%zu] = {\n", tier,
           allowed, notify ? "to the listener" : "EPERM", tier, notify ? "notify" : "filter", n);
    for (size_t i = 0; i < n; i++)
        printf("    {0x%04x, %u, %u, 0x%08x},\n", f[i].code, f[i].jt, f[i].jf, f[i].k);
    printf("};\n\n");
}

/* One tier's filter as an OCI linux.seccomp object (a C string literal),
 * for a runtime that applies the config's profile itself (runsc
 * --oci-seccomp under gVisor): refusals fail with EPERM. */
static void emit_oci(int tier)
{
    printf("    \"{\\\"defaultAction\\\":\\\"SCMP_ACT_ERRNO\\\",\\\"defaultErrnoRet\\\":%d,"
           "\\\"architectures\\\":[\\\"SCMP_ARCH_X86_64\\\"],\\\"syscalls\\\":[\"\n", EPERM);
    /* the unconditional allows as one rule (fewer rules for runsc to hold) */
    printf("    \"{\\\"action\\\":\\\"SCMP_ACT_ALLOW\\\",\\\"names\\\":[");
    bool first = true;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = &rules[i];
        if (!(r->tiers & (1u << tier)) || r->action != ACT_ALLOW || r->n_conds)
            continue;
        printf("%s\\\"%s\\\"", first ? "" : ",", r->name);
        first = false;
    }
    printf("]}\"\n");
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = &rules[i];
        if (!(r->tiers & (1u << tier)) || r->action == ACT_DENY || (r->action == ACT_ALLOW && !r->n_conds))
            continue;
        printf("    \",{\\\"names\\\":[\\\"%s\\\"],\\\"action\\\":\\\"%s\\\"", r->name,
               r->action == ACT_ALLOW ? "SCMP_ACT_ALLOW" : "SCMP_ACT_ERRNO");
        if (r->action == ACT_ENOSYS)
            printf(",\\\"errnoRet\\\":%d", ENOSYS);
        printf(",\\\"args\\\":[");
        for (unsigned k = 0; k < r->n_conds; k++) {
            const struct scmp_arg_cmp *c = &r->conds[k];
            bool masked = c->op == SCMP_CMP_MASKED_EQ;
            if (!masked && c->op != SCMP_CMP_EQ)
                die(r->line, "only == and &mask== conditions have an OCI form");
            /* OCI (runc, runsc): a masked comparison's mask is value, its datum valueTwo */
            printf("%s{\\\"index\\\":%u,\\\"value\\\":%llu,\\\"valueTwo\\\":%llu,\\\"op\\\":\\\"%s\\\"}", k ? "," : "",
                   c->arg, (unsigned long long)c->datum_a, masked ? (unsigned long long)c->datum_b : 0ULL,
                   masked ? "SCMP_CMP_MASKED_EQ" : "SCMP_CMP_EQ");
        }
        printf("]}\"\n");
    }
    printf("    \"]}\",\n");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tier-seccomp-gen SYSCALLS.LIST > tier_filters.c\n");
        return 2;
    }
    list_path = argv[1];
    read_list(list_path);
    printf("/* Generated by tier-annotations/seccomp/gen.c from %s: do not edit. */\n", list_path);
    printf("#include \"runtime/linux/tier_seccomp.h\"\n\n");
    size_t lens[TIERS], notify_lens[TIERS];
    static struct sock_filter f[BPF_MAXINSNS];
    for (int t = 0; t < TIERS; t++) {
        for (int notify = 0; notify < 2; notify++) {
            size_t allowed, n = libseccomp_filter(t, notify, f, &allowed);
            print_filter(t, notify, f, n, allowed);
            *(notify ? &notify_lens[t] : &lens[t]) = n;
        }
    }
    printf("const struct tier_filter tier_filters[%d] = {\n", TIERS);
    for (int t = 0; t < TIERS; t++)
        printf("    {tier%d_filter, %zu, tier%d_notify, %zu},\n", t, lens[t], t, notify_lens[t]);
    printf("};\n\n");
    printf("const char *const tier_oci_seccomp[%d] = {\n", TIERS);
    for (int t = 0; t < TIERS; t++)
        emit_oci(t);
    printf("};\n");
    if (fflush(stdout) != 0 || ferror(stdout))
        die(0, "write: %s", strerror(errno));
    return 0;
}
