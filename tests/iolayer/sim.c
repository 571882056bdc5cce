/*
 * sim.c - the simulated disk's own model (io_sim.h), beyond the shared conformance suite.
 *
 * What it proves:
 *   - a completed write that was never flushed can be lost at a power cut (for some crash
 *     seeds) and kept (for others); once a flush has completed it survives every seed;
 *   - a flush covers only writes that completed before it was submitted: a write still in
 *     flight then, and the same write after it completes, stay unstable until a later
 *     flush; and durability takes effect only when the flush completes;
 *   - a FUA write survives every power cut, without making other writes durable;
 *   - PREFLUSH makes earlier completed writes durable, and a PREFLUSH write whose flush
 *     has not completed cannot reach the media;
 *   - sectors tear independently: the sectors of one unflushed multi-sector write resolve
 *     old or new separately (every combination of a 2-sector write is seen), never to
 *     anything else under the strict profile; the garble profile also produces sectors
 *     that are neither; iol_sim_crash_choose builds exactly the requested image;
 *   - the versions profile: a sector rewritten without a flush may end at any version
 *     written since it was last stable (media, an overwritten cached write, the newest
 *     completed one, a write in flight), every one of them is produced for some seed and
 *     nothing else ever is; iol_sim_unstable_versions / iol_sim_version_read /
 *     iol_sim_crash_versions agree with that list, and a flush drops the history;
 *   - power cuts are deterministic per seed and do not disturb the running disk; reads see
 *     the volatile cache while iol_sim_media shows only durable media;
 *   - the trace records submit, flush issue/done and completion events with the right
 *     request numbers, offsets, lengths, flags and status, and can be switched off;
 *   - completions arrive out of submission order for some seed, and in order with
 *     in_order; held completions are delivered only by iol_sim_deliver, in the asked order;
 *   - faults: EIO with a chosen errno, short reads, bit flips, once versus persistent,
 *     counting from when they were armed, a plan limit of 16, bad entries refused; a
 *     failed flush makes nothing durable;
 *   - options: latency names parse, an initial image is used, bad options are refused.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define NSEEDS 64

TestSuite(sim, .timeout = T_TIMEOUT);

struct cb {
	atomic_uint calls;
	atomic_int status;
};

static void cb_end(struct iol_req *req)
{
	struct cb *c = req->priv;

	atomic_store(&c->status, atomic_load(&req->status));
	atomic_fetch_add(&c->calls, 1);
}

static void sim_open(struct t_dev *td, uint64_t bytes, uint32_t sector, bool hold)
{
	const struct t_dev_cfg cfg = { .backend = "sim",
				       .bytes = bytes,
				       .sector = sector,
				       .hold = hold,
				       .seed = 11 };

	t_dev_open(td, &cfg);
}

/* Submit one asynchronous single-segment request with a callback. */
static void submit(struct iol_dev *dev, struct iol_req *req, iol_opf_t opf, uint64_t off, void *buf,
		   size_t len, struct cb *c)
{
	memset(c, 0, sizeof(*c));
	cr_assert_eq(iol_req_init(req, dev, buf ? 1 : 0, opf), 0);
	req->off = off;
	if (buf)
		iol_req_add(req, buf, len);
	req->end_io = cb_end;
	req->priv = c;
	cr_assert_eq(iol_submit(req), 0);
}

/* Deliver held completions until @c has run. */
static int deliver_until(struct iol_dev *dev, struct cb *c, enum iol_sim_order order)
{
	for (unsigned i = 0; i < 10000 && !atomic_load(&c->calls); i++)
		cr_assert_gt(iol_sim_deliver(dev, 1, order), 0, "nothing left to deliver");
	cr_assert_eq(atomic_load(&c->calls), 1);
	return atomic_load(&c->status);
}

/* Classify a crash image's sector range against old (zero) and new (@seed pattern). */
enum {
	S_OLD = 1,
	S_NEW = 2,
	S_OTHER = 4
};

static int classify(const unsigned char *image, uint64_t off, size_t len, uint64_t seed)
{
	if (t_all(image + off, len, 0))
		return S_OLD;
	if (t_check(image + off, len, off, seed) == -1)
		return S_NEW;
	return S_OTHER;
}

/* For @nseeds crash seeds, OR together the classes sector range [off, off+len) takes. */
static int crash_classes(struct iol_dev *dev, uint64_t off, size_t len, uint64_t seed,
			 enum iol_sim_crash_profile prof)
{
	uint64_t bytes = iol_dev_geom(dev)->size_bytes;
	unsigned char *img = malloc(bytes);
	int seen = 0;

	cr_assert_not_null(img);
	for (uint64_t s = 0; s < NSEEDS; s++) {
		cr_assert_eq(iol_sim_crash(dev, s, prof, img, NULL), 0);
		seen |= classify(img, off, len, seed);
	}
	free(img);
	return seen;
}

static bool is_unstable(struct iol_dev *dev, uint64_t off, size_t len)
{
	uint32_t sec = iol_dev_geom(dev)->logical_block;
	size_t n = iol_sim_unstable(dev, NULL, 0);
	uint64_t *v = calloc(n ? n : 1, sizeof(*v));
	bool hit = false;

	cr_assert_not_null(v);
	n = iol_sim_unstable(dev, v, n);
	for (size_t i = 0; i < n; i++)
		if (v[i] >= off / sec && v[i] < (off + len) / sec)
			hit = true;
	free(v);
	return hit;
}

/* ---- durability ---- */

