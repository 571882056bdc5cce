/*
 * fuzz_recover.c - fuzz target for log recovery (jrnl_recover, journal/recover.c) on a
 * real log: a pristine image written by the log writer (journal/log.c), damaged by the
 * input, then recovered twice, read-only.
 *
 * The pristine image (built once per process, pristine_build):
 *   a simulated disk of 4 KiB + 4 MiB, 512-byte sectors (sb.c's MIN_LOG_BYTES is 4 MiB,
 *   so the log cannot be smaller), formatted with a fixed uuid; the writer (2 log
 *   buffers of 16 KiB, so records are small and a 20 KiB item is split across records
 *   with CONTINUE / WAS_CONT / END) writes
 *     seq 1  three small items, FLUSH_COMMIT | FUA_COMMIT, forced
 *     seq 2  a 20000-byte item and a small one, then force + flush
 *     an UNMOUNT record (jrnl_log_unmount) in the middle of the log
 *     seq 3  two items, forced but not flushed (past the durable point: torn territory)
 *     seq 4  START and one item without COMMIT, forced (an incomplete checkpoint)
 *   and closes.  The written records are then located (jrnl_rec_check walking from
 *   sector 0) and each one's header and unpacked op bytes are kept, so the harness can
 *   rewrite a record's ops and seal it again with jrnl_rec_seal.  Only the region
 *   [0, W) of the log (the records plus 32 KiB of zeroes) and the log's last 4 KiB (whose
 *   cycles find_head reads first) are ever patched, so the records recovery verifies and
 *   parses stay few.  The writer's tids start at a random value; normalise_tids renumbers
 *   them and re-seals, so the image, and what an input means, is the same in every run.
 *
 * Speed.  Whatever the damage, jrnl_recover reads about the whole 4 MiB log (the
 * in-flight window before and after the head, the probes past it: recover.c steps 1 and
 * 4) and allocates ~3.5 MiB of buffers per call; under ASan each call then costs ~700
 * page faults (fresh mmap'ed chunks and their shadow).  Measured on 2 busy cores: ~1.6 ms
 * of CPU for an input whose recovery fails early, ~10 ms for one that succeeds (two
 * recoveries); a libFuzzer campaign averages ~200 exec/s per process.  The gcc driver
 * build (glibc malloc reuses the buffers) runs ~600 inputs/s on the same machine.
 *
 * Input: a list of patches, each [kind u8] then
 *   kind % 4 == 0  raw      [off u32][n u8][n%64+1 bytes]: bytes over the log region:
 *                           at off % W, or with off's top bit set at byte off % 4096 of
 *                           the log's last 4 KiB
 *   kind % 4 == 1  ops      [rec u8][off u16][n u8][n%64+1 bytes]: bytes over record
 *                           rec's unpacked op bytes (extending its len if they reach
 *                           past it); the record is re-sealed, so its CRC holds and the
 *                           op parser sees the bytes
 *   kind % 4 == 2  header   [rec u8][field u8][value u64]: one header field of record rec
 *                           (len, num_ops, tail_lsn, durable_lsn, prev_lsn, cycle,
 *                           logbufs / logbsize, hdr_sectors), re-sealed likewise
 *   kind % 4 == 3  copy     [from u16][to u16][n u8]: copy n%16+1 sectors inside the
 *                           region (a record where it does not belong: wrong lap,
 *                           broken prev_lsn chain, duplicated ops)
 *   at most 16 patches.  Re-sealed records are built first (in record order), then the
 *   raw and copy patches are applied over the result in input order.
 *
 * Per input the patched region is written to the device (only the sectors that differ
 * from the pristine image), jrnl_recover runs with read_only and a replay callback that
 * reads every item byte (fz_touch, so ASan checks the views), and afterwards the same
 * sectors are written back from the pristine image.  Checks (abort on failure):
 *   - the return code is 0, a DELOG_E* code jrnl.h documents for recovery, -EINVAL,
 *     -ENOMEM or -EIO; a DELOG_E* code is also the report's corruption, 0 means none;
 *   - the replayed checkpoints come in commit order, carry the item counts and payload
 *     bytes the callback saw, and the report's checkpoints / items / bytes_replayed add
 *     up to them;
 *   - read_only recovery wrote nothing (the device's write counters did not move);
 *   - on success, a second recovery returns 0 with the same head, tail, last record,
 *     durable point, counts and the same replayed bytes (jrnl.h: idempotent).
 * The unpatched image must recover exactly the three checkpoints the writer committed,
 * seq 4 dropped (checked once, when the image is built); an input that changes nothing
 * must give that same report.
 */
