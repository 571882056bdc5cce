/*
 * aio.c - the Linux native AIO backend (libaio).
 *
 * One AIO context and one completion thread (the "reaper") per device.  Reads and writes
 * are IOCB_CMD_PREADV/PWRITEV on the O_DIRECT descriptor; IOL_FUA (only on a device with
 * native FUA) sets RWF_DSYNC in aio_rw_flags.  Flushes never come here: the core carries
 * out FLUSH, PREFLUSH and FUA without native FUA through its flush gate (gate_flushes;
 * submit.c IO4, flush.c), whose flushes run as fdatasync through ->run.
 *
 * iol_submit_wait does not come here: its request runs on the waiting thread as plain
 * pwritev2 / fdatasync (->run = iol_fd_run, psync.c), saving the reaper's wake-up and
 * the waiter's.  Requests on the two paths may be in flight together; nothing orders
 * them (io.h), and a flush on either path covers what completed before it was submitted.
 *
 * Slots.  An iocb does not fit in a request's scratch words, so the device owns an array
 * of queue_depth slots (iocb + request pointer + stage); a request holds one slot from
 * submission until it is reported.  The number of slots is the in-flight bound and is
 * what io_setup() was sized for, so the kernel's event ring cannot overflow.
 *
 * Locking.  u->lock protects the free-slot list, the backlog, the retry list and the
 * pending count; slots are prepared under it (so the reaper, which takes it after
 * io_getevents, sees what the submitter wrote).  io_submit is called without it: the
 * kernel serialises submissions to one context itself, and an O_DIRECT submission may
 * sleep in the block layer.
 *
 * Queue bounding.  An ordinary submitter waits on u->space while no slot is free or the
 * backlog is non-empty.  The reaper never waits for a slot: a request submitted from a
 * completion callback (the reaper's own thread) when none is free goes onto u->backlog
 * (a FIFO through be_next), which is drained into slots as soon as they are freed,
 * before waiting submitters get them.  Invariant: backlog non-empty implies a slot in
 * flight (it is only appended to when no slot is free or behind older entries, and
 * every freed slot triggers a drain), so a future completion always drains it.
 * iol_req_done() is never called with the lock held; callbacks may resubmit freely (they
 * must not wait synchronously for I/O on this device: only the reaper completes it).
 *
 * -EAGAIN from io_submit (the kernel's request accounting is per CPU and batched, so it
 * can refuse briefly even below the context size): a submitting thread backs off and
 * retries; the reaper must not (only it reaps, which is what frees kernel requests), so it
 * parks the slot on u->retry and retries after its next io_getevents, which then uses a
 * short timeout.  Any other io_submit error fails that request with the error.
 *
 * io_setup, io_submit, io_getevents and io_destroy are libaio's (which return the
 * negative errno rather than setting errno).
 *
 * Shutdown.  ->close() runs after the core stopped accepting requests: it waits for
 * u->pending (accepted, not yet reported) to reach zero, sets u->stopping, signals an
 * eventfd and submits an IOCB_CMD_POLL on it tagged with the wake sentinel, so the
 * reaper's io_getevents returns at once and the reaper exits.  io_getevents also wakes
 * every second, and the reaper exits when it finds u->stopping set, so close does not
 * depend on the poll iocb being accepted.  pending drops only after iol_req_done()
 * returned, so no callback is running on the reaper when close proceeds.
 */
#include "io_private.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <libaio.h>

#define AIO_BATCH 64

struct aio_slot {
	struct iocb cb;
	struct iol_req *req;
	struct aio_slot *next; /* free list or retry list */
};

struct aio_dev {
	io_context_t ctx;
	int fd;
	int wake_fd; /* eventfd polled by close's wake iocb */
	struct iocb wake_cb;
	pthread_t reaper;
	struct aio_slot *slots;
	unsigned nr_slots;

	pthread_mutex_t lock;
	pthread_cond_t space; /* a slot was freed or the backlog drained */
	pthread_cond_t idle;  /* pending reached zero */
	struct aio_slot *free;
	unsigned long pending;   /* requests accepted, not yet reported */
	struct iol_req *backlog; /* FIFO of requests waiting for a slot (reaper only) */
	struct iol_req **backlog_tail;
	struct aio_slot *retry; /* prepared slots the reaper could not submit yet */
	bool stopping;
};

/* A FIFO of requests to report, linked through be_next; results in be_u64. */
struct req_list {
	struct iol_req *head;
	struct iol_req **tail;
};

enum {
	BE_ERR = 0, /* 0 or negative errno, as int64 */
	BE_BYTES = 1,
};

static void req_list_init(struct req_list *l)
{
	l->head = NULL;
	l->tail = &l->head;
}

static void req_list_add(struct req_list *l, struct iol_req *req, int err, size_t bytes)
{
	req->be_u64[BE_ERR] = (uint64_t)(int64_t)err;
	req->be_u64[BE_BYTES] = bytes;
	req->be_next = NULL;
	*l->tail = req;
	l->tail = &req->be_next;
}

