/*
 * crash.h - `delog crash`: power cuts at every device event and every acknowledgement of
 * a seeded multi-threaded workload on the simulated disk, each crash state recovered and
 * checked by an oracle (the crash-safety contract G1-G4 and G6-G8, and the tests T1 and
 * T3, of docs/TESTING.md).
 *
 * What it proves.  For every crash state it checks, the log that recovery hands back is
 *   - complete: every checkpoint the durable watermark (delog_durable_seq) had reached
 *     and every transaction whose force had returned, when the power was cut, is there
 *     (acknowledged is a subset of recovered; G1), unless the workload had released it.
 *     A client acknowledges a forced transaction either when delog_force returns or, for
 *     one in two, when the eventfd wake-up after its delog_force_nowait shows the
 *     watermark past it (workload.c force_nowait_wait), as an event loop does;
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
 * does (engine_open_dev: recovery with stamping, the writer, the push thread), must
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
 * --exhaustive), else the structured states (all old, all new, prefixes in submission
 * and in completion order, omit-one, each write alone in and alone out, each sector
 * garbled) sampled together with seeded random states.
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
 * Liveness (liveness.c).  Every API call of a session's threads is bounded: a watchdog
 * reports a call that has not returned while the sim had nothing pending for
 * --stall-bound seconds, with who waits for what, then forces the log from outside and
 * stops the round.  The liveness workload (--workload liveness) gives it work: only the
 * push callback frees space, big under-reserved transactions, and before each session of
 * its chains open/close cycles without writes, which must leave no lasting log use.
 *
 * Determinism.  The seed fixes every round's workload, every transaction's contents, the
 * delivery order and the states sampled; the interleaving of the client threads is the
 * OS's, so a rerun explores the same space without promising the same events.  Each
 * violation therefore prints its round, seed, crash point, trace position and state, and
 * --save DIR writes the pre-recovery image, a log file that `delog recover --dry-run FILE`
 * replays exactly.
 *
 * The parts (tools/crash/): spec.c (the workloads, each transaction's contents and the
 * payloads, from the seed), workload.c (the session threads that commit them), oracle.c (what a recovered image must be), points.c (crash points, the fault model,
 * and the states made at each), images.c (the image cache and the recovery workers),
 * round.c (a round: sessions on a fresh log), liveness.c (the watchdog and the
 * open/close cycles), command.c (the command), and array.c (grow and sort arrays;
 * array.h).  This header holds the limits, the types they share and the
 * functions one calls in another; each part's own helpers stay static in it.
 */
#include "tools.h"
#ifndef DELOG_TOOLS_CRASH_H
#define DELOG_TOOLS_CRASH_H

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

#include "array.h"
#include "ct_dev.h" /* ct_sim_dev, CT_DEV_*: the sim disk as crash testing opens it */
#include "engine.h"
#include "io_sim.h"
#include "jrnl.h"

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix64(*s);
}

static inline uint64_t rnd_in(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rnd(s) % (hi - lo + 1);
}

static inline uint64_t seed_for(uint64_t seed, uint64_t a, uint64_t b)
{
	return mix64(seed ^ mix64(a * 0x9e3779b97f4a7c15ull + mix64(b + 0x5eed)));
}

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* A 64-bit hash of @len bytes (two multiply-rotate lanes, 16 bytes a step). */
static inline uint64_t hash_bytes(const void *p, size_t len, uint64_t seed)
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
static inline uint64_t sector_hash(const void *p, uint32_t sector, uint64_t idx)
{
	return mix64(hash_bytes(p, sector, 0x5ec7) + idx * 0x9e3779b97f4a7c15ull);
}

#define CR_LOG_BYTES DELOG_LOG_MIN_BYTES /* the format's least */
#define CR_LOG_MAX (16ull << 20)         /* the random workload's largest log */
#define CR_SESSIONS_MAX 6u
#define CR_MAX_CLIENTS 15u /* workload clients; slot CR_MAX_CLIENTS: continuation */
#define CR_SLOTS (CR_MAX_CLIENTS + 1u)
#define CR_MAX_ITEMS 6u
#define CR_CONT_TXS 3u
#define CR_EXH_K 12u /* enumerate all 2^k up to this many unstable sectors */
#define CR_MAX_PER_POINT 4096u
#define CR_MAX_VIOL_KEPT 64u
#define CR_STALL_NS (120ull * 1000000000ull)
#define CR_WD_BOUND_S 15u         /* --stall-bound default: seconds of an idle disk */
#define CR_IDLE_SLACK (64u << 10) /* log use open/close cycles may add, in all */

