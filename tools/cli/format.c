/*
 * format.c - `delog format PATH --size N [--sector 512|4096] [--window W] [--force]
 * [--mode M]`: make a new log on a file or a block device.
 *
 * What it guarantees, and why:
 *  - Nothing is destroyed by accident.  An existing delog log (any superblock whose
 *    magic matches, even one this build cannot read) and anything else that holds data
 *    (a non-zero byte in its first FORMAT_PROBE_BYTES, or a regular file of non-zero size
 *    that is not all zeroes there) is refused without --force, naming what was found.
 *  - A new file is created O_EXCL | O_NOFOLLOW with mode 0600 (owner only; --mode
 *    changes it, the umask still applies), so a symlink planted at PATH is refused rather
 *    than followed, and a log is never world-readable by default.  An existing symlink
 *    is accepted only when it resolves to a block device (/dev/disk/by-id/... names).
 *  - A new file is made under a temporary name beside PATH and renamed to PATH once
 *    formatted and durable (iol_file_publish), never over a file that appeared
 *    meanwhile: a kill leaves no PATH or a whole log, never a file that looks like a
 *    failed log.
 *  - A log a writer holds open (its writer lock, iolayer/lock.c) is refused, --force or
 *    not, naming the writer's pid, before anything is grown or written.
 *  - The file's blocks are allocated (fallocate) and then the whole log area is written
 *    with zeroes through O_DIRECT by jrnl_format, so later log writes never meet
 *    unwritten extents (each would cost the filesystem a metadata transaction, and a
 *    flush of ours would then also commit the filesystem journal).  Only then is the
 *    superblock written (FUA) and made stable: a crash during format leaves no
 *    superblock, i.e. no log, never a log with stale records.
 *  - --size is the size of the log area; the superblock area (4 KiB) comes in front of
 *    it, so a new file is --size + 4 KiB.  Without --size an existing file or device is
 *    used whole.  A file this command created is removed again if formatting fails.
 *  - --window sets the log's unflushed bound (docs/FORMAT.md), checked against the log's
 *    size before anything is written; without it jrnl_format's default applies.
 *  - A sector smaller than the device's physical block is refused, --force or not
 *    (jrnl_sector_check): the device writes whole physical blocks, and one torn inside
 *    could garble the log's sectors written before the record in flight.
 *  - With --json every refusal and failure (exit 1) is a JSON document too, the new
 *    log's with "superblock": null and the "error" print and recover give (fail() keeps
 *    the first one); a usage error (exit 2) prints no JSON, as in every command
 *    (delog(1)).
 */
#include "tools.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FORMAT_PROBE_BYTES (64u * 1024u) /* bytes inspected for existing data */
#define MIN_LOG DELOG_LOG_MIN_BYTES

static void usage(FILE *f)
{
	fprintf(f,
		"usage: delog format PATH [--size N] [--sector 512|4096] [--window W] [--force]\n"
		"                   [--mode OCTAL] [--backend B] [--json]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nCreate a delog log on PATH, a file (created if missing) or a block device.\n"
	       "\noptions:\n"
	       "  -s, --size N       log area size (K, M, G suffixes; at least %llu MiB, a\n"
	       "                     multiple of the sector); the file is N + 4 KiB\n"
	       "                     (superblock).  Required for a new or empty file;\n"
	       "                     default for an existing one: all of it\n"
	       "      --sector S     log sector size, 512 or 4096 (default 4096); not below\n"
	       "                     the device's physical block\n"
	       "      --window W     the unflushed bound: how far past the durable point\n"
	       "                     the writer may go before it waits for a flush, and what\n"
	       "                     recovery reads and rewrites around the head (%llu KiB to\n"
	       "                     half the log, a multiple of the sector; default: a 64th\n"
	       "                     of the log, from 2 MiB to 64 MiB)\n"
	       "  -f, --force        overwrite an existing log or a device that holds data\n"
	       "  -m, --mode OCTAL   permissions of a new file (default 0600, less the umask)\n"
	       "  -b, --backend B    I/O backend: uring, aio, psync (default: best available)\n"
	       "  -j, --json         print the new geometry, or why there is none, as JSON\n"
	       "  -h, --help         show this help\n"
	       "\nThe whole log area is written with zeroes before the superblock, so\n"
	       "formatting takes as long as writing N bytes (progress is shown on stderr\n"
	       "when it is a terminal).  A refused format leaves PATH as it found it; a\n"
	       "failed one removes a file it created and cuts a file it grew back to its\n"
	       "size.  Exit status: 0 formatted, 1 refused or failed, 2 usage error.\n",
	       (unsigned long long)(MIN_LOG >> 20), (unsigned long long)(JRNL_WINDOW_MIN >> 10));
}

