/*
 * liveness.c - no sequence of API calls leaves a committer waiting for ever while the
 * application has released everything, and opening and closing a log uses no lasting
 * log space (issue 27, items 2 and 2b; docs/DESIGN.md G9).
 *
 * What it proves:
 *  - pinned_push_*: the newest durable checkpoint stays in the log until a newer one is
 *    durable (space.c S1).  With everything durable released, committed but unforced
 *    transactions below cil_push_bytes in the CIL, and every thread holding a grant
 *    itself waiting for more space (delog_tx_log past its reservation), only a
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
#define LV_CIL (480u << 10)    /* under cil_push_bytes: log/8 = 512 KiB */
#define LV_TX_CAP (864u << 10) /* a waiter's reservation, at most */
#define LV_MORE (96u << 10)    /* what a waiter logs beyond it (within log/4 in all) */
#define LV_CYCLES 1000u        /* twice what a 4 MiB log held: 486 unmount records */

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

/* Close @log cleanly, reopen @dev: a clean log recovered through checkpoint @last. */
static void lv_close_reopen(delog *log, struct iol_dev *dev, enum delog_flush_policy pol,
			    uint64_t last)
{
	struct delog_recovery rec;

	cr_assert_eq(delog_error(log), 0);
	cr_assert_eq(delog_close(log), 0);
	log = t_reopen(dev, t_opts(pol), &(struct coll){ 0 }, &rec);
	cr_expect_eq(rec.clean, 1);
	cr_expect_eq(rec.last_seq, last, "recovered up to %llu, committed up to %llu",
		     (unsigned long long)rec.last_seq, (unsigned long long)last);
	cr_assert_eq(delog_close(log), 0);
	iol_dev_close(dev);
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

/* The largest reservation a NOWAIT begin gets now, at most @cap (to 4 KiB), taken with
 * @flags (0: a blocking begin, so that its transaction's later delog_tx_log may wait).
 * Called with the CIL empty: the probes' -EAGAIN then make delog push nothing.  Free
 * space may still shrink between the search and the take: a cover record an earlier
 * probe asked for takes its sectors at the head before its flush moves the tail
 * (engine/space.c).  A NOWAIT take that then fails searches again. */
static uint64_t lv_take_all(delog *log, uint64_t cap, unsigned flags, delog_tx **tx)
{
	for (unsigned tries = 0;; tries++) {
		uint64_t lo = 0, hi = cap + 1;
		int err;

		while (hi - lo > 4096) {
			uint64_t mid = lo + (hi - lo) / 2;
			delog_tx *t;

			err = delog_tx_begin(log, mid, DELOG_TX_NOWAIT, &t);
			cr_assert(err == 0 || err == -EAGAIN, "NOWAIT begin: %s",
				  delog_strerror(err));
			if (err) {
				hi = mid;
			} else {
				delog_tx_abort(t);
				lo = mid;
			}
		}
		err = delog_tx_begin(log, lo, flags, tx);
		if (!err)
			return lo;
		cr_assert(err == -EAGAIN && (flags & DELOG_TX_NOWAIT) && tries < 100,
			  "begin of %llu bytes: %s", (unsigned long long)lo, delog_strerror(err));
		lv_msleep(1);
	}
}

/* Is the log full, and does it stay so?  A NOWAIT begin of 4 KiB fails -EAGAIN, and again
 * after the push thread wrote the cover record the first one may have asked for (space
 * released before comes back with it: space.c).  A probe that succeeds is aborted. */
static bool lv_stays_full(delog *log)
{
	for (int i = 0; i < 2; i++) {
		delog_tx *probe;
		int err = delog_tx_begin(log, 4096, DELOG_TX_NOWAIT, &probe);

		cr_assert(err == 0 || err == -EAGAIN, "probe: %s", delog_strerror(err));
		if (!err) {
			delog_tx_abort(probe);
			return false;
		}
		if (!i)
			lv_msleep(50);
	}
	return true;
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
		  "durable %llu)",
		  (unsigned long long)s2, (unsigned long long)st.cil_bytes,
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
		     nowait ? " (NOWAIT)" : "", LV_WAITERS - ndone, LV_WAITERS, waited,
		     (unsigned long long)st.durable_seq, (unsigned long long)st.open_seq,
		     (unsigned long long)st.cil_bytes, (unsigned long long)st.log_used,
		     (unsigned long long)st.log_size, (unsigned long long)st.reserved_bytes,
		     (unsigned long long)st.space_waits, atomic_load(&cb.calls));
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
	lv_close_reopen(log, dev, pol, last);
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

/*
 * A push callback that only records what it is asked (an application whose write-back
 * thread releases later, or writes its items back: delog_item_written with item
 * tracking), one grower, and the release made once the grower sleeps: the release
 * moves no tail (checkpoint 1 is the newest durable one, which S1 keeps, and
 * the tail is at it already), yet it is what lets the grower have the CIL pushed (S4).
 * The grower must be woken by the release itself (journal/grant.c GR4: no timed poll
 * does it any more).
 */
struct lv_deferred {
	delog *log;
	bool items;          /* item tracking: write key 1 back (delog_item_written), not release */
	atomic_ullong asked; /* the newest sequence the push callback named */
	atomic_int go, stop, released;
	pthread_t th;
};

static void lv_record_cb(void *arg, delog *log, uint64_t seq)
{
	struct lv_deferred *d = arg;

	(void)log;
	if (seq > atomic_load(&d->asked))
		atomic_store(&d->asked, seq);
}

/* The application's write-back thread: once the test says go, a while later, release
 * what the callback asked for. */
static void *lv_writeback_main(void *arg)
{
	struct lv_deferred *d = arg;

	while (!atomic_load(&d->go) && !atomic_load(&d->stop))
		lv_msleep(1);
	lv_msleep(100); /* the grower is asleep by now (if not, nothing is proved, and it passes) */
	if (!atomic_load(&d->stop) && atomic_load(&d->asked) &&
	    (d->items ? delog_item_written(d->log, 1, atomic_load(&d->asked)) :
			delog_release(d->log, atomic_load(&d->asked))) == 0)
		atomic_store(&d->released, 1);
	return NULL;
}

static void deferred_release_run(enum delog_flush_policy pol, bool items)
{
	struct iol_dev *dev = t_sim(LV_DEV, IOL_SIM_LAT_NONE, 2750 + pol, NULL);
	struct delog_options o = t_opts(pol);
	struct lv_deferred d = { 0 };
	struct lv_waiter w = { .key = 10 };
	static unsigned char big[LV_CIL];
	uint64_t s1, s2, seq;
	unsigned waited;
	delog_tx *cil, *fill[2];

	o.push = lv_record_cb;
	o.push_arg = &d;
	if (items)
		o.flags |= DELOG_OPEN_TRACK_ITEMS;
	d.items = items;
	d.log = t_open_dev(dev, &o);
	cr_assert_eq(pthread_create(&d.th, NULL, lv_writeback_main, &d), 0);
	cr_assert_eq(lv_commit(d.log, 1, LV_CIL, true, &s1), 0);
	memset(big, 2, sizeof(big));
	cr_assert_eq(delog_tx_begin(d.log, LV_CIL + DELOG_ITEM_OVERHEAD, 0, &cil), 0);
	cr_assert_eq(delog_tx_log(cil, 2, big, LV_CIL), 0);
	/* Two transactions that hold space and never log (they do not wait), then the grower. */
	for (int i = 0; i < 2; i++)
		lv_take_all(d.log, LV_TX_CAP, 0, &fill[i]);
	w.reserve = lv_take_all(d.log, LV_TX_CAP, 0, &w.tx);
	w.len = (uint32_t)(w.reserve + LV_MORE);
	cr_assert(lv_stays_full(d.log), "precondition: the log is full");
	cr_assert_eq(delog_tx_commit(cil, &s2), 0);
	cr_assert_eq(s2, s1 + 1);
	cr_assert_eq(pthread_create(&w.th, NULL, lv_waiter_main, &w), 0);
	for (waited = 0; waited < LV_BOUND_MS && t_stats(d.log).space_waits == 0; waited++)
		lv_msleep(1);
	atomic_store(&d.go, 1);
	for (waited = 0; waited < LV_BOUND_MS && !atomic_load(&w.done); waited += 10)
		lv_msleep(10);
	cr_expect(atomic_load(&w.done),
		  "%s: the grower still waits %u ms after the write-back released checkpoint "
		  "%llu (released: %d): the release woke nobody",
		  delog_flush_policy_name(pol), waited, (unsigned long long)atomic_load(&d.asked),
		  atomic_load(&d.released));
	if (!atomic_load(&w.done))
		cr_assert_eq(delog_force(d.log, 0), 0, "the outside force that frees it");
	atomic_store(&d.stop, 1);
	cr_assert_eq(pthread_join(w.th, NULL), 0);
	cr_assert_eq(pthread_join(d.th, NULL), 0);
	cr_assert_eq(atomic_load(&w.err), 0, "grower: %s", delog_strerror(atomic_load(&w.err)));
	cr_expect(atomic_load(&d.released), "the write-back never released");
	for (int i = 0; i < 2; i++)
		delog_tx_abort(fill[i]);
	cr_assert_eq(delog_tx_commit_force(w.tx, &seq), 0);
	cr_assert_eq(delog_release(d.log, seq), 0);
	lv_close_reopen(d.log, dev, pol, seq);
}

Test(liveness, deferred_release_sync, .timeout = 120)
{
	deferred_release_run(DELOG_FLUSH_SYNC, false);
}
Test(liveness, deferred_release_async, .timeout = 120)
{
	deferred_release_run(DELOG_FLUSH_ASYNC, false);
}
Test(liveness, deferred_release_single, .timeout = 120)
{
	deferred_release_run(DELOG_FLUSH_SINGLE, false);
}
Test(liveness, deferred_item_written_sync, .timeout = 120)
{
	deferred_release_run(DELOG_FLUSH_SYNC, true);
}
Test(liveness, deferred_item_written_async, .timeout = 120)
{
	deferred_release_run(DELOG_FLUSH_ASYNC, true);
}
Test(liveness, deferred_item_written_single, .timeout = 120)
{
	deferred_release_run(DELOG_FLUSH_SINGLE, true);
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
		cr_assert_eq(err, 0,
			     "cycle %u: delog_close: %s (live region grew in %u cycles, "
			     "first at cycle %u: %llu bytes used, %llu at the first open)",
			     i, delog_strerror(err), grew, first_growth, (unsigned long long)used,
			     (unsigned long long)first_used);
	}
	cr_expect_eq(grew, 0,
		     "the live region grew from one clean open to the next in %u of "
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

Test(liveness, open_close_sync, .timeout = 300)
{
	open_close_run(DELOG_FLUSH_SYNC, LV_PLAIN);
}
Test(liveness, open_close_single, .timeout = 300)
{
	open_close_run(DELOG_FLUSH_SINGLE, LV_PLAIN);
}
Test(liveness, open_close_release, .timeout = 300)
{
	open_close_run(DELOG_FLUSH_ASYNC, LV_RELEASE);
}
Test(liveness, open_close_crash, .timeout = 300)
{
	open_close_run(DELOG_FLUSH_SYNC, LV_CRASH);
}

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
		if (!r->err &&
		    (r->err = delog_tx_log(tx, (uint64_t)r->id << 32 | i, d, LV_RACE_ITEM)))
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
			cr_assert_leq(same, 2,
				      "checkpoint %llu holds %u transactions of %u bytes "
				      "(cil_push_bytes %u)",
				      (unsigned long long)r[i].seq[k], same, LV_RACE_ITEM,
				      LV_RACE_PUSH);
		}
	}
	cr_assert_eq(delog_close(log), 0);
	cr_assert_eq(iol_dev_close(dev), 0);
}

