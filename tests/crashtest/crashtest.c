/*
 * crashtest.c - libdelog-crashtest's contracts (<delog_crashtest.h>), on small apps.
 *
 * The app: each workload thread commits transactions of one item (its tag, 8 bytes, and
 * padding), acknowledges each after its force (or, "early", after its commit only), and
 * recovery collects the tags; CHECK wants every acknowledged tag recovered.  So the early
 * app is the bug the library exists to find, and the correct one must pass.
 */
#include <criterion/criterion.h>
#include <delog_crashtest.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_private.h"
#include "helpers.h" /* t_mkdtemp */

struct tapp {
	bool early;
	unsigned txs;
	unsigned max_recovered; /* CHECK also fails above this many checkpoints; 0: none */
	bool fill;              /* never stop: fill the log (nothing released) */
	/* continuation: what earlier sessions acknowledged, checked against the state */
	pthread_mutex_t mu;
	uint64_t acked[4096];
	size_t nacked;
	bool cont_bad;
};

struct tstate {
	uint64_t tags[8192];
	size_t n;
	size_t ckpts;
};

static void *t_new(void *arg)
{
	return calloc(1, sizeof(struct tstate));
}

static void t_free(void *arg, void *s)
{
	free(s);
}

static int t_replay(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		    size_t n)
{
	struct tstate *s = arg;

	s->ckpts++;
	for (size_t i = 0; i < n && s->n < 8192; i++)
		memcpy(&s->tags[s->n++], it[i].data, 8);
	return 0;
}

static bool has(const struct tstate *s, uint64_t tag)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->tags[i] == tag)
			return true;
	return false;
}

static int t_check(void *arg, void *state, const struct delog_ct_cut *cut, char *why, size_t len)
{
	struct tapp *a = arg;
	struct tstate *s = state;

	for (size_t i = 0; i < cut->nacks; i++)
		if (!has(s, cut->acks[i].tag)) {
			snprintf(why, len, "tag %llx acknowledged, not recovered",
				 (unsigned long long)cut->acks[i].tag);
			return 1;
		}
	if (a->max_recovered && s->ckpts > a->max_recovered) {
		snprintf(why, len, "%zu checkpoints recovered", s->ckpts);
		return 1;
	}
	return 0;
}

/* Continuation: the state a later session opened with holds every earlier ack. */
static void check_continuation(struct tapp *a, delog_ct_run *run)
{
	const struct tstate *s = delog_ct_state(run);

	if (!delog_ct_session(run))
		return;
	pthread_mutex_lock(&a->mu);
	/* Only earlier sessions' tags: a thread of this session may have acknowledged its
	 * first puts before this one started. */
	for (size_t i = 0; i < a->nacked; i++)
		if ((a->acked[i] >> 48) == delog_ct_run_number(run) &&
		    ((a->acked[i] >> 40) & 0xff) < delog_ct_session(run) && !has(s, a->acked[i]))
			a->cont_bad = true;
	pthread_mutex_unlock(&a->mu);
}

static int t_workload(void *arg, delog *log, delog_ct_run *run, unsigned thread)
{
	struct tapp *a = arg;
	unsigned char buf[200] = { 0 };

	check_continuation(a, run);
	for (unsigned i = 0; (a->fill || i < a->txs) && !delog_ct_stopping(run); i++) {
		uint64_t tag = delog_ct_run_number(run) << 48 |
			       (uint64_t)delog_ct_session(run) << 40 | (uint64_t)thread << 32 | i,
			 seq;
		delog_tx *tx;
		int err;

		memcpy(buf, &tag, 8);
		err = delog_tx_begin(log, sizeof(buf) + DELOG_ITEM_OVERHEAD, 0, &tx);
		if (err)
			return err;
		err = delog_tx_log(tx, tag, buf, sizeof(buf));
		if (!err)
			err = a->early ? delog_tx_commit(tx, &seq) :
					 delog_tx_commit_force(tx, &seq);
		if (!err && a->early)
			err = delog_ct_ack(run, tag, seq) ?: delog_force(log, seq);
		else if (!err)
			err = delog_ct_ack(run, tag, seq);
		if (err)
			return err;
		pthread_mutex_lock(&a->mu);
		if (a->nacked < 4096)
			a->acked[a->nacked++] = tag;
		pthread_mutex_unlock(&a->mu);
	}
	return 0;
}

