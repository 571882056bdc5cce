/*
 * delog.h - the public interface of delog, an embeddable write-ahead log built on the
 * XFS "delayed logging" design.  This is the only header an application includes.
 *
 * Conventions (they hold for every function declared here):
 *  - Every function that can fail returns int: 0 on success, or a negative error code.
 *    Operating-system errors pass through as -errno (-EIO, -ENOSPC, ...); delog's own
 *    conditions use the DELOG_E* codes below, which lie outside the errno range.
 *    delog_strerror() and delog_err_name() describe either kind; delog_errmsg() says
 *    why the calling thread's last call failed, in words.
 *  - No global state: everything lives in handles (and each thread's delog_errmsg, as
 *    errno), so independent handles may be used from independent threads without
 *    coordination.
 *  - Each function states its thread safety.
 */
#ifndef DELOG_H
#define DELOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library version (the on-disk format has its own version; see docs/FORMAT.md).
 * 0.y.z may change the API at every minor release.  CMake reads these lines. */
#define DELOG_VERSION_MAJOR 0
#define DELOG_VERSION_MINOR 1
#define DELOG_VERSION_PATCH 0
#define DELOG_VERSION_HEX                                                                          \
	((DELOG_VERSION_MAJOR << 16) | (DELOG_VERSION_MINOR << 8) | DELOG_VERSION_PATCH)

/*
 * delog's own error codes, all below -9000 so they never collide with -errno.
 * X(name, value, message): the single table behind delog_strerror/delog_err_name.
 * A message says what the code means wherever it arises (a superblock or a record), not
 * where or what exactly: that is struct delog_error_info's (delog_open).
 */
#define DELOG_ERRNO_MAP(X)                                                                         \
	X(ECORRUPT, -9001, "log is corrupt")                                                       \
	X(ECHECKSUM, -9002, "checksum mismatch")                                                   \
	X(EVERSION, -9003, "log format version is newer than this library supports")               \
	X(EFEATURE, -9004, "log uses an incompatible feature this library does not know")          \
	X(ENOTLOG, -9005, "not a delog log (bad magic)")                                           \
	X(ETRUNCATED, -9006, "file or device too small for its log (or for a superblock)")         \
	X(EFOREIGN, -9007, "record belongs to another log (UUID mismatch)")                        \
	X(EBADOP, -9008, "malformed log operation")                                                \
	X(EORPHAN, -9009, "log operation without its start (a continuation or a COMMIT)")          \
	X(ESHUTDOWN, -9010, "log is shut down after an I/O error")                                 \
	X(ELOGFULL, -9011, "log is full")                                                          \
	X(EGEOMETRY, -9012, "log geometry does not fit the log or the device")                     \
	X(ERDONLY, -9013, "log was opened read-only (DELOG_OPEN_RDONLY)")                          \
	X(ENODIRECT, -9014, "file system cannot hold a durable log (no O_DIRECT, or tmpfs)")       \
	X(ECLOSED, -9015, "handle is not an open log (delog_close was called on it)")              \
	X(EBEHIND, -9016, "reader fell behind: the log released the checkpoint it wanted next")

enum delog_err {
#define DELOG_ERR_ENUM_(name, value, msg) DELOG_##name = value,
	DELOG_ERRNO_MAP(DELOG_ERR_ENUM_)
#undef DELOG_ERR_ENUM_
};

/* Human-readable text for a delog code or a negative errno, starting with its symbolic
 * name ("DELOG_ECORRUPT: ...", "EIO: ...").  Returns a static string; thread-safe. */
const char *delog_strerror(int err);

/* Symbolic name of a code ("DELOG_ECORRUPT", "EIO"), or "UNKNOWN".  Static; thread-safe. */
const char *delog_err_name(int err);

/*
 * Why the calling thread's most recent delog call failed, in one line: which argument
 * or state and what was wrong ("delog_tx_begin: flags 0x10: unknown bits 0x10", "this
 * handle was closed: ...", "the log shut down after EIO: ..."); for delog_open, struct
 * delog_error_info's message.  "" when that call succeeded, or had nothing to say
 * beyond its code.  Every call that returns an error code sets it, but for
 * delog_error, delog_durable_seq, delog_strerror and delog_err_name, which leave it
 * (an error handler may ask them first), and calls that return nothing, such as
 * delog_tx_abort.  Thread-local, as errno: valid until the thread's next delog call.
 * Never NULL.
 */
