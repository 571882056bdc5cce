/*
 * grant.c - log space promised ahead of writing: the grant, what a promise costs, and
 * the wait for space (XFS: xlog_grant_head_*, in the log, under the log's lock).
 *
 * log.c knows what a record may still take (jrnl_log_free_locked: the live region behind
 * the reuse tail, L12, and the open buffer's record).  This file keeps what is promised
 * on top of it:
 *   granted = reservations of open transactions + charges of committed work not yet
 *             written (the layer above's CIL).
 * A transaction reserves at its begin, may grow while it logs, and at its end hands its
 * reservation back and leaves its charge (jrnl_grant_done); the checkpoint that writes
 * the committed work tops the charge up to the transaction's exact bound and hands it
 * back once the journal's head counts those bytes (jrnl_grant_ckpt_begin, then
 * jrnl_tx_commit: GR6).
 *
 * Invariants:
 *  (GR1) One owner, one lock: granted, the waiters and the tickets change only here, and
 *        every reading of free space against them is made under jrnl_log.lock, the lock
 *        under which the head and the tails move.  A promise is taken only if
 *        free - granted - slack >= it, so the promised work always fits: the journal
 *        never refuses a checkpoint half way (DELOG_ELOGFULL would shut the log down;
 *        it is a bug, never back-pressure).  While a checkpoint is being written its
 *        bytes are counted twice (by the head and by its charge), which only
 *        overstates use, and ends before the checkpoint can complete (GR6).
 *  (GR2) The slack (log/32 + two maximal buffers) absorbs the rounding of the cost
 *        estimates below, and holds the records written without a grant: the unmount
 *        record of a close (engine/delog.c U1); a cover record's room log.c keeps
 *        itself (plan_op, L12).
 *  (GR3) Cost.  An item of len data bytes costs len + ITEM_COST (its op and item
 *        headers, its padding) and its share of record headers and per-record losses,
 *        item_ovh16 (record bytes per useful op byte, less one, in 1/65536, from the
 *        buffer geometry): with 16 KiB buffers of 4 KiB sectors a third of every record
 *        is header.  A reservation of r bytes (item data plus DELOG_ITEM_OVERHEAD per
 *        item) is granted r + its share + the bytes of an empty transaction, which
 *        covers the cost of every item it reserved (with a = len + ITEM_COST, each
 *        item's len + 64 holds a, 64 - ITEM_COST >= 1 bytes for its rounding, and
 *        floor((sum a) x ovh) >= sum floor(a x ovh)): a transaction that logs what it
 *        reserved never asks for more.  tx_max is the grant of a reservation of a
 *        quarter of the log; jrnl_log_tx_bytes bounds what a checkpoint really takes.
 *  (GR4) No lost wake, no timed wait.  Every event that can let a waiter on is a space
 *        event of the log (log.c L16: space_gen bumped, space_cond broadcast, under the
 *        lock): log.c's own (free space grown: the durable tail moved, or the completed
 *        tail under no_flush; the tail set, after which a cover may free space; the log
 *        failed) and this file's (a grant handed back: done, ckpt_end; a ticket closed;
 *        whatever the hooks read: jrnl_grant_wake for releases, items written back,
 *        checkpoints durable, a shutdown above).  A waiter reads space_gen under the
 *        lock before it calls a hook and sleeps only if it has not moved since, so an
 *        event that happened while it was outside the lock sends it round again
 *        instead of being missed.
 *  (GR5) Transactions that grow never wait for one another for ever.  A transaction
 *        that logs what it reserved never waits after its begin (GR3), so only one
 *        that logs past its reservation waits holding a grant.  When every open
 *        transaction (tickets: counted from its begin, before its first grant, until
 *        jrnl_grant_done) waits here (a grower, or a begin still waiting, which holds
 *        nothing), the layer above can free nothing (busy(): the tail is as far as
 *        releases can take it, no committed work, every checkpoint durable), no cover
 *        would free anything and the least waiter does not fit, nothing but a commit
 *        or an abort of a grower could free space, and none will come: the grower that
 *        finds this gets -EDEADLK (its transaction intact), as a lock manager picks a
 *        victim.  The reading is a snapshot: waiters and tickets, then busy() with the
 *        lock dropped, then the rest under the lock with space_gen unchanged since the
 *        first; every event that ends the state wakes (GR4: a commit closes its ticket
 *        after its work entered the CIL, an abort hands its grant back as it closes
 *        it, a checkpoint made durable and a release are jrnl_grant_wake), so a state
 *        read as stuck was stuck.
 *  (GR6) No checkpoint is seen durable while its bytes are still promised.  The grant a
 *        checkpoint holds (jrnl_grant_ckpt_begin; jrnl_wtx.grant) is handed back by
 *        jrnl_tx_commit in the same hold of jrnl_log.lock that puts its COMMIT op into
 *        a buffer, before that buffer can be written, so every completion of the
 *        checkpoint, and every durable watermark moved by it, comes after: a NOWAIT
 *        reservation made by whoever saw the checkpoint durable never finds its bytes
 *        counted twice.  (Handed back after jrnl_tx_commit returned, the completion
 *        could run first: a Raft append that waited for its entries to be durable then
 *        found a nearly full log full, RAFT_NOSPACE with the space about to come back.)
 *  (GR7) A NOWAIT caller is told when to try again.  It cannot sleep on space_cond, so a
 *        refusal is remembered, and the next space event (GR4's, all of them) calls the
 *        space_event hook once: the engine makes the durable eventfd readable.  Any
 *        event that could let a blocking waiter on so also reaches an event loop; one
 *        that lets nothing on costs the loop a retry and a new refusal, never a lost
 *        wake-up.
 *  (GR8) The reserve is for the few records that must find space in a full log.  A
 *        reservation without JRNL_GRANT_RESERVE fits only if the reserve stays free
 *        beside it, so only JRNL_GRANT_RESERVE ones ever take those bytes.  The reserve
 *        is not a second grant: granted counts both kinds alike, and once a reserved
 *        promise is handed back the bytes are everyone's again.  A waiter counts the
 *        reserve it must leave in its bytes, so GR5's least waiter is read the same way.
 */
