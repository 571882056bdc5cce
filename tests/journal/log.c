/*
 * log.c - the log writer (journal/log.c) on the simulated disk: records read back and
 * checked byte by byte (jrnl_rec_check, jrnl_rec_unpack, ops parsed here), transactions
 * spanning buffers, the physical wrap at chosen offsets, completion processing in LSN
 * order under out-of-order delivery, the PREFLUSH/FUA flags per request, WAIT_PREV,
 * ELOGFULL at the tail, shutdown after a write or flush error, durable_lsn, unmount,
 * reopening from a report, option validation, and a multi-threaded run.
 */
#include <criterion/criterion.h>
#include <delog.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "io_sim.h"
#include "jrnl.h"
#include "record.h"

#define TO 60

/* ---- a log on a sim disk ---- */

struct tl {
	struct iol_dev *dev;
	struct jrnl_geom g;
	struct jrnl_log *log;
	struct jrnl_log_opts lo;
	bool hold;
	size_t trace0; /* trace events before the log was opened */
};

static void tl_dev(struct tl *t, uint32_t sector, uint64_t log_size, bool hold,
		   enum iol_sim_latency lat, uint64_t seed)
{
	uint64_t dev_bytes = JRNL_LOG_START + log_size;
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = dev_bytes,
				   .sector = sector,
				   .seed = seed,
				   .latency = lat };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct jrnl_format_opts fo = { .sector = sector, .log_size = log_size };
	struct jrnl_geom g2;

	memset(t, 0, sizeof(*t));
	cr_assert_eq(iol_dev_open(NULL, &o, &t->dev), 0);
	cr_assert_eq(jrnl_format(t->dev, &fo, &t->g), 0);
	cr_assert_eq(jrnl_sb_read(t->dev, &g2), 0);
	cr_assert_eq(g2.log_sectors, t->g.log_sectors);
	if (hold) {
		/* Format needs completions; a hold disk starts from the formatted image. */
		void *img = malloc(dev_bytes);

		cr_assert(img);
		cr_assert_eq(iol_sim_media(t->dev, 0, img, dev_bytes), 0);
		iol_dev_close(t->dev);
		so.hold = true;
		so.image = img;
		cr_assert_eq(iol_dev_open(NULL, &o, &t->dev), 0);
		free(img);
	}
	t->hold = hold;
	t->trace0 = iol_sim_trace_len(t->dev);
}

static void tl_open_log(struct tl *t, unsigned logbufs, uint32_t logbsize)
{
	t->lo.logbufs = logbufs;
	t->lo.logbsize = logbsize;
	cr_assert_eq(jrnl_log_open(t->dev, &t->g, NULL, &t->lo, &t->log), 0);
}

static void tl_open(struct tl *t, uint32_t sector, uint64_t log_size, unsigned logbufs,
		    uint32_t logbsize, bool hold)
{
	tl_dev(t, sector, log_size, hold, IOL_SIM_LAT_NONE, 1);
	tl_open_log(t, logbufs, logbsize);
}

/* A writer whose space is reused once the record naming the tail completed (no_flush,
 * log.c L12): for the layout tests that move the tail after every record and never
 * flush, so that records land exactly where they compute. */
static void tl_open_noflush(struct tl *t, uint32_t sector, uint64_t log_size, unsigned logbufs,
			    uint32_t logbsize)
{
	tl_dev(t, sector, log_size, false, IOL_SIM_LAT_NONE, 1);
	t->lo.no_flush = true;
	tl_open_log(t, logbufs, logbsize);
}

/* On a hold disk, something must deliver while the close forces: a helper thread. */
struct deliverer {
	struct iol_dev *dev;
	atomic_bool stop;
	pthread_t th;
};

static void *deliver_loop(void *arg)
{
	struct deliverer *d = arg;

	while (!atomic_load(&d->stop))
		if (!iol_sim_deliver(d->dev, SIZE_MAX, IOL_SIM_FIFO))
			sched_yield();
	return NULL;
}

static void tl_close(struct tl *t)
{
	struct deliverer d = { .dev = t->dev };

	if (t->hold) {
		atomic_init(&d.stop, false);
		cr_assert_eq(pthread_create(&d.th, NULL, deliver_loop, &d), 0);
	}
	jrnl_log_close(t->log);
	if (t->hold) {
		atomic_store(&d.stop, true);
		pthread_join(d.th, NULL);
	}
	iol_dev_close(t->dev);
}

/* LSN @n sectors after @lsn. */
static uint64_t t_lsn_add(const struct tl *t, uint64_t lsn, uint64_t n)
{
	return jrnl_lsn_add(lsn, n, t->g.log_sectors);
}

/* ---- reading ---- */

struct rd_wait {
	bool done;
	int status;
};

static void rd_end(void *priv, int status)
{
	struct rd_wait *w = priv;

	w->status = status;
	w->done = true;
}

static void dev_read(struct tl *t, uint64_t off, void *buf, size_t len)
{
	struct rd_wait w = { 0 };

	if (!t->hold) {
		cr_assert_eq(iol_rw_wait(t->dev, IOL_OPF(IOL_OP_READ, 0), off, buf, len, NULL), 0);
		return;
	}
	cr_assert_eq(iol_rw_submit(t->dev, IOL_OPF(IOL_OP_READ, 0), off, buf, len, rd_end, &w), 0);
	while (!w.done)
		iol_sim_deliver(t->dev, SIZE_MAX, IOL_SIM_FIFO);
	cr_assert_eq(w.status, 0);
}

struct trec {
	uint64_t lsn;
	struct jrnl_rec hdr;
	uint32_t sectors;   /* H + P */
	unsigned char *raw; /* as on disk (end part first if wrapped) */
	unsigned char *buf; /* unpacked */
	uint32_t nops;
	struct jrnl_op *ops;
	const unsigned char **pay;
};

static void trec_free(struct trec *r)
{
	free(r->raw);
	free(r->buf);
	free(r->ops);
	free(r->pay);
	memset(r, 0, sizeof(*r));
}

static uint32_t pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

/* Read the record at @lsn (contiguously, also when it wraps), check it, unpack it, and
 * parse its ops: every op lies inside len, is padded with zeroes, and num_ops counts
 * them. */
static void rec_read_from(struct tl *t, uint64_t lsn, bool media, struct trec *r)
{
	uint32_t s = t->g.sector, sec = jrnl_lsn_sector(lsn);
	uint32_t max = t->lo.logbsize / s, first;
	size_t bytes = (size_t)max * s;
	const struct jrnl_rec *h = NULL;
	const unsigned char *p;
	enum jrnl_rec_verdict v;
	uint32_t pos = 0;

	memset(r, 0, sizeof(*r));
	first = t->g.log_sectors - sec < max ? (uint32_t)(t->g.log_sectors - sec) : max;
	r->buf = iol_buf_alloc(t->dev, bytes);
	r->raw = malloc(bytes);
	cr_assert(r->buf && r->raw);
	if (media) {
		cr_assert_eq(iol_sim_media(t->dev, t->g.log_start + (uint64_t)sec * s, r->buf,
					   (size_t)first * s),
			     0);
		if (first < max)
			cr_assert_eq(iol_sim_media(t->dev, t->g.log_start,
						   r->buf + (size_t)first * s,
						   (size_t)(max - first) * s),
				     0);
	} else {
		dev_read(t, t->g.log_start + (uint64_t)sec * s, r->buf, (size_t)first * s);
		if (first < max)
			dev_read(t, t->g.log_start, r->buf + (size_t)first * s,
				 (size_t)(max - first) * s);
	}
	v = jrnl_rec_check(r->buf, bytes, s, t->g.log_sectors, sec, t->g.uuid, &h);
	cr_assert_eq(v, JRNL_REC_OK, "record at %u:%u: verdict %d", jrnl_lsn_cycle(lsn), sec, v);
	cr_assert_eq(h->lsn, lsn);
	cr_assert_eq(h->cycle, jrnl_lsn_cycle(lsn));
	cr_assert_eq(h->logbufs, t->lo.logbufs);
	cr_assert_eq(h->logbsize, t->lo.logbsize);
	cr_assert_eq(h->hdr_sectors, jrnl_rec_hdr_sectors_for(s, t->lo.logbsize, NULL));
	cr_assert_leq((h->hdr_sectors + h->payload_sectors) * s, t->lo.logbsize);
	cr_assert_leq(h->tail_lsn, h->lsn);
	r->lsn = lsn;
	r->hdr = *h;
	r->sectors = h->hdr_sectors + h->payload_sectors;
	memcpy(r->raw, r->buf, bytes);
	jrnl_rec_unpack(r->buf, s);

	r->ops = calloc(h->len / 16 + 1, sizeof(*r->ops));
	r->pay = calloc(h->len / 16 + 1, sizeof(*r->pay));
	p = r->buf + (size_t)r->hdr.hdr_sectors * s;
	while (pos < r->hdr.len) {
		struct jrnl_op op;

		cr_assert_leq(pos + 16, r->hdr.len);
		memcpy(&op, p + pos, 16);
		cr_assert_leq(pos + 16 + (uint64_t)pad8(op.len), r->hdr.len, "op runs past len");
		cr_assert_eq(op.reserved, 0);
		cr_assert_eq(op.flags & ~JRNL_OP_FLAGS_KNOWN, 0);
		cr_assert(op.type >= JRNL_T_START && op.type <= JRNL_T_UNMOUNT);
		cr_assert_gt(op.len, 0, "empty op piece");
		cr_assert_neq(op.tid, 0);
		for (uint32_t i = op.len; i < pad8(op.len); i++)
			cr_assert_eq(p[pos + 16 + i], 0, "op padding not zero");
		r->ops[r->nops] = op;
		r->pay[r->nops] = p + pos + 16;
		r->nops++;
		pos += 16 + pad8(op.len);
	}
	cr_assert_eq(pos, r->hdr.len);
	cr_assert_eq(r->nops, r->hdr.num_ops);
}

static void rec_read(struct tl *t, uint64_t lsn, struct trec *r)
{
	rec_read_from(t, lsn, false, r);
}

/* ---- transactions: items with data derived from (seq, key), so readers can check ---- */

static uint8_t pat(uint64_t seq, uint64_t key, uint32_t i)
{
	return (uint8_t)(seq * 31 + key * 131 + i * 7 + (i >> 8));
}

static void fill(unsigned char *d, uint64_t seq, uint64_t key, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		d[i] = pat(seq, key, i);
}

/* Completion events, in the order the callbacks ran. */
struct ev {
	int err;
	uint64_t commit, end, tag;
};

static struct {
	pthread_mutex_t m;
	size_t n;
	struct ev ev[8192];
} E = { .m = PTHREAD_MUTEX_INITIALIZER };