Test(sim, unflushed_write_lost_at_crash, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf, *img;
	unsigned kept = 0, lost = 0;
	uint64_t u[4];

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 4096);
	img = malloc(1 * MiB);
	cr_assert_not_null(img);
	t_fill(buf, 4096, 8192, 1);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 8192, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_unstable(td.dev, u, 4), 1);
	cr_assert_eq(u[0], 2, "unstable sector %llu, expected 2", (unsigned long long)u[0]);

	for (uint64_t s = 0; s < NSEEDS; s++) {
		struct iol_sim_crash_info ci;
		int k;

		cr_assert_eq(iol_sim_crash(td.dev, s, IOL_SIM_STRICT, img, &ci), 0);
		cr_assert_eq(ci.unstable_sectors, 1);
		cr_assert_eq(ci.kept_old + ci.took_new, 1);
		cr_assert_eq(ci.garbled, 0);
		k = classify(img, 8192, 4096, 1);
		cr_assert(k == S_OLD || k == S_NEW, "seed %llu: sector neither old nor new",
			  (unsigned long long)s);
		cr_assert_eq(k == S_NEW, ci.took_new == 1, "crash info disagrees with the image");
		cr_assert(t_all(img, 8192, 0) && t_all(img + 12288, 1 * MiB - 12288, 0),
			  "seed %llu: a crash changed sectors nobody wrote", (unsigned long long)s);
		if (k == S_NEW)
			kept++;
		else
			lost++;
	}
	cr_assert_gt(lost, 0, "an unflushed write survived all %d crash seeds", NSEEDS);
	cr_assert_gt(kept, 0, "an unflushed write was lost for all %d crash seeds", NSEEDS);

	/* Media has only the old contents; a read sees the cache. */
	memset(buf, 0xff, 4096);
	cr_assert_eq(iol_sim_media(td.dev, 8192, buf, 4096), 0);
	cr_assert(t_all(buf, 4096, 0), "unflushed write already on media");
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 8192, buf, 4096, 0, NULL), 0);
	cr_assert_eq(t_check(buf, 4096, 8192, 1), -1, "read does not see the completed write");

	/* After a flush: kept for every seed. */
	cr_assert_eq(t_flush(td.dev), 0);
	cr_assert_eq(iol_sim_unstable(td.dev, NULL, 0), 0);
	cr_assert_eq(crash_classes(td.dev, 8192, 4096, 1, IOL_SIM_STRICT), S_NEW,
		     "a flushed write was lost at a crash");
	cr_assert_eq(crash_classes(td.dev, 8192, 4096, 1, IOL_SIM_GARBLE), S_NEW,
		     "a flushed write was garbled at a crash");
	cr_assert_eq(iol_sim_media(td.dev, 8192, buf, 4096), 0);
	cr_assert_eq(t_check(buf, 4096, 8192, 1), -1, "flushed write not on media");
	free(img);
	free(buf);
	t_dev_close(&td);
}

Test(sim, flush_skips_write_in_flight, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_req w, f, f2;
	struct cb wc, fc, f2c;
	unsigned char *buf;

	sim_open(&td, 1 * MiB, 4096, true);
	buf = t_buf(&td, 8192);
	t_fill(buf, 8192, 0, 2);

	/* W in flight, then F submitted: F's capture cannot include W. */
	submit(td.dev, &w, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 8192, &wc);
	submit(td.dev, &f, IOL_OPF(IOL_OP_FLUSH, 0), 0, NULL, 0, &fc);
	cr_assert_eq(iol_sim_pending(td.dev), 2);
	t_sleep_ms(20);
	cr_assert_eq(atomic_load(&wc.calls) + atomic_load(&fc.calls), 0,
		     "held completions ran without iol_sim_deliver");
	/* LIFO: the flush completes first, W is still in flight. */
	cr_assert_eq(iol_sim_deliver(td.dev, 1, IOL_SIM_LIFO), 1);
	cr_assert_eq(atomic_load(&fc.calls), 1, "LIFO did not deliver the flush");
	cr_assert_eq(atomic_load(&fc.status), 0);
	cr_assert_eq(atomic_load(&wc.calls), 0);
	cr_assert(is_unstable(td.dev, 0, 8192), "write in flight is not unstable");
	cr_assert(crash_classes(td.dev, 0, 4096, 2, IOL_SIM_STRICT) & S_OLD,
		  "flush covered a write that was in flight when it was submitted");

	/* W completes after F was submitted: still volatile. */
	cr_assert_eq(deliver_until(td.dev, &wc, IOL_SIM_FIFO), 0);
	cr_assert(is_unstable(td.dev, 0, 8192), "write completed after the flush was "
						"submitted became stable");
	cr_assert_eq(crash_classes(td.dev, 0, 4096, 2, IOL_SIM_STRICT), S_OLD | S_NEW);

	/* A flush submitted now covers it, but only once that flush completes. */
	submit(td.dev, &f2, IOL_OPF(IOL_OP_FLUSH, 0), 0, NULL, 0, &f2c);
	cr_assert(is_unstable(td.dev, 0, 8192), "durable before the flush completed");
	cr_assert(crash_classes(td.dev, 0, 4096, 2, IOL_SIM_STRICT) & S_OLD,
		  "crash before the flush completed never lost the write");
	cr_assert_eq(deliver_until(td.dev, &f2c, IOL_SIM_FIFO), 0);
	cr_assert_not(is_unstable(td.dev, 0, 8192));
	cr_assert_eq(crash_classes(td.dev, 0, 8192, 2, IOL_SIM_STRICT), S_NEW);
	iol_req_release(&w);
	iol_req_release(&f);
	iol_req_release(&f2);

	/* A write submitted and completed while a flush is in flight (after the flush was
	 * submitted) is not covered by that flush either. */
	t_fill(buf, 8192, 65536, 2);
	submit(td.dev, &f, IOL_OPF(IOL_OP_FLUSH, 0), 0, NULL, 0, &fc);
	submit(td.dev, &w, IOL_OPF(IOL_OP_WRITE, 0), 65536, buf, 8192, &wc);
	cr_assert_eq(iol_sim_deliver(td.dev, 1, IOL_SIM_LIFO), 1);
	cr_assert_eq(atomic_load(&wc.calls), 1, "LIFO did not deliver the write");
	cr_assert_eq(atomic_load(&wc.status), 0);
	cr_assert_eq(deliver_until(td.dev, &fc, IOL_SIM_FIFO), 0);
	cr_assert(is_unstable(td.dev, 65536, 8192), "a flush covered a write that completed "
						    "after the flush was submitted");
	cr_assert_eq(crash_classes(td.dev, 65536, 4096, 2, IOL_SIM_STRICT), S_OLD | S_NEW);
	iol_req_release(&w);
	iol_req_release(&f);
	free(buf);
	t_dev_close(&td);
}

Test(sim, fua_write_survives, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf;

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 3 * 4096);
	t_fill(buf, 3 * 4096, 0, 3);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 4096, buf + 4096, 8192, 4096,
			  NULL),
		     0);
	cr_assert_eq(crash_classes(td.dev, 4096, 4096, 3, IOL_SIM_STRICT), S_NEW,
		     "FUA write lost at a crash");
	cr_assert_eq(crash_classes(td.dev, 8192, 4096, 3, IOL_SIM_GARBLE), S_NEW,
		     "FUA write garbled at a crash");
	cr_assert_eq(crash_classes(td.dev, 0, 4096, 3, IOL_SIM_STRICT), S_OLD | S_NEW,
		     "FUA changed the fate of an unrelated earlier write");
	memset(buf, 0, 3 * 4096);
	cr_assert_eq(iol_sim_media(td.dev, 4096, buf, 8192), 0);
	cr_assert_eq(t_check(buf, 8192, 4096, 3), -1, "FUA data not on media");
	free(buf);
	t_dev_close(&td);
}

