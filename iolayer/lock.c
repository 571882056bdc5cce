/*
 * lock.c - one writer per log: the writer lock a writing open holds, and what a reader
 * or a refused writer learns from it.
 *
 * Two writers on one log lose acknowledged commits: each recovers the same head and
 * writes its own records over the other's.  So a writing open of a file or block
 * device takes a lock for the life of the device, and a second writing open fails
 * -EBUSY with a message that names the holder.
 *
 *  (LK1) The lock is an open file description (OFD) write lock (F_OFD_SETLK) on a
 *        descriptor of its own, opened O_RDWR after the O_DIRECT one and checked to be
 *        the same inode.  OFD locks conflict between any two open file descriptions, so
 *        a second open in the same process is refused as well as one in another
 *        process.  The descriptor is the lock's only holder: a backend's in-flight
 *        requests (io_uring, aio) keep the O_DIRECT file alive after its process died,
 *        but never this one, so the kernel drops the lock when the process exits or is
 *        killed, before its parent can reap it.
 *  (LK2) A block device is also opened O_EXCL on that descriptor.  The kernel grants one
 *        exclusive open per device, through whichever node it is opened, and refuses it
 *        while the device is mounted.  The OFD lock on the node names the holder.  A
 *        process that holds the device exclusively itself (iol_blk_claim: delog bench
 *        and probe keep a device from being mounted under them for their whole run)
 *        already keeps every other writer off, so its writing opens skip O_EXCL, which
 *        the kernel would refuse them; the OFD lock still keeps two of its handles apart.
 *  (LK3) The lock bytes lie at LOCK_OFF and beyond, far past any log, and no I/O
 *        touches them.  Byte LOCK_OFF is the lock itself.  A second byte, LOCK_OFF + 1 +
 *        pid, says who holds it: F_OFD_GETLK reports no pid for an OFD lock (l_pid is
 *        -1), but it reports where a conflicting lock starts.  The pid is the one the
 *        writer saw in its own pid namespace.
 *  (LK4) A reader (read_only) takes nothing, so no writer waits for it or fails on it.
 *        It may test the lock (iol_dev_writer), which is how recovery learns that the
 *        log it reads is live.
 *
 * What the lock does not cover: a log reached over a network file system or from
 * another machine (locks there depend on the server, if it has any), programs that
 * write the log without delog, and a copy of a block device's node (a different inode:
 * O_EXCL still refuses the second writer, but the lock cannot name the first).
 */
#include "io_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_OFF (1ll << 62)
#define CLAIMS_MAX 8
#define LOCK_PID_SPAN (1ll << 32) /* the marker bytes: LOCK_OFF + 1 + pid */

/* The pid holding the writer lock that @fd's file description would conflict with:
 * > 0 the pid, -1 a holder whose pid is unknown, 0 none. */
static long lock_holder(int fd)
{
	struct flock fl = { .l_type = F_WRLCK,
			    .l_whence = SEEK_SET,
			    .l_start = LOCK_OFF,
			    .l_len = 1 };

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return 0;
	fl = (struct flock){ .l_type = F_WRLCK,
			     .l_whence = SEEK_SET,
			     .l_start = LOCK_OFF + 1,
			     .l_len = LOCK_PID_SPAN };
	if (fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_start > LOCK_OFF)
		return (long)(fl.l_start - LOCK_OFF - 1);
	return -1;
}

/* Say who holds @path's writer lock, as seen through @fd; @excl: the kernel refused an
 * exclusive open of the block device. */
static void lock_why(int fd, const char *path, bool excl, char *buf, size_t len)
{
	long pid = lock_holder(fd);

	if (pid > 0)
		snprintf(buf, len,
			 "%s: the log is open for writing by process %ld, which holds its writer "
			 "lock; a second writer would lose acknowledged commits",
			 path, pid);
	else if (pid < 0)
		snprintf(buf, len,
			 "%s: the log is open for writing by another process or handle, which "
			 "holds its writer lock (its pid is not known); a second writer would lose "
			 "acknowledged commits",
			 path);
	else if (excl)
		snprintf(buf, len,
			 "%s: the device is busy: another program holds it open exclusively "
			 "(a mounted file system, or a writer that opened it O_EXCL)",
			 path);
	else
		snprintf(buf, len, "%s: the log's writer lock is held", path);
}

