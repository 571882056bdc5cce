/*
 * conformance.c - the request API contract of io.h, checked on one backend at a time.
 *
 * The backend comes from $DELOG_TEST_BACKEND (uring, aio, psync or sim; ctest runs this
 * suite once per built backend).  Real backends run on a zero-filled scratch file in
 * $DELOG_TEST_DIR opened with O_DIRECT; sim runs on an in-memory disk.  What it proves,
 * for every backend alike:
 *   - aligned reads and writes round-trip, at any aligned offset and size, single- and
 *     multi-segment, and touch nothing else on the device;
 *   - a request carries up to iol_max_segs() segments in order, not one more; a device
 *     opened with a lower limit enforces that limit;
 *   - iol_rw_wait splits a 16 MiB transfer into 16 MiB / (iol_max_segs * IOL_SEG_BYTES)
 *     chained requests that together move every byte, and applies PREFLUSH to the first
 *     piece only and FUA to each;
 *   - a hand-built chain completes as a whole when waited on from its last request, and
 *     not before (on sim the completions are held and released one at a time, in both
 *     orders, while a thread waits on the last request);
 *   - an error anywhere in a chain (a rejected request, an injected fault in the first
 *     request) is the status seen at the end of the chain;
 *   - FLUSH, FUA and PREFLUSH complete with status 0 and are counted (on sim their
 *     effect on durability is checked too);
 *   - faults injected on sim reach the completion status of reads, writes and flushes;
 *     on the real backends the iol_dev_fault_add plan does the same (psync in its syscall
 *     table, uring and aio in the completion path), once or persistently;
 *   - misaligned buffers, offsets and lengths, empty requests and ranges past the end are
 *     rejected with -EINVAL before any I/O and without running end_io;
 *   - 4 threads x 1000 concurrent asynchronous requests all complete exactly once with
 *     the right data;
 *   - iol_dev_close waits for requests in flight; writes to a read-only device fail;
 *   - dev_flushes counts a flush per flush request, PREFLUSH write and FUA write without
 *     native FUA; 8 threads flushing at once share flushes through the flush gate, the
 *     kernel merges none of them (the disk's own counter is at least ours), and a failed
 *     flush fails every request that waited for it, its PREFLUSH writes unwritten.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define MiB (1ull << 20)

TestSuite(conformance, .timeout = T_TIMEOUT);

/* ---- small tools ---- */

struct count_ctx {
	atomic_uint calls;
	atomic_int last_status;
};

static void count_end(struct iol_req *req)
{
	struct count_ctx *c = req->priv;

	atomic_store(&c->last_status, atomic_load(&req->status));
	atomic_fetch_add(&c->calls, 1);
}

/*
 * On a held sim disk nothing completes until delivered: submit @req asynchronously and
 * deliver FIFO until it has completed.  Returns its status.
 */
static int held_io(struct iol_dev *dev, struct iol_req *req)
{
	struct count_ctx c = { 0 };
	int err;

	req->end_io = count_end;
	req->priv = &c;
	err = iol_submit(req);
	if (err)
		return err;
	for (unsigned i = 0; i < 10000 && !atomic_load(&c.calls); i++)
		if (!iol_sim_deliver(dev, 1, IOL_SIM_FIFO))
			t_sleep_ms(1);
	cr_assert_eq(atomic_load(&c.calls), 1, "held request never completed");
	return atomic_load(&c.last_status);
}

static void read_expect(struct iol_dev *dev, uint64_t off, size_t len, uint64_t seed,
			const char *what)
{
	const struct t_dev td = { .dev = dev, .geom = iol_dev_geom(dev) };
	void *buf = t_buf(&td, len);
	ssize_t bad;
	int err;

	memset(buf, 0xa5, len);
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), off, buf, len, NULL);
	cr_assert_eq(err, 0, "%s: read back: %s", what, strerror(-err));
	bad = t_check(buf, len, off, seed);
	cr_assert_eq(bad, -1, "%s: byte %zd of %zu at device offset %llu differs", what, bad, len,
		     (unsigned long long)off);
	free(buf);
}

static void write_pattern(struct iol_dev *dev, uint64_t off, size_t len, uint64_t seed)
{
	const struct t_dev td = { .dev = dev, .geom = iol_dev_geom(dev) };
	void *buf = t_buf(&td, len);
	int err;

	t_fill(buf, len, off, seed);
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), off, buf, len, NULL);
	cr_assert_eq(err, 0, "write pattern: %s", strerror(-err));
	free(buf);
}

static bool pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

/* ---- geometry ---- */

Test(conformance, geometry, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	const struct iol_geom *g;
	void *buf;

	t_dev_open(&td, NULL);
	g = td.geom;
	cr_assert_str_eq(g->backend, t_backend());
	cr_assert(pow2(g->dio_mem_align), "dio_mem_align %u", g->dio_mem_align);
	cr_assert(pow2(g->dio_off_align), "dio_off_align %u", g->dio_off_align);
	cr_assert(pow2(g->logical_block), "logical_block %u", g->logical_block);
	/* 0: unknown (a file system with no block device queue behind it). */
	cr_assert(!g->physical_block || g->physical_block >= g->logical_block,
		  "physical_block %u, logical_block %u", g->physical_block, g->logical_block);
	cr_assert_not_null(g->fs_type);
	if (td.sim) {
		cr_assert_str_eq(g->fs_type, "sim");
		cr_assert_eq(iol_dev_fd(td.dev), -1);
	} else {
		cr_assert_geq(iol_dev_fd(td.dev), 0);
		cr_assert_not(g->is_blockdev);
	}
	buf = iol_buf_alloc(td.dev, 1);
	cr_assert_not_null(buf);
	cr_assert_eq((uintptr_t)buf % 4096, 0, "iol_buf_alloc: not 4096-aligned");
	cr_assert_eq((uintptr_t)buf % g->dio_mem_align, 0, "iol_buf_alloc: not dio-aligned");
	free(buf);
	t_dev_close(&td);
}

/* ---- aligned round trip ---- */

Test(conformance, round_trip, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_counters c0, c1;
	unsigned char *model, *wbuf, *rbuf, *all;
	uint64_t size, a;
	uint64_t bytes_w = 0, bytes_r = 0;
	ssize_t bad;

	t_dev_open(&td, NULL);
	size = td.geom->size_bytes;
	a = td.geom->dio_off_align;
	const struct {
		uint64_t off;
		size_t len, seg;
	} cases[] = {
		{ 0, (size_t)a, 0 },                     /* one block at the start */
		{ 3 * a, 4096, 0 },                      /* a page at an odd block */
		{ 7 * a, (size_t)(3 * a), (size_t)a },   /* three one-block segments */
		{ 1 * MiB, 64 * 1024, 4096 },            /* 16 page segments */
		{ 2 * MiB + 5 * a, 256 * 1024, 0 },      /* one big segment */
		{ size - 128 * 1024, 128 * 1024, 8192 }, /* ends exactly at the device end */
		{ 3 * a, (size_t)a, 0 },                 /* overwrite inside an earlier one */
	};
	const size_t ncases = sizeof(cases) / sizeof(cases[0]);

	model = calloc(1, size);
	cr_assert_not_null(model);
	wbuf = t_buf(&td, 256 * 1024);
	rbuf = t_buf(&td, 256 * 1024);
	iol_dev_counters(td.dev, &c0);
	for (size_t i = 0; i < ncases; i++) {
		size_t moved = 0;
		int err;

		t_fill(wbuf, cases[i].len, cases[i].off, 1000 + i);
		err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), cases[i].off, wbuf, cases[i].len,
			   cases[i].seg, &moved);
		cr_assert_eq(err, 0, "case %zu: write: %s", i, strerror(-err));
		cr_assert_eq(moved, cases[i].len, "case %zu: write moved %zu", i, moved);
		memcpy(model + cases[i].off, wbuf, cases[i].len);

		memset(rbuf, 0x5a, cases[i].len);
		err = t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), cases[i].off, rbuf, cases[i].len,
			   cases[i].seg, &moved);
		cr_assert_eq(err, 0, "case %zu: read: %s", i, strerror(-err));
		cr_assert_eq(moved, cases[i].len, "case %zu: read moved %zu", i, moved);
		bad = t_check(rbuf, cases[i].len, cases[i].off, 1000 + i);
		cr_assert_eq(bad, -1, "case %zu: byte %zd read back wrong", i, bad);
		bytes_w += cases[i].len;
		bytes_r += cases[i].len;
	}
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.writes - c0.writes, ncases);
	cr_assert_eq(c1.reads - c0.reads, ncases);
	cr_assert_eq(c1.bytes_written - c0.bytes_written, bytes_w);
	cr_assert_eq(c1.bytes_read - c0.bytes_read, bytes_r);
	cr_assert_eq(c1.errors, c0.errors);

	/* The whole device equals the model: nothing outside the written ranges changed. */
	all = t_buf(&td, size);
	memset(all, 0x5a, size);
	cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, all, size, NULL), 0);
	for (uint64_t o = 0; o < size; o += a)
		cr_assert(!memcmp(all + o, model + o, a), "device block at %llu differs from model",
			  (unsigned long long)o);
	free(all);
	free(model);
	free(wbuf);
	free(rbuf);
	t_dev_close(&td);
}

