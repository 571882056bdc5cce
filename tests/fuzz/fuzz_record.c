/*
 * fuzz_record.c - fuzz target for the journal's two fixed-layout decoders: the record
 * checker (jrnl_rec_check, then jrnl_rec_unpack on a record it accepts; journal/record.c)
 * and the superblock reader (jrnl_sb_read; journal/sb.c).  Neither may crash, read out of
 * bounds or hit undefined behaviour on any bytes; and where the harness can tell what
 * the answer must be, it checks the answer.
 *
 * Why so much structure: a record is only accepted when its magic, uuid, LSN, sizes,
 * every sector's cycle stamp and its CRC32c all agree, so random bytes would never get
 * past the header checks and the code behind them (cycle checks, CRC, unpack) would go
 * untested.  The first input byte therefore picks one of four modes, two of which put
 * valid structure back into the fuzzer's bytes:
 *
 *   0 raw      [0][fl][sector_no u32][log_sectors u32][hi u8 if fl&0x80][image...]
 *              the rest of the input is the record image, checked as it is, from an
 *              exactly sized heap buffer (avail = its length), so a read past the bytes
 *              available is an ASan report.  fl bit 0: sector 4096, else 512.
 *   1 repair   [1][fl][sector_no][log_sectors][hi][rep u8][image...]
 *              as raw, but first the harness repairs what rep asks for: bit 0 magic and
 *              version, 1 uuid, 2 the LSN (cycle, sector_no), 3 consistent H / P / len,
 *              4 every sector's cycle stamp (saving the word it covers, as the writer
 *              does); then it re-seals the CRC (its own implementation of FORMAT.md's
 *              "Record CRC", not record.c's).  With bits 0-4 all set and a geometry that
 *              fits, the record is valid, so anything but JRNL_REC_OK is a failure.
 *   2 seal     [2][fl][cycle][sector_no][log_sectors][tail u64][durable u64][prev u64]
 *              [num_ops u32][logbufs u32][logbsize u32][len u32][nmut u8]
 *              [nmut x (off u32, xor u8)][op bytes...]
 *              jrnl_rec_seal round trip: the op bytes (repeated to len) are sealed, the
 *              result must check JRNL_REC_OK exactly when the geometry allows it, carry
 *              the header fields it was sealed with, be refused as FOREIGN under another
 *              uuid and as SHORT (or NOT_HEADER) one byte short, and unpack back to the
 *              original op bytes; then a mutated copy is checked (and unpacked if
 *              accepted).
 *   3 sb       [3][fl][4096 bytes of superblock area...]
 *              the bytes go to the first 4096 bytes of a simulated disk (one of three,
 *              picked by fl: 4 MiB + 4 KiB with 512-byte sectors, 8 MiB + 4 KiB with
 *              4096-byte sectors, or 2 KiB, too small to hold a superblock), after the
 *              repairs fl asks for (magic, version / incompat, geometry, CRC), and
 *              jrnl_sb_read reads them.  Its result must be what FORMAT.md's check order
 *              gives (recomputed here from the bytes), and on success the geometry must
 *              be self-consistent and fit the device.
 *
 * Every jrnl_rec_check verdict must be a known enum value; records it accepts are
 * unpacked and every payload byte is read (fz_touch) so a wrong bound in the accepted
 * H / P / len shows up under ASan.  The sim disks are opened once per process.
 */
#include "format.h"
#include "fuzz.h"
#include "io_sim.h"
#include "jrnl.h"
#include "record.h"

#include <delog.h>
#include <errno.h>
#include <stdbool.h>

static const uint8_t UUID[16] = { 0xf0, 0x22, 0x7e, 0x51, 0x0d, 0x4a, 0x4e, 0x11,
				  0x8c, 0x3b, 0x50, 0x66, 0x9a, 0x01, 0xc4, 0x7d };
static const uint8_t OTHER[16] = { 0x0f, 0x22, 0x7e, 0x51, 0x0d, 0x4a, 0x4e, 0x11,
				   0x8c, 0x3b, 0x50, 0x66, 0x9a, 0x01, 0xc4, 0x7d };

/* The smallest log jrnl_sb_read accepts: sb.c's MIN_LOG_BYTES ("room for the largest
 * records of a full ring twice over"). */
