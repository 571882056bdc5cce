/*
 * sim.c - the simulated disk (backend "sim"): an in-memory device with a volatile write
 * cache, completions in any order, fault plans and power cuts (io_sim.h; docs/DESIGN.md
 * section 2).
 *
 * Model.  The disk is an array of sectors (512 or 4096 bytes; the sector is also the
 * atomic unit of a power cut).
 *   media    dev_bytes of durable contents (one flat array).
 *   cache    completed writes not yet durable: a hash map sector -> slot.  A slot points
 *            at the sector's newest completed version (struct sim_ver, refcounted) and
 *            remembers which version media holds (durable_seq), and keeps the older
 *            completed versions that are newer than the media copy (its history, for the
 *            versions profile: a drive may have written any of them back before the power
 *            failed).  Reads return media overlaid with the cache.
 *   flight   every submitted, not yet completed request (struct sim_op), in a list in
 *            submission order.  A write's data stays in the caller's iovecs until it
 *            completes; it is invisible to reads until then.
 *   capture  what a flush covers: taken when the flush is submitted, one reference to
 *            every cache slot's version at that moment.  When the flush completes, each
 *            captured version newer than the media copy is written to media; a slot whose
 *            newest version was just made durable leaves the cache, a slot rewritten
 *            since keeps its newer version (still volatile).
 *   FUA      a FUA write's data goes to media (and out of the cache) when it completes.
 *            So does every write on a write_through disk (iol_sim_opts): it has no
 *            cache, its flushes capture nothing, and it keeps no event trace.
 *   PREFLUSH a write with IOL_PREFLUSH captures its flush at submit and is issued (its
 *            latency starts) only once that flush has completed; if the flush fails the
 *            write completes with the flush's error and is not performed.
 *
 * Invariants (all under sim->lock):
 *   (SIM1) A sector's media copy changes only at a flush completion (to a version that
 *        completed before that flush was submitted) or at a FUA write's completion
 *        (any write's, write_through).
 *   (SIM2) A sector has a cache slot iff its newest completed version is not durable.
 *        Versions carry increasing sequence numbers (one per completed write), and media
 *        never goes back to an older version: a late flush whose captured version is
 *        older than the media copy (slot->durable_seq, or no slot at all: then media has
 *        the newest version) skips that sector.
 *   (SIM3) Reads, writes and flushes change the disk only at delivery (completion), never at
 *        submit, except that a flush's capture is fixed at submit.
 *   (SIM4) iol_req_done() is called without sim->lock held, exactly once per request, after
 *        the request has left the flight list; callbacks may submit again.
 *   (SIM5) With inline_run the device has a ->run (sim_run): the request enters the
 *        flight list as any other (a power cut sees it in flight, the latency model and
 *        the fault plan apply, and with hold it waits for iol_sim_deliver), but its
 *        delivery hands the result to the waiting caller, which reports it on its own
 *        thread: so a lone iol_submit_wait runs the flush gate's inline generation
 *        (flush.c FG4) there, and the flushers' generations are blocking flushes (FG5),
 *        as on the descriptor backends.  Nothing else changes: the state change is the
 *        delivery's (SIM3).  On a disk neither held nor with a latency model, a ->run
 *        request that finds nothing else in flight is delivered by its caller at once,
 *        under the lock it submitted with: the sim thread would deliver it next, as the
 *        only request due, so this is one of the thread's schedules without two hand-offs.
 *   (SIM6) Close (iolayer/submit.c IO5): once iol_dev_close began (->quiesce), a held disk
 *        delivers what is in flight and, from then on, what is submitted (the flush
 *        gate's flushes for FUA writes completed during close, PREFLUSH riders' writes)
 *        at once, FIFO, on the submitting thread: no one else will deliver it.
 *   (SIM7) With flush_fail_drops a failed flush loses what it covered: each captured
 *        version not yet durable (and every older one of its sector) leaves the cache
 *        and is marked lost, so no other flush's capture makes it durable later; a
 *        sector rewritten after the capture keeps its newer versions.  Without it, a
 *        failed flush changes nothing (its capture is dropped, the cache stays).
 *
 * Delivery.  Without hold, one sim thread per device delivers completions: each request
 * has a due time from the latency model (none: at once; nvme/sata: a per-command
 * transfer slot on one shared channel, bytes / bandwidth, plus a jittered per-request
 * latency that overlaps between requests; a flush costs a jittered fixed time plus its
 * captured bytes / flush bandwidth).  Among the due requests the one with the smallest
 * random key (drawn at submit) goes first, so due requests complete in a seeded random
 * order; with in_order, strictly in submission order (a request waits for every earlier
 * one).  The thread sleeps on CLOCK_MONOTONIC until the next due time (timer slack set to
 * 1 ns; it wakes early by its learnt wake-up overshoot and yields in a loop for the rest,
 * at most SIM_OVERSLEEP_MAX), so benchmarks take the simulated time.  With hold, there is
 * no sim thread: iol_sim_deliver() delivers on the caller's thread, and a PREFLUSH write
 * then completes its flush and its write in one step (no crash state is lost: a power
 * cut before that step may leave any subset of both).  iol_sim_deliver() may also be
 * called without hold, to force completions early.  Close delivers what is left in FIFO
 * order (hold) or waits for the sim thread to deliver it.
 *
 * Power cuts (iol_sim_crash*) read a consistent snapshot under the lock and do not disturb
 * the disk.  The unstable sectors are every cache slot (including ones a flush in flight
 * has captured) and every sector of every write in flight.  "old" is media; "new" is the
 * newest version that could have reached the media: the last-submitted *issued* write in
 * flight covering the sector, else the cache slot, else media.  The versions of a sector
 * (iol_sim_unstable_versions) are, in this order: 0 media, then the slot's history (oldest
 * first), the slot's newest version, and the data of each issued write in flight covering
 * it (submission order); the last is "new".  Under the versions profile a sector ends at
 * any one of them: a write that was overwritten in the cache before the power failed
 * may still be what the drive had written back.  The history is dropped as soon as a
 * flush makes a version at least as new durable (SIM2), so it only holds versions written
 * since the sector was last stable.  A PREFLUSH write whose
 * flush has not completed is listed but contributes no data: it cannot have reached the
 * device before its flush, and letting it would produce images no real disk can (a
 * commit record without the data its preflush protects).  "garbage" is bytes drawn from
 * (seed, sector), so iol_sim_crash() and iol_sim_crash_choose() agree for the same seed.
 *
 * Determinism: order keys, latency jitter and fault decisions are drawn at submit (in
 * submission order), bit flips from (seed, request id), crash choices from the caller's
 * seed, iol_sim_deliver(IOL_SIM_RANDOM) from its own stream.  So with hold, the same seed
 * and the same submission and delivery sequence give the same completions, trace
 * (except t_ns) and crash images.  Without hold, which requests are due together depends
 * on real time; the order among them is still seeded.
 *
 * Faults: each plan entry counts submissions of its op from when it was armed; a
 * PREFLUSH write counts as one FLUSH (its flush) and one WRITE.  The decision is taken at
 * submit, the effect at delivery.  A once-only entry is dropped when it fires.
 *
 * Geometry: logical = physical block = dio_mem_align = dio_off_align = the sector (buffer
 * alignment is as strict as the sector, so misaligned buffers show up on sim too).
 *
 * Trace: SUBMIT, FLUSH_ISSUE (len = bytes captured), FLUSH_DONE (only when the flush
 * succeeded), COMPLETE (status as the core will report it: a short read is -EIO).
 * t_ns is CLOCK_MONOTONIC time since the device was opened.
 *
 * Not modelled: queue-depth limits (submit never blocks; the channel serialises
 * transfers), per-LBA latent sector errors, misdirected or lost writes, torn sectors
 * (a sector is one version or garbage, never half of two), and write-back of the sim
 * disk to the file it was loaded from.
 */
