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
 *    namespace; skipped where the kernel refuses): a writing open fails -EROFS, its
 *    error info naming DELOG_OPEN_RDONLY, and a read-only one recovers the log;
 *  - error info, damage in a record: a log whose first record (behind the durable
 *    point) has a flipped byte fails DELOG_ECHECKSUM with the record's byte offset and
 *    LSN, field "rec.crc" and a message, and leaves delog_recovery unwritten;
 *  - error info, superblock: version 0 (CRC fixed up) is DELOG_ECORRUPT at offset 8,
 *    field "sb.version", the message naming version 0, and delog_strerror's text for it
 *    names no torn-write window; a wrong magic is DELOG_ENOTLOG at 0, "sb.magic"; an
 *    all-zero superblock area says so;
 *  - error info, tmpfs (/dev/shm; skipped if it is not tmpfs): creating or opening a log
 *    there fails DELOG_ENODIRECT (not -EINVAL), the message names tmpfs, and a file the
 *    open created is gone;
 *  - error info, the rest: a bad option names the option, a missing file its path, a
 *    recover callback's value says so; a successful open leaves code 0 and nothing else
 *    (whatever was there before); a too small error info is -EINVAL and not written;
 *  - a point in time (recover_to): a read-only open with recover_to 6 of a log of ten
 *    checkpoints hands over 1..6, delog_recovery says 6 replayed and 4 held back, and
 *    delog_durable_seq is 6; recover_to 0 and 50 hand over all ten; a writing open with
 *    recover_to is -EINVAL naming the option and DELOG_OPEN_RDONLY; damage after the
 *    point still fails the open (no callback), at the damaged record; an options struct
 *    of the header before recover_to gets its delog_recovery written up to its old end
 *    only.
 *
 * The file tests kill no process: a child opens the log, commits and forces, and exits
 * without delog_close, which leaves what a crash of the process leaves (O_DIRECT writes
 * are on the device, no unmount record).
 */
#include "helpers.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "jrnl.h"

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
	cr_expect_not_null(strstr(delog_errmsg(), "DELOG_OPEN_RDONLY"), "'%s'", delog_errmsg());
	cr_expect_eq(delog_force_nowait(log, 0), DELOG_ERDONLY);
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
	struct delog_error_info ei = { .size = sizeof(ei) };
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
			     "namespaces",
			     strerror(err));
	}
	snprintf(rpath, sizeof(rpath), "%s/crashed.log", ro_mnt);
	o.error = &ei;
	err = delog_open(rpath, &o, &log);
	cr_expect_eq(err, -EROFS, "a writing open on a read-only mount: %s", delog_strerror(err));
	if (!err)
		delog_close(log);
	cr_expect_eq(ei.code, -EROFS);
	cr_expect_not_null(strstr(ei.message, "DELOG_OPEN_RDONLY"), "'%s'", ei.message);
	cr_expect_not_null(strstr(ei.message, rpath), "'%s'", ei.message);
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

/* ---- what a failed open says ---- */

/* A filled-in error info that delog_open must overwrite or clear. */
static struct delog_error_info t_ei_garbage(void)
{
	struct delog_error_info ei;

	memset(&ei, 0x5a, sizeof(ei));
	ei.size = sizeof(ei);
	ei.field[sizeof(ei.field) - 1] = 0;
	ei.message[sizeof(ei.message) - 1] = 0;
	return ei;
}

/* A cleanly closed log of a few checkpoints on a new 16 MiB sim disk. */
static struct iol_dev *t_small_log(uint64_t seed)
{
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NONE, seed, NULL);
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	delog *log = t_open_dev(dev, &o);

	for (int i = 0; i < 6; i++)
		cr_assert_eq(t_commit1(log, 10 + i, i, 0, NULL, true), 0);
	cr_assert_eq(delog_close(log), 0);
	return dev;
}

static void t_rw(struct iol_dev *dev, bool write, uint64_t off, void *buf, size_t len)
{
	int err = iol_rw_wait(dev, IOL_OPF(write ? IOL_OP_WRITE : IOL_OP_READ, 0), off, buf, len,
			      NULL);

	cr_assert_eq(err, 0, "%s at %llu: %s", write ? "write" : "read", (unsigned long long)off,
		     delog_strerror(err));
}

/* Open @dev (no create) with an error info and a recovery report that must stay as it
 * was; returns the open's value. */
