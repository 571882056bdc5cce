/*
 * point.c - crash points and the states made at them.
 *
 * A point is taken between two deliveries (CT3).  It reads what was acknowledged first
 * (CT1), then the unstable sectors and their newest contents; the media is the
 * campaign's copy, refreshed after every delivery that moved it.  So "all old" at a
 * point is exactly what a cut then leaves if nothing in flight lands, and it holds every
 * acknowledgement the point lists only if nothing was acknowledged before it was durable.
 *
 * States.  With only old and new to choose and few unstable sectors, every subset; else
 * structured ones (all old, all new, each sector alone new, each alone old, the prefixes
 * in sector order, each sector alone torn by each fill asked for, alone and among new
 * ones), then seeded random ones, up to the point's budget.  States with an image seen at
 * this point, or an image and acknowledgements that passed before, are counted but not
 * checked again (CT4).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ct_private.h"

#define CT_EIO_MARK 0x9e3779b97f4a7c15ull /* an unreadable sector is another image */
#define CT_ALL_SUBSETS_K 6u

static const uint8_t profile_choice[] = { CT_NEW, CT_GARBAGE, CT_ZEROES, CT_ONES, CT_COPY, CT_EIO };

const char *ct_choice_name(uint8_t c)
{
	static const char *const names[CT_NCHOICE] = { "old",  "new",  "garbage",   "zeroes",
						       "0xff", "copy", "unreadable" };

	return c < CT_NCHOICE ? names[c] : "?";
}

void ct_media_load(struct ct_campaign *cp, const unsigned char *img)
{
	uint32_t sec = cp->o.sector;
	uint64_t n = cp->o.dev_bytes / sec;

	memcpy(cp->media, img, cp->o.dev_bytes);
	cp->h_base = 0;
	for (uint64_t i = 0; i < n; i++) {
		cp->h_media[i] = ct_sector_hash(img + i * sec, sec, i);
		cp->h_base += cp->h_media[i];
	}
	cp->media_gen++;
}

/* Re-read the media; only the sectors that changed are hashed again. */
int ct_media_refresh(struct ct_campaign *cp, struct iol_dev *dev)
{
	uint32_t sec = cp->o.sector;
	uint64_t n = cp->o.dev_bytes / sec;
	int err = iol_sim_media(dev, 0, cp->newimg, cp->o.dev_bytes);

	if (err)
		return err;
	for (uint64_t i = 0; i < n; i++) {
		if (!memcmp(cp->media + i * sec, cp->newimg + i * sec, sec))
			continue;
		memcpy(cp->media + i * sec, cp->newimg + i * sec, sec);
		cp->h_base -= cp->h_media[i];
		cp->h_media[i] = ct_sector_hash(cp->media + i * sec, sec, i);
		cp->h_base += cp->h_media[i];
	}
	cp->media_gen++;
	return 0;
}

/* The bytes unstable sector @i of @pt holds under choice @c (CT2). */
const unsigned char *ct_sector_bytes(const struct ct_point *pt, size_t i, uint8_t c,
				     unsigned char *scratch)
{
	uint32_t sec = pt->sector;
	uint64_t s = pt->u[i], r;

	switch (c) {
	case CT_NEW:
		return pt->newd + i * sec;
	case CT_GARBAGE:
		r = ct_seed_for(pt->seed, 0x6a7b, s);
		for (uint32_t b = 0; b < sec; b += 8) {
			uint64_t w = ct_mix(r + b);

			memcpy(scratch + b, &w, 8);
		}
		return scratch;
	case CT_ZEROES:
	case CT_ONES:
		memset(scratch, c == CT_ZEROES ? 0 : 0xff, sec);
		return scratch;
	case CT_COPY:
		return pt->media + (s ? s - 1 : s + 1) * sec;
	default: /* CT_OLD, CT_EIO */
		return pt->media + s * sec;
	}
}

void ct_state_image(const struct ct_point *pt, const uint8_t *choice, unsigned char *img)
{
	unsigned char *scratch = img + pt->dev_bytes; /* one spare sector past the image */

	memcpy(img, pt->media, pt->dev_bytes);
	for (size_t i = 0; i < pt->k; i++)
		if (choice[i] != CT_OLD && choice[i] != CT_EIO)
			memcpy(img + pt->u[i] * pt->sector,
			       ct_sector_bytes(pt, i, choice[i], scratch), pt->sector);
}

