/*
 * engine_private.h - the engine's shared state (not installed).  One struct delog per
 * open log; the files of engine/ each own a part of it, and each calls only the files
 * listed below it (the layers, top first; docs/ARCHITECTURE.md):
 *
 *   delog.c   the API: open (recovery), close, force, stats
 *   push.c    the push thread: swaps the CIL context, writes the checkpoint
 *   cil.c     transactions and the committed item list (CIL): sharded, relogging
 *   policy.c  the flush policies (sync, async, single, none) behind struct flush_policy,
 *             and log_durable, the one store of the durable watermark
 *   space.c   the checkpoint list (AIL), the tail, release and item_written, and what
 *             the journal's grant (journal/grant.c) asks of the engine when space is short
 *   wake.c    log_shutdown, the force queues and every wake-up (who waits where)
 *
 * Lock order (never take a lock to the left while holding one to the right):
 *   ctx_lock (rwlock) -> shard locks -> lock (the log's mutex) -> space.lock
 * The journal's own lock is below all of these; its done callbacks (ckpt_done) take only
 * `lock` and `space.lock`, and no engine lock is held across jrnl_tx_* calls except by the
 * push thread, which holds none of them there.
 */
#ifndef DELOG_ENGINE_PRIVATE_H
#define DELOG_ENGINE_PRIVATE_H

#include <delog.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "io.h"
#include "jrnl.h"

#define CIL_SHARDS 16u

/* The engine's one hash of an item key (MurmurHash3's 64-bit finalizer): the CIL's shard
 * and per-shard table (cil.c) and the AIL's key table (space.c). */
static inline uint64_t key_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* ---- cil.c ---- */

/* Items of at least this many bytes own their buffer from delog_tx_log to the context's
 * reset, never copied by the commit (cil.c CIL7). */
#define CIL_OWN_MIN (64u << 10)

struct cil_item {
	uint64_t key;
	unsigned char *own; /* the item's own buffer (CIL7), else NULL: in the arena */
	uint64_t off;       /* data offset in the shard's arena (without own) */
	uint32_t len, cap;  /* bytes used, bytes available at off */
	/* Its place in the checkpoint (cil.c CIL6): the commit ticket of the transaction
	 * that first logged the key into this context, << 32, | its index in it. */
	uint64_t order;
};

/* A slot of a shard's hash table: the item's index + 1 (0: empty) and the high half of
 * its key's hash, so a probe past another key compares in the slot and does not touch
 * the items array (one cache line per probe run instead of one miss per probe). */
struct cil_slot {
	uint32_t idx;
	uint32_t tag;
};

struct cil_shard {
	pthread_mutex_t lock;
	struct cil_item *items;
	size_t n, cap;
	struct cil_slot *slots; /* open addressing, linear probing, at most half full */
	size_t nslots;
	unsigned char *arena;
	uint64_t arena_len, arena_cap;
	uint64_t data_bytes;
} __attribute__((aligned(64)));

/* One checkpoint being gathered (or written). */
struct cil_ctx {
	uint64_t seq;
	_Atomic uint64_t nitems, data_bytes, cost, ntx, relogged;
	/* Item cost of the transactions admitted into this context (cil.c CIL5): claimed
	 * before they insert, so that committers racing in cannot together pass the bound. */
	_Atomic uint64_t admitted;
	_Atomic uint64_t tickets; /* commits into this context so far (CIL6) */
	struct cil_shard shard[CIL_SHARDS];
};

/* One item of an open transaction: its copy is at data + off in struct delog_tx, or in
 * its own buffer if it is large (CIL7). */
struct tx_item {
	uint64_t key;
	unsigned char *own;
	uint64_t off;
	uint32_t len;
};

struct delog_tx {
	struct delog *log;
	uint64_t reserved; /* grant held */
	uint64_t cost;     /* item cost logged so far (item_cost() of each) */
	size_t n, cap;
	struct tx_item *items;
	unsigned char *data;
	uint64_t data_len, data_cap;
	unsigned flags;
};

void cil_ctx_init(struct cil_ctx *c);
void cil_ctx_reset(struct cil_ctx *c);
/* Call @fn for each item of the swapped-out context @c in checkpoint order (cil.c CIL6)
 * with its data (NULL for an empty item); stops at, and returns, the first nonzero
 * return. */
