/*
 * costs.c - what durable writes cost on a device, measured as `delog probe` measures it
 * (costs.h says why it is made this way): single 4 KiB O_DIRECT writes, writes + flush,
 * FUA writes and idle flushes timed one at a time, and sequential passes with
 * COST_BW_QD requests of COST_BW_BLOCK in flight.  `delog probe` runs the pieces on
 * every backend with its own progress and stop signals; probe_measure_costs runs them
 * once, for `delog bench --compare-flush`, which checks recommend.c's rule with them.
 */
#include "costs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const struct cost_lat_name cost_lat_names[COST_NR_LAT] = {
	[COST_WRITE] = { "write", "write 4K" },
	[COST_WRITE_FLUSH] = { "write_flush", "write 4K + flush" },
	[COST_FUA] = { "fua_write", "write 4K FUA" },
	[COST_FLUSH] = { "flush", "flush (idle)" },
};

double cost_mbs(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / ((double)ns / 1e9) / 1e6 : NAN;
}

static bool stopped(const struct cost_meter *m)
{
	return m->stop && m->stop(m->arg);
}

/* ---- latency ---- */

static uint64_t next_off(struct cost_meter *m)
{
	uint64_t off = m->cursor;

	m->cursor += COST_OP_BYTES;
	if (m->cursor + COST_OP_BYTES > m->region)
		m->cursor = 0;
	return m->base + off;
}

/* One op of @test, timed from first submission to last completion. */
static int lat_op(struct cost_meter *m, struct iol_dev *dev, enum cost_lat test, void *buf,
		  uint64_t *ns, char *err, size_t errlen)
{
	uint32_t wflags = test == COST_FUA ? IOL_FUA : 0;
	bool do_write = test != COST_FLUSH;
	bool do_flush = test == COST_WRITE_FLUSH || test == COST_FLUSH;
	struct iol_req w, f;
	uint64_t off = do_write ? next_off(m) : 0;
	uint64_t t0;
	int rc;

	rc = iol_req_init(&w, dev, 1, IOL_OPF(IOL_OP_WRITE, wflags));
	if (!rc)
		rc = iol_req_add(&w, buf, COST_OP_BYTES);
	if (rc) {
		snprintf(err, errlen, "cannot set up a write request: %s", tool_strerror(rc));
		return rc;
	}
	w.off = off;
	rc = iol_req_init(&f, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));
	if (rc) {
		iol_req_release(&w);
		snprintf(err, errlen, "cannot set up a flush request: %s", tool_strerror(rc));
		return rc;
	}

	t0 = now_ns();
	rc = do_write ? iol_submit_wait(&w) : 0;
	if (!rc && do_flush)
		rc = iol_submit_wait(&f);
	*ns = now_ns() - t0;

	iol_req_release(&w);
	iol_req_release(&f);
	if (rc)
		snprintf(err, errlen, "%s%s: %s", do_write ? "4 KiB write" : "flush",
			 do_write && do_flush ? " + flush" : "", tool_strerror(rc));
	return rc;
}

static int lat_test_run(struct cost_meter *m, struct iol_dev *dev, const char *be,
			enum cost_lat test, void *buf, struct lat_stats *st, char *err,
			size_t errlen)
{
	uint64_t ns;
	int rc;

	for (unsigned i = 0; i < COST_WARMUP_OPS; i++) {
		rc = lat_op(m, dev, test, buf, &ns, err, errlen);
		if (rc)
			return rc;
	}
	for (uint64_t i = 0; i < m->ops; i++) {
		if (stopped(m))
			return -EINTR;
		rc = lat_op(m, dev, test, buf, &m->samples[i], err, errlen);
		if (rc)
			return rc;
		if (m->on_op)
			m->on_op(m->arg, be, test, i + 1, m->ops);
	}
	lat_stats_compute(m->samples, m->ops, st);
	return 0;
}

