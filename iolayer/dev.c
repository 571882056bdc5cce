/*
 * dev.c - opening a device: backend choice, O_DIRECT, and what the device is.
 *
 * Backend choice: a named backend is used or the open fails (-ENODEV when it is not
 * compiled in, the probe's error when the kernel refuses it: a caller who asked for
 * io_uring must not silently get something else).  With no name, the first of uring,
 * aio, psync whose runtime probe passes and whose open succeeds is used (io_uring may be
 * compiled in and still be disabled by sysctl kernel.io_uring_disabled or a seccomp
 * filter); iol_dev_backend() reports which.  "sim" is never chosen automatically.
 *
 * O_DIRECT: every real device is opened with O_DIRECT, so the page cache never holds
 * log data and a completed write is on the device (maybe in its volatile cache: only a
 * flush or FUA makes it stable).  A filesystem that refuses O_DIRECT fails the open with
 * -EOPNOTSUPP and a message that names the path and the filesystem.  tmpfs and ramfs are
 * refused the same way even where the kernel accepts O_DIRECT on them (Linux >= 6.6):
 * their "device" is memory, so nothing there is ever durable.  No other failure of the
 * open gives -EOPNOTSUPP (a backend's probe says -ENOSYS), so the engine can tell the
 * application that the file system, not its options, is the problem.
 *
 * Alignment: statx(STATX_DIOALIGN) (Linux 6.1+) gives the buffer and offset alignment a
 * file or block device needs; otherwise a block device's logical block size, or for a
 * file its st_blksize, which is a multiple of any alignment the filesystem may need.
 * Volatile cache and FUA come from sysfs (queue/write_cache, queue/fua) of the block
 * device itself or, for a file, of the device holding the filesystem.
 */
#include "io_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifdef DELOG_HAVE_URING
#define URING_OPS (&iol_uring_ops)
#else
#define URING_OPS NULL
#endif
#ifdef DELOG_HAVE_AIO
#define AIO_OPS (&iol_aio_ops)
#else
#define AIO_OPS NULL
#endif

/* The one list of backends: every name the iolayer knows, in preference order, with its
 * ops table (NULL when it is not compiled in) and the CMake switch that builds it. */
static const struct backend {
	const char *name;
	const struct iol_ops *ops;
	const char *option;
} known[] = {
	{ "uring", URING_OPS, "DELOG_WITH_URING" },
	{ "aio", AIO_OPS, "DELOG_WITH_AIO" },
	{ "psync", &iol_psync_ops, NULL },
	{ "sim", &iol_sim_ops, NULL },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

static const char *built_names[NKNOWN + 1];
static pthread_once_t built_once = PTHREAD_ONCE_INIT;

static void built_init(void)
{
	size_t n = 0;

	for (size_t i = 0; i < NKNOWN; i++)
		if (known[i].ops)
			built_names[n++] = known[i].name;
	built_names[n] = NULL;
}

const char *const *iol_backend_names(void)
{
	pthread_once(&built_once, built_init);
	return built_names;
}

/* The entry of backend @name, built or not; NULL for a name the iolayer does not know. */
static const struct backend *backend_known(const char *name)
{
	for (size_t i = 0; i < NKNOWN; i++)
		if (!strcmp(known[i].name, name))
			return &known[i];
	return NULL;
}

/* The entry of backend @name if it is compiled in. */
static const struct backend *backend_find(const char *name)
{
	const struct backend *b = backend_known(name);

	return b && b->ops ? b : NULL;
}

bool iol_backend_built(const char *name)
{
	return name && backend_find(name) != NULL;
}

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case EXT4_SUPER_MAGIC:
		return "ext4"; /* ext2/3/4 share the magic */
	case XFS_SUPER_MAGIC:
		return "xfs";
	case TMPFS_MAGIC:
		return "tmpfs";
	case BTRFS_SUPER_MAGIC:
		return "btrfs";
	case OVERLAYFS_SUPER_MAGIC:
		return "overlayfs";
	case NFS_SUPER_MAGIC:
		return "nfs";
	case F2FS_SUPER_MAGIC:
		return "f2fs";
	case RAMFS_MAGIC:
		return "ramfs";
	case 0x2fc12fc1:
		return "zfs";
	case 0x65735546:
		return "fuse";
	case 0x01021997:
		return "9p";
	default:
		return "unknown";
	}
}

