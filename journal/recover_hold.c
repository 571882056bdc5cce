/*
 * recover_hold.c - the verified checkpoints recovery holds in memory between its passes,
 * so that a log smaller than the budget is read once (recover.c R9).
 *
 * With a replay callback, the first main pass verifies the whole log before anything is
 * handed over; the second used to read it again to hand the checkpoints over.  Instead
 * the first pass copies each checkpoint it would hand over (its header, its item views
 * and their bytes) into this store, and once the verdict holds the store is handed over
 * in order, reading nothing.  When the store would grow past its budget it is emptied
 * and marked over: the second pass then reads the log again, as before.  Its memory is
 * an arena of large mappings, the next one made ready by a helper thread.
 *
 *  (R16) The store holds exactly what the second pass would hand over, in its order:
 *        it is filled where the pass would call the callback (after every check of
 *        R4, and only for checkpoints a callback would see), by the pass that reaches
 *        the verdict; and it is handed over only when it holds all of them (never
 *        over), so a checkpoint comes either from memory or from the log, never both.
 */
#include "recover_rec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

uint64_t jrnl_hold_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t gib = 1ull << 30, eighth;

	if (pages <= 0 || psz <= 0)
		return gib;
	eighth = (uint64_t)pages * (uint64_t)psz / 8;
	return eighth < gib ? eighth : gib;
}

/* One held checkpoint: views into its own bytes, which follow it in the arena. */
struct rheld {
	struct rheld *next;
	struct jrnl_ckpt ck;
	size_t n;
	struct jrnl_item_view *v; /* n views, then the bytes they point into */
};

/*
 * The arena: mappings of HOLD_MAP bytes (or one checkpoint's, if larger).  A fresh page
 * costs a fault and its zeroing, half the CPU a held GiB takes, so a helper thread maps
 * and populates the next mapping while the pass fills the second half of the current
 * one: on a machine with a core to spare the pass pays only the copy.  The helper runs
 * only while the budget has room for another mapping, so what is mapped never passes
 * the budget by more than the one being prepared.
 */
#define HOLD_MAP (64ull << 20)

struct hmap {
	struct hmap *next;
	size_t size;
};

static struct hmap *map_new(size_t size, int flags)
{
	struct hmap *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	m->next = NULL;
	m->size = size;
	return m;
}

static void *helper_main(void *p)
{
	struct rhold *h = p;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct hmap *m;

		while (!h->asked && !h->stop)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop)
			break;
		pthread_mutex_unlock(&h->mu);
		m = map_new(HOLD_MAP, MAP_POPULATE);
		pthread_mutex_lock(&h->mu);
		h->ready = m;
		h->asked = false;
		pthread_cond_broadcast(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Ask the helper for the next mapping (starting it the first time); false if it cannot
 * run, and the pass maps its own. */
static void helper_ask(struct rhold *h)
{
	if (!h->helper) {
		pthread_mutex_init(&h->mu, NULL);
		pthread_cond_init(&h->cv, NULL);
		if (pthread_create(&h->th, NULL, helper_main, h)) {
			pthread_cond_destroy(&h->cv);
			pthread_mutex_destroy(&h->mu);
			return;
		}
		h->helper = true;
	}
	pthread_mutex_lock(&h->mu);
	h->asked = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* The helper's mapping, once it is done; NULL if there is none. */
static struct hmap *helper_take(struct rhold *h)
{
	struct hmap *m;

	if (!h->helper)
		return NULL;
	pthread_mutex_lock(&h->mu);
	while (h->asked)
		pthread_cond_wait(&h->cv, &h->mu);
	m = h->ready;
	h->ready = NULL;
	pthread_mutex_unlock(&h->mu);
	return m;
}

void jrnl_rcv_hold_free(struct rhold *h)
{
	struct hmap *m = helper_take(h);

	if (m)
		munmap(m, m->size);
	if (h->helper) {
		pthread_mutex_lock(&h->mu);
		h->stop = true;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->th, NULL);
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
		h->helper = false;
		h->stop = false;
	}
	while (h->maps) {
		m = h->maps;
		h->maps = m->next;
		munmap(m, m->size);
	}
	h->first = h->last = NULL;
	h->bytes = h->left = 0;
	h->at = NULL;
}

/* Give up holding: the second pass reads the log (R16). */
static void hold_over(struct rhold *h)
{
	jrnl_rcv_hold_free(h);
	h->over = true;
}

/* @size bytes (8-aligned) of the arena, or NULL when the budget or the memory ran out. */
static void *hold_alloc(struct rhold *h, size_t size)
{
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (size > h->left) {
		size_t need = size + sizeof(struct hmap);
		struct hmap *m = helper_take(h);

		if (m && (m->size < need || m->size > h->budget - h->bytes)) {
			munmap(m, m->size);
			m = NULL;
		}
		if (!m) {
			size_t want = need > HOLD_MAP ? need : HOLD_MAP;

			if (want > h->budget - h->bytes)
				want = (size_t)(h->budget - h->bytes);
			if (want < need || !(m = map_new(want, 0)))
				return NULL;
		}
		m->next = h->maps;
		h->maps = m;
		h->bytes += m->size;
		if (h->bytes > h->peak)
			h->peak = h->bytes;
		h->at = (unsigned char *)(m + 1);
		h->left = m->size - sizeof(*m);
		h->next_asked = false;
	}
	p = h->at;
	h->at += size;
	h->left -= size;
	/* Half way through a mapping, the next one is prepared, if the budget has room
	 * for it: a log held in one mapping never starts the helper. */
	if (!h->next_asked && h->left < HOLD_MAP / 2 && HOLD_MAP <= h->budget - h->bytes) {
		helper_ask(h);
		h->next_asked = true;
	}
	return p;
}

void jrnl_rcv_hold_add(struct rhold *h, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		       size_t n, const unsigned char *base, size_t len)
{
	struct rheld *c;
	unsigned char *data;

	if (h->over)
		return;
	c = hold_alloc(h, sizeof(*c) + n * sizeof(*v) + len);
	if (!c) {
		hold_over(h); /* no memory is no error: the log is read again */
		return;
	}
	c->next = NULL;
	c->ck = *ck;
	c->n = n;
	c->v = (struct jrnl_item_view *)(c + 1);
	data = (unsigned char *)(c->v + n);
	if (len)
		memcpy(data, base, len);
	for (size_t i = 0; i < n; i++) {
		c->v[i] = v[i];
		c->v[i].data = data + ((const unsigned char *)v[i].data - base);
	}
	if (h->last)
		h->last->next = c;
	else
		h->first = c;
	h->last = c;
}

int jrnl_rcv_hold_hand_over(struct rctx *r, struct rhold *h)
{
	for (struct rheld *c = h->first; c; c = c->next) {
		int err = r->replay(r->priv, &c->ck, c->v, c->n);

		if (err)
			return err;
	}
	return 0;
}
