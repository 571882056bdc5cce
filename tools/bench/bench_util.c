/*
 * bench_util.c - what several `delog bench` workloads share (declared in bench.h, below
 * "what several workloads share"): their common option values, the start gate and
 * measured window of a point's client threads with the measuring thread's hold loop,
 * latency samples, the raw O_DIRECT write + fdatasync baseline and its pre-written
 * region, a target formatted once for a delog log, and the disk's own flush counter
 * (/sys/block/DISK/stat) that every benchmark prints beside delog_stats' count.
 *
 * Why here and not in each workload: bench_commit.c, bench_peers.c and the flush-policy
 * workloads (bench_dbench.c, bench_fsmark.c, bench_compare.c) compare numbers with each
 * other (docs/BENCH.md, docs/FLUSH-POLICIES.md), so a point must be measured the same
 * way in each: the same gate, warm-up and window, the same raw baseline, the same option
 * ranges and messages.  bench.c itself owns the command line and the target.
 */
#include "bench.h"

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- options ---- */

bool bench_is_sim(const struct bench *b)
{
	return b->o.backend && !strcmp(b->o.backend, "sim");
}

int bench_parse_time(const char *arg, double *out)
{
	char *end;
	double t;

	errno = 0;
	t = strtod(arg, &end);
	if (end == arg || *end || errno || !(t >= 0.05 && t <= 3600))
		return bench_usage_error("--time: '%s' is not a number of seconds from 0.05 "
					 "to 3600",
					 arg);
	*out = t;
	return 0;
}

int bench_parse_clients(const char *arg, unsigned max_list, unsigned max, bool unique,
			unsigned *out, unsigned *n_out)
{
	char buf[256], *save, *tok;
	unsigned n = 0;
	uint64_t v;

	if (strlen(arg) >= sizeof(buf))
		return bench_usage_error("--clients: list too long: '%s'", arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max_list || parse_count(tok, 1, max, &v))
			return bench_usage_error("--clients: '%s' is not a list of up to %u counts "
						 "from 1 to %u",
						 arg, max_list, max);
		for (unsigned i = 0; unique && i < n; i++)
			if (out[i] == v)
				return bench_usage_error("--clients: '%s' names %s twice", arg,
							 tok);
		out[n++] = (unsigned)v;
	}
	if (!n)
		return bench_usage_error("--clients: empty list '%s'", arg);
	*n_out = n;
	return 0;
}

int bench_parse_policies(const char *arg, enum delog_flush_policy *out, unsigned *n_out)
{
	char buf[256], *save, *tok;
	unsigned n = 0;

	if (strlen(arg) >= sizeof(buf))
		return bench_usage_error("--policy: list too long: '%s'", arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum delog_flush_policy p;

		if (n == BENCH_NR_POLICIES || delog_flush_policy_parse(tok, &p))
			return bench_usage_error("--policy: '%s' is not a list of sync, async, "
						 "single, none",
						 arg);
		for (unsigned i = 0; i < n; i++)
			if (out[i] == p)
				return bench_usage_error("--policy: '%s' names %s twice", arg, tok);
		out[n++] = p;
	}
	if (!n)
		return bench_usage_error("--policy: empty list '%s'", arg);
	*n_out = n;
	return 0;
}

int bench_parse_count(const char *name, const char *arg, unsigned min, unsigned max, unsigned *out)
{
	uint64_t v;

	if (parse_count(arg, min, max, &v))
		return bench_usage_error("--%s: '%s' is not a count from %u to %u", name, arg, min,
					 max);
	*out = (unsigned)v;
	return 0;
}

unsigned bench_safe_policies(enum delog_flush_policy *out)
{
	out[0] = DELOG_FLUSH_SYNC;
	out[1] = DELOG_FLUSH_ASYNC;
	out[2] = DELOG_FLUSH_SINGLE;
	return 3;
}

int bench_parse_log_size(const char *arg, uint64_t *out)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < BENCH_MIN_LOG_SIZE || v % BENCH_RAW_BLOCK)
		return bench_usage_error("--size: '%s' is not a multiple of 4K of at "
					 "least 16M",
					 arg);
	*out = v;
	return 0;
}

int bench_parse_logbufs(const char *arg, unsigned *out)
{
	return bench_parse_count("logbufs", arg, DELOG_LOGBUFS_MIN, DELOG_LOGBUFS_MAX, out);
}

