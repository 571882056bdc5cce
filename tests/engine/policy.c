/*
 * policy.c - the flush policies keep their stated costs and their I/O protocol
 * (docs/FLUSH-POLICIES.md, delog.h enum delog_flush_policy).
 *
 * What it proves:
 *  - counts: in a steady state of N forced one-transaction checkpoints on the sim disk,
 *    per checkpoint, from delog_stats:
 *      single  device_flushes == 1 exactly (flushes == checkpoints, no PREFLUSH, no FUA)
 *      sync    1 <= device_flushes <= 2, one FUA write (the commit), no standalone flush
 *      async   one standalone flush and one FUA commit write, no PREFLUSH (one buffer)
 *      none    no flush and no FUA at all
 *    and delog_stats agrees with the device's own counters (iol_dev_counters), so the
 *    stats cannot claim flushes the device never saw or hide ones it did.
 *  - flush accounting (delog.h, device_flushes): the sim does FUA natively (device_fua
 *    1), so no FUA write is counted as a flush there; with the device's FUA fact set to
 *    0 or -1 (a disk without FUA, or an unknown one: only the reported fact changes, the
 *    sim still does FUA) every FUA write is counted as a write and a flush, and
 *    device_flushes, flushes_per_checkpoint and bytes_per_flush include them.
 *  - names: delog_flush_policy_name / delog_flush_policy_parse round-trip every policy
 *    and refuse anything else (NULL, -EINVAL).
 *  - protocol, from the sim's event trace (iol_sim_trace_copy) of each forced checkpoint,
 *    both for a one-buffer checkpoint and one spanning several 16 KiB buffers:
 *      sync    first write PREFLUSH; the commit record's write (the last, the only FUA
 *              one) PREFLUSH|FUA, submitted only after every other write of the
 *              checkpoint completed; no standalone flush
 *      async   one standalone flush, completed before the first write is submitted;
 *              commit write FUA, with PREFLUSH iff the checkpoint spans buffers (then
 *              submitted after the others completed)
 *      single  no flags; exactly one standalone flush, submitted after every write of
 *              the checkpoint completed, and completed before the force returned
 *      none    no flags, no flushes
 *
 * Why it is built this way: one transaction per forced checkpoint, one at a time, makes
 * the trace window between two forces hold exactly one checkpoint's I/O (the previous
 * force returned only after its own I/O completed), so each rule can be checked on
 * exact events rather than on averages.  Warm-up checkpoints run first so that nothing
 * from open (format, recovery) is counted.
 */
#include "helpers.h"

#define N_CKPT 200 /* sequential forced one-transaction commits, 1 client */

struct deltas {
	uint64_t ckpts, preflushes, fua, flushes, device_flushes, fua_flushes, records;
	uint64_t dev_flushes, dev_preflushes, dev_fua, dev_writes;
	uint64_t record_bytes;
};

