/*
 * recover.c - log recovery: find the head and the tail, verify every record between
 * them, reassemble checkpoints and hand the complete ones to the caller in log order,
 * then stamp the sectors past the head so that a later crash recovers the same state.
 * docs/DESIGN.md section 3 says what it keeps from XFS's; docs/FORMAT.md has the bytes.
 *
 * Addresses.  Inside this file a position in the log is an *address*, lap * N + sector,
 * N being the log's size in sectors and the lap the cycle with the skipped magic value
 * taken out (cycle_lap, lap_cycle).  Address order is LSN order, a distance is a
 * subtraction, and cycle stamping says exactly: the sector at address a carries cycle
 * lap_cycle(a / N) once the lap a / N has written it.  Lap 0 (cycle 0) is "never
 * written", so the first record ever written is at address N.  (After 2^32 - 2 laps
 * the cycle would wrap; not handled.)
 *
 * Algorithm.
 *  1. Provisional head hc (find_head).  The writer's unflushed bound (L13) confines
 *     what a power cut can leave unstable to the in-flight window [P, P + W), P being
 *     what the last completed flush covered and W at most half the log: every sector outside it carries the
 *     cycle of its address, and a sector inside it may hold the previous lap, this one,
 *     or garbage.  So no single sector is evidence, and the search never asks which end
 *     to believe.  Nine probes (sector 0, the eighths, the last sector) each claim the
 *     address their cycle puts them at; the largest claim that the others corroborate
 *     (find_anchor) is an anchor lo in [P + W - N, P + W) that carries its lap.  A binary
 *     search of (lo, lo + N] for a sector that does not while the one before it does
 *     ends in [P, P + W] whatever the window holds (R11).  Then read the window before
 *     hc and move hc to the first sector carrying the wrong cycle for its address: a
 *     buffer written out of order left a hole there.
 *  2. Settle the head E and the last good record L (settle_head).  From E = hc: L is the
 *     last valid record ending at or before E, found by scanning back for the record
 *     magic (a payload sector never starts with it: cycles skip that value); [L.end, E)
 *     holds nothing valid and is a torn write, so E = L.end.  The durable point D is the
 *     largest durable_lsn of the valid records seen.  Then walk back along prev_lsn from
 *     L over the records that start after max(D, L.tail): each must be valid.  The first
 *     that is not, at p >= D, was a write in flight: E = p and the step repeats from
 *     there, so L always ends exactly at E and the tail is L's.  A damaged record that
 *     starts before D ends the walk; the main pass reports it.
 *  3. Main pass (replay_pass): read [T, E), T = L.tail, in chained reads of read_chunk
 *     bytes (iol_rw_submit splits each at iol_max_segs segments), reads_in_flight of them
 *     outstanding while the buffer before them is parsed.  Each record is checked
 *     (jrnl_rec_check, its lap, its prev_lsn link), unpacked, and its ops parsed;
 *     transactions are reassembled by tid, and a COMMIT whose seq, counts and crc match
 *     hands its checkpoint to the callback.  Step 2 verified every record after D, so
 *     damage met here is corruption; it stops the pass and nothing after it is replayed.
 *  4. Check past the head (check_past_head).  Scan the sectors after E (the in-flight
 *     window beyond hc, then probes at doubling distances up to the tail's position one
 *     lap on) for a valid record of the current lap whose durable_lsn lies beyond E.
 *     Such a record proves the log was stable past E, so whatever made E the head (a
 *     damaged sector the binary search landed on, a damaged record) is corruption.
 *  5. Stamp (stamp_past_head), unless read_only or anything failed: of the sectors from
 *     E to one window and one record past hc0 (or past the last valid record seen
 *     beyond E), never reaching T + N, overwrite those carrying the current lap's cycle
 *     with the previous lap's cycle and zeroes (R8), then flush (XFS:
 *     xlog_clear_stale_blocks).  Records that survived beyond a torn
 *     one, and partial writes past the head, cannot come back after the next session
 *     writes from E and crashes.
 *
 * Torn or corrupt.  A write is torn when the crash caught it in flight or in the
 * device's volatile cache: it may have completed, but no completed flush covered it.
 * The writer stamps each record with durable_lsn, the end of the log that a completed
 * flush covered when the record was sealed.  A valid record (CRC, uuid, lap, position
 * checked first, so the claim is the writer's and not the damage's) whose durable_lsn
 * is X therefore proves every sector before X was stable: damage in a record starting
 * before X happened after the data was stable (bit rot, a stray write), and is reported
 * (DELOG_ECORRUPT, DELOG_ECHECKSUM), never truncated.  A damaged record starting at or
 * after every such X may have been in flight.  Truncating there is safe: the writer
 * acknowledges a commit only after a flush that covers its record and every earlier one
 * completed, and then the records after it would carry a durable_lsn beyond the damage;
 * so no acknowledged commit lies in or after a torn record.  Damage that no crash can
 * produce is an error wherever it is: another log's uuid (format zeroes the whole log,
 * so no foreign bytes can be stale), a newer format version, and malformed ops inside a
 * record whose CRC holds (the writer wrote them so).
 *
 * Invariants.
 *  (R1) N <= E <= hc <= hc0 (hc0: where the cycles change, before the hole scan): the
 *       head only moves back from where the cycles put it.  torn_bytes counts from E to
 *       hc0 or to the end of the last valid record found past E, whichever is later.
 *  (R2) L ends exactly at E and T = L.tail, with N <= T <= L.lsn and E - T <= N.
 *  (R3) Every record in [max(D, T), E) was verified before anything is replayed, so the
 *       main pass ends at E or stops on corruption; it never moves the head.
 *  (R4) A checkpoint is replayed only when its START and COMMIT lie in [T, E), all its
 *       items are complete and the commit's seq, start_lsn, nitems, payload_bytes and
 *       crc match; replays come in commit order, each once.
 *  (R5) I/O stays inside the log area and the stamping ends before T + N, the tail's
 *       position one lap on: no live record is overwritten.
 *  (R6) Every length taken from disk is bounded before use: a record by jrnl_rec_check
 *       against the bytes actually read, an op by its record's len, a reassembled
 *       payload by the bytes actually seen, the open transactions by OPEN_TX_MAX.
 *  (R7) Idempotent: a second run finds the same E, L and T (stamping only turns sectors
 *       past E into the old lap, which step 1 and 2 already treated as not written), so
 *       it replays the same checkpoints.  A crash part way through stamping leaves a
 *       mix of stamped and unstamped sectors past E; both are beyond the first hole, so
 *       the next run settles on the same E.
 *  (R11) P <= hc0 <= P + W, P being what the last completed flush covered and W the
 *       unflushed bound, whatever the sectors of [P, P + W) hold, as long as no garbage
 *       cycle lands within a lap of the head (odds of about 2^-31 a sector): the anchor
 *       is a sector outside the window or one this lap wrote inside it, every sector in
 *       (lo, P) carries its lap and none in [P + W, lo + N] does, so the search ends in
 *       the window or at its end, and the hole scan keeps hc in [P, hc0].  A garbled
 *       sector therefore moves the head exactly as the same sector left unwritten would
 *       (docs/FORMAT.md, "How recovery finds the head").
 *  (R9) A prefix or nothing: complete checkpoints follow one another in sequence, and a
 *       checkpoint left open behind one that committed is an earlier attempt at the
 *       same sequence (a resumed writer's) or corruption; with a replay callback the
 *       whole verdict (steps 3 and 4) is known before the first checkpoint is handed
 *       over (verify_then_replay), so an error never follows a callback.
 *  (R10) Nothing is written over a log read with the wrong geometry: a header of this
 *       log that does not fit it is DELOG_EGEOMETRY wherever it is met, and a log with
 *       no valid record but writes beyond the first window is refused (check_empty).
 *  (R8) Recovery's writes are as crash-safe as the writer's: stamping rewrites only
 *       sectors the crashed session wrote past the head, which the writer's unflushed
 *       bound (L13 in log.c, format.h JRNL_UNFLUSHED_MAX) confines to the window past
 *       the durable point; a power cut that garbles some of them leaves a state a torn
 *       write could have left, which the next run handles as such.  The window this
 *       file assumes (WINDOW_BYTES) is that bound.
 */
#include "format.h"
#include "record.h"