#define PL_MAGIC 0x4c504352u /* "RCPL" */
#define IDX_RELOG 0xfffeu
#define IDX_SHARED 0xfffdu
#define KEY_UNIQUE(c, n, i) ((1ull << 60) | ((uint64_t)(c) << 48) | ((uint64_t)(n) << 16) | (i))
#define KEY_RELOG(c) ((2ull << 60) | (uint64_t)(c))
#define KEY_SHARED(j) ((3ull << 60) | (uint64_t)(j))

struct wl {
	const char *name;
	unsigned clients;
	uint32_t txs;       /* per client */
	unsigned max_items; /* unique items per transaction: 1..max_items */
	uint32_t small_max; /* most items: 32..small_max bytes */
	uint32_t big_min, big_max;
	unsigned big_1in; /* 0: no big items */
	unsigned force_1in;
	unsigned shared_1in; /* 0: no shared keys */
	unsigned nshared;
	unsigned release_1in; /* 0: only the push callback releases */
	unsigned logbufs;
	uint32_t logbsize;
	bool full;           /* the log-full workload: nobody releases but the releaser */
	unsigned nowait_1in; /* transactions that begin with DELOG_TX_NOWAIT */
	/* Drawn per round by the random workload (the others keep the defaults). */
	uint64_t log_bytes;   /* log size */
	uint32_t sector;      /* sector size of the round */
	uint64_t cil_push;    /* delog_options.cil_push_bytes (0: the default) */
	bool releaser;        /* the releaser thread frees space, only at the full edge */
	unsigned rel_all_1in; /* its bursts that release everything durable */
	bool track;           /* DELOG_OPEN_TRACK_ITEMS: item_written, per-key oracle */
	unsigned written_1in; /* durable transactions whose unique items are written */
	unsigned sessions;    /* sessions of the chain: crash, reopen, continue */
	uint64_t window;      /* the unflushed bound named at format (jrnl_format_opts;
			       * 0: the default), drawn by random and window */
	/* The liveness workload (zero elsewhere, so the others draw what they drew). */
	unsigned under_1in; /* blocking transactions reserving less than they log */
	bool under_first;   /* ... only their first item (else all but the last) */
	unsigned idle_max;  /* open/close cycles without writes before a session */
};

/* The workloads by name (spec.c), for --workload and the "all" rotation. */
#define NR_WL 8u
extern const char *const wl_names[NR_WL];

struct pl_hdr {
	uint32_t magic;
	uint16_t client;
	uint16_t idx;    /* item index, IDX_RELOG or IDX_SHARED */
	uint32_t n;      /* transaction counter of the client, from 1 */
	uint16_t m;      /* unique items of the transaction */
	uint16_t shared; /* shared keys the transaction logs (bitmask) */
	uint32_t len;    /* item bytes */
	uint32_t round;
	uint64_t check; /* hash of the key and the item with check = 0 */
};
_Static_assert(sizeof(struct pl_hdr) == 32, "payload header");

struct txspec {
	unsigned m;
	uint32_t len[CR_MAX_ITEMS];
	uint16_t shared;
	bool relog_twice, force;
	bool nowait, under;   /* DELOG_TX_NOWAIT; reserve only the first item (so
				   * delog_tx_log must take more space, which may fail too) */
	unsigned release_lag; /* 0: no release; else lag + 1 */
};

/* The watchdog's view of one thread's API call (liveness.c): @since 0 when none. */
struct wdcall {
	_Atomic uint64_t since; /* now_ns() at the call; written last, cleared at return */
	_Atomic uint64_t q0;    /* round.wd_quiet at the call */
	_Atomic uint64_t arg;   /* seq, bytes or key, as the call's name says */
	_Atomic(const char *) what;
};

/* Watchdog slots: the clients', then the session's own thread (open, close, the idle
 * cycles), the releaser and the push callback. */
#define WD_COORD CR_MAX_CLIENTS
#define WD_REL (CR_MAX_CLIENTS + 1u)
#define WD_PUSH (CR_MAX_CLIENTS + 2u)
#define WD_SLOTS (CR_MAX_CLIENTS + 3u)

