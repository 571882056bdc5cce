/*
 * salvage.c - `delog recover --salvage NEWLOG [--to N] PATH`: copy what verifies of a
 * damaged log into a new one, and say exactly what was dropped.
 *
 * A log that recovery refuses (a flipped byte behind the torn-write window, a lost
 * COMMIT, ...) stays refused: delog_open and `delog recover` never truncate it.  This is
 * the opt-in way out, as RocksDB's point-in-time WAL recovery and pg_resetwal are, with
 * one difference: the damaged log is never written.  Steps:
 *
 *  1. PATH is opened read-only (O_RDONLY) and its superblock read.  A refused
 *     superblock (bad magic, CRC, version, geometry) ends it here: without a trusted
 *     sector size, log size and uuid no record can be verified, so nothing can be
 *     salvaged (the refusal names the field).
 *  2. A planning run of recovery in salvage mode (jrnl_recover_opts.salvage, recover.c
 *     R12): every record from the tail is verified by the checks recovery always makes,
 *     and the first damage ends the log.  The complete checkpoints before it (up to --to
 *     N) are counted and measured; what follows it is only scanned, to report what was
 *     lost.  Nothing after the damage is kept, even where valid records follow: a
 *     checkpoint after it may depend on the one the damage destroyed, which no check
 *     of the format can rule out (docs/FORMAT.md, "Salvage").
 *  3. NEWLOG is made under a temporary name beside it (NEWLOG.salvage-PID-K), formatted
 *     with PATH's sector size and log size (grown when the kept checkpoints would take
 *     more than three quarters of it; --size sets it), and a second run of recovery
 *     hands the same checkpoints to the journal's writer: one log transaction per
 *     checkpoint, under its own sequence number (the engine's API would number them
 *     from 1, and an application that skips replayed checkpoints by sequence would then
 *     skip the wrong ones), the items in the order recovery hands them over.  No
 *     transaction limit applies (the writer's is the log's free space, not a quarter
 *     of it).  Then a flush and an unmount record: NEWLOG is a cleanly closed log.
 *  4. NEWLOG is recovered (strictly, read-only) and must hand back exactly what was
 *     written: the same count, sequences, items and bytes, clean.  Only then is it
 *     moved to its name (link(2) without --force, so a file that appeared meanwhile is
 *     not replaced; rename(2) with it) and the directory synced.  Any failure removes
 *     the temporary file: NEWLOG, and PATH, are left as they were.
 *
 * NEWLOG has a new uuid; its next checkpoint (the engine's, on open) follows every
 * sequence PATH may have given out (plan_fill: empty checkpoints after the last one
 * kept, up to the report's high_seq), never one of the dropped checkpoints' numbers.
 */
#include "tools.h"

#include "salvage.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The writer's ring for NEWLOG: the largest buffers, so the fewest record headers. */
#define NEW_LOGBUFS 8u
#define NEW_LOGBSIZE (256u << 10)

/* What a run of recovery handed over (kept), and the log bytes it would take. */
struct kept {
	uint64_t ckpts, items, bytes, first, last;
	uint64_t need; /* estimated log bytes: ops, headers and padding */
};

static void kept_add(struct kept *k, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		     size_t n)
{
	if (!k->ckpts)
		k->first = ck->seq;
	k->last = ck->seq;
	k->ckpts++;
	k->items += n;
	for (size_t i = 0; i < n; i++)
		k->bytes += v[i].len;
	/* START and COMMIT ops (16 + 16, 16 + 32), an op header and padding per item, and
	 * the item headers and data (payload_bytes). */
	k->need += ck->payload_bytes + (uint64_t)n * 24 + 96;
}

static int plan_cb(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v, size_t n)
{
	kept_add(priv, ck, v, n);
	return 0;
}

struct copy {
	struct jrnl_log *log;
	struct kept k;
	int err;      /* the writer's error, if it stopped the copy ... */
	uint64_t seq; /* ... at this checkpoint */
};

