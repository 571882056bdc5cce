/*
 * bench_commit.c - `delog bench --workload commit`: durable commits per second and their
 * latency, per flush policy and client count, next to two raw baselines measured in the
 * same run on the same file.
 *
 * A durable commit is what an application that uses delog as its WAL pays per
 * transaction: delog_tx_begin, --items delog_tx_log calls of --item-size bytes (default
 * 4 x 128 B), delog_tx_commit_force.  Its latency runs from begin to the force's return.
 *
 * The baselines, on the same file, in a region of BASE_AREA bytes after the log (so they
 * never touch it), written with zeroes first so no write meets an unwritten extent, with
 * plain syscalls:
 *   raw-fdatasync  every client thread writes its commit as one 4 KiB O_DIRECT pwrite at
 *                  its own offsets and calls fdatasync: the kernel merges concurrent
 *                  flushes, so this is strong at high client counts;
 *   ideal-group    clients queue their commit; whoever finds no leader becomes leader,
 *                  writes everything queued as one O_DIRECT write, fdatasyncs and wakes
 *                  those it covered: group commit with no log format and no CPU work.
 *
 * How a point is measured: the clients start together (barrier), run --time seconds
 * plus a warm-up of a tenth of it; only commits that complete inside the measured
 * window count, and delog_stats is read at both ends of it, so flushes per checkpoint
 * and transactions per checkpoint are those of the steady state.  Every client count
 * runs raw, group, then each policy, so drift in the device affects all alike.  The log
 * is formatted once and reopened for every point (recovery of a clean log is quick); the
 * measuring thread calls delog_release every few milliseconds so the log never fills.
 * `--backend sim` runs on the in-memory disk (no baselines); with --no-force the clients
 * only commit (one force at the end), which measures the CPU path alone.
 */
#include "bench.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format.h"

#define MAX_CLIENTS 1024u
#define MAX_LIST 16u
#define RAW_BLOCK 4096u
#define BASE_AREA (64ull << 20)   /* baselines' region, after the log */

enum {
	OPT_CLIENTS = BENCH_OPT_WORKLOAD + 100,
	OPT_POLICY,
	OPT_TIME,
	OPT_ITEM_SIZE,
	OPT_ITEMS,
	OPT_LOG_SIZE,
	OPT_LOGBUFS,
	OPT_LOGBSIZE,
	OPT_NO_BASELINES,
	OPT_NO_FORCE,
};

static const struct option commit_options[] = {
	{ "clients", required_argument, NULL, OPT_CLIENTS },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "item-size", required_argument, NULL, OPT_ITEM_SIZE },
	{ "items", required_argument, NULL, OPT_ITEMS },
	{ "log-size", required_argument, NULL, OPT_LOG_SIZE },
	{ "logbufs", required_argument, NULL, OPT_LOGBUFS },
	{ "logbsize", required_argument, NULL, OPT_LOGBSIZE },
	{ "no-baselines", no_argument, NULL, OPT_NO_BASELINES },
	{ "no-force", no_argument, NULL, OPT_NO_FORCE },
	{ NULL, 0, NULL, 0 },
};

struct commit_opts {
	unsigned clients[MAX_LIST], nclients;
	enum delog_flush_policy policy[4];
	unsigned npolicy;
	double time_s;
	uint32_t item_size, items;
	uint64_t log_size;
	unsigned logbufs;
	uint32_t logbsize;
	bool no_baselines, no_force;
};

static void commit_defaults(void *state)
{
	struct commit_opts *o = state;
	static const unsigned cl[] = { 1, 4, 16, 64, 256 };

	memcpy(o->clients, cl, sizeof(cl));
	o->nclients = 5;
	o->policy[0] = DELOG_FLUSH_SYNC;
	o->policy[1] = DELOG_FLUSH_ASYNC;
	o->policy[2] = DELOG_FLUSH_SINGLE;
	o->npolicy = 3;
	o->time_s = 3;
	o->item_size = 128;
	o->items = 4;
	o->log_size = 256ull << 20;
}

