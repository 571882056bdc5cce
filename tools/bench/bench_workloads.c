/*
 * bench_workloads.c - the workloads of `delog bench`: the table bench.c dispatches
 * from, one row per workload file (bench_<name>.c).
 *
 * Why a file of its own: bench.c (the command line, the target, signals, output) is
 * shared with delog-bench-peers, which has its own one-row table (peers_main.c).  The
 * peers comparison links RocksDB, SQLite and LMDB (and through RocksDB libstdc++); kept
 * out of this table, the `delog` a user installs links only what the log needs.  Its
 * row here only names the program: `delog bench --workload peers` (or --peers) runs
 * delog-bench-peers from the directory `delog` was started from, or says that it is
 * not there, or was not built (DELOG_BENCH_PEERS_BUILT, or DELOG_BENCH_PEERS_OFF
 * when it was left out on purpose, from tools/CMakeLists.txt).
 */
#include "bench.h"

static const struct bench_workload bench_peers_program = {
	.name = "peers",
	.summary = "the durable commit on delog, RocksDB, SQLite, LMDB and raw fdatasync, "
		   "side by side (also --peers)",
	.program = "delog-bench-peers",
#ifdef DELOG_BENCH_PEERS_BUILT
	.built = true,
#endif
#ifdef DELOG_BENCH_PEERS_OFF
	.not_built = "it was left out when delog was configured (-DDELOG_BENCH_PEERS=OFF; "
		     "configure with -DDELOG_BENCH_PEERS=ON and build again)",
#else
	.not_built = "none of RocksDB, SQLite and LMDB was found when delog was configured "
		     "(Debian: librocksdb-dev, libsqlite3-dev, liblmdb-dev; then configure and "
		     "build again)",
#endif
};

const struct bench_workload *const bench_workloads[] = {
	&bench_recovery,      &bench_commit, &bench_dbench,    &bench_fsmark,
	&bench_compare_flush, &bench_stream, &bench_spacewait, &bench_peers_program,
};

const size_t bench_nr_workloads = sizeof(bench_workloads) / sizeof(bench_workloads[0]);
