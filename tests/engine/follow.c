/*
 * follow.c - delog_reader, a reader that follows a log (engine/reader.c RD1-RD4), on real
 * files beside a writer.
 *
 *  - follow/beside_writer_<policy>: a writer thread commits transactions of unique keys
 *    (every third one forced) into an 8 MiB log and releases what the follower has
 *    taken, so the log wraps several times; the follower, opened before the first
 *    commit, receives every checkpoint exactly once, in order, each holding exactly
 *    the transactions its commits returned (their items, bytes and order), through
 *    the last one the writer's close made durable; afterwards a fresh recovery returns
 *    the same bytes for every checkpoint it still holds.
 *  - follow/behind: a follower that does not read while the writer releases past it
 *    gets DELOG_EBEHIND, stays there (position), and a new one from the oldest gets
 *    what the log still holds.
 *  - follow/killed_writer: a writer process is SIGKILLed while the follower follows:
 *    the follower ends at or past the last checkpoint the writer acknowledged (its
 *    force returned) and never past what the log holds afterwards.
 *  - follow/durable_only: with a writer that commits and never forces, nothing is
 *    handed over until a force makes it durable.
 *  - follow/watermark_bounds (RD1): the writer's page, set back by the test to an earlier
 *    durable sequence, bounds what is handed over though the log holds more; moved on
 *    (a write to the page, as a writer's pub_durable does), the rest comes; a copy of
 *    the log file gets a page of its own.
 *  - follow/writer_shut_down (RD4): a writer an I/O error shuts down: every checkpoint
 *    it made durable, then DELOG_ESHUTDOWN.
 *  - follow/writers_come_and_go: six writer sessions on one log while one follower
 *    follows: every checkpoint once, in order; a clean close leaves no page.
 *  - follow/power_cuts_<policy> (RD1 on the sim disk, whose cache a power cut loses): a
 *    follower beside a writer under load, and power-cut images of the disk taken while
 *    both run (strict, garble and versions in turn): every image recovers at least up
 *    to the last checkpoint the follower had handed over before it was taken.
 */
#include "helpers.h"
#include "engine.h"
#include "engine_private.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define F_TX 6000

/* What the writer committed: transaction i has keys i*4+k for k < nitems[i]; its item
 * k holds (key * 131 + j) & 0xff at byte j, len lens[i][k]. */
struct f_run {
	const char *path;
	enum delog_flush_policy policy;
	uint64_t seq[F_TX];
	uint32_t nitems[F_TX];
	uint32_t lens[F_TX][4];
	_Atomic uint64_t taken; /* the follower's position (for the writer's releases) */
	_Atomic bool opened;
	uint64_t final_durable;
	int writer_err;
};

static void f_fill(unsigned char *b, uint64_t key, uint32_t len)
{
	for (uint32_t j = 0; j < len; j++)
		b[j] = (unsigned char)((key * 131 + j) & 0xff);
}

static bool f_item_ok(const struct delog_item *it, uint64_t key, uint32_t len)
{
	const unsigned char *b = it->data;

	if (it->key != key || it->len != len)
		return false;
	for (uint32_t j = 0; j < len; j++)
		if (b[j] != (unsigned char)((key * 131 + j) & 0xff))
			return false;
	return true;
}

