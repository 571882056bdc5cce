/*
 * recover.c - `delog recover PATH [--json] [--dry-run] [--to N]`: run crash recovery on a log and
 * print its report (head, tail, checkpoints and bytes replayed, torn bytes discarded,
 * corruption found and where).
 *
 * This is the recovery delog_open runs, without an application to replay into: every
 * record between tail and head is verified, checkpoints are reassembled and counted, and
 * (unless --dry-run) the sectors past the head are stamped and flushed so that a second
 * crash recovers the same state.  Running it again reports the same head, tail and
 * checkpoints (recovery is idempotent).  Damage behind the torn-write window is never
 * truncated away: the command names the error code, the byte offset and what was found,
 * and exits 1, leaving the log untouched past the point it could verify.
 *
 * A log that cannot be opened for writing (a read-only file system, EROFS, or no write
 * permission, EACCES, as faccessat(2) says before anything is opened) is recovered as
 * DELOG_OPEN_RDONLY recovers it: read-only, counting what stamping would rewrite
 * (jrnl_recover_opts.count_stamp).  Nothing to stamp (a cleanly closed log, or a crash
 * that left nothing past the head): the report as usual, a note, exit 0.  Something to
 * stamp: the report, then the refusal naming the file system and --dry-run, exit 1.
 *
 * --to N is a point in time (jrnl_recover_opts.replay_to): the whole log is verified,
 * checkpoints up to N are replayed (counted, printed by --ids), the rest counted as held
 * back, and nothing is written (as --dry-run).  --salvage NEWLOG hands the parsed command
 * line to salvage.c: the way out of a damaged log, which never writes PATH.
 *
 * --ids prints, instead of the report, the ids that `delog stress` wrote (tools/cli/ids.h)
 * found in the complete checkpoints recovery replays, one per line: checkpoints in log
 * order, a checkpoint's ids in the order recovery hands its items over (the order they
 * were first logged: engine/cil.c CIL6); the report goes to stderr.
 * tests/crash/kill_test.sh compares them with the ids stress printed as acknowledged
 * before it was killed.
 */
#include "tools.h"

#include "ids.h"
#include "salvage.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: delog recover PATH [--json | --ids] [--dry-run] [--to N] [--backend B]\n"
		   "                    [--read-chunk N] [--reads-in-flight N]\n"
		   "       delog recover --salvage NEWLOG PATH [--to N] [--size N] [--force]\n"
		   "                    [--json] [--dry-run] [--backend B]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nRecover a delog log: find head and tail, verify every record, reassemble and\n"
	       "count complete checkpoints, drop a torn write at the head, and stamp the\n"
	       "sectors past the head so a second crash recovers the same state.\n"
	       "\noptions:\n"
	       "  -j, --json              print the report as one JSON document\n"
	       "  -n, --dry-run           verify and report only; write nothing\n"
	       "  -i, --ids               print the ids `delog stress` wrote that recovery\n"
	       "                          replays, one per line (the report goes to stderr)\n"
	       "      --to N              a point in time: verify the whole log, replay (count,\n"
	       "                          --ids) checkpoints up to N only; writes nothing\n"
	       "      --salvage NEWLOG    copy the checkpoints that verify, up to the first\n"
	       "                          damage (and --to N), into the new log NEWLOG; PATH\n"
	       "                          is only read.  Reports what was kept and dropped\n"
	       "  -s, --size N            with --salvage: NEWLOG's log size (default: PATH's,\n"
	       "                          more if what is kept needs it)\n"
	       "  -f, --force             with --salvage: replace an existing NEWLOG\n"
	       "  -b, --backend B         I/O backend: uring, aio, psync (default: best available)\n"
	       "      --read-chunk N      bytes per chained read (default 4M)\n"
	       "      --reads-in-flight N chained reads kept in flight (2..16, default 2)\n"
	       "  -h, --help              show this help\n"
	       "\nCorruption (damage that a completed flush covered) is reported with its error\n"
	       "code and byte offset, never truncated.  A log that cannot be written (a\n"
	       "read-only file system) is recovered read-only: exit 0 if recovery had nothing\n"
	       "to write, else 1 with a pointer to --dry-run.  --salvage is the way out of a\n"
	       "damaged log: it never writes PATH, keeps nothing after the damage, and with\n"
	       "--dry-run only says what it would keep.  Exit status: 0 recovered (or\n"
	       "salvaged: NEWLOG written), 1 refused or corrupt, 2 usage error.\n");
}

struct ids_ctx {
	uint64_t ids, other;
};

static int print_ids(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		     size_t n)
{
	struct ids_ctx *x = priv;
	struct ids_item it;

	(void)ck;
	for (size_t i = 0; i < n; i++) {
		if (ids_parse(v[i].key, v[i].data, v[i].len, &it)) {
			printf("%llu\n", (unsigned long long)it.id);
			x->ids++;
		} else {
			x->other++;
		}
	}
	return 0;
}