const char *delog_errmsg(void);

/* Run-time version: DELOG_VERSION_HEX and "MAJOR.MINOR.PATCH" of the library actually
 * linked (compare with the macros above to detect a header/library mismatch).
 * Thread-safe. */
unsigned delog_version(void);
const char *delog_version_string(void);

/* ======================================================================================
 * The log
 *
 * Model (docs/DESIGN.md section 4; the XFS delayed-logging design):
 *  - A transaction (delog_tx) logs items: a 64-bit key and up to 1 GiB of data each.
 *    delog_tx_commit copies them into the committed item list (CIL) in memory and returns
 *    the sequence number of the checkpoint they will be written in.  Commit is NOT
 *    durable: delog_force(log, seq) returns once checkpoint seq and every one before it
 *    are stable on the device.  Many transactions share one checkpoint (group commit),
 *    and logging a key again while its checkpoint is still open replaces the earlier
 *    copy (relogging: one copy per key per checkpoint).
 *  - A checkpoint is atomic: after a crash, recovery replays whole checkpoints, in order,
 *    a prefix of those committed, including every one a force acknowledged.
 *  - The log is circular.  Its space is held by checkpoints until the application says
 *    their contents are safe elsewhere: delog_release(log, seq) (everything up to seq is
 *    durable elsewhere) or, with item tracking, delog_item_written(log, key, seq) per
 *    item.  A full log blocks delog_tx_begin (or fails it with -EAGAIN under
 *    DELOG_TX_NOWAIT); the push callback asks the application to write back before
 *    that happens.
 *  - The flush policy decides which log writes carry a cache flush (PREFLUSH) or FUA
 *    and when a standalone flush is issued; docs/FLUSH-POLICIES.md gives each one's
 *    rules and safety argument.
 *  - Any failed log write or flush shuts the log down: every waiter and every later call
 *    gets DELOG_ESHUTDOWN (delog_error() returns the original error), nothing more is
 *    acknowledged, and what was acknowledged before stays recoverable.  Reopen recovers.
 * ====================================================================================== */

typedef struct delog delog;
typedef struct delog_tx delog_tx;

/* Flush policies (docs/FLUSH-POLICIES.md). */
enum delog_flush_policy {
	DELOG_FLUSH_SYNC = 0,   /* PREFLUSH on a checkpoint's first write, PREFLUSH|FUA on its
				 * commit write after the earlier ones completed (XFS >= 5.18) */
	DELOG_FLUSH_ASYNC = 1,  /* a flush issued when the push starts and awaited before the
				 * first write; FUA on the commit write (XFS 5.14-5.17) */
	DELOG_FLUSH_SINGLE = 2, /* one device flush per checkpoint, after all its writes */
	DELOG_FLUSH_NONE = 3,   /* no flushes at all: NOT crash-safe; benchmarks only */
};

/* Name ("sync", ...) of a policy, or NULL; and the reverse (0 or -EINVAL).  Thread-safe. */
const char *delog_flush_policy_name(enum delog_flush_policy p);
int delog_flush_policy_parse(const char *name, enum delog_flush_policy *out);

/* An item as recovery hands it back; @data is valid only during the callback. */
struct delog_item {
	uint64_t key;
	const void *data;
	uint32_t len;
};

/* A checkpoint replayed by recovery. */
struct delog_checkpoint {
	uint64_t seq;
	uint64_t lsn; /* log position of its commit record (informational) */
	size_t nitems;
};

/*
 * Called by delog_open once per complete checkpoint found in the log, in order, on the
 * opening thread, before delog_open returns, and only once recovery has verified the
 * whole log: a damaged log fails delog_open before any call.  Return 0 to go on;
 * anything else makes delog_open fail with that value (and leaves the log as it was).
 * @items are in the order their keys were first logged into the checkpoint
 * (transactions in commit order, items in logging order; a key relogged by a later
 * transaction keeps its first place with the newest data).  Every unreleased
 * checkpoint is handed over, and the newest durable one even once released: skip the
 * sequences your own state already covers.
 */