static struct tapp *tapp_new(bool early, unsigned txs)
{
	struct tapp *a = calloc(1, sizeof(*a));

	a->early = early;
	a->txs = txs;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

static struct delog_ct_app app_of(struct tapp *a, unsigned threads)
{
	return (struct delog_ct_app){ .size = sizeof(struct delog_ct_app),
				      .arg = a,
				      .threads = threads,
				      .workload = t_workload,
				      .state_new = t_new,
				      .state_free = t_free,
				      .replay = t_replay,
				      .check = t_check };
}

static char *dir; /* the handles' directory, under the test directory (t_mkdtemp) */

static void mkdir_tmp(void)
{
	dir = t_mkdtemp("crashtest");
}

static void rm_tmp(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(dir);
	dir = NULL;
}

TestSuite(campaign, .init = mkdir_tmp, .fini = rm_tmp, .timeout = 300);

/* The early acknowledgement is found, its handle fails on every replay with the same
 * reason, and the minimised handle still fails. */
Test(campaign, finds_early_ack)
{
	struct tapp *a = tapp_new(true, 40);
	struct delog_ct_app app = app_of(a, 2);
	struct delog_options lo = { .size = sizeof(lo), .flush = DELOG_FLUSH_SINGLE };
	struct delog_ct_options o = { .size = sizeof(o),
				      .log = &lo,
				      .seed = 7,
				      .states = 5000,
				      .save_dir = dir };
	struct delog_ct_report rep = { .size = sizeof(rep) };
	char why[512], first[512], desc[512];

	cr_assert_eq(delog_ct_campaign(&app, &o, &rep), 0, "%s", delog_errmsg());
	cr_assert_geq(rep.failures, 1);
	cr_assert_neq(rep.handle[0], 0);
	cr_assert_neq(rep.minimal[0], 0, "not minimised");
	cr_assert(strstr(rep.why, "acknowledged, not recovered"), "%s", rep.why);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(delog_ct_replay(rep.handle, &app, why, sizeof(why)), 1);
		if (!i)
			strcpy(first, why);
		cr_assert_str_eq(why, first);
	}
	cr_assert_eq(delog_ct_replay(rep.minimal, &app, why, sizeof(why)), 1);
	cr_assert_eq(delog_ct_describe(rep.minimal, desc, sizeof(desc)), 0);
	cr_assert_str_eq(desc, rep.state);
}

/* The correct app passes, and the report shows what was covered. */
Test(campaign, correct_passes_with_coverage)
{
	struct tapp *a = tapp_new(false, 12);
	struct delog_ct_app app = app_of(a, 2);
	struct delog_ct_options o = { .size = sizeof(o),
				      .seed = 11,
				      .states = 6000,
				      .save_dir = dir,
				      .jobs = 2,
				      .sessions = 3 };
	struct delog_ct_report rep = { .size = sizeof(rep) };

	cr_assert_eq(delog_ct_campaign(&app, &o, &rep), 0, "%s", delog_errmsg());
	cr_assert_eq(rep.failures, 0, "%s: %s", rep.why, rep.state);
	cr_assert_geq(rep.states, 6000);
	cr_assert_gt(rep.checks, 0);
	cr_assert_gt(rep.images, 0);
	cr_assert_gt(rep.acks, 0);
	cr_assert_gt(rep.unstable_max, 1);
	for (int i = 0; i < 4; i++)
		cr_assert_gt(rep.points_by[i], 0, "no point after event kind %d", i);
	for (int i = 0; i < 6; i++)
		cr_assert_gt(rep.by_profile[i], 0, "no state with choice %d", i + 1);
	cr_assert_geq(rep.sessions, 3);
	cr_assert_eq(rep.sector, 4096);
	cr_assert_eq(rep.policy, DELOG_FLUSH_SYNC);
	if (rep.gate_runs)
		cr_assert_gt(rep.gate_generations, 0);
	cr_assert(!a->cont_bad, "a later session's state lost an earlier acknowledgement");
}

