/*
 * crash.c - `delog crash`: power cuts at every device event and every acknowledgement of
 * a seeded multi-threaded workload on the simulated disk, each crash state recovered and
 * checked by an oracle (DESIGN.md section 5, G1-G4 and G6-G8; research/reliability.md
 * sections 3-5, T1 and T3).
 *
 * What it proves.  For every crash state it checks, the log that recovery hands back is
 *   - complete: every checkpoint the durable watermark (delog_durable_seq) had reached
 *     and every transaction whose force had returned, when the power was cut, is there
 *     (acknowledged is a subset of recovered; G1), unless the workload had released it;
 *   - a prefix: checkpoint sequences are consecutive from the first recovered one, the
 *     first is at or before the oldest one not released, and each client's transactions
 *     are recovered without a hole: exactly those committed into the recovered
 *     checkpoints (G3);
 *   - whole and authentic: each recovered checkpoint holds every item of every
 *     transaction committed into it and nothing else, each item's payload hash matches,
 *     a key relogged within the checkpoint carries its newest value (G2); every item was
 *     submitted by this round's workload into exactly that checkpoint sequence, so
 *     nothing from an earlier lap or another log passes (recovered is a subset of
 *     submitted; G4);
 *   - and recovery itself succeeds: a crash can only tear what was in flight, so any
 *     error (DELOG_ECORRUPT, ...) on a crash image is a violation (G7 the other way).
 * A sample of the distinct images (--full-every) is also opened the way an application
 * does (delog_open_dev: recovery with stamping, the writer, the push thread), must
 * recover the same set, takes a few more forced transactions, is crashed again at a
 * random state and recovered: the new checkpoints follow the old ones and nothing of the
 * old torn tail comes back (G5 idempotence across the two recoveries, G6 continuation).
 * An online protocol check runs over the device trace of the workload: no two writes in
 * flight overlap, no write lands on a sector whose record is still in the live region
 * [tail, head) (G9), and write flags stay within what the flush policy issues; and the
 * "all old" state (media only) is checked at every crash point, which is exactly the
 * rule "nothing is acknowledged before it is durable".
 *
 * How.  A round formats a fresh 4 MiB log (the smallest the format allows: every image
 * is that large, so small is fast) on a sim disk in hold mode: no completion happens
 * unless this thread delivers it.  The workload's client threads (seeded per client and
 * transaction, so the checker regenerates what each transaction held) commit, relog,
 * force and release while the controller delivers one completion at a time in seeded
 * random order.  After every delivery, and whenever new requests were submitted or an
 * acknowledgement arrived, the controller takes a crash point: it reads what was
 * acknowledged (before the snapshot, so everything in it was durable), then the
 * unstable sectors (iol_sim_unstable), their newest contents (iol_sim_crash_choose, all
 * "new") and the media (iol_sim_media, only after a delivery that changed it), then the
 * release watermark (after the snapshot, so it bounds every release that could have
 * mattered).  Crash states are choices per unstable sector, old / new / garbage
 * (--profile garble): all 2^k when k <= 12 and the budget allows (always with
 * --exhaustive), else the structured states of reliability.md section 3.5 (all old, all
 * new, prefixes in submission and in completion order, omit-one, each write alone in
 * and alone out, each sector garbled) sampled together with seeded random states.
 * Images are deduplicated by a hash that is a sum of per-sector hashes, so a state's hash
 * costs O(k) and equal images from different crash points are recovered once: the
 * recovered set is cached per image, and only the comparison with the crash point's
 * acknowledged set is redone per state.
 * Recovery runs on worker threads (--jobs), each with its own sim disk that it patches
 * to the state's image by writing only the sectors that differ from what it holds, then
 * runs the journal's recovery read-only (the replay recovery does for delog_open, minus
 * the stamping, which the --full-every sample exercises).
 * --states N is the total number of crash states checked; rounds (each a new workload,
 * its parameters drawn from the seed) run until it is reached, each crash point taking
 * a share of the budget.
 *
 * The log-full workload (--workload full; T8, G9).  Its clients commit and force but
 * never release, and its push callback only counts the requests, so the tail stays
 * pinned until the log is full: committers wait in delog_tx_begin, and a third of the
 * transactions, which begin with DELOG_TX_NOWAIT (half of them reserving too little, so
 * delog_tx_log must take more), get -EAGAIN, which must leave nothing behind (no
 * transaction, no shutdown; the whole transaction is retried later, and were any of the
 * failed attempt to reach the log the oracle would find it twice or in the wrong
 * checkpoint).  Only then does a releaser thread move the tail, mostly by one or two
 * small checkpoints (cil_push_bytes is log/64 here), so the log is back at the edge at
 * once; if everything durable is released and a committer still waits, it forces the
 * CIL and releases that, so a waiting committer is always set free (no deadlock), and a
 * wait that outlasts everything being released is reported (G9: progress resumes once
 * space is freed).  Crash points are taken at every device event as for the other
 * workloads, so also at the full edge: writes issued right after a release land just
 * behind the tail, where the G9 check above looks.  The continuation of the sampled
 * images begins with NOWAIT (a recovered image may be of a full log), and reports a
 * log that nothing can free after recovery.
 *
 * Determinism.  The seed fixes every round's workload, every transaction's contents, the
 * delivery order and the states sampled; the interleaving of the client threads is the
 * OS's, so a rerun explores the same space without promising the same events.  Each
 * violation therefore prints its round, seed, crash point, trace position and state, and
 * --save DIR writes the pre-recovery image, which `delog recover --backend sim FILE`
 * (4096-byte sectors) replays exactly.
 */
#include "tools.h"

#include "format.h"

#include <delog.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "io_sim.h"
#include "jrnl.h"

#define CR_LOG_BYTES (2ull * JRNL_MAX_LOGBUFS * JRNL_MAX_LOGBSIZE) /* the format's least */
#define CR_LOG_MAX (16ull << 20)  /* the random workload's largest log */
#define CR_SESSIONS_MAX 6u
#define CR_MAX_CLIENTS 15u       /* workload clients; slot CR_MAX_CLIENTS: continuation */
#define CR_SLOTS (CR_MAX_CLIENTS + 1u)
#define CR_MAX_ITEMS 6u
#define CR_CONT_TXS 3u
#define CR_EXH_K 12u             /* enumerate all 2^k up to this many unstable sectors */
#define CR_MAX_PER_POINT 4096u
#define CR_MAX_VIOL_KEPT 64u
#define CR_STALL_NS (120ull * 1000000000ull)

#define PL_MAGIC 0x4c504352u     /* "RCPL" */
#define IDX_RELOG 0xfffeu
#define IDX_SHARED 0xfffdu
#define KEY_UNIQUE(c, n, i) ((1ull << 60) | ((uint64_t)(c) << 48) | ((uint64_t)(n) << 16) | (i))
#define KEY_RELOG(c) ((2ull << 60) | (uint64_t)(c))
#define KEY_SHARED(j) ((3ull << 60) | (uint64_t)(j))

/* ---- PRNG and hashing ---- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix64(*s);
}

static uint64_t rnd_in(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rnd(s) % (hi - lo + 1);
}

static uint64_t seed_for(uint64_t seed, uint64_t a, uint64_t b)
{
	return mix64(seed ^ mix64(a * 0x9e3779b97f4a7c15ull + mix64(b + 0x5eed)));
}

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* A 64-bit hash of @len bytes (two multiply-rotate lanes, 16 bytes a step). */
static uint64_t hash_bytes(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t a = seed ^ 0x9e3779b97f4a7c15ull, c = seed * 0xc2b2ae3d27d4eb4full + len;
	size_t i = 0;

	for (; i + 16 <= len; i += 16) {
		uint64_t w0, w1;

		memcpy(&w0, b + i, 8);
		memcpy(&w1, b + i + 8, 8);
		a = rotl(a + w0 * 0xc2b2ae3d27d4eb4full, 31) * 0x9e3779b97f4a7c15ull;
		c = rotl(c + w1 * 0xc2b2ae3d27d4eb4full, 31) * 0x9e3779b97f4a7c15ull;
	}
	for (; i < len; i++)
		a = (a ^ b[i]) * 0x100000001b3ull;
	return mix64(a ^ rotl(c, 17));
}

/* Per-sector term of an image hash: the image's hash is the sum over its sectors. */
static uint64_t sector_hash(const void *p, uint32_t sector, uint64_t idx)
{
	return mix64(hash_bytes(p, sector, 0x5ec7) + idx * 0x9e3779b97f4a7c15ull);
}

/* ---- workloads ---- */

struct wl {
	const char *name;
	unsigned clients;
	uint32_t txs;             /* per client */
	unsigned max_items;       /* unique items per transaction: 1..max_items */
	uint32_t small_max;       /* most items: 32..small_max bytes */
	uint32_t big_min, big_max;
	unsigned big_1in;         /* 0: no big items */
	unsigned force_1in;
	unsigned shared_1in;      /* 0: no shared keys */
	unsigned nshared;
	unsigned release_1in;     /* 0: only the push callback releases */
	unsigned logbufs;
	uint32_t logbsize;
	bool full;                /* the log-full workload: nobody releases but the releaser */
	unsigned nowait_1in;      /* transactions that begin with DELOG_TX_NOWAIT */
	/* Drawn per round by the random workload (the others keep the defaults). */
	uint64_t log_bytes;       /* log size */
	uint32_t sector;          /* sector size of the round */
	uint64_t cil_push;        /* delog_options.cil_push_bytes (0: the default) */
	bool releaser;            /* the releaser thread frees space, only at the full edge */
	unsigned rel_all_1in;     /* its bursts that release everything durable */
	bool track;               /* DELOG_OPEN_TRACK_ITEMS: item_written, per-key oracle */
	unsigned written_1in;     /* durable transactions whose unique items are written */
	unsigned sessions;        /* sessions of the chain: crash, reopen, continue */
};

static const char *const wl_names[] = { "mixed", "wrap", "relog", "small", "full", "random" };
#define NR_WL (sizeof(wl_names) / sizeof(wl_names[0]))

/* Sizes on the boundaries of sectors and buffers, mixed into every workload. */
static uint32_t boundary_len(uint64_t *r, uint32_t sector, uint32_t logbsize)
{
	static const int32_t delta[] = { -1, 0, 1, -64, -40 };
	uint32_t base;

	switch (rnd(r) % 3) {
	case 0:
		base = sector;
		break;
	case 1:
		base = sector / 2;
		break;
	default:
		base = logbsize - 2 * sector;
		break;
	}
	return (uint32_t)((int32_t)base + delta[rnd(r) % 5]);
}

/*
 * The random workload: every parameter drawn from the round's seed, so rounds reach
 * geometries and phases the fixed workloads never do.  Log size from the format's least
 * (4 MiB, which is also >= 2 x logbufs x logbsize) to CR_LOG_MAX; 512 or 4096-byte sectors
 * (unless --sector fixes it); 2..8 buffers of 16..256 KiB; items from a sector to several
 * times the ring (logbufs x logbsize), up to the quarter of the log a transaction may
 * take; checkpoints from one transaction (forced at once) to several MiB (cil_push_bytes
 * up to 5 MiB, so larger than recovery's 2 MiB window); releases behind the clients, only
 * from the push callback, or at the full edge right up to the durable sequence while big
 * checkpoints are written; DELOG_TX_NOWAIT; item tracking with item_written; and a chain
 * of 3-4 sessions, each crashed at a seeded state, reopened by delog_open_dev and
 * continued.
 */
static void wl_random(struct wl *w, uint64_t *r, uint32_t sector)
{
	static const uint32_t smax[] = { 64, 512, 4096, 16384 };
	static const unsigned force[] = { 1, 3, 8, 64 }, big[] = { 0, 4, 8, 16 };
	uint64_t ring, cap;

	w->sector = sector ? sector : (rnd(r) % 2 ? 4096u : 512u);
	w->logbufs = (unsigned)rnd_in(r, JRNL_MIN_LOGBUFS, JRNL_MAX_LOGBUFS);
	w->logbsize = JRNL_MIN_LOGBSIZE << rnd_in(r, 0, 4);
	ring = (uint64_t)w->logbufs * w->logbsize;
	/* Small logs wrap (and fill) faster; big ones hold the big checkpoints. */
	w->log_bytes = rnd(r) % 5 < 2 ? CR_LOG_BYTES :
		       rnd_in(r, CR_LOG_BYTES >> 16, CR_LOG_MAX >> 16) << 16;
	if (w->log_bytes < 2 * ring)
		w->log_bytes = 2 * ring;
	w->clients = (unsigned)rnd_in(r, 1, 4);
	w->max_items = (unsigned)rnd_in(r, 1, CR_MAX_ITEMS);
	w->small_max = smax[rnd(r) % 4];
	w->big_1in = big[rnd(r) % 4];
	/* Items up to 1..8 rings, within a quarter of the log per transaction. */
	cap = w->log_bytes / 4 / (w->max_items + 3);
	w->big_max = (uint32_t)((ring << rnd_in(r, 0, 3)) < cap ? ring << rnd_in(r, 0, 3) : cap);
	w->big_min = w->big_max / 8 > w->small_max ? w->big_max / 8 : w->small_max;
	w->force_1in = force[rnd(r) % 4];
	w->shared_1in = (unsigned)rnd_in(r, 0, 4);
	w->nshared = (unsigned)rnd_in(r, 1, 4);
	switch (rnd(r) % 3) {
	case 0: /* behind the clients */
		w->release_1in = (unsigned)(4u << rnd_in(r, 0, 3));
		break;
	case 1: /* only when the push callback asks */
		break;
	default: /* at the full edge, often everything durable: free space near zero */
		w->releaser = true;
		w->rel_all_1in = 2;
		break;
	}
	switch (rnd(r) % 4) {
	case 0:
		w->cil_push = 0;
		break;
	case 1:
		w->cil_push = ring / 2;
		break;
	case 2:
		w->cil_push = w->log_bytes / 16;
		break;
	default:
		w->cil_push = w->log_bytes / 3;
		break;
	}
	if (w->log_bytes >= (10ull << 20) && rnd(r) % 3 == 0) {
		/* Checkpoints of 3-5 MiB: larger than any recovery window. */
		w->cil_push = rnd_in(r, 3ull << 20, 5ull << 20);
		if (w->cil_push > w->log_bytes / 3)
			w->cil_push = w->log_bytes / 3;
		w->force_1in = 64;
		w->big_1in = 2;
	}
	w->nowait_1in = rnd(r) % 2 ? (unsigned)rnd_in(r, 2, 8) : 0;
	w->track = rnd(r) % 2;
	w->written_1in = (unsigned)rnd_in(r, 1, 3);
	if (w->track && rnd(r) % 2) {
		/* Space freed by item tracking alone (every unique item written back, the
		 * relogged keys moving on), releases only when the push callback asks, on
		 * the smallest log: the tail moves by delog_item_written and the flushes a
		 * waiting committer issues (space.c S2), while relogging checkpoints are in
		 * flight (S3). */
		w->release_1in = 0;
		w->releaser = false;
		w->rel_all_1in = 32;
		w->written_1in = 1;
		w->log_bytes = CR_LOG_BYTES;
		w->cil_push = 0;
	}
	w->sessions = (unsigned)rnd_in(r, 3, 4);
}

static void wl_pick(const char *name, uint64_t seed, unsigned threads, uint32_t sector,
		    struct wl *w)
{
	uint64_t r = seed_for(seed, 0x3011, 0);
	static const uint32_t bsz[] = { 16u << 10, 32u << 10, 64u << 10 };
	double laps, avg_len, avg_tx;

	memset(w, 0, sizeof(*w));
	w->name = name;
	w->logbufs = (unsigned)(2u << rnd_in(&r, 0, 2)); /* 2, 4, 8 */
	w->logbsize = bsz[rnd(&r) % 2];
	w->log_bytes = CR_LOG_BYTES;
	w->sector = sector;
	w->sessions = 1;
	w->rel_all_1in = 32;
	if (!strcmp(name, "random")) {
		wl_random(w, &r, sector);
		laps = w->sessions * (0.6 + (double)(rnd(&r) % 100) / 100.0);
	} else if (!strcmp(name, "small")) {
		w->clients = (unsigned)rnd_in(&r, 1, 2);
		w->txs = (uint32_t)rnd_in(&r, 1, 4);
		w->max_items = 2;
		w->small_max = 700;
		w->force_1in = (unsigned)rnd_in(&r, 1, 2);
		w->shared_1in = 3;
		w->nshared = 2;
		laps = 0;
	} else if (!strcmp(name, "wrap")) {
		w->clients = (unsigned)rnd_in(&r, 2, 3);
		w->max_items = 3;
		w->small_max = 4000;
		w->big_min = 8u << 10;
		w->big_max = 60u << 10;
		w->big_1in = 6;
		w->force_1in = 2;
		w->shared_1in = 4;
		w->nshared = 4;
		w->release_1in = 8;
		w->logbufs = (unsigned)rnd_in(&r, 2, 4);
		laps = 2.0 + (double)(rnd(&r) % 50) / 100.0;
	} else if (!strcmp(name, "full")) {
		/* Log full (T8): clients commit and force but never release, so the tail stays
		 * pinned until the log is full and committers wait (or fail with -EAGAIN under
		 * DELOG_TX_NOWAIT); a releaser moves the tail in bursts only then, so the log
		 * goes through the full edge again and again while it wraps. */
		w->full = true;
		w->clients = (unsigned)rnd_in(&r, 2, 3);
		w->max_items = 3;
		w->small_max = 3000;
		w->big_min = 4u << 10;
		w->big_max = 40u << 10;
		w->big_1in = 8;
		w->force_1in = 3;
		w->shared_1in = 4;
		w->nshared = 3;
		w->nowait_1in = 3;
		w->logbsize = bsz[rnd(&r) % 3];
		w->releaser = true;
		w->cil_push = CR_LOG_BYTES / 64;
		laps = 2.0 + (double)(rnd(&r) % 60) / 100.0;
	} else if (!strcmp(name, "relog")) {
		w->clients = (unsigned)rnd_in(&r, 3, 4);
		w->max_items = 1;
		w->small_max = 200;
		w->force_1in = 8;
		w->shared_1in = 1;
		w->nshared = 2;
		w->release_1in = 32;
		laps = 1.1;
	} else { /* mixed */
		w->clients = (unsigned)rnd_in(&r, 2, 4);
		w->max_items = 4;
		w->small_max = 1500;
		w->big_min = 4u << 10;
		w->big_max = 24u << 10;
		w->big_1in = 20;
		w->force_1in = 3;
		w->shared_1in = 3;
		w->nshared = 4;
		w->release_1in = 16;
		w->logbsize = bsz[rnd(&r) % 3];
		laps = 1.2 + (double)(rnd(&r) % 40) / 100.0;
	}
	if (threads)
		w->clients = threads;
	if (laps > 0) {
		avg_len = (32.0 + w->small_max) / 2;
		if (w->big_1in)
			avg_len = avg_len * (1.0 - 1.0 / w->big_1in) +
				  (w->big_min + w->big_max) / 2.0 / w->big_1in;
		avg_tx = (1.0 + w->max_items) / 2 * (avg_len + 64) + 2 * (32 + 64) + 64;
		w->txs = (uint32_t)(laps * (double)w->log_bytes / avg_tx / w->clients) + 1;
	}
}

