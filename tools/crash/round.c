/*
 * round.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: one round: a fresh log on a sim disk in hold mode, its sessions
 * (run_session: the workload's threads, the controller delivering completions one at
 * a time and taking a crash point after each), and the chain of sessions of the
 * random workload (run_round).
 *
 * Why apart: a round glues the parts together (the workload's threads, the
 * controller's crash points, the workers' jobs) and owns the sim disk and the lifetime
 * of the log under test.
 */
#include "crash.h"

/* ---- rounds ---- */

void cr_progress(struct crash *cr, bool end)
{
	static uint64_t last;
	uint64_t t = now_ns();

	if (!cr->progress || (!end && t - last < 500000000ull))
		return;
	last = t;
	fprintf(stderr,
		"\rdelog crash: round %" PRIu64 ", states %" PRIu64 "/%" PRIu64 ", images %" PRIu64
		", violations %" PRIu64 "   %s",
		cr->rounds, cr->states, cr->target, cr->distinct, cr->nviol, end ? "\n" : "");
	fflush(stderr);
}

static int format_image(struct round *rd, unsigned char *img)
{
	struct jrnl_format_opts fo = { .sector = rd->sector,
				       .log_size = rd->log_bytes,
				       .window = rd->wl.window };
	struct iol_dev *dev = ct_sim_dev(rd->dev_bytes, rd->sector, rd->seed, false, 0, NULL);
	struct jrnl_geom g;
	int err;

	if (!dev)
		return -ENOMEM;
	err = jrnl_format(dev, &fo, &g);
	if (!err) {
		rd->window_bytes = g.window_sectors * g.sector;
		err = iol_sim_media(dev, 0, img, rd->dev_bytes);
	}
	iol_dev_close(dev);
	return err;
}

/* Forget what a session did after its cut: the next session starts from the cut image. */
static void ctl_reset(struct ctl *t, const struct round *rd)
{
	t->cursor = 0;
	memset(t->wcount, 0, rd->log_bytes / rd->sector * sizeof(*t->wcount));
	memset(t->sec_wid, 0, rd->dev_bytes / rd->sector * sizeof(*t->sec_wid));
	memset(t->wid_done, 0, t->wid_cap * sizeof(*t->wid_done));
	t->nfl = 0;
	t->media_dirty = false;
}

/* A new media image (a round's format, or a session's cut): the workers rebuild their
 * disks from it, and the image cache is dropped (its verdicts depend on the oracle's
 * tables, which a session start rewrites). */
static void media_reset(struct crash *cr, const struct round *rd)
{
	uint64_t nsec = rd->dev_bytes / rd->sector;

	cr->epoch++;
	cache_clear(cr);
	cr->cp.k = 0;
	cr->ntouch = 0;
	cr->nchg = 0;
	cr->new_dirty = true;
	memset(cr->old + rd->dev_bytes, 0, cr->dev_max - rd->dev_bytes);
	cr->h_total = 0;
	for (uint64_t s = 0; s < nsec; s++) {
		cr->h_sec[s] = sector_hash(cr->old + s * rd->sector, rd->sector, s);
		cr->h_total += cr->h_sec[s];
	}
}

/* The cut: one of this crash point's states, seeded, is what the power left, into @cut
 * (the image the next session opens) with what was acknowledged then.  0 or -ENOMEM. */
static int take_cut(struct crash *cr, unsigned char *cut)
{
	struct round *rd = cr->rd;
	uint64_t q = seed_for(rd->seed, 0xc07, rd->session);
	size_t i = (size_t)(q % cr->nst);
	unsigned char *img = state_image(cr, cr->choices + i * (cr->cp.k + 1));

	if (!img)
		return -ENOMEM;
	memcpy(cut, img, rd->dev_bytes);
	free(img);
	rd->cut_durable = cr->cp.durable;
	rd->cut_released = cr->cp.released;
	rd->cut_must_lo = cr->cp.must_lo;
	memcpy(rd->cut_acked, cr->cp.acked, sizeof(rd->cut_acked));
	return 0;
}

