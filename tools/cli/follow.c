/*
 * follow.c - `delog follow LOG [--from SEQ] [--json] [--count N] [--backend B]`: print
 * each checkpoint of a log as it becomes durable, the way `tail -f` prints a growing file.
 *
 * It is a delog_reader (<delog.h>, "Following a log"): the reader opens the log
 * read-only and takes no lock, so follow never writes the log and never holds up its
 * writer.  A checkpoint is printed once, in order, and only once the writer has it
 * durable (the writer says so through a page in /dev/shm; with no writer since the
 * machine started, the log as it lies counts as durable).  A writer that closes or is
 * killed ends nothing: follow waits for the next one.
 *
 * Output, one checkpoint at a time, flushed after each (a consumer in a pipeline sees
 * it at once):
 *   text    "checkpoint SEQ lsn CYCLE/SECTOR items N bytes B", then "  key K len L" per
 *           item;
 *   --json  one object per line, {"seq":S,"lsn":L,"items":[{"key":K,"len":L,"data":
 *           "HEX"}, ...]}, the data in lowercase hex.
 *
 * The end: --count N checkpoints, SIGINT or SIGTERM, or a closed standard output (a
 * pipe whose reader went away: EPIPE, SIGPIPE being ignored) exit 0.  Falling behind
 * (DELOG_EBEHIND: the log released the checkpoint wanted next), a writer that shut down
 * after an error (DELOG_ESHUTDOWN) and every other error exit 1 with
 * "delog follow: LOG: CODE: message: what" on stderr and, with --json, a last line
 * {"error": {code, name, message, offset, lsn, field, what}} on stdout, the member
 * print and recover write (tool_json_error).  Usage errors exit 2 and print no JSON.
 */
#include "tools.h"

#include <delog.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long one delog_reader_next waits: a stop signal or a closed pipe is noticed
 * within this, since the reader's wait goes on through an interrupted poll. */
#define FOLLOW_WAIT_MS 500

/* What the command line asked for. */
struct follow_args {
	const char *path, *backend;
	uint64_t from;  /* the first checkpoint wanted; 0: the oldest the log holds */
	uint64_t count; /* checkpoints to print, then exit 0; 0: until stopped */
	bool json;
};

/* How a write to standard output went. */
enum out_state {
	OUT_OK,
	OUT_CLOSED, /* the reader of the pipe went away: the end, exit 0 */
	OUT_FAILED, /* another write error: said on stderr, exit 1 */
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: delog follow LOG [--from SEQ] [--json] [--count N] [--backend B]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nPrint each checkpoint of LOG as it becomes durable, like `tail -f`: once, in\n"
	       "order, and only once the writer has it durable (a writer publishes that in\n"
	       "/dev/shm; with no writer since boot, the log as it lies).  LOG is only\n"
	       "read: follow takes no lock and never holds up the writer.\n"
	       "\noptions:\n"
	       "      --from SEQ      the first checkpoint wanted (default 0: the oldest the\n"
	       "                      log holds)\n"
	       "  -j, --json          one JSON object per checkpoint and line: seq, lsn,\n"
	       "                      items (key, len, data in hex)\n"
	       "  -c, --count N       exit after N checkpoints (default 0: until stopped)\n"
	       "  -b, --backend B     I/O backend: uring, aio, psync (default: best available)\n"
	       "  -h, --help          show this help\n"
	       "\nText: \"checkpoint SEQ lsn CYCLE/SECTOR items N bytes B\", then \"  key K len L\"\n"
	       "per item.  Exit status: 0 after --count, SIGINT, SIGTERM or a closed pipe; 1\n"
	       "when the log released a checkpoint before it was printed (start again with\n"
	       "--from 0), when the writer shut down after an error, or on any other error;\n"
	       "2 usage error.\n");
}

