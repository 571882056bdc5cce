/*
 * mklog.c - build a log file, intact or damaged in one precise way, for the CLI tests
 * (logtool_test.sh) of `delog print` and `delog recover`.
 *
 *   mklog CASE PATH
 *
 * Every case but zero and random starts from the same log: a 4 MiB log (sector 4096)
 * formatted by jrnl_format on the psync backend, then NCKPT checkpoints written by the
 * real writer (2 log buffers of 16 KiB, so checkpoints span records and items are split
 * with CONTINUE / WAS_CONT) with the sync policy's flags, so every record's durable_lsn
 * vouches for the ones before it.  Then the case's damage, on the file itself:
 *
 *   good       none (crashed: no unmount record)      clean      + an unmount record
 *   zero       a 0-byte file                          random     1 MiB of random bytes
 *   truncated  the file cut to half the log           magic      superblock magic changed
 *   sbcrc      a superblock byte changed (CRC fails)  version    sb version 2, CRC redone
 *   incompat   sb unknown incompat bit, CRC redone    geometry   sb sector size 1024, CRC redone
 *   torn       a payload byte of the LAST record      corrupt    a payload byte of a middle
 *              changed (a torn write: dropped)                   record changed (behind the
 *                                                                durable point: corruption)
 *   foreign    a middle record resealed with another log's uuid
 *   recversion a middle record resealed with format version 2
 *   oplen      a middle record's first op header claims more bytes than the record
 *              holds, resealed (CRC valid)
 *   orphan     a middle record's first op marked WAS_CONT|END although the record
 *              before it ended with no CONTINUE, resealed
 *   commitcont a middle record ending in a COMMIT op: CONTINUE added to it, resealed
 *              (only ITEM ops are ever split: EBADOP)
 *   lostcommit a middle record ending in a COMMIT op: that op removed, resealed (a
 *              checkpoint left open behind later committed ones: ECORRUPT)
 *   sector     the superblock's sector size changed to the other valid one (512 <->
 *              4096), CRC redone: the records do not fit it (EGEOMETRY)
 *   tailcorrupt  corrupt, in a log whose tail was moved to checkpoint 11 before it was
 *              written (checkpoints 1-10 released): recovery starts at 11
 *   corrupt100 100 checkpoints, and a payload byte changed in the record holding the
 *              COMMIT of checkpoint 51 (ECHECKSUM): 1-50 verify, 51-100 do not
 *   version0   sb version 0, CRC redone               logstart   sb log_start 8192, CRC redone
 *   logsize    sb log_size + 100 (not a multiple of   smalllog   sb log_size 1 MiB (below the
 *              the sector), CRC redone                           smallest log), CRC redone
 *
 * "Resealed" means the record's ops are unpacked, edited and sealed again with
 * jrnl_rec_seal, so the CRC and cycle stamps hold and the op decoder behind the CRC is
 * what must refuse the record.  On success mklog prints "records=R checkpoints=C
 * victim_offset=O" (O: byte offset of the damaged record, or 0) for the test to check.
 *
 *   mklog nextseq PATH
 *
 * opens the log at PATH with delog_open, as an application would, commits one item,
 * forces it and prints "seq=S": the sequence the log gave the commit.
 *
 *   mklog create512|create4096|openrw|openro PATH
 *
 * delog_open of PATH with DELOG_OPEN_CREATE and 512- or 4096-byte sectors (an 8 MiB log
 * when it creates one), with no flags (a writing open), or DELOG_OPEN_RDONLY; closes a
 * log that opened and prints "open=NAME field=F message=M": 0 or the error's name, and
 * delog_error_info's field and message.
 */
#include "format.h"
#include "io.h"
#include "jrnl.h"
#include "record.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define SECTOR 4096u
#define LOG_BYTES (4u << 20)
#define NCKPT 40u
#define NCKPT_LONG 100u

