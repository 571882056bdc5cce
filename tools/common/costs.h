/*
 * costs.h - what durable writes cost on a device, measured the way `delog probe` measures
 * it (costs.c), and the rule that turns the costs into a flush policy and log buffers
 * (recommend.c).  `delog probe` (cli/probe.c) prints both; `delog bench --compare-flush`
 * (bench/bench_compare.c) measures the same costs on its target and checks the rule.
 * Both wings use it from here, below them, so neither depends on the other.
 *
 * The measurement, and why it is made this way (cli/probe.c's top comment has the rest):
 *  - Latency ops are submitted one at a time and waited for (iol_submit_wait): the number
 *    wanted is what one synchronous commit costs, so nothing may overlap it.  A few
 *    unmeasured ops precede each test; percentiles are nearest-rank.
 *  - Writes go to distinct 4 KiB offsets, cycling through the measured range, so no test
 *    rewrites a block that the previous op left in the cache.
 *  - Bandwidth keeps exactly COST_BW_QD requests of COST_BW_BLOCK in flight: each slot's
 *    completion reissues it at the next offset, so the queue never waits for the
 *    submitting thread to be scheduled.
 */
#ifndef DELOG_TOOLS_COMMON_COSTS_H
#define DELOG_TOOLS_COMMON_COSTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <delog.h>

#include "io.h"
#include "util.h"

#define COST_OP_BYTES 4096u           /* latency op size */
#define COST_BW_BLOCK (1024u * 1024u) /* bandwidth request size */
#define COST_BW_QD 8u                 /* bandwidth queue depth */
#define COST_WARMUP_OPS 8u            /* unmeasured ops before each latency test */

/* What probe measured on one backend (latency medians in microseconds). */
struct probe_costs {
	double write_us;       /* W: one 4 KiB write */
	double write_flush_us; /* WF: a 4 KiB write, then a flush */
	double fua_us;         /* FU: one 4 KiB FUA write */
	double flush_us;       /* F: a flush of an idle cache */
	double seq_write_mbs;  /* sequential O_DIRECT write, 10^6 bytes/s */
	int volatile_cache;    /* 1 write back, 0 write through, -1 unknown */
	int fua;               /* 1 native FUA, 0 none, -1 unknown */
};

struct probe_rec {
	enum delog_flush_policy policy; /* sync or single; never none (async never wins) */
	unsigned logbufs;               /* DELOG_LOGBUFS_MIN..MAX */
	uint32_t logbsize;              /* a power of two, DELOG_LOGBSIZE_MIN..MAX */
	char reason[640];               /* the rule that decided, with the numbers */
};

/* The rule (recommend.c's top comment, docs/BENCH.md): pure, reads only @c. */
void probe_recommend(const struct probe_costs *c, struct probe_rec *r);

/*
 * Measure @c on an open device the way `delog probe` does (the same code, below): the
 * four latency medians over @ops ops each (at least 1) on 4 KiB blocks in
 * [@off, @off + @bytes), and one sequential write pass over that range (8 x 1 MiB in
 * flight; @bytes at least 8 MiB), then a flush.  The range is overwritten.  The device's
 * volatile cache and FUA come from its geometry.  0, or a negative errno with the
 * reason in @err.
 */
int probe_measure_costs(struct iol_dev *dev, uint64_t off, uint64_t bytes, uint64_t ops,
			struct probe_costs *c, char *err, size_t errlen);

/* ---- the pieces probe_measure_costs is made of, which `delog probe` runs itself ---- */

enum cost_lat {
	COST_WRITE,
	COST_WRITE_FLUSH,
	COST_FUA,
	COST_FLUSH,
	COST_NR_LAT
};

/* Each latency test's JSON key ("write_flush") and table label ("write 4K + flush"). */
extern const struct cost_lat_name {
	const char *key, *label;
} cost_lat_names[COST_NR_LAT];

/* A measurement over [base, base + region) of a device. */
struct cost_meter {
	uint64_t base, region;
	uint64_t cursor;   /* next latency op, from base */
	uint64_t ops;      /* measured ops per latency test */
	uint64_t *samples; /* room for ops of them */
	/* Polled between ops and while a pass waits: true stops it with -EINTR (NULL: never). */
	bool (*stop)(void *arg);
	/* After each measured latency op (NULL: nothing): for a progress line. */
	void (*on_op)(void *arg, const char *backend, enum cost_lat test, uint64_t done,
		      uint64_t total);
	void *arg;
};

/* The four latency tests in turn on @dev (named @backend for on_op), from a clean cache
 * (a flush first), with the 4 KiB O_DIRECT buffer @buf.  0 or a negative errno, the
 * reason in @err. */
int cost_lat_measure(struct cost_meter *m, struct iol_dev *dev, const char *backend, void *buf,
		     struct lat_stats lat[COST_NR_LAT], char *err, size_t errlen);

struct cost_bw;

struct cost_bw_slot {
	struct iol_req req;
	void *buf;
	struct cost_bw *bw;
};

/* The bandwidth passes' state: COST_BW_QD slots of COST_BW_BLOCK each. */
struct cost_bw {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct iol_dev *dev;
	enum iol_op op;
	uint64_t base;      /* added to every offset (the range's start) */
	uint64_t next, end; /* Locked: next offset to issue, end of the pass */
	unsigned inflight;  /* Locked: slots issued and not yet finished */
	bool stop;          /* Locked: interrupted, issue nothing more */
	int err;            /* Locked: first error */
	uint64_t err_off;
	struct cost_bw_slot slot[COST_BW_QD];
};

/* Buffers for passes on @dev: zeroes (@zero, for a zero-fill) or a pattern that is not.
 * 0 or -ENOMEM; cost_bw_teardown either way. */
int cost_bw_setup(struct cost_bw *bw, struct iol_dev *dev, bool zero);
void cost_bw_teardown(struct cost_bw *bw);
/* One sequential pass of @op over [m->base, m->base + @bytes); *@ns the time it took.
 * 0, -EINTR (m->stop), or the first error with the reason in @err. */
int cost_bw_pass(const struct cost_meter *m, struct cost_bw *bw, enum iol_op op, uint64_t bytes,
		 uint64_t *ns, char *err, size_t errlen);

/* A flush of @dev, waited for; a failure described in @err.  0 or a negative errno. */
int cost_flush(struct iol_dev *dev, char *err, size_t errlen);

/* @bytes over @ns in MB/s (10^6 bytes/s); NaN for 0 ns. */
double cost_mbs(uint64_t bytes, uint64_t ns);

/* The costs the rule reads, from the latency tests, the write bandwidth and @g. */
void cost_from(const struct lat_stats lat[COST_NR_LAT], double write_mbs, const struct iol_geom *g,
	       struct probe_costs *c);

#endif
