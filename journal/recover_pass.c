/*
 * recover_pass.c - step 3 of recovery, the main pass: read the log from the tail T to
 * the head E that steps 1 and 2 settled (recover.c), check every record, reassemble the
 * checkpoints from their ops and hand each complete one to the caller in commit order.
 *
 * Why a file of its own.  The rest of recovery looks at sectors around the head a few at
 * a time (probes, a binary search, backward scans); this step reads the whole live log
 * forward, with machinery of its own: a ring of chained reads kept in flight while the
 * buffer before them is parsed (struct fread), and a parser that carries an op across
 * records and a transaction across ops (struct parse).  It shares with recover.c only
 * the run's state (struct rctx), the record check and the damage reports (recover_rec.h,
 * recover_rec.c), and one function calls it: verify_then_replay (recover.c), once,
 * or with a replay callback first without callbacks to reach the verdict, keeping what
 * it would hand over (recover_hold.c), and then, when that did not all fit, again with
 * them (recover.c R9).
 *
 * Reading.  [T, E) (a follower's [from, E), recover.c R15) in chained reads of read_chunk bytes (iol_rw_submit splits each at
 * iol_max_segs segments), reads_in_flight of them outstanding; a record straddling two
 * reads, or the physical end, is gathered into a carry buffer.  Each record is checked
 * (jrnl_rcv_check_rec: jrnl_rec_check and its lap), must link back by prev_lsn to the
 * record before it, is unpacked, and its ops are parsed.  Step 2 verified every record
 * after D (recover.c R3), so damage met here is corruption: it stops the pass, and
 * nothing after it is replayed.
 *
 * Reassembly.  Transactions are reassembled by tid: START opens one, ITEMs (the only ops
 * split across records, CONTINUE then WAS_CONT) append to it, and a COMMIT whose seq,
 * counts and crc match hands its checkpoint over.  A transaction met without its START
 * began before the tail (its checkpoint is written back already) and is skipped, as long
 * as its COMMIT says so.  An op whose continuation never comes is what a writer that
 * resumed after a crash leaves: it is abandoned, never replayed (abandon_cont).
 *
 * Invariants (R1-R3, R5 and R7-R11 are recover.c's).
 *  (R4) A checkpoint is replayed only when its START and COMMIT lie in [T, E), all its
 *       items are complete and the commit's seq, start_lsn, nitems, payload_bytes and
 *       crc match; replays come in commit order, each once.  With replay_to N one of a
 *       later sequence is verified the same way and counted in held_back, never
 *       replayed; under salvage (R12) only those whose COMMIT precedes the damage.
 *  (R6) Every length taken from disk is bounded before use: a record by jrnl_rec_check
 *       against the bytes actually read, an op by its record's len, a reassembled
 *       payload by the bytes actually seen, the open transactions by OPEN_TX_MAX.
 *       (recover.c's own scans bound the records they meet the same way, through
 *       jrnl_rcv_rec_span and jrnl_rcv_check_rec.)
 */
#include "format.h"
#include "record.h"
#include "recover_rec.h"

#include <delog.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Transactions open at once (started, or met without their start, and not committed).
 * A writer has a few checkpoints in flight; more means damage, not a bigger table. */
#define OPEN_TX_MAX 256u

static uint32_t rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Requests iol_rw_submit splits @len bytes into: the same arithmetic as io.c. */
static unsigned reqs_for(const struct rctx *r, size_t len)
{
	size_t segs = (len + IOL_SEG_BYTES - 1) / IOL_SEG_BYTES;

	return (unsigned)((segs + r->per_req - 1) / r->per_req);
}

/* ---- the forward reader ---- */

/* One chained read of the main pass: a buffer and the sectors [a, a + n) it receives. */
struct fslot {
	struct fread *fr;
	unsigned char *buf;
	uint64_t a, n;
	int status;
	bool done;
};

/*
 * The forward reader: a ring of nslots buffers, the oldest being parsed while the others
 * are in flight (double-buffering at depth).  Completion runs on an iolayer thread and
 * only touches the slot and the counters under the lock.
 */
struct fread {
	struct rctx *r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fslot slot[INFLIGHT_MAX + 1];
	unsigned nslots, first, used;
	uint64_t next, end; /* next address to read, end of the region */
	unsigned outstanding;
};

static void fr_end(void *priv, int status)
{
	struct fslot *s = priv;
	struct fread *fr = s->fr;

	pthread_mutex_lock(&fr->lock);
	s->status = status;
	s->done = true;
	fr->outstanding--;
	pthread_cond_broadcast(&fr->cond);
	pthread_mutex_unlock(&fr->lock);
}

