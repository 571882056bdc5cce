/*
 * io.h - the iolayer's request API, shared by journal/ and engine/ (not installed).
 *
 * Modelled on the Linux block layer: a request (struct iol_req, cf. struct bio) is
 * initialised against a device with its segment capacity and its operation-and-flags word
 * up front (iol_req_init ~ bio_alloc(bdev, nr_vecs, opf, gfp)); segments are added
 * (iol_req_add ~ bio_add_page); requests can be chained (iol_req_chain ~ bio_chain) and
 * submitted asynchronously (iol_submit ~ submit_bio) or synchronously (iol_submit_wait ~
 * submit_bio_wait).
 *
 * Operations and flags are separate types.  enum iol_op names what a request does; iol_opf_t
 * is op | IOL_PREFLUSH | IOL_FUA packed into a one-member struct, so passing a bare enum
 * iol_op where an iol_opf_t belongs is a compile error, not a silent bug (the kernel gets
 * the same from sparse's __bitwise on blk_opf_t).  Build one with IOL_OPF(op, flags).
 *
 * Semantics every backend implements (over O_DIRECT: docs/DESIGN.md section 2):
 *   IOL_OP_READ    fill the segments from the device at req->off.
 *   IOL_OP_WRITE   write the segments at req->off.  Completion means the device has the
 *                 data, which may still sit in a volatile write cache.
 *   IOL_OP_FLUSH   make every write that *completed* before the flush was submitted stable.
 *                 Writes still in flight when it is submitted are not covered.
 *   IOL_PREFLUSH   (writes only) a flush is performed and completes before the write is
 *                 issued; so everything that completed before this request was submitted
 *                 is stable before this write's data can reach the device.
 *   IOL_FUA        (writes only) the request completes only once its own data is stable.
 *                 It says nothing about other writes.
 *
 * Completion: every accepted request completes exactly once; its end_io callback runs
 * then, on a backend thread (or, for requests rejected in flight, possibly on the
 * submitting thread before iol_submit returns).  iol_submit_wait is the exception: on the
 * descriptor backends (psync, uring, aio) it performs its request on the calling thread
 * (pwritev2 / preadv2 / fdatasync), so its own completion happens there; requests
 * chained into it still complete wherever they run.  A request either moves all its bytes or
 * fails: req->status is 0 or a negative errno; a short transfer is reported as -EIO with
 * req->bytes saying how much moved.  Buffers must stay untouched until completion.
 *
 * Chaining (iol_req_chain(prev, next)): prev's completion funnels into next; next's
 * end_io runs only after next *and every request chained into it* have completed, and
 * next's status is the first error of any of them.  So one waits on the LAST request of
 * a chain.  (XFS commit 488ca3d8d088 fixed exactly this direction in xfs_rw_bdev: waiting
 * on the first bio of a chain covered only part of the I/O.)
 *
 * Thread safety: iol_submit, iol_submit_wait and iol_rw_* may be called from any number of
 * threads on one device at once.  A single request is owned by one thread until it is
 * submitted and by the iolayer until its completion runs.  iol_dev_close must not race
 * with submissions; it waits for requests in flight.
 */
#ifndef DELOG_IO_H
#define DELOG_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum iol_op {
	IOL_OP_READ = 0,
	IOL_OP_WRITE = 1,
	IOL_OP_FLUSH = 2,
};

/* Flag bits above the op byte. */
#define IOL_OP_MASK 0xffu
#define IOL_PREFLUSH (1u << 8)
#define IOL_FUA (1u << 9)
#define IOL_FLAG_MASK (IOL_PREFLUSH | IOL_FUA)

/* op | flags; a distinct type, so an enum iol_op cannot be passed for it. */
typedef struct iol_opf {
	uint32_t bits;
} iol_opf_t;

#define IOL_OPF(op, flags) ((iol_opf_t){ .bits = (uint32_t)(op) | (uint32_t)(flags) })

static inline enum iol_op iol_opf_op(iol_opf_t opf)
{
	return (enum iol_op)(opf.bits & IOL_OP_MASK);
}
static inline bool iol_opf_has(iol_opf_t opf, uint32_t flag)
{
	return (opf.bits & flag) != 0;
}

struct iol_dev;
struct iol_req;

typedef void (*iol_end_fn)(struct iol_req *req);

/* Segments kept inside the request; more are allocated by iol_req_init. */
#define IOL_INLINE_SEGS 4
/* Default per-request segment limit (cf. BIO_MAX_VECS); iol_max_segs() clamps to it. */
#define IOL_MAX_SEGS_DEFAULT 256
/* Bytes per segment used by iol_rw_submit when splitting a buffer (one page, as a bio_vec). */
#define IOL_SEG_BYTES 4096u

