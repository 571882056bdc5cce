/*
 * recover.c - log recovery (journal/recover.c) on the simulated disk, 512- and 4096-byte
 * sectors: empty log, checkpoints in one and many records, continuation across records,
 * every wrap boundary class (enum wrap_class: a record ending exactly at the physical
 * end, its header in the last sector, straddling it by one sector, its payload split
 * across it), torn heads and holes,
 * corruption behind the durable point, each bad-input error code, clean unmount,
 * idempotence, the stamping past the head (and a read-only run's count of it,
 * count_stamp), a point in time (replay_to: checkpoints after it verified and held
 * back), salvage (R12: a flipped byte behind the durable point, or damage proved past
 * the head, ends the log there; the prefix is handed over, the rest counted, nothing
 * written), the chained read path, and (R11) every
 * sector of the in-flight window garbled alone and in pairs with the probed sectors,
 * which must recover what the same sectors left unwritten recover.
 *
 * Logs are built here with jrnl_rec_seal, not with the writer: struct tlog lays ops out
 * per docs/FORMAT.md (splitting a payload that does not fit with CONTINUE / WAS_CONT /
 * END), seals records and writes them to the device.  Positions are addresses as in
 * recover.c: lap * N + sector, the first record ever at address N.
 */
#include <criterion/criterion.h>
#include <delog.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "io_sim.h"
#include "jrnl.h"
#include "record.h"

#define TO 120
#define LOG4M (4ull << 20)

static const uint8_t UUID[16] = { 0xd1, 0x0c, 0x5e, 0x11, 0x42, 0x17, 0x4a, 0x7e,
				  0x9b, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd };
static const uint8_t OTHER[16] = { 0xee, 0x0c, 0x5e, 0x11, 0x42, 0x17, 0x4a, 0x7e,
				   0x9b, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd };
static const uint32_t SECTORS[2] = { 512, 4096 };

/* ---- addresses ---- */

static uint32_t lap_cycle(uint64_t lap)
{
	return (uint32_t)(lap >= JRNL_REC_MAGIC ? lap + 1 : lap);
}

/* ---- the test log builder ---- */

struct trec {
	uint64_t a; /* address */
	uint64_t n; /* sectors */
};

struct tlog {
	struct iol_dev *dev;
	struct jrnl_geom g;
	uint32_t S;
	uint64_t N;
	uint32_t logbsize, H, Pmax;
	unsigned char *rec; /* the record being built */
	size_t used;        /* op bytes in it */
	uint32_t nops;
	uint64_t head; /* address of the next record */
	uint64_t prev_lsn;
	uint64_t tail;       /* address written as tail_lsn */
	int64_t durable;     /* address written as durable_lsn; < 0: the record's own */
	const uint8_t *uuid; /* sealed with this uuid */
	struct trec *recs;
	size_t nrecs, recs_cap;
	uint32_t next_tid;
	uint64_t next_seq;
};

static uint64_t t_lsn(const struct tlog *t, uint64_t a)
{
	return jrnl_lsn(lap_cycle(a / t->N), (uint32_t)(a % t->N));
}

static uint64_t t_off(const struct tlog *t, uint64_t a)
{
	return JRNL_LOG_START + (a % t->N) * t->S;
}

/* A log of @window bytes' unflushed bound (0: the default) on a disk of latency @lat. */
static void t_open_full(struct tlog *t, uint32_t S, uint64_t log_bytes, uint32_t logbsize,
			enum iol_sim_latency lat, uint64_t window)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = JRNL_LOG_START + log_bytes,
				   .sector = S,
				   .latency = lat,
				   .seed = 7 };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct jrnl_format_opts fo = { .sector = S,
				       .log_size = log_bytes,
				       .uuid = UUID,
				       .window = window };

	memset(t, 0, sizeof(*t));
	cr_assert_eq(iol_dev_open(NULL, &o, &t->dev), 0);
	cr_assert_eq(jrnl_format(t->dev, &fo, &t->g), 0);
	t->S = S;
	t->N = t->g.log_sectors;
	t->logbsize = logbsize;
	t->H = jrnl_rec_hdr_sectors_for(S, logbsize, &t->Pmax);
	t->rec = iol_buf_alloc(t->dev, logbsize);
	cr_assert(t->rec);
	memset(t->rec, 0, logbsize);
	t->head = t->N;
	t->tail = t->N;
	t->durable = -1;
	t->uuid = UUID;
	t->next_tid = 0x100;
	t->next_seq = 1;
}

static void t_open(struct tlog *t, uint32_t S, uint64_t log_bytes, uint32_t logbsize)
{
	t_open_full(t, S, log_bytes, logbsize, IOL_SIM_LAT_NONE, 0);
}

static void t_close(struct tlog *t)
{
	free(t->rec);
	free(t->recs);
	cr_assert_eq(iol_dev_close(t->dev), 0);
}

static size_t t_room(const struct tlog *t)
{
	return (size_t)t->Pmax * t->S - t->used;
}

/* Write sectors [a, a + n) from @buf, cut at the physical end. */
static void t_write(struct tlog *t, uint64_t a, const void *buf, uint64_t n)
{
	const unsigned char *p = buf;

	while (n) {
		uint64_t k = n < t->N - a % t->N ? n : t->N - a % t->N;

		cr_assert_eq(iol_rw_wait(t->dev, IOL_OPF(IOL_OP_WRITE, 0), t_off(t, a), (void *)p,
					 k * t->S, NULL),
			     0);
		a += k;
		n -= k;
		p += k * t->S;
	}
}

static void t_read(struct tlog *t, uint64_t a, void *buf, uint64_t n)
{
	unsigned char *p = buf;

	while (n) {
		uint64_t k = n < t->N - a % t->N ? n : t->N - a % t->N;

		cr_assert_eq(iol_rw_wait(t->dev, IOL_OPF(IOL_OP_READ, 0), t_off(t, a), p, k * t->S,
					 NULL),
			     0);
		a += k;
		n -= k;
		p += k * t->S;
	}
}

/* Seal the record being built and write it at the head. */
static void t_seal(struct tlog *t)
{
	struct jrnl_rec_fill f = {
		.cycle = lap_cycle(t->head / t->N),
		.sector_no = (uint32_t)(t->head % t->N),
		.log_sectors = t->N,
		.tail_lsn = t_lsn(t, t->tail),
		.durable_lsn = t_lsn(t, t->durable < 0 ? t->head : (uint64_t)t->durable),
		.prev_lsn = t->prev_lsn,
		.len = (uint32_t)t->used,
		.num_ops = t->nops,
		.hdr_sectors = t->H,
		.logbufs = 8,
		.logbsize = t->logbsize,
		.uuid = t->uuid,
	};
	size_t bytes = jrnl_rec_seal(t->rec, t->S, &f);
	uint64_t n = bytes / t->S;

	cr_assert_leq(t->head + n - t->tail, t->N, "test log overruns its tail");
	t_write(t, t->head, t->rec, n);
	if (t->nrecs == t->recs_cap) {
		t->recs_cap = t->recs_cap ? 2 * t->recs_cap : 64;
		t->recs = realloc(t->recs, t->recs_cap * sizeof(*t->recs));
		cr_assert(t->recs);
	}
	t->recs[t->nrecs++] = (struct trec){ t->head, n };
	t->prev_lsn = t_lsn(t, t->head);
	t->head += n;
	t->used = 0;
	t->nops = 0;
	memset(t->rec, 0, t->logbsize);
}

/* Append one op (header, payload, zero padding); it must fit. */
static void t_put(struct tlog *t, uint32_t tid, uint16_t type, uint16_t flags, const void *data,
		  uint32_t len)
{
	unsigned char *p = t->rec + (size_t)t->H * t->S + t->used;
	struct jrnl_op op = { .tid = tid, .len = len, .flags = flags, .type = type };

	cr_assert_leq(sizeof(op) + ((len + 7u) & ~7u), t_room(t));
	memcpy(p, &op, sizeof(op));
	if (len)
		memcpy(p + sizeof(op), data, len);
	t->used += sizeof(op) + ((len + 7u) & ~7u);
	t->nops++;
}

/* Append an op, splitting it across records when it does not fit.  Returns the LSN of
 * the record holding its first piece. */
static uint64_t t_op(struct tlog *t, uint32_t tid, uint16_t type, uint16_t flags, const void *data,
		     uint32_t len)
{
	const unsigned char *d = data;
	uint64_t lsn;
	uint32_t off = 0;
	bool first = true;

	if (t_room(t) < 16 + 8)
		t_seal(t);
	lsn = t_lsn(t, t->head);
	for (;;) {
		uint32_t rest = len - off, piece;

		if (16 + ((rest + 7u) & ~7u) <= t_room(t)) {
			t_put(t, tid, type, first ? flags : JRNL_OP_WAS_CONT | JRNL_OP_END, d + off,
			      rest);
			return lsn;
		}
		piece = (uint32_t)((t_room(t) - 16) & ~(size_t)7);
		t_put(t, tid, type, (first ? flags : JRNL_OP_WAS_CONT) | JRNL_OP_CONTINUE, d + off,
		      piece);
		off += piece;
		first = false;
		t_seal(t);
	}
}

/* A checkpoint being written. */
struct tck {
	uint32_t tid;
	uint64_t seq, start_lsn, bytes;
	uint32_t n, crc;
};

static uint8_t pat(uint64_t key, uint32_t i)
{
	return (uint8_t)(key * 31 + i * 7 + 1);
}

static void t_begin(struct tlog *t, struct tck *c)
{
	struct jrnl_start st = { .seq = t->next_seq++ };

	memset(c, 0, sizeof(*c));
	c->tid = t->next_tid++;
	c->seq = st.seq;
	c->start_lsn = t_op(t, c->tid, JRNL_T_START, JRNL_OP_START, &st, sizeof(st));
}

static void t_item(struct tlog *t, struct tck *c, uint32_t dlen)
{
	uint64_t key = c->seq << 20 | c->n;
	unsigned char *buf = malloc(sizeof(struct jrnl_item) + dlen);
	struct jrnl_item it = { .key = key, .data_len = dlen };

	cr_assert(buf);
	memcpy(buf, &it, sizeof(it));
	for (uint32_t i = 0; i < dlen; i++)
		buf[sizeof(it) + i] = pat(key, i);
	c->crc = jrnl_crc32c(c->crc, buf, sizeof(it) + dlen);
	c->bytes += sizeof(it) + dlen;
	c->n++;
	t_op(t, c->tid, JRNL_T_ITEM, 0, buf, (uint32_t)(sizeof(it) + dlen));
	free(buf);
}

static void t_commit(struct tlog *t, struct tck *c)
{
	struct jrnl_commit cm = { .seq = c->seq,
				  .start_lsn = c->start_lsn,
				  .nitems = c->n,
				  .crc = c->crc,
				  .payload_bytes = c->bytes };

	t_op(t, c->tid, JRNL_T_COMMIT, JRNL_OP_COMMIT, &cm, sizeof(cm));
}

/* A whole checkpoint of @n items of @dlen bytes; returns its seq. */
static uint64_t t_ckpt(struct tlog *t, uint32_t n, uint32_t dlen)
{
	struct tck c;

	t_begin(t, &c);
	for (uint32_t i = 0; i < n; i++)
		t_item(t, &c, dlen);
	t_commit(t, &c);
	return c.seq;
}