#include "io_private.h"
#include "io_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SIM_DEFAULT_BYTES (64ull << 20)
#define SIM_DEFAULT_SECTOR 4096u
#define SIM_MAX_FAULTS 16
#define SIM_TAB_MIN 64
#define SIM_OVERSLEEP_MAX 200000ull /* spin at most this long per wait */

/* ---- small helpers: PRNG, hashing ---- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* splitmix64: the state advances by the golden gamma, the output is mixed. */
static uint64_t rng_next(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

static uint64_t seed_of(uint64_t seed, uint64_t stream)
{
	return mix64(seed ^ mix64(stream + 0x51a7e5eedull));
}

/* Streams derived from one seed, so they never correlate. */
enum {
	SEED_SUBMIT = 1,
	SEED_DELIVER,
	SEED_BITFLIP,
	SEED_CRASH,
	SEED_GARBAGE
};

/* ---- state ---- */

/* One completed version of one sector. */
struct sim_ver {
	uint64_t seq;  /* write sequence number; increasing */
	uint32_t refs; /* the slot's + captures' */
	bool lost;     /* dropped by a failed flush (flush_fail_drops): never made durable */
	unsigned char data[];
};

/* A cache slot; empty when cur == NULL. */
struct sim_slot {
	uint64_t sector;
	uint64_t durable_seq;  /* version held by media; captured versions <= it are stale */
	struct sim_ver *cur;   /* newest completed version, not durable (SIM2) */
	struct sim_ver **hist; /* older completed versions newer than media, oldest first */
	uint32_t nhist, hcap;
};

struct sim_cap_ent {
	uint64_t sector;
	struct sim_ver *ver;
};

/* What a flush covers (fixed at its submit). */
struct sim_capture {
	size_t nr;
	struct sim_cap_ent ent[];
};

/* A request performed through ->run (inline_run): its caller waits for the delivery,
 * which hands the result over instead of completing the request (SIM5). */
struct sim_run {
	bool done;
	bool here; /* its caller delivers it (SIM5: nothing else in flight, no latency) */
	int err;
	size_t bytes;
};

/* A request in flight. */
struct sim_op {
	struct sim_op *prev, *next; /* flight list, submission order */
	struct iol_req *req;
	uint64_t id;             /* request number, from 1 */
	uint64_t key;            /* random rank among due requests */
	uint64_t due;            /* ns since open when the current phase completes */
	uint64_t off, len;       /* bytes */
	uint64_t first, nr;      /* sectors of a read or write */
	uint64_t lat_ns;         /* jittered latency of the read/write phase */
	uint64_t flat_ns;        /* jittered latency of the flush phase */
	struct sim_capture *cap; /* flush capture (NULL: nothing was dirty) */
	uint64_t cap_bytes;
	uint32_t opf;
	enum iol_op op;
	bool fua;
	bool flushing;       /* its flush (standalone or PREFLUSH) has not completed */
	int flush_err;       /* planned error of the flush phase */
	int err;             /* planned error of the read/write */
	int fault;           /* -1, or enum iol_sim_fault_kind of a planned fault */
	struct sim_run *run; /* ->run's waiter, or NULL */
};

struct sim_lat {
	uint64_t cmd_ns;    /* channel time per command */
	uint64_t base_ns;   /* per-request latency, overlapped between requests */
	uint64_t bps;       /* transfer bandwidth, bytes per second */
	uint64_t flush_ns;  /* fixed cost of a flush */
	uint64_t flush_bps; /* write-back bandwidth of the captured bytes */
};

static const struct sim_lat sim_lat_tab[] = {
	[IOL_SIM_LAT_NONE] = { 0 },
	[IOL_SIM_LAT_NVME] = { .cmd_ns = 1000,
			       .base_ns = 10000,
			       .bps = 3000000000ull,
			       .flush_ns = 20000,
			       .flush_bps = 2000000000ull },
	[IOL_SIM_LAT_SATA] = { .cmd_ns = 10000,
			       .base_ns = 60000,
			       .bps = 500000000ull,
			       .flush_ns = 1700000,
			       .flush_bps = 400000000ull },
};

struct sim_fault {
	struct iol_sim_fault f;
	uint64_t base; /* ops of f.op submitted before it was armed */
};

struct sim {
	pthread_mutex_t lock;
	pthread_cond_t work; /* CLOCK_MONOTONIC: submission, or stop */
	pthread_cond_t idle; /* flight list empty and no callback running */
	pthread_cond_t ran;  /* a ->run request was delivered (SIM5) */
	bool closing;        /* iol_dev_close began: hold mode delivers on its own (SIM6) */
	pthread_t thread;
	bool has_thread;
	bool stop; /* Locked */

	/* Configuration (immutable after open). */
	uint64_t bytes, nsectors;
	uint32_t sector;
	unsigned shift;
	uint64_t seed;
	enum iol_sim_latency latency;
	bool hold, in_order;
	bool fail_drops; /* a failed flush drops what it covered (iol_sim_opts) */
	void (*gate)(void *arg, uint32_t opf, uint64_t off, uint32_t len); /* submit_gate */
	void *gate_arg;
	uint64_t t0; /* iol_now_ns() at open */

	/* Everything below: Locked. */
	unsigned char *media;
	struct sim_slot *tab; /* open addressing, linear probing */
	size_t tab_cap, tab_nr;
	uint64_t wseq; /* last version sequence number */

	struct sim_op *head, *tail;
	size_t nr_ops;
	unsigned busy; /* callbacks running */
	uint64_t next_id;
	uint64_t rng;       /* drawn at submit only */
	uint64_t drng;      /* iol_sim_deliver(IOL_SIM_RANDOM) */
	uint64_t chan_busy; /* transfer channel busy until (ns since open) */
	uint64_t oversleep; /* sim thread: learnt timed-wait overshoot, ns */

	struct iol_sim_event *ev;
	size_t ev_len, ev_cap;
	uint64_t ev_seq;
	bool trace_on;
	bool write_through; /* no cache: every write goes to the media (iol_sim_opts) */

	struct sim_fault faults[SIM_MAX_FAULTS];
	unsigned nr_faults;
	uint8_t *bad;        /* a bit per sector: reads fail -EIO until it is written */
	uint64_t nr_bad;     /* bits set */
	uint64_t opcount[3]; /* submissions per op; PREFLUSH counts a FLUSH too */
};

/* The sim state of @dev, or NULL if @dev is not a sim device.  An identity test on
 * purpose: the iol_sim_* calls take any device, and only a device opened with this
 * backend has a struct sim behind dev->be, so "is this my device?" is the question. */
static struct sim *sim_of(struct iol_dev *dev)
{
	return dev && dev->ops == &iol_sim_ops ? dev->be : NULL;
}

static uint64_t sim_now(const struct sim *s)
{
	return iol_now_ns() - s->t0;
}

/* ---- cache: hash map sector -> slot ---- */

static size_t slot_home(const struct sim *s, uint64_t sector)
{
	return (size_t)(mix64(sector) & (s->tab_cap - 1));
}

static struct sim_slot *slot_find(struct sim *s, uint64_t sector)
{
	size_t i;

	if (!s->tab_nr)
		return NULL;
	for (i = slot_home(s, sector); s->tab[i].cur; i = (i + 1) & (s->tab_cap - 1))
		if (s->tab[i].sector == sector)
			return &s->tab[i];
	return NULL;
}

static int tab_resize(struct sim *s, size_t cap)
{
	struct sim_slot *old = s->tab;
	size_t old_cap = s->tab_cap;
	struct sim_slot *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	s->tab = tab;
	s->tab_cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].cur)
			continue;
		for (j = slot_home(s, old[i].sector); tab[j].cur; j = (j + 1) & (cap - 1))
			;
		tab[j] = old[i];
	}
	free(old);
	return 0;
}

