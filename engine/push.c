/*
 * push.c - the push thread: turns the open CIL context into a checkpoint in the log
 * (xlog_cil_push_work).
 *
 * It wakes when a force (delog_force, delog_force_nowait) asks for a sequence that is
 * still open (or a space waiter whose space only a newer durable checkpoint frees:
 * space.c S4), when the CIL passed push_bytes, when space runs low (to call the push
 * callback, or to make the tail durable for a NOWAIT caller: jrnl_log_cover,
 * journal/log.c L12), and at close.  A push:
 *   1. swaps log->cur for the empty spare context under ctx_lock held for write (CIL1 in
 *      cil.c): from then on no commit can reach the old one;
 *   2. tops the CIL's charge up to the checkpoint's exact bound (jrnl_grant_ckpt_begin,
 *      journal/grant.c), registers the checkpoint in the AIL ring at the journal's
 *      head, and runs the policy's before hook (async: flush and wait);
 *   3. writes one log transaction: START(seq), one ITEM per key (the newest copy, in the
 *      order the keys were first logged: cil.c CIL6), COMMIT, with the policy's flags;
 *      ckpt_done runs when the commit record completed;
 *   4. the charge goes back inside jrnl_tx_commit, as the head comes to count the bytes
 *      and before the checkpoint can complete (journal/grant.c GR6); resets the context
 *      as the next spare, and runs the policy's after hook (single: the buffers go out,
 *      or a lone forcer's force + one flush).
 *
 * Who pushes: this thread, or a forcing thread that finds nobody writing (delog_force
 * takes write_lock with a trylock and pushes itself, saving two thread hand-offs on the
 * latency path of a lone client; under single the policy's force and flush then run on
 * that thread too, policy.c).  write_lock is held across the policy's I/O, but no
 * committer takes it, and a forcer that finds it taken hands its sequence to this thread.
 * This thread, pushing because delog_force_nowait asked, is that force's forcer in the
 * same way: under single it writes and flushes the checkpoint itself when nothing waits
 * behind it (policy.c P3), so a non-blocking force costs one hand-off there and one back
 * (the eventfd), not the chain's two more.
 * write_lock makes them one writer at a time (jrnl_tx_* need one writer), so checkpoints
 * reach the log in sequence order, and their commit records complete in LSN order
 * (journal invariant L1), hence in sequence order: ckpt_done only has to count (it may
 * now run on the pusher's own thread, inside the single policy's force).
 * Several checkpoints may be in flight under sync and async (nothing here waits for a
 * write), and under single too, whose flush chain makes them durable (policy.c P1-P3);
 * only a lone forcer under single waits here for its checkpoint's write and flush, while
 * the next context fills.
 * Sequence numbers of written checkpoints are consecutive: an empty context is never
 * pushed, so the open sequence moves on only when a checkpoint is written.
 */
#include "engine_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Done callback of a checkpoint's commit record (journal completion thread). */
static void ckpt_done(void *priv, int err, uint64_t commit_lsn, uint64_t end_lsn)
{
	struct delog *log = priv;
	uint64_t seq;

	(void)commit_lsn;
	(void)end_lsn;
	if (err) {
		log_shutdown(log, err);
		return;
	}
	pthread_mutex_lock(&log->lock);
	seq = ++log->done_seq;
	pthread_mutex_unlock(&log->lock);
	log->policy->done(log, seq);
}

struct ckpt_writer {
	struct delog *log;
	struct jrnl_wtx *tx;
	uint64_t seq;
};

/* One item into the checkpoint's log transaction (cil_ctx_order's callback). */
static int write_item(void *arg, const struct cil_item *it, const unsigned char *data)
{
	struct ckpt_writer *w = arg;
	int err = jrnl_tx_item(w->tx, it->key, data, it->len);

	if (!err && w->log->space.tracking)
		err = space_ail_log(w->log, it->key, w->seq);
	return err;
}

static int write_ckpt(struct delog *log, struct cil_ctx *c, bool forcer)
{
	uint64_t n = atomic_load(&c->nitems), bytes = atomic_load(&c->data_bytes);
	uint64_t held = jrnl_grant_ckpt_begin(log->jl, (uint32_t)n, bytes, atomic_load(&c->cost));
	struct jrnl_wtx tx;
	int err;

	/* Every item's bytes go into the log buffers once (delog_stats copied_bytes). */
	atomic_fetch_add_explicit(&log->st_copied_bytes, bytes, memory_order_relaxed);
	err = space_ckpt_add(log, c->seq, jrnl_log_head(log->jl));
	if (!err && log->policy->before)
		err = log->policy->before(log);
	if (!err)
		err = jrnl_tx_start(log->jl, c->seq, log->policy->tx_flags, &tx);
	if (!err) {
		struct ckpt_writer w = { log, &tx, c->seq };

		tx.grant = held; /* jrnl_tx_commit hands it back (journal/grant.c GR6) */
		err = cil_ctx_order(c, write_item, &w); /* cil.c CIL6 */
		if (!err)
			err = jrnl_tx_commit(&tx, ckpt_done, log);
		held = tx.grant; /* 0 once jrnl_tx_commit ran */
	}
	if (held)
		jrnl_grant_ckpt_end(log->jl, held);
	if (err)
		return err;
	pthread_mutex_lock(&log->lock);
	log->pushed_seq = c->seq;
	log->st_ckpts++;
	log->st_ckpt_items += n;
	log->st_ckpt_bytes += bytes;
	log->st_ckpt_txs += atomic_load(&c->ntx);
	pthread_mutex_unlock(&log->lock);
	atomic_fetch_add(&log->st_relogged, atomic_load(&c->relogged));
	if (log->policy->after)
		err = log->policy->after(log, c->seq, forcer);
	return err;
}

