/*
 * campaign.c - delog_ct_campaign: a campaign of runs, each of sessions on one log, until
 * the budget is spent or enough failures were found; the report; the small helpers the
 * other parts share.
 *
 * A run begins from the formatted log's image (formatted once, on a free-running disk,
 * with the application's options: the workload never meets a log being made).  Session
 * s > 0 opens the image session s - 1 was cut at, replaying it through REPLAY, so the
 * workload continues after a crash as the application would.  Each run draws its device
 * from its seed: through the iolayer's flush gate or not, a gate whose lone waiter's
 * flush runs inline, native FUA or FUA carried out as a write and a flush.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ct_private.h"
#include "engine_private.h" /* error_clear, error_say */

uint64_t ct_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ct_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t ct_seed_for(uint64_t seed, uint64_t a, uint64_t b)
{
	return ct_mix(seed ^ ct_mix(a * 0x9e3779b97f4a7c15ull + ct_mix(b + 0x5eed)));
}

/* A 64-bit hash of one sector, mixed with its index: an image's hash is the sum of its
 * sectors' (CT4), so changing one sector changes the sum by a difference of two terms. */
uint64_t ct_sector_hash(const void *p, uint32_t len, uint64_t idx)
{
	const unsigned char *b = p;
	uint64_t h = 0x6a09e667f3bcc909ull ^ idx, w;

	for (uint32_t i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ ct_mix(w + i)) * 0x9e3779b97f4a7c15ull;
	}
	return ct_mix(h + idx * 0xc2b2ae3d27d4eb4full);
}

uint64_t ct_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

int ct_say(int code, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return error_say(code, "%s", buf);
}

/* ---- options ---- */

int ct_app_check(const struct delog_ct_app *app)
{
	if (!app || app->size < sizeof(*app) || !app->check)
		return ct_say(-EINVAL, "app: size must be sizeof(struct delog_ct_app), with a "
				       "check");
	return 0;
}

static int opts_read(struct ct_opts *o, const struct delog_ct_app *app,
		     const struct delog_ct_options *in)
{
	int err = ct_app_check(app);

	if (err || !app->workload)
		return err ? err : ct_say(-EINVAL, "app: no workload");
	if (!in || in->size < offsetof(struct delog_ct_options, trace_path))
		return ct_say(-EINVAL, "options: size must be sizeof(struct delog_ct_options)");
	memset(o, 0, sizeof(*o));
	o->app = app;
	o->threads = app->threads ? app->threads : 1;
	if (o->threads > CT_MAX_THREADS)
		return ct_say(-EINVAL, "app.threads %u: at most %u", o->threads, CT_MAX_THREADS);
	if (in->log) {
		if (in->log->size < sizeof(struct delog_options))
			return ct_say(-EINVAL,
				      "options.log: size must be sizeof(struct delog_options)");
		o->log = *in->log;
	} else {
		o->log.size = sizeof(o->log);
	}
	o->log.backend = NULL;
	o->log.flags &= DELOG_OPEN_TRACK_ITEMS;
	o->log.recover = NULL;
	o->log.recovery = NULL;
	o->log.error = NULL;
	o->log.recover_to = 0;
	o->sector = o->log.sector ? o->log.sector : 4096;
	if (o->sector != 512 && o->sector != 4096)
		return ct_say(-EINVAL, "options.log.sector %u: 512 or 4096", o->sector);
	o->log_bytes = in->log_bytes ? in->log_bytes : DELOG_LOG_MIN_BYTES;
	if (o->log_bytes < DELOG_LOG_MIN_BYTES || o->log_bytes > (1ull << 30) ||
	    o->log_bytes % o->sector)
		return ct_say(-EINVAL,
			      "options.log_bytes %" PRIu64 ": a multiple of the sector "
			      "from 4 MiB to 1 GiB",
			      o->log_bytes);
	o->dev_bytes = DELOG_SB_BYTES + o->log_bytes;
	o->seed = in->seed;
	o->states = in->states ? in->states : 20000;
	o->seconds = in->seconds;
	o->jobs = in->jobs ? in->jobs : 1;
	o->sessions = in->sessions ? in->sessions : 2;
	o->profiles = in->profiles ? in->profiles : DELOG_CT_ALL;
	o->stall_s = in->stall_s ? in->stall_s : 30;
	o->max_failures = in->max_failures ? in->max_failures : 1;
	o->save_dir = in->save_dir ? in->save_dir : ".";
	o->flags = in->flags;
	if (in->size >= offsetof(struct delog_ct_options, trace_path) + sizeof(in->trace_path))
		o->trace_path = in->trace_path;
	if (o->flags & ~(DELOG_CT_NO_MINIMISE | DELOG_CT_SERIAL))
		return ct_say(-EINVAL, "options.flags %#x: unknown flags", o->flags);
	if (o->jobs > 64 || o->sessions > 64 || (o->profiles & ~DELOG_CT_ALL) ||
	    !(o->profiles & DELOG_CT_ALL))
		return ct_say(-EINVAL, "options: jobs and sessions at most 64, profiles of "
				       "DELOG_CT_ALL");
	return 0;
}

