/*
 * command.c - the `delog crash` command, the crash checker (its design: crash.h).
 *
 * What it keeps: the command: options, the run until --states states were checked,
 * and the report (text or --json).
 *
 * The design of the checker, what it proves and how, is at the top of crash.h; the
 * parts are spec.c, workload.c, oracle.c, points.c, images.c, round.c and liveness.c.
 */
#include "crash.h"

/* ---- the command ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: delog crash [--workload W] [--policy P] [--states N] [--seed S]\n"
		"                   [--profile strict|garble|versions] [--fill F] [--sector 512|4096]\n"
		"                   [--exhaustive] [--threads N] [--jobs N] [--full-every N]\n"
		"                   [--cover-delay MS]\n"
		"                   [--save DIR] [--round R] [--stall-bound S] [--json]\n"
		"                   [--verbose]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nRun seeded multi-threaded workloads on the simulated disk, cut the power at\n"
	       "every device event and acknowledgement, recover every crash state and check\n"
	       "it: acknowledged <= recovered <= submitted, a prefix of checkpoint order, whole\n"
	       "checkpoints with matching payload hashes, nothing from another lap or log.\n"
	       "\noptions:\n"
	       "  -w, --workload W    mixed, wrap, relog, small, full (log full: the tail\n"
	       "                      pinned, committers waiting or failing with -EAGAIN,\n"
	       "                      released in bursts), random (every parameter drawn\n"
	       "                      per round: log 4-16 MiB, sector, buffers, checkpoints\n"
	       "                      up to 5 MiB, item tracking, edge releases, NOWAIT,\n"
	       "                      chains of 3-4 sessions crashed and reopened), window\n"
	       "                      (4 MiB log, 1-2 MiB checkpoints, 8 x 256 KiB buffers\n"
	       "                      in flight: the writes in flight cross the log's end),\n"
	       "                      liveness (only the push callback frees space, big\n"
	       "                      under-reserved transactions, open/close cycles\n"
	       "                      without writes before each session of a chain),\n"
	       "                      or all (default: all, one per round in turn)\n"
	       "  -p, --policy P      flush policy: sync, async, single, none (default sync)\n"
	       "      --states N      crash states to check in total (default 10000)\n"
	       "      --seed S        seed of workloads, delivery order and sampling (default 1)\n"
	       "      --profile P     strict (each unstable sector old or new), garble (or\n"
	       "                      garbage) or versions (any version written since it\n"
	       "                      was last stable) (default strict)\n"
	       "      --fill F        what a garbled sector reads back as: random, zero, ones\n"
	       "                      (0xff), copy (its neighbour's old bytes), eio (a read\n"
	       "                      error), or all (default: each state draws one)\n"
	       "      --sector N      sector size, the unit of tearing: 512 or 4096 (default\n"
	       "                      4096; random draws one per round unless given)\n"
	       "  -x, --exhaustive    all 2^k states wherever k <= 12 sectors are unstable\n"
	       "  -t, --threads N     client threads per round (default: the workload's, 1..4)\n"
	       "  -J, --jobs N        recovery threads (default: online CPUs, at most 8)\n"
	       "      --full-every N  open every Nth distinct image with engine_open_dev and\n"
	       "                      continue it across a second crash (default 32; 0: never)\n"
	       "      --cover-delay MS on those opens, the push thread sleeps MS ms before\n"
	       "                      each cover record, as on a loaded machine (default 0)\n"
	       "      --save DIR      write the pre-recovery image of each violation to DIR\n"
	       "      --round R       run only round R (as numbered in a violation's report)\n"
	       "      --stall-bound S a call that has not returned while the disk sat idle\n"
	       "                      for S seconds is a liveness violation (default 15)\n"
	       "  -j, --json          one JSON document on stdout\n"
	       "  -v, --verbose       a line per round on stderr\n"
	       "  -h, --help          show this help\n"
	       "\nExit status: 0 no violation, 1 violations or failure, 2 usage error.\n");
}

const char *const cr_fill_name[CR_NFILL] = { "random", "zero", "ones", "copy", "eio" };

static const char *profile_name(enum iol_sim_crash_profile p)
{
	return p == IOL_SIM_GARBLE ? "garble" : p == IOL_SIM_VERSIONS ? "versions" : "strict";
}

static void print_text(struct crash *cr, double secs)
{
	printf("delog crash: policy %s, profile %s, sector %u, workload %s, seed %" PRIu64 "\n",
	       delog_flush_policy_name(cr->policy), profile_name(cr->profile), cr->sector,
	       cr->workload, cr->seed);
	printf("  rounds            %" PRIu64 "\n", cr->rounds);
	printf("  crash points      %" PRIu64 " (%" PRIu64 " enumerated exhaustively, max %" PRIu64
	       " unstable sectors)\n",
	       cr->cps, cr->exh_cps, cr->max_k);
	printf("  states            %" PRIu64 "\n", cr->states);
	printf("  distinct images   %" PRIu64 "\n", cr->distinct);
	printf("  recoveries        %" PRIu64 " read-only, %" PRIu64 " engine_open_dev (%" PRIu64
	       " through the flush gate), %" PRIu64 " continued across a second crash\n",
	       cr->recoveries, atomic_load(&cr->full_opens), atomic_load(&cr->full_gated),
	       atomic_load(&cr->continuations));
	printf("  protocol checks   %" PRIu64 " writes\n", cr->protocol_events);
	if (cr->f_rounds)
		printf("  log full          %" PRIu64 " rounds: %" PRIu64
		       " crash points at the edge "
		       "(%" PRIu64 " with >= 75%% of the log live), %" PRIu64 " releases, %" PRIu64
		       " forces to free space, %" PRIu64 " waits "
		       "for space, %" PRIu64 " + %" PRIu64 " -EAGAIN (begin + log; %" PRIu64
		       " NOWAIT begins granted), %" PRIu64 " push calls, %" PRIu64 " laps, least "
		       "free %" PRIu64 " bytes\n",
		       cr->f_rounds, cr->f_edge_cps, cr->f_hi_cps, cr->f_bursts, cr->f_forces,
		       cr->f_waits, cr->f_eagain_begin, cr->f_eagain_log, cr->f_nowait_ok,
		       cr->f_push_calls, cr->f_laps,
		       cr->f_min_free == UINT64_MAX ? 0 : cr->f_min_free);
	printf("  coverage          logs %" PRIu64 "..%" PRIu64
	       " KiB, sectors%s%s, rings (logbufs x "
	       "logbsize) %" PRIu64 "..%" PRIu64 " KiB; %" PRIu64
	       " rounds through the flush gate\n",
	       cr->cv_log_min >> 10, cr->cv_log_max >> 10, cr->cv_sectors & 1 ? " 512" : "",
	       cr->cv_sectors & 2 ? " 4096" : "", cr->cv_ring_min >> 10, cr->cv_ring_max >> 10,
	       cr->cv_gate_rounds);
	printf("                    unflushed windows %" PRIu64 "..%" PRIu64 " KiB (%" PRIu64
	       " rounds naming one at format)\n",
	       cr->cv_win_min == UINT64_MAX ? 0 : cr->cv_win_min >> 10, cr->cv_win_max >> 10,
	       cr->cv_win_named);
	printf("                    largest checkpoint recovered %" PRIu64 " bytes (%.2f x its "
	       "round's ring; %" PRIu64 " images with one larger than the ring, %" PRIu64
	       " larger than 2 MiB)\n",
	       cr->cv_max_ck, (double)cr->cv_max_ck_win / 1000.0, cr->cv_over_win, cr->cv_over_2m);
	printf("                    %" PRIu64 " laps, least free %" PRIu64 " bytes; %" PRIu64
	       " rounds releasing at the full edge; %" PRIu64 " rounds with item tracking (%" PRIu64
	       " items written back); %" PRIu64 " -EAGAIN, %" PRIu64 " NOWAIT begins "
	       "granted\n",
	       cr->cv_laps, cr->cv_min_free == UINT64_MAX ? 0 : cr->cv_min_free, cr->cv_rel_edge,
	       cr->cv_track_rounds, cr->cv_item_writes, cr->cv_eagain, cr->cv_nowait_ok);
	printf("                    %" PRIu64 " chains, %" PRIu64 "..%" PRIu64
	       " sessions each (%" PRIu64 " in all, %" PRIu64 " ended early); versions: %" PRIu64
	       " crash points "
	       "with intermediate versions, up to %" PRIu64 " versions a sector, %" PRIu64
	       " states choosing one\n",
	       cr->cv_chains, cr->cv_chains ? cr->cv_sess_min : 0, cr->cv_sess_max,
	       cr->cv_sess_total, cr->cv_chain_cut, cr->cv_vcps, cr->cv_max_ver, cr->cv_vstates);
	if (cr->profile == IOL_SIM_GARBLE)
		printf("                    garbled states by fill: random %" PRIu64
		       ", zero %" PRIu64 ", ones %" PRIu64 ", copy %" PRIu64 ", eio %" PRIu64 "\n",
		       cr->fill_states[CR_FILL_RANDOM], cr->fill_states[CR_FILL_ZERO],
		       cr->fill_states[CR_FILL_ONES], cr->fill_states[CR_FILL_COPY],
		       cr->fill_states[CR_FILL_EIO]);
	printf("                    L13 bound flushes %" PRIu64 " (%" PRIu64 " crash points right "
	       "after one), L12 cover flushes %" PRIu64 " (%" PRIu64 " crash points right after "
	       "one), %" PRIu64 " records split at the log's end\n",
	       cr->cv_bound, cr->cv_cps_bound, cr->cv_cover, cr->cv_cps_cover, cr->cv_wraps);
	printf("                    flush gate: %" PRIu64 " generations (%" PRIu64
	       " inline), %" PRIu64 " failed requests (none injected); %" PRIu64
	       " rounds with a ->run, %" PRIu64 " with native FUA\n",
	       cr->cv_gate_gens, cr->cv_gate_inline, cr->cv_gate_errs, cr->cv_inline_rounds,
	       cr->cv_keep_fua_rounds);
	printf("  liveness          %" PRIu64
	       " stalls (calls waiting %u s with the disk idle), %" PRIu64
	       " set free by delog_force(0); %" PRIu64 " open/close cycles without "
	       "writes, most lasting log use they added %" PRIu64 " bytes; %" PRIu64 " growers "
	       "told -EDEADLK\n",
	       cr->cv_stalls, cr->stall_bound, cr->cv_rescues, cr->cv_idle_cycles,
	       cr->cv_idle_growth, cr->cv_edeadlk);
	if (cr->cv_stall_seen)
		printf("                    first stall after %" PRIu64 " states, %.1f s\n",
		       cr->cv_first_stall_states, cr->cv_first_stall_s);
	printf("  violations        %" PRIu64 "\n", cr->nviol);
	printf("  time              %.1f s\n", secs);
	for (size_t i = 0; i < cr->nviols; i++) {
		const struct viol *v = &cr->viols[i];

		printf("violation: round %u (seed %#" PRIx64 "), crash point %" PRIu64
		       " after event "
		       "%" PRIu64 ", state %s: %s\n",
		       v->round, v->round_seed, v->cp, v->ev, v->state ? v->state : "-", v->what);
		if (v->image[0])
			printf("  image: %s\n", v->image);
	}
	if (cr->nviol > cr->nviols)
		printf("(%" PRIu64 " more violations not listed)\n", cr->nviol - cr->nviols);
	for (size_t i = 0; i < cr->nkinds; i++)
		printf("kind: %" PRIu64 " x %s\n", cr->kinds[i].n, cr->kinds[i].what);
	/* --sector only if it was given: random draws one per round otherwise, and fixing
	 * the last round's would replay other rounds than the ones that ran. */
	if (cr->nviol) {
		printf("replay: delog crash --seed %" PRIu64 " --policy %s --profile %s ", cr->seed,
		       delog_flush_policy_name(cr->policy), profile_name(cr->profile));
		if (cr->sector_opt)
			printf("--sector %u ", cr->sector_opt);
		if (cr->fill >= 0)
			printf("--fill %s ", cr_fill_name[cr->fill]);
		printf("--workload %s --round R (--save DIR keeps the images, which `delog recover "
		       "--dry-run IMAGE` replays exactly)\n",
		       cr->workload);
	}
}