static const uint8_t OTHER_UUID[16] = { 0xee, 0xee, 0xee, 0xee, 1, 2,  3,  4,
					5,    6,    7,    8,    9, 10, 11, 12 };

static void die(const char *what, int err)
{
	fprintf(stderr, "mklog: %s: %s\n", what, err < 0 ? strerror(-err) : "failed");
	exit(1);
}

struct recpos {
	uint64_t off; /* file offset of header sector 0 */
	uint32_t h, p;
};

/* @tail_at: before writing checkpoint @tail_at (0: never), move the tail to the head, as
 * an application releasing checkpoints 1..tail_at-1 does: recovery then starts there. */
static void build(const char *path, bool unmount, uint64_t tail_at, uint64_t nckpt)
{
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "psync" };
	struct jrnl_format_opts fo = { .sector = SECTOR, .log_size = LOG_BYTES };
	struct jrnl_log_opts lo = { .logbufs = 2, .logbsize = 16u << 10 };
	const unsigned fl = JRNL_TX_FLUSH_START | JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT |
			    JRNL_TX_WAIT_PREV;
	static unsigned char data[40000];
	struct jrnl_log *log;
	struct iol_dev *dev;
	struct jrnl_geom g;
	struct jrnl_wtx tx;
	int err;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 1);
	err = iol_file_create(path, JRNL_SB_AREA + LOG_BYTES, 0600, NULL, 0);
	if (err)
		die(path, err);
	if ((err = iol_dev_open(path, &o, &dev)) || (err = jrnl_format(dev, &fo, &g)) ||
	    (err = jrnl_log_open(dev, &g, NULL, &lo, &log)))
		die("format and open", err);
	for (uint64_t seq = 1; seq <= nckpt; seq++) {
		if (seq == tail_at)
			jrnl_log_set_tail(log, jrnl_log_head(log));
		err = jrnl_tx_start(log, seq, fl, &tx);
		for (uint32_t k = 0; !err && k < 3; k++) {
			/* Mostly small items, every fifth checkpoint one larger than a buffer. */
			uint32_t len = seq % 5 == 0 && k == 1 ? 30000 :
								64 + (uint32_t)(seq * 37 % 900);

			err = jrnl_tx_item(&tx, seq * 10 + k, data, len);
		}
		if (!err)
			err = jrnl_tx_commit(&tx, NULL, NULL);
		if (err)
			die("write a checkpoint", err);
	}
	if ((err = jrnl_log_force(log)) || (err = jrnl_log_flush(log)))
		die("force", err);
	if (unmount && (err = jrnl_log_unmount(log)))
		die("unmount", err);
	if ((err = jrnl_log_close(log)) || (err = iol_dev_close(dev)))
		die("close", err);
}

/* Walk the records from the start of the log (the test log never wraps). */
static size_t find_records(int fd, struct recpos *out, size_t max)
{
	unsigned char sec[SECTOR];
	uint64_t s = 0;
	size_t n = 0;

	while (n < max && s < LOG_BYTES / SECTOR) {
		struct jrnl_rec r;

		if (pread(fd, sec, SECTOR, JRNL_LOG_START + s * SECTOR) != SECTOR)
			die("read", -errno);
		memcpy(&r, sec, sizeof(r));
		if (r.magic != JRNL_REC_MAGIC)
			break;
		out[n].off = JRNL_LOG_START + s * SECTOR;
		out[n].h = r.hdr_sectors;
		out[n].p = r.payload_sectors;
		s += r.hdr_sectors + r.payload_sectors;
		n++;
	}
	return n;
}