#include "format.h"
#include "fuzz.h"
#include "io_sim.h"
#include "jrnl.h"
#include "record.h"

#include <delog.h>
#include <errno.h>
#include <stdbool.h>

#define S 512u
#define LOG_BYTES (4ull << 20)
#define DEV_BYTES (JRNL_LOG_START + LOG_BYTES)
#define LOGBSIZE (16u << 10)
#define SLACK (32u << 10) /* zeroes after the records that patches may reach */
#define END_BYTES 4096u   /* the log's last bytes, also patchable */
#define MAX_RECS 64u
#define MAX_PATCHES 16u

static const uint8_t UUID[16] = { 0x5f, 0x7a, 0x10, 0x3c, 0x9e, 0x21, 0x4b, 0x08,
				  0xa4, 0x6d, 0x33, 0x90, 0x1e, 0xc2, 0x57, 0xbb };

/* What the replay callback saw: a hash of every checkpoint and item byte, and counts. */
struct replay_log {
	uint64_t hash;
	uint64_t ckpts, items, bytes, last_commit;
};

/* A record of the pristine image, as the writer sealed it. */
struct prec {
	uint32_t sector_no; /* log sector of its header */
	uint32_t h, p;
	struct jrnl_rec hdr; /* its header's fixed part */
	unsigned char *ops;  /* LOGBSIZE bytes: its unpacked op bytes, zero after len */
};

static struct {
	bool ready;
	bool verbose; /* DELOG_FUZZ_VERBOSE set: print each recovery */
	struct iol_dev *dev;
	struct jrnl_geom g;
	size_t W;                /* patchable log bytes from sector 0 */
	unsigned char *pristine; /* W + END_BYTES: [0, W) of the log, then its end */
	unsigned char *work;     /* the same, being patched */
	unsigned char *iobuf;    /* O_DIRECT bounce buffer, W + END_BYTES */
	unsigned char *recbuf;   /* a record being re-sealed */
	struct prec recs[MAX_RECS];
	unsigned nrecs;
	struct jrnl_report base; /* recovery of the pristine image */
	struct replay_log base_log;
} P;

static volatile uint64_t sink;

/* ---- the device region: work offsets to device offsets ---- */

static uint64_t dev_off(size_t woff)
{
	return woff < P.W ? JRNL_LOG_START + woff :
			    JRNL_LOG_START + LOG_BYTES - END_BYTES + (woff - P.W);
}

/* Write work bytes [lo, hi) (sector aligned, not crossing W) from @src to the device,
 * with FUA so that it goes straight to the sim's media. */
static void dev_put(const unsigned char *src, size_t lo, size_t hi)
{
	if (lo >= hi)
		return;
	memcpy(P.iobuf, src + lo, hi - lo);
	FZ_CHECK(iol_rw_wait(P.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), dev_off(lo), P.iobuf, hi - lo,
			     NULL) == 0);
}

/* The sector range of each part ([0, W) and the end) where work differs from pristine. */
static void diff_range(size_t base, size_t len, size_t *lo, size_t *hi)
{
	size_t a = len, b = 0;

	for (size_t s = 0; s < len; s += S)
		if (memcmp(P.work + base + s, P.pristine + base + s, S)) {
			if (a == len)
				a = s;
			b = s + S;
		}
	*lo = base + (a == len ? 0 : a);
	*hi = base + (a == len ? 0 : b);
}

/* ---- recovery and what it replayed ---- */