/* Strict profile: only old and new sectors. */
Test(campaign, strict_profile_only)
{
	struct tapp *a = tapp_new(false, 30);
	struct delog_ct_app app = app_of(a, 1);
	struct delog_ct_options o = { .size = sizeof(o),
				      .seed = 3,
				      .states = 1500,
				      .profiles = DELOG_CT_STRICT,
				      .save_dir = dir };
	struct delog_ct_report rep = { .size = sizeof(rep) };

	cr_assert_eq(delog_ct_campaign(&app, &o, &rep), 0, "%s", delog_errmsg());
	cr_assert_gt(rep.by_profile[0], 0);
	for (int i = 1; i < 6; i++)
		cr_assert_eq(rep.by_profile[i], 0);
}

/* A hang is reported with the log's state, not waited for: the workload fills a log it
 * never releases.  Its threads are left running (and their memory held), so the test
 * ends with _exit: no leak check of what a hang holds by design. */
Test(campaign, hang_is_reported, .exit_code = 0)
{
	struct tapp *a = tapp_new(false, 0);
	struct delog_ct_app app = app_of(a, 1);
	struct delog_ct_options o = { .size = sizeof(o),
				      .seed = 5,
				      .states = 1u << 30,
				      .stall_s = 1,
				      .save_dir = dir,
				      .profiles = DELOG_CT_STRICT };
	struct delog_ct_report rep = { .size = sizeof(rep) };

	a->fill = true;
	cr_assert_eq(delog_ct_campaign(&app, &o, &rep), -ETIMEDOUT);
	cr_assert(strstr(delog_errmsg(), "hung"), "%s", delog_errmsg());
	cr_assert(strstr(rep.why, "wait for log space"), "%s", rep.why);
	cr_assert(strstr(rep.why, "0 (last in delog_tx_begin)"), "%s", rep.why);
	rm_tmp();
	_exit(0);
}

static int failing_workload(void *arg, delog *log, delog_ct_run *run, unsigned thread)
{
	return thread == 1 ? -EPROTO : 0;
}

Test(campaign, workload_error_stops_it)
{
	struct tapp *a = tapp_new(false, 5);
	struct delog_ct_app app = app_of(a, 2);
	struct delog_ct_options o = { .size = sizeof(o), .save_dir = dir };

	app.workload = failing_workload;
	cr_assert_eq(delog_ct_campaign(&app, &o, NULL), -EPROTO);
	cr_assert(strstr(delog_errmsg(), "workload"), "%s", delog_errmsg());
}

Test(campaign, bad_options)
{
	struct tapp *a = tapp_new(false, 5);
	struct delog_ct_app app = app_of(a, 1);
	struct delog_options lo = { .size = sizeof(lo), .sector = 1000 };
	struct delog_ct_options o = { .size = sizeof(o), .log = &lo };

	cr_assert_eq(delog_ct_campaign(&app, &o, NULL), -EINVAL);
	cr_assert(strstr(delog_errmsg(), "sector"), "%s", delog_errmsg());
	app.check = NULL;
	lo.sector = 0;
	cr_assert_eq(delog_ct_campaign(&app, &o, NULL), -EINVAL);
	app = app_of(a, 65);
	cr_assert_eq(delog_ct_campaign(&app, &o, NULL), -EINVAL);
	o.size = 8;
	app = app_of(a, 1);
	cr_assert_eq(delog_ct_campaign(&app, &o, NULL), -EINVAL);
	o.size = sizeof(o);
	o.flags = 0x80;
	cr_assert_eq(delog_ct_campaign(&app, &o, NULL), -EINVAL);
	cr_assert(strstr(delog_errmsg(), "flags"), "%s", delog_errmsg());
}

/* Options and a report of the first version's size (without trace_path and trace_hash)
 * are read and written as that version's. */
Test(campaign, older_sizes_accepted)
{
	struct tapp *a = tapp_new(false, 3);
	struct delog_ct_app app = app_of(a, 1);
	struct delog_ct_options o = { .size = offsetof(struct delog_ct_options, trace_path),
				      .states = 50,
				      .save_dir = dir };
	struct delog_ct_report rep;

	memset(&rep, 0xa5, sizeof(rep));
	rep.size = offsetof(struct delog_ct_report, trace_hash);
	cr_assert_eq(delog_ct_campaign(&app, &o, &rep), 0, "%s", delog_errmsg());
	cr_assert_geq(rep.states, 50);
	cr_assert_eq(rep.size, offsetof(struct delog_ct_report, trace_hash));
	cr_assert_eq(rep.trace_hash, 0xa5a5a5a5a5a5a5a5ull, "wrote past the caller's size");
}

