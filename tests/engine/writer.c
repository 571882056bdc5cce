/*
 * writer.c - one writer per log, and what others see of it: the writer lock
 * (iolayer/lock.c), atomic create (engine/delog.c U6), and readers of a live log
 * (journal/recover.c R13).
 *
 * What it proves:
 *  - lock/same_process: a second writing open of a file held by a handle of the same
 *    process fails -EBUSY, its error info naming this pid; closing the first lets the
 *    next writing open succeed;
 *  - lock/forked_child: a child forked after the open (its own open of the path) is
 *    refused -EBUSY while the parent holds the log;
 *  - lock/sigkill: a child that opened, committed and forced, then was killed with
 *    SIGKILL leaves a log the next writing open takes at once, with the acknowledged
 *    checkpoint recovered;
 *  - lock/rdonly_beside_writer: a read-only open of a held log works and sees what the
 *    writer forced before it;
 *  - lock/block_device (root and losetup; skipped otherwise): the same on a loop device,
 *    a second writer refused -EBUSY (O_EXCL and the lock), a reader not; with the device
 *    held by this process (iol_blk_claim, as delog bench and probe hold it) one writer
 *    opens, a second one and one in a forked child are refused;
 *  - create/killed: a child doing a CREATE open of an 8 MiB log killed with SIGKILL at
 *    delays rising from 0 to 40 ms: after every kill the path holds nothing or a log, the
 *    next CREATE open succeeds, and the temporaries of the killed creates are gone
 *    after it;
 *  - create/no_clobber: a file that appears at the path while a log is made under its
 *    temporary is left byte for byte as it was (publishing fails -EEXIST);
 *  - create/stale_temporaries: a create removes the temporaries of its name whose
 *    creator is dead and unlocked, and leaves a live creator's, a locked one and another
 *    name's;
 *  - live/no_wrap, live/wrap: a writer thread commits and forces in a loop (on a 4 MiB
 *    log whose checkpoints it releases, so the log wraps many times; and without
 *    releases on a larger one) while the test thread does read-only opens, a fixed
 *    number: none fails, and each recovers at least the highest sequence the writer's
 *    force acknowledged before the open began;
 *  - live/retry: a live recovery on the sim disk whose one read returns a flipped bit
 *    (damage gone on the next read, as a record changing under the read is), at every
 *    read index of a clean run: it starts over and recovers the whole log; a flip while
 *    handing over is -EAGAIN; a flip on every read is -EAGAIN after JRNL_LIVE_TRIES
 *    runs; not live, the same flips fail it;
 *  - live/step4: a hole near the head with valid records after it vouching beyond it
 *    (what a reader sees when the writer filled them after it read the hole) is
 *    DELOG_ECORRUPT not live, and live ends the log at the hole on the first run, in
 *    place and through a copy.
 *
 * No test depends on timing: the kills of create/killed come at rising delays, but what
 * is asserted holds whenever the kill lands.
 */
#include "helpers.h"
#include "jrnl.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define T_LOG (4 * T_MiB) /* the smallest log */

static char t_path[4096];
static char *t_dir;

static void t_cleanup(void)
{
	DIR *d;
	struct dirent *de;
	char p[8192];

	if (!t_dir)
		return;
	d = opendir(t_dir);
	while (d && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", t_dir, de->d_name);
			unlink(p);
		}
	}
	if (d)
		closedir(d);
	rmdir(t_dir);
	free(t_dir);
	t_dir = NULL;
}

/* A scratch directory and the log path in it. */
static const char *t_setup(const char *tag)
{
	t_dir = t_mkdtemp(tag);
	snprintf(t_path, sizeof(t_path), "%s/log", t_dir);
	return t_path;
}

static int t_open(const char *path, unsigned flags, delog **log, struct delog_error_info *ei,
		  struct delog_recovery *rec)
{
	struct delog_options o = { .size = sizeof(o),
				   .flags = flags,
				   .create_size = T_LOG,
				   .error = ei,
				   .recovery = rec };

	if (ei) {
		memset(ei, 0, sizeof(*ei));
		ei->size = sizeof(*ei);
	}
	return delog_open(path, &o, log);
}

