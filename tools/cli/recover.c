/*
 * recover.c - `delog recover PATH [--json] [--dry-run]`: run crash recovery on a log and
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
 * --ids prints, instead of the report, the ids that `delog stress` wrote (tools/cli/ids.h)
 * found in the complete checkpoints recovery replays, one per line: checkpoints in log
 * order, a checkpoint's ids in the order recovery hands its items over (key hash order,
 * not commit order); the report goes to stderr.  tests/crash/kill_test.sh compares them with the ids stress
 * printed as acknowledged before it was killed.
 */
#include "tools.h"

#include "ids.h"

#include <delog.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: delog recover PATH [--json | --ids] [--dry-run] [--backend B]\n"
		   "                    [--read-chunk N] [--reads-in-flight N]\n");
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
	       "  -b, --backend B         I/O backend: uring, aio, psync (default: best available)\n"
	       "      --read-chunk N      bytes per chained read (default 4M)\n"
	       "      --reads-in-flight N chained reads kept in flight (2..16, default 2)\n"
	       "  -h, --help              show this help\n"
	       "\nCorruption (damage that a completed flush covered) is reported with its error\n"
	       "code and byte offset, never truncated.  Exit status: 0 recovered, 1 refused or\n"
	       "corrupt, 2 usage error.\n");
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

int cmd_recover(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "ids", no_argument, NULL, 'i' },
		{ "backend", required_argument, NULL, 'b' },
		{ "read-chunk", required_argument, NULL, 'c' },
		{ "reads-in-flight", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *backend = NULL;
	struct jrnl_recover_opts ro = { 0 };
	struct jrnl_report rep;
	struct tool_log l;
	struct json j;
	struct ids_ctx ids = { 0 };
	bool json = false, want_ids = false;
	uint64_t v;
	int ch, err;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "jnib:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = true;
			break;
		case 'n':
			ro.read_only = true;
			break;
		case 'i':
			want_ids = true;
			ro.replay = print_ids;
			ro.priv = &ids;
			break;
		case 'b':
			if (tool_parse_backend("recover", optarg, &backend))
				return TOOL_EXIT_USAGE;
			break;
		case 'c':
			if (tool_parse_size("recover", "--read-chunk", optarg, 1u << 20, 256u << 20,
					    0, NULL, &v))
				return TOOL_EXIT_USAGE;
			ro.read_chunk = (size_t)v;
			break;
		case 'r':
			if (parse_count(optarg, 2, 16, &v)) {
				fprintf(stderr, "delog recover: --reads-in-flight: '%s': need 2..16\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			ro.reads_in_flight = (unsigned)v;
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
	if (json && want_ids) {
		fprintf(stderr, "delog recover: --json and --ids both want stdout\n");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	if (json) {
		json_init(&j, stdout, true);
		json_obj_begin(&j, NULL);
		json_str(&j, "path", argv[optind]);
	}
	err = tool_log_open("recover", argv[optind], backend, ro.read_only, &l);
	if (err) {
		if (json) {
			json_null(&j, "superblock");
			json_null(&j, "report");
			tool_json_log_error(&j, &l);
			json_obj_end(&j);
			json_finish(&j);
		}
		return TOOL_EXIT_FAIL;
	}
	err = jrnl_recover(l.dev, &l.g, &ro, &rep);
	if (json) {
		tool_json_geom(&j, "superblock", &l.g);
		json_bool(&j, "dry_run", ro.read_only);
		tool_json_report(&j, "report", &rep);
		if (err)
			tool_json_recover_error(&j, err, &rep);
		else
			json_null(&j, "error");
		json_obj_end(&j);
		json_finish(&j);
	} else if (want_ids) {
		fflush(stdout);
		tool_print_geom(stderr, l.path, &l.g);
		tool_print_report(stderr, &l.g, &rep);
		fprintf(stderr, "ids: %llu printed, %llu other items\n",
			(unsigned long long)ids.ids, (unsigned long long)ids.other);
	} else {
		tool_print_geom(stdout, l.path, &l.g);
		tool_print_report(stdout, &l.g, &rep);
	}
	if (err)
		tool_recover_error("recover", l.path, err, &rep);
	tool_log_close(&l);
	return err ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}
