/*
 * crash_test.h - scaffolding of the crash-suite Criterion tests (recovery.c, eio.c): sim
 * disks, self-identifying items, a recovery collector, and a driver that runs delog
 * calls on a thread while the test delivers the sim disk's completions one at a time.
 *
 * Why it is built this way:
 *  - Every item carries {gen, n, check} with check = mix(key, gen, n), and its key says
 *    which transaction it belongs to, so a recovery can be judged without keeping the
 *    data: whole (the check), authentic (the key and generation), in place (the
 *    checkpoint sequence the writer recorded).
 *  - Power cuts must land while writes are in flight, so the disk runs in hold mode: a
 *    delog call blocks until the test delivers its I/O.  The driver (drv_*) runs the
 *    calls on their own thread; the test delivers in a seeded random order and, between
 *    any two deliveries, may take crash images (iol_sim_crash) of the live disk.
 *  - Everything is static inline: each test file takes what it uses.
 */
#ifndef DELOG_TESTS_CRASH_TEST_H
#define DELOG_TESTS_CRASH_TEST_H

#include <criterion/criterion.h>
#include <delog.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "io.h"
#include "io_sim.h"

#define CT_LOG_BYTES (4ull << 20) /* the smallest log the format takes */
#define CT_DEV_BYTES (4096 + CT_LOG_BYTES)
#define CT_MAX_TX 4096u

static inline uint64_t ct_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t ct_rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return ct_mix(*s);
}

static inline struct iol_dev *ct_sim(bool hold, uint64_t seed, const void *image)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = CT_DEV_BYTES,
				   .sector = 4096,
				   .seed = seed,
				   .hold = hold,
				   .image = image };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct iol_dev *dev = NULL;
	int err = iol_dev_open(NULL, &o, &dev);

	cr_assert_eq(err, 0, "sim: %s", delog_strerror(err));
	return dev;
}

/* ---- items: key = gen << 40 | n << 8 | i; data {gen, n, check} + filler ---- */

#define CT_KEY(gen, n, i) (((uint64_t)(gen) << 40) | ((uint64_t)(n) << 8) | (uint64_t)(i))

struct ct_pl {
	uint64_t gen, n, check;
};

static inline uint64_t ct_check(uint64_t key, uint64_t gen, uint64_t n, uint32_t len)
{
	return ct_mix(key ^ ct_mix(gen * 31 + n) ^ len);
}

/* One transaction of @items items of @len bytes each (len >= 24); commit, and force if
 * asked.  Returns the first error; *seq gets the checkpoint. */
static inline int ct_tx(delog *log, uint64_t gen, uint64_t n, unsigned items, uint32_t len,
			bool force, uint64_t *seq)
{
	unsigned char *buf = calloc(1, len);
	delog_tx *tx;
	int err;

	cr_assert_not_null(buf);
	err = delog_tx_begin(log, (uint64_t)items * (len + DELOG_ITEM_OVERHEAD), 0, &tx);
	for (unsigned i = 0; !err && i < items; i++) {
		uint64_t key = CT_KEY(gen, n, i);
		struct ct_pl p = { gen, n, ct_check(key, gen, n, len) };

		memcpy(buf, &p, sizeof(p));
		memset(buf + sizeof(p), (int)(n & 0xff), len - sizeof(p));
		err = delog_tx_log(tx, key, buf, len);
		if (err)
			delog_tx_abort(tx);
	}
	free(buf);
	if (err)
		return err;
	err = delog_tx_commit(tx, seq);
	if (!err && force)
		err = delog_force(log, *seq);
	return err;
}

/* ---- what a recovery handed back ---- */

struct ct_tx_seen {
	uint64_t gen, n, seq;
	unsigned items;
};

struct ct_coll {
	struct ct_tx_seen tx[CT_MAX_TX];
	size_t ntx;
	uint64_t nck, first, last;
	uint64_t fp; /* fingerprint: sequence of (seq, key, check) */
	int bad;
	char why[256];
};