int bench_parse_logbsize(const char *arg, uint32_t *out)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < DELOG_LOGBSIZE_MIN || v > DELOG_LOGBSIZE_MAX ||
	    (v & (v - 1)))
		return bench_usage_error("--logbsize: '%s' is not a power of two from 16K "
					 "to 256K",
					 arg);
	*out = (uint32_t)v;
	return 0;
}

int bench_parse_item_size(const char *arg, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < 1 || v > max)
		return bench_usage_error("--item-size: '%s' is not a size from 1 byte to %u%s", arg,
					 max % (1u << 20) ? max >> 10 : max >> 20,
					 max % (1u << 20) ? "K" : "M");
	*out = (uint32_t)v;
	return 0;
}

int bench_parse_items(const char *arg, uint32_t max, uint32_t *out)
{
	return bench_parse_count("items", arg, 1, max, out);
}

int bench_parse_plot(const char *arg, const char **out)
{
	size_t n = strlen(arg);

	/* The name goes into a gnuplot script between single quotes. */
	if (n < 5 || strcmp(arg + n - 4, ".png") || strpbrk(arg, "'\"\\\n"))
		return bench_usage_error("--plot: '%s' is not a FILE.png (without quotes or "
					 "backslashes)",
					 arg);
	*out = arg;
	return 0;
}

unsigned bench_max_clients(const unsigned *clients, unsigned n)
{
	unsigned m = 0;

	for (unsigned i = 0; i < n; i++)
		if (clients[i] > m)
			m = clients[i];
	return m;
}

/* ---- time ---- */

void bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

uint64_t bench_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

void bench_release(delog *log)
{
	uint64_t d = delog_durable_seq(log);

	if (d)
		(void)delog_release(log, d);
}

void bench_hold(struct bench *b, delog *log, uint64_t ns, const atomic_bool *stop)
{
	uint64_t end = now_ns() + ns, now;

	while ((now = now_ns()) < end && !atomic_load(stop) && !bench_interrupted(b)) {
		if (log)
			bench_release(log);
		bench_sleep_ns(end - now < BENCH_RELEASE_NS ? end - now : BENCH_RELEASE_NS);
	}
}

uint64_t bench_warmup_ns(double time_s)
{
	uint64_t w = (uint64_t)(time_s * 1e9) / 10;

	return w > BENCH_MIN_WARMUP_NS ? w : BENCH_MIN_WARMUP_NS;
}

/* ---- the start gate and the window ---- */

void bench_gate_init(struct bench_gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->ready = 0;
	g->gate = 0;
	atomic_store(&g->stop, false);
	atomic_store(&g->win_start, 0);
	atomic_store(&g->win_end, 0);
}

void bench_gate_destroy(struct bench_gate *g)
{
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
}

bool bench_gate_wait(struct bench_gate *g)
{
	bool go;

	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->cond);
	while (!g->gate)
		pthread_cond_wait(&g->cond, &g->lock);
	go = g->gate > 0;
	pthread_mutex_unlock(&g->lock);
	return go;
}

