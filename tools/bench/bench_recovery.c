/*
 * bench_recovery.c - `delog bench --workload recovery`: how fast crash recovery reads a
 * full log, next to how fast fio reads the same bytes of the same file in the same run.
 * Targets: delog_open with a replay callback recovers the live log at >= 0.9 of fio's
 * sequential O_DIRECT read bandwidth at fio's best depth, reading <= 1.05 bytes per
 * live byte (recovery holds what it verified: journal/recover_hold.c).
 *
 * Steps:
 *  1. Format a log of --size bytes (default 1 GiB) on the target (jrnl_format zeroes it).
 *  2. Fill it through the real writer (jrnl_log_open, jrnl_tx_start / jrnl_tx_item /
 *     jrnl_tx_commit with flags 0, so group commit packs full records), checkpoints of
 *     --ckpt-items items of --item-size bytes of pseudo-random data, until not even a
 *     one-item checkpoint fits: each checkpoint is sized with jrnl_log_tx_bytes against
 *     jrnl_log_free_bytes first (halving its item count near the end), so the writer
 *     never refuses one and nothing is left half-written.  The tail stays at the start
 *     of the log (nothing is released), so [tail, head) is the whole log less the last
 *     checkpoint's worth; under 95 % of --size is a failure (a --size too small to
 *     reach it with these buffers and items is refused up front: fill_unfillable).
 *     Then jrnl_log_force, jrnl_log_flush, one more one-item checkpoint, force and
 *     flush again, and jrnl_log_close, with no unmount record: recovery sees a crashed
 *     log and must read and replay all of it.  The last checkpoint's record is sealed
 *     after the flush, so it carries the durable point, as the records of an engine
 *     that flushes its commits do.  Without it (--no-durable-point) no record vouches
 *     for any other, and recovery verifies every record back from the head before its
 *     main pass, reading the log twice (docs/BENCH.md); the bench then also prints the
 *     live-log rate.
 *  3. The device is reopened read-only (no writer lock: delog_open must see a crashed
 *     log, not a live one).  --passes times, three readers taking turns first, second
 *     and last, so device drift and caches affect all alike: (a) jrnl_sb_read +
 *     jrnl_recover (read_only, so nothing is stamped and every pass sees the same log)
 *     with a replay callback that touches every item (XORs its first byte, counts its
 *     bytes), timed with now_ns; MB/s is report.bytes_read over that time; (b) delog_open
 *     with DELOG_OPEN_RDONLY and a recover callback doing the same, timed; MB/s is the
 *     live bytes over that time; (c) fio reading the log's live byte range with the
 *     same block size as recovery's read chunk, --direct=1 --readonly, on io_uring
 *     (libaio when the bench runs on the aio or psync backend), at iodepth = recovery's
 *     reads in flight, 8 and 32.  Medians are reported, and every pass too; the ratio
 *     is delog_open's median over fio's best depth's.  --recover-mem sets what
 *     recovery may hold (1: nothing, so it reads the log twice, as before it held).
 *  4. Every pass must validate (delog_open's through its delog_recovery and callback):
 *     no corruption, not clean, nothing dropped, exactly the
 *     checkpoints, items and item bytes the fill wrote, the XOR the fill computed, the
 *     writer's record count and its head.  A benchmark of a recovery that does not recover is
 *     worthless, so any mismatch fails the run.
 *
 * Where the time goes: the recovering thread's CPU time (CLOCK_THREAD_CPUTIME_ID around
 * jrnl_recover) is what it spent checking, unpacking and parsing records (CRCs, memcpy
 * into transactions, the callback) and submitting the reads (with io_uring the kernel
 * pins the buffers' pages on the submitting thread); the rest of the wall time it was
 * waiting for reads.
 * bytes_read / cpu time is the speed recovery would reach on an infinitely fast device,
 * so when it is not well above fio's bandwidth the parser, not the device, is the limit.
 * The process's CPU time (getrusage) adds the iolayer's completion threads.
 *
 * O_DIRECT throughout, so the page cache plays no part (a VM's host cache may; the
 * alternation is what keeps that fair).
 */
#include "bench.h"

/* The journal's own layer (jrnl_log_*, jrnl_recover: journal/include/jrnl.h) and its LSN
 * helpers (format.h): this workload measures recovery below the engine. */
#include "format.h"
#include "io.h"
#include "io_sim.h"

#include <delog.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_SIZE (1ull << 30)
#define MIN_SIZE (2ull * DELOG_LOGBUFS_MAX * DELOG_LOGBSIZE_MAX) /* as journal/sb.c */
#define DEFAULT_ITEM_SIZE 4096u
#define MAX_ITEM_SIZE (16u << 20)
#define DEFAULT_CKPT_ITEMS 64u
#define MAX_CKPT_ITEMS 100000u
/* Recovery's read parameters as the bench passes them (jrnl_recover's own defaults are
 * 4 MiB and 2); docs/BENCH.md has the measurements behind them. */
#define DEFAULT_READ_CHUNK (4u << 20)
#define DEFAULT_INFLIGHT 2u
#define MIN_READ_CHUNK (1u << 20) /* jrnl_recover's clamp */
#define MAX_READ_CHUNK (256u << 20)
#define MAX_INFLIGHT 16u
#define DEFAULT_PASSES 3u
#define MAX_PASSES 20u
#define MIN_LIVE_FRACTION 0.95
/* Targets: delog_open with a replay callback at >= 0.9 of fio's best depth on the live
 * bytes, reading <= 1.05 bytes per live byte. */
#define TARGET_RATIO 0.9
#define TARGET_READ_AMP 1.05
/* fio's depths: recovery's reads in flight, and these; its best median is the baseline. */
#define FIO_DEPTHS 3u
static const unsigned fio_depth_more[FIO_DEPTHS - 1] = { 8, 32 };
#define PATTERN_BYTES (1u << 20)

enum {
	OPT_SIZE = BENCH_OPT_WORKLOAD,
	OPT_SECTOR,
	OPT_LOGBSIZE,
	OPT_LOGBUFS,
	OPT_ITEM_SIZE,
	OPT_CKPT_ITEMS,
	OPT_READ_CHUNK,
	OPT_INFLIGHT,
	OPT_PASSES,
	OPT_NO_FIO,
	OPT_NO_DURABLE,
	OPT_RECOVER_MEM,
};