#include "format.h"
#include "jrnl.h"
#include "log_private.h"

#include <delog.h>
#include <errno.h>

/* What an item is charged beyond its data: op header, item header, padding to 8 (at
 * most 7, charged as 8). */
#define ITEM_COST ((uint64_t)(sizeof(struct jrnl_op) + sizeof(struct jrnl_item) + 8u))
_Static_assert(ITEM_COST == 40, "ITEM_COST: the charge per item changed");
_Static_assert(ITEM_COST <= DELOG_ITEM_OVERHEAD, "DELOG_ITEM_OVERHEAD must cover ITEM_COST");

/* A blocking jrnl_grant_reserve waiting for space (GR5); on its thread's stack.  @bytes
 * counts the reserve it must leave (GR8). */
struct grant_waiter {
	uint64_t bytes;
	struct grant_waiter *next;
};

static uint64_t reserve_share(uint64_t ovh16, uint64_t reserve)
{
	return reserve + ((reserve * ovh16) >> 16) + 1;
}

void jrnl_grant_init(struct jrnl_log *log, const struct jrnl_grant_ops *ops, void *priv)
{
	struct grant *g = &log->grant;
	/* A full record is bsize bytes, of which the op bytes less what may go unused at a
	 * switch are useful (the per-record loss jrnl_log_tx_bytes counts). */
	uint64_t useful = log->cap - 2 * sizeof(struct jrnl_op) - sizeof(struct jrnl_commit) - 8;

	pthread_mutex_lock(&log->lock);
	g->slack = log->geom.log_size / 32 + 2ull * JRNL_MAX_LOGBSIZE;
	g->item_ovh16 = ((log->bsize - useful) * 65536 + useful - 1) / useful;
	g->tx_max = jrnl_grant_tx_cost(log, log->geom.log_size / 4);
	g->ops = ops;
	g->priv = priv;
	pthread_mutex_unlock(&log->lock);
}

