/*
 * gate.c - the flush gate (iolayer/flush.c) on the sim disk: teardown with requests in
 * flight (FG6), failed generations, inline generations (the sim's inline_run), native
 * FUA behind the gate (gate_keep_fua), and the sim's fail_drops flushes.
 *
 * A hang must fail, not block: every close runs on a helper thread that the test joins
 * with a generous bound (GT_CLOSE_BOUND_S); the bound is a liveness limit, never a
 * timing assertion.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GT_CLOSE_BOUND_S 20

struct gt_count {
	atomic_uint calls;
	atomic_uint bad; /* completions whose status was not the expected one */
	int want;
};

static void gt_end(struct iol_req *req)
{
	struct gt_count *c = req->priv;

	if (atomic_load(&req->status) != c->want)
		atomic_fetch_add(&c->bad, 1);
	atomic_fetch_add(&c->calls, 1);
}

struct gt_opts {
	bool hold;
	bool inline_run;
	bool keep_fua;
	bool fail_drops;
	uint64_t seed;
	enum iol_sim_latency latency;
};

static struct iol_dev *gt_open(const struct gt_opts *g)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = 1u << 20,
				   .seed = g->seed,
				   .latency = g->latency,
				   .hold = g->hold,
				   .inline_run = g->inline_run,
				   .flush_fail_drops = g->fail_drops };
	struct iol_dev_opts o = { .size = sizeof(o),
				  .backend = "sim",
				  .sim = &so,
				  .flush_gate = true,
				  .gate_keep_fua = g->keep_fua };
	struct iol_dev *dev = NULL;
	char msg[256] = "";
	int err;

	o.errmsg = msg;
	o.errmsg_len = sizeof(msg);
	err = iol_dev_open(NULL, &o, &dev);
	cr_assert_eq(err, 0, "iol_dev_open(sim, flush_gate): %s (%s)", strerror(-err), msg);
	return dev;
}

static void *gt_close_main(void *arg)
{
	iol_dev_close(arg);
	return NULL;
}

/* iol_dev_close(@dev) on a helper thread, failing the test if it does not return within
 * the bound (a hang) instead of blocking the run. */
