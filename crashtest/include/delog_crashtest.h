/*
 * delog_crashtest.h - power-cut testing of an application that embeds delog
 * (libdelog-crashtest; docs/CRASHTEST.md walks through it).
 *
 * The question it answers: "after a power cut at any moment, does my recovery still hold
 * every reply I sent?"  The application gives four callbacks.  The library formats a log
 * on a simulated disk with a volatile cache, opens it with the application's options and
 * runs WORKLOAD on it from the threads it owns.  It delivers the disk's completions one at
 * a time in a seeded order and takes a crash point after every device event and every
 * acknowledgement.  At each point it builds crash states (each sector not yet durable
 * kept old, made new or torn, under the profiles asked for), recovers each image
 * read-only through the application's REPLAY into a fresh state of its own, and asks
 * CHECK whether that state keeps everything acknowledged before the cut.
 *
 * A failure comes with a handle, a file that holds the image's every sector choice and
 * the acknowledgements: delog_ct_replay rebuilds the same image and calls REPLAY and CHECK
 * once more, on the calling thread, without the workload (run it under a debugger).
 * delog_ct_minimise shrinks a handle to the fewest sectors that must be other than old
 * for CHECK to fail, and says which they are.
 *
 * Linking: libdelog-crashtest holds the whole of libdelog as well (one copy of the
 * engine, so the log the workload is given is the same code it calls); link a test
 * program with it instead of libdelog: `pkg-config --libs delog-crashtest`, or CMake's
 * delog::delog_crashtest.  It exports delog_* and delog_ct_* only.
 *
 * Thread safety: a campaign runs on the calling thread and the threads it starts; the
 * application's callbacks are called from those threads (WORKLOAD from its own,
 * STATE_NEW, REPLAY, CHECK and STATE_FREE from the recovery workers, several at a time
 * with jobs > 1, each on states of its own).  Independent campaigns may run at once.
 */
#ifndef DELOG_CRASHTEST_H
#define DELOG_CRASHTEST_H

#include <delog.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A session of the workload on one log: the handle WORKLOAD is given. */
typedef struct delog_ct_run delog_ct_run;

/* One acknowledgement: the application told the outside world TAG (a reply it sent),
 * which rests on checkpoint SEQ; THREAD is the workload thread that said so. */
struct delog_ct_ack {
	uint64_t tag;
	uint64_t seq;
	unsigned thread;
	unsigned session; /* the session of the run it was made in, from 0 */
};

/* What CHECK is told about the crash state it judges. */
struct delog_ct_cut {
	const struct delog_ct_ack *acks; /* acknowledged before the cut, in the order made */
	size_t nacks;
	uint64_t durable_seq; /* delog_durable_seq of the workload's log at the cut */
	const struct delog_recovery *recovery; /* what the read-only open of the image found */
	uint64_t run, point;                   /* where: run number and crash point in it */
};

/* The application under test.  Callbacks other than WORKLOAD and CHECK may be NULL. */
struct delog_ct_app {
	size_t size;      /* sizeof(struct delog_ct_app): set it first */
	void *arg;        /* passed to every callback */
	unsigned threads; /* workload threads per session, 1..64; 0: 1 */
	/* Drive @log from workload thread @thread (0..threads-1) and return 0, or a
	 * negative code, which stops the campaign (an application that cannot run is not a
	 * crash failure).  Call delog_ct_ack after each reply the application sends.  A
	 * session ends when every thread has returned; return soon after
	 * delog_ct_stopping says so.  Do not call delog_close: the library owns the log. */
	int (*workload)(void *arg, delog *log, delog_ct_run *run, unsigned thread);
	/* A fresh, empty recovered state (for REPLAY and CHECK, and for the workload of
	 * each session: delog_ct_state); NULL if it cannot make one (the campaign stops
	 * with -ENOMEM).  The callback itself may be NULL: no state. */
	void *(*state_new)(void *arg);
	void (*state_free)(void *arg, void *state);
	/* The application's recovery, called as delog_open calls delog_options.recover,
	 * with the state from STATE_NEW as its arg; a nonzero return fails that recovery,
	 * which is reported as a failure of the state. */
	delog_recover_fn replay;
	/* Judge a recovered @state (after REPLAY of the whole image) against @cut.  Return
	 * 0 if it keeps the application's promises, else nonzero with a reason written to
	 * @why (@whylen bytes; NUL-terminated).  It must not change @state: one state
	 * answers CHECK for every crash point that left the same image. */
	int (*check)(void *arg, void *state, const struct delog_ct_cut *cut, char *why,
		     size_t whylen);
};