/* Can @path not be written (EROFS, EACCES)?  That errno, else 0 (a path that does not
 * exist, or is no file, is tool_log_open's to report). */
static int cannot_write(const char *path)
{
	if (!faccessat(AT_FDCWD, path, W_OK, AT_EACCESS))
		return 0;
	return errno == EROFS || errno == EACCES ? errno : 0;
}

/* Recovered read-only for want of write access (@werr): say what that means. */
static int read_only_verdict(const char *path, int werr, const struct jrnl_report *rep,
			     struct json *j)
{
	char what[256];

	if (!rep->stamp_needed) {
		fprintf(stderr,
			"delog recover: %s: %s: recovered without writing; it needed none (nothing "
			"to stamp past the head)\n",
			path, tool_strerror(-werr));
		if (j)
			json_null(j, "error");
		return TOOL_EXIT_OK;
	}
	snprintf(what, sizeof(what),
		 "recovery must stamp %" PRIu64 " bytes past the head and cannot write them "
		 "here; `delog recover --dry-run` verifies the log without writing",
		 rep->stamp_needed);
	fprintf(stderr, "delog recover: %s: %s: %s\n", path, tool_strerror(-werr), what);
	if (j) {
		json_obj_begin(j, "error");
		json_i64(j, "code", -werr);
		json_str(j, "name", tool_err_name(-werr));
		json_str(j, "message", tool_strerror(-werr));
		json_u64(j, "offset", 0);
		json_str(j, "field", "");
		json_str(j, "what", what);
		json_obj_end(j);
	}
	return TOOL_EXIT_FAIL;
}

/* --to N: what the point in time replayed and held back. */
static void print_to(FILE *f, uint64_t to, const struct jrnl_report *rep)
{
	if (!to || rep->corruption)
		return;
	if (rep->checkpoints)
		fprintf(f,
			"point in time %" PRIu64 ": checkpoints %" PRIu64 "..%" PRIu64
			" replayed, ",
			to, rep->first_seq, rep->last_seq);
	else
		fprintf(f, "point in time %" PRIu64 ": no checkpoint up to it in the log, ", to);
	fprintf(f, "%" PRIu64 " after it verified and held back; nothing written\n",
		rep->held_back);
}

/* What the command line asked for. */
struct recover_args {
	struct salvage_opts so;
	struct jrnl_recover_opts ro;
	struct ids_ctx ids;
	const char *backend, *path;
	bool json, want_ids;
};