typedef int (*delog_recover_fn)(void *arg, const struct delog_checkpoint *ckpt,
				const struct delog_item *items, size_t nitems);

/*
 * Called when free log space falls under 25%: the application should write back what it
 * logged up to and including checkpoint @seq (at least) and then call delog_release or
 * delog_item_written.  Runs on delog's push thread with no delog lock held; it must not
 * block for long and must not call delog_force, delog_tx_* or delog_close (it may call
 * delog_release, delog_item_written, delog_force_nowait, delog_stats).
 */
typedef void (*delog_push_fn)(void *arg, delog *log, uint64_t seq);

/* What recovery found when the log was opened (see `delog recover`). */
struct delog_recovery {
	int clean;             /* 1: the log was closed cleanly */
	uint64_t checkpoints;  /* complete checkpoints replayed */
	uint64_t items, bytes; /* items and item data bytes replayed */
	uint64_t dropped;      /* incomplete checkpoints discarded at the head */
	uint64_t torn_bytes;   /* torn write discarded at the head */
	uint64_t last_seq;     /* sequence of the last replayed checkpoint (0: none) */
	uint64_t head_lsn, tail_lsn;
	/* Appended members are written only for a caller whose struct delog_options has
	 * recover_to (its size covers it): an older caller's struct is not overrun. */
	uint64_t held_back; /* complete checkpoints after recover_to: verified, not
			     * replayed (0 without recover_to) */
};

/*
 * Where and what delog_open refused, when the caller asks (delog_options.error): the
 * place and the words behind the code, as `delog recover` and `delog print` report
 * them.  Set size first; delog_open clears the rest on entry and fills it before it
 * returns, whatever it returns (code 0 and nothing else after a successful open), as
 * long as it can read the options (not for a NULL @out or a bad opts->size).  Members
 * are only ever appended: a later header's larger struct gets what this library knows,
 * nothing past it is written; a size below this struct's fails the open with -EINVAL,
 * and the struct is not written.  Owned by the caller; written only during delog_open.
 */
struct delog_error_info {
	size_t size;       /* sizeof(struct delog_error_info): set it first */
	int code;          /* what delog_open returned (0: it succeeded) */
	uint64_t offset;   /* byte offset on the device of the refused field, sector or op
			    * (the device's size when it is too small); 0 when there is none */
	uint64_t lsn;      /* the LSN (cycle << 32 | sector) of the record holding the damage;
			    * 0 outside the log's records (the superblock, the device, options) */
	char field[32];    /* the on-disk field found wrong, as docs/FORMAT.md names it
			    * ("sb.version", "rec.crc", "op.type", "commit.seq"); "" when no one
			    * field is (a record with no valid header, an option, a file) */
	char message[256]; /* what was found there or why the open failed, one line:
			    * "format version 0: no such version (they start at 1)", "PATH: the
			    * filesystem (tmpfs) keeps data only in memory, ...", "logbufs 9:
			    * must be 2..8 (0: 8)"; "" when there is no more to say than the code */
};

/* delog_options.flags.  An older caller's smaller struct (size >= the offset of
 * `recovery`) is accepted: the fields it lacks read as zero. */
#define DELOG_OPEN_CREATE 0x1u      /* create and format PATH if it does not exist */
#define DELOG_OPEN_FORMAT 0x2u      /* format PATH even if it holds a log (destroys it) */
#define DELOG_OPEN_TRACK_ITEMS 0x4u /* keep the per-key AIL that delog_item_written needs */
/* Open PATH read-only (O_RDONLY) and write nothing, at open or close: recovery replays
 * as usual but stamps nothing, and every call that would write fails DELOG_ERDONLY.
 * For inspection and backup, and for a log on a read-only file system.  Not with
 * CREATE or FORMAT, nor with the "sim" backend (-EINVAL). */
#define DELOG_OPEN_RDONLY 0x8u

