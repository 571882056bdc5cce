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
	uint32_t sector;      /* bytes */
	uint64_t log_start;   /* bytes */
	uint64_t log_size;    /* bytes */
	uint64_t log_sectors; /* log_size / sector */
	uint8_t uuid[16];
	uint64_t format_time;
	uint64_t window_sectors; /* the unflushed bound (log.c L13, format.h), which
				  * recovery searches and stamps around the head */
};

/*
 * Read and check the superblock of @dev.  Errors, checked in this order:
 * DELOG_ETRUNCATED (device smaller than the superblock area), DELOG_ENOTLOG (bad magic:
 * not a delog log, or zeroes), DELOG_ECHECKSUM (superblock CRC), DELOG_EVERSION (newer
 * format), DELOG_EFEATURE (unknown incompatible bit), DELOG_ECORRUPT (version 0 or an
 * impossible geometry), DELOG_ETRUNCATED (device smaller than the log the superblock
 * describes), or an I/O -errno.  Thread-safe.
 */
int jrnl_sb_read(struct iol_dev *dev, struct jrnl_geom *out);

/* Why jrnl_sb_read_why refused a superblock: the one place that says it, for the engine's
 * delog_open and the tools alike. */
struct jrnl_sb_why {
	uint64_t offset;   /* byte offset of the refused field (the device's size when the
			    * device is too small) */
	const char *field; /* static: the field as docs/FORMAT.md names it ("sb.version"),
			    * "" when no one field is refused (a device too small) */
	char what[256];    /* the field's value and what it must be ("sector_size 1024: must
			    * be 512 or 4096"), or what was found ("the first 4096 bytes are
			    * zero (never formatted?)"); "" for an I/O error */
};

/* jrnl_sb_read, and on a refusal @why (may be NULL) says where and what; on success or
 * an I/O error @why->field and @why->what are "". */
int jrnl_sb_read_why(struct iol_dev *dev, struct jrnl_geom *out, struct jrnl_sb_why *why);

struct jrnl_format_opts {
	uint32_t sector;     /* 512 or 4096; 0: 4096 */
	uint64_t log_size;   /* 0: the whole device after the superblock area */
	const uint8_t *uuid; /* NULL: random */
	/* The unflushed bound in bytes: 0 for the default (a 64th of the log, between 2 MiB
	 * and 64 MiB, at most half the log); else a multiple of the sector in
	 * [JRNL_WINDOW_MIN, log_size / 2].  A window other than the legacy one (format.h
	 * jrnl_window_legacy) sets JRNL_INCOMPAT_WINDOW. */
	uint64_t window;
	/* May be NULL: called after each chunk of the zero-fill with the bytes written so
	 * far and the total (a multi-GiB log takes seconds; `delog format` shows it). */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
};

/*
 * Format @dev: write zeroes over the whole log area (so every sector reads as cycle 0
 * and no O_DIRECT write later meets an unwritten extent), then the superblock, and make
 * both stable.  Returns 0 and the new geometry, -EINVAL for a bad sector size (or one
 * below the device's logical block), a log too small for two maximal records or a
 * window outside its range,
 * DELOG_EGEOMETRY for a sector jrnl_sector_check refuses (nothing written), or an I/O
 * -errno.
 */
int jrnl_format(struct iol_dev *dev, const struct jrnl_format_opts *opts, struct jrnl_geom *out);

/*
 * May a log of @sector-byte sectors be written on @dev?  A sector is never smaller than
 * the device's physical block: the device writes whole physical blocks, so a write torn
 * inside one could garble log sectors written before the record in flight, which the
 * crash model does not cover and recovery would take for corruption.  0 when it may
 * (also when the physical block is unknown, iol_geom.physical_block 0); else
 * DELOG_EGEOMETRY, and the reason, naming both sizes, in @why (may be NULL) of @len
 * bytes.  jrnl_format and jrnl_log_open refuse what this refuses; the engine and the
 * tools call it first for the message, and before recovery that may stamp.
 */
int jrnl_sector_check(struct iol_dev *dev, uint32_t sector, char *why, size_t len);

/* ---- recovery (journal/recover.c) ---- */

/* A complete checkpoint, as recovery hands it over. */
struct jrnl_ckpt {
	uint64_t seq;        /* checkpoint sequence */
	uint64_t start_lsn;  /* record holding its START op */
	uint64_t commit_lsn; /* record holding its COMMIT op */
	uint32_t nitems;
	uint64_t payload_bytes; /* item bytes (jrnl_item headers + data) */
};

struct jrnl_item_view {
	uint64_t key;
	const void *data; /* valid only during the callback */
	uint32_t len;
};

/* Called once per complete checkpoint, in log (commit) order, on the thread that called
 * jrnl_recover, only once the whole log was verified (recover.c R9: a first pass reads
 * it without the callback).  Return 0 to go on; any other value stops recovery, which
 * returns it (and stamps nothing). */