/* A write_through disk (delog_open's "sim") has no cache: a completed write is on the
 * media and a power cut keeps it. */
Test(sim, write_through_keeps_completed_writes, .timeout = T_TIMEOUT)
{
	const struct t_dev_cfg cfg = { .backend = "sim",
				       .bytes = 1 * MiB,
				       .sector = 4096,
				       .seed = 11,
				       .write_through = true };
	struct t_dev td;
	unsigned char *buf;

	t_dev_open(&td, &cfg);
	cr_assert_eq(iol_dev_geom(td.dev)->volatile_cache, 0);
	buf = t_buf(&td, 2 * 4096);
	t_fill(buf, 2 * 4096, 0, 5);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 8192, 0, NULL), 0);
	cr_assert_eq(iol_sim_unstable(td.dev, NULL, 0), 0, "a write_through disk cached a write");
	cr_assert_eq(crash_classes(td.dev, 0, 8192, 5, IOL_SIM_GARBLE), S_NEW,
		     "a completed write lost at a crash");
	memset(buf, 0, 2 * 4096);
	cr_assert_eq(iol_sim_media(td.dev, 0, buf, 8192), 0);
	cr_assert_eq(t_check(buf, 8192, 0, 5), -1, "write not on media");
	free(buf);
	t_dev_close(&td);
}

/* An end_io that holds the sim thread until the test lets it go. */
struct stuck {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool entered, release;
};

static void stuck_end(struct iol_req *req)
{
	struct stuck *st = req->priv;

	pthread_mutex_lock(&st->mu);
	st->entered = true;
	pthread_cond_broadcast(&st->cv);
	while (!st->release)
		pthread_cond_wait(&st->cv, &st->mu);
	pthread_mutex_unlock(&st->mu);
}

/* On a free-running disk with a ->run, a lone synchronous request is delivered on its
 * caller's thread (sim.c SIM5): iol_rw_wait completes while the sim thread is held in
 * another request's end_io.  Through the sim thread, it would wait for that end_io. */
Test(sim, run_request_delivered_by_its_caller, .timeout = T_TIMEOUT)
{
	const struct t_dev_cfg cfg = { .backend = "sim",
				       .bytes = 1 * MiB,
				       .sector = 4096,
				       .seed = 3,
				       .inline_run = true };
	struct stuck st = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	struct t_dev td;
	struct iol_dev *dev;
	struct iol_req req;
	unsigned char *a, *b;

	t_dev_open(&td, &cfg);
	dev = td.dev;
	a = t_buf(&td, 4096);
	b = t_buf(&td, 8192);
	cr_assert_eq(iol_req_init(&req, dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
	iol_req_add(&req, a, 4096);
	req.end_io = stuck_end;
	req.priv = &st;
	cr_assert_eq(iol_submit(&req), 0);
	pthread_mutex_lock(&st.mu);
	while (!st.entered)
		pthread_cond_wait(&st.cv, &st.mu);
	pthread_mutex_unlock(&st.mu);

	t_fill(b, 8192, 8192, 9);
	cr_assert_eq(iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), 8192, b, 8192, NULL), 0);
	memset(b, 0, 8192);
	cr_assert_eq(iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), 8192, b, 8192, NULL), 0);
	cr_assert_eq(t_check(b, 8192, 8192, 9), -1, "read back other bytes than written");

	pthread_mutex_lock(&st.mu);
	st.release = true;
	pthread_cond_broadcast(&st.cv);
	pthread_mutex_unlock(&st.mu);
	t_dev_close(&td);
	iol_req_release(&req);
	free(a);
	free(b);
}

Test(sim, preflush_orders_durability, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_req w2;
	struct cb c2;
	unsigned char *buf;

	sim_open(&td, 1 * MiB, 4096, true);
	buf = t_buf(&td, 2 * 4096);
	t_fill(buf, 2 * 4096, 0, 4);
	{
		struct iol_req w1;
		struct cb c1;

		submit(td.dev, &w1, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, &c1);
		cr_assert_eq(deliver_until(td.dev, &c1, IOL_SIM_FIFO), 0);
		iol_req_release(&w1);
	}
	/* A PREFLUSH write in flight: its data cannot be on media before its flush. */
	submit(td.dev, &w2, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH), 4096, buf + 4096, 4096, &c2);
	cr_assert_eq(crash_classes(td.dev, 4096, 4096, 4, IOL_SIM_STRICT), S_OLD,
		     "a PREFLUSH write reached the media before its flush completed");
	cr_assert_eq(deliver_until(td.dev, &c2, IOL_SIM_FIFO), 0);
	cr_assert_eq(crash_classes(td.dev, 0, 4096, 4, IOL_SIM_STRICT), S_NEW,
		     "PREFLUSH did not make the earlier completed write durable");
	cr_assert_eq(crash_classes(td.dev, 4096, 4096, 4, IOL_SIM_STRICT), S_OLD | S_NEW,
		     "a PREFLUSH write without FUA is durable by itself");
	iol_req_release(&w2);
	free(buf);
	t_dev_close(&td);
}

Test(sim, failed_flush_makes_nothing_durable, .timeout = T_TIMEOUT)
{
	const struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1 };
	struct t_dev td;
	unsigned char *buf;

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 4096);
	t_fill(buf, 4096, 0, 5);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	cr_assert_eq(t_flush(td.dev), -EIO);
	cr_assert(is_unstable(td.dev, 0, 4096), "a failed flush made the write durable");
	cr_assert_eq(t_flush(td.dev), 0);
	cr_assert_not(is_unstable(td.dev, 0, 4096));
	free(buf);
	t_dev_close(&td);
}

/* ---- tearing ---- */