/* A checkpoint alone in a record of exactly @k sectors (k > H); returns its seq. */
static uint64_t t_ckpt_sized(struct tlog *t, uint64_t k)
{
	uint64_t seq;

	cr_assert_eq(t->used, 0);
	cr_assert(k > t->H && k <= t->H + t->Pmax);
	/* START 32 + ITEM 32 + data + COMMIT 48 bytes of ops. */
	seq = t_ckpt(t, 1, (uint32_t)((k - t->H) * t->S - 112));
	cr_assert_eq(t->used, (k - t->H) * t->S);
	t_seal(t);
	return seq;
}

/* Fill with sized checkpoints until the head is at @target. */
static void t_pad_to(struct tlog *t, uint64_t target)
{
	uint64_t maxk = t->H + t->Pmax;

	cr_assert_eq(t->used, 0);
	while (t->head < target) {
		uint64_t d = target - t->head, k = d < maxk ? d : maxk;

		if (d - k && d - k < t->H + 1)
			k = d - (t->H + 1);
		t_ckpt_sized(t, k);
	}
	cr_assert_eq(t->head, target);
}

/* Make sectors [a, a + n) look never written by this lap: the previous lap's cycle. */
static void t_unwrite(struct tlog *t, uint64_t a, uint64_t n)
{
	unsigned char *buf = iol_buf_alloc(t->dev, t->S);

	cr_assert(buf);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = lap_cycle((a + i) / t->N - 1);

		memset(buf, 0, t->S);
		memcpy(buf, &c, sizeof(c));
		t_write(t, a + i, buf, 1);
	}
	free(buf);
}

/* Overwrite the sector at @a with bytes that are no sector of any log. */
static void t_junk(struct tlog *t, uint64_t a)
{
	unsigned char *buf = iol_buf_alloc(t->dev, t->S);

	cr_assert(buf);
	for (uint32_t i = 0; i < t->S; i++)
		buf[i] = (unsigned char)(i * 131 + 17 + a);
	t_write(t, a, buf, 1);
	free(buf);
}

/* Change one byte of the sector at @a. */
static void t_poke(struct tlog *t, uint64_t a, uint32_t off, uint8_t x)
{
	unsigned char *buf = iol_buf_alloc(t->dev, t->S);

	cr_assert(buf);
	t_read(t, a, buf, 1);
	buf[off] ^= x;
	t_write(t, a, buf, 1);
	free(buf);
}

/* ---- replay collection ---- */

#define GOT_MAX 4096

struct got {
	uint64_t seq[GOT_MAX];
	uint32_t nitems[GOT_MAX];
	size_t n;
	uint64_t items;
	bool bad;          /* an item's key or bytes were not what was written */
	int err;           /* what jrnl_recover returned */
	uint64_t verified; /* checkpoints it verified (report.checkpoints) */
};

static int collect(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *it,
		   size_t n)
{
	struct got *g = priv;

	if (g->n < GOT_MAX) {
		g->seq[g->n] = ck->seq;
		g->nitems[g->n] = (uint32_t)n;
	}
	g->n++;
	g->items += n;
	if (n != ck->nitems)
		g->bad = true;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *d = it[i].data;

		if (it[i].key >> 20 != ck->seq || (it[i].key & 0xfffff) != i)
			g->bad = true;
		for (uint32_t j = 0; j < it[i].len; j++)
			if (d[j] != pat(it[i].key, j)) {
				g->bad = true;
				break;
			}
	}
	return 0;
}

static int t_recover(struct tlog *t, bool read_only, struct jrnl_report *rep, struct got *g)
{
	struct jrnl_recover_opts o = { .replay = collect, .priv = g, .read_only = read_only };

	int err;

	memset(g, 0, sizeof(*g));
	err = jrnl_recover(t->dev, &t->g, &o, rep);
	g->err = err;
	g->verified = rep->checkpoints;
	/* R9: damage is found before anything is handed over. */
	if (err && err == rep->corruption)
		cr_assert_eq(g->n, 0, "%zu checkpoints handed over, then error %d", g->n, err);
	return err;
}

/*
 * The checkpoints recovery finds good are exactly from..to: replayed, or, when it then
 * refused the log, verified and none handed over (R9).
 */
static void want_seqs(const struct got *g, uint64_t from, uint64_t to)
{
	if (g->err && !g->n) {
		cr_assert_eq(g->verified, to + 1 - from,
			     "verified %llu checkpoints before error "
			     "%d, expected %llu..%llu",
			     (unsigned long long)g->verified, g->err, (unsigned long long)from,
			     (unsigned long long)to);
		return;
	}
	cr_assert(!g->bad, "replayed item data differs from what was written");
	cr_assert_eq(g->n, to + 1 - from, "replayed %zu checkpoints, expected %llu..%llu", g->n,
		     (unsigned long long)from, (unsigned long long)to);
	for (size_t i = 0; i < g->n && i < GOT_MAX; i++)
		cr_assert_eq(g->seq[i], from + i, "checkpoint %zu is seq %llu, expected %llu", i,
			     (unsigned long long)g->seq[i], (unsigned long long)(from + i));
}

/* 300 checkpoints of 1-5 items of up to 700 bytes, sealed three to a record. */
static void t_many(struct tlog *t)
{
	for (int i = 0; i < 300; i++) {
		t_ckpt(t, 1 + i % 5, (uint32_t)(i * 37 % 700));
		if (i % 3 == 2)
			t_seal(t);
	}
	t_seal(t);
}

static struct got G; /* large: not on the stack */

/* ---- tests ---- */

Test(recover, empty_log, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0);
		cr_assert(rep.empty);
		cr_assert(!rep.clean);
		cr_assert_eq(rep.head_lsn, jrnl_lsn(1, 0));
		cr_assert_eq(rep.tail_lsn, jrnl_lsn(1, 0));
		cr_assert_eq(rep.records, 0);
		cr_assert_eq(rep.checkpoints, 0);
		cr_assert_eq(rep.torn_bytes, 0);
		cr_assert_eq(rep.corruption, 0);
		/* Nothing of this lap lies past the head: nothing to rewrite (R8). */
		cr_assert_eq(rep.stamped_bytes, 0);
		cr_assert_eq(G.n, 0);
		/* and again, after the stamping */
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0);
		cr_assert(rep.empty);
		cr_assert_eq(rep.head_lsn, jrnl_lsn(1, 0));
		t_close(&t);
	}
}

Test(recover, one_checkpoint, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		t_ckpt(&t, 3, 100);
		t_seal(&t);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 1);
		cr_assert(!rep.empty);
		cr_assert_eq(rep.records, 1);
		cr_assert_eq(rep.checkpoints, 1);
		cr_assert_eq(rep.items, 3);
		cr_assert_eq(rep.bytes_replayed, 300);
		cr_assert_eq(rep.dropped, 0);
		cr_assert_eq(rep.torn_bytes, 0);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, t.head));
		cr_assert_eq(rep.tail_lsn, jrnl_lsn(1, 0));
		cr_assert_eq(rep.last_lsn, jrnl_lsn(1, 0));
		cr_assert_gt(rep.bytes_read, 0);
		cr_assert_gt(rep.read_reqs, 0);
		cr_assert_eq(rep.durable_lsn, rep.head_lsn); /* after the stamping's flush */
		t_close(&t);
	}
}

Test(recover, many_checkpoints, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		t_many(&t);
		cr_assert_eq(t_recover(&t, true, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 300);
		cr_assert_eq(rep.records, t.nrecs);
		cr_assert_eq(rep.checkpoints, 300);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, t.head));
		cr_assert_eq(rep.stamped_bytes, 0);
		cr_assert_eq(rep.last_lsn, t_lsn(&t, t.recs[t.nrecs - 1].a));
		cr_assert_eq(rep.durable_lsn, rep.last_lsn); /* read-only: the record's word */
		t_close(&t);
	}
}

static int fail_at_150(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *it,
		       size_t n)
{
	return ck->seq == 150 ? -EPROTO : collect(priv, ck, it, n);
}

/* One read-only recovery of @t with @replay and @hold_bytes, into G. */
static int t_recover_hold(struct tlog *t, jrnl_replay_fn replay, uint64_t hold_bytes,
			  struct jrnl_report *rep)
{
	struct jrnl_recover_opts o = { .replay = replay,
				       .priv = &G,
				       .read_only = true,
				       .hold_bytes = hold_bytes };

	memset(&G, 0, sizeof(G));
	return jrnl_recover(t->dev, &t->g, &o, rep);
}

static void same_outcome(const struct jrnl_report *a, const struct jrnl_report *b)
{
	cr_assert_eq(a->empty, b->empty);
	cr_assert_eq(a->clean, b->clean);
	cr_assert_eq(a->head_lsn, b->head_lsn);
	cr_assert_eq(a->tail_lsn, b->tail_lsn);
	cr_assert_eq(a->last_lsn, b->last_lsn);
	cr_assert_eq(a->durable_lsn, b->durable_lsn);
	cr_assert_eq(a->records, b->records);
	cr_assert_eq(a->checkpoints, b->checkpoints);
	cr_assert_eq(a->items, b->items);
	cr_assert_eq(a->bytes_replayed, b->bytes_replayed);
	cr_assert_eq(a->dropped, b->dropped);
	cr_assert_eq(a->first_seq, b->first_seq);
	cr_assert_eq(a->last_seq, b->last_seq);
	cr_assert_eq(a->corruption, b->corruption);
}

/*
 * R16: with a replay callback, a log whose checkpoints fit in hold_bytes is read once
 * (no more bytes than a run without a callback) and hands over what a second read
 * would; a budget that runs out part way, or 1, reads the log again and hands every
 * checkpoint over once, in order; a callback that fails while the held checkpoints are
 * handed over stops there with its error.
 */
Test(recover, read_once_within_hold, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report r0, r1, r2, r3;
		struct tlog t;
		uint64_t main_bytes;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		t_many(&t);
		cr_assert_eq(t_recover_hold(&t, NULL, 0, &r0), 0, "%s", r0.corrupt_what);
		cr_assert_eq(t_recover_hold(&t, collect, 0, &r1), 0, "%s", r1.corrupt_what);
		want_seqs(&G, 1, 300);
		cr_assert(!G.bad);
		cr_assert(!r1.reread);
		cr_assert_geq(r1.held_peak, r1.bytes_replayed);
		cr_assert_eq(r1.bytes_read, r0.bytes_read,
			     "read %llu bytes, %llu without a callback",
			     (unsigned long long)r1.bytes_read, (unsigned long long)r0.bytes_read);
		same_outcome(&r1, &r0);

		cr_assert_eq(t_recover_hold(&t, collect, 1, &r2), 0, "%s", r2.corrupt_what);
		want_seqs(&G, 1, 300);
		cr_assert(!G.bad);
		cr_assert(r2.reread);
		main_bytes = (t.head - t.recs[0].a) * t.S;
		cr_assert_geq(r2.bytes_read, r1.bytes_read + main_bytes);
		same_outcome(&r2, &r1);

		cr_assert_eq(t_recover_hold(&t, collect, r1.bytes_replayed / 2, &r3), 0);
		want_seqs(&G, 1, 300);
		cr_assert(!G.bad);
		cr_assert(r3.reread);
		cr_assert_eq(r3.bytes_read, r2.bytes_read);
		same_outcome(&r3, &r1);

		cr_assert_eq(t_recover_hold(&t, fail_at_150, 0, &r3), -EPROTO);
		cr_assert_eq(G.n, 149);
		t_close(&t);
	}
}

