/*
 * oracle.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: what a recovered image must be: the recovered checkpoints and
 * transactions collected from recovery's callbacks and checked against the workload's
 * seeded contents (check_ckpt, summary_finish), the judgement of one crash state
 * against what was acknowledged at its crash point (cr_judge), and the record of a
 * violation (viol_add).
 *
 * Why apart: the oracle is the checker's definition of correct (acknowledged is a
 * subset of recovered, recovered a prefix and a subset of submitted, every item whole);
 * it reads recovery's output and the seeded workload and nothing of how the states were
 * produced, so it can be read and reviewed alone.
 */
#include "crash.h"

/* ---- the oracle's view of one recovery ---- */

void cr_bad(struct summary *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->ok)
		return;
	s->ok = false;
	va_start(ap, fmt);
	vsnprintf(s->what, sizeof(s->what), fmt, ap);
	va_end(ap);
}

static int cmp_ritem(const void *a, const void *b)
{
	uint64_t x = ((const struct ritem *)a)->key, y = ((const struct ritem *)b)->key;

	return x < y ? -1 : x > y;
}

uint64_t cr_rec_seq(struct round *rd, unsigned c, uint32_t n)
{
	if (!n || n > rd->wl.txs)
		return 0;
	return atomic_load_explicit(&rd->seqs[c][n], memory_order_acquire);
}

/* One pass of check_ckpt over a checkpoint: what its steps share. */
struct ckpass {
	struct rctx *x;
	struct summary *s;
	struct round *rd;
	uint64_t seq;
	size_t n;                /* items, sorted by key in x->it */
	uint32_t cmax[CR_SLOTS]; /* each client's last transaction here */
	bool relog_seen[CR_SLOTS];
	size_t ntx;             /* transactions here, in x->txv */
	uint16_t tx_shared_any; /* shared keys they logged, not yet met */
};

/* The checkpoint's sequence and item count; its items copied into x->it and sorted by
 * key.  False when out of memory (reported). */
static bool ck_begin(struct ckpass *p, size_t nitems_hdr, const struct ritem *in)
{
	struct rctx *x = p->x;
	struct summary *s = p->s;
	uint64_t seq = p->seq;
	size_t n = p->n;

	if (s->nck && seq != s->hi + 1)
		cr_bad(s, "checkpoint %" PRIu64 " recovered after %" PRIu64, seq, s->hi);
	if (!s->nck)
		s->lo = seq;
	s->nck++;
	s->hi = seq;
	if (nitems_hdr != n)
		cr_bad(s, "checkpoint %" PRIu64 ": says %zu items, has %zu", seq, nitems_hdr, n);
	{
		uint64_t bytes = 0;

		for (size_t i = 0; i < n; i++)
			bytes += in[i].len;
		if (bytes > s->max_ck)
			s->max_ck = bytes;
	}
	if (n > x->cap) {
		struct ritem *q = realloc(x->it, n * sizeof(*q));

		if (!q) {
			cr_bad(s, "out of memory");
			return false;
		}
		x->it = q;
		x->cap = n;
	}
	memcpy(x->it, in, n * sizeof(*in));
	qsort(x->it, n, sizeof(*x->it), cmp_ritem);
	return true;
}

/* Transaction @c/@tn's items 0..m-1 from x->it[@i], consecutive in key order, each the
 * one written (item 0's header is @h).  Returns the index past its last item. */
static size_t tx_items(struct ckpass *p, size_t i, const struct pl_hdr *h, unsigned c, uint32_t tn)
{
	struct rctx *x = p->x;
	struct summary *s = p->s;
	uint64_t seq = p->seq, key = x->it[i].key;
	size_t j, end;

	for (end = i; end < p->n && (x->it[end].key >> 16) == (key >> 16); end++)
		;
	if (end - i != h->m) {
		cr_bad(s, "checkpoint %" PRIu64 ": tx %u/%u has %zu of its %u items (G2)", seq, c,
		       tn, end - i, h->m);
	}
	for (j = i; j < end; j++) {
		if ((x->it[j].key & 0xffff) != j - i) {
			cr_bad(s, "checkpoint %" PRIu64 ": tx %u/%u: item %zu missing", seq, c, tn,
			       j - i);
			break;
		}
	}
	/* The other items' payloads were checked by pl_read when met. */
	for (j = i + 1; j < end; j++) {
		struct pl_hdr h2;

		if (!pl_read(p->rd, x->it[j].key, x->it[j].data, x->it[j].len, &h2) ||
		    h2.client != c || h2.n != tn || h2.m != h->m)
			cr_bad(s,
			       "checkpoint %" PRIu64 ": tx %u/%u: item %zu is not "
			       "the one written",
			       seq, c, tn, j - i);
	}
	return end;
}

