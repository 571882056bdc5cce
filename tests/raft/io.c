/*
 * io.c - the contract of libdelog-raft's struct raft_io (raft.io, Criterion).
 *
 * Each test drives the io's methods as C-Raft would, on a real libuv loop and a real log
 * file in a scratch directory, and checks what a fresh io (a restart) loads:
 *   io/load_empty          a new directory loads as empty
 *   io/bootstrap           the first configuration entry; a second bootstrap is refused
 *   io/term_vote           set_term / set_vote survive a restart; a new term clears the vote
 *   io/append_reload       appended entries come back whole, in order
 *   io/truncate_append     truncate then append: the new suffix replaces the old one
 *   io/snapshot_trailing   a snapshot keeps `trailing` entries and lets delog release
 *                          the rest (the log's used space drops)
 *   io/long_run            a small log never fills while snapshots are taken, and does
 *                          fill (RAFT_NOSPACE) without them
 *   io/install_over_waiting_appends  appends waiting for space (RS1) when a snapshot
 *                          from the leader is installed log only the entries after it
 *   io/durable_appends_wait_for_a_due_snapshot  (RS5) an append made durable while a
 *                          snapshot is put is reported after the put's callback when a
 *                          snapshot is due, at once when none is
 *   io/truncated_entries_make_a_snapshot_due  (RS3) entries a truncation removed count
 *                          towards the threshold until a snapshot's release frees them
 *   io/snapshot_due_past_what_the_last_one_kept  (RS3) small entries' checkpoints make a
 *                          snapshot due, and after one that freed nothing the next is
 *                          due only an eighth of the log later
 *   io/install_snapshot    trailing 0 (a snapshot from the leader) empties the log;
 *                          restart from the snapshot, then append after it
 *   io/snapshot_get        snapshot_get returns the newest snapshot's data and config
 *   io/corrupt_log         a damaged log is refused at load with RAFT_CORRUPT
 *   io/corrupt_snapshot    a damaged snapshot file is refused at load with RAFT_CORRUPT
 *   io/bad_options         flush policy none and a wrong options size are refused
 *   io/snapshot_past_end   a snapshot with trailing entries past the log's last entry
 *                          (on an empty log, after one entry) loads, without the entries
 *                          behind it, and the log continues after it, as C-Raft's io
 *   io/idle_loop_ends      an io with nothing queued (after load, and after its appends
 *                          completed) keeps no loop alive: uv_run(UV_RUN_DEFAULT) returns
 *   io/no_thread_of_its_own  an open io runs the threads a plain delog log does, no more
 *                          (appends ask with delog_force_nowait: no forcer thread)
 */
#include "helpers.h"

#include <dirent.h>
#include <fcntl.h>

static struct delog_raft_options small_log(void)
{
	struct delog_raft_options o = { .size = sizeof(o), .log_size = 4u << 20 };

	return o;
}

static void conf2(struct raft_configuration *c)
{
	raft_configuration_init(c);
	cr_assert_eq(raft_configuration_add(c, 1, "127.0.0.1:9001", RAFT_VOTER), 0);
	cr_assert_eq(raft_configuration_add(c, 2, "127.0.0.1:9002", RAFT_VOTER), 0);
}

Test(io, load_empty)
{
	char *dir = th_mkdir();
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_expect_eq(l.term, 0);
	cr_expect_eq(l.vote, 0);
	cr_expect_null(l.snap);
	cr_expect_eq(l.start, 1);
	cr_expect_eq(l.n, 0);
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

Test(io, bootstrap)
{
	char *dir = th_mkdir();
	struct raft_configuration c;
	struct raft_buffer enc;
	struct th_node n;
	struct th_loaded l;

	conf2(&c);
	cr_assert_eq(raft_configuration_encode(&c, &enc), 0);
	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.bootstrap(&n.io, &c), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.bootstrap(&n.io, &c), RAFT_CANTBOOTSTRAP);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.bootstrap(&n.io, &c), RAFT_CANTBOOTSTRAP, "bootstrap after restart");
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_expect_eq(l.term, 1);
	cr_expect_eq(l.vote, 0);
	cr_expect_null(l.snap);
	cr_assert_eq(l.start, 1);
	cr_assert_eq(l.n, 1);
	cr_expect_eq(l.ents[0].term, 1);
	cr_expect_eq(l.ents[0].type, RAFT_CHANGE);
	cr_assert_eq(l.ents[0].buf.len, enc.len);
	/* C-Raft pads its encoding to 8 bytes and leaves the padding uninitialised */
	cr_expect_eq(memcmp(l.ents[0].buf.base, enc.base, enc.len - 7), 0);
	th_loaded_free(&l);
	th_close(&n);
	raft_free(enc.base);
	raft_configuration_close(&c);
	th_rmdir(dir);
}

Test(io, term_vote)
{
	char *dir = th_mkdir();
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.set_term(&n.io, 5), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.set_vote(&n.io, 2), 0, "%s", n.io.errmsg);
	/* durable when it returns: nothing is left in the CIL, and a checkpoint was forced */
	{
		struct delog_stats st = { .size = sizeof(st) };

		cr_assert_eq(delog_raft_stats(&n.io, &st), 0);
		cr_expect_eq(st.cil_bytes, 0, "set_vote returned with records not yet written");
		cr_expect_geq(st.forces, 2);
		cr_expect_geq(st.durable_seq, 2);
	}
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_expect_eq(l.term, 5);
	cr_expect_eq(l.vote, 2);
	th_loaded_free(&l);
	cr_assert_eq(n.io.set_term(&n.io, 6), 0, "%s", n.io.errmsg);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_expect_eq(l.term, 6);
	cr_expect_eq(l.vote, 0, "a new term must clear the vote");
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

