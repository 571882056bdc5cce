/*
 * log.c - the log writer: a ring of in-memory log buffers, the XFS iclog design.
 *
 * Each buffer holds one record (docs/FORMAT.md): H header sectors, then the op bytes the
 * writer packs behind them.  When a buffer is switched out, the head moves past its
 * record; once nobody copies into it any more it is sealed (jrnl_rec_seal: header,
 * saved words, cycle stamping, CRC) and written through the iolayer.  The device may
 * complete the writes in any order; completions are processed in LSN order.
 *
 * Buffer states (struct logbuf.state), in ring order:
 *
 *            writer reserves and copies ops; jrnl_tx_commit leaves it open
 *           +--------+
 *           | ACTIVE |<--------------------------------------------------+
 *           +--------+                                                   |
 *               | lb_switch: full, commit with FLUSH/FUA, force,         |
 *               | unmount, shutdown.  The head moves past the record.    |
 *               v                                                        |
 *         +-----------+  log_push: oldest unsubmitted, no op in it,      |
 *         | WANT_SYNC |  (WAIT_PREV: every earlier buffer completed)     |
 *         +-----------+                                                  |
 *               | seal + iol_submit (lock dropped)                        |
 *               v                                                        |
 *          +---------+                                                   |
 *          | SYNCING |  write(s) in flight; a wrapped record's second     |
 *          +---------+  part goes out when the first part completed      |
 *               | lb_end_io (iolayer thread)     (after a shutdown,      |
 *               v                                 WANT_SYNC -> DONE_SYNC |
 *         +-----------+                           with the error)        |
 *         | DONE_SYNC |                                                  |
 *         +-----------+                                                  |
 *               | log_process: it is the oldest buffer not ACTIVE        |
 *               v                                                        |
 *         +----------+  done callbacks run, lock dropped                 |
 *         | CALLBACK |---------------------------------------------------+
 *         +----------+  reset, back to ACTIVE, waiters woken
 *
 * Invariants:
 *  (L1) Done callbacks run in LSN order, once each: a buffer's callbacks run only when
 *       it is the oldest buffer not ACTIVE, i.e. every earlier buffer has completed and
 *       had its callbacks run.  Only the thread holding log->processing runs callbacks,
 *       and never with log->lock held.
 *  (L2) A record never overwrites the live region [tail, head): before the first byte
 *       of an op is reserved, plan_op() computes how far the whole op (and every record
 *       it touches) moves the end of the log and refuses (DELOG_ELOGFULL) if that would
 *       leave less than one free sector before the tail.  The tail only moves forward,
 *       and nothing but the writer moves the head while an op is in progress (a force
 *       waits for op_busy to clear), so the plan stays true while the op is copied.
 *  (L3) Buffers are switched in ring order, so ring order is LSN order; they are
 *       submitted in that order too (log->next_sub), by one thread at a time
 *       (log->submitting).  Only a WANT_SYNC buffer is submitted, and a buffer becomes
 *       WANT_SYNC only when no op is being copied into it (single writer; a force or a
 *       shutdown switches only between ops).
 *  (L4) A buffer flagged wait_prev (JRNL_TX_WAIT_PREV on a transaction spanning buffers)
 *       is submitted only once completed_lsn reached its LSN: every earlier buffer
 *       completed.  With its PREFLUSH that makes all of them stable before its COMMIT.
 *  (L5) completed_lsn is the end of the prefix of records that completed successfully;
 *       done_lsn the end of the prefix that was processed (callbacks run), successfully
 *       or not.  Both move only in log_process, in LSN order.
 *  (L6) durable_lsn only grows, and only on evidence: a PREFLUSH write or jrnl_log_flush
 *       snapshots completed_lsn when it is submitted and, once it completed, makes that
 *       snapshot durable; a FUA write processed when durable_lsn already reached its
 *       start makes its end durable.  (PREFLUSH|FUA alone does not: a write still in
 *       flight when the flush was issued is not covered.)
 *  (L7) A record's tail_lsn is the tail when it is sealed, but never more than its own
 *       LSN; prev_lsn is the LSN of the record before it; durable_lsn is durable_lsn at
 *       seal time.
 *  (L8) After the first I/O error (log->error) nothing more is submitted: every buffer
 *       not yet submitted goes to DONE_SYNC with the error; every buffer processed after
 *       a failed one reports the first error to its callbacks (log->cb_err); jrnl_tx_*
 *       return DELOG_ESHUTDOWN; jrnl_log_force returns the error.
 *  (L9) An op piece is never empty: an op is split only when it does not fit, and only
 *       if at least an op header and 8 bytes fit (else the buffer is switched first); the
 *       piece left in this buffer is a multiple of 8, so the continuation keeps > 0
 *       bytes.  START, COMMIT and UNMOUNT ops are never split.
 *  (L10) jrnl_log_force writes the buffer it switched itself, on its own thread, when it
 *       holds the submitting token and that buffer is the newest switched one
 *       (log_push_mode, lb_write_sync: iol_submit_wait, which the descriptor backends
 *       perform on the calling thread).  The force waits for that write anyway; done
 *       this way a lone forcer (the engine's single policy at one client: force, then
 *       jrnl_log_flush) makes one pwritev2 and one fdatasync with no thread hand-off,
 *       where the reaper's wake-up and the forcer's cost ~10 context switches per
 *       commit.  Nothing else changes: the buffer is submitted in LSN order under the
 *       token (L3), only after earlier WANT_SYNC buffers were submitted (async, still
 *       free to complete in any order), it ends DONE_SYNC with the write's status like
 *       lb_finish (an error shuts the log down, L8), and its callbacks run in LSN order
 *       from log_process (L1), on the force's thread or on a completion thread that
 *       holds the processing token.  While the token holder is in the write, a buffer
 *       another thread switches waits for it (the holder re-checks after every
 *       submission): one write's latency, no lost submission.
 *  (L12) Space is reused only behind a durable tail.  A record names the tail current
 *       when it was sealed; recovery reads from the tail named by the last valid record
 *       it finds, which may be any record from the newest durable one on (everything
 *       after that can be lost).  So a record may overwrite only what lies before
 *       durable_tail, the tail named by the newest record known durable (its snapshot is
 *       taken with durable_lsn's: completed_tail at a flush's submission, a FUA record's
 *       own), never what lies before the engine's newer tail (log->tail) until a record
 *       naming it is durable.  Were it otherwise, a torn head (a later record of a
 *       checkpoint written over released space, an earlier one lost) would overwrite
 *       the start of the region the surviving record sends recovery to.  jrnl_log_cover
 *       makes log->tail durable when nothing else would: a record (an empty one if
 *       nothing is buffered) and a flush.  plan_op keeps the header sectors of such a
 *       record free, so a cover always fits.  With no_flush (the unsafe `none` policy,
 *       which never flushes) completion stands in for durability here.
 *  (L13) The unflushed bound: a record is submitted only if it ends at most `window`
 *       sectors past durable_lsn, the log's window fixed at format (jrnl_geom
 *       window_sectors, format.h).  Otherwise it waits while the earlier records
 *       complete and a flush issued for them (bound_flush) makes them durable.
 *       Recovery relies on it: every sector more than the window before the furthest
 *       write is stable, and its stamping past the head covers every record the crashed
 *       session may have left there.  Checkpoints larger than the window therefore cost
 *       a flush per window or more (a flush covers only the records complete when it
 *       was issued), which is why a large log gets a large window.  Not with no_flush.
 *  (L14) Flush results are taken in issue order, for every pairing of standalone flushes
 *       (jflush) and flagged records (PREFLUSH and/or FUA, whose flush the device or the
 *       flush gate performs).  After a failed flush the device cache is unknown: a
 *       device may drop what the failed flush covered (the sim's flush_fail_drops), so
 *       a later flush's success proves nothing for those writes.  Hence:
 *        - standalone after standalone: a flush's result is taken (durable_lsn moved,
 *          or the log failed, then its caller told) only once every flush issued
 *          before it was taken (the queue, flush_resolve);
 *        - flagged after standalone: a flagged record's evidence and callbacks wait
 *          for the standalone flushes issued before it (fl_before, log_process);
 *        - standalone after flagged: a flush's result is taken only once every flagged
 *          record submitted before it was processed (rec_before <= done_lsn), so a
 *          failed PREFLUSH/FUA record has failed the log first: the flush J issued
 *          after a record b can ride a later gate generation than b's, which may
 *          succeed while b's fails, and b's error reaches the log on another thread;
 *        - flagged after flagged: LSN order (L1), and cb_err.
 *       Once the log failed every later flush reports that error, and no record's
 *       callbacks hear success (cb_err).  So no acknowledgement, durable point or tail
 *       rests on a flush that ran after one whose failure is still unseen.
 *  (L11) jrnl_log_flush_async is jrnl_log_flush split in two: completed_lsn is taken and
 *       the flush submitted under the same rules (it covers what completed before it was
 *       submitted), durable_lsn moves (or the log fails) in its completion, then the
 *       caller's callback runs with no lock held.  Flushes in flight together may
 *       complete in any order; durable_lsn only ever moves up (lsn_max).  close waits
 *       until none is in flight (async_flushes).
 *  (L15) An unmount record is written only if the log does not end in one already:
 *       clean_head and clean_tail say that the log ends at clean_head in a durable
 *       unmount record naming clean_tail (recovery found it clean, or jrnl_log_unmount
 *       wrote it); a record switched out (lb_switch) or a tail moved (jrnl_log_set_tail)
 *       makes that untrue.  jrnl_log_unmount with head and tail still at those values
 *       writes nothing: the media already hold what it would establish (every record
 *       durable, the last an unmount record naming this tail), and a second record
 *       would only take space.  Opening and closing a log with nothing written in
 *       between so leaves it as it was: the records behind the tail that the engine
 *       keeps (space.c S1) can never fill up with one unmount record per open.
 *  (L16) Space events.  Whenever a record may take more than before (the durable tail
 *       moved, or under no_flush the completed tail), the tail was set (a cover record
 *       may then free space) or the log failed, space_gen is bumped and space_cond
 *       broadcast under the lock: the waiters for space (grant.c GR4) sleep on it, and
 *       a NOWAIT caller refused since the last event is told through a hook (GR7).
 *
 * Ordering relied upon (io.h): every accepted request completes exactly once, and a
 * rejected one never does (so a refused submission is completed here, with its error);
 * IOL_PREFLUSH makes stable every write that completed before the request was submitted,
 * before this write's data reaches the device; IOL_FUA makes this write stable when it
 * completes.  A record that wraps the physical end is two writes, the end part first;
 * the start part is submitted only once the end part completed, so the end part's
 * PREFLUSH also orders the start part (the two would otherwise run concurrently, and a
 * PREFLUSH on the first says nothing about the second).  FUA is on both.
 *
 * Threads: done callbacks run on an iolayer completion thread, or on whichever writer,
 * force or close thread runs log_process when a buffer is done: after a refusal or a
 * shutdown, and for the buffer a force wrote itself (L10).  They never run with
 * log->lock held.
 *
 * Locking: log->lock protects every field but the buffers' data, the op bytes being
 * copied (owned by the writer while op_busy) and the record being sealed (owned by the
 * submitter while SYNCING), and grant.c's state (struct grant: the space promised on
 * this ring, read with the head and the tails under this lock, grant.c GR1; it calls
 * into this file, never the reverse: L16 is how it learns that space came back).  The
 * lock is dropped around copying, sealing, iol_submit (whose refusal path may complete
 * a request on the calling thread) and callbacks.
 */
