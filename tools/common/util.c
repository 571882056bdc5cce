/*
 * util.c - helpers shared by the delog subcommands: byte-size and count parsing, a
 * streaming JSON writer, latency statistics, the clock, version and error strings, and
 * the check that a PATH is a file or block device before anything opens it (and a block
 * device's size, read before anything writes it).
 *
 * The JSON writer streams straight to a FILE (no document tree): the tools emit one
 * document at the end of a run, and a writer that only tracks "is this the first member
 * at this depth" is enough to place commas.  It does not check that keys are unique;
 * callers write each key once.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <delog.h>

#include "io.h"

const char *tool_version(void)
{
	return delog_version_string();
}

const char *tool_strerror(int err)
{
	return delog_strerror(err);
}

/* ---- paths ---- */

static const char *file_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISDIR(mode))
		return "a directory";
	return "an unknown file type";
}

int tool_path_check(const char *path, struct stat *st, char *why, size_t len)
{
	int err;

	if (stat(path, st)) {
		err = -errno;
		snprintf(why, len, "%s", strerror(errno));
		return err;
	}
	if (S_ISREG(st->st_mode) || S_ISBLK(st->st_mode))
		return 0;
	snprintf(why, len, "not a regular file or block device (%s)", file_kind(st->st_mode));
	return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
}

int tool_blockdev_size(const char *path, uint64_t *bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, BLKGETSIZE64, bytes))
		err = -errno;
	close(fd);
	return err;
}

/* ---- parsing ---- */

int parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return -EINVAL;
		shift = 10 * (int)(u - units + 1);
		end++;
		if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
		else if (end[0] == 'B' || end[0] == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

int tool_check_size(const char *cmd, const char *opt, const char *arg, uint64_t v, uint64_t min,
		    uint64_t max, uint64_t align, const char *what)
{
	char a[32], b[32], c[32], d[32];

	/* The value exactly (fmt_bytes_exact): '4095K' is not "4.0 MiB, below 4 MiB". */
	if (v < min) {
		if (what)
			fprintf(stderr, "delog %s: %s: '%s' is %s, below %s (%s)\n", cmd, opt, arg,
				fmt_bytes_exact(v, a, sizeof(a)), what,
				fmt_bytes(min, b, sizeof(b)));
		else
			fprintf(stderr, "delog %s: %s: '%s' is %s, below the minimum of %s\n", cmd,
				opt, arg, fmt_bytes_exact(v, a, sizeof(a)),
				fmt_bytes(min, b, sizeof(b)));
		return -ERANGE;
	}
	if (max && v > max) {
		fprintf(stderr, "delog %s: %s: '%s' is %s, above the maximum of %s\n", cmd, opt,
			arg, fmt_bytes_exact(v, a, sizeof(a)), fmt_bytes(max, b, sizeof(b)));
		return -ERANGE;
	}
	if (align > 1 && v % align) {
		/* Refused, not rounded: the size that would be used is the user's to choose. */
		uint64_t down = v - v % align;

		if (down >= min && down)
			fprintf(stderr,
				"delog %s: %s: '%s' is %s, not a multiple of %s: give %s "
				"or %s\n",
				cmd, opt, arg, fmt_bytes_exact(v, a, sizeof(a)),
				fmt_bytes(align, b, sizeof(b)), fmt_bytes_exact(down, c, sizeof(c)),
				fmt_bytes_exact(down + align, d, sizeof(d)));
		else
			fprintf(stderr, "delog %s: %s: '%s' is %s, not a multiple of %s: give %s\n",
				cmd, opt, arg, fmt_bytes_exact(v, a, sizeof(a)),
				fmt_bytes(align, b, sizeof(b)),
				fmt_bytes_exact(down + align, d, sizeof(d)));
		return -EINVAL;
	}
	return 0;
}

int tool_parse_size(const char *cmd, const char *opt, const char *arg, uint64_t min, uint64_t max,
		    uint64_t align, const char *what, uint64_t *out)
{
	uint64_t v;
	int err = parse_size(arg, &v);

	if (err == -ERANGE) {
		fprintf(stderr, "delog %s: %s: '%s' does not fit in 64 bits\n", cmd, opt, arg);
		return err;
	}
	if (err) {
		fprintf(stderr,
			"delog %s: %s: '%s' is not a size (digits and an optional K, M, G "
			"or T suffix)\n",
			cmd, opt, arg);
		return err;
	}
	err = tool_check_size(cmd, opt, arg, v, min, max, align, what);
	if (!err)
		*out = v;
	return err;
}

int tool_parse_backend(const char *cmd, const char *arg, const char **out)
{
	const char *const *all = iol_backend_names();

	if (!strcmp(arg, "auto")) {
		*out = NULL;
		return 0;
	}
	if (strcmp(arg, "sim") && iol_backend_built(arg)) {
		*out = arg;
		return 0;
	}
	fprintf(stderr, "delog %s: --backend: '%s' is not a built-in device backend (", cmd, arg);
	for (size_t i = 0, n = 0; all[i]; i++)
		if (strcmp(all[i], "sim"))
			fprintf(stderr, "%s%s", n++ ? ", " : "", all[i]);
	fprintf(stderr, "%s)\n",
		strcmp(arg, "sim") ?
			"" :
			"; the sim disk lives in memory: `delog crash` cuts its power");
	return -EINVAL;
}

int parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned u = 0;
	uint64_t whole = bytes;

	while (whole >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		whole /= 1024;
		u++;
	}
	if (u && bytes % ((uint64_t)1 << (10 * u)))
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)((uint64_t)1 << (10 * u)),
			 units[u]);
	else
		snprintf(buf, len, "%" PRIu64 " %s", whole, units[u]);
	return buf;
}

