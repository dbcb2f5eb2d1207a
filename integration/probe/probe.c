/* probe: a tiny static program the integration tests run inside containers
 * to check what busybox cannot.  Every command prints one machine-checkable
 * line (or one line per item for `fds`) and exits 0 unless noted. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *errno_name(int e)
{
    switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EEXIST: return "EEXIST";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EROFS: return "EROFS";
    case ENOTDIR: return "ENOTDIR";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EBADF: return "EBADF";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ESRCH: return "ESRCH";
    case EBUSY: return "EBUSY";
    case ENODEV: return "ENODEV";
    case ENXIO: return "ENXIO";
    case EMFILE: return "EMFILE";
    case ENOSPC: return "ENOSPC";
    case EFAULT: return "EFAULT";
    case E2BIG: return "E2BIG";
    case EDQUOT: return "EDQUOT";
    case ENOKEY: return "ENOKEY";
    case ESTALE: return "ESTALE";
    case ENOEXEC: return "ENOEXEC";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "E%d", e);
        return buf;
    }
    }
}

/* Prints "ok" when rc >= 0, else the errno name; returns exit status 0. */
static int report(long rc)
{
    if (rc < 0)
        printf("%s\n", errno_name(errno));
    else
        printf("ok\n");
    return 0;
}

static int do_syscall(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: probe syscall NAME [args]\n");
        return 2;
    }
    const char *n = argv[0];
    const char *a1 = argc > 1 ? argv[1] : NULL;
    /* nr N: the raw syscall number N (no libc wrapper to hide ENOSYS) */
    if (!strcmp(n, "nr") && a1)
        return report(syscall(strtol(a1, NULL, 0), 0, 0, 0));
    if (!strcmp(n, "mkdir"))
        return report(mkdir(a1 ? a1 : "/tmp/probe-dir", 0755));
    if (!strcmp(n, "mount"))
        return report(mount("none", a1 ? a1 : "/tmp", "tmpfs", 0, NULL));
    if (!strcmp(n, "umount"))
        return report(umount2(a1 ? a1 : "/proc", MNT_DETACH));
    if (!strcmp(n, "unshare"))
        return report(unshare(a1 ? (int)strtol(a1, NULL, 0) : CLONE_NEWNS));
    if (!strcmp(n, "unshare-user"))
        return report(unshare(CLONE_NEWUSER));
    if (!strcmp(n, "ptrace")) {
        pid_t pid = fork();
        if (pid == 0) {
            pause();
            _exit(0);
        }
        long rc = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
        int saved = errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        errno = saved;
        return report(rc);
    }
    if (!strcmp(n, "keyctl"))
        /* KEYCTL_JOIN_SESSION_KEYRING with an anonymous keyring */
        return report(syscall(SYS_keyctl, 1, NULL, 0, 0, 0));
    if (!strcmp(n, "bpf")) {
        union bpf_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_ARRAY;
        attr.key_size = 4;
        attr.value_size = 4;
        attr.max_entries = 1;
        return report(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
    }
    if (!strcmp(n, "perf_event_open")) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.type = PERF_TYPE_SOFTWARE;
        attr.size = sizeof attr;
        attr.config = PERF_COUNT_SW_CPU_CLOCK;
        attr.disabled = 1;
        attr.exclude_kernel = 1;
        return report(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
    }
    if (!strcmp(n, "io_uring_setup")) {
        char params[120];
        memset(params, 0, sizeof params);
        return report(syscall(425, 1, params));
    }
    if (!strcmp(n, "personality")) {
        long rc = personality(a1 ? strtoul(a1, NULL, 0) : 0xffffffff);
        return report(rc);
    }
    if (!strcmp(n, "chroot"))
        return report(chroot(a1 ? a1 : "/"));
    if (!strcmp(n, "sethostname"))
        return report(sethostname("probe", 5));
    if (!strcmp(n, "setuid"))
        return report(setuid(a1 ? atoi(a1) : 0));
    if (!strcmp(n, "chown"))
        return report(chown(a1 ? a1 : "/tmp", 1234, 1234));
    if (!strcmp(n, "kill1"))
        return report(kill(1, 0));
    /* The calls below take harmless arguments: with the needed capability
     * they reach the kernel and fail with an argument error (or create
     * nothing lasting), so a tier's EPERM is told apart from the kernel's. */
    if (!strcmp(n, "pivot_root"))
        return report(syscall(SYS_pivot_root, "/nonexistent-probe", "/nonexistent-probe"));
    if (!strcmp(n, "kexec_load"))
        /* more segments than KEXEC_SEGMENT_MAX: EINVAL once permitted */
        return report(syscall(SYS_kexec_load, 0UL, 100000UL, NULL, 0UL));
    if (!strcmp(n, "reboot"))
        /* a wrong magic: EINVAL once CAP_SYS_BOOT passes */
        return report(syscall(SYS_reboot, 0x12345678, 0x12345678, 0, NULL));
    if (!strcmp(n, "init_module"))
        /* an empty image: never loads anything */
        return report(syscall(SYS_init_module, NULL, 0UL, ""));
    if (!strcmp(n, "finit_module"))
        return report(syscall(SYS_finit_module, -1, "", 0));
    if (!strcmp(n, "userfaultfd")) {
        long fd = syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */ | O_CLOEXEC);
        report(fd);
        if (fd >= 0)
            close((int)fd);
        return 0;
    }
    if (!strcmp(n, "add_key"))
        return report(syscall(SYS_add_key, "user", "probe", "x", 1UL, -2 /* process keyring */));
    if (!strcmp(n, "request_key"))
        return report(syscall(SYS_request_key, "user", "probe-absent", NULL, 0));
    if (!strcmp(n, "setns")) {
        int fd = open(a1 ? a1 : "/proc/self/ns/uts", O_RDONLY);
        if (fd < 0)
            return report(-1);
        long rc = setns(fd, 0);
        int saved = errno;
        close(fd);
        errno = saved;
        return report(rc);
    }
    if (!strcmp(n, "open_by_handle_at")) {
        struct { unsigned int bytes; int type; unsigned char h[8]; } fh = {.bytes = 8, .type = 1};
        long fd = syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY);
        report(fd);
        if (fd >= 0)
            close((int)fd);
        return 0;
    }
    if (!strcmp(n, "clone-newns")) {
        /* clone(2) itself (not unshare) with CLONE_NEWNS */
        long pid = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, 0);
        if (pid == 0)
            _exit(0);
        if (pid > 0)
            waitpid((pid_t)pid, NULL, 0);
        return report(pid);
    }
    fprintf(stderr, "probe: unknown syscall %s\n", n);
    return 2;
}

