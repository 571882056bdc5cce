/*
 * session.c - one session of a run: the workload on a log on a held sim disk, and the
 * controller that delivers its completions and takes the crash points.
 *
 * Two sides.  The driver thread opens the log (the image of the previous session's cut,
 * replayed through REPLAY), starts the workload threads, joins them, and closes the log.
 * The controller (the campaign's thread) delivers one completion at a time in seeded
 * random order and, whenever the event trace grew, an acknowledgement was made or the
 * durable sequence moved, takes a crash point and has its states checked (CT3: it does
 * so between deliveries, so only submissions change the disk under it).
 *
 * The cut.  A session that is not its run's last is cut once its workload returned: the
 * controller takes a seeded strict state of that moment as the next session's image
 * (everything the workload acknowledged was durable then, so the state holds it), and
 * lets the close run on without taking points.  The last session takes points through
 * the close as well: a cut during the unmount record is a state like any other.
 *
 * The serial mode (serial.c).  The controller first waits until every thread of the
 * session sleeps (CT5), then takes its point, then makes one move (CT6) instead of a
 * delivery; the driver waits for the cut on a condition variable, so it sleeps too.
 *
 * Liveness.  A session in which nothing is pending, the workload has not returned and
 * nothing moved for stall_s seconds is reported hung, naming the threads still out and
 * the public call each entered last (engine_call_slot), with the log's use;
 * the campaign then returns -ETIMEDOUT without joining them.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ct_private.h"
#include "jrnl.h"

static _Thread_local unsigned ct_thread_index;

unsigned ct_thread_self(void)
{
	return ct_thread_index;
}

struct driver {
	struct ct_campaign *cp;
	struct delog_ct_run *run;
	pthread_t wth[CT_MAX_THREADS];
	unsigned widx[CT_MAX_THREADS];
};

struct wl_arg {
	struct driver *d;
	unsigned i;
};

static void run_fail(struct delog_ct_run *run, int err, const char *what)
{
	pthread_mutex_lock(&run->ack_mu);
	if (!run->werr) {
		run->werr = err;
		snprintf(run->wwhy, sizeof(run->wwhy), "run %" PRIu64 " session %u: %s: %s",
			 run->run, run->session, what, delog_strerror(err));
	}
	pthread_mutex_unlock(&run->ack_mu);
}

static void *wl_main(void *p)
{
	struct wl_arg *a = p;
	struct delog_ct_run *run = a->d->run;
	const struct delog_ct_app *app = a->d->cp->o.app;
	int err;

	ct_thread_index = a->i;
	atomic_store(&run->call_slot[a->i], engine_call_slot());
	if (run->ser)
		ct_serial_thread(run->ser, a->i);
	err = app->workload(app->arg, run->log, run, a->i);
	if (run->ser)
		ct_serial_thread(NULL, 0);
	if (err)
		run_fail(run, err, "the workload returned an error");
	atomic_store(&run->thread_done[a->i], true);
	atomic_fetch_sub(&run->running, 1);
	free(a);
	return NULL;
}

/* Run the workload threads and wait for them. */
static void workload_run(struct driver *d)
{
	struct delog_ct_run *run = d->run;
	unsigned n = d->cp->o.threads, started = 0;

	atomic_store(&run->running, n);
	for (unsigned i = 0; i < n; i++) {
		struct wl_arg *a = malloc(sizeof(*a));

		atomic_store(&run->thread_done[i], false);
		if (a) {
			a->d = d;
			a->i = i;
		}
		if (!a || pthread_create(&d->wth[i], NULL, wl_main, a)) {
			free(a);
			run_fail(run, -EAGAIN, "starting a workload thread");
			atomic_fetch_sub(&run->running, n - i);
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(d->wth[i], NULL);
}

/* What the session's log did, for the report: wraps, space flushes and waits, and the
 * flush gate's generations on a gated disk. */
static void session_tally(struct ct_campaign *cp, struct delog_ct_run *run, delog *log)
{
	struct delog_stats st = { .size = sizeof(st) };
	struct jrnl_log_stats js;
	struct iol_counters ic;

	engine_journal_stats(log, &js);
	delog_stats(log, &st);
	iol_dev_counters(run->dev, &ic);
	pthread_mutex_lock(&cp->mu);
	if (run->dev_flags & CT_DEV_GATE) {
		cp->rep->gate_generations += ic.dev_flushes;
		cp->rep->gate_inline += ic.gate_inline;
	}
	cp->rep->wraps += js.wraps;
	cp->rep->bound_flushes += js.bound_flushes;
	cp->rep->cover_flushes += js.cover_flushes;
	cp->rep->space_waits += st.space_waits;
	pthread_mutex_unlock(&cp->mu);
}

static void *driver_main(void *p)
{
	struct driver *d = p;
	struct ct_campaign *cp = d->cp;
	struct delog_ct_run *run = d->run;
	const struct delog_ct_app *app = cp->o.app;
	struct delog_options lo = cp->o.log;
	delog *log = NULL;
	int err;

	lo.recover = app->replay;
	lo.recover_arg = run->state;
	err = engine_open_dev(run->dev, &lo, &log);
	if (err) {
		run_fail(run, err, "opening the log (after the previous session's cut)");
		atomic_store(&run->phase, CT_DONE);
		return NULL;
	}
	run->log = log;
	pthread_mutex_lock(&run->log_mu);
	run->log_open = true;
	pthread_mutex_unlock(&run->log_mu);
	atomic_store(&run->phase, CT_RUNNING);
	workload_run(d);
	/* The controller takes the cut (or passes, in a last session). */
	pthread_mutex_lock(&run->log_mu);
	atomic_store(&run->phase, CT_CUT_WANTED);
	while (atomic_load(&run->phase) == CT_CUT_WANTED)
		pthread_cond_wait(&run->phase_cv, &run->log_mu);
	pthread_mutex_unlock(&run->log_mu);
	session_tally(cp, run, log);
	pthread_mutex_lock(&run->log_mu);
	run->log_open = false;
	pthread_mutex_unlock(&run->log_mu);
	delog_close(log); /* a close after the cut may fail: nothing depends on it */
	run->log = NULL;
	atomic_store(&run->phase, CT_DONE);
	return NULL;
}

/* ---- the controller ---- */

struct ctl {
	struct ct_campaign *cp;
	struct delog_ct_run *run;
	unsigned char *cut;
	size_t last_ev;
	size_t last_ack;
	uint64_t last_dur;
	uint64_t idle_since;
	uint64_t points;
	bool cut_taken;
	bool media_dirty;
};

static uint64_t read_durable(struct delog_ct_run *run)
{
	uint64_t d = 0;

	pthread_mutex_lock(&run->log_mu);
	if (run->log_open)
		d = delog_durable_seq(run->log);
	pthread_mutex_unlock(&run->log_mu);
	return d;
}

/* The kinds of event since the last point, for the report; and whether the media moved
 * (a flush made its capture durable, or a FUA write completed). */
static void classify(struct ctl *t, size_t L, bool ack)
{
	struct iol_sim_event ev[64];
	bool kind[4] = { false, false, false, ack };

	for (size_t at = t->last_ev == SIZE_MAX ? 0 : t->last_ev; at < L;) {
		size_t n = iol_sim_trace_copy(t->run->dev, at, ev, 64);

		if (!n)
			break;
		for (size_t i = 0; i < n; i++) {
			bool fua = (ev[i].opf & IOL_FUA) && (ev[i].opf & 0xffu) == IOL_OP_WRITE;

			kind[0] |= ev[i].type == IOL_SIM_EV_SUBMIT;
			kind[1] |= ev[i].type == IOL_SIM_EV_COMPLETE;
			kind[2] |= ev[i].type == IOL_SIM_EV_FLUSH_DONE;
			if (ev[i].type == IOL_SIM_EV_FLUSH_DONE ||
			    (ev[i].type == IOL_SIM_EV_COMPLETE && fua))
				t->media_dirty = true;
		}
		at += n;
	}
	for (int i = 0; i < 4; i++)
		t->cp->rep->points_by[i] += kind[i];
}

/* A crash point now, its states, and their checks. */
static int point_now(struct ctl *t, size_t L, size_t acks, uint64_t dur)
{
	struct ct_campaign *cp = t->cp;
	struct ct_point pt;
	uint64_t left = cp->o.states > cp->rep->states ? cp->o.states - cp->rep->states : 0;
	uint64_t per = cp->o.states / 1000; /* spread a small budget over many points */
	int err;

	per = per < 8 ? 8 : per > CT_POINT_STATES ? CT_POINT_STATES : per;

	classify(t, L, acks != t->last_ack);
	if (t->media_dirty) {
		err = ct_media_refresh(cp, t->run->dev);
		if (err)
			return err;
		t->media_dirty = false;
	}
	err = ct_point_take(cp, t->run, &pt);
	pt.durable = dur;
	pt.id = ++t->points;
	if (!err)
		err = ct_point_states(cp, &pt, left < per ? left : per);
	if (!err) {
		cp->pt = &pt;
		ct_check_states(cp);
		err = ct_point_handle_failures(cp, &pt);
		cp->pt = NULL;
	}
	ct_point_free(&pt);
	t->last_ev = L;
	t->last_ack = acks;
	t->last_dur = dur;
	return err;
}

/* The cut has been taken (or passed): the driver closes the log. */
static void phase_closing(struct delog_ct_run *run)
{
	pthread_mutex_lock(&run->log_mu);
	atomic_store(&run->phase, CT_CLOSING);
	pthread_cond_broadcast(&run->phase_cv);
	pthread_mutex_unlock(&run->log_mu);
}

/* @what: "nothing pending and no progress", or the serial mode's "a thread never slept". */
static int stall_report(struct ctl *t, const char *what)
{
	struct delog_ct_run *run = t->run;
	char *w = t->cp->rep->why;
	size_t len = sizeof(t->cp->rep->why), n;

	n = (size_t)snprintf(w, len,
			     "run %" PRIu64 " session %u: hung: %s for %u s; workload threads "
			     "still out:",
			     run->run, run->session, what, t->cp->o.stall_s);
	for (unsigned i = 0; i < t->cp->o.threads && n < len; i++) {
		_Atomic(const char *) *slot = atomic_load(&run->call_slot[i]);
		const char *call = slot ? atomic_load(slot) : NULL;

		if (!atomic_load(&run->thread_done[i]))
			n += (size_t)snprintf(w + n, len - n, " %u (last in %s)", i,
					      call ? call : "no delog call");
	}
	if (atomic_load(&run->phase) >= CT_CUT_WANTED && n < len)
		n += (size_t)snprintf(w + n, len - n, " (none: the close)");
	pthread_mutex_lock(&run->log_mu);
	if (run->log_open && n < len) {
		struct delog_stats st = { .size = sizeof(st) };

		delog_stats(run->log, &st);
		n += (size_t)snprintf(w + n, len - n,
				      "; the log: %" PRIu64 " of %" PRIu64
				      " bytes in use, durable %" PRIu64 ", %" PRIu64
				      " waits for space",
				      st.log_used, st.log_size, st.durable_seq, st.space_waits);
		if (st.space_waits && n < len)
			snprintf(w + n, len - n,
				 " (commits wait for log space: does the workload "
				 "release what it wrote back? delog_release)");
	}
	pthread_mutex_unlock(&run->log_mu);
	t->cp->err = -ETIMEDOUT;
	return -ETIMEDOUT;
}

/* One step of the controller: a point if something moved, the cut, a delivery.
 * Returns 1 when the session is over, 0 to go on, or an error. */
static int ctl_step(struct ctl *t)
{
	struct ct_campaign *cp = t->cp;
	struct delog_ct_run *run = t->run;
	int phase;
	size_t L, acks;
	uint64_t dur;
	bool points = !t->cut_taken && !atomic_load(&cp->stopping);

	if (run->ser && ct_serial_quiet(run->ser, cp->o.stall_s)) /* CT5 */
		return stall_report(t, "serial mode: a thread of the session did not sleep");
	phase = atomic_load(&run->phase);
	L = iol_sim_trace_len(run->dev);
	acks = atomic_load(&run->ack_count);
	dur = read_durable(run);

	if (points && (L != t->last_ev || acks != t->last_ack || dur != t->last_dur)) {
		int err = point_now(t, L, acks, dur);

		if (err)
			return err;
		if (ct_budget_spent(cp))
			atomic_store(&cp->stopping, true);
		t->idle_since = 0;
	}
	if (phase == CT_CUT_WANTED) {
		if (t->cut) {
			int err = iol_sim_crash(run->dev,
						ct_seed_for(run->seed, 0xc07, run->session),
						IOL_SIM_STRICT, t->cut, NULL);
			if (err)
				return err;
			t->cut_taken = true;
		}
		phase_closing(run);
		if (run->ser)
			return 0; /* the driver runs: one move at a time (CT6) */
	}
	if (run->ser) {
		if (!ct_serial_move(run->ser, L)) {
			t->idle_since = 0;
			return 0;
		}
	} else if (iol_sim_pending(run->dev)) {
		/* CT3: nothing submitted since this step's point is delivered before a
		 * point has seen it in flight. */
		if (points)
			iol_sim_deliver_if(run->dev, 1, IOL_SIM_RANDOM, L);
		else
			iol_sim_deliver(run->dev, 1, IOL_SIM_RANDOM);
		t->idle_since = 0;
		return 0;
	}
	if (phase == CT_DONE)
		return 1;
	if (!t->idle_since)
		t->idle_since = ct_now_ns();
	else if (ct_now_ns() - t->idle_since > (uint64_t)cp->o.stall_s * 1000000000ull)
		return stall_report(t, "nothing pending and no progress");
	nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	return 0;
}

int ct_session(struct ct_campaign *cp, struct delog_ct_run *run, const unsigned char *img,
	       unsigned char *cut)
{
	struct driver *d = calloc(1, sizeof(*d)); /* the driver's: left to it after a hang */
	struct ctl t = { .cp = cp, .run = run, .cut = cut, .last_ev = SIZE_MAX };
	const struct delog_ct_app *app = cp->o.app;
	pthread_t th;
	int err = 0, r;

	if (cp->o.flags & DELOG_CT_SERIAL) {
		run->ser = ct_serial_new(cp, ct_seed_for(run->seed, 0x5e7, run->session));
		run->dev = run->ser ? ct_serial_dev(run->ser, cp->o.dev_bytes, cp->o.sector,
						    ct_seed_for(run->seed, 0xde5, run->session),
						    run->dev_flags, img) :
				      NULL;
	} else {
		run->dev = ct_sim_dev(cp->o.dev_bytes, cp->o.sector,
				      ct_seed_for(run->seed, 0xde5, run->session), true,
				      run->dev_flags, img);
	}
	if (!run->dev || !d) {
		free(d);
		ct_serial_free(run->ser);
		run->ser = NULL;
		if (run->dev)
			iol_dev_close(run->dev);
		run->dev = NULL;
		return -ENOMEM;
	}
	d->cp = cp;
	d->run = run;
	ct_media_load(cp, img);
	run->state = app->state_new ? app->state_new(app->arg) : NULL;
	if (app->state_new && !run->state) {
		free(d);
		ct_serial_free(run->ser);
		run->ser = NULL;
		iol_dev_close(run->dev);
		run->dev = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&run->log_mu, NULL);
	pthread_cond_init(&run->phase_cv, NULL);
	atomic_store(&run->phase, CT_OPENING);
	t.last_ack = atomic_load(&run->ack_count);
	if (pthread_create(&th, NULL, driver_main, d)) {
		err = -EAGAIN;
		goto out;
	}
	while ((r = ctl_step(&t)) == 0)
		;
	if (r == -ETIMEDOUT)
		return r; /* the threads are left running: the caller reports and returns */
	if (r < 0) {
		/* Let the workload finish so its threads can be joined. */
		err = r;
		atomic_store(&cp->stopping, true);
		t.cut = NULL;
		if (run->ser)
			ct_serial_release(run->ser);
		while (atomic_load(&run->phase) != CT_DONE || iol_sim_pending(run->dev)) {
			if (atomic_load(&run->phase) == CT_CUT_WANTED)
				phase_closing(run);
			if (!iol_sim_deliver(run->dev, 1, IOL_SIM_RANDOM))
				sched_yield();
		}
	}
	pthread_join(th, NULL);
	ct_trace_session(cp, run);
	if (!err && run->werr) {
		err = run->werr;
		snprintf(cp->rep->why, sizeof(cp->rep->why), "%s", run->wwhy);
	}
out:
	free(d);
	if (app->state_free && run->state)
		app->state_free(app->arg, run->state);
	run->state = NULL;
	ct_serial_free(run->ser); /* before the disk: the deliverer delivers on it */
	run->ser = NULL;
	iol_dev_close(run->dev);
	run->dev = NULL;
	pthread_cond_destroy(&run->phase_cv);
	pthread_mutex_destroy(&run->log_mu);
	return err;
}
