/*
 * regress.c - regression tests for three durability bugs, each a power cut the crash
 * workloads reached only rarely, rebuilt step by step on the simulated disk in hold mode
 * (the test owns every completion; crash_test.h).  Each runs under sync, async and single.
 *
 * regress/torn_head_over_tail (journal/log.c L12): 31 forced checkpoints fill most of a
 * 4 MiB log, delog_release(30) moves the tail up to checkpoint 31, and checkpoint 32
 * (~860 KiB, four 256 KiB records) wraps its third record onto the released space at
 * the start of the log.  Its first record is held back while the later ones complete, and
 * at every delivery the test takes the power cut that loses that first record and keeps
 * everything else.  The newest surviving record is then one of 31, and it names the old
 * tail: a writer that overwrote the space behind that tail before a record naming the new
 * one was durable made an acknowledged log unrecoverable (DELOG_ECORRUPT).  Recovery must
 * succeed with every acknowledged checkpoint.
 *
 * regress/relog_moves_tail_early (engine/space.c S3): with item tracking, checkpoints 1-3
 * each relog key K and two 100 KiB fillers; checkpoint 4 relogs them with ~1.7 MiB more
 * and is forced with its writes held (two log buffers).  Between single FIFO deliveries
 * of its records DELOG_TX_NOWAIT begins ask for 1 MiB each until one finds the log
 * short (a flush that issues is delivered at once; the granted ones are aborted).
 * Moving K's reference to 4 as soon as 4 was written let that begin move the tail to
 * 4's start, later records of 4 named it, and a power cut before 4's commit
 * recovered nothing, losing K's acknowledged value.  At every step the cut that keeps
 * everything written must recover checkpoint 3 (or later) with K's value from 3 (or
 * later).  Threads are joined with delivery running and every wait is bounded: the fixed
 * begin returns -EAGAIN instead of blocking.
 *
 * regress/big_checkpoint_stale_records (journal/log.c L13): a 10 MiB checkpoint in a
 * 64 MiB log is forced with every write delivered and every flush after its first write
 * held, then power is cut losing its first record.  Recovery (engine_open_dev, which
 * stamps past the head within recovery's window) must see checkpoints 1-3; a second
 * session then writes small forced checkpoints over the stamped region and beyond, and
 * after each the log must still recover (read-only, and at the end from a crash image)
 * with every acknowledged checkpoint.  A writer that let more than JRNL_UNFLUSHED_MAX
 * go unflushed left records of the lost checkpoint beyond the stamping, which the new
 * records could then run into (DELOG_EORPHAN).  This sequence alone does not make the
 * old writer fail here (the stale records never lined up), so the test also checks the
 * bound itself on the held disk, which does: with the flushes held nothing of the
 * checkpoint is durable, and no write of it may end more than the window past its start
 * (the old writer wrote all 10 MiB).
 */
#include "crash_test.h"

#include "format.h"
#include "jrnl.h"

#include <time.h>

#define RG_WINDOW ((uint64_t)JRNL_UNFLUSHED_MAX)
#define RG_K 0x4b4b4b4bull /* the relogged key of regress/relog_moves_tail_early */
#define RG_MAX_EV 65536

/* ---- disks, options, recovery ---- */

static struct iol_dev *rg_sim(uint64_t bytes, bool hold, uint64_t seed, const void *image)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = bytes,
				   .sector = 4096,
				   .seed = seed,
				   .hold = hold,
				   .image = image };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct iol_dev *dev = NULL;
	int err = iol_dev_open(NULL, &o, &dev);

	cr_assert_eq(err, 0, "sim: %s", delog_strerror(err));
	return dev;
}

struct rg_seen {
	uint64_t nck, first, last, kval;
	int bad;
};