struct round {
	uint64_t seed;
	uint32_t id;
	uint32_t sector;
	struct wl wl;
	enum delog_flush_policy policy;
	bool gate;          /* the disk is opened with the flush gate (flush_gate) */
	unsigned dev_flags; /* CT_DEV_*: the gate, and in gated rounds its variants */
	uint64_t log_bytes, dev_bytes;
	uint64_t window_bytes; /* the unflushed bound the format wrote (its geometry's) */
	unsigned session;      /* of the chain, from 0 */
	uint32_t start_n[CR_MAX_CLIENTS];         /* first transaction of this session */
	_Atomic uint64_t *seqs[CR_MAX_CLIENTS];   /* [1..txs]: checkpoint of the commit */
	_Atomic uint8_t *sess[CR_MAX_CLIENTS];    /* [1..txs]: session of that commit */
	_Atomic uint8_t *written[CR_MAX_CLIENTS]; /* [1..txs]: unique items item_written
						   * (intent: set before the calls) */
	_Atomic uint64_t item_writes;
	_Atomic uint32_t submitted[CR_MAX_CLIENTS];
	_Atomic uint32_t acked[CR_MAX_CLIENTS];
	_Atomic uint64_t released; /* intent: set before delog_release */
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
	char err[256]; /* first workload failure */
	/* The full workload. */
	_Atomic uint64_t blocked_since[CR_MAX_CLIENTS]; /* ns: in a blocking tx_begin or tx_log */
	_Atomic uint64_t eagain_begin, eagain_log, nowait_ok, bursts, forces_rel;
	_Atomic uint64_t edeadlk; /* delog_tx_log -EDEADLK (growers stuck: space.c S5) */
	_Atomic uint64_t push_calls;
	uint64_t space_waits; /* delog_stats at the end */
	uint64_t head_cycle;
	/* Sessions: what the cut point had acknowledged, for the next session's recovery. */
	uint64_t cut_durable, cut_released, cut_must_lo;
	uint32_t cut_acked[CR_MAX_CLIENTS];
	bool chain_end; /* the chain cannot go on (a recovery broke the oracle) */
	/* Liveness (liveness.c): every API call of the session's threads, and the time the
	 * disk had nothing to deliver (ns, summed by the watchdog). */
	struct wdcall wd[WD_SLOTS];
	_Atomic uint64_t wd_quiet;
	_Atomic uint64_t stalls, rescues;
	unsigned idle_cycles; /* open/close cycles without writes this round */
	uint64_t idle_growth; /* the most log use they added (bytes) */
	/* Coverage from the journal (jrnl_log_stats), summed over the sessions as of the
	 * last crash point each took. */
	uint64_t j_bound, j_cover, j_wraps, j_gate_gens, j_gate_errs, j_gate_inline;
};

struct summary {
	int err; /* recovery's return */
	bool ok;
	uint64_t nck, lo, hi;
	uint32_t last_n[CR_SLOTS]; /* last transaction recovered per client (0: none) */
	uint64_t max_ck;           /* item bytes of the largest checkpoint recovered */
	char what[200];            /* first problem found */
};

struct cont { /* the continuation client's transactions */
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
	struct rtx *txv; /* transactions of the checkpoint being checked */
	size_t txcap;
	uint64_t cont_base; /* with cont: checkpoints after this one are the
				   * continuation's (the workload's records stop there) */
};

/* What a garbled sector (choice 2) reads back as, one kind per state (the state's
 * choice[k]): random bytes, zeroes, 0xff, the old bytes of its neighbour, or a read
 * error (its old bytes, unreadable until written: iol_sim_set_unreadable). */
enum cr_fill {
	CR_FILL_RANDOM,
	CR_FILL_ZERO,
	CR_FILL_ONES,
	CR_FILL_COPY,
	CR_FILL_EIO,
	CR_NFILL
};
extern const char *const cr_fill_name[CR_NFILL];

struct cpoint {
	uint64_t id;  /* unique across rounds (workers key their base on it) */
	uint64_t seq; /* crash point number in the round */
	uint64_t ev;  /* trace events before it */
	size_t k;
	uint64_t *u;         /* unstable sectors, ascending */
	unsigned char *newd; /* k sectors: newest contents */
	unsigned char *garb; /* garble profile: fill f of sector i at (f * k + i) sectors */
	uint64_t *h_old, *h_new, *h_garb; /* h_garb: CR_NFILL * k, as garb */
	/* versions profile: sector i's intermediate versions 1..ninter[i] (iol_sim numbering)
	 * are vdata/h_ver[voff[i] .. voff[i] + ninter[i]); choice 3 + j - 1 picks version j */
	uint32_t *ninter;
	size_t *voff, nvtot;
	unsigned char *vdata;
	uint64_t *h_ver;
	uint64_t h_base;          /* hash of the media image */
	const unsigned char *old; /* the media image */
	uint64_t durable, released;
	uint64_t must_lo; /* item tracking: oldest checkpoint holding the newest
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
	unsigned char *shadow; /* what dev holds */
	uint64_t base_cp;      /* cp id the dirty list refers to */
	uint32_t base_round;
	uint64_t base_epoch; /* media epoch (round or session) of base_cp */
	uint32_t sector;     /* of dev */
	uint64_t *dirty;     /* sectors where shadow != that cp's media */
	size_t ndirty, dcap;
	uint64_t *cand;
	size_t ccap;
	struct jrnl_geom g;
	struct rctx rc;
	uint8_t *tmpchoice;
	bool eio; /* the disk holds unreadable sectors (CR_FILL_EIO) */
};