/* Commit and force one item; its checkpoint's sequence. */
static uint64_t t_force1(delog *log, uint64_t key)
{
	uint64_t seq = 0;
	int err = t_commit1(log, key, key, 0, &seq, true);

	cr_assert_eq(err, 0, "commit_force: %s", delog_strerror(err));
	return seq;
}

/* ---- the writer lock ---- */

Test(lock, same_process, .fini = t_cleanup)
{
	const char *path = t_setup("lock");
	struct delog_error_info ei;
	char pid[32];
	delog *a, *b;
	int err;

	cr_assert_eq(t_open(path, DELOG_OPEN_CREATE, &a, NULL, NULL), 0);
	err = t_open(path, DELOG_OPEN_CREATE, &b, &ei, NULL);
	cr_assert_eq(err, -EBUSY, "second writer: %s", delog_strerror(err));
	cr_assert_null(b);
	cr_assert_eq(ei.code, -EBUSY);
	snprintf(pid, sizeof(pid), "process %d", (int)getpid());
	cr_expect(strstr(ei.message, pid), "the message names the holder: %s", ei.message);
	err = t_open(path, 0, &b, NULL, NULL);
	cr_assert_eq(err, -EBUSY, "second writer without CREATE: %s", delog_strerror(err));
	cr_assert_eq(delog_close(a), 0);
	err = t_open(path, 0, &b, NULL, NULL);
	cr_assert_eq(err, 0, "after close: %s", delog_strerror(err));
	cr_assert_eq(delog_close(b), 0);
}

Test(lock, forked_child, .fini = t_cleanup)
{
	const char *path = t_setup("lock");
	delog *a;
	pid_t pid;
	int st;

	cr_assert_eq(t_open(path, DELOG_OPEN_CREATE, &a, NULL, NULL), 0);
	t_force1(a, 1);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		delog *b = NULL;
		int err = t_open(path, 0, &b, NULL, NULL);

		_exit(err == -EBUSY ? 0 : err == 0 ? 1 : 2);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the child's writing open was not refused -EBUSY (status %d)", st);
	cr_assert_eq(delog_close(a), 0);
}

Test(lock, sigkill, .fini = t_cleanup)
{
	const char *path = t_setup("lock");
	struct delog_recovery rec;
	uint64_t acked = 0;
	int fds[2], st, err;
	delog *log;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		uint64_t seq = 0;

		close(fds[0]);
		if (t_open(path, DELOG_OPEN_CREATE, &log, NULL, NULL) ||
		    t_commit1(log, 7, 7, 0, &seq, true))
			_exit(1);
		if (write(fds[1], &seq, sizeof(seq)) != sizeof(seq))
			_exit(1);
		for (;;)
			pause(); /* killed holding the log */
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], &acked, sizeof(acked)), (ssize_t)sizeof(acked),
		     "the child did not open and force");
	close(fds[0]);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st));
	err = t_open(path, 0, &log, NULL, &rec);
	cr_assert_eq(err, 0, "open after the writer was killed: %s", delog_strerror(err));
	cr_expect_geq(rec.last_seq, acked);
	cr_assert_eq(delog_close(log), 0);
}

Test(lock, rdonly_beside_writer, .fini = t_cleanup)
{
	const char *path = t_setup("lock");
	struct delog_recovery rec;
	uint64_t seq;
	delog *w, *r;
	int err;

	cr_assert_eq(t_open(path, DELOG_OPEN_CREATE, &w, NULL, NULL), 0);
	seq = t_force1(w, 3);
	err = t_open(path, DELOG_OPEN_RDONLY, &r, NULL, &rec);
	cr_assert_eq(err, 0, "read-only beside a writer: %s", delog_strerror(err));
	cr_expect_geq(rec.last_seq, seq);
	cr_assert_eq(delog_close(r), 0);
	/* The reader took nothing: the writer goes on. */
	t_force1(w, 4);
	cr_assert_eq(delog_close(w), 0);
}

/* The loop device lock/block_device attached, detached by its .fini. */
static char loop_dev[256];

static bool t_run(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	bool ok;

	if (!f)
		return false;
	if (out && len) {
		out[0] = 0;
		if (fgets(out, (int)len, f))
			out[strcspn(out, "\n")] = 0;
	}
	ok = pclose(f) == 0;
	return ok;
}

