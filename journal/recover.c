/*
 * recover.c - log recovery: find the head and the tail, verify every record between
 * them, reassemble checkpoints and hand the complete ones to the caller in log order,
 * then stamp the sectors past the head so that a later crash recovers the same state.
 * docs/DESIGN.md section 3 says what it keeps from XFS's; docs/FORMAT.md has the bytes.
 * Step 3, the main pass, reads the whole log forward and is a file of its own
 * (recover_pass.c); what both share, the run's state, one record's check and the
 * damage reports, is recover_rec.h and recover_rec.c.
 *
 * Addresses.  Inside recovery (this file and recover_pass.c) a position in the log is an
 * *address*, lap * N + sector, N being the log's size in sectors and the lap the cycle
 * with the skipped magic value taken out (jrnl_rcv_cycle_lap, jrnl_rcv_lap_cycle).
 * Address order is LSN order, a distance is a subtraction, and cycle stamping says
 * exactly: the sector at address a carries the cycle of lap a / N once that lap has
 * written it.  Lap 0 (cycle 0) is "never written", so the first record ever written is
 * at address N.  (After 2^32 - 2 laps the cycle would wrap; not handled.)
 *
 * Algorithm.
 *  1. Provisional head hc (find_head).  The writer's unflushed bound (L13) confines what
 *     a power cut can leave unstable to the in-flight window [P, P + W), P being what the
 *     last completed flush covered and W at most half the log: every sector outside it
 *     carries the cycle of its address, and a sector inside it may hold the previous lap,
 *     this one, garbage, one constant byte, another sector's bytes, or fail to read.  So
 *     no single sector is evidence, and the search never asks which end to believe.
 *     Nine probes (sector 0, the eighths, the last sector) are read; a probe inside a
 *     valid record is where its cycle says, and the highest such probe, when that
 *     provably includes one outside the window, is the anchor lo in [P + W - N, P + W)
 *     (find_anchor; otherwise the whole log is read for its highest valid record).  A
 *     binary search of (lo, lo + N] for a sector that does not carry its lap while the
 *     one before it does ends in [P, P + W] whatever the window holds (R11).  Then read
 *     the window before hc, from the end of lo's record on, and move hc to the first
 *     sector carrying the wrong cycle for its address: a buffer written out of order left
 *     a hole there.
 *  2. Settle the head E and the last good record L (settle_head).  From E = hc: L is the
 *     last valid record ending at or before E, found by scanning back for the record
 *     magic (a payload sector never starts with it: cycles skip that value); [L.end, E)
 *     holds nothing valid and is a torn write, so E = L.end.  The durable point D is the
 *     largest durable_lsn of the valid records seen.  Then walk back along prev_lsn from
 *     L over the records that start after max(D, L.tail): each must be valid.  The first
 *     that is not, at p >= D, was a write in flight: E = p and the step repeats from
 *     there, so L always ends exactly at E and the tail is L's.  A damaged record that
 *     starts before D ends the walk; the main pass reports it.
 *  3. Main pass (recover_pass.c): read [T, E), T = L.tail, in chained reads of read_chunk
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
 *     damaged sector the binary search landed on, a damaged record) is corruption --
 *     unless the log is live (R13): then it is the writer's progress since E was read.
 *  5. Stamp (stamp_past_head), unless read_only (which, with count_stamp, only counts
 *     what stamping would rewrite) or anything failed: of the sectors from E to one
 *     window and one record past hc0 (or past the last valid record seen beyond E),
 *     never reaching T + N, overwrite those carrying the current lap's cycle with the
 *     previous lap's cycle and zeroes (R8), then flush (XFS: xlog_clear_stale_blocks).
 *     Records that survived beyond a torn one, and partial writes past the head, cannot
 *     come back after the next session writes from E and crashes.
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
 *   R4 (what is replayed) is the main pass's, defined in recover_pass.c.
 *  (R5) I/O stays inside the log area and the stamping ends before T + N, the tail's
 *       position one lap on: no live record is overwritten.
 *   R6 (every length from disk bounded) is the main pass's, defined in recover_pass.c.
 *  (R7) Idempotent: a second run finds the same E, L and T (stamping only turns sectors
 *       past E into the old lap, which step 1 and 2 already treated as not written), so
 *       it replays the same checkpoints.  A crash part way through stamping leaves a
 *       mix of stamped and unstamped sectors past E; both are beyond the first hole, so
 *       the next run settles on the same E.
 *  (R11) P <= hc0 <= P + W, P being what the last completed flush covered and W the
 *       unflushed bound, whatever the sectors of [P, P + W) hold: the anchor is a sector
 *       inside a valid record (whose CRC covers every sector's cycle, so no torn, constant
 *       or copied sector passes for one) outside the window or written by this lap inside
 *       it; every sector in (lo, P) carries its lap and none in [P + W, lo + N] does, so
 *       the search ends in the window or at its end, and the hole scan keeps hc in
 *       [P, hc0].  Sectors that fail their record check are never counted, however many
 *       agree.  A torn sector therefore moves the head exactly as the same sector left
 *       unwritten would (docs/FORMAT.md, "How recovery finds the head"), and "empty"
 *       means that no sector of the log holds a valid record of any lap.
 *  (R14) A sector the device cannot read (-EIO) is unknown: it reads as zeroes, which
 *       no step takes for a record or for a cycle of any lap, so in the window it is a
 *       torn write like any other.  Behind the head it is damage, named with its offset
 *       as -EIO (the main pass, step 4, check_empty), and salvage (R12) still keeps
 *       what precedes it.  A request that fails is read again a sector at a time, so
 *       only the sectors that fail alone count.
 *  (R9) A prefix or nothing: complete checkpoints follow one another in sequence, and a
 *       checkpoint left open behind one that committed is an earlier attempt at the
 *       same sequence (a resumed writer's) or corruption; with a replay callback the
 *       whole verdict (steps 3 and 4) is known before the first checkpoint is handed
 *       over (verify_then_replay), so an error never follows a callback.  What is
 *       handed over comes from memory when it fits (recover_hold.c R16), else from a
 *       second read of the log.
 *  (R10) Nothing is written over a log read with the wrong geometry: a header of this
 *       log that does not fit it is DELOG_EGEOMETRY wherever it is met, and a log with
 *       no valid record but writes beyond the first window is refused (check_empty).
 *  (R12) Salvage (jrnl_recover_opts.salvage) changes one thing: the first corruption
 *       that step 3 meets in [T, E), or that step 4 proves at E, ends the log there
 *       instead of failing it.  Everything before it was verified by the same checks
 *       as always, so the checkpoints whose COMMIT precedes it are handed over (R9
 *       still holds: the first pass finds where the log ends before the second hands
 *       anything over); a checkpoint open there is dropped like one open at a head.
 *       Nothing after the damage is handed over, even where valid records follow: a
 *       checkpoint after it may depend on the one the damage destroyed, and no check
 *       of the format can say it does not, so a salvaged log is a prefix, never a
 *       log with a hole.  The region after the damage is only looked at (scan_lost)
 *       to count what was lost, and the sequences it names (read_damaged for the
 *       damaged record, bounded by what it has room for) so that a log replacing
 *       this one numbers past them (high_seq).  Salvage writes nothing (no stamping), and what
 *       leaves no head or tail to start from (steps 1 and 2, check_empty) is refused
 *       as without it.
 *  (R13) A reader of a live log (jrnl_recover_opts.live: a read-only or salvage run
 *       while another open holds the writer lock, iolayer/lock.c) recovers a prefix
 *       that holds everything acknowledged before it began, or fails -EAGAIN; never
 *       a false corruption.  Its reads see each sector at some moment after the start
 *       t0, and the writer changes a sector only from the previous lap to this one,
 *       once a lap.  Let P0 be the durable point at t0.  Every sector before P0 was
 *       stable at t0, so it reads as written (unless the writer has since lapped it,
 *       below); a sector read as unwritten or torn lies at or after P0.  So the head
 *       search's transition and the hole scan land at or after P0 (step 1), and step 2
 *       moves E back only to a record that read as damaged, at or after P0: E >= P0,
 *       and the main pass hands over every checkpoint whose COMMIT is before P0, all
 *       verified.  What differs from a crashed log: sectors read at different moments
 *       need not agree.  A hole may sit before sectors the writer filled after the
 *       hole was read, so a valid record past E may vouch beyond E (step 4): that is
 *       the writer's progress, not damage, and step 4 passes it over.  A record read
 *       while being written, and behind it one sealed after it was stable (step 2's D),
 *       or the writer lapping the log into [T, E) while it is read (the records gone to
 *       the next lap, or changed under the read), make a run fail with damage that is
 *       not there: a live run that fails with damage before anything was handed over
 *       starts over, at most JRNL_LIVE_TRIES runs, then fails -EAGAIN with the last
 *       finding.  So that its passes agree, a live run that writes nothing reads a copy
 *       of the log area made in one sweep (live_copy; up to JRNL_LIVE_COPY_MAX): the
 *       sweep is the only read that sees the writer, and handing over reads what the
 *       verifying pass read.  A run that reads the device itself (a larger log,
 *       live_in_place) can meet the writer while handing over: that cannot start over
 *       (the callback has seen checkpoints) and fails -EAGAIN at once.  A run that was
 *       not live but failed with damage checks the lock again (a writer that opened
 *       meanwhile, whose recovery stamped past the head) and starts over live if it is
 *       held.  Real damage under a live writer is seen as -EAGAIN, not
 *       as its code: the live log is the writer's, whose own open verified it.
 *       Nothing is stamped: a live run is read_only or salvage.
 *  (R15) A follower (follow_lsn, replay_from; engine/reader.c) reads only what it has
 *       not read: the main pass starts at the record holding the last COMMIT it took
 *       when that record lies in [T, E], the same lap (the tail has not passed it),
 *       else at T.  Steps 1, 2 and 4 run as always, so the head and the verdict are a
 *       full run's; records in [T, from) are not read again (the follower verified
 *       them when it took them).  A COMMIT met from there whose START lies before
 *       from is a checkpoint the follower took (a writer writes checkpoints one after
 *       another, so the next one's START follows that COMMIT): it is skipped as one
 *       before the tail is.  Checkpoints below replay_from are verified and skipped.
 *  (R8) Recovery's writes are as crash-safe as the writer's: stamping rewrites only
 *       sectors the crashed session wrote past the head, which the writer's unflushed
 *       bound (L13 in log.c, format.h JRNL_UNFLUSHED_MAX) confines to the window past
 *       the durable point; a power cut that garbles some of them leaves a state a torn
 *       write could have left, which the next run handles as such.  The window this
 *       file assumes (WINDOW_BYTES) is that bound.
 */