static int replay(void *priv, const struct jrnl_ckpt *c, const struct jrnl_item_view *it, size_t n)
{
	struct replay_log *r = priv;
	uint64_t bytes = 0;

	FZ_CHECK(n == c->nitems);
	FZ_CHECK(c->start_lsn <= c->commit_lsn);
	FZ_CHECK(!r->ckpts || c->commit_lsn >= r->last_commit);
	/* Field by field: the struct has padding, which nothing initialises. */
	r->hash = fz_touch(r->hash, &c->seq, sizeof(c->seq));
	r->hash = fz_touch(r->hash, &c->start_lsn, sizeof(c->start_lsn));
	r->hash = fz_touch(r->hash, &c->commit_lsn, sizeof(c->commit_lsn));
	r->hash = fz_touch(r->hash, &c->nitems, sizeof(c->nitems));
	r->hash = fz_touch(r->hash, &c->payload_bytes, sizeof(c->payload_bytes));
	for (size_t i = 0; i < n; i++) {
		FZ_CHECK(it[i].len == 0 || it[i].data);
		r->hash = fz_touch(r->hash, &it[i].key, sizeof(it[i].key));
		r->hash = fz_touch(r->hash, it[i].data, it[i].len);
		bytes += it[i].len;
	}
	FZ_CHECK(c->payload_bytes == bytes + n * sizeof(struct jrnl_item));
	r->ckpts++;
	r->items += n;
	r->bytes += bytes;
	r->last_commit = c->commit_lsn;
	return 0;
}

static bool rc_documented(int rc)
{
	switch (rc) {
	case 0:
	case DELOG_ECHECKSUM:
	case DELOG_ECORRUPT:
	case DELOG_EFOREIGN:
	case DELOG_EVERSION:
	case DELOG_EBADOP:
	case DELOG_EORPHAN:
	case DELOG_EGEOMETRY:
	case -EINVAL:
	case -ENOMEM:
	case -EIO:
		return true;
	default:
		return false;
	}
}

static int recover(struct jrnl_report *rep, struct replay_log *rl)
{
	struct jrnl_recover_opts o = { .replay = replay,
				       .priv = rl,
				       .read_only = true,
				       .read_chunk = 1u << 20,
				       .reads_in_flight = 2 };
	struct iol_counters c0, c1;
	int rc;

	memset(rl, 0, sizeof(*rl));
	memset(rep, 0, sizeof(*rep));
	iol_dev_counters(P.dev, &c0);
	rc = jrnl_recover(P.dev, &P.g, &o, rep);
	iol_dev_counters(P.dev, &c1);
	if (!rc_documented(rc)) {
		fprintf(stderr, "jrnl_recover returned %d (%s)\n", rc, delog_err_name(rc));
		abort();
	}
	FZ_CHECK(c1.writes == c0.writes && c1.bytes_written == c0.bytes_written);
	if (P.verbose)
		fprintf(stderr,
			"fuzz_recover: rc %d %s, head %#llx tail %#llx, %llu checkpoints, "
			"%llu dropped, torn %llu%s%s\n",
			rc, rc ? delog_err_name(rc) : "", (unsigned long long)rep->head_lsn,
			(unsigned long long)rep->tail_lsn, (unsigned long long)rep->checkpoints,
			(unsigned long long)rep->dropped, (unsigned long long)rep->torn_bytes,
			rep->corruption ? ": " : "", rep->corruption ? rep->corrupt_what : "");
	if (rc <= -9000)
		FZ_CHECK(rep->corruption == rc);
	if (rc == 0)
		FZ_CHECK(rep->corruption == 0);
	if (rc == 0) {
		FZ_CHECK(rep->checkpoints == rl->ckpts && rep->items == rl->items &&
			 rep->bytes_replayed == rl->bytes);
	}
	/* A refused log hands nothing over (recover.c R9). */
	if (rc <= -9000)
		FZ_CHECK(rl->ckpts == 0 && rl->items == 0 && rl->bytes == 0);
	return rc;
}