typedef int (*cil_item_fn)(void *arg, const struct cil_item *it, const unsigned char *data);
int cil_ctx_order(struct cil_ctx *c, cil_item_fn fn, void *arg);
void cil_ctx_destroy(struct cil_ctx *c);

/* ---- policy.c ---- */

struct flush_policy {
	const char *name;
	/* jrnl_tx_* flags of a checkpoint's log transaction */
	unsigned tx_flags;
	/* Before the checkpoint's first write (async: flush and wait).  0 or error. */
	int (*before)(struct delog *log);
	/* After jrnl_tx_commit of checkpoint @seq returned, write_lock held; @forcer: the
	 * writer is a delog_force that pushed the sequence it waits for.  0 or error. */
	int (*after)(struct delog *log, uint64_t seq, bool forcer);
	/* The commit record of checkpoint @seq (and every one before it) completed, in
	 * sequence order, on a completion thread or the writer's (push.c ckpt_done):
	 * log_durable for the policies whose flags made it durable, or (single) ask for
	 * the flush that will. */
	void (*done)(struct delog *log, uint64_t seq);
	/* Never makes anything durable (none): the journal reuses space on completion and
	 * issues no flush of its own (jrnl_log_opts.no_flush). */
	bool never_flushes;
};
const struct flush_policy *flush_policy_get(enum delog_flush_policy p);

/* ---- space.c ---- */

struct ckpt_ent {
	uint64_t seq;
	uint64_t start_lsn; /* record holding its START op */
	uint64_t refs;      /* AIL items still pinning it (item tracking) */
	/* Keys it logged, whose AIL references move to it once it is durable (space.c S3);
	 * NULL after that. */
	uint64_t *keys;
	uint32_t nkeys, kcap;
};

struct ail_ent {
	uint64_t key, seq; /* key 0 slot empty iff seq == 0 */
};

struct space {
	pthread_mutex_t lock;
	uint64_t log_size;
	struct ckpt_ent *ck; /* ring of written checkpoints, oldest first */
	size_t ck_head, ck_n, ck_cap;
	uint64_t released;     /* delog_release watermark */
	uint64_t tail_lsn;     /* tail last given to the journal */
	uint64_t pending_tail; /* tail that item_written allows, once a flush followed */
	struct ail_ent *ail;   /* key -> seq of its newest logged copy (tracking) */
	size_t ail_n, ail_cap;
	bool tracking;
	_Atomic bool low; /* free space under 25%: push callback wanted */
	/* A NOWAIT grant found space that only a durable record naming the tail frees: the
	 * push thread writes one. */
	_Atomic bool cover;
	_Atomic uint64_t cover_delay_ns; /* engine_delay_cover: sleep before each cover */
	uint64_t push_calls;
	uint64_t item_flushes; /* S2 flushes (under lock) */
};

/* ---- publish.c: the durable sequence for followers in other processes ---- */

/* The shared page, /dev/shm/delog-UUID-DEV-INO (publish.c PB1-PB3; read by reader.c). */
#define PUB_MAGIC "delogpub"
#define PUB_VERSION 1u
#define PUB_PAGE_BYTES 4096u
#define PUB_NAME_MAX 96
enum {
	PUB_OPEN = 1,
	PUB_CLOSED = 2,
	PUB_SHUTDOWN = 3
};
struct pub_page {
	char magic[8]; /* PUB_MAGIC, set once the rest is */
	uint32_t version;
	_Atomic uint32_t state; /* PUB_* */
	uint8_t uuid[16];       /* the log's */
	_Atomic uint64_t durable_seq;
	_Atomic int64_t pid; /* the writer that last opened the log */
	/* followers that wait for the wake-up write (publish.c PB2), counted in and out by
	 * reader.c; one that was killed stays counted, and costs the writer its writes */
	_Atomic uint32_t watchers;
};
/* "/delog-UUID-DEV-INO" (a block device: "-bRDEV") of the log at @path, for shm_open:
 * 0, or -errno from stat. */
int pub_name(const uint8_t uuid[16], const char *path, char out[PUB_NAME_MAX]);
/* A writing open of @path publishes, from @durable (best effort: no page, no error). */
void pub_open(struct delog *log, const char *path, uint64_t durable);
void pub_durable(struct delog *log, uint64_t seq);
void pub_state(struct delog *log, uint32_t state);
void pub_release(struct delog *log);