static int rg_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		 size_t n)
{
	struct rg_seen *s = arg;

	if (s->nck && ck->seq != s->last + 1)
		s->bad++;
	if (!s->nck)
		s->first = ck->seq;
	s->nck++;
	s->last = ck->seq;
	for (size_t i = 0; i < n; i++) {
		uint64_t v[2];

		if (it[i].key != RG_K)
			continue;
		if (it[i].len != sizeof(v)) {
			s->bad++;
			continue;
		}
		memcpy(v, it[i].data, sizeof(v));
		if (v[0] != RG_K)
			s->bad++;
		s->kval = v[1];
	}
	return 0;
}

static struct delog_options rg_opts(enum delog_flush_policy pol, unsigned logbufs, unsigned flags,
				    uint64_t push_bytes, struct rg_seen *s)
{
	struct delog_options o = { .size = sizeof(o),
				   .flush = pol,
				   .logbufs = logbufs,
				   .flags = DELOG_OPEN_CREATE | flags,
				   .cil_push_bytes = push_bytes,
				   .recover = rg_cb,
				   .recover_arg = s };

	memset(s, 0, sizeof(*s));
	return o;
}

/* Recover a copy of @image on a healthy disk (engine_open_dev: stamps, then a clean
 * close); returns engine_open_dev's result. */
static int rg_recover(const void *image, uint64_t bytes, enum delog_flush_policy pol,
		      struct rg_seen *s)
{
	struct iol_dev *dev = rg_sim(bytes, false, 7, image);
	struct delog_options o = rg_opts(pol, 0, 0, 0, s);
	delog *log = NULL;
	int err = engine_open_dev(dev, &o, &log);

	if (!err)
		err = delog_close(log);
	iol_dev_close(dev);
	return err;
}

static int rg_replay(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *it,
		     size_t n)
{
	struct delog_checkpoint c = { .seq = ck->seq, .lsn = ck->commit_lsn, .nitems = n };

	(void)it;
	return rg_cb(priv, &c, NULL, 0);
}

/* Recover @dev read-only, as it reads now (jrnl_recover); fills @rep. */
static int rg_recover_ro(struct iol_dev *dev, struct rg_seen *s, struct jrnl_report *rep)
{
	struct jrnl_recover_opts o = { .replay = rg_replay, .priv = s, .read_only = true };
	struct jrnl_geom g;
	int err;

	memset(s, 0, sizeof(*s));
	err = jrnl_sb_read(dev, &g);
	if (!err)
		err = jrnl_recover(dev, &g, &o, rep);
	return err;
}

/* The image a power cut leaves when every unstable sector in [lost_off, lost_end) keeps
 * its old contents and every other one takes its newest. */
static void *rg_cut(struct iol_dev *dev, uint64_t bytes, uint64_t lost_off, uint64_t lost_end)
{
	size_t max = (size_t)(bytes / 4096), n;
	uint64_t *sec = malloc(max * sizeof(*sec));
	uint8_t *ch = malloc(max);
	void *img = malloc(bytes);
	int err;

	cr_assert(sec && ch && img);
	n = iol_sim_unstable(dev, sec, max);
	for (size_t i = 0; i < n; i++)
		ch[i] = sec[i] * 4096 >= lost_off && sec[i] * 4096 < lost_end ? 0 : 1;
	err = iol_sim_crash_choose(dev, ch, n, 1, img);
	cr_assert_eq(err, 0, "iol_sim_crash_choose: %s", delog_strerror(err));
	free(sec);
	free(ch);
	return img;
}

/* ---- the sim trace: requests pending, in submission order ---- */

struct rg_req {
	uint64_t id, off;
	uint32_t len, opf;
};

struct rg_trace {
	struct iol_sim_event ev[RG_MAX_EV];
	size_t nev;
	struct rg_req pend[256];
	size_t npend;
};

