/*
 * probe.h - the flush policy and log buffers `delog probe` recommends (recommend.c) and
 * the measurement it makes them from (probe.c).  `delog bench --compare-flush`
 * (bench/bench_compare.c) borrows both to check the rule: the one place a wing uses
 * another's code rather than common/'s.
 */
#ifndef DELOG_TOOLS_CLI_PROBE_H
#define DELOG_TOOLS_CLI_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include <delog.h>

/* What probe measured on one backend (latency medians in microseconds). */
struct probe_costs {
	double write_us;          /* W: one 4 KiB write */
	double write_flush_us;    /* WF: a 4 KiB write, then a flush */
	double fua_us;            /* FU: one 4 KiB FUA write */
	double flush_us;          /* F: a flush of an idle cache */
	double seq_write_mbs;     /* sequential O_DIRECT write, 10^6 bytes/s */
	int volatile_cache;       /* 1 write back, 0 write through, -1 unknown */
	int fua;                  /* 1 native FUA, 0 none, -1 unknown */
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
 * probe.c: measure @c on an open device the way `delog probe` does (the same code):
 * the four latency medians over @ops ops each (at least 1) on 4 KiB blocks in
 * [@off, @off + @bytes), and one sequential write pass over that range (8 x 1 MiB in
 * flight; @bytes at least 8 MiB), then a flush.  The range is overwritten.  The device's
 * volatile cache and FUA come from its geometry.  0, or a negative errno with the
 * reason in @err.
 */
struct iol_dev;
int probe_measure_costs(struct iol_dev *dev, uint64_t off, uint64_t bytes, uint64_t ops,
			struct probe_costs *c, char *err, size_t errlen);

#endif
