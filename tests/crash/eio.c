/*
 * eio.c - I/O error loops on the simulated disk (docs/DESIGN.md section 5, G8; T4,
 * T5): for every operation index of a short canonical
 * workload, the write, the flush or the read with that index fails with EIO, once or
 * for good, under each flush policy.
 *
 * For a write or flush fault (armed after a healthy open, so the index counts the
 * workload's own I/O), the workload commits and forces transactions until one call
 * fails; then:
 *   - delog_error() holds the injected -EIO, and it sticks: every later force, begin and
 *     commit fails with DELOG_ESHUTDOWN at once (no hang), and the durable watermark
 *     never moves again; delog_close returns the error and frees everything (ASan/LSan
 *     in CI);
 *   - no commit that the failed op covered was acknowledged: the media alone (a power
 *     cut that keeps nothing unflushed) and seeded power-cut states, each reopened on a
 *     healthy disk, recover every transaction whose force had returned, whole and in
 *     order.
 * For a read fault, the disk already holds a log with acknowledged transactions: the
 * open fails with the error (nothing is replayed as if valid, the callback never sees a
 * partial checkpoint... only whole ones before the failing read), and an open on the
 * healthy disk afterwards still recovers everything.
 * Each loop runs N = 1, 2, ... until the workload completes without meeting its fault,
 * as SQLite's I/O-error loops do.
 * The *_gated loops open the sim through the iolayer's flush gate, as every real backend
 * is: the nth flush is then the nth gate generation (merged, or inline on odd indexes,
 * where the sim has a ->run), and a failed flush drops what it covered from the cache
 * (flush_fail_drops: the device journal/log.c L14 assumes), so every waiter of a failed
 * generation gets the error and nothing it covered may be acknowledged.
 */
#include "crash_test.h"

#define TXS 24u
#define MAX_NTH 400u

static const enum delog_flush_policy policies[] = { DELOG_FLUSH_SYNC, DELOG_FLUSH_ASYNC,
						    DELOG_FLUSH_SINGLE };
static const char *const pname[] = { "sync", "async", "single" };

static unsigned long faults_hit;

/* A freshly formatted log, as an image (formatting on every run would cost 4 MiB). */
static void *fresh_image(void)
{
	struct iol_dev *dev = ct_sim(false, 1, NULL);
	void *img = malloc(CT_DEV_BYTES);
	struct ct_coll c;

	cr_assert_not_null(img);
	cr_assert_eq(ct_open(dev, DELOG_FLUSH_SYNC, &c, NULL), 0);
	cr_assert_eq(iol_sim_media(dev, 0, img, CT_DEV_BYTES), 0);
	iol_dev_close(dev);
	return img;
}

/* Every transaction of @acked (1..n) is recovered from @img, whole, in checkpoint order. */
static void check_recovers(const void *img, enum delog_flush_policy pol, unsigned acked,
			   const char *what)
{
	struct ct_coll *c = calloc(1, sizeof(*c));
	int err;

	cr_assert_not_null(c);
	err = ct_recover_image(img, pol, c);
	cr_assert_eq(err, 0, "%s: recovery on a healthy disk: %s", what, delog_strerror(err));
	cr_assert_eq(c->bad, 0, "%s: %s", what, c->why);
	for (unsigned n = 1; n <= acked; n++)
		cr_assert_not_null(ct_find(c, 1, n), "%s: tx %u was acknowledged and is lost", what,
				   n);
	free(c);
}

/* The sim of a loop: ct_sim's, or (@gated) through the flush gate, a failed flush
 * dropping what it covered, with a ->run on odd @seed. */
static struct iol_dev *eio_sim(uint64_t seed, const void *image, bool gated)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = CT_DEV_BYTES,
				   .sector = 4096,
				   .seed = seed,
				   .image = image,
				   .flush_fail_drops = true,
				   .inline_run = seed & 1 };
	struct iol_dev_opts o = { .size = sizeof(o),
				  .backend = "sim",
				  .sim = &so,
				  .flush_gate = true };
	struct iol_dev *dev = NULL;
	int err;

	if (!gated)
		return ct_sim(false, seed, image);
	err = iol_dev_open(NULL, &o, &dev);
	cr_assert_eq(err, 0, "gated sim: %s", delog_strerror(err));
	return dev;
}