static void gt_close_bounded(struct iol_dev *dev, unsigned round)
{
	struct timespec ts;
	pthread_t th;
	int err;

	cr_assert_eq(pthread_create(&th, NULL, gt_close_main, dev), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += GT_CLOSE_BOUND_S;
	err = pthread_timedjoin_np(th, NULL, &ts);
	cr_assert_eq(err, 0, "round %u: iol_dev_close did not return within %d s (hang)", round,
		     GT_CLOSE_BOUND_S);
}

/*
 * Item 3 of issue 27 (FG6): open a gated sim, put FUA, PREFLUSH and PREFLUSH|FUA writes
 * and flushes in flight, and close without waiting for any of them.  Every request must
 * complete once, successfully, before iol_dev_close returns, and close must neither
 * crash (a flush submitted to a freed sim) nor hang (a flush submitted to a sim whose
 * thread has stopped, or held for a delivery no one makes).  Rounds alternate the sim's
 * delivery: its own thread, and hold (close delivers what is left).
 */
static void close_rounds(bool inline_run, bool keep_fua)
{
	enum {
		ROUNDS = 400,
		NW = 8,
		NF = 2
	};

	for (unsigned r = 0; r < ROUNDS; r++) {
		struct gt_opts g = { .hold = r & 1,
				     .inline_run = inline_run,
				     .keep_fua = keep_fua,
				     .seed = r };
		struct iol_dev *dev = gt_open(&g);
		struct gt_count cnt = { .want = 0 };
		struct iol_req w[NW], f[NF];
		unsigned char *buf = iol_buf_alloc(dev, NW * 4096);

		cr_assert_not_null(buf);
		memset(buf, (int)r, NW * 4096);
		for (unsigned i = 0; i < NW; i++) {
			uint32_t fl = i % 4 == 3 ? IOL_PREFLUSH | IOL_FUA :
				      i % 4 == 2 ? IOL_PREFLUSH :
						   IOL_FUA;

			cr_assert_eq(iol_req_init(&w[i], dev, 1, IOL_OPF(IOL_OP_WRITE, fl)), 0);
			w[i].off = (uint64_t)i * 4096;
			iol_req_add(&w[i], buf + i * 4096, 4096);
			w[i].end_io = gt_end;
			w[i].priv = &cnt;
			cr_assert_eq(iol_submit(&w[i]), 0);
			if (i % 4 == 1) {
				struct iol_req *q = &f[i / 4];

				cr_assert_eq(iol_req_init(q, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
				q->end_io = gt_end;
				q->priv = &cnt;
				cr_assert_eq(iol_submit(q), 0);
			}
		}
		gt_close_bounded(dev, r);
		cr_assert_eq(atomic_load(&cnt.calls), NW + NF,
			     "round %u: close returned with %u of %d requests completed", r,
			     atomic_load(&cnt.calls), NW + NF);
		cr_assert_eq(atomic_load(&cnt.bad), 0, "round %u: %u requests failed", r,
			     atomic_load(&cnt.bad));
		for (unsigned i = 0; i < NW; i++)
			iol_req_release(&w[i]);
		for (unsigned i = 0; i < NF; i++)
			iol_req_release(&f[i]);
		free(buf);
	}
}

Test(gate, close_with_requests_in_flight, .timeout = 300)
{
	close_rounds(false, false);
}

/* The same with the sim's ->run (inline generations, blocking flusher generations). */
Test(gate, close_with_requests_in_flight_inline_run, .timeout = 300)
{
	close_rounds(true, false);
}

/* The same with native FUA behind the gate. */
Test(gate, close_with_requests_in_flight_keep_fua, .timeout = 300)
{
	close_rounds(false, true);
}

static int gt_wait_io(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len)
{
	struct iol_req req;
	int err = iol_req_init(&req, dev, buf ? 1 : 0, opf);

	if (err)
		return err;
	req.off = off;
	if (buf)
		iol_req_add(&req, buf, len);
	err = iol_submit_wait(&req);
	iol_req_release(&req);
	return err;
}

struct gt_waiter {
	struct iol_dev *dev;
	iol_opf_t opf;
	uint64_t off;
	void *buf;
	size_t len;
	atomic_int done; /* 0 running, else result - 1000 */
	pthread_t th;
};

static void *gt_waiter_main(void *arg)
{
	struct gt_waiter *w = arg;

	atomic_store(&w->done, gt_wait_io(w->dev, w->opf, w->off, w->buf, w->len) + 1000);
	return NULL;
}

static void gt_waiter_start(struct gt_waiter *w)
{
	atomic_init(&w->done, 0);
	cr_assert_eq(pthread_create(&w->th, NULL, gt_waiter_main, w), 0);
}

/* Join @w (bounded) and return its iol_submit_wait result. */
static int gt_waiter_join(struct gt_waiter *w)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += GT_CLOSE_BOUND_S;
	cr_assert_eq(pthread_timedjoin_np(w->th, NULL, &ts), 0, "iol_submit_wait never returned");
	return atomic_load(&w->done) - 1000;
}

/*
 * inline_run: a lone iol_submit_wait flush on a gated sim is an inline generation (FG4)
 * on the caller's thread, held in the sim's flight list until delivered, so a power cut
 * can land inside it: the write it covers is unstable until the delivery, durable
 * after.  Without inline_run the same flush rides a flusher's generation.
 */
Test(gate, inline_generation, .timeout = T_TIMEOUT)
{
	for (int run = 0; run < 2; run++) {
		struct gt_opts g = { .hold = true, .inline_run = run, .seed = 5 };
		struct iol_dev *dev = gt_open(&g);
		unsigned char *buf = iol_buf_alloc(dev, 4096), *m = iol_buf_alloc(dev, 4096);
		struct gt_waiter w = { .dev = dev, .opf = IOL_OPF(IOL_OP_FLUSH, 0) };
		struct iol_counters c;
		struct iol_req wr;
		uint64_t sec[8];

		cr_assert(buf && m);
		t_fill(buf, 4096, 8192, 77);
		cr_assert_eq(iol_req_init(&wr, dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		wr.off = 8192;
		iol_req_add(&wr, buf, 4096);
		cr_assert_eq(iol_submit(&wr), 0);
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_FIFO), 1);
		cr_assert_eq(atomic_load(&wr.status), 0);
		iol_req_release(&wr);

		gt_waiter_start(&w);
		cr_assert(t_wait_pending(dev, 1, GT_CLOSE_BOUND_S * 1000),
			  "no flush reached the sim");
		cr_assert_eq(atomic_load(&w.done), 0, "the flush returned before its delivery");
		cr_assert_eq(iol_sim_unstable(dev, sec, 8), 1,
			     "the write is not unstable mid-flush");
		cr_assert_eq(sec[0], 2);
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_FIFO), 1);
		cr_assert_eq(gt_waiter_join(&w), 0);
		cr_assert_eq(iol_sim_unstable(dev, sec, 8), 0);
		cr_assert_eq(iol_sim_media(dev, 8192, m, 4096), 0);
		cr_assert_eq(t_check(m, 4096, 8192, 77), -1,
			     "the flushed write is not on the media");
		iol_dev_counters(dev, &c);
		cr_assert_eq(c.dev_flushes, 1);
		cr_assert_eq(c.gate_inline, (uint64_t)run,
			     "inline generations: %llu with inline_run %d",
			     (unsigned long long)c.gate_inline, run);
		free(buf);
		free(m);
		gt_close_bounded(dev, 0);
	}
}

