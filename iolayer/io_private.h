/*
 * io_private.h - what the iolayer core (req.c, submit.c, dev.c, fault.c, flush.c) shares
 * with its backends (psync.c, uring.c, aio.c, sim.c).  Never included outside iolayer/.
 *
 * One ops table per backend (cf. Redis ae_epoll.c / ae_kqueue.c behind ae.c, SQLite's
 * sqlite3_io_methods), picked at iol_dev_open by name from dev.c's one list of backends.
 * What the core must know about a backend is a field of its table (needs_fd,
 * faults_in_syscalls, run), never a test of which table it is.  The core validates every
 * request before it reaches ->submit (op and flags, alignment, bounds), counts it, and
 * owns chaining; a backend only moves bytes and reports each request exactly once
 * through iol_req_done().
 *
 * Backend contract:
 *   ->probe()   cheap runtime check that the backend works on this machine (e.g. io_uring
 *               may be compiled in but disabled by the kernel or a seccomp filter).
 *   ->open()    dev->fd is open (O_DIRECT) and dev->geom filled, except for backends with
 *               needs_fd == false (sim), which fill dev->geom themselves.
 *   ->submit()  takes a validated request; must not fail synchronously: errors are
 *               reported through iol_req_done().  May block while the queue is full.
 *               PREFLUSH means: flush, wait for it, then issue the write.  FUA means:
 *               the write completes only once stable (RWF_DSYNC on real files).
 *               A backend with gate_flushes is spared both (IO4): its ->submit sees
 *               reads and writes only (FUA only on a device with native FUA), and its
 *               ->run also the flush gate's flushes; the descriptor backends have no
 *               PREFLUSH or flush path of their own.
 *   ->run()     optional: perform a validated request on the calling thread and report
 *               it through iol_req_done() before returning.  Used by iol_submit_wait
 *               only (the caller blocks until the request is done anyway), so the lone
 *               waiter makes the syscalls itself instead of handing the request to a
 *               backend thread and being woken by it (two to four context switches per
 *               request, and an io-wq worker for io_uring's FSYNC).  The descriptor
 *               backends share iol_fd_run (psync.c); sim has none (its latency model,
 *               delivery control and trace need every request on its own path).
 *   ->quiesce() optional: iol_dev_close has begun (the core refuses new requests) and
 *               waits until every request it accepted has finished (IO5).  From now on
 *               the backend must complete what is in flight, and what the core still
 *               hands it (the flush gate's flushes and a PREFLUSH rider's write), without
 *               help from the caller.  sim's hold mode needs it: nothing is delivered
 *               there unless someone calls iol_sim_deliver.
 *   ->close()   runs once every accepted request has finished (IO5): waits until its
 *               own threads are out of their last completion, then frees.
 */
#ifndef DELOG_IO_PRIVATE_H
#define DELOG_IO_PRIVATE_H

#include "io.h"

#include <pthread.h>

/* Hard ceiling on segments per request (the kernel's UIO_MAXIOV / IOV_MAX). */
#define IOL_MAX_SEGS_LIMIT 1024

struct iol_ops {
	/* The backend runs on an O_DIRECT descriptor that the core opens (uring, aio,
	 * psync); sim does not, and fills dev->geom itself. */
	bool needs_fd;
	/* Where the test fault plan (iol_dev_fault_add, descriptor backends only) is
	 * applied: true, in the backend's own syscalls before they reach the kernel (psync's
	 * syscall table); false, by iol_req_done on completion (uring, aio). */
	bool faults_in_syscalls;
	/* The core takes this backend's flushes through the flush gate (flush.c): the
	 * backend sees no PREFLUSH write, no caller's flush request and, on a device
	 * without native FUA, no FUA write; only the gate's own flushes.  Set where the
	 * kernel would merge concurrent flushes unseen (the descriptor backends). */
	bool gate_flushes;
	int (*probe)(void);
	int (*open)(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts);
	void (*submit)(struct iol_dev *dev, struct iol_req *req);
	void (*run)(struct iol_dev *dev, struct iol_req *req);
	void (*quiesce)(struct iol_dev *dev);
	void (*close)(struct iol_dev *dev);
};

/* The flush gate of one device (flush.c). */
#define IOL_GATE_FLUSHERS 2
struct iol_gate {
	pthread_mutex_t lock;
	pthread_cond_t work;        /* riders pending and no generation running, or stopping */
	pthread_cond_t idle;        /* nothing running or pending */
	bool running;               /* a generation is in flight (FG2) */
	bool stop;                  /* close: the flushers leave once nothing is pending */
	struct iol_req *inline_req; /* running on its iol_submit_wait thread, serving only it
				     * (FG4); NULL: on a flusher */
	unsigned continuing;        /* generations whose riders are being continued */
	struct iol_req *cur;        /* riders of the running generation */
	struct iol_req *pend;       /* riders of the next one (FG1), FIFO through gate_next */
	struct iol_req **pend_tail;
	struct iol_req *handoff; /* riders of ended generations, for the other flusher */
	struct iol_req **handoff_tail;
	struct iol_req req; /* the gate's own flush, reused (FG5) */
	pthread_t flusher[IOL_GATE_FLUSHERS];
	unsigned nr_flushers;
};

/* Stages a request waits at in the gate. */
enum iol_gate_stage {
	IOL_GATE_FLUSH = 1, /* the caller's flush request */
	IOL_GATE_PRE,       /* a PREFLUSH write: the flush first, then the write */
	IOL_GATE_POST,      /* a FUA write carried out as write + flush: the write is done */
};