static void rg_trace_read(struct iol_dev *dev, struct rg_trace *t)
{
	t->nev = iol_sim_trace_copy(dev, 0, t->ev, RG_MAX_EV);
	cr_assert_lt(t->nev, (size_t)RG_MAX_EV, "trace too long");
	t->npend = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct iol_sim_event *e = &t->ev[i];

		if (e->type == IOL_SIM_EV_SUBMIT) {
			cr_assert_lt(t->npend, 256u);
			t->pend[t->npend++] = (struct rg_req){ e->req_id, e->off, e->len, e->opf };
		} else if (e->type == IOL_SIM_EV_COMPLETE) {
			for (size_t j = 0; j < t->npend; j++)
				if (t->pend[j].id == e->req_id) {
					memmove(&t->pend[j], &t->pend[j + 1],
						(t->npend - j - 1) * sizeof(t->pend[0]));
					t->npend--;
					break;
				}
		}
	}
}

/* The newest request id submitted so far. */
static uint64_t rg_last_id(const struct rg_trace *t)
{
	uint64_t id = 0;

	for (size_t i = 0; i < t->nev; i++)
		if (t->ev[i].type == IOL_SIM_EV_SUBMIT && t->ev[i].req_id > id)
			id = t->ev[i].req_id;
	return id;
}

static bool rg_is_write(uint32_t opf)
{
	return (opf & IOL_OP_MASK) == IOL_OP_WRITE;
}

/* The first write submitted at or after trace event @mark (0 if none yet). */
static bool rg_first_write(const struct rg_trace *t, size_t mark, struct rg_req *out)
{
	for (size_t i = mark; i < t->nev; i++) {
		const struct iol_sim_event *e = &t->ev[i];

		if (e->type == IOL_SIM_EV_SUBMIT && rg_is_write(e->opf)) {
			*out = (struct rg_req){ e->req_id, e->off, e->len, e->opf };
			return true;
		}
	}
	return false;
}

static uint64_t rg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait until nothing has been submitted or completed for @quiet_ms: the threads are
 * blocked on what is held (or done). */
static void rg_settle(struct iol_dev *dev, unsigned quiet_ms)
{
	size_t len = iol_sim_trace_len(dev);
	uint64_t since = rg_now_ms();

	while (rg_now_ms() - since < quiet_ms) {
		struct timespec ts = { 0, 200 * 1000 };
		size_t l;

		nanosleep(&ts, NULL);
		l = iol_sim_trace_len(dev);
		if (l != len) {
			len = l;
			since = rg_now_ms();
		}
	}
}

/* Deliver everything (random order) until @d's thread is done or @stop is set. */
static void rg_run_until(struct ct_drv *d, struct iol_dev *dev, atomic_int *stop, int val)
{
	uint64_t t0 = rg_now_ms();

	while (!(stop && atomic_load(stop) >= val)) {
		if (!iol_sim_deliver(dev, 1, IOL_SIM_RANDOM)) {
			if (atomic_load(&d->done) && !iol_sim_pending(dev))
				return;
			sched_yield();
		}
		cr_assert_lt(rg_now_ms() - t0, 15000u, "workload stuck");
	}
}

static void *rg_close_main(void *log)
{
	delog_close(log);
	return NULL;
}

/* ---- 1. a torn head must not overwrite the tail its last record names (L12) ---- */

struct b1 {
	struct iol_dev *dev;
	enum delog_flush_policy pol;
	atomic_int phase;       /* 1: 31 forced, 30 released, mark taken */
	size_t mark;            /* trace length before checkpoint 32 */
	_Atomic uint64_t acked; /* newest checkpoint whose force returned */
	int err;
};

static void *b1_main(void *arg)
{
	struct b1 *w = arg;
	struct rg_seen s;
	struct delog_options o = rg_opts(w->pol, 0, 0, 2u << 20, &s);
	delog *log = NULL;
	uint64_t seq = 0;
	int err;

	err = engine_open_dev(w->dev, &o, &log);
	for (unsigned n = 1; !err && n <= 31; n++) {
		err = ct_tx(log, 1, n, 4, 26000, true, &seq);
		if (!err)
			atomic_store(&w->acked, seq);
	}
	if (!err)
		err = delog_release(log, seq - 1);
	w->mark = iol_sim_trace_len(w->dev);
	atomic_store(&w->phase, 1);
	if (!err)
		err = ct_tx(log, 1, 32, 9, 96 << 10, false, &seq);
	if (!err)
		err = delog_force(log, seq);
	if (!err)
		atomic_store(&w->acked, seq);
	w->err = err;
	if (log)
		delog_close(log);
	return NULL;
}

