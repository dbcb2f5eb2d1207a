/* spec [--bundle DIR] [--rootless], features */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

COMMAND(spec)
{
    static const struct option opts[] = {
        {"bundle", required_argument, NULL, 'b'}, {"rootless", no_argument, NULL, 'r'}, {NULL, 0, NULL, 0}};
    const char *bundle = ".";
    bool rootless = false;
    int c;
    while ((c = cli_getopt(argc, argv, "+b:", opts)) != -1) {
        if (c == 'b')
            bundle = optarg;
        else if (c == 'r')
            rootless = true;
        else
            return ac_error(err, 0, "spec: unknown flag `%s`", argv[optind - 1]);
    }
    if (optind < argc)
        return ac_error(err, 0, "spec: unexpected argument `%s`", argv[optind]);
    cleanup_free char *path = xasprintf("%s/config.json", bundle);
    cleanup_free char *json = spec_default_json(rootless, cgroup_host_mode() == CGROUP_MODE_V2);
    cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            return ac_error(err, 0, "spec: `%s` exists; remove it first", path);
        return ac_error(err, errno, "spec: create `%s`", path);
    }
    if (write_all(fd, json, strlen(json)) < 0 || write_all(fd, "\n", 1) < 0)
        return ac_error(err, errno, "spec: write `%s`", path);
    return 0;
}

COMMAND(features)
{
    cleanup_free char *json = spec_features_json();
    printf("%s\n", json);
    return 0;
}
