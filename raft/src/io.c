/*
 * io.c - the struct raft_io of libdelog-raft: C-Raft's calls on a delog log, C-Raft's own
 * uv io for everything else.
 *
 * Why it is built this way:
 *  - Network, timers, clock and random numbers are C-Raft's (a raft_uv_init io, "net",
 *    over the caller's transport).  Its send path needs only what net's init sets up
 *    (server id, the transport's init, the tick timer); net's load is never called, and
 *    net never writes its metadata or segment files because none of its storage methods
 *    is called.  Its init does probe its directory (a file created and removed) and
 *    removes leftover files of its own naming there, so it gets DIR/uv to itself.  Net's
 *    callbacks receive net, whose data points back here; the trampolines hand C-Raft its
 *    own io.
 *  - Storage is delog through <delog.h> only: every call that changes persistent state
 *    commits records (state.c) on the loop thread, in call order, under increasing keys;
 *    draft_state_apply then updates the in-memory state the same way recovery would.
 *  - append: each entry is logged as one record, its header and C-Raft's buffer gathered
 *    by delog_tx_logv (one copy, into delog); the records are committed (not forced),
 *    the request queued with the checkpoint sequence it needs, and delog_force_nowait
 *    asks for it: delog's own threads push and flush (group commit: appends queued
 *    while a checkpoint is written share the next one), and no thread of this io waits.
 *    The loop watches delog_durable_fd with a uv_poll and completes, in order, every
 *    queued append whose sequence delog_durable_seq has reached.  No callback runs
 *    inside the call that queued it: an append's sequence is the open checkpoint's,
 *    which holds its records, so it is never durable when asked for.  The poll holds
 *    the loop only while appends are queued.
 *  - set_term / set_vote / bootstrap / recover / a snapshot's records: committed and
 *    forced before they return (delog_tx_commit_force, on the loop thread).
 *  - truncate: committed, not forced: it is ordered before every later append, whose
 *    force makes it durable first; until something is acknowledged after it, losing it
 *    in a crash is the same as never having truncated.
 *  - Snapshots: the data file is written and synced on libuv's thread pool (snap.c);
 *    back on the loop the SNAP and BASE records are committed and forced, then delog
 *    releases every checkpoint below the first one still holding a kept entry, then
 *    older snapshot files are removed (never while a snapshot_get reads one).
 *  - Errors: a delog shutdown fails every queued append (RAFT_IOERR) and every later
 *    call; a log recovery refuses, or records that do not replay, fail load with
 *    RAFT_CORRUPT before anything is returned.
 *
 * A full log (labels RS1-RS5).  C-Raft stops a follower whose append fails, and a node
 * that cannot write its term cannot vote, so a full log must cost neither:
 *  (RS1) An append that finds no space waits for it, on the loop: its transactions are
 *        begun NOWAIT before anything is logged, and if one is refused the append is
 *        parked, with every append and truncation after it, in call order.  delog makes
 *        the durable fd readable at the next space event after a refusal (grant.c GR7),
 *        and the poll, like a snapshot's release, logs what was parked as far as space
 *        goes.  An installed snapshot that now covers a parked append's first entries
 *        leaves only the rest to log.
 *  (RS2) The log is given a reserve (a sixteenth of it, delog_set_reserve) at open
 *        that only term, vote, truncation and snapshot records and C-Raft's own entries
 *        (barriers, configurations) may take: a full log still elects, and a new
 *        leader's barrier still commits.
 *  (RS3) The log never fills by design: delog_raft_snapshot_threshold asks for a
 *        snapshot once entries take a quarter of the log, or once a quarter of it is
 *        used (truncated entries, checkpoints' overhead and old records too: only a
 *        snapshot's release frees them) and an eighth more than the last snapshot
 *        left; a snapshot keeps at most an eighth of the log in trailing entries
 *        (C-Raft keeps them in memory).
 *  (RS4) A leader takes a client's command only with an eighth of the log free beside
 *        it (delog_raft_admit): its followers then have room for the entries in flight,
 *        so a cluster whose logs filled can still commit, apply and release.
 *  (RS5) C-Raft takes a snapshot only at the end of an apply, and never while another
 *        is being put, so a log that fills during a put would wait for ever: nothing
 *        more is stored, so nothing more is applied, so no snapshot frees space.  While
 *        a put runs and a snapshot is due (RS3), durable appends are therefore reported
 *        only after the put's callback, all of them: the entries they report stored
 *        are applied after it, and that apply takes the next snapshot.
 * Everything here runs on the loop thread except the work callbacks, which touch only
 * the fields stated next to them.
 */
#define _GNU_SOURCE
#include "draft.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#define DRAFT_PATH_MAX 1024

struct draft_pend {
	struct raft_io_append *req;
	raft_io_append_cb cb;
	uint64_t seq;
	struct draft_pend *next;
};

/* A call that waits for log space (park_*): an append, or a truncation ordered after
 * one.  @index: the append's first entry, or the truncation point, as C-Raft meant it. */
struct draft_park {
	bool trunc;
	struct raft_io_append *req;
	raft_io_append_cb cb;
	const struct raft_entry *entries; /* C-Raft's, valid until cb */
	unsigned n;
	raft_index index;
	struct draft_park *next;
};

struct draft_put {
	struct draft *d;
	uv_work_t work;
	struct raft_io_snapshot_put *req;
	raft_io_snapshot_put_cb cb;
	const struct raft_snapshot *snap;
	unsigned trailing;
	uint64_t file, size, sum;
	int status;
	char errmsg[RAFT_ERRMSG_BUF_SIZE];
};

struct draft_get {
	struct draft *d;
	uv_work_t work;
	struct raft_io_snapshot_get *req;
	raft_io_snapshot_get_cb cb;
	struct draft_snapmeta meta;
	struct raft_buffer buf;
	int status;
	char errmsg[RAFT_ERRMSG_BUF_SIZE];
};

struct draft {
	struct raft_io *io;
	uv_loop_t *loop;
	char dir[DRAFT_PATH_MAX], logpath[DRAFT_PATH_MAX + 16], netdir[DRAFT_PATH_MAX + 8];
	struct delog_raft_options opts;
	draft_open_fn open;
	void *open_arg;

	struct raft_io net; /* C-Raft's uv io (network, timers), if has_net */
	struct raft_uv_transport *transport;
	char address[256]; /* this server's, for messages */
	bool has_net, net_inited;
	raft_io_tick_cb tick_cb;
	raft_io_recv_cb recv_cb;

