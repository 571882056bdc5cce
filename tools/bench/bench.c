/*
 * bench.c - `delog bench --workload W [PATH] [OPTIONS]`: benchmarks of the log, one
 * workload per file (tools/bench/bench_<name>.c), dispatched from the program's table
 * (bench_workloads.c in `delog`, peers_main.c in delog-bench-peers) as tools/cli/delog.c
 * dispatches subcommands.  Benchmarks report numbers next to a reference (fio, for
 * I/O-bound workloads); they are not tests and assert nothing about speed.
 *
 * What this file owns, and why:
 *  - The command line.  A workload declares its long options (struct option, values
 *    from BENCH_OPT_WORKLOAD up) and a handler; the workload is found first by a plain
 *    scan of argv for --workload / -w (getopt cannot be run twice, since it permutes
 *    argv), then one getopt_long pass runs over the common options and that workload's
 *    together.  So every option error is reported the same way, two workloads may both
 *    have a --size, and `delog bench --workload W --help` shows both sets.  A --workload
 *    that getopt sees but the scan did not (an abbreviation such as --work) must agree
 *    with the scan, or it is a usage error.
 *  - The target.  Without PATH a new file "delog-bench-PID-N.tmp" is created in the
 *    current directory and removed at the end (--keep leaves it).  A PATH that does not
 *    exist is created the same way; an existing non-empty file or a block device is
 *    overwritten by the bench, so it needs --force (as for `delog probe`); a block device
 *    is held open O_EXCL for the run, so it cannot be mounted under us.  tmpfs is refused
 *    before anything is allocated on it (no O_DIRECT there).
 *  - Stop signals.  SIGINT, SIGTERM, SIGHUP and SIGPIPE (unless ignored; SIGPIPE so
 *    that `delog bench ... | head` still removes its file) are blocked before any
 *    iolayer thread exists, so all threads inherit the mask; workloads poll
 *    bench_interrupted between steps, the target is cleaned up, and only then is the
 *    mask restored, so the pending signal kills the process after the cleanup.
 *  - Errors and output.  "delog bench: <subject>: <reason>" on stderr; exit 0, 1, or 2
 *    for usage.  Progress is drawn on stderr when it is a terminal (bench_progress, a
 *    line redrawn in place); otherwise a workload's points (bench_point) each print one
 *    line when they finish, so a run in a pipe is not silent for minutes.  With --json stdout carries exactly one document: the workload's on
 *    success, or, when the workload failed before printing one, a short document with
 *    the common members and "error" {code, name, message}.
 */
#include "bench.h"

#include "io.h"
#include "io_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MAX_OPTS 64

/*
 * A workload that is a program of its own (w->program: the peers comparison, which links
 * RocksDB, SQLite and LMDB, so that the delog a user installs does not): run that
 * program from the directory this one was started from, with our arguments.  Returns
 * only on failure: exit 1 and a message saying where the program was looked for, and
 * whether it was built at all.
 */
static int run_program(const struct bench_workload *w, int argc, char **argv)
{
	return tool_run_beside("delog bench", w->program, w->built ? NULL : w->not_built, argc,
			       argv);
}

static const struct bench_workload *find_workload(const char *name)
{
	for (size_t i = 0; i < bench_nr_workloads; i++)
		if (!strcmp(bench_workloads[i]->name, name))
			return bench_workloads[i];
	return NULL;
}

/* ---- output ---- */

static void usage(FILE *f)
{
	if (bench_nr_workloads == 1) {
		/* delog-bench-peers: a program with one workload. */
		fprintf(f,
			"usage: %s [--dir DIR] [--backend B] [--keep] [--force] [--json] [OPTIONS]\n"
			"       (also run as delog bench --workload %s)\n",
			program_invocation_short_name, bench_workloads[0]->name);
		return;
	}
	fprintf(f, "usage: delog bench --workload W [PATH] [--backend B] [--keep] [--force] "
		   "[--json] [WORKLOAD OPTIONS]\n"
		   "       delog bench --workload W --help\n"
		   "       delog bench --compare-flush [PATH] [OPTIONS]\n");
}

/* Without --workload, the help says what -s, -p and -t stand for (a workload's help
 * shows them beside its --size, --policy, --threads). */
static void help_shorts(const struct bench_workload *w)
{
	if (!w)
		printf("  -s, -p, -t         the workload's --size (the log size), --policy, "
		       "--threads,\n                     where it has them\n");
}

