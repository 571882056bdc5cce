/*
 * bench_spacewait.c - `delog bench --workload spacewait`: how long a committer that
 * waited for log space waits after the space came back.
 *
 * What it measures.  A log is filled with reservations (delog_tx_begin with
 * DELOG_TX_NOWAIT until -EAGAIN) that are held, so nothing else fits.  Each round a
 * waiter thread calls delog_tx_begin for the same reservation and blocks; once it is
 * counted as waiting (delog_stats.space_waits went up) and has had --settle to go to
 * sleep, the measuring thread aborts one held transaction, which returns its grant to
 * the journal, and the latency is from just before that abort to the waiter's return
 * from delog_tx_begin.  The waiter's transaction is then held in the aborted one's
 * place, so every round starts from the same full log.  That is the wake-up the journal's
 * grant owes a waiter (journal/grant.c: returning a grant wakes the waiters under the
 * same lock) plus the scheduler's wake-up of a sleeping thread; a log that polled for
 * space would show its polling interval here.
 *
 * Why a workload of its own: the commit workloads release the log every 2 ms so that it
 * never fills (space_waits stays 0 there); this one measures nothing but the wait.  No
 * I/O is involved in a round (the reservations are only grants), so the figure is the
 * engine's and the scheduler's, on any backend; the default is a file as everywhere,
 * and --backend sim gives the same without a device.
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUNDS 100000u
#define MAX_FILL 65536u /* held reservations at most (a 16 MiB log holds ~250 of 64K) */
#define MAX_SETTLE_US 100000u
#define WAIT_LIMIT_NS (10ull * 1000000000ull) /* a waiter not counted by then: a failure */

enum {
	OPT_ROUNDS = BENCH_OPT_WORKLOAD,
	OPT_POLICY,
	OPT_LOG_SIZE,
	OPT_RESERVATION,
	OPT_SETTLE,
};

static const struct option spacewait_options[] = {
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "size", required_argument, NULL, OPT_LOG_SIZE },
	{ "reservation", required_argument, NULL, OPT_RESERVATION },
	{ "settle", required_argument, NULL, OPT_SETTLE },
	{ 0, 0, 0, 0 },
};

struct spacewait_opts {
	unsigned rounds;
	enum delog_flush_policy policy[BENCH_NR_POLICIES];
	unsigned npolicy;
	uint64_t log_size;
	uint64_t reservation;
	unsigned settle_us;
};

/* ---- options ---- */

static void spacewait_defaults(void *state)
{
	struct spacewait_opts *o = state;

	o->rounds = 300;
	o->npolicy = bench_safe_policies(o->policy);
	o->log_size = BENCH_MIN_LOG_SIZE;
	o->reservation = 64u << 10;
	o->settle_us = 1000;
}

static int spacewait_option(void *state, int opt, const char *arg)
{
	struct spacewait_opts *o = state;
	uint64_t v;

	switch (opt) {
	case OPT_ROUNDS:
		return bench_parse_count("rounds", arg, 1, MAX_ROUNDS, &o->rounds);
	case OPT_POLICY:
		return bench_parse_policies(arg, o->policy, &o->npolicy);
	case OPT_LOG_SIZE:
		return bench_parse_log_size(arg, &o->log_size);
	case OPT_RESERVATION:
		if (parse_size(arg, &v) || v < 4096 || v > (64u << 20))
			return bench_usage_error("--reservation: '%s' is not a size from 4K to 64M",
						 arg);
		o->reservation = v;
		return 0;
	case OPT_SETTLE:
		if (parse_count(arg, 0, MAX_SETTLE_US, &v))
			return bench_usage_error("--settle: '%s' is not a count of microseconds "
						 "from 0 to %u",
						 arg, MAX_SETTLE_US);
		o->settle_us = (unsigned)v;
		return 0;
	}
	return bench_usage_error("unknown option");
}

static int spacewait_check(struct bench *b, void *state)
{
	struct spacewait_opts *o = state;

	(void)b;
	/* delog refuses a reservation over a quarter of the log; the fill needs several. */
	if (o->reservation > o->log_size / 8)
		return bench_usage_error("--reservation: %" PRIu64 " bytes is more than an eighth "
					 "of the log (--size)",
					 o->reservation);
	if (o->log_size / o->reservation > MAX_FILL)
		return bench_usage_error("--reservation: a log of %" PRIu64 " bytes holds more "
					 "than %u reservations of %" PRIu64 " bytes; give a "
					 "larger one",
					 o->log_size, MAX_FILL, o->reservation);
	return 0;
}