/* Keep every free buffer reading: pieces of read_chunk bytes, cut at the physical end. */
static int fr_issue(struct fread *fr)
{
	struct rctx *r = fr->r;

	while (fr->used < fr->nslots && fr->next < fr->end) {
		struct fslot *s = &fr->slot[(fr->first + fr->used) % fr->nslots];
		uint64_t n = min64(min64(r->cap, fr->end - fr->next), r->N - fr->next % r->N);
		int err;

		pthread_mutex_lock(&fr->lock);
		if (fr->outstanding == r->inflight) {
			/* The limit asked for; fr_release issues the next one. */
			pthread_mutex_unlock(&fr->lock);
			break;
		}
		s->a = fr->next;
		s->n = n;
		s->status = 0;
		s->done = false;
		fr->outstanding++;
		if (fr->outstanding > r->rep->max_reads_in_flight)
			r->rep->max_reads_in_flight = fr->outstanding;
		pthread_mutex_unlock(&fr->lock);
		err = iol_rw_submit(r->dev, IOL_OPF(IOL_OP_READ, 0), jrnl_rcv_dev_off(r, s->a),
				    s->buf, (size_t)(n * r->S), fr_end, s);
		if (err) {
			pthread_mutex_lock(&fr->lock);
			fr->outstanding--;
			pthread_mutex_unlock(&fr->lock);
			return err;
		}
		r->rep->read_reqs += reqs_for(r, (size_t)(n * r->S));
		r->rep->bytes_read += n * r->S;
		fr->used++;
		fr->next += n;
	}
	return 0;
}

/* The oldest buffer, once its read has completed. */
static int fr_front(struct fread *fr, struct fslot **out)
{
	struct fslot *s;
	int status;

	if (!fr->used)
		return -EIO; /* the region ran out under a record: cannot happen */
	s = &fr->slot[fr->first];
	pthread_mutex_lock(&fr->lock);
	while (!s->done)
		pthread_cond_wait(&fr->cond, &fr->lock);
	status = s->status;
	pthread_mutex_unlock(&fr->lock);
	*out = s;
	if (status == -EIO) {
		/* Some sector failed: read again a sector at a time (R14). */
		status = jrnl_rcv_read(fr->r, s->a, s->n, s->buf);
		s->status = status;
	}
	if (status)
		return status;
	/* A buffer may be free but unissued because the limit was reached then. */
	return fr_issue(fr);
}

static int fr_release(struct fread *fr)
{
	fr->first = (fr->first + 1) % fr->nslots;
	fr->used--;
	return fr_issue(fr);
}

static void fr_drain(struct fread *fr)
{
	pthread_mutex_lock(&fr->lock);
	while (fr->outstanding)
		pthread_cond_wait(&fr->cond, &fr->lock);
	pthread_mutex_unlock(&fr->lock);
}

/*
 * Point *out at the @n sectors at address @pos: in place when one buffer holds them,
 * else gathered into @carry (a record straddling two reads, or the physical end).
 * Buffers wholly before @pos are handed back to reading first.
 */
static int fr_bytes(struct fread *fr, uint64_t pos, uint64_t n, unsigned char *carry,
		    unsigned char **out)
{
	uint32_t S = fr->r->S;
	struct fslot *s;
	uint64_t got = 0;
	int err;

	for (;;) {
		err = fr_front(fr, &s);
		if (err)
			return err;
		if (s->a + s->n > pos)
			break;
		err = fr_release(fr);
		if (err)
			return err;
	}
	if (pos + n <= s->a + s->n) {
		*out = s->buf + (pos - s->a) * S;
		return 0;
	}
	while (got < n) {
		uint64_t from = pos + got, k;

		err = fr_front(fr, &s);
		if (err)
			return err;
		k = min64(n - got, s->a + s->n - from);
		memcpy(carry + got * S, s->buf + (from - s->a) * S, k * S);
		got += k;
		if (from + k == s->a + s->n) {
			err = fr_release(fr);
			if (err)
				return err;
		}
	}
	*out = carry;
	return 0;
}

/* ---- reassembling checkpoints ---- */

/* An item of a transaction being reassembled: its data lives in the transaction's
 * buffer, as an offset because the buffer grows. */
struct pitem {
	uint64_t key;
	size_t off;
	uint32_t len;
};

/* A transaction being reassembled, or (skip) one whose START lies before the tail. */
struct ptx {
	uint32_t tid;
	bool skip;
	uint64_t seq, start_lsn;
	uint32_t nitems, crc;
	uint64_t bytes;
	struct pitem *items;
	size_t items_cap;
	unsigned char *data;
	size_t data_len, data_cap;
};

