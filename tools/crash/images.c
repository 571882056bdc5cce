/*
 * images.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: turning crash states into recovered summaries: the cache of distinct
 * images (a state's image is recovered once however many crash points produce it),
 * and the worker threads that patch their own sim disk to an image, run the journal's
 * recovery read-only on it, and for a sample open it with engine_open_dev and continue
 * it across a second crash (full_check); and the judgement of each state's summary by
 * the oracle (check_state), with the state's image for --save.
 *
 * Why apart: recovering images is the costly part and runs on --jobs threads; it
 * owns the image cache and the workers' sim disks, and calls the oracle for each.
 * Recovery runs through the journal's API (jrnl_recover, jrnl_sb_read: journal/include),
 * not <delog.h>: the checker must recover an image read-only, without the stamping
 * delog_open does, which the engine_open_dev sample exercises separately.
 */
#include "crash.h"

#include <poll.h>

/* ---- crash points, states, cache ---- */

struct entry *cache_get(struct crash *cr, uint64_t hash, bool *created)
{
	size_t mask, i;

	if ((cr->tab_n + 1) * 2 > cr->tab_cap) {
		size_t cap = cr->tab_cap ? cr->tab_cap * 2 : 4096;
		struct entry **t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t j = 0; j < cr->tab_cap; j++) {
			struct entry *e = cr->tab[j];

			if (!e)
				continue;
			for (i = e->hash & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = e;
		}
		free(cr->tab);
		cr->tab = t;
		cr->tab_cap = cap;
	}
	mask = cr->tab_cap - 1;
	for (i = hash & mask; cr->tab[i]; i = (i + 1) & mask) {
		if (cr->tab[i]->hash == hash) {
			*created = false;
			return cr->tab[i];
		}
	}
	cr->tab[i] = calloc(1, sizeof(struct entry));
	if (!cr->tab[i])
		return NULL;
	cr->tab[i]->hash = hash;
	cr->tab_n++;
	*created = true;
	return cr->tab[i];
}

void cache_clear(struct crash *cr)
{
	for (size_t i = 0; i < cr->tab_cap; i++)
		free(cr->tab[i]);
	if (cr->tab) /* no table yet before the first round */
		memset(cr->tab, 0, cr->tab_cap * sizeof(*cr->tab));
	cr->tab_n = 0;
}

/* ---- workers: recover one image each ---- */

/* What moves when the log frees space: its tail, head, use and reservations, its
 * writes, flushes and durable watermark.  Not the force and begin counters: the
 * retries below move those themselves. */
struct space_sig {
	uint64_t v[10];
};

static void space_sig(delog *log, struct space_sig *g)
{
	struct delog_stats st = { .size = sizeof(st) };

	(void)delog_stats(log, &st);
	*g = (struct space_sig){ { st.tail_lsn, st.head_lsn, st.log_used, st.reserved_bytes,
				   st.cil_bytes, st.records, st.flushes, st.device_flushes,
				   st.durable_seq, st.checkpoints } };
}

/*
 * The first begin after recovery (G9).  The image may be of a full log (the log-full
 * workload, or a random round releasing at the edge or not at all): a blocking begin
 * could wait forever here (nobody else runs), so NOWAIT, and on -EAGAIN what an
 * application can do: force, release everything recovered, wait for the log, retry.
 * The space comes back through the log's own work (the push thread's cover record and
 * its flush), which takes as long as the disk takes, so the wait is bounded by
 * progress, not by a count of retries: each wait ends when the durable fd fires or
 * after a millisecond, and whatever moved in delog_stats (space_sig) is progress.  The
 * log is stuck only when nothing moved while the disk had no request pending for
 * --stall-bound seconds in all, the liveness checks' own bound; a log that keeps moving
 * without granting the begin is stuck after CR_STALL_NS, the final backstop.  Returns
 * the begin's result (-EAGAIN: stuck).
 */