static void print_status_fields(const char **fields, int n)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[512];
    if (!f) {
        printf("%s\n", errno_name(errno));
        return;
    }
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        for (int i = 0; i < n; i++) {
            size_t l = strlen(fields[i]);
            if (!strncmp(line, fields[i], l) && line[l] == ':') {
                char *v = line + l + 1;
                while (*v == ' ' || *v == '\t')
                    v++;
                v[strcspn(v, "\n")] = 0;
                printf("%s%s=%s", first ? "" : " ", fields[i], v);
                first = 0;
            }
        }
    }
    printf("\n");
    fclose(f);
}

static int do_caps(void)
{
    const char *f[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"};
    print_status_fields(f, 6);
    return 0;
}

static int do_seccomp(void)
{
    const char *f[] = {"Seccomp"};
    print_status_fields(f, 1);
    return 0;
}

static int do_connect(int argc, char **argv, int type)
{
    if (argc < 2)
        return 2;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    if (inet_pton(AF_INET, argv[0], &sa.sin_addr) != 1) {
        printf("EINVAL\n");
        return 0;
    }
    int fd = socket(AF_INET, type, 0);
    if (fd < 0)
        return report(-1);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    long rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    if (rc == 0 && type == SOCK_DGRAM)
        rc = send(fd, "probe\n", 6, 0);
    if (rc < 0 && errno == EINPROGRESS)
        errno = ETIMEDOUT;
    report(rc);
    close(fd);
    return 0;
}

/* connect-unix PATH: a stream connect to a Unix socket by path. */
static int do_connect_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        printf("ENAMETOOLONG\n");
        return 0;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return report(-1);
    report(connect(fd, (struct sockaddr *)&sa, sizeof sa));
    close(fd);
    return 0;
}