#define MIN_LOG_BYTES (2ull * JRNL_MAX_LOGBUFS * JRNL_MAX_LOGBSIZE)

static volatile uint64_t sink;

static void wr32(void *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static unsigned char *buf_alloc(size_t len)
{
	void *p = NULL;

	/* 64-byte aligned like the recovery's buffers (the checker reads the header in
	 * place), exactly @len long so ASan sees any byte past it. */
	FZ_CHECK(posix_memalign(&p, 64, len ? len : 1) == 0);
	return p;
}

/* ---- an independent reading of docs/FORMAT.md's record layout ---- */

static uint32_t h_cycle_at(uint32_t cycle, uint32_t sector_no, uint64_t log_sectors, uint64_t k)
{
	return (uint64_t)sector_no + k >= log_sectors ? jrnl_cycle_next(cycle) : cycle;
}

/* Byte offset of saved-word slot @i in the header sectors. */
static size_t h_slot(uint32_t S, uint32_t i)
{
	uint32_t first = (S - JRNL_REC_SAVED_OFF) / 4, ext = (S - 4) / 4;

	if (i < first)
		return JRNL_REC_SAVED_OFF + 4 * (size_t)i;
	i -= first;
	return (size_t)S * (1 + i / ext) + 4 + 4 * (size_t)(i % ext);
}

/* CRC32c over the H header sectors with the crc field as zero, then the P payload
 * sectors. */
static uint32_t h_crc(const unsigned char *rec, uint32_t S, uint32_t h, uint32_t p)
{
	unsigned char zero[4] = { 0 };
	uint32_t crc = jrnl_crc32c(0, rec, 48);

	crc = jrnl_crc32c(crc, zero, 4);
	crc = jrnl_crc32c(crc, rec + 52, (size_t)h * S - 52);
	return jrnl_crc32c(crc, rec + (size_t)h * S, (size_t)p * S);
}

/* A record jrnl_rec_check accepted: its claims must hold in the bytes available; then
 * unpack it and read every op byte. */
static void accepted(unsigned char *rec, size_t avail, uint32_t S, uint64_t log_sectors,
		     uint32_t sector_no, const struct jrnl_rec *hdr)
{
	uint32_t h, p;

	FZ_CHECK(hdr == (const struct jrnl_rec *)rec);
	h = hdr->hdr_sectors;
	p = hdr->payload_sectors;
	FZ_CHECK(h >= 1 && (uint64_t)(h + p) * S <= avail && h + p <= log_sectors);
	FZ_CHECK(hdr->magic == JRNL_REC_MAGIC && !memcmp(hdr->uuid, UUID, 16));
	FZ_CHECK(jrnl_lsn_sector(hdr->lsn) == sector_no && jrnl_lsn_cycle(hdr->lsn) == hdr->cycle);
	FZ_CHECK(hdr->len <= (uint64_t)p * S && jrnl_rec_slots(S, h) >= p);
	FZ_CHECK(h_crc(rec, S, h, p) == hdr->crc);
	/* The uuid is checked before anything that depends on it; another log's record
	 * that reads as a superblock copy (cycle "GSB1") is no record at all. */
	FZ_CHECK(jrnl_rec_check(rec, avail, S, log_sectors, sector_no, OTHER, NULL) ==
		 (hdr->cycle == (uint32_t)(JRNL_SB_MAGIC >> 32) ? JRNL_REC_NOT_HEADER :
								  JRNL_REC_FOREIGN));
	jrnl_rec_unpack(rec, S);
	for (uint32_t i = 0; i < p; i++)
		FZ_CHECK(!memcmp(rec + (size_t)(h + i) * S, rec + h_slot(S, i), 4));
	sink = fz_touch(sink, rec + (size_t)h * S, hdr->len);
}

static enum jrnl_rec_verdict check(const unsigned char *rec, size_t avail, uint32_t S,
				   uint64_t log_sectors, uint32_t sector_no,
				   const struct jrnl_rec **hdr)
{
	enum jrnl_rec_verdict v;

	*hdr = NULL;
	v = jrnl_rec_check(rec, avail, S, log_sectors, sector_no, UUID, hdr);
	FZ_CHECK(v >= JRNL_REC_OK && v <= JRNL_REC_MISPLACED);
	FZ_CHECK((v == JRNL_REC_OK) == (*hdr != NULL));
	return v;
}

/* ---- modes 0 and 1: a record image from the input ---- */

static void fuzz_image(struct fz *f, bool repair)
{
	uint8_t fl = fz_u8(f), rep;
	uint32_t S = fl & 1 ? 4096 : 512, sector_no = fz_u32(f), h = 0, p = 0;
	uint64_t log_sectors = fz_u32(f);
	const struct jrnl_rec *hdr;
	bool expect_ok = false;
	enum jrnl_rec_verdict v;
	unsigned char *rec;
	size_t avail;

	if (fl & 0x80)
		log_sectors |= (uint64_t)fz_u8(f) << 32;
	rep = repair ? fz_u8(f) : 0;
	avail = f->n;
	rec = buf_alloc(avail);
	fz_bytes(f, rec, avail);

	if (repair && avail >= S) {
		struct jrnl_rec *r = (struct jrnl_rec *)rec;
		uint32_t maxs = JRNL_MAX_LOGBSIZE / S;

		if (rep & 1) {
			r->magic = JRNL_REC_MAGIC;
			r->version = JRNL_FORMAT_VERSION;
		}
		if (rep & 2)
			memcpy(r->uuid, UUID, 16);
		if (rep & 4)
			r->lsn = jrnl_lsn(r->cycle, sector_no);
		if (rep & 8) {
			uint32_t need;

			r->len %= JRNL_MAX_LOGBSIZE + 1;
			r->payload_sectors = (r->len + S - 1) / S;
			need = jrnl_rec_hdr_sectors(S, r->payload_sectors);
			if (r->hdr_sectors < need || r->hdr_sectors > maxs)
				r->hdr_sectors = need;
		}
		h = r->hdr_sectors;
		p = r->payload_sectors;
		if (h >= 1 && (uint64_t)h + p <= 2 * maxs && (uint64_t)(h + p) * S <= avail) {
			if (rep & 16) {
				for (uint32_t k = 1; k < h + p; k++) {
					uint32_t c = h_cycle_at(r->cycle, sector_no, log_sectors,
								k);

					if (k >= h && jrnl_rec_slots(S, h) > k - h)
						memcpy(rec + h_slot(S, k - h), rec + (size_t)k * S,
						       4);
					wr32(rec + (size_t)k * S, c);
				}
			}
			r->crc = h_crc(rec, S, h, p);
			expect_ok = (rep & 0x1f) == 0x1f && sector_no < log_sectors &&
				    h + p <= log_sectors && r->cycle != JRNL_REC_MAGIC;
		}
	}

	v = check(rec, avail, S, log_sectors, sector_no, &hdr);
	if (expect_ok && v != JRNL_REC_OK) {
		fprintf(stderr,
			"repaired record refused: verdict %d (S %u, H %u, P %u, sector %u "
			"of %llu, avail %zu)\n",
			(int)v, S, h, p, sector_no, (unsigned long long)log_sectors, avail);
		abort();
	}
	if (v == JRNL_REC_OK)
		accepted(rec, avail, S, log_sectors, sector_no, hdr);
	free(rec);
}

/* ---- mode 2: jrnl_rec_seal round trip ---- */

static void fuzz_seal(struct fz *f)
{
	uint8_t fl = fz_u8(f), nmut;
	uint32_t S = fl & 1 ? 4096 : 512;
	struct jrnl_rec_fill fill = { .uuid = UUID };
	uint32_t muts_off[8], h, p, len;
	uint8_t muts_xor[8];
	const struct jrnl_rec *hdr;
	unsigned char *rec, *orig, *copy;
	enum jrnl_rec_verdict v;
	size_t size, avail;
	bool expect_ok;

	fill.cycle = fz_u32(f);
	fill.sector_no = fz_u32(f);
	fill.log_sectors = fz_u32(f);
	if (!(fl & 2) && fill.log_sectors)
		fill.sector_no %= (uint32_t)fill.log_sectors; /* mostly a sector of the log */
	if (!(fl & 4))
		fill.cycle = 1 + (fill.cycle & 0xff); /* mostly a small cycle */
	fill.tail_lsn = fz_u64(f);
	fill.durable_lsn = fz_u64(f);
	fill.prev_lsn = fz_u64(f);
	fill.num_ops = fz_u32(f);
	fill.logbufs = fz_u32(f);
	fill.logbsize = fz_u32(f);
	len = fz_u32(f) % (JRNL_MAX_LOGBSIZE + 1);
	if (!(fl & 8))
		len &= 0x3fff; /* mostly a small record */
	nmut = fz_u8(f) % 8;
	for (unsigned i = 0; i < nmut; i++) {
		muts_off[i] = fz_u32(f);
		muts_xor[i] = fz_u8(f);
	}
	fill.len = len;
	p = (len + S - 1) / S;
	h = jrnl_rec_hdr_sectors(S, p) + ((fl & 16) ? 1 : 0);
	fill.hdr_sectors = h;
	size = (size_t)(h + p) * S;

	/* The op bytes: the rest of the input, repeated to len. */
	orig = buf_alloc(len);
	if (f->n)
		for (uint32_t i = 0; i < len; i++)
			orig[i] = f->p[i % f->n];
	else
		memset(orig, 0, len);
	rec = buf_alloc(size);
	memset(rec, 0xa5, size);
	memcpy(rec + (size_t)h * S, orig, len);

	FZ_CHECK(jrnl_rec_seal(rec, S, &fill) == size);
	expect_ok = fill.cycle != JRNL_REC_MAGIC && fill.sector_no < fill.log_sectors &&
		    h + p <= fill.log_sectors;
	v = check(rec, size, S, fill.log_sectors, fill.sector_no, &hdr);
	if (expect_ok != (v == JRNL_REC_OK) &&
	    (expect_ok || fill.sector_no >= fill.log_sectors || h + p > fill.log_sectors)) {
		fprintf(stderr,
			"sealed record: verdict %d, expected %s (S %u, H %u, P %u, len %u, "
			"cycle %#x, sector %u of %llu)\n",
			(int)v, expect_ok ? "OK" : "a refusal", S, h, p, len, fill.cycle,
			fill.sector_no, (unsigned long long)fill.log_sectors);
		abort();
	}
	if (v == JRNL_REC_OK) {
		FZ_CHECK(hdr->cycle == fill.cycle && hdr->len == len && hdr->hdr_sectors == h &&
			 hdr->payload_sectors == p && hdr->tail_lsn == fill.tail_lsn &&
			 hdr->durable_lsn == fill.durable_lsn && hdr->prev_lsn == fill.prev_lsn &&
			 hdr->num_ops == fill.num_ops && hdr->logbufs == fill.logbufs &&
			 hdr->logbsize == fill.logbsize &&
			 hdr->lsn == jrnl_lsn(fill.cycle, fill.sector_no));
		FZ_CHECK(jrnl_rec_check(rec, size, S, fill.log_sectors, fill.sector_no, OTHER,
					NULL) == JRNL_REC_FOREIGN);
		v = jrnl_rec_check(rec, size - 1, S, fill.log_sectors, fill.sector_no, UUID, NULL);
		FZ_CHECK(v == (size - 1 >= S ? JRNL_REC_SHORT : JRNL_REC_NOT_HEADER));
	}

	/* A mutated copy: any verdict, but an accepted one must hold up. */
	avail = size;
	copy = buf_alloc(avail);
	memcpy(copy, rec, avail);
	for (unsigned i = 0; i < nmut; i++)
		copy[muts_off[i] % avail] ^= muts_xor[i];
	if (check(copy, avail, S, fill.log_sectors, fill.sector_no, &hdr) == JRNL_REC_OK)
		accepted(copy, avail, S, fill.log_sectors, fill.sector_no, hdr);
	free(copy);

	if (expect_ok) {
		jrnl_rec_unpack(rec, S);
		FZ_CHECK(!memcmp(rec + (size_t)h * S, orig, len));
		for (size_t i = (size_t)h * S + len; i < size; i++)
			FZ_CHECK(rec[i] == 0);
	}
	free(rec);
	free(orig);
}

/* ---- mode 3: the superblock ---- */

struct sbdev {
	uint64_t bytes;
	uint32_t sector;
	struct iol_dev *dev;
};

static struct sbdev sbdevs[3] = {
	{ JRNL_SB_AREA + MIN_LOG_BYTES, 512, NULL },
	{ JRNL_SB_AREA + 2 * MIN_LOG_BYTES, 4096, NULL },
	{ 2048, 512, NULL },
};

static struct iol_dev *sb_dev(unsigned i)
{
	struct sbdev *d = &sbdevs[i];

	if (!d->dev) {
		struct iol_sim_opts so = { .size = sizeof(so),
					   .dev_bytes = d->bytes,
					   .sector = d->sector,
					   .latency = IOL_SIM_LAT_NONE };
		struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };

		FZ_CHECK(iol_dev_open(NULL, &o, &d->dev) == 0);
		iol_sim_trace_enable(d->dev, false);
	}
	return d->dev;
}

