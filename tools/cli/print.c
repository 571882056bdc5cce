/*
 * print.c - `delog print PATH [--json] [--no-ops]`: show a log the way xfs_logprint
 * shows an XFS log: the superblock, then every record between the tail and the head with
 * its ops, each checkpoint as it completes, and finally head, tail and the counts.
 *
 * It is recovery, watched: the records and ops come from jrnl_recover's observer
 * callbacks (on_record, on_op, replay) with read_only set, on a device opened O_RDONLY,
 * so what print shows is exactly what recovery would verify and replay, in the same
 * order, and print never writes.  It does not decode what recovery would refuse: a
 * damaged log prints up to the damage and then the error, with its code and byte offset,
 * and exits 1.  Records past the head (a torn write, older laps) are not shown; the
 * report gives their byte count.
 *
 * With --json stdout carries one document: {path, superblock, records: [{..., ops: [...]}],
 * checkpoints: [...], report, error}.  Checkpoints complete in the middle of a record's
 * ops, so in JSON they are collected and written after the records.
 */
#include "tools.h"

/* print shows the records and ops themselves: the on-disk structures are the journal's
 * (format.h); everything else comes through jrnl.h and <delog.h>. */
#include "format.h"

#include <delog.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct ck_row {
	uint64_t seq, start_lsn, commit_lsn, payload_bytes;
	uint32_t nitems;
};

struct pr {
	struct json *j; /* NULL: text on stdout */
	bool ops;
	bool rec_open; /* JSON: a record object and its ops array are open */
	struct ck_row *cks;
	size_t nck, cap;
};

static const char *type_name(uint16_t t)
{
	switch (t) {
	case JRNL_T_START:
		return "START";
	case JRNL_T_ITEM:
		return "ITEM";
	case JRNL_T_COMMIT:
		return "COMMIT";
	case JRNL_T_UNMOUNT:
		return "UNMOUNT";
	}
	return "?";
}

static const char *flag_names(uint16_t f, char *buf, size_t len)
{
	static const char *const names[] = { "START",    "COMMIT", "CONTINUE",
					     "WAS_CONT", "END",    "UNMOUNT" };
	size_t n = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < 6; i++)
		if (f & (1u << i))
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "|" : "",
					      names[i]);
	if (!n)
		snprintf(buf, len, "-");
	return buf;
}

static void rec_close(struct pr *p)
{
	if (p->j && p->rec_open) {
		json_arr_end(p->j);
		json_obj_end(p->j);
	}
	p->rec_open = false;
}

static int on_record(void *priv, const struct jrnl_rec_view *r)
{
	struct pr *p = priv;
	char a[32], b[32], c[32], d[32];

	if (!p->j) {
		printf("record %s at byte %" PRIu64 ": %u+%u sectors, %u op bytes, %u ops, "
		       "tail %s, durable %s, prev %s, crc %#010x, writer %ux%u%s\n",
		       tool_lsn(r->lsn, a, sizeof(a)), r->offset, r->hdr_sectors,
		       r->payload_sectors, r->len, r->num_ops, tool_lsn(r->tail_lsn, b, sizeof(b)),
		       tool_lsn(r->durable_lsn, c, sizeof(c)), tool_lsn(r->prev_lsn, d, sizeof(d)),
		       r->crc, r->logbufs, r->logbsize, r->wraps ? ", wraps the log's end" : "");
		return 0;
	}
	rec_close(p);
	json_obj_begin(p->j, NULL);
	json_str(p->j, "lsn", tool_lsn(r->lsn, a, sizeof(a)));
	json_u64(p->j, "offset", r->offset);
	json_u64(p->j, "cycle", r->cycle);
	json_u64(p->j, "hdr_sectors", r->hdr_sectors);
	json_u64(p->j, "payload_sectors", r->payload_sectors);
	json_u64(p->j, "len", r->len);
	json_u64(p->j, "num_ops", r->num_ops);
	json_str(p->j, "tail", tool_lsn(r->tail_lsn, a, sizeof(a)));
	json_str(p->j, "durable", tool_lsn(r->durable_lsn, a, sizeof(a)));
	json_str(p->j, "prev", tool_lsn(r->prev_lsn, a, sizeof(a)));
	json_u64(p->j, "crc", r->crc);
	json_u64(p->j, "logbufs", r->logbufs);
	json_u64(p->j, "logbsize", r->logbsize);
	json_bool(p->j, "wraps", r->wraps);
	json_arr_begin(p->j, "ops");
	p->rec_open = true;
	return 0;
}

