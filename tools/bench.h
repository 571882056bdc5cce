/*
 * bench.h - what `delog bench` (bench.c) shares with its workloads (bench_<name>.c).
 *
 * bench.c owns the command line, the target (a temporary file, or the PATH given), the
 * stop signals, progress and error output, and the JSON error document; a workload owns
 * its own options (merged into bench.c's getopt table), its measurement and its report.
 * A new workload is one file defining a struct bench_workload and one row in bench.c's
 * table.
 */
#ifndef DELOG_BENCH_H
#define DELOG_BENCH_H

#include "tools.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>

/* Workload option values start here (below are bench.c's short options). */
#define BENCH_OPT_WORKLOAD 1000

/* The common options. */
struct bench_opts {
	const char *workload;
	const char *path;         /* NULL: a temporary file in the current directory */
	const char *backend;      /* --backend; default "uring" when built, else NULL (the best
				   * available) */
	bool json, keep, force;
};

/* What the bench runs on; bench.c removes what it created (unless --keep). */
struct bench_target {
	char path[PATH_MAX];
	bool created;             /* we created the file */
	bool is_blockdev;
	uint64_t bytes;           /* file size (as created or found) or device size */
	int hold_fd;              /* O_EXCL hold of a block device, else -1 */
};

struct bench {
	struct bench_opts o;
	struct bench_target t;
	sigset_t stop_sigs;       /* blocked for the run, polled by bench_interrupted */
	bool prog_on, prog_shown;
	uint64_t prog_last;
	bool json_done;           /* the workload printed its JSON document */
	int err;                  /* first failure, for the JSON error document */
	char err_msg[512];
	uint64_t t0;              /* start of the run (now_ns) */
};

struct bench_workload {
	const char *name;
	const char *summary;
	const struct option *opts;  /* its long options, ending with a zero entry; every val
				     * >= BENCH_OPT_WORKLOAD */
	size_t state_size;          /* bytes of option state, zeroed, passed to the calls */
	void (*defaults)(void *state);
	/* One of its options (@opt is the val): 0, or TOOL_EXIT_USAGE via bench_usage_error. */
	int (*option)(void *state, int opt, const char *arg);
	/* After parsing, with b->o filled: cross-checks; 0 or TOOL_EXIT_USAGE. May be NULL. */
	int (*check)(struct bench *b, void *state);
	void (*help)(FILE *f);      /* its option lines for --help */
	/* The run: TOOL_EXIT_OK or TOOL_EXIT_FAIL (after bench_fail). */
	int (*run)(struct bench *b, void *state);
};

extern const struct bench_workload bench_recovery;
extern const struct bench_workload bench_commit;
extern const struct bench_workload bench_dbench;
extern const struct bench_workload bench_fsmark;
extern const struct bench_workload bench_compare_flush;
extern const struct bench_workload bench_peers;    /* with DELOG_HAVE_PEERS */

/* bench_commit.c: write zeroes over [@off, @off + @len) of the target with O_DIRECT and
 * fdatasync, so a raw baseline's writes meet written blocks (no unwritten extent, no
 * metadata for fdatasync to commit).  0 or a negative errno, after bench_fail.  Also used
 * by bench_compare.c's raw baseline. */
int bench_prewrite(struct bench *b, uint64_t off, uint64_t len);

/*
 * The target: the PATH given or a new temporary file "delog-bench-PID-N.tmp" in the
 * current directory.  A path that does not exist is created with io_file_create at
 * @bytes (and is removed at the end unless --keep).  An existing regular file smaller
 * than @bytes is extended (fallocate); an existing non-empty file or a block device is
 * overwritten, so it needs --force; a block device is held O_EXCL (fails while mounted)
 * and must hold @bytes.  Returns 0 or a negative errno after bench_fail.
 */
int bench_target_open(struct bench *b, uint64_t bytes);

/* io_dev_opts for the target on the chosen backend, errors into @msg. */
void bench_dev_opts(const struct bench *b, struct io_dev_opts *o, char *msg, size_t len);

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

/* Median of the non-NaN values of @v (not modified); NaN when there are none. */
double bench_median(const double *v, size_t n);
/* Bytes per second over @ns in MB/s (10^6 bytes/s); NaN for 0 ns. */
double bench_mbs(uint64_t bytes, uint64_t ns);

/* The opening members every bench JSON document has: tool, version, workload, path,
 * backend, target {kind, created, kept, bytes}. */
void bench_json_head(struct bench *b, struct json *j);

#endif
