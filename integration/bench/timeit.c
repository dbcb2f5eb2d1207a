/* timeit: runs a sequence of commands N times, optionally from J parallel
 * workers, and reports for every step its wall time, the user+sys CPU time
 * and the peak RSS (ru_maxrss) of the command's process tree as wait4 sees
 * it.  It is the benchmark's stopwatch: no shell, no interpreter between the
 * clock and the runtime under test.
 *
 *   timeit [-n N] [-j J] [-s] -- CMD ARGS... [--- CMD ARGS...]...
 *
 * "%i" in an argument becomes the iteration number (0..N-1), so every
 * iteration can name its own container.  One iteration runs the steps in
 * order and stops at the first failing one.
 *
 * -s makes every worker a child subreaper: a runtime's container init that
 *    outlives `create` is reparented to the worker once `create` exits and is
 *    reaped by it, so the total CPU line also holds the work done inside the
 *    container's init (e.g. runc's re-executed `runc init`), which wait4 of
 *    the runtime command alone never sees.
 *
 * Output, one line per step and iteration, then one total line:
 *   step K iter I worker W wall_ns X cpu_ns Y maxrss_kb Z status S
 *   total n N jobs J wall_ns X cpu_ns Y failed F
 * The total's cpu_ns is every reaped descendant's user+sys (workers' own
 * bookkeeping excluded); its wall_ns is first fork to last exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_STEPS 8

struct step {
	char **argv; /* template, NULL terminated */
	int argc;
};