static void b1_one(enum delog_flush_policy pol)
{
	struct b1 *w = calloc(1, sizeof(*w));
	struct rg_trace *t = calloc(1, sizeof(*t));
	struct ct_drv d;
	unsigned checks = 0;
	uint64_t t0 = rg_now_ms();
	const char *pn = delog_flush_policy_name(pol);

	cr_assert(w && t);
	w->dev = ct_sim(true, 3, NULL);
	w->pol = pol;
	ct_drv_start(&d, b1_main, w);
	rg_run_until(&d, w->dev, &w->phase, 1);
	for (;;) {
		struct rg_req r1;
		size_t np;

		rg_settle(w->dev, 20);
		rg_trace_read(w->dev, t);
		np = t->npend;
		if (rg_first_write(t, w->mark, &r1)) {
			/* Lose checkpoint 32's first record, keep everything else. */
			uint64_t acked = atomic_load(&w->acked);
			void *img = rg_cut(w->dev, CT_DEV_BYTES, r1.off, r1.off + r1.len);
			struct rg_seen s;
			int err = rg_recover(img, CT_DEV_BYTES, pol, &s);

			cr_assert_eq(err, 0,
				     "%s: step %u: recovery after losing checkpoint 32's "
				     "first record: %s",
				     pn, checks, delog_strerror(err));
			cr_assert(!s.bad && s.last >= acked,
				  "%s: step %u: recovered %llu..%llu, "
				  "%llu acknowledged",
				  pn, checks, (unsigned long long)s.first,
				  (unsigned long long)s.last, (unsigned long long)acked);
			free(img);
			checks++;
		}
		if (!np) {
			if (atomic_load(&d.done))
				break;
			continue;
		}
		/* Hold the oldest request (checkpoint 32's first record) while others can go. */
		iol_sim_deliver(w->dev, 1, np >= 2 ? IOL_SIM_LIFO : IOL_SIM_FIFO);
		cr_assert_lt(rg_now_ms() - t0, 15000u, "%s: stuck", pn);
	}
	pthread_join(d.th, NULL);
	cr_assert_eq(w->err, 0, "%s: workload: %s", pn, delog_strerror(w->err));
	cr_assert_gt(checks, 0u);
	iol_dev_close(w->dev);
	free(w);
	free(t);
}

Test(regress, torn_head_over_tail_sync, .timeout = 20)
{
	b1_one(DELOG_FLUSH_SYNC);
}

Test(regress, torn_head_over_tail_async, .timeout = 20)
{
	b1_one(DELOG_FLUSH_ASYNC);
}

Test(regress, torn_head_over_tail_single, .timeout = 20)
{
	b1_one(DELOG_FLUSH_SINGLE);
}

/* ---- 2. a relogged key pins its checkpoint until the relog is durable (S3) ---- */

struct b2 {
	struct iol_dev *dev;
	enum delog_flush_policy pol;
	delog *log;
	atomic_int phase; /* 1: about to force 4 (mark taken) */
	size_t mark;
	_Atomic uint64_t acked;  /* newest checkpoint whose force returned */
	_Atomic uint64_t kacked; /* K's value in it */
	int err;
};

/* One transaction: K (value @kval) and the fillers if @relog, then @extra 100 KiB keys
 * numbered from @first.  Commit, and force if asked. */
