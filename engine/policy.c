/*
 * policy.c - the flush policies: which log writes of a checkpoint carry PREFLUSH / FUA
 * and when a standalone flush is issued.  docs/FLUSH-POLICIES.md states each rule and
 * its safety argument; in short, a checkpoint may be acknowledged (log_durable) only
 * once every record of it, and every record before it, is on stable media:
 *
 *  sync    START buffer PREFLUSH; COMMIT buffer PREFLUSH|FUA, issued only after every
 *          earlier buffer completed (JRNL_TX_WAIT_PREV).  The PREFLUSH makes the
 *          checkpoint's earlier buffers (and all before) stable, the FUA the commit
 *          record itself, so the done callback of the commit record proves durability.
 *          Device flushes per checkpoint: 1 (one buffer, PREFLUSH|FUA) to 2 (+ START's).
 *  async   a standalone flush is issued when the push starts and waited for before the
 *          first write (it makes everything completed before it stable, the role the
 *          START PREFLUSH plays in sync); the COMMIT buffer carries FUA, and PREFLUSH
 *          only when the checkpoint spans buffers, after the earlier ones completed.
 *  single  no flag on any write; after the commit record's buffer and all before it
 *          completed (jrnl_log_force), exactly one standalone flush makes them stable;
 *          then the checkpoint is durable.  A crash before that flush may leave any
 *          subset of the checkpoint's sectors: recovery treats the damage as a torn
 *          write (nothing vouches for it: every durable_lsn written lies before it) and
 *          the commit op's item CRC refuses a checkpoint whose records are stale.
 *          Both steps wait, so both run on the pusher's thread on the descriptor
 *          backends (journal/log.c L10, iolayer/io.c IO5): a lone client that pushes its
 *          own checkpoint makes one pwritev2, then one fdatasync, like the raw
 *          write + fdatasync baseline, with no hand-off to a completion thread.
 *          When transactions wait in the open context the flush is pipelined instead
 *          (jrnl_log_flush_async): the checkpoint becomes durable in the flush's
 *          completion while the next push writes; see single_after for why any
 *          completion order of those flushes is safe.
 *  none    no flushes: completion is taken as durability.  Not crash-safe.
 *
 * Rule S2 of space.c (before log space is reused, the in-place writes that freed it
 * must be stable; docs/DESIGN.md section 4) is kept by space.c for every policy: a tail
 * movement allowed by delog_item_written reaches the journal only after a standalone
 * flush issued after it (the async and single flushes, or one space.c issues).
 */
#include "engine_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * The checkpoint @seq is durable, on the policy's evidence.  The one store of durable_seq:
 *  (D1) durable_seq is the only thing that acknowledges: delog_force returns 0 only once
 *       durable_seq >= its sequence, and log_durable moves durable_seq only on the flush
 *       policy's evidence (below) and only while the log is not shut down.
 *  (D2) log_durable is called in sequence order (commit records complete in LSN order,
 *       push.c), so durable_seq = s means every checkpoint <= s is stable; a pipelined
 *       single flush may complete out of order, which is why durable_seq only grows.
 */
void log_durable(struct delog *log, uint64_t seq)
{
	uint64_t old = 0;
	bool moved = false;
	int err;

	/* Relogged items move in the AIL before anyone can see the checkpoint durable (S3
	 * in space.c: a delog_item_written for it then finds the key at its new copy). */
	if (log->space.tracking && (err = space_ckpt_durable(log, seq))) {
		log_shutdown(log, err);
		return;
	}
	pthread_mutex_lock(&log->lock);
	if (!atomic_load(&log->error) && seq > atomic_load(&log->durable_seq)) {
		old = atomic_load(&log->durable_seq);
		atomic_store(&log->durable_seq, seq);
		moved = true;
		/* The eventfd first: a force that returns finds it readable already. */
		efd_signal(log);
	}
	pthread_mutex_unlock(&log->lock);
	/* F1 (wake.c) */
	if (moved)
		force_wake_durable(log, old, seq);
}

static int async_before(struct delog *log)
{
	uint64_t snap = space_pending_tail(log);
	int err = jrnl_log_flush(log->jl);

	if (!err)
		space_flushed(log, snap);
	return err;
}