/* Make room for @more insertions at load <= 3/4. */
static int tab_reserve(struct sim *s, size_t more)
{
	size_t need = s->tab_nr + more, cap = s->tab_cap ? s->tab_cap : SIM_TAB_MIN;

	while (need > cap / 4 * 3)
		cap *= 2;
	return cap == s->tab_cap ? 0 : tab_resize(s, cap);
}

/* Give memory back after a big flush; failure to shrink is harmless. */
static void tab_shrink(struct sim *s)
{
	size_t cap = s->tab_cap;

	if (cap <= SIM_TAB_MIN || s->tab_nr * 8 >= cap)
		return;
	while (cap > SIM_TAB_MIN && s->tab_nr * 4 < cap / 2)
		cap /= 2;
	(void)tab_resize(s, cap);
}

/* Insert @sector (not present; room reserved) with version @v. */
static void slot_insert(struct sim *s, uint64_t sector, struct sim_ver *v)
{
	size_t i;

	for (i = slot_home(s, sector); s->tab[i].cur; i = (i + 1) & (s->tab_cap - 1))
		;
	s->tab[i].sector = sector;
	s->tab[i].cur = v;
	s->tab[i].hist = NULL;
	s->tab[i].nhist = s->tab[i].hcap = 0;
	/* Media holds the newest version older than v (SIM2): any capture still pending
	 * for this sector holds a version <= that, so it must not reach media. */
	s->tab[i].durable_seq = v->seq - 1;
	s->tab_nr++;
}

static void ver_put(struct sim_ver *v)
{
	if (--v->refs == 0)
		free(v);
}

/* Drop the history versions media has caught up with (seq <= durable_seq). */
static void hist_trim(struct sim_slot *sl)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < sl->nhist; i++) {
		if (sl->hist[i]->seq <= sl->durable_seq)
			ver_put(sl->hist[i]);
		else
			sl->hist[n++] = sl->hist[i];
	}
	sl->nhist = n;
}

/* Drop the history versions up to @seq, lost with a failed flush (SIM7). */
static void hist_lose(struct sim_slot *sl, uint64_t seq)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < sl->nhist; i++) {
		if (sl->hist[i]->seq <= seq) {
			sl->hist[i]->lost = true;
			ver_put(sl->hist[i]);
		} else {
			sl->hist[n++] = sl->hist[i];
		}
	}
	sl->nhist = n;
}

static void hist_free(struct sim_slot *sl)
{
	for (uint32_t i = 0; i < sl->nhist; i++)
		ver_put(sl->hist[i]);
	free(sl->hist);
	sl->hist = NULL;
	sl->nhist = sl->hcap = 0;
}

