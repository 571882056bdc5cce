/*
 * bench_commit.c - `delog bench --workload commit`: durable commits per second, their
 * bandwidth and latency, per flush policy and client count, next to two raw baselines
 * measured in the same run on the same file.
 *
 * A durable commit is what an application that uses delog as its WAL pays per
 * transaction: delog_tx_begin (reserving --items x (--item-size + DELOG_ITEM_OVERHEAD)),
 * --items delog_tx_log calls of --item-size bytes (default 4 x 128 B) under keys
 * client << 40 | counter (distinct, so nothing is relogged), delog_tx_commit_force.  Its
 * latency runs from before begin to the force's return (now_ns).  MB/s counts the logged
 * payload (items x item size per commit), not what reaches the disk.
 *
 * The baselines, with plain syscalls (not the iolayer) on an O_DIRECT descriptor of the
 * same file (bench_util.c's bench_raw_commit and bench_prewrite, which bench_peers.c's
 * raw baseline shares), in a region of BASE_AREA bytes after the log (so they never
 * touch it) that is written with zeroes before the first point, so no write meets an
 * unwritten extent and fdatasync has no metadata to commit:
 *   raw-fdatasync  every client thread writes each commit as one O_DIRECT pwrite of its
 *                  payload rounded up to 4 KiB at its own offsets (cycling through its
 *                  share of the region) and calls fdatasync: the kernel merges
 *                  concurrent flushes, so this is strong at high client counts;
 *   ideal-group    a client queues its commit (mutex + condition variable); whoever
 *                  finds no leader at work becomes the leader, takes everything queued,
 *                  writes it as one O_DIRECT write (n x payload rounded up to 4 KiB) at
 *                  the next offset, fdatasyncs and wakes the commits it covered: group
 *                  commit with no log format, no CPU work and no thread hand-off.
 *
 * How a point is measured (bench_util.c: bench_clients_start, bench_gate_measure,
 * bench_clients_join, shared with bench_peers.c): the N client threads wait at a start
 * gate until all exist, then run for a warm-up of max(--time / 10, 20 ms) and the
 * measured window of --time seconds; a commit counts, with its latency, when it
 * completes inside the window, and delog_stats is read at both ends of it, so
 * checkpoints, device flushes, FUA writes, flushes per checkpoint and transactions per
 * checkpoint are those of the steady state.  The disk's own flush counter
 * (/sys/block/DISK/stat, bench_util.c) is read at the same two moments, for every point
 * (the baselines too), so each row shows the device flushes per commit that delog
 * counted (delog_stats' device_flushes, which counts a FUA write on a disk without FUA
 * as the flush it becomes) beside those the disk completed: they should agree within a
 * few per cent, the disk's being an upper bound on a machine where others flush too.
 * The measuring thread calls delog_release(log, delog_durable_seq(log)) every 2 ms, so
 * the log never fills (delog keeps the newest checkpoint pinned, which costs nothing
 * here).  For every client count the points run raw-fdatasync, ideal-group, then each
 * policy, so drift in the device affects all alike.  The process CPU time (getrusage,
 * all threads) over the window is reported per commit: where a point is CPU-bound, and
 * what delog's own path costs next to a bare pwrite + fdatasync.
 *
 * The log is formatted once (DELOG_OPEN_FORMAT, which zeroes the whole log area) and
 * reopened without FORMAT for every point: recovery of a cleanly closed log reads only
 * its last few records, while formatting writes the whole --size (the output shows
 * both times).  Each point uses a fresh handle with the policy under test.
 *
 * `--backend sim` runs on the in-memory disk (no PATH, no baselines) and measures the CPU
 * path; with --no-force the clients only commit (latency = begin to commit's return) and
 * one force follows the window, which measures the commit path without the push.
 *
 * --loop adds, at each --clients count N and for each policy, a point POLICY/loop: N
 * requests in flight from ONE event-loop thread and no client threads (loop_main below:
 * delog_force_nowait per commit, epoll on delog_durable_fd, completions in order), the
 * way an event-driven server (or the Raft io) would use delog.  Its CPU per commit is
 * the whole process's (the push thread and the completions included) over its commits.
 *
 * --rate LIST switches to the open loop (bench_openloop.c): Poisson arrivals at each
 * offered rate, latency from each commit's intended arrival.  This file parses its
 * options (--rate, --workers, --seed, --plot), prepares the target as above, and hands
 * over to bench_openloop_run.
 *
 * Acceptance figures of the issues are computed and printed (and in JSON under
 * "acceptance"), never asserted: single at 1 client >= 0.9 x raw-fdatasync at 1 client;
 * single at 64 clients >= 10 x its 1-client rate and >= 1.0 x the better baseline at 64;
 * single at 256 >= single at 64; single issues 1 device flush per checkpoint, sync at
 * most 2 (3 on a disk without FUA, whose FUA commit write is a write and a flush);
 * delog's device flushes per commit within 5% of the disk's at every delog point;
 * single/loop at 256 in flight >= 500,000 durable commits/s at <= 2 us of CPU each.
 */
#include "bench.h"

#include "io.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define MAX_CLIENTS 1024u
#define MAX_LIST 16u
#define NR_POLICIES BENCH_NR_POLICIES
#define RAW_BLOCK BENCH_RAW_BLOCK
#define BASE_AREA (64ull << 20) /* the baselines' region, after the log */
#define MAX_ITEM_SIZE (1u << 20)
#define MAX_ITEMS 1024u
#define DEFAULT_SEED 1u /* --seed: the open loop's arrival schedule */

/* The acceptance targets (reported, not asserted). */
#define T_SINGLE1_VS_RAW 0.9
#define T_SCALE_64 10.0
#define T_VS_BEST 1.0   /* single / the better baseline, at every count */
#define T_RTT_4_16 0.65 /* single / (N / RTT) at 4 and 16 clients */
#define T_RTT_64 0.4    /* ... at 64 */
#define T_CPU_US_64 5.0 /* ... or, with the CPUs saturated, CPU per commit */
#define T_256_VS_64 1.0
#define T_SINGLE_FLUSHES 1.0
#define T_SYNC_FLUSHES 2.0
#define T_DISK_AGREE 0.05
#define T_LOOP_256 500000.0   /* single/loop at 256 in flight, commits/s */
#define T_LOOP_CPU_US 2.0     /* ... and its CPU per durable commit */
#define T_SIM_CPU_VS_SYNC 1.0 /* on the sim: single's CPU per commit / sync's, every count */

enum {
	OPT_CLIENTS = BENCH_OPT_WORKLOAD,
	OPT_POLICY,
	OPT_TIME,
	OPT_ITEM_SIZE,
	OPT_ITEMS,
	OPT_LOG_SIZE,
	OPT_LOGBUFS,
	OPT_LOGBSIZE,
	OPT_NO_BASELINES,
	OPT_NO_FORCE,
	OPT_RATE,
	OPT_SEED,
	OPT_WORKERS,
	OPT_PLOT,
	OPT_LOOP,
};

static const struct option commit_options[] = {
	{ "clients", required_argument, NULL, OPT_CLIENTS },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "item-size", required_argument, NULL, OPT_ITEM_SIZE },
	{ "items", required_argument, NULL, OPT_ITEMS },
	{ "size", required_argument, NULL, OPT_LOG_SIZE },
	{ "logbufs", required_argument, NULL, OPT_LOGBUFS },
	{ "logbsize", required_argument, NULL, OPT_LOGBSIZE },
	{ "no-baselines", no_argument, NULL, OPT_NO_BASELINES },
	{ "no-force", no_argument, NULL, OPT_NO_FORCE },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "loop", no_argument, NULL, OPT_LOOP },
	{ NULL, 0, NULL, 0 },
};

