/*
 * fault.c - the fault plan of the real backends: which op of a device fails, and how.
 *
 * What it keeps.  Each device's plan (struct iol_dev.faults, io_private.h): up to
 * IOL_FAULTS_MAX entries ("the nth READ, WRITE or FLUSH from now fails with err, and
 * with persistent every later one too"), the op count of its type when each entry was
 * added, and how many ops of each type the device has seen.  The lock is made and
 * destroyed with the device (dev.c); nothing else of the device is touched here.
 *
 * Who calls it.  The I/O-error tests arm and clear the plan (iol_dev_fault_add,
 * iol_dev_fault_clear, io.h; descriptor backends only: the sim has its own, richer plan
 * in io_sim.h).  Each op is counted against it by iol_fault_check, where the device's
 * backend applies it (ops->faults_in_syscalls): psync in its syscall table (psync.c),
 * before the syscall reaches the kernel; uring and aio in iol_req_done (submit.c), on
 * completion.  So it sits below submit.c and the backends, and calls nothing of theirs:
 * the core asks the plan and never the device-opening code (dev.c).
 */
#include "io_private.h"

#include <errno.h>

int iol_dev_fault_add(struct iol_dev *dev, const struct iol_fault *f)
{
	int err = 0;

	if (!dev || !f || !dev->ops->needs_fd || !f->nth ||
	    (f->op != IOL_OP_READ && f->op != IOL_OP_WRITE && f->op != IOL_OP_FLUSH) || f->err > 0)
		return -EINVAL;
	pthread_mutex_lock(&dev->faults.lock);
	if (atomic_load(&dev->faults.nr) == IOL_FAULTS_MAX) {
		err = -ENOSPC;
	} else {
		unsigned n = atomic_load(&dev->faults.nr);

		dev->faults.f[n] = *f;
		dev->faults.base[n] = dev->faults.seen[f->op];
		atomic_store(&dev->faults.nr, n + 1);
	}
	pthread_mutex_unlock(&dev->faults.lock);
	return err;
}

void iol_dev_fault_clear(struct iol_dev *dev)
{
	pthread_mutex_lock(&dev->faults.lock);
	atomic_store(&dev->faults.nr, 0);
	pthread_mutex_unlock(&dev->faults.lock);
}

int iol_fault_check(struct iol_dev *dev, enum iol_op op)
{
	uint64_t k;
	int err = 0;

	if (!atomic_load_explicit(&dev->faults.nr, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&dev->faults.lock);
	k = ++dev->faults.seen[op];
	for (unsigned i = 0; i < atomic_load(&dev->faults.nr) && !err; i++) {
		const struct iol_fault *f = &dev->faults.f[i];
		uint64_t idx = k - dev->faults.base[i];

		if (f->op == op && (idx == f->nth || (f->persistent && idx > f->nth)))
			err = f->err ? f->err : -EIO;
	}
	pthread_mutex_unlock(&dev->faults.lock);
	return err;
}