/* Items larger than a record: CONTINUE, WAS_CONT | CONTINUE ..., WAS_CONT | END. */
Test(recover, spanning_records, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct tck c;

		t_open(&t, SECTORS[s], LOG4M, 16 << 10);
		t_ckpt(&t, 2, 50);
		t_begin(&t, &c);
		t_item(&t, &c, 40000);
		t_item(&t, &c, 3);
		t_item(&t, &c, 70001);
		t_commit(&t, &c);
		for (int i = 0; i < 20; i++)
			t_ckpt(&t, 2, 5000 + 999 * i);
		t_seal(&t);
		cr_assert_gt(t.nrecs, 10);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 22);
		cr_assert_eq(G.nitems[1], 3);
		cr_assert_eq(rep.records, t.nrecs);
		t_close(&t);
	}
}

enum wrap_class {
	END_EXACT,
	HDR_LAST,
	STRADDLE_1,
	PAYLOAD_SPLIT,
	NCLASS
};

/*
 * Build a log in its second lap with the record of @cls placed at the physical end:
 * lap 1 padded up to shortly before the end, the tail moved there, one checkpoint, the
 * boundary record, then two more checkpoints.  Returns the seq of the first checkpoint
 * after the tail; *brec gets the index of the boundary record.
 */
static uint64_t build_wrap(struct tlog *t, enum wrap_class cls, uint64_t k, size_t *brec)
{
	uint64_t end = 2 * t->N, at, first;

	switch (cls) {
	case END_EXACT:
		at = end - k;
		break;
	case HDR_LAST:
		at = end - 1;
		break;
	case STRADDLE_1:
		at = end - (k - 1);
		break;
	default:
		at = end - k / 2;
		break;
	}
	t_pad_to(t, at - 3 * (t->H + 2));
	t->tail = t->head;
	first = t_ckpt_sized(t, t->H + 2);
	t_ckpt_sized(t, 2 * (t->H + 2));
	cr_assert_eq(t->head, at);
	/* What follows was written with the boundary record possibly in flight. */
	t->durable = (int64_t)at;
	*brec = t->nrecs;
	t_ckpt_sized(t, k);
	t_ckpt(t, 2, 3000);
	t_seal(t);
	t_ckpt(t, 1, 10);
	t_seal(t);
	return first;
}

Test(recover, wrap_boundary_classes, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int cls = 0; cls < NCLASS; cls++) {
			/* 256 KiB buffers with 512-byte sectors need 5 header sectors: the
			 * header itself then straddles the end too. */
			for (int big = 0; big < 2; big++) {
				uint32_t lb = big ? 256 << 10 : 32 << 10;
				struct jrnl_report rep;
				struct tlog t;
				uint64_t first, k;
				size_t b;

				t_open(&t, SECTORS[s], LOG4M, lb);
				k = t.H + (t.Pmax > 8 ? 8 : t.Pmax);
				first = build_wrap(&t, (enum wrap_class)cls, k, &b);
				cr_assert_eq(t_recover(&t, false, &rep, &G), 0,
					     "sector %u class %d big %d: %s", SECTORS[s], cls, big,
					     rep.corrupt_what);
				want_seqs(&G, first, t.next_seq - 1);
				cr_assert_eq(rep.head_lsn, t_lsn(&t, t.head));
				cr_assert_eq(rep.tail_lsn, t_lsn(&t, t.tail));
				cr_assert_eq(rep.torn_bytes, 0);
				cr_assert_eq(jrnl_lsn_cycle(rep.head_lsn), 2);

				/* Tear the boundary record's part at the log start (its
				 * sectors there still show lap 1): torn, cut before it. */
				if (t.recs[b].a + t.recs[b].n > 2 * t.N) {
					t_unwrite(&t, 2 * t.N, t.recs[b].a + t.recs[b].n - 2 * t.N);
					cr_assert_eq(t_recover(&t, true, &rep, &G), 0, "%s",
						     rep.corrupt_what);
					want_seqs(&G, first, first + 1);
					cr_assert_eq(rep.head_lsn, t_lsn(&t, t.recs[b].a));
					cr_assert_gt(rep.torn_bytes, 0);
					cr_assert_eq(rep.dropped, 0);
				}
				t_close(&t);

				/* The window spans the wrap and the end is the hole: the
				 * boundary record's last sector (at the physical end) still
				 * shows lap 0 while sector 0 shows lap 2 (the boundary record's
				 * part there, or the record after it, reached the disk first).
				 * Then the same with both end sectors garbled.  Either way the
				 * boundary record is the torn head. */
				for (int garble = 0; garble < 2; garble++) {
					t_open(&t, SECTORS[s], LOG4M, lb);
					first = build_wrap(&t, (enum wrap_class)cls, k, &b);
					if (garble) {
						t_junk(&t, 2 * t.N - 1);
						t_junk(&t, 2 * t.N);
					} else {
						t_unwrite(&t, 2 * t.N - 1, 1);
					}
					cr_assert_eq(t_recover(&t, true, &rep, &G), 0,
						     "sector %u class %d big %d garble %d: %s",
						     SECTORS[s], cls, big, garble,
						     rep.corrupt_what);
					want_seqs(&G, first, first + 1);
					cr_assert_eq(rep.head_lsn, t_lsn(&t, t.recs[b].a));
					cr_assert_gt(rep.torn_bytes, 0);
					cr_assert_eq(rep.dropped, 0);
					t_close(&t);
				}
			}
		}
	}
}

/*
 * The in-flight window spans the wrap and reaches past the head search's probes: lap 2
 * wrote past N/8 at the log's start while the last 3N/16 sectors of lap 1 (with the
 * probe at 7N/8 and the last sector) never reached the disk.  Sector 0 says lap 2, the
 * last sector lap 0, the probes lap 2, 1 and 0.  Nothing after the hole was covered by
 * a flush, so the head is the hole and every checkpoint before it is recovered.  (The
 * crash suite met this state under async with a 4 MiB log; recovery refused it.)
 */
Test(recover, window_across_wrap_past_probes, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		uint64_t hole, first, last;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		hole = 2 * t.N - 3 * t.N / 16;
		t_pad_to(&t, hole - t.N / 4);
		t.tail = t.head;
		first = t.next_seq;
		t_pad_to(&t, hole);
		last = t.next_seq - 1;
		t.durable = (int64_t)hole;
		t_pad_to(&t, 2 * t.N + t.N / 8 + 16);
		t_unwrite(&t, hole, 2 * t.N - hole);
		cr_assert_eq(t_recover(&t, true, &rep, &G), 0, "sector %u: %s", SECTORS[s],
			     rep.corrupt_what);
		want_seqs(&G, first, last);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, hole));
		cr_assert_gt(rep.torn_bytes, 0);
		cr_assert_eq(rep.dropped, 0);
		/* Recovered for real (stamped), then again: the same checkpoints. */
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, first, last);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, first, last);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, hole));
		t_close(&t);
	}
}

/* The last record half written: its second half still shows the old cycle. */
Test(recover, torn_head, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int lap = 1; lap <= 2; lap++) {
			struct jrnl_report rep;
			struct tlog t;
			struct trec last;
			uint64_t first = 1;

			t_open(&t, SECTORS[s], LOG4M, 32 << 10);
			if (lap == 2) {
				t_pad_to(&t, t.N + t.N / 2);
				t.tail = t.head;
				first = t.next_seq;
				t_pad_to(&t, 2 * t.N + 100);
			}
			for (int i = 0; i < 5; i++) {
				t_ckpt(&t, 2, 1500);
				t_seal(&t);
			}
			last = t.recs[t.nrecs - 1];
			t_unwrite(&t, last.a + last.n / 2, last.n - last.n / 2);
			cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
			want_seqs(&G, first, t.next_seq - 2);
			cr_assert_eq(rep.head_lsn, t_lsn(&t, last.a));
			cr_assert_eq(rep.torn_bytes, (last.n / 2) * t.S);
			cr_assert_eq(rep.corruption, 0);
			cr_assert_eq(rep.dropped, 0);
			t_close(&t);
		}
	}
}

/* A hole: the last-but-one buffer never reached the disk, the last one did (completions
 * out of order).  The head is the hole; the record after it is discarded. */
Test(recover, hole_in_flight_window, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct trec r5, r6;
		struct tck c;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		for (int i = 0; i < 4; i++) {
			t_ckpt(&t, 1, 2000);
			t_seal(&t);
		}
		t.durable = (int64_t)t.head; /* R5 and R6 were in flight together */
		t_begin(&t, &c); /* checkpoint 5 spans the hole and the record after it */
		t_item(&t, &c, 20000);
		t_item(&t, &c, 20000);
		t_commit(&t, &c);
		t_seal(&t);
		cr_assert_geq(t.nrecs, 6);
		r5 = t.recs[4];
		r6 = t.recs[t.nrecs - 1];
		t_unwrite(&t, r5.a, r5.n);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 4);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, r5.a));
		cr_assert_eq(rep.torn_bytes, (r6.a + r6.n - r5.a) * t.S);
		cr_assert_eq(rep.dropped, 0);
		/* Stamped: a second run sees a clean head. */
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0);
		want_seqs(&G, 1, 4);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, r5.a));
		cr_assert_eq(rep.torn_bytes, 0);
		t_close(&t);
	}
}

Test(recover, incomplete_checkpoint_dropped, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct tck c;

		t_open(&t, SECTORS[s], LOG4M, 16 << 10);
		t_ckpt(&t, 2, 100);
		t_begin(&t, &c);
		t_item(&t, &c, 30000); /* spans records; no COMMIT ever written */
		t_seal(&t);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 1);
		cr_assert_eq(rep.dropped, 1);
		cr_assert_eq(rep.records, t.nrecs);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, t.head));
		t_close(&t);
	}
}

/* Six records, each written after the ones before were stable (durable_lsn = its own
 * start), so damage in any but the last is corruption. */
static void six_records(struct tlog *t, uint32_t S)
{
	t_open(t, S, LOG4M, 32 << 10);
	for (int i = 0; i < 6; i++) {
		t_ckpt(t, 2, 3000);
		t_seal(t);
	}
}

Test(recover, crc_flip_behind_durable_is_corruption, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct trec r3;

		six_records(&t, SECTORS[s]);
		r3 = t.recs[2];
		t_poke(&t, r3.a + r3.n - 1, 100, 0x40);
		cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_ECHECKSUM);
		cr_assert_eq(rep.corruption, DELOG_ECHECKSUM);
		cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, r3.a));
		cr_assert_eq(rep.corrupt_offset, t_off(&t, r3.a));
		cr_assert(strstr(rep.corrupt_what, "CRC"), "%s", rep.corrupt_what);
		cr_assert_str_eq(rep.corrupt_field, "rec.crc");
		want_seqs(&G, 1, 2);
		cr_assert_eq(rep.stamped_bytes, 0);
		t_close(&t);
	}
}

Test(recover, crc_flip_at_head_is_torn, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct trec r6;

		six_records(&t, SECTORS[s]);
		r6 = t.recs[5];
		t_poke(&t, r6.a + 1, 200, 0x01);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 5);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, r6.a));
		cr_assert_eq(rep.torn_bytes, r6.n * t.S);
		t_close(&t);
	}
}

/* A sector of a middle record reads as never written: not a torn write, because the
 * records after it say it was stable. */
