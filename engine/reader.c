/*
 * reader.c - following a log: delog_reader hands over each durable checkpoint once, in
 * order, as the writer (another process, this one, or none yet) makes it durable.
 *
 * A reader owns a read-only device open of the log and never takes the writer lock.
 * Each *round* is a read-only live recovery (journal/recover.c R13) that starts where
 * the last one ended (R15: at the record holding the last COMMIT taken) and hands over
 * only the checkpoints the reader wants next; they are copied into a queue that
 * delog_reader_next empties one at a time.  Which checkpoints are durable comes from
 * the writer's shared page (publish.c), never from what the device shows: a record
 * the reader can read may still be in the device's volatile cache.
 *
 *  (RD1) Only durable checkpoints are handed over: a round takes checkpoints up to the
 *        watermark read before it began, rd_watermark: the page's durable_seq while a
 *        writer has the log or had it (a killed writer's last word stands; a clean
 *        close's too), and with no writer and no page (no writer since the machine
 *        started) the log as it lies.  A writer holding the log without a page (an
 *        older library, no /dev/shm) gives nothing: the reader waits.
 *  (RD2) Once, in order: a round hands over from the reader's next sequence on
 *        (replay_from), each checkpoint must be the one wanted next, and the position
 *        moves only with what was queued; a round that fails queues nothing and
 *        changes nothing (a live writer's progress under the read: -EAGAIN, retried).
 *  (RD3) Behind: the first checkpoint a round offers past the one wanted next means
 *        the tail released the ones between (recovery hands over every unreleased
 *        checkpoint): DELOG_EBEHIND, and the reader stays there.
 *  (RD4) The end: DELOG_ESHUTDOWN only once the page says the writer shut down and
 *        everything up to its durable_seq was handed over; a closed or killed writer
 *        ends nothing.  A superblock whose uuid changed (the log formatted anew) stops
 *        the reader: DELOG_EFOREIGN.
 * Waiting is inotify on the page (publish.c PB2: every change is a write) and on
 * /dev/shm until the page exists; a wait also ends every RD_POLL_MS, for a writer that
 * cannot publish, so nothing depends on an event arriving.  A reader of a device that a
 * writer of this process writes (engine_reader_open_dev: the sim disk, the crash tests)
 * takes its watermark from that writer's delog_durable_seq instead, and polls.
 */
#include "engine.h"
#include "engine_private.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RD_POLL_MS 200
#define RD_DEV_NAP_MS 2
#define RD_SHM_DIR "/dev/shm"

/* A checkpoint taken by a round: its items point into data. */
struct rd_ckpt {
	struct delog_checkpoint ck;
	struct delog_item *items;
	unsigned char *data;
};

struct delog_reader {
	char *path;
	struct iol_dev *dev;
	bool own_dev;
	delog *writer; /* engine_reader_open_dev: the watermark's source */
	struct jrnl_geom geom;
	struct pub_page *pub; /* the writer's page, mapped read-only once it exists */
	ino_t pub_ino;        /* ... and its object (a closed page gives way to a new one) */
	bool pub_counted;     /* counted in pub->watchers (a page it may write) */
	char pub_name[PUB_NAME_MAX];
	int ifd;             /* inotify: the page, and /dev/shm until the page exists */
	uint64_t next;       /* the sequence wanted next; 0: the oldest held */
	uint64_t follow_lsn; /* the record holding the last COMMIT taken (R15) */
	struct rd_ckpt *q;   /* taken, not yet handed over: q[qhead..qn) */
	size_t qn, qhead, qcap;
	struct rd_ckpt cur; /* the one handed over last, valid until the next call */
	int err;            /* a refusal that stopped the reader */
	uint64_t done_to;   /* every checkpoint up to this was handed over, or absent */
};

/* A round in progress: what it may take and what it took. */
struct rd_round {
	struct delog_reader *r;
	uint64_t w;    /* the watermark (RD1) */
	uint64_t next; /* the sequence this round wants next */
	uint64_t lsn;  /* the last COMMIT it took */
	size_t qn0;    /* the queue's length before the round */
	bool behind;
};

static void rd_free_ckpt(struct rd_ckpt *c)
{
	free(c->items);
	free(c->data);
	memset(c, 0, sizeof(*c));
}