/* One checkpoint into NEWLOG: one log transaction of the same sequence and items. */
static int copy_cb(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v, size_t n)
{
	struct copy *c = priv;
	struct jrnl_wtx tx;
	int err;

	err = jrnl_tx_start(c->log, ck->seq, 0, &tx);
	for (size_t i = 0; !err && i < n; i++)
		err = jrnl_tx_item(&tx, v[i].key, v[i].data, v[i].len);
	if (!err)
		err = jrnl_tx_commit(&tx, NULL, NULL);
	if (err) {
		c->err = err;
		c->seq = ck->seq;
		return err;
	}
	kept_add(&c->k, ck, v, n);
	return 0;
}

/* What the run found and what became of NEWLOG, for the report. */
struct outcome {
	const struct salvage_opts *o;
	const struct jrnl_geom *g;
	struct jrnl_report rep; /* the planning run's */
	struct kept k;
	uint64_t fill_first, fill_last; /* empty checkpoints after k (0: none) */
	uint64_t size;                  /* NEWLOG's log size */
	bool grown;                     /* larger than PATH's log, for the kept checkpoints */
	bool written;                   /* NEWLOG is in place, verified */
	char uuid[37];                  /* NEWLOG's */
};

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* NEWLOG's next checkpoint: after everything it holds, kept or empty. */
static uint64_t next_seq(const struct outcome *x)
{
	return (x->fill_last ? x->fill_last : x->k.ckpts ? x->k.last : 0) + 1;
}

static void print_numbering(FILE *f, const struct outcome *x)
{
	const struct jrnl_report *r = &x->rep;

	fprintf(f,
		"numbering: the log names sequences up to %" PRIu64 " (last verified %" PRIu64
		", last started %" PRIu64 ", after the damage %" PRIu64
		", in the damaged record %" PRIu64 "; 0: none)",
		r->high_seq, r->verified_seq, r->started_seq, r->lost_high_seq, r->damaged_seq);
	if (x->fill_last && x->fill_first == x->fill_last)
		fprintf(f, "; checkpoint %" PRIu64 " is kept empty", x->fill_first);
	else if (x->fill_last)
		fprintf(f, "; checkpoints %" PRIu64 "..%" PRIu64 " are kept empty", x->fill_first,
			x->fill_last);
	fprintf(f, ", so the new log's next checkpoint is %" PRIu64 "\n", next_seq(x));
}

