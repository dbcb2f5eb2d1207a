/* Unit tests of the config.json parser (spec/spec_parse.c) and of the
 * documents agentcage generates (spec/spec_default.c). No root needed. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "runtime/util/utils.h"
#include "spec/spec.h"
#include "tests/testlib.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define CAP_BIT(n) (UINT64_C(1) << (n))
/* Capability numbers from linux/capability.h. */
enum { C_CHOWN = 0, C_KILL = 5, C_NET_BIND_SERVICE = 10, C_NET_RAW = 13, C_SYS_ADMIN = 21, C_CHECKPOINT_RESTORE = 40 };

/* tests/data, found from the current directory (make runs from the
 * repository) or else from the binary's place (build/tests/). */
static const char *data_path(const char *name)
{
    static char path[2 * PATH_MAX];
    snprintf(path, sizeof(path), "tests/data/%s", name);
    if (access(path, R_OK) == 0)
        return path;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(path, sizeof(path), "%s/../../tests/data/%s", exe, name);
    }
    return path;
}

static struct oci_spec *load_data(const char *name)
{
    struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    if (spec_load(data_path(name), &spec, &err) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        FAIL("loading %s: %s", name, msg);
        return NULL;
    }
    return spec;
}

static char *read_data(const char *name, size_t *len)
{
    char *text = NULL;
    cleanup_error ac_error_t err = NULL;
    if (read_all_file(data_path(name), &text, len, &err) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        FAIL("reading %s: %s", name, msg);
        return NULL;
    }
    return text;
}

/* The string array is NULL-terminated and holds the expected strings. */
static bool strv_equal(char **v, size_t n, const char *const *expected)
{
    size_t i;
    if (v == NULL)
        return expected == NULL || expected[0] == NULL;
    for (i = 0; expected[i]; i++)
        if (i >= n || v[i] == NULL || strcmp(v[i], expected[i]) != 0)
            return false;
    return i == n && v[n] == NULL;
}
#define STRV(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const uint64_t docker_default_caps =
    CAP_BIT(0) | CAP_BIT(1) | CAP_BIT(3) | CAP_BIT(4) | CAP_BIT(27) | CAP_BIT(13) | CAP_BIT(6) | CAP_BIT(7)
    | CAP_BIT(31) | CAP_BIT(8) | CAP_BIT(10) | CAP_BIT(18) | CAP_BIT(5) | CAP_BIT(29);

/* ---------------- the engines' real configs ---------------- */

TEST(docker_run_config)
{
    cleanup_spec struct oci_spec *spec = load_data("config.json-docker-run.json");
    REQUIRE(spec != NULL);
    CHECK_EQ_STR(spec->oci_version, "1.0.2-dev");
    CHECK(spec->root_path && strstr(spec->root_path, "/merged") != NULL);
    CHECK(!spec->root_readonly);
    CHECK_EQ_STR(spec->hostname, "17053f7303cd");
    CHECK(spec->domainname == NULL);

    struct oci_process *p = spec->process;
    REQUIRE(p != NULL);
    CHECK(!p->terminal);
    CHECK(!p->has_console_size);
    CHECK(strv_equal(p->args, p->n_args, STRV("true")));
    CHECK_EQ_INT(p->n_env, 2);
    CHECK_EQ_STR(p->env[1], "HOSTNAME=17053f7303cd");
    CHECK(p->env[2] == NULL);
    CHECK_EQ_STR(p->cwd, "/");
    CHECK_EQ_INT(p->user.uid, 0);
    CHECK_EQ_INT(p->user.gid, 0);
    CHECK(!p->user.has_umask);
    REQUIRE_EQ_INT(p->user.n_additional_gids, 1);
    CHECK_EQ_INT(p->user.additional_gids[0], 0);
    CHECK(p->has_capabilities);
    CHECK_EQ_UINT(p->capabilities.bounding, docker_default_caps);
    CHECK_EQ_UINT(p->capabilities.effective, docker_default_caps);
    CHECK_EQ_UINT(p->capabilities.permitted, docker_default_caps);
    CHECK_EQ_UINT(p->capabilities.inheritable, 0);
    CHECK_EQ_UINT(p->capabilities.ambient, 0);
    CHECK(p->has_oom_score_adj);
    CHECK_EQ_INT(p->oom_score_adj, 0);
    CHECK(!p->no_new_privileges);
    CHECK_EQ_INT(p->n_rlimits, 0);
    CHECK(p->scheduler == NULL);
    CHECK(!p->has_io_priority);

    REQUIRE_EQ_INT(spec->n_mounts, 10);
    CHECK_EQ_STR(spec->mounts[0].destination, "/proc");
    CHECK_EQ_STR(spec->mounts[2].type, "devpts");
    CHECK(strv_equal(spec->mounts[2].options, spec->mounts[2].n_options,
                     STRV("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5")));
    CHECK_EQ_STR(spec->mounts[7].destination, "/etc/resolv.conf");
    CHECK_EQ_STR(spec->mounts[7].type, "bind");
    CHECK(spec->mounts[7].source && strstr(spec->mounts[7].source, "resolv.conf") != NULL);
    for (int k = 0; k < HOOK_KIND_COUNT; k++)
        CHECK_EQ_INT(spec->hooks.n_hooks[k], 0);
    CHECK_EQ_INT(spec->n_annotations, 0);

    struct oci_linux *l = spec->linux;
    REQUIRE(l != NULL);
    CHECK_EQ_INT(l->n_sysctl, 2);
    CHECK_EQ_STR(l->sysctl[1].key, "net.ipv4.ping_group_range");
    CHECK_EQ_STR(l->sysctl[1].value, "0 2147483647");
    CHECK_EQ_STR(l->cgroups_path, "/docker/17053f7303cd3f49fca8e8505a0d383f74bec245518d7309e91a2ae9193e7857");
    REQUIRE_EQ_INT(l->n_namespaces, 5);
    CHECK_EQ_INT(l->namespaces[0].type, CLONE_NEWNS);
    CHECK_EQ_STR(l->namespaces[0].type_name, "mount");
    CHECK(l->namespaces[0].path == NULL);
    CHECK(spec_namespace(spec, CLONE_NEWNET) == &l->namespaces[1]);
    CHECK(spec_namespace(spec, CLONE_NEWUSER) == NULL);
    CHECK(spec_namespace(spec, CLONE_NEWCGROUP) == NULL);
    CHECK_EQ_INT(l->n_masked_paths, 10);
    CHECK_EQ_STR(l->masked_paths[9], "/sys/firmware");
    CHECK(l->masked_paths[10] == NULL);
    CHECK_EQ_INT(l->n_readonly_paths, 5);
    CHECK(l->rootfs_propagation == NULL);

    struct oci_resources *r = l->resources;
    REQUIRE(r != NULL);
    REQUIRE_EQ_INT(r->n_devices, 8);
    CHECK(!r->devices[0].allow);
    CHECK_EQ_INT(r->devices[0].type, 'a');
    CHECK_EQ_INT(r->devices[0].major, -1);
    CHECK_EQ_INT(r->devices[0].minor, -1);
    CHECK_EQ_STR(r->devices[0].access, "rwm");
    CHECK(r->devices[1].allow);
    CHECK_EQ_INT(r->devices[1].type, 'c');
    CHECK_EQ_INT(r->devices[1].major, 1);
    CHECK_EQ_INT(r->devices[1].minor, 5);
    CHECK(!r->devices[7].allow);
    CHECK_EQ_INT(r->devices[7].minor, 229);
    CHECK(r->has_memory);
    CHECK(r->memory.has_disable_oom_killer);
    CHECK(!r->memory.disable_oom_killer);
    CHECK(!r->memory.has_limit);
    CHECK(r->has_cpu);
    CHECK(r->cpu.has_shares);
    CHECK_EQ_UINT(r->cpu.shares, 0);
    CHECK(!r->cpu.has_quota);
    CHECK(r->has_blkio);
    CHECK(r->blkio.has_weight);
    CHECK_EQ_INT(r->blkio.weight, 0);
    CHECK(!r->has_pids);

    struct oci_seccomp *s = l->seccomp;
    REQUIRE(s != NULL);
    CHECK_EQ_INT(s->default_action, SECCOMP_ACTION_ERRNO);
    CHECK(!s->has_default_errno_ret);
    CHECK(strv_equal(s->architectures, s->n_architectures, STRV("SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32")));
    REQUIRE_EQ_INT(s->n_syscalls, 12);
    CHECK_EQ_INT(s->syscalls[0].n_names, 346);
    CHECK_EQ_STR(s->syscalls[0].names[0], "accept");
    CHECK(s->syscalls[0].names[346] == NULL);
    CHECK_EQ_INT(s->syscalls[0].action, SECCOMP_ACTION_ALLOW);
    REQUIRE_EQ_INT(s->syscalls[6].n_args, 1);
    CHECK_EQ_UINT(s->syscalls[6].args[0].value, 4294967295u);
    CHECK_EQ_INT(s->syscalls[6].args[0].op, SECCOMP_OP_EQ);
    REQUIRE_EQ_INT(s->syscalls[9].n_args, 1);
    CHECK_EQ_INT(s->syscalls[9].args[0].op, SECCOMP_OP_MASKED_EQ);
    CHECK_EQ_UINT(s->syscalls[9].args[0].value, 2114060288);
    CHECK_EQ_STR(s->syscalls[10].names[0], "clone3");
    CHECK_EQ_INT(s->syscalls[10].action, SECCOMP_ACTION_ERRNO);
    CHECK(s->syscalls[10].has_errno_ret);
    CHECK_EQ_INT(s->syscalls[10].errno_ret, 38);
}