struct crash {
	/* options */
	const char *workload;
	enum delog_flush_policy policy;
	uint64_t target, seed;
	enum iol_sim_crash_profile profile;
	int fill;                       /* --fill: an enum cr_fill, or -1: each state draws one */
	uint64_t fill_states[CR_NFILL]; /* states with a garbled sector, by fill */
	uint32_t sector;                /* this round's (the option's, unless random draws it) */
	uint32_t sector_opt;            /* --sector; 0: 4096, or drawn per round by random */
	uint64_t dev_max;               /* image buffers: the largest device of any round */
	uint64_t epoch;                 /* media replaced wholesale (new round or session) */
	bool exhaustive, json, verbose, progress;
	unsigned threads, jobs, full_every;
	unsigned cover_delay_ms; /* --cover-delay: engine_delay_cover on the full opens */
	const char *save_dir;
	bool one_round, verify;
	uint64_t round_no;
	/* counters */
	uint64_t states, distinct, recoveries, cps, exh_cps, max_k, rounds;
	_Atomic uint64_t full_opens, continuations, full_seq, full_gated;
	uint64_t protocol_events, nviol, nprot;
	/* the full workload */
	uint64_t f_rounds, f_edge_cps, f_bursts, f_forces, f_eagain_begin, f_eagain_log;
	uint64_t f_nowait_ok, f_waits, f_push_calls, f_min_free, f_laps, f_hi_cps, f_used;
	uint64_t last_cp_t, f_last_eagain;
	/* coverage, every workload (print_text's "coverage" lines) */
	uint64_t cv_log_min, cv_log_max, cv_ring_min, cv_ring_max, cv_min_free, cv_laps;
	uint64_t cv_win_min, cv_win_max, cv_win_named; /* windows run; rounds naming one */
	uint64_t cv_max_ck, cv_max_ck_win, cv_over_win, cv_over_2m, cv_track_rounds;
	uint64_t cv_gate_rounds; /* rounds whose disk had the flush gate */
	uint64_t cv_item_writes, cv_eagain, cv_nowait_ok, cv_chains, cv_sess_min, cv_sess_max;
	uint64_t cv_chain_cut, cv_sess_total, cv_vcps, cv_vstates, cv_max_ver, cv_rel_edge;
	uint64_t cv_bound, cv_cover, cv_wraps, cv_gate_gens, cv_gate_errs, cv_cps_bound;
	uint64_t cv_gate_inline, cv_inline_rounds, cv_keep_fua_rounds;
	uint64_t cv_cps_cover, cv_stalls, cv_rescues, cv_idle_cycles, cv_idle_growth;
	uint64_t cv_edeadlk;
	uint64_t cv_first_stall_states; /* states checked when the first stall was seen */
	double cv_first_stall_s;        /* and the run's seconds then */
	bool cv_stall_seen;
	unsigned stall_bound; /* --stall-bound, seconds */
	unsigned cv_sectors;  /* bit 0: 512, bit 1: 4096 */
	struct viol viols[CR_MAX_VIOL_KEPT];
	size_t nviols;
	struct {
		char what[120];
		uint64_t n;
	} kinds[32]; /* violations by message, numbers
							    * folded to '#' */
	size_t nkinds;
	pthread_mutex_t viol_mu;
	uint64_t t0;
	/* this round */
	struct round *rd;
	uint64_t budget; /* states per crash point */
	struct cpoint cp;
	uint64_t cp_ids;
	unsigned char *old; /* media as of the last refresh */
	uint64_t *h_sec;    /* per-sector hashes of old */
	uint64_t h_total;
	unsigned char *newimg;
	uint64_t *ubuf;
	size_t ucap;
	uint8_t *ones;
	size_t ones_cap;
	/* incremental snapshots */
	uint64_t *touch; /* sectors written since the last media refresh */
	size_t ntouch, touchcap;
	bool new_dirty; /* newest contents may have changed since the last choose */
	struct mchg {
		uint64_t cp, sector;
	} * chg; /* media changes this round, by crash point */
	size_t nchg, chgcap;
	/* entries (per round) */
	struct entry **tab;
	size_t tab_cap, tab_n;
	/* jobs */
	struct job *jobv;
	size_t njobs, jobcap;
	_Atomic size_t next_job;
	struct entry **stv; /* the entry of each state of the current point */
	uint8_t *choices;   /* states x k */
	size_t stcap, chcap, nst;
	/* workers */
	struct worker *w;
	unsigned nworkers, wdone;
	uint64_t gen;
	bool quit;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
};