struct delog_options {
	size_t size;         /* sizeof(struct delog_options): set it first */
	const char *backend; /* "uring", "aio", "psync", "sim"; NULL: best available */
	unsigned logbufs;    /* log buffers, 2..8; 0: 8 */
	uint32_t logbsize;   /* log buffer bytes, power of two 16 KiB..256 KiB; 0: 256 KiB */
	enum delog_flush_policy flush; /* default DELOG_FLUSH_SYNC (0) */
	unsigned flags;                /* DELOG_OPEN_* */
	uint64_t create_size;          /* log size for CREATE and FORMAT; 0: 64 MiB for a new
				   * file, the whole file or device when formatting one */
	uint32_t sector;               /* sector size for FORMAT: 512 or 4096; 0: 4096 */
	uint64_t cil_push_bytes;       /* background push threshold; 0: min(log/8, 32 MiB);
				   * at most log/8 (larger is taken as log/8); a commit
				   * that would take the CIL past twice it waits first */
	delog_recover_fn recover;      /* may be NULL */
	void *recover_arg;
	delog_push_fn push; /* may be NULL */
	void *push_arg;
	struct delog_recovery *recovery; /* may be NULL: receives what recovery found */
	struct delog_error_info *error;  /* may be NULL: where and what a failed open
					  * refused (filled by every delog_open) */
	uint64_t recover_to;             /* point in time: 0 replays every checkpoint; N
					  * only those up to N (DELOG_OPEN_RDONLY only) */
	/* Recovery verifies the whole log before it replays anything; it keeps what it
	 * verified in memory, up to this many bytes (item bytes plus 24 an item), and
	 * replays from there, so the log is read once.  A log holding more is read twice.
	 * 0: 1 GiB, or an eighth of the machine's memory if less; 1: hold nothing. */
	uint64_t recover_mem;
};

/*
 * Open (and recover) the log at @path.  Recovery replays complete checkpoints through
 * @opts->recover; new checkpoints continue after the last one (delog_durable_seq() is
 * its sequence).  @opts may be NULL (defaults, no create).  "sim" runs on an in-memory
 * disk without a volatile cache or latency (@path ignored, always created): for tests
 * and benchmarks of what runs above the disk.  With DELOG_OPEN_RDONLY the log is
 * recovered and replayed the same way, but nothing is written: not the sectors past
 * the head that a writing open stamps, not the unmount record at close; the handle
 * then answers delog_durable_seq, delog_durable_fd, delog_error and delog_stats, and
 * refuses delog_tx_begin, delog_force, delog_release and delog_item_written with
 * DELOG_ERDONLY.
 * One writer: a writing open holds the log's writer lock until delog_close (an open
 * file description lock on the file; on a block device also an exclusive open), so a
 * second writing open, in this process or another, fails -EBUSY, its error info naming
 * the holder's pid.  A read-only open takes no lock, and beside a live writer it
 * recovers a prefix of the log that holds every checkpoint acknowledged before the
 * open began (or fails -EAGAIN if the log changed under every attempt).
 * CREATE is atomic: the new file is formatted under a temporary name in PATH's
 * directory and renamed to PATH once durable, so a killed create leaves no PATH (and a
 * temporary ".NAME.delog-new.PID.RANDOM", removed by a later create) or a whole log.
 * Point in time: with @opts->recover_to N (only with DELOG_OPEN_RDONLY, else -EINVAL)
 * recovery still verifies the whole log (a damaged one fails as always), but hands over
 * only the checkpoints up to N; those after it are counted in delog_recovery.held_back,
 * and delog_durable_seq() is the last one handed over (0 if none: the log may start
 * after N).  N beyond the log hands over everything (last_seq says where it ended).  A
 * writing open cannot stop at N: it would number its checkpoints N+1.. while the log
 * still holds the old ones; `delog recover --salvage NEWLOG --to N` writes a new log
 * that ends at N.
 * Errors: -ENOENT (no such file, and no DELOG_OPEN_CREATE), the DELOG_E* codes of a log
 * recovery refuses, DELOG_ENODIRECT (PATH is on a file system that cannot hold a
 * durable log: one without O_DIRECT, or tmpfs and ramfs, which keep data in memory
 * only), -EINVAL (bad options), -EROFS or -EACCES (a file that cannot be opened for
 * writing: DELOG_OPEN_RDONLY opens it), -EBUSY (another writer holds the log),
 * -EEXIST (CREATE: PATH appeared while the log was being created; it is left alone),
 * -EAGAIN (DELOG_OPEN_RDONLY: a live writer changed the log under every attempt),
 * -ENOMEM, -EIO and other -errno, or the recover callback's value.  On failure *@opts->error (if given) says where and what, and
 * *@opts->recovery is not written.  Thread-safe (independent handles).
 */
