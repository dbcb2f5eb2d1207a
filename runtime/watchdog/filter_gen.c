/* Build-time generator of the watchdog's seccomp filter.
 *
 *   watchdog-filter-gen > build/gen/watchdog_filter.h
 *
 * The watchdog has no libc, so libseccomp compiles its filter here, once,
 * and the watchdog loads the BPF as is. It allows the syscalls the
 * watchdog makes after it has dropped its privileges (ioctl only for the
 * seccomp listeners and the pidfd's exit information) and nothing else:
 * any other syscall, and any other ABI (i386, x32), kills it. */
#include <linux/ioctl.h>
#include <linux/seccomp.h>

#include "runtime/linux/gen/filter_export.h"

static const char *const allowed[] = {
    "clock_gettime", "poll", "restart_syscall", /* waiting */
    "openat", "write", "close", "renameat", "unlinkat", /* the markers, through the state dir's fd */
    "fcntl", "ftruncate", "pwrite64",                   /* the termination message, fd 5 */
    "accept4", "recvmsg",                               /* listeners from `agentcage exec` */
    "pidfd_send_signal", "exit_group", "exit",
};

/* ioctl only for the listeners and the init's exit status */
static const unsigned long ioctls[] = {SECCOMP_IOCTL_NOTIF_RECV, SECCOMP_IOCTL_NOTIF_SEND,
                                       _IOWR(0xFF, 11, char[64]) /* PIDFD_GET_INFO */};

const char filter_generator[] = "watchdog-filter-gen";
#define fail filter_gen_fail

int main(void)
{
    scmp_filter_ctx ctx = filter_gen_x86_64();
    filter_gen_allow(ctx, allowed, sizeof(allowed) / sizeof(allowed[0]));
    int rc;
    for (size_t i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]); i++)
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, ioctls[i]))) < 0)
            fail("ioctl", rc);
    return filter_export_c(ctx, "watchdog_filter", "runtime/watchdog/filter_gen.c");
}