TEST(podman_run_config)
{
    cleanup_spec struct oci_spec *spec = load_data("config.json-podman-run.json");
    REQUIRE(spec != NULL);
    struct oci_process *p = spec->process;
    REQUIRE(p != NULL);
    CHECK(p->user.has_umask);
    CHECK_EQ_INT(p->user.umask, 18);
    CHECK_EQ_INT(p->user.n_additional_gids, 0);
    CHECK(p->user.additional_gids == NULL);
    CHECK_EQ_INT(p->n_env, 5);
    CHECK_EQ_STR(p->env[0], "container=podman");
    CHECK(!p->has_oom_score_adj);
    REQUIRE_EQ_INT(p->n_rlimits, 2);
    CHECK_EQ_STR(p->rlimits[0].type, "RLIMIT_NOFILE");
    CHECK_EQ_INT(p->rlimits[0].resource, RLIMIT_NOFILE);
    CHECK_EQ_UINT(p->rlimits[0].hard, 20000);
    CHECK_EQ_UINT(p->rlimits[0].soft, 20000);
    CHECK_EQ_INT(p->rlimits[1].resource, RLIMIT_NPROC);
    CHECK_EQ_UINT(p->rlimits[1].hard, 32768);
    CHECK_EQ_UINT(p->capabilities.bounding, docker_default_caps);

    CHECK_EQ_INT(spec->n_mounts, 10);
    CHECK_EQ_STR(spec->mounts[5].destination, "/dev/shm");
    CHECK(strv_equal(spec->mounts[5].options, spec->mounts[5].n_options,
                     STRV("bind", "rprivate", "nosuid", "noexec", "nodev")));

    CHECK_EQ_INT(spec->n_annotations, 9);
    CHECK_EQ_STR(spec_annotation(spec, "io.agentcage.policy"), "strict");
    CHECK_EQ_STR(spec_annotation(spec, "io.container.manager"), "libpod");
    CHECK_EQ_STR(spec_annotation(spec, "org.opencontainers.image.stopSignal"), "15");
    CHECK(spec_annotation(spec, "io.agentcage.nope") == NULL);

    struct oci_linux *l = spec->linux;
    REQUIRE(l != NULL && l->resources != NULL && l->seccomp != NULL);
    CHECK(l->resources->has_pids);
    CHECK(l->resources->has_pids_limit);
    CHECK_EQ_INT(l->resources->pids_limit, 2048);
    CHECK(!l->resources->has_memory);
    CHECK(!l->resources->has_cpu);
    CHECK_EQ_INT(l->resources->n_devices, 1);
    CHECK(l->seccomp->has_default_errno_ret);
    CHECK_EQ_INT(l->seccomp->default_errno_ret, 38);
    REQUIRE_EQ_INT(l->seccomp->n_syscalls, 19);
    CHECK_EQ_INT(l->seccomp->syscalls[0].n_names, 28);
    CHECK(l->seccomp->syscalls[0].has_errno_ret);
    CHECK_EQ_INT(l->seccomp->syscalls[0].errno_ret, 1);
    CHECK(!l->seccomp->syscalls[1].has_errno_ret);
    CHECK_EQ_STR(l->seccomp->syscalls[18].names[0], "socket");
    CHECK_EQ_INT(l->n_masked_paths, 11);
    CHECK_EQ_STR(l->masked_paths[10], "/sys/dev/block");
    CHECK_EQ_INT(l->n_readonly_paths, 6);
    CHECK(l->sysctl == NULL);
    CHECK_EQ_INT(l->n_sysctl, 0);
}

TEST(ctr_run_config)
{
    cleanup_spec struct oci_spec *spec = load_data("config.json-ctr-run.json");
    REQUIRE(spec != NULL);
    CHECK_EQ_STR(spec->root_path, "rootfs");
    CHECK(spec->hostname == NULL);
    REQUIRE(spec->process != NULL);
    CHECK(spec->process->no_new_privileges);
    REQUIRE_EQ_INT(spec->process->n_rlimits, 1);
    CHECK_EQ_UINT(spec->process->rlimits[0].soft, 1024);
    CHECK_EQ_INT(spec->n_mounts, 7);
    CHECK_EQ_STR(spec->mounts[6].destination, "/run");
    REQUIRE(spec->linux != NULL && spec->linux->resources != NULL);
    struct oci_resources *r = spec->linux->resources;
    REQUIRE_EQ_INT(r->n_devices, 10);
    CHECK_EQ_INT(r->devices[8].major, 136);
    CHECK_EQ_INT(r->devices[8].minor, -1);
    CHECK(r->has_cpu);
    CHECK_EQ_UINT(r->cpu.shares, 1024);
    CHECK(spec->linux->seccomp == NULL);
    CHECK_EQ_STR(spec->linux->cgroups_path, "/agentcage-smoke/cfg0");
    CHECK(strv_equal(spec->linux->readonly_paths, spec->linux->n_readonly_paths,
                     STRV("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")));
    CHECK(spec_namespace(spec, CLONE_NEWPID) != NULL);
}

TEST(podman_exec_process)
{
    size_t len = 0;
    cleanup_free char *text = read_data("process.json-podman-exec.json", &len);
    REQUIRE(text != NULL);
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    REQUIRE_EQ_INT(spec_parse_process(text, len, "process.json", &spec, &err), 0);
    REQUIRE(spec->process != NULL);
    CHECK(spec->linux == NULL);
    CHECK(spec->oci_version == NULL);
    CHECK(strv_equal(spec->process->args, spec->process->n_args, STRV("sh", "-c", "echo hi from exec")));
    CHECK_EQ_INT(spec->process->n_env, 4);
    CHECK_EQ_STR(spec->process->env[3], "HOME=/root");
    CHECK(!spec->process->terminal);
    CHECK_EQ_INT(spec->process->n_rlimits, 2);
    CHECK_EQ_UINT(spec->process->capabilities.effective, docker_default_caps);
}

TEST(ctr_exec_tty_process)
{
    size_t len = 0;
    cleanup_free char *text = read_data("process.json-ctr-exec-tty.json", &len);
    REQUIRE(text != NULL);
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    REQUIRE_EQ_INT(spec_parse_process(text, len, "process.json", &spec, &err), 0);
    REQUIRE(spec->process != NULL);
    CHECK(spec->process->terminal);
    CHECK(spec->process->no_new_privileges);
    CHECK(strv_equal(spec->process->args, spec->process->n_args, STRV("tty")));
    CHECK_EQ_INT(spec->process->user.n_additional_gids, 1);
}

TEST(docker_update_resources)
{
    size_t len = 0;
    cleanup_free char *text = read_data("docker-update-stdin.json", &len);
    REQUIRE(text != NULL);
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    REQUIRE_EQ_INT(spec_parse_resources(text, len, "resources", &spec, &err), 0);
    REQUIRE(spec->linux != NULL && spec->linux->resources != NULL);
    CHECK(spec->process == NULL);
    struct oci_resources *r = spec->linux->resources;
    CHECK(r->has_memory);
    CHECK(r->memory.has_limit);
    CHECK_EQ_INT(r->memory.limit, 33554432);
    CHECK(r->memory.has_reservation);
    CHECK_EQ_INT(r->memory.reservation, 0);
    CHECK_EQ_INT(r->memory.swap, 67108864);
    CHECK(r->memory.has_kernel);
    CHECK(!r->memory.has_swappiness);
    CHECK(r->cpu.has_quota);
    CHECK_EQ_INT(r->cpu.quota, 0);
    CHECK(r->cpu.has_period);
    CHECK(r->has_blkio);
    CHECK(!r->has_pids);
    CHECK_EQ_INT(r->n_devices, 0);
}

/* ---------------- every field ---------------- */

