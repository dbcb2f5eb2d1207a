/* Build-time generator of the tiers' seccomp filters.
 *
 *   tier-seccomp-gen syscalls.list > build/gen/tier_filters.c
 *
 * Reads the syscall rules (format in syscalls.list), compiles two filters
 * per tier for x86_64 (other ABIs kill the process) and prints a C file
 * holding each as a `struct sock_filter` array, so the runtime loads one
 * with one seccomp(2) call and no libseccomp at run time: the one whose
 * refusals fail with EPERM, and the one whose refusals go to a user-space
 * listener (SECCOMP_RET_USER_NOTIF: the container's watchdog answers EPERM
 * and counts them).
 *
 * Each filter is compiled twice. libseccomp's (OPTIMIZE 2) is the
 * reference; what is printed is this file's own, a balanced tree of JGE
 * over the maximal intervals of syscall numbers that share one outcome
 * (allow, ENOSYS, refuse, kill, or one syscall's argument checks). Allowed
 * numbers come in long runs, so that tree tests a boundary where
 * libseccomp tests every allowed number: about a quarter of the
 * instructions for the kernel to check and JIT at every container start,
 * at no more depth. A small cBPF interpreter then runs both programs on
 * every syscall number 0..1023, the x32 ones, the number space's edges,
 * other architectures, and every combination of the telling values of
 * each argument a rule looks at, and any different answer fails the
 * build. So does any mistake in the list (unknown syscall or name, a
 * denied syscall also allowed, a rule libseccomp refuses, allow and enosys
 * lines for one syscall). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* ---- The range tree: this generator's own compiler ----
 *
 * Each syscall number, and every other 32-bit value the nr word can hold,
 * has one outcome: allowed, ENOSYS, the default refusal, killed (an x32
 * number), or "look at the arguments" (one syscall's own block). Allowed
 * numbers come in long runs, so the program tests the boundaries of the
 * maximal runs of one outcome, a balanced tree of JGE, instead of one JEQ
 * per syscall: fewer instructions for the kernel to check, convert and JIT
 * at every load, and no more depth. */

/* What libseccomp does with a 64-bit argument, word by word: a test
 * (word & mask) == val on the 32-bit word at off in seccomp_data. An
 * EQ's mask is all ones; a MASKED_EQ's datum is masked too (libseccomp
 * compares arg & mask with datum & mask: arg&0xf==0x13 matches 3). */
struct wtest {
    uint32_t off, mask, val;
};

/* One allow (or enosys) line as word tests, all of which must hold. */
struct crule {
    unsigned n;
    struct wtest t[2 * MAX_CONDS];
};

/* A piece of the program under construction: straight-line loads and
 * ANDs, then a RET, or a conditional jump to two other blocks. */
struct block {
    struct sock_filter pre[2];
    unsigned n_pre;
    struct sock_filter term;
    int t, f; /* the blocks jumped to; -1 after a RET */
    unsigned addr;
    bool placed;
};

#define MAX_BLOCKS (2 * BPF_MAXINSNS)
#define MAX_MEMO 1024
static struct block blocks[MAX_BLOCKS];
static int n_blocks;

/* the argument blocks compiled so far, to share one for the same rules */
static struct memo {
    unsigned n;
    struct crule *rules;
    int fail, action, label;
} memo[MAX_MEMO];
static int n_memo;

static int new_block(uint16_t code, uint32_t k, int t, int f)
{
    if (n_blocks == MAX_BLOCKS)
        die(0, "the range tree needs too many blocks");
    struct block *b = &blocks[n_blocks];
    memset(b, 0, sizeof(*b));
    b->term = (struct sock_filter)BPF_STMT(code, k);
    b->t = t;
    b->f = f;
    return n_blocks++;
}