static void spacewait_help(FILE *f)
{
	fprintf(f,
		"      --rounds N         waits measured per policy (default 300)\n"
		"  -p, --policy LIST      flush policies: sync, async, single, none (UNSAFE: no\n"
		"                         flushes) (default sync,async,single)\n"
		"  -s, --size N           log size, at least 16M (default 16M)\n"
		"      --reservation N    bytes each transaction reserves, 4K..64M (default 64K)\n"
		"      --settle US        microseconds the waiter is given to go to sleep once\n"
		"                         it is counted as waiting (default 1000)\n"
		"\nThe log is filled with held reservations; each round a thread blocks in\n"
		"delog_tx_begin for space, one held transaction is aborted, and the latency is\n"
		"from that abort to the waiter's return (the wake-up of a committer that waited\n"
		"for space).  No I/O is measured.\n");
}

/* ---- a point ---- */

struct waiter {
	delog *log;
	uint64_t reservation;
	pthread_t th;
	delog_tx *tx;
	int err;
	_Atomic uint64_t done_ns; /* 0 until delog_tx_begin returned */
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->err = delog_tx_begin(w->log, w->reservation, 0, &w->tx);
	atomic_store(&w->done_ns, now_ns());
	return NULL;
}

static uint64_t space_waits(delog *log)
{
	struct delog_stats st = { .size = sizeof(st) };

	return delog_stats(log, &st) ? UINT64_MAX : st.space_waits;
}

struct row {
	enum delog_flush_policy policy;
	unsigned held; /* reservations that filled the log */
	struct lat_stats lat;
};

/* One round: 0, or a negative errno after bench_fail. */
static int round_once(struct bench *b, const struct spacewait_opts *o, delog *log, delog_tx **held,
		      unsigned nheld, struct bench_samples *s)
{
	struct waiter w = { .log = log, .reservation = o->reservation };
	uint64_t before = space_waits(log), t0, deadline = now_ns() + WAIT_LIMIT_NS;
	int err;

	if (pthread_create(&w.th, NULL, waiter_main, &w)) {
		bench_fail(b, -EAGAIN, NULL, "cannot start the waiter thread");
		return -EAGAIN;
	}
	while (space_waits(log) == before && !atomic_load(&w.done_ns) && now_ns() < deadline)
		bench_sleep_ns(20000);
	bench_sleep_ns((uint64_t)o->settle_us * 1000);
	if (atomic_load(&w.done_ns) || space_waits(log) == before) {
		if (!atomic_load(&w.done_ns)) { /* not counted, yet not back: let it through */
			delog_tx_abort(held[nheld - 1]);
			held[nheld - 1] = NULL;
		}
		pthread_join(w.th, NULL);
		if (!w.err)
			delog_tx_abort(w.tx);
		err = w.err ? w.err : -EAGAIN;
		bench_fail(b, err, NULL,
			   "the waiter %s (the log was not full: is something else releasing it?)",
			   w.err ? "failed" : "did not wait for space");
		return err;
	}
	t0 = now_ns();
	delog_tx_abort(held[nheld - 1]);
	pthread_join(w.th, NULL);
	held[nheld - 1] = w.err ? NULL : w.tx;
	if (w.err) {
		bench_fail(b, w.err, NULL, "the waiter's delog_tx_begin: %s", tool_strerror(w.err));
		return w.err;
	}
	bench_sample_add(s, atomic_load(&w.done_ns) - t0);
	return 0;
}

static int point(struct bench *b, const struct spacewait_opts *o, enum delog_flush_policy p,
		 struct row *row)
{
	struct delog_options lo = bench_log_opts(b, p, bench_is_sim(b) ? DELOG_OPEN_CREATE : 0, 0,
						 0, o->log_size);
	struct bench_samples s = { 0 };
	delog_tx **held;
	unsigned n = 0;
	delog *log;
	int err;

	held = calloc(MAX_FILL, sizeof(*held));
	if (!held) {
		bench_fail(b, -ENOMEM, NULL, "out of memory");
		return -ENOMEM;
	}
	err = delog_open(bench_is_sim(b) ? NULL : b->t.path, &lo, &log);
	if (err) {
		bench_fail(b, err, b->t.path[0] ? b->t.path : NULL, "cannot open the log: %s",
			   tool_strerror(err));
		free(held);
		return err;
	}
	while (n < MAX_FILL &&
	       !(err = delog_tx_begin(log, o->reservation, DELOG_TX_NOWAIT, &held[n])))
		n++;
	if (err != -EAGAIN || n == 0) {
		bench_fail(b, err ? err : -EINVAL, NULL, "filling the log: %s",
			   n ? tool_strerror(err) : "not one reservation fits");
		err = err ? err : -EINVAL;
		goto out;
	}
	err = 0;
	for (unsigned i = 0; i < o->rounds && !err; i++) {
		if (bench_interrupted(b)) {
			err = -EINTR;
			break;
		}
		bench_progress(b, "%s: round %u/%u", delog_flush_policy_name(p), i + 1, o->rounds);
		err = round_once(b, o, log, held, n, &s);
	}
	row->policy = p;
	row->held = n;
	bench_samples_stats(&s, &row->lat);
out:
	for (unsigned i = 0; i < n; i++)
		if (held[i])
			delog_tx_abort(held[i]);
	if (delog_close(log) && !err) {
		err = -EIO;
		bench_fail(b, err, NULL, "closing the log failed");
	}
	bench_samples_free(&s);
	free(held);
	return err;
}

