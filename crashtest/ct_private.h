/*
 * ct_private.h - the parts of libdelog-crashtest and what they share (not installed).
 *
 *   campaign.c  delog_ct_campaign: options, runs and their sessions, the report
 *   session.c   one session: the driver thread (open, workload threads, cut, close) and
 *               the controller loop that delivers completions and takes crash points
 *   point.c     a crash point: what was acknowledged, the unstable sectors, the media;
 *               the states made at it and their image hashes
 *   check.c     recovering a state's image read-only through REPLAY, and CHECK; the
 *               recovery workers
 *   handle.c    failure handles: writing, reading, replaying and describing them
 *   minimise.c  shrinking a failing handle to the sectors it needs
 *   serial.c    the serial mode (gates, the quiet check, the controller's moves) and
 *               the event trace
 *   dev.c       the sim disk as crash testing opens it (ct_dev.h, which delog crash
 *               uses too)
 *
 * Invariants (CT1-CT4, named in the files that keep them; the serial mode's CT5-CT6 are
 * in serial.c):
 *  (CT1) What a crash point holds as acknowledged was read before its snapshot of the
 *        disk, so everything in it was acknowledged before the cut that state models.
 *  (CT2) A state is a choice per unstable sector (enum ct_choice); its image is the
 *        media with each chosen sector replaced, built the same way by the campaign,
 *        the handle and the minimiser, so a handle rebuilds the image byte for byte.
 *  (CT3) Every request is seen in flight by some point before its completion can make it
 *        durable: the controller takes points between deliveries, and delivers only
 *        while the trace is as long as its last point saw (iol_sim_deliver_if).  So a
 *        point sees a disk that nothing but new submissions changes under it
 *        (iol_sim_crash_choose retries those).
 *  (CT4) A recovered state answers CHECK for every state with its image: CHECK may not
 *        change it, and its image hash covers every byte (sum of per-sector hashes).  A
 *        state whose image and acknowledgements (their hash, not their count) passed
 *        before is not checked again.
 */
#ifndef DELOG_CT_PRIVATE_H
#define DELOG_CT_PRIVATE_H

#include <delog.h>
#include <delog_crashtest.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>

#include "ct_dev.h"
#include "engine.h"
#include "io_sim.h"

#define CT_MAX_THREADS 64u
#define CT_CACHE 8u         /* recovered states a worker keeps, by image hash */
#define CT_POINT_STATES 96u /* states per crash point, at most (all 2^k when fewer) */
#define CT_HANDLE_MAGIC "DLGCTH01"

/* What one unstable sector becomes in a state (CT2). */
enum ct_choice {
	CT_OLD = 0, /* the media's bytes */
	CT_NEW,     /* the newest bytes written to it */
	CT_GARBAGE, /* seeded random bytes */
	CT_ZEROES,
	CT_ONES,
	CT_COPY, /* the media bytes of the sector before it (after it, for sector 0) */
	CT_EIO,  /* the media's bytes, but unreadable */
	CT_NCHOICE
};

/* A crash point: enough to build the image of any state made at it. */
struct ct_point {
	uint64_t run, id, seed; /* seed: the garbage of CT_GARBAGE */
	uint32_t sector;
	uint64_t dev_bytes;
	struct delog_ct_ack *acks; /* CT1 */
	size_t nacks;
	uint64_t h_acks; /* a hash of acks[0..nacks): the verdict cache's key with the image */
	uint64_t durable;
	size_t k;                   /* unstable sectors */
	uint64_t *u;                /* their numbers, ascending */
	unsigned char *newd;        /* k sectors: the newest contents */
	uint64_t *h_ch;             /* k x CT_NCHOICE: each choice's sector hash term */
	const unsigned char *media; /* dev_bytes: what is durable */
	const uint64_t *h_media;    /* per-sector hashes of media */
	uint64_t h_base;            /* the media's image hash */
	uint64_t media_gen;         /* changes whenever media does */
};

/* A state: one choice per unstable sector of its point, and its image hash. */
struct ct_state {
	uint8_t *choice;
	uint64_t hash;
	int failed; /* set by the checker: 1 CHECK or recovery failed */
	char why[512];
};