static int ret_block(uint32_t action)
{
    for (int i = 0; i < n_blocks; i++)
        if (blocks[i].t < 0 && blocks[i].n_pre == 0 && blocks[i].term.k == action)
            return i;
    return new_block(BPF_RET | BPF_K, action, -1, -1);
}

static void block_pre(int b, uint16_t code, uint32_t k)
{
    blocks[b].pre[blocks[b].n_pre++] = (struct sock_filter)BPF_STMT(code, k);
}

static int wtest_cmp(const void *a, const void *b)
{
    const struct wtest *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->mask != y->mask)
        return x->mask < y->mask ? -1 : 1;
    return x->val < y->val ? -1 : x->val > y->val;
}

static int crule_cmp(const void *a, const void *b)
{
    const struct crule *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    for (unsigned i = 0; i < x->n; i++) {
        int c = wtest_cmp(&x->t[i], &y->t[i]);
        if (c)
            return c;
    }
    return 0;
}

static bool has_test(const struct crule *r, const struct wtest *t)
{
    for (unsigned i = 0; i < r->n; i++)
        if (wtest_cmp(&r->t[i], t) == 0)
            return true;
    return false;
}

/* Sorted, without duplicates, and without a rule that holds only where
 * another holds too (its tests a superset of the other's): the same
 * disjunction. Each rule's tests sorted. Returns the new count. */
static unsigned canonical(struct crule *r, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        qsort(r[i].t, r[i].n, sizeof(r[i].t[0]), wtest_cmp);
    qsort(r, n, sizeof(*r), crule_cmp);
    unsigned out = 0;
    for (unsigned i = 0; i < n; i++) {
        bool subsumed = false;
        for (unsigned j = 0; j < out && !subsumed; j++) {
            /* r[j] kept, with no more tests than r[i] (sorted by count) */
            subsumed = true;
            for (unsigned k = 0; k < r[j].n && subsumed; k++)
                subsumed = has_test(&r[i], &r[j].t[k]);
        }
        if (!subsumed)
            r[out++] = r[i];
    }
    return out;
}

/* The block deciding whether any of the n rules holds: to action if so,
 * else to fail. Takes the test on the word (and mask) the most rules
 * share (fewest distinct values among the ties: a common prefix first),
 * one JEQ per value, each to the block of that value's rules without it;
 * the rules that do not test it are the fallback of all those. */
