/* A tiered container's denials counter (runtime/linux/denials.h): made by
 * create with the container's limit, mapped by the watchdog and the egress
 * proxy's writer, read by delete for the exit record. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/container/container.h"
#include "runtime/linux/denials.h"
#include "runtime/util/utils.h"

char *denials_file_path(const char *state_dir) { return xasprintf("%s/%s", state_dir, DENIALS_FILE); }

int denials_file_create(const char *state_dir, uint32_t limit, ac_error_t *err)
{
    cleanup_free char *path = denials_file_path(state_dir);
    cleanup_close int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    static char file[DENIALS_SIZE];
    struct denials_counter head = {.magic = DENIALS_MAGIC, .limit = limit};
    memcpy(file, &head, sizeof(head));
    if (fd < 0 || write_all(fd, file, sizeof(file)) < 0)
        return ac_error(err, errno, "the denials counter `%s`", path);
    return 0;
}

int denials_file_open(const char *state_dir)
{
    cleanup_free char *path = denials_file_path(state_dir);
    return open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
}

bool denials_file_read(const char *state_dir, struct denials_counter *c, struct denials_bytes *b)
{
    cleanup_free char *path = denials_file_path(state_dir);
    cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size != DENIALS_SIZE ||
        pread(fd, c, sizeof(*c), 0) != (ssize_t)sizeof(*c) ||
        pread(fd, b, sizeof(*b), DENIALS_PAGE) != (ssize_t)sizeof(*b) || c->magic != DENIALS_MAGIC)
        return false;
    /* what others wrote, read as untrusted: texts end in a NUL */
    for (size_t i = 0; i < DENIALS_RING; i++)
        c->last[i].text[DENIALS_TEXT - 1] = '\0';
    return true;
}

bool denials_file_killed(const char *state_dir)
{
    struct denials_counter c;
    struct denials_bytes b;
    return denials_file_read(state_dir, &c, &b) && c.killed_by != 0;
}