struct iol_req {
	struct iol_dev *dev; /* set by iol_req_init */
	iol_opf_t opf;       /* set by iol_req_init */
	uint64_t off;        /* byte offset on the device; caller sets before submit */
	struct iovec *vec;   /* segment array (inline_vec or heap) */
	unsigned nr_segs;    /* segments in use */
	unsigned max_segs;   /* capacity of vec */
	iol_end_fn end_io;   /* completion callback; NULL allowed; owned by iol_req_chain
	                       * for prev */
	void *priv;          /* caller's cookie */

	/* Results, valid once end_io runs. */
	atomic_int status; /* 0 or first negative errno (own or from a chained request) */
	size_t bytes;      /* bytes this request itself moved */

	/* Chain bookkeeping (iolayer core only). */
	struct iol_req *chain_next; /* request this one's completion funnels into */
	atomic_int remaining;       /* 1 + chained requests not yet completed */

	/* Backend bookkeeping: a list link and scratch words, owned by the backend while the
	 * request is in flight. */
	struct iol_req *be_next;
	uint64_t be_u64[4];
	void *be_ptr[2];

	/* Flush gate bookkeeping (iolayer core only, flush.c): while the core carries out a
	 * request's flags itself, opf holds what the backend is to do and gate_opf the
	 * caller's word, put back before end_io runs. */
	iol_opf_t gate_opf;
	struct iol_req *gate_next;
	int gate_stage;
	int gate_err;   /* the result of the generation that served it (inline or handed over) */
	bool gate_post; /* a flush after the write is still owed (FUA without native FUA) */
	bool gate_here; /* submitted by iol_submit_wait on the backend's ->run path */

	struct iovec inline_vec[IOL_INLINE_SEGS];
};

/*
 * Initialise @req for @dev with room for @max_segs segments and the operation-and-flags
 * word @opf.  Returns 0, -EINVAL (bad op/flag combination, flags on a read or flush,
 * max_segs above iol_max_segs(dev, max_segs)), or -ENOMEM.  Pair with iol_req_release.
 */
int iol_req_init(struct iol_req *req, struct iol_dev *dev, unsigned max_segs, iol_opf_t opf);
/* Free what iol_req_init allocated (not the request itself). */
void iol_req_release(struct iol_req *req);

/* Append a segment.  Returns 0, or -ENOSPC when the request has max_segs segments. */
int iol_req_add(struct iol_req *req, void *buf, size_t len);
/* Total bytes in the request's segments. */
size_t iol_req_len(const struct iol_req *req);

/* Clamp a segment count to what one request on @dev may carry. */
unsigned iol_max_segs(const struct iol_dev *dev, unsigned nr_segs);

/*
 * Chain @prev into @next: @next completes only after @prev (and everything chained into
 * @prev) has, and reports the first error.  @prev must have no end_io of its own; it is
 * finished (not freed) when it completes.  Chain before submitting either.
 */
void iol_req_chain(struct iol_req *prev, struct iol_req *next);

/*
 * Submit asynchronously.  Returns 0 when accepted (end_io will run exactly once), or a
 * negative errno when rejected up front: -EINVAL for a misaligned buffer, offset or
 * length, a range past the device end, or a zero-length read/write; -ESHUTDOWN after
 * iol_dev_close started.  A rejected request's own end_io does not run, but if it is chained
 * into another request the error is passed down the chain, so a waiter on the end of
 * the chain still wakes and sees it.
 */
int iol_submit(struct iol_req *req);

/* Submit and wait for completion (of the whole chain ending in @req).  Returns req->status
 * or the submission error.  @req->end_io is used internally and must be NULL. */
int iol_submit_wait(struct iol_req *req);

/*
 * Chained multi-segment I/O over one contiguous buffer: split [buf, buf+len) into
 * IOL_SEG_BYTES segments, pack at most iol_max_segs() of them per request, chain each
 * request into the next and submit each as soon as it is full (so they are all in flight
 * together); @end runs once, after every piece has completed, with the final status.
 * Returns 0 or a negative errno (nothing submitted, @end not called).
 * @opf applies to every piece (IOL_PREFLUSH only to the first, IOL_FUA to each).
 */
typedef void (*iol_rw_end_fn)(void *priv, int status);
int iol_rw_submit(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len,
		  iol_rw_end_fn end, void *priv);
