/*
 * stress.c - many threads committing, relogging, aborting and forcing at once on one
 * log; afterwards recovery must show every commit exactly once, in the checkpoint its
 * commit returned, per thread in order, and nothing else.  Exit 0 pass, 1 fail, 2 usage.
 *
 *   engine_stress [-t THREADS] [-n TXS] [-p sync|async|single|none] [-s SEED]
 *                 [-l none|nvme|sata] [-d DIR] [-r | -R] [-q]
 *
 * Defaults: 8 threads x 20000 transactions, sync, on a simulated disk (latency none);
 * -d DIR runs on a real file in DIR (O_DIRECT: not tmpfs) with the psync backend
 * instead (engine_stress.PID.img, created and removed).  A releaser thread runs
 * alongside the committers: by default it calls delog_release every 2 ms for all but
 * the newest 256 durable checkpoints, so the tail moves while checkpoints are written
 * (and recovery checks the unreleased suffix); -R turns releasing off (recovery must
 * then see every commit).  -r runs on a small log (8 MiB) whose push callback hands its
 * target to the releaser, which "writes back" (20 ms) and calls delog_release:
 * committers then block for space and are woken by the tail moving, all concurrently.
 *
 * Each transaction of thread t, number i, logs
 *   - a unique item (t, i),
 *   - t's counter item (relogged by every transaction of t: one copy per checkpoint,
 *     holding the newest i of t in that checkpoint),
 *   - one of 8 shared items, picked at random (relogged across threads: one copy per
 *     checkpoint, holding a transaction of that checkpoint that logged it);
 * one in 50 transactions is aborted instead (its items must never appear), one in 32
 * commits is followed by a force of its sequence (or of everything), half of them
 * delog_force_nowait and a wait for the watermark.  Meanwhile an
 * observer thread reads delog_stats, delog_durable_seq (must never go back) and drains
 * the durable eventfd, so those paths race with the writers too.
 *
 * Checks after the run: (1) a power-cut image taken after a final force recovers
 * everything (sim only); (2) after a clean close and reopen, recovery hands back
 * consecutive checkpoints, every item whole, every commit exactly once in its
 * checkpoint, per thread non-decreasing checkpoints and, within one, its transactions in
 * its order (the replay order, engine/cil.c CIL6), the counter and shared-item rules
 * above, no aborted item.  With releases "everything" is every checkpoint from the first
 * one recovered on, and that first one is at most one past the highest released.  And
 * at the end, before the final force: delog_durable_seq covers the highest sequence
 * any force acknowledged; after it, the highest committed; delog_close returns 0.
 *
 * Why it is a plain program, not Criterion: Criterion's runner aborts under
 * ThreadSanitizer, and this is the test CI runs under TSan (.ci/run) to find data races
 * in the engine; TSAN_OPTIONS=halt_on_error=1 turns any report into a failure.
 */
#include <delog.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "io.h"
#include "io_sim.h"

#define SHARED 8u
#define K_UNIQUE(t, i) (((uint64_t)(t) << 32) | (uint64_t)(i))
#define K_COUNTER(t) ((1ull << 63) | (uint64_t)(t))
#define K_SHARED(j) ((1ull << 62) | (uint64_t)(j))
#define K_ABORT(t, i) ((1ull << 61) | K_UNIQUE(t, i))

static int fails;
static bool quiet;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			if (fails++ < 20) {                                                        \
				fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
				fprintf(stderr, __VA_ARGS__);                                      \
				fputc('\n', stderr);                                               \
			}                                                                          \
		}                                                                                  \
	} while (0)

struct payload {
	uint64_t a, b, c;
};