Test(io, append_reload)
{
	char *dir = th_mkdir();
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 1, 10, 0, 100), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_append(&n, 11, 11, 0, 0), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_append(&n, 12, 40, 0, 5000), 0, "%s", n.io.errmsg);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_eq(l.start, 1);
	cr_assert_eq(l.n, 40);
	for (size_t i = 0; i < l.n; i++) {
		raft_index idx = i + 1;
		size_t len = idx <= 10 ? 100 : idx == 11 ? 0 : 5000;

		cr_expect(th_is(&l.ents[i], idx, 0, len), "entry %llu differs",
			  (unsigned long long)idx);
	}
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

Test(io, truncate_append)
{
	char *dir = th_mkdir();
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 1, 10, 0, 64), 0);
	cr_assert_eq(n.io.truncate(&n.io, 6), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_append(&n, 6, 8, 1, 64), 0);
	/* truncate then restart without appending: the truncation must still be there,
	 * as the append above made everything before it durable and close forces */
	cr_assert_eq(n.io.truncate(&n.io, 8), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.truncate(&n.io, 0), RAFT_INVALID);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_eq(l.start, 1);
	cr_assert_eq(l.n, 7, "got %zu entries", l.n);
	for (size_t i = 0; i < 5; i++)
		cr_expect(th_is(&l.ents[i], i + 1, 0, 64), "entry %zu", i + 1);
	for (size_t i = 5; i < 7; i++)
		cr_expect(th_is(&l.ents[i], i + 1, 1, 64), "entry %zu not the new one", i + 1);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 8, 9, 2, 64), 0);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_eq(l.n, 9);
	cr_expect(th_is(&l.ents[7], 8, 2, 64));
	cr_expect(th_is(&l.ents[8], 9, 2, 64));
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

/* ---- snapshots ---- */

struct put {
	struct raft_io_snapshot_put req;
	struct raft_snapshot snap;
	struct raft_buffer buf[2];
	volatile bool done;
	int status;
	const volatile bool *watch; /* a flag to read when the callback runs (RS5) */
	bool watched;
};

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
	struct put *p = req->data;

	p->status = status;
	p->done = true;
	p->watched = p->watch && *p->watch;
}

/* Ask for a snapshot at @index (term @term) whose data is two buffers of @len bytes made
 * from @index; put_end frees what it holds once the callback ran.  Returns the call's
 * status. */
static int put_begin(struct th_node *n, struct put *p, raft_index index, raft_term term,
		     unsigned trailing, size_t len)
{
	int rv;

	memset(p, 0, sizeof(*p));
	p->req.data = p;
	p->snap.index = index;
	p->snap.term = term;
	conf2(&p->snap.configuration);
	p->snap.configuration_index = 1;
	for (int b = 0; b < 2; b++) {
		p->buf[b].base = malloc(len);
		p->buf[b].len = len;
		cr_assert_not_null(p->buf[b].base);
		memset(p->buf[b].base, (int)((index + (raft_index)b) & 0xff), len);
	}
	p->snap.bufs = p->buf;
	p->snap.n_bufs = 2;
	rv = n->io.snapshot_put(&n->io, trailing, &p->req, &p->snap, put_cb);
	if (rv == 0)
		cr_assert(!p->done, "snapshot_put callback ran inside the call");
	return rv;
}

static void put_end(struct put *p)
{
	free(p->buf[0].base);
	free(p->buf[1].base);
	raft_configuration_close(&p->snap.configuration);
}

/* put_begin, then wait for the callback; returns its status. */
static int put_snapshot(struct th_node *n, raft_index index, raft_term term, unsigned trailing,
			size_t len)
{
	struct put p;
	int rv = put_begin(n, &p, index, term, trailing, len);

	if (rv == 0) {
		cr_assert(th_run_until(&n->loop, &p.done, 10000), "snapshot_put never completed");
		rv = p.status;
	}
	put_end(&p);
	return rv;
}

static void check_snap_data(const struct raft_snapshot *s, raft_index index, size_t len)
{
	const unsigned char *p = s->bufs[0].base;

	cr_assert_eq(s->n_bufs, 1);
	cr_assert_eq(s->bufs[0].len, 2 * len);
	for (size_t i = 0; i < 2 * len; i++)
		cr_assert_eq(p[i], (unsigned char)((index + (i >= len)) & 0xff), "byte %zu", i);
	cr_assert_eq(s->configuration.n, 2);
	cr_expect_eq(s->configuration.servers[1].id, 2);
	cr_expect_str_eq(s->configuration.servers[1].address, "127.0.0.1:9002");
	cr_expect_eq(s->configuration_index, 1);
}

/* The log's tail (the oldest position still needed), in bytes from the log start: a
 * release moves it.  An LSN is cycle << 32 | sector (docs/FORMAT.md), 4 KiB sectors;
 * these tests never wrap the log. */
static uint64_t log_tail(struct th_node *n)
{
	struct delog_stats st = { .size = sizeof(st) };

	cr_assert_eq(delog_raft_stats(&n->io, &st), 0);
	return (st.tail_lsn & 0xffffffffu) * 4096;
}