static void *f_writer(void *arg)
{
	struct f_run *w = arg;
	struct delog_options o = { .size = sizeof(o),
				   .flush = w->policy,
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 8u << 20 };
	unsigned char buf[3000];
	delog *log;
	int err;

	err = delog_open(w->path, &o, &log);
	atomic_store(&w->opened, true);
	if (err) {
		w->writer_err = err;
		return NULL;
	}
	for (uint32_t i = 0; i < F_TX && !err; i++) {
		delog_tx *tx;

		w->nitems[i] = 1 + i % 3;
		/* never block for space: only what the follower took is released, here */
		while ((err = delog_tx_begin(log, 4 * (3000 + 64), DELOG_TX_NOWAIT, &tx)) ==
		       -EAGAIN) {
			uint64_t t = atomic_load(&w->taken), d = delog_durable_seq(log);

			if (t > 1)
				delog_release(log, t - 1 < d ? t - 1 : d);
			usleep(1000);
		}
		for (uint32_t k = 0; !err && k < w->nitems[i]; k++) {
			uint64_t key = (uint64_t)i * 4 + k;

			w->lens[i][k] = (uint32_t)((key * 7919) % sizeof(buf));
			f_fill(buf, key, w->lens[i][k]);
			err = delog_tx_log(tx, key, buf, w->lens[i][k]);
		}
		if (!err)
			err = delog_tx_commit(tx, &w->seq[i]);
		if (!err && i % 3 == 0)
			err = delog_force(log, w->seq[i]);
		/* release what the follower took, so the log wraps without leaving it */
		if (!err && atomic_load(&w->taken) > 1)
			err = delog_release(log,
					    atomic_load(&w->taken) - 1 < delog_durable_seq(log) ?
						    atomic_load(&w->taken) - 1 :
						    delog_durable_seq(log));
	}
	if (!err)
		err = delog_force(log, 0);
	w->final_durable = delog_durable_seq(log);
	if (!err)
		err = delog_close(log);
	else
		delog_close(log);
	w->writer_err = err;
	return NULL;
}

/* The follower's check of checkpoint @c: exactly the transactions whose commits
 * returned its sequence, in order.  @ti: the first transaction not yet matched. */
static void f_check(const struct f_run *w, const struct delog_checkpoint *c,
		    const struct delog_item *items, uint32_t *ti)
{
	size_t k = 0;

	while (*ti < F_TX && w->seq[*ti] && w->seq[*ti] < c->seq)
		(*ti)++;
	for (; *ti < F_TX && w->seq[*ti] == c->seq; (*ti)++)
		for (uint32_t j = 0; j < w->nitems[*ti]; j++, k++) {
			cr_assert_lt(k, c->nitems, "checkpoint %llu: too few items",
				     (unsigned long long)c->seq);
			cr_assert(f_item_ok(&items[k], (uint64_t)*ti * 4 + j, w->lens[*ti][j]),
				  "checkpoint %llu item %zu: not transaction %u's",
				  (unsigned long long)c->seq, k, *ti);
		}
	cr_assert_eq(k, c->nitems, "checkpoint %llu: %zu items, expected %zu",
		     (unsigned long long)c->seq, c->nitems, k);
}

/* A checkpoint's bytes, for the comparison with recovery afterwards. */
static uint64_t f_hash(const struct delog_checkpoint *c, const struct delog_item *items)
{
	uint64_t h = 0xcbf29ce484222325ull ^ c->seq;

	for (size_t i = 0; i < c->nitems; i++) {
		const unsigned char *b = items[i].data;

		h = (h ^ items[i].key) * 0x100000001b3ull;
		for (uint32_t j = 0; j < items[i].len; j++)
			h = (h ^ b[j]) * 0x100000001b3ull;
	}
	return h;
}

struct f_seen {
	uint64_t first, last;
	uint64_t *hash; /* by seq */
	size_t cap;
	size_t compared;
};

static int f_recovered(void *arg, const struct delog_checkpoint *c, const struct delog_item *items,
		       size_t n)
{
	struct f_seen *s = arg;

	(void)n;
	if (c->seq >= s->first && c->seq <= s->last) {
		cr_expect_eq(s->hash[c->seq], f_hash(c, items),
			     "checkpoint %llu: recovery's bytes differ from the follower's",
			     (unsigned long long)c->seq);
		s->compared++;
	}
	return 0;
}

