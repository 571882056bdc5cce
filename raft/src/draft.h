/*
 * draft.h - internals of libdelog-raft (not installed).
 *
 * Four parts, dependencies pointing down:
 *   io.c      the struct raft_io: C-Raft's calls on the loop (forces: delog_force_nowait)
 *   grow.c    moving the recovered state to a larger log
 *   state.c   the record stream kept in delog and the state it rebuilds (pure: no I/O)
 *   snap.c    snapshot data files beside the log
 *
 * The record stream (state.c).  Every call that changes persistent state logs one or more
 * records, each a delog item whose key is the io's record counter: keys strictly increase
 * in the order the calls were made, so no key is ever relogged, and recovery (which hands
 * back a prefix of the checkpoints) sees a prefix of the stream.  Replaying a prefix with
 * draft_state_apply gives the state as it was after that prefix of calls: that is the
 * whole crash-safety argument, and it needs only delog's guarantees (atomic, ordered
 * checkpoints; a force covers every earlier checkpoint).
 *
 * Records (little-endian):
 *   TERM  kind term                 term := term, vote := 0
 *   VOTE  kind id                   vote := id
 *   BASE  kind term vote            both (relogged with each snapshot, see below)
 *   ENTRY kind index term type data the entry at index (a later one replaces it)
 *   TRUNC kind index                drop entries >= index
 *   SNAP  kind term index conf_index trailing file size sum conf_len conf
 *                                   the newest snapshot; drops the entries it covers
 *                                   but the last @trailing ones (all of them when 0)
 * A snapshot's SNAP and BASE records go in one forced transaction; after it the io
 * releases every checkpoint before the first one holding a kept entry (entries' indexes
 * and checkpoints grow together), so the replay of what remains starts mid-stream: it
 * may meet entries whose predecessors were released, which is why ENTRY after a gap
 * restarts the entry run (only before the SNAP record that then drops them; the final
 * check rejects a state whose entries do not join the snapshot).
 */
#ifndef DELOG_RAFT_DRAFT_H
#define DELOG_RAFT_DRAFT_H

#include <delog.h>
#include <raft.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "delog_raft.h"

enum draft_kind {
	DRAFT_TERM = 1,
	DRAFT_VOTE = 2,
	DRAFT_BASE = 3,
	DRAFT_ENTRY = 4,
	DRAFT_TRUNC = 5,
	DRAFT_SNAP = 6,
};

#define DRAFT_ENTRY_HDR 19u /* kind(1) index(8) term(8) type(2) */

/* One entry of the in-memory log: which checkpoint holds its record (for release), its
 * term and, until load hands them to C-Raft, its payload (NULL after load). */
struct draft_ent {
	uint64_t seq;
	raft_term term;
	unsigned short type;
	uint32_t len;
	void *data;
};

struct draft_snapmeta {
	raft_term term;
	raft_index index;
	raft_index conf_index;
	uint32_t trailing;
	uint64_t file;      /* file id: snapshot-<file>.dat */
	uint64_t size, sum; /* data bytes and their checksum (draft_sum) */
	uint32_t conf_len;
	void *conf; /* the configuration, draft_conf_encode's format */
};

struct draft_state {
	raft_term term;
	raft_id vote;
	bool has_snap;
	struct draft_snapmeta snap;
	raft_index first; /* index of ents[0] (the next index when n == 0) */
	size_t n, cap;
	struct draft_ent *ents;
	uint64_t bytes;    /* the entries' records: DRAFT_ENTRY_HDR + len each */
	bool keep_data;    /* store payloads (until load) */
	uint64_t last_key; /* highest record key applied */
	char *why;         /* set when apply refuses a record (errmsg-sized) */
};

void draft_state_init(struct draft_state *s, char *why);
void draft_state_free(struct draft_state *s);
/* Apply one record logged under @key in checkpoint @seq.  0, or RAFT_CORRUPT /
 * RAFT_NOMEM with s->why set. */
int draft_state_apply(struct draft_state *s, uint64_t key, uint64_t seq, const void *rec,
		      uint32_t len);
