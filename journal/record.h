/*
 * record.h - sealing and checking one record (one log-buffer write); journal-internal.
 * docs/FORMAT.md describes the bytes; format.h defines them.
 */
#ifndef DELOG_JRNL_RECORD_H
#define DELOG_JRNL_RECORD_H

#include "format.h"
#include "jrnl.h"

/* ---- records (journal/record.c): one log-buffer write, see docs/FORMAT.md ---- */

/* Cycle carried by one sector of a record (header sector 0: after the magic). */
uint32_t jrnl_sector_cycle(const void *sector);

/* Header sectors a record written from a @bufsize-byte log buffer reserves, and the
 * payload sectors that remain (*payload may be NULL). */
uint32_t jrnl_rec_hdr_sectors_for(uint32_t sector, uint32_t bufsize, uint32_t *payload);

/* What the writer knows when it seals a record. */
struct jrnl_rec_fill {
	uint32_t cycle;       /* the record's cycle */
	uint32_t sector_no;   /* where header sector 0 goes (log sector) */
	uint64_t log_sectors; /* log size: sectors past the end wrap, stamped cycle+1 */
	uint64_t tail_lsn, durable_lsn, prev_lsn;
	uint32_t len; /* op bytes in the payload */
	uint32_t num_ops;
	uint32_t hdr_sectors; /* H: from jrnl_rec_hdr_sectors_for */
	uint32_t logbufs, logbsize;
	const uint8_t *uuid;
};

/*
 * Seal the record in @rec: (H + P) * @sector bytes, the op bytes already in place after
 * the H header sectors (P = ceil(len / sector), zero padding after len).  Fills the
 * header, moves each payload sector's first word into the saved-word array and stamps
 * the cycle (cycle + 1 for sectors that wrap), then sets the CRC.  Returns the record's
 * size in bytes.
 */
size_t jrnl_rec_seal(void *rec, uint32_t sector, const struct jrnl_rec_fill *f);

/* Why jrnl_rec_check refused a record. */
enum jrnl_rec_verdict {
	JRNL_REC_OK = 0,
	JRNL_REC_NOT_HEADER, /* no record magic / impossible header: not a record */
	JRNL_REC_FOREIGN,    /* uuid differs: another log's record */
	JRNL_REC_VERSION,    /* record from a newer format */
	JRNL_REC_SHORT,      /* the record runs past the bytes available */
	JRNL_REC_TORN,       /* a sector carries the wrong cycle: not fully written */
	JRNL_REC_CRC,        /* CRC mismatch with every sector's cycle right */
	JRNL_REC_GEOMETRY,   /* this log's header (magic, uuid) whose layout does not fit
				   * the sector size or the log: no crash writes one; written
				   * under another geometry */
	JRNL_REC_MISPLACED,  /* this log's header, fitting it, whose lsn names another
				   * sector: a copy of another record's header (a torn write
				   * that reads back another sector's bytes), not a record */
};

/*
 * Check the record at @rec (@avail bytes readable from there; a record that wraps must
 * have been read back contiguously, end part first) against the log's @uuid and
 * @log_sectors, and the sector @sector_no it was read from.  Does not modify @rec.
 * On JRNL_REC_OK, *@hdr points at the header.
 */
enum jrnl_rec_verdict jrnl_rec_check(const void *rec, size_t avail, uint32_t sector,
				     uint64_t log_sectors, uint32_t sector_no,
				     const uint8_t uuid[16], const struct jrnl_rec **hdr);

/* Put the saved words back into the payload sectors of a checked record, in place;
 * afterwards the payload (at rec + H * sector) holds len bytes of ops. */
void jrnl_rec_unpack(void *rec, uint32_t sector);

#endif