/* One session: the workload on rd->dev (media cr->old) with a crash point at every event,
 * until the clients finish, the budget is spent, or (@cut_at: transactions submitted
 * in all) the session is cut: a seeded state of that crash point becomes @cut, the
 * image the next session opens, and the rest of this session only winds down. */
static int run_session(struct crash *cr, struct ctl *t, struct pointbuf *pb, uint64_t *round_cp,
		       uint64_t cut_at, unsigned char *cut, bool *cut_taken)
{
	struct round *rd = cr->rd;
	struct coord co = { .rd = rd, .cr = cr };
	uint64_t last_ev = SIZE_MAX, last_ack = UINT64_MAX, last_dur = UINT64_MAX;
	uint64_t idle_since = 0, cyc0 = 0, cyc1 = 0;
	struct jrnl_log_stats jcp = { 0 }; /* the journal's counters at the last crash point */
	struct iol_counters icp = { 0 };
	pthread_t th;
	int err = 0;

	*cut_taken = false;
	if (wd_start(&co))
		return -EAGAIN;
	if (pthread_create(&th, NULL, coord_main, &co)) {
		wd_stop(&co);
		return -EAGAIN;
	}
	for (;;) {
		size_t L = iol_sim_trace_len(rd->dev);
		struct delog_stats st = { .size = sizeof(st) };
		struct jrnl_log_stats js;
		bool known = false;
		uint64_t ack, dur;

		pthread_mutex_lock(&rd->log_mu);
		if (rd->log && !delog_stats(rd->log, &st)) {
			known = true;
			engine_journal_stats(rd->log, &js);
		}
		pthread_mutex_unlock(&rd->log_mu);
		if (atomic_load(&rd->stalls) && !cr->cv_stall_seen) {
			cr->cv_stall_seen = true;
			cr->cv_first_stall_states = cr->states;
			cr->cv_first_stall_s = (double)(now_ns() - cr->t0) / 1e9;
		}
		if (known && atomic_load(&rd->armed) && !*cut_taken) {
			uint64_t free_b = st.log_size - st.log_used;

			if (free_b < cr->cv_min_free)
				cr->cv_min_free = free_b;
			if (!cyc0)
				cyc0 = st.head_lsn >> 32;
			if ((st.head_lsn >> 32) > cyc1)
				cyc1 = st.head_lsn >> 32;
			if (rd->wl.full) {
				cr->f_used = st.log_used;
				if (free_b < cr->f_min_free)
					cr->f_min_free = free_b;
				if ((st.head_lsn >> 32) > rd->head_cycle)
					rd->head_cycle = st.head_lsn >> 32;
			}
		}
		trace_step(cr, t, L, st.tail_lsn, known && rd->session == 0);
		if (atomic_load(&rd->armed) && !*cut_taken) {
			ack = atomic_load(&rd->ack_events);
			dur = cr_read_durable(rd);
			if (cr->states >= cr->target) {
				atomic_store(&co.stop, true);
			} else if (L != last_ev || ack != last_ack || dur != last_dur) {
				uint64_t sub = 0;

				err = crash_point(cr, t, pb, ++*round_cp);
				if (err)
					break;
				if (known) {
					/* What the states reached: points right after a bound or
					 * cover flush resolved, and the journal's and the gate's
					 * counters as of this point (summed at the session's end). */
					cr->cv_cps_bound += js.bound_flushes != jcp.bound_flushes;
					cr->cv_cps_cover += js.cover_flushes != jcp.cover_flushes;
					jcp = js;
					iol_dev_counters(rd->dev, &icp);
				}
				last_ev = L;
				last_ack = ack;
				last_dur = dur;
				cr_progress(cr, false);
				for (unsigned c = 0; c < rd->wl.clients; c++)
					sub += atomic_load(&rd->submitted[c]);
				if (cut_at && sub >= cut_at && cr->nst) {
					if ((err = take_cut(cr, cut)))
						break;
					*cut_taken = true;
					atomic_store(&co.stop, true);
				}
			}
		}
		if (iol_sim_pending(rd->dev)) {
			/* Nothing submitted after this step's point is delivered before a
			 * point has seen it in flight. */
			if (atomic_load(&rd->armed) && !*cut_taken && cr->states < cr->target)
				iol_sim_deliver_if(rd->dev, 1, IOL_SIM_RANDOM, L);
			else
				iol_sim_deliver(rd->dev, 1, IOL_SIM_RANDOM);
			idle_since = 0;
		} else if (atomic_load(&rd->done)) {
			break;
		} else {
			struct timespec ts = { 0, 20000 };

			if (!idle_since)
				idle_since = now_ns();
			else if (now_ns() - idle_since > CR_STALL_NS) {
				wl_fail(rd, "stall: no I/O and no progress for %llu s (hang?)",
					CR_STALL_NS / 1000000000ull);
				viol_add(cr, NULL, NULL, 0, rd->err, NULL);
				fprintf(stderr, "delog crash: %s\n", rd->err);
				exit(TOOL_EXIT_FAIL);
			}
			nanosleep(&ts, NULL);
		}
	}
	if (err) {
		/* Let the workload finish so the threads can be joined. */
		atomic_store(&co.stop, true);
		while (!atomic_load(&rd->done) || iol_sim_pending(rd->dev))
			if (!iol_sim_deliver(rd->dev, 1, IOL_SIM_RANDOM))
				sched_yield();
	}
	pthread_join(th, NULL);
	wd_stop(&co);
	if (cyc1 > cyc0)
		cr->cv_laps += cyc1 - cyc0;
	rd->j_bound += jcp.bound_flushes;
	rd->j_cover += jcp.cover_flushes;
	rd->j_wraps += jcp.wraps;
	if (rd->gate) {
		rd->j_gate_gens += icp.dev_flushes;
		rd->j_gate_errs += icp.errors;
		rd->j_gate_inline += icp.gate_inline;
	}
	if (!err && !*cut_taken && atomic_load(&rd->armed) && cr->states < cr->target) {
		size_t L = iol_sim_trace_len(rd->dev);

		trace_step(cr, t, L, 0, false);
		err = crash_point(cr, t, pb, ++*round_cp); /* after the clean close */
	}
	return err;
}