static const struct option rec_options[] = {
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "sector", required_argument, NULL, OPT_SECTOR },
	{ "logbsize", required_argument, NULL, OPT_LOGBSIZE },
	{ "logbufs", required_argument, NULL, OPT_LOGBUFS },
	{ "item-size", required_argument, NULL, OPT_ITEM_SIZE },
	{ "ckpt-items", required_argument, NULL, OPT_CKPT_ITEMS },
	{ "read-chunk", required_argument, NULL, OPT_READ_CHUNK },
	{ "reads-in-flight", required_argument, NULL, OPT_INFLIGHT },
	{ "passes", required_argument, NULL, OPT_PASSES },
	{ "no-fio", no_argument, NULL, OPT_NO_FIO },
	{ "no-durable-point", no_argument, NULL, OPT_NO_DURABLE },
	{ "recover-mem", required_argument, NULL, OPT_RECOVER_MEM },
	{ NULL, 0, NULL, 0 },
};

struct rec_opts {
	uint64_t size; /* log bytes */
	uint32_t sector, logbsize;
	unsigned logbufs;
	uint32_t item_size;
	unsigned ckpt_items;
	size_t read_chunk;
	unsigned inflight;
	unsigned passes;
	bool no_fio;
	bool no_durable;      /* no record written after the final flush */
	uint64_t recover_mem; /* jrnl_recover_opts.hold_bytes, delog_options.recover_mem */
};

/* What the fill wrote: what every recovery pass must find. */
struct fill {
	uint64_t ckpts, items, item_bytes;
	uint8_t xor ; /* of the first byte of every item */
	uint64_t records, record_bytes, buffer_waits;
	uint64_t head_lsn, live_bytes;
	double live_fraction;
	double format_s, fill_s;
};

/* One recovery pass. */
struct rec_pass {
	uint64_t wall_ns, cpu_ns, proc_cpu_ns;
	struct jrnl_report rep;
	double mbs;
	uint64_t open_ns; /* delog_open read-only with a replay callback */
	double open_mbs;  /* live bytes / open_ns */
	double fio_mbs[FIO_DEPTHS];
};

/* What the replay callback sees. */
struct replay {
	struct bench *b;
	uint64_t ckpts, items, bytes;
	uint8_t xor ;
	bool stopped;
};

struct run {
	struct bench *b;
	const struct rec_opts *o;
	struct iol_dev *dev;
	struct jrnl_geom g;
	const char *backend; /* the backend in use */
	const char *fs_type;
	struct fill f;
	struct rec_pass pass[MAX_PASSES];
	char fio_path[PATH_MAX];
	const char *fio; /* NULL: not installed or --no-fio */
	bool installed;
	struct fio_job job;
	unsigned fio_depth[FIO_DEPTHS], nfio;
	char fio_err[512];
	bool fio_ran;
};

/* ---- options ---- */

static void rec_defaults(void *state)
{
	struct rec_opts *o = state;

	o->size = DEFAULT_SIZE;
	o->sector = 4096;
	o->logbsize = DELOG_LOGBSIZE_MAX;
	o->logbufs = DELOG_LOGBUFS_MAX;
	o->item_size = DEFAULT_ITEM_SIZE;
	o->ckpt_items = DEFAULT_CKPT_ITEMS;
	o->read_chunk = DEFAULT_READ_CHUNK;
	o->inflight = DEFAULT_INFLIGHT;
	o->passes = DEFAULT_PASSES;
}

static int rec_option(void *state, int opt, const char *arg)
{
	struct rec_opts *o = state;
	uint64_t v;

	switch (opt) {
	case OPT_SIZE:
		if (parse_size(arg, &v) || v < MIN_SIZE)
			return bench_usage_error("--size: '%s' is not a size of at least %llu MiB",
						 arg, MIN_SIZE >> 20);
		o->size = v;
		return 0;
	case OPT_SECTOR:
		if (parse_count(arg, 512, 4096, &v) || (v != 512 && v != 4096))
			return bench_usage_error("--sector: '%s' is not 512 or 4096", arg);
		o->sector = (uint32_t)v;
		return 0;
	case OPT_LOGBSIZE:
		return bench_parse_logbsize(arg, &o->logbsize);
	case OPT_LOGBUFS:
		return bench_parse_logbufs(arg, &o->logbufs);
	case OPT_ITEM_SIZE:
		return bench_parse_item_size(arg, MAX_ITEM_SIZE, &o->item_size);
	case OPT_CKPT_ITEMS:
		return bench_parse_count("ckpt-items", arg, 1, MAX_CKPT_ITEMS, &o->ckpt_items);
	case OPT_READ_CHUNK:
		if (parse_size(arg, &v) || v < MIN_READ_CHUNK || v > MAX_READ_CHUNK ||
		    v % IOL_SEG_BYTES)
			return bench_usage_error("--read-chunk: '%s' is not a multiple of 4K from "
						 "1M to 256M",
						 arg);
		o->read_chunk = (size_t)v;
		return 0;
	case OPT_INFLIGHT:
		return bench_parse_count("reads-in-flight", arg, 2, MAX_INFLIGHT, &o->inflight);
	case OPT_PASSES:
		return bench_parse_count("passes", arg, 1, MAX_PASSES, &o->passes);
	case OPT_NO_FIO:
		o->no_fio = true;
		return 0;
	case OPT_NO_DURABLE:
		o->no_durable = true;
		return 0;
	case OPT_RECOVER_MEM:
		if (parse_size(arg, &v))
			return bench_usage_error("--recover-mem: '%s' is not a size", arg);
		o->recover_mem = v;
		return 0;
	}
	return bench_usage_error("unknown option");
}

/*
 * The most of the log that fill_log can leave unwritten with these options, from the
 * writer's own arithmetic: it stops when a one-item checkpoint (T1 = jrnl_log_tx_bytes)
 * no longer fits in jrnl_log_free_bytes less the reserve for the checkpoint after the
 * flush (T1 + 2 log buffers; none with --no-durable-point), and jrnl_log_free_bytes
 * itself keeps one sector and a record header back.  So the head stops short of the end
 * by less than reserve + T1 + what the writer keeps back.  T1 and the header depend on
 * the sector, the buffer size and the item size only, not on the log's size, so they are
 * read from a writer opened on the smallest log, on an in-memory sim disk: the target is
 * not touched.  0 or a negative errno.
 */