/* "error": what stopped the run early (@err, @what), or null. */
static void json_run_error(struct json *j, int err, const char *what)
{
	if (!err) {
		json_null(j, "error");
		return;
	}
	json_obj_begin(j, "error");
	json_i64(j, "code", err);
	json_str(j, "name", tool_err_name(err));
	json_str(j, "message", what);
	json_obj_end(j);
}

/* The report; @err (0: none) stopped the run, @what says where. */
static void print_json(struct crash *cr, double secs, int err, const char *what)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	json_str(&j, "policy", delog_flush_policy_name(cr->policy));
	json_str(&j, "profile", profile_name(cr->profile));
	json_u64(&j, "sector", cr->sector);
	json_str(&j, "workload", cr->workload);
	json_u64(&j, "seed", cr->seed);
	json_bool(&j, "exhaustive", cr->exhaustive);
	json_u64(&j, "states_target", cr->target);
	json_u64(&j, "rounds", cr->rounds);
	json_u64(&j, "crash_points", cr->cps);
	json_u64(&j, "exhaustive_points", cr->exh_cps);
	json_u64(&j, "max_unstable_sectors", cr->max_k);
	json_u64(&j, "states", cr->states);
	json_u64(&j, "distinct_images", cr->distinct);
	json_u64(&j, "recoveries", cr->recoveries);
	json_u64(&j, "full_opens", atomic_load(&cr->full_opens));
	json_u64(&j, "continuations", atomic_load(&cr->continuations));
	json_u64(&j, "full_opens_gated", atomic_load(&cr->full_gated));
	json_u64(&j, "protocol_writes", cr->protocol_events);
	json_u64(&j, "protocol_violations", cr->nprot);
	json_u64(&j, "violations", cr->nviol);
	if (cr->f_rounds) {
		json_obj_begin(&j, "log_full");
		json_u64(&j, "rounds", cr->f_rounds);
		json_u64(&j, "edge_crash_points", cr->f_edge_cps);
		json_u64(&j, "crash_points_75pct_live", cr->f_hi_cps);
		json_u64(&j, "releases", cr->f_bursts);
		json_u64(&j, "forces", cr->f_forces);
		json_u64(&j, "space_waits", cr->f_waits);
		json_u64(&j, "eagain_begin", cr->f_eagain_begin);
		json_u64(&j, "eagain_log", cr->f_eagain_log);
		json_u64(&j, "nowait_granted", cr->f_nowait_ok);
		json_u64(&j, "push_calls", cr->f_push_calls);
		json_u64(&j, "laps", cr->f_laps);
		json_u64(&j, "least_free_bytes", cr->f_min_free == UINT64_MAX ? 0 : cr->f_min_free);
		json_obj_end(&j);
	}
	json_obj_begin(&j, "coverage");
	json_u64(&j, "log_bytes_min", cr->cv_log_min == UINT64_MAX ? 0 : cr->cv_log_min);
	json_u64(&j, "log_bytes_max", cr->cv_log_max);
	json_u64(&j, "window_bytes_min", cr->cv_win_min == UINT64_MAX ? 0 : cr->cv_win_min);
	json_u64(&j, "window_bytes_max", cr->cv_win_max);
	json_u64(&j, "window_named_rounds", cr->cv_win_named);
	json_u64(&j, "ring_bytes_min", cr->cv_ring_min == UINT64_MAX ? 0 : cr->cv_ring_min);
	json_u64(&j, "ring_bytes_max", cr->cv_ring_max);
	json_bool(&j, "sector_512", cr->cv_sectors & 1);
	json_bool(&j, "sector_4096", cr->cv_sectors & 2);
	json_u64(&j, "max_checkpoint_bytes", cr->cv_max_ck);
	json_dbl(&j, "max_checkpoint_rings", (double)cr->cv_max_ck_win / 1000.0);
	json_u64(&j, "images_checkpoint_over_ring", cr->cv_over_win);
	json_u64(&j, "images_checkpoint_over_2mib", cr->cv_over_2m);
	json_u64(&j, "laps", cr->cv_laps);
	json_u64(&j, "least_free_bytes", cr->cv_min_free == UINT64_MAX ? 0 : cr->cv_min_free);
	json_u64(&j, "edge_release_rounds", cr->cv_rel_edge);
	json_u64(&j, "tracking_rounds", cr->cv_track_rounds);
	json_u64(&j, "gate_rounds", cr->cv_gate_rounds);
	json_u64(&j, "items_written", cr->cv_item_writes);
	json_u64(&j, "eagain", cr->cv_eagain);
	json_u64(&j, "nowait_granted", cr->cv_nowait_ok);
	json_u64(&j, "chains", cr->cv_chains);
	json_u64(&j, "sessions_min", cr->cv_chains ? cr->cv_sess_min : 0);
	json_u64(&j, "sessions_max", cr->cv_sess_max);
	json_u64(&j, "sessions", cr->cv_sess_total);
	json_u64(&j, "chains_ended_early", cr->cv_chain_cut);
	json_u64(&j, "version_crash_points", cr->cv_vcps);
	json_u64(&j, "max_versions", cr->cv_max_ver);
	json_u64(&j, "version_states", cr->cv_vstates);
	for (int f = 0; f < CR_NFILL; f++) {
		char key[32];

		snprintf(key, sizeof(key), "fill_%s_states", cr_fill_name[f]);
		json_u64(&j, key, cr->fill_states[f]);
	}
	json_u64(&j, "bound_flushes", cr->cv_bound);
	json_u64(&j, "crash_points_after_bound_flush", cr->cv_cps_bound);
	json_u64(&j, "cover_flushes", cr->cv_cover);
	json_u64(&j, "crash_points_after_cover_flush", cr->cv_cps_cover);
	json_u64(&j, "wraps", cr->cv_wraps);
	json_u64(&j, "gate_generations", cr->cv_gate_gens);
	json_u64(&j, "gate_failed_requests", cr->cv_gate_errs);
	json_u64(&j, "gate_inline_generations", cr->cv_gate_inline);
	json_u64(&j, "inline_run_rounds", cr->cv_inline_rounds);
	json_u64(&j, "native_fua_rounds", cr->cv_keep_fua_rounds);
	json_obj_end(&j);
	json_obj_begin(&j, "liveness");
	json_u64(&j, "stall_bound_seconds", cr->stall_bound);
	json_u64(&j, "cover_delay_ms", cr->cover_delay_ms);
	json_u64(&j, "stalls", cr->cv_stalls);
	json_u64(&j, "rescued", cr->cv_rescues);
	json_u64(&j, "edeadlk", cr->cv_edeadlk);
	json_u64(&j, "idle_cycles", cr->cv_idle_cycles);
	json_u64(&j, "idle_growth_bytes", cr->cv_idle_growth);
	if (cr->cv_stall_seen) {
		json_u64(&j, "first_stall_states", cr->cv_first_stall_states);
		json_dbl(&j, "first_stall_seconds", cr->cv_first_stall_s);
	}
	json_obj_end(&j);
	json_dbl(&j, "seconds", secs);
	json_arr_begin(&j, "violation_list");
	for (size_t i = 0; i < cr->nviols; i++) {
		const struct viol *v = &cr->viols[i];

		json_obj_begin(&j, NULL);
		json_u64(&j, "round", v->round);
		json_u64(&j, "round_seed", v->round_seed);
		json_u64(&j, "crash_point", v->cp);
		json_u64(&j, "event", v->ev);
		json_str(&j, "state", v->state);
		json_str(&j, "what", v->what);
		json_str(&j, "image", v->image[0] ? v->image : NULL);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_arr_begin(&j, "violation_kinds");
	for (size_t i = 0; i < cr->nkinds; i++) {
		json_obj_begin(&j, NULL);
		json_u64(&j, "count", cr->kinds[i].n);
		json_str(&j, "what", cr->kinds[i].what);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_run_error(&j, err, what);
	json_obj_end(&j);
	json_finish(&j);
}

/* A run that could not start, with --json: {tool, version, error, seconds}. */
static void json_start_error(int err, const char *what)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_begin(&j, NULL);
	json_str(&j, "tool", "delog crash");
	json_str(&j, "version", tool_version());
	json_run_error(&j, err, what);
	json_dbl(&j, "seconds", 0);
	json_obj_end(&j);
	json_finish(&j);
}