/* N_CKPT forced checkpoints under @pol on a sim disk that reports FUA support @fua. */
static struct deltas steady_fua(enum delog_flush_policy pol, int fua)
{
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NONE, 60 + pol, NULL);
	struct delog_options o = t_opts(pol);
	delog *log;
	struct delog_stats s0, s1;
	struct iol_counters c0, c1;
	struct deltas d;
	uint64_t prev = 0;

	cr_assert_eq(iol_dev_geom(dev)->fua, 1, "the sim does FUA natively");
	/* The device fact only: what delog_stats reads to count FUA writes. */
	((struct iol_geom *)iol_dev_geom(dev))->fua = fua;
	log = t_open_dev(dev, &o);
	iol_sim_trace_enable(dev, false);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(t_commit1(log, 1 + i, 0, i, NULL, true), 0);
	s0 = t_stats(log);
	iol_dev_counters(dev, &c0);
	for (int i = 0; i < N_CKPT; i++) {
		uint64_t seq;

		cr_assert_eq(t_commit1(log, 100 + i, 1, i, &seq, true), 0);
		cr_assert_gt(seq, prev);
		prev = seq;
	}
	s1 = t_stats(log);
	iol_dev_counters(dev, &c1);
	d = (struct deltas){
		.ckpts = s1.checkpoints - s0.checkpoints,
		.preflushes = s1.preflushes - s0.preflushes,
		.fua = s1.fua_writes - s0.fua_writes,
		.flushes = s1.flushes - s0.flushes,
		.device_flushes = s1.device_flushes - s0.device_flushes,
		.fua_flushes = s1.fua_flushes - s0.fua_flushes,
		.records = s1.records - s0.records,
		.record_bytes = s1.record_bytes,
		.dev_flushes = c1.flushes - c0.flushes,
		.dev_preflushes = c1.preflushes - c0.preflushes,
		.dev_fua = c1.fua_writes - c0.fua_writes,
		.dev_writes = c1.writes - c0.writes,
	};
	cr_assert_eq(d.ckpts, N_CKPT, "%s: %llu checkpoints for %d forced transactions",
		     delog_flush_policy_name(pol), (unsigned long long)d.ckpts, N_CKPT);
	cr_expect_eq(s1.device_fua, fua, "device_fua reports the device's fact");
	cr_expect_eq(d.fua_flushes, fua == 1 ? 0 : d.fua,
		     "%s: fua_flushes %llu with FUA fact %d and %llu FUA writes",
		     delog_flush_policy_name(pol), (unsigned long long)d.fua_flushes, fua,
		     (unsigned long long)d.fua);
	cr_expect_eq(d.device_flushes, d.preflushes + d.flushes + d.fua_flushes,
		     "device_flushes definition");
	cr_expect_eq(d.flushes, d.dev_flushes, "%s: stats flushes %llu, device saw %llu",
		     delog_flush_policy_name(pol), (unsigned long long)d.flushes,
		     (unsigned long long)d.dev_flushes);
	cr_expect_eq(d.preflushes, d.dev_preflushes, "%s: stats preflushes %llu, device %llu",
		     delog_flush_policy_name(pol), (unsigned long long)d.preflushes,
		     (unsigned long long)d.dev_preflushes);
	cr_expect_eq(d.fua, d.dev_fua, "%s: stats FUA %llu, device %llu",
		     delog_flush_policy_name(pol), (unsigned long long)d.fua,
		     (unsigned long long)d.dev_fua);
	cr_expect_eq(d.records, d.dev_writes, "%s: stats records %llu, device writes %llu",
		     delog_flush_policy_name(pol), (unsigned long long)d.records,
		     (unsigned long long)d.dev_writes);
	cr_expect_geq(d.records, N_CKPT);
	/* The derived ratio is the counters' ratio. */
	if (s1.checkpoints) {
		double want = (double)s1.device_flushes / (double)s1.checkpoints;

		cr_expect(s1.flushes_per_checkpoint > want - 1e-9 &&
				  s1.flushes_per_checkpoint < want + 1e-9,
			  "flushes_per_checkpoint %f, counters say %f", s1.flushes_per_checkpoint,
			  want);
	}
	if (s1.device_flushes) {
		double want = (double)s1.record_bytes / (double)s1.device_flushes;

		cr_expect(s1.bytes_per_flush > want * (1 - 1e-12) &&
				  s1.bytes_per_flush < want * (1 + 1e-12),
			  "bytes_per_flush %f, counters say %f", s1.bytes_per_flush, want);
	}
	cr_assert_eq(delog_close(log), 0);
	iol_dev_close(dev);
	return d;
}

static struct deltas steady(enum delog_flush_policy pol)
{
	return steady_fua(pol, 1);
}

Test(policy, counts_single, .timeout = 60)
{
	struct deltas d = steady(DELOG_FLUSH_SINGLE);

	cr_expect_eq(d.device_flushes, d.ckpts, "single: %llu device flushes for %llu checkpoints",
		     (unsigned long long)d.device_flushes, (unsigned long long)d.ckpts);
	cr_expect_eq(d.flushes, d.ckpts);
	cr_expect_eq(d.preflushes, 0);
	cr_expect_eq(d.fua, 0);
}