/* Transaction @c/@tn belongs in this checkpoint: submitted, committed into it, this
 * session's copy (G4, G6); a continuation's, written into it.  False for a client the
 * workload does not have (nothing more is checked of it). */
static bool tx_origin(struct ckpass *p, const struct pl_hdr *h, unsigned c, uint32_t tn)
{
	struct rctx *x = p->x;
	struct summary *s = p->s;
	struct round *rd = p->rd;
	uint64_t seq = p->seq;

	if (c == CR_MAX_CLIENTS) {
		if (!x->cont || tn > x->cont->n || x->cont->seq[tn] != seq)
			cr_bad(s,
			       "checkpoint %" PRIu64 ": continuation tx %u not written "
			       "into it",
			       seq, tn);
	} else if (c >= rd->wl.clients) {
		cr_bad(s, "checkpoint %" PRIu64 ": tx of unknown client %u", seq, c);
		return false;
	} else if (x->cont && seq > x->cont_base) {
		cr_bad(s,
		       "checkpoint %" PRIu64 ": tx %u/%u from before the crash in a "
		       "checkpoint written after recovery (resurrected; G6)",
		       seq, c, tn);
	} else {
		uint64_t want = cr_rec_seq(rd, c, tn);
		uint32_t sub = atomic_load(&rd->submitted[c]);

		if (tn > sub)
			cr_bad(s,
			       "checkpoint %" PRIu64 ": tx %u/%u was never submitted "
			       "(client at %u; G4)",
			       seq, c, tn, sub);
		else if (want && want != seq)
			cr_bad(s,
			       "checkpoint %" PRIu64 ": tx %u/%u was committed into "
			       "checkpoint %" PRIu64 " (stale lap? G4)",
			       seq, c, tn, want);
		else if (h->round >> 24 != atomic_load(&rd->sess[c][tn]))
			cr_bad(s,
			       "checkpoint %" PRIu64 ": tx %u/%u is session %u's copy, "
			       "lost in a crash and written again by session %u (resurrected; "
			       "G6)",
			       seq, c, tn, h->round >> 24, (unsigned)atomic_load(&rd->sess[c][tn]));
	}
	return true;
}

/* Per-client continuity (G3): transaction @c/@tn follows the client's previous one. */
static void tx_continuity(struct ckpass *p, unsigned c, uint32_t tn)
{
	struct summary *s = p->s;
	struct round *rd = p->rd;
	uint64_t seq = p->seq;

	if (!s->last_n[c]) {
		if (c < rd->wl.clients && tn > 1) {
			uint64_t prev = cr_rec_seq(rd, c, tn - 1);

			if (!prev || prev >= s->lo)
				cr_bad(s,
				       "tx %u/%u recovered in %" PRIu64 " without tx "
				       "%u/%u (checkpoint %" PRIu64 "; G3)",
				       c, tn, seq, c, tn - 1, prev);
		} else if (c == CR_MAX_CLIENTS && tn != 1) {
			cr_bad(s, "continuation tx %u without tx 1", tn);
		}
	} else if (tn != s->last_n[c] + 1) {
		cr_bad(s, "client %u: tx %u recovered after tx %u (hole; G3)", c, tn, s->last_n[c]);
	}
	s->last_n[c] = tn;
	p->cmax[c] = tn;
}

/* A transaction item at x->it[*@ip] (key type 1): the whole transaction is checked and
 * *@ip left on its last item.  -1 when out of memory (reported), else 0. */
