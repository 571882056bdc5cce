/*
 * driver.c - a standalone main() for the fuzz targets, used wherever libFuzzer is not
 * (gcc builds, or clang without -DDELOG_FUZZ=ON), so that the harnesses are built and
 * exercised by the ordinary test suite (ctest fuzz.record, fuzz.recover: the corpus and
 * --runs 2000) and, in CI's ASan+UBSan stage, run under the sanitizers too.
 *
 *   fuzz_<target> [--runs N] [--seed S] [--max-len L] [--write-seeds DIR] [PATH...]
 *
 * Runs, in this order: the target's built-in seeds (fuzz_seed), every PATH (a file, or
 * every regular file of a directory, in name order), then N pseudo-random inputs
 * (default 1000) from the fixed seed S (default 1): each either random bytes or a
 * mutation (byte flips, overwrites, insertions, erasures, truncation, splicing) of a
 * seed or corpus input.  The stream depends only on S and the inputs, so a failure
 * reproduces; the input that failed is written to ./crash-driver-<target> before the
 * target runs it, so after an abort() that file holds it.
 * --write-seeds DIR writes the built-in seeds as DIR/seed-NN and exits (this made the
 * committed corpus).  The interface is deliberately close to libFuzzer's for the part
 * that matters here: `fuzz_<target> FILE` runs one input either way.
 *
 * This is not a fuzzer (no coverage feedback); it is a regression and smoke driver.
 * Exit status: 0, 2 for a usage error, 1 for an unreadable PATH; a failing input
 * aborts.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

#define FZ_MAX_INPUT (1u << 20)

/* Inputs kept for mutation: the seeds and the corpus files. */
struct pool {
	uint8_t **buf;
	size_t *len;
	size_t n, cap;
};

static const char *target_name = "target";

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t rnd_below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static void pool_add(struct pool *p, const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return;
	memcpy(copy, data, len);
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		uint8_t **b = realloc(p->buf, cap * sizeof(*b));
		size_t *l = b ? realloc(p->len, cap * sizeof(*l)) : NULL;

		if (b)
			p->buf = b;
		if (!b || !l) {
			free(copy);
			return;
		}
		p->len = l;
		p->cap = cap;
	}
	p->buf[p->n] = copy;
	p->len[p->n++] = len;
}

/* Run one input from an exactly sized heap copy (so ASan sees reads past its end). */
static void run_one(const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	char name[256];
	FILE *f;

	FZ_CHECK(copy);
	memcpy(copy, data, len);
	snprintf(name, sizeof(name), "crash-driver-%s", target_name);
	f = fopen(name, "wb");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
}

static int read_file(const char *path, uint8_t *buf, size_t *len)
{
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	*len = fread(buf, 1, FZ_MAX_INPUT, f);
	fclose(f);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run PATH (a file, or each regular file of a directory in name order); 0 or -errno. */
static int run_path(const char *path, struct pool *pool, uint8_t *buf, size_t *files)
{
	struct stat st;
	char **names = NULL;
	size_t n = 0, cap = 0, len = 0;
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		err = read_file(path, buf, &len);
		if (!err) {
			run_one(buf, len);
			pool_add(pool, buf, len);
			++*files;
		}
		return err;
	}
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*nn));

			if (!nn) {
				err = -ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = malloc(strlen(path) + strlen(de->d_name) + 2);
		if (!names[n]) {
			err = -ENOMEM;
			break;
		}
		sprintf(names[n++], "%s/%s", path, de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (!err && !stat(names[i], &st) && S_ISREG(st.st_mode) &&
		    !read_file(names[i], buf, &len)) {
			run_one(buf, len);
			pool_add(pool, buf, len);
			++*files;
		}
		free(names[i]);
	}
	free(names);
	return err;
}