static int t_open_fails(struct iol_dev *dev, struct delog_error_info *ei)
{
	struct delog_options o = { .size = sizeof(o), .error = ei };
	struct delog_recovery rec, ref;
	delog *log = (delog *)0x1;
	int err;

	memset(&rec, 0xa7, sizeof(rec));
	ref = rec;
	o.recovery = &rec;
	err = engine_open_dev(dev, &o, &log);
	cr_assert_neq(err, 0, "a damaged log opened");
	cr_expect_null(log);
	cr_expect_eq(memcmp(&rec, &ref, sizeof(rec)), 0, "a failed open wrote delog_recovery");
	cr_expect_eq(ei->size, sizeof(*ei), "size must stay as the caller set it");
	cr_expect_eq(ei->code, err);
	return err;
}

Test(open, error_info_flipped_record, .timeout = 60)
{
	struct iol_dev *dev = t_small_log(21);
	struct delog_error_info ei = t_ei_garbage();
	const uint64_t rec0 = DELOG_SB_BYTES; /* the first record: log sector 0, lsn 1/0 */
	unsigned char *sec = iol_buf_alloc(dev, 4096);
	uint32_t h, p;

	cr_assert_not_null(sec);
	t_rw(dev, false, rec0, sec, 4096);
	memcpy(&h, sec + 56, sizeof(h)); /* struct jrnl_rec: hdr_sectors, payload_sectors */
	memcpy(&p, sec + 60, sizeof(p));
	cr_assert(h >= 1 && p >= 1 && h + p < 64, "record at the log start: H %u P %u", h, p);
	/* A byte of its last sector (the journal's crc_flip test), behind the durable
	 * point: later records vouch for it, so this is corruption, not a torn write. */
	t_rw(dev, false, rec0 + (uint64_t)(h + p - 1) * 4096, sec, 4096);
	sec[100] ^= 0x40;
	t_rw(dev, true, rec0 + (uint64_t)(h + p - 1) * 4096, sec, 4096);

	cr_assert_eq(t_open_fails(dev, &ei), DELOG_ECHECKSUM);
	cr_expect_eq(ei.offset, rec0, "offset %llu", (unsigned long long)ei.offset);
	cr_expect_eq(ei.lsn, 1ull << 32, "lsn %#llx", (unsigned long long)ei.lsn);
	cr_expect_str_eq(ei.field, "rec.crc");
	cr_expect_not_null(strstr(ei.message, "CRC"), "'%s'", ei.message);
	free(sec);
	iol_dev_close(dev);
}

/* Rewrite the superblock of @dev with @edit applied (and its CRC fixed up if @fix). */
static void t_sb_edit(struct iol_dev *dev, size_t off, const void *val, size_t len, bool fix)
{
	unsigned char *sb = iol_buf_alloc(dev, DELOG_SB_BYTES);
	uint32_t crc;

	cr_assert_not_null(sb);
	t_rw(dev, false, 0, sb, DELOG_SB_BYTES);
	memcpy(sb + off, val, len);
	if (fix) {
		crc = jrnl_crc32c(0, sb, 508); /* struct jrnl_sb: crc at 508 over 0-507 */
		memcpy(sb + 508, &crc, sizeof(crc));
	}
	t_rw(dev, true, 0, sb, DELOG_SB_BYTES);
	free(sb);
}

Test(open, error_info_superblock, .timeout = 60)
{
	struct iol_dev *dev = t_small_log(22);
	struct delog_error_info ei = t_ei_garbage();
	const uint32_t v0 = 0;
	const uint64_t magic = 0x0123456789abcdefull;
	unsigned char *zero;

	t_sb_edit(dev, 8, &v0, sizeof(v0), true); /* version */
	cr_assert_eq(t_open_fails(dev, &ei), DELOG_ECORRUPT);
	cr_expect_eq(ei.offset, 8);
	cr_expect_eq(ei.lsn, 0);
	cr_expect_str_eq(ei.field, "sb.version");
	cr_expect_not_null(strstr(ei.message, "version 0"), "'%s'", ei.message);
	cr_expect_null(strstr(delog_strerror(ei.code), "torn-write"), "%s",
		       delog_strerror(ei.code));

	ei = t_ei_garbage();
	t_sb_edit(dev, 0, &magic, sizeof(magic), true);
	cr_assert_eq(t_open_fails(dev, &ei), DELOG_ENOTLOG);
	cr_expect_eq(ei.offset, 0);
	cr_expect_str_eq(ei.field, "sb.magic");
	cr_expect_not_null(strstr(ei.message, "magic"), "'%s'", ei.message);

	ei = t_ei_garbage();
	zero = calloc(1, DELOG_SB_BYTES);
	cr_assert_not_null(zero);
	t_sb_edit(dev, 0, zero, DELOG_SB_BYTES, false);
	free(zero);
	cr_assert_eq(t_open_fails(dev, &ei), DELOG_ENOTLOG);
	cr_expect_not_null(strstr(ei.message, "zero"), "'%s'", ei.message);
	iol_dev_close(dev);
}