/* Every entry @l loaded is the one of generation @gen, 4000 bytes, at its index. */
static void check_entries(const struct th_loaded *l, uint64_t gen)
{
	for (size_t k = 0; k < l->n; k++)
		cr_expect(th_is(&l->ents[k], l->start + k, gen, 4000), "entry %llu",
			  (unsigned long long)(l->start + k));
}

static unsigned count_snap_files(const char *dir)
{
	char cmd[4200];
	unsigned k = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^snapshot-'", dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	if (fscanf(f, "%u", &k) != 1)
		k = 0;
	pclose(f);
	return k;
}

Test(io, snapshot_trailing)
{
	char *dir = th_mkdir();
	struct delog_raft_options o = small_log();
	struct th_node n;
	struct th_loaded l;
	uint64_t before, after;

	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	for (raft_index i = 1; i <= 100; i += 10)
		cr_assert_eq(th_append(&n, i, i + 9, 0, 8000), 0, "%s", n.io.errmsg);
	before = log_tail(&n);
	cr_assert_eq(put_snapshot(&n, 90, 1, 10, 1000), 0, "%s", n.io.errmsg);
	after = log_tail(&n);
	/* 80 of the 100 entries (640 KB) are released, not the 20 kept ones (160 KB) */
	cr_expect_gt(after, before + 600000, "tail %llu -> %llu: not released",
		     (unsigned long long)before, (unsigned long long)after);
	cr_expect_lt(after, before + 700000, "tail %llu -> %llu: kept entries released",
		     (unsigned long long)before, (unsigned long long)after);
	cr_expect_eq(count_snap_files(dir), 1);
	cr_assert_eq(put_snapshot(&n, 95, 1, 10, 500), 0, "%s", n.io.errmsg);
	cr_expect_eq(count_snap_files(dir), 1, "the older snapshot file was not removed");
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_not_null(l.snap);
	cr_expect_eq(l.snap->index, 95);
	cr_expect_eq(l.snap->term, 1);
	check_snap_data(l.snap, 95, 500);
	cr_assert_eq(l.start, 86, "start %llu", (unsigned long long)l.start);
	cr_assert_eq(l.n, 15);
	for (size_t i = 0; i < l.n; i++)
		cr_expect(th_is(&l.ents[i], 86 + i, 0, 8000));
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

/* Append entries of generation @gen from @from on, 20 of 4000 bytes at a time, until one
 * waits for space (RS1); returns the first index of the waiting append, whose entries
 * are in @e (the caller frees them once it completed). */
static raft_index fill_until_parked(struct th_node *n, raft_index from, uint64_t gen,
				    struct raft_entry e[20], struct th_append *a)
{
	for (raft_index i = from; i < from + 10000; i += 20) {
		for (unsigned k = 0; k < 20; k++)
			th_fill(&e[k], i + k, gen, 4000);
		a->done = false;
		cr_assert_eq(n->io.append(&n->io, &a->req, e, 20, th_append_cb), 0, "%s",
			     n->io.errmsg);
		if (delog_raft_waiting(&n->io))
			return i;
		cr_assert(th_run_until(&n->loop, &a->done, 10000), "append never completed");
		cr_assert_eq(a->status, 0);
		for (unsigned k = 0; k < 20; k++)
			raft_free(e[k].buf.base);
	}
	cr_assert_fail("40 MB of appends never filled a 4 MiB log");
	return 0;
}

Test(io, long_run)
{
	char *dir = th_mkdir();
	struct delog_raft_options o = small_log();
	struct th_node n;
	struct th_loaded l;
	raft_index i;
	int rv = 0;

	/* 4 MiB log, 40 MiB of entries, a snapshot every 200 entries keeping 50 */
	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	for (i = 1; i <= 10000; i += 20) {
		rv = th_append(&n, i, i + 19, 0, 4000);
		cr_assert_eq(rv, 0, "append %llu: %d %s", (unsigned long long)i, rv, n.io.errmsg);
		if ((i + 19) % 200 == 0)
			cr_assert_eq(put_snapshot(&n, i + 19, 1, 50, 100), 0, "%s", n.io.errmsg);
	}
	th_close(&n);
	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_not_null(l.snap);
	cr_expect_eq(l.snap->index, 10000);
	cr_expect_eq(l.start, 9951);
	cr_expect_eq(l.n, 50);
	th_loaded_free(&l);
	/* (io.c P1-P4) Without snapshots the same log fills.  The append that finds no
	 * space waits for it: a follower whose append failed would stop C-Raft. */
	struct raft_entry e[20];
	struct th_append a = { .req = { .data = &a } };

	i = fill_until_parked(&n, 10001, 0, e, &a);
	cr_assert(!a.done);
	cr_expect_eq(delog_raft_admit(&n.io, 100), 0, "a leader would take a command");
	/* Term and vote find the log's reserve. */
	cr_assert_eq(n.io.set_term(&n.io, 2), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.set_vote(&n.io, 1), 0, "%s", n.io.errmsg);
	/* A snapshot's release lets the waiting append in. */
	cr_assert_eq(put_snapshot(&n, i - 1, 1, 50, 100), 0, "%s", n.io.errmsg);
	cr_assert(th_run_until(&n.loop, &a.done, 10000), "the waiting append never completed");
	cr_assert_eq(a.status, 0);
	cr_expect_eq(delog_raft_waiting(&n.io), 0);
	cr_expect_eq(delog_raft_admit(&n.io, 100), 1, "no room after the release");
	for (unsigned k = 0; k < 20; k++)
		raft_free(e[k].buf.base);
	th_close(&n);
	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_expect_eq(l.term, 2);
	cr_expect_eq(l.vote, 1);
	cr_assert_not_null(l.snap);
	cr_expect_eq(l.snap->index, i - 1);
	cr_assert_eq(l.start + l.n, i + 20, "log ends at %llu, not %llu",
		     (unsigned long long)(l.start + l.n), (unsigned long long)(i + 20));
	check_entries(&l, 0);
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

/* (RS1) Appends that wait for space while a snapshot from the leader is installed: the
 * snapshot is logged first (the reserve), then the waiting appends log only the entries
 * it does not cover, in call order; one it covers whole completes with nothing logged.
 * A restart loads the snapshot and exactly the entries after it. */
Test(io, install_over_waiting_appends)
{
	for (int whole = 0; whole < 2; whole++) {
		char *dir = th_mkdir();
		struct delog_raft_options o = small_log();
		struct raft_entry e[20], e2[20];
		struct th_append a = { .req = { .data = &a } }, a2 = { .req = { .data = &a2 } };
		raft_index i, snap;
		struct th_node n;
		struct th_loaded l;

		cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
		cr_assert_eq(th_load(&n, &l), 0);
		th_loaded_free(&l);
		i = fill_until_parked(&n, 1, 1, e, &a);
		/* a second append behind the waiting one waits too, in call order */
		for (unsigned k = 0; k < 20; k++)
			th_fill(&e2[k], i + 20 + k, 1, 4000);
		cr_assert_eq(n.io.append(&n.io, &a2.req, e2, 20, th_append_cb), 0, "%s",
			     n.io.errmsg);
		cr_expect_eq(delog_raft_waiting(&n.io), 2);
		/* covering half of the first append, or both appends and more */
		snap = whole ? i + 50 : i + 9;
		cr_assert_eq(put_snapshot(&n, snap, 2, 0, 100), 0, "%s", n.io.errmsg);
		cr_assert(th_run_until(&n.loop, &a.done, 10000),
			  "the first append never completed");
		cr_assert(th_run_until(&n.loop, &a2.done, 10000),
			  "the second append never completed");
		cr_expect_eq(a.status, 0);
		cr_expect_eq(a2.status, 0);
		cr_expect_eq(delog_raft_waiting(&n.io), 0);
		for (unsigned k = 0; k < 20; k++) {
			raft_free(e[k].buf.base);
			raft_free(e2[k].buf.base);
		}
		th_close(&n);
		cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
		cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
		cr_assert_not_null(l.snap);
		cr_expect_eq(l.snap->index, snap);
		cr_expect_eq(l.start, snap + 1, "log starts at %llu, not after the snapshot %llu",
			     (unsigned long long)l.start, (unsigned long long)snap);
		cr_expect_eq(l.n, whole ? 0 : (size_t)(i + 40 - (snap + 1)), "%zu entries", l.n);
		check_entries(&l, 1);
		th_loaded_free(&l);
		th_close(&n);
		th_rmdir(dir);
	}
}

/* ---- RS5: an apply after every put ---- */

/* Hold libuv's thread pool (every thread: UV_THREADPOOL_SIZE, 4 unless set) until
 * pool_free, so a snapshot_put asked for meanwhile waits in the pool's queue. */
struct pool_hold {
	uv_sem_t sem;
	uv_work_t w[1024];
	unsigned n;
	volatile unsigned after;
};

static void pool_work(uv_work_t *w)
{
	uv_sem_wait(w->data);
}

static void pool_after(uv_work_t *w, int status)
{
	struct pool_hold *h = w->loop->data;

	(void)status;
	h->after++;
}

static void pool_hold(struct th_node *n, struct pool_hold *h)
{
	const char *env = getenv("UV_THREADPOOL_SIZE");

	h->n = env && atoi(env) > 0 ? (unsigned)atoi(env) : 4;
	h->n = h->n > 1024 ? 1024 : h->n;
	h->after = 0;
	cr_assert_eq(uv_sem_init(&h->sem, 0), 0);
	n->loop.data = h;
	for (unsigned i = 0; i < h->n; i++) {
		h->w[i].data = &h->sem;
		cr_assert_eq(uv_queue_work(&n->loop, &h->w[i], pool_work, pool_after), 0);
	}
}

static void pool_free(struct th_node *n, struct pool_hold *h)
{
	for (unsigned i = 0; i < h->n; i++)
		uv_sem_post(&h->sem);
	for (uint64_t end = th_now_ms() + 10000; h->after < h->n && th_now_ms() < end;)
		uv_run(&n->loop, UV_RUN_NOWAIT), usleep(200);
	cr_assert_eq(h->after, h->n, "the pool's threads were never given back");
	uv_sem_destroy(&h->sem);
}

/* Run the loop until everything committed to the log is durable (nothing in the open
 * checkpoint, every earlier one durable), then a little longer: the io has seen it. */
static void run_until_durable(struct th_node *n)
{
	struct delog_stats st = { .size = sizeof(st) };
	uint64_t end = th_now_ms() + 10000;

	for (;;) {
		cr_assert_eq(delog_raft_stats(&n->io, &st), 0);
		if (st.cil_bytes == 0 && st.durable_seq + 1 >= st.open_seq)
			break;
		cr_assert_lt(th_now_ms(), end, "the log never became durable");
		uv_run(&n->loop, UV_RUN_NOWAIT), usleep(200);
	}
	for (int i = 0; i < 50; i++)
		uv_run(&n->loop, UV_RUN_NOWAIT), usleep(200);
}

/* An append whose callback asks for a snapshot, as C-Raft's apply does once a snapshot
 * is due (RS5). */
struct append_put {
	struct th_append a; /* first: th_append_cb's req->data */
	struct th_node *n;
	struct put *next;
	raft_index index;
};

static void append_put_cb(struct raft_io_append *req, int status)
{
	struct append_put *c = req->data;

	th_append_cb(req, status);
	if (c->next)
		cr_assert_eq(put_begin(c->n, c->next, c->index, 1, 10, 1000), 0, "%s",
			     c->n->io.errmsg);
}

/* (RS5) C-Raft snapshots only after an apply, and not while a put runs.  Appends made
 * durable while a put runs are reported at once when no snapshot is due, and only after
 * the put's callback when one is (a quarter of the log in entries): the entries they
 * report stored are then applied after the put, and that apply snapshots.  The put the
 * first one's callback starts does not hold back the second. */
Test(io, durable_appends_wait_for_a_due_snapshot)
{
	for (int due = 0; due < 2; due++) {
		char *dir = th_mkdir();
		struct delog_raft_options o = small_log();
		/* the second append alone is a quarter of the log: still due after the put */
		const unsigned cnt[2] = { 20, due ? 270u : 20u };
		struct raft_entry *e[2];
		struct append_put a[2];
		struct pool_hold h;
		struct th_node n;
		struct th_loaded l;
		struct put p, p2;
		raft_index i = 1;

		cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
		cr_assert_eq(th_load(&n, &l), 0);
		th_loaded_free(&l);
		/* 80 KB of entries, or 1.2 MB (a quarter of the 4 MiB log is 1 MiB); then 1.2 MB
		 * more while the put runs */
		for (; i <= (due ? 300u : 20u); i += 20)
			cr_assert_eq(th_append(&n, i, i + 19, 0, 4000), 0, "%s", n.io.errmsg);
		pool_hold(&n, &h);
		cr_assert_eq(put_begin(&n, &p, i - 1, 1, 10, 1000), 0, "%s", n.io.errmsg);
		p.watch = &a[0].a.done;
		memset(a, 0, sizeof(a));
		memset(&p2, 0, sizeof(p2));
		for (int b = 0; b < 2; b++) {
			a[b].a.req.data = &a[b];
			a[b].n = &n;
			e[b] = calloc(cnt[b], sizeof(*e[b]));
			cr_assert_not_null(e[b]);
			for (unsigned k = 0; k < cnt[b]; k++)
				th_fill(&e[b][k], i + 20 * (raft_index)b + k, 0, 4000);
			cr_assert_eq(n.io.append(&n.io, &a[b].a.req, e[b], cnt[b], append_put_cb),
				     0, "%s", n.io.errmsg);
		}
		/* the first callback asks for the next snapshot, as C-Raft would */
		a[0].next = due ? &p2 : NULL;
		a[0].index = i + 19;
		run_until_durable(&n);
		cr_assert(!p.done, "the put ran while the pool was held");
		for (int b = 0; b < 2; b++)
			if (!due)
				cr_expect(a[b].a.done, "a durable append waited for a put with no "
						       "snapshot due");
			else
				cr_expect(!a[b].a.done,
					  "a durable append was reported while a put ran with a "
					  "snapshot due: C-Raft would not snapshot after it");
		pool_free(&n, &h);
		cr_assert(th_run_until(&n.loop, &p.done, 10000), "snapshot_put never completed");
		cr_assert_eq(p.status, 0, "%s", n.io.errmsg);
		if (due) {
			cr_expect(!p.watched, "the append was reported before the put's callback");
			p2.watch = &a[1].a.done;
			cr_assert(th_run_until(&n.loop, &p2.done, 10000),
				  "the second snapshot_put never completed");
			cr_expect(p2.watched, "the put the first append's callback started held "
					      "back the second append");
			put_end(&p2);
		}
		for (int b = 0; b < 2; b++) {
			cr_assert(th_run_until(&n.loop, &a[b].a.done, 10000),
				  "an append never completed");
			cr_expect_eq(a[b].a.status, 0);
			for (unsigned k = 0; k < cnt[b]; k++)
				raft_free(e[b][k].buf.base);
			free(e[b]);
		}
		put_end(&p);
		th_close(&n);
		th_rmdir(dir);
	}
}

/* (RS3) Truncated entries keep their space until a release passes them, so they count
 * towards the snapshot threshold: on a 4 MiB log holding 2.4 MB of entries, a truncation
 * that leaves 80 KB makes a snapshot due all the same (C-Raft's entry count would take
 * 1,000 more entries, which the log has no room for); the appends after it fill the
 * rest, wait for space (RS1), and the snapshot C-Raft then takes releases the truncated
 * entries with the old ones, so they go in, and no snapshot is due any more. */
Test(io, truncated_entries_make_a_snapshot_due)
{
	char *dir = th_mkdir();
	struct delog_raft_options o = small_log();
	struct raft_entry e[20];
	struct th_append a = { .req = { .data = &a } };
	struct th_node n;
	struct th_loaded l;
	raft_index i;

	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	for (i = 1; i <= 600; i += 20)
		cr_assert_eq(th_append(&n, i, i + 19, 0, 4000), 0, "%s", n.io.errmsg);
	cr_expect_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1,
		     "2.4 MB of entries on a 4 MiB log: a snapshot is due");
	cr_assert_eq(n.io.truncate(&n.io, 21), 0, "%s", n.io.errmsg);
	cr_expect_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1,
		     "the truncated entries still use the log, and only a snapshot frees them");
	i = fill_until_parked(&n, 21, 1, e, &a);
	/* the snapshot C-Raft takes at its next apply, keeping 10 entries */
	cr_assert_eq(put_snapshot(&n, i - 1, 2, 10, 100), 0, "%s", n.io.errmsg);
	cr_assert(th_run_until(&n.loop, &a.done, 10000), "the waiting append never went in");
	cr_expect_eq(a.status, 0);
	cr_expect_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1000,
		     "30 entries held after the snapshot, yet a snapshot is still due");
	for (unsigned k = 0; k < 20; k++)
		raft_free(e[k].buf.base);
	th_close(&n);
	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_not_null(l.snap);
	cr_expect_eq(l.start + l.n, i + 20, "the log ends at %llu, not %llu",
		     (unsigned long long)(l.start + l.n), (unsigned long long)(i + 20));
	check_entries(&l, 1);
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

