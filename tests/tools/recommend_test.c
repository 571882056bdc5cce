/*
 * recommend_test.c - the probe's recommendation rule (tools/common/recommend.c) on made-up
 * costs, run by ctest as tools.recommend.
 *
 * Why: `delog probe` and `delog bench --compare-flush` both print what the rule says, and
 * a device rarely shows every branch (this machine's disk has a volatile cache and no
 * FUA), so each branch of the documented rule (docs/BENCH.md, "probe's recommendation")
 * is fed a cost tuple here and its answer checked: write through -> sync; no FUA or FUA
 * unknown -> single; native FUA with F + FU within 1.1 x WF -> sync, above it -> single;
 * and the geometry: the smallest power of two >= MB/s x WF bytes, clamped, 2 + the
 * buffers that fit in one round trip, clamped to the ring's most; never none or async; a
 * reason that ends with the geometry chosen and says when the ring's most capped it.
 */
#include "common/costs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fails;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			fails++;                                                                   \
		}                                                                                  \
	} while (0)

static struct probe_rec run(double w, double wf, double fu, double f, double mbs, int cache,
			    int fua)
{
	struct probe_costs c = { .write_us = w,
				 .write_flush_us = wf,
				 .fua_us = fu,
				 .flush_us = f,
				 .seq_write_mbs = mbs,
				 .volatile_cache = cache,
				 .fua = fua };
	struct probe_rec r;
	char tail[64];
	size_t n, k;

	probe_recommend(&c, &r);
	CHECK(r.policy == DELOG_FLUSH_SYNC || r.policy == DELOG_FLUSH_SINGLE,
	      "policy %d is neither sync nor single", r.policy);
	CHECK(r.logbufs >= DELOG_LOGBUFS_MIN && r.logbufs <= DELOG_LOGBUFS_MAX, "logbufs %u",
	      r.logbufs);
	CHECK(r.logbsize >= DELOG_LOGBSIZE_MIN && r.logbsize <= DELOG_LOGBSIZE_MAX &&
		      !(r.logbsize & (r.logbsize - 1)),
	      "logbsize %u", r.logbsize);
	CHECK(r.reason[0], "empty reason");
	/* The reason ends with the geometry chosen (not a count above the ring's most). */
	snprintf(tail, sizeof(tail), ": %u x %u KiB", r.logbufs, r.logbsize >> 10);
	n = strlen(r.reason);
	k = strlen(tail);
	CHECK(n >= k && !strcmp(r.reason + n - k, tail), "reason does not end with '%s': %s", tail,
	      r.reason);
	return r;
}

#define POLICY(want, ...)                                                                          \
	do {                                                                                       \
		struct probe_rec r_ = run(__VA_ARGS__);                                            \
		CHECK(r_.policy == (want), "(%s) gave %s, want %s: %s", #__VA_ARGS__,              \
		      delog_flush_policy_name(r_.policy), delog_flush_policy_name(want),           \
		      r_.reason);                                                                  \
	} while (0)

int main(void)
{
	struct probe_rec r;

	/* W, WF, FU, F, MB/s, volatile cache, FUA */
	/* 1. write through: sync, whatever FUA says and whatever the flush costs. */
	POLICY(DELOG_FLUSH_SYNC, 20, 25, 22, 5, 2000, 0, 0);
	POLICY(DELOG_FLUSH_SYNC, 20, 25, 400, 300, 2000, 0, 1);
	POLICY(DELOG_FLUSH_SYNC, 20, 25, 22, 5, 2000, 0, -1);
	/* 3. no FUA, or FUA unknown: single, even where F + FU < WF. */
	POLICY(DELOG_FLUSH_SINGLE, 50, 120, 125, 70, 1600, 1, 0);
	POLICY(DELOG_FLUSH_SINGLE, 50, 120, 60, 10, 1600, 1, 0);
	POLICY(DELOG_FLUSH_SINGLE, 50, 120, 60, 10, 1600, -1, -1);
	POLICY(DELOG_FLUSH_SINGLE, 50, 120, 60, 10, 1600, 1, -1);
	/* 2. native FUA and F + FU <= 1.1 x WF: sync (the sim profiles' shape) ... */
	POLICY(DELOG_FLUSH_SYNC, 70, 1830, 110, 1795, 490, 1, 1);
	POLICY(DELOG_FLUSH_SYNC, 10, 100, 20, 60, 3000, 1, 1);
	POLICY(DELOG_FLUSH_SYNC, 10, 100, 50, 60, 3000, -1, 1); /* 110 = 1.1 x 100 */
	/* ... and single when the FUA write makes F + FU dearer than that. */
	POLICY(DELOG_FLUSH_SINGLE, 10, 100, 60, 60, 3000, 1, 1);
	POLICY(DELOG_FLUSH_SINGLE, 10, 100, 20, 200, 3000, 1, 1);
	/* Not measured (NAN): never sync on a volatile cache. */
	POLICY(DELOG_FLUSH_SINGLE, NAN, NAN, NAN, NAN, NAN, 1, 1);

	/* Geometry: B = MB/s x WF bytes. */
	r = run(50, 120, 125, 70, 1000, 1, 0); /* B = 120000 B: 128 KiB, 2 + 1 */
	CHECK(r.logbsize == 128u << 10 && r.logbufs == 3, "B 120000: %u x %u", r.logbufs,
	      r.logbsize);
	r = run(5, 10, 12, 4, 100, 1, 0); /* B = 1000 B: the minimum 16 KiB, 2 + 1 */
	CHECK(r.logbsize == DELOG_LOGBSIZE_MIN && r.logbufs == 3, "B 1000: %u x %u", r.logbufs,
	      r.logbsize);
	r = run(70, 1830, 110, 1795, 490, 1, 1); /* B = 896700 B: 256 KiB, 2 + 4 */
	CHECK(r.logbsize == DELOG_LOGBSIZE_MAX && r.logbufs == 6, "B 896700: %u x %u", r.logbufs,
	      r.logbsize);
	r = run(70, 20000, 110, 19000, 500, 1, 0); /* B = 10 MB: clamped, 256 KiB x 8 */
	CHECK(r.logbsize == DELOG_LOGBSIZE_MAX && r.logbufs == DELOG_LOGBUFS_MAX,
	      "B 10 MB: %u x %u", r.logbufs, r.logbsize);
	/* 2 + 39 buffers wanted: the reason says the ring caps them at 8. */
	CHECK(strstr(r.reason, "2 + 39 of them, capped at the ring's 8"), "B 10 MB: %s", r.reason);
	r = run(70, 1830, 110, 1795, 490, 1, 1); /* 2 + 4 = 6: no cap to speak of */
	CHECK(!strstr(r.reason, "capped"), "B 896700: %s", r.reason);
	r = run(0, 0, 0, 0, 0, 1, 1); /* nothing measured: the smallest ring */
	CHECK(r.logbsize == DELOG_LOGBSIZE_MIN && r.logbufs == DELOG_LOGBUFS_MIN, "B 0: %u x %u",
	      r.logbufs, r.logbsize);

	if (fails) {
		fprintf(stderr, "recommend_test: %d check(s) failed\n", fails);
		return 1;
	}
	printf("recommend_test: all checks passed\n");
	return 0;
}