static int b2_tx(delog *log, bool relog, uint64_t kval, unsigned extra, unsigned first, bool force,
		 uint64_t *seq)
{
	static const uint32_t flen = 100 << 10;
	unsigned char *buf = calloc(1, flen);
	uint64_t k[2] = { RG_K, kval };
	unsigned nf = relog ? 2 : 0;
	delog_tx *tx;
	int err;

	cr_assert_not_null(buf);
	err = delog_tx_begin(log,
			     (uint64_t)(nf + extra) * (flen + DELOG_ITEM_OVERHEAD) +
				     (relog ? sizeof(k) + DELOG_ITEM_OVERHEAD : 0),
			     0, &tx);
	if (!err && relog)
		err = delog_tx_log(tx, RG_K, k, sizeof(k));
	for (unsigned i = 0; !err && i < nf + extra; i++) {
		uint64_t key = i < nf ? 0x1000 + i : 0x100000 + first + i - nf;

		memcpy(buf, &key, sizeof(key));
		memcpy(buf + 8, &kval, sizeof(kval));
		err = delog_tx_log(tx, key, buf, flen);
	}
	free(buf);
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	err = delog_tx_commit(tx, seq);
	if (!err && force)
		err = delog_force(log, *seq);
	return err;
}

static void *b2_main(void *arg)
{
	struct b2 *w = arg;
	struct rg_seen s;
	struct delog_options o = rg_opts(w->pol, 2, DELOG_OPEN_TRACK_ITEMS, 3u << 20, &s);
	uint64_t seq = 0;
	int err;

	err = engine_open_dev(w->dev, &o, &w->log);
	for (unsigned n = 1; !err && n <= 3; n++) {
		err = b2_tx(w->log, true, n, 0, 0, true, &seq);
		if (!err) {
			atomic_store(&w->kacked, n);
			atomic_store(&w->acked, seq);
		}
	}
	/* Checkpoint 4: K and the fillers again, and ~1.7 MiB more. */
	if (!err)
		err = b2_tx(w->log, true, 4, 0, 0, false, &seq);
	if (!err)
		err = b2_tx(w->log, false, 4, 9, 0, false, &seq);
	if (!err)
		err = b2_tx(w->log, false, 4, 8, 9, false, &seq);
	w->mark = iol_sim_trace_len(w->dev);
	atomic_store(&w->phase, 1);
	if (!err)
		err = delog_force(w->log, seq);
	if (!err) {
		atomic_store(&w->kacked, 4);
		atomic_store(&w->acked, seq);
	}
	w->err = err;
	return NULL;
}

struct b2_nowait {
	delog *log;
	int err;
};

/* NOWAIT begins of 1 MiB, holding each granted one, until the log runs short (the
 * path that looks for space to free); then abort them all. */
static void *b2_nowait_main(void *arg)
{
	struct b2_nowait *nw = arg;
	delog_tx *tx[4];
	unsigned n = 0;

	do
		nw->err = delog_tx_begin(nw->log, 1u << 20, DELOG_TX_NOWAIT, &tx[n]);
	while (!nw->err && ++n < 4);
	while (n)
		delog_tx_abort(tx[--n]);
	return NULL;
}

/* The power cut that keeps everything written must recover checkpoint 3 or later, with
 * K's value from it. */
static void b2_check(struct b2 *w, const char *pn, unsigned step)
{
	uint64_t kacked = atomic_load(&w->kacked), acked = atomic_load(&w->acked);
	void *img = rg_cut(w->dev, CT_DEV_BYTES, 0, 0);
	struct rg_seen s;
	int err = rg_recover(img, CT_DEV_BYTES, w->pol, &s);

	cr_assert_eq(err, 0, "%s: step %u: recovery: %s", pn, step, delog_strerror(err));
	cr_assert(!s.bad && s.last >= acked && s.kval >= kacked,
		  "%s: step %u: recovered %llu checkpoints (%llu..%llu), K = %llu; %llu "
		  "acknowledged, K = %llu (S3)",
		  pn, step, (unsigned long long)s.nck, (unsigned long long)s.first,
		  (unsigned long long)s.last, (unsigned long long)s.kval, (unsigned long long)acked,
		  (unsigned long long)kacked);
	free(img);
}