static int on_op(void *priv, const struct jrnl_op_view *op)
{
	struct pr *p = priv;
	bool first = !(op->flags & JRNL_OP_WAS_CONT);
	struct jrnl_start st;
	struct jrnl_item it;
	struct jrnl_commit c;
	char fl[64], detail[160] = "", a[32];

	if (!p->ops)
		return 0;
	if (first && op->type == JRNL_T_START && op->len >= sizeof(st)) {
		memcpy(&st, op->data, sizeof(st));
		snprintf(detail, sizeof(detail), "seq %" PRIu64, st.seq);
	} else if (first && op->type == JRNL_T_ITEM && op->len >= sizeof(it)) {
		memcpy(&it, op->data, sizeof(it));
		snprintf(detail, sizeof(detail), "key %" PRIu64 ", %u data bytes%s", it.key,
			 it.data_len, op->flags & JRNL_OP_CONTINUE ? " (continues)" : "");
	} else if (first && op->type == JRNL_T_COMMIT && op->len >= sizeof(c)) {
		memcpy(&c, op->data, sizeof(c));
		snprintf(detail, sizeof(detail),
			 "seq %" PRIu64 ", start %s, %u items, %" PRIu64
			 " payload bytes, crc %#010x",
			 c.seq, tool_lsn(c.start_lsn, a, sizeof(a)), c.nitems, c.payload_bytes,
			 c.crc);
	} else if (!first) {
		snprintf(detail, sizeof(detail), "continued piece");
	}
	if (!p->j) {
		printf("  op %u at byte %" PRIu64 ": tid %#010x %-7s %-17s %u bytes%s%s\n", op->idx,
		       op->offset, op->tid, type_name(op->type),
		       flag_names(op->flags, fl, sizeof(fl)), op->len, *detail ? ": " : "", detail);
		return 0;
	}
	json_obj_begin(p->j, NULL);
	json_u64(p->j, "idx", op->idx);
	json_u64(p->j, "offset", op->offset);
	json_u64(p->j, "tid", op->tid);
	json_str(p->j, "type", type_name(op->type));
	json_str(p->j, "flags", flag_names(op->flags, fl, sizeof(fl)));
	json_u64(p->j, "len", op->len);
	if (first && op->type == JRNL_T_START && op->len >= sizeof(st)) {
		json_u64(p->j, "seq", st.seq);
	} else if (first && op->type == JRNL_T_ITEM && op->len >= sizeof(it)) {
		json_u64(p->j, "key", it.key);
		json_u64(p->j, "data_len", it.data_len);
	} else if (first && op->type == JRNL_T_COMMIT && op->len >= sizeof(c)) {
		json_u64(p->j, "seq", c.seq);
		json_str(p->j, "start", tool_lsn(c.start_lsn, a, sizeof(a)));
		json_u64(p->j, "nitems", c.nitems);
		json_u64(p->j, "payload_bytes", c.payload_bytes);
		json_u64(p->j, "crc", c.crc);
	}
	json_obj_end(p->j);
	return 0;
}

