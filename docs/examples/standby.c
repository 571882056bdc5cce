/*
 * standby.c - a standby for kv.c: it follows the primary's log with delog_reader and
 * keeps its own copy of the key-value store, durable in its own delog log.
 *
 *   standby PRIMARY_DBDIR STANDBY_DBDIR           follow until SIGINT or SIGTERM
 *   standby PRIMARY_DBDIR STANDBY_DBDIR --once    apply everything durable now, then exit
 *   standby PRIMARY_DBDIR STANDBY_DBDIR get KEY   print VALUE; exit 1 if KEY is absent
 *   standby PRIMARY_DBDIR STANDBY_DBDIR dump      print every "KEY<TAB>VALUE", sorted by key
 *
 * PRIMARY_DBDIR is a kv store (kv.c); the standby reads only its log, PRIMARY_DBDIR/log,
 * read-only and without a lock, so the primary runs as if the standby were not there.
 * STANDBY_DBDIR (created if missing; on a filesystem with O_DIRECT, not tmpfs) holds the
 * standby's log, STANDBY_DBDIR/log (16 MiB), created on first use.  get and dump answer
 * from that log alone (a read-only open: they may run beside a following standby) in
 * kv's output format, so `kv P dump` and `standby P S dump` can be compared.
 * Following prints nothing per checkpoint: a line on stderr every 1000 checkpoints, and
 * one at exit.  --once stops when no checkpoint came for 300 ms (for tests and cron).
 * Exit status: 0 success, 1 failure (or key not found), 2 usage error.
 *
 * Why it is right (the invariants):
 *  - The reader hands over each durable checkpoint of the primary once, in order, from
 *    the sequence the standby asks for (delog_reader_options.from); a checkpoint is
 *    the primary's unit of atomicity, so the standby applies whole checkpoints.
 *  - Per primary checkpoint the standby commits one transaction to its own log: the
 *    same items (same delog keys, same data) and one more, the primary's checkpoint
 *    sequence; forced before the in-memory map changes.  Items and sequence are in one
 *    checkpoint of the standby's log, and recovery replays whole checkpoints: after a
 *    crash (kill -9 included) the standby holds the primary's state as of some
 *    checkpoint S, knows S, and asks the reader for S + 1.  So no checkpoint is applied
 *    twice and none is skipped.
 *  - Each transaction is forced before the next commits, so each standby checkpoint
 *    holds exactly one primary checkpoint.  Merging several (group commit) would
 *    relog: one copy per key per checkpoint, which loses a del of key A followed by a
 *    put of key B when A and B have the same hash (kv allows that sequence).
 *  - The sequence item: kv's delog keys are FNV-1a hashes, any 64-bit value (0 too),
 *    so no key is free for it by construction.  It is recognized by its op byte 'S',
 *    not by its key, and logged under the smallest key no item of its transaction
 *    uses (0 unless taken): logging a key twice in a transaction would replace an item.
 *  - A fresh standby asks for checkpoint 1, not for "the oldest the log holds": if the
 *    primary released checkpoint 1 (wrote it back into its data file), the log alone
 *    cannot rebuild its state, and the reader says so (DELOG_EBEHIND) instead of
 *    starting the copy in the middle.
 *
 * What it leaves out, to stay small:
 *  - The map is kept in memory only and the standby never releases its own log: every
 *    primary checkpoint it applied stays there (about 8 KiB each for kv's small puts,
 *    so a 16 MiB log holds about 2000).  A production standby writes its map back and
 *    releases its log, as kv.c does; here a full log stops the standby (exit 1).
 *  - DELOG_EBEHIND (the primary released a checkpoint the standby had not applied yet:
 *    it was stopped too long, or started after the primary's first write-back) ends it
 *    with exit 1: it must then be rebuilt from a copy of the primary's data file taken
 *    while the primary is stopped (kv's data file records the checkpoint it covers),
 *    which this example does not implement.
 *  - It does not notice a primary whose log was formatted anew while the standby was
 *    stopped (the sequences start again at 1).
 *
 * Build: in the delog tree (docs/examples/CMakeLists.txt), or against an installed
 * delog: cc standby.c $(pkg-config --cflags --libs delog) -o standby.  Only <delog.h>.
 */
