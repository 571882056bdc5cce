/*
 * bench_flush.c - what the flush-policy workloads share (declared in bench_flush.h): the
 * options all three take and their checks, and how a point reaches its log (the
 * formatted target, or a new sim disk per point), reads its counters and starts its
 * threads.  Used by `dbench` (bench_dbench.c) and `fsmark` (bench_fsmark.c), which
 * measure one point each, and by `compare-flush` (bench_compare.c), which runs them for
 * every policy and reports; it uses none of them.
 */
#include "bench_flush.h"

#include "engine.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FORCE_EVERY 1000000u
#define MAX_FILES 10000000u
#define THREAD_STACK (256u << 10)

/* ---- options ---- */

void fb_defaults(struct fb_opts *o)
{
	static const unsigned cl[] = { 1, 8, 16, 32, 128, 512 };

	memset(o, 0, sizeof(*o));
	memcpy(o->clients, cl, sizeof(cl));
	o->nclients = sizeof(cl) / sizeof(cl[0]);
	o->policy[0] = DELOG_FLUSH_SYNC;
	o->policy[1] = DELOG_FLUSH_ASYNC;
	o->policy[2] = DELOG_FLUSH_SINGLE;
	o->policy[3] = DELOG_FLUSH_NONE;
	o->npolicy = FB_NR_POLICIES;
	o->time_s = 3;
	o->force_every = 8;
	o->threads = 32;
	o->files = 20000;
	o->log_size = 128ull << 20;
	o->sim_profile = -1;
}

int fb_option(void *state, int opt, const char *arg)
{
	struct fb_opts *o = state;
	uint64_t v;

	switch (opt) {
	case FB_OPT_CLIENTS:
		return bench_parse_clients(arg, FB_MAX_LIST, FB_MAX_CLIENTS, true, o->clients,
					   &o->nclients);
	case FB_OPT_POLICY:
		return bench_parse_policies(arg, o->policy, &o->npolicy);
	case FB_OPT_TIME:
		o->time_set = true;
		return bench_parse_time(arg, &o->time_s);
	case FB_OPT_FORCE_EVERY:
		return bench_parse_count("force-every", arg, 1, MAX_FORCE_EVERY, &o->force_every);
	case FB_OPT_THREADS:
		return bench_parse_count("threads", arg, 1, FB_MAX_CLIENTS, &o->threads);
	case FB_OPT_FILES:
		if (parse_count(arg, 1, MAX_FILES, &v))
			return bench_usage_error("--files: '%s' is not a count from 1 to %u", arg,
						 MAX_FILES);
		o->files = (uint32_t)v;
		o->files_set = true;
		return 0;
	case FB_OPT_LOG_SIZE:
		return bench_parse_log_size(arg, &o->log_size);
	case FB_OPT_LOGBUFS:
		return bench_parse_logbufs(arg, &o->logbufs);
	case FB_OPT_LOGBSIZE:
		return bench_parse_logbsize(arg, &o->logbsize);
	case FB_OPT_DEVICE:
		if (o->device)
			return bench_usage_error("--device: given twice");
		o->device = arg;
		return 0;
	case FB_OPT_SIM_PROFILE: {
		enum iol_sim_latency l;

		if (iol_sim_latency_parse(arg, &l))
			return bench_usage_error("--sim-profile: '%s' is not none, nvme or sata",
						 arg);
		o->sim_profile = (int)l;
		return 0;
	}
	case FB_OPT_CSV:
		o->csv = true;
		return 0;
	case FB_OPT_PLOT:
		return bench_parse_plot(arg, &o->plot);
	case FB_OPT_QUICK:
		o->quick = true;
		return 0;
	case FB_OPT_NO_BASELINE:
		o->no_baseline = true;
		return 0;
	}
	return bench_usage_error("unknown option");
}

int fb_check(struct bench *b, void *state)
{
	struct fb_opts *o = state;
	struct stat st;

	if (b->o.json && o->csv)
		return bench_usage_error("--json and --csv: choose one");
	if (o->sim_profile >= 0 && !bench_is_sim(b))
		return bench_usage_error("--sim-profile needs --backend sim");
	if (bench_is_sim(b) && (b->o.path || o->device))
		return bench_usage_error("--backend sim runs on an in-memory disk: it takes no "
					 "PATH or --device");
	if (o->device) {
		if (b->o.path)
			return bench_usage_error("takes one PATH (--device names it)");
		if (stat(o->device, &st) || !S_ISBLK(st.st_mode))
			return bench_usage_error("--device: '%s' is not a block device", o->device);
		b->o.path = o->device;
	}
	if (o->quick) {
		if (!o->time_set)
			o->time_s = FB_QUICK_TIME_S;
		if (!o->files_set)
			o->files = FB_QUICK_FILES;
	}
	if (o->no_baseline)
		o->do_raw = false;
	if (o->sim_profile < 0)
		o->sim_profile = IOL_SIM_LAT_NONE;
	return 0;
}

