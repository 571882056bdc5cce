/*
 * cil.c - transactions and the committed item list (CIL), after fs/xfs/xfs_log_cil.c.
 *
 * A transaction gathers private copies of its items (delog_tx_log copies; a key logged
 * twice in one transaction keeps the last copy).  delog_tx_commit moves them into the
 * open checkpoint context, log->cur, atomically with respect to checkpoint boundaries:
 *
 *  (CIL1) Commit holds ctx_lock for read while it inserts; the push thread takes it for
 *       write only to swap log->cur for an empty context.  So every transaction lands
 *       wholly in one context, and once the swap returns, every commit into the old
 *       context is complete: the push thread may write it without further locking.
 *       The rwlock prefers writers, so a stream of committers cannot starve the push.
 *  (CIL2) No global lock on the hot path besides that shared read lock: the context is
 *       split into CIL_SHARDS shards by key hash, each with its own mutex, hash table
 *       and data arena.  Committers touching different keys rarely meet.
 *  (CIL3) Relogging: a key already in the open context has its copy replaced in place (or
 *       re-allocated in the arena if it grew), so a checkpoint carries one copy per key,
 *       the newest; ctx->relogged counts the replacements.
 *  (CIL4) Space: a transaction holds a grant from delog_tx_begin, jrnl_grant_tx_cost of
 *       what the application reserved, so items within the reservation never take more;
 *       logging beyond it takes more (possibly blocking, journal/grant.c GR5).  At
 *       commit the grant is exchanged for the CIL charge of what it added
 *       (jrnl_grant_item_cost: data, headers and its share of record headers per new
 *       item), so grant + journal use never shrinks below what the log will have to
 *       write (grant.c GR1, GR3), whatever the log-buffer size.
 *  (CIL5) Back-pressure on the CIL: past push_bytes of CIL a commit wakes the push thread;
 *       one that would take the context past twice that waits for the swap before it
 *       inserts.  The check claims the transaction's cost in the context (cil_admit, one
 *       compare-and-swap on ctx->admitted) under the same hold of ctx_lock as the insert,
 *       so committers racing in are admitted one at a time against the bound: checking
 *       the context's cost instead let several pass it together and made a checkpoint of
 *       three quarters of the log.  So a checkpoint is at most 2 x push_bytes, or one
 *       transaction (a quarter of the log in items, a third with the record headers of
 *       the smallest buffers: log->tx_max), and push_bytes is at most log/8: a checkpoint
 *       never takes more than about a third of the log, and the newest durable
 *       checkpoint (which stays in the log, space.c S1) plus an incomplete one a crash
 *       left after it never fill it, so a recovered log always has room to go on.
 *  (CIL6) Order: a checkpoint's items are written, and so handed to the recover
 *       callback, in the order their keys were first logged into it: by the commit
 *       ticket of the transaction that first logged the key (one fetch-and-add on
 *       ctx->tickets per commit, under the read hold of ctx_lock), then by the item's
 *       place in that transaction; a relogged key keeps its place and carries its
 *       newest copy (CIL3).  Transactions committed one after another (the second
 *       begun after the first's commit returned) are in that order.  A shard's items
 *       are appended as they arrive, so they are in ticket order except where
 *       concurrent commits crossed; cil_ctx_order sorts the few that did and merges
 *       the shards.
 *  (CIL7) Copies: an item of CIL_OWN_MIN bytes or more gets a buffer of its own in
 *       delog_tx_log, and the commit hands that buffer to the CIL item instead of
 *       copying it into the shard's arena; a relogged key frees the copy it replaces,
 *       and the context frees the rest at its reset, after the checkpoint was written.
 *       So a large item is copied twice inside delog (into the transaction, into a log
 *       buffer), which is what streaming large items costs in CPU.  Small items share
 *       the arena: a buffer each would cost more in malloc than the copy saves.
 */
#include "engine_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cil_ctx_init(struct cil_ctx *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned i = 0; i < CIL_SHARDS; i++)
		pthread_mutex_init(&c->shard[i].lock, NULL);
}

