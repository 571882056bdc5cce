/*
 * points.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: where the power is cut and what the disk may then hold: the
 * controller's online protocol check over the device trace (trace_step), the crash
 * points (what was acknowledged, the unstable sectors and their versions, the media),
 * and the crash states generated at each (exhaustive, structured, random;
 * gen_states).
 *
 * Why apart: the crash points are the fault model (which writes may be torn, to
 * what), the part a reader checks against the device's guarantees; the images and the
 * oracle take its states as given.
 */
#include "crash.h"

/* ---- the controller: the device trace and the online protocol check ---- */

static void prot_viol(struct crash *cr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void prot_viol(struct crash *cr, const char *fmt, ...)
{
	char msg[240];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "protocol: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	cr->nprot++;
	viol_add(cr, NULL, NULL, 0, msg, NULL);
}

/* @wrap: the write starts the log area, so it may be the part of a record split at the
 * physical end, which carries FUA but not the first part's PREFLUSH.  Under every
 * policy: single writes no FUA of its own, but the unmount record is PREFLUSH | FUA
 * under all of them, and it too wraps when the head is near the physical end.
 * @dev_flags: through the flush gate the disk sees what the gate leaves of the flags:
 * a PREFLUSH is the gate's flush, a FUA its write + flush unless the device keeps FUA
 * (CT_DEV_KEEP_FUA), so the disk sees no flag, or FUA alone. */
static bool flags_allowed(enum delog_flush_policy p, uint32_t f, bool wrap, unsigned dev_flags)
{
	f &= IOL_PREFLUSH | IOL_FUA;
	if (dev_flags & CT_DEV_GATE)
		return !f || (f == IOL_FUA && (dev_flags & CT_DEV_KEEP_FUA));
	if (!f || f == (IOL_PREFLUSH | IOL_FUA)) /* PREFLUSH|FUA: commits, and every unmount */
		return true;
	if (wrap && f == IOL_FUA)
		return true;
	switch (p) {
	case DELOG_FLUSH_SYNC:
		return f == IOL_PREFLUSH;
	case DELOG_FLUSH_ASYNC:
		return f == IOL_FUA;
	default:
		return false;
	}
}

/*
 * Events [t->cursor, L): the write map for the structured states, what changed the
 * media, and the protocol rules.  @tail (when known) was read after event L happened, so
 * it is at or past the tail at each of these events: a write over a sector whose last
 * record (lap = the count of writes to it) lies at or past it overwrites the live region.
 */
void trace_step(struct crash *cr, struct ctl *t, size_t L, uint64_t tail, bool known)
{
	struct round *rd = cr->rd;
	uint32_t sec = cr->sector;
	uint64_t log0 = DELOG_SB_BYTES / sec, arm = atomic_load(&rd->arm_ev);
	bool armed = atomic_load(&rd->armed);

	while (t->cursor < L) {
		size_t want = L - t->cursor < 512 ? L - t->cursor : 512;
		size_t n = iol_sim_trace_copy(rd->dev, t->cursor, t->ev, want);

		if (!n)
			break;
		for (size_t j = 0; j < n; j++) {
			const struct iol_sim_event *e = &t->ev[j];
			bool live = armed && t->cursor + j >= arm;
			uint32_t op = e->opf & IOL_OP_MASK;

			if (e->req_id >= t->wid_cap) {
				size_t cap = t->wid_cap * 2;

				while (cap <= e->req_id)
					cap *= 2;
				uint64_t *p = realloc(t->wid_done, cap * sizeof(*p));

				if (!p)
					continue;
				memset(p + t->wid_cap, 0, (cap - t->wid_cap) * sizeof(*p));
				t->wid_done = p;
				t->wid_cap = cap;
			}
			if (e->type == IOL_SIM_EV_SUBMIT && op == IOL_OP_WRITE) {
				uint64_t first = e->off / sec, nr = e->len / sec;

				if (live) {
					cr->protocol_events++;
					if (!flags_allowed(rd->policy, e->opf,
							   e->off == DELOG_SB_BYTES, rd->dev_flags))
						prot_viol(cr,
							  "%s policy issued a write with%s%s at "
							  "sector %" PRIu64,
							  delog_flush_policy_name(rd->policy),
							  e->opf & IOL_PREFLUSH ? " PREFLUSH" : "",
							  e->opf & IOL_FUA ? " FUA" : "", first);
					for (size_t i = 0; i < t->nfl; i++)
						if (first < t->fl[i].first + t->fl[i].nr &&
						    t->fl[i].first < first + nr)
							prot_viol(cr,
								  "write of sectors %" PRIu64
								  "+%" PRIu64
								  " overlaps write %" PRIu64
								  " in flight",
								  first, nr, t->fl[i].id);
					for (uint64_t s = first; s < first + nr; s++) {
						uint64_t ls = s - log0, w;

						if (s < log0)
							continue;
						w = t->wcount[ls];
						if (known && w && ((w << 32) | ls) >= tail)
							prot_viol(cr,
								  "write at log sector %" PRIu64
								  " overwrites "
								  "lap %" PRIu64
								  ", still live (tail %" PRIu64
								  "/%" PRIu64 "; G9)",
								  ls, w, tail >> 32,
								  tail & 0xffffffffu);
						t->wcount[ls] = w + 1;
					}
				}
				for (uint64_t s = first; s < first + nr && s < rd->dev_bytes / sec;
				     s++) {
					t->sec_wid[s] = e->req_id;
					if (!cr_grow((void **)&cr->touch, &cr->touchcap,
						     cr->ntouch + 1, 8))
						cr->touch[cr->ntouch++] = s;
				}
				cr->new_dirty = true;
				if (!cr_grow((void **)&t->fl, &t->flcap, t->nfl + 1,
					     sizeof(*t->fl)))
					t->fl[t->nfl++] = (struct wr){ e->req_id, first, nr,
								       e->opf };
			} else if (e->type == IOL_SIM_EV_FLUSH_DONE) {
				t->media_dirty = true;
			} else if (e->type == IOL_SIM_EV_COMPLETE) {
				t->wid_done[e->req_id] = e->seq;
				if (op == IOL_OP_WRITE) {
					if (e->opf & IOL_FUA)
						t->media_dirty = true;
					if (e->opf & IOL_PREFLUSH)
						cr->new_dirty = true; /* its data shows only now */
					for (size_t i = 0; i < t->nfl; i++) {
						if (t->fl[i].id == e->req_id) {
							t->fl[i] = t->fl[--t->nfl];
							break;
						}
					}
				}
			}
		}
		t->cursor += n;
	}
}

/* ---- crash points ---- */

static void garbage_fill(unsigned char *p, uint32_t len, uint64_t seed, uint64_t sector)
{
	uint64_t st = seed_for(seed, 0x6a4b, sector);

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = rnd(&st);

		memcpy(p + i, &r, 8);
	}
}

