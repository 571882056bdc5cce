/*
 * record.c - the record checker (journal/record.c, jrnl_rec_check) where a record header
 * and a superblock look alike, 512- and 4096-byte sectors.  The superblock's magic
 * ("DLOGGSB1") begins with the record's ("DLOG"), so header sector 0 of a record whose
 * cycle is 0x31425347 ("GSB1") begins with the superblock's eight magic bytes.  Such a
 * record of this log is a record, never taken for a superblock copy; a
 * superblock copy, and such a record of another log, are no record (NOT_HEADER).
 *
 * Records are built with jrnl_rec_seal, the superblock with jrnl_format on a sim disk.
 */
#include <criterion/criterion.h>
#include <delog.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "io_sim.h"
#include "jrnl.h"
#include "record.h"

#define LOG4M (4ull << 20)
#define LOGBSIZE (32u << 10)

/* The cycle whose bytes are the superblock magic's second half, "GSB1". */
#define GSB1_CYCLE ((uint32_t)(JRNL_SB_MAGIC >> 32))

static const uint8_t UUID[16] = { 0x5b, 0x31, 0xc2, 0x07, 0x9e, 0x44, 0x4d, 0x1a,
				  0xa3, 0x6f, 0x10, 0x28, 0xd5, 0x7c, 0x02, 0xe9 };
static const uint8_t OTHER[16] = { 0xa4, 0x31, 0xc2, 0x07, 0x9e, 0x44, 0x4d, 0x1a,
				   0xa3, 0x6f, 0x10, 0x28, 0xd5, 0x7c, 0x02, 0xe9 };
static const uint32_t SECTORS[2] = { 512, 4096 };

/* A sim disk with a log of 4 MiB formatted on it, uuid UUID. */
static struct iol_dev *dev_format(uint32_t S, struct jrnl_geom *g)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = JRNL_LOG_START + LOG4M,
				   .sector = S,
				   .seed = 7 };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct jrnl_format_opts fo = { .sector = S, .log_size = LOG4M, .uuid = UUID };
	struct iol_dev *dev;

	cr_assert_eq(iol_dev_open(NULL, &o, &dev), 0);
	cr_assert_eq(jrnl_format(dev, &fo, g), 0);
	cr_assert_eq(g->log_sectors, LOG4M / S);
	return dev;
}

/* Seal in @rec (LOGBSIZE bytes) a record of @len op bytes with cycle @cycle and @uuid,
 * at @sector_no of a log of @N sectors; returns its size in bytes.  The op bytes are a
 * pattern: the checker reads the CRC over them, not their meaning. */
static size_t seal(unsigned char *rec, uint32_t S, uint64_t N, uint32_t cycle, uint32_t sector_no,
		   uint32_t len, const uint8_t *uuid)
{
	uint32_t pmax, h = jrnl_rec_hdr_sectors_for(S, LOGBSIZE, &pmax);
	uint64_t lsn = jrnl_lsn(cycle, sector_no);
	struct jrnl_rec_fill f = { .cycle = cycle,
				   .sector_no = sector_no,
				   .log_sectors = N,
				   .tail_lsn = lsn,
				   .durable_lsn = lsn,
				   .prev_lsn = 0,
				   .len = len,
				   .num_ops = 1,
				   .hdr_sectors = h,
				   .logbufs = 8,
				   .logbsize = LOGBSIZE,
				   .uuid = uuid };

	cr_assert_leq(len, (uint64_t)pmax * S);
	memset(rec, 0, LOGBSIZE);
	for (uint32_t i = 0; i < len; i++)
		rec[(size_t)h * S + i] = (unsigned char)(i * 13 + 5);
	return jrnl_rec_seal(rec, S, &f);
}

/* A record of this log whose cycle reads as "GSB1" is a record: its uuid is the log's,
 * and a superblock has zeroes there.  At the log's first sector, inside it, and at its
 * last sector, where the record wraps and its later sectors carry the next cycle. */