static void same_report(const struct jrnl_report *a, const struct jrnl_report *b,
			const struct replay_log *ra, const struct replay_log *rb)
{
	FZ_CHECK(a->empty == b->empty && a->clean == b->clean);
	FZ_CHECK(a->head_lsn == b->head_lsn && a->tail_lsn == b->tail_lsn &&
		 a->last_lsn == b->last_lsn && a->durable_lsn == b->durable_lsn);
	FZ_CHECK(a->records == b->records && a->checkpoints == b->checkpoints &&
		 a->items == b->items && a->bytes_replayed == b->bytes_replayed &&
		 a->dropped == b->dropped);
	FZ_CHECK(ra->hash == rb->hash && ra->ckpts == rb->ckpts);
}

/* ---- the pristine image ---- */

static void fill(unsigned char *d, uint64_t seq, uint64_t key, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		d[i] = (unsigned char)(seq * 31 + key * 7 + i * 13);
}

static void tx(struct jrnl_log *log, uint64_t seq, unsigned flags, unsigned n, const uint32_t *lens,
	       bool commit)
{
	static unsigned char d[20000];
	struct jrnl_wtx t;

	FZ_CHECK(jrnl_tx_start(log, seq, flags, &t) == 0);
	for (unsigned i = 0; i < n; i++) {
		FZ_CHECK(lens[i] <= sizeof(d));
		fill(d, seq, i + 1, lens[i]);
		FZ_CHECK(jrnl_tx_item(&t, i + 1, d, lens[i]) == 0);
	}
	if (commit)
		FZ_CHECK(jrnl_tx_commit(&t, NULL, NULL) == 0);
}

/* The writer starts its tids at a random value (log.c, random_tid): renumber them from
 * TID0, in the same order, and seal the records again, so the pristine image (and so
 * every input's meaning) is the same in every process.  No CRC but the record's covers a
 * tid. */
#define TID0 0x1000u
static void normalise_tids(void)
{
	unsigned char *buf;
	uint32_t base = 0;
	bool have = false;

	buf = iol_buf_alloc(P.dev, 2 * LOGBSIZE);
	FZ_CHECK(buf);
	for (unsigned i = 0; i < P.nrecs; i++) {
		struct prec *r = &P.recs[i];
		struct jrnl_rec_fill f = {
			.cycle = r->hdr.cycle,
			.sector_no = r->sector_no,
			.log_sectors = P.g.log_sectors,
			.tail_lsn = r->hdr.tail_lsn,
			.durable_lsn = r->hdr.durable_lsn,
			.prev_lsn = r->hdr.prev_lsn,
			.len = r->hdr.len,
			.num_ops = r->hdr.num_ops,
			.hdr_sectors = r->h,
			.logbufs = r->hdr.logbufs,
			.logbsize = r->hdr.logbsize,
			.uuid = UUID,
		};
		size_t size;

		for (size_t off = 0; off + sizeof(struct jrnl_op) <= r->hdr.len;) {
			struct jrnl_op op;

			memcpy(&op, r->ops + off, sizeof(op));
			if (!have) {
				base = op.tid;
				have = true;
			}
			op.tid = op.tid - base + TID0;
			memcpy(r->ops + off, &op, sizeof(op));
			off += sizeof(op) + ((op.len + 7u) & ~7u);
		}
		memcpy(buf + (size_t)r->h * S, r->ops, r->hdr.len);
		size = jrnl_rec_seal(buf, S, &f);
		FZ_CHECK(size == (size_t)(r->h + r->p) * S);
		memcpy(&r->hdr, buf, sizeof(r->hdr));
		FZ_CHECK(iol_rw_wait(P.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA),
				     JRNL_LOG_START + (uint64_t)r->sector_no * S, buf, size,
				     NULL) == 0);
	}
	free(buf);
}

