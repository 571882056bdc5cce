/*
 * liveness.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: the liveness oracle.  Every API call a session's threads make (the
 * clients, the session's own thread, the releaser, the push callback) is bracketed by
 * wd_enter / wd_leave (crash.h); a watchdog thread per session sums the time the disk
 * had nothing to deliver (no request pending: nothing the controller could be holding
 * back) and reports a call that has not returned while the disk sat idle for
 * --stall-bound seconds (default 15): no legitimate wait lasts that long with nothing in
 * flight, however loaded the machine, and time the controller spends checking a crash
 * point with requests pending does not count.  The report says who waits for what
 * (thread, call, its argument, how long) and what the log holds (free space, grants,
 * the CIL, the durable and released sequences, push calls).  Then it sets the callers
 * free the way the issue's reproduction did, with one delog_force(0) from outside, and
 * stops the round; a call that still does not return is fatal (the run ends there).
 *
 * And the open/close cycles without writes (item 2b): before a session of the liveness
 * workload opens its log for work, it opens and closes it a seeded number of times
 * without a transaction, as a read-only command or a crash-looping service would.  They
 * must leave no lasting log use (at most CR_IDLE_SLACK more than after the first open,
 * however many cycles) and every close must succeed; a log they filled is then found by
 * the watchdog, when a committer blocks for ever with everything released.
 *
 * Why apart: progress is a property of the whole session, not of a crash state; the
 * watchdog reads the threads' calls and the disk and nothing of how states are judged.
 */
#include "crash.h"

static const char *slot_name(unsigned slot, char *buf, size_t len)
{
	if (slot < CR_MAX_CLIENTS)
		snprintf(buf, len, "client %u", slot);
	else
		snprintf(buf, len, "%s",
			 slot == WD_COORD ? "session thread" :
			 slot == WD_REL   ? "releaser" :
					    "push callback");
	return buf;
}

/* The log's side of a stall (under wd_mu: the handle is alive while published). */
static bool wd_stats(struct coord *co, struct delog_stats *st)
{
	bool ok = false;

	st->size = sizeof(*st);
	pthread_mutex_lock(&co->wd_mu);
	if (co->wd_log)
		ok = !delog_stats(co->wd_log, st);
	pthread_mutex_unlock(&co->wd_mu);
	return ok;
}

/* Who waits for what: every call in progress, on stderr, and the violation's line.
 * Marks each reported call in @seen (its @since) so one stall is reported once. */
static void wd_report(struct coord *co, unsigned slot, uint64_t q, uint64_t *seen)
{
	struct round *rd = co->rd;
	struct crash *cr = co->cr;
	struct delog_stats st;
	bool have = wd_stats(co, &st);
	char name[32], msg[240];
	unsigned nwait = 0;

	fprintf(stderr,
		"delog crash: liveness: round %u (seed %#" PRIx64 "), session %u: a call "
		"has not returned after %u s with nothing pending at the disk; who waits for what:\n",
		rd->id - 1, rd->seed, rd->session, cr->stall_bound);
	for (unsigned i = 0; i < WD_SLOTS; i++) {
		uint64_t since = atomic_load(&rd->wd[i].since), q0 = atomic_load(&rd->wd[i].q0);
		const char *what = atomic_load(&rd->wd[i].what);

		if (!since || since != atomic_load(&rd->wd[i].since))
			continue;
		nwait++;
		seen[i] = since;
		fprintf(stderr,
			"  %-15s %s(%" PRIu64 "): %.1f s, %.1f s of it with the disk idle\n",
			slot_name(i, name, sizeof(name)), what, atomic_load(&rd->wd[i].arg),
			(double)(now_ns() - since) / 1e9, (double)(q - q0) / 1e9);
	}
	if (have)
		fprintf(stderr,
			"  log: %" PRIu64 " of %" PRIu64 " bytes used (%" PRIu64 " free), "
			"grants %" PRIu64 ", CIL %" PRIu64 ", durable seq %" PRIu64
			", open seq %" PRIu64 ", released %" PRIu64 ", checkpoints %" PRIu64
			", space waits %" PRIu64 ", push calls %" PRIu64 ", head %" PRIu64
			"/%" PRIu64 ", tail %" PRIu64 "/%" PRIu64 "\n",
			st.log_used, st.log_size, st.log_size - st.log_used, st.reserved_bytes,
			st.cil_bytes, st.durable_seq, st.open_seq,
			(uint64_t)atomic_load(&rd->released), st.checkpoints, st.space_waits,
			st.push_calls, st.head_lsn >> 32, st.head_lsn & 0xffffffffu,
			st.tail_lsn >> 32, st.tail_lsn & 0xffffffffu);
	if (have)
		snprintf(msg, sizeof(msg),
			 "liveness: %s waits in %s(%" PRIu64 ") with the disk idle "
			 "%u s (%u calls waiting; free %" PRIu64 ", grants %" PRIu64
			 ", CIL %" PRIu64 ", durable %" PRIu64 ", released %" PRIu64 ")",
			 slot_name(slot, name, sizeof(name)), atomic_load(&rd->wd[slot].what),
			 atomic_load(&rd->wd[slot].arg), cr->stall_bound, nwait,
			 st.log_size - st.log_used, st.reserved_bytes, st.cil_bytes, st.durable_seq,
			 (uint64_t)atomic_load(&rd->released));
	else
		snprintf(msg, sizeof(msg),
			 "liveness: %s waits in %s(%" PRIu64 ") with the disk idle "
			 "%u s (%u calls waiting)",
			 slot_name(slot, name, sizeof(name)), atomic_load(&rd->wd[slot].what),
			 atomic_load(&rd->wd[slot].arg), cr->stall_bound, nwait);
	viol_add(cr, NULL, NULL, 0, msg, NULL);
}

