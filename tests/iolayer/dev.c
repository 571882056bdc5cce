/*
 * dev.c - opening devices: backend choice, O_DIRECT refusal, block devices, probing.
 *
 * What it proves:
 *   - a filesystem without O_DIRECT (tmpfs) fails iol_dev_open with -EOPNOTSUPP (the code
 *     the engine turns into DELOG_ENODIRECT, so no other failure may give it) and a message
 *     naming the path, the filesystem and O_DIRECT, whichever backend is asked for;
 *   - a block device (a loop device with direct I/O) works on every built real backend:
 *     geometry says block device, and data round-trips with FUA and flush;
 *   - with no backend named (or "auto") the first working real backend in preference
 *     order is chosen, never "sim";
 *   - naming an unknown backend, or one that is not built in, is an error with a message;
 *   - open errors (missing file, wrong opts.size, a real backend without a path) are
 *     reported, with the path in the message;
 *   - the probed O_DIRECT alignment is what statx(STATX_DIOALIGN) reports.
 * Tests needing root, losetup or a tmpfs skip with a message when those are unavailable.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1ull << 20)

TestSuite(dev, .timeout = T_TIMEOUT);

static int open_named(const char *path, const char *backend, struct iol_dev **dev, char *msg,
		      size_t msglen)
{
	struct iol_dev_opts o = { .size = sizeof(o),
				  .backend = backend,
				  .errmsg = msg,
				  .errmsg_len = msglen };

	msg[0] = '\0';
	return iol_dev_open(path, &o, dev);
}

/* ---- tmpfs ---- */

/* What the tmpfs test set up, undone by its .fini even when an assertion failed. */
static char tmpfs_dir[64], tmpfs_file[PATH_MAX];
static bool tmpfs_mounted;

static void tmpfs_cleanup(void)
{
	if (tmpfs_file[0])
		unlink(tmpfs_file);
	if (tmpfs_mounted)
		umount2(tmpfs_dir, MNT_DETACH);
	if (tmpfs_dir[0])
		rmdir(tmpfs_dir);
}