Test(open, error_info_tmpfs, .timeout = 60)
{
	struct delog_error_info ei = t_ei_garbage();
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = T_LOG,
				   .error = &ei };
	struct statfs sfs;
	char path[128];
	struct stat st;
	delog *log = NULL;
	int err, fd;

	if (statfs("/dev/shm", &sfs) || sfs.f_type != TMPFS_MAGIC)
		cr_skip_test("/dev/shm is not tmpfs here");
	snprintf(path, sizeof(path), "/dev/shm/delog-open-%ld.log", (long)getpid());
	unlink(path);
	err = delog_open(path, &o, &log);
	if (!err)
		delog_close(log);
	cr_expect_eq(err, DELOG_ENODIRECT, "create on tmpfs: %s", delog_strerror(err));
	cr_expect_eq(ei.code, err);
	cr_expect_not_null(strstr(ei.message, "tmpfs"), "'%s'", ei.message);
	cr_expect_not_null(strstr(ei.message, path), "'%s'", ei.message);
	cr_expect_neq(stat(path, &st), 0, "the failed create left %s behind", path);
	cr_expect_not_null(strstr(delog_strerror(DELOG_ENODIRECT), "tmpfs"));
	cr_expect_null(strstr(delog_strerror(err), "misaligned"));

	/* An existing file there, with and without DELOG_OPEN_RDONLY. */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(ftruncate(fd, DELOG_SB_BYTES + T_LOG), 0);
	close(fd);
	for (int ro = 0; ro < 2; ro++) {
		ei = t_ei_garbage();
		o.flags = ro ? DELOG_OPEN_RDONLY : 0;
		err = delog_open(path, &o, &log);
		if (!err)
			delog_close(log);
		cr_expect_eq(err, DELOG_ENODIRECT, "%s open on tmpfs: %s",
			     ro ? "read-only" : "writing", delog_strerror(err));
		cr_expect_not_null(strstr(ei.message, "tmpfs"), "'%s'", ei.message);
	}
	unlink(path);
}

static int t_refuse_third(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
			  size_t n)
{
	unsigned *calls = arg;

	(void)ck;
	(void)it;
	(void)n;
	return ++*calls == 3 ? 4242 : 0;
}

