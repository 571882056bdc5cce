/*
 * io_sim.h - control surface of the simulated disk (backend "sim"), for crash and fault
 * tests and repeatable benchmarks.  The disk itself is driven through io.h like any
 * other backend; these calls inspect and steer it.
 *
 * Model (docs/DESIGN.md section 2):
 *   media    durable bytes, sector-granular (sector = 512 or 4096 bytes).
 *   cache    writes that completed but are not yet durable.  Reads see media overlaid
 *            with the cache.
 *   flight   writes and flushes submitted but not completed.
 *   A flush makes durable exactly the cache contents that existed when it was submitted
 *   (writes completed before it); a write still in flight then is not covered, and one
 *   that completes after the flush was submitted stays volatile.  Durability takes effect
 *   when the flush completes.  A FUA write is durable when it completes.  PREFLUSH is a
 *   flush submitted with the write, which is issued once that flush completed.
 *   A power cut (iol_sim_crash*) resolves each unstable sector (in the cache, covered by a
 *   flush not yet complete, or written by a request in flight) independently to its old
 *   (media) or new contents ("strict"), or old/new/garbage ("garble"), or to any version
 *   written to it since it was last stable ("versions": media, every completed write the
 *   cache has since overwritten, the newest completed one, every issued write in flight).
 *   Sectors tear independently: a multi-sector write is not atomic.
 *
 * Completions are delivered by a sim thread after the latency model's delay (none, nvme,
 * sata), in seeded random order among those due (so out-of-order completion is the norm),
 * or, with hold = true, only when the test calls iol_sim_deliver(), until iol_dev_close
 * begins: from then on a held disk delivers by itself (FIFO), so close never waits for a
 * delivery no one makes.
 *
 * Thread safety: every call here may be made from any thread, concurrently with I/O.
 */
#ifndef DELOG_IO_SIM_H
#define DELOG_IO_SIM_H

#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

enum iol_sim_latency {
	IOL_SIM_LAT_NONE = 0, /* complete as soon as the sim thread runs */
	IOL_SIM_LAT_NVME,     /* fast NVMe-like: ~10 us per I/O, ~3 GB/s, cheap flush */
	IOL_SIM_LAT_SATA,     /* SATA-SSD-like: ~60 us per I/O, ~500 MB/s, flush ~2 ms */
};

enum iol_sim_crash_profile {
	IOL_SIM_STRICT = 0, /* each unstable sector: old or new */
	IOL_SIM_GARBLE,     /* each unstable sector: old, new or garbage */
	IOL_SIM_VERSIONS,   /* each unstable sector: any version written since it was last
			      * stable (old, an intermediate one, or new) */
	/* As GARBLE, a garbled sector reading back as zeroes, as 0xff, or as the media bytes
	 * of the sector before it (after it, for sector 0): what a device that zeroes an
	 * interrupted write, or remaps one wrongly, shows; many sectors then hold equal
	 * bytes.  (A read error: iol_sim_set_unreadable on the disk opened on the image.) */
	IOL_SIM_GARBLE_ZERO,
	IOL_SIM_GARBLE_ONES,
	IOL_SIM_GARBLE_COPY,
};

struct iol_sim_opts {
	size_t size;        /* sizeof(struct iol_sim_opts) */
	uint64_t dev_bytes; /* disk size when no image/path; 0: 64 MiB */
	uint32_t sector;    /* 512 or 4096; 0: 4096 */
	uint64_t seed;      /* completion order and latency jitter */
	enum iol_sim_latency latency;
	bool hold;     /* completions wait for iol_sim_deliver() */
	bool in_order; /* deliver due completions in submission order */
	/* No volatile cache: a write reaches the media when it completes, a flush has
	 * nothing to make stable, and no event trace is kept.  For measuring what runs
	 * above the disk (delog_open's "sim"); power cuts need the cache (false). */
	bool write_through;
	const void *image; /* optional initial media, dev_bytes long */
	/* A ->run, as the descriptor backends have (io_private.h): iol_submit_wait's
	 * request is performed on the calling thread, and so, on a device opened with
	 * flush_gate, a lone waiter's flush is an inline generation (flush.c FG4) and the
	 * flushers' generations are blocking flushes (FG5), as on a real disk.  The
	 * request still goes through the flight list (a power cut sees it in flight) and is
	 * completed when delivered: by the sim thread, or with hold by iol_sim_deliver, on
	 * whichever thread delivers; its completion (iol_req_done, end_io) then runs on the
	 * waiting thread.  false: every request completes on the delivering thread. */
	bool inline_run;
	/* A failed flush drops what it covered: every cached version its capture holds
	 * that is not yet durable leaves the cache (a read returns the media again; a power
	 * cut can no longer bring it back; a later flush does not make it durable), as a
	 * real device may lose its cache when a flush fails.  This is the device the
	 * journal's L14 assumes.  false (default): a failed flush leaves the cache as it
	 * was, so a later flush may still make those writes durable. */
	bool flush_fail_drops;
	/* Called on the submitting thread at the start of each submission, before the
	 * disk sees it (no lock of the disk's held): the crash tester's serial mode stops
	 * the thread there until its turn.  NULL: none. */
	void (*submit_gate)(void *arg, uint32_t opf, uint64_t off, uint32_t len);
	void *gate_arg;
};

