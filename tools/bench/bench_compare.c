/*
 * bench_compare.c - `delog bench --compare-flush` (the workload `compare-flush`): the
 * flush-policy comparison of the Linux commit "xfs: drop async cache flushes from CIL
 * commits", for every delog policy, on the user's own device, in one run.
 *
 * Why: that commit argued with two tables - dbench at 1, 8, 16, 32, 128 and 512
 * clients (bandwidth and latency, async vs sync) and fs_mark's create/chown/unlink times
 * - and found async and sync within noise on fast and slow SSDs.  delog has four
 * policies (sync, async, single, and none, which is unsafe) and users choose between
 * them for their device, so this runs the same two workloads (bench_dbench.c,
 * bench_fsmark.c) under each and prints the tables in the commit's shape, with what the
 * tables cannot show on their own:
 *   - device flushes and transactions per checkpoint per policy (delog_stats), so a
 *     difference in time can be traced to a difference in flushes (docs/FLUSH-POLICIES.md
 *     has the rules: single at most 1, none 0, sync and async 1..2, one more on a disk
 *     without FUA, where delog_stats counts each FUA write as the write + flush it
 *     becomes), and beside them the flush requests the disk itself completed over the
 *     same span (/sys/block/DISK/stat, bench_util.c; '-' or null on sim or without
 *     counters; an upper bound where other processes flush the same disk);
 *   - a raw device baseline: one thread writing 4 KiB with O_DIRECT and calling
 *     fdatasync in a loop for the same time, in a region after the log that is written
 *     with zeroes first (bench_prewrite, as for bench_commit.c's baselines; on the sim
 *     disk: a 4 KiB write and a flush through the iolayer on a disk with the same
 *     latency profile), measured beside every client count; dbench's forces per second
 *     are shown as a ratio to it;
 *   - fsmark times as a ratio to sync's;
 *   - probe's recommendation checked (issue 18): before the points, the costs `delog
 *     probe` measures (probe_measure_costs in tools/common/costs.c, the probe's own code:
 *     4 KiB write, write + flush, FUA write and idle flush medians, one sequential write
 *     pass) are measured on the target (the raw baseline's region; on sim, a disk of the
 *     run's profile), the rule of tools/common/recommend.c picks a policy, and per
 *     client count the
 *     recommended policy's dbench BW is divided by the best safe policy's (sync, async,
 *     single): the rule is right where that is >= 0.95 at every client count.  Then the
 *     buffers it recommends: when rec.logbufs x rec.logbsize is not the run's geometry
 *     (--logbufs/--logbsize, default 8 x 256 KiB) and the recommended policy is run,
 *     that policy's dbench point runs once more at each client count with the
 *     recommended geometry (right after the policies of that client count, through
 *     the same run_dbench/dbench_point, only the options' geometry differs), and its
 *     BW over the same policy's BW with the run's geometry must be >= 0.95 (the
 *     recommended buffers are not worse than the run's by more than 5%); with equal
 *     geometries the policy table already measured it and nothing more runs.  Both are
 *     reports, not a pass/fail exit: benchmarks never fail on timing.
 * Policies are interleaved within each client count (the starting policy rotates from
 * one client count to the next), so drift in the device affects all alike; the raw
 * baseline runs first at each client count.
 *
 * Targets: a file (default: a temporary file in the current directory, which bench.c
 * creates and removes), a block device (PATH or --device, with --force), formatted once
 * and reopened per point as bench_commit.c does; or `--backend sim --sim-profile
 * none|nvme|sata`, where every point gets a new simulated disk with that latency model
 * (opened by bench_flush.c with iol_dev_open and engine_open_dev from engine.h, the one
 * non-public call: the public delog_open makes a sim disk without latency).  The
 * workloads themselves use <delog.h> only.
 *
 * Output: human tables, then the recommendation (its line, the costs, the policy
 * check's ratio table and verdict, "recommended log buffers: ...", and the geometry
 * check's ratio table with the extra points' flushes per checkpoint and its verdict,
 * or one line saying why it ran nothing); --csv (a header and one line per row: raw,
 * dbench and fsmark rows, then recommend, recommend_policy and recommend_geometry rows,
 * csv_recommendation; logbufs..note are the last columns); --json (one document, one
 * object per row in "rows", the "recommendation" object with "checks" and "geometry":
 * {policy, logbufs, logbsize, run_logbufs, run_logbsize, target, checks: {clients,
 * mb_per_s, run_mb_per_s, ratio, met, and the point's dbench fields}, met}, or null and
 * "geometry_skipped": a geo_skip keyword); --plot FILE.png (bandwidth and force latency
 * against clients per policy, drawn by gnuplot).  The options, checks and the run loop here
 * also serve `--workload dbench` and `--workload fsmark` (each the one half, no
 * baseline).
 */
#include "bench_flush.h"
#include "common/costs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REC_OPS 200u    /* ops per latency test, as `delog probe --ops 200` */
#define REC_TARGET 0.95 /* recommended / best safe BW, at every client count */

/* The target: allocate, pre-write the baseline's region, format the log once. */
static int prepare(struct fb_env *e)
{
	const struct fb_opts *o = e->o;
	struct delog_options lo = fb_log_opts(e, DELOG_FLUSH_SYNC, DELOG_OPEN_FORMAT);

	return bench_log_prepare(e->b, DELOG_SB_BYTES + o->log_size + FB_RAW_AREA, &e->fs_type,
				 DELOG_SB_BYTES + o->log_size,
				 o->do_raw || o->do_recommend ? FB_RAW_AREA : 0, &lo, &e->format_s);
}

/* ---- the raw baseline ---- */

/* One 4 KiB write + flush on the raw region (file) or a sim disk.  0 or -errno. */
static int raw_once(int fd, struct iol_dev *dev, void *buf, uint64_t off)
{
	struct iol_req req;
	int err;

	if (!dev)
		return bench_write_sync(fd, buf, FB_RAW_BLOCK, off);
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), off, buf, FB_RAW_BLOCK, NULL);
	if (err)
		return err;
	err = iol_req_init(&req, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));
	if (err)
		return err;
	err = iol_submit_wait(&req);
	iol_req_release(&req);
	return err;
}

static int raw_point(struct fb_env *e, unsigned clients, struct raw_row *row)
{
	struct bench *b = e->b;
	uint64_t base = e->sim ? 0 : DELOG_SB_BYTES + e->o->log_size, k = 0, lat_sum = 0;
	uint64_t lat_max = 0, t_end, ws, t;
	struct iol_dev *dev = NULL;
	void *buf = NULL;
	int fd = -1, err = 0;

	memset(row, 0, sizeof(*row));
	row->clients = clients;
	if (e->sim)
		err = bench_sim_open(e->b, FB_RAW_AREA, (int)e->lat, &dev);
	else if ((fd = open(b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC)) < 0)
		bench_fail(b, err = -errno, b->t.path, "cannot open with O_DIRECT: %s",
			   strerror(errno));
	if (!err && posix_memalign(&buf, 4096, FB_RAW_BLOCK))
		err = -ENOMEM;
	if (err)
		goto out;
	memset(buf, 0x5a, FB_RAW_BLOCK);
	ws = now_ns() + bench_warmup_ns(e->o->time_s);
	t_end = ws + (uint64_t)(e->o->time_s * 1e9);
	while ((t = now_ns()) < t_end && !bench_interrupted(b)) {
		uint64_t t1;

		err = raw_once(fd, dev, buf, base + k++ * FB_RAW_BLOCK % FB_RAW_AREA);
		if (err)
			break;
		t1 = now_ns();
		if (t >= ws && t1 <= t_end) {
			row->syncs++;
			lat_sum += t1 - t;
			if (t1 - t > lat_max)
				lat_max = t1 - t;
		}
	}
	if (err) {
		bench_fail(b, err, NULL, "raw baseline: %s", tool_strerror(err));
		goto out;
	}
	if (bench_interrupted(b)) {
		err = -EINTR;
		goto out;
	}
	row->window_s = (double)(t_end - ws) / 1e9;
	row->syncs_per_s = (double)row->syncs / row->window_s;
	row->mb_per_s = row->syncs_per_s * FB_RAW_BLOCK / 1e6;
	row->lat_avg_ms = row->syncs ? (double)lat_sum / (double)row->syncs / 1e6 : NAN;
	row->lat_max_ms = row->syncs ? (double)lat_max / 1e6 : NAN;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (dev)
		iol_dev_close(dev);
	return err;
}

