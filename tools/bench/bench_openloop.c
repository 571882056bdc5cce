/*
 * bench_openloop.c - `delog bench --workload commit --rate LIST`: open-loop latency of
 * durable commits, per offered rate, for each flush policy and the raw-fdatasync
 * baseline, and the rate where each saturates.
 *
 * A closed loop (bench_commit.c) lets each client issue its next commit only when its
 * last one returned, so a slow commit delays the ones behind it and they are never
 * measured as late (coordinated omission): its latency is what a commit costs, not what
 * an application receiving requests at a given rate waits.  Here the commits arrive on
 * their own schedule, a Poisson process of the offered rate (exponential gaps from a
 * splitmix64 generator seeded with --seed + the rate's index, so every system at one rate
 * sees the same schedule), and a commit's latency runs from its intended arrival time to
 * the return of its delog_tx_commit_force (or the baseline's fdatasync).
 *
 * How a point runs: a pool of worker threads (--workers, default the largest --clients
 * count) waits on a queue; the measuring thread is the dispatcher: it sleeps until the
 * next arrival's time (timer slack 1 ns), appends every arrival that is due to the queue
 * (a ring of QUEUE_CAP intended times) and wakes one worker per arrival; a free worker
 * takes the oldest.
 * When no worker is free the arrival waits in the queue, and the wait is part of its
 * latency; if the ring itself is full the dispatcher appends late, with the intended
 * times unchanged.  The schedule starts 1 ms after the workers exist; a warm-up of
 * bench_warmup_ns(--time) precedes the measured window of --time seconds.  Counted:
 *   achieved/s   commits that completed inside the window, per second of it;
 *   latency      of every arrival intended inside the window: completed ones (those
 *                still running when the window closes finish and count), and those still
 *                queued when it closes (unserved) at the window's end minus their
 *                arrival, a lower bound, so a saturated point's tail is not hidden;
 *   queue        the queue's length when the window opens and closes, and its maximum.
 * A point is saturated when achieved/s is below SAT_RATIO of the arrivals in the window
 * per second, or the queue grew over the window by more than max(SAT_QUEUE, 1% of the
 * window's arrivals).  Every listed rate runs for every system (a saturated point does
 * not stop the list), rate by rate, the baseline first, so drift in the device affects
 * all alike.  A delog point opens the log (formatted once by bench_commit.c) with the
 * policy under test, as the closed loop does; the measuring thread releases the log every
 * BENCH_RELEASE_NS.  The baseline is bench_util.c's raw commit (O_DIRECT pwrite +
 * fdatasync at the worker's own offsets); it needs a file (not on --backend sim).
 *
 * --plot FILE.png draws p99 against offered load per system (log-log) with gnuplot
 * (bench_gnuplot); without gnuplot the tables are printed and the plot is skipped, with
 * a note.
 */
#include "bench.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_CAP (1u << 20)      /* arrivals the queue holds (a power of two) */
#define START_DELAY_NS 1000000ull /* schedule start after the workers exist */
#define SAT_RATIO 0.95
#define SAT_QUEUE 16u
#define FULL_WAIT_NS 100000ull /* the dispatcher's pause while the ring is full */

struct ol_point;

struct worker {
	struct ol_point *pt;
	unsigned id;
	pthread_t th;
	bool started;
	unsigned char *buf;
	uint64_t key, next;
	uint64_t done; /* completed inside the window */
	struct bench_samples lat;
};

struct ol_point {
	struct bench *b;
	const struct bench_ol_params *p;
	delog *log; /* NULL: the raw baseline */
	struct bench_raw raw;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t *ring;
	uint64_t released, taken; /* arrivals appended, taken by workers */
	/* The queue as the window opens, exactly (queue_start): arrivals intended before
	 * it, less those a worker took before it.  A snapshot taken by the dispatcher when
	 * it next wakes would miss what workers took in between, so a loaded machine
	 * showed more commits in the window than arrivals + queue + workers allow. */
	uint64_t due_early, taken_early;
	uint64_t ws, we; /* the window (now_ns), set before the first arrival */
	bool stop;
	int err; /* a worker's first error */
};

/* ---- the schedule ---- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* An exponential gap (ns) of mean 1e9 / @rate. */
static uint64_t gap_ns(uint64_t *s, double rate)
{
	double u = (double)(splitmix64(s) >> 11) * 0x1.0p-53; /* [0, 1) */

	return (uint64_t)llround(-log1p(-u) / rate * 1e9);
}