struct commit_opts {
	unsigned clients[MAX_LIST], nclients;
	enum delog_flush_policy policy[NR_POLICIES];
	unsigned npolicy;
	double time_s;
	uint32_t item_size, items;
	uint64_t log_size;
	unsigned logbufs;  /* 0: the engine's default (8) */
	uint32_t logbsize; /* 0: the engine's default (256 KiB) */
	bool no_baselines, no_force;
	bool loop; /* also each count as requests in flight from one thread */
	/* the open loop (bench_openloop.c): --rate switches to it */
	double rates[BENCH_OL_MAX_RATES];
	unsigned nrates;
	uint64_t seed;
	unsigned workers; /* 0: the largest --clients count */
	const char *plot;
};

/* ---- options ---- */

static void commit_defaults(void *state)
{
	static const unsigned cl[] = { 1, 4, 16, 64, 256 };
	struct commit_opts *o = state;

	memcpy(o->clients, cl, sizeof(cl));
	o->nclients = sizeof(cl) / sizeof(cl[0]);
	o->npolicy = bench_safe_policies(o->policy);
	o->time_s = 3;
	o->item_size = 128;
	o->items = 4;
	o->log_size = 256ull << 20;
	o->seed = DEFAULT_SEED;
}

/* --rate: a comma-separated list of commits per second, 1 to BENCH_OL_MAX_RATE each. */
static int parse_rates(const char *arg, double *out, unsigned *n)
{
	const char *p = arg;

	*n = 0;
	for (;;) {
		char *end;
		double v;

		errno = 0;
		v = strtod(p, &end);
		if (end == p || errno || !isfinite(v) || v < 1 || v > BENCH_OL_MAX_RATE ||
		    (*end && *end != ','))
			return bench_usage_error("--rate: '%s' is not a list of rates from 1 to %.0f "
						 "commits per second",
						 arg, BENCH_OL_MAX_RATE);
		if (*n == BENCH_OL_MAX_RATES)
			return bench_usage_error("--rate: at most %u rates", BENCH_OL_MAX_RATES);
		out[(*n)++] = v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

static int commit_option(void *state, int opt, const char *arg)
{
	struct commit_opts *o = state;

	switch (opt) {
	case OPT_CLIENTS:
		return bench_parse_clients(arg, MAX_LIST, MAX_CLIENTS, false, o->clients,
					   &o->nclients);
	case OPT_POLICY:
		return bench_parse_policies(arg, o->policy, &o->npolicy);
	case OPT_TIME:
		return bench_parse_time(arg, &o->time_s);
	case OPT_ITEM_SIZE:
		return bench_parse_item_size(arg, MAX_ITEM_SIZE, &o->item_size);
	case OPT_ITEMS:
		return bench_parse_items(arg, MAX_ITEMS, &o->items);
	case OPT_LOG_SIZE:
		return bench_parse_log_size(arg, &o->log_size);
	case OPT_LOGBUFS:
		return bench_parse_logbufs(arg, &o->logbufs);
	case OPT_LOGBSIZE:
		return bench_parse_logbsize(arg, &o->logbsize);
	case OPT_NO_BASELINES:
		o->no_baselines = true;
		return 0;
	case OPT_NO_FORCE:
		o->no_force = true;
		return 0;
	case OPT_RATE:
		return parse_rates(arg, o->rates, &o->nrates);
	case OPT_SEED: {
		char *end;

		errno = 0;
		o->seed = strtoull(arg, &end, 0);
		if (end == arg || *end || errno || *arg == '-')
			return bench_usage_error("--seed: '%s' is not a number from 0 to 2^64 - 1",
						 arg);
		return 0;
	}
	case OPT_WORKERS: {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		if (end == arg || *end || errno || *arg == '-' || v < 1 || v > MAX_CLIENTS)
			return bench_usage_error("--workers: '%s' is not a count from 1 to %u", arg,
						 MAX_CLIENTS);
		o->workers = (unsigned)v;
		return 0;
	}
	case OPT_PLOT:
		return bench_parse_plot(arg, &o->plot);
	case OPT_LOOP:
		o->loop = true;
		return 0;
	}
	return bench_usage_error("unknown option");
}

static uint64_t payload(const struct commit_opts *o)
{
	return (uint64_t)o->items * o->item_size;
}

/* Bytes a baseline writes per commit: the payload rounded up to 4 KiB. */
static uint64_t raw_record(const struct commit_opts *o)
{
	return bench_raw_record(payload(o));
}

static int commit_check(struct bench *b, void *state)
{
	struct commit_opts *o = state;
	unsigned maxc = bench_max_clients(o->clients, o->nclients);

	if (bench_is_sim(b) && b->o.path)
		return bench_usage_error(
			"--backend sim runs on an in-memory disk: it takes no PATH");
	/* delog refuses a reservation over a quarter of the log; keep well inside it. */
	if (bench_tx_reservation(o->items, o->item_size) > o->log_size / 8)
		return bench_usage_error("a transaction of %u x %u bytes needs more than an eighth "
					 "of the log (--size)",
					 o->items, o->item_size);
	if (!o->nrates && (o->workers || o->plot || o->seed != DEFAULT_SEED))
		return bench_usage_error("--workers, --seed and --plot are for the open loop: "
					 "give --rate");
	if (o->nrates && o->workers)
		maxc = o->workers;
	if (o->loop && (o->no_force || o->nrates))
		return bench_usage_error("--loop measures durable commits in a closed loop: not "
					 "with --no-force or --rate");
	if (!bench_is_sim(b) && !o->no_baselines && raw_record(o) * maxc > BASE_AREA)
		return bench_usage_error("%u clients x %" PRIu64 " bytes per commit do not fit the "
					 "baselines' %llu MiB region; use --no-baselines",
					 maxc, raw_record(o), BASE_AREA >> 20);
	return 0;
}

static void commit_help(FILE *f)
{
	fprintf(f,
		"      --clients LIST     client thread counts, one point each (default 1,4,16,64,256)\n"
		"  -p, --policy LIST      flush policies: sync, async, single, none (UNSAFE: no\n"
		"                         flushes) (default sync,async,single)\n"
		"      --time S           measured seconds per point, fractions allowed, after a\n"
		"                         warm-up of S/10 (at least 20 ms) (default 3)\n"
		"      --item-size N      bytes per logged item (default 128)\n"
		"      --items N          items per transaction (default 4)\n"
		"  -s, --size N           log size, at least 16M (default 256M); the file is the\n"
		"                         log + 4 KiB + %llu MiB for the baselines\n"
		"      --logbufs N        log buffers, %u..%u (default: the engine's, 8)\n"
		"      --logbsize N       log buffer size, power of two 16K..256K (default: the\n"
		"                         engine's, 256K)\n"
		"      --no-baselines     skip raw-fdatasync and ideal-group\n"
		"      --no-force         commit without forcing (one force after the window):\n"
		"                         the commit path alone, e.g. with --backend sim\n"
		"      --loop             also run each policy at each --clients count N as N\n"
		"                         requests in flight from ONE event-loop thread\n"
		"                         (delog_force_nowait + epoll on delog_durable_fd; rows\n"
		"                         POLICY/loop), no client threads\n"
		"      --rate LIST        open loop: offered commits per second, one point each\n"
		"                         (e.g. 1000,5000,20000; 1 to %.0f; at most %u rates)\n"
		"      --workers N        open loop: worker threads per point (default: the\n"
		"                         largest --clients count, 256)\n"
		"      --seed N           open loop: the arrival schedule's seed (default %u)\n"
		"      --plot FILE.png    open loop: draw p99 against offered load with gnuplot\n"
		"                         (apt-get install gnuplot-nox; without it, skipped)\n"
		"\nA durable commit is delog_tx_begin, --items delog_tx_log, delog_tx_commit_force;\n"
		"its latency runs from begin to the force's return.  Baselines in the same run on\n"
		"the same file, with plain syscalls: raw-fdatasync (every client: one O_DIRECT\n"
		"pwrite of the commit rounded up to 4 KiB + fdatasync) and ideal-group (a leader\n"
		"writes all queued commits at once and fdatasyncs while the others wait).\n"
		"--backend sim: the in-memory disk, no PATH and no baselines.  The issue's\n"
		"acceptance ratios are printed at the end (reported, not asserted).\n"
		"flush/ckpt and flush/tx: the device flushes delog counted (PREFLUSH writes,\n"
		"standalone flushes, and FUA writes on a disk without FUA, each of which the\n"
		"kernel turns into a write and a flush) per checkpoint and per commit;\n"
		"disk fl/tx: the flush requests the disk itself completed in the same window\n"
		"(/sys/block/DISK/stat, Linux >= 5.5) per commit, for a file or block device on a\n"
		"local disk, '-' on sim or without counters.  Other processes flushing the same\n"
		"disk count there too, so on a shared machine it is an upper bound.\n"
		"--rate: the open loop.  Commits arrive at the offered rate (a Poisson process of\n"
		"seed + the rate's index, the same for every system) and queue for the workers;\n"
		"a commit's latency runs from its intended arrival to its return, queueing\n"
		"included (no coordinated omission).  Per system (each policy, and raw-fdatasync\n"
		"on a file unless --no-baselines; no ideal-group) and rate: offered, arrived and\n"
		"achieved commits/s, p50, p99, p99.9 and max latency, and whether the point\n"
		"saturated (achieved below 95%% of arrived, or a growing queue).  Every listed\n"
		"rate runs; --clients only sizes the worker pool.\n",
		BASE_AREA >> 20, DELOG_LOGBUFS_MIN, DELOG_LOGBUFS_MAX, BENCH_OL_MAX_RATE,
		BENCH_OL_MAX_RATES, DEFAULT_SEED);
}

/* ---- one point ---- */

enum kind {
	K_DELOG,
	K_RAW,
	K_GROUP,
	K_LOOP
};

struct point;

struct client {
	struct bench_client bc; /* buf: delog, one item's data; raw, the O_DIRECT record */
	struct point *pt;
};

struct point {
	struct bench *b;
	const struct commit_opts *o;
	enum kind kind;
	delog *log;
	struct bench_raw raw; /* baselines: the target (O_DIRECT) and their region; the
				   * group's leader writes at raw.base + goff */
	unsigned nclients;    /* K_LOOP: requests in flight (one thread) */
	struct bench_gate g;
	struct delog_stats s0, s1;     /* delog: at both ends of the window */
	const struct bench_disk *disk; /* the disk under the target (may have no counters) */
	struct bench_diskcount d0, d1; /* its counters at both ends of the window */
	/* ideal group commit */
	pthread_mutex_t glock;
	pthread_cond_t gcond;
	uint64_t submitted, completed; /* commit tickets queued / made durable */
	uint64_t goff;                 /* next write offset within the region */
	uint64_t gsyncs;               /* leader writes completed inside the window */
	bool leader;
	unsigned char *gbuf;
	size_t gbuf_len;
	int gerr;
};

struct row {
	const char *name; /* "raw-fdatasync", "ideal-group", or the policy's name */
	int policy;       /* enum delog_flush_policy, or -1 for a baseline */
	unsigned clients;
	uint64_t commits;
	double window_s, commits_per_s, mb_per_s;
	struct lat_stats lat;
	bool has_stats; /* delog: the delog_stats deltas below are set */
	bool loop;      /* --loop: `clients` requests in flight from one thread */
	uint64_t checkpoints, device_flushes, preflushes, flushes, fua_writes, transactions;
	uint64_t fua_flushes;   /* FUA writes counted as flushes (a disk without FUA) */
	uint64_t space_flushes; /* of flushes, those for log space, not a checkpoint */
	int device_fua;         /* delog_stats' device_fua */
	uint64_t records, record_bytes, space_waits;
	double flushes_per_ckpt, txs_per_ckpt;
	double flushes_per_tx;  /* delog: device_flushes per transaction */
	double copies;          /* delog: item bytes copied per byte logged (delog_stats) */
	double disk_flushes;    /* the disk's flush requests in the window; NAN: none */
	double disk_per_commit; /* per commit: delog's transactions, else commits */
	uint64_t syncs;         /* baselines: fdatasync calls inside the window */
	double cpu_s;           /* process CPU time (user + system) in the window */
	double open_s;          /* delog: reopening the log for this point */
};

static int do_delog(struct client *c)
{
	const struct commit_opts *o = c->pt->o;

	return bench_delog_commit(c->pt->log, o->items, o->item_size, c->bc.id, &c->bc.key,
				  c->bc.buf, !o->no_force);
}

static int do_raw(struct client *c)
{
	return bench_raw_commit(&c->pt->raw, c->bc.id, &c->bc.next, c->bc.buf);
}

/* One commit through the ideal group commit: queue a ticket, lead or wait. */
static int do_group(struct client *c)
{
	struct point *pt = c->pt;
	uint64_t mine;
	int err;

	pthread_mutex_lock(&pt->glock);
	mine = ++pt->submitted;
	while (pt->completed < mine && !pt->gerr) {
		if (pt->leader) {
			pthread_cond_wait(&pt->gcond, &pt->glock);
			continue;
		}
		/* Lead: take every ticket queued so far (ours among them). */
		uint64_t end = pt->submitted;
		size_t len = (size_t)(((end - pt->completed) * payload(pt->o) + RAW_BLOCK - 1) /
				      RAW_BLOCK * RAW_BLOCK);
		uint64_t off;

		if (len > pt->gbuf_len) /* cannot happen: one ticket per client */
			len = pt->gbuf_len;
		pt->leader = true;
		if (pt->goff + len > BASE_AREA)
			pt->goff = 0;
		off = pt->raw.base + pt->goff;
		pt->goff += len;
		pthread_mutex_unlock(&pt->glock);
		err = bench_write_sync(pt->raw.fd, pt->gbuf, len, off);
		pthread_mutex_lock(&pt->glock);
		pt->leader = false;
		if (err)
			pt->gerr = err;
		else if (bench_in_window(&pt->g, now_ns()))
			pt->gsyncs++;
		pt->completed = end;
		pthread_cond_broadcast(&pt->gcond);
	}
	err = pt->gerr;
	pthread_mutex_unlock(&pt->glock);
	return err;
}

/*
 * The event loop (--loop): one thread keeps pt->nclients requests in flight.  A request
 * is the commit of do_delog without its force: begin (DELOG_TX_NOWAIT: a loop never
 * blocks; -EAGAIN leaves the slot empty until the next wake-up), log, commit, then
 * delog_force_nowait of its sequence.  The thread then sleeps in epoll_wait on the
 * durable eventfd and completes, oldest first, every request whose checkpoint the
 * watermark covers; its latency runs from its begin to that moment.  A ring of
 * (sequence, start) pairs is all it keeps.
 */
struct loop_req {
	uint64_t seq, t0;
};

static int loop_start(struct client *c, struct loop_req *ring, unsigned *head, unsigned *n)
{
	const struct commit_opts *o = c->pt->o;
	delog *log = c->pt->log;
	struct loop_req *r = &ring[(*head + *n) % c->pt->nclients];
	delog_tx *tx;
	int err;

	r->t0 = now_ns();
	err = delog_tx_begin(log, bench_tx_reservation(o->items, o->item_size), DELOG_TX_NOWAIT,
			     &tx);
	for (uint32_t k = 0; !err && k < o->items; k++) {
		uint64_t key = bench_commit_key(c->bc.id, &c->bc.key);

		c->bc.buf[0] = (unsigned char)key;
		err = delog_tx_log(tx, key, c->bc.buf, o->item_size);
		if (err)
			delog_tx_abort(tx);
	}
	if (!err)
		err = delog_tx_commit(tx, &r->seq);
	if (!err && (err = delog_force_nowait(log, r->seq)) > 0)
		err = 0; /* durable already */
	if (!err)
		(*n)++;
	return err;
}

static void loop_main(struct client *c)
{
	struct point *pt = c->pt;
	struct loop_req *ring = calloc(pt->nclients, sizeof(*ring));
	struct epoll_event ev = { .events = EPOLLIN };
	int efd = delog_durable_fd(pt->log), ep = epoll_create1(EPOLL_CLOEXEC);
	unsigned head = 0, n = 0;
	int err = 0;

	if (!ring || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
		err = ring && ep >= 0 ? -errno : -ENOMEM;
	while (!err && !atomic_load_explicit(&pt->g.stop, memory_order_relaxed)) {
		bool full = false;
		uint64_t durable, v;

		while (n < pt->nclients && !full) {
			err = loop_start(c, ring, &head, &n);
			full = err == -EAGAIN;
			if (err && !full)
				break;
			err = 0;
		}
		if (err)
			break;
		/* Wake at least every 10 ms to see the window's end. */
		if (epoll_wait(ep, &ev, 1, 10) < 0 && errno != EINTR)
			err = -errno;
		else if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			err = -errno;
		else if (delog_error(pt->log))
			err = DELOG_ESHUTDOWN;
		durable = delog_durable_seq(pt->log);
		while (!err && n && ring[head].seq <= durable) {
			if (!bench_client_done(&pt->g, &c->bc, ring[head].t0, 0))
				break;
			head = (head + 1) % pt->nclients;
			n--;
		}
	}
	if (err)
		bench_client_done(&pt->g, &c->bc, 0, err);
	if (ep >= 0)
		close(ep);
	free(ring);
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct point *pt = c->pt;

	if (!bench_gate_wait(&pt->g))
		return NULL;
	if (pt->kind == K_LOOP) {
		loop_main(c);
		return NULL;
	}
	while (!atomic_load_explicit(&pt->g.stop, memory_order_relaxed)) {
		uint64_t t0 = now_ns();
		int err = pt->kind == K_DELOG ? do_delog(c) :
			  pt->kind == K_RAW   ? do_raw(c) :
						do_group(c);

		if (!bench_client_done(&pt->g, &c->bc, t0, err))
			break;
	}
	return NULL;
}

static void stats_delta(struct row *row, const struct delog_stats *s0, const struct delog_stats *s1)
{
	row->has_stats = true;
	row->checkpoints = s1->checkpoints - s0->checkpoints;
	row->device_flushes = s1->device_flushes - s0->device_flushes;
	row->preflushes = s1->preflushes - s0->preflushes;
	row->flushes = s1->flushes - s0->flushes;
	row->fua_writes = s1->fua_writes - s0->fua_writes;
	row->fua_flushes = s1->fua_flushes - s0->fua_flushes;
	row->space_flushes = s1->space_flushes - s0->space_flushes;
	row->device_fua = s1->device_fua;
	row->transactions = s1->transactions - s0->transactions;
	row->records = s1->records - s0->records;
	row->record_bytes = s1->record_bytes - s0->record_bytes;
	row->space_waits = s1->space_waits - s0->space_waits;
	row->flushes_per_ckpt = row->checkpoints ?
					(double)row->device_flushes / (double)row->checkpoints :
					NAN;
	row->txs_per_ckpt = row->checkpoints ?
				    (double)row->transactions / (double)row->checkpoints :
				    NAN;
	row->flushes_per_tx = bench_per((double)row->device_flushes, row->transactions);
	row->copies = bench_per((double)(s1->copied_bytes - s0->copied_bytes),
				s1->logged_bytes - s0->logged_bytes);
}

/* delog_stats and the disk's counters at the window's ends (bench_gate_measure's edge):
 * the disk's read on the inside of delog's, so a flush counted by delog is in both. */
static void read_stats(void *arg, int end)
{
	struct point *pt = arg;

	if (end) {
		pt->d1 = bench_disk_read(pt->disk);
		if (pt->log)
			delog_stats(pt->log, &pt->s1);
	} else {
		if (pt->log)
			delog_stats(pt->log, &pt->s0);
		pt->d0 = bench_disk_read(pt->disk);
	}
}

/* Run @pt's clients through warm-up and window and fill @row.  0 or the first error. */
static int run_point(struct point *pt, struct row *row)
{
	const struct commit_opts *o = pt->o;
	size_t buflen = pt->kind == K_DELOG || pt->kind == K_LOOP ? o->item_size : pt->raw.rec;
	struct bench_samples all = { 0 };
	struct bench_span sp = { 0 };
	struct bench_client *failed;
	struct client *cl;
	char msg[256] = "";
	int err, e;

	unsigned threads = pt->kind == K_LOOP ? 1 : pt->nclients;

	cl = calloc(threads, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	bench_gate_init(&pt->g);
	pt->s0 = pt->s1 = (struct delog_stats){ .size = sizeof(pt->s0) };
	for (unsigned i = 0; i < threads; i++)
		cl[i].pt = pt;
	err = bench_clients_start(&pt->g, cl, sizeof(*cl), threads, buflen, client_main, msg,
				  sizeof(msg));
	if (err && msg[0])
		bench_fail(pt->b, err, NULL, "%s", msg);
	if (!err)
		bench_gate_measure(&pt->g, pt->b, pt->log, o->time_s, read_stats, pt, &sp);
	e = bench_clients_join(&pt->g, cl, sizeof(*cl), threads, &row->commits, &all, &failed);
	if (e && !err)
		err = e;
	if (!err && bench_interrupted(pt->b))
		err = -EINTR;
	if (!err && pt->log && o->no_force)
		err = delog_force(pt->log, 0);
	free(cl);
	if (!err && all.oom)
		err = -ENOMEM;
	if (!err) {
		row->clients = pt->nclients;
		bench_span_rates(&sp, row->commits, payload(o), &row->window_s, &row->commits_per_s,
				 &row->mb_per_s, &row->cpu_s);
		bench_samples_stats(&all, &row->lat);
		/* raw: one fdatasync per commit; group: one per leader write */
		if (pt->kind == K_RAW || pt->kind == K_GROUP)
			row->syncs = pt->kind == K_RAW ? row->commits : pt->gsyncs;
		if (pt->log)
			stats_delta(row, &pt->s0, &pt->s1);
		row->disk_flushes = bench_disk_flushes(&pt->d0, &pt->d1);
		row->disk_per_commit = bench_per(row->disk_flushes,
						 pt->log ? row->transactions : row->commits);
	}
	bench_samples_free(&all);
	return err;
}

/* ---- the run ---- */

struct crun {
	struct bench *b;
	const struct commit_opts *o;
	bool sim;
	const char *fs_type;
	double format_s;
	struct bench_disk disk; /* the disk under the target, for its flush counter */
	struct row *rows;
	size_t nrows;
};

static struct delog_options log_opts(const struct crun *r, enum delog_flush_policy p,
				     unsigned flags)
{
	return bench_log_opts(r->b, p, flags, r->o->logbufs, r->o->logbsize, r->o->log_size);
}

static int delog_point(struct crun *r, enum delog_flush_policy p, enum kind k, unsigned clients,
		       struct row *row)
{
	struct delog_options lo = log_opts(r, p, r->sim ? DELOG_OPEN_CREATE : 0);
	struct point pt = { .b = r->b,
			    .o = r->o,
			    .kind = k,
			    .nclients = clients,
			    .raw.fd = -1,
			    .disk = &r->disk };
	uint64_t t0 = now_ns();
	int err, e2;

	err = delog_open(r->sim ? NULL : r->b->t.path, &lo, &pt.log);
	row->open_s = (double)(now_ns() - t0) / 1e9;
	if (err) {
		bench_fail(r->b, err, r->sim ? "sim" : r->b->t.path, "cannot open the log (%s): %s",
			   delog_flush_policy_name(p), tool_strerror(err));
		return err;
	}
	err = run_point(&pt, row);
	e2 = delog_close(pt.log);
	if (err && err != -EINTR)
		bench_fail(r->b, err, NULL, "%s at %u clients: %s", row->name, clients,
			   tool_strerror(err));
	else if (!err && e2)
		bench_fail(r->b, err = e2, NULL, "%s at %u clients: closing the log: %s", row->name,
			   clients, tool_strerror(e2));
	return err;
}

static int baseline_point(struct crun *r, enum kind k, unsigned clients, struct row *row)
{
	struct point pt = { .b = r->b, .o = r->o, .kind = k, .nclients = clients, .disk = &r->disk };
	int err;

	pt.raw.fd = open(r->b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (pt.raw.fd < 0) {
		err = -errno;
		bench_fail(r->b, err, r->b->t.path, "cannot open with O_DIRECT: %s",
			   strerror(-err));
		return err;
	}
	/* share >= rec: commit_check */
	bench_raw_layout(&pt.raw, DELOG_SB_BYTES + r->o->log_size, BASE_AREA, raw_record(r->o),
			 clients);
	pthread_mutex_init(&pt.glock, NULL);
	pthread_cond_init(&pt.gcond, NULL);
	pt.gbuf_len = (size_t)((clients * payload(r->o) + RAW_BLOCK - 1) / RAW_BLOCK * RAW_BLOCK);
	err = 0;
	if (k == K_GROUP) {
		if (posix_memalign((void **)&pt.gbuf, 4096, pt.gbuf_len))
			err = -ENOMEM;
		else
			memset(pt.gbuf, 0x5a, pt.gbuf_len);
	}
	if (!err)
		err = run_point(&pt, row);
	free(pt.gbuf);
	pthread_cond_destroy(&pt.gcond);
	pthread_mutex_destroy(&pt.glock);
	close(pt.raw.fd);
	if (err && err != -EINTR)
		bench_fail(r->b, err, NULL, "%s at %u clients: %s", row->name, clients,
			   strerror(-err));
	return err;
}

/* ---- the report ---- */

static const struct row *find_row(const struct crun *r, const char *name, unsigned clients)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (r->rows[i].clients == clients && !strcmp(r->rows[i].name, name))
			return &r->rows[i];
	return NULL;
}

/* The better of the two baselines at @clients, or NULL. */
static const struct row *best_baseline(const struct crun *r, unsigned clients)
{
	const struct row *a = find_row(r, "raw-fdatasync", clients);
	const struct row *g = find_row(r, "ideal-group", clients);

	if (!a || !g)
		return a ? a : g;
	return g->commits_per_s > a->commits_per_s ? g : a;
}

enum cmp {
	GE,
	LE
};

struct accept {
	char name[48];  /* JSON key */
	char what[128]; /* human description */
	double value, target;
	enum cmp cmp;
	bool met; /* set for LE (counts, see acceptance()) */
};

#define MAX_ACCEPT (3 * MAX_LIST + 10)

/* The event loop's figures (--loop), if this run has the point: @a gets them, returns
 * how many. */
static size_t accept_loop(const struct crun *r, struct accept *a)
{
	const struct row *l256 = find_row(r, "single/loop", 256);
	size_t n = 0;

	if (l256) {
		a[n] = (struct accept){ "single_loop_256_commits_per_s",
					"",
					l256->commits_per_s,
					T_LOOP_256,
					GE,
					false };
		snprintf(a[n++].what, sizeof(a[0].what), "single/loop, 256 in flight: commits/s");
	}
	if (l256 && l256->commits) {
		double us = l256->cpu_s * 1e6 / (double)l256->commits;

		a[n] = (struct accept){ "single_loop_256_cpu_us_per_commit",
					"",
					us,
					T_LOOP_CPU_US,
					LE,
					us <= T_LOOP_CPU_US };
		snprintf(a[n++].what, sizeof(a[0].what),
			 "single/loop, 256 in flight: CPU us per "
			 "commit");
	}
	return n;
}

/* On the sim a flush costs nothing, so the figure is delog's CPU path: single's CPU per
 * commit against sync's at each client count both ran at.  @a gets them, returns how
 * many. */
static size_t accept_sim(const struct crun *r, struct accept *a)
{
	size_t n = 0;

	for (unsigned i = 0; r->sim && i < r->o->nclients; i++) {
		unsigned c = r->o->clients[i];
		const struct row *s = find_row(r, "single", c), *y = find_row(r, "sync", c);
		double v;

		if (!s || !y || !s->commits || !y->commits || !(y->cpu_s > 0))
			continue;
		v = (s->cpu_s / (double)s->commits) / (y->cpu_s / (double)y->commits);
		a[n] = (struct accept){ "", "", v, T_SIM_CPU_VS_SYNC, LE, v <= T_SIM_CPU_VS_SYNC };
		snprintf(a[n].name, sizeof(a[0].name), "single_%u_cpu_vs_sync_%u", c, c);
		snprintf(a[n++].what, sizeof(a[0].what),
			 "single, %u client%s: CPU per commit / sync's", c, c == 1 ? "" : "s");
	}
	return n;
}

/* The acceptance figures that this run has the points for. */
static size_t acceptance(const struct crun *r, struct accept *a)
{
	const struct row *s1 = find_row(r, "single", 1), *s64 = find_row(r, "single", 64);
	const struct row *s256 = find_row(r, "single", 256),
			 *raw1 = find_row(r, "raw-fdatasync", 1);
	double smax = NAN, smin = NAN, syncmax = NAN, agree = NAN, sync_lim = T_SYNC_FLUSHES;
	bool single_ok = true, sync_ok = true;
	size_t n = 0;

	if (r->o->no_force)
		return 0;
	if (s1 && raw1) {
		a[n] = (struct accept){ "single_1_vs_raw_fdatasync_1",
					"",
					s1->commits_per_s / raw1->commits_per_s,
					T_SINGLE1_VS_RAW,
					GE,
					false };
		snprintf(a[n++].what, sizeof(a[0].what),
			 "single, 1 client / raw-fdatasync, 1 client");
	}
	/* Group commit's scaling, where a commit waits for a flush: not on the sim. */
	if (s1 && s64 && !r->sim) {
		a[n] = (struct accept){ "single_64_vs_single_1",
					"",
					s64->commits_per_s / s1->commits_per_s,
					T_SCALE_64,
					GE,
					false };
		snprintf(a[n++].what, sizeof(a[0].what), "single, 64 clients / single, 1 client");
	}
	/* At every client count: single against the better of the two baselines, and at
	 * 4, 16 and 64 against N / RTT, what N closed-loop clients would reach if each
	 * commit waited for one write + flush round trip only (RTT: the 1-client raw
	 * write + fdatasync median of this run). */
	for (unsigned i = 0; i < r->o->nclients; i++) {
		unsigned c = r->o->clients[i];
		const struct row *s = find_row(r, "single", c), *best = best_baseline(r, c);
		double rtt_s = raw1 ? raw1->lat.median_us / 1e6 : 0;

		if (s && best) {
			a[n] = (struct accept){
				"", "", s->commits_per_s / best->commits_per_s, T_VS_BEST, GE, false
			};
			snprintf(a[n].name, sizeof(a[0].name), "single_%u_vs_best_baseline_%u", c,
				 c);
			snprintf(a[n++].what, sizeof(a[0].what),
				 "single, %u clients / %s, %u clients", c, best->name, c);
		}
		if (s && rtt_s > 0 && (c == 4 || c == 16 || c == 64)) {
			a[n] = (struct accept){ "",
						"",
						s->commits_per_s / (c / rtt_s),
						c == 64 ? T_RTT_64 : T_RTT_4_16,
						GE,
						false };
			snprintf(a[n].name, sizeof(a[0].name), "single_%u_vs_n_over_rtt", c);
			snprintf(a[n++].what, sizeof(a[0].what),
				 "single, %u clients / (%u / RTT), RTT %.1f us", c, c, rtt_s * 1e6);
		}
	}
	if (s64 && s64->commits) {
		double us = s64->cpu_s * 1e6 / (double)s64->commits;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		a[n] = (struct accept){
			"single_64_cpu_us_per_commit", "", us, T_CPU_US_64, LE, us <= T_CPU_US_64
		};
		snprintf(a[n++].what, sizeof(a[0].what),
			 "single, 64 clients: CPU us per commit (CPUs %.0f%% busy)",
			 100 * s64->cpu_s / s64->window_s / (double)(ncpu > 0 ? ncpu : 1));
	}
	n += accept_loop(r, a + n);
	n += accept_sim(r, a + n);
	if (s64 && s256) {
		a[n] = (struct accept){ "single_256_vs_single_64",
					"",
					s256->commits_per_s / s64->commits_per_s,
					T_256_VS_64,
					GE,
					false };
		snprintf(a[n++].what, sizeof(a[0].what),
			 "single, 256 clients / single, 64 clients");
	}
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];
		bool single = w->policy == DELOG_FLUSH_SINGLE;
		double *m = single ? &smax : w->policy == DELOG_FLUSH_SYNC ? &syncmax : NULL;
		/* The two counters are read a moment apart at each end of the window, so a
		 * checkpoint in flight there may show its flush and not itself (or the
		 * reverse): that is the edge, not the policy.  One flush either way, or for
		 * single one per client: its chained flush (engine/policy.c P1-P3) lets up to
		 * one checkpoint per waiting client be counted while its flush is still out.
		 * single makes at most one flush per checkpoint: one chained flush may cover
		 * several. */
		double lim = single ? T_SINGLE_FLUSHES : T_SYNC_FLUSHES;
		uint64_t edge = single && w->clients ? w->clients : 1;
		/* A disk without FUA adds the FUA commit write's flush (fua_flushes); flushes
		 * for log space (cover records, the unflushed window) are no checkpoint's. */
		bool ok = (double)w->device_flushes <=
				  lim * (double)w->checkpoints + (double)w->fua_flushes +
					  (double)w->space_flushes + (double)edge &&
			  (!single || w->device_flushes > 0 || !w->checkpoints);

		/* delog's device flushes against the disk's, where both are counted and
		 * delog flushed at all (`none`'s would be only other processes' flushes). */
		if (w->has_stats && w->device_flushes && isfinite(w->disk_flushes) &&
		    w->disk_flushes > 0) {
			double dev = fabs((double)w->device_flushes / w->disk_flushes - 1);

			agree = isnan(agree) || dev > agree ? dev : agree;
		}
		if (w->policy == DELOG_FLUSH_SYNC && w->has_stats && w->device_fua != 1)
			sync_lim = T_SYNC_FLUSHES + 1;
		if (!m || !w->checkpoints)
			continue;
		if (isnan(*m) || w->flushes_per_ckpt > *m)
			*m = w->flushes_per_ckpt;
		if (single)
			smin = isnan(smin) || w->flushes_per_ckpt < smin ? w->flushes_per_ckpt :
									   smin;
		if (!ok)
			*(single ? &single_ok : &sync_ok) = false;
	}
	if (!isnan(smax)) {
		a[n] = (struct accept){
			"single_flushes_per_checkpoint", "", smax, T_SINGLE_FLUSHES, LE, single_ok
		};
		snprintf(a[n++].what, sizeof(a[0].what),
			 "single, device flushes per checkpoint "
			 "(%.3f..%.3f)",
			 smin, smax);
	}
	if (!isnan(syncmax)) {
		a[n] = (struct accept){
			"sync_flushes_per_checkpoint", "", syncmax, sync_lim, LE, sync_ok
		};
		snprintf(a[n++].what, sizeof(a[0].what),
			 "sync, device flushes per checkpoint (max%s)",
			 sync_lim > T_SYNC_FLUSHES ? "; +1: no FUA" : "");
	}
	if (!isnan(agree)) {
		a[n] = (struct accept){ "device_flushes_vs_disk", "", agree, T_DISK_AGREE, LE,
					agree <= T_DISK_AGREE };
		snprintf(a[n++].what, sizeof(a[0].what),
			 "device flushes, delog / disk: max |ratio - 1|");
	}
	return n;
}

static bool accept_met(const struct accept *a)
{
	return a->cmp == GE ? a->value >= a->target : a->met;
}

static const char *cmp_str(enum cmp c)
{
	return c == GE ? ">=" : "<=";
}

static double median_open_s(const struct crun *r)
{
	double v[MAX_LIST * (NR_POLICIES + 2)];
	size_t n = 0;

	for (size_t i = 0; i < r->nrows && n < sizeof(v) / sizeof(v[0]); i++)
		if (r->rows[i].policy >= 0)
			v[n++] = r->rows[i].open_s;
	return bench_median(v, n);
}

static void print_human(struct crun *r)
{
	const struct commit_opts *o = r->o;
	struct bench *b = r->b;
	struct accept acc[MAX_ACCEPT];
	size_t nacc;
	char sz[32], sz2[32], fc[32], tc[32], ft[32], dt[32];

	bench_out(b, "delog bench --workload commit %s\n", r->sim ? "(sim)" : b->t.path);
	if (r->sim)
		bench_out(b, "  target      the in-memory disk (--backend sim); baselines skipped "
			     "(they need a file)\n");
	else
		bench_out_target(b, r->fs_type, b->o.backend);
	bench_out_disk(b, &r->disk);
	bench_out(b, "  log         %s, %u x %s buffers; ", fmt_bytes(o->log_size, sz, sizeof(sz)),
		  o->logbufs ? o->logbufs : DELOG_LOGBUFS_MAX,
		  fmt_bytes(o->logbsize ? o->logbsize : DELOG_LOGBSIZE_MAX, sz2, sizeof(sz2)));
	if (r->sim)
		bench_out(b, "created per point in %.1f ms (median)\n", median_open_s(r) * 1e3);
	else
		bench_out(b, "formatted once in %.3f s, reopened per point in %.1f ms (median)\n",
			  r->format_s, median_open_s(r) * 1e3);
	bench_out(b,
		  "  commit      %u x %u B items (%" PRIu64 " B payload), %s; %.2f s per point "
		  "after a %.2f s warm-up\n",
		  o->items, o->item_size, payload(o),
		  o->no_force ? "begin + log + commit, NOT forced (--no-force; one force after the "
				"window)" :
				"begin + log + commit_force",
		  o->time_s, fmax(o->time_s / 10, (double)BENCH_MIN_WARMUP_NS / 1e9));
	if (!r->sim && !o->no_baselines)
		bench_out(b,
			  "  baselines   raw-fdatasync: per client, O_DIRECT pwrite of %" PRIu64
			  " B + fdatasync; ideal-group: a leader writes all queued commits + "
			  "fdatasync\n",
			  raw_record(o));
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];

		if (!i || w->clients != r->rows[i - 1].clients)
			bench_out(b,
				  "\n  %u client%s\n  %-15s %10s %8s %9s %9s %9s %10s %8s %10s "
				  "%8s %7s\n",
				  w->clients, w->clients == 1 ? "" : "s", "system", "commits/s",
				  "MB/s", "p50 us", "p99 us", "max us", "flush/ckpt", "flush/tx",
				  "disk fl/tx", "tx/ckpt", "cpu us");
		if (w->has_stats) {
			snprintf(fc, sizeof(fc), "%.2f", w->flushes_per_ckpt);
			snprintf(ft, sizeof(ft), "%.3f", w->flushes_per_tx);
		} else {
			snprintf(fc, sizeof(fc), "-");
			snprintf(ft, sizeof(ft), "-");
		}
		if (isfinite(w->disk_per_commit))
			snprintf(dt, sizeof(dt), "%.3f", w->disk_per_commit);
		else
			snprintf(dt, sizeof(dt), "-");
		if (w->has_stats)
			snprintf(tc, sizeof(tc), "%.1f", w->txs_per_ckpt);
		else if (w->syncs)
			snprintf(tc, sizeof(tc), "%.1f", (double)w->commits / (double)w->syncs);
		else
			snprintf(tc, sizeof(tc), "-");
		bench_out(b, "  %-15s %10.0f %8.2f %9.1f %9.1f %9.1f %10s %8s %10s %8s %7.1f\n",
			  w->policy == DELOG_FLUSH_NONE ?
				  (w->loop ? "none/loop UNSAFE" : "none (UNSAFE)") :
				  w->name,
			  w->commits_per_s, w->mb_per_s, w->lat.median_us, w->lat.p99_us,
			  w->lat.max_us, fc, ft, dt, tc,
			  w->commits ? w->cpu_s * 1e6 / (double)w->commits : NAN);
		if (i + 1 == r->nrows || r->rows[i + 1].clients != w->clients) {
			const struct row *best = best_baseline(r, w->clients);
			bool first = true;

			for (size_t k = 0; best && k < r->nrows; k++) {
				const struct row *p = &r->rows[k];

				if (p->clients != w->clients || p->policy < 0)
					continue;
				if (first)
					bench_out(b, "  vs %s (the better baseline):", best->name);
				bench_out(b, "%s %s %.2fx", first ? "" : ",", p->name,
					  p->commits_per_s / best->commits_per_s);
				first = false;
			}
			if (!first)
				bench_out(b, "\n");
		}
	}
	if (o->loop)
		bench_out(b,
			  "\n  POLICY/loop: the same count as requests in flight from ONE event-loop "
			  "thread (delog_force_nowait, epoll on delog_durable_fd), no client threads; "
			  "latency from begin to the wake-up that saw it durable");
	bench_out(b,
		  "\n  MB/s: logged payload (10^6 B/s); cpu us: process CPU time (user + system, "
		  "all threads) per commit%s\n",
		  !r->sim && !o->no_baselines ? "; tx/ckpt of a baseline: commits per fdatasync" :
						"");
	bench_out(b,
		  "  flush/ckpt, flush/tx: device flushes delog counted (delog_stats: PREFLUSH "
		  "writes + standalone flushes + FUA writes on a disk without FUA) per checkpoint, "
		  "per commit; disk fl/tx: flush requests the disk completed per commit (an upper "
		  "bound: other processes' flushes count too)\n");
	nacc = acceptance(r, acc);
	if (nacc)
		bench_out(b, "\nacceptance (reported, not asserted)\n");
	for (size_t i = 0; i < nacc; i++) {
		const struct accept *a = &acc[i];

		bench_out(b, "  %-54s %6.2f  target %s %g: %s", a->what, a->value, cmp_str(a->cmp),
			  a->target, accept_met(a) ? "met" : "MISSED");
		if (!accept_met(a) && a->cmp == GE)
			bench_out(b, " by %.0f%%", (1 - a->value / a->target) * 100);
		bench_out(b, "\n");
	}
	bench_out(b, "\nbench took %.1f s\n", (double)(now_ns() - b->t0) / 1e9);
}

