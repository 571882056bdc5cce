/*
 * serial.c - the serial mode (DELOG_CT_SERIAL), which makes a seed fix a session's
 * events, and the event trace that shows it.
 *
 * Gates.  In serial mode every thread of a session stops at a gate and waits for the
 * controller: a workload thread at the entry of each delog_* call (the engine's enter
 * hook) and at each delog_ct_ack, and any thread at each submission to the disk (the
 * sim's submit gate).  Completions are delivered by a thread of the session's own, the
 * deliverer, so a completion that waits for a lock a gated thread holds blocks only it.
 *
 *  (CT5) The controller moves only when the session is quiet: every thread of the
 *        session asleep, and none of them ran between two looks at /proc/self/task (its
 *        state and context switch counts).  A sleeping thread wakes only when a running
 *        one wakes it (or a clock, or a signal), so then nothing moves until it does.
 *  (CT6) It makes one move, drawn from the session's seed among those possible, listed
 *        in an order timing does not decide: let a gated thread on (workload threads by
 *        number, submissions by operation, offset and length), or deliver a completion
 *        (the sim draws which from its own seeded stream over its list, which is in
 *        submission order).  What the move wakes runs until it sleeps again, at a gate
 *        or inside the engine.
 *
 * So two campaigns with one seed make the same moves and see the same device events
 * when what one move wakes reaches the same gates whatever order its threads run in (the
 * engine's threads agree through its locks on one outcome), and the workload waits on no
 * clock.  The threads of a session are those the process did not have when the campaign
 * began: a thread of the application's own that runs during the campaign delays the
 * quiet until it sleeps, and one that never sleeps is reported as a hang.
 *
 * The trace.  Each session adds lines to the campaign's trace: in serial mode each move,
 * with the device event count it was made at; at the session's end every device event
 * (without its time) and acknowledgement.  The report holds the lines' hash, and
 * options.trace_path the lines.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ct_private.h"

#define SER_MAX_TASKS 256u /* the session's threads the quiet check follows */

enum ser_kind {
	SER_CALL = 0,
	SER_ACK,
	SER_SUBMIT
};

/* A thread stopped at a gate (on its own stack). */
struct ser_gated {
	enum ser_kind kind;
	unsigned who; /* workload thread + 1, else 0 (the engine's threads and the driver) */
	const char *call;
	uint32_t opf, len;
	uint64_t off;
	bool go;
	pthread_cond_t cv;
	struct ser_gated *next;
};

struct ct_serial {
	struct ct_campaign *cp;
	struct iol_dev *dev;
	pthread_mutex_t mu;
	struct ser_gated *gated;
	bool open; /* false: the gates let every thread through */
	uint64_t rng;
	/* the deliverer */
	pthread_t dth;
	pthread_cond_t dcv;
	bool dwant, dbusy, dstop;
	size_t dlen;
};

/* Which workload thread this is, + 1 (0: not one). */
static _Thread_local unsigned ser_who;

/* ---- the trace ---- */

void ct_trace_line(struct ct_campaign *cp, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	cp->trace_hash = ct_fnv(cp->trace_hash, line, strlen(line));
	cp->trace_hash = ct_fnv(cp->trace_hash, "\n", 1);
	if (cp->trace)
		fprintf(cp->trace, "%s\n", line);
}

/* The session's device events and acknowledgements, at its end. */
void ct_trace_session(struct ct_campaign *cp, struct delog_ct_run *run)
{
	struct iol_sim_event ev[64];
	size_t L = iol_sim_trace_len(run->dev), n;

	ct_trace_line(cp, "session %" PRIu64 ".%u: %zu events", run->run, run->session, L);
	for (size_t at = 0; at < L; at += n) {
		n = iol_sim_trace_copy(run->dev, at, ev, 64);
		if (!n)
			break;
		for (size_t i = 0; i < n; i++)
			ct_trace_line(cp,
				      "ev %" PRIu64 " type %u req %" PRIu64 " off %" PRIu64
				      " len %u opf %#x status %d",
				      ev[i].seq, ev[i].type, ev[i].req_id, ev[i].off, ev[i].len,
				      ev[i].opf, ev[i].status);
	}
	pthread_mutex_lock(&run->ack_mu);
	for (size_t i = 0; i < run->nacks; i++)
		if (run->acks[i].session == run->session)
			ct_trace_line(cp, "ack thread %u tag %" PRIu64 " seq %" PRIu64,
				      run->acks[i].thread, run->acks[i].tag, run->acks[i].seq);
	pthread_mutex_unlock(&run->ack_mu);
}