Test(policy, counts_sync, .timeout = 60)
{
	struct deltas d = steady(DELOG_FLUSH_SYNC);

	cr_expect_geq(d.device_flushes, d.ckpts, "sync: under one device flush per checkpoint");
	cr_expect_leq(d.device_flushes, 2 * d.ckpts, "sync: %llu device flushes for %llu",
		      (unsigned long long)d.device_flushes, (unsigned long long)d.ckpts);
	cr_expect_eq(d.flushes, 0, "sync issues no standalone flush");
	cr_expect_eq(d.fua, d.ckpts, "sync: one FUA commit write per checkpoint");
}

Test(policy, counts_async, .timeout = 60)
{
	struct deltas d = steady(DELOG_FLUSH_ASYNC);

	cr_expect_eq(d.flushes, d.ckpts, "async: one standalone flush per checkpoint, got %llu",
		     (unsigned long long)d.flushes);
	cr_expect_eq(d.fua, d.ckpts, "async: FUA on each commit write");
	cr_expect_eq(d.preflushes, 0, "async: no PREFLUSH on a one-buffer checkpoint");
	cr_expect_eq(d.device_flushes, d.ckpts);
}

Test(policy, counts_none, .timeout = 60)
{
	struct deltas d = steady(DELOG_FLUSH_NONE);

	cr_expect_eq(d.device_flushes, 0);
	cr_expect_eq(d.flushes, 0);
	cr_expect_eq(d.preflushes, 0);
	cr_expect_eq(d.fua, 0);
}

/* ---- protocol from the trace ---- */

struct win {
	struct iol_sim_event *ev;
	size_t n;
};

/* Index of the event of @type for request @id in the window, or -1. */
static long ev_find(const struct win *w, uint64_t id, uint16_t type)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->ev[i].req_id == id && w->ev[i].type == type)
			return (long)i;
	return -1;
}