static int begin_after_full(struct crash *cr, struct iol_dev *dev, delog *log, uint64_t reserve,
			    const struct summary *ref, bool *released, delog_tx **tx)
{
	uint64_t quiet = 0, bound = (uint64_t)cr->stall_bound * 1000000000ull;
	uint64_t t0 = now_ns(), last = t0;
	struct pollfd pfd = { .fd = delog_durable_fd(log), .events = POLLIN };
	struct space_sig before, after;
	uint64_t v;
	int err;

	for (;;) {
		err = delog_tx_begin(log, reserve, DELOG_TX_NOWAIT, tx);
		if (err != -EAGAIN)
			return err;
		space_sig(log, &before);
		(void)delog_force(log, 0);
		if (ref->nck) { /* the recovered checkpoints only */
			(void)delog_release(log, ref->hi);
			*released = true;
		}
		if (poll(&pfd, 1, 1) == 1 && read(pfd.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -errno;
		space_sig(log, &after);
		if (memcmp(&before, &after, sizeof(before)) || iol_sim_pending(dev))
			quiet = 0;
		else
			quiet += now_ns() - last;
		last = now_ns();
		if (quiet > bound || last - t0 > CR_STALL_NS)
			return delog_tx_begin(log, reserve, DELOG_TX_NOWAIT, tx);
	}
}

struct latch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned left;
	int err;
};

static void latch_end(void *priv, int status)
{
	struct latch *l = priv;

	pthread_mutex_lock(&l->mu);
	if (status && !l->err)
		l->err = status;
	if (--l->left == 0)
		pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* Write the sectors in @v (ascending) from @buf (a full device image) with FUA. */
static int dev_write_sectors(struct iol_dev *dev, unsigned char *buf, const uint64_t *v, size_t n,
			     uint32_t sector)
{
	struct latch l = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1, 0 };
	int err = 0;

	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && v[j] == v[j - 1] + 1 && j - i < 64)
			j++;
		pthread_mutex_lock(&l.mu);
		l.left++;
		pthread_mutex_unlock(&l.mu);
		err = iol_rw_submit(dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), v[i] * sector,
				    buf + v[i] * sector, (j - i) * sector, latch_end, &l);
		if (err) {
			latch_end(&l, err);
			break;
		}
		i = j;
	}
	latch_end(&l, 0);
	pthread_mutex_lock(&l.mu);
	while (l.left)
		pthread_cond_wait(&l.cv, &l.mu);
	pthread_mutex_unlock(&l.mu);
	pthread_mutex_destroy(&l.mu);
	pthread_cond_destroy(&l.cv);
	return err ? err : l.err;
}

static const unsigned char *state_sector(const struct cpoint *cp, const uint8_t *choice,
					 uint64_t sec, uint32_t sector)
{
	size_t i = iol_sim_unstable_index(cp->u, cp->k, sec);

	if (i == SIZE_MAX || choice[i] == 0)
		return cp->old + sec * sector;
	if (choice[i] > 2) /* versions profile: intermediate version choice - 2 */
		return cp->vdata + (cp->voff[i] + choice[i] - 3) * sector;
	if (choice[i] == 1)
		return cp->newd + i * sector;
	return cp->garb + (choice[cp->k] * cp->k + i) * sector;
}

