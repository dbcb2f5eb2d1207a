/* firstbyte: a static in-container probe for the latency of one HTTP
 * request, from the connect to the first byte of the answer (section 7 of
 * the bench). COUNT times, 10 ms apart (separate requests, as an agent's
 * commands make them): a new TCP connection to ADDR:PORT, "GET TARGET
 * HTTP/1.0" with Host: HOST, the time until the first read returns data,
 * then the rest read to the end and the connection closed. Prints
 *
 *   firstbyte_us T1 T2 ... (one per request that answered)
 *   failed N
 *
 * Direct, ADDR:PORT is the server and TARGET its path; through the egress
 * proxy, ADDR:PORT is the proxy and TARGET the absolute URL.
 *
 *   firstbyte ADDR PORT TARGET HOST COUNT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One request: microseconds to the first byte, or -1. */
static double one_request(const struct sockaddr_in *sa, const char *req, size_t len)
{
	char buf[4096];
	double start = now_us(), first = -1;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (const struct sockaddr *)sa, sizeof(*sa)) == 0 && write(s, req, len) == (ssize_t)len) {
		ssize_t n = read(s, buf, sizeof(buf));
		if (n > 0)
			first = now_us() - start;
		while (n > 0)
			n = read(s, buf, sizeof(buf));
	}
	close(s);
	return first;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: firstbyte ADDR PORT TARGET HOST COUNT\n");
		return 2;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
	int count = atoi(argv[5]);
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 || count < 1) {
		fprintf(stderr, "firstbyte: bad address or count\n");
		return 2;
	}
	char req[1024];
	int len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", argv[3], argv[4]);
	if (len < 0 || (size_t)len >= sizeof(req))
		return 2;
	int failed = 0;
	printf("firstbyte_us");
	for (int i = 0; i < count; i++) {
		double t = one_request(&sa, req, (size_t)len);
		if (t < 0)
			failed++;
		else
			printf(" %.1f", t);
		usleep(10000);
	}
	printf("\nfailed %d\n", failed);
	return failed == count;
}