/* Read record @rp, unpack it, let @edit change header fields or ops, seal and write it. */
static void reseal(int fd, const struct recpos *rp,
		   void (*edit)(struct jrnl_rec *, unsigned char *))
{
	size_t bytes = (size_t)(rp->h + rp->p) * SECTOR;
	unsigned char *buf = malloc(bytes);
	struct jrnl_rec_fill f;
	struct jrnl_rec r;
	uint8_t uuid[16];

	if (!buf || pread(fd, buf, bytes, (off_t)rp->off) != (ssize_t)bytes)
		die("read record", -EIO);
	jrnl_rec_unpack(buf, SECTOR);
	memcpy(&r, buf, sizeof(r));
	edit(&r, buf + (size_t)rp->h * SECTOR);
	memcpy(uuid, r.uuid, sizeof(uuid));
	f = (struct jrnl_rec_fill){
		.cycle = r.cycle,
		.sector_no = jrnl_lsn_sector(r.lsn),
		.log_sectors = LOG_BYTES / SECTOR,
		.tail_lsn = r.tail_lsn,
		.durable_lsn = r.durable_lsn,
		.prev_lsn = r.prev_lsn,
		.len = r.len,
		.num_ops = r.num_ops,
		.hdr_sectors = r.hdr_sectors,
		.logbufs = r.logbufs,
		.logbsize = r.logbsize,
		.uuid = uuid,
	};
	/* Saved-word slots and padding are rebuilt by the seal; clear the header first. */
	memset(buf, 0, (size_t)rp->h * SECTOR);
	jrnl_rec_seal(buf, SECTOR, &f);
	if (r.version != JRNL_FORMAT_VERSION) {
		/* The seal writes the current version; put the edited one back, CRC redone. */
		struct jrnl_rec *h = (struct jrnl_rec *)buf;
		uint32_t crc;

		h->version = r.version;
		h->crc = 0;
		crc = jrnl_crc32c(0, buf, bytes);
		h->crc = crc;
	}
	if (pwrite(fd, buf, bytes, (off_t)rp->off) != (ssize_t)bytes)
		die("write record", -EIO);
	free(buf);
}

static void edit_foreign(struct jrnl_rec *r, unsigned char *ops)
{
	(void)ops;
	memcpy(r->uuid, OTHER_UUID, sizeof(r->uuid));
}

static void edit_version(struct jrnl_rec *r, unsigned char *ops)
{
	(void)ops;
	r->version = JRNL_FORMAT_VERSION + 1;
}

static void edit_oplen(struct jrnl_rec *r, unsigned char *ops)
{
	struct jrnl_op op;

	memcpy(&op, ops, sizeof(op));
	op.len = r->len; /* header + len > record's len */
	memcpy(ops, &op, sizeof(op));
}

static void edit_orphan(struct jrnl_rec *r, unsigned char *ops)
{
	struct jrnl_op op;

	(void)r;
	memcpy(&op, ops, sizeof(op));
	op.flags = JRNL_OP_WAS_CONT | JRNL_OP_END;
	op.type = JRNL_T_ITEM;
	memcpy(ops, &op, sizeof(op));
}

/* Byte offset, within the op bytes @ops of @r, of its last op. */
static uint64_t last_op(const struct jrnl_rec *r, const unsigned char *ops)
{
	uint64_t off = 0, last = 0;

	for (uint32_t i = 0; i < r->num_ops; i++) {
		struct jrnl_op op;

		memcpy(&op, ops + off, sizeof(op));
		last = off;
		off += sizeof(op) + ((op.len + 7u) & ~7u);
	}
	return last;
}

static void edit_commitcont(struct jrnl_rec *r, unsigned char *ops)
{
	struct jrnl_op op;
	uint64_t at = last_op(r, ops);

	memcpy(&op, ops + at, sizeof(op));
	op.flags |= JRNL_OP_CONTINUE;
	memcpy(ops + at, &op, sizeof(op));
}

static void edit_lostcommit(struct jrnl_rec *r, unsigned char *ops)
{
	uint64_t at = last_op(r, ops);

	memset(ops + at, 0, r->len - at);
	r->len = (uint32_t)at;
	r->num_ops--;
}