static int usage_err(const char *opt, const char *arg, const char *need)
{
	fprintf(stderr, "delog crash: %s: '%s': %s\n", opt, arg, need);
	usage(stderr);
	return TOOL_EXIT_USAGE;
}

/* The command line into @cr (defaults first).  Returns -1 to go on, or an exit code. */
static int parse_opts(struct crash *cr, int argc, char **argv)
{
	/* Long only: --states and --seed (-n is --dry-run and -s --size in every command). */
	enum {
		O_PROFILE = 256,
		O_SECTOR,
		O_FULL,
		O_SAVE,
		O_ROUND,
		O_STATES,
		O_SEED,
		O_STALL,
		O_FILL,
		O_COVER_DELAY
	};
	static const struct option lopts[] = {
		{ "workload", required_argument, NULL, 'w' },
		{ "policy", required_argument, NULL, 'p' },
		{ "states", required_argument, NULL, O_STATES },
		{ "seed", required_argument, NULL, O_SEED },
		{ "profile", required_argument, NULL, O_PROFILE },
		{ "fill", required_argument, NULL, O_FILL },
		{ "sector", required_argument, NULL, O_SECTOR },
		{ "exhaustive", no_argument, NULL, 'x' },
		{ "threads", required_argument, NULL, 't' },
		{ "jobs", required_argument, NULL, 'J' },
		{ "full-every", required_argument, NULL, O_FULL },
		{ "cover-delay", required_argument, NULL, O_COVER_DELAY },
		{ "save", required_argument, NULL, O_SAVE },
		{ "round", required_argument, NULL, O_ROUND },
		{ "stall-bound", required_argument, NULL, O_STALL },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t v;
	int ch;

	cr->workload = "all";
	cr->policy = DELOG_FLUSH_SYNC;
	cr->target = 10000;
	cr->seed = 1;
	cr->sector = 4096;
	cr->full_every = 32;
	cr->stall_bound = CR_WD_BOUND_S;
	cr->f_min_free = UINT64_MAX;
	cr->jobs = ncpu > 0 ? (unsigned)(ncpu < 8 ? ncpu : 8) : 1;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "w:p:xt:J:jvh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'w': {
			bool ok = !strcmp(optarg, "all");

			for (size_t i = 0; i < NR_WL; i++)
				ok |= !strcmp(optarg, wl_names[i]);
			if (!ok)
				return usage_err("--workload", optarg,
						 "mixed, wrap, relog, small, full, random, window, "
						 "liveness or all");
			cr->workload = optarg;
			break;
		}
		case 'p':
			if (delog_flush_policy_parse(optarg, &cr->policy))
				return usage_err("--policy", optarg, "sync, async, single or none");
			break;
		case O_STATES:
			if (parse_count(optarg, 1, UINT64_MAX / 2, &cr->target))
				return usage_err("--states", optarg, "a count >= 1");
			break;
		case O_SEED:
			if (parse_count(optarg, 0, UINT64_MAX, &cr->seed))
				return usage_err("--seed", optarg, "a number");
			break;
		case O_PROFILE:
			if (!strcmp(optarg, "strict"))
				cr->profile = IOL_SIM_STRICT;
			else if (!strcmp(optarg, "garble"))
				cr->profile = IOL_SIM_GARBLE;
			else if (!strcmp(optarg, "versions"))
				cr->profile = IOL_SIM_VERSIONS;
			else
				return usage_err("--profile", optarg, "strict, garble or versions");
			break;
		case O_FILL:
			cr->fill = -2;
			for (int f = 0; f < CR_NFILL; f++)
				if (!strcmp(optarg, cr_fill_name[f]))
					cr->fill = f;
			if (!strcmp(optarg, "all"))
				cr->fill = -1;
			if (cr->fill == -2)
				return usage_err("--fill", optarg,
						 "random, zero, ones, copy, eio or all");
			break;
		case O_SECTOR:
			if (parse_count(optarg, 512, 4096, &v) || (v != 512 && v != 4096))
				return usage_err("--sector", optarg, "512 or 4096");
			cr->sector_opt = (uint32_t)v;
			break;
		case 'x':
			cr->exhaustive = true;
			break;
		case 't':
			if (parse_count(optarg, 1, CR_MAX_CLIENTS, &v))
				return usage_err("--threads", optarg, "1..15");
			cr->threads = (unsigned)v;
			break;
		case 'J':
			if (parse_count(optarg, 1, 64, &v))
				return usage_err("--jobs", optarg, "1..64");
			cr->jobs = (unsigned)v;
			break;
		case O_FULL:
			if (parse_count(optarg, 0, UINT32_MAX, &v))
				return usage_err("--full-every", optarg, "a count (0: never)");
			cr->full_every = (unsigned)v;
			break;
		case O_SAVE:
			cr->save_dir = optarg;
			break;
		case O_ROUND:
			if (parse_count(optarg, 0, UINT32_MAX, &cr->round_no))
				return usage_err("--round", optarg, "a round number");
			cr->one_round = true;
			break;
		case O_COVER_DELAY:
			if (parse_count(optarg, 0, 10000, &v))
				return usage_err("--cover-delay", optarg, "milliseconds, 0..10000");
			cr->cover_delay_ms = (unsigned)v;
			break;
		case O_STALL:
			if (parse_count(optarg, 1, 3600, &v))
				return usage_err("--stall-bound", optarg, "seconds, 1..3600");
			cr->stall_bound = (unsigned)v;
			break;
		case 'j':
			cr->json = true;
			break;
		case 'v':
			cr->verbose = true;
			break;
		case 'h':
			help();
			return TOOL_EXIT_OK;
		default:
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "delog crash: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	return -1;
}