Test(recover, old_cycle_behind_durable_is_corruption, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct trec r2;

		six_records(&t, SECTORS[s]);
		r2 = t.recs[1];
		t_unwrite(&t, r2.a + 2, 1);
		cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_ECORRUPT);
		cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, r2.a));
		want_seqs(&G, 1, 1);
		t_close(&t);
	}
}

/* A log of 32 KiB records past its first lap, with the sector where the head search
 * looks first (mid-log) unwritten; returns the index of the record holding it. */
static size_t search_path_damage(struct tlog *t, int s)
{
	uint64_t mid;
	size_t i;

	t_open(t, SECTORS[s], LOG4M, 32 << 10);
	t_pad_to(t, t->N + t->N * 3 / 4);
	mid = t->N + (t->N - 1) / 2;
	for (i = 0; t->recs[i].a + t->recs[i].n <= mid; i++)
		;
	t_unwrite(t, mid, 1);
	return i;
}

/* A damaged sector right where the binary search looks first misleads the head search;
 * the records after it, which vouch for it, expose that. */
Test(recover, damaged_sector_on_search_path, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		size_t i;

		i = search_path_damage(&t, s);
		cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_ECORRUPT);
		cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, t.recs[i].a), "%s", rep.corrupt_what);
		want_seqs(&G, 1, i);
		cr_assert_eq(rep.stamped_bytes, 0);
		t_close(&t);
	}
}

Test(recover, uuid_mismatch, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int where = 0; where < 2; where++) {
			struct jrnl_report rep;
			struct tlog t;
			uint64_t a;

			t_open(&t, SECTORS[s], LOG4M, 32 << 10);
			for (int i = 0; i < 5; i++) {
				t_ckpt(&t, 1, 700);
				if (i == (where ? 4 : 2))
					t.uuid = OTHER;
				t_seal(&t);
				t.uuid = UUID;
			}
			a = t.recs[where ? 4 : 2].a;
			cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_EFOREIGN);
			cr_assert_eq(rep.corruption, DELOG_EFOREIGN);
			cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, a));
			cr_assert_eq(rep.corrupt_offset, t_off(&t, a));
			cr_assert_leq(G.n, 2);
			t_close(&t);
		}
	}
}

/* ---- point in time (replay_to) and salvage (recover.c R12) ---- */

/* jrnl_recover with replay_to and salvage, collecting into @g as t_recover does (but
 * without its R9 assertion, which a salvage returning 0 need not meet). */
static int t_recover_opts(struct tlog *t, uint64_t to, bool salvage, struct jrnl_report *rep,
			  struct got *g)
{
	struct jrnl_recover_opts o = { .replay = collect,
				       .priv = g,
				       .replay_to = to,
				       .salvage = salvage };
	int err;

	memset(g, 0, sizeof(*g));
	err = jrnl_recover(t->dev, &t->g, &o, rep);
	g->err = err;
	g->verified = rep->checkpoints;
	return err;
}

/* replay_to N hands over 1..N, counts the rest in held_back, and still verifies the
 * whole log: a damaged log fails whatever N is. */
Test(recover, replay_to_holds_back, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct trec r5;

		six_records(&t, SECTORS[s]);
		cr_assert_eq(t_recover_opts(&t, 4, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, 4);
		cr_assert_eq(rep.checkpoints, 4);
		cr_assert_eq(rep.items, 8);
		cr_assert_eq(rep.held_back, 2);
		cr_assert_eq(rep.first_seq, 1);
		cr_assert_eq(rep.last_seq, 4);
		cr_assert_eq(t_recover_opts(&t, 99, false, &rep, &G), 0);
		want_seqs(&G, 1, 6);
		cr_assert_eq(rep.held_back, 0);
		cr_assert_eq(rep.last_seq, 6);
		/* Damage after N still fails the log, and nothing is handed over. */
		r5 = t.recs[4];
		t_poke(&t, r5.a + r5.n - 1, 100, 0x40);
		cr_assert_eq(t_recover_opts(&t, 2, false, &rep, &G), DELOG_ECHECKSUM);
		cr_assert_eq(G.n, 0, "%zu checkpoints handed over before the error", G.n);
		t_close(&t);
	}
}

/* A flipped byte in the third of six records: salvage hands over 1..2, reports the
 * damage and what follows it (records 4-6 and their commits), writes nothing. */
Test(recover, salvage_keeps_prefix, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct iol_counters c0, c1;
		struct jrnl_report rep;
		struct tlog t;
		struct trec r3, r6;

		six_records(&t, SECTORS[s]);
		r3 = t.recs[2];
		r6 = t.recs[5];
		t_poke(&t, r3.a + r3.n - 1, 100, 0x40);
		iol_dev_counters(t.dev, &c0);
		cr_assert_eq(t_recover_opts(&t, 0, true, &rep, &G), 0, "%s", rep.corrupt_what);
		iol_dev_counters(t.dev, &c1);
		cr_assert_eq(c1.writes, c0.writes, "salvage wrote to the damaged log");
		cr_assert_eq(c1.flushes, c0.flushes);
		want_seqs(&G, 1, 2);
		cr_assert(rep.salvaged);
		cr_assert(!rep.clean);
		cr_assert_eq(rep.corruption, DELOG_ECHECKSUM);
		cr_assert_str_eq(rep.corrupt_field, "rec.crc");
		cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, r3.a));
		cr_assert_eq(rep.salvage_lsn, t_lsn(&t, r3.a));
		cr_assert_eq(rep.salvage_offset, t_off(&t, r3.a));
		cr_assert_eq(rep.salvage_bytes, (r6.a + r6.n - r3.a) * t.S);
		cr_assert_eq(rep.checkpoints, 2);
		cr_assert_eq(rep.last_seq, 2);
		cr_assert_eq(rep.lost_commits, 3);
		cr_assert_eq(rep.lost_first_seq, 4);
		cr_assert_eq(rep.lost_last_seq, 6);
		cr_assert_eq(rep.stamped_bytes, 0);
		/* With a point in time before the damage: 1 only, 2 held back. */
		cr_assert_eq(t_recover_opts(&t, 1, true, &rep, &G), 0);
		want_seqs(&G, 1, 1);
		cr_assert_eq(rep.held_back, 1);
		cr_assert(rep.salvaged);
		/* And without salvage the log is still refused. */
		cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_ECHECKSUM);
		t_close(&t);
	}
}

/* Damage that the records past the head prove (step 4): salvage keeps [T, E) and drops
 * the records past it. */
Test(recover, salvage_past_head, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		size_t i;

		i = search_path_damage(&t, s);
		cr_assert_eq(t_recover_opts(&t, 0, true, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 1, i);
		cr_assert(rep.salvaged);
		cr_assert_eq(rep.corruption, DELOG_ECORRUPT);
		cr_assert_eq(rep.salvage_lsn, t_lsn(&t, t.recs[i].a));
		cr_assert_eq(rep.lost_first_seq, i + 2,
			     "the damaged record's own commit is lost "
			     "with it; the next ones are seen");
		cr_assert_eq(rep.lost_last_seq, t.nrecs);
		cr_assert_eq(rep.salvage_bytes,
			     (t.recs[t.nrecs - 1].a + t.recs[t.nrecs - 1].n - t.recs[i].a) * t.S);
		t_close(&t);
	}
}

/* An op whose length runs past its record's len, in a record whose CRC holds. */
Test(recover, op_len_past_record, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int where = 0; where < 2; where++) {
			struct jrnl_report rep;
			struct tlog t;
			struct jrnl_op op;
			size_t at = 0;
			uint64_t a = 0;

			t_open(&t, SECTORS[s], LOG4M, 32 << 10);
			for (int i = 0; i < 4; i++) {
				if (i == (where ? 3 : 1)) {
					t_ckpt(&t, 1, 40);
					at = t.used;
					t_ckpt(&t, 1, 40);
					memcpy(&op, t.rec + t.H * t.S + at, sizeof(op));
					op.len = (uint32_t)t.used; /* past the end */
					memcpy(t.rec + t.H * t.S + at, &op, sizeof(op));
					a = t.head;
				} else {
					t_ckpt(&t, 1, 40);
				}
				t_seal(&t);
			}
			cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_EBADOP);
			cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, a));
			cr_assert_eq(rep.corrupt_offset, t_off(&t, a) + t.H * t.S + at, "%s",
				     rep.corrupt_what);
			cr_assert(strstr(rep.corrupt_what, "run past"), "%s", rep.corrupt_what);
			cr_assert_str_eq(rep.corrupt_field, "op.len");
			/* the checkpoint before the bad op, in the same record, was whole */
			want_seqs(&G, 1, where ? 4 : 2);
			t_close(&t);
		}
	}
}

/* More malformed ops: each its own code, never a crash. */
Test(recover, malformed_ops, .timeout = TO)
{
	struct {
		uint16_t type, flags;
		uint32_t len, reserved;
		int want;
	} cases[] = {
		{ 9, 0, 8, 0, DELOG_EBADOP },                             /* unknown type */
		{ JRNL_T_ITEM, 0x40, 24, 0, DELOG_EBADOP },               /* unknown flag */
		{ JRNL_T_ITEM, 0, 24, 1, DELOG_EBADOP },                  /* reserved set */
		{ JRNL_T_ITEM, JRNL_OP_COMMIT, 24, 0, DELOG_EBADOP },     /* flags vs type */
		{ JRNL_T_ITEM, JRNL_OP_END, 24, 0, DELOG_EBADOP },        /* END, no WAS_CONT */
		{ JRNL_T_START, JRNL_OP_START, 8, 0, DELOG_EBADOP },      /* START too short */
		{ JRNL_T_UNMOUNT, JRNL_OP_UNMOUNT, 16, 0, DELOG_EBADOP }, /* bad magic */
		{ JRNL_T_ITEM, JRNL_OP_WAS_CONT | JRNL_OP_END, 24, 0, DELOG_EORPHAN },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct jrnl_report rep;
		struct tlog t;
		unsigned char payload[64] = { 0 };

		t_open(&t, 4096, LOG4M, 32 << 10);
		t_ckpt(&t, 1, 10);
		t_seal(&t);
		t_ckpt(&t, 1, 10);
		t_put(&t, 0x77, 0, 0, payload, cases[k].len);
		{
			struct jrnl_op op = { .tid = 0x77,
					      .len = cases[k].len,
					      .flags = cases[k].flags,
					      .type = cases[k].type,
					      .reserved = cases[k].reserved };

			memcpy(t.rec + t.H * t.S + t.used - 16 - ((cases[k].len + 7) & ~7u), &op,
			       sizeof(op));
		}
		t_seal(&t);
		t_ckpt(&t, 1, 10);
		t_seal(&t);
		cr_assert_eq(t_recover(&t, false, &rep, &G), cases[k].want, "case %zu: %s", k,
			     rep.corrupt_what);
		cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, t.recs[1].a), "case %zu", k);
		want_seqs(&G, 1, 2);
		t_close(&t);
	}
}

/* A record that starts with a continuation whose start is nowhere. */
Test(recover, orphan_continuation, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		unsigned char junk[24] = { 1, 2, 3 };

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		t_ckpt(&t, 1, 100);
		t_seal(&t);
		t_ckpt(&t, 1, 100);
		t_seal(&t);
		t_put(&t, 0x99, JRNL_T_ITEM, JRNL_OP_WAS_CONT | JRNL_OP_END, junk, sizeof(junk));
		t_ckpt(&t, 1, 100);
		t_seal(&t);
		cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_EORPHAN);
		cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, t.recs[2].a));
		cr_assert_eq(rep.corrupt_offset, t_off(&t, t.recs[2].a) + t.H * t.S);
		want_seqs(&G, 1, 2);
		t_close(&t);
	}
}

