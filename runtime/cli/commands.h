/* One function per CLI verb; each parses its own flags from argv (argv[0]
 * is the verb) and returns 0, or -1 with *err set. A positive return is an
 * exit status to pass through (run, exec). */
#ifndef AGENTCAGE_COMMANDS_H
#define AGENTCAGE_COMMANDS_H

#include "runtime/container/container.h"
#include "runtime/util/error.h"

#define COMMAND(name) int cmd_##name(struct global_opts *g, int argc, char **argv, ac_error_t *err)
COMMAND(create);
COMMAND(run);
COMMAND(start);
COMMAND(state);
COMMAND(list);
COMMAND(kill);
COMMAND(delete);
COMMAND(exec);
COMMAND(ps);
COMMAND(pause);
COMMAND(resume);
COMMAND(update);
COMMAND(events);
COMMAND(spec);
COMMAND(features);
COMMAND(policy);
COMMAND(audit);
COMMAND(approve);
COMMAND(deny);
COMMAND(pending);
COMMAND(credentials_expire);
COMMAND(check);
COMMAND(install);

/* approve/deny ID --egress HOST[:PORT] [--for DURATION] (egress_answers.c):
 * answer the requests container ID's proxy holds; duration NULL: only those. */
int cli_egress_answer(struct global_opts *g, const char *id, const char *target, const char *duration, bool allow,
                      ac_error_t *err);

/* Shared by the verbs: exactly one container id after the flags. */
int cli_one_id(int argc, char **argv, const char *usage, const char **id, ac_error_t *err);
/* getopt_long with runc's conventions ("+": flags before positionals). */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/* Parse a signal: "9", "KILL", "SIGKILL". -1 when unknown. */
int parse_signal(const char *s);
/* Wait for a child we started, forwarding the usual signals to it; returns
 * the exit status as a shell would (128+N for a signal). */
int wait_forwarding_signals(pid_t pid);

#endif