/* The image buffers and the recovery workers (--jobs threads, each with its sim disk).
 * 0, or a negative errno with the reason in @why (the caller prints it). */
static int run_start(struct crash *cr, char *why, size_t len)
{
	if (cr->save_dir && mkdir(cr->save_dir, 0755) && errno != EEXIST) {
		int err = -errno;

		snprintf(why, len, "--save: %s: %s", cr->save_dir, strerror(-err));
		return err;
	}
	cr->progress = isatty(STDERR_FILENO) && !cr->verbose;
	cr->verify = getenv("DELOG_CRASH_VERIFY") && *getenv("DELOG_CRASH_VERIFY") == '1';
	cr->t0 = now_ns();
	pthread_mutex_init(&cr->mu, NULL);
	pthread_mutex_init(&cr->viol_mu, NULL);
	pthread_cond_init(&cr->work_cv, NULL);
	pthread_cond_init(&cr->done_cv, NULL);
	/* Image buffers for the largest device a round can have. */
	cr->dev_max = DELOG_SB_BYTES + (!strcmp(cr->workload, "random") ||
							!strcmp(cr->workload, "window") ||
							!strcmp(cr->workload, "all") ?
						CR_LOG_MAX :
						CR_LOG_BYTES);
	cr->sector = cr->sector_opt ? cr->sector_opt : 4096;
	cr->cv_log_min = cr->cv_ring_min = cr->cv_min_free = cr->cv_sess_min = UINT64_MAX;
	cr->cv_win_min = UINT64_MAX;
	cr->old = malloc(cr->dev_max);
	cr->newimg = malloc(cr->dev_max);
	cr->h_sec = calloc(cr->dev_max / 512, sizeof(*cr->h_sec));
	cr->w = calloc(cr->jobs, sizeof(*cr->w));
	if (!cr->old || !cr->newimg || !cr->h_sec || !cr->w) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cr->jobs; i++) {
		struct worker *w = &cr->w[i];

		w->cr = cr;
		w->dev = ct_sim_dev(cr->dev_max, cr->sector, seed_for(cr->seed, 0x3003, i), false,
				    CT_DEV_RECOVER, NULL);
		w->sector = cr->sector;
		w->shadow = w->dev ? iol_buf_alloc(w->dev, cr->dev_max) : NULL;
		if (!w->shadow) {
			snprintf(why, len, "cannot open a sim disk for recovery");
			return -ENOMEM;
		}
		memset(w->shadow, 0, cr->dev_max);
		if (pthread_create(&w->th, NULL, worker_main, w)) {
			snprintf(why, len, "cannot start a recovery thread");
			return -EAGAIN;
		}
		cr->nworkers++;
	}
	return 0;
}

