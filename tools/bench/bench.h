/*
 * bench.h - what `delog bench` (bench.c) shares with its workloads (bench_<name>.c).
 *
 * bench.c owns the command line, the target (a temporary file, or the PATH given), the
 * stop signals, progress and error output, and the JSON error document; a workload owns
 * its own options (merged into bench.c's getopt table), its measurement and its report.
 * A new workload is one file defining a struct bench_workload and one row in the table
 * of the program that runs it: bench_workloads.c for `delog bench`, peers_main.c for
 * delog-bench-peers (the comparison with RocksDB, SQLite and LMDB, a program of its own
 * so that `delog` links only what the log needs).  bench_util.c holds what several workloads measure alike (option values, the
 * client threads' start gate and window, latency samples, the raw baseline, the log's
 * target, the disk's own flush counter, gnuplot for --plot), declared at the end of this
 * header; bench_openloop.c is the commit workload's open loop (--rate), called by
 * bench_commit.c.
 */
#ifndef DELOG_BENCH_H
#define DELOG_BENCH_H

#include "tools.h"

#include <delog.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/* Workload option values start here (below are bench.c's short options). */
#define BENCH_OPT_WORKLOAD 1000

/* The common options. */
struct bench_opts {
	const char *workload;
	const char *path;    /* NULL: a temporary file in the current directory */
	const char *backend; /* --backend; NULL: the best available (the default) */
	bool json, keep, force;
};

/* What the bench runs on; bench.c removes what it created (unless --keep), and cuts a
 * file it grew back to what it found when the run fails. */
struct bench_target {
	char path[PATH_MAX];
	bool created; /* we created the file */
	bool is_blockdev;
	bool grown; /* an existing file we extended from orig_size */
	uint64_t orig_size;
	struct timespec orig_times[2]; /* its atime and mtime as found */
	uint64_t bytes;                /* file size (as created or found) or device size */
	int hold_fd;                   /* O_EXCL hold of a block device, else -1 */
};

struct bench {
	struct bench_opts o;
	struct bench_target t;
	sigset_t stop_sigs; /* blocked for the run, polled by bench_interrupted */
	bool prog_on, prog_shown;
	uint64_t prog_last;
	char point[192];   /* the point in progress (bench_point), for its end line */
	uint64_t point_t0; /* ... and when it started; 0: none */
	bool json_done;    /* the workload printed its JSON document */
	int err;           /* first failure, for the JSON error document */
	char err_msg[512];
	uint64_t t0; /* start of the run (now_ns) */
};

struct bench_workload {
	const char *name;
	const char *summary;
	const struct option *opts; /* its long options, ending with a zero entry; every val
				     * >= BENCH_OPT_WORKLOAD */
	size_t state_size;         /* bytes of option state, zeroed, passed to the calls */
	void (*defaults)(void *state);
	/* One of its options (@opt is the val): 0, or TOOL_EXIT_USAGE via bench_usage_error. */
	int (*option)(void *state, int opt, const char *arg);
	/* After parsing, with b->o filled: cross-checks; 0 or TOOL_EXIT_USAGE. May be NULL. */
	int (*check)(struct bench *b, void *state);
	void (*help)(FILE *f); /* its option lines for --help */
	/* The run: TOOL_EXIT_OK or TOOL_EXIT_FAIL (after bench_fail). */
	int (*run)(struct bench *b, void *state);
	/* A workload that is a program of its own: its file name, looked for beside the
	 * running program and run with the same arguments (the calls above are NULL);
	 * @built says whether this build made it, @not_built why not. */
	const char *program;
	bool built;
	const char *not_built;
};

/* The workloads of this program (bench_workloads.c, or peers_main.c). */
extern const struct bench_workload *const bench_workloads[];
extern const size_t bench_nr_workloads;

extern const struct bench_workload bench_recovery;
extern const struct bench_workload bench_commit;
extern const struct bench_workload bench_dbench;
extern const struct bench_workload bench_fsmark;
extern const struct bench_workload bench_compare_flush;
extern const struct bench_workload bench_stream;
extern const struct bench_workload bench_spacewait;
extern const struct bench_workload bench_peers; /* delog-bench-peers only */