#include <delog.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest record jrnl_rec_check accepts: H and P each up to JRNL_MAX_LOGBSIZE. */
#define MAXREC_BYTES (2u * JRNL_MAX_LOGBSIZE)
#define CHUNK_DEFAULT (4u << 20)
#define CHUNK_MIN (1u << 20) /* >= 2 records: see win_get */
#define CHUNK_MAX (256u << 20)
#define INFLIGHT_MAX 16u
/* Transactions open at once (started, or met without their start, and not committed).
 * A writer has a few checkpoints in flight; more means damage, not a bigger table. */
#define OPEN_TX_MAX 256u
/* Beyond enum jrnl_rec_verdict: a record that checks out but belongs to another lap. */
#define REC_WRONG_LAP 100

static uint32_t rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Laps count cycles without the skipped magic; lap 0 is cycle 0, "never written". */
static uint64_t cycle_lap(uint32_t c)
{
	return c > JRNL_REC_MAGIC ? (uint64_t)c - 1 : c;
}

static uint32_t lap_cycle(uint64_t lap)
{
	return (uint32_t)(lap >= JRNL_REC_MAGIC ? lap + 1 : lap);
}

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

struct rctx {
	struct iol_dev *dev;
	const struct jrnl_geom *g;
	struct jrnl_report *rep;
	jrnl_replay_fn replay;
	jrnl_rec_fn on_record;
	jrnl_op_fn on_op;
	void *priv;
	uint32_t S;         /* sector bytes */
	uint64_t N;         /* log sectors */
	uint64_t maxrec;    /* MAXREC_BYTES in sectors */
	uint64_t window;    /* the writer's unflushed bound in sectors, at most N / 2 */
	size_t chunk;       /* bytes per chained read */
	uint64_t cap;       /* chunk in sectors */
	unsigned inflight;  /* chained reads kept outstanding by the main pass */
	unsigned per_req;   /* segments per request (iol_max_segs) */
	unsigned char *sec; /* one sector, for probes */
	struct win win;

	uint64_t hc0;      /* where the cycles change (before the hole scan) */
	uint64_t hc;       /* provisional head: hc0, or the first hole before it */
	uint64_t E, T, D;  /* settled head, tail, durable point */
	uint64_t seen_end; /* end of the last valid record found past E */
	bool have_last;
	struct rinfo last; /* L */
};

static uint64_t dev_off(const struct rctx *r, uint64_t a)
{
	return r->g->log_start + (a % r->N) * r->S;
}

static uint64_t addr_lsn(const struct rctx *r, uint64_t a)
{
	return jrnl_lsn(lap_cycle(a / r->N), (uint32_t)(a % r->N));
}

/* The address of @lsn; false if it names no sector of this log. */
static bool lsn_addr(const struct rctx *r, uint64_t lsn, uint64_t *a)
{
	uint32_t c = jrnl_lsn_cycle(lsn), s = jrnl_lsn_sector(lsn);

	if (s >= r->N || c == JRNL_REC_MAGIC)
		return false;
	*a = cycle_lap(c) * r->N + s;
	return true;
}

/*
 * Record the first corruption found: its code, where, and what; returns @code so that
 * callers can `return corrupt(...)`.  Only the first call counts, because everything
 * after the first damage is unreliable.
 */
__attribute__((format(printf, 5, 6))) static int corrupt(struct rctx *r, int code, uint64_t a,
							 uint64_t off, const char *fmt, ...)
{
	struct jrnl_report *rep = r->rep;
	va_list ap;

	if (rep->corruption)
		return rep->corruption;
	rep->corruption = code;
	rep->corrupt_lsn = addr_lsn(r, a);
	rep->corrupt_offset = off;
	va_start(ap, fmt);
	vsnprintf(rep->corrupt_what, sizeof(rep->corrupt_what), fmt, ap);
	va_end(ap);
	return code;
}

/* Requests iol_rw_submit splits @len bytes into: the same arithmetic as io.c. */
static unsigned reqs_for(const struct rctx *r, size_t len)
{
	size_t segs = (len + IOL_SEG_BYTES - 1) / IOL_SEG_BYTES;

	return (unsigned)((segs + r->per_req - 1) / r->per_req);
}

/* Read the sectors at addresses [a, a + n) into @buf in address order: one chained read,
 * or two where the range crosses the physical end. */
static int read_addr(struct rctx *r, uint64_t a, uint64_t n, void *buf)
{
	unsigned char *p = buf;

	while (n) {
		uint64_t k = min64(n, r->N - a % r->N);
		unsigned nr = 0;
		int err;

		err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_READ, 0), dev_off(r, a), p, k * r->S, &nr);
		r->rep->read_reqs += nr;
		r->rep->bytes_read += k * r->S;
		if (r->rep->max_reads_in_flight < 1)
			r->rep->max_reads_in_flight = 1;
		if (err)
			return err;
		a += k;
		n -= k;
		p += k * r->S;
	}
	return 0;
}

/*
 * Make the sectors [a, e) available in the search window and point *out at a.  A miss
 * reads a whole chunk, forwards from a (bounded by hi_lim) or backwards ending at e
 * (bounded by lo_lim), so a scan moving that way keeps hitting.  e - a is at most one
 * record, and a chunk holds at least two, so the chunk always covers the request.
 */
static int win_get(struct rctx *r, uint64_t a, uint64_t e, uint64_t lo_lim, uint64_t hi_lim,
		   bool fwd, unsigned char **out)
{
	struct win *w = &r->win;
	uint64_t lo, hi;
	int err;

	if (a < w->lo || e > w->hi) {
		if (fwd) {
			lo = a;
			hi = max64(e, min64(hi_lim, a + w->cap));
		} else {
			hi = e;
			lo = min64(a, e - lo_lim > w->cap ? e - w->cap : lo_lim);
		}
		w->lo = w->hi = 0;
		err = read_addr(r, lo, hi - lo, w->buf);
		if (err)
			return err;
		w->lo = lo;
		w->hi = hi;
	}
	*out = w->buf + (a - w->lo) * r->S;
	return 0;
}

/* Sectors the record starting at @p claims (H + P), or 1 if that sector is no header
 * jrnl_rec_check could accept: how much to read before checking it. */
static uint64_t rec_span(const struct rctx *r, const unsigned char *p)
{
	uint32_t lim = JRNL_MAX_LOGBSIZE / r->S, h, n;

	if (rd32(p) != JRNL_REC_MAGIC)
		return 1;
	h = rd32(p + offsetof(struct jrnl_rec, hdr_sectors));
	n = rd32(p + offsetof(struct jrnl_rec, payload_sectors));
	return h && h <= lim && n <= lim ? (uint64_t)h + n : 1;
}

/*
 * Check the record at address @a, @n sectors of it at @p: jrnl_rec_check, then that its
 * cycle is the lap's at that address (a valid record of an older lap is stale).
 * Returns JRNL_REC_OK and fills @ri, a jrnl_rec_verdict, or REC_WRONG_LAP.
 */
static int check_rec(const struct rctx *r, const unsigned char *p, uint64_t n, uint64_t a,
		     struct rinfo *ri)
{
	const struct jrnl_rec *h;
	enum jrnl_rec_verdict v;

	v = jrnl_rec_check(p, (size_t)(n * r->S), r->S, r->N, (uint32_t)(a % r->N), r->g->uuid, &h);
	if (v != JRNL_REC_OK)
		return v;
	if (h->cycle != lap_cycle(a / r->N))
		return REC_WRONG_LAP;
	ri->a = a;
	ri->h = h->hdr_sectors;
	ri->p = h->payload_sectors;
	ri->end = a + ri->h + ri->p;
	ri->len = h->len;
	ri->num_ops = h->num_ops;
	ri->lsn = h->lsn;
	ri->tail_lsn = h->tail_lsn;
	ri->durable_lsn = h->durable_lsn;
	ri->prev_lsn = h->prev_lsn;
	return JRNL_REC_OK;
}

/* The durable point a valid record vouches for, as an address.  A record can only know
 * about writes before itself, so a claim beyond its own start is cut back to it. */
static uint64_t rec_durable(const struct rctx *r, const struct rinfo *ri)
{
	uint64_t d;

	if (!lsn_addr(r, ri->durable_lsn, &d))
		return 0;
	return min64(d, ri->a);
}

static bool is_hard(int v)
{
	return v == JRNL_REC_FOREIGN || v == JRNL_REC_VERSION || v == JRNL_REC_GEOMETRY;
}