/* Read one line of /sys/dev/block/MAJ:MIN/queue/@attr, or of the parent disk's queue for
 * a partition.  Returns 0 and fills @buf, or -1. */
static int sysfs_queue_attr(dev_t d, const char *attr, char *buf, size_t len)
{
	const char *fmt[] = { "/sys/dev/block/%u:%u/queue/%s", "/sys/dev/block/%u:%u/../queue/%s" };

	for (size_t i = 0; i < 2; i++) {
		char path[128];
		FILE *f;

		snprintf(path, sizeof(path), fmt[i], major(d), minor(d), attr);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, (int)len, f)) {
			fclose(f);
			buf[strcspn(buf, "\n")] = '\0';
			return 0;
		}
		fclose(f);
	}
	return -1;
}

static void probe_queue(struct iol_geom *g, dev_t d)
{
	char buf[64];

	if (!sysfs_queue_attr(d, "write_cache", buf, sizeof(buf)))
		g->volatile_cache = !strcmp(buf, "write back") ? 1 : 0;
	if (!sysfs_queue_attr(d, "fua", buf, sizeof(buf)))
		g->fua = atoi(buf) ? 1 : 0;
	if (!g->is_blockdev) {
		if (!sysfs_queue_attr(d, "logical_block_size", buf, sizeof(buf)))
			g->logical_block = (uint32_t)strtoul(buf, NULL, 10);
		if (!sysfs_queue_attr(d, "physical_block_size", buf, sizeof(buf)))
			g->physical_block = (uint32_t)strtoul(buf, NULL, 10);
	}
}

/* Fill @g for an open O_DIRECT descriptor. */
static int probe_geom(int fd, const char *path, struct iol_geom *g, const struct iol_dev_opts *opts)
{
	struct statx stx;
	struct stat st;

	if (fstat(fd, &st) < 0) {
		iol_set_errmsg(opts, "%s: fstat: %s", path, strerror(errno));
		return -errno;
	}
	g->volatile_cache = -1;
	g->fua = -1;
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;
		unsigned int pbs = 0;
		uint64_t bytes = 0;

		g->is_blockdev = true;
		g->fs_type = "blockdev";
		if (ioctl(fd, BLKSSZGET, &lbs) < 0 || ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
			iol_set_errmsg(opts, "%s: block device ioctl: %s", path, strerror(errno));
			return -errno;
		}
		if (ioctl(fd, BLKPBSZGET, &pbs) < 0)
			pbs = (unsigned)lbs;
		g->logical_block = (uint32_t)lbs;
		g->physical_block = pbs;
		g->size_bytes = bytes;
		g->dio_mem_align = g->dio_off_align = (uint32_t)lbs;
		probe_queue(g, st.st_rdev);
	} else if (S_ISREG(st.st_mode)) {
		struct statfs sfs;

		g->fs_type = fstatfs(fd, &sfs) == 0 ? fs_name((long)sfs.f_type) : "unknown";
		if (!strcmp(g->fs_type, "tmpfs") || !strcmp(g->fs_type, "ramfs")) {
			/* Linux >= 6.6 accepts O_DIRECT on tmpfs, but the data lives in memory:
			 * no flush makes it survive a power cut, so no log belongs there. */
			iol_set_errmsg(opts,
				       "%s: the filesystem (%s) keeps data only in memory, "
				       "so a log there cannot be durable (O_DIRECT writes would not "
				       "reach stable storage)",
				       path, g->fs_type);
			return -EOPNOTSUPP;
		}
		g->size_bytes = (uint64_t)st.st_size;
		g->logical_block = g->physical_block = 0;
		probe_queue(g, st.st_dev);
		if (!g->logical_block)
			g->logical_block = (uint32_t)st.st_blksize;
		/* No queue behind the file system (overlay, btrfs, NFS, FUSE): the physical
		 * block stays unknown (0); st_blksize is an I/O size hint, not a block. */
		g->dio_mem_align = g->dio_off_align = (uint32_t)st.st_blksize;
	} else {
		iol_set_errmsg(opts, "%s: not a regular file or block device", path);
		return -EINVAL;
	}
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		g->dio_mem_align = stx.stx_dio_mem_align;
		g->dio_off_align = stx.stx_dio_offset_align;
		g->dioalign_from_statx = true;
	}
	if (!g->dio_mem_align || !g->dio_off_align) {
		iol_set_errmsg(opts, "%s: cannot determine O_DIRECT alignment", path);
		return -EINVAL;
	}
	return 0;
}

