/*
 * flush.c - the flush gate: one cache flush in flight per device, shared by every
 * request that asked for a flush while the one before it ran.
 *
 * Why.  The block layer does this itself (blk-flush: flush requests that arrive while a
 * flush runs wait, and one flush then serves them all), so when several threads of one
 * process flush a disk at once the device performs fewer flushes than were asked for,
 * and nothing in user space can tell how many.  A log that counted its requests
 * over-counted by 37% at 16 clients under `sync` against the disk's own counter.  With
 * the merging done here, the kernel never sees two flushes of one device at once and
 * merges none of them: the generations counted below (iol_counters.dev_flushes) are the
 * flushes the device performs.  A FUA write on a device without FUA is carried out the
 * way the kernel would carry it out (the write, then a flush), with that flush taken
 * through the gate too; RWF_DSYNC would hide it in the kernel, where it merges.
 *
 * Which devices.  A backend whose table sets gate_flushes (the descriptor backends:
 * uring, aio, psync) never sees a PREFLUSH write, a flush request of the caller's, or
 * (without native FUA) a FUA write: the core (submit.c) hands those stages here.  The sim
 * disk models a device, not the kernel, and keeps doing PREFLUSH and FUA itself, unless
 * it is opened with iol_dev_opts.flush_gate: the crash suite does that for part of its
 * rounds, so power cuts land around the gate's flushes and its riders' writes as well,
 * with FUA carried out as write + gated flush (the FUA path of a disk without FUA).
 *
 * Where it stands: the gate is a stage of the request pipeline, as blk-flush is of blk-mq.
 * submit.c hands it a request's flush stages (at submission a FLUSH or a PREFLUSH, at a
 * write's completion the flush of a FUA carried out as write + flush: submit.c IO4), and
 * the gate ends each rider through req.c (iol_req_finish) or hands its write to the
 * backend (->submit) when its generation ends; it calls nothing of submit.c.
 *
 * Invariants:
 *  (FG1) A generation starts only after every rider it serves joined it: riders join
 *        the pending list, and a generation takes the pending list when it starts.  A
 *        rider joins when its request is submitted (FLUSH, PREFLUSH) or when its own
 *        write completed (FUA carried out as write + flush), so its flush covers every
 *        write that completed before that, as io.h promises.
 *  (FG2) At most one generation is in flight per device (running).  Riders that come
 *        while it runs wait for the next one, which starts when it completes: one flush
 *        after another, never two at once, as the block layer itself would order them.
 *  (FG3) A generation's result is every rider's result.  A PREFLUSH write whose flush
 *        failed is never written; a FUA write whose flush failed reports the error.
 *        Failed generations are counted in iol_counters.gate_failed; on the sim a fault
 *        plan entry for FLUSH counts the gate's generations (the device's flushes), so
 *        it can fail a chosen one, merged or inline.
 *  (FG4) A generation started on iol_submit_wait's thread (IO3: the gate idle with no
 *        rider pending, the device may use ->run: dev->run) runs there and serves that
 *        request alone: riders that come meanwhile wait for the next generation.  So
 *        that thread never runs another request's end_io (it may hold locks a callback
 *        takes).  Counted in iol_counters.gate_inline.
 *  (FG5) Every other generation runs on one of the gate's two flusher threads, a
 *        blocking flush through the backend's ->run (its fault plan applies), or,
 *        where the device has none (the sim without inline_run), submitted with
 *        ->submit and continued from the sim's completion.  When it
 *        ends with riders pending for the next one, that thread starts the next one at
 *        once and hands the ended generation's riders to the other flusher (handoff);
 *        otherwise it continues them itself (end_io, or a PREFLUSH rider's write handed
 *        to ->submit).  So the device goes from one flush to the next with no thread
 *        wake-up in between, as the block layer issues the next flush from the last
 *        one's completion; waking a checkpoint's clients takes longer than a flush
 *        here.  Through a ring each flush would cost the reaper's wake-up and an
 *        io_uring worker's (FSYNC never runs inline).
 *        Riders of consecutive generations may so be continued concurrently, in either
 *        order; io.h promises no order of completions, and the journal takes flush
 *        results in issue order itself (its L14).  The gate's request is reused: only
 *        one generation runs at a time (FG2), and it is armed only once the previous
 *        one's end_io has read its result.
 *  (FG6) Close: once the core refuses new requests, no rider can join but a FUA write's
 *        flush (from a write already in the backend), and that one only finishes; a
 *        PREFLUSH rider already pending still has its write to hand to the backend.
 *        Both reach the backend after close began: a flusher's generation goes to
 *        ->submit where the device has no ->run (the sim), and a PREFLUSH rider's write
 *        to ->submit everywhere.  So the gate and the backend must outlive every request:
 *        iol_dev_close waits until each request the core accepted, and each generation
 *        the gate armed, has finished (submit.c IO5: dev->live, which a rider keeps above
 *        zero from its submission to the end of its end_io, across every hop between
 *        gate and backend), the backend completing on its own meanwhile (->quiesce);
 *        only then does it drain the continuations still unwinding, stop the flushers
 *        and close the backend.  Draining the gate and then closing the backend, as
 *        before, held only where generations never reach ->submit: on the sim a FUA
 *        write completing inside its close woke a flusher whose flush went to a freed
 *        sim, or to one whose thread had stopped (a close that never returned).
 */