/* ---- segments ---- */

Test(conformance, max_segs, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_req req;
	unsigned nseg;
	unsigned char *pages, *rbuf;
	const uint64_t off = 2 * MiB;
	int err;

	t_dev_open(&td, NULL);
	nseg = iol_max_segs(td.dev, IOL_MAX_SEGS_DEFAULT);
	cr_assert_eq(nseg, IOL_MAX_SEGS_DEFAULT, "default device: iol_max_segs = %u", nseg);
	cr_assert_eq(iol_max_segs(td.dev, 3), 3);
	cr_assert_eq(iol_max_segs(td.dev, 100000), nseg);
	cr_assert_eq(iol_req_init(&req, td.dev, nseg + 1, IOL_OPF(IOL_OP_WRITE, 0)), -EINVAL,
		     "iol_req_init above iol_max_segs must fail");

	/* nseg page segments taken from the buffer in reverse order: segment i must land at
	 * off + i * 4096 whatever its address. */
	pages = t_buf(&td, (size_t)nseg * 4096);
	cr_assert_eq(iol_req_init(&req, td.dev, nseg, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	req.off = off;
	for (unsigned i = 0; i < nseg; i++) {
		unsigned char *p = pages + (size_t)(nseg - 1 - i) * 4096;

		t_fill(p, 4096, off + (uint64_t)i * 4096, 7);
		cr_assert_eq(iol_req_add(&req, p, 4096), 0, "segment %u", i);
	}
	cr_assert_eq(iol_req_add(&req, pages, 4096), -ENOSPC, "segment past max_segs accepted");
	cr_assert_eq(req.nr_segs, nseg);
	cr_assert_eq(iol_req_len(&req), (size_t)nseg * 4096);
	err = iol_submit_wait(&req);
	cr_assert_eq(err, 0, "max_segs write: %s", strerror(-err));
	cr_assert_eq(req.bytes, (size_t)nseg * 4096);
	iol_req_release(&req);
	read_expect(td.dev, off, (size_t)nseg * 4096, 7, "reverse-order segments");

	/* Segments of different sizes in one request, read back the same way. */
	{
		const size_t a = td.geom->dio_off_align;
		const size_t lens[] = { a, 4096, 3 * a, 8192, a };
		size_t total = 0, moved = 0;
		unsigned char *p;

		for (size_t i = 0; i < 5; i++)
			total += (lens[i] + 4095) / 4096 * 4096;
		p = t_buf(&td, total);
		rbuf = t_buf(&td, total);
		cr_assert_eq(iol_req_init(&req, td.dev, 5, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		req.off = 8 * MiB;
		for (size_t i = 0, at = 0, devo = 0; i < 5; i++) {
			t_fill(p + at, lens[i], req.off + devo, 8);
			cr_assert_eq(iol_req_add(&req, p + at, lens[i]), 0);
			at += (lens[i] + 4095) / 4096 * 4096; /* keep every segment page-aligned */
			devo += lens[i];
		}
		cr_assert_eq(iol_submit_wait(&req), 0);
		cr_assert_eq(req.bytes, iol_req_len(&req));
		moved = iol_req_len(&req);
		iol_req_release(&req);
		read_expect(td.dev, 8 * MiB, moved, 8, "mixed-size segments");
		free(p);
		free(rbuf);
	}
	free(pages);
	t_dev_close(&td);

	/* A device opened with a lower limit enforces it. */
	{
		const struct t_dev_cfg cfg = { .max_segs = 8 };
		unsigned char *b;

		t_dev_open(&td, &cfg);
		cr_assert_eq(iol_max_segs(td.dev, 100), 8);
		cr_assert_eq(iol_max_segs(td.dev, 5), 5);
		cr_assert_eq(iol_req_init(&req, td.dev, 9, IOL_OPF(IOL_OP_READ, 0)), -EINVAL);
		b = t_buf(&td, 8 * 4096);
		cr_assert_eq(iol_req_init(&req, td.dev, 8, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		req.off = 0;
		t_fill(b, 8 * 4096, 0, 9);
		for (unsigned i = 0; i < 8; i++)
			cr_assert_eq(iol_req_add(&req, b + i * 4096, 4096), 0);
		cr_assert_eq(iol_req_add(&req, b, 4096), -ENOSPC);
		cr_assert_eq(iol_submit_wait(&req), 0);
		iol_req_release(&req);
		read_expect(td.dev, 0, 8 * 4096, 9, "8-segment device");
		free(b);
		t_dev_close(&td);
	}
}

/* ---- chained multi-request I/O ---- */

struct rw_ctx {
	atomic_uint calls;
	atomic_int status;
};

static void rw_end(void *priv, int status)
{
	struct rw_ctx *c = priv;

	atomic_store(&c->status, status);
	atomic_fetch_add(&c->calls, 1);
}

static void chain_16mib(const struct t_dev_cfg *cfg)
{
	const size_t len = 16 * MiB;
	const uint64_t off = 4 * MiB;
	struct iol_counters c0, c1;
	struct t_dev td;
	unsigned per, expect, nr = 0;
	unsigned char *buf;
	ssize_t bad;
	int err;

	t_dev_open(&td, cfg);
	per = iol_max_segs(td.dev, IOL_MAX_SEGS_DEFAULT);
	expect = (unsigned)(len / ((size_t)per * IOL_SEG_BYTES));
	cr_assert_gt(expect, 1, "16 MiB must need more than one request");
	buf = t_buf(&td, len);

	t_fill(buf, len, off, 16);
	iol_dev_counters(td.dev, &c0);
	err = iol_rw_wait(td.dev, IOL_OPF(IOL_OP_WRITE, 0), off, buf, len, &nr);
	cr_assert_eq(err, 0, "16 MiB write: %s", strerror(-err));
	cr_assert_eq(nr, expect, "16 MiB write split into %u requests, expected %u", nr, expect);
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.writes - c0.writes, expect, "%llu write requests counted",
		     (unsigned long long)(c1.writes - c0.writes));
	cr_assert_eq(c1.bytes_written - c0.bytes_written, len);

	memset(buf, 0xa5, len);
	nr = 0;
	err = iol_rw_wait(td.dev, IOL_OPF(IOL_OP_READ, 0), off, buf, len, &nr);
	cr_assert_eq(err, 0, "16 MiB read: %s", strerror(-err));
	cr_assert_eq(nr, expect, "16 MiB read split into %u requests, expected %u", nr, expect);
	bad = t_check(buf, len, off, 16);
	cr_assert_eq(bad, -1, "16 MiB chained read: byte %zd wrong (request %zd)", bad,
		     bad / (ssize_t)((size_t)per * IOL_SEG_BYTES));
	iol_dev_counters(td.dev, &c0);
	cr_assert_eq(c0.reads - c1.reads, expect);

	/* Asynchronously, with a length that is not a multiple of IOL_SEG_BYTES: the
	 * callback runs once, after every piece. */
	{
		const size_t alen = 3 * MiB + td.geom->dio_off_align;
		struct rw_ctx rc = { 0 };

		t_fill(buf, alen, off, 17);
		err = iol_rw_submit(td.dev, IOL_OPF(IOL_OP_WRITE, 0), off, buf, alen, rw_end, &rc);
		cr_assert_eq(err, 0);
		cr_assert(t_wait_uint(&rc.calls, 1, 30000), "iol_rw_submit never completed");
		t_sleep_ms(10);
		cr_assert_eq(atomic_load(&rc.calls), 1, "iol_rw_submit callback ran %u times",
			     atomic_load(&rc.calls));
		cr_assert_eq(atomic_load(&rc.status), 0);
		memset(buf, 0, alen);
		rc.calls = 0;
		err = iol_rw_submit(td.dev, IOL_OPF(IOL_OP_READ, 0), off, buf, alen, rw_end, &rc);
		cr_assert_eq(err, 0);
		cr_assert(t_wait_uint(&rc.calls, 1, 30000), "iol_rw_submit read never completed");
		cr_assert_eq(atomic_load(&rc.status), 0);
		bad = t_check(buf, alen, off, 17);
		cr_assert_eq(bad, -1, "async chained read: byte %zd wrong", bad);
	}

	/* PREFLUSH goes with the first piece only, FUA with each. */
	iol_dev_counters(td.dev, &c0);
	err = iol_rw_wait(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH | IOL_FUA), off, buf, len,
			  &nr);
	cr_assert_eq(err, 0);
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.preflushes - c0.preflushes, 1, "preflushes %llu",
		     (unsigned long long)(c1.preflushes - c0.preflushes));
	cr_assert_eq(c1.fua_writes - c0.fua_writes, expect);
	free(buf);
	t_dev_close(&td);
}

Test(conformance, chain_16mib, .timeout = T_TIMEOUT)
{
	chain_16mib(NULL);
}

Test(conformance, chain_16mib_small_segs, .timeout = T_TIMEOUT)
{
	/* 32 segments per request: 128 requests for 16 MiB, deeper than one queue burst. */
	const struct t_dev_cfg cfg = { .max_segs = 32 };

	chain_16mib(&cfg);
}

#define NCHAIN 6

Test(conformance, chain_manual, .timeout = T_TIMEOUT)
{
	static const size_t lens[NCHAIN] = { 4096, 64 * 1024, 8192, 1 << 20, 4096, 12288 };
	struct iol_req w[NCHAIN], r[NCHAIN];
	unsigned char *wb[NCHAIN], *rb[NCHAIN];
	uint64_t offs[NCHAIN];
	struct t_dev td;
	int err;

	t_dev_open(&td, NULL);
	for (int i = 0; i < NCHAIN; i++) {
		offs[i] = (uint64_t)(NCHAIN - i) * 2 * MiB; /* descending offsets */
		wb[i] = t_buf(&td, lens[i]);
		rb[i] = t_buf(&td, lens[i]);
		t_fill(wb[i], lens[i], offs[i], 40 + (uint64_t)i);
		memset(rb[i], 0xa5, lens[i]);
		cr_assert_eq(iol_req_init(&w[i], td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		cr_assert_eq(iol_req_init(&r[i], td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
		w[i].off = r[i].off = offs[i];
		iol_req_add(&w[i], wb[i], lens[i]);
		iol_req_add(&r[i], rb[i], lens[i]);
	}
	for (int i = 0; i + 1 < NCHAIN; i++) {
		iol_req_chain(&w[i], &w[i + 1]);
		iol_req_chain(&r[i], &r[i + 1]);
	}
	/* Writes: submit in chain order, wait on the last. */
	for (int i = 0; i + 1 < NCHAIN; i++)
		cr_assert_eq(iol_submit(&w[i]), 0, "write %d", i);
	err = iol_submit_wait(&w[NCHAIN - 1]);
	cr_assert_eq(err, 0, "write chain: %s", strerror(-err));
	for (int i = 0; i < NCHAIN; i++) {
		cr_assert_eq(atomic_load(&w[i].status), 0, "write %d status", i);
		cr_assert_eq(w[i].bytes, lens[i], "write %d moved %zu", i, w[i].bytes);
	}
	/* Reads: submit the earlier ones in reverse order; the chain is what orders them. */
	for (int i = NCHAIN - 2; i >= 0; i--)
		cr_assert_eq(iol_submit(&r[i]), 0, "read %d", i);
	err = iol_submit_wait(&r[NCHAIN - 1]);
	cr_assert_eq(err, 0, "read chain: %s", strerror(-err));
	for (int i = 0; i < NCHAIN; i++) {
		ssize_t bad = t_check(rb[i], lens[i], offs[i], 40 + (uint64_t)i);

		cr_assert_eq(r[i].bytes, lens[i], "read %d moved %zu", i, r[i].bytes);
		cr_assert_eq(bad, -1, "read %d: byte %zd wrong", i, bad);
		iol_req_release(&w[i]);
		iol_req_release(&r[i]);
		free(wb[i]);
		free(rb[i]);
	}
	t_dev_close(&td);
}

/* ---- waiting on the right end of a chain ---- */

struct waiter {
	struct iol_req *last;
	atomic_uint done;
	int status;
	pthread_t thr;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->status = iol_submit_wait(w->last);
	atomic_store(&w->done, 1);
	return NULL;
}

/*
 * Held sim disk: chain of @n writes, the last one submitted by a waiter thread with
 * iol_submit_wait; completions released one at a time in @order.  The waiter must return
 * only after the final release.  With @fault_first, the first request's write fails and
 * the waiter must see that error.
 */
static void held_chain(enum iol_sim_order order, bool fault_first)
{
	enum {
		N = 5
	};
	const struct t_dev_cfg cfg = { .hold = true, .bytes = 4 * MiB, .seed = 3 };
	struct iol_req req[N];
	unsigned char *buf;
	struct waiter w = { .last = &req[N - 1] };
	struct t_dev td;

	t_dev_open(&td, &cfg);
	buf = t_buf(&td, N * 4096);
	t_fill(buf, N * 4096, 0, 50);
	if (fault_first) {
		const struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 1 };

		cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	}
	for (int i = 0; i < N; i++) {
		cr_assert_eq(iol_req_init(&req[i], td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		req[i].off = (uint64_t)i * 4096;
		iol_req_add(&req[i], buf + i * 4096, 4096);
	}
	for (int i = 0; i + 1 < N; i++)
		iol_req_chain(&req[i], &req[i + 1]);
	for (int i = 0; i + 1 < N; i++)
		cr_assert_eq(iol_submit(&req[i]), 0);
	cr_assert_eq(pthread_create(&w.thr, NULL, waiter_main, &w), 0);
	cr_assert(t_wait_pending(td.dev, N, 10000), "waiter's request never reached the disk");

	for (int k = 0; k < N; k++) {
		cr_assert_eq(iol_sim_deliver(td.dev, 1, order), 1, "delivery %d", k);
		if (k + 1 < N) {
			/* Give a waiter that wrongly woke a chance to be seen. */
			t_sleep_ms(30);
			cr_assert_eq(atomic_load(&w.done), 0,
				     "%s delivery: iol_submit_wait on the last request returned "
				     "after %d of %d completions",
				     order == IOL_SIM_LIFO ? "LIFO" : "FIFO", k + 1, N);
		}
	}
	cr_assert(t_wait_uint(&w.done, 1, 10000), "waiter did not wake after the last completion");
	pthread_join(w.thr, NULL);
	cr_assert_eq(iol_sim_pending(td.dev), 0);
	if (fault_first) {
		cr_assert_eq(w.status, -EIO, "fault in the first request: end of chain saw %d",
			     w.status);
	} else {
		cr_assert_eq(w.status, 0, "chain status %d", w.status);
		for (int i = 0; i < N; i++)
			cr_assert_eq(req[i].bytes, 4096, "request %d moved %zu", i, req[i].bytes);
		/* Read back through the held disk. */
		{
			unsigned char *rb = t_buf(&td, N * 4096);
			struct iol_req rr;

			memset(rb, 0, N * 4096);
			cr_assert_eq(iol_req_init(&rr, td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
			rr.off = 0;
			iol_req_add(&rr, rb, N * 4096);
			cr_assert_eq(held_io(td.dev, &rr), 0);
			cr_assert_eq(t_check(rb, N * 4096, 0, 50), -1,
				     "chained writes not on disk");
			iol_req_release(&rr);
			free(rb);
		}
	}
	for (int i = 0; i < N; i++)
		iol_req_release(&req[i]);
	free(buf);
	t_dev_close(&td);
}

Test(conformance, chain_wait_last, .timeout = T_TIMEOUT)
{
	/* Any backend: a chain whose first request is by far the biggest.  When
	 * iol_submit_wait on the small last request returns, the big first one must already
	 * be complete.  Waiting on the wrong end would return with most of it missing. */
	const size_t big = 8 * MiB, mid = 1 * MiB, small = 4096;
	const uint64_t off_big = 0, off_mid = 12 * MiB, off_small = 14 * MiB;
	struct t_dev td;
	unsigned char *bb, *mb, *sb;

	t_dev_open(&td, NULL);
	write_pattern(td.dev, off_big, big, 60);
	write_pattern(td.dev, off_mid, mid, 60);
	write_pattern(td.dev, off_small, small, 60);
	bb = t_buf(&td, big);
	mb = t_buf(&td, mid);
	sb = t_buf(&td, small);
	for (int iter = 0; iter < 8; iter++) {
		struct iol_req a, b, c;
		unsigned segs = iol_max_segs(td.dev, IOL_MAX_SEGS_DEFAULT);
		size_t seg = big / segs;
		ssize_t bad;
		int err;

		memset(bb, 0xa5, big);
		memset(mb, 0xa5, mid);
		memset(sb, 0xa5, small);
		cr_assert_eq(iol_req_init(&a, td.dev, segs, IOL_OPF(IOL_OP_READ, 0)), 0);
		cr_assert_eq(iol_req_init(&b, td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
		cr_assert_eq(iol_req_init(&c, td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
		a.off = off_big;
		b.off = off_mid;
		c.off = off_small;
		for (unsigned i = 0; i < segs; i++)
			iol_req_add(&a, bb + (size_t)i * seg, seg);
		iol_req_add(&b, mb, mid);
		iol_req_add(&c, sb, small);
		iol_req_chain(&a, &b);
		iol_req_chain(&b, &c);
		cr_assert_eq(iol_submit(&a), 0);
		cr_assert_eq(iol_submit(&b), 0);
		err = iol_submit_wait(&c);
		cr_assert_eq(err, 0, "chain: %s", strerror(-err));
		/* No further synchronisation: everything must be in place already. */
		cr_assert_eq(a.bytes, big,
			     "iteration %d: first request moved %zu of %zu when the "
			     "last one's wait returned",
			     iter, a.bytes, big);
		cr_assert_eq(b.bytes, mid, "iteration %d: middle request moved %zu", iter, b.bytes);
		bad = t_check(bb, big, off_big, 60);
		cr_assert_eq(bad, -1,
			     "iteration %d: first request's data incomplete at byte %zd "
			     "when the wait on the last returned",
			     iter, bad);
		cr_assert_eq(t_check(mb, mid, off_mid, 60), -1, "iteration %d: middle data", iter);
		cr_assert_eq(t_check(sb, small, off_small, 60), -1, "iteration %d: last data",
			     iter);
		iol_req_release(&a);
		iol_req_release(&b);
		iol_req_release(&c);
	}
	free(bb);
	free(mb);
	free(sb);
	t_dev_close(&td);

	if (t_backend_is_sim()) {
		/* Completions held and released one at a time while a thread waits on the last
		 * request: LIFO releases the last request first, FIFO the first first. */
		held_chain(IOL_SIM_LIFO, false);
		held_chain(IOL_SIM_FIFO, false);
		held_chain(IOL_SIM_LIFO, true);
	}
}

/* ---- errors through a chain ---- */

Test(conformance, chain_error_propagates, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_req a, b, c;
	struct count_ctx cc = { 0 };
	unsigned char *buf;
	int err;

	t_dev_open(&td, NULL);
	buf = t_buf(&td, 4 * 4096);
	t_fill(buf, 4 * 4096, 0, 70);

	/* A misaligned first request: rejected, but its error reaches the end of the chain,
	 * whose waiter still wakes; the valid requests still run. */
	cr_assert_eq(iol_req_init(&a, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	cr_assert_eq(iol_req_init(&b, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	cr_assert_eq(iol_req_init(&c, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	a.off = td.geom->dio_off_align / 2 ? td.geom->dio_off_align / 2 : 1;
	b.off = 4096;
	c.off = 8192;
	iol_req_add(&a, buf, 4096);
	iol_req_add(&b, buf + 4096, 4096);
	iol_req_add(&c, buf + 8192, 4096);
	iol_req_chain(&a, &b);
	iol_req_chain(&b, &c);
	cr_assert_eq(iol_submit(&a), -EINVAL, "misaligned offset accepted");
	cr_assert_eq(iol_submit(&b), 0);
	err = iol_submit_wait(&c);
	cr_assert_eq(err, -EINVAL, "end of chain saw %d, not the rejected request's -EINVAL", err);
	cr_assert_eq(b.bytes, 4096, "valid middle request did not run");
	cr_assert_eq(c.bytes, 4096, "valid last request did not run");
	iol_req_release(&a);
	iol_req_release(&b);
	iol_req_release(&c);
	read_expect(td.dev, 4096, 8192, 70, "valid requests of a failed chain");

	/* The same with an asynchronous end: its end_io runs exactly once, with the error. */
	cr_assert_eq(iol_req_init(&a, td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
	cr_assert_eq(iol_req_init(&b, td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
	a.off = 0;
	b.off = 0;
	iol_req_add(&a, buf + 1, 4096); /* misaligned buffer */
	iol_req_add(&b, buf + 4096, 4096);
	iol_req_chain(&a, &b);
	b.end_io = count_end;
	b.priv = &cc;
	cr_assert_eq(iol_submit(&b), 0);
	cr_assert_eq(iol_submit(&a), -EINVAL, "misaligned buffer accepted");
	cr_assert(t_wait_uint(&cc.calls, 1, 10000), "end of chain never completed");
	t_sleep_ms(10);
	cr_assert_eq(atomic_load(&cc.calls), 1);
	cr_assert_eq(atomic_load(&cc.last_status), -EINVAL);
	iol_req_release(&a);
	iol_req_release(&b);

	/* A valid request chained into a misaligned last one: the wait returns the error,
	 * and only once the valid request has completed. */
	cr_assert_eq(iol_req_init(&a, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	cr_assert_eq(iol_req_init(&b, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	a.off = 16 * 4096;
	b.off = 17 * 4096;
	t_fill(buf, 4096, a.off, 71);
	iol_req_add(&a, buf, 4096);
	iol_req_add(&b, buf + 4096, td.geom->dio_off_align / 2 ? td.geom->dio_off_align / 2 : 1);
	iol_req_chain(&a, &b);
	cr_assert_eq(iol_submit(&a), 0);
	err = iol_submit_wait(&b);
	cr_assert_eq(err, -EINVAL, "misaligned last request: %d", err);
	cr_assert_eq(a.bytes, 4096, "wait returned before the valid request completed");
	iol_req_release(&a);
	iol_req_release(&b);
	read_expect(td.dev, 16 * 4096, 4096, 71, "valid request before a rejected end");

	if (td.sim) {
		/* An injected fault in the first request is the status at the end. */
		const struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 1 };

		cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
		cr_assert_eq(iol_req_init(&a, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		cr_assert_eq(iol_req_init(&b, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		cr_assert_eq(iol_req_init(&c, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		a.off = 0;
		b.off = 4096;
		c.off = 8192;
		iol_req_add(&a, buf, 4096);
		iol_req_add(&b, buf + 4096, 4096);
		iol_req_add(&c, buf + 8192, 4096);
		iol_req_chain(&a, &b);
		iol_req_chain(&b, &c);
		cr_assert_eq(iol_submit(&a), 0);
		cr_assert_eq(iol_submit(&b), 0);
		err = iol_submit_wait(&c);
		cr_assert_eq(err, -EIO, "fault in the first request: end of chain saw %d", err);
		iol_req_release(&a);
		iol_req_release(&b);
		iol_req_release(&c);
	}
	free(buf);
	t_dev_close(&td);
}

/* ---- flush, FUA, PREFLUSH ---- */

static bool sim_range_unstable(struct iol_dev *dev, uint64_t off, size_t len)
{
	uint32_t sec = iol_dev_geom(dev)->logical_block;
	size_t n = iol_sim_unstable(dev, NULL, 0);
	uint64_t *v = calloc(n ? n : 1, sizeof(*v));
	bool hit = false;

	cr_assert_not_null(v);
	n = iol_sim_unstable(dev, v, n);
	for (size_t i = 0; i < n; i++)
		if (v[i] >= off / sec && v[i] < (off + len + sec - 1) / sec)
			hit = true;
	free(v);
	return hit;
}

Test(conformance, flush, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_counters c0, c1;
	struct iol_req req;
	unsigned char *buf;
	int err;

	t_dev_open(&td, NULL);
	/* Ops and flags that do not go together are refused at init. */
	cr_assert_eq(iol_req_init(&req, td.dev, 1, IOL_OPF(IOL_OP_FLUSH, 0)), -EINVAL,
		     "a flush with segments");
	cr_assert_eq(iol_req_init(&req, td.dev, 0, IOL_OPF(IOL_OP_FLUSH, IOL_FUA)), -EINVAL);
	cr_assert_eq(iol_req_init(&req, td.dev, 0, IOL_OPF(IOL_OP_FLUSH, IOL_PREFLUSH)), -EINVAL);
	cr_assert_eq(iol_req_init(&req, td.dev, 1, IOL_OPF(IOL_OP_READ, IOL_FUA)), -EINVAL);
	cr_assert_eq(iol_req_init(&req, td.dev, 1, IOL_OPF(IOL_OP_READ, IOL_PREFLUSH)), -EINVAL);
	cr_assert_eq(iol_req_init(&req, td.dev, 1, IOL_OPF(7, 0)), -EINVAL, "unknown op");
	cr_assert_eq(iol_req_init(&req, td.dev, 1, IOL_OPF(IOL_OP_WRITE, 1u << 12)), -EINVAL,
		     "unknown flag");

	buf = t_buf(&td, 64 * 1024);
	t_fill(buf, 64 * 1024, 0, 80);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 64 * 1024, 0, NULL), 0);
	if (td.sim)
		cr_assert(sim_range_unstable(td.dev, 0, 64 * 1024),
			  "a completed, unflushed write is already stable");
	iol_dev_counters(td.dev, &c0);
	err = t_flush(td.dev);
	cr_assert_eq(err, 0, "flush: %s", strerror(-err));
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.flushes - c0.flushes, 1);
	cr_assert_eq(c1.writes, c0.writes);
	if (td.sim)
		cr_assert_not(sim_range_unstable(td.dev, 0, 64 * 1024),
			      "a flush did not make the completed write stable");

	/* Many flushes in flight at once, each completing once with 0. */
	{
		enum {
			NF = 16
		};
		struct iol_req f[NF];
		struct count_ctx cc = { 0 };

		for (int i = 0; i < NF; i++) {
			cr_assert_eq(iol_req_init(&f[i], td.dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
			f[i].end_io = count_end;
			f[i].priv = &cc;
		}
		for (int i = 0; i < NF; i++)
			cr_assert_eq(iol_submit(&f[i]), 0);
		cr_assert(t_wait_uint(&cc.calls, NF, 30000), "%u of %d flushes completed",
			  atomic_load(&cc.calls), NF);
		for (int i = 0; i < NF; i++) {
			cr_assert_eq(atomic_load(&f[i].status), 0, "flush %d", i);
			iol_req_release(&f[i]);
		}
		t_sleep_ms(10);
		cr_assert_eq(atomic_load(&cc.calls), NF);
	}
	read_expect(td.dev, 0, 64 * 1024, 80, "data across flushes");
	free(buf);
	t_dev_close(&td);
}

Test(conformance, fua, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_counters c0, c1;
	unsigned char *buf;
	size_t moved = 0;
	int err;

	t_dev_open(&td, NULL);
	buf = t_buf(&td, 3 * 65536);

	/* A plain write, then a FUA write: the FUA one is stable on completion; it says
	 * nothing about the other. */
	t_fill(buf, 65536, 0, 90);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 65536, 0, NULL), 0);
	t_fill(buf + 65536, 65536, 1 * MiB, 91);
	iol_dev_counters(td.dev, &c0);
	err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 1 * MiB, buf + 65536, 65536, 4096,
		   &moved);
	cr_assert_eq(err, 0, "FUA write: %s", strerror(-err));
	cr_assert_eq(moved, 65536);
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.fua_writes - c0.fua_writes, 1);
	cr_assert_eq(c1.writes - c0.writes, 1);
	cr_assert_eq(c1.preflushes, c0.preflushes);
	cr_assert_eq(c1.flushes, c0.flushes);
	if (td.sim) {
		cr_assert_not(sim_range_unstable(td.dev, 1 * MiB, 65536), "FUA write not stable");
		cr_assert(sim_range_unstable(td.dev, 0, 65536),
			  "FUA made an unrelated earlier write stable");
	}

	/* PREFLUSH: everything completed before it is stable before it; the write itself
	 * is not (no FUA). */
	t_fill(buf + 2 * 65536, 65536, 2 * MiB, 92);
	iol_dev_counters(td.dev, &c0);
	err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH), 2 * MiB, buf + 2 * 65536, 65536, 0,
		   NULL);
	cr_assert_eq(err, 0, "PREFLUSH write: %s", strerror(-err));
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.preflushes - c0.preflushes, 1);
	cr_assert_eq(c1.fua_writes, c0.fua_writes);
	cr_assert_eq(c1.writes - c0.writes, 1);
	if (td.sim) {
		cr_assert_not(sim_range_unstable(td.dev, 0, 65536),
			      "PREFLUSH did not make the earlier completed write stable");
		cr_assert(sim_range_unstable(td.dev, 2 * MiB, 65536),
			  "a PREFLUSH write without FUA is stable by itself");
	}

	/* PREFLUSH | FUA: both. */
	iol_dev_counters(td.dev, &c0);
	err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH | IOL_FUA), 3 * MiB, buf, 65536, 0,
		   NULL);
	cr_assert_eq(err, 0);
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.preflushes - c0.preflushes, 1);
	cr_assert_eq(c1.fua_writes - c0.fua_writes, 1);
	if (td.sim)
		cr_assert_eq(iol_sim_unstable(td.dev, NULL, 0), 0,
			     "after PREFLUSH|FUA nothing should be unstable");
	read_expect(td.dev, 0, 65536, 90, "plain write");
	read_expect(td.dev, 1 * MiB, 65536, 91, "FUA write");
	read_expect(td.dev, 2 * MiB, 65536, 92, "PREFLUSH write");
	free(buf);
	t_dev_close(&td);
}

/* ---- the flush gate (iolayer/flush.c) ---- */

/* Flush requests the disk under @fd completed so far (field 16 of its sysfs stat, Linux
 * 5.5+), or -1 when there is no such counter. */
static long long disk_flushes(int fd)
{
	char path[128];
	unsigned long long f[17];
	struct stat st;
	FILE *fp;
	int n;

	if (fd < 0 || fstat(fd, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(st.st_dev),
		 minor(st.st_dev));
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	n = fscanf(fp,
		   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		   "%llu %llu %llu",
		   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10],
		   &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]);
	fclose(fp);
	return n == 17 ? (long long)f[15] : -1;
}

/* dev_flushes counts what the device is asked to do: a flush, a PREFLUSH write and, on a
 * device without native FUA, a FUA write are one flush each; a PREFLUSH | FUA write two. */
Test(conformance, dev_flushes_sequential, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_counters c0, c1;
	unsigned char *buf;
	uint64_t fua;

	t_dev_open(&td, NULL);
	fua = td.geom->fua == 1 ? 0 : 1;
	buf = t_buf(&td, 4096);
	t_fill(buf, 4096, 0, 41);
	iol_dev_counters(td.dev, &c0);
	cr_assert_eq(t_flush(td.dev), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 0, buf, 4096, 0, NULL), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH | IOL_FUA), 0, buf, 4096, 0,
			  NULL),
		     0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.dev_flushes - c0.dev_flushes, 3 + 2 * fua,
		     "device flushes %llu, expected %llu (FUA native: %d)",
		     (unsigned long long)(c1.dev_flushes - c0.dev_flushes),
		     (unsigned long long)(3 + 2 * fua), td.geom->fua);
	read_expect(td.dev, 0, 4096, 41, "after the flushes");
	free(buf);
	t_dev_close(&td);
}

enum {
	GT_THREADS = 8,
	GT_ROUNDS = 60
};

struct gate_thr {
	struct iol_dev *dev;
	unsigned char *buf; /* 4 KiB of this thread's own */
	unsigned idx;
	int want;       /* expected status of every request */
	atomic_int bad; /* requests that ended otherwise */
};

/* Each round: a FLUSH waited for on this thread (the inline path), a PREFLUSH | FUA write
 * and a FLUSH submitted asynchronously and awaited together. */
static void *gate_main(void *arg)
{
	struct gate_thr *g = arg;

	for (unsigned r = 0; r < GT_ROUNDS; r++) {
		struct count_ctx cc = { 0 };
		struct iol_req w, f;
		int st;

		if (t_flush(g->dev) != g->want)
			atomic_fetch_add(&g->bad, 1);
		if (iol_req_init(&w, g->dev, 1, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH | IOL_FUA)) ||
		    iol_req_init(&f, g->dev, 0, IOL_OPF(IOL_OP_FLUSH, 0))) {
			atomic_fetch_add(&g->bad, 1);
			return NULL;
		}
		w.off = (uint64_t)g->idx * 4096;
		iol_req_add(&w, g->buf, 4096);
		w.end_io = f.end_io = count_end;
		w.priv = f.priv = &cc;
		if (iol_submit(&w) || iol_submit(&f)) {
			atomic_fetch_add(&g->bad, 1);
			return NULL;
		}
		while (atomic_load(&cc.calls) < 2)
			t_sleep_ms(0);
		st = atomic_load(&w.status);
		if (st != g->want || atomic_load(&f.status) != g->want)
			atomic_fetch_add(&g->bad, 1);
		if (iol_opf_op(w.opf) != IOL_OP_WRITE ||
		    w.opf.bits != IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH | IOL_FUA).bits)
			atomic_fetch_add(&g->bad, 1); /* the caller's opf is given back */
		iol_req_release(&w);
		iol_req_release(&f);
	}
	return NULL;
}

static uint64_t gate_run(struct t_dev *td, int want, unsigned char *bufs)
{
	struct gate_thr g[GT_THREADS];
	pthread_t th[GT_THREADS];
	struct iol_counters c0, c1;
	int bad = 0;

	iol_dev_counters(td->dev, &c0);
	for (unsigned i = 0; i < GT_THREADS; i++) {
		g[i] = (struct gate_thr){ .dev = td->dev,
					  .buf = bufs + i * 4096,
					  .idx = i,
					  .want = want };
		cr_assert_eq(pthread_create(&th[i], NULL, gate_main, &g[i]), 0);
	}
	for (unsigned i = 0; i < GT_THREADS; i++) {
		pthread_join(th[i], NULL);
		bad += atomic_load(&g[i].bad);
	}
	iol_dev_counters(td->dev, &c1);
	cr_assert_eq(bad, 0, "%d requests did not end with %d", bad, want);
	cr_assert_eq(c1.flushes - c0.flushes, 2 * GT_THREADS * GT_ROUNDS);
	cr_assert_eq(c1.preflushes - c0.preflushes, GT_THREADS * GT_ROUNDS);
	return c1.dev_flushes - c0.dev_flushes;
}

/*
 * Many threads flushing at once.  Every request ends once with the right status and the
 * caller's opf.  Where the backend gates flushes (the descriptor backends), concurrent
 * requests share flushes (fewer device flushes than asked for), and the kernel merges
 * none of the gate's flushes: the disk performs at least as many as dev_flushes counts
 * (more only from other processes).  Then a persistent flush fault: every request fails
 * with it, and no PREFLUSH write reaches the device.
 */
Test(conformance, flush_gate_concurrent, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *bufs;
	/* Per round and thread: two flush requests, a PREFLUSH and a FUA. */
	uint64_t asked = GT_THREADS * GT_ROUNDS * 4u, ours;
	long long d0, d1;

	t_dev_open(&td, NULL);
	bufs = t_buf(&td, GT_THREADS * 4096);
	for (unsigned i = 0; i < GT_THREADS; i++)
		t_fill(bufs + i * 4096, 4096, i * 4096, 50 + i);
	d0 = td.sim ? -1 : disk_flushes(iol_dev_fd(td.dev));
	ours = gate_run(&td, 0, bufs);
	d1 = td.sim ? -1 : disk_flushes(iol_dev_fd(td.dev));
	cr_log_info("%s: %llu device flushes for %llu asked; the disk did %lld", t_backend(),
		    (unsigned long long)ours, (unsigned long long)asked, d1 - d0);
	if (td.geom->fua == 1)
		asked -= GT_THREADS * GT_ROUNDS;
	cr_assert_leq(ours, asked, "device flushes %llu > %llu asked for", (unsigned long long)ours,
		      (unsigned long long)asked);
	if (!td.sim) {
		cr_assert_lt(ours, asked, "%llu device flushes for %llu asked: nothing shared",
			     (unsigned long long)ours, (unsigned long long)asked);
		if (d0 >= 0 && d1 >= 0 && td.geom->volatile_cache == 1)
			cr_assert_geq((unsigned long long)(d1 - d0), ours,
				      "the disk did %lld flushes, fewer than the %llu counted: "
				      "the kernel merged some",
				      d1 - d0, (unsigned long long)ours);
		else
			cr_log_warn("no disk flush counter with a volatile cache here: the "
				    "kernel's merging is not checked");
	}
	for (unsigned i = 0; i < GT_THREADS; i++)
		read_expect(td.dev, i * 4096, 4096, 50 + i, "gated writes");

	if (!td.sim) {
		struct iol_fault f = { .op = IOL_OP_FLUSH,
				       .nth = 1,
				       .persistent = true,
				       .err = -ENOSPC };

		for (unsigned i = 0; i < GT_THREADS; i++)
			t_fill(bufs + i * 4096, 4096, i * 4096, 70 + i);
		cr_assert_eq(iol_dev_fault_add(td.dev, &f), 0);
		gate_run(&td, -ENOSPC, bufs);
		iol_dev_fault_clear(td.dev);
		for (unsigned i = 0; i < GT_THREADS; i++)
			read_expect(td.dev, i * 4096, 4096, 50 + i,
				    "a PREFLUSH write whose flush failed was written");
	}
	free(bufs);
	t_dev_close(&td);
}

/* ---- error propagation ---- */

Test(conformance, fault_to_status, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct iol_counters c0, c1;
	unsigned char *buf;
	struct iol_sim_fault f = { 0 };
	unsigned nr = 0;
	int err;

	if (!t_backend_is_sim())
		cr_skip_test("faults are injected only on sim in this suite (backend %s)",
			     t_backend());
	t_dev_open(&td, NULL);
	buf = t_buf(&td, 4 * MiB);
	t_fill(buf, 4 * MiB, 0, 95);

	f.op = IOL_OP_WRITE;
	f.nth = 1;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	iol_dev_counters(td.dev, &c0);
	err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL);
	cr_assert_eq(err, -EIO, "write fault: status %d", err);
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.errors - c0.errors, 1);
	/* Once only: the next write succeeds. */
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);

	f.op = IOL_OP_READ;
	f.err = -ENODATA;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	err = t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL);
	cr_assert_eq(err, -ENODATA, "read fault with a chosen errno: status %d", err);

	f.op = IOL_OP_FLUSH;
	f.err = 0;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	err = t_flush(td.dev);
	cr_assert_eq(err, -EIO, "flush fault: status %d", err);

	/* A fault in the 3rd piece of a chained 4 MiB write reaches iol_rw_wait's status. */
	f.op = IOL_OP_WRITE;
	f.nth = 3;
	cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
	err = iol_rw_wait(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4 * MiB, &nr);
	cr_assert_gt(nr, 3);
	cr_assert_eq(err, -EIO, "fault in piece 3 of %u: iol_rw_wait returned %d", nr, err);

	/* And an asynchronous end_io sees it too. */
	{
		struct count_ctx cc = { 0 };
		struct iol_req req;

		f.op = IOL_OP_READ;
		f.nth = 1;
		cr_assert_eq(iol_sim_fault_add(td.dev, &f), 0);
		cr_assert_eq(iol_req_init(&req, td.dev, 1, IOL_OPF(IOL_OP_READ, 0)), 0);
		req.off = 0;
		iol_req_add(&req, buf, 4096);
		req.end_io = count_end;
		req.priv = &cc;
		cr_assert_eq(iol_submit(&req), 0);
		cr_assert(t_wait_uint(&cc.calls, 1, 10000));
		cr_assert_eq(atomic_load(&cc.last_status), -EIO);
		iol_req_release(&req);
	}
	free(buf);
	t_dev_close(&td);
}

/* The real backends' fault plan (iol_dev_fault_add): psync fails the syscall, uring and
 * aio the completion; either way the status is what the plan says, once or for good,
 * counted per op type, and a PREFLUSH write's flush counts as a flush. */
Test(conformance, real_fault_plan, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	unsigned char *buf;
	struct iol_fault f = { 0 };
	int err;

	t_dev_open(&td, NULL);
	buf = t_buf(&td, 64 * 1024);
	t_fill(buf, 64 * 1024, 0, 17);
	f.op = IOL_OP_WRITE;
	f.nth = 1;
	if (t_backend_is_sim()) {
		cr_assert_eq(iol_dev_fault_add(td.dev, &f), -EINVAL, "sim has its own plan");
		free(buf);
		t_dev_close(&td);
		return;
	}
	f.nth = 2;
	cr_assert_eq(iol_dev_fault_add(td.dev, &f), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);
	err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 4096, buf, 4096, 0, NULL);
	cr_assert_eq(err, -EIO, "2nd write: status %d", err);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 8192, buf, 4096, 0, NULL), 0,
		     "a one-shot fault fails one op only");
	iol_dev_fault_clear(td.dev);

	f = (struct iol_fault){ .op = IOL_OP_FLUSH, .nth = 1, .persistent = true, .err = -ENOSPC };
	cr_assert_eq(iol_dev_fault_add(td.dev, &f), 0);
	cr_assert_eq(t_flush(td.dev), -ENOSPC);
	cr_assert_eq(t_flush(td.dev), -ENOSPC, "persistent");
	err = t_io(td.dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH), 0, buf, 4096, 0, NULL);
	cr_assert_eq(err, -ENOSPC, "a PREFLUSH write's flush fails it: %d", err);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0,
		     "plain writes are not flushes");
	iol_dev_fault_clear(td.dev);
	cr_assert_eq(t_flush(td.dev), 0, "cleared");

	f = (struct iol_fault){ .op = IOL_OP_READ, .nth = 1 };
	cr_assert_eq(iol_dev_fault_add(td.dev, &f), 0);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), -EIO);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), 0);
	f.nth = 0;
	cr_assert_eq(iol_dev_fault_add(td.dev, &f), -EINVAL);
	free(buf);
	t_dev_close(&td);
}

/* ---- misaligned and out-of-range requests ---- */

static int submit_one(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len,
		      struct count_ctx *cc)
{
	struct iol_req req;
	int err;

	cr_assert_eq(iol_req_init(&req, dev, 1, opf), 0);
	req.off = off;
	if (len != (size_t)-1)
		iol_req_add(&req, buf, len);
	req.end_io = count_end;
	req.priv = cc;
	err = iol_submit(&req);
	if (!err) {
		/* Accepted (a test failure follows): let it finish before req goes away. */
		t_wait_uint(&cc->calls, atomic_load(&cc->calls) + 1, 10000);
	}
	iol_req_release(&req);
	return err;
}

Test(conformance, misaligned, .timeout = T_TIMEOUT)
{
	struct t_dev td;
	struct count_ctx cc = { 0 };
	unsigned char *buf;
	uint32_t ma, oa;
	uint64_t size;
	const iol_opf_t ops[] = { IOL_OPF(IOL_OP_READ, 0), IOL_OPF(IOL_OP_WRITE, 0),
				  IOL_OPF(IOL_OP_WRITE, IOL_FUA) };

	t_dev_open(&td, NULL);
	ma = td.geom->dio_mem_align;
	oa = td.geom->dio_off_align;
	size = td.geom->size_bytes;
	buf = t_buf(&td, 4 * 65536);
	memset(buf, 0, 4 * 65536);

	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		const char *what = k == 0 ? "read" : k == 1 ? "write" : "FUA write";
		int err;

		if (ma > 1) {
			err = submit_one(td.dev, ops[k], 0, buf + 1, oa, &cc);
			cr_assert_eq(err, -EINVAL, "%s: buffer misaligned by 1: %d", what, err);
			err = submit_one(td.dev, ops[k], 0, buf + ma / 2, oa, &cc);
			cr_assert_eq(err, -EINVAL, "%s: buffer misaligned by %u: %d", what, ma / 2,
				     err);
		}
		if (oa > 1) {
			uint64_t bad_off = oa > 512 ? 512 : 1;

			err = submit_one(td.dev, ops[k], bad_off, buf, oa, &cc);
			cr_assert_eq(err, -EINVAL, "%s: offset %llu: %d", what,
				     (unsigned long long)bad_off, err);
			err = submit_one(td.dev, ops[k], 4096 + oa / 2, buf, oa, &cc);
			cr_assert_eq(err, -EINVAL, "%s: offset 4096+%u: %d", what, oa / 2, err);
			err = submit_one(td.dev, ops[k], 0, buf, oa / 2, &cc);
			cr_assert_eq(err, -EINVAL, "%s: length %u: %d", what, oa / 2, err);
			err = submit_one(td.dev, ops[k], 0, buf, oa + oa / 2, &cc);
			cr_assert_eq(err, -EINVAL, "%s: length %u: %d", what, oa + oa / 2, err);
		}
		err = submit_one(td.dev, ops[k], 0, buf, (size_t)-1, &cc);
		cr_assert_eq(err, -EINVAL, "%s without segments: %d", what, err);
		err = submit_one(td.dev, ops[k], 0, buf, 0, &cc);
		cr_assert_eq(err, -EINVAL, "%s with a zero-length segment: %d", what, err);
		err = submit_one(td.dev, ops[k], size - oa, buf, 2 * (size_t)oa, &cc);
		cr_assert_eq(err, -EINVAL, "%s crossing the device end: %d", what, err);
		err = submit_one(td.dev, ops[k], size, buf, oa, &cc);
		cr_assert_eq(err, -EINVAL, "%s at the device end: %d", what, err);
		err = submit_one(td.dev, ops[k], UINT64_MAX - oa + 1, buf, oa, &cc);
		cr_assert_eq(err, -EINVAL, "%s at offset 2^64-%u: %d", what, oa, err);
	}
	/* iol_rw_* reject the same things before submitting anything. */
	if (ma > 1)
		cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf + 1, 65536, NULL),
			     -EINVAL);
	if (oa > 1)
		cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_READ, 0), oa / 2, buf, 65536, NULL),
			     -EINVAL);
	cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 0, NULL), -EINVAL);
	cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_FLUSH, 0), 0, buf, 4096, NULL), -EINVAL);
	cr_assert_eq(iol_rw_wait(td.dev, IOL_OPF(IOL_OP_READ, 0), size - 4096, buf, 65536, NULL),
		     -EINVAL);
	/* The device still works, and no rejected request's end_io ever ran (close waits
	 * for anything in flight). */
	t_fill(buf, 4096, 0, 99);
	cr_assert_eq(t_io(td.dev, IOL_OPF(IOL_OP_WRITE, 0), 0, buf, 4096, 0, NULL), 0);
	read_expect(td.dev, 0, 4096, 99, "after rejected requests");
	free(buf);
	t_dev_close(&td);
	cr_assert_eq(atomic_load(&cc.calls), 0, "end_io ran %u times for rejected requests",
		     atomic_load(&cc.calls));
}