/* ======================================================================================
 * S5: transactions that grow their reservations never wait for one another for ever
 * ====================================================================================== */

/*
 * A reservation covers the record headers of what it reserves (journal/grant.c GR3, cil.c CIL4):
 * with every byte of the log taken, a NOWAIT transaction logs items whose data plus
 * DELOG_ITEM_OVERHEAD each add up to its reservation, in many shapes, without needing
 * one byte more (-EAGAIN here).  Before, a transaction of big items on 16 KiB buffers
 * needed a third more than it reserved, and waited for it holding its grant.
 */
static void reserve_covers_run(uint32_t logbsize, uint32_t sector)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = LV_DEV,
				   .sector = sector,
				   .seed = 2770 + logbsize + sector };
	struct iol_dev_opts dopts = { .size = sizeof(dopts), .backend = "sim", .sim = &so };
	struct iol_dev *dev = NULL;
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	static unsigned char d[LV_TX_CAP];
	static const uint32_t shapes[][4] = {
		{ 1, 0, 0, 0 },                          /* one big item (below) */
		{ 2, 0, 0, 0 },                          /* two halves */
		{ 7, 1000, 0, 0 },                       /* items of 1000 bytes, the rest in one */
		{ 0, 0, 0, 0 },                          /* zero-length items, the rest in one */
		{ 3, 4096 - DELOG_ITEM_OVERHEAD, 0, 0 }, /* sector-sized records of it */
	};
	delog *log;

	cr_assert_eq(iol_dev_open(NULL, &dopts, &dev), 0);
	o.logbsize = logbsize;
	o.sector = sector;
	log = t_open_dev(dev, &o);
	memset(d, 7, sizeof(d));
	for (unsigned s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		delog_tx *tx, *fill[16];
		unsigned nfill = 0;
		uint64_t r, left;
		uint32_t small = shapes[s][1], n = 0;
		int err = 0;

		/* Fillers hold what the test transaction does not take: 256 KiB each while
		 * one fits, less the last, whose room the test transaction takes.  Space the
		 * last release freed may come back while they are taken (the push thread
		 * writes the cover record a NOWAIT begin asked for: space.c), so the log is
		 * filled again until it stays full. */
		for (unsigned tries = 0;; tries++) {
			while (nfill < 16 &&
			       !delog_tx_begin(log, 256u << 10, DELOG_TX_NOWAIT, &fill[nfill]))
				nfill++;
			cr_assert_gt(nfill, 0);
			delog_tx_abort(fill[--nfill]);
			r = left = lv_take_all(log, LV_TX_CAP, DELOG_TX_NOWAIT, &tx);
			if (lv_stays_full(log))
				break;
			cr_assert(tries < 100, "precondition: the log is full");
			delog_tx_abort(tx);
			while (nfill)
				delog_tx_abort(fill[--nfill]);
			lv_msleep(10);
		}
		err = 0;
		/* Shape s: items of @small bytes while they leave room for a last one. */
		while (!err && shapes[s][0] != 1 && left >= 2 * (small + DELOG_ITEM_OVERHEAD) &&
		       n < (shapes[s][0] == 2 ? 1u : 64u)) {
			uint32_t len = shapes[s][0] == 2 ? (uint32_t)(r / 2 - DELOG_ITEM_OVERHEAD) :
							   small;

			err = delog_tx_log(tx, 100 + n++, d, len);
			left -= len + DELOG_ITEM_OVERHEAD;
		}
		if (!err)
			err = delog_tx_log(tx, 99, d, (uint32_t)(left - DELOG_ITEM_OVERHEAD));
		cr_expect_eq(err, 0,
			     "%u-byte buffers, %u-byte sectors, shape %u: a transaction of "
			     "%u items within its reservation of %llu bytes: %s",
			     logbsize, sector, s, n + 1, (unsigned long long)r,
			     delog_strerror(err));
		while (nfill)
			delog_tx_abort(fill[--nfill]);
		cr_assert_eq(delog_tx_commit_force(tx, NULL), 0);
		cr_assert_eq(delog_release(log, delog_durable_seq(log)), 0);
	}
	cr_assert_eq(delog_close(log), 0);
	cr_assert_eq(iol_dev_close(dev), 0);
}