/* ---- the workers ---- */

static int do_commit(struct worker *w)
{
	const struct bench_ol_params *p = w->pt->p;

	if (w->pt->log)
		return bench_delog_commit(w->pt->log, p->items, p->item_size, w->id, &w->key,
					  w->buf, p->force);
	return bench_raw_commit(&w->pt->raw, w->id, &w->next, w->buf);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ol_point *pt = w->pt;

	pthread_mutex_lock(&pt->lock);
	for (;;) {
		uint64_t t, done;
		int err;

		while (!pt->stop && pt->taken == pt->released)
			pthread_cond_wait(&pt->cond, &pt->lock);
		if (pt->stop)
			break;
		t = pt->ring[pt->taken++ & (QUEUE_CAP - 1)];
		if (t < pt->ws && now_ns() < pt->ws)
			pt->taken_early++;
		pthread_mutex_unlock(&pt->lock);
		err = do_commit(w);
		done = now_ns();
		pthread_mutex_lock(&pt->lock);
		if (err) {
			if (!pt->err)
				pt->err = err;
			pt->stop = true;
			pthread_cond_broadcast(&pt->cond);
			break;
		}
		if (t >= pt->ws && t < pt->we)
			bench_sample_add(&w->lat, done - t);
		if (done >= pt->ws && done < pt->we)
			w->done++;
	}
	pthread_mutex_unlock(&pt->lock);
	return NULL;
}