/* A COMMIT whose START should lie inside the log but is not there. */
Test(recover, orphan_commit, .timeout = TO)
{
	struct jrnl_report rep;
	struct tlog t;
	struct jrnl_commit cm = { .seq = 77, .nitems = 0 };

	t_open(&t, 512, LOG4M, 32 << 10);
	t_ckpt(&t, 1, 100);
	t_seal(&t);
	cm.start_lsn = t_lsn(&t, t.recs[0].a);
	t_put(&t, 0x5555, JRNL_T_COMMIT, JRNL_OP_COMMIT, &cm, sizeof(cm));
	t_seal(&t);
	cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_EORPHAN);
	cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, t.recs[1].a));
	want_seqs(&G, 1, 1);
	t_close(&t);
}

/* A checkpoint whose START lies before the tail is already written back: its items and
 * COMMIT after the tail are skipped, the checkpoints after it replayed. */
Test(recover, checkpoint_started_before_tail, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		struct tck a;

		t_open(&t, SECTORS[s], LOG4M, 16 << 10);
		t_ckpt(&t, 1, 10);
		t_begin(&t, &a);
		t_seal(&t);
		t.tail = t.head;
		t_item(&t, &a, 30000); /* continues across records */
		t_commit(&t, &a);
		t_ckpt(&t, 2, 10);
		t_seal(&t);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, 3, 3);
		cr_assert_eq(rep.dropped, 0);
		cr_assert_eq(rep.tail_lsn, t_lsn(&t, t.tail));
		t_close(&t);
	}
}

Test(recover, commit_mismatch, .timeout = TO)
{
	for (int k = 0; k < 2; k++) {
		struct jrnl_report rep;
		struct tlog t;
		struct tck c;

		t_open(&t, 4096, LOG4M, 32 << 10);
		t_ckpt(&t, 1, 10);
		t_begin(&t, &c);
		t_item(&t, &c, 100);
		t_item(&t, &c, 100);
		if (k)
			c.crc ^= 1;
		else
			c.n = 3;
		t_commit(&t, &c);
		t_seal(&t);
		cr_assert_eq(t_recover(&t, false, &rep, &G), k ? DELOG_ECHECKSUM : DELOG_ECORRUPT,
			     "%s", rep.corrupt_what);
		want_seqs(&G, 1, 1);
		t_close(&t);
	}
}

static void t_unmount(struct tlog *t)
{
	struct jrnl_unmount u = { .magic = JRNL_UNMOUNT_MAGIC };

	if (t->used)
		t_seal(t);
	t_put(t, 0x1, JRNL_T_UNMOUNT, JRNL_OP_UNMOUNT, &u, sizeof(u));
	t_seal(t);
}

Test(recover, unmount_is_clean, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int moved = 0; moved < 2; moved++) {
			struct jrnl_report rep;
			struct tlog t;

			t_open(&t, SECTORS[s], LOG4M, 32 << 10);
			for (int i = 0; i < 4; i++)
				t_ckpt(&t, 2, 200);
			t_seal(&t);
			if (moved)
				t.tail = t.head; /* everything written back at unmount */
			t_unmount(&t);
			cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
			cr_assert(rep.clean);
			cr_assert_eq(rep.head_lsn, t_lsn(&t, t.head));
			if (moved)
				cr_assert_eq(G.n, 0);
			else
				want_seqs(&G, 1, 4);
			/* a session after the unmount makes the log dirty again */
			t_ckpt(&t, 1, 5);
			t_seal(&t);
			cr_assert_eq(t_recover(&t, false, &rep, &G), 0);
			cr_assert(!rep.clean);
			want_seqs(&G, moved ? 5 : 1, 5);
			t_close(&t);
		}
	}
}

Test(recover, idempotent, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report r1, r2;
		static struct got g1;
		struct tlog t;
		struct trec last;
		struct tck c;

		t_open(&t, SECTORS[s], LOG4M, 16 << 10);
		for (int i = 0; i < 30; i++)
			t_ckpt(&t, 3, 900);
		t_begin(&t, &c);
		t_item(&t, &c, 20000);
		t_seal(&t);
		last = t.recs[t.nrecs - 1];
		t_unwrite(&t, last.a + 1, 1);

		/* read-only twice: identical */
		cr_assert_eq(t_recover(&t, true, &r1, &g1), 0, "%s", r1.corrupt_what);
		cr_assert_eq(t_recover(&t, true, &r2, &G), 0);
		same_outcome(&r1, &r2);
		cr_assert_eq(r1.torn_bytes, r2.torn_bytes);
		cr_assert_eq(r1.bytes_read, r2.bytes_read);
		cr_assert_eq(g1.n, G.n);
		cr_assert_eq(memcmp(g1.seq, G.seq, sizeof(G.seq)), 0);
		cr_assert_eq(r1.dropped, 1);
		cr_assert_gt(r1.torn_bytes, 0);

		/* stamping, then again: the same checkpoints, no torn bytes left */
		cr_assert_eq(t_recover(&t, false, &r1, &g1), 0);
		cr_assert_eq(t_recover(&t, false, &r2, &G), 0);
		same_outcome(&r1, &r2);
		cr_assert_eq(g1.n, G.n);
		cr_assert_eq(memcmp(g1.seq, G.seq, sizeof(G.seq)), 0);
		cr_assert_eq(r2.torn_bytes, 0);
		t_close(&t);
	}
}

/*
 * count_stamp: a read-only run counts, in stamp_needed, exactly the bytes a writing run
 * then stamps, and writes nothing itself; after the stamping there is nothing left to
 * count.
 */
Test(recover, count_stamp_is_what_stamping_writes, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_recover_opts o = { .read_only = true, .count_stamp = true };
		struct iol_counters c0, c1;
		struct jrnl_report r1, r2;
		struct tlog t;
		struct trec last;
		struct tck c;

		t_open(&t, SECTORS[s], LOG4M, 16 << 10);
		for (int i = 0; i < 30; i++)
			t_ckpt(&t, 3, 900);
		t_begin(&t, &c);
		t_item(&t, &c, 20000);
		t_seal(&t);
		last = t.recs[t.nrecs - 1];
		t_unwrite(&t, last.a + 1, 1); /* a torn write at the head, to be stamped */

		iol_dev_counters(t.dev, &c0);
		cr_assert_eq(jrnl_recover(t.dev, &t.g, &o, &r1), 0, "%s", r1.corrupt_what);
		iol_dev_counters(t.dev, &c1);
		cr_assert_eq(c1.writes, c0.writes, "a read-only run wrote");
		cr_assert_eq(c1.flushes, c0.flushes, "a read-only run flushed");
		cr_assert_gt(r1.torn_bytes, 0);
		cr_assert_gt(r1.stamp_needed, 0);
		cr_assert_eq(r1.stamped_bytes, 0);

		cr_assert_eq(t_recover(&t, false, &r2, &G), 0, "%s", r2.corrupt_what);
		cr_assert_eq(r2.stamped_bytes, r1.stamp_needed);
		cr_assert_eq(r2.stamp_needed, 0, "only a read-only run counts");
		cr_assert_eq(jrnl_recover(t.dev, &t.g, &o, &r1), 0, "%s", r1.corrupt_what);
		cr_assert_eq(r1.stamp_needed, 0, "stamped, and still %llu bytes to stamp",
			     (unsigned long long)r1.stamp_needed);
		t_close(&t);
	}
}

/*
 * After checkpoints 1-5 ending at @r6: write R7 (checkpoint 7, five sectors) @gap sectors
 * later, as a record that completed while every record from R6 on was in flight (durable
 * point R6), and recover: checkpoints 1-5, the head at R6, R7's sectors and the gap torn.
 */
static void t_stale_record(struct tlog *t, uint64_t r6, uint64_t gap, bool ro,
			   struct jrnl_report *rep)
{
	t->head = r6 + gap;
	t->prev_lsn = t_lsn(t, r6);
	t->durable = (int64_t)r6;
	t->next_seq = 7;
	t_ckpt_sized(t, 5);
	t->durable = -1;
	cr_assert_eq(t_recover(t, ro, rep, &G), 0, "%s", rep->corrupt_what);
	want_seqs(&G, 1, 5);
	cr_assert_eq(rep->head_lsn, t_lsn(t, r6));
	cr_assert_eq(rep->torn_bytes, (gap + 5) * t->S);
}

/*
 * A stale record past the head: R7 reached the disk, R6 before it never did, so the
 * head is R6's position.  The next session then writes a record R6' of R6's size there,
 * whose end is exactly R7's start and whose LSN is R6's: without the stamping, R7
 * (cycle, position and prev link all fitting) would come back after the next crash.
 */
Test(recover, stamping_buries_stale_records, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int ro = 0; ro < 2; ro++) {
			struct jrnl_report rep;
			struct tlog t;
			uint64_t r6, k = 6, r5_lsn;

			t_open(&t, SECTORS[s], LOG4M, 32 << 10);
			for (int i = 0; i < 5; i++)
				t_ckpt_sized(&t, 4);
			r6 = t.head;
			r5_lsn = t.prev_lsn;
			t_stale_record(&t, r6, k, ro, &rep);
			cr_assert_eq(rep.stamped_bytes > 0, !ro);

			/* the next session writes R6' and crashes */
			t.head = r6;
			t.prev_lsn = r5_lsn;
			t.next_seq = 6;
			t_ckpt_sized(&t, k);
			cr_assert_eq(t_recover(&t, true, &rep, &G), 0, "%s", rep.corrupt_what);
			if (ro) {
				want_seqs(&G, 1, 7); /* the stale record came back */
			} else {
				want_seqs(&G, 1, 6);
				cr_assert_eq(rep.head_lsn, t_lsn(&t, r6 + k));
			}
			t_close(&t);
		}
	}
}

/*
 * A log whose superblock names a window larger than the legacy 2 MiB (JRNL_INCOMPAT_WINDOW):
 * a record that completed 4 MiB past a torn one, inside that window, is stamped like one
 * just past the head.  A recovery that stamped only the legacy window would leave it to
 * come back after the next session writes up to it and crashes.
 */
Test(recover, stamping_covers_a_named_window, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		uint64_t r6, r7, far = (4ull << 20) / SECTORS[s];
		uint32_t *w;

		t_open_full(&t, SECTORS[s], 16ull << 20, 32 << 10, IOL_SIM_LAT_NONE, 6ull << 20);
		cr_assert_eq(t.g.window_sectors, (6ull << 20) / t.S);
		for (int i = 0; i < 5; i++)
			t_ckpt_sized(&t, 4);
		r6 = t.head;
		r7 = r6 + far;
		t_stale_record(&t, r6, far, false, &rep);
		w = iol_buf_alloc(t.dev, t.S);
		cr_assert(w);
		for (uint64_t a = r7; a < r7 + 5; a++) {
			t_read(&t, a, w, 1);
			cr_assert_eq(w[0], lap_cycle(a / t.N - 1),
				     "%u-byte sector %llu not stamped", t.S,
				     (unsigned long long)(a - r6));
		}
		free(w);
		t_close(&t);
	}
}

