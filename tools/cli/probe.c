/*
 * probe.c - `delog probe PATH`: what this device costs, per I/O backend (cf. PostgreSQL's
 * pg_test_fsync), before anyone blames the log for it.
 *
 * It reports the device facts the iolayer found at open (block sizes, O_DIRECT alignment,
 * volatile write cache, FUA, filesystem) and, for every usable backend, the latency of a
 * single 4 KiB O_DIRECT write, a write followed by a flush, a FUA write and an idle flush,
 * plus sequential O_DIRECT write and read bandwidth with 8 requests of 1 MiB in flight.
 * When fio is installed it runs fio's io_uring engine (through tools/common/fio.c) with
 * the same block size, queue depth, byte count and file in the same run, so the uring
 * numbers can be judged against an independent implementation (a report, not a pass/fail
 * test).
 * Last it prints the flush policy and log-buffer geometry that the rule of
 * tools/common/recommend.c draws from the auto-selected backend's numbers.  The
 * measurement itself (latency tests, bandwidth passes) is tools/common/costs.c's, below
 * both this command and `delog bench --compare-flush`, which measures the same costs with
 * it (probe_measure_costs) and checks the rule; this file owns the target, the backends,
 * fio, signals and the report.
 *
 * Why it is built this way:
 *  - The probe region is written with zeroes before anything is measured (after
 *    fallocate, for files).  An O_DIRECT write into an unwritten or unallocated extent
 *    makes the filesystem convert or allocate it, so every "data" flush would also commit
 *    the filesystem journal and the numbers would describe ext4, not the disk.  A loop
 *    device over a sparse file has the same problem one layer down, so block devices are
 *    pre-written too.  The zero-fill is also the warm-up for the bandwidth passes.
 *  - Latency ops are submitted one at a time and waited for (iol_submit_wait): the number
 *    wanted is what one synchronous commit costs, so nothing may overlap it.  A few
 *    unmeasured ops precede each test; percentiles are nearest-rank over >= 200 samples.
 *  - Writes go to distinct 4 KiB offsets, cycling through the region, so no test
 *    rewrites a block that the previous op left in the cache.
 *  - Bandwidth keeps exactly 8 requests in flight: each completion reissues its slot at
 *    the next offset (common/costs.c).  Each pass covers the same bytes as the fio job;
 *    the median of several passes is reported, and uring and fio passes alternate so
 *    drift in the device affects both alike.
 *  - SIGINT, SIGTERM and SIGHUP are blocked for the run and polled between ops, so an
 *    interrupted probe still removes the file it created, then dies of the signal.
 *  - A file that does not exist is created (O_EXCL, O_NOFOLLOW, mode 0600) and removed at
 *    the end.  Anything that holds data (a non-empty file, a block device) is only
 *    written with --force, because the probe overwrites the region it measures.
 */
#include "tools.h"
#include "common/costs.h"

#include "io.h"
#include "io_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIN_OPS 200u
#define DEFAULT_OPS 500u
#define DEFAULT_SIZE (256ull << 20)
#define DEFAULT_SIM_SIZE (64ull << 20)
#define MIN_SIZE (8ull << 20)
#define DEFAULT_PASSES 5u
#define MAX_PASSES 20u

struct probe_opts {
	const char *path;    /* NULL with --backend sim */
	const char *backend; /* NULL: every built-in backend but sim */
	bool json, force, no_fio;
	uint64_t size;     /* probe region */
	uint64_t ops;      /* measured ops per latency test */
	uint64_t bw_bytes; /* bytes per bandwidth pass; 0: the region */
	unsigned passes;   /* bandwidth passes per direction */
	enum iol_sim_latency sim_latency;
};

/* The thing being probed and what was done to it, so cleanup can undo it. */
struct target {
	const char *path;
	int fd; /* plain descriptor (files); O_EXCL hold (block devices) */
	bool is_sim, is_blockdev;
	bool created;  /* we created it: unlink at the end */
	bool extended; /* we grew it: truncate back to orig_size */
	uint64_t orig_size;
	uint64_t region;  /* bytes probed, from base */
	double prepare_s; /* zero-fill time */
};

struct fio_result {
	bool ran;
	double write_mbs, read_mbs; /* NAN when that job failed */
	char error[256];
};

struct backend_result {
	const char *name;
	bool ok;
	char error[512];
	struct lat_stats lat[COST_NR_LAT];
	double write_mbs, read_mbs;
	struct iol_counters cnt;
	bool fio_tried;
	struct fio_result fio;
};

struct progress {
	bool on;
	bool shown; /* a progress line is on the terminal */
	uint64_t last_ns;
};

/* Everything one run owns; lives on cmd_probe's stack. */
struct probe {
	struct probe_opts o;
	struct target t;
	struct progress prog;
	sigset_t stop_sigs;
	struct cost_meter m; /* the measured region, o.ops samples, our stop and progress */
	const char *fio;     /* fio's path, or NULL */
	char fio_path[PATH_MAX];
	int err;           /* the first failure (fail), for the --json document ... */
	char err_msg[512]; /* ... and its message */
};

/* ---- small helpers ---- */

