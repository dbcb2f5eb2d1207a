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

/* A fresh folder TOP with TOP/root (the "rootfs") and TOP/outside. */
static int fresh_root(void)
{
    snprintf(top, sizeof(top), "%s/agentcage-safe-path.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(top) == NULL)
        return -1;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/root", top);
    if (mkdir(path, 0755) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/outside", top);
    if (mkdir(path, 0755) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/root", top);
    return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static bool is_dir(const char *rel)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", top, rel);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
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
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/root/a/b/c", top);
    CHECK(fd >= 0 && fstat(fd, &got) == 0 && stat(path, &want) == 0 && got.st_ino == want.st_ino);
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
    char path[PATH_MAX];
    /* an escape attempt: root/link -> ../../outside, and an absolute one;
     * root/outside is where "/outside" is inside the root */
    snprintf(path, sizeof(path), "%s/root/outside", top);
    REQUIRE(mkdir(path, 0755) == 0);
    snprintf(path, sizeof(path), "%s/root/link", top);
    REQUIRE(symlink("../../outside", path) == 0);
    snprintf(path, sizeof(path), "%s/root/abs", top);
    char target[PATH_MAX];
    snprintf(target, sizeof(target), "%s/outside", top);
    REQUIRE(symlink(target, path) == 0);
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
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/root/file", top);
    int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
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