void bench_gate_open(struct bench_gate *g, int how, unsigned wait_for)
{
	pthread_mutex_lock(&g->lock);
	while (how > 0 && g->ready < wait_for)
		pthread_cond_wait(&g->cond, &g->lock);
	g->gate = how;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

bool bench_in_window(struct bench_gate *g, uint64_t t)
{
	uint64_t ws = atomic_load_explicit(&g->win_start, memory_order_acquire), we;

	if (!ws || t <= ws)
		return false;
	we = atomic_load_explicit(&g->win_end, memory_order_acquire);
	return !we || t <= we;
}

void bench_gate_measure(struct bench_gate *g, struct bench *b, delog *log, double time_s,
			void (*edge)(void *arg, int end), void *arg, struct bench_span *sp)
{
	bench_hold(b, log, bench_warmup_ns(time_s), &g->stop);
	if (edge)
		edge(arg, 0);
	sp->c0 = bench_cpu_ns();
	sp->ws = now_ns();
	atomic_store_explicit(&g->win_start, sp->ws, memory_order_release);
	bench_hold(b, log, (uint64_t)(time_s * 1e9), &g->stop);
	sp->we = now_ns();
	atomic_store_explicit(&g->win_end, sp->we, memory_order_release);
	sp->c1 = bench_cpu_ns();
	if (edge)
		edge(arg, 1);
}

void bench_span_rates(const struct bench_span *sp, uint64_t ops, uint64_t bytes_per_op,
		      double *window_s, double *ops_per_s, double *mb_per_s, double *cpu_s)
{
	*window_s = (double)(sp->we - sp->ws) / 1e9;
	*ops_per_s = (double)ops / *window_s;
	*mb_per_s = *ops_per_s * (double)bytes_per_op / 1e6;
	*cpu_s = (double)(sp->c1 - sp->c0) / 1e9;
}

/* ---- the durable commit ---- */

#define KEY_MASK ((1ull << 40) - 1)

uint64_t bench_commit_key(unsigned client, uint64_t *counter)
{
	return (uint64_t)client << 40 | ((*counter)++ & KEY_MASK);
}

uint64_t bench_tx_reservation(uint32_t items, uint32_t item_size)
{
	return (uint64_t)items * (item_size + DELOG_ITEM_OVERHEAD);
}

int bench_delog_commit(delog *log, uint32_t items, uint32_t item_size, unsigned client,
		       uint64_t *counter, unsigned char *buf, bool force)
{
	delog_tx *tx;
	int err;

	err = delog_tx_begin(log, bench_tx_reservation(items, item_size), 0, &tx);
	if (err)
		return err;
	for (uint32_t k = 0; k < items && !err; k++) {
		uint64_t key = bench_commit_key(client, counter);

		buf[0] = (unsigned char)key;
		err = delog_tx_log(tx, key, buf, item_size);
	}
	if (err) {
		delog_tx_abort(tx);
		return err;
	}
	return force ? delog_tx_commit_force(tx, NULL) : delog_tx_commit(tx, NULL);
}

int bench_client_buf(unsigned char **buf, size_t len, unsigned client)
{
	if (posix_memalign((void **)buf, 4096, len))
		return -ENOMEM;
	memset(*buf, 0x20 + (int)(client % 64), len);
	return 0;
}

/* ---- latency samples ---- */

void bench_sample_add(struct bench_samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		uint64_t *p = realloc(s->v, cap * sizeof(*p));

		if (!p)
			return; /* keep the samples so far; the commit count stays exact */
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = ns;
}

void bench_samples_take(struct bench_samples *all, struct bench_samples *from)
{
	if (from->n && !all->oom && all->n + from->n > all->cap) {
		size_t cap = all->cap * 2 > all->n + from->n ? all->cap * 2 : all->n + from->n;
		uint64_t *p = realloc(all->v, cap * sizeof(*p));

		if (p) {
			all->v = p;
			all->cap = cap;
		} else {
			all->oom = true;
		}
	}
	if (from->n && !all->oom) {
		memcpy(all->v + all->n, from->v, from->n * sizeof(*from->v));
		all->n += from->n;
	}
	bench_samples_free(from);
}

void bench_samples_stats(struct bench_samples *s, struct lat_stats *out)
{
	lat_stats_compute(s->v, s->n, out);
	if (!s->n)
		out->median_us = out->p99_us = out->max_us = out->mean_us = out->min_us = NAN;
}

void bench_samples_free(struct bench_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ---- client threads ---- */

static struct bench_client *client_at(void *clients, size_t size, unsigned i)
{
	return (struct bench_client *)((char *)clients + (size_t)i * size);
}

int bench_clients_start(struct bench_gate *g, void *clients, size_t size, unsigned n, size_t buflen,
			void *(*fn)(void *), char *msg, size_t len)
{
	unsigned started = 0;
	int err = 0;

	for (unsigned i = 0; i < n && !err; i++) {
		struct bench_client *c = client_at(clients, size, i);

		c->id = i;
		c->key = 1;
		err = bench_client_buf(&c->buf, buflen, i);
	}
	for (unsigned i = 0; i < n && !err; i++) {
		struct bench_client *c = client_at(clients, size, i);
		int e = pthread_create(&c->th, NULL, fn, c);

		if (e) {
			err = -e;
			snprintf(msg, len, "cannot start client thread %u of %u: %s", i + 1, n,
				 strerror(e));
			break;
		}
		c->started = true;
		started++;
	}
	bench_gate_open(g, err ? -1 : 1, started);
	return err;
}

int bench_clients_join(struct bench_gate *g, void *clients, size_t size, unsigned n,
		       uint64_t *commits, struct bench_samples *all, struct bench_client **failed)
{
	int err = 0;

	*failed = NULL;
	atomic_store(&g->stop, true);
	for (unsigned i = 0; i < n; i++) {
		struct bench_client *c = client_at(clients, size, i);

		if (c->started) {
			pthread_join(c->th, NULL);
			*commits += c->commits;
			if (c->err && !err) {
				err = c->err;
				*failed = c;
			}
		}
		bench_samples_take(all, &c->lat);
		free(c->buf);
		c->buf = NULL;
	}
	bench_gate_destroy(g);
	return err;
}

bool bench_client_done(struct bench_gate *g, struct bench_client *c, uint64_t t0, int err)
{
	uint64_t t1 = now_ns();

	if (err) {
		c->err = err;
		atomic_store(&g->stop, true);
		return false;
	}
	if (bench_in_window(g, t1)) {
		c->commits++;
		bench_sample_add(&c->lat, t1 - t0);
	}
	return true;
}

/* ---- the raw baseline ---- */

uint64_t bench_raw_record(uint64_t payload)
{
	return (payload + BENCH_RAW_BLOCK - 1) / BENCH_RAW_BLOCK * BENCH_RAW_BLOCK;
}

void bench_raw_layout(struct bench_raw *r, uint64_t base, uint64_t area, uint64_t rec,
		      unsigned clients)
{
	r->base = base;
	r->rec = rec;
	r->share = area / clients / rec * rec;
}

int bench_write_sync(int fd, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite(fd, buf, len, (off_t)off);

	if (n != (ssize_t)len)
		return n < 0 ? -errno : -EIO;
	return fdatasync(fd) ? -errno : 0;
}

int bench_raw_commit(const struct bench_raw *r, unsigned id, uint64_t *next, const void *buf)
{
	uint64_t off = r->base + id * r->share + ((*next)++ * r->rec) % r->share;

	return bench_write_sync(r->fd, buf, r->rec, off);
}

int bench_prewrite(struct bench *b, uint64_t off, uint64_t len)
{
	const size_t chunk = 4u << 20;
	void *buf = NULL;
	int fd, err = 0;

	fd = open(b->t.path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0 || posix_memalign(&buf, 4096, chunk)) {
		err = fd < 0 ? -errno : -ENOMEM;
	} else {
		memset(buf, 0, chunk);
		for (uint64_t o = 0; o < len && !err; o += chunk) {
			ssize_t n = pwrite(fd, buf, chunk, (off_t)(off + o));

			if (n != (ssize_t)chunk)
				err = n < 0 ? -errno : -EIO;
		}
		if (!err && fdatasync(fd))
			err = -errno;
	}
	if (err)
		bench_fail(b, err, b->t.path, "cannot pre-write the baselines' region: %s",
			   strerror(-err));
	free(buf);
	if (fd >= 0)
		close(fd);
	return err;
}

/* ---- the log's target ---- */

struct delog_options bench_log_opts(const struct bench *b, enum delog_flush_policy p,
				    unsigned flags, unsigned logbufs, uint32_t logbsize,
				    uint64_t log_size)
{
	struct delog_options lo = {
		.size = sizeof(lo),
		.backend = b->o.backend,
		.flush = p,
		.flags = flags,
		.logbufs = logbufs,
		.logbsize = logbsize,
		.create_size = log_size,
	};

	return lo;
}

int bench_log_prepare(struct bench *b, uint64_t bytes, const char **fs_type, uint64_t pre_off,
		      uint64_t pre_len, const struct delog_options *lo, double *format_s)
{
	delog *log;
	uint64_t t0;
	int err;

	if (bench_target_open(b, bytes))
		return -1;
	if (fs_type) {
		struct iol_dev_opts dopts;
		struct iol_dev *dev;
		char msg[512];

		bench_dev_opts(b, &dopts, msg, sizeof(msg));
		err = iol_dev_open(b->t.path, &dopts, &dev);
		if (err) {
			bench_fail(b, err, msg[0] ? NULL : b->t.path, "%s",
				   msg[0] ? msg : tool_strerror(err));
			return err;
		}
		*fs_type = iol_dev_geom(dev)->fs_type; /* a static string */
		if (!b->o.backend)
			b->o.backend = iol_dev_backend(dev);
		iol_dev_close(dev);
	}
	if (pre_len && bench_prewrite(b, pre_off, pre_len))
		return -1;
	bench_progress(b, "formatting %s", b->t.path);
	t0 = now_ns();
	err = delog_open(b->t.path, lo, &log);
	if (!err)
		err = delog_close(log);
	*format_s = (double)(now_ns() - t0) / 1e9;
	if (err)
		bench_fail(b, err, b->t.path, "cannot format the log: %s", tool_strerror(err));
	return err;
}

void bench_out_target(struct bench *b, const char *fs_type, const char *backend)
{
	bench_out(b, "  target      %s%s, backend %s\n",
		  b->t.is_blockdev ? "block device" : "file on ", b->t.is_blockdev ? "" : fs_type,
		  backend ? backend : "auto");
}

void bench_json_counts(struct json *j, const char *key, const unsigned *v, unsigned n)
{
	json_arr_begin(j, key);
	for (unsigned i = 0; i < n; i++)
		json_u64(j, NULL, v[i]);
	json_arr_end(j);
}

void bench_json_lat(struct json *j, const struct lat_stats *lat)
{
	json_dbl(j, "lat_p50_us", lat->median_us);
	json_dbl(j, "lat_p99_us", lat->p99_us);
	json_dbl(j, "lat_max_us", lat->max_us);
	json_dbl(j, "lat_mean_us", lat->mean_us);
}

/* ---- the disk's own counters ---- */

void bench_disk_find(const char *path, struct bench_disk *d)
{
	char link[64], real[PATH_MAX], part[PATH_MAX + 16];
	struct stat st;
	dev_t dev;
	char *slash;

	memset(d, 0, sizeof(*d));
	d->idle_before = d->idle_after = NAN;
	if (stat(path, &st)) {
		snprintf(d->why, sizeof(d->why), "cannot stat %.100s: %s", path, strerror(errno));
		return;
	}
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	if (!major(dev)) {
		snprintf(d->why, sizeof(d->why),
			 "no block device under it (device %u:%u: an "
			 "overlay, network or memory filesystem)",
			 major(dev), minor(dev));
		return;
	}
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	if (!realpath(link, real)) {
		snprintf(d->why, sizeof(d->why), "%s: %s", link, strerror(errno));
		return;
	}
	snprintf(part, sizeof(part), "%s/partition", real);
	if (!access(part, F_OK) && (slash = strrchr(real, '/')))
		*slash = '\0';
	slash = strrchr(real, '/');
	snprintf(d->name, sizeof(d->name), "%.63s", slash ? slash + 1 : real);
	if ((size_t)snprintf(d->path, sizeof(d->path), "%s/stat", real) >= sizeof(d->path)) {
		snprintf(d->why, sizeof(d->why), "the sysfs path of %s is too long", d->name);
		return;
	}
	d->ok = true;
	if (!bench_disk_read(d).ok) {
		d->ok = false;
		snprintf(d->why, sizeof(d->why),
			 "%.80s has no flush field (Linux < 5.5) or "
			 "cannot be read",
			 d->path);
	}
}

void bench_disk_target(const struct bench *b, struct bench_disk *d)
{
	if (bench_is_sim(b)) {
		memset(d, 0, sizeof(*d));
		d->idle_before = d->idle_after = NAN;
		snprintf(d->why, sizeof(d->why), "the in-memory disk (--backend sim) has none");
		return;
	}
	bench_disk_find(b->t.path, d);
}

struct bench_diskcount bench_disk_read(const struct bench_disk *d)
{
	struct bench_diskcount c = { 0 };
	unsigned long long f[17];
	FILE *fp;

	if (!d->ok || !(fp = fopen(d->path, "re")))
		return c;
	/* 17 fields since Linux 5.5: the 16th is flush requests completed */
	if (fscanf(fp,
		   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		   "%llu %llu %llu",
		   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10],
		   &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]) == 17) {
		c.ok = true;
		c.sectors_written = f[6];
		c.flushes = f[15];
	}
	fclose(fp);
	return c;
}

