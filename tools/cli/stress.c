/*
 * stress.c - `delog stress PATH --threads N [--backend B] [--policy P]`: commit
 * transactions carrying unique ids on a real backend and print each id on stdout
 * (line-buffered) only after the force covering it returned, until --count ids per
 * thread are done or the process is killed.
 *
 * What it proves, with tests/crash/kill_test.sh: process death keeps everything the
 * device accepted, so after a SIGKILL at any moment, `delog recover PATH --ids` must
 * list every id stress printed (G1), and each thread's recovered ids must be a run
 * without holes (G3): the real-kernel counterpart of `delog crash` (test class T7 of
 * docs/DESIGN.md section 5).  An id is printed only after delog_force returned 0 for a
 * sequence that covers it, so a printed id is an acknowledged one; the output goes
 * through a pipe to the parent, never to the file being crashed (WiredTiger's side
 * files had to tolerate torn lines for that reason).
 *
 * How: each thread commits a batch of 1..--batch transactions (one item each, the id as
 * key and a self-checking struct ids_item, tools/cli/ids.h), so batches of several threads
 * share checkpoints (group commit), then forces the last one and prints the batch.  The
 * log is opened with DELOG_OPEN_CREATE; an existing log is recovered and every thread
 * continues after the highest counter recovered for it (for any thread, if none was
 * recovered for it: st_start_released), so ids stay unique across runs
 * (--format starts from an empty log instead).  The push callback releases what the
 * log asks for (it is all printed already), so a run never fills the log; before each
 * release it prints, on stderr, "released thread T through id C" for every thread
 * (the highest id of T in a released checkpoint), so the test excuses exactly the ids
 * the log was allowed to drop and no others.
 */
#include "tools.h"

#include "ids.h"

#include <delog.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ST_MAX_THREADS 256u

/* A thread's commits not yet released: (checkpoint, counter), oldest first. */
struct st_pend {
	pthread_mutex_t mu;
	_Atomic uint64_t committing; /* counter between commit and pend_add (0: none) */
	struct {
		uint64_t seq, counter;
	} * v;
	size_t n, cap;
};

struct stress {
	delog *log;
	struct st_pend pend[ST_MAX_THREADS];
	unsigned threads, batch;
	uint64_t count;                 /* per thread; 0: until killed */
	uint64_t start[ST_MAX_THREADS]; /* last counter recovered per thread */
	uint64_t other;                 /* recovered items that are not ids */
	pthread_mutex_t out_mu;
	atomic_int failed;
	_Atomic uint64_t acked;
};

struct st_thread {
	struct stress *st;
	unsigned t;
	pthread_t th;
};

static int pend_add(struct st_pend *p, uint64_t seq, uint64_t counter)
{
	int err = 0;

	pthread_mutex_lock(&p->mu);
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		void *v = realloc(p->v, cap * sizeof(*p->v));

		if (v) {
			p->v = v;
			p->cap = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err) {
		p->v[p->n].seq = seq;
		p->v[p->n].counter = counter;
		p->n++;
	}
	pthread_mutex_unlock(&p->mu);
	return err;
}

static int on_recover(void *arg, const struct delog_checkpoint *ck, const struct delog_item *it,
		      size_t n)
{
	struct stress *st = arg;
	struct ids_item id;

	for (size_t i = 0; i < n; i++) {
		if (!ids_parse(it[i].key, it[i].data, it[i].len, &id) ||
		    id.thread >= ST_MAX_THREADS) {
			st->other++;
			continue;
		}
		if (id.counter > st->start[id.thread])
			st->start[id.thread] = id.counter;
		/* Still in the log: announced when the log releases it, like a new one. */
		if (pend_add(&st->pend[id.thread], ck->seq, id.counter))
			return -ENOMEM;
	}
	return 0;
}

/*
 * A thread none of whose ids were recovered had them all released: it starts after the
 * highest counter recovered for any thread.  The newest durable checkpoint is always
 * recovered, and it holds the last id a finished run committed, so after a run of
 * --count ids per thread no thread repeats an id.
 */
static void st_start_released(struct stress *st)
{
	uint64_t top = 0;

	for (unsigned t = 0; t < ST_MAX_THREADS; t++)
		if (st->start[t] > top)
			top = st->start[t];
	for (unsigned t = 0; t < ST_MAX_THREADS; t++)
		if (st->start[t] == 0)
			st->start[t] = top;
}