/* Remove @sl (backward-shift deletion keeps probe chains intact). */
static void slot_delete(struct sim *s, struct sim_slot *sl)
{
	size_t mask = s->tab_cap - 1, i = (size_t)(sl - s->tab), j = i;

	ver_put(sl->cur);
	hist_free(sl);
	for (;;) {
		size_t k;

		j = (j + 1) & mask;
		if (!s->tab[j].cur)
			break;
		k = slot_home(s, s->tab[j].sector);
		/* Entry j may move to the hole at i unless its home lies in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		s->tab[i] = s->tab[j];
		i = j;
	}
	s->tab[i].cur = NULL;
	s->tab_nr--;
}

/* ---- request data ---- */

/* Walks a request's iovecs a sector at a time (core validation makes every segment a
 * multiple of the sector). */
struct vec_it {
	const struct iovec *v;
	size_t off;
};

static unsigned char *it_next(struct vec_it *it, uint32_t sector)
{
	unsigned char *p = (unsigned char *)it->v->iov_base + it->off;

	it->off += sector;
	if (it->off == it->v->iov_len) {
		it->v++;
		it->off = 0;
	}
	return p;
}

static const unsigned char *sector_now(struct sim *s, uint64_t sector)
{
	struct sim_slot *sl = slot_find(s, sector);

	return sl ? sl->cur->data : s->media + sector * s->sector;
}

/* Does [first, first + n) hold a sector that cannot be read (iol_sim_set_unreadable)? */
static bool range_bad(const struct sim *s, uint64_t first, uint64_t n)
{
	for (uint64_t i = 0; s->nr_bad && i < n; i++)
		if (s->bad[(first + i) / 8] & (1u << ((first + i) % 8)))
			return true;
	return false;
}

static void range_set_bad(struct sim *s, uint64_t first, uint64_t n, bool bad)
{
	for (uint64_t i = 0; s->bad && i < n; i++) {
		uint8_t *b = &s->bad[(first + i) / 8], m = (uint8_t)(1u << ((first + i) % 8));

		if (bad && !(*b & m)) {
			*b |= m;
			s->nr_bad++;
		} else if (!bad && (*b & m)) {
			*b &= (uint8_t)~m;
			s->nr_bad--;
		}
	}
}

/* Copy the first @bytes of the read's range (media overlaid with cache) into its buffers. */
static void read_copy(struct sim *s, struct sim_op *op, uint64_t bytes)
{
	struct vec_it it = { op->req->vec, 0 };

	for (uint64_t i = 0; bytes; i++) {
		uint64_t n = bytes < s->sector ? bytes : s->sector;

		memcpy(it_next(&it, s->sector), sector_now(s, op->first + i), n);
		bytes -= n;
	}
}

static void read_bitflip(struct sim *s, struct sim_op *op)
{
	uint64_t st = seed_of(s->seed, SEED_BITFLIP) ^ mix64(op->id);
	uint64_t bit = rng_next(&st) % (op->len * 8), byte = bit / 8;
	const struct iovec *v = op->req->vec;

	while (byte >= v->iov_len) {
		byte -= v->iov_len;
		v++;
	}
	((unsigned char *)v->iov_base)[byte] ^= (unsigned char)(1u << (bit % 8));
}

/* A completed write enters the cache; all or nothing (-ENOMEM changes nothing). */
static int write_cache(struct sim *s, struct sim_op *op)
{
	struct sim_ver *stackv[16], **vers = stackv;
	struct vec_it it = { op->req->vec, 0 };
	uint64_t seq = ++s->wseq;
	int err = -ENOMEM;
	uint64_t i;

	if (op->nr > 16 && !(vers = malloc(op->nr * sizeof(*vers))))
		return -ENOMEM;
	for (i = 0; i < op->nr; i++) {
		vers[i] = malloc(sizeof(struct sim_ver) + s->sector);
		if (!vers[i])
			goto fail;
		vers[i]->seq = seq;
		vers[i]->refs = 1;
		vers[i]->lost = false;
		memcpy(vers[i]->data, it_next(&it, s->sector), s->sector);
	}
	if (tab_reserve(s, op->nr))
		goto fail;
	/* Room in the history of every rewritten slot first, so nothing changes on -ENOMEM. */
	for (uint64_t j = 0; j < op->nr; j++) {
		struct sim_slot *sl = slot_find(s, op->first + j);

		if (sl && sl->nhist == sl->hcap) {
			uint32_t cap = sl->hcap ? 2 * sl->hcap : 4;
			struct sim_ver **h = realloc(sl->hist, cap * sizeof(*h));

			if (!h)
				goto fail;
			sl->hist = h;
			sl->hcap = cap;
		}
	}
	for (i = 0; i < op->nr; i++) {
		struct sim_slot *sl = slot_find(s, op->first + i);

		if (sl) {
			/* The overwritten version stays a candidate for a power cut until a
			 * flush makes something at least as new durable. */
			sl->hist[sl->nhist++] = sl->cur;
			sl->cur = vers[i];
		} else {
			slot_insert(s, op->first + i, vers[i]);
		}
	}
	if (vers != stackv)
		free(vers);
	return 0;
fail:
	while (i--)
		free(vers[i]);
	if (vers != stackv)
		free(vers);
	return err;
}

/* A completed FUA write goes to media; the cache no longer holds anything newer (SIM1). */
static void write_media(struct sim *s, struct sim_op *op)
{
	struct vec_it it = { op->req->vec, 0 };

	for (uint64_t i = 0; i < op->nr; i++) {
		struct sim_slot *sl = slot_find(s, op->first + i);

		memcpy(s->media + (op->first + i) * s->sector, it_next(&it, s->sector), s->sector);
		if (sl)
			slot_delete(s, sl);
	}
}

/* ---- flushes ---- */

/* Capture the cache for a flush being submitted.  -ENOMEM: the flush will fail. */
static int capture_take(struct sim *s, struct sim_op *op)
{
	struct sim_capture *cap;
	size_t n = 0;

	op->cap = NULL;
	op->cap_bytes = 0;
	if (!s->tab_nr)
		return 0;
	cap = malloc(sizeof(*cap) + s->tab_nr * sizeof(cap->ent[0]));
	if (!cap)
		return -ENOMEM;
	for (size_t i = 0; i < s->tab_cap; i++) {
		struct sim_slot *sl = &s->tab[i];

		if (!sl->cur)
			continue;
		sl->cur->refs++;
		cap->ent[n].sector = sl->sector;
		cap->ent[n].ver = sl->cur;
		n++;
	}
	cap->nr = n;
	op->cap = cap;
	op->cap_bytes = (uint64_t)n * s->sector;
	return 0;
}

static void capture_drop(struct sim_op *op)
{
	if (!op->cap)
		return;
	for (size_t i = 0; i < op->cap->nr; i++)
		ver_put(op->cap->ent[i].ver);
	free(op->cap);
	op->cap = NULL;
}

/*
 * The flush failed on a flush_fail_drops disk: what it covered is lost (SIM7).  Each
 * captured version not yet durable leaves the cache with every older one of its sector:
 * the sector reads as media again if nothing newer completed since, else keeps only the
 * newer versions.  A lost version is marked so that no other flush's capture of it can
 * make it durable later.
 */
static void capture_lose(struct sim *s, struct sim_op *op)
{
	if (!op->cap)
		return;
	for (size_t i = 0; i < op->cap->nr; i++) {
		struct sim_cap_ent *e = &op->cap->ent[i];
		struct sim_slot *sl = slot_find(s, e->sector);

		if (!sl || e->ver->seq <= sl->durable_seq)
			continue; /* already durable, or already gone */
		e->ver->lost = true;
		if (sl->cur == e->ver) {
			slot_delete(s, sl);
			continue;
		}
		/* Rewritten since the capture: the versions up to the captured one go, the
		 * newer ones (not covered by this flush) stay. */
		hist_lose(sl, e->ver->seq);
	}
	tab_shrink(s);
}

/* The flush completed: its capture becomes durable (SIM1, SIM2). */
static void capture_apply(struct sim *s, struct sim_op *op)
{
	if (!op->cap)
		return;
	for (size_t i = 0; i < op->cap->nr; i++) {
		struct sim_cap_ent *e = &op->cap->ent[i];
		struct sim_slot *sl = slot_find(s, e->sector);

		if (!sl || e->ver->seq <= sl->durable_seq || e->ver->lost)
			continue; /* media already has this or a newer version, or it is lost */
		memcpy(s->media + e->sector * s->sector, e->ver->data, s->sector);
		sl->durable_seq = e->ver->seq;
		if (sl->cur == e->ver)
			slot_delete(s, sl);
		else
			hist_trim(sl);
	}
	capture_drop(op);
	tab_shrink(s);
}

/* ---- trace ---- */

static void trace_add(struct sim *s, uint16_t type, const struct sim_op *op, uint64_t off,
		      uint64_t len, int status)
{
	struct iol_sim_event *e;

	s->ev_seq++;
	if (!s->trace_on)
		return;
	if (s->ev_len == s->ev_cap) {
		size_t cap = s->ev_cap ? s->ev_cap * 2 : 1024;
		struct iol_sim_event *ev = realloc(s->ev, cap * sizeof(*ev));

		if (!ev)
			return; /* out of memory: the event is lost, its number skipped */
		s->ev = ev;
		s->ev_cap = cap;
	}
	e = &s->ev[s->ev_len++];
	memset(e, 0, sizeof(*e));
	e->seq = s->ev_seq;
	e->req_id = op->id;
	e->off = off;
	e->len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	e->opf = op->opf;
	e->status = status;
	e->type = type;
	e->t_ns = sim_now(s);
}

/* ---- faults ---- */

/* Count one submission of @op; returns the planned fault kind (-1: none) and its error. */
static int fault_take(struct sim *s, enum iol_op op, int *err)
{
	uint64_t n = ++s->opcount[op];

	for (unsigned i = 0; i < s->nr_faults; i++) {
		struct sim_fault *sf = &s->faults[i];
		uint64_t idx = n - sf->base;
		int kind;

		if (sf->f.op != op)
			continue;
		if (idx != sf->f.nth && !(sf->f.persistent && idx > sf->f.nth))
			continue;
		kind = (int)sf->f.kind;
		*err = sf->f.err ? sf->f.err : -EIO;
		if (!sf->f.persistent) {
			memmove(sf, sf + 1, (s->nr_faults - i - 1) * sizeof(*sf));
			s->nr_faults--;
		}
		return kind;
	}
	return -1;
}

/* ---- timing ---- */

static uint64_t xfer_ns(uint64_t bytes, uint64_t bps)
{
	return bps ? (uint64_t)((double)bytes * 1e9 / (double)bps) : 0;
}

/* A latency of @base_ns, +-20 % jitter, and one request in 64 four times slower. */
static uint64_t jitter(struct sim *s, uint64_t base_ns)
{
	uint64_t r = rng_next(&s->rng);
	double f = 0.8 + 0.4 * (double)(r >> 11) / (double)(1ull << 53);

	if ((r & 63) == 0)
		f *= 4;
	return (uint64_t)((double)base_ns * f);
}

static void issue_rw(struct sim *s, struct sim_op *op, uint64_t now)
{
	const struct sim_lat *l = &sim_lat_tab[s->latency];
	uint64_t start;

	if (s->latency == IOL_SIM_LAT_NONE) {
		op->due = now;
		return;
	}
	start = now > s->chan_busy ? now : s->chan_busy;
	s->chan_busy = start + l->cmd_ns + xfer_ns(op->len, l->bps);
	op->due = s->chan_busy + op->lat_ns;
}

static void issue_flush(struct sim *s, struct sim_op *op, uint64_t now)
{
	const struct sim_lat *l = &sim_lat_tab[s->latency];

	op->due = now + op->flat_ns + xfer_ns(op->cap_bytes, l->flush_bps);
}

/* ---- flight list and delivery ---- */

static void op_unlink(struct sim *s, struct sim_op *op)
{
	if (op->prev)
		op->prev->next = op->next;
	else
		s->head = op->next;
	if (op->next)
		op->next->prev = op->prev;
	else
		s->tail = op->prev;
	s->nr_ops--;
}

struct sim_done {
	struct iol_req *req;
	struct sim_run *run; /* ->run's waiter, which reports it itself (SIM5) */
	int err;
	size_t bytes;
};

static void op_finish(struct sim *s, struct sim_op *op, int err, uint64_t bytes, struct sim_done *d)
{
	trace_add(s, IOL_SIM_EV_COMPLETE, op, op->off, op->len,
		  !err && op->op != IOL_OP_FLUSH && bytes != op->len ? -EIO : err);
	op_unlink(s, op);
	d->req = op->req;
	d->run = op->run;
	d->err = err;
	d->bytes = (size_t)bytes;
	free(op);
}

/*
 * Perform @op's next phase with its state change and events (SIM3).  Returns true when the
 * request completed (it is unlinked and freed; @d says how to report it), false when a
 * PREFLUSH write only completed its flush and its write was issued.  With @force the
 * write of a PREFLUSH request follows its flush at once.
 */
static bool op_step(struct sim *s, struct sim_op *op, bool force, struct sim_done *d)
{
	int err;

	if (op->flushing) {
		if (op->flush_err) {
			if (s->fail_drops)
				capture_lose(s, op);
			capture_drop(op);
			op_finish(s, op, op->flush_err, 0, d);
			return true;
		}
		capture_apply(s, op);
		trace_add(s, IOL_SIM_EV_FLUSH_DONE, op, 0, op->cap_bytes, 0);
		op->flushing = false;
		if (op->op == IOL_OP_FLUSH) {
			op_finish(s, op, 0, 0, d);
			return true;
		}
		if (!force) {
			issue_rw(s, op, sim_now(s));
			return false;
		}
	}
	if (op->op == IOL_OP_READ) {
		if (op->fault < 0 && range_bad(s, op->first, op->nr)) {
			op_finish(s, op, -EIO, 0, d);
			return true;
		}
		switch (op->fault) {
		case IOL_SIM_FAULT_EIO:
			op_finish(s, op, op->err, 0, d);
			break;
		case IOL_SIM_FAULT_SHORT:
			read_copy(s, op, op->len / 2);
			op_finish(s, op, 0, op->len / 2, d);
			break;
		default:
			read_copy(s, op, op->len);
			if (op->fault == IOL_SIM_FAULT_BITFLIP)
				read_bitflip(s, op);
			op_finish(s, op, 0, op->len, d);
			break;
		}
		return true;
	}
	/* A write. */
	if (op->fault >= 0) {
		op_finish(s, op, op->err, 0, d);
		return true;
	}
	if (op->fua || s->write_through) {
		write_media(s, op);
		err = 0;
	} else {
		err = write_cache(s, op);
	}
	if (!err)
		range_set_bad(s, op->first, op->nr, false); /* a written sector reads again */
	op_finish(s, op, err, err ? 0 : op->len, d);
	return true;
}

/* Report a completion with the lock dropped (SIM4); a ->run request's result goes to
 * its waiting caller instead, which reports it (SIM5). */
static void complete_unlocked(struct sim *s, const struct sim_done *d)
{
	if (d->run) {
		d->run->err = d->err;
		d->run->bytes = d->bytes;
		d->run->done = true;
		pthread_cond_broadcast(&s->ran);
		if (!s->busy && !s->head)
			pthread_cond_broadcast(&s->idle);
		return;
	}
	s->busy++;
	pthread_mutex_unlock(&s->lock);
	iol_req_done(d->req, d->err, d->bytes);
	pthread_mutex_lock(&s->lock);
	if (--s->busy == 0 && !s->head)
		pthread_cond_broadcast(&s->idle);
}

/* The next request to deliver at @now, or NULL and *@wake = when to look again. */
static struct sim_op *pick_due(struct sim *s, uint64_t now, uint64_t *wake)
{
	struct sim_op *best = NULL;

	*wake = UINT64_MAX;
	if (s->in_order) {
		if (s->head->due <= now)
			return s->head;
		*wake = s->head->due;
		return NULL;
	}
	for (struct sim_op *op = s->head; op; op = op->next) {
		if (op->due > now) {
			if (op->due < *wake)
				*wake = op->due;
		} else if (!best || op->key < best->key) {
			best = op;
		}
	}
	return best;
}

/*
 * Wait, locked, until @due (ns since open) or a submission.  Timed waits overshoot by the
 * host's wake-up latency (tens of microseconds in a VM, even with 1 ns timer slack), which
 * would round every short latency up to it; so the thread learns its overshoot, wakes
 * that much early and yields in a loop (lock dropped) for the rest.
 */
static void sim_wait(struct sim *s, uint64_t due)
{
	uint64_t now = sim_now(s);

	if (due > now + s->oversleep) {
		uint64_t target = due - s->oversleep, abs = s->t0 + target, late;
		struct timespec ts = {
			.tv_sec = (time_t)(abs / 1000000000ull),
			.tv_nsec = (long)(abs % 1000000000ull),
		};

		if (pthread_cond_timedwait(&s->work, &s->lock, &ts) != ETIMEDOUT)
			return;
		now = sim_now(s);
		late = now > target ? now - target : 0;
		if (late > SIM_OVERSLEEP_MAX)
			late = SIM_OVERSLEEP_MAX;
		s->oversleep = (s->oversleep * 7 + late) / 8;
		return;
	}
	pthread_mutex_unlock(&s->lock);
	while (sim_now(s) < due)
		sched_yield();
	pthread_mutex_lock(&s->lock);
}

static void *sim_thread(void *arg)
{
	struct sim *s = arg;

	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct sim_done d;
		struct sim_op *op;
		uint64_t wake;

		if (!s->head) {
			if (s->stop)
				break;
			pthread_cond_wait(&s->work, &s->lock);
			continue;
		}
		op = pick_due(s, sim_now(s), &wake);
		if (!op) {
			sim_wait(s, wake);
			continue;
		}
		if (op_step(s, op, false, &d))
			complete_unlocked(s, &d);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- ops ---- */

static int sim_probe(void)
{
	return 0;
}

static int load_file(const char *path, struct sim *s, const struct iol_dev_opts *opts)
{
	struct stat st;
	uint64_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0) {
		err = -errno;
		iol_set_errmsg(opts, "%s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		iol_set_errmsg(opts, "%s: fstat: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size % s->sector) {
		iol_set_errmsg(opts,
			       "%s: a sim image must be a non-empty regular file whose size "
			       "is a multiple of the sector (%u)",
			       path, s->sector);
		err = -EINVAL;
		goto out;
	}
	s->bytes = (uint64_t)st.st_size;
	s->media = malloc(s->bytes);
	if (!s->media) {
		err = -ENOMEM;
		goto out;
	}
	while (done < s->bytes) {
		ssize_t r = pread(fd, s->media + done, s->bytes - done, (off_t)done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EIO;
			iol_set_errmsg(opts, "%s: read: %s", path,
				       r < 0 ? strerror(errno) : "file shrank while loading");
			goto out;
		}
		done += (uint64_t)r;
	}
out:
	close(fd);
	return err;
}

static void sim_free(struct sim *s)
{
	for (size_t i = 0; i < s->tab_cap; i++) {
		if (s->tab[i].cur) {
			ver_put(s->tab[i].cur);
			hist_free(&s->tab[i]);
		}
	}
	free(s->tab);
	free(s->media);
	free(s->bad);
	free(s->ev);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->ran);
	free(s);
}

static int sim_open(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts)
{
	const struct iol_sim_opts defaults = { .size = sizeof(defaults) };
	const struct iol_sim_opts *so = opts && opts->sim ? opts->sim : &defaults;
	pthread_condattr_t ca;
	struct sim *s;
	int err;

	if (so->size != sizeof(*so)) {
		iol_set_errmsg(opts, "sim: iol_sim_opts.size is %zu, expected %zu", so->size,
			       sizeof(*so));
		return -EINVAL;
	}
	if (so->sector && so->sector != 512 && so->sector != 4096) {
		iol_set_errmsg(opts, "sim: sector must be 512 or 4096, not %u", so->sector);
		return -EINVAL;
	}
	if ((unsigned)so->latency > IOL_SIM_LAT_SATA) {
		iol_set_errmsg(opts, "sim: unknown latency profile %d", (int)so->latency);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->sector = so->sector ? so->sector : SIM_DEFAULT_SECTOR;
	s->shift = s->sector == 512 ? 9 : 12;
	s->seed = so->seed;
	s->latency = so->latency;
	s->hold = so->hold;
	s->in_order = so->in_order;
	s->write_through = so->write_through;
	s->fail_drops = so->flush_fail_drops;
	s->gate = so->submit_gate;
	s->gate_arg = so->gate_arg;
	s->rng = seed_of(s->seed, SEED_SUBMIT);
	s->drng = seed_of(s->seed, SEED_DELIVER);
	s->trace_on = !so->write_through;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->work, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->idle, NULL);
	pthread_cond_init(&s->ran, NULL);

	if (so->image || !path) {
		s->bytes = so->dev_bytes ? so->dev_bytes : SIM_DEFAULT_BYTES;
		if (s->bytes % s->sector || s->bytes > SIZE_MAX) {
			iol_set_errmsg(opts,
				       "sim: dev_bytes %llu is not a multiple of the sector "
				       "(%u)",
				       (unsigned long long)s->bytes, s->sector);
			err = -EINVAL;
			goto fail;
		}
		/* calloc: untouched parts of a big disk cost no memory. */
		s->media = so->image ? malloc(s->bytes) : calloc(1, s->bytes);
		if (!s->media) {
			iol_set_errmsg(opts, "sim: cannot allocate %llu bytes of media",
				       (unsigned long long)s->bytes);
			err = -ENOMEM;
			goto fail;
		}
		if (so->image)
			memcpy(s->media, so->image, s->bytes);
	} else {
		err = load_file(path, s, opts);
		if (err)
			goto fail;
	}
	s->nsectors = s->bytes / s->sector;

	dev->geom.size_bytes = s->bytes;
	dev->geom.logical_block = s->sector;
	dev->geom.physical_block = s->sector;
	dev->geom.dio_mem_align = s->sector;
	dev->geom.dio_off_align = s->sector;
	dev->geom.is_blockdev = false;
	dev->geom.dioalign_from_statx = false;
	dev->geom.volatile_cache = !s->write_through;
	dev->geom.fua = 1;
	dev->geom.fs_type = "sim";

	s->t0 = iol_now_ns();
	if (!s->hold) {
		err = pthread_create(&s->thread, NULL, sim_thread, s);
		if (err) {
			iol_set_errmsg(opts, "sim: cannot start the sim thread: %s", strerror(err));
			err = -err;
			goto fail;
		}
		s->has_thread = true;
	}
	dev->be = s;
	dev->run = so->inline_run; /* sim_run only on request (SIM5) */
	return 0;
fail:
	sim_free(s);
	return err;
}

/* Deliver everything in flight, FIFO, on this thread (hold mode at close).  Locked. */
static void deliver_all(struct sim *s)
{
	while (s->head) {
		struct sim_done d;

		if (op_step(s, s->head, true, &d))
			complete_unlocked(s, &d);
	}
}

/* Take @req into the flight list (the part of a submission under the lock); @run: its
 * ->run waiter, or NULL.  Returns false, with @req completed, when out of memory. */
static bool sim_enqueue(struct iol_dev *dev, struct iol_req *req, struct sim_run *run)
{
	struct sim *s = dev->be;
	struct sim_op *op = calloc(1, sizeof(*op));
	const struct sim_lat *l = &sim_lat_tab[s->latency];
	bool lat = s->latency != IOL_SIM_LAT_NONE;
	uint64_t now;
	int err;

	if (s->gate)
		s->gate(s->gate_arg, req->opf.bits, req->off, (uint32_t)iol_req_len(req));
	if (!op) {
		if (run) {
			run->err = -ENOMEM;
			run->done = true;
		} else {
			iol_req_done(req, -ENOMEM, 0);
		}
		return false;
	}
	op->req = req;
	op->run = run;
	op->opf = req->opf.bits;
	op->op = iol_opf_op(req->opf);
	op->fua = iol_opf_has(req->opf, IOL_FUA);
	op->flushing = op->op == IOL_OP_FLUSH || iol_opf_has(req->opf, IOL_PREFLUSH);
	op->fault = -1;
	if (op->op != IOL_OP_FLUSH) {
		op->off = req->off;
		op->len = iol_req_len(req);
		op->first = op->off >> s->shift;
		op->nr = op->len >> s->shift;
	}

	pthread_mutex_lock(&s->lock);
	now = sim_now(s);
	op->id = ++s->next_id;
	op->key = rng_next(&s->rng);
	if (op->flushing) {
		if (fault_take(s, IOL_OP_FLUSH, &err) >= 0)
			op->flush_err = err;
		if (lat)
			op->flat_ns = jitter(s, l->flush_ns);
	}
	if (op->op != IOL_OP_FLUSH) {
		op->fault = fault_take(s, op->op, &err);
		if (op->fault >= 0)
			op->err = err;
		if (lat)
			op->lat_ns = jitter(s, l->base_ns);
	}
	trace_add(s, IOL_SIM_EV_SUBMIT, op, op->off, op->len, 0);
	if (op->flushing) {
		err = capture_take(s, op);
		if (err && !op->flush_err)
			op->flush_err = err;
		trace_add(s, IOL_SIM_EV_FLUSH_ISSUE, op, 0, op->cap_bytes, 0);
		issue_flush(s, op, now);
	} else {
		issue_rw(s, op, now);
	}
	if (run)
		run->here = !s->hold && !lat && !s->head;
	op->prev = s->tail;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	s->nr_ops++;
	if (s->has_thread && !(run && run->here))
		pthread_cond_signal(&s->work);
	if (s->hold && s->closing)
		deliver_all(s); /* SIM6 */
	return true;
}

static void sim_submit(struct iol_dev *dev, struct iol_req *req)
{
	struct sim *s = dev->be;

	if (sim_enqueue(dev, req, NULL))
		pthread_mutex_unlock(&s->lock);
}

/* ->run (inline_run): the request goes through the flight list like any other and waits
 * here for its delivery, then is reported on this thread (SIM5). */
static void sim_run(struct iol_dev *dev, struct iol_req *req)
{
	struct sim *s = dev->be;
	struct sim_run run = { .done = false };

	if (sim_enqueue(dev, req, &run)) {
		if (run.here) {
			struct sim_done d;

			while (!op_step(s, s->tail, false, &d))
				;
			complete_unlocked(s, &d);
		}
		while (!run.done)
			pthread_cond_wait(&s->ran, &s->lock);
		pthread_mutex_unlock(&s->lock);
	}
	iol_req_done(req, run.err, run.bytes);
}

/* ->quiesce: close began.  A held disk delivers what is in flight now and, from now on,
 * what is submitted, at once (SIM6); the sim thread needs nothing. */
static void sim_quiesce(struct iol_dev *dev)
{
	struct sim *s = dev->be;

	pthread_mutex_lock(&s->lock);
	s->closing = true;
	if (s->hold)
		deliver_all(s);
	pthread_mutex_unlock(&s->lock);
}

static void sim_close(struct iol_dev *dev)
{
	struct sim *s = dev->be;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->hold)
		deliver_all(s); /* nothing is left after iol_dev_close's wait (IO5) */
	while (s->head || s->busy)
		pthread_cond_wait(&s->idle, &s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	if (s->has_thread)
		pthread_join(s->thread, NULL);
	sim_free(s);
	dev->be = NULL;
}

const struct iol_ops iol_sim_ops = {
	.needs_fd = false,
	.probe = sim_probe,
	.open = sim_open,
	.submit = sim_submit,
	.run = sim_run,
	.quiesce = sim_quiesce,
	.close = sim_close,
};

/* ---- control surface (io_sim.h) ---- */

int iol_sim_latency_parse(const char *name, enum iol_sim_latency *out)
{
	static const char *const names[] = {
		[IOL_SIM_LAT_NONE] = "none",
		[IOL_SIM_LAT_NVME] = "nvme",
		[IOL_SIM_LAT_SATA] = "sata",
	};

	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(name, names[i])) {
			*out = (enum iol_sim_latency)i;
			return 0;
		}
	}
	return -EINVAL;
}