#include "format.h"
#include "jrnl.h"
#include "log_private.h"
#include "record.h"

#include <delog.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define OPHDR ((uint32_t)sizeof(struct jrnl_op))
/* Smallest useful room in a buffer: an op header and one 8-byte payload unit (L9). */
#define MIN_ROOM (OPHDR + 8u)
/* Bytes of the smallest transaction: START and COMMIT ops with their payloads. */
#define MIN_TX_BYTES                                                                               \
	(2 * OPHDR + (uint32_t)sizeof(struct jrnl_start) + (uint32_t)sizeof(struct jrnl_commit))

enum lb_state {
	LB_ACTIVE = 0,
	LB_WANT_SYNC,
	LB_SYNCING,
	LB_DONE_SYNC,
	LB_CALLBACK,
};

/* A standalone flush (jrnl_log_flush, jrnl_log_flush_async, the L13 bound flush), taken
 * in issue order (L14). */
struct jflush {
	struct iol_req req;
	struct jrnl_log *log;
	struct jflush *next;
	uint64_t snap, snap_tail; /* completed_lsn and completed_tail when it was issued */
	bool done;                /* its I/O completed, with status */
	int status;
	bool resolved; /* taken in order, with result: 0 or the log's error */
	int result;
	uint64_t rec_before; /* end of the newest flagged record submitted before it (L14) */
	bool waiter;         /* jrnl_log_flush waits for resolved (its own stack) */
	bool bound;          /* the L13 flush */
	jrnl_flush_fn fn;    /* jrnl_log_flush_async's callback */
	void *priv;
};

struct lb_cb {
	jrnl_done_fn fn;
	void *priv;
};

struct logbuf {
	struct jrnl_log *log;
	enum lb_state state;
	unsigned char *data; /* logbsize bytes: H header sectors, then op bytes */

	/* Filled while ACTIVE. */
	uint32_t off; /* op bytes reserved */
	uint32_t num_ops;
	uint64_t lsn; /* where the record goes; set on the first reservation */
	bool need_flush, need_fua, wait_prev;
	bool held; /* counted once in wait_prev_holds */
	struct lb_cb *cbs;
	unsigned ncbs, maxcbs;

	/* Set at the switch. */
	uint64_t end_lsn;
	uint64_t prev_lsn;

	bool cover; /* an empty record written by jrnl_log_cover (L12) */

	/* Set at submission. */
	uint64_t sealed_tail;     /* the tail_lsn its header carries (L7, L12) */
	uint64_t flush_snap;      /* completed_lsn when the PREFLUSH write was submitted */
	uint64_t flush_snap_tail; /* completed_tail then (L12) */
	uint64_t fl_before;       /* standalone flushes issued before it (L14), if flagged */
	bool wrapped;
	int status;
	struct iol_req req[2]; /* [0] the record (its end part if wrapped), [1] the rest */
};

/* ---- LSN arithmetic ---- */

