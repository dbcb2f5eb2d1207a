/* Loading a tier's precompiled seccomp filter (see tier_seccomp.h). */
#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/tier_seccomp.h"

int tier_seccomp_load(int tier, ac_error_t *err)
{
    if (tier < 0 || tier >= 4)
        return ac_error(err, 0, "tier %d: no seccomp filter for it", tier);
    const struct tier_filter *f = &tier_filters[tier];
    struct sock_fprog prog = {.len = f->len, .filter = (struct sock_filter *)f->insns};
    /* The capabilities are gone by now: the kernel takes a filter only from
     * a task that can gain no privileges. Tiers force noNewPrivileges
     * already; this makes sure whatever the config said. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "tier %d: prctl(PR_SET_NO_NEW_PRIVS)", tier);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
        return ac_error(err, errno, "tier %d: load the seccomp filter", tier);
    return 0;
}