/* Apply the @n records delog recovery handed over for checkpoint @seq, in key order
 * (delog's order within a checkpoint is not the keys').  0, RAFT_CORRUPT or RAFT_NOMEM. */
int draft_state_apply_ckpt(struct draft_state *s, uint64_t seq, const struct delog_item *it,
			   size_t n);
/* draft_state_apply of an ENTRY record given as its header (DRAFT_ENTRY_HDR bytes) and
 * its payload of @len bytes apart (an append, which logs them gathered). */
int draft_state_apply_entry(struct draft_state *s, uint64_t key, uint64_t seq, const void *hdr,
			    const void *data, uint32_t len);
/* The checks a complete replay must pass (entries join the snapshot; a log without a
 * snapshot starts at 1).  0 or RAFT_CORRUPT. */
int draft_state_check(struct draft_state *s);
/* Last index and its term (the snapshot's when the log is empty; 0 for neither). */
raft_index draft_state_last(const struct draft_state *s, raft_term *term);

/* Record encoders: return a malloc'd record and its length, or NULL. */
void *draft_rec_term(raft_term term, uint32_t *len);
void *draft_rec_vote(raft_id id, uint32_t *len);
void *draft_rec_base(raft_term term, raft_id vote, uint32_t *len);
void *draft_rec_trunc(raft_index index, uint32_t *len);
void *draft_rec_snap(const struct draft_snapmeta *m, uint32_t *len);
/* ENTRY's header into @hdr (DRAFT_ENTRY_HDR bytes); the payload follows it. */
void draft_rec_entry_hdr(unsigned char *hdr, raft_index index, const struct raft_entry *e);

/* The configuration in the SNAP record: n(4), then id(8) role(4) len(4) address. */
int draft_conf_encode(const struct raft_configuration *c, void **buf, uint32_t *len);
int draft_conf_decode(const void *buf, uint32_t len, struct raft_configuration *c);

uint64_t draft_sum(uint64_t h, const void *p, size_t n);
/* An error message into a RAFT_ERRMSG_BUF_SIZE buffer, cut short if need be. */
void draft_msgf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- snap.c ---- */
/* Write @bufs as DIR/snapshot-<file>.dat: a temporary file written and fsynced, renamed,
 * the directory fsynced.  RAFT_IOERR / RAFT_NOSPACE with @errmsg. */
int draft_snap_write(const char *dir, uint64_t file, const struct raft_buffer *bufs, unsigned n,
		     uint64_t *size, uint64_t *sum, char *errmsg);
/* Read it back into one raft_malloc'd buffer, checking size and checksum. */
int draft_snap_read(const char *dir, const struct draft_snapmeta *m, struct raft_buffer *buf,
		    char *errmsg);
/* Remove every snapshot file and leftover temporary but @keep (0: keep none). */
int draft_snap_prune(const char *dir, uint64_t keep, char *errmsg);

/* fsync the directory @dir.  0 or RAFT_IOERR / RAFT_NOSPACE with @errmsg. */
int draft_sync_dir(const char *dir, char *errmsg);

/* ---- grow.c ---- */
#define DRAFT_GROW_PATH 1100
/* Move @st, recovered from the log at @path, to a new log of @size bytes put in its place
 * (@base: the options to create it with).  0, or a C-Raft error with @errmsg: the old
 * log is then untouched. */
int draft_grow(const char *dir, const char *path, const struct delog_options *base, uint64_t size,
	       const struct draft_state *st, char *errmsg);

/* ---- io.c: the internal entry point of the tests ---- */

/* Opens the log: called with the options the io wants (recover callback included). */
typedef int (*draft_open_fn)(void *arg, const char *path, const struct delog_options *opts,
			     delog **out);

/*
 * As delog_raft_init, with @net the network io to delegate to (NULL: storage only, where
 * start and send fail with RAFT_INVALID: for tests that drive the storage methods) and
 * @open used instead of delog_open (NULL: delog_open), e.g. to run on the sim disk.
 */
int draft_init(struct raft_io *io, struct uv_loop_s *loop, const char *dir,
	       struct raft_uv_transport *transport, const struct delog_raft_options *opts,
	       draft_open_fn open, void *open_arg);

#endif