uint64_t ct_state_hash(const struct ct_point *pt, const uint8_t *choice)
{
	uint64_t h = pt->h_base;

	for (size_t i = 0; i < pt->k; i++)
		if (choice[i] != CT_OLD)
			h += pt->h_ch[i * CT_NCHOICE + choice[i]] - pt->h_media[pt->u[i]];
	return h;
}

/* Each unstable sector's hash term under every choice. */
int ct_point_hashes(struct ct_point *pt)
{
	unsigned char *scratch = malloc(pt->sector);

	pt->h_ch = malloc((pt->k + 1) * CT_NCHOICE * sizeof(uint64_t));
	if (!scratch || !pt->h_ch) {
		free(scratch);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pt->k; i++) {
		for (uint8_t c = 0; c < CT_NCHOICE; c++) {
			const unsigned char *b = ct_sector_bytes(pt, i, c, scratch);

			pt->h_ch[i * CT_NCHOICE + c] = ct_sector_hash(b, pt->sector, pt->u[i]) +
						       (c == CT_EIO ? CT_EIO_MARK : 0);
		}
	}
	free(scratch);
	return 0;
}

/* The unstable sectors and their newest bytes, consistent with one trace length. */
static int point_snapshot(struct ct_campaign *cp, struct iol_dev *dev, struct ct_point *pt)
{
	size_t cap = 256;

	for (int tries = 0; tries < 256; tries++) {
		size_t L0 = iol_sim_trace_len(dev), k;
		uint8_t *ones;
		int err;

		free(pt->u);
		pt->u = malloc(cap * sizeof(uint64_t));
		if (!pt->u)
			return -ENOMEM;
		k = iol_sim_unstable(dev, pt->u, cap);
		if (k > cap) {
			cap = k * 2;
			continue;
		}
		ones = malloc(k + 1);
		if (!ones)
			return -ENOMEM;
		memset(ones, CT_NEW, k);
		err = k ? iol_sim_crash_choose(dev, ones, k, 0, cp->newimg) : 0;
		free(ones);
		if (err == -EINVAL || iol_sim_trace_len(dev) != L0)
			continue; /* a submission changed the unstable set: again */
		if (err)
			return err;
		pt->k = k;
		return 0;
	}
	return -EAGAIN;
}

int ct_point_take(struct ct_campaign *cp, struct delog_ct_run *run, struct ct_point *pt)
{
	uint32_t sec = cp->o.sector;
	int err;

	memset(pt, 0, sizeof(*pt));
	pt->run = run->run;
	pt->seed = ct_seed_for(run->seed, 0x9a4b, run->session);
	pt->sector = sec;
	pt->dev_bytes = cp->o.dev_bytes;
	pthread_mutex_lock(&run->ack_mu); /* CT1: before the snapshot */
	pt->nacks = run->nacks;
	pt->acks = malloc((pt->nacks + 1) * sizeof(*pt->acks));
	if (pt->acks && pt->nacks)
		memcpy(pt->acks, run->acks, pt->nacks * sizeof(*pt->acks));
	pthread_mutex_unlock(&run->ack_mu);
	if (!pt->acks)
		return -ENOMEM;
	pt->h_acks = ct_mix(pt->nacks);
	for (size_t i = 0; i < pt->nacks; i++)
		pt->h_acks = ct_mix(pt->h_acks ^ pt->acks[i].tag) + pt->acks[i].seq;
	err = point_snapshot(cp, run->dev, pt);
	if (err)
		return err;
	pt->newd = malloc((pt->k + 1) * (size_t)sec);
	if (!pt->newd)
		return -ENOMEM;
	for (size_t i = 0; i < pt->k; i++)
		memcpy(pt->newd + i * sec, cp->newimg + pt->u[i] * sec, sec);
	pt->media = cp->media;
	pt->h_media = cp->h_media;
	pt->h_base = cp->h_base;
	pt->media_gen = cp->media_gen;
	cp->rep->points++;
	cp->rep->unstable_max = pt->k > cp->rep->unstable_max ? pt->k : cp->rep->unstable_max;
	cp->rep->unstable_hist[pt->k ? (pt->k >= 64 ? 7 : 64 - __builtin_clzll(pt->k)) : 0]++;
	return ct_point_hashes(pt);
}