static uint64_t used_bytes(struct th_node *n)
{
	struct delog_stats st = { .size = sizeof(st) };

	cr_assert_eq(delog_raft_stats(&n->io, &st), 0);
	return st.log_used;
}

/* (RS3) Small entries appended one by one use a checkpoint each, far more log than their
 * bytes: a quarter of the log used makes a snapshot due.  One that keeps every entry
 * frees nothing, and asking again at every apply would free nothing more, so the next
 * is due only once an eighth more of the log is used. */
Test(io, snapshot_due_past_what_the_last_one_kept)
{
	char *dir = th_mkdir();
	struct delog_raft_options o = small_log();
	struct th_node n;
	struct th_loaded l;
	uint64_t floor;
	raft_index i;

	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	for (i = 1; used_bytes(&n) < (1u << 20); i++) {
		cr_assert_lt(i, 5000, "5000 appends never used a quarter of a 4 MiB log");
		cr_assert_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1000,
			     "due at %llu bytes used", (unsigned long long)used_bytes(&n));
		cr_assert_eq(th_append(&n, i, i, 0, 16), 0, "%s", n.io.errmsg);
	}
	cr_expect_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1,
		     "%llu entries of 16 bytes use a quarter of the log: not due",
		     (unsigned long long)(i - 1));
	cr_assert_eq(put_snapshot(&n, i - 1, 1, (unsigned)(i - 1), 100), 0, "%s", n.io.errmsg);
	floor = used_bytes(&n);
	cr_assert_geq(floor, 1u << 20, "the snapshot kept every entry, yet freed the log");
	cr_expect_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1000,
		     "due again right after a snapshot that could free nothing");
	for (; used_bytes(&n) < floor + (512u << 10); i++)
		cr_assert_eq(th_append(&n, i, i, 0, 16), 0, "%s", n.io.errmsg);
	cr_expect_eq(delog_raft_snapshot_threshold(&n.io, 1000), 1,
		     "an eighth of the log used past the last snapshot: not due");
	th_close(&n);
	th_rmdir(dir);
}

