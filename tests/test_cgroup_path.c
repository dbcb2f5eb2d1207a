/* Unit tests of the cgroup module's pure parts: cgroup_resolve_path (all
 * linux.cgroupsPath forms), host layout detection from mountinfo text, and
 * the stats JSON. No root needed. */
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cgroup/cgroup_internal.h"
#include "runtime/util/utils.h"
#include "tests/testlib.h"

/* Resolve, returning the path or "ERR: message". */
static char *resolve(const char *cgroups_path, const char *id, bool systemd)
{
    ac_error_t err = NULL;
    char *out = NULL;
    if (cgroup_resolve_path(cgroups_path, id, systemd, &out, &err) < 0) {
        char *msg = ac_error_string(err);
        ac_error_free(&err);
        char *r = xasprintf("ERR: %s", msg);
        free(msg);
        return r;
    }
    return out;
}

#define CHECK_RESOLVES(path, id, systemd, expected)                                              \
    do {                                                                                         \
        char *got_ = resolve(path, id, systemd);                                                 \
        CHECK_EQ_STR(got_, expected);                                                            \
        free(got_);                                                                              \
    } while (0)

#define CHECK_REFUSED(path, systemd, needle)                                                     \
    do {                                                                                         \
        char *got_ = resolve(path, "id", systemd);                                               \
        if (strncmp(got_, "ERR: ", 5) != 0 || strstr(got_, needle) == NULL)                      \
            FAIL("%s: got \"%s\", expected an error naming \"%s\"", path, got_, needle);         \
        free(got_);                                                                              \
    } while (0)

TEST(absent_path_is_agentcage_id)
{
    CHECK_RESOLVES(NULL, "c1", false, "/agentcage/c1");
    CHECK_RESOLVES("", "c1", false, "/agentcage/c1");
}

TEST(absolute_path_is_cleaned)
{
    CHECK_RESOLVES("/docker/abc", "x", false, "/docker/abc");
    CHECK_RESOLVES("//a///b/./c/", "x", false, "/a/b/c");
}

TEST(absolute_path_refuses_dotdot_and_root)
{
    CHECK_REFUSED("/a/../../etc", false, "linux.cgroupsPath");
    CHECK_REFUSED("/", false, "root cgroup");
}

TEST(relative_path_is_below_own_cgroup)
{
    /* the runtime's own cgroup: the memory (or pids, or cgroup2) entry */
    char *own = NULL;
    ac_error_t err = NULL;
    REQUIRE(read_all_file("/proc/self/cgroup", &own, NULL, &err) == 0);
    char *got = resolve("foo/bar", "x", false);
    CHECK(got[0] == '/');
    size_t n = strlen(got);
    CHECK(n >= 8 && strcmp(got + n - 8, "/foo/bar") == 0);
    if (n > 8) {
        /* the prefix is one of the entries of /proc/self/cgroup */
        char *prefix = strndup(got, n - 8);
        char *needle = xasprintf(":%s\n", prefix);
        CHECK(strstr(own, needle) != NULL);
        free(needle);
        free(prefix);
    }
    free(got);
    free(own);
}

TEST(systemd_scope)
{
    CHECK_RESOLVES("system.slice:docker:abc", "x", true, "/system.slice/docker-abc.scope");
    CHECK_RESOLVES(":docker:abc", "x", true, "/system.slice/docker-abc.scope");
    CHECK_RESOLVES("user.slice::abc", "x", true, "/user.slice/abc.scope");
}

TEST(systemd_nested_slices)
{
    CHECK_RESOLVES("machine-x.slice:libpod:ab", "x", true,
                   "/machine.slice/machine-x.slice/libpod-ab.scope");
    CHECK_RESOLVES("a-b-c.slice:p:n", "x", true, "/a.slice/a-b.slice/a-b-c.slice/p-n.scope");
}

TEST(systemd_root_slice)
{
    CHECK_RESOLVES("-.slice:p:n", "x", true, "/p-n.scope");
}

TEST(systemd_name_is_a_slice)
{
    CHECK_RESOLVES("system.slice:p:sub.slice", "x", true, "/system.slice/sub.slice");
}

TEST(systemd_absent_path)
{
    CHECK_RESOLVES(NULL, "c1", true, "/system.slice/agentcage-c1.scope");
}