static void pristine_build(void)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = DEV_BYTES,
				   .sector = S,
				   .latency = IOL_SIM_LAT_NONE,
				   .seed = 1,
				   .in_order = true };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct jrnl_format_opts fo = { .sector = S, .log_size = LOG_BYTES, .uuid = UUID };
	struct jrnl_log_opts lo = { .logbufs = 2, .logbsize = LOGBSIZE };
	static const uint32_t l1[] = { 40, 0, 300 }, l2[] = { 20000, 64 }, l3[] = { 500, 7 },
			      l4[] = { 100 };
	struct replay_log *rl = &P.base_log;
	struct jrnl_log *log;
	struct iol_req flush;
	unsigned char *rd;
	uint32_t sec = 0;

	P.verbose = getenv("DELOG_FUZZ_VERBOSE") != NULL;
	FZ_CHECK(iol_dev_open(NULL, &o, &P.dev) == 0);
	iol_sim_trace_enable(P.dev, false);
	FZ_CHECK(jrnl_format(P.dev, &fo, &P.g) == 0);
	FZ_CHECK(jrnl_log_open(P.dev, &P.g, NULL, &lo, &log) == 0);
	tx(log, 1, JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT, 3, l1, true);
	/* Forced at once, so that record 0's FUA completion (which moves durable_lsn) comes
	 * before the next record is sealed: the image is the same in every run. */
	FZ_CHECK(jrnl_log_force(log) == 0);
	tx(log, 2, 0, 2, l2, true);
	FZ_CHECK(jrnl_log_force(log) == 0);
	FZ_CHECK(jrnl_log_flush(log) == 0);
	FZ_CHECK(jrnl_log_unmount(log) == 0);
	tx(log, 3, 0, 2, l3, true);
	FZ_CHECK(jrnl_log_force(log) == 0);
	tx(log, 4, 0, 1, l4, false);
	FZ_CHECK(jrnl_log_force(log) == 0);
	FZ_CHECK(jrnl_log_close(log) == 0);
	/* Make everything durable: the sim's volatile cache then stays empty (patches are
	 * written with FUA), and every read is a plain copy from its media. */
	FZ_CHECK(iol_req_init(&flush, P.dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)) == 0);
	FZ_CHECK(iol_submit_wait(&flush) == 0);

	/* Locate the records: sealed back to back from sector 0, zeroes after. */
	rd = iol_buf_alloc(P.dev, 2 * LOGBSIZE);
	FZ_CHECK(rd);
	for (;;) {
		const struct jrnl_rec *hdr = NULL;
		struct prec *r;

		FZ_CHECK(iol_rw_wait(P.dev, IOL_OPF(IOL_OP_READ, 0),
				     JRNL_LOG_START + (uint64_t)sec * S, rd, 2 * LOGBSIZE,
				     NULL) == 0);
		if (jrnl_rec_check(rd, 2 * LOGBSIZE, S, P.g.log_sectors, sec, UUID, &hdr) !=
		    JRNL_REC_OK)
			break;
		FZ_CHECK(P.nrecs < MAX_RECS);
		r = &P.recs[P.nrecs++];
		r->sector_no = sec;
		r->h = hdr->hdr_sectors;
		r->p = hdr->payload_sectors;
		memcpy(&r->hdr, hdr, sizeof(r->hdr));
		jrnl_rec_unpack(rd, S);
		r->ops = calloc(1, LOGBSIZE);
		FZ_CHECK(r->ops && r->hdr.len <= LOGBSIZE);
		memcpy(r->ops, rd + (size_t)r->h * S, r->hdr.len);
		sec += r->h + r->p;
	}
	free(rd);
	FZ_CHECK(P.nrecs >= 4);
	normalise_tids();
	P.W = (size_t)sec * S + SLACK;
	P.pristine = malloc(P.W + END_BYTES);
	P.work = malloc(P.W + END_BYTES);
	P.iobuf = iol_buf_alloc(P.dev, P.W + END_BYTES);
	P.recbuf = iol_buf_alloc(P.dev, 2 * LOGBSIZE);
	FZ_CHECK(P.pristine && P.work && P.iobuf && P.recbuf);
	FZ_CHECK(iol_rw_wait(P.dev, IOL_OPF(IOL_OP_READ, 0), JRNL_LOG_START, P.iobuf, P.W, NULL) ==
		 0);
	memcpy(P.pristine, P.iobuf, P.W);
	FZ_CHECK(iol_rw_wait(P.dev, IOL_OPF(IOL_OP_READ, 0), dev_off(P.W), P.iobuf, END_BYTES,
			     NULL) == 0);
	memcpy(P.pristine + P.W, P.iobuf, END_BYTES);

	/* The unpatched log: the three committed checkpoints, seq 4 dropped. */
	FZ_CHECK(recover(&P.base, rl) == 0);
	FZ_CHECK(rl->ckpts == 3 && P.base.dropped == 1 && !P.base.clean && !P.base.empty);
	if (P.verbose) {
		uint64_t h = fz_touch(0, P.pristine, P.W + END_BYTES);

		fprintf(stderr, "fuzz_recover: image hash %016llx\n", (unsigned long long)h);
	}
	if (P.verbose)
		fprintf(stderr,
			"fuzz_recover: %u records in %u sectors, head %#llx tail %#llx, "
			"%llu checkpoints, %llu dropped, %llu bytes read\n",
			P.nrecs, sec, (unsigned long long)P.base.head_lsn,
			(unsigned long long)P.base.tail_lsn, (unsigned long long)rl->ckpts,
			(unsigned long long)P.base.dropped, (unsigned long long)P.base.bytes_read);
	P.ready = true;
}