static void loop_cleanup(void)
{
	char cmd[512];

	if (loop_dev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d '%s' 2>/dev/null", loop_dev);
		(void)t_run(cmd, NULL, 0);
		loop_dev[0] = 0;
	}
	t_cleanup();
}

Test(lock, block_device, .fini = loop_cleanup)
{
	char cmd[8192], img[4096];
	struct delog_error_info ei;
	struct delog_recovery rec;
	delog *w, *b, *r;
	uint64_t seq;
	pid_t pid;
	int err, st;

	if (geteuid() != 0)
		cr_skip_test("needs root to attach a loop device");
	if (!t_run("losetup --version >/dev/null 2>&1", NULL, 0))
		cr_skip_test("losetup is not available");
	t_setup("lockblk");
	snprintf(img, sizeof(img), "%s/img", t_dir);
	snprintf(cmd, sizeof(cmd), "truncate -s %llu '%s'",
		 (unsigned long long)(DELOG_SB_BYTES + T_LOG), img);
	cr_assert(t_run(cmd, NULL, 0));
	snprintf(cmd, sizeof(cmd), "losetup --find --show --direct-io=on '%s' 2>/dev/null", img);
	if (!t_run(cmd, loop_dev, sizeof(loop_dev)) || strncmp(loop_dev, "/dev/", 5)) {
		loop_dev[0] = 0;
		cr_skip_test("losetup could not attach a loop device (no loop support here?)");
	}
	err = t_open(loop_dev, DELOG_OPEN_FORMAT, &w, NULL, NULL);
	cr_assert_eq(err, 0, "format %s: %s", loop_dev, delog_strerror(err));
	seq = t_force1(w, 5);
	err = t_open(loop_dev, 0, &b, &ei, NULL);
	cr_assert_eq(err, -EBUSY, "second writer on %s: %s", loop_dev, delog_strerror(err));
	snprintf(cmd, sizeof(cmd), "process %d", (int)getpid());
	cr_expect(strstr(ei.message, cmd), "the message names the holder: %s", ei.message);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		delog *c = NULL;

		_exit(t_open(loop_dev, 0, &c, NULL, NULL) == -EBUSY ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked writer was not refused");
	err = t_open(loop_dev, DELOG_OPEN_RDONLY, &r, NULL, &rec);
	cr_assert_eq(err, 0, "read-only beside the writer: %s", delog_strerror(err));
	cr_expect_geq(rec.last_seq, seq);
	cr_assert_eq(delog_close(r), 0);
	cr_assert_eq(delog_close(w), 0);
	err = t_open(loop_dev, 0, &w, NULL, &rec);
	cr_assert_eq(err, 0, "reopen after close: %s", delog_strerror(err));
	cr_expect_geq(rec.last_seq, seq);
	cr_assert_eq(delog_close(w), 0);

	/* A process that holds the device itself (delog bench, probe) still opens one
	 * writer, and only one; another process is refused by the hold. */
	{
		int hold = iol_blk_claim(loop_dev);

		cr_assert_geq(hold, 0, "iol_blk_claim: %s", strerror(-hold));
		err = t_open(loop_dev, 0, &w, NULL, NULL);
		cr_assert_eq(err, 0, "a writer beside this process's hold: %s",
			     delog_strerror(err));
		cr_assert_eq(t_open(loop_dev, 0, &b, NULL, NULL), -EBUSY);
		pid = fork();
		cr_assert_neq(pid, -1);
		if (!pid) {
			delog *c = NULL;

			_exit(t_open(loop_dev, 0, &c, NULL, NULL) == -EBUSY ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked writer was not refused");
		cr_assert_eq(delog_close(w), 0);
		iol_blk_release(hold);
	}
}

/* ---- atomic create ---- */

/* How many temporaries of a create ("." NAME ".delog-new.") are in @dir. */
static int t_temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += strstr(de->d_name, ".delog-new.") != NULL;
	closedir(d);
	return n;
}

Test(create, killed, .timeout = 120, .fini = t_cleanup)
{
	const char *path = t_setup("create");
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 8 * T_MiB };
	unsigned left = 0;

	for (unsigned us = 0; us <= 40000; us += 1000) {
		struct timespec ts = { 0, (long)us * 1000 };
		struct delog_error_info ei = { .size = sizeof(ei) };
		struct stat st;
		delog *log;
		pid_t pid;
		int err, status;

		pid = fork();
		cr_assert_neq(pid, -1);
		if (!pid) {
			_exit(delog_open(path, &o, &log) ? 1 : 0);
			/* not closed: the kill or the exit comes first */
		}
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status) || (WIFEXITED(status) && !WEXITSTATUS(status)),
			  "the child's create failed (status %d)", status);
		left += WIFSIGNALED(status) && t_temporaries(t_dir) > 0;
		/* Nothing, or a log: whatever the moment, the next CREATE open succeeds. */
		o.error = &ei;
		err = delog_open(path, &o, &log);
		o.error = NULL;
		cr_assert_eq(err, 0, "CREATE open after a create killed at %u us (file %s): %s: %s",
			     us, stat(path, &st) ? "absent" : "present", delog_strerror(err),
			     ei.message);
		cr_assert_eq(delog_close(log), 0);
		/* That create removed every temporary a killed one left. */
		cr_assert_eq(t_temporaries(t_dir), 0, "a killed create's temporary is left (%u us)",
			     us);
		cr_assert_eq(unlink(path), 0);
	}
	cr_log_info("create/killed: %u of 41 kills left a temporary", left);
}

