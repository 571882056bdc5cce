/*
 * fio.c - fio as an independent reference: find it, run one sequential O_DIRECT job,
 * read its bandwidth back.  Shared by `delog probe` (raw read and write bandwidth next
 * to the uring backend's) and `delog bench` (recovery read throughput next to fio's
 * sequential read of the same log bytes).
 *
 * Why it is built this way:
 *  - fio is an optional dependency found at run time in $PATH, not at build time: a
 *    machine without it still probes and benches, and says that fio is missing.
 *  - It is started with posix_spawn (no shell, so no quoting of paths), stdin from
 *    /dev/null and stdout and stderr into one pipe; the callers block SIGINT, SIGTERM
 *    and SIGHUP while they run, so the child gets an empty signal mask and a Ctrl-C
 *    still stops it.  Its output is read to the end (capped at FIO_OUTPUT_MAX, the rest
 *    drained) before waitpid, so fio never blocks on a full pipe.
 *  - --output-format=json is parsed with a key finder, not a JSON parser: the only
 *    numbers wanted are jobs[0].<rw>.bw_bytes (or the older bw, in KiB/s), and "read" or
 *    "write" occur elsewhere in fio's output only as values, never followed by ':'.
 *  - Every job is --direct=1 --fallocate=none at an explicit offset and size, so it
 *    moves exactly the bytes the caller measured itself and never extends a file;
 *    --readonly makes fio refuse any write (bench reads a log it must not damage).
 *    A time-based job (bench's stream workload: as long as a delog point) cycles over
 *    its region; --end_fsync makes a write job's bandwidth one of durable bytes.  A
 *    flusher job may run beside it (4 KiB write + fdatasync in a loop on a block of its
 *    own): the first job's bandwidth is then that of a stream whose every write is
 *    made durable within one flush of completing, the device's durable streaming rate.
 *  - fio treats ':' in --filename as a separator between files; it is escaped.
 */
#include "fio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIO_OUTPUT_MAX (4u << 20)
#define FIO_MAX_PATH 4096

