/*
 * jrnl.h - the journal layer's interface to the engine and tools (not installed).
 *
 * The journal owns delog's on-disk format (docs/FORMAT.md), the ring of log buffers and
 * recovery.  It reaches storage only through the iolayer (io.h).
 */
#ifndef DELOG_JRNL_H
#define DELOG_JRNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * CRC32c (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected, initial value and
 * final XOR 0xFFFFFFFF), computed by ISA-L.  jrnl_crc32c(0, "123456789", 9) ==
 * 0xE3069283.  Incremental: jrnl_crc32c(jrnl_crc32c(0, a, n), b, m) is the CRC of a||b.
 * Thread-safe.
 */
uint32_t jrnl_crc32c(uint32_t crc, const void *buf, size_t len);

/* ---- superblock and format ---- */

/* What the superblock says, decoded and checked. */
struct jrnl_geom {
	uint32_t version;
	uint32_t incompat;
	uint32_t sector;          /* bytes */
	uint64_t log_start;       /* bytes */
	uint64_t log_size;        /* bytes */
	uint64_t log_sectors;     /* log_size / sector */
	uint8_t uuid[16];
	uint64_t format_time;
};

/*
 * Read and check the superblock of @dev.  Errors, checked in this order:
 * DELOG_ETRUNCATED (device smaller than the superblock area, or than the log the
 * superblock describes), DELOG_ENOTLOG (bad magic: not a delog log, or zeroes),
 * DELOG_ECHECKSUM (superblock CRC), DELOG_EVERSION (newer format), DELOG_EFEATURE
 * (unknown incompatible bit), DELOG_ECORRUPT (impossible geometry), or an I/O -errno.
 * Thread-safe.
 */
int jrnl_sb_read(struct io_dev *dev, struct jrnl_geom *out);

struct jrnl_format_opts {
	uint32_t sector;          /* 512 or 4096; 0: 4096 */
	uint64_t log_size;        /* 0: the whole device after the superblock area */
	const uint8_t *uuid;      /* NULL: random */
};

/*
 * Format @dev: write zeroes over the whole log area (so every sector reads as cycle 0
 * and no O_DIRECT write later meets an unwritten extent), then the superblock, and make
 * both stable.  Returns 0 and the new geometry, -EINVAL for a bad sector size (or one
 * below the device's logical block) or a log too small for two maximal records, or an
 * I/O -errno.
 */
int jrnl_format(struct io_dev *dev, const struct jrnl_format_opts *opts, struct jrnl_geom *out);

/* ---- recovery (journal/recover.c) ---- */

/* A complete checkpoint, as recovery hands it over. */
struct jrnl_ckpt {
	uint64_t seq;             /* checkpoint sequence */
	uint64_t start_lsn;       /* record holding its START op */
	uint64_t commit_lsn;      /* record holding its COMMIT op */
	uint32_t nitems;
	uint64_t payload_bytes;   /* item bytes (jrnl_item headers + data) */
};

struct jrnl_item_view {
	uint64_t key;
	const void *data;         /* valid only during the callback */
	uint32_t len;
};

/* Called once per complete checkpoint, in log order.  Return 0 to go on; any other
 * value stops recovery, which returns it. */
typedef int (*jrnl_replay_fn)(void *priv, const struct jrnl_ckpt *ckpt,
			      const struct jrnl_item_view *items, size_t nitems);

struct jrnl_recover_opts {
	jrnl_replay_fn replay;    /* may be NULL: verify and report only */
	void *priv;
	bool read_only;           /* do not stamp the blocks past the head */
	size_t read_chunk;        /* bytes per chained read; 0: 4 MiB */
	unsigned reads_in_flight; /* chained reads kept in flight; 0: 2 (minimum 2) */
};

struct jrnl_report {
	bool empty;               /* freshly formatted: nothing ever written */
	bool clean;               /* last record is an unmount record */
	uint64_t head_lsn;        /* where the next record goes */
	uint64_t tail_lsn;        /* oldest LSN still needed (from the last good record) */
	uint64_t last_lsn;        /* last good record */
	uint64_t durable_lsn;     /* the last good record's durable_lsn */
	uint64_t records;         /* good records between tail and head */
	uint64_t checkpoints;     /* complete checkpoints replayed */
	uint64_t items;
	uint64_t bytes_replayed;  /* item payload bytes handed to the callback */
	uint64_t dropped;         /* incomplete checkpoints dropped at the head */
	uint64_t torn_bytes;      /* bytes at the head discarded as a torn write */
	uint64_t bytes_read;      /* log bytes read */
	uint64_t read_reqs;       /* device requests those reads were split into */
	int corruption;           /* 0, or the DELOG_E* code of the damage found */
	uint64_t corrupt_lsn;     /* where: the record's LSN ... */
	uint64_t corrupt_offset;  /* ... and its byte offset on the device */
	char corrupt_what[128];   /* what was wrong there */
};