TEST(full_config_process)
{
    cleanup_spec struct oci_spec *spec = load_data("config-full.json");
    REQUIRE(spec != NULL);
    CHECK_EQ_STR(spec->oci_version, "1.2.0");
    CHECK_EQ_STR(spec->root_path, "rootfs");
    CHECK(spec->root_readonly);
    CHECK_EQ_STR(spec->hostname, "cage");
    CHECK_EQ_STR(spec->domainname, "example.org");

    struct oci_process *p = spec->process;
    REQUIRE(p != NULL);
    CHECK(p->terminal);
    CHECK(p->has_console_size);
    CHECK_EQ_INT(p->console_height, 25);
    CHECK_EQ_INT(p->console_width, 80);
    CHECK_EQ_INT(p->user.uid, 1000);
    CHECK_EQ_INT(p->user.gid, 1001);
    CHECK(p->user.has_umask);
    CHECK_EQ_INT(p->user.umask, 022);
    REQUIRE_EQ_INT(p->user.n_additional_gids, 2);
    CHECK_EQ_UINT(p->user.additional_gids[1], 4294967295u);
    CHECK_EQ_STR(p->user.username, "agent");
    CHECK(strv_equal(p->args, p->n_args, STRV("/bin/sh", "-c", "echo hi")));
    CHECK_EQ_STR(p->command_line, "ignored");
    CHECK(strv_equal(p->env, p->n_env, STRV("PATH=/bin", "TERM=xterm")));
    CHECK_EQ_STR(p->cwd, "/work");
    CHECK(p->has_capabilities);
    CHECK_EQ_UINT(p->capabilities.bounding, CAP_BIT(C_SYS_ADMIN) | CAP_BIT(C_CHECKPOINT_RESTORE));
    CHECK_EQ_UINT(p->capabilities.effective, CAP_BIT(C_CHOWN));
    CHECK_EQ_UINT(p->capabilities.inheritable, 0);
    CHECK_EQ_UINT(p->capabilities.permitted, CAP_BIT(C_KILL) | CAP_BIT(C_NET_RAW));
    CHECK_EQ_UINT(p->capabilities.ambient, CAP_BIT(C_NET_BIND_SERVICE));
    REQUIRE_EQ_INT(p->n_rlimits, 2);
    CHECK_EQ_INT(p->rlimits[0].resource, RLIMIT_NOFILE);
    CHECK_EQ_UINT(p->rlimits[0].hard, 4096);
    CHECK_EQ_UINT(p->rlimits[0].soft, 1024);
    CHECK_EQ_INT(p->rlimits[1].resource, RLIMIT_CORE);
    CHECK_EQ_UINT(p->rlimits[1].hard, UINT64_MAX);
    CHECK(p->no_new_privileges);
    CHECK_EQ_STR(p->apparmor_profile, "agentcage-default");
    CHECK_EQ_STR(p->selinux_label, "system_u:system_r:container_t:s0");
    CHECK(p->has_oom_score_adj);
    CHECK_EQ_INT(p->oom_score_adj, -500);
    CHECK(p->has_io_priority);
    CHECK_EQ_STR(p->io_priority_class, "IOPRIO_CLASS_IDLE");
    CHECK_EQ_INT(p->io_priority_class_value, 3);
    CHECK_EQ_INT(p->io_priority, 7);
    REQUIRE(p->scheduler != NULL);
    CHECK_EQ_STR(p->scheduler->policy, "SCHED_DEADLINE");
    CHECK_EQ_INT(p->scheduler->policy_value, 6);
    CHECK(p->scheduler->has_nice);
    CHECK_EQ_INT(p->scheduler->nice, -5);
    CHECK_EQ_INT(p->scheduler->priority, 10);
    CHECK(strv_equal(p->scheduler->flags, p->scheduler->n_flags, STRV("SCHED_FLAG_RESET_ON_FORK")));
    CHECK_EQ_UINT(p->scheduler->runtime, 1000);
    CHECK_EQ_UINT(p->scheduler->deadline, 2000);
    CHECK(p->scheduler->has_period);
    CHECK_EQ_UINT(p->scheduler->period, 3000);
}

TEST(full_config_mounts_hooks_annotations)
{
    cleanup_spec struct oci_spec *spec = load_data("config-full.json");
    REQUIRE(spec != NULL);
    REQUIRE_EQ_INT(spec->n_mounts, 2);
    CHECK(spec->mounts[0].options == NULL);
    CHECK_EQ_INT(spec->mounts[0].n_options, 0);
    struct oci_mount *m = &spec->mounts[1];
    CHECK_EQ_STR(m->source, "/srv/data");
    CHECK(strv_equal(m->options, m->n_options, STRV("rbind", "ro", "idmap")));
    REQUIRE_EQ_INT(m->n_uid_mappings, 1);
    CHECK_EQ_UINT(m->uid_mappings[0].host_id, 100000);
    CHECK_EQ_UINT(m->uid_mappings[0].size, 65536);
    REQUIRE_EQ_INT(m->n_gid_mappings, 1);
    CHECK_EQ_UINT(m->gid_mappings[0].host_id, 200000);

    CHECK_EQ_STR(oci_hook_kind_names[HOOK_PRESTART], "prestart");
    CHECK_EQ_STR(oci_hook_kind_names[HOOK_CREATE_RUNTIME], "createRuntime");
    CHECK_EQ_STR(oci_hook_kind_names[HOOK_CREATE_CONTAINER], "createContainer");
    CHECK_EQ_STR(oci_hook_kind_names[HOOK_START_CONTAINER], "startContainer");
    CHECK_EQ_STR(oci_hook_kind_names[HOOK_POSTSTART], "poststart");
    CHECK_EQ_STR(oci_hook_kind_names[HOOK_POSTSTOP], "poststop");
    const struct oci_hooks *h = &spec->hooks;
    CHECK_EQ_INT(h->n_hooks[HOOK_PRESTART], 1);
    CHECK_EQ_STR(h->hooks[HOOK_PRESTART][0].path, "/bin/true");
    CHECK(!h->hooks[HOOK_PRESTART][0].has_timeout);
    CHECK(h->hooks[HOOK_PRESTART][0].args == NULL);
    REQUIRE_EQ_INT(h->n_hooks[HOOK_CREATE_RUNTIME], 1);
    const struct oci_hook *cr = &h->hooks[HOOK_CREATE_RUNTIME][0];
    CHECK(strv_equal(cr->args, cr->n_args, STRV("hook", "create")));
    CHECK(strv_equal(cr->env, cr->n_env, STRV("A=1")));
    CHECK(cr->has_timeout);
    CHECK_EQ_INT(cr->timeout, 5);
    CHECK_EQ_INT(h->n_hooks[HOOK_CREATE_CONTAINER], 0);
    REQUIRE_EQ_INT(h->n_hooks[HOOK_START_CONTAINER], 2);
    CHECK_EQ_INT(h->hooks[HOOK_START_CONTAINER][1].timeout, 1);
    CHECK_EQ_INT(h->n_hooks[HOOK_POSTSTART], 1);
    REQUIRE_EQ_INT(h->n_hooks[HOOK_POSTSTOP], 1);
    CHECK_EQ_STR(h->hooks[HOOK_POSTSTOP][0].args[0], "poststop");

    CHECK_EQ_INT(spec->n_annotations, 2);
    CHECK_EQ_STR(spec_annotation(spec, "io.agentcage.tier"), "2");
}

TEST(full_config_linux)
{
    cleanup_spec struct oci_spec *spec = load_data("config-full.json");
    REQUIRE(spec != NULL && spec->linux != NULL);
    struct oci_linux *l = spec->linux;
    REQUIRE_EQ_INT(l->n_namespaces, 8);
    static const int types[] = { CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWIPC,
                                 CLONE_NEWUTS, CLONE_NEWUSER, CLONE_NEWCGROUP, CLONE_NEWTIME };
    for (size_t i = 0; i < 8; i++)
        CHECK_EQ_INT(l->namespaces[i].type, types[i]);
    CHECK_EQ_STR(l->namespaces[7].type_name, "time");
    CHECK_EQ_STR(spec_namespace(spec, CLONE_NEWNET)->path, "/var/run/netns/x");
    REQUIRE_EQ_INT(l->n_uid_mappings, 1);
    CHECK_EQ_UINT(l->uid_mappings[0].host_id, 1000);
    REQUIRE_EQ_INT(l->n_gid_mappings, 2);
    CHECK_EQ_UINT(l->gid_mappings[1].container_id, 1);
    CHECK_EQ_UINT(l->gid_mappings[1].size, 65536);
    REQUIRE_EQ_INT(l->n_devices, 3);
    CHECK_EQ_STR(l->devices[0].path, "/dev/fuse");
    CHECK_EQ_INT(l->devices[0].type, 'c');
    CHECK_EQ_INT(l->devices[0].major, 10);
    CHECK_EQ_INT(l->devices[0].minor, 229);
    CHECK(l->devices[0].has_file_mode);
    CHECK_EQ_INT(l->devices[0].file_mode, 0666);
    CHECK(l->devices[0].has_uid && l->devices[0].has_gid);
    CHECK_EQ_INT(l->devices[1].type, 'b');
    CHECK(!l->devices[1].has_file_mode);
    CHECK_EQ_INT(l->devices[2].type, 'p');
    CHECK_EQ_STR(l->cgroups_path, "/agentcage/full");
    CHECK_EQ_INT(l->n_sysctl, 1);
    CHECK_EQ_STR(l->rootfs_propagation, "rslave");
    CHECK(strv_equal(l->masked_paths, l->n_masked_paths, STRV("/proc/kcore", "/sys/firmware")));
    CHECK(strv_equal(l->readonly_paths, l->n_readonly_paths, STRV("/proc/sys")));
    CHECK_EQ_STR(l->mount_label, "system_u:object_r:container_file_t:s0");
    CHECK(l->has_personality);
    CHECK_EQ_STR(l->personality_domain, "LINUX32");
    CHECK_EQ_INT(l->n_personality_flags, 0);
    CHECK(l->personality_flags != NULL && l->personality_flags[0] == NULL);
    CHECK(l->has_time_offsets);
    CHECK(l->has_boottime_offset);
    CHECK_EQ_INT(l->boottime.secs, -3600);
    CHECK_EQ_INT(l->boottime.nanosecs, 5);
    CHECK(l->has_monotonic_offset);
    CHECK_EQ_INT(l->monotonic.secs, 86400);
    CHECK_EQ_INT(l->monotonic.nanosecs, 0);
}