static int parse_family(const char *s)
{
    if (!strcmp(s, "inet") || !strcmp(s, "AF_INET")) return AF_INET;
    if (!strcmp(s, "inet6") || !strcmp(s, "AF_INET6")) return AF_INET6;
    if (!strcmp(s, "unix") || !strcmp(s, "AF_UNIX")) return AF_UNIX;
    if (!strcmp(s, "packet") || !strcmp(s, "AF_PACKET")) return AF_PACKET;
    if (!strcmp(s, "netlink") || !strcmp(s, "AF_NETLINK")) return AF_NETLINK;
    return atoi(s);
}

static int parse_type(const char *s)
{
    if (!strcmp(s, "stream") || !strcmp(s, "SOCK_STREAM")) return SOCK_STREAM;
    if (!strcmp(s, "dgram") || !strcmp(s, "SOCK_DGRAM")) return SOCK_DGRAM;
    if (!strcmp(s, "raw") || !strcmp(s, "SOCK_RAW")) return SOCK_RAW;
    return atoi(s);
}

static int do_socket(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int proto = argc > 2 ? atoi(argv[2]) : 0;
    int family = parse_family(argv[0]), type = parse_type(argv[1]);
    if (family == AF_INET && type == SOCK_RAW && argc <= 2)
        proto = IPPROTO_ICMP;
    if (family == AF_PACKET && argc <= 2)
        proto = htons(0x0003); /* ETH_P_ALL */
    int fd = socket(family, type, proto);
    report(fd);
    if (fd >= 0)
        close(fd);
    return 0;
}

static int do_write(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return report(-1);
    long rc = write(fd, "probe\n", 6);
    close(fd);
    return report(rc);
}

/* open-w PATH: can PATH be opened for writing? Nothing is written (a
 * kernel file acts on writes, not on opens). */
static int do_open_write(const char *path)
{
    int fd = open(path, O_WRONLY);
    if (fd >= 0)
        close(fd);
    return report(fd < 0 ? -1 : 0);
}

static int do_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return report(-1);
    char buf[64];
    long rc = read(fd, buf, sizeof buf);
    close(fd);
    return report(rc);
}

static int do_mknod(const char *path, int argc, char **argv)
{
    unsigned maj = argc >= 3 ? atoi(argv[1]) : 1, min = argc >= 3 ? atoi(argv[2]) : 3;
    return report(mknod(path, S_IFCHR | 0600, makedev(maj, min)));
}

static int do_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return report(-1);
    int self = dirfd(d);
    struct dirent *e;
    int fds[1024], n = 0;
    while ((e = readdir(d)) && n < 1024) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        if (fd == self)
            continue;
        fds[n++] = fd;
    }
    /* sort, so output is stable */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (fds[j] < fds[i]) {
                int t = fds[i];
                fds[i] = fds[j];
                fds[j] = t;
            }
    for (int i = 0; i < n; i++) {
        char p[64], target[512];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fds[i]);
        ssize_t l = readlink(p, target, sizeof target - 1);
        target[l < 0 ? 0 : l] = 0;
        printf("%d %s\n", fds[i], target);
    }
    closedir(d);
    return 0;
}

static int do_hog_mem(const char *mb_s)
{
    long mb = atol(mb_s);
    for (long i = 0; i < mb; i++) {
        char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            printf("ENOMEM after %ld MB\n", i);
            return 1;
        }
        memset(p, 0x5a, 1 << 20);
    }
    printf("ok %ld MB\n", mb);
    return 0;
}

static int do_fork_bomb(const char *n_s)
{
    int n = atoi(n_s), ok = 0;
    pid_t *pids = calloc(n, sizeof *pids);
    int fail_errno = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            fail_errno = errno;
            break;
        }
        pids[ok++] = p;
    }
    for (int i = 0; i < ok; i++)
        kill(pids[i], SIGKILL);
    for (int i = 0; i < ok; i++)
        waitpid(pids[i], NULL, 0);
    if (fail_errno)
        printf("forked %d %s\n", ok, errno_name(fail_errno));
    else
        printf("forked %d\n", ok);
    return 0;
}

static int do_ids(void)
{
    gid_t groups[256];
    int n = getgroups(256, groups);
    printf("uid=%u gid=%u euid=%u egid=%u groups=", getuid(), getgid(), geteuid(), getegid());
    for (int i = 0; i < n; i++)
        printf("%s%u", i ? "," : "", groups[i]);
    printf(" umask=%04o\n", umask(0));
    return 0;
}