static void f_beside_writer(enum delog_flush_policy policy)
{
	char *dir = t_mkdtemp("follow");
	char path[4200];
	struct f_run *w = calloc(1, sizeof(*w));
	struct delog_reader_options ro = { .size = sizeof(ro) };
	struct f_seen s = { 0 };
	struct delog_checkpoint c;
	const struct delog_item *items;
	delog_reader *r = NULL;
	pthread_t th;
	uint32_t ti = 0;
	bool writer_done = false;
	int rv;

	cr_assert_not_null(w);
	snprintf(path, sizeof(path), "%s/log", dir);
	w->path = path;
	w->policy = policy;
	s.cap = 4 * F_TX;
	s.hash = calloc(s.cap, sizeof(*s.hash));
	cr_assert_eq(pthread_create(&th, NULL, f_writer, w), 0);
	while (!atomic_load(&w->opened))
		usleep(1000);
	cr_assert_eq(w->writer_err, 0, "writer: %s", delog_strerror(w->writer_err));
	cr_assert_eq(delog_reader_open(path, &ro, &r), 0, "%s", delog_errmsg());
	for (;;) {
		rv = delog_reader_next(r, 200, &c, &items);
		cr_assert_geq(rv, 0, "next: %s: %s", delog_strerror(rv), delog_errmsg());
		if (rv == 1) {
			if (!s.first)
				s.first = c.seq;
			cr_assert_eq(c.seq, s.last ? s.last + 1 : c.seq, "got %llu after %llu",
				     (unsigned long long)c.seq, (unsigned long long)s.last);
			cr_assert_lt(c.seq, s.cap);
			s.last = c.seq;
			s.hash[c.seq] = f_hash(&c, items);
			f_check(w, &c, items, &ti);
			atomic_store(&w->taken, c.seq);
			continue;
		}
		/* idle: once the writer is done, everything it made durable must have come */
		if (!writer_done) {
			writer_done = pthread_tryjoin_np(th, NULL) == 0;
			continue;
		}
		cr_assert_geq(s.last, w->final_durable,
			      "the writer closed at %llu, the follower stopped at %llu",
			      (unsigned long long)w->final_durable, (unsigned long long)s.last);
		break;
	}
	cr_assert_eq(w->writer_err, 0, "writer: %s", delog_strerror(w->writer_err));
	cr_expect_eq(s.first, 1, "the follower opened before the first commit began at %llu",
		     (unsigned long long)s.first);
	cr_expect_eq(s.last, w->final_durable);
	cr_expect_eq(ti, F_TX, "transactions %u.. were never handed over", ti);
	cr_assert_eq(delog_reader_close(r), 0);
	{
		struct delog_options o = { .size = sizeof(o),
					   .flags = DELOG_OPEN_RDONLY,
					   .recover = f_recovered,
					   .recover_arg = &s };
		delog *log;

		cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
		cr_expect_gt(s.compared, 0);
		delog_close(log);
	}
	unlink(path);
	rmdir(dir);
	free(dir);
	free(s.hash);
	free(w);
}

Test(follow, beside_writer_sync, .timeout = 240)
{
	f_beside_writer(DELOG_FLUSH_SYNC);
}

Test(follow, beside_writer_async, .timeout = 240)
{
	f_beside_writer(DELOG_FLUSH_ASYNC);
}

Test(follow, beside_writer_single, .timeout = 240)
{
	f_beside_writer(DELOG_FLUSH_SINGLE);
}

/* @n forced single-item transactions of @len bytes, each released once durable. */
static void f_write(delog *log, unsigned n, uint32_t len)
{
	unsigned char *buf = calloc(1, len);

	cr_assert_not_null(buf);
	for (unsigned i = 0; i < n; i++) {
		delog_tx *tx;
		uint64_t seq;

		cr_assert_eq(delog_tx_begin(log, 0, 0, &tx), 0, "%s", delog_errmsg());
		cr_assert_eq(delog_tx_log(tx, i, buf, len), 0, "%s", delog_errmsg());
		cr_assert_eq(delog_tx_commit_force(tx, &seq), 0, "%s", delog_errmsg());
		cr_assert_eq(delog_release(log, seq), 0);
	}
	free(buf);
}

