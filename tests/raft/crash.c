/*
 * crash.c - libdelog-raft's io under power cuts (raft.crash, Criterion).
 *
 * One node's log on delog's simulated disk in hold mode (its completions wait for the
 * test; iolayer/include/io_sim.h).  The test thread drives the io as C-Raft would
 * (set_term, set_vote, appends with several in flight, truncations, snapshots with
 * trailing entries, whose releases let the log wrap, and installed snapshots) on its
 * libuv loop;
 * a deliverer thread owns the disk: before each single completion it delivers, it takes
 * power-cut images of the disk (strict and garble resolutions of the unstable sectors),
 * opens each with a fresh io (draft_init on a sim disk made from the image) and loads it.
 *
 * The check, for every image: load succeeds, and what it returns (term, vote, every
 * entry's index, term and payload) is exactly the model's state after some prefix of
 * the calls, k of them, with acked <= k <= started:
 *  - acked: calls acknowledged before the image was taken (set_term / set_vote returned,
 *    or the append's callback ran; each acknowledges every call before it too, as the
 *    io's records form one ordered stream);
 *  - started: calls begun before the image was taken ends (read after it).
 * So term and vote are at least as new as any acknowledged, and the entries are the log
 * as it was at one moment, containing every entry whose callback ran: a prefix of the
 * history, never a mix.  The model's state after each call is fingerprinted before the
 * call starts, so the deliverer compares fingerprints only.  A snapshot counts as begun
 * when snapshot_put is called (its records are committed later, on the loop, and the
 * driver issues nothing else until its callback) and acknowledged by its callback.
 * Snapshot data files live on the real file system (they are written and synced before
 * any record names them); each check links them into a directory of its own, since the
 * checking io removes the files its log does not name.
 *
 * Sessions chain: each next one starts from the durable media the previous one left
 * (closed cleanly), so recovery of a reopened log and its continuing keys are covered;
 * every third session starts over on a fresh disk, before the 4 MiB log fills.
 * Each test (one per crash-safe flush policy) runs sessions until RAFT_CRASH_STATES
 * states were checked.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"
#include "io.h"
#include "io_sim.h"

#ifndef RAFT_CRASH_STATES
#define RAFT_CRASH_STATES 3400
#endif

#define CR_DEV_BYTES (4096 + (4ull << 20))
#define CR_OPS 160    /* calls per session */
#define CR_MAXE 4096  /* entries in the model */
#define CR_IMAGES 3   /* images per delivery */
#define CR_INFLIGHT 4 /* appends in flight at most */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix(*s);
}

/* ---- the model ---- */

struct ment {
	raft_term term;
	uint64_t sum;
};

struct model {
	raft_term term;
	raft_id vote;
	raft_index snap, first; /* the snapshot's index (0: none); e[0]'s index */
	raft_term snap_term;
	uint64_t snap_sum; /* checksum of the snapshot's data */
	size_t n;          /* entries first..first + n - 1 */
	struct ment e[CR_MAXE];
};

static uint64_t fp_add(uint64_t h, uint64_t v)
{
	return mix(h ^ v) + 0x632be59bd9b4e019ull;
}

static uint64_t model_fp(const struct model *m)
{
	uint64_t h = fp_add(fp_add(fp_add(0, m->term), m->vote), m->n);

	h = fp_add(fp_add(fp_add(fp_add(h, m->snap), m->snap_term), m->snap_sum), m->first);

	for (size_t i = 0; i < m->n; i++)
		h = fp_add(fp_add(h, m->e[i].term), m->e[i].sum);
	return h;
}

static void payload(unsigned char *p, size_t len, raft_index index, uint64_t gen)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)((index * 31 + gen * 17 + i * 7) & 0xff);
}

/* ---- shared between the driver and the deliverer ---- */

struct run {
	struct iol_dev *dev;
	char *dir, *cdir; /* the session's directory; the checks' */
	enum delog_flush_policy flush;
	uint64_t fp[CR_OPS + 1]; /* state after k calls of this session */
	_Atomic uint64_t started, acked;
	atomic_bool stop;
	uint64_t seed;
	unsigned long states, events, snaps;
	int bad;
	char why[512];
	unsigned char *image;
};

static int open_dev(void *arg, const char *path, const struct delog_options *o, delog **out)
{
	(void)path;
	return delog_open_dev(arg, o, out);
}

static struct iol_dev *sim_dev(bool hold, uint64_t seed, const void *image)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = CR_DEV_BYTES,
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