/* What FORMAT.md says a reader finds, in its order. */
static int sb_expect(const struct jrnl_sb *sb, uint64_t dev_bytes)
{
	if (dev_bytes < JRNL_SB_AREA)
		return DELOG_ETRUNCATED;
	if (sb->magic != JRNL_SB_MAGIC)
		return DELOG_ENOTLOG;
	if (sb->crc != jrnl_crc32c(0, sb, offsetof(struct jrnl_sb, crc)))
		return DELOG_ECHECKSUM;
	if (sb->version > JRNL_FORMAT_VERSION)
		return DELOG_EVERSION;
	if (sb->incompat & ~JRNL_INCOMPAT_KNOWN)
		return DELOG_EFEATURE;
	if (sb->version == 0 || (sb->sector_size != 512 && sb->sector_size != 4096) ||
	    sb->log_start != JRNL_LOG_START || sb->log_size % sb->sector_size ||
	    sb->log_size < MIN_LOG_BYTES || sb->log_size / sb->sector_size > UINT32_MAX)
		return DELOG_ECORRUPT;
	if ((sb->incompat & JRNL_INCOMPAT_WINDOW) &&
	    (sb->window % sb->sector_size || sb->window < JRNL_WINDOW_MIN ||
	     sb->window > sb->log_size / 2))
		return DELOG_ECORRUPT;
	if (sb->log_start + sb->log_size > dev_bytes)
		return DELOG_ETRUNCATED;
	return 0;
}