int delog_open(const char *path, const struct delog_options *opts, delog **out);

/*
 * Close: push and force everything committed, write an unmount record (so the next open
 * knows the log was closed cleanly) and free the handle.  A log opened with
 * DELOG_OPEN_RDONLY is only freed: close writes nothing to it.  No other call on @log
 * may be running or follow.  Returns 0, or the error that shut the log down (the
 * original one, as delog_error() reports it; the handle is freed anyway).
 * NULL is a no-op.  A call on the handle after it (a second close too) is a bug that
 * delog reports as DELOG_ECLOSED while the freed memory was not reused.
 */
int delog_close(delog *log);

/*
 * Limits of the log (its on-disk format, docs/FORMAT.md, and its ring of log buffers),
 * for sizing buffers, checking options and laying out a device without copying numbers:
 *   DELOG_LOGBUFS_MIN..MAX    delog_options.logbufs (log buffers in the ring)
 *   DELOG_LOGBSIZE_MIN..MAX   delog_options.logbsize (bytes per log buffer, a power of
 *                             two)
 *   DELOG_SB_BYTES            the superblock area at the start of the device; the log
 *                             (create_size bytes) follows it, so a file holding a log
 *                             of N bytes is DELOG_SB_BYTES + N bytes
 *   DELOG_LOG_MIN_BYTES       the smallest log a format accepts (4 MiB: two full rings
 *                             of the largest buffers)
 *   DELOG_ITEM_MAX            the most data bytes one item may carry (delog_tx_log)
 * The journal asserts that these are its own limits (journal/sb.c).
 */
#define DELOG_LOGBUFS_MIN 2u
#define DELOG_LOGBUFS_MAX 8u
#define DELOG_LOGBSIZE_MIN (16u << 10)
#define DELOG_LOGBSIZE_MAX (256u << 10)
#define DELOG_SB_BYTES 4096u
#define DELOG_LOG_MIN_BYTES (2ull * DELOG_LOGBUFS_MAX * DELOG_LOGBSIZE_MAX)
#define DELOG_ITEM_MAX (1u << 30)

/* delog_tx_begin flags.  NOWAIT: fail with -EAGAIN instead of blocking for space;
 * delog_durable_fd says when to try again.  RESERVE: the transaction may use the
 * log's reserve (delog_set_reserve), the space every other transaction leaves
 * free.  Keep it for the few small records that must be written however full the log
 * is, as XFS keeps blocks for its own unmount records: a Raft node's term and vote, or
 * the record that lets the application release space.  A log whose reserve is used up
 * refuses RESERVE transactions as it refuses the others. */
#define DELOG_TX_NOWAIT 0x1u
#define DELOG_TX_RESERVE 0x2u

/* Per-item log overhead to count in a reservation (headers and padding).  An item also
 * takes its share of record headers, a few per cent with 256 KiB log buffers (up to a
 * third with 16 KiB ones): delog_tx_begin adds that share to the reservation itself. */
#define DELOG_ITEM_OVERHEAD 64u

/*
 * Begin a transaction, reserving @reserve bytes of log space: the item data it will log
 * plus DELOG_ITEM_OVERHEAD per item.  A transaction that logs no more than that never
 * waits for space again before its commit; one that logs more takes more space as it
 * goes, which may block (delog_tx_log).  Blocks while the log is too full (with
 * DELOG_TX_RESERVE, too full even counting its reserve), or returns -EAGAIN with
 * DELOG_TX_NOWAIT.  Errors: -EINVAL (flags, or a
 * reservation larger than a quarter of the log), -ENOMEM, DELOG_ESHUTDOWN, DELOG_ERDONLY
 * (the log was opened with DELOG_OPEN_RDONLY).  Thread-safe:
 * any number of threads run transactions at once; one transaction belongs to one thread
 * at a time.
 */