/* (error.c E1) The calling thread's reason for its current call's failure: cleared on
 * entry to every public call that can fail (error_enter, which also records the call's
 * name for engine_call_slot, or error_clear); error_say sets it and returns @code. */
void error_clear(void);
void error_enter(const char *call);
__attribute__((format(printf, 2, 3))) int error_say(int code, const char *fmt, ...);

/* (delog.c U7) A handle's state: 0 open, -EINVAL NULL, DELOG_ECLOSED closed. */
#define LOG_MAGIC_OPEN 0x21676f6cu /* "log!" */
#define LOG_MAGIC_CLOSED 0x64616564u
int log_check(const struct delog *log);
/* log_check, then DELOG_ERDONLY for a read-only log (U2), DELOG_ESHUTDOWN after a failure:
 * what every call that changes the log's space answers first. */
int log_check_writable(const struct delog *log);
/* DELOG_ERDONLY and DELOG_ESHUTDOWN (always those codes), each with its reason. */
int log_rdonly_why(void);
int log_shutdown_why(const struct delog *log);

int space_init(struct delog *log);
void space_destroy(struct delog *log);
/* The journal's grant hooks (jrnl_grant_ops; their private data is the log). */
extern const struct jrnl_grant_ops space_grant_ops;
/* Make the journal's tail durable so its space can be reused (jrnl_log_cover), under
 * write_lock.  0 or the error that shut the log down. */
int space_cover(struct delog *log);
/* A checkpoint is being written starting at @start_lsn (push thread). */
int space_ckpt_add(struct delog *log, uint64_t seq, uint64_t start_lsn);
/* Record that @key was logged in checkpoint @seq (push thread or recovery, tracking
 * only); its AIL reference moves there at space_ckpt_durable (S3). */
int space_ail_log(struct delog *log, uint64_t key, uint64_t seq);
/* Checkpoints up to @seq are durable: move the AIL references of the keys they logged
 * (S3).  Called before durable_seq moves to @seq. */
int space_ckpt_durable(struct delog *log, uint64_t seq);
/* Checkpoint @seq is durable and durable_seq is about to move to it: recompute the tail
 * (S1 holds it at the newest durable checkpoint, so a release may have been waiting for
 * this), before anyone can see the new durable_seq. */
void space_durable_moved(struct delog *log, uint64_t seq);
/* A device flush completed that was issued after @snapshot was taken: apply it. */
void space_flushed(struct delog *log, uint64_t snapshot);
uint64_t space_pending_tail(struct delog *log);
/* Target for the push callback; 0 if none needed. */
uint64_t space_push_target(struct delog *log);

/* ---- the log ---- */

struct delog {
	struct iol_dev *dev;
	bool own_dev;
	bool read_only;        /* DELOG_OPEN_RDONLY: nothing is ever written (delog.c U2) */
	uint64_t dev_flushes0; /* the device's dev_flushes when the log opened (delog_stats) */
	struct jrnl_geom geom;
	struct jrnl_log *jl;
	/* LOG_MAGIC_OPEN from a successful open until delog_close (delog.c U7); kept past
	 * the first 32 bytes, which the allocator's free lists write. */
	uint32_t magic;
	const struct flush_policy *policy;
	struct pub_page *pub; /* publish.c: NULL when not published */
	int pub_fd;
	char pub_name[PUB_NAME_MAX];
	enum delog_flush_policy policy_id;
	delog_push_fn push_cb;
	void *push_arg;
	uint64_t push_bytes; /* background push threshold (cil.c CIL5) */

	/* CIL: ctx_lock read by committers, written by the push thread to swap cur. */
	pthread_rwlock_t ctx_lock;
	struct cil_ctx *cur, *spare;
	_Atomic uint64_t open_seq; /* cur->seq, readable without ctx_lock */