double bench_disk_flushes(const struct bench_diskcount *c0, const struct bench_diskcount *c1)
{
	return c0->ok && c1->ok ? (double)(c1->flushes - c0->flushes) : NAN;
}

double bench_per(double v, uint64_t per)
{
	return per ? v / (double)per : NAN;
}

void bench_disk_idle(struct bench_disk *d, bool after, uint64_t ns)
{
	struct bench_diskcount c0, c1;
	uint64_t t0;

	*(after ? &d->idle_after : &d->idle_before) = NAN;
	if (!d->ok)
		return;
	c0 = bench_disk_read(d);
	t0 = now_ns();
	bench_sleep_ns(ns);
	c1 = bench_disk_read(d);
	if (c0.ok && c1.ok)
		*(after ? &d->idle_after : &d->idle_before) = (double)(c1.flushes - c0.flushes) /
							      ((double)(now_ns() - t0) / 1e9);
}

void bench_out_disk(struct bench *b, const struct bench_disk *d)
{
	double worst = fmax(d->idle_before, d->idle_after);

	if (!d->ok) {
		bench_out(b, "  disk        no flush counter: %s\n", d->why);
		return;
	}
	bench_out(b,
		  "  disk        %s: flush requests from %s (other processes' flushes count "
		  "too)",
		  d->name, d->path);
	if (!isnan(d->idle_before) || !isnan(d->idle_after))
		bench_out(b, "; with the bench idle: %.1f/s before the run, %.1f/s after it",
			  d->idle_before, d->idle_after);
	bench_out(b, "\n");
	if (worst > BENCH_IDLE_WARN)
		bench_out(b,
			  "  WARNING     other processes flush this disk (%.0f/s while the bench "
			  "was idle): the disk's counts include theirs\n",
			  worst);
}