#include <delog.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define LOG_SIZE (16ull << 20)
#define MAX_KEY 4096u
#define ONCE_IDLE_MS 300   /* --once: stop after this long without a checkpoint */
#define FOLLOW_WAIT_MS 250 /* the longest a signal waits to be noticed */
#define REPORT_EVERY 1000u

/* ---- hashing (as kv.c) ---- */

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t key_hash(const char *key, size_t len)
{
	return fnv1a(key, len, FNV_INIT);
}

/* ---- the map: kv.c's memtable, open addressing on the key hash ---- */

struct ent {
	uint64_t h;
	char *key, *val;
	uint32_t klen, vlen;
	unsigned char state; /* 0 empty, 1 live, 2 deleted */
};

struct memtable {
	struct ent *e;
	size_t cap, live, used; /* used: live + tombstones */
};

static struct ent *mt_slot(struct memtable *m, uint64_t h, bool for_insert)
{
	size_t i = (size_t)h & (m->cap - 1);
	struct ent *tomb = NULL;

	for (;;) {
		struct ent *e = &m->e[i];

		if (e->state == 0)
			return for_insert && tomb ? tomb : e;
		if (e->state == 2 && !tomb)
			tomb = e;
		if (e->state == 1 && e->h == h)
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

static int mt_grow(struct memtable *m)
{
	struct memtable n = { .cap = m->cap ? m->cap * 2 : 1024 };

	while (m->live * 2 >= n.cap)
		n.cap *= 2;
	n.e = calloc(n.cap, sizeof(*n.e));
	if (!n.e)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->e[i].state == 1) {
			*mt_slot(&n, m->e[i].h, true) = m->e[i];
			n.live++;
		}
	}
	n.used = n.live;
	free(m->e);
	*m = n;
	return 0;
}

static const struct ent *mt_get(struct memtable *m, const char *key, size_t klen)
{
	struct ent *e;

	if (!m->cap)
		return NULL;
	e = mt_slot(m, key_hash(key, klen), false);
	if (e->state != 1 || e->klen != klen || memcmp(e->key, key, klen))
		return NULL;
	return e;
}

/* 0, -EEXIST (another key with this hash is stored), -ENOMEM */
static int mt_put(struct memtable *m, const char *key, size_t klen, const char *val, size_t vlen)
{
	uint64_t h = key_hash(key, klen);
	struct ent *e;
	char *k, *v;

	if ((m->used + 1) * 4 >= m->cap * 3 && mt_grow(m))
		return -ENOMEM;
	e = mt_slot(m, h, true);
	if (e->state == 1 && (e->klen != klen || memcmp(e->key, key, klen)))
		return -EEXIST;
	v = malloc(vlen + 1);
	k = e->state == 1 ? e->key : malloc(klen + 1);
	if (!v || !k) {
		free(v);
		if (e->state != 1)
			free(k);
		return -ENOMEM;
	}
	memcpy(v, val, vlen);
	v[vlen] = 0;
	if (e->state != 1) {
		memcpy(k, key, klen);
		k[klen] = 0;
		if (e->state == 0)
			m->used++;
		m->live++;
	} else {
		free(e->val);
	}
	*e = (struct ent){ .h = h,
			   .key = k,
			   .val = v,
			   .klen = (uint32_t)klen,
			   .vlen = (uint32_t)vlen,
			   .state = 1 };
	return 0;
}

static void mt_del(struct memtable *m, const char *key, size_t klen)
{
	struct ent *e;

	if (!m->cap)
		return;
	e = mt_slot(m, key_hash(key, klen), false);
	if (e->state != 1 || e->klen != klen || memcmp(e->key, key, klen))
		return;
	free(e->key);
	free(e->val);
	e->key = e->val = NULL;
	e->state = 2;
	m->live--;
}

static void mt_free(struct memtable *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		if (m->e[i].state == 1) {
			free(m->e[i].key);
			free(m->e[i].val);
		}
	}
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = *(const struct ent *const *)a, *y = *(const struct ent *const *)b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->key, y->key, n);

	return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* ---- items ---- */

/* kv's item data: op ('P' put, 'D' del), 3 pad bytes, u32 key length, key, value (a
 * put's).  The standby's sequence item has the same header: op 'S', key length 0,
 * then the primary's checkpoint sequence (u64). */