static int compile_rules(struct crule *r, unsigned n, int fail, int action)
{
    n = canonical(r, n);
    if (n == 0)
        return fail;
    if (r[0].n == 0)
        return action; /* a rule with nothing left to test holds */
    for (int i = 0; i < n_memo; i++)
        if (memo[i].n == n && memo[i].fail == fail && memo[i].action == action &&
            memcmp(memo[i].rules, r, n * sizeof(*r)) == 0)
            return memo[i].label;
    /* the key */
    struct wtest key = {0};
    unsigned best_count = 0, best_vals = 0;
    for (unsigned i = 0; i < n; i++) {
        for (unsigned k = 0; k < r[i].n; k++) {
            const struct wtest *c = &r[i].t[k];
            unsigned count = 0, vals = 0;
            for (unsigned j = 0; j < n; j++) {
                for (unsigned l = 0; l < r[j].n; l++) {
                    const struct wtest *d = &r[j].t[l];
                    if (d->off != c->off || d->mask != c->mask)
                        continue;
                    count++;
                    /* a value counted at its first rule */
                    bool seen = false;
                    for (unsigned p = 0; p < j && !seen; p++)
                        for (unsigned q = 0; q < r[p].n && !seen; q++)
                            seen = r[p].t[q].off == d->off && r[p].t[q].mask == d->mask && r[p].t[q].val == d->val;
                    vals += !seen;
                }
            }
            /* ties: the lowest offset and mask, for a stable output */
            bool better = count > best_count || (count == best_count && vals < best_vals) ||
                          (count == best_count && vals == best_vals && wtest_cmp(c, &key) < 0);
            if (better) {
                key = *c;
                best_count = count;
                best_vals = vals;
            }
        }
    }
    /* the rules that do not test the key, and those that do, by value */
    struct crule *rest = calloc(n, sizeof(*rest)), *group = calloc(n, sizeof(*group));
    uint32_t *vals = calloc(n, sizeof(*vals));
    if (rest == NULL || group == NULL || vals == NULL)
        die(0, "out of memory");
    unsigned n_rest = 0, n_vals = 0;
    for (unsigned i = 0; i < n; i++) {
        bool tests = false;
        for (unsigned k = 0; k < r[i].n; k++) {
            if (r[i].t[k].off != key.off || r[i].t[k].mask != key.mask)
                continue;
            tests = true;
            bool seen = false;
            for (unsigned v = 0; v < n_vals && !seen; v++)
                seen = vals[v] == r[i].t[k].val;
            if (!seen)
                vals[n_vals++] = r[i].t[k].val;
        }
        if (!tests)
            rest[n_rest++] = r[i];
    }
    int rest_label = compile_rules(rest, n_rest, fail, action);
    /* the JEQ chain, built from its end (its last miss: the rest) */
    int next = rest_label;
    for (unsigned v = n_vals; v-- > 0;) {
        unsigned n_group = 0;
        for (unsigned i = 0; i < n; i++) {
            struct crule g = {0};
            bool in = false;
            for (unsigned k = 0; k < r[i].n; k++) {
                const struct wtest *c = &r[i].t[k];
                if (c->off == key.off && c->mask == key.mask)
                    in = c->val == vals[v];
                else
                    g.t[g.n++] = *c;
            }
            if (in)
                group[n_group++] = g;
        }
        int sub = compile_rules(group, n_group, rest_label, action);
        if (sub != rest_label)
            next = new_block(BPF_JMP | BPF_JEQ | BPF_K, vals[v], sub, next);
    }
    if (next != rest_label) {
        /* the chain's first test loads the word (the others, reached only
         * from the one before, find it in A) */
        block_pre(next, BPF_LD | BPF_W | BPF_ABS, key.off);
        if (key.mask != 0xffffffffu)
            block_pre(next, BPF_ALU | BPF_AND | BPF_K, key.mask);
    }
    free(rest);
    free(group);
    free(vals);
    if (n_memo == MAX_MEMO)
        die(0, "the range tree needs too many argument blocks");
    struct crule *copy = malloc(n * sizeof(*copy));
    if (copy == NULL)
        die(0, "out of memory");
    memcpy(copy, r, n * sizeof(*copy));
    memo[n_memo++] = (struct memo){n, copy, fail, action, next};
    return next;
}

/* A rule's conditions as word tests, into *out; false if they can never
 * all hold (then the rule adds nothing). */
static bool rule_tests(const struct rule *r, struct crule *out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned i = 0; i < r->n_conds; i++) {
        const struct scmp_arg_cmp *c = &r->conds[i];
        uint64_t mask = c->op == SCMP_CMP_EQ ? ~0ULL : c->datum_a;
        uint64_t val = (c->op == SCMP_CMP_EQ ? c->datum_a : c->datum_b) & mask;
        if (c->op != SCMP_CMP_EQ && c->op != SCMP_CMP_MASKED_EQ)
            die(r->line, "the range tree knows only == and &mask== conditions");
        for (int hi = 0; hi < 2; hi++) {
            struct wtest t = {(uint32_t)(offsetof(struct seccomp_data, args) + 8 * c->arg + 4 * hi),
                              (uint32_t)(mask >> (32 * hi)), (uint32_t)(val >> (32 * hi))};
            if (t.mask == 0)
                continue; /* 0 == 0 */
            bool dup = false;
            for (unsigned k = 0; k < out->n; k++) {
                if (out->t[k].off == t.off && out->t[k].mask == t.mask) {
                    if (out->t[k].val != t.val)
                        return false;
                    dup = true;
                }
            }
            if (!dup)
                out->t[out->n++] = t;
        }
    }
    return true;
}

