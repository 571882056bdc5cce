/*
 * peers_main.c - delog-bench-peers: the comparison of delog's durable commit with
 * RocksDB, SQLite, LMDB and raw fdatasync (bench_peers.c), as a program of its own.
 *
 * Why a program of its own: the peers link librocksdb, libsqlite3, liblmdb and (through
 * RocksDB) libstdc++, none of which the log needs; in `delog` they would be loaded by
 * every user's `delog format`.  This program is built only when at least one of those
 * libraries is found (tools/CMakeLists.txt), installed beside `delog`, and run by
 * `delog bench --workload peers` / `delog bench --peers` with the same arguments, so
 * both spellings behave alike.  It is bench.c's command line with one workload: its
 * options are the common ones (--path, --backend, --json, ...) and the workload's;
 * --workload peers and --peers are accepted and may be left out.
 */
#include "bench.h"

const struct bench_workload *const bench_workloads[] = { &bench_peers };
const size_t bench_nr_workloads = 1;

int main(int argc, char **argv)
{
	/* getopt signs its messages with argv[0]: "delog bench", as bench.c's own are, not
	 * the path `delog bench --peers` ran this program by (delog.c's top comment). */
	argv[0] = (char *)"delog bench";
	return cmd_bench(argc, argv);
}