static void b2_one(enum delog_flush_policy pol)
{
	struct b2 *w = calloc(1, sizeof(*w));
	struct rg_trace *t = calloc(1, sizeof(*t));
	const char *pn = delog_flush_policy_name(pol);
	uint64_t t0 = rg_now_ms();
	struct ct_drv d;
	struct rg_req r1;
	unsigned step = 0;

	cr_assert(w && t);
	w->dev = ct_sim(true, 5, NULL);
	w->pol = pol;
	ct_drv_start(&d, b2_main, w);
	rg_run_until(&d, w->dev, &w->phase, 1);
	/* Checkpoint 4's writes are held; flushes issued before its first write go. */
	for (;;) {
		rg_settle(w->dev, 20);
		rg_trace_read(w->dev, t);
		if (rg_first_write(t, w->mark, &r1) || !t->npend)
			break;
		iol_sim_deliver(w->dev, 1, IOL_SIM_FIFO);
		cr_assert_lt(rg_now_ms() - t0, 15000u, "%s: stuck", pn);
	}
	for (;; step++) {
		struct b2_nowait nw = { .log = w->log };
		struct ct_drv dn;
		uint64_t tn = rg_now_ms();
		uint64_t last;

		b2_check(w, pn, step);
		if (atomic_load(&d.done))
			break;
		/* A NOWAIT begin; a flush it issues (the newest request) goes at once. */
		rg_trace_read(w->dev, t);
		last = rg_last_id(t);
		ct_drv_start(&dn, b2_nowait_main, &nw);
		while (!atomic_load(&dn.done) && rg_now_ms() - tn < 2000) {
			const struct rg_req *nr;

			rg_settle(w->dev, 5);
			rg_trace_read(w->dev, t);
			nr = t->npend ? &t->pend[t->npend - 1] : NULL;
			if (nr && nr->id > last && (nr->opf & IOL_OP_MASK) == IOL_OP_FLUSH)
				iol_sim_deliver(w->dev, 1, IOL_SIM_LIFO);
		}
		b2_check(w, pn, step);
		/* Then one more of checkpoint 4's requests completes (oldest first); join the
		 * NOWAIT thread with delivery running. */
		iol_sim_deliver(w->dev, 1, IOL_SIM_FIFO);
		while (!atomic_load(&dn.done)) {
			if (!iol_sim_deliver(w->dev, 1, IOL_SIM_FIFO))
				sched_yield();
			cr_assert_lt(rg_now_ms() - t0, 15000u, "%s: NOWAIT begin stuck", pn);
		}
		pthread_join(dn.th, NULL);
		cr_assert(nw.err == 0 || nw.err == -EAGAIN, "%s: NOWAIT begin: %s", pn,
			  delog_strerror(nw.err));
		rg_settle(w->dev, 10);
		cr_assert_lt(rg_now_ms() - t0, 15000u, "%s: stuck", pn);
	}
	pthread_join(d.th, NULL);
	cr_assert_eq(w->err, 0, "%s: workload: %s", pn, delog_strerror(w->err));
	/* Close with delivery running. */
	ct_drv_start(&d, rg_close_main, w->log);
	ct_drv_finish(&d, w->dev);
	iol_dev_close(w->dev);
	free(w);
	free(t);
}

Test(regress, relog_moves_tail_early_sync, .timeout = 20)
{
	b2_one(DELOG_FLUSH_SYNC);
}

Test(regress, relog_moves_tail_early_async, .timeout = 20)
{
	b2_one(DELOG_FLUSH_ASYNC);
}

Test(regress, relog_moves_tail_early_single, .timeout = 20)
{
	b2_one(DELOG_FLUSH_SINGLE);
}

/* ---- 3. nothing more than recovery's window is ever unflushed (L13) ---- */

#define B3_BYTES (4096 + (64ull << 20))

struct b3 {
	struct iol_dev *dev;
	enum delog_flush_policy pol;
	atomic_int phase; /* 1: checkpoints 1-3 forced, mark taken */
	size_t mark;
	_Atomic uint64_t acked;
	int err;
};