static void verdict(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verdict(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

static void closed_cb(struct raft_io *io)
{
	*(volatile bool *)io->data = true;
}

/* The checks' directory: exactly the session's snapshot data files, linked. */
static void link_snapshots(struct run *r)
{
	char from[4200], to[4200];
	struct dirent *de;
	DIR *d;

	d = opendir(r->cdir);
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "snapshot-", 9) == 0) {
			snprintf(to, sizeof(to), "%s/%s", r->cdir, de->d_name);
			cr_assert_eq(unlink(to), 0, "unlink %s", to);
		}
	closedir(d);
	d = opendir(r->dir);
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, "snapshot-", 9) != 0 || l < 4 ||
		    strcmp(de->d_name + l - 4, ".dat") != 0)
			continue;
		snprintf(from, sizeof(from), "%s/%s", r->dir, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", r->cdir, de->d_name);
		/* a file the session removes meanwhile is one no durable record needs */
		if (link(from, to) != 0)
			cr_assert_eq(errno, ENOENT, "link %s: %s", from, strerror(errno));
	}
	closedir(d);
}

/* Load the image with a fresh io and compare with the model's fingerprints. */
static void check_image(struct run *r, uint64_t acked, uint64_t started)
{
	struct delog_raft_options o = { .size = sizeof(o), .flush = r->flush };
	struct iol_dev *dev = sim_dev(false, r->seed, r->image);
	struct raft_io io = { 0 };
	struct th_loaded l;
	volatile bool closed = false;
	uv_loop_t loop;
	uint64_t h;
	int rv;

	cr_assert_eq(uv_loop_init(&loop), 0);
	link_snapshots(r);
	rv = draft_init(&io, &loop, r->cdir, NULL, &o, open_dev, dev);
	cr_assert_eq(rv, 0, "%s", io.errmsg);
	cr_assert_eq(io.init(&io, 1, "sim"), 0);
	rv = io.load(&io, &l.term, &l.vote, &l.snap, &l.start, &l.ents, &l.n);
	if (rv) {
		verdict(r, "state %lu: load failed: %d %s", r->states, rv, io.errmsg);
	} else {
		h = fp_add(fp_add(fp_add(0, l.term), l.vote), l.n);
		h = fp_add(h, l.snap ? l.snap->index : 0);
		h = fp_add(h, l.snap ? l.snap->term : 0);
		h = fp_add(h, l.snap ? draft_sum(0, l.snap->bufs[0].base, l.snap->bufs[0].len) : 0);
		h = fp_add(h, l.start);
		for (size_t i = 0; i < l.n; i++)
			h = fp_add(fp_add(h, l.ents[i].term),
				   draft_sum(0, l.ents[i].buf.base, l.ents[i].buf.len));
		bool found = false;

		for (uint64_t k = acked; k <= started && k <= CR_OPS && !found; k++)
			found = r->fp[k] == h;
		if (!found)
			verdict(r,
				"state %lu: recovered term %llu vote %llu %zu entries: not the "
				"state after any of calls %llu..%llu of the session",
				r->states, (unsigned long long)l.term, (unsigned long long)l.vote,
				l.n, (unsigned long long)acked, (unsigned long long)started);
		th_loaded_free(&l);
	}
	io.data = (void *)&closed;
	io.close(&io, closed_cb);
	while (!closed)
		uv_run(&loop, UV_RUN_ONCE);
	delog_raft_close(&io);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	iol_dev_close(dev);
}

static void *deliverer(void *arg)
{
	struct run *r = arg;

	while (!atomic_load(&r->stop)) {
		uint64_t a, s;

		if (iol_sim_pending(r->dev) == 0) {
			usleep(20);
			continue;
		}
		a = atomic_load(&r->acked);
		for (int j = 0; j < CR_IMAGES; j++) {
			int err = iol_sim_crash(r->dev, rnd(&r->seed),
						j % 2 ? IOL_SIM_GARBLE : IOL_SIM_STRICT, r->image,
						NULL);

			if (err) {
				verdict(r, "iol_sim_crash: %s", delog_strerror(err));
				break;
			}
			s = atomic_load(&r->started);
			check_image(r, a, s);
			r->states++;
		}
		iol_sim_deliver(r->dev, 1, IOL_SIM_RANDOM);
		r->events++;
	}
	return NULL;
}

/* ---- the driver ---- */

struct app {
	struct raft_io_append req;
	struct run *r;
	uint64_t op; /* calls up to and including this one */
	unsigned *inflight;
	int status;
	struct raft_entry e[4];
};

static void app_cb(struct raft_io_append *req, int status)
{
	struct app *a = req->data;
	uint64_t cur = atomic_load(&a->r->acked);

	if (status)
		verdict(a->r, "append callback status %d", status);
	else
		while (a->op > cur && !atomic_compare_exchange_weak(&a->r->acked, &cur, a->op))
			;
	(*a->inflight)--;
	for (int i = 0; i < 4; i++)
		raft_free(a->e[i].buf.base);
	free(a);
}

static void ack(struct run *r, uint64_t op)
{
	uint64_t cur = atomic_load(&r->acked);

	while (op > cur && !atomic_compare_exchange_weak(&r->acked, &cur, op))
		;
}