/* ---- report ---- */

static void print_human(struct bench *b, const struct spacewait_opts *o, const char *fs_type,
			const struct row *rows, unsigned n)
{
	bench_out(b, "delog bench --workload spacewait%s%s\n", b->t.path[0] ? " " : "", b->t.path);
	if (bench_is_sim(b))
		bench_out(b, "  target      the in-memory disk (--backend sim)\n");
	else
		bench_out_target(b, fs_type, b->o.backend);
	bench_out(b,
		  "  log         %" PRIu64 " MiB, filled with reservations of %" PRIu64
		  " KiB; the waiter is given %u us to sleep\n\n",
		  o->log_size >> 20, o->reservation >> 10, o->settle_us);
	bench_out(b, "  %-15s %6s %6s %9s %9s %9s %9s\n", "policy", "held", "rounds", "p50 us",
		  "p99 us", "max us", "mean us");
	for (unsigned i = 0; i < n; i++)
		bench_out(b, "  %-15s %6u %6zu %9.1f %9.1f %9.1f %9.1f\n",
			  rows[i].policy == DELOG_FLUSH_NONE ?
				  "none (UNSAFE)" :
				  delog_flush_policy_name(rows[i].policy),
			  rows[i].held, rows[i].lat.n, rows[i].lat.median_us, rows[i].lat.p99_us,
			  rows[i].lat.max_us, rows[i].lat.mean_us);
	bench_out(b, "\n  latency: from the abort that returned a grant to the return of the "
		     "delog_tx_begin that waited for it\n");
}

static void print_json(struct bench *b, const struct spacewait_opts *o, const char *fs_type,
		       const struct row *rows, unsigned n)
{
	struct json j;

	bench_json_begin(b, &j);
	json_str(&j, "fs_type", fs_type);
	json_obj_begin(&j, "params");
	json_u64(&j, "rounds", o->rounds);
	json_u64(&j, "log_size", o->log_size);
	json_u64(&j, "reservation", o->reservation);
	json_u64(&j, "settle_us", o->settle_us);
	json_obj_end(&j);
	json_arr_begin(&j, "rows");
	for (unsigned i = 0; i < n; i++) {
		json_obj_begin(&j, NULL);
		json_str(&j, "workload", "spacewait");
		json_str(&j, "policy", delog_flush_policy_name(rows[i].policy));
		json_bool(&j, "unsafe", rows[i].policy == DELOG_FLUSH_NONE);
		json_u64(&j, "held", rows[i].held);
		json_u64(&j, "rounds", rows[i].lat.n);
		bench_json_lat(&j, &rows[i].lat);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	bench_json_end(b, &j);
}

/* ---- the run ---- */

static int spacewait_run(struct bench *b, void *state)
{
	const struct spacewait_opts *o = state;
	struct row rows[BENCH_NR_POLICIES] = { 0 };
	const char *fs_type = "sim";
	double format_s;

	if (!bench_is_sim(b)) {
		struct delog_options lo = bench_log_opts(b, DELOG_FLUSH_SYNC, DELOG_OPEN_FORMAT, 0,
							 0, o->log_size);

		if (bench_log_prepare(b, DELOG_SB_BYTES + o->log_size, &fs_type, 0, 0, &lo,
				      &format_s))
			return TOOL_EXIT_FAIL;
	}
	for (unsigned i = 0; i < o->npolicy; i++) {
		int err;

		bench_point(b, "[%u/%u] %s", i + 1, o->npolicy,
			    delog_flush_policy_name(o->policy[i]));
		err = point(b, o, o->policy[i], &rows[i]);
		bench_point_done(b, err);
		if (err)
			return TOOL_EXIT_FAIL;
	}
	if (b->o.json)
		print_json(b, o, fs_type, rows, o->npolicy);
	else
		print_human(b, o, fs_type, rows, o->npolicy);
	return TOOL_EXIT_OK;
}

const struct bench_workload bench_spacewait = {
	.name = "spacewait",
	.summary = "how long a commit that waited for log space waits once it came back",
	.opts = spacewait_options,
	.state_size = sizeof(struct spacewait_opts),
	.defaults = spacewait_defaults,
	.option = spacewait_option,
	.check = spacewait_check,
	.help = spacewait_help,
	.run = spacewait_run,
};
