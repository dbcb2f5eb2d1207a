/* Landlock for tiered containers (see landlock.h).
 *
 * One ruleset handles every filesystem write access of the kernel's ABI and
 * grants them all beneath the writable paths, so everything else in the
 * container (the image, bind mounts left out of io.agentcage.landlock-rw,
 * /proc, /sys) refuses writes even where a mount is writable. The syscalls
 * go by number: glibc has no wrappers. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/linux/landlock.h"
#include "runtime/linux/landlock_abi.h"
#include "runtime/util/utils.h"

int landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v < 0 ? 0 : (int)v;
}

static int allow_beneath(int ruleset, const char *path, uint64_t handled, int tier, ac_error_t *err)
{
    cleanup_close int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            ac_debug("tier %d: Landlock: `%s` does not exist: no rule", tier, path);
            return 0;
        }
        return ac_error(err, errno, "tier %d: Landlock: open `%s`", tier, path);
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return ac_error(err, errno, "tier %d: Landlock: stat `%s`", tier, path);
    struct landlock_path_beneath_attr attr = {
        .allowed_access = S_ISDIR(st.st_mode) ? handled : (handled & AC_LANDLOCK_FS_FILE),
        .parent_fd = fd,
    };
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
        return ac_error(err, errno, "tier %d: Landlock: allow writes beneath `%s`", tier, path);
    return 0;
}

/* The process's stdio may be a file or terminal outside every rule (a log
 * file, the host's tty): reopening an output (/dev/stdout, /proc/self/fd/1)
 * writes to exactly that file, so a rule on that one file allows writing
 * it, never truncating it. A stream the caller opened read-only gets no
 * rule: reopened for writing through /proc/self/fd/0, a host file given as
 * stdin would otherwise be the container's to overwrite. Pipes and sockets
 * need no rule. */
static void allow_stdio(int ruleset, uint64_t handled, int tier)
{
    for (int fd = 0; fd <= 2; fd++) {
        struct stat st;
        if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
            continue;
        int mode = fcntl(fd, F_GETFL);
        if (mode < 0 || (mode & O_ACCMODE) == O_RDONLY)
            continue;
        uint64_t access = handled & LANDLOCK_ACCESS_FS_WRITE_FILE;
        if (S_ISCHR(st.st_mode))
            access = handled & AC_LANDLOCK_FS_FILE & ~LANDLOCK_ACCESS_FS_TRUNCATE; /* a terminal's ioctls */
        struct landlock_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
            ac_debug("tier %d: Landlock: no rule for stdio fd %d: %s", tier, fd, strerror(errno));
    }
}

int landlock_restrict_writes(const char *rw_paths, int tier, ac_error_t *err)
{
    int abi = landlock_abi();
    if (abi < 1)
        return ac_error(err, 0,
                        "tier %d needs Landlock, which this kernel does not offer (build it with "
                        "CONFIG_SECURITY_LANDLOCK=y and list `landlock` in the lsm= boot parameter)",
                        tier);
    uint64_t handled = AC_LANDLOCK_FS_WRITE(abi);
    struct landlock_ruleset_attr rattr = {.handled_access_fs = handled};
    cleanup_close int ruleset =
        (int)syscall(SYS_landlock_create_ruleset, &rattr, sizeof(rattr.handled_access_fs), 0);
    if (ruleset < 0)
        return ac_error(err, errno, "tier %d: Landlock: create the ruleset", tier);
    /* /dev: the terminal, /dev/null, /dev/shm; the tier leaves only the
     * minimal devices there and the device cgroup the rest. */
    if (allow_beneath(ruleset, "/dev", handled, tier, err) < 0)
        return -1;
    cleanup_free char *copy = xstrdup(rw_paths ? rw_paths : "");
    char *save = NULL;
    for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        if (p[0] != '/')
            return ac_error(err, 0, "tier %d: io.agentcage.landlock-rw: `%s` is not an absolute path", tier, p);
        if (allow_beneath(ruleset, p, handled, tier, err) < 0)
            return -1;
    }
    allow_stdio(ruleset, handled, tier);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "tier %d: prctl(PR_SET_NO_NEW_PRIVS)", tier);
    /* ABI 7: the container's refusals (after the execve that starts its
     * program) go to the kernel's audit, where the watchdog counts them
     * (tiers 1-3, as it counts seccomp's); the runtime's own steps up to
     * that execve are not the container's and are not reported. */
    unsigned flags = abi >= 7 ? AC_LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF : 0;
    if (abi >= 7 && tier >= 1)
        flags |= AC_LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON;
    if (syscall(SYS_landlock_restrict_self, ruleset, flags) < 0)
        return ac_error(err, errno, "tier %d: Landlock: restrict the container", tier);
    return 0;
}