static void on_done(void *priv, int err, uint64_t commit, uint64_t end)
{
	pthread_mutex_lock(&E.m);
	cr_assert_lt(E.n, 8192);
	E.ev[E.n++] = (struct ev){ err, commit, end, (uint64_t)(uintptr_t)priv };
	pthread_mutex_unlock(&E.m);
}

static size_t ev_count(void)
{
	size_t n;

	pthread_mutex_lock(&E.m);
	n = E.n;
	pthread_mutex_unlock(&E.m);
	return n;
}

/* Write one transaction: seq, items of @lens (keys 1..n); done tag = seq. */
static int tx_write(struct tl *t, uint64_t seq, unsigned flags, unsigned n, const uint32_t *lens,
		    struct jrnl_wtx *out)
{
	struct jrnl_wtx tx;
	int err = jrnl_tx_start(t->log, seq, flags, &tx);

	for (unsigned i = 0; !err && i < n; i++) {
		unsigned char *d = malloc(lens[i] ? lens[i] : 1);

		fill(d, seq, i + 1, lens[i]);
		err = jrnl_tx_item(&tx, i + 1, d, lens[i]);
		free(d);
	}
	if (!err)
		err = jrnl_tx_commit(&tx, on_done, (void *)(uintptr_t)seq);
	if (out)
		*out = tx;
	return err;
}

/* A logical op, its pieces reassembled. */
struct aop {
	uint32_t tid;
	uint16_t type;
	uint16_t flags;
	uint64_t rec_lsn; /* record holding its first piece */
	unsigned char *data;
	size_t len;
};

struct asmb {
	struct aop *ops;
	size_t n, cap;
	long open; /* op waiting for a continuation, or -1 */
};

static void asm_init(struct asmb *a)
{
	memset(a, 0, sizeof(*a));
	a->open = -1;
}

static void asm_free(struct asmb *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->ops[i].data);
	free(a->ops);
}

/* Feed one record's ops: a continuation (WAS_CONT) only as the first op of a record
 * and only when the previous record ended with a CONTINUE piece of the same tid and
 * type; a CONTINUE piece only as the last op of a record. */
static void asm_feed(struct asmb *a, const struct trec *r)
{
	for (uint32_t i = 0; i < r->nops; i++) {
		const struct jrnl_op *op = &r->ops[i];
		struct aop *o;

		if (op->flags & JRNL_OP_WAS_CONT) {
			cr_assert_eq(i, 0, "continuation not first in its record");
			cr_assert_geq(a->open, 0, "continuation without its start");
			o = &a->ops[a->open];
			cr_assert_eq(o->tid, op->tid);
			cr_assert_eq(o->type, op->type);
			cr_assert(!!(op->flags & JRNL_OP_END) != !!(op->flags & JRNL_OP_CONTINUE));
			o->data = realloc(o->data, o->len + op->len);
			memcpy(o->data + o->len, r->pay[i], op->len);
			o->len += op->len;
			if (op->flags & JRNL_OP_END)
				a->open = -1;
			else
				cr_assert_eq(i, r->nops - 1, "CONTINUE piece not last");
			continue;
		}
		cr_assert_eq(a->open, -1, "expected a continuation");
		cr_assert_eq(op->flags & JRNL_OP_END, 0);
		if (a->n == a->cap) {
			a->cap = a->cap ? 2 * a->cap : 64;
			a->ops = realloc(a->ops, a->cap * sizeof(*a->ops));
		}
		o = &a->ops[a->n];
		*o = (struct aop){ .tid = op->tid,
				   .type = op->type,
				   .flags = op->flags & ~JRNL_OP_CONTINUE,
				   .rec_lsn = r->lsn };
		o->data = malloc(op->len);
		memcpy(o->data, r->pay[i], op->len);
		o->len = op->len;
		if (op->flags & JRNL_OP_CONTINUE) {
			cr_assert_eq(i, r->nops - 1, "CONTINUE piece not last");
			cr_assert_eq(op->type, JRNL_T_ITEM, "only items are split");
			a->open = (long)a->n;
		}
		a->n++;
	}
}

/*
 * Check the reassembled ops as a sequence of complete transactions written by tx_write:
 * START{seq}, items with keys 1..n and pattern data, COMMIT{seq, start_lsn, nitems,
 * crc, payload_bytes}; @nitems[k] (if not NULL) the item count of the k-th; returns how
 * many transactions; *@last_seq the last seq seen.
 */
static size_t asm_check(const struct asmb *a, const unsigned *nitems, uint64_t *last_seq)
{
	size_t ntx = 0, i = 0;

	while (i < a->n) {
		const struct aop *s = &a->ops[i++];
		struct jrnl_start st;
		struct jrnl_commit c;
		uint32_t crc = 0, k = 0;
		uint64_t bytes = 0;

		if (s->type == JRNL_T_UNMOUNT)
			continue;
		cr_assert_eq(s->type, JRNL_T_START);
		cr_assert_eq(s->flags, JRNL_OP_START);
		cr_assert_eq(s->len, sizeof(st));
		memcpy(&st, s->data, sizeof(st));
		cr_assert_eq(st.reserved, 0);
		while (i < a->n && a->ops[i].type == JRNL_T_ITEM) {
			const struct aop *it = &a->ops[i++];
			struct jrnl_item ih;

			cr_assert_eq(it->tid, s->tid);
			cr_assert_eq(it->flags, 0);
			cr_assert_geq(it->len, sizeof(ih));
			memcpy(&ih, it->data, sizeof(ih));
			cr_assert_eq(ih.key, k + 1);
			cr_assert_eq(it->len, sizeof(ih) + ih.data_len);
			for (uint32_t b = 0; b < ih.data_len; b++)
				cr_assert_eq(it->data[sizeof(ih) + b], pat(st.seq, ih.key, b),
					     "seq %lu key %lu byte %u", (unsigned long)st.seq,
					     (unsigned long)ih.key, b);
			crc = jrnl_crc32c(crc, it->data, it->len);
			bytes += it->len;
			k++;
		}
		cr_assert_lt(i, a->n, "transaction without COMMIT");
		cr_assert_eq(a->ops[i].type, JRNL_T_COMMIT);
		cr_assert_eq(a->ops[i].tid, s->tid);
		cr_assert_eq(a->ops[i].flags, JRNL_OP_COMMIT);
		cr_assert_eq(a->ops[i].len, sizeof(c));
		memcpy(&c, a->ops[i].data, sizeof(c));
		i++;
		cr_assert_eq(c.seq, st.seq);
		cr_assert_eq(c.start_lsn, s->rec_lsn);
		cr_assert_eq(c.nitems, k);
		cr_assert_eq(c.crc, crc);
		cr_assert_eq(c.payload_bytes, bytes);
		if (nitems)
			cr_assert_eq(k, nitems[ntx]);
		if (last_seq)
			*last_seq = st.seq;
		ntx++;
	}
	return ntx;
}

/* Read every record in [from, to), check the LSN chain (contiguous, prev_lsn) and feed
 * them to @a.  Returns the number of records. */
static size_t walk(struct tl *t, uint64_t from, uint64_t to, uint64_t prev, struct asmb *a)
{
	size_t n = 0;

	while (from != to) {
		struct trec r;

		cr_assert_lt(from, to, "walk overran the head");
		rec_read(t, from, &r);
		cr_assert_eq(r.hdr.prev_lsn, prev);
		if (a)
			asm_feed(a, &r);
		prev = from;
		from = t_lsn_add(t, from, r.sectors);
		trec_free(&r);
		n++;
	}
	return n;
}

/* Log writes in the trace from @from: their opf bits and offsets. */
struct wr {
	uint64_t id, off;
	uint32_t len, opf;
};

static size_t trace_writes(struct tl *t, size_t from, uint16_t type, struct wr *out, size_t max)
{
	size_t len = iol_sim_trace_len(t->dev), n = 0;
	struct iol_sim_event *ev = calloc(len + 1, sizeof(*ev));
	size_t got = iol_sim_trace_copy(t->dev, from, ev, len);

	for (size_t i = 0; i < got; i++) {
		if (ev[i].type != type || (ev[i].opf & IOL_OP_MASK) != IOL_OP_WRITE)
			continue;
		cr_assert_lt(n, max);
		out[n++] = (struct wr){ ev[i].req_id, ev[i].off, ev[i].len, ev[i].opf };
	}
	free(ev);
	return n;
}

/* ---- options ---- */

Test(log, opts_validation, .timeout = TO)
{
	static const struct {
		unsigned bufs;
		uint32_t size;
		int want;
	} cases[] = {
		{ 1, 32768, -EINVAL }, { 9, 32768, -EINVAL },
		{ 2, 8192, -EINVAL },  { 2, 512u << 10, -EINVAL },
		{ 2, 24576, -EINVAL }, { 2, 16384 + 512, -EINVAL },
		{ 2, 16384, 0 },       { 8, 256u << 10, 0 },
		{ 0, 0, 0 },           { 3, 65536, 0 },
	};
	struct tl t;
	struct jrnl_log *log;
	struct jrnl_log_stats st;

	tl_dev(&t, 4096, 4u << 20, false, IOL_SIM_LAT_NONE, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jrnl_log_opts o = { .logbufs = cases[i].bufs, .logbsize = cases[i].size };

		cr_assert_eq(jrnl_log_open(t.dev, &t.g, NULL, &o, &log), cases[i].want,
			     "logbufs %u logbsize %u", cases[i].bufs, cases[i].size);
		if (!cases[i].want) {
			jrnl_log_stats(log, &st);
			cr_assert_eq(st.head_lsn, jrnl_lsn(1, 0));
			cr_assert_eq(st.tail_lsn, jrnl_lsn(1, 0));
			cr_assert_eq(jrnl_log_close(log), 0);
		} else {
			cr_assert_null(log);
		}
	}
	/* NULL opts: defaults (8 x 256 KiB). */
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, NULL, NULL, &log), 0);
	jrnl_log_stats(log, &st);
	cr_assert_eq(st.payload_capacity, (256u << 10) - st.hdr_sectors * 4096);
	jrnl_log_close(log);
	iol_dev_close(t.dev);
}