/* Parser state carried from record to record. */
struct parse {
	struct ptx *tx;
	size_t ntx;
	struct ptx spare; /* buffers of a finished transaction, for the next one */
	/* The op being reassembled (it may continue into the next record). */
	bool cont; /* the last op of the previous record carried CONTINUE */
	uint32_t op_tid;
	uint16_t op_type, op_flags;
	uint64_t op_lsn;         /* record holding the op's first piece */
	uint64_t op_off;         /* device offset of the first piece's header */
	uint64_t op_len;         /* payload bytes so far */
	bool op_skip;            /* payload not kept: a transaction before the tail */
	size_t op_item_off;      /* where the item started in its transaction's data */
	unsigned char small[32]; /* START / COMMIT / UNMOUNT payload */
	bool rec_unmount;        /* the record just parsed is an unmount record */
	bool have_seq;           /* a checkpoint was complete; last_seq is its sequence */
	uint64_t last_seq;
	struct jrnl_item_view *views;
	size_t views_cap;
};

static struct ptx *tx_find(struct parse *ps, uint32_t tid)
{
	for (size_t i = ps->ntx; i-- > 0;)
		if (ps->tx[i].tid == tid)
			return &ps->tx[i];
	return NULL;
}

static void tx_free(struct ptx *t)
{
	free(t->items);
	free(t->data);
}

/* Finish with @t; its buffers are kept for the next transaction (regrowing them for
 * every checkpoint would copy each checkpoint's bytes twice more). */
static void tx_remove(struct parse *ps, struct ptx *t)
{
	if (!ps->spare.data && !ps->spare.items) {
		ps->spare = *t;
		t->data = NULL;
		t->items = NULL;
	}
	tx_free(t);
	*t = ps->tx[--ps->ntx];
}

/* A new table entry for @tid, or NULL when OPEN_TX_MAX are open (or no memory). */
static struct ptx *tx_add(struct parse *ps, uint32_t tid, bool skip)
{
	struct ptx *t;