/* Returns true when the fault was met. */
static bool write_loop_one(const void *fresh, enum delog_flush_policy pol, enum iol_op op,
			   uint64_t nth, bool persistent, bool gated)
{
	struct iol_dev *dev = eio_sim(nth, fresh, gated);
	struct iol_sim_fault f = { .op = op, .nth = nth, .persistent = persistent };
	struct ct_coll c;
	delog *log = NULL;
	unsigned acked = 0;
	uint64_t durable = 0, seq = 0;
	char what[128];
	int err = 0, e2;
	delog_tx *tx;
	void *img;

	snprintf(what, sizeof(what), "%s, %s EIO at op %llu%s%s", pname[pol],
		 op == IOL_OP_WRITE ? "write" : "flush", (unsigned long long)nth,
		 persistent ? " and after" : " once", gated ? ", through the gate" : "");
	cr_assert_eq(ct_open(dev, pol, &c, &log), 0, "%s: open", what);
	cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
	for (unsigned n = 1; n <= TXS && !err; n++) {
		/* Canonical: a forced single item, then a group of two with one force. */
		err = ct_tx(log, 1, n, 1 + n % 3, 100 + 700 * (n % 4), n % 3 != 1, &seq);
		if (!err && n % 3 != 1)
			acked = n;
	}
	if (!err) {
		/* No call failed: the fault, if met at all, hit the close (its unmount record). */
		e2 = delog_close(log);
		if (e2 == 0) {
			iol_dev_close(dev);
			return false;
		}
		cr_assert_eq(e2, -EIO, "%s: close returned %s", what, delog_strerror(e2));
		faults_hit++;
		img = ct_crash(dev, nth, IOL_SIM_STRICT);
		check_recovers(img, pol, acked, what);
		free(img);
		iol_dev_close(dev);
		return true;
	}
	faults_hit++;
	/* G8: shut down, sticky, fast, nothing more acknowledged. */
	cr_assert_eq(delog_error(log), -EIO, "%s: delog_error() = %s after %s", what,
		     delog_strerror(delog_error(log)), delog_strerror(err));
	durable = delog_durable_seq(log);
	cr_assert_eq(delog_force(log, 0), DELOG_ESHUTDOWN, "%s: force after the error", what);
	cr_assert_eq(delog_tx_begin(log, 128, 0, &tx), DELOG_ESHUTDOWN, "%s: begin", what);
	cr_assert_eq(delog_durable_seq(log), durable, "%s: watermark moved", what);
	/* What a power cut leaves now, and what is there once everything settled. */
	for (uint64_t s = 0; s < 3; s++) {
		img = ct_crash(dev, nth * 7 + s, s == 2 ? IOL_SIM_GARBLE : IOL_SIM_STRICT);
		check_recovers(img, pol, acked, what);
		free(img);
	}
	{
		uint8_t *zero = NULL;
		size_t k = iol_sim_unstable(dev, NULL, 0);

		zero = calloc(k + 1, 1);
		img = malloc(CT_DEV_BYTES);
		cr_assert(zero && img);
		cr_assert_eq(iol_sim_crash_choose(dev, zero, k, 0, img), 0);
		check_recovers(img, pol, acked, what); /* the media alone */
		free(zero);
		free(img);
	}
	e2 = delog_close(log);
	cr_assert_eq(e2, -EIO, "%s: close returned %s", what, delog_strerror(e2));
	iol_dev_close(dev);
	return true;
}