Test(log, bad_report, .timeout = TO)
{
	struct tl t;
	struct jrnl_log *log;
	struct jrnl_report rep = { 0 };
	uint64_t n = 0;

	tl_dev(&t, 4096, 4u << 20, false, IOL_SIM_LAT_NONE, 1);
	n = t.g.log_sectors;
	/* tail after head, same cycle */
	rep.head_lsn = jrnl_lsn(3, 10);
	rep.tail_lsn = jrnl_lsn(3, 11);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, NULL, &log), -EINVAL);
	/* two cycles apart */
	rep.tail_lsn = jrnl_lsn(1, 11);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, NULL, &log), -EINVAL);
	/* previous lap but head past the tail: more than a lap */
	rep.tail_lsn = jrnl_lsn(2, 5);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, NULL, &log), -EINVAL);
	/* sector past the end */
	rep.head_lsn = jrnl_lsn(3, (uint32_t)n);
	rep.tail_lsn = jrnl_lsn(3, 0);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, NULL, &log), -EINVAL);
	/* cycle 0 */
	rep.head_lsn = jrnl_lsn(0, 10);
	rep.tail_lsn = jrnl_lsn(0, 0);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, NULL, &log), -EINVAL);
	/* a good one: previous lap */
	rep.head_lsn = jrnl_lsn(3, 10);
	rep.tail_lsn = jrnl_lsn(2, 11);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, NULL, &log), 0);
	jrnl_log_close(log);
	/* a geometry the device cannot hold */
	{
		struct jrnl_geom g = t.g;

		g.log_size += 1u << 20;
		g.log_sectors = g.log_size / g.sector;
		cr_assert_eq(jrnl_log_open(t.dev, &g, NULL, NULL, &log), -EINVAL);
		/* a log that cannot hold the ring twice */
		g = t.g;
		g.log_size = 2u << 20;
		g.log_sectors = g.log_size / g.sector;
		cr_assert_eq(jrnl_log_open(t.dev, &g, NULL, NULL, &log), -EINVAL);
		cr_assert_eq(jrnl_log_open(t.dev, &g, NULL,
					   &(struct jrnl_log_opts){ .logbufs = 4,
								    .logbsize = 65536 },
					   &log),
			     0);
		jrnl_log_close(log);
	}
	iol_dev_close(t.dev);
}

/* ---- one record ---- */

