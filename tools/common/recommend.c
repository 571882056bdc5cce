/*
 * recommend.c - the one rule that turns what `delog probe` measured on a device into a
 * flush policy and a log-buffer geometry (issue 18); `delog probe` prints it and
 * `delog bench --compare-flush` measures the same costs (costs.c) and checks it against
 * the policies' throughput.  It is in common/ so that both wings use it from below.
 *
 * Why it is a pure function of a few numbers: the probe and the benchmark must reach the
 * same answer from the same measurement, and a unit test (tests/tools/recommend_test.c)
 * must be able to feed it made-up costs and check the documented rule
 * (docs/BENCH.md, "probe's recommendation"), so it reads nothing but its argument.
 *
 * The rule, from what each policy asks of the device per checkpoint
 * (docs/FLUSH-POLICIES.md): sync = one write carrying PREFLUSH|FUA (cost ~ F + FU),
 * single = plain writes, then one flush after the commit completed (~ WF), async = a
 * flush waited for, then a FUA write (~ F + FU, in series: never cheaper than sync, so
 * never recommended); none is unsafe and never recommended.
 *   1. No volatile write cache (write through): flushes and FUA cost the device nothing,
 *      so sync; single would still add a flush call per checkpoint.
 *   2. A volatile cache, native FUA, and F + FU at most 10% above WF: sync.  The flush
 *      rides on the commit write, so consecutive checkpoints' flushes overlap, where
 *      single flushes only after its commit write completed (docs/BENCH.md, the sim
 *      SATA compare-flush block: F + FU equal to WF, sync ahead of single at 8-32
 *      clients).
 *   3. Otherwise (no FUA, FUA unknown, or a FUA write that costs more than a flush):
 *      single.  Without native FUA the kernel turns a FUA write into a write and a flush,
 *      so sync and async pay two flushes per checkpoint, single one.
 * An unknown cache counts as volatile (the safe guess).
 *
 * Buffers: B = sequential write MB/s x WF us is the bytes the device could take during
 * one write + flush round trip.  logbsize is the smallest power of two >= B, so one
 * buffer's transfer is not short next to the flush it waits for; logbufs is 2 (one
 * being filled, one being written and flushed) + ceil(B / logbsize), the buffers the
 * device could take while a flush is outstanding; both clamped to <delog.h>'s limits
 * (logbufs to the ring's most, JRNL_MAX_LOGBUFS, as the engine checks it), and the
 * reason says where a clamp applied and ends with the geometry chosen, "N x S KiB".
 */
#include "costs.h"

#include "jrnl.h"

#include <math.h>
#include <string.h>

_Static_assert(DELOG_LOGBUFS_MAX == JRNL_MAX_LOGBUFS, "logbufs is capped at the ring's most");

#define FUA_SLACK 1.10 /* rule 2: F + FU may exceed WF by this factor */

static void geometry(const struct probe_costs *c, struct probe_rec *r, char *why, size_t len)
{
	double wf = isfinite(c->write_flush_us) && c->write_flush_us > 0 ? c->write_flush_us : 0;
	double mbs = isfinite(c->seq_write_mbs) && c->seq_write_mbs > 0 ? c->seq_write_mbs : 0;
	double b = mbs * wf; /* 10^6 B/s x 10^-6 s = bytes */
	uint32_t bs = DELOG_LOGBSIZE_MIN;
	char cap[64] = "";
	double more;

	while (bs < DELOG_LOGBSIZE_MAX && (double)bs < b)
		bs <<= 1;
	more = ceil(b / (double)bs);
	r->logbsize = bs;
	/* The ring's most, as the engine checks it (delog_open refuses more than
	 * JRNL_MAX_LOGBUFS): the reason ends with the count the log will use, and says so
	 * when 2 + more was above it. */
	r->logbufs = 2 + more < DELOG_LOGBUFS_MAX ? 2 + (unsigned)more : DELOG_LOGBUFS_MAX;
	if (2 + more > DELOG_LOGBUFS_MAX)
		snprintf(cap, sizeof(cap), ", capped at the ring's %u (the most a log has)",
			 DELOG_LOGBUFS_MAX);
	snprintf(why, len,
		 "%.0f MB/s x WF %.1f us = %.0f KiB per write+flush round trip: "
		 "%u KiB buffers (the smallest power of two >= that, %u..%u KiB), 2 + %.0f of "
		 "them%s: %u x %u KiB",
		 mbs, wf, b / 1024, bs >> 10, DELOG_LOGBSIZE_MIN >> 10, DELOG_LOGBSIZE_MAX >> 10,
		 more, cap, r->logbufs, bs >> 10);
}

void probe_recommend(const struct probe_costs *c, struct probe_rec *r)
{
	double ffu = c->flush_us + c->fua_us, wf = c->write_flush_us;
	char pol[320], geo[300];

	memset(r, 0, sizeof(*r));
	if (c->volatile_cache == 0) {
		r->policy = DELOG_FLUSH_SYNC;
		snprintf(pol, sizeof(pol),
			 "no volatile write cache: flushes and FUA are free "
			 "at the device (F %.1f us, FU %.1f us, W %.1f us), so sync; single "
			 "would add a flush call per checkpoint",
			 c->flush_us, c->fua_us, c->write_us);
	} else if (c->fua > 0 && isfinite(ffu) && isfinite(wf) && ffu <= FUA_SLACK * wf) {
		r->policy = DELOG_FLUSH_SYNC;
		snprintf(pol, sizeof(pol),
			 "%s write cache with native FUA and F + FU = %.1f + "
			 "%.1f = %.1f us <= 1.1 x WF %.1f us: sync (its flush rides on the commit "
			 "write)",
			 c->volatile_cache > 0 ? "volatile" : "possibly volatile", c->flush_us,
			 c->fua_us, ffu, wf);
	} else if (c->fua > 0) {
		r->policy = DELOG_FLUSH_SINGLE;
		snprintf(pol, sizeof(pol),
			 "native FUA, but F + FU = %.1f + %.1f = %.1f us > 1.1 x "
			 "WF %.1f us: single (one flush per checkpoint, after its writes)",
			 c->flush_us, c->fua_us, ffu, wf);
	} else {
		r->policy = DELOG_FLUSH_SINGLE;
		snprintf(pol, sizeof(pol),
			 "%s write cache and %s: a FUA write is a write plus a "
			 "flush (FU %.1f us vs W %.1f us, F %.1f us), so sync and async pay two "
			 "flushes per checkpoint, single one (WF %.1f us)",
			 c->volatile_cache > 0 ? "volatile" : "possibly volatile",
			 c->fua == 0 ? "no FUA" : "FUA unknown", c->fua_us, c->write_us,
			 c->flush_us, wf);
	}
	geometry(c, r, geo, sizeof(geo));
	snprintf(r->reason, sizeof(r->reason), "%s; %s", pol, geo);
}