/* ---- the run ---- */

struct frun {
	struct fb_env e;
	struct dbench_row *db; /* [client index][policy index] */
	bool *db_ok;
	struct raw_row *raw; /* [client index] */
	bool *raw_ok;
	struct fsmark_row *fs; /* [policy index] */
	bool *fs_ok;
	/* probe's recommendation (o->do_recommend) */
	bool rec_ok;
	struct probe_costs costs;
	struct probe_rec rec;
	const char *rec_backend;
	char rec_err[256]; /* why there is none, when measuring failed */
	/* the recommended policy's dbench points with the recommended geometry, when that
	 * is not the run's (geo_skip() NULL) */
	struct dbench_row *geo; /* [client index] */
	bool *geo_ok;
};

/* The run's log buffers: --logbufs and --logbsize, else the engine's defaults. */
static unsigned run_logbufs(const struct fb_opts *o)
{
	return o->logbufs ? o->logbufs : DELOG_LOGBUFS_MAX;
}

static uint32_t run_logbsize(const struct fb_opts *o)
{
	return o->logbsize ? o->logbsize : DELOG_LOGBSIZE_MAX;
}

static const char *pname(enum delog_flush_policy p)
{
	return p == DELOG_FLUSH_NONE ? "none (UNSAFE)" : delog_flush_policy_name(p);
}

static const char *workload_label(const struct fb_opts *o)
{
	return o->do_dbench && o->do_fsmark ? "--compare-flush" :
	       o->do_dbench                 ? "--workload dbench" :
					      "--workload fsmark";
}

static const struct dbench_row *dbr(const struct frun *r, unsigned c, unsigned p)
{
	size_t i = (size_t)c * r->e.o->npolicy + p;

	return r->db_ok && r->db_ok[i] ? &r->db[i] : NULL;
}

static const struct raw_row *rawr(const struct frun *r, unsigned c)
{
	return r->raw_ok && r->raw_ok[c] ? &r->raw[c] : NULL;
}

static const struct fsmark_row *fsr(const struct frun *r, unsigned p)
{
	return r->fs_ok && r->fs_ok[p] ? &r->fs[p] : NULL;
}

/* fsmark's sync row, for the ratios (NULL when sync was not run). */
static const struct fsmark_row *fs_sync(const struct frun *r)
{
	for (unsigned p = 0; p < r->e.o->npolicy; p++)
		if (r->e.o->policy[p] == DELOG_FLUSH_SYNC)
			return fsr(r, p);
	return NULL;
}

/* Checkpoints over the three phases; delog's device flushes and the disk's (NAN without
 * counters) into @flushes and @disk. */
static double fs_total_checkpoints(const struct fsmark_row *f, double *flushes, double *disk)
{
	double ck = 0, fl = 0, dk = 0;

	for (unsigned ph = 0; ph < FB_NR_PHASES; ph++) {
		ck += (double)f->st[ph].checkpoints;
		fl += (double)f->st[ph].device_flushes;
		dk += f->st[ph].disk_flushes;
	}
	*flushes = fl;
	*disk = dk;
	return ck;
}

static void print_recommendation(struct frun *r);
static void json_recommendation(struct json *j, const struct frun *r);

/* The report's head: the target, the log, and what each part of the run does. */
static void print_setup(const struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	struct bench *b = r->e.b;
	char sz[32], sz2[32];

	bench_out(b, "delog bench %s %s\n", workload_label(o), r->e.sim ? "(sim)" : b->t.path);
	if (r->e.sim)
		bench_out(b,
			  "  target      the in-memory disk (--backend sim), latency profile %s; "
			  "a new disk per point\n",
			  r->e.lat == IOL_SIM_LAT_NVME ? "nvme" :
			  r->e.lat == IOL_SIM_LAT_SATA ? "sata" :
							 "none");
	else
		bench_out_target(b, r->e.fs_type, b->o.backend);
	bench_out_disk(b, &r->e.disk);
	bench_out(b, "  log         %s, %u x %s buffers", fmt_bytes(o->log_size, sz, sizeof(sz)),
		  run_logbufs(o), fmt_bytes(run_logbsize(o), sz2, sizeof(sz2)));
	if (!r->e.sim)
		bench_out(b, "; formatted once in %.2f s, reopened per point", r->e.format_s);
	bench_out(b, "\n");
	if (o->do_dbench)
		bench_out(b,
			  "  dbench      1-4 items of 64 B-4 KiB per transaction, a force every %u; "
			  "%.2f s per point after a %.2f s warm-up\n",
			  o->force_every, o->time_s, (double)bench_warmup_ns(o->time_s) / 1e9);
	if (o->do_fsmark)
		bench_out(b,
			  "  fsmark      %u threads x %u files; create, chown, unlink, each "
			  "timed up to its final force\n",
			  o->threads, o->files);
	if (o->do_raw)
		bench_out(b, "  raw         one thread, %s, for --time beside every client count\n",
			  r->e.sim ? "4 KiB write + flush on a sim disk of the same profile" :
				     "4 KiB O_DIRECT pwrite + fdatasync after the log");
}

/* dbench's tables: bandwidth and latency, flushes per checkpoint, and against the raw
 * device. */
static void print_dbench(const struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	struct bench *b = r->e.b;

	bench_out(b,
		  "\ndbench: BW = MB/s of logged payload; avg, max = latency of the "
		  "forcing operations, ms\n%-7s",
		  "");
	for (unsigned p = 0; p < o->npolicy; p++)
		bench_out(b, "  %-24s", pname(o->policy[p]));
	bench_out(b, "\n%-7s", "clients");
	for (unsigned p = 0; p < o->npolicy; p++)
		bench_out(b, "  %8s %7s %7s", "BW", "avg", "max");
	bench_out(b, "\n");
	for (unsigned c = 0; c < o->nclients; c++) {
		bench_out(b, "%7u", o->clients[c]);
		for (unsigned p = 0; p < o->npolicy; p++) {
			const struct dbench_row *w = dbr(r, c, p);

			if (w)
				bench_out(b, "  %8.2f %7.3f %7.2f", w->mb_per_s, w->lat_avg_ms,
					  w->lat_max_ms);
			else
				bench_out(b, "  %8s %7s %7s", "-", "-", "-");
		}
		bench_out(b, "\n");
	}
	bench_out(b,
		  "\ndbench: device flushes per checkpoint, delog's / the disk's ('-': "
		  "no counter) / transactions per checkpoint\n%-7s",
		  "clients");
	for (unsigned p = 0; p < o->npolicy; p++)
		bench_out(b, "  %-20s", pname(o->policy[p]));
	bench_out(b, "\n");
	for (unsigned c = 0; c < o->nclients; c++) {
		bench_out(b, "%7u", o->clients[c]);
		for (unsigned p = 0; p < o->npolicy; p++) {
			const struct dbench_row *w = dbr(r, c, p);
			char cell[40];

			if (w && isfinite(w->st.disk_per_ckpt))
				snprintf(cell, sizeof(cell), "%.2f / %.2f / %.1f",
					 w->st.flushes_per_ckpt, w->st.disk_per_ckpt,
					 w->st.txs_per_ckpt);
			else if (w)
				snprintf(cell, sizeof(cell), "%.2f / - / %.1f",
					 w->st.flushes_per_ckpt, w->st.txs_per_ckpt);
			else
				snprintf(cell, sizeof(cell), "-");
			bench_out(b, "  %-20s", cell);
		}
		bench_out(b, "\n");
	}
	if (o->do_raw) {
		bench_out(b,
			  "\ndbench vs the raw device: forces/s / raw %s/s (raw measured "
			  "just before)\n%-7s %10s %8s",
			  r->e.sim ? "write+flush" : "write+fdatasync", "clients", "raw/s",
			  "raw ms");
		for (unsigned p = 0; p < o->npolicy; p++)
			bench_out(b, "  %13s", pname(o->policy[p]));
		bench_out(b, "\n");
		for (unsigned c = 0; c < o->nclients; c++) {
			const struct raw_row *rw = rawr(r, c);

			if (!rw)
				continue;
			bench_out(b, "%7u %10.1f %8.3f", o->clients[c], rw->syncs_per_s,
				  rw->lat_avg_ms);
			for (unsigned p = 0; p < o->npolicy; p++) {
				const struct dbench_row *w = dbr(r, c, p);

				bench_out(b, "  %12.2fx",
					  w ? w->forces_per_s / rw->syncs_per_s : NAN);
			}
			bench_out(b, "\n");
		}
	}
}