static void single_tx(uint32_t sector)
{
	static const uint32_t lens[3] = { 5, 1000, 0 };
	struct tl t;
	struct trec r;
	struct jrnl_wtx tx;
	struct jrnl_start st;
	struct jrnl_item ih;
	struct jrnl_commit c;
	uint32_t crc = 0;
	uint64_t head;

	E.n = 0;
	tl_open(&t, sector, 4u << 20, 8, 32768, false);
	cr_assert_eq(jrnl_log_head(t.log), jrnl_lsn(1, 0));
	cr_assert_eq(tx_write(&t, 7, 0, 3, lens, &tx), 0);
	cr_assert_neq(tx.tid, 0);
	cr_assert_eq(tx.start_lsn, jrnl_lsn(1, 0));
	/* Group commit: the buffer stays open until forced. */
	cr_assert_eq(ev_count(), 0);
	cr_assert_eq(jrnl_log_head(t.log), jrnl_lsn(1, 0));
	cr_assert_eq(jrnl_log_force(t.log), 0);
	head = jrnl_log_head(t.log);
	cr_assert_eq(ev_count(), 1);
	cr_assert_eq(E.ev[0].err, 0);
	cr_assert_eq(E.ev[0].commit, jrnl_lsn(1, 0));
	cr_assert_eq(E.ev[0].end, head);
	cr_assert_eq(E.ev[0].tag, 7);

	rec_read(&t, jrnl_lsn(1, 0), &r);
	cr_assert_eq(t_lsn_add(&t, jrnl_lsn(1, 0), r.sectors), head);
	cr_assert_eq(r.hdr.prev_lsn, 0);
	cr_assert_eq(r.hdr.tail_lsn, jrnl_lsn(1, 0));
	cr_assert_eq(r.hdr.durable_lsn, 0);
	cr_assert_eq(r.hdr.num_ops, 5);
	cr_assert_eq(r.hdr.version, JRNL_FORMAT_VERSION);
	cr_assert_eq(r.hdr.len, 16 + 16 + (16 + 24) + (16 + 1016) + (16 + 16) + (16 + 32));

	cr_assert_eq(r.ops[0].type, JRNL_T_START);
	cr_assert_eq(r.ops[0].flags, JRNL_OP_START);
	cr_assert_eq(r.ops[0].tid, tx.tid);
	cr_assert_eq(r.ops[0].len, 16);
	memcpy(&st, r.pay[0], sizeof(st));
	cr_assert_eq(st.seq, 7);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(r.ops[1 + i].type, JRNL_T_ITEM);
		cr_assert_eq(r.ops[1 + i].flags, 0);
		cr_assert_eq(r.ops[1 + i].tid, tx.tid);
		cr_assert_eq(r.ops[1 + i].len, 16 + lens[i]);
		memcpy(&ih, r.pay[1 + i], sizeof(ih));
		cr_assert_eq(ih.key, i + 1);
		cr_assert_eq(ih.data_len, lens[i]);
		cr_assert_eq(ih.reserved, 0);
		for (uint32_t b = 0; b < lens[i]; b++)
			cr_assert_eq(r.pay[1 + i][16 + b], pat(7, i + 1, b));
		crc = jrnl_crc32c(crc, r.pay[1 + i], 16 + lens[i]);
	}
	cr_assert_eq(r.ops[4].type, JRNL_T_COMMIT);
	cr_assert_eq(r.ops[4].flags, JRNL_OP_COMMIT);
	memcpy(&c, r.pay[4], sizeof(c));
	cr_assert_eq(c.seq, 7);
	cr_assert_eq(c.start_lsn, jrnl_lsn(1, 0));
	cr_assert_eq(c.nitems, 3);
	cr_assert_eq(c.crc, crc);
	cr_assert_eq(c.crc, tx.crc);
	cr_assert_eq(c.payload_bytes, 3 * 16 + 1005);
	trec_free(&r);

	/* Two more transactions share one record; callbacks in order, same commit LSN. */
	cr_assert_eq(tx_write(&t, 8, 0, 1, lens, NULL), 0);
	cr_assert_eq(tx_write(&t, 9, 0, 2, lens, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	cr_assert_eq(ev_count(), 3);
	cr_assert_eq(E.ev[1].tag, 8);
	cr_assert_eq(E.ev[2].tag, 9);
	cr_assert_eq(E.ev[1].commit, head);
	cr_assert_eq(E.ev[2].commit, head);
	rec_read(&t, head, &r);
	cr_assert_eq(r.hdr.num_ops, 3 + 4);
	cr_assert_eq(r.hdr.prev_lsn, jrnl_lsn(1, 0));
	trec_free(&r);
	/* A force with nothing buffered writes nothing. */
	head = jrnl_log_head(t.log);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	cr_assert_eq(jrnl_log_head(t.log), head);
	tl_close(&t);
}

Test(log, single_tx_512, .timeout = TO)
{
	single_tx(512);
}
Test(log, single_tx_4096, .timeout = TO)
{
	single_tx(4096);
}

Test(log, item_validation, .timeout = TO)
{
	struct tl t;
	struct jrnl_wtx tx;

	tl_open(&t, 4096, 4u << 20, 2, 16384, false);
	cr_assert_eq(jrnl_tx_start(t.log, 1, 1u << 7, &tx), -EINVAL);
	cr_assert_eq(jrnl_tx_start(t.log, 1, 0, &tx), 0);
	cr_assert_eq(jrnl_tx_item(&tx, 1, NULL, 5), -EINVAL);
	cr_assert_eq(jrnl_tx_item(&tx, 1, &tx, (1u << 30) + 1), -EINVAL);
	cr_assert_eq(jrnl_tx_item(&tx, 1, NULL, 0), 0);
	cr_assert_eq(jrnl_tx_commit(&tx, NULL, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	tl_close(&t);
}

/* ---- transactions spanning buffers ---- */

static void multi_buffer(uint32_t sector, uint32_t logbsize)
{
	static const uint32_t lens1[] = { 40000, 12289, 100, 70000, 8, 0, 16000 };
	static const uint32_t lens2[] = { 200000 };
	static const uint32_t lens3[] = { 3, 5, 7 };
	unsigned nitems[] = { 7, 1, 3, 7 };
	struct tl t;
	struct asmb a;
	uint64_t last = 0;
	size_t nrec;
	struct jrnl_log_stats st;

	E.n = 0;
	tl_open(&t, sector, 8u << 20, 4, logbsize, false);
	cr_assert_eq(tx_write(&t, 1, 0, 7, lens1, NULL), 0);
	cr_assert_eq(tx_write(&t, 2, 0, 1, lens2, NULL), 0);
	cr_assert_eq(tx_write(&t, 3, 0, 3, lens3, NULL), 0);
	cr_assert_eq(tx_write(&t, 4, 0, 7, lens1, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	cr_assert_eq(ev_count(), 4);
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(E.ev[i].err, 0);
		cr_assert_eq(E.ev[i].tag, i + 1);
		if (i)
			cr_assert_geq(E.ev[i].commit, E.ev[i - 1].commit);
	}
	asm_init(&a);
	nrec = walk(&t, jrnl_lsn(1, 0), jrnl_log_head(t.log), 0, &a);
	cr_assert_eq(a.open, -1);
	cr_assert_eq(asm_check(&a, nitems, &last), 4);
	cr_assert_eq(last, 4);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.records, nrec);
	cr_assert_geq(nrec, (2 * 138397u + 200016) / st.payload_capacity);
	asm_free(&a);
	tl_close(&t);
}

Test(log, multi_buffer_4096_16k, .timeout = TO)
{
	multi_buffer(4096, 16384);
}
Test(log, multi_buffer_512_16k, .timeout = TO)
{
	multi_buffer(512, 16384);
}
Test(log, multi_buffer_512_256k, .timeout = TO)
{
	multi_buffer(512, 256u << 10);
}

/* An op is split only where at least an op header and 8 bytes fit; the piece is a
 * multiple of 8 and the continuation is never empty: sweep the item size across a
 * buffer boundary. */
Test(log, split_boundaries, .timeout = TO)
{
	struct tl t;
	struct asmb a;
	struct jrnl_log_stats st;
	uint32_t cap;

	tl_open(&t, 4096, 4u << 20, 2, 16384, false);
	jrnl_log_stats(t.log, &st);
	cap = st.payload_capacity;
	for (uint32_t d = 0; d < 48; d++) {
		/* START (32) + item header (16+16) + data: lands the item's end around cap. */
		uint32_t len = cap - 32 - 32 - 24 + d;

		cr_assert_eq(tx_write(&t, 100 + d, 0, 1, &len, NULL), 0);
		cr_assert_eq(jrnl_log_force(t.log), 0);
	}
	/* Re-walk everything with the chain check. */
	asm_init(&a);
	walk(&t, jrnl_lsn(1, 0), jrnl_log_head(t.log), 0, &a);
	cr_assert_eq(asm_check(&a, NULL, NULL), 48);
	asm_free(&a);
	tl_close(&t);
}

/* ---- the physical wrap ---- */

/* One transaction with one item of @len bytes, forced; the tail follows the head. */
static void put(struct tl *t, uint64_t seq, uint32_t len)
{
	cr_assert_eq(tx_write(t, seq, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t->log), 0);
	jrnl_log_set_tail(t->log, jrnl_log_head(t->log));
}

/* Item length giving a record of exactly @sectors sectors (H + P, P >= 1). */
static uint32_t len_for(uint32_t sector, uint32_t h, uint32_t sectors)
{
	/* ops: START 32 + item (16 + pad8(16 + len)) + COMMIT 48 = P * sector */
	return (sectors - h) * sector - 112;
}

static void wrap(uint32_t sector, uint32_t logbsize, uint64_t log_size)
{
	struct tl t;
	struct jrnl_log_stats st;
	uint32_t h, pmax, size, ks[8], nk = 0;
	uint64_t seq = 1, wraps = 0;

	tl_open_noflush(&t, sector, log_size, 4, logbsize);
	jrnl_log_stats(t.log, &st);
	h = st.hdr_sectors;
	pmax = st.payload_capacity / sector;
	size = h + pmax;
	/* Split points: sectors of the record before the end. */
	ks[nk++] = 1;
	ks[nk++] = 2;
	ks[nk++] = h + 1;
	ks[nk++] = h + 3;
	ks[nk++] = size / 2;
	ks[nk++] = size - 1;
	ks[nk++] = size; /* ends exactly at the end: no split, cycle bumps */
	if (h > 1)
		ks[nk++] = h; /* split between header sectors */
	for (uint32_t i = 0; i < nk; i++) {
		uint32_t k = ks[i], c;
		uint64_t target = t.g.log_sectors - k, lsn, r;
		struct trec rec;
		struct asmb a;

		/* Fillers up to log_sectors - k, tail following. */
		for (;;) {
			uint64_t head = jrnl_log_head(t.log);
			uint64_t sz;

			r = (target + t.g.log_sectors - jrnl_lsn_sector(head)) % t.g.log_sectors;
			if (!r)
				break;
			if (r < h + 1)
				r += t.g.log_sectors;
			sz = r < size ? r : size;
			if (r > sz && r - sz < h + 1)
				sz = r - (h + 1);
			put(&t, seq++, len_for(sector, h, (uint32_t)sz));
			cr_assert_eq(jrnl_log_head(t.log), t_lsn_add(&t, head, sz));
		}
		lsn = jrnl_log_head(t.log);
		c = jrnl_lsn_cycle(lsn);
		cr_assert_eq(jrnl_lsn_sector(lsn), target);
		/* The crossing record: maximal size. */
		put(&t, seq, len_for(sector, h, size));
		cr_assert_eq(jrnl_log_head(t.log), jrnl_lsn(jrnl_cycle_next(c), size - k));
		rec_read(&t, lsn, &rec);
		cr_assert_eq(rec.sectors, size);
		cr_assert_eq(rec.hdr.cycle, c);
		for (uint32_t j = 0; j < size; j++)
			cr_assert_eq(jrnl_sector_cycle(rec.raw + (size_t)j * sector),
				     j < k ? c : jrnl_cycle_next(c), "k %u sector %u", k, j);
		asm_init(&a);
		asm_feed(&a, &rec);
		cr_assert_eq(asm_check(&a, NULL, NULL), 1);
		asm_free(&a);
		trec_free(&rec);
		/* The next record continues right after, on the new cycle. */
		put(&t, ++seq, 1000);
		rec_read(&t, jrnl_lsn(jrnl_cycle_next(c), size - k), &rec);
		cr_assert_eq(rec.hdr.prev_lsn, lsn);
		cr_assert_eq(rec.hdr.cycle, jrnl_cycle_next(c));
		trec_free(&rec);
		seq++;
		if (k < size)
			wraps++;
	}
	jrnl_log_stats(t.log, &st);
	cr_assert_geq(st.wraps, wraps);
	tl_close(&t);
}

Test(log, wrap_4096_16k, .timeout = TO)
{
	wrap(4096, 16384, 4u << 20);
}
Test(log, wrap_4096_64k_odd, .timeout = TO)
{
	wrap(4096, 65536, (4u << 20) + 3 * 4096);
}
Test(log, wrap_512_64k, .timeout = TO)
{
	wrap(512, 65536, (4u << 20) + 7 * 512);
}
Test(log, wrap_512_256k, .timeout = TO)
{
	wrap(512, 256u << 10, 4u << 20);
}

/* Several laps of mixed transactions through a small log with the tail following the
 * completions: every record of the last stretch reads back and chains. */
Test(log, laps, .timeout = TO)
{
	struct tl t;
	uint64_t prev_head, seq;
	struct jrnl_log_stats st;

	tl_open_noflush(&t, 512, 4u << 20, 3, 32768);
	prev_head = jrnl_log_head(t.log);
	for (seq = 1; jrnl_lsn_cycle(jrnl_log_head(t.log)) < 4; seq++) {
		uint32_t lens[3] = { (uint32_t)(seq * 7919 % 50000), (uint32_t)(seq % 13), 300 };
		uint64_t before = jrnl_log_head(t.log);
		struct asmb a;

		cr_assert_eq(tx_write(&t, seq, 0, 3, lens, NULL), 0);
		cr_assert_eq(jrnl_log_force(t.log), 0);
		asm_init(&a);
		walk(&t, before, jrnl_log_head(t.log), seq == 1 ? 0 : prev_head, &a);
		cr_assert_eq(asm_check(&a, NULL, NULL), 1);
		asm_free(&a);
		/* prev_head: the last record before the new head */
		{
			uint64_t l = before, n;
			struct trec r;

			for (;;) {
				rec_read(&t, l, &r);
				n = t_lsn_add(&t, l, r.sectors);
				trec_free(&r);
				if (n == jrnl_log_head(t.log))
					break;
				l = n;
			}
			prev_head = l;
		}
		jrnl_log_set_tail(t.log, jrnl_log_head(t.log));
	}
	jrnl_log_stats(t.log, &st);
	cr_assert_geq(st.wraps, 2);
	tl_close(&t);
}

/* ---- completion order ---- */

/* Delivered prefix length: requests are submitted in LSN order, so the k-th log write
 * is the k-th record. */
static size_t delivered_prefix(struct tl *t, const struct wr *subs, size_t nsub)
{
	struct wr done[64];
	size_t nd = trace_writes(t, t->trace0, IOL_SIM_EV_COMPLETE, done, 64), k = 0;

	for (; k < nsub; k++) {
		bool found = false;

		for (size_t j = 0; j < nd; j++)
			found |= done[j].id == subs[k].id;
		if (!found)
			break;
	}
	return k;
}

static void ooo(enum iol_sim_order order, uint64_t seed)
{
	static const uint32_t len = 3000;
	struct tl t;
	struct wr subs[64];
	size_t nsub;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, seed);
	tl_open_log(&t, 8, 16384);
	for (uint64_t s = 1; s <= 7; s++)
		cr_assert_eq(tx_write(&t, s, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	cr_assert_eq(iol_sim_pending(t.dev), 7);
	nsub = trace_writes(&t, t.trace0, IOL_SIM_EV_SUBMIT, subs, 64);
	cr_assert_eq(nsub, 7);
	for (size_t i = 1; i < nsub; i++)
		cr_assert_gt(subs[i].off, subs[i - 1].off, "submitted in LSN order");
	while (iol_sim_pending(t.dev)) {
		size_t k;

		cr_assert_eq(iol_sim_deliver(t.dev, 1, order), 1);
		k = delivered_prefix(&t, subs, nsub);
		cr_assert_eq(ev_count(), k, "callbacks run for exactly the delivered prefix");
	}
	cr_assert_eq(ev_count(), 7);
	for (size_t i = 0; i < 7; i++) {
		cr_assert_eq(E.ev[i].tag, i + 1);
		cr_assert_eq(E.ev[i].err, 0);
		if (i)
			cr_assert_eq(E.ev[i].commit, E.ev[i - 1].end);
	}
	cr_assert_eq(jrnl_log_force(t.log), 0);
	tl_close(&t);
}

Test(log, ooo_lifo, .timeout = TO)
{
	ooo(IOL_SIM_LIFO, 1);
}
Test(log, ooo_random, .timeout = TO)
{
	for (uint64_t seed = 1; seed <= 8; seed++)
		ooo(IOL_SIM_RANDOM, seed);
}

/* Without hold: the sim's own thread completes in seeded random order, with latency. */
Test(log, ooo_sim_thread, .timeout = TO)
{
	static const uint32_t lens[2] = { 20000, 100 };
	struct tl t;
	struct asmb a;

	E.n = 0;
	tl_dev(&t, 512, 8u << 20, false, IOL_SIM_LAT_NVME, 42);
	tl_open_log(&t, 8, 16384);
	for (uint64_t s = 1; s <= 200; s++)
		cr_assert_eq(tx_write(&t, s, s % 3 ? 0 : JRNL_TX_FUA_COMMIT, 2, lens, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	cr_assert_eq(ev_count(), 200);
	for (size_t i = 0; i < 200; i++) {
		cr_assert_eq(E.ev[i].tag, i + 1);
		if (i)
			cr_assert_geq(E.ev[i].commit, E.ev[i - 1].commit);
	}
	asm_init(&a);
	walk(&t, jrnl_lsn(1, 0), jrnl_log_head(t.log), 0, &a);
	cr_assert_eq(asm_check(&a, NULL, NULL), 200);
	asm_free(&a);
	tl_close(&t);
}

/* ---- flags ---- */

static void flags(uint32_t sector)
{
	static const uint32_t small = 100, big = 40000;
	struct tl t;
	struct wr w[16];
	struct iol_counters c0, c1;
	size_t from, n;

	E.n = 0;
	tl_open(&t, sector, 4u << 20, 4, 16384, false);

	/* No flags: one plain write at the force. */
	from = iol_sim_trace_len(t.dev);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &small, NULL), 0);
	cr_assert_eq(trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	n = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16);
	cr_assert_eq(n, 1);
	cr_assert_eq(w[0].opf, IOL_OP_WRITE);
	cr_assert_eq(w[0].off, t.g.log_start);

	/* FLUSH_START alone: PREFLUSH, no FUA; the buffer stays open at commit. */
	from = iol_sim_trace_len(t.dev);
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FLUSH_START, 1, &small, NULL), 0);
	cr_assert_eq(trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	n = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16);
	cr_assert_eq(n, 1);
	cr_assert_eq(w[0].opf, IOL_OP_WRITE | IOL_PREFLUSH);

	/* FUA_COMMIT alone: switched and submitted at commit, FUA only. */
	from = iol_sim_trace_len(t.dev);
	cr_assert_eq(tx_write(&t, 3, JRNL_TX_FUA_COMMIT, 1, &small, NULL), 0);
	n = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16);
	cr_assert_eq(n, 1);
	cr_assert_eq(w[0].opf, IOL_OP_WRITE | IOL_FUA);
	cr_assert_eq(jrnl_log_force(t.log), 0);

	/* FLUSH_COMMIT|FUA_COMMIT: PREFLUSH|FUA at commit. */
	from = iol_sim_trace_len(t.dev);
	cr_assert_eq(tx_write(&t, 4, JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT, 1, &small, NULL),
		     0);
	n = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16);
	cr_assert_eq(n, 1);
	cr_assert_eq(w[0].opf, IOL_OP_WRITE | IOL_PREFLUSH | IOL_FUA);
	cr_assert_eq(jrnl_log_force(t.log), 0);

	/* The sync policy on a multi-buffer transaction: PREFLUSH on the START buffer,
	 * plain writes in between, PREFLUSH|FUA on the COMMIT buffer. */
	iol_dev_counters(t.dev, &c0);
	from = iol_sim_trace_len(t.dev);
	cr_assert_eq(tx_write(&t, 5,
			      JRNL_TX_FLUSH_START | JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT |
				      JRNL_TX_WAIT_PREV,
			      1, &big, NULL),
		     0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	iol_dev_counters(t.dev, &c1);
	n = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, w, 16);
	cr_assert_geq(n, 3);
	cr_assert_eq(w[0].opf, IOL_OP_WRITE | IOL_PREFLUSH);
	for (size_t i = 1; i + 1 < n; i++)
		cr_assert_eq(w[i].opf, IOL_OP_WRITE);
	cr_assert_eq(w[n - 1].opf, IOL_OP_WRITE | IOL_PREFLUSH | IOL_FUA);
	cr_assert_eq(c1.preflushes - c0.preflushes, 2);
	cr_assert_eq(c1.fua_writes - c0.fua_writes, 1);
	cr_assert_eq(c1.writes - c0.writes, n);
	cr_assert_eq(ev_count(), 5);
	tl_close(&t);
}

