/*
 * wake.c - the engine's lowest layer but one: shutdown and every wake-up.  Each file of
 * engine/ above calls down into this one, and this one calls only publish.c, a leaf
 * that calls nothing of theirs, so the files form layers (docs/ARCHITECTURE.md, "The
 * engine in one page"):
 *
 *   delog.c   the API: open (recovery), close, force, stats; reader.c beside it, a
 *             follower of a log that calls only the journal, publish.c and error.c
 *   push.c    the push thread and the checkpoint write
 *   cil.c     transactions and the CIL
 *   policy.c  the flush policies; log_durable, the only store of durable_seq
 *   space.c   the AIL ring, the tail, the grant's hooks
 *   wake.c    log_shutdown, the force queues, the push thread's and waiters' wake-ups
 *   publish.c the durable sequence in a shared page, for followers in other processes
 *
 * Who waits where, and who wakes them:
 *   push_cond    the push thread (only it), under log->lock.  It checks its flags
 *                under that lock before it waits (a force's force_seq, the CIL limit's
 *                push_wanted, space.low, space.cover, stopping, the error); each is set
 *                before push_request or push_wake signals with that lock held, so no
 *                wake-up is lost between its check and its wait.
 *   writer_cond  under log->lock: committers held at twice push_bytes (cil.c CIL5) wait
 *                for the open context to be swapped; close waits for the single policy's
 *                chained flushes (policy.c).  Broadcast after a swap, after such a
 *                flush completed, when the push thread exits, and at shutdown.
 *   waiters for space wait in the journal (journal/grant.c GR4), which wakes them when
 *                space comes back; the engine calls jrnl_grant_wake when a state its
 *                hooks read changed (space.c) and jrnl_grant_shutdown at shutdown.
 *   force_gen[]  the futex words of the force queues (F1 below): delog_force only.
 *   the eventfd  delog_durable_fd's pollers: written when durable_seq moves and at
 *                shutdown, once delog_durable_fd was called (the call writes it
 *                itself if durable_seq moved or the log shut down before).
 *
 *  (SD1) Shutdown is sticky: the first error is kept; every waiter (force, space,
 *       committers at the CIL limit, the push thread) is woken and fails with
 *       DELOG_ESHUTDOWN, and every later call fails fast.  What was acknowledged before
 *       stays recoverable because nothing is ever written over the live region (space.c)
 *       and a failed write acknowledges nothing after it.
 *  (F1) A force waits on a futex word, not a condition variable: force_gen[q], q = seq %
 *       FORCE_QUEUES, is bumped (then woken, if force_waiters[q] says anyone waits) after
 *       every store that can end a wait: durable_seq moving over a sequence of queue q
 *       (log_durable, policy.c), or the error (log_shutdown).  A waiter counts itself in
 *       force_waiters[q], reads force_gen[q], then checks durable_seq and error, and
 *       sleeps only if the word still holds what it read: every access is seq_cst, so
 *       either the waker's load of force_waiters sees the waiter (and wakes it), or the
 *       waiter's check sees the waker's store.  A woken force returns without taking
 *       log->lock: at 64 clients a checkpoint wakes ~20 forces at once, which with a
 *       condition variable each had to re-take that one mutex in turn.
 */
#include "engine_private.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* F1: the store that may end the waits of queue @q is done; wake them. */
static void force_wake(struct delog *log, unsigned q)
{
	atomic_fetch_add(&log->force_gen[q], 1);
	if (atomic_load(&log->force_waiters[q]))
		syscall(SYS_futex, (uint32_t *)&log->force_gen[q], FUTEX_WAKE_PRIVATE, INT_MAX,
			NULL, NULL, 0);
}

void force_wake_durable(struct delog *log, uint64_t old, uint64_t seq)
{
	/* The forces of old + 1 .. seq: one queue each, at most all of them. */
	for (uint64_t s = old + 1; s <= seq && s <= old + FORCE_QUEUES; s++)
		force_wake(log, (unsigned)(s % FORCE_QUEUES));
}

void force_wait(struct delog *log, uint64_t seq)
{
	unsigned q = (unsigned)(seq % FORCE_QUEUES);

	atomic_fetch_add(&log->force_waiters[q], 1);
	for (;;) {
		uint32_t gen = atomic_load(&log->force_gen[q]);

		if (atomic_load(&log->durable_seq) >= seq || atomic_load(&log->error))
			break;
		syscall(SYS_futex, (uint32_t *)&log->force_gen[q], FUTEX_WAIT_PRIVATE, gen, NULL,
			NULL, 0);
	}
	atomic_fetch_sub(&log->force_waiters[q], 1);
}

void efd_write(struct delog *log)
{
	uint64_t one = 1;
	ssize_t r = write(log->efd, &one, sizeof(one));

	(void)r;
}

void efd_signal(struct delog *log)
{
	/* Nobody holds the eventfd before the first delog_durable_fd (which makes up for
	 * what it missed): one syscall per checkpoint saved. */
	if (log->efd >= 0 && atomic_load(&log->efd_armed))
		efd_write(log);
}

void push_request(struct delog *log, uint64_t seq)
{
	if (seq > atomic_load(&log->force_seq))
		atomic_store(&log->force_seq, seq);
	if (!seq)
		log->push_wanted = true;
	pthread_cond_signal(&log->push_cond);
}

void push_request_open(struct delog *log)
{
	uint64_t seq;
	bool has;

	/* As delog_force asks: for the open sequence, only if it holds transactions (an
	 * empty context is never pushed, and a request for one would never be met).  The
	 * context read under ctx_lock may be swapped before the request: then its
	 * sequence is being written already and the request is met at once. */
	pthread_rwlock_rdlock(&log->ctx_lock);
	seq = log->cur->seq;
	has = atomic_load(&log->cur->ntx) != 0;
	pthread_rwlock_unlock(&log->ctx_lock);
	if (!has)
		return;
	pthread_mutex_lock(&log->lock);
	push_request(log, seq);
	pthread_mutex_unlock(&log->lock);
}

void push_wake(struct delog *log)
{
	pthread_mutex_lock(&log->lock);
	pthread_cond_signal(&log->push_cond);
	pthread_mutex_unlock(&log->lock);
}

void writer_wake(struct delog *log)
{
	pthread_mutex_lock(&log->lock);
	pthread_cond_broadcast(&log->writer_cond);
	pthread_mutex_unlock(&log->lock);
}

void log_shutdown(struct delog *log, int err)
{
	int expect = 0;

	/* The log keeps the cause, not the symptom: a journal call that failed because the
	 * journal shut down returns DELOG_ESHUTDOWN, possibly before the failed I/O's own
	 * completion reached ckpt_done; the journal holds the I/O error by then (L8). */
	if (err == DELOG_ESHUTDOWN && log->jl && jrnl_log_error(log->jl))
		err = jrnl_log_error(log->jl);
	if (!err)
		err = -EIO;
	atomic_compare_exchange_strong(&log->error, &expect, err);
	pthread_mutex_lock(&log->lock);
	pthread_cond_broadcast(&log->writer_cond);
	pthread_cond_broadcast(&log->push_cond);
	pthread_mutex_unlock(&log->lock);
	for (unsigned i = 0; i < FORCE_QUEUES; i++)
		force_wake(log, i);
	if (log->jl)
		jrnl_grant_shutdown(log->jl); /* waiters for space fail now */
	efd_signal(log);
	pub_state(log, PUB_SHUTDOWN); /* followers: nothing more will be durable */
}
