/*
 * snap.c - snapshot data files beside the log: DIR/snapshot-<file>.dat.
 *
 * Invariants and orderings:
 *  - A snapshot file is complete and durable before any record names it: written to
 *    DIR/snapshot-<file>.tmp, fsynced, renamed to its final name, and the directory
 *    fsynced, all before draft_snap_write returns; the io logs (and forces) the SNAP
 *    record only after that.  So a SNAP record that recovery finds always names a whole
 *    file, and a crash in between leaves only a file no record names.
 *  - Files no record names (a crash before the SNAP record, a snapshot superseded by a
 *    newer durable one) are removed by draft_snap_prune; the io prunes only after the
 *    newer SNAP record is durable and while no snapshot read is in flight.
 *  - The file holds the data alone; its size and checksum are in the SNAP record, and
 *    draft_snap_read checks both, so a damaged file is RAFT_CORRUPT, never loaded.
 * These run on libuv's thread pool (snapshot_put, snapshot_get) or on the loop (load);
 * they touch only the file system and their arguments.
 */
#include "draft.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAP_PREFIX "snapshot-"

static int ioerr(char *errmsg, int err, const char *what, const char *path)
{
	draft_msgf(errmsg, "%s %s: %s", what, path, strerror(err));
	return err == ENOSPC || err == EDQUOT ? RAFT_NOSPACE : RAFT_IOERR;
}

int draft_sync_dir(const char *dir, char *errmsg)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return ioerr(errmsg, errno, "open directory", dir);
	if (fsync(fd) != 0)
		err = ioerr(errmsg, errno, "fsync directory", dir);
	close(fd);
	return err;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int draft_snap_write(const char *dir, uint64_t file, const struct raft_buffer *bufs, unsigned n,
		     uint64_t *size, uint64_t *sum, char *errmsg)
{
	char tmp[4096], fin[4096];
	uint64_t h = 0, sz = 0;
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s/" SNAP_PREFIX "%llu.tmp", dir, (unsigned long long)file);
	snprintf(fin, sizeof(fin), "%s/" SNAP_PREFIX "%llu.dat", dir, (unsigned long long)file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return ioerr(errmsg, errno, "create", tmp);
	for (unsigned i = 0; i < n && !err; i++) {
		err = write_all(fd, bufs[i].base, bufs[i].len);
		h = draft_sum(h, bufs[i].base, bufs[i].len);
		sz += bufs[i].len;
	}
	if (err) {
		close(fd);
		unlink(tmp);
		return ioerr(errmsg, err, "write", tmp);
	}
	if (fsync(fd) != 0) {
		err = errno;
		close(fd);
		unlink(tmp);
		return ioerr(errmsg, err, "fsync", tmp);
	}
	if (close(fd) != 0) {
		err = errno;
		unlink(tmp);
		return ioerr(errmsg, err, "close", tmp);
	}
	if (rename(tmp, fin) != 0) {
		err = errno;
		unlink(tmp);
		return ioerr(errmsg, err, "rename", tmp);
	}
	err = draft_sync_dir(dir, errmsg);
	if (err)
		return err;
	*size = sz;
	*sum = h ? h : draft_sum(0, "", 0);
	return 0;
}

int draft_snap_read(const char *dir, const struct draft_snapmeta *m, struct raft_buffer *buf,
		    char *errmsg)
{
	char path[4096];
	struct stat st;
	char *data;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/" SNAP_PREFIX "%llu.dat", dir,
		 (unsigned long long)m->file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			draft_msgf(errmsg, "snapshot %llu/%llu: its file %s is missing",
				   (unsigned long long)m->term, (unsigned long long)m->index, path);
			return RAFT_CORRUPT;
		}
		return ioerr(errmsg, errno, "open", path);
	}
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != m->size) {
		close(fd);
		draft_msgf(errmsg, "snapshot file %s: size is not %llu", path,
			   (unsigned long long)m->size);
		return RAFT_CORRUPT;
	}
	data = raft_malloc(m->size ? m->size : 1);
	if (!data) {
		close(fd);
		return RAFT_NOMEM;
	}
	while (got < m->size) {
		ssize_t r = read(fd, data + got, m->size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int err = r < 0 ? errno : EIO;

			close(fd);
			raft_free(data);
			return ioerr(errmsg, err, "read", path);
		}
		got += (size_t)r;
	}
	close(fd);
	if (draft_sum(0, data, m->size) != m->sum) {
		raft_free(data);
		draft_msgf(errmsg, "snapshot file %s: checksum mismatch", path);
		return RAFT_CORRUPT;
	}
	buf->base = data;
	buf->len = m->size;
	return 0;
}

int draft_snap_prune(const char *dir, uint64_t keep, char *errmsg)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int removed = 0;

	if (!d)
		return ioerr(errmsg, errno, "open directory", dir);
	while ((de = readdir(d)) != NULL) {
		unsigned long long id;
		char ext[8];
		char path[4096];

		if (strncmp(de->d_name, SNAP_PREFIX, strlen(SNAP_PREFIX)) != 0)
			continue;
		if (sscanf(de->d_name + strlen(SNAP_PREFIX), "%llu.%7s", &id, ext) != 2)
			continue;
		if (strcmp(ext, "dat") == 0 && id == keep)
			continue;
		if (strcmp(ext, "dat") != 0 && strcmp(ext, "tmp") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) == 0)
			removed++;
	}
	closedir(d);
	return removed ? draft_sync_dir(dir, errmsg) : 0;
}