static int lsn_cmp(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static uint64_t lsn_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Sectors from @tail to @head; the caller guarantees tail <= head within one lap. */
static uint64_t lsn_dist(const struct jrnl_log *log, uint64_t tail, uint64_t head)
{
	if (jrnl_lsn_cycle(head) == jrnl_lsn_cycle(tail))
		return jrnl_lsn_sector(head) - jrnl_lsn_sector(tail);
	return log->geom.log_sectors - jrnl_lsn_sector(tail) + jrnl_lsn_sector(head);
}

/* The LSN @n sectors after @lsn; passing the physical end bumps the cycle. */
static uint64_t lsn_add(const struct jrnl_log *log, uint64_t lsn, uint64_t n)
{
	return jrnl_lsn_add(lsn, n, log->geom.log_sectors);
}

static uint32_t pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

static uint64_t pad8_64(uint64_t n)
{
	return (n + 7u) & ~(uint64_t)7;
}

/* Sectors of the record a buffer holding @off op bytes becomes (0: nothing in it). */
static uint64_t rec_sectors(const struct jrnl_log *log, uint32_t off)
{
	uint32_t s = log->geom.sector;

	return off ? log->hdr_sectors + (off + s - 1) / s : 0;
}

/* Sectors of the record buffer @b becomes: an empty cover record is its header. */
static uint64_t lb_sectors(const struct jrnl_log *log, const struct logbuf *b)
{
	return b->cover ? log->hdr_sectors : rec_sectors(log, b->off);
}

/* The tail a record may not write past (L12), and the point everything before which is
 * known stable for L13 (0, before the first flush of a fresh log, is the log start). */
static uint64_t reuse_tail(const struct jrnl_log *log)
{
	return log->no_flush ? log->completed_tail : log->durable_tail;
}

/* ---- packing ---- */

enum pack {
	PK_FIT,
	PK_SPLIT,
	PK_SWITCH
};

/*
 * Where the next piece of an op with @rem payload bytes left goes in a buffer holding
 * @off op bytes: all of it (PK_FIT), a piece of *@piece bytes (PK_SPLIT: a multiple of
 * 8, at least 8, and less than @rem), or nothing: switch to the next buffer first
 * (PK_SWITCH).  The single rule both plan_op and op_write follow, so the plan is exact.
 */
static enum pack pack_step(uint32_t cap, uint32_t off, uint64_t rem, bool split_ok, uint32_t *piece)
{
	uint32_t avail = cap - off;

	if (OPHDR + pad8_64(rem) <= avail) {
		*piece = (uint32_t)rem;
		return PK_FIT;
	}
	if (!split_ok || avail < MIN_ROOM)
		return PK_SWITCH;
	*piece = (avail - OPHDR) & ~7u;
	return PK_SPLIT;
}

/* Op bytes the open buffer holds as far as a plan is concerned: a buffer still in
 * flight from the previous lap will come back empty. */
static uint32_t open_off(const struct jrnl_log *log)
{
	const struct logbuf *b = &log->bufs[log->cur];

	return b->state == LB_ACTIVE ? b->off : 0;
}

/* Log sectors that may not be written, the open buffer's record included (L12). */
static uint64_t used_sectors(const struct jrnl_log *log)
{
	return lsn_dist(log, reuse_tail(log), log->head) + rec_sectors(log, open_off(log));
}

/*
 * (L2): would writing an op with @len payload bytes, from where the open buffer stands,
 * keep one sector free before the tail?  Walks the same steps op_write will take and
 * adds up the sectors of every record the op closes and of the one it leaves open.
 */
static bool plan_op(const struct jrnl_log *log, uint64_t len, bool split_ok)
{
	uint32_t off = open_off(log), piece;
	uint64_t closed = 0, rem = len, need;

	for (;;) {
		enum pack r = pack_step(log->cap, off, rem, split_ok, &piece);

		if (r == PK_SWITCH) {
			closed += rec_sectors(log, off);
			off = 0;
			continue;
		}
		if (r == PK_FIT) {
			off += OPHDR + pad8(piece);
			break;
		}
		off += OPHDR + piece;
		rem -= piece;
		closed += rec_sectors(log, off);
		off = 0;
	}
	/* One sector free (head == tail means empty) and room for a cover record (L12). */
	need = lsn_dist(log, reuse_tail(log), log->head) + closed + rec_sectors(log, off);
	return need + 1 + log->hdr_sectors <= log->geom.log_sectors;
}

/* ---- the state machine ---- */

/*
 * ACTIVE -> WANT_SYNC for the open buffer @b (which holds ops): the head moves past its
 * record (bumping the cycle when it passes the physical end) and the next buffer in the
 * ring becomes the open one (L3).  The record is sealed later, at submission, so the
 * tail and durable LSNs it carries are as recent as possible.
 */
static void lb_switch(struct jrnl_log *log, struct logbuf *b)
{
	b->prev_lsn = log->prev_lsn;
	log->prev_lsn = b->lsn;
	log->clean_head = log->clean_tail = 0; /* (L15) */
	b->end_lsn = lsn_add(log, log->head, lb_sectors(log, b));
	log->head = b->end_lsn;
	b->state = LB_WANT_SYNC;
	log->cur = (log->cur + 1) % log->nbufs;
	log->inflight++;
}

/* Switch the open buffer if it is ACTIVE and holds something. */
static void switch_open(struct jrnl_log *log)
{
	struct logbuf *b = &log->bufs[log->cur];

	if (b->state == LB_ACTIVE && b->off)
		lb_switch(log, b);
}

void jrnl_log_space_wake(struct jrnl_log *log)
{
	log->space_gen++;
	if (log->grant.nwaiters)
		pthread_cond_broadcast(&log->space_cond);
}

void jrnl_log_space_event(struct jrnl_log *log)
{
	struct grant *g = &log->grant;

	jrnl_log_space_wake(log);
	if (g->nowait_refused) {
		g->nowait_refused = false;
		if (g->ops && g->ops->space_event)
			g->ops->space_event(g->priv);
	}
}

/* Record the first I/O error: the log is shut down (L8).  Between ops the open buffer
 * is switched too, so its callbacks get the error now rather than at the next force. */
static void log_fail(struct jrnl_log *log, int err)
{
	if (!log->error) /* atomic: jrnl_log_error reads it without the lock */
		__atomic_store_n(&log->error, err, __ATOMIC_RELEASE);
	if (!log->op_busy)
		switch_open(log);
	pthread_cond_broadcast(&log->cond);
	jrnl_log_space_event(log); /* waiters for space fail now (L16) */
}

static void lb_end_io(struct iol_req *req);

/*
 * Seal @b and set up its write(s) with @end_io (NULL for a synchronous write): req[0]
 * the record (its end part if it wraps the physical end), req[1] the start part.
 * Called without the lock, @b SYNCING and owned by the caller.  Returns 0 or the
 * iolayer's refusal (nothing set up).
 */
static int lb_prep(struct jrnl_log *log, struct logbuf *b, const struct jrnl_rec_fill *f,
		   iol_end_fn end_io)
{
	const struct jrnl_geom *g = &log->geom;
	uint32_t wflags = (b->need_flush ? IOL_PREFLUSH : 0) | (b->need_fua ? IOL_FUA : 0);
	size_t bytes = jrnl_rec_seal(b->data, g->sector, f);
	uint64_t room = (g->log_sectors - f->sector_no) * g->sector;
	size_t first = bytes;
	int err;

	b->wrapped = bytes > room;
	if (b->wrapped)
		first = (size_t)room;
	err = iol_req_init(&b->req[0], log->dev, 1, IOL_OPF(IOL_OP_WRITE, wflags));
	if (err)
		return err;
	iol_req_add(&b->req[0], b->data, first);
	b->req[0].off = g->log_start + (uint64_t)f->sector_no * g->sector;
	b->req[0].end_io = end_io;
	b->req[0].priv = b;
	if (b->wrapped) {
		err = iol_req_init(&b->req[1], log->dev, 1,
				   IOL_OPF(IOL_OP_WRITE, wflags & IOL_FUA));
		if (err) {
			iol_req_release(&b->req[0]);
			return err;
		}
		iol_req_add(&b->req[1], b->data + first, bytes - first);
		b->req[1].off = g->log_start;
		b->req[1].end_io = end_io;
		b->req[1].priv = b;
	}
	return 0;
}

/*
 * Seal @b and submit its write(s) asynchronously: lb_end_io completes it.  Returns 0,
 * or the iolayer's refusal (the caller completes @b with it: a refused request never
 * completes on its own).
 */
static int lb_submit(struct jrnl_log *log, struct logbuf *b, const struct jrnl_rec_fill *f)
{
	int err = lb_prep(log, b, f, lb_end_io);

	if (err)
		return err;
	err = iol_submit(&b->req[0]);
	if (err) {
		iol_req_release(&b->req[0]);
		if (b->wrapped)
			iol_req_release(&b->req[1]);
	}
	return err;
}

/*
 * Seal @b and write it on the calling thread (L10): iol_submit_wait, which the
 * descriptor backends perform right here (iolayer/submit.c, IO3).  A wrapped record's start
 * part is submitted only once its end part completed, as lb_end_io does.  Returns the
 * write's status (0, the refusal or the I/O error); @b stays SYNCING for the caller.
 */
static int lb_write_sync(struct jrnl_log *log, struct logbuf *b, const struct jrnl_rec_fill *f)
{
	int err = lb_prep(log, b, f, NULL);

	if (err)
		return err;
	err = iol_submit_wait(&b->req[0]);
	iol_req_release(&b->req[0]);
	if (b->wrapped) {
		if (!err)
			err = iol_submit_wait(&b->req[1]);
		iol_req_release(&b->req[1]);
	}
	return err;
}

/* Durability evidence for the records up to @lsn, whose newest names @tail (L6, L12). */
static void log_durable_to(struct jrnl_log *log, uint64_t lsn, uint64_t tail)
{
	log->durable_lsn = lsn_max(log->durable_lsn, lsn);
	if (lsn_cmp(tail, log->durable_tail) > 0) {
		log->durable_tail = tail;
		jrnl_log_space_event(log); /* space behind it is free (L12, L16) */
	}
}

/* (L13): would @b, submitted now, end more than the window past durable_lsn?  (0, a
 * fresh log's, is the log start; one more than a lap behind counts as too far.) */
static bool over_bound(const struct jrnl_log *log, const struct logbuf *b)
{
	uint64_t d = log->durable_lsn ? log->durable_lsn : jrnl_lsn(1, 0);
	uint32_t dc = jrnl_lsn_cycle(d), ec = jrnl_lsn_cycle(b->end_lsn);

	if (log->no_flush)
		return false;
	if (dc != ec && jrnl_cycle_next(dc) != ec)
		return true;
	if (lsn_cmp(d, b->end_lsn) >= 0)
		return false;
	return lsn_dist(log, d, b->end_lsn) > log->window;
}

static void log_kick(struct jrnl_log *log);

/*
 * (L14): take the results of the flushes at the head of the queue whose I/O is done, in
 * issue order: durability, or the log's failure, then the caller (a waiting
 * jrnl_log_flush is woken; an async callback runs with the lock dropped, in order, as
 * only the token holder runs them).  Lock held.
 */
static void flush_resolve(struct jrnl_log *log)
{
	if (log->fq_resolving)
		return;
	log->fq_resolving = true;
	while (log->fq_head && log->fq_head->done &&
	       lsn_cmp(log->done_lsn, log->fq_head->rec_before) >= 0) {
		struct jflush *jf = log->fq_head;

		log->fq_head = jf->next;
		if (!log->fq_head)
			log->fq_tail = NULL;
		log->fl_resolved++;
		log->st.flushes++;
		if (jf->status) {
			/* What the cache held is unknown now: no record processed from
			 * here on reports success (L8, L14). */
			if (!log->cb_err)
				log->cb_err = jf->status;
			log_fail(log, jf->status);
		} else if (!log->error)
			log_durable_to(log, jf->snap, jf->snap_tail);
		jf->result = log->error;
		if (jf->bound) {
			log->bound_flush = false;
			log->st.bound_flushes++;
		}
		if (jf->waiter) {
			jf->resolved = true;
		} else if (jf->fn) {
			pthread_mutex_unlock(&log->lock);
			jf->fn(jf->priv, jf->result);
			pthread_mutex_lock(&log->lock);
		}
		if (!jf->waiter) {
			log->async_flushes--;
			if (!jf->bound)
				free(jf);
		}
		/* Durability may release a record held by L13, or a PREFLUSH record
		 * waiting for this result (L14). */
		log_kick(log);
		pthread_cond_broadcast(&log->cond);
	}
	log->fq_resolving = false;
	pthread_cond_broadcast(&log->cond);
}

static void flush_io_end(struct iol_req *req)
{
	struct jflush *jf = req->priv;
	struct jrnl_log *log = jf->log;

	pthread_mutex_lock(&log->lock);
	jf->status = atomic_load(&req->status);
	iol_req_release(req);
	jf->done = true;
	flush_resolve(log);
	pthread_mutex_unlock(&log->lock);
}

/* Queue @jf, snapshotting what it will cover (L6, L12), and set up its request.  Lock
 * held.  Returns 0 or iol_req_init's error (nothing queued). */
static int flush_queue(struct jrnl_log *log, struct jflush *jf)
{
	int err = iol_req_init(&jf->req, log->dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));

	if (err)
		return err;
	jf->log = log;
	jf->next = NULL;
	jf->done = jf->resolved = false;
	jf->status = jf->result = 0;
	jf->snap = log->completed_lsn;
	jf->snap_tail = log->completed_tail;
	jf->rec_before = log->flagged_end;
	jf->req.end_io = jf->waiter ? NULL : flush_io_end;
	jf->req.priv = jf;
	if (log->fq_tail)
		log->fq_tail->next = jf;
	else
		log->fq_head = jf;
	log->fq_tail = jf;
	log->fl_issued++;
	if (!jf->waiter)
		log->async_flushes++;
	return 0;
}

