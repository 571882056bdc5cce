/*
 * open.c - delog_open beyond the ordinary open: a read-only open (DELOG_OPEN_RDONLY),
 * and what a failed open says (struct delog_error_info).
 *
 * What it proves:
 *  - rdonly: a crashed log (sim disk) opened read-only hands over the same checkpoints and
 *    the same delog_recovery as a writing open, and neither the open nor the close writes
 *    or flushes the device (its counters do not move, nothing at all); the handle answers
 *    delog_durable_seq, delog_durable_fd, delog_error and delog_stats, and refuses
 *    delog_tx_begin, delog_force (any sequence), delog_release and delog_item_written
 *    with DELOG_ERDONLY; a writing open of the same image afterwards does write (so the
 *    counters would have seen it);
 *  - rdonly options: with CREATE or FORMAT, or on the "sim" backend, -EINVAL; a missing
 *    path -ENOENT, and nothing is created;
 *  - rdonly on a file: a log a killed writer left (not cleanly closed) is opened
 *    read-only through the real backends: the same checkpoints, its device opened
 *    without a write or flush, and the file byte for byte as it was after close;
 *  - rdonly on a read-only mount (a bind mount remounted ro in a private mount
 *    namespace; skipped where the kernel refuses): a writing open fails -EROFS, a
 *    read-only one recovers the log.
 *
 * The file tests kill no process: a child opens the log, commits and forces, and exits
 * without delog_close, which leaves what a crash of the process leaves (O_DIRECT writes
 * are on the device, no unmount record).
 */
#include "helpers.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define T_LOG (4 * T_MiB) /* the smallest log: a file of DELOG_SB_BYTES + 4 MiB */

/* ---- helpers ---- */

static struct iol_counters t_counters(struct iol_dev *dev)
{
	struct iol_counters c;

	iol_dev_counters(dev, &c);
	return c;
}

/* Every call that would write fails DELOG_ERDONLY; the reading ones work. */
static void t_rdonly_refusals(delog *log, uint64_t last_seq)
{
	struct delog_stats st = { .size = sizeof(st) };
	delog_tx *tx = (delog_tx *)0x1;

	cr_expect_eq(delog_tx_begin(log, T_RES(1), 0, &tx), DELOG_ERDONLY);
	cr_expect_null(tx, "*tx must be NULL after a refused begin");
	cr_expect_eq(delog_tx_begin(log, T_RES(1), DELOG_TX_NOWAIT, &tx), DELOG_ERDONLY);
	cr_expect_eq(delog_force(log, 0), DELOG_ERDONLY);
	cr_expect_eq(delog_force(log, last_seq), DELOG_ERDONLY);
	cr_expect_eq(delog_release(log, last_seq), DELOG_ERDONLY);
	cr_expect_eq(delog_item_written(log, 1, last_seq), DELOG_ERDONLY);
	cr_expect_eq(delog_durable_seq(log), last_seq);
	cr_expect_geq(delog_durable_fd(log), 0);
	cr_expect_eq(delog_error(log), 0);
	cr_assert_eq(delog_stats(log, &st), 0);
	cr_expect_eq(st.durable_seq, last_seq);
	cr_expect_eq(st.records, 0);
	cr_expect_eq(st.flushes, 0);
}

/* ---- read-only open on the sim disk ---- */