static void on_push(void *arg, delog *log, uint64_t seq)
{
	struct stress *st = arg;
	uint64_t d = delog_durable_seq(log);

	if (seq > d)
		seq = d;
	for (unsigned t = 0; t < ST_MAX_THREADS; t++) {
		struct st_pend *p = &st->pend[t];
		size_t k = 0;

		uint64_t through = 0, cc;

		pthread_mutex_lock(&p->mu);
		/* Checkpoints in order; counters within one need not be (recovery hands a
		 * checkpoint's items in its own order). */
		for (; k < p->n && p->v[k].seq <= seq; k++)
			if (p->v[k].counter > through)
				through = p->v[k].counter;
		/* A commit whose checkpoint is not known yet may be in the released range. */
		cc = atomic_load(&p->committing);
		if (cc > through)
			through = cc;
		if (through) {
			fprintf(stderr, "released thread %u through id %" PRIu64 "\n", t,
				ids_id(t, through));
			memmove(p->v, p->v + k, (p->n - k) * sizeof(*p->v));
			p->n -= k;
		}
		pthread_mutex_unlock(&p->mu);
	}
	fflush(stderr);
	(void)delog_release(log, seq);
}

static void *thread_main(void *arg)
{
	struct st_thread *th = arg;
	struct stress *st = th->st;
	uint64_t c = st->start[th->t], r = ((uint64_t)th->t + 1) * 0x9e3779b97f4a7c15ull ^ now_ns();
	uint64_t *batch = malloc(st->batch * sizeof(*batch));

	if (!batch) {
		atomic_store(&st->failed, -ENOMEM);
		return NULL;
	}
	while (!atomic_load(&st->failed) && (!st->count || c < st->start[th->t] + st->count)) {
		unsigned b, k = 0;
		uint64_t seq = 0;
		int err = 0;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		b = 1 + (unsigned)(r % st->batch);
		if (st->count && b > st->start[th->t] + st->count - c)
			b = (unsigned)(st->start[th->t] + st->count - c);
		for (; k < b && !err; k++) {
			struct ids_item it;
			delog_tx *tx;

			ids_make(th->t, ++c, &it);
			err = delog_tx_begin(st->log, sizeof(it) + DELOG_ITEM_OVERHEAD, 0, &tx);
			if (!err) {
				err = delog_tx_log(tx, it.id, &it, sizeof(it));
				if (err) {
					delog_tx_abort(tx);
				} else {
					atomic_store(&st->pend[th->t].committing, c);
					err = delog_tx_commit(tx, &seq);
				}
			}
			if (!err)
				err = pend_add(&st->pend[th->t], seq, c);
			atomic_store(&st->pend[th->t].committing, 0);
			batch[k] = it.id;
		}
		if (!err)
			err = delog_force(st->log, seq);
		if (err) {
			fprintf(stderr, "delog stress: thread %u, id %" PRIu64 ": %s\n", th->t,
				ids_id(th->t, c), delog_strerror(err));
			atomic_store(&st->failed, err);
			break;
		}
		/* Acknowledged: only now may the ids be printed. */
		pthread_mutex_lock(&st->out_mu);
		for (unsigned i = 0; i < k; i++)
			printf("%" PRIu64 "\n", batch[i]);
		fflush(stdout);
		pthread_mutex_unlock(&st->out_mu);
		atomic_fetch_add(&st->acked, k);
	}
	free(batch);
	return NULL;
}

/*
 * delog_open answers with a code only ("EINVAL: ... misaligned or out-of-range I/O?" for
 * a file on tmpfs); the iolayer's open says what is wrong with the path (tmpfs, no
 * O_DIRECT, ...).  Open it once, read-only, to say that; the messages name @name (@path
 * may be a temporary made in its place).  Returns 0 or -1 (reported).
 */
static int check_device(const char *path, const char *name, const char *backend)
{
	char msg[512] = "";
	struct iol_dev_opts io = { .size = sizeof(io),
				   .backend = backend,
				   .read_only = true,
				   .errmsg = msg,
				   .errmsg_len = sizeof(msg) };
	struct iol_dev *dev;
	int err = iol_dev_open(path, &io, &dev);

	if (err) {
		iol_errmsg_rename(msg, sizeof(msg), path, name); /* a temporary named as PATH */
		if (*msg)
			fprintf(stderr, "delog stress: %s\n", msg);
		else
			fprintf(stderr, "delog stress: %s: %s\n", name, tool_strerror(err));
		return -1;
	}
	iol_dev_close(dev);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: delog stress PATH [--threads N] [--backend B] [--policy P]\n"
		   "                    [--count N] [--batch N] [--size N] [--format]\n");
}