Test(sim, sectors_tear_independently, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf, *img;
	unsigned combos2 = 0, mixed8 = 0;

	sim_open(&td, 256 * 1024, 512, false);
	buf = t_buf(&td, 8 * 512);
	img = malloc(256 * 1024);
	cr_assert_not_null(img);

	/* A 2-sector write at sector 10 and an 8-sector write at sector 64, unflushed. */
	t_fill(buf, 1024, 10 * 512, 6);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 10 * 512, buf, 1024, 0, NULL), 0);
	t_fill(buf, 4096, 64 * 512, 6);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 64 * 512, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_unstable(td.dev, NULL, 0), 10);

	for (uint64_t s = 0; s < NSEEDS; s++) {
		unsigned nnew = 0;
		int k0, k1;

		cr_assert_eq(iol_sim_crash(td.dev, s, IOL_SIM_STRICT, img, NULL), 0);
		k0 = classify(img, 10 * 512, 512, 6);
		k1 = classify(img, 11 * 512, 512, 6);
		cr_assert(k0 != S_OTHER && k1 != S_OTHER, "strict crash produced garbage");
		combos2 |= 1u << ((k0 == S_NEW) * 2 + (k1 == S_NEW));
		for (int i = 0; i < 8; i++) {
			int k = classify(img, (64 + (uint64_t)i) * 512, 512, 6);

			cr_assert(k != S_OTHER, "seed %llu: sector %d neither old nor new",
				  (unsigned long long)s, 64 + i);
			nnew += k == S_NEW;
		}
		if (nnew && nnew < 8)
			mixed8++;
	}
	cr_assert_eq(combos2, 0xf, "2-sector write: only combinations %#x of old/new seen",
		     combos2);
	cr_assert_gt(mixed8, 0, "an 8-sector write was atomic for all %d seeds", NSEEDS);
	free(img);
	free(buf);
	t_dev_close(&td);
}

Test(sim, garble_profile, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf, *img;
	unsigned other = 0;

	sim_open(&td, 256 * 1024, 512, false);
	buf = t_buf(&td, 4096);
	img = malloc(256 * 1024);
	cr_assert_not_null(img);
	t_fill(buf, 4096, 0, 7);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);
	for (uint64_t s = 0; s < NSEEDS; s++) {
		struct iol_sim_crash_info ci;
		unsigned here = 0;

		cr_assert_eq(iol_sim_crash(td.dev, s, IOL_SIM_GARBLE, img, &ci), 0);
		cr_assert_eq(ci.unstable_sectors, 8);
		cr_assert_eq(ci.kept_old + ci.took_new + ci.garbled, 8);
		for (int i = 0; i < 8; i++)
			here += classify(img, (uint64_t)i * 512, 512, 7) == S_OTHER;
		cr_assert_eq(here, ci.garbled, "seed %llu: %u garbage sectors, info says %llu",
			     (unsigned long long)s, here, (unsigned long long)ci.garbled);
		other += here;
		cr_assert(t_all(img + 4096, 256 * 1024 - 4096, 0), "garble touched stable sectors");
	}
	cr_assert_gt(other, 0, "garble profile never produced garbage in %d seeds", NSEEDS);
	free(img);
	free(buf);
	t_dev_close(&td);
}

Test(sim, crash_choose, .timeout = T_TIMEOUT)
{
	const uint8_t choice[4] = { 0, 1, 2, 1 };
	struct t_dev td;
	unsigned char *buf, *img, *img2;

	sim_open(&td, 64 * 1024, 4096, false);
	buf = t_buf(&td, 4 * 4096);
	img = malloc(64 * 1024);
	img2 = malloc(64 * 1024);
	cr_assert(img && img2);
	t_fill(buf, 4 * 4096, 4096, 8);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 4096, buf, 4 * 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_unstable(td.dev, NULL, 0), 4);
	cr_assert_eq(iol_sim_crash_choose(td.dev, choice, 4, 5, img), 0);
	cr_assert_eq(classify(img, 1 * 4096, 4096, 8), S_OLD);
	cr_assert_eq(classify(img, 2 * 4096, 4096, 8), S_NEW);
	cr_assert_eq(classify(img, 3 * 4096, 4096, 8), S_OTHER);
	cr_assert_eq(classify(img, 4 * 4096, 4096, 8), S_NEW);
	cr_assert(t_all(img, 4096, 0) && t_all(img + 5 * 4096, 64 * 1024 - 5 * 4096, 0));
	/* Same seed, same image (garbage included). */
	cr_assert_eq(iol_sim_crash_choose(td.dev, choice, 4, 5, img2), 0);
	cr_assert(!memcmp(img, img2, 64 * 1024), "crash_choose not deterministic");
	/* A choice vector for a different unstable set is refused. */
	cr_assert_eq(iol_sim_crash_choose(td.dev, choice, 3, 5, img2), -EINVAL);
	{
		const uint8_t badc[4] = { 0, 1, 3, 1 };

		cr_assert_eq(iol_sim_crash_choose(td.dev, badc, 4, 5, img2), -EINVAL);
	}
	cr_assert_eq(iol_sim_crash(td.dev, 1, (enum iol_sim_crash_profile)9, img2, NULL), -EINVAL);
	free(img);
	free(img2);
	free(buf);
	t_dev_close(&td);
}

/* Which of the patterns @seeds[0..n) (seed 0: zeroes) sector @sec of @img holds, or -1. */
static int which_version(const unsigned char *img, uint64_t sec, const uint64_t *seeds, int n)
{
	for (int v = 0; v < n; v++) {
		if (seeds[v] ? t_check(img + sec * 512, 512, sec * 512, seeds[v]) == -1 :
			       t_all(img + sec * 512, 512, 0))
			return v;
	}
	return -1;
}

