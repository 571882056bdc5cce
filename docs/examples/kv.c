/*
 * kv.c - a small key-value store that uses delog as its write-ahead log.
 *
 *   kv DBDIR put KEY VALUE     store KEY = VALUE (durable when the command returns)
 *   kv DBDIR get KEY           print VALUE; exit 1 if KEY is absent
 *   kv DBDIR del KEY           remove KEY (durable when the command returns); exit 1 if absent
 *   kv DBDIR dump              print every "KEY<TAB>VALUE", sorted by key
 *   kv DBDIR bench N           put bench-00000000 .. bench-N-1 one by one, printing
 *                              "acked I" after every 64th acknowledged put (I puts so far)
 *                              and a summary on stderr
 *   kv DBDIR                   self-test: put, get, del, reopen, check; prints "kv: ok"
 *
 * DBDIR (created if missing; on a filesystem with O_DIRECT, not tmpfs) holds two files:
 *   log    the delog log (16 MiB), created on first use
 *   data   the data file: everything up to some checkpoint, written whole (see below)
 * Exit status: 0 success, 1 failure (or key not found), 2 usage error.
 *
 * How it uses delog (the pattern of any WAL user):
 *  - The memtable is an in-memory hash map keyed by the 64-bit FNV-1a hash of the key
 *    string, which is also the delog item key.  A put logs one item, data = op byte
 *    ('P' or 'D'), key length, key, value; in one transaction, committed and forced
 *    (delog_tx_commit_force) before the memtable changes and the command reports
 *    success.  Two keys whose hashes collide cannot both be stored (the second put is
 *    refused), since relogging keeps one copy per delog key and checkpoint.
 *  - Write-back: a thread writes the whole memtable to data.tmp, fsyncs it, renames it
 *    over data and fsyncs the directory; the file records the last checkpoint sequence
 *    it covers, S.  Only then it calls delog_release(log, S): the log may reuse that
 *    space.  It runs when delog's push callback says the log is filling (the callback
 *    only wakes the thread: it must not block), every 2048 puts of a bench (environment
 *    KV_WRITEBACK_EVERY=N changes that; 0: only when delog asks), and at open when the
 *    log is more than half full.
 *  - Start: load the data file (checked: magic, sizes, checksum), then delog_open
 *    replays the log through the recover callback; checkpoints <= S are already in the
 *    file and skipped, later ones are applied in order.
 *  - Why S is right: puts are made by one thread, each forced before the next commits,
 *    so their checkpoint sequences increase strictly, and the memtable and S (the
 *    sequence of the last op applied) change together under one mutex; the write-back
 *    takes its snapshot and S under that mutex.  With several putting threads S would
 *    have to be the sequence below the oldest op not yet applied.
 *  - Crash safety: an acknowledged put is in a forced checkpoint or in a data file
 *    renamed into place after fsync; recovery replays whole checkpoints in order, so
 *    after a crash (or kill -9) the store holds exactly the puts up to some point, at
 *    least every acknowledged one.
 *
 * Build: in the delog tree (docs/examples/CMakeLists.txt), or against an installed
 * delog: cc kv.c $(pkg-config --cflags --libs delog) -o kv.  Only <delog.h> is used.
 */
#include <delog.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define LOG_SIZE (16ull << 20)
#define MAX_KEY 4096u
#define MAX_VAL (1u << 20)
#define SNAP_MAGIC "KVSNAP01"
#define BENCH_WRITEBACK_EVERY 2048u

/* ---- hashing ---- */

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t key_hash(const char *key, size_t len)
{
	return fnv1a(key, len, FNV_INIT);
}

/* ---- the memtable: open addressing on the key hash, tombstones for deletes ---- */

struct ent {
	uint64_t h;
	char *key, *val;
	uint32_t klen, vlen;
	unsigned char state; /* 0 empty, 1 live, 2 deleted */
};

struct memtable {
	struct ent *e;
	size_t cap, live, used; /* used: live + tombstones */
};

static struct ent *mt_slot(struct memtable *m, uint64_t h, bool for_insert)
{
	size_t i = (size_t)h & (m->cap - 1);
	struct ent *tomb = NULL;