/* Latency profile by name ("none", "nvme", "sata"); -EINVAL if unknown. */
int iol_sim_latency_parse(const char *name, enum iol_sim_latency *out);

/* ---- event trace ---- */

enum iol_sim_ev_type {
	IOL_SIM_EV_SUBMIT = 1,  /* request accepted by the disk */
	IOL_SIM_EV_FLUSH_ISSUE, /* a flush (standalone or PREFLUSH) captured the cache */
	IOL_SIM_EV_FLUSH_DONE,  /* that flush made its capture durable */
	IOL_SIM_EV_COMPLETE,    /* request completed (status below) */
};

struct iol_sim_event {
	uint64_t seq;    /* event number, from 1 */
	uint64_t req_id; /* request number, from 1, in submission order */
	uint64_t off;    /* bytes */
	uint32_t len;    /* bytes */
	uint32_t opf;    /* iol_opf_t bits */
	int32_t status;  /* COMPLETE: 0 or -errno */
	uint16_t type;   /* enum iol_sim_ev_type */
	uint16_t pad;
	uint64_t t_ns; /* simulated time */
};

/* Number of events recorded so far, and a copy of events [from, from+max). */
size_t iol_sim_trace_len(struct iol_dev *dev);
size_t iol_sim_trace_copy(struct iol_dev *dev, size_t from, struct iol_sim_event *out, size_t max);
/* Stop (false) or resume (true) recording events; on by default.  Sequence numbers keep
 * counting while off.  For long benchmarks, whose trace would otherwise grow without end. */
void iol_sim_trace_enable(struct iol_dev *dev, bool on);

/* ---- faults ---- */

enum iol_sim_fault_kind {
	IOL_SIM_FAULT_EIO = 0, /* the op fails with err (default -EIO) */
	IOL_SIM_FAULT_SHORT,   /* a read moves only half its bytes (completes -EIO) */
	IOL_SIM_FAULT_BITFLIP, /* a read succeeds but one bit of its data is flipped */
};

struct iol_sim_fault {
	enum iol_op op; /* which op's counter: READ, WRITE or FLUSH */
	uint64_t nth;   /* 1-based index among ops of that type from now */
	enum iol_sim_fault_kind kind;
	bool persistent; /* also every later op of that type */
	int err;         /* 0: -EIO */
};

/* Arm a fault plan entry (up to 16).  -ENOSPC when full, -EINVAL for a bad entry.
 * A FLUSH entry counts the flushes the disk is asked to do: a standalone flush, a
 * PREFLUSH write's flush, and on a device opened with flush_gate each generation of the
 * flush gate (the riders never reach the disk), inline or not; so the nth FLUSH fails
 * one chosen generation and every request that rode it (iolayer/flush.c FG3). */
int iol_sim_fault_add(struct iol_dev *dev, const struct iol_sim_fault *f);
void iol_sim_fault_clear(struct iol_dev *dev);
/* Make sectors [sector, sector + n) unreadable (@bad) or readable again: a read that
 * covers one fails -EIO, as flash answers an uncorrectable read of a page whose program
 * was interrupted, until a completed write to the sector replaces it.  -EINVAL for a
 * range past the disk; -ENOMEM. */
