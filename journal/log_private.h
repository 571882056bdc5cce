/*
 * log_private.h - the log writer's state (log.c), shared with grant.c, which keeps the
 * log space promised ahead of writing under the same lock and calls into log.c (never
 * the reverse).  Not for other layers.
 */
#ifndef DELOG_JOURNAL_LOG_PRIVATE_H
#define DELOG_JOURNAL_LOG_PRIVATE_H

#include "jrnl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct logbuf;
struct jflush;
struct grant_waiter;

/* grant.c's state: every field under jrnl_log.lock (grant.c says why). */
struct grant {
	uint64_t granted; /* reservations of open transactions + charges not yet written */
	uint64_t slack;   /* kept back for per-record overheads and unmount records (GR2) */
	uint64_t reserve; /* kept back from all but JRNL_GRANT_RESERVE reservations (GR8) */
	uint64_t tickets; /* open transactions, counted before their first grant (GR5) */
	struct grant_waiter *waiters;
	unsigned nwaiters;
	bool shut;           /* the layer above shut down: every call fails */
	uint64_t item_ovh16; /* record bytes per useful op byte, less one, in 1/65536 (GR3) */
	uint64_t tx_max;     /* the grant of the largest transaction allowed (GR3) */
	uint64_t waits;      /* blocking calls that found no space at once */
	bool nowait_refused; /* a NOWAIT reservation failed since the last space event (GR7) */
	const struct jrnl_grant_ops *ops;
	void *priv;
};

struct jrnl_log {
	struct iol_dev *dev;
	struct jrnl_geom geom;
	unsigned nbufs;
	uint32_t bsize;
	uint32_t hdr_sectors; /* H */
	uint32_t cap;         /* op bytes per buffer: P_max * sector */

	pthread_mutex_t lock;
	pthread_cond_t cond;    /* buffer back to ACTIVE, op done, callbacks run, tokens */
	unsigned async_flushes; /* async and L13 flushes not yet taken (close waits) */
	struct logbuf *bufs;
	unsigned cur;      /* the open buffer (ACTIVE, or still in flight) */
	unsigned oldest;   /* oldest buffer not ACTIVE, if inflight */
	unsigned inflight; /* buffers not ACTIVE; cur == (oldest + inflight) % n */
	unsigned next_sub; /* oldest buffer not yet submitted */

	uint64_t head; /* where the open buffer's record goes */
	uint64_t tail;
	uint64_t prev_lsn;                             /* LSN of the last record switched out */
	uint64_t completed_lsn, done_lsn, durable_lsn; /* (L5), (L6) */
	uint64_t completed_tail; /* sealed tail of the last record counted in completed_lsn */
	uint64_t durable_tail;   /* sealed tail of the newest record known durable (L12) */
	uint64_t window;         /* the unflushed bound in sectors (L13) */
	uint64_t clean_head;     /* (L15) the log ends here in a durable unmount record ... */
	uint64_t clean_tail;     /* ... naming this tail (0, 0: it does not) */
	bool no_flush;           /* the caller never flushes (L12, L13) */
	bool bound_flush;        /* a flush for L13 is in flight */
	struct jflush *bound_jf;
	/* Standalone flushes in issue order (L14): in flight, or done and waiting for an
	 * earlier one; fl_issued counts those issued, fl_resolved those taken in order. */
	struct jflush *fq_head, *fq_tail;
	uint64_t fl_issued, fl_resolved;
	uint64_t flagged_end; /* end of the newest PREFLUSH/FUA record submitted (L14) */
	bool fq_resolving;    /* token: one thread takes results and runs callbacks */
	uint32_t next_tid;
	int error;                   /* first I/O error: the log is shut down (L8) */
	int cb_err;                  /* first error in LSN order, for callbacks */
	bool op_busy;                /* the writer is inside an op */
	bool submitting, processing; /* tokens (L3), (L1) */

	struct jrnl_log_stats st;
	pthread_cond_t space_cond; /* space events (L16) */
	uint64_t space_gen;        /* space events so far (L16) */
	struct grant grant;        /* log space promised ahead of writing (grant.c) */
};

/* log.c: free bytes a record may still take, as plan_op counts them (lock held). */
uint64_t jrnl_log_free_locked(const struct jrnl_log *log);
/* log.c: a space event (L16): waiters for space look again, and a NOWAIT caller refused
 * since the last one is told (grant.c GR7).  log->lock held. */
void jrnl_log_space_event(struct jrnl_log *log);
/* Its first half: the blocking waiters look again, no NOWAIT caller is told. */
void jrnl_log_space_wake(struct jrnl_log *log);
/* grant.c: hand a checkpoint's grant back, log->lock held (jrnl_tx_commit: GR6). */
void jrnl_grant_ckpt_end_locked(struct jrnl_log *log, uint64_t held);
/* log.c: no durable record names log->tail yet (L12; lock held). */
bool jrnl_log_cover_wanted_locked(const struct jrnl_log *log);

#endif
