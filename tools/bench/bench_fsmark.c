/*
 * bench_fsmark.c - `delog bench --workload fsmark`: the fs_mark half of the seed commit's
 * argument ("fsmark, 32 threads, create w/ 64 byte xattr": create, chown and unlink
 * times per flush policy).
 *
 * Why this shape: fs_mark without fsync is asynchronous transaction streaming.  Nobody
 * waits for durability; checkpoints are pushed in the background when the CIL reaches
 * its threshold (min(log/8, 32 MiB)), and a policy's flushes matter only through what
 * they cost the push and the space that waits on it.  The seed found no difference
 * between sync and async there; this workload lets a device show whether it has one.
 *
 * --threads T (default 32) threads each handle --files M files (default 2000), in three
 * phases separated by a barrier and timed one by one; each transaction is begin (its
 * items' size plus DELOG_ITEM_OVERHEAD each), the items, delog_tx_commit:
 *   create  inode (256 B, the file's key), directory (512 B: the block of the thread's
 *           directory the entry lands in, 64 entries a block, so it is relogged),
 *           allocation (128 B: one of 16 allocation groups every thread shares, the most
 *           relogged key) and a 64-byte xattr item (the file's attribute fork);
 *   chown   the inode item;
 *   unlink  the inode and directory items.
 * No operation forces.  A phase's time runs from the barrier opening until every thread
 * finished it and one final delog_force(log, 0) returned (everything the phase logged is
 * durable), so the last checkpoint's flushes are inside it; delog_stats and the disk's
 * flush counter (bench_util.c) are read at both ends.  The measuring thread calls delog_release every 2 ms so the log never fills.
 *
 * This file measures one run (fsmark_point); the workload's options, help and run loop
 * are bench_compare.c's, shared with dbench and compare-flush (bench_flush.h).
 */
#include "bench_flush.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define INODE_BYTES 256u
#define DIR_BYTES 512u
#define ALLOC_BYTES 128u
#define XATTR_BYTES 64u
#define DIRENTS_PER_BLOCK 64u
#define NR_AGS 16u
#define NS_INODE 1ull
#define NS_DIR 2ull
#define NS_ALLOC 3ull
#define NS_XATTR 4ull

const char *const fb_phase_names[FB_NR_PHASES] = { "create", "chown", "unlink" };

struct fpoint;

struct fthread {
	struct fpoint *pt;
	unsigned id;
	pthread_t th;
	bool started;
	int err;
};

struct fpoint {
	struct bench *b;
	const struct fb_opts *o;
	const struct fb_env *e;
	delog *log;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready; /* threads waiting at the first barrier */
	int phase;      /* the phase open to the threads; -1 none; FB_NR_PHASES: quit */
	unsigned done;  /* thread-phases finished, over all phases */
	atomic_bool stop;
};

static uint64_t key(uint64_t ns, uint64_t a, uint64_t b)
{
	return ns << 56 | a << 32 | b;
}

uint64_t fsmark_phase_payload(unsigned phase)
{
	static const uint64_t per[FB_NR_PHASES] = {
		INODE_BYTES + DIR_BYTES + ALLOC_BYTES + XATTR_BYTES,
		INODE_BYTES,
		INODE_BYTES + DIR_BYTES,
	};

	return phase < FB_NR_PHASES ? per[phase] : 0;
}

struct fitem {
	uint64_t key;
	uint32_t len;
};

/* One file's transaction of @phase.  0 or an error. */
static int file_op(struct fthread *t, unsigned phase, uint32_t f, const unsigned char *buf)
{
	struct fitem it[4];
	uint64_t reserve = 0;
	unsigned n = 0;
	delog_tx *tx;
	int err;

	it[n++] = (struct fitem){ key(NS_INODE, t->id, f), INODE_BYTES };
	if (phase != 1)
		it[n++] = (struct fitem){ key(NS_DIR, t->id, f / DIRENTS_PER_BLOCK), DIR_BYTES };
	if (phase == 0) {
		it[n++] = (struct fitem){ key(NS_ALLOC, 0, (t->id * 7u + f) % NR_AGS),
					  ALLOC_BYTES };
		it[n++] = (struct fitem){ key(NS_XATTR, t->id, f), XATTR_BYTES };
	}
	for (unsigned i = 0; i < n; i++)
		reserve += it[i].len + DELOG_ITEM_OVERHEAD;
	err = delog_tx_begin(t->pt->log, reserve, 0, &tx);
	if (err)
		return err;
	for (unsigned i = 0; i < n && !err; i++)
		err = delog_tx_log(tx, it[i].key, buf, it[i].len);
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	return delog_tx_commit(tx, NULL);
}

