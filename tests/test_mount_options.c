/* Unit tests of the mount "options" translation (runtime/linux/mount_options.c). */
#include <sys/mount.h>

#include "tests/testlib.h"
#include "runtime/linux/mount_options.h"

#define N(arr) (sizeof(arr) / sizeof((arr)[0]))

/* Parse a list of options given inline. */
#define PARSE(mo, ...)                                                                 \
    do {                                                                               \
        char *opts_[] = { __VA_ARGS__ };                                               \
        ac_error_t err_ = NULL;                                                        \
        REQUIRE_EQ_INT(mount_opts_parse(opts_, N(opts_), (mo), &err_), 0);             \
    } while (0)

TEST(empty_options)
{
    cleanup_mount_opts struct mount_opts mo;
    ac_error_t err = NULL;
    REQUIRE_EQ_INT(mount_opts_parse(NULL, 0, &mo, &err), 0);
    CHECK_EQ_UINT(mo.flags, 0);
    CHECK_EQ_UINT(mo.propagation, 0);
    CHECK(!mo.bind && !mo.has_rec_attr && !mo.idmap);
    CHECK(mo.data == NULL);
}

TEST(docker_proc_options)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "nosuid", "noexec", "nodev");
    CHECK_EQ_UINT(mo.flags, MS_NOSUID | MS_NOEXEC | MS_NODEV);
    CHECK(mo.data == NULL);
}

TEST(tmpfs_data_is_kept_in_order)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "nosuid", "strictatime", "mode=755", "size=65536k");
    CHECK_EQ_UINT(mo.flags, MS_NOSUID | MS_STRICTATIME);
    CHECK_EQ_STR(mo.data, "mode=755,size=65536k");
}

TEST(devpts_unknown_words_are_data)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5");
    CHECK_EQ_UINT(mo.flags, MS_NOSUID | MS_NOEXEC);
    CHECK_EQ_STR(mo.data, "newinstance,ptmxmode=0666,mode=0620,gid=5");
}

TEST(last_option_wins)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "ro", "rw", "nosuid", "suid", "noexec");
    CHECK_EQ_UINT(mo.flags, MS_NOEXEC);
    CHECK_EQ_UINT(mo.cleared, MS_RDONLY | MS_NOSUID);

    cleanup_mount_opts struct mount_opts mo2;
    PARSE(&mo2, "rw", "ro");
    CHECK_EQ_UINT(mo2.flags, MS_RDONLY);
    CHECK_EQ_UINT(mo2.cleared, 0);
}

TEST(every_plain_flag)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "ro", "nosuid", "nodev", "noexec", "sync", "dirsync", "remount", "mand", "noatime", "nodiratime",
          "relatime", "strictatime", "lazytime", "iversion", "silent", "nosymfollow", "defaults");
    CHECK_EQ_UINT(mo.flags, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS | MS_DIRSYNC |
                                MS_REMOUNT | MS_MANDLOCK | MS_NOATIME | MS_NODIRATIME | MS_RELATIME |
                                MS_STRICTATIME | MS_LAZYTIME | MS_I_VERSION | MS_SILENT | MS_NOSYMFOLLOW);
    CHECK(mo.data == NULL);

    cleanup_mount_opts struct mount_opts clr;
    PARSE(&clr, "rw", "suid", "dev", "exec", "async", "nomand", "atime", "diratime", "norelatime", "nostrictatime",
          "nolazytime", "noiversion", "loud", "symfollow");
    CHECK_EQ_UINT(clr.flags, 0);
    CHECK_EQ_UINT(clr.cleared, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SYNCHRONOUS | MS_MANDLOCK |
                                   MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME | MS_LAZYTIME |
                                   MS_I_VERSION | MS_SILENT | MS_NOSYMFOLLOW);
}

TEST(bind_and_rbind)
{
    cleanup_mount_opts struct mount_opts b;
    PARSE(&b, "bind", "ro");
    CHECK(b.bind && !b.recursive_bind);
    CHECK_EQ_UINT(b.flags, MS_RDONLY); /* MS_BIND is not a flag here */

    cleanup_mount_opts struct mount_opts rb;
    PARSE(&rb, "rbind", "rprivate");
    CHECK(rb.bind && rb.recursive_bind);
    CHECK_EQ_UINT(rb.flags, 0);
    CHECK_EQ_UINT(rb.propagation, MS_PRIVATE | MS_REC);
}