/* ---- handles ---- */

static void failing_handle(struct tapp *a, struct delog_ct_report *rep, unsigned max_recovered)
{
	struct delog_ct_app app = app_of(a, 1);
	struct delog_ct_options o = { .size = sizeof(o),
				      .seed = 19,
				      .states = 20000,
				      .save_dir = dir };

	a->max_recovered = max_recovered;
	cr_assert_eq(delog_ct_campaign(&app, &o, rep), 0, "%s", delog_errmsg());
	cr_assert_geq(rep->failures, 1);
}

/* The minimised state needs every sector it keeps: each one made old alone, it passes. */
Test(campaign, minimal_state_is_minimal)
{
	struct tapp *a = tapp_new(false, 20);
	struct delog_ct_app app = app_of(a, 1);
	struct delog_ct_report rep = { .size = sizeof(rep) };
	struct ct_handle h;
	struct ct_worker w;
	size_t notold = 0;
	char why[512];

	failing_handle(a, &rep, 3);
	cr_assert_eq(ct_handle_read(rep.minimal, &h), 0, "%s", delog_errmsg());
	cr_assert_eq(ct_worker_init(&w, NULL, h.pt.dev_bytes, h.pt.sector), 0);
	for (size_t i = 0; i < h.pt.k; i++) {
		uint8_t c = h.choice[i];

		if (c == CT_OLD)
			continue;
		notold++;
		h.choice[i] = CT_OLD;
		cr_assert_eq(ct_check_one(&w, &app, &h.pt, h.choice, ct_state_hash(&h.pt, h.choice),
					  why, sizeof(why)),
			     0, "sector %llu was not needed", (unsigned long long)h.pt.u[i]);
		h.choice[i] = c;
	}
	cr_assert_gt(notold, 0, "the failure needs a sector newer than the media: %s / %s / %s",
		     rep.handle, rep.why, rep.state);
	cr_assert_eq(ct_check_one(&w, &app, &h.pt, h.choice, ct_state_hash(&h.pt, h.choice), why,
				  sizeof(why)),
		     1);
	ct_worker_fini(&w, &app);
	ct_handle_free(&h);
}

Test(campaign, damaged_handles_are_refused)
{
	struct tapp *a = tapp_new(true, 20);
	struct delog_ct_app app = app_of(a, 1);
	struct delog_ct_report rep = { .size = sizeof(rep) };
	char path[4200], desc[256];
	FILE *f;
	long size;
	int c;

	failing_handle(a, &rep, 0);
	f = fopen(rep.handle, "r+b");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size / 2, SEEK_SET);
	c = fgetc(f);
	fseek(f, size / 2, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
	cr_assert_eq(delog_ct_replay(rep.handle, &app, NULL, 0), DELOG_ECORRUPT);
	cr_assert(strstr(delog_errmsg(), "not a crash-test handle"), "%s", delog_errmsg());
	cr_assert_eq(delog_ct_describe(rep.handle, desc, sizeof(desc)), DELOG_ECORRUPT);
	cr_assert_eq(truncate(rep.handle, size - 9), 0);
	cr_assert_eq(delog_ct_replay(rep.handle, &app, NULL, 0), DELOG_ECORRUPT);
	snprintf(path, sizeof(path), "%s/none.ctf", dir);
	cr_assert_eq(delog_ct_replay(path, &app, NULL, 0), -ENOENT);
	cr_assert_eq(delog_ct_minimise(path, &app, rep.minimal, NULL, 0), -ENOENT);
}

/* ---- the serial mode ---- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return b;
}

/* One serial campaign of @app under @policy and @seed, its trace in @name. */
static void serial_run(struct delog_ct_app *app, enum delog_flush_policy policy, uint64_t seed,
		       uint64_t states, const char *name, struct delog_ct_report *rep)
{
	struct delog_options lo = { .size = sizeof(lo), .flush = policy };
	char path[4200];
	struct delog_ct_options o = { .size = sizeof(o),
				      .log = &lo,
				      .seed = seed,
				      .states = states,
				      .save_dir = dir,
				      .flags = DELOG_CT_SERIAL,
				      .trace_path = path };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*rep = (struct delog_ct_report){ .size = sizeof(*rep) };
	cr_assert_eq(delog_ct_campaign(app, &o, rep), 0, "%s", delog_errmsg());
}