/* A larger log_size moves the state to a larger log (grow.c), never beside another
 * writer (the io's own open is refused first): load returns what the old log held (term, vote, the snapshot, every entry with its bytes), the log is the new
 * size, a stray DIR/delog.log.grow of an earlier attempt is removed, appends go on, and
 * a smaller log_size later shrinks nothing. */
Test(io, larger_log_size_grows_the_log)
{
	char *dir = th_mkdir();
	struct delog_raft_options o = small_log();
	struct delog_stats st = { .size = sizeof(st) };
	char stray[1200];
	struct th_node n;
	struct th_loaded l;
	FILE *f;

	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 1, 40, 0, 3000), 0, "%s", n.io.errmsg);
	cr_assert_eq(put_snapshot(&n, 30, 1, 5, 700), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.set_term(&n.io, 4), 0);
	cr_assert_eq(n.io.set_vote(&n.io, 2), 0);
	th_close(&n);
	snprintf(stray, sizeof(stray), "%s/delog.log.grow", dir);
	f = fopen(stray, "w");
	cr_assert_not_null(f);
	fputs("left by a killed grow\n", f);
	fclose(f);

	o.log_size = 8u << 20;
	/* Another writer holds the log: nothing moves, the log keeps its size. */
	{
		struct delog_options wo = { .size = sizeof(wo) };
		char path[1200];
		struct stat sb;
		delog *w;

		snprintf(path, sizeof(path), "%s/delog.log", dir);
		cr_assert_eq(delog_open(path, &wo, &w), 0);
		cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
		cr_expect_neq(th_load(&n, &l), 0, "load beside another writer");
		cr_expect(strstr(n.io.errmsg, "busy") || strstr(n.io.errmsg, "EBUSY") ||
				  strstr(n.io.errmsg, "writer"),
			  "errmsg: %s", n.io.errmsg);
		th_close(&n);
		cr_assert_eq(delog_close(w), 0);
		cr_assert_eq(stat(path, &sb), 0);
		cr_expect_eq(sb.st_size, (4 << 20) + 4096, "the log changed size beside a writer");
	}
	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_eq(delog_raft_stats(&n.io, &st), 0);
	cr_expect_eq(st.log_size, 8u << 20, "log %llu bytes", (unsigned long long)st.log_size);
	cr_expect_eq(access(stray, F_OK), -1, "the stray .grow file is still there");
	cr_expect_eq(l.term, 4);
	cr_expect_eq(l.vote, 2);
	cr_assert_not_null(l.snap);
	cr_expect_eq(l.snap->index, 30);
	check_snap_data(l.snap, 30, 700);
	cr_assert_eq(l.start, 26, "start %llu", (unsigned long long)l.start);
	cr_assert_eq(l.n, 15);
	for (size_t i = 0; i < l.n; i++)
		cr_expect(th_is(&l.ents[i], 26 + i, 0, 3000), "entry %zu", 26 + i);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 41, 50, 0, 3000), 0, "%s", n.io.errmsg);
	th_close(&n);

	o.log_size = 4u << 20; /* smaller: the log keeps its 8 MiB */
	cr_assert_eq(th_open(&n, dir, &o), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_eq(delog_raft_stats(&n.io, &st), 0);
	cr_expect_eq(st.log_size, 8u << 20);
	cr_expect_eq(l.start + l.n, 51);
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

Test(io, install_snapshot)
{
	char *dir = th_mkdir();
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 1, 10, 0, 64), 0);
	cr_assert_eq(n.io.set_term(&n.io, 3), 0);
	cr_assert_eq(put_snapshot(&n, 50, 3, 0, 2000), 0, "%s", n.io.errmsg);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_assert_not_null(l.snap);
	cr_expect_eq(l.term, 3);
	cr_expect_eq(l.snap->index, 50);
	cr_expect_eq(l.snap->term, 3);
	check_snap_data(l.snap, 50, 2000);
	cr_expect_eq(l.start, 51);
	cr_expect_eq(l.n, 0);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 51, 52, 2, 64), 0, "%s", n.io.errmsg);
	th_close(&n);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	cr_expect_eq(l.start, 51);
	cr_assert_eq(l.n, 2);
	cr_expect(th_is(&l.ents[0], 51, 2, 64));
	cr_expect(th_is(&l.ents[1], 52, 2, 64));
	th_loaded_free(&l);
	th_close(&n);
	th_rmdir(dir);
}