Test(dev, tmpfs_refuses_o_direct, .timeout = T_TIMEOUT, .fini = tmpfs_cleanup)
{
	const char *const *names = iol_backend_names();
	struct iol_dev *dev = NULL;
	const char *base;
	char msg[512];
	int fd, err;

	snprintf(tmpfs_dir, sizeof(tmpfs_dir), "/tmp/delog-tmpfs-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpfs_dir), "mkdtemp: %s", strerror(errno));
	if (geteuid() == 0 && mount("tmpfs", tmpfs_dir, "tmpfs", 0, "size=4m") == 0) {
		tmpfs_mounted = true;
		base = tmpfs_dir;
	} else if (t_is_tmpfs("/dev/shm")) {
		base = "/dev/shm";
	} else {
		cr_skip_test("cannot mount a tmpfs (not root, or mount refused) and /dev/shm is "
			     "not tmpfs: no O_DIRECT-less filesystem to test against");
	}
	snprintf(tmpfs_file, sizeof(tmpfs_file), "%s/delog-%ld.img", base, (long)getpid());
	fd = open(tmpfs_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", tmpfs_file, strerror(errno));
	cr_assert_eq(ftruncate(fd, 1 * MiB), 0);
	close(fd);

	/* Automatic choice, then every real backend by name.  (Linux >= 6.6 accepts
	 * O_DIRECT on tmpfs; it must be refused all the same, since nothing there is ever
	 * durable.) */
	err = open_named(tmpfs_file, NULL, &dev, msg, sizeof(msg));
	if (!err)
		iol_dev_close(dev);
	cr_assert_eq(err, -EOPNOTSUPP, "auto backend on tmpfs: %d (%s)", err, msg);
	cr_assert_not_null(strstr(msg, tmpfs_file), "message does not name the path: '%s'", msg);
	cr_assert_not_null(strstr(msg, "tmpfs"), "message does not name tmpfs: '%s'", msg);
	cr_assert_not_null(strstr(msg, "O_DIRECT"), "message does not give the reason: '%s'", msg);
	for (size_t i = 0; names[i]; i++) {
		if (!strcmp(names[i], "sim"))
			continue;
		dev = NULL;
		err = open_named(tmpfs_file, names[i], &dev, msg, sizeof(msg));
		if (!err)
			iol_dev_close(dev);
		cr_assert_eq(err, -EOPNOTSUPP, "%s on tmpfs: %d (%s)", names[i], err, msg);
		cr_assert_not_null(strstr(msg, tmpfs_file), "%s: message '%s'", names[i], msg);
		cr_assert_not_null(strstr(msg, "tmpfs"), "%s: message '%s'", names[i], msg);
	}
	/* Without an errmsg buffer the error is the same. */
	{
		struct iol_dev_opts o = { .size = sizeof(o) };

		dev = NULL;
		err = iol_dev_open(tmpfs_file, &o, &dev);
		if (!err)
			iol_dev_close(dev);
		cr_assert_eq(err, -EOPNOTSUPP);
	}
}

/* ---- block devices ---- */

static bool run_cmd(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;

	if (!p)
		return false;
	if (out && len) {
		n = fread(out, 1, len - 1, p);
		out[n] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
	return pclose(p) == 0;
}

static void loop_round_trip(const char *loopdev, const char *backend, uint64_t bytes)
{
	struct iol_dev *dev = NULL;
	const struct iol_geom *g;
	unsigned char *buf;
	char msg[512];
	const uint64_t off = 2 * MiB;
	const size_t len = 1 * MiB + 4096;
	int err;

	err = open_named(loopdev, backend, &dev, msg, sizeof(msg));
	cr_assert_eq(err, 0, "%s on %s: %s (%s)", backend, loopdev, strerror(-err), msg);
	g = iol_dev_geom(dev);
	cr_assert_str_eq(iol_dev_backend(dev), backend);
	cr_assert(g->is_blockdev, "%s: not reported as a block device", backend);
	cr_assert_str_eq(g->fs_type, "blockdev");
	cr_assert_eq(g->size_bytes, bytes, "%s: size %llu", backend,
		     (unsigned long long)g->size_bytes);
	cr_assert(g->logical_block >= 512 && g->dio_off_align >= 512, "%s: block %u align %u",
		  backend, g->logical_block, g->dio_off_align);
	buf = iol_buf_alloc(dev, len);
	cr_assert_not_null(buf);

	t_fill(buf, len, off, 300);
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), off, buf, len, NULL);
	cr_assert_eq(err, 0, "%s: write: %s", backend, strerror(-err));
	err = t_flush(dev);
	cr_assert_eq(err, 0, "%s: flush: %s", backend, strerror(-err));
	t_fill(buf, 4096, 0, 301);
	err = t_io(dev, IOL_OPF(IOL_OP_WRITE, IOL_PREFLUSH | IOL_FUA), 0, buf, 4096, 0, NULL);
	cr_assert_eq(err, 0, "%s: PREFLUSH|FUA write: %s", backend, strerror(-err));

	memset(buf, 0, len);
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), off, buf, len, NULL);
	cr_assert_eq(err, 0, "%s: read: %s", backend, strerror(-err));
	cr_assert_eq(t_check(buf, len, off, 300), -1, "%s: data did not round-trip", backend);
	err = t_io(dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, 4096, 0, NULL);
	cr_assert_eq(err, 0);
	cr_assert_eq(t_check(buf, 4096, 0, 301), -1, "%s: FUA data did not round-trip", backend);
	/* Misaligned is still refused on a block device. */
	err = t_io(dev, IOL_OPF(IOL_OP_READ, 0), g->dio_off_align / 2, buf, 4096, 0, NULL);
	cr_assert_eq(err, -EINVAL, "%s: misaligned offset on a block device: %d", backend, err);
	free(buf);
	cr_assert_eq(iol_dev_close(dev), 0);
}

/* The loop device the block-device test attached, detached by its .fini. */
static char loop_dev[256], loop_file[PATH_MAX];

static void loop_cleanup(void)
{
	char cmd[sizeof(loop_dev) + 32];

	if (loop_dev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d '%s' 2>/dev/null", loop_dev);
		(void)run_cmd(cmd, NULL, 0);
	}
	if (loop_file[0])
		unlink(loop_file);
}

Test(dev, block_device_all_backends, .timeout = T_TIMEOUT, .fini = loop_cleanup)
{
	const uint64_t bytes = 16 * MiB;
	const char *const *names = iol_backend_names();
	char cmd[PATH_MAX + 128], out[256] = "";
	int err;

	if (geteuid() != 0)
		cr_skip_test("needs root to attach a loop device");
	if (!run_cmd("losetup --version >/dev/null 2>&1", NULL, 0))
		cr_skip_test("losetup is not available");
	t_scratch_path(loop_file, sizeof(loop_file), "loop");
	err = t_make_file(loop_file, bytes);
	cr_assert_eq(err, 0, "create %s: %s", loop_file, strerror(-err));
	snprintf(cmd, sizeof(cmd), "losetup --find --show --direct-io=on '%s' 2>/dev/null",
		 loop_file);
	if (!run_cmd(cmd, out, sizeof(out)) || strncmp(out, "/dev/", 5))
		cr_skip_test("losetup could not attach a loop device (no loop support here?)");
	snprintf(loop_dev, sizeof(loop_dev), "%s", out);
	/* The loop device holds the file open; its name can go now. */
	unlink(loop_file);
	loop_file[0] = '\0';
	for (size_t i = 0; names[i]; i++) {
		if (strcmp(names[i], "sim"))
			loop_round_trip(loop_dev, names[i], bytes);
	}
	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", loop_dev);
	cr_assert(run_cmd(cmd, NULL, 0), "losetup -d %s failed", loop_dev);
	loop_dev[0] = '\0';
}