/*
 * The target: the PATH given or a new temporary file "delog-bench-PID-N.tmp" in the
 * current directory.  A path that does not exist is created with iol_file_create at
 * @bytes (and is removed at the end unless --keep).  An existing regular file smaller
 * than @bytes is extended (fallocate), and cut back to its size when the run fails (an
 * empty one gets its times back too: it is then exactly as found); an existing non-empty
 * file or a block device is overwritten, so it needs --force; a block device must hold
 * @bytes (checked first) and is held O_EXCL (fails while mounted).  Returns 0 or a
 * negative errno after bench_fail.
 */
int bench_target_open(struct bench *b, uint64_t bytes);

/* iol_dev_opts for the target on the chosen backend, errors into @msg. */
void bench_dev_opts(const struct bench *b, struct iol_dev_opts *o, char *msg, size_t len);

/* A new sim disk (--backend sim) of @bytes, 4096-byte sectors, latency profile @lat (enum
 * iol_sim_latency), its event trace off.  0, or a negative errno after bench_fail. */
int bench_sim_open(struct bench *b, uint64_t bytes, int lat, struct iol_dev **dev);

/* A stop signal (SIGINT, SIGTERM, SIGHUP, SIGPIPE) is pending: stop, clean up, return. */
bool bench_interrupted(const struct bench *b);

/* "delog bench: <subject>: <reason>" on stderr (subject may be NULL); the first one is
 * kept, with @err, for the --json error document. */