static int hard_damage(struct rctx *r, int v, uint64_t a, const unsigned char *p)
{
	if (v == JRNL_REC_GEOMETRY)
		return corrupt(r, DELOG_EGEOMETRY, a, dev_off(r, a),
			       "record header at sector %llu does not fit %u-byte sectors and a "
			       "log of %llu sectors: written under another geometry",
			       (unsigned long long)(a % r->N), r->S, (unsigned long long)r->N);
	if (v == JRNL_REC_FOREIGN)
		return corrupt(r, DELOG_EFOREIGN, a, dev_off(r, a),
			       "record at sector %llu belongs to another log (uuid mismatch)",
			       (unsigned long long)(a % r->N));
	return corrupt(r, DELOG_EVERSION, a, dev_off(r, a),
		       "record at sector %llu has format version %u",
		       (unsigned long long)(a % r->N),
		       rd32(p + offsetof(struct jrnl_rec, version)));
}

/* ---- step 1: the provisional head ---- */

/* Sectors the head search reads first: sector 0, seven at eighths of the log and the
 * last one.  At most five of them lie in the in-flight window (half the smallest log). */
#define PROBES 9u

static int sector_cycle(struct rctx *r, uint64_t sector, uint32_t *c)
{
	int err = read_addr(r, r->N + sector, 1, r->sec);

	if (!err)
		*c = jrnl_sector_cycle(r->sec);
	return err;
}

/* Does the sector at address @a carry the cycle of a's lap (R11)? */
static int carries_lap(struct rctx *r, uint64_t a, bool *yes)
{
	uint32_t c;
	int err = sector_cycle(r, a % r->N, &c);

	if (!err)
		*yes = c == lap_cycle(a / r->N);
	return err;
}

/*
 * The anchor of the head search (R11): the largest address that a probe claims and that
 * at least as many other probes corroborate as any larger claim.  A probe at sector s
 * reading cycle c claims the address cycle_lap(c) * N + s.  Every sector outside the
 * in-flight window [P, P + W) claims its address in [P + W - N, P); one inside it
 * claims an address in [P - N, P + W) (the lap before, or this one) or, if garbage,
 * anything.  So the claims of sectors that are not garbage lie within N + W of one
 * another, and the largest of them is at least P + W - N, because at least four probes
 * lie outside a window of at most N / 2 sectors.  A garbage claim is corroborated only
 * by the claims within N + W below it, which outnumber the real ones only if garbage
 * lands within a lap of the real head (a random cycle does so with odds of about 2^-31).
 */
static int find_anchor(struct rctx *r, uint64_t *anchor)
{
	uint64_t claim[PROBES], span = r->N + r->window;
	unsigned best = 0, votes[PROBES];
	uint32_t c;
	int err;

	for (unsigned i = 0; i < PROBES; i++) {
		uint64_t s = i + 1 < PROBES ? i * r->N / (PROBES - 1) : r->N - 1;

		err = sector_cycle(r, s, &c);
		if (err)
			return err;
		claim[i] = cycle_lap(c) * r->N + s;
	}
	for (unsigned i = 0; i < PROBES; i++) {
		votes[i] = 0;
		for (unsigned j = 0; j < PROBES; j++)
			votes[i] += claim[j] <= claim[i] && claim[i] - claim[j] < span;
		if (votes[i] > votes[best] || (votes[i] == votes[best] && claim[i] > claim[best]))
			best = i;
	}
	*anchor = claim[best];
	return 0;
}

/*
 * Find the provisional head (R11): from the anchor lo, which carries its lap, search
 * (lo, lo + N] for a sector that does not while the one before it does; lo + N is the
 * anchor's own sector one lap on, so it does not.  Then move back to the first hole in
 * the in-flight window before it: a buffer written out of order left one there.
 */
static int find_head(struct rctx *r)
{
	uint64_t lo, hi, hc;
	unsigned char *p;
	bool yes;
	int err;

	err = find_anchor(r, &lo);
	if (err)
		return err;
	for (hi = lo + r->N; hi - lo > 1;) {
		uint64_t mid = lo + (hi - lo) / 2;

		err = carries_lap(r, mid, &yes);
		if (err)
			return err;
		if (yes)
			lo = mid;
		else
			hi = mid;
	}
	hc = hi;
	r->hc0 = hc;

	/* Holes left by writes that completed out of order. */
	lo = max64(r->N, hc - min64(r->window, min64(hc, r->N - 1)));
	for (uint64_t a = lo; a < hc;) {
		uint64_t n = min64(hc - a, r->cap);

		err = win_get(r, a, a + n, lo, hc, true, &p);
		if (err)
			return err;
		for (uint64_t i = 0; i < n; i++) {
			if (jrnl_sector_cycle(p + i * r->S) != lap_cycle((a + i) / r->N)) {
				hc = a + i;
				goto out;
			}
		}
		a += n;
	}
out:
	r->hc = hc;
	return 0;
}

/* ---- step 2: settle the head ---- */

/*
 * The last valid record that ends at or before @e and starts at or after @floor, by
 * scanning back for the record magic.  A foreign or newer record on the way is an
 * error: no crash puts one there.
 */
static int back_scan(struct rctx *r, uint64_t e, uint64_t floor, struct rinfo *ri, bool *found)
{
	unsigned char *p;
	uint64_t span;
	int err, v;

	*found = false;
	for (uint64_t s = e; s-- > floor;) {
		err = win_get(r, s, min64(e, s + r->maxrec), floor, e, false, &p);
		if (err)
			return err;
		if (rd32(p) != JRNL_REC_MAGIC)
			continue;
		span = min64(rec_span(r, p), e - s);
		v = check_rec(r, p, span, s, ri);
		if (v == JRNL_REC_OK) {
			*found = true;
			return 0;
		}
		if (is_hard(v))
			return hard_damage(r, v, s, p);
	}
	return 0;
}

/*
 * Step 2: move the head back over torn writes and find L, the record the tail comes
 * from.  D survives a restart because a claim made by a valid record stays true when
 * the head moves back before it: a damaged record counts as torn only if no valid
 * record anywhere vouches for it.  Each restart moves E strictly back, so this ends.
 */
static int settle_head(struct rctx *r)
{
	uint64_t floor = max64(r->N, r->hc - min64(r->hc, r->N));
	uint64_t E = r->hc, D = 0, T = 0;
	struct rinfo L, cur, R;
	unsigned char *p;
	bool found;
	int err, v;

restart:
	err = back_scan(r, E, floor, &L, &found);
	if (err)
		return err;
	if (!found) {
		if (floor > r->N)
			return corrupt(r, DELOG_ECORRUPT, E, dev_off(r, E),
				       "no valid record in the whole log before the head");
		/* Lap 1 and nothing valid: the first writes never completed, or, if a record
		 * vouched for data before E, the start of the log is damaged (the main pass,
		 * reading from the log start, reports it). */
		r->E = D > r->N ? E : r->N;
		r->T = r->N;
		r->D = D;
		r->have_last = false;
		return 0;
	}
	if (!lsn_addr(r, L.tail_lsn, &T) || T < r->N || T > L.a || T + r->N < L.end)
		return corrupt(r, DELOG_ECORRUPT, L.a, dev_off(r, L.a),
			       "record at lsn %u/%u names tail lsn %u/%u outside the log",
			       jrnl_lsn_cycle(L.lsn), jrnl_lsn_sector(L.lsn),
			       jrnl_lsn_cycle(L.tail_lsn), jrnl_lsn_sector(L.tail_lsn));
	if (L.end < E && L.end < D) {
		/* Damage starting before the durable point: corruption, reported by the main
		 * pass, which reads up to it. */
		goto done;
	}
	E = L.end;
	D = max64(D, rec_durable(r, &L));

	for (cur = L; cur.a > max64(D, T); cur = R) {
		uint64_t pa;

		if (!cur.prev_lsn || !lsn_addr(r, cur.prev_lsn, &pa) || pa >= cur.a ||
		    cur.a - pa > r->maxrec || pa < floor)
			break; /* a broken link: the main pass reports it */
		err = win_get(r, pa, cur.a, floor, E, false, &p);
		if (err)
			return err;
		v = check_rec(r, p, cur.a - pa, pa, &R);
		if (v == JRNL_REC_OK && R.end == cur.a) {
			D = max64(D, rec_durable(r, &R));
			continue;
		}
		if (is_hard(v))
			return hard_damage(r, v, pa, p);
		if (v == JRNL_REC_OK || pa < D)
			break; /* not a torn write: the main pass reports it */
		E = pa;        /* torn: the head moves back and L with it */
		goto restart;
	}
done:
	r->E = E;
	r->T = T;
	r->D = D;
	r->last = L;
	r->have_last = true;
	return 0;
}