/* fsmark's table: seconds per phase, flushes per checkpoint, and against sync. */
static void print_fsmark(const struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	struct bench *b = r->e.b;
	const struct fsmark_row *s = fs_sync(r);

	bench_out(b,
		  "\nfsmark: %u threads x %u files; seconds per phase, up to its final "
		  "force\n%-16s",
		  o->threads, o->files, "phase");
	for (unsigned p = 0; p < o->npolicy; p++)
		bench_out(b, "  %13s", pname(o->policy[p]));
	bench_out(b, "\n");
	for (unsigned ph = 0; ph < FB_NR_PHASES; ph++) {
		bench_out(b, "%-16s", fb_phase_names[ph]);
		for (unsigned p = 0; p < o->npolicy; p++) {
			const struct fsmark_row *f = fsr(r, p);

			bench_out(b, "  %13.3f", f ? f->phase_s[ph] : NAN);
		}
		bench_out(b, "\n");
	}
	bench_out(b, "%-16s", "flushes/ckpt");
	for (unsigned p = 0; p < o->npolicy; p++) {
		const struct fsmark_row *f = fsr(r, p);
		double fl = 0, dk = NAN, ck = f ? fs_total_checkpoints(f, &fl, &dk) : 0;
		char cell[40];

		snprintf(cell, sizeof(cell), "%.2f (%.0f)", ck ? fl / ck : NAN, ck);
		bench_out(b, "  %13s", cell);
	}
	bench_out(b, "\n%-16s", "disk fl/ckpt");
	for (unsigned p = 0; p < o->npolicy; p++) {
		const struct fsmark_row *f = fsr(r, p);
		double fl = 0, dk = NAN, ck = f ? fs_total_checkpoints(f, &fl, &dk) : 0;

		if (ck && isfinite(dk))
			bench_out(b, "  %13.2f", dk / ck);
		else
			bench_out(b, "  %13s", "-");
	}
	bench_out(b, "\n");
	if (s) {
		for (unsigned ph = 0; ph < FB_NR_PHASES; ph++) {
			char label[32];

			snprintf(label, sizeof(label), "%s vs sync", fb_phase_names[ph]);
			bench_out(b, "%-16s", label);
			for (unsigned p = 0; p < o->npolicy; p++) {
				const struct fsmark_row *f = fsr(r, p);

				bench_out(b, "  %12.3fx",
					  f ? f->phase_s[ph] / s->phase_s[ph] : NAN);
			}
			bench_out(b, "\n");
		}
	}
	bench_out(b, "  flushes/ckpt: device flushes delog counted per checkpoint over the "
		     "three phases (checkpoints); disk fl/ckpt: flush requests the disk "
		     "completed, per checkpoint\n");
}

static void print_human(struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	struct bench *b = r->e.b;

	print_setup(r);
	if (o->do_dbench)
		print_dbench(r);
	if (o->do_fsmark)
		print_fsmark(r);
	print_recommendation(r);
	bench_out(b, "\nbench took %.1f s\n", (double)(now_ns() - b->t0) / 1e9);
}

/* ---- CSV and JSON ---- */

/* The columns after disk_flushes: each row's log buffers (dbench, fsmark, the
 * recommendation's), and the recommendation checks' (ref: the policy of the dbench row,
 * at the same clients, that ratio divides by; met true/false; note: geo_skip()'s
 * keyword). */
static const char csv_header[] =
	"workload,policy,unsafe,clients,phase,window_s,ops,ops_per_s,mb_per_s,forces,"
	"forces_per_s,lat_avg_ms,lat_max_ms,phase_s,checkpoints,device_flushes,preflushes,"
	"flushes,fua_writes,transactions,relogged,flushes_per_checkpoint,txs_per_checkpoint,"
	"vs_raw,vs_sync,fua_flushes,disk_flushes,space_flushes,logbufs,logbsize,ref,ratio,target,met,note\n";

static void csv_dbl(double v, bool last)
{
	if (isfinite(v))
		printf("%.6g", v);
	putchar(last ? '\n' : ',');
}

/* @n empty fields. */
static void csv_empty(unsigned n)
{
	while (n--)
		putchar(',');
}

static void csv_stats(const struct fb_stats *s)
{
	printf("%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
	       ",",
	       s->checkpoints, s->device_flushes, s->preflushes, s->flushes, s->fua_writes,
	       s->transactions, s->relogged);
	csv_dbl(s->flushes_per_ckpt, false);
	csv_dbl(s->txs_per_ckpt, false);
}

/* The last seven columns, ending the line: @logbufs 0 leaves the geometry empty, @met < 0
 * leaves met empty. */
static void csv_tail(unsigned logbufs, uint32_t logbsize, const char *ref, double ratio,
		     double target, int met, const char *note)
{
	if (logbufs)
		printf("%u,%" PRIu32 ",", logbufs, logbsize);
	else
		csv_empty(2);
	printf("%s,", ref ? ref : "");
	csv_dbl(ratio, false);
	csv_dbl(target, false);
	printf("%s,%s\n", met < 0 ? "" : met ? "true" : "false", note ? note : "");
}

/* A dbench point's columns up to space_flushes, as @workload (vs_raw against @rw). */
static void csv_dbench(const char *workload, const struct dbench_row *w, const struct raw_row *rw)
{
	printf("%s,%s,%s,%u,,", workload, delog_flush_policy_name(w->policy),
	       w->policy == DELOG_FLUSH_NONE ? "true" : "false", w->clients);
	csv_dbl(w->window_s, false);
	printf("%" PRIu64 ",", w->ops);
	csv_dbl(w->ops_per_s, false);
	csv_dbl(w->mb_per_s, false);
	printf("%" PRIu64 ",", w->forces);
	csv_dbl(w->forces_per_s, false);
	csv_dbl(w->lat_avg_ms, false);
	csv_dbl(w->lat_max_ms, false);
	printf(",");
	csv_stats(&w->st);
	csv_dbl(rw ? w->forces_per_s / rw->syncs_per_s : NAN, false);
	printf(",%" PRIu64 ",", w->st.fua_flushes);
	csv_dbl(w->st.disk_flushes, false);
	printf("%" PRIu64 ",", w->st.space_flushes);
}

static void csv_recommendation(const struct frun *r);