static void check_window(enum delog_flush_policy pol, const struct win *w, bool big, unsigned k)
{
	const char *pn = delog_flush_policy_name(pol);
	size_t wr[64], fl[8], nw = 0, nf = 0;

	for (size_t i = 0; i < w->n; i++) {
		const struct iol_sim_event *e = &w->ev[i];
		enum iol_op op = (enum iol_op)(e->opf & IOL_OP_MASK);

		if (e->type == IOL_SIM_EV_COMPLETE)
			cr_assert_eq(e->status, 0, "%s ckpt %u: request %llu failed", pn, k,
				     (unsigned long long)e->req_id);
		if (e->type != IOL_SIM_EV_SUBMIT)
			continue;
		cr_assert_neq(op, IOL_OP_READ, "%s ckpt %u: a read while logging", pn, k);
		if (op == IOL_OP_WRITE) {
			cr_assert_lt(nw, 64);
			wr[nw++] = i;
		} else {
			cr_assert_lt(nf, 8);
			fl[nf++] = i;
		}
	}
	cr_assert_geq(nw, 1, "%s ckpt %u: no write", pn, k);
	if (big)
		cr_assert_geq(nw, 2,
			      "%s ckpt %u: a 36 KiB checkpoint in 16 KiB buffers took %zu "
			      "writes",
			      pn, k, nw);
	/* Every request of the window completed inside it (the force waited for it). */
	for (size_t j = 0; j < nw; j++)
		cr_assert_geq(ev_find(w, w->ev[wr[j]].req_id, IOL_SIM_EV_COMPLETE), 0,
			      "%s ckpt %u: write %zu not complete when the force returned", pn, k,
			      j);

	const struct iol_sim_event *first = &w->ev[wr[0]], *last = &w->ev[wr[nw - 1]];
	/* A write submitted after every other write of the window completed. */
	bool last_after_others = true;

	for (size_t j = 0; j + 1 < nw; j++) {
		long c = ev_find(w, w->ev[wr[j]].req_id, IOL_SIM_EV_COMPLETE);

		if (c < 0 || (size_t)c > wr[nw - 1])
			last_after_others = false;
	}
	for (size_t j = 0; j < nw; j++) {
		uint32_t f = w->ev[wr[j]].opf & IOL_FLAG_MASK;

		if (pol == DELOG_FLUSH_SINGLE || pol == DELOG_FLUSH_NONE)
			cr_assert_eq(f, 0, "%s ckpt %u: write %zu carries flags %#x", pn, k, j, f);
		else if (j + 1 < nw && j > 0)
			cr_assert_eq(f, 0, "%s ckpt %u: middle write %zu carries %#x", pn, k, j, f);
		else if (j + 1 < nw && pol == DELOG_FLUSH_ASYNC)
			cr_assert_eq(f, 0, "async ckpt %u: first write carries %#x", k, f);
	}

	switch (pol) {
	case DELOG_FLUSH_SYNC:
		cr_assert_eq(nf, 0, "sync ckpt %u: %zu standalone flushes", k, nf);
		cr_assert(first->opf & IOL_PREFLUSH, "sync ckpt %u: first write without PREFLUSH",
			  k);
		cr_assert_eq(last->opf & IOL_FLAG_MASK, IOL_PREFLUSH | IOL_FUA,
			     "sync ckpt %u: commit record write has flags %#x, not PREFLUSH|FUA", k,
			     last->opf & IOL_FLAG_MASK);
		if (nw > 1)
			cr_assert_eq(first->opf & IOL_FUA, 0,
				     "sync ckpt %u: FUA on the first of %zu", k, nw);
		cr_assert(last_after_others,
			  "sync ckpt %u: commit write issued before the "
			  "checkpoint's earlier writes completed",
			  k);
		break;
	case DELOG_FLUSH_ASYNC: {
		long fc;

		cr_assert_eq(nf, 1, "async ckpt %u: %zu standalone flushes", k, nf);
		fc = ev_find(w, w->ev[fl[0]].req_id, IOL_SIM_EV_COMPLETE);
		cr_assert_geq(fc, 0, "async ckpt %u: flush never completed", k);
		cr_assert_lt((size_t)fc, wr[0],
			     "async ckpt %u: first write submitted before the "
			     "push-start flush completed",
			     k);
		cr_assert(last->opf & IOL_FUA, "async ckpt %u: commit write without FUA", k);
		if (nw > 1) {
			cr_assert(last->opf & IOL_PREFLUSH,
				  "async ckpt %u: spanning checkpoint, "
				  "commit without PREFLUSH",
				  k);
			cr_assert(last_after_others,
				  "async ckpt %u: commit before the others "
				  "completed",
				  k);
		} else {
			cr_assert_eq(last->opf & IOL_PREFLUSH, 0,
				     "async ckpt %u: PREFLUSH on a "
				     "one-buffer checkpoint",
				     k);
		}
		break;
	}
	case DELOG_FLUSH_SINGLE: {
		long fc;

		cr_assert_eq(nf, 1, "single ckpt %u: %zu standalone flushes", k, nf);
		for (size_t j = 0; j < nw; j++) {
			long c = ev_find(w, w->ev[wr[j]].req_id, IOL_SIM_EV_COMPLETE);

			cr_assert_geq(c, 0);
			cr_assert_lt((size_t)c, fl[0],
				     "single ckpt %u: flush issued before write "
				     "%zu completed",
				     k, j);
		}
		fc = ev_find(w, w->ev[fl[0]].req_id, IOL_SIM_EV_COMPLETE);
		cr_assert_geq(fc, 0, "single ckpt %u: force returned before its flush completed",
			      k);
		break;
	}
	case DELOG_FLUSH_NONE:
		cr_assert_eq(nf, 0, "none ckpt %u: a flush", k);
		break;
	}
}