uint64_t jrnl_grant_item_cost(const struct jrnl_log *log, uint64_t len)
{
	return len + ITEM_COST + (((len + ITEM_COST) * log->grant.item_ovh16) >> 16) + 1;
}

uint64_t jrnl_grant_tx_cost(const struct jrnl_log *log, uint64_t reserve)
{
	return jrnl_log_tx_bytes(log, 0, 0) + reserve_share(log->grant.item_ovh16, reserve);
}

uint64_t jrnl_grant_tx_max(const struct jrnl_log *log)
{
	return log->grant.tx_max;
}

/* (GR1) Would @bytes more fit?  Lock held. */
static bool fits(const struct jrnl_log *log, uint64_t bytes)
{
	const struct grant *g = &log->grant;

	return jrnl_log_free_locked(log) >= g->granted + bytes + g->slack;
}

void jrnl_grant_set_reserve(struct jrnl_log *log, uint64_t bytes)
{
	pthread_mutex_lock(&log->lock);
	log->grant.reserve = bytes < log->geom.log_size / 4 ? bytes : log->geom.log_size / 4;
	jrnl_log_space_event(log); /* a smaller reserve may let a waiter on (GR4) */
	pthread_mutex_unlock(&log->lock);
}

void jrnl_grant_wake(struct jrnl_log *log)
{
	pthread_mutex_lock(&log->lock);
	jrnl_log_space_event(log);
	pthread_mutex_unlock(&log->lock);
}

void jrnl_grant_shutdown(struct jrnl_log *log)
{
	pthread_mutex_lock(&log->lock);
	log->grant.shut = true;
	jrnl_log_space_event(log);
	pthread_mutex_unlock(&log->lock);
}

/*
 * (GR5) Is every open transaction waiting here for space that only their own commits
 * could free?  Lock held on entry and on return, dropped for the busy() hook; @gen: the
 * space_gen read before this waiter's last hook call.
 */
static bool stuck(struct jrnl_log *log, uint64_t gen)
{
	struct grant *g = &log->grant;
	uint64_t least = UINT64_MAX;
	bool busy;

	if (g->nwaiters < g->tickets || log->space_gen != gen)
		return false;
	pthread_mutex_unlock(&log->lock);
	busy = g->ops->busy(g->priv);
	pthread_mutex_lock(&log->lock);
	if (busy || log->space_gen != gen || g->nwaiters < g->tickets ||
	    jrnl_log_cover_wanted_locked(log))
		return false;
	for (struct grant_waiter *w = g->waiters; w; w = w->next)
		if (w->bytes < least)
			least = w->bytes;
	return !fits(log, least);
}

static void waiter_del(struct grant *g, struct grant_waiter *me)
{
	struct grant_waiter **pp = &g->waiters;

	while (*pp != me)
		pp = &(*pp)->next;
	*pp = me->next;
	g->nwaiters--;
}