static void help(const struct bench_workload *w)
{
	usage(stdout);
	printf("\nRun a benchmark of the log on PATH (default: a temporary file in the current\n"
	       "directory, removed at the end).  A benchmark reports numbers, next to fio's\n"
	       "where fio is installed; it is not a test.\n"
	       "\nworkloads:\n");
	for (size_t i = 0; i < bench_nr_workloads; i++) {
		const struct bench_workload *x = bench_workloads[i];

		/* A program of its own: its options are in its --help and man page. */
		if (x->program)
			printf("  %-10s %s [the program %s%s]\n", x->name, x->summary, x->program,
			       x->built ? "" : ", not built here");
		else
			printf("  %-10s %s\n", x->name, x->summary);
	}
	printf("\ncommon options:\n"
	       "  -w, --workload W   the benchmark to run%s\n"
	       "      --path PATH    file or block device to run on (or PATH as an argument);\n"
	       "                     a file that does not exist is created and removed at the\n"
	       "                     end; an existing non-empty file or a block device is\n"
	       "                     overwritten and needs --force\n"
	       "  -b, --backend B    I/O backend: uring, aio, psync (default: best available)\n"
	       "  -k, --keep         keep the file the bench created\n"
	       "  -f, --force        allow overwriting an existing file or a block device\n"
	       "  -j, --json         print one JSON document on stdout\n"
	       "      --peers        the same as --workload peers\n"
	       "      --compare-flush  the same as --workload compare-flush\n"
	       "  -h, --help         show this help (with --workload: its options too)\n",
	       bench_nr_workloads > 1 ? " (required)" : "");
	help_shorts(w);
	if (w) {
		printf("\n%s options:\n", w->name);
		w->help(stdout);
	}
	printf("\nExit status: 0 success, 1 failure, 2 usage error.\n");
}

int bench_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "delog bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	return TOOL_EXIT_USAGE;
}

void bench_progress(struct bench *b, const char *fmt, ...)
{
	uint64_t now;
	va_list ap;

	if (!b->prog_on)
		return;
	now = now_ns();
	if (now - b->prog_last < 100000000ull)
		return;
	b->prog_last = now;
	b->prog_shown = true;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

void bench_point(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->point, sizeof(b->point), fmt, ap);
	va_end(ap);
	b->point_t0 = now_ns();
	if (!b->prog_on)
		return;
	b->prog_last = 0; /* a new point is always drawn */
	bench_progress(b, "%s", b->point);
}

void bench_point_done(struct bench *b, int err)
{
	if (!b->point_t0)
		return;
	if (!b->prog_on && !err) {
		fprintf(stderr, "delog bench: %s: done, %.1f s\n", b->point,
			(double)(now_ns() - b->point_t0) / 1e9);
		fflush(stderr);
	}
	b->point_t0 = 0;
}