/* Report every request on @l, then drop them from pending. */
static void report_list(struct aio_dev *u, struct req_list *l)
{
	unsigned long n = 0;
	struct iol_req *req = l->head;

	while (req) {
		struct iol_req *next = req->be_next; /* @req is the caller's after reporting */

		iol_req_done(req, (int)(int64_t)req->be_u64[BE_ERR], (size_t)req->be_u64[BE_BYTES]);
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

static bool on_reaper(const struct aio_dev *u)
{
	return pthread_equal(pthread_self(), u->reaper);
}

/* Prepare @slot's iocb for its request: a read or a write (IO4). */
static void slot_prep(struct aio_dev *u, struct aio_slot *slot)
{
	struct iol_req *req = slot->req;

	assert(iol_opf_op(req->opf) != IOL_OP_FLUSH && !iol_opf_has(req->opf, IOL_PREFLUSH));
	if (iol_opf_op(req->opf) == IOL_OP_READ) {
		io_prep_preadv(&slot->cb, u->fd, req->vec, (int)req->nr_segs, (long long)req->off);
	} else {
		io_prep_pwritev(&slot->cb, u->fd, req->vec, (int)req->nr_segs, (long long)req->off);
		if (iol_opf_has(req->opf, IOL_FUA))
			slot->cb.aio_rw_flags = RWF_DSYNC;
	}
	slot->cb.data = slot;
}

/* Give @req a free slot (the caller checked there is one) and prepare it. */
static struct aio_slot *slot_get_locked(struct aio_dev *u, struct iol_req *req)
{
	struct aio_slot *slot = u->free;

	u->free = slot->next;
	slot->next = NULL;
	slot->req = req;
	slot_prep(u, slot);
	return slot;
}

static void slot_put_locked(struct aio_dev *u, struct aio_slot *slot)
{
	slot->req = NULL;
	slot->next = u->free;
	u->free = slot;
}

/* The slot's request is finished with @err/@bytes: free the slot, queue the report. */
static void slot_finish(struct aio_dev *u, struct aio_slot *slot, int err, size_t bytes,
			struct req_list *done)
{
	struct iol_req *req;

	pthread_mutex_lock(&u->lock);
	req = slot->req;
	slot_put_locked(u, slot);
	pthread_cond_broadcast(&u->space);
	pthread_mutex_unlock(&u->lock);
	req_list_add(done, req, err, bytes);
}

/*
 * Submit @slot's prepared iocb.  Returns 0 when it is in flight (or parked on the retry
 * list, on the reaper), else the negative errno it was refused with.
 */
static int slot_issue(struct aio_dev *u, struct aio_slot *slot)
{
	struct iocb *cb = &slot->cb;
	long backoff_ns = 20000;

	for (;;) {
		int r = io_submit(u->ctx, 1, &cb);
		int err = r < 0 ? -r : EAGAIN;

		if (r == 1)
			return 0;
		if (err != EAGAIN && err != EINTR)
			return -err;
		if (on_reaper(u)) {
			pthread_mutex_lock(&u->lock);
			slot->next = u->retry;
			u->retry = slot;
			pthread_mutex_unlock(&u->lock);
			return 0;
		}
		nanosleep(&(struct timespec){ .tv_nsec = backoff_ns }, NULL);
		if (backoff_ns < 1000000)
			backoff_ns *= 2;
	}
}

/*
 * Issue what is waiting: on the reaper, the retry list; then backlog entries while slots
 * are free.  A refused submission
 * frees its slot, so go round again for the backlog.
 */
static void kick(struct aio_dev *u, struct req_list *done)
{
	for (;;) {
		struct aio_slot *batch = NULL, **tail = &batch;
		bool freed = false;

		pthread_mutex_lock(&u->lock);
		if (u->retry && on_reaper(u)) {
			*tail = u->retry;
			u->retry = NULL;
			while (*tail)
				tail = &(*tail)->next;
		}
		while (u->backlog && u->free) {
			struct iol_req *req = u->backlog;

			u->backlog = req->be_next;
			if (!u->backlog)
				u->backlog_tail = &u->backlog;
			*tail = slot_get_locked(u, req);
			tail = &(*tail)->next;
		}
		if (!u->backlog)
			pthread_cond_broadcast(&u->space);
		pthread_mutex_unlock(&u->lock);

		while (batch) {
			struct aio_slot *slot = batch;
			int err;

			batch = slot->next;
			slot->next = NULL;
			err = slot_issue(u, slot);
			if (err) {
				slot_finish(u, slot, err, 0, done);
				freed = true;
			}
		}
		if (!freed)
			return;
	}
}

static void aio_submit(struct iol_dev *dev, struct iol_req *req)
{
	struct aio_dev *u = dev->be;
	struct aio_slot *slot;
	struct req_list done;
	int err;

	req_list_init(&done);
	pthread_mutex_lock(&u->lock);
	u->pending++;
	if (on_reaper(u)) {
		/* From a completion callback: never wait (only we can free a slot). */
		if (u->backlog || !u->free) {
			req->be_next = NULL;
			*u->backlog_tail = req;
			u->backlog_tail = &req->be_next;
			pthread_mutex_unlock(&u->lock);
			return;
		}
	} else {
		while (u->backlog || !u->free)
			pthread_cond_wait(&u->space, &u->lock);
	}
	slot = slot_get_locked(u, req);
	pthread_mutex_unlock(&u->lock);

	err = slot_issue(u, slot);
	if (err) {
		slot_finish(u, slot, err, 0, &done);
		kick(u, &done); /* the freed slot may be owed to the backlog */
	}
	report_list(u, &done);
}

static void *aio_reaper(void *arg)
{
	struct aio_dev *u = arg;
	bool stop = false;

	while (!stop) {
		struct io_event ev[AIO_BATCH];
		struct timespec ts = { .tv_sec = 1 };
		struct req_list done;
		int n;

		pthread_mutex_lock(&u->lock);
		if (u->retry)
			ts = (struct timespec){ .tv_nsec = 1000000 };
		pthread_mutex_unlock(&u->lock);

		n = io_getevents(u->ctx, 1, AIO_BATCH, ev, &ts);
		if (n < 0 && n != -EINTR)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);

		req_list_init(&done);
		pthread_mutex_lock(&u->lock);
		for (int i = 0; i < n; i++) {
			struct aio_slot *slot = ev[i].data;
			long res = (long)ev[i].res;
			struct iol_req *req;

			if (ev[i].obj == &u->wake_cb) {
				stop = true;
				continue;
			}
			req = slot->req;
			slot_put_locked(u, slot);
			if (res < 0)
				req_list_add(&done, req, (int)res, 0);
			else
				req_list_add(&done, req, 0, (size_t)res);
		}
		if (u->stopping && !u->pending)
			stop = true;
		pthread_mutex_unlock(&u->lock);

		kick(u, &done);
		report_list(u, &done);
	}
	return NULL;
}

static int aio_probe(void)
{
	io_context_t ctx = 0;
	int err = io_setup(4, &ctx);

	if (err)
		return err;
	io_destroy(ctx);
	return 0;
}

static void aio_free(struct aio_dev *u)
{
	pthread_cond_destroy(&u->idle);
	pthread_cond_destroy(&u->space);
	pthread_mutex_destroy(&u->lock);
	if (u->wake_fd >= 0)
		close(u->wake_fd);
	free(u->slots);
	free(u);
}

static int aio_open(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts)
{
	unsigned nr = dev->queue_depth ? dev->queue_depth : 1;
	struct aio_dev *u;
	sigset_t all, old;
	int err;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = dev->fd;
	u->wake_fd = -1;
	u->backlog_tail = &u->backlog;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->space, NULL);
	pthread_cond_init(&u->idle, NULL);
	u->slots = calloc(nr, sizeof(*u->slots));
	if (!u->slots) {
		aio_free(u);
		return -ENOMEM;
	}
	u->nr_slots = nr;
	for (unsigned i = nr; i-- > 0;)
		slot_put_locked(u, &u->slots[i]);

	u->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->wake_fd < 0) {
		err = -errno;
		iol_set_errmsg(opts, "%s: eventfd: %s", path, strerror(errno));
		aio_free(u);
		return err;
	}
	err = io_setup((int)nr, &u->ctx);
	if (err) {
		iol_set_errmsg(opts, "%s: io_setup(%u): %s%s", path, nr, strerror(-err),
			       err == -EAGAIN ? " (see /proc/sys/fs/aio-max-nr)" : "");
		aio_free(u);
		return err;
	}

	/* The reaper inherits a full signal mask: application signals stay off it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&u->reaper, NULL, aio_reaper, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		iol_set_errmsg(opts, "%s: aio completion thread: %s", path, strerror(-err));
		io_destroy(u->ctx);
		aio_free(u);
		return err;
	}
	pthread_setname_np(u->reaper, "delog-aio");
	dev->be = u;
	return 0;
}

static void aio_close(struct iol_dev *dev)
{
	struct aio_dev *u = dev->be;
	struct iocb *cb;

	if (!u)
		return;
	cb = &u->wake_cb;
	pthread_mutex_lock(&u->lock);
	while (u->pending)
		pthread_cond_wait(&u->idle, &u->lock);
	u->stopping = true;
	pthread_mutex_unlock(&u->lock);

	/* Prompt wake-up; the reaper's one-second timeout covers a refusal. */
	(void)eventfd_write(u->wake_fd, 1);
	io_prep_poll(cb, u->wake_fd, POLLIN);
	(void)io_submit(u->ctx, 1, &cb);

	pthread_join(u->reaper, NULL);
	io_destroy(u->ctx);
	aio_free(u);
	dev->be = NULL;
}

const struct iol_ops iol_aio_ops = {
	.needs_fd = true,
	.gate_flushes = true,
	.probe = aio_probe,
	.open = aio_open,
	.submit = aio_submit,
	.run = iol_fd_run,
	.close = aio_close,
};