/* ---- readers of a live log ---- */

/* Forces the writer may do per read-only open: a few records, far from a lap of the
 * log, so that no open is overtaken by a whole lap (which would make it fail -EAGAIN:
 * the records it was reading are gone). */
#define LIVE_PACE 4

struct live {
	delog *log;
	bool release; /* release each forced checkpoint: the log wraps */
	atomic_bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	uint64_t acked;  /* the highest sequence a force acknowledged (under mu) */
	uint64_t forces; /* forces done (under mu) ... */
	uint64_t opens;  /* ... at most LIVE_PACE per open the reader began, and one more
			  * batch: the writer never laps the log under a single open */
	bool done;       /* the writer stopped: the log is full, or stop was set */
	int err;
};

static void *live_writer(void *arg)
{
	struct live *lv = arg;
	int err = 0;

	for (uint64_t key = 1; !atomic_load(&lv->stop); key++) {
		struct t_payload p = t_pl(key, key, 0);
		uint64_t seq = 0;
		delog_tx *tx;

		pthread_mutex_lock(&lv->mu);
		while (lv->forces >= (lv->opens + 1) * LIVE_PACE && !atomic_load(&lv->stop))
			pthread_cond_wait(&lv->cond, &lv->mu);
		pthread_mutex_unlock(&lv->mu);
		if (atomic_load(&lv->stop))
			break;

		err = delog_tx_begin(lv->log, T_RES(1), DELOG_TX_NOWAIT, &tx);
		if (err == -EAGAIN && !lv->release) {
			err = 0; /* full: the writer stops here */
			break;
		}
		if (err == -EAGAIN)
			continue; /* the release frees space once the push completes */
		if (!err && (err = delog_tx_log(tx, key, &p, sizeof(p))))
			delog_tx_abort(tx);
		if (!err)
			err = delog_tx_commit_force(tx, &seq);
		if (!err && lv->release && seq > 1)
			err = delog_release(lv->log, seq - 1);
		if (err)
			break;
		pthread_mutex_lock(&lv->mu);
		lv->acked = seq;
		lv->forces++;
		pthread_cond_broadcast(&lv->cond);
		pthread_mutex_unlock(&lv->mu);
	}
	pthread_mutex_lock(&lv->mu);
	lv->err = err;
	lv->done = true;
	pthread_cond_broadcast(&lv->cond);
	pthread_mutex_unlock(&lv->mu);
	return NULL;
}

struct live_cb {
	uint64_t next, count;
	bool bad;
};

static int live_cb(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		   size_t n)
{
	struct live_cb *c = arg;

	(void)it;
	(void)n;
	if (c->count && ck->seq != c->next)
		c->bad = true;
	c->next = ck->seq + 1;
	c->count++;
	return 0;
}