/* Count end_io calls and remember each status by request. */
static void gt_status_end(struct iol_req *req)
{
	atomic_fetch_add((atomic_uint *)req->priv, 1);
}

/*
 * A failed generation, merged: a fault plan entry for FLUSH on a gated sim counts the
 * gate's generations (the device's flushes), so it fails a chosen one; every rider of
 * that generation (a flush and a PREFLUSH write merged into it) gets the error, the
 * PREFLUSH write is never written, the generation before it is unaffected.
 */
Test(gate, failed_merged_generation, .timeout = T_TIMEOUT)
{
	for (int run = 0; run < 2; run++) {
		struct gt_opts g = { .hold = true, .inline_run = run, .seed = 6 };
		struct iol_dev *dev = gt_open(&g);
		struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 2 };
		unsigned char *buf = iol_buf_alloc(dev, 4096), *m = iol_buf_alloc(dev, 4096);
		struct iol_req f1, f2, p;
		struct iol_counters c;
		atomic_uint calls = 0;

		cr_assert(buf && m);
		memset(buf, 0x5a, 4096);
		cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
		cr_assert_eq(iol_req_init(&f1, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
		cr_assert_eq(iol_req_init(&f2, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
		cr_assert_eq(iol_req_init(&p, dev, 1, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH)), 0);
		p.off = 4096;
		iol_req_add(&p, buf, 4096);
		f1.end_io = f2.end_io = p.end_io = gt_status_end;
		f1.priv = f2.priv = p.priv = &calls;
		cr_assert_eq(iol_submit(&f1), 0);
		cr_assert(t_wait_pending(dev, 1, GT_CLOSE_BOUND_S * 1000));
		cr_assert_eq(iol_submit(&f2), 0); /* both wait for the next generation */
		cr_assert_eq(iol_submit(&p), 0);
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_FIFO), 1);
		cr_assert(t_wait_uint(&calls, 1, GT_CLOSE_BOUND_S * 1000));
		cr_assert_eq(atomic_load(&f1.status), 0);
		cr_assert(t_wait_pending(dev, 1, GT_CLOSE_BOUND_S * 1000), "no merged generation");
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_FIFO), 1);
		cr_assert(t_wait_uint(&calls, 3, GT_CLOSE_BOUND_S * 1000));
		cr_assert_eq(atomic_load(&f2.status), -EIO);
		cr_assert_eq(atomic_load(&p.status), -EIO);
		cr_assert_eq(iol_sim_pending(dev), 0, "the PREFLUSH write went to the disk");
		cr_assert_eq(iol_sim_unstable(dev, NULL, 0), 0);
		cr_assert_eq(iol_sim_media(dev, 4096, m, 4096), 0);
		cr_assert(t_all(m, 4096, 0), "the PREFLUSH write whose flush failed was written");
		iol_dev_counters(dev, &c);
		cr_assert_eq(c.dev_flushes, 2);
		cr_assert_eq(c.gate_failed, 1);
		cr_assert_eq(c.errors, 3); /* the generation and its two riders */
		iol_req_release(&f1);
		iol_req_release(&f2);
		iol_req_release(&p);
		free(buf);
		free(m);
		gt_close_bounded(dev, 0);
	}
}