Test(open, error_info_options_and_success, .timeout = 60)
{
	struct iol_dev *dev = t_small_log(23);
	struct delog_error_info ei = t_ei_garbage(), small;
	struct delog_options o = { .size = sizeof(o), .error = &ei };
	char *dir = t_mkdtemp("errinfo"), path[4200];
	unsigned calls = 0;
	delog *log = NULL;

	o.logbufs = 9;
	cr_expect_eq(engine_open_dev(dev, &o, &log), -EINVAL);
	cr_expect_eq(ei.code, -EINVAL);
	cr_expect_not_null(strstr(ei.message, "logbufs 9"), "'%s'", ei.message);
	cr_expect_str_eq(ei.field, "");

	ei = t_ei_garbage();
	o = (struct delog_options){ .size = sizeof(o), .error = &ei };
	snprintf(path, sizeof(path), "%s/missing.log", dir);
	cr_expect_eq(delog_open(path, &o, &log), -ENOENT);
	cr_expect_eq(ei.code, -ENOENT);
	cr_expect_not_null(strstr(ei.message, path), "'%s'", ei.message);

	ei = t_ei_garbage();
	o.recover = t_refuse_third;
	o.recover_arg = &calls;
	cr_expect_eq(engine_open_dev(dev, &o, &log), 4242);
	cr_expect_eq(ei.code, 4242);
	cr_expect_not_null(strstr(ei.message, "recover callback"), "'%s'", ei.message);

	/* Success: code 0 and nothing else, whatever the struct held. */
	ei = t_ei_garbage();
	o.recover = NULL;
	cr_assert_eq(engine_open_dev(dev, &o, &log), 0);
	cr_expect_eq(ei.size, sizeof(ei));
	cr_expect_eq(ei.code, 0);
	cr_expect_eq(ei.offset, 0);
	cr_expect_eq(ei.lsn, 0);
	cr_expect_str_eq(ei.field, "");
	cr_expect_str_eq(ei.message, "");
	cr_assert_eq(delog_close(log), 0);

	/* A later header's larger struct: its unknown members zero are their defaults;
	 * one of them set is refused, naming the size. */
	{
		struct {
			struct delog_options o;
			uint64_t later[4];
		} big;

		memset(&big, 0, sizeof(big));
		big.o.size = sizeof(big);
		big.o.error = &ei;
		cr_assert_eq(engine_open_dev(dev, &big.o, &log), 0);
		cr_assert_eq(delog_close(log), 0);
		big.later[2] = 1;
		ei = t_ei_garbage();
		cr_expect_eq(engine_open_dev(dev, &big.o, &log), -EINVAL);
		cr_expect_eq(ei.code, -EINVAL);
		cr_expect_not_null(strstr(ei.message, "delog_options.size"), "'%s'", ei.message);
	}

	/* Too small to hold this library's members: refused, and left as it was. */
	memset(&small, 0x33, sizeof(small));
	small.size = offsetof(struct delog_error_info, message);
	o.error = &small;
	cr_expect_eq(engine_open_dev(dev, &o, &log), -EINVAL);
	cr_expect_eq(small.code, 0x33333333, "a too small error info was written");
	rmdir(dir);
	free(dir);
	iol_dev_close(dev);
}

/* ---- a point in time (delog_options.recover_to) ---- */

/* Byte offset of record @k (0-based) of @dev's log, written from the log's start. */
static uint64_t t_record_off(struct iol_dev *dev, unsigned k)
{
	unsigned char *sec = iol_buf_alloc(dev, 4096);
	uint64_t off = DELOG_SB_BYTES;
	uint32_t h, p;

	cr_assert_not_null(sec);
	for (unsigned i = 0; i < k; i++) {
		t_rw(dev, false, off, sec, 4096);
		memcpy(&h, sec + 56, sizeof(h)); /* struct jrnl_rec: hdr_sectors, payload_sectors */
		memcpy(&p, sec + 60, sizeof(p));
		cr_assert(h >= 1 && h + p < 64, "record %u at %llu: H %u P %u", i,
			  (unsigned long long)off, h, p);
		off += (uint64_t)(h + p) * 4096;
	}
	free(sec);
	return off;
}

/* Ten forced checkpoints of one item each (keys 10.., a = 0..9), closed cleanly. */
static struct iol_dev *t_ten_log(uint64_t seed)
{
	struct iol_dev *dev = t_sim(16 * T_MiB, IOL_SIM_LAT_NONE, seed, NULL);
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	delog *log = t_open_dev(dev, &o);
	uint64_t seq;

	for (int i = 0; i < 10; i++) {
		cr_assert_eq(t_commit1(log, 10 + i, i, 0, &seq, true), 0);
		cr_assert_eq(seq, (uint64_t)i + 1);
	}
	cr_assert_eq(delog_close(log), 0);
	return dev;
}

/*
 * recover_to N on a read-only open hands over checkpoints 1..N, says how many it held
 * back, and the handle's durable sequence is N; 0 and N beyond the log hand over all.
 */