/* @opens read-only opens of a log a writer thread commits and forces to meanwhile; each
 * must succeed and recover at least what was acknowledged before it began. */
static void live_run(uint64_t log_bytes, bool release, unsigned opens)
{
	const char *path = t_setup("live");
	struct live lv = { .release = release };
	struct delog_options wo = { .size = sizeof(wo),
				    .flags = DELOG_OPEN_CREATE,
				    .create_size = log_bytes };
	uint64_t last = 0, live_opens = 0;
	unsigned head_cycle = 0;
	pthread_t th;
	int err;

	pthread_mutex_init(&lv.mu, NULL);
	pthread_cond_init(&lv.cond, NULL);
	err = delog_open(path, &wo, &lv.log);
	cr_assert_eq(err, 0, "writer open: %s", delog_strerror(err));
	cr_assert_eq(pthread_create(&th, NULL, live_writer, &lv), 0);
	for (unsigned i = 0; i < opens; i++) {
		struct delog_error_info ei = { .size = sizeof(ei) };
		struct delog_recovery rec = { 0 };
		struct live_cb cb = { 0 };
		struct delog_options ro = { .size = sizeof(ro),
					    .flags = DELOG_OPEN_RDONLY,
					    .error = &ei,
					    .recovery = &rec };
		uint64_t before;
		bool done;
		delog *r;

		/* Each open begins after the writer acknowledged something new (until it
		 * stops): readers of a log that is moving. */
		pthread_mutex_lock(&lv.mu);
		while (lv.acked == last && !lv.done)
			pthread_cond_wait(&lv.cond, &lv.mu);
		before = last = lv.acked;
		done = lv.done;
		lv.opens++;
		pthread_cond_broadcast(&lv.cond);
		pthread_mutex_unlock(&lv.mu);
		live_opens += !done;
		if (i % 4 == 0) {
			ro.recover = live_cb;
			ro.recover_arg = &cb;
		}
		err = delog_open(path, &ro, &r);
		cr_assert_eq(err, 0, "read-only open %u beside the writer (acked %llu): %s: %s", i,
			     (unsigned long long)before, delog_strerror(err), ei.message);
		cr_assert_geq(rec.last_seq, before,
			      "read-only open %u recovered up to %llu, but %llu was acknowledged "
			      "before it began",
			      i, (unsigned long long)rec.last_seq, (unsigned long long)before);
		cr_assert_eq(delog_durable_seq(r), rec.last_seq);
		head_cycle = (unsigned)(rec.head_lsn >> 32);
		if (ro.recover) {
			cr_assert_not(cb.bad, "open %u: checkpoints handed over out of sequence",
				      i);
			cr_assert(!cb.count || cb.next == rec.last_seq + 1,
				  "open %u: the last checkpoint handed over is not last_seq", i);
		}
		cr_assert_eq(delog_close(r), 0);
	}
	pthread_mutex_lock(&lv.mu);
	atomic_store(&lv.stop, true);
	pthread_cond_broadcast(&lv.cond);
	pthread_mutex_unlock(&lv.mu);
	pthread_join(th, NULL);
	cr_assert_eq(lv.err, 0, "the writer failed: %s", delog_strerror(lv.err));
	cr_log_info("live %s: %llu of %u opens while the writer was moving, acked %llu, "
		    "last head in cycle %u",
		    release ? "wrap" : "no_wrap", (unsigned long long)live_opens, opens,
		    (unsigned long long)lv.acked, head_cycle);
	cr_assert_eq(delog_close(lv.log), 0);
	pthread_mutex_destroy(&lv.mu);
	pthread_cond_destroy(&lv.cond);
}

Test(live, wrap, .timeout = 240, .fini = t_cleanup)
{
	live_run(T_LOG, true, 1000);
}

Test(live, no_wrap, .timeout = 240, .fini = t_cleanup)
{
	live_run(8 * T_MiB, false, 300);
}

/* ---- a live run that meets damage starts over (recover.c R13) ---- */

struct rr {
	struct jrnl_report rep;
	uint64_t reads, replayed, last;
	int err;
};