int iol_sim_set_unreadable(struct iol_dev *dev, uint64_t sector, uint64_t n, bool bad);

/* ---- delivery control (hold mode) ---- */

enum iol_sim_order {
	IOL_SIM_FIFO = 0,
	IOL_SIM_LIFO,
	IOL_SIM_RANDOM
};
/* Requests whose completion is pending (submitted, not yet delivered). */
size_t iol_sim_pending(struct iol_dev *dev);
/* Deliver up to @max pending completions in @order; returns how many. */
size_t iol_sim_deliver(struct iol_dev *dev, size_t max, enum iol_sim_order order);
/* The same, but only if the trace is still @trace_len events long (else 0, nothing
 * delivered): a crash checker that took its point at that length delivers nothing a
 * thread submitted after it, so every request is seen in flight at some point before
 * its completion can make it durable.  And in phases: a PREFLUSH write's flush is one
 * delivery, after which its write is in flight (a point sees it torn), and its
 * completion another (iol_sim_deliver does both at once). */
size_t iol_sim_deliver_if(struct iol_dev *dev, size_t max, enum iol_sim_order order,
			  size_t trace_len);

/* ---- power cuts ---- */

struct iol_sim_crash_info {
	uint64_t unstable_sectors; /* sectors that were not durable */
	uint64_t kept_old, took_new, garbled;
	uint64_t intermediate; /* versions profile: neither old nor newest */
};

/* Sectors that a power cut now could lose or tear (sector numbers, ascending). */
size_t iol_sim_unstable(struct iol_dev *dev, uint64_t *sectors, size_t max);
/* The index of @sector in @sectors[0..n), a list in iol_sim_unstable's order (ascending),
 * or SIZE_MAX when it is not there; a binary search. */
size_t iol_sim_unstable_index(const uint64_t *sectors, size_t n, uint64_t sector);
/*
 * The image a power cut now leaves, written to @image (dev bytes long); the running disk
 * is not disturbed, so many crash states can be taken at one point.  Each unstable sector
 * is resolved from @seed under @profile.
 */
int iol_sim_crash(struct iol_dev *dev, uint64_t seed, enum iol_sim_crash_profile profile,
		  void *image, struct iol_sim_crash_info *info);
/* Like iol_sim_crash, with the choice for unstable sector i (in iol_sim_unstable order)
 * given by @choice[i]: 0 old, 1 newest, 2 garbage (seeded by @seed). */
int iol_sim_crash_choose(struct iol_dev *dev, const uint8_t *choice, size_t n, uint64_t seed,
			 void *image);
/*
 * Versions (the versions profile).  Version 0 of an unstable sector is the media copy,
 * the last (nver - 1) is what iol_sim_crash_choose calls "newest", and those between are
 * the other writes made since the sector was last stable, oldest first: completed writes
 * the cache has overwritten, then (after the newest completed one) issued writes in
 * flight in submission order.  The history is dropped when a flush or a FUA write makes
 * the sector stable.  Indexes are valid until the next submission or delivery.
 *
 * iol_sim_unstable_versions: like iol_sim_unstable, and the number of versions of each
 * sector in @nver (may be NULL; >= 1: a sector written only by a PREFLUSH write whose
 * flush has not completed has media alone).
 * iol_sim_version_read: version @v of @sector (a stable sector has version 0 only);
 * -EINVAL for a version it does not have.
 * iol_sim_crash_versions: like iol_sim_crash_choose, unstable sector i taking version
 * @ver[i], or garbage for IOL_SIM_VER_GARBAGE; -EINVAL if the unstable set or a count
 * changed.  iol_sim_crash_choose's 0 / 1 / 2 are version 0 / nver - 1 / garbage here.
 */
#define IOL_SIM_VER_GARBAGE UINT32_MAX
size_t iol_sim_unstable_versions(struct iol_dev *dev, uint64_t *sectors, uint32_t *nver,
				 size_t max);
int iol_sim_version_read(struct iol_dev *dev, uint64_t sector, uint32_t v, void *buf);
int iol_sim_crash_versions(struct iol_dev *dev, const uint32_t *ver, size_t n, uint64_t seed,
			   void *image);
/* Copy durable media only (what survives if nothing unstable does). */
int iol_sim_media(struct iol_dev *dev, uint64_t off, void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