#include "format.h"
#include "record.h"
#include "recover_rec.h"

#include "io_sim.h"

#include <delog.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_DEFAULT (4u << 20)
#define CHUNK_MIN (1u << 20) /* >= 2 records: see win_get */
#define CHUNK_MAX (256u << 20)

static uint32_t rd32(const void *p)
{
	uint32_t v;

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
		err = jrnl_rcv_read(r, lo, hi - lo, w->buf);
		if (err)
			return err;
		w->lo = lo;
		w->hi = hi;
	}
	*out = w->buf + (a - w->lo) * r->S;
	return 0;
}

/* The durable point a valid record vouches for, as an address.  A record can only know
 * about writes before itself, so a claim beyond its own start is cut back to it. */
static uint64_t rec_durable(const struct rctx *r, const struct rinfo *ri)
{
	uint64_t d;

	if (!jrnl_rcv_lsn_addr(r, ri->durable_lsn, &d))
		return 0;
	return min64(d, ri->a);
}

static bool is_hard(int v)
{
	return v == JRNL_REC_FOREIGN || v == JRNL_REC_VERSION || v == JRNL_REC_GEOMETRY;
}

/* ---- step 1: the provisional head ---- */

/* Sectors the head search reads first: sector 0, seven at eighths of the log and the
 * last one.  At most five of them lie in the in-flight window (half the smallest log). */