static int commit_option(void *state, int opt, const char *arg)
{
	struct commit_opts *o = state;
	char buf[256], *save, *tok;
	uint64_t v;

	switch (opt) {
	case OPT_CLIENTS:
	case OPT_POLICY:
		if (strlen(arg) >= sizeof(buf))
			return bench_usage_error("list too long: '%s'", arg);
		strcpy(buf, arg);
		if (opt == OPT_CLIENTS)
			o->nclients = 0;
		else
			o->npolicy = 0;
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (opt == OPT_CLIENTS) {
				if (o->nclients == MAX_LIST || parse_count(tok, 1, MAX_CLIENTS, &v))
					return bench_usage_error("--clients: '%s' is not a list of up to "
								 "%u counts from 1 to %u", arg,
								 MAX_LIST, MAX_CLIENTS);
				o->clients[o->nclients++] = (unsigned)v;
			} else {
				enum delog_flush_policy p;

				if (o->npolicy == 4 || delog_flush_policy_parse(tok, &p))
					return bench_usage_error("--policy: '%s': policies are sync, "
								 "async, single, none", arg);
				o->policy[o->npolicy++] = p;
			}
		}
		if ((opt == OPT_CLIENTS && !o->nclients) || (opt == OPT_POLICY && !o->npolicy))
			return bench_usage_error("empty list '%s'", arg);
		return 0;
	case OPT_TIME: {
		char *end;
		double t = strtod(arg, &end);

		if (end == arg || *end || !(t >= 0.05 && t <= 3600))
			return bench_usage_error("--time: '%s' is not a duration from 0.05 to 3600 s",
						 arg);
		o->time_s = t;
		return 0;
	}
	case OPT_ITEM_SIZE:
		if (parse_size(arg, &v) || v < 1 || v > (1u << 20))
			return bench_usage_error("--item-size: '%s' is not a size from 1 to 1M", arg);
		o->item_size = (uint32_t)v;
		return 0;
	case OPT_ITEMS:
		if (parse_count(arg, 1, 1024, &v))
			return bench_usage_error("--items: '%s' is not a count from 1 to 1024", arg);
		o->items = (uint32_t)v;
		return 0;
	case OPT_LOG_SIZE:
		if (parse_size(arg, &v) || v < (16ull << 20) || v % 4096)
			return bench_usage_error("--log-size: '%s' is not a multiple of 4K of at "
						 "least 16M", arg);
		o->log_size = v;
		return 0;
	case OPT_LOGBUFS:
		if (parse_count(arg, 2, 8, &v))
			return bench_usage_error("--logbufs: '%s' is not a count from 2 to 8", arg);
		o->logbufs = (unsigned)v;
		return 0;
	case OPT_LOGBSIZE:
		if (parse_size(arg, &v) || v < (16u << 10) || v > (256u << 10) || (v & (v - 1)))
			return bench_usage_error("--logbsize: '%s' is not a power of two from 16K to "
						 "256K", arg);
		o->logbsize = (uint32_t)v;
		return 0;
	case OPT_NO_BASELINES:
		o->no_baselines = true;
		return 0;
	case OPT_NO_FORCE:
		o->no_force = true;
		return 0;
	}
	return bench_usage_error("unknown option");
}

static int commit_check(struct bench *b, void *state)
{
	struct commit_opts *o = state;

	if ((uint64_t)o->items * o->item_size > RAW_BLOCK && !o->no_baselines &&
	    !(b->o.backend && !strcmp(b->o.backend, "sim")))
		return bench_usage_error("a commit of %u x %u bytes does not fit the baselines' "
					 "4 KiB write; use --no-baselines", o->items, o->item_size);
	if ((uint64_t)o->items * (o->item_size + DELOG_ITEM_OVERHEAD) > o->log_size / 64)
		return bench_usage_error("transactions too large for a %" PRIu64 "-byte log",
					 o->log_size);
	return 0;
}

static void commit_help(FILE *f)
{
	fprintf(f,
		"      --clients LIST     client threads per point (default 1,4,16,64,256)\n"
		"      --policy LIST      flush policies: sync, async, single, none (UNSAFE)\n"
		"                         (default sync,async,single)\n"
		"      --time S           measured seconds per point, after a warm-up of S/10\n"
		"                         (default 3)\n"
		"      --item-size N      bytes per item (default 128)\n"
		"      --items N          items per transaction (default 4)\n"
		"      --log-size N       log size (default 256M)\n"
		"      --logbufs N        log buffers, 2..8 (default 8)\n"
		"      --logbsize N       log buffer size, 16K..256K (default 256K)\n"
		"      --no-baselines     skip raw-fdatasync and ideal-group\n"
		"      --no-force         commit without forcing (one force at the end): the CPU\n"
		"                         path alone (with --backend sim --policy none)\n"
		"\nA commit is delog_tx_begin, --items delog_tx_log, delog_tx_commit_force; its\n"
		"latency runs from begin to the force's return.  Baselines on the same file:\n"
		"raw-fdatasync (each client: 4 KiB O_DIRECT pwrite + fdatasync per commit) and\n"
		"ideal-group (a leader writes all queued commits at once and fdatasyncs).\n");
}