/* (RD2, RD3) One checkpoint a round offers: copy it if it is the one wanted next. */
static int rd_take(void *priv, const struct jrnl_ckpt *ck, const struct jrnl_item_view *v, size_t n)
{
	struct rd_round *rr = priv;
	struct delog_reader *r = rr->r;
	struct rd_ckpt *c;
	size_t bytes = 0, off = 0;

	if (ck->seq > rr->w)
		return 0; /* (RD1) not durable yet: a later round takes it */
	if (rr->next && ck->seq != rr->next) {
		if (ck->seq < rr->next)
			return 0;
		rr->behind = true; /* (RD3) */
		return DELOG_EBEHIND;
	}
	if (r->qn == r->qcap) {
		size_t cap = r->qcap ? r->qcap * 2 : 16;
		struct rd_ckpt *q = realloc(r->q, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		r->q = q;
		r->qcap = cap;
	}
	c = &r->q[r->qn];
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++)
		bytes += v[i].len;
	c->items = calloc(n ? n : 1, sizeof(*c->items));
	c->data = malloc(bytes ? bytes : 1);
	if (!c->items || !c->data) {
		rd_free_ckpt(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(c->data + off, v[i].data, v[i].len);
		c->items[i] = (struct delog_item){ v[i].key, c->data + off, v[i].len };
		off += v[i].len;
	}
	c->ck = (struct delog_checkpoint){ .seq = ck->seq, .lsn = ck->commit_lsn, .nitems = n };
	r->qn++;
	rr->next = ck->seq + 1;
	rr->lsn = ck->commit_lsn;
	return 0;
}

/* The log's name in messages. */
static const char *rd_name(const struct delog_reader *r)
{
	return r->path ? r->path : "the log's device";
}

/* Let go of the page, counted out of its watchers first. */
static void rd_unmap_pub(struct delog_reader *r)
{
	if (!r->pub)
		return;
	if (r->pub_counted)
		atomic_fetch_sub(&r->pub->watchers, 1);
	munmap(r->pub, PUB_PAGE_BYTES);
	r->pub = NULL;
	r->pub_counted = false;
}

/* The writer's page, once it exists and is this log's.  A follower that may write the
 * page counts itself among its watchers, so the writer wakes it (publish.c PB2); one
 * that may only read it (another user's writer) is not woken and looks every
 * RD_POLL_MS. */
static void rd_map_pub(struct delog_reader *r)
{
	char path[PUB_NAME_MAX + sizeof(RD_SHM_DIR)];
	struct pub_page *p;
	struct stat st;
	bool rw = true;
	int fd;

	/* An OPEN page is a writer's, live or killed: its word stands.  A closed one gives
	 * way to the page of the next writer, a new object (publish.c PB3). */
	if (r->pub && atomic_load(&r->pub->state) == PUB_OPEN)
		return;
	fd = shm_open(r->pub_name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0 && errno == EACCES) {
		rw = false;
		fd = shm_open(r->pub_name, O_RDONLY | O_CLOEXEC, 0);
	}
	if (fd < 0)
		return;
	/* watched at once: a writer still filling the page in writes it again when done */
	snprintf(path, sizeof(path), RD_SHM_DIR "%s", r->pub_name);
	inotify_add_watch(r->ifd, path, IN_MODIFY);
	/* a page being created has no size yet: reading its mapping would be SIGBUS */
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)PUB_PAGE_BYTES ||
	    (r->pub && st.st_ino == r->pub_ino)) {
		close(fd);
		return;
	}
	p = mmap(NULL, PUB_PAGE_BYTES, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	/* publish.c writes the magic last */
	if (memcmp(p->magic, PUB_MAGIC, sizeof(p->magic)) == 0) {
		atomic_thread_fence(memory_order_acquire);
		if (memcmp(p->uuid, r->geom.uuid, sizeof(p->uuid)) == 0) {
			rd_unmap_pub(r);
			r->pub = p;
			r->pub_ino = st.st_ino;
			/* counted in before the page is read (rd_watermark) */
			if (rw)
				atomic_fetch_add(&p->watchers, 1);
			r->pub_counted = rw;
			return;
		}
	}
	munmap(p, PUB_PAGE_BYTES);
}

/* (RD1) Up to which sequence checkpoints are durable; *@shut: the writer shut down. */
static uint64_t rd_watermark(struct delog_reader *r, bool *shut)
{
	*shut = false;
	if (r->writer) {
		*shut = delog_error(r->writer) != 0;
		return delog_durable_seq(r->writer);
	}
	if (!r->path)
		return UINT64_MAX;
	rd_map_pub(r);
	if (r->pub) {
		*shut = atomic_load(&r->pub->state) == PUB_SHUTDOWN;
		return atomic_load(&r->pub->durable_seq);
	}
	return iol_dev_writer(r->dev) ? 0 : UINT64_MAX;
}