static int rr_replay(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v,
		     size_t n)
{
	struct rr *x = priv;

	(void)v;
	(void)n;
	x->replayed++;
	x->last = ck->seq;
	return 0;
}

/* One read-only recovery of @dev; the reads it made. */
static struct rr rr_run(struct iol_dev *dev, const struct jrnl_geom *g, bool live, bool replay)
{
	struct rr x = { 0 };
	struct jrnl_recover_opts ro = { .read_only = true,
					.live = live,
					.live_in_place = true,
					.priv = &x };
	struct iol_counters a, b;

	if (replay)
		ro.replay = rr_replay;
	iol_dev_counters(dev, &a);
	x.err = jrnl_recover(dev, g, &ro, &x.rep);
	iol_dev_counters(dev, &b);
	x.reads = b.reads - a.reads;
	return x;
}

/*
 * A live run stands for a writer by a read that returns one flipped bit, once (the sim's
 * BITFLIP fault), at each read index of a clean run in turn: damage that is gone when
 * the log is read again, as a record changing under the read is.  Live, every such run
 * ends with the whole log or starts over and ends with it; damage met while handing
 * over fails -EAGAIN, never a damage code; damage that stays (a flip on every read)
 * fails -EAGAIN after JRNL_LIVE_TRIES runs.  Not live, some of the same flips fail the
 * recovery, so the runs that started over are the ones the retry saved.
 */
Test(live, retry)
{
	struct iol_dev *dev = t_sim(DELOG_SB_BYTES + T_LOG, IOL_SIM_LAT_NONE, 1, NULL);
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	unsigned started_over = 0, failed_plain = 0, handed_again = 0;
	struct jrnl_geom g;
	struct rr clean, cleanr, x;
	delog *log;

	o.create_size = T_LOG;
	log = t_open_dev(dev, &o);
	for (uint64_t k = 1; k <= 40; k++)
		t_force1(log, k);
	cr_assert_eq(delog_close(log), 0);
	cr_assert_eq(jrnl_sb_read(dev, &g), 0);
	clean = rr_run(dev, &g, true, false);
	cr_assert_eq(clean.err, 0);
	cleanr = rr_run(dev, &g, true, true);
	cr_assert_eq(cleanr.err, 0);
	cr_assert_eq(cleanr.last, clean.rep.last_seq);
	for (uint64_t n = 1; n <= clean.reads; n++) {
		struct iol_sim_fault f = { .op = IOL_OP_READ,
					   .nth = n,
					   .kind = IOL_SIM_FAULT_BITFLIP };

		cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
		x = rr_run(dev, &g, false, false);
		iol_sim_fault_clear(dev);
		failed_plain += x.err != 0;
		cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
		x = rr_run(dev, &g, true, false);
		iol_sim_fault_clear(dev);
		cr_assert_eq(x.err, 0, "live, a flip at read %llu: %s: %s", (unsigned long long)n,
			     delog_strerror(x.err), x.rep.corrupt_what);
		cr_assert_eq(x.rep.last_seq, clean.rep.last_seq, "live, a flip at read %llu",
			     (unsigned long long)n);
		started_over += x.reads > clean.reads;
	}
	/* With a replay callback, flips in the second pass come after checkpoints were
	 * handed over: -EAGAIN at once, or nothing noticed. */
	for (uint64_t n = clean.reads + 1; n <= cleanr.reads; n++) {
		struct iol_sim_fault f = { .op = IOL_OP_READ,
					   .nth = n,
					   .kind = IOL_SIM_FAULT_BITFLIP };

		cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
		x = rr_run(dev, &g, true, true);
		iol_sim_fault_clear(dev);
		if (x.err) {
			cr_assert_eq(x.err, -EAGAIN, "a flip at read %llu, handing over: %s",
				     (unsigned long long)n, delog_strerror(x.err));
			cr_assert(strstr(x.rep.corrupt_what, "handed over"), "%s",
				  x.rep.corrupt_what);
			handed_again++;
		} else {
			cr_assert_eq(x.last, clean.rep.last_seq);
		}
	}
	{
		struct iol_sim_fault f = { .op = IOL_OP_READ,
					   .nth = 1,
					   .kind = IOL_SIM_FAULT_BITFLIP,
					   .persistent = true };

		cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
		x = rr_run(dev, &g, true, false);
		iol_sim_fault_clear(dev);
	}
	cr_assert_eq(x.err, -EAGAIN, "a flip on every read, live: %s", delog_strerror(x.err));
	cr_assert(strstr(x.rep.corrupt_what, "under each of 8 reads"), "%s", x.rep.corrupt_what);
	/* Through a copy of the log (the default): a flip in the sweep that makes the copy
	 * (where it lands on a record) makes the run read a new copy. */
	{
		struct iol_sim_fault f = { .op = IOL_OP_READ, .kind = IOL_SIM_FAULT_BITFLIP };
		struct jrnl_recover_opts ro = { .read_only = true, .live = true };
		struct jrnl_report rep;
		int err;

		for (f.nth = 1; f.nth <= 2; f.nth++) {
			cr_assert_eq(iol_sim_fault_add(dev, &f), 0);
			err = jrnl_recover(dev, &g, &ro, &rep);
			iol_sim_fault_clear(dev);
			cr_assert_eq(err, 0, "a copy, a flip at read %llu: %s: %s",
				     (unsigned long long)f.nth, delog_strerror(err),
				     rep.corrupt_what);
			cr_assert_eq(rep.last_seq, clean.rep.last_seq);
		}
	}
	cr_log_info("live/retry: %llu reads; not live %u of them failed; live %u started over; "
		    "%u failed handing over; a flip on every read: %s (%s)",
		    (unsigned long long)clean.reads, failed_plain, started_over, handed_again,
		    delog_strerror(x.err), x.rep.corrupt_what);
	cr_assert_gt(failed_plain, 0, "no flip failed a plain run: the test shows nothing");
	cr_assert_gt(started_over, 0);
	iol_dev_close(dev);
}

