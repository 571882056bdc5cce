/*
 * raft_user.c - a program that calls delog_raft_* (and C-Raft's and libuv's own calls)
 * but no delog_* function, so it links libdelog-raft alone.  Run from a non-system
 * prefix with only its own rpath, it starts only if libdelog-raft finds libdelog by
 * itself (its RUNPATH, $ORIGIN): install_test.sh.  Prints "raft_user: ok".
 */
#include <delog_raft.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdio.h>
#include <uv.h>

int main(int argc, char **argv)
{
	struct raft_uv_transport transport = { 0 };
	struct raft_io io = { 0 };
	uv_loop_t loop;
	int rv;

	if (argc != 2) {
		fprintf(stderr, "usage: raft_user DIR\n");
		return 2;
	}
	if (uv_loop_init(&loop) || raft_uv_tcp_init(&transport, &loop)) {
		fprintf(stderr, "raft_user: cannot set up libuv and the transport\n");
		return 1;
	}
	rv = delog_raft_init(&io, &loop, argv[1], &transport, NULL);
	if (rv) {
		fprintf(stderr, "raft_user: delog_raft_init: %d\n", rv);
		return 1;
	}
	delog_raft_close(&io);
	raft_uv_tcp_close(&transport);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	puts("raft_user: ok");
	return 0;
}