	if (ps->ntx == OPEN_TX_MAX)
		return NULL;
	if (!ps->tx) {
		ps->tx = calloc(OPEN_TX_MAX, sizeof(*ps->tx));
		if (!ps->tx)
			return NULL;
	}
	t = &ps->tx[ps->ntx++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->skip = skip;
	if (!skip) {
		t->data = ps->spare.data;
		t->data_cap = ps->spare.data_cap;
		t->items = ps->spare.items;
		t->items_cap = ps->spare.items_cap;
		memset(&ps->spare, 0, sizeof(ps->spare));
	}
	return t;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* Context of the op being parsed, for error reports. */
struct opctx {
	const struct rinfo *ri;
	uint64_t off; /* device offset of the op header */
	uint32_t idx; /* op index in its record */
};

#define OP_BAD(r, oc, code, field, ...)                                                            \
	jrnl_rcv_corrupt((r), (code), (oc)->ri->a, (oc)->off, (field), __VA_ARGS__)

/* The op @op, met at @oc, is the one being parsed now (@flags: its kind bits; @skip:
 * its transaction lies before the tail, nothing of it is kept). */
static void op_begin(struct parse *ps, const struct jrnl_op *op, const struct opctx *oc,
		     uint16_t flags, bool skip)
{
	ps->op_tid = op->tid;
	ps->op_type = op->type;
	ps->op_flags = flags;
	ps->op_lsn = oc->ri->lsn;
	ps->op_off = oc->off;
	ps->op_len = 0;
	ps->op_skip = skip;
}

static int replay_ckpt(struct rctx *r, struct parse *ps, struct ptx *t, const struct opctx *oc,
		       const struct jrnl_commit *c)
{
	struct jrnl_ckpt ck = {
		.seq = t->seq,
		.start_lsn = t->start_lsn,
		.commit_lsn = ps->op_lsn,
		.nitems = t->nitems,
		.payload_bytes = t->bytes,
	};
	uint64_t data = 0;
	int err;

	if (c->seq != t->seq || c->start_lsn != t->start_lsn)
		return OP_BAD(r, oc, DELOG_ECORRUPT, "commit.seq",
			      "COMMIT of tid %#x says seq %llu from lsn %u/%u, START said seq %llu",
			      t->tid, (unsigned long long)c->seq, jrnl_lsn_cycle(c->start_lsn),
			      jrnl_lsn_sector(c->start_lsn), (unsigned long long)t->seq);
	if (c->nitems != t->nitems || c->payload_bytes != t->bytes)
		return OP_BAD(
			r, oc, DELOG_ECORRUPT,
			c->nitems != t->nitems ? "commit.nitems" : "commit.payload_bytes",
			"checkpoint %llu: COMMIT says %u items of %llu bytes, log holds %u of %llu",
			(unsigned long long)t->seq, c->nitems, (unsigned long long)c->payload_bytes,
			t->nitems, (unsigned long long)t->bytes);
	if (c->crc != t->crc)
		return OP_BAD(r, oc, DELOG_ECHECKSUM, "commit.crc",
			      "checkpoint %llu: item crc %#x, COMMIT says %#x",
			      (unsigned long long)t->seq, t->crc, c->crc);
	if (ps->have_seq && t->seq != ps->last_seq + 1)
		return OP_BAD(r, oc, DELOG_ECORRUPT, "commit.seq",
			      "checkpoint %llu follows checkpoint %llu: sequences must be consecutive",
			      (unsigned long long)t->seq, (unsigned long long)ps->last_seq);
	ps->have_seq = true;
	ps->last_seq = t->seq;
	r->have_verified = true;
	r->verified_seq = t->seq;
	if (t->seq < r->replay_from)
		return 0; /* a follower has it (R15) */
	if (r->replay_to && t->seq > r->replay_to) {
		/* Point in time: verified like every other, never handed over (R4). */
		r->rep->held_back++;
		return 0;
	}
	err = grow((void **)&ps->views, &ps->views_cap, t->nitems, sizeof(*ps->views));
	if (err)
		return err;
	for (uint32_t i = 0; i < t->nitems; i++) {
		ps->views[i].key = t->items[i].key;
		ps->views[i].data = t->data + t->items[i].off;
		ps->views[i].len = t->items[i].len;
		data += t->items[i].len;
	}
	if (r->replay) {
		err = r->replay(r->priv, &ck, ps->views, t->nitems);
		if (err)
			return err;
	} else if (r->hold) {
		jrnl_rcv_hold_add(r->hold, &ck, ps->views, t->nitems, t->data, t->data_len);
	}
	if (!r->rep->checkpoints)
		r->rep->first_seq = t->seq;
	r->rep->last_seq = t->seq;
	r->rep->checkpoints++;
	r->rep->items += t->nitems;
	r->rep->bytes_replayed += data;
	return 0;
}

/*
 * Checkpoint @t commits: every other checkpoint still open must be an earlier attempt at
 * the same sequence, which a writer that resumed after a crash (or after the log shut
 * down) abandoned and wrote again; it is dropped.  An open checkpoint of another
 * sequence never committed although a later one did: its COMMIT was lost in the middle
 * of the log, which no crash does (checkpoints are written one at a time), so it is
 * corruption (recover.c R9: a prefix or nothing).
 */
static int open_behind(struct rctx *r, struct parse *ps, struct ptx **tp, const struct opctx *oc)
{
	struct ptx *t = *tp;

	for (size_t i = 0; i < ps->ntx;) {
		struct ptx *o = &ps->tx[i];

		if (o == t || o->skip) {
			i++;
			continue;
		}
		if (o->seq != t->seq)
			return OP_BAD(r, oc, DELOG_ECORRUPT, "",
				      "checkpoint %llu (tid %#x, from lsn %u/%u) never committed, "
				      "but checkpoint %llu after it did",
				      (unsigned long long)o->seq, o->tid,
				      jrnl_lsn_cycle(o->start_lsn), jrnl_lsn_sector(o->start_lsn),
				      (unsigned long long)t->seq);
		r->rep->dropped++;
		if (t == &ps->tx[ps->ntx - 1])
			t = o; /* tx_remove moves the last entry into o's slot */
		tx_remove(ps, o);
	}
	*tp = t;
	return 0;
}

/* A whole op has been gathered (all its pieces): act on it. */
static int op_done(struct rctx *r, struct parse *ps, const struct opctx *oc)
{
	struct ptx *t = tx_find(ps, ps->op_tid);
	struct jrnl_commit c;
	struct jrnl_item it;
	uint64_t sa;

	switch (ps->op_type) {
	case JRNL_T_START:
		if (ps->op_len != sizeof(struct jrnl_start))
			return OP_BAD(r, oc, DELOG_EBADOP, "op.len",
				      "START op of %llu bytes, expected %zu",
				      (unsigned long long)ps->op_len, sizeof(struct jrnl_start));
		if (t && !t->skip)
			return OP_BAD(r, oc, DELOG_EBADOP, "op.tid",
				      "START for tid %#x, which is already open", ps->op_tid);
		if (t)
			tx_remove(ps, t);
		t = tx_add(ps, ps->op_tid, false);
		if (!t)
			return ps->tx ? OP_BAD(r, oc, DELOG_EBADOP, "op.tid",
					       "more than %u transactions open at once",
					       OPEN_TX_MAX) :
					-ENOMEM;
		t->seq = rd64(ps->small);
		t->start_lsn = ps->op_lsn;
		if (t->seq > r->started_seq)
			r->started_seq = t->seq;
		return 0;
	case JRNL_T_ITEM:
		if (ps->op_skip)
			return 0;
		if (ps->op_len < sizeof(it))
			return OP_BAD(r, oc, DELOG_EBADOP, "op.len",
				      "ITEM op of %llu bytes, below its header",
				      (unsigned long long)ps->op_len);
		memcpy(&it, t->data + ps->op_item_off, sizeof(it));
		if (sizeof(it) + (uint64_t)it.data_len != ps->op_len)
			return OP_BAD(r, oc, DELOG_EBADOP, "item.data_len",
				      "ITEM of %u data bytes in an op of %llu bytes", it.data_len,
				      (unsigned long long)ps->op_len);
		if (t->nitems == UINT32_MAX)
			return OP_BAD(r, oc, DELOG_EBADOP, "", "too many items in checkpoint %llu",
				      (unsigned long long)t->seq);
		if (grow((void **)&t->items, &t->items_cap, (size_t)t->nitems + 1,
			 sizeof(*t->items)))
			return -ENOMEM;
		t->items[t->nitems].key = it.key;
		t->items[t->nitems].off = ps->op_item_off + sizeof(it);
		t->items[t->nitems].len = it.data_len;
		t->nitems++;
		t->crc = jrnl_crc32c(t->crc, t->data + ps->op_item_off, (size_t)ps->op_len);
		t->bytes += ps->op_len;
		return 0;
	case JRNL_T_COMMIT:
		if (ps->op_len != sizeof(c))
			return OP_BAD(r, oc, DELOG_EBADOP, "op.len",
				      "COMMIT op of %llu bytes, expected %zu",
				      (unsigned long long)ps->op_len, sizeof(c));
		memcpy(&c, ps->small, sizeof(c));
		if (!t || t->skip) {
			/* Its START was not seen: fine if it lies before the tail (the
			 * checkpoint is already written back) or before where a follower
			 * started (it took it, R15), an orphan otherwise. */
			if (!jrnl_rcv_lsn_addr(r, c.start_lsn, &sa))
				return OP_BAD(r, oc, DELOG_EBADOP, "commit.start_lsn",
					      "COMMIT of tid %#x names start lsn %u/%u outside the log",
					      ps->op_tid, jrnl_lsn_cycle(c.start_lsn),
					      jrnl_lsn_sector(c.start_lsn));
			if (sa >= r->from)
				return OP_BAD(r, oc, DELOG_EORPHAN, "commit.start_lsn",
					      "COMMIT of tid %#x (seq %llu): its START at lsn %u/%u "
					      "lies in the log but was never seen",
					      ps->op_tid, (unsigned long long)c.seq,
					      jrnl_lsn_cycle(c.start_lsn),
					      jrnl_lsn_sector(c.start_lsn));
			if (t)
				tx_remove(ps, t);
			return 0;
		}
		{
			int err = open_behind(r, ps, &t, oc);

			if (!err)
				err = replay_ckpt(r, ps, t, oc, &c);
			if (!err)
				tx_remove(ps, t);
			return err;
		}
	case JRNL_T_UNMOUNT:
		if (ps->op_len != sizeof(struct jrnl_unmount) ||
		    rd64(ps->small) != JRNL_UNMOUNT_MAGIC)
			return OP_BAD(r, oc, DELOG_EBADOP,
				      ps->op_len != sizeof(struct jrnl_unmount) ? "op.len" :
										  "unmount.magic",
				      "malformed UNMOUNT op (%llu bytes)",
				      (unsigned long long)ps->op_len);
		ps->rec_unmount = oc->ri->num_ops == 1;
		return 0;
	}
	return OP_BAD(r, oc, DELOG_EBADOP, "op.type", "op of unknown type %u", ps->op_type);
}

/* Flags a first piece of each type may carry, besides CONTINUE. */
static uint16_t type_flags(uint16_t type)
{
	switch (type) {
	case JRNL_T_START:
		return JRNL_OP_START;
	case JRNL_T_COMMIT:
		return JRNL_OP_COMMIT;
	case JRNL_T_UNMOUNT:
		return JRNL_OP_UNMOUNT;
	default:
		return 0;
	}
}

/*
 * The previous record ended with an op piece flagged CONTINUE, and this record does not
 * continue it.  Records are CRC-checked and chained by prev_lsn, so this is not damage:
 * it is what a writer that resumed after a crash leaves.  The crash tore off the record
 * holding the rest of that op (it lay past the durable point, so recovery dropped its
 * checkpoint as incomplete), and the writer went on at that head with a new
 * transaction.  The op, and the transaction it belongs to, are abandoned: counted as
 * dropped, never replayed (its COMMIT cannot follow: the writer never reuses a tid).
 */
static void abandon_cont(struct rctx *r, struct parse *ps)
{
	struct ptx *t = tx_find(ps, ps->op_tid);

	if (t) {
		r->rep->dropped += !t->skip;
		tx_remove(ps, t);
	}
	ps->cont = false;
}

/*
 * One op header and its payload piece (@op->len bytes at @data, already bounded by the
 * record).  Checks the flags against the op's type and against the continuation state,
 * then appends the piece and, when it is the last, acts on the op.
 */
static int op_piece(struct rctx *r, struct parse *ps, const struct jrnl_op *op,
		    const unsigned char *data, const struct opctx *oc, bool first_rec)
{
	const uint16_t kind = JRNL_OP_START | JRNL_OP_COMMIT | JRNL_OP_UNMOUNT;
	bool was = op->flags & JRNL_OP_WAS_CONT, cont = op->flags & JRNL_OP_CONTINUE;
	bool end = op->flags & JRNL_OP_END;
	struct ptx *t;

	if (was) {
		if (oc->idx)
			return OP_BAD(r, oc, DELOG_EORPHAN, "op.flags",
				      "continuation op of tid %#x is not the first op of its record",
				      op->tid);
		if (!ps->cont && (!first_rec || oc->ri->a == r->N))
			return OP_BAD(r, oc, DELOG_EORPHAN, "op.flags",
				      "continuation op of tid %#x without its start", op->tid);
		if (ps->cont && (ps->op_tid != op->tid || ps->op_type != op->type))
			return OP_BAD(r, oc, DELOG_EORPHAN, "op.tid",
				      "continuation op of tid %#x type %u, but tid %#x type %u "
				      "was continued",
				      op->tid, op->type, ps->op_tid, ps->op_type);
		if (cont == end)
			return OP_BAD(r, oc, DELOG_EBADOP, "op.flags",
				      "continuation op flags %#x: need exactly one of CONTINUE and END",
				      op->flags);
		if (!ps->cont) {
			/* The record at the tail continues an op whose start lies before the
			 * tail: its transaction is already written back; ignore it. */
			op_begin(ps, op, oc, op->flags & kind, true);
			if (!tx_find(ps, op->tid) && !tx_add(ps, op->tid, true))
				return ps->tx ? OP_BAD(r, oc, DELOG_EBADOP, "op.tid",
						       "more than %u transactions open at once",
						       OPEN_TX_MAX) :
						-ENOMEM;
		} else if ((op->flags & kind) & ~ps->op_flags) {
			return OP_BAD(r, oc, DELOG_EBADOP, "op.flags",
				      "continuation op flags %#x disagree with its start (%#x)",
				      op->flags, ps->op_flags);
		}
	} else {
		if (ps->cont)
			abandon_cont(r, ps);
		if (end)
			return OP_BAD(r, oc, DELOG_EBADOP, "op.flags",
				      "END flag without WAS_CONT (flags %#x)", op->flags);
		if ((op->flags & kind) != type_flags(op->type))
			return OP_BAD(r, oc, DELOG_EBADOP, "op.flags", "op type %u with flags %#x",
				      op->type, op->flags);
		if (cont && op->type != JRNL_T_ITEM)
			return OP_BAD(r, oc, DELOG_EBADOP, "op.flags",
				      "op type %u carries CONTINUE (only ITEM ops are split)",
				      op->type);
		op_begin(ps, op, oc, op->flags & kind, false);
		if (op->type == JRNL_T_ITEM) {
			t = tx_find(ps, op->tid);
			if (!t) {
				/* No START seen: a transaction from before the tail, as long as
				 * its COMMIT (if any) says so; see op_done. */
				t = tx_add(ps, op->tid, true);
				if (!t)
					return ps->tx ?
						       OP_BAD(r, oc, DELOG_EBADOP, "op.tid",
							      "more than %u transactions open at once",
							      OPEN_TX_MAX) :
						       -ENOMEM;
			}
			ps->op_skip = t->skip;
			ps->op_item_off = t->data_len;
		}
	}

	if (ps->op_type == JRNL_T_ITEM) {
		if (!ps->op_skip && op->len) {
			t = tx_find(ps, ps->op_tid);
			if (!t || grow((void **)&t->data, &t->data_cap, t->data_len + op->len, 1))
				return -ENOMEM;
			memcpy(t->data + t->data_len, data, op->len);
			t->data_len += op->len;
		}
	} else if (!ps->op_skip) {
		if (ps->op_len + op->len > sizeof(ps->small))
			return OP_BAD(r, oc, DELOG_EBADOP, "op.len",
				      "op type %u of more than %zu bytes", ps->op_type,
				      sizeof(ps->small));
		memcpy(ps->small + ps->op_len, data, op->len);
	}
	ps->op_len += op->len;
	ps->cont = cont;
	if (cont)
		return 0;
	if (ps->op_skip) {
		if (ps->op_type == JRNL_T_COMMIT && (t = tx_find(ps, ps->op_tid)) && t->skip)
			tx_remove(ps, t);
		return 0;
	}
	return op_done(r, ps, oc);
}

/* Device offset of byte @off of the payload of the record @ri. */
static uint64_t payload_off(const struct rctx *r, const struct rinfo *ri, uint64_t off)
{
	return jrnl_rcv_dev_off(r, ri->a + ri->h + off / r->S) + off % r->S;
}

/* Parse the ops of one checked, unpacked record. */
static int parse_record(struct rctx *r, struct parse *ps, const unsigned char *rec,
			const struct rinfo *ri, bool first_rec)
{
	const unsigned char *pl = rec + (size_t)ri->h * r->S;
	uint64_t off = 0, len = ri->len;
	struct opctx oc = { .ri = ri };
	int err;

	ps->rec_unmount = false;
	if (ps->cont && !ri->num_ops)
		abandon_cont(r, ps);
	for (uint32_t i = 0; i < ri->num_ops; i++) {
		struct jrnl_op op;

		oc.off = payload_off(r, ri, off);
		oc.idx = i;
		if (len - off < sizeof(op))
			return OP_BAD(r, &oc, DELOG_EBADOP, "rec.len",
				      "op %u of %u: header runs past the record's %llu bytes", i,
				      ri->num_ops, (unsigned long long)len);
		memcpy(&op, pl + off, sizeof(op));
		off += sizeof(op);
		if (op.len > len - off)
			return OP_BAD(r, &oc, DELOG_EBADOP, "op.len",
				      "op %u of tid %#x: %u bytes run past the record's %llu", i,
				      op.tid, op.len, (unsigned long long)len);
		if ((op.flags & ~JRNL_OP_FLAGS_KNOWN) || op.reserved || op.type < JRNL_T_START ||
		    op.type > JRNL_T_UNMOUNT)
			return OP_BAD(r, &oc, DELOG_EBADOP,
				      op.flags & ~JRNL_OP_FLAGS_KNOWN ? "op.flags" :
				      op.reserved                     ? "op.reserved" :
									"op.type",
				      "op %u of tid %#x: unknown type %u or flags %#x", i, op.tid,
				      op.type, op.flags);
		if ((op.flags & JRNL_OP_CONTINUE) && i + 1 != ri->num_ops)
			return OP_BAD(r, &oc, DELOG_EBADOP, "op.flags",
				      "op %u of tid %#x carries CONTINUE but is not its record's last",
				      i, op.tid);
		if (r->on_op) {
			struct jrnl_op_view ov = {
				.rec_lsn = ri->lsn,
				.offset = oc.off,
				.idx = i,
				.tid = op.tid,
				.len = op.len,
				.flags = op.flags,
				.type = op.type,
				.data = pl + off,
			};

			err = r->on_op(r->priv, &ov);
			if (err)
				return err;
		}
		err = op_piece(r, ps, &op, pl + off, &oc, first_rec);
		if (err)
			return err;
		off = min64(len, off + ((op.len + 7ull) & ~7ull));
	}
	for (; off < len; off++) {
		if (pl[off]) {
			oc.off = payload_off(r, ri, off);
			return OP_BAD(r, &oc, DELOG_EBADOP, "rec.num_ops",
				      "non-zero bytes after the last of %u ops", ri->num_ops);
		}
	}
	return 0;
}

/* ---- the pass ---- */

/* A record of the main pass failed its check: say what and where. */
static int rec_damage(struct rctx *r, int v, const unsigned char *p, uint64_t n, uint64_t a)
{
	unsigned long long sec = a % r->N;

	uint64_t x;

	if (jrnl_rcv_any_unreadable(r, a, a + n, &x))
		return jrnl_rcv_corrupt(r, -EIO, a, jrnl_rcv_dev_off(r, x), "",
					"sector %llu of the record at sector %llu cannot be read (EIO)",
					(unsigned long long)(x % r->N), sec);
	switch (v) {
	case JRNL_REC_FOREIGN:
	case JRNL_REC_VERSION:
	case JRNL_REC_GEOMETRY:
		return jrnl_rcv_hard_damage(r, v, a, p);
	case JRNL_REC_SHORT:
		return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, a, jrnl_rcv_dev_off(r, a),
					"rec.payload_sectors",
					"record at sector %llu runs past the head", sec);
	case JRNL_REC_TORN:
		for (uint64_t k = 1; k < n; k++) {
			uint32_t c = jrnl_sector_cycle(p + k * r->S);

			if (c != jrnl_rcv_lap_cycle((a + k) / r->N))
				return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, a,
							jrnl_rcv_dev_off(r, a + k), "rec.cycle",
							"sector %llu of the record at sector %llu carries "
							"cycle %u, expected %u",
							(unsigned long long)((a + k) % r->N), sec,
							c, jrnl_rcv_lap_cycle((a + k) / r->N));
		}
		return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, a, jrnl_rcv_dev_off(r, a), "rec.cycle",
					"record at sector %llu is not completely written", sec);
	case JRNL_REC_CRC:
		return jrnl_rcv_corrupt(r, DELOG_ECHECKSUM, a, jrnl_rcv_dev_off(r, a), "rec.crc",
					"record at sector %llu fails its CRC", sec);
	case JRNL_REC_MISPLACED:
		return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, a, jrnl_rcv_dev_off(r, a), "rec.lsn",
					"record header at sector %llu names sector %u: a copy of "
					"another record's header",
					sec,
					jrnl_lsn_sector(rd64(p + offsetof(struct jrnl_rec, lsn))));
	case REC_WRONG_LAP:
		return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, a, jrnl_rcv_dev_off(r, a), "rec.cycle",
					"record at sector %llu has cycle %u, expected %u (stale lap)",
					sec, rd32(p + 4), jrnl_rcv_lap_cycle(a / r->N));
	default:
		return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, a, jrnl_rcv_dev_off(r, a), "",
					"no valid record header at sector %llu", sec);
	}
}