/* ---- a point ---- */

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
			       .tv_nsec = (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * The dispatcher (the calling thread): the schedule of @rate from @seed until the window
 * closes, into the queue.  Fills the arrival and queue figures of @out.
 */
static void dispatch(struct ol_point *pt, double rate, uint64_t seed, struct bench_ol_point *out)
{
	uint64_t s = seed, t = pt->ws - bench_warmup_ns(pt->p->time_s) + gap_ns(&s, rate);
	uint64_t next_chore = 0;
	bool in_window = false;

	while (t < pt->we) {
		uint64_t now = now_ns(), n = 0, q;

		if (now >= next_chore) {
			if (pt->log)
				bench_release(pt->log);
			if (bench_interrupted(pt->b))
				break;
			next_chore = now + BENCH_RELEASE_NS;
		}
		if (now < t) {
			sleep_until(t < next_chore ? t : next_chore);
			continue;
		}
		pthread_mutex_lock(&pt->lock);
		if (pt->stop) {
			pthread_mutex_unlock(&pt->lock);
			break;
		}
		if (!in_window && now >= pt->ws)
			in_window = true;
		while (t <= now && t < pt->we && pt->released - pt->taken < QUEUE_CAP) {
			pt->ring[pt->released++ & (QUEUE_CAP - 1)] = t;
			if (t >= pt->ws)
				out->arrivals++;
			else
				pt->due_early++;
			t += gap_ns(&s, rate);
			n++;
		}
		q = pt->released - pt->taken;
		if (in_window && q > out->queue_max)
			out->queue_max = q;
		/* one wake-up per arrival (a broadcast would wake the whole pool) */
		for (uint64_t i = 0; i < n && i < pt->p->workers; i++)
			pthread_cond_signal(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
		if (!n)
			bench_sleep_ns(FULL_WAIT_NS); /* the ring is full */
	}
	/* The window's rest (no arrival is left in it), unless stopped. */
	while (!bench_interrupted(pt->b) && now_ns() < pt->we) {
		uint64_t now = now_ns(), e = now + BENCH_RELEASE_NS;
		bool stop;

		pthread_mutex_lock(&pt->lock);
		stop = pt->stop;
		pthread_mutex_unlock(&pt->lock);
		if (stop)
			break;
		if (pt->log)
			bench_release(pt->log);
		sleep_until(e < pt->we ? e : pt->we);
	}
	pthread_mutex_lock(&pt->lock);
	out->queue_start = pt->due_early - pt->taken_early;
	out->queue_end = pt->released - pt->taken;
	if (out->queue_start > out->queue_max)
		out->queue_max = out->queue_start;
	if (out->queue_end > out->queue_max)
		out->queue_max = out->queue_end;
	pt->stop = true;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
}

/* One point: @nw workers on @pt's log (or raw baseline) at @rate.  0 or an error. */
static int run_point(struct ol_point *pt, double rate, uint64_t seed, struct bench_ol_point *out)
{
	const struct bench_ol_params *p = pt->p;
	unsigned nw = p->workers;
	struct bench_samples all = { 0 };
	struct worker *w;
	size_t buflen = pt->log ? p->item_size : pt->raw.rec;
	uint64_t unserved_end;
	int err = 0;

	w = calloc(nw, sizeof(*w));
	pt->ring = malloc(QUEUE_CAP * sizeof(*pt->ring));
	if (!w || !pt->ring) {
		free(w);
		free(pt->ring);
		return -ENOMEM;
	}
	pthread_mutex_init(&pt->lock, NULL);
	pthread_cond_init(&pt->cond, NULL);
	pt->released = pt->taken = pt->due_early = pt->taken_early = 0;
	pt->stop = false;
	pt->err = 0;
	pt->ws = pt->we = UINT64_MAX;
	for (unsigned i = 0; i < nw && !err; i++) {
		w[i].pt = pt;
		w[i].id = i;
		w[i].key = 1;
		if ((err = bench_client_buf(&w[i].buf, buflen, i)))
			break;
		if ((err = -pthread_create(&w[i].th, NULL, worker_main, &w[i])))
			bench_fail(pt->b, err, NULL, "cannot start worker thread %u of %u: %s",
				   i + 1, nw, strerror(-err));
		else
			w[i].started = true;
	}
	if (!err) {
		pthread_mutex_lock(&pt->lock);
		pt->ws = now_ns() + START_DELAY_NS + bench_warmup_ns(p->time_s);
		pt->we = pt->ws + (uint64_t)llround(p->time_s * 1e9);
		pthread_mutex_unlock(&pt->lock);
		dispatch(pt, rate, seed, out);
	} else {
		pthread_mutex_lock(&pt->lock);
		pt->stop = true;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
	}
	for (unsigned i = 0; i < nw; i++) {
		if (w[i].started)
			pthread_join(w[i].th, NULL);
		out->commits += w[i].done;
		bench_samples_take(&all, &w[i].lat);
		free(w[i].buf);
	}
	/* The arrivals of the window still queued: a lower bound of their latency. */
	unserved_end = pt->we;
	for (uint64_t k = pt->taken; !err && k < pt->released; k++) {
		uint64_t t = pt->ring[k & (QUEUE_CAP - 1)];

		if (t >= pt->ws && t < pt->we) {
			bench_sample_add(&all, unserved_end - t);
			out->unserved++;
		}
	}
	if (!err)
		err = pt->err;
	if (!err && bench_interrupted(pt->b))
		err = -EINTR;
	if (!err && all.oom)
		err = -ENOMEM;
	if (!err) {
		double win = p->time_s;

		out->offered_per_s = rate;
		out->window_s = win;
		out->arrivals_per_s = (double)out->arrivals / win;
		out->achieved_per_s = (double)out->commits / win;
		bench_samples_stats(&all, &out->lat);
		out->p999_us = all.n ? (double)percentile_sorted(all.v, all.n, 99.9) / 1e3 : NAN;
		out->saturated = out->achieved_per_s < SAT_RATIO * out->arrivals_per_s ||
				 out->queue_end >
					 out->queue_start +
						 fmax(SAT_QUEUE, (double)out->arrivals / 100);
	}
	bench_samples_free(&all);
	pthread_cond_destroy(&pt->cond);
	pthread_mutex_destroy(&pt->lock);
	free(pt->ring);
	pt->ring = NULL;
	free(w);
	return err;
}

static int delog_point(struct bench *b, const struct bench_ol_params *p, unsigned sys, unsigned ri,
		       struct bench_ol_point *out)
{
	bool sim = bench_is_sim(b);
	enum delog_flush_policy pol = p->policy[sys];
	struct delog_options lo = bench_log_opts(b, pol, sim ? DELOG_OPEN_CREATE : 0, p->logbufs,
						 p->logbsize, p->log_size);
	struct ol_point pt = { .b = b, .p = p, .raw.fd = -1 };
	int err, e2;

	err = delog_open(sim ? NULL : b->t.path, &lo, &pt.log);
	if (err) {
		bench_fail(b, err, sim ? "sim" : b->t.path, "cannot open the log (%s): %s",
			   delog_flush_policy_name(pol), tool_strerror(err));
		return err;
	}
	err = run_point(&pt, p->rates[ri], p->seed + ri, out);
	e2 = delog_close(pt.log);
	if (err && err != -EINTR)
		bench_fail(b, err, NULL, "%s at %g/s: %s", delog_flush_policy_name(pol),
			   p->rates[ri], tool_strerror(err));
	else if (!err && e2)
		bench_fail(b, err = e2, NULL, "%s at %g/s: closing the log: %s",
			   delog_flush_policy_name(pol), p->rates[ri], tool_strerror(e2));
	return err;
}

static int raw_point(struct bench *b, const struct bench_ol_params *p, unsigned ri,
		     struct bench_ol_point *out)
{
	struct ol_point pt = { .b = b, .p = p };
	int err;

	pt.raw.fd = open(b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (pt.raw.fd < 0) {
		err = -errno;
		bench_fail(b, err, b->t.path, "cannot open with O_DIRECT: %s", strerror(-err));
		return err;
	}
	bench_raw_layout(&pt.raw, p->raw_base, p->raw_area, p->raw_rec, p->workers);
	err = run_point(&pt, p->rates[ri], p->seed + ri, out);
	close(pt.raw.fd);
	if (err && err != -EINTR)
		bench_fail(b, err, NULL, "raw-fdatasync at %g/s: %s", p->rates[ri], strerror(-err));
	return err;
}

/* ---- the report ---- */

static const char *sys_name(const struct bench_ol_params *p, unsigned sys)
{
	return sys == p->npolicy ? "raw-fdatasync" : delog_flush_policy_name(p->policy[sys]);
}

static void print_human(struct bench *b, const struct bench_ol_params *p,
			const struct bench_ol_point *pts, unsigned nsys, const char *plot_note)
{
	bench_out(b, "delog bench --workload commit, open loop, %s\n",
		  bench_is_sim(b) ? "(sim)" : b->t.path);
	if (bench_is_sim(b))
		bench_out(b,
			  "  target      the in-memory disk (--backend sim); baseline skipped (it "
			  "needs a file)\n");
	else
		bench_out_target(b, p->fs_type, b->o.backend);
	bench_out_disk(b, p->disk);
	bench_out(b, "  commit      %u x %u B items, %s\n", p->items, p->item_size,
		  p->force ? "begin + log + commit_force" :
			     "begin + log + commit, NOT forced (--no-force)");
	if (p->baseline)
		bench_out(b,
			  "  baseline    raw-fdatasync: per worker, O_DIRECT pwrite of %" PRIu64
			  " B + fdatasync\n",
			  p->raw_rec);
	bench_out(b,
		  "  open loop   Poisson arrivals (seed %" PRIu64 " + rate index), %u workers, "
		  "%.2f s per point after a %.2f s warm-up; latency from each commit's intended "
		  "arrival\n",
		  p->seed, p->workers, p->time_s, (double)bench_warmup_ns(p->time_s) / 1e9);
	/* The baseline's table first, as it runs first. */
	for (unsigned k = 0; k < nsys; k++) {
		unsigned sys = p->baseline ? (k ? k - 1 : p->npolicy) : k;

		bench_out(b, "\n  %s%s\n  %10s %10s %10s %9s %9s %9s %9s %8s %9s  %s\n",
			  sys_name(p, sys),
			  sys < p->npolicy && p->policy[sys] == DELOG_FLUSH_NONE ? " (UNSAFE)" : "",
			  "offered/s", "arrived/s", "achieved/s", "p50 us", "p99 us", "p99.9 us",
			  "max us", "unserved", "queue max", "saturated");
		for (unsigned ri = 0; ri < p->nrates; ri++) {
			const struct bench_ol_point *q = &pts[(size_t)ri * nsys + sys];

			bench_out(b,
				  "  %10.0f %10.0f %10.0f %9.1f %9.1f %9.1f %9.1f %8" PRIu64
				  " %9" PRIu64 "  %s\n",
				  q->offered_per_s, q->arrivals_per_s, q->achieved_per_s,
				  q->lat.median_us, q->lat.p99_us, q->p999_us, q->lat.max_us,
				  q->unserved, q->queue_max, q->saturated ? "saturated" : "no");
		}
	}
	bench_out(b,
		  "\n  saturated: achieved/s below %.0f%% of arrived/s, or the queue grew over "
		  "the window by more than max(%u, 1%% of its arrivals); unserved: arrivals of the "
		  "window still queued at its end (counted in the latencies as a lower bound)\n",
		  SAT_RATIO * 100, SAT_QUEUE);
	if (plot_note)
		bench_out(b, "%s\n", plot_note);
	bench_out(b, "\nbench took %.1f s\n", (double)(now_ns() - b->t0) / 1e9);
}

static void print_json(struct bench *b, const struct bench_ol_params *p,
		       const struct bench_ol_point *pts, unsigned nsys, bool plotted)
{
	struct json j;

	bench_json_begin(b, &j);
	json_str(&j, "fs_type", p->fs_type);
	bench_json_disk(&j, p->disk);
	json_str(&j, "mode", "open-loop");
	json_obj_begin(&j, "params");
	json_arr_begin(&j, "rates");
	for (unsigned i = 0; i < p->nrates; i++)
		json_dbl(&j, NULL, p->rates[i]);
	json_arr_end(&j);
	json_arr_begin(&j, "policies");
	for (unsigned i = 0; i < p->npolicy; i++)
		json_str(&j, NULL, delog_flush_policy_name(p->policy[i]));
	json_arr_end(&j);
	json_dbl(&j, "time_s", p->time_s);
	json_dbl(&j, "warmup_s", (double)bench_warmup_ns(p->time_s) / 1e9);
	json_u64(&j, "item_size", p->item_size);
	json_u64(&j, "items", p->items);
	json_u64(&j, "payload_bytes", (uint64_t)p->items * p->item_size);
	json_u64(&j, "workers", p->workers);
	json_u64(&j, "seed", p->seed);
	json_bool(&j, "baseline", p->baseline);
	json_bool(&j, "force", p->force);
	json_obj_end(&j);
	json_arr_begin(&j, "points");
	for (unsigned ri = 0; ri < p->nrates; ri++)
		for (unsigned sys = 0; sys < nsys; sys++) {
			const struct bench_ol_point *q = &pts[(size_t)ri * nsys + sys];

			json_obj_begin(&j, NULL);
			json_str(&j, "workload", "commit");
			json_str(&j, "policy", sys_name(p, sys));
			json_bool(&j, "unsafe",
				  sys < p->npolicy && p->policy[sys] == DELOG_FLUSH_NONE);
			json_dbl(&j, "offered_per_s", q->offered_per_s);
			json_u64(&j, "arrivals", q->arrivals);
			json_dbl(&j, "arrivals_per_s", q->arrivals_per_s);
			json_u64(&j, "commits", q->commits);
			json_dbl(&j, "achieved_per_s", q->achieved_per_s);
			json_dbl(&j, "window_s", q->window_s);
			json_u64(&j, "samples", q->lat.n);
			json_u64(&j, "unserved", q->unserved);
			bench_json_lat(&j, &q->lat);
			json_dbl(&j, "lat_p999_us", q->p999_us);
			json_u64(&j, "queue_start", q->queue_start);
			json_u64(&j, "queue_end", q->queue_end);
			json_u64(&j, "queue_max", q->queue_max);
			json_bool(&j, "saturated", q->saturated);
			json_obj_end(&j);
		}
	json_arr_end(&j);
	if (plotted)
		json_str(&j, "plot", p->plot);
	else
		json_null(&j, "plot");
	bench_json_end(b, &j);
}

/* ---- the plot ---- */

static int plot(struct bench *b, const struct bench_ol_params *p, const struct bench_ol_point *pts,
		unsigned nsys)
{
	char dat[PATH_MAX], gp[PATH_MAX], title[512], t2[600];
	double rmin = INFINITY, rmax = 0;
	FILE *f;
	int err;

	if ((err = bench_plot_files(b, dat, gp, sizeof(dat), &f)))
		return err;
	for (unsigned ri = 0; ri < p->nrates; ri++) {
		rmin = fmin(rmin, p->rates[ri]);
		rmax = fmax(rmax, p->rates[ri]);
		fprintf(f, "%.6g", p->rates[ri]);
		for (unsigned sys = 0; sys < nsys; sys++) {
			const struct bench_ol_point *q = &pts[(size_t)ri * nsys + sys];

			/* a saturated point is drawn too, as an open marker (column 2 of 2) */
			fprintf(f, " %.6g %.6g", q->saturated ? NAN : q->lat.p99_us,
				q->saturated ? q->lat.p99_us : NAN);
		}
		fputc('\n', f);
	}
	fclose(f);
	if (!(f = fopen(gp, "w"))) {
		err = -errno;
		bench_fail(b, err, NULL, "--plot: cannot write %s: %s", gp, strerror(errno));
		unlink(dat);
		unlink(gp);
		return err;
	}
	snprintf(t2, sizeof(t2),
		 "delog commit, open loop: p99 latency against offered load, %.300s, "
		 "%u x %u B per commit, %u workers",
		 bench_is_sim(b)  ? "sim disk" :
		 b->t.is_blockdev ? b->t.path :
				    p->fs_type,
		 p->items, p->item_size, p->workers);
	bench_gnuplot_name(title, sizeof(title), t2);
	fprintf(f,
		"set terminal pngcairo size 960,600 noenhanced font ',10'\n"
		"set output '%s'\nset title '%s'\n"
		"set logscale xy\nset grid\nset key top left\nset xrange [%g:%g]\n"
		"set xlabel 'offered load, commits/s (Poisson arrivals)'\n"
		"set ylabel 'p99 latency from intended arrival, us (open marker: saturated)'\n"
		"plot ",
		p->plot, title, rmin / 1.5, rmax * 1.5);
	for (unsigned sys = 0; sys < nsys; sys++)
		fprintf(f,
			"%s'%s' using 1:%u with linespoints pt 7 lw 2 lc %u title '%s', "
			"'%s' using 1:%u with points pt 6 ps 1.5 lc %u notitle",
			sys ? ", " : "", dat, 2 + 2 * sys, sys + 1, sys_name(p, sys), dat,
			3 + 2 * sys, sys + 1);
	fprintf(f, "\n");
	fclose(f);
	err = bench_gnuplot(b, gp, p->plot);
	unlink(dat);
	unlink(gp);
	return err;
}

/* ---- the run ---- */

int bench_openloop_run(struct bench *b, const struct bench_ol_params *p)
{
	unsigned nsys = p->npolicy + (p->baseline ? 1 : 0);
	struct bench_ol_point *pts = calloc((size_t)p->nrates * nsys, sizeof(*pts));
	char note[160];
	const char *plot_note = NULL;
	bool plotted = false;
	int err = 0;

	if (!pts) {
		bench_fail(b, -ENOMEM, NULL, "out of memory");
		return TOOL_EXIT_FAIL;
	}
	/* The dispatcher's sleeps end on time (the default slack is 50 us). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (unsigned ri = 0; ri < p->nrates && !err; ri++) {
		if (p->baseline) {
			bench_point(b, "%g/s: raw-fdatasync", p->rates[ri]);
			err = raw_point(b, p, ri, &pts[(size_t)ri * nsys + p->npolicy]);
			bench_point_done(b, err);
		}
		for (unsigned sys = 0; sys < p->npolicy && !err; sys++) {
			bench_point(b, "%g/s: %s", p->rates[ri], sys_name(p, sys));
			err = delog_point(b, p, sys, ri, &pts[(size_t)ri * nsys + sys]);
			bench_point_done(b, err);
		}
		if (!err && bench_interrupted(b))
			err = -EINTR;
	}
	if (!err)
		bench_disk_idle(p->disk, true, BENCH_IDLE_NS);
	bench_progress_clear(b);
	if (!err && p->plot) {
		if (!bench_have_gnuplot()) {
			plot_note = "plot skipped: gnuplot is not installed (apt-get install "
				    "gnuplot-nox)";
			fprintf(stderr, "delog bench: %s\n", plot_note);
		} else if (!(err = plot(b, p, pts, nsys))) {
			plotted = true;
			snprintf(note, sizeof(note),
				 "\nplot of p99 against offered load written to %s", p->plot);
			plot_note = note;
		}
	}
	if (!err) {
		if (b->o.json)
			print_json(b, p, pts, nsys, plotted);
		else
			print_human(b, p, pts, nsys, plot_note);
	}
	free(pts);
	return err ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}