/* Does @dev hold anything: a delog superblock (described in @what) or non-zero bytes? */
static int holds_data(struct iol_dev *dev, char *what, size_t len)
{
	uint64_t size = iol_dev_geom(dev)->size_bytes;
	size_t n = size < FORMAT_PROBE_BYTES ? (size_t)size : FORMAT_PROBE_BYTES;
	struct jrnl_geom g;
	unsigned char *buf;
	char uuid[37];
	int err;

	if (!size)
		return 0;
	err = jrnl_sb_read(dev, &g);
	if (!err) {
		snprintf(what, len, "it holds a delog log (uuid %s, %" PRIu64 " bytes)",
			 tool_uuid(g.uuid, uuid), g.log_size);
		return 1;
	}
	if (err != DELOG_ENOTLOG && size >= DELOG_SB_BYTES &&
	    (err == DELOG_ETRUNCATED || err == DELOG_ECHECKSUM || err == DELOG_EVERSION ||
	     err == DELOG_EFEATURE || err == DELOG_ECORRUPT)) {
		/* The magic matched: a delog log, even if this build cannot use it. */
		snprintf(what, len, "it holds a delog superblock this build refuses (%s)",
			 tool_err_name(err));
		return 1;
	}
	n -= n % iol_dev_geom(dev)->dio_off_align;
	if (!n)
		return 0;
	buf = iol_buf_alloc(dev, n);
	if (!buf)
		return -ENOMEM;
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, n, NULL);
	if (!err) {
		for (size_t i = 0; i < n; i++) {
			if (buf[i]) {
				snprintf(what, len, "it holds data (non-zero byte at offset %zu)",
					 i);
				err = 1;
				break;
			}
		}
	}
	free(buf);
	return err;
}

static int parse_mode(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || end == s || *end || v > 07777)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* Progress of the zero-fill on stderr, when it is a terminal (jrnl_format_opts.progress). */
struct fmt_progress {
	bool shown;
	uint64_t last_ns;
};

static void fmt_progress(void *arg, uint64_t done, uint64_t total)
{
	struct fmt_progress *p = arg;
	uint64_t now = now_ns();
	char a[32], b[32];

	if (done < total && now - p->last_ns < 200000000ull)
		return;
	p->last_ns = now;
	p->shown = true;
	fprintf(stderr, "\r\033[Kdelog format: zeroing the log: %s of %s (%u%%)",
		fmt_bytes(done, a, sizeof(a)), fmt_bytes(total, b, sizeof(b)),
		(unsigned)(total ? done * 100 / total : 100));
	fflush(stderr);
}

/* Put a regular file we grew back to the size and times it had. */
static void undo_grow(const char *path, const struct stat *orig)
{
	struct timespec ts[2] = { orig->st_atim, orig->st_mtim };

	if (truncate(path, orig->st_size) || utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW))
		fprintf(stderr, "delog format: %s: cannot restore its size of %lld bytes: %s\n",
			path, (long long)orig->st_size, strerror(errno));
}

/* One run of `delog format`: the command line, and what was done to PATH so a failure
 * can undo it. */
struct fmt {
	const char *path, *backend;
	uint64_t size, sector; /* --size (0: not given), --sector */
	uint64_t window;       /* --window (0: not given) */
	unsigned mode;
	bool force, json;
	bool created, grown; /* PATH was created (as @tmp), or grown from @orig */
	struct stat orig;
	char tmp[PATH_MAX]; /* a new file's temporary name until it is a log */
	int err;            /* the first refusal or failure, for --json ... */
	char err_what[512]; /* ... and what it said */
};

