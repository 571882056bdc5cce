/*
 * dev.c - the simulated disk as crash testing opens it (ct_dev.h): the campaign's held
 * disks, its recovery workers' disks without a cache, and delog crash's.
 */
#include "ct_dev.h"
#include "io_sim.h"

struct iol_dev *ct_sim_dev(uint64_t bytes, uint32_t sector, uint64_t seed, bool hold,
			   unsigned dev_flags, const void *image)
{
	return ct_sim_dev_gated(bytes, sector, seed, hold, dev_flags, image, NULL, NULL);
}

struct iol_dev *ct_sim_dev_gated(uint64_t bytes, uint32_t sector, uint64_t seed, bool hold,
				 unsigned dev_flags, const void *image,
				 void (*gate)(void *arg, uint32_t opf, uint64_t off, uint32_t len),
				 void *gate_arg)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = bytes,
				   .sector = sector,
				   .seed = seed,
				   .hold = hold,
				   .image = image,
				   .inline_run = dev_flags & CT_DEV_INLINE,
				   .write_through = dev_flags & CT_DEV_THROUGH,
				   .submit_gate = gate,
				   .gate_arg = gate_arg };
	struct iol_dev_opts o = { .size = sizeof(o),
				  .backend = "sim",
				  .sim = &so,
				  .flush_gate = dev_flags & CT_DEV_GATE,
				  .gate_keep_fua = dev_flags & CT_DEV_KEEP_FUA };
	struct iol_dev *dev = NULL;

	return iol_dev_open(NULL, &o, &dev) ? NULL : dev;
}
