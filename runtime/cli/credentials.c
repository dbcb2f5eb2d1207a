/* credentials-expire ID: the expirer of a tiered container's credentials,
 * started by `start` for a container that has some with a ttl (not a verb
 * for users). It waits for the next expiry or for the container's init to
 * exit, whichever comes first, then removes the expired secrets inside the
 * container and revokes them (runtime/container/credentials.c); delete
 * revokes what is left. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

COMMAND(credentials_expire)
{
    static const struct option opts[] = {{NULL, 0, NULL, 0}};
    const char *id;
    if (cli_getopt(argc, argv, "+", opts) != -1)
        return ac_error(err, 0, "credentials-expire: unknown flag `%s`", argv[optind - 1]);
    if (cli_one_id(argc, argv, "credentials-expire ID", &id, err) < 0)
        return -1;
    cleanup_state struct container_state *st = NULL;
    if (state_load(g, id, &st, err) < 0)
        return -1;
    cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
    if (pidfd < 0 || process_start_time(st->pid) != st->pid_start_time)
        return 0; /* gone already: delete revokes */
    cleanup_free char *dir = state_dir_path(g, id);
    for (;;) {
        long long next = credentials_next_expiry(dir);
        if (next == 0)
            return 0;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long wait = next - ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        int r = wait > 0 ? poll(&p, 1, wait > 86400000 ? 86400000 : (int)wait) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 0)
            return 0; /* the init exited: delete revokes the rest */
        cleanup_close int lock = -1;
        if (state_lock(g, id, &lock, err) < 0)
            return -1; /* deleted meanwhile */
        credentials_expire(g, dir, id, st->pid, err);
    }
}
