/* Helpers shared by the CLI verbs. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    opterr = 0;
    return getopt_long(argc, argv, shortopts, longopts, NULL);
}

int cli_one_id(int argc, char **argv, const char *usage, const char **id, ac_error_t *err)
{
    if (optind >= argc)
        return ac_error(err, 0, "%s: missing container id (usage: %s)", argv[0], usage);
    if (argc - optind > 1)
        return ac_error(err, 0, "%s: unexpected argument `%s` (usage: %s)", argv[0], argv[optind + 1], usage);
    *id = argv[optind];
    return 0;
}

static const struct {
    const char *name;
    int sig;
} signals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},   {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"IOT", SIGIOT},     {"BUS", SIGBUS},     {"FPE", SIGFPE},   {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},   {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT}, {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},   {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"POLL", SIGPOLL}, {"PWR", SIGPWR},     {"SYS", SIGSYS},
};

int parse_signal(const char *s)
{
    uint64_t n;
    if (parse_uint64(s, &n) == 0)
        return n <= 64 ? (int)n : -1; /* 0: only checks the process exists, as kill(1) */
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
        if (strcasecmp(s, signals[i].name) == 0)
            return signals[i].sig;
    if (strncasecmp(s, "RTMIN", 5) == 0 || strncasecmp(s, "RTMAX", 5) == 0) {
        int base = strncasecmp(s, "RTMIN", 5) == 0 ? SIGRTMIN : SIGRTMAX;
        if (s[5] == '\0')
            return base;
        long off = strtol(s + 5, NULL, 10);
        return base + (int)off;
    }
    return -1;
}

static volatile sig_atomic_t forward_to;

static void forward_signal(int sig)
{
    if (forward_to > 0)
        kill(forward_to, sig);
}

int wait_forwarding_signals(pid_t pid)
{
    static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
    forward_to = pid;
    struct sigaction sa = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaction(forwarded[i], &sa, NULL);
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return 255;
    }
    forward_to = 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 255;
}
