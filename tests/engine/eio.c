/*
 * eio.c - I/O errors on the real backends (uring, aio, psync) end in the sticky shut-down
 * state, and what was acknowledged before stays recoverable (DESIGN section 5, G8).
 *
 * For every backend built, every policy that flushes (sync, async, single), each op type
 * (write, flush) and each op index 1..OPS_SPAN of a short canonical workload (commit +
 * force of one small transaction at a time), once and persistently, the test arms the
 * iolayer's fault plan (iol_dev_fault_add: psync fails the syscall, uring/aio the
 * completion) on an open log and runs the workload:
 *   - once a force fails, delog_error() holds the injected error and stays set; every
 *     later force, commit and begin fails with DELOG_ESHUTDOWN (fast, no hang); the
 *     durable watermark never moves again; close returns the error;
 *   - a reopen of the file on a healthy device recovers every checkpoint acknowledged
 *     before the fault, in order, whole (the item carries its own sequence and a hash).
 * Read errors during recovery make engine_open_dev fail with the error (nothing replayed
 * as if valid), and a later healthy open still recovers everything.
 */
#include <criterion/criterion.h>
#include <delog.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "io.h"

#define OPS_SPAN 10u
#define TXS 24u
#define LOG_BYTES (8u << 20)

static const char *test_dir(void)
{
	const char *d = getenv("DELOG_TEST_DIR");

	return d && *d ? d : ".";
}

struct seen {
	uint64_t last;
	unsigned n;
	bool bad;
};

static int on_ckpt(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		   size_t n)
{
	struct seen *s = arg;

	if (ck->seq <= s->last && s->n)
		s->bad = true;
	for (size_t i = 0; i < n; i++) {
		uint64_t v[2];

		if (it[i].len != sizeof(v)) {
			s->bad = true;
			continue;
		}
		memcpy(v, it[i].data, sizeof(v));
		if (v[1] != (v[0] * 0x9e3779b97f4a7c15ull ^ it[i].key))
			s->bad = true;
	}
	s->last = ck->seq;
	s->n++;
	return 0;
}

static int commit_one(delog *log, uint64_t i, uint64_t *seq)
{
	uint64_t v[2] = { i, 0 };
	delog_tx *tx;
	int err;

	v[1] = v[0] * 0x9e3779b97f4a7c15ull ^ (i % 5);
	err = delog_tx_begin(log, sizeof(v) + DELOG_ITEM_OVERHEAD, 0, &tx);
	if (err)
		return err;
	err = delog_tx_log(tx, i % 5, v, sizeof(v));
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	return delog_tx_commit_force(tx, seq);
}

/* One run: open, arm @f, commit TXS forced transactions, check, reopen. */
static bool one(const char *backend, enum delog_flush_policy pol, const struct iol_fault *f)
{
	char path[4096];
	struct delog_options o = {
		.size = sizeof(o),
		.backend = backend,
		.flush = pol,
		.logbufs = 2,
		.logbsize = 32u << 10,
		.flags = DELOG_OPEN_CREATE | DELOG_OPEN_FORMAT,
		.create_size = LOG_BYTES,
	};
	struct seen s = { 0 };
	struct delog_recovery rec;
	uint64_t acked = 0, seq, durable_at_err = 0;
	bool failed = false;
	delog *log;
	int err;

	snprintf(path, sizeof(path), "%s/eio-%s-%d.log", test_dir(), backend, (int)getpid());
	unlink(path);
	cr_assert_eq(delog_open(path, &o, &log), 0);
	cr_assert_eq(iol_dev_fault_add(engine_dev(log), f), 0);
	for (uint64_t i = 1; i <= TXS; i++) {
		err = commit_one(log, i, &seq);
		if (err) {
			cr_assert(err == DELOG_ESHUTDOWN, "%s: tx %llu failed with %s", backend,
				  (unsigned long long)i, delog_strerror(err));
			if (!failed)
				durable_at_err = delog_durable_seq(log);
			failed = true;
			cr_assert_eq(delog_error(log), f->err ? f->err : -EIO, "%s: delog_error %d",
				     backend, delog_error(log));
			continue;
		}
		cr_assert(!failed, "%s: a commit was acknowledged after the shutdown", backend);
		acked = seq;
	}
	if (failed) {
		delog_tx *tx;

		cr_assert_eq(delog_force(log, 0), DELOG_ESHUTDOWN);
		cr_assert_eq(delog_tx_begin(log, 64, 0, &tx), DELOG_ESHUTDOWN);
		cr_assert_eq(delog_durable_seq(log), durable_at_err,
			     "watermark moved after shutdown");
		cr_assert_neq(delog_close(log), 0, "close reports the shutdown");
	} else {
		/* The fault lay beyond the workload's ops (or hit only the unmount). */
		delog_close(log);
	}

	o.flags = 0;
	o.recover = on_ckpt;
	o.recover_arg = &s;
	o.recovery = &rec;
	err = delog_open(path, &o, &log);
	cr_assert_eq(err, 0, "%s: reopen on a healthy device: %s", backend, delog_strerror(err));
	cr_assert(!s.bad, "%s: recovery handed back a damaged or unordered checkpoint", backend);
	cr_assert_geq(rec.last_seq, acked,
		      "%s: acknowledged checkpoint %llu lost (recovered to %llu)", backend,
		      (unsigned long long)acked, (unsigned long long)rec.last_seq);
	/* And the log goes on. */
	cr_assert_eq(commit_one(log, 99, &seq), 0);
	cr_assert_gt(seq, rec.last_seq);
	cr_assert_eq(delog_close(log), 0);
	unlink(path);
	return failed;
}

