/* The cgroup v2 device filter: cgroup2 has no devices.allow/deny files, the
 * kernel asks a BPF_PROG_TYPE_CGROUP_DEVICE program instead. We assemble
 * that program by hand (no libbpf) from the OCI device rules. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup_internal.h"
#include "runtime/util/utils.h"

static int sys_bpf(int cmd, union bpf_attr *attr)
{
    return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

#define INSN(c, d, s, o, i)                                                                    \
    ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

/* Registers while rules are checked: r2 device type, r3 requested access,
 * r4 major, r5 minor; r1 is scratch once they are loaded from the context. */
enum { R0, R1, R2, R3, R4, R5 };

struct prog {
    struct bpf_insn *insns;
    size_t n, cap;
};

static void emit(struct prog *p, struct bpf_insn insn)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->insns = xrealloc(p->insns, p->cap * sizeof(*p->insns));
    }
    p->insns[p->n++] = insn;
}

static int access_mask(const char *access)
{
    if (access == NULL || *access == '\0')
        return BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD;
    int mask = 0;
    for (const char *a = access; *a; a++) {
        if (*a == 'r')
            mask |= BPF_DEVCG_ACC_READ;
        else if (*a == 'w')
            mask |= BPF_DEVCG_ACC_WRITE;
        else if (*a == 'm')
            mask |= BPF_DEVCG_ACC_MKNOD;
        else
            return -1;
    }
    return mask;
}

#define ACC_ALL (BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD)

/* Emit one rule's check: the block either returns the rule's verdict or
 * jumps to its end (the next rule). Returns true when the rule matches
 * everything, so nothing after it can run. */