/* ---- applying an input ---- */

struct edit { /* a record to re-seal */
	bool on;
	struct jrnl_rec hdr; /* header fields to seal with */
	unsigned char *ops;  /* LOGBSIZE bytes */
	uint32_t h;
};

static struct edit edits[MAX_RECS];

static struct edit *edit_of(unsigned idx)
{
	struct edit *e = &edits[idx % P.nrecs];
	const struct prec *r = &P.recs[idx % P.nrecs];

	if (!e->ops)
		FZ_CHECK((e->ops = malloc(LOGBSIZE)));
	if (!e->on) {
		e->on = true;
		e->hdr = r->hdr;
		e->h = r->h;
		memcpy(e->ops, r->ops, LOGBSIZE);
	}
	return e;
}

static void set_field(struct edit *e, uint8_t field, uint64_t v)
{
	switch (field % 9) {
	case 0: /* len: mostly near the old one */
		e->hdr.len = field & 0x80 ? (uint32_t)(v % (LOGBSIZE + 1)) :
					    (uint32_t)(e->hdr.len + (int8_t)v) % (LOGBSIZE + 1);
		break;
	case 1:
		e->hdr.num_ops = (uint32_t)v;
		break;
	case 2:
		e->hdr.tail_lsn = field & 0x80 ? v : e->hdr.tail_lsn + (int8_t)v;
		break;
	case 3:
		e->hdr.durable_lsn = field & 0x80 ? v : e->hdr.durable_lsn + (int8_t)v;
		break;
	case 4:
		e->hdr.prev_lsn = field & 0x80 ? v : e->hdr.prev_lsn + (int8_t)v;
		break;
	case 5:
		e->hdr.cycle = field & 0x80 ? (uint32_t)v : e->hdr.cycle + (int8_t)v;
		break;
	case 6:
		e->hdr.logbufs = (uint32_t)v;
		e->hdr.logbsize = (uint32_t)(v >> 32);
		break;
	case 7:
		e->h = 1 + (uint32_t)(v % 4);
		break;
	default: /* drop the last op bytes: len rounded down to an op boundary guess */
		e->hdr.len = e->hdr.len > (v & 0xff) * 8 ? e->hdr.len - (uint32_t)(v & 0xff) * 8 :
							   0;
		break;
	}
}