	delog *log;
	uint64_t log_size;
	struct draft_state st;
	char why[RAFT_ERRMSG_BUF_SIZE];
	bool loaded;
	uint64_t key;        /* last record key used */
	uint64_t released;   /* last checkpoint released */
	uint64_t used_floor; /* the log's used bytes after the last snapshot (RS3) */
	bool errored;

	struct draft_pend *head, *tail;
	struct draft_park *park_head, *park_tail; /* waiting for space, in call order */
	raft_index park_next;                     /* the index after everything parked */
	uv_poll_t poll;
	bool poll_on;

	unsigned works; /* snapshot put/get in flight on the thread pool */
	unsigned gets;  /* snapshot_get in flight (they read snapshot files) */
	bool prune_due;

	bool closing;
	uv_timer_t closer; /* only to finish a close that waits for nothing */
	unsigned close_waits;
	raft_io_close_cb close_cb;
};

static struct draft *D(struct raft_io *io)
{
	return io->impl;
}

/* ---- errors ---- */

static int map_err(int err)
{
	switch (err) {
	case -ENOMEM:
		return RAFT_NOMEM;
	case -EAGAIN:
	case -ENOSPC:
	case -EDQUOT:
	case DELOG_ELOGFULL:
		return RAFT_NOSPACE;
	case -E2BIG:
		return RAFT_TOOBIG;
	case DELOG_ECORRUPT:
	case DELOG_ECHECKSUM:
	case DELOG_EVERSION:
	case DELOG_EFEATURE:
	case DELOG_ENOTLOG:
	case DELOG_ETRUNCATED:
	case DELOG_EFOREIGN:
	case DELOG_EBADOP:
	case DELOG_EORPHAN:
	case DELOG_EGEOMETRY:
		return RAFT_CORRUPT;
	default:
		return RAFT_IOERR;
	}
}

/* Map a delog error for C-Raft, with "WHAT: delog's text (its reason)" in io->errmsg. */
static int fail(struct draft *d, int err, const char *what)
{
	int first = d->log ? delog_error(d->log) : 0;
	const char *why = delog_errmsg(); /* the failed call's reason: delog_error kept it */

	if (err == DELOG_ESHUTDOWN && first)
		draft_msgf(d->io->errmsg, "%s: delog log shut down after %s", what,
			   delog_strerror(first));
	else if (err == -EAGAIN)
		draft_msgf(d->io->errmsg,
			   "%s: the delog log is full (take snapshots more often, or make it larger)",
			   what);
	else
		draft_msgf(d->io->errmsg, "%s: %s%s%s%s", what, delog_strerror(err),
			   *why ? " (" : "", why, *why ? ")" : "");
	if (err == DELOG_ESHUTDOWN || (first && err != -EAGAIN))
		d->errored = true;
	return map_err(err);
}

static int usable(struct draft *d)
{
	if (d->closing) {
		draft_msgf(d->io->errmsg, "io is closing");
		return RAFT_CANCELED;
	}
	if (d->errored) {
		int first = d->log ? delog_error(d->log) : 0;

		draft_msgf(d->io->errmsg, "io failed earlier%s%s", first ? ": " : "",
			   first ? delog_strerror(first) : "");
		return RAFT_IOERR;
	}
	return 0;
}

/* ---- appends: completion ---- */

static void park_fail(struct draft *d, int status);
static void park_drain(struct draft *d);

/* The log's used bytes (0 if delog_stats fails, which it does not on an open log). */
static uint64_t log_used(const struct draft *d)
{
	struct delog_stats st = { .size = sizeof(st) };

	return d->log && delog_stats(d->log, &st) == 0 ? st.log_used : 0;
}

/* (RS3) The next apply must take a snapshot: a quarter of the log in entries, or a
 * quarter used and an eighth more than the last snapshot left.  Used, not only held in
 * entries: truncated entries, checkpoints' own overhead and old records keep their space
 * until a release passes them.  Past what the last snapshot left: the kept entries'
 * checkpoints may take more than a quarter by themselves (small entries, many kept),
 * and a snapshot at every apply would free nothing. */
static bool snapshot_due(const struct draft *d)
{
	uint64_t used;

	if (!d->log)
		return false;
	if (d->st.bytes >= d->log_size / 4)
		return true;
	used = log_used(d);
	return used >= d->log_size / 4 && used >= d->used_floor + d->log_size / 8;
}

static void complete_durable(struct draft *d)
{
	uint64_t dur;
	bool hold;
	int err;

	if (!d->log)
		return;
	dur = delog_durable_seq(d->log);
	/* (RS5) While a put runs and a snapshot is due, put_after reports them.  Decided
	 * once: the put a first callback starts must not hold back the rest, or each put
	 * would report one append while the leader sends many. */
	hold = d->works > d->gets && snapshot_due(d); /* a put in flight */
	while (d->head && d->head->seq <= dur && !hold) {
		struct draft_pend *p = d->head;

		d->head = p->next;
		if (!d->head)
			d->tail = NULL;
		p->cb(p->req, 0);
		free(p);
	}
	err = delog_error(d->log);
	if (err && d->head) {
		d->errored = true;
		draft_msgf(d->io->errmsg, "append: delog log shut down after %s",
			   delog_strerror(err));
		while (d->head) {
			struct draft_pend *p = d->head;

			d->head = p->next;
			if (!d->head)
				d->tail = NULL;
			p->cb(p->req, RAFT_IOERR);
			free(p);
		}
	}
	if (err && d->park_head) {
		d->errored = true;
		draft_msgf(d->io->errmsg, "append: delog log shut down after %s",
			   delog_strerror(err));
		park_fail(d, RAFT_IOERR);
	}
	if (!d->head && !d->park_head && d->poll_on) /* nothing waits: keep no loop alive */
		uv_unref((uv_handle_t *)&d->poll);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	struct draft *d = h->data;
	uint64_t v;

	(void)events;
	/* re-arm the eventfd (EAGAIN: already read); the watermark says what is durable */
	if (status == 0 && read(delog_durable_fd(d->log), &v, sizeof(v)) < 0) {
	}
	complete_durable(d);
	park_drain(d);
	if (!d->head && !d->park_head && d->poll_on)
		uv_unref((uv_handle_t *)&d->poll);
}

/* ---- opening the log ---- */

static int recover_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		      size_t n)
{
	struct draft *d = arg;

	return draft_state_apply_ckpt(&d->st, ck->seq, it, n);
}