/* A middle record (from the middle on) whose last op is a COMMIT. */
static size_t record_ending_in_commit(int fd, const struct recpos *recs, size_t n)
{
	for (size_t k = n / 2; k + 1 < n; k++) {
		size_t bytes = (size_t)(recs[k].h + recs[k].p) * SECTOR;
		unsigned char *buf = malloc(bytes);
		struct jrnl_op op;
		struct jrnl_rec r;

		if (!buf || pread(fd, buf, bytes, (off_t)recs[k].off) != (ssize_t)bytes)
			die("read record", -EIO);
		jrnl_rec_unpack(buf, SECTOR);
		memcpy(&r, buf, sizeof(r));
		memcpy(&op,
		       buf + (size_t)r.hdr_sectors * SECTOR +
			       last_op(&r, buf + (size_t)r.hdr_sectors * SECTOR),
		       sizeof(op));
		free(buf);
		if (r.num_ops > 1 && op.type == JRNL_T_COMMIT)
			return k;
	}
	die("no middle record ends in a COMMIT", 0);
	return 0;
}

/* The record holding the COMMIT op of checkpoint @seq. */
static size_t record_with_commit(int fd, const struct recpos *recs, size_t n, uint64_t seq)
{
	for (size_t k = 0; k < n; k++) {
		size_t bytes = (size_t)(recs[k].h + recs[k].p) * SECTOR;
		unsigned char *buf = malloc(bytes), *ops;
		struct jrnl_commit cm;
		struct jrnl_op op;
		struct jrnl_rec r;
		uint64_t off = 0;
		bool found = false;

		if (!buf || pread(fd, buf, bytes, (off_t)recs[k].off) != (ssize_t)bytes)
			die("read record", -EIO);
		jrnl_rec_unpack(buf, SECTOR);
		memcpy(&r, buf, sizeof(r));
		ops = buf + (size_t)r.hdr_sectors * SECTOR;
		for (uint32_t i = 0; i < r.num_ops && !found; i++) {
			memcpy(&op, ops + off, sizeof(op));
			if (op.type == JRNL_T_COMMIT) {
				memcpy(&cm, ops + off + sizeof(op), sizeof(cm));
				found = cm.seq == seq;
			}
			off += sizeof(op) + ((op.len + 7u) & ~7u);
		}
		free(buf);
		if (found)
			return k;
	}
	die("no record holds the COMMIT", 0);
	return 0;
}

/* nextseq: the sequence an application's first commit gets on the log at @path. */
static int next_seq(const char *path)
{
	struct delog_options o = { .size = sizeof(o) };
	uint64_t seq = 0;
	delog_tx *tx;
	delog *log;
	int err;

	err = delog_open(path, &o, &log);
	if (err)
		die("delog_open", err);
	err = delog_tx_begin(log, 0, 0, &tx);
	if (!err)
		err = delog_tx_log(tx, 1, "x", 1);
	if (!err)
		err = delog_tx_commit_force(tx, &seq);
	if (err)
		die("commit", err);
	err = delog_close(log);
	if (err)
		die("delog_close", err);
	printf("seq=%llu\n", (unsigned long long)seq);
	return 0;
}

/* create512, create4096, openrw, openro: delog_open of @path with @flags (and, when
 * formatting, @sector-byte sectors and 8 MiB) as an application would, then close; prints
 * "open=NAME field=F message=M" from the return value and delog_error_info. */
static int open_case(const char *path, unsigned flags, uint32_t sector)
{
	struct delog_error_info e = { .size = sizeof(e) };
	struct delog_options o = { .size = sizeof(o),
				   .flags = flags,
				   .sector = sector,
				   .error = &e };
	delog *log;
	int err;

	if (flags & DELOG_OPEN_CREATE)
		o.create_size = 8u << 20;
	err = delog_open(path, &o, &log);
	if (!err && (err = delog_close(log)))
		die("delog_close", err);
	printf("open=%s field=%s message=%s\n", err ? delog_err_name(err) : "0", e.field,
	       e.message);
	return 0;
}