static void *b3_main(void *arg)
{
	struct b3 *w = arg;
	struct rg_seen s;
	struct delog_options o = rg_opts(w->pol, 0, 0, 32u << 20, &s);
	delog *log = NULL;
	uint64_t seq = 0;
	int err;

	err = engine_open_dev(w->dev, &o, &log);
	for (unsigned n = 1; !err && n <= 3; n++) {
		err = ct_tx(log, 1, n, 1, 1000, true, &seq);
		if (!err)
			atomic_store(&w->acked, seq);
	}
	w->mark = iol_sim_trace_len(w->dev);
	atomic_store(&w->phase, 1);
	/* Checkpoint 4: 10 MiB, five times recovery's window. */
	if (!err)
		err = ct_tx(log, 1, 4, 100, 100 << 10, true, &seq);
	if (!err)
		atomic_store(&w->acked, seq);
	w->err = err;
	if (log)
		delog_close(log);
	return NULL;
}

/* May @r be delivered while checkpoint 4's flushes are held?  Writes that carry no
 * flush and no FUA, the first write of checkpoint 4 (a PREFLUSH there covers only the
 * earlier, durable checkpoints), and flushes issued before that write. */
static bool b3_may(const struct rg_req *r, const struct rg_req *fw, bool have_fw)
{
	if (rg_is_write(r->opf))
		return !(r->opf & (IOL_PREFLUSH | IOL_FUA)) || (have_fw && r->id == fw->id);
	return !have_fw || r->id < fw->id;
}

/* A log of B3_BYTES formatted with a @window-byte unflushed bound, as an image. */
static void *b3_formatted(uint64_t window)
{
	struct iol_dev *dev = rg_sim(B3_BYTES, false, 8, NULL);
	struct jrnl_format_opts fo = { .sector = 4096, .window = window };
	void *img = malloc(B3_BYTES);

	cr_assert(img);
	cr_assert_eq(jrnl_format(dev, &fo, NULL), 0);
	cr_assert_eq(iol_sim_media(dev, 0, img, B3_BYTES), 0);
	iol_dev_close(dev);
	return img;
}

/* @window: 0 for the log delog_open formats (its default, the legacy 2 MiB here), else
 * the bound a log formatted beforehand names (JRNL_INCOMPAT_WINDOW): the writer must go
 * past the legacy bound (it honours the log's) and stop at the log's. */
