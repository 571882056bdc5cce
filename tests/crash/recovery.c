/*
 * recovery.c - crash during recovery (G5) and continuation after a torn tail and across
 * the wrap (G6), on the simulated disk in hold mode (docs/DESIGN.md section 5, T2 and
 * T3).
 *
 * G5, recover/crash_during_recovery: a workload is cut at a random delivery, so its
 * image has a torn tail; its reference is what a healthy open of that image replays
 * (which must hold every acknowledged transaction).  The image is then opened on a
 * hold-mode disk, and at every delivery of that open's own I/O (the reads, the stamping
 * past the head and its flush, the writer's start, the unmount record of the close) the
 * test takes strict and garbled power cuts of it and recovers each again on a healthy
 * disk: every one must replay exactly the reference (same checkpoints, same items), and
 * so must the interrupted open itself.  recover/crash_during_stamping_of_wrapped_log
 * does the same on a log that wrapped twice and was cut with its head within 1 MiB of
 * the physical end, so the stamping past the head wraps onto released space of the
 * current lap at the start of the log (journal/recover.c R8), with garbled power cuts.
 *
 * G6, recover/continuation: generation after generation on one log, each opens the
 * previous generation's crash image, commits and forces more transactions (releasing
 * behind itself, so the log wraps several times and crashes land at every distance from
 * its physical end), and is itself cut at a random delivery.  Every recovery must hold
 * what the previous generation had acknowledged, every item in the checkpoint its writer
 * recorded, and nothing a recovery dropped as torn may come back in a later one.
 *
 * Why hold mode and a driver thread: the interesting crash points are between a write's
 * submission and its completion, so the test owns every completion (crash_test.h).
 */
#include "crash_test.h"

#define SEEDS 4u

static const enum delog_flush_policy policies[] = { DELOG_FLUSH_SYNC, DELOG_FLUSH_ASYNC,
						    DELOG_FLUSH_SINGLE };

/* ---- a workload thread: open, commit n = 1..ntx (every third forced), close ---- */

struct work {
	struct iol_dev *dev;
	enum delog_flush_policy pol;
	uint64_t gen, seed;
	unsigned ntx;
	bool release;
	struct ct_coll coll; /* what its open recovered */
	int open_err;
	_Atomic uint64_t seq[CT_MAX_TX];
	atomic_uint acked; /* highest n whose force returned */
	atomic_uint submitted;
	_Atomic uint64_t released;
};

static void *work_main(void *arg)
{
	struct work *w = arg;
	uint64_t r = w->seed;
	delog *log = NULL;

	w->open_err = ct_open(w->dev, w->pol, &w->coll, &log);
	if (w->open_err)
		return NULL;
	for (unsigned n = 1; n <= w->ntx; n++) {
		uint64_t seq = 0;
		unsigned items = 1 + (unsigned)(ct_rnd(&r) % 3);
		uint32_t len = 24 + (uint32_t)(ct_rnd(&r) % (ct_rnd(&r) % 4 ? 2000 : 30000));
		bool force = n % 3 == 0 || n == w->ntx;
		int err;

		atomic_store(&w->submitted, n);
		err = ct_tx(log, w->gen, n, items, len, false, &seq);
		if (err)
			break;
		atomic_store(&w->seq[n], seq);
		if (force) {
			if (delog_force(log, seq))
				break;
			atomic_store(&w->acked, n);
			if (w->release && seq > 2) {
				atomic_store(&w->released, seq - 2);
				delog_release(log, seq - 2);
			}
		}
	}
	delog_close(log);
	return NULL;
}

/* ---- G5 ---- */

static unsigned long g5_states;