static void json_u64_or_null(struct json *j, const char *key, bool ok, uint64_t v)
{
	if (ok)
		json_u64(j, key, v);
	else
		json_null(j, key);
}

static void print_json(struct crun *r)
{
	const struct commit_opts *o = r->o;
	struct accept acc[MAX_ACCEPT];
	size_t nacc = acceptance(r, acc);
	struct json j;

	bench_json_begin(r->b, &j);
	json_str(&j, "fs_type", r->fs_type);
	bench_json_disk(&j, &r->disk);
	json_obj_begin(&j, "params");
	bench_json_counts(&j, "clients", o->clients, o->nclients);
	json_arr_begin(&j, "policies");
	for (unsigned i = 0; i < o->npolicy; i++)
		json_str(&j, NULL, delog_flush_policy_name(o->policy[i]));
	json_arr_end(&j);
	json_dbl(&j, "time_s", o->time_s);
	json_u64(&j, "item_size", o->item_size);
	json_u64(&j, "items", o->items);
	json_u64(&j, "payload_bytes", payload(o));
	json_u64(&j, "log_size", o->log_size);
	json_u64(&j, "logbufs", o->logbufs ? o->logbufs : DELOG_LOGBUFS_MAX);
	json_u64(&j, "logbsize", o->logbsize ? o->logbsize : DELOG_LOGBSIZE_MAX);
	json_bool(&j, "baselines", !r->sim && !o->no_baselines);
	json_u64_or_null(&j, "baseline_write_bytes", !r->sim && !o->no_baselines, raw_record(o));
	json_bool(&j, "force", !o->no_force);
	json_bool(&j, "loop", o->loop);
	json_obj_end(&j);
	if (r->sim)
		json_null(&j, "format_s");
	else
		json_dbl(&j, "format_s", r->format_s);
	json_dbl(&j, "reopen_s", median_open_s(r));
	json_arr_begin(&j, "rows");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];
		const struct row *best = w->policy >= 0 ? best_baseline(r, w->clients) : NULL;

		json_obj_begin(&j, NULL);
		json_str(&j, "workload", "commit");
		json_str(&j, "policy", w->name);
		json_bool(&j, "unsafe", w->policy == DELOG_FLUSH_NONE);
		json_u64(&j, "clients", w->clients);
		json_bool(&j, "loop", w->loop);
		json_u64(&j, "commits", w->commits);
		json_dbl(&j, "window_s", w->window_s);
		json_dbl(&j, "commits_per_s", w->commits_per_s);
		json_dbl(&j, "mb_per_s", w->mb_per_s);
		bench_json_lat(&j, &w->lat);
		json_dbl(&j, "flushes_per_checkpoint", w->has_stats ? w->flushes_per_ckpt : NAN);
		json_dbl(&j, "txs_per_checkpoint", w->has_stats ? w->txs_per_ckpt : NAN);
		json_u64_or_null(&j, "checkpoints", w->has_stats, w->checkpoints);
		json_u64_or_null(&j, "device_flushes", w->has_stats, w->device_flushes);
		json_u64_or_null(&j, "preflushes", w->has_stats, w->preflushes);
		json_u64_or_null(&j, "flushes", w->has_stats, w->flushes);
		json_u64_or_null(&j, "fua_writes", w->has_stats, w->fua_writes);
		json_u64_or_null(&j, "fua_flushes", w->has_stats, w->fua_flushes);
		json_u64_or_null(&j, "space_flushes", w->has_stats, w->space_flushes);
		if (w->has_stats)
			json_i64(&j, "device_fua", w->device_fua);
		else
			json_null(&j, "device_fua");
		json_dbl(&j, "device_flushes_per_commit", w->has_stats ? w->flushes_per_tx : NAN);
		json_dbl(&j, "copies_per_logged_byte", w->has_stats ? w->copies : NAN);
		json_dbl(&j, "disk_flushes", w->disk_flushes);
		json_dbl(&j, "disk_flushes_per_commit", w->disk_per_commit);
		json_u64_or_null(&j, "transactions", w->has_stats, w->transactions);
		json_u64_or_null(&j, "records", w->has_stats, w->records);
		json_u64_or_null(&j, "record_bytes", w->has_stats, w->record_bytes);
		json_u64_or_null(&j, "space_waits", w->has_stats, w->space_waits);
		json_u64_or_null(&j, "fdatasyncs", w->policy < 0, w->syncs);
		json_dbl(&j, "commits_per_fdatasync",
			 w->policy < 0 && w->syncs ? (double)w->commits / (double)w->syncs : NAN);
		json_dbl(&j, "cpu_s", w->cpu_s);
		json_dbl(&j, "cpu_us_per_commit",
			 w->commits ? w->cpu_s * 1e6 / (double)w->commits : NAN);
		json_dbl(&j, "open_s", w->policy >= 0 ? w->open_s : NAN);
		json_dbl(&j, "vs_best_baseline",
			 best ? w->commits_per_s / best->commits_per_s : NAN);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_begin(&j, "acceptance");
	for (size_t i = 0; i < nacc; i++) {
		json_obj_begin(&j, acc[i].name);
		json_dbl(&j, "value", acc[i].value);
		json_str(&j, "op", cmp_str(acc[i].cmp));
		json_dbl(&j, "target", acc[i].target);
		json_bool(&j, "met", accept_met(&acc[i]));
		json_obj_end(&j);
	}
	json_obj_end(&j);
	bench_json_end(r->b, &j);
}

