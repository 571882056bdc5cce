/*
 * bench_peers.c - the program delog-bench-peers (peers_main.c), which `delog bench
 * --workload peers` and `delog bench --peers` run: the same
 * durable-commit workload on delog and on the write-ahead logs a C user already has at
 * hand (RocksDB, SQLite, LMDB), plus the raw one-write-one-fdatasync baseline, in one
 * run in one directory, so the question "why not just use X?" gets a measured answer.
 *
 * Why it is built this way:
 *  - One workload for every system: a transaction of --items records of --item-size
 *    bytes (default 4 x 128 B) under 64-bit keys client << 40 | counter (distinct, so
 *    nothing is overwritten), and the commit returns only once it is durable:
 *      delog-sync|async|single  delog_tx_begin, --items delog_tx_log,
 *                       delog_tx_commit_force, with that flush policy (the unsafe
 *                       `none` is not offered: it would not be the same workload);
 *      rocksdb          one DB shared by the threads, a WriteBatch of --items puts per
 *                       commit, rocksdb_write with WriteOptions sync = true (RocksDB
 *                       groups concurrent writers into one WAL write + sync itself);
 *      sqlite           journal_mode=WAL, synchronous=FULL, one connection per thread,
 *                       BEGIN IMMEDIATE; --items INSERTs (a prepared statement);
 *                       COMMIT, busy_timeout 10 s (BEGIN is retried past it).
 *                       IMMEDIATE, because a plain (deferred) BEGIN of concurrent
 *                       writers fails with SQLITE_BUSY_SNAPSHOT instead of waiting;
 *      lmdb             one environment with default flags (so mdb_txn_commit syncs
 *                       the data and then the meta page), a write transaction of
 *                       --items mdb_put per commit (LMDB serialises writers);
 *      raw-fdatasync    every thread writes each commit as one O_DIRECT pwrite of its
 *                       payload rounded up to 4 KiB at its own offsets, in a region
 *                       after the log that was written with zeroes first, then
 *                       fdatasync: bench_commit.c's raw baseline, the same code
 *                       (bench_raw_commit and bench_prewrite in bench_util.c).
 *    The peers run with their defaults apart from the durability settings the issue
 *    names: the point is what a user gets who asks each for durable commits.
 *  - One run, one directory, interleaved: the delog file and the peers' databases all
 *    live in --dir (default the current directory), and for every client count each
 *    system runs in turn, so drift in the device (this machine's disk varies by 2x
 *    between runs) hits all alike.  Each peer gets a new database directory per point,
 *    removed after it, so no point inherits another's compaction or checkpoint debt.
 *  - How a point is measured is bench_commit.c's method and code (bench_util.c's start
 *    gate, window and latency samples): the threads (and a SQLite thread's connection,
 *    opened before the gate) wait at a start gate, run a warm-up of max(--time / 10,
 *    20 ms), then the measured window of --time seconds; a commit counts, with its
 *    latency, when it completes inside the window.  The measuring thread calls
 *    delog_release(log, delog_durable_seq(log)) every 2 ms on delog points.
 *  - Device flushes are counted, not assumed: field 16 of /sys/block/DISK/stat (flush
 *    requests completed, Linux >= 5.5) is read at both ends of the window, for the disk
 *    that holds --dir (stat's st_dev -> /sys/dev/block/MAJ:MIN, the parent disk when that
 *    is a partition).  That counts what reached the device from every layer (the
 *    filesystem's journal commits included, and the kernel's merging of concurrent
 *    flushes), for every system the same way; it also counts other processes' flushes
 *    on that disk, so the idle rate is measured once before the first point and printed.
 *    Sectors written (field 7) give device bytes per commit the same way.  For delog the
 *    engine's own count is shown beside it: delog_stats' device_flushes, which counts a
 *    FUA write on a disk without FUA as the write + flush it becomes (fua_flushes).
 *    Where the counter does not exist (no block device behind --dir, an older kernel)
 *    the columns say n/a.
 *  - The ratio the issue asks for: at each client count, the best delog policy's
 *    commits/s over the best peer's (RocksDB, SQLite, LMDB; the raw baseline is not a
 *    peer and is shown apart).  The targets (>= 1.0 at 1 thread, >= 2.5 at 64) are
 *    reported, never asserted.
 *  - Each peer is built in only when its library is found (tools/CMakeLists.txt defines
 *    DELOG_HAVE_ROCKSDB, DELOG_HAVE_SQLITE, DELOG_HAVE_LMDB, and builds the program only
 *    when one is); a peer that is missing is named in the output ("missing") and the
 *    others run.  The peers' libraries are why this is a program apart from `delog`.
 */
#include "bench.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef DELOG_HAVE_ROCKSDB
#include <rocksdb/c.h>
#endif
#ifdef DELOG_HAVE_SQLITE
#include <sqlite3.h>
#endif
#ifdef DELOG_HAVE_LMDB
#include <lmdb.h>
#endif

#define MAX_CLIENTS 256u
#define MAX_LIST 16u
#define LOG_SIZE (256ull << 20) /* delog's log, as bench_commit's default */
#define BASE_AREA (64ull << 20) /* the raw baseline's region, after the log */
#define MAX_ITEM_SIZE (64u << 10)
#define MAX_ITEMS 256u
#define SQLITE_BUSY_MS 10000
#define LMDB_MAP_SIZE (4ull << 30) /* address space only; the file grows as used */
#define IDLE_WARN 10.0             /* flushes/s by others that make the counts suspect */

/* The targets (reported, not asserted): best delog / best peer. */
#define T_RATIO_1 1.0
#define T_RATIO_64 2.5

enum kind {
	K_RAW,
	K_DELOG,
	K_PEER
};

enum sys_id {
	S_RAW,
	S_DELOG_SYNC,
	S_DELOG_ASYNC,
	S_DELOG_SINGLE,
	S_ROCKSDB,
	S_SQLITE,
	S_LMDB,
	NR_SYS,
};

struct sysdesc {
	const char *name;
	enum kind kind;
	int policy; /* delog: enum delog_flush_policy; else -1 */
	bool built;
	const char *package; /* what to install when it is not built */
};

