/*
 * recover_rec.h - what recovery's files share, and no other file includes: the run's
 * state (struct rctx), addresses, and one record's check and damage report
 * (recover_rec.c).  recover.c finds the head and the tail, checks past the head and
 * stamps; recover_pass.c is step 3, the main pass, which recover.c calls.
 *
 * Positions are addresses, lap * N + sector (recover.c says why).  jrnl_rcv_* are
 * recovery's own functions, shared by its files and by no other.
 */
#ifndef DELOG_JOURNAL_RECOVER_REC_H
#define DELOG_JOURNAL_RECOVER_REC_H

#include "format.h"
#include "jrnl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest record jrnl_rec_check accepts: H and P each up to JRNL_MAX_LOGBSIZE. */
#define MAXREC_BYTES (2u * JRNL_MAX_LOGBSIZE)
/* Chained reads the main pass keeps outstanding, at most (jrnl_recover_opts). */
#define INFLIGHT_MAX 16u
/* Beyond enum jrnl_rec_verdict: a record that checks out but belongs to another lap. */
#define REC_WRONG_LAP 100

/* What one record's header says, with its position as addresses. */
struct rinfo {
	uint64_t a, end; /* addresses of its first sector and one past its last */
	uint32_t h, p, len, num_ops;
	uint64_t lsn, tail_lsn, durable_lsn, prev_lsn;
};

/* A buffer holding the log sectors at addresses [lo, hi), for the backward searches. */
struct win {
	unsigned char *buf;
	uint64_t cap; /* sectors */
	uint64_t lo, hi;
};

/* One run of recovery: set up by jrnl_recover, filled in step by step. */
/* Checkpoints held between the passes (recover_hold.c R16). */
struct rheld;
struct hmap;
struct rhold {
	struct rheld *first, *last;
	struct hmap *maps;    /* the arena's mappings */
	unsigned char *at;    /* the free part of the newest one ... */
	size_t left;          /* ... and its bytes */
	uint64_t bytes, peak; /* bytes mapped now, and at most */
	uint64_t budget;
	bool over; /* the budget ran out: the second pass reads the log */
	/* the helper that maps the next mapping ahead (recover_hold.c) */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hmap *ready;
	bool helper, asked, stop;
	bool next_asked; /* the pass asked for the mapping after the current one */
};

struct rctx {
	struct iol_dev *dev;
	const struct jrnl_geom *g;
	struct jrnl_report *rep;
	jrnl_replay_fn replay;
	jrnl_rec_fn on_record;
	jrnl_op_fn on_op;
	void *priv;
	uint32_t S;           /* sector bytes */
	uint64_t N;           /* log sectors */
	uint64_t maxrec;      /* MAXREC_BYTES in sectors */
	uint64_t window;      /* the writer's unflushed bound in sectors, at most N / 2 */
	size_t chunk;         /* bytes per chained read */
	uint64_t cap;         /* chunk in sectors */
	unsigned inflight;    /* chained reads kept outstanding by the main pass */
	unsigned per_req;     /* segments per request (iol_max_segs) */
	uint64_t replay_to;   /* jrnl_recover_opts.replay_to (0: every checkpoint) */
	uint64_t replay_from; /* jrnl_recover_opts.replay_from (0: every checkpoint) */
	uint64_t from;        /* where the main pass starts: T, or a follower's record (R15) */
	bool salvage;         /* jrnl_recover_opts.salvage (recover.c R12) */
	unsigned char *sec;   /* one sector, for probes */
	struct win win;

	uint64_t hc0;      /* where the cycles change (before the hole scan) */
	uint64_t hc;       /* provisional head: hc0, or the first hole before it */
	uint64_t E, T, D;  /* settled head, tail, durable point */
	uint64_t seen_end; /* end of the last valid record found past E */
	bool have_last;
	bool no_record;        /* step 1 found no valid record of any lap in the log */
	struct rinfo last;     /* L */
	uint64_t corrupt_a;    /* address of the record holding the first corruption */
	bool have_verified;    /* a complete checkpoint was verified ... */
	uint64_t verified_seq; /* ... and this was the last one (handed over or held back) */
	uint64_t started_seq;  /* the highest START seq of a verified record (0: none) */
	bool salvaged;         /* salvage: the first corruption ended the log (R12) ... */
	uint64_t salvage_a;    /* ... at this address: the damaged record's, or E */
	uint8_t *bad;          /* a bit per sector that could not be read (R14), or NULL */
	bool bad_lost;         /* no memory for that map: any sector may be one */
	bool live;             /* a writer may be writing the log (recover.c R13) */
	bool handing;          /* replay or an observer was reached: no second run */
	uint64_t hold_budget;  /* jrnl_recover_opts.hold_bytes, resolved */
	struct rhold *hold;    /* the first pass with a replay callback: what it keeps */
};