typedef int (*jrnl_replay_fn)(void *priv, const struct jrnl_ckpt *ckpt,
			      const struct jrnl_item_view *items, size_t nitems);

/* A record as recovery verified it (for `delog print`): what its header says. */
struct jrnl_rec_view {
	uint64_t lsn, tail_lsn, durable_lsn, prev_lsn;
	uint64_t offset; /* device byte offset of its header sector 0 */
	uint32_t cycle, len, num_ops, hdr_sectors, payload_sectors, crc, logbufs, logbsize;
	bool wraps; /* split at the physical end of the log */
};

/* One op header of a verified record, with its payload piece in this record. */
struct jrnl_op_view {
	uint64_t rec_lsn;     /* the record holding it */
	uint64_t offset;      /* device byte offset of the op header */
	uint32_t idx;         /* op index in its record */
	uint32_t tid, len;    /* len: payload bytes of this piece */
	uint16_t flags, type; /* JRNL_OP_*, enum jrnl_op_type (format.h) */
	const void *data;     /* the piece's len bytes; valid only during the callback */
};

/* Observers: called on the recovering thread, in log order, each record after its CRC,
 * cycles and back link were verified and before its ops are parsed, each op once its
 * header lies within the record and carries known type and flags (before its meaning is
 * checked, so a malformed op is seen just before recovery reports it).  Non-zero stops
 * recovery like the replay callback's. */
typedef int (*jrnl_rec_fn)(void *priv, const struct jrnl_rec_view *rec);
typedef int (*jrnl_op_fn)(void *priv, const struct jrnl_op_view *op);

struct jrnl_recover_opts {
	jrnl_replay_fn replay;    /* may be NULL: verify and report only */
	void *priv;               /* passed to replay, on_record and on_op */
	jrnl_rec_fn on_record;    /* may be NULL */
	jrnl_op_fn on_op;         /* may be NULL */
	bool read_only;           /* write nothing: no stamping past the head, no flush */
	bool count_stamp;         /* with read_only: count in stamp_needed what stamping
				   * would rewrite (reads past the head, writes nothing) */
	size_t read_chunk;        /* bytes per chained read; 0: 4 MiB; clamped to
				   * [1 MiB, 256 MiB], rounded down to IOL_SEG_BYTES */
	unsigned reads_in_flight; /* chained reads kept in flight; 0: 2 (minimum 2,
				   * maximum 16); one more buffer is being parsed */
	/* Point in time: 0 hands over every complete checkpoint; N only those of
	 * sequence <= N.  The log is verified whole all the same (a damaged log still
	 * fails); the complete checkpoints after N are counted in held_back, not in
	 * checkpoints, items or bytes_replayed, and never reach replay. */
	uint64_t replay_to;
	/* Follow (recover.c R15): a reader that has read the log before passes the lsn of
	 * the record holding the last COMMIT it took, and the sequence it wants next.  The
	 * main pass starts at that record when the tail has not passed it (report.followed),
	 * else at the tail; checkpoints before replay_from are verified, never handed over
	 * nor counted.  0, 0: the whole log, every checkpoint. */
	uint64_t follow_lsn;
	uint64_t replay_from;
	/* Salvage (recover.c R12): damage met between the tail and the head, or proved
	 * past the head, ends the log there instead of failing it: the complete
	 * checkpoints before it are handed over, 0 is returned with salvaged set and the
	 * damage in corruption and corrupt_*.  Implies read_only (nothing is stamped).
	 * Damage that leaves no head or tail to start from is refused as without it. */
	bool salvage;
	/* Live (recover.c R13): a writer may be writing the log while it is read.  A
	 * record past the head that says the log was stable beyond it is the writer's
	 * progress, not damage; damage found before anything was handed over makes the
	 * run start over, at most JRNL_LIVE_TRIES runs in all, and then (or when it was
	 * found while handing over) fails -EAGAIN.  A read_only or salvage run sets it
	 * itself when another open holds the device's writer lock (iol_dev_writer).  A
	 * live run that writes nothing (read_only, salvage) reads a copy of the log area
	 * made in one sweep, so its passes agree, unless the log is larger than
	 * JRNL_LIVE_COPY_MAX or live_in_place is set: then it reads the device, and damage
	 * met while handing over fails -EAGAIN at once. */
	bool live;
	bool live_in_place;
	/* With a replay callback (and no observer), the bytes the first pass may keep of
	 * the verified checkpoints (item bytes, 24 a view and a small header each), so
	 * that they are handed over from memory and the log is read once
	 * (recover_hold.c); a log needing more is read twice, as with 1.  0:
	 * JRNL_HOLD_DEFAULT. */
	uint64_t hold_bytes;
};

/* The default hold_bytes: 1 GiB, or an eighth of the machine's memory if less. */
uint64_t jrnl_hold_default(void);