static const struct sysdesc systems[NR_SYS] = {
	[S_RAW] = { "raw-fdatasync", K_RAW, -1, true, NULL },
	[S_DELOG_SYNC] = { "delog-sync", K_DELOG, DELOG_FLUSH_SYNC, true, NULL },
	[S_DELOG_ASYNC] = { "delog-async", K_DELOG, DELOG_FLUSH_ASYNC, true, NULL },
	[S_DELOG_SINGLE] = { "delog-single", K_DELOG, DELOG_FLUSH_SINGLE, true, NULL },
#ifdef DELOG_HAVE_ROCKSDB
	[S_ROCKSDB] = { "rocksdb", K_PEER, -1, true, "librocksdb-dev" },
#else
	[S_ROCKSDB] = { "rocksdb", K_PEER, -1, false, "librocksdb-dev" },
#endif
#ifdef DELOG_HAVE_SQLITE
	[S_SQLITE] = { "sqlite", K_PEER, -1, true, "libsqlite3-dev" },
#else
	[S_SQLITE] = { "sqlite", K_PEER, -1, false, "libsqlite3-dev" },
#endif
#ifdef DELOG_HAVE_LMDB
	[S_LMDB] = { "lmdb", K_PEER, -1, true, "liblmdb-dev" },
#else
	[S_LMDB] = { "lmdb", K_PEER, -1, false, "liblmdb-dev" },
#endif
};

enum {
	OPT_CLIENTS = BENCH_OPT_WORKLOAD,
	OPT_SYSTEMS,
	OPT_TIME,
	OPT_ITEM_SIZE,
	OPT_ITEMS,
	OPT_DIR,
};

static const struct option peers_options[] = {
	{ "clients", required_argument, NULL, OPT_CLIENTS },
	{ "systems", required_argument, NULL, OPT_SYSTEMS },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "item-size", required_argument, NULL, OPT_ITEM_SIZE },
	{ "items", required_argument, NULL, OPT_ITEMS },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ NULL, 0, NULL, 0 },
};

struct peers_opts {
	unsigned clients[MAX_LIST], nclients;
	bool sys[NR_SYS]; /* selected */
	bool sys_given;   /* --systems was given */
	double time_s;
	uint32_t item_size, items;
	const char *dir;        /* NULL: the current directory */
	char logpath[PATH_MAX]; /* delog's file in --dir (b->o.path points here) */
};

/* An error text for later (a path in it may be cut short). */
__attribute__((format(printf, 3, 4))) static void set_msg(char *buf, size_t len, const char *fmt,
							  ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ---- options ---- */

static void peers_defaults(void *state)
{
	static const unsigned cl[] = { 1, 4, 16, 64 };
	struct peers_opts *o = state;

	memcpy(o->clients, cl, sizeof(cl));
	o->nclients = sizeof(cl) / sizeof(cl[0]);
	for (unsigned s = 0; s < NR_SYS; s++)
		o->sys[s] = systems[s].built;
	o->time_s = 3;
	o->item_size = 128;
	o->items = 4;
}

static int parse_systems(struct peers_opts *o, const char *arg)
{
	char buf[256], *save, *tok;
	bool any = false;

	if (strlen(arg) >= sizeof(buf))
		return bench_usage_error("--systems: list too long: '%s'", arg);
	strcpy(buf, arg);
	memset(o->sys, 0, sizeof(o->sys));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool found = false;

		for (unsigned s = 0; s < NR_SYS; s++) {
			/* "delog" names the three policies */
			if (strcmp(tok, systems[s].name) &&
			    !(systems[s].kind == K_DELOG && !strcmp(tok, "delog")))
				continue;
			if (!systems[s].built)
				return bench_usage_error("--systems: %s was not built in (install %s "
							 "and rebuild)",
							 tok, systems[s].package);
			o->sys[s] = found = any = true;
		}
		if (!found)
			return bench_usage_error("--systems: '%s' is not one of raw-fdatasync, "
						 "delog, delog-sync, delog-async, delog-single, "
						 "rocksdb, sqlite, lmdb",
						 tok);
	}
	if (!any)
		return bench_usage_error("--systems: empty list '%s'", arg);
	o->sys_given = true;
	return 0;
}

static int peers_option(void *state, int opt, const char *arg)
{
	struct peers_opts *o = state;

	switch (opt) {
	case OPT_CLIENTS:
		return bench_parse_clients(arg, MAX_LIST, MAX_CLIENTS, false, o->clients,
					   &o->nclients);
	case OPT_SYSTEMS:
		return parse_systems(o, arg);
	case OPT_TIME:
		return bench_parse_time(arg, &o->time_s);
	case OPT_ITEM_SIZE:
		return bench_parse_item_size(arg, MAX_ITEM_SIZE, &o->item_size);
	case OPT_ITEMS:
		return bench_parse_items(arg, MAX_ITEMS, &o->items);
	case OPT_DIR:
		if (!*arg)
			return bench_usage_error("--dir: empty");
		o->dir = arg;
		return 0;
	}
	return bench_usage_error("unknown option");
}

static uint64_t payload(const struct peers_opts *o)
{
	return (uint64_t)o->items * o->item_size;
}

/* Bytes the raw baseline writes per commit: the payload rounded up to 4 KiB. */
static uint64_t raw_record(const struct peers_opts *o)
{
	return bench_raw_record(payload(o));
}

static int peers_check(struct bench *b, void *state)
{
	struct peers_opts *o = state;
	unsigned maxc = bench_max_clients(o->clients, o->nclients);
	struct stat st;

	if (b->o.path)
		return bench_usage_error("--workload peers runs in a directory: give it with "
					 "--dir DIR, not as PATH");
	if (bench_is_sim(b))
		return bench_usage_error("--workload peers needs a real disk: --backend sim is "
					 "not supported");
	if (o->sys[S_RAW] && raw_record(o) * maxc > BASE_AREA)
		return bench_usage_error("%u clients x %" PRIu64 " bytes per commit do not fit the "
					 "raw baseline's %llu MiB region",
					 maxc, raw_record(o), BASE_AREA >> 20);
	if (bench_tx_reservation(o->items, o->item_size) > LOG_SIZE / 8)
		return bench_usage_error("a transaction of %u x %u bytes is too large for the "
					 "%llu MiB log",
					 o->items, o->item_size, LOG_SIZE >> 20);
	if (o->dir) {
		if (stat(o->dir, &st) || !S_ISDIR(st.st_mode))
			return bench_usage_error("--dir: '%s' is not a directory", o->dir);
		/* delog's file goes into --dir: bench.c creates it there and removes it. */
		if ((size_t)snprintf(o->logpath, sizeof(o->logpath), "%s/delog-bench-%ld-peers.tmp",
				     o->dir, (long)getpid()) >= sizeof(o->logpath))
			return bench_usage_error("--dir: path too long");
		b->o.path = o->logpath;
	}
	return 0;
}

