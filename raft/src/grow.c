/*
 * grow.c - moving a node's state to a larger log (delog_raft_options.log_size larger than
 * the log DIR/delog.log holds).  A delog log never changes size, so the io writes what it
 * recovered into a new log of the larger size and puts that one in the old one's place.
 *
 * Why it is built this way:
 *  - The new log is DIR/delog.log.grow, created (delog's CREATE is itself atomic), filled,
 *    forced and closed, then opened again read-only and replayed: only a log whose replay
 *    gives exactly the recovered state (term, vote, snapshot, every entry's index, term,
 *    type and bytes) is renamed over DIR/delog.log, and the directory is fsynced.  A crash
 *    before the rename leaves the old log whole and a stray .grow file, which the next
 *    attempt removes first; after it, the new log is complete.  The old log is never
 *    written.
 *  - The records are those of a log that lived through the same calls: the entries, then
 *    the snapshot (keeping the entries it covers as trailing ones), then BASE (term and
 *    vote).  When no entry is behind the snapshot, SNAP goes first: a SNAP keeping none
 *    drops every entry (draft.h).  Keys start at 1.
 *  - Snapshot data files are not touched: the SNAP record names the same file.
 *  - The caller keeps the old log open, and so its writer lock, until this returns: a
 *    second writer is refused (-EBUSY) until the new log has the name, and then opens
 *    the new log.
 */
#define _GNU_SOURCE
#include "draft.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct grow {
	delog *log;
	uint64_t key; /* the last record key used */
};

/* Commit @n records in one transaction. */
static int put_recs(struct grow *g, void **recs, const uint32_t *lens, unsigned n)
{
	uint64_t reserve = 0;
	delog_tx *tx;
	int rv;

	for (unsigned i = 0; i < n; i++)
		reserve += lens[i] + DELOG_ITEM_OVERHEAD;
	rv = delog_tx_begin(g->log, reserve, 0, &tx);
	for (unsigned i = 0; i < n && rv == 0; i++)
		rv = delog_tx_log(tx, ++g->key, recs[i], lens[i]);
	if (rv) {
		delog_tx_abort(tx);
		return rv;
	}
	return delog_tx_commit(tx, NULL);
}

static int put_one(struct grow *g, void *rec, uint32_t len)
{
	int rv = rec ? put_recs(g, &rec, &len, 1) : -ENOMEM;

	free(rec);
	return rv;
}

/* The entries [from, to) of @st, one record and one transaction each (forced at the end). */
static int put_entries(struct grow *g, const struct draft_state *st, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		const struct draft_ent *e = &st->ents[i];
		struct raft_entry re = { .term = e->term, .type = e->type };
		unsigned char *r = malloc(DRAFT_ENTRY_HDR + (size_t)e->len);
		int rv;

		if (!r)
			return -ENOMEM;
		draft_rec_entry_hdr(r, st->first + i, &re);
		if (e->len)
			memcpy(r + DRAFT_ENTRY_HDR, e->data, e->len);
		rv = put_one(g, r, DRAFT_ENTRY_HDR + e->len);
		if (rv)
			return rv;
	}
	return 0;
}

static int put_snap(struct grow *g, const struct draft_state *st, uint32_t trailing)
{
	struct draft_snapmeta m = st->snap;
	uint32_t len = 0;
	void *rec;

	m.trailing = trailing;
	rec = draft_rec_snap(&m, &len);
	return put_one(g, rec, len);
}

/* Write @st into the open log g->log. */
static int write_state(struct grow *g, const struct draft_state *st)
{
	size_t behind = 0; /* entries at or before the snapshot's index */
	uint32_t len = 0;
	int rv = 0;

	if (st->has_snap && st->snap.index >= st->first)
		behind = st->snap.index - st->first + 1 < st->n ? st->snap.index - st->first + 1 :
								  st->n;
	if (st->has_snap && behind == 0)
		rv = put_snap(g, st, 0);
	if (rv == 0)
		rv = put_entries(g, st, 0, st->n);
	if (rv == 0 && st->has_snap && behind > 0)
		rv = put_snap(g, st, (uint32_t)behind);
	if (rv == 0) {
		void *rec = draft_rec_base(st->term, st->vote, &len);

		rv = put_one(g, rec, len);
	}
	if (rv == 0)
		rv = delog_force(g->log, 0);
	return rv;
}