#define PROBES 9u

static int sector_cycle(struct rctx *r, uint64_t sector, uint32_t *c)
{
	int err = jrnl_rcv_read(r, r->N + sector, 1, r->sec);

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
		*yes = c == jrnl_rcv_lap_cycle(a / r->N);
	return err;
}

/*
 * Is the probe at address @x inside a valid record (R11)?  The record holding a sector
 * starts at the first sector before it that begins with the record magic (a payload
 * sector never does: cycles skip that value), at most a record's length back.  Read
 * backwards in small steps to find it, then check the whole record: its CRC covers
 * every sector's cycle stamp, so a sector it holds is where its cycle says it is.
 */
static int probe_verified(struct rctx *r, uint64_t x, unsigned char *buf, bool *ok, uint64_t *end)
{
	uint64_t step = min64(r->maxrec, max64(1, (64u << 10) / r->S)), hi = x + 1, lo, span;
	struct rinfo ri;
	int err, v;

	*ok = false;
	while (hi > r->N && x + 1 - hi < r->maxrec) {
		lo = max64(r->N, max64(hi - min64(step, hi), x + 1 - r->maxrec));
		err = jrnl_rcv_read(r, lo, hi - lo, buf);
		if (err)
			return err;
		for (uint64_t a = hi; a-- > lo;) {
			const unsigned char *p = buf + (a - lo) * r->S;

			if (rd32(p) != JRNL_REC_MAGIC)
				continue;
			span = jrnl_rcv_rec_span(r, p);
			if (a + span <= x)
				return 0; /* the probe follows the record: no record holds it */
			err = jrnl_rcv_read(r, a, span, buf);
			if (err)
				return err;
			v = jrnl_rcv_check_rec(r, buf, span, a, &ri);
			*ok = v == JRNL_REC_OK;
			*end = ri.end;
			return 0;
		}
		hi = lo;
	}
	return 0;
}

/*
 * The whole log, for the highest address that a valid record of any lap holds (R11),
 * when the probes cannot show one.  Every sector is read once; a record found is
 * checked in full and skipped over.
 */
static int scan_all(struct rctx *r, uint64_t *best, uint64_t *best_end, bool *found)
{
	uint64_t lim = 2 * r->N + r->maxrec, span;
	unsigned char *p;
	struct rinfo ri;
	int err;

	*found = false;
	for (uint64_t a = r->N; a < 2 * r->N;) {
		uint64_t lap, h;

		err = win_get(r, a, a + 1, r->N, lim, true, &p);
		if (err)
			return err;
		lap = rd32(p) == JRNL_REC_MAGIC ? jrnl_rcv_cycle_lap(rd32(p + 4)) : 0;
		if (!lap) {
			a++;
			continue;
		}
		span = jrnl_rcv_rec_span(r, p);
		err = win_get(r, a, a + span, r->N, lim, true, &p);
		if (err)
			return err;
		h = lap * r->N + a % r->N;
		if (jrnl_rcv_check_rec(r, p, span, h, &ri) != JRNL_REC_OK) {
			a++;
			continue;
		}
		if (!*found || ri.end - 1 > *best) {
			*best = ri.end - 1;
			*best_end = ri.end;
		}
		*found = true;
		a += span;
	}
	return 0;
}

/*
 * The anchor of the head search (R11): an address, carrying its lap, in
 * [P + W - N, P + W).  Only a sector inside a valid record is evidence: it is where its
 * cycle says it is, and it lies in [P - N, P + W), since a valid record in the window is
 * this lap's write or the last lap's.  One outside the window lies in [P + W - N, P).
 * Sectors that fail the check prove nothing, however many of them agree: a window that
 * reads back as zeroes, 0xff or copies holds equal bytes in every sector.
 *
 * So the anchor is the highest probe inside a valid record, when that provably includes
 * one outside the window: more such probes than a window can hold, or else no probe
 * that is neither that nor "never written" (cycle 0, which no sector outside the window
 * reads in a log past its first lap, the only one with no last lap to be mistaken for).
 * Otherwise the whole log is read for its highest valid record.  @found is false only
 * if the log holds no valid record at all.
 */
