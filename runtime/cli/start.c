/* start ID */
#include <getopt.h>

#include "runtime/cli/commands.h"

COMMAND(start)
{
    static const struct option opts[] = {{NULL, 0, NULL, 0}};
    const char *id;
    if (cli_getopt(argc, argv, "+", opts) != -1)
        return ac_error(err, 0, "start: unknown flag `%s`", argv[optind - 1]);
    if (cli_one_id(argc, argv, "start ID", &id, err) < 0)
        return -1;
    return container_start(g, id, err);
}