static void print_csv(struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	const struct fsmark_row *s = fs_sync(r);

	fputs(csv_header, stdout);
	for (unsigned c = 0; c < o->nclients && o->do_dbench; c++) {
		const struct raw_row *rw = rawr(r, c);

		if (rw) {
			printf("raw,%s,false,%u,,", r->e.sim ? "write+flush" : "write+fdatasync",
			       rw->clients);
			csv_dbl(rw->window_s, false);
			printf("%" PRIu64 ",", rw->syncs);
			csv_dbl(rw->syncs_per_s, false);
			csv_dbl(rw->mb_per_s, false);
			printf("%" PRIu64 ",", rw->syncs);
			csv_dbl(rw->syncs_per_s, false);
			csv_dbl(rw->lat_avg_ms, false);
			csv_dbl(rw->lat_max_ms, false);
			csv_empty(15);
			csv_tail(0, 0, NULL, NAN, NAN, -1, NULL);
		}
		for (unsigned p = 0; p < o->npolicy; p++) {
			const struct dbench_row *w = dbr(r, c, p);

			if (!w)
				continue;
			csv_dbench("dbench", w, rw);
			csv_tail(run_logbufs(o), run_logbsize(o), NULL, NAN, NAN, -1, NULL);
		}
	}
	for (unsigned p = 0; p < o->npolicy && o->do_fsmark; p++) {
		const struct fsmark_row *f = fsr(r, p);

		for (unsigned ph = 0; f && ph < FB_NR_PHASES; ph++) {
			printf("fsmark,%s,%s,%u,%s,,,,", delog_flush_policy_name(f->policy),
			       f->policy == DELOG_FLUSH_NONE ? "true" : "false", f->threads,
			       fb_phase_names[ph]);
			csv_dbl(bench_mbs(f->phase_bytes[ph], (uint64_t)(f->phase_s[ph] * 1e9)),
				false);
			printf(",,,,");
			csv_dbl(f->phase_s[ph], false);
			csv_stats(&f->st[ph]);
			printf(",");
			csv_dbl(s ? f->phase_s[ph] / s->phase_s[ph] : NAN, false);
			printf("%" PRIu64 ",", f->st[ph].fua_flushes);
			csv_dbl(f->st[ph].disk_flushes, false);
			printf("%" PRIu64 ",", f->st[ph].space_flushes);
			csv_tail(run_logbufs(o), run_logbsize(o), NULL, NAN, NAN, -1, NULL);
		}
	}
	csv_recommendation(r);
	fflush(stdout);
}

static void json_stats(struct json *j, const struct fb_stats *s)
{
	json_u64(j, "checkpoints", s->checkpoints);
	json_u64(j, "device_flushes", s->device_flushes);
	json_u64(j, "preflushes", s->preflushes);
	json_u64(j, "flushes", s->flushes);
	json_u64(j, "fua_writes", s->fua_writes);
	json_u64(j, "fua_flushes", s->fua_flushes);
	json_u64(j, "space_flushes", s->space_flushes);
	json_dbl(j, "disk_flushes", s->disk_flushes);
	json_dbl(j, "disk_flushes_per_checkpoint", s->disk_per_ckpt);
	json_u64(j, "transactions", s->transactions);
	json_u64(j, "items_logged", s->items_logged);
	json_u64(j, "relogged", s->relogged);
	json_u64(j, "records", s->records);
	json_u64(j, "record_bytes", s->record_bytes);
	json_u64(j, "space_waits", s->space_waits);
	json_dbl(j, "flushes_per_checkpoint", s->flushes_per_ckpt);
	json_dbl(j, "txs_per_checkpoint", s->txs_per_ckpt);
}

/* A dbench point's measured fields after mb_per_s (vs_raw against @rw): a row of "rows"
 * and a check of the geometry's. */
static void json_dbench_point(struct json *j, const struct dbench_row *w, const struct raw_row *rw)
{
	json_dbl(j, "window_s", w->window_s);
	json_u64(j, "ops", w->ops);
	json_dbl(j, "ops_per_s", w->ops_per_s);
	json_u64(j, "bytes", w->bytes);
	json_u64(j, "forces", w->forces);
	json_dbl(j, "forces_per_s", w->forces_per_s);
	json_dbl(j, "lat_avg_ms", w->lat_avg_ms);
	json_dbl(j, "lat_max_ms", w->lat_max_ms);
	json_stats(j, &w->st);
	json_dbl(j, "vs_raw", rw ? w->forces_per_s / rw->syncs_per_s : NAN);
}

static void print_json(struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	const struct fsmark_row *s = fs_sync(r);
	struct json j;

	bench_json_begin(r->e.b, &j);
	json_str(&j, "fs_type", r->e.sim ? "sim" : r->e.fs_type);
	bench_json_disk(&j, &r->e.disk);
	json_str(&j, "sim_profile",
		 !r->e.sim                    ? NULL :
		 r->e.lat == IOL_SIM_LAT_NVME ? "nvme" :
		 r->e.lat == IOL_SIM_LAT_SATA ? "sata" :
						"none");
	json_obj_begin(&j, "params");
	bench_json_counts(&j, "clients", o->clients, o->do_dbench ? o->nclients : 0);
	json_arr_begin(&j, "policies");
	for (unsigned i = 0; i < o->npolicy; i++)
		json_str(&j, NULL, delog_flush_policy_name(o->policy[i]));
	json_arr_end(&j);
	json_dbl(&j, "time_s", o->time_s);
	json_u64(&j, "force_every", o->force_every);
	json_u64(&j, "threads", o->threads);
	json_u64(&j, "files", o->files);
	json_u64(&j, "log_size", o->log_size);
	json_u64(&j, "logbufs", run_logbufs(o));
	json_u64(&j, "logbsize", run_logbsize(o));
	json_bool(&j, "dbench", o->do_dbench);
	json_bool(&j, "fsmark", o->do_fsmark);
	json_bool(&j, "raw_baseline", o->do_raw);
	json_obj_end(&j);
	if (r->e.sim)
		json_null(&j, "format_s");
	else
		json_dbl(&j, "format_s", r->e.format_s);
	json_recommendation(&j, r);
	json_arr_begin(&j, "rows");
	for (unsigned c = 0; c < o->nclients && o->do_dbench; c++) {
		const struct raw_row *rw = rawr(r, c);

		if (rw) {
			json_obj_begin(&j, NULL);
			json_str(&j, "workload", "raw");
			json_str(&j, "policy", r->e.sim ? "write+flush" : "write+fdatasync");
			json_bool(&j, "unsafe", false);
			json_u64(&j, "clients", rw->clients);
			json_dbl(&j, "window_s", rw->window_s);
			json_u64(&j, "syncs", rw->syncs);
			json_dbl(&j, "syncs_per_s", rw->syncs_per_s);
			json_dbl(&j, "mb_per_s", rw->mb_per_s);
			json_dbl(&j, "lat_avg_ms", rw->lat_avg_ms);
			json_dbl(&j, "lat_max_ms", rw->lat_max_ms);
			json_obj_end(&j);
		}
		for (unsigned p = 0; p < o->npolicy; p++) {
			const struct dbench_row *w = dbr(r, c, p);

			if (!w)
				continue;
			json_obj_begin(&j, NULL);
			json_str(&j, "workload", "dbench");
			json_str(&j, "policy", delog_flush_policy_name(w->policy));
			json_bool(&j, "unsafe", w->policy == DELOG_FLUSH_NONE);
			json_u64(&j, "clients", w->clients);
			json_dbl(&j, "mb_per_s", w->mb_per_s);
			json_dbench_point(&j, w, rw);
			json_obj_end(&j);
		}
	}
	for (unsigned p = 0; p < o->npolicy && o->do_fsmark; p++) {
		const struct fsmark_row *f = fsr(r, p);

		for (unsigned ph = 0; f && ph < FB_NR_PHASES; ph++) {
			json_obj_begin(&j, NULL);
			json_str(&j, "workload", "fsmark");
			json_str(&j, "policy", delog_flush_policy_name(f->policy));
			json_bool(&j, "unsafe", f->policy == DELOG_FLUSH_NONE);
			json_u64(&j, "threads", f->threads);
			json_u64(&j, "files", f->files);
			json_str(&j, "phase", fb_phase_names[ph]);
			json_dbl(&j, "phase_s", f->phase_s[ph]);
			json_u64(&j, "bytes", f->phase_bytes[ph]);
			json_dbl(&j, "mb_per_s",
				 bench_mbs(f->phase_bytes[ph], (uint64_t)(f->phase_s[ph] * 1e9)));
			json_stats(&j, &f->st[ph]);
			json_dbl(&j, "vs_sync", s ? f->phase_s[ph] / s->phase_s[ph] : NAN);
			json_obj_end(&j);
		}
	}
	json_arr_end(&j);
	bench_json_end(r->e.b, &j);
}

/* ---- the plot ---- */

