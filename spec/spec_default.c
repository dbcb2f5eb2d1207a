/* The documents agentcage writes rather than reads: the default config.json
 * of `agentcage spec` and the runtime-spec "features" document. Both are
 * produced with yajl_gen so the output is always valid JSON. */
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>

#include "runtime/util/build_info.h"
#include "runtime/util/selinux.h"
#include "runtime/util/utils.h"
#include "spec/spec.h"

static void gen_string(yajl_gen g, const char *s)
{
    yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gen_key_string(yajl_gen g, const char *key, const char *value)
{
    gen_string(g, key);
    gen_string(g, value);
}

static void gen_key_int(yajl_gen g, const char *key, long long value)
{
    gen_string(g, key);
    yajl_gen_integer(g, value);
}

static void gen_key_bool(yajl_gen g, const char *key, bool value)
{
    gen_string(g, key);
    yajl_gen_bool(g, value);
}

/* "key": ["a", "b", ...] from a NULL-terminated list. */
static void gen_key_strings(yajl_gen g, const char *key, const char *const *values)
{
    gen_string(g, key);
    yajl_gen_array_open(g);
    for (; *values; values++)
        gen_string(g, *values);
    yajl_gen_array_close(g);
}

static void gen_mount(yajl_gen g, const char *destination, const char *type, const char *source,
                      const char *const *options)
{
    yajl_gen_map_open(g);
    gen_key_string(g, "destination", destination);
    gen_key_string(g, "type", type);
    gen_key_string(g, "source", source);
    if (options)
        gen_key_strings(g, "options", options);
    yajl_gen_map_close(g);
}

static void gen_id_mapping(yajl_gen g, const char *key, unsigned host_id)
{
    gen_string(g, key);
    yajl_gen_array_open(g);
    yajl_gen_map_open(g);
    gen_key_int(g, "containerID", 0);
    gen_key_int(g, "hostID", host_id);
    gen_key_int(g, "size", 1);
    yajl_gen_map_close(g);
    yajl_gen_array_close(g);
}

/* The generated text, NUL terminated, as a malloc'd string; frees g. */
static char *gen_finish(yajl_gen g)
{
    const unsigned char *buf = NULL;
    size_t len = 0;
    char *out = NULL;
    if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
        out = xmalloc(len + 2);
        memcpy(out, buf, len);
        /* End with a newline like other tools' JSON files. */
        if (len == 0 || buf[len - 1] != '\n')
            out[len++] = '\n';
        out[len] = '\0';
    }
    yajl_gen_free(g);
    return out;
}

static yajl_gen gen_new(void)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return NULL;
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_indent_string, "\t");
    return g;
}

