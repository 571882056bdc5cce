/*
 * spec.c - a part of `delog crash`, the crash checker (its design: crash.h).
 *
 * What it keeps: what a round's transactions hold, as functions of the seed: the
 * workload definitions (mixed, wrap, relog, small, full, random, window, liveness:
 * wl_pick draws one's parameters from the seed), each transaction's shape (tx_spec:
 * items, sizes, relogs, how it is forced) and the payloads (pl_make: every item
 * self-describing; pl_read: checks one against its key and the round).
 *
 * Why apart: the session threads (workload.c) commit what these functions say and the
 * oracle (oracle.c) regenerates and checks it from the same functions, so both stand
 * on this file and neither on the other.
 */
#include "crash.h"

/* ---- workloads ---- */

const char *const wl_names[NR_WL] = { "mixed", "wrap",   "relog",  "small",
				      "full",  "random", "window", "liveness" };

/* Sizes on the boundaries of sectors and buffers, mixed into every workload. */
static uint32_t boundary_len(uint64_t *r, uint32_t sector, uint32_t logbsize)
{
	static const int32_t delta[] = { -1, 0, 1, -64, -40 };
	uint32_t base;

	switch (rnd(r) % 3) {
	case 0:
		base = sector;
		break;
	case 1:
		base = sector / 2;
		break;
	default:
		base = logbsize - 2 * sector;
		break;
	}
	return (uint32_t)((int32_t)base + delta[rnd(r) % 5]);
}

/*
 * The random workload: every parameter drawn from the round's seed, so rounds reach
 * geometries and phases the fixed workloads never do.  Log size from the format's least
 * (4 MiB, which is also >= 2 x logbufs x logbsize) to CR_LOG_MAX; 512 or 4096-byte sectors
 * (unless --sector fixes it); 2..8 buffers of 16..256 KiB; items from a sector to several
 * times the ring (logbufs x logbsize), up to the quarter of the log a transaction may
 * take; checkpoints from one transaction (forced at once) to several MiB (cil_push_bytes
 * up to 5 MiB, so larger than recovery's 2 MiB window); releases behind the clients, only
 * from the push callback, or at the full edge right up to the durable sequence while big
 * checkpoints are written; DELOG_TX_NOWAIT; item tracking with item_written; and a chain
 * of 3-4 sessions, each crashed at a seeded state, reopened by engine_open_dev and
 * continued.
 */