Test(follow, behind, .timeout = 120)
{
	char *dir = t_mkdtemp("behind");
	char path[4200];
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 4u << 20 };
	struct delog_reader_options ro = { .size = sizeof(ro), .from = 1 };
	struct delog_checkpoint c;
	const struct delog_item *items;
	delog_reader *r, *r2;
	delog *log;
	int rv;

	snprintf(path, sizeof(path), "%s/log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
	cr_assert_eq(delog_reader_open(path, &ro, &r), 0, "%s", delog_errmsg());
	f_write(log, 600, 60000); /* 36 MB through a 4 MiB log */
	rv = delog_reader_next(r, 2000, &c, &items);
	cr_assert_eq(rv, DELOG_EBEHIND, "next: %d %s", rv, delog_errmsg());
	cr_expect_not_null(strstr(delog_errmsg(), "checkpoint 1 was released"), "%s",
			   delog_errmsg());
	cr_expect_eq(delog_reader_position(r), 1);
	cr_expect_eq(delog_reader_next(r, 0, &c, &items), DELOG_EBEHIND, "it stays behind");
	ro.from = 0;
	cr_assert_eq(delog_reader_open(path, &ro, &r2), 0, "%s", delog_errmsg());
	cr_assert_eq(delog_reader_next(r2, 2000, &c, &items), 1, "%s", delog_errmsg());
	cr_expect_gt(c.seq, 1);
	cr_expect_leq(c.seq, 600);
	delog_reader_close(r);
	delog_reader_close(r2);
	cr_assert_eq(delog_close(log), 0);
	unlink(path);
	rmdir(dir);
	free(dir);
}

Test(follow, durable_only, .timeout = 120)
{
	char *dir = t_mkdtemp("durable");
	char path[4200];
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 8u << 20 };
	struct delog_checkpoint c;
	const struct delog_item *items;
	delog_reader *r;
	delog *log;
	uint64_t seq = 0;

	snprintf(path, sizeof(path), "%s/log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
	cr_assert_eq(delog_reader_open(path, NULL, &r), 0, "%s", delog_errmsg());
	for (unsigned i = 0; i < 20; i++)
		cr_assert_eq(t_commit1(log, i, 100, 0, &seq, false), 0);
	cr_expect_eq(delog_reader_next(r, 300, &c, &items), 0,
		     "a checkpoint nobody forced was handed over (seq %llu)",
		     (unsigned long long)c.seq);
	cr_assert_eq(delog_force(log, seq), 0);
	cr_assert_eq(delog_reader_next(r, 5000, &c, &items), 1, "%s", delog_errmsg());
	cr_expect_eq(c.seq, seq);
	cr_expect_eq(c.nitems, 20);
	delog_reader_close(r);
	cr_assert_eq(delog_close(log), 0);
	unlink(path);
	rmdir(dir);
	free(dir);
}

/* Take checkpoints from @r, each the one after *@got (any first one when *@got is 0),
 * until *@got reaches @upto or a call does not return 1; that call's value. */
static int f_take(delog_reader *r, int timeout_ms, uint64_t *got, uint64_t upto)
{
	struct delog_checkpoint c;
	const struct delog_item *items;
	int rv = 1;

	while (*got < upto && (rv = delog_reader_next(r, timeout_ms, &c, &items)) == 1) {
		cr_assert(*got == 0 || c.seq == *got + 1, "checkpoint %llu after %llu",
			  (unsigned long long)c.seq, (unsigned long long)*got);
		*got = c.seq;
	}
	return rv;
}

/* The name of the page the writer of the log at @path publishes (publish.c). */
static void f_page_name(const char *path, char name[PUB_NAME_MAX])
{
	struct iol_dev_opts io = { .size = sizeof(io), .read_only = true };
	struct jrnl_sb_why why;
	struct jrnl_geom g;
	struct iol_dev *dev;

	cr_assert_eq(iol_dev_open(path, &io, &dev), 0);
	cr_assert_eq(jrnl_sb_read_why(dev, &g, &why), 0);
	iol_dev_close(dev);
	cr_assert_eq(pub_name(g.uuid, path, name), 0);
}