struct iol_dev {
	const struct iol_ops *ops;
	int fd;      /* O_DIRECT descriptor; -1 for sim */
	int lock_fd; /* the writer lock's own descriptor (lock.c LK1); -1 for a reader, sim */
	char *path;  /* copy of the path, or NULL */
	struct iol_geom geom;
	unsigned queue_depth; /* backend's in-flight limit */
	unsigned max_segs;    /* per-request segment limit */
	bool read_only;
	/* ->run may be used (IO3, FG4, FG5): the backend has one and its open did not
	 * decline it (sim without iol_sim_opts.inline_run).  Set by open, then fixed. */
	bool run;
	atomic_bool closing; /* set by iol_dev_close; iol_submit then refuses */
	/* Requests accepted and not yet finished (IO5): the caller's, counted when submit
	 * accepts them, and the flush gate's own flushes, counted when armed; each drops its
	 * count once its end_io returned.  iol_dev_close waits for 0 on live_cond. */
	atomic_uint_fast64_t live;
	pthread_mutex_t live_lock;
	pthread_cond_t live_cond;
	struct {
		atomic_uint_fast64_t reads, writes, flushes, preflushes, fua_writes, dev_flushes;
		atomic_uint_fast64_t gate_inline, gate_failed;
		atomic_uint_fast64_t bytes_read, bytes_written, errors;
	} cnt;
	void *be;             /* backend state */
	bool gated;           /* flushes go through the gate: ops->gate_flushes or opts */
	bool gate_fua;        /* and FUA writes too: gated and no native FUA, or opts */
	struct iol_gate gate; /* used when gated */
	struct {
		pthread_mutex_t lock;
		atomic_uint nr; /* entries armed (fast path: 0) */
		struct iol_fault f[IOL_FAULTS_MAX];
		uint64_t base[IOL_FAULTS_MAX]; /* op count of f[i].op when it was added */
		uint64_t seen[3];              /* ops seen per type (READ, WRITE, FLUSH) */
	} faults;
};

extern const struct iol_ops iol_psync_ops;
#ifdef DELOG_HAVE_URING
extern const struct iol_ops iol_uring_ops;
#endif
#ifdef DELOG_HAVE_AIO
extern const struct iol_ops iol_aio_ops;
#endif
extern const struct iol_ops iol_sim_ops;

/* ---- the request (req.c) ---- */

/* A known op, with PREFLUSH/FUA only on a write. */
bool iol_opf_valid(iol_opf_t opf);
/* Keep @err as @req's status unless it holds an error already (RQ2). */
void iol_req_set_status(struct iol_req *req, int err);
/* Drop one reference on @req carrying @err; at the last one it finishes: its end_io
 * runs, or a chained request drops one on its chain_next in turn (RQ1, RQ2). */
void iol_req_put(struct iol_req *req, int err);

/*
 * Finish @req with @err: put back the caller's opf, count an error, and drop its
 * reference (its end_io runs, or its chain moves on).  iol_req_done's last step; the
 * flush gate's for requests it served without a backend op of their own.
 */
void iol_req_finish(struct iol_req *req, int err);

/* Count a request the core hands to the backend outside iol_submit (the flush gate's
 * own flush): it finishes through iol_req_finish like any other (IO5). */
void iol_dev_live_get(struct iol_dev *dev);

/* ---- submission and completion (submit.c) ---- */

/*
 * Report completion of @req by its backend: @err is 0 or a negative errno, @bytes what
 * moved.  A read or write that moved fewer bytes than asked with err == 0 becomes -EIO.
 * Runs the chain and the request's end_io; @req must not be touched afterwards.
 */
void iol_req_done(struct iol_req *req, int err, size_t bytes);

/*
 * Flush gate (flush.c).  iol_gate_join: @req waits at @stage (enum iol_gate_stage) for
 * the next flush generation, or, with @here on its iol_submit_wait thread and the gate
 * idle, runs a generation of its own there (FG4); it goes on (its write submitted, or
 * finished) when the generation ends.  init/destroy with the device; iol_dev_close
 * destroys it once every request finished, before the backend closes (FG6).
 */
void iol_gate_join(struct iol_req *req, int stage, bool here);
int iol_gate_init(struct iol_dev *dev);
/* Wait for the continuations still unwinding, stop the flusher threads, free. */
void iol_gate_destroy(struct iol_dev *dev);

/*
 * Perform @req on the calling thread with preadv2 / pwritev2 / fdatasync on dev->fd
 * (the psync mapping: FLUSH is fdatasync, FUA is RWF_DSYNC; no PREFLUSH reaches it, IO4) and
 * report it through iol_req_done() before returning.  The ->run of psync, uring and aio.
 * The fault plan is consulted where the device's backend consults it: in the syscall
 * table for psync, in iol_req_done for uring and aio, so a request fails the same way on
 * either path.
 */
void iol_fd_run(struct iol_dev *dev, struct iol_req *req);

/* Count one op of type @op against the fault plan (fault.c, armed by iol_dev_fault_add):
 * 0, or the error an armed entry injects into it.  Cheap when nothing is armed. */
int iol_fault_check(struct iol_dev *dev, enum iol_op op);

/* Monotonic clock in nanoseconds (submit.c). */
uint64_t iol_now_ns(void);

/* Write a printf-style message into opts->errmsg (if any) (submit.c). */
/* lock.c: take the writer lock of @dev (its fd and geometry known) or say why not
 * (-EBUSY: another writer holds it); drop it (once every write has finished). */
int iol_lock_take(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts);
void iol_lock_drop(struct iol_dev *dev);

void iol_set_errmsg(const struct iol_dev_opts *opts, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