static void trace_run(enum delog_flush_policy pol)
{
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NVME, 70 + pol, NULL);
	struct delog_options o = t_opts(pol);
	static unsigned char blob[12 << 10];
	struct win w;
	delog *log;

	o.logbsize = 16u << 10;
	o.logbufs = 4;
	log = t_open_dev(dev, &o);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(t_commit1(log, 1 + i, 0, i, NULL, true), 0);
	for (unsigned k = 0; k < 12; k++) {
		bool big = k % 2;
		size_t from = iol_sim_trace_len(dev), to;
		delog_tx *tx;

		cr_assert_eq(delog_tx_begin(log,
					    big ? 3 * (sizeof(blob) + DELOG_ITEM_OVERHEAD) :
						  T_RES(1),
					    0, &tx),
			     0);
		if (big) {
			for (unsigned j = 0; j < 3; j++) {
				memset(blob, (int)(k * 3 + j), sizeof(blob));
				cr_assert_eq(delog_tx_log(tx, 1000 + k * 3 + j, blob, sizeof(blob)),
					     0);
			}
		} else {
			struct t_payload p = t_pl(100 + k, k, 0);

			cr_assert_eq(delog_tx_log(tx, 100 + k, &p, sizeof(p)), 0);
		}
		cr_assert_eq(delog_tx_commit_force(tx, NULL), 0);
		to = iol_sim_trace_len(dev);
		w.n = to - from;
		w.ev = calloc(w.n ? w.n : 1, sizeof(*w.ev));
		cr_assert_not_null(w.ev);
		cr_assert_eq(iol_sim_trace_copy(dev, from, w.ev, w.n), w.n);
		check_window(pol, &w, big, k);
		free(w.ev);
	}
	cr_assert_eq(delog_close(log), 0);
	iol_dev_close(dev);
}

Test(policy, trace_sync, .timeout = 60)
{
	trace_run(DELOG_FLUSH_SYNC);
}
Test(policy, trace_async, .timeout = 60)
{
	trace_run(DELOG_FLUSH_ASYNC);
}
Test(policy, trace_single, .timeout = 60)
{
	trace_run(DELOG_FLUSH_SINGLE);
}
Test(policy, trace_none, .timeout = 60)
{
	trace_run(DELOG_FLUSH_NONE);
}

Test(policy, names_round_trip, .timeout = 10)
{
	static const char *const want[] = { "sync", "async", "single", "none" };

	for (int p = DELOG_FLUSH_SYNC; p <= DELOG_FLUSH_NONE; p++) {
		const char *name = delog_flush_policy_name((enum delog_flush_policy)p);
		enum delog_flush_policy back = (enum delog_flush_policy)99;

		cr_assert_not_null(name, "policy %d has no name", p);
		cr_expect_str_eq(name, want[p]);
		cr_expect_eq(delog_flush_policy_parse(name, &back), 0, "%s", name);
		cr_expect_eq((int)back, p, "%s parsed as %d", name, (int)back);
	}
	cr_expect_null(delog_flush_policy_name((enum delog_flush_policy)4));
	cr_expect_null(delog_flush_policy_name((enum delog_flush_policy) - 1));
	{
		enum delog_flush_policy back = DELOG_FLUSH_SINGLE;

		cr_expect_eq(delog_flush_policy_parse("fast", &back), -EINVAL);
		cr_expect_eq(delog_flush_policy_parse("", &back), -EINVAL);
		cr_expect_eq(delog_flush_policy_parse("sync ", &back), -EINVAL);
	}
}

/* A disk without FUA (or one that does not say): each FUA write is a write and a flush. */
Test(policy, counts_no_fua, .timeout = 60)
{
	for (int fua = 0; fua >= -1; fua--) {
		struct deltas d = steady_fua(DELOG_FLUSH_SYNC, fua);

		cr_expect_eq(d.fua_flushes, d.ckpts, "sync, FUA %d: one FUA flush per checkpoint",
			     fua);
		cr_expect_geq(d.device_flushes, 2 * d.ckpts,
			      "sync, FUA %d: %llu device flushes for %llu checkpoints", fua,
			      (unsigned long long)d.device_flushes, (unsigned long long)d.ckpts);
		d = steady_fua(DELOG_FLUSH_ASYNC, fua);
		cr_expect_eq(d.device_flushes, 2 * d.ckpts,
			     "async, FUA %d: the flush and the FUA commit write's", fua);
		d = steady_fua(DELOG_FLUSH_SINGLE, fua);
		cr_expect_eq(d.device_flushes, d.ckpts, "single, FUA %d: no FUA, one flush", fua);
		cr_expect_eq(d.fua_flushes, 0);
	}
}