/* delog_ct_options.profiles: what a sector not yet durable may become at the cut. */
#define DELOG_CT_STRICT 0x01u /* old or new (each sector alone: writes tear) */
#define DELOG_CT_GARBLE 0x02u /* also garbage: seeded random bytes */
#define DELOG_CT_ZEROES 0x04u /* also all zeroes (a device that zeroes a torn write) */
#define DELOG_CT_ONES 0x08u   /* also all 0xff */
#define DELOG_CT_COPY 0x10u   /* also the bytes of the sector before it (a misdirected write) */
#define DELOG_CT_EIO 0x20u    /* also unreadable: a read of it fails -EIO */
#define DELOG_CT_ALL 0x3fu

/* delog_ct_options.flags */
#define DELOG_CT_NO_MINIMISE 0x1u /* report failures without minimising them */
/* The serial mode: the session's threads move one at a time, in an order the seed fixes.
 * A workload thread waits for its turn at the entry of each delog_* call and at each
 * delog_ct_ack, any thread at each request it submits to the disk, and the controller
 * moves (lets one of them on, or delivers a completion) only when every thread of the
 * session sleeps.  So one seed gives one event trace (report.trace_hash), and a failure
 * found can be found again by rerunning the campaign with its seed.  Slower (it looks at
 * /proc/self/task between moves); it needs a workload that waits on no clock, a seconds
 * budget of 0, and a process whose other threads sleep while the campaign runs (Linux). */
#define DELOG_CT_SERIAL 0x2u

struct delog_ct_options {
	size_t size; /* sizeof(struct delog_ct_options): set it first (an older size,
		      * without the members after flags, is read as that version's) */
	/* The application's log options: flush, logbufs, logbsize, sector, cil_push_bytes,
	 * push and push_arg, DELOG_OPEN_TRACK_ITEMS.  Ignored: backend, create_size (see
	 * log_bytes), recover (REPLAY is), recovery, error, recover_to, the other flags.
	 * NULL: the defaults. */
	const struct delog_options *log;
	uint64_t log_bytes;    /* the log's size; 0: DELOG_LOG_MIN_BYTES (4 MiB) */
	uint64_t seed;         /* fixes the runs' device choices, delivery orders and states */
	uint64_t states;       /* budget: crash states checked; 0: 20000 */
	double seconds;        /* budget: wall time; 0: none */
	unsigned jobs;         /* recovery workers; 0: 1 */
	unsigned sessions;     /* sessions per run (each after a cut of the one before); 0: 2 */
	unsigned profiles;     /* DELOG_CT_* above; 0: DELOG_CT_ALL */
	unsigned stall_s;      /* watchdog: seconds with no I/O pending and no progress while
			      * the workload runs, before it is reported hung; 0: 30 */
	unsigned max_failures; /* stop after this many failing states; 0: 1 */
	const char *save_dir;  /* where failing handles are written; NULL: the current
				* directory */
	unsigned flags;        /* DELOG_CT_NO_MINIMISE, DELOG_CT_SERIAL */
	/* Write the event trace here (text, one line each: the serial mode's moves, then at
	 * each session's end its device events and acknowledgements); NULL: none.  The
	 * lines' hash is report.trace_hash either way. */
	const char *trace_path;
};

