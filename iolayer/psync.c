/*
 * psync.c - the synchronous backend: preadv2/pwritev2/fdatasync run by a small pool of
 * worker threads, which makes it asynchronous to its callers like the others.  The same
 * syscall path, iol_fd_run, is every descriptor backend's ->run: iol_submit_wait performs
 * its request on the waiting thread with it (submit.c, IO3).
 *
 * Mapping (docs/DESIGN.md section 2):
 *   READ      preadv2(fd, vec, off, 0)
 *   WRITE     pwritev2(fd, vec, off, 0)
 *   FUA       pwritev2(..., RWF_DSYNC): on a device with native FUA only, a FUA write
 *   FLUSH     fdatasync(fd): the flush gate's flushes (submit.c IO4, flush.c), run through
 *             ->run (iol_fd_run) on a flusher thread or an iol_submit_wait caller
 *   PREFLUSH  never seen: the core waits for a gated flush, then submits the write
 *
 * Ordering: a worker takes requests from one FIFO; with several workers, requests run
 * concurrently and may complete in any order, exactly the freedom the other backends
 * have.  A flush iol_fd_run performs starts after the gate's generation was armed, so it
 * covers every write that had completed by then, whatever is queued or in flight beside
 * it, on this backend's workers or in another backend's ring: to the kernel they are all
 * just concurrent I/O on one descriptor, and nothing orders requests that were in flight
 * together.
 *
 * Faults (iol_dev_fault_add): the syscall table below consults the plan only on a psync
 * device; on uring and aio iol_req_done does, after the op ran, as their completion path
 * does (submit.c), so each op is counted once and fails the same way on either path.
 *
 * Short transfers are continued from where they stopped (O_DIRECT rarely returns short,
 * but a signal or a device limit may split one); a transfer that moves nothing more is
 * reported short, which the core turns into -EIO.  EINTR is retried.
 *
 * Completion callbacks run on a worker with no lock held, so they may submit again (or,
 * through iol_fd_run, on the thread in iol_submit_wait, with no lock held either).
 * Close waits until the queue is empty and every worker is idle, then joins them.
 */
#include "io_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PSYNC_MAX_WORKERS 16

struct psync {
	pthread_mutex_t lock;
	pthread_cond_t work;         /* queue became non-empty, or stopping */
	pthread_cond_t idle;         /* busy dropped to zero with the queue empty */
	struct iol_req *head, *tail; /* Locked: FIFO of submitted requests */
	unsigned busy;               /* Locked: requests taken by workers, not yet done */
	bool stop;                   /* Locked: workers exit once the queue is empty */
	unsigned nr_workers;
	pthread_t workers[PSYNC_MAX_WORKERS];
};

/*
 * The syscall table: every syscall the backend makes goes through these, so the test
 * fault plan (iol_dev_fault_add) can fail one before it reaches the kernel, exactly as
 * the kernel would report a device error (-EIO and nothing done).  Only on a psync
 * device (ops->faults_in_syscalls): uring and aio devices, whose ->run comes through
 * here too, have the plan applied in iol_req_done.
 */
static int sys_fault(struct iol_dev *dev, enum iol_op op)
{
	return dev->ops->faults_in_syscalls ? iol_fault_check(dev, op) : 0;
}

static ssize_t sys_pwritev2(struct iol_dev *dev, const struct iovec *v, int n, off_t off, int rwf)
{
	int err = sys_fault(dev, IOL_OP_WRITE);

	if (err) {
		errno = -err;
		return -1;
	}
	return pwritev2(dev->fd, v, n, off, rwf);
}

static ssize_t sys_preadv2(struct iol_dev *dev, const struct iovec *v, int n, off_t off)
{
	int err = sys_fault(dev, IOL_OP_READ);

	if (err) {
		errno = -err;
		return -1;
	}
	return preadv2(dev->fd, v, n, off, 0);
}

static int sys_fdatasync(struct iol_dev *dev)
{
	int err = sys_fault(dev, IOL_OP_FLUSH);

	if (err) {
		errno = -err;
		return -1;
	}
	return fdatasync(dev->fd);
}