/* outcomes of a number interval; a syscall with argument rules: its nr */
enum { OUT_DEFAULT = -1, OUT_ALLOW = -2, OUT_ENOSYS = -3, OUT_KILL = -4 };

struct interval {
    uint32_t first;
    int out;
};

/* the syscall numbers told apart one by one (x86_64 has ~470 today) */
#define SYSCALL_NRS 1024
#define X32_BIT 0x40000000u
#define MAX_INTERVALS (SYSCALL_NRS + 3)

/* Tree over intervals lo..hi: JGE the first number of the upper half. */
static int tree(const struct interval *iv, int lo, int hi, const int *leaf)
{
    if (lo == hi)
        return leaf[lo];
    int mid = (lo + hi + 1) / 2;
    int t = tree(iv, mid, hi, leaf), f = tree(iv, lo, mid - 1, leaf);
    return new_block(BPF_JMP | BPF_JGE | BPF_K, iv[mid].first, t, f);
}

/* Place the blocks after every block that jumps to them (the reverse of
 * a depth-first postorder, a miss visited last so that it comes right
 * after its test); *order gets them in program order. */
static void place(int b, int *order, int *n_order)
{
    if (b < 0 || blocks[b].placed)
        return;
    blocks[b].placed = true;
    place(blocks[b].t, order, n_order);
    place(blocks[b].f, order, n_order);
    order[(*n_order)++] = b;
}

