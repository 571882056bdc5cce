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
	enum { ROUNDS = 400, NW = 8, NF = 2 };

	for (unsigned r = 0; r < ROUNDS; r++) {
		struct gt_opts g = { .hold = r & 1, .inline_run = inline_run, .keep_fua = keep_fua,
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