/* Runs of a live recovery before it gives up (-EAGAIN), and the largest log a live
 * run copies into memory (recover.c R13). */
#define JRNL_LIVE_TRIES 8
#define JRNL_LIVE_COPY_MAX (64ull << 20)

struct jrnl_report {
	bool empty;           /* no valid record: the next record goes at lsn 1/0
				   * (torn_bytes says whether a first write was lost) */
	bool clean;           /* last record is an unmount record */
	uint64_t head_lsn;    /* where the next record goes */
	uint64_t tail_lsn;    /* oldest LSN still needed (from the last good record) */
	uint64_t last_lsn;    /* last good record (0 if none) */
	uint64_t durable_lsn; /* the last good record's durable_lsn; head_lsn once the
				   * stamping's flush made everything before the head stable */
	uint64_t records;     /* good records between tail and head */
	uint64_t checkpoints; /* complete checkpoints replayed */
	uint64_t items;
	uint64_t bytes_replayed;      /* item data bytes handed to the callback */
	uint64_t dropped;             /* incomplete checkpoints dropped at the head */
	uint64_t torn_bytes;          /* bytes between the head and where the cycles put it,
				   * discarded as a torn write */
	uint64_t bytes_read;          /* log bytes read */
	uint64_t read_reqs;           /* device requests those reads were split into */
	unsigned max_reads_in_flight; /* most chained reads outstanding at once */
	uint64_t stamped_bytes;       /* bytes stamped past the head (0 when read_only) */
	uint64_t stamp_needed;        /* read_only with count_stamp: the bytes stamping
				   * would have rewritten (0: a writing run writes nothing
				   * but its flush); 0 otherwise */
	int corruption;               /* 0, or the DELOG_E* code of the damage found */
	uint64_t corrupt_lsn;         /* where: the record's LSN (the head's, for damage at
				   * the head proved by a later record) ... */
	uint64_t corrupt_offset;      /* ... and the byte offset on the device of the damaged
				   * sector or op ... */
	const char *corrupt_field;    /* ... the field found wrong, as docs/FORMAT.md names
				   * it ("rec.crc", "op.type", "commit.seq"), "" when no
				   * one field is (static; never NULL once jrnl_recover ran) */
	char corrupt_what[128];       /* what was wrong there */
	uint64_t first_seq, last_seq; /* of the checkpoints counted in checkpoints (0: none) */
	uint64_t held_back;           /* complete checkpoints after replay_to: verified, not
				   * handed over */
	bool followed;                /* the main pass started at follow_lsn's record (R15) */
	uint64_t held_peak;           /* bytes held between the passes, at most (hold_bytes) */
	bool reread;                 /* the checkpoints were handed over by a second read of the log
			     * (more than hold_bytes of them, or an observer) */
	uint64_t unreadable_sectors; /* sectors the device failed to read (-EIO), each read
				   * as unknown (recover.c R14) ... */
	uint64_t unreadable_offset;  /* ... the byte offset of the lowest of them */
	unsigned anchor_probes;      /* probes inside a valid record that anchored the head
				   * search, or 0 ... */
	bool anchor_scanned;         /* ... when the probes could not, and the whole log was
				   * read for its highest valid record (recover.c R11) */
	/* Salvage only: damage ended the log early (R12).  corruption and corrupt_* say
	 * what and where; salvage_lsn and salvage_offset are the start of the record where
	 * the kept log ends (the damaged record, or the head when a record past it proved
	 * the head damaged); salvage_bytes the log bytes dropped from there to the end of
	 * the last valid record recovery saw.  lost_commits counts the COMMIT ops of
	 * checkpoints after the last verified one that a record-level scan of that region
	 * sees (valid records only; their checkpoints are not verified, and dropped), the
	 * lowest and highest of their sequences in lost_first_seq, lost_last_seq. */
	bool salvaged;
	uint64_t salvage_lsn, salvage_offset, salvage_bytes;
	uint64_t lost_commits, lost_first_seq, lost_last_seq;
	/* Numbering: the sequences this log may have given out, which a log replacing it
	 * must number past (docs/FORMAT.md, "Salvage").  0 means none, in each.
	 * verified_seq: the last complete checkpoint verified (handed over or held back).
	 * started_seq: the highest START in a verified record, a checkpoint left open
	 * included.  Salvage only: lost_high_seq, the highest START or COMMIT seq in a
	 * valid record after the damage; damaged_seq, the highest one still readable in
	 * the damaged record (CRC failed) that is plausible: the record has room for a
	 * COMMIT op of each sequence between the last verified or started one and it.
	 * high_seq: the largest of them all. */
	uint64_t verified_seq, started_seq, lost_high_seq, damaged_seq, high_seq;
};