/* One tier's filter as the range tree, into out; returns its length. */
static size_t range_filter(int tier, bool notify, struct sock_filter *out)
{
    n_blocks = 0;
    for (int i = 0; i < n_memo; i++)
        free(memo[i].rules);
    n_memo = 0;
    uint32_t deflt = notify ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ERRNO | EPERM;
    int kill = ret_block(SECCOMP_RET_KILL_PROCESS);
    /* each syscall's outcome */
    static int out_of[SYSCALL_NRS];
    for (int nr = 0; nr < SYSCALL_NRS; nr++)
        out_of[nr] = OUT_DEFAULT;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = &rules[i];
        if (!(r->tiers & (1u << tier)) || r->action == ACT_DENY)
            continue;
        if (r->nr < 0 || r->nr >= SYSCALL_NRS)
            die(r->line, "`%s`: syscall number %d outside 0..%d", r->name, r->nr, SYSCALL_NRS - 1);
        int act = r->action == ACT_ALLOW ? OUT_ALLOW : OUT_ENOSYS;
        for (size_t j = 0; j < i; j++)
            if (rules[j].nr == r->nr && (rules[j].tiers & (1u << tier)) && rules[j].action != ACT_DENY &&
                rules[j].action != r->action)
                die(r->line, "`%s`: allow and enosys lines for one syscall (line %d)", r->name, rules[j].line);
        if (r->n_conds == 0)
            out_of[r->nr] = act; /* holds whatever the other lines say */
        else if (out_of[r->nr] == OUT_DEFAULT)
            out_of[r->nr] = r->nr;
    }
    /* the maximal intervals of one outcome over all 2^32 numbers: x32's
     * (bit 30) are killed, but for 0xffffffff (no syscall: libseccomp
     * lets it through to the default) */
    static struct interval iv[MAX_INTERVALS];
    int n_iv = 0;
    for (int nr = 0; nr < SYSCALL_NRS; nr++)
        if (n_iv == 0 || out_of[nr] >= 0 || iv[n_iv - 1].out != out_of[nr])
            iv[n_iv++] = (struct interval){(uint32_t)nr, out_of[nr]};
    if (iv[n_iv - 1].out != OUT_DEFAULT)
        iv[n_iv++] = (struct interval){SYSCALL_NRS, OUT_DEFAULT};
    iv[n_iv++] = (struct interval){X32_BIT, OUT_KILL};
    iv[n_iv++] = (struct interval){0xffffffffu, OUT_DEFAULT};
    /* the leaves: a RET, or the syscall's argument block */
    static int leaf[MAX_INTERVALS];
    int refuse = ret_block(deflt);
    for (int i = 0; i < n_iv; i++) {
        switch (iv[i].out) {
        case OUT_DEFAULT: leaf[i] = refuse; break;
        case OUT_ALLOW: leaf[i] = ret_block(SECCOMP_RET_ALLOW); break;
        case OUT_ENOSYS: leaf[i] = ret_block(SECCOMP_RET_ERRNO | ENOSYS); break;
        case OUT_KILL: leaf[i] = kill; break;
        default: {
            int nr = iv[i].out;
            static struct crule cr[MAX_RULES];
            unsigned n = 0;
            int action = -1;
            for (size_t j = 0; j < n_rules; j++) {
                const struct rule *r = &rules[j];
                if (r->nr != nr || !(r->tiers & (1u << tier)) || r->action == ACT_DENY)
                    continue;
                action = ret_block(r->action == ACT_ALLOW ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | ENOSYS);
                n += rule_tests(r, &cr[n]);
            }
            leaf[i] = compile_rules(cr, n, refuse, action);
        }
        }
    }
    /* the nr loaded before the tree (at least 3 intervals: its root is a
     * JGE of its own), the arch checked before that */
    int root = tree(iv, 0, n_iv - 1, leaf);
    block_pre(root, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    int head = new_block(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, root, kill);
    block_pre(head, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    static int order[MAX_BLOCKS];
    int n_order = 0;
    place(head, order, &n_order);
    size_t len = 0;
    for (int i = n_order; i-- > 0;) {
        blocks[order[i]].addr = (unsigned)len;
        len += blocks[order[i]].n_pre + 1;
    }
    if (len > BPF_MAXINSNS)
        die(0, "tier %d: the range tree has %zu instructions, more than BPF_MAXINSNS", tier, len);
    size_t pc = 0;
    for (int i = n_order; i-- > 0;) {
        const struct block *b = &blocks[order[i]];
        for (unsigned k = 0; k < b->n_pre; k++)
            out[pc++] = b->pre[k];
        struct sock_filter in = b->term;
        if (b->t >= 0) {
            unsigned jt = blocks[b->t].addr - (unsigned)pc - 1, jf = blocks[b->f].addr - (unsigned)pc - 1;
            if (blocks[b->t].addr <= pc || blocks[b->f].addr <= pc)
                die(0, "tier %d: a backward jump in the range tree", tier);
            if (jt > 255 || jf > 255)
                die(0, "tier %d: a jump of more than 255 instructions in the range tree (it needs a JA)", tier);
            in.jt = (uint8_t)jt;
            in.jf = (uint8_t)jf;
        }
        out[pc++] = in;
    }
    return len;
}

/* ---- The proof: libseccomp's filter and the range tree agree ---- */

/* Run a seccomp cBPF program as the kernel does, on the seccomp_data held
 * in words (x86_64's layout, 16 32-bit words). NULL and the action in
 * *ret, or why the program is not one the kernel would run so. */
static const char *bpf_run(const struct sock_filter *f, size_t n, const uint32_t *words, uint32_t *ret)
{
    uint32_t a = 0;
    for (size_t pc = 0; pc < n; pc++) {
        const struct sock_filter *in = &f[pc];
        size_t skip;
        switch (in->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (in->k % 4 || in->k >= sizeof(struct seccomp_data))
                return "a load outside seccomp_data";
            a = words[in->k / 4];
            continue;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= in->k;
            continue;
        case BPF_RET | BPF_K:
            *ret = in->k;
            return NULL;
        case BPF_JMP | BPF_JA:
            skip = in->k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            skip = a == in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            skip = a > in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            skip = a >= in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            skip = a & in->k ? in->jt : in->jf;
            break;
        default:
            return "an instruction this interpreter does not know";
        }
        if (skip >= n - pc - 1)
            return "a jump past the end";
        pc += skip;
    }
    return "it runs off its end";
}

struct proof {
    int tier;
    bool notify;
    const struct sock_filter *ref, *mine;
    size_t ref_len, mine_len;
    unsigned long inputs;
};

static void compare_one(struct proof *p, uint32_t nr, uint32_t arch, const uint64_t *args)
{
    uint32_t words[sizeof(struct seccomp_data) / 4] = {nr, arch, 0x401000, 0};
    for (int i = 0; i < 6; i++) {
        words[4 + 2 * i] = (uint32_t)args[i];
        words[5 + 2 * i] = (uint32_t)(args[i] >> 32);
    }
    uint32_t ref = 0, mine = 0;
    const char *e;
    if ((e = bpf_run(p->ref, p->ref_len, words, &ref)))
        die(0, "tier %d %s: libseccomp's filter: %s", p->tier, p->notify ? "notify" : "filter", e);
    if ((e = bpf_run(p->mine, p->mine_len, words, &mine)))
        die(0, "tier %d %s: the range tree: %s", p->tier, p->notify ? "notify" : "filter", e);
    p->inputs++;
    if (ref != mine)
        die(0,
            "tier %d %s: the range tree answers 0x%08x where libseccomp's filter answers 0x%08x, for nr 0x%x "
            "arch 0x%08x args %#llx %#llx %#llx %#llx %#llx %#llx",
            p->tier, p->notify ? "notify" : "filter", mine, ref, nr, arch, (unsigned long long)args[0],
            (unsigned long long)args[1], (unsigned long long)args[2], (unsigned long long)args[3],
            (unsigned long long)args[4], (unsigned long long)args[5]);
}

#define MAX_ARG_VALUES 1024

static void add_value(uint64_t *v, unsigned *n, uint64_t x)
{
    for (unsigned i = 0; i < *n; i++)
        if (v[i] == x)
            return;
    if (*n == MAX_ARG_VALUES)
        die(0, "too many argument values to try");
    v[(*n)++] = x;
}

/* The values worth trying in an argument a condition looks at: its value,
 * one bit off, the high word set, the bits it masks out flipped, each bit
 * it looks at flipped. */
static void cond_values(const struct scmp_arg_cmp *c, uint64_t *v, unsigned *n)
{
    uint64_t mask = c->op == SCMP_CMP_MASKED_EQ ? c->datum_a : ~0ULL;
    uint64_t val = c->op == SCMP_CMP_MASKED_EQ ? c->datum_b : c->datum_a;
    add_value(v, n, val);
    add_value(v, n, val ^ 1);
    add_value(v, n, val | 0xffffffff00000000ULL);
    add_value(v, n, val ^ (1ULL << 32));
    add_value(v, n, val ^ ~mask);
    add_value(v, n, val & mask);
    for (int b = 0; b < 64; b++)
        if (mask >> b & 1)
            add_value(v, n, val ^ (1ULL << b));
}

/* Every argument vector of nr's conditions, at every tier: the product of
 * each argument's values, the arguments no rule names 0 or all ones. */
static void compare_args(struct proof *p, uint32_t nr)
{
    static uint64_t values[6][MAX_ARG_VALUES];
    unsigned n_values[6] = {0};
    bool named[6] = {false};
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = &rules[i];
        if ((uint32_t)r->nr != (nr & ~X32_BIT))
            continue;
        for (unsigned k = 0; k < r->n_conds; k++) {
            unsigned a = r->conds[k].arg;
            if (!named[a]) {
                named[a] = true;
                add_value(values[a], &n_values[a], 0);
                add_value(values[a], &n_values[a], ~0ULL);
            }
            cond_values(&r->conds[k], values[a], &n_values[a]);
        }
    }
    for (int fill = 0; fill < 2; fill++) {
        unsigned idx[6] = {0};
        for (;;) {
            uint64_t args[6];
            for (int a = 0; a < 6; a++)
                args[a] = named[a] ? values[a][idx[a]] : fill ? ~0ULL : 0;
            compare_one(p, nr, AUDIT_ARCH_X86_64, args);
            int a = 0;
            while (a < 6 && (!named[a] || ++idx[a] == n_values[a])) {
                if (named[a])
                    idx[a] = 0;
                a++;
            }
            if (a == 6)
                break;
        }
    }
}