/* recover_hold.c */
void jrnl_rcv_hold_add(struct rhold *h, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		       size_t n, const unsigned char *base, size_t len);
int jrnl_rcv_hold_hand_over(struct rctx *r, struct rhold *h);
void jrnl_rcv_hold_free(struct rhold *h);

/* Laps count cycles without the skipped magic; lap 0 is cycle 0, "never written". */
static inline uint64_t jrnl_rcv_cycle_lap(uint32_t c)
{
	return c > JRNL_REC_MAGIC ? (uint64_t)c - 1 : c;
}

static inline uint32_t jrnl_rcv_lap_cycle(uint64_t lap)
{
	return (uint32_t)(lap >= JRNL_REC_MAGIC ? lap + 1 : lap);
}

/* Device offset of the sector at address @a. */
static inline uint64_t jrnl_rcv_dev_off(const struct rctx *r, uint64_t a)
{
	return r->g->log_start + (a % r->N) * r->S;
}

/* The LSN of address @a. */
static inline uint64_t jrnl_rcv_addr_lsn(const struct rctx *r, uint64_t a)
{
	return jrnl_lsn(jrnl_rcv_lap_cycle(a / r->N), (uint32_t)(a % r->N));
}

/* The address of @lsn; false if it names no sector of this log. */
static inline bool jrnl_rcv_lsn_addr(const struct rctx *r, uint64_t lsn, uint64_t *a)
{
	uint32_t c = jrnl_lsn_cycle(lsn), s = jrnl_lsn_sector(lsn);

	if (s >= r->N || c == JRNL_REC_MAGIC)
		return false;
	*a = jrnl_rcv_cycle_lap(c) * r->N + s;
	return true;
}

/* ---- recover_rec.c ---- */

/* Read the sectors at addresses [a, a + n) into @buf in address order (split at the
 * physical end).  A sector the device cannot read (-EIO) reads as zeroes and is
 * recorded (jrnl_rcv_unreadable); other errors are returned. */
int jrnl_rcv_read(struct rctx *r, uint64_t a, uint64_t n, void *buf);
/* Note the sector at address @a as unreadable, once however often it is read. */
void jrnl_rcv_unreadable(struct rctx *r, uint64_t a);
/* Does [a, e) hold a sector noted unreadable?  *@at: the first. */
bool jrnl_rcv_any_unreadable(const struct rctx *r, uint64_t a, uint64_t e, uint64_t *at);

/* The first corruption found, for the report (every later call returns the first's code);
 * @field: the on-disk field found wrong ("rec.crc", "op.type"; "" when no one field is). */
__attribute__((format(printf, 6, 7))) int jrnl_rcv_corrupt(struct rctx *r, int code, uint64_t a,
							   uint64_t off, const char *field,
							   const char *fmt, ...);
/* Sectors the record starting at @p claims, or 1 if it can be no record header. */
uint64_t jrnl_rcv_rec_span(const struct rctx *r, const unsigned char *p);
/* jrnl_rec_check of the record at address @a, and its lap: JRNL_REC_OK (fills @ri), a
 * jrnl_rec_verdict, or REC_WRONG_LAP. */
int jrnl_rcv_check_rec(const struct rctx *r, const unsigned char *p, uint64_t n, uint64_t a,
		       struct rinfo *ri);
/* Report a record no crash can leave (foreign, newer, another geometry): the error. */
int jrnl_rcv_hard_damage(struct rctx *r, int v, uint64_t a, const unsigned char *p);

/* ---- recover_pass.c ---- */

/* Step 3, the main pass: read [T, E), check every record, parse its ops and hand the
 * complete checkpoints to r->replay (recover_pass.c says how). */
int jrnl_rcv_main_pass(struct rctx *r);

#endif