/* Run a vectored transfer to the end, continuing after short results. */
static int rw_full(struct iol_dev *dev, bool write, struct iovec *vec, unsigned nr, uint64_t off,
		   int rwf, size_t *moved)
{
	struct iovec local[IOL_MAX_SEGS_LIMIT];
	struct iovec *v = vec;
	unsigned n = nr;

	*moved = 0;
	while (n) {
		ssize_t r = write ? sys_pwritev2(dev, v, (int)n, (off_t)(off + *moved), rwf) :
				    sys_preadv2(dev, v, (int)n, (off_t)(off + *moved));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return 0; /* short: reported by the core */
		*moved += (size_t)r;
		/* Advance over what moved; copy the iovecs so the caller's stay intact. */
		if (v == vec) {
			if (n > IOL_MAX_SEGS_LIMIT)
				return 0;
			memcpy(local, vec, n * sizeof(*vec));
			v = local;
		}
		while (n && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n && r) {
			v->iov_base = (char *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
	return 0;
}

static int do_fdatasync(struct iol_dev *dev)
{
	while (sys_fdatasync(dev) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

void iol_fd_run(struct iol_dev *dev, struct iol_req *req)
{
	enum iol_op op = iol_opf_op(req->opf);
	size_t moved = 0;
	int err = 0;

	switch (op) {
	case IOL_OP_FLUSH:
		err = do_fdatasync(dev);
		break;
	case IOL_OP_READ:
		err = rw_full(dev, false, req->vec, req->nr_segs, req->off, 0, &moved);
		break;
	case IOL_OP_WRITE:
		/* IO4: no PREFLUSH here; FUA only on a device with native FUA. */
		err = rw_full(dev, true, req->vec, req->nr_segs, req->off,
			      iol_opf_has(req->opf, IOL_FUA) ? RWF_DSYNC : 0, &moved);
		break;
	}
	iol_req_done(req, err, moved);
}

static void *worker(void *arg)
{
	struct iol_dev *dev = arg;
	struct psync *ps = dev->be;

	pthread_mutex_lock(&ps->lock);
	for (;;) {
		struct iol_req *req;

		while (!ps->head && !ps->stop)
			pthread_cond_wait(&ps->work, &ps->lock);
		if (!ps->head)
			break;
		req = ps->head;
		ps->head = req->be_next;
		if (!ps->head)
			ps->tail = NULL;
		ps->busy++;
		pthread_mutex_unlock(&ps->lock);

		iol_fd_run(dev, req);

		pthread_mutex_lock(&ps->lock);
		if (--ps->busy == 0 && !ps->head)
			pthread_cond_broadcast(&ps->idle);
	}
	pthread_mutex_unlock(&ps->lock);
	return NULL;
}

static int psync_probe(void)
{
	return 0;
}

static void psync_close(struct iol_dev *dev);

static int psync_open(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts)
{
	struct psync *ps = calloc(1, sizeof(*ps));
	unsigned n = dev->queue_depth < PSYNC_MAX_WORKERS ? dev->queue_depth : PSYNC_MAX_WORKERS;

	if (!ps)
		return -ENOMEM;
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->work, NULL);
	pthread_cond_init(&ps->idle, NULL);
	dev->be = ps;
	for (unsigned i = 0; i < (n ? n : 1); i++) {
		int err = pthread_create(&ps->workers[i], NULL, worker, dev);

		if (err) {
			iol_set_errmsg(opts, "%s: cannot start psync worker: %s", path,
				       strerror(err));
			psync_close(dev);
			return -err;
		}
		ps->nr_workers++;
	}
	return 0;
}

static void psync_submit(struct iol_dev *dev, struct iol_req *req)
{
	struct psync *ps = dev->be;

	req->be_next = NULL;
	pthread_mutex_lock(&ps->lock);
	if (ps->tail)
		ps->tail->be_next = req;
	else
		ps->head = req;
	ps->tail = req;
	pthread_cond_signal(&ps->work);
	pthread_mutex_unlock(&ps->lock);
}

static void psync_close(struct iol_dev *dev)
{
	struct psync *ps = dev->be;

	if (!ps)
		return;
	pthread_mutex_lock(&ps->lock);
	while (ps->head || ps->busy)
		pthread_cond_wait(&ps->idle, &ps->lock);
	ps->stop = true;
	pthread_cond_broadcast(&ps->work);
	pthread_mutex_unlock(&ps->lock);
	for (unsigned i = 0; i < ps->nr_workers; i++)
		pthread_join(ps->workers[i], NULL);
	pthread_mutex_destroy(&ps->lock);
	pthread_cond_destroy(&ps->work);
	pthread_cond_destroy(&ps->idle);
	free(ps);
	dev->be = NULL;
}

const struct iol_ops iol_psync_ops = {
	.needs_fd = true,
	.gate_flushes = true,
	.faults_in_syscalls = true,
	.probe = psync_probe,
	.open = psync_open,
	.submit = psync_submit,
	.run = iol_fd_run,
	.close = psync_close,
};