/* Change the superblock with @edit and, if @recrc, recompute its CRC. */
static void sb_edit(int fd, int field, bool recrc)
{
	struct jrnl_sb sb;

	if (pread(fd, &sb, sizeof(sb), 0) != sizeof(sb))
		die("read superblock", -EIO);
	switch (field) {
	case 0:
		sb.magic ^= 0xff;
		break;
	case 1:
		sb.reserved[100] ^= 1;
		break;
	case 2:
		sb.version = JRNL_FORMAT_VERSION + 1;
		break;
	case 3:
		sb.incompat |= 1u << 7;
		break;
	case 4:
		sb.sector_size = 1024;
		break;
	case 5:
		sb.sector_size = sb.sector_size == 512 ? 4096 : 512;
		break;
	case 6:
		sb.version = 0;
		break;
	case 7:
		sb.log_start = 2 * JRNL_SB_AREA;
		break;
	case 8:
		sb.log_size += 100;
		break;
	case 9:
		sb.log_size = 1u << 20;
		break;
	}
	if (recrc)
		sb.crc = jrnl_crc32c(0, &sb, offsetof(struct jrnl_sb, crc));
	if (pwrite(fd, &sb, sizeof(sb), 0) != sizeof(sb))
		die("write superblock", -EIO);
}

