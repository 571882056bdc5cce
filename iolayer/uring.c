/*
 * uring.c - the io_uring backend (liburing).
 *
 * One ring per device, one completion thread (the "reaper") per device.  Reads and writes
 * are IORING_OP_READV/WRITEV on the O_DIRECT descriptor; IOL_FUA (only on a device with
 * native FUA) puts RWF_DSYNC in the write's rw_flags.  Flushes never come through the
 * ring: the core carries out FLUSH, PREFLUSH and FUA without native FUA through its
 * flush gate (gate_flushes; submit.c IO4, flush.c), whose flushes run as fdatasync through
 * ->run.  A ring FSYNC would cost an io_uring worker and the reaper's wake-up per flush.
 *
 * iol_submit_wait does not come here: its request runs on the waiting thread as plain
 * pwritev2 / fdatasync (->run = iol_fd_run, psync.c).  Through the ring a lone waiter
 * costs a wake-up of the reaper and one of the waiter per request, and an FSYNC always
 * goes to an io-wq worker first (io_uring cannot issue it inline): about ten context
 * switches for a write and a flush, against two blocking syscalls.  Requests on the two
 * paths may be in flight together; nothing orders them (io.h: completion in any order),
 * and a flush on either path covers what completed before it was submitted.
 *
 * (A PREFLUSH write could not be one linked FSYNC + WRITE pair anyway: since Linux 6.0
 * io_fsync() records its result without marking the request failed, so a linked write
 * still runs after a failed fsync; checked on 6.18.)  Scratch word while in flight:
 * be_u64[BE_RES] (the result, as int64, once known); user_data is the request pointer.
 *
 * Locking.  u->lock protects the SQ (every io_uring_get_sqe and io_uring_submit happens
 * under it), the slot count, the backlog and the pending count.  The CQ has exactly one
 * consumer, the reaper, which reads it without the lock.  The reaper copies a batch of
 * CQEs, advances the CQ, and only then takes the lock to account for them, so scratch
 * words written by a submitter under the lock are read by the reaper under the same lock
 * (this is also the happens-before that ThreadSanitizer can see).
 *
 * Queue bounding.  u->sqes_used counts requests whose SQE has been submitted and whose
 * CQE has not been reaped (one SQE each).  It never exceeds u->entries, the SQ size, so
 * the CQ (2 x entries) cannot overflow and io_uring_get_sqe cannot fail: the SQ is empty
 * whenever the lock is free, because every submit call either gets all queued SQEs
 * consumed or retracts them (see below).  An ordinary submitter that finds no room, or
 * finds the backlog non-empty, waits on u->space.  The reaper never waits: a request
 * submitted from a completion callback (the reaper's own thread) when there is no room
 * goes onto u->backlog, a FIFO linked through be_next.  The backlog is drained, under
 * the lock, every time the reaper frees slots, before waiters are woken, so it goes
 * first.
 * Invariant: backlog non-empty implies SQEs in flight (it is only appended to when the
 * ring is full, or behind older backlog entries, and every CQE batch drains it as far as
 * room allows), so some future CQE always drains it: no deadlock, no lost request.
 * iol_req_done() is never called with the lock held, so callbacks may resubmit freely.
 * (A callback must not wait synchronously for I/O on this device: only the reaper
 * could complete it.)
 *
 * Submission errors.  io_uring_enter fails a submission only for want of memory
 * (-EAGAIN; -EBUSY and -EINTR are treated the same): we retry.  With an error return the
 * kernel has consumed none of the SQEs, so for any other error (a broken ring) the
 * queued SQEs are retracted from the SQ tail and their requests fail with that error;
 * SQEs published but never consumed could otherwise be submitted later, after their
 * request was reported.  An SQE the kernel rejects while consuming it gets an error CQE
 * like any other failure.
 *
 * Shutdown.  ->close() runs after the core stopped accepting requests: it waits for
 * u->pending (accepted, not yet reported) to reach zero, then submits an IORING_OP_NOP
 * with user_data UD_STOP (no request has that address); the reaper exits when it reaps
 * it, is joined, and the ring is torn down.  Where the kernel takes a timeout with the
 * wait itself (IORING_FEAT_EXT_ARG, 5.11+; without it liburing would queue a timeout SQE
 * from the reaper, outside our SQ lock) the reaper also wakes every second and leaves
 * once it finds u->stopping set, so close does not depend on the NOP being accepted.
 * pending drops only after iol_req_done() returned, so no callback is running on the
 * reaper when close proceeds.
 */