static void g5_one(enum delog_flush_policy pol, uint64_t seed)
{
	struct work *w = calloc(1, sizeof(*w));
	struct ct_coll *ref = calloc(1, sizeof(*ref)), *c = calloc(1, sizeof(*c));
	struct ct_drv d;
	uint64_t r = ct_mix(seed * 977 + pol), k;
	unsigned acked;
	void *img;
	int err;

	cr_assert(w && ref && c);
	/* A workload cut at a random delivery: a torn tail. */
	w->dev = ct_sim(true, seed, NULL);
	w->pol = pol;
	w->gen = 1;
	w->seed = seed;
	w->ntx = 40;
	ct_drv_start(&d, work_main, w);
	k = 20 + ct_rnd(&r) % 200;
	while (k-- && ct_drv_step(&d, w->dev))
		;
	acked = atomic_load(&w->acked);
	img = ct_crash(w->dev, seed, IOL_SIM_STRICT);
	ct_drv_finish(&d, w->dev);
	iol_dev_close(w->dev);

	err = ct_recover_image(img, pol, ref);
	cr_assert_eq(err, 0, "seed %llu: reference recovery: %s", (unsigned long long)seed,
		     delog_strerror(err));
	cr_assert_eq(ref->bad, 0, "seed %llu: %s", (unsigned long long)seed, ref->why);
	for (unsigned n = 1; n <= acked; n++)
		cr_assert_not_null(ct_find(ref, 1, n), "seed %llu: acknowledged tx %u lost",
				   (unsigned long long)seed, n);

	/* Open it on a hold disk; crash at every step of that recovery (and the close). */
	w->dev = ct_sim(true, seed + 1, img);
	w->ntx = 0;
	ct_drv_start(&d, work_main, w);
	for (unsigned step = 0;; step++) {
		for (unsigned v = 0; v < 4; v++) {
			/* Strict, and garbage of each kind in turn. */
			static const enum iol_sim_crash_profile garbles[] = { IOL_SIM_GARBLE,
									      IOL_SIM_GARBLE_ZERO,
									      IOL_SIM_GARBLE_ONES,
									      IOL_SIM_GARBLE_COPY };
			enum iol_sim_crash_profile pr = v % 2 ? garbles[(step * 2 + v / 2) % 4] :
								IOL_SIM_STRICT;
			void *img2 = ct_crash(w->dev, seed * 1000 + step * 4 + v, pr);

			err = ct_recover_image(img2, pol, c);
			cr_assert_eq(err, 0,
				     "seed %llu step %u: recovery after a crash during "
				     "recovery: %s",
				     (unsigned long long)seed, step, delog_strerror(err));
			cr_assert_eq(c->bad, 0, "seed %llu step %u: %s", (unsigned long long)seed,
				     step, c->why);
			cr_assert(c->fp == ref->fp && c->nck == ref->nck && c->last == ref->last,
				  "seed %llu step %u (%s): second recovery replayed %llu..%llu, the "
				  "first %llu..%llu (G5)",
				  (unsigned long long)seed, step,
				  pr == IOL_SIM_STRICT ? "strict" : "garble",
				  (unsigned long long)c->first, (unsigned long long)c->last,
				  (unsigned long long)ref->first, (unsigned long long)ref->last);
			free(img2);
			g5_states++;
		}
		if (!ct_drv_step(&d, w->dev))
			break;
	}
	pthread_join(d.th, NULL);
	cr_assert_eq(w->open_err, 0, "seed %llu: open: %s", (unsigned long long)seed,
		     delog_strerror(w->open_err));
	cr_assert(w->coll.fp == ref->fp, "seed %llu: the interrupted open replayed another set",
		  (unsigned long long)seed);
	iol_dev_close(w->dev);
	free(img);
	free(w);
	free(ref);
	free(c);
}

/*
 * R8: a power cut during recovery's own writes, on a log that has wrapped several times
 * and was cut with its head within 1 MiB of the physical end, so that what recovery
 * stamps past the head wraps to the start of the log, onto released space of the
 * current lap.  Recovery once rewrote every sector there; a garbled one then broke the
 * head search of every later open (DELOG_ECORRUPT "a record past the head says the log
 * was stable ...").  Every crash state during that recovery must recover as the first
 * recovery did.
 */
