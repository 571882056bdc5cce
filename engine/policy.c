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
 *  single  no flag on any write; a standalone flush issued after the commit record's
 *          buffer and all before it completed makes them stable; then the checkpoint is
 *          durable.  A crash before that flush may leave any subset of the checkpoint's
 *          sectors: recovery treats the damage as a torn write (nothing vouches for it:
 *          every durable_lsn written lies before it) and the commit op's item CRC
 *          refuses a checkpoint whose records are stale.  Who issues the flush: the
 *          chain, driven by the commit records' completions, one flush covering every
 *          checkpoint completed before it (P1-P3 below), so the writer goes on to the next
 *          checkpoint at once; or a lone forcer, on its own thread after its write (one
 *          pwritev2, then one fdatasync on the descriptor backends, journal/log.c L10,
 *          iolayer/submit.c IO3: like the raw write + fdatasync baseline, no hand-off).
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
 *       push.c), so durable_seq = s means every checkpoint <= s is stable; single's
 *       chained flushes and a lone forcer's (P1-P3 below) may complete in either order,
 *       which is why durable_seq only grows.
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
	/* The tail follows first (S1), so whoever sees the new durable_seq sees it too. */
	if (seq > atomic_load(&log->durable_seq))
		space_durable_moved(log, seq);
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
	if (moved) {
		pub_durable(log, seq); /* publish.c PB1: after the log's own */
		force_wake_durable(log, old, seq);
		/* The waiters for space read the watermark (S4, S5): wake them once it moved,
		 * not before (journal/grant.c GR4), even with the tail where it was. */
		jrnl_grant_wake(log->jl);
	}
}

static int async_before(struct delog *log)
{
	uint64_t snap = space_pending_tail(log);
	int err = jrnl_log_flush(log->jl);

	if (!err)
		space_flushed(log, snap);
	return err;
}

/*
 * single's flush chain.  When transactions wait behind a checkpoint, its writer does not
 * wait for it: the buffers go out (jrnl_log_switch) and the writer moves on to the next
 * checkpoint at once, so the writes of later checkpoints overlap the flushes of earlier
 * ones.  Durability comes from the chain, driven by the commit records' completions:
 *  (P1) A chain flush covers fl_cover, the done_seq read before it is queued.  A
 *       checkpoint is counted in done_seq only after its commit record, and (L1) every
 *       earlier record, completed, and the journal snapshots what a flush covers when it
 *       is queued (L11), so every record of checkpoints <= fl_cover completed before the
 *       flush was issued and is stable when it succeeds: then, and only then,
 *       log_durable(fl_cover).  One flush covers every checkpoint completed before it,
 *       whichever checkpoint asked for it.
 *  (P2) At most SINGLE_CHAIN_MAX (2) chain flushes are in flight: one the device
 *       performs, one queued behind it, so the device goes from one flush to the next
 *       without waiting for a thread of ours.  A commit record completing while the
 *       chain is full claims nothing; each chain flush's completion issues the next one
 *       if done_seq passed the newest cover.  So no completed checkpoint is left without a
 *       flush on its way, and every flush issued is one the device performs: with more
 *       in flight the block layer merges the waiting ones into one, and the flushes
 *       delog counts would no longer be the device's.
 *  (P3) A lone forcer (it pushed the checkpoint it waits for, or the push thread pushing
 *       for delog_force_nowait, push.c; and nothing waits in the open context) makes it
 *       durable itself, as the raw write + fdatasync does: jrnl_log_force, then
 *       jrnl_log_flush, both on its thread (one pwritev2 and one fdatasync on the
 *       descriptor backends, journal/log.c L10; the chain would cost two hand-offs
 *       between threads per commit).  It declares sync_seq first: its flush, issued after the force saw
 *       every record up to its commit record complete, covers every checkpoint <=
 *       sync_seq, so their completions ask the chain for nothing.
 * Flush results are taken in issue order and a failed one fails every later one (L14),
 * so an acknowledgement never rests on a flush issued after one that failed; durable_seq
 * only grows (D2), so the chain's and the lone forcer's flushes may complete in any
 * order.
 */
struct single_flush {
	struct delog *log;
	uint64_t cover, snap; /* checkpoints and the tail snapshot it makes stable */
};

/* (P2) chain flushes in flight at most: one at the device, one queued behind it. */
#define SINGLE_CHAIN_MAX 2u

static void single_flushed(void *priv, int err);

/* Claim the next chain flush if one is due (checkpoints completed past the newest cover
 * and past what a lone forcer flushes) and the chain has room (log->lock held): returns
 * the checkpoints it will cover (P1), or 0. */
static uint64_t single_chain_claim(struct delog *log)
{
	if (atomic_load(&log->error) || log->done_seq <= log->fl_cover ||
	    log->done_seq <= log->sync_seq || log->flushes_inflight >= SINGLE_CHAIN_MAX)
		return 0;
	log->flushes_inflight++;
	log->fl_cover = log->done_seq;
	return log->fl_cover;
}