/* The states each crash point of this round may take: what is left of --states over
 * the crash points a round is expected to have (the mean so far; the first rounds take
 * a smaller share, while the mean is still a guess). */
static void round_budget(struct crash *cr)
{
	uint64_t left = cr->target > cr->states ? cr->target - cr->states : 0;
	uint64_t est = cr->rounds ? cr->cps / cr->rounds : 1500;
	uint64_t rl = cr->rounds < 3 ? 4 - cr->rounds : 1;

	cr->budget = left / (rl * (est ? est : 1));
	/* At least all old and all new; under garble and versions one seeded random state
	 * more, or a small budget would never tear a sector to garbage or to an
	 * intermediate version: the profile would run as strict. */
	if (cr->budget < (cr->profile == IOL_SIM_STRICT ? 2u : 3u))
		cr->budget = cr->profile == IOL_SIM_STRICT ? 2 : 3;
	if (cr->budget > CR_MAX_PER_POINT)
		cr->budget = CR_MAX_PER_POINT;
}

/* The coverage figures of the report: the geometries and features this round has. */
static void round_coverage(struct crash *cr, const struct round *rd)
{
	uint64_t ring = (uint64_t)rd->wl.logbufs * rd->wl.logbsize, win;

	cr->cv_log_min = rd->log_bytes < cr->cv_log_min ? rd->log_bytes : cr->cv_log_min;
	cr->cv_log_max = rd->log_bytes > cr->cv_log_max ? rd->log_bytes : cr->cv_log_max;
	win = rd->window_bytes;
	cr->cv_win_min = win < cr->cv_win_min ? win : cr->cv_win_min;
	cr->cv_win_max = win > cr->cv_win_max ? win : cr->cv_win_max;
	cr->cv_win_named += rd->wl.window != 0;
	cr->cv_ring_min = ring < cr->cv_ring_min ? ring : cr->cv_ring_min;
	cr->cv_ring_max = ring > cr->cv_ring_max ? ring : cr->cv_ring_max;
	cr->cv_sectors |= rd->sector == 512 ? 1u : 2u;
	cr->cv_track_rounds += rd->wl.track;
	cr->cv_gate_rounds += rd->gate;
	cr->cv_inline_rounds += !!(rd->dev_flags & CT_DEV_INLINE);
	cr->cv_keep_fua_rounds += !!(rd->dev_flags & CT_DEV_KEEP_FUA);
	cr->cv_rel_edge += rd->wl.releaser && !rd->wl.full;
}