static int plot(struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	struct bench *b = r->e.b;
	char dat[PATH_MAX], gp[PATH_MAX], title[512];
	FILE *f = NULL;
	int err = 0;
	double cmin = INFINITY, cmax = 0;

	/* The data and script files go to $TMPDIR (else /tmp), removed at the end. */
	if ((err = bench_plot_files(b, dat, gp, sizeof(dat), &f)))
		return err;
	for (unsigned c = 0; c < o->nclients; c++) {
		fprintf(f, "%u", o->clients[c]);
		for (unsigned p = 0; p < o->npolicy; p++) {
			const struct dbench_row *w = dbr(r, c, p);

			fprintf(f, " %.6g %.6g %.6g", w ? w->mb_per_s : NAN,
				w ? w->lat_avg_ms : NAN, w ? w->lat_max_ms : NAN);
		}
		fputc('\n', f);
	}
	fclose(f);
	if (!(f = fopen(gp, "w"))) {
		err = -errno;
		bench_fail(b, err, NULL, "--plot: cannot write %s: %s", gp, strerror(errno));
		unlink(dat);
		unlink(gp);
		return err;
	}
	for (unsigned c = 0; c < o->nclients; c++) {
		cmin = fmin(cmin, o->clients[c]);
		cmax = fmax(cmax, o->clients[c]);
	}
	if (r->e.sim)
		snprintf(title, sizeof(title), "delog dbench, sim disk (%s profile)",
			 r->e.lat == IOL_SIM_LAT_NVME ? "nvme" :
			 r->e.lat == IOL_SIM_LAT_SATA ? "sata" :
							"none");
	else
		bench_gnuplot_name(title, sizeof(title),
				   b->t.is_blockdev ? b->t.path : r->e.fs_type);
	if (!r->e.sim) {
		char t2[600];

		snprintf(t2, sizeof(t2), "delog dbench, %s %s, backend %s, a force every %u ops",
			 b->t.is_blockdev ? "block device" : "file on", title,
			 b->o.backend ? b->o.backend : "auto", o->force_every);
		bench_gnuplot_name(title, sizeof(title), t2);
	}
	fprintf(f,
		"set terminal pngcairo size 1280,520 noenhanced font ',10'\n"
		"set output '%s'\n"
		"set multiplot layout 1,2 title '%s'\n"
		"set logscale x 2\nset grid\nset key top left\nset xlabel 'clients'\n"
		"set xrange [%g:%g]\nset xtics (",
		o->plot, title, cmin / 1.5, cmax * 1.5);
	for (unsigned c = 0; c < o->nclients; c++)
		fprintf(f, "%s'%u' %u", c ? ", " : "", o->clients[c], o->clients[c]);
	fprintf(f, ")\nset yrange [0:*]\nset ylabel 'MB/s of logged payload'\nplot ");
	for (unsigned p = 0; p < o->npolicy; p++)
		fprintf(f, "%s'%s' using 1:%u with linespoints lw 2 title '%s'", p ? ", " : "", dat,
			2 + 3 * p, pname(o->policy[p]));
	fprintf(f,
		"\nset yrange [*:*]\nset logscale y\nset key below horizontal\nset ylabel 'latency of forcing ops, ms (solid: average, "
		"dashed: maximum)'\nplot ");
	for (unsigned p = 0; p < o->npolicy; p++)
		fprintf(f,
			"%s'%s' using 1:%u with linespoints lw 2 lc %u title '%s avg', "
			"'%s' using 1:%u with linespoints dt 2 lc %u title '%s max'",
			p ? ", " : "", dat, 3 + 3 * p, p + 1, pname(o->policy[p]), dat, 4 + 3 * p,
			p + 1, pname(o->policy[p]));
	fprintf(f, "\nunset multiplot\n");
	fclose(f);
	err = bench_gnuplot(b, gp, o->plot);
	unlink(dat);
	unlink(gp);
	return err;
}

/* ---- probe's recommendation ---- */

/*
 * Measure probe's costs where the raw baseline runs (its region is zero-filled by
 * prepare()), or on a new sim disk of the run's profile, and apply the rule.  A failure
 * is reported in the output, not fatal; an interruption is.
 */
static int recommend_measure(struct frun *r)
{
	struct fb_env *e = &r->e;
	struct bench *b = e->b;
	struct iol_dev_opts dopts;
	struct iol_dev *dev = NULL;
	char msg[512] = "";
	int err;

	if (e->sim) {
		err = bench_sim_open(e->b, FB_RAW_AREA, (int)e->lat, &dev);
		if (err)
			return err;
	} else {
		bench_dev_opts(b, &dopts, msg, sizeof(msg));
		err = iol_dev_open(b->t.path, &dopts, &dev);
		if (err) {
			snprintf(r->rec_err, sizeof(r->rec_err), "cannot open the target: %s",
				 msg[0] ? msg : tool_strerror(err));
			return 0;
		}
	}
	r->rec_backend = iol_dev_backend(dev);
	err = probe_measure_costs(dev, e->sim ? 0 : DELOG_SB_BYTES + e->o->log_size, FB_RAW_AREA,
				  REC_OPS, &r->costs, r->rec_err, sizeof(r->rec_err));
	iol_dev_close(dev);
	if (!err) {
		probe_recommend(&r->costs, &r->rec);
		r->rec_ok = true;
	}
	if (!err && bench_interrupted(b))
		err = -EINTR;
	return err == -EINTR ? err : 0;
}

/* The policy index of @p in the run, or -1. */
static int policy_index(const struct fb_opts *o, enum delog_flush_policy p)
{
	for (unsigned i = 0; i < o->npolicy; i++)
		if (o->policy[i] == p)
			return (int)i;
	return -1;
}

/*
 * At client index @c: the recommended policy's dbench BW over the best safe policy's
 * (NAN when either did not run), and the best one's name in @best.
 */
static double rec_ratio(const struct frun *r, unsigned c, const char **best)
{
	const struct fb_opts *o = r->e.o;
	int ri = policy_index(o, r->rec.policy);
	const struct dbench_row *rw = ri >= 0 ? dbr(r, c, (unsigned)ri) : NULL;
	const struct dbench_row *top = NULL;

	*best = NULL;
	for (unsigned p = 0; p < o->npolicy; p++) {
		const struct dbench_row *w = dbr(r, c, p);

		if (w && w->policy != DELOG_FLUSH_NONE && (!top || w->mb_per_s > top->mb_per_s))
			top = w;
	}
	if (!rw || !top)
		return NAN;
	*best = delog_flush_policy_name(top->policy);
	return rw->mb_per_s / top->mb_per_s;
}

/*
 * Why the recommended geometry gets no points of its own (a keyword, also the CSV
 * "note" and the JSON "geometry_skipped"), or NULL when it does: it differs from the
 * run's and the recommended policy is run.
 */
static const char *geo_skip(const struct frun *r)
{
	const struct fb_opts *o = r->e.o;

	if (!r->rec_ok)
		return "measure_failed";
	if (!o->do_dbench)
		return "no_dbench";
	if (policy_index(o, r->rec.policy) < 0)
		return "policy_not_run";
	if (r->rec.logbufs == run_logbufs(o) && r->rec.logbsize == run_logbsize(o))
		return "same_geometry";
	return NULL;
}

/*
 * At client index @c: the recommended policy's dbench BW with the recommended geometry
 * over its BW with the run's (the policy table's point), NAN when either did not run;
 * the two rows in *@g and *@w.
 */
static double geo_ratio(const struct frun *r, unsigned c, const struct dbench_row **g,
			const struct dbench_row **w)
{
	int ri = policy_index(r->e.o, r->rec.policy);

	*g = r->geo_ok && r->geo_ok[c] ? &r->geo[c] : NULL;
	*w = ri >= 0 ? dbr(r, c, (unsigned)ri) : NULL;
	return *g && *w ? (*g)->mb_per_s / (*w)->mb_per_s : NAN;
}