void cil_ctx_reset(struct cil_ctx *c)
{
	for (unsigned i = 0; i < CIL_SHARDS; i++) {
		struct cil_shard *s = &c->shard[i];

		for (size_t k = 0; k < s->n; k++)
			free(s->items[k].own); /* CIL7 */
		if (s->n)
			memset(s->slots, 0, s->nslots * sizeof(*s->slots));
		s->n = 0;
		s->arena_len = 0;
		s->data_bytes = 0;
		/* Keep the memory of a normal-sized checkpoint, drop that of a huge one. */
		if (s->arena_cap > (64u << 20)) {
			free(s->arena);
			s->arena = NULL;
			s->arena_cap = 0;
		}
	}
	atomic_store(&c->nitems, 0);
	atomic_store(&c->data_bytes, 0);
	atomic_store(&c->cost, 0);
	atomic_store(&c->ntx, 0);
	atomic_store(&c->relogged, 0);
	atomic_store(&c->admitted, 0);
	atomic_store(&c->tickets, 0);
}

void cil_ctx_destroy(struct cil_ctx *c)
{
	for (unsigned i = 0; i < CIL_SHARDS; i++) {
		for (size_t k = 0; k < c->shard[i].n; k++)
			free(c->shard[i].items[k].own);
		free(c->shard[i].items);
		free(c->shard[i].slots);
		free(c->shard[i].arena);
		pthread_mutex_destroy(&c->shard[i].lock);
	}
}

/*
 * A key's shard takes bits 32.. of its hash, its home slot in the shard's table the low
 * bits: were both the low bits, every key of a shard would share its home slot's low
 * log2(CIL_SHARDS) bits, one slot in CIL_SHARDS would ever be a home, and linear probing
 * would walk runs CIL_SHARDS times longer than the load factor gives.
 */
static inline unsigned cil_shard_of(uint64_t hash)
{
	return (unsigned)((hash >> 32) % CIL_SHARDS);
}

static int shard_grow_slots(struct cil_shard *s)
{
	size_t n = s->nslots ? s->nslots * 2 : 64;
	struct cil_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t k = key_hash(s->items[i].key);
		size_t h = k & (n - 1);

		while (slots[h].idx)
			h = (h + 1) & (n - 1);
		slots[h].idx = (uint32_t)(i + 1);
		slots[h].tag = (uint32_t)(k >> 32);
	}
	free(s->slots);
	s->slots = slots;
	s->nslots = n;
	return 0;
}

static int arena_take(struct cil_shard *s, uint32_t len, uint64_t *off)
{
	uint64_t need = s->arena_len + ((len + 7ull) & ~7ull);

	if (need > s->arena_cap) {
		uint64_t cap = s->arena_cap ? s->arena_cap : 16384;
		unsigned char *a;

		while (cap < need)
			cap *= 2;
		a = realloc(s->arena, cap);
		if (!a)
			return -ENOMEM;
		s->arena = a;
		s->arena_cap = cap;
	}
	*off = s->arena_len;
	s->arena_len = need;
	return 0;
}

/* Put @data (@len bytes) in @it's arena place, growing it if needed. */
static int shard_copy(struct cil_shard *s, struct cil_item *it, const void *data, uint32_t len)
{
	int err;

	if (len > it->cap) {
		if ((err = arena_take(s, len, &it->off)))
			return err;
		it->cap = len;
	}
	if (len) /* an empty item may have no arena and no data */
		memcpy(s->arena + it->off, data, len);
	return 0;
}

/* Insert or replace one item (shard lock held): its data is *@own, taken over (CIL7:
 * *@own is NULL afterwards), or else @data, copied.  *@delta gets the cost change. */
