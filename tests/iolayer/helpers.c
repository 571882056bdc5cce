/*
 * helpers.c - scaffolding shared by the iolayer test files (see helpers.h).  Proves
 * nothing by itself; every check here is an assertion about set-up succeeding.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#ifndef DELOG_TEST_DIR_DEFAULT
#define DELOG_TEST_DIR_DEFAULT "."
#endif

const char *t_backend(void)
{
	const char *be = getenv("DELOG_TEST_BACKEND");

	return be && *be ? be : "sim";
}

bool t_backend_is_sim(void)
{
	return !strcmp(t_backend(), "sim");
}

const char *t_test_dir(void)
{
	const char *dir = getenv("DELOG_TEST_DIR");

	return dir && *dir ? dir : DELOG_TEST_DIR_DEFAULT;
}

void t_scratch_path(char *out, size_t len, const char *tag)
{
	const char *name = criterion_current_test ? criterion_current_test->name : "test";
	int n = snprintf(out, len, "%s/iolayer-%ld-%s-%s.img", t_test_dir(), (long)getpid(), name,
			 tag);

	cr_assert(n > 0 && (size_t)n < len, "scratch path too long");
}

int t_make_file(const char *path, uint64_t bytes)
{
	const size_t chunk = 1u << 20;
	char *zero = calloc(1, chunk);
	int fd, err = 0;

	if (!zero)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		free(zero);
		return err;
	}
	/* Allocate, then really write zeroes, so O_DIRECT overwrites touch no metadata. */
	(void)posix_fallocate(fd, 0, (off_t)bytes);
	for (uint64_t done = 0; done < bytes && !err;) {
		size_t n = bytes - done < chunk ? (size_t)(bytes - done) : chunk;
		ssize_t w = pwrite(fd, zero, n, (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			err = w < 0 ? -errno : -EIO;
		else
			done += (uint64_t)w;
	}
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	free(zero);
	if (err)
		unlink(path);
	return err;
}

void t_dev_open(struct t_dev *td, const struct t_dev_cfg *cfg)
{
	const struct t_dev_cfg none = { 0 };
	const char *be;
	struct iol_sim_opts so = { .size = sizeof(so) };
	struct iol_dev_opts o = { .size = sizeof(o) };
	char msg[512] = "";
	uint64_t bytes;
	int err;

	if (!cfg)
		cfg = &none;
	be = cfg->backend ? cfg->backend : t_backend();
	memset(td, 0, sizeof(*td));
	td->sim = !strcmp(be, "sim");
	bytes = cfg->bytes ? cfg->bytes : (td->sim ? 64ull << 20 : 32ull << 20);
	cr_assert(iol_backend_built(be), "backend '%s' (DELOG_TEST_BACKEND) is not built in", be);

	o.backend = be;
	o.max_segs = cfg->max_segs;
	o.queue_depth = cfg->queue_depth;
	o.errmsg = msg;
	o.errmsg_len = sizeof(msg);
	if (td->sim) {
		so.dev_bytes = bytes;
		so.sector = cfg->sector;
		so.seed = cfg->seed;
		so.latency = cfg->latency;
		so.hold = cfg->hold;
		so.in_order = cfg->in_order;
		so.write_through = cfg->write_through;
		so.inline_run = cfg->inline_run;
		so.image = cfg->image;
		o.sim = &so;
		err = iol_dev_open(NULL, &o, &td->dev);
		cr_assert_eq(err, 0, "iol_dev_open(sim): %s (%s)", strerror(-err), msg);
	} else {
		t_scratch_path(td->path, sizeof(td->path), be);
		err = t_make_file(td->path, bytes);
		cr_assert_eq(err, 0, "cannot create %s: %s", td->path, strerror(-err));
		err = iol_dev_open(td->path, &o, &td->dev);
		/* The descriptor keeps the file alive; nothing is left behind if the test dies. */
		unlink(td->path);
		cr_assert_eq(err, 0, "iol_dev_open(%s, %s): %s (%s)", td->path, be, strerror(-err),
			     msg);
	}
	td->geom = iol_dev_geom(td->dev);
	cr_assert_str_eq(iol_dev_backend(td->dev), be);
	cr_assert_eq(td->geom->size_bytes, bytes, "geometry size %llu, file has %llu",
		     (unsigned long long)td->geom->size_bytes, (unsigned long long)bytes);
}

void t_dev_close(struct t_dev *td)
{
	if (td->dev) {
		int err = iol_dev_close(td->dev);

		td->dev = NULL;
		cr_assert_eq(err, 0, "iol_dev_close: %s", strerror(-err));
	}
}

static uint64_t pat_word(uint64_t seed, uint64_t idx)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + idx + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned char pat_byte(uint64_t seed, uint64_t o)
{
	return (unsigned char)(pat_word(seed, o >> 3) >> ((o & 7) * 8));
}

void t_fill(void *buf, size_t len, uint64_t devoff, uint64_t seed)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = pat_byte(seed, devoff + i);
}

ssize_t t_check(const void *buf, size_t len, uint64_t devoff, uint64_t seed)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != pat_byte(seed, devoff + i))
			return (ssize_t)i;
	return -1;
}

bool t_all(const void *buf, size_t len, unsigned char c)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != c)
			return false;
	return true;
}

void *t_buf(const struct t_dev *td, size_t len)
{
	void *p = iol_buf_alloc(td->dev, len);

	cr_assert_not_null(p, "iol_buf_alloc(%zu) failed", len);
	cr_assert_eq((uintptr_t)p % td->geom->dio_mem_align, 0, "iol_buf_alloc misaligned");
	return p;
}

int t_io(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len, size_t seg,
	 size_t *moved)
{
	struct iol_req req;
	size_t nseg;
	int err;

	if (!seg)
		seg = len;
	nseg = (len + seg - 1) / seg;
	err = iol_req_init(&req, dev, (unsigned)nseg, opf);
	if (err)
		return err;
	req.off = off;
	for (size_t done = 0; done < len; done += seg) {
		err = iol_req_add(&req, (char *)buf + done, len - done < seg ? len - done : seg);
		if (err) {
			iol_req_release(&req);
			return err;
		}
	}
	err = iol_submit_wait(&req);
	if (moved)
		*moved = req.bytes;
	iol_req_release(&req);
	return err;
}

int t_flush(struct iol_dev *dev)
{
	struct iol_req req;
	int err = iol_req_init(&req, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));

	if (err)
		return err;
	err = iol_submit_wait(&req);
	iol_req_release(&req);
	return err;
}

void t_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool t_wait_uint(atomic_uint *v, unsigned target, unsigned ms)
{
	for (unsigned waited = 0; atomic_load(v) < target; waited++) {
		if (waited >= ms)
			return false;
		t_sleep_ms(1);
	}
	return true;
}

bool t_wait_pending(struct iol_dev *dev, size_t n, unsigned ms)
{
	for (unsigned waited = 0; iol_sim_pending(dev) < n; waited++) {
		if (waited >= ms)
			return false;
		t_sleep_ms(1);
	}
	return true;
}

bool t_is_tmpfs(const char *dir)
{
	struct statfs sfs;

	return statfs(dir, &sfs) == 0 && (unsigned long)sfs.f_type == TMPFS_MAGIC;
}