const char *fio_find(char *buf, size_t len)
{
	const char *path = getenv("PATH");

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (n && (size_t)snprintf(buf, len, "%.*s/fio", (int)n, path) < len &&
		    access(buf, X_OK) == 0)
			return buf;
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/*
 * Find "key" used as an object key (followed by ':') after @from; returns a pointer just
 * past the colon, or NULL.
 */
static const char *json_find_key(const char *from, const char *key)
{
	size_t klen = strlen(key);

	for (const char *s = from; (s = strchr(s, '"')); s++) {
		const char *e;

		if (strncmp(s + 1, key, klen) || s[1 + klen] != '"')
			continue;
		e = s + klen + 2;
		while (*e == ' ' || *e == '\t' || *e == '\n' || *e == '\r')
			e++;
		if (*e == ':')
			return e + 1;
	}
	return NULL;
}

int fio_parse_bw(const char *json, const char *dir, double *bytes_per_s)
{
	const char *jobs = json_find_key(json, "jobs");
	const char *sec = jobs ? json_find_key(jobs, dir) : NULL;
	const char *v;
	char *end;
	double d;

	if (!sec)
		return -EINVAL;
	v = json_find_key(sec, "bw_bytes");
	if (v) {
		d = strtod(v, &end);
		if (end != v) {
			*bytes_per_s = d;
			return 0;
		}
	}
	v = json_find_key(sec, "bw"); /* KiB/s in fio's JSON */
	if (v) {
		d = strtod(v, &end);
		if (end != v) {
			*bytes_per_s = d * 1024;
			return 0;
		}
	}
	return -EINVAL;
}

static int filename_arg(const char *path, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "--filename=");

	for (const char *s = path; *s; s++) {
		if (o + 3 >= len)
			return -ENAMETOOLONG;
		if (*s == ':')
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	buf[o] = '\0';
	return 0;
}

/* Read the child's output to EOF into a NUL-terminated heap buffer (NULL if none). */
static char *read_all(int fd)
{
	char *buf = NULL;
	size_t used = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (cap - used < 4096 && cap < FIO_OUTPUT_MAX) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb)
				break;
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		if (cap - used <= 1) {
			char sink[4096];

			n = read(fd, sink, sizeof(sink));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			continue;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	if (buf)
		buf[used] = '\0';
	return buf;
}

int fio_run(const struct fio_job *job, double *out_mbs, char *err, size_t errlen)
{
	char file_arg[FIO_MAX_PATH + 64], name_arg[128], rw_arg[32], eng_arg[64];
	char bs_arg[48], qd_arg[48], off_arg[48], size_arg[48], rt_arg[48], foff_arg[48];
	char *argv[40];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	char *buf;
	int fds[2], status, rc, argc = 0;
	double bps;
	pid_t pid;

	if (filename_arg(job->filename, file_arg, sizeof(file_arg))) {
		snprintf(err, errlen, "path too long for fio");
		return -ENAMETOOLONG;
	}
	snprintf(name_arg, sizeof(name_arg), "--name=%s", job->name);
	snprintf(rw_arg, sizeof(rw_arg), "--rw=%s", job->rw);
	snprintf(eng_arg, sizeof(eng_arg), "--ioengine=%s", job->ioengine);
	snprintf(bs_arg, sizeof(bs_arg), "--bs=%" PRIu64, job->bs);
	snprintf(qd_arg, sizeof(qd_arg), "--iodepth=%u", job->iodepth ? job->iodepth : 1);
	snprintf(off_arg, sizeof(off_arg), "--offset=%" PRIu64, job->offset);
	snprintf(size_arg, sizeof(size_arg), "--size=%" PRIu64, job->size);
	argv[argc++] = (char *)job->fio;
	argv[argc++] = name_arg;
	argv[argc++] = file_arg;
	argv[argc++] = rw_arg;
	argv[argc++] = bs_arg;
	argv[argc++] = qd_arg;
	argv[argc++] = eng_arg;
	argv[argc++] = (char *)"--direct=1";
	argv[argc++] = size_arg;
	argv[argc++] = off_arg;
	argv[argc++] = (char *)"--fallocate=none";
	if (job->readonly)
		argv[argc++] = (char *)"--readonly";
	if (job->runtime_s > 0) {
		snprintf(rt_arg, sizeof(rt_arg), "--runtime=%" PRIu64 "ms",
			 (uint64_t)llround(job->runtime_s * 1e3));
		argv[argc++] = (char *)"--time_based";
		argv[argc++] = rt_arg;
	}
	if (job->end_fsync)
		argv[argc++] = (char *)"--end_fsync=1";
	if (job->flusher && job->runtime_s > 0) {
		/* fio's job options follow their --name: the flusher repeats what it shares. */
		snprintf(foff_arg, sizeof(foff_arg), "--offset=%" PRIu64, job->flusher_offset);
		argv[argc++] = (char *)"--name=flusher";
		argv[argc++] = file_arg;
		argv[argc++] = (char *)"--rw=write";
		argv[argc++] = (char *)"--bs=4096";
		argv[argc++] = (char *)"--size=4096";
		argv[argc++] = foff_arg;
		argv[argc++] = eng_arg;
		argv[argc++] = (char *)"--direct=1";
		argv[argc++] = (char *)"--fallocate=none";
		argv[argc++] = (char *)"--fdatasync=1";
		argv[argc++] = (char *)"--time_based";
		argv[argc++] = rt_arg;
	}
	argv[argc++] = (char *)"--output-format=json";
	argv[argc] = NULL;

	if (pipe2(fds, O_CLOEXEC)) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return rc;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none); /* the caller blocks SIGINT; fio must not */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&pid, job->fio, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		snprintf(err, errlen, "cannot run %s: %s", job->fio, strerror(rc));
		return -rc;
	}
	buf = read_all(fds[0]);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		const char *msg = buf ? buf : "";
		const char *nl = strchr(msg, '\n');

		/* fio's own error is usually its first line. */
		if (WIFEXITED(status))
			snprintf(err, errlen, "fio exited with status %d: %.*s",
				 WEXITSTATUS(status), nl ? (int)(nl - msg) : 200, msg);
		else
			snprintf(err, errlen, "fio was killed by signal %d",
				 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		free(buf);
		return -EIO;
	}
	rc = buf ? fio_parse_bw(buf, job->rw, &bps) : -EINVAL;
	free(buf);
	if (rc) {
		snprintf(err, errlen, "no %s bandwidth in fio's JSON output", job->rw);
		return rc;
	}
	*out_mbs = bps / 1e6;
	return 0;
}