/*
 * A refusal or failure: "delog format: PATH: <what>" on stderr (@named: the text names
 * the path itself, as the iolayer's messages do), kept with @err for the --json
 * document (the first one only; a later message, e.g. from the undo, only adds to stderr).
 */
static void fail(struct fmt *f, int err, bool named, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail(struct fmt *f, int err, bool named, const char *fmt, ...)
{
	char what[sizeof(f->err_what)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (named)
		fprintf(stderr, "delog format: %s\n", what);
	else
		fprintf(stderr, "delog format: %s: %s\n", f->path, what);
	if (!f->err) {
		f->err = err ? err : -EIO;
		snprintf(f->err_what, sizeof(f->err_what), "%s", what);
	}
}

/* The options and PATH into @f: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct fmt *f)
{
	static const struct option lopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "sector", required_argument, NULL, 'S' },
		{ "window", required_argument, NULL, 'W' },
		{ "force", no_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "backend", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *size_arg = NULL, *window_arg = NULL;
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "s:fm:b:jh", lopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			size_arg = optarg; /* checked below, against --sector */
			break;
		case 'S':
			if (parse_count(optarg, 512, 4096, &f->sector) ||
			    (f->sector != 512 && f->sector != 4096)) {
				fprintf(stderr,
					"delog format: --sector: '%s': must be 512 or 4096\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'W':
			window_arg = optarg; /* checked below, against --sector */
			break;
		case 'f':
			f->force = true;
			break;
		case 'm':
			if (parse_mode(optarg, &f->mode)) {
				fprintf(stderr, "delog format: --mode: '%s' is not an octal mode\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'b':
			if (tool_parse_backend("format", optarg, &f->backend))
				return TOOL_EXIT_USAGE;
			break;
		case 'j':
			f->json = true;
			break;
		case 'h':
			help();
			return TOOL_EXIT_OK;
		default:
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "delog format: %s\n",
			optind < argc ? "one PATH only" : "PATH is missing");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	f->path = argv[optind];
	if (size_arg && tool_parse_size("format", "--size", size_arg, MIN_LOG, 0, f->sector,
					"the smallest log", &f->size))
		return TOOL_EXIT_USAGE;
	if (window_arg && tool_parse_size("format", "--window", window_arg, JRNL_WINDOW_MIN, 0,
					  f->sector, "the least window", &f->window))
		return TOOL_EXIT_USAGE;
	return -1;
}

/*
 * Everything that can be refused from what stat(2) tells is refused here, before
 * anything creates, grows or opens PATH; then a missing file is created and a file too
 * small for --size grown (f->created, f->grown).  -1 to go on, else the exit status.
 */
static int prepare_path(struct fmt *f)
{
	const char *path = f->path;
	uint64_t size = f->size;
	char msg[512] = "", what[256] = "", sz[32];
	struct stat st;
	int err;

	if (lstat(path, &st)) {
		if (errno != ENOENT) {
			fail(f, -errno, false, "%s", strerror(errno));
			return TOOL_EXIT_FAIL;
		}
		if (!size) {
			fprintf(stderr,
				"delog format: %s: does not exist; --size is needed to create it\n",
				path);
			return TOOL_EXIT_USAGE;
		}
		err = iol_file_create_tmp(path, DELOG_SB_BYTES + size, f->mode, f->tmp,
					  sizeof(f->tmp), msg, sizeof(msg));
		if (err) {
			iol_errmsg_rename(msg, sizeof(msg), f->tmp, path);
			fail(f, err, *msg, "%s", *msg ? msg : strerror(-err));
			return TOOL_EXIT_FAIL;
		}
		f->created = true;
	} else if (S_ISLNK(st.st_mode)) {
		if (stat(path, &st) && errno == ENOENT) {
			fail(f, -ENOENT, false,
			     "is a dangling symbolic link (its target does not "
			     "exist); format creates a file only where no link is: give that path");
			return TOOL_EXIT_FAIL;
		}
		if (stat(path, &st)) {
			fail(f, -errno, false, "is a symbolic link whose target cannot be used: %s",
			     strerror(errno));
			return TOOL_EXIT_FAIL;
		}
		if (!S_ISBLK(st.st_mode)) {
			fail(f, -EINVAL, false,
			     "is a symbolic link not to a block device; give the "
			     "target's path");
			return TOOL_EXIT_FAIL;
		}
	} else if ((err = tool_path_check(path, &st, what, sizeof(what)))) {
		/* A FIFO, socket, directory or character device: refused before any open
		 * (opening a FIFO blocks). */
		fail(f, err, false, "%s", what);
		return TOOL_EXIT_FAIL;
	} else if (S_ISREG(st.st_mode) && !size && !st.st_size) {
		/* Without --size a file is used whole, and an empty one has nothing to use. */
		fprintf(stderr,
			"delog format: %s: the file is empty; --size is needed to say how "
			"large a log to make in it\n",
			path);
		usage(stderr);
		return TOOL_EXIT_USAGE;
	} else if (S_ISREG(st.st_mode) && !size &&
		   (uint64_t)st.st_size < DELOG_SB_BYTES + MIN_LOG) {
		fail(f, -ENOSPC, false,
		     "the file is %s, too small for the smallest log (%llu MiB + "
		     "the 4 KiB superblock); --size N --force grows it",
		     fmt_bytes((uint64_t)st.st_size, sz, sizeof(sz)),
		     (unsigned long long)(MIN_LOG >> 20));
		return TOOL_EXIT_FAIL;
	} else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < DELOG_SB_BYTES + size) {
		/* An existing file too small for --size (e.g. empty, from mktemp): grow it,
		 * unless a writer holds it (format_dev would refuse it after the growing). */
		int fd;

		if ((err = iol_path_writer_check(path, msg, sizeof(msg)))) {
			fail(f, err, true, "%s", msg);
			return TOOL_EXIT_FAIL;
		}

		if (st.st_size && !f->force) {
			fail(f, -EEXIST, false,
			     "is %lld bytes, smaller than --size needs (%" PRIu64
			     "); use --force to grow it",
			     (long long)st.st_size, DELOG_SB_BYTES + size);
			return TOOL_EXIT_FAIL;
		}
		f->orig = st;
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		err = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)(DELOG_SB_BYTES + size));
		if (fd >= 0)
			close(fd);
		if (fd >= 0)
			f->grown = true;
		if (err) {
			fail(f, -err, false, "cannot allocate %" PRIu64 " bytes: %s",
			     DELOG_SB_BYTES + size, strerror(err));
			return TOOL_EXIT_FAIL;
		}
	}
	return -1;
}

/* Open PATH, refuse a device that is too small, holds data (without --force) or is too
 * coarse for the log, and write the log (@g).  0, or a negative error after saying why;
 * the device is closed either way. */
static int format_dev(struct fmt *f, struct jrnl_geom *g)
{
	const char *path = f->path;
	uint64_t size = f->size, sector = f->sector;
	char msg[512] = "", what[256] = "";
	struct iol_dev_opts o = { .size = sizeof(o), .errmsg = msg, .errmsg_len = sizeof(msg) };
	struct fmt_progress prog = { 0 };
	struct jrnl_format_opts fo = { 0 };
	struct iol_dev *dev = NULL;
	int err;

	o.backend = f->backend;
	err = iol_dev_open(f->created ? f->tmp : path, &o, &dev);
	if (err) {
		if (f->created)
			iol_errmsg_rename(msg, sizeof(msg), f->tmp, path);
		fail(f, err, *msg, "%s", *msg ? msg : tool_strerror(err));
		return err;
	}
	/* Too small is said first: --force would not help. */
	if (iol_dev_geom(dev)->size_bytes < DELOG_SB_BYTES + MIN_LOG ||
	    size > iol_dev_geom(dev)->size_bytes - DELOG_SB_BYTES) {
		fail(f, -ENOSPC, false,
		     "%" PRIu64 " bytes: too small for a %s log (need %" PRIu64 " bytes)",
		     iol_dev_geom(dev)->size_bytes, size ? "--size" : "minimal",
		     (uint64_t)DELOG_SB_BYTES + (size ? size : (uint64_t)MIN_LOG));
		err = -ENOSPC;
		goto fail;
	}
	/* Nor would it for a sector below the physical block (jrnl_sector_check). */
	err = jrnl_sector_check(dev, (uint32_t)sector, what, sizeof(what));
	if (err) {
		fail(f, err, false, "--sector %" PRIu64 ": %s", sector, what);
		goto fail;
	}
	if (!f->created && !f->grown && !f->force) {
		err = holds_data(dev, what, sizeof(what));
		if (err > 0)
			fail(f, err = -EEXIST, false, "%s; use --force to overwrite it", what);
		else if (err)
			fail(f, err, false, "%s", tool_strerror(err));
		if (err)
			goto fail;
	}
	if (sector < iol_dev_geom(dev)->dio_off_align) {
		fail(f, -EINVAL, false,
		     "--sector %" PRIu64 " is below the device's %u-byte "
		     "O_DIRECT alignment; use --sector 4096",
		     sector, iol_dev_geom(dev)->dio_off_align);
		err = -EINVAL;
		goto fail;
	}
	fo.sector = (uint32_t)sector;
	fo.log_size = size ? size :
			     (iol_dev_geom(dev)->size_bytes - DELOG_SB_BYTES) / sector * sector;
	fo.window = f->window;
	if (fo.window > fo.log_size / 2) {
		fail(f, -EINVAL, false,
		     "--window %" PRIu64 ": more than half the %" PRIu64 "-byte log", fo.window,
		     fo.log_size);
		err = -EINVAL;
		goto fail;
	}
	if (isatty(STDERR_FILENO)) {
		fo.progress = fmt_progress;
		fo.progress_arg = &prog;
	}
	err = jrnl_format(dev, &fo, g);
	if (prog.shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	if (err) {
		fail(f, err, false, "%s", tool_strerror(err));
		goto fail;
	}
	/* A new file becomes PATH only now, formatted and durable (never over a file that
	 * appeared meanwhile). */
	if (f->created &&
	    (err = iol_file_publish(f->tmp, path, iol_dev_fd(dev), msg, sizeof(msg)))) {
		iol_errmsg_rename(msg, sizeof(msg), f->tmp, path);
		fail(f, err, true, "%s", msg);
		goto fail;
	}
	err = iol_dev_close(dev);
	if (err)
		fail(f, err, false, "close: %s", strerror(-err));
	return err;
fail:
	iol_dev_close(dev);
	return err;
}

/*
 * The answer: the new log's geometry (@g), as text or JSON; or, with --json, the refusal
 * or failure (@g NULL) as the same document with "superblock": null and its "error"
 * (print's and recover's shape: code, name, message, offset, what), after the message
 * on stderr.
 */
static void report(const struct fmt *f, const struct jrnl_geom *g)
{
	struct json j;

	if (!f->json) {
		if (g)
			tool_print_geom(stdout, f->path, g);
		return;
	}
	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	json_str(&j, "path", f->path);
	json_bool(&j, "created", g && f->created);
	if (g) {
		tool_json_geom(&j, "superblock", g);
		json_null(&j, "error");
	} else {
		json_null(&j, "superblock");
		tool_json_error(&j, f->err, 0, 0, "", f->err_what);
	}
	json_obj_end(&j);
	json_finish(&j);
}

/* A refused or failed format: remove the file it created, or cut a file it grew back;
 * then the answer. */
static int undo(const struct fmt *f)
{
	if (f->created)
		unlink(f->tmp);
	else if (f->grown)
		undo_grow(f->path, &f->orig);
	report(f, NULL);
	return TOOL_EXIT_FAIL;
}

int cmd_format(int argc, char **argv)
{
	struct fmt f = { .sector = 4096, .mode = 0600 };
	struct jrnl_geom g;
	int rc;

	rc = parse_args(argc, argv, &f);
	if (rc >= 0)
		return rc;
	rc = prepare_path(&f);
	if (rc == TOOL_EXIT_FAIL)
		return undo(&f);
	if (rc >= 0)
		return rc;
	if (format_dev(&f, &g))
		return undo(&f);
	report(&f, &g);
	return TOOL_EXIT_OK;
}
