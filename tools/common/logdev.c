/*
 * logdev.c - what `delog format`, `print` and `recover` share: opening a log, and saying
 * precisely what is wrong with one.
 *
 * A log that cannot be used is reported, never guessed at: every refusal names the
 * path, the error code (DELOG_ENOTLOG, DELOG_ECHECKSUM, ...; the codes are documented in
 * delog.h and docs/FORMAT.md), the byte offset of the damage and what was found there,
 * in the one-line form "delog <cmd>: <path>: <code>: <message>, at offset N: <what>".
 * Where and what come from the journal, as delog_open's struct delog_error_info does:
 * jrnl_sb_read_why for a superblock (its field, offset and value), the recovery report
 * for damage in the log; this file only words the line, so the CLI and the library
 * never disagree about which check failed.
 */
#include "logdev.h"
#include "util.h"

/* LSNs as cycle/sector (jrnl_lsn_cycle, jrnl_lsn_sector): the journal's format.h. */
#include "format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>

#include <delog.h>

const char *tool_lsn(uint64_t lsn, char *buf, size_t len)
{
	snprintf(buf, len, "%u/%u", jrnl_lsn_cycle(lsn), jrnl_lsn_sector(lsn));
	return buf;
}

const char *tool_uuid(const uint8_t u[16], char buf[37])
{
	snprintf(buf, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
	return buf;
}

const char *tool_err_name(int err)
{
	return delog_err_name(err);
}

void tool_log_error(const char *cmd, const char *path, int err, uint64_t off, const char *what)
{
	if (what && *what)
		fprintf(stderr, "delog %s: %s: %s, at offset %" PRIu64 ": %s\n", cmd, path,
			tool_strerror(err), off, what);
	else
		fprintf(stderr, "delog %s: %s: %s\n", cmd, path, tool_strerror(err));
}

int tool_log_open(const char *cmd, const char *path, const char *backend, bool read_only,
		  struct tool_log *out)
{
	char msg[512] = "";
	struct iol_dev_opts o = {
		.size = sizeof(o),
		.backend = backend,
		.read_only = read_only,
		.errmsg = msg,
		.errmsg_len = sizeof(msg),
	};
	struct jrnl_sb_why why;
	struct stat st;
	char what[256];
	int err;

	memset(out, 0, sizeof(*out));
	out->path = path;
	out->err_field = "";
	/* iol_dev_open's open(2) would block on a FIFO (print and recover --dry-run open
	 * read-only, which waits for a writer): refuse such a path before opening it. */
	err = tool_path_check(path, &st, what, sizeof(what));
	if (err) {
		fprintf(stderr, "delog %s: %s: %s\n", cmd, path, what);
		out->err = err;
		snprintf(out->err_what, sizeof(out->err_what), "%s", what);
		return err;
	}
	err = iol_dev_open(path, &o, &out->dev);
	if (err) {
		/* The iolayer's message starts with the path already. */
		if (*msg)
			fprintf(stderr, "delog %s: %s\n", cmd, msg);
		else
			fprintf(stderr, "delog %s: %s: %s\n", cmd, path, tool_strerror(err));
		out->err = err;
		snprintf(out->err_what, sizeof(out->err_what), "%s", *msg ? msg : "");
		return err;
	}
	err = jrnl_sb_read_why(out->dev, &out->g, &why);
	if (err) {
		if (!*why.what)
			snprintf(why.what, sizeof(why.what), "reading the superblock");
		tool_log_error(cmd, path, err, why.offset, why.what);
		out->err = err;
		out->err_off = why.offset;
		out->err_field = why.field;
		snprintf(out->err_what, sizeof(out->err_what), "%s", why.what);
		iol_dev_close(out->dev);
		out->dev = NULL;
		return err;
	}
	/* A writing open: the log's sectors must not be smaller than the device's physical
	 * block (jrnl_sector_check); reading them is always safe. */
	if (!read_only && (err = jrnl_sector_check(out->dev, out->g.sector, what, sizeof(what)))) {
		size_t n = strlen(what);

		snprintf(what + n, sizeof(what) - n,
			 " (--dry-run verifies the log without writing)");
		tool_log_error(cmd, path, err, offsetof(struct jrnl_sb, sector_size), what);
		out->err = err;
		out->err_off = offsetof(struct jrnl_sb, sector_size);
		out->err_field = "sb.sector_size";
		snprintf(out->err_what, sizeof(out->err_what), "%s", what);
		iol_dev_close(out->dev);
		out->dev = NULL;
		return err;
	}
	return 0;
}

void tool_log_close(struct tool_log *l)
{
	if (l->dev)
		iol_dev_close(l->dev);
	l->dev = NULL;
}

void tool_recover_error(const char *cmd, const char *path, int err, const struct jrnl_report *rep)
{
	char lsn[32];
	char what[256];

	if (rep->corruption && err == rep->corruption) {
		snprintf(what, sizeof(what), "%s (record lsn %s)", rep->corrupt_what,
			 tool_lsn(rep->corrupt_lsn, lsn, sizeof(lsn)));
		tool_log_error(cmd, path, err, rep->corrupt_offset, what);
	} else {
		fprintf(stderr, "delog %s: %s: recovery failed: %s\n", cmd, path,
			tool_strerror(err));
	}
}

void tool_json_log_error(struct json *j, const struct tool_log *l)
{
	tool_json_error(j, l->err, l->err_off, 0, l->err_field, l->err_what);
}

void tool_json_error(struct json *j, int err, uint64_t off, uint64_t lsn, const char *field,
		     const char *what)
{
	json_obj_begin(j, "error");
	json_i64(j, "code", err);
	json_str(j, "name", tool_err_name(err));
	json_str(j, "message", tool_strerror(err));
	json_u64(j, "offset", off);
	json_u64(j, "lsn", lsn);
	json_str(j, "field", field);
	json_str(j, "what", what);
	json_obj_end(j);
}

void tool_json_recover_error(struct json *j, int err, const struct jrnl_report *rep)
{
	bool here = rep->corruption && err == rep->corruption;

	tool_json_error(j, err, here ? rep->corrupt_offset : 0, here ? rep->corrupt_lsn : 0,
			here ? rep->corrupt_field : "", here ? rep->corrupt_what : "");
}

void tool_print_geom(FILE *f, const char *path, const struct jrnl_geom *g)
{
	char uuid[37], size[32], when[64];
	time_t t = (time_t)g->format_time;
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	else
		snprintf(when, sizeof(when), "%" PRIu64, g->format_time);
	fprintf(f, "%s: delog log, format version %u, incompat %#x\n", path, g->version,
		g->incompat);
	fprintf(f, "  uuid %s, formatted %s\n", tool_uuid(g->uuid, uuid), when);
	fprintf(f, "  log %s at byte %" PRIu64 ": %" PRIu64 " sectors of %u bytes\n",
		fmt_bytes(g->log_size, size, sizeof(size)), g->log_start, g->log_sectors,
		g->sector);
	fprintf(f, "  unflushed window %s (%s)\n",
		fmt_bytes(g->window_sectors * g->sector, size, sizeof(size)),
		g->incompat & JRNL_INCOMPAT_WINDOW ? "named in the superblock" : "the legacy one");
}

void tool_json_geom(struct json *j, const char *key, const struct jrnl_geom *g)
{
	char uuid[37];

	json_obj_begin(j, key);
	json_u64(j, "version", g->version);
	json_u64(j, "incompat", g->incompat);
	json_str(j, "uuid", tool_uuid(g->uuid, uuid));
	json_u64(j, "sector", g->sector);
	json_u64(j, "log_start", g->log_start);
	json_u64(j, "log_size", g->log_size);
	json_u64(j, "log_sectors", g->log_sectors);
	json_u64(j, "window_bytes", g->window_sectors * g->sector);
	json_u64(j, "format_time", g->format_time);
	json_obj_end(j);
}

void tool_print_report(FILE *f, const struct jrnl_geom *g, const struct jrnl_report *r)
{
	char a[32], b[32], c[32], d[32], sz[32];
	uint64_t head_off = g->log_start + (uint64_t)jrnl_lsn_sector(r->head_lsn) * g->sector;

	fprintf(f, "state: %s\n",
		r->empty ? "empty (no record)" :
		r->clean ? "clean (last record is an unmount record)" :
			   "not cleanly unmounted (crash recovery)");
	fprintf(f, "head %s (byte %" PRIu64 "), tail %s, last record %s, durable to %s\n",
		tool_lsn(r->head_lsn, a, sizeof(a)), head_off, tool_lsn(r->tail_lsn, b, sizeof(b)),
		tool_lsn(r->last_lsn, c, sizeof(c)), tool_lsn(r->durable_lsn, d, sizeof(d)));
	fprintf(f,
		"records %" PRIu64 ", checkpoints %" PRIu64 " replayed (%" PRIu64
		" items, %s of item data), incomplete checkpoints dropped %" PRIu64 "\n",
		r->records, r->checkpoints, r->items, fmt_bytes(r->bytes_replayed, sz, sizeof(sz)),
		r->dropped);
	fprintf(f,
		"torn write discarded: %" PRIu64 " bytes; stamped past the head: %" PRIu64
		" bytes\n",
		r->torn_bytes, r->stamped_bytes);
	fprintf(f, "read %s in %" PRIu64 " requests, at most %u chained reads in flight\n",
		fmt_bytes(r->bytes_read, sz, sizeof(sz)), r->read_reqs, r->max_reads_in_flight);
	if (r->corruption)
		fprintf(f, "corruption: %s at byte %" PRIu64 " (record lsn %s): %s\n",
			tool_err_name(r->corruption), r->corrupt_offset,
			tool_lsn(r->corrupt_lsn, a, sizeof(a)), r->corrupt_what);
}

void tool_json_report(struct json *j, const char *key, const struct jrnl_report *r)
{
	char lsn[32];

	json_obj_begin(j, key);
	json_bool(j, "empty", r->empty);
	json_bool(j, "clean", r->clean);
	json_str(j, "head", tool_lsn(r->head_lsn, lsn, sizeof(lsn)));
	json_str(j, "tail", tool_lsn(r->tail_lsn, lsn, sizeof(lsn)));
	json_str(j, "last", tool_lsn(r->last_lsn, lsn, sizeof(lsn)));
	json_str(j, "durable", tool_lsn(r->durable_lsn, lsn, sizeof(lsn)));
	json_u64(j, "head_lsn", r->head_lsn);
	json_u64(j, "tail_lsn", r->tail_lsn);
	json_u64(j, "last_lsn", r->last_lsn);
	json_u64(j, "durable_lsn", r->durable_lsn);
	json_u64(j, "records", r->records);
	json_u64(j, "checkpoints", r->checkpoints);
	json_u64(j, "first_seq", r->first_seq);
	json_u64(j, "last_seq", r->last_seq);
	json_u64(j, "held_back", r->held_back);
	json_u64(j, "items", r->items);
	json_u64(j, "bytes_replayed", r->bytes_replayed);
	json_u64(j, "dropped", r->dropped);
	json_u64(j, "torn_bytes", r->torn_bytes);
	json_u64(j, "stamped_bytes", r->stamped_bytes);
	json_u64(j, "stamp_needed", r->stamp_needed);
	json_u64(j, "bytes_read", r->bytes_read);
	json_u64(j, "read_reqs", r->read_reqs);
	json_u64(j, "max_reads_in_flight", r->max_reads_in_flight);
	if (r->corruption) {
		json_obj_begin(j, "corruption");
		json_i64(j, "code", r->corruption);
		json_str(j, "name", tool_err_name(r->corruption));
		json_u64(j, "offset", r->corrupt_offset);
		json_u64(j, "lsn", r->corrupt_lsn);
		json_str(j, "field", r->corrupt_field ? r->corrupt_field : "");
		json_str(j, "what", r->corrupt_what);
		json_obj_end(j);
	} else {
		json_null(j, "corruption");
	}
	json_obj_end(j);
}