static void wl_random(struct wl *w, uint64_t *r, uint32_t sector)
{
	static const uint32_t smax[] = { 64, 512, 4096, 16384 };
	static const unsigned force[] = { 1, 3, 8, 64 }, big1in[] = { 0, 4, 8, 16 };
	uint64_t ring, cap, big;

	w->sector = sector ? sector : (rnd(r) % 2 ? 4096u : 512u);
	w->logbufs = (unsigned)rnd_in(r, DELOG_LOGBUFS_MIN, DELOG_LOGBUFS_MAX);
	w->logbsize = DELOG_LOGBSIZE_MIN << rnd_in(r, 0, 4);
	ring = (uint64_t)w->logbufs * w->logbsize;
	/* Small logs wrap (and fill) faster; big ones hold the big checkpoints. */
	w->log_bytes = rnd(r) % 5 < 2 ? CR_LOG_BYTES :
					rnd_in(r, CR_LOG_BYTES >> 16, CR_LOG_MAX >> 16) << 16;
	if (w->log_bytes < 2 * ring)
		w->log_bytes = 2 * ring;
	w->clients = (unsigned)rnd_in(r, 1, 4);
	w->max_items = (unsigned)rnd_in(r, 1, CR_MAX_ITEMS);
	w->small_max = smax[rnd(r) % 4];
	w->big_1in = big1in[rnd(r) % 4];
	/* Items up to 1..8 rings, within a quarter of the log per transaction.  The size is
	 * drawn again when the first draw fits (as always, so seeds keep their rounds), and
	 * the second draw is capped too: uncapped, it let an item of 8 rings past the cap (a
	 * one-item transaction over a quarter, delog_tx_begin EINVAL: seed 91016 round 1). */
	cap = w->log_bytes / 4 / (w->max_items + 3);
	big = ring << rnd_in(r, 0, 3);
	if (big < cap)
		big = ring << rnd_in(r, 0, 3);
	w->big_max = (uint32_t)(big < cap ? big : cap);
	w->big_min = w->big_max / 8 > w->small_max ? w->big_max / 8 : w->small_max;
	w->force_1in = force[rnd(r) % 4];
	w->shared_1in = (unsigned)rnd_in(r, 0, 4);
	w->nshared = (unsigned)rnd_in(r, 1, 4);
	switch (rnd(r) % 3) {
	case 0: /* behind the clients */
		w->release_1in = (unsigned)(4u << rnd_in(r, 0, 3));
		break;
	case 1: /* only when the push callback asks */
		break;
	default: /* at the full edge, often everything durable: free space near zero */
		w->releaser = true;
		w->rel_all_1in = 2;
		break;
	}
	switch (rnd(r) % 4) {
	case 0:
		w->cil_push = 0;
		break;
	case 1:
		w->cil_push = ring / 2;
		break;
	case 2:
		w->cil_push = w->log_bytes / 16;
		break;
	default:
		w->cil_push = w->log_bytes / 3;
		break;
	}
	if (w->log_bytes >= (10ull << 20) && rnd(r) % 3 == 0) {
		/* Checkpoints of 3-5 MiB: larger than any recovery window. */
		w->cil_push = rnd_in(r, 3ull << 20, 5ull << 20);
		if (w->cil_push > w->log_bytes / 3)
			w->cil_push = w->log_bytes / 3;
		w->force_1in = 64;
		w->big_1in = 2;
	}
	w->nowait_1in = rnd(r) % 2 ? (unsigned)rnd_in(r, 2, 8) : 0;
	w->track = rnd(r) % 2;
	w->written_1in = (unsigned)rnd_in(r, 1, 3);
	if (w->track && rnd(r) % 2) {
		/* Space freed by item tracking alone (every unique item written back, the
		 * relogged keys moving on), releases only when the push callback asks, on
		 * the smallest log: the tail moves by delog_item_written and the flushes a
		 * waiting committer issues (space.c S2), while relogging checkpoints are in
		 * flight (S3). */
		w->release_1in = 0;
		w->releaser = false;
		w->rel_all_1in = 32;
		w->written_1in = 1;
		w->log_bytes = CR_LOG_BYTES;
		w->cil_push = 0;
		/* Items drawn for the larger log may not fit a quarter of this one (alone, a
		 * transaction of one such item reached delog_tx_begin: EINVAL). */
		cap = w->log_bytes / 4 / (w->max_items + 3);
		if (w->big_max > cap)
			w->big_max = (uint32_t)cap;
		if (w->big_min > w->big_max)
			w->big_min = w->big_max;
	}
	w->sessions = (unsigned)rnd_in(r, 3, 4);
	/* A third of the rounds name an unflushed window (drawn last, so seeds keep
	 * the rounds they had): from the least to half the log, around the legacy one. */
	if (rnd(r) % 3 == 0)
		w->window = rnd_in(r, JRNL_WINDOW_MIN >> 16, w->log_bytes / 2 >> 16) << 16;
}

/* The "window" workload (wl_pick): @r draws it, *@laps how far it writes. */
static void wl_window(struct wl *w, uint64_t *r, double *laps)
{
	/* The smallest log with the journal's unflushed window (L13, 2 MiB) half its
	 * size: 8 x 256 KiB buffers, checkpoints of 1-2 MiB, five laps, so on most
	 * laps the writes in flight cross the physical end and reach past the probes
	 * recovery takes at eighths of the log (journal/recover.c, find_anchor),
	 * states the other workloads reach only by chance. */
	w->clients = (unsigned)rnd_in(r, 2, 3);
	w->max_items = 4;
	w->small_max = 4000;
	w->big_min = 32u << 10;
	w->big_max = 200u << 10;
	w->big_1in = 3;
	w->force_1in = 24;
	w->shared_1in = 4;
	w->nshared = 3;
	w->release_1in = 4;
	w->logbufs = 8;
	w->logbsize = 256u << 10;
	w->cil_push = rnd_in(r, 1ull << 20, 2ull << 20);
	*laps = 5.0;
	if (rnd(r) % 3 == 0) {
		/* A third of the rounds on a 12 MiB log, whose checkpoints (up to twice
		 * cil_push_bytes, which the engine caps at log/8) outgrow the 2 MiB
		 * window: the writer's bound flush (L13) under every policy, which the
		 * 4 MiB log reaches only when the controller holds a commit back. */
		w->log_bytes = 12ull << 20;
		*laps = 2.5;
	}
	/* Windows named at format: the least (bound flushes every 512 KiB), or half the
	 * log, which on the 12 MiB log is three times the legacy 2 MiB. */
	switch (rnd(r) % 3) {
	case 0:
		w->window = JRNL_WINDOW_MIN;
		break;
	case 1:
		w->window = w->log_bytes / 2;
		break;
	default:
		break;
	}
}