#include "io_private.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

/* Count a generation and arm the gate's request for it; @inline_req: the one request an
 * inline generation serves (FG4), NULL on a flusher.  Under the gate's lock. */
static void gen_arm(struct iol_dev *dev, struct iol_req *inline_req)
{
	struct iol_req *g = &dev->gate.req;

	atomic_fetch_add_explicit(&dev->cnt.dev_flushes, 1, memory_order_relaxed);
	iol_dev_live_get(dev); /* until its end_io (gen_end) returned (IO5) */
	if (inline_req)
		atomic_fetch_add_explicit(&dev->cnt.gate_inline, 1, memory_order_relaxed);
	dev->gate.running = true;
	dev->gate.inline_req = inline_req;
	atomic_store(&g->status, 0);
	atomic_store(&g->remaining, 1);
	g->bytes = 0;
	g->chain_next = NULL;
	g->opf = IOL_OPF(IOL_OP_FLUSH, 0);
	g->gate_opf = g->opf;
}

/* Continue @req after the generation that served it ended with @err (FG3).  @here: on
 * the request's own iol_submit_wait thread, where its next stage may run too. */
static void rider_continue(struct iol_req *req, int err, bool here)
{
	struct iol_dev *dev = req->dev;

	if (req->gate_stage == IOL_GATE_PRE && !err) {
		req->gate_stage = 0;
		if (here)
			dev->ops->run(dev, req);
		else
			dev->ops->submit(dev, req);
		return;
	}
	req->gate_stage = 0;
	iol_req_finish(req, err);
}

/* Continue @riders, each with its generation's result (gate_err), outside the gate's
 * lock; the caller counted them in `continuing`.  Then wake a drain once nothing is
 * left. */
static void riders_continue(struct iol_gate *gt, struct iol_req *riders)
{
	struct iol_req *next;

	for (; riders; riders = next) {
		next = riders->gate_next;
		rider_continue(riders, riders->gate_err, false);
	}
	pthread_mutex_lock(&gt->lock);
	if (!--gt->continuing && !gt->running && !gt->pend && !gt->handoff)
		pthread_cond_broadcast(&gt->idle);
	pthread_mutex_unlock(&gt->lock);
}

/* end_io of the gate's flush request: the generation ended (on the flusher, or on the
 * inline generation's thread). */
static void gen_end(struct iol_req *g)
{
	struct iol_dev *dev = g->priv;
	struct iol_gate *gt = &dev->gate;
	int err = atomic_load(&g->status);
	struct iol_req *riders;

	if (err)
		atomic_fetch_add_explicit(&dev->cnt.gate_failed, 1, memory_order_relaxed);
	pthread_mutex_lock(&gt->lock);
	riders = gt->cur;
	gt->cur = NULL;
	if (gt->inline_req)
		gt->inline_req->gate_err = err; /* its own: the gate may run again at once */
	for (struct iol_req *r = riders; r; r = r->gate_next)
		r->gate_err = err;
	gt->running = false;
	if (gt->pend && riders) {
		/* The next generation is due: the flusher that ran this one starts it as
		 * soon as this returns, and the other one continues these riders. */
		*gt->handoff_tail = riders;
		while (*gt->handoff_tail)
			gt->handoff_tail = &(*gt->handoff_tail)->gate_next;
		pthread_cond_broadcast(&gt->work);
		pthread_mutex_unlock(&gt->lock);
		return;
	}
	gt->continuing++;
	if (gt->pend)
		pthread_cond_signal(&gt->work);
	pthread_mutex_unlock(&gt->lock);
	riders_continue(gt, riders);
}