	for (;;) {
		struct ent *e = &m->e[i];

		if (e->state == 0)
			return for_insert && tomb ? tomb : e;
		if (e->state == 2 && !tomb)
			tomb = e;
		if (e->state == 1 && e->h == h)
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

static int mt_grow(struct memtable *m)
{
	struct memtable n = { .cap = m->cap ? m->cap * 2 : 1024 };

	while (m->live * 2 >= n.cap)
		n.cap *= 2;
	n.e = calloc(n.cap, sizeof(*n.e));
	if (!n.e)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->e[i].state == 1) {
			*mt_slot(&n, m->e[i].h, true) = m->e[i];
			n.live++;
		}
	}
	n.used = n.live;
	free(m->e);
	*m = n;
	return 0;
}

static const struct ent *mt_get(struct memtable *m, const char *key, size_t klen)
{
	struct ent *e;

	if (!m->cap)
		return NULL;
	e = mt_slot(m, key_hash(key, klen), false);
	if (e->state != 1 || e->klen != klen || memcmp(e->key, key, klen))
		return NULL;
	return e;
}

/* 0, -EEXIST (another key with this hash is stored), -ENOMEM */
static int mt_put(struct memtable *m, const char *key, size_t klen, const char *val, size_t vlen)
{
	uint64_t h = key_hash(key, klen);
	struct ent *e;
	char *k, *v;

	if ((m->used + 1) * 4 >= m->cap * 3 && mt_grow(m))
		return -ENOMEM;
	e = mt_slot(m, h, true);
	if (e->state == 1 && (e->klen != klen || memcmp(e->key, key, klen)))
		return -EEXIST;
	v = malloc(vlen + 1);
	k = e->state == 1 ? e->key : malloc(klen + 1);
	if (!v || !k) {
		free(v);
		if (e->state != 1)
			free(k);
		return -ENOMEM;
	}
	memcpy(v, val, vlen);
	v[vlen] = 0;
	if (e->state != 1) {
		memcpy(k, key, klen);
		k[klen] = 0;
		if (e->state == 0)
			m->used++;
		m->live++;
	} else {
		free(e->val);
	}
	*e = (struct ent){ .h = h,
			   .key = k,
			   .val = v,
			   .klen = (uint32_t)klen,
			   .vlen = (uint32_t)vlen,
			   .state = 1 };
	return 0;
}

static bool mt_del(struct memtable *m, const char *key, size_t klen)
{
	struct ent *e;

	if (!m->cap)
		return false;
	e = mt_slot(m, key_hash(key, klen), false);
	if (e->state != 1 || e->klen != klen || memcmp(e->key, key, klen))
		return false;
	free(e->key);
	free(e->val);
	e->key = e->val = NULL;
	e->state = 2;
	m->live--;
	return true;
}

static void mt_free(struct memtable *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		if (m->e[i].state == 1) {
			free(m->e[i].key);
			free(m->e[i].val);
		}
	}
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---- the store ---- */

struct kv {
	char *dir, *log_path, *data_path, *tmp_path;
	delog *log;
	pthread_mutex_t lock; /* memtable, applied */
	struct memtable mt;
	uint64_t applied;  /* checkpoint of the last op in the memtable */
	uint64_t snap_seq; /* checkpoint the data file covers */
	/* write-back thread */
	pthread_t wb;
	pthread_mutex_t wb_serial; /* one write-back at a time */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;
	bool wb_want, wb_stop, wb_running;
	int wb_err;
	unsigned long writebacks;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "kv: %s: %s\n", what, err < 0 ? delog_strerror(err) : strerror(err));
	exit(1);
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (!p)
		die("malloc", ENOMEM);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Log item data: op, 3 pad bytes, u32 key length, key, value. */
#define ITEM_HDR 8u

static int apply_item(struct kv *kv, const void *data, uint32_t len)
{
	const unsigned char *p = data;
	uint32_t klen;

	if (len < ITEM_HDR)
		return -EINVAL;
	memcpy(&klen, p + 4, sizeof(klen));
	if (klen > len - ITEM_HDR || klen > MAX_KEY)
		return -EINVAL;
	if (p[0] == 'P')
		return mt_put(&kv->mt, (const char *)p + ITEM_HDR, klen,
			      (const char *)p + ITEM_HDR + klen, len - ITEM_HDR - klen);
	if (p[0] == 'D') {
		mt_del(&kv->mt, (const char *)p + ITEM_HDR, klen);
		return 0;
	}
	return -EINVAL;
}