/* A round's figures into the run's: coverage and liveness. */
static void round_tally(struct crash *cr, const struct round *rd)
{
	cr->cv_item_writes += rd->item_writes;
	cr->cv_bound += rd->j_bound;
	cr->cv_cover += rd->j_cover;
	cr->cv_wraps += rd->j_wraps;
	cr->cv_gate_gens += rd->j_gate_gens;
	cr->cv_gate_errs += rd->j_gate_errs;
	cr->cv_gate_inline += rd->j_gate_inline;
	cr->cv_stalls += rd->stalls;
	cr->cv_rescues += rd->rescues;
	cr->cv_edeadlk += rd->edeadlk;
	cr->cv_idle_cycles += rd->idle_cycles;
	if (rd->idle_growth > cr->cv_idle_growth)
		cr->cv_idle_growth = rd->idle_growth;
	cr->cv_eagain += rd->eagain_begin + rd->eagain_log;
	cr->cv_nowait_ok += rd->nowait_ok;
}

/* The round's draw from the seed: its flush gate and device, its workload and the
 * sizes that follow; and its per-client records.  0 or -ENOMEM (the mutexes are
 * initialised either way). */
static int round_draw(struct crash *cr, struct round *rd, uint64_t r)
{
	int err = 0;

	rd->seed = seed_for(cr->seed, 0x0bad, r);
	rd->id = (uint32_t)r + 1;
	rd->policy = cr->policy;
	/* Half the rounds put the iolayer's flush gate between the log and the disk, as
	 * every real backend does: power cuts then land between a gated flush and the
	 * writes that waited for it. */
	rd->gate = seed_for(rd->seed, 0x6a7e, 0) & 1;
	/* Gated rounds draw the gate's variants: a sim with a ->run (a lone waiter's flush
	 * is an inline generation on its own thread, as on every descriptor backend) and a
	 * device with native FUA (FUA kept out of the gate), each in half of them. */
	rd->dev_flags = rd->gate ? CT_DEV_GATE : 0;
	if (rd->gate && (seed_for(rd->seed, 0x1e1, 0) & 1))
		rd->dev_flags |= CT_DEV_INLINE;
	if (rd->gate && (seed_for(rd->seed, 0xf0a, 0) & 1))
		rd->dev_flags |= CT_DEV_KEEP_FUA;
	wl_pick(strcmp(cr->workload, "all") ? cr->workload : wl_names[r % NR_WL], rd->seed,
		cr->threads, cr->sector_opt, &rd->wl);
	rd->sector = rd->wl.sector ? rd->wl.sector : 4096;
	rd->log_bytes = rd->wl.log_bytes;
	rd->dev_bytes = DELOG_SB_BYTES + rd->log_bytes;
	cr->sector = rd->sector;
	pthread_mutex_init(&rd->log_mu, NULL);
	pthread_mutex_init(&rd->err_mu, NULL);
	for (unsigned c = 0; c < rd->wl.clients; c++) {
		rd->seqs[c] = calloc(rd->wl.txs + 2, sizeof(*rd->seqs[c]));
		rd->sess[c] = calloc(rd->wl.txs + 2, sizeof(*rd->sess[c]));
		rd->written[c] = calloc(rd->wl.txs + 2, sizeof(*rd->written[c]));
		rd->start_n[c] = 1;
		if (!rd->seqs[c] || !rd->sess[c] || !rd->written[c])
			err = -ENOMEM;
	}
	return err;
}