int cost_lat_measure(struct cost_meter *m, struct iol_dev *dev, const char *backend, void *buf,
		     struct lat_stats lat[COST_NR_LAT], char *err, size_t errlen)
{
	int rc = cost_flush(dev, err, errlen);

	for (int t = 0; !rc && t < COST_NR_LAT; t++)
		rc = lat_test_run(m, dev, backend, (enum cost_lat)t, buf, &lat[t], err, errlen);
	return rc;
}

/* ---- bandwidth: COST_BW_QD requests of COST_BW_BLOCK in flight ---- */

/*
 * One pass: each slot's completion callback reissues the slot at the next offset (every
 * backend allows submitting from a callback), so the queue never waits for the
 * submitting thread to be scheduled, as fio's reap-and-resubmit loop does not.
 */
static void bw_end_io(struct iol_req *req);

/* (Re)issue @s at @off.  Returns 0 or the submission error. */
static int bw_issue(struct cost_bw_slot *s, uint64_t off)
{
	struct cost_bw *bw = s->bw;
	int rc = iol_req_init(&s->req, bw->dev, 1, IOL_OPF(bw->op, 0));

	if (!rc)
		rc = iol_req_add(&s->req, s->buf, COST_BW_BLOCK);
	if (rc)
		return rc;
	s->req.off = bw->base + off;
	s->req.end_io = bw_end_io;
	s->req.priv = s;
	return iol_submit(&s->req);
}

/* Take the next offset for a slot, or retire the slot (with @err, if any). */
static bool bw_next(struct cost_bw *bw, int err, uint64_t err_off, uint64_t *off)
{
	bool more;

	pthread_mutex_lock(&bw->lock);
	if (err && !bw->err) {
		bw->err = err;
		bw->err_off = err_off;
	}
	more = !bw->err && !bw->stop && bw->next < bw->end;
	if (more) {
		*off = bw->next;
		bw->next += COST_BW_BLOCK;
	} else if (--bw->inflight == 0) {
		pthread_cond_signal(&bw->cond);
	}
	pthread_mutex_unlock(&bw->lock);
	return more;
}

static void bw_end_io(struct iol_req *req)
{
	struct cost_bw_slot *s = req->priv;
	int status = atomic_load(&req->status);
	uint64_t off = req->off - s->bw->base;

	iol_req_release(req);
	while (bw_next(s->bw, status, off, &off)) {
		status = bw_issue(s, off);
		if (!status)
			return;
		iol_req_release(&s->req); /* rejected: its end_io will not run */
	}
}

int cost_bw_setup(struct cost_bw *bw, struct iol_dev *dev, bool zero)
{
	memset(bw, 0, sizeof(*bw));
	pthread_mutex_init(&bw->lock, NULL);
	pthread_cond_init(&bw->cond, NULL);
	bw->dev = dev;
	for (unsigned i = 0; i < COST_BW_QD; i++) {
		bw->slot[i].bw = bw;
		bw->slot[i].buf = iol_buf_alloc(dev, COST_BW_BLOCK);
		if (!bw->slot[i].buf)
			return -ENOMEM;
		/* Not all zeroes for the measured writes, so nothing below can take a shortcut
		 * for zero pages. */
		memset(bw->slot[i].buf, zero ? 0 : 0x5a + (int)i, COST_BW_BLOCK);
	}
	return 0;
}

void cost_bw_teardown(struct cost_bw *bw)
{
	for (unsigned i = 0; i < COST_BW_QD; i++)
		free(bw->slot[i].buf);
	pthread_mutex_destroy(&bw->lock);
	pthread_cond_destroy(&bw->cond);
}