/* A queued flush whose submission was refused: done, with that error. */
static void flush_refused(struct jrnl_log *log, struct jflush *jf, int err)
{
	iol_req_release(&jf->req);
	jf->status = err;
	jf->done = true;
	flush_resolve(log);
}

/*
 * (L13): a flush for the records that completed and are not yet durable, unless one is
 * in flight or none is waiting (then the completions still in flight come first, and
 * each kicks the push again).  Lock held; dropped to submit, in which case it returns
 * true: the caller, holding the submitting token, must look again (the flush may have
 * completed meanwhile, and its kick found the token taken).
 */
static bool bound_flush_start(struct jrnl_log *log)
{
	int err;

	if (log->bound_flush || lsn_cmp(log->completed_lsn, log->durable_lsn) <= 0)
		return false;
	err = flush_queue(log, log->bound_jf);
	if (err) {
		log_fail(log, err);
		return false;
	}
	log->bound_flush = true;
	pthread_mutex_unlock(&log->lock);
	err = iol_submit(&log->bound_jf->req);
	pthread_mutex_lock(&log->lock);
	if (err)
		flush_refused(log, log->bound_jf, err);
	return true;
}

/*
 * Submit what may go out, in LSN order (L3): the oldest unsubmitted buffer while it is
 * WANT_SYNC and, if wait_prev, every earlier one completed (L4).  After a shutdown the
 * buffers are completed with the error instead (L8).  One thread submits at a time; a
 * thread that finds the token taken leaves the work to its holder, which re-checks
 * after every submission.  With @sync (a force, which waits for every buffer anyway)
 * the newest switched buffer is written on this thread (lb_write_sync, L10) and left
 * DONE_SYNC for the caller's log_process; the others go out asynchronously as always.
 * Called and returns with the lock held; drops it to submit.
 */