struct wr {
	uint64_t id, first, nr;
	uint32_t opf;
};

struct ctl {
	size_t cursor;      /* trace events processed */
	uint64_t *wcount;   /* writes to each log sector since the log opened */
	uint64_t *sec_wid;  /* latest write request covering each device sector */
	uint64_t *wid_done; /* completion event of each request (0: in flight) */
	size_t wid_cap;
	struct wr *fl; /* writes in flight */
	size_t nfl, flcap;
	bool media_dirty;
	struct iol_sim_event ev[512];
};

struct pointbuf {
	unsigned char *tmp; /* media read-back */
};

struct client {
	struct round *rd;
	unsigned c;
	pthread_t th;
	_Atomic bool *stop;
};

struct coord {
	struct round *rd;
	struct crash *cr;
	_Atomic bool stop;
	/* The watchdog (liveness.c): its thread, and the handle it may force to set stalled
	 * callers free (published by coord_main only while the clients run). */
	pthread_t wd_th;
	bool wd_started;
	_Atomic bool wd_quit;
	pthread_mutex_t wd_mu;
	delog *wd_log;
};

#define CR_FULL_WAIT_NS 50000ull /* a committer waiting this long: log full */
#define CR_FULL_STUCK_NS (20ull * 1000000000ull)

/* spec.c */
void wl_pick(const char *name, uint64_t seed, unsigned threads, uint32_t sector, struct wl *w);
void tx_spec(const struct round *rd, unsigned c, uint32_t n, struct txspec *t);
void pl_make(const struct round *rd, uint64_t key, unsigned c, uint32_t n, unsigned idx, unsigned m,
	     uint16_t shared, uint32_t len, unsigned char *buf);
bool pl_read(const struct round *rd, uint64_t key, const void *data, uint32_t len,
	     struct pl_hdr *h);

/* workload.c */
void wl_fail(struct round *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *coord_main(void *arg);

/* oracle.c */
void cr_bad(struct summary *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t cr_rec_seq(struct round *rd, unsigned c, uint32_t n);
void check_ckpt(struct rctx *x, uint64_t seq, size_t nitems_hdr, const struct ritem *in, size_t n);
int cr_jrnl_cb(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v, size_t n);
int cr_delog_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		size_t n);
void summary_finish(struct rctx *x);
void viol_add(struct crash *cr, const struct cpoint *cp, const uint8_t *choice, size_t k,
	      const char *what, const unsigned char *image);
bool cr_judge(const struct round *rd, const struct summary *s, uint64_t durable, uint64_t released,
	      uint64_t must_lo, const uint32_t *acked, char *msg, size_t len);

/* points.c */
void trace_step(struct crash *cr, struct ctl *t, size_t L, uint64_t tail, bool known);
uint64_t cr_read_durable(struct round *rd);
int crash_point(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t round_cp);

/* images.c */
struct entry *cache_get(struct crash *cr, uint64_t hash, bool *created);
void cache_clear(struct crash *cr);
void *worker_main(void *arg);
void run_jobs(struct crash *cr);
unsigned char *state_image(struct crash *cr, const uint8_t *choice);
void check_state(struct crash *cr, const struct entry *e, const uint8_t *choice);

/* liveness.c */
static inline void wd_enter(struct round *rd, unsigned slot, const char *what, uint64_t arg)
{
	struct wdcall *w = &rd->wd[slot];

	atomic_store(&w->what, what);
	atomic_store(&w->arg, arg);
	atomic_store(&w->q0, atomic_load(&rd->wd_quiet));
	atomic_store(&w->since, now_ns());
}

static inline void wd_leave(struct round *rd, unsigned slot)
{
	atomic_store(&rd->wd[slot].since, 0);
}

int wd_start(struct coord *co);
void wd_stop(struct coord *co);
void wd_publish(struct coord *co, delog *log);
int idle_cycles(struct coord *co, const struct delog_options *o);

/* round.c */
void cr_progress(struct crash *cr, bool end);
int run_round(struct crash *cr, uint64_t r);

#endif /* DELOG_TOOLS_CRASH_H */