Test(open, rdonly_writes_nothing, .timeout = 60)
{
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NONE, 7, NULL), *img;
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	struct delog_recovery r_ro, r_rw;
	struct iol_counters c0, c1;
	struct coll ro = { 0 }, rw = { 0 };
	uint64_t seq;
	delog *log = t_open_dev(dev, &o);

	for (int i = 0; i < 20; i++)
		cr_assert_eq(t_commit1(log, 100 + i, i, 1, &seq, i % 4 == 3), 0);
	cr_assert_eq(delog_force(log, 0), 0);
	/* Commits after the last force: in flight or in the cache when the power goes. */
	for (int i = 0; i < 5; i++)
		cr_assert_eq(t_commit1(log, 200 + i, i, 2, NULL, false), 0);
	img = t_crash_copy(dev, 8, NULL);
	cr_assert_eq(delog_close(log), 0);

	o.flags = DELOG_OPEN_RDONLY | DELOG_OPEN_TRACK_ITEMS;
	c0 = t_counters(img);
	log = t_reopen(img, o, &ro, &r_ro);
	cr_assert_eq(ro.bad, 0, "%s", ro.why);
	cr_expect_eq(r_ro.clean, 0, "a crashed log is not clean");
	cr_expect_geq(r_ro.last_seq, seq);
	cr_expect_eq(r_ro.checkpoints, ro.nck);
	t_rdonly_refusals(log, r_ro.last_seq);
	cr_assert_eq(delog_close(log), 0);
	c1 = t_counters(img);
	cr_expect_eq(c1.writes, c0.writes, "a read-only open and close wrote %llu times",
		     (unsigned long long)(c1.writes - c0.writes));
	cr_expect_eq(c1.bytes_written, c0.bytes_written);
	cr_expect_eq(c1.flushes, c0.flushes);
	cr_expect_eq(c1.preflushes, c0.preflushes);
	cr_expect_eq(c1.fua_writes, c0.fua_writes);
	cr_expect_eq(c1.dev_flushes, c0.dev_flushes);
	cr_expect_gt(c1.reads, c0.reads, "recovery read the log");

	/* Twice: the first read-only open left nothing that changes the second's view. */
	log = t_reopen(img, o, &rw, &r_rw);
	cr_assert_eq(delog_close(log), 0);
	cr_expect_eq(r_rw.checkpoints, r_ro.checkpoints);
	cr_expect_eq(r_rw.head_lsn, r_ro.head_lsn);
	cr_expect_eq(r_rw.torn_bytes, r_ro.torn_bytes);
	coll_free(&rw);

	/* A writing open of the same image: the same checkpoints and report ... */
	o.flags = 0;
	log = t_reopen(img, o, &rw, &r_rw);
	cr_assert_eq(rw.bad, 0, "%s", rw.why);
	cr_expect_eq(rw.nck, ro.nck);
	cr_expect_eq(rw.n, ro.n);
	for (size_t i = 0; i < ro.n && i < rw.n; i++) {
		cr_expect_eq(rw.v[i].seq, ro.v[i].seq);
		cr_expect_eq(rw.v[i].key, ro.v[i].key);
		cr_expect_eq(rw.v[i].a, ro.v[i].a);
	}
	cr_expect_eq(r_rw.clean, r_ro.clean);
	cr_expect_eq(r_rw.checkpoints, r_ro.checkpoints);
	cr_expect_eq(r_rw.items, r_ro.items);
	cr_expect_eq(r_rw.bytes, r_ro.bytes);
	cr_expect_eq(r_rw.dropped, r_ro.dropped);
	cr_expect_eq(r_rw.torn_bytes, r_ro.torn_bytes);
	cr_expect_eq(r_rw.last_seq, r_ro.last_seq);
	cr_expect_eq(r_rw.head_lsn, r_ro.head_lsn);
	cr_expect_eq(r_rw.tail_lsn, r_ro.tail_lsn);
	cr_assert_eq(delog_close(log), 0);
	/* ... which does write (its unmount record at least): the counters would see it. */
	cr_expect_gt(t_counters(img).writes, c1.writes);
	coll_free(&ro);
	coll_free(&rw);
	iol_dev_close(img);
	iol_dev_close(dev);
}

Test(open, rdonly_options, .timeout = 60)
{
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NONE, 9, NULL);
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	char *dir = t_mkdtemp("rdonly-opts"), path[4200];
	delog *log = t_open_dev(dev, &o);
	struct stat st;

	cr_assert_eq(delog_close(log), 0);
	log = (delog *)0x1;
	o.flags = DELOG_OPEN_RDONLY | DELOG_OPEN_CREATE;
	cr_expect_eq(engine_open_dev(dev, &o, &log), -EINVAL, "RDONLY with CREATE");
	cr_expect_null(log);
	o.flags = DELOG_OPEN_RDONLY | DELOG_OPEN_FORMAT;
	cr_expect_eq(engine_open_dev(dev, &o, &log), -EINVAL, "RDONLY with FORMAT");
	o.flags = DELOG_OPEN_RDONLY;
	o.backend = "sim";
	cr_expect_eq(delog_open(NULL, &o, &log), -EINVAL, "RDONLY on a new sim disk");
	o.backend = NULL;
	snprintf(path, sizeof(path), "%s/missing.log", dir);
	cr_expect_eq(delog_open(path, &o, &log), -ENOENT);
	cr_expect_null(log);
	cr_expect_neq(stat(path, &st), 0, "a read-only open created %s", path);
	o.flags = DELOG_OPEN_RDONLY;
	log = t_open_dev(dev, &o);
	cr_expect_eq(delog_close(log), 0);
	rmdir(dir);
	free(dir);
	iol_dev_close(dev);
}

/* ---- read-only open of a file ---- */

/* A log of @n forced checkpoints at @path, left as a killed writer leaves it: a child
 * process creates it, commits and forces, and exits without delog_close.  False when
 * @backend is built but not usable here. */
static bool t_killed_writer(const char *path, int n, const char *backend)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		struct delog_options o = { .size = sizeof(o),
					   .backend = backend,
					   .flags = DELOG_OPEN_CREATE,
					   .create_size = T_LOG };
		delog *log;
		int err = delog_open(path, &o, &log);

		if (err)
			_exit(err == -ENODEV || err == -ENOSYS ? 4 : 2);
		for (int i = 0; i < n; i++)
			if (t_commit1(log, 300 + (uint64_t)i, (uint64_t)i, 3, NULL, true))
				_exit(3);
		_exit(0); /* no delog_close: no unmount record */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
		unlink(path);
		return false;
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer child: status %#x",
		  status);
	return true;
}