static void write_loop(enum iol_op op, bool gated)
{
	void *fresh = fresh_image();

	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
		for (int persistent = 0; persistent < 2; persistent++) {
			uint64_t nth = 1;

			while (write_loop_one(fresh, policies[p], op, nth, persistent, gated))
				cr_assert(++nth < MAX_NTH, "the workload never completes");
			cr_assert(nth > 1, "%s: the workload does no %s at all", pname[p],
				  op == IOL_OP_WRITE ? "write" : "flush");
		}
	}
	free(fresh);
}

Test(eio, write, .timeout = 900)
{
	write_loop(IOL_OP_WRITE, false);
	fprintf(stderr,
		"eio/write: %lu faults met, each shut the log down, none lost an "
		"acknowledged commit\n",
		faults_hit);
}

Test(eio, flush, .timeout = 900)
{
	write_loop(IOL_OP_FLUSH, false);
	fprintf(stderr,
		"eio/flush: %lu faults met, each shut the log down, none lost an "
		"acknowledged commit\n",
		faults_hit);
}

Test(eio, write_gated, .timeout = 900)
{
	write_loop(IOL_OP_WRITE, true);
	fprintf(stderr,
		"eio/write_gated: %lu faults met, each shut the log down, none lost an "
		"acknowledged commit\n",
		faults_hit);
}

Test(eio, flush_gated, .timeout = 900)
{
	write_loop(IOL_OP_FLUSH, true);
	fprintf(stderr,
		"eio/flush_gated: %lu faults met (failed gate generations), each shut "
		"the log down, none lost an acknowledged commit\n",
		faults_hit);
}

Test(eio, read, .timeout = 900)
{
	/* A log holding TXS acknowledged transactions, not cleanly closed. */
	void *fresh = fresh_image(), *img;
	struct iol_dev *dev = ct_sim(false, 3, fresh);
	struct ct_coll *c = calloc(1, sizeof(*c));
	delog *log = NULL;
	uint64_t seq;

	cr_assert_not_null(c);
	cr_assert_eq(ct_open(dev, DELOG_FLUSH_SYNC, c, &log), 0);
	for (unsigned n = 1; n <= TXS; n++)
		cr_assert_eq(ct_tx(log, 1, n, 2, 300 * n, true, &seq), 0);
	img = ct_crash(dev, 5, IOL_SIM_STRICT);
	delog_close(log);
	iol_dev_close(dev);
	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
		for (int persistent = 0; persistent < 2; persistent++) {
			for (uint64_t nth = 1;; nth++) {
				struct iol_sim_fault f = { .op = IOL_OP_READ,
							   .nth = nth,
							   .persistent = persistent };
				int err;

				cr_assert(nth < MAX_NTH);
				dev = ct_sim(false, nth, img);
				cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
				err = ct_open(dev, policies[p], c, NULL);
				iol_sim_fault_clear(dev);
				if (!err) {
					cr_assert_eq(c->bad, 0, "%s read fault %llu: %s", pname[p],
						     (unsigned long long)nth, c->why);
					iol_dev_close(dev);
					break; /* the open did fewer reads than nth */
				}
				faults_hit++;
				cr_assert_eq(err, -EIO, "%s: read EIO at %llu: open returned %s",
					     pname[p], (unsigned long long)nth,
					     delog_strerror(err));
				cr_assert_eq(c->bad, 0, "%s: read EIO at %llu: %s", pname[p],
					     (unsigned long long)nth, c->why);
				/* The same disk, healthy now: everything is still there. */
				err = ct_open(dev, policies[p], c, NULL);
				cr_assert_eq(err, 0, "%s: reopen after read EIO %llu: %s", pname[p],
					     (unsigned long long)nth, delog_strerror(err));
				for (unsigned n = 1; n <= TXS; n++)
					cr_assert_not_null(ct_find(c, 1, n),
							   "%s: read EIO %llu: tx %u "
							   "lost",
							   pname[p], (unsigned long long)nth, n);
				iol_dev_close(dev);
			}
		}
	}
	free(img);
	free(fresh);
	free(c);
	fprintf(stderr,
		"eio/read: %lu read faults met during recovery, each refused the "
		"open with EIO, none lost data\n",
		faults_hit);
}
