/*
 * liveness.c - no sequence of API calls leaves a committer waiting for ever while the
 * application has released everything, and opening and closing a log uses no lasting
 * log space (issue 27, items 2 and 2b; docs/DESIGN.md G9).
 *
 * What it proves:
 *  - pinned_push_*: the newest durable checkpoint stays in the log until a newer one is
 *    durable (space.c S1).  With everything durable released, committed but unforced
 *    transactions below cil_push_bytes in the CIL, and every thread holding a grant
 *    itself waiting in space_grant for more (delog_tx_log past its reservation), only a
 *    push of the CIL can free space: the waiters must cause it (space.c S4) and return.
 *    Each flush policy that acknowledges (sync, async, single), with the release done
 *    by the application up front, or by the push callback when space runs low (the
 *    application never forces), and with waiters that never block (DELOG_TX_NOWAIT,
 *    retrying -EAGAIN).
 *  - open_close_*: 1,000 open/close cycles of a 4 MiB log (twice what it could hold
 *    unmount records: about 500) with no commit in between: every close returns 0
 *    (never DELOG_ELOGFULL), the log's used space never grows from one clean open to
 *    the next, and afterwards a transaction still begins (without waiting), commits and
 *    is forced.  Variants: after releasing everything at each open; from a crashed
 *    (dirty) log, with power cuts instead of closes on a third of the cycles.
 *  - cil_admits_racing_commits: committers released together into delog_tx_commit are
 *    admitted into a context one at a time against 2 x cil_push_bytes (cil.c CIL5), so
 *    the newest durable checkpoint, which S1 keeps, stays about a quarter of the log.
 *
 * Why it is built this way: the waiters run in threads and the test waits for them with
 * a generous bound (LV_BOUND_MS); past it the test fails, then frees the waiters itself
 * with one delog_force (the outside push the bug needed) so that it ends cleanly and
 * says who waited.  No other assertion depends on time.  Space is read from delog_stats
 * (log_used: the journal's live region and open buffer), so a leak of one record per
 * cycle shows at the first cycle, not only when the log jams.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define LV_LOG (4 * T_MiB) /* journal/sb.c MIN_LOG_BYTES */
#define LV_DEV (LV_LOG + 4096)
#define LV_BOUND_MS 20000u /* liveness bound: far beyond any real wait */
#define LV_WAITERS 3
#define LV_CIL (480u << 10)     /* under cil_push_bytes: log/8 = 512 KiB */
#define LV_TX_CAP (864u << 10)  /* a waiter's reservation, at most */
#define LV_MORE (96u << 10)     /* what a waiter logs beyond it (within log/4 in all) */
#define LV_CYCLES 1000u /* twice what a 4 MiB log held: 486 unmount records */

