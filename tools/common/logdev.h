/*
 * logdev.h - opening a log and reporting what is wrong with one (logdev.c): what
 * `delog format`, `print` and `recover` share, and the error names every tool prints.
 */
#ifndef DELOG_TOOLS_COMMON_LOGDEV_H
#define DELOG_TOOLS_COMMON_LOGDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jrnl.h"

struct json;

struct tool_log {
	const char *path;
	struct iol_dev *dev;
	struct jrnl_geom g;
	int err;               /* tool_log_open's failure: the code ... */
	uint64_t err_off;      /* ... the byte offset ... */
	const char *err_field; /* ... the superblock field ("sb.version"; "" if none) ... */
	char err_what[256];    /* ... and what was found there */
};

/*
 * Open @path on @backend (NULL: the best available) and read its superblock.  On
 * failure prints "delog <cmd>: <path>: <code>: <message>, at offset N: <what>" on
 * stderr, keeps the code, offset and text in @out for --json, and returns the negative
 * error (a DELOG_E* code or -errno); @out->dev is then NULL.  A @path that is not a
 * regular file or block device (tool_path_check) is refused before anything opens it,
 * and a writing open (!@read_only) of a log whose sectors are smaller than the device's
 * physical block (jrnl_sector_check: DELOG_EGEOMETRY at sb.sector_size) once the
 * superblock is read.
 */
int tool_log_open(const char *cmd, const char *path, const char *backend, bool read_only,
		  struct tool_log *out);
void tool_log_close(struct tool_log *l);
/* Print a refusal in the form above (@what may be NULL: code and message only). */
void tool_log_error(const char *cmd, const char *path, int err, uint64_t off, const char *what);
/* Print why jrnl_recover failed: the corruption it found and where, or the error. */
void tool_recover_error(const char *cmd, const char *path, int err, const struct jrnl_report *rep);
const char *tool_lsn(uint64_t lsn, char *buf, size_t len); /* "cycle/sector" */
const char *tool_uuid(const uint8_t u[16], char buf[37]);
const char *tool_err_name(int err); /* "DELOG_ECORRUPT", "EIO" */
void tool_print_geom(FILE *f, const char *path, const struct jrnl_geom *g);
void tool_print_report(FILE *f, const struct jrnl_geom *g, const struct jrnl_report *r);
void tool_json_geom(struct json *j, const char *key, const struct jrnl_geom *g);
void tool_json_report(struct json *j, const char *key, const struct jrnl_report *r);
/* An error as the "error" member: code, name, message, and where (offset, lsn, field,
 * what; zeroes and "" for an error without a place). */
void tool_json_error(struct json *j, int err, uint64_t off, uint64_t lsn, const char *field,
		     const char *what);
/* jrnl_recover's failure as the "error" member, where the report puts the damage. */
void tool_json_recover_error(struct json *j, int err, const struct jrnl_report *rep);
/* tool_log_open's failure in @l as the "error" member. */
void tool_json_log_error(struct json *j, const struct tool_log *l);

#endif
