/*
 * space.c - where the tail may go: the list of written checkpoints (the AIL), item
 * tracking, delog_release / delog_item_written, and what the journal's grant asks of
 * the engine when a reservation does not fit (docs/DESIGN.md section 4).
 *
 * Two owners, as XFS keeps its grant heads in the log and its AIL above it.  The journal
 * owns the physical ring and the log space promised ahead of writing: free space,
 * reservations, the CIL's charges, the wait for space and its wake-ups (journal/grant.c
 * GR1-GR7; journal/log.c L12 for which space a durable record frees).  This file owns
 * what depends on the application: releases, item tracking, hence where the tail may go
 * (jrnl_log_set_tail, only from space_update_tail_at, space.lock held), and the two hooks
 * the grant calls with no journal lock held when a reservation does not fit
 * (space_grant_ops): space_reclaim frees what the engine can free without the
 * application (S2's flush, a cover record, a push: S4) and asks the push callback for
 * the rest; space_busy tells the grant whether anything but the waiters' own commits
 * can still free space (S5).  Whatever those hooks read and the journal does not see
 * change (a release, an item written back, a checkpoint made durable) is followed by
 * jrnl_grant_wake, so the waiters look again (GR4).
 *
 * The tail.  Every written checkpoint has an entry (seq, start_lsn, refs) in a ring,
 * oldest first; seqs are consecutive.  A checkpoint is free when the application
 * released it (seq <= released) or, with item tracking, when no key's newest durable
 * copy lives in it any more (refs == 0).  The tail is the start of the oldest checkpoint
 * that is not free, with three rules:
 *  (S1) the newest durable checkpoint, and every one written after it, always stays in
 *       the live region, so recovery always finds a complete checkpoint with the last
 *       durable sequence number and a reopened log continues it.  Keeping only the
 *       newest written one is not enough: if it is not durable yet, a power cut may
 *       lose it, recovery then finds no complete checkpoint between the tail and the
 *       head, the reopened log numbers from 1, and its first checkpoint follows the lost
 *       one's abandoned records, a log the next recovery must refuse (a checkpoint that
 *       never committed before a later one that did: journal/recover_pass.c open_behind);
 *  (S3) a key relogged in a later checkpoint moves its reference forward only once
 *       that checkpoint is durable (space_ckpt_durable, called by log_durable before
 *       durable_seq moves), as XFS moves a relogged item in the AIL only when the
 *       checkpoint's commit record completed.  Until then the key's older copy pins its
 *       checkpoint: were the reference moved when the new checkpoint is written, the tail
 *       could pass acknowledged checkpoints whose only successor is still volatile, and
 *       a power cut would lose them all.  The keys of a written checkpoint wait in its
 *       entry (ckpt_ent.keys) until then;
 *  (S2) reuse after in-place writes: a checkpoint freed by delog_item_written was freed
 *       by an in-place write that may still be in a volatile cache, so the tail may pass
 *       it only after a device flush issued after that call completed.
 *       space_pending_tail() is taken before a flush is issued and space_flushed()
 *       applies it after the flush completed; space_reclaim issues that flush for a
 *       waiter.  Releases need no flush (the application vouches for durability).
 *  (S4) a waiter for space that only a newer durable checkpoint can free has the CIL
 *       pushed.  S1 keeps the newest durable checkpoint however much the application
 *       released, so when every written checkpoint may go, the tail is at the newest and
 *       the grants that fill the log are held by threads that themselves wait for space
 *       (a delog_tx_log past its reservation, a delog_tx_begin), nothing but a push frees
 *       space; the CIL, below push_bytes, would never be pushed (DESIGN.md G9).  The
 *       same holds before the first checkpoint after open: what recovery found goes only
 *       when a new checkpoint is durable.  So space_reclaim, finding the tail as far as
 *       releases can take it (space_tail_final: held by S1 alone, or nothing written
 *       yet), asks the push thread for the open sequence exactly as a force that finds
 *       it busy does (push_request_open, wake.c), blocking and NOWAIT callers alike; the
 *       policy makes that checkpoint durable as it does any pushed by that thread, the
 *       tail passes the old one (log_durable, space_durable_moved) and the waiters are
 *       woken.  XFS does the same: an AIL push that meets items pinned by the log
 *       forces the log.  Nothing is pushed for space an older, unreleased checkpoint
 *       holds: the push callback asks the application for that.
 *  (S5) Transactions that grow never wait for one another for ever (journal/grant.c
 *       GR5 finds the state and picks the victim).  The engine's part is space_busy:
 *       nothing but the waiters' commits can free space when the tail is as far as
 *       releases can take it (S4), no flush is owed to item writes (S2), the CIL is
 *       empty and every written checkpoint is durable.  It reads the CIL before the
 *       durable watermark: a push takes the work out of the CIL before its checkpoint
 *       is durable, so work in flight is seen in one or the other.
 *  (S6) An event loop refused under DELOG_TX_NOWAIT learns when to try again from the
 *       durable eventfd: the grant's space_event hook (journal/grant.c GR7) writes it at
 *       the first space event after the refusal, the same events that wake a blocking
 *       waiter, so a loop waits on one fd and never needs a timeout.
 */
