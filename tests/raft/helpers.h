/*
 * helpers.h - scaffolding of the raft io tests (io.c, crash.c): an io on a libuv loop
 * in a scratch directory, and waits on the loop that are bounded in time.
 *
 * Why it is built this way:
 *  - The io's callbacks run on its loop only, so every wait here runs the loop
 *    (UV_RUN_NOWAIT, with short sleeps) until a flag flips or a deadline passes: a test fails, never hangs.
 *  - Each io is opened on the public entry (delog_raft_init with C-Raft's TCP transport,
 *    never started, so no socket is opened) unless a test needs draft_init's hooks.
 *  - Entries carry payloads derived from (index, generation), so a reload can be
 *    checked entry by entry without keeping copies.
 */
#ifndef DELOG_TESTS_RAFT_HELPERS_H
#define DELOG_TESTS_RAFT_HELPERS_H

#include <criterion/criterion.h>
#include <delog.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "delog_raft.h"
#include "draft.h"

#ifndef DELOG_TEST_DIR_DEFAULT
#define DELOG_TEST_DIR_DEFAULT "."
#endif

static inline uint64_t th_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run @loop until *flag is true or @ms pass; returns *flag. */
static inline bool th_run_until(uv_loop_t *loop, volatile bool *flag, unsigned ms)
{
	uint64_t end = th_now_ms() + ms;

	/* NOWAIT and a short sleep: never blocks past the deadline, whatever is pending */
	while (!*flag && th_now_ms() < end)
		uv_run(loop, UV_RUN_NOWAIT), usleep(200);
	uv_run(loop, UV_RUN_NOWAIT);
	return *flag;
}

static inline char *th_mkdir(void)
{
	const char *base = getenv("DELOG_TEST_DIR");
	char *dir = malloc(4096);

	cr_assert_not_null(dir);
	snprintf(dir, 4096, "%s/raft-XXXXXX", base && *base ? base : DELOG_TEST_DIR_DEFAULT);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
	return dir;
}

static inline void th_rmdir(char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(dir);
}

struct th_node {
	uv_loop_t loop;
	struct raft_uv_transport tr;
	struct raft_io io;
	bool has_tr;
	volatile bool closed;
};

static inline int th_open(struct th_node *n, const char *dir, const struct delog_raft_options *o)
{
	int rv;

	memset(n, 0, sizeof(*n));
	cr_assert_eq(uv_loop_init(&n->loop), 0);
	cr_assert_eq(raft_uv_tcp_init(&n->tr, &n->loop), 0);
	n->has_tr = true;
	rv = delog_raft_init(&n->io, &n->loop, dir, &n->tr, o);
	if (rv)
		return rv;
	return n->io.init(&n->io, 1, "127.0.0.1:9");
}

static inline void th_closed_cb(struct raft_io *io)
{
	struct th_node *n = io->data;

	n->closed = true;
}

static inline void th_close(struct th_node *n)
{
	n->io.data = n;
	n->io.close(&n->io, th_closed_cb);
	cr_assert(th_run_until(&n->loop, &n->closed, 10000), "io close callback never ran");
	delog_raft_close(&n->io);
	raft_uv_tcp_close(&n->tr);
	/* let every handle finish closing, then the loop must be empty */
	for (int i = 0; i < 100 && uv_loop_alive(&n->loop); i++)
		uv_run(&n->loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&n->loop), 0, "handles left on the loop");
}

/* ---- entries ---- */

static inline void th_fill(struct raft_entry *e, raft_index index, uint64_t gen, size_t len)
{
	unsigned char *p = raft_malloc(len ? len : 1);

	cr_assert_not_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)((index * 131 + gen * 7 + i) & 0xff);
	if (len >= 16) {
		memcpy(p, &index, 8);
		memcpy(p + 8, &gen, 8);
	}
	e->term = 1 + gen;
	e->type = RAFT_COMMAND;
	e->buf.base = p;
	e->buf.len = len;
	e->batch = NULL;
}

static inline bool th_is(const struct raft_entry *e, raft_index index, uint64_t gen, size_t len)
{
	const unsigned char *p = e->buf.base;

	if (e->term != 1 + gen || e->type != RAFT_COMMAND || e->buf.len != len)
		return false;
	for (size_t i = 16; i < len; i++)
		if (p[i] != (unsigned char)((index * 131 + gen * 7 + i) & 0xff))
			return false;
	return len < 16 || (memcmp(p, &index, 8) == 0 && memcmp(p + 8, &gen, 8) == 0);
}

struct th_append {
	struct raft_io_append req;
	volatile bool done;
	int status;
};

static inline void th_append_cb(struct raft_io_append *req, int status)
{
	struct th_append *a = req->data;

	a->status = status;
	a->done = true;
}

/* Append entries [from, to] of generation @gen (len bytes each) and wait for the
 * callback; returns its status (or the call's error, negated). */
static inline int th_append(struct th_node *n, raft_index from, raft_index to, uint64_t gen,
			    size_t len)
{
	unsigned cnt = (unsigned)(to - from + 1);
	struct raft_entry *e = calloc(cnt, sizeof(*e));
	struct th_append a = { .req = { .data = &a } };
	int rv;

	cr_assert_not_null(e);
	for (unsigned i = 0; i < cnt; i++)
		th_fill(&e[i], from + i, gen, len);
	rv = n->io.append(&n->io, &a.req, e, cnt, th_append_cb);
	if (rv == 0) {
		cr_assert(!a.done, "append callback ran inside append");
		cr_assert(th_run_until(&n->loop, &a.done, 10000), "append callback never ran");
	}
	for (unsigned i = 0; i < cnt; i++)
		raft_free(e[i].buf.base);
	free(e);
	return rv ? -rv : a.status;
}

struct th_loaded {
	raft_term term;
	raft_id vote;
	struct raft_snapshot *snap;
	raft_index start;
	struct raft_entry *ents;
	size_t n;
};

static inline int th_load(struct th_node *n, struct th_loaded *l)
{
	memset(l, 0, sizeof(*l));
	return n->io.load(&n->io, &l->term, &l->vote, &l->snap, &l->start, &l->ents, &l->n);
}

static inline void th_loaded_free(struct th_loaded *l)
{
	void *batch = NULL;

	for (size_t i = 0; i < l->n; i++)
		if (l->ents[i].batch != batch)
			raft_free(batch = l->ents[i].batch);
	raft_free(l->ents);
	if (l->snap) {
		raft_configuration_close(&l->snap->configuration);
		for (unsigned i = 0; i < l->snap->n_bufs; i++)
			raft_free(l->snap->bufs[i].base);
		raft_free(l->snap->bufs);
		raft_free(l->snap);
	}
	memset(l, 0, sizeof(*l));
}

#endif