/* ---- payloads ---- */

struct pl_hdr {
	uint32_t magic;
	uint16_t client;
	uint16_t idx;             /* item index, IDX_RELOG or IDX_SHARED */
	uint32_t n;               /* transaction counter of the client, from 1 */
	uint16_t m;               /* unique items of the transaction */
	uint16_t shared;          /* shared keys the transaction logs (bitmask) */
	uint32_t len;             /* item bytes */
	uint32_t round;
	uint64_t check;           /* hash of the key and the item with check = 0 */
};
_Static_assert(sizeof(struct pl_hdr) == 32, "payload header");

struct txspec {
	unsigned m;
	uint32_t len[CR_MAX_ITEMS];
	uint16_t shared;
	bool relog_twice, force;
	bool nowait, under;       /* DELOG_TX_NOWAIT; reserve only the first item (so
				   * delog_tx_log must take more space, which may fail too) */
	unsigned release_lag;     /* 0: no release; else lag + 1 */
};

/* ---- a round: one workload on one fresh log ---- */

struct round {
	uint64_t seed;
	uint32_t id;
	uint32_t sector;
	struct wl wl;
	enum delog_flush_policy policy;
	uint64_t log_bytes, dev_bytes;
	unsigned session;         /* of the chain, from 0 */
	uint32_t start_n[CR_MAX_CLIENTS];         /* first transaction of this session */
	_Atomic uint64_t *seqs[CR_MAX_CLIENTS];   /* [1..txs]: checkpoint of the commit */
	_Atomic uint8_t *sess[CR_MAX_CLIENTS];    /* [1..txs]: session of that commit */
	_Atomic uint8_t *written[CR_MAX_CLIENTS]; /* [1..txs]: unique items item_written
						   * (intent: set before the calls) */
	_Atomic uint64_t item_writes;
	_Atomic uint32_t submitted[CR_MAX_CLIENTS];
	_Atomic uint32_t acked[CR_MAX_CLIENTS];
	_Atomic uint64_t released;                /* intent: set before delog_release */
	_Atomic uint64_t ack_events;
	_Atomic uint32_t clients_done;
	/* The published log handle, for the controller's reads (durable_seq, stats). */
	pthread_mutex_t log_mu;
	delog *log;
	uint64_t final_durable;
	struct iol_dev *dev;
	_Atomic bool armed, done;
	_Atomic uint64_t arm_ev;
	pthread_mutex_t err_mu;
	char err[256];            /* first workload failure */
	/* The full workload. */
	_Atomic uint64_t blocked_since[CR_MAX_CLIENTS]; /* ns: in a blocking tx_begin */
	_Atomic uint64_t eagain_begin, eagain_log, nowait_ok, bursts, forces_rel;
	_Atomic uint64_t push_calls;
	uint64_t space_waits;     /* delog_stats at the end */
	uint64_t head_cycle;
	/* Sessions: what the cut point had acknowledged, for the next session's recovery. */
	uint64_t cut_durable, cut_released, cut_must_lo;
	uint32_t cut_acked[CR_MAX_CLIENTS];
	bool chain_end;           /* the chain cannot go on (a recovery broke the oracle) */
};

/* Payloads carry the round and the session that wrote them, so a copy from a session
 * whose transaction a crash lost (and which the next session wrote again under the same
 * number) is told apart from the new one (G6). */
static uint32_t pl_round(const struct round *rd, unsigned session)
{
	return rd->id | (uint32_t)session << 24;
}

static void tx_spec(const struct round *rd, unsigned c, uint32_t n, struct txspec *t)
{
	const struct wl *w = &rd->wl;
	uint64_t r = seed_for(rd->seed, 0x7000 + c, n);

	memset(t, 0, sizeof(*t));
	if (c == CR_MAX_CLIENTS) { /* the continuation client */
		t->m = 1;
		t->len[0] = 64;
		t->force = true;
		return;
	}
	t->m = (unsigned)rnd_in(&r, 1, w->max_items);
	for (unsigned i = 0; i < t->m; i++) {
		uint32_t len;

		if (w->big_1in && rnd(&r) % w->big_1in == 0)
			len = (uint32_t)rnd_in(&r, w->big_min, w->big_max);
		else if (rnd(&r) % 8 == 0)
			len = boundary_len(&r, rd->sector, w->logbsize);
		else
			len = (uint32_t)rnd_in(&r, sizeof(struct pl_hdr), w->small_max);
		t->len[i] = len < sizeof(struct pl_hdr) ? (uint32_t)sizeof(struct pl_hdr) : len;
	}
	if (w->shared_1in && rnd(&r) % w->shared_1in == 0)
		t->shared = (uint16_t)(1u << (rnd(&r) % w->nshared));
	t->relog_twice = rnd(&r) % 4 == 0;
	t->force = rnd(&r) % w->force_1in == 0;
	if (w->release_1in && rnd(&r) % w->release_1in == 0)
		t->release_lag = 1 + (unsigned)(rnd(&r) % 6);
	if (w->nowait_1in && rnd(&r) % w->nowait_1in == 0) {
		t->nowait = true;
		t->under = rnd(&r) % 2 == 0;
	}
}

/* The payload hash: the header up to its check field, and the filler after it. */
static uint64_t pl_hash(uint64_t key, const unsigned char *buf, uint32_t len)
{
	return hash_bytes(buf, offsetof(struct pl_hdr, check), key) ^
	       rotl(hash_bytes(buf + sizeof(struct pl_hdr), len - sizeof(struct pl_hdr), ~key), 1);
}

static void pl_make(const struct round *rd, uint64_t key, unsigned c, uint32_t n, unsigned idx,
		    unsigned m, uint16_t shared, uint32_t len, unsigned char *buf)
{
	struct pl_hdr h = { .magic = PL_MAGIC, .client = (uint16_t)c, .idx = (uint16_t)idx,
			    .n = n, .m = (uint16_t)m, .shared = shared, .len = len,
			    .round = pl_round(rd, rd->session) };
	uint64_t r = seed_for(rd->seed, key, n);

	for (uint32_t i = sizeof(h); i < len; i += 8) {
		uint64_t v = rnd(&r);

		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
	memcpy(buf, &h, sizeof(h));
	h.check = pl_hash(key, buf, len);
	memcpy(buf, &h, sizeof(h));
}

static bool pl_read(const struct round *rd, uint64_t key, const void *data, uint32_t len,
		    struct pl_hdr *h)
{
	if (!data || len < sizeof(*h))
		return false;
	memcpy(h, data, sizeof(*h));
	return h->magic == PL_MAGIC && h->len == len && (h->round & 0xffffffu) == rd->id &&
	       h->check == pl_hash(key, data, len);
}

/* ---- the oracle's view of one recovery ---- */

struct summary {
	int err;                  /* recovery's return */
	bool ok;
	uint64_t nck, lo, hi;
	uint32_t last_n[CR_SLOTS]; /* last transaction recovered per client (0: none) */
	uint64_t max_ck;          /* item bytes of the largest checkpoint recovered */
	char what[200];           /* first problem found */
};

struct cont {                 /* the continuation client's transactions */
	uint32_t n;
	uint64_t seq[CR_CONT_TXS + 1];
};

struct ritem {
	uint64_t key;
	const void *data;
	uint32_t len;
};

struct rtx {
	unsigned c;
	uint32_t n;
	uint16_t shared;
};

struct rctx {
	struct round *rd;
	struct summary *s;
	const struct cont *cont;
	struct ritem *it;
	size_t cap;
	struct rtx *txv;          /* transactions of the checkpoint being checked */
	size_t txcap;
	uint64_t cont_base;       /* with cont: checkpoints after this one are the
				   * continuation's (the workload's records stop there) */
};

static void bad(struct summary *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad(struct summary *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->ok)
		return;
	s->ok = false;
	va_start(ap, fmt);
	vsnprintf(s->what, sizeof(s->what), fmt, ap);
	va_end(ap);
}

static int cmp_ritem(const void *a, const void *b)
{
	uint64_t x = ((const struct ritem *)a)->key, y = ((const struct ritem *)b)->key;

	return x < y ? -1 : x > y;
}

static uint64_t rec_seq(struct round *rd, unsigned c, uint32_t n)
{
	if (!n || n > rd->wl.txs)
		return 0;
	return atomic_load_explicit(&rd->seqs[c][n], memory_order_acquire);
}

/* One recovered checkpoint against what the workload did (the callback of jrnl_recover
 * and of delog_open_dev, through the adapters below). */
static void check_ckpt(struct rctx *x, uint64_t seq, size_t nitems_hdr, const struct ritem *in,
		       size_t n)
{
	struct summary *s = x->s;
	struct round *rd = x->rd;
	uint32_t cmax[CR_SLOTS] = { 0 };
	uint16_t tx_shared_any = 0;
	size_t ntx = 0;
	bool relog_seen[CR_SLOTS] = { false };
	struct pl_hdr h;

	if (s->nck && seq != s->hi + 1)
		bad(s, "checkpoint %" PRIu64 " recovered after %" PRIu64, seq, s->hi);
	if (!s->nck)
		s->lo = seq;
	s->nck++;
	s->hi = seq;
	if (nitems_hdr != n)
		bad(s, "checkpoint %" PRIu64 ": says %zu items, has %zu", seq, nitems_hdr, n);
	{
		uint64_t bytes = 0;

		for (size_t i = 0; i < n; i++)
			bytes += in[i].len;
		if (bytes > s->max_ck)
			s->max_ck = bytes;
	}
	if (n > x->cap) {
		struct ritem *p = realloc(x->it, n * sizeof(*p));

		if (!p) {
			bad(s, "out of memory");
			return;
		}
		x->it = p;
		x->cap = n;
	}
	memcpy(x->it, in, n * sizeof(*in));
	qsort(x->it, n, sizeof(*x->it), cmp_ritem);
	for (size_t i = 0; i < n; i++) {
		const struct ritem *it = &x->it[i];
		uint64_t key = it->key;

		if (i && key == x->it[i - 1].key) {
			bad(s, "checkpoint %" PRIu64 ": key %#" PRIx64 " twice", seq, key);
			continue;
		}
		if (!pl_read(rd, key, it->data, it->len, &h)) {
			bad(s, "checkpoint %" PRIu64 ": item %#" PRIx64 " (%u bytes) is not one the "
			    "workload wrote (payload hash, round or length)", seq, key, it->len);
			continue;
		}
		switch (key >> 60) {
		case 1: {
			unsigned c = (unsigned)(key >> 48) & 0xfff;
			uint32_t tn = (uint32_t)(key >> 16);
			unsigned idx = (unsigned)(key & 0xffff);
			size_t j = i, end;

			if (h.client != c || h.n != tn || h.idx != idx || idx != 0 || !h.m) {
				bad(s, "checkpoint %" PRIu64 ": tx %u/%u: item %u without item 0",
				    seq, c, tn, idx);
				continue;
			}
			/* Items 0..m-1 of this transaction, consecutive in key order. */
			for (end = i; end < n && (x->it[end].key >> 16) == (key >> 16); end++)
				;
			if (end - i != h.m) {
				bad(s, "checkpoint %" PRIu64 ": tx %u/%u has %zu of its %u items (G2)",
				    seq, c, tn, end - i, h.m);
			}
			for (j = i; j < end; j++) {
				if ((x->it[j].key & 0xffff) != j - i) {
					bad(s, "checkpoint %" PRIu64 ": tx %u/%u: item %zu missing",
					    seq, c, tn, j - i);
					break;
				}
			}
			/* The other items' payloads were checked by pl_read when met. */
			for (j = i + 1; j < end; j++) {
				struct pl_hdr h2;

				if (!pl_read(rd, x->it[j].key, x->it[j].data, x->it[j].len, &h2) ||
				    h2.client != c || h2.n != tn || h2.m != h.m)
					bad(s, "checkpoint %" PRIu64 ": tx %u/%u: item %zu is not "
					    "the one written", seq, c, tn, j - i);
			}
			i = end - 1;
			if (c == CR_MAX_CLIENTS) {
				if (!x->cont || tn > x->cont->n || x->cont->seq[tn] != seq)
					bad(s, "checkpoint %" PRIu64 ": continuation tx %u not written "
					    "into it", seq, tn);
			} else if (c >= rd->wl.clients) {
				bad(s, "checkpoint %" PRIu64 ": tx of unknown client %u", seq, c);
				continue;
			} else if (x->cont && seq > x->cont_base) {
				bad(s, "checkpoint %" PRIu64 ": tx %u/%u from before the crash in a "
				    "checkpoint written after recovery (resurrected; G6)", seq, c, tn);
			} else {
				uint64_t want = rec_seq(rd, c, tn);
				uint32_t sub = atomic_load(&rd->submitted[c]);

				if (tn > sub)
					bad(s, "checkpoint %" PRIu64 ": tx %u/%u was never submitted "
					    "(client at %u; G4)", seq, c, tn, sub);
				else if (want && want != seq)
					bad(s, "checkpoint %" PRIu64 ": tx %u/%u was committed into "
					    "checkpoint %" PRIu64 " (stale lap? G4)", seq, c, tn, want);
				else if (h.round >> 24 != atomic_load(&rd->sess[c][tn]))
					bad(s, "checkpoint %" PRIu64 ": tx %u/%u is session %u's copy, "
					    "lost in a crash and written again by session %u (resurrected; "
					    "G6)", seq, c, tn, h.round >> 24,
					    (unsigned)atomic_load(&rd->sess[c][tn]));
			}
			/* Per-client continuity (G3). */
			if (!s->last_n[c]) {
				if (c < rd->wl.clients && tn > 1) {
					uint64_t prev = rec_seq(rd, c, tn - 1);

					if (!prev || prev >= s->lo)
						bad(s, "tx %u/%u recovered in %" PRIu64 " without tx "
						    "%u/%u (checkpoint %" PRIu64 "; G3)", c, tn, seq,
						    c, tn - 1, prev);
				} else if (c == CR_MAX_CLIENTS && tn != 1) {
					bad(s, "continuation tx %u without tx 1", tn);
				}
			} else if (tn != s->last_n[c] + 1) {
				bad(s, "client %u: tx %u recovered after tx %u (hole; G3)", c, tn,
				    s->last_n[c]);
			}
			s->last_n[c] = tn;
			cmax[c] = tn;
			if (ntx == x->txcap) {
				size_t cap = x->txcap ? 2 * x->txcap : 256;
				struct rtx *p = realloc(x->txv, cap * sizeof(*p));

				if (!p) {
					bad(s, "out of memory");
					return;
				}
				x->txv = p;
				x->txcap = cap;
			}
			x->txv[ntx++] = (struct rtx){ c, tn, h.shared };
			tx_shared_any |= h.shared;
			break;
		}
		case 2: {
			unsigned c = (unsigned)(key & 0xffff);

			if (c >= CR_SLOTS || h.client != c || h.idx != IDX_RELOG) {
				bad(s, "checkpoint %" PRIu64 ": bad relog item %#" PRIx64, seq, key);
				continue;
			}
			relog_seen[c] = true;
			/* compared with cmax below, once every transaction is counted */
			x->it[i].len = h.n; /* stash the value */
			break;
		}
		case 3: {
			unsigned j = (unsigned)(key & 0xffff);

			if (j >= 16 || h.idx != IDX_SHARED) {
				bad(s, "checkpoint %" PRIu64 ": bad shared item %#" PRIx64, seq, key);
				continue;
			}
			break;
		}
		default:
			bad(s, "checkpoint %" PRIu64 ": unknown key %#" PRIx64, seq, key);
		}
	}
	/* Relogged keys carry the newest value: each client's last transaction here. */
	for (size_t i = 0; i < n; i++) {
		const struct ritem *it = &x->it[i];

		if ((it->key >> 60) == 2 && (it->key & 0xffff) < CR_SLOTS) {
			unsigned c = (unsigned)(it->key & 0xffff);

			if (it->len != cmax[c])
				bad(s, "checkpoint %" PRIu64 ": client %u's relogged key holds tx %u, "
				    "its last tx there is %u (relog)", seq, c, it->len, cmax[c]);
		}
	}
	for (unsigned c = 0; c < CR_SLOTS; c++)
		if (cmax[c] && !relog_seen[c])
			bad(s, "checkpoint %" PRIu64 ": client %u's relogged key is missing", seq, c);
	/* Shared keys: present iff a transaction here logged them, holding one of those. */
	for (size_t i = 0; i < n; i++) {
		const struct ritem *it = &x->it[i];
		unsigned j;
		bool found = false;

		if ((it->key >> 60) != 3)
			continue;
		j = (unsigned)(it->key & 0xffff);
		if (j >= 16)
			continue;
		memcpy(&h, it->data, sizeof(h));
		for (size_t t = 0; t < ntx && !found; t++)
			found = x->txv[t].c == h.client && x->txv[t].n == h.n &&
				(x->txv[t].shared & (1u << j));
		if (!found)
			bad(s, "checkpoint %" PRIu64 ": shared key %u holds tx %u/%u, which did not "
			    "log it here", seq, j, h.client, h.n);
		tx_shared_any &= (uint16_t)~(1u << j);
	}
	if (tx_shared_any)
		bad(s, "checkpoint %" PRIu64 ": shared keys %#x logged but missing", seq,
		    tx_shared_any);
}

static int jrnl_cb(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		   size_t n)
{
	struct rctx *x = priv;
	struct ritem *tmp = malloc((n ? n : 1) * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct ritem){ v[i].key, v[i].data, v[i].len };
	check_ckpt(x, ck->seq, ck->nitems, tmp, n);
	free(tmp);
	return 0;
}

static int delog_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		    size_t n)
{
	struct rctx *x = arg;
	struct ritem *tmp = malloc((n ? n : 1) * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct ritem){ it[i].key, it[i].data, it[i].len };
	check_ckpt(x, ck->seq, ck->nitems, tmp, n);
	free(tmp);
	return 0;
}

/* After the last checkpoint: no transaction committed into a recovered checkpoint may be
 * missing from it (the client's next one after its last recovered, or, for a client with
 * none recovered, the first one committed at or after the first recovered checkpoint). */
static void summary_finish(struct rctx *x)
{
	struct summary *s = x->s;
	struct round *rd = x->rd;

	if (s->err) {
		s->ok = false;
		return;
	}
	uint64_t top = x->cont && x->cont_base < s->hi ? x->cont_base : s->hi;

	if (!s->nck)
		return;
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		uint32_t sub = atomic_load(&rd->submitted[c]), nn;
		uint64_t q;

		if (s->last_n[c]) {
			nn = s->last_n[c] + 1;
		} else {
			/* Smallest n whose checkpoint is >= lo (seqs grow with n). */
			uint32_t lo = 1, hi = sub + 1;

			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				uint64_t v = rec_seq(rd, c, mid);

				if (v && v < s->lo)
					lo = mid + 1;
				else
					hi = mid;
			}
			nn = lo;
		}
		q = rec_seq(rd, c, nn);
		if (nn <= sub && q && q >= s->lo && q <= top)
			bad(s, "tx %u/%u was committed into checkpoint %" PRIu64 ", recovered "
			    "without it (G2)", c, nn, q);
	}
}