Test(follow, killed_writer, .timeout = 120)
{
	char *dir = t_mkdtemp("killed");
	char path[4200];
	uint64_t acked = 0, got = 0, a;
	delog_reader *r;
	int fds[2], st, rv;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/log", dir);
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct delog_options o = { .size = sizeof(o),
					   .flags = DELOG_OPEN_CREATE,
					   .create_size = 16u << 20 };
		unsigned char buf[200] = { 0 };
		delog *log;

		close(fds[0]);
		if (delog_open(path, &o, &log))
			_exit(2);
		for (uint64_t i = 0;; i++) {
			delog_tx *tx;
			uint64_t seq;

			if (delog_tx_begin(log, 0, 0, &tx) ||
			    delog_tx_log(tx, i, buf, sizeof(buf)) || delog_tx_commit(tx, &seq) ||
			    delog_force(log, seq))
				_exit(3);
			if (write(fds[1], &seq, sizeof(seq)) != sizeof(seq))
				_exit(4);
			if (i % 64 == 63 && seq > 1000)
				delog_release(log, seq - 1000);
		}
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], &acked, sizeof(acked)), sizeof(acked),
		     "the writer never acknowledged");
	cr_assert_eq(delog_reader_open(path, NULL, &r), 0, "%s", delog_errmsg());
	rv = f_take(r, 5000, &got, 300);
	cr_assert_eq(rv, 1, "next: %d %s", rv, delog_errmsg());
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	while (read(fds[0], &a, sizeof(a)) == sizeof(a))
		acked = a;
	close(fds[0]);
	/* everything acknowledged comes, then nothing more */
	rv = f_take(r, 1000, &got, UINT64_MAX);
	cr_assert_eq(rv, 0, "next: %s", delog_errmsg());
	cr_expect_geq(got, acked, "acknowledged %llu, the follower stopped at %llu",
		      (unsigned long long)acked, (unsigned long long)got);
	delog_reader_close(r);
	{
		struct delog_options o = { .size = sizeof(o), .flags = DELOG_OPEN_RDONLY };
		struct delog_recovery rec = { 0 };
		delog *log;

		o.recovery = &rec;
		cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
		cr_expect_leq(got, rec.last_seq, "handed over %llu, the log holds up to %llu",
			      (unsigned long long)got, (unsigned long long)rec.last_seq);
		delog_close(log);
	}
	{
		/* a killed writer leaves its page (PB3): the test removes it */
		char name[PUB_NAME_MAX];

		f_page_name(path, name);
		cr_expect_eq(shm_unlink(name), 0, "the killed writer's page: %s", strerror(errno));
	}
	unlink(path);
	rmdir(dir);
	free(dir);
}

/* The log's published page, mapped for writing (the test plays the writer's part). */
static struct pub_page *f_page(const char *path, int *fd)
{
	char name[PUB_NAME_MAX];
	void *p;

	f_page_name(path, name);
	*fd = shm_open(name, O_RDWR, 0);
	cr_assert_geq(*fd, 0, "no page %s: %s", name, strerror(errno));
	p = mmap(NULL, PUB_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	return p;
}

Test(follow, watermark_bounds, .timeout = 120)
{
	char *dir = t_mkdtemp("mark");
	char path[4200];
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 8u << 20 };
	struct delog_checkpoint c;
	const struct delog_item *items;
	struct pub_page *pg;
	delog_reader *r;
	uint64_t seq = 0, got = 0;
	delog *log;
	int fd, rv;