static void print_outcome(FILE *f, const struct outcome *x)
{
	const struct jrnl_report *r = &x->rep;
	char a[32], b[32];

	if (r->salvaged)
		fprintf(f, "damage: %s at byte %" PRIu64 " (record lsn %s%s%s): %s\n",
			tool_err_name(r->corruption), r->corrupt_offset,
			tool_lsn(r->corrupt_lsn, a, sizeof(a)), *r->corrupt_field ? ", field " : "",
			r->corrupt_field, r->corrupt_what);
	else
		fprintf(f, "damage: none: the whole log verifies\n");
	if (x->k.ckpts)
		fprintf(f,
			"kept: checkpoints %" PRIu64 "..%" PRIu64 " (%" PRIu64
			" checkpoint%s, %" PRIu64 " items, %s of item data)\n",
			x->k.first, x->k.last, x->k.ckpts, plural(x->k.ckpts), x->k.items,
			fmt_bytes(x->k.bytes, a, sizeof(a)));
	else
		fprintf(f, "kept: no checkpoint (none complete before the damage%s)\n",
			x->o->to ? " and --to" : "");
	if (r->held_back)
		fprintf(f,
			"held back by --to %" PRIu64 ": checkpoints %" PRIu64 "..%" PRIu64
			" (%" PRIu64 " verified checkpoint%s after it)\n",
			x->o->to, r->verified_seq - r->held_back + 1, r->verified_seq, r->held_back,
			plural(r->held_back));
	if (r->salvaged && r->verified_seq && r->high_seq > r->verified_seq)
		fprintf(f,
			"dropped: checkpoints %" PRIu64 "..%" PRIu64 ": every one after checkpoint "
			"%" PRIu64 ", the last verified, up to the highest sequence the log "
			"names\n",
			r->verified_seq + 1, r->high_seq, r->verified_seq);
	else if (r->salvaged && r->verified_seq)
		fprintf(f,
			"dropped: checkpoints from %" PRIu64 " on: every one after checkpoint "
			"%" PRIu64 ", the last verified (no later sequence is readable)\n",
			r->verified_seq + 1, r->verified_seq);
	else if (r->salvaged)
		fprintf(f,
			"dropped: every checkpoint from the tail on%s (none before the damage "
			"verified)\n",
			r->high_seq ? ", up to the highest sequence the log names" : "");
	if (r->dropped)
		fprintf(f,
			"dropped: %" PRIu64 " incomplete checkpoint%s (started, never committed "
			"before the %s)\n",
			r->dropped, plural(r->dropped), r->salvaged ? "damage" : "head");
	if (r->salvaged) {
		fprintf(f, "dropped: %s of log from byte %" PRIu64 " (record lsn %s) on",
			fmt_bytes(r->salvage_bytes, a, sizeof(a)), r->salvage_offset,
			tool_lsn(r->salvage_lsn, b, sizeof(b)));
		if (r->lost_commits)
			fprintf(f,
				", where valid records still hold the commits of %" PRIu64
				" later checkpoint%s (%" PRIu64 "..%" PRIu64 "): not kept, as "
				"nothing after the damage can be verified\n",
				r->lost_commits, plural(r->lost_commits), r->lost_first_seq,
				r->lost_last_seq);
		else
			fprintf(f, "; no later commit is readable there\n");
	}
	if (r->torn_bytes)
		fprintf(f, "torn write discarded at the head: %" PRIu64 " bytes\n", r->torn_bytes);
	print_numbering(f, x);
	if (x->o->dry_run)
		fprintf(f,
			"%s: not written (--dry-run); it would be a log of %s (%u-byte "
			"sectors)%s\n",
			x->o->newpath, fmt_bytes(x->size, a, sizeof(a)), x->g->sector,
			x->grown ? ", larger than the source's to hold what is kept" : "");
	else if (x->written)
		fprintf(f,
			"%s: new log of %s (%u-byte sectors%s), uuid %s, holding checkpoints "
			"%" PRIu64 "..%" PRIu64 "%s, closed clean and verified; %s was only "
			"read\n",
			x->o->newpath, fmt_bytes(x->size, a, sizeof(a)), x->g->sector,
			x->grown ? ", grown to hold what is kept" : "", x->uuid,
			x->k.ckpts ? x->k.first : x->fill_first, next_seq(x) - 1,
			x->fill_last ? " (the last ones empty)" : "", x->o->path);
}

static void json_outcome(struct json *j, const struct outcome *x)
{
	const struct jrnl_report *r = &x->rep;

	json_obj_begin(j, "salvage");
	if (r->salvaged) {
		json_obj_begin(j, "damage");
		json_i64(j, "code", r->corruption);
		json_str(j, "name", tool_err_name(r->corruption));
		json_str(j, "message", tool_strerror(r->corruption));
		json_u64(j, "offset", r->corrupt_offset);
		json_u64(j, "lsn", r->corrupt_lsn);
		json_str(j, "field", r->corrupt_field);
		json_str(j, "what", r->corrupt_what);
		json_obj_end(j);
	} else {
		json_null(j, "damage");
	}
	json_obj_begin(j, "kept");
	json_u64(j, "checkpoints", x->k.ckpts);
	json_u64(j, "first_seq", x->k.first);
	json_u64(j, "last_seq", x->k.last);
	json_u64(j, "items", x->k.items);
	json_u64(j, "bytes", x->k.bytes);
	json_obj_end(j);
	json_obj_begin(j, "dropped");
	json_u64(j, "incomplete", r->dropped);
	json_u64(j, "held_back", r->held_back);
	json_u64(j, "offset", r->salvaged ? r->salvage_offset : 0);
	json_u64(j, "lsn", r->salvaged ? r->salvage_lsn : 0);
	json_u64(j, "bytes", r->salvage_bytes);
	json_u64(j, "commits_after_damage", r->lost_commits);
	json_u64(j, "first_seq", r->lost_first_seq);
	json_u64(j, "last_seq", r->lost_last_seq);
	json_u64(j, "torn_bytes", r->torn_bytes);
	if (r->salvaged && r->verified_seq)
		json_u64(j, "from_seq", r->verified_seq + 1);
	else
		json_null(j, "from_seq");
	if (r->salvaged && r->high_seq > r->verified_seq)
		json_u64(j, "to_seq", r->high_seq);
	else
		json_null(j, "to_seq");
	json_obj_end(j);
	json_obj_begin(j, "numbering");
	json_u64(j, "verified_seq", r->verified_seq);
	json_u64(j, "started_seq", r->started_seq);
	json_u64(j, "after_damage_seq", r->lost_high_seq);
	json_u64(j, "damaged_record_seq", r->damaged_seq);
	json_u64(j, "high_seq", r->high_seq);
	json_u64(j, "empty_first_seq", x->fill_first);
	json_u64(j, "empty_last_seq", x->fill_last);
	json_u64(j, "next_seq", next_seq(x));
	json_obj_end(j);
	json_obj_begin(j, "new_log");
	json_str(j, "path", x->o->newpath);
	json_u64(j, "log_size", x->size);
	json_u64(j, "sector", x->g->sector);
	json_bool(j, "grown", x->grown);
	json_bool(j, "written", x->written);
	if (x->written)
		json_str(j, "uuid", x->uuid);
	else
		json_null(j, "uuid");
	json_obj_end(j);
	json_obj_end(j);
}