/* The records recovery verified, for live/step4. */
struct recs {
	struct jrnl_rec_view v[256];
	size_t n;
};

static int recs_add(void *priv, const struct jrnl_rec_view *rec)
{
	struct recs *r = priv;

	if (r->n < 256)
		r->v[r->n++] = *rec;
	return 0;
}

/*
 * Step 4 of a live run (recover.c R13): a hole near the head with valid records after
 * it that say the log was stable beyond it is what a reader sees when the writer filled
 * those records after the hole was read.  Not live it is corruption (DELOG_ECORRUPT);
 * live, the log ends at the hole, in place and through a copy, on the first run.
 */
Test(live, step4)
{
	struct iol_dev *dev = t_sim(DELOG_SB_BYTES + T_LOG, IOL_SIM_LAT_NONE, 2, NULL);
	struct delog_options o = t_opts(DELOG_FLUSH_SYNC);
	struct jrnl_recover_opts ro = { .read_only = true };
	static struct recs recs;
	struct jrnl_report rep, clean;
	struct iol_counters a, b;
	struct jrnl_geom g;
	const struct jrnl_rec_view *hole;
	size_t len;
	void *zero;
	delog *log;
	int err;

	o.create_size = T_LOG;
	log = t_open_dev(dev, &o);
	for (uint64_t k = 1; k <= 40; k++)
		t_force1(log, k);
	cr_assert_eq(delog_close(log), 0);
	cr_assert_eq(jrnl_sb_read(dev, &g), 0);
	ro.on_record = recs_add;
	ro.priv = &recs;
	cr_assert_eq(jrnl_recover(dev, &g, &ro, &clean), 0);
	cr_assert_gt(recs.n, 10);
	/* Zero a record five before the last: later records vouch past it. */
	hole = &recs.v[recs.n - 5];
	len = (size_t)(hole->hdr_sectors + hole->payload_sectors) * g.sector;
	zero = iol_buf_alloc(dev, len);
	memset(zero, 0, len);
	cr_assert_eq(iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), hole->offset, zero, len, NULL), 0);
	free(zero);
	ro = (struct jrnl_recover_opts){ .read_only = true };
	err = jrnl_recover(dev, &g, &ro, &rep);
	cr_assert_eq(err, DELOG_ECORRUPT, "not live: %s", delog_strerror(err));
	cr_assert(strstr(rep.corrupt_what, "past the head"), "%s", rep.corrupt_what);
	for (int copy = 0; copy < 2; copy++) {
		ro = (struct jrnl_recover_opts){ .read_only = true,
						 .live = true,
						 .live_in_place = !copy };
		iol_dev_counters(dev, &a);
		err = jrnl_recover(dev, &g, &ro, &rep);
		iol_dev_counters(dev, &b);
		cr_assert_eq(err, 0, "live (%s): %s: %s", copy ? "a copy" : "in place",
			     delog_strerror(err), rep.corrupt_what);
		cr_assert_eq(rep.head_lsn, hole->lsn, "live: the log ends at the hole");
		cr_assert_lt(rep.last_seq, clean.last_seq);
		if (copy)
			cr_assert_eq(b.bytes_read - a.bytes_read, g.log_start + g.log_size,
				     "live: one copy, one run");
	}
	iol_dev_close(dev);
}