/* Call k does nothing (the drawn call did not apply): the same state again. */
static void noop(struct run *r, struct model *m, uint64_t k)
{
	r->fp[k] = model_fp(m);
	atomic_store(&r->started, k);
}

struct put {
	struct raft_io_snapshot_put req;
	volatile bool done;
	int status;
};

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
	struct put *p = req->data;

	p->status = status;
	p->done = true;
}

/* Call k: a snapshot at m->snap keeping @trailing entries; waits for its callback. */
static void snapshot(struct run *r, struct raft_io *io, uv_loop_t *loop, struct model *m,
		     uint64_t k, unsigned trailing, uint64_t *seed)
{
	struct put p = { .req = { .data = &p } };
	struct raft_snapshot s = { .index = m->snap, .term = m->snap_term };
	struct raft_buffer b;
	size_t len = 1 + rnd(seed) % 3000;
	int rv;

	b.base = malloc(len);
	b.len = len;
	cr_assert_not_null(b.base);
	payload(b.base, len, m->snap, k);
	raft_configuration_init(&s.configuration);
	cr_assert_eq(raft_configuration_add(&s.configuration, 1, "sim:1", RAFT_VOTER), 0);
	s.configuration_index = 1;
	s.bufs = &b;
	s.n_bufs = 1;
	m->snap_sum = draft_sum(0, b.base, len);
	if (trailing == 0) {
		m->n = 0;
		m->first = m->snap + 1;
	} else if (m->snap > trailing && m->snap - trailing >= m->first) {
		size_t drop = (size_t)(m->snap - trailing - m->first + 1);

		memmove(m->e, m->e + drop, (m->n - drop) * sizeof(m->e[0]));
		m->n -= drop;
		m->first += drop;
	}
	r->fp[k] = model_fp(m);
	atomic_store(&r->started, k);
	rv = io->snapshot_put(io, trailing, &p.req, &s, put_cb);
	cr_assert_eq(rv, 0, "snapshot_put: %s", io->errmsg);
	while (!p.done && !r->bad) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(20);
	}
	if (p.done) {
		cr_assert_eq(p.status, 0, "snapshot_put: %d %s", p.status, io->errmsg);
		ack(r, k);
		r->snaps++;
	}
	free(b.base);
	raft_configuration_close(&s.configuration);
}

/* One session: CR_OPS calls from model @m on r->dev; returns with everything closed. */
static void session(struct run *r, struct model *m, uint64_t *seed)
{
	struct delog_raft_options o = { .size = sizeof(o), .flush = r->flush };
	struct raft_io io = { 0 };
	struct th_loaded l;
	volatile bool closed = false;
	unsigned inflight = 0;
	pthread_t thr;
	uv_loop_t loop;
	int rv;

	atomic_store(&r->started, 0);
	atomic_store(&r->acked, 0);
	atomic_store(&r->stop, false);
	r->fp[0] = model_fp(m);
	cr_assert_eq(pthread_create(&thr, NULL, deliverer, r), 0);
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(draft_init(&io, &loop, r->dir, NULL, &o, open_dev, r->dev), 0, "%s",
		     io.errmsg);
	cr_assert_eq(io.init(&io, 1, "sim"), 0);
	rv = io.load(&io, &l.term, &l.vote, &l.snap, &l.start, &l.ents, &l.n);
	cr_assert_eq(rv, 0, "session load: %s", io.errmsg);
	cr_assert_eq(l.term, m->term);
	cr_assert_eq(l.n, m->n);
	cr_assert_eq(l.start, m->first);
	th_loaded_free(&l);

	for (uint64_t k = 1; k <= CR_OPS && !r->bad; k++) {
		uint64_t c = rnd(seed) % 100;

		if (c < 8) {
			m->term++;
			m->vote = 0;
			r->fp[k] = model_fp(m);
			atomic_store(&r->started, k);
			rv = io.set_term(&io, m->term);
			cr_assert_eq(rv, 0, "set_term: %s", io.errmsg);
			ack(r, k);
		} else if (c < 14) {
			m->vote = 1 + rnd(seed) % 5;
			r->fp[k] = model_fp(m);
			atomic_store(&r->started, k);
			rv = io.set_vote(&io, m->vote);
			cr_assert_eq(rv, 0, "set_vote: %s", io.errmsg);
			ack(r, k);
		} else if (c < 26 && m->n > 2) {
			/* a snapshot: trailing 0 (installed, maybe past our log) or 1-8 */
			unsigned trailing = (unsigned)(rnd(seed) % 9);
			raft_index last = m->first + m->n - 1;
			raft_index at = trailing ? last - rnd(seed) % 3 : last + rnd(seed) % 3;

			if (at <= m->snap) {
				noop(r, m, k);
				continue;
			}
			m->snap = at;
			m->snap_term = m->term ? m->term : 1;
			snapshot(r, &io, &loop, m, k, trailing, seed);
		} else if (c < 22 && m->n > 1) {
			raft_index at = m->first + m->n - 1 - rnd(seed) % (m->n < 4 ? m->n : 4);

			if (at <= m->snap) {
				noop(r, m, k);
				continue;
			}
			m->n = at - m->first;
			r->fp[k] = model_fp(m);
			atomic_store(&r->started, k);
			rv = io.truncate(&io, at);
			cr_assert_eq(rv, 0, "truncate %llu: %s", (unsigned long long)at, io.errmsg);
		} else {
			struct app *a = calloc(1, sizeof(*a));
			unsigned cnt = 1 + (unsigned)(rnd(seed) % 4);

			cr_assert_not_null(a);
			cr_assert_lt(m->n + cnt, CR_MAXE);
			a->r = r;
			a->op = k;
			a->inflight = &inflight;
			a->req.data = a;
			for (unsigned i = 0; i < cnt; i++) {
				size_t len = rnd(seed) % 700;
				raft_index index = m->first + m->n;

				a->e[i].term = m->term ? m->term : 1;
				a->e[i].type = RAFT_COMMAND;
				a->e[i].buf.base = raft_malloc(len ? len : 1);
				a->e[i].buf.len = len;
				payload(a->e[i].buf.base, len, index, k);
				m->e[m->n].term = a->e[i].term;
				m->e[m->n].sum = draft_sum(0, a->e[i].buf.base, len);
				m->n++;
			}
			r->fp[k] = model_fp(m);
			atomic_store(&r->started, k);
			inflight++;
			rv = io.append(&io, &a->req, a->e, cnt, app_cb);
			cr_assert_eq(rv, 0, "append: %s", io.errmsg);
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		while (inflight >= CR_INFLIGHT && !r->bad) {
			uv_run(&loop, UV_RUN_NOWAIT);
			usleep(20);
		}
	}
	while (inflight && !r->bad) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(20);
	}
	io.data = (void *)&closed;
	io.close(&io, closed_cb);
	while (!closed)
		uv_run(&loop, UV_RUN_ONCE);
	delog_raft_close(&io);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	atomic_store(&r->stop, true);
	pthread_join(thr, NULL);
}