static int ensure_open(struct draft *d)
{
	struct delog_options o = { .size = sizeof(o) };
	struct delog_error_info ei = { .size = sizeof(ei) };
	struct delog_stats ds = { .size = sizeof(ds) };
	int rv;

	if (d->log)
		return 0;
	o.backend = d->opts.backend;
	o.flush = d->opts.flush;
	o.flags = DELOG_OPEN_CREATE;
	o.create_size = d->opts.log_size;
	o.logbsize = d->opts.logbsize;
	o.recover = recover_cb;
	o.recover_arg = d;
	o.error = &ei; /* where and what, when the open refuses */
	d->why[0] = '\0';
	draft_state_init(&d->st, d->why);
	rv = d->open ? d->open(d->open_arg, d->logpath, &o, &d->log) :
		       delog_open(d->logpath, &o, &d->log);
	if (rv > 0) {
		/* our own verdict from recover_cb (RAFT_CORRUPT, RAFT_NOMEM) */
		draft_msgf(d->io->errmsg, "load %s: %s", d->logpath,
			   d->why[0] ? d->why : raft_strerror(rv));
		d->log = NULL;
		draft_state_free(&d->st);
		return rv;
	}
	if (rv < 0) {
		d->log = NULL;
		draft_state_free(&d->st);
		draft_msgf(d->io->errmsg, "open %s: %s%s%s", d->logpath, delog_strerror(rv),
			   ei.message[0] ? ": " : "", ei.message);
		return map_err(rv);
	}
	rv = draft_state_check(&d->st);
	if (rv == 0)
		rv = draft_snap_prune(d->dir, d->st.has_snap ? d->st.snap.file : 0, d->io->errmsg);
	else
		draft_msgf(d->io->errmsg, "load %s: %s", d->logpath, d->why);
	if (rv == 0 && delog_stats(d->log, &ds) != 0)
		rv = RAFT_IOERR;
	if (rv) {
		delog_close(d->log);
		d->log = NULL;
		draft_state_free(&d->st);
		return rv;
	}
	d->log_size = ds.log_size;
	if (!d->open && d->opts.log_size > ds.log_size &&
	    !(d->opts.backend && strcmp(d->opts.backend, "sim") == 0)) {
		/* A larger log asked for: the state moves to one (grow.c), then it opens.
		 * The old log stays open, its writer lock held, until the new one took its
		 * name: no second writer can open it meanwhile and lose its writes. */
		rv = draft_grow(d->dir, d->logpath, &o, d->opts.log_size, &d->st, d->io->errmsg);
		delog_close(d->log);
		d->log = NULL;
		draft_state_free(&d->st);
		return rv ? rv : ensure_open(d);
	}
	/* (RS2) for what must be written however full the log is */
	if (delog_set_reserve(d->log, d->log_size / 16) != 0) {
		draft_msgf(d->io->errmsg, "open %s: the log shut down", d->logpath);
		delog_close(d->log);
		d->log = NULL;
		draft_state_free(&d->st);
		return RAFT_IOERR;
	}
	d->key = d->st.last_key;
	d->released = 0;
	rv = uv_poll_init(d->loop, &d->poll, delog_durable_fd(d->log));
	if (rv == 0) {
		d->poll.data = d;
		d->poll_on = true;
		rv = uv_poll_start(&d->poll, UV_READABLE, poll_cb);
		/* Referenced only while appends are queued (io_append, complete_durable):
		 * an idle io keeps no loop alive, as C-Raft's own does not. */
		uv_unref((uv_handle_t *)&d->poll);
	}
	if (rv) {
		draft_msgf(d->io->errmsg, "open %s: event loop: %s", d->logpath, uv_strerror(rv));
		d->errored = true;
		return RAFT_IOERR;
	}
	return 0;
}

/* ---- committing records ---- */

/* Commit @n records in one transaction (force: and wait until durable), then apply
 * them.  0 or a mapped error (nothing applied unless committed). */
static int commit_recs(struct draft *d, void **recs, const uint32_t *lens, unsigned n, bool force,
		       uint64_t *seq_out, const char *what)
{
	uint64_t reserve = 0, seq = 0, key0 = d->key;
	delog_tx *tx;
	int rv;

	for (unsigned i = 0; i < n; i++)
		reserve += lens[i] + DELOG_ITEM_OVERHEAD;
	/* (RS2) term, vote, truncations and snapshots: always room, the log's reserve */
	rv = delog_tx_begin(d->log, reserve, DELOG_TX_NOWAIT | DELOG_TX_RESERVE, &tx);
	if (rv)
		return fail(d, rv, what);
	for (unsigned i = 0; i < n; i++) {
		rv = delog_tx_log(tx, key0 + 1 + i, recs[i], lens[i]);
		if (rv) {
			delog_tx_abort(tx);
			return fail(d, rv, what);
		}
	}
	rv = force ? delog_tx_commit_force(tx, &seq) : delog_tx_commit(tx, &seq);
	if (rv) {
		/* a commit error shuts the log down; a failed force leaves the records
		 * in the stream, possibly durable, and the io stops as well */
		d->errored = true;
		return fail(d, rv, what);
	}
	d->key = key0 + n;
	for (unsigned i = 0; i < n; i++) {
		int arv = draft_state_apply(&d->st, key0 + 1 + i, seq, recs[i], lens[i]);

		if (arv) {
			d->errored = true;
			draft_msgf(d->io->errmsg, "%s: %s", what,
				   arv == RAFT_NOMEM ? "out of memory" : d->why);
			return arv;
		}
	}
	if (seq_out)
		*seq_out = seq;
	return 0;
}

static void *entry_rec(raft_index index, const struct raft_entry *e, uint32_t *len)
{
	unsigned char *r;

	if (e->buf.len > UINT32_MAX - DRAFT_ENTRY_HDR)
		return NULL;
	r = malloc(DRAFT_ENTRY_HDR + e->buf.len);
	if (r) {
		draft_rec_entry_hdr(r, index, e);
		memcpy(r + DRAFT_ENTRY_HDR, e->buf.base, e->buf.len);
		*len = (uint32_t)(DRAFT_ENTRY_HDR + e->buf.len);
	}
	return r;
}

/* ---- the raft_io methods ---- */

static int io_init(struct raft_io *io, raft_id id, const char *address)
{
	struct draft *d = D(io);
	int rv;

	if (!d->has_net)
		return 0;
	if (mkdir(d->netdir, 0700) != 0 && errno != EEXIST) {
		draft_msgf(io->errmsg, "create %s: %s", d->netdir, strerror(errno));
		return RAFT_IOERR;
	}
	draft_msgf(d->address, "%s", address);
	d->net.data = d;
	rv = d->net.init(&d->net, id, address);
	if (rv) {
		draft_msgf(io->errmsg, "network io: %s", d->net.errmsg);
		return rv;
	}
	d->net_inited = true;
	return 0;
}

