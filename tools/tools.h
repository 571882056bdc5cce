/*
 * tools.h - what the `delog` subcommands share: their entry points and exit codes, and,
 * from common/ below every wing, the small helpers (common/util.h: size and count parsing,
 * a one-document JSON writer, latency statistics, clocks, error strings), opening a log
 * (common/logdev.h) and fio (common/fio.h).  common/costs.h (a device's costs and the
 * policy recommended from them: probe, bench --compare-flush) is included where used.
 *
 * Conventions every subcommand follows (docs/DESIGN.md section 6):
 *   - int cmd_<name>(int argc, char **argv): argv[0] is the subcommand's name; options
 *     are parsed with getopt_long after resetting optind to 0.
 *   - Exit codes: TOOL_EXIT_OK (0) success, TOOL_EXIT_FAIL (1) the operation failed,
 *     TOOL_EXIT_USAGE (2) the command line was wrong.  `--help` prints to stdout and
 *     returns 0; a usage error prints a short usage to stderr and returns 2.
 *   - Errors are "delog <cmd>: <subject>: <reason>" on stderr.  With --json, stdout
 *     carries exactly one JSON document and nothing else, a refusal's or failure's too
 *     (its "error" member); a usage error (exit 2) is the one exception: it prints no
 *     JSON (delog(1), DIAGNOSTICS).  getopt's own messages carry the same prefix, by
 *     one mechanism: argv[0] is what they are signed with, so delog.c runs a command
 *     with argv[0] = "delog <cmd>" (and parses its global options as "delog"), and
 *     delog-bench-peers runs as "delog bench".
 *   - One name and one meaning per option in every command: -s/--size the log size
 *     (probe: its region), -p/--policy the flush policy, -b/--backend the I/O backend
 *     (default: the best available; tool_parse_backend), -n only --dry-run, and
 *     -t/--threads, -j/--json, -h/--help, -f/--force, -i/--ids, -m/--mode, -c/--count.
 *     Sizes go through tool_parse_size, so they are read and refused alike.
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
int cmd_format(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_follow(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_crash(int argc, char **argv);
int cmd_stress(int argc, char **argv);

/* ---- what every tool shares (common/): helpers, opening a log, fio ---- */

#include "common/util.h"
#include "common/logdev.h"
#include "common/fio.h"

#endif