/* ---- step 3: the main pass ---- */

/* One chained read of the main pass: a buffer and the sectors [a, a + n) it receives. */
struct fslot {
	struct fread *fr;
	unsigned char *buf;
	uint64_t a, n;
	int status;
	bool done;
};

/*
 * The forward reader: a ring of nslots buffers, the oldest being parsed while the others
 * are in flight (double-buffering at depth).  Completion runs on an iolayer thread and
 * only touches the slot and the counters under the lock.
 */
struct fread {
	struct rctx *r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fslot slot[INFLIGHT_MAX + 1];
	unsigned nslots, first, used;
	uint64_t next, end; /* next address to read, end of the region */
	unsigned outstanding;
};

static void fr_end(void *priv, int status)
{
	struct fslot *s = priv;
	struct fread *fr = s->fr;

	pthread_mutex_lock(&fr->lock);
	s->status = status;
	s->done = true;
	fr->outstanding--;
	pthread_cond_broadcast(&fr->cond);
	pthread_mutex_unlock(&fr->lock);
}

/* Keep every free buffer reading: pieces of read_chunk bytes, cut at the physical end. */
static int fr_issue(struct fread *fr)
{
	struct rctx *r = fr->r;

	while (fr->used < fr->nslots && fr->next < fr->end) {
		struct fslot *s = &fr->slot[(fr->first + fr->used) % fr->nslots];
		uint64_t n = min64(min64(r->cap, fr->end - fr->next), r->N - fr->next % r->N);
		int err;

		pthread_mutex_lock(&fr->lock);
		if (fr->outstanding == r->inflight) {
			/* The limit asked for; fr_release issues the next one. */
			pthread_mutex_unlock(&fr->lock);
			break;
		}
		s->a = fr->next;
		s->n = n;
		s->status = 0;
		s->done = false;
		fr->outstanding++;
		if (fr->outstanding > r->rep->max_reads_in_flight)
			r->rep->max_reads_in_flight = fr->outstanding;
		pthread_mutex_unlock(&fr->lock);
		err = iol_rw_submit(r->dev, IOL_OPF(IOL_OP_READ, 0), dev_off(r, s->a), s->buf,
				    (size_t)(n * r->S), fr_end, s);
		if (err) {
			pthread_mutex_lock(&fr->lock);
			fr->outstanding--;
			pthread_mutex_unlock(&fr->lock);
			return err;
		}
		r->rep->read_reqs += reqs_for(r, (size_t)(n * r->S));
		r->rep->bytes_read += n * r->S;
		fr->used++;
		fr->next += n;
	}
	return 0;
}

/* The oldest buffer, once its read has completed. */
static int fr_front(struct fread *fr, struct fslot **out)
{
	struct fslot *s;
	int status;

	if (!fr->used)
		return -EIO; /* the region ran out under a record: cannot happen */
	s = &fr->slot[fr->first];
	pthread_mutex_lock(&fr->lock);
	while (!s->done)
		pthread_cond_wait(&fr->cond, &fr->lock);
	status = s->status;
	pthread_mutex_unlock(&fr->lock);
	*out = s;
	if (status)
		return status;
	/* A buffer may be free but unissued because the limit was reached then. */
	return fr_issue(fr);
}

static int fr_release(struct fread *fr)
{
	fr->first = (fr->first + 1) % fr->nslots;
	fr->used--;
	return fr_issue(fr);
}

static void fr_drain(struct fread *fr)
{
	pthread_mutex_lock(&fr->lock);
	while (fr->outstanding)
		pthread_cond_wait(&fr->cond, &fr->lock);
	pthread_mutex_unlock(&fr->lock);
}

/*
 * Point *out at the @n sectors at address @pos: in place when one buffer holds them,
 * else gathered into @carry (a record straddling two reads, or the physical end).
 * Buffers wholly before @pos are handed back to reading first.
 */
static int fr_bytes(struct fread *fr, uint64_t pos, uint64_t n, unsigned char *carry,
		    unsigned char **out)
{
	uint32_t S = fr->r->S;
	struct fslot *s;
	uint64_t got = 0;
	int err;

	for (;;) {
		err = fr_front(fr, &s);
		if (err)
			return err;
		if (s->a + s->n > pos)
			break;
		err = fr_release(fr);
		if (err)
			return err;
	}
	if (pos + n <= s->a + s->n) {
		*out = s->buf + (pos - s->a) * S;
		return 0;
	}
	while (got < n) {
		uint64_t from = pos + got, k;

		err = fr_front(fr, &s);
		if (err)
			return err;
		k = min64(n - got, s->a + s->n - from);
		memcpy(carry + got * S, s->buf + (from - s->a) * S, k * S);
		got += k;
		if (from + k == s->a + s->n) {
			err = fr_release(fr);
			if (err)
				return err;
		}
	}
	*out = carry;
	return 0;
}

/* An item of a transaction being reassembled: its data lives in the transaction's
 * buffer, as an offset because the buffer grows. */
struct pitem {
	uint64_t key;
	size_t off;
	uint32_t len;
};

/* A transaction being reassembled, or (skip) one whose START lies before the tail. */
struct ptx {
	uint32_t tid;
	bool skip;
	uint64_t seq, start_lsn;
	uint32_t nitems, crc;
	uint64_t bytes;
	struct pitem *items;
	size_t items_cap;
	unsigned char *data;
	size_t data_len, data_cap;
};

/* Parser state carried from record to record. */
struct parse {
	struct ptx *tx;
	size_t ntx;
	struct ptx spare; /* buffers of a finished transaction, for the next one */
	/* The op being reassembled (it may continue into the next record). */
	bool cont; /* the last op of the previous record carried CONTINUE */
	uint32_t op_tid;
	uint16_t op_type, op_flags;
	uint64_t op_lsn;         /* record holding the op's first piece */
	uint64_t op_off;         /* device offset of the first piece's header */
	uint64_t op_len;         /* payload bytes so far */
	bool op_skip;            /* payload not kept: a transaction before the tail */
	size_t op_item_off;      /* where the item started in its transaction's data */
	unsigned char small[32]; /* START / COMMIT / UNMOUNT payload */
	bool rec_unmount;        /* the record just parsed is an unmount record */
	bool have_seq;           /* a checkpoint was complete; last_seq is its sequence */
	uint64_t last_seq;
	struct jrnl_item_view *views;
	size_t views_cap;
};

static struct ptx *tx_find(struct parse *ps, uint32_t tid)
{
	for (size_t i = ps->ntx; i-- > 0;)
		if (ps->tx[i].tid == tid)
			return &ps->tx[i];
	return NULL;
}

static void tx_free(struct ptx *t)
{
	free(t->items);
	free(t->data);
}

/* Finish with @t; its buffers are kept for the next transaction (regrowing them for
 * every checkpoint would copy each checkpoint's bytes twice more). */
static void tx_remove(struct parse *ps, struct ptx *t)
{
	if (!ps->spare.data && !ps->spare.items) {
		ps->spare = *t;
		t->data = NULL;
		t->items = NULL;
	}
	tx_free(t);
	*t = ps->tx[--ps->ntx];
}

/* A new table entry for @tid, or NULL when OPEN_TX_MAX are open (or no memory). */
static struct ptx *tx_add(struct parse *ps, uint32_t tid, bool skip)
{
	struct ptx *t;