/*
 * Read [T, E) with reads_in_flight chained reads outstanding, check every record, parse
 * its ops and replay complete checkpoints.
 */
int jrnl_rcv_main_pass(struct rctx *r)
{
	struct fread fr = { .r = r, .nslots = r->inflight + 1, .next = r->from, .end = r->E };
	struct parse ps = { 0 };
	unsigned char *carry, *p;
	uint64_t pos = r->from, prev_lsn = 0;
	bool first = true;
	struct rinfo ri;
	int err = 0, v;

	carry = iol_buf_alloc(r->dev, MAXREC_BYTES);
	if (!carry)
		return -ENOMEM;
	pthread_mutex_init(&fr.lock, NULL);
	pthread_cond_init(&fr.cond, NULL);
	for (unsigned i = 0; i < fr.nslots; i++) {
		fr.slot[i].fr = &fr;
		fr.slot[i].buf = iol_buf_alloc(r->dev, r->chunk);
		if (!fr.slot[i].buf)
			err = -ENOMEM;
	}
	if (!err)
		err = fr_issue(&fr);
	while (!err && pos < r->E) {
		uint64_t n;

		err = fr_bytes(&fr, pos, 1, carry, &p);
		if (err)
			break;
		n = min64(jrnl_rcv_rec_span(r, p), r->E - pos);
		err = fr_bytes(&fr, pos, n, carry, &p);
		if (err)
			break;
		v = jrnl_rcv_check_rec(r, p, n, pos, &ri);
		if (v != JRNL_REC_OK) {
			err = rec_damage(r, v, p, n, pos);
			break;
		}
		if (!first && ri.prev_lsn != prev_lsn) {
			err = jrnl_rcv_corrupt(r, DELOG_ECORRUPT, pos, jrnl_rcv_dev_off(r, pos),
					       "rec.prev_lsn",
					       "record at sector %llu links back to lsn %u/%u, not to the "
					       "record before it at %u/%u",
					       (unsigned long long)(pos % r->N),
					       jrnl_lsn_cycle(ri.prev_lsn),
					       jrnl_lsn_sector(ri.prev_lsn),
					       jrnl_lsn_cycle(prev_lsn), jrnl_lsn_sector(prev_lsn));
			break;
		}
		if (r->on_record) {
			struct jrnl_rec_view rv = {
				.lsn = ri.lsn,
				.tail_lsn = ri.tail_lsn,
				.durable_lsn = ri.durable_lsn,
				.prev_lsn = ri.prev_lsn,
				.offset = jrnl_rcv_dev_off(r, pos),
				.cycle = rd32(p + 4),
				.len = ri.len,
				.num_ops = ri.num_ops,
				.hdr_sectors = ri.h,
				.payload_sectors = ri.p,
				.crc = rd32(p + 48),
				.logbufs = rd32(p + 80),
				.logbsize = rd32(p + 84),
				.wraps = pos % r->N + ri.h + ri.p > r->N,
			};

			err = r->on_record(r->priv, &rv);
			if (err)
				break;
		}
		jrnl_rec_unpack(p, r->S);
		err = parse_record(r, &ps, p, &ri, first);
		if (err)
			break;
		r->rep->records++;
		prev_lsn = ri.lsn;
		pos = ri.end;
		first = false;
	}
	fr_drain(&fr);
	/* Salvage (recover.c R12): the damage is the end of the log, so what is open there
	 * was dropped at its head. */
	if (!err || (r->salvage && err == r->rep->corruption)) {
		for (size_t i = 0; i < ps.ntx; i++)
			r->rep->dropped += !ps.tx[i].skip;
	}
	if (!err)
		r->rep->clean = r->rep->records && ps.rec_unmount;
	for (size_t i = 0; i < ps.ntx; i++)
		tx_free(&ps.tx[i]);
	tx_free(&ps.spare);
	free(ps.tx);
	free(ps.views);
	for (unsigned i = 0; i < fr.nslots; i++)
		free(fr.slot[i].buf);
	pthread_cond_destroy(&fr.cond);
	pthread_mutex_destroy(&fr.lock);
	free(carry);
	return err;
}