static void run_policy(enum delog_flush_policy flush, uint64_t seed)
{
	struct run *r = calloc(1, sizeof(*r));
	struct model *m = calloc(1, sizeof(*m));
	unsigned sessions = 0;
	uint64_t seed0 = seed;

	cr_assert(r && m);
	r->image = malloc(CR_DEV_BYTES);
	cr_assert_not_null(r->image);
	r->dir = th_mkdir();
	r->cdir = th_mkdir();
	m->first = 1;
	r->flush = flush;
	r->seed = seed;
	r->dev = sim_dev(true, seed, NULL);
	while (r->states < RAFT_CRASH_STATES && !r->bad) {
		struct iol_dev *next;

		session(r, m, &seed);
		sessions++;
		cr_assert_eq(r->bad, 0, "%s (policy %s, seed %llu, session %u)", r->why,
			     delog_flush_policy_name(flush), (unsigned long long)seed0, sessions);
		/* the next session starts from what this one left durable */
		cr_assert_eq(iol_sim_media(r->dev, 0, r->image, CR_DEV_BYTES), 0);
		next = sim_dev(true, rnd(&seed), r->image);
		iol_dev_close(r->dev);
		r->dev = next;
		if (sessions % 3 == 0) {
			/* start over on a fresh disk before the log fills (every forced
			 * checkpoint takes at least a 4 KiB sector; nothing is released) */
			iol_dev_close(r->dev);
			r->dev = sim_dev(true, rnd(&seed), NULL);
			memset(m, 0, sizeof(*m));
			m->first = 1;
			cr_assert_eq(draft_snap_prune(r->dir, 0, r->why), 0, "%s", r->why);
		}
	}
	fprintf(stderr,
		"raft.crash %s: %lu states checked at %lu device events, %u sessions, "
		"%lu snapshots\n",
		delog_flush_policy_name(flush), r->states, r->events, sessions, r->snaps);
	iol_dev_close(r->dev);
	th_rmdir(r->dir);
	th_rmdir(r->cdir);
	free(r->image);
	free(r);
	free(m);
}

Test(crash, sync, .timeout = 600)
{
	run_policy(DELOG_FLUSH_SYNC, 101);
}

Test(crash, async, .timeout = 600)
{
	run_policy(DELOG_FLUSH_ASYNC, 202);
}

Test(crash, single, .timeout = 600)
{
	run_policy(DELOG_FLUSH_SINGLE, 303);
}