/* Parse @argv into @a: -1 to go on, else the exit status (help, usage errors). */
static int recover_parse(int argc, char **argv, struct recover_args *a)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "ids", no_argument, NULL, 'i' },
		{ "backend", required_argument, NULL, 'b' },
		{ "read-chunk", required_argument, NULL, 'c' },
		{ "reads-in-flight", required_argument, NULL, 'r' },
		{ "to", required_argument, NULL, 'T' },
		{ "salvage", required_argument, NULL, 'S' },
		{ "size", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "jnib:s:fh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			a->json = true;
			break;
		case 'n':
			a->ro.read_only = true;
			break;
		case 'i':
			a->want_ids = true;
			a->ro.replay = print_ids;
			a->ro.priv = &a->ids;
			break;
		case 'b':
			if (tool_parse_backend("recover", optarg, &a->backend))
				return TOOL_EXIT_USAGE;
			break;
		case 'c':
			if (tool_parse_size("recover", "--read-chunk", optarg, 1u << 20, 256u << 20,
					    0, NULL, &v))
				return TOOL_EXIT_USAGE;
			a->ro.read_chunk = (size_t)v;
			break;
		case 'r':
			if (parse_count(optarg, 2, 16, &v)) {
				fprintf(stderr,
					"delog recover: --reads-in-flight: '%s': need 2..16\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			a->ro.reads_in_flight = (unsigned)v;
			break;
		case 'T':
			if (parse_count(optarg, 1, UINT64_MAX, &v)) {
				fprintf(stderr,
					"delog recover: --to: '%s': need a checkpoint "
					"sequence, 1 or more\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			a->ro.replay_to = v;
			break;
		case 'S':
			a->so.newpath = optarg;
			break;
		case 's':
			if (tool_parse_size("recover", "--size", optarg, DELOG_LOG_MIN_BYTES, 0,
					    4096, "the smallest log", &v))
				return TOOL_EXIT_USAGE;
			a->so.size = v;
			break;
		case 'f':
			a->so.force = true;
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
		fprintf(stderr, "delog recover: %s\n",
			optind < argc ? "one PATH only" : "PATH is missing");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	a->path = argv[optind];
	return -1;
}

/* The options that do not go together: 0, or TOOL_EXIT_USAGE (said why). */
static int recover_check(const struct recover_args *a)
{
	const char *why = NULL;

	if (a->json && a->want_ids)
		why = "--json and --ids both want stdout";
	else if (!a->so.newpath && (a->so.size || a->so.force))
		why = a->so.size ? "--size is an option of --salvage NEWLOG" :
				   "--force is an option of --salvage NEWLOG";
	else if (a->so.newpath && a->want_ids)
		why = "--ids and --salvage: print the ids of the new log with a second "
		      "`delog recover --ids NEWLOG`";
	else if (a->so.newpath && !*a->so.newpath)
		why = "--salvage: NEWLOG is empty";
	if (!why)
		return 0;
	fprintf(stderr, "delog recover: %s\n", why);
	usage(stderr);
	return TOOL_EXIT_USAGE;
}

/* --salvage NEWLOG: salvage.c, with the reading options of the command line. */
static int recover_salvage_run(struct recover_args *a)
{
	struct salvage_opts *so = &a->so;

	so->path = a->path;
	so->backend = a->backend;
	so->to = a->ro.replay_to;
	so->dry_run = a->ro.read_only;
	so->json = a->json;
	so->read_chunk = a->ro.read_chunk;
	so->reads_in_flight = a->ro.reads_in_flight;
	return recover_salvage(so);
}

/* The report of a recovery that ran (@err its result), as text or into @j. */
static void recover_report(const struct recover_args *a, const struct tool_log *l,
			   const struct jrnl_report *rep, int err, int werr, struct json *j)
{
	const struct jrnl_recover_opts *ro = &a->ro;

	if (a->json) {
		tool_json_geom(j, "superblock", &l->g);
		json_bool(j, "dry_run", ro->read_only && !werr);
		if (ro->replay_to)
			json_u64(j, "to", ro->replay_to);
		else
			json_null(j, "to");
		json_bool(j, "read_only", werr != 0);
		tool_json_report(j, "report", rep);
		if (err)
			tool_json_recover_error(j, err, rep);
		else if (!werr)
			json_null(j, "error");
	} else if (a->want_ids) {
		fflush(stdout);
		tool_print_geom(stderr, l->path, &l->g);
		tool_print_report(stderr, &l->g, rep);
		print_to(stderr, ro->replay_to, rep);
		fprintf(stderr, "ids: %llu printed, %llu other items\n",
			(unsigned long long)a->ids.ids, (unsigned long long)a->ids.other);
	} else {
		tool_print_geom(stdout, l->path, &l->g);
		tool_print_report(stdout, &l->g, rep);
		print_to(stdout, ro->replay_to, rep);
	}
}

/* Recover PATH (in place, or read-only) and report. */
static int recover_run(struct recover_args *a)
{
	struct jrnl_recover_opts *ro = &a->ro;
	struct jrnl_report rep;
	struct tool_log l;
	struct json j;
	int err, werr = 0, rc;

	/* A point in time is an inspection: nothing written, as --dry-run. */
	if (ro->replay_to)
		ro->read_only = true;
	if (!ro->read_only && (werr = cannot_write(a->path))) {
		ro->read_only = true;
		ro->count_stamp = true;
	}
	if (a->json) {
		json_init(&j, stdout, true);
		json_obj_begin(&j, NULL);
		json_str(&j, "path", a->path);
	}
	err = tool_log_open("recover", a->path, a->backend, ro->read_only, &l);
	if ((err == -EROFS || err == -EACCES) && !ro->read_only)
		fprintf(stderr,
			"delog recover: %s cannot be opened for writing: `delog recover --dry-run` "
			"verifies it without writing\n",
			a->path);
	if (err) {
		if (a->json) {
			json_null(&j, "superblock");
			json_null(&j, "report");
			tool_json_log_error(&j, &l);
			json_obj_end(&j);
			json_finish(&j);
		}
		return TOOL_EXIT_FAIL;
	}
	err = jrnl_recover(l.dev, &l.g, ro, &rep);
	recover_report(a, &l, &rep, err, werr, &j);
	rc = err ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
	if (err)
		tool_recover_error("recover", l.path, err, &rep);
	else if (werr)
		rc = read_only_verdict(l.path, werr, &rep, a->json ? &j : NULL);
	if (a->json) {
		json_obj_end(&j);
		json_finish(&j);
	}
	tool_log_close(&l);
	return rc;
}

int cmd_recover(int argc, char **argv)
{
	struct recover_args a = { 0 };
	int rc = recover_parse(argc, argv, &a);

	if (rc >= 0)
		return rc;
	if ((rc = recover_check(&a)))
		return rc;
	return a.so.newpath ? recover_salvage_run(&a) : recover_run(&a);
}