static void tick_tramp(struct raft_io *net)
{
	struct draft *d = net->data;

	if (d->tick_cb)
		d->tick_cb(d->io);
}

static void recv_tramp(struct raft_io *net, struct raft_message *msg)
{
	struct draft *d = net->data;

	if (d->recv_cb)
		d->recv_cb(d->io, msg);
}

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
	struct draft *d = D(io);
	int rv;

	if (!d->net_inited) {
		draft_msgf(io->errmsg, "start: this io has no network");
		return RAFT_INVALID;
	}
	d->tick_cb = tick;
	d->recv_cb = recv;
	rv = d->net.start(&d->net, msecs, tick_tramp, recv_tramp);
	if (rv && (d->net.errmsg[0] || d->transport->errmsg[0]))
		draft_msgf(io->errmsg, "start: %s",
			   d->net.errmsg[0] ? d->net.errmsg : d->transport->errmsg);
	else if (rv)
		draft_msgf(io->errmsg, "start: cannot listen on %s (in use?)", d->address);
	return rv;
}

static int io_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg,
		   raft_io_send_cb cb)
{
	struct draft *d = D(io);
	int rv;

	if (!d->net_inited) {
		draft_msgf(io->errmsg, "send: this io has no network");
		return RAFT_INVALID;
	}
	rv = d->net.send(&d->net, req, msg, cb);
	if (rv)
		draft_msgf(io->errmsg, "send: %s", d->net.errmsg);
	return rv;
}

static raft_time io_time(struct raft_io *io)
{
	struct draft *d = D(io);

	return d->net_inited ? d->net.time(&d->net) : uv_now(d->loop);
}

static int io_random(struct raft_io *io, int min, int max)
{
	struct draft *d = D(io);

	if (d->net_inited)
		return d->net.random(&d->net, min, max);
	return max > min ? min + rand() % (max - min) : min;
}

static int io_async_work(struct raft_io *io, struct raft_io_async_work *req,
			 raft_io_async_work_cb cb)
{
	struct draft *d = D(io);
	int rv;

	if (!d->net_inited || !d->net.async_work) {
		draft_msgf(io->errmsg, "async_work: this io has no network io");
		return RAFT_INVALID;
	}
	rv = d->net.async_work(&d->net, req, cb);
	if (rv)
		draft_msgf(io->errmsg, "async_work: %s", d->net.errmsg);
	return rv;
}

static int io_load(struct raft_io *io, raft_term *term, raft_id *vote,
		   struct raft_snapshot **snapshot, raft_index *start_index,
		   struct raft_entry *entries[], size_t *n_entries)
{
	struct draft *d = D(io);
	struct raft_snapshot *s = NULL;
	struct raft_entry *e = NULL;
	size_t total = 0;
	char *batch = NULL;
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	if (d->loaded) {
		draft_msgf(io->errmsg, "load: called twice");
		return RAFT_INVALID;
	}
	if (d->st.has_snap) {
		s = raft_calloc(1, sizeof(*s));
		if (!s)
			return RAFT_NOMEM;
		s->bufs = raft_malloc(sizeof(*s->bufs));
		if (!s->bufs) {
			raft_free(s);
			return RAFT_NOMEM;
		}
		rv = draft_conf_decode(d->st.snap.conf, d->st.snap.conf_len, &s->configuration);
		if (rv == 0) {
			rv = draft_snap_read(d->dir, &d->st.snap, &s->bufs[0], io->errmsg);
			if (rv)
				raft_configuration_close(&s->configuration);
		} else {
			draft_msgf(io->errmsg, "load: snapshot %llu: bad configuration",
				   (unsigned long long)d->st.snap.index);
		}
		if (rv) {
			raft_free(s->bufs);
			raft_free(s);
			return rv;
		}
		s->n_bufs = 1;
		s->term = d->st.snap.term;
		s->index = d->st.snap.index;
		s->configuration_index = d->st.snap.conf_index;
	}
	if (d->st.n) {
		for (size_t i = 0; i < d->st.n; i++)
			total += d->st.ents[i].len;
		e = raft_calloc(d->st.n, sizeof(*e));
		batch = raft_malloc(total ? total : 1);
		if (!e || !batch) {
			raft_free(e);
			raft_free(batch);
			if (s) {
				raft_configuration_close(&s->configuration);
				raft_free(s->bufs[0].base);
				raft_free(s->bufs);
				raft_free(s);
			}
			return RAFT_NOMEM;
		}
		total = 0;
		for (size_t i = 0; i < d->st.n; i++) {
			struct draft_ent *de = &d->st.ents[i];

			memcpy(batch + total, de->data, de->len);
			e[i].term = de->term;
			e[i].type = de->type;
			e[i].buf.base = batch + total;
			e[i].buf.len = de->len;
			e[i].batch = batch;
			total += de->len;
			free(de->data);
			de->data = NULL;
		}
	}
	d->st.keep_data = false;
	d->loaded = true;
	*term = d->st.term;
	*vote = d->st.vote;
	*snapshot = s;
	*start_index = d->st.first;
	*entries = e;
	*n_entries = d->st.n;
	return 0;
}

static int io_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	struct draft *d = D(io);
	struct raft_entry e = { .term = 1, .type = RAFT_CHANGE };
	void *recs[2] = { NULL, NULL };
	uint32_t lens[2];
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	if (d->st.term != 0 || d->st.n != 0 || d->st.has_snap) {
		draft_msgf(io->errmsg, "bootstrap: the log is not empty (term %llu)",
			   (unsigned long long)d->st.term);
		return RAFT_CANTBOOTSTRAP;
	}
	rv = raft_configuration_encode(conf, &e.buf);
	if (rv)
		return rv;
	recs[0] = draft_rec_term(1, &lens[0]);
	recs[1] = entry_rec(1, &e, &lens[1]);
	raft_free(e.buf.base);
	if (!recs[0] || !recs[1])
		rv = RAFT_NOMEM;
	else
		rv = commit_recs(d, recs, lens, 2, true, NULL, "bootstrap");
	free(recs[0]);
	free(recs[1]);
	return rv;
}

static int io_recover(struct raft_io *io, const struct raft_configuration *conf)
{
	struct draft *d = D(io);
	struct raft_entry e = { .type = RAFT_CHANGE };
	raft_index last;
	void *rec;
	uint32_t len;
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	last = draft_state_last(&d->st, &e.term);
	if (e.term == 0)
		e.term = 1;
	rv = raft_configuration_encode(conf, &e.buf);
	if (rv)
		return rv;
	rec = entry_rec(last + 1, &e, &len);
	raft_free(e.buf.base);
	if (!rec)
		return RAFT_NOMEM;
	rv = commit_recs(d, &rec, &len, 1, true, NULL, "recover");
	free(rec);
	return rv;
}