/* ---- one point ---- */

struct samples {
	uint64_t *v;
	size_t n, cap;
};

static void sample_add(struct samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		uint64_t *p = realloc(s->v, cap * sizeof(*p));

		if (!p)
			return; /* keep the samples so far; counts stay exact */
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = ns;
}

enum kind { K_DELOG, K_RAW, K_GROUP };

struct point;

struct client {
	struct point *pt;
	unsigned id;
	pthread_t th;
	uint64_t commits;         /* completed inside the window */
	struct samples lat;
	unsigned char *buf;       /* raw: O_DIRECT buffer */
	uint64_t next;            /* raw: next block in its region */
	int err;
};

struct point {
	struct bench *b;
	const struct commit_opts *o;
	enum kind kind;
	delog *log;
	int fd;                   /* baselines */
	uint64_t base;            /* baselines: start of their region */
	uint64_t region;          /* raw: bytes per client */
	unsigned nclients;
	pthread_barrier_t bar;
	_Atomic uint64_t win_start, win_end; /* measured window, now_ns; 0 until known */
	atomic_bool stop;
	/* ideal group commit */
	pthread_mutex_t glock;
	pthread_cond_t gcond;
	uint64_t submitted, completed, goff;
	bool leader;
	unsigned char *gbuf;
	size_t gbuf_len;
	int gerr;
};

struct row {
	const char *name;
	unsigned clients;
	double commits_per_s, mb_per_s;
	struct lat_stats lat;
	bool has_stats;
	uint64_t checkpoints, device_flushes, fua_writes, transactions;
	double flushes_per_ckpt, txs_per_ckpt;
	int err;
};

static uint64_t payload(const struct commit_opts *o)
{
	return (uint64_t)o->items * o->item_size;
}

static int do_delog(struct client *c, uint64_t n)
{
	const struct commit_opts *o = c->pt->o;
	unsigned char item[1u << 12];
	uint32_t len = o->item_size;
	delog_tx *tx;
	uint64_t seq;
	int err;

	err = delog_tx_begin(c->pt->log, (uint64_t)o->items * (len + DELOG_ITEM_OVERHEAD), 0, &tx);
	if (err)
		return err;
	memset(item, (int)(n & 0xff), len < sizeof(item) ? len : sizeof(item));
	for (uint32_t k = 0; k < o->items && !err; k++) {
		static unsigned char big[1u << 20];
		const void *d = len <= sizeof(item) ? (const void *)item : (const void *)big;

		err = delog_tx_log(tx, (uint64_t)c->id << 40 | (n & 0xffffffffull) << 4 | k, d, len);
	}
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	return o->no_force ? delog_tx_commit(tx, &seq) : delog_tx_commit_force(tx, &seq);
}

static int do_raw(struct client *c)
{
	struct point *pt = c->pt;
	uint64_t off = pt->base + c->id * pt->region + (c->next++ * RAW_BLOCK) % pt->region;

	if (pwrite(pt->fd, c->buf, RAW_BLOCK, (off_t)off) != RAW_BLOCK)
		return -errno ? -errno : -EIO;
	return fdatasync(pt->fd) ? -errno : 0;
}

