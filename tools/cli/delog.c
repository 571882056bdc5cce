/*
 * delog.c - the `delog` command: global options and dispatch to subcommands.
 *
 *   delog [--help | --version] COMMAND [ARGS...]
 *   delog help [COMMAND]
 *
 * Each subcommand lives in its own file (tools/<dir>/<name>.c) behind an entry point declared
 * in tools.h and parses its own options; this file only owns the table below.  Global
 * options are parsed with a leading '+' in the getopt string, so parsing stops at the
 * first non-option (the command) and the command's own options reach it untouched.
 * getopt signs its own messages with argv[0], so every getopt call sees the name the
 * messages should carry: "delog" here, "delog NAME" in a command (command_name), and
 * "delog bench" in delog-bench and delog-bench-peers (bench_main.c, peers_main.c), never
 * the path it was run by.  `delog bench` is the program delog-bench, run from beside
 * this one with the same arguments: the benchmark lab is not linked into `delog`.
 * Exit codes: 0 ok, 1 failure, 2 usage (docs/DESIGN.md section 6).
 */
#include "tools.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* `delog bench ARGS`: delog-bench ARGS (bench_main.c). */
static int cmd_bench_program(int argc, char **argv)
{
	return tool_run_beside("delog bench", "delog-bench", NULL, argc, argv);
}

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "format", cmd_format, "create a log on a file or block device" },
	{ "print", cmd_print, "print a log: superblock, head, tail, records, ops, checkpoints" },
	{ "recover", cmd_recover, "recover a log and print the recovery report" },
	{ "follow", cmd_follow, "print each checkpoint of a log as it becomes durable (tail -f)" },
	{ "probe", cmd_probe, "measure a device: flush and FUA latency, O_DIRECT bandwidth" },
	{ "bench", cmd_bench_program,
	  "benchmarks: recovery, commit, dbench, fsmark, compare-flush, stream, spacewait, "
	  "peers" },
	{ "crash", cmd_crash,
	  "power cuts at every device event on the sim disk, each state checked" },
	{ "stress", cmd_stress, "commit unique ids on a real backend, printing each once durable" },
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/*
 * "delog NAME", the argv[0] a command runs with, so that getopt's own messages ("delog
 * format: invalid option -- 'x'", "... option '--size' requires an argument") say which
 * command they are about, like the commands' own messages do.
 */
static char *command_name(const struct command *c)
{
	static char name[32];

	snprintf(name, sizeof(name), "delog %s", c->name);
	return name;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: delog [--help | --version] COMMAND [ARGS...]\n"
		   "       delog help COMMAND\n");
}

static void help(void)
{
	usage(stdout);
	printf("\ndelog is a durable write-ahead log on the XFS delayed-logging design.\n"
	       "\ncommands:\n");
	for (size_t i = 0; i < NR_COMMANDS; i++)
		printf("  %-10s %s\n", commands[i].name, commands[i].summary);
	printf("\noptions:\n"
	       "  -h, --help     show this help and exit\n"
	       "  -V, --version  show the version and exit\n"
	       "\n'delog help COMMAND' or 'delog COMMAND --help' describes a command.\n"
	       "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static int unknown_command(const char *name)
{
	fprintf(stderr, "delog: unknown command '%s'\n", name);
	fprintf(stderr, "commands:");
	for (size_t i = 0; i < NR_COMMANDS; i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "\n");
	usage(stderr);
	return TOOL_EXIT_USAGE;
}

/* `delog help [COMMAND]`: the overview, or the command's own --help. */
static int help_command(int argc, char **argv)
{
	const struct command *c;
	char *hargv[3];

	if (argc < 2) {
		help();
		return TOOL_EXIT_OK;
	}
	if (argc > 2) {
		fprintf(stderr, "delog help: takes one command name\n");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	c = find_command(argv[1]);
	if (!c)
		return unknown_command(argv[1]);
	hargv[0] = command_name(c);
	hargv[1] = (char *)"--help";
	hargv[2] = NULL;
	optind = 0;
	return c->run(2, hargv);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *c;
	int ch;

	/* getopt signs its messages with argv[0]: "delog", not the path it was run by. */
	argv[0] = (char *)"delog";
	while ((ch = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			help();
			return TOOL_EXIT_OK;
		case 'V':
			printf("delog %s\n", tool_version());
			return TOOL_EXIT_OK;
		default:
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "delog: no command given\n");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "help"))
		return help_command(argc, argv);
	c = find_command(argv[0]);
	if (!c)
		return unknown_command(argv[0]);
	optind = 0; /* reinitialise getopt for the command's own options */
	argv[0] = command_name(c);
	return c->run(argc, argv);
}