/* Bring the worker's disk to the state's image (only differing sectors are written). */
static int worker_sync(struct worker *w, const struct cpoint *cp, const uint8_t *choice)
{
	struct crash *cr = w->cr;
	uint32_t sec = cr->sector;
	uint64_t nsec = cr->dev_max / sec;
	size_t nc = 0, nw = 0;
	uint64_t *wr;
	int err;

	if (w->base_cp && w->base_cp != cp->id) {
		/* Same round: only sectors we patched or the media changed since can differ. */
		size_t lo = 0, hi = cr->nchg, nd = 0;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (cr->chg[mid].cp <= w->base_cp)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (cr_grow((void **)&w->cand, &w->ccap, w->ndirty + cr->nchg - lo + 1, 8))
			return -ENOMEM;
		memcpy(w->cand, w->dirty, w->ndirty * 8);
		nd = w->ndirty;
		for (size_t i = lo; i < cr->nchg && cr->chg[i].cp <= cp->id; i++)
			w->cand[nd++] = cr->chg[i].sector;
		qsort(w->cand, nd, 8, cr_cmp_u64);
		if (cr_grow((void **)&w->dirty, &w->dcap, nd + 1, 8))
			return -ENOMEM;
		w->ndirty = 0;
		for (size_t i = 0; i < nd; i++) {
			uint64_t s = w->cand[i];

			if (i && s == w->cand[i - 1])
				continue;
			if (memcmp(w->shadow + s * sec, cp->old + s * sec, sec))
				w->dirty[w->ndirty++] = s;
		}
		w->base_cp = cp->id;
	} else if (w->base_cp != cp->id) {
		/* New media: which sectors of ours differ from it. */
		w->ndirty = 0;
		for (uint64_t s = 0; s < nsec; s++) {
			if (memcmp(w->shadow + s * sec, cp->old + s * sec, sec)) {
				if (cr_grow((void **)&w->dirty, &w->dcap, w->ndirty + 1, 8))
					return -ENOMEM;
				w->dirty[w->ndirty++] = s;
			}
		}
		w->base_cp = cp->id;
	}
	/* Candidates: dirty sectors and the unstable ones, merged. */
	if (cr_grow((void **)&w->cand, &w->ccap, w->ndirty + cp->k + 1, 8))
		return -ENOMEM;
	for (size_t i = 0, j = 0; i < w->ndirty || j < cp->k;) {
		uint64_t a = i < w->ndirty ? w->dirty[i] : UINT64_MAX;
		uint64_t b = j < cp->k ? cp->u[j] : UINT64_MAX;

		w->cand[nc++] = a < b ? a : b;
		if (a <= b)
			i++;
		if (b <= a)
			j++;
	}
	/* Write what differs; the new dirty list is what differs from the media. */
	wr = malloc((nc ? nc : 1) * sizeof(*wr));
	if (!wr || cr_grow((void **)&w->dirty, &w->dcap, nc + 1, 8)) {
		free(wr);
		return -ENOMEM;
	}
	w->ndirty = 0;
	for (size_t i = 0; i < nc; i++) {
		uint64_t s = w->cand[i];
		const unsigned char *t = state_sector(cp, choice, s, sec);

		if (memcmp(w->shadow + s * sec, t, sec)) {
			memcpy(w->shadow + s * sec, t, sec);
			wr[nw++] = s;
		}
		if (t != cp->old + s * sec && memcmp(t, cp->old + s * sec, sec))
			w->dirty[w->ndirty++] = s;
	}
	err = nw ? dev_write_sectors(w->dev, w->shadow, wr, nw, sec) : 0;
	free(wr);
	/* Read errors: what the last state made unreadable reads again, then this state's. */
	if (!err && w->eio)
		err = iol_sim_set_unreadable(w->dev, 0, nsec, false);
	w->eio = false;
	for (size_t i = 0; !err && i < cp->k; i++) {
		if (choice[i] == 2 && choice[cp->k] == CR_FILL_EIO) {
			err = iol_sim_set_unreadable(w->dev, cp->u[i], 1, true);
			w->eio = true;
		}
	}
	return err;
}

static void recover_ro(struct worker *w, struct iol_dev *dev, const struct jrnl_geom *g,
		       const struct cont *cont, uint64_t cont_base, struct summary *s)
{
	struct jrnl_recover_opts ro = { .replay = cr_jrnl_cb, .read_only = true };
	struct jrnl_report rep;

	memset(s, 0, sizeof(*s));
	s->ok = true;
	w->rc.rd = w->cr->rd;
	w->rc.s = s;
	w->rc.cont = cont;
	w->rc.cont_base = cont_base;
	ro.priv = &w->rc;
	s->err = jrnl_recover(dev, g, &ro, &rep);
	if (s->err)
		cr_bad(s, "recovery failed: %s%s%s", delog_err_name(s->err),
		       rep.corruption ? ": " : "", rep.corruption ? rep.corrupt_what : "");
	summary_finish(&w->rc);
}

static bool same_set(const struct summary *a, const struct summary *b, unsigned clients)
{
	if (a->nck != b->nck || (a->nck && (a->lo != b->lo || a->hi != b->hi)))
		return false;
	for (unsigned c = 0; c < clients; c++)
		if (a->last_n[c] != b->last_n[c])
			return false;
	return true;
}

/* G6: what recovery found (@s3) after the continuation of an image that recovered @ref
 * and a crash: the old set plus the CR_CONT_TXS new transactions (only the new ones
 * must be there if the continuation released the old set: @released). */
