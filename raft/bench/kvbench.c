/*
 * kvbench.c - the load generator of raft_bench.sh: SETs against a delog-raft-kv cluster
 * with a fixed number of requests in flight, for a fixed time.
 *
 *   kvbench NODES INFLIGHT SIZE SECONDS
 *
 * NODES is the comma-separated list of client addresses.  The leader is found with
 * STATUS; then INFLIGHT threads each keep one SET in flight on a connection of their own
 * (a blocking request/response loop), so exactly INFLIGHT requests are outstanding.  Only
 * SETs answered OK count (committed and applied, the daemon's contract); anything else
 * stops that thread and is reported.  Latencies are per request, from the send to the
 * reply.  Prints one line:
 *   bench: inflight N size S: W writes in T s: R/s p50 A ms p99 B ms
 * (the format of kvclient.py bench).  Written in C so that the client is not what limits
 * the cluster at 64 in flight on a small machine.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct worker {
	pthread_t t;
	int id;
	double *lat;
	size_t n, cap;
	int err;
	char why[128];
};

static struct sockaddr_in leader;
static double end_time;
static size_t vsize;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_addr(const char *a, struct sockaddr_in *sa)
{
	char host[64];
	int port;

	if (sscanf(a, "%63[^:]:%d", host, &port) != 2)
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int dial(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Send @req and read one reply line into @buf.  0 or -1. */
static int roundtrip(int fd, const char *req, size_t len, char *buf, size_t cap)
{
	size_t got = 0;

	while (len) {
		ssize_t w = write(fd, req, len);

		if (w <= 0)
			return -1;
		req += w;
		len -= (size_t)w;
	}
	while (got < cap - 1) {
		ssize_t r = read(fd, buf + got, 1);

		if (r <= 0)
			return -1;
		if (buf[got] == '\n') {
			buf[got] = '\0';
			return 0;
		}
		got++;
	}
	return -1;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char *req = malloc(vsize + 64), rep[256];
	int fd = dial(&leader);
	unsigned long i = 0;

	if (!req || fd < 0) {
		w->err = 1;
		snprintf(w->why, sizeof(w->why), "cannot connect to the leader");
		free(req);
		return NULL;
	}
	while (now() < end_time) {
		int len = snprintf(req, 64, "SET w%d-%lu ", w->id, i++);
		double t0;

		memset(req + len, 'x', vsize);
		req[len + (int)vsize] = '\n';
		t0 = now();
		if (roundtrip(fd, req, (size_t)len + vsize + 1, rep, sizeof(rep)) != 0) {
			w->err = 1;
			snprintf(w->why, sizeof(w->why), "connection lost");
			break;
		}
		if (strcmp(rep, "OK") != 0) {
			w->err = 1;
			snprintf(w->why, sizeof(w->why), "reply: %.100s", rep);
			break;
		}
		if (w->n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 4096;
			w->lat = realloc(w->lat, w->cap * sizeof(double));
			if (!w->lat)
				abort();
		}
		w->lat[w->n++] = now() - t0;
	}
	close(fd);
	free(req);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The node that says it leads (STATUS id=ID state=leader ...), waiting up to 15 s. */
static int find_leader(char *nodes)
{
	double stop = now() + 15;

	while (now() < stop) {
		char *copy = strdup(nodes), *save = NULL, *a;

		for (a = strtok_r(copy, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
			struct sockaddr_in sa;
			char rep[256], state[32];
			int fd;

			if (parse_addr(a, &sa) || (fd = dial(&sa)) < 0)
				continue;
			if (roundtrip(fd, "STATUS\n", 7, rep, sizeof(rep)) == 0 &&
			    sscanf(rep, "STATUS id=%*u state=%31s", state) == 1 &&
			    strcmp(state, "leader") == 0) {
				close(fd);
				leader = sa;
				free(copy);
				return 0;
			}
			close(fd);
		}
		free(copy);
		usleep(100000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct worker *w;
	size_t total = 0, k = 0;
	double *all, t0, el;
	int inflight, errs = 0;

	if (argc != 5 || (inflight = atoi(argv[2])) < 1 || atof(argv[4]) <= 0) {
		fprintf(stderr, "usage: kvbench NODES INFLIGHT SIZE SECONDS\n");
		return 2;
	}
	vsize = (size_t)atol(argv[3]);
	if (find_leader(argv[1])) {
		fprintf(stderr, "kvbench: no leader among %s\n", argv[1]);
		return 1;
	}
	w = calloc((size_t)inflight, sizeof(*w));
	if (!w)
		return 1;
	t0 = now();
	end_time = t0 + atof(argv[4]);
	for (int i = 0; i < inflight; i++) {
		w[i].id = i;
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (int i = 0; i < inflight; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].n;
		if (w[i].err && errs++ == 0)
			fprintf(stderr, "kvbench: worker %d stopped: %s\n", i, w[i].why);
	}
	el = now() - t0;
	all = malloc((total ? total : 1) * sizeof(double));
	for (int i = 0; i < inflight; i++) {
		memcpy(all + k, w[i].lat, w[i].n * sizeof(double));
		k += w[i].n;
		free(w[i].lat);
	}
	qsort(all, total, sizeof(double), cmp);
	printf("bench: inflight %d size %zu: %zu writes in %.2fs: %.0f/s p50 %.2f ms p99 %.2f ms\n",
	       inflight, vsize, total, el, (double)total / el, total ? all[total / 2] * 1e3 : 0.0,
	       total ? all[(size_t)((double)total * 0.99)] * 1e3 : 0.0);
	free(all);
	free(w);
	return errs ? 1 : 0;
}