TEST(full_config_resources)
{
    cleanup_spec struct oci_spec *spec = load_data("config-full.json");
    REQUIRE(spec != NULL && spec->linux != NULL && spec->linux->resources != NULL);
    struct oci_resources *r = spec->linux->resources;
    REQUIRE_EQ_INT(r->n_devices, 3);
    CHECK_EQ_STR(r->devices[1].access, "rw");
    CHECK_EQ_INT(r->devices[2].type, 'b');
    CHECK_EQ_INT(r->devices[2].major, 8);
    CHECK_EQ_INT(r->devices[2].minor, -1);
    CHECK(r->devices[2].access == NULL);

    struct oci_memory *m = &r->memory;
    CHECK(r->has_memory);
    CHECK(m->has_limit);
    CHECK_EQ_INT(m->limit, -1);
    CHECK_EQ_INT(m->reservation, 1048576);
    CHECK_EQ_INT(m->swap, 2097152);
    CHECK_EQ_INT(m->kernel, -1);
    CHECK_EQ_INT(m->kernel_tcp, 4096);
    CHECK(m->has_swappiness);
    CHECK_EQ_UINT(m->swappiness, 60);
    CHECK(m->has_disable_oom_killer && m->disable_oom_killer);
    CHECK(m->has_use_hierarchy && !m->use_hierarchy);
    CHECK(m->has_check_before_update && m->check_before_update);

    struct oci_cpu *c = &r->cpu;
    CHECK(r->has_cpu);
    CHECK_EQ_UINT(c->shares, 512);
    CHECK_EQ_INT(c->quota, -1);
    CHECK_EQ_UINT(c->burst, 1000);
    CHECK_EQ_UINT(c->period, 100000);
    CHECK_EQ_INT(c->realtime_runtime, 950000);
    CHECK_EQ_UINT(c->realtime_period, 1000000);
    CHECK_EQ_STR(c->cpus, "0-1");
    CHECK_EQ_STR(c->mems, "0");
    CHECK(c->has_idle);
    CHECK_EQ_INT(c->idle, 1);

    CHECK(r->has_pids && r->has_pids_limit);
    CHECK_EQ_INT(r->pids_limit, 100);

    struct oci_blkio *b = &r->blkio;
    CHECK(r->has_blkio);
    CHECK_EQ_INT(b->weight, 500);
    CHECK_EQ_INT(b->leaf_weight, 300);
    REQUIRE_EQ_INT(b->n_weight_device, 2);
    CHECK(b->weight_device[0].has_weight && !b->weight_device[0].has_leaf_weight);
    CHECK_EQ_INT(b->weight_device[0].weight, 600);
    CHECK_EQ_INT(b->weight_device[1].minor, 16);
    CHECK_EQ_INT(b->weight_device[1].leaf_weight, 50);
    REQUIRE_EQ_INT(b->n_throttle_read_bps_device, 1);
    CHECK_EQ_UINT(b->throttle_read_bps_device[0].rate, 104857600);
    REQUIRE_EQ_INT(b->n_throttle_write_bps_device, 1);
    CHECK_EQ_UINT(b->throttle_write_bps_device[0].rate, 52428800);
    REQUIRE_EQ_INT(b->n_throttle_read_iops_device, 1);
    CHECK_EQ_UINT(b->throttle_read_iops_device[0].rate, 1000);
    REQUIRE_EQ_INT(b->n_throttle_write_iops_device, 2);
    CHECK_EQ_INT(b->throttle_write_iops_device[1].minor, 16);
    CHECK_EQ_UINT(b->throttle_write_iops_device[1].rate, 400);

    REQUIRE_EQ_INT(r->n_hugepage_limits, 2);
    CHECK_EQ_STR(r->hugepage_limits[0].page_size, "2MB");
    CHECK_EQ_UINT(r->hugepage_limits[0].limit, 209715200);
    CHECK(r->has_network && r->has_net_class_id);
    CHECK_EQ_UINT(r->net_class_id, 1048577);
    REQUIRE_EQ_INT(r->n_net_priorities, 2);
    CHECK_EQ_STR(r->net_priorities[0].name, "eth0");
    CHECK_EQ_UINT(r->net_priorities[0].priority, 500);
    REQUIRE_EQ_INT(r->n_unified, 2);
    CHECK_EQ_STR(r->unified[0].key, "memory.high");
    CHECK_EQ_STR(r->unified[1].value, "default 100");
}

TEST(full_config_seccomp)
{
    cleanup_spec struct oci_spec *spec = load_data("config-full.json");
    REQUIRE(spec != NULL && spec->linux != NULL && spec->linux->seccomp != NULL);
    struct oci_seccomp *s = spec->linux->seccomp;
    CHECK_EQ_INT(s->default_action, SECCOMP_ACTION_KILL_PROCESS);
    CHECK(s->has_default_errno_ret);
    CHECK_EQ_INT(s->default_errno_ret, 1);
    CHECK(strv_equal(s->architectures, s->n_architectures, STRV("SCMP_ARCH_X86_64", "SCMP_ARCH_X86")));
    CHECK(strv_equal(s->flags, s->n_flags, STRV("SECCOMP_FILTER_FLAG_LOG")));
    CHECK_EQ_STR(s->listener_path, "/run/seccomp.sock");
    CHECK_EQ_STR(s->listener_metadata, "meta");
    REQUIRE_EQ_INT(s->n_syscalls, 9);
    CHECK(strv_equal(s->syscalls[0].names, s->syscalls[0].n_names, STRV("read", "write")));
    CHECK_EQ_INT(s->syscalls[0].action, SECCOMP_ACTION_ALLOW);
    CHECK_EQ_INT(s->syscalls[1].action, SECCOMP_ACTION_ERRNO);
    CHECK_EQ_INT(s->syscalls[1].errno_ret, 13);
    CHECK_EQ_INT(s->syscalls[2].action, SECCOMP_ACTION_TRACE);
    REQUIRE_EQ_INT(s->syscalls[2].n_args, 2);
    CHECK_EQ_INT(s->syscalls[2].args[0].op, SECCOMP_OP_MASKED_EQ);
    CHECK_EQ_UINT(s->syscalls[2].args[0].value, 2114060288);
    CHECK_EQ_UINT(s->syscalls[2].args[0].value_two, 0);
    CHECK_EQ_INT(s->syscalls[2].args[1].index, 5);
    CHECK_EQ_UINT(s->syscalls[2].args[1].value, UINT64_MAX);
    CHECK_EQ_INT(s->syscalls[2].args[1].op, SECCOMP_OP_NE);
    CHECK_EQ_INT(s->syscalls[3].action, SECCOMP_ACTION_NOTIFY);
    CHECK_EQ_INT(s->syscalls[4].action, SECCOMP_ACTION_KILL);
    CHECK_EQ_INT(s->syscalls[5].action, SECCOMP_ACTION_KILL_THREAD);
    CHECK_EQ_INT(s->syscalls[6].action, SECCOMP_ACTION_TRAP);
    CHECK_EQ_INT(s->syscalls[7].action, SECCOMP_ACTION_LOG);
    REQUIRE_EQ_INT(s->syscalls[8].n_args, 5);
    CHECK_EQ_INT(s->syscalls[8].args[0].op, SECCOMP_OP_LT);
    CHECK_EQ_INT(s->syscalls[8].args[1].op, SECCOMP_OP_LE);
    CHECK_EQ_INT(s->syscalls[8].args[2].op, SECCOMP_OP_EQ);
    CHECK_EQ_INT(s->syscalls[8].args[3].op, SECCOMP_OP_GE);
    CHECK_EQ_INT(s->syscalls[8].args[4].op, SECCOMP_OP_GT);
}

/* ---------------- small documents ---------------- */

static struct oci_spec *parse_ok(const char *json)
{
    struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    if (spec_parse(json, strlen(json), "config.json", &spec, &err) < 0) {
        cleanup_free char *msg = ac_error_string(err);
        FAIL("parse failed: %s", msg);
        return NULL;
    }
    return spec;
}

TEST(minimal_config)
{
    cleanup_spec struct oci_spec *spec = parse_ok("{\"ociVersion\": \"1.0.0\"}");
    REQUIRE(spec != NULL);
    CHECK(spec->process == NULL);
    CHECK(spec->linux == NULL);
    CHECK(spec->root_path == NULL);
    CHECK(spec->mounts == NULL);
    CHECK_EQ_INT(spec->n_mounts, 0);
    CHECK(spec_annotation(spec, "x") == NULL);
    CHECK(spec_namespace(spec, CLONE_NEWPID) == NULL);
}

TEST(nulls_and_unknown_fields_are_ignored)
{
    cleanup_spec struct oci_spec *spec = parse_ok(
        "{\"ociVersion\": \"1.1.0-rc.1\", \"hooks\": null, \"annotations\": null, \"mounts\": null,"
        " \"future\": [1, {\"a\": null}], \"process\": {\"args\": [\"x\"], \"env\": null, \"what\": 1},"
        " \"linux\": {\"resources\": {\"memory\": {\"limit\": null}, \"rdma\": {}}, \"intelRdt\": {}}}");
    REQUIRE(spec != NULL);
    CHECK_EQ_STR(spec->oci_version, "1.1.0-rc.1");
    REQUIRE(spec->process != NULL);
    CHECK(spec->process->env == NULL);
    REQUIRE(spec->linux != NULL && spec->linux->resources != NULL);
    CHECK(spec->linux->resources->has_memory);
    CHECK(!spec->linux->resources->memory.has_limit);
}

TEST(duplicate_keys_last_wins)
{
    cleanup_spec struct oci_spec *spec = parse_ok("{\"ociVersion\": \"1.0.0\", \"hostname\": \"a\", \"hostname\": \"b\"}");
    REQUIRE(spec != NULL);
    CHECK_EQ_STR(spec->hostname, "b");
}

TEST(empty_arrays_are_null_terminated)
{
    cleanup_spec struct oci_spec *spec = parse_ok(
        "{\"ociVersion\": \"1.0.0\", \"process\": {\"args\": [], \"env\": []}, \"mounts\": []}");
    REQUIRE(spec != NULL && spec->process != NULL);
    REQUIRE(spec->process->args != NULL);
    CHECK(spec->process->args[0] == NULL);
    CHECK_EQ_INT(spec->process->n_args, 0);
    CHECK_EQ_INT(spec->n_mounts, 0);
}