TEST(propagation_options)
{
    static const struct { const char *name; unsigned long flags; } cases[] = {
        { "private", MS_PRIVATE },         { "rprivate", MS_PRIVATE | MS_REC },
        { "shared", MS_SHARED },           { "rshared", MS_SHARED | MS_REC },
        { "slave", MS_SLAVE },             { "rslave", MS_SLAVE | MS_REC },
        { "unbindable", MS_UNBINDABLE },   { "runbindable", MS_UNBINDABLE | MS_REC },
    };
    for (size_t i = 0; i < N(cases); i++) {
        cleanup_mount_opts struct mount_opts mo;
        PARSE(&mo, (char *)cases[i].name);
        CHECK_EQ_UINT(mo.propagation, cases[i].flags);
        CHECK_EQ_UINT(mount_propagation_flags(cases[i].name), cases[i].flags);
    }
    CHECK_EQ_UINT(mount_propagation_flags("bogus"), 0);
    CHECK_EQ_UINT(mount_propagation_flags("ro"), 0);
    CHECK_EQ_UINT(mount_propagation_flags(NULL), 0);

    cleanup_mount_opts struct mount_opts last;
    PARSE(&last, "rshared", "rslave");
    CHECK_EQ_UINT(last.propagation, MS_SLAVE | MS_REC);
}

TEST(recursive_bits)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "rbind", "rro", "rnosuid", "rnodev", "rnoexec", "rnodiratime", "rnosymfollow");
    CHECK(mo.has_rec_attr);
    CHECK_EQ_UINT(mo.rec_attr_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                                       MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_NOSYMFOLLOW);
    CHECK_EQ_UINT(mo.rec_attr_clr, 0);
    CHECK_EQ_UINT(mo.flags, 0); /* r* options are not mount(2) flags */

    cleanup_mount_opts struct mount_opts clr;
    PARSE(&clr, "rrw", "rsuid", "rdev", "rexec", "rdiratime", "rsymfollow");
    CHECK(clr.has_rec_attr);
    CHECK_EQ_UINT(clr.rec_attr_set, 0);
    CHECK_EQ_UINT(clr.rec_attr_clr, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                                        MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_NOSYMFOLLOW);

    cleanup_mount_opts struct mount_opts last;
    PARSE(&last, "rro", "rrw");
    CHECK_EQ_UINT(last.rec_attr_set, 0);
    CHECK_EQ_UINT(last.rec_attr_clr, MOUNT_ATTR_RDONLY);
}

TEST(recursive_atime_is_an_enum)
{
    static const struct { const char *name; uint64_t mode; } cases[] = {
        { "rnoatime", MOUNT_ATTR_NOATIME },         { "rstrictatime", MOUNT_ATTR_STRICTATIME },
        { "rrelatime", MOUNT_ATTR_RELATIME },       { "ratime", MOUNT_ATTR_RELATIME },
        { "rnorelatime", MOUNT_ATTR_STRICTATIME },  { "rnostrictatime", MOUNT_ATTR_RELATIME },
    };
    for (size_t i = 0; i < N(cases); i++) {
        cleanup_mount_opts struct mount_opts mo;
        PARSE(&mo, (char *)cases[i].name);
        CHECK(mo.has_rec_attr);
        /* mount_setattr(2) wants the whole atime mask cleared to set a mode */
        CHECK_EQ_UINT(mo.rec_attr_clr, MOUNT_ATTR__ATIME);
        CHECK_EQ_UINT(mo.rec_attr_set, cases[i].mode);
    }
    cleanup_mount_opts struct mount_opts last;
    PARSE(&last, "rro", "rnoatime", "rstrictatime");
    CHECK_EQ_UINT(last.rec_attr_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_STRICTATIME);
    CHECK_EQ_UINT(last.rec_attr_clr, MOUNT_ATTR__ATIME);
}

TEST(idmap_markers)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "rbind", "idmap");
    CHECK(mo.idmap && !mo.recursive_idmap);

    cleanup_mount_opts struct mount_opts r;
    PARSE(&r, "rbind", "ridmap");
    CHECK(r.idmap && r.recursive_idmap);
    CHECK(r.data == NULL);
}

TEST(tmpcopyup_tolerated)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "tmpcopyup", "mode=1777");
    CHECK(mo.tmpcopyup);
    CHECK_EQ_STR(mo.data, "mode=1777");
}

TEST(empty_strings_skipped)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "", "ro", "", "size=1m");
    CHECK_EQ_UINT(mo.flags, MS_RDONLY);
    CHECK_EQ_STR(mo.data, "size=1m");
}

TEST(overlay_data)
{
    cleanup_mount_opts struct mount_opts mo;
    PARSE(&mo, "lowerdir=/a:/b", "upperdir=/u", "workdir=/w", "nodev");
    CHECK_EQ_UINT(mo.flags, MS_NODEV);
    CHECK_EQ_STR(mo.data, "lowerdir=/a:/b,upperdir=/u,workdir=/w");
}