#include "engine_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct ckpt_ent *ck_at(struct space *sp, size_t i)
{
	return &sp->ck[(sp->ck_head + i) % sp->ck_cap];
}

int space_init(struct delog *log)
{
	struct space *sp = &log->space;

	memset(sp, 0, sizeof(*sp));
	pthread_mutex_init(&sp->lock, NULL);
	sp->log_size = log->geom.log_size;
	return 0;
}

void space_destroy(struct delog *log)
{
	for (size_t i = 0; i < log->space.ck_n; i++)
		free(ck_at(&log->space, i)->keys);
	free(log->space.ck);
	free(log->space.ail);
	pthread_mutex_destroy(&log->space.lock);
}

/* The entry of checkpoint @seq, or NULL if it left the ring. */
static struct ckpt_ent *ck_find(struct space *sp, uint64_t seq)
{
	uint64_t first;

	if (!sp->ck_n)
		return NULL;
	first = ck_at(sp, 0)->seq;
	if (seq < first || seq - first >= sp->ck_n)
		return NULL;
	return ck_at(sp, (size_t)(seq - first));
}

/* Tail start allowed by releases alone, and by releases plus unflushed item writes. */
static void tails_at(struct delog *log, uint64_t durable, uint64_t *t_release, uint64_t *t_full)
{
	struct space *sp = &log->space;
	size_t i;

	*t_release = *t_full = 0;
	if (!sp->ck_n)
		return;
	/* (S1): never past the newest durable checkpoint, nor past the newest written. */
	for (i = 0;
	     i + 1 < sp->ck_n && ck_at(sp, i)->seq <= sp->released && ck_at(sp, i)->seq < durable;
	     i++)
		;
	*t_release = ck_at(sp, i)->start_lsn;
	if (!sp->tracking) {
		*t_full = *t_release;
		return;
	}
	for (; i + 1 < sp->ck_n; i++) {
		struct ckpt_ent *e = ck_at(sp, i);

		if (e->refs || e->seq >= durable)
			break;
	}
	*t_full = ck_at(sp, i)->start_lsn; /* (S1) */
}

static void tails(struct delog *log, uint64_t *t_release, uint64_t *t_full)
{
	tails_at(log, atomic_load(&log->durable_seq), t_release, t_full);
}

/* Recompute the tail, checkpoints up to @durable being durable, and give it to the
 * journal (space.lock held). */
static void space_update_tail_at(struct delog *log, uint64_t durable)
{
	struct space *sp = &log->space;
	uint64_t tr, tf, t;

	tails_at(log, durable, &tr, &tf);
	t = tr > sp->pending_tail ? tr : sp->pending_tail;
	if (t > sp->tail_lsn) {
		sp->tail_lsn = t;
		jrnl_log_set_tail(log->jl, t); /* wakes the waiters for space (GR4) */
		/* Entries wholly before the tail are of no further use. */
		while (sp->ck_n > 1 && ck_at(sp, 1)->start_lsn <= t) {
			free(ck_at(sp, 0)->keys);
			sp->ck_head = (sp->ck_head + 1) % sp->ck_cap;
			sp->ck_n--;
		}
	}
}

static void space_update_tail(struct delog *log)
{
	space_update_tail_at(log, atomic_load(&log->durable_seq));
}

void space_durable_moved(struct delog *log, uint64_t seq)
{
	/* The tail may now pass what S1 held as the newest durable checkpoint. */
	pthread_mutex_lock(&log->space.lock);
	space_update_tail_at(log, seq);
	pthread_mutex_unlock(&log->space.lock);
}

uint64_t space_pending_tail(struct delog *log)
{
	uint64_t tr, tf;

	pthread_mutex_lock(&log->space.lock);
	tails(log, &tr, &tf);
	pthread_mutex_unlock(&log->space.lock);
	return tf;
}

