/*
 * errors.c - how libdelog-raft's io maps delog's failures (raft.io, Criterion).
 *
 *   errors/shutdown     a write error shuts the log down: the queued append completes
 *                       with RAFT_IOERR, later calls fail with RAFT_IOERR, and errmsg
 *                       names the original error (the sim disk's fault injection)
 *   errors/bad_record   a log that delog recovers but whose records do not replay (an
 *                       unknown record kind) is refused by load with RAFT_CORRUPT, and
 *                       nothing is returned
 */
#include "helpers.h"

#include "engine.h"
#include "io.h"
#include "io_sim.h"

static int open_dev(void *arg, const char *path, const struct delog_options *o, delog **out)
{
	(void)path;
	return engine_open_dev(arg, o, out);
}

static void closed_cb(struct raft_io *io)
{
	*(volatile bool *)io->data = true;
}

struct one {
	struct raft_io_append req;
	volatile bool done;
	int status;
};

static void one_cb(struct raft_io_append *req, int status)
{
	struct one *o = req->data;

	o->status = status;
	o->done = true;
}

Test(errors, shutdown)
{
	struct iol_sim_opts so = { .size = sizeof(so), .dev_bytes = 4096 + (4u << 20) };
	struct iol_dev_opts dopts = { .size = sizeof(dopts), .backend = "sim", .sim = &so };
	struct iol_sim_fault f = { .op = IOL_OP_WRITE, .nth = 1, .persistent = true };
	char *dir = th_mkdir();
	struct iol_dev *dev = NULL;
	struct raft_io io = { 0 };
	struct th_loaded l;
	struct one a = { .req = { .data = &a } };
	struct raft_entry e;
	volatile bool closed = false;
	uv_loop_t loop;

	cr_assert_eq(iol_dev_open(NULL, &dopts, &dev), 0);
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(draft_init(&io, &loop, dir, NULL, NULL, open_dev, dev), 0, "%s", io.errmsg);
	cr_assert_eq(io.init(&io, 1, "sim"), 0);
	cr_assert_eq(io.load(&io, &l.term, &l.vote, &l.snap, &l.start, &l.ents, &l.n), 0, "%s",
		     io.errmsg);
	cr_assert_eq(io.set_term(&io, 2), 0, "%s", io.errmsg);

	cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
	th_fill(&e, 1, 0, 100);
	cr_assert_eq(io.append(&io, &a.req, &e, 1, one_cb), 0, "%s", io.errmsg);
	cr_assert(th_run_until(&loop, &a.done, 10000), "append never completed");
	cr_expect_eq(a.status, RAFT_IOERR, "append after a write error: status %d", a.status);
	cr_expect(strstr(io.errmsg, "shut down") != NULL, "errmsg: %s", io.errmsg);
	cr_expect_eq(io.set_term(&io, 3), RAFT_IOERR, "set_term on a shut-down log");
	cr_expect(strstr(io.errmsg, "EIO") != NULL, "errmsg names the cause: %s", io.errmsg);
	raft_free(e.buf.base);

	io.data = (void *)&closed;
	io.close(&io, closed_cb);
	cr_assert(th_run_until(&loop, &closed, 10000));
	delog_raft_close(&io);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	iol_sim_fault_clear(dev);
	iol_dev_close(dev);
	th_rmdir(dir);
}

Test(errors, bad_record)
{
	char *dir = th_mkdir();
	char path[4200];
	struct delog_options o = { .size = sizeof(o) };
	unsigned char junk[9] = { 99 };
	struct th_node n;
	struct th_loaded l;
	delog_tx *tx;
	delog *log;

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	cr_assert_eq(n.io.set_term(&n.io, 4), 0);
	cr_assert_eq(th_append(&n, 1, 3, 0, 64), 0);
	th_close(&n);

	/* a record of a kind the io never writes, under a key above all of its own */
	snprintf(path, sizeof(path), "%s/delog.log", dir);
	cr_assert_eq(delog_open(path, &o, &log), 0);
	cr_assert_eq(delog_tx_begin(log, 128, 0, &tx), 0);
	cr_assert_eq(delog_tx_log(tx, 1ull << 60, junk, sizeof(junk)), 0);
	cr_assert_eq(delog_tx_commit_force(tx, NULL), 0);
	cr_assert_eq(delog_close(log), 0);

	cr_assert_eq(th_open(&n, dir, NULL), 0, "%s", n.io.errmsg);
	memset(&l, 0, sizeof(l));
	cr_expect_eq(th_load(&n, &l), RAFT_CORRUPT, "%s", n.io.errmsg);
	cr_expect(strstr(n.io.errmsg, "unknown record kind") != NULL, "errmsg: %s", n.io.errmsg);
	cr_expect_null(l.ents);
	cr_expect_eq(l.n, 0);
	th_close(&n);
	th_rmdir(dir);
}