/* Fails the build unless the two programs answer alike over every
 * syscall number 0..1023, the x32 ones, the edges of the number space and
 * each constant either compares with, under other architectures too, and
 * for each syscall with argument rules (at any tier) every combination of
 * its arguments' telling values, plain and as x32.
 * Returns the inputs tried. */
static unsigned long prove_same(int tier, bool notify, const struct sock_filter *ref, size_t ref_len,
                                const struct sock_filter *mine, size_t mine_len)
{
    struct proof p = {tier, notify, ref, mine, ref_len, mine_len, 0};
    static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64,
                                      AUDIT_ARCH_X86_64 ^ 1, 0, 0xffffffffu};
    static const uint32_t edges[] = {SYSCALL_NRS, SYSCALL_NRS + 1, 0x3fffffffu, 0x7fffffffu, 0x80000000u,
                                     0xbfffffffu, 0xc0000000u, 0xfffffffeu, 0xffffffffu};
    static const uint64_t zero[6] = {0}, ones[6] = {~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL};
    for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); a++) {
        for (uint32_t nr = 0; nr < SYSCALL_NRS; nr++) {
            for (int x32 = 0; x32 < 2; x32++) {
                compare_one(&p, nr | (x32 ? X32_BIT : 0), arches[a], zero);
                compare_one(&p, nr | (x32 ? X32_BIT : 0), arches[a], ones);
            }
        }
        for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
            compare_one(&p, edges[e], arches[a], zero);
            compare_one(&p, edges[e], arches[a], ones);
        }
        /* each constant either program compares with, and its neighbours:
         * the bounds of both trees */
        for (int prog = 0; prog < 2; prog++) {
            const struct sock_filter *f = prog ? mine : ref;
            for (size_t i = 0, n = prog ? mine_len : ref_len; i < n; i++) {
                if (BPF_CLASS(f[i].code) != BPF_JMP || BPF_OP(f[i].code) == BPF_JA)
                    continue;
                for (uint32_t d = 0; d < 3; d++)
                    compare_one(&p, f[i].k + d - 1, arches[a], zero);
            }
        }
    }
    for (uint32_t nr = 0; nr < SYSCALL_NRS; nr++) {
        bool conditional = false;
        for (size_t i = 0; i < n_rules && !conditional; i++)
            conditional = (uint32_t)rules[i].nr == nr && rules[i].n_conds;
        if (conditional) {
            compare_args(&p, nr);
            compare_args(&p, nr | X32_BIT);
        }
    }
    return p.inputs;
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
    static struct sock_filter ref[BPF_MAXINSNS], mine[BPF_MAXINSNS];
    for (int t = 0; t < TIERS; t++) {
        for (int notify = 0; notify < 2; notify++) {
            size_t allowed, ref_len = libseccomp_filter(t, notify, ref, &allowed);
            size_t len = range_filter(t, notify, mine);
            unsigned long inputs = prove_same(t, notify, ref, ref_len, mine, len);
            printf("/* the range tree: %zu instructions, libseccomp's %zu; the same answers to %lu inputs */\n", len,
                   ref_len, inputs);
            print_filter(t, notify, mine, len, allowed);
            *(notify ? &notify_lens[t] : &lens[t]) = len;
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