static int find_anchor(struct rctx *r, uint64_t *anchor, uint64_t *anchor_end, bool *found)
{
	uint64_t in_window = min64(PROBES, r->window * (PROBES - 1) / r->N + 2), best = 0;
	uint64_t end = 0, best_end = 0;
	unsigned verified = 0, loud = 0;
	unsigned char *buf = iol_buf_alloc(r->dev, MAXREC_BYTES);
	uint32_t c;
	bool ok;
	int err = buf ? 0 : -ENOMEM;

	for (unsigned i = 0; !err && i < PROBES; i++) {
		uint64_t s = i + 1 < PROBES ? i * r->N / (PROBES - 1) : r->N - 1, x;

		err = sector_cycle(r, s, &c);
		if (!err && !c && jrnl_rcv_any_unreadable(r, r->N + s, r->N + s + 1, &x))
			loud++; /* unreadable: unknown, not "never written" (R14) */
		if (err || !c)
			continue;
		x = jrnl_rcv_cycle_lap(c) * r->N + s;
		err = probe_verified(r, x, buf, &ok, &end);
		if (!err && ok) {
			if (!verified++ || x > best) {
				best = x;
				best_end = end;
			}
		} else if (!err) {
			loud++;
		}
	}
	free(buf);
	if (err)
		return err;
	if (verified && (verified > in_window || !loud)) {
		r->rep->anchor_probes = verified;
		*anchor = best;
		*anchor_end = best_end;
		*found = true;
		return 0;
	}
	r->rep->anchor_scanned = true;
	return scan_all(r, anchor, anchor_end, found);
}

/*
 * Find the provisional head (R11): from the anchor lo, which carries its lap, search
 * (lo, lo + N] for a sector that does not while the one before it does; lo + N is the
 * anchor's own sector one lap on, so it does not.  Then move back to the first hole in
 * the in-flight window before it: a buffer written out of order left one there.
 */