static void help(void)
{
	usage(stdout);
	printf("\nCommit transactions carrying unique ids (thread << 40 | counter) and print\n"
	       "each id on stdout once the force covering it returned; run until --count ids\n"
	       "per thread are acknowledged, or until killed.  An existing log is recovered\n"
	       "and continued.\n"
	       "\nWhat a kill (SIGKILL: the process dies, the machine does not) must leave,\n"
	       "as `delog recover PATH --ids` lists it: every printed id, except the ones the\n"
	       "log was allowed to drop.  The log keeps only what it has not released: before\n"
	       "each release stress prints \"released thread T through id C\" on stderr, and\n"
	       "from then on ids of thread T up to C may be missing.  Each thread's recovered\n"
	       "ids are consecutive (no holes, no duplicates).  A power cut is `delog crash`.\n"
	       "\noptions:\n"
	       "  -t, --threads N      committing threads (default 4)\n"
	       "  -b, --backend B      uring, aio or psync (default: best available)\n"
	       "  -p, --policy P       sync, async, single or none (default sync)\n"
	       "  -c, --count N        ids per thread, then close and exit (default 0: forever)\n"
	       "      --batch N        commits per force, 1..N at random (default 4)\n"
	       "  -s, --size N         log size when PATH is created or --format (default\n"
	       "                       32M; at least 4M, a multiple of 4K)\n"
	       "      --format         start from an empty log even if PATH holds one\n"
	       "  -h, --help           show this help\n"
	       "\nExit status: 0 done, 1 failure, 2 usage error.\n");
}

/* The options into @st and @o, PATH into *@path: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct stress *st, struct delog_options *o,
		      const char **path)
{
	enum {
		O_BATCH = 256,
		O_FORMAT
	};
	static const struct option lopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "backend", required_argument, NULL, 'b' },
		{ "policy", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "size", required_argument, NULL, 's' },
		{ "format", no_argument, NULL, O_FORMAT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "t:b:p:c:s:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 't':
			if (parse_count(optarg, 1, ST_MAX_THREADS, &v)) {
				fprintf(stderr, "delog stress: --threads: '%s': need 1..%u\n",
					optarg, ST_MAX_THREADS);
				return TOOL_EXIT_USAGE;
			}
			st->threads = (unsigned)v;
			break;
		case 'b':
			if (tool_parse_backend("stress", optarg, &o->backend))
				return TOOL_EXIT_USAGE;
			break;
		case 'p':
			if (delog_flush_policy_parse(optarg, &o->flush)) {
				fprintf(stderr,
					"delog stress: --policy: '%s': need sync, async, single "
					"or none\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case 'c':
			if (parse_count(optarg, 0, 1ull << 39, &st->count)) {
				fprintf(stderr, "delog stress: --count: '%s': not a count\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			break;
		case O_BATCH:
			if (parse_count(optarg, 1, 1024, &v)) {
				fprintf(stderr, "delog stress: --batch: '%s': need 1..1024\n",
					optarg);
				return TOOL_EXIT_USAGE;
			}
			st->batch = (unsigned)v;
			break;
		case 's':
			/* The engine formats with 4096-byte sectors (delog_options.sector 0). */
			if (tool_parse_size("stress", "--size", optarg, DELOG_LOG_MIN_BYTES, 0,
					    4096, "the smallest log", &o->create_size))
				return TOOL_EXIT_USAGE;
			break;
		case O_FORMAT:
			o->flags |= DELOG_OPEN_FORMAT;
			break;
		case 'h':
			help();
			return TOOL_EXIT_OK;
		default:
			usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "delog stress: %s\n",
			optind < argc ? "one PATH only" : "PATH is missing");
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	*path = argv[optind];
	return -1;
}

/*
 * delog_open opens an existing PATH as it is, and opening a FIFO blocks: refuse anything
 * but a regular file or block device first (a new PATH is created, but not through a
 * symbolic link), a file that cannot hold the log asked for (empty: it holds no log;
 * with --format: smaller than --size), and say what is wrong with a PATH the iolayer
 * cannot open (check_device).  0 or -1 (reported).
 */