/*
 * Recover the log on @dev (superblock already read into @g): find head and tail, verify
 * every record between them, reassemble checkpoints and hand the complete ones to
 * @o->replay in order, then (unless read_only) stamp the sectors past the head so a
 * later crash recovers the same state.  Fills @rep in every case.  Idempotent: a second
 * run replays the same checkpoints and reports the same head, tail and counts (only
 * torn_bytes, stamped_bytes and the read counters differ, since the first run's stamping
 * erased the torn write).  Not thread-safe against other users of the log area.
 *
 * A damaged record that starts at or after the durable point (the largest durable_lsn
 * of any valid record) is a torn write: the head moves back to it, nothing is reported
 * but torn_bytes, and 0 is returned.  Anything else is an error, with report.corruption,
 * corrupt_lsn, corrupt_offset, corrupt_field and corrupt_what set; no checkpoint was
 * handed to the replay callback (report.checkpoints counts those verified before the
 * damage):
 *   DELOG_ECHECKSUM  a record's CRC fails behind the durable point, or a checkpoint's
 *                    item crc differs from its COMMIT's
 *   DELOG_ECORRUPT   a record behind the durable point is not completely written (a
 *                    sector carries the wrong cycle), has no valid header, is from the
 *                    wrong lap or breaks the prev_lsn chain; a record past the head
 *                    proves the head's damage was stable data; a COMMIT's seq,
 *                    start_lsn, nitems or payload_bytes disagree with the log; a tail_lsn
 *                    outside the log; cycles of the log's end sectors inconsistent;
 *                    no valid record in a log that has wrapped
 *   DELOG_EFOREIGN   a record carries another log's uuid (anywhere: format zeroes the
 *                    log, so no crash leaves one)
 *   DELOG_EVERSION   a record of a newer format version
 *   DELOG_EBADOP     in a record whose CRC holds: an op header or payload running past
 *                    the record's len, unknown type or flags, non-zero reserved bits,
 *                    flags that do not fit the type, a wrong payload size, CONTINUE not
 *                    on the record's last op, bytes after
 *                    the last op, START of an open tid, more than 256 open transactions
 *   DELOG_EORPHAN    a WAS_CONT op that continues nothing (not first in its record, or
 *                    the previous record did not end with CONTINUE of that tid and
 *                    type), or a COMMIT whose START lies inside [tail, head) unseen
 *   DELOG_EGEOMETRY  a header of this log that does not fit the superblock's sector or
 *                    log size, or no valid record while the first one reads back under
 *                    the other sector size (nothing is stamped)
 * and DELOG_ECORRUPT also for complete checkpoints whose sequences are not consecutive,
 * a checkpoint left open behind a later committed one of another sequence, and a log
 * with no valid record but writes beyond the first window;
 * or the callback's non-zero return, -EINVAL (bad geometry), -ENOMEM, an I/O -errno, or
 * -EAGAIN for a live log that changed under every run (@o->live, recover.c R13; the
 * report's corruption is -EAGAIN and corrupt_what says what the last run found); and,
 * unless read_only or salvage, DELOG_EGEOMETRY before anything is read when
 * jrnl_sector_check refuses the log's sector on @dev (report.corruption 0: the log is not
 * damaged, the device cannot take its writes).
 * Ops of a transaction whose START lies before the tail (already written back) are
 * skipped, not replayed.
 *
 * With @o->salvage (recover.c R12) the damage above, when met between the tail and the
 * head or proved past the head, ends the log instead: the complete checkpoints whose
 * COMMIT precedes it are handed over, a checkpoint open there counts in dropped, the
 * rest of the log is dropped (salvage_bytes, lost_commits), and 0 is returned with
 * report.salvaged and report.corruption set.  Nothing is stamped.  What stops recovery
 * before it has a head and a tail (no valid record, a last record naming a tail
 * outside the log, a foreign or newer record met while settling the head, the checks of
 * a log with no valid record) fails as without salvage.
 */
int jrnl_recover(struct iol_dev *dev, const struct jrnl_geom *g, const struct jrnl_recover_opts *o,
		 struct jrnl_report *rep);

/* ---- the log writer: log-buffer ring (journal/log.c) ---- */

/*
 * The writer packs log transactions into a ring of log buffers, one record per buffer
 * (docs/FORMAT.md), and writes each buffer through the iolayer once it is switched out.
 * Completions are processed strictly in LSN order whatever order the device completes
 * them in.  journal/log.c's top comment has the state machine and its invariants.
 *
 * When a buffer is switched out (becomes a record and is written):
 *  - when the next op or op piece does not fit in it, or fewer than 24 bytes (an op
 *    header and 8 bytes) remain after an op;
 *  - at jrnl_tx_commit when the transaction has JRNL_TX_FLUSH_COMMIT or JRNL_TX_FUA_COMMIT;
 *    otherwise the commit stays in the open buffer so later transactions share it (group
 *    commit) until it fills or is forced;
 *  - by jrnl_log_force, jrnl_log_unmount and jrnl_log_close.
 * Buffers are submitted in LSN order; a buffer held back by JRNL_TX_WAIT_PREV holds back
 * the ones after it too.
 *
 * Threads: one writer at a time calls jrnl_tx_*, jrnl_log_unmount (the caller
 * serialises them).  jrnl_log_force, jrnl_log_switch, jrnl_log_flush, jrnl_log_set_tail,
 * jrnl_log_head, jrnl_log_free_bytes, jrnl_log_tx_bytes and jrnl_log_stats may be called
 * from any thread at any time; jrnl_log_close once no other call is running.
 */