size_t iol_sim_trace_len(struct iol_dev *dev)
{
	struct sim *s = sim_of(dev);
	size_t n;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	n = s->ev_len;
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t iol_sim_trace_copy(struct iol_dev *dev, size_t from, struct iol_sim_event *out, size_t max)
{
	struct sim *s = sim_of(dev);
	size_t n = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (from < s->ev_len) {
		n = s->ev_len - from < max ? s->ev_len - from : max;
		memcpy(out, s->ev + from, n * sizeof(*out));
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

void iol_sim_trace_enable(struct iol_dev *dev, bool on)
{
	struct sim *s = sim_of(dev);

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->trace_on = on;
	pthread_mutex_unlock(&s->lock);
}

int iol_sim_fault_add(struct iol_dev *dev, const struct iol_sim_fault *f)
{
	struct sim *s = sim_of(dev);
	int err = 0;

	if (!s || !f || f->nth == 0 || f->err > 0)
		return -EINVAL;
	if (f->op != IOL_OP_READ && f->op != IOL_OP_WRITE && f->op != IOL_OP_FLUSH)
		return -EINVAL;
	if (f->kind != IOL_SIM_FAULT_EIO &&
	    (f->op != IOL_OP_READ ||
	     (f->kind != IOL_SIM_FAULT_SHORT && f->kind != IOL_SIM_FAULT_BITFLIP)))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (s->nr_faults == SIM_MAX_FAULTS) {
		err = -ENOSPC;
	} else {
		s->faults[s->nr_faults].f = *f;
		s->faults[s->nr_faults].base = s->opcount[f->op];
		s->nr_faults++;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

int iol_sim_set_unreadable(struct iol_dev *dev, uint64_t sector, uint64_t n, bool bad)
{
	struct sim *s = sim_of(dev);
	int err = 0;

	if (!s || sector > s->nsectors || n > s->nsectors - sector)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (!s->bad && bad) {
		s->bad = calloc(1, (size_t)(s->nsectors + 7) / 8);
		err = s->bad ? 0 : -ENOMEM;
	}
	if (!err)
		range_set_bad(s, sector, n, bad);
	pthread_mutex_unlock(&s->lock);
	return err;
}

void iol_sim_fault_clear(struct iol_dev *dev)
{
	struct sim *s = sim_of(dev);

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->nr_faults = 0;
	pthread_mutex_unlock(&s->lock);
}

size_t iol_sim_pending(struct iol_dev *dev)
{
	struct sim *s = sim_of(dev);
	size_t n;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	n = s->nr_ops;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static size_t deliver(struct iol_dev *dev, size_t max, enum iol_sim_order order, size_t if_len)
{
	struct sim *s = sim_of(dev);
	size_t n = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (if_len != SIZE_MAX && s->ev_len != if_len)
		max = 0; /* an event since the caller looked: it looks again first */
	while (n < max && s->head) {
		struct sim_op *op = order == IOL_SIM_LIFO ? s->tail : s->head;
		struct sim_done d;

		if (order == IOL_SIM_RANDOM) {
			for (uint64_t i = rng_next(&s->drng) % s->nr_ops; i; i--)
				op = op->next;
		}
		/* forced: always completes; else a PREFLUSH write's flush is a delivery
		 * of its own, after which the write is in flight */
		if (op_step(s, op, if_len == SIZE_MAX, &d))
			complete_unlocked(s, &d);
		n++;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t iol_sim_deliver(struct iol_dev *dev, size_t max, enum iol_sim_order order)
{
	return deliver(dev, max, order, SIZE_MAX);
}

size_t iol_sim_deliver_if(struct iol_dev *dev, size_t max, enum iol_sim_order order,
			  size_t trace_len)
{
	return deliver(dev, max, order, trace_len);
}

/* ---- power cuts ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The unstable sectors, ascending, in a new array (*out NULL when there are none). */
static int unstable_build(struct sim *s, uint64_t **out, size_t *nr)
{
	size_t total = s->tab_nr, n = 0, k = 0;
	uint64_t *v;

	*out = NULL;
	*nr = 0;
	for (struct sim_op *op = s->head; op; op = op->next)
		if (op->op == IOL_OP_WRITE)
			total += op->nr;
	if (!total)
		return 0;
	v = malloc(total * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->tab_cap; i++)
		if (s->tab[i].cur)
			v[n++] = s->tab[i].sector;
	for (struct sim_op *op = s->head; op; op = op->next)
		if (op->op == IOL_OP_WRITE)
			for (uint64_t i = 0; i < op->nr; i++)
				v[n++] = op->first + i;
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	*out = v;
	*nr = k;
	return 0;
}

size_t iol_sim_unstable_index(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x ? lo : SIZE_MAX;
}

static void garbage_fill(unsigned char *p, uint32_t len, uint64_t seed, uint64_t sector)
{
	uint64_t st = seed_of(seed, SEED_GARBAGE) ^ mix64(sector);

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = rng_next(&st);

		memcpy(p + i, &r, 8);
	}
}

/* The number of versions of each unstable sector @u[0..n) (see the header comment), and
 * in @base (may be NULL) how many of them are media and cache (the rest are writes in
 * flight). */
static void count_versions(struct sim *s, const uint64_t *u, size_t n, uint32_t *nver,
			   uint32_t *base)
{
	for (size_t i = 0; i < n; i++) {
		struct sim_slot *sl = slot_find(s, u[i]);

		nver[i] = 1 + (sl ? sl->nhist + 1 : 0);
		if (base)
			base[i] = nver[i];
	}
	for (struct sim_op *op = s->head; op; op = op->next) {
		if (op->op != IOL_OP_WRITE || op->flushing)
			continue;
		for (uint64_t i = 0; i < op->nr; i++) {
			size_t idx = iol_sim_unstable_index(u, n, op->first + i);

			if (idx != SIZE_MAX)
				nver[idx]++;
		}
	}
}

/* Build the image for unstable sectors @u[0..n), sector i at version @ver[i] (an index
 * below count_versions' count, or IOL_SIM_VER_GARBAGE, filled as @profile says); @scratch
 * holds 2n words. */
static void crash_image(struct sim *s, const uint64_t *u, const uint32_t *ver, size_t n,
			uint64_t seed, enum iol_sim_crash_profile profile, unsigned char *image,
			uint32_t *scratch)
{
	uint32_t *base = scratch, *seen = scratch + n;

	memcpy(image, s->media, s->bytes);
	for (size_t i = 0; i < n; i++) {
		struct sim_slot *sl = slot_find(s, u[i]);

		base[i] = 1 + (sl ? sl->nhist + 1 : 0);
		seen[i] = 0;
		if (!sl || ver[i] == 0 || ver[i] >= base[i])
			continue;
		memcpy(image + u[i] * s->sector,
		       ver[i] <= sl->nhist ? sl->hist[ver[i] - 1]->data : sl->cur->data, s->sector);
	}
	/* Issued writes in flight, in submission order: version base + j is the j-th. */
	for (struct sim_op *op = s->head; op; op = op->next) {
		struct vec_it it = { op->req->vec, 0 };

		if (op->op != IOL_OP_WRITE || op->flushing)
			continue;
		for (uint64_t i = 0; i < op->nr; i++) {
			const unsigned char *src = it_next(&it, s->sector);
			size_t idx = iol_sim_unstable_index(u, n, op->first + i);

			if (idx == SIZE_MAX || ver[idx] == IOL_SIM_VER_GARBAGE)
				continue;
			if (ver[idx] == base[idx] + seen[idx]++)
				memcpy(image + (op->first + i) * s->sector, src, s->sector);
		}
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = image + u[i] * s->sector;
		uint64_t nb = u[i] ? u[i] - 1 : 1;

		if (ver[i] != IOL_SIM_VER_GARBAGE)
			continue;
		if (profile == IOL_SIM_GARBLE_ZERO || profile == IOL_SIM_GARBLE_ONES)
			memset(p, profile == IOL_SIM_GARBLE_ZERO ? 0 : 0xff, s->sector);
		else if (profile == IOL_SIM_GARBLE_COPY)
			memcpy(p, s->media + nb * s->sector, s->sector);
		else
			garbage_fill(p, s->sector, seed, u[i]);
	}
}

size_t iol_sim_unstable(struct iol_dev *dev, uint64_t *sectors, size_t max)
{
	struct sim *s = sim_of(dev);
	uint64_t *u;
	size_t n;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (unstable_build(s, &u, &n)) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	pthread_mutex_unlock(&s->lock);
	if (sectors && n && max)
		memcpy(sectors, u, (n < max ? n : max) * sizeof(*u));
	free(u);
	return n;
}

size_t iol_sim_unstable_versions(struct iol_dev *dev, uint64_t *sectors, uint32_t *nver, size_t max)
{
	struct sim *s = sim_of(dev);
	uint32_t *nv = NULL;
	uint64_t *u;
	size_t n;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (unstable_build(s, &u, &n) || (n && !(nv = malloc(n * sizeof(*nv))))) {
		pthread_mutex_unlock(&s->lock);
		free(u);
		return 0;
	}
	count_versions(s, u, n, nv, NULL);
	pthread_mutex_unlock(&s->lock);
	if (sectors && n && max)
		memcpy(sectors, u, (n < max ? n : max) * sizeof(*u));
	if (nver && n && max)
		memcpy(nver, nv, (n < max ? n : max) * sizeof(*nv));
	free(nv);
	free(u);
	return n;
}

int iol_sim_version_read(struct iol_dev *dev, uint64_t sector, uint32_t v, void *buf)
{
	struct sim *s = sim_of(dev);
	uint32_t nver, base;
	uint64_t *u;
	size_t n, idx;
	int err;

	if (!s || !buf)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	err = unstable_build(s, &u, &n);
	idx = err ? SIZE_MAX : iol_sim_unstable_index(u, n, sector);
	if (!err && idx == SIZE_MAX)
		err = sector < s->nsectors && v == 0 ? 0 : -EINVAL; /* stable: media only */
	if (!err && idx != SIZE_MAX) {
		count_versions(s, u + idx, 1, &nver, &base);
		if (v >= nver) {
			err = -EINVAL;
		} else if (v == 0 || v >= base) {
			uint32_t j = v ? v - base : 0;
			const unsigned char *src = v ? NULL : s->media + sector * s->sector;

			for (struct sim_op *op = s->head; !src && op; op = op->next) {
				struct vec_it it = { op->req->vec, 0 };

				if (op->op != IOL_OP_WRITE || op->flushing || sector < op->first ||
				    sector >= op->first + op->nr)
					continue;
				for (uint64_t i = 0; i <= sector - op->first; i++)
					src = it_next(&it, s->sector);
				if (j--)
					src = NULL;
			}
			memcpy(buf, src, s->sector);
		} else {
			struct sim_slot *sl = slot_find(s, sector);

			memcpy(buf, v <= sl->nhist ? sl->hist[v - 1]->data : sl->cur->data,
			       s->sector);
		}
	} else if (!err) {
		memcpy(buf, s->media + sector * s->sector, s->sector);
	}
	pthread_mutex_unlock(&s->lock);
	free(u);
	return err;
}

/* Resolve every unstable sector as @pick says and build the image (all under the lock,
 * so the versions counted are the ones the image is built from). */
enum pick {
	PICK_SEEDED,
	PICK_CHOICE,
	PICK_VERSION
};

static int crash_build(struct sim *s, enum pick how, enum iol_sim_crash_profile profile,
		       uint64_t seed, const void *want, size_t nwant, void *image,
		       struct iol_sim_crash_info *ci)
{
	uint64_t st = seed_of(seed, SEED_CRASH);
	uint32_t *ver = NULL, *nver = NULL, *scratch = NULL;
	uint64_t *u;
	size_t n;
	int err;

	pthread_mutex_lock(&s->lock);
	err = unstable_build(s, &u, &n);
	if (!err && how != PICK_SEEDED && n != nwant)
		err = -EINVAL; /* the unstable set is not the one @want was made for */
	if (!err && n) {
		ver = malloc(n * sizeof(*ver));
		nver = malloc(n * sizeof(*nver));
		scratch = malloc(2 * n * sizeof(*scratch));
		if (!ver || !nver || !scratch)
			err = -ENOMEM;
	}
	if (!err && n)
		count_versions(s, u, n, nver, NULL);
	for (size_t i = 0; !err && i < n; i++) {
		uint64_t r;
		unsigned c;

		switch (how) {
		case PICK_VERSION:
			ver[i] = ((const uint32_t *)want)[i];
			if (ver[i] != IOL_SIM_VER_GARBAGE && ver[i] >= nver[i])
				err = -EINVAL;
			continue;
		case PICK_CHOICE:
			c = ((const uint8_t *)want)[i];
			break;
		default:
			r = rng_next(&st);
			if (profile == IOL_SIM_VERSIONS) {
				ver[i] = (uint32_t)((r >> 11) % nver[i]);
				if (ver[i] == 0)
					ci->kept_old++;
				else if (ver[i] == nver[i] - 1)
					ci->took_new++;
				else
					ci->intermediate++;
				continue;
			}
			c = profile == IOL_SIM_STRICT ? (unsigned)(r >> 63) :
							(unsigned)((r >> 11) % 3); /* the GARBLEs */
			break;
		}
		ver[i] = c == 0 ? 0 : c == 1 ? nver[i] - 1 : IOL_SIM_VER_GARBAGE;
		if (c == 0)
			ci->kept_old++;
		else if (c == 1)
			ci->took_new++;
		else
			ci->garbled++;
	}
	if (!err) {
		ci->unstable_sectors = n;
		crash_image(s, u, ver, n, seed, profile, image, scratch);
	}
	pthread_mutex_unlock(&s->lock);
	free(ver);
	free(nver);
	free(scratch);
	free(u);
	return err;
}

int iol_sim_crash(struct iol_dev *dev, uint64_t seed, enum iol_sim_crash_profile profile,
		  void *image, struct iol_sim_crash_info *info)
{
	struct sim *s = sim_of(dev);
	struct iol_sim_crash_info ci = { 0 };
	int err;

	if (!s || !image || profile < IOL_SIM_STRICT || profile > IOL_SIM_GARBLE_COPY)
		return -EINVAL;
	err = crash_build(s, PICK_SEEDED, profile, seed, NULL, 0, image, &ci);
	if (!err && info)
		*info = ci;
	return err;
}

int iol_sim_crash_choose(struct iol_dev *dev, const uint8_t *choice, size_t n, uint64_t seed,
			 void *image)
{
	struct sim *s = sim_of(dev);
	struct iol_sim_crash_info ci = { 0 };

	if (!s || !image || (n && !choice))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (choice[i] > 2)
			return -EINVAL;
	return crash_build(s, PICK_CHOICE, IOL_SIM_STRICT, seed, choice, n, image, &ci);
}

int iol_sim_crash_versions(struct iol_dev *dev, const uint32_t *ver, size_t n, uint64_t seed,
			   void *image)
{
	struct sim *s = sim_of(dev);
	struct iol_sim_crash_info ci = { 0 };

	if (!s || !image || (n && !ver))
		return -EINVAL;
	return crash_build(s, PICK_VERSION, IOL_SIM_VERSIONS, seed, ver, n, image, &ci);
}

int iol_sim_media(struct iol_dev *dev, uint64_t off, void *buf, size_t len)
{
	struct sim *s = sim_of(dev);

	if (!s || (len && !buf) || off > s->bytes || len > s->bytes - off)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	memcpy(buf, s->media + off, len);
	pthread_mutex_unlock(&s->lock);
	return 0;
}