int push_now(struct delog *log, bool forcer)
{
	struct cil_ctx *old;
	int err;

	/* 1. swap (CIL1) */
	pthread_rwlock_wrlock(&log->ctx_lock);
	if (atomic_load(&log->error) || !atomic_load(&log->cur->ntx)) {
		pthread_rwlock_unlock(&log->ctx_lock);
		return atomic_load(&log->error) ? DELOG_ESHUTDOWN : 0;
	}
	old = log->cur;
	log->cur = log->spare;
	log->cur->seq = old->seq + 1;
	atomic_store(&log->open_seq, log->cur->seq);
	log->spare = NULL;
	pthread_rwlock_unlock(&log->ctx_lock);
	writer_wake(log); /* committers waiting at 2x (CIL5) */

	/* 2.-4. */
	err = write_ckpt(log, old, forcer);
	cil_ctx_reset(old);
	pthread_mutex_lock(&log->lock);
	log->spare = old;
	pthread_mutex_unlock(&log->lock);
	if (err) {
		log_shutdown(log, err);
		return err;
	}
	if (log->push_cb && jrnl_grant_avail(log->jl) < log->space.log_size / 4) {
		atomic_store(&log->space.low, true);
		push_wake(log);
	}
	return 0;
}

static void *push_main(void *arg)
{
	struct delog *log = arg;

	for (;;) {
		bool has, want, forced;
		uint64_t cseq, cost, target;

		pthread_rwlock_rdlock(&log->ctx_lock);
		has = atomic_load(&log->cur->ntx) != 0;
		cseq = log->cur->seq;
		cost = atomic_load(&log->cur->cost);
		pthread_rwlock_unlock(&log->ctx_lock);

		pthread_mutex_lock(&log->lock);
		/* A force or the CIL limit asked (flags set under this lock, so no wakeup is
		 * lost between the reads above and the wait below). */
		forced = log->nowait_seq >= cseq;
		want = atomic_load(&log->force_seq) >= cseq || log->push_wanted ||
		       (has && (log->stopping || cost >= log->push_bytes));
		if (atomic_exchange(&log->space.cover, false)) {
			uint64_t delay = atomic_load(&log->space.cover_delay_ns);

			pthread_mutex_unlock(&log->lock);
			if (delay)
				nanosleep(&(struct timespec){ (time_t)(delay / 1000000000u),
							      (long)(delay % 1000000000u) },
					  NULL);
			space_cover(log);
			continue;
		}
		if (log->push_cb && atomic_load(&log->space.low)) {
			pthread_mutex_unlock(&log->lock);
			target = space_push_target(log);
			if (target && !atomic_load(&log->error))
				log->push_cb(log->push_arg, log, target);
			continue;
		}
		if (atomic_load(&log->error) || (!want && log->stopping)) {
			pthread_mutex_unlock(&log->lock);
			break;
		}
		if (!want) {
			pthread_cond_wait(&log->push_cond, &log->lock);
			pthread_mutex_unlock(&log->lock);
			continue;
		}
		log->push_wanted = false;
		pthread_mutex_unlock(&log->lock);

		/* Pushed for delog_force_nowait: this thread is its forcer, as a lone forcer
		 * that pushes itself is (policy.c P3).  A blocking force hands its sequence
		 * over only when another writer held write_lock: under load, where the
		 * chain serves better. */
		pthread_mutex_lock(&log->write_lock);
		push_now(log, forced);
		pthread_mutex_unlock(&log->write_lock);
	}
	writer_wake(log);
	return NULL;
}

int push_start(struct delog *log)
{
	int err = pthread_create(&log->push_thread, NULL, push_main, log);

	if (err)
		return -err;
	log->push_running = true;
	return 0;
}

void push_stop(struct delog *log)
{
	if (!log->push_running)
		return;
	pthread_mutex_lock(&log->lock);
	log->stopping = true;
	pthread_mutex_unlock(&log->lock);
	push_wake(log);
	pthread_join(log->push_thread, NULL);
	log->push_running = false;
}
