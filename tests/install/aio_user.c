/*
 * aio_user.c - a program that uses libaio itself and links libdelog.a, as a user's
 * program may (tests/install/symbols_test.sh).
 *
 *   aio_user FILE
 *
 * Writes one 4 KiB block to FILE with io_setup + io_prep_pwrite + io_submit +
 * io_getevents, reads it back with pread and compares.  It calls one delog function,
 * so that libdelog.a is linked in for real.  When libdelog.a exported a function of
 * libaio's name (the iolayer's io_submit did), the call below landed in delog's and
 * crashed.  Exit 0 when the write landed, 1 otherwise.
 */
#include <delog.h>

#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[4096], back[4096];
	io_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	int fd, r;

	if (argc != 2) {
		fprintf(stderr, "usage: aio_user FILE\n");
		return 2;
	}
	printf("linked with %s\n", delog_version_string());
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	memset(buf, 0x5a, sizeof(buf));
	r = io_setup(8, &ctx);
	if (r < 0) {
		fprintf(stderr, "io_setup: %s\n", strerror(-r));
		return 1;
	}
	io_prep_pwrite(&cb, fd, buf, sizeof(buf), 0);
	r = io_submit(ctx, 1, cbs);
	if (r != 1) {
		fprintf(stderr, "io_submit returned %d (%s)\n", r, r < 0 ? strerror(-r) : "");
		return 1;
	}
	r = io_getevents(ctx, 1, 1, &ev, NULL);
	if (r != 1 || ev.obj != &cb || ev.res != sizeof(buf)) {
		fprintf(stderr, "io_getevents returned %d, res %ld\n", r, (long)ev.res);
		return 1;
	}
	io_destroy(ctx);
	if (pread(fd, back, sizeof(back), 0) != (ssize_t)sizeof(back) ||
	    memcmp(buf, back, sizeof(buf)) != 0) {
		fprintf(stderr, "the block read back differs from the one written\n");
		return 1;
	}
	close(fd);
	printf("libaio write of %zu bytes landed\n", sizeof(buf));
	return 0;
}