/* The geometry check, after the policy check's lines. */
static void print_geometry(struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	struct bench *b = r->e.b;
	const char *skip = geo_skip(r), *pol = delog_flush_policy_name(r->rec.policy);
	char rs[32], ws[32];
	unsigned met = 0, n = 0;

	if (!r->rec_ok) {
		bench_out(b, "  geometry not checked: there is no recommendation\n");
		return;
	}
	fmt_bytes(r->rec.logbsize, rs, sizeof(rs));
	fmt_bytes(run_logbsize(o), ws, sizeof(ws));
	bench_out(b,
		  "recommended log buffers: %u x %s (--logbufs %u --logbsize %uK); this "
		  "run's: %u x %s\n",
		  r->rec.logbufs, rs, r->rec.logbufs, r->rec.logbsize >> 10, run_logbufs(o), ws);
	if (skip && !strcmp(skip, "same_geometry")) {
		bench_out(b, "  geometry check: the recommended geometry is this run's, so the "
			     "policy table above already measured it (no extra points)\n");
		return;
	}
	if (skip) {
		if (!strcmp(skip, "policy_not_run"))
			bench_out(b,
				  "  geometry not checked: %s is not among the policies run "
				  "(--policy)\n",
				  pol);
		else
			bench_out(b, "  geometry not checked: no dbench points in this run\n");
		return;
	}
	bench_out(b,
		  "dbench BW of %s with %u x %s / with this run's %u x %s (the table above); "
		  "flushes/ckpt of the %u x %s points: delog's / the disk's ('-': no counter) "
		  "/ transactions per checkpoint\n%7s %10s %10s %10s  %s\n",
		  pol, r->rec.logbufs, rs, run_logbufs(o), ws, r->rec.logbufs, rs, "clients",
		  "ratio", "BW", "run's BW", "flushes/ckpt");
	for (unsigned c = 0; c < o->nclients; c++) {
		const struct dbench_row *g, *w;
		double x = geo_ratio(r, c, &g, &w);
		char cell[40];

		if (isnan(x)) {
			bench_out(b, "%7u %10s %10s %10s  %-20s\n", o->clients[c], "-", "-", "-",
				  "-");
			continue;
		}
		n++;
		met += x >= REC_TARGET;
		if (isfinite(g->st.disk_per_ckpt))
			snprintf(cell, sizeof(cell), "%.2f / %.2f / %.1f", g->st.flushes_per_ckpt,
				 g->st.disk_per_ckpt, g->st.txs_per_ckpt);
		else
			snprintf(cell, sizeof(cell), "%.2f / - / %.1f", g->st.flushes_per_ckpt,
				 g->st.txs_per_ckpt);
		bench_out(b, "%7u %9.3fx %10.2f %10.2f  %-20s  target >= %.2f: %s\n", o->clients[c],
			  x, g->mb_per_s, w->mb_per_s, cell, REC_TARGET,
			  x >= REC_TARGET ? "met" : "MISSED");
	}
	bench_out(b,
		  "  geometry target met at %u of %u client counts: %s (reported, not "
		  "asserted; a ratio within the run-to-run noise of the same point is no "
		  "verdict)\n",
		  met, n, met == n && n ? "met" : "MISSED");
}

static void print_recommendation(struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	const struct probe_costs *k = &r->costs;
	struct bench *b = r->e.b;
	const char *pol = delog_flush_policy_name(r->rec.policy);
	unsigned met = 0, n = 0;

	if (!o->do_recommend)
		return;
	if (!r->rec_ok) {
		bench_out(b, "\nprobe's recommendation: none (measuring the costs failed: %s)\n",
			  r->rec_err);
		print_geometry(r);
		return;
	}
	bench_out(b, "\nprobe's recommendation: %s (%s)\n", pol, r->rec.reason);
	bench_out(b,
		  "  measured here as `delog probe` does (%s, %u ops each, medians): write %.1f "
		  "us, write+flush %.1f us, FUA write %.1f us, flush %.1f us; sequential write "
		  "%.0f MB/s\n",
		  r->rec_backend, REC_OPS, k->write_us, k->write_flush_us, k->fua_us, k->flush_us,
		  k->seq_write_mbs);
	if (!o->do_dbench) {
		print_geometry(r);
		return;
	}
	if (policy_index(o, r->rec.policy) < 0) {
		bench_out(b, "  not checked: %s is not among the policies run (--policy)\n", pol);
		print_geometry(r);
		return;
	}
	bench_out(b,
		  "dbench BW, %s / the best safe policy (sync, async, single run here)\n"
		  "%7s %10s %8s\n",
		  pol, "clients", "ratio", "best");
	for (unsigned c = 0; c < o->nclients; c++) {
		const char *best;
		double x = rec_ratio(r, c, &best);

		if (isnan(x)) {
			bench_out(b, "%7u %10s %8s\n", o->clients[c], "-", "-");
			continue;
		}
		n++;
		met += x >= REC_TARGET;
		bench_out(b, "%7u %9.3fx %8s  target >= %.2f: %s\n", o->clients[c], x, best,
			  REC_TARGET, x >= REC_TARGET ? "met" : "MISSED");
	}
	bench_out(b,
		  "  target met at %u of %u client counts: %s (reported, not asserted; a "
		  "ratio within the run-to-run noise of the same point is no verdict)\n",
		  met, n, met == n && n ? "met" : "MISSED");
	print_geometry(r);
}

/* "geometry" in "recommendation": the geometry check, or null and "geometry_skipped". */
static void json_geometry(struct json *j, const struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	const char *skip = geo_skip(r);
	bool all = true;
	unsigned n = 0;

	if (skip) {
		json_null(j, "geometry");
		json_str(j, "geometry_skipped", skip);
		return;
	}
	json_obj_begin(j, "geometry");
	json_str(j, "policy", delog_flush_policy_name(r->rec.policy));
	json_u64(j, "logbufs", r->rec.logbufs);
	json_u64(j, "logbsize", r->rec.logbsize);
	json_u64(j, "run_logbufs", run_logbufs(o));
	json_u64(j, "run_logbsize", run_logbsize(o));
	json_dbl(j, "target", REC_TARGET);
	json_arr_begin(j, "checks");
	for (unsigned c = 0; c < o->nclients; c++) {
		const struct dbench_row *g, *w;
		const struct raw_row *rw = rawr(r, c);
		double x = geo_ratio(r, c, &g, &w);

		if (isnan(x))
			continue;
		n++;
		all = all && x >= REC_TARGET;
		json_obj_begin(j, NULL);
		json_u64(j, "clients", o->clients[c]);
		json_dbl(j, "mb_per_s", g->mb_per_s);
		json_dbl(j, "run_mb_per_s", w->mb_per_s);
		json_dbl(j, "ratio", x);
		json_bool(j, "met", x >= REC_TARGET);
		json_dbench_point(j, g, rw);
		json_obj_end(j);
	}
	json_arr_end(j);
	if (n)
		json_bool(j, "met", all);
	else
		json_null(j, "met");
	json_obj_end(j);
}

static void json_recommendation(struct json *j, const struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	bool all = true;
	unsigned n = 0;

	if (!o->do_recommend)
		return;
	if (!r->rec_ok) {
		json_null(j, "recommendation");
		json_str(j, "recommendation_error", r->rec_err);
		return;
	}
	json_obj_begin(j, "recommendation");
	json_str(j, "policy", delog_flush_policy_name(r->rec.policy));
	json_u64(j, "logbufs", r->rec.logbufs);
	json_u64(j, "logbsize", r->rec.logbsize);
	json_str(j, "reason", r->rec.reason);
	json_str(j, "backend", r->rec_backend);
	json_obj_begin(j, "costs_us");
	json_dbl(j, "write", r->costs.write_us);
	json_dbl(j, "write_flush", r->costs.write_flush_us);
	json_dbl(j, "fua_write", r->costs.fua_us);
	json_dbl(j, "flush", r->costs.flush_us);
	json_obj_end(j);
	json_dbl(j, "seq_write_mbs", r->costs.seq_write_mbs);
	json_dbl(j, "target", REC_TARGET);
	json_arr_begin(j, "checks");
	for (unsigned c = 0; o->do_dbench && c < o->nclients; c++) {
		const char *best;
		double x = rec_ratio(r, c, &best);

		if (isnan(x))
			continue;
		n++;
		all = all && x >= REC_TARGET;
		json_obj_begin(j, NULL);
		json_u64(j, "clients", o->clients[c]);
		json_dbl(j, "ratio", x);
		json_str(j, "best", best);
		json_bool(j, "met", x >= REC_TARGET);
		json_obj_end(j);
	}
	json_arr_end(j);
	if (n)
		json_bool(j, "met", all);
	else
		json_null(j, "met");
	json_geometry(j, r);
	json_obj_end(j);
}