/* The "liveness" workload (wl_pick): @r draws it, *@laps how far it writes. */
static void wl_liveness(struct wl *w, uint64_t *r, double *laps)
{
	static const uint32_t bsz[] = { 16u << 10, 32u << 10, 64u << 10 };

	/* Liveness (item 2): only the push callback frees space (it releases what
	 * the log asks for, up to the durable sequence); nobody forces to free space
	 * (clients force one transaction in 32, for their own durability).  3-8
	 * clients with big transactions (up to nearly a quarter of the log), half
	 * of them under-reserved (delog_tx_log must grow the reservation for the
	 * last item: a wait for space while holding a grant), mostly the default
	 * cil_push_bytes, so the CIL often holds committed, unforced work below the
	 * push threshold while every grant holder waits.  Chains of 3-4 sessions,
	 * each preceded by open/close cycles without writes (item 2b).  The
	 * watchdog (liveness.c) bounds every call. */
	w->clients = (unsigned)rnd_in(r, 3, 8);
	w->max_items = CR_MAX_ITEMS;
	w->small_max = 4000;
	w->big_min = 64u << 10;
	w->big_max = 240u << 10;
	w->big_1in = (unsigned)rnd_in(r, 1, 2);
	w->force_1in = 32;
	w->shared_1in = 4;
	w->nshared = 3;
	/* Half the rounds under-reserve every blocking transaction of several items
	 * down to its first item: then all open transactions often grow at once
	 * with everything released and the CIL empty, which only -EDEADLK to one of
	 * them ends (engine space.c S5); the other half mixes transactions that
	 * grow for their last item with transactions that never wait after their
	 * begin. */
	w->under_first = rnd(r) % 2;
	w->under_1in = w->under_first ? 1 : 2;
	if (w->under_first) { /* enough growers to fill the log among them */
		w->clients = (unsigned)rnd_in(r, 5, 8);
		w->big_1in = 1;
		w->big_min = 160u << 10;
	}
	w->logbsize = bsz[1 + rnd(r) % 2];
	w->cil_push = rnd(r) % 4 ? 0 : rnd_in(r, 256u << 10, 512u << 10);
	w->sessions = (unsigned)rnd_in(r, 3, 4);
	w->idle_max = 600;
	*laps = w->sessions * (0.8 + (double)(rnd(r) % 60) / 100.0);
	if (w->under_first)
		*laps *= 3; /* the growers' state comes a few times a lap at most */
}

/* The transactions per client that make @laps laps of the log on average. */
static void wl_size(struct wl *w, double laps)
{
	double avg_len, avg_tx;

	avg_len = (32.0 + w->small_max) / 2;
	if (w->big_1in)
		avg_len = avg_len * (1.0 - 1.0 / w->big_1in) +
			  (w->big_min + w->big_max) / 2.0 / w->big_1in;
	avg_tx = (1.0 + w->max_items) / 2 * (avg_len + 64) + 2 * (32 + 64) + 64;
	w->txs = (uint32_t)(laps * (double)w->log_bytes / avg_tx / w->clients) + 1;
}