void bench_progress_clear(struct bench *b)
{
	if (!b->prog_shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	b->prog_shown = false;
	b->prog_last = 0;
}

void bench_out(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	if (b->o.json)
		return;
	bench_progress_clear(b);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

void bench_fail(struct bench *b, int err, const char *subject, const char *fmt, ...)
{
	char msg[sizeof(b->err_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	bench_progress_clear(b);
	if (subject)
		fprintf(stderr, "delog bench: %s: %s\n", subject, msg);
	else
		fprintf(stderr, "delog bench: %s\n", msg);
	if (!b->err_msg[0]) {
		b->err = err ? err : -EIO;
		size_t k = subject ? (size_t)snprintf(b->err_msg, sizeof(b->err_msg),
						      "%.*s: ", (int)sizeof(b->err_msg) / 2,
						      subject) :
				     0;

		memcpy(b->err_msg + k, msg, strnlen(msg, sizeof(b->err_msg) - k - 1));
		b->err_msg[k + strnlen(msg, sizeof(b->err_msg) - k - 1)] = '\0';
	}
}

bool bench_interrupted(const struct bench *b)
{
	sigset_t pend;

	if (sigpending(&pend))
		return false;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&b->stop_sigs, s) == 1 && sigismember(&pend, s) == 1)
			return true;
	return false;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(const double *v, size_t n)
{
	double *c = n ? malloc(n * sizeof(*c)) : NULL;
	size_t ok = 0;
	double m;

	if (!c)
		return NAN;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			c[ok++] = v[i];
	if (!ok) {
		free(c);
		return NAN;
	}
	qsort(c, ok, sizeof(*c), cmp_dbl);
	m = ok % 2 ? c[ok / 2] : (c[ok / 2 - 1] + c[ok / 2]) / 2;
	free(c);
	return m;
}

double bench_mbs(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / ((double)ns / 1e9) / 1e6 : NAN;
}

static void json_head(struct bench *b, struct json *j)
{
	json_str(j, "tool", "delog bench");
	json_str(j, "version", tool_version());
	json_str(j, "workload", b->o.workload);
	json_str(j, "path", b->t.path[0] ? b->t.path : NULL);
	json_str(j, "backend", b->o.backend ? b->o.backend : "auto");
	json_obj_begin(j, "target");
	json_str(j, "kind", !b->t.path[0] ? NULL : b->t.is_blockdev ? "blockdev" : "file");
	json_bool(j, "created", b->t.created);
	json_bool(j, "kept", b->t.created && b->o.keep);
	json_u64(j, "bytes", b->t.bytes);
	json_obj_end(j);
}

void bench_json_begin(struct bench *b, struct json *j)
{
	json_init(j, stdout, true);
	json_obj_begin(j, NULL);
	json_head(b, j);
}

void bench_json_end(struct bench *b, struct json *j)
{
	json_null(j, "error");
	json_dbl(j, "elapsed_s", (double)(now_ns() - b->t0) / 1e9);
	json_obj_end(j);
	json_finish(j);
	b->json_done = true;
}

/* ---- the target ---- */

void bench_dev_opts(const struct bench *b, struct iol_dev_opts *o, char *msg, size_t len)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->backend = b->o.backend;
	o->errmsg = msg;
	o->errmsg_len = len;
	if (len)
		msg[0] = '\0';
}

int bench_sim_open(struct bench *b, uint64_t bytes, int lat, struct iol_dev **dev)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = bytes,
				   .sector = 4096,
				   .seed = 1,
				   .latency = (enum iol_sim_latency)lat };
	struct iol_dev_opts dopts;
	char msg[512];
	int err;

	bench_dev_opts(b, &dopts, msg, sizeof(msg));
	dopts.sim = &so;
	err = iol_dev_open(NULL, &dopts, dev);
	if (err) {
		bench_fail(b, err, "sim", "%s", msg[0] ? msg : tool_strerror(err));
		return err;
	}
	iol_sim_trace_enable(*dev, false);
	return 0;
}

/* tmpfs and ramfs refuse O_DIRECT: say so before allocating anything there. */
static int check_fs(struct bench *b, const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct statfs sfs;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (statfs(dir, &sfs))
		return 0; /* creating the file will say what is wrong */
	if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC) {
		bench_fail(b, -EINVAL, path, "the filesystem (%s) does not support O_DIRECT",
			   sfs.f_type == TMPFS_MAGIC ? "tmpfs" : "ramfs");
		return -EINVAL;
	}
	return 0;
}

static int create_file(struct bench *b, const char *path, uint64_t bytes)
{
	char msg[512] = "";
	int err;

	err = check_fs(b, path);
	if (err)
		return err;
	err = iol_file_create(path, bytes, 0600, msg, sizeof(msg));
	if (err) {
		if (err != -EEXIST || b->o.path)
			bench_fail(b, err, msg[0] ? NULL : path, "%s",
				   msg[0] ? msg : tool_strerror(err));
		return err;
	}
	snprintf(b->t.path, sizeof(b->t.path), "%s", path);
	b->t.created = true;
	b->t.bytes = bytes;
	return 0;
}