void ct_point_free(struct ct_point *pt)
{
	free(pt->acks);
	free(pt->u);
	free(pt->newd);
	free(pt->h_ch);
	memset(pt, 0, sizeof(*pt));
}

/* ---- the states ---- */

/* The set of (image, acknowledgements) pairs that passed: a repeat needs no check. */
static uint64_t pass_key(uint64_t hash, uint64_t h_acks)
{
	return ct_mix(hash ^ ct_mix(h_acks)) | 1;
}

static bool passed_has(const struct ct_campaign *cp, uint64_t key)
{
	for (size_t i = key & (cp->passed_cap - 1);; i = (i + 1) & (cp->passed_cap - 1)) {
		if (cp->passed[i] == key)
			return true;
		if (!cp->passed[i])
			return false;
	}
}

void ct_passed_add(struct ct_campaign *cp, uint64_t hash, uint64_t h_acks)
{
	uint64_t key = pass_key(hash, h_acks);
	size_t i;

	if (cp->passed_n * 2 >= cp->passed_cap) /* full enough: forget, keep it fast */
	{
		memset(cp->passed, 0, cp->passed_cap * sizeof(uint64_t));
		cp->passed_n = 0;
	}
	for (i = key & (cp->passed_cap - 1); cp->passed[i] && cp->passed[i] != key;
	     i = (i + 1) & (cp->passed_cap - 1))
		;
	if (!cp->passed[i]) {
		cp->passed[i] = key;
		cp->passed_n++;
	}
}

/* The state generator: writes the idx-th state's choices; false past its end. */
struct gen {
	const struct ct_point *pt;
	uint8_t torn[CT_NCHOICE]; /* the fills asked for, besides new */
	unsigned ntorn;
	bool all_subsets;
	uint64_t rnd;
	uint64_t nstruct; /* structured states: all old, all new, 3 per sector, torn ones */
	uint64_t budget;
};

static bool structured(const struct gen *g, uint64_t idx, uint8_t *ch)
{
	size_t k = g->pt->k;

	if (idx < 2) { /* all old, all new */
		memset(ch, idx ? CT_NEW : CT_OLD, k);
		return true;
	}
	idx -= 2;
	if (idx < 3 * (uint64_t)k) { /* alone new, alone old, prefix */
		size_t i = idx % k;
		unsigned kind = (unsigned)(idx / k);

		for (size_t j = 0; j < k; j++)
			ch[j] = kind == 0 ? (j == i ? CT_NEW : CT_OLD) :
				kind == 1 ? (j == i ? CT_OLD : CT_NEW) :
					    (j <= i ? CT_NEW : CT_OLD);
		return true;
	}
	idx -= 3 * (uint64_t)k;
	if (idx < 2 * (uint64_t)k * g->ntorn) { /* alone torn, among old or among new */
		size_t i = idx % k;
		uint8_t c = g->torn[(idx / k) % g->ntorn];
		bool among_new = idx / k / g->ntorn;

		memset(ch, among_new ? CT_NEW : CT_OLD, k);
		ch[i] = c;
		return true;
	}
	return false;
}

static void random_state(struct gen *g, uint8_t *ch)
{
	for (size_t i = 0; i < g->pt->k; i++) {
		uint64_t r = ct_mix(++g->rnd);

		ch[i] = (r & 1) ? CT_NEW : CT_OLD;
		if (g->ntorn && (r >> 8) % 8 == 0)
			ch[i] = g->torn[(r >> 16) % g->ntorn];
	}
}

static void gen_init(struct gen *g, const struct ct_campaign *cp, const struct ct_point *pt,
		     uint64_t budget)
{
	memset(g, 0, sizeof(*g));
	g->pt = pt;
	for (unsigned p = 1; p < sizeof(profile_choice); p++)
		if (cp->o.profiles & (1u << p))
			g->torn[g->ntorn++] = profile_choice[p];
	g->all_subsets = !g->ntorn && pt->k <= CT_ALL_SUBSETS_K;
	g->rnd = ct_seed_for(pt->seed, 0x57a7e, pt->id);
	g->nstruct = 2 + 3 * (uint64_t)pt->k + 2 * (uint64_t)pt->k * g->ntorn;
	g->budget = budget;
}