/*
 * A writer that leaves much of the log unflushed (durable_lsn far behind): damage far
 * from the head, beyond any in-flight window, is still a torn write when it lies after
 * the durable point, and the tail comes from the last good record before it.
 */
Test(recover, torn_far_behind_lagging_durable, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int lag = 0; lag < 2; lag++) {
			struct jrnl_report rep;
			struct tlog t;
			struct trec r5;

			t_open(&t, SECTORS[s], 16ull << 20, 256 << 10);
			for (int i = 0; i < 20; i++) {
				if (lag && i == 2)
					t.durable = (int64_t)t.head;
				if (i == 8)
					t.tail = t.recs[2].a;
				t_ckpt(&t, 1, 200000);
				t_seal(&t);
			}
			r5 = t.recs[4];
			t_poke(&t, r5.a + 3, 64, 0x10);
			if (lag) {
				cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s",
					     rep.corrupt_what);
				want_seqs(&G, 1, 4);
				cr_assert_eq(rep.head_lsn, t_lsn(&t, r5.a));
				cr_assert_eq(rep.tail_lsn, jrnl_lsn(1, 0));
				cr_assert_eq(rep.last_lsn, t_lsn(&t, t.recs[3].a));
				cr_assert_eq(rep.torn_bytes, (t.head - r5.a) * t.S);
				/* and the same after the stamping */
				cr_assert_eq(t_recover(&t, false, &rep, &G), 0);
				want_seqs(&G, 1, 4);
				cr_assert_eq(rep.tail_lsn, jrnl_lsn(1, 0));
			} else {
				cr_assert_eq(t_recover(&t, false, &rep, &G), DELOG_ECHECKSUM);
				cr_assert_eq(rep.corrupt_lsn, t_lsn(&t, r5.a));
				want_seqs(&G, 3, 4);
			}
			t_close(&t);
		}
	}
}

/* Garbage in sector 0 of a wrapped log (a torn write of the record straddling the end):
 * the end sectors disagree, the interior decides, the head is that record. */
Test(recover, garbage_at_sector_zero, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		struct jrnl_report rep;
		struct tlog t;
		unsigned char *junk;
		uint64_t first, wr, maxk;

		t_open(&t, SECTORS[s], LOG4M, 32 << 10);
		maxk = t.H + t.Pmax;
		t_pad_to(&t, 2 * t.N - maxk / 2 - 10);
		t.tail = t.head;
		first = t_ckpt_sized(&t, 5);
		t_ckpt_sized(&t, 5);
		wr = t.head;
		t_ckpt_sized(&t, maxk); /* straddles the end */
		junk = iol_buf_alloc(t.dev, t.S);
		for (uint32_t i = 0; i < t.S; i++)
			junk[i] = (unsigned char)(i * 131 + 17);
		t_write(&t, 2 * t.N, junk, 1);
		free(junk);
		cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
		want_seqs(&G, first, first + 1);
		cr_assert_eq(rep.head_lsn, t_lsn(&t, wr));
		t_close(&t);
	}
}

/*
 * A crash part way through the stamping leaves some sectors past the head stamped and
 * others as they were: every such mix recovers to the same head and checkpoints.
 */
Test(recover, crash_during_stamping, .timeout = TO)
{
	for (int s = 0; s < 2; s++) {
		for (int mix = 0; mix < 5; mix++) {
			struct jrnl_report rep, ref;
			struct tlog t;
			struct trec r5, r6;
			uint64_t from, to;

			t_open(&t, SECTORS[s], LOG4M, 32 << 10);
			for (int i = 0; i < 4; i++) {
				t_ckpt(&t, 1, 2000);
				t_seal(&t);
			}
			t.durable = (int64_t)t.head;
			t_ckpt(&t, 1, 2000);
			t_seal(&t);
			t_ckpt(&t, 1, 2000);
			t_seal(&t);
			r5 = t.recs[4];
			r6 = t.recs[5];
			t_unwrite(&t, r5.a + 1, 1); /* R5 torn, R6 complete */
			cr_assert_eq(t_recover(&t, true, &ref, &G), 0, "%s", ref.corrupt_what);
			want_seqs(&G, 1, 4);
			from = r5.a;
			to = r6.a + r6.n;
			/* what a partial stamping may have left */
			for (uint64_t a = from; a < to; a++) {
				bool stamp = mix == 0 ? a % 2 == 0 :
					     mix == 1 ? a == r6.a :
					     mix == 2 ? a + 1 == to :
					     mix == 3 ? a >= r6.a :
							a < r6.a;

				if (stamp)
					t_unwrite(&t, a, 1);
			}
			cr_assert_eq(t_recover(&t, true, &rep, &G), 0, "mix %d: %s", mix,
				     rep.corrupt_what);
			want_seqs(&G, 1, 4);
			same_outcome(&ref, &rep);
			t_close(&t);
		}
	}
}

/* Nothing but a torn first write: empty, with torn bytes. */
Test(recover, only_torn_first_write, .timeout = TO)
{
	struct jrnl_report rep;
	struct tlog t;

	t_open(&t, 512, LOG4M, 32 << 10);
	t_ckpt(&t, 2, 3000);
	t_seal(&t);
	t_unwrite(&t, t.N + 3, 1);
	cr_assert_eq(t_recover(&t, false, &rep, &G), 0, "%s", rep.corrupt_what);
	cr_assert(rep.empty);
	cr_assert_eq(rep.head_lsn, jrnl_lsn(1, 0));
	cr_assert_gt(rep.torn_bytes, 0);
	cr_assert_eq(G.n, 0);
	cr_assert_eq(t_recover(&t, false, &rep, &G), 0);
	cr_assert(rep.empty);
	cr_assert_eq(rep.torn_bytes, 0);
	t_close(&t);
}

/* A 72 MiB log read back in 4 MiB chained reads, each split at iol_max_segs, with at
 * least two outstanding while parsing. */
Test(recover, chained_reads, .timeout = TO)
{
	struct jrnl_report rep;
	struct jrnl_recover_opts o = { .replay = collect, .priv = &G };
	struct tlog t;
	uint64_t per_req;
	int n = 0;

	t_open_full(&t, 4096, 72ull << 20, 256 << 10, IOL_SIM_LAT_NVME, 0);
	iol_sim_trace_enable(t.dev, false);
	while ((t.head + 64 - t.N) * t.S < (70ull << 20)) {
		t_ckpt(&t, 3, 60000);
		t_seal(&t);
		n++;
	}
	memset(&G, 0, sizeof(G));
	cr_assert_eq(jrnl_recover(t.dev, &t.g, &o, &rep), 0, "%s", rep.corrupt_what);
	want_seqs(&G, 1, (uint64_t)n);
	per_req = (uint64_t)iol_max_segs(t.dev, IOL_MAX_SEGS_DEFAULT) * IOL_SEG_BYTES;
	cr_assert_geq(rep.bytes_read, 64ull << 20);
	cr_assert_gt(rep.read_reqs, rep.bytes_read / per_req - 1, "%llu requests for %llu bytes",
		     (unsigned long long)rep.read_reqs, (unsigned long long)rep.bytes_read);
	cr_assert_geq(rep.max_reads_in_flight, 2);
	cr_assert_leq(rep.max_reads_in_flight, 2);

	/* 1 MiB chunks, three in flight: never more than asked for */
	o.read_chunk = 1 << 20;
	o.reads_in_flight = 3;
	o.read_only = true;
	memset(&G, 0, sizeof(G));
	cr_assert_eq(jrnl_recover(t.dev, &t.g, &o, &rep), 0, "%s", rep.corrupt_what);
	want_seqs(&G, 1, (uint64_t)n);
	cr_assert_geq(rep.read_reqs, rep.bytes_read >> 20);
	cr_assert_eq(rep.max_reads_in_flight, 3);
	t_close(&t);
}

/*
 * Read errors anywhere in recovery (R14).  A request that fails once is read again a
 * sector at a time, so a transient error costs nothing: every checkpoint comes back.  A
 * device that fails every read from some point on leaves sectors unknown: recovery
 * refuses with -EIO and the offset, never takes them for an empty or shorter log.
 */
Test(recover, read_errors, .timeout = TO)
{
	int failed = 0;

	for (int persistent = 0; persistent < 2; persistent++) {
		for (uint64_t nth = 1; nth <= 80; nth += 3) {
			struct iol_sim_fault f = { .op = IOL_OP_READ,
						   .nth = nth,
						   .kind = IOL_SIM_FAULT_EIO,
						   .persistent = persistent };
			struct jrnl_report rep;
			struct tlog t;
			int err;

			t_open(&t, 4096, LOG4M, 32 << 10);
			for (int i = 0; i < 40; i++) {
				t_ckpt(&t, 2, 3000);
				t_seal(&t);
			}
			cr_assert_eq(iol_sim_fault_add(t.dev, &f), 0);
			err = t_recover(&t, true, &rep, &G);
			if (!persistent || err == 0) {
				cr_assert_eq(err, 0, "nth %llu: %d %s", (unsigned long long)nth,
					     err, rep.corrupt_what);
				cr_assert_eq(G.n, 40,
					     "persistent %d nth %llu: %zu replayed, report %llu checkpoints, empty %d",
					     persistent, (unsigned long long)nth, G.n,
					     (unsigned long long)rep.checkpoints, rep.empty);
				want_seqs(&G, 1, 40);
			} else {
				cr_assert_eq(err, -EIO, "nth %llu: %d %s", (unsigned long long)nth,
					     err, rep.corrupt_what);
				cr_assert_gt(rep.unreadable_sectors, 0);
				failed++;
			}
			t_close(&t);
		}
	}
	cr_assert_gt(failed, 3);
}

/* One unreadable sector behind the head is damage, named with its offset (-EIO), and
 * salvage keeps the checkpoints before it; in the window it is a torn write (R14). */
Test(recover, unreadable_sector_named, .timeout = TO)
{
	struct jrnl_report rep;
	struct tlog t;
	uint64_t a;
	int err;

	t_open(&t, 4096, LOG4M, 32 << 10);
	for (int i = 0; i < 40; i++) {
		t_ckpt(&t, 2, 3000);
		t_seal(&t);
	}
	a = t.recs[20].a + 1;
	cr_assert_eq(iol_sim_set_unreadable(t.dev, t_off(&t, a) / t.S, 1, true), 0);
	err = t_recover(&t, true, &rep, &G);
	cr_assert_eq(err, -EIO, "%d %s", err, rep.corrupt_what);
	cr_assert_eq(rep.corrupt_offset, t_off(&t, a));
	cr_assert_eq(rep.unreadable_sectors, 1);
	cr_assert_eq(rep.unreadable_offset, t_off(&t, a));
	cr_assert(strstr(rep.corrupt_what, "cannot be read"), "%s", rep.corrupt_what);
	cr_assert_eq(t_recover_opts(&t, 0, true, &rep, &G), 0, "%s", rep.corrupt_what);
	cr_assert(rep.salvaged);
	cr_assert_gt(G.n, 0);
	t_close(&t);
}

/* Damage of every kind at random places: an error or a prefix, never a crash, and never
 * a replayed checkpoint that was not written. */