	if (ps->ntx == OPEN_TX_MAX)
		return NULL;
	if (!ps->tx) {
		ps->tx = calloc(OPEN_TX_MAX, sizeof(*ps->tx));
		if (!ps->tx)
			return NULL;
	}
	t = &ps->tx[ps->ntx++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->skip = skip;
	if (!skip) {
		t->data = ps->spare.data;
		t->data_cap = ps->spare.data_cap;
		t->items = ps->spare.items;
		t->items_cap = ps->spare.items_cap;
		memset(&ps->spare, 0, sizeof(ps->spare));
	}
	return t;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* Context of the op being parsed, for error reports. */
struct opctx {
	const struct rinfo *ri;
	uint64_t off; /* device offset of the op header */
	uint32_t idx; /* op index in its record */
};

#define OP_BAD(r, oc, code, ...) corrupt((r), (code), (oc)->ri->a, (oc)->off, __VA_ARGS__)

static int replay_ckpt(struct rctx *r, struct parse *ps, struct ptx *t, const struct opctx *oc,
		       const struct jrnl_commit *c)
{
	struct jrnl_ckpt ck = {
		.seq = t->seq,
		.start_lsn = t->start_lsn,
		.commit_lsn = ps->op_lsn,
		.nitems = t->nitems,
		.payload_bytes = t->bytes,
	};
	uint64_t data = 0;
	int err;

	if (c->seq != t->seq || c->start_lsn != t->start_lsn)
		return OP_BAD(r, oc, DELOG_ECORRUPT,
			      "COMMIT of tid %#x says seq %llu from lsn %u/%u, START said seq %llu",
			      t->tid, (unsigned long long)c->seq, jrnl_lsn_cycle(c->start_lsn),
			      jrnl_lsn_sector(c->start_lsn), (unsigned long long)t->seq);
	if (c->nitems != t->nitems || c->payload_bytes != t->bytes)
		return OP_BAD(
			r, oc, DELOG_ECORRUPT,
			"checkpoint %llu: COMMIT says %u items of %llu bytes, log holds %u of %llu",
			(unsigned long long)t->seq, c->nitems, (unsigned long long)c->payload_bytes,
			t->nitems, (unsigned long long)t->bytes);
	if (c->crc != t->crc)
		return OP_BAD(r, oc, DELOG_ECHECKSUM,
			      "checkpoint %llu: item crc %#x, COMMIT says %#x",
			      (unsigned long long)t->seq, t->crc, c->crc);
	if (ps->have_seq && t->seq != ps->last_seq + 1)
		return OP_BAD(r, oc, DELOG_ECORRUPT,
			      "checkpoint %llu follows checkpoint %llu: sequences must be consecutive",
			      (unsigned long long)t->seq, (unsigned long long)ps->last_seq);
	ps->have_seq = true;
	ps->last_seq = t->seq;
	err = grow((void **)&ps->views, &ps->views_cap, t->nitems, sizeof(*ps->views));
	if (err)
		return err;
	for (uint32_t i = 0; i < t->nitems; i++) {
		ps->views[i].key = t->items[i].key;
		ps->views[i].data = t->data + t->items[i].off;
		ps->views[i].len = t->items[i].len;
		data += t->items[i].len;
	}
	if (r->replay) {
		err = r->replay(r->priv, &ck, ps->views, t->nitems);
		if (err)
			return err;
	}
	r->rep->checkpoints++;
	r->rep->items += t->nitems;
	r->rep->bytes_replayed += data;
	return 0;
}

/*
 * Checkpoint @t commits: every other checkpoint still open must be an earlier attempt at
 * the same sequence, which a writer that resumed after a crash (or after the log shut
 * down) abandoned and wrote again; it is dropped.  An open checkpoint of another
 * sequence never committed although a later one did: its COMMIT was lost in the middle
 * of the log, which no crash does (checkpoints are written one at a time), so it is
 * corruption (R4: a prefix or nothing).
 */
static int open_behind(struct rctx *r, struct parse *ps, struct ptx **tp, const struct opctx *oc)
{
	struct ptx *t = *tp;

	for (size_t i = 0; i < ps->ntx;) {
		struct ptx *o = &ps->tx[i];

		if (o == t || o->skip) {
			i++;
			continue;
		}
		if (o->seq != t->seq)
			return OP_BAD(r, oc, DELOG_ECORRUPT,
				      "checkpoint %llu (tid %#x, from lsn %u/%u) never committed, "
				      "but checkpoint %llu after it did",
				      (unsigned long long)o->seq, o->tid,
				      jrnl_lsn_cycle(o->start_lsn), jrnl_lsn_sector(o->start_lsn),
				      (unsigned long long)t->seq);
		r->rep->dropped++;
		if (t == &ps->tx[ps->ntx - 1])
			t = o; /* tx_remove moves the last entry into o's slot */
		tx_remove(ps, o);
	}
	*tp = t;
	return 0;
}

/* A whole op has been gathered (all its pieces): act on it. */
static int op_done(struct rctx *r, struct parse *ps, const struct opctx *oc)
{
	struct ptx *t = tx_find(ps, ps->op_tid);
	struct jrnl_commit c;
	struct jrnl_item it;
	uint64_t sa;

	switch (ps->op_type) {
	case JRNL_T_START:
		if (ps->op_len != sizeof(struct jrnl_start))
			return OP_BAD(r, oc, DELOG_EBADOP, "START op of %llu bytes, expected %zu",
				      (unsigned long long)ps->op_len, sizeof(struct jrnl_start));
		if (t && !t->skip)
			return OP_BAD(r, oc, DELOG_EBADOP,
				      "START for tid %#x, which is already open", ps->op_tid);
		if (t)
			tx_remove(ps, t);
		t = tx_add(ps, ps->op_tid, false);
		if (!t)
			return ps->tx ? OP_BAD(r, oc, DELOG_EBADOP,
					       "more than %u transactions open at once",
					       OPEN_TX_MAX) :
					-ENOMEM;
		t->seq = rd64(ps->small);
		t->start_lsn = ps->op_lsn;
		return 0;
	case JRNL_T_ITEM:
		if (ps->op_skip)
			return 0;
		if (ps->op_len < sizeof(it))
			return OP_BAD(r, oc, DELOG_EBADOP,
				      "ITEM op of %llu bytes, below its header",
				      (unsigned long long)ps->op_len);
		memcpy(&it, t->data + ps->op_item_off, sizeof(it));
		if (sizeof(it) + (uint64_t)it.data_len != ps->op_len)
			return OP_BAD(r, oc, DELOG_EBADOP,
				      "ITEM of %u data bytes in an op of %llu bytes", it.data_len,
				      (unsigned long long)ps->op_len);
		if (t->nitems == UINT32_MAX)
			return OP_BAD(r, oc, DELOG_EBADOP, "too many items in checkpoint %llu",
				      (unsigned long long)t->seq);
		if (grow((void **)&t->items, &t->items_cap, (size_t)t->nitems + 1,
			 sizeof(*t->items)))
			return -ENOMEM;
		t->items[t->nitems].key = it.key;
		t->items[t->nitems].off = ps->op_item_off + sizeof(it);
		t->items[t->nitems].len = it.data_len;
		t->nitems++;
		t->crc = jrnl_crc32c(t->crc, t->data + ps->op_item_off, (size_t)ps->op_len);
		t->bytes += ps->op_len;
		return 0;
	case JRNL_T_COMMIT:
		if (ps->op_len != sizeof(c))
			return OP_BAD(r, oc, DELOG_EBADOP, "COMMIT op of %llu bytes, expected %zu",
				      (unsigned long long)ps->op_len, sizeof(c));
		memcpy(&c, ps->small, sizeof(c));
		if (!t || t->skip) {
			/* Its START was not seen: fine if it lies before the tail (the
			 * checkpoint is already written back), an orphan otherwise. */
			if (!lsn_addr(r, c.start_lsn, &sa))
				return OP_BAD(r, oc, DELOG_EBADOP,
					      "COMMIT of tid %#x names start lsn %u/%u outside the log",
					      ps->op_tid, jrnl_lsn_cycle(c.start_lsn),
					      jrnl_lsn_sector(c.start_lsn));
			if (sa >= r->T)
				return OP_BAD(r, oc, DELOG_EORPHAN,
					      "COMMIT of tid %#x (seq %llu): its START at lsn %u/%u "
					      "lies in the log but was never seen",
					      ps->op_tid, (unsigned long long)c.seq,
					      jrnl_lsn_cycle(c.start_lsn),
					      jrnl_lsn_sector(c.start_lsn));
			if (t)
				tx_remove(ps, t);
			return 0;
		}
		{
			int err = open_behind(r, ps, &t, oc);

			if (!err)
				err = replay_ckpt(r, ps, t, oc, &c);
			if (!err)
				tx_remove(ps, t);
			return err;
		}
	case JRNL_T_UNMOUNT:
		if (ps->op_len != sizeof(struct jrnl_unmount) ||
		    rd64(ps->small) != JRNL_UNMOUNT_MAGIC)
			return OP_BAD(r, oc, DELOG_EBADOP, "malformed UNMOUNT op (%llu bytes)",
				      (unsigned long long)ps->op_len);
		ps->rec_unmount = oc->ri->num_ops == 1;
		return 0;
	}
	return OP_BAD(r, oc, DELOG_EBADOP, "op of unknown type %u", ps->op_type);
}

/* Flags a first piece of each type may carry, besides CONTINUE. */
static uint16_t type_flags(uint16_t type)
{
	switch (type) {
	case JRNL_T_START:
		return JRNL_OP_START;
	case JRNL_T_COMMIT:
		return JRNL_OP_COMMIT;
	case JRNL_T_UNMOUNT:
		return JRNL_OP_UNMOUNT;
	default:
		return 0;
	}
}

/*
 * The previous record ended with an op piece flagged CONTINUE, and this record does not
 * continue it.  Records are CRC-checked and chained by prev_lsn, so this is not damage:
 * it is what a writer that resumed after a crash leaves.  The crash tore off the record
 * holding the rest of that op (it lay past the durable point, so recovery dropped its
 * checkpoint as incomplete), and the writer went on at that head with a new
 * transaction.  The op, and the transaction it belongs to, are abandoned: counted as
 * dropped, never replayed (its COMMIT cannot follow: the writer never reuses a tid).
 */
static void abandon_cont(struct rctx *r, struct parse *ps)
{
	struct ptx *t = tx_find(ps, ps->op_tid);

	if (t) {
		r->rep->dropped += !t->skip;
		tx_remove(ps, t);
	}
	ps->cont = false;
}

/*
 * One op header and its payload piece (@op->len bytes at @data, already bounded by the
 * record).  Checks the flags against the op's type and against the continuation state,
 * then appends the piece and, when it is the last, acts on the op.
 */
static int op_piece(struct rctx *r, struct parse *ps, const struct jrnl_op *op,
		    const unsigned char *data, const struct opctx *oc, bool first_rec)
{
	const uint16_t kind = JRNL_OP_START | JRNL_OP_COMMIT | JRNL_OP_UNMOUNT;
	bool was = op->flags & JRNL_OP_WAS_CONT, cont = op->flags & JRNL_OP_CONTINUE;
	bool end = op->flags & JRNL_OP_END;
	struct ptx *t;

	if (was) {
		if (oc->idx)
			return OP_BAD(r, oc, DELOG_EORPHAN,
				      "continuation op of tid %#x is not the first op of its record",
				      op->tid);
		if (!ps->cont && (!first_rec || oc->ri->a == r->N))
			return OP_BAD(r, oc, DELOG_EORPHAN,
				      "continuation op of tid %#x without its start", op->tid);
		if (ps->cont && (ps->op_tid != op->tid || ps->op_type != op->type))
			return OP_BAD(r, oc, DELOG_EORPHAN,
				      "continuation op of tid %#x type %u, but tid %#x type %u "
				      "was continued",
				      op->tid, op->type, ps->op_tid, ps->op_type);
		if (cont == end)
			return OP_BAD(r, oc, DELOG_EBADOP,
				      "continuation op flags %#x: need exactly one of CONTINUE and END",
				      op->flags);
		if (!ps->cont) {
			/* The record at the tail continues an op whose start lies before the
			 * tail: its transaction is already written back; ignore it. */
			ps->op_tid = op->tid;
			ps->op_type = op->type;
			ps->op_flags = op->flags & kind;
			ps->op_lsn = oc->ri->lsn;
			ps->op_off = oc->off;
			ps->op_len = 0;
			ps->op_skip = true;
			if (!tx_find(ps, op->tid) && !tx_add(ps, op->tid, true))
				return ps->tx ? OP_BAD(r, oc, DELOG_EBADOP,
						       "more than %u transactions open at once",
						       OPEN_TX_MAX) :
						-ENOMEM;
		} else if ((op->flags & kind) & ~ps->op_flags) {
			return OP_BAD(r, oc, DELOG_EBADOP,
				      "continuation op flags %#x disagree with its start (%#x)",
				      op->flags, ps->op_flags);
		}
	} else {
		if (ps->cont)
			abandon_cont(r, ps);
		if (end)
			return OP_BAD(r, oc, DELOG_EBADOP, "END flag without WAS_CONT (flags %#x)",
				      op->flags);
		if ((op->flags & kind) != type_flags(op->type))
			return OP_BAD(r, oc, DELOG_EBADOP, "op type %u with flags %#x", op->type,
				      op->flags);
		if (cont && op->type != JRNL_T_ITEM)
			return OP_BAD(r, oc, DELOG_EBADOP,
				      "op type %u carries CONTINUE (only ITEM ops are split)",
				      op->type);
		ps->op_tid = op->tid;
		ps->op_type = op->type;
		ps->op_flags = op->flags & kind;
		ps->op_lsn = oc->ri->lsn;
		ps->op_off = oc->off;
		ps->op_len = 0;
		ps->op_skip = false;
		if (op->type == JRNL_T_ITEM) {
			t = tx_find(ps, op->tid);
			if (!t) {
				/* No START seen: a transaction from before the tail, as long as
				 * its COMMIT (if any) says so; see op_done. */
				t = tx_add(ps, op->tid, true);
				if (!t)
					return ps->tx ?
						       OP_BAD(r, oc, DELOG_EBADOP,
							      "more than %u transactions open at once",
							      OPEN_TX_MAX) :
						       -ENOMEM;
			}
			ps->op_skip = t->skip;
			ps->op_item_off = t->data_len;
		}
	}

	if (ps->op_type == JRNL_T_ITEM) {
		if (!ps->op_skip && op->len) {
			t = tx_find(ps, ps->op_tid);
			if (!t || grow((void **)&t->data, &t->data_cap, t->data_len + op->len, 1))
				return -ENOMEM;
			memcpy(t->data + t->data_len, data, op->len);
			t->data_len += op->len;
		}
	} else if (!ps->op_skip) {
		if (ps->op_len + op->len > sizeof(ps->small))
			return OP_BAD(r, oc, DELOG_EBADOP, "op type %u of more than %zu bytes",
				      ps->op_type, sizeof(ps->small));
		memcpy(ps->small + ps->op_len, data, op->len);
	}
	ps->op_len += op->len;
	ps->cont = cont;
	if (cont)
		return 0;
	if (ps->op_skip) {
		if (ps->op_type == JRNL_T_COMMIT && (t = tx_find(ps, ps->op_tid)) && t->skip)
			tx_remove(ps, t);
		return 0;
	}
	return op_done(r, ps, oc);
}

/* Device offset of byte @off of the payload of the record @ri. */
static uint64_t payload_off(const struct rctx *r, const struct rinfo *ri, uint64_t off)
{
	return dev_off(r, ri->a + ri->h + off / r->S) + off % r->S;
}

/* Parse the ops of one checked, unpacked record. */
static int parse_record(struct rctx *r, struct parse *ps, const unsigned char *rec,
			const struct rinfo *ri, bool first_rec)
{
	const unsigned char *pl = rec + (size_t)ri->h * r->S;
	uint64_t off = 0, len = ri->len;
	struct opctx oc = { .ri = ri };
	int err;

	ps->rec_unmount = false;
	if (ps->cont && !ri->num_ops)
		abandon_cont(r, ps);
	for (uint32_t i = 0; i < ri->num_ops; i++) {
		struct jrnl_op op;

		oc.off = payload_off(r, ri, off);
		oc.idx = i;
		if (len - off < sizeof(op))
			return OP_BAD(r, &oc, DELOG_EBADOP,
				      "op %u of %u: header runs past the record's %llu bytes", i,
				      ri->num_ops, (unsigned long long)len);
		memcpy(&op, pl + off, sizeof(op));
		off += sizeof(op);
		if (op.len > len - off)
			return OP_BAD(r, &oc, DELOG_EBADOP,
				      "op %u of tid %#x: %u bytes run past the record's %llu", i,
				      op.tid, op.len, (unsigned long long)len);
		if ((op.flags & ~JRNL_OP_FLAGS_KNOWN) || op.reserved || op.type < JRNL_T_START ||
		    op.type > JRNL_T_UNMOUNT)
			return OP_BAD(r, &oc, DELOG_EBADOP,
				      "op %u of tid %#x: unknown type %u or flags %#x", i, op.tid,
				      op.type, op.flags);
		if ((op.flags & JRNL_OP_CONTINUE) && i + 1 != ri->num_ops)
			return OP_BAD(r, &oc, DELOG_EBADOP,
				      "op %u of tid %#x carries CONTINUE but is not its record's last",
				      i, op.tid);
		if (r->on_op) {
			struct jrnl_op_view ov = {
				.rec_lsn = ri->lsn,
				.offset = oc.off,
				.idx = i,
				.tid = op.tid,
				.len = op.len,
				.flags = op.flags,
				.type = op.type,
				.data = pl + off,
			};

			err = r->on_op(r->priv, &ov);
			if (err)
				return err;
		}
		err = op_piece(r, ps, &op, pl + off, &oc, first_rec);
		if (err)
			return err;
		off = min64(len, off + ((op.len + 7ull) & ~7ull));
	}
	for (; off < len; off++) {
		if (pl[off]) {
			oc.off = payload_off(r, ri, off);
			return OP_BAD(r, &oc, DELOG_EBADOP,
				      "non-zero bytes after the last of %u ops", ri->num_ops);
		}
	}
	return 0;
}

/* A record of the main pass failed its check: say what and where. */
static int rec_damage(struct rctx *r, int v, const unsigned char *p, uint64_t n, uint64_t a)
{
	unsigned long long sec = a % r->N;

	switch (v) {
	case JRNL_REC_FOREIGN:
	case JRNL_REC_VERSION:
	case JRNL_REC_GEOMETRY:
		return hard_damage(r, v, a, p);
	case JRNL_REC_SHORT:
		return corrupt(r, DELOG_ECORRUPT, a, dev_off(r, a),
			       "record at sector %llu runs past the head", sec);
	case JRNL_REC_TORN:
		for (uint64_t k = 1; k < n; k++) {
			uint32_t c = jrnl_sector_cycle(p + k * r->S);

			if (c != lap_cycle((a + k) / r->N))
				return corrupt(r, DELOG_ECORRUPT, a, dev_off(r, a + k),
					       "sector %llu of the record at sector %llu carries "
					       "cycle %u, expected %u",
					       (unsigned long long)((a + k) % r->N), sec, c,
					       lap_cycle((a + k) / r->N));
		}
		return corrupt(r, DELOG_ECORRUPT, a, dev_off(r, a),
			       "record at sector %llu is not completely written", sec);
	case JRNL_REC_CRC:
		return corrupt(r, DELOG_ECHECKSUM, a, dev_off(r, a),
			       "record at sector %llu fails its CRC", sec);
	case REC_WRONG_LAP:
		return corrupt(r, DELOG_ECORRUPT, a, dev_off(r, a),
			       "record at sector %llu has cycle %u, expected %u (stale lap)", sec,
			       rd32(p + 4), lap_cycle(a / r->N));
	default:
		return corrupt(r, DELOG_ECORRUPT, a, dev_off(r, a),
			       "no valid record header at sector %llu", sec);
	}
}

/*
 * Read [T, E) with reads_in_flight chained reads outstanding, check every record, parse
 * its ops and replay complete checkpoints.
 */
static int replay_pass(struct rctx *r)
{
	struct fread fr = { .r = r, .nslots = r->inflight + 1, .next = r->T, .end = r->E };
	struct parse ps = { 0 };
	unsigned char *carry, *p;
	uint64_t pos = r->T, prev_lsn = 0;
	bool first = true;
	struct rinfo ri;
	int err = 0, v;

	carry = iol_buf_alloc(r->dev, MAXREC_BYTES);
	if (!carry)
		return -ENOMEM;
	pthread_mutex_init(&fr.lock, NULL);
	pthread_cond_init(&fr.cond, NULL);
	for (unsigned i = 0; i < fr.nslots; i++) {
		fr.slot[i].fr = &fr;
		fr.slot[i].buf = iol_buf_alloc(r->dev, r->chunk);
		if (!fr.slot[i].buf)
			err = -ENOMEM;
	}
	if (!err)
		err = fr_issue(&fr);
	while (!err && pos < r->E) {
		uint64_t n;

		err = fr_bytes(&fr, pos, 1, carry, &p);
		if (err)
			break;
		n = min64(rec_span(r, p), r->E - pos);
		err = fr_bytes(&fr, pos, n, carry, &p);
		if (err)
			break;
		v = check_rec(r, p, n, pos, &ri);
		if (v != JRNL_REC_OK) {
			err = rec_damage(r, v, p, n, pos);
			break;
		}
		if (!first && ri.prev_lsn != prev_lsn) {
			err = corrupt(r, DELOG_ECORRUPT, pos, dev_off(r, pos),
				      "record at sector %llu links back to lsn %u/%u, not to the "
				      "record before it at %u/%u",
				      (unsigned long long)(pos % r->N), jrnl_lsn_cycle(ri.prev_lsn),
				      jrnl_lsn_sector(ri.prev_lsn), jrnl_lsn_cycle(prev_lsn),
				      jrnl_lsn_sector(prev_lsn));
			break;
		}
		if (r->on_record) {
			struct jrnl_rec_view rv = {
				.lsn = ri.lsn,
				.tail_lsn = ri.tail_lsn,
				.durable_lsn = ri.durable_lsn,
				.prev_lsn = ri.prev_lsn,
				.offset = dev_off(r, pos),
				.cycle = rd32(p + 4),
				.len = ri.len,
				.num_ops = ri.num_ops,
				.hdr_sectors = ri.h,
				.payload_sectors = ri.p,
				.crc = rd32(p + 48),
				.logbufs = rd32(p + 80),
				.logbsize = rd32(p + 84),
				.wraps = pos % r->N + ri.h + ri.p > r->N,
			};

			err = r->on_record(r->priv, &rv);
			if (err)
				break;
		}
		jrnl_rec_unpack(p, r->S);
		err = parse_record(r, &ps, p, &ri, first);
		if (err)
			break;
		r->rep->records++;
		prev_lsn = ri.lsn;
		pos = ri.end;
		first = false;
	}
	fr_drain(&fr);
	if (!err) {
		for (size_t i = 0; i < ps.ntx; i++)
			r->rep->dropped += !ps.tx[i].skip;
		r->rep->clean = r->rep->records && ps.rec_unmount;
	}
	for (size_t i = 0; i < ps.ntx; i++)
		tx_free(&ps.tx[i]);
	tx_free(&ps.spare);
	free(ps.tx);
	free(ps.views);
	for (unsigned i = 0; i < fr.nslots; i++)
		free(fr.slot[i].buf);
	pthread_cond_destroy(&fr.cond);
	pthread_mutex_destroy(&fr.lock);
	free(carry);
	return err;
}

/* ---- step 4: nothing past the head may vouch for it ---- */

/* Is there a valid record of the current lap starting in [from, to) that says the log
 * was stable beyond E? */
static int scan_future(struct rctx *r, uint64_t from, uint64_t to)
{
	struct rinfo ri;
	unsigned char *p;
	uint64_t span;
	int err, v;

	for (uint64_t s = from; s < to;) {
		err = win_get(r, s, min64(to, s + r->maxrec), from, to, true, &p);
		if (err)
			return err;
		span = rec_span(r, p);
		if (rd32(p) != JRNL_REC_MAGIC) {
			s++;
			continue;
		}
		v = check_rec(r, p, min64(span, to - s), s, &ri);
		if (is_hard(v))
			return hard_damage(r, v, s, p);
		if (v != JRNL_REC_OK) {
			s++;
			continue;
		}
		if (rec_durable(r, &ri) > r->E)
			return corrupt(r, DELOG_ECORRUPT, r->E, dev_off(r, r->E),
				       "record at sector %llu past the head says the log was stable "
				       "up to lsn %u/%u: the damage at the head is not a torn write",
				       (unsigned long long)(s % r->N),
				       jrnl_lsn_cycle(ri.durable_lsn),
				       jrnl_lsn_sector(ri.durable_lsn));
		r->seen_end = max64(r->seen_end, ri.end);
		s = ri.end;
	}
	return 0;
}

/*
 * After the main pass, so that a prefix is replayed either way.  Past the window
 * nothing of the current lap can be a write in flight, so probes at doubling distances
 * look for such sectors cheaply; where one shows the current lap, the records around it
 * are examined.
 */
static int check_past_head(struct rctx *r)
{
	uint64_t stop = r->T + r->N, lim = min64(r->hc0 + r->window + r->maxrec, stop);
	uint32_t c;
	int err;

	err = scan_future(r, r->E, lim);
	for (unsigned k = 0; !err && k < 63; k++) {
		uint64_t q = lim + (1ull << k) - 1;

		if (q >= stop)
			break;
		err = sector_cycle(r, q % r->N, &c);
		if (!err && c && c == lap_cycle(q / r->N))
			err = scan_future(r, max64(lim, q - min64(q, r->maxrec)),
					  min64(stop, q + r->maxrec));
	}
	return err;
}

/* ---- step 5: stamp the sectors past the head ---- */

/*
 * Only the sectors that carry the current lap's cycle for their address are rewritten
 * (R8): what the crashed session wrote past the head.  A sector already showing an
 * older lap reads as "not written" to every later recovery, and rewriting it would put
 * it at risk: a power cut during stamping may leave any stamped sector garbled, and a
 * garbled sector outside the writer's window (say, in released space of this lap at
 * the start of the log, behind the tail) breaks the monotonic cycles the head search
 * relies on, so every later open would fail.  The sectors rewritten here are exactly
 * those the crashed writer left unflushed, all within its window (L13 in log.c), where
 * a later recovery already expects garbage from a torn write.
 */
static int stamp_past_head(struct rctx *r)
{
	uint64_t to = min64(max64(r->hc0, r->seen_end) + r->window + r->maxrec, r->T + r->N);
	unsigned char *buf = r->win.buf;
	struct iol_req flush;
	int err = 0;

	r->win.lo = r->win.hi = 0; /* the buffer is reused for writing */
	for (uint64_t a = r->E; a < to;) {
		uint64_t n = min64(min64(to - a, r->cap), r->N - a % r->N), i = 0;

		err = read_addr(r, a, n, buf);
		if (err)
			return err;
		while (i < n) {
			uint64_t j;
			uint32_t c = lap_cycle((a + i) / r->N - 1);

			if (jrnl_sector_cycle(buf + i * r->S) != lap_cycle((a + i) / r->N)) {
				i++;
				continue;
			}
			/* A run of sectors this lap wrote: the previous lap's cycle, zeroes. */
			for (j = i; j < n &&
				    jrnl_sector_cycle(buf + j * r->S) == lap_cycle((a + j) / r->N);
			     j++) {
				memset(buf + j * r->S, 0, r->S);
				memcpy(buf + j * r->S, &c, sizeof(c));
			}
			err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_WRITE, 0), dev_off(r, a + i),
					  buf + i * r->S, (size_t)((j - i) * r->S), NULL);
			if (err)
				return err;
			r->rep->stamped_bytes += (j - i) * r->S;
			i = j;
		}
		a += n;
	}
	err = iol_req_init(&flush, r->dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));
	if (!err) {
		err = iol_submit_wait(&flush);
		iol_req_release(&flush);
	}
	return err;
}