Test(sim, versions_profile, .timeout = T_TIMEOUT)
{
	/* Sectors 8..11: media zero, then write A and B completed into the cache (B
	 * overwrote A), then C in flight: four versions each, A and B in between. */
	const uint64_t seeds[4] = { 0, 21, 22, 23 }, bytes = 64 * 1024;
	struct t_dev td;
	struct iol_req rq[4];
	struct cb cb[4];
	unsigned char *buf[3], *img, *one;
	unsigned seen[4] = { 0 }, inter_info = 0;
	uint64_t u[8];
	uint32_t nv[8];

	sim_open(&td, bytes, 512, true);
	img = malloc(bytes);
	one = malloc(512);
	cr_assert(img && one);
	for (int i = 0; i < 3; i++) {
		buf[i] = t_buf(&td, 4 * 512);
		t_fill(buf[i], 4 * 512, 8 * 512, seeds[i + 1]);
	}
	submit(td.dev, &rq[0], IOL_OPF(IOL_OP_WRITE, 0), 8 * 512, buf[0], 4 * 512, &cb[0]);
	cr_assert_eq(deliver_until(td.dev, &cb[0], IOL_SIM_FIFO), 0);
	submit(td.dev, &rq[1], IOL_OPF(IOL_OP_WRITE, 0), 8 * 512, buf[1], 4 * 512, &cb[1]);
	cr_assert_eq(deliver_until(td.dev, &cb[1], IOL_SIM_FIFO), 0);
	submit(td.dev, &rq[2], IOL_OPF(IOL_OP_WRITE, 0), 8 * 512, buf[2], 4 * 512, &cb[2]);

	cr_assert_eq(iol_sim_unstable_versions(td.dev, u, nv, 8), 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(u[i], 8u + (unsigned)i);
		cr_assert_eq(nv[i], 4, "sector %d: %u versions, expected 4", 8 + i, nv[i]);
		for (uint32_t v = 0; v < 4; v++) {
			cr_assert_eq(iol_sim_version_read(td.dev, u[i], v, one), 0);
			cr_assert(seeds[v] ? t_check(one, 512, u[i] * 512, seeds[v]) == -1 :
					     t_all(one, 512, 0),
				  "sector %d version %u wrong", 8 + i, v);
		}
		cr_assert_eq(iol_sim_version_read(td.dev, u[i], 4, one), -EINVAL);
	}
	/* Seeded power cuts: only versions that were written, each of them seen. */
	for (uint64_t s = 0; s < 4 * NSEEDS; s++) {
		struct iol_sim_crash_info ci;
		unsigned inter = 0;

		cr_assert_eq(iol_sim_crash(td.dev, s, IOL_SIM_VERSIONS, img, &ci), 0);
		cr_assert_eq(ci.unstable_sectors, 4);
		cr_assert_eq(ci.kept_old + ci.took_new + ci.intermediate, 4);
		for (uint64_t sec = 8; sec < 12; sec++) {
			int v = which_version(img, sec, seeds, 4);

			cr_assert(v >= 0, "seed %llu: sector %llu holds a version never written",
				  (unsigned long long)s, (unsigned long long)sec);
			seen[v]++;
			inter += v == 1 || v == 2;
		}
		cr_assert_eq(inter, ci.intermediate);
		inter_info += inter;
		cr_assert(t_all(img, 8 * 512, 0) && t_all(img + 12 * 512, bytes - 12 * 512, 0),
			  "versions profile touched stable sectors");
	}
	for (int v = 0; v < 4; v++)
		cr_assert_gt(seen[v], 0, "version %d (%s) never produced", v,
			     v == 0 ? "media" :
			     v == 3 ? "newest" :
				      "intermediate");
	cr_assert_gt(inter_info, 0);
	/* Chosen versions, exactly; garbage; refusals. */
	{
		const uint32_t ver[4] = { 1, 2, IOL_SIM_VER_GARBAGE, 0 }, bad[4] = { 0, 4, 0, 0 };
		const uint8_t ch[4] = { 1, 1, 0, 0 };

		cr_assert_eq(iol_sim_crash_versions(td.dev, ver, 4, 9, img), 0);
		cr_assert_eq(which_version(img, 8, seeds, 4), 1);
		cr_assert_eq(which_version(img, 9, seeds, 4), 2);
		cr_assert_eq(which_version(img, 10, seeds, 4), -1);
		cr_assert_eq(which_version(img, 11, seeds, 4), 0);
		cr_assert_eq(iol_sim_crash_versions(td.dev, bad, 4, 9, img), -EINVAL);
		cr_assert_eq(iol_sim_crash_versions(td.dev, ver, 3, 9, img), -EINVAL);
		/* crash_choose's "new" is the last version: the write in flight. */
		cr_assert_eq(iol_sim_crash_choose(td.dev, ch, 4, 9, img), 0);
		cr_assert_eq(which_version(img, 8, seeds, 4), 3);
		cr_assert_eq(which_version(img, 10, seeds, 4), 0);
	}
	/* C completes, a flush captures the cache, D completes after it: once the flush is
	 * done the sectors are C on media plus D; the history before C is gone. */
	cr_assert_eq(deliver_until(td.dev, &cb[2], IOL_SIM_FIFO), 0);
	submit(td.dev, &rq[3], IOL_OPF(IOL_OP_FLUSH, 0), 0, NULL, 0, &cb[3]);
	t_fill(buf[0], 4 * 512, 8 * 512, 24);
	submit(td.dev, &rq[0], IOL_OPF(IOL_OP_WRITE, 0), 8 * 512, buf[0], 4 * 512, &cb[0]);
	cr_assert_eq(deliver_until(td.dev, &cb[0], IOL_SIM_LIFO), 0);
	cr_assert_eq(atomic_load(&cb[3].calls), 0);
	cr_assert_eq(iol_sim_unstable_versions(td.dev, u, nv, 8), 4);
	cr_assert_eq(nv[0], 5, "before the flush completes: media, A, B, C, D");
	cr_assert_eq(deliver_until(td.dev, &cb[3], IOL_SIM_FIFO), 0);
	cr_assert_eq(iol_sim_unstable_versions(td.dev, u, nv, 8), 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(nv[i], 2, "after the flush: media (C) and D, not %u versions", nv[i]);
		cr_assert_eq(iol_sim_version_read(td.dev, u[i], 0, one), 0);
		cr_assert_eq(t_check(one, 512, u[i] * 512, 23), -1);
	}
	/* Stable sectors have version 0 only. */
	cr_assert_eq(iol_sim_version_read(td.dev, 0, 0, one), 0);
	cr_assert_eq(iol_sim_version_read(td.dev, 0, 1, one), -EINVAL);
	free(img);
	free(one);
	for (int i = 0; i < 3; i++)
		free(buf[i]);
	t_dev_close(&td);
}

Test(sim, crash_deterministic_and_harmless, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf, *a, *b;
	bool differ = false;

	sim_open(&td, 256 * 1024, 512, false);
	buf = t_buf(&td, 16 * 512);
	a = malloc(256 * 1024);
	b = malloc(256 * 1024);
	cr_assert(a && b);
	t_fill(buf, 16 * 512, 0, 9);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 16 * 512, 0, NULL), 0);
	for (uint64_t s = 0; s < 16; s++) {
		cr_assert_eq(iol_sim_crash(td.dev, s, IOL_SIM_GARBLE, a, NULL), 0);
		cr_assert_eq(iol_sim_crash(td.dev, s, IOL_SIM_GARBLE, b, NULL), 0);
		cr_assert(!memcmp(a, b, 256 * 1024), "seed %llu: two crashes differ",
			  (unsigned long long)s);
		if (s) {
			cr_assert_eq(iol_sim_crash(td.dev, s - 1, IOL_SIM_GARBLE, b, NULL), 0);
			differ |= memcmp(a, b, 256 * 1024) != 0;
		}
	}
	cr_assert(differ, "16 different seeds gave the same crash image");
	/* The running disk is undisturbed. */
	cr_assert_eq(iol_sim_unstable(td.dev, NULL, 0), 16);
	memset(buf, 0, 16 * 512);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 16 * 512, 0, NULL), 0);
	cr_assert_eq(t_check(buf, 16 * 512, 0, 9), -1, "a crash snapshot changed the live disk");
	free(a);
	free(b);
	free(buf);
	t_dev_close(&td);
}