Test(record, gsb1_cycle_of_this_log_is_ok)
{
	for (int s = 0; s < 2; s++) {
		uint32_t S = SECTORS[s];
		uint64_t N = LOG4M / S;
		uint32_t at[3] = { 0, (uint32_t)(N / 2), (uint32_t)(N - 1) };
		unsigned char *rec = malloc(LOGBSIZE);

		cr_assert(rec);
		for (int i = 0; i < 3; i++) {
			size_t bytes = seal(rec, S, N, GSB1_CYCLE, at[i], 3 * S + 100, UUID);
			const struct jrnl_rec *hdr = NULL;
			enum jrnl_rec_verdict v;

			/* The test is only worth its name if the header begins as a superblock
			 * does. */
			cr_assert(!memcmp(rec, &(uint64_t){ JRNL_SB_MAGIC }, sizeof(uint64_t)));
			v = jrnl_rec_check(rec, bytes, S, N, at[i], UUID, &hdr);
			cr_assert_eq(v, JRNL_REC_OK, "sector %u, record at %u: verdict %d", S,
				     at[i], v);
			cr_assert_eq((const void *)hdr, (const void *)rec);
			cr_assert_eq(hdr->cycle, GSB1_CYCLE);
		}
		free(rec);
	}
}

/* A superblock, as jrnl_format writes it, read at a record position is no record:
 * NOT_HEADER, not another log's record (FOREIGN) and not a record (OK).  Whichever uuid
 * the checker is given, since a superblock carries none where a record does. */
Test(record, superblock_at_record_position_is_not_header)
{
	for (int s = 0; s < 2; s++) {
		uint32_t S = SECTORS[s];
		struct jrnl_geom g;
		struct iol_dev *dev = dev_format(S, &g);
		uint64_t N = g.log_sectors;
		uint32_t at[3] = { 0, (uint32_t)(N / 2), (uint32_t)(N - 1) };
		unsigned char *sb = iol_buf_alloc(dev, S);

		cr_assert(sb);
		cr_assert_eq(iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), 0, sb, S, NULL), 0);
		cr_assert(!memcmp(sb, &(uint64_t){ JRNL_SB_MAGIC }, sizeof(uint64_t)));
		for (int i = 0; i < 3; i++) {
			enum jrnl_rec_verdict v;

			v = jrnl_rec_check(sb, S, S, N, at[i], g.uuid, NULL);
			cr_assert_eq(v, JRNL_REC_NOT_HEADER, "sector %u, at %u: verdict %d", S,
				     at[i], v);
			v = jrnl_rec_check(sb, S, S, N, at[i], OTHER, NULL);
			cr_assert_eq(v, JRNL_REC_NOT_HEADER,
				     "sector %u, at %u, other uuid: verdict %d", S, at[i], v);
		}
		free(sb);
		cr_assert_eq(iol_dev_close(dev), 0);
	}
}

/* Another log's record whose cycle reads as "GSB1" is NOT_HEADER, as a superblock copy
 * is: once the uuid failed, the eight magic bytes decide.  The same record
 * with any other cycle stays FOREIGN, so the magic alone makes the difference. */
Test(record, gsb1_cycle_of_another_log_is_not_header)
{
	for (int s = 0; s < 2; s++) {
		uint32_t S = SECTORS[s];
		uint64_t N = LOG4M / S;
		uint32_t at[3] = { 0, (uint32_t)(N / 2), (uint32_t)(N - 1) };
		unsigned char *rec = malloc(LOGBSIZE);

		cr_assert(rec);
		for (int i = 0; i < 3; i++) {
			size_t bytes = seal(rec, S, N, GSB1_CYCLE, at[i], 3 * S + 100, OTHER);
			enum jrnl_rec_verdict v;

			v = jrnl_rec_check(rec, bytes, S, N, at[i], UUID, NULL);
			cr_assert_eq(v, JRNL_REC_NOT_HEADER, "sector %u, record at %u: verdict %d",
				     S, at[i], v);
			/* Its own log takes it: only the uuid refused it. */
			cr_assert_eq(jrnl_rec_check(rec, bytes, S, N, at[i], OTHER, NULL),
				     JRNL_REC_OK);
			bytes = seal(rec, S, N, jrnl_cycle_next(GSB1_CYCLE), at[i], 3 * S + 100,
				     OTHER);
			v = jrnl_rec_check(rec, bytes, S, N, at[i], UUID, NULL);
			cr_assert_eq(v, JRNL_REC_FOREIGN, "sector %u, record at %u: verdict %d", S,
				     at[i], v);
		}
		free(rec);
	}
}