struct jrnl_log;

/* The ring's limits (jrnl_log_opts), and the bytes of a device before its log area (the
 * superblock's, format.h). */
#define JRNL_MIN_LOGBUFS 2u
#define JRNL_MAX_LOGBUFS 8u
#define JRNL_MIN_LOGBSIZE (16u << 10)
#define JRNL_MAX_LOGBSIZE (256u << 10)
#define JRNL_SB_AREA 4096u
/* A window named at format (jrnl_format_opts.window, format.h JRNL_INCOMPAT_WINDOW) lies
 * in [JRNL_WINDOW_MIN, half the log], a multiple of the sector.  The least holds the
 * largest record with its header sectors, so a record always fits.  The default is a
 * 64th of the log, from 2 MiB (format.h JRNL_UNFLUSHED_MAX) to JRNL_WINDOW_DEFAULT_MAX. */
#define JRNL_WINDOW_MIN (2u * JRNL_MAX_LOGBSIZE)
#define JRNL_WINDOW_DEFAULT_MAX (64u << 20)

struct jrnl_log_opts {
	unsigned logbufs;  /* JRNL_MIN_LOGBUFS..JRNL_MAX_LOGBUFS; 0: the most */
	uint32_t logbsize; /* JRNL_MIN_LOGBSIZE..JRNL_MAX_LOGBSIZE, a power of two; 0: the
			    * largest */
	bool no_flush;     /* the caller never makes the log durable (the unsafe
				   * `none` policy): space is reused once the record naming
				   * the tail completed, and no flush is ever issued (L12,
				   * L13 in log.c) */
	bool read_only;    /* the caller never hands it a record (a read-only open's
			    * writer, kept for its statistics): no sector check */
};

/* Flags for a log transaction, chosen by the engine's flush policy. */
#define JRNL_TX_FLUSH_START (1u << 0)  /* the buffer holding START goes out with PREFLUSH */
#define JRNL_TX_FLUSH_COMMIT (1u << 1) /* the buffer holding COMMIT goes out with PREFLUSH */
#define JRNL_TX_FUA_COMMIT (1u << 2)   /* ... and with FUA */
#define JRNL_TX_WAIT_PREV                                                                          \
	(1u << 3) /* if the transaction spans buffers (START in an
					* earlier buffer than COMMIT), issue the COMMIT buffer
					* only after every earlier buffer of the log completed
					* (XFS since 5.18); no effect on a single-buffer one */
#define JRNL_TX_FLUSH_SPAN                                                                         \
	(1u << 4) /* the COMMIT buffer goes out with PREFLUSH only if
					* the transaction spans buffers */
#define JRNL_TX_FLAGS_KNOWN 0x1fu

/*
 * Completion of a transaction's commit record: called once, in LSN order, after the
 * buffer holding its COMMIT op (and every earlier buffer) completed; @err is the first
 * error of that write or any earlier one (0 if they all succeeded).  @commit_lsn is the
 * LSN of the record holding the COMMIT op, @end_lsn the LSN just past that record.
 * Called iff jrnl_tx_commit returned 0.  Runs with no journal lock held, on an iolayer
 * completion thread (or, once the log is shut down or a submission was refused, on the
 * thread that found it: a writer, a force or close; or on the thread of the
 * jrnl_log_force that wrote the buffer itself, see below).  It may call jrnl_log_set_tail,
 * jrnl_log_head, jrnl_log_free_bytes, jrnl_log_stats and jrnl_log_flush_async; it must
 * not call jrnl_tx_*, jrnl_log_force, jrnl_log_flush, jrnl_log_unmount or jrnl_log_close.
 */
typedef void (*jrnl_done_fn)(void *priv, int err, uint64_t commit_lsn, uint64_t end_lsn);

/* A log transaction being written; filled by jrnl_tx_start, owned by the caller, which
 * may reuse it once jrnl_tx_commit returned. */
struct jrnl_wtx {
	struct jrnl_log *log;
	uint32_t tid; /* nonzero; random start, one per transaction */
	uint64_t seq;
	unsigned flags;
	uint32_t nitems;
	uint32_t crc; /* running CRC32c of the item payloads */
	uint64_t payload_bytes;
	uint64_t start_lsn; /* record holding the START op */
	uint64_t grant;     /* grant held for it (jrnl_grant_ckpt_begin), set by the caller
			     * after jrnl_tx_start; jrnl_tx_commit hands it back (GR6) */
};