void bench_json_disk(struct json *j, const struct bench_disk *d)
{
	json_obj_begin(j, "disk");
	json_str(j, "name", d->ok ? d->name : NULL);
	json_str(j, "stat", d->ok ? d->path : NULL);
	json_str(j, "why", d->ok ? NULL : d->why);
	json_dbl(j, "idle_flushes_per_s_before", d->idle_before);
	json_dbl(j, "idle_flushes_per_s_after", d->idle_after);
	json_obj_end(j);
}

/* ---- gnuplot (--plot) ---- */

bool bench_have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/gnuplot", (int)n, n ? p : ".");
		if (!access(buf, X_OK))
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

void bench_gnuplot_name(char *dst, size_t len, const char *src)
{
	size_t k = 0;

	for (; *src && k + 1 < len; src++)
		dst[k++] = strchr("'\"\\\n", *src) ? '_' : *src;
	dst[k] = '\0';
}

int bench_plot_files(struct bench *b, char *dat, char *gp, size_t len, FILE **f)
{
	const char *tmp = getenv("TMPDIR");
	int fd, err;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if ((size_t)snprintf(dat, len, "%s/delog-plot-XXXXXX", tmp) >= len) {
		bench_fail(b, -ENAMETOOLONG, NULL, "--plot: $TMPDIR is too long");
		return -ENAMETOOLONG;
	}
	memcpy(gp, dat, strlen(dat) + 1);
	*f = NULL;
	fd = mkstemp(dat);
	if (fd < 0 || !(*f = fdopen(fd, "w"))) {
		err = -errno;
		bench_fail(b, err, NULL, "--plot: cannot create a temporary file: %s",
			   strerror(-err));
		if (fd >= 0) {
			close(fd);
			unlink(dat);
		}
		return err;
	}
	fd = mkstemp(gp);
	if (fd < 0) {
		err = -errno;
		bench_fail(b, err, NULL, "--plot: cannot create a temporary file: %s",
			   strerror(-err));
		fclose(*f);
		*f = NULL;
		unlink(dat);
		return err;
	}
	close(fd);
	return 0;
}

int bench_gnuplot(struct bench *b, const char *gp, const char *out)
{
	int status = 0, err = 0;
	struct stat st;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execlp("gnuplot", "gnuplot", gp, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		err = -errno;
		bench_fail(b, err, NULL, "--plot: cannot run gnuplot: %s", strerror(errno));
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		err = -ENOENT;
		bench_fail(b, err, NULL,
			   "--plot: gnuplot is not installed (apt-get install "
			   "gnuplot-nox)");
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) || stat(out, &st) || !st.st_size) {
		err = -EIO;
		bench_fail(b, err, out, "gnuplot failed to draw the plot");
	}
	return err;
}