/* (RD4) The superblock still names this log. */
static int rd_same_log(struct delog_reader *r)
{
	struct jrnl_sb_why why;
	struct jrnl_geom g;
	int err = jrnl_sb_read_why(r->dev, &g, &why);

	if (err)
		return error_say(err, "%s: the superblock: %s", rd_name(r), why.what);
	if (memcmp(g.uuid, r->geom.uuid, sizeof(g.uuid)) != 0)
		return error_say(DELOG_EFOREIGN, "%s was formatted anew while it was followed",
				 rd_name(r));
	return 0;
}

/* One round (RD2): take what became durable since the last one.  On failure the queue
 * and the position are as they were. */
static int rd_round(struct delog_reader *r, uint64_t w)
{
	struct rd_round rr = { .r = r, .w = w, .next = r->next, .lsn = r->follow_lsn, .qn0 = r->qn };
	struct jrnl_recover_opts o = { .replay = rd_take,
				       .priv = &rr,
				       .read_only = true,
				       .live = true,
				       .live_in_place = true,
				       .follow_lsn = r->follow_lsn,
				       .replay_from = r->next };
	struct jrnl_report rep;
	int err = rd_same_log(r);

	if (err)
		return err;
	memset(&rep, 0, sizeof(rep));
	err = jrnl_recover(r->dev, &r->geom, &o, &rep);
	if (err) {
		while (r->qn > rr.qn0)
			rd_free_ckpt(&r->q[--r->qn]);
		if (rr.behind)
			return error_say(DELOG_EBEHIND,
					 "%s: checkpoint %llu was released before this reader "
					 "took it (the log's tail passed it)",
					 rd_name(r), (unsigned long long)r->next);
		if (err == rep.corruption)
			return error_say(err, "%s: %s", rd_name(r), rep.corrupt_what);
		return err;
	}
	r->next = rr.next;
	r->follow_lsn = rr.lsn;
	return 0;
}

/* Wait for a change on the page (or for it to appear), at most @ms; drain the events. */
static void rd_wait(struct delog_reader *r, int ms)
{
	struct pollfd pfd = { .fd = r->ifd, .events = POLLIN };
	char buf[4096];

	if (r->ifd < 0) { /* a device reader: no events, short naps */
		if (ms != 0)
			poll(NULL, 0, ms < RD_DEV_NAP_MS ? ms : RD_DEV_NAP_MS);
		return;
	}
	if (ms != 0)
		poll(&pfd, 1, ms);
	while (read(r->ifd, buf, sizeof(buf)) > 0)
		;
}