	snprintf(path, sizeof(path), "%s/log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
	for (unsigned i = 0; i < 30; i++)
		cr_assert_eq(t_commit1(log, i, 100, 0, &seq, true), 0);
	cr_assert_eq(seq, 30);
	pg = f_page(path, &fd);
	cr_expect_eq(atomic_load(&pg->state), PUB_OPEN);
	cr_expect_eq(atomic_load(&pg->durable_seq), 30);
	/* the writer, now idle, as if it had made only 20 durable */
	atomic_store(&pg->durable_seq, 20);
	cr_expect_eq(atomic_load(&pg->watchers), 0, "no follower yet: the writer writes nothing");
	cr_assert_eq(delog_reader_open(path, NULL, &r), 0, "%s", delog_errmsg());
	while ((rv = delog_reader_next(r, 300, &c, &items)) == 1)
		got = c.seq;
	cr_assert_eq(rv, 0, "%s", delog_errmsg());
	cr_expect_eq(got, 20, "the page says 20 are durable, the follower took %llu",
		     (unsigned long long)got);
	/* the writer moves on: the store, then the write that wakes followers (PB2) */
	atomic_store(&pg->durable_seq, 30);
	cr_assert_eq(pwrite(fd, "", 1, PUB_PAGE_BYTES - 1), 1);
	cr_assert_eq(delog_reader_next(r, 5000, &c, &items), 1, "%s", delog_errmsg());
	cr_expect_eq(c.seq, 21);
	while ((rv = delog_reader_next(r, 300, &c, &items)) == 1)
		got = c.seq;
	cr_expect_eq(got, 30);
	cr_expect_eq(atomic_load(&pg->watchers), 1, "the follower counted itself in (PB2)");
	delog_reader_close(r);
	cr_expect_eq(atomic_load(&pg->watchers), 0, "a closed follower counts itself out");
	cr_assert_eq(delog_close(log), 0);
	cr_expect_eq(atomic_load(&pg->state), PUB_CLOSED, "a clean close says so");
	munmap(pg, PUB_PAGE_BYTES);
	close(fd);
	/* a copy of the log file (same uuid) has a page of its own: its writer never
	 * speaks for the original */
	{
		char copy[4300], cmd[9000], n1[PUB_NAME_MAX], n2[PUB_NAME_MAX];
		uint8_t uuid[16] = { 1 };

		snprintf(copy, sizeof(copy), "%s.copy", path);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, copy);
		cr_assert_eq(system(cmd), 0);
		cr_assert_eq(pub_name(uuid, path, n1), 0);
		cr_assert_eq(pub_name(uuid, copy, n2), 0);
		cr_expect_str_neq(n1, n2);
		unlink(copy);
	}
	unlink(path);
	rmdir(dir);
	free(dir);
}

/* ---- power cuts (the sim disk) ---- */

struct f_pc {
	delog *log;
	struct iol_dev *dev;
	_Atomic uint64_t handed; /* the follower's last checkpoint */
	_Atomic unsigned cuts;   /* power cuts taken so far (the writer keeps pace) */
	_Atomic bool writer_done, follower_done;
	int follower_err;
};

static void *f_pc_writer(void *arg)
{
	struct f_pc *p = arg;
	unsigned char buf[1500];

	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t i = 0; i < 20000; i++) {
		delog_tx *tx;
		uint64_t seq;
		int err;

		while ((err = delog_tx_begin(p->log, 2 * (sizeof(buf) + 64), DELOG_TX_NOWAIT,
					     &tx)) == -EAGAIN) {
			uint64_t h = atomic_load(&p->handed), d = delog_durable_seq(p->log);

			if (h > 1)
				delog_release(p->log, h - 1 < d ? h - 1 : d);
			usleep(500);
		}
		cr_assert_eq(err, 0, "%s", delog_errmsg());
		cr_assert_eq(delog_tx_log(tx, i, buf, (uint32_t)(i % sizeof(buf))), 0);
		cr_assert_eq(delog_tx_commit(tx, &seq), 0);
		if (i % 4 == 0)
			cr_assert_eq(delog_force(p->log, seq), 0);
		/* a cut at least every 1,000 transactions, however slow cutting is (ASan) */
		while (i % 1000 == 999 && atomic_load(&p->cuts) < (i + 1) / 1000)
			usleep(500);
	}
	cr_assert_eq(delog_force(p->log, 0), 0);
	atomic_store(&p->writer_done, true);
	return NULL;
}