static int check_tx(struct ckpass *p, size_t *ip, const struct pl_hdr *h)
{
	struct rctx *x = p->x;
	struct summary *s = p->s;
	size_t i = *ip;
	uint64_t key = x->it[i].key;
	unsigned c = (unsigned)(key >> 48) & 0xfff;
	uint32_t tn = (uint32_t)(key >> 16);
	unsigned idx = (unsigned)(key & 0xffff);

	if (h->client != c || h->n != tn || h->idx != idx || idx != 0 || !h->m) {
		cr_bad(s, "checkpoint %" PRIu64 ": tx %u/%u: item %u without item 0", p->seq, c, tn,
		       idx);
		return 0;
	}
	*ip = tx_items(p, i, h, c, tn) - 1;
	if (!tx_origin(p, h, c, tn))
		return 0;
	tx_continuity(p, c, tn);
	if (p->ntx == x->txcap) {
		size_t cap = x->txcap ? 2 * x->txcap : 256;
		struct rtx *q = realloc(x->txv, cap * sizeof(*q));

		if (!q) {
			cr_bad(s, "out of memory");
			return -1;
		}
		x->txv = q;
		x->txcap = cap;
	}
	x->txv[p->ntx++] = (struct rtx){ c, tn, h->shared };
	p->tx_shared_any |= h->shared;
	return 0;
}

/* Relogged keys carry the newest value: each client's last transaction here. */
static void check_relogged(struct ckpass *p)
{
	struct rctx *x = p->x;
	struct summary *s = p->s;
	uint64_t seq = p->seq;

	for (size_t i = 0; i < p->n; i++) {
		const struct ritem *it = &x->it[i];

		if ((it->key >> 60) == 2 && (it->key & 0xffff) < CR_SLOTS) {
			unsigned c = (unsigned)(it->key & 0xffff);

			if (it->len != p->cmax[c])
				cr_bad(s,
				       "checkpoint %" PRIu64
				       ": client %u's relogged key holds tx %u, "
				       "its last tx there is %u (relog)",
				       seq, c, it->len, p->cmax[c]);
		}
	}
	for (unsigned c = 0; c < CR_SLOTS; c++)
		if (p->cmax[c] && !p->relog_seen[c])
			cr_bad(s, "checkpoint %" PRIu64 ": client %u's relogged key is missing",
			       seq, c);
}

/* Shared keys: present iff a transaction here logged them, holding one of those. */
static void check_shared(struct ckpass *p)
{
	struct rctx *x = p->x;
	struct summary *s = p->s;
	uint64_t seq = p->seq;
	struct pl_hdr h;

	for (size_t i = 0; i < p->n; i++) {
		const struct ritem *it = &x->it[i];
		unsigned j;
		bool found = false;

		if ((it->key >> 60) != 3)
			continue;
		j = (unsigned)(it->key & 0xffff);
		if (j >= 16)
			continue;
		memcpy(&h, it->data, sizeof(h));
		for (size_t t = 0; t < p->ntx && !found; t++)
			found = x->txv[t].c == h.client && x->txv[t].n == h.n &&
				(x->txv[t].shared & (1u << j));
		if (!found)
			cr_bad(s,
			       "checkpoint %" PRIu64
			       ": shared key %u holds tx %u/%u, which did not "
			       "log it here",
			       seq, j, h.client, h.n);
		p->tx_shared_any &= (uint16_t) ~(1u << j);
	}
	if (p->tx_shared_any)
		cr_bad(s, "checkpoint %" PRIu64 ": shared keys %#x logged but missing", seq,
		       p->tx_shared_any);
}

/* One recovered checkpoint against what the workload did (the callback of jrnl_recover
 * and of engine_open_dev, through the adapters below): the oracle's one pass over a
 * checkpoint, its steps in the order the checks depend on each other: the sequence, then
 * each item in key order (a transaction's items with their payloads and per-client
 * continuity, check_tx), then the relogged and shared keys against the transactions
 * counted on the way. */