static bool emit_rule(struct prog *p, const struct oci_device_rule *rule, int acc)
{
    int type = rule->type == 'c' ? BPF_DEVCG_DEV_CHAR : rule->type == 'b' ? BPF_DEVCG_DEV_BLOCK : 0;
    bool check_access = acc != ACC_ALL;
    /* Count the block first so the jumps can skip to its end. */
    size_t len = 2; /* r0 = verdict; exit */
    if (type)
        len += 1;
    if (check_access)
        len += 3;
    if (rule->major >= 0)
        len += 1;
    if (rule->minor >= 0)
        len += 1;
    size_t end = p->n + len;
#define SKIP() ((short)(end - (p->n + 1)))
    if (type)
        emit(p, INSN(BPF_JMP | BPF_JNE | BPF_K, R2, 0, SKIP(), type));
    if (check_access) {
        emit(p, INSN(BPF_ALU | BPF_MOV | BPF_X, R1, R3, 0, 0));
        if (rule->allow) {
            /* allow only when every requested access is in the rule */
            emit(p, INSN(BPF_ALU | BPF_AND | BPF_K, R1, 0, 0, ~acc & ACC_ALL));
            emit(p, INSN(BPF_JMP | BPF_JNE | BPF_K, R1, 0, SKIP(), 0));
        } else {
            /* deny as soon as any requested access is in the rule */
            emit(p, INSN(BPF_ALU | BPF_AND | BPF_K, R1, 0, 0, acc));
            emit(p, INSN(BPF_JMP | BPF_JEQ | BPF_K, R1, 0, SKIP(), 0));
        }
    }
    if (rule->major >= 0)
        emit(p, INSN(BPF_JMP | BPF_JNE | BPF_K, R4, 0, SKIP(), (int)rule->major));
    if (rule->minor >= 0)
        emit(p, INSN(BPF_JMP | BPF_JNE | BPF_K, R5, 0, SKIP(), (int)rule->minor));
    emit(p, INSN(BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, rule->allow ? 1 : 0));
    emit(p, INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
#undef SKIP
    return !type && !check_access && rule->major < 0 && rule->minor < 0;
}

int cg_bpf_devices_load(const struct oci_device_rule *rules, size_t n_rules, ac_error_t *err)
{
    struct prog p = {0};
    /* r1 = ctx (struct bpf_cgroup_dev_ctx: access_type, major, minor) */
    emit(&p, INSN(BPF_LDX | BPF_MEM | BPF_W, R2, R1, 0, 0));
    emit(&p, INSN(BPF_ALU | BPF_AND | BPF_K, R2, 0, 0, 0xffff));
    emit(&p, INSN(BPF_LDX | BPF_MEM | BPF_W, R3, R1, 0, 0));
    emit(&p, INSN(BPF_ALU | BPF_RSH | BPF_K, R3, 0, 0, 16));
    emit(&p, INSN(BPF_LDX | BPF_MEM | BPF_W, R4, R1, 4, 0));
    emit(&p, INSN(BPF_LDX | BPF_MEM | BPF_W, R5, R1, 8, 0));

    /* The last matching rule wins: check the rules from the end, the first
     * hit decides. The verifier refuses unreachable code, so stop after a
     * rule that matches everything. */
    bool final = false;
    for (size_t i = n_rules; i-- > 0 && !final;) {
        const struct oci_device_rule *rule = &rules[i];
        if (rule->type != 'a' && rule->type != 'c' && rule->type != 'b' && rule->type != 0) {
            free(p.insns);
            return ac_error(err, 0, "cgroup: linux.resources.devices: invalid type `%c`",
                            rule->type);
        }
        int acc = access_mask(rule->access);
        if (acc < 0) {
            free(p.insns);
            return ac_error(err, 0, "cgroup: linux.resources.devices: invalid access `%s`",
                            rule->access);
        }
        if (rule->type == 'a' || rule->type == 0) {
            /* "a" means every device whatever major/minor say */
            struct oci_device_rule all = *rule;
            all.type = 0;
            all.major = all.minor = -1;
            final = emit_rule(&p, &all, acc);
        } else {
            final = emit_rule(&p, rule, acc);
        }
    }
    if (!final) {
        /* nothing matched: deny */
        emit(&p, INSN(BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 0));
        emit(&p, INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    }

    static char log[65536];
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (uint64_t)(uintptr_t)p.insns;
    attr.insn_cnt = (uint32_t)p.n;
    attr.license = (uint64_t)(uintptr_t) "Apache";
    int fd = sys_bpf(BPF_PROG_LOAD, &attr);
    if (fd < 0 && errno == EACCES) {
        /* load again with the verifier's log to say why */
        attr.log_buf = (uint64_t)(uintptr_t)log;
        attr.log_size = sizeof(log);
        attr.log_level = 1;
        log[0] = '\0';
        fd = sys_bpf(BPF_PROG_LOAD, &attr);
    }
    int saved = errno;
    free(p.insns);
    if (fd < 0)
        return ac_error(err, saved, "cgroup: load the device eBPF program%s%s", *log ? ": " : "",
                        log);
    return fd;
}

int cg_bpf_devices_attach(int cgroup_fd, int prog_fd, ac_error_t *err)
{
    /* The programs attached before (ours, from an earlier create/update). */
    uint32_t ids[64];
    union bpf_attr q;
    memset(&q, 0, sizeof(q));
    q.query.target_fd = (uint32_t)cgroup_fd;
    q.query.attach_type = BPF_CGROUP_DEVICE;
    q.query.prog_ids = (uint64_t)(uintptr_t)ids;
    q.query.prog_cnt = sizeof(ids) / sizeof(ids[0]);
    if (sys_bpf(BPF_PROG_QUERY, &q) < 0)
        return ac_error(err, errno, "cgroup: query the device eBPF programs");
    uint32_t n_old = q.query.prog_cnt;

    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.target_fd = (uint32_t)cgroup_fd;
    a.attach_bpf_fd = (uint32_t)prog_fd;
    a.attach_type = BPF_CGROUP_DEVICE;
    a.attach_flags = BPF_F_ALLOW_MULTI;
    if (sys_bpf(BPF_PROG_ATTACH, &a) < 0)
        return ac_error(err, errno, "cgroup: attach the device eBPF program");

    /* With several programs all must allow: drop the old ones so an update
     * can widen access too. */
    for (uint32_t i = 0; i < n_old; i++) {
        union bpf_attr g;
        memset(&g, 0, sizeof(g));
        g.prog_id = ids[i];
        cleanup_close int old = sys_bpf(BPF_PROG_GET_FD_BY_ID, &g);
        if (old < 0)
            return ac_error(err, errno, "cgroup: get the old device eBPF program %u", ids[i]);
        union bpf_attr d;
        memset(&d, 0, sizeof(d));
        d.target_fd = (uint32_t)cgroup_fd;
        d.attach_bpf_fd = (uint32_t)old;
        d.attach_type = BPF_CGROUP_DEVICE;
        if (sys_bpf(BPF_PROG_DETACH, &d) < 0 && errno != ENOENT)
            return ac_error(err, errno, "cgroup: detach the old device eBPF program %u", ids[i]);
    }
    return 0;
}

int cg_bpf_devices_apply(const char *dir, const struct oci_device_rule *rules, size_t n_rules,
                         ac_error_t *err)
{
    /* the container's rules, then the devices every container gets */
    size_t n = n_rules + cg_n_default_device_rules;
    cleanup_free struct oci_device_rule *all = xcalloc(n, sizeof(*all));
    if (n_rules)
        memcpy(all, rules, n_rules * sizeof(*all));
    memcpy(all + n_rules, cg_default_device_rules, cg_n_default_device_rules * sizeof(*all));
    /* start from deny-all, like the v1 devices controller */
    cleanup_close int prog = cg_bpf_devices_load(all, n, err);
    if (prog < 0)
        return -1;
    cleanup_close int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0)
        return ac_error(err, errno, "cgroup: open `%s`", dir);
    return cg_bpf_devices_attach(cg, prog, err);
}