static int find_head(struct rctx *r)
{
	uint64_t lo, hi, hc, lo_end = 0;
	unsigned char *p;
	bool yes, found;
	int err;

	err = find_anchor(r, &lo, &lo_end, &found);
	if (err)
		return err;
	if (!found) {
		/* No valid record anywhere: the head is at the log's first sector, and what
		 * the first lap wrote of its first window is a torn write (R1). */
		r->hc = r->N;
		r->hc0 = r->N;
		r->no_record = true;
		for (uint64_t a = r->N; a < r->N + r->window;) {
			uint64_t n = min64(r->N + r->window - a, r->cap);

			err = win_get(r, a, a + n, r->N, r->N + r->window, true, &p);
			if (err)
				return err;
			for (uint64_t i = 0; i < n; i++)
				if (jrnl_sector_cycle(p + i * r->S) == jrnl_rcv_lap_cycle(1))
					r->hc0 = a + i + 1;
			a += n;
		}
		return 0;
	}
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

	/* Holes left by writes that completed out of order: in the window, and after the
	 * record that vouched for the anchor, every sector of which this lap wrote. */
	lo = max64(max64(r->N, lo_end), hc - min64(r->window, min64(hc, r->N - 1)));
	for (uint64_t a = lo; a < hc;) {
		uint64_t n = min64(hc - a, r->cap);

		err = win_get(r, a, a + n, lo, hc, true, &p);
		if (err)
			return err;
		for (uint64_t i = 0; i < n; i++) {
			if (jrnl_sector_cycle(p + i * r->S) != jrnl_rcv_lap_cycle((a + i) / r->N)) {
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
		span = min64(jrnl_rcv_rec_span(r, p), e - s);
		v = jrnl_rcv_check_rec(r, p, span, s, ri);
		if (v == JRNL_REC_OK) {
			*found = true;
			return 0;
		}
		if (is_hard(v))
			return jrnl_rcv_hard_damage(r, v, s, p);
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
			return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, E, jrnl_rcv_dev_off(r, E), "",
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
	if (!jrnl_rcv_lsn_addr(r, L.tail_lsn, &T) || T < r->N || T > L.a || T + r->N < L.end)
		return jrnl_rcv_corrupt(r, DELOG_ECORRUPT, L.a, jrnl_rcv_dev_off(r, L.a),
					"rec.tail_lsn",
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

		if (!cur.prev_lsn || !jrnl_rcv_lsn_addr(r, cur.prev_lsn, &pa) || pa >= cur.a ||
		    cur.a - pa > r->maxrec || pa < floor)
			break; /* a broken link: the main pass reports it */
		err = win_get(r, pa, cur.a, floor, E, false, &p);
		if (err)
			return err;
		v = jrnl_rcv_check_rec(r, p, cur.a - pa, pa, &R);
		if (v == JRNL_REC_OK && R.end == cur.a) {
			D = max64(D, rec_durable(r, &R));
			continue;
		}
		if (is_hard(v))
			return jrnl_rcv_hard_damage(r, v, pa, p);
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

/* ---- step 3: the main pass (recover_pass.c) ---- */

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
		span = jrnl_rcv_rec_span(r, p);
		if (rd32(p) != JRNL_REC_MAGIC) {
			s++;
			continue;
		}
		v = jrnl_rcv_check_rec(r, p, min64(span, to - s), s, &ri);
		if (is_hard(v))
			return jrnl_rcv_hard_damage(r, v, s, p);
		if (v != JRNL_REC_OK) {
			s++;
			continue;
		}
		if (rec_durable(r, &ri) > r->E && r->live) {
			/* (R13) A live writer's progress past the head this run chose. */
			s = ri.end;
			continue;
		}
		if (rec_durable(r, &ri) > r->E) {
			uint64_t x;

			/* Salvage (R12) drops this record too: count it past the head. */
			r->seen_end = max64(r->seen_end, ri.end);
			if (jrnl_rcv_any_unreadable(r, r->E, s, &x))
				return jrnl_rcv_corrupt(
					r, -EIO, r->E, jrnl_rcv_dev_off(r, x), "",
					"sector %llu cannot be read (EIO), yet the record at sector "
					"%llu says the log was stable past it",
					(unsigned long long)(x % r->N),
					(unsigned long long)(s % r->N));
			return jrnl_rcv_corrupt(
				r, DELOG_ECORRUPT, r->E, jrnl_rcv_dev_off(r, r->E), "",
				"record at sector %llu past the head says the log was stable "
				"up to lsn %u/%u: the damage at the head is not a torn write",
				(unsigned long long)(s % r->N), jrnl_lsn_cycle(ri.durable_lsn),
				jrnl_lsn_sector(ri.durable_lsn));
		}
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
		if (!err && c && c == jrnl_rcv_lap_cycle(q / r->N))
			err = scan_future(r, max64(lim, q - min64(q, r->maxrec)),
					  min64(stop, q + r->maxrec));
	}
	return err;
}

/* ---- step 5: stamp the sectors past the head ---- */

/*
 * With @write false nothing is written or flushed: the sectors it would rewrite are
 * counted in stamp_needed (a read-only caller asking whether recovery has anything to
 * write).
 *
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
static int stamp_past_head(struct rctx *r, bool write)
{
	uint64_t to = min64(max64(r->hc0, r->seen_end) + r->window + r->maxrec, r->T + r->N);
	unsigned char *buf = r->win.buf;
	struct iol_req flush;
	int err = 0;

	r->win.lo = r->win.hi = 0; /* the buffer is reused for writing */
	for (uint64_t a = r->E; a < to;) {
		uint64_t n = min64(min64(to - a, r->cap), r->N - a % r->N), i = 0;

		err = jrnl_rcv_read(r, a, n, buf);
		if (err)
			return err;
		while (i < n) {
			uint64_t j;
			uint32_t c = jrnl_rcv_lap_cycle((a + i) / r->N - 1);

			if (jrnl_sector_cycle(buf + i * r->S) !=
			    jrnl_rcv_lap_cycle((a + i) / r->N)) {
				i++;
				continue;
			}
			/* A run of sectors this lap wrote: the previous lap's cycle, zeroes. */
			for (j = i; j < n && jrnl_sector_cycle(buf + j * r->S) ==
						     jrnl_rcv_lap_cycle((a + j) / r->N);
			     j++) {
				if (!write)
					continue;
				memset(buf + j * r->S, 0, r->S);
				memcpy(buf + j * r->S, &c, sizeof(c));
			}
			if (!write) {
				r->rep->stamp_needed += (j - i) * r->S;
				i = j;
				continue;
			}
			err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_WRITE, 0),
					  jrnl_rcv_dev_off(r, a + i), buf + i * r->S,
					  (size_t)((j - i) * r->S), NULL);
			if (err)
				return err;
			r->rep->stamped_bytes += (j - i) * r->S;
			i = j;
		}
		a += n;
	}
	if (!write)
		return 0;
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
	uint64_t from = min64(r->window, r->N - 1), n = r->N - from, x;
	unsigned char *alt;
	bool written = false;
	int err;

	if (r->have_last || r->E > r->N)
		return 0;
	/* Nothing was flushed, so only the first window can be torn: an unreadable sector
	 * past it may hold a record, and "empty" is not proven (R14). */
	if (jrnl_rcv_any_unreadable(r, r->N + from, 2 * r->N, &x))
		return jrnl_rcv_corrupt(r, -EIO, r->N, jrnl_rcv_dev_off(r, x), "",
					"no valid record found, and sector %llu, past the first "
					"writes' window, cannot be read: the log is not shown empty",
					(unsigned long long)(x % r->N));
	for (unsigned k = 0; k < 64 && !written; k++) {
		uint64_t sec = from + n * k / 64;

		err = jrnl_rcv_read(r, r->N + sec, 1, r->sec);
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
		err = jrnl_rcv_corrupt(r, DELOG_EGEOMETRY, r->N, jrnl_rcv_dev_off(r, 0),
				       "sb.sector_size",
				       "the superblock says %u-byte sectors, but the first record was "
				       "written with %u-byte sectors",
				       r->S, other);
	else if (!err)
		err = jrnl_rcv_corrupt(r, DELOG_ECORRUPT, r->N, jrnl_rcv_dev_off(r, 0), "",
				       "no valid record at the start of the log, yet sectors beyond the "
				       "first writes' window were written");
	free(alt);
	return err;
}

/* ---- salvage (R12): what the damage cost ---- */

/* The START and COMMIT ops in the record @rec (checked, unpacked): the COMMITs of
 * checkpoints after the last verified one were lost with the damage before them, and
 * every sequence named there may have been given out (lost_high_seq). */
static void count_lost(struct rctx *r, const unsigned char *rec, const struct rinfo *ri)
{
	const unsigned char *pl = rec + (size_t)ri->h * r->S;
	struct jrnl_report *rep = r->rep;
	uint64_t off = 0, seq;
	struct jrnl_op op;

	for (uint32_t i = 0; i < ri->num_ops && ri->len - off >= sizeof(op); i++) {
		memcpy(&op, pl + off, sizeof(op));
		off += sizeof(op);
		if (op.len > ri->len - off)
			break;
		if (op.type == JRNL_T_START && op.flags == JRNL_OP_START &&
		    op.len == sizeof(struct jrnl_start)) {
			memcpy(&seq, pl + off, sizeof(seq));
			rep->lost_high_seq = max64(rep->lost_high_seq, seq);
		}
		if (op.type == JRNL_T_COMMIT && !(op.flags & JRNL_OP_WAS_CONT) &&
		    op.len == sizeof(struct jrnl_commit)) {
			memcpy(&seq, pl + off, sizeof(seq));
			rep->lost_high_seq = max64(rep->lost_high_seq, seq);
			if (!r->have_verified || seq > r->verified_seq) {
				if (!rep->lost_commits || seq < rep->lost_first_seq)
					rep->lost_first_seq = seq;
				if (seq > rep->lost_last_seq)
					rep->lost_last_seq = seq;
				rep->lost_commits++;
			}
		}
		off = min64(ri->len, off + ((op.len + 7ull) & ~7ull));
	}
}

/*
 * The damaged record at @p (@n sectors of it read) failed its checks: read
 * what sequences its START and COMMIT ops still name (damaged_seq).  Nothing in it is
 * verified, so a sequence counts only when it is plausible: the anchor is the last
 * verified or started sequence (no anchor, nothing counts), and every checkpoint
 * between the anchor and a later sequence committed after the anchor's record and
 * before this op, so inside this record, each in a COMMIT op of 48 bytes.  A flipped
 * high bit of a seq therefore cannot make a replacing log number from 2^60.
 */
static void read_damaged(struct rctx *r, unsigned char *rec, const unsigned char *p, uint64_t n)
{
	uint64_t anchor = max64(r->have_verified ? r->verified_seq : 0, r->started_seq);
	uint32_t h, np, len, num_ops;
	uint64_t span = jrnl_rcv_rec_span(r, p), off = 0, seq, lim;
	const unsigned char *pl;
	struct jrnl_op op;

	if (!anchor || span < 2 || span > n || span > r->maxrec)
		return;
	h = rd32(p + offsetof(struct jrnl_rec, hdr_sectors));
	np = rd32(p + offsetof(struct jrnl_rec, payload_sectors));
	len = rd32(p + offsetof(struct jrnl_rec, len));
	num_ops = rd32(p + offsetof(struct jrnl_rec, num_ops));
	if (jrnl_rec_slots(r->S, h) < np || len > (uint64_t)np * r->S)
		return;
	memcpy(rec, p, (size_t)(span * r->S));
	jrnl_rec_unpack(rec, r->S);
	pl = rec + (size_t)h * r->S;
	lim = anchor + 1 + (uint64_t)len / (sizeof(op) + sizeof(struct jrnl_commit));
	for (uint32_t i = 0; i < num_ops && len - off >= sizeof(op); i++) {
		memcpy(&op, pl + off, sizeof(op));
		off += sizeof(op);
		if (op.len > len - off)
			break;
		if ((op.type == JRNL_T_START && op.flags == JRNL_OP_START &&
		     op.len == sizeof(struct jrnl_start)) ||
		    (op.type == JRNL_T_COMMIT && op.flags == JRNL_OP_COMMIT &&
		     op.len == sizeof(struct jrnl_commit))) {
			memcpy(&seq, pl + off, sizeof(seq));
			if (seq <= lim)
				r->rep->damaged_seq = max64(r->rep->damaged_seq, seq);
		}
		off = min64(len, off + ((op.len + 7ull) & ~7ull));
	}
}

/*
 * From the damaged record to the end of the last valid record seen, and on past it as
 * long as valid records follow one another (up to the tail one lap on), count the
 * COMMITs that valid records (jrnl_rcv_check_rec: CRC, uuid, lap) still hold; seen_end
 * moves to the end of the last one.  Their checkpoints are not verified (what came
 * before them is lost) and are never handed over.
 */
static int scan_lost(struct rctx *r)
{
	uint64_t end = max64(r->E, r->seen_end), stop = r->T + r->N, span;
	unsigned char *rec = malloc(MAXREC_BYTES), *p;
	struct rinfo ri;
	int err = 0;

	if (!rec)
		return -ENOMEM;
	for (uint64_t s = r->salvage_a; s < stop;) {
		uint64_t lim = s < end ? end : stop;

		err = win_get(r, s, min64(lim, s + r->maxrec), s, lim, true, &p);
		if (err)
			break;
		span = min64(jrnl_rcv_rec_span(r, p), lim - s);
		if (rd32(p) != JRNL_REC_MAGIC ||
		    jrnl_rcv_check_rec(r, p, span, s, &ri) != JRNL_REC_OK) {
			if (s == r->salvage_a)
				read_damaged(r, rec, p, min64(lim, s + r->maxrec) - s);
			if (s >= end)
				break; /* past what recovery saw: only an unbroken run counts */
			s++;
			continue;
		}
		memcpy(rec, p, (size_t)((ri.end - s) * r->S));
		jrnl_rec_unpack(rec, r->S);
		count_lost(r, rec, &ri);
		r->seen_end = max64(r->seen_end, ri.end);
		s = ri.end;
	}
	free(rec);
	return err;
}

/* Salvage (R12): does @err end the log rather than fail it? */
static bool salvage_stop(const struct rctx *r, int err)
{
	return r->salvage && err && err == r->rep->corruption;
}

/*
 * Steps 3 and 4, so that the callback sees checkpoints only once the verdict is known
 * (R9): with a replay callback, a first main pass verifies [T, E) with no callback and no
 * observers, keeping what it would hand over (recover_hold.c), step 4 checks past the
 * head, and only if both hold is anything handed over: from memory when all of it was
 * kept within hold_bytes, else by a second main pass that reads the log again (nothing
 * between the passes writes it, so the second finds what the first did).  Without a
 * callback, one pass.
 */
/* (R15) Where the main pass starts: the follower's record, or the tail. */
static void follow_from(struct rctx *r, uint64_t follow_lsn)
{
	uint64_t a;

	r->from = r->T;
	if (follow_lsn && jrnl_rcv_lsn_addr(r, follow_lsn, &a) && a >= r->T && a <= r->E) {
		r->from = a;
		r->rep->followed = true;
	}
}

static int verify_then_replay(struct rctx *r)
{
	jrnl_replay_fn replay = r->replay;
	jrnl_rec_fn on_record = r->on_record;
	jrnl_op_fn on_op = r->on_op;
	struct jrnl_report *rep = r->rep;
	struct rhold hold = { .budget = r->hold_budget };
	/* Observers see records as the log holds them: only the log has them. */
	bool keep = replay && !on_record && !on_op;
	int err;

	if (replay) {
		r->replay = NULL;
		r->on_record = NULL;
		r->on_op = NULL;
	}
	if (keep)
		r->hold = &hold;
	err = jrnl_rcv_main_pass(r);
	r->hold = NULL;
	if (!err)
		err = check_past_head(r);
	if (salvage_stop(r, err)) {
		/* A record past the head (a foreign one, say) ends the log at the head. */
		r->salvaged = true;
		r->salvage_a = min64(r->corrupt_a, r->E);
		err = scan_lost(r);
	}
	if (err || !replay) {
		jrnl_rcv_hold_free(&hold);
		return err;
	}
	r->handing = true; /* (R13) from here on, a failure cannot start over */
	r->replay = replay;
	r->on_record = on_record;
	r->on_op = on_op;
	rep->held_peak = hold.peak;
	if (keep && !hold.over) {
		/* Every checkpoint is held (R16): the first pass's counts stand. */
		err = jrnl_rcv_hold_hand_over(r, &hold);
		jrnl_rcv_hold_free(&hold);
		return err;
	}
	jrnl_rcv_hold_free(&hold);
	rep->reread = true;
	rep->records = rep->checkpoints = rep->items = rep->bytes_replayed = rep->dropped = 0;
	rep->held_back = rep->first_seq = rep->last_seq = 0;
	err = jrnl_rcv_main_pass(r);
	/* The same damage ends the second pass where it ended the first (R12). */
	return r->salvaged && err == rep->corruption ? 0 : err;
}

/* ---- entry ---- */

static void fill_report(struct rctx *r)
{
	struct jrnl_report *rep = r->rep;

	rep->head_lsn = jrnl_rcv_addr_lsn(r, r->E);
	rep->tail_lsn = jrnl_rcv_addr_lsn(r, r->T);
	rep->empty = !r->have_last && r->E == r->N;
	if (r->have_last) {
		rep->last_lsn = r->last.lsn;
		rep->durable_lsn = r->last.durable_lsn;
	}
}

/* One run of recovery (steps 1 to 5); *@handing: it handed something over, or called
 * an observer, before it failed (R13: it cannot start over). */
static int recover_once(struct iol_dev *dev, const struct jrnl_geom *g,
			const struct jrnl_recover_opts *o, bool live, struct jrnl_report *rep,
			bool *handing)
{
	struct rctx r = { 0 };
	size_t chunk;
	int err;

	memset(rep, 0, sizeof(*rep));
	rep->corrupt_field = "";
	/* Stamping writes sectors the device could tear with those before them. */
	if (!o->read_only && !o->salvage && jrnl_sector_check(dev, g->sector, NULL, 0))
		return DELOG_EGEOMETRY;

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
	r.window = g->window_sectors;
	r.chunk = chunk;
	r.cap = chunk / r.S;
	r.inflight = o->reads_in_flight < 2            ? 2 :
		     o->reads_in_flight > INFLIGHT_MAX ? INFLIGHT_MAX :
							 o->reads_in_flight;
	r.per_req = iol_max_segs(dev, IOL_MAX_SEGS_DEFAULT);
	r.replay_to = o->replay_to;
	r.replay_from = o->replay_from;
	r.salvage = o->salvage;
	r.live = live;
	r.hold_budget = o->hold_bytes ? o->hold_bytes : jrnl_hold_default();
	/* Observers without a replay callback see the only pass as it goes. */
	r.handing = !o->replay && (o->on_record || o->on_op);
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
		follow_from(&r, o->follow_lsn);
		err = verify_then_replay(&r);
	}
	if (!err && r.salvaged) {
		/* (R12) The kept log ends at the damaged record; what follows is dropped. */
		uint64_t end = max64(r.E, r.seen_end);

		rep->salvaged = true;
		rep->salvage_lsn = jrnl_rcv_addr_lsn(&r, r.salvage_a);
		rep->salvage_offset = jrnl_rcv_dev_off(&r, r.salvage_a);
		rep->salvage_bytes = (end - r.salvage_a) * r.S;
		rep->torn_bytes = r.hc0 > end ? (r.hc0 - end) * r.S : 0;
		rep->clean = false;
	} else if (!err) {
		rep->torn_bytes = (max64(r.hc0, r.seen_end) - r.E) * r.S;
	}
	rep->verified_seq = r.have_verified ? r.verified_seq : 0;
	rep->started_seq = r.started_seq;
	rep->high_seq = max64(max64(rep->verified_seq, rep->started_seq),
			      max64(rep->lost_high_seq, rep->damaged_seq));
	if (!err && !o->read_only && !o->salvage) {
		err = stamp_past_head(&r, true);
		/* The flush made every write the device had completed stable, so the whole
		 * log before the head is now durable: the writer may say so. */
		if (!err)
			rep->durable_lsn = rep->head_lsn;
	} else if (!err && o->count_stamp && !o->salvage) {
		err = stamp_past_head(&r, false);
	}
	free(r.sec);
	free(r.win.buf);
	free(r.bad);
	*handing = r.handing;
	return err;
}

