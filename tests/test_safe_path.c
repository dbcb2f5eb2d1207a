/* safe_mkdir_p_at: directories made under a root fd, every prefix resolved
 * as if that fd were "/", in a temporary folder (no root needed). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/linux/rootfs.h"
#include "runtime/util/utils.h"
#include "tests/testlib.h"

static char top[PATH_MAX / 2];

/* TOP/rel, in a buffer of its own until the next call */
static const char *in_top(const char *rel)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", top, rel);
    return path;
}

/* A fresh folder TOP with TOP/root (the "rootfs") and TOP/outside. */
static int fresh_root(void)
{
    snprintf(top, sizeof(top), "%s/agentcage-safe-path.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(top) == NULL)
        return -1;
    if (mkdir(in_top("root"), 0755) < 0 || mkdir(in_top("outside"), 0755) < 0)
        return -1;
    return open(in_top("root"), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static bool is_dir(const char *rel)
{
    struct stat st;
    return stat(in_top(rel), &st) == 0 && S_ISDIR(st.st_mode);
}

static void remove_top(void)
{
    ac_error_t err = NULL;
    remove_dir(top, 16, &err);
    ac_error_free(&err);
}

TEST(mkdir_p_makes_every_missing_level_and_returns_the_last)
{
    int root = fresh_root();
    REQUIRE(root >= 0);
    ac_error_t err = NULL;
    int fd = safe_mkdir_p_at(root, "/a/b/c", 0755, &err);
    CHECK(fd >= 0);
    CHECK(is_dir("root/a/b/c"));
    struct stat got, want;
    CHECK(fd >= 0 && fstat(fd, &got) == 0 && stat(in_top("root/a/b/c"), &want) == 0 && got.st_ino == want.st_ino);
    if (fd >= 0)
        close(fd);
    /* all there: the same directory, nothing made */
    fd = safe_mkdir_p_at(root, "/a/b/c/", 0755, &err);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    /* under an existing level */
    fd = safe_mkdir_p_at(root, "/a/d", 0755, &err);
    CHECK(fd >= 0 && is_dir("root/a/d"));
    if (fd >= 0)
        close(fd);
    close(root);
    remove_top();
}

TEST(mkdir_p_follows_a_symlink_as_if_the_root_were_slash)
{
    int root = fresh_root();
    REQUIRE(root >= 0);
    /* an escape attempt: root/link -> ../../outside, and an absolute one;
     * root/outside is where "/outside" is inside the root */
    REQUIRE(mkdir(in_top("root/outside"), 0755) == 0);
    REQUIRE(symlink("../../outside", in_top("root/link")) == 0);
    char target[PATH_MAX];
    snprintf(target, sizeof(target), "%s", in_top("outside"));
    REQUIRE(symlink(target, in_top("root/abs")) == 0);
    ac_error_t err = NULL;
    int fd = safe_mkdir_p_at(root, "/link/x", 0755, &err);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(is_dir("root/outside/x"));
    CHECK(!is_dir("outside/x"));
    fd = safe_mkdir_p_at(root, "/abs/y", 0755, &err); /* fails: the link's target is not in the root */
    if (fd >= 0)
        close(fd);
    ac_error_free(&err);
    CHECK(!is_dir("outside/y"));
    close(root);
    remove_top();
}

TEST(mkdir_p_fails_on_a_file_in_the_way_and_names_the_path)
{
    int root = fresh_root();
    REQUIRE(root >= 0);
    int f = open(in_top("root/file"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE(f >= 0);
    close(f);
    ac_error_t err = NULL;
    int fd = safe_mkdir_p_at(root, "/file/sub", 0755, &err);
    CHECK(fd < 0);
    CHECK(err != NULL && strstr(err->msg, "/file") != NULL);
    ac_error_free(&err);
    close(root);
    remove_top();
}
