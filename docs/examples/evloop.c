/*
 * evloop.c - durable commits from one event-loop thread, with no thread of its own for
 * durability: delog_force_nowait asks, delog_durable_fd says when.
 *
 *   evloop LOG [REQUESTS [INFLIGHT]]
 *
 * Creates LOG (64 MiB) if missing (on a file system with O_DIRECT, not tmpfs), then
 * serves REQUESTS (default 100000) requests with at most INFLIGHT (default 256) in
 * flight.  A request is one transaction of one 100-byte item; it completes - as a
 * server would answer its client - when its checkpoint is durable.  At the end it
 * closes the log, reopens it, checks that recovery finds the last acknowledged
 * checkpoint, and prints "evloop: ok" with the rate.  Exit status: 0 success, 1
 * failure, 2 usage error.
 *
 * The loop, one thread, epoll:
 *  - start requests while fewer than INFLIGHT are in flight: begin (DELOG_TX_NOWAIT:
 *    a loop must not block; -EAGAIN means the log is full for now), log, commit, then
 *    delog_force_nowait(log, seq) and remember seq with the request.  Requests
 *    committed into the same checkpoint share its write and flush (group commit);
 *  - wait in epoll_wait on delog_durable_fd; when it is readable, read it (re-arm),
 *    read delog_durable_seq and complete every request whose seq is at or below it
 *    (they were started in order, so they sit in a FIFO ring in seq order);
 *  - delog_error() != 0 after a wake-up: the log shut down; the requests in flight
 *    fail (nothing more will be acknowledged).
 * What the loop keeps is only the ring of in-flight sequences.  Everything durable is
 * released at once (delog_release): this program keeps its state nowhere else, so the
 * log may reuse the space (a real store releases after its write-back: kv.c).  After
 * -EAGAIN the same fd says when space may be back (a release, a cover record), so the
 * loop never needs a timeout: it retries at its next wake-up.
 *
 * Build: in the delog tree (docs/examples/CMakeLists.txt), or against an installed
 * delog: cc evloop.c $(pkg-config --cflags --libs delog) -o evloop.  Only <delog.h>.
 */
#include <delog.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define ITEM_BYTES 100u

struct ring {
	uint64_t *seq; /* checkpoint of each request in flight, oldest first */
	unsigned cap, head, n;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start one request: 0, -EAGAIN (the log is full for now) or an error. */
static int request_start(delog *log, uint64_t id, struct ring *r)
{
	unsigned char data[ITEM_BYTES];
	delog_tx *tx;
	uint64_t seq;
	int err;

	err = delog_tx_begin(log, ITEM_BYTES + DELOG_ITEM_OVERHEAD, DELOG_TX_NOWAIT, &tx);
	if (err)
		return err;
	memset(data, (int)(id & 0xff), sizeof(data));
	memcpy(data, &id, sizeof(id));
	err = delog_tx_log(tx, id, data, sizeof(data));
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	err = delog_tx_commit(tx, &seq);
	if (err)
		return err;
	err = delog_force_nowait(log, seq); /* 1: durable already; 0: asked */
	if (err < 0)
		return err;
	r->seq[(r->head + r->n++) % r->cap] = seq;
	return 0;
}

/* Complete the requests whose checkpoint is durable; returns how many. */
static unsigned requests_complete(delog *log, struct ring *r)
{
	uint64_t durable = delog_durable_seq(log);
	unsigned done = 0;

	while (r->n && r->seq[r->head] <= durable) {
		r->head = (r->head + 1) % r->cap;
		r->n--;
		done++;
	}
	if (done)
		(void)delog_release(log, durable);
	return done;
}

static int serve(delog *log, uint64_t total, unsigned inflight, uint64_t *last_acked)
{
	struct ring r = { calloc(inflight, sizeof(uint64_t)), inflight, 0, 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	int efd = delog_durable_fd(log), ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t started = 0, acked = 0;
	int err = 0;

	if (!r.seq || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev)) {
		free(r.seq);
		if (ep >= 0)
			close(ep);
		return -ENOMEM;
	}
	while (acked < total) {
		uint64_t n;

		while (started < total && r.n < r.cap) {
			err = request_start(log, started + 1, &r);
			if (err == -EAGAIN) { /* the durable fd says when to retry */
				err = 0;
				break;
			}
			if (err)
				goto out;
			started++;
		}
		acked += requests_complete(log, &r); /* "1: durable already" ones, too */
		if (acked == total)
			break;
		if (epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR) {
			err = -errno;
			goto out;
		}
		if (read(efd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
			err = -errno;
			goto out;
		}
		if ((err = delog_error(log)))
			goto out; /* shut down: the r.n requests in flight fail */
		acked += requests_complete(log, &r);
	}
	*last_acked = delog_durable_seq(log);
out:
	close(ep);
	free(r.seq);
	return err;
}

/* The recover callback: remember the last checkpoint handed over. */
static int on_ckpt(void *arg, const struct delog_checkpoint *ckpt, const struct delog_item *items,
		   size_t n)
{
	(void)items;
	(void)n;
	*(uint64_t *)arg = ckpt->seq;
	return 0;
}

int main(int argc, char **argv)
{
	struct delog_options o = { .size = sizeof(o) };
	uint64_t total = 100000, last_acked = 0, found = 0;
	unsigned long inflight = 256;
	double t0, t1;
	delog *log;
	int err;

	if (argc < 2 || argc > 4 || (argc > 2 && !(total = strtoull(argv[2], NULL, 10))) ||
	    (argc > 3 && ((inflight = strtoul(argv[3], NULL, 10)) < 1 || inflight > 1u << 20))) {
		fprintf(stderr, "usage: evloop LOG [REQUESTS [INFLIGHT]]\n");
		return 2;
	}
	o.flags = DELOG_OPEN_CREATE;
	o.create_size = 64u << 20;
	o.flush = DELOG_FLUSH_SINGLE;
	if ((err = delog_open(argv[1], &o, &log))) {
		fprintf(stderr, "evloop: open %s: %s\n", argv[1], delog_strerror(err));
		return 1;
	}
	t0 = now_s();
	err = serve(log, total, (unsigned)inflight, &last_acked);
	t1 = now_s();
	if (err) {
		fprintf(stderr, "evloop: %s\n", delog_strerror(err));
		delog_close(log);
		return 1;
	}
	if ((err = delog_close(log))) {
		fprintf(stderr, "evloop: close: %s\n", delog_strerror(err));
		return 1;
	}
	/* Reopen: recovery hands over what was not released, at least the newest durable
	 * checkpoint (the acknowledged one is never lost, released or not). */
	o.flags = 0;
	o.recover = on_ckpt;
	o.recover_arg = &found;
	if ((err = delog_open(argv[1], &o, &log))) {
		fprintf(stderr, "evloop: reopen: %s\n", delog_strerror(err));
		return 1;
	}
	if (delog_durable_seq(log) < last_acked || found < last_acked) {
		fprintf(stderr,
			"evloop: acknowledged checkpoint %" PRIu64 " lost (recovered %" PRIu64
			", last handed over %" PRIu64 ")\n",
			last_acked, delog_durable_seq(log), found);
		delog_close(log);
		return 1;
	}
	delog_close(log);
	printf("evloop: ok: %" PRIu64
	       " durable requests, %lu in flight, %.0f/s, last checkpoint %" PRIu64 "\n",
	       total, inflight, total / (t1 - t0), last_acked);
	return 0;
}