int cost_bw_pass(const struct cost_meter *m, struct cost_bw *bw, enum iol_op op, uint64_t bytes,
		 uint64_t *ns, char *err, size_t errlen)
{
	struct timespec ts;
	uint64_t t0, off = 0;
	int rc;

	pthread_mutex_lock(&bw->lock);
	bw->op = op;
	bw->base = m->base;
	bw->next = 0;
	bw->end = bytes;
	bw->err = 0;
	bw->stop = false;
	bw->inflight = COST_BW_QD; /* each slot retires itself through bw_next */
	pthread_mutex_unlock(&bw->lock);

	t0 = now_ns();
	for (unsigned i = 0; i < COST_BW_QD; i++) {
		struct cost_bw_slot *s = &bw->slot[i];
		int st = 0;

		while (bw_next(bw, st, off, &off)) {
			st = bw_issue(s, off);
			if (!st)
				break;
			iol_req_release(&s->req);
		}
	}
	pthread_mutex_lock(&bw->lock);
	while (bw->inflight) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000; /* poll for a stop every 50 ms */
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&bw->cond, &bw->lock, &ts);
		if (bw->inflight && stopped(m))
			bw->stop = true;
	}
	rc = bw->stop ? -EINTR : bw->err;
	pthread_mutex_unlock(&bw->lock);
	*ns = now_ns() - t0;
	if (rc && rc != -EINTR)
		snprintf(err, errlen, "sequential %s at offset %" PRIu64 ": %s",
			 op == IOL_OP_READ ? "read" : "write", bw->base + bw->err_off,
			 tool_strerror(rc));
	return rc;
}

int cost_flush(struct iol_dev *dev, char *err, size_t errlen)
{
	struct iol_req f;
	int rc = iol_req_init(&f, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));

	if (!rc)
		rc = iol_submit_wait(&f);
	iol_req_release(&f);
	if (rc)
		snprintf(err, errlen, "flush: %s", tool_strerror(rc));
	return rc;
}

/* ---- the costs the recommendation is made from (recommend.c) ---- */

void cost_from(const struct lat_stats lat[COST_NR_LAT], double write_mbs, const struct iol_geom *g,
	       struct probe_costs *c)
{
	c->write_us = lat[COST_WRITE].median_us;
	c->write_flush_us = lat[COST_WRITE_FLUSH].median_us;
	c->fua_us = lat[COST_FUA].median_us;
	c->flush_us = lat[COST_FLUSH].median_us;
	c->seq_write_mbs = write_mbs;
	c->volatile_cache = g->volatile_cache;
	c->fua = g->fua;
}

int probe_measure_costs(struct iol_dev *dev, uint64_t off, uint64_t bytes, uint64_t ops,
			struct probe_costs *c, char *err, size_t errlen)
{
	struct lat_stats lat[COST_NR_LAT];
	/* No stop: the caller polls its own signals. */
	struct cost_meter m = { .base = off, .ops = ops ? ops : 1 };
	struct cost_bw bw;
	uint64_t ns = 0;
	void *buf;
	int rc;

	memset(c, 0, sizeof(*c));
	m.region = bytes - bytes % COST_BW_BLOCK;
	if (m.region < COST_BW_BLOCK * COST_BW_QD) {
		snprintf(err, errlen, "the measured region is smaller than %u MiB",
			 (COST_BW_BLOCK * COST_BW_QD) >> 20);
		return -EINVAL;
	}
	m.samples = calloc(m.ops, sizeof(*m.samples));
	buf = iol_buf_alloc(dev, COST_OP_BYTES);
	if (!m.samples || !buf) {
		free(m.samples);
		free(buf);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(buf, 0xa5, COST_OP_BYTES);
	rc = cost_lat_measure(&m, dev, "costs", buf, lat, err, errlen);
	free(buf);
	free(m.samples);
	if (rc)
		return rc;
	rc = cost_bw_setup(&bw, dev, false);
	if (rc)
		snprintf(err, errlen, "cannot allocate bandwidth buffers");
	else
		rc = cost_bw_pass(&m, &bw, IOL_OP_WRITE, m.region, &ns, err, errlen);
	cost_bw_teardown(&bw);
	if (!rc)
		rc = cost_flush(dev, err, errlen);
	if (rc)
		return rc;
	cost_from(lat, cost_mbs(m.region, ns), iol_dev_geom(dev), c);
	return 0;
}
