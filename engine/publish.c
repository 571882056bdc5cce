/*
 * publish.c - a writing log's durable sequence, published for its followers in other
 * processes (reader.c): one shared page per log, POSIX shared memory named after the
 * log's uuid and the file that holds it (/dev/shm/delog-UUID-DEV-INO: a copy of a log
 * file has the same uuid, and its writer must not speak for the original).
 *
 * A follower may hand over only what is durable, and what it reads from the device says
 * nothing about that: a record it can read may still sit in the device's volatile cache.
 * The writer knows (delog_durable_seq), so it says it here.
 *
 *  (PB1) durable_seq in the page is never ahead of the log's own: pub_durable stores it
 *        after log_durable advanced (policy.c D1), so a follower that reads N may hand
 *        over every checkpoint up to N.  It only grows within a session; a new writing
 *        open stores the sequence its recovery made durable, which is never below what
 *        the last session published (recovery keeps every durable checkpoint).
 *  (PB2) While a follower watches (watchers > 0), every change is followed by a
 *        pwrite(2) of one byte at the page's end, so followers waiting in inotify
 *        (IN_MODIFY on the page) wake; with none, a durable advance costs one store and
 *        no system call.  The store into the mapping comes first and the count is read
 *        after it (both sequentially consistent), and a follower counts itself in
 *        before it reads the page: either the writer sees it and writes, or it reads
 *        the new value.  The byte is outside the fields: a write of the fields
 *        themselves could put back a value another thread's store had just replaced.
 *  (PB3) The page outlives a writer that did not close cleanly: state says OPEN (a
 *        writer has it, or had it and was killed: its last durable_seq stands) or
 *        SHUTDOWN (an error shut the log down: nothing more will be durable in this
 *        session), and the next writer takes the same page.  A clean close says CLOSED
 *        (everything is durable) and unlinks the page, before the writer lock is
 *        released, so no page is left behind by a log closed cleanly; a follower that
 *        has it mapped still reads CLOSED, and maps the next writer's new page when it
 *        appears (reader.c).  With no page and no writer, the log as it lies is
 *        durable: a clean close left it so, or the machine restarted since.
 * Publishing is best effort: a writer that cannot create the page (no /dev/shm, no
 * permission) runs unpublished, and followers in other processes then wait for a
 * writer that publishes (reader.c).  Only file and block-device logs publish.
 */
#include "engine_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pub_name(const uint8_t uuid[16], const char *path, char out[PUB_NAME_MAX])
{
	struct stat st;
	int o;

	if (stat(path, &st) != 0)
		return -errno;
	o = snprintf(out, PUB_NAME_MAX, "/delog-");
	for (int i = 0; i < 16; i++)
		o += snprintf(out + o, PUB_NAME_MAX - (size_t)o, "%02x", uuid[i]);
	/* a block device is its number; a file, its file system and inode */
	if (S_ISBLK(st.st_mode))
		snprintf(out + o, PUB_NAME_MAX - (size_t)o, "-b%llx",
			 (unsigned long long)st.st_rdev);
	else
		snprintf(out + o, PUB_NAME_MAX - (size_t)o, "-%llx-%llx",
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	return 0;
}

/* (PB2) The store is made; now the write that wakes followers in inotify, if any wait. */
static void pub_poke(struct delog *log)
{
	static const char zero;
	ssize_t n;

	if (!atomic_load(&log->pub->watchers))
		return;
	n = pwrite(log->pub_fd, &zero, 1, PUB_PAGE_BYTES - 1);
	(void)n; /* best effort: a follower also times out and looks again */
}

void pub_open(struct delog *log, const char *path, uint64_t durable)
{
	char name[PUB_NAME_MAX];
	struct stat st;
	struct pub_page *p;
	int fd;

	log->pub_fd = -1;
	if (!path || stat(path, &st) != 0 || pub_name(log->geom.uuid, path, name) != 0)
		return;
	fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	/* whoever may read the log may follow it */
	if (fchmod(fd, st.st_mode & 0666) != 0 || ftruncate(fd, PUB_PAGE_BYTES) != 0) {
		close(fd);
		return;
	}
	p = mmap(NULL, PUB_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return;
	}
	/* the magic last: a follower that sees it sees the rest */
	p->version = PUB_VERSION;
	memcpy(p->uuid, log->geom.uuid, sizeof(p->uuid));
	atomic_store(&p->pid, (int64_t)getpid());
	atomic_store(&p->durable_seq, durable);
	atomic_store(&p->state, PUB_OPEN);
	atomic_thread_fence(memory_order_release);
	memcpy(p->magic, PUB_MAGIC, sizeof(p->magic));
	log->pub = p;
	log->pub_fd = fd;
	memcpy(log->pub_name, name, sizeof(log->pub_name));
	pub_poke(log);
}

/* (PB1) Advances may arrive out of order (policy.c D2): the page keeps the highest. */
void pub_durable(struct delog *log, uint64_t seq)
{
	uint64_t cur;

	if (!log->pub)
		return;
	cur = atomic_load(&log->pub->durable_seq);
	while (cur < seq && !atomic_compare_exchange_weak(&log->pub->durable_seq, &cur, seq))
		;
	pub_poke(log);
}

void pub_state(struct delog *log, uint32_t state)
{
	if (!log->pub)
		return;
	atomic_store(&log->pub->state, state); /* (PB3) */
	pub_poke(log);
}

void pub_release(struct delog *log)
{
	if (!log->pub)
		return;
	if (atomic_load(&log->pub->state) == PUB_CLOSED) /* (PB3) */
		shm_unlink(log->pub_name);
	munmap(log->pub, PUB_PAGE_BYTES);
	close(log->pub_fd);
	log->pub = NULL;
	log->pub_fd = -1;
}
