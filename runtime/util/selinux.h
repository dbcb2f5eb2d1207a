/* SELinux through the kernel's own interface, as crun and runc use it: the
 * exec label is one write to /proc/thread-self/attr/exec, and whether
 * SELinux is on is a look at selinuxfs. No libselinux: the runtime binary
 * links glibc statically (the Makefile's STATIC_LIBC), where a dlopen'd
 * library would bring its own libc, and libselinux linked in would run
 * its constructor (a probe of /sys/fs/selinux and /proc/filesystems) in
 * every command.
 *
 * ac_selinux_probe is called on the host before the container's processes
 * are cloned (create, exec): they inherit its answer, and never look at a
 * selinuxfs from inside the container's root. */
#ifndef AGENTCAGE_SELINUX_H
#define AGENTCAGE_SELINUX_H

/* Whether SELinux is on, as libselinux's is_selinux_enabled() says it: a
 * writable selinuxfs (at /sys/fs/selinux, /selinux, or where
 * /proc/self/mounts has one) and /etc/selinux/config. Looked at once. */
void ac_selinux_probe(void);
/* 1, 0, or -1 when ac_selinux_probe has not run in this process or an
 * ancestor it was cloned from. */
int ac_selinux_enabled(void);
/* setexeccon(label): the label the next execve takes; -1 with errno. */
int ac_selinux_setexeccon(const char *label);

#endif