/* Set stalled callers free as the issue's reproduction did: one delog_force(0) from
 * outside (the controller delivers its I/O), and stop the round. */
static void wd_rescue(struct coord *co)
{
	struct round *rd = co->rd;

	atomic_store(&co->stop, true);
	pthread_mutex_lock(&co->wd_mu);
	if (co->wd_log) {
		fprintf(stderr,
			"delog crash: liveness: delog_force(0) from outside, round stopped\n");
		(void)delog_force(co->wd_log, 0);
		atomic_fetch_add(&rd->rescues, 1);
	}
	pthread_mutex_unlock(&co->wd_mu);
}

/* The call of @slot that has waited longest with the disk idle (0: none past @bound). */
static uint64_t wd_longest(struct round *rd, uint64_t q, uint64_t bound, unsigned *slot)
{
	uint64_t best = 0;

	for (unsigned i = 0; i < WD_SLOTS; i++) {
		uint64_t since = atomic_load(&rd->wd[i].since), q0 = atomic_load(&rd->wd[i].q0);

		if (!since || since != atomic_load(&rd->wd[i].since) || q < q0 || q - q0 <= bound)
			continue;
		if (q - q0 > best) {
			best = q - q0;
			*slot = i;
		}
	}
	return best;
}

static void *wd_main(void *arg)
{
	struct coord *co = arg;
	struct round *rd = co->rd;
	uint64_t bound = (uint64_t)co->cr->stall_bound * 1000000000ull, last = now_ns();
	uint64_t seen[WD_SLOTS] = { 0 };

	while (!atomic_load(&co->wd_quit)) {
		struct timespec ts = { 0, 5000000 };
		uint64_t t, q, w;
		unsigned slot = 0;

		nanosleep(&ts, NULL);
		t = now_ns();
		if (!iol_sim_pending(rd->dev))
			atomic_fetch_add(&rd->wd_quiet, t - last);
		last = t;
		q = atomic_load(&rd->wd_quiet);
		w = wd_longest(rd, q, bound, &slot);
		if (!w)
			continue;
		if (seen[slot] != atomic_load(&rd->wd[slot].since)) {
			atomic_fetch_add(&rd->stalls, 1);
			wd_report(co, slot, q, seen);
			wd_rescue(co);
		} else if (w > 2 * bound) {
			/* Reported, rescued (or nothing could be), and still not returned. */
			char name[32];

			fprintf(stderr,
				"delog crash: liveness: %s still waits in %s %u s after the "
				"report: nothing sets it free; the run ends here\n",
				slot_name(slot, name, sizeof(name)),
				atomic_load(&rd->wd[slot].what), co->cr->stall_bound);
			exit(TOOL_EXIT_FAIL);
		}
	}
	return NULL;
}