static int do_rlimit(const char *name)
{
    static const struct { const char *n; int r; } tbl[] = {
        {"NOFILE", RLIMIT_NOFILE}, {"NPROC", RLIMIT_NPROC}, {"CORE", RLIMIT_CORE},
        {"AS", RLIMIT_AS}, {"STACK", RLIMIT_STACK}, {"CPU", RLIMIT_CPU},
        {"FSIZE", RLIMIT_FSIZE}, {"MEMLOCK", RLIMIT_MEMLOCK}, {"NICE", RLIMIT_NICE},
    };
    const char *s = name;
    if (!strncmp(s, "RLIMIT_", 7))
        s += 7;
    for (size_t i = 0; i < sizeof tbl / sizeof tbl[0]; i++)
        if (!strcmp(s, tbl[i].n)) {
            struct rlimit rl;
            if (getrlimit(tbl[i].r, &rl) < 0)
                return report(-1);
            if (rl.rlim_cur == RLIM_INFINITY)
                printf("soft=unlimited ");
            else
                printf("soft=%llu ", (unsigned long long)rl.rlim_cur);
            if (rl.rlim_max == RLIM_INFINITY)
                printf("hard=unlimited\n");
            else
                printf("hard=%llu\n", (unsigned long long)rl.rlim_max);
            return 0;
        }
    fprintf(stderr, "probe: unknown rlimit %s\n", name);
    return 2;
}

static int do_sleep(const char *s)
{
    /* sleep in small steps so a pending SIGTERM with default action kills us */
    double secs = atof(s);
    struct timespec ts = {.tv_sec = (time_t)secs, .tv_nsec = (long)((secs - (time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    return 0;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: probe syscall NAME [args] | caps | seccomp | connect HOST PORT | connect-unix PATH | udp HOST PORT |\n"
            "       socket FAMILY TYPE [PROTO] | write PATH | open-w PATH | read PATH | mknod PATH [MAJ MIN] | fds |\n"
            "       hog-mem MB | fork-bomb N | sleep SECS | spin SECS | exit N | env | ids | rlimit NAME | pid\n");
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    int nargs = argc - 2;
    char **args = argv + 2;
    if (!strcmp(cmd, "syscall"))
        return do_syscall(nargs, args);
    if (!strcmp(cmd, "caps"))
        return do_caps();
    if (!strcmp(cmd, "seccomp"))
        return do_seccomp();
    if (!strcmp(cmd, "connect"))
        return do_connect(nargs, args, SOCK_STREAM);
    if (!strcmp(cmd, "connect-unix") && nargs >= 1)
        return do_connect_unix(args[0]);
    if (!strcmp(cmd, "udp"))
        return do_connect(nargs, args, SOCK_DGRAM);
    if (!strcmp(cmd, "socket"))
        return do_socket(nargs, args);
    if (!strcmp(cmd, "write") && nargs >= 1)
        return do_write(args[0]);
    if (!strcmp(cmd, "open-w") && nargs >= 1)
        return do_open_write(args[0]);
    if (!strcmp(cmd, "read") && nargs >= 1)
        return do_read(args[0]);
    if (!strcmp(cmd, "mknod") && nargs >= 1)
        return do_mknod(args[0], nargs, args);
    if (!strcmp(cmd, "fds"))
        return do_fds();
    if (!strcmp(cmd, "hog-mem") && nargs >= 1)
        return do_hog_mem(args[0]);
    if (!strcmp(cmd, "fork-bomb") && nargs >= 1)
        return do_fork_bomb(args[0]);
    if (!strcmp(cmd, "sleep") && nargs >= 1)
        return do_sleep(args[0]);
    if (!strcmp(cmd, "exit") && nargs >= 1)
        return atoi(args[0]);
    if (!strcmp(cmd, "env")) {
        for (char **e = environ; *e; e++)
            printf("%s\n", *e);
        return 0;
    }
    if (!strcmp(cmd, "ids"))
        return do_ids();
    if (!strcmp(cmd, "rlimit") && nargs >= 1)
        return do_rlimit(args[0]);
    if (!strcmp(cmd, "spin") && nargs >= 1) {
        /* busy loop for SECS of wall-clock time: a CPU hog */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double secs = atof(args[0]);
        volatile unsigned long x = 0;
        do {
            for (int i = 0; i < 100000; i++)
                x++;
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
        printf("ok\n");
        return 0;
    }
    if (!strcmp(cmd, "pid")) {
        printf("%d\n", getpid());
        return 0;
    }
    return usage();
}