static int do_group(struct client *c)
{
	struct point *pt = c->pt;
	uint64_t mine;
	int err = 0;

	pthread_mutex_lock(&pt->glock);
	mine = ++pt->submitted;
	while (pt->completed < mine && !pt->gerr) {
		if (!pt->leader) {
			uint64_t end = pt->submitted, n = end - pt->completed;
			size_t len = (size_t)((n * payload(pt->o) + RAW_BLOCK - 1) / RAW_BLOCK * RAW_BLOCK);
			uint64_t span = BASE_AREA - pt->gbuf_len;
			uint64_t off;

			if (len > pt->gbuf_len)
				len = pt->gbuf_len;
			pt->leader = true;
			if (pt->goff + len > span)
				pt->goff = 0;
			off = pt->base + pt->goff;
			pt->goff += len;
			pthread_mutex_unlock(&pt->glock);
			if (pwrite(pt->fd, pt->gbuf, len, (off_t)off) != (ssize_t)len ||
			    fdatasync(pt->fd))
				err = errno ? -errno : -EIO;
			pthread_mutex_lock(&pt->glock);
			pt->leader = false;
			if (err)
				pt->gerr = err;
			pt->completed = end;
			pthread_cond_broadcast(&pt->gcond);
		} else {
			pthread_cond_wait(&pt->gcond, &pt->glock);
		}
	}
	err = pt->gerr;
	pthread_mutex_unlock(&pt->glock);
	return err;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct point *pt = c->pt;
	uint64_t n = 0;

	pthread_barrier_wait(&pt->bar);
	while (!atomic_load_explicit(&pt->stop, memory_order_relaxed)) {
		uint64_t t0 = now_ns(), t1, ws, we;
		int err = pt->kind == K_DELOG ? do_delog(c, n) :
			  pt->kind == K_RAW ? do_raw(c) : do_group(c);

		t1 = now_ns();
		n++;
		if (err) {
			c->err = err;
			break;
		}
		ws = atomic_load(&pt->win_start);
		we = atomic_load(&pt->win_end);
		if (ws && t0 >= ws && (!we || t1 <= we)) {
			c->commits++;
			sample_add(&c->lat, t1 - t0);
		}
	}
	/* A group-commit follower must not be left waiting for a leader that stopped. */
	if (pt->kind == K_GROUP) {
		pthread_mutex_lock(&pt->glock);
		pthread_cond_broadcast(&pt->gcond);
		pthread_mutex_unlock(&pt->glock);
	}
	return NULL;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* Wait @ns, releasing the log every 5 ms (delog points). */
static void wait_releasing(struct point *pt, uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end && !bench_interrupted(pt->b)) {
		if (pt->log) {
			uint64_t d = delog_durable_seq(pt->log);

			if (d)
				delog_release(pt->log, d);
		}
		sleep_ns(5000000);
	}
}

