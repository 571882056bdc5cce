/*
 * req.c - the iolayer's request: its set-up (iol_req_init, iol_req_add, iol_req_release),
 * chains, and its end: the references that finish a request and the count of requests
 * a device has not finished.
 *
 * Why apart from submit.c: a request is what every stage of the iolayer passes on, the
 * submission path (submit.c), the flush gate (flush.c) and the backends, and its end is
 * the same whichever stage ends it; so the stages all stand on this file, and it calls
 * none of them.
 *
 * Invariants:
 *  (RQ1) A chain funnels toward its last request: iol_req_chain(prev, next) bumps
 *       next->remaining and points prev->chain_next at next.  A request "finishes" when its
 *       own I/O and all requests chained into it are done, i.e. when remaining drops to 0;
 *       only then does its end_io run, or, if it is itself chained, does it drop a
 *       reference on its chain_next.  This is bio_chain()/bio_endio() with
 *       __bi_remaining, in the direction of XFS commit 488ca3d8d088: the request you wait
 *       on is the last one.
 *  (RQ2) status holds the first error seen in a request's own I/O or in anything chained
 *       into it (compare-and-swap from 0), so the end of a chain reports an error from
 *       anywhere in it.
 * The count of unfinished requests (dev->live) that close waits on is submit.c's IO5:
 * iol_dev_live_get when a stage accepts a request, and iol_req_finish after its end_io.
 */
#include "io_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

unsigned iol_max_segs(const struct iol_dev *dev, unsigned nr_segs)
{
	unsigned lim = dev && dev->max_segs ? dev->max_segs : IOL_MAX_SEGS_DEFAULT;

	return nr_segs < lim ? nr_segs : lim;
}

bool iol_opf_valid(iol_opf_t opf)
{
	enum iol_op op = iol_opf_op(opf);
	uint32_t flags = opf.bits & ~IOL_OP_MASK;

	if (op != IOL_OP_READ && op != IOL_OP_WRITE && op != IOL_OP_FLUSH)
		return false;
	if (flags & ~IOL_FLAG_MASK)
		return false;
	return !flags || op == IOL_OP_WRITE;
}

int iol_req_init(struct iol_req *req, struct iol_dev *dev, unsigned max_segs, iol_opf_t opf)
{
	memset(req, 0, sizeof(*req));
	if (!iol_opf_valid(opf) || max_segs > iol_max_segs(dev, max_segs))
		return -EINVAL;
	if (iol_opf_op(opf) == IOL_OP_FLUSH && max_segs)
		return -EINVAL;
	req->dev = dev;
	req->opf = opf;
	req->max_segs = max_segs;
	if (max_segs <= IOL_INLINE_SEGS) {
		req->vec = req->inline_vec;
	} else {
		req->vec = calloc(max_segs, sizeof(*req->vec));
		if (!req->vec)
			return -ENOMEM;
	}
	atomic_init(&req->status, 0);
	atomic_init(&req->remaining, 1);
	return 0;
}

void iol_req_release(struct iol_req *req)
{
	if (req->vec && req->vec != req->inline_vec)
		free(req->vec);
	req->vec = NULL;
	req->max_segs = req->nr_segs = 0;
}

int iol_req_add(struct iol_req *req, void *buf, size_t len)
{
	if (req->nr_segs >= req->max_segs)
		return -ENOSPC;
	req->vec[req->nr_segs].iov_base = buf;
	req->vec[req->nr_segs].iov_len = len;
	req->nr_segs++;
	return 0;
}

size_t iol_req_len(const struct iol_req *req)
{
	size_t len = 0;

	for (unsigned i = 0; i < req->nr_segs; i++)
		len += req->vec[i].iov_len;
	return len;
}

void iol_req_chain(struct iol_req *prev, struct iol_req *next)
{
	prev->chain_next = next;
	prev->end_io = NULL;
	atomic_fetch_add_explicit(&next->remaining, 1, memory_order_relaxed);
}

void iol_req_set_status(struct iol_req *req, int err)
{
	int zero = 0;

	if (err)
		atomic_compare_exchange_strong(&req->status, &zero, err);
}

void iol_req_put(struct iol_req *req, int err)
{
	while (req) {
		struct iol_req *next;

		iol_req_set_status(req, err);
		if (atomic_fetch_sub_explicit(&req->remaining, 1, memory_order_acq_rel) != 1)
			return;
		next = req->chain_next;
		if (!next) {
			if (req->end_io)
				req->end_io(req);
			return;
		}
		err = atomic_load(&req->status);
		req = next;
	}
}

void iol_dev_live_get(struct iol_dev *dev)
{
	atomic_fetch_add(&dev->live, 1);
}

/* One request finished (submit.c IO5); wake iol_dev_close when it was the last.  The
 * closer sets closing before it reads live (both sequentially consistent), so either it
 * sees this decrement or this sees closing, and then wakes it under live_lock. */
static void live_put(struct iol_dev *dev)
{
	if (atomic_fetch_sub(&dev->live, 1) == 1 && atomic_load(&dev->closing)) {
		pthread_mutex_lock(&dev->live_lock);
		pthread_cond_broadcast(&dev->live_cond);
		pthread_mutex_unlock(&dev->live_lock);
	}
}

void iol_req_finish(struct iol_req *req, int err)
{
	struct iol_dev *dev = req->dev; /* @req may be gone once iol_req_put returns */

	req->opf = req->gate_opf;
	if (err)
		atomic_fetch_add_explicit(&dev->cnt.errors, 1, memory_order_relaxed);
	iol_req_put(req, err);
	live_put(dev);
}
