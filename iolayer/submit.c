/*
 * submit.c - the iolayer's submission path and a request's completion by its backend:
 * validation, accounting, the flush stages handed to the flush gate, waiting on the
 * caller's thread, and chained multi-segment I/O over big buffers.  (The request itself,
 * its chains and its end are req.c's; the helpers iol_now_ns and iol_set_errmsg are here
 * because every backend already calls into this file.)
 *
 * Invariants:
 *  (IO1) Every request that iol_submit accepts reaches iol_req_done() exactly once, from its
 *       backend; a rejected one never reaches the backend.  So every accepted request's
 *       end_io runs exactly once, and a rejected request's never does.
 *  (IO2) A rejected request that is chained still drops its reference on chain_next with
 *       its error, so the waiter at the end cannot hang and sees the error (req.c RQ2).
 *
 *  (IO3) iol_submit_wait performs its request on the calling thread when the device may
 *       use its backend's ->run (dev->run: psync, uring, aio: plain syscalls, iol_fd_run;
 *       sim with inline_run: it waits there for the delivery); the caller blocks until
 *       the request is done either way, so nothing but the thread changes: the request
 *       is validated and counted as any other, reaches iol_req_done() exactly once (IO1),
 *       and requests chained into it still finish it from wherever they complete (RQ1),
 *       so the wait still covers the whole chain.  end_io of such a request is the
 *       waiter's own; io.h's "callbacks run on a backend thread" concerns the end_io of
 *       asynchronous requests, which never run here.  This is the one-client fast path:
 *       a force that writes its buffer and flushes with iol_submit_wait makes the same
 *       two syscalls as a raw O_DIRECT write + fdatasync, with no thread hand-off.
 *  (IO4) On a gated device (a backend with gate_flushes, or opened with flush_gate) the
 *       core carries out flushes itself, through the flush gate (flush.c, FG1-FG6): a
 *       FLUSH request rides the next flush generation, a PREFLUSH write waits for one
 *       before it goes to the backend without the flag, and a FUA write on a device
 *       without native FUA (iol_geom.fua != 1; every FUA write with flush_gate) goes out
 *       without the flag and rides a generation once written.  The backend sees the
 *       request with opf reduced to what is left for it; the caller's word is put back
 *       before end_io (iol_req_finish).  Elsewhere (sim by default) the backend carries
 *       out the flags, and dev_flushes counts one flush per FLUSH, PREFLUSH and FUA
 *       without native FUA, which is what Linux would turn them into.
 *  (IO5) Teardown waits for the requests, not for a backend: dev->live counts every
 *       request submit accepted, and every flush the gate arms, until its end_io
 *       returned (iol_req_finish; after end_io, so a callback's own submission is
 *       counted, or refused, before its request stops counting).  iol_dev_close refuses
 *       new requests, lets the backend complete on its own (->quiesce), and waits for
 *       live to reach 0 with the gate and the backend still running: a request still
 *       bouncing between them (a FUA write whose gated flush is still to come, a
 *       PREFLUSH write whose flush ran and whose write is still to go to ->submit) keeps
 *       it above 0, so nothing reaches a backend or a gate that is being torn down, on
 *       every backend alike, with or without ->run (flush.c FG6).
 *
 * Validation (before a backend sees a request): op known; PREFLUSH/FUA only on writes;
 * reads and writes have at least one segment and a non-zero length; every segment's base
 * is aligned to dio_mem_align and its length to dio_off_align; the offset is aligned to
 * dio_off_align; [off, off+len) lies inside the device; writes on a read-only device fail
 * with -EBADF.
 */
#include "io_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t iol_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void iol_set_errmsg(const struct iol_dev_opts *opts, const char *fmt, ...)
{
	va_list ap;

	if (!opts || !opts->errmsg || !opts->errmsg_len)
		return;
	va_start(ap, fmt);
	vsnprintf(opts->errmsg, opts->errmsg_len, fmt, ap);
	va_end(ap);
}