static void *thread_main(void *arg)
{
	struct fthread *t = arg;
	struct fpoint *pt = t->pt;
	unsigned char buf[DIR_BYTES];

	memset(buf, 0x30 + (int)(t->id % 64), sizeof(buf));
	pthread_mutex_lock(&pt->lock);
	pt->ready++;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
	for (unsigned p = 0; p < FB_NR_PHASES; p++) {
		bool go;

		pthread_mutex_lock(&pt->lock);
		while (pt->phase < (int)p)
			pthread_cond_wait(&pt->cond, &pt->lock);
		go = pt->phase == (int)p;
		pthread_mutex_unlock(&pt->lock);
		for (uint32_t f = 0; go && f < pt->o->files && !t->err; f++) {
			if (atomic_load_explicit(&pt->stop, memory_order_relaxed))
				break;
			t->err = file_op(t, p, f, buf);
			if (t->err)
				atomic_store(&pt->stop, true);
		}
		pthread_mutex_lock(&pt->lock);
		pt->done++;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
		if (!go)
			break;
	}
	return NULL;
}

static void set_phase(struct fpoint *pt, int phase)
{
	pthread_mutex_lock(&pt->lock);
	pt->phase = phase;
	pthread_cond_broadcast(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
}

static unsigned count(struct fpoint *pt, const unsigned *what)
{
	unsigned v;

	pthread_mutex_lock(&pt->lock);
	v = *what;
	pthread_mutex_unlock(&pt->lock);
	return v;
}

/* Wait until @n thread-phases are done, releasing the log meanwhile; a stop signal
 * stops the threads (they count themselves done). */
static void wait_done(struct fpoint *pt, unsigned n)
{
	uint64_t last = 0;

	while (count(pt, &pt->done) < n) {
		uint64_t now = now_ns();

		if (bench_interrupted(pt->b))
			atomic_store(&pt->stop, true);

		if (now - last >= BENCH_RELEASE_NS) {
			bench_release(pt->log);
			last = now;
		}
		bench_sleep_ns(500000);
	}
}

static int run_phases(struct fpoint *pt, struct fsmark_row *row)
{
	unsigned nt = pt->o->threads, started = 0;
	struct fthread *th = calloc(nt, sizeof(*th));
	int err = 0;

	if (!th)
		return -ENOMEM;
	pthread_mutex_init(&pt->lock, NULL);
	pthread_cond_init(&pt->cond, NULL);
	pt->phase = -1;
	for (unsigned i = 0; i < nt; i++) {
		int e;

		th[i].pt = pt;
		th[i].id = i;
		e = fb_thread_start(&th[i].th, thread_main, &th[i]);
		if (e) {
			err = -e;
			bench_fail(pt->b, err, NULL, "cannot start fsmark thread %u of %u: %s",
				   i + 1, nt, strerror(e));
			break;
		}
		th[i].started = true;
		started++;
	}
	while (!err && count(pt, &pt->ready) < started)
		bench_sleep_ns(200000);
	for (unsigned p = 0; p < FB_NR_PHASES && !err; p++) {
		struct delog_stats s0 = { .size = sizeof(s0) }, s1 = { .size = sizeof(s1) };
		struct bench_diskcount c0, c1;
		uint64_t t0, t1;

		bench_progress(pt->b, "fsmark, %s: %s", delog_flush_policy_name(row->policy),
			       fb_phase_names[p]);
		fb_read(pt->e, pt->log, 0, &s0, &c0);
		t0 = now_ns();
		set_phase(pt, (int)p);
		wait_done(pt, (p + 1) * started);
		if (atomic_load(&pt->stop) || bench_interrupted(pt->b)) {
			err = -EINTR;
			break;
		}
		err = delog_force(pt->log, 0);
		t1 = now_ns();
		fb_read(pt->e, pt->log, 1, &s1, &c1);
		bench_release(pt->log);
		row->phase_s[p] = (double)(t1 - t0) / 1e9;
		row->phase_bytes[p] = (uint64_t)nt * pt->o->files * fsmark_phase_payload(p);
		fb_stats_delta(&row->st[p], &s0, &s1, &c0, &c1);
	}
	set_phase(pt, FB_NR_PHASES); /* let every thread out */
	for (unsigned i = 0; i < nt; i++) {
		if (!th[i].started)
			continue;
		pthread_join(th[i].th, NULL);
		if (th[i].err && (!err || err == -EINTR))
			err = th[i].err;
	}
	free(th);
	pthread_cond_destroy(&pt->cond);
	pthread_mutex_destroy(&pt->lock);
	if (err == -EINTR && !bench_interrupted(pt->b))
		err = -EIO; /* cannot happen: a thread stopped without an error */
	return err;
}

int fsmark_point(struct fb_env *e, enum delog_flush_policy p, struct fsmark_row *row)
{
	struct fpoint pt = { .b = e->b, .o = e->o, .e = e };
	struct iol_dev *simdev = NULL;
	char what[64];
	int err;

	memset(row, 0, sizeof(*row));
	row->policy = p;
	row->threads = e->o->threads;
	row->files = e->o->files;
	err = fb_log_open(e, p, &pt.log, &simdev);
	if (err)
		return err;
	err = run_phases(&pt, row);
	snprintf(what, sizeof(what), "fsmark, %s", delog_flush_policy_name(p));
	return fb_point_end(e, err, pt.log, simdev, what);
}