static void log_push_mode(struct jrnl_log *log, bool sync)
{
	if (log->submitting)
		return;
	log->submitting = true;
	for (;;) {
		struct logbuf *b = &log->bufs[log->next_sub];
		struct jrnl_rec_fill f;
		bool here;
		int err;

		if (b->state != LB_WANT_SYNC)
			break;
		if (log->error) {
			b->status = log->error;
			b->state = LB_DONE_SYNC;
			log->next_sub = (log->next_sub + 1) % log->nbufs;
			continue;
		}
		if (b->wait_prev && lsn_cmp(log->completed_lsn, b->lsn) < 0) {
			if (!b->held)
				log->st.wait_prev_holds++;
			b->held = true;
			break;
		}
		if (over_bound(log, b)) {
			if (bound_flush_start(log))
				continue;
			break; /* resumed by a completion or by that flush (L13) */
		}
		b->state = LB_SYNCING;
		log->next_sub = (log->next_sub + 1) % log->nbufs;
		if (b->need_flush) {
			b->flush_snap = log->completed_lsn;
			b->flush_snap_tail = log->completed_tail;
		}
		if (b->need_flush || b->need_fua) {
			b->fl_before = log->fl_issued;
			log->flagged_end = b->end_lsn; /* later flushes wait for it (L14) */
		}
		b->sealed_tail = lsn_cmp(log->tail, b->lsn) > 0 ? b->lsn : log->tail;
		f = (struct jrnl_rec_fill){
			.cycle = jrnl_lsn_cycle(b->lsn),
			.sector_no = jrnl_lsn_sector(b->lsn),
			.log_sectors = log->geom.log_sectors,
			.tail_lsn = b->sealed_tail,
			.durable_lsn = log->durable_lsn,
			.prev_lsn = b->prev_lsn,
			.len = b->off,
			.num_ops = b->num_ops,
			.hdr_sectors = log->hdr_sectors,
			.logbufs = log->nbufs,
			.logbsize = log->bsize,
			.uuid = log->geom.uuid,
		};
		log->st.records++;
		log->st.record_bytes += lb_sectors(log, b) * log->geom.sector;
		log->st.preflush_writes += b->need_flush;
		log->st.fua_writes += b->need_fua;
		if (jrnl_lsn_sector(b->lsn) + lb_sectors(log, b) > log->geom.log_sectors) {
			/* Two writes (lb_prep), both with FUA: each one a flush to a
			 * device without FUA. */
			log->st.wraps++;
			log->st.fua_writes += b->need_fua;
		}
		here = sync && b->lsn == log->prev_lsn;
		pthread_mutex_unlock(&log->lock);
		err = here ? lb_write_sync(log, b, &f) : lb_submit(log, b, &f);
		pthread_mutex_lock(&log->lock);
		if (here && !err) {
			b->status = 0;
			b->state = LB_DONE_SYNC;
		} else if (err) {
			b->status = err;
			b->state = LB_DONE_SYNC;
			log_fail(log, err);
		}
	}
	log->submitting = false;
	pthread_cond_broadcast(&log->cond);
}

static void log_push(struct jrnl_log *log)
{
	log_push_mode(log, false);
}

/* Back to ACTIVE: forget everything of the record just processed. */
static void lb_reset(struct logbuf *b)
{
	b->off = 0;
	b->num_ops = 0;
	b->lsn = 0;
	b->need_flush = b->need_fua = b->wait_prev = b->held = b->cover = false;
	b->ncbs = 0;
	b->status = 0;
	b->wrapped = false;
	b->state = LB_ACTIVE;
}

/*
 * Process completions in LSN order (L1): while the oldest buffer not ACTIVE is
 * DONE_SYNC, account it (L5, L6), run its callbacks without the lock, and return it to
 * the ring.  Stops at the first buffer not done: a later one that completed early waits
 * for it.  One thread at a time (log->processing).  Each returned buffer may release a
 * wait_prev buffer, hence the push.  Called and returns with the lock held.
 */
static void log_process(struct jrnl_log *log)
{
	if (log->processing)
		return;
	log->processing = true;
	while (log->inflight && log->bufs[log->oldest].state == LB_DONE_SYNC) {
		struct logbuf *b = &log->bufs[log->oldest];
		int err;

		/* (L14) A flagged record's evidence waits for the flushes issued before it. */
		if ((b->need_flush || b->need_fua) && !b->status && log->fl_resolved < b->fl_before)
			break;
		b->state = LB_CALLBACK;
		if (b->status && !log->cb_err)
			log->cb_err = b->status;
		err = log->cb_err;
		if (!err) {
			log->completed_lsn = b->end_lsn;
			log->completed_tail = b->sealed_tail;
			if (log->no_flush)
				jrnl_log_space_event(log); /* reuse_tail moved (L12, L16) */
			if (b->need_flush)
				log_durable_to(log, b->flush_snap, b->flush_snap_tail);
			if (b->need_fua && lsn_cmp(log->durable_lsn, b->lsn) >= 0)
				log_durable_to(log, b->end_lsn, b->sealed_tail);
		}
		if (b->ncbs) {
			pthread_mutex_unlock(&log->lock);
			for (unsigned i = 0; i < b->ncbs; i++)
				b->cbs[i].fn(b->cbs[i].priv, err, b->lsn, b->end_lsn);
			pthread_mutex_lock(&log->lock);
		}
		log->done_lsn = b->end_lsn;
		lb_reset(b);
		log->oldest = (log->oldest + 1) % log->nbufs;
		log->inflight--;
		pthread_cond_broadcast(&log->cond);
		log_push(log);
	}
	log->processing = false;
	pthread_cond_broadcast(&log->cond);
	/* (L14) A flush done before the flagged records issued ahead of it were processed
	 * may be taken now. */
	if (log->fq_head && log->fq_head->done)
		flush_resolve(log);
}

/*
 * Move the state machine on: process what completed, submit what may go, and process
 * what the submission completed at once (a refusal, or after a shutdown).  Processing
 * comes first so that a completion thread that just marked its buffer DONE_SYNC takes
 * the processing token before it drops the lock: in normal operation callbacks then
 * run on completion threads, never on a writer that happens to kick.
 */
static void log_kick(struct jrnl_log *log)
{
	log_process(log);
	log_push(log);
	log_process(log);
}

/* SYNCING -> DONE_SYNC for @b with @status, then process in LSN order. */
static void lb_finish(struct logbuf *b, int status)
{
	struct jrnl_log *log = b->log;

	pthread_mutex_lock(&log->lock);
	b->status = status;
	b->state = LB_DONE_SYNC;
	if (status)
		log_fail(log, status);
	log_kick(log);
	pthread_mutex_unlock(&log->lock);
}

/*
 * Completion of a record write, on an iolayer thread.  A wrapped record's end part
 * submits the start part (see the ordering note at the top); the buffer is done when
 * its last part completed or one part failed.
 */
static void lb_end_io(struct iol_req *req)
{
	struct logbuf *b = req->priv;
	int status = atomic_load(&req->status);

	iol_req_release(req);
	if (req == &b->req[0] && b->wrapped) {
		if (!status) {
			status = iol_submit(&b->req[1]);
			if (!status)
				return;
		}
		iol_req_release(&b->req[1]);
	}
	lb_finish(b, status);
}

/* ---- writing ops ---- */

/* An op's payload, gathered from up to two pieces (ITEM: its header, then the data). */
struct op_src {
	const void *p[2];
	uint64_t len[2];
};

static void src_copy(const struct op_src *s, uint64_t from, unsigned char *dst, uint64_t n)
{
	for (unsigned i = 0; i < 2 && n; i++) {
		uint64_t take;

		if (from >= s->len[i]) {
			from -= s->len[i];
			continue;
		}
		take = s->len[i] - from < n ? s->len[i] - from : n;
		memcpy(dst, (const unsigned char *)s->p[i] + from, take);
		dst += take;
		n -= take;
		from = 0;
	}
}