/* Is @fd a regular file or a block device?  Else say what it is. */
static int check_kind(int fd, const char *path, const struct iol_dev_opts *opts)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		iol_set_errmsg(opts, "%s: fstat: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return 0;
	iol_set_errmsg(opts, "%s: not a regular file or block device (%s)", path,
		       S_ISFIFO(st.st_mode) ? "a FIFO" :
		       S_ISSOCK(st.st_mode) ? "a socket" :
		       S_ISCHR(st.st_mode)  ? "a character device" :
		       S_ISDIR(st.st_mode)  ? "a directory" :
					      "an unknown file type");
	return -EINVAL;
}

/*
 * open(2) with O_DIRECT; on failure explain which part failed.  O_NONBLOCK while
 * opening, so that a FIFO (whose open waits for the other end, forever if none comes)
 * is refused instead of hanging; it is cleared once the file is known to be a regular
 * file or block device (io_uring would otherwise treat the file as non-blocking).
 */
static int open_direct(const char *path, bool read_only, const struct iol_dev_opts *opts)
{
	int flags = (read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC | O_NONBLOCK;
	int fd = open(path, flags), err;

	if (fd >= 0) {
		err = check_kind(fd, path, opts);
		if (!err && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
			err = -errno;
		if (err) {
			close(fd);
			return err;
		}
		return fd;
	}
	if (errno == EINVAL) {
		struct statfs sfs;
		int plain = open(path, flags & ~O_DIRECT);

		if (plain >= 0 && (err = check_kind(plain, path, opts))) {
			close(plain);
			return err;
		}
		if (plain >= 0) {
			const char *fs = fstatfs(plain, &sfs) == 0 ? fs_name((long)sfs.f_type) :
								     "unknown";

			close(plain);
			iol_set_errmsg(opts,
				       "%s: the filesystem (%s) does not support O_DIRECT, "
				       "which delog needs so that writes bypass the page cache",
				       path, fs);
			return -EOPNOTSUPP;
		}
	}
	iol_set_errmsg(opts, "%s: %s", path, strerror(errno));
	return -errno;
}

/* Open @path with O_DIRECT and learn its geometry, once per device. */
static int dev_open_fd(struct iol_dev *dev, const char *path, const struct iol_dev_opts *opts)
{
	int err;

	if (!path) {
		iol_set_errmsg(opts, "a real backend needs a path");
		return -EINVAL;
	}
	dev->fd = open_direct(path, dev->read_only, opts);
	if (dev->fd < 0)
		return dev->fd;
	err = probe_geom(dev->fd, path, &dev->geom, opts);
	/* One writer per log (lock.c); a reader takes nothing (LK4). */
	if (!err && !dev->read_only)
		err = iol_lock_take(dev, path, opts);
	return err;
}

static int dev_start(struct iol_dev *dev, const struct backend *b, const char *path,
		     const struct iol_dev_opts *opts)
{
	int err;

	dev->ops = b->ops;
	dev->run = b->ops->run != NULL; /* the backend's open may decline it (sim) */
	dev->gated = b->ops->gate_flushes || opts->flush_gate;
	if (dev->gated) {
		err = iol_gate_init(dev);
		if (err)
			return err;
	}
	err = b->ops->open(dev, path, opts);
	if (err) {
		if (dev->gated)
			iol_gate_destroy(dev);
		dev->gated = false;
		dev->ops = NULL;
		return err;
	}
	/* After open: a descriptor backend's geometry says whether FUA is native.  A
	 * backend gated by request (flush_gate) carries FUA out as write + gated flush too,
	 * unless asked to keep native FUA (gate_keep_fua). */
	dev->gate_fua = dev->gated &&
			(dev->geom.fua != 1 || (opts->flush_gate && !opts->gate_keep_fua));
	dev->geom.backend = b->name;
	return 0;
}

int iol_dev_open(const char *path, const struct iol_dev_opts *opts, struct iol_dev **out)
{
	const struct iol_dev_opts defaults = { .size = sizeof(defaults) };
	const char *name;
	struct iol_dev *dev;
	int err = -ENODEV;

	*out = NULL;
	if (!opts)
		opts = &defaults;
	if (opts->size != sizeof(*opts))
		return -EINVAL;
	name = opts->backend && strcmp(opts->backend, "auto") ? opts->backend : NULL;
	if (name && !backend_find(name)) {
		const struct backend *b = backend_known(name);
		char list[64] = "";

		if (b) {
			iol_set_errmsg(opts,
				       "backend '%s' is not built into this delog "
				       "(configure with -D%s=ON)",
				       name, b->option);
			return -ENODEV;
		}
		for (size_t i = 0; i < NKNOWN; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", known[i].name);
		iol_set_errmsg(opts, "unknown I/O backend '%s' (%s)", name, list);
		return -EINVAL;
	}
	if (opts->max_segs > IOL_MAX_SEGS_LIMIT) {
		iol_set_errmsg(opts, "max_segs %u exceeds %u", opts->max_segs, IOL_MAX_SEGS_LIMIT);
		return -EINVAL;
	}

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->fd = -1;
	dev->lock_fd = -1;
	pthread_mutex_init(&dev->faults.lock, NULL);
	pthread_mutex_init(&dev->live_lock, NULL);
	pthread_cond_init(&dev->live_cond, NULL);
	dev->read_only = opts->read_only;
	dev->queue_depth = opts->queue_depth ? opts->queue_depth : 128;
	dev->max_segs = opts->max_segs ? opts->max_segs : IOL_MAX_SEGS_DEFAULT;
	if (path && !(dev->path = strdup(path))) {
		free(dev);
		return -ENOMEM;
	}

	if (name) {
		const struct backend *b = backend_find(name);

		err = b->ops->probe();
		if (err)
			iol_set_errmsg(opts, "backend '%s' is not usable on this system: %s", name,
				       strerror(-err));
		else if (!b->ops->needs_fd || !(err = dev_open_fd(dev, path, opts)))
			err = dev_start(dev, b, path, opts);
	} else if (!(err = dev_open_fd(dev, path, opts))) {
		err = -ENODEV;
		for (size_t i = 0; i < NKNOWN && err; i++) {
			const struct backend *b = &known[i];

			/* sim is never automatic; skip backends not built or the kernel refuses */
			if (b->ops && b->ops->needs_fd && !b->ops->probe())
				err = dev_start(dev, b, path, opts);
		}
	}
	if (err) {
		if (dev->fd >= 0)
			close(dev->fd);
		iol_lock_drop(dev);
		free(dev->path);
		pthread_mutex_destroy(&dev->faults.lock);
		pthread_mutex_destroy(&dev->live_lock);
		pthread_cond_destroy(&dev->live_cond);
		free(dev);
		return err;
	}
	*out = dev;
	return 0;
}

int iol_dev_close(struct iol_dev *dev)
{
	int err = 0;

	if (!dev)
		return 0;
	/* (IO5, FG6) Refuse new requests, then wait until every accepted one finished,
	 * with the gate and the backend still running; only then tear them down. */
	atomic_store(&dev->closing, true);
	if (dev->ops->quiesce)
		dev->ops->quiesce(dev);
	pthread_mutex_lock(&dev->live_lock);
	while (atomic_load(&dev->live))
		pthread_cond_wait(&dev->live_cond, &dev->live_lock);
	pthread_mutex_unlock(&dev->live_lock);
	if (dev->gated)
		iol_gate_destroy(dev);
	dev->ops->close(dev);
	if (dev->fd >= 0 && close(dev->fd) < 0)
		err = -errno;
	iol_lock_drop(dev); /* after the last write (LK1) */
	free(dev->path);
	pthread_mutex_destroy(&dev->faults.lock);
	pthread_mutex_destroy(&dev->live_lock);
	pthread_cond_destroy(&dev->live_cond);
	free(dev);
	return err;
}

const struct iol_geom *iol_dev_geom(const struct iol_dev *dev)
{
	return &dev->geom;
}

const char *iol_dev_backend(const struct iol_dev *dev)
{
	return dev->geom.backend;
}

int iol_dev_fd(const struct iol_dev *dev)
{
	return dev->fd;
}

void iol_dev_counters(const struct iol_dev *dev, struct iol_counters *out)
{
	out->reads = atomic_load(&dev->cnt.reads);
	out->writes = atomic_load(&dev->cnt.writes);
	out->flushes = atomic_load(&dev->cnt.flushes);
	out->preflushes = atomic_load(&dev->cnt.preflushes);
	out->fua_writes = atomic_load(&dev->cnt.fua_writes);
	out->dev_flushes = atomic_load(&dev->cnt.dev_flushes);
	out->gate_inline = atomic_load(&dev->cnt.gate_inline);
	out->gate_failed = atomic_load(&dev->cnt.gate_failed);
	out->bytes_read = atomic_load(&dev->cnt.bytes_read);
	out->bytes_written = atomic_load(&dev->cnt.bytes_written);
	out->errors = atomic_load(&dev->cnt.errors);
}

int iol_file_create(const char *path, uint64_t size, unsigned mode, char *errmsg, size_t errmsg_len)
{
	const struct iol_dev_opts msg = { .errmsg = errmsg, .errmsg_len = errmsg_len };
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	int err;

	if (fd < 0) {
		err = -errno;
		iol_set_errmsg(&msg, "%s: cannot create: %s", path, strerror(errno));
		return err;
	}
	err = posix_fallocate(fd, 0, (off_t)size);
	if (err) {
		iol_set_errmsg(&msg, "%s: cannot allocate %llu bytes: %s", path,
			       (unsigned long long)size, strerror(err));
		close(fd);
		unlink(path);
		return -err;
	}
	if (close(fd) < 0) {
		err = -errno;
		iol_set_errmsg(&msg, "%s: close: %s", path, strerror(errno));
		unlink(path);
		return err;
	}
	return 0;
}

/*
 * Atomic create.  A new log is built under a temporary name in its directory and
 * renamed to its own name only once it is formatted and durable, so a crash or kill
 * while creating leaves either no file at the name or a whole log, never a file no
 * open accepts.  The temporary is "." NAME ".delog-new." PID "." RANDOM: unique, so a
 * leftover never blocks a later create, and recognisable, so the next create in the
 * directory removes those of NAME whose creator is gone (its pid is dead and nobody
 * holds the file's writer lock).
 */
#define TMP_TAG ".delog-new."

/* Split @path into its directory (at most @dlen bytes; "." when it has none) and base. */
static const char *path_split(const char *path, char *dir, size_t dlen)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		snprintf(dir, dlen, ".");
		return path;
	}
	snprintf(dir, dlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return slash + 1;
}

/* Remove the temporaries of @base in @dir that a killed create left behind. */
static void tmp_sweep(const char *dir, const char *base)
{
	size_t blen = strlen(base), tlen = strlen(TMP_TAG);
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		char full[PATH_MAX], *end;
		long pid;

		if (n[0] != '.' || strncmp(n + 1, base, blen) ||
		    strncmp(n + 1 + blen, TMP_TAG, tlen))
			continue;
		pid = strtol(n + 1 + blen + tlen, &end, 10);
		if (pid <= 0 || *end != '.' || !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
			continue;
		if (snprintf(full, sizeof(full), "%s/%s", dir, n) >= (int)sizeof(full) ||
		    iol_path_writer_check(full, NULL, 0))
			continue;
		unlink(full);
	}
	closedir(d);
}

int iol_file_create_tmp(const char *path, uint64_t size, unsigned mode, char *tmp, size_t tmp_len,
			char *errmsg, size_t errmsg_len)
{
	const struct iol_dev_opts msg = { .errmsg = errmsg, .errmsg_len = errmsg_len };
	char dir[PATH_MAX];
	const char *base = path_split(path, dir, sizeof(dir));
	int err = -EEXIST;

	if (!*base) {
		iol_set_errmsg(&msg, "%s: not a file name", path);
		return -EINVAL;
	}
	tmp_sweep(dir, base);
	for (int i = 0; i < 16 && err == -EEXIST; i++) {
		uint32_t r;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint32_t)i;
		if (snprintf(tmp, tmp_len, "%s/.%s" TMP_TAG "%ld.%08x", dir, base, (long)getpid(),
			     r) >= (int)tmp_len) {
			iol_set_errmsg(&msg, "%s: the name is too long for a temporary beside it",
				       path);
			return -ENAMETOOLONG;
		}
		err = iol_file_create(tmp, size, mode, errmsg, errmsg_len);
	}
	return err;
}

void iol_errmsg_rename(char *msg, size_t len, const char *tmp, const char *path)
{
	size_t tl = strlen(tmp), pl = strlen(path);
	char *at;

	if (!msg || !len || !(at = strstr(msg, tmp)))
		return;
	if (strlen(msg) - tl + pl >= len)
		return;
	memmove(at + pl, at + tl, strlen(at + tl) + 1);
	memcpy(at, path, pl);
}

int iol_file_publish(const char *tmp, const char *path, int fd, char *errmsg, size_t errmsg_len)
{
	const struct iol_dev_opts msg = { .errmsg = errmsg, .errmsg_len = errmsg_len };
	int own = -1, err = 0;
	char dir[PATH_MAX];

	/* The file's data and size are stable before its name says it is a log. */
	if (fd < 0)
		fd = own = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		err = -errno;
	if (own >= 0)
		close(own);
	if (err) {
		iol_set_errmsg(&msg, "%s: fsync: %s", tmp, strerror(-err));
		return err;
	}
	/* Never over a file someone else made meanwhile. */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		err = -errno;
		if (err == -EINVAL || err == -ENOSYS) {
			/* No RENAME_NOREPLACE here: link(2) refuses an existing name too. */
			err = link(tmp, path) < 0 ? -errno : 0;
			if (!err)
				unlink(tmp);
		}
	}
	if (err) {
		iol_set_errmsg(&msg,
			       err == -EEXIST ? "%s: appeared while the log was being created; "
						"left as it is" :
						"%s: cannot rename the new log to its name: %s",
			       path, strerror(-err));
		return err;
	}
	path_split(path, dir, sizeof(dir));
	own = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (own < 0 || fsync(own) < 0) {
		err = -errno;
		iol_set_errmsg(&msg, "%s: fsync of its directory: %s", path, strerror(-err));
	}
	if (own >= 0)
		close(own);
	return err;
}

void *iol_buf_alloc(const struct iol_dev *dev, size_t len)
{
	size_t align = dev && dev->geom.dio_mem_align > 4096 ? dev->geom.dio_mem_align : 4096;
	void *p = NULL;

	if (!len || posix_memalign(&p, align, (len + align - 1) / align * align))
		return NULL;
	return p;
}