/* Recovery: checkpoints after the data file's, in order. */
static int on_checkpoint(void *arg, const struct delog_checkpoint *ck,
			 const struct delog_item *items, size_t n)
{
	struct kv *kv = arg;

	/* Skip by sequence: the data file holds everything up to snap_seq.  delog hands
	 * over every checkpoint not released, and the newest durable one even after its
	 * release (it stays in the log until a newer one is durable), so the last
	 * checkpoint the data file covers comes back at every open. */
	if (ck->seq <= kv->snap_seq)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int err = apply_item(kv, items[i].data, items[i].len);

		if (err) {
			fprintf(stderr, "kv: checkpoint %llu: bad item: %s\n",
				(unsigned long long)ck->seq, strerror(-err));
			return err;
		}
	}
	kv->applied = ck->seq;
	return 0;
}

/* ---- the data file ---- */

struct snap_hdr {
	char magic[8];
	uint64_t seq, count, reserved;
};

static int load_data(struct kv *kv)
{
	FILE *f = fopen(kv->data_path, "rb");
	struct snap_hdr h;
	uint64_t sum = FNV_INIT, want;
	char *k = NULL, *v = NULL;
	int err = -EINVAL;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, SNAP_MAGIC, 8))
		goto out;
	sum = fnv1a(&h, sizeof(h), sum);
	k = malloc(MAX_KEY + 1);
	v = malloc(MAX_VAL + 1);
	if (!k || !v) {
		err = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < h.count; i++) {
		uint32_t len[2];

		if (fread(len, sizeof(len), 1, f) != 1 || len[0] > MAX_KEY || len[1] > MAX_VAL ||
		    fread(k, 1, len[0], f) != len[0] || fread(v, 1, len[1], f) != len[1])
			goto out;
		sum = fnv1a(len, sizeof(len), sum);
		sum = fnv1a(k, len[0], sum);
		sum = fnv1a(v, len[1], sum);
		if ((err = mt_put(&kv->mt, k, len[0], v, len[1])))
			goto out;
		err = -EINVAL;
	}
	if (fread(&want, sizeof(want), 1, f) != 1 || want != sum || fgetc(f) != EOF)
		goto out;
	kv->snap_seq = kv->applied = h.seq;
	err = 0;
out:
	if (err == -EINVAL)
		fprintf(stderr, "kv: %s: not a kv data file or damaged\n", kv->data_path);
	free(k);
	free(v);
	fclose(f);
	return err;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write the memtable as of now to the data file, durably; then release the log. */
static int writeback(struct kv *kv)
{
	struct snap_hdr h = { .seq = 0 };
	char *buf = NULL;
	size_t len = sizeof(h), off = 0;
	uint64_t sum;
	int fd, dfd, err;

	memcpy(h.magic, SNAP_MAGIC, sizeof(h.magic));
	/* One write-back at a time; snapshot under the lock, write without it. */
	pthread_mutex_lock(&kv->wb_serial);
	pthread_mutex_lock(&kv->lock);
	for (size_t i = 0; i < kv->mt.cap; i++)
		if (kv->mt.e[i].state == 1)
			len += 8 + kv->mt.e[i].klen + kv->mt.e[i].vlen;
	len += sizeof(sum);
	buf = malloc(len);
	if (!buf) {
		pthread_mutex_unlock(&kv->lock);
		pthread_mutex_unlock(&kv->wb_serial);
		return -ENOMEM;
	}
	h.seq = kv->applied;
	h.count = kv->mt.live;
	memcpy(buf, &h, sizeof(h));
	off = sizeof(h);
	for (size_t i = 0; i < kv->mt.cap; i++) {
		const struct ent *e = &kv->mt.e[i];
		uint32_t l[2] = { e->klen, e->vlen };

		if (e->state != 1)
			continue;
		memcpy(buf + off, l, sizeof(l));
		memcpy(buf + off + 8, e->key, e->klen);
		memcpy(buf + off + 8 + e->klen, e->val, e->vlen);
		off += 8 + e->klen + e->vlen;
	}
	pthread_mutex_unlock(&kv->lock);
	sum = fnv1a(buf, off, FNV_INIT);
	memcpy(buf + off, &sum, sizeof(sum));

	fd = open(kv->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = write_all(fd, buf, len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(kv->tmp_path, kv->data_path))
		err = -errno;
	if (!err) {
		dfd = open(kv->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd))
			err = -errno;
		if (dfd >= 0)
			close(dfd);
	}
	/* Only now is everything up to h.seq safe outside the log. */
	if (!err && h.seq)
		err = delog_release(kv->log, h.seq);
	if (!err) {
		kv->snap_seq = h.seq;
		kv->writebacks++;
	}
out:
	pthread_mutex_unlock(&kv->wb_serial);
	free(buf);
	return err;
}