/* Parse @argv into @a: -1 to go on, else the exit status (help, usage errors). */
static int follow_parse(int argc, char **argv, struct follow_args *a)
{
	enum {
		O_FROM = 256
	};
	static const struct option lopts[] = {
		{ "from", required_argument, NULL, O_FROM },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'c' },
		{ "backend", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "jc:b:h", lopts, NULL)) != -1) {
		switch (ch) {
		case O_FROM:
			if (parse_count(optarg, 0, UINT64_MAX, &a->from)) {
				fprintf(stderr,
					"delog follow: --from: '%s': need a checkpoint sequence, 0 "
					"or more\n",
					optarg);
				usage(stderr);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'j':
			a->json = true;
			break;
		case 'c':
			if (parse_count(optarg, 0, UINT64_MAX, &a->count)) {
				fprintf(stderr,
					"delog follow: --count: '%s': need a number of "
					"checkpoints, 0 or more\n",
					optarg);
				usage(stderr);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'b':
			if (tool_parse_backend("follow", optarg, &a->backend))
				return TOOL_EXIT_USAGE;
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
		fprintf(stderr, "delog follow: %s\n",
			optind < argc ? "one LOG only" : "LOG is missing");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	a->path = argv[optind];
	return -1;
}

/*
 * SIGINT and SIGTERM set stop_signal, without SA_RESTART, and SIGPIPE is ignored: the
 * loop ends at its next turn, and a closed pipe shows as EPIPE on the write that meets
 * it, so each way out closes the reader and exits 0.  A stop signal that came ignored
 * (nohup, a background job of a script) stays ignored, as for bench and probe.
 */
static void follow_signals(void)
{
	static const int stop_sigs[] = { SIGINT, SIGTERM };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++) {
		struct sigaction old;

		if (sigaction(stop_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(stop_sigs[i], &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
}

/* With --json, an error as the "error" member of one line on stdout. */
static void follow_json_error(const struct follow_args *a, int err, const char *what)
{
	struct json j;

	if (!a->json)
		return;
	json_init(&j, stdout, false);
	json_obj_begin(&j, NULL);
	tool_json_error(&j, err, 0, 0, "", what);
	json_obj_end(&j);
	json_finish(&j);
}

/*
 * An error as "delog follow: LOG: CODE: message: what" on stderr, and in JSON.  @what
 * is delog_errmsg() or its like; a leading "LOG: " is dropped (the library's messages
 * name the path, and so does the line), and so is a @what that only repeats the code's
 * message.  @hint, when not NULL, ends the line: what to do about it.
 */
static void follow_error(const struct follow_args *a, int err, const char *what, const char *hint)
{
	size_t n = strlen(a->path);
	const char *msg = tool_strerror(err);

	if (!strncmp(what, a->path, n) && !strncmp(what + n, ": ", 2))
		what += n + 2;
	if (strcasestr(msg, what))
		what = "";
	fprintf(stderr, "delog follow: %s: %s%s%s%s%s\n", a->path, msg, *what ? ": " : "", what,
		hint ? "; " : "", hint ? hint : "");
	follow_json_error(a, err, what);
}

/* Did the last writes to stdout reach it?  errno was cleared before them. */
static enum out_state out_state(void)
{
	int err;

	if (fflush(stdout) == 0 && !ferror(stdout))
		return OUT_OK;
	err = errno ? errno : EIO;
	if (err == EPIPE)
		return OUT_CLOSED;
	fprintf(stderr, "delog follow: standard output: %s\n", tool_strerror(-err));
	return OUT_FAILED;
}

/*
 * Between checkpoints: is stdout still read?  A pipe whose reader went away polls
 * POLLERR (a terminal that hung up, POLLHUP); the first write would say EPIPE, but
 * with no checkpoint coming there is no write, and `delog follow LOG | head -1` must
 * still end.
 */
static enum out_state out_alive(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = 0 };

	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)))
		return OUT_CLOSED;
	return OUT_OK;
}

/* @len bytes of @data as lowercase hex, in pieces: an item may be as large as 1 GiB. */
static void put_hex(const unsigned char *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char buf[4096];
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		buf[n++] = digits[data[i] >> 4];
		buf[n++] = digits[data[i] & 15];
		if (n == sizeof(buf)) {
			fwrite(buf, 1, n, stdout);
			n = 0;
		}
	}
	fwrite(buf, 1, n, stdout);
}

/*
 * One checkpoint on stdout, then flushed.  The JSON line is written by hand rather
 * than through struct json: its members are numbers and hex, which need no escaping,
 * and the hex goes out in pieces instead of as one string of twice the item's size.
 */
static enum out_state follow_print(const struct follow_args *a, const struct delog_checkpoint *ck,
				   const struct delog_item *items)
{
	uint64_t bytes = 0;
	char lsn[32];

	errno = 0;
	if (a->json) {
		printf("{\"seq\":%" PRIu64 ",\"lsn\":%" PRIu64 ",\"items\":[", ck->seq, ck->lsn);
		for (size_t i = 0; i < ck->nitems; i++) {
			printf("%s{\"key\":%" PRIu64 ",\"len\":%" PRIu32 ",\"data\":\"",
			       i ? "," : "", items[i].key, items[i].len);
			put_hex(items[i].data, items[i].len);
			fputs("\"}", stdout);
		}
		fputs("]}\n", stdout);
		return out_state();
	}
	for (size_t i = 0; i < ck->nitems; i++)
		bytes += items[i].len;
	printf("checkpoint %" PRIu64 " lsn %s items %zu bytes %" PRIu64 "\n", ck->seq,
	       tool_lsn(ck->lsn, lsn, sizeof(lsn)), ck->nitems, bytes);
	for (size_t i = 0; i < ck->nitems; i++)
		printf("  key %" PRIu64 " len %" PRIu32 "\n", items[i].key, items[i].len);
	return out_state();
}

/* Open a reader of LOG: 0, or the exit status (the refusal said). */
static int follow_open(const struct follow_args *a, delog_reader **r)
{
	struct delog_error_info e = { .size = sizeof(e) };
	struct delog_reader_options o = {
		.size = sizeof(o),
		.from = a->from,
		.backend = a->backend,
		.error = &e,
	};
	struct stat st;
	char why[256];
	int err;

	/* Opening a FIFO would wait for its writer: refuse what cannot hold a log first,
	 * in the words every command uses for a PATH ("delog CMD: PATH: why"). */
	err = tool_path_check(a->path, &st, why, sizeof(why));
	if (err) {
		fprintf(stderr, "delog follow: %s: %s\n", a->path, why);
		follow_json_error(a, err, why);
		return TOOL_EXIT_FAIL;
	}
	err = delog_reader_open(a->path, &o, r);
	if (err) {
		follow_error(a, err, e.message, NULL);
		return TOOL_EXIT_FAIL;
	}
	return 0;
}

/* Follow LOG until --count, a stop signal, a closed stdout or an error. */
static int follow_run(const struct follow_args *a)
{
	const struct delog_item *items;
	struct delog_checkpoint ck;
	enum out_state out = OUT_OK;
	delog_reader *r;
	uint64_t printed = 0;
	int rc, err = 0;

	follow_signals();
	rc = follow_open(a, &r);
	if (rc)
		return rc;
	while (!stop_signal && out == OUT_OK && (!a->count || printed < a->count)) {
		err = delog_reader_next(r, FOLLOW_WAIT_MS, &ck, &items);
		if (err < 0)
			break;
		if (err == 0) {
			out = out_alive();
			continue;
		}
		out = follow_print(a, &ck, items);
		printed++;
		err = 0;
	}
	/* Behind: the checkpoints between are gone from the log, so only a new start from
	 * what it holds can go on. */
	if (err < 0)
		follow_error(a, err, delog_errmsg(),
			     err == DELOG_EBEHIND ?
				     "follow again from the oldest checkpoint it holds with --from 0" :
				     NULL);
	delog_reader_close(r);
	return err < 0 || out == OUT_FAILED ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

int cmd_follow(int argc, char **argv)
{
	struct follow_args a = { 0 };
	int rc = follow_parse(argc, argv, &a);

	if (rc >= 0)
		return rc;
	return follow_run(&a);
}