void check_ckpt(struct rctx *x, uint64_t seq, size_t nitems_hdr, const struct ritem *in, size_t n)
{
	struct ckpass p = { .x = x, .s = x->s, .rd = x->rd, .seq = seq, .n = n };
	struct summary *s = x->s;
	struct pl_hdr h;

	if (!ck_begin(&p, nitems_hdr, in))
		return;
	for (size_t i = 0; i < n; i++) {
		const struct ritem *it = &x->it[i];
		uint64_t key = it->key;

		if (i && key == x->it[i - 1].key) {
			cr_bad(s, "checkpoint %" PRIu64 ": key %#" PRIx64 " twice", seq, key);
			continue;
		}
		if (!pl_read(x->rd, key, it->data, it->len, &h)) {
			cr_bad(s,
			       "checkpoint %" PRIu64 ": item %#" PRIx64
			       " (%u bytes) is not one the "
			       "workload wrote (payload hash, round or length)",
			       seq, key, it->len);
			continue;
		}
		switch (key >> 60) {
		case 1:
			if (check_tx(&p, &i, &h))
				return;
			break;
		case 2: {
			unsigned c = (unsigned)(key & 0xffff);

			if (c >= CR_SLOTS || h.client != c || h.idx != IDX_RELOG) {
				cr_bad(s, "checkpoint %" PRIu64 ": bad relog item %#" PRIx64, seq,
				       key);
				continue;
			}
			p.relog_seen[c] = true;
			/* compared with cmax by check_relogged, once all transactions are counted */
			x->it[i].len = h.n; /* stash the value */
			break;
		}
		case 3: {
			unsigned j = (unsigned)(key & 0xffff);

			if (j >= 16 || h.idx != IDX_SHARED) {
				cr_bad(s, "checkpoint %" PRIu64 ": bad shared item %#" PRIx64, seq,
				       key);
				continue;
			}
			break;
		}
		default:
			cr_bad(s, "checkpoint %" PRIu64 ": unknown key %#" PRIx64, seq, key);
		}
	}
	check_relogged(&p);
	check_shared(&p);
}

int cr_jrnl_cb(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v, size_t n)
{
	struct rctx *x = priv;
	struct ritem *tmp = malloc((n ? n : 1) * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct ritem){ v[i].key, v[i].data, v[i].len };
	check_ckpt(x, ck->seq, ck->nitems, tmp, n);
	free(tmp);
	return 0;
}

int cr_delog_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it, size_t n)
{
	struct rctx *x = arg;
	struct ritem *tmp = malloc((n ? n : 1) * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct ritem){ it[i].key, it[i].data, it[i].len };
	check_ckpt(x, ck->seq, ck->nitems, tmp, n);
	free(tmp);
	return 0;
}

/* After the last checkpoint: no transaction committed into a recovered checkpoint may be
 * missing from it (the client's next one after its last recovered, or, for a client with
 * none recovered, the first one committed at or after the first recovered checkpoint). */
void summary_finish(struct rctx *x)
{
	struct summary *s = x->s;
	struct round *rd = x->rd;

	if (s->err) {
		s->ok = false;
		return;
	}
	uint64_t top = x->cont && x->cont_base < s->hi ? x->cont_base : s->hi;

	if (!s->nck)
		return;
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		uint32_t sub = atomic_load(&rd->submitted[c]), nn;
		uint64_t q;

		if (s->last_n[c]) {
			nn = s->last_n[c] + 1;
		} else {
			/* Smallest n whose checkpoint is >= lo (seqs grow with n). */
			uint32_t lo = 1, hi = sub + 1;

			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				uint64_t v = cr_rec_seq(rd, c, mid);

				if (v && v < s->lo)
					lo = mid + 1;
				else
					hi = mid;
			}
			nn = lo;
		}
		q = cr_rec_seq(rd, c, nn);
		if (nn <= sub && q && q >= s->lo && q <= top)
			cr_bad(s,
			       "tx %u/%u was committed into checkpoint %" PRIu64 ", recovered "
			       "without it (G2)",
			       c, nn, q);
	}
}