/*
 * Bring cr->old up to the media.  Only a sector that was unstable at the last crash
 * point, or written since, can have changed (the media changes only at deliveries, and
 * only this thread delivers): read back just those.  Changes are logged by crash point,
 * so the workers can update their disks without comparing whole images.
 */
static int media_refresh(struct crash *cr, unsigned char *tmp, uint64_t next_cp)
{
	uint32_t sec = cr->sector;
	size_t n = 0;
	int err = 0;

	if (cr_grow((void **)&cr->touch, &cr->touchcap, cr->ntouch + cr->cp.k + 1, 8))
		return -ENOMEM;
	for (size_t i = 0; i < cr->cp.k; i++)
		cr->touch[cr->ntouch++] = cr->cp.u[i];
	qsort(cr->touch, cr->ntouch, 8, cr_cmp_u64);
	for (size_t i = 0; i < cr->ntouch; i++)
		if (!n || cr->touch[i] != cr->touch[n - 1])
			cr->touch[n++] = cr->touch[i];
	for (size_t i = 0; i < n && !err;) {
		size_t j = i + 1;

		while (j < n && cr->touch[j] == cr->touch[j - 1] + 1)
			j++;
		err = iol_sim_media(cr->rd->dev, cr->touch[i] * sec, tmp + cr->touch[i] * sec,
				    (j - i) * sec);
		for (size_t q = i; !err && q < j; q++) {
			uint64_t s = cr->touch[q];

			if (!memcmp(tmp + s * sec, cr->old + s * sec, sec))
				continue;
			memcpy(cr->old + s * sec, tmp + s * sec, sec);
			cr->h_total -= cr->h_sec[s];
			cr->h_sec[s] = sector_hash(cr->old + s * sec, sec, s);
			cr->h_total += cr->h_sec[s];
			if (cr_grow((void **)&cr->chg, &cr->chgcap, cr->nchg + 1, sizeof(*cr->chg)))
				return -ENOMEM;
			cr->chg[cr->nchg++] = (struct mchg){ next_cp, s };
		}
		i = j;
	}
	cr->ntouch = 0;
	return err;
}

