/*
 * tools.h - what the `delog` subcommands share: their entry points and the small helpers
 * in util.c (size and count parsing, a one-document JSON writer, latency statistics,
 * clocks, error strings).
 *
 * Conventions every subcommand follows (DESIGN.md section 6):
 *   - int cmd_<name>(int argc, char **argv): argv[0] is the subcommand's name; options
 *     are parsed with getopt_long after resetting optind to 0.
 *   - Exit codes: TOOL_EXIT_OK (0) success, TOOL_EXIT_FAIL (1) the operation failed,
 *     TOOL_EXIT_USAGE (2) the command line was wrong.  `--help` prints to stdout and
 *     returns 0; a usage error prints a short usage to stderr and returns 2.
 *   - Errors are "delog <cmd>: <subject>: <reason>" on stderr.  With --json, stdout
 *     carries exactly one JSON document and nothing else.
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

/* ---- util.c ---- */

/* The version string (the engine's when it is linked, else the CMake project version). */
const char *tool_version(void);
/* Message for a negative errno (the engine's delog_strerror when it is linked). */
const char *tool_strerror(int err);

/*
 * Parse a byte count: decimal digits with an optional binary suffix K, M, G or T (also
 * KiB, MiB, ..., case-insensitive; 1K = 1024).  Returns 0, or -EINVAL (not a size) or
 * -ERANGE (does not fit in 64 bits).
 */
int parse_size(const char *s, uint64_t *out);
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
