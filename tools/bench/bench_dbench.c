/*
 * bench_dbench.c - `delog bench --workload dbench`: the dbench half of the seed commit's
 * argument ("xfs: drop async cache flushes from CIL commits" measured `dbench -t 30` at
 * 1..512 clients: bandwidth and latency per flush policy).
 *
 * Why this shape: dbench replays a file server's trace, so most of what it makes the
 * filesystem log is small metadata transactions that many clients commit into the same
 * checkpoints, and every so often a client calls fsync and waits.  The cost the flush
 * policies differ in is exactly that wait: how many cache flushes stand between a
 * commit and its acknowledgement, and how many clients one checkpoint (one set of
 * flushes) serves.  So a client here is a loop of operations on the public API only:
 *   - one transaction of 1..4 items (uniform), each of 64 B..4 KiB (an octave 64 B ..
 *     2 KiB uniformly, then uniform within [size, 2 x size]), reserving their size plus
 *     DELOG_ITEM_OVERHEAD each, committed with delog_tx_commit;
 *   - the first item is one of the client's own 256 keys (its files); each further one
 *     is, with probability 1/2, one of 64 keys every client shares (directories,
 *     allocation headers) and otherwise one of its own: keys recur within a checkpoint,
 *     so relogging (one copy per key per checkpoint) matters as it does in XFS;
 *   - every --force-every'th operation (default 8) then calls delog_force on the
 *     sequence its commit returned: that is dbench's fsync, and the latency reported is
 *     that operation's, from before delog_tx_begin to the force's return.
 * Throughput is MB/s of logged payload (the items' bytes, 10^6 B/s), as dbench reports
 * the bytes its clients moved; ops/s counts transactions.
 *
 * How a point is measured (bench_util.c's start gate and window, as in bench_commit.c):
 * the client threads wait at a gate until all exist, run a warm-up of max(--time / 10,
 * 20 ms) and a window of --time seconds; an operation counts when it completes inside
 * the window; delog_stats is read at both ends of the window, so flushes and
 * transactions per checkpoint are the steady state's.  The measuring thread calls delog_release(log, delog_durable_seq(log)) every
 * 2 ms, so the log never fills.  Client randomness is seeded by the client number, so a
 * point replays the same operations every run.
 *
 * This file measures one point (dbench_point); the workload's options, help and run loop
 * are bench_compare.c's, shared with fsmark and compare-flush (bench_flush.h).
 */
#include "bench_flush.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 4u
#define MIN_ITEM 64u
#define MAX_ITEM 4096u
#define OWN_KEYS 256u
#define SHARED_KEYS 64u
#define NS_OWN 1ull
#define NS_SHARED 2ull

struct dpoint;

struct dclient {
	struct dpoint *pt;
	unsigned id;
	pthread_t th;
	bool started;
	uint64_t rng;
	uint64_t nop;                /* operations so far (force every k-th) */
	uint64_t ops, forces, bytes; /* completed inside the window */
	uint64_t lat_sum, lat_max;   /* forcing operations inside the window, ns */
	int err;
	unsigned char buf[MAX_ITEM];
};

struct dpoint {
	struct bench *b;
	const struct fb_opts *o;
	delog *log;
	struct bench_gate g;
	const struct fb_env *e;
	struct delog_stats s0, s1;     /* at both ends of the window */
	struct bench_diskcount d0, d1; /* the disk's counters there */
};

/* xorshift64*: cheap, and the same sequence for the same client every run. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint32_t item_size(uint64_t *s)
{
	uint32_t base = MIN_ITEM << (rnd(s) % 6); /* 64 .. 2048 */
	uint32_t sz = base + (uint32_t)(rnd(s) % (base + 1));

	return sz > MAX_ITEM ? MAX_ITEM : sz;
}

/* One operation: a transaction, and a force every k-th time.  0 or an error. */
static int do_op(struct dclient *c)
{
	struct dpoint *pt = c->pt;
	uint32_t n = 1 + (uint32_t)(rnd(&c->rng) % MAX_ITEMS), len[MAX_ITEMS];
	uint64_t key[MAX_ITEMS], reserve = 0, payload = 0, seq = 0, t0, t1;
	bool force;
	delog_tx *tx;
	int err;

	for (uint32_t i = 0; i < n; i++) {
		bool shared = i > 0 && rnd(&c->rng) % 2;

		len[i] = item_size(&c->rng);
		key[i] = shared ? NS_SHARED << 56 | rnd(&c->rng) % SHARED_KEYS :
				  NS_OWN << 56 | (uint64_t)c->id << 32 | rnd(&c->rng) % OWN_KEYS;
		reserve += len[i] + DELOG_ITEM_OVERHEAD;
		payload += len[i];
	}
	force = ++c->nop % pt->o->force_every == 0;
	t0 = now_ns();
	err = delog_tx_begin(pt->log, reserve, 0, &tx);
	if (err)
		return err;
	for (uint32_t i = 0; i < n && !err; i++) {
		c->buf[0] = (unsigned char)key[i];
		err = delog_tx_log(tx, key[i], c->buf, len[i]);
	}
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	err = delog_tx_commit(tx, &seq);
	if (!err && force)
		err = delog_force(pt->log, seq);
	if (err)
		return err;
	t1 = now_ns();
	if (bench_in_window(&pt->g, t1)) {
		c->ops++;
		c->bytes += payload;
		if (force) {
			c->forces++;
			c->lat_sum += t1 - t0;
			if (t1 - t0 > c->lat_max)
				c->lat_max = t1 - t0;
		}
	}
	return 0;
}