static const char *const default_caps[] = { "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL };

char *spec_default_json(bool rootless, bool cgroupns)
{
    yajl_gen g = gen_new();
    if (g == NULL)
        return NULL;

    yajl_gen_map_open(g);
    gen_key_string(g, "ociVersion", "1.2.0");

    gen_string(g, "process");
    yajl_gen_map_open(g);
    gen_key_bool(g, "terminal", true);
    gen_string(g, "user");
    yajl_gen_map_open(g);
    gen_key_int(g, "uid", 0);
    gen_key_int(g, "gid", 0);
    yajl_gen_map_close(g);
    gen_key_strings(g, "args", (const char *const[]){ "sh", NULL });
    gen_key_strings(g, "env", (const char *const[]){
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm", NULL });
    gen_key_string(g, "cwd", "/");
    gen_string(g, "capabilities");
    yajl_gen_map_open(g);
    gen_key_strings(g, "bounding", default_caps);
    gen_key_strings(g, "effective", default_caps);
    gen_key_strings(g, "permitted", default_caps);
    gen_key_strings(g, "ambient", default_caps);
    yajl_gen_map_close(g);
    gen_string(g, "rlimits");
    yajl_gen_array_open(g);
    yajl_gen_map_open(g);
    gen_key_string(g, "type", "RLIMIT_NOFILE");
    gen_key_int(g, "hard", 1024);
    gen_key_int(g, "soft", 1024);
    yajl_gen_map_close(g);
    yajl_gen_array_close(g);
    gen_key_bool(g, "noNewPrivileges", true);
    yajl_gen_map_close(g); /* process */

    gen_string(g, "root");
    yajl_gen_map_open(g);
    gen_key_string(g, "path", "rootfs");
    gen_key_bool(g, "readonly", true);
    yajl_gen_map_close(g);

    gen_key_string(g, "hostname", "agentcage");

    gen_string(g, "mounts");
    yajl_gen_array_open(g);
    gen_mount(g, "/proc", "proc", "proc", NULL);
    gen_mount(g, "/dev", "tmpfs", "tmpfs",
              (const char *const[]){ "nosuid", "strictatime", "mode=755", "size=65536k", NULL });
    /* Without a user namespace mapping gid 5 (tty), devpts refuses gid=5. */
    if (rootless)
        gen_mount(g, "/dev/pts", "devpts", "devpts",
                  (const char *const[]){ "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL });
    else
        gen_mount(g, "/dev/pts", "devpts", "devpts",
                  (const char *const[]){ "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620",
                                         "gid=5", NULL });
    gen_mount(g, "/dev/shm", "tmpfs", "shm",
              (const char *const[]){ "nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL });
    gen_mount(g, "/dev/mqueue", "mqueue", "mqueue", (const char *const[]){ "nosuid", "noexec", "nodev", NULL });
    /* A fresh sysfs needs its own network namespace, which rootless
     * containers do not get: bind the host's read-only instead. */
    if (rootless)
        gen_mount(g, "/sys", "none", "/sys",
                  (const char *const[]){ "rbind", "nosuid", "noexec", "nodev", "ro", NULL });
    else
        gen_mount(g, "/sys", "sysfs", "sysfs", (const char *const[]){ "nosuid", "noexec", "nodev", "ro", NULL });
    gen_mount(g, "/sys/fs/cgroup", "cgroup", "cgroup",
              (const char *const[]){ "nosuid", "noexec", "nodev", "relatime", "ro", NULL });
    yajl_gen_array_close(g);

    gen_string(g, "linux");
    yajl_gen_map_open(g);
    if (rootless) {
        gen_id_mapping(g, "uidMappings", (unsigned)getuid());
        gen_id_mapping(g, "gidMappings", (unsigned)getgid());
    } else {
        /* A rootless container cannot use the device cgroup, so only the
         * root variant denies all devices by default. */
        gen_string(g, "resources");
        yajl_gen_map_open(g);
        gen_string(g, "devices");
        yajl_gen_array_open(g);
        yajl_gen_map_open(g);
        gen_key_bool(g, "allow", false);
        gen_key_string(g, "access", "rwm");
        yajl_gen_map_close(g);
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    }
    gen_string(g, "namespaces");
    yajl_gen_array_open(g);
    /* runc 1.1's lists (Debian's runc): a cgroup namespace only on a pure
     * cgroup v2 host; elsewhere tools and test suites add one themselves,
     * and a second one is an error. */
    const char *const root_namespaces[] = { "pid", "network", "ipc", "uts", "mount", NULL };
    const char *const rootless_namespaces[] = { "pid", "ipc", "uts", "mount", "user", NULL };
    for (const char *const *ns = rootless ? rootless_namespaces : root_namespaces; *ns; ns++) {
        yajl_gen_map_open(g);
        gen_key_string(g, "type", *ns);
        yajl_gen_map_close(g);
    }
    if (cgroupns) {
        yajl_gen_map_open(g);
        gen_key_string(g, "type", "cgroup");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    gen_key_strings(g, "maskedPaths",
                    (const char *const[]){ "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                                           "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                                           "/proc/sched_debug", "/sys/firmware", "/proc/scsi", NULL });
    gen_key_strings(g, "readonlyPaths",
                    (const char *const[]){ "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                           "/proc/sysrq-trigger", NULL });
    yajl_gen_map_close(g); /* linux */

    yajl_gen_map_close(g);
    return gen_finish(g);
}

/* Whether the kernel runs AppArmor: the runtime can only apply profiles then. */
static bool apparmor_enabled(void)
{
    char c = 0;
    FILE *f = fopen("/sys/module/apparmor/parameters/enabled", "re");
    if (f == NULL)
        return false;
    if (fread(&c, 1, 1, f) != 1)
        c = 0;
    fclose(f);
    return c == 'Y';
}

static const char *const mount_options[] = {
    "acl", "async", "atime", "bind", "defaults", "dev", "diratime", "dirsync", "exec", "iversion",
    "lazytime", "loud", "mand", "noacl", "noatime", "nodev", "nodiratime", "noexec", "noiversion",
    "nolazytime", "nomand", "norelatime", "nostrictatime", "nosuid", "nosymfollow", "private", "ratime",
    "rbind", "rdev", "rdiratime", "relatime", "remount", "rexec", "rnoatime", "rnodev", "rnodiratime",
    "rnoexec", "rnorelatime", "rnostrictatime", "rnosuid", "rnosymfollow", "ro", "rprivate", "rrelatime",
    "rro", "rrw", "rshared", "rslave", "rstrictatime", "rsuid", "rsymfollow", "runbindable", "rw",
    "shared", "silent", "slave", "strictatime", "suid", "symfollow", "sync", "tmpcopyup", "unbindable",
    NULL,
};

/* Architecture names as config.json spells them; the features list keeps
 * those this libseccomp knows. */
static const char *const seccomp_archs[] = {
    "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K", "SCMP_ARCH_MIPS",
    "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64",
    "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64",
    "SCMP_ARCH_PPC64LE", "SCMP_ARCH_RISCV64", "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_SH",
    "SCMP_ARCH_SHEB", "SCMP_ARCH_X32", "SCMP_ARCH_X86", "SCMP_ARCH_X86_64", NULL,
};

static bool seccomp_knows_arch(const char *name)
{
    char lower[64];
    const char *s = name + strlen("SCMP_ARCH_");
    size_t i;
    for (i = 0; s[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
    lower[i] = '\0';
    return seccomp_arch_resolve_name(lower) != 0;
}

char *spec_features_json(void)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g == NULL)
        return NULL;
    yajl_gen_config(g, yajl_gen_beautify, 1);

    yajl_gen_map_open(g);
    gen_key_string(g, "ociVersionMin", "1.0.0");
    gen_key_string(g, "ociVersionMax", "1.2.0");
    gen_string(g, "hooks");
    yajl_gen_array_open(g);
    for (int kind = 0; kind < HOOK_KIND_COUNT; kind++)
        gen_string(g, oci_hook_kind_names[kind]);
    yajl_gen_array_close(g);
    gen_key_strings(g, "mountOptions", mount_options);

    gen_string(g, "linux");
    yajl_gen_map_open(g);
    gen_key_strings(g, "namespaces",
                    (const char *const[]){ "cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts",
                                           NULL });
    gen_string(g, "capabilities");
    yajl_gen_array_open(g);
    for (cap_value_t cap = 0; cap < 64; cap++) {
        char *name = cap_to_name(cap);
        if (name == NULL)
            continue;
        /* cap_to_name() gives "cap_chown", or a bare number for bits this
         * libcap has no name for; those are not listed. */
        if (strncmp(name, "cap_", 4) == 0) {
            char upper[64];
            size_t i;
            for (i = 0; name[i] && i + 1 < sizeof(upper); i++)
                upper[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 'a' + 'A' : name[i]);
            upper[i] = '\0';
            gen_string(g, upper);
        }
        cap_free(name);
    }
    yajl_gen_array_close(g);

    gen_string(g, "cgroup");
    yajl_gen_map_open(g);
    gen_key_bool(g, "v1", true);
    gen_key_bool(g, "v2", true);
    gen_key_bool(g, "systemd", false);
    gen_key_bool(g, "systemdUser", false);
    yajl_gen_map_close(g);

    gen_string(g, "seccomp");
    yajl_gen_map_open(g);
    gen_key_bool(g, "enabled", true);
    gen_key_strings(g, "actions",
                    (const char *const[]){ "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
                                           "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
                                           "SCMP_ACT_NOTIFY", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP", NULL });
    gen_key_strings(g, "operators",
                    (const char *const[]){ "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE",
                                           "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", NULL });
    gen_string(g, "archs");
    yajl_gen_array_open(g);
    for (const char *const *arch = seccomp_archs; *arch; arch++)
        if (seccomp_knows_arch(*arch))
            gen_string(g, *arch);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);

    gen_string(g, "apparmor");
    yajl_gen_map_open(g);
    gen_key_bool(g, "enabled", apparmor_enabled());
    yajl_gen_map_close(g);
    gen_string(g, "selinux");
    yajl_gen_map_open(g);
    ac_selinux_probe();
    bool selinux = ac_selinux_enabled() > 0;
    gen_key_bool(g, "enabled", selinux);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g); /* linux */

    gen_string(g, "annotations");
    yajl_gen_map_open(g);
    struct build_lib libs[BUILD_LIB_COUNT];
    build_libs(libs);
    for (int i = 0; i < BUILD_LIB_COUNT; i++)
        gen_key_string(g, libs[i].annotation, libs[i].version);
    gen_key_string(g, "io.agentcage.version", build_version());
    gen_key_string(g, "io.agentcage.commit", build_commit());
    yajl_gen_map_close(g);
    /* Annotations under io.agentcage. change how a container is run (a
     * trailing dot means a prefix, per the runtime-spec). */
    gen_key_strings(g, "potentiallyUnsafeConfigAnnotations", (const char *const[]){ "io.agentcage.", NULL });

    yajl_gen_map_close(g);
    return gen_finish(g);
}