/* One seed, one trace: two serial campaigns with one seed make the same events, byte for
 * byte, through a cut and the session that continues after it, under each safe
 * policy; another seed makes others. */
Test(campaign, serial_same_seed_same_trace)
{
	static const enum delog_flush_policy pol[] = { DELOG_FLUSH_SYNC, DELOG_FLUSH_SINGLE,
						       DELOG_FLUSH_ASYNC };
	struct tapp *a = tapp_new(false, 10);
	struct delog_ct_app app = app_of(a, 2);
	struct delog_ct_report r1, r2, r3;
	char p1[4200], p2[4200];

	snprintf(p1, sizeof(p1), "%s/t1", dir);
	snprintf(p2, sizeof(p2), "%s/t2", dir);
	for (size_t i = 0; i < sizeof(pol) / sizeof(pol[0]); i++) {
		char *t1, *t2;

		serial_run(&app, pol[i], 23, 1000, "t1", &r1);
		serial_run(&app, pol[i], 23, 1000, "t2", &r2);
		serial_run(&app, pol[i], 24, 1000, "t3", &r3);
		cr_assert_eq(r1.failures, 0, "%s", r1.why);
		cr_assert_geq(r1.sessions, 2, "no session after a cut");
		t1 = slurp(p1);
		t2 = slurp(p2);
		cr_assert(strstr(t1, "enters delog_tx_commit") && strstr(t1, "acknowledges") &&
				  strstr(t1, "deliver") && strstr(t1, "submit opf") &&
				  strstr(t1, "session 0.1"),
			  "policy %d: a trace without every kind of move", (int)pol[i]);
		cr_assert_str_eq(t1, t2, "policy %d: one seed gave two traces", (int)pol[i]);
		cr_assert_eq(r1.trace_hash, r2.trace_hash);
		cr_assert_eq(r1.points, r2.points);
		cr_assert_eq(r1.acks, r2.acks);
		cr_assert_neq(r1.trace_hash, r3.trace_hash, "policy %d: the seed changed nothing",
			      (int)pol[i]);
		free(t1);
		free(t2);
	}
}

/* A failure found in serial mode is found again, at the same point, by the same seed. */
Test(campaign, serial_finds_the_same_failure)
{
	struct tapp *a = tapp_new(true, 40);
	struct delog_ct_app app = app_of(a, 2);
	struct delog_ct_report r1, r2;
	char why[512];

	serial_run(&app, DELOG_FLUSH_SINGLE, 7, 5000, "f1", &r1);
	serial_run(&app, DELOG_FLUSH_SINGLE, 7, 5000, "f2", &r2);
	cr_assert_geq(r1.failures, 1);
	cr_assert_str_eq(r1.handle, r2.handle);
	cr_assert_str_eq(r1.why, r2.why);
	cr_assert_str_eq(r1.state, r2.state);
	cr_assert_eq(r1.trace_hash, r2.trace_hash);
	cr_assert_eq(delog_ct_replay(r2.handle, &app, why, sizeof(why)), 1);
	cr_assert_str_eq(why, r1.why);
}

/* A hang in serial mode (every thread waits for log space, nothing to move) is
 * reported as one; the threads are left, so the test ends with _exit. */
Test(campaign, serial_hang_is_reported, .exit_code = 0)
{
	struct tapp *a = tapp_new(false, 0);
	struct delog_ct_app app = app_of(a, 2);
	struct delog_ct_options o = { .size = sizeof(o),
				      .seed = 5,
				      .states = 1u << 30,
				      .stall_s = 1,
				      .save_dir = dir,
				      .profiles = DELOG_CT_STRICT,
				      .flags = DELOG_CT_SERIAL };
	struct delog_ct_report rep = { .size = sizeof(rep) };

	a->fill = true;
	cr_assert_eq(delog_ct_campaign(&app, &o, &rep), -ETIMEDOUT);
	cr_assert(strstr(rep.why, "hung: nothing pending"), "%s", rep.why);
	cr_assert(strstr(rep.why, "wait for log space"), "%s", rep.why);
	rm_tmp();
	_exit(0);
}