int delog_tx_begin(delog *log, uint64_t reserve, unsigned flags, delog_tx **tx);
/*
 * Log an item: @len bytes at @data (copied before the call returns) under @key.  Logging
 * a key again in the same transaction replaces the earlier copy.  Past the reservation
 * the transaction takes more space, waiting for it unless DELOG_TX_NOWAIT.  Errors:
 * -EINVAL (NULL data with len > 0, len > 1 GiB), -E2BIG (the transaction's items, with
 * DELOG_ITEM_OVERHEAD each, would exceed a quarter of the log), -ENOMEM, -EAGAIN (more
 * space needed under NOWAIT), -EDEADLK (more space needed, and every open transaction
 * of this log waits for space that only their own commits or aborts can free: commit
 * or abort this one), DELOG_ESHUTDOWN; the transaction stays usable (or abortable)
 * after an error.
 */
int delog_tx_log(delog_tx *tx, uint64_t key, const void *data, uint32_t len);
/*
 * delog_tx_log of one item whose data is the concatenation of @iovcnt buffers (a header
 * and a payload kept apart, say), copied before the call returns: no need to assemble
 * it first.  The item is read back as one buffer.  Errors: those of delog_tx_log;
 * -EINVAL also for iovcnt < 0, a NULL buffer of nonzero length or a total over 1 GiB.
 */
int delog_tx_logv(delog_tx *tx, uint64_t key, const struct iovec *iov, int iovcnt);
/*
 * Commit: the items enter the CIL atomically, into checkpoint *@seq (may be NULL).  Not
 * durable until delog_force(log, *seq) returns 0.  Frees @tx in every case.  Errors:
 * DELOG_ESHUTDOWN (nothing was committed), -ENOMEM (the CIL could not grow: the log
 * is shut down, as atomicity can no longer be promised).  An empty transaction commits
 * nothing; *@seq is then the sequence a force must reach to cover everything committed
 * so far (the open checkpoint's if it holds anything, else the last written one's, 0 if
 * none).
 */
int delog_tx_commit(delog_tx *tx, uint64_t *seq);
/* Discard the transaction and its reservation; frees @tx.  NULL is a no-op. */
void delog_tx_abort(delog_tx *tx);

/*
 * Wait until checkpoint @seq and all before it are durable (0: everything committed so
 * far).  Pushes the CIL if that checkpoint is still open.  A sequence that is already
 * durable returns at once without I/O.  Returns 0, DELOG_ESHUTDOWN, -EINVAL for a
 * sequence beyond the open checkpoint, or DELOG_ERDONLY (DELOG_OPEN_RDONLY, whatever
 * the sequence).  Thread-safe.
 */
int delog_force(delog *log, uint64_t seq);
/* Commit @tx and force its checkpoint (*@seq may be NULL).  Thread-safe. */
int delog_tx_commit_force(delog_tx *tx, uint64_t *seq);
/*
 * Ask for checkpoint @seq and all before it to become durable, and return at once (0:
 * everything committed so far).  delog's push thread writes the checkpoint if it is
 * still open, and the flush policy's completions make it durable, as for delog_force;
 * the caller learns of it through delog_durable_fd (readable once the watermark moved)
 * and delog_durable_seq() >= @seq.  Requests for the same or earlier checkpoints, from
 * any thread, share its write and flush with each other and with blocking forces.
 * Returns 1 (already durable: nothing to wait for), 0 (asked: wait for the watermark),
 * DELOG_ESHUTDOWN (then the watermark never reaches @seq: the eventfd is readable and
 * delog_error() says why), DELOG_ERDONLY, or -EINVAL for a sequence beyond the open
 * checkpoint.
 * Never blocks on I/O or on other callers' I/O (it may take a lock held for a few
 * instructions).  Thread-safe; may be called from the push callback.
 */
int delog_force_nowait(delog *log, uint64_t seq);