/* Synchronous iol_rw_submit; returns the final status.  @nr_reqs (may be NULL) receives how
 * many requests the buffer was split into.  A transfer that fits one request, on a device
 * with a ->run, is performed on the calling thread (submit.c IO3). */
int iol_rw_wait(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len,
		unsigned *nr_reqs);

/* ---- devices ---------------------------------------------------------------------- */

struct iol_sim_opts; /* io_sim.h */

struct iol_dev_opts {
	size_t size;          /* must be sizeof(struct iol_dev_opts) */
	const char *backend;  /* "uring", "aio", "psync", "sim"; NULL or "auto": best available */
	unsigned queue_depth; /* requests in flight per device; 0: 128 */
	unsigned max_segs;    /* per-request segment limit; 0: IOL_MAX_SEGS_DEFAULT */
	bool read_only;       /* open O_RDONLY */
	const struct iol_sim_opts *sim; /* sim backend only; NULL: defaults */
	/* Carry out flushes through the flush gate (submit.c IO4) on a backend that does not
	 * ask for it (sim), and FUA as a write and a gated flush, as on a disk without FUA:
	 * puts the gate itself under the crash suite's power cuts.  The descriptor
	 * backends always use it. */
	bool flush_gate;
	/* With flush_gate on a device with native FUA (the sim): keep FUA native, as the
	 * gate does on a descriptor device whose queue/fua says 1: only flushes and
	 * PREFLUSH go through the gate, and a FUA write is the device's own.  false: FUA
	 * is carried out as write + gated flush (a disk without FUA). */
	bool gate_keep_fua;
	char *errmsg; /* optional: receives a message naming path and reason */
	size_t errmsg_len;
};

/* What iol_dev_open learnt about the device.  Strings are static. */
struct iol_geom {
	uint64_t size_bytes;     /* device or file size */
	uint32_t logical_block;  /* logical block size (BLKSSZGET, or st_blksize-derived) */
	uint32_t physical_block; /* physical block size (BLKPBSZGET, or the queue of the
				  * file system's device); 0: unknown (a file on a file
				  * system with no block device queue behind it) */
	uint32_t dio_mem_align;  /* required buffer alignment for O_DIRECT */
	uint32_t dio_off_align;  /* required offset/length alignment for O_DIRECT */
	bool is_blockdev;
	bool dioalign_from_statx; /* alignment came from statx(STATX_DIOALIGN) */
	int volatile_cache;       /* 1 write back, 0 write through, -1 unknown */
	int fua;                  /* 1 device supports FUA, 0 not, -1 unknown */
	const char *fs_type;      /* "ext4", "xfs", "tmpfs", ...; "blockdev" or "sim" */
	const char *backend;      /* the backend in use */
};

/* Per-device counters, updated atomically by the core. */
struct iol_counters {
	uint64_t reads, writes, flushes, preflushes, fua_writes;
	uint64_t dev_flushes; /* cache flushes handed to the kernel or the sim disk: one per
			       * flush gate generation (flush.c) where the backend gates them,
			       * else one per flush, PREFLUSH write and FUA write without
			       * native FUA */
	/* Gated devices (flush.c): generations run inline on an iol_submit_wait caller's
	 * thread (FG4), and generations whose flush failed (FG3). */
	uint64_t gate_inline, gate_failed;
	uint64_t bytes_read, bytes_written;
	uint64_t errors;
};

/*
 * Open @path with O_DIRECT on the backend @opts->backend names (or the best available:
 * uring, else aio, else psync, after a runtime probe).  For "sim", @path may be NULL (the
 * disk lives in memory; see io_sim.h).  Errors: -EOPNOTSUPP when the filesystem cannot
 * hold a durable log, because it refuses O_DIRECT or keeps its data only in memory (tmpfs,
 * ramfs; the message names the path and the filesystem), and for nothing else; -EINVAL
 * for bad options or a path that is not a regular file or block device; -ENOENT etc.
 * from open; -ENODEV/-ENOSYS when a named backend is not built in or not usable here;
 * -ENOMEM.
 */
int iol_dev_open(const char *path, const struct iol_dev_opts *opts, struct iol_dev **out);
/* Refuse new requests, wait until every accepted one has finished (its end_io returned;
 * submit.c IO5), stop the flush gate and the backend's threads, close.  Returns 0 or -errno
 * from close. */
int iol_dev_close(struct iol_dev *dev);

const struct iol_geom *iol_dev_geom(const struct iol_dev *dev);
const char *iol_dev_backend(const struct iol_dev *dev);
int iol_dev_fd(const struct iol_dev *dev);
void iol_dev_counters(const struct iol_dev *dev, struct iol_counters *out);