void wl_pick(const char *name, uint64_t seed, unsigned threads, uint32_t sector, struct wl *w)
{
	uint64_t r = seed_for(seed, 0x3011, 0);
	static const uint32_t bsz[] = { 16u << 10, 32u << 10, 64u << 10 };
	double laps;

	memset(w, 0, sizeof(*w));
	w->name = name;
	w->logbufs = (unsigned)(2u << rnd_in(&r, 0, 2)); /* 2, 4, 8 */
	w->logbsize = bsz[rnd(&r) % 2];
	w->log_bytes = CR_LOG_BYTES;
	w->sector = sector;
	w->sessions = 1;
	w->rel_all_1in = 32;
	if (!strcmp(name, "random")) {
		wl_random(w, &r, sector);
		laps = w->sessions * (0.6 + (double)(rnd(&r) % 100) / 100.0);
	} else if (!strcmp(name, "small")) {
		w->clients = (unsigned)rnd_in(&r, 1, 2);
		w->txs = (uint32_t)rnd_in(&r, 1, 4);
		w->max_items = 2;
		w->small_max = 700;
		w->force_1in = (unsigned)rnd_in(&r, 1, 2);
		w->shared_1in = 3;
		w->nshared = 2;
		laps = 0;
	} else if (!strcmp(name, "wrap")) {
		w->clients = (unsigned)rnd_in(&r, 2, 3);
		w->max_items = 3;
		w->small_max = 4000;
		w->big_min = 8u << 10;
		w->big_max = 60u << 10;
		w->big_1in = 6;
		w->force_1in = 2;
		w->shared_1in = 4;
		w->nshared = 4;
		w->release_1in = 8;
		w->logbufs = (unsigned)rnd_in(&r, 2, 4);
		laps = 2.0 + (double)(rnd(&r) % 50) / 100.0;
	} else if (!strcmp(name, "full")) {
		/* Log full (T8): clients commit and force but never release, so the tail stays
		 * pinned until the log is full and committers wait (or fail with -EAGAIN under
		 * DELOG_TX_NOWAIT); a releaser moves the tail in bursts only then, so the log
		 * goes through the full edge again and again while it wraps. */
		w->full = true;
		w->clients = (unsigned)rnd_in(&r, 2, 3);
		w->max_items = 3;
		w->small_max = 3000;
		w->big_min = 4u << 10;
		w->big_max = 40u << 10;
		w->big_1in = 8;
		w->force_1in = 3;
		w->shared_1in = 4;
		w->nshared = 3;
		w->nowait_1in = 3;
		w->logbsize = bsz[rnd(&r) % 3];
		w->releaser = true;
		w->cil_push = CR_LOG_BYTES / 64;
		laps = 2.0 + (double)(rnd(&r) % 60) / 100.0;
	} else if (!strcmp(name, "window")) {
		wl_window(w, &r, &laps);
	} else if (!strcmp(name, "liveness")) {
		wl_liveness(w, &r, &laps);
	} else if (!strcmp(name, "relog")) {
		w->clients = (unsigned)rnd_in(&r, 3, 4);
		w->max_items = 1;
		w->small_max = 200;
		w->force_1in = 8;
		w->shared_1in = 1;
		w->nshared = 2;
		w->release_1in = 32;
		laps = 1.1;
	} else { /* mixed */
		w->clients = (unsigned)rnd_in(&r, 2, 4);
		w->max_items = 4;
		w->small_max = 1500;
		w->big_min = 4u << 10;
		w->big_max = 24u << 10;
		w->big_1in = 20;
		w->force_1in = 3;
		w->shared_1in = 3;
		w->nshared = 4;
		w->release_1in = 16;
		w->logbsize = bsz[rnd(&r) % 3];
		laps = 1.2 + (double)(rnd(&r) % 40) / 100.0;
	}
	if (threads)
		w->clients = threads;
	if (laps > 0)
		wl_size(w, laps);
}

/* ---- a transaction's contents and its payloads ---- */

/* Payloads carry the round and the session that wrote them, so a copy from a session
 * whose transaction a crash lost (and which the next session wrote again under the same
 * number) is told apart from the new one (G6). */
static uint32_t pl_round(const struct round *rd, unsigned session)
{
	return rd->id | (uint32_t)session << 24;
}