/* Highest checkpoint sequence known durable (watermark).  Thread-safe, lock-free. */
uint64_t delog_durable_seq(const delog *log);
/*
 * An eventfd (EFD_NONBLOCK) that becomes readable whenever the durable watermark
 * advances (before any force waiting for that advance returns), on shutdown, and when
 * space may be back after a DELOG_TX_NOWAIT call got -EAGAIN (then try again); read it
 * to re-arm, then check delog_durable_seq.  Owned by the log (closed by delog_close).
 * Thread-safe.
 */
int delog_durable_fd(const delog *log);

/*
 * Space.  delog_release(log, seq): the application has made everything logged up to and
 * including checkpoint @seq durable elsewhere; the log may reuse that space at once (no
 * flush needed), except for the newest durable checkpoint, which stays in the log until
 * a newer one is durable (so a reopened log always continues its sequence numbers).
 * delog_item_written(log, key, seq) (needs DELOG_OPEN_TRACK_ITEMS): the
 * application's in-place write of @key as of checkpoint @seq has completed but may
 * still sit in a volatile cache; the space is reused only after a device flush that
 * follows this call (rule S2 of docs/FLUSH-POLICIES.md), which delog issues itself when it
 * needs the space.  A key logged again in a later checkpoint stays pinned by that one.
 * Both return 0, -EINVAL (a sequence not yet durable; item_written without tracking),
 * DELOG_ESHUTDOWN or DELOG_ERDONLY (DELOG_OPEN_RDONLY).  Thread-safe.
 */
int delog_release(delog *log, uint64_t seq);
int delog_item_written(delog *log, uint64_t key, uint64_t seq);
/*
 * Keep @bytes of the log back from every transaction begun without DELOG_TX_RESERVE,
 * from now on (a log opens with none); more than a quarter of the log is taken as a
 * quarter.  Set it after delog_open, once delog_stats gave the log's size.  Returns 0,
 * DELOG_ESHUTDOWN or DELOG_ERDONLY.  Thread-safe.
 */
int delog_set_reserve(delog *log, uint64_t bytes);

/* 0, or the error that shut the log down (the first failed write or flush).  Thread-safe. */
int delog_error(const delog *log);

struct delog_stats {
	size_t size; /* set to sizeof(struct delog_stats) before the call */
	/* transactions */
	uint64_t transactions, items_logged;
	uint64_t relogged; /* item copies replaced within an open checkpoint */
	/* checkpoints */
	uint64_t checkpoints;                        /* checkpoints written */
	uint64_t checkpoint_items, checkpoint_bytes; /* items / item bytes they carried */
	double txs_per_checkpoint;
	uint64_t durable_seq, open_seq;
	/* forces */
	uint64_t forces, force_waits, force_no_io; /* delog_force calls; that waited; already
						    * durable */
	uint64_t forces_nowait;                    /* delog_force_nowait calls */
	/* log writes and flushes */
	uint64_t records, record_bytes;  /* log buffer writes and their bytes */
	uint64_t preflushes, fua_writes; /* writes carrying PREFLUSH / FUA */
	uint64_t flushes;                /* standalone device flushes */
	/* Of `flushes`, those issued for log space rather than for a checkpoint: a cover
	 * record's (the tail made durable so its space can be reused), the unflushed
	 * window's (a checkpoint writing far past the durable point) and item writes'
	 * (delog_item_written's space); so a policy's flushes per checkpoint are
	 * (device_flushes - space_flushes) / checkpoints. */
	uint64_t space_flushes;
	uint64_t fua_flushes;    /* FUA writes the device turns into a write and a cache flush:
			       * all of fua_writes unless device_fua is 1 (as Linux does on a
			       * queue without FUA, delog writes and then flushes) */
	int device_fua;          /* 1: the device does FUA natively, 0: it does not, -1: unknown
			       * (counted as not: the conservative choice) */
	uint64_t device_flushes; /* cache flushes the device performs since open: at most
				  * preflushes + flushes + fua_flushes; on a file or disk,
				  * flushes asked for while one is in flight share the next
				  * one, and the kernel merges none */
	double flushes_per_checkpoint, bytes_per_flush; /* device_flushes per checkpoint;
							   * record_bytes per device flush */
	/* log space */
	uint64_t log_size, log_used, cil_bytes, reserved_bytes;
	uint64_t head_lsn, tail_lsn;
	uint64_t space_waits; /* begin and log calls that waited for space */
	uint64_t push_calls;  /* push callback invocations */
	/* Item bytes given to delog_tx_log / delog_tx_logv, and the item bytes delog copied
	 * (into the transaction, into the CIL unless the item is large, into the log
	 * buffers): copied_bytes / logged_bytes is the copies a logged byte costs. */
	uint64_t logged_bytes, copied_bytes;
	/* Members are only ever appended from 0.1.0 on. */
};
/* Fill @st (st->size set by the caller: sizeof(struct delog_stats) of the header it was
 * built with; a later header's larger struct gets what this library knows, nothing
 * past it is written).  Returns 0, or -EINVAL for a size below this struct's.
 * Thread-safe.  A device without a volatile write cache (write-through) performs none of
 * the flushes counted here: Linux drops them before the device. */