static int fill_unfillable(const struct rec_opts *o, uint64_t *out)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = DELOG_SB_BYTES + MIN_SIZE,
				   .sector = o->sector,
				   .seed = 1,
				   .write_through = true };
	struct iol_dev_opts dopts = { .size = sizeof(dopts), .backend = "sim", .sim = &so };
	struct jrnl_format_opts fo = { .sector = o->sector, .log_size = MIN_SIZE };
	struct jrnl_log_opts lo = { .logbufs = o->logbufs, .logbsize = o->logbsize };
	struct iol_dev *dev;
	struct jrnl_log *log;
	struct jrnl_geom g;
	uint64_t t1, kept;
	int err;

	err = iol_dev_open(NULL, &dopts, &dev);
	if (err)
		return err;
	err = jrnl_format(dev, &fo, &g);
	if (!err)
		err = jrnl_log_open(dev, &g, NULL, &lo, &log);
	if (!err) {
		t1 = jrnl_log_tx_bytes(log, 1, o->item_size);
		kept = g.log_size - jrnl_log_free_bytes(log);
		err = jrnl_log_close(log);
		*out = (o->no_durable ? 0 : t1 + 2ull * o->logbsize) + t1 + kept;
	}
	iol_dev_close(dev);
	return err;
}

static int rec_check(struct bench *b, void *state)
{
	struct rec_opts *o = state;
	uint64_t ckpt = (uint64_t)o->ckpt_items * (o->item_size + 64u);
	uint64_t unfillable, min;
	char a[32], c[32], d[32], e[32], f[32];

	if (bench_is_sim(b))
		return bench_usage_error("the recovery workload needs a file or device, not sim");

	if (o->size % o->sector)
		return bench_usage_error("--size: %s is not a multiple of the %u-byte sector "
					 "(--sector): give %s or %s",
					 fmt_bytes_exact(o->size, a, sizeof(a)), o->sector,
					 fmt_bytes_exact(o->size - o->size % o->sector, c,
							 sizeof(c)),
					 fmt_bytes_exact(o->size - o->size % o->sector + o->sector,
							 d, sizeof(d)));
	if (ckpt > o->size / 4)
		return bench_usage_error("a checkpoint of %u items of %u bytes takes more than a "
					 "quarter of the log (--size)",
					 o->ckpt_items, o->item_size);
	/* A size the fill cannot cover to MIN_LIVE_FRACTION is refused now, before the
	 * target is created or written, with the smallest one that works (whole MiB). */
	if (fill_unfillable(o, &unfillable))
		return 0; /* not known (out of memory): fill_log's own check still applies */
	min = (uint64_t)ceil((double)unfillable / (1 - MIN_LIVE_FRACTION));
	min = (min + (1u << 20) - 1) & ~((1ull << 20) - 1);
	if (o->size < min)
		return bench_usage_error("--size: %s is too small for the recovery workload: the "
					 "fill must cover %.0f%% of the log, and with %s log "
					 "buffers and %s items the writer may leave up to %s of it "
					 "unwritten; at least %s with these options",
					 fmt_bytes(o->size, a, sizeof(a)), 100 * MIN_LIVE_FRACTION,
					 fmt_bytes(o->logbsize, c, sizeof(c)),
					 fmt_bytes(o->item_size, d, sizeof(d)),
					 fmt_bytes(unfillable, e, sizeof(e)),
					 fmt_bytes(min, f, sizeof(f)));
	return 0;
}

static void rec_help(FILE *f)
{
	fprintf(f,
		"  -s, --size N           log size, with K/M/G suffixes (default 1G); the file is\n"
		"                         N + 4 KiB.  At least what the fill can cover to 95%%:\n"
		"                         12M with the default buffers and items (a smaller size\n"
		"                         is refused with the minimum for the options given)\n"
		"      --sector S         log sector size, 512 or 4096 (default 4096)\n"
		"      --logbsize N       writer's log buffer size, 16K..256K (default 256K)\n"
		"      --logbufs N        writer's log buffers, 2..8 (default 8)\n"
		"      --item-size N      bytes of each logged item (default 4096)\n"
		"      --ckpt-items N     items per checkpoint (default %u)\n"
		"      --read-chunk N     recovery's bytes per chained read, 1M..256M (default %uM);\n"
		"                         also fio's block size\n"
		"      --reads-in-flight N  recovery's chained reads outstanding, 2..16 (default %u);\n"
		"                         also fio's iodepth\n"
		"      --passes N         recovery passes and fio passes, alternating; medians\n"
		"                         shown (default %u)\n"
		"      --no-fio           skip the fio comparison\n"
		"      --recover-mem BYTES what recovery may hold of the verified checkpoints\n"
		"                         so it reads the log once (0: its default; 1: hold\n"
		"                         nothing, read twice)\n"
		"      --no-durable-point end the fill with the flush: then no record vouches for\n"
		"                         any data, and recovery verifies every record back from\n"
		"                         the head before replaying (it reads the log twice);\n"
		"                         default: one more checkpoint after the flush, so the\n"
		"                         last record carries the durable point, as after a\n"
		"                         committing engine\n"
		"\nThe log is formatted, filled to >= 95%% with checkpoints through the writer and\n"
		"left without an unmount record; each pass recovers it read-only.  MB/s = 10^6\n"
		"bytes/s.  Targets: delog_open's live MB/s / fio's at its best depth >= %.1f,\n"
		"bytes read per live byte <= %.2f.\n",
		DEFAULT_CKPT_ITEMS, DEFAULT_READ_CHUNK >> 20, DEFAULT_INFLIGHT, DEFAULT_PASSES,
		TARGET_RATIO, TARGET_READ_AMP);
}

/* ---- fill ---- */

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* One checkpoint of @nitems items through the writer, accounted in r->f. */
static int write_ckpt(struct run *r, struct jrnl_log *log, uint64_t seq, unsigned nitems,
		      const unsigned char *pat, uint64_t *seed, uint64_t *key)
{
	uint32_t isz = r->o->item_size;
	struct jrnl_wtx tx;
	int err;

	err = jrnl_tx_start(log, seq, 0, &tx);
	for (unsigned i = 0; !err && i < nitems; i++, (*key)++) {
		const unsigned char *d = pat + (xorshift(seed) % PATTERN_BYTES);

		err = jrnl_tx_item(&tx, *key, d, isz);
		if (!err)
			r->f.xor ^= d[0];
	}
	if (!err)
		err = jrnl_tx_commit(&tx, NULL, NULL);
	if (err) {
		bench_fail(r->b, err, r->b->t.path, "writing checkpoint %" PRIu64 ": %s", seq,
			   tool_strerror(err));
		return err;
	}
	r->f.ckpts++;
	r->f.items += nitems;
	r->f.item_bytes += (uint64_t)nitems * isz;
	return 0;
}