/* ---- the session's threads (CT5) ---- */

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The next thread of /proc/self/task in @d: its id, or 0 at the end. */
static pid_t task_next(DIR *d)
{
	struct dirent *e;

	while ((e = readdir(d)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			return (pid_t)atoi(e->d_name);
	return 0;
}

/* The threads the process has now, sorted, into cp->before: none of them is the
 * session's. */
int ct_serial_snapshot(struct ct_campaign *cp)
{
	DIR *d = opendir("/proc/self/task");
	size_t n = 0, cap = 0;
	pid_t *v = NULL, tid;

	if (!d)
		return ct_say(-errno, "serial mode: /proc/self/task: %s", strerror(errno));
	while ((tid = task_next(d))) {
		if (n == cap) {
			pid_t *w = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!w) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = w;
		}
		v[n++] = tid;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), pid_cmp);
	cp->before = v;
	cp->nbefore = n;
	return 0;
}

struct ser_task {
	pid_t tid;
	uint64_t switches;
};

/* Is thread @tid asleep, and how often has it been switched out?  false if it runs, is
 * runnable, or is gone. */
static bool task_asleep(pid_t tid, uint64_t *switches)
{
	char path[64], buf[2048];
	const char *p;
	FILE *f;
	size_t n;
	uint64_t v = 0, nv = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strstr(buf, "\nState:\t");
	if (!p || p[8] != 'S')
		return false;
	p = strstr(buf, "\nvoluntary_ctxt_switches:");
	if (p)
		v = strtoull(p + 25, NULL, 10);
	p = strstr(buf, "\nnonvoluntary_ctxt_switches:");
	if (p)
		nv = strtoull(p + 28, NULL, 10);
	*switches = v + nv;
	return true;
}

/* The session's threads into @t (sorted by tid): false unless every one is asleep. */
static bool tasks_read(struct ct_campaign *cp, struct ser_task *t, size_t *nt)
{
	DIR *d = opendir("/proc/self/task");
	bool quiet = d != NULL;
	size_t n = 0;
	pid_t tid;

	while (quiet && (tid = task_next(d))) {
		if (bsearch(&tid, cp->before, cp->nbefore, sizeof(tid), pid_cmp))
			continue;
		if (n == SER_MAX_TASKS || !task_asleep(tid, &t[n].switches))
			quiet = false;
		else
			t[n++].tid = tid;
	}
	if (d)
		closedir(d);
	qsort(t, n, sizeof(*t), pid_cmp); /* tid is the first member */
	*nt = n;
	return quiet;
}

static bool tasks_same(const struct ser_task *a, size_t na, const struct ser_task *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i].tid != b[i].tid || a[i].switches != b[i].switches)
			return false;
	return true;
}

/* Wait until the session is quiet (CT5): 0, or -ETIMEDOUT after @stall_s seconds. */
int ct_serial_quiet(struct ct_serial *s, unsigned stall_s)
{
	struct ser_task a[SER_MAX_TASKS], b[SER_MAX_TASKS];
	uint64_t t0 = ct_now_ns();
	size_t na, nb;

	for (;;) {
		if (tasks_read(s->cp, a, &na)) {
			sched_yield();
			if (tasks_read(s->cp, b, &nb) && tasks_same(a, na, b, nb))
				return 0;
		}
		if (ct_now_ns() - t0 > (uint64_t)stall_s * 1000000000ull)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	}
}

/* ---- gates ---- */