Test(log, flags_512, .timeout = TO)
{
	flags(512);
}
Test(log, flags_4096, .timeout = TO)
{
	flags(4096);
}

/* A record that wraps: two writes, the end part first with the PREFLUSH, FUA on both;
 * the start part is submitted only after the end part completed. */
Test(log, wrap_flags, .timeout = TO)
{
	struct tl t;
	struct wr sub[8], done[8];
	struct jrnl_log_stats st, st0;
	struct iol_counters c0, c1;
	uint32_t h, size, len;
	size_t from, ns, nd;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, 3);
	tl_open_log(&t, 2, 16384);
	jrnl_log_stats(t.log, &st);
	h = st.hdr_sectors;
	size = h + st.payload_capacity / 4096;
	/* Fill to 2 sectors before the end with forced records, delivering as we go. */
	while (jrnl_lsn_sector(jrnl_log_head(t.log)) != t.g.log_sectors - 2) {
		uint64_t r = t.g.log_sectors - 2 - jrnl_lsn_sector(jrnl_log_head(t.log));
		uint64_t sz = r < size ? r : size;

		if (r > sz && r - sz < h + 1)
			sz = r - (h + 1);
		len = len_for(4096, h, (uint32_t)sz);
		cr_assert_eq(tx_write(&t, 1, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
		iol_sim_deliver(t.dev, SIZE_MAX, IOL_SIM_FIFO);
		jrnl_log_set_tail(t.log, jrnl_log_head(t.log));
	}
	from = iol_sim_trace_len(t.dev);
	jrnl_log_stats(t.log, &st0);
	iol_dev_counters(t.dev, &c0);
	len = len_for(4096, h, size);
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	ns = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, sub, 8);
	cr_assert_eq(ns, 1, "the start part waits for the end part");
	cr_assert_eq(sub[0].opf, IOL_OP_WRITE | IOL_PREFLUSH | IOL_FUA);
	cr_assert_eq(sub[0].off, t.g.log_start + (t.g.log_sectors - 2) * 4096);
	cr_assert_eq(sub[0].len, 2 * 4096);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_FIFO), 1);
	ns = trace_writes(&t, from, IOL_SIM_EV_SUBMIT, sub, 8);
	cr_assert_eq(ns, 2);
	cr_assert_eq(sub[1].opf, IOL_OP_WRITE | IOL_FUA);
	cr_assert_eq(sub[1].off, t.g.log_start);
	cr_assert_eq(sub[1].len, (size - 2) * 4096);
	{
		size_t before = ev_count();

		cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_FIFO), 1);
		cr_assert_eq(ev_count(), before + 1);
		cr_assert_eq(E.ev[before].tag, 2);
		cr_assert_eq(E.ev[before].err, 0);
	}
	nd = trace_writes(&t, from, IOL_SIM_EV_COMPLETE, done, 8);
	cr_assert_eq(nd, 2);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.wraps, 1);
	/* Counted as the device sees them: one record, two writes, one PREFLUSH, two FUA
	 * (each a flush to a device without FUA, delog_stats.fua_flushes). */
	iol_dev_counters(t.dev, &c1);
	cr_expect_eq(st.records - st0.records, 1);
	cr_expect_eq(c1.writes - c0.writes, 2);
	cr_expect_eq(st.preflush_writes - st0.preflush_writes, c1.preflushes - c0.preflushes);
	cr_expect_eq(st.fua_writes - st0.fua_writes, 2,
		     "%llu FUA writes counted for a wrapped "
		     "record",
		     (unsigned long long)(st.fua_writes - st0.fua_writes));
	cr_expect_eq(c1.fua_writes - c0.fua_writes, 2);
	/* PREFLUSH with everything before completed, then FUA on both parts: durable. */
	cr_assert_eq(st.durable_lsn, jrnl_log_head(t.log));
	tl_close(&t);
}

/* ---- WAIT_PREV ---- */

static size_t subs_now(struct tl *t, struct wr *w)
{
	return trace_writes(t, t->trace0, IOL_SIM_EV_SUBMIT, w, 64);
}

static void wait_prev(enum iol_sim_order order)
{
	static const uint32_t big = 30000, small = 100;
	const unsigned sync = JRNL_TX_FLUSH_START | JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT |
			      JRNL_TX_WAIT_PREV;
	struct tl t;
	struct wr w[64];
	struct jrnl_log_stats st;
	size_t n;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, 5);
	tl_open_log(&t, 8, 16384);
	/* 30000 bytes in 12 KiB buffers: START buffer, middle, COMMIT buffer. */
	cr_assert_eq(tx_write(&t, 1, sync, 1, &big, NULL), 0);
	n = subs_now(&t, w);
	cr_assert_eq(n, 2, "the COMMIT buffer waits");
	cr_assert_eq(iol_sim_pending(t.dev), 2);
	cr_assert_eq(w[0].opf, IOL_OP_WRITE | IOL_PREFLUSH);
	cr_assert_eq(w[1].opf, IOL_OP_WRITE);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, order), 1);
	cr_assert_eq(subs_now(&t, w), 2, "one earlier buffer still in flight");
	cr_assert_eq(ev_count(), 0);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, order), 1);
	n = subs_now(&t, w);
	cr_assert_eq(n, 3, "submitted once every earlier buffer completed");
	cr_assert_eq(w[2].opf, IOL_OP_WRITE | IOL_PREFLUSH | IOL_FUA);
	cr_assert_eq(ev_count(), 0);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, order), 1);
	cr_assert_eq(ev_count(), 1);
	cr_assert_eq(E.ev[0].err, 0);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.wait_prev_holds, 1);
	/* Everything before the commit buffer completed before its PREFLUSH: durable. */
	cr_assert_eq(st.durable_lsn, jrnl_log_head(t.log));

	/* A single-buffer transaction does not wait (its START buffer is its COMMIT
	 * buffer), even with an earlier buffer in flight. */
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FUA_COMMIT, 1, &small, NULL), 0);
	cr_assert_eq(tx_write(&t, 3, sync, 1, &small, NULL), 0);
	cr_assert_eq(iol_sim_pending(t.dev), 2);
	/* Without WAIT_PREV a spanning transaction's COMMIT buffer goes at once. */
	cr_assert_eq(tx_write(&t, 4, sync & ~JRNL_TX_WAIT_PREV, 1, &big, NULL), 0);
	cr_assert_eq(iol_sim_pending(t.dev), 5);
	iol_sim_deliver(t.dev, SIZE_MAX, order);
	cr_assert_eq(ev_count(), 4);
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(E.ev[i].tag, i + 1);
	tl_close(&t);
}

Test(log, wait_prev_fifo, .timeout = TO)
{
	wait_prev(IOL_SIM_FIFO);
}
Test(log, wait_prev_lifo, .timeout = TO)
{
	wait_prev(IOL_SIM_LIFO);
}

/* A held WAIT_PREV buffer holds back the buffers after it (submission in LSN order). */
Test(log, wait_prev_holds_later, .timeout = TO)
{
	static const uint32_t big = 30000, small = 100;
	struct tl t;
	struct wr w[64];

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, 5);
	tl_open_log(&t, 5, 16384);
	cr_assert_eq(tx_write(&t, 1, JRNL_TX_WAIT_PREV, 1, &big, NULL), 0);
	/* START and middle buffers out; the COMMIT buffer stays open (no FUA/flush). */
	cr_assert_eq(subs_now(&t, w), 2);
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FUA_COMMIT, 1, &small, NULL), 0);
	/* tx 2 shares tx 1's COMMIT buffer, which now goes WANT_SYNC but waits. */
	cr_assert_eq(subs_now(&t, w), 2);
	cr_assert_eq(tx_write(&t, 3, JRNL_TX_FUA_COMMIT, 1, &small, NULL), 0);
	cr_assert_eq(subs_now(&t, w), 2, "later buffer held behind the WAIT_PREV one");
	iol_sim_deliver(t.dev, 2, IOL_SIM_FIFO);
	cr_assert_eq(subs_now(&t, w), 4);
	iol_sim_deliver(t.dev, SIZE_MAX, IOL_SIM_FIFO);
	cr_assert_eq(ev_count(), 3);
	tl_close(&t);
}

/* ---- space ---- */