/* ---- the check: replay the new log and compare ---- */

static int replay_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		     size_t n)
{
	return draft_state_apply_ckpt(arg, ck->seq, it, n);
}

/* Does @b hold the state @a holds (what load would return)? */
static bool same_state(const struct draft_state *a, const struct draft_state *b)
{
	if (a->term != b->term || a->vote != b->vote || a->has_snap != b->has_snap ||
	    a->first != b->first || a->n != b->n)
		return false;
	if (a->has_snap && (a->snap.term != b->snap.term || a->snap.index != b->snap.index ||
			    a->snap.conf_index != b->snap.conf_index ||
			    a->snap.file != b->snap.file || a->snap.size != b->snap.size ||
			    a->snap.sum != b->snap.sum || a->snap.conf_len != b->snap.conf_len ||
			    memcmp(a->snap.conf, b->snap.conf, a->snap.conf_len) != 0))
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct draft_ent *x = &a->ents[i], *y = &b->ents[i];

		if (x->term != y->term || x->type != y->type || x->len != y->len ||
		    (x->len && memcmp(x->data, y->data, x->len) != 0))
			return false;
	}
	return true;
}

static int check_state(const char *path, const struct delog_options *base,
		       const struct draft_state *st, char *errmsg)
{
	struct delog_options o = *base;
	struct draft_state s;
	char why[RAFT_ERRMSG_BUF_SIZE] = "";
	delog *log;
	int rv;

	o.flags = DELOG_OPEN_RDONLY;
	o.create_size = 0;
	o.recover = replay_cb;
	o.recover_arg = &s;
	o.error = NULL;
	draft_state_init(&s, why);
	rv = delog_open(path, &o, &log);
	if (rv == 0) {
		delog_close(log);
		rv = draft_state_check(&s);
		if (rv == 0 && !same_state(st, &s))
			rv = RAFT_CORRUPT;
	}
	if (rv)
		draft_msgf(errmsg, "grow: %s does not replay to the state recovered (%s)", path,
			   rv < 0 ? delog_strerror(rv) :
			   why[0] ? why :
				    raft_strerror(rv));
	draft_state_free(&s);
	return rv ? RAFT_IOERR : 0;
}

int draft_grow(const char *dir, const char *path, const struct delog_options *base, uint64_t size,
	       const struct draft_state *st, char *errmsg)
{
	char gpath[DRAFT_GROW_PATH];
	struct delog_options o = *base;
	struct grow g = { 0 };
	int rv;

	if ((size_t)snprintf(gpath, sizeof(gpath), "%s.grow", path) >= sizeof(gpath)) {
		draft_msgf(errmsg, "grow: path too long");
		return RAFT_NAMETOOLONG;
	}
	if (unlink(gpath) != 0 && errno != ENOENT) {
		draft_msgf(errmsg, "grow: remove %s: %s", gpath, strerror(errno));
		return RAFT_IOERR;
	}
	o.flags = DELOG_OPEN_CREATE;
	o.create_size = size;
	o.recover = NULL;
	o.recover_arg = NULL;
	o.error = NULL;
	rv = delog_open(gpath, &o, &g.log);
	if (rv) {
		draft_msgf(errmsg, "grow: create %s (%llu bytes): %s", gpath,
			   (unsigned long long)size, delog_strerror(rv));
		return rv == -ENOSPC ? RAFT_NOSPACE : RAFT_IOERR;
	}
	rv = write_state(&g, st);
	if (rv == 0)
		rv = delog_close(g.log);
	else
		(void)delog_close(g.log);
	if (rv) {
		draft_msgf(errmsg, "grow: write %s: %s", gpath, delog_strerror(rv));
		unlink(gpath);
		return RAFT_IOERR;
	}
	if ((rv = check_state(gpath, base, st, errmsg)) != 0) {
		unlink(gpath);
		return rv;
	}
	if (rename(gpath, path) != 0) {
		draft_msgf(errmsg, "grow: rename %s to %s: %s", gpath, path, strerror(errno));
		unlink(gpath);
		return RAFT_IOERR;
	}
	return draft_sync_dir(dir, errmsg);
}