TEST(big_string_values)
{
    /* A 1 MiB hostname is silly but valid JSON; it must come through intact. */
    size_t big = 1024 * 1024;
    cleanup_free char *json = xmalloc(big + 100);
    int n = sprintf(json, "{\"ociVersion\": \"1.0.0\", \"hostname\": \"");
    memset(json + n, 'h', big);
    strcpy(json + n + big, "\"}");
    cleanup_spec struct oci_spec *spec = parse_ok(json);
    REQUIRE(spec != NULL && spec->hostname != NULL);
    CHECK_EQ_UINT(strlen(spec->hostname), big);
}

TEST(not_nul_terminated_input)
{
    /* spec_parse takes (json, len): text after len is not part of it. */
    const char *text = "{\"ociVersion\": \"1.0.0\"}GARBAGE";
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    CHECK_EQ_INT(spec_parse(text, strlen(text) - 7, "config.json", &spec, &err), 0);
    CHECK(spec != NULL);
}

TEST(spec_load_missing_file)
{
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    CHECK_EQ_INT(spec_load("/nonexistent-agentcage/config.json", &spec, &err), -1);
    CHECK(spec == NULL);
    REQUIRE(err != NULL);
    cleanup_free char *msg = ac_error_string(err);
    CHECK_EQ_STR(msg, "open /nonexistent-agentcage/config.json: No such file or directory");
}

TEST(spec_load_names_the_file_in_errors)
{
    char path[] = "/tmp/agentcage-test-spec-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *bad = "{\"ociVersion\": \"1.0.0\", \"process\": {\"args\": 1}}";
    CHECK(write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad));
    close(fd);
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    CHECK_EQ_INT(spec_load(path, &spec, &err), -1);
    unlink(path);
    REQUIRE(err != NULL);
    cleanup_free char *expected = xasprintf("%s: process.args: expected an array of strings", path);
    cleanup_free char *msg = ac_error_string(err);
    CHECK_EQ_STR(msg, expected);
}

TEST(spec_alloc_and_strdup)
{
    cleanup_spec struct oci_spec *spec = spec_new_empty();
    REQUIRE(spec != NULL);
    CHECK(spec->arena != NULL);
    CHECK(spec->process == NULL);
    /* Many small and a few big allocations: zeroed, aligned, distinct. */
    char *prev = NULL;
    for (int i = 0; i < 5000; i++) {
        size_t size = (i % 100 == 0) ? 100000 : (size_t)(i % 37 + 1);
        unsigned char *p = spec_alloc(spec, size);
        REQUIRE(p != NULL);
        CHECK(((uintptr_t)p % _Alignof(max_align_t)) == 0);
        for (size_t k = 0; k < size; k++)
            if (p[k] != 0) {
                FAIL("allocation %d not zeroed", i);
                break;
            }
        memset(p, 0xab, size);
        CHECK((char *)p != prev);
        prev = (char *)p;
    }
    char *s = spec_strdup(spec, "hello");
    CHECK_EQ_STR(s, "hello");
    CHECK(spec_strdup(spec, NULL) == NULL);
    spec->hostname = spec_strdup(spec, "added");
    CHECK_EQ_STR(spec->hostname, "added");
}

TEST(cap_from_name)
{
    CHECK_EQ_INT(spec_cap_from_name("CAP_CHOWN"), 0);
    CHECK_EQ_INT(spec_cap_from_name("CAP_SYS_ADMIN"), 21);
    CHECK_EQ_INT(spec_cap_from_name("CAP_CHECKPOINT_RESTORE"), 40);
    CHECK_EQ_INT(spec_cap_from_name("CAP_FOO"), -1);
    CHECK_EQ_INT(spec_cap_from_name("cap_chown"), -1);
    CHECK_EQ_INT(spec_cap_from_name("CHOWN"), -1);
    CHECK_EQ_INT(spec_cap_from_name("12"), -1);
    CHECK_EQ_INT(spec_cap_from_name(""), -1);
    CHECK_EQ_INT(spec_cap_from_name(NULL), -1);
}

/* ---------------- bad inputs: the exact error line ---------------- */

enum doc_kind { DOC_CONFIG, DOC_PROCESS, DOC_RESOURCES };

struct bad_case {
    enum doc_kind kind;
    const char *json;
    const char *error;
};

#define V "\"ociVersion\": \"1.0.2\", "