/* ---- trace ---- */

static const struct iol_sim_event *find_ev(const struct iol_sim_event *ev, size_t n,
					   uint64_t req_id, uint16_t type)
{
	for (size_t i = 0; i < n; i++)
		if (ev[i].req_id == req_id && ev[i].type == type)
			return &ev[i];
	return NULL;
}

Test(sim, trace_records_events, .timeout = T_TIMEOUT)
{
	const struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 1, .err = -ENOSPC };
	struct iol_sim_event ev[64];
	const struct iol_sim_event *e, *s;
	struct t_dev td;
	unsigned char *buf;
	size_t n;

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 8192);
	memset(buf, 1, 8192);
	cr_assert_eq(iol_sim_trace_len(td.dev), 0, "trace not empty on a fresh disk");
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 4096, buf, 8192, 0, NULL), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 65536, buf, 4096, 0, NULL), 0);
	cr_assert_eq(t_flush(td.dev), 0);
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), -ENOSPC);

	n = iol_sim_trace_len(td.dev);
	cr_assert_geq(n, 10, "only %zu events", n);
	cr_assert_leq(n, 64);
	cr_assert_eq(iol_sim_trace_copy(td.dev, 0, ev, 64), n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(ev[i].seq, i + 1, "event %zu has seq %llu", i,
			     (unsigned long long)ev[i].seq);

	/* Request 1: the FUA write. */
	s = find_ev(ev, n, 1, IOL_SIM_EV_SUBMIT);
	e = find_ev(ev, n, 1, IOL_SIM_EV_COMPLETE);
	cr_assert(s && e, "write: submit/complete events missing");
	cr_assert(s->seq < e->seq);
	cr_assert_eq(s->off, 4096);
	cr_assert_eq(s->len, 8192);
	cr_assert_eq(s->opf, IOL_OPF(IOL_OP_WRITE, IOL_FUA).bits);
	cr_assert_eq(e->status, 0);
	/* Request 2: the read. */
	s = find_ev(ev, n, 2, IOL_SIM_EV_SUBMIT);
	e = find_ev(ev, n, 2, IOL_SIM_EV_COMPLETE);
	cr_assert(s && e, "read: submit/complete events missing");
	cr_assert_eq(s->off, 65536);
	cr_assert_eq(s->len, 4096);
	cr_assert_eq(s->opf, IOL_OPF(IOL_OP_READ, 0).bits);
	/* Request 3: the flush. */
	s = find_ev(ev, n, 3, IOL_SIM_EV_SUBMIT);
	cr_assert(s && find_ev(ev, n, 3, IOL_SIM_EV_FLUSH_ISSUE) &&
			  find_ev(ev, n, 3, IOL_SIM_EV_FLUSH_DONE),
		  "flush: events missing");
	cr_assert(find_ev(ev, n, 3, IOL_SIM_EV_FLUSH_ISSUE)->seq <
		  find_ev(ev, n, 3, IOL_SIM_EV_FLUSH_DONE)->seq);
	cr_assert_eq(s->opf, IOL_OPF(IOL_OP_FLUSH, 0).bits);
	cr_assert_not_null(find_ev(ev, n, 3, IOL_SIM_EV_COMPLETE));
	/* Request 4: the failed write. */
	e = find_ev(ev, n, 4, IOL_SIM_EV_COMPLETE);
	cr_assert_not_null(e);
	cr_assert_eq(e->status, -ENOSPC, "failed write traced with status %d", e->status);
	/* Partial copies. */
	cr_assert_eq(iol_sim_trace_copy(td.dev, n - 2, ev, 64), 2);
	cr_assert_eq(ev[0].seq, n - 1);
	cr_assert_eq(iol_sim_trace_copy(td.dev, n, ev, 64), 0);

	/* Switched off, nothing is recorded, but sequence numbers keep counting. */
	iol_sim_trace_enable(td.dev, false);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_trace_len(td.dev), n, "events recorded while the trace was off");
	iol_sim_trace_enable(td.dev, true);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_trace_len(td.dev), n + 2);
	cr_assert_eq(iol_sim_trace_copy(td.dev, n, ev, 64), 2);
	cr_assert_eq(ev[0].type, IOL_SIM_EV_SUBMIT);
	cr_assert_eq(ev[0].req_id, 6, "request numbers stopped while the trace was off");
	cr_assert_eq(ev[0].seq, n + 3, "sequence numbers stopped while the trace was off");
	free(buf);
	t_dev_close(&td);
}

/* ---- completion order ---- */

enum {
	NORD = 64
};

struct order_ctx {
	atomic_uint pos;
	unsigned order[NORD];
	struct iol_req req[NORD];
};

static void order_end(struct iol_req *req)
{
	struct order_ctx *o = req->priv;
	unsigned p = atomic_fetch_add(&o->pos, 1);

	if (p < NORD)
		o->order[p] = (unsigned)(req - o->req);
}