static bool cont_good(const struct round *rd, const struct summary *ref, const struct summary *s3,
		      bool released)
{
	uint64_t base = ref->nck ? ref->hi : 0;
	bool good = s3->ok && s3->nck == ref->nck + CR_CONT_TXS && s3->hi == base + CR_CONT_TXS &&
		    (!ref->nck || s3->lo == ref->lo) && s3->last_n[CR_MAX_CLIENTS] == CR_CONT_TXS;

	if (released)
		return s3->ok && s3->hi == base + CR_CONT_TXS && s3->nck >= CR_CONT_TXS &&
		       s3->last_n[CR_MAX_CLIENTS] == CR_CONT_TXS;
	for (unsigned c = 0; good && c < rd->wl.clients; c++)
		good = s3->last_n[c] == ref->last_n[c];
	return good;
}

/* The application's path on this image: engine_open_dev, the same set; then continue
 * with CR_CONT_TXS forced transactions, crash again, recover: old set plus the new. */
static void full_check(struct worker *w, const struct cpoint *cp, const uint8_t *choice,
		       const struct summary *ref)
{
	struct crash *cr = w->cr;
	struct round *rd = cr->rd;
	uint64_t seed = seed_for(rd->seed, 0xf011, cp->id);
	struct delog_options o = { .size = sizeof(o),
				   .flush = rd->policy,
				   .logbufs = rd->wl.logbufs,
				   .logbsize = rd->wl.logbsize,
				   .flags = rd->wl.track ? DELOG_OPEN_TRACK_ITEMS : 0,
				   .cil_push_bytes = rd->wl.cil_push };
	struct summary s2, s3;
	struct rctx rc2 = { .rd = rd, .s = &s2 };
	struct cont ct = { 0 };
	struct jrnl_geom g;
	struct iol_dev *d2, *d3 = NULL;
	unsigned char *img = NULL;
	delog *log = NULL;
	char msg[240];
	bool cont_released = false;
	int err;

	atomic_fetch_add(&cr->full_opens, 1);
	if (rd->gate)
		atomic_fetch_add(&cr->full_gated, 1);
	/* Through the flush gate when the round's disk has it: recovery's stamping, its
	 * flush and the continued session's I/O then go through the gate as well. */
	d2 = ct_sim_dev(rd->dev_bytes, cr->sector, seed, false, rd->dev_flags, w->shadow);
	if (!d2) {
		viol_add(cr, cp, choice, cp->k, "full check: cannot open a sim disk", NULL);
		return;
	}
	memset(&s2, 0, sizeof(s2));
	s2.ok = true;
	o.recover = cr_delog_cb;
	o.recover_arg = &rc2;
	err = engine_open_dev(d2, &o, &log);
	if (err) {
		if (!ref->err) {
			snprintf(msg, sizeof(msg),
				 "engine_open_dev failed (%s) on an image that "
				 "recovers read-only",
				 delog_err_name(err));
			viol_add(cr, cp, choice, cp->k, msg, w->shadow);
		}
		goto out;
	}
	summary_finish(&rc2);
	engine_delay_cover(log, (uint64_t)cr->cover_delay_ms * 1000000u);
	if (!s2.ok || !same_set(&s2, ref, rd->wl.clients)) {
		snprintf(msg, sizeof(msg),
			 "engine_open_dev recovered %" PRIu64 "..%" PRIu64
			 " (%.80s), read-only recovery %" PRIu64 "..%" PRIu64 " (G5)",
			 s2.lo, s2.hi, s2.ok ? "ok" : s2.what, ref->lo, ref->hi);
		viol_add(cr, cp, choice, cp->k, msg, w->shadow);
		goto out;
	}
	/* Continue: G6. */
	for (uint32_t n = 1; n <= CR_CONT_TXS; n++) {
		unsigned char a[64], b[sizeof(struct pl_hdr)];
		delog_tx *tx;
		uint64_t seq;

		pl_make(rd, KEY_UNIQUE(CR_MAX_CLIENTS, n, 0), CR_MAX_CLIENTS, n, 0, 1, 0, sizeof(a),
			a);
		pl_make(rd, KEY_RELOG(CR_MAX_CLIENTS), CR_MAX_CLIENTS, n, IDX_RELOG, 0, 0,
			sizeof(b), b);
		err = begin_after_full(cr, d2, log, 2 * (sizeof(a) + DELOG_ITEM_OVERHEAD), ref,
				       &cont_released, &tx);
		if (err == -EAGAIN) {
			struct delog_stats st = { .size = sizeof(st) };

			(void)delog_stats(log, &st);
			snprintf(msg, sizeof(msg),
				 "after recovery of a full log (%" PRIu64 " of %" PRIu64
				 " bytes used, checkpoints %" PRIu64 "..%" PRIu64
				 "), delog_tx_begin gets -EAGAIN even after delog_release(%" PRIu64
				 ") while the log made no progress for %u s of an idle disk: "
				 "nothing can free the space (G9)",
				 st.log_used, st.log_size, ref->lo, ref->hi, ref->hi,
				 cr->stall_bound);
			viol_add(cr, cp, choice, cp->k, msg, w->shadow);
			goto out;
		}
		if (!err) {
			err = delog_tx_log(tx, KEY_UNIQUE(CR_MAX_CLIENTS, n, 0), a, sizeof(a));
			if (!err)
				err = delog_tx_log(tx, KEY_RELOG(CR_MAX_CLIENTS), b, sizeof(b));
			if (err)
				delog_tx_abort(tx);
			else
				err = delog_tx_commit(tx, &seq);
		}
		if (!err) {
			ct.seq[n] = seq;
			ct.n = n;
			err = delog_force(log, seq);
		}
		if (err) {
			snprintf(msg, sizeof(msg), "continuation tx %u after recovery: %s", n,
				 delog_err_name(err));
			viol_add(cr, cp, choice, cp->k, msg, w->shadow);
			goto out;
		}
	}
	img = malloc(rd->dev_bytes);
	if (!img || iol_sim_crash(d2, seed, cr->profile, img, NULL))
		goto out;
	delog_close(log);
	log = NULL;
	d3 = ct_sim_dev(rd->dev_bytes, cr->sector, seed, false, CT_DEV_RECOVER, img);
	if (!d3 || jrnl_sb_read(d3, &g))
		goto out;
	recover_ro(w, d3, &g, &ct, ref->nck ? ref->hi : 0, &s3);
	atomic_fetch_add(&cr->continuations, 1);
	if (!cont_good(rd, ref, &s3, cont_released)) {
		snprintf(msg, sizeof(msg),
			 "after recovery (%" PRIu64 "..%" PRIu64 "), %u "
			 "forced transactions and a crash, recovery found %" PRIu64 "..%" PRIu64
			 " (%.80s) (G6)",
			 ref->lo, ref->hi, CR_CONT_TXS, s3.lo, s3.hi,
			 s3.ok ? "not the old set plus the new" : s3.what);
		viol_add(cr, cp, choice, cp->k, msg, img);
	}
out:
	if (log)
		delog_close(log);
	iol_dev_close(d2);
	if (d3)
		iol_dev_close(d3);
	free(img);
	free(rc2.it);
	free(rc2.txv);
}