/* ---- crash points, states, cache ---- */

struct cpoint {
	uint64_t id;              /* unique across rounds (workers key their base on it) */
	uint64_t seq;             /* crash point number in the round */
	uint64_t ev;              /* trace events before it */
	size_t k;
	uint64_t *u;              /* unstable sectors, ascending */
	unsigned char *newd;      /* k sectors: newest contents */
	unsigned char *garb;      /* k sectors: garbage (garble profile) */
	uint64_t *h_old, *h_new, *h_garb;
	/* versions profile: sector i's intermediate versions 1..ninter[i] (iol_sim numbering)
	 * are vdata/h_ver[voff[i] .. voff[i] + ninter[i]); choice 3 + j - 1 picks version j */
	uint32_t *ninter;
	size_t *voff, nvtot;
	unsigned char *vdata;
	uint64_t *h_ver;
	uint64_t h_base;          /* hash of the media image */
	const unsigned char *old; /* the media image */
	uint64_t durable, released;
	uint64_t must_lo;         /* item tracking: oldest checkpoint holding the newest
				   * durable copy of a key not written back (0: none) */
	uint32_t acked[CR_MAX_CLIENTS];
};

struct entry {
	uint64_t hash;
	bool done;
	struct summary s;
};

struct job {
	struct entry *e;
	const uint8_t *choice;
};

struct viol {
	uint32_t round;
	uint64_t round_seed, cp, ev;
	char *state;
	char what[240];
	char image[300];
};

struct crash;

struct worker {
	struct crash *cr;
	pthread_t th;
	uint64_t gen;
	struct iol_dev *dev;
	unsigned char *shadow;    /* what dev holds */
	uint64_t base_cp;         /* cp id the dirty list refers to */
	uint32_t base_round;
	uint64_t base_epoch;      /* media epoch (round or session) of base_cp */
	uint32_t sector;          /* of dev */
	uint64_t *dirty;          /* sectors where shadow != that cp's media */
	size_t ndirty, dcap;
	uint64_t *cand;
	size_t ccap;
	struct jrnl_geom g;
	struct rctx rc;
	uint8_t *tmpchoice;
};

struct crash {
	/* options */
	const char *workload;
	enum delog_flush_policy policy;
	uint64_t target, seed;
	enum iol_sim_crash_profile profile;
	uint32_t sector;          /* this round's (the option's, unless random draws it) */
	uint32_t sector_opt;      /* --sector; 0: 4096, or drawn per round by random */
	uint64_t dev_max;         /* image buffers: the largest device of any round */
	uint64_t epoch;           /* media replaced wholesale (new round or session) */
	bool exhaustive, json, verbose, progress;
	unsigned threads, jobs, full_every;
	const char *save_dir;
	bool one_round, verify;
	uint64_t round_no;
	/* counters */
	uint64_t states, distinct, recoveries, cps, exh_cps, max_k, rounds;
	_Atomic uint64_t full_opens, continuations, full_seq;
	uint64_t protocol_events, nviol, nprot;
	/* the full workload */
	uint64_t f_rounds, f_edge_cps, f_bursts, f_forces, f_eagain_begin, f_eagain_log;
	uint64_t f_nowait_ok, f_waits, f_push_calls, f_min_free, f_laps, f_hi_cps, f_used;
	uint64_t last_cp_t, f_last_eagain;
	/* coverage, every workload (print_text's "coverage" lines) */
	uint64_t cv_log_min, cv_log_max, cv_ring_min, cv_ring_max, cv_min_free, cv_laps;
	uint64_t cv_max_ck, cv_max_ck_win, cv_over_win, cv_over_2m, cv_track_rounds;
	uint64_t cv_item_writes, cv_eagain, cv_nowait_ok, cv_chains, cv_sess_min, cv_sess_max;
	uint64_t cv_chain_cut, cv_sess_total, cv_vcps, cv_vstates, cv_max_ver, cv_rel_edge;
	unsigned cv_sectors;      /* bit 0: 512, bit 1: 4096 */
	struct viol viols[CR_MAX_VIOL_KEPT];
	size_t nviols;
	struct { char what[120]; uint64_t n; } kinds[32]; /* violations by message, numbers
							    * folded to '#' */
	size_t nkinds;
	pthread_mutex_t viol_mu;
	uint64_t t0;
	/* this round */
	struct round *rd;
	uint64_t budget;          /* states per crash point */
	struct cpoint cp;
	uint64_t cp_ids;
	unsigned char *old;       /* media as of the last refresh */
	uint64_t *h_sec;          /* per-sector hashes of old */
	uint64_t h_total;
	unsigned char *newimg;
	uint64_t *ubuf;
	size_t ucap;
	uint8_t *ones;
	size_t ones_cap;
	/* incremental snapshots */
	uint64_t *touch;          /* sectors written since the last media refresh */
	size_t ntouch, touchcap;
	bool new_dirty;           /* newest contents may have changed since the last choose */
	struct mchg { uint64_t cp, sector; } *chg; /* media changes this round, by crash point */
	size_t nchg, chgcap;
	/* entries (per round) */
	struct entry **tab;
	size_t tab_cap, tab_n;
	/* jobs */
	struct job *jobv;
	size_t njobs, jobcap;
	_Atomic size_t next_job;
	struct entry **stv;       /* the entry of each state of the current point */
	uint8_t *choices;         /* states x k */
	size_t stcap, chcap, nst;
	/* workers */
	struct worker *w;
	unsigned nworkers, wdone;
	uint64_t gen;
	bool quit;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
};

static void viol_add(struct crash *cr, const struct cpoint *cp, const uint8_t *choice, size_t k,
		     const char *what, const unsigned char *image)
{
	struct viol *v;

	pthread_mutex_lock(&cr->viol_mu);
	cr->nviol++;
	{
		char norm[120];
		size_t n = 0, i;

		for (const char *q = what; *q && n < sizeof(norm) - 1; q++) {
			if (*q >= '0' && *q <= '9') {
				if (!n || norm[n - 1] != '#')
					norm[n++] = '#';
			} else {
				norm[n++] = *q;
			}
		}
		norm[n] = 0;
		for (i = 0; i < cr->nkinds && strcmp(cr->kinds[i].what, norm); i++)
			;
		if (i == cr->nkinds && i < sizeof(cr->kinds) / sizeof(cr->kinds[0]))
			snprintf(cr->kinds[cr->nkinds++].what, sizeof(cr->kinds[0].what), "%s", norm);
		if (i < cr->nkinds)
			cr->kinds[i].n++;
	}
	if (cr->nviols == CR_MAX_VIOL_KEPT) {
		pthread_mutex_unlock(&cr->viol_mu);
		return;
	}
	v = &cr->viols[cr->nviols++];
	memset(v, 0, sizeof(*v));
	v->round = cr->rd ? cr->rd->id - 1 : 0;
	v->round_seed = cr->rd ? cr->rd->seed : 0;
	v->cp = cp ? cp->seq : 0;
	v->ev = cp ? cp->ev : 0;
	snprintf(v->what, sizeof(v->what), "%s", what);
	if (choice && k) {
		v->state = malloc(k + 1);
		if (v->state) {
			for (size_t i = 0; i < k; i++)
				v->state[i] = choice[i] < 10 ? (char)('0' + choice[i]) : 'v';
			v->state[k] = 0;
		}
	}
	if (image && cr->save_dir) {
		FILE *f;

		snprintf(v->image, sizeof(v->image), "%s/crash-r%u-cp%" PRIu64 "-%zu.img",
			 cr->save_dir, v->round, v->cp, cr->nviols);
		f = fopen(v->image, "wb");
		size_t bytes = cr->rd ? cr->rd->dev_bytes : cr->dev_max;

		if (!f || fwrite(image, 1, bytes, f) != bytes)
			snprintf(v->image, sizeof(v->image), "(could not save)");
		if (f)
			fclose(f);
	}
	pthread_mutex_unlock(&cr->viol_mu);
}

static struct entry *cache_get(struct crash *cr, uint64_t hash, bool *created)
{
	size_t mask, i;

	if ((cr->tab_n + 1) * 2 > cr->tab_cap) {
		size_t cap = cr->tab_cap ? cr->tab_cap * 2 : 4096;
		struct entry **t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t j = 0; j < cr->tab_cap; j++) {
			struct entry *e = cr->tab[j];

			if (!e)
				continue;
			for (i = e->hash & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = e;
		}
		free(cr->tab);
		cr->tab = t;
		cr->tab_cap = cap;
	}
	mask = cr->tab_cap - 1;
	for (i = hash & mask; cr->tab[i]; i = (i + 1) & mask) {
		if (cr->tab[i]->hash == hash) {
			*created = false;
			return cr->tab[i];
		}
	}
	cr->tab[i] = calloc(1, sizeof(struct entry));
	if (!cr->tab[i])
		return NULL;
	cr->tab[i]->hash = hash;
	cr->tab_n++;
	*created = true;
	return cr->tab[i];
}

static void cache_clear(struct crash *cr)
{
	for (size_t i = 0; i < cr->tab_cap; i++)
		free(cr->tab[i]);
	if (cr->tab)    /* no table yet before the first round */
		memset(cr->tab, 0, cr->tab_cap * sizeof(*cr->tab));
	cr->tab_n = 0;
}

/* ---- workers: recover one image each ---- */

struct latch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned left;
	int err;
};

static void latch_end(void *priv, int status)
{
	struct latch *l = priv;

	pthread_mutex_lock(&l->mu);
	if (status && !l->err)
		l->err = status;
	if (--l->left == 0)
		pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

/* Write the sectors in @v (ascending) from @buf (a full device image) with FUA. */
static int dev_write_sectors(struct iol_dev *dev, unsigned char *buf, const uint64_t *v, size_t n,
			     uint32_t sector)
{
	struct latch l = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1, 0 };
	int err = 0;

	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && v[j] == v[j - 1] + 1 && j - i < 64)
			j++;
		pthread_mutex_lock(&l.mu);
		l.left++;
		pthread_mutex_unlock(&l.mu);
		err = iol_rw_submit(dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), v[i] * sector,
				   buf + v[i] * sector, (j - i) * sector, latch_end, &l);
		if (err) {
			latch_end(&l, err);
			break;
		}
		i = j;
	}
	latch_end(&l, 0);
	pthread_mutex_lock(&l.mu);
	while (l.left)
		pthread_cond_wait(&l.cv, &l.mu);
	pthread_mutex_unlock(&l.mu);
	pthread_mutex_destroy(&l.mu);
	pthread_cond_destroy(&l.cv);
	return err ? err : l.err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static size_t find_u64(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x ? lo : SIZE_MAX;
}