/*
 * gate_keep_fua: behind the gate the sim keeps FUA native, so a FUA write is the disk's
 * own (one request, no gated flush, durable at its completion); without it the gate
 * carries FUA out as write + gated flush.  PREFLUSH goes through the gate either way.
 */
Test(gate, keep_native_fua, .timeout = T_TIMEOUT)
{
	for (int keep = 0; keep < 2; keep++) {
		struct gt_opts g = { .keep_fua = keep, .seed = 7 };
		struct iol_dev *dev = gt_open(&g);
		unsigned char *buf = iol_buf_alloc(dev, 4096), *m = iol_buf_alloc(dev, 4096);
		struct iol_sim_event ev[16];
		struct iol_counters c;
		size_t n, fua_subs = 0, flushes = 0;

		cr_assert(buf && m);
		t_fill(buf, 4096, 0, 90 + keep);
		cr_assert_eq(gt_wait_io(dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 0, buf, 4096), 0);
		cr_assert_eq(iol_sim_media(dev, 0, m, 4096), 0);
		cr_assert_eq(t_check(m, 4096, 0, 90 + keep), -1,
			     "a completed FUA write is not durable");
		n = iol_sim_trace_copy(dev, 0, ev, 16);
		for (size_t i = 0; i < n; i++) {
			if (ev[i].type != IOL_SIM_EV_SUBMIT)
				continue;
			if ((ev[i].opf & IOL_OP_MASK) == IOL_OP_FLUSH)
				flushes++;
			else if (ev[i].opf & IOL_FUA)
				fua_subs++;
		}
		iol_dev_counters(dev, &c);
		cr_assert_eq(fua_subs, (size_t)keep, "FUA writes the sim saw: %zu", fua_subs);
		cr_assert_eq(flushes, (size_t)!keep, "flushes the sim saw: %zu", flushes);
		cr_assert_eq(c.dev_flushes, (uint64_t)!keep);
		cr_assert_eq(gt_wait_io(dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH), 4096, buf, 4096),
			     0);
		iol_dev_counters(dev, &c);
		cr_assert_eq(c.dev_flushes, (uint64_t)!keep + 1, "PREFLUSH is gated either way");
		free(buf);
		free(m);
		gt_close_bounded(dev, 0);
	}
}