static void *f_pc_follower(void *arg)
{
	struct f_pc *p = arg;
	struct delog_checkpoint c;
	const struct delog_item *items;
	delog_reader *r;
	int rv;

	p->follower_err = engine_reader_open_dev(p->dev, p->log, 0, &r);
	if (p->follower_err) {
		atomic_store(&p->follower_done, true);
		return NULL;
	}
	for (;;) {
		rv = delog_reader_next(r, 20, &c, &items);
		if (rv < 0) {
			p->follower_err = rv;
			break;
		}
		if (rv == 1) {
			if (atomic_load(&p->handed) && c.seq != atomic_load(&p->handed) + 1) {
				p->follower_err = DELOG_ECORRUPT;
				break;
			}
			atomic_store(&p->handed, c.seq);
		} else if (atomic_load(&p->writer_done) &&
			   atomic_load(&p->handed) >= delog_durable_seq(p->log)) {
			break;
		}
	}
	delog_reader_close(r);
	atomic_store(&p->follower_done, true);
	return NULL;
}

static void f_power_cuts(enum delog_flush_policy policy)
{
	static const enum iol_sim_crash_profile profiles[] = { IOL_SIM_STRICT, IOL_SIM_GARBLE,
							       IOL_SIM_VERSIONS };
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NVME, 77 + policy, NULL);
	struct delog_options o = t_opts(policy);
	uint64_t bytes = iol_dev_geom(dev)->size_bytes;
	unsigned char *img = malloc(bytes);
	struct f_pc p = { .dev = dev };
	pthread_t tw, tf;
	unsigned cuts = 0;

	cr_assert_not_null(img);
	o.create_size = 8 * T_MiB;
	p.log = t_open_dev(dev, &o);
	cr_assert_eq(pthread_create(&tw, NULL, f_pc_writer, &p), 0);
	cr_assert_eq(pthread_create(&tf, NULL, f_pc_follower, &p), 0);
	while (!atomic_load(&p.follower_done)) {
		uint64_t h = atomic_load(&p.handed); /* before the cut: durable by then */
		struct delog_options ro = { .size = sizeof(ro), .flags = DELOG_OPEN_RDONLY };
		struct delog_recovery rec = { 0 };
		struct iol_dev *cut;
		delog *log;
		int err;

		err = iol_sim_crash(dev, 1000 + cuts, profiles[cuts % 3], img, NULL);
		cr_assert_eq(err, 0, "iol_sim_crash: %s", delog_strerror(err));
		cut = t_sim(bytes, IOL_SIM_LAT_NONE, cuts, img);
		ro.recovery = &rec;
		err = engine_open_dev(cut, &ro, &log);
		cr_assert_eq(err, 0, "cut %u: %s: %s", cuts, delog_strerror(err), delog_errmsg());
		cr_assert_geq(rec.last_seq, h,
			      "cut %u (%s policy): the follower had handed over %llu, the image "
			      "recovers to %llu",
			      cuts, delog_flush_policy_name(policy), (unsigned long long)h,
			      (unsigned long long)rec.last_seq);
		delog_close(log);
		iol_dev_close(cut);
		cuts++;
		atomic_store(&p.cuts, cuts);
	}
	pthread_join(tw, NULL);
	pthread_join(tf, NULL);
	cr_assert_eq(p.follower_err, 0, "follower: %s", delog_strerror(p.follower_err));
	cr_expect_geq(cuts, 20, "only %u power cuts while the follower ran", cuts);
	cr_expect_eq(atomic_load(&p.handed), delog_durable_seq(p.log));
	cr_assert_eq(delog_close(p.log), 0);
	iol_dev_close(dev);
	free(img);
}

