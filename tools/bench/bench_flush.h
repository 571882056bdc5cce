/*
 * bench_flush.h - what the flush-policy workloads share: `dbench` (bench_dbench.c: one
 * point), `fsmark` (bench_fsmark.c: one run of three phases) and `compare-flush`
 * (bench_compare.c, the three workloads' entries: it runs the other two, alone or for
 * every policy, and owns the target, the raw baseline and the report).  The options all
 * three take and how a point reaches its log are bench_flush.c's, below all three.
 *
 * Why one header for three workloads: the comparison of the Linux commit "xfs: drop async
 * cache flushes from CIL commits" is two workloads measured on the same device in the
 * same run, so both must open the log the same way (the same file formatted once, or a
 * fresh simulated disk with the same latency profile), take the same options and report
 * rows of one shape.  A workload run alone (--workload dbench) is the same code with one
 * half of the comparison switched off.
 */
#ifndef DELOG_BENCH_FLUSH_H
#define DELOG_BENCH_FLUSH_H

#include "bench.h"
#include "io.h"
#include "io_sim.h"

#include <delog.h>
#include <pthread.h>
#include <stdatomic.h>

#define FB_MAX_LIST 16u
#define FB_MAX_CLIENTS 1024u
#define FB_NR_POLICIES 4u
#define FB_NR_PHASES 3u /* fsmark: create, chown, unlink */
#define FB_RAW_BLOCK BENCH_RAW_BLOCK
#define FB_RAW_AREA (16ull << 20) /* the raw baseline's region, after the log */
#define FB_QUICK_TIME_S 1.0       /* --quick: --time */
#define FB_QUICK_FILES 2000u      /* --quick: --files */

enum {
	FB_OPT_CLIENTS = BENCH_OPT_WORKLOAD + 100,
	FB_OPT_POLICY,
	FB_OPT_TIME,
	FB_OPT_FORCE_EVERY,
	FB_OPT_THREADS,
	FB_OPT_FILES,
	FB_OPT_LOG_SIZE,
	FB_OPT_LOGBUFS,
	FB_OPT_LOGBSIZE,
	FB_OPT_DEVICE,
	FB_OPT_SIM_PROFILE,
	FB_OPT_CSV,
	FB_OPT_PLOT,
	FB_OPT_QUICK,
	FB_OPT_NO_BASELINE,
};

/* The long options all three workloads take, at the end of each one's table. */
#define FB_COMMON_OPTIONS                                                                          \
	{ "size", required_argument, NULL, FB_OPT_LOG_SIZE },                                      \
		{ "logbufs", required_argument, NULL, FB_OPT_LOGBUFS },                            \
		{ "logbsize", required_argument, NULL, FB_OPT_LOGBSIZE },                          \
		{ "device", required_argument, NULL, FB_OPT_DEVICE },                              \
		{ "sim-profile", required_argument, NULL, FB_OPT_SIM_PROFILE },                    \
		{ "csv", no_argument, NULL, FB_OPT_CSV },                                          \
	{                                                                                          \
		NULL, 0, NULL, 0                                                                   \
	}

/* The options of all three workloads (each declares the subset it takes). */
struct fb_opts {
	unsigned clients[FB_MAX_LIST], nclients;
	enum delog_flush_policy policy[FB_NR_POLICIES];
	unsigned npolicy;
	double time_s;
	unsigned force_every; /* dbench: every k-th operation forces */
	unsigned threads;     /* fsmark threads */
	uint32_t files;       /* fsmark files per thread */
	uint64_t log_size;
	unsigned logbufs;   /* 0: the engine's default (8) */
	uint32_t logbsize;  /* 0: the engine's default (256 KiB) */
	const char *device; /* --device */
	int sim_profile;    /* enum iol_sim_latency, or -1 when not given */
	bool csv, quick, no_baseline;
	const char *plot; /* --plot FILE.png */
	bool time_set, files_set;
	/* which parts run (set by the workload's defaults) */
	bool do_dbench, do_fsmark, do_raw;
	bool do_recommend; /* measure probe's costs and check its recommendation */
};