/* A recovery worker: its own sim disk, patched from image to image. */
struct ct_worker {
	struct ct_campaign *cp;
	struct iol_dev *dev;
	unsigned char *held; /* the image the disk holds */
	uint64_t held_gen;   /* media_gen held was last synced to in full */
	uint64_t *dirty;     /* sectors written since, differing from that media */
	size_t ndirty, dirty_cap;
	uint64_t eio_sector[64]; /* sectors marked unreadable */
	size_t neio;
	struct {
		uint64_t hash;
		void *state;
		struct delog_recovery rec;
		int rerr;
		char rwhy[320];
	} cache[CT_CACHE];
	unsigned cache_next;
	uint64_t checks, images;
	pthread_t th;
};

struct ct_opts {
	const struct delog_ct_app *app;
	struct delog_options log;
	uint64_t log_bytes, dev_bytes, seed, states;
	double seconds;
	unsigned jobs, sessions, profiles, stall_s, max_failures, flags, threads;
	uint32_t sector;
	const char *save_dir;
	const char *trace_path;
};

/* A campaign: options, the shared media, the workers and the report. */
struct ct_campaign {
	struct ct_opts o;
	struct delog_ct_report *rep;
	uint64_t t0;
	unsigned char *fresh; /* the formatted log's image */
	unsigned char *media; /* the current session's durable media (dev_bytes) */
	uint64_t *h_media;
	uint64_t h_base, media_gen;
	unsigned char *newimg; /* scratch: the newest image at a point */
	struct ct_worker *workers;
	/* the states of the point being checked, shared with the workers */
	struct ct_point *pt;
	struct ct_state *st;
	size_t nst, st_cap;
	uint8_t *choices; /* the states' choices, k bytes each */
	size_t choices_cap;
	atomic_size_t next_st;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	uint64_t work_gen;
	unsigned busy;
	bool quit;
	/* verdicts: (image hash, acks) pairs that passed, an open-addressed set */
	uint64_t *passed;
	size_t passed_cap, passed_n;
	atomic_bool stopping;
	int err;
	/* the event trace (serial.c) */
	uint64_t trace_hash;
	FILE *trace;
	pid_t *before; /* serial mode: the threads the process had before the first session */
	size_t nbefore;
};

/* A session (the public delog_ct_run). */
struct delog_ct_run {
	struct ct_campaign *cp;
	uint64_t run, seed;
	unsigned session;
	unsigned dev_flags; /* CT_DEV_* */
	struct iol_dev *dev;
	delog *log;
	void *state; /* REPLAY's state of this session's open (NULL in session 0) */
	pthread_mutex_t ack_mu;
	struct delog_ct_ack *acks; /* the run's acknowledgements, every session's */
	size_t nacks, ack_cap;
	atomic_size_t ack_count;
	atomic_int phase;        /* enum ct_phase */
	pthread_mutex_t log_mu;  /* log_open: the controller reads the durable sequence */
	pthread_cond_t phase_cv; /* the driver waits for the cut (CT_CUT_WANTED) to pass */
	bool log_open;
	atomic_uint running; /* workload threads not yet returned */
	atomic_bool thread_done[CT_MAX_THREADS];
	/* each workload thread's last public call (engine_call_slot), for the watchdog */
	_Atomic(const char *) *_Atomic call_slot[CT_MAX_THREADS];
	struct ct_serial *ser; /* serial mode: the session's gates, else NULL */
	int werr;              /* the first workload or open error */
	char wwhy[256];
};

enum ct_phase {
	CT_OPENING = 0,
	CT_RUNNING,
	CT_CUT_WANTED, /* the workload returned; the controller takes the cut image */
	CT_CLOSING,
	CT_DONE,
};