static const struct bad_case bad_cases[] = {
    /* not JSON / not an object */
    { DOC_CONFIG, "", "config.json: not valid JSON: parse error: premature EOF" },
    { DOC_CONFIG, "{\"ociVersion\": ", "config.json: not valid JSON: parse error: premature EOF" },
    { DOC_CONFIG, "{\"a\": 1,}", "config.json: not valid JSON: parse error: invalid object key (must be a string)" },
    { DOC_CONFIG, "{} trailing", "config.json: not valid JSON: parse error: trailing garbage" },
    { DOC_CONFIG, "[1, 2]", "config.json: expected a JSON object at the top level" },
    { DOC_CONFIG, "\"string\"", "config.json: expected a JSON object at the top level" },
    { DOC_CONFIG, "null", "config.json: expected a JSON object at the top level" },
    { DOC_PROCESS, "[]", "process.json: expected a JSON object at the top level" },
    { DOC_RESOURCES, "42", "resources: expected a JSON object at the top level" },
    /* ociVersion */
    { DOC_CONFIG, "{}", "config.json: ociVersion: required" },
    { DOC_CONFIG, "{\"ociVersion\": null}", "config.json: ociVersion: required" },
    { DOC_CONFIG, "{\"ociVersion\": 1}", "config.json: ociVersion: expected a string" },
    { DOC_CONFIG, "{\"ociVersion\": \"2.0.0\"}",
      "config.json: ociVersion: unsupported version \"2.0.0\" (agentcage supports 1.x)" },
    { DOC_CONFIG, "{\"ociVersion\": \"0.5.0\"}",
      "config.json: ociVersion: unsupported version \"0.5.0\" (agentcage supports 1.x)" },
    { DOC_CONFIG, "{\"ociVersion\": \"1\"}",
      "config.json: ociVersion: unsupported version \"1\" (agentcage supports 1.x)" },
    /* root */
    { DOC_CONFIG, "{" V "\"root\": {}}", "config.json: root.path: required" },
    { DOC_CONFIG, "{" V "\"root\": \"rootfs\"}", "config.json: root: expected an object" },
    { DOC_CONFIG, "{" V "\"root\": {\"path\": \"r\", \"readonly\": \"yes\"}}", "config.json: root.readonly: expected a boolean" },
    /* process: wrong types of each kind */
    { DOC_CONFIG, "{" V "\"process\": []}", "config.json: process: expected an object" },
    { DOC_CONFIG, "{" V "\"process\": {\"args\": \"sh\"}}", "config.json: process.args: expected an array of strings" },
    { DOC_CONFIG, "{" V "\"process\": {\"args\": [\"sh\", 1]}}", "config.json: process.args: expected an array of strings" },
    { DOC_CONFIG, "{" V "\"process\": {\"env\": [null]}}", "config.json: process.env: expected an array of strings" },
    { DOC_CONFIG, "{" V "\"process\": {\"terminal\": 1}}", "config.json: process.terminal: expected a boolean" },
    { DOC_CONFIG, "{" V "\"process\": {\"cwd\": \"relative/dir\"}}",
      "config.json: process.cwd: must be an absolute path, got \"relative/dir\"" },
    { DOC_CONFIG, "{" V "\"process\": {\"cwd\": 5}}", "config.json: process.cwd: expected a string" },
    { DOC_CONFIG, "{" V "\"process\": {\"consoleSize\": {\"height\": 1}}}", "config.json: process.consoleSize.width: required" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"uid\": -1}}}",
      "config.json: process.user.uid: -1 is out of range (0..4294967295)" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"uid\": 4294967296}}}",
      "config.json: process.user.uid: 4294967296 is out of range (0..4294967295)" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"gid\": 1.5}}}", "config.json: process.user.gid: expected an integer" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"gid\": \"0\"}}}", "config.json: process.user.gid: expected an integer" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"uid\": 1e3}}}", "config.json: process.user.uid: expected an integer" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"umask\": 4096}}}",
      "config.json: process.user.umask: 4096 is out of range (0..4095)" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"additionalGids\": [1, -2]}}}",
      "config.json: process.user.additionalGids: expected an array of non-negative integers" },
    { DOC_CONFIG, "{" V "\"process\": {\"user\": {\"additionalGids\": 0}}}",
      "config.json: process.user.additionalGids: expected an array" },
    { DOC_CONFIG, "{" V "\"process\": {\"capabilities\": {\"bounding\": [\"CAP_CHOWN\", \"CAP_KILL\", \"CAP_FOO\"]}}}",
      "config.json: process.capabilities.bounding[2]: unknown capability \"CAP_FOO\"" },
    { DOC_CONFIG, "{" V "\"process\": {\"capabilities\": {\"ambient\": [\"chown\"]}}}",
      "config.json: process.capabilities.ambient[0]: unknown capability \"chown\"" },
    { DOC_CONFIG, "{" V "\"process\": {\"capabilities\": {\"effective\": \"CAP_CHOWN\"}}}",
      "config.json: process.capabilities.effective: expected an array of strings" },
    { DOC_CONFIG, "{" V "\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_FOO\", \"hard\": 1, \"soft\": 1}]}}",
      "config.json: process.rlimits[0].type: unknown rlimit \"RLIMIT_FOO\"" },
    { DOC_CONFIG, "{" V "\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1}]}}",
      "config.json: process.rlimits[0].soft: required" },
    { DOC_CONFIG, "{" V "\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 18446744073709551616, \"soft\": 1}]}}",
      "config.json: process.rlimits[0].hard: 18446744073709551616 is out of range (0..18446744073709551615)" },
    { DOC_CONFIG, "{" V "\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1, \"soft\": 1}, 7]}}",
      "config.json: process.rlimits[1]: expected an object" },
    { DOC_CONFIG, "{" V "\"process\": {\"rlimits\": {}}}", "config.json: process.rlimits: expected an array" },
    { DOC_CONFIG, "{" V "\"process\": {\"noNewPrivileges\": \"true\"}}",
      "config.json: process.noNewPrivileges: expected a boolean" },
    { DOC_CONFIG, "{" V "\"process\": {\"oomScoreAdj\": 1001}}",
      "config.json: process.oomScoreAdj: 1001 is out of range (-1000..1000)" },
    { DOC_CONFIG, "{" V "\"process\": {\"ioPriority\": {\"class\": \"IOPRIO_CLASS_NONE\"}}}",
      "config.json: process.ioPriority.class: unknown I/O priority class \"IOPRIO_CLASS_NONE\"" },
    { DOC_CONFIG, "{" V "\"process\": {\"ioPriority\": {\"class\": \"IOPRIO_CLASS_BE\", \"priority\": 8}}}",
      "config.json: process.ioPriority.priority: 8 is out of range (0..7)" },
    { DOC_CONFIG, "{" V "\"process\": {\"ioPriority\": {}}}", "config.json: process.ioPriority.class: required" },
    { DOC_CONFIG, "{" V "\"process\": {\"scheduler\": {\"policy\": \"SCHED_FAST\"}}}",
      "config.json: process.scheduler.policy: unknown scheduler policy \"SCHED_FAST\"" },
    { DOC_CONFIG, "{" V "\"process\": {\"scheduler\": {\"policy\": \"SCHED_OTHER\", \"nice\": 20}}}",
      "config.json: process.scheduler.nice: 20 is out of range (-20..19)" },
    { DOC_CONFIG, "{" V "\"process\": {\"apparmorProfile\": []}}", "config.json: process.apparmorProfile: expected a string" },
    /* hostname, mounts, hooks, annotations */
    { DOC_CONFIG, "{" V "\"hostname\": false}", "config.json: hostname: expected a string" },
    { DOC_CONFIG, "{" V "\"mounts\": {}}", "config.json: mounts: expected an array" },
    { DOC_CONFIG, "{" V "\"mounts\": [{\"destination\": \"/a\"}, {\"type\": \"tmpfs\"}]}",
      "config.json: mounts[1].destination: required" },
    { DOC_CONFIG, "{" V "\"mounts\": [{\"destination\": \"/a\", \"options\": [1]}]}",
      "config.json: mounts[0].options: expected an array of strings" },
    { DOC_CONFIG, "{" V "\"mounts\": [{\"destination\": \"/a\", \"uidMappings\": [{\"containerID\": 0, \"hostID\": 1}]}]}",
      "config.json: mounts[0].uidMappings[0].size: required" },
    { DOC_CONFIG, "{" V "\"hooks\": {\"prestart\": [{\"args\": []}]}}", "config.json: hooks.prestart[0].path: required" },
    { DOC_CONFIG, "{" V "\"hooks\": {\"poststop\": [{\"path\": \"/x\", \"timeout\": 0}]}}",
      "config.json: hooks.poststop[0].timeout: must be greater than 0" },
    { DOC_CONFIG, "{" V "\"hooks\": {\"createRuntime\": [{\"path\": \"/x\", \"timeout\": -3}]}}",
      "config.json: hooks.createRuntime[0].timeout: must be greater than 0" },
    { DOC_CONFIG, "{" V "\"hooks\": {\"startContainer\": {}}}", "config.json: hooks.startContainer: expected an array" },
    { DOC_CONFIG, "{" V "\"hooks\": []}", "config.json: hooks: expected an object" },
    { DOC_CONFIG, "{" V "\"annotations\": {\"a\": \"b\", \"io.agentcage.x\": 1}}",
      "config.json: annotations.io.agentcage.x: expected a string" },
    { DOC_CONFIG, "{" V "\"annotations\": [\"a\"]}", "config.json: annotations: expected an object" },
    /* linux */
    { DOC_CONFIG, "{" V "\"linux\": 1}", "config.json: linux: expected an object" },
    { DOC_CONFIG, "{" V "\"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"net\"}]}}",
      "config.json: linux.namespaces[1].type: unknown namespace type \"net\"" },
    { DOC_CONFIG, "{" V "\"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"uts\"}, {\"type\": \"pid\"}]}}",
      "config.json: linux.namespaces[2]: duplicate namespace type \"pid\"" },
    { DOC_CONFIG, "{" V "\"linux\": {\"namespaces\": [{\"path\": \"/proc/1/ns/pid\"}]}}",
      "config.json: linux.namespaces[0].type: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"uidMappings\": [{\"containerID\": 0, \"hostID\": -1, \"size\": 1}]}}",
      "config.json: linux.uidMappings[0].hostID: -1 is out of range (0..4294967295)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"devices\": [{\"path\": \"/dev/x\", \"type\": \"x\", \"major\": 1, \"minor\": 1}]}}",
      "config.json: linux.devices[0].type: unknown device type \"x\" (expected \"c\", \"b\", \"u\" or \"p\")" },
    { DOC_CONFIG, "{" V "\"linux\": {\"devices\": [{\"path\": \"/dev/x\", \"type\": \"c\", \"minor\": 1}]}}",
      "config.json: linux.devices[0].major: required for device type \"c\"" },
    { DOC_CONFIG, "{" V "\"linux\": {\"devices\": [{\"type\": \"c\"}]}}", "config.json: linux.devices[0].path: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"cgroupsPath\": {}}}", "config.json: linux.cgroupsPath: expected a string" },
    { DOC_CONFIG, "{" V "\"linux\": {\"sysctl\": {\"net.x\": 1}}}", "config.json: linux.sysctl.net.x: expected a string" },
    { DOC_CONFIG, "{" V "\"linux\": {\"rootfsPropagation\": \"rshared \"}}",
      "config.json: linux.rootfsPropagation: unknown propagation \"rshared \" (expected one of private, rprivate, "
      "slave, rslave, shared, rshared, unbindable, runbindable)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"maskedPaths\": \"/proc\"}}", "config.json: linux.maskedPaths: expected an array of strings" },
    { DOC_CONFIG, "{" V "\"linux\": {\"personality\": {\"domain\": \"LINUX64\"}}}",
      "config.json: linux.personality.domain: unknown personality domain \"LINUX64\" (expected \"LINUX\" or \"LINUX32\")" },
    { DOC_CONFIG, "{" V "\"linux\": {\"timeOffsets\": {\"boottime\": {\"secs\": 1, \"nanosecs\": 1000000000}}}}",
      "config.json: linux.timeOffsets.boottime.nanosecs: 1000000000 is out of range (0..999999999)" },
    /* linux.resources */
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"memory\": {\"limit\": \"1G\"}}}}",
      "config.json: linux.resources.memory.limit: expected an integer" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"memory\": {\"limit\": 1.5}}}}",
      "config.json: linux.resources.memory.limit: expected an integer" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"memory\": {\"limit\": 9223372036854775808}}}}",
      "config.json: linux.resources.memory.limit: 9223372036854775808 is out of range "
      "(-9223372036854775808..9223372036854775807)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"memory\": {\"swappiness\": -1}}}}",
      "config.json: linux.resources.memory.swappiness: -1 is out of range (0..18446744073709551615)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"memory\": {\"disableOOMKiller\": 0}}}}",
      "config.json: linux.resources.memory.disableOOMKiller: expected a boolean" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"cpu\": {\"shares\": -2}}}}",
      "config.json: linux.resources.cpu.shares: -2 is out of range (0..18446744073709551615)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"cpu\": {\"cpus\": 3}}}}",
      "config.json: linux.resources.cpu.cpus: expected a string" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"pids\": {\"limit\": true}}}}",
      "config.json: linux.resources.pids.limit: expected an integer" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"devices\": [{\"access\": \"rwm\"}]}}}",
      "config.json: linux.resources.devices[0].allow: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"devices\": [{\"allow\": true, \"type\": \"u\"}]}}}",
      "config.json: linux.resources.devices[0].type: unknown device type \"u\" (expected \"a\", \"c\" or \"b\")" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"devices\": [{\"allow\": true, \"access\": \"rwx\"}]}}}",
      "config.json: linux.resources.devices[0].access: invalid device access \"rwx\" (expected letters of \"rwm\")" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"blockIO\": {\"weight\": 65536}}}}",
      "config.json: linux.resources.blockIO.weight: 65536 is out of range (0..65535)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"blockIO\": {\"throttleReadBpsDevice\": [{\"major\": 8, \"minor\": 0}]}}}}",
      "config.json: linux.resources.blockIO.throttleReadBpsDevice[0].rate: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"hugepageLimits\": [{\"limit\": 1}]}}}",
      "config.json: linux.resources.hugepageLimits[0].pageSize: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"network\": {\"classID\": -1}}}}",
      "config.json: linux.resources.network.classID: -1 is out of range (0..4294967295)" },
    { DOC_CONFIG, "{" V "\"linux\": {\"resources\": {\"unified\": {\"memory.max\": 5}}}}",
      "config.json: linux.resources.unified.memory.max: expected a string" },
    /* linux.seccomp */
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {}}}", "config.json: linux.seccomp.defaultAction: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_DENY\"}}}",
      "config.json: linux.seccomp.defaultAction: unknown seccomp action \"SCMP_ACT_DENY\"" },
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"allow\"}]}}}",
      "config.json: linux.seccomp.syscalls[0].action: unknown seccomp action \"allow\"" },
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"action\": \"SCMP_ACT_ALLOW\"}]}}}",
      "config.json: linux.seccomp.syscalls[0].names: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_XX\"}]}]}}}",
      "config.json: linux.seccomp.syscalls[0].args[0].op: unknown seccomp operator \"SCMP_CMP_XX\"" },
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}]}}}",
      "config.json: linux.seccomp.syscalls[0].args[0].index: required" },
    { DOC_CONFIG, "{" V "\"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": -1}}}",
      "config.json: linux.seccomp.defaultErrnoRet: -1 is out of range (0..4294967295)" },
    /* the process and resources documents name their own paths */
    { DOC_PROCESS, "{\"args\": \"sh\"}", "process.json: args: expected an array of strings" },
    { DOC_PROCESS, "{\"capabilities\": {\"bounding\": [\"CAP_BOGUS\"]}}",
      "process.json: capabilities.bounding[0]: unknown capability \"CAP_BOGUS\"" },
    { DOC_PROCESS, "{\"cwd\": \"tmp\"}", "process.json: cwd: must be an absolute path, got \"tmp\"" },
    { DOC_RESOURCES, "{\"memory\": {\"limit\": \"x\"}}", "resources: memory.limit: expected an integer" },
    { DOC_RESOURCES, "{\"cpu\": []}", "resources: cpu: expected an object" },
    { DOC_RESOURCES, "{\"pids\": {\"limit\": 1", "resources: not valid JSON: parse error: premature EOF" },
};