int delog_stats(const delog *log, struct delog_stats *st);

/* ======================================================================================
 * Following a log: a reader that hands over each durable checkpoint once, in order
 * ====================================================================================== */

typedef struct delog_reader delog_reader;

struct delog_reader_options {
	size_t size;         /* sizeof(struct delog_reader_options): set it first */
	uint64_t from;       /* the first checkpoint wanted; 0: the oldest the log still holds */
	const char *backend; /* as delog_options.backend ("sim" is refused) */
	struct delog_error_info *error; /* may be NULL: where and what a failed open
					 * refused, as for delog_open */
};

/*
 * Follow the log at @path (a file or block device), written by another process or by
 * this one, or by no one yet.  The reader reads the log itself, read-only, and takes no
 * lock: it never holds up the writer, which only tells it, through a shared page,
 * which checkpoints are durable: a store per durable advance, and a one-byte pwrite
 * while a follower watches, in /dev/shm/delog-UUID-DEV-INO (one page per log file,
 * removed by a clean close, left by a killed or shut-down writer for the next one).
 * @opts may be NULL (the oldest).
 * Errors: as a read-only delog_open (-ENOENT, the DELOG_E* of a log it refuses, ...),
 * -EINVAL (bad options, the sim backend).  Thread-safe (independent readers).
 */
int delog_reader_open(const char *path, const struct delog_reader_options *opts,
		      delog_reader **out);

/*
 * The next durable checkpoint: waits up to @timeout_ms (-1: without limit, 0: not at
 * all).  Returns 1 with *@ckpt and *@items (ckpt->nitems of them, valid until the next
 * call on @r), 0 when none came in time, or:
 *   DELOG_EBEHIND    the log released the checkpoint wanted next before the reader got
 *                    it (delog_reader_position says which): open a reader again, from
 *                    0 or from a later sequence;
 *   DELOG_ESHUTDOWN  the writer shut down after an error, and every checkpoint it made
 *                    durable was handed over (a new writer's open resumes the log:
 *                    open a reader again to follow it);
 *   another code     the log was refused (damage; DELOG_EFOREIGN: formatted anew),
 *                    or -ENOMEM; the reader stops.
 * A writer that closes, or is killed, ends nothing: the reader has handed over every
 * checkpoint it made durable and waits for the next writer.  A checkpoint is handed
 * over once the writer has it durable (its force returned, or would), never before;
 * without a writer's word (a log no writer has opened since the machine started) the
 * log as it lies counts as durable.  One thread at a time per reader.
 */
int delog_reader_next(delog_reader *r, int timeout_ms, struct delog_checkpoint *ckpt,
		      const struct delog_item **items);

/* A file descriptor that turns readable when delog_reader_next may have more, for an
 * event loop (poll it, then call delog_reader_next with timeout 0 until it returns 0).
 * Owned by the reader.  Returns the fd, or a negative code. */
int delog_reader_fd(const delog_reader *r);

/* The sequence the reader wants next (0 before the first checkpoint, when it started
 * from the oldest). */
uint64_t delog_reader_position(const delog_reader *r);

/* Close the reader and free it; NULL is a no-op.  Returns 0. */
int delog_reader_close(delog_reader *r);

#ifdef __cplusplus
}
#endif
#endif
