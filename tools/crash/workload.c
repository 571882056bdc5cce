/*
 * workload.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: the threads of a session, which commit what spec.c says a round's
 * transactions hold: client_main (begin, log, commit, force or force_nowait, release,
 * write-back), the push callbacks, the releaser of the log-full workload, and
 * coord_main, which starts and stops them around the controller.
 *
 * Why apart: this is the workload as the engine sees it, concurrent and timed by the
 * controller; what it commits is fixed by the seed in spec.c, so the oracle can
 * regenerate it without running any of this.
 */
#include "crash.h"

#include <poll.h>

/* ---- the workload ---- */

void wl_fail(struct round *rd, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&rd->err_mu);
	if (!rd->err[0]) {
		va_start(ap, fmt);
		vsnprintf(rd->err, sizeof(rd->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&rd->err_mu);
}

static void amax(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load(a);

	while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

/* After -EAGAIN: wait a moment (the releaser sees the failure and moves the tail).
 * Returns true when the round is stopping. */
static bool nowait_backoff(struct round *rd, struct client *cl)
{
	struct timespec ts = { 0, 50000 };

	(void)rd;
	nanosleep(&ts, NULL);
	return atomic_load(cl->stop);
}

/*
 * delog_tx_log, marked as a wait for space like a blocking delog_tx_begin (the
 * releaser's signal): an item larger than what is left of the reservation grows it,
 * which waits for space unless @nowait.
 */
static int tx_log(struct round *rd, unsigned c, delog_tx *tx, bool nowait, uint64_t key,
		  const void *data, size_t len)
{
	int err;

	if (!nowait)
		atomic_store(&rd->blocked_since[c], now_ns());
	wd_enter(rd, c, "delog_tx_log", len);
	err = delog_tx_log(tx, key, data, len);
	wd_leave(rd, c);
	if (!nowait)
		atomic_store(&rd->blocked_since[c], 0);
	return err;
}

/* Item tracking: write back the unique items of this client's durable transactions up
 * to @n (one in written_1in of them), from *@wn on: with tracking that frees their
 * checkpoints once the relogged keys moved on, and the tail moves without any release.
 * Returns nonzero when a call failed (reported). */
static int write_back(struct round *rd, delog *log, unsigned c, uint32_t n, uint32_t *wn,
		      uint64_t *wr)
{
	uint64_t d = delog_durable_seq(log);
	int err = 0;

	for (; *wn <= n && cr_rec_seq(rd, c, *wn) && cr_rec_seq(rd, c, *wn) <= d; (*wn)++) {
		struct txspec w;
		uint64_t ws = cr_rec_seq(rd, c, *wn);

		if (rnd(wr) % rd->wl.written_1in)
			continue;
		tx_spec(rd, c, *wn, &w);
		atomic_store(&rd->written[c][*wn], 1);
		wd_enter(rd, c, "delog_item_written", ws);
		for (unsigned i = 0; !err && i < w.m; i++)
			err = delog_item_written(log, KEY_UNIQUE(c, *wn, i), ws);
		wd_leave(rd, c);
		atomic_fetch_add(&rd->item_writes, w.m);
		if (err) {
			wl_fail(rd, "client %u: delog_item_written(tx %u, %" PRIu64 "): %s", c, *wn,
				ws, delog_err_name(err));
			return err;
		}
	}
	return 0;
}

/* What one step of a client's transaction leads to: the next step, the transaction
 * begun again from the start, or the client's end (the failure reported). */
enum step {
	STEP_OK,
	STEP_AGAIN,
	STEP_STOP
};

/* The reservation that holds all of transaction @ts: its unique items, its shared keys
 * and three relog values. */
static uint64_t tx_reserve(const struct txspec *ts)
{
	uint64_t reserve = 3 * (sizeof(struct pl_hdr) + DELOG_ITEM_OVERHEAD);

	for (unsigned i = 0; i < ts->m; i++)
		reserve += ts->len[i] + DELOG_ITEM_OVERHEAD;
	reserve += (uint64_t)__builtin_popcount(ts->shared) *
		   (sizeof(struct pl_hdr) + DELOG_ITEM_OVERHEAD);
	return reserve;
}

/* Begin transaction @n into *@txp: NOWAIT (a full log is tried again after a backoff)
 * or blocking, with *@reserve, or less of it when the workload under-reserves. */
static enum step tx_begin(struct client *cl, uint32_t n, const struct txspec *ts, uint64_t *reserve,
			  delog_tx **txp)
{
	struct round *rd = cl->rd;
	delog *log = rd->log;
	unsigned c = cl->c;
	delog_tx *tx;
	int err;

	if (ts->nowait) {
		tx = NULL;
		wd_enter(rd, c, "delog_tx_begin NOWAIT", *reserve);
		err = delog_tx_begin(log, ts->under ? ts->len[0] + DELOG_ITEM_OVERHEAD : *reserve,
				     DELOG_TX_NOWAIT, &tx);
		wd_leave(rd, c);
		if (err == -EAGAIN) {
			/* Log full: nothing was begun, nothing is lost; try again once the
			 * releaser has moved the tail. */
			if (tx || delog_error(log)) {
				wl_fail(rd,
					"client %u tx %u: -EAGAIN from delog_tx_begin "
					"left %s",
					c, n, tx ? "a transaction" : "the log shut down");
				return STEP_STOP;
			}
			atomic_fetch_add(&rd->eagain_begin, 1);
			if (nowait_backoff(rd, cl))
				return STEP_STOP;
			return STEP_AGAIN;
		}
		if (!err)
			atomic_fetch_add(&rd->nowait_ok, 1);
	} else {
		if (ts->under && rd->wl.under_first) /* the first item: tx_log grows it */
			*reserve = ts->len[0] + DELOG_ITEM_OVERHEAD;
		else if (ts->under) /* all but the last unique item */
			*reserve -= ts->len[ts->m - 1] + DELOG_ITEM_OVERHEAD;
		atomic_store(&rd->blocked_since[c], now_ns());
		wd_enter(rd, c, "delog_tx_begin", *reserve);
		err = delog_tx_begin(log, *reserve, 0, &tx);
		wd_leave(rd, c);
		atomic_store(&rd->blocked_since[c], 0);
	}
	if (err) {
		wl_fail(rd, "client %u tx %u: delog_tx_begin%s: %s (the log's error: %s)", c, n,
			ts->nowait ? " (NOWAIT)" : "", delog_err_name(err),
			delog_error(log) ? delog_err_name(delog_error(log)) : "none");
		return STEP_STOP;
	}
	*txp = tx;
	return STEP_OK;
}

/* Log transaction @n's items into @tx: (a relog value replaced within it,) its unique
 * items, its shared keys, and the client's relog value.  0 or the first error. */
static int tx_fill(struct round *rd, unsigned c, uint32_t n, const struct txspec *ts, delog_tx *tx,
		   unsigned char *buf)
{
	unsigned char val[sizeof(struct pl_hdr)];
	int err = 0;

	if (ts->relog_twice) { /* replaced by the value below, in the transaction */
		pl_make(rd, KEY_RELOG(c), c, 0, IDX_RELOG, 0, 0, sizeof(val), val);
		err = tx_log(rd, c, tx, ts->nowait, KEY_RELOG(c), val, sizeof(val));
	}
	for (unsigned i = 0; !err && i < ts->m; i++) {
		pl_make(rd, KEY_UNIQUE(c, n, i), c, n, i, ts->m, ts->shared, ts->len[i], buf);
		err = tx_log(rd, c, tx, ts->nowait, KEY_UNIQUE(c, n, i), buf, ts->len[i]);
	}
	for (unsigned j = 0; !err && j < 16; j++) {
		if (!(ts->shared & (1u << j)))
			continue;
		pl_make(rd, KEY_SHARED(j), c, n, IDX_SHARED, 0, 0, sizeof(val), val);
		err = tx_log(rd, c, tx, ts->nowait, KEY_SHARED(j), val, sizeof(val));
	}
	if (!err) {
		pl_make(rd, KEY_RELOG(c), c, n, IDX_RELOG, 0, 0, sizeof(val), val);
		err = tx_log(rd, c, tx, ts->nowait, KEY_RELOG(c), val, sizeof(val));
	}
	return err;
}

/* tx_fill failed with @err: @tx is aborted, and the transaction begun again (NOWAIT out
 * of space; a deadlock of growing reservations, then with all of it reserved,
 * @full_reserve) or the client ends. */
static enum step tx_fill_failed(struct client *cl, uint32_t n, struct txspec *ts, delog_tx *tx,
				int err, uint64_t *reserve, uint64_t full_reserve)
{
	struct round *rd = cl->rd;
	delog *log = rd->log;
	unsigned c = cl->c;

	if (err == -EAGAIN && ts->nowait) {
		/* More space needed under NOWAIT: abort; the whole transaction is
		 * logged again later (were anything of this attempt to reach the log,
		 * the oracle finds the transaction twice or in the wrong checkpoint). */
		delog_tx_abort(tx);
		if (delog_error(log)) {
			wl_fail(rd,
				"client %u tx %u: -EAGAIN from delog_tx_log, and the log "
				"shut down",
				c, n);
			return STEP_STOP;
		}
		atomic_fetch_add(&rd->eagain_log, 1);
		if (nowait_backoff(rd, cl))
			return STEP_STOP;
		return STEP_AGAIN;
	}
	if (err == -EDEADLK && ts->under && !ts->nowait) {
		/* Every open transaction waited to grow its reservation (engine
		 * space.c S5): abort, and log the whole transaction again with all
		 * of it reserved, which never waits after its begin. */
		delog_tx_abort(tx);
		atomic_fetch_add(&rd->edeadlk, 1);
		ts->under = false;
		*reserve = full_reserve;
		return STEP_AGAIN;
	}
	delog_tx_abort(tx);
	wl_fail(rd, "client %u tx %u: delog_tx_log: %s", c, n, delog_err_name(err));
	return STEP_STOP;
}

/*
 * An event loop's force: ask (delog_force_nowait), then wait on the durable eventfd
 * until the watermark covers @seq.  0 (acknowledged, as a returned delog_force is), or
 * the error.  The clients share the one eventfd, and a read by one takes the wake-up
 * of the others, so each looks again after at most 2 ms.
 */
static int force_nowait_wait(delog *log, uint64_t seq)
{
	struct pollfd pfd = { .fd = delog_durable_fd(log), .events = POLLIN };
	int err = delog_force_nowait(log, seq);
	uint64_t v;

	while (!err && delog_durable_seq(log) < seq) {
		if (delog_error(log))
			return DELOG_ESHUTDOWN;
		if (poll(&pfd, 1, 2) == 1 && read(pfd.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -errno;
	}
	return err < 0 ? err : 0;
}

/* Commit transaction @n (published for the controller: submitted, then its sequence),
 * force it if the workload says so (acknowledged: by delog_force, or for one in two
 * by delog_force_nowait and the eventfd, a stream of the seed apart from tx_spec's so
 * that the draws of every other choice are those of before), write back what tracking
 * frees, and release behind the durable sequence by the workload's lag. */
static enum step tx_finish(struct client *cl, uint32_t n, const struct txspec *ts, delog_tx *tx,
			   uint32_t *wn, uint64_t *wr)
{
	struct round *rd = cl->rd;
	delog *log = rd->log;
	unsigned c = cl->c;
	uint64_t seq = 0;
	int err;

	atomic_store(&rd->sess[c][n], (uint8_t)rd->session);
	atomic_store(&rd->submitted[c], n);
	wd_enter(rd, c, "delog_tx_commit", n);
	err = delog_tx_commit(tx, &seq);
	wd_leave(rd, c);
	if (err) {
		wl_fail(rd, "client %u tx %u: delog_tx_commit: %s", c, n, delog_err_name(err));
		return STEP_STOP;
	}
	atomic_store_explicit(&rd->seqs[c][n], seq, memory_order_release);
	if (ts->force) {
		bool nowait = seed_for(rd->seed, 0x7100 + c, n) & 1;
		const char *how = nowait ? "delog_force_nowait + eventfd" : "delog_force";

		wd_enter(rd, c, how, seq);
		err = nowait ? force_nowait_wait(log, seq) : delog_force(log, seq);
		wd_leave(rd, c);
		if (err) {
			wl_fail(rd, "client %u tx %u: %s(%" PRIu64 "): %s", c, n, how, seq,
				delog_err_name(err));
			return STEP_STOP;
		}
		atomic_store(&rd->acked[c], n);
		atomic_fetch_add(&rd->ack_events, 1);
	}
	if (rd->wl.track && write_back(rd, log, c, n, wn, wr))
		return STEP_STOP;
	if (ts->release_lag) {
		uint64_t d = delog_durable_seq(log);

		if (d > ts->release_lag) {
			amax(&rd->released, d - ts->release_lag);
			wd_enter(rd, c, "delog_release", d - ts->release_lag);
			err = delog_release(log, d - ts->release_lag);
			wd_leave(rd, c);
			if (err) {
				wl_fail(rd, "client %u: delog_release(%" PRIu64 "): %s", c,
					d - ts->release_lag, delog_err_name(err));
				return STEP_STOP;
			}
		}
	}
	return STEP_OK;
}

/* A client thread: its seeded transactions (tx_spec), each begun (tx_begin), logged
 * (tx_fill), begun again from the start where the NOWAIT or deadlock rules say so
 * (tx_fill_failed), then committed, forced or not, written back and released
 * (tx_finish), its acknowledgements published for the controller. */
static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct round *rd = cl->rd;
	unsigned c = cl->c;
	unsigned char *buf = malloc(rd->wl.big_max + rd->wl.small_max + rd->wl.logbsize + 64);
	uint32_t wn = rd->start_n[c]; /* item tracking: next transaction to write back */
	uint64_t wr = seed_for(rd->seed, 0x1e3, c * 64 + rd->session);

	if (!buf) {
		wl_fail(rd, "client %u: out of memory", c);
		return NULL;
	}
	for (uint32_t n = rd->start_n[c]; n <= rd->wl.txs && !atomic_load(cl->stop); n++) {
		struct txspec ts;
		uint64_t reserve, full_reserve;
		delog_tx *tx = NULL;
		enum step st;

		tx_spec(rd, c, n, &ts);
		full_reserve = reserve = tx_reserve(&ts);
		do {
			st = tx_begin(cl, n, &ts, &reserve, &tx);
			if (st == STEP_OK) {
				int err = tx_fill(rd, c, n, &ts, tx, buf);

				if (err)
					st = tx_fill_failed(cl, n, &ts, tx, err, &reserve,
							    full_reserve);
			}
		} while (st == STEP_AGAIN);
		if (st == STEP_STOP || tx_finish(cl, n, &ts, tx, &wn, &wr) == STEP_STOP)
			break;
	}
	free(buf);
	atomic_fetch_add(&rd->clients_done, 1);
	return NULL;
}

/* Space: release what the log asks for (it must be durable: clamp to the watermark). */
static void on_push(void *arg, delog *log, uint64_t seq)
{
	struct round *rd = arg;
	uint64_t d = delog_durable_seq(log);

	if (seq > d)
		seq = d;
	if (!seq)
		return;
	amax(&rd->released, seq);
	wd_enter(rd, WD_PUSH, "delog_release", seq);
	(void)delog_release(log, seq);
	wd_leave(rd, WD_PUSH);
}

/* The full workload's push callback: the application is slow to write back; it only
 * notes the request (the releaser moves the tail, and only once the log is full). */
static void on_push_full(void *arg, delog *log, uint64_t seq)
{
	struct round *rd = arg;

	(void)log;
	(void)seq;
	atomic_fetch_add(&rd->push_calls, 1);
}

/*
 * The full workload's releaser: it moves the tail only when the log is full (a committer
 * waits for space in delog_tx_begin or delog_tx_log, or a NOWAIT begin failed since the
 * last burst), and then by a seeded amount (often a little, sometimes everything
 * durable), so the log fills to the edge again at once.  If everything durable is released and a committer still waits, it
 * forces the CIL (delog_force(0): I/O the controller delivers) and releases that too:
 * a waiting committer is always released, so the workload cannot deadlock.  After
 * everything was released, the CIL empty and a committer still waiting for
 * CR_FULL_STUCK_NS with no request pending at the disk and no new device event, it
 * reports the wait (progress must resume once the tail moves; G9).  Time the disk holds
 * requests does not count: in hold mode they complete only when the controller delivers
 * them, after it checked every crash state of the point it is at.
 */
static void *releaser_main(void *arg)
{
	struct coord *co = arg;
	struct round *rd = co->rd;
	delog *log = rd->log;
	uint64_t r = seed_for(rd->seed, 0x4e1ea5e, 0), last_eagain = 0, stuck_since = 0;
	uint64_t seen[CR_MAX_CLIENTS] = { 0 }, last_burst = 0;
	size_t stuck_ev = 0;
	int err;

	while (atomic_load(&rd->clients_done) < rd->wl.clients) {
		uint64_t t = now_ns(),
			 eg = atomic_load(&rd->eagain_begin) + atomic_load(&rd->eagain_log);
		uint64_t d, rel, target;
		bool full = eg != last_eagain, stop = atomic_load(&co->stop), waiting = false;
		struct timespec ts = { 0, 10000 + (long)(rnd(&r) % 50000) };

		for (unsigned c = 0; c < rd->wl.clients; c++) {
			uint64_t b = atomic_load(&rd->blocked_since[c]);

			/* A new wait; or one that outlasted the last release by 5 ms (that
			 * release was too small, or woke it too late): release again. */
			if (b && t > b + CR_FULL_WAIT_NS &&
			    (b != seen[c] || t > last_burst + 5000000ull)) {
				waiting = true;
				seen[c] = b;
			}
		}
		full |= waiting;
		if (!full && !stop) {
			nanosleep(&ts, NULL);
			continue;
		}
		last_eagain = eg;
		/* The watermark first: it never passes what was durable when it moved. */
		rel = atomic_load(&rd->released);
		d = delog_durable_seq(log);
		if (rel > d) {
			wl_fail(rd,
				"releaser: the workload's release watermark %" PRIu64
				" is past the log's durable sequence %" PRIu64,
				rel, d);
			break;
		}
		if (d <= rel) {
			struct delog_stats st = { .size = sizeof(st) };

			/* Everything durable is released: what holds the space is in the CIL.
			 * The clock runs only while the disk has nothing to deliver and saw
			 * no new event: requests held for the controller (which may spend
			 * seconds checking one crash point) are progress still to come. */
			if (!delog_stats(log, &st) && !st.cil_bytes && waiting) {
				size_t ev = iol_sim_trace_len(rd->dev);

				if (!stuck_since || ev != stuck_ev || iol_sim_pending(rd->dev)) {
					stuck_since = t;
					stuck_ev = ev;
				} else if (t - stuck_since > CR_FULL_STUCK_NS)
					wl_fail(rd,
						"a committer waits for space with everything "
						"released and the CIL empty (log used %" PRIu64
						" of %" PRIu64 ", reserved %" PRIu64
						", head %" PRIu64 "/%" PRIu64 ", tail %" PRIu64
						"/%" PRIu64 ", durable seq %" PRIu64
						", open seq %" PRIu64 ", released %" PRIu64
						", space waits %" PRIu64 ", checkpoints %" PRIu64
						"; G9: no progress once "
						"space is freed)",
						st.log_used, st.log_size, st.reserved_bytes,
						st.head_lsn >> 32, st.head_lsn & 0xffffffffu,
						st.tail_lsn >> 32, st.tail_lsn & 0xffffffffu,
						st.durable_seq, st.open_seq, rel, st.space_waits,
						st.checkpoints);
			} else {
				stuck_since = 0;
			}
			atomic_fetch_add(&rd->forces_rel, 1);
			wd_enter(rd, WD_REL, "delog_force", 0);
			err = delog_force(log, 0);
			wd_leave(rd, WD_REL);
			if (err)
				break;
			nanosleep(&ts, NULL);
			continue;
		}
		stuck_since = 0;
		switch (stop ? 0 :
			       rnd(&r) % (rd->wl.rel_all_1in < 2 ? 32 : 2 * rd->wl.rel_all_1in)) {
		case 0:
		case 2: /* rel_all_1in == 2: everything durable, half of the bursts */
			target = d;
			break;
		case 1:
			target = rel + 1 + rnd(&r) % ((d - rel + 1) / 2);
			break;
		default: /* a little: one or two checkpoints */
			target = rel + 1 + rnd(&r) % 2;
			break;
		}
		if (target > d)
			target = d;
		amax(&rd->released, target);
		wd_enter(rd, WD_REL, "delog_release", target);
		err = delog_release(log, target);
		wd_leave(rd, WD_REL);
		if (err) {
			wl_fail(rd,
				"releaser: delog_release(%" PRIu64 "), durable %" PRIu64 ": failed",
				target, d);
			break;
		}
		atomic_fetch_add(&rd->bursts, 1);
		last_burst = now_ns();
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * A session's start (sessions after the first): engine_open_dev has recovered the last
 * session's cut image through check_ckpt (@rc).  It must hold everything the cut point
 * had acknowledged, judged like any crash state; then the workload continues from it as
 * an application does: each client from its first transaction the image lost (those
 * numbers are written again, by this session: the payloads say which session wrote
 * them), everything recovered now acknowledged, releases renewed up to the cut's
 * watermark.  Returns false when the chain cannot go on (reported).
 */
static bool session_start(struct crash *cr, struct round *rd, delog *log, struct rctx *rc)
{
	struct summary *s = rc->s;
	char msg[240], what[240];
	uint64_t rel;

	summary_finish(rc);
	if (cr_judge(rd, s, rd->cut_durable, rd->cut_released, rd->cut_must_lo, rd->cut_acked, what,
		     sizeof(what))) {
		snprintf(msg, sizeof(msg),
			 "session %u: recovery of session %u's crash image "
			 "(engine_open_dev): %.160s",
			 rd->session, rd->session - 1, what);
		viol_add(cr, NULL, NULL, 0, msg, NULL);
		return false;
	}
	if (!s->nck && rd->cut_durable)
		return false; /* a new sequence would start at 1: numbering would collide */
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		uint32_t n = atomic_load(&rd->submitted[c]);

		/* The transactions in checkpoints the image holds (or released) stay. */
		while (n && (!cr_rec_seq(rd, c, n) || !s->nck || cr_rec_seq(rd, c, n) > s->hi))
			n--;
		for (uint32_t m = n + 1; m <= rd->wl.txs + 1; m++) {
			atomic_store(&rd->seqs[c][m], 0);
			atomic_store(&rd->sess[c][m], 0);
			atomic_store(&rd->written[c][m], 0);
		}
		rd->start_n[c] = n + 1;
		atomic_store(&rd->submitted[c], n);
		atomic_store(&rd->acked[c], n);
	}
	/* The release watermark goes back to the cut too: the numbers past it are written
	 * again by this session, and nothing of that is released yet.  (Keeping the last
	 * session's watermark left the releaser believing them released: it never
	 * released them, and committers waited for space for ever.) */
	rel = rd->cut_released < s->hi ? rd->cut_released : s->hi;
	atomic_store(&rd->released, s->nck ? rel : 0);
	if (s->nck && rel) {
		wd_enter(rd, WD_COORD, "delog_release", rel);
		(void)delog_release(log, rel);
		wd_leave(rd, WD_COORD);
	}
	return true;
}

void *coord_main(void *arg)
{
	struct coord *co = arg;
	struct round *rd = co->rd;
	struct delog_options o = { .size = sizeof(o),
				   .flush = rd->policy,
				   .logbufs = rd->wl.logbufs,
				   .logbsize = rd->wl.logbsize,
				   .push = rd->wl.releaser ? on_push_full : on_push,
				   .push_arg = rd,
				   .flags = rd->wl.track ? DELOG_OPEN_TRACK_ITEMS : 0,
				   /* full: small checkpoints, so a release frees a little */
				   .cil_push_bytes = rd->wl.cil_push };
	struct client cl[CR_MAX_CLIENTS];
	struct summary sum = { .ok = true };
	struct rctx rc = { .rd = rd, .s = &sum };
	delog *log = NULL;
	pthread_t rel_th;
	bool rel_started = false;
	int err;

	if (idle_cycles(co, &o)) {
		rd->chain_end = true;
		atomic_store(&rd->done, true);
		return NULL;
	}
	if (rd->session) {
		o.recover = cr_delog_cb;
		o.recover_arg = &rc;
	}
	wd_enter(rd, WD_COORD, "engine_open_dev", rd->session);
	err = engine_open_dev(rd->dev, &o, &log);
	wd_leave(rd, WD_COORD);
	free(rc.it);
	free(rc.txv);
	if (err && rd->session) {
		char msg[240];

		snprintf(msg, sizeof(msg),
			 "session %u: engine_open_dev on session %u's crash image "
			 "failed: %s%s%.100s",
			 rd->session, rd->session - 1, delog_err_name(err), sum.ok ? "" : ": ",
			 sum.ok ? "" : sum.what);
		viol_add(co->cr, NULL, NULL, 0, msg, NULL);
		rd->chain_end = true;
		atomic_store(&rd->done, true);
		return NULL;
	}
	if (err) {
		wl_fail(rd, "engine_open_dev: %s", delog_err_name(err));
		atomic_store(&rd->done, true);
		return NULL;
	}
	if (rd->session && !session_start(co->cr, rd, log, &rc)) {
		rd->chain_end = true;
		wd_enter(rd, WD_COORD, "delog_close", rd->session);
		(void)delog_close(log);
		wd_leave(rd, WD_COORD);
		atomic_store(&rd->done, true);
		return NULL;
	}
	pthread_mutex_lock(&rd->log_mu);
	rd->log = log;
	pthread_mutex_unlock(&rd->log_mu);
	atomic_store(&rd->arm_ev, iol_sim_trace_len(rd->dev));
	atomic_store(&rd->armed, true);
	wd_publish(co, log);
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		cl[c] = (struct client){ rd, c, 0, &co->stop };
		if (pthread_create(&cl[c].th, NULL, client_main, &cl[c])) {
			wl_fail(rd, "cannot start client %u", c);
			rd->wl.clients = c;
			break;
		}
	}
	if (rd->wl.releaser) {
		if (pthread_create(&rel_th, NULL, releaser_main, co))
			wl_fail(rd, "cannot start the releaser");
		else
			rel_started = true;
	}
	for (unsigned c = 0; c < rd->wl.clients; c++)
		pthread_join(cl[c].th, NULL);
	if (rel_started)
		pthread_join(rel_th, NULL);
	wd_publish(co, NULL); /* a rescue in progress finishes first */
	if (rd->wl.full) {
		struct delog_stats st = { .size = sizeof(st) };

		if (!delog_stats(log, &st))
			rd->space_waits = st.space_waits;
	}
	if (!rd->err[0]) {
		wd_enter(rd, WD_COORD, "delog_force", 0);
		err = delog_force(log, 0);
		wd_leave(rd, WD_COORD);
		if (err) {
			wl_fail(rd, "delog_force(0): %s", delog_err_name(err));
		} else {
			for (unsigned c = 0; c < rd->wl.clients; c++) {
				uint32_t sub = atomic_load(&rd->submitted[c]);

				if (sub && atomic_load(&rd->seqs[c][sub]))
					atomic_store(&rd->acked[c], sub);
			}
			atomic_fetch_add(&rd->ack_events, 1);
		}
	}
	pthread_mutex_lock(&rd->log_mu);
	rd->final_durable = delog_durable_seq(log);
	rd->log = NULL;
	pthread_mutex_unlock(&rd->log_mu);
	wd_enter(rd, WD_COORD, "delog_close", rd->session);
	err = delog_close(log);
	wd_leave(rd, WD_COORD);
	if (err)
		wl_fail(rd, "delog_close: %s", delog_err_name(err));
	atomic_store(&rd->done, true);
	return NULL;
}
