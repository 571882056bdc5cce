/*
 * salvage.h - `delog recover --salvage NEWLOG PATH` (salvage.c), which recover.c hands
 * its parsed command line to.
 */
#ifndef DELOG_TOOLS_CLI_SALVAGE_H
#define DELOG_TOOLS_CLI_SALVAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct salvage_opts {
	const char *path;         /* the damaged log: only ever read */
	const char *newpath;      /* the new log to write */
	const char *backend;      /* NULL: the best available */
	uint64_t to;              /* --to: the last checkpoint to keep (0: every one) */
	uint64_t size;            /* --size: NEWLOG's log size (0: the source's, or more) */
	bool force;               /* --force: replace an existing NEWLOG */
	bool dry_run;             /* --dry-run: say what would be kept, write nothing */
	bool json;                /* --json */
	size_t read_chunk;        /* --read-chunk (0: default) */
	unsigned reads_in_flight; /* --reads-in-flight (0: default) */
};

/* Run the salvage; returns the exit status (TOOL_EXIT_OK or TOOL_EXIT_FAIL). */
int recover_salvage(const struct salvage_opts *o);

#endif