struct get {
	struct raft_io_snapshot_get req;
	struct raft_snapshot *snap;
	volatile bool done;
	int status;
};

static void get_cb(struct raft_io_snapshot_get *req, struct raft_snapshot *s, int status)
{
	struct get *g = req->data;

	g->snap = s;
	g->status = status;
	g->done = true;
}

Test(io, snapshot_get)
{
	char *dir = th_mkdir();
	struct get g = { .req = { .data = &g } };
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	cr_assert_eq(n.io.snapshot_get(&n.io, &g.req, get_cb), RAFT_NOTFOUND);
	cr_assert_eq(th_append(&n, 1, 20, 0, 64), 0);
	cr_assert_eq(put_snapshot(&n, 15, 1, 5, 3000), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.snapshot_get(&n.io, &g.req, get_cb), 0, "%s", n.io.errmsg);
	cr_assert(!g.done);
	cr_assert(th_run_until(&n.loop, &g.done, 10000));
	cr_assert_eq(g.status, 0, "%s", n.io.errmsg);
	cr_assert_not_null(g.snap);
	cr_expect_eq(g.snap->index, 15);
	check_snap_data(g.snap, 15, 3000);
	raft_configuration_close(&g.snap->configuration);
	raft_free(g.snap->bufs[0].base);
	raft_free(g.snap->bufs);
	raft_free(g.snap);
	th_close(&n);
	th_rmdir(dir);
}