static int shard_put(struct cil_shard *s, uint64_t hash, uint64_t key, uint64_t order,
		     unsigned char **own, const void *data, uint32_t len, const struct jrnl_log *jl,
		     int64_t *delta, int64_t *ddelta, bool *relogged)
{
	struct cil_item *it;
	uint32_t tag;
	size_t h;
	int err;

	if ((s->n + 1) * 2 > s->nslots && (err = shard_grow_slots(s)))
		return err;
	tag = (uint32_t)(hash >> 32);
	h = hash & (s->nslots - 1);
	while (s->slots[h].idx) {
		it = &s->items[s->slots[h].idx - 1];
		if (s->slots[h].tag == tag && it->key == key) {
			*relogged = true;
			*delta = (int64_t)jrnl_grant_item_cost(jl, len) -
				 (int64_t)jrnl_grant_item_cost(jl, it->len);
			*ddelta = (int64_t)len - (int64_t)it->len;
			if (!*own && (err = shard_copy(s, it, data, len)))
				return err;
			free(it->own); /* the copy it replaces (CIL7) */
			it->own = *own;
			*own = NULL;
			s->data_bytes = s->data_bytes - it->len + len;
			it->len = len;
			return 0;
		}
		h = (h + 1) & (s->nslots - 1);
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct cil_item *items = realloc(s->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		s->items = items;
		s->cap = cap;
	}
	it = &s->items[s->n];
	it->key = key;
	it->order = order;
	it->len = len;
	it->cap = 0;
	it->off = 0;
	it->own = NULL;
	if (!*own && (err = shard_copy(s, it, data, len)))
		return err;
	it->own = *own;
	*own = NULL;
	s->slots[h].idx = (uint32_t)(s->n + 1);
	s->slots[h].tag = tag;
	s->n++;
	s->data_bytes += len;
	*relogged = false;
	*delta = (int64_t)jrnl_grant_item_cost(jl, len);
	*ddelta = len;
	return 0;
}

/* Insert the items of @tx into @c (ctx_lock held for read).  *@cost_delta gets the
 * change of the context's charge, *@copied_out the item bytes copied (CIL7). */
static int cil_insert(struct cil_ctx *c, struct delog_tx *tx, const struct jrnl_log *jl,
		      int64_t *cost_delta, uint64_t *copied_out)
{
	int64_t total = 0, delta, ddelta, dbytes = 0;
	uint64_t added = 0, relog = 0, ticket = atomic_fetch_add(&c->tickets, 1); /* CIL6 */
	uint64_t copied = 0;
	bool relogged;
	int err = 0;

	for (size_t i = 0; i < tx->n && !err; i++) {
		uint64_t hash = key_hash(tx->items[i].key);
		struct cil_shard *s = &c->shard[cil_shard_of(hash)];
		bool owned = tx->items[i].own;

		pthread_mutex_lock(&s->lock);
		err = shard_put(s, hash, tx->items[i].key, ticket << 32 | i, &tx->items[i].own,
				tx->data + tx->items[i].off, tx->items[i].len, jl, &delta, &ddelta,
				&relogged);
		pthread_mutex_unlock(&s->lock);
		if (err)
			break;
		total += delta;
		dbytes += ddelta;
		if (relogged)
			relog++;
		else
			added++;
		if (!owned)
			copied += tx->items[i].len;
	}
	/* An -ENOMEM part way leaves the items inserted so far in the checkpoint: they
	 * are whole items, and the caller shuts the log down (atomicity is gone). */
	atomic_fetch_add(&c->nitems, added);
	atomic_fetch_add(&c->data_bytes, (uint64_t)dbytes);
	atomic_fetch_add(&c->cost, (uint64_t)total);
	atomic_fetch_add(&c->relogged, relog);
	atomic_fetch_add(&c->ntx, 1);
	*cost_delta = total;
	*copied_out = copied;
	return err;
}

/* An item's bytes: its own buffer (CIL7), its place in the arena, or NULL if empty. */
static const unsigned char *cil_item_data(const struct cil_shard *s, const struct cil_item *it)
{
	return it->own ? it->own : it->len ? s->arena + it->off : NULL;
}

static int item_order_cmp(const void *a, const void *b)
{
	const struct cil_item *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

int cil_ctx_order(struct cil_ctx *c, cil_item_fn fn, void *arg)
{
	size_t pos[CIL_SHARDS] = { 0 };
	int err;

	/* (CIL6) Each shard in order (sorted only where concurrent commits crossed: the
	 * context is swapped out, nothing inserts or looks up any more), then merged. */
	for (unsigned s = 0; s < CIL_SHARDS; s++) {
		struct cil_shard *sh = &c->shard[s];

		for (size_t i = 1; i < sh->n; i++) {
			if (sh->items[i - 1].order > sh->items[i].order) {
				qsort(sh->items, sh->n, sizeof(*sh->items), item_order_cmp);
				break;
			}
		}
	}
	for (;;) {
		const struct cil_item *min = NULL;
		unsigned ms = 0;

		for (unsigned s = 0; s < CIL_SHARDS; s++) {
			const struct cil_shard *sh = &c->shard[s];

			if (pos[s] < sh->n && (!min || sh->items[pos[s]].order < min->order)) {
				min = &sh->items[pos[s]];
				ms = s;
			}
		}
		if (!min)
			return 0;
		if ((err = fn(arg, min, cil_item_data(&c->shard[ms], min))))
			return err;
		pos[ms]++;
	}
}

/* ---- the public transaction calls ---- */

/* A grant's refusal of @bytes, with its reason (error.c E1). */
static int cil_grant_why(struct delog *log, int err, uint64_t bytes)
{
	switch (err) {
	case -EAGAIN:
		return error_say(err,
				 "DELOG_TX_NOWAIT: no room for %llu bytes now; the durable fd "
				 "turns readable when the tail moves (delog_durable_fd)",
				 (unsigned long long)bytes);
	case -EDEADLK:
		return error_say(err,
				 "%llu bytes: every open transaction waits for space that only "
				 "their commits can free; commit or abort one",
				 (unsigned long long)bytes);
	case DELOG_ESHUTDOWN:
		return log_shutdown_why(log);
	default:
		return err;
	}
}

/* The grant flags of a transaction begun with delog_tx_begin's @flags. */
static unsigned cil_grant_flags(unsigned flags)
{
	return (flags & DELOG_TX_NOWAIT ? JRNL_GRANT_NOWAIT : 0) |
	       (flags & DELOG_TX_RESERVE ? JRNL_GRANT_RESERVE : 0);
}

int delog_tx_begin(delog *log, uint64_t reserve, unsigned flags, delog_tx **out)
{
	struct delog_tx *tx;
	uint64_t r;
	int err;

	error_enter(__func__);
	if ((err = log_check(log)))
		return err;
	if (!out)
		return error_say(-EINVAL, "delog_tx_begin: a NULL @tx");
	*out = NULL;
	if (flags & ~(DELOG_TX_NOWAIT | DELOG_TX_RESERVE))
		return error_say(-EINVAL, "delog_tx_begin: flags %#x: unknown bits %#x", flags,
				 flags & ~(DELOG_TX_NOWAIT | DELOG_TX_RESERVE));
	if (reserve > log->geom.log_size / 4)
		return error_say(-EINVAL,
				 "delog_tx_begin: reserve %llu is more than a quarter of the "
				 "%llu-byte log",
				 (unsigned long long)reserve,
				 (unsigned long long)log->geom.log_size);
	if ((err = log_check_writable(log)))
		return err; /* delog.c U2 */
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return -ENOMEM;
	r = jrnl_grant_tx_cost(log->jl, reserve);
	err = jrnl_grant_reserve(log->jl, r, JRNL_GRANT_TICKET | cil_grant_flags(flags));
	if (err) {
		free(tx);
		return cil_grant_why(log, err, r);
	}
	tx->log = log;
	tx->reserved = r;
	tx->flags = flags;
	*out = tx;
	return 0;
}

int delog_tx_log(delog_tx *tx, uint64_t key, const void *data, uint32_t len)
{
	struct iovec iov = { (void *)data, len };

	if (len && !data)
		return error_say(-EINVAL, "delog_tx_log: NULL @data with len %u", len);
	return delog_tx_logv(tx, key, &iov, 1);
}

int delog_tx_logv(delog_tx *tx, uint64_t key, const struct iovec *iov, int iovcnt)
{
	struct delog *log;
	uint64_t off, cost, icost;
	unsigned char *own = NULL;
	uint32_t len = 0;
	size_t dup;
	int err;

	error_enter(__func__);
	if (!tx)
		return error_say(-EINVAL, "delog_tx_log: a NULL transaction");
	if (iovcnt < 0 || (iovcnt && !iov))
		return error_say(-EINVAL, "delog_tx_logv: iovcnt %d with @iov %s", iovcnt,
				 iov ? "set" : "NULL");
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return error_say(-EINVAL, "delog_tx_logv: iov[%d] has %zu bytes at NULL", i,
					 iov[i].iov_len);
		if (iov[i].iov_len > JRNL_MAX_ITEM - len)
			return error_say(-EINVAL,
					 "item of more than %u bytes (DELOG_ITEM_MAX): split it "
					 "over keys",
					 (unsigned)JRNL_MAX_ITEM);
		len += (uint32_t)iov[i].iov_len;
	}
	log = tx->log;
	if (atomic_load(&log->error))
		return log_shutdown_why(log);
	/* Same key twice in one transaction: the later copy wins.  The earlier copy is
	 * dropped only once the new one is sure to go in, so a failed call (E2BIG, EAGAIN,
	 * ENOMEM) leaves the transaction as it was. */
	for (dup = 0; dup < tx->n && tx->items[dup].key != key; dup++)
		;
	icost = jrnl_grant_item_cost(log->jl, len);
	cost = tx->cost - (dup < tx->n ? jrnl_grant_item_cost(log->jl, tx->items[dup].len) : 0);
	if (cost + icost > tx->reserved) {
		uint64_t more = cost + icost - tx->reserved;

		if (tx->reserved + more > jrnl_grant_tx_max(log->jl))
			return error_say(-E2BIG,
					 "the transaction would need %llu bytes of log, more than "
					 "the %llu one may take (a quarter of the log)",
					 (unsigned long long)(tx->reserved + more),
					 (unsigned long long)jrnl_grant_tx_max(log->jl));
		err = jrnl_grant_reserve(log->jl, more,
					 JRNL_GRANT_GROW | cil_grant_flags(tx->flags));
		if (err)
			return cil_grant_why(log, err, more);
		tx->reserved += more;
	}
	if (tx->n == tx->cap) {
		size_t cap = tx->cap ? tx->cap * 2 : 8;
		void *p = realloc(tx->items, cap * sizeof(*tx->items));

		if (!p)
			return -ENOMEM;
		tx->items = p;
		tx->cap = cap;
	}
	if (len >= CIL_OWN_MIN) {
		/* (CIL7) A buffer of its own, which the commit hands to the CIL. */
		own = malloc(len);
		if (!own)
			return -ENOMEM;
		off = 0;
		for (int i = 0; i < iovcnt; i++) {
			if (iov[i].iov_len)
				memcpy(own + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		off = 0;
		goto add;
	}
	off = tx->data_len;
	if (off + len > tx->data_cap) {
		uint64_t cap = tx->data_cap ? tx->data_cap : 1024;
		unsigned char *p;

		while (cap < off + len)
			cap *= 2;
		p = realloc(tx->data, cap);
		if (!p)
			return -ENOMEM;
		tx->data = p;
		tx->data_cap = cap;
	}
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(tx->data + tx->data_len, iov[i].iov_base, iov[i].iov_len);
		tx->data_len += iov[i].iov_len;
	}
add:
	if (dup < tx->n) {
		free(tx->items[dup].own);
		memmove(&tx->items[dup], &tx->items[dup + 1],
			(tx->n - dup - 1) * sizeof(*tx->items));
		tx->n--;
	}
	tx->cost = cost;
	tx->items[tx->n].key = key;
	tx->items[tx->n].own = own;
	tx->items[tx->n].off = off;
	tx->items[tx->n].len = len;
	tx->n++;
	tx->cost += icost;
	atomic_fetch_add_explicit(&log->st_items, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&log->st_logged_bytes, len, memory_order_relaxed);
	return 0;
}

static void tx_free(struct delog_tx *tx)
{
	for (size_t i = 0; i < tx->n; i++)
		free(tx->items[i].own); /* those the commit did not take (CIL7) */
	free(tx->items);
	free(tx->data);
	free(tx);
}

void delog_tx_abort(delog_tx *tx)
{
	if (!tx)
		return;
	jrnl_grant_done(tx->log->jl, tx->reserved, 0);
	tx_free(tx);
}

/* (CIL5) Claim @cost in @c if that keeps it within @limit, or if nothing was admitted
 * yet (one transaction alone may be larger).  ctx_lock held for read. */
static bool cil_admit(struct cil_ctx *c, uint64_t cost, uint64_t limit)
{
	uint64_t a = atomic_load(&c->admitted);

	do {
		if (a && a + cost > limit)
			return false;
	} while (!atomic_compare_exchange_weak(&c->admitted, &a, a + cost));
	return true;
}

int delog_tx_commit(delog_tx *tx, uint64_t *seq)
{
	struct delog *log;
	struct cil_ctx *c;
	int64_t delta = 0;
	uint64_t cseq, ctx_seq, cost, copied = 0;
	int err = 0;

	error_enter(__func__);
	if (!tx)
		return error_say(-EINVAL, "delog_tx_commit: a NULL transaction");
	log = tx->log;
	pthread_rwlock_rdlock(&log->ctx_lock);
	/* (CIL5) A checkpoint stays within twice push_bytes unless one transaction alone is
	 * larger: wait for the swap first if this one would take it past that. */
	while (tx->cost && !cil_admit(log->cur, tx->cost, 2 * log->push_bytes) &&
	       !atomic_load(&log->error)) {
		ctx_seq = log->cur->seq;
		pthread_rwlock_unlock(&log->ctx_lock);
		pthread_mutex_lock(&log->lock);
		push_request(log, 0);
		while (atomic_load(&log->open_seq) == ctx_seq && !atomic_load(&log->error))
			pthread_cond_wait(&log->writer_cond, &log->lock);
		pthread_mutex_unlock(&log->lock);
		pthread_rwlock_rdlock(&log->ctx_lock);
	}
	c = log->cur;
	cseq = ctx_seq = c->seq;
	if (atomic_load(&log->error))
		err = DELOG_ESHUTDOWN;
	else if (tx->n)
		err = cil_insert(c, tx, log->jl, &delta, &copied);
	if (!err && !tx->n && !atomic_load(&c->ntx))
		cseq--; /* nothing open: the last checkpoint is the one to force */
	cost = atomic_load(&c->cost);
	/* Exchange the transaction's grant for the CIL charge (CIL4), inside the read lock
	 * so the push thread's accounting of this context sees it, and after its items
	 * entered the CIL (grant.c GR5). */
	jrnl_grant_done(log->jl, tx->reserved, delta);
	pthread_rwlock_unlock(&log->ctx_lock);
	if (err == -ENOMEM)
		log_shutdown(log, err);
	if (err == DELOG_ESHUTDOWN)
		err = log_shutdown_why(log);
	atomic_fetch_add_explicit(&log->st_copied_bytes, copied, memory_order_relaxed);
	if (!err) {
		atomic_fetch_add_explicit(&log->st_tx, 1, memory_order_relaxed);
		if (seq)
			*seq = cseq;
	}
	tx_free(tx);
	if (!err && cost >= log->push_bytes) {
		pthread_mutex_lock(&log->lock);
		push_request(log, 0);
		/* (CIL5) twice the threshold: wait for the swap. */
		while (cost >= 2 * log->push_bytes && atomic_load(&log->open_seq) == ctx_seq &&
		       !atomic_load(&log->error))
			pthread_cond_wait(&log->writer_cond, &log->lock);
		pthread_mutex_unlock(&log->lock);
	}
	return err;
}
