/*
 * io_private.h - what the iolayer core (io.c, dev.c) shares with its backends
 * (psync.c, uring.c, aio.c, sim.c).  Never included outside iolayer/.
 *
 * One ops table per backend, picked at io_dev_open (cf. Redis ae_epoll.c / ae_kqueue.c
 * behind ae.c, SQLite's sqlite3_io_methods).  The core validates every request before it
 * reaches ->submit (op and flags, alignment, bounds), counts it, and owns chaining; a
 * backend only moves bytes and reports each request exactly once through io_req_done().
 *
 * Backend contract:
 *   ->probe()   cheap runtime check that the backend works on this machine (e.g. io_uring
 *               may be compiled in but disabled by the kernel or a seccomp filter).
 *   ->open()    dev->fd is open (O_DIRECT) and dev->geom filled, except for backends with
 *               needs_fd == false (sim), which fill dev->geom themselves.
 *   ->submit()  takes a validated request; must not fail synchronously: errors are
 *               reported through io_req_done().  May block while the queue is full.
 *               PREFLUSH means: flush, wait for it, then issue the write.  FUA means:
 *               the write completes only once stable (RWF_DSYNC on real files).
 *   ->run()     optional: perform a validated request on the calling thread and report
 *               it through io_req_done() before returning.  Used by io_submit_wait
 *               only (the caller blocks until the request is done anyway), so the lone
 *               waiter makes the syscalls itself instead of handing the request to a
 *               backend thread and being woken by it (two to four context switches per
 *               request, and an io-wq worker for io_uring's FSYNC).  The descriptor
 *               backends share io_fd_run (psync.c); sim has none (its latency model,
 *               delivery control and trace need every request on its own path).
 *   ->close()   waits until every submitted request has completed, then frees.
 */
#ifndef DELOG_IO_PRIVATE_H
#define DELOG_IO_PRIVATE_H

#include "io.h"

#include <pthread.h>

/* Hard ceiling on segments per request (the kernel's UIO_MAXIOV / IOV_MAX). */
#define IO_MAX_SEGS_LIMIT 1024

struct io_ops {
	const char *name;
	bool needs_fd;
	int (*probe)(void);
	int (*open)(struct io_dev *dev, const char *path, const struct io_dev_opts *opts);
	void (*submit)(struct io_dev *dev, struct io_req *req);
	void (*run)(struct io_dev *dev, struct io_req *req);
	void (*close)(struct io_dev *dev);
};

struct io_dev {
	const struct io_ops *ops;
	int fd;                     /* O_DIRECT descriptor; -1 for sim */
	char *path;                 /* copy of the path, or NULL */
	struct io_geom geom;
	unsigned queue_depth;       /* backend's in-flight limit */
	unsigned max_segs;          /* per-request segment limit */
	bool read_only;
	atomic_bool closing;        /* set by io_dev_close; io_submit then refuses */
	struct {
		atomic_uint_fast64_t reads, writes, flushes, preflushes, fua_writes;
		atomic_uint_fast64_t bytes_read, bytes_written, errors;
	} cnt;
	void *be;                   /* backend state */
	struct {
		pthread_mutex_t lock;
		atomic_uint nr;         /* entries armed (fast path: 0) */
		struct io_fault f[IO_FAULTS_MAX];
		uint64_t base[IO_FAULTS_MAX]; /* op count of f[i].op when it was added */
		uint64_t seen[3];       /* ops seen per type (READ, WRITE, FLUSH) */
	} faults;
};

extern const struct io_ops io_psync_ops;
#ifdef DELOG_HAVE_URING
extern const struct io_ops io_uring_ops;
#endif
#ifdef DELOG_HAVE_AIO
extern const struct io_ops io_aio_ops;
#endif
extern const struct io_ops io_sim_ops;

/*
 * Report completion of @req by its backend: @err is 0 or a negative errno, @bytes what
 * moved.  A read or write that moved fewer bytes than asked with err == 0 becomes -EIO.
 * Runs the chain and the request's end_io; @req must not be touched afterwards.
 */
void io_req_done(struct io_req *req, int err, size_t bytes);

/*
 * Perform @req on the calling thread with preadv2 / pwritev2 / fdatasync on dev->fd
 * (the psync mapping: PREFLUSH is fdatasync then the write, FUA is RWF_DSYNC) and
 * report it through io_req_done() before returning.  The ->run of psync, uring and aio.
 * The fault plan is consulted where the device's backend consults it: in the syscall
 * table for psync, in io_req_done for uring and aio, so a request fails the same way on
 * either path.
 */
void io_fd_run(struct io_dev *dev, struct io_req *req);

/* Count one op of type @op against the fault plan (io_dev_fault_add): 0, or the error
 * an armed entry injects into it.  Cheap when nothing is armed. */
int io_fault_check(struct io_dev *dev, enum io_op op);

/* Monotonic clock in nanoseconds. */
uint64_t io_now_ns(void);

/* Write a printf-style message into opts->errmsg (if any). */
void io_set_errmsg(const struct io_dev_opts *opts, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