void space_flushed(struct delog *log, uint64_t snapshot)
{
	struct space *sp = &log->space;

	pthread_mutex_lock(&sp->lock);
	if (snapshot > sp->pending_tail)
		sp->pending_tail = snapshot; /* (S2): a flush followed those writes */
	space_update_tail(log);
	pthread_mutex_unlock(&sp->lock);
}

/*
 * (S4) Is the tail as far as releases can take it?  Either nothing was written since
 * open (what recovery found goes only when a new checkpoint is durable), or every written
 * checkpoint may go (released, or with item tracking no key's newest durable copy in it)
 * and the tail is already at the newest, which S1 keeps until a newer checkpoint is
 * durable.  Then no release, item write or flush frees anything more, only a push of the
 * CIL (sp->lock held; @tf from tails()).
 */
static bool space_tail_final(struct delog *log, uint64_t tf)
{
	struct space *sp = &log->space;
	struct ckpt_ent *e;

	if (!sp->ck_n)
		return true;
	e = ck_at(sp, sp->ck_n - 1);
	return tf == e->start_lsn && e->seq <= atomic_load(&log->durable_seq) &&
	       (e->seq <= sp->released || (sp->tracking && !e->refs));
}

/* The CIL holds committed transactions, or a written checkpoint is not durable yet:
 * either will move the tail (S5; space.lock held, ctx_lock taken inside it). */
static bool space_cil_busy(struct delog *log)
{
	bool has;

	pthread_rwlock_rdlock(&log->ctx_lock);
	has = atomic_load(&log->cur->ntx) != 0;
	pthread_rwlock_unlock(&log->ctx_lock);
	return has || atomic_load(&log->open_seq) - 1 > atomic_load(&log->durable_seq);
}

/*
 * Make the journal's tail durable (jrnl_log_cover) so that the space behind it can be
 * reused.  Under write_lock, like a checkpoint: the cover's record must not slip in
 * between a checkpoint's records and its acknowledgement, which the flush policies
 * base on every earlier record being durable (a cover record torn beneath a FUA commit
 * record would cut the log before an acknowledged checkpoint); holding write_lock, the
 * cover is written and flushed before the next checkpoint starts.  Returns 0 or the
 * error that shut the log down.
 */
int space_cover(struct delog *log)
{
	int err;

	pthread_mutex_lock(&log->write_lock);
	err = atomic_load(&log->error) ? DELOG_ESHUTDOWN : jrnl_log_cover(log->jl);
	pthread_mutex_unlock(&log->write_lock);
	if (err)
		log_shutdown(log, err);
	return err;
}

/*
 * The grant's reclaim hook (jrnl_grant_ops): a reservation of the log @priv does not
 * fit.  In order: a flush that lets the tail pass checkpoints freed by item writes (S2);
 * a cover record, when the tail moved but no durable record names it (journal/log.c
 * L12; a NOWAIT caller does not wait for that I/O: the push thread writes it); else ask
 * for a push if only a newer durable checkpoint frees space (S4), and for the push
 * callback.  JRNL_GRANT_RETRY after a flush or a cover, JRNL_GRANT_WAIT, or an error.
 */
static int space_reclaim(void *priv, bool nowait)
{
	struct delog *log = priv;
	struct space *sp = &log->space;
	uint64_t tr, tf;
	bool final;
	int err;

	if (atomic_load(&log->error))
		return DELOG_ESHUTDOWN;
	pthread_mutex_lock(&sp->lock);
	tails(log, &tr, &tf);
	if (tf > sp->tail_lsn && tf > tr) {
		pthread_mutex_unlock(&sp->lock);
		err = jrnl_log_flush(log->jl);
		if (err) {
			log_shutdown(log, err);
			return DELOG_ESHUTDOWN;
		}
		space_flushed(log, tf);
		pthread_mutex_lock(&sp->lock);
		sp->item_flushes++;
		pthread_mutex_unlock(&sp->lock);
		return JRNL_GRANT_RETRY;
	}
	final = space_tail_final(log, tf);
	pthread_mutex_unlock(&sp->lock);
	if (jrnl_log_cover_wanted(log->jl)) {
		if (nowait) {
			atomic_store(&sp->cover, true);
			push_wake(log);
			return -EAGAIN;
		}
		return space_cover(log) ? DELOG_ESHUTDOWN : JRNL_GRANT_RETRY;
	}
	/* (S4) Only a newer durable checkpoint frees space: have the CIL pushed, as XFS's
	 * AIL push forces the log when it meets items the log pins. */
	if (final)
		push_request_open(log);
	atomic_store(&sp->low, true);
	push_wake(log); /* the push thread calls the push callback */
	return JRNL_GRANT_WAIT;
}