/* A refusal of ours (not the journal's): one line on stderr, and the "error" member. */
static void refuse(struct json *j, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(struct json *j, const char *path, int err, const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(stderr, "delog recover: %s: %s\n", path, what);
	if (j) {
		json_obj_begin(j, "error");
		json_i64(j, "code", err);
		json_str(j, "name", tool_err_name(err));
		json_str(j, "message", tool_strerror(err));
		json_u64(j, "offset", 0);
		json_u64(j, "lsn", 0);
		json_str(j, "field", "");
		json_str(j, "what", what);
		json_obj_end(j);
	}
}

/* Can NEWLOG be made?  0, or a refusal already reported. */
static int check_newpath(const struct salvage_opts *o, struct json *j)
{
	struct stat src, dst;

	if (stat(o->path, &src))
		return 0; /* tool_log_open reports it */
	if (lstat(o->newpath, &dst)) {
		if (errno == ENOENT)
			return 0;
		refuse(j, o->newpath, -errno, "%s", strerror(errno));
		return -1;
	}
	if (S_ISLNK(dst.st_mode)) {
		refuse(j, o->newpath, -ELOOP,
		       "a symbolic link: --salvage writes a new file, name it directly");
		return -1;
	}
	if (dst.st_dev == src.st_dev && dst.st_ino == src.st_ino) {
		refuse(j, o->newpath, -EINVAL,
		       "is %s itself: salvage never writes over the damaged log", o->path);
		return -1;
	}
	if (!S_ISREG(dst.st_mode)) {
		refuse(j, o->newpath, -EINVAL,
		       "exists and is not a regular file: --salvage writes a new file");
		return -1;
	}
	if (!o->force) {
		refuse(j, o->newpath, -EEXIST,
		       "exists (--force replaces it, once the salvage "
		       "succeeded)");
		return -1;
	}
	return 0;
}

/* Sync the directory holding @path, so its new name is durable. */
static int sync_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, err = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		err = -errno;
	close(fd);
	return err;
}

/*
 * The numbering (docs/FORMAT.md, "Salvage"): NEWLOG's next checkpoint must come after
 * every sequence the damaged log may have given out (x->rep.high_seq), or the
 * application, which skips replayed sequences at or below what its state covers, would
 * skip its own new commits.  The engine numbers on from the last checkpoint recovery
 * finds, and recovery takes complete checkpoints only in consecutive sequence, so the
 * gap after the last kept one is filled with empty checkpoints (a START and a COMMIT
 * of no item each).  Without a kept one, one empty checkpoint of high_seq suffices: a
 * log's first checkpoint may have any sequence.
 */