#include "io_private.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

/* user_data of the shutdown NOP; requests use their own address. */
#define UD_STOP ((uint64_t)0)

/* Scratch word of an in-flight request. */
enum {
	BE_RES = 0,
};

#define URING_MIN_ENTRIES 8u
#define URING_MAX_ENTRIES 32768u
#define URING_BATCH 64u

struct uring_dev {
	struct io_uring ring;
	int fd;
	unsigned entries;  /* SQ size: the bound on SQEs in flight */
	bool wait_timeout; /* IORING_FEAT_EXT_ARG: waits take a timeout */
	pthread_t reaper;

	pthread_mutex_t lock;
	pthread_cond_t space;    /* room in the ring (or backlog drained) */
	pthread_cond_t idle;     /* pending reached zero */
	unsigned sqes_used;      /* SQEs submitted, CQE not yet reaped */
	unsigned long pending;   /* requests accepted, not yet reported */
	bool stopping;           /* close() is waiting for the reaper */
	struct iol_req *backlog; /* FIFO of requests waiting for room (reaper only) */
	struct iol_req **backlog_tail;
};

/* A FIFO of requests to report, linked through be_next. */
struct req_list {
	struct iol_req *head;
	struct iol_req **tail;
};

static void req_list_init(struct req_list *l)
{
	l->head = NULL;
	l->tail = &l->head;
}

static void req_list_add(struct req_list *l, struct iol_req *req)
{
	req->be_next = NULL;
	*l->tail = req;
	l->tail = &req->be_next;
}

static struct iol_req *ud_req(uint64_t ud)
{
	return (struct iol_req *)(uintptr_t)ud;
}

static bool have_room_locked(const struct uring_dev *u)
{
	return u->sqes_used < u->entries;
}

/* @req is finished with result @res (bytes, or a negative errno): queue its report. */
static void req_finish(struct req_list *done, struct iol_req *req, int res)
{
	req->be_u64[BE_RES] = (uint64_t)(int64_t)res;
	req_list_add(done, req);
}

static void req_report(struct iol_req *req)
{
	int64_t res = (int64_t)req->be_u64[BE_RES];

	if (res < 0)
		iol_req_done(req, (int)res, 0);
	else
		iol_req_done(req, 0, (size_t)res);
}

/* Report every request on @l, then drop them from pending. */
static void report_list(struct uring_dev *u, struct req_list *l)
{
	unsigned long n = 0;
	struct iol_req *req = l->head;

	while (req) {
		struct iol_req *next = req->be_next; /* @req is the caller's after reporting */

		req_report(req);
		req = next;
		n++;
	}
	if (!n)
		return;
	pthread_mutex_lock(&u->lock);
	u->pending -= n;
	if (!u->pending)
		pthread_cond_broadcast(&u->idle);
	pthread_mutex_unlock(&u->lock);
}

/* Take a slot for a new request (a read or a write, IO4) and queue its SQE.  The caller
 * checked room. */
static void queue_req_locked(struct uring_dev *u, struct iol_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	assert(sqe);
	assert(iol_opf_op(req->opf) != IOL_OP_FLUSH && !iol_opf_has(req->opf, IOL_PREFLUSH));
	if (iol_opf_op(req->opf) == IOL_OP_READ) {
		io_uring_prep_readv(sqe, u->fd, req->vec, req->nr_segs, req->off);
	} else {
		io_uring_prep_writev(sqe, u->fd, req->vec, req->nr_segs, req->off);
		if (iol_opf_has(req->opf, IOL_FUA))
			sqe->rw_flags = RWF_DSYNC;
	}
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)req);
	req->be_u64[BE_RES] = 0;
	u->sqes_used++;
}