TEST(systemd_invalid_forms)
{
    CHECK_REFUSED("system.slice:docker", true, "linux.cgroupsPath");
    CHECK_REFUSED("/docker/abc", true, "linux.cgroupsPath");
    CHECK_REFUSED("a:b:c:d", true, "linux.cgroupsPath");
    CHECK_REFUSED("system.slice:docker:", true, "linux.cgroupsPath");
    CHECK_REFUSED("notaslice:docker:abc", true, "linux.cgroupsPath");
    CHECK_REFUSED("a--b.slice:docker:abc", true, "linux.cgroupsPath");
    CHECK_REFUSED("-a.slice:docker:abc", true, "linux.cgroupsPath");
    CHECK_REFUSED("a/b.slice:docker:abc", true, "linux.cgroupsPath");
    CHECK_REFUSED("system.slice:doc/ker:abc", true, "linux.cgroupsPath");
}

static const char mi_v1[] =
    "25 30 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid shared:9 - cgroup cgroup rw,xattr,name=systemd\n"
    "29 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct\n"
    "30 25 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory\n"
    "31 25 0:29 / /sys/fs/cgroup/net_cls,net_prio rw - cgroup cgroup rw,net_cls,net_prio\n"
    "32 25 0:30 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    "33 25 0:28 /sub /mnt/mem\\040bind rw - cgroup cgroup rw,memory\n";

TEST(layout_pure_v1_comounted)
{
    struct cg_layout l;
    ac_error_t err = NULL;
    REQUIRE(cg_layout_parse(mi_v1, &l, &err) == 0);
    CHECK_EQ_INT(l.mode, CGROUP_MODE_V1);
    CHECK(l.v2_mount == NULL);
    CHECK_EQ_INT(l.n_v1, 5);
    CHECK(l.v1_index[CG_CPU] >= 0 && l.v1_index[CG_CPU] == l.v1_index[CG_CPUACCT]);
    CHECK(l.v1_index[CG_NET_CLS] >= 0 && l.v1_index[CG_NET_CLS] == l.v1_index[CG_NET_PRIO]);
    CHECK(l.v1_index[CG_NAME_SYSTEMD] >= 0);
    CHECK_EQ_INT(l.v1_index[CG_FREEZER], -1);
    CHECK_EQ_INT(cg_controller_where(&l, CG_FREEZER), CG_NOWHERE);
    CHECK_EQ_INT(cg_controller_where(&l, CG_MEMORY), CG_ON_V1);
    /* the first mount of the memory hierarchy wins over the bind mount */
    char *dir = cg_v1_dir(&l, CG_MEMORY, "/a/b");
    CHECK_EQ_STR(dir, "/sys/fs/cgroup/memory/a/b");
    free(dir);
    dir = cg_v1_dir(&l, CG_CPUACCT, "/a");
    CHECK_EQ_STR(dir, "/sys/fs/cgroup/cpu,cpuacct/a");
    free(dir);
    cg_layout_release(&l);
}

/* The mount a container's cgroup mount binds for each /proc/self/cgroup
 * line, taken from the runtime's layout (mount_cgroup_v1). */
TEST(layout_hierarchy_mount_by_cgroup_line)
{
    static const char mi[] =
        "29 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "30 25 0:28 /outer /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "31 25 0:29 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
        "32 25 0:30 / /sys/fs/cgroup/other rw - cgroup cgroup rw,name=other\n"
        "33 25 0:28 /sub /mnt/mem rw - cgroup cgroup rw,memory\n"
        "41 25 0:38 /x /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
    struct cg_layout l;
    ac_error_t err = NULL;
    REQUIRE(cg_layout_parse(mi, &l, &err) == 0);
    const char *mp = NULL, *root = NULL;
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "cpu,cpuacct", &mp, &root), 1);
    CHECK_EQ_STR(mp, "/sys/fs/cgroup/cpu,cpuacct");
    CHECK_EQ_STR(root, "/");
    /* the first mount of a hierarchy, with its root */
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "memory", &mp, &root), 1);
    CHECK_EQ_STR(mp, "/sys/fs/cgroup/memory");
    CHECK_EQ_STR(root, "/outer");
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "name=systemd", &mp, &root), 1);
    CHECK_EQ_STR(mp, "/sys/fs/cgroup/systemd");
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "", &mp, &root), 1);
    CHECK_EQ_STR(mp, "/sys/fs/cgroup/unified");
    CHECK_EQ_STR(root, "/x");
    /* known controllers the host does not mount: none */
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "net_cls,net_prio", &mp, &root), 0);
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "pids", &mp, &root), 0);
    /* a named hierarchy the layout does not keep: it cannot tell */
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "name=other", &mp, &root), -1);
    cg_layout_release(&l);
    REQUIRE(cg_layout_parse(mi_v1, &l, &err) == 0);
    CHECK_EQ_INT(cg_layout_hierarchy_mount(&l, "", &mp, &root), 0); /* no cgroup2 mount */
    cg_layout_release(&l);
}