static void fuzz_sb(struct fz *f)
{
	uint8_t fl = fz_u8(f);
	unsigned which = (fl >> 5) & 3;
	struct jrnl_geom g;
	struct jrnl_sb *sb;
	struct iol_dev *dev;
	unsigned char *area;
	int rc, want;

	if (which == 3)
		which = 0;
	dev = sb_dev(which);
	area = iol_buf_alloc(dev, JRNL_SB_AREA);
	FZ_CHECK(area);
	fz_bytes(f, area, JRNL_SB_AREA);
	sb = (struct jrnl_sb *)area;
	if (fl & 1)
		sb->magic = JRNL_SB_MAGIC;
	if (fl & 4) {
		sb->version = JRNL_FORMAT_VERSION;
		sb->incompat = 0;
	}
	if (fl & 8) {
		sb->sector_size = fl & 16 ? 4096 : 512;
		sb->log_start = JRNL_LOG_START;
		/* A multiple of the sector between the minimum and a little past the end of
		 * the largest device: mostly valid, sometimes truncated. */
		sb->log_size = MIN_LOG_BYTES + (sb->log_size % (MIN_LOG_BYTES + 4096)) /
						       sb->sector_size * sb->sector_size;
	}
	if ((fl & 128) && sb->sector_size && sb->log_size >= 2) {
		/* A named window (JRNL_INCOMPAT_WINDOW), mostly in range. */
		sb->incompat = JRNL_INCOMPAT_WINDOW;
		sb->window = (JRNL_WINDOW_MIN + sb->window % (sb->log_size / 2)) / sb->sector_size *
			     sb->sector_size;
	}
	if (fl & 2)
		sb->crc = jrnl_crc32c(0, sb, offsetof(struct jrnl_sb, crc));
	if (sbdevs[which].bytes >= JRNL_SB_AREA)
		FZ_CHECK(iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 0, area, JRNL_SB_AREA,
				     NULL) == 0);

	memset(&g, 0x5a, sizeof(g));
	rc = jrnl_sb_read(dev, &g);
	want = sb_expect(sb, sbdevs[which].bytes);
	if (rc != want) {
		fprintf(stderr, "jrnl_sb_read returned %d, the format says %d\n", rc, want);
		abort();
	}
	if (!rc) {
		FZ_CHECK(g.sector == sb->sector_size && (g.sector == 512 || g.sector == 4096));
		FZ_CHECK(g.log_start == JRNL_LOG_START && g.log_size == sb->log_size);
		FZ_CHECK(g.log_size % g.sector == 0 && g.log_sectors == g.log_size / g.sector);
		FZ_CHECK(g.log_sectors <= UINT32_MAX && g.log_size >= MIN_LOG_BYTES);
		FZ_CHECK(g.log_start + g.log_size <= sbdevs[which].bytes);
		FZ_CHECK(g.version == JRNL_FORMAT_VERSION && g.incompat == sb->incompat);
		FZ_CHECK(g.window_sectors == (sb->incompat & JRNL_INCOMPAT_WINDOW ?
						      sb->window / sb->sector_size :
						      jrnl_window_legacy(g.log_sectors, g.sector)));
		FZ_CHECK(g.window_sectors * 2 <= g.log_sectors);
		FZ_CHECK(!memcmp(g.uuid, sb->uuid, 16) && g.format_time == sb->format_time);
	}
	free(area);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };

	switch (fz_u8(&f) & 3) {
	case 0:
		fuzz_image(&f, false);
		break;
	case 1:
		fuzz_image(&f, true);
		break;
	case 2:
		fuzz_seal(&f);
		break;
	default:
		fuzz_sb(&f);
		break;
	}
	return 0;
}