/*
 * A log in which no valid record was found (R10).  The writer leaves nothing beyond its
 * unflushed window before its first flush (L13), so a log whose only writes were torn
 * has sectors written within the window from the start at most: anything written beyond
 * it means the records are there but unreadable as this superblock describes them.  If
 * the first record reads back under the other sector size, the superblock's sector size
 * is wrong (DELOG_EGEOMETRY); otherwise the start of the log is damaged (DELOG_ECORRUPT).
 * Either way nothing is stamped over it.
 */
static int check_empty(struct rctx *r)
{
	uint32_t other = r->S == 512 ? 4096 : 512;
	uint64_t from = min64(r->window, r->N - 1), n = r->N - from;
	unsigned char *alt;
	bool written = false;
	int err;

	if (r->have_last || r->E > r->N)
		return 0;
	for (unsigned k = 0; k < 64 && !written; k++) {
		uint64_t sec = from + n * k / 64;

		err = read_addr(r, r->N + sec, 1, r->sec);
		if (err)
			return err;
		for (uint32_t i = 0; i < r->S && !written; i++)
			written = r->sec[i] != 0;
	}
	if (!written)
		return 0;
	alt = iol_buf_alloc(r->dev, MAXREC_BYTES);
	if (!alt)
		return -ENOMEM;
	err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_READ, 0), r->g->log_start, alt,
			  (size_t)min64(MAXREC_BYTES, r->g->log_size), NULL);
	if (!err && jrnl_rec_check(alt, (size_t)min64(MAXREC_BYTES, r->g->log_size), other,
				   r->g->log_size / other, 0, r->g->uuid, NULL) == JRNL_REC_OK)
		err = corrupt(r, DELOG_EGEOMETRY, r->N, dev_off(r, 0),
			      "the superblock says %u-byte sectors, but the first record was "
			      "written with %u-byte sectors",
			      r->S, other);
	else if (!err)
		err = corrupt(r, DELOG_ECORRUPT, r->N, dev_off(r, 0),
			      "no valid record at the start of the log, yet sectors beyond the "
			      "first writes' window were written");
	free(alt);
	return err;
}