TEST(layout_hybrid)
{
    static const char mi[] =
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    struct cg_layout l;
    ac_error_t err = NULL;
    REQUIRE(cg_layout_parse(mi, &l, &err) == 0);
    CHECK_EQ_INT(l.mode, CGROUP_MODE_HYBRID);
    CHECK_EQ_STR(l.v2_mount, "/sys/fs/cgroup/unified");
    CHECK_EQ_INT(cg_controller_where(&l, CG_MEMORY), CG_ON_V1);
    /* freezer and devices fall back to cgroup2's core features */
    CHECK_EQ_INT(cg_controller_where(&l, CG_FREEZER), CG_ON_V2);
    cg_layout_release(&l);
}

TEST(layout_pure_v2)
{
    static const char mi[] =
        "22 1 0:21 / /sys rw - sysfs sysfs rw\n"
        "27 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n";
    struct cg_layout l;
    ac_error_t err = NULL;
    REQUIRE(cg_layout_parse(mi, &l, &err) == 0);
    CHECK_EQ_INT(l.mode, CGROUP_MODE_V2);
    CHECK_EQ_INT(l.n_v1, 0);
    CHECK_EQ_STR(l.v2_mount, "/sys/fs/cgroup");
    CHECK_EQ_INT(cg_controller_where(&l, CG_DEVICES), CG_ON_V2);
    char *dir = cg_v2_dir(&l, "/x");
    CHECK_EQ_STR(dir, "/sys/fs/cgroup/x");
    free(dir);
    cg_layout_release(&l);
}

TEST(stats_json_shape)
{
    struct cgroup_stats st = {0};
    st.cpu_usage_total_ns = 123;
    st.memory_usage = 4096;
    st.memory_limit = 1 << 20;
    st.pids_current = 3;
    st.pids_limit = 10;
    char *js = cgroup_stats_json(&st);
    REQUIRE(js != NULL);
    char errbuf[256];
    yajl_val root = yajl_tree_parse(js, errbuf, sizeof(errbuf));
    REQUIRE(root != NULL);
    const char *total[] = {"cpu", "usage", "total", NULL};
    const char *usage[] = {"memory", "usage", "usage", NULL};
    const char *limit[] = {"memory", "usage", "limit", NULL};
    const char *pids[] = {"pids", "current", NULL};
    const char *hugetlb[] = {"hugetlb", NULL};
    yajl_val v = yajl_tree_get(root, total, yajl_t_number);
    CHECK(v && YAJL_GET_INTEGER(v) == 123);
    v = yajl_tree_get(root, usage, yajl_t_number);
    CHECK(v && YAJL_GET_INTEGER(v) == 4096);
    v = yajl_tree_get(root, limit, yajl_t_number);
    CHECK(v && YAJL_GET_INTEGER(v) == 1 << 20);
    v = yajl_tree_get(root, pids, yajl_t_number);
    CHECK(v && YAJL_GET_INTEGER(v) == 3);
    CHECK(yajl_tree_get(root, hugetlb, yajl_t_object) != NULL);
    yajl_tree_free(root);
    free(js);
}

TEST(device_program_verifies)
{
    /* Loading needs CAP_BPF/CAP_SYS_ADMIN: only checked when we have it. */
    if (geteuid() != 0)
        return;
    struct oci_device_rule rules[] = {
        {.allow = false, .type = 'a', .major = -1, .minor = -1, .access = "rwm"},
        {.allow = true, .type = 'c', .major = 1, .minor = 3, .access = "rw"},
        {.allow = false, .type = 'b', .major = 8, .minor = -1, .access = "w"},
    };
    ac_error_t err = NULL;
    int fd = cg_bpf_devices_load(rules, 3, &err);
    if (fd < 0) {
        char *msg = ac_error_string(err);
        FAIL("load: %s", msg);
        free(msg);
        ac_error_free(&err);
        return;
    }
    close(fd);
    /* an unconditional rule last: nothing after it may be emitted */
    struct oci_device_rule all[] = {{.allow = true, .type = 'a', .major = -1, .minor = -1}};
    fd = cg_bpf_devices_load(all, 1, &err);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    ac_error_free(&err);
}