static int on_ckpt(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *items,
		   size_t n)
{
	struct pr *p = priv;
	char a[32], b[32];

	(void)items;
	(void)n;
	if (!p->j) {
		printf("  checkpoint %" PRIu64 " complete: records %s..%s, %u items, %" PRIu64
		       " payload bytes\n",
		       ck->seq, tool_lsn(ck->start_lsn, a, sizeof(a)),
		       tool_lsn(ck->commit_lsn, b, sizeof(b)), ck->nitems, ck->payload_bytes);
		return 0;
	}
	if (p->nck == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct ck_row *q = realloc(p->cks, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		p->cks = q;
		p->cap = cap;
	}
	p->cks[p->nck++] = (struct ck_row){ ck->seq, ck->start_lsn, ck->commit_lsn,
					    ck->payload_bytes, ck->nitems };
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: delog print PATH [--json] [--no-ops] [--backend B]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nPrint a delog log without changing it: the superblock, every record from the\n"
	       "tail to the head with its ops, each checkpoint as it completes, then head,\n"
	       "tail and counts.  What is shown is what recovery would replay.\n"
	       "\noptions:\n"
	       "  -j, --json        one JSON document: path, superblock, records (with ops),\n"
	       "                    checkpoints, report, error\n"
	       "      --no-ops      records and checkpoints only\n"
	       "  -b, --backend B   I/O backend: uring, aio, psync (default: best available)\n"
	       "  -h, --help        show this help\n"
	       "\nA log that is not valid is reported with its error code and the byte offset\n"
	       "of the damage.  Exit status: 0 valid, 1 refused or damaged, 2 usage error.\n");
}

int cmd_print(int argc, char **argv)
{
	enum {
		O_NO_OPS = 256
	};
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "no-ops", no_argument, NULL, O_NO_OPS },
		{ "backend", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *backend = NULL;
	struct pr p = { .ops = true };
	struct jrnl_recover_opts ro = {
		.replay = on_ckpt,
		.on_record = on_record,
		.on_op = on_op,
		.priv = &p,
		.read_only = true,
	};
	struct jrnl_report rep;
	struct tool_log l;
	struct json j;
	bool json = false;
	int ch, err;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "jb:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = true;
			break;
		case O_NO_OPS:
			p.ops = false;
			break;
		case 'b':
			if (tool_parse_backend("print", optarg, &backend))
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
		fprintf(stderr, "delog print: %s\n",
			optind < argc ? "one PATH only" : "PATH is missing");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	err = tool_log_open("print", argv[optind], backend, true, &l);
	if (json) {
		p.j = &j;
		json_init(&j, stdout, true);
		json_obj_begin(&j, NULL);
		json_str(&j, "path", argv[optind]);
	}
	if (err) {
		if (json) {
			json_null(&j, "superblock");
			tool_json_log_error(&j, &l);
			json_obj_end(&j);
			json_finish(&j);
		}
		return TOOL_EXIT_FAIL;
	}
	if (json) {
		tool_json_geom(&j, "superblock", &l.g);
		json_arr_begin(&j, "records");
	} else {
		tool_print_geom(stdout, l.path, &l.g);
	}
	err = jrnl_recover(l.dev, &l.g, &ro, &rep);
	if (json) {
		char a[32], b[32];

		rec_close(&p);
		json_arr_end(&j);
		json_arr_begin(&j, "checkpoints");
		for (size_t i = 0; i < p.nck; i++) {
			json_obj_begin(&j, NULL);
			json_u64(&j, "seq", p.cks[i].seq);
			json_str(&j, "start", tool_lsn(p.cks[i].start_lsn, a, sizeof(a)));
			json_str(&j, "commit", tool_lsn(p.cks[i].commit_lsn, b, sizeof(b)));
			json_u64(&j, "nitems", p.cks[i].nitems);
			json_u64(&j, "payload_bytes", p.cks[i].payload_bytes);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		tool_json_report(&j, "report", &rep);
		if (err)
			tool_json_recover_error(&j, err, &rep);
		else
			json_null(&j, "error");
		json_obj_end(&j);
		json_finish(&j);
	} else {
		tool_print_report(stdout, &l.g, &rep);
	}
	free(p.cks);
	if (err)
		tool_recover_error("print", l.path, err, &rep);
	tool_log_close(&l);
	return err ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}