/*
 * (R13) A copy of the log area of @dev in memory, read in one sweep, as a sim device of
 * its own: what recovery reads from it holds still, so its passes agree and handing over
 * never meets the writer.  -EFBIG for a log larger than JRNL_LIVE_COPY_MAX (recovery
 * then reads the device itself).
 */
static int live_copy(struct iol_dev *dev, const struct jrnl_geom *g, struct iol_dev **out)
{
	const uint64_t bytes = g->log_start + g->log_size, chunk = 4u << 20;
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = bytes,
				   .sector = g->sector,
				   .write_through = true,
				   .inline_run = true };
	struct iol_dev_opts io = { .size = sizeof(io), .backend = "sim", .sim = &so };
	unsigned char *img;
	int err = 0;

	*out = NULL;
	if (g->log_size > JRNL_LIVE_COPY_MAX)
		return -EFBIG;
	img = iol_buf_alloc(dev, (size_t)bytes);
	if (!img)
		return -ENOMEM;
	for (uint64_t off = 0; off < bytes && !err; off += chunk)
		err = iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), off, img + off,
				  (size_t)min64(chunk, bytes - off), NULL);
	so.image = img;
	if (!err)
		err = iol_dev_open(NULL, &io, out);
	free(img);
	return err;
}

/* (R13) Could a writer moving on under the read have made this run fail? */
static bool live_suspect(int err, const struct jrnl_report *rep)
{
	return err && err == rep->corruption;
}