static int fill_log(struct run *r)
{
	const struct rec_opts *o = r->o;
	struct jrnl_log_opts lo = { .logbufs = o->logbufs, .logbsize = o->logbsize };
	struct jrnl_log_stats st;
	struct jrnl_log *log;
	unsigned char *pat;
	uint64_t seed = 0x9e3779b97f4a7c15ull, seq = 1, key = 1, t0 = now_ns();
	size_t pat_bytes = PATTERN_BYTES + o->item_size;
	unsigned nitems = o->ckpt_items;
	uint64_t reserve;
	int err, cerr;

	pat = malloc(pat_bytes);
	if (!pat) {
		bench_fail(r->b, -ENOMEM, NULL, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < pat_bytes; i += 8) {
		uint64_t v = xorshift(&seed);

		memcpy(pat + i, &v, pat_bytes - i < 8 ? pat_bytes - i : 8);
	}
	err = jrnl_log_open(r->dev, &r->g, NULL, &lo, &log);
	if (err) {
		free(pat);
		bench_fail(r->b, err, r->b->t.path, "cannot open the log writer: %s",
			   tool_strerror(err));
		return err;
	}
	/* Room kept for the checkpoint written after the flush (see the top comment). */
	reserve = o->no_durable ? 0 : jrnl_log_tx_bytes(log, 1, o->item_size) + 2ull * o->logbsize;
	for (;;) {
		uint64_t room = jrnl_log_free_bytes(log);

		room -= room < reserve ? room : reserve;

		while (nitems > 1 &&
		       jrnl_log_tx_bytes(log, nitems, (uint64_t)nitems * o->item_size) > room)
			nitems /= 2;
		if (jrnl_log_tx_bytes(log, nitems, (uint64_t)nitems * o->item_size) > room)
			break;
		if ((seq & 63) == 0) {
			if (bench_interrupted(r->b)) {
				err = -EINTR;
				break;
			}
			bench_progress(r->b, "filling the log: %.0f%%",
				       100.0 *
					       (double)(jrnl_lsn_sector(jrnl_log_head(log)) *
							(uint64_t)r->g.sector) /
					       (double)o->size);
		}
		err = write_ckpt(r, log, seq++, nitems, pat, &seed, &key);
		if (err)
			break;
	}
	if (!err)
		err = jrnl_log_force(log);
	if (!err)
		err = jrnl_log_flush(log);
	if (!err && !o->no_durable) {
		/* Its record is sealed after the flush, so it says everything before it is
		 * stable: the state an engine that flushes its commits leaves at a crash. */
		err = write_ckpt(r, log, seq++, 1, pat, &seed, &key);
		if (!err)
			err = jrnl_log_force(log);
		if (!err)
			err = jrnl_log_flush(log);
	}
	jrnl_log_stats(log, &st);
	cerr = jrnl_log_close(log);
	if (!err)
		err = cerr;
	free(pat);
	r->f.fill_s = (double)(now_ns() - t0) / 1e9;
	if (err) {
		if (err != -EINTR && !r->b->err_msg[0])
			bench_fail(r->b, err, r->b->t.path, "filling the log: %s",
				   tool_strerror(err));
		return err;
	}
	r->f.records = st.records;
	r->f.record_bytes = st.record_bytes;
	r->f.buffer_waits = st.buffer_waits;
	r->f.head_lsn = st.head_lsn;
	/* The tail never moved from 1/0 and the head never wrapped: live = head's sector. */
	r->f.live_bytes = (uint64_t)jrnl_lsn_sector(st.head_lsn) * r->g.sector;
	if (jrnl_lsn_cycle(st.head_lsn) != 1)
		r->f.live_bytes = r->g.log_size;
	r->f.live_fraction = (double)r->f.live_bytes / (double)r->g.log_size;
	if (r->f.live_fraction < MIN_LIVE_FRACTION) {
		bench_fail(r->b, -ENOSPC, r->b->t.path,
			   "the fill covered only %.1f%% of the log "
			   "(at least %.0f%% wanted)",
			   100 * r->f.live_fraction, 100 * MIN_LIVE_FRACTION);
		return -ENOSPC;
	}
	return 0;
}

/* ---- recovery passes ---- */

/* What both replay callbacks do with an item: XOR its first byte, count its bytes. */
static void replay_item(struct replay *rp, const void *data, uint32_t len)
{
	if (len)
		rp->xor ^= *(const unsigned char *)data;
	rp->bytes += len;
}

static int replay_cb(void *priv, const struct jrnl_ckpt *ckpt, const struct jrnl_item_view *items,
		     size_t nitems)
{
	struct replay *rp = priv;

	for (size_t i = 0; i < nitems; i++)
		replay_item(rp, items[i].data, items[i].len);
	rp->items += nitems;
	if ((++rp->ckpts & 255) == 0 && bench_interrupted(rp->b)) {
		rp->stopped = true;
		return 1;
	}
	(void)ckpt;
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Say what in @rep or @rp disagrees with what the fill wrote; 0 when nothing does. */
static int validate(struct run *r, const struct jrnl_report *rep, const struct replay *rp,
		    char *what, size_t len)
{
	const struct fill *f = &r->f;

	if (rep->corruption)
		snprintf(what, len, "recovery reported %s: %s", tool_err_name(rep->corruption),
			 rep->corrupt_what);
	else if (rep->empty || rep->clean)
		snprintf(what, len, "recovery found a%s log, not a crashed one",
			 rep->empty ? "n empty" : " cleanly unmounted");
	else if (rep->checkpoints != f->ckpts || rp->ckpts != f->ckpts)
		snprintf(what, len,
			 "recovery replayed %" PRIu64 " checkpoints (callback: %" PRIu64
			 "), the fill wrote %" PRIu64,
			 rep->checkpoints, rp->ckpts, f->ckpts);
	else if (rep->items != f->items || rp->items != f->items)
		snprintf(what, len, "recovery replayed %" PRIu64 " items, the fill wrote %" PRIu64,
			 rep->items, f->items);
	else if (rep->bytes_replayed != f->item_bytes || rp->bytes != f->item_bytes)
		snprintf(what, len,
			 "recovery replayed %" PRIu64 " item bytes (callback: %" PRIu64
			 "), the fill wrote %" PRIu64,
			 rep->bytes_replayed, rp->bytes, f->item_bytes);
	else if (rp->xor != f->xor)
		snprintf(what, len, "the items' first bytes XOR to %#x, the fill's to %#x", rp->xor,
			 f->xor);
	else if (rep->dropped)
		snprintf(what, len, "recovery dropped %" PRIu64 " incomplete checkpoints",
			 rep->dropped);
	else if (rep->records != f->records)
		snprintf(what, len, "recovery found %" PRIu64 " records, the writer wrote %" PRIu64,
			 rep->records, f->records);
	else if (rep->head_lsn != f->head_lsn)
		snprintf(what, len, "recovery put the head at %u/%u, the writer's is at %u/%u",
			 jrnl_lsn_cycle(rep->head_lsn), jrnl_lsn_sector(rep->head_lsn),
			 jrnl_lsn_cycle(f->head_lsn), jrnl_lsn_sector(f->head_lsn));
	else
		return 0;
	return -1;
}

static int recover_pass(struct run *r, unsigned i)
{
	struct rec_pass *p = &r->pass[i];
	struct replay rp = { .b = r->b };
	struct jrnl_recover_opts ro = {
		.replay = replay_cb,
		.priv = &rp,
		.read_only = true,
		.read_chunk = r->o->read_chunk,
		.reads_in_flight = r->o->inflight,
		.hold_bytes = r->o->recover_mem,
	};
	struct jrnl_geom g;
	uint64_t t0, c0, pc0;
	char what[512];
	int err;

	t0 = now_ns();
	c0 = thread_cpu_ns();
	pc0 = bench_cpu_ns();
	err = jrnl_sb_read(r->dev, &g);
	if (!err)
		err = jrnl_recover(r->dev, &g, &ro, &p->rep);
	p->cpu_ns = thread_cpu_ns() - c0;
	p->proc_cpu_ns = bench_cpu_ns() - pc0;
	p->wall_ns = now_ns() - t0;
	if (rp.stopped)
		return -EINTR;
	if (err) {
		if (!p->rep.corruption)
			bench_fail(r->b, err, r->b->t.path, "recovery pass %u failed: %s", i + 1,
				   tool_strerror(err));
		else
			bench_fail(r->b, err, r->b->t.path,
				   "recovery pass %u: %s at offset %" PRIu64 ": %s", i + 1,
				   tool_err_name(err), p->rep.corrupt_offset, p->rep.corrupt_what);
		return err;
	}
	if (validate(r, &p->rep, &rp, what, sizeof(what))) {
		bench_fail(r->b, DELOG_ECORRUPT, r->b->t.path,
			   "recovery pass %u does not match the "
			   "fill: %s",
			   i + 1, what);
		return DELOG_ECORRUPT;
	}
	p->mbs = bench_mbs(p->rep.bytes_read, p->wall_ns);
	return 0;
}

/* delog_open's replay callback: what replay_cb counts. */
static int open_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *items,
		   size_t n)
{
	struct replay *rp = arg;

	for (size_t i = 0; i < n; i++)
		replay_item(rp, items[i].data, items[i].len);
	rp->items += n;
	rp->ckpts++;
	(void)ck;
	return 0;
}

/* The same log through the public entry: delog_open read-only with a replay callback,
 * as an application recovers, timed; it must find what the fill wrote. */
static int open_pass(struct run *r, unsigned i)
{
	struct rec_pass *p = &r->pass[i];
	struct replay rp = { .b = r->b };
	struct delog_recovery rec = { 0 };
	struct delog_options o = { .size = sizeof(o),
				   .backend = r->backend,
				   .flags = DELOG_OPEN_RDONLY,
				   .recover = open_cb,
				   .recover_arg = &rp,
				   .recovery = &rec,
				   .recover_mem = r->o->recover_mem };
	const struct fill *f = &r->f;
	delog *log = NULL;
	uint64_t t0 = now_ns();
	int err = delog_open(r->b->t.path, &o, &log);

	p->open_ns = now_ns() - t0;
	if (err) {
		bench_fail(r->b, err, r->b->t.path, "delog_open pass %u failed: %s", i + 1,
			   delog_errmsg()[0] ? delog_errmsg() : tool_strerror(err));
		return err;
	}
	delog_close(log);
	if (rec.checkpoints != f->ckpts || rp.ckpts != f->ckpts || rec.items != f->items ||
	    rp.bytes != f->item_bytes || rec.bytes != f->item_bytes || rp.xor != f->xor ||
	    rec.dropped || rec.clean) {
		bench_fail(r->b, DELOG_ECORRUPT, r->b->t.path,
			   "delog_open pass %u does not match the fill: %" PRIu64
			   " checkpoints, %" PRIu64 " items, %" PRIu64 " bytes, %" PRIu64
			   " dropped; the fill wrote %" PRIu64 ", %" PRIu64 ", %" PRIu64,
			   i + 1, rec.checkpoints, rec.items, rec.bytes, rec.dropped, f->ckpts,
			   f->items, f->item_bytes);
		return DELOG_ECORRUPT;
	}
	p->open_mbs = bench_mbs(f->live_bytes, p->open_ns);
	return 0;
}

/* One fio pass at each depth (NaN once fio has failed: the first error is kept, fio not
 * run again). */
static void fio_pass(struct run *r, unsigned i)
{
	for (unsigned d = 0; d < FIO_DEPTHS; d++)
		r->pass[i].fio_mbs[d] = NAN;
	for (unsigned d = 0; d < r->nfio; d++) {
		if (!r->fio || r->fio_err[0])
			return;
		r->fio_ran = true;
		r->job.iodepth = r->fio_depth[d];
		if (fio_run(&r->job, &r->pass[i].fio_mbs[d], r->fio_err, sizeof(r->fio_err)))
			r->pass[i].fio_mbs[d] = NAN;
	}
}

static int passes(struct run *r)
{
	const struct rec_opts *o = r->o;
	int err = 0;

	if (r->fio) {
		r->job = (struct fio_job){
			.fio = r->fio,
			.name = "delog-bench-recovery",
			.filename = r->b->t.path,
			.rw = "read",
			.ioengine = !strcmp(r->backend, "uring") ? "io_uring" : "libaio",
			.bs = o->read_chunk,
			.iodepth = o->inflight,
			.offset = r->g.log_start,
			.size = r->f.live_bytes - r->f.live_bytes % o->read_chunk,
			.readonly = true,
		};
		if (!r->job.size)
			r->job.size = r->f.live_bytes - r->f.live_bytes % IOL_SEG_BYTES;
	}
	r->fio_depth[r->nfio++] = o->inflight;
	for (unsigned d = 0; d < FIO_DEPTHS - 1; d++)
		if (fio_depth_more[d] != o->inflight)
			r->fio_depth[r->nfio++] = fio_depth_more[d];
	/* The three readers take turns first, second and last, pass by pass, so that
	 * device drift and a host's cache favour none of them. */
	for (unsigned i = 0; i < o->passes && !err; i++) {
		for (unsigned d = 0; d < FIO_DEPTHS; d++)
			r->pass[i].fio_mbs[d] = NAN;
		bench_point(r->b, "pass %u/%u", i + 1, o->passes);
		for (unsigned k = 0; k < 3 && !err; k++) {
			if (bench_interrupted(r->b)) {
				err = -EINTR;
				break;
			}
			switch ((i + k) % 3) {
			case 0:
				bench_progress(r->b, "pass %u/%u: recovery", i + 1, o->passes);
				err = recover_pass(r, i);
				break;
			case 1:
				bench_progress(r->b, "pass %u/%u: delog_open", i + 1, o->passes);
				err = open_pass(r, i);
				break;
			default:
				if (r->fio) {
					bench_progress(r->b, "pass %u/%u: fio", i + 1, o->passes);
					fio_pass(r, i);
				}
			}
		}
		bench_point_done(r->b, err);
	}
	return err;
}

/* ---- report ---- */

struct summary {
	double rec_mbs, fio_mbs, ratio, wall_s, cpu_s, proc_cpu_s, cpu_mbs, ckpt_per_s;
	double items_per_s;
	double log_mbs;  /* live log bytes per second, jrnl_recover */
	double read_amp; /* bytes_read / live bytes */
	double open_mbs; /* live log bytes per second, delog_open */
	double fio_by_depth[FIO_DEPTHS];
	unsigned fio_best; /* the depth whose median is highest: fio_mbs */
};

static void summarise(const struct run *r, struct summary *s)
{
	unsigned n = r->o->passes;
	double v[MAX_PASSES];

	for (unsigned i = 0; i < n; i++)
		v[i] = r->pass[i].mbs;
	s->rec_mbs = bench_median(v, n);
	s->fio_best = 0;
	for (unsigned d = 0; d < FIO_DEPTHS; d++) {
		for (unsigned i = 0; i < n; i++)
			v[i] = r->pass[i].fio_mbs[d];
		s->fio_by_depth[d] = d < r->nfio ? bench_median(v, n) : NAN;
		if (!isnan(s->fio_by_depth[d]) &&
		    (isnan(s->fio_by_depth[s->fio_best]) ||
		     s->fio_by_depth[d] > s->fio_by_depth[s->fio_best]))
			s->fio_best = d;
	}
	s->fio_mbs = s->fio_by_depth[s->fio_best];
	for (unsigned i = 0; i < n; i++)
		v[i] = r->pass[i].open_mbs;
	s->open_mbs = bench_median(v, n);
	s->ratio = s->open_mbs / s->fio_mbs;
	for (unsigned i = 0; i < n; i++)
		v[i] = (double)r->pass[i].wall_ns / 1e9;
	s->wall_s = bench_median(v, n);
	for (unsigned i = 0; i < n; i++)
		v[i] = (double)r->pass[i].cpu_ns / 1e9;
	s->cpu_s = bench_median(v, n);
	for (unsigned i = 0; i < n; i++)
		v[i] = (double)r->pass[i].proc_cpu_ns / 1e9;
	s->proc_cpu_s = bench_median(v, n);
	s->cpu_mbs = (double)r->pass[0].rep.bytes_read / s->cpu_s / 1e6;
	s->ckpt_per_s = (double)r->f.ckpts / s->wall_s;
	s->items_per_s = (double)r->f.items / s->wall_s;
	s->log_mbs = (double)r->f.live_bytes / s->wall_s / 1e6;
	s->read_amp = (double)r->pass[0].rep.bytes_read / (double)r->f.live_bytes;
}

static void print_human(struct run *r, const struct summary *s)
{
	struct bench *b = r->b;
	const struct rec_opts *o = r->o;
	const struct jrnl_report *rep = &r->pass[0].rep;
	char a[32], c[32], d[32];

	bench_out(b, "delog bench --workload recovery %s\n", b->t.path);
	bench_out_target(b, r->fs_type, r->backend);
	bench_out(b,
		  "  log         %s, %u-byte sectors; writer %u x %s buffers; formatted in "
		  "%.2f s\n",
		  fmt_bytes(r->g.log_size, a, sizeof(a)), r->g.sector, o->logbufs,
		  fmt_bytes(o->logbsize, c, sizeof(c)), r->f.format_s);
	bench_out(b,
		  "  fill        %" PRIu64 " checkpoints of up to %u items of %s, %" PRIu64
		  " records, %s live (%.2f%% of the log), %.2f s (%.0f MB/s)\n",
		  r->f.ckpts, o->ckpt_items, fmt_bytes(o->item_size, a, sizeof(a)), r->f.records,
		  fmt_bytes(r->f.live_bytes, c, sizeof(c)), 100 * r->f.live_fraction, r->f.fill_s,
		  (double)r->f.record_bytes / r->f.fill_s / 1e6);
	bench_out(b,
		  "  recovery    read-only, read chunk %s, %u reads in flight, %u pass%s; "
		  "jrnl_recover, then delog_open with a replay callback\n",
		  fmt_bytes(o->read_chunk, a, sizeof(a)), o->inflight, o->passes,
		  o->passes == 1 ? "" : "es");
	if (r->fio) {
		size_t n = 0;

		for (unsigned k = 0; k < r->nfio && n < sizeof(d); k++)
			n += (size_t)snprintf(d + n, sizeof(d) - n, "%s%u", k ? "," : "",
					      r->fio_depth[k]);
		bench_out(b,
			  "  fio         --rw=read --direct=1 --ioengine=%s --bs=%s --iodepth=%s, "
			  "%s from byte %" PRIu64 "\n",
			  r->job.ioengine, fmt_bytes(r->job.bs, a, sizeof(a)), d,
			  fmt_bytes(r->job.size, c, sizeof(c)), r->job.offset);
	}

	bench_out(b, "\n  %-6s %14s %10s %10s %10s", "pass", "recovery MB/s", "seconds", "cpu s",
		  "open MB/s");
	for (unsigned k = 0; k < r->nfio; k++) {
		snprintf(d, sizeof(d), "fio qd%u", r->fio_depth[k]);
		bench_out(b, " %10s", d);
	}
	bench_out(b, "\n");
	for (unsigned i = 0; i <= o->passes; i++) {
		const struct rec_pass *p = &r->pass[i < o->passes ? i : 0];
		bool med = i == o->passes;

		if (med)
			bench_out(b, "  %-6s %14.1f %10.3f %10.3f %10.1f", "median", s->rec_mbs,
				  s->wall_s, s->cpu_s, s->open_mbs);
		else
			bench_out(b, "  %-6u %14.1f %10.3f %10.3f %10.1f", i + 1, p->mbs,
				  (double)p->wall_ns / 1e9, (double)p->cpu_ns / 1e9, p->open_mbs);
		for (unsigned k = 0; k < r->nfio; k++) {
			double v = med ? s->fio_by_depth[k] : p->fio_mbs[k];

			if (isnan(v))
				bench_out(b, " %10s", "-");
			else
				bench_out(b, " %10.1f", v);
		}
		bench_out(b, "\n");
	}

	bench_out(b,
		  "\n  per pass    %" PRIu64 " checkpoints (%.0f/s), %" PRIu64 " items (%.0f/s), "
		  "%s replayed\n",
		  rep->checkpoints, s->ckpt_per_s, rep->items, s->items_per_s,
		  fmt_bytes(rep->bytes_replayed, a, sizeof(a)));
	bench_out(b,
		  "              %s read in %" PRIu64 " requests, at most %u chained reads in "
		  "flight; %" PRIu64 " records verified\n",
		  fmt_bytes(rep->bytes_read, a, sizeof(a)), rep->read_reqs,
		  rep->max_reads_in_flight, rep->records);
	bench_out(b,
		  "              %.2f bytes read per live log byte (target <= %.2f: %s): the live "
		  "log is recovered at %.1f MB/s\n",
		  s->read_amp, TARGET_READ_AMP, s->read_amp <= TARGET_READ_AMP ? "met" : "NOT met",
		  s->log_mbs);
	if (rep->reread)
		bench_out(b, "              read twice: the checkpoints need more than the hold "
			     "(--recover-mem)\n");
	else
		bench_out(b, "              %s held between verifying and replaying\n",
			  fmt_bytes(rep->held_peak, a, sizeof(a)));
	bench_out(b,
		  "  cpu         recovering thread %.3f s of %.3f s (%.0f%%; parsing at %.0f MB/s "
		  "when not waiting for reads); process %.3f s\n",
		  s->cpu_s, s->wall_s, 100 * s->cpu_s / s->wall_s, s->cpu_mbs, s->proc_cpu_s);
	if (r->fio && !isnan(s->fio_mbs)) {
		bench_out(b,
			  "  ratio       delog_open live MB/s / fio at its best depth (qd%u) = %.3f "
			  "(target >= %.1f: %s)\n",
			  r->fio_depth[s->fio_best], s->ratio, TARGET_RATIO,
			  s->ratio >= TARGET_RATIO ? "met" : "NOT met");
		bench_out(b, "              jrnl_recover live MB/s / fio = %.3f\n",
			  s->log_mbs / s->fio_mbs);
	} else if (o->no_fio)
		bench_out(b, "  ratio       - (fio skipped: --no-fio; target >= %.1f)\n",
			  TARGET_RATIO);
	else if (!r->fio)
		bench_out(b,
			  "  ratio       - (fio is not installed: apt-get install fio; target >= "
			  "%.1f)\n",
			  TARGET_RATIO);
	if (r->fio_err[0])
		bench_out(b, "  fio         %s\n", r->fio_err);
	bench_out(b, "\nbench took %.1f s\n", (double)(now_ns() - b->t0) / 1e9);
}

static void json_pass_array(struct json *j, const char *key, const struct run *r, int what)
{
	json_arr_begin(j, key);
	for (unsigned i = 0; i < r->o->passes; i++) {
		const struct rec_pass *p = &r->pass[i];

		switch (what) {
		case 0:
			json_dbl(j, NULL, p->mbs);
			break;
		case 1:
			json_dbl(j, NULL, (double)p->wall_ns / 1e9);
			break;
		case 2:
			json_dbl(j, NULL, (double)p->cpu_ns / 1e9);
			break;
		case 3:
			json_dbl(j, NULL, (double)p->proc_cpu_ns / 1e9);
			break;
		default:
			json_dbl(j, NULL, p->open_mbs);
			break;
		}
	}
	json_arr_end(j);
}

static void print_json(struct run *r, const struct summary *s)
{
	const struct rec_opts *o = r->o;
	const struct jrnl_report *rep = &r->pass[0].rep;
	bool have_fio = !isnan(s->fio_mbs);
	struct json j;

	bench_json_begin(r->b, &j);
	json_str(&j, "fs_type", r->fs_type);
	json_u64(&j, "size", o->size);
	json_obj_begin(&j, "params");
	json_u64(&j, "sector", r->g.sector);
	json_u64(&j, "logbufs", o->logbufs);
	json_u64(&j, "logbsize", o->logbsize);
	json_u64(&j, "item_size", o->item_size);
	json_u64(&j, "ckpt_items", o->ckpt_items);
	json_u64(&j, "read_chunk", o->read_chunk);
	json_u64(&j, "reads_in_flight", o->inflight);
	json_u64(&j, "passes", o->passes);
	json_bool(&j, "durable_point", !o->no_durable);
	json_u64(&j, "recover_mem", o->recover_mem);
	json_obj_end(&j);
	json_obj_begin(&j, "fill");
	json_u64(&j, "checkpoints", r->f.ckpts);
	json_u64(&j, "items", r->f.items);
	json_u64(&j, "item_bytes", r->f.item_bytes);
	json_u64(&j, "records", r->f.records);
	json_u64(&j, "record_bytes", r->f.record_bytes);
	json_u64(&j, "live_bytes", r->f.live_bytes);
	json_dbl(&j, "live_fraction", r->f.live_fraction);
	json_dbl(&j, "format_s", r->f.format_s);
	json_dbl(&j, "fill_s", r->f.fill_s);
	json_dbl(&j, "fill_mb_per_s", (double)r->f.record_bytes / r->f.fill_s / 1e6);
	json_obj_end(&j);

	json_u64(&j, "bytes_read", rep->bytes_read);
	json_dbl(&j, "recovery_mb_per_s", s->rec_mbs);
	if (have_fio) {
		json_dbl(&j, "fio_mb_per_s", s->fio_mbs);
		json_dbl(&j, "ratio", s->ratio);
		json_bool(&j, "target_met", s->ratio >= TARGET_RATIO);
		json_dbl(&j, "log_ratio", s->log_mbs / s->fio_mbs);
		json_u64(&j, "fio_best_depth", r->fio_depth[s->fio_best]);
	} else {
		json_null(&j, "fio_mb_per_s");
		json_null(&j, "ratio");
		json_null(&j, "target_met");
		json_null(&j, "log_ratio");
		json_null(&j, "fio_best_depth");
	}
	json_dbl(&j, "target_ratio", TARGET_RATIO);
	json_dbl(&j, "recovery_s", s->wall_s);
	json_dbl(&j, "log_mb_per_s", s->log_mbs);
	json_dbl(&j, "read_amplification", s->read_amp);
	json_dbl(&j, "target_read_amplification", TARGET_READ_AMP);
	json_bool(&j, "read_amplification_met", s->read_amp <= TARGET_READ_AMP);
	json_dbl(&j, "open_mb_per_s", s->open_mbs);
	json_u64(&j, "held_bytes", rep->held_peak);
	json_bool(&j, "reread", rep->reread);
	json_u64(&j, "checkpoints", rep->checkpoints);
	json_dbl(&j, "checkpoints_per_s", s->ckpt_per_s);
	json_u64(&j, "items", rep->items);
	json_dbl(&j, "items_per_s", s->items_per_s);
	json_u64(&j, "bytes_replayed", rep->bytes_replayed);
	json_u64(&j, "records", rep->records);
	json_u64(&j, "read_reqs", rep->read_reqs);
	json_u64(&j, "max_reads_in_flight", rep->max_reads_in_flight);
	json_dbl(&j, "cpu_s", s->cpu_s);
	json_dbl(&j, "cpu_fraction", s->cpu_s / s->wall_s);
	json_dbl(&j, "cpu_mb_per_s", s->cpu_mbs);
	json_dbl(&j, "process_cpu_s", s->proc_cpu_s);

	json_obj_begin(&j, "passes");
	json_pass_array(&j, "recovery_mb_per_s", r, 0);
	json_pass_array(&j, "recovery_s", r, 1);
	json_pass_array(&j, "cpu_s", r, 2);
	json_pass_array(&j, "process_cpu_s", r, 3);
	json_pass_array(&j, "open_mb_per_s", r, 4);
	json_arr_begin(&j, "fio_mb_per_s");
	for (unsigned i = 0; i < o->passes; i++)
		json_dbl(&j, NULL, r->pass[i].fio_mbs[s->fio_best]);
	json_arr_end(&j);
	json_obj_end(&j);

	json_obj_begin(&j, "fio");
	json_bool(&j, "installed", r->installed);
	json_bool(&j, "skipped", o->no_fio);
	json_bool(&j, "ran", r->fio_ran);
	if (r->fio) {
		json_str(&j, "ioengine", r->job.ioengine);
		json_u64(&j, "bs", r->job.bs);
		json_arr_begin(&j, "iodepths");
		for (unsigned k = 0; k < r->nfio; k++)
			json_u64(&j, NULL, r->fio_depth[k]);
		json_arr_end(&j);
		json_arr_begin(&j, "mb_per_s_by_depth");
		for (unsigned k = 0; k < r->nfio; k++)
			json_dbl(&j, NULL, s->fio_by_depth[k]);
		json_arr_end(&j);
		json_u64(&j, "offset", r->job.offset);
		json_u64(&j, "bytes", r->job.size);
	}
	json_str(&j, "error", r->fio_err[0] ? r->fio_err : NULL);
	json_obj_end(&j);
	tool_json_geom(&j, "superblock", &r->g);
	tool_json_report(&j, "report", rep);
	bench_json_end(r->b, &j);
}

/* ---- the run ---- */

static int rec_run(struct bench *b, void *state)
{
	const struct rec_opts *o = state;
	struct run *r;
	struct iol_dev_opts dopts;
	struct jrnl_format_opts fo = { .sector = o->sector, .log_size = o->size };
	struct summary s;
	char msg[512];
	uint64_t t0;
	int err, ret = TOOL_EXIT_FAIL;

	r = calloc(1, sizeof(*r));
	if (!r) {
		bench_fail(b, -ENOMEM, NULL, "out of memory");
		return TOOL_EXIT_FAIL;
	}
	r->b = b;
	r->o = o;
	r->fio = fio_find(r->fio_path, sizeof(r->fio_path));
	r->installed = r->fio != NULL;
	if (o->no_fio)
		r->fio = NULL;
	if (bench_target_open(b, DELOG_SB_BYTES + o->size))
		goto out;

	bench_dev_opts(b, &dopts, msg, sizeof(msg));
	err = iol_dev_open(b->t.path, &dopts, &r->dev);
	if (err) {
		bench_fail(b, err, msg[0] ? NULL : b->t.path, "%s",
			   msg[0] ? msg : tool_strerror(err));
		goto out;
	}
	r->backend = iol_dev_backend(r->dev);
	r->fs_type = iol_dev_geom(r->dev)->fs_type;
	if (!b->o.backend)
		b->o.backend = r->backend;

	err = jrnl_sector_check(r->dev, o->sector, msg, sizeof(msg));
	if (err) {
		bench_fail(b, err, b->t.path, "--sector %u: %s", o->sector, msg);
		goto out;
	}
	bench_progress(b, "formatting %s", b->t.path);
	t0 = now_ns();
	err = jrnl_format(r->dev, &fo, &r->g);
	r->f.format_s = (double)(now_ns() - t0) / 1e9;
	if (err) {
		bench_fail(b, err, b->t.path, "cannot format: %s", tool_strerror(err));
		goto out;
	}
	if (bench_interrupted(b) || fill_log(r))
		goto out;
	/* Read-only from here: a writing open holds the log's writer lock, and delog_open
	 * beside a writer recovers a live log (a copy, retries), not a crashed one. */
	iol_dev_close(r->dev);
	dopts.read_only = true;
	err = iol_dev_open(b->t.path, &dopts, &r->dev);
	if (err) {
		r->dev = NULL;
		bench_fail(b, err, b->t.path, "cannot reopen read-only: %s", tool_strerror(err));
		goto out;
	}
	if (passes(r))
		goto out;
	summarise(r, &s);
	if (b->o.json)
		print_json(r, &s);
	else
		print_human(r, &s);
	ret = TOOL_EXIT_OK;
out:
	if (r->dev)
		iol_dev_close(r->dev);
	free(r);
	return ret;
}

const struct bench_workload bench_recovery = {
	.name = "recovery",
	.summary = "recovery read MB/s of a full log (1 GiB), next to fio's sequential read",
	.opts = rec_options,
	.state_size = sizeof(struct rec_opts),
	.defaults = rec_defaults,
	.option = rec_option,
	.check = rec_check,
	.help = rec_help,
	.run = rec_run,
};