/* ---- seeds ---- */

/* A START / ITEM / COMMIT op sequence of one checkpoint (FORMAT.md "Ops"). */
static size_t seed_ops(unsigned char *ops, uint32_t dlen)
{
	struct jrnl_op op;
	struct jrnl_start st = { .seq = 7 };
	struct jrnl_item it = { .key = 42, .data_len = dlen };
	struct jrnl_commit cm = { .seq = 7,
				  .start_lsn = jrnl_lsn(1, 0),
				  .nitems = 1,
				  .payload_bytes = sizeof(it) + dlen };
	size_t n = 0;

	op = (struct jrnl_op){ .tid = 0x100,
			       .len = sizeof(st),
			       .flags = JRNL_OP_START,
			       .type = JRNL_T_START };
	memcpy(ops + n, &op, sizeof(op));
	memcpy(ops + n + sizeof(op), &st, sizeof(st));
	n += sizeof(op) + sizeof(st);
	op = (struct jrnl_op){ .tid = 0x100,
			       .len = (uint32_t)sizeof(it) + dlen,
			       .type = JRNL_T_ITEM };
	memcpy(ops + n, &op, sizeof(op));
	memcpy(ops + n + sizeof(op), &it, sizeof(it));
	for (uint32_t i = 0; i < dlen; i++)
		ops[n + sizeof(op) + sizeof(it) + i] = (unsigned char)(i * 13 + 5);
	cm.crc = jrnl_crc32c(0, ops + n + sizeof(op), sizeof(it) + dlen);
	n += sizeof(op) + ((sizeof(it) + dlen + 7) & ~(size_t)7);
	op = (struct jrnl_op){ .tid = 0x100,
			       .len = sizeof(cm),
			       .flags = JRNL_OP_COMMIT,
			       .type = JRNL_T_COMMIT };
	memcpy(ops + n, &op, sizeof(op));
	memcpy(ops + n + sizeof(op), &cm, sizeof(cm));
	return n + sizeof(op) + sizeof(cm);
}