static void scribble(const char *path, off_t off, size_t len)
{
	int fd = open(path, O_WRONLY);
	char junk[4096];

	cr_assert_geq(fd, 0, "open %s", path);
	memset(junk, 0xa5, sizeof(junk));
	cr_assert_leq(len, sizeof(junk));
	cr_assert_eq(pwrite(fd, junk, len, off), (ssize_t)len);
	cr_assert_eq(fsync(fd), 0);
	close(fd);
}

Test(io, corrupt_log)
{
	char *dir = th_mkdir();
	char path[4200];
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.set_term(&n.io, 2), 0);
	cr_assert_eq(th_append(&n, 1, 5, 0, 64), 0);
	th_close(&n);
	snprintf(path, sizeof(path), "%s/delog.log", dir);
	scribble(path, 0, 512); /* the superblock */

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), RAFT_CORRUPT, "load of a damaged log: %s", n.io.errmsg);
	cr_expect(strstr(n.io.errmsg, "DELOG_E") != NULL, "errmsg: %s", n.io.errmsg);
	cr_expect(strstr(n.io.errmsg, "magic 0x") != NULL, "errmsg says what was found: %s",
		  n.io.errmsg);
	cr_expect_null(l.ents);
	cr_expect_eq(n.io.set_term(&n.io, 3), RAFT_CORRUPT, "a write after a refused load");
	th_close(&n);
	th_rmdir(dir);
}

Test(io, corrupt_snapshot)
{
	char *dir = th_mkdir();
	char path[4200];
	struct th_node n;
	struct th_loaded l;
	FILE *f;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 1, 20, 0, 64), 0);
	cr_assert_eq(put_snapshot(&n, 15, 1, 5, 3000), 0, "%s", n.io.errmsg);
	th_close(&n);
	snprintf(path, sizeof(path), "ls %s/snapshot-*.dat", dir);
	f = popen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(path, sizeof(path), f));
	pclose(f);
	path[strcspn(path, "\n")] = '\0';
	scribble(path, 100, 8);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), RAFT_CORRUPT, "%s", n.io.errmsg);
	cr_expect(strstr(n.io.errmsg, "checksum") != NULL, "errmsg: %s", n.io.errmsg);
	th_close(&n);
	th_rmdir(dir);
}