/*
 * Error exit from inside an op: the log was shut down.  The op is abandoned; the open
 * buffer is switched so its callbacks learn of the shutdown (L8).
 */
static int op_abort(struct jrnl_log *log)
{
	log->op_busy = false;
	switch_open(log);
	log_kick(log);
	pthread_cond_broadcast(&log->cond);
	return DELOG_ESHUTDOWN;
}

/*
 * Write one op (header @h, payload @src) into the ring, splitting it across buffers
 * when it does not fit and @split_ok (L9).  Called with the lock held and no op in
 * progress.  Returns 0 with the lock held, op_busy set and *@out the buffer holding the
 * op's last piece (still ACTIVE: the caller finishes with op_end), or DELOG_ELOGFULL
 * (nothing written) or DELOG_ESHUTDOWN, lock held and no op in progress.  Copies with
 * the lock dropped: the buffer stays ACTIVE and only this writer touches its bytes.
 */
static int op_write(struct jrnl_log *log, const struct jrnl_op *h, const struct op_src *src,
		    bool split_ok, struct logbuf **out)
{
	uint64_t len = src->len[0] + src->len[1], done = 0;
	bool first = true;

	if (log->error)
		return DELOG_ESHUTDOWN;
	if (!plan_op(log, len, split_ok))
		return DELOG_ELOGFULL;
	log->op_busy = true;
	for (;;) {
		struct logbuf *b = &log->bufs[log->cur];
		struct jrnl_op oh = *h;
		enum pack r;
		uint32_t piece, at, padded;
		unsigned char *dst;

		if (b->state != LB_ACTIVE && !log->error) {
			log->st.buffer_waits++;
			while (b->state != LB_ACTIVE && !log->error)
				pthread_cond_wait(&log->cond, &log->lock);
		}
		if (log->error)
			return op_abort(log);
		if (!b->off)
			b->lsn = log->head;
		r = pack_step(log->cap, b->off, len - done, split_ok, &piece);
		if (r == PK_SWITCH) {
			lb_switch(log, b);
			log_push(log);
			continue;
		}
		oh.len = piece;
		if (!first)
			oh.flags = JRNL_OP_WAS_CONT |
				   (r == PK_SPLIT ? JRNL_OP_CONTINUE : JRNL_OP_END);
		else if (r == PK_SPLIT)
			oh.flags |= JRNL_OP_CONTINUE;
		padded = r == PK_FIT ? pad8(piece) : piece;
		at = b->off;
		b->off += OPHDR + padded;
		b->num_ops++;
		dst = b->data + (size_t)log->hdr_sectors * log->geom.sector + at;

		pthread_mutex_unlock(&log->lock);
		memcpy(dst, &oh, OPHDR);
		src_copy(src, done, dst + OPHDR, piece);
		memset(dst + OPHDR + piece, 0, padded - piece);
		pthread_mutex_lock(&log->lock);

		if (r == PK_FIT) {
			*out = b;
			return 0;
		}
		done += piece;
		first = false;
		lb_switch(log, b);
		log_push(log);
	}
}

/*
 * Finish the op op_write left in @b: a buffer with no useful room left is switched and
 * goes out now; waiters for the op (forces) are woken; a shutdown that arrived during
 * the op is acted on.  Returns 0 or DELOG_ESHUTDOWN.  Lock held.
 */
static int op_end(struct jrnl_log *log, struct logbuf *b)
{
	log->op_busy = false;
	if (b == &log->bufs[log->cur] && b->state == LB_ACTIVE && log->cap - b->off < MIN_ROOM)
		lb_switch(log, b);
	if (log->error)
		switch_open(log);
	log_kick(log);
	pthread_cond_broadcast(&log->cond);
	return log->error ? DELOG_ESHUTDOWN : 0;
}

static uint32_t tid_next(struct jrnl_log *log)
{
	uint32_t tid = log->next_tid++;

	if (!tid)
		tid = log->next_tid++;
	return tid;
}

/* ---- the API ---- */

static uint32_t random_tid(void)
{
	uint32_t v;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v) && v)
		return v;
	clock_gettime(CLOCK_REALTIME, &ts);
	v = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)getpid();
	return v ? v : 1;
}

/* Is the report's (tail, head) pair a live region within one lap of the log? */
static bool report_ok(const struct jrnl_geom *g, uint64_t tail, uint64_t head)
{
	uint32_t tc = jrnl_lsn_cycle(tail), hc = jrnl_lsn_cycle(head);

	if (!hc || !tc || jrnl_lsn_sector(head) >= g->log_sectors ||
	    jrnl_lsn_sector(tail) >= g->log_sectors)
		return false;
	if (tc == hc)
		return jrnl_lsn_sector(tail) <= jrnl_lsn_sector(head);
	return hc == jrnl_cycle_next(tc) && jrnl_lsn_sector(head) < jrnl_lsn_sector(tail);
}

static void log_free(struct jrnl_log *log)
{
	if (log->bufs) {
		for (unsigned i = 0; i < log->nbufs; i++) {
			free(log->bufs[i].data);
			free(log->bufs[i].cbs);
		}
		free(log->bufs);
	}
	free(log->bound_jf);
	pthread_cond_destroy(&log->space_cond);
	pthread_mutex_destroy(&log->lock);
	pthread_cond_destroy(&log->cond);
	free(log);
}

int jrnl_log_open(struct iol_dev *dev, const struct jrnl_geom *g, const struct jrnl_report *rec,
		  const struct jrnl_log_opts *opts, struct jrnl_log **out)
{
	unsigned nbufs = opts && opts->logbufs ? opts->logbufs : JRNL_MAX_LOGBUFS;
	uint32_t bsize = opts && opts->logbsize ? opts->logbsize : JRNL_MAX_LOGBSIZE;
	const struct iol_geom *ig = iol_dev_geom(dev);
	struct jrnl_log *log;
	uint32_t payload;
	uint64_t head, tail;

	*out = NULL;
	if (nbufs < JRNL_MIN_LOGBUFS || nbufs > JRNL_MAX_LOGBUFS || bsize < JRNL_MIN_LOGBSIZE ||
	    bsize > JRNL_MAX_LOGBSIZE || (bsize & (bsize - 1)))
		return -EINVAL;
	/* The log holds the whole ring twice: the records in flight (at most the ring)
	 * can never be reached by a new record, even with the tail moved up to the head. */
	if ((g->sector != 512 && g->sector != 4096) || g->sector % ig->dio_off_align ||
	    g->log_start % g->sector || g->log_sectors * g->sector != g->log_size ||
	    g->log_sectors > UINT32_MAX || g->log_size < 2ull * nbufs * bsize ||
	    g->log_start + g->log_size > ig->size_bytes)
		return -EINVAL;
	if (!(opts && opts->read_only) && jrnl_sector_check(dev, g->sector, NULL, 0))
		return DELOG_EGEOMETRY;
	if (!rec || rec->empty) {
		head = tail = jrnl_lsn(1, 0);
	} else {
		head = rec->head_lsn;
		tail = rec->tail_lsn;
		if (!report_ok(g, tail, head))
			return -EINVAL;
	}

	log = calloc(1, sizeof(*log));
	if (!log)
		return -ENOMEM;
	pthread_mutex_init(&log->lock, NULL);
	pthread_cond_init(&log->cond, NULL);
	log->dev = dev;
	log->geom = *g;
	log->nbufs = nbufs;
	log->bsize = bsize;
	log->hdr_sectors = jrnl_rec_hdr_sectors_for(g->sector, bsize, &payload);
	log->cap = payload * g->sector;
	pthread_cond_init(&log->space_cond, NULL);
	log->bufs = calloc(nbufs, sizeof(*log->bufs));
	log->bound_jf = calloc(1, sizeof(*log->bound_jf));
	if (!log->bufs || !log->bound_jf)
		goto nomem;
	log->bound_jf->bound = true;
	for (unsigned i = 0; i < nbufs; i++) {
		struct logbuf *b = &log->bufs[i];

		b->log = log;
		/* Every transaction but the first whose COMMIT lands here started here. */
		b->maxcbs = log->cap / MIN_TX_BYTES + 2;
		b->data = iol_buf_alloc(dev, bsize);
		b->cbs = calloc(b->maxcbs, sizeof(*b->cbs));
		if (!b->data || !b->cbs)
			goto nomem;
	}
	log->head = head;
	log->tail = tail;
	log->prev_lsn = rec && !rec->empty ? rec->last_lsn : 0;
	log->completed_lsn = log->done_lsn = head;
	log->durable_lsn = rec && !rec->empty ? rec->durable_lsn : 0;
	/* The last record recovery found names this tail and is durable (its stamping
	 * flushed everything before the head): L12 starts from it. */
	log->completed_tail = log->durable_tail = tail;
	/* (L15) The last record is an unmount record naming this tail, durable. */
	if (rec && !rec->empty && rec->clean) {
		log->clean_head = head;
		log->clean_tail = tail;
	}
	log->window = g->window_sectors;
	log->no_flush = opts && opts->no_flush;
	log->next_tid = random_tid();
	*out = log;
	return 0;
nomem:
	log_free(log);
	return -ENOMEM;
}