Test(recover, random_damage, .timeout = TO)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int it = 0; it < 60; it++) {
		struct jrnl_report rep;
		struct tlog t;
		int err, nd;

		t_open(&t, it % 2 ? 512 : 4096, LOG4M, 16 << 10);
		for (int i = 0; i < 25; i++)
			t_ckpt(&t, 1 + i % 3, 1000 + 3000 * (i % 4));
		t_seal(&t);
		nd = 1 + it % 4;
		for (int d = 0; d < nd; d++) {
			uint64_t a;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			a = t.N + x % (t.head - t.N);
			switch (x >> 60 & 3) {
			case 0:
				t_unwrite(&t, a, 1 + (x >> 40) % 8);
				break;
			case 1:
				t_poke(&t, a, (uint32_t)((x >> 20) % t.S),
				       (uint8_t)(1 + (x >> 8) % 255));
				break;
			default:
				t_poke(&t, a, (uint32_t)((x >> 20) % 64),
				       (uint8_t)(1 + (x >> 8) % 255));
				break;
			}
		}
		err = t_recover(&t, true, &rep, &G);
		cr_assert(err == 0 || err == DELOG_ECORRUPT || err == DELOG_ECHECKSUM ||
				  err == DELOG_EBADOP || err == DELOG_EORPHAN ||
				  err == DELOG_EFOREIGN || err == DELOG_EVERSION,
			  "iteration %d: %d", it, err);
		cr_assert_eq(err, rep.corruption);
		cr_assert(!G.bad, "iteration %d replayed damaged data", it);
		for (size_t i = 0; i < G.n; i++)
			cr_assert_eq(G.seq[i], i + 1);
		t_close(&t);
	}
}

/* Ops mutated before sealing (so the CRC holds and the parser sees them). */
Test(recover, random_ops_with_valid_crc, .timeout = TO)
{
	uint64_t x = 0x243f6a8885a308d3ull;

	for (int it = 0; it < 150; it++) {
		struct jrnl_report rep;
		struct tlog t;
		int err;

		t_open(&t, it % 2 ? 512 : 4096, LOG4M, 16 << 10);
		for (int i = 0; i < 6; i++) {
			t_ckpt(&t, 2, 500 + 4000 * (i % 3));
			if (i == 3 && t.used) {
				for (int m = 0; m < 3; m++) {
					x ^= x << 13;
					x ^= x >> 7;
					x ^= x << 17;
					t.rec[t.H * t.S + x % t.used] ^= (uint8_t)(1 +
										   (x >> 32) % 255);
				}
			}
		}
		t_seal(&t);
		err = t_recover(&t, true, &rep, &G);
		cr_assert(err == 0 || err == DELOG_ECORRUPT || err == DELOG_ECHECKSUM ||
				  err == DELOG_EBADOP || err == DELOG_EORPHAN,
			  "iteration %d: %d %s", it, err, rep.corrupt_what);
		for (size_t i = 0; i < G.n; i++)
			cr_assert_leq(G.seq[i], 6);
		t_close(&t);
	}
}

/* ---- R11: garbage in the in-flight window is never evidence ---- */

/* A state's outcome, as far as anything after recovery can tell. */
struct outcome {
	int err;
	struct jrnl_report rep;
};

static void w_recover(struct tlog *t, struct outcome *o)
{
	struct jrnl_recover_opts ro = { .read_only = true, .read_chunk = 1u << 20 };

	memset(o, 0, sizeof(*o));
	o->err = jrnl_recover(t->dev, &t->g, &ro, &o->rep);
}

static void w_same(const struct outcome *got, const struct outcome *want, const char *what,
		   uint64_t i, uint64_t j)
{
	cr_assert_eq(got->err, want->err,
		     "%s, window sectors %llu and %llu: error %d (%s), "
		     "with them old %d",
		     what, (unsigned long long)i, (unsigned long long)j, got->err,
		     got->rep.corrupt_what, want->err);
	cr_assert_eq(got->rep.head_lsn, want->rep.head_lsn,
		     "%s, window sectors %llu and %llu: "
		     "head %llx, with them old %llx",
		     what, (unsigned long long)i, (unsigned long long)j,
		     (unsigned long long)got->rep.head_lsn, (unsigned long long)want->rep.head_lsn);
	same_outcome(&got->rep, &want->rep);
}

/* Bytes that are no sector of this log: random, and a cycle word no lap near the head
 * would carry (a random word does so with odds of about 2^-30; this test is exact). */
static void w_garbage(const struct tlog *t, uint64_t a, unsigned char *buf)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	uint32_t c;

	for (uint32_t i = 0; i < t->S; i += 8) {
		x ^= x >> 31;
		x *= 0xbf58476d1ce4e5b9ull;
		x ^= x >> 29;
		memcpy(buf + i, &x, 8);
	}
	memcpy(&c, buf, 4);
	if (c == JRNL_REC_MAGIC || c < 16)
		c |= 0x80000000u;
	memcpy(buf, &c, 4);
}

/* What a torn window sector reads back as (R11, R14): random bytes, one constant byte
 * (a device that returns zeroes or 0xff for an interrupted or unmapped write), the
 * stable bytes of another sector (a remap gone wrong: half of them carry the current
 * lap), or nothing at all (the device fails the read). */
enum wfill {
	WF_RANDOM,
	WF_ZERO,
	WF_ONES,
	WF_COPY,
	WF_EIO,
	WF_N
};
static const char *const wfill_name[WF_N] = { "random", "zeroes", "0xff", "copy", "EIO" };

struct wwin {
	uint64_t P, W; /* the window [P, P + W) */
	unsigned char *old, *cur, *fill[WF_EIO];
};

/* Sector i of the window takes the version v: 0 old, 1 written, 2 + f the fill f. */
static void w_set(struct tlog *t, struct wwin *w, uint64_t i, int v)
{
	const unsigned char *src = v == 0          ? w->old :
				   v == 1          ? w->cur :
				   v == 2 + WF_EIO ? w->old :
						     w->fill[v - 2];

	t_write(t, w->P + i, src + i * t->S, 1);
	if (v == 2 + WF_EIO)
		cr_assert_eq(iol_sim_set_unreadable(t->dev, t_off(t, w->P + i) / t->S, 1, true), 0);
}

/*
 * Build a wrapped 4 MiB log whose durable part ends at P, with records written by the
 * session over the first @fill sectors of the window [P, P + W) and the previous lap in
 * the rest, and keep each window sector's versions.
 */
static void w_build(struct tlog *t, struct wwin *w, uint32_t S, uint64_t P, uint64_t fill,
		    uint64_t log_bytes, uint64_t window)
{
	t_open_full(t, S, log_bytes, 32 << 10, IOL_SIM_LAT_NONE, window);
	w->P = P;
	w->W = t->g.window_sectors;
	while (P - t->head > t->N / 2) { /* laps of checkpoints, the tail following */
		t->tail = t->head;
		t_pad_to(t, t->head + t->N / 4);
	}
	t->tail = t->head;
	t_pad_to(t, P);
	w->old = iol_buf_alloc(t->dev, w->W * S);
	w->cur = iol_buf_alloc(t->dev, w->W * S);
	cr_assert(w->old && w->cur);
	for (int f = 0; f < WF_EIO; f++) {
		w->fill[f] = iol_buf_alloc(t->dev, w->W * S);
		cr_assert(w->fill[f]);
	}
	t_read(t, P, w->old, w->W);
	t->durable = (int64_t)P;
	t_pad_to(t, P + fill);
	t_read(t, P, w->cur, w->W);
	memset(w->fill[WF_ZERO], 0, w->W * S);
	memset(w->fill[WF_ONES], 0xff, w->W * S);
	for (uint64_t i = 0; i < w->W; i++) {
		unsigned char *c = w->fill[WF_COPY] + i * S;

		w_garbage(t, P + i, w->fill[WF_RANDOM] + i * S);
		/* A copy equal to what the sector holds old or new would be no fault: the
		 * first source that differs from both. */
		for (uint64_t j = 0; j < 32; j++) {
			if ((i + j) % 2)
				memcpy(c, w->old + (i + 1 + j) % w->W * S, S);
			else
				t_read(t, P - 1 - (i + j) / 2 % 16, c, 1);
			if (memcmp(c, w->old + i * S, S) && memcmp(c, w->cur + i * S, S))
				break;
			memcpy(c, w->fill[WF_RANDOM] + i * S, S);
		}
	}
}

static void w_free(struct tlog *t, struct wwin *w)
{
	free(w->old);
	free(w->cur);
	for (int f = 0; f < WF_EIO; f++)
		free(w->fill[f]);
	t_close(t);
}

/* Is window sector i at one of the positions the head search probes first? */
static bool w_probe(const struct tlog *t, const struct wwin *w, uint64_t i)
{
	uint64_t x = (w->P + i) % t->N;

	return x == t->N - 1 || (x * 8) % t->N == 0 || x == (x * 8 / t->N) * t->N / 8;
}

/* The sanitizer builds (several times slower) sweep every W_SWEEP_STRIDE-th sector and
 * pair; the plain build sweeps them all (tests/journal/CMakeLists.txt). */
#ifndef W_SWEEP_STRIDE
#define W_SWEEP_STRIDE 1
#endif

/* One window placement, for each fill: sectors torn alone, pairs of a probed sector with
 * a sector of the window, and the whole window; each state against the same state with
 * those sectors old. */
static void w_sweep(uint32_t S, const char *what, uint64_t P, uint64_t fill)
{
	static struct outcome base, old1[4096], o, o2;
	struct wwin w;
	struct tlog t;
	char name[96];

	w_build(&t, &w, S, P, fill, LOG4M, 0);
	w_recover(&t, &base);
	cr_assert_eq(base.err, 0, "%s: %s", what, base.rep.corrupt_what);
	cr_assert_geq(base.rep.head_lsn, t_lsn(&t, w.P));
	for (uint64_t i = 0; i < w.W; i++) {
		if (i % W_SWEEP_STRIDE && !w_probe(&t, &w, i))
			continue;
		w_set(&t, &w, i, 0);
		w_recover(&t, &old1[i]);
		w_set(&t, &w, i, 1);
	}
	for (int f = 0; f < WF_N; f++) {
		/* Random bytes: every sector alone, pairs with every sector (every 8th for
		 * 512-byte sectors); the other fills, which this argument never relied on the
		 * bytes of, a sample: 64 sectors alone and 16 partners per probe, unless
		 * DELOG_TEST_WINDOW_ALL is set (the long version, TESTING.md). */
		bool all = f == WF_RANDOM || getenv("DELOG_TEST_WINDOW_ALL");
		uint64_t one = (all ? 1 : w.W / 64) * W_SWEEP_STRIDE;
		uint64_t stride = (all ? (S == 4096 ? 1 : 8) : w.W / 16) * W_SWEEP_STRIDE;

		snprintf(name, sizeof(name), "%s, %s", what, wfill_name[f]);
		for (uint64_t i = 0; i < w.W; i++) {
			if (i % one && !w_probe(&t, &w, i))
				continue;
			w_set(&t, &w, i, 2 + f);
			w_recover(&t, &o);
			w_same(&o, &old1[i], name, i, i);
			w_set(&t, &w, i, 1);
		}
		for (uint64_t i = 0; i < w.W; i++) {
			if (!w_probe(&t, &w, i))
				continue;
			for (uint64_t j = 0; j < w.W; j++) {
				if (j == i || (j % stride && !w_probe(&t, &w, j)) ||
				    (j < i && w_probe(&t, &w, j)))
					continue;
				w_set(&t, &w, i, 0);
				w_set(&t, &w, j, 0);
				w_recover(&t, &o2);
				w_set(&t, &w, i, 2 + f);
				w_set(&t, &w, j, 2 + f);
				w_recover(&t, &o);
				w_same(&o, &o2, name, i, j);
				w_set(&t, &w, i, 1);
				w_set(&t, &w, j, 1);
			}
		}
		/* The whole window, and the whole window but what the session wrote. */
		for (int part = 0; part < 2; part++) {
			for (uint64_t i = 0; i < w.W; i++)
				if (!part || i >= fill)
					w_set(&t, &w, i, 0);
			w_recover(&t, &o2);
			for (uint64_t i = 0; i < w.W; i++)
				if (!part || i >= fill)
					w_set(&t, &w, i, 2 + f);
			w_recover(&t, &o);
			w_same(&o, &o2, name, part ? fill : 0, w.W - 1);
			for (uint64_t i = 0; i < w.W; i++)
				w_set(&t, &w, i, 1);
		}
	}
	w_free(&t, &w);
}