static bool gen_next(struct gen *g, uint64_t idx, uint8_t *ch)
{
	if (!g->pt->k)
		return idx == 0 ? true : false;
	if (g->all_subsets) {
		if (idx >> g->pt->k)
			return false;
		for (size_t i = 0; i < g->pt->k; i++)
			ch[i] = (idx >> i) & 1 ? CT_NEW : CT_OLD;
		return true;
	}
	/* A budget below the structured states: all old and all new, then structured
	 * ones drawn at random, alternating with random states, so a small budget still
	 * reaches every kind. */
	if (g->budget < g->nstruct && idx >= 2)
		idx = (idx & 1) ? 2 + ct_mix(++g->rnd) % (g->nstruct - 2) : g->nstruct;
	if (!structured(g, idx, ch))
		random_state(g, ch);
	return true;
}

static int states_room(struct ct_campaign *cp, size_t n, size_t k)
{
	if (n > cp->st_cap) {
		struct ct_state *v = realloc(cp->st, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		cp->st = v;
		cp->st_cap = n;
	}
	if (n * (k + 1) > cp->choices_cap) {
		uint8_t *v = realloc(cp->choices, n * (k + 1));

		if (!v)
			return -ENOMEM;
		cp->choices = v;
		cp->choices_cap = n * (k + 1);
	}
	return 0;
}

static void count_state(struct ct_campaign *cp, const uint8_t *ch, size_t k)
{
	bool seen[CT_NCHOICE] = { false };

	cp->rep->states++;
	for (size_t i = 0; i < k; i++)
		seen[ch[i]] = true;
	for (uint8_t c = CT_NEW; c < CT_NCHOICE; c++)
		cp->rep->by_profile[c - 1] += seen[c];
}

/* Make up to @budget states of @pt into cp->st, the ones to check. */
int ct_point_states(struct ct_campaign *cp, struct ct_point *pt, uint64_t budget)
{
	size_t k = pt->k, made = 0;
	struct gen g;
	int err;

	gen_init(&g, cp, pt, budget);
	err = states_room(cp, budget ? budget : 1, k);
	cp->nst = 0;
	for (uint64_t idx = 0; !err && made < budget; idx++) {
		struct ct_state *s = &cp->st[cp->nst];
		bool dup = false;

		s->choice = cp->choices + cp->nst * (k + 1);
		if (!gen_next(&g, idx, s->choice) || idx > 64 * (uint64_t)budget)
			break;
		made++;
		count_state(cp, s->choice, k);
		s->hash = ct_state_hash(pt, s->choice);
		for (size_t j = 0; j < cp->nst && !dup; j++)
			dup = cp->st[j].hash == s->hash;
		if (dup || passed_has(cp, pass_key(s->hash, pt->h_acks)))
			continue;
		s->failed = 0;
		s->why[0] = 0;
		cp->nst++;
	}
	return err;
}

/* The state in words: the sectors other than old, and their old unstable neighbours. */
void ct_describe(const struct ct_point *pt, const uint8_t *choice, char *out, size_t len)
{
	size_t n = 0, notold = 0;

	out[0] = 0;
	for (size_t i = 0; i < pt->k && n < len; i++) {
		if (choice[i] == CT_OLD)
			continue;
		notold++;
		n += (size_t)snprintf(out + n, len - n, "%ssector %" PRIu64 " %s", n ? ", " : "",
				      pt->u[i], ct_choice_name(choice[i]));
		for (int d = -1; d <= 1 && n < len; d += 2) {
			size_t j = iol_sim_unstable_index(pt->u, pt->k, pt->u[i] + (uint64_t)d);

			if (j != SIZE_MAX && choice[j] == CT_OLD)
				n += (size_t)snprintf(out + n, len - n, ", %" PRIu64 " old",
						      pt->u[j]);
		}
	}
	if (n < len)
		snprintf(out + n, len - n,
			 "%s%zu of %zu unstable sectors not old (device sectors "
			 "of %u bytes)",
			 n ? ": " : "", notold, pt->k, pt->sector);
}