/*
 * The kernel refused the queued SQEs with @err and consumed none of them: take them
 * back off the SQ (so no later io_uring_enter can run them) and fail their requests
 * onto @failed.  Only valid without SQPOLL, where the kernel reads the SQ tail solely
 * inside our own (locked) submit calls.
 */
static void retract_locked(struct uring_dev *u, int err, struct req_list *failed)
{
	struct io_uring_sq *sq = &u->ring.sq;
	unsigned head = *sq->khead;

	for (unsigned i = head; i != sq->sqe_tail; i++) {
		uint64_t ud = sq->sqes[sq->array[i & sq->ring_mask]].user_data;

		u->sqes_used--;
		if (ud != UD_STOP)
			req_finish(failed, ud_req(ud), err);
	}
	sq->sqe_head = sq->sqe_tail = head;
	__atomic_store_n(sq->ktail, head, __ATOMIC_RELEASE);
}

/* Submit everything on the SQ; see "Submission errors" above. */
static void flush_sq_locked(struct uring_dev *u, struct req_list *failed)
{
	while (io_uring_sq_ready(&u->ring)) {
		int ret = io_uring_submit(&u->ring);

		if (ret >= 0)
			continue;
		if (ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) {
			/* Out of request memory: give the kernel a moment.  The reaper does
			 * not need the lock to reap, so this cannot hold up completions. */
			nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
			continue;
		}
		retract_locked(u, ret, failed);
	}
}

/* Move backlog entries onto the SQ while they fit, and submit. */
static void kick_locked(struct uring_dev *u, struct req_list *failed)
{
	do {
		while (u->backlog && have_room_locked(u)) {
			struct iol_req *req = u->backlog;

			u->backlog = req->be_next;
			if (!u->backlog)
				u->backlog_tail = &u->backlog;
			queue_req_locked(u, req);
		}
		flush_sq_locked(u, failed);
		/* A retraction frees slots; keep draining so the backlog never sits behind
		 * an empty ring. */
	} while (u->backlog && have_room_locked(u));
}

static void uring_submit(struct iol_dev *dev, struct iol_req *req)
{
	struct uring_dev *u = dev->be;
	struct req_list failed;

	req_list_init(&failed);
	pthread_mutex_lock(&u->lock);
	u->pending++;
	if (pthread_equal(pthread_self(), u->reaper)) {
		/* From a completion callback: never wait (only we can free room). */
		if (u->backlog || !have_room_locked(u)) {
			req->be_next = NULL;
			*u->backlog_tail = req;
			u->backlog_tail = &req->be_next;
			pthread_mutex_unlock(&u->lock);
			return;
		}
	} else {
		while (u->backlog || !have_room_locked(u))
			pthread_cond_wait(&u->space, &u->lock);
	}
	queue_req_locked(u, req);
	kick_locked(u, &failed);
	pthread_mutex_unlock(&u->lock);
	report_list(u, &failed);
}

static void *uring_reaper(void *arg)
{
	struct uring_dev *u = arg;
	bool stop = false;

	while (!stop) {
		struct io_uring_cqe *cqes[URING_BATCH];
		struct {
			uint64_t ud;
			int res;
		} got[URING_BATCH];
		struct io_uring_cqe *cqe;
		struct req_list done;
		unsigned n;
		int ret;

		if (u->wait_timeout) {
			struct __kernel_timespec ts = { .tv_sec = 1 };

			ret = io_uring_wait_cqe_timeout(&u->ring, &cqe, &ts);
		} else {
			ret = io_uring_wait_cqe(&u->ring, &cqe);
		}
		if (ret < 0) {
			if (ret == -EINTR || ret == -EAGAIN)
				continue;
			/* Idle for a second, or a ring that cannot wait (which cannot
			 * complete anything either: back off rather than spin).  Leave if
			 * close() is waiting for us: pending is zero then, and its NOP may
			 * not have made it onto the ring. */
			pthread_mutex_lock(&u->lock);
			stop = u->stopping;
			pthread_mutex_unlock(&u->lock);
			if (!stop && ret != -ETIME)
				nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
			continue;
		}
		n = io_uring_peek_batch_cqe(&u->ring, cqes, URING_BATCH);
		for (unsigned i = 0; i < n; i++) {
			got[i].ud = cqes[i]->user_data;
			got[i].res = cqes[i]->res;
		}
		io_uring_cq_advance(&u->ring, n);

		req_list_init(&done);
		pthread_mutex_lock(&u->lock);
		u->sqes_used -= n;
		for (unsigned i = 0; i < n; i++) {
			struct iol_req *req = ud_req(got[i].ud);

			if (got[i].ud == UD_STOP) {
				stop = true;
				continue;
			}
			req_finish(&done, req, got[i].res);
		}
		kick_locked(u, &done);
		pthread_cond_broadcast(&u->space);
		pthread_mutex_unlock(&u->lock);

		report_list(u, &done);
	}
	return NULL;
}

