/*
 * handle.c - failure handles: a file that rebuilds one failing state's image exactly,
 * with the acknowledgements its CHECK judged (CT2), and the calls that read it.
 *
 * Layout (host byte order; a handle is read back on the machine that wrote it):
 *   "DLGCTH01", u32 version (1), u32 sector, u64 dev_bytes, u64 garbage seed, u64 run,
 *   u64 point, u64 durable, u64 nacks, nacks x (u64 tag, u64 seq, u32 thread,
 *   u32 session), u64 k, k x u64 unstable sector, k x u8 choice, k sectors of newest
 *   bytes, u64 m, m x (u64 sector, its media bytes) for every media sector not all
 *   zero, u32 n and n bytes of the reason, u64 FNV-1a of everything before it.
 * Every choice, fill and neighbour copy comes from these, so nothing is lost: a torn
 * sector's fill is regenerated from the seed exactly as the campaign made it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ct_private.h"
#include "engine_private.h" /* error_clear */

#define CT_HANDLE_VERSION 1u

struct wbuf {
	FILE *f;
	uint64_t h;
	int err;
};

static void put(struct wbuf *w, const void *p, size_t n)
{
	w->h = ct_fnv(w->h, p, n);
	if (!w->err && n && fwrite(p, 1, n, w->f) != n)
		w->err = -EIO;
}

static void put64(struct wbuf *w, uint64_t v)
{
	put(w, &v, 8);
}

static void put32(struct wbuf *w, uint32_t v)
{
	put(w, &v, 4);
}

static bool all_zero(const unsigned char *p, uint32_t n)
{
	return p[0] == 0 && !memcmp(p, p + 1, n - 1);
}

static void put_media(struct wbuf *w, const struct ct_point *pt)
{
	uint64_t m = 0, n = pt->dev_bytes / pt->sector;

	for (uint64_t s = 0; s < n; s++)
		m += !all_zero(pt->media + s * pt->sector, pt->sector);
	put64(w, m);
	for (uint64_t s = 0; s < n; s++) {
		if (all_zero(pt->media + s * pt->sector, pt->sector))
			continue;
		put64(w, s);
		put(w, pt->media + s * pt->sector, pt->sector);
	}
}

int ct_handle_write(const char *path, const struct ct_point *pt, const uint8_t *choice,
		    const char *why)
{
	struct wbuf w = { .f = fopen(path, "wb"), .h = CT_FNV_BASIS };
	uint32_t wl = (uint32_t)strlen(why);

	if (!w.f)
		return ct_say(-errno, "%s: cannot write a handle", path);
	put(&w, CT_HANDLE_MAGIC, 8);
	put32(&w, CT_HANDLE_VERSION);
	put32(&w, pt->sector);
	put64(&w, pt->dev_bytes);
	put64(&w, pt->seed);
	put64(&w, pt->run);
	put64(&w, pt->id);
	put64(&w, pt->durable);
	put64(&w, pt->nacks);
	for (size_t i = 0; i < pt->nacks; i++) {
		put64(&w, pt->acks[i].tag);
		put64(&w, pt->acks[i].seq);
		put32(&w, pt->acks[i].thread);
		put32(&w, pt->acks[i].session);
	}
	put64(&w, pt->k);
	put(&w, pt->u, pt->k * sizeof(uint64_t));
	put(&w, choice, pt->k);
	put(&w, pt->newd, pt->k * (size_t)pt->sector);
	put_media(&w, pt);
	put32(&w, wl);
	put(&w, why, wl);
	put64(&w, w.h);
	if (fclose(w.f) && !w.err)
		w.err = -EIO;
	return w.err ? ct_say(w.err, "%s: writing the handle failed", path) : 0;
}

/* ---- reading ---- */

struct rbuf {
	const unsigned char *p;
	size_t left;
	bool short_;
};