static int check_path(const char *path, const char *backend, const struct delog_options *o)
{
	uint64_t create_size = o->create_size;
	struct stat sb;
	char why[128], why2[512], sz[32];
	int err;

	err = tool_path_check(path, &sb, why, sizeof(why));
	if (err && err != -ENOENT) {
		fprintf(stderr, "delog stress: %s: %s\n", path, why);
		return -1;
	}
	if (err == -ENOENT && !lstat(path, &sb) && S_ISLNK(sb.st_mode)) {
		/* iol_file_create (O_EXCL | O_NOFOLLOW) would say "File exists". */
		fprintf(stderr,
			"delog stress: %s: is a dangling symbolic link (its target does "
			"not exist); stress creates a log only where no link is: give the target's "
			"path, or remove the link\n",
			path);
		return -1;
	}
	if (!err && S_ISREG(sb.st_mode) && !sb.st_size) {
		fprintf(stderr,
			"delog stress: %s: the file is empty, so it holds no log; make "
			"one with `delog format %s --size N`, or remove the file and stress creates "
			"it (--size, default 32 MiB)\n",
			path, path);
		return -1;
	}
	if (!err && S_ISREG(sb.st_mode) && (o->flags & DELOG_OPEN_FORMAT) &&
	    (uint64_t)sb.st_size < DELOG_SB_BYTES + create_size) {
		/* --size is a multiple of 4 KiB (parse_args), so K is exact. */
		fprintf(stderr,
			"delog stress: %s: is %lld bytes, smaller than the %s log --format "
			"makes (%" PRIu64 " bytes with its superblock): give a smaller --size, or "
			"grow the file with `delog format %s --size %" PRIu64 "K --force`\n",
			path, (long long)sb.st_size, fmt_bytes(create_size, sz, sizeof(sz)),
			DELOG_SB_BYTES + create_size, path, create_size >> 10);
		return -1;
	}
	if (err == -ENOENT) {
		/* The file delog_open would create, made here first (under a temporary name,
		 * as delog_open makes it: a kill leaves nothing at PATH) so the iolayer can
		 * say what is wrong with it; removed again either way. */
		char tmp[PATH_MAX];

		err = iol_file_create_tmp(path, DELOG_SB_BYTES + create_size, 0600, tmp,
					  sizeof(tmp), why2, sizeof(why2));
		if (err) {
			iol_errmsg_rename(why2, sizeof(why2), tmp, path);
			fprintf(stderr, "delog stress: %s\n", *why2 ? why2 : tool_strerror(err));
			return -1;
		}
		err = check_device(tmp, path, backend);
		unlink(tmp);
	} else {
		err = check_device(path, path, backend);
	}
	return err;
}

/* Open (recover or create) the log, run the threads until they are done or one fails,
 * close it and say how many ids were acknowledged.  The exit status. */
static int run(struct stress *st, struct delog_options *o, const char *path)
{
	struct delog_error_info ei = { .size = sizeof(ei) };
	struct delog_recovery rec = { 0 };
	struct st_thread *th;
	int err, rc = TOOL_EXIT_OK;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (unsigned t = 0; t < ST_MAX_THREADS; t++)
		pthread_mutex_init(&st->pend[t].mu, NULL);
	o->recover = on_recover;
	o->recover_arg = st;
	o->recovery = &rec;
	o->push = on_push;
	o->push_arg = st;
	o->error = &ei;
	err = delog_open(path, o, &st->log);
	if (err == -EBUSY) {
		/* The writer lock's message names the path and the writer holding it. */
		fprintf(stderr, "delog stress: %s\n", ei.message);
		return TOOL_EXIT_FAIL;
	}
	if (err) {
		fprintf(stderr, "delog stress: %s: %s%s\n", path, delog_strerror(err),
			err == DELOG_ENOTLOG ? "; --format makes a log in it, destroying what it "
					       "holds" :
					       "");
		return TOOL_EXIT_FAIL;
	}
	st_start_released(st);
	fprintf(stderr,
		"delog stress: %s: %s policy, %u threads, recovered %" PRIu64
		" checkpoints (%" PRIu64 " other items); committing\n",
		path, delog_flush_policy_name(o->flush), st->threads, rec.checkpoints, st->other);
	pthread_mutex_init(&st->out_mu, NULL);
	th = calloc(st->threads, sizeof(*th));
	if (!th) {
		delog_close(st->log);
		return TOOL_EXIT_FAIL;
	}
	for (unsigned t = 0; t < st->threads; t++) {
		th[t] = (struct st_thread){ st, t, 0 };
		if (pthread_create(&th[t].th, NULL, thread_main, &th[t])) {
			atomic_store(&st->failed, -EAGAIN);
			st->threads = t;
			break;
		}
	}
	for (unsigned t = 0; t < st->threads; t++)
		pthread_join(th[t].th, NULL);
	free(th);
	err = delog_close(st->log);
	if (err || atomic_load(&st->failed)) {
		fprintf(stderr, "delog stress: %s: %s\n", path,
			delog_strerror(err ? err : atomic_load(&st->failed)));
		rc = TOOL_EXIT_FAIL;
	}
	fprintf(stderr, "delog stress: %" PRIu64 " ids acknowledged\n", atomic_load(&st->acked));
	pthread_mutex_destroy(&st->out_mu);
	for (unsigned t = 0; t < ST_MAX_THREADS; t++) {
		pthread_mutex_destroy(&st->pend[t].mu);
		free(st->pend[t].v);
	}
	return rc;
}

int cmd_stress(int argc, char **argv)
{
	static struct stress st;
	struct delog_options o = { .size = sizeof(o),
				   .flags = DELOG_OPEN_CREATE,
				   .create_size = 32u << 20 };
	const char *path;
	int rc;

	memset(&st, 0, sizeof(st));
	st.threads = 4;
	st.batch = 4;
	rc = parse_args(argc, argv, &st, &o, &path);
	if (rc >= 0)
		return rc;
	if (check_path(path, o.backend, &o))
		return TOOL_EXIT_FAIL;
	return run(&st, &o, path);
}
