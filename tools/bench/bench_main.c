/*
 * bench_main.c - delog-bench: the benchmark lab (bench.c's command line over the
 * workloads of bench_workloads.c), a program of its own.
 *
 * Why a program of its own: the benchmarks are the lab, not the product.  The `delog` a
 * user installs is the operator's tools and the crash checker; `delog bench ARGS` runs
 * this program, installed beside it, with the same arguments (tools/cli/delog.c), so
 * every spelling of the documentation still works, and delog-bench-peers is run the same
 * way from here.
 */
#include "bench.h"

int main(int argc, char **argv)
{
	/* getopt signs its messages with argv[0]: "delog bench", as bench.c's own are, not
	 * the path `delog bench` ran this program by. */
	argv[0] = (char *)"delog bench";
	return cmd_bench(argc, argv);
}