/*
 * Steps 3 and 4, so that the callback sees checkpoints only once the verdict is known
 * (R9): with a replay callback, a first main pass verifies [T, E) with no callback and no
 * observers, step 4 checks past the head, and only if both hold does a second main pass
 * hand the checkpoints over.  The log is read twice; nothing between the passes writes
 * it, so the second finds what the first did.  Without a callback, one pass.
 */
static int verify_then_replay(struct rctx *r)
{
	jrnl_replay_fn replay = r->replay;
	jrnl_rec_fn on_record = r->on_record;
	jrnl_op_fn on_op = r->on_op;
	struct jrnl_report *rep = r->rep;
	int err;

	if (replay) {
		r->replay = NULL;
		r->on_record = NULL;
		r->on_op = NULL;
	}
	err = replay_pass(r);
	if (!err)
		err = check_past_head(r);
	if (err || !replay)
		return err;
	r->replay = replay;
	r->on_record = on_record;
	r->on_op = on_op;
	rep->records = rep->checkpoints = rep->items = rep->bytes_replayed = rep->dropped = 0;
	return replay_pass(r);
}

/* ---- entry ---- */

static void fill_report(struct rctx *r)
{
	struct jrnl_report *rep = r->rep;

	rep->head_lsn = addr_lsn(r, r->E);
	rep->tail_lsn = addr_lsn(r, r->T);
	rep->empty = !r->have_last && r->E == r->N;
	if (r->have_last) {
		rep->last_lsn = r->last.lsn;
		rep->durable_lsn = r->last.durable_lsn;
	}
}

