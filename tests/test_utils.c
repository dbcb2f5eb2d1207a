/* Unit tests of small utilities the hot path computes itself instead of
 * calling libc: the UTC date (utc_date_time, instead of gmtime_r, which
 * loads the time zone), mkdir_p (the leaf first), list_has/list_has_all
 * (mount options and cgroup controllers), and the /etc/passwd
 * lookup that stands in for getpwnam in the static binary. No root needed. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/util/utils.h"
#include "tests/testlib.h"

/* What the runtime wrote before: strftime of gmtime_r. */
static void date_by_libc(time_t t, char out[64])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 64, "%Y-%m-%dT%H:%M:%S", &tm);
}

TEST(utc_date_time_known_days)
{
    static const struct {
        long long t;
        const char *want;
    } cases[] = {
        {0, "1970-01-01T00:00:00"},          {951782400, "2000-02-29T00:00:00"},
        {951868799, "2000-02-29T23:59:59"},  {4107542400, "2100-03-01T00:00:00"},
        {1795000000, "2026-11-18T11:06:40"}, {253402300799, "9999-12-31T23:59:59"},
        {-1, "1969-12-31T23:59:59"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char got[UTC_DATE_TIME_LEN];
        utc_date_time((time_t)cases[i].t, got);
        CHECK_EQ_STR(got, cases[i].want);
    }
}

TEST(utc_date_time_as_gmtime_r)
{
    /* a step that is no multiple of a day, so every time of day and every
     * day of the 400-year cycle comes round */
    int differ = 0;
    for (long long t = 0; t < 253402300799LL && differ < 3; t += 86400LL * 7 + 3607) {
        char want[64], got[UTC_DATE_TIME_LEN];
        date_by_libc((time_t)t, want);
        utc_date_time((time_t)t, got);
        if (strcmp(want, got) != 0) {
            CHECK_EQ_STR(got, want);
            differ++;
        }
    }
}

TEST(rfc3339_format_shape)
{
    char buf[RFC3339_LEN];
    rfc3339_format(buf);
    REQUIRE(strlen(buf) == 30);
    CHECK(buf[4] == '-' && buf[10] == 'T' && buf[19] == '.' && buf[29] == 'Z');
}

/* /proc/PID/stat's ppid, past a comm that holds spaces and ')' */
TEST(process_parent_from_proc_stat)
{
    CHECK_EQ_INT(process_parent(getpid()), getppid());
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_NAME, "a) b (c", 0, 0, 0);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    CHECK(child > 0);
    char b;
    CHECK(read(ready[0], &b, 1) == 1);
    close(ready[0]);
    close(ready[1]);
    CHECK_EQ_INT(process_parent(child), getpid());
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* gone (or its number already another's, never ours) */
    CHECK(process_parent(child) != getpid());
}

TEST(mkdir_p_leaf_first)
{
    char base[] = "/tmp/agentcage-test-utils.XXXXXX";
    REQUIRE(mkdtemp(base) != NULL);
    ac_error_t err = NULL;
    char *deep = xasprintf("%s/a/b/c", base);
    CHECK_EQ_INT(mkdir_p(deep, 0700, &err), 0); /* parents missing: made from the top */
    struct stat st;
    CHECK(stat(deep, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_EQ_INT(mkdir_p(deep, 0700, &err), 0); /* all there */
    char *leaf = xasprintf("%s/a/b/d", base);
    CHECK_EQ_INT(mkdir_p(leaf, 0700, &err), 0); /* the leaf alone */
    char *file = xasprintf("%s/f", base), *below = xasprintf("%s/f/g", base);
    FILE *f = fopen(file, "w");
    REQUIRE(f != NULL);
    fclose(f);
    CHECK_EQ_INT(mkdir_p(below, 0700, &err), -1); /* a file in the way: the error of the walk */
    CHECK(err != NULL && err->errno_value == ENOTDIR);
    ac_error_free(&err);
    rmdir(deep);
    rmdir(leaf);
    char *b = xasprintf("%s/a/b", base), *a = xasprintf("%s/a", base);
    rmdir(b);
    rmdir(a);
    unlink(file);
    rmdir(base);
    free(deep);
    free(leaf);
    free(file);
    free(below);
    free(b);
    free(a);
}

/* The word lists of mount options and cgroup controllers: whole words only,
 * every one of them, in any order. */
TEST(list_has_whole_words)
{
    const char *opts = "rw,nosuid,nodev,noexec,relatime,cpu,cpuacct";
    CHECK(list_has(opts, ',', "cpu"));
    CHECK(list_has(opts, ',', "cpuacct"));
    CHECK(!list_has(opts, ',', "cpuset")); /* a longer word that starts the same */
    CHECK(!list_has(opts, ',', "acct"));   /* the tail of a word */
    CHECK(!list_has(NULL, ',', "cpu"));
    CHECK(list_has("/a:/b", ':', "/b"));
    CHECK(list_has_all(opts, ',', "cpu,cpuacct"));
    CHECK(list_has_all(opts, ',', "cpuacct,cpu"));
    CHECK(!list_has_all(opts, ',', "cpu,cpuacct,cpuset"));
    CHECK(!list_has_all(opts, ',', "cpuacct,memory"));
    CHECK(list_has_all("rw,name=systemd", ',', "name=systemd"));
    CHECK(!list_has_all("rw,name=systemd", ',', "name=system"));
    CHECK(list_has_all(opts, ',', ""));
}

/* A line longer than the first buffer (a 10 KiB GECOS field) before the
 * user looked for, and as the user itself. */
TEST(passwd_file_user_long_lines)
{
    char path[] = "/tmp/agentcage-test-passwd.XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    REQUIRE(f != NULL);
    char *gecos = xmalloc(10241);
    memset(gecos, 'g', 10240);
    gecos[10240] = '\0';
    fprintf(f, "root:x:0:0:root:/root:/bin/sh\n");
    fprintf(f, "long:x:1001:1002:%s:/home/long:/bin/sh\n", gecos);
    fprintf(f, "after:x:1003:1004::/home/after:/bin/sh\n");
    fclose(f);
    uid_t uid = 0;
    gid_t gid = 0;
    char *home = NULL;
    CHECK_EQ_INT(passwd_file_user_in(path, "after", 0, &uid, &gid, &home), 0);
    CHECK_EQ_INT((int)uid, 1003);
    CHECK_EQ_INT((int)gid, 1004);
    CHECK_EQ_STR(home, "/home/after");
    free(home);
    home = NULL;
    CHECK_EQ_INT(passwd_file_user_in(path, NULL, 1001, &uid, &gid, &home), 0);
    CHECK_EQ_INT((int)gid, 1002);
    CHECK_EQ_STR(home, "/home/long");
    free(home);
    errno = 0;
    CHECK_EQ_INT(passwd_file_user_in(path, "none", 0, NULL, NULL, NULL), -1);
    CHECK_EQ_INT(errno, ENOENT);
    free(gecos);
    unlink(path);
}

/* The file alone, as glibc's getpwnam/getpwuid read it for the users it
 * holds (this test binary is dynamic: its NSS has "files" first). */
TEST(passwd_file_user_as_getpwnam)
{
    struct passwd *pw = getpwnam("root");
    REQUIRE(pw != NULL);
    uid_t uid = 1;
    gid_t gid = 1;
    char *home = NULL;
    REQUIRE_EQ_INT(passwd_file_user("root", 0, &uid, &gid, &home), 0);
    CHECK_EQ_INT((int)uid, (int)pw->pw_uid);
    CHECK_EQ_INT((int)gid, (int)pw->pw_gid);
    CHECK_EQ_STR(home, pw->pw_dir);
    free(home);
    home = NULL;
    REQUIRE_EQ_INT(passwd_file_user(NULL, 0, &uid, NULL, &home), 0);
    CHECK_EQ_INT((int)uid, 0);
    CHECK_EQ_STR(home, pw->pw_dir);
    free(home);
    errno = 0;
    CHECK_EQ_INT(passwd_file_user("agentcage-no-such-user", 0, &uid, &gid, NULL), -1);
    CHECK_EQ_INT(errno, ENOENT);
    errno = 0;
    CHECK_EQ_INT(passwd_file_user(NULL, 4023456789u, NULL, NULL, NULL), -1);
    CHECK_EQ_INT(errno, ENOENT);
}