static int set_one(struct raft_io *io, void *rec, uint32_t len, const char *what)
{
	struct draft *d = D(io);
	int rv;

	if (!rec)
		return RAFT_NOMEM;
	if ((rv = usable(d)) == 0 && (rv = ensure_open(d)) == 0)
		rv = commit_recs(d, &rec, &len, 1, true, NULL, what);
	free(rec);
	return rv;
}

static int io_set_term(struct raft_io *io, raft_term term)
{
	uint32_t len = 0;
	void *rec = draft_rec_term(term, &len);

	return set_one(io, rec, len, "set_term");
}

static int io_set_vote(struct raft_io *io, raft_id id)
{
	uint32_t len = 0;
	void *rec = draft_rec_vote(id, &len);

	return set_one(io, rec, len, "set_vote");
}

/* ---- appends and truncations: logging, or waiting for space ---- */

/* A full log: nothing of the call was logged, it waits (park). */
#define DRAFT_FULL (-1)

/* Log a TRUNC record (not forced: io.c's top).  0, DRAFT_FULL, or a mapped error. */
static int truncate_now(struct draft *d, raft_index index)
{
	uint32_t len;
	void *rec = draft_rec_trunc(index, &len);
	int rv;

	if (!rec)
		return RAFT_NOMEM;
	rv = commit_recs(d, &rec, &len, 1, false, NULL, "truncate");
	free(rec);
	return rv == RAFT_NOSPACE && !d->errored ? DRAFT_FULL : rv;
}

/* Abort the transactions @tx[@from .. @to) an append began and will not commit. */
static void abort_batches(delog_tx **tx, unsigned from, unsigned to)
{
	for (unsigned k = from; k < to; k++)
		delog_tx_abort(tx[k]);
}

/* (RS2) Entries C-Raft writes for itself, a new leader's barrier or a configuration,
 * may take the log's reserve; an application's command may not. */
static unsigned batch_flags(const struct raft_entry entries[], unsigned i, unsigned j)
{
	for (unsigned k = i; k < j; k++)
		if (entries[k].type == RAFT_COMMAND)
			return DELOG_TX_NOWAIT;
	return DELOG_TX_NOWAIT | DELOG_TX_RESERVE;
}

/*
 * Plan an append's batches (each reserving at most an eighth of the log: a transaction
 * may reserve at most a quarter) and begin every batch's transaction, NOWAIT, before
 * anything is logged: a full log then refuses the whole append, with nothing of it
 * committed.  @start gets each batch's first entry (and @n at the end).  Returns the
 * number of batches, or a negative delog error with every begun transaction aborted.
 */
static int begin_batches(struct draft *d, const struct raft_entry entries[], unsigned n,
			 unsigned *start, delog_tx **tx)
{
	uint64_t limit = d->log_size / 8;
	unsigned nb = 0, i = 0;

	while (i < n) {
		uint64_t reserve = 0;
		unsigned j = i;
		int rv;

		while (j < n) {
			uint64_t sz = DRAFT_ENTRY_HDR + entries[j].buf.len + DELOG_ITEM_OVERHEAD;

			if (j > i && reserve + sz > limit)
				break;
			reserve += sz;
			j++;
		}
		rv = delog_tx_begin(d->log, reserve, batch_flags(entries, i, j), &tx[nb]);
		if (rv) {
			abort_batches(tx, 0, nb);
			return rv;
		}
		start[nb++] = i;
		i = j;
	}
	start[nb] = n;
	return (int)nb;
}

/* Queue @req until delog_durable_seq reaches @seq (complete_durable), and ask for it. */
static void pend(struct draft *d, struct draft_pend *p, struct raft_io_append *req,
		 raft_io_append_cb cb, uint64_t seq)
{
	p->req = req;
	p->cb = cb;
	p->seq = seq;
	p->next = NULL;
	req->cb = cb;
	if (d->tail)
		d->tail->next = p;
	else
		d->head = p;
	d->tail = p;
	if (d->poll_on)
		uv_ref((uv_handle_t *)&d->poll);
	/* A shutdown (< 0) makes the eventfd readable: the poll fails what is queued. */
	(void)delog_force_nowait(d->log, seq);
}

/*
 * Log @n entries at the log's next index, commit them and queue @req for their force.
 * 0; DRAFT_FULL (nothing logged); or a C-Raft error with io->errmsg set (the io stops
 * if anything was logged).
 */
static int append_now(struct draft *d, struct raft_io_append *req,
		      const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct draft_pend *p;
	uint64_t seq = 0;
	raft_index index;
	unsigned *start;
	delog_tx **txs;
	int rv = 0, nb;

	p = malloc(sizeof(*p));
	start = malloc((n + 1) * sizeof(*start));
	txs = malloc((n ? n : 1) * sizeof(*txs));
	if (!p || !start || !txs) {
		free(p);
		free(start);
		free(txs);
		return RAFT_NOMEM;
	}
	index = d->st.first + d->st.n;
	nb = begin_batches(d, entries, n, start, txs);
	if (nb < 0) {
		free(p);
		free(start);
		free(txs);
		if (nb == -EAGAIN)
			return DRAFT_FULL;
		return fail(d, nb, "append");
	}
	for (int b = 0; b < nb; b++) {
		unsigned i = start[b], j = start[b + 1];
		delog_tx *tx = txs[b];

		for (unsigned k = i; k < j && !rv; k++) {
			unsigned char hdr[DRAFT_ENTRY_HDR];
			struct iovec v[2] = { { hdr, sizeof(hdr) },
					      { entries[k].buf.base, entries[k].buf.len } };

			draft_rec_entry_hdr(hdr, index + k, &entries[k]);
			rv = delog_tx_logv(tx, d->key + 1 + (k - i), v, 2);
			/* applied now with checkpoint 0, given its checkpoint after commit */
			if (!rv)
				rv = draft_state_apply_entry(&d->st, d->key + 1 + (k - i), 0, hdr,
							     entries[k].buf.base,
							     (uint32_t)entries[k].buf.len);
			if (rv > 0) {
				/* the state cannot take it: nothing committed, state rebuilt
				 * is not possible here, so the io stops */
				abort_batches(txs, (unsigned)b, (unsigned)nb);
				d->errored = true;
				free(p);
				free(start);
				free(txs);
				draft_msgf(d->io->errmsg, "append: %s",
					   rv == RAFT_NOMEM ? "out of memory" : d->why);
				return rv;
			}
		}
		if (rv) {
			/* records already applied to the state were not committed: the
			 * state is ahead of the log, so the io stops */
			abort_batches(txs, (unsigned)b, (unsigned)nb);
			d->errored = true;
			free(p);
			free(start);
			free(txs);
			return fail(d, rv, "append");
		}
		rv = delog_tx_commit(tx, &seq);
		if (rv) {
			abort_batches(txs, (unsigned)b + 1, (unsigned)nb);
			d->errored = true;
			free(p);
			free(start);
			free(txs);
			return fail(d, rv, "append");
		}
		d->key += j - i;
		for (size_t k = d->st.n; k > 0 && d->st.ents[k - 1].seq == 0; k--)
			d->st.ents[k - 1].seq = seq;
	}
	free(start);
	free(txs);
	if (n == 0) {
		/* nothing to write: complete once everything before is durable */
		delog_tx *tx;

		rv = delog_tx_begin(d->log, 0, DELOG_TX_NOWAIT | DELOG_TX_RESERVE, &tx);
		if (rv == 0)
			rv = delog_tx_commit(tx, &seq);
		if (rv) {
			free(p);
			return rv == -EAGAIN ? DRAFT_FULL : fail(d, rv, "append");
		}
	}
	pend(d, p, req, cb, seq);
	return 0;
}