static void *flusher(void *arg)
{
	struct iol_dev *dev = arg;
	struct iol_gate *gt = &dev->gate;

	pthread_mutex_lock(&gt->lock);
	for (;;) {
		while ((!gt->pend || gt->running) && !gt->handoff && !gt->stop)
			pthread_cond_wait(&gt->work, &gt->lock);
		if (!gt->pend || gt->running) {
			struct iol_req *riders = gt->handoff;

			if (!riders)
				break; /* stopping, and nothing to do */
			/* Riders a flusher handed over to start the next generation. */
			gt->handoff = NULL;
			gt->handoff_tail = &gt->handoff;
			gt->continuing++;
			pthread_mutex_unlock(&gt->lock);
			riders_continue(gt, riders);
			pthread_mutex_lock(&gt->lock);
			continue;
		}
		/* FG1: the generation takes the riders that joined before it starts. */
		gt->cur = gt->pend;
		gt->pend = NULL;
		gt->pend_tail = &gt->pend;
		gen_arm(dev, NULL);
		pthread_mutex_unlock(&gt->lock);
		/* gen_end continues the riders, here or, without ->run (sim), on the
		 * backend's completion path; the loop waits for it (running). */
		if (dev->run)
			dev->ops->run(dev, &gt->req);
		else
			dev->ops->submit(dev, &gt->req);
		pthread_mutex_lock(&gt->lock);
	}
	pthread_mutex_unlock(&gt->lock);
	return NULL;
}

void iol_gate_join(struct iol_req *req, int stage, bool here)
{
	struct iol_dev *dev = req->dev;
	struct iol_gate *gt = &dev->gate;

	req->gate_stage = stage;
	pthread_mutex_lock(&gt->lock);
	if (here && !gt->running && !gt->pend) {
		/* FG4: a generation of one, on this thread. */
		gen_arm(dev, req);
		pthread_mutex_unlock(&gt->lock);
		dev->ops->run(dev, &gt->req); /* gen_end runs before this returns */
		rider_continue(req, req->gate_err, true);
		return;
	}
	req->gate_next = NULL;
	*gt->pend_tail = req;
	gt->pend_tail = &req->gate_next;
	if (!gt->running)
		pthread_cond_signal(&gt->work);
	pthread_mutex_unlock(&gt->lock);
}

int iol_gate_init(struct iol_dev *dev)
{
	struct iol_gate *gt = &dev->gate;
	sigset_t all, old;
	int err = iol_req_init(&gt->req, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));

	if (err)
		return err;
	gt->req.end_io = gen_end;
	gt->req.priv = dev;
	gt->pend_tail = &gt->pend;
	gt->handoff_tail = &gt->handoff;
	pthread_mutex_init(&gt->lock, NULL);
	pthread_cond_init(&gt->work, NULL);
	pthread_cond_init(&gt->idle, NULL);
	/* Application signals stay off the flusher, as off the backends' threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < IOL_GATE_FLUSHERS && !err; i++) {
		err = -pthread_create(&gt->flusher[i], NULL, flusher, dev);
		if (!err) {
			pthread_setname_np(gt->flusher[i], "delog-flush");
			gt->nr_flushers++;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		iol_gate_destroy(dev);
		return err;
	}
	return 0;
}

/* Wait until no generation runs and no rider waits or is being continued. */
static void gate_drain(struct iol_dev *dev)
{
	struct iol_gate *gt = &dev->gate;

	pthread_mutex_lock(&gt->lock);
	while (gt->running || gt->pend || gt->continuing || gt->handoff)
		pthread_cond_wait(&gt->idle, &gt->lock);
	pthread_mutex_unlock(&gt->lock);
}

void iol_gate_destroy(struct iol_dev *dev)
{
	struct iol_gate *gt = &dev->gate;

	gate_drain(dev);
	pthread_mutex_lock(&gt->lock);
	gt->stop = true;
	pthread_cond_broadcast(&gt->work);
	pthread_mutex_unlock(&gt->lock);
	for (unsigned i = 0; i < gt->nr_flushers; i++)
		pthread_join(gt->flusher[i], NULL);
	pthread_cond_destroy(&gt->idle);
	pthread_cond_destroy(&gt->work);
	pthread_mutex_destroy(&gt->lock);
	iol_req_release(&gt->req);
}