/*
 * Open the writer on @dev (geometry @g from jrnl_sb_read) at the place recovery left:
 * the head at @rec->head_lsn, the tail at @rec->tail_lsn, the first record's prev_lsn
 * @rec->last_lsn, durable_lsn starting at @rec->durable_lsn.  @rec NULL or @rec->empty:
 * a freshly formatted log (head and tail at cycle 1 sector 0, prev_lsn 0).  @opts may be
 * NULL (defaults).  Allocates logbufs O_DIRECT buffers of logbsize bytes.  Returns 0,
 * -EINVAL (bad opts, a geometry the device cannot address, a log smaller than twice
 * logbufs x logbsize, or a report whose head and tail are not within one lap),
 * DELOG_EGEOMETRY (a sector jrnl_sector_check refuses on this device, unless
 * @opts->read_only), or -ENOMEM.
 */
int jrnl_log_open(struct iol_dev *dev, const struct jrnl_geom *g, const struct jrnl_report *rec,
		  const struct jrnl_log_opts *opts, struct jrnl_log **out);
/* Force (write out what is buffered, wait for every write and its callbacks), then free.
 * Does not write an unmount record (jrnl_log_unmount does).  Returns the force's result
 * (0 or the log's first error); the log is freed either way.  NULL is a no-op. */
int jrnl_log_close(struct jrnl_log *log);

/*
 * Write a log transaction: START, items, COMMIT.  One transaction is written at a time
 * per log (the caller serialises); the ring's buffers fill, switch and go out as they
 * fill, and a call may block until a buffer completes and returns to the ring.
 * Errors: DELOG_ELOGFULL when the op would not fit before the tail (nothing of that op
 * is written; the transaction is abandoned: what it already wrote stays in the log
 * without a COMMIT, which recovery discards, and the caller starts a new transaction
 * once the tail moved), DELOG_ESHUTDOWN after a write or flush failed, -EINVAL for
 * unknown flags, a NULL data pointer with a non-zero length or an item larger than 1 GiB.
 * Op payloads: START jrnl_start{seq}; ITEM jrnl_item{key, len} + data; COMMIT
 * jrnl_commit{seq, start_lsn, nitems, crc, payload_bytes} where crc chains jrnl_crc32c
 * from 0 over each item's jrnl_item header and data (unpadded), in order.
 */
/* The largest item jrnl_tx_item takes (and delog_tx_log: "len > 1 GiB" is -EINVAL). */
#define JRNL_MAX_ITEM (1u << 30)

int jrnl_tx_start(struct jrnl_log *log, uint64_t seq, unsigned flags, struct jrnl_wtx *tx);
int jrnl_tx_item(struct jrnl_wtx *tx, uint64_t key, const void *data, uint32_t len);
/* @done may be NULL (no completion callback).  Hands tx->grant back, whatever it
 * returns, under the lock that puts COMMIT into a buffer (grant.c GR6). */
int jrnl_tx_commit(struct jrnl_wtx *tx, jrnl_done_fn done, void *priv);

/* Switch the open buffer out (if it holds anything; after the op in progress, if any)
 * and wait until every buffer switched so far has completed and had its callbacks run.
 * Completion, not durability: durability comes from the transactions' flags or
 * jrnl_log_flush.  The buffer it switches is written on the calling thread when no
 * other thread is submitting (one blocking write instead of a hand-off to a completion
 * thread and back; journal/log.c L10), so its done callbacks may run on this thread (a
 * force waits for them anyway, so its caller can hold no lock they take).  Returns 0 or
 * the log's first error. */
int jrnl_log_force(struct jrnl_log *log);
/* jrnl_log_force without the wait: switch the open buffer out (after the op in
 * progress, if any) and submit what may go out.  The writes complete later; done
 * callbacks of buffers already done may run on this thread (as in jrnl_log_force), so
 * its caller may hold no lock they take. */
void jrnl_log_switch(struct jrnl_log *log);
/* Issue a device cache flush and wait for it: afterwards every buffer that had completed
 * when it was issued is durable (durable_lsn moves up to that point).  Does not push or
 * wait for buffers (jrnl_log_force first for "everything written so far").  The flush
 * is iol_submit_wait: an fdatasync on the calling thread on the descriptor backends.  A
 * failed flush shuts the log down.  Returns 0 or the log's first error. */