int jrnl_recover(struct iol_dev *dev, const struct jrnl_geom *g, const struct jrnl_recover_opts *o,
		 struct jrnl_report *rep)
{
	static const struct jrnl_recover_opts defaults;
	char what[sizeof(rep->corrupt_what)];
	struct jrnl_report scratch;
	bool live, handing = false;
	unsigned tries = 0;
	int err;

	if (!o)
		o = &defaults;
	if (!rep)
		rep = &scratch;
	memset(rep, 0, sizeof(*rep));
	rep->corrupt_field = "";
	if (!dev || !g || (g->sector != 512 && g->sector != 4096) || g->log_sectors < 2 ||
	    g->log_sectors > UINT32_MAX || g->log_size != g->log_sectors * g->sector)
		return -EINVAL;
	/* (R13) A reader learns from the writer lock whether the log is live, before the
	 * run and, if the run failed, after it (a writer that opened meanwhile). */
	live = o->live || ((o->read_only || o->salvage) && iol_dev_writer(dev));
	for (;;) {
		struct iol_dev *copy = NULL;

		/* A live run that writes nothing reads a copy, unless the log is too large. */
		if (live && (o->read_only || o->salvage) && !o->live_in_place) {
			err = live_copy(dev, g, &copy);
			if (err && err != -EFBIG && err != -EIO) /* -EIO: read in place (R14) */
				return err;
		}
		err = recover_once(copy ? copy : dev, g, o, live, rep, &handing);
		iol_dev_close(copy);
		tries++;
		if (!live_suspect(err, rep))
			return err;
		if (!live && !((o->read_only || o->salvage) && iol_dev_writer(dev)))
			return err;
		live = true;
		if (handing || tries == JRNL_LIVE_TRIES)
			break;
	}
	/* The log did not hold still: say what the last run found, and open again. */
	memcpy(what, rep->corrupt_what, sizeof(what));
	if (handing)
		snprintf(rep->corrupt_what, sizeof(rep->corrupt_what),
			 "the writer changed the log while it was being handed over: %.60s", what);
	else
		snprintf(rep->corrupt_what, sizeof(rep->corrupt_what),
			 "the writer changed the log under each of %u reads: %.60s", tries, what);
	rep->corruption = -EAGAIN;
	return -EAGAIN;
}
