/*
 * delog.c - a log's life: open (format, recovery, writer), force, statistics, close.
 *
 * The API's top: it calls every file below (wake.c lists the layers) and nothing calls
 * into it.  Acknowledgement is policy.c's log_durable (D1, D2 there), shutdown and the
 * force queues wake.c's (SD1, F1 there); delog_force here pushes (push.c) and waits.
 *
 * Open runs recovery before anything is written: complete checkpoints go to the
 * recover callback in order, the writer continues at the recovered head, and sequence
 * numbers continue after the last recovered checkpoint (the newest durable checkpoint
 * always stays in the live region, space.c S1, so that number is never lost).
 *
 *  (U1) Open and close use no lasting log space.  S1 keeps the newest durable checkpoint
 *       and everything after it, whatever the application released, so a record written
 *       behind it stays until a newer checkpoint is durable.  Close writes an unmount
 *       record only if the log does not already end in one naming the current tail
 *       (journal/log.c L15): a log opened clean and closed with nothing written and the
 *       tail unmoved is left as it was; a moved tail frees at least one record, as much
 *       as the unmount record takes; a log opened after a crash gets the one record that
 *       makes it clean.  And close never fails DELOG_ELOGFULL: an unmount record is
 *       written only after writes that went through grants, which leave the slack free
 *       (space.c), or once after recovering a log whose crashed session did; the slack
 *       holds it many times over, and no reservation may take the slack.
 *  (U2) A read-only open (DELOG_OPEN_RDONLY) writes nothing, at open or at close:
 *       recovery runs read_only (no stamping past the head, no flush), no format, no
 *       push thread, the writer is set up (for delog_stats) but never handed a record,
 *       every call that would write refuses with DELOG_ERDONLY before it touches the
 *       log (log->read_only), and close writes no unmount record.  The device is opened
 *       O_RDONLY (delog_open), so the iolayer would refuse a write anyway (EBADF).
 *       Recovery without stamping is still exact: the next writing open recovers the
 *       same log and stamps then (journal/recover.c R7).
 *  (U3) A failed open says where and what when the caller asked (delog_options.error,
 *       struct delog_error_info): each step that refuses fills it once, from what the
 *       layer below reported (the iolayer's message, jrnl_sb_read_why, the recovery
 *       report), and delog_open stores its return value in it last, so code, place
 *       and words always belong to the same refusal.  A file system that cannot hold a
 *       durable log (the iolayer's -EOPNOTSUPP: no O_DIRECT, tmpfs, ramfs) is
 *       DELOG_ENODIRECT.
 *  (U4) A point in time (delog_options.recover_to N) is an inspection: only a read-only
 *       open takes it (check_opts).  Recovery verifies the whole log as always
 *       (jrnl_recover_opts.replay_to) and hands over checkpoints up to N only, so the
 *       sequence continues after N on this handle alone, which never writes: a writing
 *       one would number new checkpoints N+1.. beside the old N+1.. still in the log.
 *       delog_recovery's members appended with it (held_back) are written only for a
 *       caller whose options struct has recover_to (OPTS_TO_SIZE): delog_recovery has
 *       no size of its own, and an older caller's is smaller.
 *  (U5) A writing open (format, recovery's stamping, the writer) needs log sectors no
 *       smaller than the device's physical block (jrnl_sector_check), checked before
 *       anything is written: the device writes whole physical blocks, and one torn
 *       inside could garble sectors of records already durable, which no crash state
 *       models.  DELOG_EGEOMETRY, naming both sizes; a read-only open (U2) is allowed,
 *       since it writes nothing, and so is any sector where the physical block is
 *       unknown (a file system with no block device queue behind it).
 *  (U6) Creating a log is atomic: DELOG_OPEN_CREATE builds the file under a temporary
 *       name beside @path (iol_file_create_tmp), formats it, and renames it to @path
 *       only once its data and size are stable, never over a file that appeared
 *       meanwhile (iol_file_publish: -EEXIST).  A kill at any moment leaves no file at
 *       @path or a formatted log, so the next CREATE open either creates or opens it.
 *       A killed create leaves its temporary, which a later create in the directory
 *       removes (iolayer/dev.c).
 *  (U7) A closed handle is told apart where it costs one load: delog_close marks the
 *       struct closed before freeing it, past the bytes the allocator's free lists
 *       overwrite, and every call checks the mark first (DELOG_ECLOSED), a second close
 *       too, which so never frees twice.  As SQLite's magic numbers: a best effort
 *       on freed memory, until the allocator gives it to something else; a handle
 *       freed and then reused by another open is that other log.
 */
#include "engine_private.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_sim.h"

#define DEFAULT_CREATE_SIZE (64ull << 20)
#define OPTS_MIN_SIZE offsetof(struct delog_options, recovery)
/* (U4) A caller whose options reach recover_to has the delog_recovery with held_back. */
#define OPTS_TO_SIZE (offsetof(struct delog_options, recover_to) + sizeof(uint64_t))

