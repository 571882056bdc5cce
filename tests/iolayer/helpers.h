/*
 * helpers.h - shared scaffolding for the iolayer tests: which backend the conformance
 * suite runs on, scratch devices (a zero-filled O_DIRECT file for the real backends, an
 * in-memory disk for sim), seeded data patterns, and small synchronous wrappers.
 *
 * Helpers that can fail call cr_assert themselves, so they may only be used on the test's
 * own thread (Criterion's assertions are not thread-safe).  Worker threads record
 * failures in plain variables and the test thread asserts on them.
 */
#ifndef DELOG_TESTS_IOLAYER_HELPERS_H
#define DELOG_TESTS_IOLAYER_HELPERS_H

#include "io.h"
#include "io_sim.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Per-test time limit: a hang fails the test instead of blocking the run. */
#define T_TIMEOUT 60

/* The backend under test: $DELOG_TEST_BACKEND, default "sim". */
const char *t_backend(void);
bool t_backend_is_sim(void);
/* Directory for O_DIRECT scratch files: $DELOG_TEST_DIR, else the configured default. */
const char *t_test_dir(void);

struct t_dev_cfg {
	const char *backend;  /* NULL: t_backend() */
	uint64_t bytes;       /* device size; 0: 64 MiB */
	unsigned max_segs;    /* 0: default */
	unsigned queue_depth; /* 0: default */
	/* sim only */
	uint32_t sector; /* 0: 4096 */
	uint64_t seed;
	enum iol_sim_latency latency;
	bool hold;
	bool in_order;
	bool write_through;
	bool inline_run;
	const void *image;
};

struct t_dev {
	struct iol_dev *dev;
	const struct iol_geom *geom;
	char path[PATH_MAX]; /* scratch file (unlinked once open), "" for sim */
	bool sim;
};

/* Open a scratch device for the current test; asserts on failure. */
void t_dev_open(struct t_dev *td, const struct t_dev_cfg *cfg);
void t_dev_close(struct t_dev *td);

/* Create @path as a zero-filled, fully written file of @bytes bytes.  Returns 0 or -errno. */
int t_make_file(const char *path, uint64_t bytes);
/* A per-test scratch file name under t_test_dir(). */
void t_scratch_path(char *out, size_t len, const char *tag);

/* Deterministic pattern: the byte at device offset o depends on (seed, o). */
void t_fill(void *buf, size_t len, uint64_t devoff, uint64_t seed);
/* Offset in @buf of the first byte that differs from the pattern, or -1 when all match. */
ssize_t t_check(const void *buf, size_t len, uint64_t devoff, uint64_t seed);
/* Is every byte of @buf equal to @c? */
bool t_all(const void *buf, size_t len, unsigned char c);

/* Aligned buffer for @td (asserts). */
void *t_buf(const struct t_dev *td, size_t len);

/*
 * One request, synchronously: @len bytes at @off split into segments of @seg bytes
 * (0: one segment).  Returns iol_submit_wait's result; *@moved (may be NULL) gets req->bytes.
 */
int t_io(struct iol_dev *dev, iol_opf_t opf, uint64_t off, void *buf, size_t len, size_t seg,
	 size_t *moved);
int t_flush(struct iol_dev *dev);

void t_sleep_ms(unsigned ms);
/* Wait until *@v >= @target or @ms pass; returns whether it got there. */
bool t_wait_uint(atomic_uint *v, unsigned target, unsigned ms);
/* Wait until iol_sim_pending(@dev) >= @n or @ms pass. */
bool t_wait_pending(struct iol_dev *dev, size_t n, unsigned ms);

/* Is @dir's filesystem tmpfs? */
bool t_is_tmpfs(const char *dir);

#endif