/* ---- concurrency: 4 threads x 1000 requests ---- */

enum {
	NTHREADS = 4,
	NREQS = 1000,
	RD_BLOCKS = 256
};

struct thr_ctx {
	struct iol_dev *dev;
	int id;
	uint64_t wbase;      /* this thread's write region */
	unsigned char *bufs; /* NREQS pages */
	struct iol_req *reqs;
	pthread_barrier_t *start;
	atomic_uint done;
	atomic_uint bad_status, bad_data, bad_bytes;
	atomic_uint twice; /* a request completed more than once */
	atomic_uchar *seen;
	int submit_err;
	unsigned submit_fail_at;
};

static const uint64_t rd_base = 0; /* shared, pre-written read region */
#define RD_SEED 123

static uint64_t rd_off(unsigned i)
{
	return rd_base + (uint64_t)((i * 37u) % RD_BLOCKS) * 4096;
}

static void thr_end(struct iol_req *req)
{
	struct thr_ctx *t = req->priv;
	unsigned i = (unsigned)(req - t->reqs);

	if (atomic_exchange(&t->seen[i], 1))
		atomic_fetch_add(&t->twice, 1);
	if (atomic_load(&req->status))
		atomic_fetch_add(&t->bad_status, 1);
	else if (req->bytes != 4096)
		atomic_fetch_add(&t->bad_bytes, 1);
	else if (iol_opf_op(req->opf) == IOL_OP_READ &&
		 t_check(t->bufs + (size_t)i * 4096, 4096, rd_off(i), RD_SEED) != -1)
		atomic_fetch_add(&t->bad_data, 1);
	atomic_fetch_add(&t->done, 1);
}