static void lv_msleep(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* One transaction of one item of @len bytes (key-filled), committed, forced if @force. */
static int lv_commit(delog *log, uint64_t key, uint32_t len, bool force, uint64_t *seq)
{
	unsigned char *d = malloc(len ? len : 1);
	delog_tx *tx;
	int err;

	cr_assert_not_null(d);
	memset(d, (int)(key & 0xff), len);
	err = delog_tx_begin(log, len + DELOG_ITEM_OVERHEAD, 0, &tx);
	if (!err) {
		err = delog_tx_log(tx, key, d, len);
		if (err)
			delog_tx_abort(tx);
		else
			err = force ? delog_tx_commit_force(tx, seq) : delog_tx_commit(tx, seq);
	}
	free(d);
	return err;
}

/* ======================================================================================
 * item 2: a waiter for space that only a newer durable checkpoint can free pushes it
 * ====================================================================================== */

struct lv_cb {
	atomic_uint calls, bad;
};

/* The push callback of an application that writes back at once: release the target. */
static void lv_release_cb(void *arg, delog *log, uint64_t seq)
{
	struct lv_cb *cb = arg;

	atomic_fetch_add(&cb->calls, 1);
	if (delog_release(log, seq))
		atomic_fetch_add(&cb->bad, 1);
}

struct lv_waiter {
	delog_tx *tx;
	uint64_t key, reserve;
	uint32_t len;
	bool nowait;     /* begun with DELOG_TX_NOWAIT: retries -EAGAIN until stop */
	atomic_int stop; /* the test gave up on it */
	atomic_int done, err;
	pthread_t th;
};

static void *lv_waiter_main(void *arg)
{
	struct lv_waiter *w = arg;
	unsigned char *d = malloc(w->len);
	int err = -ENOMEM;

	if (d) {
		memset(d, (int)(w->key & 0xff), w->len);
		while ((err = delog_tx_log(w->tx, w->key, d, w->len)) == -EAGAIN && w->nowait &&
		       !atomic_load(&w->stop))
			lv_msleep(1);
		free(d);
	}
	atomic_store(&w->err, err);
	atomic_store(&w->done, 1);
	return NULL;
}

/* The largest reservation a NOWAIT begin gets now, at most @cap (to 4 KiB), taken by a
 * blocking begin (so that its transaction's later delog_tx_log may wait).  Called with
 * the CIL empty: the probes' -EAGAIN then make delog push nothing. */
static uint64_t lv_take_all(delog *log, uint64_t cap, unsigned flags, delog_tx **tx)
{
	uint64_t lo = 0, hi = cap + 1;

	while (hi - lo > 4096) {
		uint64_t mid = lo + (hi - lo) / 2;
		delog_tx *t;
		int err = delog_tx_begin(log, mid, DELOG_TX_NOWAIT, &t);

		cr_assert(err == 0 || err == -EAGAIN, "NOWAIT begin: %s", delog_strerror(err));
		if (err) {
			hi = mid;
		} else {
			delog_tx_abort(t);
			lo = mid;
		}
	}
	cr_assert_eq(delog_tx_begin(log, lo, flags, tx), 0);
	return lo;
}

/* @callback: the push callback releases (else the test, up front); @nowait: the waiters
 * are NOWAIT transactions retrying -EAGAIN (an application that never blocks). */
static void pinned_push_run(enum delog_flush_policy pol, bool callback, bool nowait)
{
	struct iol_dev *dev = t_sim(LV_DEV, IOL_SIM_LAT_NONE, 2700 + pol, NULL);
	struct delog_options o = t_opts(pol);
	struct lv_waiter w[LV_WAITERS] = { 0 };
	struct lv_cb cb = { 0 };
	struct delog_stats st;
	struct delog_recovery rec;
	static unsigned char big[LV_CIL];
	uint64_t s1, s2, seq, last = 0;
	unsigned waited = 0, ndone = 0;
	delog_tx *cil, *probe;
	delog *log;

	if (callback) {
		o.push = lv_release_cb;
		o.push_arg = &cb;
	}
	log = t_open_dev(dev, &o);
	/* Checkpoint 1, under cil_push_bytes (log/8) so that its commit asks for no push of
	 * its own, forced and released: S1 pins it.  With the push callback, the callback
	 * releases it once space runs low (the application never forces to free space). */
	cr_assert_eq(lv_commit(log, 1, LV_CIL, true, &s1), 0);
	if (!callback)
		cr_assert_eq(delog_release(log, s1), 0);
	/* A transaction of LV_CIL bytes, logged now and committed (not forced) once the three
	 * below took every byte left: the CIL then holds it below cil_push_bytes. */
	memset(big, 2, sizeof(big));
	cr_assert_eq(delog_tx_begin(log, LV_CIL + DELOG_ITEM_OVERHEAD, 0, &cil), 0);
	cr_assert_eq(delog_tx_log(cil, 2, big, LV_CIL), 0);
	/* Three transactions take reservations until free space is 0 ... */
	for (int i = 0; i < LV_WAITERS; i++) {
		w[i].key = 10 + (uint64_t)i;
		w[i].nowait = nowait;
		w[i].reserve = lv_take_all(log, LV_TX_CAP, nowait ? DELOG_TX_NOWAIT : 0, &w[i].tx);
		w[i].len = (uint32_t)(w[i].reserve + LV_MORE);
	}
	cr_assert_eq(delog_tx_begin(log, 4096, DELOG_TX_NOWAIT, &probe), -EAGAIN,
		     "precondition: the log is full");
	cr_assert_eq(delog_tx_commit(cil, &s2), 0);
	st = t_stats(log);
	cr_assert(s2 == s1 + 1 && st.cil_bytes > 0 && st.open_seq == s2 && st.durable_seq == s1,
		  "precondition: the CIL holds checkpoint %llu unforced (cil %llu, open %llu, "
		  "durable %llu)", (unsigned long long)s2, (unsigned long long)st.cil_bytes,
		  (unsigned long long)st.open_seq, (unsigned long long)st.durable_seq);
	/* ... then each logs an item larger than its reservation, in its own thread. */
	for (int i = 0; i < LV_WAITERS; i++)
		cr_assert_eq(pthread_create(&w[i].th, NULL, lv_waiter_main, &w[i]), 0);
	for (; waited < LV_BOUND_MS; waited += 10) {
		ndone = 0;
		for (int i = 0; i < LV_WAITERS; i++)
			ndone += (unsigned)atomic_load(&w[i].done);
		if (ndone == LV_WAITERS)
			break;
		lv_msleep(10);
	}
	st = t_stats(log);
	cr_expect_eq(ndone, LV_WAITERS,
		     "%s%s%s: %u of %d committers still wait for space after %u ms (durable %llu, "
		     "open %llu, cil %llu bytes, used %llu of %llu, reserved %llu, space_waits "
		     "%llu, push callback %u calls): nothing pushed the CIL",
		     delog_flush_policy_name(pol), callback ? " (push callback)" : "",
		     nowait ? " (NOWAIT)" : "",
		     LV_WAITERS - ndone, LV_WAITERS, waited, (unsigned long long)st.durable_seq,
		     (unsigned long long)st.open_seq, (unsigned long long)st.cil_bytes,
		     (unsigned long long)st.log_used, (unsigned long long)st.log_size,
		     (unsigned long long)st.reserved_bytes, (unsigned long long)st.space_waits,
		     atomic_load(&cb.calls));
	if (ndone != LV_WAITERS) {
		for (int i = 0; i < LV_WAITERS; i++)
			atomic_store(&w[i].stop, 1);
		cr_assert_eq(delog_force(log, 0), 0, "the outside force that frees them");
	}
	for (int i = 0; i < LV_WAITERS; i++) {
		cr_assert_eq(pthread_join(w[i].th, NULL), 0);
		cr_assert_eq(atomic_load(&w[i].err), 0, "waiter %d: %s", i,
			     delog_strerror(atomic_load(&w[i].err)));
	}
	if (!nowait)
		cr_expect_gt(t_stats(log).space_waits, 0, "the committers never waited");
	cr_expect_eq(atomic_load(&cb.bad), 0, "delog_release failed in the push callback");
	/* The three transactions commit; the log goes on. */
	for (int i = 0; i < LV_WAITERS; i++) {
		cr_assert_eq(delog_tx_commit_force(w[i].tx, &seq), 0);
		cr_assert_eq(delog_release(log, seq), 0);
		last = seq;
	}
	cr_assert_eq(delog_error(log), 0);
	cr_assert_eq(delog_close(log), 0);
	log = t_reopen(dev, t_opts(pol), &(struct coll){ 0 }, &rec);
	cr_expect_eq(rec.clean, 1);
	cr_expect_eq(rec.last_seq, last, "recovered up to %llu, committed up to %llu",
		     (unsigned long long)rec.last_seq, (unsigned long long)last);
	cr_assert_eq(delog_close(log), 0);
	iol_dev_close(dev);
}

Test(liveness, pinned_push_sync, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_SYNC, false, false);
}
Test(liveness, pinned_push_async, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_ASYNC, false, false);
}
Test(liveness, pinned_push_single, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_SINGLE, false, false);
}
Test(liveness, pinned_push_callback_sync, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_SYNC, true, false);
}
Test(liveness, pinned_push_callback_async, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_ASYNC, true, false);
}
Test(liveness, pinned_push_callback_single, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_SINGLE, true, false);
}
Test(liveness, pinned_push_nowait_sync, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_SYNC, false, true);
}
Test(liveness, pinned_push_nowait_async, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_ASYNC, false, true);
}
Test(liveness, pinned_push_nowait_single, .timeout = 120)
{
	pinned_push_run(DELOG_FLUSH_SINGLE, false, true);
}