/*
 * --csv: the recommendation as rows of the same header.  "recommend", one row: the
 * policy, logbufs and logbsize recommended, target, and note: empty when both checks
 * ran, else geo_skip's keyword (measure_failed: no recommendation, the rest empty;
 * policy_not_run, no_dbench: neither check ran; same_geometry: the policy check ran, the
 * geometry check needed no points).  "recommend_policy", per client count checked:
 * mb_per_s the recommended policy's, ref the best safe policy, ratio, met, logbufs and
 * logbsize the run's.  "recommend_geometry", per client count checked: the extra dbench
 * point's columns with the recommended logbufs and logbsize, ref its policy (whose
 * dbench row at the same clients, with the run's geometry, the ratio divides by), met.
 */
static void csv_recommendation(const struct frun *r)
{
	const struct fb_opts *o = r->e.o;
	const char *pol = delog_flush_policy_name(r->rec.policy);
	int ri = policy_index(o, r->rec.policy);

	if (!o->do_recommend)
		return;
	if (!r->rec_ok) {
		printf("recommend,,,,");
		csv_empty(24);
		csv_tail(0, 0, NULL, NAN, REC_TARGET, -1, geo_skip(r));
		return;
	}
	printf("recommend,%s,false,,", pol);
	csv_empty(24);
	csv_tail(r->rec.logbufs, r->rec.logbsize, NULL, NAN, REC_TARGET, -1, geo_skip(r));
	for (unsigned c = 0; o->do_dbench && c < o->nclients; c++) {
		const char *best;
		double x = rec_ratio(r, c, &best);

		if (isnan(x))
			continue;
		printf("recommend_policy,%s,false,%u,,", pol, o->clients[c]);
		csv_empty(3);
		csv_dbl(dbr(r, c, (unsigned)ri)->mb_per_s, false);
		csv_empty(19);
		csv_tail(run_logbufs(o), run_logbsize(o), best, x, REC_TARGET, x >= REC_TARGET,
			 NULL);
	}
	for (unsigned c = 0; !geo_skip(r) && c < o->nclients; c++) {
		const struct dbench_row *g, *w;
		double x = geo_ratio(r, c, &g, &w);

		if (isnan(x))
			continue;
		csv_dbench("recommend_geometry", g, rawr(r, c));
		csv_tail(r->rec.logbufs, r->rec.logbsize, pol, x, REC_TARGET, x >= REC_TARGET,
			 NULL);
	}
}

/*
 * One dbench point of the run on @e, whose options give the log's geometry: its
 * progress line (@tag after the policy), the point, its row kept (*@ok) when it ran.
 */
static int run_dbench(struct fb_env *e, enum delog_flush_policy p, unsigned clients,
		      const char *tag, unsigned k, unsigned total, struct dbench_row *row, bool *ok)
{
	int err;

	bench_point(e->b, "[%u/%u] dbench, %u clients: %s%s", k, total, clients,
		    delog_flush_policy_name(p), tag);
	if (!(err = dbench_point(e, p, clients, row)))
		*ok = true;
	bench_point_done(e->b, err);
	return err;
}

/* ---- the run ---- */