/* The round's sessions in turn on a fresh sim disk each, the next starting from the
 * image the previous one was cut at (@cut), until the chain ends; then the chain's
 * figures.  0 or an error. */
static int run_sessions(struct crash *cr, struct round *rd, struct ctl *t, struct pointbuf *pb,
			unsigned char *cut, uint64_t *round_cp)
{
	unsigned sessions_run = 0;
	int err = 0;

	for (unsigned sess = 0; sess < rd->wl.sessions && !err; sess++) {
		uint64_t cut_at = 0, total = 0;
		bool cut_taken = false;

		rd->session = sess;
		if (sess + 1 < rd->wl.sessions) {
			/* Cut somewhere in this session's share of the transactions. */
			uint64_t q = seed_for(rd->seed, 0xc075, sess);

			total = (uint64_t)rd->wl.txs * rd->wl.clients;
			cut_at = total * sess / rd->wl.sessions +
				 total / rd->wl.sessions * (30 + q % 60) / 100 + 1;
		}
		media_reset(cr, rd);
		ctl_reset(t, rd);
		atomic_store(&rd->armed, false);
		atomic_store(&rd->done, false);
		atomic_store(&rd->clients_done, 0);
		rd->dev = ct_sim_dev(rd->dev_bytes, rd->sector, seed_for(rd->seed, 0x5e55, sess),
				     true, rd->dev_flags, cr->old);
		if (!rd->dev) {
			err = -ENOMEM;
			break;
		}
		err = run_session(cr, t, pb, round_cp, cut_at, cut, &cut_taken);
		iol_dev_close(rd->dev);
		rd->dev = NULL;
		if (rd->err[0] || rd->chain_end)
			break;
		sessions_run++;
		if (!cut_taken)
			break;
		memcpy(cr->old, cut, rd->dev_bytes);
	}
	if (rd->wl.sessions > 1) {
		if (rd->session > 0 || sessions_run > 0) {
			unsigned n = rd->session + 1;

			cr->cv_chains++;
			cr->cv_sess_total += n;
			cr->cv_sess_min = n < cr->cv_sess_min ? n : cr->cv_sess_min;
			cr->cv_sess_max = n > cr->cv_sess_max ? n : cr->cv_sess_max;
			cr->cv_chain_cut += rd->chain_end;
		}
	}
	return err;
}

/* The round's figures into the run's, its workload error as a violation, and with
 * --verbose its summary (@cps0, @states0: the run's counts before it). */
static void round_report(struct crash *cr, const struct round *rd, uint64_t r, uint64_t cps0,
			 uint64_t states0)
{
	round_tally(cr, rd);
	if (rd->err[0]) {
		char msg[300];

		snprintf(msg, sizeof(msg), "workload: %s", rd->err);
		viol_add(cr, NULL, NULL, 0, msg, NULL);
	}
	cr->rounds++;
	if (rd->wl.full) {
		cr->f_rounds++;
		cr->f_bursts += rd->bursts;
		cr->f_forces += rd->forces_rel;
		cr->f_eagain_begin += rd->eagain_begin;
		cr->f_eagain_log += rd->eagain_log;
		cr->f_nowait_ok += rd->nowait_ok;
		cr->f_waits += rd->space_waits;
		cr->f_push_calls += rd->push_calls;
		cr->f_laps += rd->head_cycle ? rd->head_cycle - 1 : 0;
		if (cr->verbose)
			fprintf(stderr,
				"delog crash: round %" PRIu64 " (full): %" PRIu64
				" bursts, %" PRIu64 " waits, %" PRIu64 "+%" PRIu64
				" EAGAIN, head cycle %" PRIu64 "\n",
				r, (uint64_t)rd->bursts, rd->space_waits,
				(uint64_t)rd->eagain_begin, (uint64_t)rd->eagain_log,
				rd->head_cycle);
	}
	if (cr->verbose)
		fprintf(stderr,
			"delog crash: round %" PRIu64 ": %" PRIu64 " crash points, %" PRIu64
			" states, %u sessions\n",
			r, cr->cps - cps0, cr->states - states0, rd->session + 1);
}