int jrnl_tx_start(struct jrnl_log *log, uint64_t seq, unsigned flags, struct jrnl_wtx *tx)
{
	struct jrnl_start st = { .seq = seq };
	struct op_src src = { { &st, NULL }, { sizeof(st), 0 } };
	struct jrnl_op h = { .len = sizeof(st), .flags = JRNL_OP_START, .type = JRNL_T_START };
	struct logbuf *b;
	int err;

	if (flags & ~JRNL_TX_FLAGS_KNOWN)
		return -EINVAL;
	pthread_mutex_lock(&log->lock);
	h.tid = tid_next(log);
	err = op_write(log, &h, &src, false, &b);
	if (!err) {
		*tx = (struct jrnl_wtx){ .log = log,
					 .tid = h.tid,
					 .seq = seq,
					 .flags = flags,
					 .start_lsn = b->lsn };
		if (flags & JRNL_TX_FLUSH_START)
			b->need_flush = true;
		err = op_end(log, b);
	}
	pthread_mutex_unlock(&log->lock);
	return err;
}

int jrnl_tx_item(struct jrnl_wtx *tx, uint64_t key, const void *data, uint32_t len)
{
	struct jrnl_log *log = tx->log;
	struct jrnl_item it = { .key = key, .data_len = len };
	struct op_src src = { { &it, data }, { sizeof(it), len } };
	struct jrnl_op h = { .tid = tx->tid, .len = 0, .type = JRNL_T_ITEM };
	struct logbuf *b;
	uint32_t crc;
	int err;

	if (len > JRNL_MAX_ITEM || (len && !data))
		return -EINVAL;
	crc = jrnl_crc32c(jrnl_crc32c(tx->crc, &it, sizeof(it)), data, len);
	pthread_mutex_lock(&log->lock);
	err = op_write(log, &h, &src, true, &b);
	if (!err)
		err = op_end(log, b);
	pthread_mutex_unlock(&log->lock);
	if (!err) {
		tx->crc = crc;
		tx->nitems++;
		tx->payload_bytes += sizeof(it) + len;
	}
	return err;
}

int jrnl_tx_commit(struct jrnl_wtx *tx, jrnl_done_fn done, void *priv)
{
	struct jrnl_log *log = tx->log;
	struct jrnl_commit c = {
		.seq = tx->seq,
		.start_lsn = tx->start_lsn,
		.nitems = tx->nitems,
		.crc = tx->crc,
		.payload_bytes = tx->payload_bytes,
	};
	struct op_src src = { { &c, NULL }, { sizeof(c), 0 } };
	struct jrnl_op h = { .tid = tx->tid,
			     .len = sizeof(c),
			     .flags = JRNL_OP_COMMIT,
			     .type = JRNL_T_COMMIT };
	struct logbuf *b;
	int err;

	pthread_mutex_lock(&log->lock);
	err = op_write(log, &h, &src, false, &b);
	/* The head counts every byte of the transaction now; the buffer cannot go out
	 * before op_end below, nor complete before the lock is dropped (grant.c GR6). */
	if (tx->grant) {
		jrnl_grant_ckpt_end_locked(log, tx->grant);
		tx->grant = 0;
	}
	if (!err) {
		if (log->error) {
			/* Shut down while copying: not accepted, so no callback (L8). */
			op_end(log, b);
			pthread_mutex_unlock(&log->lock);
			return DELOG_ESHUTDOWN;
		}
		if (done) {
			b->cbs[b->ncbs].fn = done;
			b->cbs[b->ncbs].priv = priv;
			b->ncbs++;
		}
		if ((tx->flags & JRNL_TX_FLUSH_COMMIT) ||
		    ((tx->flags & JRNL_TX_FLUSH_SPAN) && tx->start_lsn != b->lsn))
			b->need_flush = true;
		if (tx->flags & JRNL_TX_FUA_COMMIT)
			b->need_fua = true;
		if ((tx->flags & JRNL_TX_WAIT_PREV) && tx->start_lsn != b->lsn)
			b->wait_prev = true;
		if (tx->flags & (JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT))
			lb_switch(log, b);
		op_end(log, b);
		err = 0;
	}
	pthread_mutex_unlock(&log->lock);
	return err;
}

/* Wait (lock held) until every record before @target was processed. */
static void wait_done(struct jrnl_log *log, uint64_t target)
{
	while (lsn_cmp(log->done_lsn, target) < 0)
		pthread_cond_wait(&log->cond, &log->lock);
}

int jrnl_log_force(struct jrnl_log *log)
{
	int err;

	pthread_mutex_lock(&log->lock);
	while (log->op_busy)
		pthread_cond_wait(&log->cond, &log->lock);
	switch_open(log);
	/* log_kick, but the newest buffer written on this thread (L10). */
	log_process(log);
	log_push_mode(log, true);
	log_process(log);
	wait_done(log, log->head);
	err = log->error;
	pthread_mutex_unlock(&log->lock);
	return err;
}

void jrnl_log_switch(struct jrnl_log *log)
{
	pthread_mutex_lock(&log->lock);
	while (log->op_busy)
		pthread_cond_wait(&log->cond, &log->lock);
	switch_open(log);
	log_kick(log);
	pthread_mutex_unlock(&log->lock);
}

int jrnl_log_flush(struct jrnl_log *log)
{
	struct jflush jf = { .waiter = true };
	int err;

	pthread_mutex_lock(&log->lock);
	err = log->error;
	if (!err)
		err = flush_queue(log, &jf);
	pthread_mutex_unlock(&log->lock);
	if (err)
		return err;
	/* On the calling thread on the descriptor backends: an fdatasync here (L10). */
	err = iol_submit_wait(&jf.req);
	iol_req_release(&jf.req);
	pthread_mutex_lock(&log->lock);
	jf.status = err;
	jf.done = true;
	flush_resolve(log);
	while (!jf.resolved)
		pthread_cond_wait(&log->cond, &log->lock);
	err = jf.result;
	pthread_mutex_unlock(&log->lock);
	return err;
}

