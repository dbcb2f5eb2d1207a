/* ps [--format table|json] ID [ps args]: the processes in the container's
 * cgroup; the table comes from the host's ps(1), filtered to them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/container/gvisor.h"
#include "runtime/util/utils.h"

static bool has_pid(const pid_t *pids, size_t n, long pid)
{
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* Without a cgroup (rootless, --cgroup-manager disabled): the processes in
 * the container's pid namespace. */
static int pidns_pids(pid_t init, pid_t **out, size_t *n, ac_error_t *err)
{
    char path[300];
    struct stat want, st;
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", init);
    if (stat(path, &want) < 0)
        return 0; /* gone: no processes */
    DIR *d = opendir("/proc");
    if (d == NULL)
        return ac_error(err, errno, "ps: open /proc");
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        uint64_t pid;
        if (parse_uint64(de->d_name, &pid) < 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/ns/pid", de->d_name);
        if (stat(path, &st) < 0 || st.st_ino != want.st_ino || st.st_dev != want.st_dev)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = xrealloc(*out, cap * sizeof(pid_t));
        }
        (*out)[(*n)++] = (pid_t)pid;
    }
    closedir(d);
    return 0;
}

COMMAND(ps)
{
    static const struct option opts[] = {{"format", required_argument, NULL, 'f'}, {NULL, 0, NULL, 0}};
    bool json = false;
    int c;
    while ((c = cli_getopt(argc, argv, "+f:", opts)) != -1) {
        if (c == 'f' && (strcmp(optarg, "json") == 0 || strcmp(optarg, "table") == 0))
            json = strcmp(optarg, "json") == 0;
        else if (c == 'f')
            return ac_error(err, 0, "ps: --format: expected table or json, got `%s`", optarg);
        else
            return ac_error(err, 0, "ps: unknown flag `%s`", argv[optind - 1]);
    }
    if (optind >= argc)
        return ac_error(err, 0, "ps: missing container id");
    const char *id = argv[optind++];
    cleanup_state struct container_state *st = NULL;
    if (state_load(g, id, &st, err) < 0)
        return -1;
    /* gVisor: the host pids (json) are the sandbox's; the table is of the
     * workload's processes, which only gVisor's kernel knows */
    if (st->gvisor && !json)
        return gvisor_forward(g, st, argc, argv, err);
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    if (st->cgroup_path[0] ? cgroup_pids(st->cgroup_path, &pids, &n, err) < 0
                           : pidns_pids(st->pid, &pids, &n, err) < 0)
        return -1;
    if (json) {
        fputs("[", stdout);
        for (size_t i = 0; i < n; i++)
            printf("%s%d", i ? "," : "", pids[i]);
        puts("]");
        return 0;
    }
    /* ps -ef (or the given args), keeping the header and our pids */
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return ac_error(err, errno, "ps: pipe");
    int nargs = argc - optind;
    char **args = xcalloc((size_t)(nargs > 0 ? nargs : 1) + 2, sizeof(char *));
    args[0] = "ps";
    if (nargs > 0)
        for (int i = 0; i < nargs; i++)
            args[i + 1] = argv[optind + i];
    else
        args[1] = "-ef";
    pid_t child = fork();
    if (child == 0) {
        dup2(pipefd[1], 1);
        execvp("ps", args);
        _exit(127);
    }
    free(args);
    close(pipefd[1]);
    if (child < 0) {
        close(pipefd[0]);
        return ac_error(err, errno, "ps: fork");
    }
    FILE *f = fdopen(pipefd[0], "r");
    char *line = NULL;
    size_t cap = 0;
    int pid_col = -1;
    bool header = true;
    while (getline(&line, &cap, f) > 0) {
        if (header) {
            /* find the PID column */
            cleanup_free char *copy = xstrdup(line);
            char *save = NULL;
            int col = 0;
            for (char *tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save), col++)
                if (strcmp(tok, "PID") == 0)
                    pid_col = col;
            fputs(line, stdout);
            header = false;
            continue;
        }
        cleanup_free char *copy = xstrdup(line);
        char *save = NULL;
        int col = 0;
        for (char *tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save), col++) {
            if (col == pid_col) {
                if (has_pid(pids, n, strtol(tok, NULL, 10)))
                    fputs(line, stdout);
                break;
            }
        }
    }
    free(line);
    fclose(f);
    int status;
    waitpid(child, &status, 0);
    if (pid_col < 0)
        return ac_error(err, 0, "ps: no PID column in ps output");
    return 0;
}