uint64_t cr_read_durable(struct round *rd)
{
	uint64_t d;

	pthread_mutex_lock(&rd->log_mu);
	d = rd->log ? delog_durable_seq(rd->log) : rd->final_durable;
	pthread_mutex_unlock(&rd->log_mu);
	return d;
}

/* The largest n (>= 1) of client @c committed into a checkpoint <= @seq, or 0. */
static uint32_t last_n_upto(struct round *rd, unsigned c, uint64_t seq)
{
	uint32_t lo = 1, hi = atomic_load(&rd->submitted[c]) + 1;

	/* Committed sequences grow with n; the last submitted may not have one yet. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t v = cr_rec_seq(rd, c, mid);

		if (v && v <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * Item tracking: the oldest checkpoint that holds the newest durable copy (checkpoint <=
 * @durable) of a key that was neither released (checkpoint <= @released) nor written back
 * (0: none).  Per key: the unique items of a transaction (written back or not); each
 * client's relogged key (never written back: its newest durable copy is in the
 * checkpoint of the client's last durable transaction); each shared key (looked for in
 * the last 256 durable transactions of each client, else not required: a weaker check,
 * never a false one).  @durable is read before the image, @released and the written
 * flags after it, as everywhere.
 */
static uint64_t track_must_lo(struct round *rd, uint64_t durable, uint64_t released)
{
	uint64_t lo = 0, shared_seq[16] = { 0 };

	for (unsigned c = 0; c < rd->wl.clients; c++) {
		uint32_t nd = last_n_upto(rd, c, durable), n = last_n_upto(rd, c, released) + 1;
		uint16_t want = rd->wl.shared_1in ? (uint16_t)((1u << rd->wl.nshared) - 1) : 0;
		uint64_t q;

		if (!nd)
			continue;
		q = cr_rec_seq(rd, c, nd);
		if (q > released && (!lo || q < lo))
			lo = q;
		for (; n <= nd; n++) {
			if (!atomic_load(&rd->written[c][n])) {
				q = cr_rec_seq(rd, c, n);
				if (q > released && (!lo || q < lo))
					lo = q;
				break;
			}
		}
		for (uint32_t m = nd; m && want && nd - m < 256; m--) {
			struct txspec ts;

			tx_spec(rd, c, m, &ts);
			for (unsigned j = 0; j < 16; j++) {
				if (!(ts.shared & want & (1u << j)))
					continue;
				want &= (uint16_t) ~(1u << j);
				q = cr_rec_seq(rd, c, m);
				if (q > shared_seq[j])
					shared_seq[j] = q;
			}
		}
	}
	for (unsigned j = 0; j < 16; j++)
		if (shared_seq[j] > released && (!lo || shared_seq[j] < lo))
			lo = shared_seq[j];
	return lo;
}

/* Versions profile: the intermediate versions of each unstable sector of the point
 * (iol_sim_version_read; at most 253 a sector, the choice byte's room). */
static int take_versions(struct crash *cr, struct cpoint *cp)
{
	uint32_t sec = cr->sector, *nv = malloc((cp->k + 1) * sizeof(*nv));
	uint64_t *u = malloc((cp->k + 1) * sizeof(*u));
	size_t k, tot = 0;
	int err = 0;

	free(cp->ninter);
	free(cp->voff);
	free(cp->vdata);
	free(cp->h_ver);
	cp->ninter = calloc(cp->k + 1, sizeof(*cp->ninter));
	cp->voff = calloc(cp->k + 1, sizeof(*cp->voff));
	cp->vdata = NULL;
	cp->h_ver = NULL;
	cp->nvtot = 0;
	if (!nv || !u || !cp->ninter || !cp->voff) {
		err = -ENOMEM;
		goto out;
	}
	/* Submissions since the snapshot only append versions (and sectors): what is read
	 * here was written either way. */
	k = iol_sim_unstable_versions(cr->rd->dev, u, nv, cp->k);
	for (size_t i = 0, j = 0; i < cp->k && j < (k < cp->k ? k : cp->k); j++) {
		while (i < cp->k && cp->u[i] < u[j])
			i++;
		if (i < cp->k && cp->u[i] == u[j] && nv[j] > 2)
			cp->ninter[i] = nv[j] - 2 < 253 ? nv[j] - 2 : 253;
	}
	for (size_t i = 0; i < cp->k; i++) {
		cp->voff[i] = tot;
		tot += cp->ninter[i];
	}
	if (tot) {
		cp->vdata = malloc(tot * (size_t)sec);
		cp->h_ver = malloc(tot * sizeof(*cp->h_ver));
		if (!cp->vdata || !cp->h_ver) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < cp->k; i++) {
		for (uint32_t v = 0; v < cp->ninter[i]; v++) {
			unsigned char *d = cp->vdata + (cp->voff[i] + v) * sec;

			if (iol_sim_version_read(cr->rd->dev, cp->u[i], v + 1, d))
				memcpy(d, cp->newd + i * sec, sec); /* gone meanwhile: new */
			cp->h_ver[cp->voff[i] + v] = sector_hash(d, sec, cp->u[i]);
		}
		if (cp->ninter[i] + 2 > cr->cv_max_ver)
			cr->cv_max_ver = cp->ninter[i] + 2;
	}
	cp->nvtot = tot;
	cr->cv_vcps += tot > 0;
out:
	free(nv);
	free(u);
	return err;
}

static int take_point(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t round_cp)
{
	struct round *rd = cr->rd;
	struct cpoint *cp = &cr->cp;
	uint32_t sec = cr->sector;
	size_t k = 0, L0 = 0;
	int err = 0;

	/* What was acknowledged, first: all of it was durable before the snapshot. */
	cp->durable = cr_read_durable(rd);
	for (unsigned c = 0; c < rd->wl.clients; c++)
		cp->acked[c] = atomic_load(&rd->acked[c]);
	if (t->media_dirty) {
		err = media_refresh(cr, pb->tmp, cr->cp_ids + 1);
		if (err)
			return err;
		t->media_dirty = false;
	}
	for (int tries = 0;; tries++) {
		L0 = iol_sim_trace_len(rd->dev);
		k = iol_sim_unstable(rd->dev, cr->ubuf, cr->ucap);
		if (k > cr->ucap) {
			if (cr_grow((void **)&cr->ubuf, &cr->ucap, k, 8))
				return -ENOMEM;
			continue;
		}
		if (cr_grow((void **)&cr->ones, &cr->ones_cap, k + 1, 1))
			return -ENOMEM;
		memset(cr->ones, 1, k);
		/* No write submitted and no PREFLUSH write delivered since the last image:
		 * the newest contents are those already in newimg, if the set only shrank. */
		if (!cr->new_dirty && t->cursor == L0) {
			size_t i = 0;

			for (;
			     i < k && iol_sim_unstable_index(cp->u, cp->k, cr->ubuf[i]) != SIZE_MAX;
			     i++)
				;
			if (i == k)
				break;
		}
		err = k ? iol_sim_crash_choose(rd->dev, cr->ones, k, 0, cr->newimg) : 0;
		if (!err)
			cr->new_dirty = false;
		if (err == -EINVAL && tries < 64)
			continue; /* a submission changed the unstable set: again */
		if (err)
			return err;
		if (iol_sim_trace_len(rd->dev) == L0 || tries >= 16)
			break;
	}
	cp->released = atomic_load(&rd->released);
	cp->must_lo = rd->wl.track ? track_must_lo(rd, cp->durable, cp->released) : 0;
	if (rd->wl.full) {
		/* At the full edge: a committer has waited for space since before the last
		 * crash point, or a NOWAIT transaction just failed with -EAGAIN. */
		uint64_t eg = atomic_load(&rd->eagain_begin) + atomic_load(&rd->eagain_log);
		bool edge = eg != cr->f_last_eagain;

		for (unsigned c = 0; c < rd->wl.clients && !edge; c++) {
			uint64_t b = atomic_load(&rd->blocked_since[c]);

			edge = b && b < cr->last_cp_t;
		}
		cr->f_last_eagain = eg;
		cr->f_edge_cps += edge;
		cr->f_hi_cps += cr->f_used * 4 >= 3 * rd->log_bytes;
		cr->last_cp_t = now_ns();
	}
	cp->id = ++cr->cp_ids;
	cp->seq = round_cp;
	cp->ev = L0;
	cp->k = k;
	cp->old = cr->old;
	cp->h_base = cr->h_total;
	free(cp->u);
	free(cp->newd);
	free(cp->garb);
	free(cp->h_old);
	free(cp->h_new);
	free(cp->h_garb);
	cp->u = malloc((k + 1) * 8);
	cp->newd = malloc((k + 1) * (size_t)sec);
	cp->garb = cr->profile == IOL_SIM_GARBLE ? malloc((CR_NFILL * k + 1) * (size_t)sec) : NULL;
	cp->h_old = malloc((k + 1) * 8);
	cp->h_new = malloc((k + 1) * 8);
	cp->h_garb = malloc((CR_NFILL * k + 1) * 8);
	if (!cp->u || !cp->newd || !cp->h_old || !cp->h_new || !cp->h_garb ||
	    (cr->profile == IOL_SIM_GARBLE && !cp->garb))
		return -ENOMEM;
	for (size_t i = 0; i < k; i++) {
		uint64_t s = cr->ubuf[i];

		cp->u[i] = s;
		memcpy(cp->newd + i * sec, cr->newimg + s * sec, sec);
		cp->h_old[i] = cr->h_sec[s];
		cp->h_new[i] = sector_hash(cp->newd + i * sec, sec, s);
		cp->h_garb[i] = 0;
		for (int f = 0; cp->garb && f < CR_NFILL; f++) {
			unsigned char *g = cp->garb + (f * k + i) * sec;
			uint64_t nb = s ? s - 1 : s + 1;

			if (f == CR_FILL_RANDOM)
				garbage_fill(g, sec, rd->seed, s);
			else if (f == CR_FILL_ZERO || f == CR_FILL_ONES)
				memset(g, f == CR_FILL_ZERO ? 0 : 0xff, sec);
			else
				memcpy(g, cr->old + (f == CR_FILL_COPY ? nb : s) * sec, sec);
			/* An unreadable sector holds its old bytes but is another state. */
			cp->h_garb[f * k + i] = sector_hash(g, sec, s) +
						(f == CR_FILL_EIO ? 0x9e3779b97f4a7c15ull : 0);
		}
	}
	cp->nvtot = 0;
	return cr->profile == IOL_SIM_VERSIONS ? take_versions(cr, cp) : 0;
}

static uint64_t state_hash(const struct cpoint *cp, const uint8_t *choice)
{
	uint64_t h = cp->h_base;

	for (size_t i = 0; i < cp->k; i++) {
		if (choice[i] == 1)
			h += cp->h_new[i] - cp->h_old[i];
		else if (choice[i] == 2)
			h += cp->h_garb[choice[cp->k] * cp->k + i] - cp->h_old[i];
		else if (choice[i] > 2)
			h += cp->h_ver[cp->voff[i] + choice[i] - 3] - cp->h_old[i];
	}
	return h;
}

static int add_state(struct crash *cr, const uint8_t *choice)
{
	struct cpoint *cp = &cr->cp;
	struct entry *e;
	uint8_t *dst;
	bool created;

	if (cr_grow((void **)&cr->stv, &cr->stcap, cr->nst + 1, sizeof(*cr->stv)) ||
	    cr_grow((void **)&cr->choices, &cr->chcap, (cr->nst + 1) * (cp->k + 1), 1))
		return -ENOMEM;
	dst = cr->choices + cr->nst * (cp->k + 1);
	memcpy(dst, choice, cp->k + 1);
	if (memchr(choice, 2, cp->k))
		cr->fill_states[choice[cp->k]]++;
	for (size_t i = 0; cp->nvtot && i < cp->k; i++) {
		if (choice[i] > 2) {
			cr->cv_vstates++;
			break;
		}
	}
	e = cache_get(cr, state_hash(cp, choice), &created);
	if (!e)
		return -ENOMEM;
	if (created) {
		if (cr_grow((void **)&cr->jobv, &cr->jobcap, cr->njobs + 1, sizeof(*cr->jobv)))
			return -ENOMEM;
		cr->jobv[cr->njobs++] = (struct job){ e, NULL };
		cr->distinct++;
	}
	cr->stv[cr->nst++] = e;
	return 0;
}

struct sortkey {
	uint64_t a, b, c;
	size_t i;
};

static int cmp_sortkey(const void *x, const void *y)
{
	const struct sortkey *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return p->c < q->c ? -1 : p->c > q->c;
}

/* The structured states (all old, all new, the prefixes, omit-one, each write alone,
 * each sector garbled: crash.h), generated by index. */
struct structured {
	size_t k, nw;
	struct sortkey *sub, *comp; /* sector indexes in submission / completion order */
	size_t *wstart;             /* writes: ranges of sub */
	bool garble;
	unsigned fill0, nfill;   /* garble: the fills drawn from (--fill) */
	const struct cpoint *cp; /* versions profile: its intermediate versions */
	size_t n;
};

static void structured_state(const struct structured *st, size_t idx, uint8_t *ch)
{
	size_t k = st->k;

	ch[k] = 0;
	if (idx < k - 1) { /* a prefix in submission order */
		memset(ch, 0, k);
		for (size_t j = 0; j <= idx; j++)
			ch[st->sub[j].i] = 1;
		return;
	}
	idx -= k - 1;
	if (idx < k - 1) { /* a prefix in completion order */
		memset(ch, 0, k);
		for (size_t j = 0; j <= idx; j++)
			ch[st->comp[j].i] = 1;
		return;
	}
	idx -= k - 1;
	if (idx < k) { /* omit one */
		memset(ch, 1, k);
		ch[idx] = 0;
		return;
	}
	idx -= k;
	if (idx < 2 * st->nw) { /* one write alone in, or alone out */
		size_t w = idx / 2;
		bool in = idx % 2 == 0;

		memset(ch, in ? 0 : 1, k);
		for (size_t j = st->wstart[w]; j < st->wstart[w + 1]; j++)
			ch[st->sub[j].i] = in ? 1 : 0;
		return;
	}
	idx -= 2 * st->nw;
	if (st->garble) { /* garble: one sector torn, the rest new; then all torn */
		if (idx < k * st->nfill) {
			memset(ch, 1, k);
			ch[idx / st->nfill] = 2;
			ch[k] = (uint8_t)(st->fill0 + idx % st->nfill);
			return;
		}
		memset(ch, 2, k);
		ch[k] = (uint8_t)(st->fill0 + idx - k * st->nfill);
		return;
	}
	/* versions: every sector at its oldest or its newest intermediate version (the
	 * rest new); then one intermediate version alone, the rest new, or the rest old */
	if (idx < 2) {
		for (size_t i = 0; i < k; i++)
			ch[i] = !st->cp->ninter[i] ? 1 : (uint8_t)(idx ? 2 + st->cp->ninter[i] : 3);
		return;
	}
	idx -= 2;
	{
		size_t m = idx / 2, lo = 0, hi = k;

		while (hi - lo > 1) { /* the sector whose versions hold m */
			size_t mid = lo + (hi - lo) / 2;

			if (st->cp->voff[mid] <= m)
				lo = mid;
			else
				hi = mid;
		}
		while (lo + 1 < k && st->cp->voff[lo + 1] <= m && !st->cp->ninter[lo])
			lo++;
		memset(ch, idx % 2 ? 0 : 1, k);
		ch[lo] = (uint8_t)(3 + m - st->cp->voff[lo]);
	}
}

static void random_state(struct crash *cr, uint64_t *r, uint8_t *ch, size_t k)
{
	const struct cpoint *cp = &cr->cp;

	for (size_t i = 0; i < k; i++) {
		uint64_t v = rnd(r);

		if (cr->profile == IOL_SIM_VERSIONS && cp->nvtot && cp->ninter[i]) {
			/* any version: old, new or one in between, uniformly */
			v %= 2 + cp->ninter[i];
			ch[i] = (uint8_t)(v < 2 ? v : v + 1);
			continue;
		}
		ch[i] = cr->profile == IOL_SIM_GARBLE ? (uint8_t)(v % 3) : (uint8_t)(v >> 63);
	}
	ch[k] = (uint8_t)(cr->fill >= 0 ? (uint64_t)cr->fill : rnd(r) % CR_NFILL);
}

static int gen_states(struct crash *cr, struct ctl *t, uint64_t budget)
{
	struct cpoint *cp = &cr->cp;
	size_t k = cp->k;
	bool garble = cr->profile == IOL_SIM_GARBLE;
	uint64_t r = seed_for(cr->rd->seed, 0x57a7e, cp->seq);
	uint8_t *ch = malloc(k + 1);
	unsigned fill0 = cr->fill >= 0 ? (unsigned)cr->fill : 0;
	unsigned nfill = cr->fill >= 0 ? 1 : CR_NFILL;
	struct structured st = { .k = k,
				 .garble = garble,
				 .fill0 = fill0,
				 .nfill = nfill,
				 .cp = cp };
	bool vers = cr->profile == IOL_SIM_VERSIONS && cp->nvtot;
	int err = 0;

	if (!ch)
		return -ENOMEM;
	memset(ch, 0, k + 1);
	cr->nst = 0;
	if (k == 0) {
		err = add_state(cr, ch);
		goto out;
	}
	if (vers && k <= CR_EXH_K) {
		/* Every combination of every sector's versions, if they fit. */
		uint64_t total = 1;

		for (size_t i = 0; i < k && total <= (1ull << 20); i++)
			total *= 2 + cp->ninter[i];
		if (total <= (cr->exhaustive ? 1ull << 16 : budget)) {
			cr->exh_cps++;
			for (uint64_t m = 0; !err && m < total; m++) {
				uint64_t x = m;

				for (size_t i = 0; i < k; i++) {
					uint64_t v = x % (2 + cp->ninter[i]);

					x /= 2 + cp->ninter[i];
					ch[i] = (uint8_t)(v < 2 ? v : v + 1);
				}
				err = add_state(cr, ch);
			}
			goto out;
		}
	}
	if (!vers && k <= CR_EXH_K &&
	    (cr->exhaustive || (1ull << k) + (garble ? (k + 1) * nfill : 0) <= budget)) {
		cr->exh_cps++;
		for (uint64_t m = 0; !err && m < (1ull << k); m++) {
			for (size_t i = 0; i < k; i++)
				ch[i] = (uint8_t)((m >> i) & 1);
			err = add_state(cr, ch);
		}
		for (size_t i = 0; !err && garble && i <= k; i++) {
			for (unsigned f = 0; !err && f < nfill; f++) {
				memset(ch, i < k ? 1 : 2, k); /* one torn, or all */
				if (i < k)
					ch[i] = 2;
				ch[k] = (uint8_t)(fill0 + f);
				err = add_state(cr, ch);
			}
		}
		ch[k] = 0;
		goto out;
	}
	/* Always: nothing survived, everything survived. */
	memset(ch, 0, k);
	err = add_state(cr, ch);
	memset(ch, 1, k);
	if (!err)
		err = add_state(cr, ch);
	if (err || budget <= 2)
		goto out;
	st.sub = malloc(k * sizeof(*st.sub));
	st.comp = malloc(k * sizeof(*st.comp));
	st.wstart = malloc((k + 1) * sizeof(*st.wstart));
	if (!st.sub || !st.comp || !st.wstart) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		uint64_t w = t->sec_wid[cp->u[i]];
		uint64_t done = w < t->wid_cap && t->wid_done[w] ? t->wid_done[w] : UINT64_MAX;

		st.sub[i] = (struct sortkey){ w, cp->u[i], 0, i };
		st.comp[i] = (struct sortkey){ done, w, cp->u[i], i };
	}
	qsort(st.sub, k, sizeof(*st.sub), cmp_sortkey);
	qsort(st.comp, k, sizeof(*st.comp), cmp_sortkey);
	for (size_t i = 0; i < k; i++)
		if (!i || st.sub[i].a != st.sub[i - 1].a)
			st.wstart[st.nw++] = i;
	st.wstart[st.nw] = k;
	st.n = 2 * (k - 1) + k + 2 * st.nw + (garble ? (k + 1) * nfill : 0) +
	       (vers ? 2 + 2 * cp->nvtot : 0);
	{
		uint64_t left = budget - 2, from_struct = left >= st.n ? st.n : left / 2;

		if (from_struct == st.n) {
			for (size_t i = 0; !err && i < st.n; i++) {
				structured_state(&st, i, ch);
				err = add_state(cr, ch);
			}
		} else {
			for (uint64_t i = 0; !err && i < from_struct; i++) {
				structured_state(&st, (size_t)(rnd(&r) % st.n), ch);
				err = add_state(cr, ch);
			}
		}
		for (uint64_t i = from_struct; !err && i < left; i++) {
			random_state(cr, &r, ch, k);
			err = add_state(cr, ch);
		}
	}
out:
	free(st.sub);
	free(st.comp);
	free(st.wstart);
	free(ch);
	return err;
}

int crash_point(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t round_cp)
{
	int err = take_point(cr, t, pb, round_cp);

	if (err)
		return err;
	cr->cps++;
	if (cr->cp.k > cr->max_k)
		cr->max_k = cr->cp.k;
	err = gen_states(cr, t, cr->budget);
	if (err)
		return err;
	/* Jobs point into the choice pool, which is final now. */
	for (size_t i = 0, j = 0; i < cr->nst && j < cr->njobs; i++) {
		if (cr->stv[i] == cr->jobv[j].e && !cr->jobv[j].choice)
			cr->jobv[j++].choice = cr->choices + i * (cr->cp.k + 1);
	}
	run_jobs(cr);
	for (size_t i = 0; i < cr->nst; i++)
		check_state(cr, cr->stv[i], cr->choices + i * (cr->cp.k + 1));
	cr->states += cr->nst;
	return 0;
}