/* Seal edit @i into work at its record's place (clipped to [0, W)). */
static void reseal(unsigned i)
{
	struct edit *e = &edits[i];
	const struct prec *r = &P.recs[i];
	uint32_t p = (e->hdr.len + S - 1) / S, h = e->h;
	struct jrnl_rec_fill f = {
		.cycle = e->hdr.cycle,
		.sector_no = r->sector_no,
		.log_sectors = P.g.log_sectors,
		.tail_lsn = e->hdr.tail_lsn,
		.durable_lsn = e->hdr.durable_lsn,
		.prev_lsn = e->hdr.prev_lsn,
		.len = e->hdr.len,
		.num_ops = e->hdr.num_ops,
		.logbufs = e->hdr.logbufs,
		.logbsize = e->hdr.logbsize,
		.uuid = UUID,
	};
	size_t size, off = (size_t)r->sector_no * S;

	if (jrnl_rec_slots(S, h) < p)
		h = jrnl_rec_hdr_sectors(S, p);
	f.hdr_sectors = h;
	FZ_CHECK((size_t)(h + p) * S <= 2 * LOGBSIZE);
	memcpy(P.recbuf + (size_t)h * S, e->ops, e->hdr.len);
	size = jrnl_rec_seal(P.recbuf, S, &f);
	FZ_CHECK(size == (size_t)(h + p) * S);
	if (off + size > P.W)
		size = P.W - off;
	memcpy(P.work + off, P.recbuf, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	struct {
		uint8_t kind;
		uint32_t a, b, n;
		const uint8_t *bytes;
	} raw[MAX_PATCHES];
	unsigned nraw = 0, npatch = 0;
	size_t R;
	struct jrnl_report r1, r2;
	struct replay_log l1, l2;
	size_t lo0, hi0, lo1, hi1;
	int rc;

	if (!P.ready)
		pristine_build();
	R = P.W + END_BYTES;
	memcpy(P.work, P.pristine, R);

	while (f.n && npatch++ < MAX_PATCHES) {
		uint8_t kind = fz_u8(&f);

		switch (kind % 4) {
		case 0: /* raw bytes */
		case 3: /* sector copy */
			raw[nraw].kind = kind % 4;
			if (kind % 4 == 0) {
				raw[nraw].a = fz_u32(&f);
				raw[nraw].n = fz_u8(&f) % 64u + 1;
				raw[nraw].bytes = f.p;
				raw[nraw].b = (uint32_t)(f.n < raw[nraw].n ? f.n : raw[nraw].n);
				f.p += raw[nraw].b;
				f.n -= raw[nraw].b;
			} else {
				raw[nraw].a = fz_u16(&f);
				raw[nraw].b = fz_u16(&f);
				raw[nraw].n = fz_u8(&f) % 16u + 1;
			}
			nraw++;
			break;
		case 1: { /* op bytes */
			struct edit *e = edit_of(fz_u8(&f));
			uint32_t off = fz_u16(&f) % LOGBSIZE, n = fz_u8(&f) % 64u + 1;

			if (off + n > LOGBSIZE)
				n = LOGBSIZE - off;
			n = (uint32_t)fz_bytes(&f, e->ops + off, n);
			if (off + n > e->hdr.len)
				e->hdr.len = off + n;
			break;
		}
		default: { /* a header field */
			struct edit *e = edit_of(fz_u8(&f));
			uint8_t field = fz_u8(&f);

			set_field(e, field, fz_u64(&f));
			break;
		}
		}
	}
	for (unsigned i = 0; i < P.nrecs; i++)
		if (edits[i].on) {
			reseal(i);
			edits[i].on = false;
		}
	for (unsigned i = 0; i < nraw; i++) {
		if (raw[i].kind == 0) {
			size_t off = raw[i].a & 0x80000000u ? P.W + raw[i].a % END_BYTES :
							      raw[i].a % P.W,
			       n = raw[i].b;

			if (off + n > R)
				n = R - off;
			memcpy(P.work + off, raw[i].bytes, n);
		} else {
			size_t secs = R / S, from = raw[i].a % secs, to = raw[i].b % secs,
			       n = raw[i].n;

			if (from + n > secs)
				n = secs - from;
			if (to + n > secs)
				n = secs - to;
			memmove(P.work + to * S, P.work + from * S, n * S);
		}
	}

	diff_range(0, P.W, &lo0, &hi0);
	diff_range(P.W, END_BYTES, &lo1, &hi1);
	dev_put(P.work, lo0, hi0);
	dev_put(P.work, lo1, hi1);

	rc = recover(&r1, &l1);
	if (rc == 0) {
		FZ_CHECK(recover(&r2, &l2) == 0);
		same_report(&r1, &r2, &l1, &l2);
	}
	if (lo0 == hi0 && lo1 == hi1) /* nothing changed: the pristine result */
		same_report(&r1, &P.base, &l1, &P.base_log);

	dev_put(P.pristine, lo0, hi0);
	dev_put(P.pristine, lo1, hi1);
	sink = l1.hash;
	return 0;
}

/* ---- seeds ---- */

static void seed_raw(struct fzw *w, uint32_t off, const void *b, uint8_t n)
{
	fzw_u8(w, 0);
	fzw_u32(w, off);
	fzw_u8(w, (uint8_t)(n - 1));
	fzw_bytes(w, b, n);
}

static void seed_ops(struct fzw *w, uint8_t rec, uint16_t off, const void *b, uint8_t n)
{
	fzw_u8(w, 1);
	fzw_u8(w, rec);
	fzw_u16(w, off);
	fzw_u8(w, (uint8_t)(n - 1));
	fzw_bytes(w, b, n);
}

static void seed_hdr(struct fzw *w, uint8_t rec, uint8_t field, uint64_t v)
{
	fzw_u8(w, 2);
	fzw_u8(w, rec);
	fzw_u8(w, field);
	fzw_u64(w, v);
}

size_t fuzz_seed(unsigned idx, uint8_t *buf, size_t cap)
{
	struct fzw w = { buf, 0, cap };
	static const uint8_t ff[4] = { 0xff, 0xff, 0xff, 0xff }, one[1] = { 1 };
	static const uint8_t cont[2] = { JRNL_OP_CONTINUE, 0 }, start[2] = { JRNL_OP_START, 0 };
	uint8_t t16[2];

	switch (idx) {
	case 0:                /* unpatched: recovery of the pristine log */
		fzw_u8(&w, 3); /* a copy of sector 0 onto itself: no change */
		fzw_u16(&w, 0);
		fzw_u16(&w, 0);
		fzw_u8(&w, 0);
		return w.n;
	case 1: /* a flipped byte in record 0's payload (CRC fails behind the durable point) */
		seed_raw(&w, 2 * S + 40, one, 1);
		return w.n;
	case 2: /* record 0 re-sealed with an item byte changed: the COMMIT crc differs */
		seed_ops(&w, 0, 16 + 16 + 16 + 16 + 3, ff, 1);
		return w.n;
	case 3: /* the START op's flags of record 0 made CONTINUE, re-sealed: EBADOP */
		seed_ops(&w, 0, 8, cont, 2);
		return w.n;
	case 4: /* record 1's len shortened by 64 bytes, re-sealed */
		seed_hdr(&w, 1, 8, 8);
		return w.n;
	case 5: /* a later record's prev_lsn broken */
		seed_hdr(&w, 3, 4, 1);
		return w.n;
	case 6: /* record 2 re-sealed with a tail_lsn outside the log */
		seed_hdr(&w, 2, 0x82, 0xffffffffffffull);
		return w.n;
	case 7: /* the log's last sector gets cycle 1: both ends "written" */
		t16[0] = 1;
		t16[1] = 0;
		seed_raw(&w, 0x80000000u | (END_BYTES - S), t16, 2);
		return w.n;
	case 8: /* records duplicated at the head (sector copy past the end) */
		fzw_u8(&w, 3);
		fzw_u16(&w, 0);
		fzw_u16(&w, 200);
		fzw_u8(&w, 15);
		return w.n;
	case 9: /* a WAS_CONT op turned into a START in record 2, and num_ops changed */
		seed_ops(&w, 2, 8, start, 2);
		seed_hdr(&w, 2, 1, 9);
		return w.n;
	case 10: /* record 4 (after unmount) with a higher durable_lsn and a torn sector */
		seed_hdr(&w, 4, 0x83, jrnl_lsn(1, 4000));
		seed_raw(&w, 60 * S, ff, 4);
		return w.n;
	default:
		return 0;
	}
}