void tx_spec(const struct round *rd, unsigned c, uint32_t n, struct txspec *t)
{
	const struct wl *w = &rd->wl;
	uint64_t r = seed_for(rd->seed, 0x7000 + c, n);

	memset(t, 0, sizeof(*t));
	if (c == CR_MAX_CLIENTS) { /* the continuation client */
		t->m = 1;
		t->len[0] = 64;
		t->force = true;
		return;
	}
	t->m = (unsigned)rnd_in(&r, 1, w->max_items);
	for (unsigned i = 0; i < t->m; i++) {
		uint32_t len;

		if (w->big_1in && rnd(&r) % w->big_1in == 0)
			len = (uint32_t)rnd_in(&r, w->big_min, w->big_max);
		else if (rnd(&r) % 8 == 0)
			len = boundary_len(&r, rd->sector, w->logbsize);
		else
			len = (uint32_t)rnd_in(&r, sizeof(struct pl_hdr), w->small_max);
		t->len[i] = len < sizeof(struct pl_hdr) ? (uint32_t)sizeof(struct pl_hdr) : len;
	}
	/* A transaction may take at most a quarter of the log (delog_tx_begin, and
	 * delog_tx_log's E2BIG): big items stay under it by construction (wl_random's cap),
	 * but buffer-boundary items (up to a log buffer each) on a small log may not.  Drop
	 * items from the end until what client_main reserves (the items, three relog values
	 * and a shared key) fits, with room for each item's share of record headers, which
	 * delog_tx_log charges on top of DELOG_ITEM_OVERHEAD (delog.h; counted here as two
	 * header sectors per log buffer, more than a record takes).  Only transactions that
	 * would have failed with EINVAL or E2BIG change. */
	for (;;) {
		uint64_t need = 4 * (sizeof(struct pl_hdr) + DELOG_ITEM_OVERHEAD);
		uint64_t cap = w->log_bytes / 4 * (w->logbsize - 2 * rd->sector) / w->logbsize;

		for (unsigned i = 0; i < t->m; i++)
			need += t->len[i] + DELOG_ITEM_OVERHEAD;
		if (t->m == 1 || need <= cap)
			break;
		t->m--;
	}
	if (w->shared_1in && rnd(&r) % w->shared_1in == 0)
		t->shared = (uint16_t)(1u << (rnd(&r) % w->nshared));
	t->relog_twice = rnd(&r) % 4 == 0;
	t->force = rnd(&r) % w->force_1in == 0;
	if (w->release_1in && rnd(&r) % w->release_1in == 0)
		t->release_lag = 1 + (unsigned)(rnd(&r) % 6);
	if (w->nowait_1in && rnd(&r) % w->nowait_1in == 0) {
		t->nowait = true;
		t->under = rnd(&r) % 2 == 0;
	}
	if (!t->nowait && w->under_1in && t->m > 1 && rnd(&r) % w->under_1in == 0)
		t->under = true; /* blocking: delog_tx_log waits for its last item */
}

/* The payload hash: the header up to its check field, and the filler after it. */
static uint64_t pl_hash(uint64_t key, const unsigned char *buf, uint32_t len)
{
	return hash_bytes(buf, offsetof(struct pl_hdr, check), key) ^
	       rotl(hash_bytes(buf + sizeof(struct pl_hdr), len - sizeof(struct pl_hdr), ~key), 1);
}

void pl_make(const struct round *rd, uint64_t key, unsigned c, uint32_t n, unsigned idx, unsigned m,
	     uint16_t shared, uint32_t len, unsigned char *buf)
{
	struct pl_hdr h = { .magic = PL_MAGIC,
			    .client = (uint16_t)c,
			    .idx = (uint16_t)idx,
			    .n = n,
			    .m = (uint16_t)m,
			    .shared = shared,
			    .len = len,
			    .round = pl_round(rd, rd->session) };
	uint64_t r = seed_for(rd->seed, key, n);

	for (uint32_t i = sizeof(h); i < len; i += 8) {
		uint64_t v = rnd(&r);

		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
	memcpy(buf, &h, sizeof(h));
	h.check = pl_hash(key, buf, len);
	memcpy(buf, &h, sizeof(h));
}

bool pl_read(const struct round *rd, uint64_t key, const void *data, uint32_t len, struct pl_hdr *h)
{
	if (!data || len < sizeof(*h))
		return false;
	memcpy(h, data, sizeof(*h));
	return h->magic == PL_MAGIC && h->len == len && (h->round & 0xffffffu) == rd->id &&
	       h->check == pl_hash(key, data, len);
}