static void logfull(uint32_t sector)
{
	static const uint32_t len = 6000;
	struct tl t;
	struct trec r;
	struct jrnl_log_stats st;
	uint64_t seq = 1, head, tail, lsns[4096];
	size_t nl = 0;
	int err;

	E.n = 0;
	tl_open(&t, sector, 4u << 20, 4, 16384, false);
	jrnl_log_stats(t.log, &st);
	/* One sector free and a cover record's header kept back (log.c L12). */
	cr_assert_eq(jrnl_log_free_bytes(t.log), (t.g.log_sectors - 1 - st.hdr_sectors) * sector);
	for (;;) {
		uint64_t free0 = jrnl_log_free_bytes(t.log);

		head = jrnl_log_head(t.log);
		err = tx_write(&t, seq, 0, 1, &len, NULL);
		if (err)
			break;
		cr_assert_eq(jrnl_log_force(t.log), 0);
		cr_assert_lt(jrnl_log_free_bytes(t.log), free0);
		lsns[nl++] = head;
		seq++;
	}
	cr_assert_eq(err, DELOG_ELOGFULL);
	/* Nothing of the refused op written, the log never wrapped onto the tail. */
	cr_assert_eq(jrnl_log_force(t.log), 0);
	cr_assert_eq(jrnl_lsn_cycle(jrnl_log_head(t.log)), 1);
	cr_assert_lt(jrnl_log_free_bytes(t.log), 16384);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(jrnl_log_free_bytes(t.log),
		     (t.g.log_sectors - 1 - st.hdr_sectors - jrnl_lsn_sector(st.head_lsn)) *
			     sector);
	rec_read(&t, jrnl_lsn(1, 0), &r);
	cr_assert_eq(r.hdr.cycle, 1);
	trec_free(&r);
	/* Further small transactions fail too, until the tail moves. */
	cr_assert_eq(tx_write(&t, seq, 0, 1, &len, NULL), DELOG_ELOGFULL);
	tail = lsns[10];
	jrnl_log_set_tail(t.log, tail);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.tail_lsn, tail);
	/* (L12) No durable record names the new tail yet: the space stays unusable ... */
	cr_assert_eq(tx_write(&t, ++seq, 0, 1, &len, NULL), DELOG_ELOGFULL);
	cr_assert(jrnl_log_cover_wanted(t.log));
	/* ... until a cover writes one and flushes. */
	cr_assert_eq(jrnl_log_cover(t.log), 0);
	cr_assert(!jrnl_log_cover_wanted(t.log));
	/* Write until full again: the head wraps but stops short of the tail. */
	for (;;) {
		err = tx_write(&t, ++seq, 0, 1, &len, NULL);
		if (err)
			break;
		cr_assert_eq(jrnl_log_force(t.log), 0);
	}
	cr_assert_eq(err, DELOG_ELOGFULL);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	head = jrnl_log_head(t.log);
	cr_assert_eq(jrnl_lsn_cycle(head), 2);
	cr_assert_lt(jrnl_lsn_sector(head), jrnl_lsn_sector(tail));
	/* The tail record is untouched. */
	rec_read(&t, tail, &r);
	cr_assert_eq(r.hdr.cycle, 1);
	trec_free(&r);
	/* Tail moves backwards are ignored; past the head is clamped to the head. */
	jrnl_log_set_tail(t.log, jrnl_lsn(1, 0));
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.tail_lsn, tail);
	jrnl_log_set_tail(t.log, jrnl_lsn(9, 0));
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.tail_lsn, head);
	cr_assert_eq(jrnl_log_cover(t.log), 0);
	jrnl_log_stats(t.log, &st);
	/* Only the cover record itself (its header sectors) is in use now. */
	cr_assert_eq(jrnl_lsn_sector(st.head_lsn) - jrnl_lsn_sector(st.tail_lsn), st.hdr_sectors);
	cr_assert_eq(jrnl_log_free_bytes(t.log),
		     (t.g.log_sectors - 1 - 2 * st.hdr_sectors) * sector);
	cr_assert_eq(tx_write(&t, ++seq, 0, 1, &len, NULL), 0);
	tl_close(&t);
}

Test(log, logfull_512, .timeout = TO)
{
	logfull(512);
}
Test(log, logfull_4096, .timeout = TO)
{
	logfull(4096);
}

/* ELOGFULL in the middle of a transaction: the op that does not fit writes nothing
 * (the head does not move), earlier ops stay. */
Test(log, logfull_mid_tx, .timeout = TO)
{
	struct tl t;
	struct jrnl_wtx tx;
	unsigned char *d = calloc(1, 8u << 20);
	uint64_t head, freeb;

	tl_open(&t, 4096, 4u << 20, 2, 16384, false);
	cr_assert_eq(jrnl_tx_start(t.log, 1, 0, &tx), 0);
	cr_assert_eq(jrnl_tx_item(&tx, 1, d, 1u << 20), 0);
	head = jrnl_log_head(t.log);
	freeb = jrnl_log_free_bytes(t.log);
	cr_assert_eq(jrnl_tx_item(&tx, 2, d, (uint32_t)freeb), DELOG_ELOGFULL);
	cr_assert_eq(jrnl_log_head(t.log), head);
	cr_assert_eq(jrnl_log_free_bytes(t.log), freeb);
	cr_assert_eq(tx.nitems, 1);
	/* A smaller one still fits. */
	cr_assert_eq(jrnl_tx_item(&tx, 2, d, (uint32_t)freeb / 2), 0);
	cr_assert_eq(jrnl_tx_commit(&tx, NULL, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	free(d);
	tl_close(&t);
}

/* The space bound the engine reserves with covers what transactions really take, also
 * when they start in a partly filled buffer. */
Test(log, tx_bytes_bound, .timeout = TO)
{
	struct tl t;
	uint64_t rng = 88172645463325252ull;

	for (int cfg = 0; cfg < 3; cfg++) {
		static const uint32_t sec[3] = { 512, 4096, 512 }, bs[3] = { 16384, 16384, 262144 };

		tl_open(&t, sec[cfg], 8u << 20, 4, bs[cfg], false);
		for (int round = 0; round < 60; round++) {
			uint32_t lens[6], n;
			uint64_t before = jrnl_log_head(t.log), bound = 0, data = 0, used;

			/* A small transaction first, left in the buffer, then the measured one. */
			for (int k = 0; k < 2; k++) {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				n = k ? (uint32_t)(rng % 6) : 1;
				data = 0;
				for (uint32_t i = 0; i < n; i++) {
					rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
					lens[i] = (uint32_t)(rng % (k ? 70000 : 3000));
					data += lens[i];
				}
				cr_assert_eq(tx_write(&t, (uint64_t)round, 0, n, lens, NULL), 0);
				bound += jrnl_log_tx_bytes(t.log, n, data);
			}
			cr_assert_eq(jrnl_log_force(t.log), 0);
			used = ((jrnl_log_head(t.log) - before) & 0xffffffffu);
			if (jrnl_lsn_cycle(jrnl_log_head(t.log)) != jrnl_lsn_cycle(before))
				used = t.g.log_sectors - jrnl_lsn_sector(before) +
				       jrnl_lsn_sector(jrnl_log_head(t.log));
			cr_assert_leq(used * sec[cfg], bound, "used %lu bound %lu",
				      (unsigned long)(used * sec[cfg]), (unsigned long)bound);
			jrnl_log_set_tail(t.log, jrnl_log_head(t.log));
		}
		tl_close(&t);
	}
}

/* ---- errors ---- */

static void flush_cb(void *priv, int err)
{
	int *r = priv;

	*r = err ? err : 1;
}

/* L14: two flushes in flight, the earlier fails, the later completes first: its success
 * is not taken (durable_lsn stays, its callback waits and then gets the error). */
Test(log, flush_results_in_issue_order, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1, .kind = IOL_SIM_FAULT_EIO };
	struct jrnl_log_stats st0, st;
	struct deliverer d;
	struct tl t;
	int r1 = 0, r2 = 0;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, 11);
	tl_open_log(&t, 4, 16384);
	/* A completed record for the flushes to cover. */
	d = (struct deliverer){ .dev = t.dev };
	atomic_init(&d.stop, false);
	cr_assert_eq(pthread_create(&d.th, NULL, deliver_loop, &d), 0);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	atomic_store(&d.stop, true);
	pthread_join(d.th, NULL);
	jrnl_log_stats(t.log, &st0);
	cr_assert_lt(st0.durable_lsn, st0.completed_lsn);

	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(jrnl_log_flush_async(t.log, flush_cb, &r1), 0); /* fails */
	cr_assert_eq(jrnl_log_flush_async(t.log, flush_cb, &r2), 0); /* succeeds */
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_LIFO), 1);    /* the later one */
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(r2, 0, "the later flush was taken before the earlier one");
	cr_assert_eq(st.durable_lsn, st0.durable_lsn, "durable_lsn moved on the later flush");
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_LIFO), 1); /* the earlier, EIO */
	cr_assert_eq(r1, -EIO);
	cr_assert_eq(r2, -EIO, "the later flush's success proves nothing after the EIO");
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, st0.durable_lsn);
	cr_assert_eq(jrnl_log_flush(t.log), -EIO);
	tl_close(&t);
}

/* A flush request whose end_io keeps its flusher busy until the test lets it go. */
struct blocker {
	atomic_bool in, release, out;
};

static void blocker_end(struct iol_req *req)
{
	struct blocker *b = req->priv;
	struct timespec ts = { 0, 100000 };

	atomic_store(&b->in, true);
	while (!atomic_load(&b->release))
		nanosleep(&ts, NULL);
	atomic_store(&b->out, true);
}

/* Wait (bounded: a liveness limit, not a timing check) until @dev holds @n requests. */
static void wait_pending(struct iol_dev *dev, size_t n)
{
	struct timespec ts = { 0, 100000 };

	for (unsigned i = 0; i < 200000 && iol_sim_pending(dev) < n; i++)
		nanosleep(&ts, NULL);
	cr_assert_geq(iol_sim_pending(dev), n, "the sim never got %zu requests", n);
}

static void wait_true(atomic_bool *v, const char *what)
{
	struct timespec ts = { 0, 100000 };

	for (unsigned i = 0; i < 200000 && !atomic_load(v); i++)
		nanosleep(&ts, NULL);
	cr_assert(atomic_load(v), "never: %s", what);
}

static void wait_flag(atomic_int *v, const char *what)
{
	struct timespec ts = { 0, 100000 };

	for (unsigned i = 0; i < 200000 && !atomic_load(v); i++)
		nanosleep(&ts, NULL);
	cr_assert(atomic_load(v), "never: %s", what);
}

static void aflush_cb(void *priv, int err)
{
	atomic_store((atomic_int *)priv, err ? err : 1);
}

/*
 * L14, standalone after flagged (issue 27 item 4): a flush J issued after a PREFLUSH|FUA
 * record b rides a later gate generation than b's; b's generation fails, and on this
 * device (flush_fail_drops) takes the cached, completed record A with it; J's generation
 * then succeeds, covering nothing of A.  J must not be taken (its caller told success,
 * durable_lsn moved over A) before b's error reached the log: J gets the error.
 *
 * Made deterministic on a gated, held sim with inline_run: the generations run on the
 * gate's flushers through ->run, so the test delivers each one; one flusher is kept
 * busy by a raw flush's end_io, so b, handed over when its generation ends (FG5), is
 * continued only after J's generation, on the same flusher, in that order.
 */