Test(liveness, reserve_covers_headers_16k_4096, .timeout = 120)
{
	reserve_covers_run(16u << 10, 4096);
}
Test(liveness, reserve_covers_headers_16k_512, .timeout = 120)
{
	reserve_covers_run(16u << 10, 512);
}
Test(liveness, reserve_covers_headers_256k_4096, .timeout = 120)
{
	reserve_covers_run(256u << 10, 4096);
}

/*
 * Every open transaction grows past its reservation, with everything durable released
 * and the CIL empty: only their own commits or aborts could free space.  One gets
 * -EDEADLK (journal/grant.c GR5, space.c S5) within the bound, the others go on waiting; the victim aborts
 * (GR_COMMITS: commits what it holds instead) and the others then get their space.
 * GR_REOPEN: checkpoint 1 is what recovery found, nothing written since open.  GR_FRESH:
 * no checkpoint at all, the growers hold the whole log (no release can free anything,
 * only their commits: S4, S5).  GR_BEGIN: a blocking delog_tx_begin waits beside them
 * (an open transaction without a grant).
 * Before S5 all of them waited for ever (the crash suite's liveness workload found it:
 * four to seven growers, CIL empty, everything released; and right after open).
 */
#define LV_GROWERS 5 /* at most: their reservations fill what the slack leaves */
#define GR_COMMITS 1u
#define GR_REOPEN 2u
#define GR_BEGIN 4u
#define GR_FRESH 8u