/* ---- backend choice ---- */

/* A scratch file of the current test, removed by .fini even when an assertion failed. */
static char scratch[PATH_MAX];

static void scratch_cleanup(void)
{
	if (scratch[0])
		unlink(scratch);
}

static void scratch_file(char *path, size_t len, const char *tag, uint64_t bytes)
{
	int err;

	t_scratch_path(path, len, tag);
	cr_assert_lt(strlen(path), sizeof(scratch));
	strcpy(scratch, path);
	err = t_make_file(path, bytes);
	cr_assert_eq(err, 0, "create %s: %s", path, strerror(-err));
}

Test(dev, auto_picks_best_backend, .timeout = T_TIMEOUT, .fini = scratch_cleanup)
{
	const char *const *names = iol_backend_names();
	const char *first_ok = NULL;
	char path[PATH_MAX], msg[512];
	struct iol_dev *dev;
	bool listed = false;
	int err;

	scratch_file(path, sizeof(path), "auto", 1 * MiB);
	/* Preference order: the first real backend that opens when named. */
	for (size_t i = 0; names[i] && !first_ok; i++) {
		if (!strcmp(names[i], "sim"))
			continue;
		if (open_named(path, names[i], &dev, msg, sizeof(msg)) == 0) {
			first_ok = names[i];
			cr_assert_eq(iol_dev_close(dev), 0);
		}
	}
	cr_assert_not_null(first_ok, "no real backend opens %s", path);

	for (int k = 0; k < 2; k++) {
		err = open_named(path, k ? "auto" : NULL, &dev, msg, sizeof(msg));
		cr_assert_eq(err, 0, "open with backend %s: %s (%s)", k ? "auto" : "NULL",
			     strerror(-err), msg);
		for (size_t i = 0; names[i]; i++)
			listed |= !strcmp(names[i], iol_dev_backend(dev));
		cr_assert(listed, "picked backend '%s' is not in iol_backend_names()",
			  iol_dev_backend(dev));
		cr_assert_str_neq(iol_dev_backend(dev), "sim", "sim was chosen automatically");
		cr_assert_str_eq(iol_dev_backend(dev), first_ok,
				 "picked %s, but %s works and is "
				 "preferred",
				 iol_dev_backend(dev), first_ok);
		cr_assert_str_eq(iol_dev_geom(dev)->backend, iol_dev_backend(dev));
		cr_assert_eq(iol_dev_close(dev), 0);
	}
	cr_log_info("automatic backend: %s", first_ok);
	unlink(path);
}

Test(dev, unknown_backend, .timeout = T_TIMEOUT, .fini = scratch_cleanup)
{
	const char *const *names = iol_backend_names();
	char path[PATH_MAX], msg[512];
	struct iol_dev *dev = NULL;
	bool has_sim = false, has_psync = false;
	int err;

	for (size_t i = 0; names[i]; i++) {
		cr_assert(iol_backend_built(names[i]), "%s listed but not built", names[i]);
		has_sim |= !strcmp(names[i], "sim");
		has_psync |= !strcmp(names[i], "psync");
	}
	cr_assert(has_sim && has_psync, "psync and sim are always built");
	cr_assert_not(iol_backend_built("nosuch"));
	cr_assert_not(iol_backend_built(NULL));

	scratch_file(path, sizeof(path), "unknown", 1 * MiB);
	err = open_named(path, "nosuch", &dev, msg, sizeof(msg));
	cr_assert_lt(err, 0, "unknown backend accepted");
	cr_assert_null(dev);
	cr_assert_not_null(strstr(msg, "nosuch"), "message does not name the backend: '%s'", msg);
	unlink(path);
}

Test(dev, backend_not_built, .timeout = T_TIMEOUT, .fini = scratch_cleanup)
{
	static const char *const optional[] = { "uring", "aio" };
	char path[PATH_MAX], msg[512];
	bool tried = false;

	scratch_file(path, sizeof(path), "notbuilt", 1 * MiB);
	for (size_t i = 0; i < 2; i++) {
		struct iol_dev *dev = NULL;
		int err;

		if (iol_backend_built(optional[i]))
			continue;
		tried = true;
		err = open_named(path, optional[i], &dev, msg, sizeof(msg));
		cr_assert_eq(err, -ENODEV, "%s (not built): %d", optional[i], err);
		cr_assert_null(dev);
		cr_assert_not_null(strstr(msg, optional[i]), "message: '%s'", msg);
	}
	unlink(path);
	if (!tried)
		cr_skip_test("uring and aio are both built in; configure with "
			     "-DDELOG_WITH_URING=OFF or -DDELOG_WITH_AIO=OFF to exercise this");
}