static int uring_probe(void)
{
	static const int need[] = { IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_NOP };
	struct io_uring_probe *probe;
	struct io_uring ring;
	int err;

	err = io_uring_queue_init(4, &ring, 0);
	if (err)
		return err;
	probe = io_uring_get_probe_ring(&ring);
	if (!probe) {
		err = -ENOSYS;
	} else {
		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
			if (!io_uring_opcode_supported(probe, need[i]))
				err = -ENOSYS; /* not -EOPNOTSUPP: that is the file system's (dev.c) */
		}
		io_uring_free_probe(probe);
	}
	io_uring_queue_exit(&ring);
	return err;
}

static unsigned ring_entries(unsigned queue_depth)
{
	unsigned n = URING_MIN_ENTRIES;

	while (n < queue_depth && n < URING_MAX_ENTRIES)
		n <<= 1;
	return n;
}

static int uring_open(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts)
{
	struct io_uring_params p;
	struct uring_dev *u;
	sigset_t all, old;
	int err;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = dev->fd;
	u->entries = ring_entries(dev->queue_depth);
	u->backlog_tail = &u->backlog;

	memset(&p, 0, sizeof(p));
	err = io_uring_queue_init_params(u->entries, &u->ring, &p);
	if (err) {
		iol_set_errmsg(opts, "%s: io_uring_queue_init(%u): %s", path, u->entries,
			       strerror(-err));
		free(u);
		return err;
	}
	u->wait_timeout = p.features & IORING_FEAT_EXT_ARG;

	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->space, NULL);
	pthread_cond_init(&u->idle, NULL);

	/* The reaper inherits a full signal mask: application signals stay off it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&u->reaper, NULL, uring_reaper, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		iol_set_errmsg(opts, "%s: io_uring completion thread: %s", path, strerror(-err));
		pthread_cond_destroy(&u->idle);
		pthread_cond_destroy(&u->space);
		pthread_mutex_destroy(&u->lock);
		io_uring_queue_exit(&u->ring);
		free(u);
		return err;
	}
	pthread_setname_np(u->reaper, "delog-uring");
	dev->be = u;
	return 0;
}

static void uring_close(struct iol_dev *dev)
{
	struct uring_dev *u = dev->be;
	struct io_uring_sqe *sqe;
	struct req_list none;

	if (!u)
		return;
	req_list_init(&none);
	pthread_mutex_lock(&u->lock);
	while (u->pending)
		pthread_cond_wait(&u->idle, &u->lock);
	while (!have_room_locked(u))
		pthread_cond_wait(&u->space, &u->lock);
	u->stopping = true;
	sqe = io_uring_get_sqe(&u->ring);
	assert(sqe);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, UD_STOP);
	u->sqes_used++;
	flush_sq_locked(u, &none);
	pthread_mutex_unlock(&u->lock);

	pthread_join(u->reaper, NULL);
	io_uring_queue_exit(&u->ring);
	pthread_cond_destroy(&u->idle);
	pthread_cond_destroy(&u->space);
	pthread_mutex_destroy(&u->lock);
	free(u);
	dev->be = NULL;
}

const struct iol_ops iol_uring_ops = {
	.needs_fd = true,
	.gate_flushes = true,
	.probe = uring_probe,
	.open = uring_open,
	.submit = uring_submit,
	.run = iol_fd_run,
	.close = uring_close,
};