static void b3_one(enum delog_flush_policy pol, uint64_t window)
{
	struct b3 *w = calloc(1, sizeof(*w));
	struct rg_trace *t = calloc(1, sizeof(*t));
	const char *pn = delog_flush_policy_name(pol);
	uint64_t t0 = rg_now_ms(), acked, furthest = 0;
	struct jrnl_report rep;
	struct iol_dev *dev2;
	struct rg_seen s;
	struct ct_drv d;
	struct rg_req fw = { 0 };
	bool have_fw = false;
	delog *log = NULL;
	void *img;
	int err;

	cr_assert(w && t);
	img = window ? b3_formatted(window) : NULL;
	w->dev = rg_sim(B3_BYTES, true, 9, img);
	free(img);
	w->pol = pol;
	ct_drv_start(&d, b3_main, w);
	rg_run_until(&d, w->dev, &w->phase, 1);
	/* Checkpoint 4: every write delivered, every flush (and FUA) after it held. */
	for (;;) {
		const struct rg_req *o, *n;

		rg_settle(w->dev, 20);
		rg_trace_read(w->dev, t);
		have_fw = rg_first_write(t, w->mark, &fw);
		if (!t->npend && !have_fw && !atomic_load(&d.done))
			continue; /* still building checkpoint 4 */
		if (!t->npend)
			break;
		o = &t->pend[0];
		n = &t->pend[t->npend - 1];
		if (b3_may(o, &fw, have_fw))
			iol_sim_deliver(w->dev, 1, IOL_SIM_FIFO);
		else if (b3_may(n, &fw, have_fw))
			iol_sim_deliver(w->dev, 1, IOL_SIM_LIFO);
		else
			break;
		cr_assert_lt(rg_now_ms() - t0, 15000u, "%s: stuck", pn);
	}
	cr_assert(have_fw, "%s: checkpoint 4 wrote nothing (%s)", pn, delog_strerror(w->err));
	/* Nothing of checkpoint 4 is durable yet: every write of it must lie within the
	 * window past its first (L13). */
	for (size_t i = w->mark; i < t->nev; i++) {
		const struct iol_sim_event *e = &t->ev[i];

		if (e->type == IOL_SIM_EV_SUBMIT && rg_is_write(e->opf) && e->off >= fw.off &&
		    e->off + e->len - fw.off > furthest)
			furthest = e->off + e->len - fw.off;
	}
	acked = atomic_load(&w->acked);
	img = rg_cut(w->dev, B3_BYTES, fw.off, fw.off + fw.len);
	ct_drv_finish(&d, w->dev);
	iol_dev_close(w->dev);

	/* Recover (stamping past the head), then small checkpoints over the stamped
	 * region and beyond; the log must recover after every one. */
	dev2 = rg_sim(B3_BYTES, false, 11, img);
	free(img);
	{
		struct delog_options o = rg_opts(pol, 0, 0, 0, &s);

		err = engine_open_dev(dev2, &o, &log);
	}
	cr_assert_eq(err, 0, "%s: recovery after losing checkpoint 4's first record: %s", pn,
		     delog_strerror(err));
	cr_assert(!s.bad && s.last >= acked, "%s: recovered up to %llu, %llu acknowledged", pn,
		  (unsigned long long)s.last, (unsigned long long)acked);
	for (unsigned n = 1; n <= 640; n++) {
		uint64_t seq;

		err = ct_tx(log, 2, n, 1, 200, true, &seq);
		cr_assert_eq(err, 0, "%s: session 2, checkpoint %u: %s", pn, n,
			     delog_strerror(err));
		acked = seq;
		if (n % 16)
			continue;
		err = rg_recover_ro(dev2, &s, &rep);
		cr_assert_eq(err, 0,
			     "%s: recovery after %u checkpoints of the second session: "
			     "%s (%s)",
			     pn, n, delog_strerror(err), rep.corrupt_what);
		cr_assert(!s.bad && s.last == acked,
			  "%s: after %u: recovered up to %llu, %llu "
			  "acknowledged",
			  pn, n, (unsigned long long)s.last, (unsigned long long)acked);
	}
	/* An unclean stop: everything durable, recovered on a copy. */
	img = rg_cut(dev2, B3_BYTES, 0, 0);
	err = rg_recover(img, B3_BYTES, pol, &s);
	cr_assert_eq(err, 0, "%s: recovery after the second session: %s", pn, delog_strerror(err));
	cr_assert(!s.bad && s.last == acked, "%s: recovered up to %llu, %llu acknowledged", pn,
		  (unsigned long long)s.last, (unsigned long long)acked);
	free(img);
	delog_close(log);
	iol_dev_close(dev2);
	cr_assert_leq(furthest, window ? window : RG_WINDOW,
		      "%s: %llu bytes written past the durable point, "
		      "more than the window (L13)",
		      pn, (unsigned long long)furthest);
	if (window)
		cr_assert_gt(furthest, RG_WINDOW, "%s: the writer kept to the legacy window", pn);
	free(w);
	free(t);
}

Test(regress, big_checkpoint_stale_records_sync, .timeout = 40)
{
	b3_one(DELOG_FLUSH_SYNC, 0);
}

Test(regress, big_checkpoint_stale_records_async, .timeout = 40)
{
	b3_one(DELOG_FLUSH_ASYNC, 0);
}

Test(regress, big_checkpoint_stale_records_single, .timeout = 40)
{
	b3_one(DELOG_FLUSH_SINGLE, 0);
}

Test(regress, big_checkpoint_stale_records_named_window, .timeout = 40)
{
	b3_one(DELOG_FLUSH_SINGLE, 6ull << 20);
}