/* The target file: allocate, pre-write the baselines' region, format the log once. */
static int prepare(struct crun *r)
{
	const struct commit_opts *o = r->o;
	struct delog_options lo = log_opts(r, DELOG_FLUSH_SYNC, DELOG_OPEN_FORMAT);

	return bench_log_prepare(r->b, DELOG_SB_BYTES + o->log_size + BASE_AREA, &r->fs_type,
				 DELOG_SB_BYTES + o->log_size, o->no_baselines ? 0 : BASE_AREA, &lo,
				 &r->format_s);
}

static int commit_run(struct bench *b, void *state)
{
	const struct commit_opts *o = state;
	struct crun r = { .b = b, .o = o, .fs_type = "sim" };
	unsigned k = 0, npoints;
	int err = 0;

	r.sim = bench_is_sim(b);
	npoints = o->nclients *
		  (o->npolicy * (o->loop ? 2 : 1) + (!r.sim && !o->no_baselines ? 2 : 0));
	r.rows = calloc((size_t)o->nclients * (2 * o->npolicy + 2), sizeof(*r.rows));
	if (!r.rows) {
		bench_fail(b, -ENOMEM, NULL, "out of memory");
		return TOOL_EXIT_FAIL;
	}
	if (!r.sim && prepare(&r))
		goto fail;
	bench_disk_target(b, &r.disk);
	bench_disk_idle(&r.disk, false, BENCH_IDLE_NS);
	if (o->nrates) {
		struct bench_ol_params op = {
			.rates = o->rates,
			.nrates = o->nrates,
			.policy = o->policy,
			.npolicy = o->npolicy,
			.time_s = o->time_s,
			.items = o->items,
			.item_size = o->item_size,
			.force = !o->no_force,
			.workers = o->workers ? o->workers :
						bench_max_clients(o->clients, o->nclients),
			.seed = o->seed,
			.logbufs = o->logbufs,
			.logbsize = o->logbsize,
			.log_size = o->log_size,
			.baseline = !r.sim && !o->no_baselines,
			.raw_base = DELOG_SB_BYTES + o->log_size,
			.raw_area = BASE_AREA,
			.raw_rec = raw_record(o),
			.fs_type = r.fs_type,
			.disk = &r.disk,
			.plot = o->plot,
		};

		free(r.rows);
		return bench_openloop_run(b, &op);
	}
	for (unsigned c = 0; c < o->nclients && !err; c++) {
		unsigned n = o->clients[c];

		if (!r.sim && !o->no_baselines) {
			static const struct {
				enum kind k;
				const char *name;
			} base[] = {
				{ K_RAW, "raw-fdatasync" },
				{ K_GROUP, "ideal-group" },
			};

			for (unsigned i = 0; i < 2 && !err; i++) {
				struct row *w = &r.rows[r.nrows];

				w->name = base[i].name;
				w->policy = -1;
				bench_point(b, "[%u/%u] %u clients: %s", ++k, npoints, n, w->name);
				if (!(err = baseline_point(&r, base[i].k, n, w)))
					r.nrows++;
				bench_point_done(b, err);
			}
		}
		for (unsigned p = 0; p < o->npolicy && !err; p++) {
			struct row *w = &r.rows[r.nrows];

			w->name = delog_flush_policy_name(o->policy[p]);
			w->policy = (int)o->policy[p];
			bench_point(b, "[%u/%u] %u clients: %s", ++k, npoints, n, w->name);
			if (!(err = delog_point(&r, o->policy[p], K_DELOG, n, w)))
				r.nrows++;
			bench_point_done(b, err);
		}
		for (unsigned p = 0; o->loop && p < o->npolicy && !err; p++) {
			static const char *const loop_name[] = {
				[DELOG_FLUSH_SYNC] = "sync/loop",
				[DELOG_FLUSH_ASYNC] = "async/loop",
				[DELOG_FLUSH_SINGLE] = "single/loop",
				[DELOG_FLUSH_NONE] = "none/loop",
			};
			struct row *w = &r.rows[r.nrows];

			w->name = loop_name[o->policy[p]];
			w->policy = (int)o->policy[p];
			w->loop = true;
			bench_point(b, "[%u/%u] %u in flight, one thread: %s", ++k, npoints, n,
				    w->name);
			if (!(err = delog_point(&r, o->policy[p], K_LOOP, n, w)))
				r.nrows++;
			bench_point_done(b, err);
		}
		if (!err && bench_interrupted(b))
			err = -EINTR;
	}
	if (!err)
		bench_disk_idle(&r.disk, true, BENCH_IDLE_NS);
	bench_progress_clear(b);
	if (err)
		goto fail;
	if (b->o.json)
		print_json(&r);
	else
		print_human(&r);
	free(r.rows);
	return TOOL_EXIT_OK;
fail:
	free(r.rows);
	return TOOL_EXIT_FAIL;
}

const struct bench_workload bench_commit = {
	.name = "commit",
	.summary = "durable commits/s and latency per policy and client count, next to raw "
		   "fdatasync and ideal group commit",
	.opts = commit_options,
	.state_size = sizeof(struct commit_opts),
	.defaults = commit_defaults,
	.option = commit_option,
	.check = commit_check,
	.help = commit_help,
	.run = commit_run,
};