#define ITEM_HDR 8u
#define SEQ_ITEM_LEN (ITEM_HDR + 8u)

/* A kv item whose fields fit and whose delog key is the hash of its key, so that
 * applying it cannot fail but for memory: 0 or -EINVAL. */
static int kv_item_check(const struct delog_item *it)
{
	const unsigned char *p = it->data;
	uint32_t klen;

	if (it->len < ITEM_HDR || (p[0] != 'P' && p[0] != 'D'))
		return -EINVAL;
	memcpy(&klen, p + 4, sizeof(klen));
	if (!klen || klen > MAX_KEY || klen > it->len - ITEM_HDR)
		return -EINVAL;
	if (key_hash((const char *)p + ITEM_HDR, klen) != it->key)
		return -EINVAL;
	return 0;
}

/* Apply a checked kv item: 0, -EEXIST (a hash collision kv would have refused), -ENOMEM. */
static int kv_item_apply(struct memtable *m, const struct delog_item *it)
{
	const unsigned char *p = it->data;
	uint32_t klen;

	memcpy(&klen, p + 4, sizeof(klen));
	if (p[0] == 'D') {
		mt_del(m, (const char *)p + ITEM_HDR, klen);
		return 0;
	}
	return mt_put(m, (const char *)p + ITEM_HDR, klen, (const char *)p + ITEM_HDR + klen,
		      it->len - ITEM_HDR - klen);
}

static bool seq_item_get(const struct delog_item *it, uint64_t *seq)
{
	const unsigned char *p = it->data;

	if (it->len != SEQ_ITEM_LEN || p[0] != 'S')
		return false;
	memcpy(seq, p + ITEM_HDR, sizeof(*seq));
	return true;
}

/* ---- the standby's store ---- */

struct standby {
	char *log_path;
	delog *log;
	struct memtable mt;
	uint64_t applied; /* the primary's last checkpoint in the map (0: none) */
};

static void die_errno(const char *what, int err)
{
	fprintf(stderr, "standby: %s: %s\n", what, strerror(err));
	exit(1);
}