static void plan_fill(struct outcome *x)
{
	uint64_t high = x->rep.high_seq;

	if (x->k.ckpts && high > x->k.last) {
		x->fill_first = x->k.last + 1;
		x->fill_last = high;
	} else if (!x->k.ckpts && high) {
		x->fill_first = x->fill_last = high;
	}
	if (x->fill_last)
		x->k.need += (x->fill_last - x->fill_first + 1) * 96;
}

static int write_fill(struct jrnl_log *log, const struct outcome *x)
{
	struct jrnl_wtx tx;
	int err = 0;

	for (uint64_t seq = x->fill_first; !err && x->fill_last && seq <= x->fill_last; seq++) {
		err = jrnl_tx_start(log, seq, 0, &tx);
		if (!err)
			err = jrnl_tx_commit(&tx, NULL, NULL);
	}
	return err;
}

/* Make, format, fill and close the log at @tmp (the planning run said what to keep). */
static int write_new(const struct salvage_opts *o, struct tool_log *src,
		     const struct jrnl_recover_opts *base, struct outcome *x, const char *tmp,
		     struct json *j)
{
	struct iol_dev_opts io = { .size = sizeof(io), .backend = o->backend };
	struct jrnl_format_opts fo = { .sector = src->g.sector, .log_size = x->size };
	struct jrnl_log_opts lo = { .logbufs = NEW_LOGBUFS, .logbsize = NEW_LOGBSIZE };
	struct jrnl_recover_opts ro = *base;
	struct copy c = { 0 };
	struct jrnl_report rep;
	struct iol_dev *dev;
	struct jrnl_geom g;
	char msg[512] = "", sz[32];
	int err, e2;

	io.errmsg = msg;
	io.errmsg_len = sizeof(msg);
	err = iol_file_create(tmp, JRNL_SB_AREA + x->size, 0600, msg, sizeof(msg));
	if (err) {
		if (*msg) /* the iolayer's message names the path */
			refuse(j, o->newpath, err, "%s", msg);
		else
			refuse(j, o->newpath, err, "cannot create %s: %s", tmp, tool_strerror(err));
		return err;
	}
	err = iol_dev_open(tmp, &io, &dev);
	if (err) {
		refuse(j, o->newpath, err, "%s", *msg ? msg : tool_strerror(err));
		return err;
	}
	/* The new log's device may take no sector smaller than its physical block. */
	err = jrnl_sector_check(dev, fo.sector, msg, sizeof(msg));
	if (err) {
		refuse(j, o->newpath, err, "the new log takes the damaged log's sector size: %s",
		       msg);
		iol_dev_close(dev);
		return err;
	}
	err = jrnl_format(dev, &fo, &g);
	if (!err)
		err = jrnl_log_open(dev, &g, NULL, &lo, &c.log);
	if (err) {
		refuse(j, o->newpath, err,
		       "cannot format a log of %" PRIu64 " bytes with %u-byte "
		       "sectors there: %s",
		       x->size, fo.sector, tool_strerror(err));
		iol_dev_close(dev);
		return err;
	}
	tool_uuid(g.uuid, x->uuid);
	ro.replay = copy_cb;
	ro.priv = &c;
	err = jrnl_recover(src->dev, &src->g, &ro, &rep);
	if (err && c.err == err && err == DELOG_ELOGFULL) {
		refuse(j, o->newpath, err,
		       "the kept checkpoints do not fit a log of %s (checkpoint %" PRIu64
		       " did not): give a larger --size",
		       fmt_bytes(x->size, sz, sizeof(sz)), c.seq);
	} else if (err && c.err == err) {
		refuse(j, o->newpath, err, "writing checkpoint %" PRIu64 ": %s", c.seq,
		       tool_strerror(err));
	} else if (err) {
		tool_recover_error("recover", o->path, err, &rep);
		refuse(j, o->path, err, "the second read failed: %s", tool_strerror(err));
	} else if (rep.salvaged != x->rep.salvaged || rep.salvage_lsn != x->rep.salvage_lsn ||
		   c.k.ckpts != x->k.ckpts || c.k.items != x->k.items || c.k.bytes != x->k.bytes ||
		   c.k.last != x->k.last) {
		err = -EAGAIN;
		refuse(j, o->path, err,
		       "changed between the two reads (%" PRIu64 " checkpoints, then %" PRIu64
		       "): is something writing it?",
		       x->k.ckpts, c.k.ckpts);
	} else if ((err = write_fill(c.log, x)) != 0) {
		refuse(j, o->newpath, err,
		       "writing the empty checkpoints %" PRIu64 "..%" PRIu64 " that carry the "
		       "numbering on: %s%s",
		       x->fill_first, x->fill_last, tool_strerror(err),
		       err == DELOG_ELOGFULL ? " (give a larger --size)" : "");
	} else {
		/* Everything stable, then the unmount record: a cleanly closed log. */
		err = jrnl_log_force(c.log);
		if (!err)
			err = jrnl_log_flush(c.log);
		if (!err)
			err = jrnl_log_unmount(c.log);
		if (err)
			refuse(j, o->newpath, err, "writing the new log: %s", tool_strerror(err));
	}
	e2 = jrnl_log_close(c.log);
	if (!err && e2)
		refuse(j, o->newpath, err = e2, "writing the new log: %s", tool_strerror(e2));
	e2 = iol_dev_close(dev);
	if (!err && e2)
		refuse(j, o->newpath, err = e2, "closing the new log: %s", tool_strerror(e2));
	return err;
}