static void *t_slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;

	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

Test(open, rdonly_file_unchanged, .timeout = 120)
{
	const char *const *names = iol_backend_names();
	char *dir = t_mkdtemp("rdonly-file"), path[4200];

	snprintf(path, sizeof(path), "%s/crashed.log", dir);
	for (size_t b = 0; names[b]; b++) {
		struct delog_options o = { .size = sizeof(o),
					   .backend = names[b],
					   .flags = DELOG_OPEN_RDONLY };
		struct delog_recovery rec;
		struct iol_counters c;
		struct coll col = { 0 };
		size_t n0, n1;
		void *before, *after;
		delog *log;
		int err;

		if (!strcmp(names[b], "sim"))
			continue;
		unlink(path);
		if (!t_killed_writer(path, 12, names[b]))
			continue; /* built, not usable here */
		before = t_slurp(path, &n0);
		o.recover = coll_cb;
		o.recover_arg = &col;
		o.recovery = &rec;
		err = delog_open(path, &o, &log);
		cr_assert_eq(err, 0, "%s: read-only open: %s", names[b], delog_strerror(err));
		cr_assert_eq(col.bad, 0, "%s", col.why);
		cr_expect_eq(col.nck, 12, "%s: %llu checkpoints", names[b],
			     (unsigned long long)col.nck);
		cr_expect_eq(rec.clean, 0);
		cr_expect_eq(rec.last_seq, col.last_seq);
		t_rdonly_refusals(log, rec.last_seq);
		c = t_counters(engine_dev(log));
		cr_expect_eq(c.writes, 0, "%s: %llu writes", names[b],
			     (unsigned long long)c.writes);
		cr_expect_eq(c.flushes + c.dev_flushes, 0, "%s: flushes", names[b]);
		cr_assert_eq(delog_close(log), 0);
		after = t_slurp(path, &n1);
		cr_expect(n0 == n1 && !memcmp(before, after, n0),
			  "%s: a read-only open and close changed the file", names[b]);
		free(after);

		/* A writing open of it does change it (stamping, the unmount record). */
		o.flags = 0;
		o.recover = NULL;
		cr_assert_eq(delog_open(path, &o, &log), 0);
		cr_assert_eq(delog_close(log), 0);
		after = t_slurp(path, &n1);
		cr_expect(n0 != n1 || memcmp(before, after, n0) != 0,
			  "%s: the writing open left the file as it was: the check above proves "
			  "nothing",
			  names[b]);
		free(after);
		free(before);
		coll_free(&col);
	}
	unlink(path);
	rmdir(dir);
	free(dir);
}

/* ---- read-only open on a read-only mount ---- */

static char ro_mnt[4200];

static void ro_cleanup(void)
{
	if (ro_mnt[0]) {
		umount2(ro_mnt, MNT_DETACH);
		rmdir(ro_mnt);
	}
}

Test(open, rdonly_on_readonly_mount, .timeout = 120, .fini = ro_cleanup)
{
	struct delog_options o = { .size = sizeof(o) };
	char *dir = t_mkdtemp("rdonly-mnt"), path[4300], rpath[4300];
	struct delog_recovery rec;
	struct coll col = { 0 };
	delog *log = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/crashed.log", dir);
	cr_assert(t_killed_writer(path, 9, NULL));
	snprintf(ro_mnt, sizeof(ro_mnt), "%s-ro", dir);
	cr_assert_eq(mkdir(ro_mnt, 0700), 0, "mkdir %s: %s", ro_mnt, strerror(errno));
	/* A private mount namespace (this test's process only), a bind mount of the
	 * directory, remounted read-only. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(dir, ro_mnt, NULL, MS_BIND, NULL) ||
	    mount(NULL, ro_mnt, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL)) {
		err = errno;
		unlink(path);
		rmdir(dir);
		free(dir);
		cr_skip_test("no read-only bind mount here (%s): not root, or no mount "
			     "namespaces", strerror(err));
	}
	snprintf(rpath, sizeof(rpath), "%s/crashed.log", ro_mnt);
	err = delog_open(rpath, &o, &log);
	cr_expect_eq(err, -EROFS, "a writing open on a read-only mount: %s",
		     delog_strerror(err));
	if (!err)
		delog_close(log);
	o.flags = DELOG_OPEN_RDONLY;
	o.recover = coll_cb;
	o.recover_arg = &col;
	o.recovery = &rec;
	err = delog_open(rpath, &o, &log);
	cr_assert_eq(err, 0, "read-only open on a read-only mount: %s", delog_strerror(err));
	cr_assert_eq(col.bad, 0, "%s", col.why);
	cr_expect_eq(col.nck, 9);
	cr_expect_eq(rec.clean, 0);
	t_rdonly_refusals(log, rec.last_seq);
	cr_expect_eq(delog_close(log), 0);
	coll_free(&col);
	ro_cleanup();
	ro_mnt[0] = 0;
	unlink(path);
	rmdir(dir);
	free(dir);
}