int jrnl_recover(struct iol_dev *dev, const struct jrnl_geom *g, const struct jrnl_recover_opts *o,
		 struct jrnl_report *rep)
{
	static const struct jrnl_recover_opts defaults;
	struct jrnl_report scratch;
	struct rctx r = { 0 };
	size_t chunk;
	int err;

	if (!o)
		o = &defaults;
	if (!rep)
		rep = &scratch;
	memset(rep, 0, sizeof(*rep));
	if (!dev || !g || (g->sector != 512 && g->sector != 4096) || g->log_sectors < 2 ||
	    g->log_sectors > UINT32_MAX || g->log_size != g->log_sectors * g->sector)
		return -EINVAL;

	chunk = o->read_chunk ? o->read_chunk : CHUNK_DEFAULT;
	chunk = chunk < CHUNK_MIN ? CHUNK_MIN : chunk > CHUNK_MAX ? CHUNK_MAX : chunk;
	chunk -= chunk % IOL_SEG_BYTES;
	r.dev = dev;
	r.g = g;
	r.rep = rep;
	r.replay = o->replay;
	r.on_record = o->on_record;
	r.on_op = o->on_op;
	r.priv = o->priv;
	r.S = g->sector;
	r.N = g->log_sectors;
	r.maxrec = MAXREC_BYTES / r.S;
	r.window = jrnl_window_sectors(r.N, r.S);
	r.chunk = chunk;
	r.cap = chunk / r.S;
	r.inflight = o->reads_in_flight < 2            ? 2 :
		     o->reads_in_flight > INFLIGHT_MAX ? INFLIGHT_MAX :
							 o->reads_in_flight;
	r.per_req = iol_max_segs(dev, IOL_MAX_SEGS_DEFAULT);
	r.sec = iol_buf_alloc(dev, r.S);
	r.win.buf = iol_buf_alloc(dev, chunk);
	r.win.cap = r.cap;
	err = r.sec && r.win.buf && r.per_req ? 0 : -ENOMEM;

	if (!err)
		err = find_head(&r);
	if (!err)
		err = settle_head(&r);
	if (!err)
		err = check_empty(&r);
	if (!err) {
		fill_report(&r);
		err = verify_then_replay(&r);
	}
	if (!err)
		rep->torn_bytes = (max64(r.hc0, r.seen_end) - r.E) * r.S;
	if (!err && !o->read_only) {
		err = stamp_past_head(&r);
		/* The flush made every write the device had completed stable, so the whole
		 * log before the head is now durable: the writer may say so. */
		if (!err)
			rep->durable_lsn = rep->head_lsn;
	}
	free(r.sec);
	free(r.win.buf);
	return err;
}