/* ---- open ---- */

/* (U3) Say where and what a refusal found, in the caller's error info (if any). */
__attribute__((format(printf, 5, 6))) static void open_why(const struct delog_options *o,
							   uint64_t off, uint64_t lsn,
							   const char *field, const char *fmt, ...)
{
	struct delog_error_info *e = o->error;
	va_list ap;

	if (!e)
		return;
	e->offset = off;
	e->lsn = lsn;
	snprintf(e->field, sizeof(e->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

/* (U3) The open is over: its return value goes with what open_why said (nothing, when
 * it succeeded), in the error info and as the thread's reason (error.c E1). */
static int open_done(const struct delog_options *o, int err)
{
	struct delog_error_info *e = o->error;

	if (!e)
		return err;
	if (!err)
		open_why(o, 0, 0, "", "%s", "");
	e->code = err;
	return error_say(err, "%s", e->message);
}

struct open_ctx {
	struct delog *log;
	const struct delog_options *o;
	delog_recover_fn fn;
	void *arg;
	struct delog_item *items;
	size_t cap;
	uint64_t last_seq;
	int cb_err;      /* the recover callback's non-zero return, if that stopped recovery */
	uint64_t cb_seq; /* ... and the checkpoint it refused */
};

static int open_replay(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		       size_t n)
{
	struct open_ctx *oc = priv;
	struct delog_checkpoint dc = { .seq = ck->seq, .lsn = ck->commit_lsn, .nitems = n };
	int err;

	if (ck->seq <= oc->last_seq || (oc->last_seq && ck->seq != oc->last_seq + 1)) {
		/* Sequences grow by one through the log (the journal checks it first). */
		open_why(oc->o, 0, ck->commit_lsn, "commit.seq",
			 "checkpoint %llu after checkpoint %llu: sequences must grow by one",
			 (unsigned long long)ck->seq, (unsigned long long)oc->last_seq);
		return DELOG_ECORRUPT;
	}
	if (n > oc->cap) {
		struct delog_item *p = realloc(oc->items, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		oc->items = p;
		oc->cap = n;
	}
	for (size_t i = 0; i < n; i++)
		oc->items[i] = (struct delog_item){ v[i].key, v[i].data, v[i].len };
	err = space_ckpt_add(oc->log, ck->seq, ck->start_lsn);
	for (size_t i = 0; !err && oc->log->space.tracking && i < n; i++)
		err = space_ail_log(oc->log, v[i].key, ck->seq);
	if (!err && oc->fn) {
		err = oc->fn(oc->arg, &dc, oc->items, n);
		if (err) {
			oc->cb_err = err;
			oc->cb_seq = ck->seq;
		}
	}
	if (!err)
		oc->last_seq = ck->seq;
	return err;
}

/* A bad option: -EINVAL, and which option and why in the error info (U3). */
#define OPT_BAD(o, ...) (open_why((o), 0, 0, "", __VA_ARGS__), -EINVAL)

static int check_opts(const struct delog_options *o)
{
	const unsigned known = DELOG_OPEN_CREATE | DELOG_OPEN_FORMAT | DELOG_OPEN_TRACK_ITEMS |
			       DELOG_OPEN_RDONLY;

	if (o->logbufs && (o->logbufs < JRNL_MIN_LOGBUFS || o->logbufs > JRNL_MAX_LOGBUFS))
		return OPT_BAD(o, "logbufs %u: must be %u..%u (0: %u)", o->logbufs,
			       JRNL_MIN_LOGBUFS, JRNL_MAX_LOGBUFS, JRNL_MAX_LOGBUFS);
	if (o->logbsize && (o->logbsize < JRNL_MIN_LOGBSIZE || o->logbsize > JRNL_MAX_LOGBSIZE ||
			    (o->logbsize & (o->logbsize - 1))))
		return OPT_BAD(o, "logbsize %u: must be a power of two from %u to %u (0: %u)",
			       o->logbsize, JRNL_MIN_LOGBSIZE, JRNL_MAX_LOGBSIZE,
			       JRNL_MAX_LOGBSIZE);
	if (!flush_policy_get(o->flush))
		return OPT_BAD(o, "flush policy %d: no such policy", (int)o->flush);
	if (o->flags & ~known)
		return OPT_BAD(o, "flags %#x: unknown bits %#x", o->flags, o->flags & ~known);
	if ((o->flags & DELOG_OPEN_RDONLY) && (o->flags & (DELOG_OPEN_CREATE | DELOG_OPEN_FORMAT)))
		return OPT_BAD(o,
			       "DELOG_OPEN_RDONLY with DELOG_OPEN_%s: a read-only open "
			       "writes nothing",
			       o->flags & DELOG_OPEN_CREATE ? "CREATE" : "FORMAT");
	if (o->sector && o->sector != 512 && o->sector != 4096)
		return OPT_BAD(o, "sector %u: must be 512 or 4096 (0: 4096)", o->sector);
	if (o->recover_to && !(o->flags & DELOG_OPEN_RDONLY))
		return OPT_BAD(o,
			       "recover_to %llu: only with DELOG_OPEN_RDONLY (a writing open "
			       "would number new checkpoints after %llu while the log still holds "
			       "the old ones)",
			       (unsigned long long)o->recover_to,
			       (unsigned long long)o->recover_to);
	return 0;
}

int log_check(const struct delog *log)
{
	if (!log)
		return error_say(-EINVAL, "a NULL delog handle");
	if (log->magic != LOG_MAGIC_OPEN)
		return error_say(DELOG_ECLOSED, "this handle was closed: delog_close frees it, and "
						"no call may follow");
	return 0;
}

/* (U2) DELOG_ERDONLY, with its reason. */
int log_rdonly_why(void)
{
	return error_say(DELOG_ERDONLY, "the log was opened with DELOG_OPEN_RDONLY");
}

/* (wake.c SD1) DELOG_ESHUTDOWN, always, with the first error as its reason. */
int log_shutdown_why(const struct delog *log)
{
	int first = atomic_load(&log->error);

	return error_say(DELOG_ESHUTDOWN,
			 "the log shut down after %s: nothing more is written, what was "
			 "acknowledged stays recoverable; close it and open it again",
			 first ? delog_err_name(first) : "an error");
}

int log_check_writable(const struct delog *log)
{
	int err = log_check(log);

	if (err)
		return err;
	if (log->read_only)
		return log_rdonly_why();
	return atomic_load(&log->error) ? log_shutdown_why(log) : 0;
}

static void log_free(struct delog *log)
{
	log->magic = LOG_MAGIC_CLOSED; /* (U7) */
	if (log->cur) {
		cil_ctx_destroy(log->cur);
		free(log->cur);
	}
	if (log->spare) {
		cil_ctx_destroy(log->spare);
		free(log->spare);
	}
	if (log->efd >= 0)
		close(log->efd);
	pub_release(log);
	space_destroy(log);
	pthread_rwlock_destroy(&log->ctx_lock);
	pthread_cond_destroy(&log->push_cond);
	pthread_cond_destroy(&log->writer_cond);
	pthread_mutex_destroy(&log->lock);
	pthread_mutex_destroy(&log->write_lock);
	if (log->own_dev)
		iol_dev_close(log->dev);
	free(log);
}

/* Open, step 1: the struct delog of @dev, its locks and the caller's policy and push
 * callback.  On failure a device the log was to own (@own) is closed. */
static int open_alloc(struct iol_dev *dev, bool own, const struct delog_options *o,
		      struct delog **out)
{
	pthread_rwlockattr_t ra;
	struct delog *log;

	log = calloc(1, sizeof(*log));
	if (!log) {
		if (own)
			iol_dev_close(dev);
		return -ENOMEM;
	}
	log->dev = dev;
	log->own_dev = own;
	log->magic = LOG_MAGIC_OPEN; /* (U7): the push callback may get it during the open */
	log->efd = -1;
	pthread_mutex_init(&log->lock, NULL);
	pthread_mutex_init(&log->write_lock, NULL);
	pthread_cond_init(&log->push_cond, NULL);
	pthread_cond_init(&log->writer_cond, NULL);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&log->ctx_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	log->read_only = o->flags & DELOG_OPEN_RDONLY;
	log->policy_id = o->flush;
	log->policy = flush_policy_get(o->flush);
	log->push_cb = o->push;
	log->push_arg = o->push_arg;
	*out = log;
	return 0;
}

/* (U5) May the log's @sector be written on this device?  0, or DELOG_EGEOMETRY and why
 * (at @field: the superblock's, or "" for the format the caller asked for). */
static int sector_fits(struct delog *log, const struct delog_options *o, uint32_t sector,
		       const char *field)
{
	char why[sizeof(o->error->message)];
	int err = jrnl_sector_check(log->dev, sector, why, sizeof(why));

	if (err)
		open_why(o, 0, 0, field, "%s", why);
	return err;
}

/*
 * Open, step 2: the log's geometry, from its superblock, or from a new format when the
 * device is new (@fresh), DELOG_OPEN_FORMAT asks for one, or DELOG_OPEN_CREATE finds no
 * log on a device the caller opened.  A writing open checks the sector against the
 * device's physical block first (U5).
 */
static int open_format_or_read(struct delog *log, bool fresh, const struct delog_options *o)
{
	struct jrnl_sb_why why;
	int err = jrnl_sb_read_why(log->dev, &log->geom, &why);

	/* (U2) A read-only open never formats (check_opts refuses CREATE, FORMAT). */
	if (!log->read_only &&
	    (fresh || (o->flags & DELOG_OPEN_FORMAT) ||
	     (err == DELOG_ENOTLOG && !log->own_dev && (o->flags & DELOG_OPEN_CREATE)))) {
		struct jrnl_format_opts fo = { .sector = o->sector, .log_size = 0 };

		if (o->create_size)
			fo.log_size = o->create_size;
		if ((err = sector_fits(log, o, o->sector ? o->sector : 4096, "")))
			return err;
		err = jrnl_format(log->dev, &fo, &log->geom);
		if (err == -EINVAL)
			open_why(o, 0, 0, "",
				 "cannot format: create_size %llu (0: the whole device), sector %u, "
				 "on a device of %llu bytes with O_DIRECT alignment %u (the smallest "
				 "log is %llu bytes)",
				 (unsigned long long)o->create_size, o->sector ? o->sector : 4096,
				 (unsigned long long)iol_dev_geom(log->dev)->size_bytes,
				 iol_dev_geom(log->dev)->dio_off_align,
				 (unsigned long long)DELOG_LOG_MIN_BYTES);
		return err;
	}
	if (err)
		open_why(o, why.offset, 0, why.field, "%s",
			 *why.what ? why.what : "reading the superblock");
	else if (!log->read_only)
		err = sector_fits(log, o, log->geom.sector, "sb.sector_size");
	return err;
}

/*
 * Open, step 3: recovery.  The AIL first, since replay puts the recovered checkpoints
 * (and, tracking items, their keys) in it; complete checkpoints go to the caller's
 * recover callback in order (open_replay).  Fills @rep, *@last_seq (the last recovered
 * checkpoint's sequence, 0 if none) and the caller's delog_recovery.
 */
static int open_recover(struct delog *log, const struct delog_options *o, struct jrnl_report *rep,
			uint64_t *last_seq)
{
	struct open_ctx oc = { .log = log, .o = o, .fn = o->recover, .arg = o->recover_arg };
	struct jrnl_recover_opts ro = { .replay = open_replay,
					.priv = &oc,
					.read_only = log->read_only,
					.replay_to = o->recover_to, /* (U4) */
					.hold_bytes = o->recover_mem };
	int err;

	space_init(log);
	log->space.tracking = o->flags & DELOG_OPEN_TRACK_ITEMS;
	err = jrnl_recover(log->dev, &log->geom, &ro, rep);
	free(oc.items);
	if (err && rep->corruption == err)
		open_why(o, rep->corrupt_offset, rep->corrupt_lsn, rep->corrupt_field, "%s",
			 rep->corrupt_what);
	else if (err && oc.cb_err == err)
		open_why(o, 0, 0, "", "the recover callback returned %d for checkpoint %llu", err,
			 (unsigned long long)oc.cb_seq);
	if (err)
		return err;
	if (o->recovery) {
		struct delog_recovery full = {
			.clean = rep->clean,
			.checkpoints = rep->checkpoints,
			.items = rep->items,
			.bytes = rep->bytes_replayed,
			.dropped = rep->dropped,
			.torn_bytes = rep->torn_bytes,
			.last_seq = oc.last_seq,
			.head_lsn = rep->head_lsn,
			.tail_lsn = rep->tail_lsn,
			.held_back = rep->held_back,
		};

		/* (U4) An older caller's struct ends before held_back. */
		memcpy(o->recovery, &full,
		       o->size >= OPTS_TO_SIZE ? sizeof(full) :
						 offsetof(struct delog_recovery, held_back));
	}
	*last_seq = oc.last_seq;
	return 0;
}

/*
 * Open, step 4: the writer continues at the recovered head (@rep) and sequence numbers
 * after @last_seq; then the CIL's contexts, the eventfd and the push thread.  On failure
 * the writer is closed again; the caller frees the rest (log_free).  A read-only log
 * (U2) gets the smallest ring, which is never written, and no push thread.
 */
static int open_start(struct delog *log, const struct delog_options *o,
		      const struct jrnl_report *rep, uint64_t last_seq)
{
	struct jrnl_log_opts lo = { .logbufs = o->logbufs, .logbsize = o->logbsize };
	struct iol_counters ic;
	uint64_t push_max;
	int err;

	/* cil.c CIL5: at most log/8, so that a checkpoint stays near a quarter of the log. */
	push_max = log->geom.log_size / 8 < (32u << 20) ? log->geom.log_size / 8 : 32u << 20;
	log->push_bytes = o->cil_push_bytes ? o->cil_push_bytes : push_max;
	if (log->push_bytes > log->geom.log_size / 8)
		log->push_bytes = log->geom.log_size / 8;
	lo.no_flush = log->policy->never_flushes;
	if (log->read_only) {
		lo.logbufs = JRNL_MIN_LOGBUFS;
		lo.logbsize = JRNL_MIN_LOGBSIZE;
		lo.read_only = true;
	}
	err = jrnl_log_open(log->dev, &log->geom, rep, &lo, &log->jl);
	if (err == -EINVAL)
		open_why(o, 0, 0, "",
			 "the writer cannot run this log here: %llu bytes of %u-byte sectors, "
			 "logbufs %u x logbsize %u, O_DIRECT alignment %u",
			 (unsigned long long)log->geom.log_size, log->geom.sector,
			 lo.logbufs ? lo.logbufs : JRNL_MAX_LOGBUFS,
			 lo.logbsize ? lo.logbsize : JRNL_MAX_LOGBSIZE,
			 iol_dev_geom(log->dev)->dio_off_align);
	if (err)
		return err;
	jrnl_grant_init(log->jl, &space_grant_ops, log);
	log->space.tail_lsn = rep->tail_lsn;
	/* What recovery found is durable: its keys take their AIL places now (S3). */
	if (log->space.tracking && (err = space_ckpt_durable(log, last_seq)))
		goto fail_jl;
	atomic_store(&log->durable_seq, last_seq);
	log->durable_seq0 = last_seq;
	log->done_seq = log->pushed_seq = last_seq;
	log->cur = malloc(sizeof(*log->cur));
	log->spare = malloc(sizeof(*log->spare));
	log->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!log->cur || !log->spare || log->efd < 0) {
		err = log->efd < 0 ? -errno : -ENOMEM;
		free(log->cur);
		free(log->spare);
		log->cur = log->spare = NULL;
		goto fail_jl;
	}
	cil_ctx_init(log->cur);
	cil_ctx_init(log->spare);
	iol_dev_counters(log->dev, &ic);
	log->dev_flushes0 = ic.dev_flushes;
	log->cur->seq = last_seq + 1;
	atomic_store(&log->open_seq, log->cur->seq);
	if (log->read_only)
		return 0;
	err = push_start(log);
	if (err)
		goto fail_jl;
	return 0;
fail_jl:
	jrnl_log_close(log->jl);
	return err;
}

/*
 * Open a log on @dev (owned by the log if @own; @fresh: a device just made, to format).
 * (U6) A fresh file is the temporary @tmp, which becomes @path once it is formatted and
 * durable (iol_file_publish), before recovery or anything else writes it.
 */
static int open_common(struct iol_dev *dev, bool own, bool fresh, const char *tmp, const char *path,
		       const struct delog_options *o, delog **out)
{
	struct jrnl_report rep;
	struct delog *log;
	uint64_t last_seq = 0;
	int err;

	err = open_alloc(dev, own, o, &log);
	if (err)
		return err;
	err = open_format_or_read(log, fresh, o);
	if (!err && tmp) {
		struct delog_error_info *e = o->error;

		err = iol_file_publish(tmp, path, iol_dev_fd(dev), e ? e->message : NULL,
				       e ? sizeof(e->message) : 0);
	}
	if (!err)
		err = open_recover(log, o, &rep, &last_seq);
	if (!err)
		err = open_start(log, o, &rep, last_seq);
	if (err) {
		log_free(log);
		return err;
	}
	*out = log;
	return 0;
}

/* A caller's options, of a size between OPTS_MIN_SIZE and ours: fields it does not
 * have read as zero (an older caller), so nothing past its struct is ever read.  The
 * error info, if given and large enough, is cleared (but for its size) before anything
 * else: a too small one is -EINVAL, and never written.  Without one, @own takes the
 * refusal, for the thread's reason (open_done). */
static int copy_opts(const struct delog_options *in, struct delog_options *o,
		     struct delog_error_info *own)
{
	size_t n;

	memset(o, 0, sizeof(*o));
	memset(own, 0, sizeof(*own));
	own->size = sizeof(*own);
	o->size = sizeof(*o);
	o->error = own;
	if (!in)
		return 0;
	if (in->size < OPTS_MIN_SIZE)
		return OPT_BAD(o,
			       "delog_options.size %zu: smaller than the first release's %zu "
			       "(set it to sizeof(struct delog_options))",
			       in->size, (size_t)OPTS_MIN_SIZE);
	n = in->size < sizeof(*o) ? in->size : sizeof(*o);
	memcpy(o, in, n);
	o->size = n;
	if (o->error) {
		size_t size = o->error->size;

		if (size < sizeof(*o->error)) {
			o->error = own;
			return OPT_BAD(o,
				       "delog_error_info.size %zu: smaller than this library's "
				       "%zu (set it to sizeof(struct delog_error_info))",
				       size, sizeof(*o->error));
		}
		memset(o->error, 0, sizeof(*o->error));
		o->error->size = size;
	} else {
		o->error = own;
	}
	/* A later header's struct: fields this library does not know are taken at their
	 * default, zero, as a caller that never set them leaves them; set, they ask for
	 * something this library cannot do. */
	for (size_t i = sizeof(*o); i < in->size; i++)
		if (((const unsigned char *)in)[i])
			return OPT_BAD(o,
				       "delog_options.size %zu: larger than this library's %zu, "
				       "and byte %zu past it is set (built against a later "
				       "delog.h?)",
				       in->size, sizeof(*o), i);
	return check_opts(o);
}

int engine_open_dev(struct iol_dev *dev, const struct delog_options *opts, delog **out)
{
	struct delog_error_info own;
	struct delog_options o;
	int err;

	if (!dev || !out)
		return -EINVAL;
	*out = NULL;
	err = copy_opts(opts, &o, &own);
	if (!err)
		err = open_common(dev, false, false, NULL, NULL, &o, out);
	return open_done(&o, err);
}

/*
 * delog_open once its options are checked: the device at @path (or a new sim disk), then
 * open_common.  (U6) A file it creates is made under a temporary name and given @path
 * only once formatted and durable; the temporary is removed again if the open fails
 * before that.  A log that got its name stays, whatever fails after: it is a whole,
 * empty log.
 */
static int open_path(const char *path, const struct delog_options *o, delog **out)
{
	uint64_t size = JRNL_SB_AREA + (o->create_size ? o->create_size : DEFAULT_CREATE_SIZE);
	struct iol_dev_opts io = { .size = sizeof(io) };
	struct iol_sim_opts so = { .size = sizeof(so) };
	struct delog_error_info *e = o->error;
	struct iol_dev *dev;
	bool fresh = false;
	char tmp[PATH_MAX] = "";
	const char *devpath;
	struct stat st;
	int err;

	io.backend = o->backend;
	io.read_only = o->flags & DELOG_OPEN_RDONLY; /* (U2) */
	if (e) {
		io.errmsg = e->message;
		io.errmsg_len = sizeof(e->message);
	}
	if (o->backend && !strcmp(o->backend, "sim")) {
		if (io.read_only)
			return OPT_BAD(o, "DELOG_OPEN_RDONLY on the sim backend, whose new disk "
					  "holds no log");
		so.dev_bytes = size;
		so.sector = o->sector ? o->sector : 4096;
		/* Nothing can cut this disk's power (its device is not the caller's), so it
		 * keeps no cache to lose, and it has a ->run as every descriptor backend
		 * has (a lone forcer writes and flushes on its own thread, journal/log.c
		 * L10): what is measured on it is delog, not the model. */
		so.write_through = true;
		so.inline_run = true;
		io.sim = &so;
		path = NULL;
		fresh = true;
	} else {
		if (!path)
			return OPT_BAD(o, "no path");
		if (stat(path, &st)) {
			err = -errno;
			if (err != -ENOENT || !(o->flags & DELOG_OPEN_CREATE)) {
				open_why(o, 0, 0, "", "%s: %s%s", path, delog_strerror(err),
					 err == -ENOENT ? " (DELOG_OPEN_CREATE creates it)" : "");
				return err;
			}
			err = iol_file_create_tmp(path, size, 0600, tmp, sizeof(tmp), io.errmsg,
						  io.errmsg_len);
			if (err)
				return err;
			fresh = true;
		}
	}
	devpath = fresh && path ? tmp : path;
	err = iol_dev_open(devpath, &io, &dev);
	if (err) {
		if (err == -EOPNOTSUPP)
			err = DELOG_ENODIRECT; /* (U3): the iolayer's message names the reason */
		if (e && (err == -EROFS || err == -EACCES) && !io.read_only) {
			size_t n = strlen(e->message);

			snprintf(e->message + n, sizeof(e->message) - n,
				 " (DELOG_OPEN_RDONLY opens it without writing)");
		}
		if (fresh && path) {
			unlink(tmp);
			iol_errmsg_rename(io.errmsg, io.errmsg_len, tmp, path);
		}
		return err;
	}
	if (e)
		e->message[0] = 0; /* what a backend that was passed over said */
	err = open_common(dev, true, fresh, fresh && path ? tmp : NULL, path, o, out);
	if (!err && path && !io.read_only) /* followers in other processes (publish.c) */
		pub_open(*out, path, atomic_load(&(*out)->durable_seq));
	if (err && fresh && path) {
		unlink(tmp);
		iol_errmsg_rename(io.errmsg, io.errmsg_len, tmp, path);
	}
	return err;
}

int delog_open(const char *path, const struct delog_options *in, delog **out)
{
	struct delog_error_info own;
	struct delog_options o;
	int err;

	if (!out)
		return error_say(-EINVAL, "delog_open: a NULL @out");
	*out = NULL;
	err = copy_opts(in, &o, &own);
	if (!err)
		err = open_path(path, &o, out);
	return open_done(&o, err);
}

int delog_close(delog *log)
{
	int err, e2;

	error_enter(__func__);
	if (!log)
		return 0;
	if ((err = log_check(log)))
		return err; /* (U7) closed already: nothing is freed twice */
	push_stop(log);
	policy_wait_flushes(log);
	err = atomic_load(&log->error);
	/* (U2) A read-only log has nothing to unmount. */
	if (!err && !log->read_only) {
		err = jrnl_log_unmount(log->jl); /* (U1) */
		if (err)
			log_shutdown(log, err);
	}
	e2 = jrnl_log_close(log->jl);
	if (!err)
		err = e2;
	if (!err)
		err = atomic_load(&log->error);
	if (!err)
		pub_state(log, PUB_CLOSED); /* publish.c PB3: everything is durable */
	log_free(log);
	return err;
}

struct iol_dev *engine_dev(delog *log)
{
	return log->dev;
}

void engine_journal_stats(delog *log, struct jrnl_log_stats *out)
{
	jrnl_log_stats(log->jl, out);
}

void engine_delay_cover(delog *log, uint64_t ns)
{
	atomic_store(&log->space.cover_delay_ns, ns);
}

/* ---- force and the watermark ---- */

/*
 * What a force (@nowait: delog_force_nowait) of *@seq needs, counted in its counter: the
 * refusals every force shares (a read-only or shut-down log), then *@seq resolved (0:
 * everything committed so far: the open checkpoint if it holds anything, else the last
 * one written), which must not lie beyond the open checkpoint (-EINVAL).  *@open gets
 * the open sequence.
 */
static int force_begin(struct delog *log, uint64_t *seq, uint64_t *open, bool nowait)
{
	int err;
	bool has;

	error_clear();
	if ((err = log_check(log)))
		return err;
	if (log->read_only)
		return log_rdonly_why(); /* (U2) */
	atomic_fetch_add_explicit(nowait ? &log->st_forces_nowait : &log->st_forces, 1,
				  memory_order_relaxed);
	if (atomic_load(&log->error))
		return log_shutdown_why(log);
	pthread_rwlock_rdlock(&log->ctx_lock);
	*open = log->cur->seq;
	has = atomic_load(&log->cur->ntx) != 0;
	pthread_rwlock_unlock(&log->ctx_lock);
	if (!*seq || (*seq == *open && !has))
		*seq = has ? *open : *open - 1;
	if (*seq > *open)
		return error_say(-EINVAL,
				 "checkpoint %llu is not committed yet: the open one is %llu",
				 (unsigned long long)*seq, (unsigned long long)*open);
	return 0;
}

/* Ask the push thread for @seq if it is still open (a sequence already swapped out is
 * being written by whoever swapped it, and becomes durable without asking); @nowait: for
 * delog_force_nowait, whose forcer the push thread then is (push.c). */
static void force_ask(struct delog *log, uint64_t seq, bool nowait)
{
	if (atomic_load(&log->open_seq) <= seq) {
		pthread_mutex_lock(&log->lock);
		if (atomic_load(&log->open_seq) <= seq) {
			if (nowait && seq > log->nowait_seq)
				log->nowait_seq = seq;
			push_request(log, seq);
		}
		pthread_mutex_unlock(&log->lock);
	}
}

int delog_force(delog *log, uint64_t seq)
{
	uint64_t open;
	int err;

	error_enter(__func__);
	err = force_begin(log, &seq, &open, false);

	if (err)
		return err;
	if (atomic_load(&log->durable_seq) >= seq) {
		atomic_fetch_add_explicit(&log->st_force_no_io, 1, memory_order_relaxed);
		return 0;
	}
	atomic_fetch_add_explicit(&log->st_force_waits, 1, memory_order_relaxed);
	/* Nobody writing: push it ourselves (push.c), no hand-off to the push thread. */
	if (seq == open && pthread_mutex_trylock(&log->write_lock) == 0) {
		if (atomic_load(&log->open_seq) == seq)
			push_now(log, true);
		pthread_mutex_unlock(&log->write_lock);
	}
	force_ask(log, seq, false);
	force_wait(log, seq);
	return atomic_load(&log->durable_seq) >= seq ? 0 : log_shutdown_why(log);
}

/*
 * The non-blocking force: the push thread writes the checkpoint and the policy's
 * completions make it durable (push.c: a checkpoint the push thread wrote needs no
 * thread of the caller's under any policy), so asking is all there is to do here.
 * Requests for the open checkpoint set force_seq once; those that find it set, or find
 * their checkpoint already swapped out, take no lock but ctx_lock's read side.
 */
int delog_force_nowait(delog *log, uint64_t seq)
{
	uint64_t open;
	int err;

	error_enter(__func__);
	err = force_begin(log, &seq, &open, true);

	if (err)
		return err;
	if (atomic_load(&log->durable_seq) >= seq)
		return 1;
	if (atomic_load(&log->force_seq) < seq)
		force_ask(log, seq, true);
	return 0;
}

int delog_tx_commit_force(delog_tx *tx, uint64_t *seqp)
{
	struct delog *log = tx ? tx->log : NULL;
	uint64_t seq;
	int err;

	error_enter(__func__);
	err = delog_tx_commit(tx, &seq);
	if (!err)
		err = delog_force(log, seq);
	if (!err && seqp)
		*seqp = seq;
	return err;
}

uint64_t delog_durable_seq(const delog *log)
{
	return log_check(log) ? 0 : atomic_load(&((struct delog *)log)->durable_seq);
}

int delog_durable_fd(const delog *log)
{
	struct delog *l = (struct delog *)log;
	int err;

	error_enter(__func__);
	if ((err = log_check(log)))
		return err;

	/* The first call arms efd_signal.  An advance (or shutdown) before it did not
	 * write the eventfd: make it readable now.  seq_cst on both sides: either this
	 * load sees log_durable's store, or log_durable's efd_signal sees the flag. */
	if (!atomic_exchange(&l->efd_armed, true) &&
	    (atomic_load(&l->durable_seq) > l->durable_seq0 || atomic_load(&l->error)))
		efd_write(l);
	return l->efd;
}

int delog_error(const delog *log)
{
	int err = log_check(log);

	return err ? err : atomic_load(&((struct delog *)log)->error);
}

/*
 * Flush accounting: device_flushes counts the cache flushes the device performs, not
 * the flushes delog asks for: the iolayer's dev_flushes since the log opened.  On a
 * real disk or file the iolayer merges the flushes asked for while one is in flight
 * into the next one (flush gate, iolayer/flush.c), as the block layer would, so the
 * kernel merges none and each one counted is one the device does; a FUA write on a
 * device without native FUA (iol_geom.fua != 1; unknown counts as not, which never
 * hides a flush) is a write and a gated flush there.  The sim disk does FUA natively and
 * counts a flush per PREFLUSH write and flush request.
 */
int delog_stats(const delog *clog, struct delog_stats *out)
{
	struct delog *log = (struct delog *)clog;
	struct delog_stats full, *st = &full;
	struct jrnl_log_stats js;
	struct iol_counters ic;
	size_t size;
	int fua, err;

	error_enter(__func__);
	if ((err = log_check(log)))
		return err;
	if (!out)
		return error_say(-EINVAL, "delog_stats: a NULL @st");
	if (out->size < sizeof(struct delog_stats))
		return error_say(-EINVAL,
				 "delog_stats: st->size %zu is smaller than this library's %zu "
				 "(set it to sizeof(struct delog_stats))",
				 out->size, sizeof(struct delog_stats));
	size = out->size;
	memset(st, 0, sizeof(*st));
	jrnl_log_stats(log->jl, &js);
	fua = iol_dev_geom(log->dev)->fua;
	st->transactions = atomic_load(&log->st_tx);
	st->items_logged = atomic_load(&log->st_items);
	st->relogged = atomic_load(&log->st_relogged);
	st->forces = atomic_load(&log->st_forces);
	st->force_waits = atomic_load(&log->st_force_waits);
	st->force_no_io = atomic_load(&log->st_force_no_io);
	st->forces_nowait = atomic_load(&log->st_forces_nowait);
	st->logged_bytes = atomic_load(&log->st_logged_bytes);
	st->copied_bytes = st->logged_bytes + atomic_load(&log->st_copied_bytes);
	pthread_mutex_lock(&log->lock);
	st->checkpoints = log->st_ckpts;
	st->checkpoint_items = log->st_ckpt_items;
	st->checkpoint_bytes = log->st_ckpt_bytes;
	st->txs_per_checkpoint = log->st_ckpts ? (double)log->st_ckpt_txs / log->st_ckpts : 0;
	pthread_mutex_unlock(&log->lock);
	st->records = js.records;
	st->record_bytes = js.record_bytes;
	st->preflushes = js.preflush_writes;
	st->fua_writes = js.fua_writes;
	st->flushes = js.flushes;
	st->device_fua = fua;
	st->fua_flushes = fua == 1 ? 0 : js.fua_writes;
	iol_dev_counters(log->dev, &ic);
	st->device_flushes = ic.dev_flushes - log->dev_flushes0;
	if (st->checkpoints)
		st->flushes_per_checkpoint = (double)st->device_flushes / st->checkpoints;
	st->bytes_per_flush = st->device_flushes ? (double)js.record_bytes / st->device_flushes : 0;
	st->durable_seq = atomic_load(&log->durable_seq);
	st->open_seq = atomic_load(&log->open_seq);
	st->log_size = log->geom.log_size;
	st->log_used = log->geom.log_size - jrnl_log_free_bytes(log->jl);
	jrnl_grant_stats(log->jl, &st->reserved_bytes, &st->space_waits);
	pthread_rwlock_rdlock(&log->ctx_lock);
	st->cil_bytes = atomic_load(&log->cur->cost);
	pthread_rwlock_unlock(&log->ctx_lock);
	st->head_lsn = js.head_lsn;
	st->tail_lsn = js.tail_lsn;
	pthread_mutex_lock(&log->space.lock);
	st->push_calls = log->space.push_calls;
	st->space_flushes = log->space.item_flushes + js.bound_flushes + js.cover_flushes;
	pthread_mutex_unlock(&log->space.lock);
	/* An older caller's smaller struct gets the fields it has (delog.h). */
	memcpy(out, &full, size < sizeof(full) ? size : sizeof(full));
	out->size = size;
	return 0;
}