Test(log, flush_after_failed_flagged_record, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1, .kind = IOL_SIM_FAULT_EIO };
	struct iol_sim_opts so = { .size = sizeof(so),
				   .sector = 4096,
				   .seed = 27,
				   .hold = true,
				   .inline_run = true,
				   .flush_fail_drops = true };
	struct iol_dev_opts o = { .size = sizeof(o),
				  .backend = "sim",
				  .sim = &so,
				  .flush_gate = true };
	struct blocker bl;
	struct jrnl_log_stats st0, st;
	struct iol_counters c;
	struct iol_req r0;
	struct deliverer d;
	atomic_int rj = 0;
	struct tl t;
	void *img;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, false, IOL_SIM_LAT_NONE, 27);
	so.dev_bytes = JRNL_LOG_START + (4u << 20);
	img = malloc(so.dev_bytes);
	cr_assert(img);
	cr_assert_eq(iol_sim_media(t.dev, 0, img, so.dev_bytes), 0);
	iol_dev_close(t.dev);
	so.image = img;
	cr_assert_eq(iol_dev_open(NULL, &o, &t.dev), 0);
	free(img);
	t.hold = true;
	tl_open_log(&t, 4, 16384);

	/* A: completed, not durable. */
	d = (struct deliverer){ .dev = t.dev };
	atomic_init(&d.stop, false);
	cr_assert_eq(pthread_create(&d.th, NULL, deliver_loop, &d), 0);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	atomic_store(&d.stop, true);
	pthread_join(d.th, NULL);
	jrnl_log_stats(t.log, &st0);
	cr_assert_lt(st0.durable_lsn, st0.completed_lsn);
	cr_assert_eq(iol_sim_pending(t.dev), 0);

	/* One flusher busy in a raw flush's end_io. */
	atomic_init(&bl.in, false);
	atomic_init(&bl.release, false);
	atomic_init(&bl.out, false);
	cr_assert_eq(iol_req_init(&r0, t.dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
	r0.end_io = blocker_end;
	r0.priv = &bl;
	cr_assert_eq(iol_submit(&r0), 0);
	wait_pending(t.dev, 1);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_FIFO), 1);
	wait_true(&bl.in, "the raw flush's end_io ran");

	/* b: its generation (the next device flush) fails. */
	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	wait_pending(t.dev, 1);
	/* J, issued after b: waits for the next generation. */
	cr_assert_eq(jrnl_log_flush_async(t.log, aflush_cb, &rj), 0);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_FIFO), 1); /* b's: EIO, A dropped */
	wait_pending(t.dev, 1);                                   /* J's generation */
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_FIFO), 1); /* J's: succeeds */
	wait_flag(&rj, "J's callback ran");
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(atomic_load(&rj), -EIO,
		     "J was taken (%d) before the failure of b's flush, issued before it, reached "
		     "the log",
		     atomic_load(&rj));
	cr_assert_eq(st.durable_lsn, st0.durable_lsn,
		     "durable_lsn moved over A, which b's failed flush dropped");
	cr_assert_eq(ev_count(), 2);
	cr_assert_eq(E.ev[0].tag, 1);
	cr_assert_eq(E.ev[1].tag, 2);
	cr_assert_eq(E.ev[1].err, -EIO);
	iol_dev_counters(t.dev, &c);
	cr_assert_eq(c.gate_failed, 1);

	atomic_store(&bl.release, true);
	wait_true(&bl.out, "the raw flush's end_io returned");
	cr_assert_eq(atomic_load(&r0.status), 0);
	iol_req_release(&r0);
	cr_assert_eq(jrnl_log_flush(t.log), -EIO);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

/*
 * L14, flagged after standalone, for a FUA-only record: a flush J issued before a FUA
 * record b fails after b completed.  b's callbacks must not hear success while J's
 * failure is unseen: they wait for J's result and then get its error.
 */
Test(log, fua_record_after_failed_flush, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1, .kind = IOL_SIM_FAULT_EIO };
	struct jrnl_log_stats st0, st;
	struct deliverer d;
	atomic_int rj = 0;
	struct tl t;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, 28);
	tl_open_log(&t, 4, 16384);
	d = (struct deliverer){ .dev = t.dev };
	atomic_init(&d.stop, false);
	cr_assert_eq(pthread_create(&d.th, NULL, deliver_loop, &d), 0);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	atomic_store(&d.stop, true);
	pthread_join(d.th, NULL);
	jrnl_log_stats(t.log, &st0);
	cr_assert_eq(ev_count(), 1);

	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(jrnl_log_flush_async(t.log, aflush_cb, &rj), 0);        /* J: fails */
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0); /* b */
	cr_assert_eq(iol_sim_pending(t.dev), 2);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_LIFO), 1); /* b completes first */
	cr_assert_eq(ev_count(), 1, "b's callback ran before the flush issued before it was taken");
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_LIFO), 1); /* J: EIO */
	cr_assert_eq(atomic_load(&rj), -EIO);
	cr_assert_eq(ev_count(), 2);
	cr_assert_eq(E.ev[1].tag, 2);
	cr_assert_eq(E.ev[1].err, -EIO);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, st0.durable_lsn);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

Test(log, write_error_shutdown, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 1, .kind = IOL_SIM_FAULT_EIO };
	struct tl t;
	struct jrnl_wtx tx;

	E.n = 0;
	tl_open(&t, 4096, 4u << 20, 4, 16384, false);
	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(tx_write(&t, 1, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), -EIO);
	cr_assert_eq(ev_count(), 1);
	cr_assert_eq(E.ev[0].err, -EIO);
	cr_assert_eq(jrnl_tx_start(t.log, 2, 0, &tx), DELOG_ESHUTDOWN);
	cr_assert_eq(jrnl_log_flush(t.log), -EIO);
	cr_assert_eq(jrnl_log_unmount(t.log), -EIO);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

/* B fails while A is in flight and C is still open: A's callback succeeds, B's and C's
 * get the error, C is never written, and all in LSN order. */
Test(log, error_order, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 2, .kind = IOL_SIM_FAULT_EIO };
	struct tl t;
	struct wr w[64];
	struct jrnl_wtx tx;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, true, IOL_SIM_LAT_NONE, 9);
	tl_open_log(&t, 4, 16384);
	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(tx_write(&t, 1, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0); /* A */
	cr_assert_eq(tx_write(&t, 2, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0); /* B */
	cr_assert_eq(tx_write(&t, 3, 0, 1, &len, NULL), 0);                  /* C, open */
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_LIFO), 1);            /* B fails */
	cr_assert_eq(ev_count(), 0, "A not done yet");
	cr_assert_eq(jrnl_tx_start(t.log, 4, 0, &tx), DELOG_ESHUTDOWN);
	cr_assert_eq(iol_sim_deliver(t.dev, 1, IOL_SIM_LIFO), 1); /* A ok */
	cr_assert_eq(ev_count(), 3);
	cr_assert_eq(E.ev[0].tag, 1);
	cr_assert_eq(E.ev[0].err, 0);
	cr_assert_eq(E.ev[1].tag, 2);
	cr_assert_eq(E.ev[1].err, -EIO);
	cr_assert_eq(E.ev[2].tag, 3);
	cr_assert_eq(E.ev[2].err, -EIO);
	cr_assert_eq(subs_now(&t, w), 2, "nothing submitted after the error");
	cr_assert_eq(jrnl_log_force(t.log), -EIO);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

/* A write error with earlier writes pending in a multi-buffer transaction, and the
 * writer blocked on a full ring: it returns DELOG_ESHUTDOWN instead of hanging. */
Test(log, error_while_waiting_for_buffer, .timeout = TO)
{
	static const uint32_t big = 100000;
	struct iol_sim_fault f = { .op = IOL_OP_WRITE,
				   .nth = 1,
				   .kind = IOL_SIM_FAULT_EIO,
				   .persistent = true };
	struct tl t;

	E.n = 0;
	tl_dev(&t, 4096, 4u << 20, false, IOL_SIM_LAT_SATA, 9);
	tl_open_log(&t, 2, 16384);
	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &big, NULL), DELOG_ESHUTDOWN);
	cr_assert_eq(ev_count(), 0, "no callback for a transaction that never committed");
	cr_assert_eq(jrnl_log_force(t.log), -EIO);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

Test(log, flush_error_shutdown, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1, .kind = IOL_SIM_FAULT_EIO };
	struct tl t;
	struct jrnl_wtx tx;

	E.n = 0;
	tl_open(&t, 512, 4u << 20, 4, 16384, false);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(jrnl_log_flush(t.log), -EIO);
	cr_assert_eq(jrnl_tx_start(t.log, 2, 0, &tx), DELOG_ESHUTDOWN);
	cr_assert_eq(jrnl_log_force(t.log), -EIO);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

/* A PREFLUSH whose flush fails fails the write: shutdown, callback gets the error. */
Test(log, preflush_error_shutdown, .timeout = TO)
{
	static const uint32_t len = 100;
	struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1, .kind = IOL_SIM_FAULT_EIO };
	struct tl t;

	E.n = 0;
	tl_open(&t, 512, 4u << 20, 4, 16384, false);
	cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
	cr_assert_eq(tx_write(&t, 1, JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), -EIO);
	cr_assert_eq(ev_count(), 1);
	cr_assert_eq(E.ev[0].err, -EIO);
	cr_assert_eq(jrnl_log_close(t.log), -EIO);
	iol_dev_close(t.dev);
}

/* ---- durable_lsn, tail_lsn, prev_lsn in the headers ---- */