static const void *take(struct rbuf *r, size_t n)
{
	const void *p = r->p;

	if (r->short_ || n > r->left) {
		r->short_ = true;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}

static uint64_t take64(struct rbuf *r)
{
	const void *p = take(r, 8);
	uint64_t v = 0;

	if (p)
		memcpy(&v, p, 8);
	return v;
}

static uint32_t take32(struct rbuf *r)
{
	const void *p = take(r, 4);
	uint32_t v = 0;

	if (p)
		memcpy(&v, p, 4);
	return v;
}

static int load_file(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	int err = 0;

	if (!f)
		return ct_say(-errno, "%s: %s", path, delog_strerror(-errno));
	if (fstat(fileno(f), &st) || st.st_size < 16 || st.st_size > (1ll << 32)) {
		fclose(f);
		return ct_say(DELOG_ECORRUPT, "%s: not a crash-test handle (its size)", path);
	}
	*len = (size_t)st.st_size;
	*buf = malloc(*len);
	if (!*buf)
		err = -ENOMEM;
	else if (fread(*buf, 1, *len, f) != *len)
		err = ct_say(-EIO, "%s: short read", path);
	fclose(f);
	return err;
}

/* The header and the point's fields; the media after it (read_media). */
static int read_point(struct rbuf *r, struct ct_handle *h)
{
	struct ct_point *pt = &h->pt;
	const void *p;

	if (!(p = take(r, 8)) || memcmp(p, CT_HANDLE_MAGIC, 8) || take32(r) != CT_HANDLE_VERSION)
		return -1;
	pt->sector = take32(r);
	pt->dev_bytes = take64(r);
	pt->seed = take64(r);
	pt->run = take64(r);
	pt->id = take64(r);
	pt->durable = take64(r);
	pt->nacks = (size_t)take64(r);
	if ((pt->sector != 512 && pt->sector != 4096) || pt->dev_bytes % pt->sector ||
	    pt->dev_bytes > (2ull << 30) || pt->nacks > r->left / 24)
		return -1;
	pt->acks = calloc(pt->nacks + 1, sizeof(*pt->acks));
	if (!pt->acks)
		return -ENOMEM;
	for (size_t i = 0; i < pt->nacks; i++) {
		pt->acks[i].tag = take64(r);
		pt->acks[i].seq = take64(r);
		pt->acks[i].thread = take32(r);
		pt->acks[i].session = take32(r);
	}
	pt->k = (size_t)take64(r);
	if (pt->k > r->left / (9 + pt->sector))
		return -1;
	pt->u = malloc((pt->k + 1) * 8);
	h->choice = malloc(pt->k + 1);
	pt->newd = malloc((pt->k + 1) * (size_t)pt->sector);
	if (!pt->u || !h->choice || !pt->newd)
		return -ENOMEM;
	memcpy(pt->u, take(r, pt->k * 8), pt->k * 8);
	memcpy(h->choice, take(r, pt->k), pt->k);
	memcpy(pt->newd, take(r, pt->k * (size_t)pt->sector), pt->k * (size_t)pt->sector);
	for (size_t i = 0; i < pt->k; i++)
		if (h->choice[i] >= CT_NCHOICE || pt->u[i] >= pt->dev_bytes / pt->sector ||
		    (i && pt->u[i] <= pt->u[i - 1]))
			return -1;
	return 0;
}

static int read_media(struct rbuf *r, struct ct_handle *h)
{
	struct ct_point *pt = &h->pt;
	uint64_t n = pt->dev_bytes / pt->sector, m = take64(r);
	const void *why;
	uint32_t wl;

	h->media = calloc(1, pt->dev_bytes + pt->sector);
	h->h_media = malloc(n * sizeof(uint64_t));
	if (!h->media || !h->h_media)
		return -ENOMEM;
	for (uint64_t i = 0; i < m && !r->short_; i++) {
		uint64_t s = take64(r);
		const void *b = take(r, pt->sector);

		if (s >= n || !b)
			return -1;
		memcpy(h->media + s * pt->sector, b, pt->sector);
	}
	wl = take32(r);
	why = take(r, wl);
	if (!why || r->left != 8)
		return -1;
	snprintf(h->why, sizeof(h->why), "%.*s", (int)wl, (const char *)why);
	pt->h_base = 0;
	for (uint64_t s = 0; s < n; s++) {
		h->h_media[s] = ct_sector_hash(h->media + s * pt->sector, pt->sector, s);
		pt->h_base += h->h_media[s];
	}
	pt->media = h->media;
	pt->h_media = h->h_media;
	pt->media_gen = 1;
	return ct_point_hashes(pt);
}

int ct_handle_read(const char *path, struct ct_handle *h)
{
	unsigned char *buf = NULL;
	struct rbuf r;
	uint64_t sum, want;
	size_t len = 0;
	int err;

	memset(h, 0, sizeof(*h));
	err = load_file(path, &buf, &len);
	if (err) {
		free(buf);
		return err;
	}
	sum = ct_fnv(CT_FNV_BASIS, buf, len - 8);
	memcpy(&want, buf + len - 8, 8);
	r = (struct rbuf){ .p = buf, .left = len };
	err = sum != want ? -1 : read_point(&r, h);
	if (!err)
		err = r.short_ ? -1 : read_media(&r, h);
	free(buf);
	if (err == -1)
		err = ct_say(DELOG_ECORRUPT,
			     "%s: not a crash-test handle, or a damaged one "
			     "(magic, version, sizes or checksum)",
			     path);
	if (err)
		ct_handle_free(h);
	return err;
}

void ct_handle_free(struct ct_handle *h)
{
	ct_point_free(&h->pt);
	free(h->choice);
	free(h->media);
	free(h->h_media);
	memset(h, 0, sizeof(*h));
}

/* ---- the public calls ---- */

/* Read handle @path and make a recovery worker for it; the public calls' start. */
int ct_handle_load(const char *path, const struct delog_ct_app *app, struct ct_handle *h,
		   struct ct_worker *w)
{
	int err;

	error_clear();
	memset(w, 0, sizeof(*w));
	if ((err = ct_app_check(app)) || (err = ct_handle_read(path, h)))
		return err;
	err = ct_worker_init(w, NULL, h->pt.dev_bytes, h->pt.sector);
	if (err)
		ct_handle_unload(h, w, app);
	return err;
}

void ct_handle_unload(struct ct_handle *h, struct ct_worker *w, const struct delog_ct_app *app)
{
	ct_worker_fini(w, app);
	ct_handle_free(h);
}

/* The handle's state, recovered and checked once: 1 fails, 0 passes, or a code. */
int ct_handle_check(struct ct_worker *w, const struct delog_ct_app *app, struct ct_handle *h,
		    char *why, size_t whylen)
{
	return ct_check_one(w, app, &h->pt, h->choice, ct_state_hash(&h->pt, h->choice), why,
			    whylen);
}

int delog_ct_replay(const char *path, const struct delog_ct_app *app, char *why, size_t whylen)
{
	char own[512];
	struct ct_handle h;
	struct ct_worker w;
	int err = ct_handle_load(path, app, &h, &w);

	if (err)
		return err;
	err = ct_handle_check(&w, app, &h, why ? why : own, why ? whylen : sizeof(own));
	ct_handle_unload(&h, &w, app);
	return err;
}

int delog_ct_describe(const char *path, char *state, size_t statelen)
{
	struct ct_handle h;
	int err;

	error_clear();
	if ((err = ct_handle_read(path, &h)))
		return err;
	if (state && statelen)
		ct_describe(&h.pt, h.choice, state, statelen);
	ct_handle_free(&h);
	return 0;
}

/* ---- failures found by a campaign ---- */

static int record_failure(struct ct_campaign *cp, struct ct_point *pt, size_t i)
{
	struct delog_ct_report *rep = cp->rep;
	char path[4096], min[4096];
	int err;

	snprintf(path, sizeof(path), "%s/ct-%016" PRIx64 "-r%" PRIu64 "-p%" PRIu64 "-%zu.ctf",
		 cp->o.save_dir, cp->o.seed, pt->run, pt->id, i);
	err = ct_handle_write(path, pt, cp->st[i].choice, cp->st[i].why);
	if (err || rep->handle[0])
		return err;
	snprintf(rep->handle, sizeof(rep->handle), "%s", path);
	snprintf(rep->why, sizeof(rep->why), "%s", cp->st[i].why);
	ct_describe(pt, cp->st[i].choice, rep->state, sizeof(rep->state));
	if (cp->o.flags & DELOG_CT_NO_MINIMISE)
		return 0;
	snprintf(min, sizeof(min), "%.*s-min.ctf", (int)(strlen(path) - 4), path);
	err = delog_ct_minimise(path, cp->o.app, min, rep->state, sizeof(rep->state));
	if (err == 0)
		snprintf(rep->minimal, sizeof(rep->minimal), "%s", min);
	return err < 0 ? err : 0;
}

/* After a point's checks: its failures written, its passes remembered. */
int ct_point_handle_failures(struct ct_campaign *cp, struct ct_point *pt)
{
	for (size_t i = 0; i < cp->nst; i++) {
		int err;

		if (!cp->st[i].failed) {
			ct_passed_add(cp, cp->st[i].hash, pt->h_acks);
			continue;
		}
		if (cp->rep->failures++ >= cp->o.max_failures)
			continue;
		err = record_failure(cp, pt, i);
		if (err)
			return err;
	}
	if (cp->rep->failures >= cp->o.max_failures)
		atomic_store(&cp->stopping, true);
	return cp->err;
}