Test(follow, power_cuts_sync, .timeout = 300)
{
	f_power_cuts(DELOG_FLUSH_SYNC);
}

Test(follow, power_cuts_async, .timeout = 300)
{
	f_power_cuts(DELOG_FLUSH_ASYNC);
}

Test(follow, power_cuts_single, .timeout = 300)
{
	f_power_cuts(DELOG_FLUSH_SINGLE);
}

/* Writers come and go while one follower follows: the page of a cleanly closed writer is
 * gone (publish.c PB3), the next writer's is a new one that the follower maps (reader.c),
 * including while it is being created (no SIGBUS on a page without its size yet). */
Test(follow, writers_come_and_go, .timeout = 120)
{
	char *dir = t_mkdtemp("sessions");
	char path[4200], name[PUB_NAME_MAX];
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 8u << 20 };
	delog_reader *r;
	uint64_t seq = 0, got = 0;
	delog *log;

	snprintf(path, sizeof(path), "%s/log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
	cr_assert_eq(delog_close(log), 0);
	cr_assert_eq(delog_reader_open(path, NULL, &r), 0, "%s", delog_errmsg());
	for (unsigned session = 0; session < 6; session++) {
		cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
		for (unsigned i = 0; i < 20; i++)
			cr_assert_eq(t_commit1(log, i, session, 0, &seq, true), 0);
		/* half the sessions end while the follower waits, half before it looks */
		if (session % 2)
			cr_assert_eq(f_take(r, 5000, &got, seq), 1, "session %u: %s", session,
				     delog_errmsg());
		cr_assert_eq(delog_close(log), 0);
	}
	cr_assert_eq(f_take(r, 5000, &got, seq), 1, "%s", delog_errmsg());
	cr_expect_eq(got, 120);
	f_page_name(path, name);
	cr_expect_eq(shm_open(name, O_RDONLY, 0), -1, "a clean close left its page");
	delog_reader_close(r);
	unlink(path);
	rmdir(dir);
	free(dir);
}

/* (RD4) A writer that an I/O error shuts down: the follower gets every checkpoint it had
 * made durable, then DELOG_ESHUTDOWN; the page stays (publish.c PB3) until the next
 * writer, and the test removes it. */
Test(follow, writer_shut_down, .timeout = 120)
{
	char *dir = t_mkdtemp("shut");
	char path[4200], name[PUB_NAME_MAX];
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 8u << 20 };
	struct iol_fault f = { .op = IOL_OP_WRITE, .nth = 1, .persistent = true, .err = -EIO };
	uint64_t seq = 0, got = 0, durable;
	delog_reader *r;
	delog *log;
	int rv;

	snprintf(path, sizeof(path), "%s/log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0, "%s", delog_errmsg());
	for (unsigned i = 0; i < 10; i++)
		cr_assert_eq(t_commit1(log, i, 1, 0, &seq, true), 0);
	cr_assert_eq(delog_reader_open(path, NULL, &r), 0, "%s", delog_errmsg());
	cr_assert_eq(iol_dev_fault_add(engine_dev(log), &f), 0);
	cr_assert_neq(t_commit1(log, 99, 1, 0, &seq, true), 0, "a force through a failing write");
	cr_assert_neq(delog_error(log), 0);
	durable = delog_durable_seq(log);
	rv = f_take(r, 5000, &got, UINT64_MAX);
	cr_expect_eq(rv, DELOG_ESHUTDOWN, "next: %d %s", rv, delog_errmsg());
	cr_expect_eq(got, durable, "handed over %llu, the writer had %llu durable",
		     (unsigned long long)got, (unsigned long long)durable);
	cr_expect_not_null(strstr(delog_errmsg(), "shut down"), "%s", delog_errmsg());
	delog_reader_close(r);
	delog_close(log);
	f_page_name(path, name);
	cr_expect_eq(shm_unlink(name), 0, "the shut-down writer's page: %s", strerror(errno));
	unlink(path);
	rmdir(dir);
	free(dir);
}