void iol_req_done(struct iol_req *req, int err, size_t bytes)
{
	struct iol_dev *dev = req->dev;
	enum iol_op op = iol_opf_op(req->opf);

	req->bytes = bytes;
	if (!err && op != IOL_OP_FLUSH && bytes != iol_req_len(req))
		err = -EIO;
	/* Injected faults (iol_dev_fault_add): psync fails the syscall itself (psync.c);
	 * the other real backends fail the op here, in the completion path. */
	if (!err && dev->ops->needs_fd && !dev->ops->faults_in_syscalls)
		err = iol_fault_check(dev, op); /* a PREFLUSH's flush is the gate's own (IO4) */
	if (!err && op == IOL_OP_READ)
		atomic_fetch_add_explicit(&dev->cnt.bytes_read, bytes, memory_order_relaxed);
	else if (!err && op == IOL_OP_WRITE)
		atomic_fetch_add_explicit(&dev->cnt.bytes_written, bytes, memory_order_relaxed);
	if (!err && req->gate_post) {
		/* FUA carried out as write + flush: the write is done, now its flush. */
		req->gate_post = false;
		iol_gate_join(req, IOL_GATE_POST, req->gate_here);
		return;
	}
	iol_req_finish(req, err);
}

static int req_validate(const struct iol_req *req)
{
	const struct iol_dev *dev = req->dev;
	const struct iol_geom *g = &dev->geom;
	enum iol_op op = iol_opf_op(req->opf);
	uint64_t len = 0;

	if (!iol_opf_valid(req->opf))
		return -EINVAL;
	if (op == IOL_OP_FLUSH)
		return req->nr_segs ? -EINVAL : 0;
	if (op == IOL_OP_WRITE && dev->read_only)
		return -EBADF;
	if (!req->nr_segs)
		return -EINVAL;
	for (unsigned i = 0; i < req->nr_segs; i++) {
		const struct iovec *v = &req->vec[i];

		if ((uintptr_t)v->iov_base % g->dio_mem_align || v->iov_len % g->dio_off_align ||
		    !v->iov_len)
			return -EINVAL;
		len += v->iov_len;
	}
	if (req->off % g->dio_off_align)
		return -EINVAL;
	if (req->off > g->size_bytes || len > g->size_bytes - req->off)
		return -EINVAL;
	return 0;
}

/* Validate, count and hand @req to its backend: to ->run on this thread if @here and the
 * device may use one (dev->run), else to ->submit. */
static int submit(struct iol_req *req, bool here)
{
	struct iol_dev *dev = req->dev;
	bool preflush, fua, fua_flush;
	enum iol_op op;
	int err;

	err = atomic_load(&dev->closing) ? -ESHUTDOWN : req_validate(req);
	if (err) {
		/* (IO2): a chained request counts as done with its error, so the chain still
		 * ends; an unchained one's end_io does not run. */
		if (req->chain_next)
			iol_req_put(req, err);
		return err;
	}
	iol_dev_live_get(dev); /* accepted (IO5) */
	op = iol_opf_op(req->opf);
	preflush = iol_opf_has(req->opf, IOL_PREFLUSH);
	fua = iol_opf_has(req->opf, IOL_FUA);
	/* A FUA write on a device without native FUA (or not known to have it) is a write
	 * and a flush to the device: Linux adds the flush (IO4). */
	fua_flush = fua && (dev->gated ? dev->gate_fua : dev->geom.fua != 1);
	if (op == IOL_OP_READ) {
		atomic_fetch_add_explicit(&dev->cnt.reads, 1, memory_order_relaxed);
	} else if (op == IOL_OP_FLUSH) {
		atomic_fetch_add_explicit(&dev->cnt.flushes, 1, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&dev->cnt.writes, 1, memory_order_relaxed);
		if (preflush)
			atomic_fetch_add_explicit(&dev->cnt.preflushes, 1, memory_order_relaxed);
		if (fua)
			atomic_fetch_add_explicit(&dev->cnt.fua_writes, 1, memory_order_relaxed);
	}
	req->gate_opf = req->opf;
	req->gate_post = false;
	req->gate_stage = 0;
	req->gate_here = here && dev->run;
	if (dev->gated) {
		/* IO4: the core carries out the flags through the flush gate (flush.c). */
		if (op == IOL_OP_FLUSH) {
			iol_gate_join(req, IOL_GATE_FLUSH, req->gate_here);
			return 0;
		}
		if (fua_flush) {
			req->opf.bits &= ~IOL_FUA;
			req->gate_post = true;
		}
		if (preflush) {
			req->opf.bits &= ~IOL_PREFLUSH;
			iol_gate_join(req, IOL_GATE_PRE, req->gate_here);
			return 0;
		}
	} else {
		unsigned n = (op == IOL_OP_FLUSH) + preflush + fua_flush;

		if (n)
			atomic_fetch_add_explicit(&dev->cnt.dev_flushes, n, memory_order_relaxed);
	}
	if (req->gate_here)
		dev->ops->run(dev, req);
	else
		dev->ops->submit(dev, req);
	return 0;
}