static int run_point(struct point *pt, struct row *row)
{
	struct client *cl;
	struct delog_stats s0 = { .size = sizeof(s0) }, s1 = { .size = sizeof(s1) };
	uint64_t t_meas = (uint64_t)(pt->o->time_s * 1e9), ws, we, total = 0;
	size_t nsamp = 0;
	uint64_t *all;
	int err = 0;

	cl = calloc(pt->nclients, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	pthread_barrier_init(&pt->bar, NULL, pt->nclients + 1);
	atomic_store(&pt->stop, false);
	atomic_store(&pt->win_start, 0);
	atomic_store(&pt->win_end, 0);
	for (unsigned i = 0; i < pt->nclients; i++) {
		cl[i].pt = pt;
		cl[i].id = i;
		if (pt->kind == K_RAW) {
			if (posix_memalign((void **)&cl[i].buf, 4096, RAW_BLOCK)) {
				err = -ENOMEM;
				break;
			}
			memset(cl[i].buf, (int)i, RAW_BLOCK);
		}
	}
	for (unsigned i = 0; !err && i < pt->nclients; i++) {
		if (pthread_create(&cl[i].th, NULL, client_main, &cl[i])) {
			/* Cannot start them all: nobody passes the barrier; give up. */
			fprintf(stderr, "delog bench: cannot start %u client threads\n", pt->nclients);
			exit(TOOL_EXIT_FAIL);
		}
	}
	if (err) {
		free(cl);
		return err;
	}
	pthread_barrier_wait(&pt->bar);
	wait_releasing(pt, t_meas / 10 > 20000000 ? t_meas / 10 : 20000000);
	if (pt->log)
		delog_stats(pt->log, &s0);
	ws = now_ns();
	atomic_store(&pt->win_start, ws);
	wait_releasing(pt, t_meas);
	we = now_ns();
	atomic_store(&pt->win_end, we);
	if (pt->log)
		delog_stats(pt->log, &s1);
	atomic_store(&pt->stop, true);
	for (unsigned i = 0; i < pt->nclients; i++) {
		pthread_join(cl[i].th, NULL);
		total += cl[i].commits;
		nsamp += cl[i].lat.n;
		if (cl[i].err && !err)
			err = cl[i].err;
	}
	if (pt->log && pt->o->no_force && !err)
		err = delog_force(pt->log, 0);
	all = malloc((nsamp ? nsamp : 1) * sizeof(*all));
	nsamp = 0;
	for (unsigned i = 0; i < pt->nclients; i++) {
		if (all)
			memcpy(all + nsamp, cl[i].lat.v, cl[i].lat.n * sizeof(*all));
		nsamp += cl[i].lat.n;
		free(cl[i].lat.v);
		free(cl[i].buf);
	}
	pthread_barrier_destroy(&pt->bar);
	free(cl);
	row->clients = pt->nclients;
	row->err = err;
	row->commits_per_s = (double)total / ((double)(we - ws) / 1e9);
	row->mb_per_s = row->commits_per_s * (double)payload(pt->o) / 1e6;
	if (all)
		lat_stats_compute(all, nsamp, &row->lat);
	free(all);
	if (pt->log) {
		row->has_stats = true;
		row->checkpoints = s1.checkpoints - s0.checkpoints;
		row->device_flushes = s1.device_flushes - s0.device_flushes;
		row->fua_writes = s1.fua_writes - s0.fua_writes;
		row->transactions = s1.transactions - s0.transactions;
		row->flushes_per_ckpt = row->checkpoints ?
			(double)row->device_flushes / (double)row->checkpoints : NAN;
		row->txs_per_ckpt = row->checkpoints ?
			(double)row->transactions / (double)row->checkpoints : NAN;
	}
	return err;
}

/* ---- the run ---- */

struct crun {
	struct bench *b;
	const struct commit_opts *o;
	bool sim;
	struct row *rows;
	size_t nrows;
};

static struct delog_options log_opts(const struct crun *r, enum delog_flush_policy p, unsigned flags)
{
	struct delog_options lo = {
		.size = sizeof(lo), .backend = r->b->o.backend, .flush = p, .flags = flags,
		.logbufs = r->o->logbufs, .logbsize = r->o->logbsize, .create_size = r->o->log_size,
	};

	return lo;
}

static int delog_point(struct crun *r, enum delog_flush_policy p, unsigned clients, struct row *row)
{
	struct delog_options lo = log_opts(r, p, r->sim ? DELOG_OPEN_CREATE : 0);
	struct point pt = { .b = r->b, .o = r->o, .kind = K_DELOG, .nclients = clients, .fd = -1 };
	int err, e2;

	err = delog_open(r->sim ? NULL : r->b->t.path, &lo, &pt.log);
	if (err) {
		bench_fail(r->b, err, r->b->t.path, "cannot open the log: %s", tool_strerror(err));
		return err;
	}
	err = run_point(&pt, row);
	e2 = delog_close(pt.log);
	if (err)
		bench_fail(r->b, err, NULL, "%s at %u clients: %s", delog_flush_policy_name(p),
			   clients, tool_strerror(err));
	else if (e2)
		bench_fail(r->b, err = e2, NULL, "close: %s", tool_strerror(e2));
	return err;
}

static int baseline_point(struct crun *r, enum kind k, unsigned clients, struct row *row)
{
	struct point pt = { .b = r->b, .o = r->o, .kind = k, .nclients = clients };
	int err;

	pt.fd = open(r->b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (pt.fd < 0) {
		err = -errno;
		bench_fail(r->b, err, r->b->t.path, "cannot open with O_DIRECT: %s", strerror(-err));
		return err;
	}
	pt.base = JRNL_SB_AREA + r->o->log_size;
	pt.region = BASE_AREA / clients / RAW_BLOCK * RAW_BLOCK;
	if (pt.region < RAW_BLOCK)
		pt.region = RAW_BLOCK;
	pthread_mutex_init(&pt.glock, NULL);
	pthread_cond_init(&pt.gcond, NULL);
	pt.gbuf_len = (size_t)((clients * payload(r->o) + RAW_BLOCK - 1) / RAW_BLOCK * RAW_BLOCK);
	err = posix_memalign((void **)&pt.gbuf, 4096, pt.gbuf_len) ? -ENOMEM : 0;
	if (!err) {
		memset(pt.gbuf, 0x5a, pt.gbuf_len);
		err = run_point(&pt, row);
	}
	free(pt.gbuf);
	pthread_cond_destroy(&pt.gcond);
	pthread_mutex_destroy(&pt.glock);
	close(pt.fd);
	if (err)
		bench_fail(r->b, err, NULL, "%s at %u clients: %s", row->name, clients, strerror(-err));
	return err;
}

static void print_rows(struct crun *r)
{
	const struct row *best_raw = NULL;
	const struct row *single1 = NULL, *single64 = NULL, *single256 = NULL;

	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];

		if (!i || w->clients != r->rows[i - 1].clients) {
			bench_out(r->b, "\nclients %u\n  %-16s %11s %8s %9s %9s %9s %11s %9s\n", w->clients,
				  "system", "commits/s", "MB/s", "p50 us", "p99 us", "max us",
				  "flush/ckpt", "tx/ckpt");
			best_raw = NULL;
		}
		if (w->has_stats)
			bench_out(r->b, "  %-16s %11.0f %8.2f %9.1f %9.1f %9.1f %11.2f %9.1f\n",
				  w->name, w->commits_per_s, w->mb_per_s, w->lat.median_us,
				  w->lat.p99_us, w->lat.max_us, w->flushes_per_ckpt, w->txs_per_ckpt);
		else
			bench_out(r->b, "  %-16s %11.0f %8.2f %9.1f %9.1f %9.1f %11s %9s\n", w->name,
				  w->commits_per_s, w->mb_per_s, w->lat.median_us, w->lat.p99_us,
				  w->lat.max_us, "-", "-");
		if (!w->has_stats && (!best_raw || w->commits_per_s > best_raw->commits_per_s))
			best_raw = w;
		if (w->has_stats && best_raw)
			bench_out(r->b, "  %-16s %.2fx the better baseline (%s)\n", "", w->commits_per_s /
				  best_raw->commits_per_s, best_raw->name);
		if (!strcmp(w->name, "single")) {
			if (w->clients == 1)
				single1 = w;
			if (w->clients == 64)
				single64 = w;
			if (w->clients == 256)
				single256 = w;
		}
	}
	if (single1 && single64)
		bench_out(r->b, "\nsingle: 64 clients = %.1fx 1 client (target >= 10)\n",
			  single64->commits_per_s / single1->commits_per_s);
	if (single64 && single256)
		bench_out(r->b, "single: 256 clients = %.2fx 64 clients (target >= 1)\n",
			  single256->commits_per_s / single64->commits_per_s);
}