Test(eio, write_and_flush_faults_real_backends, .timeout = 600)
{
	static const char *const backends[] = { "psync", "uring", "aio" };
	static const enum delog_flush_policy pols[] = { DELOG_FLUSH_SYNC, DELOG_FLUSH_ASYNC,
							DELOG_FLUSH_SINGLE };
	static const enum iol_op ops[] = { IOL_OP_WRITE, IOL_OP_FLUSH };
	unsigned runs = 0, shut = 0;

	for (unsigned b = 0; b < 3; b++) {
		if (!iol_backend_built(backends[b]))
			continue;
		for (unsigned p = 0; p < 3; p++)
			for (unsigned k = 0; k < 2; k++)
				for (uint64_t nth = 1; nth <= OPS_SPAN; nth++)
					for (int persist = 0; persist < 2; persist++) {
						struct iol_fault f = { .op = ops[k],
								       .nth = nth,
								       .persistent = persist };

						shut += one(backends[b], pols[p], &f);
						runs++;
					}
	}
	cr_assert_gt(runs, 0);
	/* The span is chosen so that the faults land inside the workload: nearly every
	 * run must have ended in a shutdown, or the test proved nothing. */
	cr_assert_geq(shut * 10, runs * 9, "only %u of %u runs hit their fault", shut, runs);
}

Test(eio, read_fault_during_recovery, .timeout = 120)
{
	char path[4096];
	struct delog_options o = {
		.size = sizeof(o),
		.backend = "psync",
		.flags = DELOG_OPEN_CREATE | DELOG_OPEN_FORMAT,
		.create_size = LOG_BYTES,
	};
	struct iol_dev_opts io = { .size = sizeof(io), .backend = "psync" };
	struct delog_options o2 = { .size = sizeof(o2) };
	struct seen s = { 0 };
	struct iol_fault f = { .op = IOL_OP_READ, .nth = 3 };
	struct iol_dev *dev;
	uint64_t seq = 0;
	delog *log;
	int err;

	snprintf(path, sizeof(path), "%s/eio-read-%d.log", test_dir(), (int)getpid());
	unlink(path);
	cr_assert_eq(delog_open(path, &o, &log), 0);
	for (uint64_t i = 1; i <= 10; i++)
		cr_assert_eq(commit_one(log, i, &seq), 0);
	cr_assert_eq(delog_close(log), 0);

	cr_assert_eq(iol_dev_open(path, &io, &dev), 0);
	cr_assert_eq(iol_dev_fault_add(dev, &f), 0);
	o2.recover = on_ckpt;
	o2.recover_arg = &s;
	/* A read that fails once is read again a sector at a time (recover.c R14): the open
	 * recovers everything. */
	err = engine_open_dev(dev, &o2, &log);
	cr_assert_eq(err, 0, "a transient read error in recovery: %s", delog_strerror(err));
	cr_assert_eq(s.last, seq);
	cr_assert(!s.bad);
	cr_assert_eq(delog_close(log), 0);
	/* A device that fails every read from then on is reported, never read as empty. */
	iol_dev_fault_clear(dev);
	f.persistent = true;
	cr_assert_eq(iol_dev_fault_add(dev, &f), 0);
	memset(&s, 0, sizeof(s));
	err = engine_open_dev(dev, &o2, &log);
	cr_assert_eq(err, -EIO, "a failing device in recovery is reported: %s",
		     delog_strerror(err));
	cr_assert_eq(s.n, 0);
	iol_dev_fault_clear(dev);
	memset(&s, 0, sizeof(s));
	err = engine_open_dev(dev, &o2, &log);
	cr_assert_eq(err, 0, "%s", delog_strerror(err));
	cr_assert_eq(s.last, seq);
	cr_assert(!s.bad);
	cr_assert_eq(delog_close(log), 0);
	iol_dev_close(dev);
	unlink(path);
}