	/* lock protects what follows and the conds. */
	pthread_mutex_t lock;
	pthread_cond_t push_cond; /* the push thread waits here (push_wake) */
	/* The writer moved on: the open context was swapped, a chained flush completed,
	 * the push thread exited, or the log shut down (writer_wake; wake.c). */
	pthread_cond_t writer_cond;
	/* Forces wait on the futex word force_gen[seq % FORCE_QUEUES] (wake.c F1), so a
	 * checkpoint's durability wakes only those waiting for it (and the rare alias), not
	 * every client, and a woken force returns without taking this lock. */
#define FORCE_QUEUES 8u
	_Atomic uint32_t force_gen[FORCE_QUEUES];
	_Atomic uint32_t force_waiters[FORCE_QUEUES];
	pthread_t push_thread;
	bool push_running, stopping;
	bool push_wanted;           /* the CIL passed push_bytes: push even without a force */
	pthread_mutex_t write_lock; /* held by whoever writes a checkpoint (push_now) */
	/* Highest sequence a force (or S4 in space.c) asked to push: written under this
	 * lock (push_request), read without it by delog_force_nowait, which need not ask
	 * again for a sequence at or below it (the push thread pushes every context up to
	 * it, push.c). */
	_Atomic uint64_t force_seq;
	/* Highest sequence delog_force_nowait asked for (under this lock): the push thread
	 * pushing it is its forcer (push.c). */
	uint64_t nowait_seq;
	uint64_t pushed_seq;       /* highest sequence whose checkpoint was written */
	uint64_t done_seq;         /* highest sequence whose commit record completed */
	unsigned flushes_inflight; /* single's chain flushes not yet done (policy.c P2) */
	/* single's flush chain (policy.c P1-P3): the newest chain flush covers fl_cover;
	 * checkpoints up to sync_seq are made durable by the lone forcer that wrote them. */
	uint64_t fl_cover, sync_seq;
	_Atomic uint64_t durable_seq;
	_Atomic int error; /* sticky: the first failure */
	int efd;
	/* Set by the first delog_durable_fd call: until then nobody can poll the eventfd,
	 * so durable_seq's advances skip its write(2) (efd_signal). */
	_Atomic bool efd_armed;
	uint64_t durable_seq0; /* durable_seq at open */

	struct space space;

	/* stats */
	_Atomic uint64_t st_tx, st_items, st_relogged, st_forces, st_force_waits, st_force_no_io,
		st_forces_nowait;
	/* delog_stats: item bytes logged (each copied into its transaction), and those
	 * copied after that (into the CIL arena, CIL7, and into the log buffers). */
	_Atomic uint64_t st_logged_bytes, st_copied_bytes;
	uint64_t st_ckpts, st_ckpt_items, st_ckpt_bytes, st_ckpt_txs;
};

/* ---- push.c ---- */

int push_start(struct delog *log);
void push_stop(struct delog *log);
/* Swap and write the open CIL context if it holds anything (write_lock held); @forcer:
 * the caller is a delog_force waiting for that context's sequence.  Returns 0 or the
 * error that shut the log down. */
int push_now(struct delog *log, bool forcer);

/* ---- policy.c (struct flush_policy above) ---- */

/* The checkpoint @seq is durable (in order): move durable_seq (D1, D2). */
void log_durable(struct delog *log, uint64_t seq);
/* Wait until every checkpoint written completed and no flush of the policy (policy.c)
 * is in flight: before unmount and close. */
void policy_wait_flushes(struct delog *log);

/* ---- wake.c: the lowest layer ---- */

/* Shut the log down with @err (first error wins); wakes every waiter (wake.c SD1). */
void log_shutdown(struct delog *log, int err);
/* Ask the push thread to write everything up to @seq, or (0) to push the CIL because
 * it is large, and wake it (lock held). */
void push_request(struct delog *log, uint64_t seq);
/* Ask the push thread to push the open CIL context if it holds transactions, as a
 * force would (no engine lock held): space.c S4. */
void push_request_open(struct delog *log);
/* Wake the push thread to look at its flags again (lock not held). */
void push_wake(struct delog *log);
/* Broadcast writer_cond (lock not held). */
void writer_wake(struct delog *log);
/* F1: wait until checkpoint @seq is durable or the log shut down. */
void force_wait(struct delog *log, uint64_t seq);
/* F1: durable_seq moved from @old to @seq: wake the forces of those sequences. */
void force_wake_durable(struct delog *log, uint64_t old, uint64_t seq);
/* Make delog_durable_fd readable (efd_signal: only once someone asked for it). */
void efd_signal(struct delog *log);
void efd_write(struct delog *log);

#endif
