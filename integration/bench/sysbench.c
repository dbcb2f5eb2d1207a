/* sysbench: a static in-container probe for the cost of a cheap system call
 * under whatever seccomp filter the runtime installed.  It calls getppid()
 * (through syscall(2), so no libc caching can skip the kernel) COUNT times
 * and prints "getppid_ns X calls N" with X the mean nanoseconds per call, the
 * best of ROUNDS rounds (the best, because noise only ever adds time).
 *
 *   sysbench [COUNT [ROUNDS]]     defaults: 2000000 3
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	double best = -1;
	long sink = 0;

	if (count < 1 || rounds < 1) {
		fprintf(stderr, "usage: sysbench [COUNT [ROUNDS]]\n");
		return 2;
	}
	for (int r = 0; r < rounds; r++) {
		double start = now_ns();
		for (long i = 0; i < count; i++)
			sink += syscall(SYS_getppid);
		double per_call = (now_ns() - start) / (double)count;
		if (best < 0 || per_call < best)
			best = per_call;
	}
	printf("getppid_ns %.2f calls %ld ppid %ld\n", best, count, sink / (count * rounds));
	return 0;
}