/* A round: the workload drawn from the seed on a fresh log, its sessions in turn (the
 * random workload crashes and reopens a chain of them), then its statistics. */
int run_round(struct crash *cr, uint64_t r)
{
	struct round *rd = calloc(1, sizeof(*rd));
	struct ctl t = { 0 };
	struct pointbuf pb = { 0 };
	uint64_t nsec, round_cp = 0, states0 = cr->states, cps0 = cr->cps;
	unsigned char *cut = NULL;
	int err;

	if (!rd)
		return -ENOMEM;
	err = round_draw(cr, rd, r);
	nsec = rd->dev_bytes / rd->sector;
	round_budget(cr);
	cr->rd = rd;
	cr->f_last_eagain = 0;
	cr->last_cp_t = 0;
	cr->f_used = 0;
	pb.tmp = malloc(cr->dev_max);
	t.wcount = calloc(rd->log_bytes / rd->sector, sizeof(*t.wcount));
	t.sec_wid = calloc(nsec, sizeof(*t.sec_wid));
	t.wid_cap = 4096;
	t.wid_done = calloc(t.wid_cap, sizeof(*t.wid_done));
	cut = rd->wl.sessions > 1 ? malloc(rd->dev_bytes) : NULL;
	if (err || !pb.tmp || !t.wcount || !t.sec_wid || !t.wid_done ||
	    (rd->wl.sessions > 1 && !cut)) {
		err = -ENOMEM;
		goto out;
	}
	err = format_image(rd, cr->old);
	if (err)
		goto out;
	if (cr->verbose)
		fprintf(stderr,
			"delog crash: round %" PRIu64 " seed %#" PRIx64 ": %s, %u clients x "
			"%u tx, %u x %u KiB buffers, log %" PRIu64
			" KiB, sector %u, cil_push %" PRIu64 " KiB, %s%s%s%u sessions, %" PRIu64
			" states per point\n",
			r, rd->seed, rd->wl.name, rd->wl.clients, rd->wl.txs, rd->wl.logbufs,
			rd->wl.logbsize >> 10, rd->log_bytes >> 10, rd->sector,
			rd->wl.cil_push >> 10, rd->wl.track ? "item tracking, " : "",
			rd->wl.releaser ? "edge releases, " : "", rd->gate ? "flush gate, " : "",
			rd->wl.sessions, cr->budget);
	round_coverage(cr, rd);
	err = run_sessions(cr, rd, &t, &pb, cut, &round_cp);
	round_report(cr, rd, r, cps0, states0);
out:
	if (rd->dev)
		iol_dev_close(rd->dev);
	cache_clear(cr);
	cr->rd = NULL;
	for (unsigned c = 0; c < CR_MAX_CLIENTS; c++) {
		free(rd->seqs[c]);
		free(rd->sess[c]);
		free(rd->written[c]);
	}
	pthread_mutex_destroy(&rd->log_mu);
	pthread_mutex_destroy(&rd->err_mu);
	free(rd);
	free(cut);
	free(pb.tmp);
	free(t.wcount);
	free(t.sec_wid);
	free(t.wid_done);
	free(t.fl);
	return err;
}
