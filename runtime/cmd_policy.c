/* policy show [--tier N] [--bundle DIR] (placeholder: being written) */
#include "commands.h"

COMMAND(policy)
{
    return ac_error(err, 0, "policy: not implemented yet");
}