int bench_target_open(struct bench *b, uint64_t bytes)
{
	struct bench_target *t = &b->t;
	char sz[32], sz2[32], why[128];
	struct stat st;
	int fd, err;

	if (!b->o.path) {
		char name[64];

		for (unsigned n = 0; n < 100; n++) {
			snprintf(name, sizeof(name), "delog-bench-%ld-%u.tmp", (long)getpid(), n);
			err = create_file(b, name, bytes);
			if (err != -EEXIST)
				return err;
		}
		bench_fail(b, -EEXIST, NULL,
			   "cannot find a free temporary file name like %s "
			   "in the current directory",
			   name);
		return -EEXIST;
	}
	if (lstat(b->o.path, &st) && errno == ENOENT)
		return create_file(b, b->o.path, bytes);
	snprintf(t->path, sizeof(t->path), "%s", b->o.path);
	/* Before any open: opening a FIFO blocks. */
	err = tool_path_check(t->path, &st, why, sizeof(why));
	if (err) {
		bench_fail(b, err, t->path, "%s", why);
		return err;
	}
	if (S_ISBLK(st.st_mode)) {
		t->is_blockdev = true;
		/* Too small is said first: --force would not help. */
		err = tool_blockdev_size(t->path, &t->bytes);
		if (err) {
			bench_fail(b, err, t->path, "cannot read its size: %s", strerror(-err));
			return err;
		}
		if (t->bytes < bytes) {
			bench_fail(b, -ENOSPC, t->path, "holds %s; the bench needs %s (see --size)",
				   fmt_bytes(t->bytes, sz, sizeof(sz)),
				   fmt_bytes_exact(bytes, sz2, sizeof(sz2)));
			return -ENOSPC;
		}
		if (!b->o.force) {
			bench_fail(b, -EPERM, t->path,
				   "is a block device; the bench overwrites its "
				   "first %s (add --force to allow that)",
				   fmt_bytes_exact(bytes, sz, sizeof(sz)));
			return -EPERM;
		}
		/* The hold keeps delog writers off too; the bench's own opens skip O_EXCL
		 * (iolayer/lock.c LK2). */
		t->hold_fd = iol_blk_claim(t->path);
		if (t->hold_fd < 0) {
			err = t->hold_fd;
			if (err == -EBUSY)
				bench_fail(b, err, t->path,
					   "is in use (mounted, or claimed by another "
					   "process); not overwriting it");
			else
				bench_fail(b, err, t->path, "cannot open it exclusively: %s",
					   strerror(-err));
			return err;
		}
		{
			struct iol_dev_opts o;
			struct iol_dev *dev;
			char msg[512];

			bench_dev_opts(b, &o, msg, sizeof(msg));
			err = iol_dev_open(t->path, &o, &dev);
			if (err) {
				bench_fail(b, err, msg[0] ? NULL : t->path, "%s",
					   msg[0] ? msg : tool_strerror(err));
				return err;
			}
			t->bytes = iol_dev_geom(dev)->size_bytes;
			iol_dev_close(dev);
		}
		return 0;
	}
	if (st.st_size > 0 && !b->o.force) {
		bench_fail(b, -EEXIST, t->path,
			   "exists and holds %s; the bench overwrites it (add "
			   "--force to allow that, or name a file that does not exist)",
			   fmt_bytes((uint64_t)st.st_size, sz, sizeof(sz)));
		return -EEXIST;
	}
	err = check_fs(b, t->path);
	if (err)
		return err;
	t->bytes = (uint64_t)st.st_size;
	if (t->bytes < bytes) {
		fd = open(t->path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			/* From here a failed run cuts it back (target_cleanup). */
			t->grown = true;
			t->orig_size = (uint64_t)st.st_size;
			t->orig_times[0] = st.st_atim;
			t->orig_times[1] = st.st_mtim;
		}
		if (fd < 0 || (err = posix_fallocate(fd, 0, (off_t)bytes))) {
			err = fd < 0 ? errno : err;
			bench_fail(b, -err, t->path, "cannot extend to %s: %s",
				   fmt_bytes(bytes, sz, sizeof(sz)), strerror(err));
			if (fd >= 0)
				close(fd);
			return -err;
		}
		close(fd);
		t->bytes = bytes;
	}
	return 0;
}

/*
 * The end of a run (@failed: it did not succeed): remove the file it created (unless
 * --keep); a file it grew back to the size it had when the run failed, and an empty one
 * also to its times, so that it is left exactly as found (a non-empty one was given with
 * --force, and what the run wrote over stays written).
 */
static void target_cleanup(struct bench *b, bool failed)
{
	struct bench_target *t = &b->t;

	if (t->created && !b->o.keep && unlink(t->path))
		fprintf(stderr, "delog bench: %s: cannot remove the bench file: %s\n", t->path,
			strerror(errno));
	if (failed && t->grown) {
		if (truncate(t->path, (off_t)t->orig_size) ||
		    (!t->orig_size && utimensat(AT_FDCWD, t->path, t->orig_times, 0)))
			fprintf(stderr,
				"delog bench: %s: cannot restore its size of %" PRIu64
				" bytes: %s\n",
				t->path, t->orig_size, strerror(errno));
		t->grown = false;
	}
	iol_blk_release(t->hold_fd);
	t->hold_fd = -1;
}