const char *fmt_bytes_exact(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned u = 0;

	while (bytes && u + 1 < sizeof(units) / sizeof(units[0]) && !(bytes % 1024)) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, units[u]);
	return buf;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- statistics ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t percentile_sorted(const uint64_t *sorted, size_t n, double p)
{
	double rank;
	size_t idx;

	if (!n)
		return 0;
	rank = ceil(p / 100.0 * (double)n);
	idx = rank < 1.0 ? 0 : (size_t)rank - 1;
	return sorted[idx < n ? idx : n - 1];
}

void lat_stats_compute(uint64_t *samples, size_t n, struct lat_stats *out)
{
	double sum = 0;

	memset(out, 0, sizeof(*out));
	out->n = n;
	if (!n)
		return;
	qsort(samples, n, sizeof(*samples), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)samples[i];
	out->min_us = (double)samples[0] / 1e3;
	out->max_us = (double)samples[n - 1] / 1e3;
	out->median_us = (double)percentile_sorted(samples, n, 50) / 1e3;
	out->p99_us = (double)percentile_sorted(samples, n, 99) / 1e3;
	out->mean_us = sum / (double)n / 1e3;
}

/* ---- JSON ---- */

void json_init(struct json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
	j->first[0] = true;
}

static void json_indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void json_string_lit(struct json *j, const char *s)
{
	fputc('"', j->f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", j->f);
			break;
		case '\\':
			fputs("\\\\", j->f);
			break;
		case '\n':
			fputs("\\n", j->f);
			break;
		case '\r':
			fputs("\\r", j->f);
			break;
		case '\t':
			fputs("\\t", j->f);
			break;
		case '\b':
			fputs("\\b", j->f);
			break;
		case '\f':
			fputs("\\f", j->f);
			break;
		default:
			if (*p < 0x20)
				fprintf(j->f, "\\u%04x", *p);
			else
				fputc(*p, j->f);
		}
	}
	fputc('"', j->f);
}

/* Separator, indentation and key before a value at the current depth. */
static void json_member(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (j->depth)
		json_indent(j);
	if (key) {
		json_string_lit(j, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void json_open(struct json *j, const char *key, char c)
{
	json_member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct json *j, char c)
{
	bool empty = j->first[j->depth];

	if (j->depth)
		j->depth--;
	if (!empty)
		json_indent(j);
	fputc(c, j->f);
}

void json_obj_begin(struct json *j, const char *key)
{
	json_open(j, key, '{');
}
void json_obj_end(struct json *j)
{
	json_close(j, '}');
}
void json_arr_begin(struct json *j, const char *key)
{
	json_open(j, key, '[');
}
void json_arr_end(struct json *j)
{
	json_close(j, ']');
}

void json_str(struct json *j, const char *key, const char *val)
{
	json_member(j, key);
	if (val)
		json_string_lit(j, val);
	else
		fputs("null", j->f);
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
	json_member(j, key);
	fprintf(j->f, "%" PRIu64, val);
}

void json_i64(struct json *j, const char *key, int64_t val)
{
	json_member(j, key);
	fprintf(j->f, "%" PRId64, val);
}

void json_dbl(struct json *j, const char *key, double val)
{
	json_member(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.6g", val);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool val)
{
	json_member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	json_member(j, key);
	fputs("null", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

/* ---- running a program that lies beside this one ---- */

int tool_run_beside(const char *cmd, const char *program, const char *missing, int argc,
		    char **argv)
{
	char self[PATH_MAX], prog[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char **nargv;
	char *slash;

	if (n <= 0) {
		fprintf(stderr,
			"%s: cannot find this program's directory (/proc/self/exe: %s); "
			"run %s directly\n",
			cmd, strerror(errno), program);
		return 1;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	snprintf(prog, sizeof(prog), "%.*s/%s", slash ? (int)(slash - self) : 1, slash ? self : ".",
		 program);
	if (access(prog, X_OK)) {
		if (missing)
			fprintf(stderr, "%s: the program %s, which was not built: %s\n", cmd,
				program, missing);
		else
			fprintf(stderr,
				"%s: the program %s, which is not beside %s (%s): install it "
				"there, or run it from the build tree (tools/%s)\n",
				cmd, program, self, strerror(errno), program);
		return 1;
	}
	nargv = calloc((size_t)argc + 1, sizeof(*nargv));
	if (!nargv) {
		fprintf(stderr, "%s: out of memory\n", cmd);
		return 1;
	}
	nargv[0] = prog;
	for (int i = 1; i < argc; i++)
		nargv[i] = argv[i];
	fflush(NULL);
	execv(prog, nargv);
	fprintf(stderr, "%s: %s: cannot run it: %s\n", cmd, prog, strerror(errno));
	free(nargv);
	return 1;
}