static void *wb_main(void *arg)
{
	struct kv *kv = arg;

	pthread_mutex_lock(&kv->wb_lock);
	for (;;) {
		while (!kv->wb_want && !kv->wb_stop)
			pthread_cond_wait(&kv->wb_cond, &kv->wb_lock);
		if (kv->wb_stop)
			break;
		kv->wb_want = false;
		pthread_mutex_unlock(&kv->wb_lock);
		int err = writeback(kv);

		pthread_mutex_lock(&kv->wb_lock);
		if (err && !kv->wb_err) {
			kv->wb_err = err;
			fprintf(stderr, "kv: write-back: %s\n", delog_strerror(err));
		}
	}
	pthread_mutex_unlock(&kv->wb_lock);
	return NULL;
}

static void wb_kick(struct kv *kv)
{
	pthread_mutex_lock(&kv->wb_lock);
	kv->wb_want = true;
	pthread_cond_signal(&kv->wb_cond);
	pthread_mutex_unlock(&kv->wb_lock);
}

/* delog's push thread: the log is filling.  Only wake the write-back. */
static void on_push(void *arg, delog *log, uint64_t seq)
{
	(void)log;
	(void)seq;
	wb_kick(arg);
}

static void kv_open(struct kv *kv, const char *dir)
{
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = LOG_SIZE,
				   .recover = on_checkpoint,
				   .recover_arg = kv,
				   .push = on_push,
				   .push_arg = kv };
	struct delog_stats st = { .size = sizeof(st) };
	int err;

	memset(kv, 0, sizeof(*kv));
	kv->dir = strdup(dir);
	if (!kv->dir)
		die("malloc", ENOMEM);
	if (mkdir(dir, 0700) && errno != EEXIST)
		die(dir, errno);
	kv->log_path = path_join(dir, "log");
	kv->data_path = path_join(dir, "data");
	kv->tmp_path = path_join(dir, "data.tmp");
	pthread_mutex_init(&kv->lock, NULL);
	pthread_mutex_init(&kv->wb_lock, NULL);
	pthread_mutex_init(&kv->wb_serial, NULL);
	pthread_cond_init(&kv->wb_cond, NULL);
	if ((err = load_data(kv)))
		die(kv->data_path, err);
	if ((err = delog_open(kv->log_path, &o, &kv->log)))
		die(kv->log_path, err);
	/* The log always keeps its newest checkpoint, so it can never be behind the data
	 * file it was released into: if it is, it is another store's (or a new) log. */
	if (delog_durable_seq(kv->log) < kv->snap_seq) {
		fprintf(stderr,
			"kv: %s: log ends at checkpoint %llu, before the data file's "
			"%llu: not this store's log\n",
			kv->log_path, (unsigned long long)delog_durable_seq(kv->log),
			(unsigned long long)kv->snap_seq);
		exit(1);
	}
	if ((err = pthread_create(&kv->wb, NULL, wb_main, kv)))
		die("pthread_create", err);
	kv->wb_running = true;
	/* A log more than half full after replay: write back now. */
	if (!delog_stats(kv->log, &st) && st.log_used > st.log_size / 2)
		wb_kick(kv);
}