/* (RS1) Wait for space: queue the call behind everything parked before it. */
static int park(struct draft *d, bool trunc, struct raft_io_append *req, raft_io_append_cb cb,
		const struct raft_entry *entries, unsigned n, raft_index index)
{
	struct draft_park *k = calloc(1, sizeof(*k));

	if (!k) {
		draft_msgf(d->io->errmsg, "%s: out of memory", trunc ? "truncate" : "append");
		return RAFT_NOMEM;
	}
	if (!d->park_head)
		d->park_next = d->st.first + d->st.n;
	k->trunc = trunc;
	k->req = req;
	k->cb = cb;
	k->entries = entries;
	k->n = n;
	k->index = trunc ? index : d->park_next;
	d->park_next = trunc ? index : d->park_next + n;
	if (req)
		req->cb = cb;
	if (d->park_tail)
		d->park_tail->next = k;
	else
		d->park_head = k;
	d->park_tail = k;
	if (d->poll_on)
		uv_ref((uv_handle_t *)&d->poll);
	return 0;
}

/* Fail (or cancel) every parked call with @status. */
static void park_fail(struct draft *d, int status)
{
	while (d->park_head) {
		struct draft_park *k = d->park_head;

		d->park_head = k->next;
		if (!k->trunc)
			k->cb(k->req, status);
		free(k);
	}
	d->park_tail = NULL;
}

/*
 * (RS1) Log what waits for space, in call order, as far as space goes: on every event of
 * the durable fd (which a refused NOWAIT reservation arms) and after a release.  A
 * parked append whose first entries an installed snapshot now covers logs only the
 * rest; any other mismatch with the log's next index stops the io.
 */
static void park_drain(struct draft *d)
{
	while (d->park_head && !d->errored && !d->closing && d->log) {
		struct draft_park *k = d->park_head;
		raft_index next = d->st.first + d->st.n;
		int rv;

		if (k->trunc) {
			rv = k->index < d->st.first ? 0 : truncate_now(d, k->index);
		} else if (k->index > next ||
			   (k->index < next && (!d->st.has_snap || next - 1 > d->st.snap.index))) {
			draft_msgf(d->io->errmsg,
				   "append: waited for space at index %llu; the log now ends "
				   "before %llu",
				   (unsigned long long)k->index, (unsigned long long)next);
			rv = RAFT_IOERR;
		} else {
			unsigned skip = next - k->index >= k->n ? k->n :
								  (unsigned)(next - k->index);

			rv = append_now(d, k->req, k->entries + skip, k->n - skip, k->cb);
		}
		if (rv == DRAFT_FULL)
			return;
		d->park_head = k->next;
		if (!d->park_head)
			d->park_tail = NULL;
		if (rv) {
			d->errored = true;
			if (!k->trunc)
				k->cb(k->req, rv);
			free(k);
			park_fail(d, RAFT_IOERR);
			return;
		}
		free(k);
	}
}

static int io_truncate(struct raft_io *io, raft_index index)
{
	struct draft *d = D(io);
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	if (index == 0 || index < d->st.first) {
		draft_msgf(io->errmsg, "truncate: index %llu is before the log's first entry %llu",
			   (unsigned long long)index, (unsigned long long)d->st.first);
		return RAFT_INVALID;
	}
	rv = d->park_head ? DRAFT_FULL : truncate_now(d, index);
	return rv == DRAFT_FULL ? park(d, true, NULL, NULL, NULL, 0, index) : rv;
}

static int io_append(struct raft_io *io, struct raft_io_append *req,
		     const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
	struct draft *d = D(io);
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	for (unsigned k = 0; k < n; k++)
		if (DRAFT_ENTRY_HDR + entries[k].buf.len + DELOG_ITEM_OVERHEAD > d->log_size / 4) {
			draft_msgf(io->errmsg,
				   "append: an entry of %zu bytes is too large for a %llu-byte "
				   "log (a quarter of it at most)",
				   entries[k].buf.len, (unsigned long long)d->log_size);
			return RAFT_TOOBIG;
		}
	rv = d->park_head ? DRAFT_FULL : append_now(d, req, entries, n, cb);
	return rv == DRAFT_FULL ? park(d, false, req, cb, entries, n, 0) : rv;
}

/* ---- snapshots ---- */

static void maybe_finish_close(struct draft *d);

static void prune(struct draft *d)
{
	char msg[RAFT_ERRMSG_BUF_SIZE];

	if (d->gets) {
		d->prune_due = true;
		return;
	}
	d->prune_due = false;
	/* a failure leaves files the next open removes */
	(void)draft_snap_prune(d->dir, d->st.has_snap ? d->st.snap.file : 0, msg);
}

static void put_work(uv_work_t *w)
{
	struct draft_put *p = w->data;

	p->status = draft_snap_write(p->d->dir, p->file, p->snap->bufs, p->snap->n_bufs, &p->size,
				     &p->sum, p->errmsg);
}

/*
 * (RS3) How many of the @trailing entries C-Raft keeps behind a snapshot at @index the
 * log keeps: as many as fit in an eighth of it, and at least one (0 means an installed
 * snapshot, which drops every entry).  C-Raft keeps them all in memory; the log only
 * needs them to send them after a restart, and a snapshot does as well.
 */