/* The grant's busy hook (S5): can anything but the waiters' own commits free space? */
static bool space_busy(void *priv)
{
	struct delog *log = priv;
	struct space *sp = &log->space;
	uint64_t tr, tf;
	bool busy;

	pthread_mutex_lock(&sp->lock);
	space_update_tail(log);
	tails(log, &tr, &tf);
	busy = (tf > sp->tail_lsn && tf > tr) || !space_tail_final(log, tf) || space_cil_busy(log);
	pthread_mutex_unlock(&sp->lock);
	return busy;
}

/* (S6) The grant's space_event hook, journal lock held: only the eventfd is written. */
static void space_event(void *priv)
{
	efd_signal(priv);
}

const struct jrnl_grant_ops space_grant_ops = { .reclaim = space_reclaim,
						.busy = space_busy,
						.space_event = space_event };

int space_ckpt_add(struct delog *log, uint64_t seq, uint64_t start_lsn)
{
	struct space *sp = &log->space;
	struct ckpt_ent *e;
	int err = 0;

	pthread_mutex_lock(&sp->lock);
	if (sp->ck_n == sp->ck_cap) {
		size_t cap = sp->ck_cap ? sp->ck_cap * 2 : 256;
		struct ckpt_ent *ck = malloc(cap * sizeof(*ck));

		if (!ck) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < sp->ck_n; i++)
			ck[i] = *ck_at(sp, i);
		free(sp->ck);
		sp->ck = ck;
		sp->ck_cap = cap;
		sp->ck_head = 0;
	}
	e = &sp->ck[(sp->ck_head + sp->ck_n) % sp->ck_cap];
	*e = (struct ckpt_ent){ .seq = seq, .start_lsn = start_lsn };
	sp->ck_n++;
out:
	pthread_mutex_unlock(&sp->lock);
	return err;
}

/* ---- the per-key AIL (item tracking): key -> seq of its newest logged copy ---- */

static struct ail_ent *ail_slot(struct space *sp, uint64_t key)
{
	size_t m = sp->ail_cap - 1, h = key_hash(key) & m;

	while (sp->ail[h].seq && sp->ail[h].key != key)
		h = (h + 1) & m;
	return &sp->ail[h];
}

static int ail_grow(struct space *sp)
{
	size_t cap = sp->ail_cap ? sp->ail_cap * 2 : 1024;
	struct ail_ent *old = sp->ail, *e;
	size_t ocap = sp->ail_cap;

	sp->ail = calloc(cap, sizeof(*sp->ail));
	if (!sp->ail) {
		sp->ail = old;
		return -ENOMEM;
	}
	sp->ail_cap = cap;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].seq) {
			e = ail_slot(sp, old[i].key);
			*e = old[i];
		}
	}
	free(old);
	return 0;
}

/* Remove @e by backward-shift deletion (linear probing stays valid). */
static void ail_del(struct space *sp, struct ail_ent *e)
{
	size_t m = sp->ail_cap - 1, i = (size_t)(e - sp->ail), j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & m;
		if (!sp->ail[j].seq)
			break;
		k = key_hash(sp->ail[j].key) & m;
		/* Move j back to i if its home k is not cyclically in (i, j]. */
		if ((i <= j) ? (k <= i || k > j) : (k <= i && k > j)) {
			sp->ail[i] = sp->ail[j];
			i = j;
		}
	}
	sp->ail[i].seq = 0;
	sp->ail_n--;
}

/* The newest durable copy of @key is in checkpoint @seq: move its reference (S3).
 * sp->lock held. */
static int ail_move(struct space *sp, uint64_t key, uint64_t seq)
{
	struct ail_ent *e;
	struct ckpt_ent *c;
	int err;

	if ((sp->ail_n + 1) * 4 > sp->ail_cap * 3 && (err = ail_grow(sp)))
		return err;
	e = ail_slot(sp, key);
	if (e->seq) {
		if (e->seq >= seq)
			return 0; /* already at a copy as new */
		if ((c = ck_find(sp, e->seq)) && c->refs)
			c->refs--;
	} else {
		sp->ail_n++;
	}
	e->key = key;
	e->seq = seq;
	if ((c = ck_find(sp, seq)))
		c->refs++;
	return 0;
}