/* (LK2) The block devices this process holds exclusively (iol_blk_claim). */
static pthread_mutex_t claims_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t rdev;
	int fd;
} claims[CLAIMS_MAX];
static size_t nclaims;

static bool claimed(dev_t rdev)
{
	bool yes = false;

	pthread_mutex_lock(&claims_mu);
	for (size_t i = 0; i < nclaims && !yes; i++)
		yes = claims[i].rdev == rdev;
	pthread_mutex_unlock(&claims_mu);
	return yes;
}

int iol_blk_claim(const char *path)
{
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC), err = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISBLK(st.st_mode))
		err = -ENOTBLK;
	pthread_mutex_lock(&claims_mu);
	if (!err && nclaims == CLAIMS_MAX)
		err = -ENFILE;
	if (!err) {
		claims[nclaims].rdev = st.st_rdev;
		claims[nclaims].fd = fd;
		nclaims++;
	}
	pthread_mutex_unlock(&claims_mu);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

void iol_blk_release(int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&claims_mu);
	for (size_t i = 0; i < nclaims; i++) {
		if (claims[i].fd == fd) {
			claims[i] = claims[--nclaims];
			break;
		}
	}
	pthread_mutex_unlock(&claims_mu);
	close(fd);
}

int iol_lock_take(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts)
{
	struct flock fl = { .l_type = F_WRLCK,
			    .l_whence = SEEK_SET,
			    .l_start = LOCK_OFF,
			    .l_len = 1 };
	int flags = O_RDWR | O_CLOEXEC | O_NONBLOCK;
	struct stat a, b;
	char msg[512];
	int fd, err;

	if (fstat(dev->fd, &b))
		return -errno;
	if (dev->geom.is_blockdev && !claimed(b.st_rdev))
		flags |= O_EXCL;
	fd = open(path, flags);
	if (fd < 0) {
		err = -errno;
		if (err == -EBUSY && dev->geom.is_blockdev) {
			/* (LK2) Someone holds the device exclusively: the lock may say who. */
			lock_why(dev->fd, path, true, msg, sizeof(msg));
			iol_set_errmsg(opts, "%s", msg);
		} else {
			iol_set_errmsg(opts, "%s: opening it for the writer lock: %s", path,
				       strerror(-err));
		}
		return err;
	}
	if (fstat(fd, &a) || a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
	    a.st_rdev != b.st_rdev) {
		close(fd);
		iol_set_errmsg(opts, "%s: the path changed while it was being opened", path);
		return -ESTALE;
	}
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		err = -errno;
		if (err == -EAGAIN || err == -EACCES) {
			lock_why(fd, path, false, msg, sizeof(msg));
			iol_set_errmsg(opts, "%s", msg);
			err = -EBUSY;
		} else {
			iol_set_errmsg(opts,
				       "%s: cannot take the writer lock (F_OFD_SETLK): %s; "
				       "the file system must support open file description locks",
				       path, strerror(-err));
		}
		close(fd);
		return err;
	}
	/* (LK3) The marker only names the holder: a failure leaves it unnamed. */
	fl.l_start = LOCK_OFF + 1 + getpid();
	(void)fcntl(fd, F_OFD_SETLK, &fl);
	dev->lock_fd = fd;
	return 0;
}

void iol_lock_drop(struct iol_dev *dev)
{
	if (dev->lock_fd >= 0)
		close(dev->lock_fd);
	dev->lock_fd = -1;
}

long iol_dev_writer(const struct iol_dev *dev)
{
	/* A writer's own lock is not another writer (and its O_DIRECT descriptor, a
	 * different file description, would report it). */
	if (dev->fd < 0 || dev->lock_fd >= 0)
		return 0;
	return lock_holder(dev->fd);
}

int iol_path_writer_check(const char *path, char *errmsg, size_t errmsg_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char msg[512];
	long pid;

	if (fd < 0)
		return 0;
	pid = lock_holder(fd);
	if (pid && errmsg && errmsg_len) {
		lock_why(fd, path, false, msg, sizeof(msg));
		snprintf(errmsg, errmsg_len, "%s", msg);
	}
	close(fd);
	return pid ? -EBUSY : 0;
}