static void print_json(struct crun *r)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	bench_json_head(r->b, &j);
	json_obj_begin(&j, "params");
	json_u64(&j, "item_size", r->o->item_size);
	json_u64(&j, "items", r->o->items);
	json_dbl(&j, "time_s", r->o->time_s);
	json_u64(&j, "log_size", r->o->log_size);
	json_bool(&j, "force", !r->o->no_force);
	json_obj_end(&j);
	json_arr_begin(&j, "rows");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "workload", "commit");
		json_str(&j, "policy", w->name);
		json_u64(&j, "clients", w->clients);
		json_dbl(&j, "commits_per_s", w->commits_per_s);
		json_dbl(&j, "mb_per_s", w->mb_per_s);
		json_dbl(&j, "lat_p50_us", w->lat.median_us);
		json_dbl(&j, "lat_p99_us", w->lat.p99_us);
		json_dbl(&j, "lat_max_us", w->lat.max_us);
		if (w->has_stats) {
			json_dbl(&j, "flushes_per_checkpoint", w->flushes_per_ckpt);
			json_dbl(&j, "txs_per_checkpoint", w->txs_per_ckpt);
			json_u64(&j, "checkpoints", w->checkpoints);
			json_u64(&j, "device_flushes", w->device_flushes);
			json_u64(&j, "fua_writes", w->fua_writes);
		} else {
			json_null(&j, "flushes_per_checkpoint");
			json_null(&j, "txs_per_checkpoint");
			json_null(&j, "checkpoints");
			json_null(&j, "device_flushes");
			json_null(&j, "fua_writes");
		}
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
	r->b->json_done = true;
}