static bool head_near_end(struct iol_dev *dev, size_t *from, unsigned *laps, uint64_t *last)
{
	struct iol_sim_event ev[64];
	size_t n;

	while ((n = iol_sim_trace_copy(dev, *from, ev, 64)) > 0) {
		for (size_t i = 0; i < n; i++) {
			if (ev[i].type != IOL_SIM_EV_SUBMIT || (ev[i].opf & 0xff) != IOL_OP_WRITE)
				continue;
			if (ev[i].off < *last)
				(*laps)++;
			*last = ev[i].off;
		}
		*from += n;
	}
	return *laps >= 2 && *last + ev[0].len >= CT_DEV_BYTES - (1u << 20) &&
	       *last < CT_DEV_BYTES - (256u << 10);
}

static void stamp_wrap_one(enum delog_flush_policy pol, uint64_t seed)
{
	struct work *w = calloc(1, sizeof(*w));
	struct ct_coll *ref = calloc(1, sizeof(*ref)), *c = calloc(1, sizeof(*c));
	size_t from = 0;
	unsigned laps = 0, steps = 0;
	uint64_t last = 0;
	struct ct_drv d;
	void *img;
	int err;

	cr_assert(w && ref && c);
	w->dev = ct_sim(true, seed, NULL);
	w->pol = pol;
	w->gen = 1;
	w->seed = seed;
	w->ntx = CT_MAX_TX - 1;
	w->release = true;
	ct_drv_start(&d, work_main, w);
	while (ct_drv_step(&d, w->dev) && !head_near_end(w->dev, &from, &laps, &last))
		;
	cr_assert_geq(laps, 2, "seed %llu: the workload ended before wrapping twice",
		      (unsigned long long)seed);
	img = ct_crash(w->dev, seed, IOL_SIM_STRICT);
	ct_drv_finish(&d, w->dev);
	iol_dev_close(w->dev);
	err = ct_recover_image(img, pol, ref);
	cr_assert_eq(err, 0, "seed %llu: reference recovery: %s", (unsigned long long)seed,
		     delog_strerror(err));

	w->dev = ct_sim(true, seed + 1, img);
	w->ntx = 0;
	ct_drv_start(&d, work_main, w);
	for (;; steps++) {
		for (unsigned v = 0; v < 4; v++) {
			void *img2 = ct_crash(w->dev, seed * 7919 + steps * 4 + v,
					      (enum iol_sim_crash_profile)(IOL_SIM_GARBLE +
									   (v ? v + 1 : 0)));

			err = ct_recover_image(img2, pol, c);
			cr_assert_eq(err, 0,
				     "seed %llu step %u: recovery after a crash during the "
				     "recovery of a wrapped log: %s",
				     (unsigned long long)seed, steps, delog_strerror(err));
			cr_assert(c->fp == ref->fp && c->last == ref->last,
				  "seed %llu step %u: second recovery replayed %llu..%llu, the first "
				  "%llu..%llu",
				  (unsigned long long)seed, steps, (unsigned long long)c->first,
				  (unsigned long long)c->last, (unsigned long long)ref->first,
				  (unsigned long long)ref->last);
			free(img2);
		}
		if (!ct_drv_step(&d, w->dev))
			break;
	}
	pthread_join(d.th, NULL);
	cr_assert_eq(w->open_err, 0);
	iol_dev_close(w->dev);
	free(img);
	free(w);
	free(ref);
	free(c);
}

Test(recover, crash_during_stamping_of_wrapped_log, .timeout = 900)
{
	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++)
		for (uint64_t s = 1; s <= 2; s++)
			stamp_wrap_one(policies[p], 100 + s);
}

Test(recover, crash_during_recovery, .timeout = 900)
{
	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++)
		for (uint64_t s = 1; s <= SEEDS; s++)
			g5_one(policies[p], s);
	fprintf(stderr,
		"recover/crash_during_recovery: %lu crash states during recovery, "
		"each recovered again: 0 differences\n",
		g5_states);
}

/* ---- G6 ---- */

