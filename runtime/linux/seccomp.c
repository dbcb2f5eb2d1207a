/* seccomp filters from config.json, compiled with libseccomp. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <seccomp.h>

#include "runtime/linux/seccomp.h"
#include "runtime/util/utils.h"

struct seccomp_prepared {
    scmp_filter_ctx ctx;
    bool uses_notify; /* some rule (or the default) is SCMP_ACT_NOTIFY */
    /* libseccomp's program with the -ENOSYS stub in front, loaded instead
     * of ctx when set (see enosys_stub) */
    struct sock_filter *program;
    size_t program_len;
};

static const struct {
    const char *name;
    uint32_t token;
} arch_table[] = {
    { "SCMP_ARCH_X86", SCMP_ARCH_X86 },
    { "SCMP_ARCH_X86_64", SCMP_ARCH_X86_64 },
    { "SCMP_ARCH_X32", SCMP_ARCH_X32 },
    { "SCMP_ARCH_ARM", SCMP_ARCH_ARM },
    { "SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64 },
    { "SCMP_ARCH_MIPS", SCMP_ARCH_MIPS },
    { "SCMP_ARCH_MIPS64", SCMP_ARCH_MIPS64 },
    { "SCMP_ARCH_MIPS64N32", SCMP_ARCH_MIPS64N32 },
    { "SCMP_ARCH_MIPSEL", SCMP_ARCH_MIPSEL },
    { "SCMP_ARCH_MIPSEL64", SCMP_ARCH_MIPSEL64 },
    { "SCMP_ARCH_MIPSEL64N32", SCMP_ARCH_MIPSEL64N32 },
    { "SCMP_ARCH_PPC", SCMP_ARCH_PPC },
    { "SCMP_ARCH_PPC64", SCMP_ARCH_PPC64 },
    { "SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE },
    { "SCMP_ARCH_S390", SCMP_ARCH_S390 },
    { "SCMP_ARCH_S390X", SCMP_ARCH_S390X },
    { "SCMP_ARCH_PARISC", SCMP_ARCH_PARISC },
    { "SCMP_ARCH_PARISC64", SCMP_ARCH_PARISC64 },
    { "SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64 },
};

static const enum scmp_compare op_table[] = {
    [SECCOMP_OP_NE] = SCMP_CMP_NE, [SECCOMP_OP_LT] = SCMP_CMP_LT,
    [SECCOMP_OP_LE] = SCMP_CMP_LE, [SECCOMP_OP_EQ] = SCMP_CMP_EQ,
    [SECCOMP_OP_GE] = SCMP_CMP_GE, [SECCOMP_OP_GT] = SCMP_CMP_GT,
    [SECCOMP_OP_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
};

/* The libseccomp action for a spec action; ERRNO defaults to EPERM (as
 * runc and crun do), and so does TRACE. */
static int to_scmp_action(enum oci_seccomp_action action, bool has_errno, uint32_t errno_ret, uint32_t *out,
                          ac_error_t *err)
{
    uint32_t ret = has_errno ? errno_ret : EPERM;
    switch (action) {
    case SECCOMP_ACTION_KILL:
    case SECCOMP_ACTION_KILL_THREAD: *out = SCMP_ACT_KILL_THREAD; return 0;
    case SECCOMP_ACTION_KILL_PROCESS: *out = SCMP_ACT_KILL_PROCESS; return 0;
    case SECCOMP_ACTION_TRAP: *out = SCMP_ACT_TRAP; return 0;
    case SECCOMP_ACTION_ERRNO: *out = SCMP_ACT_ERRNO(ret); return 0;
    case SECCOMP_ACTION_TRACE: *out = SCMP_ACT_TRACE(ret); return 0;
    case SECCOMP_ACTION_ALLOW: *out = SCMP_ACT_ALLOW; return 0;
    case SECCOMP_ACTION_LOG: *out = SCMP_ACT_LOG; return 0;
    case SECCOMP_ACTION_NOTIFY: *out = SCMP_ACT_NOTIFY; return 0;
    }
    return ac_error(err, 0, "seccomp: unknown action %d", (int) action);
}

static int add_arch(scmp_filter_ctx ctx, const char *name, ac_error_t *err)
{
    for (size_t i = 0; i < sizeof(arch_table) / sizeof(arch_table[0]); i++) {
        if (strcmp(arch_table[i].name, name) != 0)
            continue;
        int ret = seccomp_arch_add(ctx, arch_table[i].token);
        /* the native architecture is already in a new filter */
        if (ret < 0 && ret != -EEXIST)
            return ac_error(err, -ret, "seccomp: add architecture `%s`", name);
        return 0;
    }
    return ac_error(err, 0, "seccomp: unknown architecture `%s`", name);
}

static int set_attr(scmp_filter_ctx ctx, enum scmp_filter_attr attr, uint32_t value, const char *what,
                    ac_error_t *err)
{
    int ret = seccomp_attr_set(ctx, attr, value);
    if (ret < 0)
        return ac_error(err, -ret, "seccomp: set %s", what);
    return 0;
}

static int apply_flag(scmp_filter_ctx ctx, const char *flag, ac_error_t *err)
{
    if (strcmp(flag, "SECCOMP_FILTER_FLAG_LOG") == 0)
        return set_attr(ctx, SCMP_FLTATR_CTL_LOG, 1, flag, err);
    if (strcmp(flag, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
        return set_attr(ctx, SCMP_FLTATR_CTL_SSB, 1, flag, err);
    if (strcmp(flag, "SECCOMP_FILTER_FLAG_TSYNC") == 0) {
        /* the container process is single-threaded when it loads the
         * filter, so thread sync changes nothing (runc ignores it too) */
        return 0;
    }
    if (strcmp(flag, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0) {
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 6)
        return set_attr(ctx, SCMP_FLTATR_CTL_WAITKILL, 1, flag, err);
#else
        ac_debug("seccomp: %s not supported by this libseccomp; ignored", flag);
        return 0;
#endif
    }
    return ac_error(err, 0, "seccomp: unknown flag `%s`", flag);
}

/* Add one syscall's rule. libseccomp refuses two conditions on the same
 * argument in one rule, so (like runc) such a rule becomes one rule per
 * condition; otherwise all conditions go into one rule (and-ed). */
static int add_rule(scmp_filter_ctx ctx, const char *name, int nr, uint32_t action,
                    const struct oci_seccomp_syscall *sc, ac_error_t *err)
{
    struct scmp_arg_cmp conds[6];
    bool same_index = false;
    int ret;

    if (sc->n_args > sizeof(conds) / sizeof(conds[0]))
        return ac_error(err, 0, "seccomp: syscall `%s`: too many argument conditions", name);
    for (size_t i = 0; i < sc->n_args; i++) {
        const struct oci_seccomp_arg *a = &sc->args[i];
        if ((unsigned) a->op >= sizeof(op_table) / sizeof(op_table[0]))
            return ac_error(err, 0, "seccomp: syscall `%s`: unknown operator %d", name, (int) a->op);
        conds[i] = (struct scmp_arg_cmp){ a->index, op_table[a->op], a->value, a->value_two };
        for (size_t j = 0; j < i; j++)
            same_index |= sc->args[j].index == a->index;
    }

    if (!same_index) {
        ret = seccomp_rule_add_array(ctx, action, nr, sc->n_args, conds);
        if (ret < 0)
            return ac_error(err, -ret, "seccomp: add rule for syscall `%s`", name);
        return 0;
    }
    for (size_t i = 0; i < sc->n_args; i++) {
        ret = seccomp_rule_add_array(ctx, action, nr, 1, &conds[i]);
        if (ret < 0)
            return ac_error(err, -ret, "seccomp: add rule for syscall `%s`", name);
    }
    return 0;
}

static int add_syscalls(struct seccomp_prepared *p, size_t index, const struct oci_seccomp_syscall *sc,
                        uint32_t default_action, ac_error_t *err)
{
    uint32_t action;
    if (to_scmp_action(sc->action, sc->has_errno_ret, sc->errno_ret, &action, err) < 0)
        return -1;
    /* libseccomp rejects rules that repeat the default action */
    if (action == default_action)
        return 0;
    for (size_t i = 0; i < sc->n_names; i++) {
        /* the runtime itself writes (its start report) after the filter is
         * loaded: a notified write would wait for an agent forever */
        if (action == SCMP_ACT_NOTIFY && strcmp(sc->names[i], "write") == 0)
            return ac_error(err, 0, "linux.seccomp.syscalls[%zu]: SCMP_ACT_NOTIFY cannot be used for the write syscall",
                            index);
        int nr = seccomp_syscall_resolve_name(sc->names[i]);
        if (nr == __NR_SCMP_ERROR) {
            ac_debug("seccomp: unknown syscall `%s` skipped", sc->names[i]);
            continue;
        }
        if (add_rule(p->ctx, sc->names[i], nr, action, sc, err) < 0)
            return -1;
        if (action == SCMP_ACT_NOTIFY)
            p->uses_notify = true;
    }
    return 0;
}

/* The -ENOSYS stub (runc's behaviour for a plain container). A profile
 * names the syscalls its author knew; a syscall newer than all of them
 * (clone3, a future one) should look absent to the program, which then
 * falls back to an older call, instead of failing with the default
 * action's errno or being killed. So, per architecture of the filter, a
 * syscall number above the largest one the profile names gets ENOSYS; all
 * others go on to libseccomp's program. Not used when the default action
 * allows (nothing to fall back from) or already is ENOSYS. */

/* The architectures the stub distinguishes, by the kernel's audit value:
 * x32 shares x86_64's and is told apart by the syscall number's bit 30. */
#define X32_SYSCALL_BIT 0x40000000u
#define NO_SYSCALL_NAMED UINT32_MAX /* "nr > this" never holds */

struct stub_arch {
    uint32_t audit;
    uint32_t last;     /* largest syscall number named (x86_64: of x86_64) */
    uint32_t last_x32; /* AUDIT_ARCH_X86_64 only: largest x32 number */
};

/* The largest number any of the profile's syscall names has on arch, or
 * NO_SYSCALL_NAMED; libseccomp's negative pseudo numbers (a syscall that
 * this arch lacks or multiplexes) do not count. */
static uint32_t last_named_syscall(const struct oci_seccomp *seccomp, uint32_t arch)
{
    bool found = false;
    uint32_t last = 0;
    for (size_t i = 0; i < seccomp->n_syscalls; i++)
        for (size_t j = 0; j < seccomp->syscalls[i].n_names; j++) {
            int nr = seccomp_syscall_resolve_name_arch(arch, seccomp->syscalls[i].names[j]);
            if (nr < 0)
                continue;
            if (!found || (uint32_t) nr > last)
                last = nr;
            found = true;
        }
    return found ? last : NO_SYSCALL_NAMED;
}

static struct stub_arch *stub_arch_for(struct stub_arch *archs, size_t *n, uint32_t audit)
{
    for (size_t i = 0; i < *n; i++)
        if (archs[i].audit == audit)
            return &archs[i];
    archs[*n] = (struct stub_arch){ audit, NO_SYSCALL_NAMED, NO_SYSCALL_NAMED };
    return &archs[(*n)++];
}

/* Instructions of one architecture's section (see build_enosys_stub). */
static size_t stub_section_len(const struct stub_arch *a)
{
    if (a->audit == SCMP_ARCH_X86_64)
        return 4; /* ld nr; jset x32; jgt x86_64; jgt x32 */
    if (a->audit == SCMP_ARCH_S390 || a->audit == SCMP_ARCH_S390X)
        return 3; /* ld nr; jeq 0 (s390's multiplexer: an unknown number arrives as 0); jgt */
    return 2;     /* ld nr; jgt */
}

/* A conditional jump's offset from the instruction at pc to target. */
static int jump_to(size_t pc, size_t target, uint8_t *out, ac_error_t *err)
{
    size_t off = target - (pc + 1);
    if (target <= pc || off > 255)
        return ac_error(err, 0, "seccomp: the -ENOSYS stub has a jump out of range");
    *out = (uint8_t) off;
    return 0;
}

/* Layout, with every path ending at ENOSYS or at libseccomp's program
 * (which loads what it needs itself):
 *     ld [arch]; jeq ARCH_i -> section_i (one per arch); ja program
 *     section_i: ld [nr]; ... jgt LAST_i -> enosys, else -> program
 *     enosys: ret ERRNO(ENOSYS)
 *     program: ... */
static int build_enosys_stub(const struct stub_arch *archs, size_t n_archs, struct sock_filter **out,
                             size_t *out_len, ac_error_t *err)
{
    size_t len = 1 + n_archs + 1, section[32];
    for (size_t i = 0; i < n_archs; i++) {
        section[i] = len;
        len += stub_section_len(&archs[i]);
    }
    size_t enosys = len++, program = len;
    cleanup_free struct sock_filter *f = xcalloc(len, sizeof(*f));
    size_t pc = 0;
    uint8_t jt = 0, jf = 0;

    f[pc++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    for (size_t i = 0; i < n_archs; i++, pc++) {
        if (jump_to(pc, section[i], &jt, err) < 0)
            return -1;
        f[pc] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, archs[i].audit, jt, 0);
    }
    f[pc] = (struct sock_filter) BPF_STMT(BPF_JMP | BPF_JA | BPF_K, (uint32_t) (program - pc - 1));
    pc++;
    for (size_t i = 0; i < n_archs; i++) {
        const struct stub_arch *a = &archs[i];
        f[pc++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        if (a->audit == SCMP_ARCH_X86_64) /* bit 30 set: x32, the last of the section */
            f[pc++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, 1, 0);
        if (a->audit == SCMP_ARCH_S390 || a->audit == SCMP_ARCH_S390X) {
            if (jump_to(pc, enosys, &jt, err) < 0)
                return -1;
            f[pc++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, jt, 0);
        }
        uint32_t lasts[2] = { a->last, a->last_x32 };
        for (size_t k = 0; k < (a->audit == SCMP_ARCH_X86_64 ? 2u : 1u); k++, pc++) {
            if (jump_to(pc, enosys, &jt, err) < 0 || jump_to(pc, program, &jf, err) < 0)
                return -1;
            f[pc] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, lasts[k], jt, jf);
        }
    }
    f[pc++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
    *out = ac_steal_ptr(&f);
    *out_len = pc;
    return 0;
}

static bool enosys_stub_wanted(uint32_t default_action)
{
    /* a tracer is expected to handle new syscalls itself (as runc says) */
    bool traced = (default_action & 0xffff0000u) == SCMP_ACT_TRACE(0);
    return default_action != SCMP_ACT_ALLOW && default_action != SCMP_ACT_LOG && !traced &&
           default_action != SCMP_ACT_ERRNO(ENOSYS);
}

/* libseccomp's program for p->ctx with the stub in front, in p->program. */
static int add_enosys_stub(struct seccomp_prepared *p, const struct oci_seccomp *seccomp, ac_error_t *err)
{
    struct stub_arch archs[32];
    size_t n_archs = 0;
    /* the native architecture is always in the filter, named or not */
    uint32_t tokens[32] = { seccomp_arch_native() }, n_tokens = 1;
    for (size_t i = 0; i < seccomp->n_architectures && n_tokens < 32; i++)
        for (size_t t = 0; t < sizeof(arch_table) / sizeof(arch_table[0]); t++)
            if (strcmp(arch_table[t].name, seccomp->architectures[i]) == 0)
                tokens[n_tokens++] = arch_table[t].token;
    for (size_t i = 0; i < n_tokens; i++) {
        uint32_t last = last_named_syscall(seccomp, tokens[i]);
        struct stub_arch *a = stub_arch_for(archs, &n_archs, tokens[i] == SCMP_ARCH_X32 ? SCMP_ARCH_X86_64 : tokens[i]);
        if (tokens[i] == SCMP_ARCH_X32)
            a->last_x32 = last;
        else
            a->last = last;
    }

    cleanup_free struct sock_filter *stub = NULL;
    size_t stub_len;
    if (build_enosys_stub(archs, n_archs, &stub, &stub_len, err) < 0)
        return -1;

    cleanup_close int fd = memfd_create("agentcage-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return ac_error(err, errno, "seccomp: memfd_create");
    int ret = seccomp_export_bpf(p->ctx, fd);
    if (ret < 0)
        return ac_error(err, -ret, "seccomp: export the filter");
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % sizeof(struct sock_filter) != 0)
        return ac_error(err, 0, "seccomp: libseccomp exported a program of %lld bytes", (long long) size);
    size_t n = size / sizeof(struct sock_filter);
    if (stub_len + n > BPF_MAXINSNS)
        return ac_error(err, 0, "seccomp: the filter has too many instructions (%zu)", stub_len + n);

    cleanup_free struct sock_filter *prog = xcalloc(stub_len + n, sizeof(*prog));
    memcpy(prog, stub, stub_len * sizeof(*prog));
    if (pread(fd, prog + stub_len, size, 0) != size)
        return ac_error(err, errno, "seccomp: read the exported filter");
    ac_debug("seccomp: prepending a %zu-instruction -ENOSYS stub to the filter (%zu instructions)", stub_len, n);
    p->program = ac_steal_ptr(&prog);
    p->program_len = stub_len + n;
    return 0;
}

/* Load p->program as libseccomp's seccomp_load would load its own. */
static int load_program(struct seccomp_prepared *p, int *notify_fd, ac_error_t *err)
{
    struct sock_fprog fprog = { .len = (unsigned short) p->program_len, .filter = p->program };
    unsigned int flags = 0;
    uint32_t on = 0;
    if (seccomp_attr_get(p->ctx, SCMP_FLTATR_CTL_LOG, &on) == 0 && on)
        flags |= SECCOMP_FILTER_FLAG_LOG;
    on = 0;
    if (seccomp_attr_get(p->ctx, SCMP_FLTATR_CTL_SSB, &on) == 0 && on)
        flags |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
    if (p->uses_notify)
        flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    long ret = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
    if (ret < 0)
        return ac_error(err, errno, "seccomp: load the filter");
    if (p->uses_notify)
        *notify_fd = (int) ret;
    return 0;
}

void seccomp_prepared_free(struct seccomp_prepared *p)
{
    if (p == NULL)
        return;
    if (p->ctx)
        seccomp_release(p->ctx);
    free(p->program);
    free(p);
}

static void seccomp_prepared_freep(struct seccomp_prepared **p) { seccomp_prepared_free(*p); }

int seccomp_prepare(const struct oci_seccomp *seccomp, struct seccomp_prepared **out, ac_error_t *err)
{
    __attribute__((cleanup(seccomp_prepared_freep))) struct seccomp_prepared *p = xcalloc(1, sizeof(*p));
    uint32_t default_action;

    if (to_scmp_action(seccomp->default_action, seccomp->has_default_errno_ret, seccomp->default_errno_ret,
                       &default_action, err) < 0)
        return -1;
    p->ctx = seccomp_init(default_action);
    if (p->ctx == NULL)
        return ac_error(err, 0, "seccomp: cannot initialize the filter (bad default action?)");
    /* every syscall the runtime makes after loading would wait for an agent */
    if (default_action == SCMP_ACT_NOTIFY)
        return ac_error(err, 0, "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be used as default action");

    /* the runtime sets no_new_privs itself, only when process asks for it */
    if (set_attr(p->ctx, SCMP_FLTATR_CTL_NNP, 0, "no_new_privs attribute", err) < 0)
        return -1;
    /* accept rules for syscalls that one of the architectures lacks */
    if (set_attr(p->ctx, SCMP_FLTATR_API_TSKIP, 1, "tskip attribute", err) < 0)
        return -1;
    /* report the kernel's own errno when loading fails */
    seccomp_attr_set(p->ctx, SCMP_FLTATR_API_SYSRAWRC, 1);

    for (size_t i = 0; i < seccomp->n_architectures; i++)
        if (add_arch(p->ctx, seccomp->architectures[i], err) < 0)
            return -1;
    for (size_t i = 0; i < seccomp->n_flags; i++)
        if (apply_flag(p->ctx, seccomp->flags[i], err) < 0)
            return -1;
    for (size_t i = 0; i < seccomp->n_syscalls; i++)
        if (add_syscalls(p, i, &seccomp->syscalls[i], default_action, err) < 0)
            return -1;

    /* a notified syscall with no agent to hand the fd to would block forever */
    if (p->uses_notify && (seccomp->listener_path == NULL || *seccomp->listener_path == '\0'))
        return ac_error(err, 0, "linux.seccomp.listenerPath: SCMP_ACT_NOTIFY needs a listener path (none given)");

    if (enosys_stub_wanted(default_action) && add_enosys_stub(p, seccomp, err) < 0)
        return -1;
    *out = ac_steal_ptr(&p);
    return 0;
}

int seccomp_load_prepared(struct seccomp_prepared *p, int *notify_fd, ac_error_t *err)
{
    *notify_fd = -1;
    if (p->program)
        return load_program(p, notify_fd, err);
    int ret = seccomp_load(p->ctx);
    if (ret < 0)
        return ac_error(err, -ret, "seccomp: load the filter");
    if (p->uses_notify) {
        ret = seccomp_notify_fd(p->ctx);
        if (ret < 0)
            return ac_error(err, -ret, "seccomp: get the notify fd");
        *notify_fd = ret;
    }
    return 0;
}

int seccomp_send_listener(const char *listener_path, int notify_fd, const char *state_json, ac_error_t *err)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(listener_path) >= sizeof(addr.sun_path))
        return ac_error(err, ENAMETOOLONG, "seccomp listener `%s`", listener_path);
    strcpy(addr.sun_path, listener_path);

    cleanup_close int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return ac_error(err, errno, "seccomp listener: socket");
    if (connect(sock, (struct sockaddr *) &addr, sizeof(addr)) < 0)
        return ac_error(err, errno, "seccomp listener: failed to connect with seccomp agent at `%s`", listener_path);

    /* the fd rides with the first chunk of the state; the rest follows */
    size_t len = strlen(state_json);
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control = { 0 };
    struct iovec iov = { .iov_base = (void *) state_json, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &notify_fd, sizeof(int));

    ssize_t sent;
    do
        sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        return ac_error(err, errno, "seccomp listener: send to `%s`", listener_path);
    for (size_t off = sent; off < len; off += sent) {
        sent = send(sock, state_json + off, len - off, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) {
            sent = 0;
            continue;
        }
        if (sent < 0)
            return ac_error(err, errno, "seccomp listener: send to `%s`", listener_path);
    }
    return 0;
}