static void gate_wait(struct ct_serial *s, struct ser_gated *g)
{
	pthread_mutex_lock(&s->mu);
	if (s->open) {
		pthread_cond_init(&g->cv, NULL);
		g->next = s->gated;
		s->gated = g;
		while (!g->go)
			pthread_cond_wait(&g->cv, &s->mu);
		pthread_cond_destroy(&g->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

static void gate_call(void *arg, const char *call)
{
	struct ser_gated g = { .kind = SER_CALL, .who = ser_who, .call = call };

	gate_wait(arg, &g);
}

static void gate_submit(void *arg, uint32_t opf, uint64_t off, uint32_t len)
{
	struct ser_gated g = { .kind = SER_SUBMIT,
			       .who = ser_who,
			       .opf = opf,
			       .off = off,
			       .len = len };

	gate_wait(arg, &g);
}

void ct_serial_ack(struct ct_serial *s)
{
	struct ser_gated g = { .kind = SER_ACK, .who = ser_who };

	gate_wait(s, &g);
}

void ct_serial_thread(struct ct_serial *s, unsigned thread)
{
	ser_who = s ? thread + 1 : 0;
	engine_set_enter_hook(s ? gate_call : NULL, s);
}

/* ---- the deliverer ---- */

static void *deliverer_main(void *p)
{
	struct ct_serial *s = p;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		size_t L;

		while (!s->dwant && !s->dstop)
			pthread_cond_wait(&s->dcv, &s->mu);
		if (!s->dwant)
			break;
		L = s->dlen;
		pthread_mutex_unlock(&s->mu);
		iol_sim_deliver_if(s->dev, 1, IOL_SIM_RANDOM, L); /* CT3 */
		pthread_mutex_lock(&s->mu);
		s->dwant = false;
		s->dbusy = false;
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- moves (CT6) ---- */

static int gated_cmp(const void *a, const void *b)
{
	const struct ser_gated *x = *(struct ser_gated *const *)a,
			       *y = *(struct ser_gated *const *)b;

	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	if (x->who != y->who)
		return x->who < y->who ? -1 : 1;
	if (x->opf != y->opf)
		return x->opf < y->opf ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->len > y->len) - (x->len < y->len);
}

static void move_say(struct ct_campaign *cp, size_t L, const struct ser_gated *g)
{
	if (g->kind == SER_CALL)
		ct_trace_line(cp, "@%zu thread %u enters %s", L, g->who - 1, g->call);
	else if (g->kind == SER_ACK)
		ct_trace_line(cp, "@%zu thread %u acknowledges", L, g->who - 1);
	else
		ct_trace_line(cp, "@%zu submit opf %#x off %" PRIu64 " len %u", L, g->opf, g->off,
			      g->len);
}

/* Make one move at trace length @L.  0: moved; 1: nothing to move (every thread asleep
 * elsewhere, or gone). */
int ct_serial_move(struct ct_serial *s, size_t L)
{
	struct ser_gated *v[SER_MAX_TASKS];
	size_t n = 0, choices;
	bool deliver;

	pthread_mutex_lock(&s->mu);
	for (struct ser_gated *g = s->gated; g && n < SER_MAX_TASKS; g = g->next)
		v[n++] = g;
	deliver = !s->dbusy && iol_sim_pending(s->dev);
	choices = n + deliver;
	if (!choices) {
		pthread_mutex_unlock(&s->mu);
		return 1;
	}
	qsort(v, n, sizeof(v[0]), gated_cmp);
	s->rng = ct_mix(s->rng + 0x9e3779b97f4a7c15ull);
	size_t pick = (size_t)(s->rng % choices);

	if (pick < n) {
		struct ser_gated **pp = &s->gated;

		while (*pp != v[pick])
			pp = &(*pp)->next;
		*pp = v[pick]->next;
		move_say(s->cp, L, v[pick]);
		v[pick]->go = true;
		pthread_cond_signal(&v[pick]->cv);
	} else {
		ct_trace_line(s->cp, "@%zu deliver", L);
		s->dwant = s->dbusy = true;
		s->dlen = L;
		pthread_cond_signal(&s->dcv);
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* Let every gated thread on, and every later one through: the session is ending on an
 * error, or closing. */
void ct_serial_release(struct ct_serial *s)
{
	pthread_mutex_lock(&s->mu);
	s->open = false;
	while (s->gated) {
		struct ser_gated *g = s->gated;

		s->gated = g->next;
		g->go = true;
		pthread_cond_signal(&g->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- a session's serial state ---- */

struct ct_serial *ct_serial_new(struct ct_campaign *cp, uint64_t seed)
{
	struct ct_serial *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cp = cp;
	s->open = true;
	s->rng = seed;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->dcv, NULL);
	return s;
}

/* The session's held disk, its submissions gated, and its deliverer; NULL when either
 * cannot be had. */
struct iol_dev *ct_serial_dev(struct ct_serial *s, uint64_t bytes, uint32_t sector, uint64_t seed,
			      unsigned dev_flags, const void *image)
{
	struct iol_dev *dev = ct_sim_dev_gated(bytes, sector, seed, true, dev_flags, image,
					       gate_submit, s);

	if (dev && pthread_create(&s->dth, NULL, deliverer_main, s)) {
		iol_dev_close(dev);
		return NULL;
	}
	s->dev = dev;
	return dev;
}

void ct_serial_free(struct ct_serial *s)
{
	if (!s)
		return;
	ct_serial_release(s);
	if (s->dev) {
		pthread_mutex_lock(&s->mu);
		s->dstop = true;
		pthread_cond_signal(&s->dcv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->dth, NULL);
	}
	pthread_cond_destroy(&s->dcv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