static int64_t rd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int delog_reader_open(const char *path, const struct delog_reader_options *opts, delog_reader **out)
{
	struct delog_reader_options o = { .size = sizeof(o) };
	struct iol_dev_opts io = { .size = sizeof(io), .read_only = true };
	struct delog_error_info *e;
	struct delog_reader *r;
	struct jrnl_sb_why why;
	char msg[512] = "";
	int err;

	error_enter(__func__);
	if (!out)
		return error_say(-EINVAL, "delog_reader_open: a NULL @out");
	*out = NULL;
	if (opts && opts->size < sizeof(o))
		return error_say(-EINVAL,
				 "delog_reader_options.size %zu: smaller than this library's %zu",
				 opts->size, sizeof(o));
	if (opts)
		memcpy(&o, opts, sizeof(o));
	e = o.error;
	if (e && e->size < sizeof(*e))
		return error_say(-EINVAL, "delog_error_info.size %zu: smaller than %zu", e->size,
				 sizeof(*e));
	if (e) {
		size_t size = e->size;

		memset(e, 0, sizeof(*e));
		e->size = size;
	}
	if (!path || (o.backend && strcmp(o.backend, "sim") == 0)) {
		err = error_say(-EINVAL, "%s",
				path ? "the sim backend's disk has no log to follow" : "no path");
		goto out;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		err = -ENOMEM;
		goto out;
	}
	r->ifd = -1;
	r->own_dev = true;
	r->next = o.from;
	io.backend = o.backend;
	io.errmsg = msg;
	io.errmsg_len = sizeof(msg);
	err = iol_dev_open(path, &io, &r->dev);
	if (err == -EOPNOTSUPP)
		err = DELOG_ENODIRECT;
	if (!err && (err = jrnl_sb_read_why(r->dev, &r->geom, &why)) != 0)
		snprintf(msg, sizeof(msg), "%s: %s", path, why.what);
	if (!err && (r->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		err = -errno;
	if (err) {
		err = error_say(err, "%s", msg);
		delog_reader_close(r);
		goto out;
	}
	if ((err = pub_name(r->geom.uuid, path, r->pub_name)) != 0) {
		err = error_say(err, "%s: stat: %s", path, delog_strerror(err));
		delog_reader_close(r);
		goto out;
	}
	inotify_add_watch(r->ifd, RD_SHM_DIR, IN_CREATE | IN_MOVED_TO);
	rd_map_pub(r);
	*out = r;
out:
	if (e) {
		e->code = err;
		snprintf(e->message, sizeof(e->message), "%s", err ? delog_errmsg() : "");
	}
	return err;
}

int engine_reader_open_dev(struct iol_dev *dev, delog *writer, uint64_t from, delog_reader **out)
{
	struct delog_reader *r;
	struct jrnl_sb_why why;
	int err;

	if (!dev || !out)
		return -EINVAL;
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ifd = -1;
	r->dev = dev;
	r->writer = writer;
	r->next = from;
	err = jrnl_sb_read_why(dev, &r->geom, &why);
	if (err) {
		free(r);
		return error_say(err, "the superblock: %s", why.what);
	}
	*out = r;
	return 0;
}

int delog_reader_next(delog_reader *r, int timeout_ms, struct delog_checkpoint *ckpt,
		      const struct delog_item **items)
{
	int64_t end;
	int err;

	error_enter(__func__);
	if (!r || !ckpt || !items)
		return error_say(-EINVAL, "delog_reader_next: a NULL %s",
				 !r    ? "reader" :
				 !ckpt ? "@ckpt" :
					 "@items");
	end = timeout_ms < 0 ? INT64_MAX : rd_now_ms() + timeout_ms;
	rd_free_ckpt(&r->cur);
	for (;;) {
		bool shut;
		uint64_t w;
		int64_t left;

		if (r->qhead < r->qn) {
			r->cur = r->q[r->qhead++];
			if (r->qhead == r->qn)
				r->qhead = r->qn = 0;
			*ckpt = r->cur.ck;
			*items = r->cur.items;
			return 1;
		}
		if (r->err)
			return error_say(r->err, "the reader stopped: %s", delog_strerror(r->err));
		rd_wait(r, 0); /* drain: a round now sees what the events announced */
		w = rd_watermark(r, &shut);
		if (w && (!r->next || w >= r->next)) {
			err = rd_round(r, w);
			if (err == DELOG_EBEHIND)
				return err;
			if (err && err != -EAGAIN) {
				r->err = err;
				return err;
			}
			if (!err)
				r->done_to = w;
			if (r->qhead < r->qn)
				continue;
		} else if (r->next) {
			r->done_to = r->next - 1;
		}
		/* (RD4) everything up to the shut-down writer's last word was handed over */
		if (shut && r->done_to >= w)
			return error_say(DELOG_ESHUTDOWN,
					 "%s: the writer shut down after an error; every "
					 "checkpoint it made durable (to %llu) was handed over",
					 rd_name(r), (unsigned long long)w);
		left = end - rd_now_ms();
		if (left <= 0)
			return 0;
		rd_wait(r, left < RD_POLL_MS ? (int)left : RD_POLL_MS);
	}
}

int delog_reader_fd(const delog_reader *r)
{
	error_enter(__func__);
	if (!r)
		return error_say(-EINVAL, "delog_reader_fd: a NULL reader");
	if (r->ifd < 0)
		return error_say(-ENOTSUP, "a reader of a device (no path) has no fd: it polls");
	return r->ifd;
}

uint64_t delog_reader_position(const delog_reader *r)
{
	return r ? r->next : 0;
}

int delog_reader_close(delog_reader *r)
{
	if (!r)
		return 0;
	rd_free_ckpt(&r->cur);
	while (r->qhead < r->qn)
		rd_free_ckpt(&r->q[r->qhead++]);
	free(r->q);
	rd_unmap_pub(r);
	if (r->ifd >= 0)
		close(r->ifd);
	if (r->dev && r->own_dev)
		iol_dev_close(r->dev);
	free(r->path);
	free(r);
	return 0;
}