struct lv_beginner {
	delog *log;
	delog_tx *tx;
	atomic_int done, err;
	pthread_t th;
};

static void *lv_beginner_main(void *arg)
{
	struct lv_beginner *b = arg;

	atomic_store(&b->err, delog_tx_begin(b->log, LV_TX_CAP, 0, &b->tx));
	atomic_store(&b->done, 1);
	return NULL;
}

static void growers_run(enum delog_flush_policy pol, unsigned mode)
{
	bool victim_commits = mode & GR_COMMITS;
	struct lv_beginner beg = { 0 };
	struct iol_dev *dev = t_sim(LV_DEV, IOL_SIM_LAT_NONE, 2780 + pol, NULL);
	struct delog_options o = t_opts(pol);
	struct lv_waiter w[LV_GROWERS] = { 0 };
	struct delog_recovery rec;
	struct delog_stats st;
	struct coll c = { 0 };
	uint64_t s1, seq, last = 0;
	unsigned waited, ndone = 0, victims = 0;
	int victim = -1;
	unsigned ng;
	delog *log;

	log = t_open_dev(dev, &o);
	/* Checkpoint 1, forced and released: S1 pins it, and it is all the log holds. */
	if (!(mode & GR_FRESH)) {
		cr_assert_eq(lv_commit(log, 1, LV_CIL, true, &s1), 0);
		cr_assert_eq(delog_release(log, s1), 0);
	}
	if (mode & GR_REOPEN) {
		cr_assert_eq(delog_close(log), 0);
		log = t_reopen(dev, t_opts(pol), &c, &rec);
		cr_assert_eq(rec.last_seq, s1);
		/* Releases are the application's word for one open: said again. */
		cr_assert_eq(delog_release(log, s1), 0);
	}
	for (unsigned tries = 0;; tries++) {
		/* Reservations while a 4 KiB one fits: the last takes what is left. */
		for (ng = 0; ng < LV_GROWERS; ng++) {
			delog_tx *probe;

			if (ng && delog_tx_begin(log, 4096, DELOG_TX_NOWAIT, &probe))
				break;
			if (ng)
				delog_tx_abort(probe);
			w[ng].key = 10 + (uint64_t)ng;
			w[ng].reserve = lv_take_all(log, LV_TX_CAP, 0, &w[ng].tx);
			w[ng].len = (uint32_t)(w[ng].reserve + LV_MORE);
		}
		if (ng > 1 && lv_stays_full(log))
			break;
		cr_assert(tries < 100, "precondition: the log is full with %u growers", ng);
		for (unsigned i = 0; i < ng; i++)
			delog_tx_abort(w[i].tx);
	}
	if (mode & GR_BEGIN) {
		beg.log = log;
		cr_assert_eq(pthread_create(&beg.th, NULL, lv_beginner_main, &beg), 0);
		for (waited = 0; waited < LV_BOUND_MS && t_stats(log).space_waits == 0; waited++)
			lv_msleep(1);
		cr_assert_eq(atomic_load(&beg.done), 0, "precondition: the begin waits");
	}
	for (unsigned i = 0; i < ng; i++)
		cr_assert_eq(pthread_create(&w[i].th, NULL, lv_waiter_main, &w[i]), 0);
	/* One victim, then (once it let go) all of them. */
	for (waited = 0; waited < LV_BOUND_MS; waited += 10) {
		ndone = victims = 0;
		for (unsigned i = 0; i < ng; i++) {
			if (!atomic_load(&w[i].done))
				continue;
			ndone++;
			if (atomic_load(&w[i].err) == -EDEADLK)
				victims++, victim = victim < 0 ? (int)i : victim;
		}
		if (victim >= 0 || ndone)
			break;
		lv_msleep(10);
	}
	st = t_stats(log);

	cr_expect(victim >= 0 && ndone == 1,
		  "%s: after %u ms %u of %u growers returned (%u with -EDEADLK), expected one "
		  "-EDEADLK (durable %llu, open %llu, cil %llu bytes, used %llu of %llu, "
		  "reserved %llu)",
		  delog_flush_policy_name(pol), waited, ndone, ng, victims,
		  (unsigned long long)st.durable_seq, (unsigned long long)st.open_seq,
		  (unsigned long long)st.cil_bytes, (unsigned long long)st.log_used,
		  (unsigned long long)st.log_size, (unsigned long long)st.reserved_bytes);
	if (victim < 0) {
		/* Free them the only way there is: abort all (their threads still wait, so
		 * only stop them; their transactions leak with the failed test). */
		for (unsigned i = 0; i < ng; i++)
			atomic_store(&w[i].stop, 1);
		cr_assert_fail("no grower was told -EDEADLK");
	}
	cr_assert_eq(pthread_join(w[victim].th, NULL), 0);
	/* The victim's transaction is as it was: commit it, or abort it. */
	if (victim_commits) {
		cr_assert_eq(delog_tx_commit(w[victim].tx, &seq), 0);
	} else {
		delog_tx_abort(w[victim].tx);
	}
	for (waited = 0; waited < LV_BOUND_MS; waited += 10) {
		ndone = 0;
		for (unsigned i = 0; i < ng; i++)
			ndone += (unsigned)atomic_load(&w[i].done);
		if (ndone == ng)
			break;
		lv_msleep(10);
	}
	cr_assert_eq(ndone, ng,
		     "%s: %u of %u growers still wait %u ms after the victim "
		     "%s",
		     delog_flush_policy_name(pol), ng - ndone, ng, waited,
		     victim_commits ? "committed" : "aborted");
	for (unsigned i = 0; i < ng; i++) {
		if ((int)i == victim)
			continue;
		cr_assert_eq(pthread_join(w[i].th, NULL), 0);
		cr_assert_eq(atomic_load(&w[i].err), 0, "grower %u: %s", i,
			     delog_strerror(atomic_load(&w[i].err)));
		cr_assert_eq(delog_tx_commit_force(w[i].tx, &seq), 0);
		cr_assert_eq(delog_release(log, seq), 0);
		last = seq;
	}
	if (mode & GR_BEGIN) { /* it gets its grant once the growers committed */
		cr_assert_eq(pthread_join(beg.th, NULL), 0);
		cr_assert_eq(atomic_load(&beg.err), 0, "the begin: %s",
			     delog_strerror(atomic_load(&beg.err)));
		delog_tx_abort(beg.tx);
	}
	lv_close_reopen(log, dev, pol, last);
}

Test(liveness, growers_victim_aborts_sync, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SYNC, 0);
}
Test(liveness, growers_victim_aborts_async, .timeout = 120)
{
	growers_run(DELOG_FLUSH_ASYNC, 0);
}
Test(liveness, growers_victim_aborts_single, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SINGLE, 0);
}
Test(liveness, growers_victim_commits_sync, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SYNC, GR_COMMITS);
}
Test(liveness, growers_after_reopen_sync, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SYNC, GR_REOPEN);
}
Test(liveness, growers_after_reopen_single, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SINGLE, GR_REOPEN | GR_COMMITS);
}
Test(liveness, growers_beside_a_begin_sync, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SYNC, GR_BEGIN);
}
Test(liveness, growers_beside_a_begin_async, .timeout = 120)
{
	growers_run(DELOG_FLUSH_ASYNC, GR_BEGIN | GR_REOPEN);
}
Test(liveness, growers_fresh_log_sync, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SYNC, GR_FRESH);
}
Test(liveness, growers_fresh_log_single, .timeout = 120)
{
	growers_run(DELOG_FLUSH_SINGLE, GR_FRESH | GR_BEGIN);
}