static void peers_help(FILE *f)
{
	fprintf(f,
		"      --clients LIST     thread counts, one point each (default 1,4,16,64)\n"
		"      --systems LIST     raw-fdatasync, delog (= delog-sync,delog-async,\n"
		"                         delog-single), rocksdb, sqlite, lmdb (default: all built)\n"
		"      --time S           measured seconds per point, fractions allowed, after a\n"
		"                         warm-up of S/10 (at least 20 ms) (default 3)\n"
		"      --item-size N      bytes per record (default 128)\n"
		"      --items N          records per transaction (default 4)\n"
		"      --dir DIR          directory for delog's file and the peers' databases\n"
		"                         (default: the current directory)\n"
		"\nThe same durable commit (a transaction of --items records, returning once it is\n"
		"durable) on delog with each safe policy, RocksDB (sync=true, one DB, a WriteBatch\n"
		"per commit), SQLite (WAL, synchronous=FULL, a connection per thread), LMDB\n"
		"(default syncing) and raw O_DIRECT pwrite + fdatasync, interleaved per client\n"
		"count.  Device flushes per commit are counted from /sys/block/DISK/stat.  Built\n"
		"in here:");
	for (unsigned s = S_ROCKSDB; s < NR_SYS; s++)
		fprintf(f, " %s%s", systems[s].name, systems[s].built ? "" : " (missing)");
	fprintf(f, ".\n");
}

/* ---- one point ---- */

struct prun;
struct point;

struct client {
	struct bench_client bc; /* buf: one record's data (raw: the O_DIRECT block) */
	struct point *pt;
	char msg[256]; /* a peer's own error text */
#ifdef DELOG_HAVE_ROCKSDB
	rocksdb_writebatch_t *wb;
#endif
#ifdef DELOG_HAVE_SQLITE
	sqlite3 *db;
	sqlite3_stmt *ins, *begin, *commit, *rollback;
#endif
};

struct point {
	struct prun *r;
	const struct peers_opts *o;
	enum sys_id sys;
	unsigned nclients;
	delog *log;
	struct bench_raw raw; /* raw: the delog file (O_DIRECT) and the region after the log */
	char dbdir[PATH_MAX]; /* a peer's database directory for this point */
#ifdef DELOG_HAVE_ROCKSDB
	rocksdb_t *rdb;
	rocksdb_options_t *ropts;
	rocksdb_writeoptions_t *rwo;
#endif
#ifdef DELOG_HAVE_SQLITE
	char sqlpath[PATH_MAX + 16];
#endif
#ifdef DELOG_HAVE_LMDB
	MDB_env *env;
	MDB_dbi dbi;
#endif
	struct bench_gate g;
	struct row *row;           /* being measured */
	struct delog_stats s0, s1; /* delog: at both ends of the window */
};

struct row {
	enum sys_id sys;
	unsigned clients;
	uint64_t commits;
	double window_s, commits_per_s, mb_per_s;
	struct lat_stats lat;
	struct bench_diskcount d0, d1; /* the device's counters at both ends of the window */
	bool has_stats;                /* delog: the engine's counts below are set */
	uint64_t checkpoints, engine_flushes, fua_writes, fua_flushes, transactions;
	double cpu_s;   /* process CPU time (user + system) in the window */
	double setup_s; /* opening (and for a peer creating) the store */
};

struct prun {
	struct bench *b;
	const struct peers_opts *o;
	const char *dir; /* --dir or "." */
	struct bench_disk dev;
	double idle_before, idle_after; /* the disk's flushes/s with the bench idle (NaN: n/a) */
	double format_s;
	struct row *rows;
	size_t nrows;
};

/* next_key and be64 serve the peers that are built (none may be: then only delog and
 * the raw baseline run, and -Werror must still build). */
__attribute__((unused)) static uint64_t next_key(struct client *c)
{
	return bench_commit_key(c->bc.id, &c->bc.key);
}

__attribute__((unused)) static void be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static int do_delog(struct client *c)
{
	const struct peers_opts *o = c->pt->o;

	return bench_delog_commit(c->pt->log, o->items, o->item_size, c->bc.id, &c->bc.key,
				  c->bc.buf, true);
}

static int do_raw(struct client *c)
{
	return bench_raw_commit(&c->pt->raw, c->bc.id, &c->bc.next, c->bc.buf);
}