static const unsigned char *state_sector(const struct cpoint *cp, const uint8_t *choice,
					 uint64_t sec, uint32_t sector)
{
	size_t i = find_u64(cp->u, cp->k, sec);

	if (i == SIZE_MAX || choice[i] == 0)
		return cp->old + sec * sector;
	if (choice[i] > 2) /* versions profile: intermediate version choice - 2 */
		return cp->vdata + (cp->voff[i] + choice[i] - 3) * sector;
	return (choice[i] == 1 ? cp->newd : cp->garb) + i * sector;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *q;
	size_t c;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static struct iol_dev *sim_dev(uint64_t bytes, uint32_t sector, uint64_t seed, bool hold,
			      const void *image)
{
	struct iol_sim_opts so = { .size = sizeof(so), .dev_bytes = bytes, .sector = sector,
				  .seed = seed, .hold = hold, .image = image };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct iol_dev *dev = NULL;

	return iol_dev_open(NULL, &o, &dev) ? NULL : dev;
}

/* Bring the worker's disk to the state's image (only differing sectors are written). */
static int worker_sync(struct worker *w, const struct cpoint *cp, const uint8_t *choice)
{
	struct crash *cr = w->cr;
	uint32_t sec = cr->sector;
	uint64_t nsec = cr->dev_max / sec;
	size_t nc = 0, nw = 0;
	uint64_t *wr;
	int err;

	if (w->base_cp && w->base_cp != cp->id) {
		/* Same round: only sectors we patched or the media changed since can differ. */
		size_t lo = 0, hi = cr->nchg, nd = 0;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (cr->chg[mid].cp <= w->base_cp)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (grow((void **)&w->cand, &w->ccap, w->ndirty + cr->nchg - lo + 1, 8))
			return -ENOMEM;
		memcpy(w->cand, w->dirty, w->ndirty * 8);
		nd = w->ndirty;
		for (size_t i = lo; i < cr->nchg && cr->chg[i].cp <= cp->id; i++)
			w->cand[nd++] = cr->chg[i].sector;
		qsort(w->cand, nd, 8, cmp_u64);
		if (grow((void **)&w->dirty, &w->dcap, nd + 1, 8))
			return -ENOMEM;
		w->ndirty = 0;
		for (size_t i = 0; i < nd; i++) {
			uint64_t s = w->cand[i];

			if (i && s == w->cand[i - 1])
				continue;
			if (memcmp(w->shadow + s * sec, cp->old + s * sec, sec))
				w->dirty[w->ndirty++] = s;
		}
		w->base_cp = cp->id;
	} else if (w->base_cp != cp->id) {
		/* New media: which sectors of ours differ from it. */
		w->ndirty = 0;
		for (uint64_t s = 0; s < nsec; s++) {
			if (memcmp(w->shadow + s * sec, cp->old + s * sec, sec)) {
				if (grow((void **)&w->dirty, &w->dcap, w->ndirty + 1, 8))
					return -ENOMEM;
				w->dirty[w->ndirty++] = s;
			}
		}
		w->base_cp = cp->id;
	}
	/* Candidates: dirty sectors and the unstable ones, merged. */
	if (grow((void **)&w->cand, &w->ccap, w->ndirty + cp->k + 1, 8))
		return -ENOMEM;
	for (size_t i = 0, j = 0; i < w->ndirty || j < cp->k;) {
		uint64_t a = i < w->ndirty ? w->dirty[i] : UINT64_MAX;
		uint64_t b = j < cp->k ? cp->u[j] : UINT64_MAX;

		w->cand[nc++] = a < b ? a : b;
		if (a <= b)
			i++;
		if (b <= a)
			j++;
	}
	/* Write what differs; the new dirty list is what differs from the media. */
	wr = malloc((nc ? nc : 1) * sizeof(*wr));
	if (!wr || grow((void **)&w->dirty, &w->dcap, nc + 1, 8)) {
		free(wr);
		return -ENOMEM;
	}
	w->ndirty = 0;
	for (size_t i = 0; i < nc; i++) {
		uint64_t s = w->cand[i];
		const unsigned char *t = state_sector(cp, choice, s, sec);

		if (memcmp(w->shadow + s * sec, t, sec)) {
			memcpy(w->shadow + s * sec, t, sec);
			wr[nw++] = s;
		}
		if (t != cp->old + s * sec && memcmp(t, cp->old + s * sec, sec))
			w->dirty[w->ndirty++] = s;
	}
	err = nw ? dev_write_sectors(w->dev, w->shadow, wr, nw, sec) : 0;
	free(wr);
	return err;
}

static void recover_ro(struct worker *w, struct iol_dev *dev, const struct jrnl_geom *g,
		       const struct cont *cont, uint64_t cont_base, struct summary *s)
{
	struct jrnl_recover_opts ro = { .replay = jrnl_cb, .read_only = true };
	struct jrnl_report rep;

	memset(s, 0, sizeof(*s));
	s->ok = true;
	w->rc.rd = w->cr->rd;
	w->rc.s = s;
	w->rc.cont = cont;
	w->rc.cont_base = cont_base;
	ro.priv = &w->rc;
	s->err = jrnl_recover(dev, g, &ro, &rep);
	if (s->err)
		bad(s, "recovery failed: %s%s%s", delog_err_name(s->err),
		    rep.corruption ? ": " : "", rep.corruption ? rep.corrupt_what : "");
	summary_finish(&w->rc);
}

static bool same_set(const struct summary *a, const struct summary *b, unsigned clients)
{
	if (a->nck != b->nck || (a->nck && (a->lo != b->lo || a->hi != b->hi)))
		return false;
	for (unsigned c = 0; c < clients; c++)
		if (a->last_n[c] != b->last_n[c])
			return false;
	return true;
}

/* The application's path on this image: delog_open_dev, the same set; then continue
 * with CR_CONT_TXS forced transactions, crash again, recover: old set plus the new. */
static void full_check(struct worker *w, const struct cpoint *cp, const uint8_t *choice,
		       const struct summary *ref)
{
	struct crash *cr = w->cr;
	struct round *rd = cr->rd;
	uint64_t seed = seed_for(rd->seed, 0xf011, cp->id);
	struct delog_options o = { .size = sizeof(o), .flush = rd->policy,
				   .logbufs = rd->wl.logbufs, .logbsize = rd->wl.logbsize,
				   .flags = rd->wl.track ? DELOG_OPEN_TRACK_ITEMS : 0,
				   .cil_push_bytes = rd->wl.cil_push };
	struct summary s2, s3;
	struct rctx rc2 = { .rd = rd, .s = &s2 };
	struct cont ct = { 0 };
	struct jrnl_geom g;
	struct iol_dev *d2, *d3 = NULL;
	unsigned char *img = NULL;
	delog *log = NULL;
	char msg[240];
	bool cont_released = false;
	int err;

	atomic_fetch_add(&cr->full_opens, 1);
	d2 = sim_dev(rd->dev_bytes, cr->sector, seed, false, w->shadow);
	if (!d2) {
		viol_add(cr, cp, choice, cp->k, "full check: cannot open a sim disk", NULL);
		return;
	}
	memset(&s2, 0, sizeof(s2));
	s2.ok = true;
	o.recover = delog_cb;
	o.recover_arg = &rc2;
	err = delog_open_dev(d2, &o, &log);
	if (err) {
		if (!ref->err) {
			snprintf(msg, sizeof(msg), "delog_open_dev failed (%s) on an image that "
				 "recovers read-only", delog_err_name(err));
			viol_add(cr, cp, choice, cp->k, msg, w->shadow);
		}
		goto out;
	}
	summary_finish(&rc2);
	if (!s2.ok || !same_set(&s2, ref, rd->wl.clients)) {
		snprintf(msg, sizeof(msg), "delog_open_dev recovered %" PRIu64 "..%" PRIu64
			 " (%.80s), read-only recovery %" PRIu64 "..%" PRIu64 " (G5)", s2.lo, s2.hi,
			 s2.ok ? "ok" : s2.what, ref->lo, ref->hi);
		viol_add(cr, cp, choice, cp->k, msg, w->shadow);
		goto out;
	}
	/* Continue: G6. */
	for (uint32_t n = 1; n <= CR_CONT_TXS; n++) {
		unsigned char a[64], b[sizeof(struct pl_hdr)];
		delog_tx *tx;
		uint64_t seq;

		pl_make(rd, KEY_UNIQUE(CR_MAX_CLIENTS, n, 0), CR_MAX_CLIENTS, n, 0, 1, 0,
			sizeof(a), a);
		pl_make(rd, KEY_RELOG(CR_MAX_CLIENTS), CR_MAX_CLIENTS, n, IDX_RELOG, 0, 0,
			sizeof(b), b);
		{
			/* The image may be of a full log (the log-full workload, or a random
			 * round releasing at the edge or not at all): a blocking begin could
			 * wait forever here (nobody else runs), so NOWAIT, and on -EAGAIN what
			 * an application can do: force, release everything recovered, retry. */
			for (int tries = 0;; tries++) {
				err = delog_tx_begin(log, 2 * (sizeof(a) + DELOG_ITEM_OVERHEAD),
						     DELOG_TX_NOWAIT, &tx);
				if (err != -EAGAIN || tries == 20)
					break;
				(void)delog_force(log, 0);
				if (ref->nck) { /* the recovered checkpoints only */
					(void)delog_release(log, ref->hi);
					cont_released = true;
				}
				nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
			}
			if (err == -EAGAIN) {
				struct delog_stats st = { .size = sizeof(st) };

				(void)delog_stats(log, &st);
				snprintf(msg, sizeof(msg), "after recovery of a full log (%" PRIu64 " of "
					 "%" PRIu64 " bytes used, checkpoints %" PRIu64 "..%" PRIu64 "), "
					 "delog_tx_begin gets -EAGAIN even after delog_release(%" PRIu64
					 "): nothing can free the space (G9)", st.log_used, st.log_size,
					 ref->lo, ref->hi, ref->hi);
				viol_add(cr, cp, choice, cp->k, msg, w->shadow);
				goto out;
			}
		}
		if (!err) {
			err = delog_tx_log(tx, KEY_UNIQUE(CR_MAX_CLIENTS, n, 0), a, sizeof(a));
			if (!err)
				err = delog_tx_log(tx, KEY_RELOG(CR_MAX_CLIENTS), b, sizeof(b));
			if (err)
				delog_tx_abort(tx);
			else
				err = delog_tx_commit(tx, &seq);
		}
		if (!err) {
			ct.seq[n] = seq;
			ct.n = n;
			err = delog_force(log, seq);
		}
		if (err) {
			snprintf(msg, sizeof(msg), "continuation tx %u after recovery: %s", n,
				 delog_err_name(err));
			viol_add(cr, cp, choice, cp->k, msg, w->shadow);
			goto out;
		}
	}
	img = malloc(rd->dev_bytes);
	if (!img || iol_sim_crash(d2, seed, cr->profile, img, NULL))
		goto out;
	delog_close(log);
	log = NULL;
	d3 = sim_dev(rd->dev_bytes, cr->sector, seed, false, img);
	if (!d3 || jrnl_sb_read(d3, &g))
		goto out;
	recover_ro(w, d3, &g, &ct, ref->nck ? ref->hi : 0, &s3);
	atomic_fetch_add(&cr->continuations, 1);
	{
		uint64_t base = ref->nck ? ref->hi : 0;
		bool good = s3.ok && s3.nck == ref->nck + CR_CONT_TXS && s3.hi == base + CR_CONT_TXS &&
			    (!ref->nck || s3.lo == ref->lo) && s3.last_n[CR_MAX_CLIENTS] == CR_CONT_TXS;

		if (cont_released) /* the old set was released: only the new must be there */
			good = s3.ok && s3.hi == base + CR_CONT_TXS && s3.nck >= CR_CONT_TXS &&
			       s3.last_n[CR_MAX_CLIENTS] == CR_CONT_TXS;
		for (unsigned c = 0; good && !cont_released && c < rd->wl.clients; c++)
			good = s3.last_n[c] == ref->last_n[c];
		if (!good) {
			snprintf(msg, sizeof(msg), "after recovery (%" PRIu64 "..%" PRIu64 "), %u "
				 "forced transactions and a crash, recovery found %" PRIu64 "..%"
				 PRIu64 " (%.80s) (G6)", ref->lo, ref->hi, CR_CONT_TXS, s3.lo, s3.hi,
				 s3.ok ? "not the old set plus the new" : s3.what);
			viol_add(cr, cp, choice, cp->k, msg, img);
		}
	}
out:
	if (log)
		delog_close(log);
	iol_dev_close(d2);
	if (d3)
		iol_dev_close(d3);
	free(img);
	free(rc2.it);
	free(rc2.txv);
}

static void run_job(struct worker *w, const struct job *j)
{
	struct crash *cr = w->cr;
	const struct cpoint *cp = &cr->cp;
	int err;

	if (w->sector != cr->sector) {
		/* The round's sector size differs from the disk's: a new disk (all zeroes). */
		iol_dev_close(w->dev);
		w->dev = sim_dev(cr->dev_max, cr->sector, seed_for(cr->seed, 0x3003, w->sector),
				 false, NULL);
		if (!w->dev) {
			memset(&j->e->s, 0, sizeof(j->e->s));
			j->e->s.err = -ENOMEM;
			snprintf(j->e->s.what, sizeof(j->e->s.what), "checker: cannot open a disk");
			w->sector = 0;
			return;
		}
		memset(w->shadow, 0, cr->dev_max);
		w->sector = cr->sector;
		w->g.sector = 0;
	}
	if (w->base_epoch != cr->epoch || !w->g.sector) {
		w->base_epoch = cr->epoch;
		w->base_cp = 0;
		w->g.sector = 0;
	}
	err = worker_sync(w, cp, j->choice);
	if (!err && !w->g.sector)
		err = jrnl_sb_read(w->dev, &w->g);
	if (err) {
		memset(&j->e->s, 0, sizeof(j->e->s));
		j->e->s.err = err;
		snprintf(j->e->s.what, sizeof(j->e->s.what), "checker: cannot set up the image: %s",
			 delog_err_name(err));
		w->g.sector = 0;
		return;
	}
	if (cr->verify) {
		uint64_t h = 0;
		unsigned char *img = malloc(cr->rd->dev_bytes);

		/* The disk itself, read back through the iolayer, must hash as the state. */
		if (img && !iol_rw_wait(w->dev, IOL_OPF(IOL_OP_READ, 0), 0, w->shadow,
				       cr->rd->dev_bytes, NULL)) {
			for (uint64_t s = 0; s < cr->rd->dev_bytes / cr->sector; s++)
				h += sector_hash(w->shadow + s * cr->sector, cr->sector, s);
			if (h != j->e->hash)
				viol_add(cr, cp, j->choice, cp->k, "checker: the recovery disk does not "
					 "hold the state's image (hash mismatch)", NULL);
		}
		free(img);
	}
	recover_ro(w, w->dev, &w->g, NULL, 0, &j->e->s);
	if (cr->full_every && atomic_fetch_add(&cr->full_seq, 1) % cr->full_every == 0 &&
	    j->e->s.ok)
		full_check(w, cp, j->choice, &j->e->s);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct crash *cr = w->cr;

	pthread_mutex_lock(&cr->mu);
	for (;;) {
		while (cr->gen == w->gen && !cr->quit)
			pthread_cond_wait(&cr->work_cv, &cr->mu);
		if (cr->quit)
			break;
		w->gen = cr->gen;
		pthread_mutex_unlock(&cr->mu);
		for (;;) {
			size_t i = atomic_fetch_add(&cr->next_job, 1);

			if (i >= cr->njobs)
				break;
			run_job(w, &cr->jobv[i]);
		}
		pthread_mutex_lock(&cr->mu);
		if (++cr->wdone == cr->nworkers)
			pthread_cond_signal(&cr->done_cv);
	}
	pthread_mutex_unlock(&cr->mu);
	return NULL;
}

static void run_jobs(struct crash *cr)
{
	if (!cr->njobs)
		return;
	pthread_mutex_lock(&cr->mu);
	atomic_store(&cr->next_job, 0);
	cr->wdone = 0;
	cr->gen++;
	pthread_cond_broadcast(&cr->work_cv);
	while (cr->wdone < cr->nworkers)
		pthread_cond_wait(&cr->done_cv, &cr->mu);
	pthread_mutex_unlock(&cr->mu);
	for (size_t i = 0; i < cr->njobs; i++) {
		uint64_t b = cr->jobv[i].e->s.max_ck;
		uint64_t ring = (uint64_t)cr->rd->wl.logbufs * cr->rd->wl.logbsize;

		cr->jobv[i].e->done = true;
		/* Coverage: checkpoints as large as the recovery window, and beyond. */
		if (b > cr->cv_max_ck)
			cr->cv_max_ck = b;
		if (b * 1000 / ring > cr->cv_max_ck_win)
			cr->cv_max_ck_win = b * 1000 / ring;
		cr->cv_over_win += b > ring;
		cr->cv_over_2m += b > (uint64_t)JRNL_MAX_LOGBUFS * JRNL_MAX_LOGBSIZE;
	}
	cr->recoveries += cr->njobs;
	cr->njobs = 0;
}

/* ---- the controller: the device trace and the online protocol check ---- */

struct wr {
	uint64_t id, first, nr;
	uint32_t opf;
};

struct ctl {
	size_t cursor;            /* trace events processed */
	uint64_t *wcount;         /* writes to each log sector since the log opened */
	uint64_t *sec_wid;        /* latest write request covering each device sector */
	uint64_t *wid_done;       /* completion event of each request (0: in flight) */
	size_t wid_cap;
	struct wr *fl;            /* writes in flight */
	size_t nfl, flcap;
	bool media_dirty;
	struct iol_sim_event ev[512];
};

static void prot_viol(struct crash *cr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void prot_viol(struct crash *cr, const char *fmt, ...)
{
	char msg[240];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "protocol: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	cr->nprot++;
	viol_add(cr, NULL, NULL, 0, msg, NULL);
}

/* @wrap: the write starts the log area, so it may be the part of a record split at the
 * physical end, which carries FUA but not the first part's PREFLUSH. */
static bool flags_allowed(enum delog_flush_policy p, uint32_t f, bool wrap)
{
	f &= IOL_PREFLUSH | IOL_FUA;
	if (!f || f == (IOL_PREFLUSH | IOL_FUA)) /* PREFLUSH|FUA: commits, and every unmount */
		return true;
	if (wrap && f == IOL_FUA && p != DELOG_FLUSH_SINGLE)
		return true;
	switch (p) {
	case DELOG_FLUSH_SYNC:
		return f == IOL_PREFLUSH;
	case DELOG_FLUSH_ASYNC:
		return f == IOL_FUA;
	default:
		return false;
	}
}

/*
 * Events [t->cursor, L): the write map for the structured states, what changed the
 * media, and the protocol rules.  @tail (when known) was read after event L happened, so
 * it is at or past the tail at each of these events: a write over a sector whose last
 * record (lap = the count of writes to it) lies at or past it overwrites the live region.
 */
static void trace_step(struct crash *cr, struct ctl *t, size_t L, uint64_t tail, bool known)
{
	struct round *rd = cr->rd;
	uint32_t sec = cr->sector;
	uint64_t log0 = JRNL_LOG_START / sec, arm = atomic_load(&rd->arm_ev);
	bool armed = atomic_load(&rd->armed);

	while (t->cursor < L) {
		size_t want = L - t->cursor < 512 ? L - t->cursor : 512;
		size_t n = iol_sim_trace_copy(rd->dev, t->cursor, t->ev, want);

		if (!n)
			break;
		for (size_t j = 0; j < n; j++) {
			const struct iol_sim_event *e = &t->ev[j];
			bool live = armed && t->cursor + j >= arm;
			uint32_t op = e->opf & IOL_OP_MASK;

			if (e->req_id >= t->wid_cap) {
				size_t cap = t->wid_cap * 2;

				while (cap <= e->req_id)
					cap *= 2;
				uint64_t *p = realloc(t->wid_done, cap * sizeof(*p));

				if (!p)
					continue;
				memset(p + t->wid_cap, 0, (cap - t->wid_cap) * sizeof(*p));
				t->wid_done = p;
				t->wid_cap = cap;
			}
			if (e->type == IOL_SIM_EV_SUBMIT && op == IOL_OP_WRITE) {
				uint64_t first = e->off / sec, nr = e->len / sec;

				if (live) {
					cr->protocol_events++;
					if (!flags_allowed(rd->policy, e->opf,
							   e->off == JRNL_LOG_START))
						prot_viol(cr, "%s policy issued a write with%s%s at "
							  "sector %" PRIu64, delog_flush_policy_name(rd->policy),
							  e->opf & IOL_PREFLUSH ? " PREFLUSH" : "",
							  e->opf & IOL_FUA ? " FUA" : "", first);
					for (size_t i = 0; i < t->nfl; i++)
						if (first < t->fl[i].first + t->fl[i].nr &&
						    t->fl[i].first < first + nr)
							prot_viol(cr, "write of sectors %" PRIu64 "+%" PRIu64
								  " overlaps write %" PRIu64 " in flight",
								  first, nr, t->fl[i].id);
					for (uint64_t s = first; s < first + nr; s++) {
						uint64_t ls = s - log0, w;

						if (s < log0)
							continue;
						w = t->wcount[ls];
						if (known && w && ((w << 32) | ls) >= tail)
							prot_viol(cr, "write at log sector %" PRIu64 " overwrites "
								  "lap %" PRIu64 ", still live (tail %" PRIu64
								  "/%" PRIu64 "; G9)", ls, w, tail >> 32,
								  tail & 0xffffffffu);
						t->wcount[ls] = w + 1;
					}
				}
				for (uint64_t s = first; s < first + nr && s < rd->dev_bytes / sec; s++) {
					t->sec_wid[s] = e->req_id;
					if (!grow((void **)&cr->touch, &cr->touchcap, cr->ntouch + 1, 8))
						cr->touch[cr->ntouch++] = s;
				}
				cr->new_dirty = true;
				if (!grow((void **)&t->fl, &t->flcap, t->nfl + 1, sizeof(*t->fl)))
					t->fl[t->nfl++] = (struct wr){ e->req_id, first, nr, e->opf };
			} else if (e->type == IOL_SIM_EV_FLUSH_DONE) {
				t->media_dirty = true;
			} else if (e->type == IOL_SIM_EV_COMPLETE) {
				t->wid_done[e->req_id] = e->seq;
				if (op == IOL_OP_WRITE) {
					if (e->opf & IOL_FUA)
						t->media_dirty = true;
					if (e->opf & IOL_PREFLUSH)
						cr->new_dirty = true; /* its data shows only now */
					for (size_t i = 0; i < t->nfl; i++) {
						if (t->fl[i].id == e->req_id) {
							t->fl[i] = t->fl[--t->nfl];
							break;
						}
					}
				}
			}
		}
		t->cursor += n;
	}
}

/* ---- crash points ---- */

static void garbage_fill(unsigned char *p, uint32_t len, uint64_t seed, uint64_t sector)
{
	uint64_t st = seed_for(seed, 0x6a4b, sector);

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = rnd(&st);

		memcpy(p + i, &r, 8);
	}
}

/*
 * Bring cr->old up to the media.  Only a sector that was unstable at the last crash
 * point, or written since, can have changed (the media changes only at deliveries, and
 * only this thread delivers): read back just those.  Changes are logged by crash point,
 * so the workers can update their disks without comparing whole images.
 */
static int media_refresh(struct crash *cr, unsigned char *tmp, uint64_t next_cp)
{
	uint32_t sec = cr->sector;
	size_t n = 0;
	int err = 0;

	if (grow((void **)&cr->touch, &cr->touchcap, cr->ntouch + cr->cp.k + 1, 8))
		return -ENOMEM;
	for (size_t i = 0; i < cr->cp.k; i++)
		cr->touch[cr->ntouch++] = cr->cp.u[i];
	qsort(cr->touch, cr->ntouch, 8, cmp_u64);
	for (size_t i = 0; i < cr->ntouch; i++)
		if (!n || cr->touch[i] != cr->touch[n - 1])
			cr->touch[n++] = cr->touch[i];
	for (size_t i = 0; i < n && !err;) {
		size_t j = i + 1;

		while (j < n && cr->touch[j] == cr->touch[j - 1] + 1)
			j++;
		err = iol_sim_media(cr->rd->dev, cr->touch[i] * sec, tmp + cr->touch[i] * sec,
				   (j - i) * sec);
		for (size_t q = i; !err && q < j; q++) {
			uint64_t s = cr->touch[q];

			if (!memcmp(tmp + s * sec, cr->old + s * sec, sec))
				continue;
			memcpy(cr->old + s * sec, tmp + s * sec, sec);
			cr->h_total -= cr->h_sec[s];
			cr->h_sec[s] = sector_hash(cr->old + s * sec, sec, s);
			cr->h_total += cr->h_sec[s];
			if (grow((void **)&cr->chg, &cr->chgcap, cr->nchg + 1, sizeof(*cr->chg)))
				return -ENOMEM;
			cr->chg[cr->nchg++] = (struct mchg){ next_cp, s };
		}
		i = j;
	}
	cr->ntouch = 0;
	return err;
}

struct pointbuf {
	unsigned char *tmp;       /* media read-back */
};

static uint64_t read_durable(struct round *rd)
{
	uint64_t d;

	pthread_mutex_lock(&rd->log_mu);
	d = rd->log ? delog_durable_seq(rd->log) : rd->final_durable;
	pthread_mutex_unlock(&rd->log_mu);
	return d;
}

/* The largest n (>= 1) of client @c committed into a checkpoint <= @seq, or 0. */
static uint32_t last_n_upto(struct round *rd, unsigned c, uint64_t seq)
{
	uint32_t lo = 1, hi = atomic_load(&rd->submitted[c]) + 1;

	/* Committed sequences grow with n; the last submitted may not have one yet. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t v = rec_seq(rd, c, mid);

		if (v && v <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * Item tracking: the oldest checkpoint that holds the newest durable copy (checkpoint <=
 * @durable) of a key that was neither released (checkpoint <= @released) nor written back
 * (0: none).  Per key: the unique items of a transaction (written back or not); each
 * client's relogged key (never written back: its newest durable copy is in the
 * checkpoint of the client's last durable transaction); each shared key (looked for in
 * the last 256 durable transactions of each client, else not required: a weaker check,
 * never a false one).  @durable is read before the image, @released and the written
 * flags after it, as everywhere.
 */
static uint64_t track_must_lo(struct round *rd, uint64_t durable, uint64_t released)
{
	uint64_t lo = 0, shared_seq[16] = { 0 };

	for (unsigned c = 0; c < rd->wl.clients; c++) {
		uint32_t nd = last_n_upto(rd, c, durable), n = last_n_upto(rd, c, released) + 1;
		uint16_t want = rd->wl.shared_1in ? (uint16_t)((1u << rd->wl.nshared) - 1) : 0;
		uint64_t q;

		if (!nd)
			continue;
		q = rec_seq(rd, c, nd);
		if (q > released && (!lo || q < lo))
			lo = q;
		for (; n <= nd; n++) {
			if (!atomic_load(&rd->written[c][n])) {
				q = rec_seq(rd, c, n);
				if (q > released && (!lo || q < lo))
					lo = q;
				break;
			}
		}
		for (uint32_t m = nd; m && want && nd - m < 256; m--) {
			struct txspec ts;

			tx_spec(rd, c, m, &ts);
			for (unsigned j = 0; j < 16; j++) {
				if (!(ts.shared & want & (1u << j)))
					continue;
				want &= (uint16_t)~(1u << j);
				q = rec_seq(rd, c, m);
				if (q > shared_seq[j])
					shared_seq[j] = q;
			}
		}
	}
	for (unsigned j = 0; j < 16; j++)
		if (shared_seq[j] > released && (!lo || shared_seq[j] < lo))
			lo = shared_seq[j];
	return lo;
}

/* Versions profile: the intermediate versions of each unstable sector of the point
 * (iol_sim_version_read; at most 253 a sector, the choice byte's room). */
static int take_versions(struct crash *cr, struct cpoint *cp)
{
	uint32_t sec = cr->sector, *nv = malloc((cp->k + 1) * sizeof(*nv));
	uint64_t *u = malloc((cp->k + 1) * sizeof(*u));
	size_t k, tot = 0;
	int err = 0;

	free(cp->ninter);
	free(cp->voff);
	free(cp->vdata);
	free(cp->h_ver);
	cp->ninter = calloc(cp->k + 1, sizeof(*cp->ninter));
	cp->voff = calloc(cp->k + 1, sizeof(*cp->voff));
	cp->vdata = NULL;
	cp->h_ver = NULL;
	cp->nvtot = 0;
	if (!nv || !u || !cp->ninter || !cp->voff) {
		err = -ENOMEM;
		goto out;
	}
	/* Submissions since the snapshot only append versions (and sectors): what is read
	 * here was written either way. */
	k = iol_sim_unstable_versions(cr->rd->dev, u, nv, cp->k);
	for (size_t i = 0, j = 0; i < cp->k && j < (k < cp->k ? k : cp->k); j++) {
		while (i < cp->k && cp->u[i] < u[j])
			i++;
		if (i < cp->k && cp->u[i] == u[j] && nv[j] > 2)
			cp->ninter[i] = nv[j] - 2 < 253 ? nv[j] - 2 : 253;
	}
	for (size_t i = 0; i < cp->k; i++) {
		cp->voff[i] = tot;
		tot += cp->ninter[i];
	}
	if (tot) {
		cp->vdata = malloc(tot * (size_t)sec);
		cp->h_ver = malloc(tot * sizeof(*cp->h_ver));
		if (!cp->vdata || !cp->h_ver) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < cp->k; i++) {
		for (uint32_t v = 0; v < cp->ninter[i]; v++) {
			unsigned char *d = cp->vdata + (cp->voff[i] + v) * sec;

			if (iol_sim_version_read(cr->rd->dev, cp->u[i], v + 1, d))
				memcpy(d, cp->newd + i * sec, sec); /* gone meanwhile: new */
			cp->h_ver[cp->voff[i] + v] = sector_hash(d, sec, cp->u[i]);
		}
		if (cp->ninter[i] + 2 > cr->cv_max_ver)
			cr->cv_max_ver = cp->ninter[i] + 2;
	}
	cp->nvtot = tot;
	cr->cv_vcps += tot > 0;
out:
	free(nv);
	free(u);
	return err;
}

static int take_point(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t round_cp)
{
	struct round *rd = cr->rd;
	struct cpoint *cp = &cr->cp;
	uint32_t sec = cr->sector;
	size_t k = 0, L0 = 0;
	int err = 0;

	/* What was acknowledged, first: all of it was durable before the snapshot. */
	cp->durable = read_durable(rd);
	for (unsigned c = 0; c < rd->wl.clients; c++)
		cp->acked[c] = atomic_load(&rd->acked[c]);
	if (t->media_dirty) {
		err = media_refresh(cr, pb->tmp, cr->cp_ids + 1);
		if (err)
			return err;
		t->media_dirty = false;
	}
	for (int tries = 0;; tries++) {
		L0 = iol_sim_trace_len(rd->dev);
		k = iol_sim_unstable(rd->dev, cr->ubuf, cr->ucap);
		if (k > cr->ucap) {
			if (grow((void **)&cr->ubuf, &cr->ucap, k, 8))
				return -ENOMEM;
			continue;
		}
		if (grow((void **)&cr->ones, &cr->ones_cap, k + 1, 1))
			return -ENOMEM;
		memset(cr->ones, 1, k);
		/* No write submitted and no PREFLUSH write delivered since the last image:
		 * the newest contents are those already in newimg, if the set only shrank. */
		if (!cr->new_dirty && t->cursor == L0) {
			size_t i = 0;

			for (; i < k && find_u64(cp->u, cp->k, cr->ubuf[i]) != SIZE_MAX; i++)
				;
			if (i == k)
				break;
		}
		err = k ? iol_sim_crash_choose(rd->dev, cr->ones, k, 0, cr->newimg) : 0;
		if (!err)
			cr->new_dirty = false;
		if (err == -EINVAL && tries < 64)
			continue; /* a submission changed the unstable set: again */
		if (err)
			return err;
		if (iol_sim_trace_len(rd->dev) == L0 || tries >= 16)
			break;
	}
	cp->released = atomic_load(&rd->released);
	cp->must_lo = rd->wl.track ? track_must_lo(rd, cp->durable, cp->released) : 0;
	if (rd->wl.full) {
		/* At the full edge: a committer has waited for space since before the last
		 * crash point, or a NOWAIT transaction just failed with -EAGAIN. */
		uint64_t eg = atomic_load(&rd->eagain_begin) + atomic_load(&rd->eagain_log);
		bool edge = eg != cr->f_last_eagain;

		for (unsigned c = 0; c < rd->wl.clients && !edge; c++) {
			uint64_t b = atomic_load(&rd->blocked_since[c]);

			edge = b && b < cr->last_cp_t;
		}
		cr->f_last_eagain = eg;
		cr->f_edge_cps += edge;
		cr->f_hi_cps += cr->f_used * 4 >= 3 * rd->log_bytes;
		cr->last_cp_t = now_ns();
	}
	cp->id = ++cr->cp_ids;
	cp->seq = round_cp;
	cp->ev = L0;
	cp->k = k;
	cp->old = cr->old;
	cp->h_base = cr->h_total;
	free(cp->u);
	free(cp->newd);
	free(cp->garb);
	free(cp->h_old);
	free(cp->h_new);
	free(cp->h_garb);
	cp->u = malloc((k + 1) * 8);
	cp->newd = malloc((k + 1) * (size_t)sec);
	cp->garb = cr->profile == IOL_SIM_GARBLE ? malloc((k + 1) * (size_t)sec) : NULL;
	cp->h_old = malloc((k + 1) * 8);
	cp->h_new = malloc((k + 1) * 8);
	cp->h_garb = malloc((k + 1) * 8);
	if (!cp->u || !cp->newd || !cp->h_old || !cp->h_new || !cp->h_garb ||
	    (cr->profile == IOL_SIM_GARBLE && !cp->garb))
		return -ENOMEM;
	for (size_t i = 0; i < k; i++) {
		uint64_t s = cr->ubuf[i];

		cp->u[i] = s;
		memcpy(cp->newd + i * sec, cr->newimg + s * sec, sec);
		cp->h_old[i] = cr->h_sec[s];
		cp->h_new[i] = sector_hash(cp->newd + i * sec, sec, s);
		cp->h_garb[i] = 0;
		if (cp->garb) {
			garbage_fill(cp->garb + i * sec, sec, rd->seed, s);
			cp->h_garb[i] = sector_hash(cp->garb + i * sec, sec, s);
		}
	}
	cp->nvtot = 0;
	return cr->profile == IOL_SIM_VERSIONS ? take_versions(cr, cp) : 0;
}

static uint64_t state_hash(const struct cpoint *cp, const uint8_t *choice)
{
	uint64_t h = cp->h_base;

	for (size_t i = 0; i < cp->k; i++) {
		if (choice[i] == 1)
			h += cp->h_new[i] - cp->h_old[i];
		else if (choice[i] == 2)
			h += cp->h_garb[i] - cp->h_old[i];
		else if (choice[i] > 2)
			h += cp->h_ver[cp->voff[i] + choice[i] - 3] - cp->h_old[i];
	}
	return h;
}

static int add_state(struct crash *cr, const uint8_t *choice)
{
	struct cpoint *cp = &cr->cp;
	struct entry *e;
	uint8_t *dst;
	bool created;

	if (grow((void **)&cr->stv, &cr->stcap, cr->nst + 1, sizeof(*cr->stv)) ||
	    grow((void **)&cr->choices, &cr->chcap, (cr->nst + 1) * (cp->k + 1), 1))
		return -ENOMEM;
	dst = cr->choices + cr->nst * (cp->k + 1);
	memcpy(dst, choice, cp->k);
	for (size_t i = 0; cp->nvtot && i < cp->k; i++) {
		if (choice[i] > 2) {
			cr->cv_vstates++;
			break;
		}
	}
	e = cache_get(cr, state_hash(cp, choice), &created);
	if (!e)
		return -ENOMEM;
	if (created) {
		if (grow((void **)&cr->jobv, &cr->jobcap, cr->njobs + 1, sizeof(*cr->jobv)))
			return -ENOMEM;
		cr->jobv[cr->njobs++] = (struct job){ e, NULL };
		cr->distinct++;
	}
	cr->stv[cr->nst++] = e;
	return 0;
}

struct sortkey {
	uint64_t a, b, c;
	size_t i;
};

static int cmp_sortkey(const void *x, const void *y)
{
	const struct sortkey *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return p->c < q->c ? -1 : p->c > q->c;
}

/* The structured states (reliability.md 3.5), generated by index. */
struct structured {
	size_t k, nw;
	struct sortkey *sub, *comp; /* sector indexes in submission / completion order */
	size_t *wstart;           /* writes: ranges of sub */
	bool garble;
	const struct cpoint *cp;  /* versions profile: its intermediate versions */
	size_t n;
};

static void structured_state(const struct structured *st, size_t idx, uint8_t *ch)
{
	size_t k = st->k;

	if (idx < k - 1) { /* a prefix in submission order */
		memset(ch, 0, k);
		for (size_t j = 0; j <= idx; j++)
			ch[st->sub[j].i] = 1;
		return;
	}
	idx -= k - 1;
	if (idx < k - 1) { /* a prefix in completion order */
		memset(ch, 0, k);
		for (size_t j = 0; j <= idx; j++)
			ch[st->comp[j].i] = 1;
		return;
	}
	idx -= k - 1;
	if (idx < k) { /* omit one */
		memset(ch, 1, k);
		ch[idx] = 0;
		return;
	}
	idx -= k;
	if (idx < 2 * st->nw) { /* one write alone in, or alone out */
		size_t w = idx / 2;
		bool in = idx % 2 == 0;

		memset(ch, in ? 0 : 1, k);
		for (size_t j = st->wstart[w]; j < st->wstart[w + 1]; j++)
			ch[st->sub[j].i] = in ? 1 : 0;
		return;
	}
	idx -= 2 * st->nw;
	if (st->garble) { /* garble: one sector garbage, the rest new */
		memset(ch, 1, k);
		ch[idx] = 2;
		return;
	}
	/* versions: every sector at its oldest or its newest intermediate version (the
	 * rest new); then one intermediate version alone, the rest new, or the rest old */
	if (idx < 2) {
		for (size_t i = 0; i < k; i++)
			ch[i] = !st->cp->ninter[i] ? 1 :
				(uint8_t)(idx ? 2 + st->cp->ninter[i] : 3);
		return;
	}
	idx -= 2;
	{
		size_t m = idx / 2, lo = 0, hi = k;

		while (hi - lo > 1) { /* the sector whose versions hold m */
			size_t mid = lo + (hi - lo) / 2;

			if (st->cp->voff[mid] <= m)
				lo = mid;
			else
				hi = mid;
		}
		while (lo + 1 < k && st->cp->voff[lo + 1] <= m && !st->cp->ninter[lo])
			lo++;
		memset(ch, idx % 2 ? 0 : 1, k);
		ch[lo] = (uint8_t)(3 + m - st->cp->voff[lo]);
	}
}

static void random_state(struct crash *cr, uint64_t *r, uint8_t *ch, size_t k)
{
	const struct cpoint *cp = &cr->cp;

	for (size_t i = 0; i < k; i++) {
		uint64_t v = rnd(r);

		if (cr->profile == IOL_SIM_VERSIONS && cp->nvtot && cp->ninter[i]) {
			/* any version: old, new or one in between, uniformly */
			v %= 2 + cp->ninter[i];
			ch[i] = (uint8_t)(v < 2 ? v : v + 1);
			continue;
		}
		ch[i] = cr->profile == IOL_SIM_GARBLE ? (uint8_t)(v % 3) : (uint8_t)(v >> 63);
	}
}

static int gen_states(struct crash *cr, struct ctl *t, uint64_t budget)
{
	struct cpoint *cp = &cr->cp;
	size_t k = cp->k;
	bool garble = cr->profile == IOL_SIM_GARBLE;
	uint64_t r = seed_for(cr->rd->seed, 0x57a7e, cp->seq);
	uint8_t *ch = malloc(k + 1);
	struct structured st = { .k = k, .garble = garble, .cp = cp };
	bool vers = cr->profile == IOL_SIM_VERSIONS && cp->nvtot;
	int err = 0;

	if (!ch)
		return -ENOMEM;
	memset(ch, 0, k + 1);
	cr->nst = 0;
	if (k == 0) {
		err = add_state(cr, ch);
		goto out;
	}
	if (vers && k <= CR_EXH_K) {
		/* Every combination of every sector's versions, if they fit. */
		uint64_t total = 1;

		for (size_t i = 0; i < k && total <= (1ull << 20); i++)
			total *= 2 + cp->ninter[i];
		if (total <= (cr->exhaustive ? 1ull << 16 : budget)) {
			cr->exh_cps++;
			for (uint64_t m = 0; !err && m < total; m++) {
				uint64_t x = m;

				for (size_t i = 0; i < k; i++) {
					uint64_t v = x % (2 + cp->ninter[i]);

					x /= 2 + cp->ninter[i];
					ch[i] = (uint8_t)(v < 2 ? v : v + 1);
				}
				err = add_state(cr, ch);
			}
			goto out;
		}
	}
	if (!vers && k <= CR_EXH_K &&
	    (cr->exhaustive || (1ull << k) + (garble ? k : 0) <= budget)) {
		cr->exh_cps++;
		for (uint64_t m = 0; !err && m < (1ull << k); m++) {
			for (size_t i = 0; i < k; i++)
				ch[i] = (uint8_t)((m >> i) & 1);
			err = add_state(cr, ch);
		}
		for (size_t i = 0; !err && garble && i < k; i++) {
			memset(ch, 1, k);
			ch[i] = 2;
			err = add_state(cr, ch);
		}
		goto out;
	}
	/* Always: nothing survived, everything survived. */
	memset(ch, 0, k);
	err = add_state(cr, ch);
	memset(ch, 1, k);
	if (!err)
		err = add_state(cr, ch);
	if (err || budget <= 2)
		goto out;
	st.sub = malloc(k * sizeof(*st.sub));
	st.comp = malloc(k * sizeof(*st.comp));
	st.wstart = malloc((k + 1) * sizeof(*st.wstart));
	if (!st.sub || !st.comp || !st.wstart) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		uint64_t w = t->sec_wid[cp->u[i]];
		uint64_t done = w < t->wid_cap && t->wid_done[w] ? t->wid_done[w] : UINT64_MAX;

		st.sub[i] = (struct sortkey){ w, cp->u[i], 0, i };
		st.comp[i] = (struct sortkey){ done, w, cp->u[i], i };
	}
	qsort(st.sub, k, sizeof(*st.sub), cmp_sortkey);
	qsort(st.comp, k, sizeof(*st.comp), cmp_sortkey);
	for (size_t i = 0; i < k; i++)
		if (!i || st.sub[i].a != st.sub[i - 1].a)
			st.wstart[st.nw++] = i;
	st.wstart[st.nw] = k;
	st.n = 2 * (k - 1) + k + 2 * st.nw + (garble ? k : 0) + (vers ? 2 + 2 * cp->nvtot : 0);
	{
		uint64_t left = budget - 2, from_struct = left >= st.n ? st.n : left / 2;

		if (from_struct == st.n) {
			for (size_t i = 0; !err && i < st.n; i++) {
				structured_state(&st, i, ch);
				err = add_state(cr, ch);
			}
		} else {
			for (uint64_t i = 0; !err && i < from_struct; i++) {
				structured_state(&st, (size_t)(rnd(&r) % st.n), ch);
				err = add_state(cr, ch);
			}
		}
		for (uint64_t i = from_struct; !err && i < left; i++) {
			random_state(cr, &r, ch, k);
			err = add_state(cr, ch);
		}
	}
out:
	free(st.sub);
	free(st.comp);
	free(st.wstart);
	free(ch);
	return err;
}

/* The image of a state (for --save). */
static unsigned char *state_image(struct crash *cr, const uint8_t *choice)
{
	const struct cpoint *cp = &cr->cp;
	unsigned char *img = malloc(cr->rd->dev_bytes);

	if (!img)
		return NULL;
	memcpy(img, cp->old, cr->rd->dev_bytes);
	for (size_t i = 0; i < cp->k; i++)
		memcpy(img + cp->u[i] * cr->sector, state_sector(cp, choice, cp->u[i], cr->sector),
		       cr->sector);
	return img;
}

/*
 * A recovery @s against what had been acknowledged (@durable, @acked, read before the
 * image) and what could have been released (@released, read after it): what had been
 * acknowledged is there (G1), and the recovered range starts no later than the oldest
 * checkpoint not released (G3).  With item tracking a checkpoint is also freed when
 * every key it holds was written back or relogged in a durable checkpoint, so the range
 * need only start at or before @must_lo, the oldest checkpoint holding the newest durable
 * copy of a key not written back (per key: its newest acknowledged value is there).
 * Returns whether it found something (in @msg).
 */
static bool judge(const struct round *rd, const struct summary *s, uint64_t durable,
		  uint64_t released, uint64_t must_lo, const uint32_t *acked, char *msg,
		  size_t len)
{
	msg[0] = 0;
	if (!s->ok) {
		snprintf(msg, len, "%s", s->what);
	} else if (durable > released && (!s->nck || s->hi < durable)) {
		if (s->nck)
			snprintf(msg, len, "checkpoint %" PRIu64 " was acknowledged (durable "
				 "watermark) but recovery ends at %" PRIu64 " (G1)", durable, s->hi);
		else
			snprintf(msg, len, "checkpoint %" PRIu64 " was acknowledged (durable "
				 "watermark) but recovery found no checkpoint (G1)", durable);
	} else if (!rd->wl.track && s->nck && durable > released && s->lo > released + 1) {
		snprintf(msg, len, "recovery starts at checkpoint %" PRIu64 " but only "
			 "checkpoints <= %" PRIu64 " were released (G3)", s->lo, released);
	} else if (rd->wl.track && must_lo && s->nck && s->lo > must_lo) {
		snprintf(msg, len, "recovery starts at checkpoint %" PRIu64 " but checkpoint %"
			 PRIu64 " holds the newest acknowledged value of a key neither released "
			 "nor written back (item tracking; G1)", s->lo, must_lo);
	} else {
		for (unsigned c = 0; c < rd->wl.clients; c++) {
			uint32_t a = acked[c];

			if (a && rec_seq((struct round *)rd, c, a) > released && s->last_n[c] < a) {
				snprintf(msg, len, "tx %u/%u was acknowledged (force returned) "
					 "but recovery has client %u only up to tx %u (G1)", c, a, c,
					 s->last_n[c]);
				break;
			}
		}
	}
	return msg[0] != 0;
}

static void check_state(struct crash *cr, const struct entry *e, const uint8_t *choice)
{
	const struct cpoint *cp = &cr->cp;
	char msg[240];

	if (judge(cr->rd, &e->s, cp->durable, cp->released, cp->must_lo, cp->acked, msg,
		  sizeof(msg))) {
		unsigned char *img = cr->save_dir ? state_image(cr, choice) : NULL;

		viol_add(cr, cp, choice, cp->k, msg, img);
		free(img);
	}
}

static int crash_point(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t round_cp)
{
	int err = take_point(cr, t, pb, round_cp);

	if (err)
		return err;
	cr->cps++;
	if (cr->cp.k > cr->max_k)
		cr->max_k = cr->cp.k;
	err = gen_states(cr, t, cr->budget);
	if (err)
		return err;
	/* Jobs point into the choice pool, which is final now. */
	for (size_t i = 0, j = 0; i < cr->nst && j < cr->njobs; i++) {
		if (cr->stv[i] == cr->jobv[j].e && !cr->jobv[j].choice)
			cr->jobv[j++].choice = cr->choices + i * (cr->cp.k + 1);
	}
	run_jobs(cr);
	for (size_t i = 0; i < cr->nst; i++)
		check_state(cr, cr->stv[i], cr->choices + i * (cr->cp.k + 1));
	cr->states += cr->nst;
	return 0;
}

/* ---- the workload ---- */

struct client {
	struct round *rd;
	unsigned c;
	pthread_t th;
	_Atomic bool *stop;
};

static void wl_fail(struct round *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void wl_fail(struct round *rd, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&rd->err_mu);
	if (!rd->err[0]) {
		va_start(ap, fmt);
		vsnprintf(rd->err, sizeof(rd->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&rd->err_mu);
}

static void amax(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load(a);

	while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

/* After -EAGAIN: wait a moment (the releaser sees the failure and moves the tail).
 * Returns true when the round is stopping. */
static bool nowait_backoff(struct round *rd, struct client *cl)
{
	struct timespec ts = { 0, 50000 };

	(void)rd;
	nanosleep(&ts, NULL);
	return atomic_load(cl->stop);
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct round *rd = cl->rd;
	delog *log = rd->log;
	unsigned c = cl->c;
	unsigned char *buf = malloc(rd->wl.big_max + rd->wl.small_max + rd->wl.logbsize + 64);
	unsigned char val[sizeof(struct pl_hdr)];
	uint32_t wn = rd->start_n[c];     /* item tracking: next transaction to write back */
	uint64_t wr = seed_for(rd->seed, 0x1e3, c * 64 + rd->session);

	if (!buf) {
		wl_fail(rd, "client %u: out of memory", c);
		return NULL;
	}
	for (uint32_t n = rd->start_n[c]; n <= rd->wl.txs && !atomic_load(cl->stop); n++) {
		struct txspec ts;
		uint64_t reserve = 3 * (sizeof(val) + DELOG_ITEM_OVERHEAD), seq = 0;
		delog_tx *tx;
		int err;

		tx_spec(rd, c, n, &ts);
		for (unsigned i = 0; i < ts.m; i++)
			reserve += ts.len[i] + DELOG_ITEM_OVERHEAD;
		reserve += (uint64_t)__builtin_popcount(ts.shared) *
			   (sizeof(val) + DELOG_ITEM_OVERHEAD);
again:
		if (ts.nowait) {
			tx = NULL;
			err = delog_tx_begin(log, ts.under ? ts.len[0] + DELOG_ITEM_OVERHEAD : reserve,
					     DELOG_TX_NOWAIT, &tx);
			if (err == -EAGAIN) {
				/* Log full: nothing was begun, nothing is lost; try again once the
				 * releaser has moved the tail. */
				if (tx || delog_error(log)) {
					wl_fail(rd, "client %u tx %u: -EAGAIN from delog_tx_begin "
						"left %s", c, n, tx ? "a transaction" : "the log shut down");
					break;
				}
				atomic_fetch_add(&rd->eagain_begin, 1);
				if (nowait_backoff(rd, cl))
					break;
				goto again;
			}
			if (!err)
				atomic_fetch_add(&rd->nowait_ok, 1);
		} else {
			atomic_store(&rd->blocked_since[c], now_ns());
			err = delog_tx_begin(log, reserve, 0, &tx);
			atomic_store(&rd->blocked_since[c], 0);
		}
		if (err) {
			wl_fail(rd, "client %u tx %u: delog_tx_begin%s: %s (the log's error: %s)",
				c, n, ts.nowait ? " (NOWAIT)" : "", delog_err_name(err),
				delog_error(log) ? delog_err_name(delog_error(log)) : "none");
			break;
		}
		if (ts.relog_twice) { /* replaced by the value below, in the transaction */
			pl_make(rd, KEY_RELOG(c), c, 0, IDX_RELOG, 0, 0, sizeof(val), val);
			err = delog_tx_log(tx, KEY_RELOG(c), val, sizeof(val));
		}
		for (unsigned i = 0; !err && i < ts.m; i++) {
			pl_make(rd, KEY_UNIQUE(c, n, i), c, n, i, ts.m, ts.shared, ts.len[i], buf);
			err = delog_tx_log(tx, KEY_UNIQUE(c, n, i), buf, ts.len[i]);
		}
		for (unsigned j = 0; !err && j < 16; j++) {
			if (!(ts.shared & (1u << j)))
				continue;
			pl_make(rd, KEY_SHARED(j), c, n, IDX_SHARED, 0, 0, sizeof(val), val);
			err = delog_tx_log(tx, KEY_SHARED(j), val, sizeof(val));
		}
		if (!err) {
			pl_make(rd, KEY_RELOG(c), c, n, IDX_RELOG, 0, 0, sizeof(val), val);
			err = delog_tx_log(tx, KEY_RELOG(c), val, sizeof(val));
		}
		if (err == -EAGAIN && ts.nowait) {
			/* More space needed under NOWAIT: abort; the whole transaction is
			 * logged again later (were anything of this attempt to reach the log,
			 * the oracle finds the transaction twice or in the wrong checkpoint). */
			delog_tx_abort(tx);
			if (delog_error(log)) {
				wl_fail(rd, "client %u tx %u: -EAGAIN from delog_tx_log, and the log "
					"shut down", c, n);
				break;
			}
			atomic_fetch_add(&rd->eagain_log, 1);
			if (nowait_backoff(rd, cl))
				break;
			goto again;
		}
		if (err) {
			delog_tx_abort(tx);
			wl_fail(rd, "client %u tx %u: delog_tx_log: %s", c, n, delog_err_name(err));
			break;
		}
		atomic_store(&rd->sess[c][n], (uint8_t)rd->session);
		atomic_store(&rd->submitted[c], n);
		err = delog_tx_commit(tx, &seq);
		if (err) {
			wl_fail(rd, "client %u tx %u: delog_tx_commit: %s", c, n, delog_err_name(err));
			break;
		}
		atomic_store_explicit(&rd->seqs[c][n], seq, memory_order_release);
		if (ts.force) {
			err = delog_force(log, seq);
			if (err) {
				wl_fail(rd, "client %u tx %u: delog_force(%" PRIu64 "): %s", c, n, seq,
					delog_err_name(err));
				break;
			}
			atomic_store(&rd->acked[c], n);
			atomic_fetch_add(&rd->ack_events, 1);
		}
		if (rd->wl.track) {
			/* Write back the unique items of durable transactions (most of them):
			 * with tracking that frees their checkpoints once the relogged keys
			 * moved on, and the tail moves without any release. */
			uint64_t d = delog_durable_seq(log);

			for (; wn <= n && rec_seq(rd, c, wn) && rec_seq(rd, c, wn) <= d; wn++) {
				struct txspec w;
				uint64_t ws = rec_seq(rd, c, wn);

				if (rnd(&wr) % rd->wl.written_1in)
					continue;
				tx_spec(rd, c, wn, &w);
				atomic_store(&rd->written[c][wn], 1);
				for (unsigned i = 0; !err && i < w.m; i++)
					err = delog_item_written(log, KEY_UNIQUE(c, wn, i), ws);
				atomic_fetch_add(&rd->item_writes, w.m);
				if (err) {
					wl_fail(rd, "client %u: delog_item_written(tx %u, %" PRIu64 "): %s",
						c, wn, ws, delog_err_name(err));
					break;
				}
			}
			if (err)
				break;
		}
		if (ts.release_lag) {
			uint64_t d = delog_durable_seq(log);

			if (d > ts.release_lag) {
				amax(&rd->released, d - ts.release_lag);
				err = delog_release(log, d - ts.release_lag);
				if (err) {
					wl_fail(rd, "client %u: delog_release(%" PRIu64 "): %s", c,
						d - ts.release_lag, delog_err_name(err));
					break;
				}
			}
		}
	}
	free(buf);
	atomic_fetch_add(&rd->clients_done, 1);
	return NULL;
}

/* Space: release what the log asks for (it must be durable: clamp to the watermark). */
static void on_push(void *arg, delog *log, uint64_t seq)
{
	struct round *rd = arg;
	uint64_t d = delog_durable_seq(log);

	if (seq > d)
		seq = d;
	if (!seq)
		return;
	amax(&rd->released, seq);
	(void)delog_release(log, seq);
}

/* The full workload's push callback: the application is slow to write back; it only
 * notes the request (the releaser moves the tail, and only once the log is full). */
static void on_push_full(void *arg, delog *log, uint64_t seq)
{
	struct round *rd = arg;

	(void)log;
	(void)seq;
	atomic_fetch_add(&rd->push_calls, 1);
}

struct coord {
	struct round *rd;
	struct crash *cr;
	_Atomic bool stop;
};

#define CR_FULL_WAIT_NS 50000ull           /* a committer waiting this long: log full */
#define CR_FULL_STUCK_NS (20ull * 1000000000ull)

/*
 * The full workload's releaser: it moves the tail only when the log is full (a committer
 * waits in delog_tx_begin, or a NOWAIT begin failed since the last burst), and then by a
 * seeded amount (often a little, sometimes everything durable), so the log fills to the
 * edge again at once.  If everything durable is released and a committer still waits, it
 * forces the CIL (delog_force(0): I/O the controller delivers) and releases that too:
 * a waiting committer is always released, so the workload cannot deadlock.  After
 * everything was released, the CIL empty and a committer still waiting for
 * CR_FULL_STUCK_NS, it reports the wait (progress must resume once the tail moves; G9).
 */
static void *releaser_main(void *arg)
{
	struct coord *co = arg;
	struct round *rd = co->rd;
	delog *log = rd->log;
	uint64_t r = seed_for(rd->seed, 0x4e1ea5e, 0), last_eagain = 0, stuck_since = 0;
	uint64_t seen[CR_MAX_CLIENTS] = { 0 }, last_burst = 0;

	while (atomic_load(&rd->clients_done) < rd->wl.clients) {
		uint64_t t = now_ns(), eg = atomic_load(&rd->eagain_begin) +
					    atomic_load(&rd->eagain_log);
		uint64_t d, rel, target;
		bool full = eg != last_eagain, stop = atomic_load(&co->stop), waiting = false;
		struct timespec ts = { 0, 10000 + (long)(rnd(&r) % 50000) };

		for (unsigned c = 0; c < rd->wl.clients; c++) {
			uint64_t b = atomic_load(&rd->blocked_since[c]);

			/* A new wait; or one that outlasted the last release by 5 ms (that
			 * release was too small, or woke it too late): release again. */
			if (b && t > b + CR_FULL_WAIT_NS &&
			    (b != seen[c] || t > last_burst + 5000000ull)) {
				waiting = true;
				seen[c] = b;
			}
		}
		full |= waiting;
		if (!full && !stop) {
			nanosleep(&ts, NULL);
			continue;
		}
		last_eagain = eg;
		d = delog_durable_seq(log);
		rel = atomic_load(&rd->released);
		if (d <= rel) {
			struct delog_stats st = { .size = sizeof(st) };

			/* Everything durable is released: what holds the space is in the CIL. */
			if (!delog_stats(log, &st) && !st.cil_bytes && waiting) {
				if (!stuck_since)
					stuck_since = t;
				else if (t - stuck_since > CR_FULL_STUCK_NS)
					wl_fail(rd, "a committer waits in delog_tx_begin with everything "
						"released and the CIL empty (log used %" PRIu64 " of %" PRIu64
						", reserved %" PRIu64 "; G9: no progress once space is freed)",
						st.log_used, st.log_size, st.reserved_bytes);
			} else {
				stuck_since = 0;
			}
			atomic_fetch_add(&rd->forces_rel, 1);
			if (delog_force(log, 0))
				break;
			nanosleep(&ts, NULL);
			continue;
		}
		stuck_since = 0;
		switch (stop ? 0 : rnd(&r) % (rd->wl.rel_all_1in < 2 ? 32 : 2 * rd->wl.rel_all_1in)) {
		case 0:
		case 2: /* rel_all_1in == 2: everything durable, half of the bursts */
			target = d;
			break;
		case 1:
			target = rel + 1 + rnd(&r) % ((d - rel + 1) / 2);
			break;
		default: /* a little: one or two checkpoints */
			target = rel + 1 + rnd(&r) % 2;
			break;
		}
		if (target > d)
			target = d;
		amax(&rd->released, target);
		if (delog_release(log, target)) {
			wl_fail(rd, "releaser: delog_release(%" PRIu64 "), durable %" PRIu64 ": failed",
				target, d);
			break;
		}
		atomic_fetch_add(&rd->bursts, 1);
		last_burst = now_ns();
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * A session's start (sessions after the first): delog_open_dev has recovered the last
 * session's cut image through check_ckpt (@rc).  It must hold everything the cut point
 * had acknowledged, judged like any crash state; then the workload continues from it as
 * an application does: each client from its first transaction the image lost (those
 * numbers are written again, by this session: the payloads say which session wrote
 * them), everything recovered now acknowledged, releases renewed.  Returns false when
 * the chain cannot go on (reported).
 */
static bool session_start(struct crash *cr, struct round *rd, delog *log, struct rctx *rc)
{
	struct summary *s = rc->s;
	char msg[240], what[240];

	summary_finish(rc);
	if (judge(rd, s, rd->cut_durable, rd->cut_released, rd->cut_must_lo, rd->cut_acked,
		  what, sizeof(what))) {
		snprintf(msg, sizeof(msg), "session %u: recovery of session %u's crash image "
			 "(delog_open_dev): %.160s", rd->session, rd->session - 1, what);
		viol_add(cr, NULL, NULL, 0, msg, NULL);
		return false;
	}
	if (!s->nck && rd->cut_durable)
		return false; /* a new sequence would start at 1: numbering would collide */
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		uint32_t n = atomic_load(&rd->submitted[c]);

		/* The transactions in checkpoints the image holds (or released) stay. */
		while (n && (!rec_seq(rd, c, n) || !s->nck || rec_seq(rd, c, n) > s->hi))
			n--;
		for (uint32_t m = n + 1; m <= rd->wl.txs + 1; m++) {
			atomic_store(&rd->seqs[c][m], 0);
			atomic_store(&rd->sess[c][m], 0);
			atomic_store(&rd->written[c][m], 0);
		}
		rd->start_n[c] = n + 1;
		atomic_store(&rd->submitted[c], n);
		atomic_store(&rd->acked[c], n);
	}
	if (!s->nck)
		atomic_store(&rd->released, 0);
	else if (atomic_load(&rd->released))
		(void)delog_release(log, atomic_load(&rd->released) < s->hi ?
				    atomic_load(&rd->released) : s->hi);
	return true;
}

static void *coord_main(void *arg)
{
	struct coord *co = arg;
	struct round *rd = co->rd;
	struct delog_options o = { .size = sizeof(o), .flush = rd->policy,
				   .logbufs = rd->wl.logbufs, .logbsize = rd->wl.logbsize,
				   .push = rd->wl.releaser ? on_push_full : on_push, .push_arg = rd,
				   .flags = rd->wl.track ? DELOG_OPEN_TRACK_ITEMS : 0,
				   /* full: small checkpoints, so a release frees a little */
				   .cil_push_bytes = rd->wl.cil_push };
	struct client cl[CR_MAX_CLIENTS];
	struct summary sum = { .ok = true };
	struct rctx rc = { .rd = rd, .s = &sum };
	delog *log = NULL;
	pthread_t rel_th;
	bool rel_started = false;
	int err;

	if (rd->session) {
		o.recover = delog_cb;
		o.recover_arg = &rc;
	}
	err = delog_open_dev(rd->dev, &o, &log);
	free(rc.it);
	free(rc.txv);
	if (err && rd->session) {
		char msg[240];

		snprintf(msg, sizeof(msg), "session %u: delog_open_dev on session %u's crash image "
			 "failed: %s%s%.100s", rd->session, rd->session - 1, delog_err_name(err),
			 sum.ok ? "" : ": ", sum.ok ? "" : sum.what);
		viol_add(co->cr, NULL, NULL, 0, msg, NULL);
		rd->chain_end = true;
		atomic_store(&rd->done, true);
		return NULL;
	}
	if (err) {
		wl_fail(rd, "delog_open_dev: %s", delog_err_name(err));
		atomic_store(&rd->done, true);
		return NULL;
	}
	if (rd->session && !session_start(co->cr, rd, log, &rc)) {
		rd->chain_end = true;
		(void)delog_close(log);
		atomic_store(&rd->done, true);
		return NULL;
	}
	pthread_mutex_lock(&rd->log_mu);
	rd->log = log;
	pthread_mutex_unlock(&rd->log_mu);
	atomic_store(&rd->arm_ev, iol_sim_trace_len(rd->dev));
	atomic_store(&rd->armed, true);
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		cl[c] = (struct client){ rd, c, 0, &co->stop };
		if (pthread_create(&cl[c].th, NULL, client_main, &cl[c])) {
			wl_fail(rd, "cannot start client %u", c);
			rd->wl.clients = c;
			break;
		}
	}
	if (rd->wl.releaser) {
		if (pthread_create(&rel_th, NULL, releaser_main, co))
			wl_fail(rd, "cannot start the releaser");
		else
			rel_started = true;
	}
	for (unsigned c = 0; c < rd->wl.clients; c++)
		pthread_join(cl[c].th, NULL);
	if (rel_started)
		pthread_join(rel_th, NULL);
	if (rd->wl.full) {
		struct delog_stats st = { .size = sizeof(st) };

		if (!delog_stats(log, &st))
			rd->space_waits = st.space_waits;
	}
	if (!rd->err[0]) {
		err = delog_force(log, 0);
		if (err) {
			wl_fail(rd, "delog_force(0): %s", delog_err_name(err));
		} else {
			for (unsigned c = 0; c < rd->wl.clients; c++) {
				uint32_t sub = atomic_load(&rd->submitted[c]);

				if (sub && atomic_load(&rd->seqs[c][sub]))
					atomic_store(&rd->acked[c], sub);
			}
			atomic_fetch_add(&rd->ack_events, 1);
		}
	}
	pthread_mutex_lock(&rd->log_mu);
	rd->final_durable = delog_durable_seq(log);
	rd->log = NULL;
	pthread_mutex_unlock(&rd->log_mu);
	err = delog_close(log);
	if (err)
		wl_fail(rd, "delog_close: %s", delog_err_name(err));
	atomic_store(&rd->done, true);
	return NULL;
}

/* ---- rounds ---- */

static void progress(struct crash *cr, bool end)
{
	static uint64_t last;
	uint64_t t = now_ns();

	if (!cr->progress || (!end && t - last < 500000000ull))
		return;
	last = t;
	fprintf(stderr, "\rdelog crash: round %" PRIu64 ", states %" PRIu64 "/%" PRIu64
		", images %" PRIu64 ", violations %" PRIu64 "   %s", cr->rounds, cr->states,
		cr->target, cr->distinct, cr->nviol, end ? "\n" : "");
	fflush(stderr);
}

static int format_image(const struct round *rd, unsigned char *img)
{
	struct jrnl_format_opts fo = { .sector = rd->sector, .log_size = rd->log_bytes };
	struct iol_dev *dev = sim_dev(rd->dev_bytes, rd->sector, rd->seed, false, NULL);
	int err;

	if (!dev)
		return -ENOMEM;
	err = jrnl_format(dev, &fo, NULL);
	if (!err)
		err = iol_sim_media(dev, 0, img, rd->dev_bytes);
	iol_dev_close(dev);
	return err;
}

/* Forget what a session did after its cut: the next session starts from the cut image. */
static void ctl_reset(struct ctl *t, const struct round *rd)
{
	t->cursor = 0;
	memset(t->wcount, 0, rd->log_bytes / rd->sector * sizeof(*t->wcount));
	memset(t->sec_wid, 0, rd->dev_bytes / rd->sector * sizeof(*t->sec_wid));
	memset(t->wid_done, 0, t->wid_cap * sizeof(*t->wid_done));
	t->nfl = 0;
	t->media_dirty = false;
}

/* A new media image (a round's format, or a session's cut): the workers rebuild their
 * disks from it, and the image cache is dropped (its verdicts depend on the oracle's
 * tables, which a session start rewrites). */
static void media_reset(struct crash *cr, const struct round *rd)
{
	uint64_t nsec = rd->dev_bytes / rd->sector;

	cr->epoch++;
	cache_clear(cr);
	cr->cp.k = 0;
	cr->ntouch = 0;
	cr->nchg = 0;
	cr->new_dirty = true;
	memset(cr->old + rd->dev_bytes, 0, cr->dev_max - rd->dev_bytes);
	cr->h_total = 0;
	for (uint64_t s = 0; s < nsec; s++) {
		cr->h_sec[s] = sector_hash(cr->old + s * rd->sector, rd->sector, s);
		cr->h_total += cr->h_sec[s];
	}
}

/* One session: the workload on rd->dev (media cr->old) with a crash point at every event,
 * until the clients finish, the budget is spent, or (@cut_at: transactions submitted
 * in all) the session is cut: a seeded state of that crash point becomes @cut, the
 * image the next session opens, and the rest of this session only winds down. */
static int run_session(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t *round_cp,
		       uint64_t cut_at, unsigned char *cut, bool *cut_taken)
{
	struct round *rd = cr->rd;
	struct coord co = { .rd = rd, .cr = cr };
	uint64_t last_ev = SIZE_MAX, last_ack = UINT64_MAX, last_dur = UINT64_MAX;
	uint64_t idle_since = 0, cyc0 = 0, cyc1 = 0;
	pthread_t th;
	int err = 0;

	*cut_taken = false;
	if (pthread_create(&th, NULL, coord_main, &co))
		return -EAGAIN;
	for (;;) {
		size_t L = iol_sim_trace_len(rd->dev);
		struct delog_stats st = { .size = sizeof(st) };
		bool known = false;
		uint64_t ack, dur;

		pthread_mutex_lock(&rd->log_mu);
		if (rd->log && !delog_stats(rd->log, &st))
			known = true;
		pthread_mutex_unlock(&rd->log_mu);
		if (known && atomic_load(&rd->armed) && !*cut_taken) {
			uint64_t free_b = st.log_size - st.log_used;

			if (free_b < cr->cv_min_free)
				cr->cv_min_free = free_b;
			if (!cyc0)
				cyc0 = st.head_lsn >> 32;
			if ((st.head_lsn >> 32) > cyc1)
				cyc1 = st.head_lsn >> 32;
			if (rd->wl.full) {
				cr->f_used = st.log_used;
				if (free_b < cr->f_min_free)
					cr->f_min_free = free_b;
				if ((st.head_lsn >> 32) > rd->head_cycle)
					rd->head_cycle = st.head_lsn >> 32;
			}
		}
		trace_step(cr, t, L, st.tail_lsn, known && rd->session == 0);
		if (atomic_load(&rd->armed) && !*cut_taken) {
			ack = atomic_load(&rd->ack_events);
			dur = read_durable(rd);
			if (cr->states >= cr->target) {
				atomic_store(&co.stop, true);
			} else if (L != last_ev || ack != last_ack || dur != last_dur) {
				uint64_t sub = 0;

				err = crash_point(cr, t, pb, ++*round_cp);
				if (err)
					break;
				last_ev = L;
				last_ack = ack;
				last_dur = dur;
				progress(cr, false);
				for (unsigned c = 0; c < rd->wl.clients; c++)
					sub += atomic_load(&rd->submitted[c]);
				if (cut_at && sub >= cut_at && cr->nst) {
					/* The cut: one of this point's states, seeded, is what the
					 * power left; the session then only winds down. */
					uint64_t q = seed_for(rd->seed, 0xc07, rd->session);
					size_t i = (size_t)(q % cr->nst);
					unsigned char *img = state_image(cr, cr->choices + i * (cr->cp.k + 1));

					if (!img) {
						err = -ENOMEM;
						break;
					}
					memcpy(cut, img, rd->dev_bytes);
					free(img);
					rd->cut_durable = cr->cp.durable;
					rd->cut_released = cr->cp.released;
					rd->cut_must_lo = cr->cp.must_lo;
					memcpy(rd->cut_acked, cr->cp.acked, sizeof(rd->cut_acked));
					*cut_taken = true;
					atomic_store(&co.stop, true);
				}
			}
		}
		if (iol_sim_pending(rd->dev)) {
			iol_sim_deliver(rd->dev, 1, IOL_SIM_RANDOM);
			idle_since = 0;
		} else if (atomic_load(&rd->done)) {
			break;
		} else {
			struct timespec ts = { 0, 20000 };

			if (!idle_since)
				idle_since = now_ns();
			else if (now_ns() - idle_since > CR_STALL_NS) {
				wl_fail(rd, "stall: no I/O and no progress for %llu s (hang?)",
					CR_STALL_NS / 1000000000ull);
				viol_add(cr, NULL, NULL, 0, rd->err, NULL);
				fprintf(stderr, "delog crash: %s\n", rd->err);
				exit(TOOL_EXIT_FAIL);
			}
			nanosleep(&ts, NULL);
		}
	}
	if (err) {
		/* Let the workload finish so the threads can be joined. */
		atomic_store(&co.stop, true);
		while (!atomic_load(&rd->done) || iol_sim_pending(rd->dev))
			if (!iol_sim_deliver(rd->dev, 1, IOL_SIM_RANDOM))
				sched_yield();
	}
	pthread_join(th, NULL);
	if (cyc1 > cyc0)
		cr->cv_laps += cyc1 - cyc0;
	if (!err && !*cut_taken && atomic_load(&rd->armed) && cr->states < cr->target) {
		size_t L = iol_sim_trace_len(rd->dev);

		trace_step(cr, t, L, 0, false);
		err = crash_point(cr, t, pb, ++*round_cp); /* after the clean close */
	}
	return err;
}

static int run_round(struct crash *cr, uint64_t r)
{
	struct round *rd = calloc(1, sizeof(*rd));
	struct ctl t = { 0 };
	struct pointbuf pb = { 0 };
	uint64_t nsec, round_cp = 0, states0 = cr->states, cps0 = cr->cps;
	unsigned char *cut = NULL;
	unsigned sessions_run = 0;
	int err = 0;

	if (!rd)
		return -ENOMEM;
	rd->seed = seed_for(cr->seed, 0x0bad, r);
	rd->id = (uint32_t)r + 1;
	rd->policy = cr->policy;
	wl_pick(strcmp(cr->workload, "all") ? cr->workload : wl_names[r % NR_WL], rd->seed,
		cr->threads, cr->sector_opt, &rd->wl);
	rd->sector = rd->wl.sector ? rd->wl.sector : 4096;
	rd->log_bytes = rd->wl.log_bytes;
	rd->dev_bytes = JRNL_LOG_START + rd->log_bytes;
	cr->sector = rd->sector;
	nsec = rd->dev_bytes / rd->sector;
	pthread_mutex_init(&rd->log_mu, NULL);
	pthread_mutex_init(&rd->err_mu, NULL);
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		rd->seqs[c] = calloc(rd->wl.txs + 2, sizeof(*rd->seqs[c]));
		rd->sess[c] = calloc(rd->wl.txs + 2, sizeof(*rd->sess[c]));
		rd->written[c] = calloc(rd->wl.txs + 2, sizeof(*rd->written[c]));
		rd->start_n[c] = 1;
		if (!rd->seqs[c] || !rd->sess[c] || !rd->written[c])
			err = -ENOMEM;
	}
	{
		uint64_t left = cr->target > cr->states ? cr->target - cr->states : 0;
		uint64_t est = cr->rounds ? cr->cps / cr->rounds : 1500;
		uint64_t rl = cr->rounds < 3 ? 4 - cr->rounds : 1;

		cr->budget = left / (rl * (est ? est : 1));
		if (cr->budget < 2)
			cr->budget = 2;
		if (cr->budget > CR_MAX_PER_POINT)
			cr->budget = CR_MAX_PER_POINT;
	}
	cr->rd = rd;
	cr->f_last_eagain = 0;
	cr->last_cp_t = 0;
	cr->f_used = 0;
	pb.tmp = malloc(cr->dev_max);
	t.wcount = calloc(rd->log_bytes / rd->sector, sizeof(*t.wcount));
	t.sec_wid = calloc(nsec, sizeof(*t.sec_wid));
	t.wid_cap = 4096;
	t.wid_done = calloc(t.wid_cap, sizeof(*t.wid_done));
	cut = rd->wl.sessions > 1 ? malloc(rd->dev_bytes) : NULL;
	if (err || !pb.tmp || !t.wcount || !t.sec_wid || !t.wid_done ||
	    (rd->wl.sessions > 1 && !cut)) {
		err = -ENOMEM;
		goto out;
	}
	err = format_image(rd, cr->old);
	if (err)
		goto out;
	if (cr->verbose)
		fprintf(stderr, "delog crash: round %" PRIu64 " seed %#" PRIx64 ": %s, %u clients x "
			"%u tx, %u x %u KiB buffers, log %" PRIu64 " KiB, sector %u, cil_push %" PRIu64
			" KiB, %s%s%u sessions, %" PRIu64 " states per point\n", r, rd->seed,
			rd->wl.name, rd->wl.clients, rd->wl.txs, rd->wl.logbufs,
			rd->wl.logbsize >> 10, rd->log_bytes >> 10, rd->sector, rd->wl.cil_push >> 10,
			rd->wl.track ? "item tracking, " : "", rd->wl.releaser ? "edge releases, " : "",
			rd->wl.sessions, cr->budget);
	cr->cv_log_min = rd->log_bytes < cr->cv_log_min ? rd->log_bytes : cr->cv_log_min;
	cr->cv_log_max = rd->log_bytes > cr->cv_log_max ? rd->log_bytes : cr->cv_log_max;
	{
		uint64_t ring = (uint64_t)rd->wl.logbufs * rd->wl.logbsize;

		cr->cv_ring_min = ring < cr->cv_ring_min ? ring : cr->cv_ring_min;
		cr->cv_ring_max = ring > cr->cv_ring_max ? ring : cr->cv_ring_max;
	}
	cr->cv_sectors |= rd->sector == 512 ? 1u : 2u;
	cr->cv_track_rounds += rd->wl.track;
	cr->cv_rel_edge += rd->wl.releaser && !rd->wl.full;
	for (unsigned sess = 0; sess < rd->wl.sessions && !err; sess++) {
		uint64_t cut_at = 0, total = 0;
		bool cut_taken = false;

		rd->session = sess;
		if (sess + 1 < rd->wl.sessions) {
			/* Cut somewhere in this session's share of the transactions. */
			uint64_t q = seed_for(rd->seed, 0xc075, sess);

			total = (uint64_t)rd->wl.txs * rd->wl.clients;
			cut_at = total * sess / rd->wl.sessions +
				 total / rd->wl.sessions * (30 + q % 60) / 100 + 1;
		}
		media_reset(cr, rd);
		ctl_reset(&t, rd);
		atomic_store(&rd->armed, false);
		atomic_store(&rd->done, false);
		atomic_store(&rd->clients_done, 0);
		rd->dev = sim_dev(rd->dev_bytes, rd->sector, seed_for(rd->seed, 0x5e55, sess), true,
				  cr->old);
		if (!rd->dev) {
			err = -ENOMEM;
			break;
		}
		err = run_session(cr, &t, &pb, &round_cp, cut_at, cut, &cut_taken);
		iol_dev_close(rd->dev);
		rd->dev = NULL;
		if (rd->err[0] || rd->chain_end)
			break;
		sessions_run++;
		if (!cut_taken)
			break;
		memcpy(cr->old, cut, rd->dev_bytes);
	}
	if (rd->wl.sessions > 1) {
		if (rd->session > 0 || sessions_run > 0) {
			unsigned n = rd->session + 1;

			cr->cv_chains++;
			cr->cv_sess_total += n;
			cr->cv_sess_min = n < cr->cv_sess_min ? n : cr->cv_sess_min;
			cr->cv_sess_max = n > cr->cv_sess_max ? n : cr->cv_sess_max;
			cr->cv_chain_cut += rd->chain_end;
		}
	}
	cr->cv_item_writes += rd->item_writes;
	cr->cv_eagain += rd->eagain_begin + rd->eagain_log;
	cr->cv_nowait_ok += rd->nowait_ok;
	if (rd->err[0]) {
		char msg[300];

		snprintf(msg, sizeof(msg), "workload: %s", rd->err);
		viol_add(cr, NULL, NULL, 0, msg, NULL);
	}
	cr->rounds++;
	if (rd->wl.full) {
		cr->f_rounds++;
		cr->f_bursts += rd->bursts;
		cr->f_forces += rd->forces_rel;
		cr->f_eagain_begin += rd->eagain_begin;
		cr->f_eagain_log += rd->eagain_log;
		cr->f_nowait_ok += rd->nowait_ok;
		cr->f_waits += rd->space_waits;
		cr->f_push_calls += rd->push_calls;
		cr->f_laps += rd->head_cycle ? rd->head_cycle - 1 : 0;
		if (cr->verbose)
			fprintf(stderr, "delog crash: round %" PRIu64 " (full): %" PRIu64 " bursts, %"
				PRIu64 " waits, %" PRIu64 "+%" PRIu64 " EAGAIN, head cycle %" PRIu64
				"\n", r, (uint64_t)rd->bursts, rd->space_waits,
				(uint64_t)rd->eagain_begin, (uint64_t)rd->eagain_log, rd->head_cycle);
	}
	if (cr->verbose)
		fprintf(stderr, "delog crash: round %" PRIu64 ": %" PRIu64 " crash points, %" PRIu64
			" states, %u sessions\n", r, cr->cps - cps0, cr->states - states0,
			rd->session + 1);
out:
	if (rd->dev)
		iol_dev_close(rd->dev);
	cache_clear(cr);
	cr->rd = NULL;
	for (unsigned c = 0; c < CR_MAX_CLIENTS; c++) {
		free(rd->seqs[c]);
		free(rd->sess[c]);
		free(rd->written[c]);
	}
	pthread_mutex_destroy(&rd->log_mu);
	pthread_mutex_destroy(&rd->err_mu);
	free(rd);
	free(cut);
	free(pb.tmp);
	free(t.wcount);
	free(t.sec_wid);
	free(t.wid_done);
	free(t.fl);
	return err;
}

/* ---- the command ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: delog crash [--workload W] [--policy P] [--states N] [--seed S]\n"
		   "                   [--profile strict|garble|versions] [--sector 512|4096]\n"
		   "                   [--exhaustive] [--threads N] [--jobs N] [--full-every N]\n"
		   "                   [--save DIR] [--round R] [--json] [--verbose]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nRun seeded multi-threaded workloads on the simulated disk, cut the power at\n"
	       "every device event and acknowledgement, recover every crash state and check\n"
	       "it: acknowledged <= recovered <= submitted, a prefix of checkpoint order, whole\n"
	       "checkpoints with matching payload hashes, nothing from another lap or log.\n"
	       "\noptions:\n"
	       "  -w, --workload W    mixed, wrap, relog, small, full (log full: the tail\n"
	       "                      pinned, committers waiting or failing with -EAGAIN,\n"
	       "                      released in bursts), random (every parameter drawn\n"
	       "                      per round: log 4-16 MiB, sector, buffers, checkpoints\n"
	       "                      up to 5 MiB, item tracking, edge releases, NOWAIT,\n"
	       "                      chains of 3-4 sessions crashed and reopened), or all\n"
	       "                      (default: all, one per round in turn)\n"
	       "  -p, --policy P      flush policy: sync, async, single, none (default sync)\n"
	       "      --states N      crash states to check in total (default 10000)\n"
	       "      --seed S        seed of workloads, delivery order and sampling (default 1)\n"
	       "      --profile P     strict (each unstable sector old or new), garble (or\n"
	       "                      garbage) or versions (any version written since it\n"
	       "                      was last stable) (default strict)\n"
	       "      --sector N      sector size, the unit of tearing: 512 or 4096 (default\n"
	       "                      4096; random draws one per round unless given)\n"
	       "  -x, --exhaustive    all 2^k states wherever k <= 12 sectors are unstable\n"
	       "  -t, --threads N     client threads per round (default: the workload's, 1..4)\n"
	       "  -J, --jobs N        recovery threads (default: online CPUs, at most 8)\n"
	       "      --full-every N  open every Nth distinct image with delog_open_dev and\n"
	       "                      continue it across a second crash (default 32; 0: never)\n"
	       "      --save DIR      write the pre-recovery image of each violation to DIR\n"
	       "      --round R       run only round R (as numbered in a violation's report)\n"
	       "  -j, --json          one JSON document on stdout\n"
	       "  -v, --verbose       a line per round on stderr\n"
	       "  -h, --help          show this help\n"
	       "\nExit status: 0 no violation, 1 violations or failure, 2 usage error.\n");
}

static const char *profile_name(enum iol_sim_crash_profile p)
{
	return p == IOL_SIM_GARBLE ? "garble" : p == IOL_SIM_VERSIONS ? "versions" : "strict";
}

static void print_text(struct crash *cr, double secs)
{
	printf("delog crash: policy %s, profile %s, sector %u, workload %s, seed %" PRIu64 "\n",
	       delog_flush_policy_name(cr->policy), profile_name(cr->profile),
	       cr->sector, cr->workload, cr->seed);
	printf("  rounds            %" PRIu64 "\n", cr->rounds);
	printf("  crash points      %" PRIu64 " (%" PRIu64 " enumerated exhaustively, max %" PRIu64
	       " unstable sectors)\n", cr->cps, cr->exh_cps, cr->max_k);
	printf("  states            %" PRIu64 "\n", cr->states);
	printf("  distinct images   %" PRIu64 "\n", cr->distinct);
	printf("  recoveries        %" PRIu64 " read-only, %" PRIu64 " delog_open_dev, %" PRIu64
	       " continued across a second crash\n", cr->recoveries, atomic_load(&cr->full_opens),
	       atomic_load(&cr->continuations));
	printf("  protocol checks   %" PRIu64 " writes\n", cr->protocol_events);
	if (cr->f_rounds)
		printf("  log full          %" PRIu64 " rounds: %" PRIu64 " crash points at the edge "
		       "(%" PRIu64 " with >= 75%% of the log live), %" PRIu64 " releases, %" PRIu64 " forces to free space, %" PRIu64 " waits "
		       "for space, %" PRIu64 " + %" PRIu64 " -EAGAIN (begin + log; %" PRIu64
		       " NOWAIT begins granted), %" PRIu64 " push calls, %" PRIu64 " laps, least "
		       "free %" PRIu64 " bytes\n", cr->f_rounds, cr->f_edge_cps, cr->f_hi_cps, cr->f_bursts,
		       cr->f_forces, cr->f_waits, cr->f_eagain_begin, cr->f_eagain_log,
		       cr->f_nowait_ok, cr->f_push_calls, cr->f_laps,
		       cr->f_min_free == UINT64_MAX ? 0 : cr->f_min_free);
	printf("  coverage          logs %" PRIu64 "..%" PRIu64 " KiB, sectors%s%s, rings (logbufs x "
	       "logbsize) %" PRIu64 "..%" PRIu64 " KiB\n", cr->cv_log_min >> 10, cr->cv_log_max >> 10,
	       cr->cv_sectors & 1 ? " 512" : "", cr->cv_sectors & 2 ? " 4096" : "",
	       cr->cv_ring_min >> 10, cr->cv_ring_max >> 10);
	printf("                    largest checkpoint recovered %" PRIu64 " bytes (%.2f x its "
	       "round's ring; %" PRIu64 " images with one larger than the ring, %" PRIu64
	       " larger than 2 MiB)\n", cr->cv_max_ck,
	       (double)cr->cv_max_ck_win / 1000.0, cr->cv_over_win, cr->cv_over_2m);
	printf("                    %" PRIu64 " laps, least free %" PRIu64 " bytes; %" PRIu64
	       " rounds releasing at the full edge; %" PRIu64 " rounds with item tracking (%"
	       PRIu64 " items written back); %" PRIu64 " -EAGAIN, %" PRIu64 " NOWAIT begins "
	       "granted\n", cr->cv_laps, cr->cv_min_free == UINT64_MAX ? 0 : cr->cv_min_free,
	       cr->cv_rel_edge, cr->cv_track_rounds, cr->cv_item_writes, cr->cv_eagain,
	       cr->cv_nowait_ok);
	printf("                    %" PRIu64 " chains, %" PRIu64 "..%" PRIu64 " sessions each (%"
	       PRIu64 " in all, %" PRIu64 " ended early); versions: %" PRIu64 " crash points "
	       "with intermediate versions, up to %" PRIu64 " versions a sector, %" PRIu64
	       " states choosing one\n", cr->cv_chains, cr->cv_chains ? cr->cv_sess_min : 0,
	       cr->cv_sess_max, cr->cv_sess_total, cr->cv_chain_cut, cr->cv_vcps, cr->cv_max_ver,
	       cr->cv_vstates);
	printf("  violations        %" PRIu64 "\n", cr->nviol);
	printf("  time              %.1f s\n", secs);
	for (size_t i = 0; i < cr->nviols; i++) {
		const struct viol *v = &cr->viols[i];

		printf("violation: round %u (seed %#" PRIx64 "), crash point %" PRIu64 " after event "
		       "%" PRIu64 ", state %s: %s\n", v->round, v->round_seed, v->cp, v->ev,
		       v->state ? v->state : "-", v->what);
		if (v->image[0])
			printf("  image: %s\n", v->image);
	}
	if (cr->nviol > cr->nviols)
		printf("(%" PRIu64 " more violations not listed)\n", cr->nviol - cr->nviols);
	for (size_t i = 0; i < cr->nkinds; i++)
		printf("kind: %" PRIu64 " x %s\n", cr->kinds[i].n, cr->kinds[i].what);
	if (cr->nviol)
		printf("replay: delog crash --seed %" PRIu64 " --policy %s --profile %s --sector %u "
		       "--workload %s --round R (--save DIR keeps the images, which `delog recover "
		       "--backend sim IMAGE` replays exactly)\n", cr->seed,
		       delog_flush_policy_name(cr->policy),
		       profile_name(cr->profile), cr->sector, cr->workload);
}

static void print_json(struct crash *cr, double secs)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	json_str(&j, "policy", delog_flush_policy_name(cr->policy));
	json_str(&j, "profile", profile_name(cr->profile));
	json_u64(&j, "sector", cr->sector);
	json_str(&j, "workload", cr->workload);
	json_u64(&j, "seed", cr->seed);
	json_bool(&j, "exhaustive", cr->exhaustive);
	json_u64(&j, "states_target", cr->target);
	json_u64(&j, "rounds", cr->rounds);
	json_u64(&j, "crash_points", cr->cps);
	json_u64(&j, "exhaustive_points", cr->exh_cps);
	json_u64(&j, "max_unstable_sectors", cr->max_k);
	json_u64(&j, "states", cr->states);
	json_u64(&j, "distinct_images", cr->distinct);
	json_u64(&j, "recoveries", cr->recoveries);
	json_u64(&j, "full_opens", atomic_load(&cr->full_opens));
	json_u64(&j, "continuations", atomic_load(&cr->continuations));
	json_u64(&j, "protocol_writes", cr->protocol_events);
	json_u64(&j, "protocol_violations", cr->nprot);
	json_u64(&j, "violations", cr->nviol);
	if (cr->f_rounds) {
		json_obj_begin(&j, "log_full");
		json_u64(&j, "rounds", cr->f_rounds);
		json_u64(&j, "edge_crash_points", cr->f_edge_cps);
		json_u64(&j, "crash_points_75pct_live", cr->f_hi_cps);
		json_u64(&j, "releases", cr->f_bursts);
		json_u64(&j, "forces", cr->f_forces);
		json_u64(&j, "space_waits", cr->f_waits);
		json_u64(&j, "eagain_begin", cr->f_eagain_begin);
		json_u64(&j, "eagain_log", cr->f_eagain_log);
		json_u64(&j, "nowait_granted", cr->f_nowait_ok);
		json_u64(&j, "push_calls", cr->f_push_calls);
		json_u64(&j, "laps", cr->f_laps);
		json_u64(&j, "least_free_bytes", cr->f_min_free == UINT64_MAX ? 0 : cr->f_min_free);
		json_obj_end(&j);
	}
	json_obj_begin(&j, "coverage");
	json_u64(&j, "log_bytes_min", cr->cv_log_min == UINT64_MAX ? 0 : cr->cv_log_min);
	json_u64(&j, "log_bytes_max", cr->cv_log_max);
	json_u64(&j, "ring_bytes_min", cr->cv_ring_min == UINT64_MAX ? 0 : cr->cv_ring_min);
	json_u64(&j, "ring_bytes_max", cr->cv_ring_max);
	json_bool(&j, "sector_512", cr->cv_sectors & 1);
	json_bool(&j, "sector_4096", cr->cv_sectors & 2);
	json_u64(&j, "max_checkpoint_bytes", cr->cv_max_ck);
	json_dbl(&j, "max_checkpoint_rings", (double)cr->cv_max_ck_win / 1000.0);
	json_u64(&j, "images_checkpoint_over_ring", cr->cv_over_win);
	json_u64(&j, "images_checkpoint_over_2mib", cr->cv_over_2m);
	json_u64(&j, "laps", cr->cv_laps);
	json_u64(&j, "least_free_bytes", cr->cv_min_free == UINT64_MAX ? 0 : cr->cv_min_free);
	json_u64(&j, "edge_release_rounds", cr->cv_rel_edge);
	json_u64(&j, "tracking_rounds", cr->cv_track_rounds);
	json_u64(&j, "items_written", cr->cv_item_writes);
	json_u64(&j, "eagain", cr->cv_eagain);
	json_u64(&j, "nowait_granted", cr->cv_nowait_ok);
	json_u64(&j, "chains", cr->cv_chains);
	json_u64(&j, "sessions_min", cr->cv_chains ? cr->cv_sess_min : 0);
	json_u64(&j, "sessions_max", cr->cv_sess_max);
	json_u64(&j, "sessions", cr->cv_sess_total);
	json_u64(&j, "chains_ended_early", cr->cv_chain_cut);
	json_u64(&j, "version_crash_points", cr->cv_vcps);
	json_u64(&j, "max_versions", cr->cv_max_ver);
	json_u64(&j, "version_states", cr->cv_vstates);
	json_obj_end(&j);
	json_dbl(&j, "seconds", secs);
	json_arr_begin(&j, "violation_list");
	for (size_t i = 0; i < cr->nviols; i++) {
		const struct viol *v = &cr->viols[i];

		json_obj_begin(&j, NULL);
		json_u64(&j, "round", v->round);
		json_u64(&j, "round_seed", v->round_seed);
		json_u64(&j, "crash_point", v->cp);
		json_u64(&j, "event", v->ev);
		json_str(&j, "state", v->state);
		json_str(&j, "what", v->what);
		json_str(&j, "image", v->image[0] ? v->image : NULL);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_arr_begin(&j, "violation_kinds");
	for (size_t i = 0; i < cr->nkinds; i++) {
		json_obj_begin(&j, NULL);
		json_u64(&j, "count", cr->kinds[i].n);
		json_str(&j, "what", cr->kinds[i].what);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}

static int usage_err(const char *opt, const char *arg, const char *need)
{
	fprintf(stderr, "delog crash: %s: '%s': %s\n", opt, arg, need);
	usage(stderr);
	return TOOL_EXIT_USAGE;
}

int cmd_crash(int argc, char **argv)
{
	/* Long only: --states and --seed (-n is --dry-run and -s --size in every command). */
	enum { O_PROFILE = 256, O_SECTOR, O_FULL, O_SAVE, O_ROUND, O_STATES, O_SEED };
	static const struct option lopts[] = {
		{ "workload", required_argument, NULL, 'w' },
		{ "policy", required_argument, NULL, 'p' },
		{ "states", required_argument, NULL, O_STATES },
		{ "seed", required_argument, NULL, O_SEED },
		{ "profile", required_argument, NULL, O_PROFILE },
		{ "sector", required_argument, NULL, O_SECTOR },
		{ "exhaustive", no_argument, NULL, 'x' },
		{ "threads", required_argument, NULL, 't' },
		{ "jobs", required_argument, NULL, 'J' },
		{ "full-every", required_argument, NULL, O_FULL },
		{ "save", required_argument, NULL, O_SAVE },
		{ "round", required_argument, NULL, O_ROUND },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static struct crash crash_state; /* static: no leak on the early returns */
	struct crash *cr = &crash_state;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t v;
	int ch, err = 0, rc;
	double secs;

	memset(cr, 0, sizeof(*cr));
	cr->workload = "all";
	cr->policy = DELOG_FLUSH_SYNC;
	cr->target = 10000;
	cr->seed = 1;
	cr->sector = 4096;
	cr->full_every = 32;
	cr->f_min_free = UINT64_MAX;
	cr->jobs = ncpu > 0 ? (unsigned)(ncpu < 8 ? ncpu : 8) : 1;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "w:p:xt:J:jvh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'w': {
			bool ok = !strcmp(optarg, "all");

			for (size_t i = 0; i < NR_WL; i++)
				ok |= !strcmp(optarg, wl_names[i]);
			if (!ok)
				return usage_err("--workload", optarg,
						 "mixed, wrap, relog, small, full, random or all");
			cr->workload = optarg;
			break;
		}
		case 'p':
			if (delog_flush_policy_parse(optarg, &cr->policy))
				return usage_err("--policy", optarg, "sync, async, single or none");
			break;
		case O_STATES:
			if (parse_count(optarg, 1, UINT64_MAX / 2, &cr->target))
				return usage_err("--states", optarg, "a count >= 1");
			break;
		case O_SEED:
			if (parse_count(optarg, 0, UINT64_MAX, &cr->seed))
				return usage_err("--seed", optarg, "a number");
			break;
		case O_PROFILE:
			if (!strcmp(optarg, "strict"))
				cr->profile = IOL_SIM_STRICT;
			else if (!strcmp(optarg, "garble"))
				cr->profile = IOL_SIM_GARBLE;
			else if (!strcmp(optarg, "versions"))
				cr->profile = IOL_SIM_VERSIONS;
			else
				return usage_err("--profile", optarg, "strict, garble or versions");
			break;
		case O_SECTOR:
			if (parse_count(optarg, 512, 4096, &v) || (v != 512 && v != 4096))
				return usage_err("--sector", optarg, "512 or 4096");
			cr->sector_opt = (uint32_t)v;
			break;
		case 'x':
			cr->exhaustive = true;
			break;
		case 't':
			if (parse_count(optarg, 1, CR_MAX_CLIENTS, &v))
				return usage_err("--threads", optarg, "1..15");
			cr->threads = (unsigned)v;
			break;
		case 'J':
			if (parse_count(optarg, 1, 64, &v))
				return usage_err("--jobs", optarg, "1..64");
			cr->jobs = (unsigned)v;
			break;
		case O_FULL:
			if (parse_count(optarg, 0, UINT32_MAX, &v))
				return usage_err("--full-every", optarg, "a count (0: never)");
			cr->full_every = (unsigned)v;
			break;
		case O_SAVE:
			cr->save_dir = optarg;
			break;
		case O_ROUND:
			if (parse_count(optarg, 0, UINT32_MAX, &cr->round_no))
				return usage_err("--round", optarg, "a round number");
			cr->one_round = true;
			break;
		case 'j':
			cr->json = true;
			break;
		case 'v':
			cr->verbose = true;
			break;
		case 'h':
			help();
			return TOOL_EXIT_OK;
		default:
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "delog crash: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	if (cr->save_dir && mkdir(cr->save_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "delog crash: --save: %s: %s\n", cr->save_dir, strerror(errno));
		return TOOL_EXIT_FAIL;
	}
	cr->progress = isatty(STDERR_FILENO) && !cr->verbose;
	cr->verify = getenv("DELOG_CRASH_VERIFY") && *getenv("DELOG_CRASH_VERIFY") == '1';
	cr->t0 = now_ns();
	pthread_mutex_init(&cr->mu, NULL);
	pthread_mutex_init(&cr->viol_mu, NULL);
	pthread_cond_init(&cr->work_cv, NULL);
	pthread_cond_init(&cr->done_cv, NULL);
	/* Image buffers for the largest device a round can have. */
	cr->dev_max = JRNL_LOG_START + (!strcmp(cr->workload, "random") ||
					!strcmp(cr->workload, "all") ? CR_LOG_MAX : CR_LOG_BYTES);
	cr->sector = cr->sector_opt ? cr->sector_opt : 4096;
	cr->cv_log_min = cr->cv_ring_min = cr->cv_min_free = cr->cv_sess_min = UINT64_MAX;
	cr->old = malloc(cr->dev_max);
	cr->newimg = malloc(cr->dev_max);
	cr->h_sec = calloc(cr->dev_max / 512, sizeof(*cr->h_sec));
	cr->w = calloc(cr->jobs, sizeof(*cr->w));
	if (!cr->old || !cr->newimg || !cr->h_sec || !cr->w) {
		fprintf(stderr, "delog crash: out of memory\n");
		return TOOL_EXIT_FAIL;
	}
	for (unsigned i = 0; i < cr->jobs; i++) {
		struct worker *w = &cr->w[i];

		w->cr = cr;
		w->dev = sim_dev(cr->dev_max, cr->sector, seed_for(cr->seed, 0x3003, i), false, NULL);
		w->sector = cr->sector;
		w->shadow = w->dev ? iol_buf_alloc(w->dev, cr->dev_max) : NULL;
		if (!w->shadow) {
			fprintf(stderr, "delog crash: cannot open a sim disk for recovery\n");
			return TOOL_EXIT_FAIL;
		}
		memset(w->shadow, 0, cr->dev_max);
		if (pthread_create(&w->th, NULL, worker_main, w)) {
			fprintf(stderr, "delog crash: cannot start a recovery thread\n");
			return TOOL_EXIT_FAIL;
		}
		cr->nworkers++;
	}
	for (uint64_t r = cr->one_round ? cr->round_no : 0; cr->states < cr->target; r++) {
		uint64_t before = cr->states;

		if (cr->one_round && r != cr->round_no)
			break;
		err = run_round(cr, r);
		if (err) {
			fprintf(stderr, "delog crash: round %" PRIu64 ": %s\n", r, delog_strerror(err));
			break;
		}
		if (cr->states == before && cr->nviol)
			break; /* a workload that cannot run: reported */
	}
	progress(cr, true);
	pthread_mutex_lock(&cr->mu);
	cr->quit = true;
	pthread_cond_broadcast(&cr->work_cv);
	pthread_mutex_unlock(&cr->mu);
	for (unsigned i = 0; i < cr->nworkers; i++) {
		pthread_join(cr->w[i].th, NULL);
		iol_dev_close(cr->w[i].dev);
		free(cr->w[i].shadow);
		free(cr->w[i].dirty);
		free(cr->w[i].cand);
		free(cr->w[i].rc.it);
		free(cr->w[i].rc.txv);
	}
	secs = (double)(now_ns() - cr->t0) / 1e9;
	if (cr->json)
		print_json(cr, secs);
	else
		print_text(cr, secs);
	rc = err || cr->nviol ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
	for (size_t i = 0; i < cr->nviols; i++)
		free(cr->viols[i].state);
	free(cr->tab);
	free(cr->jobv);
	free(cr->stv);
	free(cr->choices);
	free(cr->old);
	free(cr->newimg);
	free(cr->h_sec);
	free(cr->ubuf);
	free(cr->ones);
	free(cr->touch);
	free(cr->chg);
	free(cr->cp.u);
	free(cr->cp.newd);
	free(cr->cp.garb);
	free(cr->cp.h_old);
	free(cr->cp.h_new);
	free(cr->cp.h_garb);
	free(cr->cp.ninter);
	free(cr->cp.voff);
	free(cr->cp.vdata);
	free(cr->cp.h_ver);
	free(cr->w);
	pthread_mutex_destroy(&cr->mu);
	pthread_mutex_destroy(&cr->viol_mu);
	pthread_cond_destroy(&cr->work_cv);
	pthread_cond_destroy(&cr->done_cv);
	return rc;
}