static int kv_close(struct kv *kv)
{
	int err = 0, e;

	if (kv->wb_running) {
		pthread_mutex_lock(&kv->wb_lock);
		kv->wb_stop = true;
		pthread_cond_signal(&kv->wb_cond);
		pthread_mutex_unlock(&kv->wb_lock);
		pthread_join(kv->wb, NULL);
		err = kv->wb_err;
	}
	e = delog_close(kv->log);
	if (e && !err)
		err = e;
	mt_free(&kv->mt);
	pthread_mutex_destroy(&kv->lock);
	pthread_mutex_destroy(&kv->wb_lock);
	pthread_mutex_destroy(&kv->wb_serial);
	pthread_cond_destroy(&kv->wb_cond);
	free(kv->dir);
	free(kv->log_path);
	free(kv->data_path);
	free(kv->tmp_path);
	return err;
}

/* Log one op and force it; then apply it.  0, -EEXIST (hash collision), delog errors. */
static int kv_op(struct kv *kv, char op, const char *key, const char *val)
{
	size_t klen = strlen(key), vlen = val ? strlen(val) : 0;
	uint32_t len, k32 = (uint32_t)klen;
	unsigned char *buf;
	delog_tx *tx;
	uint64_t seq;
	int err;

	if (!klen || klen > MAX_KEY || vlen > MAX_VAL)
		return -EINVAL;
	pthread_mutex_lock(&kv->lock);
	if (op == 'P' && kv->mt.cap) {
		const struct ent *e = mt_slot(&kv->mt, key_hash(key, klen), false);

		if (e->state == 1 && (e->klen != klen || memcmp(e->key, key, klen)))
			err = -EEXIST;
		else
			err = 0;
	} else {
		err = 0;
	}
	pthread_mutex_unlock(&kv->lock);
	if (err)
		return err;
	len = (uint32_t)(ITEM_HDR + klen + vlen);
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0, ITEM_HDR);
	buf[0] = (unsigned char)op;
	memcpy(buf + 4, &k32, sizeof(k32));
	memcpy(buf + ITEM_HDR, key, klen);
	if (vlen)
		memcpy(buf + ITEM_HDR + klen, val, vlen);
	err = delog_tx_begin(kv->log, len + DELOG_ITEM_OVERHEAD, 0, &tx);
	if (!err) {
		err = delog_tx_log(tx, key_hash(key, klen), buf, len);
		if (err)
			delog_tx_abort(tx);
		else
			err = delog_tx_commit_force(tx, &seq);
	}
	if (!err) {
		pthread_mutex_lock(&kv->lock);
		err = apply_item(kv, buf, len);
		kv->applied = seq;
		pthread_mutex_unlock(&kv->lock);
	}
	free(buf);
	return err;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = *(const struct ent *const *)a, *y = *(const struct ent *const *)b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->key, y->key, n);

	return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static void kv_dump(struct kv *kv, FILE *out)
{
	const struct ent **v = malloc((kv->mt.live + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		die("malloc", ENOMEM);
	for (size_t i = 0; i < kv->mt.cap; i++)
		if (kv->mt.e[i].state == 1)
			v[n++] = &kv->mt.e[i];
	qsort(v, n, sizeof(*v), cmp_ent);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s\t%s\n", v[i]->key, v[i]->val);
	free(v);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench(struct kv *kv, unsigned long n)
{
	char key[32], val[80];
	double t0 = now_s(), dt;
	const char *ev = getenv("KV_WRITEBACK_EVERY");
	unsigned long every = ev ? strtoul(ev, NULL, 10) : BENCH_WRITEBACK_EVERY;
	unsigned long wbs;

	for (unsigned long i = 0; i < n; i++) {
		int err;

		snprintf(key, sizeof(key), "bench-%08lu", i);
		snprintf(val, sizeof(val), "value-%lu-%016llx", i,
			 (unsigned long long)key_hash(key, strlen(key)));
		err = kv_op(kv, 'P', key, val);
		if (err) {
			fprintf(stderr, "kv: bench put %lu: %s\n", i, delog_strerror(err));
			return 1;
		}
		if ((i + 1) % 64 == 0) {
			printf("acked %lu\n", i + 1);
			fflush(stdout);
		}
		if (every && (i + 1) % every == 0)
			wb_kick(kv);
	}
	dt = now_s() - t0;
	printf("acked %lu\n", n);
	pthread_mutex_lock(&kv->wb_serial);
	wbs = kv->writebacks;
	pthread_mutex_unlock(&kv->wb_serial);
	fprintf(stderr,
		"kv: bench: %lu puts in %.3f s (%.0f puts/s, each forced), %lu "
		"write-backs\n",
		n, dt, dt > 0 ? (double)n / dt : 0.0, wbs);
	return 0;
}

static int fail_op(const char *what, const char *key, int err)
{
	if (err == -EEXIST)
		fprintf(stderr, "kv: %s %s: another stored key has the same 64-bit hash\n", what,
			key);
	else
		fprintf(stderr, "kv: %s %s: %s\n", what, key, delog_strerror(err));
	return 1;
}

/* `kv DBDIR`: a self-test of the round trip, for smoke tests of a build.  Works on a
 * new or an existing store (it only touches the keys "alpha" and "beta"). */
static int selftest(const char *dir)
{
	struct kv kv;
	const struct ent *e;
	size_t live;
	int bad = 0;

	kv_open(&kv, dir);
	if (kv_op(&kv, 'P', "alpha", "1") || kv_op(&kv, 'P', "beta", "2") ||
	    kv_op(&kv, 'P', "alpha", "3") || kv_op(&kv, 'D', "beta", NULL))
		bad++;
	live = kv.mt.live;
	if (kv_close(&kv))
		bad++;
	/* replayed from the log */
	kv_open(&kv, dir);
	e = mt_get(&kv.mt, "alpha", 5);
	if (!e || strcmp(e->val, "3") || mt_get(&kv.mt, "beta", 4) || kv.mt.live != live)
		bad++;
	if (writeback(&kv) || kv_close(&kv))
		bad++;
	/* from the data file */
	kv_open(&kv, dir);
	e = mt_get(&kv.mt, "alpha", 5);
	if (!e || strcmp(e->val, "3") || mt_get(&kv.mt, "beta", 4) || kv.mt.live != live)
		bad++;
	if (kv_close(&kv))
		bad++;
	printf(bad ? "kv: FAILED\n" : "kv: ok\n");
	return bad ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: kv DBDIR put KEY VALUE | get KEY | del KEY | dump | bench N\n"
			"       kv DBDIR              (self-test)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct kv kv;
	const char *cmd;
	int rc = 0, err;

	if (argc == 2)
		return selftest(argv[1]);
	if (argc < 3)
		usage();
	cmd = argv[2];
	if (!((!strcmp(cmd, "put") && argc == 5) ||
	      ((!strcmp(cmd, "get") || !strcmp(cmd, "del") || !strcmp(cmd, "bench")) && argc == 4) ||
	      (!strcmp(cmd, "dump") && argc == 3)))
		usage();
	if (!strcmp(cmd, "bench")) {
		char *end;

		errno = 0;
		if (!strtoul(argv[3], &end, 10) || *end || errno)
			usage();
	}
	if ((!strcmp(cmd, "put") || !strcmp(cmd, "get") || !strcmp(cmd, "del")) &&
	    (!argv[3][0] || strlen(argv[3]) > MAX_KEY))
		usage();

	kv_open(&kv, argv[1]);
	if (!strcmp(cmd, "put")) {
		if ((err = kv_op(&kv, 'P', argv[3], argv[4])))
			rc = fail_op("put", argv[3], err);
	} else if (!strcmp(cmd, "get")) {
		const struct ent *e = mt_get(&kv.mt, argv[3], strlen(argv[3]));

		if (e) {
			printf("%s\n", e->val);
		} else {
			fprintf(stderr, "kv: %s: not found\n", argv[3]);
			rc = 1;
		}
	} else if (!strcmp(cmd, "del")) {
		if (!mt_get(&kv.mt, argv[3], strlen(argv[3]))) {
			fprintf(stderr, "kv: %s: not found\n", argv[3]);
			rc = 1;
		} else if ((err = kv_op(&kv, 'D', argv[3], NULL))) {
			rc = fail_op("del", argv[3], err);
		}
	} else if (!strcmp(cmd, "dump")) {
		kv_dump(&kv, stdout);
	} else {
		rc = bench(&kv, strtoul(argv[3], NULL, 10));
	}
	if ((err = kv_close(&kv))) {
		fprintf(stderr, "kv: close: %s\n", delog_strerror(err));
		rc = 1;
	}
	return rc;
}