/* A flush on a held disk: submitted, delivered FIFO until done; its status. */
static int t_flush_held(struct iol_dev *dev)
{
	atomic_uint calls = 0;
	struct iol_req f;
	int err;

	cr_assert_eq(iol_req_init(&f, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
	f.end_io = gt_status_end;
	f.priv = &calls;
	cr_assert_eq(iol_submit(&f), 0);
	while (!atomic_load(&calls))
		cr_assert(iol_sim_deliver(dev, 1, IOL_SIM_FIFO) == 1, "nothing to deliver");
	err = atomic_load(&f.status);
	iol_req_release(&f);
	return err;
}

/*
 * flush_fail_drops: a failed flush loses the cached writes it covered (they read as the
 * media again, a power cut cannot bring them back, a later flush does not make them
 * durable); a write completed after the flush was submitted is not covered and stays.
 * Without it the cache survives the failure and the next flush makes it durable.
 */
Test(gate, failed_flush_drops_what_it_covered, .timeout = T_TIMEOUT)
{
	for (int drops = 0; drops < 2; drops++) {
		struct iol_sim_opts so = { .size = sizeof(so),
					   .dev_bytes = 1u << 20,
					   .seed = 8,
					   .hold = true,
					   .flush_fail_drops = drops };
		struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
		struct iol_sim_fault f = { .op = IOL_OP_FLUSH, .nth = 1 };
		struct iol_dev *dev = NULL;
		unsigned char *a, *b2, *m;
		struct iol_req w, fl, w2;
		uint64_t sec[8];
		uint32_t nver[8];

		cr_assert_eq(iol_dev_open(NULL, &o, &dev), 0);
		a = iol_buf_alloc(dev, 8192);
		b2 = iol_buf_alloc(dev, 4096);
		m = iol_buf_alloc(dev, 8192);
		cr_assert(a && b2 && m);
		t_fill(a, 8192, 0, 11);
		t_fill(b2, 4096, 4096, 12);
		/* Sectors 0 and 1 cached; the failing flush covers both; sector 1 is rewritten
		 * after the flush was submitted. */
		cr_assert_eq(iol_req_init(&w, dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		iol_req_add(&w, a, 8192);
		cr_assert_eq(iol_submit(&w), 0);
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_FIFO), 1);
		cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
		cr_assert_eq(iol_req_init(&fl, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0)), 0);
		cr_assert_eq(iol_submit(&fl), 0);
		cr_assert_eq(iol_req_init(&w2, dev, 1, IOL_OPF(IOL_OP_WRITE, 0)), 0);
		w2.off = 4096;
		iol_req_add(&w2, b2, 4096);
		cr_assert_eq(iol_submit(&w2), 0);
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_LIFO), 1); /* w2 */
		cr_assert_eq(iol_sim_deliver(dev, 1, IOL_SIM_FIFO), 1); /* the flush: EIO */
		cr_assert_eq(atomic_load(&fl.status), -EIO);
		cr_assert_eq(iol_sim_unstable_versions(dev, sec, nver, 8), drops ? 1 : 2);
		if (drops) {
			/* Sector 0 is media again; sector 1 keeps w2 over media, its older
			 * (covered) version gone. */
			cr_assert_eq(sec[0], 1);
			cr_assert_eq(nver[0], 2, "versions of sector 1: %u", nver[0]);
		} else {
			cr_assert_eq(nver[1], 3, "versions of sector 1: %u", nver[1]);
		}
		/* A later successful flush. */
		cr_assert_eq(t_flush_held(dev), 0);
		cr_assert_eq(iol_sim_unstable(dev, NULL, 0), 0);
		cr_assert_eq(iol_sim_media(dev, 0, m, 8192), 0);
		if (drops)
			cr_assert(t_all(m, 4096, 0),
				  "a write the failed flush covered became durable");
		else
			cr_assert_eq(t_check(m, 4096, 0, 11), -1, "the cache did not survive");
		cr_assert_eq(t_check(m + 4096, 4096, 4096, 12), -1, "the uncovered write was lost");
		iol_req_release(&w);
		iol_req_release(&fl);
		iol_req_release(&w2);
		free(a);
		free(b2);
		free(m);
		gt_close_bounded(dev, 0);
	}
}