/* For a delog call that just failed: its code and, when it has one, its own words. */
static void die_delog(const char *what, int err)
{
	const char *msg = delog_errmsg();

	fprintf(stderr, "standby: %s: %s%s%s\n", what, delog_strerror(err), *msg ? ": " : "", msg);
	exit(1);
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (!p)
		die_errno("malloc", ENOMEM);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Recovery of the standby's own log: every checkpoint is one primary checkpoint, its
 * items and its sequence item (the log is never released, so all come back). */
static int on_checkpoint(void *arg, const struct delog_checkpoint *ck,
			 const struct delog_item *items, size_t n)
{
	struct standby *sb = arg;
	uint64_t seq = 0;
	size_t nseq = 0;

	for (size_t i = 0; i < n; i++) {
		if (seq_item_get(&items[i], &seq)) {
			nseq++;
		} else if (kv_item_check(&items[i])) {
			fprintf(stderr, "standby: %s: checkpoint %llu: not a kv item\n",
				sb->log_path, (unsigned long long)ck->seq);
			return -EINVAL;
		}
	}
	/* Exactly one sequence, after the last one: else it is not a standby's log. */
	if (nseq != 1 || seq <= sb->applied) {
		fprintf(stderr, "standby: %s: checkpoint %llu: %s\n", sb->log_path,
			(unsigned long long)ck->seq,
			nseq != 1 ? "no primary sequence: not a standby's log" :
				    "primary sequences out of order");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t ignored;
		int err = seq_item_get(&items[i], &ignored) ? 0 : kv_item_apply(&sb->mt, &items[i]);

		if (err)
			return err;
	}
	sb->applied = seq;
	return 0;
}

/* Open the standby's log, replaying it into the map: read-only for get and dump (they
 * may run beside a following standby, which holds the writer lock). */
static void standby_open(struct standby *sb, const char *dir, bool writer)
{
	struct delog_options o = { .size = sizeof(o),
				   .flags = writer ? DELOG_OPEN_CREATE : DELOG_OPEN_RDONLY,
				   .create_size = LOG_SIZE,
				   .recover = on_checkpoint,
				   .recover_arg = sb };
	int err;

	memset(sb, 0, sizeof(*sb));
	sb->log_path = path_join(dir, "log");
	if (writer && mkdir(dir, 0700) && errno != EEXIST)
		die_errno(dir, errno);
	err = delog_open(sb->log_path, &o, &sb->log);
	if (err == -ENOENT && !writer) {
		fprintf(stderr,
			"standby: %s: no standby log yet (run `standby PRIMARY %s` first)\n",
			sb->log_path, dir);
		exit(1);
	}
	if (err)
		die_delog(sb->log_path, err);
}

static void standby_close(struct standby *sb)
{
	int err = delog_close(sb->log);

	if (err)
		die_delog("close", err);
	mt_free(&sb->mt);
	free(sb->log_path);
}

/* The smallest key none of @items uses: the sequence item's (see the header). */
static uint64_t unused_key(const struct delog_item *items, size_t n)
{
	uint64_t key = 0;
	bool taken = true;

	while (taken) {
		taken = false;
		for (size_t i = 0; i < n && !taken; i++)
			taken = items[i].key == key;
		if (taken)
			key++;
	}
	return key;
}

/* Log one primary checkpoint in one transaction, force it, then apply it. */
static void standby_apply(struct standby *sb, const struct delog_checkpoint *ck,
			  const struct delog_item *items)
{
	unsigned char seqbuf[SEQ_ITEM_LEN] = { 'S' };
	uint64_t reserve = SEQ_ITEM_LEN + DELOG_ITEM_OVERHEAD, seqkey;
	delog_tx *tx;
	int err;

	/* The reader's promise, checked: the next one, never one twice, none skipped. */
	if (ck->seq != sb->applied + 1) {
		fprintf(stderr, "standby: got primary checkpoint %llu after %llu\n",
			(unsigned long long)ck->seq, (unsigned long long)sb->applied);
		exit(1);
	}
	/* Check every item before logging any: a checkpoint is applied whole or not at all. */
	for (size_t i = 0; i < ck->nitems; i++) {
		if (kv_item_check(&items[i])) {
			fprintf(stderr,
				"standby: primary checkpoint %llu: item %zu is not a kv item "
				"(is the primary a kv store?)\n",
				(unsigned long long)ck->seq, i);
			exit(1);
		}
		reserve += items[i].len + DELOG_ITEM_OVERHEAD;
	}
	seqkey = unused_key(items, ck->nitems);
	memcpy(seqbuf + ITEM_HDR, &ck->seq, sizeof(ck->seq));

	/* NOWAIT: nothing ever frees space in this log, so waiting would be for ever. */
	err = delog_tx_begin(sb->log, reserve, DELOG_TX_NOWAIT, &tx);
	if (err == -EAGAIN) {
		fprintf(stderr,
			"standby: %s is full after primary checkpoint %llu: this example never "
			"releases its log (a production standby writes its map back and releases, "
			"as kv.c does)\n",
			sb->log_path, (unsigned long long)sb->applied);
		exit(1);
	}
	if (err)
		die_delog("delog_tx_begin", err);
	for (size_t i = 0; i < ck->nitems && !err; i++)
		err = delog_tx_log(tx, items[i].key, items[i].data, items[i].len);
	if (!err)
		err = delog_tx_log(tx, seqkey, seqbuf, sizeof(seqbuf));
	if (err) {
		delog_tx_abort(tx);
		die_delog("delog_tx_log", err);
	}
	/* Durable before the map changes: the map never holds what a crash would lose. */
	err = delog_tx_commit_force(tx, NULL);
	if (err)
		die_delog("delog_tx_commit_force", err);
	for (size_t i = 0; i < ck->nitems; i++) {
		err = kv_item_apply(&sb->mt, &items[i]);
		if (err) {
			fprintf(stderr, "standby: primary checkpoint %llu: %s\n",
				(unsigned long long)ck->seq,
				err == -EEXIST ? "two stored keys with the same hash" :
						 strerror(-err));
			exit(1);
		}
	}
	sb->applied = ck->seq;
}

/* ---- following ---- */

/* SIGINT or SIGTERM arrived (they are blocked, so they wait as pending signals). */
static bool stop_requested(const sigset_t *set)
{
	struct timespec zero = { 0, 0 };

	return sigtimedwait(set, NULL, &zero) > 0;
}

static delog_reader *reader_open(const char *path, uint64_t from)
{
	struct delog_reader_options ro = { .size = sizeof(ro), .from = from };
	delog_reader *r;
	int err = delog_reader_open(path, &ro, &r);

	if (err)
		die_delog(path, err);
	return r;
}

static int follow(const char *primary, const char *dir, bool once)
{
	char *ppath = path_join(primary, "log");
	unsigned long long n = 0;
	struct standby sb;
	delog_reader *r;
	sigset_t set;
	int rc;

	/* Block the stop signals before any delog thread exists (threads inherit the
	 * mask): they stay pending until the loop looks, so no handler runs inside delog
	 * and no call of delog's is interrupted. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	standby_open(&sb, dir, true);
	/* From the checkpoint after the last applied; from 1 when new (see the header). */
	r = reader_open(ppath, sb.applied + 1);
	for (;;) {
		struct delog_checkpoint ck;
		const struct delog_item *items;

		rc = delog_reader_next(r, once ? ONCE_IDLE_MS : FOLLOW_WAIT_MS, &ck, &items);
		if (rc == 1) {
			standby_apply(&sb, &ck, items);
			if (++n % REPORT_EVERY == 0)
				fprintf(stderr,
					"standby: %llu checkpoints applied, at primary "
					"checkpoint %llu\n",
					n, (unsigned long long)sb.applied);
		} else if (rc == DELOG_EBEHIND) {
			fprintf(stderr,
				"standby: %s: the primary released checkpoint %llu before this "
				"standby applied it (it is only in the primary's data file now)\n"
				"standby: the standby cannot catch up from the log: it must be "
				"rebuilt from a copy of the primary's data file\n",
				ppath, (unsigned long long)delog_reader_position(r));
			exit(1);
		} else if (rc == DELOG_ESHUTDOWN) {
			/* Everything the failed writer made durable was handed over; a new
			 * writer resumes the log, for a new reader to follow. */
			if (once)
				break;
			delog_reader_close(r);
			sleep(1);
			r = reader_open(ppath, sb.applied + 1);
		} else if (rc < 0) {
			die_delog(ppath, rc);
		} else if (once) {
			break; /* nothing more within ONCE_IDLE_MS */
		}
		if (stop_requested(&set))
			break;
	}
	fprintf(stderr, "standby: %llu checkpoints applied, at primary checkpoint %llu\n", n,
		(unsigned long long)sb.applied);
	delog_reader_close(r);
	standby_close(&sb);
	free(ppath);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: standby PRIMARY_DBDIR STANDBY_DBDIR [--once]\n"
			"       standby PRIMARY_DBDIR STANDBY_DBDIR get KEY | dump\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct standby sb;
	const char *cmd = argc > 3 ? argv[3] : NULL;
	int rc = 0;

	if (argc == 3 || (argc == 4 && !strcmp(cmd, "--once")))
		return follow(argv[1], argv[2], argc == 4);
	if (!((argc == 5 && !strcmp(cmd, "get") && argv[4][0] && strlen(argv[4]) <= MAX_KEY) ||
	      (argc == 4 && !strcmp(cmd, "dump"))))
		usage();

	standby_open(&sb, argv[2], false);
	if (!strcmp(cmd, "get")) {
		const struct ent *e = mt_get(&sb.mt, argv[4], strlen(argv[4]));

		if (e) {
			printf("%s\n", e->val);
		} else {
			fprintf(stderr, "standby: %s: not found\n", argv[4]);
			rc = 1;
		}
	} else {
		const struct ent **v = malloc((sb.mt.live + 1) * sizeof(*v));
		size_t n = 0;

		if (!v)
			die_errno("malloc", ENOMEM);
		for (size_t i = 0; i < sb.mt.cap; i++)
			if (sb.mt.e[i].state == 1)
				v[n++] = &sb.mt.e[i];
		qsort(v, n, sizeof(*v), cmp_ent);
		for (size_t i = 0; i < n; i++)
			printf("%s\t%s\n", v[i]->key, v[i]->val);
		free(v);
	}
	standby_close(&sb);
	return rc;
}