int main(int argc, char **argv)
{
	static struct recpos recs[4096];
	const char *c, *path;
	uint64_t victim = 0;
	size_t n;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: mklog CASE PATH\n");
		return 2;
	}
	c = argv[1];
	path = argv[2];
	if (!strcmp(c, "zero") || !strcmp(c, "random")) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0)
			die(path, -errno);
		if (!strcmp(c, "random")) {
			static unsigned char rnd[1u << 20];

			for (size_t i = 0; i < sizeof(rnd); i += 256)
				if (getrandom(rnd + i, 256, 0) != 256)
					die("getrandom", -errno);
			if (write(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
				die("write", -errno);
		}
		close(fd);
		printf("records=0 checkpoints=0 victim_offset=0\n");
		return 0;
	}
	if (!strcmp(c, "nextseq"))
		return next_seq(path);
	if (!strcmp(c, "create512") || !strcmp(c, "create4096"))
		return open_case(path, DELOG_OPEN_CREATE, !strcmp(c, "create512") ? 512 : 4096);
	if (!strcmp(c, "openrw") || !strcmp(c, "openro"))
		return open_case(path, !strcmp(c, "openro") ? DELOG_OPEN_RDONLY : 0, 0);
	build(path, !strcmp(c, "clean"), !strcmp(c, "tailcorrupt") ? 11 : 0,
	      !strcmp(c, "corrupt100") ? NCKPT_LONG : NCKPT);
	fd = open(path, O_RDWR);
	if (fd < 0)
		die(path, -errno);
	n = find_records(fd, recs, sizeof(recs) / sizeof(recs[0]));
	if (n < 8)
		die("the test log has too few records", 0);
	if (!strcmp(c, "good") || !strcmp(c, "clean")) {
		/* nothing */
	} else if (!strcmp(c, "truncated")) {
		if (ftruncate(fd, JRNL_SB_AREA + LOG_BYTES / 2))
			die("truncate", -errno);
	} else if (!strcmp(c, "magic")) {
		sb_edit(fd, 0, false);
	} else if (!strcmp(c, "sbcrc")) {
		sb_edit(fd, 1, false);
	} else if (!strcmp(c, "version")) {
		sb_edit(fd, 2, true);
	} else if (!strcmp(c, "incompat")) {
		sb_edit(fd, 3, true);
	} else if (!strcmp(c, "geometry")) {
		sb_edit(fd, 4, true);
	} else if (!strcmp(c, "version0")) {
		sb_edit(fd, 6, true);
	} else if (!strcmp(c, "logstart")) {
		sb_edit(fd, 7, true);
	} else if (!strcmp(c, "logsize")) {
		sb_edit(fd, 8, true);
	} else if (!strcmp(c, "smalllog")) {
		sb_edit(fd, 9, true);
	} else if (!strcmp(c, "torn") || !strcmp(c, "corrupt") || !strcmp(c, "tailcorrupt")) {
		const struct recpos *rp = !strcmp(c, "torn") ? &recs[n - 1] : &recs[n / 2];
		uint64_t at = rp->off + (uint64_t)rp->h * SECTOR + 100;
		unsigned char b;

		if (pread(fd, &b, 1, (off_t)at) != 1)
			die("read", -errno);
		b ^= 0x5a;
		if (pwrite(fd, &b, 1, (off_t)at) != 1)
			die("write", -errno);
		victim = rp->off;
	} else if (!strcmp(c, "corrupt100")) {
		const struct recpos *rp = &recs[record_with_commit(fd, recs, n, 51)];
		uint64_t at = rp->off + (uint64_t)rp->h * SECTOR + 100;
		unsigned char b;

		if (pread(fd, &b, 1, (off_t)at) != 1)
			die("read", -errno);
		b ^= 0x5a;
		if (pwrite(fd, &b, 1, (off_t)at) != 1)
			die("write", -errno);
		victim = rp->off;
	} else if (!strcmp(c, "sector")) {
		sb_edit(fd, 5, true);
	} else if (!strcmp(c, "commitcont") || !strcmp(c, "lostcommit")) {
		size_t k = record_ending_in_commit(fd, recs, n);

		reseal(fd, &recs[k], !strcmp(c, "commitcont") ? edit_commitcont : edit_lostcommit);
		victim = recs[k].off;
	} else if (!strcmp(c, "foreign")) {
		reseal(fd, &recs[n / 2], edit_foreign);
		victim = recs[n / 2].off;
	} else if (!strcmp(c, "recversion")) {
		reseal(fd, &recs[n / 2], edit_version);
		victim = recs[n / 2].off;
	} else if (!strcmp(c, "oplen")) {
		reseal(fd, &recs[n / 2], edit_oplen);
		victim = recs[n / 2].off;
	} else if (!strcmp(c, "orphan")) {
		/* A record whose predecessor did not end with CONTINUE. */
		size_t k = n / 2;

		for (; k + 1 < n; k++) {
			unsigned char *buf = malloc((size_t)(recs[k - 1].h + recs[k - 1].p) *
						    SECTOR);
			size_t bytes = (size_t)(recs[k - 1].h + recs[k - 1].p) * SECTOR;
			struct jrnl_rec r;
			bool cont = false;
			uint64_t off = 0;

			if (!buf || pread(fd, buf, bytes, (off_t)recs[k - 1].off) != (ssize_t)bytes)
				die("read record", -EIO);
			jrnl_rec_unpack(buf, SECTOR);
			memcpy(&r, buf, sizeof(r));
			for (uint32_t i = 0; i < r.num_ops; i++) {
				struct jrnl_op op;

				memcpy(&op, buf + (size_t)r.hdr_sectors * SECTOR + off, sizeof(op));
				cont = op.flags & JRNL_OP_CONTINUE;
				off += sizeof(op) + ((op.len + 7u) & ~7u);
			}
			free(buf);
			if (!cont)
				break;
		}
		reseal(fd, &recs[k], edit_orphan);
		victim = recs[k].off;
	} else {
		fprintf(stderr, "mklog: unknown case '%s'\n", c);
		return 2;
	}
	if (fsync(fd) || close(fd))
		die("sync", -errno);
	printf("records=%zu checkpoints=%u victim_offset=%llu\n", n,
	       !strcmp(c, "corrupt100") ? NCKPT_LONG : NCKPT, (unsigned long long)victim);
	return 0;
}
