/*
 * Test helper: a flood of idle connections against a coordinator on
 * 127.0.0.1 (tests/cli/test_flood.sh, and by hand to measure how soon an
 * honest worker joins under it).  Needs no token: the sockets never say a
 * word, so they stay in their handshake until the coordinator drops them.
 *
 *   fixture_flood PORT N_HOSTS PER_HOST SECONDS
 *
 * Keeps PER_HOST sockets open from each of 127.0.0.2 .. 127.0.0.(N_HOSTS+1)
 * (all loopback on Linux, chosen with bind()); a socket the coordinator
 * closes is opened again 50 ms later, and every socket is opened again
 * after 5 s whatever happens.  Prints "flooding" once every socket was open
 * once, and "reconnects K" at the end (after SECONDS).  Exits 0, or 1 when
 * a first connection fails (later ones are tried again: the flood outlives
 * the coordinator).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connection from 127.0.0.host to 127.0.0.1:port, or -1 (said on
 * stderr when loud). */
static int open_from(int host, int port, int loud)
{
	struct sockaddr_in src, dst;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)host);
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons((unsigned short)port);
	dst.sin_addr.s_addr = htonl(0x7f000001u);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		if (loud)
			fprintf(stderr, "fixture_flood: from 127.0.0.%d: %s\n",
				host, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	int port, n_hosts, per_host, n;
	double seconds, end, *opened, *closed;
	struct pollfd *pf;
	unsigned long reconnects = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: fixture_flood PORT N_HOSTS PER_HOST SECONDS\n");
		return 2;
	}
	port = atoi(argv[1]);
	n_hosts = atoi(argv[2]);
	per_host = atoi(argv[3]);
	seconds = atof(argv[4]);
	if (n_hosts < 1 || n_hosts > 250 || per_host < 1 || per_host > 64)
		return 2;
	n = n_hosts * per_host;
	pf = calloc((size_t)n, sizeof(*pf));
	opened = calloc((size_t)n, sizeof(*opened));
	closed = calloc((size_t)n, sizeof(*closed));
	if (!pf || !opened || !closed)
		return 1;
	for (int i = 0; i < n; i++) {
		pf[i].fd = open_from(2 + i / per_host, port, 1);
		if (pf[i].fd < 0)
			return 1;
		pf[i].events = POLLIN;
		opened[i] = now();
	}
	printf("flooding\n");
	fflush(stdout);
	end = now() + seconds;
	while (now() < end) {
		double t;

		if (poll(pf, (nfds_t)n, 20) < 0 && errno != EINTR)
			return 1;
		t = now();
		for (int i = 0; i < n; i++) {
			/* closed by the coordinator (EOF, a reset, or bytes
			 * it sent before closing: it never answers an idle
			 * socket otherwise), or due to be opened again */
			if (pf[i].fd >= 0 && (pf[i].revents || t - opened[i] >= 5)) {
				close(pf[i].fd);
				pf[i].fd = -1;
				closed[i] = t;
			}
			if (pf[i].fd < 0 && t - closed[i] >= 0.05) {
				/* a refused connect (the coordinator is gone)
				 * is tried again 50 ms later */
				pf[i].fd = open_from(2 + i / per_host, port, 0);
				opened[i] = closed[i] = t;
				reconnects += pf[i].fd >= 0;
			}
			pf[i].revents = 0;
		}
	}
	printf("reconnects %lu\n", reconnects);
	return 0;
}