/* The formatted log, once: on a free-running disk, with the application's options. */
static int format_fresh(struct ct_campaign *cp)
{
	struct delog_options lo = cp->o.log;
	struct iol_dev *dev;
	delog *log = NULL;
	int err;

	dev = ct_sim_dev(cp->o.dev_bytes, cp->o.sector, cp->o.seed, false, 0, NULL);
	if (!dev)
		return -ENOMEM;
	lo.flags |= DELOG_OPEN_FORMAT;
	lo.create_size = cp->o.log_bytes;
	lo.sector = cp->o.sector;
	lo.push = NULL;
	err = engine_open_dev(dev, &lo, &log);
	if (!err)
		err = delog_close(log);
	if (!err)
		err = iol_sim_media(dev, 0, cp->fresh, cp->o.dev_bytes);
	iol_dev_close(dev);
	return err;
}

bool ct_budget_spent(struct ct_campaign *cp)
{
	const struct delog_ct_report *r = cp->rep;

	if (r->states >= cp->o.states || r->failures >= cp->o.max_failures || cp->err)
		return true;
	return cp->o.seconds > 0 && (double)(ct_now_ns() - cp->t0) / 1e9 >= cp->o.seconds;
}

static void run_init(struct ct_campaign *cp, struct delog_ct_run *run, uint64_t r)
{
	memset(run, 0, sizeof(*run));
	run->cp = cp;
	run->run = r;
	run->seed = ct_seed_for(cp->o.seed, 0xc7, r);
	if (run->seed & 1) {
		run->dev_flags = CT_DEV_GATE;
		if (run->seed & 2)
			run->dev_flags |= CT_DEV_INLINE;
		if (run->seed & 4)
			run->dev_flags |= CT_DEV_KEEP_FUA;
	}
	pthread_mutex_init(&run->ack_mu, NULL);
}

/* A run's sessions.  Its handle is on the heap: after a hang (-ETIMEDOUT) the threads
 * still out hold it, so it is left to them. */
static int run_one(struct ct_campaign *cp, uint64_t r, unsigned char *img, unsigned char *cut)
{
	struct delog_ct_run *rp = malloc(sizeof(*rp));
	int err = 0;

	if (!rp)
		return -ENOMEM;
	run_init(cp, rp, r);
	cp->rep->runs++;
	cp->rep->gate_runs += !!(rp->dev_flags & CT_DEV_GATE);
	cp->rep->inline_runs += !!(rp->dev_flags & CT_DEV_INLINE);
	cp->rep->fua_runs += !!(rp->dev_flags & CT_DEV_KEEP_FUA) || !(rp->dev_flags & CT_DEV_GATE);
	memcpy(img, cp->fresh, cp->o.dev_bytes);
	for (unsigned s = 0; s < cp->o.sessions && !err; s++) {
		bool last = s + 1 == cp->o.sessions;

		rp->session = s;
		cp->rep->sessions++;
		err = ct_session(cp, rp, img, last ? NULL : cut);
		if (!err && !last)
			memcpy(img, cut, cp->o.dev_bytes);
		if (ct_budget_spent(cp))
			break;
	}
	cp->rep->acks += rp->nacks;
	if (err == -ETIMEDOUT)
		return err;
	free(rp->acks);
	pthread_mutex_destroy(&rp->ack_mu);
	free(rp);
	return err;
}

static void campaign_free(struct ct_campaign *cp)
{
	free(cp->fresh);
	free(cp->media);
	free(cp->h_media);
	free(cp->newimg);
	free(cp->st);
	free(cp->choices);
	free(cp->passed);
	pthread_mutex_destroy(&cp->mu);
	pthread_cond_destroy(&cp->cv_work);
	pthread_cond_destroy(&cp->cv_done);
}