/* Recover @tmp strictly and read-only: it must hold exactly what was written (x->k). */
static int verify_new(const struct salvage_opts *o, const char *tmp, struct outcome *x,
		      struct json *j)
{
	struct jrnl_recover_opts ro = { .read_only = true, .replay = plan_cb };
	struct jrnl_report rep;
	struct tool_log l;
	struct kept k = { 0 }, want = { 0 };
	uint64_t nfill;
	int err;

	ro.priv = &k;
	err = tool_log_open("recover", tmp, o->backend, true, &l);
	if (err) {
		refuse(j, o->newpath, err, "the new log cannot be read back: %s",
		       tool_strerror(err));
		return err;
	}
	err = jrnl_recover(l.dev, &l.g, &ro, &rep);
	tool_log_close(&l);
	if (err) {
		tool_recover_error("recover", tmp, err, &rep);
		refuse(j, o->newpath, err, "the new log does not recover: %s", tool_strerror(err));
		return err;
	}
	nfill = x->fill_last ? x->fill_last - x->fill_first + 1 : 0;
	want.ckpts = x->k.ckpts + nfill;
	want.first = x->k.ckpts ? x->k.first : x->fill_first;
	want.last = x->fill_last ? x->fill_last : x->k.last;
	if (!rep.clean || k.ckpts != want.ckpts || k.first != want.first || k.last != want.last ||
	    k.items != x->k.items || k.bytes != x->k.bytes) {
		refuse(j, o->newpath, DELOG_ECORRUPT,
		       "the new log recovers %" PRIu64 " checkpoints (%" PRIu64 "..%" PRIu64
		       "%s), not the %" PRIu64 " written",
		       k.ckpts, k.first, k.last, rep.clean ? "" : ", not clean", want.ckpts);
		return DELOG_ECORRUPT;
	}
	return 0;
}

/* Move the verified @tmp to NEWLOG: link(2) unless --force (never replaces a file that
 * appeared meanwhile), rename(2) with it; then sync the directory. */
static int place_new(const struct salvage_opts *o, const char *tmp, struct json *j)
{
	int err;

	if (o->force ? rename(tmp, o->newpath) : link(tmp, o->newpath)) {
		err = -errno;
		refuse(j, o->newpath, err, "%s%s", strerror(errno),
		       err == -EEXIST ? " (it appeared during the salvage; --force replaces it)" :
					"");
		return err;
	}
	if (!o->force)
		unlink(tmp);
	err = sync_dir(o->newpath);
	if (err)
		refuse(j, o->newpath, err, "syncing its directory: %s", tool_strerror(err));
	return err;
}