Test(io, bad_options)
{
	char *dir = th_mkdir();
	struct delog_raft_options o = { .size = sizeof(o), .flush = DELOG_FLUSH_NONE };
	struct raft_uv_transport tr;
	struct raft_io io = { 0 };
	uv_loop_t loop;

	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(raft_uv_tcp_init(&tr, &loop), 0);
	cr_expect_eq(delog_raft_init(&io, &loop, dir, &tr, &o), RAFT_INVALID);
	cr_expect(strstr(io.errmsg, "crash-safe") != NULL, "%s", io.errmsg);
	o.size = 8;
	o.flush = DELOG_FLUSH_SYNC;
	cr_expect_eq(delog_raft_init(&io, &loop, dir, &tr, &o), RAFT_INVALID);
	cr_expect_eq(delog_raft_init(&io, &loop, dir, NULL, NULL), RAFT_INVALID);
	raft_uv_tcp_close(&tr);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_expect_eq(uv_loop_close(&loop), 0);
	th_rmdir(dir);
}

/* C-Raft's own io lets uv_run(UV_RUN_DEFAULT) return when nothing waits; so must this
 * one: the durable eventfd's poll is referenced only while appends are queued. */
Test(io, idle_loop_ends, .timeout = 60)
{
	char *dir = th_mkdir();
	struct th_node n;
	struct th_loaded l;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	th_loaded_free(&l);
	cr_assert_eq(uv_run(&n.loop, UV_RUN_DEFAULT), 0, "after load, the loop still has work");
	cr_assert_eq(th_append(&n, 1, 10, 0, 100), 0, "%s", n.io.errmsg);
	cr_assert_eq(uv_run(&n.loop, UV_RUN_DEFAULT), 0,
		     "after the appends, the loop still "
		     "has work");
	cr_assert_eq(th_append(&n, 11, 12, 0, 100), 0, "%s", n.io.errmsg);
	th_close(&n);
	th_rmdir(dir);
}

/* The threads of this process now (/proc/self/task). */
static unsigned th_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	unsigned n = 0;

	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The io keeps no thread of its own: appends are asked for with delog_force_nowait, so an
 * open io has exactly the threads a plain delog log of the same options has (a forcer
 * thread per io, before, made one more). */
Test(io, no_thread_of_its_own, .timeout = 60)
{
	char *dir = th_mkdir(), path[4200];
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 4u << 20,
				   .flush = DELOG_FLUSH_SYNC };
	struct delog_raft_options ro = small_log();
	struct th_node n;
	struct th_loaded l;
	unsigned plain, io;
	delog *log;

	snprintf(path, sizeof(path), "%s/plain.log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0);
	plain = th_threads();
	cr_assert_eq(delog_close(log), 0);
	unlink(path);
	ro.flush = DELOG_FLUSH_SYNC;
	cr_assert_eq(th_open(&n, dir, &ro), 0, "%s", n.io.errmsg);
	cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
	th_loaded_free(&l);
	cr_assert_eq(th_append(&n, 1, 10, 0, 100), 0, "%s", n.io.errmsg);
	io = th_threads();
	cr_expect_eq(io, plain, "an open io runs %u threads, a plain delog log %u", io, plain);
	th_close(&n);
	th_rmdir(dir);
}

/* C-Raft's engine does not put a snapshot past the last entry, but its io accepts and
 * loads one (discarding the entries behind it): a storage layer must never take a write
 * it then refuses to load ("entries do not join the snapshot" made the directory
 * unloadable for good). */
Test(io, snapshot_past_end)
{
	for (int c = 0; c < 2; c++) {
		char *dir = th_mkdir();
		raft_index at = c ? 2 : 1;
		struct th_node n;
		struct th_loaded l;

		cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
		cr_assert_eq(th_load(&n, &l), 0);
		th_loaded_free(&l);
		if (c)
			cr_assert_eq(th_append(&n, 1, 1, 0, 64), 0, "%s", n.io.errmsg);
		cr_assert_eq(put_snapshot(&n, at, 1, 5, 300), 0, "%s", n.io.errmsg);
		th_close(&n);

		cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
		cr_assert_eq(th_load(&n, &l), 0, "snapshot at %llu past the last entry: %s",
			     (unsigned long long)at, n.io.errmsg);
		cr_assert_not_null(l.snap);
		cr_expect_eq(l.snap->index, at);
		check_snap_data(l.snap, at, 300);
		cr_expect_eq(l.start, at + 1);
		cr_expect_eq(l.n, 0);
		th_loaded_free(&l);
		cr_assert_eq(th_append(&n, at + 1, at + 2, 1, 64), 0, "%s", n.io.errmsg);
		th_close(&n);

		cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
		cr_assert_eq(th_load(&n, &l), 0, "%s", n.io.errmsg);
		cr_expect_eq(l.start, at + 1);
		cr_assert_eq(l.n, 2);
		cr_expect(th_is(&l.ents[0], at + 1, 1, 64));
		th_loaded_free(&l);
		th_close(&n);
		th_rmdir(dir);
	}
}