/* ---- open errors and probing ---- */

Test(dev, open_errors, .timeout = T_TIMEOUT, .fini = scratch_cleanup)
{
	char path[PATH_MAX], msg[512];
	struct iol_dev *dev = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/iolayer-%ld-does-not-exist.img", t_test_dir(),
		 (long)getpid());
	err = open_named(path, "psync", &dev, msg, sizeof(msg));
	cr_assert_eq(err, -ENOENT, "missing file: %d", err);
	cr_assert_null(dev);
	cr_assert_not_null(strstr(msg, path), "message does not name the path: '%s'", msg);
	err = open_named(path, NULL, &dev, msg, sizeof(msg));
	cr_assert_eq(err, -ENOENT, "missing file, auto backend: %d", err);

	err = open_named(NULL, "psync", &dev, msg, sizeof(msg));
	cr_assert_eq(err, -EINVAL, "psync without a path: %d", err);

	{
		struct iol_dev_opts o = { .size = sizeof(o) + 1, .backend = "sim" };

		cr_assert_eq(iol_dev_open(NULL, &o, &dev), -EINVAL, "wrong opts.size accepted");
		cr_assert_null(dev);
	}
	/* NULL opts: defaults, i.e. the automatic backend. */
	scratch_file(path, sizeof(path), "nullopts", 1 * MiB);
	err = iol_dev_open(path, NULL, &dev);
	unlink(path);
	cr_assert_eq(err, 0, "NULL opts: %s", strerror(-err));
	cr_assert_str_neq(iol_dev_backend(dev), "sim");
	cr_assert_eq(iol_dev_close(dev), 0);
}

/* A FIFO is refused, not waited on (a read-only open of a FIFO blocks until a writer
 * comes), on every backend and read-only or not; so are a directory and /dev/null. */
Test(dev, refuses_fifo_and_other_kinds, .timeout = 20, .fini = scratch_cleanup)
{
	static const char *const backends[] = { "psync", "uring", "aio" };
	char path[PATH_MAX], msg[512];
	struct iol_dev *dev = NULL;

	snprintf(path, sizeof(path), "%s/iolayer-%ld.fifo", t_test_dir(), (long)getpid());
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo: %s", strerror(errno));
	for (unsigned i = 0; i < 3; i++) {
		for (int ro = 0; ro < 2; ro++) {
			struct iol_dev_opts o = { .size = sizeof(o),
						  .backend = backends[i],
						  .read_only = ro,
						  .errmsg = msg,
						  .errmsg_len = sizeof(msg) };
			int err;

			if (!iol_backend_built(backends[i]))
				continue;
			msg[0] = '\0';
			err = iol_dev_open(path, &o, &dev);
			cr_assert_eq(err, -EINVAL, "%s%s on a FIFO: %d", backends[i],
				     ro ? " read-only" : "", err);
			cr_assert_null(dev);
			cr_assert_not_null(strstr(msg, "a FIFO"), "message: '%s'", msg);
		}
	}
	unlink(path);
	cr_assert_neq(open_named("/dev/null", "psync", &dev, msg, sizeof(msg)), 0);
	cr_assert_not_null(strstr(msg, "character device"), "message: '%s'", msg);
	cr_assert_neq(open_named(t_test_dir(), "psync", &dev, msg, sizeof(msg)), 0);
	cr_assert_null(dev);
}

Test(dev, alignment_from_statx, .timeout = T_TIMEOUT, .fini = scratch_cleanup)
{
	char path[PATH_MAX], msg[512];
	struct iol_dev *dev;
	struct statx stx;
	const struct iol_geom *g;

	scratch_file(path, sizeof(path), "align", 2 * MiB);
	cr_assert_eq(open_named(path, "psync", &dev, msg, sizeof(msg)), 0, "%s", msg);
	g = iol_dev_geom(dev);
	cr_assert_eq(g->size_bytes, 2 * MiB);
	cr_assert_not(g->is_blockdev);
	if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		cr_assert(g->dioalign_from_statx, "statx has STATX_DIOALIGN but it was not used");
		cr_assert_eq(g->dio_mem_align, stx.stx_dio_mem_align);
		cr_assert_eq(g->dio_off_align, stx.stx_dio_offset_align);
	} else {
		cr_assert_geq(g->dio_off_align, 512, "fallback alignment %u", g->dio_off_align);
	}
	unlink(path);
	cr_assert_eq(iol_dev_close(dev), 0);
}