static unsigned trailing_kept(const struct draft *d, raft_index index, unsigned trailing)
{
	uint64_t bytes = 0, budget = d->log_size / 8;
	unsigned kept = 0;

	if (trailing == 0 || index < d->st.first)
		return trailing;
	for (size_t i = (size_t)(index - d->st.first) + 1; i > 0 && kept < trailing; i--) {
		if (i - 1 >= d->st.n)
			continue;
		bytes += DRAFT_ENTRY_HDR + d->st.ents[i - 1].len;
		if (kept > 0 && bytes > budget)
			break;
		kept++;
	}
	return kept ? kept : trailing;
}

static int put_records(struct draft *d, struct draft_put *p)
{
	struct draft_snapmeta m = { 0 };
	void *recs[2] = { NULL, NULL };
	uint32_t lens[2];
	uint64_t seq = 0, rel;
	bool freed;
	int rv;

	m.term = p->snap->term;
	m.index = p->snap->index;
	m.conf_index = p->snap->configuration_index;
	m.trailing = trailing_kept(d, m.index, p->trailing);
	m.file = p->file;
	m.size = p->size;
	m.sum = p->sum;
	rv = draft_conf_encode(&p->snap->configuration, &m.conf, &m.conf_len);
	if (rv)
		return rv;
	recs[0] = draft_rec_snap(&m, &lens[0]);
	recs[1] = draft_rec_base(d->st.term, d->st.vote, &lens[1]);
	free(m.conf);
	if (!recs[0] || !recs[1])
		rv = RAFT_NOMEM;
	else
		rv = commit_recs(d, recs, lens, 2, true, &seq, "snapshot_put");
	free(recs[0]);
	free(recs[1]);
	if (rv)
		return rv;
	/* Everything before the first checkpoint holding a kept entry (or before the SNAP
	 * record's own) is now superseded: entries by the snapshot, term and vote by BASE. */
	rel = seq - 1;
	if (d->st.n && d->st.ents[0].seq && d->st.ents[0].seq - 1 < rel)
		rel = d->st.ents[0].seq - 1;
	freed = rel > d->released;
	if (freed) {
		rv = delog_release(d->log, rel);
		if (rv)
			return fail(d, rv, "snapshot_put: release");
		d->released = rel;
	}
	d->used_floor = log_used(d); /* (RS3) what this snapshot left */
	if (freed)
		park_drain(d); /* the space event would say so as well (RS1) */
	prune(d);
	return 0;
}

static void put_after(uv_work_t *w, int status)
{
	struct draft_put *p = w->data;
	struct draft *d = p->d;
	int rv = p->status;

	d->works--;
	if (status == UV_ECANCELED || d->closing) {
		rv = RAFT_CANCELED;
	} else if (rv) {
		draft_msgf(d->io->errmsg, "snapshot_put: %s", p->errmsg);
	} else if ((rv = usable(d)) == 0) {
		rv = put_records(d, p);
	}
	p->cb(p->req, rv);
	free(p);
	if (!d->closing)
		complete_durable(d); /* (RS5) what waited for the put, now C-Raft may snapshot */
	maybe_finish_close(d);
}

static int io_snapshot_put(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
			   const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
	struct draft *d = D(io);
	struct draft_put *p;
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	p = calloc(1, sizeof(*p));
	if (!p)
		return RAFT_NOMEM;
	p->d = d;
	p->req = req;
	p->cb = cb;
	p->snap = snapshot;
	p->trailing = trailing;
	p->file = ++d->key; /* unique: keys never repeat, across restarts too */
	p->work.data = p;
	req->cb = cb;
	rv = uv_queue_work(d->loop, &p->work, put_work, put_after);
	if (rv) {
		free(p);
		draft_msgf(io->errmsg, "snapshot_put: %s", uv_strerror(rv));
		return RAFT_IOERR;
	}
	d->works++;
	return 0;
}

static void get_work(uv_work_t *w)
{
	struct draft_get *g = w->data;

	g->status = draft_snap_read(g->d->dir, &g->meta, &g->buf, g->errmsg);
}

static void get_after(uv_work_t *w, int status)
{
	struct draft_get *g = w->data;
	struct draft *d = g->d;
	struct raft_snapshot *s = NULL;
	int rv = status == UV_ECANCELED ? RAFT_CANCELED : g->status;

	d->works--;
	d->gets--;
	if (rv == 0) {
		s = raft_calloc(1, sizeof(*s));
		if (s)
			s->bufs = raft_malloc(sizeof(*s->bufs));
		if (!s || !s->bufs)
			rv = RAFT_NOMEM;
		else
			rv = draft_conf_decode(g->meta.conf, g->meta.conf_len, &s->configuration);
		if (rv) {
			if (s)
				raft_free(s->bufs);
			raft_free(s);
			s = NULL;
			raft_free(g->buf.base);
		} else {
			s->term = g->meta.term;
			s->index = g->meta.index;
			s->configuration_index = g->meta.conf_index;
			s->bufs[0] = g->buf;
			s->n_bufs = 1;
		}
	}
	if (rv && rv != RAFT_CANCELED)
		draft_msgf(d->io->errmsg, "snapshot_get: %s", g->errmsg);
	g->cb(g->req, s, rv);
	free(g->meta.conf);
	free(g);
	if (d->prune_due && !d->gets && !d->closing)
		prune(d);
	maybe_finish_close(d);
}