/*
 * R11: every sector of the in-flight window garbled alone, and in pairs with the
 * sectors the head search probes, recovers exactly what the same state with those
 * sectors never written (old) recovers: the same error or none, head, tail, records and
 * checkpoints.  Windows across the physical end, over the probes, ending at sector 0
 * and starting at the last sector, with 4096- and 512-byte sectors.
 */
#define W_TEST(name, sector, P, fill)                                                              \
	Test(recover, window_garbage_##name##_##sector, .timeout = 3600)                           \
	{                                                                                          \
		uint64_t N = LOG4M / (sector), W = jrnl_window_legacy(N, (sector));                \
		w_sweep((sector), #name, (P), (fill));                                             \
	}
W_TEST(across_end, 4096, 3 * N - W / 2, W - W / 8)
W_TEST(over_probes, 4096, 3 * N + N / 8 - 1, W / 2)
W_TEST(ending_at_0, 4096, 3 * N - W + 1, W)
W_TEST(starting_at_last, 4096, 3 * N - 1, W / 3)
W_TEST(across_end, 512, 3 * N - W / 2, W - W / 8)
W_TEST(over_probes, 512, 3 * N + N / 8 - 1, W / 2)
W_TEST(ending_at_0, 512, 3 * N - W + 1, W)
W_TEST(starting_at_last, 512, 3 * N - 1, W / 3)

/* The whole window torn with each fill, for windows starting and ending at each probe and
 * one sector either side: what the same window old recovers, or (outside the model:
 * nothing in it is torn) the refusals a torn window never causes. */
static void w_align(uint32_t S, uint64_t log_bytes, uint64_t window, int dmax)
{
	static struct outcome o, o2;
	uint64_t N = log_bytes / S, W = window ? window / S : jrnl_window_legacy(N, S);

	for (unsigned k = 0; k < 9; k++) {
		uint64_t probe = k < 8 ? k * N / 8 : N - 1;

		for (int end = 0; end < 2; end++) {
			for (int d = -dmax; d <= dmax; d++) {
				uint64_t P = 3 * N + probe + (uint64_t)d - (end ? W : 0);
				struct wwin w;
				struct tlog t;
				char name[96];

				w_build(&t, &w, S, P, W / 3, log_bytes, window);
				cr_assert_eq(w.W, W);
				for (int f = 0; f < WF_N; f++) {
					snprintf(name, sizeof(name),
						 "%u-byte, window %s probe %u %+d, %s", S,
						 end ? "ending at" : "starting at", k, d,
						 wfill_name[f]);
					for (uint64_t i = 0; i < w.W; i++)
						w_set(&t, &w, i, 0);
					w_recover(&t, &o2);
					cr_assert_eq(o2.err, 0, "%s: %s", name,
						     o2.rep.corrupt_what);
					for (uint64_t i = 0; i < w.W; i++)
						w_set(&t, &w, i, 2 + f);
					w_recover(&t, &o);
					w_same(&o, &o2, name, 0, w.W - 1);
					for (uint64_t i = 0; i < w.W; i++)
						w_set(&t, &w, i, 1);
				}
				w_free(&t, &w);
			}
		}
	}
}

Test(recover, window_whole_at_probes_4096, .timeout = 3600)
{
	w_align(4096, LOG4M, 0, 1);
}

Test(recover, window_whole_at_probes_512, .timeout = 3600)
{
	w_align(512, LOG4M, 0, 1);
}

/* The same, at the probes themselves, with windows of their own in the superblock
 * (JRNL_INCOMPAT_WINDOW): half of a 6 MiB log, larger than the legacy 2 MiB, which a
 * search that ignored the superblock would miss, and the least window. */
Test(recover, window_whole_at_probes_named_window, .timeout = 3600)
{
	w_align(4096, 6ull << 20, 3ull << 20, 0);
	w_align(4096, LOG4M, JRNL_WINDOW_MIN, 0);
}

/*
 * A small log in its third lap with the head at 0.38 of it, every sector from the head
 * to the physical end reading back as one constant byte or failing to read (beyond the
 * window, so outside the model; a device that zeroes what it did not finish writing
 * shows this): every checkpoint behind the head is recovered, as with those sectors
 * untouched.  Equal bytes in many sectors corroborate nothing (R11).
 */
Test(recover, constant_fill_from_head_to_end, .timeout = TO)
{
	static struct outcome base, o;

	for (int f = WF_ZERO; f < WF_N; f++) {
		if (f == WF_COPY)
			continue;
		uint64_t N = LOG4M / 4096, P = 3 * N + 388;
		struct tlog t;

		t_open(&t, 4096, LOG4M, 32 << 10);
		while (t.head < P - 288) { /* laps of checkpoints, the tail following */
			t.tail = t.head;
			t_pad_to(&t, t.head + N / 4 < P - 288 ? t.head + N / 4 : P - 288);
		}
		t.tail = t.head; /* the newest checkpoints are kept, all in this lap */
		t_pad_to(&t, P);
		w_recover(&t, &base);
		cr_assert_eq(base.err, 0, "%s", base.rep.corrupt_what);
		cr_assert_gt(base.rep.checkpoints, 0);
		for (uint64_t a = P; a < 4 * t.N; a++) {
			unsigned char *buf = iol_buf_alloc(t.dev, t.S);

			cr_assert(buf);
			memset(buf, f == WF_ONES ? 0xff : 0, t.S);
			t_write(&t, a, buf, 1);
			if (f == WF_EIO)
				cr_assert_eq(iol_sim_set_unreadable(t.dev, t_off(&t, a) / t.S, 1,
								    true),
					     0);
			free(buf);
		}
		w_recover(&t, &o);
		w_same(&o, &base, wfill_name[f], 388, t.N - 1);
		cr_assert(!o.rep.empty);
		t_close(&t);
	}
}

/* ---- a follower's pass (R15) ---- */

struct fgot {
	uint64_t seq[GOT_MAX], lsn[GOT_MAX];
	size_t n;
	bool bad;
};

static int fcollect(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *it,
		    size_t n)
{
	struct fgot *f = priv;
	struct got g = { 0 };

	collect(&g, ck, it, n); /* the items' keys and bytes */
	f->bad |= g.bad;
	if (f->n < GOT_MAX) {
		f->seq[f->n] = ck->seq;
		f->lsn[f->n] = ck->commit_lsn;
	}
	f->n++;
	return 0;
}

static int t_follow(struct tlog *t, uint64_t lsn, uint64_t from, struct jrnl_report *rep,
		    struct fgot *f)
{
	struct jrnl_recover_opts o = { .replay = fcollect,
				       .priv = f,
				       .read_only = true,
				       .follow_lsn = lsn,
				       .replay_from = from };

	memset(f, 0, sizeof(*f));
	memset(rep, 0, sizeof(*rep));
	return jrnl_recover(t->dev, &t->g, &o, rep);
}

/* (R15) A follower's run from the record holding checkpoint k's COMMIT hands over exactly
 * k+1.. with their bytes, reading less than a full run once k is well into the log; one
 * whose record the tail has passed starts at the tail, and hands over what a full run
 * does from replay_from on. */
Test(recover, follow_from_a_record, .timeout = TO)
{
	static const uint64_t ks[] = { 1, 2, 5, 7, 30, 45, 59, 60 };
	struct jrnl_report full, rep;
	struct fgot *all = calloc(1, sizeof(*all)), *f = calloc(1, sizeof(*f));
	struct tlog t;

	cr_assert(all && f);
	t_open(&t, 4096, 8ull << 20, 64 << 10);
	/* records of one, two or no commits: group commits, and every fifth checkpoint
	 * across two records (its START before the record of its COMMIT) */
	for (uint32_t i = 0; i < 60; i++) {
		if (i % 5 == 4) {
			struct tck c;

			if (t.used)
				t_seal(&t);
			t_begin(&t, &c);
			t_item(&t, &c, 3000);
			t_seal(&t);
			t_item(&t, &c, 2000);
			t_commit(&t, &c);
			t_seal(&t);
			continue;
		}
		t_ckpt(&t, 1 + i % 3, 2000 + i * 97);
		if (i % 3 != 1)
			t_seal(&t);
	}
	cr_assert_eq(t_follow(&t, 0, 0, &full, all), 0, "%s", full.corrupt_what);
	cr_assert_eq(all->n, 60);
	cr_assert(!all->bad && !full.followed);
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		uint64_t k = ks[j];

		cr_assert_eq(t_follow(&t, all->lsn[k - 1], k + 1, &rep, f), 0, "k %llu: %s",
			     (unsigned long long)k, rep.corrupt_what);
		cr_expect(rep.followed, "k %llu: the pass did not start at the record",
			  (unsigned long long)k);
		cr_assert_eq(f->n, 60 - k, "k %llu: %zu handed over", (unsigned long long)k, f->n);
		for (size_t i = 0; i < f->n; i++)
			cr_assert_eq(f->seq[i], k + 1 + i);
		cr_assert(!f->bad, "k %llu: items differ", (unsigned long long)k);
		if (k >= 30)
			cr_expect_lt(rep.bytes_read, full.bytes_read,
				     "k %llu: read %llu bytes, a full run %llu",
				     (unsigned long long)k, (unsigned long long)rep.bytes_read,
				     (unsigned long long)full.bytes_read);
	}
	/* the tail moves past the records of the first 30 or so checkpoints, and with it
	 * past checkpoint 10's COMMIT record */
	{
		uint64_t lsn10 = all->lsn[9];

		t.tail = t.recs[t.nrecs / 2].a;
		for (uint32_t i = 0; i < 10; i++) {
			t_ckpt(&t, 2, 1500);
			t_seal(&t);
		}
		cr_assert_eq(t_follow(&t, 0, 0, &full, all), 0, "%s", full.corrupt_what);
		cr_assert_gt(all->seq[0], 11);
		cr_assert_eq(all->seq[all->n - 1], 70);
		cr_assert_eq(t_follow(&t, lsn10, 11, &rep, f), 0, "%s", rep.corrupt_what);
		cr_expect(!rep.followed, "a pass started at a record behind the tail");
		cr_assert_eq(f->n, all->n);
		cr_assert_eq(f->seq[0], all->seq[0],
			     "the first handed over: %llu, a full run's %llu",
			     (unsigned long long)f->seq[0], (unsigned long long)all->seq[0]);
		cr_assert(!f->bad);
	}
	free(all);
	free(f);
	t_close(&t);
}