#define GENS 10u

static unsigned long g6_states;

static void g6_one(enum delog_flush_policy pol, enum iol_sim_crash_profile pr, uint64_t seed)
{
	struct work *w = calloc(GENS + 1, sizeof(*w));
	uint64_t r = ct_mix(seed * 7919 + pol * 3 + pr);
	unsigned surv[GENS + 1] = { 0 }, acked[GENS + 1] = { 0 };
	uint64_t rel[GENS + 1] = { 0 };
	void *img = NULL;

	cr_assert_not_null(w);
	for (unsigned g = 1; g <= GENS; g++) {
		struct work *cur = &w[g];
		struct ct_drv d;
		uint64_t k = 30 + ct_rnd(&r) % 600;
		void *next;

		cur->dev = ct_sim(true, seed + g, img);
		cur->pol = pol;
		cur->gen = g;
		cur->seed = ct_rnd(&r);
		cur->ntx = 120;
		cur->release = true;
		ct_drv_start(&d, work_main, cur);
		while (k-- && ct_drv_step(&d, cur->dev))
			;
		acked[g] = atomic_load(&cur->acked);
		next = ct_crash(cur->dev, ct_rnd(&r), pr);
		rel[g] = atomic_load(&cur->released);
		ct_drv_finish(&d, cur->dev);
		iol_dev_close(cur->dev);
		free(img);
		img = next;
		g6_states++;
		cr_assert_eq(cur->open_err, 0, "seed %llu gen %u: open after the crash: %s",
			     (unsigned long long)seed, g, delog_strerror(cur->open_err));
		cr_assert_eq(cur->coll.bad, 0, "seed %llu gen %u: %s", (unsigned long long)seed, g,
			     cur->coll.why);
		/* What this generation's open recovered, against the earlier ones. */
		for (size_t i = 0; i < cur->coll.ntx; i++) {
			const struct ct_tx_seen *t = &cur->coll.tx[i];

			cr_assert(t->gen >= 1 && t->gen < g,
				  "seed %llu gen %u: tx of generation %llu",
				  (unsigned long long)seed, g, (unsigned long long)t->gen);
			cr_assert_eq(t->seq, atomic_load(&w[t->gen].seq[t->n]),
				     "seed %llu gen %u: tx %llu/%llu in checkpoint %llu, written into "
				     "%llu (stale lap? G4)",
				     (unsigned long long)seed, g, (unsigned long long)t->gen,
				     (unsigned long long)t->n, (unsigned long long)t->seq,
				     (unsigned long long)atomic_load(&w[t->gen].seq[t->n]));
			if (t->gen < g - 1)
				cr_assert(t->n <= surv[t->gen],
					  "seed %llu gen %u: tx %llu/%llu, dropped "
					  "as torn by an earlier recovery, came back (G6)",
					  (unsigned long long)seed, g, (unsigned long long)t->gen,
					  (unsigned long long)t->n);
			else if (t->n > surv[t->gen])
				surv[t->gen] = (unsigned)t->n;
		}
		if (g > 1) {
			for (unsigned n = 1; n <= acked[g - 1]; n++) {
				if (atomic_load(&w[g - 1].seq[n]) <= rel[g - 1])
					continue; /* released before the crash */
				cr_assert_not_null(ct_find(&cur->coll, g - 1, n),
						   "seed %llu gen %u: tx %u of generation %u was "
						   "acknowledged and is lost (G1)",
						   (unsigned long long)seed, g, n, g - 1);
			}
		}
	}
	free(img);
	free(w);
}

Test(recover, continuation, .timeout = 900)
{
	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++)
		for (int pr = 0; pr < 2; pr++)
			for (uint64_t s = 1; s <= SEEDS; s++)
				g6_one(policies[p], (enum iol_sim_crash_profile)pr, s);
	fprintf(stderr,
		"recover/continuation: %lu crash generations (%u per log), each "
		"recovered and continued: 0 violations\n",
		g6_states, GENS);
}