/* What a campaign did and found.  Members are only ever appended. */
struct delog_ct_report {
	size_t size; /* sizeof(struct delog_ct_report): set it first (an older size gets
		      * that version's members) */
	uint64_t runs, sessions;
	uint64_t points;           /* crash points taken */
	uint64_t points_by[4];     /* ... after: a submission, a completion, a flush made
				 * durable, an acknowledgement (a point may count twice) */
	uint64_t states;           /* crash states checked (STATES budget) */
	uint64_t images;           /* distinct images recovered */
	uint64_t checks;           /* CHECK calls */
	uint64_t acks;             /* acknowledgements made */
	uint64_t unstable_max;     /* most sectors not durable at one point */
	uint64_t unstable_hist[8]; /* points with 0, 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64+ */
	uint64_t by_profile[6];    /* states with a sector of: new, garbage, zeroes, 0xff,
				 * a copy, unreadable */
	uint64_t wraps;            /* records split at the log's end: a campaign that never
				 * wrapped says so here */
	uint64_t bound_flushes, cover_flushes;     /* the journal's space flushes */
	uint64_t gate_runs, inline_runs, fua_runs; /* runs through the flush gate, with an
						    * inline flush, with native FUA */
	uint64_t space_waits; /* delog_stats.space_waits, summed over sessions */
	uint64_t failures;    /* failing states found */
	double seconds;
	uint64_t gate_generations; /* flushes the gated runs' flush gate carried out */
	uint64_t gate_inline;      /* ... of them inline, on a waiter's thread */
	uint32_t sector;           /* the log's sector size, as run */
	int policy;                /* the flush policy run (enum delog_flush_policy) */
	char handle[4096];         /* the first failure's handle ("" if none) */
	char minimal[4096];        /* its minimised handle ("" if not minimised) */
	char why[512];             /* the first failure's reason */
	char state[512];           /* its minimal state, in words */
	uint64_t trace_hash;       /* a hash of the event trace (options.trace_path): two
				    * serial campaigns with one seed give the same */
};

/*
 * Run a campaign: runs of the workload, each in o->sessions sessions, until the states
 * or seconds budget is spent or o->max_failures failures were found.  Each failure is
 * written as a handle file in o->save_dir ("ct-SEED-rRUN-pPOINT-I.ctf") and, unless
 * DELOG_CT_NO_MINIMISE, minimised into "…-min.ctf"; @rep (may be NULL) tells what was
 * covered and the first failure.  Returns 0 when the campaign ran (failures or not:
 * see rep->failures), -EINVAL for bad options, the workload's own error, -ETIMEDOUT
 * when the workload hung (rep->why names the threads that did not return and the
 * public call each entered last; they are left running, so the process should exit),
 * -ENOMEM, -EIO and other -errno.  The reason of a refusal is also in delog_errmsg().
 */
int delog_ct_campaign(const struct delog_ct_app *app, const struct delog_ct_options *o,
		      struct delog_ct_report *rep);

/* Acknowledge: the application has told the outside world @tag, resting on checkpoint
 * @seq.  Every crash point taken after this call returns holds it in cut->acks.
 * Returns 0 or -ENOMEM.  Any workload thread. */
int delog_ct_ack(delog_ct_run *run, uint64_t tag, uint64_t seq);

/* The state REPLAY built when this session's log was opened (empty in the first
 * session; NULL without STATE_NEW): what the application recovered after the previous
 * session's cut.  Owned by the library; shared by the session's threads. */
void *delog_ct_state(const delog_ct_run *run);
/* This run's number and the session's number in it (from 0). */
uint64_t delog_ct_run_number(const delog_ct_run *run);
unsigned delog_ct_session(const delog_ct_run *run);
/* True once the campaign's budget is spent or it found what it looks for: return. */
bool delog_ct_stopping(const delog_ct_run *run);
/* A seed for workload thread @thread of this session, derived from the campaign's. */
uint64_t delog_ct_seed(const delog_ct_run *run, unsigned thread);

/* Rebuild the image of handle file @path and run @app's STATE_NEW, REPLAY and CHECK on
 * it once, on this thread.  Returns 1 when it fails (the reason in @why), 0 when it
 * passes, DELOG_ECORRUPT for a file that is no handle (the reason in delog_errmsg()),
 * -ENOENT, -ENOMEM, -EIO.  @why may be NULL. */
int delog_ct_replay(const char *path, const struct delog_ct_app *app, char *why, size_t whylen);

/* Shrink failing handle @path: every sector that need not differ from the media for the
 * failure to stay is made old, and @out (a new handle) written.  @state (may be NULL)
 * receives the remaining sectors in words ("sector 812 new, 813 old: 2 of 9 unstable
 * sectors"). Returns 0, 1 if @path does not fail at all (nothing written), or a code as
 * delog_ct_replay. */
int delog_ct_minimise(const char *path, const struct delog_ct_app *app, const char *out,
		      char *state, size_t statelen);

/* The state handle @path holds, in words, as delog_ct_minimise gives it.  0 or a code. */
int delog_ct_describe(const char *path, char *state, size_t statelen);

#ifdef __cplusplus
}
#endif
#endif
