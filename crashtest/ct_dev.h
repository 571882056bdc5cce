/*
 * ct_dev.h - the simulated disk as crash testing opens it: held (the controller
 * delivers every completion) or free-running, through the iolayer's flush gate or not.
 * Shared by libdelog-crashtest and delog crash (tools/crash), not installed.
 */
#ifndef DELOG_CT_DEV_H
#define DELOG_CT_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "io.h"

#define CT_DEV_GATE 0x1u /* flushes through the iolayer's flush gate (flush_gate) */
/* The sim has a ->run: a lone waiter's flush is an inline generation on its own thread
 * (iol_sim_opts.inline_run). */
#define CT_DEV_INLINE 0x2u
/* With the gate, FUA stays the device's own (gate_keep_fua); else FUA is carried out as
 * a write and a gated flush. */
#define CT_DEV_KEEP_FUA 0x4u
#define CT_DEV_THROUGH 0x8u /* no volatile cache: a disk to recover images on */
/* A disk that only recovers images: nothing cuts its power, so no cache, and a ->run, so
 * recovery's reads run on the recovering thread (iolayer/sim.c SIM5). */
#define CT_DEV_RECOVER (CT_DEV_THROUGH | CT_DEV_INLINE)

/* A sim disk of @bytes with @sector-byte sectors, its completion order from @seed; @hold:
 * completions wait for iol_sim_deliver; @dev_flags: CT_DEV_*; @image: its media (NULL:
 * zeroes).  NULL when it cannot be opened (no memory). */
struct iol_dev *ct_sim_dev(uint64_t bytes, uint32_t sector, uint64_t seed, bool hold,
			   unsigned dev_flags, const void *image);
/* The same, with @gate called on the submitting thread before each submission reaches
 * the disk (iol_sim_opts.submit_gate): the serial mode's. */
struct iol_dev *ct_sim_dev_gated(uint64_t bytes, uint32_t sector, uint64_t seed, bool hold,
				 unsigned dev_flags, const void *image,
				 void (*gate)(void *arg, uint32_t opf, uint64_t off, uint32_t len),
				 void *gate_arg);

#endif