int jrnl_log_flush(struct jrnl_log *log);
/* jrnl_log_flush without the wait: the flush is submitted now (covering every buffer
 * that had completed by then) and @fn(@priv, err) runs once it is done, with no journal
 * lock held, on an iolayer completion thread (or on this thread if the submission was
 * refused or the log is already shut down).  durable_lsn has moved before @fn runs; a
 * failed flush shuts the log down first.  Always calls @fn exactly once; returns 0, or
 * the error @fn was (or will be) given when it is known at once.  The caller must keep
 * whatever @fn touches alive until it ran (jrnl_log_close does not wait for it). */
typedef void (*jrnl_flush_fn)(void *priv, int err);
int jrnl_log_flush_async(struct jrnl_log *log, jrnl_flush_fn fn, void *priv);
/* Force, then write a record holding a single UNMOUNT op with PREFLUSH|FUA once every
 * earlier buffer completed, and wait for it.  Writes nothing if the log already ends in a
 * durable unmount record naming the current tail (recovery found it clean, or an earlier
 * call wrote it) and no record was written since (log.c L15).  Writer-side call
 * (serialised with jrnl_tx_*).  Returns 0, DELOG_ELOGFULL (no room for the record:
 * nothing written), or the log's first error. */
int jrnl_log_unmount(struct jrnl_log *log);

/*
 * Space: the live region is [tail, head).  The engine moves the tail forward (a value
 * below the current tail is ignored, one past the head is taken as the head); the writer
 * never writes a record that would overwrite the live region, and always keeps one
 * sector free so that head and tail on the same sector mean an empty live region.
 * jrnl_log_head: where the next record goes (the open buffer's record, if it holds
 * anything).  jrnl_log_free_bytes: log bytes a record may still take, the open buffer's
 * record counted as used (a record needs its header sectors out of this too).
 */
void jrnl_log_set_tail(struct jrnl_log *log, uint64_t tail_lsn);
/* A record may overwrite only what lies before the tail named by the newest durable
 * record (log.c L12), so space freed by jrnl_log_set_tail is reusable (counted by
 * jrnl_log_free_bytes) only once a record sealed after it is durable.  Normal traffic
 * does that; jrnl_log_cover does it when nothing else will (a writer waiting for space):
 * force, write an empty record if no completed record names the current tail, force,
 * flush.  jrnl_log_cover_wanted: would it free anything?  Any thread; the cover waits
 * for an op in progress like jrnl_log_force.  Returns 0 or the log's first error. */
bool jrnl_log_cover_wanted(const struct jrnl_log *log);
/* The log's first I/O error (L8), 0 while there is none; whenever a jrnl_* call returned
 * DELOG_ESHUTDOWN it is set.  Any thread, no lock taken (safe from a done callback). */
int jrnl_log_error(const struct jrnl_log *log);
int jrnl_log_cover(struct jrnl_log *log);
uint64_t jrnl_log_head(const struct jrnl_log *log);
uint64_t jrnl_log_free_bytes(const struct jrnl_log *log);
/* An upper bound of the log bytes (record headers, padding and continuation headers
 * included) that one transaction with @nitems items of @item_bytes data bytes in total
 * takes, provided no jrnl_log_force switches a buffer between its ops; each such force
 * may cost up to (header sectors + 1) sectors more.  For the engine's reservations. */
uint64_t jrnl_log_tx_bytes(const struct jrnl_log *log, uint32_t nitems, uint64_t item_bytes);

/*
 * ---- Log space promised ahead of writing (grant.c) ----
 *
 * The grant: bytes promised to open transactions (their reservations) and to committed
 * work not yet written (its charges), counted against jrnl_log_free_bytes less a slack,
 * under the log's own lock, as XFS keeps its grant heads in the log.  The layer above
 * says what only it knows through two hooks, called with no journal lock held:
 *   reclaim: a reservation does not fit: free what can be freed without the application
 *            (a flush for written-back items, a cover record, a push of the committed
 *            work); JRNL_GRANT_RETRY when it did something (try again at once),
 *            JRNL_GRANT_WAIT when only a later event frees space (the caller waits for
 *            jrnl_grant_wake or a grant returned), or a negative code to fail with.
 *            @nowait: a DELOG_TX_NOWAIT caller, which must not wait for I/O it starts.
 *   busy:    can anything but the waiters' own commits free space (grant.c GR5)?
 */
#define JRNL_GRANT_NOWAIT (1u << 0)  /* fail with -EAGAIN instead of waiting */
#define JRNL_GRANT_GROW (1u << 1)    /* an open transaction asks for more (GR5) */
#define JRNL_GRANT_TICKET (1u << 2)  /* a new transaction: open until jrnl_grant_done */
#define JRNL_GRANT_RESERVE (1u << 3) /* may take the reserve too (GR8) */
#define JRNL_GRANT_RETRY 1
#define JRNL_GRANT_WAIT 0
struct jrnl_grant_ops {
	int (*reclaim)(void *priv, bool nowait);
	bool (*busy)(void *priv);
	/* The first space event after a NOWAIT reservation was refused (grant.c GR7), with
	 * the log's lock held: must not block or call into the journal.  May be NULL. */
	void (*space_event)(void *priv);
};
/* Set the grant up with its hooks, once, before the first reservation (@ops lives as
 * long as the log). */