/* A pipelined single flush: checkpoint @seq and the tail snapshot it makes stable. */
struct single_flush {
	struct delog *log;
	uint64_t seq, snap;
};

static void single_flushed(void *priv, int err)
{
	struct single_flush *f = priv;
	struct delog *log = f->log;

	if (err) {
		log_shutdown(log, err);
	} else {
		space_flushed(log, f->snap);
		log_durable(log, f->seq);
	}
	free(f);
	pthread_mutex_lock(&log->lock);
	log->flushes_inflight--;
	pthread_cond_broadcast(&log->writer_cond);
	pthread_mutex_unlock(&log->lock);
}

void policy_wait_flushes(struct delog *log)
{
	pthread_mutex_lock(&log->lock);
	while (log->flushes_inflight)
		pthread_cond_wait(&log->writer_cond, &log->lock);
	pthread_mutex_unlock(&log->lock);
}

static int single_after(struct delog *log, uint64_t seq)
{
	struct single_flush *f;
	uint64_t snap;
	int err;

	/* Every buffer up to the commit record completed ... */
	err = jrnl_log_force(log->jl);
	if (err)
		return err;
	/* ... then one flush makes them all stable. */
	snap = space_pending_tail(log);
	/*
	 * Pipelined when transactions are already waiting in the open context (log->cur:
	 * only the writer, which we are, swaps it): the flush goes out asynchronously and
	 * this checkpoint becomes durable in its completion, while the next push writes.
	 * Safe because the flush covers every buffer that completed before it was
	 * submitted (this checkpoint's, all of them: jrnl_log_force above), and a later
	 * checkpoint's flush, issued only after its own writes completed, covers this one
	 * too, so durability may be declared in either completion order (log_durable keeps
	 * the maximum).  Otherwise (a lone client waiting for this very checkpoint) the
	 * flush is waited for here, which on the descriptor backends is an fdatasync on
	 * this thread (no hand-off).
	 */
	f = atomic_load(&log->cur->ntx) ? malloc(sizeof(*f)) : NULL;
	if (f) {
		*f = (struct single_flush){ log, seq, snap };
		pthread_mutex_lock(&log->lock);
		log->flushes_inflight++;
		pthread_mutex_unlock(&log->lock);
		err = jrnl_log_flush_async(log->jl, single_flushed, f);
		return err; /* single_flushed ran or will run, with any error */
	}
	err = jrnl_log_flush(log->jl);
	if (err)
		return err;
	space_flushed(log, snap);
	log_durable(log, seq);
	return 0;
}

static int none_after(struct delog *log, uint64_t seq)
{
	(void)seq;
	/* Push the buffer out now: no flag would switch it. */
	return jrnl_log_force(log->jl);
}

static const struct flush_policy policies[] = {
	[DELOG_FLUSH_SYNC] = {
		.name = "sync",
		.tx_flags = JRNL_TX_FLUSH_START | JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT |
			    JRNL_TX_WAIT_PREV,
		.durable_on_done = true,
	},
	[DELOG_FLUSH_ASYNC] = {
		.name = "async",
		.tx_flags = JRNL_TX_FLUSH_SPAN | JRNL_TX_FUA_COMMIT | JRNL_TX_WAIT_PREV,
		.before = async_before,
		.durable_on_done = true,
	},
	[DELOG_FLUSH_SINGLE] = {
		.name = "single",
		.tx_flags = 0,
		.after = single_after,
		.durable_on_done = false,
	},
	[DELOG_FLUSH_NONE] = {
		.name = "none",
		.tx_flags = 0,
		.after = none_after,
		.durable_on_done = true,
		.never_flushes = true,
	},
};

const struct flush_policy *flush_policy_get(enum delog_flush_policy p)
{
	return (unsigned)p < sizeof(policies) / sizeof(policies[0]) ? &policies[p] : NULL;
}

const char *delog_flush_policy_name(enum delog_flush_policy p)
{
	const struct flush_policy *fp = flush_policy_get(p);

	return fp ? fp->name : NULL;
}

int delog_flush_policy_parse(const char *name, enum delog_flush_policy *out)
{
	for (unsigned i = 0; name && i < sizeof(policies) / sizeof(policies[0]); i++) {
		if (!strcmp(name, policies[i].name)) {
			*out = (enum delog_flush_policy)i;
			return 0;
		}
	}
	return -EINVAL;
}