/* ======================================================================================
 * item 2b: open and close without a commit use no lasting log space
 * ====================================================================================== */

enum lv_mode {
	LV_PLAIN,   /* open, close */
	LV_RELEASE, /* open, release everything durable, close */
	LV_CRASH,   /* from a crashed log; a power cut instead of a close every third cycle */
};

/* The recovery callback of these cycles: counts, checks the sequence order. */
static int lv_count_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		       size_t n)
{
	uint64_t *last = arg;

	(void)it;
	(void)n;
	if (*last && ck->seq != *last + 1)
		return DELOG_ECORRUPT;
	*last = ck->seq;
	return 0;
}

static delog *lv_open(struct iol_dev *dev, enum delog_flush_policy pol, struct delog_recovery *rec,
		      uint64_t *last)
{
	struct delog_options o = t_opts(pol);

	*last = 0;
	o.recover = lv_count_cb;
	o.recover_arg = last;
	o.recovery = rec;
	return t_open_dev(dev, &o);
}

static void open_close_run(enum delog_flush_policy pol, enum lv_mode mode)
{
	struct iol_dev *dev = t_sim(LV_DEV, IOL_SIM_LAT_NONE, 2750 + mode, NULL);
	struct delog_options o = t_opts(pol);
	struct delog_recovery rec;
	uint64_t seq = 0, last, used = 0, clean_used = 0, first_used = 0;
	unsigned grew = 0, first_growth = 0;
	delog *log;
	delog_tx *tx;

	iol_sim_trace_enable(dev, false); /* thousands of cycles: keep no trace */
	log = t_open_dev(dev, &o);

	/* A first session that leaves checkpoints in the log (not released). */
	for (uint64_t k = 1; k <= 8; k++)
		cr_assert_eq(lv_commit(log, k, 20000, true, &seq), 0);
	if (mode == LV_CRASH) {
		struct iol_dev *img = t_crash_copy(dev, 2760, NULL);

		cr_assert_eq(delog_close(log), 0); /* on the old device, dropped */
		iol_dev_close(dev);
		dev = img;
		iol_sim_trace_enable(dev, false);
	} else {
		cr_assert_eq(delog_close(log), 0);
	}
	for (unsigned i = 0; i < LV_CYCLES; i++) {
		int err;

		log = lv_open(dev, pol, &rec, &last);
		cr_assert_eq(last, seq, "cycle %u: recovered up to %llu, not %llu", i,
			     (unsigned long long)last, (unsigned long long)seq);
		used = t_stats(log).log_used;
		if (!i)
			first_used = used;
		/* From one clean open to the next, the live region never grows. */
		if (rec.clean && clean_used && used > clean_used && !grew++)
			first_growth = i;
		if (rec.clean)
			clean_used = used;
		if (mode == LV_RELEASE)
			cr_assert_eq(delog_release(log, delog_durable_seq(log)), 0);
		if (mode == LV_CRASH && i % 3 == 0) {
			struct iol_dev *img = t_crash_copy(dev, 2761 + i, NULL);

			(void)delog_close(log); /* on the old device, dropped */
			iol_dev_close(dev);
			dev = img;
			iol_sim_trace_enable(dev, false);
			continue;
		}
		err = delog_close(log);
		cr_assert_eq(err, 0, "cycle %u: delog_close: %s (live region grew in %u cycles, "
			     "first at cycle %u: %llu bytes used, %llu at the first open)", i,
			     delog_strerror(err), grew, first_growth, (unsigned long long)used,
			     (unsigned long long)first_used);
	}
	cr_expect_eq(grew, 0, "the live region grew from one clean open to the next in %u of "
		     "%u cycles (first at cycle %u; %llu bytes used, %llu at the first open)",
		     grew, LV_CYCLES, first_growth, (unsigned long long)used,
		     (unsigned long long)first_used);
	/* The log goes on: a transaction begins without waiting, commits, is forced. */
	log = lv_open(dev, pol, &rec, &last);
	cr_expect_eq(rec.clean, 1);
	cr_assert_eq(delog_tx_begin(log, 4096, DELOG_TX_NOWAIT, &tx), 0, "the log jammed");
	cr_assert_eq(delog_tx_log(tx, 99, "x", 1), 0);
	cr_assert_eq(delog_tx_commit_force(tx, &seq), 0);
	cr_assert_eq(seq, last + 1);
	cr_assert_eq(delog_close(log), 0);
	log = lv_open(dev, pol, &rec, &last);
	cr_expect_eq(last, seq);
	cr_expect_eq(rec.clean, 1);
	cr_assert_eq(delog_close(log), 0);
	iol_dev_close(dev);
}