static void run_job(struct worker *w, const struct job *j)
{
	struct crash *cr = w->cr;
	const struct cpoint *cp = &cr->cp;
	int err;

	if (w->sector != cr->sector) {
		/* The round's sector size differs from the disk's: a new disk (all zeroes). */
		iol_dev_close(w->dev);
		w->dev = ct_sim_dev(cr->dev_max, cr->sector, seed_for(cr->seed, 0x3003, w->sector),
				    false, CT_DEV_RECOVER, NULL);
		if (!w->dev) {
			memset(&j->e->s, 0, sizeof(j->e->s));
			j->e->s.err = -ENOMEM;
			snprintf(j->e->s.what, sizeof(j->e->s.what), "checker: cannot open a disk");
			w->sector = 0;
			return;
		}
		memset(w->shadow, 0, cr->dev_max);
		w->sector = cr->sector;
		w->g.sector = 0;
	}
	if (w->base_epoch != cr->epoch || !w->g.sector) {
		w->base_epoch = cr->epoch;
		w->base_cp = 0;
		w->g.sector = 0;
	}
	err = worker_sync(w, cp, j->choice);
	if (!err && !w->g.sector)
		err = jrnl_sb_read(w->dev, &w->g);
	if (err) {
		memset(&j->e->s, 0, sizeof(j->e->s));
		j->e->s.err = err;
		snprintf(j->e->s.what, sizeof(j->e->s.what), "checker: cannot set up the image: %s",
			 delog_err_name(err));
		w->g.sector = 0;
		return;
	}
	if (cr->verify) {
		uint64_t h = 0;
		unsigned char *img = malloc(cr->rd->dev_bytes);

		/* The disk itself, read back through the iolayer, must hash as the state. */
		if (img && !iol_rw_wait(w->dev, IOL_OPF(IOL_OP_READ, 0), 0, w->shadow,
					cr->rd->dev_bytes, NULL)) {
			for (uint64_t s = 0; s < cr->rd->dev_bytes / cr->sector; s++)
				h += sector_hash(w->shadow + s * cr->sector, cr->sector, s);
			if (h != j->e->hash)
				viol_add(cr, cp, j->choice, cp->k,
					 "checker: the recovery disk does not "
					 "hold the state's image (hash mismatch)",
					 NULL);
		}
		free(img);
	}
	recover_ro(w, w->dev, &w->g, NULL, 0, &j->e->s);
	if (cr->full_every && atomic_fetch_add(&cr->full_seq, 1) % cr->full_every == 0 &&
	    j->e->s.ok)
		full_check(w, cp, j->choice, &j->e->s);
}