int iol_submit(struct iol_req *req)
{
	return submit(req, false);
}

/* ---- waiting ---- */

struct iol_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	int status;
};

static void waiter_init(struct iol_waiter *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->done = 0;
	w->status = 0;
}

static void waiter_wake(struct iol_waiter *w, int status)
{
	pthread_mutex_lock(&w->lock);
	w->status = status;
	w->done = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void waiter_destroy(struct iol_waiter *w)
{
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}

static int waiter_wait(struct iol_waiter *w)
{
	int status;

	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	status = w->status;
	pthread_mutex_unlock(&w->lock);
	waiter_destroy(w);
	return status;
}

static void wait_end_io(struct iol_req *req)
{
	waiter_wake(req->priv, atomic_load(&req->status));
}

int iol_submit_wait(struct iol_req *req)
{
	struct iol_waiter w;
	void *priv = req->priv;
	int err;

	waiter_init(&w);
	req->priv = &w;
	req->end_io = wait_end_io;
	err = submit(req, true);
	if (err) {
		/* Rejected: its own I/O will not happen, but requests chained into it may
		 * still be in flight; they finish it (and wake us) if they hold the last
		 * reference. */
		iol_req_set_status(req, err);
		if (atomic_fetch_sub(&req->remaining, 1) == 1) {
			waiter_destroy(&w);
			req->priv = priv;
			return err;
		}
	}
	err = waiter_wait(&w);
	req->priv = priv;
	return err;
}

/* ---- chained multi-segment I/O over one buffer ---- */

struct iol_rw {
	iol_rw_end_fn end;
	void *priv;
	struct iol_req *reqs; /* all pieces; the last is the chain's end */
	unsigned nr;
};

static void rw_end_io(struct iol_req *last)
{
	struct iol_rw *rw = last->priv;
	int status = atomic_load(&last->status);

	for (unsigned i = 0; i < rw->nr; i++)
		iol_req_release(&rw->reqs[i]);
	free(rw->reqs);
	rw->end(rw->priv, status);
	free(rw);
}

/* A chained or one-request transfer is a read or a write of at least one byte. */
static bool rw_args_ok(iol_opf_t opf, size_t len)
{
	enum iol_op op = iol_opf_op(opf);

	return (op == IOL_OP_READ || op == IOL_OP_WRITE) && len && iol_opf_valid(opf);
}

/* Give @req the next @n segments of [buf, buf+len) from @p, at their offset from @off;
 * returns where the next piece starts. */
static char *rw_fill(struct iol_req *req, uint64_t off, void *buf, char *p, size_t len, unsigned n)
{
	req->off = off + (uint64_t)(p - (char *)buf);
	for (unsigned s = 0; s < n; s++) {
		size_t seg = len - (size_t)(p - (char *)buf);

		if (seg > IOL_SEG_BYTES)
			seg = IOL_SEG_BYTES;
		iol_req_add(req, p, seg);
		p += seg;
	}
	return p;
}

int iol_rw_submit(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len,
		  iol_rw_end_fn end, void *priv)
{
	enum iol_op op = iol_opf_op(opf);
	unsigned per_req = iol_max_segs(dev, IOL_MAX_SEGS_DEFAULT);
	size_t nsegs, nreqs;
	struct iol_rw *rw;
	char *p = buf;
	int err = 0;

	if (!rw_args_ok(opf, len) || !per_req)
		return -EINVAL;
	nsegs = (len + IOL_SEG_BYTES - 1) / IOL_SEG_BYTES;
	nreqs = (nsegs + per_req - 1) / per_req;
	rw = calloc(1, sizeof(*rw));
	if (!rw)
		return -ENOMEM;
	rw->reqs = calloc(nreqs, sizeof(*rw->reqs));
	if (!rw->reqs) {
		free(rw);
		return -ENOMEM;
	}
	rw->end = end;
	rw->priv = priv;
	rw->nr = (unsigned)nreqs;

	/* Build every piece first (so validation errors surface before anything is in
	 * flight), then chain piece i into piece i+1 and submit in order: pieces run
	 * concurrently, and the last one's end_io runs only when all are done (RQ1). */
	for (size_t r = 0; r < nreqs; r++) {
		uint32_t flags = opf.bits & ~IOL_OP_MASK;
		unsigned n = (unsigned)(nsegs - r * per_req < per_req ? nsegs - r * per_req :
									per_req);
		struct iol_req *req = &rw->reqs[r];

		if (r)
			flags &= ~IOL_PREFLUSH; /* the flush goes with the first piece only */
		err = iol_req_init(req, dev, n, IOL_OPF(op, flags));
		if (err)
			break;
		p = rw_fill(req, off, buf, p, len, n);
		err = req_validate(req);
		if (err) {
			iol_req_release(req);
			break;
		}
	}
	if (err) {
		for (size_t r = 0; r < nreqs && rw->reqs[r].dev; r++)
			iol_req_release(&rw->reqs[r]);
		free(rw->reqs);
		free(rw);
		return err;
	}
	rw->reqs[nreqs - 1].end_io = rw_end_io;
	rw->reqs[nreqs - 1].priv = rw;
	for (size_t r = 0; r + 1 < nreqs; r++)
		iol_req_chain(&rw->reqs[r], &rw->reqs[r + 1]);
	for (size_t r = 0; r < nreqs; r++) {
		/* A piece rejected here (device closing) passes its error down (IO2). */
		(void)iol_submit(&rw->reqs[r]);
	}
	return 0;
}

static void rw_wait_end(void *priv, int status)
{
	waiter_wake(priv, status);
}

/* A transfer that fits one request, on a device with a ->run, is that request performed
 * on the calling thread (IO3): recovery's and format's small synchronous reads and
 * writes then cost a syscall each (a ->run of the sim: no hand-off), not two hand-offs. */
static int rw_wait_here(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len,
			unsigned n)
{
	struct iol_req req;
	int err;

	if (!rw_args_ok(opf, len))
		return -EINVAL;
	err = iol_req_init(&req, dev, n, opf);
	if (err)
		return err;
	rw_fill(&req, off, buf, buf, len, n);
	err = iol_submit_wait(&req);
	iol_req_release(&req);
	return err;
}

int iol_rw_wait(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len,
		unsigned *nr_reqs)
{
	struct iol_waiter w;
	unsigned per_req = iol_max_segs(dev, IOL_MAX_SEGS_DEFAULT);
	size_t nsegs = (len + IOL_SEG_BYTES - 1) / IOL_SEG_BYTES;
	int err;

	if (nr_reqs)
		*nr_reqs = per_req ? (unsigned)((nsegs + per_req - 1) / per_req) : 0;
	if (dev->run && per_req && nsegs <= per_req)
		return rw_wait_here(dev, opf, off, buf, len, (unsigned)nsegs);
	waiter_init(&w);
	err = iol_rw_submit(dev, opf, off, buf, len, rw_wait_end, &w);
	if (err) {
		waiter_destroy(&w);
		return err;
	}
	return waiter_wait(&w);
}
