/*
 * format.h - delog's on-disk format, byte by byte.  docs/FORMAT.md says the same in
 * prose; the two must change together.  Changing anything here changes the format:
 * bump JRNL_FORMAT_VERSION, or add an incompatible-feature bit, and record it under
 * "Format" in the changelog.
 *
 * All integers are little-endian.  Sizes and offsets are fixed by the static_asserts at
 * the end of this file.
 *
 * Device layout
 *   [0, 4096)                  superblock (struct jrnl_sb in its first 512 bytes, the
 *                              rest zero), written at format time only.
 *   [log_start, log_start + log_size)
 *                              the circular log, addressed in sectors of sb.sector_size
 *                              bytes from log_start.  log_start = 4096.
 *
 * LSN = cycle << 32 | sector.  Cycles start at 1 and grow by one each time the head
 * passes the physical end; cycle 0 means "never written" (format zeroes the log).  A
 * cycle never takes the value JRNL_REC_MAGIC (it is skipped) so a header sector and a
 * payload sector cannot be confused.
 *
 * Records (one log-buffer write).  A record is H header sectors followed by P payload
 * sectors, H and P in the first header sector.  Every sector of a record carries the
 * record's cycle in a known word, so a sector that a crash left unwritten or torn shows
 * an older cycle:
 *   header sector 0      bytes 0-3 magic, 4-7 cycle (struct jrnl_rec)
 *   header sector j > 0  bytes 0-3 cycle, then saved words (struct jrnl_rec_ext)
 *   payload sector i     bytes 0-3 cycle; the 4 bytes of op data that belong there are
 *                        saved in the header, slot i of the saved-word array.
 * The saved-word array starts in header sector 0 at JRNL_REC_SAVED_OFF and continues
 * in each extension sector after its cycle word.  H is the smallest count whose slots
 * hold P words.
 *
 * A record that wraps the physical end of the log is written as two device writes; the
 * sectors that land at the start of the log are stamped cycle + 1 (skipping the magic).
 * The header keeps the record's own cycle and LSN (its first sector).
 *
 * Record CRC (CRC32c, jrnl_crc32c): over the H header sectors with the crc field taken
 * as zero, then the P payload sectors, exactly as they lie on disk (after stamping).
 * A record is valid iff: magic, version and UUID match, H and P agree with len, the
 * CRC matches, and every sector carries the expected cycle.
 *
 * Ops (inside the reassembled payload: the P payload sectors with their saved words
 * restored, the first rec.len bytes).  Each op is a 16-byte struct jrnl_op followed by
 * op.len bytes, padded to 8 bytes.  A checkpoint is one log transaction (one tid):
 *   START   op {tid, len 16, flags START, type START}: struct jrnl_start
 *   ITEM    op {type ITEM}: struct jrnl_item (key, data_len) then data_len bytes, may be
 *           split: the piece in one record has CONTINUE, the rest starts the next
 *           record as {WAS_CONT | CONTINUE} ... {WAS_CONT | END}
 *   COMMIT  op {flags COMMIT, type COMMIT}: struct jrnl_commit, whose crc covers the
 *           item ops' payloads (jrnl_item header + key + data, unpadded) in order
 * An UNMOUNT op {flags UNMOUNT, type UNMOUNT, struct jrnl_unmount} alone in a record
 * marks a clean shutdown.
 */
#ifndef DELOG_JRNL_FORMAT_H
#define DELOG_JRNL_FORMAT_H

#include "jrnl.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define JRNL_SB_MAGIC 0x31425347474f4c44ull /* bytes "DLOGGSB1" */
#define JRNL_FORMAT_VERSION 1u
#define JRNL_LOG_START JRNL_SB_AREA /* bytes reserved for the superblock (jrnl.h) */

/* Incompatible features: a reader that sees a bit it does not know refuses the log
 * (DELOG_EFEATURE).
 *   WINDOW  the superblock's window field is the log's unflushed bound (L13).  Without
 *           it the bound is jrnl_window_legacy's; a reader that assumed that bound on a
 *           log written with a larger one would search too little of it for the head. */
#define JRNL_INCOMPAT_WINDOW 0x1u
#define JRNL_INCOMPAT_KNOWN JRNL_INCOMPAT_WINDOW

#define JRNL_REC_MAGIC 0x474f4c44u /* bytes "DLOG" */
#define JRNL_REC_SAVED_OFF 128u    /* saved words start here in header sector 0 */

/* The writer's unflushed bound (journal/log.c L13), which is recovery's scan window
 * (journal/recover.c): a record is submitted only if it ends at most the log's window
 * past the end of the log known stable.  So after a power cut every sector more than
 * the window before the furthest write is stable, and nothing the last session wrote
 * lies further past the durable point.  The window is fixed at format (jrnl_geom
 * window_sectors): JRNL_UNFLUSHED_MAX, or half the log if smaller, unless the superblock
 * names another (JRNL_INCOMPAT_WINDOW).  A larger window lets a large checkpoint go out
 * with fewer flushes; recovery reads and stamps one window around the head.
 * docs/FORMAT.md, "Bounds recovery relies on". */
