/*
 * helpers.h - shared scaffolding of the engine tests (api.c, policy.c): simulated
 * devices, a self-checking item payload, a recovery collector and scratch files.
 *
 * Why it is built this way:
 *  - Every item the tests log carries a 24-byte payload {a, b, mix(key, a, b)}, so the
 *    recovery callback can tell a whole, correct item from a torn, stale or foreign one
 *    without keeping the original data around (tests with 160,000 transactions).
 *  - The collector (struct coll) is the one recover callback of the suites: it checks
 *    what holds for every recovery (checkpoint sequences consecutive, nitems matches,
 *    every item whole) and records (checkpoint seq, key, a, b) for the test's own,
 *    specific checks afterwards.  It never fails the open itself, so a test sees the
 *    complete picture and can report the first violation with its details.
 *  - Everything is static (inline) so each translation unit takes only what it uses.
 */
#ifndef DELOG_TESTS_ENGINE_HELPERS_H
#define DELOG_TESTS_ENGINE_HELPERS_H

#include <criterion/criterion.h>
#include <delog.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "io.h"
#include "io_sim.h"

#ifndef DELOG_TEST_DIR_DEFAULT
#define DELOG_TEST_DIR_DEFAULT "."
#endif

#define T_MiB (1ull << 20)

/* ---- payload ---- */

struct t_payload {
	uint64_t a, b, c;
};

static inline uint64_t t_mix(uint64_t key, uint64_t a, uint64_t b)
{
	uint64_t z = key ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^ 0x5a5a;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline struct t_payload t_pl(uint64_t key, uint64_t a, uint64_t b)
{
	return (struct t_payload){ a, b, t_mix(key, a, b) };
}

/* Reservation for @n items of payload size (the contract: data + overhead per item). */
#define T_RES(n) ((uint64_t)(n) * (sizeof(struct t_payload) + DELOG_ITEM_OVERHEAD))

/* One transaction with one item; returns the commit's result, *seq its checkpoint. */
static inline int t_commit1(delog *log, uint64_t key, uint64_t a, uint64_t b, uint64_t *seq,
			    bool force)
{
	struct t_payload p = t_pl(key, a, b);
	delog_tx *tx;
	int err;

	err = delog_tx_begin(log, T_RES(1), 0, &tx);
	if (err)
		return err;
	err = delog_tx_log(tx, key, &p, sizeof(p));
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	return force ? delog_tx_commit_force(tx, seq) : delog_tx_commit(tx, seq);
}

/* ---- simulated devices ---- */

static inline struct iol_dev *t_sim(uint64_t bytes, enum iol_sim_latency lat, uint64_t seed,
				    const void *image)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = bytes,
				   .seed = seed,
				   .latency = lat,
				   .image = image };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct iol_dev *dev = NULL;
	int err = iol_dev_open(NULL, &o, &dev);

	cr_assert_eq(err, 0, "sim iol_dev_open: %s", delog_strerror(err));
	return dev;
}

static inline struct delog_options t_opts(enum delog_flush_policy p)
{
	return (struct delog_options){ .size = sizeof(struct delog_options),
				       .flush = p,
				       .flags = DELOG_OPEN_CREATE };
}

static inline delog *t_open_dev(struct iol_dev *dev, const struct delog_options *o)
{
	delog *log = NULL;
	int err = engine_open_dev(dev, o, &log);

	cr_assert_eq(err, 0, "engine_open_dev: %s", delog_strerror(err));
	cr_assert_not_null(log);
	return log;
}

static inline struct delog_stats t_stats(const delog *log)
{
	struct delog_stats st = { .size = sizeof(st) };
	int err = delog_stats(log, &st);

	cr_assert_eq(err, 0, "delog_stats: %s", delog_strerror(err));
	return st;
}

/* The power-cut image of @dev now, as a new (healthy) sim device. */
static inline struct iol_dev *t_crash_copy(struct iol_dev *dev, uint64_t seed,
					   struct iol_sim_crash_info *info)
{
	uint64_t bytes = iol_dev_geom(dev)->size_bytes;
	void *img = malloc(bytes);
	struct iol_dev *out;
	int err;