int recover_salvage(const struct salvage_opts *o)
{
	struct jrnl_recover_opts ro = {
		.read_only = true,
		.salvage = true,
		.replay_to = o->to,
		.read_chunk = o->read_chunk,
		.reads_in_flight = o->reads_in_flight,
		.replay = plan_cb,
	};
	struct outcome x = { .o = o };
	struct json js, *j = NULL;
	char tmp[PATH_MAX];
	struct tool_log l;
	uint64_t need;
	int err, rc = TOOL_EXIT_FAIL;

	if (o->json) {
		j = &js;
		json_init(j, stdout, true);
		json_obj_begin(j, NULL);
		json_str(j, "path", o->path);
		json_str(j, "new_path", o->newpath);
		if (o->to)
			json_u64(j, "to", o->to);
		else
			json_null(j, "to");
		json_bool(j, "dry_run", o->dry_run);
	}
	if (check_newpath(o, j)) {
		if (j) {
			json_null(j, "superblock");
			json_null(j, "report");
			json_null(j, "salvage");
		}
		goto out_json;
	}
	err = tool_log_open("recover", o->path, o->backend, true, &l);
	if (err) {
		if (l.err_field && *l.err_field)
			fprintf(stderr,
				"delog recover: %s: cannot salvage: the superblock is refused "
				"(%s), so the log's sector size, size and uuid are unknown and no "
				"record can be verified; nothing was written\n",
				o->path, l.err_field);
		else if (l.err <= DELOG_ECORRUPT)
			fprintf(stderr,
				"delog recover: %s: cannot salvage: the file does not hold the log "
				"its superblock describes; nothing was written\n",
				o->path);
		if (j) {
			json_null(j, "superblock");
			json_null(j, "report");
			json_null(j, "salvage");
			tool_json_log_error(j, &l);
		}
		goto out_json;
	}
	x.g = &l.g;
	ro.priv = &x.k;
	err = jrnl_recover(l.dev, &l.g, &ro, &x.rep);
	if (j) {
		tool_json_geom(j, "superblock", &l.g);
		tool_json_report(j, "report", &x.rep);
	} else {
		tool_print_geom(stdout, l.path, &l.g);
	}
	if (err) {
		tool_recover_error("recover", o->path, err, &x.rep);
		fprintf(stderr, "delog recover: %s: cannot salvage: %s; nothing was written\n",
			o->path,
			err == DELOG_EGEOMETRY ?
				"the records were written under another geometry than the "
				"superblock's, so none can be verified under it" :
			err == x.rep.corruption ?
				"the damage keeps recovery from finding a head and a tail to "
				"read from" :
				"recovery failed");
		if (j) {
			json_null(j, "salvage");
			tool_json_recover_error(j, err, &x.rep);
		}
		goto out_log;
	}
	plan_fill(&x);
	/* NEWLOG's size: the source's, unless what is kept (plus record headers, the unmount
	 * record and room for the application to go on) needs more; --size sets it. */
	need = x.k.need + x.k.need / 16 + 2ull * NEW_LOGBSIZE;
	x.size = o->size ? o->size : l.g.log_size;
	if (!o->size && need > x.size / 4 * 3) {
		x.size = (need / 3 * 4 + (1u << 20) - 1) & ~((1ull << 20) - 1);
		x.grown = true;
	}
	if (o->dry_run) {
		rc = TOOL_EXIT_OK;
		goto report;
	}
	for (unsigned k = 0;; k++) {
		snprintf(tmp, sizeof(tmp), "%s.salvage-%ld-%u", o->newpath, (long)getpid(), k);
		if (access(tmp, F_OK) && errno == ENOENT)
			break;
	}
	err = write_new(o, &l, &ro, &x, tmp, j);
	if (!err)
		err = verify_new(o, tmp, &x, j);
	if (!err)
		err = place_new(o, tmp, j);
	unlink(tmp);
	if (!err) {
		x.written = true;
		rc = TOOL_EXIT_OK;
	}
report:
	if (j)
		json_outcome(j, &x);
	else
		print_outcome(stdout, &x);
	if (j && rc == TOOL_EXIT_OK)
		json_null(j, "error");
out_log:
	tool_log_close(&l);
out_json:
	if (j) {
		json_obj_end(j);
		json_finish(j);
	}
	return rc;
}