/* (P1): issue the chain flush claimed for checkpoints up to @cover. */
static void single_chain_issue(struct delog *log, uint64_t cover)
{
	struct single_flush *f = malloc(sizeof(*f));

	if (!f) {
		log_shutdown(log, -ENOMEM);
		pthread_mutex_lock(&log->lock);
		log->flushes_inflight--;
		pthread_cond_broadcast(&log->writer_cond);
		pthread_mutex_unlock(&log->lock);
		return;
	}
	*f = (struct single_flush){ log, cover, space_pending_tail(log) };
	jrnl_log_flush_async(log->jl, single_flushed, f); /* calls single_flushed anyway */
}

static void single_flushed(void *priv, int err)
{
	struct single_flush *f = priv;
	struct delog *log = f->log;
	uint64_t next;

	if (err) {
		log_shutdown(log, err);
	} else {
		space_flushed(log, f->snap);
		log_durable(log, f->cover);
	}
	free(f);
	pthread_mutex_lock(&log->lock);
	log->flushes_inflight--;
	/* (P2) the next flush, if commit records completed while the chain was full */
	next = single_chain_claim(log);
	pthread_cond_broadcast(&log->writer_cond);
	pthread_mutex_unlock(&log->lock);
	if (next)
		single_chain_issue(log, next);
}

static void single_done(struct delog *log, uint64_t seq)
{
	uint64_t cover;

	(void)seq; /* counted in done_seq, which the claim reads */
	pthread_mutex_lock(&log->lock);
	cover = single_chain_claim(log);
	pthread_mutex_unlock(&log->lock);
	if (cover)
		single_chain_issue(log, cover);
}

void policy_wait_flushes(struct delog *log)
{
	/* Every commit record's completion first: it may start a chain flush. */
	(void)jrnl_log_force(log->jl);
	pthread_mutex_lock(&log->lock);
	while (log->flushes_inflight)
		pthread_cond_wait(&log->writer_cond, &log->lock);
	pthread_mutex_unlock(&log->lock);
}

static int single_after(struct delog *log, uint64_t seq, bool forcer)
{
	uint64_t snap;
	int err;

	if (!forcer || atomic_load(&log->cur->ntx)) {
		/* Written by the push thread, or transactions wait in the open context
		 * (which only the writer, we, swaps): let the writes go and write the next
		 * checkpoint; the chain makes this one durable (P1, P2). */
		jrnl_log_switch(log->jl);
		return 0;
	}
	/* (P3) A lone forcer: every buffer up to the commit record completed ... */
	pthread_mutex_lock(&log->lock);
	log->sync_seq = seq;
	pthread_mutex_unlock(&log->lock);
	err = jrnl_log_force(log->jl);
	if (err)
		return err;
	/* ... then one flush makes them all stable, on this thread (an fdatasync on the
	 * descriptor backends: no hand-off). */
	snap = space_pending_tail(log);
	err = jrnl_log_flush(log->jl);
	if (err)
		return err;
	space_flushed(log, snap);
	log_durable(log, seq);
	return 0;
}

static int none_after(struct delog *log, uint64_t seq, bool forcer)
{
	(void)seq;
	(void)forcer;
	/* Push the buffer out now: no flag would switch it. */
	return jrnl_log_force(log->jl);
}

static const struct flush_policy policies[] = {
	[DELOG_FLUSH_SYNC] = {
		.name = "sync",
		.tx_flags = JRNL_TX_FLUSH_START | JRNL_TX_FLUSH_COMMIT | JRNL_TX_FUA_COMMIT |
			    JRNL_TX_WAIT_PREV,
		.done = log_durable,
	},
	[DELOG_FLUSH_ASYNC] = {
		.name = "async",
		.tx_flags = JRNL_TX_FLUSH_SPAN | JRNL_TX_FUA_COMMIT | JRNL_TX_WAIT_PREV,
		.before = async_before,
		.done = log_durable,
	},
	[DELOG_FLUSH_SINGLE] = {
		.name = "single",
		.tx_flags = 0,
		.after = single_after,
		.done = single_done,
	},
	[DELOG_FLUSH_NONE] = {
		.name = "none",
		.tx_flags = 0,
		.after = none_after,
		.done = log_durable,
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
	error_enter(__func__);
	if (!name || !out)
		return error_say(-EINVAL, "delog_flush_policy_parse: a NULL @%s",
				 name ? "out" : "name");
	for (unsigned i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		if (!strcmp(name, policies[i].name)) {
			*out = (enum delog_flush_policy)i;
			return 0;
		}
	}
	return error_say(-EINVAL, "'%.40s' is not a flush policy (sync, async, single, none)",
			 name);
}