/* util (campaign.c) */
uint64_t ct_now_ns(void);
uint64_t ct_mix(uint64_t z);
uint64_t ct_seed_for(uint64_t seed, uint64_t a, uint64_t b);
uint64_t ct_sector_hash(const void *p, uint32_t len, uint64_t idx);
/* FNV-1a: @h (CT_FNV_BASIS to start) carried over @n bytes at @p. */
#define CT_FNV_BASIS 0xcbf29ce484222325ull
uint64_t ct_fnv(uint64_t h, const void *p, size_t n);
int ct_say(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* campaign.c */
bool ct_budget_spent(struct ct_campaign *cp);

/* serial.c */
struct ct_serial;
void ct_trace_line(struct ct_campaign *cp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ct_trace_session(struct ct_campaign *cp, struct delog_ct_run *run);
int ct_serial_snapshot(struct ct_campaign *cp);
struct ct_serial *ct_serial_new(struct ct_campaign *cp, uint64_t seed);
struct iol_dev *ct_serial_dev(struct ct_serial *s, uint64_t bytes, uint32_t sector, uint64_t seed,
			      unsigned dev_flags, const void *image);
void ct_serial_free(struct ct_serial *s);
/* A workload thread's start: its number, and its gate at each delog_* call. */
void ct_serial_thread(struct ct_serial *s, unsigned thread);
void ct_serial_ack(struct ct_serial *s);
int ct_serial_quiet(struct ct_serial *s, unsigned stall_s);
int ct_serial_move(struct ct_serial *s, size_t trace_len);
void ct_serial_release(struct ct_serial *s);

/* session.c */
unsigned ct_thread_self(void);
int ct_session(struct ct_campaign *cp, struct delog_ct_run *run, const unsigned char *img,
	       unsigned char *cut);

/* point.c */
int ct_point_take(struct ct_campaign *cp, struct delog_ct_run *run, struct ct_point *pt);
void ct_point_free(struct ct_point *pt);
int ct_media_refresh(struct ct_campaign *cp, struct iol_dev *dev);
void ct_media_load(struct ct_campaign *cp, const unsigned char *img);
int ct_point_hashes(struct ct_point *pt);
void ct_passed_add(struct ct_campaign *cp, uint64_t hash, uint64_t h_acks);
int ct_point_states(struct ct_campaign *cp, struct ct_point *pt, uint64_t budget);
uint64_t ct_state_hash(const struct ct_point *pt, const uint8_t *choice);
const unsigned char *ct_sector_bytes(const struct ct_point *pt, size_t i, uint8_t c,
				     unsigned char *scratch);
void ct_state_image(const struct ct_point *pt, const uint8_t *choice, unsigned char *img);
const char *ct_choice_name(uint8_t c);
void ct_describe(const struct ct_point *pt, const uint8_t *choice, char *out, size_t len);

/* check.c */
int ct_workers_start(struct ct_campaign *cp);
void ct_workers_stop(struct ct_campaign *cp);
void ct_check_states(struct ct_campaign *cp);
int ct_worker_init(struct ct_worker *w, struct ct_campaign *cp, uint64_t dev_bytes,
		   uint32_t sector);
void ct_worker_fini(struct ct_worker *w, const struct delog_ct_app *app);
int ct_check_one(struct ct_worker *w, const struct delog_ct_app *app, const struct ct_point *pt,
		 const uint8_t *choice, uint64_t hash, char *why, size_t whylen);

/* handle.c */
int ct_point_handle_failures(struct ct_campaign *cp, struct ct_point *pt);
/* A handle read back: its point (media and hashes its own), its state and reason. */
struct ct_handle {
	struct ct_point pt;
	uint8_t *choice;
	unsigned char *media; /* dev_bytes + one sector of scratch */
	uint64_t *h_media;
	char why[512];
};
int ct_handle_write(const char *path, const struct ct_point *pt, const uint8_t *choice,
		    const char *why);
int ct_handle_read(const char *path, struct ct_handle *h);
int ct_handle_load(const char *path, const struct delog_ct_app *app, struct ct_handle *h,
		   struct ct_worker *w);
void ct_handle_unload(struct ct_handle *h, struct ct_worker *w, const struct delog_ct_app *app);
int ct_handle_check(struct ct_worker *w, const struct delog_ct_app *app, struct ct_handle *h,
		    char *why, size_t whylen);
void ct_handle_free(struct ct_handle *h);
int ct_app_check(const struct delog_ct_app *app);

#endif
