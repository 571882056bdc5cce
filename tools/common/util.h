/*
 * util.h - the small helpers every tool shares (util.c): size and count parsing, a
 * one-document JSON writer, latency statistics, clocks, version and error strings, and
 * the check that a PATH can hold a log.  Used by the three wings above (cli/, bench/,
 * crash/); it uses nothing of theirs.
 */
#ifndef DELOG_TOOLS_COMMON_UTIL_H
#define DELOG_TOOLS_COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
 * Run the program @program that lies beside this one (the directory of /proc/self/exe),
 * with this command's arguments (@argv[0] replaced by its path): how `delog bench` runs
 * delog-bench and `delog bench --peers` runs delog-bench-peers, so that `delog` itself
 * links neither.  Returns only on failure, after saying on stderr ("@cmd: ...") where it
 * looked, and @missing (may be NULL) when the program is not there: exit status 1.
 */
int tool_run_beside(const char *cmd, const char *program, const char *missing, int argc,
		    char **argv);

/*
 * The size of the block device @path in bytes (BLKGETSIZE64 on a read-only descriptor:
 * neither an exclusive hold nor O_DIRECT), so a command can say that a device is too
 * small before it asks for --force to overwrite it.  0 or a negative errno.
 */
int tool_blockdev_size(const char *path, uint64_t *bytes);

/*
 * Parse a byte count: decimal digits with an optional binary suffix K, M, G or T (also
 * KiB, MiB, ..., case-insensitive; 1K = 1024).  Returns 0, or -EINVAL (not a size) or
 * -ERANGE (does not fit in 64 bits).
 */
int parse_size(const char *s, uint64_t *out);
/*
 * The one parser of size options (--size, --bw-bytes, --read-chunk, ...), so every command
 * reads and refuses sizes alike: parse_size, then at least @min, at most @max (0: no
 * limit) and a multiple of @align (0: any; refused, never rounded).  On error prints, on
 * stderr, with the value exact (fmt_bytes_exact),
 *   delog CMD: OPT: 'ARG' is not a size (digits and an optional K, M, G or T suffix)
 *   delog CMD: OPT: 'ARG' is 1 B, below the minimum of 4 MiB
 *   delog CMD: OPT: 'ARG' is 4097 KiB, not a multiple of 4 KiB: give 4 MiB or 4100 KiB
 * (@what, when not NULL, names the minimum: "... is 1 B, below the smallest log (4 MiB)")
 * and returns -EINVAL or -ERANGE; the caller exits TOOL_EXIT_USAGE.
 */
int tool_parse_size(const char *cmd, const char *opt, const char *arg, uint64_t min, uint64_t max,
		    uint64_t align, const char *what, uint64_t *out);
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
/* Format @bytes exactly, in the largest unit that divides it: "4 MiB", "4097 KiB",
 * "5000000 B" (fmt_bytes would say "4.0 MiB" and "4.8 MiB"), for a size that a message
 * must not round, such as one refused for not being a multiple of the sector. */
const char *fmt_bytes_exact(uint64_t bytes, char *buf, size_t len);

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
