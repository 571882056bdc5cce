/*
 * tools.h - what the `delog` subcommands share: their entry points and the small helpers
 * in util.c (size and count parsing, a one-document JSON writer, latency statistics,
 * clocks, error strings).
 *
 * Conventions every subcommand follows (docs/DESIGN.md section 6):
 *   - int cmd_<name>(int argc, char **argv): argv[0] is the subcommand's name; options
 *     are parsed with getopt_long after resetting optind to 0.
 *   - Exit codes: TOOL_EXIT_OK (0) success, TOOL_EXIT_FAIL (1) the operation failed,
 *     TOOL_EXIT_USAGE (2) the command line was wrong.  `--help` prints to stdout and
 *     returns 0; a usage error prints a short usage to stderr and returns 2.
 *   - Errors are "delog <cmd>: <subject>: <reason>" on stderr.  With --json, stdout
 *     carries exactly one JSON document and nothing else.  getopt's own messages carry
 *     the same prefix: delog.c runs a command with argv[0] = "delog <cmd>".
 *   - One name and one meaning per option in every command: -s/--size the log size
 *     (probe: its region), -p/--policy the flush policy, -b/--backend the I/O backend
 *     (default: the best available; tool_parse_backend), -n only --dry-run, and
 *     -t/--threads, -j/--json, -h/--help, -f/--force, -i/--ids, -m/--mode, -c/--count.
 *     Sizes go through tool_parse_size, so they are read and refused alike.
 */
#ifndef DELOG_TOOLS_H
#define DELOG_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
	TOOL_EXIT_OK = 0,
	TOOL_EXIT_FAIL = 1,
	TOOL_EXIT_USAGE = 2,
};

/* ---- subcommands ---- */