static int campaign_alloc(struct ct_campaign *cp)
{
	uint64_t n = cp->o.dev_bytes / cp->o.sector;

	pthread_mutex_init(&cp->mu, NULL);
	pthread_cond_init(&cp->cv_work, NULL);
	pthread_cond_init(&cp->cv_done, NULL);
	cp->fresh = malloc(cp->o.dev_bytes);
	cp->media = malloc(cp->o.dev_bytes);
	cp->newimg = malloc(cp->o.dev_bytes);
	cp->h_media = malloc(n * sizeof(uint64_t));
	cp->passed_cap = 1u << 16;
	cp->passed = calloc(cp->passed_cap, sizeof(uint64_t));
	if (!cp->fresh || !cp->media || !cp->newimg || !cp->h_media || !cp->passed)
		return -ENOMEM;
	return 0;
}

int delog_ct_campaign(const struct delog_ct_app *app, const struct delog_ct_options *o,
		      struct delog_ct_report *rep)
{
	struct delog_ct_report own = { .size = sizeof(own) };
	struct ct_campaign cp = { 0 };
	unsigned char *img = NULL, *cut = NULL;
	size_t rep_size = rep ? rep->size : 0;
	int err;

	error_clear();
	if (rep && rep_size < offsetof(struct delog_ct_report, trace_hash))
		return ct_say(-EINVAL, "report: size must be sizeof(struct delog_ct_report)");
	err = opts_read(&cp.o, app, o);
	if (err)
		return err;
	cp.rep = &own;
	cp.trace_hash = CT_FNV_BASIS;
	cp.rep->sector = cp.o.sector;
	cp.rep->policy = (int)cp.o.log.flush;
	cp.t0 = ct_now_ns();
	err = campaign_alloc(&cp);
	img = malloc(cp.o.dev_bytes);
	cut = malloc(cp.o.dev_bytes);
	if (!err && (!img || !cut))
		err = -ENOMEM;
	if (!err)
		err = format_fresh(&cp);
	if (!err)
		err = ct_workers_start(&cp);
	if (!err && (cp.o.flags & DELOG_CT_SERIAL))
		err = ct_serial_snapshot(&cp); /* after the workers: none is the sessions' */
	if (!err && cp.o.trace_path && !(cp.trace = fopen(cp.o.trace_path, "w")))
		err = ct_say(-errno, "options.trace_path %s: %s", cp.o.trace_path, strerror(errno));
	for (uint64_t r = 0; !err && !ct_budget_spent(&cp); r++)
		err = run_one(&cp, r, img, cut);
	if (!err)
		err = cp.err;
	ct_workers_stop(&cp);
	cp.rep->seconds = (double)(ct_now_ns() - cp.t0) / 1e9;
	cp.rep->trace_hash = cp.trace_hash;
	if (cp.trace && fclose(cp.trace) && !err)
		err = ct_say(-EIO, "options.trace_path %s: write failed", cp.o.trace_path);
	free(cp.before);
	if (rep) {
		memcpy(rep, &own, rep_size < sizeof(own) ? rep_size : sizeof(own));
		rep->size = rep_size;
	}
	free(img);
	free(cut);
	campaign_free(&cp);
	if (err && err != -ETIMEDOUT)
		return ct_say(err, "campaign: %s",
			      cp.rep->why[0] ? cp.rep->why : delog_strerror(err));
	return err ? ct_say(err, "%s", cp.rep->why) : 0;
}

/* ---- the run handle ---- */

int delog_ct_ack(delog_ct_run *run, uint64_t tag, uint64_t seq)
{
	int err = 0;

	if (run->ser)
		ct_serial_ack(run->ser); /* the acknowledgement is made in its turn */
	pthread_mutex_lock(&run->ack_mu);
	if (run->nacks == run->ack_cap) {
		size_t cap = run->ack_cap ? run->ack_cap * 2 : 256;
		struct delog_ct_ack *v = realloc(run->acks, cap * sizeof(*v));

		if (v) {
			run->acks = v;
			run->ack_cap = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err) {
		struct delog_ct_ack *a = &run->acks[run->nacks++];

		a->tag = tag;
		a->seq = seq;
		a->thread = ct_thread_self();
		a->session = run->session;
		atomic_store(&run->ack_count, run->nacks);
	}
	pthread_mutex_unlock(&run->ack_mu);
	return err;
}

void *delog_ct_state(const delog_ct_run *run)
{
	return run->state;
}

uint64_t delog_ct_run_number(const delog_ct_run *run)
{
	return run->run;
}

unsigned delog_ct_session(const delog_ct_run *run)
{
	return run->session;
}

bool delog_ct_stopping(const delog_ct_run *run)
{
	return atomic_load(&run->cp->stopping);
}

uint64_t delog_ct_seed(const delog_ct_run *run, unsigned thread)
{
	return ct_seed_for(run->seed, 0x7d + run->session, thread);
}