/* ---- command line ---- */

/* The common options without a short form (a workload's start at BENCH_OPT_WORKLOAD). */
enum {
	OPT_PATH = 256
};

/*
 * The short options every delog command gives the same meaning (-s the log size, -p the
 * flush policy, -t threads) stand for the workload's long option of that name
 * (--size, --policy, --threads) when it has one; a workload without it refuses the
 * letter, naming the long option.  Returns the option's val, or 0 after the error.
 */
static int short_for_workload(const struct bench_workload *w, int ch, const char **name)
{
	static const struct {
		char ch;
		const char *name;
	} map[] = {
		{ 's', "size" },
		{ 'p', "policy" },
		{ 't', "threads" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].ch != ch)
			continue;
		*name = map[i].name;
		for (const struct option *o = w ? w->opts : NULL; o && o->name; o++)
			if (!strcmp(o->name, map[i].name))
				return o->val;
		return 0;
	}
	*name = "?";
	return 0;
}

static const struct option common_opts[] = {
	{ "workload", required_argument, NULL, 'w' },
	{ "path", required_argument, NULL, OPT_PATH }, /* long only: -p is --policy */
	{ "backend", required_argument, NULL, 'b' },
	{ "keep", no_argument, NULL, 'k' },
	{ "force", no_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "peers", no_argument, NULL, 'P' },         /* = --workload peers (bench_peers.c) */
	{ "compare-flush", no_argument, NULL, 'C' }, /* = --workload compare-flush */
};

#define NR_COMMON (sizeof(common_opts) / sizeof(common_opts[0]))