static void *thr_main(void *arg)
{
	struct thr_ctx *t = arg;

	pthread_barrier_wait(t->start);
	for (unsigned i = 0; i < NREQS; i++) {
		struct iol_req *req = &t->reqs[i];
		unsigned char *b = t->bufs + (size_t)i * 4096;
		bool rd = i & 1;
		int err;

		err = iol_req_init(req, t->dev, 1, IOL_OPF(rd ? IOL_OP_READ : IOL_OP_WRITE, 0));
		if (!err) {
			req->off = rd ? rd_off(i) : t->wbase + (uint64_t)(i / 2) * 4096;
			if (!rd)
				t_fill(b, 4096, req->off, 200 + (uint64_t)t->id);
			iol_req_add(req, b, 4096);
			req->end_io = thr_end;
			req->priv = t;
			err = iol_submit(req);
		}
		if (err) {
			t->submit_err = err;
			t->submit_fail_at = i;
			break;
		}
	}
	return NULL;
}

Test(conformance, threads_4x1000, .timeout = T_TIMEOUT)
{
	struct thr_ctx ctx[NTHREADS];
	pthread_t thr[NTHREADS];
	pthread_barrier_t start;
	struct iol_counters c0, c1;
	struct t_dev td;

	t_dev_open(&td, NULL);
	write_pattern(td.dev, rd_base, RD_BLOCKS * 4096, RD_SEED);
	iol_dev_counters(td.dev, &c0);
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (int t = 0; t < NTHREADS; t++) {
		memset(&ctx[t], 0, sizeof(ctx[t]));
		ctx[t].dev = td.dev;
		ctx[t].id = t;
		ctx[t].wbase = 2 * MiB + (uint64_t)t * 2 * MiB;
		ctx[t].bufs = t_buf(&td, (size_t)NREQS * 4096);
		ctx[t].reqs = calloc(NREQS, sizeof(struct iol_req));
		ctx[t].seen = calloc(NREQS, sizeof(atomic_uchar));
		ctx[t].start = &start;
		cr_assert(ctx[t].reqs && ctx[t].seen);
	}
	for (int t = 0; t < NTHREADS; t++)
		cr_assert_eq(pthread_create(&thr[t], NULL, thr_main, &ctx[t]), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(thr[t], NULL);
	for (int t = 0; t < NTHREADS; t++) {
		cr_assert_eq(ctx[t].submit_err, 0, "thread %d: submit %u failed: %s", t,
			     ctx[t].submit_fail_at, strerror(-ctx[t].submit_err));
		cr_assert(t_wait_uint(&ctx[t].done, NREQS, 40000),
			  "thread %d: %u of %d requests completed", t, atomic_load(&ctx[t].done),
			  NREQS);
	}
	t_sleep_ms(20);
	for (int t = 0; t < NTHREADS; t++) {
		cr_assert_eq(atomic_load(&ctx[t].done), NREQS, "thread %d: %u completions", t,
			     atomic_load(&ctx[t].done));
		cr_assert_eq(atomic_load(&ctx[t].twice), 0, "thread %d: a request completed twice",
			     t);
		cr_assert_eq(atomic_load(&ctx[t].bad_status), 0, "thread %d: %u failed", t,
			     atomic_load(&ctx[t].bad_status));
		cr_assert_eq(atomic_load(&ctx[t].bad_bytes), 0, "thread %d: short requests", t);
		cr_assert_eq(atomic_load(&ctx[t].bad_data), 0, "thread %d: %u reads got wrong data",
			     t, atomic_load(&ctx[t].bad_data));
	}
	iol_dev_counters(td.dev, &c1);
	cr_assert_eq(c1.reads - c0.reads, NTHREADS * NREQS / 2);
	cr_assert_eq(c1.writes - c0.writes, NTHREADS * NREQS / 2);
	cr_assert_eq(c1.errors, c0.errors);
	for (int t = 0; t < NTHREADS; t++)
		read_expect(td.dev, ctx[t].wbase, (size_t)NREQS / 2 * 4096, 200 + (uint64_t)t,
			    "a thread's write region");
	for (int t = 0; t < NTHREADS; t++) {
		for (unsigned i = 0; i < NREQS; i++)
			iol_req_release(&ctx[t].reqs[i]);
		free(ctx[t].reqs);
		free(ctx[t].seen);
		free(ctx[t].bufs);
	}
	pthread_barrier_destroy(&start);
	t_dev_close(&td);
}

/* ---- close and read-only ---- */

Test(conformance, close_waits_for_inflight, .timeout = T_TIMEOUT)
{
	enum {
		N = 64
	};
	struct iol_req req[N];
	struct count_ctx cc = { 0 };
	unsigned char *buf;
	struct t_dev td;

	t_dev_open(&td, NULL);
	buf = t_buf(&td, N * 65536);
	memset(buf, 0x3c, N * 65536);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(iol_req_init(&req[i], td.dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		req[i].off = (uint64_t)i * 65536;
		iol_req_add(&req[i], buf + (size_t)i * 65536, 65536);
		req[i].end_io = count_end;
		req[i].priv = &cc;
		cr_assert_eq(iol_submit(&req[i]), 0);
	}
	t_dev_close(&td);
	cr_assert_eq(atomic_load(&cc.calls), N, "iol_dev_close returned with %u of %d completed",
		     atomic_load(&cc.calls), N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(atomic_load(&req[i].status), 0);
		iol_req_release(&req[i]);
	}
	free(buf);
}

Test(conformance, read_only, .timeout = T_TIMEOUT)
{
	struct iol_dev_opts o = { .size = sizeof(o), .backend = t_backend(), .read_only = true };
	struct iol_sim_opts so = { .size = sizeof(so), .dev_bytes = 1 * MiB };
	char path[PATH_MAX], msg[256] = "";
	struct iol_dev *dev;
	struct iol_req req;
	unsigned char *buf;
	struct count_ctx cc = { 0 };
	int err;

	o.errmsg = msg;
	o.errmsg_len = sizeof(msg);
	if (t_backend_is_sim()) {
		o.sim = &so;
		err = iol_dev_open(NULL, &o, &dev);
	} else {
		t_scratch_path(path, sizeof(path), "ro");
		cr_assert_eq(t_make_file(path, 1 * MiB), 0);
		err = iol_dev_open(path, &o, &dev);
		unlink(path);
	}
	cr_assert_eq(err, 0, "read-only open: %s (%s)", strerror(-err), msg);
	buf = iol_buf_alloc(dev, 4096);
	cr_assert_not_null(buf);
	memset(buf, 0x77, 4096);
	cr_assert_eq(t_io(dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL), 0);
	cr_assert(t_all(buf, 4096, 0), "read-only device: fresh device not zero");
	cr_assert_eq(iol_req_init(&req, dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
	req.off = 0;
	iol_req_add(&req, buf, 4096);
	req.end_io = count_end;
	req.priv = &cc;
	err = iol_submit(&req);
	cr_assert_eq(err, -EBADF, "write on a read-only device: iol_submit returned %d", err);
	iol_req_release(&req);
	cr_assert_eq(iol_dev_close(dev), 0);
	cr_assert_eq(atomic_load(&cc.calls), 0);
	free(buf);
}