/* Write zeroes over the baselines' region, so their writes meet allocated blocks. */
static int prewrite(struct bench *b, uint64_t off, uint64_t len)
{
	const size_t chunk = 4u << 20;
	void *buf = NULL;
	int fd, err = 0;

	fd = open(b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0 || posix_memalign(&buf, 4096, chunk)) {
		err = fd < 0 ? -errno : -ENOMEM;
	} else {
		memset(buf, 0, chunk);
		for (uint64_t o = 0; o < len && !err; o += chunk)
			if (pwrite(fd, buf, chunk, (off_t)(off + o)) != (ssize_t)chunk)
				err = -errno ? -errno : -EIO;
		if (!err && fdatasync(fd))
			err = -errno;
	}
	if (err)
		bench_fail(b, err, b->t.path, "cannot pre-write the baseline region: %s",
			   strerror(-err));
	free(buf);
	if (fd >= 0)
		close(fd);
	return err;
}

static int commit_run(struct bench *b, void *state)
{
	const struct commit_opts *o = state;
	struct crun r = { .b = b, .o = o };
	size_t max = (size_t)o->nclients * (o->npolicy + 2);
	int err = 0;

	r.sim = b->o.backend && !strcmp(b->o.backend, "sim");
	r.rows = calloc(max, sizeof(*r.rows));
	if (!r.rows) {
		bench_fail(b, -ENOMEM, NULL, "out of memory");
		return TOOL_EXIT_FAIL;
	}
	if (!r.sim) {
		struct delog_options lo = log_opts(&r, DELOG_FLUSH_SYNC, DELOG_OPEN_FORMAT);
		delog *log;

		if (bench_target_open(b, JRNL_SB_AREA + o->log_size + BASE_AREA))
			goto fail;
		if (!o->no_baselines && prewrite(b, JRNL_SB_AREA + o->log_size, BASE_AREA))
			goto fail;
		bench_progress(b, "formatting %s", b->t.path);
		err = delog_open(b->t.path, &lo, &log);
		if (!err)
			err = delog_close(log);
		if (err) {
			bench_fail(b, err, b->t.path, "cannot format: %s", tool_strerror(err));
			goto fail;
		}
	}
	bench_out(b, "delog bench --workload commit: %u x %u B per transaction, %s, %.1f s per point\n",
		  o->items, o->item_size, o->no_force ? "commit only (one force at the end)" :
		  "commit + force", o->time_s);
	if (o->no_force)
		bench_out(b, "  (--no-force: not durable commits; the CPU path only)\n");
	for (unsigned c = 0; c < o->nclients && !err; c++) {
		unsigned n = o->clients[c];

		if (!r.sim && !o->no_baselines) {
			struct row *w = &r.rows[r.nrows];

			w->name = "raw-fdatasync";
			bench_progress(b, "%u clients: raw-fdatasync", n);
			if ((err = baseline_point(&r, K_RAW, n, w)))
				break;
			r.nrows++;
			w = &r.rows[r.nrows];
			w->name = "ideal-group";
			bench_progress(b, "%u clients: ideal-group", n);
			if ((err = baseline_point(&r, K_GROUP, n, w)))
				break;
			r.nrows++;
		}
		for (unsigned p = 0; p < o->npolicy && !err; p++) {
			struct row *w = &r.rows[r.nrows];

			w->name = o->policy[p] == DELOG_FLUSH_NONE ? "none (UNSAFE)" :
				  delog_flush_policy_name(o->policy[p]);
			bench_progress(b, "%u clients: %s", n, w->name);
			if ((err = delog_point(&r, o->policy[p], n, w)))
				break;
			r.nrows++;
		}
		if (bench_interrupted(b))
			err = -EINTR;
	}
	bench_progress_clear(b);
	if (err)
		goto fail;
	if (b->o.json)
		print_json(&r);
	else
		print_rows(&r);
	free(r.rows);
	return TOOL_EXIT_OK;
fail:
	free(r.rows);
	return TOOL_EXIT_FAIL;
}

const struct bench_workload bench_commit = {
	.name = "commit",
	.summary = "durable commits/s and latency per policy and client count, with raw baselines",
	.opts = commit_options,
	.state_size = sizeof(struct commit_opts),
	.defaults = commit_defaults,
	.option = commit_option,
	.check = commit_check,
	.help = commit_help,
	.run = commit_run,
};