/* One pseudo-random input into @buf: random bytes, or a mutated pool entry. */
static size_t make_input(const struct pool *pool, uint8_t *buf, size_t max_len)
{
	size_t len, edits;

	if (!pool->n || rnd_below(8) == 0) {
		len = rnd_below(max_len + 1);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		return len;
	}
	len = rnd_below(pool->n);
	memcpy(buf, pool->buf[len], pool->len[len] < max_len ? pool->len[len] : max_len);
	len = pool->len[len] < max_len ? pool->len[len] : max_len;
	edits = 1 + rnd_below(8);
	for (size_t e = 0; e < edits; e++) {
		size_t at = rnd_below(len + 1), k;

		switch (rnd_below(7)) {
		case 0: /* flip a bit */
			if (len)
				buf[rnd_below(len)] ^= (uint8_t)(1u << rnd_below(8));
			break;
		case 1: /* overwrite a byte with an interesting value */
			if (len) {
				static const uint8_t v[] = { 0, 1, 0x7f, 0x80, 0xff, 0x10, 0x20 };

				buf[rnd_below(len)] = v[rnd_below(sizeof(v))];
			}
			break;
		case 2: /* overwrite a byte */
			if (len)
				buf[rnd_below(len)] = (uint8_t)rnd();
			break;
		case 3: /* insert random bytes */
			k = 1 + rnd_below(16);
			if (len + k <= max_len) {
				memmove(buf + at + k, buf + at, len - at);
				for (size_t i = 0; i < k; i++)
					buf[at + i] = (uint8_t)rnd();
				len += k;
			}
			break;
		case 4: /* erase bytes */
			k = rnd_below(len - at + 1);
			memmove(buf + at, buf + at + k, len - at - k);
			len -= k;
			break;
		case 5: /* truncate */
			len = at;
			break;
		default: { /* splice in a piece of another pool entry */
			size_t o = rnd_below(pool->n), from = rnd_below(pool->len[o] + 1);

			k = rnd_below(pool->len[o] - from + 1);
			if (at + k > max_len)
				k = max_len - at;
			memcpy(buf + at, pool->buf[o] + from, k);
			if (at + k > len)
				len = at + k;
			break;
		}
		}
	}
	return len;
}

static int write_seeds(const char *dir, uint8_t *buf)
{
	char path[4096];
	size_t len;
	unsigned i;

	for (i = 0; (len = fuzz_seed(i, buf, FZ_MAX_INPUT)) > 0; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed-%02u", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, len, f) != len) {
			fprintf(stderr, "%s: cannot write %s\n", target_name, path);
			if (f)
				fclose(f);
			return 1;
		}
		fclose(f);
	}
	printf("%s: wrote %u seeds to %s\n", target_name, i, dir);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--runs N] [--seed S] [--max-len L] [--write-seeds DIR] [PATH...]\n"
		"  Runs the built-in seeds, each PATH (file or directory), then N pseudo-random\n"
		"  inputs (default 1000) from seed S (default 1), at most L bytes (default 4096).\n",
		target_name);
}

int main(int argc, char **argv)
{
	unsigned long long runs = 1000, seed = 1;
	size_t max_len = 4096, files = 0, seeds = 0, len;
	const char *seed_dir = NULL;
	struct pool pool = { 0 };
	struct timespec t0, t1;
	uint8_t *buf;
	int npaths = 0, rc = 0;
	char **paths;

	target_name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	paths = calloc((size_t)argc, sizeof(*paths));
	buf = malloc(FZ_MAX_INPUT);
	FZ_CHECK(paths && buf);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--runs") && i + 1 < argc) {
			runs = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(a, "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(a, "--max-len") && i + 1 < argc) {
			max_len = (size_t)strtoull(argv[++i], NULL, 0);
			if (max_len > FZ_MAX_INPUT)
				max_len = FZ_MAX_INPUT;
		} else if (!strcmp(a, "--write-seeds") && i + 1 < argc) {
			seed_dir = argv[++i];
		} else if (a[0] == '-') {
			fprintf(stderr, "%s: unknown option %s\n", target_name, a);
			usage(stderr);
			return 2;
		} else {
			paths[npaths++] = argv[i];
		}
	}
	if (seed_dir)
		return write_seeds(seed_dir, buf);

	rng_state = seed;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; (len = fuzz_seed(i, buf, FZ_MAX_INPUT)) > 0; i++, seeds++) {
		run_one(buf, len);
		pool_add(&pool, buf, len);
	}
	for (int i = 0; i < npaths; i++) {
		int err = run_path(paths[i], &pool, buf, &files);

		if (err) {
			fprintf(stderr, "%s: %s: %s\n", target_name, paths[i], strerror(-err));
			rc = 1;
		}
	}
	for (unsigned long long r = 0; r < runs; r++)
		run_one(buf, make_input(&pool, buf, max_len));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: %zu seeds, %zu files, %llu random inputs (seed %llu) in %.2f s: all passed\n",
	       target_name, seeds, files, runs, seed,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	{
		char name[256];

		snprintf(name, sizeof(name), "crash-driver-%s", target_name);
		remove(name);
	}
	for (size_t i = 0; i < pool.n; i++)
		free(pool.buf[i]);
	free(pool.buf);
	free(pool.len);
	free(paths);
	free(buf);
	return rc;
}