void viol_add(struct crash *cr, const struct cpoint *cp, const uint8_t *choice, size_t k,
	      const char *what, const unsigned char *image)
{
	struct viol *v;

	pthread_mutex_lock(&cr->viol_mu);
	cr->nviol++;
	{
		char norm[120];
		size_t n = 0, i;

		for (const char *q = what; *q && n < sizeof(norm) - 1; q++) {
			if (*q >= '0' && *q <= '9') {
				if (!n || norm[n - 1] != '#')
					norm[n++] = '#';
			} else {
				norm[n++] = *q;
			}
		}
		norm[n] = 0;
		for (i = 0; i < cr->nkinds && strcmp(cr->kinds[i].what, norm); i++)
			;
		if (i == cr->nkinds && i < sizeof(cr->kinds) / sizeof(cr->kinds[0]))
			snprintf(cr->kinds[cr->nkinds++].what, sizeof(cr->kinds[0].what), "%s",
				 norm);
		if (i < cr->nkinds)
			cr->kinds[i].n++;
	}
	if (cr->nviols == CR_MAX_VIOL_KEPT) {
		pthread_mutex_unlock(&cr->viol_mu);
		return;
	}
	v = &cr->viols[cr->nviols++];
	memset(v, 0, sizeof(*v));
	v->round = cr->rd ? cr->rd->id - 1 : 0;
	v->round_seed = cr->rd ? cr->rd->seed : 0;
	v->cp = cp ? cp->seq : 0;
	v->ev = cp ? cp->ev : 0;
	snprintf(v->what, sizeof(v->what), "%s", what);
	if (choice && k) {
		v->state = malloc(k + 16);
		if (v->state) {
			for (size_t i = 0; i < k; i++)
				v->state[i] = choice[i] < 10 ? (char)('0' + choice[i]) : 'v';
			v->state[k] = 0;
			/* What the torn sectors (2) read back as. */
			if (memchr(choice, 2, k))
				snprintf(v->state + k, 16, " (2: %s)", cr_fill_name[choice[k]]);
		}
	}
	if (image && cr->save_dir) {
		FILE *f;

		snprintf(v->image, sizeof(v->image), "%s/crash-r%u-cp%" PRIu64 "-%zu.img",
			 cr->save_dir, v->round, v->cp, cr->nviols);
		f = fopen(v->image, "wb");
		size_t bytes = cr->rd ? cr->rd->dev_bytes : cr->dev_max;

		if (!f || fwrite(image, 1, bytes, f) != bytes)
			snprintf(v->image, sizeof(v->image), "(could not save)");
		if (f)
			fclose(f);
	}
	pthread_mutex_unlock(&cr->viol_mu);
}

/*
 * A recovery @s against what had been acknowledged (@durable, @acked, read before the
 * image) and what could have been released (@released, read after it): what had been
 * acknowledged is there (G1), and the recovered range starts no later than the oldest
 * checkpoint not released (G3).  With item tracking a checkpoint is also freed when
 * every key it holds was written back or relogged in a durable checkpoint, so the range
 * need only start at or before @must_lo, the oldest checkpoint holding the newest durable
 * copy of a key not written back (per key: its newest acknowledged value is there).
 * Returns whether it found something (in @msg).
 */
bool cr_judge(const struct round *rd, const struct summary *s, uint64_t durable, uint64_t released,
	      uint64_t must_lo, const uint32_t *acked, char *msg, size_t len)
{
	msg[0] = 0;
	if (!s->ok) {
		snprintf(msg, len, "%s", s->what);
	} else if (durable > released && (!s->nck || s->hi < durable)) {
		if (s->nck)
			snprintf(msg, len,
				 "checkpoint %" PRIu64 " was acknowledged (durable "
				 "watermark) but recovery ends at %" PRIu64 " (G1)",
				 durable, s->hi);
		else
			snprintf(msg, len,
				 "checkpoint %" PRIu64 " was acknowledged (durable "
				 "watermark) but recovery found no checkpoint (G1)",
				 durable);
	} else if (!rd->wl.track && s->nck && durable > released && s->lo > released + 1) {
		snprintf(msg, len,
			 "recovery starts at checkpoint %" PRIu64 " but only "
			 "checkpoints <= %" PRIu64 " were released (G3)",
			 s->lo, released);
	} else if (rd->wl.track && must_lo && s->nck && s->lo > must_lo) {
		snprintf(msg, len,
			 "recovery starts at checkpoint %" PRIu64 " but checkpoint %" PRIu64
			 " holds the newest acknowledged value of a key neither released "
			 "nor written back (item tracking; G1)",
			 s->lo, must_lo);
	} else {
		for (unsigned c = 0; c < rd->wl.clients; c++) {
			uint32_t a = acked[c];

			if (a && cr_rec_seq((struct round *)rd, c, a) > released &&
			    s->last_n[c] < a) {
				snprintf(msg, len,
					 "tx %u/%u was acknowledged (force returned) "
					 "but recovery has client %u only up to tx %u (G1)",
					 c, a, c, s->last_n[c]);
				break;
			}
		}
	}
	return msg[0] != 0;
}