/* Free what the run allocated, after the workers were joined. */
static void run_finish(struct crash *cr)
{
	for (unsigned i = 0; i < cr->nworkers; i++) {
		iol_dev_close(cr->w[i].dev);
		free(cr->w[i].shadow);
		free(cr->w[i].dirty);
		free(cr->w[i].cand);
		free(cr->w[i].rc.it);
		free(cr->w[i].rc.txv);
	}
	for (size_t i = 0; i < cr->nviols; i++)
		free(cr->viols[i].state);
	free(cr->tab);
	free(cr->jobv);
	free(cr->stv);
	free(cr->choices);
	free(cr->old);
	free(cr->newimg);
	free(cr->h_sec);
	free(cr->ubuf);
	free(cr->ones);
	free(cr->touch);
	free(cr->chg);
	free(cr->cp.u);
	free(cr->cp.newd);
	free(cr->cp.garb);
	free(cr->cp.h_old);
	free(cr->cp.h_new);
	free(cr->cp.h_garb);
	free(cr->cp.ninter);
	free(cr->cp.voff);
	free(cr->cp.vdata);
	free(cr->cp.h_ver);
	free(cr->w);
	pthread_mutex_destroy(&cr->mu);
	pthread_mutex_destroy(&cr->viol_mu);
	pthread_cond_destroy(&cr->work_cv);
	pthread_cond_destroy(&cr->done_cv);
}

