/*
 * fio.h - fio as a reference (fio.c): used by `delog probe` and `delog bench`.
 */
#ifndef DELOG_TOOLS_COMMON_FIO_H
#define DELOG_TOOLS_COMMON_FIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* fio's path: the first executable "fio" in $PATH (or /usr/local/bin:/usr/bin:/bin),
 * written into @buf; NULL when there is none. */
const char *fio_find(char *buf, size_t len);

/* One fio job: --direct=1 --fallocate=none --output-format=json over [offset, offset +
 * size) of one file or block device. */
struct fio_job {
	const char *fio;       /* fio's path (fio_find) */
	const char *name;      /* --name */
	const char *filename;  /* ':' is escaped for fio */
	const char *rw;        /* "read" or "write": --rw, and the JSON section read back */
	const char *ioengine;  /* "io_uring", "libaio", ... */
	uint64_t bs;           /* bytes per request */
	unsigned iodepth;      /* 0: 1 */
	uint64_t offset, size; /* bytes */
	bool readonly;         /* --readonly: fio refuses to write */
	double runtime_s;      /* > 0: --time_based --runtime, cycling over the region */
	bool end_fsync;        /* --end_fsync=1: the job ends with an fsync, timed */
	/* A second job alongside (time-based jobs only): a loop of one 4 KiB write at
	 * @flusher_offset + fdatasync, so the device flushes back to back while the first
	 * job writes.  The bandwidth read back stays the first job's. */
	bool flusher;
	uint64_t flusher_offset;
};

/*
 * Run @job to completion (the caller's blocked signals are unblocked in the child) and
 * return its bandwidth in MB/s (10^6 bytes/s).  Returns 0, or a negative errno with a
 * one-line reason in @err: fio could not be started, exited non-zero (its first output
 * line is quoted), was killed, or printed no bandwidth for @job->rw.
 */
int fio_run(const struct fio_job *job, double *mbs, char *err, size_t errlen);
/* The bandwidth of section @dir ("read" or "write") of jobs[0] in fio's JSON output, in
 * bytes/s (bw_bytes, or bw in KiB/s from older fio).  Returns 0 or -EINVAL. */
int fio_parse_bw(const char *json, const char *dir, double *bytes_per_s);

#endif