/* A sealed record image (as mode 0 / 1 take it): @dlen item bytes, at @sector_no. */
static size_t seed_image(unsigned char *rec, uint32_t S, uint32_t sector_no, uint64_t log_sectors,
			 uint32_t dlen)
{
	unsigned char ops[3 * 4096];
	size_t len = seed_ops(ops, dlen);
	uint32_t p = (uint32_t)((len + S - 1) / S), h = jrnl_rec_hdr_sectors(S, p);
	struct jrnl_rec_fill fill = {
		.cycle = 3,
		.sector_no = sector_no,
		.log_sectors = log_sectors,
		.tail_lsn = jrnl_lsn(3, 0),
		.durable_lsn = jrnl_lsn(3, sector_no),
		.prev_lsn = 0,
		.len = (uint32_t)len,
		.num_ops = 3,
		.hdr_sectors = h,
		.logbufs = 2,
		.logbsize = 16384,
		.uuid = UUID,
	};

	memset(rec, 0, (size_t)(h + p) * S);
	memcpy(rec + (size_t)h * S, ops, len);
	return jrnl_rec_seal(rec, S, &fill);
}

size_t fuzz_seed(unsigned idx, uint8_t *buf, size_t cap)
{
	struct fzw w = { buf, 0, cap };
	static unsigned char img[8 * 4096];
	unsigned char ops[3 * 4096];
	struct jrnl_sb sb;
	size_t n;

	switch (idx) {
	case 0:   /* seal: a one-checkpoint record, 512-byte sectors */
	case 1:   /* seal: 4096-byte sectors, wrapping the end of an 8-sector log */
	case 2: { /* seal: as 0, with two byte mutations */
		bool big = idx == 1;

		n = seed_ops(ops, big ? 9000 : 40);
		fzw_u8(&w, 2);
		fzw_u8(&w, big ? 1 | 2 : 0);
		fzw_u32(&w, 2);             /* cycle */
		fzw_u32(&w, big ? 6 : 17);  /* sector_no */
		fzw_u32(&w, big ? 8 : 256); /* log_sectors */
		fzw_u64(&w, jrnl_lsn(2, 0));
		fzw_u64(&w, jrnl_lsn(2, 17));
		fzw_u64(&w, jrnl_lsn(2, 9));
		fzw_u32(&w, 3);
		fzw_u32(&w, 2);
		fzw_u32(&w, 16384);
		fzw_u32(&w, (uint32_t)n);
		fzw_u8(&w, idx == 2 ? 2 : 0);
		if (idx == 2) {
			fzw_u32(&w, 600);
			fzw_u8(&w, 0x01);
			fzw_u32(&w, 52);
			fzw_u8(&w, 0x80);
		}
		fzw_bytes(&w, ops, n);
		return w.n;
	}
	case 3:   /* raw: a valid sealed record, 512-byte sectors */
	case 4:   /* raw: a valid sealed record, 4096-byte sectors, two payload sectors */
	case 5:   /* repair everything in the record of seed 3 */
	case 6: { /* repair only the CRC of a record whose item byte changed */
		uint32_t S = idx == 4 ? 4096 : 512;

		n = seed_image(img, S, 5, 64, idx == 4 ? 5000 : 300);
		if (idx == 6)
			img[S + 60] ^= 0x40;
		fzw_u8(&w, idx >= 5 ? 1 : 0);
		fzw_u8(&w, S == 4096 ? 1 : 0);
		fzw_u32(&w, 5);
		fzw_u32(&w, 64);
		if (idx >= 5)
			fzw_u8(&w, idx == 5 ? 0x1f : 0);
		fzw_bytes(&w, img, n);
		return w.n;
	}
	case 7:  /* sb: a valid superblock of the 4 MiB log */
	case 8:  /* sb: version 2, resealed */
	case 9:  /* sb: an unknown incompat bit, resealed */
	case 10: /* sb: on the 8 MiB disk with 4096-byte sectors, log too big (truncated) */
	case 11: /* sb: the 2 KiB disk */
	case 12: /* sb: zeroes, with magic and geometry repaired by the harness */
		memset(&sb, 0, sizeof(sb));
		if (idx != 12) {
			sb.magic = JRNL_SB_MAGIC;
			sb.version = idx == 8 ? 2 : JRNL_FORMAT_VERSION;
			sb.incompat = idx == 9 ? 0x4 : 0;
			sb.sector_size = idx == 10 ? 4096 : 512;
			sb.log_start = JRNL_LOG_START;
			sb.log_size = idx == 10 ? 3 * MIN_LOG_BYTES : MIN_LOG_BYTES;
			memcpy(sb.uuid, UUID, 16);
			sb.format_time = 1700000000;
			sb.crc = jrnl_crc32c(0, &sb, offsetof(struct jrnl_sb, crc));
		}
		fzw_u8(&w, 3);
		fzw_u8(&w, idx == 10 ? 1 << 5 : idx == 11 ? 2 << 5 : idx == 12 ? 1 | 2 | 4 | 8 : 0);
		fzw_bytes(&w, &sb, sizeof(sb));
		return w.n;
	default:
		return 0;
	}
}