int jrnl_log_flush_async(struct jrnl_log *log, jrnl_flush_fn fn, void *priv)
{
	struct jflush *jf = calloc(1, sizeof(*jf));
	int err;

	pthread_mutex_lock(&log->lock);
	err = log->error ? log->error : !jf ? -ENOMEM : 0;
	if (!err) {
		jf->fn = fn;
		jf->priv = priv;
		err = flush_queue(log, jf);
	}
	pthread_mutex_unlock(&log->lock);
	if (err) {
		free(jf);
		fn(priv, err);
		return err;
	}
	err = iol_submit(&jf->req);
	if (err) {
		/* Completed here with the refusal, in issue order: fn runs (maybe later,
		 * after the flushes before it) with the error. */
		pthread_mutex_lock(&log->lock);
		flush_refused(log, jf, err);
		pthread_mutex_unlock(&log->lock);
	}
	return err;
}

int jrnl_log_unmount(struct jrnl_log *log)
{
	struct jrnl_unmount um = { .magic = JRNL_UNMOUNT_MAGIC };
	struct op_src src = { { &um, NULL }, { sizeof(um), 0 } };
	struct jrnl_op h = { .len = sizeof(um), .flags = JRNL_OP_UNMOUNT, .type = JRNL_T_UNMOUNT };
	struct logbuf *b;
	int err = jrnl_log_force(log);

	if (err)
		return err;
	pthread_mutex_lock(&log->lock);
	/* (L15) Nothing written and the tail where it was since the log last ended in a
	 * durable unmount record: it still does. */
	if (!log->error && log->clean_head && log->clean_head == log->head &&
	    log->clean_tail == log->tail) {
		pthread_mutex_unlock(&log->lock);
		return 0;
	}
	h.tid = tid_next(log);
	err = op_write(log, &h, &src, false, &b);
	if (!err) {
		b->need_flush = b->need_fua = b->wait_prev = true;
		if (!log->error)
			lb_switch(log, b);
		op_end(log, b);
		wait_done(log, log->head);
		err = log->error;
		if (!err) {
			/* It completed last (PREFLUSH|FUA: durable), naming completed_tail. */
			log->clean_head = log->head;
			log->clean_tail = log->completed_tail;
		}
	}
	pthread_mutex_unlock(&log->lock);
	return err;
}

int jrnl_log_error(const struct jrnl_log *log)
{
	return __atomic_load_n(&log->error, __ATOMIC_ACQUIRE);
}

bool jrnl_log_cover_wanted_locked(const struct jrnl_log *log)
{
	return !log->error && lsn_cmp(reuse_tail(log), log->tail) < 0;
}

bool jrnl_log_cover_wanted(const struct jrnl_log *clog)
{
	struct jrnl_log *log = (struct jrnl_log *)clog;
	bool want;

	pthread_mutex_lock(&log->lock);
	want = jrnl_log_cover_wanted_locked(log);
	pthread_mutex_unlock(&log->lock);
	return want;
}

int jrnl_log_cover(struct jrnl_log *log)
{
	int err = jrnl_log_force(log);

	if (err)
		return err;
	pthread_mutex_lock(&log->lock);
	while (log->op_busy)
		pthread_cond_wait(&log->cond, &log->lock);
	if (!log->error && lsn_cmp(log->completed_tail, log->tail) < 0) {
		/* Every record that completed names an older tail: write one that names
		 * this one.  The buffer may still be in flight from the previous lap. */
		struct logbuf *b = &log->bufs[log->cur];

		while (b->state != LB_ACTIVE && !log->error)
			pthread_cond_wait(&log->cond, &log->lock);
		if (!log->error && b == &log->bufs[log->cur] && !log->op_busy) {
			if (!b->off) {
				b->lsn = log->head;
				b->cover = true; /* room kept by plan_op (L12) */
			}
			lb_switch(log, b);
		}
	}
	pthread_mutex_unlock(&log->lock);
	err = jrnl_log_force(log);
	if (!err && !log->no_flush && !(err = jrnl_log_flush(log))) {
		pthread_mutex_lock(&log->lock);
		log->st.cover_flushes++;
		pthread_mutex_unlock(&log->lock);
	}
	return err;
}

int jrnl_log_close(struct jrnl_log *log)
{
	int err;

	if (!log)
		return 0;
	err = jrnl_log_force(log);
	pthread_mutex_lock(&log->lock);
	while (log->inflight || log->submitting || log->processing || log->async_flushes ||
	       log->bound_flush || log->fq_resolving)
		pthread_cond_wait(&log->cond, &log->lock);
	pthread_mutex_unlock(&log->lock);
	log_free(log);
	return err;
}

void jrnl_log_set_tail(struct jrnl_log *log, uint64_t tail_lsn)
{
	pthread_mutex_lock(&log->lock);
	if (lsn_cmp(tail_lsn, log->head) > 0)
		tail_lsn = log->head;
	if (lsn_cmp(tail_lsn, log->tail) > 0 && jrnl_lsn_sector(tail_lsn) < log->geom.log_sectors) {
		log->tail = tail_lsn;
		log->clean_head = log->clean_tail = 0; /* (L15) */
		jrnl_log_space_event(log);             /* a cover may now free space (L16) */
	}
	pthread_mutex_unlock(&log->lock);
}

uint64_t jrnl_log_head(const struct jrnl_log *clog)
{
	struct jrnl_log *log = (struct jrnl_log *)clog;
	uint64_t head;

	pthread_mutex_lock(&log->lock);
	head = log->head;
	pthread_mutex_unlock(&log->lock);
	return head;
}

uint64_t jrnl_log_free_locked(const struct jrnl_log *log)
{
	uint64_t used = used_sectors(log) + 1 + log->hdr_sectors; /* as plan_op counts */

	return used >= log->geom.log_sectors ? 0 :
					       (log->geom.log_sectors - used) * log->geom.sector;
}

uint64_t jrnl_log_free_bytes(const struct jrnl_log *clog)
{
	struct jrnl_log *log = (struct jrnl_log *)clog;
	uint64_t f;

	pthread_mutex_lock(&log->lock);
	f = jrnl_log_free_locked(log);
	pthread_mutex_unlock(&log->lock);
	return f;
}

uint64_t jrnl_log_tx_bytes(const struct jrnl_log *log, uint32_t nitems, uint64_t item_bytes)
{
	uint64_t sector = log->geom.sector;
	/* Bytes lost in each buffer a transaction passes through: room left unused at the
	 * switch (less than an op header and a COMMIT), a continuation op header and the
	 * split's rounding to 8. */
	uint64_t loss = OPHDR + sizeof(struct jrnl_commit) + OPHDR + 8;
	/* Per record touched: that, its header sectors and the last sector's rounding. */
	uint64_t per_rec = loss + (uint64_t)log->hdr_sectors * sector + sector;
	uint64_t ops = MIN_TX_BYTES + (uint64_t)nitems * (OPHDR + sizeof(struct jrnl_item) + 7) +
		       item_bytes;
	/* The first and last records may hold little of it; every one in between holds at
	 * least cap - loss op bytes of it. */
	uint64_t recs = 2 + ops / (log->cap - loss);
	uint64_t bytes = ops + recs * per_rec;

	return (bytes + sector - 1) / sector * sector;
}

void jrnl_log_stats(const struct jrnl_log *clog, struct jrnl_log_stats *out)
{
	struct jrnl_log *log = (struct jrnl_log *)clog;

	pthread_mutex_lock(&log->lock);
	*out = log->st;
	out->head_lsn = log->head;
	out->tail_lsn = log->tail;
	out->completed_lsn = log->completed_lsn;
	out->durable_lsn = log->durable_lsn;
	out->hdr_sectors = log->hdr_sectors;
	out->payload_capacity = log->cap;
	pthread_mutex_unlock(&log->lock);
}