int space_ail_log(struct delog *log, uint64_t key, uint64_t seq)
{
	struct space *sp = &log->space;
	struct ckpt_ent *c;
	int err = 0;

	pthread_mutex_lock(&sp->lock);
	c = ck_find(sp, seq);
	if (c && c->nkeys == c->kcap) {
		uint32_t cap = c->kcap ? c->kcap * 2 : 64;
		uint64_t *k = realloc(c->keys, cap * sizeof(*k));

		if (!k)
			err = -ENOMEM;
		else {
			c->keys = k;
			c->kcap = cap;
		}
	}
	if (c && !err)
		c->keys[c->nkeys++] = key;
	pthread_mutex_unlock(&sp->lock);
	return err;
}

int space_ckpt_durable(struct delog *log, uint64_t seq)
{
	struct space *sp = &log->space;
	int err = 0;

	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < sp->ck_n && !err; i++) {
		struct ckpt_ent *c = ck_at(sp, i);

		if (c->seq > seq)
			break;
		for (uint32_t k = 0; k < c->nkeys && !err; k++)
			err = ail_move(sp, c->keys[k], c->seq);
		free(c->keys);
		c->keys = NULL;
		c->nkeys = c->kcap = 0;
	}
	pthread_mutex_unlock(&sp->lock);
	return err;
}

int delog_item_written(delog *log, uint64_t key, uint64_t seq)
{
	struct space *sp;
	struct ail_ent *e;
	struct ckpt_ent *c;
	int err;

	error_enter(__func__);
	if ((err = log_check_writable(log)))
		return err;
	sp = &log->space;
	if (!sp->tracking)
		return error_say(-EINVAL, "delog_item_written: the log was opened without "
					  "DELOG_OPEN_TRACK_ITEMS");
	if (!seq || seq > atomic_load(&log->durable_seq))
		return error_say(-EINVAL,
				 "delog_item_written: checkpoint %llu is not durable (the "
				 "newest durable one is %llu)",
				 (unsigned long long)seq,
				 (unsigned long long)atomic_load(&log->durable_seq));
	pthread_mutex_lock(&sp->lock);
	if (sp->ail_cap) {
		e = ail_slot(sp, key);
		/* An older write than the newest copy frees nothing. */
		if (e->seq && e->seq <= seq) {
			if ((c = ck_find(sp, e->seq)) && c->refs)
				c->refs--;
			ail_del(sp, e);
		}
	}
	pthread_mutex_unlock(&sp->lock);
	jrnl_grant_wake(log->jl); /* a flush may now free space (S2, GR4) */
	return 0;
}

int delog_release(delog *log, uint64_t seq)
{
	struct space *sp;
	int err;

	error_enter(__func__);
	if ((err = log_check_writable(log)))
		return err;
	if (seq > atomic_load(&log->durable_seq))
		return error_say(-EINVAL,
				 "delog_release: checkpoint %llu is not durable (the newest "
				 "durable one is %llu)",
				 (unsigned long long)seq,
				 (unsigned long long)atomic_load(&log->durable_seq));
	sp = &log->space;
	pthread_mutex_lock(&sp->lock);
	if (seq > sp->released)
		sp->released = seq;
	space_update_tail(log);
	pthread_mutex_unlock(&sp->lock);
	jrnl_grant_wake(log->jl); /* S4 and S5 read releases, moved tail or not (GR4) */
	return 0;
}

int delog_set_reserve(delog *log, uint64_t bytes)
{
	int err;

	error_enter(__func__);
	err = log_check_writable(log);

	if (err)
		return err;
	jrnl_grant_set_reserve(log->jl, bytes);
	return 0;
}

uint64_t space_push_target(struct delog *log)
{
	struct space *sp = &log->space;
	uint64_t target = 0;

	pthread_mutex_lock(&sp->lock);
	if (sp->low || jrnl_grant_avail(log->jl) < sp->log_size / 4) {
		sp->low = false;
		/* Ask for the older half of the live checkpoints, at least one. */
		if (sp->ck_n)
			target = ck_at(sp, sp->ck_n / 2)->seq;
		if (target > atomic_load(&log->durable_seq))
			target = atomic_load(&log->durable_seq);
		if (target)
			sp->push_calls++;
	}
	pthread_mutex_unlock(&sp->lock);
	return target;
}
