/*
 * check.c - a state's image recovered read-only through the application's REPLAY, and
 * judged by its CHECK; the recovery workers that share a point's states.
 *
 * A worker owns a sim disk without a cache and the copy of the image it holds; to move
 * to the next state's image it writes only the sectors that differ (after a media
 * change, every sector that changed; within one media, the unstable sectors the last
 * states set and this one sets).  Recovery is delog's own: the log opened with
 * DELOG_OPEN_RDONLY on that disk, its checkpoints replayed through REPLAY into a fresh
 * state.  A refused image is a failure of the state whatever CHECK would say: a cut can
 * only tear what was in flight, and delog must recover every such image.
 *
 * The recovered state of an image stays in the worker's small cache and answers CHECK
 * for every later state with that image (CT4), whatever its acknowledgements.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ct_private.h"

int ct_worker_init(struct ct_worker *w, struct ct_campaign *cp, uint64_t dev_bytes, uint32_t sector)
{
	memset(w, 0, sizeof(*w));
	w->cp = cp;
	w->dev = ct_sim_dev(dev_bytes, sector, 1, false, CT_DEV_RECOVER, NULL);
	/* Aligned: the disk takes its writes from here, as from an O_DIRECT buffer. */
	w->held = aligned_alloc(4096, (dev_bytes + sector + 4095) & ~4095ull);
	if (!w->dev || !w->held)
		return -ENOMEM;
	memset(w->held, 0, dev_bytes + sector);
	return 0;
}

void ct_worker_fini(struct ct_worker *w, const struct delog_ct_app *app)
{
	for (unsigned i = 0; i < CT_CACHE; i++)
		if (w->cache[i].state && app->state_new && app->state_free)
			app->state_free(app->arg, w->cache[i].state);
	if (w->dev)
		iol_dev_close(w->dev);
	free(w->held);
	free(w->dirty);
	memset(w, 0, sizeof(*w));
}

/* Make sector @s of the worker's disk hold @b. */
static int put_sector(struct ct_worker *w, const struct ct_point *pt, uint64_t s,
		      const unsigned char *b)
{
	unsigned char *h = w->held + s * pt->sector;

	if (!memcmp(h, b, pt->sector))
		return 0;
	memcpy(h, b, pt->sector);
	return iol_rw_wait(w->dev, IOL_OPF(IOL_OP_WRITE, 0), s * pt->sector, h, pt->sector, NULL);
}

/* Make the worker's disk hold @pt's media: each run of sectors that differ is one
 * write, not one per sector (after a flush, whole records differ at once). */
static int put_media(struct ct_worker *w, const struct ct_point *pt)
{
	uint32_t sec = pt->sector;
	uint64_t n = pt->dev_bytes / sec;
	int err = 0;

	for (uint64_t s = 0; s < n && !err;) {
		uint64_t e = s;

		while (e < n && memcmp(w->held + e * sec, pt->media + e * sec, sec))
			e++;
		if (e > s) {
			memcpy(w->held + s * sec, pt->media + s * sec, (e - s) * sec);
			err = iol_rw_wait(w->dev, IOL_OPF(IOL_OP_WRITE, 0), s * sec,
					  w->held + s * sec, (e - s) * sec, NULL);
		}
		s = e + 1;
	}
	return err;
}

