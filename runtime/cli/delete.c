/* delete [--force] ID */
#include <getopt.h>

#include "runtime/cli/commands.h"

COMMAND(delete)
{
    static const struct option opts[] = {{"force", no_argument, NULL, 'f'}, {NULL, 0, NULL, 0}};
    bool force = false;
    int c;
    while ((c = cli_getopt(argc, argv, "+f", opts)) != -1) {
        if (c != 'f')
            return ac_error(err, 0, "delete: unknown flag `%s`", argv[optind - 1]);
        force = true;
    }
    const char *id;
    if (cli_one_id(argc, argv, "delete [--force] ID", &id, err) < 0)
        return -1;
    return container_delete(g, id, force, err);
}