int cmd_probe(int argc, char **argv);
int cmd_format(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_crash(int argc, char **argv);
int cmd_stress(int argc, char **argv);

/* ---- logdev.c: opening a log and reporting what is wrong with one ---- */

#include "jrnl.h"

struct json;

struct tool_log {
	const char *path;
	struct iol_dev *dev;
	struct jrnl_geom g;
	int err;                  /* tool_log_open's failure: the code ... */
	uint64_t err_off;         /* ... the byte offset ... */
	char err_what[256];       /* ... and what was found there */
	bool sb_err;              /* the superblock was refused (err_what names the field) */
};

/*
 * Open @path on @backend (NULL: the best available) and read its superblock.  On
 * failure prints "delog <cmd>: <path>: <code>: <message>, at offset N: <what>" on
 * stderr, keeps the code, offset and text in @out for --json, and returns the negative
 * error (a DELOG_E* code or -errno); @out->dev is then NULL.  A @path that is not a
 * regular file or block device (tool_path_check) is refused before anything opens it.
 */
int tool_log_open(const char *cmd, const char *path, const char *backend, bool read_only,
		  struct tool_log *out);
void tool_log_close(struct tool_log *l);
/* Print a refusal in the form above (@what may be NULL: code and message only). */
void tool_log_error(const char *cmd, const char *path, int err, uint64_t off, const char *what);
/* Print why jrnl_recover failed: the corruption it found and where, or the error. */
void tool_recover_error(const char *cmd, const char *path, int err, const struct jrnl_report *rep);
const char *tool_lsn(uint64_t lsn, char *buf, size_t len);     /* "cycle/sector" */
const char *tool_uuid(const uint8_t u[16], char buf[37]);
const char *tool_err_name(int err);                            /* "DELOG_ECORRUPT", "EIO" */
void tool_print_geom(FILE *f, const char *path, const struct jrnl_geom *g);
void tool_print_report(FILE *f, const struct jrnl_geom *g, const struct jrnl_report *r);
void tool_json_geom(struct json *j, const char *key, const struct jrnl_geom *g);
void tool_json_report(struct json *j, const char *key, const struct jrnl_report *r);
void tool_json_error(struct json *j, int err, uint64_t off, const char *what);
/* tool_log_open's failure in @l as the "error" member. */
void tool_json_log_error(struct json *j, const struct tool_log *l);

/* ---- fio.c: fio as a reference (probe, bench) ---- */

/* fio's path: the first executable "fio" in $PATH (or /usr/local/bin:/usr/bin:/bin),
 * written into @buf; NULL when there is none. */
const char *fio_find(char *buf, size_t len);

/* One fio job: --direct=1 --fallocate=none --output-format=json over [offset, offset +
 * size) of one file or block device. */
struct fio_job {
	const char *fio;          /* fio's path (fio_find) */
	const char *name;         /* --name */
	const char *filename;     /* ':' is escaped for fio */
	const char *rw;           /* "read" or "write": --rw, and the JSON section read back */
	const char *ioengine;     /* "io_uring", "libaio", ... */
	uint64_t bs;              /* bytes per request */
	unsigned iodepth;         /* 0: 1 */
	uint64_t offset, size;    /* bytes */
	bool readonly;            /* --readonly: fio refuses to write */
	double runtime_s;         /* > 0: --time_based --runtime, cycling over the region */
	bool end_fsync;           /* --end_fsync=1: the job ends with an fsync, timed */
	/* A second job alongside (time-based jobs only): a loop of one 4 KiB write at
	 * @flusher_offset + fdatasync, so the device flushes back to back while the first
	 * job writes.  The bandwidth read back stays the first job's. */
	bool flusher;
	uint64_t flusher_offset;
};

/*
 * Run @job to completion (the caller's blocked signals are unblocked in the child) and
 * return its bandwidth in MB/s (10^6 bytes/s).  Returns 0, or a negative errno with a
 * one-line reason in @err: fio could not be started, exited non-zero (its first output
 * line is quoted), was killed, or printed no bandwidth for @job->rw.
 */
int fio_run(const struct fio_job *job, double *mbs, char *err, size_t errlen);
/* The bandwidth of section @dir ("read" or "write") of jobs[0] in fio's JSON output, in
 * bytes/s (bw_bytes, or bw in KiB/s from older fio).  Returns 0 or -EINVAL. */
int fio_parse_bw(const char *json, const char *dir, double *bytes_per_s);

/* ---- recommend.c: the flush policy and log buffers probe recommends ---- */

#include <delog.h>

/* What probe measured on one backend (latency medians in microseconds). */
struct probe_costs {
	double write_us;          /* W: one 4 KiB write */
	double write_flush_us;    /* WF: a 4 KiB write, then a flush */
	double fua_us;            /* FU: one 4 KiB FUA write */
	double flush_us;          /* F: a flush of an idle cache */
	double seq_write_mbs;     /* sequential O_DIRECT write, 10^6 bytes/s */
	int volatile_cache;       /* 1 write back, 0 write through, -1 unknown */
	int fua;                  /* 1 native FUA, 0 none, -1 unknown */
};

struct probe_rec {
	enum delog_flush_policy policy; /* sync or single; never none (async never wins) */
	unsigned logbufs;               /* DELOG_LOGBUFS_MIN..MAX */
	uint32_t logbsize;              /* a power of two, DELOG_LOGBSIZE_MIN..MAX */
	char reason[640];               /* the rule that decided, with the numbers */
};

/* The rule (recommend.c's top comment, docs/BENCH.md): pure, reads only @c. */
void probe_recommend(const struct probe_costs *c, struct probe_rec *r);

/*
 * probe.c: measure @c on an open device the way `delog probe` does (the same code):
 * the four latency medians over @ops ops each (at least 1) on 4 KiB blocks in
 * [@off, @off + @bytes), and one sequential write pass over that range (8 x 1 MiB in
 * flight; @bytes at least 8 MiB), then a flush.  The range is overwritten.  The device's
 * volatile cache and FUA come from its geometry.  0, or a negative errno with the
 * reason in @err.
 */
struct iol_dev;
int probe_measure_costs(struct iol_dev *dev, uint64_t off, uint64_t bytes, uint64_t ops,
			struct probe_costs *c, char *err, size_t errlen);

/* ---- util.c ---- */

/* The version string (the engine's when it is linked, else the CMake project version). */
const char *tool_version(void);
/* Message for a negative errno (the engine's delog_strerror when it is linked). */
const char *tool_strerror(int err);

struct stat;

/*
 * Check, before anything opens it, that @path (after symbolic links) is a regular file or
 * a block device, the only homes a log can have.  open(2) of a FIFO blocks until its
 * other end is opened (a read-only open waits for a writer, forever if none comes), and
 * a directory, socket or character device cannot hold a log either; stat(2) never
 * blocks, so every command that takes a PATH calls this before its first open.
 * Returns 0 with @st filled in; -ENOENT when nothing is there (a command that creates its
 * file goes on to create it); else a negative errno with the reason in @why, e.g. "not a
 * regular file or block device (a FIFO)", for "delog <cmd>: <path>: <why>".
 */
int tool_path_check(const char *path, struct stat *st, char *why, size_t len);

/*
 * Parse a byte count: decimal digits with an optional binary suffix K, M, G or T (also
 * KiB, MiB, ..., case-insensitive; 1K = 1024).  Returns 0, or -EINVAL (not a size) or
 * -ERANGE (does not fit in 64 bits).
 */
int parse_size(const char *s, uint64_t *out);
/*
 * The one parser of size options (--size, --bw-bytes, --read-chunk, ...), so every command
 * reads and refuses sizes alike: parse_size, then at least @min, at most @max (0: no
 * limit) and a multiple of @align (0: any).  On error prints, on stderr,
 *   delog CMD: OPT: 'ARG' is not a size (digits and an optional K, M, G or T suffix)
 *   delog CMD: OPT: 'ARG' is 1 B, below the minimum of 4 MiB
 *   delog CMD: OPT: 'ARG' is 4.8 MiB, not a multiple of 4 KiB
 * (@what, when not NULL, names the minimum: "... is 1 B, below the smallest log (4 MiB)")
 * and returns -EINVAL or -ERANGE; the caller exits TOOL_EXIT_USAGE.
 */
int tool_parse_size(const char *cmd, const char *opt, const char *arg, uint64_t min,
		    uint64_t max, uint64_t align, const char *what, uint64_t *out);
/* The same checks on a value already parsed (@arg is quoted in the message). */
int tool_check_size(const char *cmd, const char *opt, const char *arg, uint64_t v, uint64_t min,
		    uint64_t max, uint64_t align, const char *what);

/*
 * --backend for a command that runs on a real device (format, print, recover, stress):
 * "auto" is NULL (the best available); "sim" and a backend not built in are refused with
 * "delog CMD: --backend: 'B' is not a built-in device backend (uring, aio, psync)" on
 * stderr, -EINVAL (the caller exits TOOL_EXIT_USAGE).
 */
int tool_parse_backend(const char *cmd, const char *arg, const char **out);

/* Parse a decimal count in [min, max].  Returns 0, -EINVAL or -ERANGE. */
int parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Format @bytes as "256 MiB", "4 KiB", "1.5 GiB", "512 B" into @buf. */
const char *fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);