static int run_workload(struct bench *b, void *state)
{
	const struct fb_opts *o = state;
	struct frun r = { .e = { .b = b, .o = o, .fs_type = "sim" } };
	size_t ndb = (size_t)o->nclients * o->npolicy;
	unsigned total = 0, k = 0;
	struct fb_opts geo_o = *o; /* the run's options, with the recommended geometry */
	char geo_tag[64] = "";
	bool geo = false;
	int err = 0;

	r.e.sim = bench_is_sim(b);
	r.e.lat = (enum iol_sim_latency)o->sim_profile;
	if (o->plot && !bench_have_gnuplot()) {
		bench_fail(b, -ENOENT, NULL,
			   "--plot needs gnuplot, which is not installed "
			   "(apt-get install gnuplot-nox)");
		return TOOL_EXIT_FAIL;
	}
	r.db = calloc(ndb, sizeof(*r.db));
	r.db_ok = calloc(ndb, sizeof(*r.db_ok));
	r.raw = calloc(o->nclients, sizeof(*r.raw));
	r.raw_ok = calloc(o->nclients, sizeof(*r.raw_ok));
	r.fs = calloc(o->npolicy, sizeof(*r.fs));
	r.fs_ok = calloc(o->npolicy, sizeof(*r.fs_ok));
	if (!r.db || !r.db_ok || !r.raw || !r.raw_ok || !r.fs || !r.fs_ok) {
		bench_fail(b, err = -ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (!r.e.sim && (err = prepare(&r.e)))
		goto out;
	if (o->do_recommend) {
		bench_point(b, "measuring the costs `delog probe` measures");
		err = recommend_measure(&r);
		bench_point_done(b, err);
		if (err)
			goto out;
		geo = !geo_skip(&r);
	}
	if (geo) {
		geo_o.logbufs = r.rec.logbufs;
		geo_o.logbsize = r.rec.logbsize;
		snprintf(geo_tag, sizeof(geo_tag), ", recommended %u x %u KiB buffers",
			 r.rec.logbufs, r.rec.logbsize >> 10);
		r.geo = calloc(o->nclients, sizeof(*r.geo));
		r.geo_ok = calloc(o->nclients, sizeof(*r.geo_ok));
		if (!r.geo || !r.geo_ok) {
			bench_fail(b, err = -ENOMEM, NULL, "out of memory");
			goto out;
		}
	}
	bench_disk_target(b, &r.e.disk);
	bench_disk_idle(&r.e.disk, false, BENCH_IDLE_NS);
	total = (o->do_dbench ? o->nclients * (o->npolicy + o->do_raw + geo) : 0) +
		(o->do_fsmark ? o->npolicy : 0);
	for (unsigned c = 0; o->do_dbench && c < o->nclients && !err; c++) {
		unsigned n = o->clients[c];

		if (o->do_raw) {
			bench_point(b, "[%u/%u] raw baseline beside %u clients", ++k, total, n);
			if (!(err = raw_point(&r.e, n, &r.raw[c])))
				r.raw_ok[c] = true;
			bench_point_done(b, err);
		}
		for (unsigned i = 0; i < o->npolicy && !err; i++) {
			unsigned p = (i + c) % o->npolicy; /* rotate the starting policy */
			size_t x = (size_t)c * o->npolicy + p;

			err = run_dbench(&r.e, o->policy[p], n, "", ++k, total, &r.db[x],
					 &r.db_ok[x]);
		}
		if (geo && !err) {
			/* The recommended policy once more, with the recommended log buffers:
			 * the same point on the same target, only the options' geometry differs. */
			struct fb_env ge = r.e;

			ge.o = &geo_o;
			err = run_dbench(&ge, r.rec.policy, n, geo_tag, ++k, total, &r.geo[c],
					 &r.geo_ok[c]);
		}
		if (!err && bench_interrupted(b))
			err = -EINTR;
	}
	for (unsigned p = 0; o->do_fsmark && p < o->npolicy && !err; p++) {
		bench_point(b, "[%u/%u] fsmark: %s", ++k, total,
			    delog_flush_policy_name(o->policy[p]));
		if (!(err = fsmark_point(&r.e, o->policy[p], &r.fs[p])))
			r.fs_ok[p] = true;
		bench_point_done(b, err);
		if (!err && bench_interrupted(b))
			err = -EINTR;
	}
	if (!err)
		bench_disk_idle(&r.e.disk, true, BENCH_IDLE_NS);
	bench_progress_clear(b);
	if (err)
		goto out;
	if (o->plot && (err = plot(&r)))
		goto out;
	if (b->o.json)
		print_json(&r);
	else if (o->csv)
		print_csv(&r);
	else
		print_human(&r);
	if (o->plot && !b->o.json && !o->csv)
		bench_out(b, "plot written to %s\n", o->plot);
out:
	free(r.db);
	free(r.db_ok);
	free(r.raw);
	free(r.raw_ok);
	free(r.fs);
	free(r.fs_ok);
	free(r.geo);
	free(r.geo_ok);
	return err ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

/* ---- the three workloads: dbench and fsmark alone, and both for every policy ---- */

static const struct option dbench_options[] = {
	{ "clients", required_argument, NULL, FB_OPT_CLIENTS },
	{ "policy", required_argument, NULL, FB_OPT_POLICY },
	{ "time", required_argument, NULL, FB_OPT_TIME },
	{ "force-every", required_argument, NULL, FB_OPT_FORCE_EVERY },
	FB_COMMON_OPTIONS,
};

static void dbench_defaults(void *state)
{
	struct fb_opts *o = state;

	fb_defaults(o);
	o->do_dbench = true;
	o->npolicy = 3; /* sync, async, single: none only when asked for */
}

static void dbench_help(FILE *f)
{
	fprintf(f,
		"      --clients LIST     client thread counts, one point each (default\n"
		"                         1,8,16,32,128,512)\n"
		"  -p, --policy LIST      flush policies: sync, async, single, none (UNSAFE: no\n"
		"                         flushes) (default sync,async,single)\n"
		"      --time S           measured seconds per point, after a warm-up of S/10\n"
		"                         (at least 20 ms) (default 3)\n"
		"      --force-every K    every K-th operation of a client forces (default 8)\n");
	fb_help_common(f);
	fprintf(f,
		"\nA client loops over transactions of 1-4 items of 64 B-4 KiB (keys of its own\n"
		"and keys all clients share, so items are relogged) and forces every K-th one\n"
		"(its fsync).  Reported: MB/s of logged payload, ops/s, average and maximum\n"
		"latency of the forcing operations (ms), flushes and transactions per checkpoint.\n");
}

const struct bench_workload bench_dbench = {
	.name = "dbench",
	.summary = "clients of small transactions forcing every k-th: MB/s, force latency",
	.opts = dbench_options,
	.state_size = sizeof(struct fb_opts),
	.defaults = dbench_defaults,
	.option = fb_option,
	.check = fb_check,
	.help = dbench_help,
	.run = run_workload,
};

static const struct option fsmark_options[] = {
	{ "threads", required_argument, NULL, FB_OPT_THREADS },
	{ "files", required_argument, NULL, FB_OPT_FILES },
	{ "policy", required_argument, NULL, FB_OPT_POLICY },
	FB_COMMON_OPTIONS,
};

static void fsmark_defaults(void *state)
{
	struct fb_opts *o = state;

	fb_defaults(o);
	o->do_fsmark = true;
	o->npolicy = 3;
}

static void fsmark_help(FILE *f)
{
	fprintf(f,
		"  -t, --threads T        threads (default 32)\n"
		"      --files M          files per thread (default 20000)\n"
		"  -p, --policy LIST      flush policies: sync, async, single, none (UNSAFE: no\n"
		"                         flushes) (default sync,async,single)\n");
	fb_help_common(f);
	fprintf(f,
		"\nThree phases, each timed up to its one final force: create (inode, directory,\n"
		"allocation and 64-byte xattr items), chown (inode), unlink (inode, directory).\n"
		"No operation forces: asynchronous transaction streaming, as fs_mark without\n"
		"fsync.\n");
}

const struct bench_workload bench_fsmark = {
	.name = "fsmark",
	.summary = "threads create, chown, unlink without forces: seconds per phase",
	.opts = fsmark_options,
	.state_size = sizeof(struct fb_opts),
	.defaults = fsmark_defaults,
	.option = fb_option,
	.check = fb_check,
	.help = fsmark_help,
	.run = run_workload,
};

static const struct option compare_options[] = {
	{ "clients", required_argument, NULL, FB_OPT_CLIENTS },
	{ "policy", required_argument, NULL, FB_OPT_POLICY },
	{ "time", required_argument, NULL, FB_OPT_TIME },
	{ "force-every", required_argument, NULL, FB_OPT_FORCE_EVERY },
	{ "threads", required_argument, NULL, FB_OPT_THREADS },
	{ "files", required_argument, NULL, FB_OPT_FILES },
	{ "quick", no_argument, NULL, FB_OPT_QUICK },
	{ "no-baseline", no_argument, NULL, FB_OPT_NO_BASELINE },
	{ "plot", required_argument, NULL, FB_OPT_PLOT },
	FB_COMMON_OPTIONS,
};

static void compare_defaults(void *state)
{
	struct fb_opts *o = state;

	fb_defaults(o);
	o->do_dbench = o->do_fsmark = o->do_raw = o->do_recommend = true;
}

static void compare_help(FILE *f)
{
	fprintf(f,
		"      --clients LIST     dbench client counts (default 1,8,16,32,128,512)\n"
		"  -p, --policy LIST      flush policies: sync, async, single, none (UNSAFE: no\n"
		"                         flushes) (default: all four)\n"
		"      --time S           dbench and raw baseline seconds per point, after a\n"
		"                         warm-up of S/10 (at least 20 ms) (default 3)\n"
		"      --force-every K    every K-th dbench operation forces (default 8)\n"
		"  -t, --threads T        fsmark threads (default 32)\n"
		"      --files M          fsmark files per thread (default 20000)\n"
		"      --quick            --time %.0f and --files %u unless given\n"
		"      --no-baseline      skip the raw device baseline\n"
		"      --plot FILE.png    draw dbench bandwidth and latency against clients per\n"
		"                         policy with gnuplot (apt-get install gnuplot-nox)\n",
		FB_QUICK_TIME_S, FB_QUICK_FILES);
	fb_help_common(f);
	fprintf(f,
		"\nRuns dbench at every client count under every policy (interleaved, the raw\n"
		"baseline first: one thread, 4 KiB O_DIRECT write + fdatasync) and fsmark under\n"
		"every policy; prints the tables of the Linux commit \"xfs: drop async cache\n"
		"flushes from CIL commits\" with flushes per checkpoint and ratios.  First it\n"
		"measures what `delog probe` measures (on the raw baseline's region, or a sim\n"
		"disk) and prints probe's recommended policy and, per client count, that\n"
		"policy's dbench BW over the best safe policy's (target >= 0.95).  When the\n"
		"recommended log buffers (--logbufs x --logbsize) are not the run's, that policy\n"
		"runs once more per client count with them, and its BW is divided by its BW with\n"
		"the run's buffers (target >= 0.95); when they are the run's, nothing more runs.\n"
		"Both checks are reported, not asserted.  The same as --compare-flush.\n"
		"\n--csv rows, by the first column (workload): raw, dbench, fsmark (the tables;\n"
		"logbufs and logbsize the run's), then recommend (one row: the policy, logbufs,\n"
		"logbsize and target; note empty when both checks ran, else measure_failed,\n"
		"policy_not_run or same_geometry), recommend_policy (per client count: mb_per_s\n"
		"the recommended policy's, ref the best safe policy, ratio, met) and\n"
		"recommend_geometry (per client count: the extra dbench point with the\n"
		"recommended logbufs and logbsize, ref its policy, ratio over that policy's\n"
		"dbench row, met).  --json: \"recommendation\", with \"geometry\" (null and\n"
		"\"geometry_skipped\" when skipped).\n");
}

const struct bench_workload bench_compare_flush = {
	.name = "compare-flush",
	.summary = "dbench + fsmark per flush policy, vs the raw device (--compare-flush)",
	.opts = compare_options,
	.state_size = sizeof(struct fb_opts),
	.defaults = compare_defaults,
	.option = fb_option,
	.check = fb_check,
	.help = compare_help,
	.run = run_workload,
};