static char *parse_error(enum doc_kind kind, const char *json, size_t len)
{
    cleanup_spec struct oci_spec *spec = NULL;
    cleanup_error ac_error_t err = NULL;
    int r;
    switch (kind) {
    case DOC_PROCESS: r = spec_parse_process(json, len, "process.json", &spec, &err); break;
    case DOC_RESOURCES: r = spec_parse_resources(json, len, "resources", &spec, &err); break;
    default: r = spec_parse(json, len, "config.json", &spec, &err); break;
    }
    if (r == 0)
        return NULL;
    if (spec != NULL)
        FAIL("a failed parse left *out set");
    return ac_error_string(err);
}

TEST(bad_inputs_name_the_path)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *c = &bad_cases[i];
        cleanup_free char *msg = parse_error(c->kind, c->json, strlen(c->json));
        if (msg == NULL)
            FAIL("case %zu (%s) parsed, expected error \"%s\"", i, c->json, c->error);
        else if (strcmp(msg, c->error) != 0)
            FAIL("case %zu (%s): error \"%s\", expected \"%s\"", i, c->json, msg, c->error);
        else if (strchr(msg, '\n') != NULL)
            FAIL("case %zu: error is not one line", i);
    }
}

TEST(deep_nesting_is_refused)
{
    /* Far deeper than yajl_tree's recursion would survive comfortably. */
    size_t depth = 200000;
    cleanup_free char *json = xmalloc(depth * 2 + 64);
    char *p = json + sprintf(json, "{\"ociVersion\": \"1.0.0\", \"x\": ");
    memset(p, '[', depth);
    memset(p + depth, ']', depth);
    strcpy(p + 2 * depth, "}");
    cleanup_free char *msg = parse_error(DOC_CONFIG, json, strlen(json));
    CHECK_EQ_STR(msg, "config.json: not valid JSON: nested deeper than 64 levels");

    /* 64 levels in total are fine; brackets inside strings do not count. */
    cleanup_free char *ok = xmalloc(512);
    p = ok + sprintf(ok, "{\"ociVersion\": \"1.0.0\", \"s\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[\", \"x\": ");
    memset(p, '[', 63);
    memset(p + 63, ']', 63);
    strcpy(p + 126, "}");
    cleanup_spec struct oci_spec *spec = parse_ok(ok);
    CHECK(spec != NULL);
}

TEST(huge_document_is_refused)
{
    size_t len = 64u * 1024 * 1024 + 1;
    cleanup_free char *json = xmalloc(len + 1);
    memset(json, ' ', len);
    memcpy(json, "{\"ociVersion\": \"1.0.0\", \"s\": \"", 30);
    json[len - 2] = '"';
    json[len - 1] = '}';
    json[len] = '\0';
    cleanup_free char *msg = parse_error(DOC_CONFIG, json, len);
    CHECK_EQ_STR(msg, "config.json: document too large (67108865 bytes, the limit is 64 MiB)");
}

TEST(embedded_nul_is_refused)
{
    const char json[] = "{\"ociVersion\": \"1.0.0\"}\0{}";
    cleanup_free char *msg = parse_error(DOC_CONFIG, json, sizeof(json) - 1);
    CHECK_EQ_STR(msg, "config.json: not valid JSON: contains a NUL byte");
}

TEST(invalid_utf8_is_refused)
{
    cleanup_free char *msg = parse_error(DOC_CONFIG, "{\"ociVersion\": \"1.0.0\", \"hostname\": \"\xff\"}", 38);
    REQUIRE(msg != NULL);
    CHECK(strncmp(msg, "config.json: not valid JSON: ", 29) == 0);
    CHECK(strchr(msg, '\n') == NULL);
}

/* Every prefix and many single-byte mutations of a real config: each must
 * either parse or fail with an error, never crash or leave *out set. */
TEST(mangled_configs_do_not_crash)
{
    size_t len = 0;
    cleanup_free char *text = read_data("config.json-ctr-run.json", &len);
    REQUIRE(text != NULL);
    int parsed = 0, failed = 0;
    for (size_t cut = 0; cut < len; cut++) {
        cleanup_free char *msg = parse_error(DOC_CONFIG, text, cut);
        if (msg)
            failed++;
        else
            parsed++;
    }
    CHECK_EQ_INT(parsed, 0); /* every proper prefix is incomplete JSON */
    static const char replacements[] = "{}[]\",:0-1.9eEtfn \\x";
    unsigned seed = 12345;
    cleanup_free char *copy = xmalloc(len + 1);
    for (int round = 0; round < 20000; round++) {
        memcpy(copy, text, len + 1);
        for (int k = 0; k < 1 + round % 3; k++) {
            seed = seed * 1103515245 + 12345;
            size_t pos = (seed >> 8) % len;
            seed = seed * 1103515245 + 12345;
            copy[pos] = replacements[(seed >> 8) % (sizeof(replacements) - 1)];
        }
        cleanup_free char *msg = parse_error(DOC_CONFIG, copy, len);
        if (msg) {
            failed++;
            if (strchr(msg, '\n'))
                FAIL("multi-line error: %s", msg);
        } else {
            parsed++;
        }
    }
    CHECK(failed > 0);
}

/* ---------------- generated documents ---------------- */

TEST(default_spec_parses)
{
    cleanup_free char *json = spec_default_json(false, false);
    REQUIRE(json != NULL);
    cleanup_spec struct oci_spec *spec = parse_ok(json);
    REQUIRE(spec != NULL && spec->process != NULL && spec->linux != NULL);
    CHECK(strncmp(spec->oci_version, "1.", 2) == 0);
    CHECK(spec->process->terminal);
    CHECK(strv_equal(spec->process->args, spec->process->n_args, STRV("sh")));
    CHECK_EQ_STR(spec->process->cwd, "/");
    uint64_t caps = CAP_BIT(29) | CAP_BIT(C_KILL) | CAP_BIT(C_NET_BIND_SERVICE);
    CHECK_EQ_UINT(spec->process->capabilities.bounding, caps);
    CHECK_EQ_UINT(spec->process->capabilities.ambient, caps);
    REQUIRE_EQ_INT(spec->process->n_rlimits, 1);
    CHECK_EQ_INT(spec->process->rlimits[0].resource, RLIMIT_NOFILE);
    CHECK_EQ_UINT(spec->process->rlimits[0].hard, 1024);
    CHECK(spec->process->no_new_privileges);
    CHECK_EQ_STR(spec->root_path, "rootfs");
    CHECK(spec->root_readonly);
    REQUIRE_EQ_INT(spec->n_mounts, 7);
    static const char *const destinations[] = { "/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys",
                                                "/sys/fs/cgroup" };
    for (size_t i = 0; i < 7; i++)
        CHECK_EQ_STR(spec->mounts[i].destination, destinations[i]);
    CHECK_EQ_STR(spec->mounts[2].options[5], "gid=5");
    CHECK_EQ_STR(spec->mounts[5].type, "sysfs");
    CHECK_EQ_INT(spec->linux->n_namespaces, 5);
    CHECK(spec_namespace(spec, CLONE_NEWNET) != NULL);
    CHECK(spec_namespace(spec, CLONE_NEWCGROUP) == NULL);
    CHECK(spec_namespace(spec, CLONE_NEWUSER) == NULL);
    CHECK_EQ_INT(spec->linux->n_uid_mappings, 0);
    CHECK_EQ_INT(spec->linux->n_masked_paths, 10);
    CHECK_EQ_INT(spec->linux->n_readonly_paths, 5);
    REQUIRE(spec->linux->resources != NULL);
    REQUIRE_EQ_INT(spec->linux->resources->n_devices, 1);
    CHECK(!spec->linux->resources->devices[0].allow);
}