/* ---- atomic create: what it never clobbers, what it cleans ---- */

/* A file that appears at the path while the log is made under its temporary is left as
 * it is: publishing fails -EEXIST. */
Test(create, no_clobber, .fini = t_cleanup)
{
	const char *path = t_setup("create");
	char tmp[4096], msg[256] = "", buf[8] = "";
	struct stat st;
	int fd;

	cr_assert_eq(iol_file_create_tmp(path, T_MiB, 0600, tmp, sizeof(tmp), msg, sizeof(msg)), 0,
		     "%s", msg);
	cr_assert(strstr(tmp, "/.log.delog-new."), "temporary name %s", tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "theirs", 6), 6);
	close(fd);
	cr_assert_eq(iol_file_publish(tmp, path, -1, msg, sizeof(msg)), -EEXIST);
	cr_expect(strstr(msg, "appeared"), "%s", msg);
	fd = open(path, O_RDONLY);
	cr_assert_eq(read(fd, buf, 6), 6);
	close(fd);
	cr_assert_str_eq(buf, "theirs", "the file that appeared was replaced");
	cr_assert_eq(stat(tmp, &st), 0, "the temporary is the caller's to remove");
	unlink(tmp);
}

/* The temporaries a create removes: of the same name, creator dead, no writer lock.  A
 * live creator's, a locked one and another name's stay. */
Test(create, stale_temporaries, .fini = t_cleanup)
{
	const char *path = t_setup("create");
	char dead[4096], alive[4096], other[4096], locked[4096], tmp[4096];
	struct iol_dev_opts io = { .size = sizeof(io), .backend = "psync" };
	struct iol_dev *dev;
	struct stat st;
	pid_t pid;
	int fd;

	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid); /* a pid no process has now */
	snprintf(dead, sizeof(dead), "%s/.log.delog-new.%d.00000001", t_dir, (int)pid);
	snprintf(alive, sizeof(alive), "%s/.log.delog-new.%d.00000002", t_dir, (int)getpid());
	snprintf(other, sizeof(other), "%s/.other.delog-new.%d.00000003", t_dir, (int)pid);
	snprintf(locked, sizeof(locked), "%s/.log.delog-new.%d.00000004", t_dir, (int)pid);
	for (int i = 0; i < 4; i++) {
		const char *p = i == 0 ? dead : i == 1 ? alive : i == 2 ? other : locked;

		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
		cr_assert_eq(ftruncate(fd, T_MiB), 0);
		close(fd);
	}
	/* A writer holds the locked one (as a create in another pid namespace would). */
	cr_assert_eq(iol_dev_open(locked, &io, &dev), 0);
	cr_assert_eq(iol_file_create_tmp(path, T_MiB, 0600, tmp, sizeof(tmp), NULL, 0), 0);
	unlink(tmp);
	cr_expect_neq(stat(dead, &st), 0, "a dead creator's temporary is left");
	cr_expect_eq(stat(alive, &st), 0, "a live creator's temporary was removed");
	cr_expect_eq(stat(other, &st), 0, "another name's temporary was removed");
	cr_expect_eq(stat(locked, &st), 0, "a locked temporary was removed");
	iol_dev_close(dev);
}