static int dirty_add(struct ct_worker *w, uint64_t s)
{
	if (w->ndirty == w->dirty_cap) {
		size_t cap = w->dirty_cap ? w->dirty_cap * 2 : 64;
		uint64_t *v = realloc(w->dirty, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->dirty = v;
		w->dirty_cap = cap;
	}
	w->dirty[w->ndirty++] = s;
	return 0;
}

/* Unreadable sectors: the last state's made readable, this one's marked. */
static int sync_eio(struct ct_worker *w, const struct ct_point *pt, const uint8_t *choice)
{
	int err = 0;

	for (size_t i = 0; i < w->neio; i++)
		iol_sim_set_unreadable(w->dev, w->eio_sector[i], 1, false);
	w->neio = 0;
	for (size_t i = 0; i < pt->k && !err; i++) {
		if (choice[i] != CT_EIO)
			continue;
		if (w->neio == sizeof(w->eio_sector) / sizeof(w->eio_sector[0]))
			return -E2BIG;
		w->eio_sector[w->neio++] = pt->u[i];
		err = iol_sim_set_unreadable(w->dev, pt->u[i], 1, true);
	}
	return err;
}

/* Bring the worker's disk to the image of @choice at @pt (CT2). */
static int worker_sync(struct ct_worker *w, const struct ct_point *pt, const uint8_t *choice)
{
	unsigned char scratch[4096];
	uint32_t sec = pt->sector;
	size_t old_n = w->ndirty;
	int err = 0;

	if (w->held_gen != pt->media_gen) {
		err = put_media(w, pt);
		w->held_gen = pt->media_gen;
		w->ndirty = old_n = 0;
	}
	/* Sectors the last state set go back to the media, unless this one sets them. */
	for (size_t d = 0; d < old_n && !err; d++) {
		uint64_t s = w->dirty[d];
		size_t i = iol_sim_unstable_index(pt->u, pt->k, s);

		if (i == SIZE_MAX || choice[i] == CT_OLD || choice[i] == CT_EIO)
			err = put_sector(w, pt, s, pt->media + s * sec);
	}
	w->ndirty = 0;
	for (size_t i = 0; i < pt->k && !err; i++) {
		if (choice[i] == CT_OLD || choice[i] == CT_EIO)
			continue;
		err = put_sector(w, pt, pt->u[i], ct_sector_bytes(pt, i, choice[i], scratch));
		if (!err)
			err = dirty_add(w, pt->u[i]);
	}
	return err ? err : sync_eio(w, pt, choice);
}

/* The recovered state of the image of @choice: from the cache, or recovered now. */
static int recovered(struct ct_worker *w, const struct delog_ct_app *app, const struct ct_point *pt,
		     const uint8_t *choice, uint64_t hash)
{
	struct delog_error_info ei = { .size = sizeof(ei) };
	struct delog_options o = { .size = sizeof(o) };
	unsigned slot;
	delog *log = NULL;
	int err;

	for (unsigned i = 0; i < CT_CACHE; i++)
		if (w->cache[i].state && w->cache[i].hash == hash)
			return (int)i;
	slot = w->cache_next++ % CT_CACHE;
	if (w->cache[slot].state && app->state_new && app->state_free)
		app->state_free(app->arg, w->cache[slot].state);
	w->cache[slot].state = NULL;
	err = worker_sync(w, pt, choice);
	if (err)
		return err;
	w->cache[slot].state = app->state_new ? app->state_new(app->arg) : (void *)w;
	if (!w->cache[slot].state)
		return -ENOMEM;
	memset(&w->cache[slot].rec, 0, sizeof(w->cache[slot].rec));
	o.flags = DELOG_OPEN_RDONLY;
	o.recover = app->replay;
	o.recover_arg = app->state_new ? w->cache[slot].state : NULL;
	o.recovery = &w->cache[slot].rec;
	o.error = &ei;
	err = engine_open_dev(w->dev, &o, &log);
	if (!err)
		err = delog_close(log);
	w->cache[slot].hash = hash;
	w->cache[slot].rerr = err;
	snprintf(w->cache[slot].rwhy, sizeof(w->cache[slot].rwhy), "%s", ei.message);
	w->images++;
	return (int)slot;
}

/* Recover (or find) the image of @choice at @pt and run CHECK: 1 fails (@why says
 * why), 0 passes, or a negative code the campaign cannot go on after. */
int ct_check_one(struct ct_worker *w, const struct delog_ct_app *app, const struct ct_point *pt,
		 const uint8_t *choice, uint64_t hash, char *why, size_t whylen)
{
	struct delog_ct_cut cut = { .acks = pt->acks,
				    .nacks = pt->nacks,
				    .durable_seq = pt->durable,
				    .run = pt->run,
				    .point = pt->id };
	int slot = recovered(w, app, pt, choice, hash), r;

	if (slot < 0)
		return slot;
	if (w->cache[slot].rerr) {
		snprintf(why, whylen, "the read-only open of the crash image failed: %s%s%s",
			 delog_strerror(w->cache[slot].rerr), w->cache[slot].rwhy[0] ? ": " : "",
			 w->cache[slot].rwhy);
		return 1;
	}
	cut.recovery = &w->cache[slot].rec;
	why[0] = 0;
	w->checks++;
	r = app->check(app->arg, app->state_new ? w->cache[slot].state : NULL, &cut, why, whylen);
	if (r && !why[0])
		snprintf(why, whylen, "CHECK returned %d", r);
	return r ? 1 : 0;
}

/* ---- the workers ---- */

static void work(struct ct_worker *w)
{
	struct ct_campaign *cp = w->cp;
	size_t i;

	while ((i = atomic_fetch_add(&cp->next_st, 1)) < cp->nst) {
		struct ct_state *s = &cp->st[i];
		int r = ct_check_one(w, cp->o.app, cp->pt, s->choice, s->hash, s->why,
				     sizeof(s->why));

		if (r < 0) {
			snprintf(s->why, sizeof(s->why), "checking a state: %s", delog_strerror(r));
			pthread_mutex_lock(&cp->mu);
			if (!cp->err)
				cp->err = r;
			pthread_mutex_unlock(&cp->mu);
		}
		s->failed = r == 1;
	}
}

static void *worker_main(void *p)
{
	struct ct_worker *w = p;
	struct ct_campaign *cp = w->cp;
	uint64_t gen = 0;

	pthread_mutex_lock(&cp->mu);
	for (;;) {
		while (!cp->quit && cp->work_gen == gen)
			pthread_cond_wait(&cp->cv_work, &cp->mu);
		if (cp->quit)
			break;
		gen = cp->work_gen;
		pthread_mutex_unlock(&cp->mu);
		work(w);
		pthread_mutex_lock(&cp->mu);
		if (--cp->busy == 0)
			pthread_cond_signal(&cp->cv_done);
	}
	pthread_mutex_unlock(&cp->mu);
	return NULL;
}

int ct_workers_start(struct ct_campaign *cp)
{
	cp->workers = calloc(cp->o.jobs, sizeof(*cp->workers));
	if (!cp->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < cp->o.jobs; i++) {
		int err = ct_worker_init(&cp->workers[i], cp, cp->o.dev_bytes, cp->o.sector);

		if (!err && i &&
		    pthread_create(&cp->workers[i].th, NULL, worker_main, &cp->workers[i]))
			err = -EAGAIN;
		if (err) {
			cp->o.jobs = i; /* those started are stopped by ct_workers_stop */
			ct_worker_fini(&cp->workers[i], cp->o.app);
			return err;
		}
	}
	return 0;
}

void ct_workers_stop(struct ct_campaign *cp)
{
	if (!cp->workers)
		return;
	pthread_mutex_lock(&cp->mu);
	cp->quit = true;
	pthread_cond_broadcast(&cp->cv_work);
	pthread_mutex_unlock(&cp->mu);
	for (unsigned i = 0; i < cp->o.jobs; i++) {
		if (i)
			pthread_join(cp->workers[i].th, NULL);
		cp->rep->images += cp->workers[i].images;
		cp->rep->checks += cp->workers[i].checks;
		ct_worker_fini(&cp->workers[i], cp->o.app);
	}
	free(cp->workers);
	cp->workers = NULL;
}

/* Check cp->st[0..nst) at cp->pt, the calling thread as worker 0, then wait for all. */
void ct_check_states(struct ct_campaign *cp)
{
	if (!cp->nst)
		return;
	atomic_store(&cp->next_st, 0);
	pthread_mutex_lock(&cp->mu);
	cp->busy = cp->o.jobs - 1;
	cp->work_gen++;
	pthread_cond_broadcast(&cp->cv_work);
	pthread_mutex_unlock(&cp->mu);
	work(&cp->workers[0]);
	pthread_mutex_lock(&cp->mu);
	while (cp->busy)
		pthread_cond_wait(&cp->cv_done, &cp->mu);
	pthread_mutex_unlock(&cp->mu);
}
