/*
 * crashtest_kv.c - power-cut testing of kv.c's recovery with libdelog-crashtest
 * (docs/CRASHTEST.md is the tutorial that follows this file).
 *
 *   crashtest_kv [--broken] [--policy P] [--states N] [--seed S] [--jobs J] [--dir DIR]
 *                [--serial] [--trace FILE]
 *       run a campaign: two threads put keys into kv's log as kv_op does, each put
 *       acknowledged once its reply could be sent; every crash state's image is
 *       recovered through kv.c's own on_checkpoint and checked: every acknowledged put
 *       is there with its value, and each thread's puts are a prefix (kv's data file
 *       and write-back are not under test: a session ends when half the log is used,
 *       where kv would write back and release).  Prints the
 *       coverage, and for a failure its handle, the reason and the minimal state.
 *       --broken acknowledges a put after delog_tx_commit and before delog_force: the
 *       bug of an application that replies too early, which the campaign must find.
 *       --serial runs the threads one at a time in the seed's order, so a second run
 *       with the seed makes the same events (the trace hash printed is the same) and
 *       finds the same failure; --trace writes the event trace to FILE.
 *   crashtest_kv --replay HANDLE [--times N]
 *       rebuild a failure's image and run the recovery and the check again, N times
 *       (under a debugger, once): no workload, no threads.
 *   crashtest_kv --minimise HANDLE OUT
 *       shrink a failing handle to the sectors the failure needs.
 * Exit status: 0 no failure (a replay that passes, a minimised handle written), 1 a
 * failure found (a replay that fails), 2 usage or an error.
 *
 * Build: in the delog tree, or against an installed delog:
 *   cc crashtest_kv.c $(pkg-config --cflags --libs delog-crashtest) -o crashtest_kv
 * (kv.c must sit beside it: it is compiled in, its main renamed).
 */
int kv_main(int argc, char **argv);
#define main kv_main
#include "kv.c"
#undef main

#include <delog_crashtest.h>
#include <getopt.h>
#include <inttypes.h>

#define PUTS_PER_THREAD 120u

struct ctkv {
	bool broken;
};

/* A put's key and value from its tag (session << 48 | thread << 32 | index), so CHECK
 * knows what each acknowledged put stored without the workload telling it. */