static struct step steps[MAX_STEPS];
static int n_steps;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t tv_ns(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

static int64_t rusage_cpu_ns(const struct rusage *ru)
{
	return tv_ns(ru->ru_utime) + tv_ns(ru->ru_stime);
}

/* Replaces every "%i" of a template argument with the iteration number. */
static char *expand_arg(const char *tmpl, long iter)
{
	char num[32];
	int num_len = snprintf(num, sizeof(num), "%ld", iter);
	size_t len = strlen(tmpl);
	char *out = malloc(len * (size_t)num_len + 1);
	char *o = out;

	if (out == NULL) {
		perror("timeit: malloc");
		exit(2);
	}
	for (const char *p = tmpl; *p; p++) {
		if (p[0] == '%' && p[1] == 'i') {
			memcpy(o, num, (size_t)num_len);
			o += num_len;
			p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

static int subreaper_mode; /* -s: orphans of the runtime are ours to reap */

/* The commands' stdin and stdout: an anonymous file, never the host's
 * /dev/null, because runsc hands its stdio to a sandbox running as nobody
 * and chowns them (which would re-own the device for the whole machine). */
static int sink_fd = -1;

/* Reaps whatever has already exited (orphans of the runtime under -s);
 * their usage lands in this process's RUSAGE_CHILDREN. */
static void reap_exited(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* Runs one step of one iteration and prints its line; returns its status. */
static int run_step(int step_no, long iter, int worker)
{
	const struct step *s = &steps[step_no];
	char *argv[s->argc + 1];
	struct rusage ru;
	int64_t start, end;
	int status = 0;
	pid_t pid;
	char line[256];
	int len;

	for (int a = 0; a < s->argc; a++)
		argv[a] = expand_arg(s->argv[a], iter);
	argv[s->argc] = NULL;

	start = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		exit(2);
	}
	if (pid == 0) {
		if (sink_fd >= 0) {
			dup2(sink_fd, STDIN_FILENO);
			dup2(sink_fd, STDOUT_FILENO);
		}
		execv(argv[0], argv);
		fprintf(stderr, "timeit: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	/* Under -s an orphan that exits meanwhile (a sandbox whose runtime's
	 * delete waits for it to be gone, as runsc's does) is reaped at once,
	 * not left a zombie until the step ends. */
	for (pid_t r; (r = wait4(subreaper_mode ? -1 : pid, &status, 0, &ru)) != pid;) {
		if (r < 0 && errno != EINTR) {
			perror("timeit: wait4");
			exit(2);
		}
	}
	end = now_ns();
	reap_exited();

	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* One write per line keeps parallel workers' lines whole. */
	len = snprintf(line, sizeof(line),
		       "step %d iter %ld worker %d wall_ns %lld cpu_ns %lld maxrss_kb %ld status %d\n", step_no,
		       iter, worker, (long long)(end - start), (long long)rusage_cpu_ns(&ru), ru.ru_maxrss, code);
	if (write(STDOUT_FILENO, line, (size_t)len) != len)
		perror("timeit: write");
	if (code != 0)
		fprintf(stderr, "timeit: iteration %ld step %d (%s) exited %d\n", iter, step_no, argv[0], code);
	for (int a = 0; a < s->argc; a++)
		free(argv[a]);
	return code;
}

/* Waits for the orphans still running (container inits that exit just
 * after `delete`), at most a few seconds, so their CPU is counted. */
static void reap_remaining(void)
{
	int64_t deadline = now_ns() + 5LL * 1000000000;

	for (;;) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);
		if (pid < 0)
			return; /* ECHILD: none left */
		if (pid == 0) {
			if (now_ns() > deadline)
				return;
			usleep(2000);
		}
	}
}

/* A worker runs iterations worker, worker+J, worker+2J, ...; exits with
 * the number of failed iterations (capped). */
static int run_worker(long n, int jobs, int worker, int subreaper)
{
	int failed = 0;
	struct rusage self;
	char line[128];
	int len;

	subreaper_mode = subreaper;
	if (subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		perror("timeit: PR_SET_CHILD_SUBREAPER");
	for (long iter = worker; iter < n; iter += jobs) {
		for (int s = 0; s < n_steps; s++) {
			if (run_step(s, iter, worker) != 0) {
				failed++;
				break;
			}
		}
	}
	if (subreaper)
		reap_remaining();
	getrusage(RUSAGE_SELF, &self);
	len = snprintf(line, sizeof(line), "self worker %d cpu_ns %lld\n", worker, (long long)rusage_cpu_ns(&self));
	if (write(STDOUT_FILENO, line, (size_t)len) != len)
		perror("timeit: write");
	return failed > 250 ? 250 : failed;
}

static void usage(void)
{
	fprintf(stderr, "usage: timeit [-n N] [-j J] [-s] -- CMD ARGS... [--- CMD ARGS...]...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 1;
	int jobs = 1, subreaper = 0, opt, failed = 0;
	struct rusage before, after;
	int64_t start, end;
	char line[256];
	int len;

	while ((opt = getopt(argc, argv, "+n:j:s")) != -1) {
		switch (opt) {
		case 'n':
			n = strtol(optarg, NULL, 10);
			break;
		case 'j':
			jobs = atoi(optarg);
			break;
		case 's':
			subreaper = 1;
			break;
		default:
			usage();
		}
	}
	if (n < 1 || jobs < 1 || optind >= argc)
		usage();

	/* Split the remaining arguments into steps at "---". */
	steps[0].argv = &argv[optind];
	for (int a = optind; a < argc; a++) {
		if (strcmp(argv[a], "---") == 0) {
			argv[a] = NULL;
			if (++n_steps >= MAX_STEPS)
				usage();
			steps[n_steps].argv = &argv[a + 1];
		} else {
			steps[n_steps].argc++;
		}
	}
	n_steps++;
	for (int s = 0; s < n_steps; s++)
		if (steps[s].argc == 0)
			usage();
	sink_fd = memfd_create("timeit-stdio", MFD_CLOEXEC);
	if (sink_fd < 0) {
		perror("timeit: memfd_create");
		exit(2);
	}

	/* Line-per-write output must not be buffered across a fork. */
	setvbuf(stdout, NULL, _IONBF, 0);
	getrusage(RUSAGE_CHILDREN, &before);
	start = now_ns();
	/* Even with J = 1 the iterations run in a forked worker, so the total
	 * counts the same things whatever J is. */
	for (int w = 0; w < jobs; w++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("timeit: fork");
			return 2;
		}
		if (pid == 0)
			_exit(run_worker(n, jobs, w, subreaper));
	}
	for (int w = 0; w < jobs; w++) {
		int status;
		if (wait(&status) < 0) {
			perror("timeit: wait");
			return 2;
		}
		if (WIFEXITED(status))
			failed += WEXITSTATUS(status);
		else
			failed++;
	}
	end = now_ns();
	getrusage(RUSAGE_CHILDREN, &after);

	/* The workers' own bookkeeping is subtracted by the reader from the
	 * "self" lines; the total here is everything reaped. */
	len = snprintf(line, sizeof(line), "total n %ld jobs %d wall_ns %lld cpu_ns %lld failed %d\n", n, jobs,
		       (long long)(end - start), (long long)(rusage_cpu_ns(&after) - rusage_cpu_ns(&before)), failed);
	if (write(STDOUT_FILENO, line, (size_t)len) != len)
		perror("timeit: write");
	return failed ? 1 : 0;
}