#ifdef DELOG_HAVE_ROCKSDB
static int do_rocksdb(struct client *c)
{
	const struct peers_opts *o = c->pt->o;
	char *err = NULL;

	rocksdb_writebatch_clear(c->wb);
	for (uint32_t k = 0; k < o->items; k++) {
		unsigned char key[8];
		uint64_t kv = next_key(c);

		be64(key, kv);
		c->bc.buf[0] = (unsigned char)kv;
		rocksdb_writebatch_put(c->wb, (const char *)key, sizeof(key),
				       (const char *)c->bc.buf, o->item_size);
	}
	rocksdb_write(c->pt->rdb, c->pt->rwo, c->wb, &err);
	if (err) {
		set_msg(c->msg, sizeof(c->msg), "rocksdb_write: %s", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}
#endif

#ifdef DELOG_HAVE_SQLITE
static int sqlite_fail(struct client *c, const char *what)
{
	set_msg(c->msg, sizeof(c->msg), "%s: %s", what,
		c->db ? sqlite3_errmsg(c->db) : "out of memory");
	return -EIO;
}

/* @stmt (@what) failed inside the transaction: keep the error, reset it, roll back. */
static int sqlite_rollback(struct client *c, sqlite3_stmt *stmt, const char *what)
{
	int err = sqlite_fail(c, what);

	sqlite3_reset(stmt);
	sqlite3_step(c->rollback);
	sqlite3_reset(c->rollback);
	return err;
}

static int do_sqlite(struct client *c)
{
	const struct peers_opts *o = c->pt->o;
	int rc;

	/* Past busy_timeout (a thread starved by the others in a long point), try again:
	 * nothing was done yet, and the wait counts in this commit's latency. */
	while ((rc = sqlite3_step(c->begin)) == SQLITE_BUSY)
		sqlite3_reset(c->begin);
	if (rc != SQLITE_DONE) {
		sqlite3_reset(c->begin);
		return sqlite_fail(c, "BEGIN IMMEDIATE");
	}
	sqlite3_reset(c->begin);
	for (uint32_t k = 0; k < o->items; k++) {
		uint64_t kv = next_key(c);

		c->bc.buf[0] = (unsigned char)kv;
		sqlite3_bind_int64(c->ins, 1, (sqlite3_int64)kv);
		sqlite3_bind_blob(c->ins, 2, c->bc.buf, (int)o->item_size, SQLITE_STATIC);
		if (sqlite3_step(c->ins) != SQLITE_DONE)
			return sqlite_rollback(c, c->ins, "INSERT");
		sqlite3_reset(c->ins);
	}
	if (sqlite3_step(c->commit) != SQLITE_DONE)
		return sqlite_rollback(c, c->commit, "COMMIT");
	sqlite3_reset(c->commit);
	return 0;
}

/* One connection: WAL (set when the database was created), synchronous=FULL. */
static int sqlite_client_open(struct client *c)
{
	static const struct {
		const char *sql;
		size_t off;
	} stmts[] = {
		{ "INSERT INTO t(k, v) VALUES (?, ?)", offsetof(struct client, ins) },
		{ "BEGIN IMMEDIATE", offsetof(struct client, begin) },
		{ "COMMIT", offsetof(struct client, commit) },
		{ "ROLLBACK", offsetof(struct client, rollback) },
	};
	char *emsg = NULL;

	if (sqlite3_open_v2(c->pt->sqlpath, &c->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return sqlite_fail(c, c->pt->sqlpath);
	sqlite3_busy_timeout(c->db, SQLITE_BUSY_MS);
	if (sqlite3_exec(c->db, "PRAGMA synchronous=FULL", NULL, NULL, &emsg) != SQLITE_OK) {
		set_msg(c->msg, sizeof(c->msg), "PRAGMA synchronous=FULL: %s", emsg ? emsg : "?");
		sqlite3_free(emsg);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++)
		if (sqlite3_prepare_v2(c->db, stmts[i].sql, -1,
				       (sqlite3_stmt **)((char *)c + stmts[i].off),
				       NULL) != SQLITE_OK)
			return sqlite_fail(c, stmts[i].sql);
	return 0;
}

static void sqlite_client_close(struct client *c)
{
	sqlite3_finalize(c->ins);
	sqlite3_finalize(c->begin);
	sqlite3_finalize(c->commit);
	sqlite3_finalize(c->rollback);
	sqlite3_close(c->db);
	c->db = NULL;
}
#endif

#ifdef DELOG_HAVE_LMDB
static int do_lmdb(struct client *c)
{
	const struct peers_opts *o = c->pt->o;
	MDB_txn *txn;
	int rc;

	rc = mdb_txn_begin(c->pt->env, NULL, 0, &txn);
	if (rc) {
		set_msg(c->msg, sizeof(c->msg), "mdb_txn_begin: %s", mdb_strerror(rc));
		return -EIO;
	}
	for (uint32_t k = 0; k < o->items; k++) {
		unsigned char key[8];
		uint64_t kv = next_key(c);
		MDB_val mk = { sizeof(key), key }, mv = { o->item_size, c->bc.buf };

		be64(key, kv);
		c->bc.buf[0] = (unsigned char)kv;
		rc = mdb_put(txn, c->pt->dbi, &mk, &mv, 0);
		if (rc) {
			set_msg(c->msg, sizeof(c->msg), "mdb_put: %s", mdb_strerror(rc));
			mdb_txn_abort(txn);
			return -EIO;
		}
	}
	rc = mdb_txn_commit(txn);
	if (rc) {
		set_msg(c->msg, sizeof(c->msg), "mdb_txn_commit: %s", mdb_strerror(rc));
		return -EIO;
	}
	return 0;
}
#endif

static int do_commit(struct client *c)
{
	switch (c->pt->sys) {
	case S_RAW:
		return do_raw(c);
	case S_DELOG_SYNC:
	case S_DELOG_ASYNC:
	case S_DELOG_SINGLE:
		return do_delog(c);
#ifdef DELOG_HAVE_ROCKSDB
	case S_ROCKSDB:
		return do_rocksdb(c);
#endif
#ifdef DELOG_HAVE_SQLITE
	case S_SQLITE:
		return do_sqlite(c);
#endif
#ifdef DELOG_HAVE_LMDB
	case S_LMDB:
		return do_lmdb(c);
#endif
	default:
		return -ENOSYS;
	}
}

/* Per-thread setup before the gate (a SQLite connection, a RocksDB WriteBatch). */
static int client_setup(struct client *c)
{
	(void)c; /* without any peer built */
#ifdef DELOG_HAVE_ROCKSDB
	if (c->pt->sys == S_ROCKSDB && !(c->wb = rocksdb_writebatch_create()))
		return -ENOMEM;
#endif
#ifdef DELOG_HAVE_SQLITE
	if (c->pt->sys == S_SQLITE)
		return sqlite_client_open(c);
#endif
	return 0;
}

static void client_teardown(struct client *c)
{
	(void)c; /* without any peer built */
#ifdef DELOG_HAVE_ROCKSDB
	if (c->wb)
		rocksdb_writebatch_destroy(c->wb);
	c->wb = NULL;
#endif
#ifdef DELOG_HAVE_SQLITE
	if (c->db)
		sqlite_client_close(c);
#endif
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct point *pt = c->pt;

	c->bc.err = client_setup(c);
	if (c->bc.err)
		atomic_store(&pt->g.stop, true);
	if (!bench_gate_wait(&pt->g) || c->bc.err) {
		client_teardown(c);
		return NULL;
	}
	while (!atomic_load_explicit(&pt->g.stop, memory_order_relaxed)) {
		uint64_t t0 = now_ns();
		int err = do_commit(c);

		if (!bench_client_done(&pt->g, &c->bc, t0, err))
			break;
	}
	client_teardown(c);
	return NULL;
}

/* The engine's and the device's counters at the window's ends (bench_gate_measure's
 * edge). */
static void read_counters(void *arg, int end)
{
	struct point *pt = arg;
	const struct bench_disk *dev = &pt->r->dev;

	if (!end) {
		if (pt->log)
			delog_stats(pt->log, &pt->s0);
		pt->row->d0 = bench_disk_read(dev);
	} else {
		pt->row->d1 = bench_disk_read(dev);
		if (pt->log)
			delog_stats(pt->log, &pt->s1);
	}
}

/* Run @pt's clients through warm-up and window and fill @row.  0 or the first error
 * (a peer's own message in @msg). */
static int run_point(struct point *pt, struct row *row, char *msg, size_t msglen)
{
	const struct peers_opts *o = pt->o;
	size_t buflen = pt->sys == S_RAW ? pt->raw.rec : o->item_size;
	struct bench_samples all = { 0 };
	struct bench_span sp = { 0 };
	struct bench_client *failed;
	struct client *cl;
	int err, e;

	cl = calloc(pt->nclients, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	bench_gate_init(&pt->g);
	pt->row = row;
	pt->s0 = pt->s1 = (struct delog_stats){ .size = sizeof(pt->s0) };
	for (unsigned i = 0; i < pt->nclients; i++)
		cl[i].pt = pt;
	err = bench_clients_start(&pt->g, cl, sizeof(*cl), pt->nclients, buflen, client_main, msg,
				  msglen);
	if (!err && !atomic_load(&pt->g.stop))
		bench_gate_measure(&pt->g, pt->r->b, pt->log, o->time_s, read_counters, pt, &sp);
	e = bench_clients_join(&pt->g, cl, sizeof(*cl), pt->nclients, &row->commits, &all, &failed);
	if (e && !err) {
		err = e;
		if (((struct client *)failed)->msg[0])
			set_msg(msg, msglen, "%s", ((struct client *)failed)->msg);
	}
	if (!err && bench_interrupted(pt->r->b))
		err = -EINTR;
	free(cl);
	if (!err && all.oom)
		err = -ENOMEM;
	if (!err) {
		row->clients = pt->nclients;
		bench_span_rates(&sp, row->commits, payload(o), &row->window_s, &row->commits_per_s,
				 &row->mb_per_s, &row->cpu_s);
		bench_samples_stats(&all, &row->lat);
		if (pt->log) {
			row->has_stats = true;
			row->checkpoints = pt->s1.checkpoints - pt->s0.checkpoints;
			row->engine_flushes = pt->s1.device_flushes - pt->s0.device_flushes;
			row->fua_writes = pt->s1.fua_writes - pt->s0.fua_writes;
			row->fua_flushes = pt->s1.fua_flushes - pt->s0.fua_flushes;
			row->transactions = pt->s1.transactions - pt->s0.transactions;
		}
	}
	bench_samples_free(&all);
	return err;
}

/* ---- the systems' stores ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT)
		fprintf(stderr, "delog bench: %s: cannot remove: %s\n", path, strerror(errno));
	return 0;
}

/* Remove a peer's database directory and everything in it. */
static void remove_tree(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Create the point's store (a peer: a new database in a new directory).  0 or an error
 * with @msg set. */
static int store_open(struct point *pt, char *msg, size_t len)
{
	struct prun *r = pt->r;
	const char *name = systems[pt->sys].name;

	if (systems[pt->sys].kind == K_DELOG) {
		struct delog_options lo =
			bench_log_opts(r->b, (enum delog_flush_policy)systems[pt->sys].policy, 0, 0,
				       0, LOG_SIZE);
		int err = delog_open(r->b->t.path, &lo, &pt->log);

		if (err)
			set_msg(msg, len, "cannot open the log: %s", tool_strerror(err));
		return err;
	}
	if (pt->sys == S_RAW) {
		pt->raw.fd = open(r->b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC);
		if (pt->raw.fd < 0) {
			set_msg(msg, len, "cannot open %s with O_DIRECT: %s", r->b->t.path,
				strerror(errno));
			return -errno;
		}
		/* share >= rec: peers_check */
		bench_raw_layout(&pt->raw, DELOG_SB_BYTES + LOG_SIZE, BASE_AREA, raw_record(pt->o),
				 pt->nclients);
		return 0;
	}
	if ((size_t)snprintf(pt->dbdir, sizeof(pt->dbdir), "%s/delog-bench-%ld-%s-%u.db", r->dir,
			     (long)getpid(), name, pt->nclients) >= sizeof(pt->dbdir)) {
		pt->dbdir[0] = '\0';
		set_msg(msg, len, "database path too long");
		return -ENAMETOOLONG;
	}
	if (mkdir(pt->dbdir, 0700)) {
		int err = -errno;

		set_msg(msg, len, "cannot create %s: %s", pt->dbdir, strerror(errno));
		pt->dbdir[0] = '\0';
		return err;
	}
#ifdef DELOG_HAVE_ROCKSDB
	if (pt->sys == S_ROCKSDB) {
		char *err = NULL;

		pt->ropts = rocksdb_options_create();
		rocksdb_options_set_create_if_missing(pt->ropts, 1);
		pt->rdb = rocksdb_open(pt->ropts, pt->dbdir, &err);
		if (err) {
			set_msg(msg, len, "rocksdb_open %s: %s", pt->dbdir, err);
			rocksdb_free(err);
			pt->rdb = NULL;
			return -EIO;
		}
		pt->rwo = rocksdb_writeoptions_create();
		rocksdb_writeoptions_set_sync(pt->rwo, 1);
		return 0;
	}
#endif
#ifdef DELOG_HAVE_SQLITE
	if (pt->sys == S_SQLITE) {
		sqlite3 *db = NULL;
		char *emsg = NULL;
		int rc;

		snprintf(pt->sqlpath, sizeof(pt->sqlpath), "%s/db.sqlite", pt->dbdir);
		rc = sqlite3_open_v2(pt->sqlpath, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
				     NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db,
					  "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
					  "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)",
					  NULL, NULL, &emsg);
		if (rc != SQLITE_OK)
			set_msg(msg, len, "%s: %s", pt->sqlpath,
				emsg ? emsg :
				db   ? sqlite3_errmsg(db) :
				       "out of memory");
		sqlite3_free(emsg);
		sqlite3_close(db);
		return rc == SQLITE_OK ? 0 : -EIO;
	}
#endif
#ifdef DELOG_HAVE_LMDB
	if (pt->sys == S_LMDB) {
		MDB_txn *txn = NULL;
		int rc = mdb_env_create(&pt->env);

		if (!rc)
			rc = mdb_env_set_mapsize(pt->env, LMDB_MAP_SIZE);
		if (!rc)
			rc = mdb_env_open(pt->env, pt->dbdir, 0, 0600);
		if (!rc)
			rc = mdb_txn_begin(pt->env, NULL, 0, &txn);
		if (!rc) {
			rc = mdb_dbi_open(txn, NULL, 0, &pt->dbi);
			rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
		}
		if (rc)
			set_msg(msg, len, "%s: %s", pt->dbdir, mdb_strerror(rc));
		return rc ? -EIO : 0;
	}
#endif
	set_msg(msg, len, "%s is not built in", name);
	return -ENOSYS;
}

/* Close the point's store and remove a peer's database.  0 or an error with @msg. */
static int store_close(struct point *pt, char *msg, size_t len)
{
	int err = 0;

	if (pt->log) {
		err = delog_close(pt->log);
		if (err)
			set_msg(msg, len, "closing the log: %s", tool_strerror(err));
		pt->log = NULL;
	}
	if (pt->raw.fd >= 0)
		close(pt->raw.fd);
	pt->raw.fd = -1;
#ifdef DELOG_HAVE_ROCKSDB
	if (pt->rdb)
		rocksdb_close(pt->rdb);
	if (pt->rwo)
		rocksdb_writeoptions_destroy(pt->rwo);
	if (pt->ropts)
		rocksdb_options_destroy(pt->ropts);
	pt->rdb = NULL;
	pt->rwo = NULL;
	pt->ropts = NULL;
#endif
#ifdef DELOG_HAVE_LMDB
	if (pt->env)
		mdb_env_close(pt->env);
	pt->env = NULL;
#endif
	remove_tree(pt->dbdir);
	pt->dbdir[0] = '\0';
	return err;
}

static int sys_point(struct prun *r, enum sys_id s, unsigned clients, struct row *row)
{
	struct point pt = { .r = r, .o = r->o, .sys = s, .nclients = clients, .raw.fd = -1 };
	char msg[512] = "", msg2[256] = "";
	uint64_t t0 = now_ns();
	int err, e2;

	row->sys = s;
	err = store_open(&pt, msg, sizeof(msg));
	row->setup_s = (double)(now_ns() - t0) / 1e9;
	if (!err)
		err = run_point(&pt, row, msg, sizeof(msg));
	e2 = store_close(&pt, msg2, sizeof(msg2));
	if (err && err != -EINTR)
		bench_fail(r->b, err, NULL, "%s at %u clients: %s", systems[s].name, clients,
			   msg[0] ? msg : tool_strerror(err));
	else if (!err && e2)
		bench_fail(r->b, err = e2, NULL, "%s at %u clients: %s", systems[s].name, clients,
			   msg2);
	return err;
}

/* The delog file in the directory: allocate, pre-write the raw region, format once. */
static int prepare(struct prun *r)
{
	struct delog_options lo = bench_log_opts(r->b, DELOG_FLUSH_SYNC, DELOG_OPEN_FORMAT, 0, 0,
						 LOG_SIZE);
	int err;

	err = bench_log_prepare(r->b, DELOG_SB_BYTES + LOG_SIZE + BASE_AREA, NULL,
				DELOG_SB_BYTES + LOG_SIZE, BASE_AREA, &lo, &r->format_s);
	if (err)
		return err;
	bench_disk_idle(&r->dev, false, 1000000000ull);
	r->idle_before = r->dev.idle_before;
	return 0;
}

/* ---- the report ---- */

static bool row_dev_ok(const struct row *w)
{
	return w->d0.ok && w->d1.ok && w->commits;
}

static double dev_flushes_per_commit(const struct row *w)
{
	return row_dev_ok(w) ? (double)(w->d1.flushes - w->d0.flushes) / (double)w->commits : NAN;
}

static double dev_bytes_per_commit(const struct row *w)
{
	return row_dev_ok(w) ? (double)(w->d1.sectors_written - w->d0.sectors_written) * 512 /
				       (double)w->commits :
			       NAN;
}

/* The best row of @kind at @clients (the raw baseline: K_RAW), or NULL. */
static const struct row *best_of(const struct prun *r, enum kind kind, unsigned clients)
{
	const struct row *best = NULL;

	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];

		if (w->clients == clients && systems[w->sys].kind == kind &&
		    (!best || w->commits_per_s > best->commits_per_s))
			best = w;
	}
	return best;
}

static double ratio_at(const struct prun *r, unsigned clients, const struct row **d,
		       const struct row **p)
{
	*d = best_of(r, K_DELOG, clients);
	*p = best_of(r, K_PEER, clients);
	return *d && *p && (*p)->commits_per_s > 0 ? (*d)->commits_per_s / (*p)->commits_per_s :
						     NAN;
}

static bool has_clients(const struct peers_opts *o, unsigned n)
{
	for (unsigned i = 0; i < o->nclients; i++)
		if (o->clients[i] == n)
			return true;
	return false;
}

static const char *missing_list(char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	for (unsigned s = 0; s < NR_SYS && k < len; s++)
		if (!systems[s].built)
			k += (size_t)snprintf(buf + k, len - k, "%s%s (%s not found at build time)",
					      k ? ", " : "", systems[s].name, systems[s].package);
	return buf;
}

#ifdef DELOG_HAVE_LMDB
/* "0.9.24" (mdb_version's string also carries a date). */
static const char *lmdb_version(void)
{
	static char v[32];
	int ma, mi, pa;

	mdb_version(&ma, &mi, &pa);
	snprintf(v, sizeof(v), "%d.%d.%d", ma, mi, pa);
	return v;
}
#endif

static void print_human(struct prun *r)
{
	const struct peers_opts *o = r->o;
	struct bench *b = r->b;
	static const struct {
		unsigned clients;
		double target;
	} tg[] = {
		{ 1, T_RATIO_1 },
		{ 64, T_RATIO_64 },
	};
	char miss[256], fpc[32], bpc[32], efc[32];

	bench_out(b, "delog bench --workload peers, in %s\n", r->dir);
	bench_out(b,
		  "  commit      %u x %u B records (%" PRIu64 " B payload), durable when the "
		  "commit returns; %.2f s per point after a %.2f s warm-up\n",
		  o->items, o->item_size, payload(o), o->time_s,
		  fmax(o->time_s / 10, (double)BENCH_MIN_WARMUP_NS / 1e9));
	if (o->sys[S_DELOG_SYNC] || o->sys[S_DELOG_ASYNC] || o->sys[S_DELOG_SINGLE])
		bench_out(b,
			  "  delog       %s, %llu MiB log (formatted in %.2f s), backend %s, "
			  "%u x %u KiB buffers (the engine's defaults); tx_begin + tx_log x %u + "
			  "tx_commit_force\n",
			  b->t.path, LOG_SIZE >> 20, r->format_s,
			  b->o.backend ? b->o.backend : "auto", DELOG_LOGBUFS_MAX,
			  DELOG_LOGBSIZE_MAX >> 10, o->items);
#ifdef DELOG_HAVE_ROCKSDB
	if (o->sys[S_ROCKSDB])
		bench_out(b,
			  "  rocksdb     %s: one DB, a WriteBatch of %u puts per commit, "
			  "WriteOptions sync=true\n",
			  DELOG_ROCKSDB_VERSION, o->items);
#endif
#ifdef DELOG_HAVE_SQLITE
	if (o->sys[S_SQLITE])
		bench_out(b,
			  "  sqlite      %s: journal_mode=WAL, synchronous=FULL, a connection per "
			  "thread, BEGIN IMMEDIATE + %u INSERT + COMMIT\n",
			  sqlite3_libversion(), o->items);
#endif
#ifdef DELOG_HAVE_LMDB
	if (o->sys[S_LMDB])
		bench_out(b,
			  "  lmdb        %s: one env, default flags (synced commits), a write "
			  "txn of %u puts per commit\n",
			  lmdb_version(), o->items);
#endif
	if (o->sys[S_RAW])
		bench_out(b,
			  "  raw         per thread: O_DIRECT pwrite of %" PRIu64
			  " B + fdatasync\n",
			  raw_record(o));
	if (missing_list(miss, sizeof(miss))[0])
		bench_out(b, "  missing     %s\n", miss);
	if (r->dev.ok)
		bench_out(b,
			  "  flushes     counted on the disk %s (%s, field 16); with the bench "
			  "idle: %.1f/s before the run, %.1f/s after it\n",
			  r->dev.name, r->dev.path, r->idle_before, r->idle_after);
	else
		bench_out(b, "  flushes     n/a: no block device statistics for %s\n", r->dir);
	if (fmax(r->idle_before, r->idle_after) > IDLE_WARN)
		bench_out(b,
			  "  WARNING     other processes flush this disk (%.0f/s while the bench was "
			  "idle): their flushes are in the counts, and their I/O in the rates\n",
			  fmax(r->idle_before, r->idle_after));
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];

		if (!i || w->clients != r->rows[i - 1].clients)
			bench_out(b,
				  "\n  %u thread%s\n  %-14s %10s %7s %9s %9s %9s %12s %10s %9s "
				  "%7s\n",
				  w->clients, w->clients == 1 ? "" : "s", "system", "commits/s",
				  "MB/s", "p50 us", "p99 us", "max us", "flush/commit", "KB/commit",
				  "eng fl/c", "cpu us");
		if (row_dev_ok(w)) {
			snprintf(fpc, sizeof(fpc), "%.3f", dev_flushes_per_commit(w));
			snprintf(bpc, sizeof(bpc), "%.1f", dev_bytes_per_commit(w) / 1024);
		} else {
			snprintf(fpc, sizeof(fpc), "n/a");
			snprintf(bpc, sizeof(bpc), "n/a");
		}
		if (w->has_stats && w->commits)
			snprintf(efc, sizeof(efc), "%.3f",
				 (double)w->engine_flushes / (double)w->commits);
		else
			snprintf(efc, sizeof(efc), "-");
		bench_out(b, "  %-14s %10.0f %7.2f %9.1f %9.1f %9.1f %12s %10s %9s %7.1f\n",
			  systems[w->sys].name, w->commits_per_s, w->mb_per_s, w->lat.median_us,
			  w->lat.p99_us, w->lat.max_us, fpc, bpc, efc,
			  w->commits ? w->cpu_s * 1e6 / (double)w->commits : NAN);
		if (i + 1 == r->nrows || r->rows[i + 1].clients != w->clients) {
			const struct row *d, *p, *raw = best_of(r, K_RAW, w->clients);
			double q = ratio_at(r, w->clients, &d, &p);

			if (d && p)
				bench_out(b, "  best delog (%s) / best peer (%s): %.2fx",
					  systems[d->sys].name, systems[p->sys].name, q);
			if (d && raw)
				bench_out(b, "%s best delog / raw-fdatasync: %.2fx",
					  d && p ? ";" : " ",
					  d->commits_per_s / raw->commits_per_s);
			if ((d && p) || (d && raw))
				bench_out(b, "\n");
		}
	}
	bench_out(b,
		  "\n  MB/s: logged payload (10^6 B/s); flush/commit and KB/commit: the disk's "
		  "flush requests and bytes written per commit in the window (all processes); eng "
		  "fl/c: delog's own flushes + FUA writes per commit; cpu us: process CPU per "
		  "commit\n");
	bench_out(b, "\ntargets (reported, not asserted)\n");
	for (size_t i = 0; i < sizeof(tg) / sizeof(tg[0]); i++) {
		const struct row *d, *p;
		double q;

		if (!has_clients(o, tg[i].clients))
			continue;
		q = ratio_at(r, tg[i].clients, &d, &p);
		if (isnan(q)) {
			bench_out(b,
				  "  %u thread%s: best delog / best peer: n/a (needs a delog and a "
				  "peer row)\n",
				  tg[i].clients, tg[i].clients == 1 ? "" : "s");
			continue;
		}
		bench_out(b,
			  "  %u thread%s: best delog (%s) / best peer (%s) = %.2f, target >= %.1f: "
			  "%s",
			  tg[i].clients, tg[i].clients == 1 ? "" : "s", systems[d->sys].name,
			  systems[p->sys].name, q, tg[i].target,
			  q >= tg[i].target ? "met" : "MISSED");
		if (q < tg[i].target)
			bench_out(b, " by %.0f%%", (1 - q / tg[i].target) * 100);
		bench_out(b, "\n");
	}
	bench_out(b, "\nbench took %.1f s\n", (double)(now_ns() - b->t0) / 1e9);
}

static void print_json(struct prun *r)
{
	const struct peers_opts *o = r->o;
	static const struct {
		unsigned clients;
		double target;
		const char *key;
	} tg[] = {
		{ 1, T_RATIO_1, "ratio_1_thread" },
		{ 64, T_RATIO_64, "ratio_64_threads" },
	};
	struct json j;

	bench_json_begin(r->b, &j);
	json_str(&j, "dir", r->dir);
	json_obj_begin(&j, "params");
	bench_json_counts(&j, "clients", o->clients, o->nclients);
	json_arr_begin(&j, "systems");
	for (unsigned s = 0; s < NR_SYS; s++)
		if (o->sys[s])
			json_str(&j, NULL, systems[s].name);
	json_arr_end(&j);
	json_dbl(&j, "time_s", o->time_s);
	json_u64(&j, "item_size", o->item_size);
	json_u64(&j, "items", o->items);
	json_u64(&j, "payload_bytes", payload(o));
	json_u64(&j, "log_size", LOG_SIZE);
	json_u64(&j, "raw_write_bytes", raw_record(o));
	json_obj_end(&j);
	json_arr_begin(&j, "missing");
	for (unsigned s = 0; s < NR_SYS; s++)
		if (!systems[s].built)
			json_str(&j, NULL, systems[s].name);
	json_arr_end(&j);
	json_obj_begin(&j, "versions");
#ifdef DELOG_HAVE_ROCKSDB
	json_str(&j, "rocksdb", DELOG_ROCKSDB_VERSION);
#endif
#ifdef DELOG_HAVE_SQLITE
	json_str(&j, "sqlite", sqlite3_libversion());
#endif
#ifdef DELOG_HAVE_LMDB
	json_str(&j, "lmdb", lmdb_version());
#endif
	json_obj_end(&j);
	json_obj_begin(&j, "device");
	json_str(&j, "name", r->dev.ok ? r->dev.name : NULL);
	json_str(&j, "stat", r->dev.ok ? r->dev.path : NULL);
	json_dbl(&j, "idle_flushes_per_s_before", r->idle_before);
	json_dbl(&j, "idle_flushes_per_s_after", r->idle_after);
	json_obj_end(&j);
	json_dbl(&j, "format_s", r->format_s);
	json_arr_begin(&j, "rows");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *w = &r->rows[i];
		const struct sysdesc *sd = &systems[w->sys];
		bool dok = row_dev_ok(w);

		json_obj_begin(&j, NULL);
		json_str(&j, "workload", "peers");
		json_str(&j, "system", sd->name);
		json_str(&j, "kind",
			 sd->kind == K_DELOG ? "delog" :
			 sd->kind == K_PEER  ? "peer" :
					       "baseline");
		json_str(&j, "policy",
			 sd->kind == K_DELOG ?
				 delog_flush_policy_name((enum delog_flush_policy)sd->policy) :
				 NULL);
		json_u64(&j, "clients", w->clients);
		json_u64(&j, "commits", w->commits);
		json_dbl(&j, "window_s", w->window_s);
		json_dbl(&j, "commits_per_s", w->commits_per_s);
		json_dbl(&j, "mb_per_s", w->mb_per_s);
		bench_json_lat(&j, &w->lat);
		if (dok) {
			json_u64(&j, "device_flushes", w->d1.flushes - w->d0.flushes);
			json_u64(&j, "device_write_bytes",
				 (w->d1.sectors_written - w->d0.sectors_written) * 512);
		} else {
			json_null(&j, "device_flushes");
			json_null(&j, "device_write_bytes");
		}
		json_dbl(&j, "device_flushes_per_commit", dev_flushes_per_commit(w));
		json_dbl(&j, "device_write_bytes_per_commit", dev_bytes_per_commit(w));
		if (w->has_stats) {
			json_u64(&j, "engine_checkpoints", w->checkpoints);
			json_u64(&j, "engine_flushes", w->engine_flushes);
			json_u64(&j, "engine_fua_writes", w->fua_writes);
			json_u64(&j, "engine_fua_flushes", w->fua_flushes);
			json_u64(&j, "engine_transactions", w->transactions);
		} else {
			json_null(&j, "engine_checkpoints");
			json_null(&j, "engine_flushes");
			json_null(&j, "engine_fua_writes");
			json_null(&j, "engine_fua_flushes");
			json_null(&j, "engine_transactions");
		}
		json_dbl(&j, "cpu_s", w->cpu_s);
		json_dbl(&j, "cpu_us_per_commit",
			 w->commits ? w->cpu_s * 1e6 / (double)w->commits : NAN);
		json_dbl(&j, "setup_s", w->setup_s);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_arr_begin(&j, "ratios");
	for (unsigned i = 0; i < o->nclients; i++) {
		const struct row *d, *p, *raw = best_of(r, K_RAW, o->clients[i]);
		double q = ratio_at(r, o->clients[i], &d, &p);

		json_obj_begin(&j, NULL);
		json_u64(&j, "clients", o->clients[i]);
		json_str(&j, "best_delog", d ? systems[d->sys].name : NULL);
		json_dbl(&j, "best_delog_commits_per_s", d ? d->commits_per_s : NAN);
		json_str(&j, "best_peer", p ? systems[p->sys].name : NULL);
		json_dbl(&j, "best_peer_commits_per_s", p ? p->commits_per_s : NAN);
		json_dbl(&j, "delog_vs_best_peer", q);
		json_dbl(&j, "delog_vs_raw_fdatasync",
			 d && raw ? d->commits_per_s / raw->commits_per_s : NAN);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_begin(&j, "targets");
	for (size_t i = 0; i < sizeof(tg) / sizeof(tg[0]); i++) {
		const struct row *d, *p;
		double q;

		if (!has_clients(o, tg[i].clients))
			continue;
		q = ratio_at(r, tg[i].clients, &d, &p);
		json_obj_begin(&j, tg[i].key);
		json_dbl(&j, "value", q);
		json_str(&j, "op", ">=");
		json_dbl(&j, "target", tg[i].target);
		if (isnan(q))
			json_null(&j, "met");
		else
			json_bool(&j, "met", q >= tg[i].target);
		json_obj_end(&j);
	}
	json_obj_end(&j);
	bench_json_end(r->b, &j);
}

static int peers_run(struct bench *b, void *state)
{
	const struct peers_opts *o = state;
	struct prun r = { .b = b, .o = o, .dir = o->dir ? o->dir : "." };
	char miss[256], absdir[PATH_MAX];
	int err = 0;

	if (realpath(r.dir, absdir))
		r.dir = absdir;

	r.rows = calloc((size_t)o->nclients * NR_SYS, sizeof(*r.rows));
	if (!r.rows) {
		bench_fail(b, -ENOMEM, NULL, "out of memory");
		return TOOL_EXIT_FAIL;
	}
	if (!o->sys_given && missing_list(miss, sizeof(miss))[0])
		fprintf(stderr, "delog bench: peers: running without %s\n", miss);
	bench_disk_find(r.dir, &r.dev);
	if (prepare(&r))
		goto fail;
	for (unsigned c = 0; c < o->nclients && !err; c++) {
		for (unsigned s = 0; s < NR_SYS && !err; s++) {
			if (!o->sys[s])
				continue;
			bench_point(b, "%u threads: %s", o->clients[c], systems[s].name);
			if (!(err = sys_point(&r, (enum sys_id)s, o->clients[c], &r.rows[r.nrows])))
				r.nrows++;
			bench_point_done(b, err);
		}
		if (!err && bench_interrupted(b))
			err = -EINTR;
	}
	bench_progress_clear(b);
	if (err)
		goto fail;
	bench_disk_idle(&r.dev, true, 1000000000ull);
	r.idle_after = r.dev.idle_after;
	if (b->o.json)
		print_json(&r);
	else
		print_human(&r);
	free(r.rows);
	return TOOL_EXIT_OK;
fail:
	free(r.rows);
	return TOOL_EXIT_FAIL;
}

const struct bench_workload bench_peers = {
	.name = "peers",
	.summary = "the durable commit on delog, RocksDB, SQLite, LMDB and raw fdatasync, "
		   "side by side (also --peers)",
	.opts = peers_options,
	.state_size = sizeof(struct peers_opts),
	.defaults = peers_defaults,
	.option = peers_option,
	.check = peers_check,
	.help = peers_help,
	.run = peers_run,
};