#define JRNL_UNFLUSHED_MAX (8u * (256u << 10))
/* A named window's range, and jrnl_format's default: jrnl.h, JRNL_WINDOW_MIN. */

/* The ring's limits and JRNL_SB_AREA: jrnl.h. */

/* ---- superblock: bytes 0-511 of the device ---- */
struct jrnl_sb {
	uint64_t magic;        /* 00-07 JRNL_SB_MAGIC */
	uint32_t version;      /* 08-11 JRNL_FORMAT_VERSION; newer: DELOG_EVERSION */
	uint32_t incompat;     /* 12-15 unknown bit: DELOG_EFEATURE */
	uint32_t compat;       /* 16-19 features an old reader may ignore */
	uint32_t sector_size;  /* 20-23 512 or 4096; >= the device's logical block, and
				* written only where >= its physical block (jrnl_sector_check) */
	uint64_t log_start;    /* 24-31 byte offset of the log area (4096) */
	uint64_t log_size;     /* 32-39 bytes in the log area, a multiple of sector_size */
	uint8_t uuid[16];      /* 40-55 identifies this log; every record repeats it */
	uint64_t format_time;  /* 56-63 seconds since the epoch (informational) */
	uint64_t window;       /* 64-71 bytes: the unflushed bound with JRNL_INCOMPAT_WINDOW,
				* else zero */
	uint8_t reserved[436]; /* 72-507 zero */
	uint32_t crc;          /* 508-511 CRC32c of bytes 0-507 */
};

/* ---- record header sector 0 ---- */
struct jrnl_rec {
	uint32_t magic;           /* 00-03 JRNL_REC_MAGIC */
	uint32_t cycle;           /* 04-07 cycle of this record (its first sector) */
	uint32_t version;         /* 08-11 JRNL_FORMAT_VERSION */
	uint32_t len;             /* 12-15 op bytes in the payload (<= P * sector) */
	uint64_t lsn;             /* 16-23 LSN of header sector 0 */
	uint64_t tail_lsn;        /* 24-31 oldest LSN recovery still needs when written */
	uint64_t durable_lsn;     /* 32-39 end LSN of the log known stable when written */
	uint64_t prev_lsn;        /* 40-47 LSN of the previous record (0 for the first) */
	uint32_t crc;             /* 48-51 CRC32c, see above */
	uint32_t num_ops;         /* 52-55 op headers that start in this record */
	uint32_t hdr_sectors;     /* 56-59 H */
	uint32_t payload_sectors; /* 60-63 P */
	uint8_t uuid[16];         /* 64-79 the superblock's uuid */
	uint32_t logbufs;         /* 80-83 writer's log buffer count (in-flight window) */
	uint32_t logbsize;        /* 84-87 writer's log buffer size in bytes */
	uint8_t reserved[40];     /* 88-127 zero */
				  /* 128-: saved words (uint32_t) of payload sectors 0, 1, ... */
};

/* ---- record header sector j > 0 ---- */
struct jrnl_rec_ext {
	uint32_t cycle; /* 00-03 the record's cycle */
			/* 04-: saved words, continuing the array */
};

/* ---- ops ---- */
#define JRNL_OP_START 0x01u    /* first op of a log transaction */
#define JRNL_OP_COMMIT 0x02u   /* last op: the transaction is complete */
#define JRNL_OP_CONTINUE 0x04u /* this payload continues in the next record */
#define JRNL_OP_WAS_CONT 0x08u /* this payload continues one from the previous record */
#define JRNL_OP_END 0x10u      /* last piece of a continued payload */
#define JRNL_OP_UNMOUNT 0x20u  /* clean-unmount marker */
#define JRNL_OP_FLAGS_KNOWN 0x3fu

enum jrnl_op_type {
	JRNL_T_START = 1,
	JRNL_T_ITEM = 2,
	JRNL_T_COMMIT = 3,
	JRNL_T_UNMOUNT = 4,
};

struct jrnl_op {
	uint32_t tid;      /* 00-03 log transaction id (one per checkpoint) */
	uint32_t len;      /* 04-07 payload bytes that follow (this piece) */
	uint16_t flags;    /* 08-09 JRNL_OP_* */
	uint16_t type;     /* 10-11 enum jrnl_op_type */
	uint32_t reserved; /* 12-15 zero */
};

struct jrnl_start {        /* payload of a START op */
	uint64_t seq;      /* 00-07 checkpoint sequence */
	uint64_t reserved; /* 08-15 zero */
};