Test(log, header_lsns, .timeout = TO)
{
	static const uint32_t len = 500;
	struct tl t;
	struct trec r;
	struct jrnl_log_stats st;
	uint64_t l[6];

	tl_open(&t, 4096, 4u << 20, 4, 16384, false);
	l[0] = jrnl_log_head(t.log);
	cr_assert_eq(tx_write(&t, 1, JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	l[1] = jrnl_log_head(t.log);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, l[1], "PREFLUSH over everything before + FUA");
	cr_assert_eq(st.completed_lsn, l[1]);

	/* A tail past the head is taken as the head. */
	jrnl_log_set_tail(t.log, jrnl_lsn(9, 0));
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.tail_lsn, l[1]);
	cr_assert_eq(tx_write(&t, 2, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	l[2] = jrnl_log_head(t.log);
	rec_read(&t, l[1], &r);
	cr_assert_eq(r.hdr.durable_lsn, l[1]);
	cr_assert_eq(r.hdr.tail_lsn, l[1]);
	cr_assert_eq(r.hdr.prev_lsn, l[0]);
	trec_free(&r);

	cr_assert_eq(tx_write(&t, 3, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	l[3] = jrnl_log_head(t.log);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, l[1], "plain writes are not durable");
	cr_assert_eq(st.completed_lsn, l[3]);
	rec_read(&t, l[2], &r);
	cr_assert_eq(r.hdr.durable_lsn, l[1]);
	cr_assert_eq(r.hdr.tail_lsn, l[1]);
	cr_assert_eq(r.hdr.prev_lsn, l[1]);
	trec_free(&r);

	cr_assert_eq(jrnl_log_flush(t.log), 0);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, l[3]);
	cr_assert_eq(st.flushes, 1);

	/* A FUA write whose predecessors are not known durable does not extend it. */
	cr_assert_eq(tx_write(&t, 4, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	l[4] = jrnl_log_head(t.log);
	cr_assert_eq(tx_write(&t, 5, JRNL_TX_FUA_COMMIT, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	l[5] = jrnl_log_head(t.log);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, l[3]);
	cr_assert_eq(st.completed_lsn, l[5]);
	rec_read(&t, l[3], &r);
	cr_assert_eq(r.hdr.durable_lsn, l[3]);
	trec_free(&r);
	rec_read(&t, l[4], &r);
	cr_assert_eq(r.hdr.durable_lsn, l[3]);
	cr_assert_eq(r.hdr.prev_lsn, l[3]);
	trec_free(&r);
	tl_close(&t);
}

/* ---- unmount and reopen ---- */

Test(log, unmount, .timeout = TO)
{
	static const uint32_t len = 5000;
	struct tl t;
	struct trec r;
	struct wr w[64];
	struct jrnl_log_stats st;
	struct jrnl_unmount um;
	struct asmb a;
	uint64_t before;
	size_t n;

	E.n = 0;
	tl_open(&t, 512, 4u << 20, 4, 16384, false);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &len, NULL), 0);
	cr_assert_eq(tx_write(&t, 2, 0, 1, &len, NULL), 0);
	before = jrnl_log_head(t.log); /* the open buffer's record */
	cr_assert_eq(jrnl_log_unmount(t.log), 0);
	cr_assert_eq(ev_count(), 2);
	n = subs_now(&t, w);
	cr_assert_eq(w[n - 1].opf, IOL_OP_WRITE | IOL_PREFLUSH | IOL_FUA);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.durable_lsn, st.head_lsn);
	/* Durable: read it from the media alone. */
	{
		uint64_t l = before;

		/* skip the records the force wrote */
		for (;;) {
			rec_read(&t, l, &r);
			if (r.nops == 1 && r.ops[0].type == JRNL_T_UNMOUNT)
				break;
			l = t_lsn_add(&t, l, r.sectors);
			trec_free(&r);
		}
		cr_assert_eq(r.ops[0].flags, JRNL_OP_UNMOUNT);
		cr_assert_eq(r.ops[0].len, sizeof(um));
		memcpy(&um, r.pay[0], sizeof(um));
		cr_assert_eq(um.magic, JRNL_UNMOUNT_MAGIC);
		cr_assert_eq(um.reserved, 0);
		cr_assert_eq(t_lsn_add(&t, l, r.sectors), st.head_lsn);
		trec_free(&r);
		rec_read_from(&t, l, true, &r);
		trec_free(&r);
		rec_read_from(&t, jrnl_lsn(1, 0), true, &r);
		trec_free(&r);
	}
	asm_init(&a);
	walk(&t, jrnl_lsn(1, 0), st.head_lsn, 0, &a);
	cr_assert_eq(asm_check(&a, NULL, NULL), 2);
	asm_free(&a);
	tl_close(&t);
}

Test(log, reopen_from_report, .timeout = TO)
{
	static const uint32_t len = 700;
	struct tl t;
	struct trec r;
	struct jrnl_report rep = { 0 };
	struct jrnl_log_stats st;
	uint64_t last;

	tl_open(&t, 4096, 4u << 20, 4, 16384, false);
	cr_assert_eq(tx_write(&t, 1, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	last = jrnl_log_head(t.log);
	cr_assert_eq(tx_write(&t, 2, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_close(t.log), 0);

	rep.head_lsn = jrnl_lsn(1, 8); /* past both records (2 sectors each) + slack */
	rep.tail_lsn = last;
	rep.last_lsn = last;
	rep.durable_lsn = jrnl_lsn(1, 2);
	cr_assert_eq(jrnl_log_open(t.dev, &t.g, &rep, &t.lo, &t.log), 0);
	jrnl_log_stats(t.log, &st);
	cr_assert_eq(st.head_lsn, rep.head_lsn);
	cr_assert_eq(st.tail_lsn, rep.tail_lsn);
	cr_assert_eq(st.durable_lsn, rep.durable_lsn);
	cr_assert_eq(tx_write(&t, 3, 0, 1, &len, NULL), 0);
	cr_assert_eq(jrnl_log_force(t.log), 0);
	rec_read(&t, rep.head_lsn, &r);
	cr_assert_eq(r.hdr.prev_lsn, last);
	cr_assert_eq(r.hdr.tail_lsn, last);
	cr_assert_eq(r.hdr.durable_lsn, rep.durable_lsn);
	trec_free(&r);
	tl_close(&t);
}

/* ---- threads: a writer, a forcer, a flusher; the tail follows the callbacks ---- */

struct mt {
	struct tl *t;
	atomic_bool stop;
	atomic_ulong forces;
	uint64_t last_commit;
	unsigned long ndone;
	atomic_int bad;
	pthread_mutex_t m;
};

static struct mt MT;

static void mt_done(void *priv, int err, uint64_t commit, uint64_t end)
{
	(void)priv;
	pthread_mutex_lock(&MT.m);
	if (err || commit < MT.last_commit)
		MT.bad++;
	MT.last_commit = commit;
	MT.ndone++;
	pthread_mutex_unlock(&MT.m);
	jrnl_log_set_tail(MT.t->log, commit);
}

static void *mt_forcer(void *arg)
{
	(void)arg;
	while (!atomic_load(&MT.stop)) {
		if (jrnl_log_force(MT.t->log))
			MT.bad++;
		atomic_fetch_add(&MT.forces, 1);
		(void)jrnl_log_free_bytes(MT.t->log);
		(void)jrnl_log_head(MT.t->log);
	}
	return NULL;
}

static void *mt_flusher(void *arg)
{
	struct jrnl_log_stats st;

	(void)arg;
	while (!atomic_load(&MT.stop)) {
		if (jrnl_log_flush(MT.t->log))
			MT.bad++;
		jrnl_log_stats(MT.t->log, &st);
	}
	return NULL;
}

Test(log, threads, .timeout = 120)
{
	struct tl t;
	pthread_t f1, f2;
	unsigned long ntx = 1500;
	uint64_t rng = 12345;
	unsigned char *d = malloc(70000);

	tl_dev(&t, 512, 8u << 20, false, IOL_SIM_LAT_NVME, 77);
	tl_open_log(&t, 4, 16384);
	memset(&MT, 0, sizeof(MT));
	pthread_mutex_init(&MT.m, NULL);
	MT.t = &t;
	pthread_create(&f1, NULL, mt_forcer, NULL);
	pthread_create(&f2, NULL, mt_flusher, NULL);
	for (unsigned long s = 1; s <= ntx; s++) {
		struct jrnl_wtx tx;
		unsigned flags, n;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		flags = (unsigned)(rng & JRNL_TX_FLAGS_KNOWN);
		n = (unsigned)(rng >> 8) % 4;
		cr_assert_eq(jrnl_tx_start(t.log, s, flags, &tx), 0);
		for (unsigned i = 0; i < n; i++) {
			uint32_t len = (uint32_t)((rng >> (12 + 4 * i)) % 40000);

			fill(d, s, i + 1, len);
			cr_assert_eq(jrnl_tx_item(&tx, i + 1, d, len), 0);
		}
		cr_assert_eq(jrnl_tx_commit(&tx, mt_done, NULL), 0);
	}
	cr_assert_eq(jrnl_log_force(t.log), 0);
	/* On a loaded machine the writer may finish before the forcer's first turn: let it
	 * have one (the test's timeout bounds a forcer that never returns). */
	while (!atomic_load(&MT.forces))
		sched_yield();
	atomic_store(&MT.stop, true);
	pthread_join(f1, NULL);
	pthread_join(f2, NULL);
	cr_assert_eq(MT.ndone, ntx);
	cr_assert_eq(MT.bad, 0);
	free(d);
	tl_close(&t);
}

/*
 * Resume after a torn continuation (found by fuzzing): a checkpoint whose one item is
 * split over three records loses the third in a crash; recovery drops it and the writer
 * resumes at that head with a new checkpoint.  The record before the head still ends
 * with a CONTINUE piece that nothing continues: the next recovery must treat that op as
 * abandoned (its checkpoint dropped), not as a malformed log, and replay checkpoint 2.
 */
Test(log, resume_after_torn_continuation, .timeout = 60)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static unsigned char data[40000];
	const uint32_t S = 4096;
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = 4096 + (4u << 20),
				   .sector = S };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct jrnl_format_opts fo = { .sector = S, .log_size = 4u << 20, .uuid = uuid };
	struct jrnl_log_opts lo = { .logbufs = 2, .logbsize = 16384 };
	const unsigned fl = JRNL_TX_FLUSH_START | JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT |
			    JRNL_TX_WAIT_PREV;
	struct jrnl_recover_opts ro = { .read_only = true };
	struct jrnl_report r1, r2;
	struct jrnl_log *log;
	struct iol_dev *dev;
	struct jrnl_geom g;
	struct jrnl_wtx tx;
	unsigned char *z;

	cr_assert_eq(iol_dev_open(NULL, &o, &dev), 0);
	cr_assert_eq(jrnl_format(dev, &fo, &g), 0);
	cr_assert_eq(jrnl_log_open(dev, &g, NULL, &lo, &log), 0);
	cr_assert_eq(jrnl_tx_start(log, 1, fl, &tx), 0);
	cr_assert_eq(jrnl_tx_item(&tx, 7, data, sizeof(data)), 0);
	cr_assert_eq(jrnl_tx_commit(&tx, NULL, NULL), 0);
	cr_assert_eq(jrnl_log_force(log), 0);
	cr_assert_eq(jrnl_log_close(log), 0);
	/* The crash: the third record (sectors 8-11) never reached the disk. */
	z = iol_buf_alloc(dev, 4 * S);
	memset(z, 0, 4 * S);
	cr_assert_eq(iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 4096 + 8 * S, z, 4 * S, NULL),
		     0);
	free(z);
	cr_assert_eq(jrnl_recover(dev, &g, NULL, &r1), 0);
	cr_assert_eq(r1.checkpoints, 0);
	cr_assert_eq(r1.dropped, 1);
	/* The next session resumes where recovery said and commits checkpoint 2. */
	cr_assert_eq(jrnl_log_open(dev, &g, &r1, &lo, &log), 0);
	cr_assert_eq(jrnl_tx_start(log, 2, fl, &tx), 0);
	cr_assert_eq(jrnl_tx_item(&tx, 8, data, 100), 0);
	cr_assert_eq(jrnl_tx_commit(&tx, NULL, NULL), 0);
	cr_assert_eq(jrnl_log_force(log), 0);
	cr_assert_eq(jrnl_log_flush(log), 0);
	cr_assert_eq(jrnl_log_close(log), 0);
	cr_assert_eq(jrnl_recover(dev, &g, &ro, &r2), 0, "%s", r2.corrupt_what);
	cr_assert_eq(r2.checkpoints, 1, "checkpoint 2 replayed");
	cr_assert_eq(r2.dropped, 1, "checkpoint 1 abandoned");
	cr_assert_eq(iol_dev_close(dev), 0);
}