/*
 * The writer lock (lock.c).  A writing open (not read_only) of a file or block device
 * holds it until iol_dev_close; a second writing open fails -EBUSY, its message naming
 * the holder's pid where the lock says it.  iol_dev_writer: the writer holding @dev's
 * log while @dev reads it, > 0 its pid, -1 one whose pid is unknown, 0 none (always 0 for
 * the writer itself and for sim).  iol_path_writer_check: -EBUSY, and a message in
 * @errmsg (may be NULL), when a writer holds @path's lock; 0 otherwise, also when @path
 * cannot be opened.  Both only test the lock, never take it.
 */
long iol_dev_writer(const struct iol_dev *dev);
int iol_path_writer_check(const char *path, char *errmsg, size_t errmsg_len);
/*
 * Hold the block device @path exclusively (O_EXCL) for this process until
 * iol_blk_release: the kernel refuses it while the device is mounted or another process
 * holds it, and then keeps both off.  This process's writing opens of the device skip
 * their own O_EXCL meanwhile (lock.c LK2).  Returns the holding descriptor, or -EBUSY
 * (in use), -ENOTBLK, -ENFILE (8 held already) or another -errno.  Thread-safe.
 */
int iol_blk_claim(const char *path);
void iol_blk_release(int fd);

/* Is backend @name compiled in?  ("uring", "aio", "psync", "sim") */
bool iol_backend_built(const char *name);
/* NULL-terminated list of compiled-in backend names, in preference order. */
const char *const *iol_backend_names(void);

/*
 * Create a regular file of @size bytes to serve as a device: O_CREAT | O_EXCL |
 * O_NOFOLLOW (an existing file or a symlink at @path is refused with -EEXIST / -ELOOP),
 * permissions @mode (subject to the umask), blocks allocated with fallocate.  The caller
 * then writes zeroes over it through the device (so O_DIRECT overwrites never meet
 * unwritten extents) and removes it on failure.  @errmsg (may be NULL) gets a message.
 */
int iol_file_create(const char *path, uint64_t size, unsigned mode, char *errmsg,
		    size_t errmsg_len);

/*
 * Atomic create (dev.c).  iol_file_create_tmp creates, as iol_file_create does, a file
 * for @path under a unique temporary name in @path's directory, "." NAME ".delog-new."
 * PID "." RANDOM, written to @tmp; first it removes the temporaries of NAME that a killed
 * create left (creator dead, no writer lock held).  Once the file is formatted,
 * iol_file_publish fsyncs it (through @fd, or by name when @fd is -1), renames it to
 * @path unless @path exists (-EEXIST: nothing is replaced) and fsyncs the directory.
 * The caller removes @tmp when either fails.  @errmsg (may be NULL) gets a message.
 */
int iol_file_create_tmp(const char *path, uint64_t size, unsigned mode, char *tmp, size_t tmp_len,
			char *errmsg, size_t errmsg_len);
int iol_file_publish(const char *tmp, const char *path, int fd, char *errmsg, size_t errmsg_len);
/* A message about the temporary @tmp names @path instead (what the caller asked for). */
void iol_errmsg_rename(char *msg, size_t len, const char *tmp, const char *path);

/*
 * Fault injection on the real backends (the sim backend has its own, richer plan in
 * io_sim.h), for the I/O-error tests: the @nth op of type @op (1-based, counted from
 * when the entry was added; a PREFLUSH write counts as a FLUSH and then a WRITE) fails
 * with @err (0: -EIO), and with @persistent every later one too.  psync fails the
 * syscall itself, before it runs (its syscall table, psync.c); uring and aio fail the
 * op in the completion path, after the device did it (the write may have landed: as
 * with a real error, nothing can be assumed about it).  Up to IOL_FAULTS_MAX entries;
 * -ENOSPC when full, -EINVAL for a bad entry or a sim device.  Thread-safe.
 */
#define IOL_FAULTS_MAX 16
struct iol_fault {
	enum iol_op op;
	uint64_t nth;
	bool persistent;
	int err;
};
int iol_dev_fault_add(struct iol_dev *dev, const struct iol_fault *f);
void iol_dev_fault_clear(struct iol_dev *dev);

/* Allocate @len bytes aligned for O_DIRECT on @dev (at least 4096); free with free(). */
void *iol_buf_alloc(const struct iol_dev *dev, size_t len);

#ifdef __cplusplus
}
#endif
#endif