int jrnl_grant_reserve(struct jrnl_log *log, uint64_t bytes, unsigned flags)
{
	struct grant *g = &log->grant;
	struct grant_waiter me = { .bytes = bytes };
	bool nowait = flags & JRNL_GRANT_NOWAIT, counted = false;
	int err = 0;

	pthread_mutex_lock(&log->lock);
	if (flags & JRNL_GRANT_TICKET)
		g->tickets++; /* before the grant (GR5) */
	if (!nowait) {
		me.next = g->waiters;
		g->waiters = &me;
		g->nwaiters++;
	}
	for (;;) {
		uint64_t gen, keep;
		int r;

		/* (GR8) what must stay free beside the grant: the reserve, unless it may
		 * take it (read under the lock, each round: delog_set_reserve may move it) */
		keep = flags & JRNL_GRANT_RESERVE ? 0 : g->reserve;
		me.bytes = bytes + keep;
		if (log->error || g->shut) {
			err = DELOG_ESHUTDOWN;
			break;
		}
		if (fits(log, bytes + keep)) {
			g->granted += bytes;
			break;
		}
		if (!nowait && !counted) {
			g->waits++; /* a call that had to wait, counted once */
			counted = true;
		}
		gen = log->space_gen;
		pthread_mutex_unlock(&log->lock);
		r = g->ops->reclaim(g->priv, nowait);
		pthread_mutex_lock(&log->lock);
		if (r < 0 && !(log->error || g->shut) && fits(log, bytes + keep)) {
			g->granted += bytes;
			break;
		}
		if (r < 0 && r != -EAGAIN) {
			err = r;
			break;
		}
		if (r == JRNL_GRANT_RETRY || log->space_gen != gen)
			continue;
		if (nowait || r < 0) { /* refused, no event since gen (GR7) */
			err = -EAGAIN;
			break;
		}
		if ((flags & JRNL_GRANT_GROW) && stuck(log, gen)) {
			err = -EDEADLK;
			break;
		}
		if (log->space_gen != gen)
			continue;
		pthread_cond_wait(&log->space_cond, &log->lock);
	}
	if (!nowait)
		waiter_del(g, &me);
	if (err && (flags & JRNL_GRANT_TICKET)) {
		/* The others may be all that is left (GR5).  No space came back: a NOWAIT
		 * caller is not told (GR7), or each refusal would wake the one before. */
		g->tickets--;
		jrnl_log_space_wake(log);
	}
	if (err == -EAGAIN)
		g->nowait_refused = true; /* the next space event tells (GR7) */
	pthread_mutex_unlock(&log->lock);
	return err;
}

void jrnl_grant_done(struct jrnl_log *log, uint64_t reserved, int64_t charge)
{
	struct grant *g = &log->grant;

	pthread_mutex_lock(&log->lock);
	g->granted = g->granted - reserved + (uint64_t)charge; /* modulo 2^64: a relog may shrink */
	g->tickets--;
	jrnl_log_space_event(log);
	pthread_mutex_unlock(&log->lock);
}

uint64_t jrnl_grant_ckpt_begin(struct jrnl_log *log, uint32_t nitems, uint64_t item_bytes,
			       uint64_t charged)
{
	uint64_t total = jrnl_log_tx_bytes(log, nitems, item_bytes);
	uint64_t over = total > charged ? total - charged : 0;

	pthread_mutex_lock(&log->lock);
	log->grant.granted += over;
	pthread_mutex_unlock(&log->lock);
	return charged + over;
}

void jrnl_grant_ckpt_end_locked(struct jrnl_log *log, uint64_t held)
{
	log->grant.granted -= held;
	jrnl_log_space_event(log);
}

void jrnl_grant_ckpt_end(struct jrnl_log *log, uint64_t held)
{
	pthread_mutex_lock(&log->lock);
	jrnl_grant_ckpt_end_locked(log, held);
	pthread_mutex_unlock(&log->lock);
}

uint64_t jrnl_grant_avail(struct jrnl_log *log)
{
	uint64_t f, need;

	pthread_mutex_lock(&log->lock);
	f = jrnl_log_free_locked(log);
	need = log->grant.granted + log->grant.slack;
	pthread_mutex_unlock(&log->lock);
	return f > need ? f - need : 0;
}

void jrnl_grant_stats(struct jrnl_log *log, uint64_t *granted, uint64_t *waits)
{
	pthread_mutex_lock(&log->lock);
	*granted = log->grant.granted;
	*waits = log->grant.waits;
	pthread_mutex_unlock(&log->lock);
}