/* How the run reaches its log: a target file or device formatted once, or a new sim
 * disk per point. */
struct fb_env {
	struct bench *b;
	const struct fb_opts *o;
	bool sim;
	enum iol_sim_latency lat;
	const char *fs_type;
	double format_s;
	struct bench_disk disk; /* the disk under the target, for its flush counter */
};

/* delog_stats deltas over a measured span, and the disk's flush requests in it. */
struct fb_stats {
	uint64_t checkpoints, device_flushes, preflushes, flushes, fua_writes;
	uint64_t fua_flushes;   /* FUA writes counted as flushes (a disk without FUA) */
	uint64_t space_flushes; /* of flushes, those for log space (delog_stats) */
	double disk_flushes;    /* flush requests the disk completed; NAN: no counters */
	double disk_per_ckpt;   /* disk_flushes per checkpoint */
	uint64_t transactions, items_logged, relogged, records, record_bytes, space_waits;
	double flushes_per_ckpt, txs_per_ckpt;
};

struct dbench_row {
	enum delog_flush_policy policy;
	unsigned clients;
	double window_s;
	uint64_t ops, forces, bytes;
	double ops_per_s, forces_per_s, mb_per_s;
	double lat_avg_ms, lat_max_ms; /* of the forcing operations */
	struct fb_stats st;
};

struct fsmark_row {
	enum delog_flush_policy policy;
	unsigned threads;
	uint32_t files;
	double phase_s[FB_NR_PHASES]; /* each including its final force */
	uint64_t phase_bytes[FB_NR_PHASES];
	struct fb_stats st[FB_NR_PHASES];
};

struct raw_row {
	unsigned clients; /* the dbench client count it was measured beside */
	double window_s;
	uint64_t syncs;
	double syncs_per_s, mb_per_s, lat_avg_ms, lat_max_ms;
};

extern const char *const fb_phase_names[FB_NR_PHASES];

/* Open the log for one point with policy @p (a new sim disk on sim, *@simdev set, else
 * the formatted target); close it (and the sim disk).  0 or a negative errno, after
 * bench_fail. */
int fb_log_open(struct fb_env *e, enum delog_flush_policy p, delog **log, struct iol_dev **simdev);
int fb_log_close(struct fb_env *e, delog *log, struct iol_dev *simdev, const char *what);
/* The end of a dbench or fsmark point: report @err (unless 0 or -EINTR) as "@what: ...",
 * close the log (fb_log_close); returns @err, else fb_log_close's result. */
int fb_point_end(struct fb_env *e, int err, delog *log, struct iol_dev *simdev, const char *what);
/* A span's edge: delog_stats into @s and the disk's counters into @c, the disk read on
 * the inside of delog (after at the start, @end 0; before at the end, @end 1), so that a
 * flush delog counted is in both. */
void fb_read(const struct fb_env *e, delog *log, int end, struct delog_stats *s,
	     struct bench_diskcount *c);
void fb_stats_delta(struct fb_stats *d, const struct delog_stats *s0, const struct delog_stats *s1,
		    const struct bench_diskcount *c0, const struct bench_diskcount *c1);
/* A thread for a client: a small stack, as 512 clients x 8 MiB of address space is a lot. */
int fb_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* One dbench point: @clients clients for warm-up + --time seconds.  0 or an error. */
int dbench_point(struct fb_env *e, enum delog_flush_policy p, unsigned clients,
		 struct dbench_row *row);
/* One fsmark run: the three phases under policy @p.  0 or an error. */
int fsmark_point(struct fb_env *e, enum delog_flush_policy p, struct fsmark_row *row);
/* Payload bytes one fsmark phase logs per file (create, chown, unlink). */
uint64_t fsmark_phase_payload(unsigned phase);

/* The shared option handling (bench_flush.c). */
void fb_defaults(struct fb_opts *o);
int fb_option(void *state, int opt, const char *arg);
int fb_check(struct bench *b, void *state);
void fb_help_common(FILE *f);
/* The engine's options for a point under policy @p with open @flags (bench_flush.c). */
struct delog_options fb_log_opts(const struct fb_env *e, enum delog_flush_policy p, unsigned flags);

#endif
