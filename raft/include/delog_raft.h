/*
 * delog_raft.h - a struct raft_io for C-Raft 0.15 whose storage is a delog log.
 *
 * C-Raft keeps everything it persists (term, vote, log entries, truncations, snapshots)
 * behind struct raft_io.  delog_raft_init fills one in: its network, message encoding,
 * timers, clock and random numbers are C-Raft's own (a raft_uv_init io over the caller's
 * transport, normally raft_uv_tcp_init, on the caller's libuv loop); its storage methods
 * (load, bootstrap, recover, set_term, set_vote, append, truncate, snapshot_put,
 * snapshot_get) are delog's, through <delog.h> only.  docs/RAFT.md describes the on-disk
 * layout and the durability argument.
 *
 * What the io promises C-Raft:
 *  - append's callback runs (on the loop) only once delog made the entries durable;
 *  - set_term and set_vote are durable when they return (they block the loop for one
 *    forced checkpoint, as C-Raft's own io does for its metadata files);
 *  - truncate is ordered with the appends before and after it (one ordered stream of
 *    records; a crash leaves a prefix of that stream);
 *  - load returns exactly what recovery found: term, vote, the newest snapshot, and the
 *    entries after its released prefix with every truncation applied;
 *  - a damaged log is refused (RAFT_CORRUPT) before anything is loaded;
 *  - a full log makes an append wait for space (a snapshot's release), never fail, and
 *    term, vote and snapshots still find room: the log keeps a reserve for them
 *    (docs/RAFT.md, "Space"; the three calls at the end of this header).
 *
 * Conventions: functions return 0 or a C-Raft error code (RAFT_NOMEM, RAFT_IOERR, ...)
 * with a message in io->errmsg.  Every function, and every method of the io, must be
 * called on the thread running the loop the io was created on (C-Raft's own rule).
 */
#ifndef DELOG_RAFT_H
#define DELOG_RAFT_H

#include <delog.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uv_loop_s;

/* Options of delog_raft_init.  Zero-initialise, set size, then the members wanted. */
struct delog_raft_options {
	size_t size;                   /* sizeof(struct delog_raft_options) */
	const char *backend;           /* delog backend; NULL: the best available */
	enum delog_flush_policy flush; /* default DELOG_FLUSH_SYNC; DELOG_FLUSH_NONE is
					 * refused (Raft needs durable appends) */
	uint64_t log_size;             /* size of the log file; 0: 64 MiB for a new one.  A
					* smaller existing log is moved to a new log of this
					* size when opened (never shrunk: docs/RAFT.md) */
	uint32_t logbsize;             /* delog log buffer size; 0: delog's default */
};

/*
 * Fill @io (its data member is kept) as a raft_io version 2 keeping its storage in the
 * directory @dir, which must exist: the log is DIR/delog.log (created on first use),
 * snapshot data files sit beside it, and DIR/uv is handed to C-Raft's own io, which
 * probes it once at init and stores nothing there (see docs/RAFT.md).  @transport must
 * have been initialised (raft_uv_tcp_init) on @loop; the io closes it when it is
 * closed, and the caller frees it afterwards (raft_uv_tcp_close).  @opts may be NULL.
 * Nothing is opened before io->init; the log is opened (and recovered) by the first of
 * bootstrap, recover and load.
 * Returns 0, RAFT_NOMEM, RAFT_INVALID (bad options), RAFT_NAMETOOLONG.
 * Thread safety: loop thread.
 */
int delog_raft_init(struct raft_io *io, struct uv_loop_s *loop, const char *dir,
		    struct raft_uv_transport *transport, const struct delog_raft_options *opts);

/* Free what delog_raft_init allocated, after io->close's callback has run (or if
 * io->init was never called or failed).  Thread safety: loop thread. */
void delog_raft_close(struct raft_io *io);

/* delog's counters for the io's log (struct delog_stats, size set by the caller).
 * Returns 0, RAFT_INVALID (size) or RAFT_NOTFOUND (the log is not open yet).
 * Thread safety: loop thread. */
int delog_raft_stats(struct raft_io *io, struct delog_stats *st);

/*
 * The snapshot threshold to give C-Raft instead of @threshold so that the log cannot
 * fill: 1 (snapshot as soon as one more entry is applied) once the entries held take a
 * quarter of the log, or once a quarter of it is used and an eighth more than the last
 * snapshot left, else @threshold.  Used counts what only a snapshot's release frees as
 * well: entries a truncation removed, checkpoints' own overhead, old term, vote and
 * snapshot records.  Call it after each apply (it costs a comparison, and below a
 * quarter in entries a delog_stats call) and pass the result to
 * raft_set_snapshot_threshold: entries of any size then leave room in the log.
 * Thread safety: loop thread.
 */
unsigned delog_raft_snapshot_threshold(struct raft_io *io, unsigned threshold);

/*
 * 1 when a new command of @len bytes fits in the log with an eighth of the log still
 * free beside it, else 0 (nothing else on the loop may run before the raft_apply it
 * checks).  A leader's server should answer "log full" rather than apply a command
 * that does not: the eighth is what its followers need for the entries in flight and
 * a new leader for its first entry, so that a cluster whose logs filled can still
 * commit, apply, snapshot and release.  Thread safety: loop thread.
 */
int delog_raft_admit(struct raft_io *io, size_t len);

/* How many appends wait for log space (a full log, until a snapshot releases some): a
 * server may answer its clients "log full" rather than queue more.  Thread safety:
 * loop thread. */
unsigned delog_raft_waiting(struct raft_io *io);

#ifdef __cplusplus
}
#endif
#endif