/* The value of --workload / -w in argv, without getopt (see the top comment). */
static const char *scan_workload(int argc, char **argv)
{
	const char *w = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if ((!strcmp(a, "--workload") || !strcmp(a, "-w")) && i + 1 < argc)
			w = argv[++i];
		else if (!strncmp(a, "--workload=", 11))
			w = a + 11;
		else if (!strncmp(a, "-w", 2) && a[2])
			w = a + 2;
		else if (!strcmp(a, "--peers"))
			w = "peers";
		else if (!strcmp(a, "--compare-flush"))
			w = "compare-flush";
	}
	return w;
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(int argc, char **argv, struct bench *b, const struct bench_workload **wout,
		      void **state)
{
	struct option opts[MAX_OPTS];
	const struct bench_workload *w = NULL;
	const char *wname = scan_workload(argc, argv);
	bool want_help = false;
	size_t n = 0;
	int ch, rc;

	/* A program with one workload (delog-bench-peers) needs no --workload. */
	if (!wname && bench_nr_workloads == 1)
		wname = bench_workloads[0]->name;
	if (wname) {
		w = find_workload(wname);
		if (w && w->program)
			return run_program(w, argc, argv);
		if (!w) {
			fprintf(stderr, "delog bench: unknown workload '%s'; workloads:", wname);
			for (size_t i = 0; i < bench_nr_workloads; i++)
				fprintf(stderr, " %s", bench_workloads[i]->name);
			fputc('\n', stderr);
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
		*state = calloc(1, w->state_size ? w->state_size : 1);
		if (!*state) {
			fprintf(stderr, "delog bench: out of memory\n");
			return TOOL_EXIT_FAIL;
		}
		w->defaults(*state);
	}
	*wout = w;
	for (size_t i = 0; i < NR_COMMON; i++)
		opts[n++] = common_opts[i];
	for (const struct option *o = w ? w->opts : NULL; o && o->name && n + 1 < MAX_OPTS; o++)
		opts[n++] = *o;
	memset(&opts[n], 0, sizeof(opts[n]));

	b->o.backend = NULL; /* the best available, as every command */
	while ((ch = getopt_long(argc, argv, "w:b:kfjhs:p:t:", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
		case 'p':
		case 't': {
			const char *lname;
			int val = short_for_workload(w, ch, &lname);

			if (!w)
				return bench_usage_error(
					"-%c is a workload's --%s: give --workload first", ch,
					lname);
			if (!val)
				return bench_usage_error("-%c (--%s): %s takes no --%s", ch, lname,
							 w->name, lname);
			rc = w->option(*state, val, optarg);
			if (rc)
				return rc;
			break;
		}
		case 'w':
			if (!wname || strcmp(optarg, wname))
				return bench_usage_error(
					"--workload: spell it --workload W or -w W, "
					"once");
			b->o.workload = wname;
			break;
		case 'P':
			if (!wname || strcmp(wname, "peers"))
				return bench_usage_error(
					"--peers: give it or --workload, not both");
			b->o.workload = wname;
			break;
		case 'C':
			if (!wname || strcmp(wname, "compare-flush"))
				return bench_usage_error(
					"--compare-flush: give it or --workload, not "
					"both");
			b->o.workload = wname;
			break;
		case OPT_PATH:
			if (b->o.path)
				return bench_usage_error("takes one PATH");
			b->o.path = optarg;
			break;
		case 'b':
			if (!strcmp(optarg, "auto")) {
				b->o.backend = NULL;
				break;
			}
			/* sim: the in-memory disk, for workloads that support it (no PATH). */
			if (!iol_backend_built(optarg))
				return bench_usage_error("--backend: '%s' is not uring, aio, psync or sim "
							 "(built in: those listed by --help)",
							 optarg);
			b->o.backend = optarg;
			break;
		case 'k':
			b->o.keep = true;
			break;
		case 'f':
			b->o.force = true;
			break;
		case 'j':
			b->o.json = true;
			break;
		case 'h':
			want_help = true;
			break;
		default:
			if (w && ch >= BENCH_OPT_WORKLOAD) {
				rc = w->option(*state, ch, optarg);
				if (rc)
					return rc;
				break;
			}
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (want_help) {
		help(w);
		return TOOL_EXIT_OK;
	}
	if (!w) {
		char names[256] = "";
		size_t k = 0;

		for (size_t i = 0; i < bench_nr_workloads && k < sizeof(names); i++)
			k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", i ? ", " : "",
					      bench_workloads[i]->name);
		return bench_usage_error("no --workload given (one of: %s)", names);
	}
	b->o.workload = w->name;
	if (optind < argc) {
		if (b->o.path || optind + 1 < argc)
			return bench_usage_error("takes one PATH");
		b->o.path = argv[optind];
	}
	if (b->o.path && !*b->o.path)
		return bench_usage_error("PATH is empty");
	if (w->check) {
		rc = w->check(b, *state);
		if (rc)
			return rc;
	}
	return -1;
}

static void json_error_doc(struct bench *b)
{
	struct json j;

	bench_json_begin(b, &j);
	json_obj_begin(&j, "error");
	json_i64(&j, "code", b->err);
	json_str(&j, "name", tool_err_name(b->err));
	json_str(&j, "message", b->err_msg[0] ? b->err_msg : tool_strerror(b->err));
	json_obj_end(&j);
	json_dbl(&j, "elapsed_s", (double)(now_ns() - b->t0) / 1e9);
	json_obj_end(&j);
	json_finish(&j);
}

int cmd_bench(int argc, char **argv)
{
	static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	const struct bench_workload *w = NULL;
	void *state = NULL;
	struct bench b;
	sigset_t old;
	int rc;

	memset(&b, 0, sizeof(b));
	b.t.hold_fd = -1;
	b.t0 = now_ns();
	rc = parse_args(argc, argv, &b, &w, &state);
	if (rc >= 0) {
		free(state);
		return rc;
	}
	b.prog_on = isatty(STDERR_FILENO);

	/* Block the stop signals before any backend thread exists, so all inherit it. */
	sigemptyset(&b.stop_sigs);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++) {
		struct sigaction sa;

		/* An ignored signal (nohup, a background job) must not stop the bench. */
		if (sigaction(stop_sigs[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
			sigaddset(&b.stop_sigs, stop_sigs[i]);
	}
	pthread_sigmask(SIG_BLOCK, &b.stop_sigs, &old);

	rc = w->run(&b, state);
	bench_progress_clear(&b);
	if (bench_interrupted(&b) && rc == TOOL_EXIT_OK)
		rc = TOOL_EXIT_FAIL;
	if (bench_interrupted(&b) && !b.err_msg[0])
		bench_fail(&b, -EINTR, b.t.path[0] ? b.t.path : NULL, "interrupted");
	if (rc != TOOL_EXIT_OK && b.o.json && !b.json_done)
		json_error_doc(&b);
	target_cleanup(&b, rc != TOOL_EXIT_OK);
	free(state);
	/* A pending stop signal is delivered here, after the cleanup. */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