void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct crash *cr = w->cr;

	pthread_mutex_lock(&cr->mu);
	for (;;) {
		while (cr->gen == w->gen && !cr->quit)
			pthread_cond_wait(&cr->work_cv, &cr->mu);
		if (cr->quit)
			break;
		w->gen = cr->gen;
		pthread_mutex_unlock(&cr->mu);
		for (;;) {
			size_t i = atomic_fetch_add(&cr->next_job, 1);

			if (i >= cr->njobs)
				break;
			run_job(w, &cr->jobv[i]);
		}
		pthread_mutex_lock(&cr->mu);
		if (++cr->wdone == cr->nworkers)
			pthread_cond_signal(&cr->done_cv);
	}
	pthread_mutex_unlock(&cr->mu);
	return NULL;
}

void run_jobs(struct crash *cr)
{
	if (!cr->njobs)
		return;
	pthread_mutex_lock(&cr->mu);
	atomic_store(&cr->next_job, 0);
	cr->wdone = 0;
	cr->gen++;
	pthread_cond_broadcast(&cr->work_cv);
	while (cr->wdone < cr->nworkers)
		pthread_cond_wait(&cr->done_cv, &cr->mu);
	pthread_mutex_unlock(&cr->mu);
	for (size_t i = 0; i < cr->njobs; i++) {
		uint64_t b = cr->jobv[i].e->s.max_ck;
		uint64_t ring = (uint64_t)cr->rd->wl.logbufs * cr->rd->wl.logbsize;

		cr->jobv[i].e->done = true;
		/* Coverage: checkpoints as large as the recovery window, and beyond. */
		if (b > cr->cv_max_ck)
			cr->cv_max_ck = b;
		if (b * 1000 / ring > cr->cv_max_ck_win)
			cr->cv_max_ck_win = b * 1000 / ring;
		cr->cv_over_win += b > ring;
		cr->cv_over_2m += b > (uint64_t)DELOG_LOGBUFS_MAX * DELOG_LOGBSIZE_MAX;
	}
	cr->recoveries += cr->njobs;
	cr->njobs = 0;
}

/* The image of a state (for --save). */
unsigned char *state_image(struct crash *cr, const uint8_t *choice)
{
	const struct cpoint *cp = &cr->cp;
	unsigned char *img = malloc(cr->rd->dev_bytes);

	if (!img)
		return NULL;
	memcpy(img, cp->old, cr->rd->dev_bytes);
	for (size_t i = 0; i < cp->k; i++)
		memcpy(img + cp->u[i] * cr->sector, state_sector(cp, choice, cp->u[i], cr->sector),
		       cr->sector);
	return img;
}

/* Judge one state (cr_judge) and record a violation, with its image for --save. */
void check_state(struct crash *cr, const struct entry *e, const uint8_t *choice)
{
	const struct cpoint *cp = &cr->cp;
	char msg[240];

	if (cr_judge(cr->rd, &e->s, cp->durable, cp->released, cp->must_lo, cp->acked, msg,
		     sizeof(msg))) {
		unsigned char *img = cr->save_dir ? state_image(cr, choice) : NULL;

		viol_add(cr, cp, choice, cp->k, msg, img);
		free(img);
	}
}