static inline void ct_bad(struct ct_coll *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void ct_bad(struct ct_coll *c, const char *fmt, ...)
{
	va_list ap;

	if (c->bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static inline int ct_collect(void *arg, const struct delog_checkpoint *ck,
			     const struct delog_item *it, size_t n)
{
	struct ct_coll *c = arg;

	if (c->nck && ck->seq != c->last + 1)
		ct_bad(c, "checkpoint %llu after %llu", (unsigned long long)ck->seq,
		       (unsigned long long)c->last);
	if (!c->nck)
		c->first = ck->seq;
	c->nck++;
	c->last = ck->seq;
	for (size_t i = 0; i < n; i++) {
		struct ct_pl p;
		uint64_t gen = it[i].key >> 40, tn = (it[i].key >> 8) & 0xffffffffu;
		struct ct_tx_seen *t = c->ntx ? &c->tx[c->ntx - 1] : NULL;

		if (it[i].len < sizeof(p)) {
			ct_bad(c, "item %#llx: %u bytes", (unsigned long long)it[i].key, it[i].len);
			continue;
		}
		memcpy(&p, it[i].data, sizeof(p));
		if (p.gen != gen || p.n != tn ||
		    p.check != ct_check(it[i].key, gen, tn, it[i].len)) {
			ct_bad(c, "item %#llx in checkpoint %llu is damaged",
			       (unsigned long long)it[i].key, (unsigned long long)ck->seq);
			continue;
		}
		c->fp = ct_mix(c->fp ^ ck->seq ^ ct_mix(it[i].key) ^ p.check);
		if (!t || t->gen != gen || t->n != tn || t->seq != ck->seq) {
			if (c->ntx == CT_MAX_TX) {
				ct_bad(c, "too many transactions");
				continue;
			}
			c->tx[c->ntx++] = (struct ct_tx_seen){ gen, tn, ck->seq, 0 };
			t = &c->tx[c->ntx - 1];
		}
		t->items++;
	}
	return 0;
}

static inline const struct ct_tx_seen *ct_find(const struct ct_coll *c, uint64_t gen, uint64_t n)
{
	for (size_t i = 0; i < c->ntx; i++)
		if (c->tx[i].gen == gen && c->tx[i].n == n)
			return &c->tx[i];
	return NULL;
}

/* Open @dev and collect; returns engine_open_dev's result.  *out may be NULL: close. */
static inline int ct_open(struct iol_dev *dev, enum delog_flush_policy p, struct ct_coll *c,
			  delog **out)
{
	struct delog_options o = { .size = sizeof(o),
				   .flush = p,
				   .logbufs = 4,
				   .logbsize = 16384,
				   .flags = DELOG_OPEN_CREATE,
				   .recover = ct_collect,
				   .recover_arg = c };
	delog *log = NULL;
	int err;

	memset(c, 0, sizeof(*c));
	err = engine_open_dev(dev, &o, &log);
	if (err)
		return err;
	if (out)
		*out = log;
	else
		err = delog_close(log);
	return err;
}

/* Recover a copy of @image (a fresh, healthy disk) and close it cleanly. */
static inline int ct_recover_image(const void *image, enum delog_flush_policy p, struct ct_coll *c)
{
	struct iol_dev *dev = ct_sim(false, 1, image);
	int err = ct_open(dev, p, c, NULL);

	iol_dev_close(dev);
	return err;
}

static inline void *ct_crash(struct iol_dev *dev, uint64_t seed, enum iol_sim_crash_profile pr)
{
	void *img = malloc(CT_DEV_BYTES);
	int err;

	cr_assert_not_null(img);
	err = iol_sim_crash(dev, seed, pr, img, NULL);
	cr_assert_eq(err, 0, "iol_sim_crash: %s", delog_strerror(err));
	return img;
}

/* ---- the driver: delog calls on a thread, completions delivered by the test ---- */

struct ct_drv {
	pthread_t th;
	void *(*fn)(void *);
	void *arg;
	atomic_bool done;
};

static inline void *ct_drv_main(void *p)
{
	struct ct_drv *d = p;

	d->fn(d->arg);
	atomic_store(&d->done, true);
	return NULL;
}

static inline void ct_drv_start(struct ct_drv *d, void *(*fn)(void *), void *arg)
{
	d->fn = fn;
	d->arg = arg;
	atomic_store(&d->done, false);
	cr_assert_eq(pthread_create(&d->th, NULL, ct_drv_main, d), 0);
}

/* Deliver one completion (random order); false when none is pending and the thread is
 * done.  Waits (yielding) while the thread computes. */
static inline bool ct_drv_step(struct ct_drv *d, struct iol_dev *dev)
{
	for (;;) {
		if (iol_sim_deliver(dev, 1, IOL_SIM_RANDOM))
			return true;
		if (atomic_load(&d->done) && !iol_sim_pending(dev))
			return false;
		sched_yield();
	}
}

static inline void ct_drv_finish(struct ct_drv *d, struct iol_dev *dev)
{
	while (ct_drv_step(d, dev))
		;
	pthread_join(d->th, NULL);
}

#endif