/* Submit NORD reads on a fresh disk and return whether they completed out of order. */
static bool run_order(uint64_t seed, enum iol_sim_latency lat, bool in_order)
{
	const struct t_dev_cfg cfg = { .backend = "sim",
				       .bytes = 1 * MiB,
				       .seed = seed,
				       .latency = lat,
				       .in_order = in_order };
	struct order_ctx *o = calloc(1, sizeof(*o));
	struct t_dev td;
	unsigned char *buf;
	bool ooo = false;

	cr_assert_not_null(o);
	t_dev_open(&td, &cfg);
	buf = t_buf(&td, NORD * 4096);
	for (unsigned i = 0; i < NORD; i++) {
		cr_assert_eq(iol_req_init(&o->req[i], td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
		o->req[i].off = (uint64_t)i * 4096;
		iol_req_add(&o->req[i], buf + (size_t)i * 4096, 4096);
		o->req[i].end_io = order_end;
		o->req[i].priv = o;
	}
	for (unsigned i = 0; i < NORD; i++)
		cr_assert_eq(iol_submit(&o->req[i]), 0);
	cr_assert(t_wait_uint(&o->pos, NORD, 20000), "reads did not complete");
	for (unsigned i = 0; i < NORD; i++) {
		if (o->order[i] != i)
			ooo = true;
		iol_req_release(&o->req[i]);
	}
	free(buf);
	t_dev_close(&td);
	free(o);
	return ooo;
}

Test(sim, completions_out_of_order, .timeout = T_TIMEOUT)
{
	bool any = false;

	for (uint64_t s = 1; s <= 8 && !any; s++)
		any = run_order(s, IOL_SIM_LAT_NVME, false);
	cr_assert(any, "%d reads completed in submission order for 8 seeds", NORD);
	for (uint64_t s = 1; s <= 4; s++)
		cr_assert_not(run_order(s, IOL_SIM_LAT_NVME, true),
			      "in_order: seed %llu completed out of order", (unsigned long long)s);
}

Test(sim, hold_delivery_orders, .timeout = T_TIMEOUT)
{
	const struct t_dev_cfg cfg = { .backend = "sim", .bytes = 1 * MiB, .hold = true, .seed = 1 };
	struct order_ctx *o = calloc(1, sizeof(*o));
	struct t_dev td;
	unsigned char *buf;

	cr_assert_not_null(o);
	t_dev_open(&td, &cfg);
	buf = t_buf(&td, 6 * 4096);
	for (unsigned i = 0; i < 6; i++) {
		cr_assert_eq(iol_req_init(&o->req[i], td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
		o->req[i].off = (uint64_t)i * 4096;
		iol_req_add(&o->req[i], buf + (size_t)i * 4096, 4096);
		o->req[i].end_io = order_end;
		o->req[i].priv = o;
		cr_assert_eq(iol_submit(&o->req[i]), 0);
	}
	cr_assert_eq(iol_sim_pending(td.dev), 6);
	t_sleep_ms(30);
	cr_assert_eq(atomic_load(&o->pos), 0, "held completions ran without iol_sim_deliver");
	cr_assert_eq(iol_sim_deliver(td.dev, 2, IOL_SIM_FIFO), 2);
	cr_assert(t_wait_uint(&o->pos, 2, 5000));
	cr_assert_eq(o->order[0], 0);
	cr_assert_eq(o->order[1], 1);
	cr_assert_eq(iol_sim_deliver(td.dev, 2, IOL_SIM_LIFO), 2);
	cr_assert(t_wait_uint(&o->pos, 4, 5000));
	cr_assert_eq(o->order[2], 5);
	cr_assert_eq(o->order[3], 4);
	cr_assert_eq(iol_sim_pending(td.dev), 2);
	cr_assert_eq(iol_sim_deliver(td.dev, 10, IOL_SIM_RANDOM), 2);
	cr_assert(t_wait_uint(&o->pos, 6, 5000));
	cr_assert((o->order[4] == 2 && o->order[5] == 3) || (o->order[4] == 3 && o->order[5] == 2));
	cr_assert_eq(iol_sim_pending(td.dev), 0);
	cr_assert_eq(iol_sim_deliver(td.dev, 1, IOL_SIM_FIFO), 0);
	for (unsigned i = 0; i < 6; i++)
		iol_req_release(&o->req[i]);
	free(buf);
	t_dev_close(&td);
	free(o);
}

/* ---- faults ---- */

Test(sim, fault_bitflip, .timeout = T_TIMEOUT)
{
	const struct iol_sim_fault f = { .op = IOL_OP_READ,
					 .nth = 1,
					 .kind = IOL_SIM_FAULT_BITFLIP };
	struct t_dev td;
	unsigned char *buf;
	unsigned bits = 0;

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 8192);
	t_fill(buf, 8192, 0, 10);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 8192, 0, NULL), 0);
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	memset(buf, 0, 8192);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 8192, 0, NULL), 0,
		     "a bit-flipped read must still succeed");
	for (size_t i = 0; i < 8192; i++) {
		unsigned char want;

		t_fill(&want, 1, i, 10);
		bits += (unsigned)__builtin_popcount((unsigned)(buf[i] ^ want));
	}
	cr_assert_eq(bits, 1, "bit-flip fault changed %u bits", bits);
	/* Once only, and the stored data is intact. */
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 8192, 0, NULL), 0);
	cr_assert_eq(t_check(buf, 8192, 0, 10), -1, "the flip reached the stored data");
	free(buf);
	t_dev_close(&td);
}

Test(sim, fault_short_read, .timeout = T_TIMEOUT)
{
	const struct iol_sim_fault f = { .op = IOL_OP_READ, .nth = 1, .kind = IOL_SIM_FAULT_SHORT };
	struct t_dev td;
	unsigned char *buf;
	size_t moved = 0;

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 16384);
	t_fill(buf, 16384, 0, 11);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 16384, 0, NULL), 0);
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	memset(buf, 0, 16384);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 16384, 4096, &moved), -EIO,
		     "a short read must complete -EIO");
	cr_assert_eq(moved, 8192, "short read moved %zu bytes, expected half", moved);
	cr_assert_eq(t_check(buf, 8192, 0, 11), -1, "the half that moved is wrong");
	free(buf);
	t_dev_close(&td);
}

/* Run @n single-sector writes; bit i of the result set when write i failed. */
static unsigned write_run(struct iol_dev *dev, void *buf, unsigned n)
{
	unsigned failed = 0;

	for (unsigned i = 0; i < n; i++)
		if (t_io(dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL))
			failed |= 1u << i;
	return failed;
}

Test(sim, fault_once_and_persistent, .timeout = T_TIMEOUT)
{
	struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 2 };
	struct t_dev td;
	unsigned char *buf;
	unsigned got;

	sim_open(&td, 1 * MiB, 4096, false);
	buf = t_buf(&td, 4096);
	memset(buf, 1, 4096);
	cr_assert_eq(write_run(td.dev, buf, 3), 0); /* counts start when armed */
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	got = write_run(td.dev, buf, 5);
	cr_assert_eq(got, 0x2, "once, nth 2: failure mask %#x, expected 0x2", got);
	f.persistent = true;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	got = write_run(td.dev, buf, 5);
	cr_assert_eq(got, 0x1e, "persistent, nth 2: failure mask %#x, expected 0x1e", got);
	/* Reads are not affected by a write fault. */
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), 0);
	iol_sim_fault_clear(td.dev);
	cr_assert_eq(write_run(td.dev, buf, 3), 0, "faults survived iol_sim_fault_clear");
	free(buf);
	t_dev_close(&td);
}

Test(sim, fault_plan_limits, .timeout = T_TIMEOUT)
{
	struct iol_sim_fault f = { .op = IOL_OP_READ, .nth = 1000 };
	struct t_dev td;

	sim_open(&td, 1 * MiB, 4096, false);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0, "entry %d", i);
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), -ENOSPC, "a 17th fault entry was accepted");
	iol_sim_fault_clear(td.dev);
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0, "clear did not empty the plan");
	f.nth = 0;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), -EINVAL, "nth 0 accepted");
	f.nth = 1;
	f.op = (enum iol_op)7;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), -EINVAL, "unknown op accepted");
	f.op = IOL_OP_WRITE;
	f.kind = IOL_SIM_FAULT_SHORT;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), -EINVAL, "a short write fault accepted");
	t_dev_close(&td);
}