static int io_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req,
			   raft_io_snapshot_get_cb cb)
{
	struct draft *d = D(io);
	struct draft_get *g;
	int rv;

	if ((rv = usable(d)) != 0 || (rv = ensure_open(d)) != 0)
		return rv;
	if (!d->st.has_snap) {
		draft_msgf(io->errmsg, "snapshot_get: there is no snapshot");
		return RAFT_NOTFOUND;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return RAFT_NOMEM;
	g->d = d;
	g->req = req;
	g->cb = cb;
	g->meta = d->st.snap;
	g->meta.conf = malloc(g->meta.conf_len ? g->meta.conf_len : 1);
	if (!g->meta.conf) {
		free(g);
		return RAFT_NOMEM;
	}
	memcpy(g->meta.conf, d->st.snap.conf, g->meta.conf_len);
	g->work.data = g;
	req->cb = cb;
	rv = uv_queue_work(d->loop, &g->work, get_work, get_after);
	if (rv) {
		free(g->meta.conf);
		free(g);
		draft_msgf(io->errmsg, "snapshot_get: %s", uv_strerror(rv));
		return RAFT_IOERR;
	}
	d->works++;
	d->gets++;
	return 0;
}

/* ---- close ---- */

static void maybe_finish_close(struct draft *d)
{
	raft_io_close_cb cb;

	if (!d->closing || d->close_waits || d->works || !d->close_cb)
		return;
	/* Every queued append is durable (forced in io_close) unless the log failed. */
	complete_durable(d);
	while (d->head) {
		struct draft_pend *p = d->head;

		d->head = p->next;
		p->cb(p->req, RAFT_CANCELED);
		free(p);
	}
	d->tail = NULL;
	park_fail(d, RAFT_CANCELED);
	if (d->log) {
		(void)delog_close(d->log);
		d->log = NULL;
	}
	cb = d->close_cb;
	d->close_cb = NULL;
	cb(d->io);
}

static void poll_closed(uv_handle_t *h)
{
	struct draft *d = h->data;

	d->close_waits--;
	maybe_finish_close(d);
}

static void net_closed(struct raft_io *net)
{
	struct draft *d = net->data;

	d->close_waits--;
	maybe_finish_close(d);
}

static void io_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct draft *d = D(io);

	d->closing = true;
	d->close_cb = cb;
	if (d->log)
		(void)delog_force(d->log, 0);
	if (d->poll_on) {
		d->close_waits++;
		d->poll_on = false;
		uv_close((uv_handle_t *)&d->poll, poll_closed);
	}
	if (d->net_inited) {
		d->close_waits++;
		d->net.close(&d->net, net_closed);
	}
	/* With nothing to wait for, finish on the next loop iteration all the same: C-Raft
	 * expects the callback after io->close returned. */
	if (!d->close_waits && !d->works) {
		d->close_waits++;
		uv_timer_init(d->loop, &d->closer);
		d->closer.data = d;
		uv_close((uv_handle_t *)&d->closer, poll_closed);
	}
}

/* ---- construction ---- */

int draft_init(struct raft_io *io, struct uv_loop_s *loop, const char *dir,
	       struct raft_uv_transport *transport, const struct delog_raft_options *opts,
	       draft_open_fn open, void *open_arg)
{
	void *data = io->data;
	struct draft *d;
	int rv;

	memset(io, 0, sizeof(*io));
	io->data = data;
	if (opts && opts->size != sizeof(*opts)) {
		draft_msgf(io->errmsg, "options: size is not %zu", sizeof(*opts));
		return RAFT_INVALID;
	}
	if (opts && (opts->flush == DELOG_FLUSH_NONE || !delog_flush_policy_name(opts->flush))) {
		draft_msgf(io->errmsg, "options: flush policy %d is not crash-safe or unknown",
			   (int)opts->flush);
		return RAFT_INVALID;
	}
	if (strlen(dir) >= DRAFT_PATH_MAX) {
		draft_msgf(io->errmsg, "directory name too long");
		return RAFT_NAMETOOLONG;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return RAFT_NOMEM;
	d->io = io;
	d->loop = loop;
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	snprintf(d->logpath, sizeof(d->logpath), "%s/delog.log", dir);
	snprintf(d->netdir, sizeof(d->netdir), "%s/uv", dir);
	if (opts)
		d->opts = *opts;
	d->opts.size = sizeof(d->opts);
	d->open = open;
	d->open_arg = open_arg;
	if (transport) {
		d->net.data = d;
		rv = raft_uv_init(&d->net, loop, d->netdir, transport);
		if (rv) {
			draft_msgf(io->errmsg, "network io: %s", d->net.errmsg);
			free(d);
			return rv;
		}
		d->has_net = true;
		d->transport = transport;
	}
	io->version = 2;
	io->impl = d;
	io->init = io_init;
	io->close = io_close;
	io->load = io_load;
	io->start = io_start;
	io->bootstrap = io_bootstrap;
	io->recover = io_recover;
	io->set_term = io_set_term;
	io->set_vote = io_set_vote;
	io->send = io_send;
	io->append = io_append;
	io->truncate = io_truncate;
	io->snapshot_put = io_snapshot_put;
	io->snapshot_get = io_snapshot_get;
	io->time = io_time;
	io->random = io_random;
	io->async_work = io_async_work;
	return 0;
}

int delog_raft_init(struct raft_io *io, struct uv_loop_s *loop, const char *dir,
		    struct raft_uv_transport *transport, const struct delog_raft_options *opts)
{
	if (!io || !loop || !dir || !transport) {
		if (io)
			draft_msgf(io->errmsg, "init: NULL argument");
		return RAFT_INVALID;
	}
	return draft_init(io, loop, dir, transport, opts, NULL, NULL);
}

void delog_raft_close(struct raft_io *io)
{
	struct draft *d = io ? D(io) : NULL;

	if (!d)
		return;
	if (d->log)
		(void)delog_close(d->log);
	while (d->head) {
		struct draft_pend *p = d->head;

		d->head = p->next;
		free(p);
	}
	if (d->has_net)
		raft_uv_close(&d->net);
	draft_state_free(&d->st);
	free(d);
	io->impl = NULL;
}

int delog_raft_stats(struct raft_io *io, struct delog_stats *st)
{
	struct draft *d = D(io);

	if (!d->log) {
		draft_msgf(io->errmsg, "stats: the log is not open");
		return RAFT_NOTFOUND;
	}
	return delog_stats(d->log, st) ? RAFT_INVALID : 0;
}

unsigned delog_raft_snapshot_threshold(struct raft_io *io, unsigned threshold)
{
	struct draft *d = D(io);

	if (snapshot_due(d))
		return 1;
	return threshold;
}

int delog_raft_admit(struct raft_io *io, size_t len)
{
	struct draft *d = D(io);
	uint64_t need = DRAFT_ENTRY_HDR + (uint64_t)len + DELOG_ITEM_OVERHEAD;
	delog_tx *a = NULL, *b = NULL;
	int ok;

	/* (RS4) the entry and an eighth of the log beside it, begun and given back: exact,
	 * and nothing else runs on the loop before C-Raft's append that follows */
	if (!d->log || d->errored || d->park_head || need > d->log_size / 4)
		return 0;
	ok = delog_tx_begin(d->log, need, DELOG_TX_NOWAIT, &a) == 0 &&
	     delog_tx_begin(d->log, d->log_size / 8, DELOG_TX_NOWAIT, &b) == 0;
	delog_tx_abort(a);
	delog_tx_abort(b);
	return ok;
}

unsigned delog_raft_waiting(struct raft_io *io)
{
	struct draft *d = D(io);
	unsigned n = 0;

	for (struct draft_park *k = d->park_head; k; k = k->next)
		n += !k->trunc;
	return n;
}