Test(open, recover_to_point_in_time, .timeout = 60)
{
	struct iol_dev *dev = t_ten_log(31);
	struct delog_options o = { .size = sizeof(o), .flags = DELOG_OPEN_RDONLY };
	const uint64_t to[3] = { 6, 0, 50 }, want[3] = { 6, 10, 10 };
	struct delog_recovery rec;
	struct coll c = { 0 };

	for (int k = 0; k < 3; k++) {
		o.recover_to = to[k];
		memset(&rec, 0xa7, sizeof(rec));
		delog *log = t_reopen(dev, o, &c, &rec);

		cr_assert_eq(c.bad, 0, "%s", c.why);
		cr_expect_eq(c.nck, want[k], "recover_to %llu: %llu checkpoints handed over",
			     (unsigned long long)to[k], (unsigned long long)c.nck);
		cr_expect_eq(c.first_seq, 1);
		cr_expect_eq(c.last_seq, want[k]);
		cr_expect_eq(c.n, want[k]);
		for (size_t i = 0; i < c.n; i++)
			cr_expect_eq(c.v[i].key, 10 + i);
		cr_expect_eq(rec.checkpoints, want[k]);
		cr_expect_eq(rec.items, want[k]);
		cr_expect_eq(rec.last_seq, want[k]);
		cr_expect_eq(rec.held_back, 10 - want[k], "held_back %llu",
			     (unsigned long long)rec.held_back);
		cr_expect_eq(rec.clean, 1);
		cr_expect_eq(delog_durable_seq(log), want[k]);
		cr_expect_eq(t_stats(log).durable_seq, want[k]);
		cr_expect_eq(delog_tx_begin(log, T_RES(1), 0, &(delog_tx *){ NULL }),
			     DELOG_ERDONLY);
		cr_assert_eq(delog_close(log), 0);
		coll_free(&c);
	}
	iol_dev_close(dev);
}

/* recover_to needs DELOG_OPEN_RDONLY; it still verifies the whole log; an older caller's
 * delog_recovery (options without recover_to) is not written past its end. */
Test(open, recover_to_rules, .timeout = 60)
{
	struct iol_dev *dev = t_ten_log(32);
	struct delog_error_info ei = t_ei_garbage();
	struct delog_options o = { .size = sizeof(o), .recover_to = 3, .error = &ei };
	unsigned char rbuf[sizeof(struct delog_recovery)];
	const size_t old_end = offsetof(struct delog_recovery, held_back);
	struct coll c = { 0 };
	delog *log = (delog *)0x1;
	uint64_t off;

	/* A writing open: refused before anything is read or written. */
	cr_expect_eq(engine_open_dev(dev, &o, &log), -EINVAL);
	cr_expect_null(log);
	cr_expect_eq(ei.code, -EINVAL);
	cr_expect_not_null(strstr(ei.message, "recover_to 3"), "'%s'", ei.message);
	cr_expect_not_null(strstr(ei.message, "DELOG_OPEN_RDONLY"), "'%s'", ei.message);

	/* An options struct of the header before recover_to: everything, and the
	 * recovery struct written up to its old end only. */
	o = (struct delog_options){ .size = offsetof(struct delog_options, recover_to),
				    .flags = DELOG_OPEN_RDONLY,
				    .recover = coll_cb,
				    .recover_arg = &c,
				    .recovery = (struct delog_recovery *)rbuf };
	memset(rbuf, 0xa7, sizeof(rbuf));
	cr_assert_eq(engine_open_dev(dev, &o, &log), 0);
	cr_expect_eq(c.nck, 10);
	cr_expect_eq(((struct delog_recovery *)rbuf)->checkpoints, 10);
	for (size_t i = old_end; i < sizeof(rbuf); i++)
		cr_assert_eq(rbuf[i], 0xa7,
			     "byte %zu past an older caller's delog_recovery "
			     "was written",
			     i);
	cr_assert_eq(delog_close(log), 0);
	coll_free(&c);

	/* Damage after the point in time still fails the open, before any callback:
	 * a byte of the last sector of record 8 (checkpoint 8's), which later records vouch
	 * for. */
	off = t_record_off(dev, 7);
	{
		unsigned char *sec = iol_buf_alloc(dev, 4096);
		uint64_t last = t_record_off(dev, 8) - 4096;

		cr_assert_not_null(sec);
		t_rw(dev, false, last, sec, 4096);
		sec[100] ^= 0x40;
		t_rw(dev, true, last, sec, 4096);
		free(sec);
	}
	ei = t_ei_garbage();
	o = (struct delog_options){ .size = sizeof(o),
				    .flags = DELOG_OPEN_RDONLY,
				    .recover_to = 2,
				    .recover = coll_cb,
				    .recover_arg = &c,
				    .error = &ei };
	cr_expect_eq(engine_open_dev(dev, &o, &log), DELOG_ECHECKSUM);
	cr_expect_eq(c.nck, 0, "%llu checkpoints handed over before the error",
		     (unsigned long long)c.nck);
	cr_expect_eq(ei.offset, off, "offset %llu, record 8 at %llu", (unsigned long long)ei.offset,
		     (unsigned long long)off);
	coll_free(&c);
	iol_dev_close(dev);
}
