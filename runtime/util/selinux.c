/* SELinux through the kernel's interface (see selinux.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "runtime/util/selinux.h"
#include "runtime/util/utils.h"

static int selinux_on = -1;

/* A selinuxfs mounted at PATH that can be written (libselinux counts a
 * read-only one, as a container sees it, as SELinux off). */
static bool selinuxfs_at(const char *path)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == SELINUX_MAGIC && !(sf.f_flags & ST_RDONLY);
}

static bool selinuxfs_mounted(void)
{
    if (selinuxfs_at("/sys/fs/selinux") || selinuxfs_at("/selinux"))
        return true;
    /* elsewhere: only where the kernel has the filesystem at all */
    cleanup_free char *filesystems = NULL;
    size_t len;
    if (read_all_file("/proc/filesystems", &filesystems, &len, NULL) < 0 || !strstr(filesystems, "\tselinuxfs\n"))
        return false;
    FILE *mounts = setmntent("/proc/self/mounts", "re");
    if (!mounts)
        return false;
    bool found = false;
    struct mntent *m;
    while (!found && (m = getmntent(mounts)) != NULL)
        found = strcmp(m->mnt_type, "selinuxfs") == 0 && selinuxfs_at(m->mnt_dir);
    endmntent(mounts);
    return found;
}

void ac_selinux_probe(void)
{
    if (selinux_on < 0)
        selinux_on = selinuxfs_mounted() && access("/etc/selinux/config", F_OK) == 0;
}

int ac_selinux_enabled(void)
{
    return selinux_on;
}

int ac_selinux_setexeccon(const char *label)
{
    int fd = open("/proc/thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/attr/exec", gettid());
        fd = open(path, O_WRONLY | O_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    /* with its terminating NUL, as libselinux writes it */
    ssize_t n;
    do
        n = write(fd, label, strlen(label) + 1);
    while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    errno = e;
    return n < 0 ? -1 : 0;
}