/* ---- options ---- */

/* The constant and copy fills: every garbled sector reads back as zeroes, 0xff or the
 * media bytes of the sector before it; stable sectors are untouched. */
Test(sim, garble_fills, .timeout = T_TIMEOUT)
{
	static const enum iol_sim_crash_profile pr[] = { IOL_SIM_GARBLE_ZERO, IOL_SIM_GARBLE_ONES,
							 IOL_SIM_GARBLE_COPY };
	struct t_dev td;
	unsigned char *buf, *img, *media, *want = malloc(512);

	sim_open(&td, 256 * 1024, 512, false);
	buf = t_buf(&td, 4096);
	img = malloc(256 * 1024);
	media = malloc(256 * 1024);
	cr_assert(img && want && media);
	/* Sectors 8..15 stable with pattern 3, then rewritten with pattern 7, unflushed. */
	t_fill(buf, 4096, 4096, 3);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 4096, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_media(td.dev, 0, media, 256 * 1024), 0);
	t_fill(buf, 4096, 4096, 7);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 4096, buf, 4096, 0, NULL), 0);
	for (int p = 0; p < 3; p++) {
		uint64_t garbled = 0, seen = 0;

		for (uint64_t s = 0; s < 32; s++) {
			struct iol_sim_crash_info ci;

			cr_assert_eq(iol_sim_crash(td.dev, s, pr[p], img, &ci), 0);
			cr_assert_eq(ci.unstable_sectors, 8);
			garbled += ci.garbled;
			for (int i = 8; i < 16; i++) {
				const unsigned char *q = img + (uint64_t)i * 512;

				if (t_check(q, 512, (uint64_t)i * 512, 3) == -1 ||
				    t_check(q, 512, (uint64_t)i * 512, 7) == -1)
					continue; /* old or new */
				if (p == 2)
					memcpy(want, media + (uint64_t)(i - 1) * 512, 512);
				else
					memset(want, p == 0 ? 0 : 0xff, 512);
				cr_assert(!memcmp(q, want, 512), "profile %d seed %llu sector %d",
					  p, (unsigned long long)s, i);
				seen++;
			}
			cr_assert(t_all(img, 4096, 0) && t_all(img + 8192, 256 * 1024 - 8192, 0),
				  "a fill touched stable sectors");
		}
		cr_assert_gt(garbled, 0);
		cr_assert_eq(seen, garbled);
	}
	cr_assert_eq(iol_sim_crash(td.dev, 1, (enum iol_sim_crash_profile)99, img, NULL), -EINVAL);
	free(want);
	free(media);
	free(img);
	free(buf);
	t_dev_close(&td);
}

/* A sector made unreadable fails every read covering it until it is written. */
Test(sim, unreadable_sector, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf;

	sim_open(&td, 256 * 1024, 512, false);
	buf = t_buf(&td, 4096);
	cr_assert_eq(iol_sim_set_unreadable(td.dev, 3, 1, true), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), -EIO);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 1024, 0, NULL), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 1536, buf, 512, 0, NULL), -EIO);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 1536, buf, 512, 0, NULL), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(iol_sim_set_unreadable(td.dev, 600, 1, true), -EINVAL);
	t_dev_close(&td);
}

Test(sim, latency_parse, .timeout = T_TIMEOUT)
{
	enum iol_sim_latency l = IOL_SIM_LAT_SATA;

	cr_assert_eq(iol_sim_latency_parse("none", &l), 0);
	cr_assert_eq(l, IOL_SIM_LAT_NONE);
	cr_assert_eq(iol_sim_latency_parse("nvme", &l), 0);
	cr_assert_eq(l, IOL_SIM_LAT_NVME);
	cr_assert_eq(iol_sim_latency_parse("sata", &l), 0);
	cr_assert_eq(l, IOL_SIM_LAT_SATA);
	cr_assert_eq(iol_sim_latency_parse("floppy", &l), -EINVAL);
	cr_assert_eq(iol_sim_latency_parse("", &l), -EINVAL);
}

Test(sim, initial_image, .timeout = T_TIMEOUT)
{
	const size_t bytes = 256 * 1024;
	unsigned char *image = malloc(bytes), *img = malloc(bytes);
	struct t_dev_cfg cfg = { .backend = "sim", .bytes = bytes, .image = NULL };
	struct t_dev td;
	unsigned char *buf;

	cr_assert(image && img);
	t_fill(image, bytes, 0, 12);
	cfg.image = image;
	t_dev_open(&td, &cfg);
	memset(image, 0, bytes); /* the disk must have taken a copy */
	buf = t_buf(&td, bytes);
	cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, bytes, NULL), 0);
	cr_assert_eq(t_check(buf, bytes, 0, 12), -1, "reads do not return the initial image");
	cr_assert_eq(iol_sim_media(td.dev, 0, buf, bytes), 0);
	cr_assert_eq(t_check(buf, bytes, 0, 12), -1, "media is not the initial image");
	cr_assert_eq(iol_sim_crash(td.dev, 1, IOL_SIM_GARBLE, img, NULL), 0);
	cr_assert_eq(t_check(img, bytes, 0, 12), -1, "crash with nothing unstable changed data");
	cr_assert_eq(iol_sim_media(td.dev, bytes - 4096, buf, 8192), -EINVAL);
	free(buf);
	free(img);
	free(image);
	t_dev_close(&td);
}

Test(sim, bad_options, .timeout = T_TIMEOUT)
{
	struct iol_sim_opts so = { .size = sizeof(so), .sector = 1024 };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct iol_dev *dev = NULL;

	cr_assert_eq(iol_dev_open(NULL, &o, &dev), -EINVAL, "sector 1024 accepted");
	cr_assert_null(dev);
	so.sector = 4096;
	so.dev_bytes = 4096 * 10 + 512;
	cr_assert_eq(iol_dev_open(NULL, &o, &dev), -EINVAL, "dev_bytes not a sector multiple");
	so.dev_bytes = 0;
	so.size = sizeof(so) - 1;
	cr_assert_eq(iol_dev_open(NULL, &o, &dev), -EINVAL, "wrong iol_sim_opts.size accepted");
	/* Defaults: 64 MiB, 4096-byte sectors. */
	so.size = sizeof(so);
	cr_assert_eq(iol_dev_open(NULL, &o, &dev), 0);
	cr_assert_eq(iol_dev_geom(dev)->size_bytes, 64 * MiB);
	cr_assert_eq(iol_dev_geom(dev)->logical_block, 4096);
	cr_assert_eq(iol_dev_close(dev), 0);
}