int wd_start(struct coord *co)
{
	pthread_mutex_init(&co->wd_mu, NULL);
	atomic_store(&co->wd_quit, false);
	co->wd_started = !pthread_create(&co->wd_th, NULL, wd_main, co);
	return co->wd_started ? 0 : -EAGAIN;
}

void wd_stop(struct coord *co)
{
	if (co->wd_started) {
		atomic_store(&co->wd_quit, true);
		pthread_join(co->wd_th, NULL);
		co->wd_started = false;
	}
	pthread_mutex_destroy(&co->wd_mu);
}

/* The handle the watchdog may force (NULL: none; taken under wd_mu, so a rescue in
 * progress finishes before the session closes the log). */
void wd_publish(struct coord *co, delog *log)
{
	pthread_mutex_lock(&co->wd_mu);
	co->wd_log = log;
	pthread_mutex_unlock(&co->wd_mu);
}

/* One open and close without a transaction; the log use the open found in @used. */
static int idle_once(struct round *rd, const struct delog_options *o, unsigned i, uint64_t *used,
		     const char **what)
{
	struct delog_stats st = { .size = sizeof(st) };
	delog *log = NULL;
	int err;

	*what = "engine_open_dev";
	wd_enter(rd, WD_COORD, "engine_open_dev (open/close without writes)", i);
	err = engine_open_dev(rd->dev, o, &log);
	wd_leave(rd, WD_COORD);
	if (err)
		return err;
	*used = !delog_stats(log, &st) ? st.log_used : 0;
	*what = "delog_close";
	wd_enter(rd, WD_COORD, "delog_close (open/close without writes)", i);
	err = delog_close(log);
	wd_leave(rd, WD_COORD);
	return err;
}

/*
 * Before a liveness session: a seeded number of open/close cycles without writes on
 * the session's disk (the log the last session's cut left, or a fresh one).  Returns 0
 * to go on with the session, or the error that ended a cycle (reported).
 */
int idle_cycles(struct coord *co, const struct delog_options *o)
{
	struct round *rd = co->rd;
	uint64_t r = seed_for(rd->seed, 0x1d1e, rd->session), used0 = 0, grow = 0;
	struct delog_options io = *o;
	unsigned k, i;
	char msg[240];
	int err = 0;

	if (!rd->wl.idle_max)
		return 0;
	/* Mostly a few (enough for the lasting-use check), one session in eight many
	 * (enough to fill the log were each to keep its unmount record: about 500 a
	 * second on the sim). */
	k = rnd(&r) % 8 == 0 ? (unsigned)rnd_in(&r, rd->wl.idle_max / 2, rd->wl.idle_max) :
			       (unsigned)rnd_in(&r, 0, 24);
	io.recover = NULL;
	io.recover_arg = NULL;
	for (i = 0; i < k && !atomic_load(&co->stop); i++) {
		const char *what;
		uint64_t used = 0;

		err = idle_once(rd, &io, i, &used, &what);
		if (err) {
			snprintf(msg, sizeof(msg),
				 "liveness: open/close cycle %u of %u without writes: "
				 "%s: %s (item 2b: no sequence of calls may jam a log)",
				 i + 1, k, what, delog_err_name(err));
			viol_add(co->cr, NULL, NULL, 0, msg, NULL);
			break;
		}
		if (!i)
			used0 = used;
		else if (used > used0 && used - used0 > grow)
			grow = used - used0;
		if (grow > CR_IDLE_SLACK) {
			snprintf(msg, sizeof(msg),
				 "liveness: %u open/close cycles without writes left "
				 "%" PRIu64 " bytes more of the log in use (%" PRIu64 " after the "
				 "first open; item 2b: they must use no lasting log space)",
				 i + 1, grow, used0);
			viol_add(co->cr, NULL, NULL, 0, msg, NULL);
			i++;
			break;
		}
	}
	rd->idle_cycles += i;
	if (grow > rd->idle_growth)
		rd->idle_growth = grow;
	return err;
}