static void progress(struct probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void progress(struct probe *p, const char *fmt, ...)
{
	uint64_t now;
	va_list ap;

	if (!p->prog.on)
		return;
	now = now_ns();
	if (now - p->prog.last_ns < 100000000ull)
		return;
	p->prog.last_ns = now;
	p->prog.shown = true;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

static void progress_clear(struct probe *p)
{
	if (!p->prog.shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->prog.shown = false;
	p->prog.last_ns = 0;
}

/* Human output; progress is cleared first so the two never share a line. */
static void out(struct probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out(struct probe *p, const char *fmt, ...)
{
	va_list ap;

	if (p->o.json)
		return;
	progress_clear(p);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* "delog probe: <subject>: <reason>" on stderr; the first one is kept, with @err, for
 * the --json error document (json_error_doc). */
static void fail(struct probe *p, int err, const char *subject, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail(struct probe *p, int err, const char *subject, const char *fmt, ...)
{
	char msg[sizeof(p->err_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (subject)
		fprintf(stderr, "delog probe: %s: %s\n", subject, msg);
	else
		fprintf(stderr, "delog probe: %s\n", msg);
	if (!p->err_msg[0]) {
		size_t k = subject ? (size_t)snprintf(p->err_msg, sizeof(p->err_msg),
						      "%.*s: ", (int)sizeof(p->err_msg) / 2,
						      subject) :
				     0;
		size_t n = strnlen(msg, sizeof(p->err_msg) - k - 1);

		p->err = err ? err : -EIO;
		memcpy(p->err_msg + k, msg, n);
		p->err_msg[k + n] = '\0';
	}
}

static bool interrupted(const struct probe *p)
{
	sigset_t pend;

	if (sigpending(&pend))
		return false;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&p->stop_sigs, s) == 1 && sigismember(&pend, s) == 1)
			return true;
	return false;
}

/* The measurement's stop (common/costs.c polls it): a stop signal is pending. */
static bool meter_stop(void *arg)
{
	return interrupted(arg);
}

/* After each measured latency op: the progress line. */
static void meter_op(void *arg, const char *backend, enum cost_lat test, uint64_t done,
		     uint64_t total)
{
	progress(arg, "%s: %s %" PRIu64 "/%" PRIu64, backend, cost_lat_names[test].label, done,
		 total);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_dbl(double *v, size_t n)
{
	size_t ok = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[ok++] = v[i];
	if (!ok)
		return NAN;
	qsort(v, ok, sizeof(*v), cmp_dbl);
	return ok % 2 ? v[ok / 2] : (v[ok / 2 - 1] + v[ok / 2]) / 2;
}

/* ---- fio (tools/common/fio.c runs it) ---- */

/* Run one fio job like the bandwidth pass and return its MB/s (10^6 bytes/s). */
static int fio_pass(struct probe *p, const char *dir, double *out_mbs, char *err, size_t errlen)
{
	struct fio_job job = {
		.fio = p->fio,
		.name = "delog-probe",
		.filename = p->t.path,
		.rw = dir,
		.ioengine = "io_uring",
		.bs = COST_BW_BLOCK,
		.iodepth = COST_BW_QD,
		.offset = 0,
		.size = p->o.bw_bytes,
	};

	return fio_run(&job, out_mbs, err, errlen);
}

/* ---- one backend ---- */

static void opts_for(const struct probe *p, struct iol_dev_opts *dopts, struct iol_sim_opts *so,
		     const char *backend, char *errmsg, size_t errlen)
{
	memset(dopts, 0, sizeof(*dopts));
	dopts->size = sizeof(*dopts);
	dopts->backend = backend;
	dopts->errmsg = errmsg;
	dopts->errmsg_len = errlen;
	if (p->t.is_sim) {
		memset(so, 0, sizeof(*so));
		so->size = sizeof(*so);
		so->dev_bytes = p->t.region;
		so->latency = p->o.sim_latency;
		so->in_order = false;
		dopts->sim = so;
	}
}

/* One timed pass of ours; a write pass is followed by an untimed flush, so the next
 * pass (ours or fio's) does not start behind this one's write-back. */
static int bw_ours(struct probe *p, struct cost_bw *bw, struct iol_dev *dev, enum iol_op op,
		   struct backend_result *r, double *out_mbs)
{
	uint64_t ns;
	int rc = cost_bw_pass(&p->m, bw, op, p->o.bw_bytes, &ns, r->error, sizeof(r->error));

	if (!rc && op == IOL_OP_WRITE)
		rc = cost_flush(dev, r->error, sizeof(r->error));
	if (!rc)
		*out_mbs = cost_mbs(p->o.bw_bytes, ns);
	return rc;
}

/* One fio pass (NAN once fio has failed: the first error is kept and fio is not run
 * again); fio does not flush, so flush for it, untimed, as after ours. */
static int bw_fio(struct probe *p, struct iol_dev *dev, const char *dir, struct backend_result *r,
		  double *out_mbs)
{
	*out_mbs = NAN;
	if (!r->fio.error[0] && fio_pass(p, dir, out_mbs, r->fio.error, sizeof(r->fio.error)))
		*out_mbs = NAN;
	if (!strcmp(dir, "write"))
		return cost_flush(dev, r->error, sizeof(r->error));
	return 0;
}

/*
 * Bandwidth passes for one backend: one untimed warm-up pass per direction, then
 * o.passes timed ones.  For uring with fio, fio's passes interleave with ours and the
 * order flips every pass (ours first, then fio first), so neither side always runs
 * right after the other's write-back or always first on a cold queue.
 */
static int bw_measure(struct probe *p, struct iol_dev *dev, struct backend_result *r)
{
	double w[MAX_PASSES], rd[MAX_PASSES], fw[MAX_PASSES], fr[MAX_PASSES], warm;
	bool with_fio = r->fio_tried && p->fio;
	struct cost_bw bw;
	int rc;

	rc = cost_bw_setup(&bw, dev, false);
	if (rc) {
		snprintf(r->error, sizeof(r->error), "cannot allocate bandwidth buffers");
		cost_bw_teardown(&bw);
		return rc;
	}
	if (with_fio)
		r->fio.ran = true;
	for (int d = 0; d < 2 && !rc; d++) {
		enum iol_op op = d ? IOL_OP_READ : IOL_OP_WRITE;
		const char *dir = d ? "read" : "write";
		double *mine = d ? rd : w, *theirs = d ? fr : fw;

		progress(p, "%s: sequential %s warm-up", r->name, dir);
		rc = bw_ours(p, &bw, dev, op, r, &warm);
		for (unsigned i = 0; i < p->o.passes && !rc; i++) {
			bool fio_first = with_fio && i % 2;

			progress(p, "%s: sequential %s pass %u/%u", r->name, dir, i + 1,
				 p->o.passes);
			if (fio_first)
				rc = bw_fio(p, dev, dir, r, &theirs[i]);
			if (!rc)
				rc = bw_ours(p, &bw, dev, op, r, &mine[i]);
			if (!rc && with_fio && !fio_first)
				rc = bw_fio(p, dev, dir, r, &theirs[i]);
			if (!rc && interrupted(p))
				rc = -EINTR;
		}
	}
	cost_bw_teardown(&bw);
	if (rc)
		return rc;
	r->write_mbs = median_dbl(w, p->o.passes);
	r->read_mbs = median_dbl(rd, p->o.passes);
	if (with_fio) {
		r->fio.write_mbs = median_dbl(fw, p->o.passes);
		r->fio.read_mbs = median_dbl(fr, p->o.passes);
	}
	return 0;
}

static int backend_run(struct probe *p, struct backend_result *r)
{
	struct iol_dev_opts dopts;
	struct iol_sim_opts so;
	struct iol_dev *dev;
	char errmsg[512] = "";
	void *buf;
	int rc;

	opts_for(p, &dopts, &so, r->name, errmsg, sizeof(errmsg));
	rc = iol_dev_open(p->t.is_sim ? NULL : p->t.path, &dopts, &dev);
	if (rc) {
		snprintf(r->error, sizeof(r->error), "%s", errmsg[0] ? errmsg : tool_strerror(rc));
		return 0; /* a backend that cannot open is reported, not fatal */
	}
	buf = iol_buf_alloc(dev, COST_OP_BYTES);
	if (!buf) {
		snprintf(r->error, sizeof(r->error), "cannot allocate an I/O buffer");
		iol_dev_close(dev);
		return 0;
	}
	memset(buf, 0xa5, COST_OP_BYTES);

	rc = cost_lat_measure(&p->m, dev, r->name, buf, r->lat, r->error, sizeof(r->error));
	free(buf);
	if (!rc)
		rc = bw_measure(p, dev, r);
	iol_dev_counters(dev, &r->cnt);
	iol_dev_close(dev);
	if (rc == -EINTR)
		return rc;
	r->ok = rc == 0;
	return 0;
}

/*
 * The backend the recommendation speaks for: the auto-selected one (sim: the only one)
 * when it succeeded, else the first that did; NULL when none did.
 */
static const struct backend_result *rec_backend(const char *auto_be,
						const struct backend_result *rs, size_t nr)
{
	for (size_t i = 0; auto_be && i < nr; i++)
		if (rs[i].ok && !strcmp(rs[i].name, auto_be))
			return &rs[i];
	for (size_t i = 0; i < nr; i++)
		if (rs[i].ok)
			return &rs[i];
	return NULL;
}

static bool recommend_for(const struct iol_geom *g, const struct backend_result *r,
			  struct probe_rec *rec)
{
	struct probe_costs c;

	if (!r)
		return false;
	cost_from(r->lat, r->write_mbs, g, &c);
	probe_recommend(&c, rec);
	return true;
}

/* ---- the target: create, check, prepare, clean up ---- */

static void target_cleanup(struct probe *p)
{
	struct target *t = &p->t;

	if (t->created) {
		if (unlink(t->path))
			fail(p, -errno, t->path, "cannot remove the probe file: %s",
			     strerror(errno));
	} else if (t->extended && t->fd >= 0) {
		if (ftruncate(t->fd, (off_t)t->orig_size))
			fail(p, -errno, t->path, "cannot truncate back to %" PRIu64 " bytes: %s",
			     t->orig_size, strerror(errno));
	}
	if (t->fd >= 0 && t->is_blockdev)
		iol_blk_release(t->fd);
	else if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

/* Decide what PATH is and make it probe-able (without writing it yet). */
static int target_open(struct probe *p)
{
	struct target *t = &p->t;
	char sz[32], sz2[32], why[128];
	struct stat st;
	int err;

	t->fd = -1;
	t->region = p->o.size;
	if (t->is_sim)
		return 0;

	if (lstat(t->path, &st) && errno == ENOENT) {
		t->fd = open(t->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (t->fd < 0) {
			err = -errno;
			fail(p, err, t->path, "cannot create: %s", strerror(-err));
			return err;
		}
		t->created = true;
		/* Sparse until the O_DIRECT check has passed (tmpfs would pin the memory). */
		if (ftruncate(t->fd, (off_t)t->region)) {
			err = -errno;
			fail(p, err, t->path, "cannot size to %s: %s",
			     fmt_bytes(t->region, sz, sizeof(sz)), strerror(-err));
			return err;
		}
		return 0;
	}
	/* Before any open: opening a FIFO blocks. */
	err = tool_path_check(t->path, &st, why, sizeof(why));
	if (err) {
		fail(p, err, t->path, "%s", why);
		return err;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t dev_bytes;

		/* Too small is said first: --force would not help. */
		err = tool_blockdev_size(t->path, &dev_bytes);
		if (err) {
			fail(p, err, t->path, "cannot read its size: %s", strerror(-err));
			return err;
		}
		if (dev_bytes < MIN_SIZE) {
			fail(p, -ENOSPC, t->path, "holds %s, less than the %llu MiB a probe needs",
			     fmt_bytes(dev_bytes, sz, sizeof(sz)), MIN_SIZE >> 20);
			return -ENOSPC;
		}
		if (!p->o.force) {
			fail(p, -EPERM, t->path,
			     "is a block device; probing overwrites its first %s "
			     "(add --force to allow that)",
			     fmt_bytes(p->o.size, sz, sizeof(sz)));
			return -EPERM;
		}
		/* An exclusive open fails while the device is mounted or otherwise claimed, and
		 * holding it keeps it from being mounted under us (and every delog writer off;
		 * our own device opens skip O_EXCL: iolayer/lock.c LK2). */
		t->fd = iol_blk_claim(t->path);
		if (t->fd < 0) {
			err = t->fd;
			if (err == -EBUSY)
				fail(p, err, t->path,
				     "is in use (mounted, or claimed by another "
				     "process); not probing it");
			else
				fail(p, err, t->path, "cannot open it exclusively: %s",
				     strerror(-err));
			return err;
		}
		t->is_blockdev = true;
		return 0;
	}
	if (st.st_size > 0 && !p->o.force) {
		fail(p, -EEXIST, t->path,
		     "exists and holds %s; probing overwrites it (add --force to allow "
		     "that, or name a file that does not exist)",
		     fmt_bytes((uint64_t)st.st_size, sz, sizeof(sz)));
		return -EEXIST;
	}
	t->fd = open(t->path, O_RDWR | O_CLOEXEC);
	if (t->fd < 0) {
		err = -errno;
		fail(p, err, t->path, "%s", strerror(-err));
		return err;
	}
	if ((uint64_t)st.st_size < t->region) {
		t->orig_size = (uint64_t)st.st_size;
		if (ftruncate(t->fd, (off_t)t->region)) {
			err = -errno;
			fail(p, err, t->path, "cannot extend from %s to %s: %s",
			     fmt_bytes(t->orig_size, sz, sizeof(sz)),
			     fmt_bytes(t->region, sz2, sizeof(sz2)), strerror(-err));
			return err;
		}
		t->extended = true;
	}
	return 0;
}

/* Allocate and zero-fill the region through @dev (see the comment at the top). */
static int target_prepare(struct probe *p, struct iol_dev *dev)
{
	struct target *t = &p->t;
	char err[256] = "";
	struct cost_bw bw;
	uint64_t ns, t0 = now_ns();
	int rc;

	if (t->is_sim)
		return 0;
	if (!t->is_blockdev && fallocate(t->fd, 0, 0, (off_t)t->region) && errno != EOPNOTSUPP) {
		rc = -errno;
		fail(p, rc, t->path, "cannot preallocate %" PRIu64 " bytes: %s", t->region,
		     strerror(-rc));
		return rc;
	}
	rc = cost_bw_setup(&bw, dev, true);
	if (rc) {
		cost_bw_teardown(&bw);
		fail(p, rc, t->path, "cannot allocate zero-fill buffers");
		return rc;
	}
	progress(p, "zero-filling %" PRIu64 " MiB", t->region >> 20);
	rc = cost_bw_pass(&p->m, &bw, IOL_OP_WRITE, t->region, &ns, err, sizeof(err));
	cost_bw_teardown(&bw);
	if (!rc)
		rc = cost_flush(dev, err, sizeof(err));
	if (rc && rc != -EINTR)
		fail(p, rc, t->path, "zero-fill: %s", err);
	t->prepare_s = (double)(now_ns() - t0) / 1e9;
	return rc;
}

/* ---- output ---- */

static const char *cache_str(int v)
{
	return v > 0 ? "write back" : v == 0 ? "write through" : "unknown";
}

static void print_device(struct probe *p, const struct iol_geom *g, const char *auto_be,
			 const char *const *names, size_t nr)
{
	const struct target *t = &p->t;
	char a[32], b[32];

	if (p->o.json)
		return;
	out(p, "delog probe %s\n", t->is_sim ? "(simulated disk)" : t->path);
	if (t->is_sim)
		out(p, "  target           in-memory sim backend, latency profile %s\n",
		    p->o.sim_latency == IOL_SIM_LAT_NVME ? "nvme" :
		    p->o.sim_latency == IOL_SIM_LAT_SATA ? "sata" :
							   "none");
	else if (t->is_blockdev)
		out(p, "  target           block device, %s\n",
		    fmt_bytes(g->size_bytes, a, sizeof(a)));
	else
		out(p, "  target           file on %s, %s\n", g->fs_type,
		    t->created  ? "created for the probe (removed at exit)" :
		    t->extended ? "existing (extended for the probe, truncated back at exit)" :
				  "existing");
	if (t->is_sim)
		out(p, "  probe region     %s\n", fmt_bytes(t->region, a, sizeof(a)));
	else
		out(p, "  probe region     %s, zero-filled first (%.2f s)\n",
		    fmt_bytes(t->region, a, sizeof(a)), t->prepare_s);
	out(p, "  logical block    %s\n", fmt_bytes(g->logical_block, a, sizeof(a)));
	out(p, "  physical block   %s\n",
	    g->physical_block ? fmt_bytes(g->physical_block, a, sizeof(a)) :
				"unknown (no block device queue behind the file system)");
	out(p, "  O_DIRECT align   memory %s, offset %s (%s)\n",
	    fmt_bytes(g->dio_mem_align, a, sizeof(a)), fmt_bytes(g->dio_off_align, b, sizeof(b)),
	    g->dioalign_from_statx ? "statx STATX_DIOALIGN" : "block size");
	out(p, "  write cache      %s%s\n", cache_str(g->volatile_cache),
	    g->volatile_cache > 0 ? " (volatile: a completed write is durable only after a flush)" :
				    "");
	out(p, "  FUA              %s\n",
	    g->fua > 0  ? "yes" :
	    g->fua == 0 ? "no (a FUA write becomes a write plus a flush)" :
			  "unknown");
	out(p, "  backends        ");
	for (size_t i = 0; i < nr; i++)
		out(p, " %s", names[i]);
	if (auto_be)
		out(p, " (auto-selected: %s)", auto_be);
	out(p, "\n");
}

static void print_latency_header(struct probe *p)
{
	out(p, "\n4 KiB O_DIRECT ops, one at a time, %" PRIu64 " each (microseconds)\n", p->o.ops);
	out(p, "  %-8s %-18s %9s %9s %9s %9s\n", "backend", "test", "median", "p99", "mean",
	    "ops/s");
}

static void print_latency(struct probe *p, const struct backend_result *r)
{
	bool have = r->lat[0].n > 0;

	if (!have) {
		out(p, "  %-8s %s\n", r->name, r->error);
		return;
	}
	for (int t = 0; t < COST_NR_LAT; t++) {
		const struct lat_stats *s = &r->lat[t];

		if (!s->n) {
			out(p, "  %-8s %-18s failed: %s\n", t ? "" : r->name,
			    cost_lat_names[t].label, r->error);
			break;
		}
		out(p, "  %-8s %-18s %9.1f %9.1f %9.1f %9.0f\n", t ? "" : r->name,
		    cost_lat_names[t].label, s->median_us, s->p99_us, s->mean_us, 1e6 / s->mean_us);
	}
}

static void print_bandwidth(struct probe *p, const struct backend_result *rs, size_t nr)
{
	const struct backend_result *fio_r = NULL;
	char a[32];

	out(p,
	    "\nsequential O_DIRECT, %u MiB requests, queue depth %u, %s per pass, median of %u "
	    "(MB/s = 10^6 bytes/s)\n",
	    COST_BW_BLOCK >> 20, COST_BW_QD, fmt_bytes(p->o.bw_bytes, a, sizeof(a)), p->o.passes);
	out(p, "  %-14s %12s %12s\n", "backend", "write MB/s", "read MB/s");
	for (size_t i = 0; i < nr; i++) {
		const struct backend_result *r = &rs[i];

		if (r->fio_tried)
			fio_r = r;
		if (!r->ok) {
			out(p, "  %-14s %s\n", r->name,
			    r->lat[COST_NR_LAT - 1].n ? r->error : "not measured (see above)");
			continue;
		}
		out(p, "  %-14s %12.1f %12.1f\n", r->name, r->write_mbs, r->read_mbs);
	}
	if (p->t.is_sim)
		return;
	if (p->o.no_fio) {
		out(p, "  fio            skipped (--no-fio)\n");
		return;
	}
	if (!p->fio) {
		out(p, "  fio            not installed (apt-get install fio)\n");
		return;
	}
	if (!fio_r) {
		out(p, "  fio            not run (the comparison is against the uring backend)\n");
		return;
	}
	if (!fio_r->fio.ran)
		return;
	if (!isnan(fio_r->fio.write_mbs) || !isnan(fio_r->fio.read_mbs)) {
		out(p, "  %-14s %12.1f %12.1f\n", "fio io_uring", fio_r->fio.write_mbs,
		    fio_r->fio.read_mbs);
		out(p, "  %-14s %12.3f %12.3f\n", "uring / fio",
		    fio_r->write_mbs / fio_r->fio.write_mbs, fio_r->read_mbs / fio_r->fio.read_mbs);
	}
	if (fio_r->fio.error[0])
		out(p, "  fio            %s\n", fio_r->fio.error);
}

static void print_recommendation(struct probe *p, const struct iol_geom *g, const char *auto_be,
				 const struct backend_result *rs, size_t nr)
{
	const struct backend_result *r = rec_backend(auto_be, rs, nr);
	struct probe_rec rec;
	char a[32];

	out(p, "\nrecommendation\n");
	if (!recommend_for(g, r, &rec)) {
		out(p, "  none: no backend was measured successfully\n");
		return;
	}
	out(p, "  from backend     %s%s\n", r->name,
	    auto_be && strcmp(auto_be, r->name) ? " (the auto-selected one failed)" : "");
	out(p, "  flush policy     %s\n", delog_flush_policy_name(rec.policy));
	out(p, "  log buffers      %u x %s (--logbufs %u --logbsize %uK)\n", rec.logbufs,
	    fmt_bytes(rec.logbsize, a, sizeof(a)), rec.logbufs, rec.logbsize >> 10);
	out(p, "  why              %s\n", rec.reason);
}

static void json_recommendation(struct json *j, const struct iol_geom *g, const char *auto_be,
				const struct backend_result *rs, size_t nr)
{
	const struct backend_result *r = rec_backend(auto_be, rs, nr);
	struct probe_rec rec;

	if (!recommend_for(g, r, &rec)) {
		json_null(j, "recommendation");
		return;
	}
	json_obj_begin(j, "recommendation");
	json_str(j, "policy", delog_flush_policy_name(rec.policy));
	json_u64(j, "logbufs", rec.logbufs);
	json_u64(j, "logbsize", rec.logbsize);
	json_str(j, "reason", rec.reason);
	json_str(j, "backend", r->name);
	json_obj_end(j);
}

static void json_lat(struct json *j, const char *key, const struct lat_stats *s)
{
	json_obj_begin(j, key);
	json_dbl(j, "median", s->median_us);
	json_dbl(j, "p99", s->p99_us);
	json_dbl(j, "mean", s->mean_us);
	json_dbl(j, "min", s->min_us);
	json_dbl(j, "max", s->max_us);
	json_u64(j, "ops", s->n);
	json_obj_end(j);
}

static void print_json(struct probe *p, const struct iol_geom *g, const char *auto_be,
		       const struct backend_result *rs, size_t nr, double elapsed)
{
	const struct target *t = &p->t;
	struct json j;

	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	json_str(&j, "tool", "delog probe");
	json_str(&j, "version", tool_version());
	json_str(&j, "path", t->is_sim ? NULL : t->path);

	json_obj_begin(&j, "target");
	json_str(&j, "kind", t->is_sim ? "sim" : t->is_blockdev ? "blockdev" : "file");
	json_bool(&j, "created", t->created);
	json_u64(&j, "region_bytes", t->region);
	json_dbl(&j, "zero_fill_s", t->is_sim ? NAN : t->prepare_s);
	if (t->is_sim)
		json_str(&j, "sim_profile",
			 p->o.sim_latency == IOL_SIM_LAT_NVME ? "nvme" :
			 p->o.sim_latency == IOL_SIM_LAT_SATA ? "sata" :
								"none");
	json_obj_end(&j);

	json_obj_begin(&j, "device");
	json_u64(&j, "size_bytes", g->size_bytes);
	json_u64(&j, "logical_block", g->logical_block);
	if (g->physical_block)
		json_u64(&j, "physical_block", g->physical_block);
	else
		json_null(&j, "physical_block");
	json_u64(&j, "dio_mem_align", g->dio_mem_align);
	json_u64(&j, "dio_off_align", g->dio_off_align);
	json_bool(&j, "dioalign_from_statx", g->dioalign_from_statx);
	json_bool(&j, "is_blockdev", g->is_blockdev);
	json_str(&j, "volatile_cache", cache_str(g->volatile_cache));
	if (g->fua < 0)
		json_null(&j, "fua");
	else
		json_bool(&j, "fua", g->fua > 0);
	json_str(&j, "fs_type", g->fs_type);
	json_obj_end(&j);

	json_str(&j, "auto_backend", auto_be);
	json_obj_begin(&j, "params");
	json_u64(&j, "ops", p->o.ops);
	json_u64(&j, "op_bytes", COST_OP_BYTES);
	json_u64(&j, "bw_block_bytes", COST_BW_BLOCK);
	json_u64(&j, "queue_depth", COST_BW_QD);
	json_u64(&j, "bw_bytes", p->o.bw_bytes);
	json_u64(&j, "bw_passes", p->o.passes);
	json_obj_end(&j);

	json_arr_begin(&j, "backends");
	for (size_t i = 0; i < nr; i++) {
		const struct backend_result *r = &rs[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "name", r->name);
		json_bool(&j, "ok", r->ok);
		if (!r->ok)
			json_str(&j, "error", r->error);
		if (r->lat[0].n) {
			json_obj_begin(&j, "latency_us");
			for (int k = 0; k < COST_NR_LAT; k++)
				if (r->lat[k].n)
					json_lat(&j, cost_lat_names[k].key, &r->lat[k]);
			json_obj_end(&j);
		}
		if (r->ok) {
			json_obj_begin(&j, "bandwidth_mbs");
			json_dbl(&j, "seq_write", r->write_mbs);
			json_dbl(&j, "seq_read", r->read_mbs);
			json_obj_end(&j);
			json_obj_begin(&j, "counters");
			json_u64(&j, "reads", r->cnt.reads);
			json_u64(&j, "writes", r->cnt.writes);
			json_u64(&j, "flushes", r->cnt.flushes);
			json_u64(&j, "fua_writes", r->cnt.fua_writes);
			json_u64(&j, "bytes_read", r->cnt.bytes_read);
			json_u64(&j, "bytes_written", r->cnt.bytes_written);
			json_u64(&j, "errors", r->cnt.errors);
			json_obj_end(&j);
		}
		if (r->fio_tried) {
			json_obj_begin(&j, "fio");
			json_bool(&j, "installed", p->fio != NULL);
			if (r->fio.ran) {
				json_dbl(&j, "seq_write_mbs", r->fio.write_mbs);
				json_dbl(&j, "seq_read_mbs", r->fio.read_mbs);
				json_dbl(&j, "ratio_write", r->write_mbs / r->fio.write_mbs);
				json_dbl(&j, "ratio_read", r->read_mbs / r->fio.read_mbs);
				if (r->fio.error[0])
					json_str(&j, "error", r->fio.error);
			}
			json_obj_end(&j);
		}
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_recommendation(&j, g, auto_be, rs, nr);
	json_dbl(&j, "elapsed_s", elapsed);
	json_obj_end(&j);
	json_finish(&j);
}

/* A probe that failed before its report (--json): the document bench's failures print,
 * {tool, version, path, error {code, name, message}, elapsed_s}, the message being what
 * stderr said first. */
static void json_error_doc(const struct probe *p, double elapsed)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	json_str(&j, "tool", "delog probe");
	json_str(&j, "version", tool_version());
	json_str(&j, "path", p->t.is_sim ? NULL : p->t.path);
	json_obj_begin(&j, "error");
	json_i64(&j, "code", p->err);
	json_str(&j, "name", tool_err_name(p->err));
	json_str(&j, "message", p->err_msg);
	json_obj_end(&j);
	json_dbl(&j, "elapsed_s", elapsed);
	json_obj_end(&j);
	json_finish(&j);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: delog probe [OPTIONS] PATH\n"
		   "       delog probe --backend sim [--sim-profile nvme|sata|none] [OPTIONS]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nMeasure what durable writes cost on PATH, per I/O backend: device facts, the\n"
	       "latency of single 4 KiB O_DIRECT writes, writes + flush, FUA writes and idle\n"
	       "flushes (median, p99, mean), and sequential O_DIRECT bandwidth with %u requests\n"
	       "of 1 MiB in flight.  With fio installed, fio's io_uring engine runs the same\n"
	       "bandwidth jobs on the same file and the ratio uring/fio is shown.  Last, the\n"
	       "flush policy and log buffers (--logbufs, --logbsize) it recommends for this\n"
	       "device, from the auto-selected backend's numbers, and the measured costs that\n"
	       "decided it (`delog bench --compare-flush` checks it).\n"
	       "\n"
	       "PATH is a file or a block device.  A file that does not exist is created,\n"
	       "preallocated and zero-filled, and removed at the end.  An existing non-empty file\n"
	       "or a block device is overwritten by the probe, so it needs --force.  The\n"
	       "filesystem must support O_DIRECT (tmpfs does not).\n"
	       "\n"
	       "options:\n"
	       "  -b, --backend NAME     probe only this backend (uring, aio, psync, sim);\n"
	       "                         default: every built-in one except sim\n"
	       "  -s, --size N           probe region, with K/M/G suffixes (default 256M;\n"
	       "                         64M for sim; at least 8M, a multiple of 1M)\n"
	       "      --ops N            measured ops per latency test (default %u, at least %u)\n"
	       "      --bw-bytes N       bytes per bandwidth pass (default: the probe region;\n"
	       "                         a multiple of 1M)\n"
	       "      --passes N         bandwidth passes per direction, median shown (default %u)\n"
	       "      --sim-profile P    latency model of the sim backend: nvme, sata, none\n"
	       "                         (default nvme)\n"
	       "      --no-fio           skip the fio comparison\n"
	       "  -f, --force            allow overwriting an existing file or a block device\n"
	       "  -j, --json             print one JSON document on stdout\n"
	       "  -h, --help             show this help\n"
	       "\n"
	       "Exit status: 0 success, 1 failure, 2 usage error.\n",
	       COST_BW_QD, DEFAULT_OPS, MIN_OPS, DEFAULT_PASSES);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "delog probe: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	return TOOL_EXIT_USAGE;
}

enum {
	OPT_BW_BYTES = 256,
	OPT_PASSES,
	OPT_SIM_PROFILE,
	OPT_NO_FIO,
	OPT_OPS
};

/* Returns -1 to continue, or an exit code. */
static int parse_args(int argc, char **argv, struct probe_opts *o)
{
	static const struct option lopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, OPT_OPS },
		{ "bw-bytes", required_argument, NULL, OPT_BW_BYTES },
		{ "passes", required_argument, NULL, OPT_PASSES },
		{ "sim-profile", required_argument, NULL, OPT_SIM_PROFILE },
		{ "no-fio", no_argument, NULL, OPT_NO_FIO },
		{ "force", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool size_given = false, profile_given = false, sim;
	uint64_t v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->ops = DEFAULT_OPS;
	o->passes = DEFAULT_PASSES;
	o->sim_latency = IOL_SIM_LAT_NVME;
	while ((ch = getopt_long(argc, argv, "b:s:fjh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			if (!strcmp(optarg, "auto"))
				break;
			if (!iol_backend_built(optarg))
				return usage_error("unknown or not built-in backend '%s'", optarg);
			o->backend = optarg;
			break;
		case 's':
			/* Whole bandwidth requests: refused otherwise, never rounded. */
			if (tool_parse_size("probe", "--size", optarg, MIN_SIZE, 0, COST_BW_BLOCK,
					    NULL, &o->size)) {
				usage(stderr);
				return TOOL_EXIT_USAGE;
			}
			size_given = true;
			break;
		case OPT_OPS:
			if (parse_count(optarg, MIN_OPS, 100000000, &o->ops))
				return usage_error("--ops: '%s' is not a count of at least %u (a p99 "
						   "needs them)",
						   optarg, MIN_OPS);
			break;
		case OPT_BW_BYTES:
			if (tool_parse_size("probe", "--bw-bytes", optarg,
					    COST_BW_BLOCK * COST_BW_QD, 0, COST_BW_BLOCK, NULL,
					    &o->bw_bytes)) {
				usage(stderr);
				return TOOL_EXIT_USAGE;
			}
			break;
		case OPT_PASSES:
			if (parse_count(optarg, 1, MAX_PASSES, &v))
				return usage_error("--passes: '%s' is not a count from 1 to %u",
						   optarg, MAX_PASSES);
			o->passes = (unsigned)v;
			break;
		case OPT_SIM_PROFILE:
			if (iol_sim_latency_parse(optarg, &o->sim_latency))
				return usage_error("--sim-profile: '%s' is not nvme, sata or none",
						   optarg);
			profile_given = true;
			break;
		case OPT_NO_FIO:
			o->no_fio = true;
			break;
		case 'f':
			o->force = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			help();
			return TOOL_EXIT_OK;
		default:
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	sim = o->backend && !strcmp(o->backend, "sim");
	if (profile_given && !sim)
		return usage_error("--sim-profile needs --backend sim");
	if (sim) {
		if (optind < argc)
			return usage_error("--backend sim takes no PATH (the simulated disk lives "
					   "in memory)");
	} else {
		if (optind >= argc)
			return usage_error("no PATH given");
		if (optind + 1 < argc)
			return usage_error("takes one PATH");
		o->path = argv[optind];
	}
	if (!size_given)
		o->size = sim ? DEFAULT_SIM_SIZE : DEFAULT_SIZE;
	if (o->bw_bytes && o->bw_bytes > o->size)
		return usage_error("--bw-bytes exceeds the probe size (--size)");
	return -1;
}

/* The backends to probe: the one named, or every built-in one except sim. */
static size_t backend_list(const struct probe_opts *o, const char **names, size_t max)
{
	const char *const *all = iol_backend_names();
	size_t n = 0;

	if (o->backend) {
		names[n++] = o->backend;
		return n;
	}
	for (size_t i = 0; all[i] && n < max; i++)
		if (strcmp(all[i], "sim"))
			names[n++] = all[i];
	return n;
}

int cmd_probe(int argc, char **argv)
{
	static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct probe p;
	struct backend_result rs[8];
	const char *names[8];
	struct iol_dev_opts dopts;
	struct iol_sim_opts so;
	struct iol_dev *adev = NULL;
	struct iol_geom geom;
	const char *auto_be = NULL;
	char errmsg[512] = "";
	sigset_t old;
	uint64_t t0 = now_ns();
	double elapsed;
	size_t nr;
	bool reported = false;
	int rc, ret = TOOL_EXIT_FAIL;

	memset(&p, 0, sizeof(p));
	rc = parse_args(argc, argv, &p.o);
	if (rc >= 0)
		return rc;
	p.t.path = p.o.path;
	p.t.fd = -1;
	p.t.is_sim = p.o.path == NULL;
	p.prog.on = isatty(STDERR_FILENO);
	if (!p.o.bw_bytes)
		p.o.bw_bytes = p.o.size;
	if (!p.o.no_fio && !p.t.is_sim)
		p.fio = fio_find(p.fio_path, sizeof(p.fio_path));
	nr = backend_list(&p.o, names, sizeof(names) / sizeof(names[0]));
	p.m.ops = p.o.ops;
	p.m.samples = calloc(p.o.ops, sizeof(*p.m.samples));
	p.m.stop = meter_stop;
	p.m.on_op = meter_op;
	p.m.arg = &p;
	if (!p.m.samples) {
		fail(&p, -ENOMEM, NULL, "out of memory");
		return TOOL_EXIT_FAIL;
	}

	/* Block the stop signals before any backend thread exists, so all inherit it. */
	sigemptyset(&p.stop_sigs);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++) {
		struct sigaction sa;

		/* An ignored signal (nohup, a background job) must not stop the probe. */
		if (sigaction(stop_sigs[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
			sigaddset(&p.stop_sigs, stop_sigs[i]);
	}
	pthread_sigmask(SIG_BLOCK, &p.stop_sigs, &old);

	if (target_open(&p))
		goto out;

	/* Which backend auto-selection picks; its device also does the zero-fill and
	 * supplies the device facts (for sim, the sim device does). */
	opts_for(&p, &dopts, &so, p.t.is_sim ? "sim" : NULL, errmsg, sizeof(errmsg));
	rc = iol_dev_open(p.t.is_sim ? NULL : p.t.path, &dopts, &adev);
	if (rc) {
		if (errmsg[0])
			fail(&p, rc, NULL, "%s", errmsg);
		else
			fail(&p, rc, p.t.path, "%s", tool_strerror(rc));
		goto out;
	}
	if (!p.t.is_sim)
		auto_be = iol_dev_backend(adev);
	if (p.t.is_blockdev) {
		uint64_t dev_bytes = iol_dev_geom(adev)->size_bytes;

		if (dev_bytes < p.t.region)
			p.t.region = dev_bytes - dev_bytes % COST_BW_BLOCK;
		if (p.t.region < MIN_SIZE) {
			fail(&p, -ENOSPC, p.t.path, "is smaller than 8 MiB; too small to probe");
			goto out;
		}
		if (p.o.bw_bytes > p.t.region)
			p.o.bw_bytes = p.t.region;
	}
	p.m.region = p.t.region; /* from the start of PATH (m.base 0) */
	if (iol_dev_geom(adev)->dio_off_align > COST_OP_BYTES) {
		fail(&p, -EINVAL, p.t.path,
		     "needs %u-byte O_DIRECT alignment; the probe's ops are 4 KiB",
		     iol_dev_geom(adev)->dio_off_align);
		goto out;
	}
	rc = target_prepare(&p, adev);
	geom = *iol_dev_geom(adev);
	iol_dev_close(adev);
	adev = NULL;
	if (rc)
		goto out;
	print_device(&p, &geom, auto_be, names, nr);

	memset(rs, 0, sizeof(rs));
	if (!p.o.json)
		print_latency_header(&p);
	for (size_t i = 0; i < nr; i++) {
		rs[i].name = names[i];
		rs[i].fio_tried = !p.o.no_fio && !p.t.is_sim && !strcmp(names[i], "uring");
		rs[i].fio.write_mbs = rs[i].fio.read_mbs = NAN;
		if (backend_run(&p, &rs[i]) == -EINTR)
			goto out;
		print_latency(&p, &rs[i]);
	}
	if (!p.o.json) {
		print_bandwidth(&p, rs, nr);
		print_recommendation(&p, &geom, auto_be, rs, nr);
	}

	elapsed = (double)(now_ns() - t0) / 1e9;
	reported = true;
	if (p.o.json)
		print_json(&p, &geom, auto_be, rs, nr, elapsed);
	else
		out(&p, "\nprobe took %.1f s\n", elapsed);
	/* One unusable backend among several is reported, not fatal; none usable is. */
	for (size_t i = 0; i < nr; i++)
		if (rs[i].ok)
			ret = TOOL_EXIT_OK;
out:
	progress_clear(&p);
	if (adev)
		iol_dev_close(adev);
	if (interrupted(&p))
		fail(&p, -EINTR, p.t.path, "interrupted");
	target_cleanup(&p);
	if (p.o.json && !reported)
		json_error_doc(&p, (double)(now_ns() - t0) / 1e9);
	free(p.m.samples);
	/* A pending stop signal is delivered here, after the cleanup. */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}