void fb_help_common(FILE *f)
{
	fprintf(f,
		"  -s, --size N           log size, at least 16M (default 128M); a file target is\n"
		"                         the log + 4 KiB + %llu MiB for the raw baseline\n"
		"      --logbufs N        log buffers, %u..%u (default: the engine's, 8)\n"
		"      --logbsize N       log buffer size, power of two 16K..256K (default: the\n"
		"                         engine's, 256K)\n"
		"      --device DEV       run on block device DEV (as PATH; needs --force)\n"
		"      --sim-profile P    with --backend sim: the disk's latency model, none, nvme\n"
		"                         or sata (default none); a new sim disk per point\n"
		"      --csv              print CSV (a header, then one line per row)\n"
		"\nDevice flushes per checkpoint: what delog_stats counted (PREFLUSH writes,\n"
		"standalone flushes, and FUA writes on a disk without FUA, each of which the\n"
		"kernel turns into a write and a flush), and beside it for a file or block device\n"
		"on a local disk the flush requests the disk completed over the same span\n"
		"(/sys/block/DISK/stat, Linux >= 5.5; '-' on sim or without counters).  Other\n"
		"processes flushing the same disk count there too: on a shared machine it is an\n"
		"upper bound.\n",
		FB_RAW_AREA >> 20, DELOG_LOGBUFS_MIN, DELOG_LOGBUFS_MAX);
}

/* ---- the log, per point ---- */

int fb_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	int e;

	if ((e = pthread_attr_init(&a)))
		return e;
	(void)pthread_attr_setstacksize(&a, THREAD_STACK);
	e = pthread_create(th, &a, fn, arg);
	pthread_attr_destroy(&a);
	return e;
}

void fb_read(const struct fb_env *e, delog *log, int end, struct delog_stats *s,
	     struct bench_diskcount *c)
{
	if (end) {
		*c = bench_disk_read(&e->disk);
		delog_stats(log, s);
	} else {
		delog_stats(log, s);
		*c = bench_disk_read(&e->disk);
	}
}

void fb_stats_delta(struct fb_stats *d, const struct delog_stats *s0, const struct delog_stats *s1,
		    const struct bench_diskcount *c0, const struct bench_diskcount *c1)
{
	d->checkpoints = s1->checkpoints - s0->checkpoints;
	d->device_flushes = s1->device_flushes - s0->device_flushes;
	d->preflushes = s1->preflushes - s0->preflushes;
	d->flushes = s1->flushes - s0->flushes;
	d->fua_writes = s1->fua_writes - s0->fua_writes;
	d->fua_flushes = s1->fua_flushes - s0->fua_flushes;
	d->space_flushes = s1->space_flushes - s0->space_flushes;
	d->disk_flushes = bench_disk_flushes(c0, c1);
	d->disk_per_ckpt = bench_per(d->disk_flushes, d->checkpoints);
	d->transactions = s1->transactions - s0->transactions;
	d->items_logged = s1->items_logged - s0->items_logged;
	d->relogged = s1->relogged - s0->relogged;
	d->records = s1->records - s0->records;
	d->record_bytes = s1->record_bytes - s0->record_bytes;
	d->space_waits = s1->space_waits - s0->space_waits;
	d->flushes_per_ckpt = d->checkpoints ? (double)d->device_flushes / (double)d->checkpoints :
					       NAN;
	d->txs_per_ckpt = d->checkpoints ? (double)d->transactions / (double)d->checkpoints : NAN;
}

struct delog_options fb_log_opts(const struct fb_env *e, enum delog_flush_policy p, unsigned flags)
{
	return bench_log_opts(e->b, p, flags, e->o->logbufs, e->o->logbsize, e->o->log_size);
}

int fb_log_open(struct fb_env *e, enum delog_flush_policy p, delog **log, struct iol_dev **simdev)
{
	struct delog_options lo = fb_log_opts(e, p, e->sim ? DELOG_OPEN_CREATE : 0);
	int err;

	*log = NULL;
	*simdev = NULL;
	if (e->sim) {
		err = bench_sim_open(e->b, DELOG_SB_BYTES + e->o->log_size, (int)e->lat, simdev);
		if (err)
			return err;
		err = engine_open_dev(*simdev, &lo, log);
	} else {
		err = delog_open(e->b->t.path, &lo, log);
	}
	if (err) {
		bench_fail(e->b, err, e->sim ? "sim" : e->b->t.path, "cannot open the log (%s): %s",
			   delog_flush_policy_name(p), tool_strerror(err));
		if (*simdev)
			iol_dev_close(*simdev);
		*simdev = NULL;
	}
	return err;
}

int fb_log_close(struct fb_env *e, delog *log, struct iol_dev *simdev, const char *what)
{
	int err = delog_close(log);

	if (simdev)
		iol_dev_close(simdev);
	if (err)
		bench_fail(e->b, err, NULL, "%s: closing the log: %s", what, tool_strerror(err));
	return err;
}

int fb_point_end(struct fb_env *e, int err, delog *log, struct iol_dev *simdev, const char *what)
{
	int e2;

	if (err && err != -EINTR)
		bench_fail(e->b, err, NULL, "%s: %s", what, tool_strerror(err));
	e2 = fb_log_close(e, log, simdev, what);
	return err ? err : e2;
}