	cr_assert_not_null(img);
	err = iol_sim_crash(dev, seed, IOL_SIM_STRICT, img, info);
	cr_assert_eq(err, 0, "iol_sim_crash: %s", delog_strerror(err));
	out = t_sim(bytes, IOL_SIM_LAT_NONE, seed, img);
	free(img);
	return out;
}

/* ---- the recovery collector ---- */

struct citem {
	uint64_t seq, key, a, b;
};

struct coll {
	struct citem *v;
	size_t n, cap;
	uint64_t nck, first_seq, last_seq;
	int bad;
	char why[256];
};

static inline void coll_bad(struct coll *c, const char *why)
{
	if (!c->bad++)
		snprintf(c->why, sizeof(c->why), "%s", why);
}

static inline int coll_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
			  size_t n)
{
	struct coll *c = arg;
	char msg[200];

	if (c->nck && ck->seq != c->last_seq + 1) {
		snprintf(msg, sizeof(msg), "checkpoint %llu after %llu",
			 (unsigned long long)ck->seq, (unsigned long long)c->last_seq);
		coll_bad(c, msg);
	}
	if (ck->nitems != n) {
		snprintf(msg, sizeof(msg), "checkpoint %llu: nitems %zu but %zu items",
			 (unsigned long long)ck->seq, ck->nitems, n);
		coll_bad(c, msg);
	}
	if (!c->nck)
		c->first_seq = ck->seq;
	c->nck++;
	c->last_seq = ck->seq;
	for (size_t i = 0; i < n; i++) {
		struct t_payload p;

		if (it[i].len != sizeof(p) || !it[i].data) {
			snprintf(msg, sizeof(msg), "checkpoint %llu key %#llx: len %u",
				 (unsigned long long)ck->seq, (unsigned long long)it[i].key,
				 it[i].len);
			coll_bad(c, msg);
			continue;
		}
		memcpy(&p, it[i].data, sizeof(p));
		if (p.c != t_mix(it[i].key, p.a, p.b)) {
			snprintf(msg, sizeof(msg), "checkpoint %llu key %#llx: payload damaged",
				 (unsigned long long)ck->seq, (unsigned long long)it[i].key);
			coll_bad(c, msg);
			continue;
		}
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 1024;
			struct citem *v = realloc(c->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			c->v = v;
			c->cap = cap;
		}
		c->v[c->n++] = (struct citem){ ck->seq, it[i].key, p.a, p.b };
	}
	return 0;
}

static inline void coll_free(struct coll *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* Find @key (linear; small collections only).  NULL if absent; *count gets copies. */
static inline const struct citem *coll_find(const struct coll *c, uint64_t key, size_t *count)
{
	const struct citem *hit = NULL;
	size_t k = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].key == key) {
			hit = &c->v[i];
			k++;
		}
	}
	if (count)
		*count = k;
	return hit;
}

/* Reopen @dev and collect what recovery hands back. */
static inline delog *t_reopen(struct iol_dev *dev, struct delog_options o, struct coll *c,
			      struct delog_recovery *rec)
{
	o.recover = coll_cb;
	o.recover_arg = c;
	o.recovery = rec;
	o.flags &= ~DELOG_OPEN_FORMAT;
	return t_open_dev(dev, &o);
}

/* ---- scratch files ---- */

static inline const char *t_test_dir(void)
{
	const char *d = getenv("DELOG_TEST_DIR");

	return d && *d ? d : DELOG_TEST_DIR_DEFAULT;
}

/* A new scratch directory under the test dir (caller frees and removes). */
static inline char *t_mkdtemp(const char *tag)
{
	char *p = malloc(4096);

	cr_assert_not_null(p);
	snprintf(p, 4096, "%s/engine-%s-XXXXXX", t_test_dir(), tag);
	cr_assert_not_null(mkdtemp(p), "mkdtemp %s: %s", p, strerror(errno));
	return p;
}

#endif