/*
 * Latency summary of @n samples in nanoseconds.  @samples is sorted in place.  Percentiles
 * use the nearest-rank method (the smallest sample with at least p% of the samples at or
 * below it), so they are always a measured value; the median is the 50th.
 */
struct lat_stats {
	size_t n;
	double min_us, median_us, p99_us, max_us, mean_us;
};
void lat_stats_compute(uint64_t *samples, size_t n, struct lat_stats *out);
/* Nearest-rank percentile @p (0 < p <= 100) of @n sorted samples. */
uint64_t percentile_sorted(const uint64_t *sorted, size_t n, double p);

/*
 * A streaming JSON writer that emits one document.  Containers nest up to JSON_MAX_DEPTH.
 * Inside an object every value call takes a key; inside an array @key must be NULL.
 * Doubles that are not finite are written as null.  Strings are escaped per RFC 8259
 * (bytes >= 0x80 pass through, so UTF-8 stays UTF-8).
 */
#define JSON_MAX_DEPTH 16
struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH]; /* no member written yet at this level */
	bool pretty;
};
void json_init(struct json *j, FILE *f, bool pretty);
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *val); /* NULL val -> null */
void json_u64(struct json *j, const char *key, uint64_t val);
void json_i64(struct json *j, const char *key, int64_t val);
void json_dbl(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
/* Finish the document (a newline after the closing bracket) and flush. */
void json_finish(struct json *j);

#endif