TEST(default_spec_cgroupns_on_pure_v2)
{
    cleanup_free char *json = spec_default_json(false, true);
    REQUIRE(json != NULL);
    cleanup_spec struct oci_spec *spec = parse_ok(json);
    REQUIRE(spec != NULL && spec->linux != NULL);
    CHECK_EQ_INT(spec->linux->n_namespaces, 6);
    CHECK(spec_namespace(spec, CLONE_NEWCGROUP) != NULL);
}

TEST(default_rootless_spec_parses)
{
    cleanup_free char *json = spec_default_json(true, false);
    REQUIRE(json != NULL);
    cleanup_spec struct oci_spec *spec = parse_ok(json);
    REQUIRE(spec != NULL && spec->process != NULL && spec->linux != NULL);
    CHECK(spec_namespace(spec, CLONE_NEWUSER) != NULL);
    CHECK(spec_namespace(spec, CLONE_NEWNET) == NULL);
    REQUIRE_EQ_INT(spec->linux->n_uid_mappings, 1);
    CHECK_EQ_UINT(spec->linux->uid_mappings[0].container_id, 0);
    CHECK_EQ_UINT(spec->linux->uid_mappings[0].host_id, getuid());
    CHECK_EQ_UINT(spec->linux->uid_mappings[0].size, 1);
    REQUIRE_EQ_INT(spec->linux->n_gid_mappings, 1);
    CHECK_EQ_UINT(spec->linux->gid_mappings[0].host_id, getgid());
    REQUIRE_EQ_INT(spec->n_mounts, 7);
    CHECK(strv_equal(spec->mounts[2].options, spec->mounts[2].n_options,
                     STRV("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620")));
    CHECK_EQ_STR(spec->mounts[5].type, "none");
    CHECK_EQ_STR(spec->mounts[5].source, "/sys");
    CHECK_EQ_STR(spec->mounts[5].options[0], "rbind");
    CHECK(spec->linux->resources == NULL);
}

static yajl_val yajl_path(yajl_val tree, const char *a, const char *b)
{
    const char *path[] = { a, b, NULL };
    return yajl_tree_get(tree, path, yajl_t_any);
}

static bool yajl_array_has(yajl_val array, const char *s)
{
    if (!YAJL_IS_ARRAY(array))
        return false;
    for (size_t i = 0; i < array->u.array.len; i++)
        if (YAJL_IS_STRING(array->u.array.values[i]) && strcmp(array->u.array.values[i]->u.string, s) == 0)
            return true;
    return false;
}

TEST(features_document)
{
    cleanup_free char *json = spec_features_json();
    REQUIRE(json != NULL);
    char errbuf[256];
    yajl_val tree = yajl_tree_parse(json, errbuf, sizeof(errbuf));
    REQUIRE(tree != NULL);
    CHECK_EQ_STR(YAJL_GET_STRING(yajl_path(tree, "ociVersionMin", NULL)), "1.0.0");
    CHECK_EQ_STR(YAJL_GET_STRING(yajl_path(tree, "ociVersionMax", NULL)), "1.2.0");
    yajl_val hooks = yajl_path(tree, "hooks", NULL);
    for (int k = 0; k < HOOK_KIND_COUNT; k++)
        CHECK(yajl_array_has(hooks, oci_hook_kind_names[k]));
    CHECK(yajl_array_has(yajl_path(tree, "mountOptions", NULL), "rbind"));
    CHECK(yajl_array_has(yajl_path(tree, "mountOptions", NULL), "nosymfollow"));
    yajl_val ns = yajl_path(tree, "linux", "namespaces");
    CHECK(yajl_array_has(ns, "time") && yajl_array_has(ns, "cgroup") && yajl_array_has(ns, "user"));
    yajl_val caps = yajl_path(tree, "linux", "capabilities");
    CHECK(yajl_array_has(caps, "CAP_CHOWN") && yajl_array_has(caps, "CAP_CHECKPOINT_RESTORE"));
    /* Every listed capability is one the parser accepts. */
    for (size_t i = 0; YAJL_IS_ARRAY(caps) && i < caps->u.array.len; i++)
        CHECK(spec_cap_from_name(YAJL_GET_STRING(caps->u.array.values[i])) >= 0);
    const char *cgroup_path[] = { "linux", "cgroup", "systemd", NULL };
    CHECK(YAJL_IS_FALSE(yajl_tree_get(tree, cgroup_path, yajl_t_any)));
    const char *v1_path[] = { "linux", "cgroup", "v1", NULL };
    CHECK(YAJL_IS_TRUE(yajl_tree_get(tree, v1_path, yajl_t_any)));
    const char *seccomp_enabled[] = { "linux", "seccomp", "enabled", NULL };
    CHECK(YAJL_IS_TRUE(yajl_tree_get(tree, seccomp_enabled, yajl_t_any)));
    const char *actions_path[] = { "linux", "seccomp", "actions", NULL };
    CHECK(yajl_array_has(yajl_tree_get(tree, actions_path, yajl_t_any), "SCMP_ACT_KILL_PROCESS"));
    const char *ops_path[] = { "linux", "seccomp", "operators", NULL };
    CHECK(yajl_array_has(yajl_tree_get(tree, ops_path, yajl_t_any), "SCMP_CMP_MASKED_EQ"));
    const char *archs_path[] = { "linux", "seccomp", "archs", NULL };
    CHECK(yajl_array_has(yajl_tree_get(tree, archs_path, yajl_t_any), "SCMP_ARCH_X86_64"));
    const char *apparmor_path[] = { "linux", "apparmor", "enabled", NULL };
    CHECK(YAJL_IS_TRUE(yajl_tree_get(tree, apparmor_path, yajl_t_any))
          || YAJL_IS_FALSE(yajl_tree_get(tree, apparmor_path, yajl_t_any)));
    CHECK(yajl_array_has(yajl_path(tree, "potentiallyUnsafeConfigAnnotations", NULL), "io.agentcage."));
    CHECK(YAJL_IS_OBJECT(yajl_path(tree, "annotations", NULL)));
    yajl_tree_free(tree);
}

/* ---------------- json_tree_parse: yajl_tree_parse's tree, faster ---------------- */

static bool same_tree(yajl_val a, yajl_val b)
{
    if (!a || !b)
        return a == b;
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case yajl_t_string:
        return strcmp(a->u.string, b->u.string) == 0;
    case yajl_t_number:
        return strcmp(a->u.number.r, b->u.number.r) == 0 && a->u.number.flags == b->u.number.flags &&
               (!(a->u.number.flags & YAJL_NUMBER_INT_VALID) || a->u.number.i == b->u.number.i) &&
               (!(a->u.number.flags & YAJL_NUMBER_DOUBLE_VALID) || a->u.number.d == b->u.number.d);
    case yajl_t_object:
        if (a->u.object.len != b->u.object.len)
            return false;
        for (size_t i = 0; i < a->u.object.len; i++)
            if (strcmp(a->u.object.keys[i], b->u.object.keys[i]) != 0 ||
                !same_tree(a->u.object.values[i], b->u.object.values[i]))
                return false;
        return true;
    case yajl_t_array:
        if (a->u.array.len != b->u.array.len)
            return false;
        for (size_t i = 0; i < a->u.array.len; i++)
            if (!same_tree(a->u.array.values[i], b->u.array.values[i]))
                return false;
        return true;
    default:
        return true;
    }
}

/* The same tree as yajl_tree_parse, or the same first line of its error. */
static void check_same_parse(const char *text, size_t len)
{
    char e1[1024] = "", e2[1024] = "";
    cleanup_free char *z = strndup(text, len);
    yajl_val a = yajl_tree_parse(z, e1, sizeof(e1)), b = json_tree_parse(text, len, e2, sizeof(e2));
    if (!same_tree(a, b))
        FAIL("json_tree_parse differs from yajl_tree_parse on `%.60s`", z);
    else if (!a && strncmp(e1, e2, strcspn(e1, "\n")) != 0)
        FAIL("json_tree_parse's error `%s` is not yajl's `%s`", e2, e1);
    if (a)
        yajl_tree_free(a);
    if (b)
        yajl_tree_free(b);
}

TEST(json_tree_parse_as_yajl_tree)
{
    static const char *const cases[] = {
        "", "  ", "{}", "[]", "1", "-0", "1e3", "1.5", "-", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "{\"a\":1,\"a\":2}", "/* c */ {\"a\": 1 // x\n}",
        "{\"a\":[[],{},[{}]],\"b\":null,\"c\":true,\"d\":false}", "{\"a\":1} x", "{\"a\":1}{}", "{\"a\":",
        "[1,2,", "\"s\\u0000t\"", "{\"k\\u00e9\":\"\\ud83d\\ude00\"}", "{1:2}", "[01]", "[1.]", "[1e]",
        "{\"a\":1,}", "[\"\xff\"]", "[\"a\tb\"]",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_same_parse(cases[i], strlen(cases[i]));
    /* the engines' real documents, a long array of a seccomp profile among them */
    static const char *const files[] = {"config.json-docker-run.json", "config.json-podman-run.json",
                                        "config.json-cri-container.json", "config-full.json",
                                        "process.json-podman-exec.json"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        size_t len = 0;
        cleanup_free char *text = read_data(files[i], &len);
        REQUIRE(text != NULL);
        check_same_parse(text, len);
    }
    /* text without a NUL after it is read only to len */
    yajl_val v = json_tree_parse("{\"a\":1}garbage", 7, NULL, 0);
    CHECK(v != NULL && YAJL_IS_OBJECT(v) && v->u.object.len == 1);
    if (v)
        yajl_tree_free(v);
}