int cmd_crash(int argc, char **argv)
{
	static struct crash crash_state; /* static: no leak on the early returns */
	struct crash *cr = &crash_state;
	char why[512] = "";
	int err = 0, rc;
	double secs;

	memset(cr, 0, sizeof(*cr));
	cr->fill = -1;
	rc = parse_opts(cr, argc, argv);
	if (rc >= 0)
		return rc;
	err = run_start(cr, why, sizeof(why));
	if (err) {
		/* The workers started so far wait for work that never comes: the process ends. */
		fprintf(stderr, "delog crash: %s\n", why);
		if (cr->json)
			json_start_error(err, why);
		return TOOL_EXIT_FAIL;
	}
	for (uint64_t r = cr->one_round ? cr->round_no : 0; cr->states < cr->target; r++) {
		uint64_t before = cr->states;

		if (cr->one_round && r != cr->round_no)
			break;
		err = run_round(cr, r);
		if (err) {
			snprintf(why, sizeof(why), "round %" PRIu64 ": %s", r, delog_strerror(err));
			fprintf(stderr, "delog crash: %s\n", why);
			break;
		}
		if (cr->states == before && cr->nviol)
			break; /* a workload that cannot run: reported */
	}
	cr_progress(cr, true);
	/* The workers are stopped (and joined) before the report reads their counts. */
	pthread_mutex_lock(&cr->mu);
	cr->quit = true;
	pthread_cond_broadcast(&cr->work_cv);
	pthread_mutex_unlock(&cr->mu);
	for (unsigned i = 0; i < cr->nworkers; i++)
		pthread_join(cr->w[i].th, NULL);
	secs = (double)(now_ns() - cr->t0) / 1e9;
	if (cr->json)
		print_json(cr, secs, err, why);
	else
		print_text(cr, secs);
	rc = err || cr->nviol ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
	run_finish(cr);
	return rc;
}