static void *client_main(void *arg)
{
	struct dclient *c = arg;
	struct dpoint *pt = c->pt;
	bool go = bench_gate_wait(&pt->g);

	while (go && !atomic_load_explicit(&pt->g.stop, memory_order_relaxed)) {
		int err = do_op(c);

		if (err) {
			c->err = err;
			atomic_store(&pt->g.stop, true);
		}
	}
	return NULL;
}

/* delog_stats and the disk's counters at the window's ends (bench_gate_measure's edge). */
static void read_stats(void *arg, int end)
{
	struct dpoint *pt = arg;

	fb_read(pt->e, pt->log, end, end ? &pt->s1 : &pt->s0, end ? &pt->d1 : &pt->d0);
}

static int run_clients(struct dpoint *pt, unsigned nclients, struct dbench_row *row)
{
	struct dclient *cl = calloc(nclients, sizeof(*cl));
	struct bench_span sp = { 0 };
	uint64_t lat_sum = 0;
	unsigned started = 0;
	int err = 0;

	if (!cl)
		return -ENOMEM;
	bench_gate_init(&pt->g);
	pt->s0 = pt->s1 = (struct delog_stats){ .size = sizeof(pt->s0) };
	for (unsigned i = 0; i < nclients; i++) {
		cl[i].pt = pt;
		cl[i].id = i;
		cl[i].rng = 0x9E3779B97F4A7C15ull * (i + 1) | 1;
		memset(cl[i].buf, 0x20 + (int)(i % 64), sizeof(cl[i].buf));
	}
	for (unsigned i = 0; i < nclients; i++) {
		int e = fb_thread_start(&cl[i].th, client_main, &cl[i]);

		if (e) {
			err = -e;
			bench_fail(pt->b, err, NULL, "cannot start client thread %u of %u: %s",
				   i + 1, nclients, strerror(e));
			break;
		}
		cl[i].started = true;
		started++;
	}
	bench_gate_open(&pt->g, err ? -1 : 1, started);
	if (!err)
		bench_gate_measure(&pt->g, pt->b, pt->log, pt->o->time_s, read_stats, pt, &sp);
	atomic_store(&pt->g.stop, true);
	for (unsigned i = 0; i < nclients; i++) {
		if (!cl[i].started)
			continue;
		pthread_join(cl[i].th, NULL);
		row->ops += cl[i].ops;
		row->forces += cl[i].forces;
		row->bytes += cl[i].bytes;
		lat_sum += cl[i].lat_sum;
		if ((double)cl[i].lat_max / 1e6 > row->lat_max_ms)
			row->lat_max_ms = (double)cl[i].lat_max / 1e6;
		if (cl[i].err && !err)
			err = cl[i].err;
	}
	free(cl);
	bench_gate_destroy(&pt->g);
	if (!err && bench_interrupted(pt->b))
		err = -EINTR;
	if (err)
		return err;
	row->clients = nclients;
	row->window_s = (double)(sp.we - sp.ws) / 1e9;
	row->ops_per_s = (double)row->ops / row->window_s;
	row->forces_per_s = (double)row->forces / row->window_s;
	row->mb_per_s = bench_mbs(row->bytes, sp.we - sp.ws);
	row->lat_avg_ms = row->forces ? (double)lat_sum / (double)row->forces / 1e6 : NAN;
	if (!row->forces)
		row->lat_max_ms = NAN;
	fb_stats_delta(&row->st, &pt->s0, &pt->s1, &pt->d0, &pt->d1);
	return 0;
}

int dbench_point(struct fb_env *e, enum delog_flush_policy p, unsigned clients,
		 struct dbench_row *row)
{
	struct dpoint pt = { .b = e->b, .o = e->o, .e = e };
	struct iol_dev *simdev = NULL;
	char what[64];
	int err;

	memset(row, 0, sizeof(*row));
	row->policy = p;
	err = fb_log_open(e, p, &pt.log, &simdev);
	if (err)
		return err;
	err = run_clients(&pt, clients, row);
	snprintf(what, sizeof(what), "dbench, %s at %u clients", delog_flush_policy_name(p),
		 clients);
	return fb_point_end(e, err, pt.log, simdev, what);
}