static void put_kv(uint64_t tag, char *key, size_t klen, char *val, size_t vlen)
{
	uint64_t h = fnv1a(&tag, sizeof(tag), FNV_INIT);
	size_t n = 8 + h % 120, i;

	snprintf(key, klen, "s%u-t%u-%u", (unsigned)(tag >> 48), (unsigned)(tag >> 32) & 0xffffu,
		 (unsigned)tag);
	for (i = 0; i < n && i + 1 < vlen; i++)
		val[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[(h >> (i % 58)) % 36];
	val[i] = 0;
}

/* kv_op's put, on the library's log; --broken acknowledges before the force. */
static int put(struct ctkv *c, delog *log, delog_ct_run *run, uint64_t tag)
{
	char key[64], val[160];
	unsigned char buf[ITEM_HDR + sizeof(key) + sizeof(val)];
	uint32_t klen, len;
	delog_tx *tx;
	uint64_t seq;
	int err;

	put_kv(tag, key, sizeof(key), val, sizeof(val));
	klen = (uint32_t)strlen(key);
	len = ITEM_HDR + klen + (uint32_t)strlen(val);
	memset(buf, 0, ITEM_HDR);
	buf[0] = 'P';
	memcpy(buf + 4, &klen, sizeof(klen));
	memcpy(buf + ITEM_HDR, key, klen);
	memcpy(buf + ITEM_HDR + klen, val, strlen(val));
	err = delog_tx_begin(log, len + DELOG_ITEM_OVERHEAD, 0, &tx);
	if (err)
		return err;
	err = delog_tx_log(tx, key_hash(key, klen), buf, len);
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	if (!c->broken) {
		err = delog_tx_commit_force(tx, &seq);
		return err ? err : delog_ct_ack(run, tag, seq); /* the reply goes out now */
	}
	err = delog_tx_commit(tx, &seq);
	if (!err)
		err = delog_ct_ack(run, tag, seq); /* the bug: replied before it is durable */
	return err ? err : delog_force(log, seq);
}

/* Half the log used ends the session: kv would write its memtable back to the data file
 * and release the log there, and the data file is not on the disk the library cuts. */
static bool log_half_full(delog *log)
{
	struct delog_stats st = { .size = sizeof(st) };

	return !delog_stats(log, &st) && st.log_used * 2 > st.log_size;
}

static int workload(void *arg, delog *log, delog_ct_run *run, unsigned thread)
{
	uint64_t base = (uint64_t)delog_ct_session(run) << 48 | (uint64_t)thread << 32;

	for (uint32_t i = 0; i < PUTS_PER_THREAD && !delog_ct_stopping(run); i++) {
		int err = log_half_full(log) ? 0 : put(arg, log, run, base | i);

		if (err)
			return err;
	}
	return 0;
}

/* ---- recovery: kv.c's own ---- */

static void *state_new(void *arg)
{
	struct kv *kv = calloc(1, sizeof(*kv));

	if (kv)
		pthread_mutex_init(&kv->lock, NULL);
	return kv;
}

static void state_free(void *arg, void *state)
{
	struct kv *kv = state;

	mt_free(&kv->mt);
	pthread_mutex_destroy(&kv->lock);
	free(kv);
}

/* Each thread's puts recovered as a prefix: index i there means 0..i-1 are too. */
static int check_prefix(struct kv *kv, char *why, size_t len)
{
	for (size_t e = 0; e < kv->mt.cap; e++) {
		const struct ent *x = &kv->mt.e[e];
		unsigned s, t, i;
		char key[64];

		if (x->state != 1 || sscanf(x->key, "s%u-t%u-%u", &s, &t, &i) != 3 || !i)
			continue;
		snprintf(key, sizeof(key), "s%u-t%u-%u", s, t, i - 1);
		if (!mt_get(&kv->mt, key, strlen(key))) {
			snprintf(why, len, "%s recovered but %s, put before it, is missing", x->key,
				 key);
			return 1;
		}
	}
	return 0;
}

static int check(void *arg, void *state, const struct delog_ct_cut *cut, char *why, size_t len)
{
	struct kv *kv = state;

	for (size_t i = 0; i < cut->nacks; i++) {
		char key[64], val[160];
		const struct ent *e;

		put_kv(cut->acks[i].tag, key, sizeof(key), val, sizeof(val));
		e = mt_get(&kv->mt, key, strlen(key));
		if (!e || strcmp(e->val, val)) {
			snprintf(why, len,
				 "put %s was acknowledged (checkpoint %" PRIu64 ", durable "
				 "%" PRIu64 " at the cut) but recovery %s it",
				 key, cut->acks[i].seq, cut->durable_seq,
				 e ? "holds another value for" : "lost");
			return 1;
		}
	}
	return check_prefix(kv, why, len);
}

/* ---- the command ---- */

static void ct_usage(void)
{
	fprintf(stderr, "usage: crashtest_kv [--broken] [--policy sync|async|single|none] "
			"[--states N] [--seed S] [--jobs J] [--dir DIR] [--serial] "
			"[--trace FILE]\n"
			"       crashtest_kv --replay HANDLE [--times N]\n"
			"       crashtest_kv --minimise HANDLE OUT\n");
	exit(2);
}

static int replay(const struct delog_ct_app *app, const char *h, unsigned long times)
{
	char first[512] = "", why[512];
	unsigned long failed = 0, differs = 0;

	for (unsigned long i = 0; i < times; i++) {
		int r = delog_ct_replay(h, app, why, sizeof(why));

		if (r < 0) {
			fprintf(stderr, "crashtest_kv: %s\n", delog_errmsg());
			return 2;
		}
		if (r == 1 && !failed++)
			snprintf(first, sizeof(first), "%s", why);
		else if (r == 1 && strcmp(first, why))
			differs++;
	}
	printf("replayed %lu times: failed %lu, passed %lu, reasons that differ %lu\n", times,
	       failed, times - failed, differs);
	if (failed)
		printf("reason: %s\n", first);
	return failed ? 1 : 0;
}

static void print_report(const struct delog_ct_report *r)
{
	printf("runs %" PRIu64 " sessions %" PRIu64 " points %" PRIu64 " states %" PRIu64
	       " images %" PRIu64 " checks %" PRIu64 " acks %" PRIu64 " in %.1f s\n",
	       r->runs, r->sessions, r->points, r->states, r->images, r->checks, r->acks,
	       r->seconds);
	printf("points after: submit %" PRIu64 " complete %" PRIu64 " flush %" PRIu64
	       " ack %" PRIu64 "; unstable sectors at most %" PRIu64 "\n",
	       r->points_by[0], r->points_by[1], r->points_by[2], r->points_by[3], r->unstable_max);
	printf("states with a sector: new %" PRIu64 " garbage %" PRIu64 " zeroes %" PRIu64
	       " 0xff %" PRIu64 " copy %" PRIu64 " unreadable %" PRIu64 "\n",
	       r->by_profile[0], r->by_profile[1], r->by_profile[2], r->by_profile[3],
	       r->by_profile[4], r->by_profile[5]);
	printf("wraps %" PRIu64 " bound flushes %" PRIu64 " cover flushes %" PRIu64
	       " space waits %" PRIu64 "; runs gated %" PRIu64 " inline %" PRIu64
	       " native FUA %" PRIu64 "\n",
	       r->wraps, r->bound_flushes, r->cover_flushes, r->space_waits, r->gate_runs,
	       r->inline_runs, r->fua_runs);
	printf("policy %s, %u-byte sectors; flush gate generations %" PRIu64 " (inline %" PRIu64
	       ")\n",
	       delog_flush_policy_name((enum delog_flush_policy)r->policy), r->sector,
	       r->gate_generations, r->gate_inline);
	printf("trace hash %016" PRIx64 "\n", r->trace_hash);
	if (!r->failures) {
		printf("no failure\n");
		return;
	}
	printf("FAILED: %" PRIu64 " failing states\nreason: %s\nhandle: %s\n", r->failures, r->why,
	       r->handle);
	if (r->minimal[0])
		printf("minimal: %s\n", r->minimal);
	printf("state: %s\n", r->state);
}

static int policy_of(const char *s, enum delog_flush_policy *p)
{
	static const char *const names[] = { "sync", "async", "single", "none" };
	static const enum delog_flush_policy v[] = { DELOG_FLUSH_SYNC, DELOG_FLUSH_ASYNC,
						     DELOG_FLUSH_SINGLE, DELOG_FLUSH_NONE };

	for (size_t i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*p = v[i];
			return 0;
		}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "broken", no_argument, NULL, 'b' },
					    { "policy", required_argument, NULL, 'p' },
					    { "states", required_argument, NULL, 'n' },
					    { "seed", required_argument, NULL, 's' },
					    { "jobs", required_argument, NULL, 'j' },
					    { "dir", required_argument, NULL, 'd' },
					    { "replay", required_argument, NULL, 'r' },
					    { "times", required_argument, NULL, 't' },
					    { "minimise", required_argument, NULL, 'm' },
					    { "serial", no_argument, NULL, 'S' },
					    { "trace", required_argument, NULL, 'T' },
					    { NULL, 0, NULL, 0 } };
	struct ctkv c = { 0 };
	struct delog_options log = { .size = sizeof(log), .sector = 512 };
	struct delog_ct_app app = { .size = sizeof(app),
				    .arg = &c,
				    .threads = 2,
				    .workload = workload,
				    .state_new = state_new,
				    .state_free = state_free,
				    .replay = on_checkpoint,
				    .check = check };
	struct delog_ct_options o = { .size = sizeof(o), .log = &log, .states = 100000 };
	struct delog_ct_report rep = { .size = sizeof(rep) };
	const char *rh = NULL, *mh = NULL;
	unsigned long times = 1;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'b':
			c.broken = true;
			break;
		case 'p':
			if (policy_of(optarg, &log.flush))
				ct_usage();
			break;
		case 'n':
			o.states = strtoull(optarg, NULL, 0);
			break;
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'j':
			o.jobs = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			o.save_dir = optarg;
			break;
		case 'r':
			rh = optarg;
			break;
		case 't':
			times = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			mh = optarg;
			break;
		case 'S':
			o.flags |= DELOG_CT_SERIAL;
			break;
		case 'T':
			o.trace_path = optarg;
			break;
		default:
			ct_usage();
		}
	}
	if (rh && !mh && optind == argc)
		return replay(&app, rh, times ? times : 1);
	if (mh && !rh && optind + 1 == argc) {
		char state[512];

		err = delog_ct_minimise(mh, &app, argv[optind], state, sizeof(state));
		if (err < 0 || err == 1)
			fprintf(stderr, "crashtest_kv: %s: %s\n", mh,
				err == 1 ? "does not fail: nothing to minimise" : delog_errmsg());
		else
			printf("minimal: %s\nstate: %s\n", argv[optind], state);
		return err ? 2 : 0;
	}
	if (rh || mh || optind != argc)
		ct_usage();
	err = delog_ct_campaign(&app, &o, &rep);
	print_report(&rep);
	if (err) {
		fprintf(stderr, "crashtest_kv: %s\n", delog_errmsg());
		return 2;
	}
	return rep.failures ? 1 : 0;
}