/*
 * Recover the log on @dev (superblock already read into @g): find head and tail, verify
 * every record between them, reassemble checkpoints and hand the complete ones to
 * @o->replay in order, then (unless read_only) stamp the sectors past the head so a
 * later crash recovers the same state.  Fills @rep in every case.  Returns 0 (a torn
 * write at the head is not an error: it is reported in torn_bytes), the DELOG_E* code
 * of corruption found behind the torn-write window (nothing after it is replayed), the
 * callback's non-zero return, or an I/O -errno.  Idempotent.
 */
int jrnl_recover(struct io_dev *dev, const struct jrnl_geom *g, const struct jrnl_recover_opts *o,
		 struct jrnl_report *rep);

/* ---- the log writer: log-buffer ring (journal/log.c) ---- */

struct jrnl_log;

struct jrnl_log_opts {
	unsigned logbufs;         /* 2..8; 0: 8 */
	uint32_t logbsize;        /* 16 KiB..256 KiB, a power of two; 0: 256 KiB */
};

/* Flags for a log transaction, chosen by the engine's flush policy. */
#define JRNL_TX_FLUSH_START (1u << 0)  /* the buffer holding START goes out with PREFLUSH */
#define JRNL_TX_FLUSH_COMMIT (1u << 1) /* the buffer holding COMMIT goes out with PREFLUSH */
#define JRNL_TX_FUA_COMMIT (1u << 2)   /* ... and with FUA */
#define JRNL_TX_WAIT_PREV (1u << 3)    /* issue the COMMIT buffer only after every earlier
					* buffer of the log completed */

/* Completion of a transaction's commit record: called once, in LSN order, after the
 * buffer holding its COMMIT op (and every earlier buffer) completed; @err non-zero if
 * any of those writes failed. */
typedef void (*jrnl_done_fn)(void *priv, int err, uint64_t commit_lsn, uint64_t end_lsn);

/* A log transaction being written; filled by jrnl_tx_start, owned by the caller. */
struct jrnl_wtx {
	struct jrnl_log *log;
	uint32_t tid;
	uint64_t seq;
	unsigned flags;
	uint32_t nitems;
	uint32_t crc;
	uint64_t payload_bytes;
	uint64_t start_lsn;
};

int jrnl_log_open(struct io_dev *dev, const struct jrnl_geom *g, const struct jrnl_report *rec,
		  const struct jrnl_log_opts *opts, struct jrnl_log **out);
/* Write out what is buffered, wait for every write, free.  Does not write an unmount
 * record (jrnl_log_unmount does). */
int jrnl_log_close(struct jrnl_log *log);

/* Write a log transaction: START, items, COMMIT.  One transaction is written at a time
 * per log (the caller serialises); the ring's buffers fill, switch and go out as they
 * fill.  Errors: DELOG_ELOGFULL when the record would reach the tail, DELOG_ESHUTDOWN
 * after a write failed, -EINVAL for an item larger than 1 GiB. */
int jrnl_tx_start(struct jrnl_log *log, uint64_t seq, unsigned flags, struct jrnl_wtx *tx);
int jrnl_tx_item(struct jrnl_wtx *tx, uint64_t key, const void *data, uint32_t len);
int jrnl_tx_commit(struct jrnl_wtx *tx, jrnl_done_fn done, void *priv);

/* Push the current buffer out (if it holds anything) and wait until every buffer
 * written so far has completed.  Returns 0 or the first write error. */
int jrnl_log_force(struct jrnl_log *log);
/* Write an unmount record with PREFLUSH|FUA and wait for it. */
int jrnl_log_unmount(struct jrnl_log *log);

/* Space: the live region is [tail, head).  The engine moves the tail; the writer never
 * writes a record that would overwrite it. */
void jrnl_log_set_tail(struct jrnl_log *log, uint64_t tail_lsn);
uint64_t jrnl_log_head(const struct jrnl_log *log);
uint64_t jrnl_log_free_bytes(const struct jrnl_log *log);

#ifdef __cplusplus
}
#endif
#endif