Test(liveness, open_close_sync, .timeout = 300) { open_close_run(DELOG_FLUSH_SYNC, LV_PLAIN); }
Test(liveness, open_close_single, .timeout = 300) { open_close_run(DELOG_FLUSH_SINGLE, LV_PLAIN); }
Test(liveness, open_close_release, .timeout = 300)
{
	open_close_run(DELOG_FLUSH_ASYNC, LV_RELEASE);
}
Test(liveness, open_close_crash, .timeout = 300) { open_close_run(DELOG_FLUSH_SYNC, LV_CRASH); }

/* ======================================================================================
 * CIL5: committers racing into one context are admitted one at a time
 * ====================================================================================== */

#define LV_RACERS 4
#define LV_RACE_ROUNDS 40
#define LV_RACE_PUSH (256u << 10)
#define LV_RACE_ITEM (200u << 10) /* two fit in 2 x push_bytes, three do not */

struct lv_racer {
	pthread_t th;
	delog *log;
	pthread_barrier_t *bar;
	unsigned id;
	uint64_t seq[LV_RACE_ROUNDS];
	int err;
};

static void *lv_racer_main(void *arg)
{
	struct lv_racer *r = arg;
	unsigned char *d = malloc(LV_RACE_ITEM);

	if (!d) {
		r->err = -ENOMEM;
		return NULL;
	}
	memset(d, (int)r->id, LV_RACE_ITEM);
	for (unsigned i = 0; i < LV_RACE_ROUNDS && !r->err; i++) {
		delog_tx *tx;

		r->err = delog_tx_begin(r->log, LV_RACE_ITEM + DELOG_ITEM_OVERHEAD, 0, &tx);
		if (!r->err && (r->err = delog_tx_log(tx, (uint64_t)r->id << 32 | i, d,
						      LV_RACE_ITEM)))
			delog_tx_abort(tx);
		pthread_barrier_wait(r->bar); /* commit together */
		if (!r->err)
			r->err = delog_tx_commit(tx, &r->seq[i]);
	}
	free(d);
	return NULL;
}