void bench_fail(struct bench *b, int err, const char *subject, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* "delog bench: <message>" and the usage on stderr; returns TOOL_EXIT_USAGE. */
int bench_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Human output on stdout (nothing with --json); clears the progress line first. */
void bench_out(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A transient progress line on stderr when it is a terminal (at most 10 per second). */
void bench_progress(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_progress_clear(struct bench *b);
/*
 * A point of the run (one measurement: a policy at a client count, a pass) starts; @fmt
 * names it ("[3/12] dbench, 8 clients: sync").  On a terminal it is the progress line,
 * redrawn in place; when stderr is not a terminal (a pipe, a file, CI) nothing is drawn,
 * and bench_point_done prints one line per finished point instead,
 *   delog bench: [3/12] dbench, 8 clients: sync: done, 2.1 s
 * so a long run says how far it got without carriage returns.  @err: the point's result
 * (a failed one has said why already, and gets no line).
 */
void bench_point(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_point_done(struct bench *b, int err);

/* Median of the non-NaN values of @v (not modified); NaN when there are none. */
double bench_median(const double *v, size_t n);
/* Bytes per second over @ns in MB/s (10^6 bytes/s); NaN for 0 ns. */
double bench_mbs(uint64_t bytes, uint64_t ns);

/* A workload's JSON document on stdout: bench_json_begin opens it with the members
 * every bench document has (tool, version, workload, path, backend, target {kind,
 * created, kept, bytes}); bench_json_end closes it with "error": null and "elapsed_s"
 * and marks it printed (b->json_done). */
void bench_json_begin(struct bench *b, struct json *j);
void bench_json_end(struct bench *b, struct json *j);

/* ---- what several workloads share (bench_util.c) ---- */

#define BENCH_RAW_BLOCK 4096u
#define BENCH_RELEASE_NS 2000000ull /* delog_release period of the measuring thread */
#define BENCH_MIN_WARMUP_NS 20000000ull
#define BENCH_MIN_LOG_SIZE (16ull << 20)
#define BENCH_NR_POLICIES 4u /* sync, async, single, none */

/* --backend sim (the in-memory disk) was chosen. */
bool bench_is_sim(const struct bench *b);

/* Option values, each 0 or TOOL_EXIT_USAGE (via bench_usage_error, with the option's
 * name and range in the message):
 *   --time       seconds from 0.05 to 3600, fractions allowed;
 *   --clients    a list of up to @max_list counts from 1 to @max (@unique: none twice);
 *   --policy     a list of distinct flush policies (sync, async, single, none), @out
 *                holding BENCH_NR_POLICIES;
 *   --size   a multiple of 4K of at least 16M;
 *   --logbufs, --logbsize   the log's ranges (DELOG_LOGBUFS_MIN/MAX, 16K..256K, a
 *                power of two);
 *   --item-size  1 byte to @max (a whole number of KiB or MiB, as the message says it). */
int bench_parse_time(const char *arg, double *out);
int bench_parse_clients(const char *arg, unsigned max_list, unsigned max, bool unique,
			unsigned *out, unsigned *n);
int bench_parse_policies(const char *arg, enum delog_flush_policy *out, unsigned *n);
/* --@name's value, a count in [@min, @max], into *@out: 0, or TOOL_EXIT_USAGE after
 * "--NAME: 'ARG' is not a count from MIN to MAX". */
int bench_parse_count(const char *name, const char *arg, unsigned min, unsigned max, unsigned *out);
/* The default --policy list, the safe policies: sync, async, single into @out; their count. */
unsigned bench_safe_policies(enum delog_flush_policy *out);
int bench_parse_log_size(const char *arg, uint64_t *out);
int bench_parse_logbufs(const char *arg, unsigned *out);
int bench_parse_logbsize(const char *arg, uint32_t *out);
int bench_parse_item_size(const char *arg, uint32_t max, uint32_t *out);
/* --items: a count from 1 to @max. */
int bench_parse_items(const char *arg, uint32_t max, uint32_t *out);
/* --plot FILE.png: a .png name without quotes or backslashes (gnuplot quotes it). */
int bench_parse_plot(const char *arg, const char **out);

/* The largest of @n client counts (0 for none). */
unsigned bench_max_clients(const unsigned *clients, unsigned n);

/* Sleep @ns; the process CPU time (user + system, all threads, getrusage) in ns. */
void bench_sleep_ns(uint64_t ns);
uint64_t bench_cpu_ns(void);

/* delog_release(log, delog_durable_seq(log)) when anything is durable. */
void bench_release(delog *log);
/* The measuring thread: wait @ns, or until *@stop or a stop signal, releasing @log (when
 * not NULL) every BENCH_RELEASE_NS so it never fills. */
void bench_hold(struct bench *b, delog *log, uint64_t ns, const atomic_bool *stop);
/* Warm-up before a measured window of @time_s seconds: max(@time_s / 10, 20 ms). */
uint64_t bench_warmup_ns(double time_s);

/*
 * The start gate and measured window of a point's client threads (bench_commit.c,
 * bench_peers.c, bench_dbench.c): the clients wait at the gate until all exist, so none
 * gets a head start; the measuring thread opens it (or abandons the point), holds a
 * warm-up, then the window, and an operation counts when it completes inside the window.
 */
struct bench_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready;                      /* clients waiting */
	int gate;                            /* 0 wait, 1 go, -1 abandon */
	_Atomic uint64_t win_start, win_end; /* the measured window (now_ns); 0 until set */
	atomic_bool stop;                    /* the clients stop (set by either side) */
};

/* What bench_gate_measure measured. */
struct bench_span {
	uint64_t ws, we; /* the window (now_ns) */
	uint64_t c0, c1; /* bench_cpu_ns at its ends */
};

void bench_gate_init(struct bench_gate *g);
void bench_gate_destroy(struct bench_gate *g);
/* A client: wait at the gate; false when the point was abandoned. */
bool bench_gate_wait(struct bench_gate *g);
/* The measuring thread: @how 1 waits for @wait_for clients and lets them go, -1
 * abandons the point. */
void bench_gate_open(struct bench_gate *g, int how, unsigned wait_for);
/* @t (now_ns) is inside the window. */
bool bench_in_window(struct bench_gate *g, uint64_t t);
/* The measuring thread after bench_gate_open: a warm-up of bench_warmup_ns(@time_s), then
 * the window of @time_s seconds (both bench_hold with @log), filling @sp.  @edge (may be
 * NULL) reads the workload's own counters: (@arg, 0) just before the window opens, (@arg,
 * 1) just after it closes. */
void bench_gate_measure(struct bench_gate *g, struct bench *b, delog *log, double time_s,
			void (*edge)(void *arg, int end), void *arg, struct bench_span *sp);

/* A client's latency samples (ns); out of memory, the samples so far are kept (the
 * operation count stays exact). */
struct bench_samples {
	uint64_t *v;
	size_t n, cap;
	bool oom; /* bench_samples_take could not merge */
};

void bench_sample_add(struct bench_samples *s, uint64_t ns);
/* Move @from's samples to the end of @all (and free @from's). */
void bench_samples_take(struct bench_samples *all, struct bench_samples *from);
/* lat_stats_compute over @s (reordered), or every member NaN when it has no sample. */
void bench_samples_stats(struct bench_samples *s, struct lat_stats *out);
void bench_samples_free(struct bench_samples *s);

/*
 * The client threads of a commit-shaped point (bench_commit.c, bench_peers.c): each
 * workload's client struct starts with a struct bench_client, and an array of them is
 * passed with its element size.
 */
struct bench_client {
	unsigned id;
	pthread_t th;
	bool started;
	uint64_t commits;         /* completed inside the window */
	struct bench_samples lat; /* their latencies */
	unsigned char *buf;       /* bench_client_buf: one item's data, or the O_DIRECT record */
	uint64_t key;             /* next key counter (bench_commit_key), from 1 */
	uint64_t next;            /* raw: next record in its share (bench_raw_commit) */
	int err;                  /* the error that stopped it */
};

/* Give client i of @n (at (char *)@clients + i * @size) its id, key and a bench_client_buf
 * of @buflen, start a thread on @fn for each, then open @g for those started (abandon it
 * when one could not start).  0 or the first error (a thread that could not start: with
 * @msg set). */
int bench_clients_start(struct bench_gate *g, void *clients, size_t size, unsigned n, size_t buflen,
			void *(*fn)(void *), char *msg, size_t len);
/* Stop the clients and join those started: their commits added to *@commits, their
 * samples moved to @all, their buffers freed, @g destroyed.  0 or the first client's
 * error, that client in *@failed. */
int bench_clients_join(struct bench_gate *g, void *clients, size_t size, unsigned n,
		       uint64_t *commits, struct bench_samples *all, struct bench_client **failed);
/* A client's operation that began at @t0 (now_ns) returned @err: false, with the error
 * kept and the point stopped; else true, and counted with its latency when it completed
 * inside the window. */
bool bench_client_done(struct bench_gate *g, struct bench_client *c, uint64_t t0, int err);

/*
 * The raw baseline of bench_commit.c and bench_peers.c (and the write of
 * bench_compare.c's): a client writes each commit as one O_DIRECT pwrite of @rec bytes
 * (its payload rounded up to 4 KiB, bench_raw_record) at its own offsets, cycling through
 * its share of a region after the log that bench_prewrite wrote with zeroes, and calls
 * fdatasync.
 */
struct bench_raw {
	int fd;         /* O_DIRECT descriptor of the target */
	uint64_t base;  /* byte offset of the region */
	uint64_t share; /* bytes of the region per client (>= rec) */
	uint64_t rec;   /* bytes per commit */
};

/* @payload rounded up to 4 KiB. */
uint64_t bench_raw_record(uint64_t payload);
/* @r's layout for @clients clients on a region of @area bytes at @base. */
void bench_raw_layout(struct bench_raw *r, uint64_t base, uint64_t area, uint64_t rec,
		      unsigned clients);
/* One pwrite of @len bytes at @off and fdatasync.  0 or a negative errno. */
int bench_write_sync(int fd, const void *buf, size_t len, uint64_t off);
/* Client @id's next commit (*@next counts them) through bench_write_sync. */
int bench_raw_commit(const struct bench_raw *r, unsigned id, uint64_t *next, const void *buf);

/* Write zeroes over [@off, @off + @len) of the target with O_DIRECT and fdatasync, so a
 * raw baseline's writes meet written blocks (no unwritten extent, no metadata for
 * fdatasync to commit).  0 or a negative errno, after bench_fail. */
int bench_prewrite(struct bench *b, uint64_t off, uint64_t len);

/* delog_options for the target on the chosen backend. */
struct delog_options bench_log_opts(const struct bench *b, enum delog_flush_policy p,
				    unsigned flags, unsigned logbufs, uint32_t logbsize,
				    uint64_t log_size);

/*
 * A workload's target for a delog log that it formats once and reopens per point:
 * bench_target_open(@bytes); when @fs_type is not NULL, the iolayer's name of the
 * filesystem into it (a static string) and, when no --backend was chosen, the backend in
 * use into b->o.backend; bench_prewrite of [@pre_off, @pre_off + @pre_len) when @pre_len;
 * then delog_open + delog_close with @lo (DELOG_OPEN_FORMAT), timed into @format_s.
 * 0 or nonzero after bench_fail.
 */
int bench_log_prepare(struct bench *b, uint64_t bytes, const char **fs_type, uint64_t pre_off,
		      uint64_t pre_len, const struct delog_options *lo, double *format_s);

/* Human output: "  target      file on ext4, backend B" (or "block device"). */
void bench_out_target(struct bench *b, const char *fs_type, const char *backend);

/* An array @key of @n counts. */
void bench_json_counts(struct json *j, const char *key, const unsigned *v, unsigned n);
/* A row's latency members: lat_p50_us, lat_p99_us, lat_max_us, lat_mean_us. */
void bench_json_lat(struct json *j, const struct lat_stats *lat);

/*
 * The durable commit of bench_commit.c and bench_peers.c: a transaction of @items items
 * of @item_size bytes under keys client << 40 | counter (bench_commit_key: distinct, so
 * nothing is relogged), reserving bench_tx_reservation; @buf holds one item's data, its
 * first byte set to the key's low byte.  Committed with delog_tx_commit_force, or
 * delog_tx_commit when not @force.  0 or the first error (the transaction aborted).
 */
uint64_t bench_commit_key(unsigned client, uint64_t *counter);
uint64_t bench_tx_reservation(uint32_t items, uint32_t item_size);
int bench_delog_commit(delog *log, uint32_t items, uint32_t item_size, unsigned client,
		       uint64_t *counter, unsigned char *buf, bool force);
/* A client's buffer of @len bytes, 4 KiB-aligned (O_DIRECT), filled with 0x20 + @client %
 * 64.  0 or -ENOMEM. */
int bench_client_buf(unsigned char **buf, size_t len, unsigned client);
/* The window's length (s), @ops per second, MB/s of @bytes_per_op each, and the process
 * CPU time in it (s). */
void bench_span_rates(const struct bench_span *sp, uint64_t ops, uint64_t bytes_per_op,
		      double *window_s, double *ops_per_s, double *mb_per_s, double *cpu_s);

/*
 * The disk's own counters (/sys/block/DISK/stat, Linux >= 5.5: field 16 is flush
 * requests completed, field 7 sectors written), read beside delog_stats so that a
 * benchmark prints what the device did next to what delog counted.  The disk is the
 * whole disk under the target: for a file the device holding its filesystem, for a
 * partition its parent disk (the block layer counts flushes there).  Other processes
 * flushing the same disk count too, so on a shared machine the delta is an upper bound.
 */
struct bench_disk {
	bool ok;
	char name[64];                  /* "vda" */
	char path[PATH_MAX];            /* /sys/.../stat */
	char why[160];                  /* when !ok: why there are no counters */
	double idle_before, idle_after; /* its flushes/s with the bench idle (NAN: not
					 * measured), bench_disk_idle */
};

struct bench_diskcount {
	bool ok;
	uint64_t flushes, sectors_written;
};

/* The disk under @path (a file, a directory or a block device); d->why when none. */
void bench_disk_find(const char *path, struct bench_disk *d);
/* The disk under @b's target, or none on --backend sim (the in-memory disk). */
void bench_disk_target(const struct bench *b, struct bench_disk *d);
/* Read its counters now (ok false when it has none or they cannot be read). */
struct bench_diskcount bench_disk_read(const struct bench_disk *d);
/* Flushes between two reads; NAN unless both are ok.  And per @per of something (NAN
 * for none). */
double bench_disk_flushes(const struct bench_diskcount *c0, const struct bench_diskcount *c1);
double bench_per(double v, uint64_t per);
/* The disk's flushes per second over @ns of the bench doing nothing (other processes,
 * the filesystem's own commits), into d->idle_before (@after false) or d->idle_after:
 * the noise in every delta.  Sleeps only when the disk has counters. */
#define BENCH_IDLE_NS 500000000ull
void bench_disk_idle(struct bench_disk *d, bool after, uint64_t ns);
/* Human output: "  disk        vda: flush requests from /sys/.../stat (...)" or why not,
 * with the idle rates when measured, and a warning when others flush the disk (more
 * than BENCH_IDLE_WARN flushes/s). */
#define BENCH_IDLE_WARN 10.0
void bench_out_disk(struct bench *b, const struct bench_disk *d);
/* JSON: "disk": {"name", "stat", "why", "idle_flushes_per_s_before", "..._after"} (name
 * and stat null, why set, without counters; an idle rate null when not measured). */
void bench_json_disk(struct json *j, const struct bench_disk *d);

/*
 * The open loop of `delog bench --workload commit --rate LIST` (bench_openloop.c):
 * Poisson arrivals at each offered rate, latency from each commit's intended arrival,
 * for each policy and the raw-fdatasync baseline.  bench_commit.c parses the options,
 * prepares the target (formats the log, pre-writes the baseline's region), then calls
 * bench_openloop_run, which runs the points and prints the tables (or --json) and the
 * --plot.
 */
#define BENCH_OL_MAX_RATES 16u
#define BENCH_OL_MAX_RATE 10000000.0

struct bench_ol_params {
	const double *rates;
	unsigned nrates;
	const enum delog_flush_policy *policy;
	unsigned npolicy;
	double time_s;
	uint32_t items, item_size;
	bool force;
	unsigned workers; /* the worker pool of every point */
	uint64_t seed;    /* the schedule of rate i: seed + i */
	unsigned logbufs;
	uint32_t logbsize;
	uint64_t log_size;
	bool baseline;                        /* raw-fdatasync at every rate (a file target) */
	uint64_t raw_base, raw_area, raw_rec; /* its region and bytes per commit */
	const char *fs_type;
	struct bench_disk *disk;
	const char *plot; /* --plot FILE.png, or NULL */
};

/* What one point measured. */
struct bench_ol_point {
	double offered_per_s, arrivals_per_s, achieved_per_s, window_s;
	uint64_t arrivals; /* intended inside the window */
	uint64_t commits;  /* completed inside the window */
	uint64_t unserved; /* arrivals of the window still queued at its end */
	uint64_t queue_start, queue_end, queue_max;
	struct lat_stats lat;
	double p999_us;
	bool saturated;
};

/* TOOL_EXIT_OK or TOOL_EXIT_FAIL (after bench_fail). */
int bench_openloop_run(struct bench *b, const struct bench_ol_params *p);

/*
 * gnuplot for a workload's --plot (bench_compare.c, bench_openloop.c): whether it is on
 * PATH; @src with quotes, backslashes and newlines replaced (a title inside '...');
 * two new temporary files in $TMPDIR (else /tmp), the data file @dat opened in *@f and
 * the script file @gp (paths of @len bytes each); running gnuplot on @gp, checking that
 * it drew @out.  0 or a negative errno after bench_fail.
 */
bool bench_have_gnuplot(void);
void bench_gnuplot_name(char *dst, size_t len, const char *src);
int bench_plot_files(struct bench *b, char *dat, char *gp, size_t len, FILE **f);
int bench_gnuplot(struct bench *b, const char *gp, const char *out);

#endif