void jrnl_grant_init(struct jrnl_log *log, const struct jrnl_grant_ops *ops, void *priv);
/* Keep @bytes back from reservations without JRNL_GRANT_RESERVE (GR8), at most a quarter
 * of the log (more is taken as a quarter).  A smaller reserve is a space event. */
void jrnl_grant_set_reserve(struct jrnl_log *log, uint64_t bytes);
/* Take @bytes of grant, waiting for space unless JRNL_GRANT_NOWAIT.  0, -EAGAIN (NOWAIT,
 * or the reclaim hook's), -EDEADLK (JRNL_GRANT_GROW: every open transaction waits for
 * space only their own commits could free, GR5), DELOG_ESHUTDOWN, or the hook's code.
 * With JRNL_GRANT_TICKET the transaction counts as open from the call on, and stays
 * open only if the call returned 0. */
int jrnl_grant_reserve(struct jrnl_log *log, uint64_t bytes, unsigned flags);
/* A transaction ends: its @reserved bytes go back, @charge (the bytes its commit added
 * to the committed work, possibly negative for a relog that shrank it; 0 for an abort)
 * stays promised until jrnl_grant_ckpt_end.  Wakes the waiters. */
void jrnl_grant_done(struct jrnl_log *log, uint64_t reserved, int64_t charge);
/* Committed work of @charged bytes is about to be written as one transaction of
 * @nitems items of @item_bytes: the grant grows to its exact upper bound
 * (jrnl_log_tx_bytes) if the charges fell short.  Returns what is now held for it: set
 * it as the transaction's jrnl_wtx.grant, and jrnl_tx_commit hands it back once the
 * head counts the bytes, before the checkpoint can complete (GR6); a writer that does
 * not reach jrnl_tx_commit hands it back with jrnl_grant_ckpt_end. */
uint64_t jrnl_grant_ckpt_begin(struct jrnl_log *log, uint32_t nitems, uint64_t item_bytes,
			       uint64_t charged);
void jrnl_grant_ckpt_end(struct jrnl_log *log, uint64_t held);
/* Something the hooks read changed (a release, an item written back, a checkpoint
 * durable): waiters look again.  Any thread, no lock held. */
void jrnl_grant_wake(struct jrnl_log *log);
/* The layer above shut down: every waiter and later reservation fails DELOG_ESHUTDOWN. */
void jrnl_grant_shutdown(struct jrnl_log *log);
/* Bytes a new reservation may still take (0 when none); all that is promised, and the
 * blocking reservations that found no space at once. */
uint64_t jrnl_grant_avail(struct jrnl_log *log);
void jrnl_grant_stats(struct jrnl_log *log, uint64_t *granted, uint64_t *waits);
/* The grant an item of @len data bytes costs once committed (GR3), the grant behind a
 * transaction reserving @reserve bytes of items (delog.h DELOG_ITEM_OVERHEAD per item),
 * and the largest grant one transaction may hold (a reservation of a quarter of the
 * log).  Pure functions of the log's geometry. */
uint64_t jrnl_grant_item_cost(const struct jrnl_log *log, uint64_t len);
uint64_t jrnl_grant_tx_cost(const struct jrnl_log *log, uint64_t reserve);
uint64_t jrnl_grant_tx_max(const struct jrnl_log *log);

struct jrnl_log_stats {
	uint64_t head_lsn, tail_lsn;
	uint64_t completed_lsn; /* end of the prefix of records that completed, in LSN order */
	uint64_t durable_lsn;   /* end of the prefix known stable (see log.c, (L6)) */
	uint64_t records;       /* records submitted */
	uint64_t record_bytes;  /* their bytes (headers and padding included) */
	uint64_t preflush_writes, fua_writes; /* writes with PREFLUSH / FUA (wrapped: 2 FUA) */
	uint64_t flushes;                     /* jrnl_log_flush calls that reached the device */
	uint64_t wraps;                       /* records split at the physical end of the log */
	uint64_t wait_prev_holds;             /* times a WAIT_PREV buffer waited for earlier ones */
	uint64_t buffer_waits;     /* times the writer waited for a buffer to come back */
	uint32_t hdr_sectors;      /* H of every record of this writer */
	uint32_t payload_capacity; /* op bytes one buffer holds */
	/* Of flushes, the ones for log space, not for a caller's records: the unflushed
	 * window's (L13) and jrnl_log_cover's (L12). */
	uint64_t bound_flushes, cover_flushes;
};
void jrnl_log_stats(const struct jrnl_log *log, struct jrnl_log_stats *out);

#ifdef __cplusplus
}
#endif
#endif