struct jrnl_item {         /* head of an ITEM payload */
	uint64_t key;      /* 00-07 the item's key */
	uint32_t data_len; /* 08-11 bytes of data after the header */
	uint32_t reserved; /* 12-15 zero */
};

struct jrnl_commit {            /* payload of a COMMIT op */
	uint64_t seq;           /* 00-07 checkpoint sequence (matches START) */
	uint64_t start_lsn;     /* 08-15 LSN of the record holding the START op */
	uint32_t nitems;        /* 16-19 ITEM ops in the checkpoint */
	uint32_t crc;           /* 20-23 CRC32c over the item payloads, in order */
	uint64_t payload_bytes; /* 24-31 bytes the crc covers */
};

#define JRNL_UNMOUNT_MAGIC 0x544e554f4d4e55ull /* bytes "UNMOUNT" */
struct jrnl_unmount {
	uint64_t magic;    /* 00-07 JRNL_UNMOUNT_MAGIC */
	uint64_t reserved; /* 08-15 zero */
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	      "the on-disk format is little-endian and this code reads it in place");
static_assert(sizeof(struct jrnl_sb) == 512, "superblock is one 512-byte sector");
static_assert(offsetof(struct jrnl_sb, uuid) == 40, "sb uuid offset");
static_assert(offsetof(struct jrnl_sb, window) == 64, "sb window offset");
static_assert(offsetof(struct jrnl_sb, crc) == 508, "sb crc offset");
static_assert(sizeof(struct jrnl_rec) == JRNL_REC_SAVED_OFF, "record header fixed part");
static_assert(offsetof(struct jrnl_rec, crc) == 48, "record crc offset");
static_assert(offsetof(struct jrnl_rec, uuid) == 64, "record uuid offset");
static_assert(sizeof(struct jrnl_rec_ext) == 4, "extension header fixed part");
static_assert(sizeof(struct jrnl_op) == 16, "op header");
static_assert(sizeof(struct jrnl_start) == 16, "start payload");
static_assert(sizeof(struct jrnl_item) == 16, "item header");
static_assert(sizeof(struct jrnl_commit) == 32, "commit payload");
static_assert(sizeof(struct jrnl_unmount) == 16, "unmount payload");

/* LSN helpers. */
static inline uint64_t jrnl_lsn(uint32_t cycle, uint32_t sector)
{
	return (uint64_t)cycle << 32 | sector;
}
static inline uint32_t jrnl_lsn_cycle(uint64_t lsn)
{
	return (uint32_t)(lsn >> 32);
}
static inline uint32_t jrnl_lsn_sector(uint64_t lsn)
{
	return (uint32_t)lsn;
}

/* The cycle after @c, skipping 0 and the record magic. */
static inline uint32_t jrnl_cycle_next(uint32_t c)
{
	c++;
	if (c == JRNL_REC_MAGIC)
		c++;
	if (c == 0)
		c = 1;
	return c;
}

/* The LSN @n sectors after @lsn in a log of @log_sectors; each pass over the physical
 * end moves to the next cycle. */
static inline uint64_t jrnl_lsn_add(uint64_t lsn, uint64_t n, uint64_t log_sectors)
{
	uint64_t sec = jrnl_lsn_sector(lsn) + n;
	uint32_t cycle = jrnl_lsn_cycle(lsn);

	while (sec >= log_sectors) {
		sec -= log_sectors;
		cycle = jrnl_cycle_next(cycle);
	}
	return jrnl_lsn(cycle, (uint32_t)sec);
}

/* The unflushed bound in sectors of a log whose superblock names none:
 * JRNL_UNFLUSHED_MAX, at most half the log (a log of the smallest size, 2 x
 * JRNL_MAX_LOGBUFS x JRNL_MAX_LOGBSIZE, has exactly that).  Half the log keeps most of
 * recovery's probes outside the window (recover.c R11). */
static inline uint64_t jrnl_window_legacy(uint64_t log_sectors, uint32_t sector)
{
	uint64_t w = JRNL_UNFLUSHED_MAX / sector;

	return w < log_sectors / 2 ? w : log_sectors / 2;
}

/* Saved-word slots in H header sectors of @sector bytes. */
static inline uint32_t jrnl_rec_slots(uint32_t sector, uint32_t h)
{
	return h ? (sector - JRNL_REC_SAVED_OFF) / 4 + (h - 1) * ((sector - 4) / 4) : 0;
}

/* Header sectors needed for P payload sectors. */
static inline uint32_t jrnl_rec_hdr_sectors(uint32_t sector, uint32_t p)
{
	uint32_t first = (sector - JRNL_REC_SAVED_OFF) / 4, ext = (sector - 4) / 4;

	return p <= first ? 1 : 1 + (p - first + ext - 1) / ext;
}

#endif