/*
 * Four committers, each round released together into delog_tx_commit with a 200 KiB
 * item: a checkpoint of more than one transaction holds at most 2 x cil_push_bytes of
 * them (two), however the commits interleave.  Checking the context's cost before the
 * insert let all four in at once (a checkpoint of three quarters of a small log, which S1
 * then pinned: the crash suite's liveness workload stalled on it).
 */
Test(liveness, cil_admits_racing_commits, .timeout = 120)
{
	struct iol_dev *dev = t_sim(16 * T_MiB + 4096, IOL_SIM_LAT_NONE, 2760, NULL);
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	struct lv_racer r[LV_RACERS];
	pthread_barrier_t bar;
	struct lv_cb cb = { 0 };
	delog *log;

	o.cil_push_bytes = LV_RACE_PUSH;
	o.push = lv_release_cb;
	o.push_arg = &cb;
	log = t_open_dev(dev, &o);
	pthread_barrier_init(&bar, NULL, LV_RACERS);
	for (unsigned i = 0; i < LV_RACERS; i++) {
		r[i] = (struct lv_racer){ .log = log, .bar = &bar, .id = i + 1 };
		cr_assert_eq(pthread_create(&r[i].th, NULL, lv_racer_main, &r[i]), 0);
	}
	for (unsigned i = 0; i < LV_RACERS; i++)
		pthread_join(r[i].th, NULL);
	pthread_barrier_destroy(&bar);
	for (unsigned i = 0; i < LV_RACERS; i++) {
		cr_assert_eq(r[i].err, 0, "racer %u: %s", i, delog_strerror(r[i].err));
		for (unsigned k = 0; k < LV_RACE_ROUNDS; k++) {
			unsigned same = 0;

			for (unsigned j = 0; j < LV_RACERS; j++)
				for (unsigned m = 0; m < LV_RACE_ROUNDS; m++)
					same += r[j].seq[m] == r[i].seq[k];
			cr_assert_leq(same, 2, "checkpoint %llu holds %u transactions of %u bytes "
				      "(cil_push_bytes %u)", (unsigned long long)r[i].seq[k], same,
				      LV_RACE_ITEM, LV_RACE_PUSH);
		}
	}
	cr_assert_eq(delog_close(log), 0);
	cr_assert_eq(iol_dev_close(dev), 0);
}