static uint64_t mix(uint64_t key, uint64_t a, uint64_t b)
{
	uint64_t z = key ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^ 0x5a5a;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct run {
	delog *log;
	unsigned threads, txs;
	uint64_t seed;
	uint64_t *seq;   /* [t * txs + i]: checkpoint, 0 = aborted */
	uint8_t *shared; /* [t * txs + i]: which shared item it logged */
	atomic_int err;
	atomic_bool stop;
	atomic_uint observer_bad;
	_Atomic uint64_t released; /* -r: highest sequence released */
	_Atomic uint64_t want;     /* -r: highest push target */
	atomic_bool stop_releaser;
	atomic_uint push_calls;
	bool periodic_release;       /* default mode: release all but the newest KEEP */
	_Atomic uint64_t max_forced; /* highest sequence a force acknowledged */
	atomic_uint releases;
};

#define KEEP 256u

static void atomic_max(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load(a);

	while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

struct warg {
	struct run *r;
	unsigned t;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int log_item(delog_tx *tx, uint64_t key, uint64_t a, uint64_t b)
{
	struct payload p = { a, b, mix(key, a, b) };

	return delog_tx_log(tx, key, &p, sizeof(p));
}

/*
 * A force of @seq (0: everything committed so far) that the caller's own commit @want
 * needs, blocking or (@nowait) as an event loop makes it: delog_force_nowait, then a
 * wait for the watermark to reach @want (polling: the observer drains the eventfd, so a
 * wake-up may be taken by it; 1 ms at most between looks).  0 or the error.  The wait
 * is for @want, not for the open sequence: force(0) covers the open checkpoint only if
 * it holds something, and one that is empty when asked may fill later without a force.
 */
static int force_one(delog *log, uint64_t seq, uint64_t want, bool nowait)
{
	struct pollfd pfd = { .fd = delog_durable_fd(log), .events = POLLIN };
	int err;

	if (!nowait)
		return delog_force(log, seq);
	err = delog_force_nowait(log, seq);
	while (err >= 0 && delog_durable_seq(log) < want && !delog_error(log))
		(void)poll(&pfd, 1, 1);
	if (err < 0)
		return err;
	return delog_durable_seq(log) >= want ? 0 : DELOG_ESHUTDOWN;
}

static void *worker(void *arg)
{
	struct warg *wa = arg;
	struct run *r = wa->r;
	uint64_t s = r->seed * 7919 + wa->t + 1;
	const uint64_t res = 3 * (sizeof(struct payload) + DELOG_ITEM_OVERHEAD);

	for (unsigned i = 0; i < r->txs && !atomic_load(&r->err); i++) {
		size_t idx = (size_t)wa->t * r->txs + i;
		unsigned j = (unsigned)(rnd(&s) % SHARED);
		bool abort_it = rnd(&s) % 50 == 0;
		delog_tx *tx;
		uint64_t seq = 0;
		int err = delog_tx_begin(r->log, res, 0, &tx);

		if (err)
			goto fail;
		if (abort_it) {
			err = log_item(tx, K_ABORT(wa->t, i), wa->t, i);
			delog_tx_abort(tx);
			if (err)
				goto fail;
			r->seq[idx] = 0;
			continue;
		}
		err = log_item(tx, K_UNIQUE(wa->t, i), wa->t, i);
		if (!err)
			err = log_item(tx, K_COUNTER(wa->t), wa->t, i);
		if (!err)
			err = log_item(tx, K_SHARED(j), wa->t, i);
		if (err) {
			delog_tx_abort(tx);
			goto fail;
		}
		err = delog_tx_commit(tx, &seq);
		if (err)
			goto fail;
		r->seq[idx] = seq;
		r->shared[idx] = (uint8_t)j;
		if (rnd(&s) % 32 == 0) {
			err = force_one(r->log, rnd(&s) % 4 ? seq : 0, seq, rnd(&s) % 2);
			if (err)
				goto fail;
			if (delog_durable_seq(r->log) < seq) {
				fprintf(stderr, "FAIL: force(%llu) returned, durable %llu\n",
					(unsigned long long)seq,
					(unsigned long long)delog_durable_seq(r->log));
				err = -EPROTO;
				goto fail;
			}
			atomic_max(&r->max_forced, seq);
		}
		continue;
	fail:
		fprintf(stderr, "FAIL: thread %u tx %u: %s\n", wa->t, i, delog_strerror(err));
		atomic_store(&r->err, err);
		break;
	}
	return NULL;
}

static void *observer(void *arg)
{
	struct run *r = arg;
	uint64_t last = 0;
	int fd = delog_durable_fd(r->log);

	while (!atomic_load(&r->stop)) {
		struct delog_stats st = { .size = sizeof(st) };
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t d = delog_durable_seq(r->log), v;

		if (d < last)
			atomic_fetch_add(&r->observer_bad, 1);
		last = d;
		if (delog_stats(r->log, &st) || st.durable_seq > st.open_seq)
			atomic_fetch_add(&r->observer_bad, 1);
		if (poll(&pfd, 1, 1) == 1) {
			ssize_t n = read(fd, &v, sizeof(v));

			(void)n;
		}
	}
	return NULL;
}

/* ---- recovery and its checks ---- */

struct rec {
	struct run *r;
	uint64_t first_seq, last_seq, nck;
	unsigned char *got; /* per (t, i): copies */
	uint64_t *got_seq;
	uint64_t nseq;        /* size of the per-checkpoint tables */
	uint8_t *shared_seen; /* [seq]: bit j: shared item j present */
	int bad;
};

static int on_ckpt(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		   size_t n)
{
	struct rec *rc = arg;
	struct run *r = rc->r;
	/* counter per thread in this checkpoint, and the newest i seen */
	uint64_t *ctr = calloc(r->threads, sizeof(uint64_t)), *maxi = calloc(r->threads, 8);
	unsigned char *hc = calloc(r->threads, 1), *ht = calloc(r->threads, 1);

	if (!ctr || !maxi || !hc || !ht)
		return -ENOMEM;
	CHECK(!rc->nck || ck->seq == rc->last_seq + 1, "checkpoint %llu after %llu",
	      (unsigned long long)ck->seq, (unsigned long long)rc->last_seq);
	CHECK(ck->nitems == n, "checkpoint %llu: nitems %zu, %zu items",
	      (unsigned long long)ck->seq, ck->nitems, n);
	CHECK(ck->seq < rc->nseq, "checkpoint %llu past any commit", (unsigned long long)ck->seq);
	if (!rc->nck)
		rc->first_seq = ck->seq;
	rc->nck++;
	rc->last_seq = ck->seq;
	for (size_t k = 0; k < n; k++) {
		struct payload p;
		uint64_t key = it[k].key;

		if (it[k].len != sizeof(p)) {
			CHECK(0, "checkpoint %llu key %#llx: len %u", (unsigned long long)ck->seq,
			      (unsigned long long)key, it[k].len);
			continue;
		}
		memcpy(&p, it[k].data, sizeof(p));
		if (p.c != mix(key, p.a, p.b) || p.a >= r->threads || p.b >= r->txs) {
			CHECK(0, "checkpoint %llu key %#llx: damaged payload",
			      (unsigned long long)ck->seq, (unsigned long long)key);
			continue;
		}
		size_t idx = (size_t)p.a * r->txs + p.b;

		if (key == K_COUNTER(p.a)) {
			CHECK(!hc[p.a], "checkpoint %llu: two copies of counter %llu",
			      (unsigned long long)ck->seq, (unsigned long long)p.a);
			hc[p.a] = 1;
			ctr[p.a] = p.b;
		} else if ((key >> 62) == 1 && (key & ~(3ull << 62)) < SHARED) {
			unsigned j = (unsigned)(key & 7);

			if (ck->seq < rc->nseq) {
				CHECK(!(rc->shared_seen[ck->seq] & (1u << j)),
				      "checkpoint %llu: two copies of shared item %u",
				      (unsigned long long)ck->seq, j);
				rc->shared_seen[ck->seq] |= (uint8_t)(1u << j);
			}
			CHECK(r->seq[idx] == ck->seq && r->shared[idx] == j,
			      "checkpoint %llu: shared item %u holds tx %llu/%llu of checkpoint "
			      "%llu (item %u)",
			      (unsigned long long)ck->seq, j, (unsigned long long)p.a,
			      (unsigned long long)p.b, (unsigned long long)r->seq[idx],
			      r->shared[idx]);
		} else if (key == K_UNIQUE(p.a, p.b)) {
			rc->got[idx]++;
			rc->got_seq[idx] = ck->seq;
			/* A thread's transactions follow one another: in its order (CIL6). */
			CHECK(!ht[p.a] || p.b > maxi[p.a],
			      "checkpoint %llu: thread %llu's tx %llu after its tx %llu",
			      (unsigned long long)ck->seq, (unsigned long long)p.a,
			      (unsigned long long)p.b, (unsigned long long)maxi[p.a]);
			if (!ht[p.a] || p.b > maxi[p.a])
				maxi[p.a] = p.b;
			ht[p.a] = 1;
		} else {
			CHECK(0, "checkpoint %llu: unexpected key %#llx (aborted: %d)",
			      (unsigned long long)ck->seq, (unsigned long long)key,
			      key == K_ABORT(p.a, p.b));
		}
	}
	for (unsigned t = 0; t < r->threads; t++) {
		CHECK(hc[t] == ht[t], "checkpoint %llu thread %u: counter %d, transactions %d",
		      (unsigned long long)ck->seq, t, hc[t], ht[t]);
		CHECK(!ht[t] || ctr[t] == maxi[t],
		      "checkpoint %llu thread %u: counter %llu, newest transaction %llu",
		      (unsigned long long)ck->seq, t, (unsigned long long)ctr[t],
		      (unsigned long long)maxi[t]);
	}
	free(ctr);
	free(maxi);
	free(hc);
	free(ht);
	return 0;
}

static void verify(struct iol_dev *dev, struct run *r, enum delog_flush_policy pol,
		   const char *what, bool expect_clean)
{
	size_t total = (size_t)r->threads * r->txs;
	struct rec rc = { .r = r };
	struct delog_recovery rep;
	struct delog_options o = { .size = sizeof(o),
				   .flush = pol,
				   .recover = on_ckpt,
				   .recover_arg = &rc,
				   .recovery = &rep };
	uint64_t maxseq = 0;
	delog *log;
	int err;

	for (size_t k = 0; k < total; k++)
		if (r->seq[k] > maxseq)
			maxseq = r->seq[k];
	rc.nseq = maxseq + 1;
	rc.got = calloc(total, 1);
	rc.got_seq = calloc(total, sizeof(uint64_t));
	rc.shared_seen = calloc(rc.nseq, 1);
	if (!rc.got || !rc.got_seq || !rc.shared_seen) {
		CHECK(0, "out of memory");
		return;
	}
	err = engine_open_dev(dev, &o, &log);
	CHECK(err == 0, "%s: reopen: %s", what, delog_strerror(err));
	if (err)
		goto out;
	CHECK(!expect_clean || rep.clean == 1, "%s: not clean after close", what);
	CHECK(rc.last_seq >= maxseq, "%s: last checkpoint %llu, commits went up to %llu", what,
	      (unsigned long long)rc.last_seq, (unsigned long long)maxseq);
	uint64_t released = atomic_load(&r->released);

	CHECK(rc.nck == 0 || rc.first_seq <= released + 1,
	      "%s: recovery starts at checkpoint %llu, only up to %llu was released", what,
	      (unsigned long long)rc.first_seq, (unsigned long long)released);
	for (unsigned t = 0; t < r->threads; t++) {
		uint64_t prev = 0;

		for (unsigned i = 0; i < r->txs; i++) {
			size_t idx = (size_t)t * r->txs + i;
			uint64_t s = r->seq[idx];

			if (!s) {
				CHECK(rc.got[idx] == 0, "%s: aborted tx %u/%u recovered", what, t,
				      i);
				continue;
			}
			CHECK(s >= prev, "thread %u: tx %u in checkpoint %llu after one in %llu", t,
			      i, (unsigned long long)s, (unsigned long long)prev);
			prev = s;
			if (s < rc.first_seq) {
				/* released, and before the tail: gone */
				CHECK(rc.got[idx] == 0 && s <= released,
				      "%s: tx %u/%u of checkpoint %llu (before the first recovered, "
				      "%llu; released %llu) recovered %u times",
				      what, t, i, (unsigned long long)s,
				      (unsigned long long)rc.first_seq,
				      (unsigned long long)released, rc.got[idx]);
				continue;
			}
			CHECK(rc.got[idx] == 1, "%s: tx %u/%u (checkpoint %llu) recovered %u times",
			      what, t, i, (unsigned long long)s, rc.got[idx]);
			CHECK(rc.got_seq[idx] == s || !rc.got[idx],
			      "%s: tx %u/%u committed into %llu, recovered in %llu", what, t, i,
			      (unsigned long long)s, (unsigned long long)rc.got_seq[idx]);
			/* every checkpoint holding a tx that logged shared item j has a copy */
			CHECK(rc.shared_seen[s] & (1u << r->shared[idx]),
			      "%s: checkpoint %llu lost shared item %u", what,
			      (unsigned long long)s, r->shared[idx]);
		}
	}
	err = delog_close(log);
	CHECK(err == 0, "%s: close after verify: %s", what, delog_strerror(err));
out:
	if (!quiet)
		printf("stress: %s: %llu checkpoints, %llu items recovered\n", what,
		       (unsigned long long)rc.nck, (unsigned long long)rep.items);
	free(rc.got);
	free(rc.got_seq);
	free(rc.shared_seen);
}

/* -r: the push thread asks for write-back (the callback must not block): hand the
 * target to the releaser thread, which "writes back" (20 ms) and then releases, so the
 * log does fill and committers do wait for space meanwhile. */
static void on_push(void *arg, delog *log, uint64_t seq)
{
	struct run *r = arg;
	uint64_t cur = atomic_load(&r->want);

	(void)log;
	atomic_fetch_add(&r->push_calls, 1);
	while (seq > cur && !atomic_compare_exchange_weak(&r->want, &cur, seq))
		;
}

static void *releaser(void *arg)
{
	struct run *r = arg;

	while (r->periodic_release && !atomic_load(&r->stop_releaser)) {
		uint64_t d = delog_durable_seq(r->log);

		if (d > KEEP && d - KEEP > atomic_load(&r->released)) {
			int err = delog_release(r->log, d - KEEP);

			if (err) {
				fprintf(stderr, "FAIL: delog_release(%llu): %s\n",
					(unsigned long long)(d - KEEP), delog_strerror(err));
				atomic_store(&r->err, err);
				return NULL;
			}
			atomic_store(&r->released, d - KEEP);
			atomic_fetch_add(&r->releases, 1);
		}
		usleep(2000);
	}
	while (!atomic_load(&r->stop_releaser)) {
		uint64_t w = atomic_load(&r->want);

		if (w <= atomic_load(&r->released)) {
			usleep(200);
			continue;
		}
		usleep(20000);
		int err = delog_release(r->log, w);

		if (err) {
			fprintf(stderr, "FAIL: delog_release(%llu): %s\n", (unsigned long long)w,
				delog_strerror(err));
			atomic_store(&r->err, err);
			break;
		}
		atomic_store(&r->released, w);
		atomic_fetch_add(&r->releases, 1);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: engine_stress [-t THREADS] [-n TXS] [-p POLICY] [-s SEED] "
			"[-l none|nvme|sata] [-d DIR] [-r | -R] [-q]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct run r = { .threads = 8, .txs = 20000, .seed = 1 };
	enum delog_flush_policy pol = DELOG_FLUSH_SYNC;
	enum iol_sim_latency lat = IOL_SIM_LAT_NONE;
	const char *file = NULL, *dir = NULL;
	bool release_mode = false, no_release = false;
	char path[4096];
	struct iol_dev *dev = NULL;
	struct warg *wa;
	pthread_t *th, obs, rel;
	struct delog_stats st = { .size = sizeof(st) };
	int c, err;

	while ((c = getopt(argc, argv, "t:n:p:s:l:d:rRq")) != -1) {
		switch (c) {
		case 't':
			r.threads = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			r.txs = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			if (delog_flush_policy_parse(optarg, &pol))
				usage();
			break;
		case 's':
			r.seed = strtoull(optarg, NULL, 0);
			break;
		case 'l':
			if (iol_sim_latency_parse(optarg, &lat))
				usage();
			break;
		case 'd':
			dir = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'r':
			release_mode = true;
			break;
		case 'R':
			no_release = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !r.threads || r.threads > 1024 || !r.txs || r.txs > (1u << 24) ||
	    (release_mode && no_release))
		usage();
	r.periodic_release = !release_mode && !no_release;

	if (dir) {
		snprintf(path, sizeof(path), "%s/engine_stress.%ld.img", dir, (long)getpid());
		file = path;
	}
	/* Space: the log holds it all (-R: no release, recovery must see everything). */
	uint64_t need = (uint64_t)r.threads * r.txs * 3 * (sizeof(struct payload) + 64) * 2 +
			(64ull << 20);
	need = (need + 4095) & ~4095ull;
	if (release_mode)
		need = (8ull << 20) + 4096;
	if (file) {
		struct iol_dev_opts io = { .size = sizeof(io), .backend = "psync" };

		err = iol_file_create(file, need, 0600, NULL, 0);
		if (!err)
			err = iol_dev_open(file, &io, &dev);
	} else {
		struct iol_sim_opts so = { .size = sizeof(so),
					   .dev_bytes = need,
					   .seed = r.seed,
					   .latency = lat };
		struct iol_dev_opts io = { .size = sizeof(io), .backend = "sim", .sim = &so };

		err = iol_dev_open(NULL, &io, &dev);
	}
	if (err) {
		fprintf(stderr, "engine_stress: device: %s\n", delog_strerror(err));
		return 1;
	}
	if (!file)
		iol_sim_trace_enable(dev, false);

	struct delog_options o = { .size = sizeof(o), .flush = pol, .flags = DELOG_OPEN_CREATE };

	if (release_mode) {
		o.push = on_push;
		o.push_arg = &r;
	}

	err = engine_open_dev(dev, &o, &r.log);
	if (err) {
		fprintf(stderr, "engine_stress: open: %s\n", delog_strerror(err));
		return 1;
	}
	r.seq = calloc((size_t)r.threads * r.txs, sizeof(uint64_t));
	r.shared = calloc((size_t)r.threads * r.txs, 1);
	wa = calloc(r.threads, sizeof(*wa));
	th = calloc(r.threads, sizeof(*th));
	if (!r.seq || !r.shared || !wa || !th) {
		fprintf(stderr, "engine_stress: out of memory\n");
		return 1;
	}
	pthread_create(&obs, NULL, observer, &r);
	if (!no_release)
		pthread_create(&rel, NULL, releaser, &r);
	for (unsigned t = 0; t < r.threads; t++) {
		wa[t] = (struct warg){ &r, t };
		if (pthread_create(&th[t], NULL, worker, &wa[t])) {
			fprintf(stderr, "engine_stress: pthread_create failed\n");
			return 1;
		}
	}
	for (unsigned t = 0; t < r.threads; t++)
		pthread_join(th[t], NULL);
	atomic_store(&r.stop, true);
	pthread_join(obs, NULL);
	if (!no_release) {
		atomic_store(&r.stop_releaser, true);
		pthread_join(rel, NULL);
	}
	CHECK(atomic_load(&r.err) == 0, "a worker failed: %s", delog_strerror(atomic_load(&r.err)));
	CHECK(delog_durable_seq(r.log) >= atomic_load(&r.max_forced),
	      "durable_seq %llu below the last acknowledged force %llu",
	      (unsigned long long)delog_durable_seq(r.log),
	      (unsigned long long)atomic_load(&r.max_forced));
	CHECK(atomic_load(&r.max_forced) > 0, "no force was acknowledged");
	CHECK(atomic_load(&r.observer_bad) == 0, "observer saw %u inconsistencies",
	      atomic_load(&r.observer_bad));
	err = delog_force(r.log, 0);
	CHECK(err == 0, "final force: %s", delog_strerror(err));
	{
		uint64_t maxseq = 0;

		for (size_t k = 0; k < (size_t)r.threads * r.txs; k++)
			if (r.seq[k] > maxseq)
				maxseq = r.seq[k];
		CHECK(delog_durable_seq(r.log) >= maxseq,
		      "after the final force durable_seq %llu < last commit %llu",
		      (unsigned long long)delog_durable_seq(r.log), (unsigned long long)maxseq);
	}
	CHECK(delog_stats(r.log, &st) == 0, "stats");
	CHECK(delog_error(r.log) == 0, "log error %s", delog_strerror(delog_error(r.log)));
	if (!quiet)
		printf("stress: %u threads x %u txs, %s: %llu checkpoints, %.1f txs/checkpoint, "
		       "%llu relogged, %llu space waits, %u push calls, %u releases (to %llu)\n",
		       r.threads, r.txs, delog_flush_policy_name(pol),
		       (unsigned long long)st.checkpoints, st.txs_per_checkpoint,
		       (unsigned long long)st.relogged, (unsigned long long)st.space_waits,
		       atomic_load(&r.push_calls), atomic_load(&r.releases),
		       (unsigned long long)atomic_load(&r.released));
	CHECK(!release_mode || atomic_load(&r.push_calls) > 0,
	      "-r: the log never asked for write-back");

	if (!file && !fails && pol != DELOG_FLUSH_NONE) {
		/* Everything is forced: a power cut now loses nothing. */
		uint64_t bytes = iol_dev_geom(dev)->size_bytes;
		void *img = malloc(bytes);
		struct iol_sim_opts so = { .size = sizeof(so), .dev_bytes = bytes, .image = img };
		struct iol_dev_opts io = { .size = sizeof(io), .backend = "sim", .sim = &so };
		struct iol_dev *cdev;

		if (!img || iol_sim_crash(dev, r.seed, IOL_SIM_STRICT, img, NULL) ||
		    iol_dev_open(NULL, &io, &cdev)) {
			CHECK(0, "crash image");
		} else {
			free(img);
			img = NULL;
			verify(cdev, &r, pol, "power cut after the final force", false);
			iol_dev_close(cdev);
		}
		free(img);
	}
	err = delog_close(r.log);
	CHECK(err == 0, "close: %s", delog_strerror(err));
	if (!fails)
		verify(dev, &r, pol, "reopen after close", true);
	iol_dev_close(dev);
	if (file)
		unlink(file);
	free(r.seq);
	free(r.shared);
	free(wa);
	free(th);
	if (fails) {
		fprintf(stderr, "engine_stress: FAILED (%d checks)\n", fails);
		return 1;
	}
	if (!quiet)
		printf("engine_stress: ok\n");
	return 0;
}
