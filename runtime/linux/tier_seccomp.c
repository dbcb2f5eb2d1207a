/* Loading a tier's precompiled seccomp filter (see tier_seccomp.h). */
#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/tier_seccomp.h"

static long load(const struct sock_filter *insns, unsigned short len, unsigned long flags)
{
    struct sock_fprog prog = {.len = len, .filter = (struct sock_filter *)insns};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

int tier_seccomp_load(int tier, int *notify_fd, ac_error_t *err)
{
    *notify_fd = -1;
    if (tier < 0 || tier >= 4)
        return ac_error(err, 0, "tier %d: no seccomp filter for it", tier);
    const struct tier_filter *f = &tier_filters[tier];
    /* The capabilities are gone by now: the kernel takes a filter only from
     * a task that can gain no privileges. Tiers force noNewPrivileges
     * already; this makes sure whatever the config said. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "tier %d: prctl(PR_SET_NO_NEW_PRIVS)", tier);
    if (TIER_SECCOMP_COUNTED(tier)) {
        long fd = load(f->notify_insns, f->notify_len, SECCOMP_FILTER_FLAG_NEW_LISTENER);
        if (fd >= 0) {
            *notify_fd = (int)fd;
            return 0;
        }
        if (errno != EBUSY)
            return ac_error(err, errno, "tier %d: load the seccomp filter", tier);
    }
    if (load(f->insns, f->len, SECCOMP_FILTER_FLAG_LOG) < 0)
        return ac_error(err, errno, "tier %d: load the seccomp filter", tier);
    return 0;
}
