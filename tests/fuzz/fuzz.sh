#!/usr/bin/env bash
# tests/fuzz/fuzz.sh - run delog's libFuzzer targets (tests/fuzz/) for a number of executions
# or a time budget, and report what they did.
#
# Builds build-fuzz (CC=clang cmake -DDELOG_FUZZ=ON: everything with ASan + UBSan and
# libFuzzer's coverage instrumentation) unless it is already configured that way, then
# runs each target in turn:
#   fuzz_<target> -runs=N (or -max_total_time=T) -artifact_prefix=CRASHDIR/<target>-
#                 WORKDIR/corpus/<target> tests/fuzz/corpus/<target>
# The first corpus directory (under WORKDIR, outside the source tree) receives the inputs
# libFuzzer finds interesting; the committed seeds are only read.  Crashes, leaks, timeouts
# and out-of-memory inputs land in CRASHDIR as <target>-crash-<sha1> etc.; reproduce one
# with build-fuzz/tests/fuzz/fuzz_<target> FILE.  At the end a table gives, per target,
# the executions done, the wall time, executions per second, the corpus size and the
# number of crash files written by this run.  Exit status: 0 when no target crashed,
# 1 when one did, 2 for a usage or build error.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: tests/fuzz/fuzz.sh [options] [target...]
  targets: record, recover (default: both)
  -n, --runs N        executions per target (default 1000000)
  -t, --time SECONDS  run each target for SECONDS instead (-max_total_time)
  -j, --jobs J        run the targets at the same time, J at once (default 1)
  -p, --workers W     W processes per target sharing its corpus, seeds S..S+W-1, the
                      executions split between them (default 1)
  -b, --build DIR     build directory (default build-fuzz)
  -c, --crashes DIR   where crash inputs go (default DIR/fuzz-crashes)
  -w, --work DIR      where the growing corpora and logs go (default DIR/fuzz-work)
  -s, --seed S        libFuzzer -seed (default 1)
      --no-build      do not configure or build
  -h, --help          this text
Extra libFuzzer flags may follow "--", e.g. tests/fuzz/fuzz.sh record -- -max_len=8192
EOF
}

cd "$(dirname "$0")/../.."
src=$PWD
runs=1000000
time_budget=
jobs=1
workers=1
build=build-fuzz
crashes=
work=
seed=1
do_build=1
targets=()
extra=()
while [ $# -gt 0 ]; do
	case $1 in
	-n|--runs) runs=$2; shift 2 ;;
	-t|--time) time_budget=$2; shift 2 ;;
	-j|--jobs) jobs=$2; shift 2 ;;
	-p|--workers) workers=$2; shift 2 ;;
	-b|--build) build=$2; shift 2 ;;
	-c|--crashes) crashes=$2; shift 2 ;;
	-w|--work) work=$2; shift 2 ;;
	-s|--seed) seed=$2; shift 2 ;;
	--no-build) do_build=0; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; extra=("$@"); break ;;
	record|recover) targets+=("$1"); shift ;;
	*) echo "fuzz.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
[ ${#targets[@]} -gt 0 ] || targets=(record recover)
case $runs in ''|*[!0-9]*) echo "fuzz.sh: --runs wants a number" >&2; exit 2 ;; esac
crashes=${crashes:-$build/fuzz-crashes}
work=${work:-$build/fuzz-work}

if [ $do_build = 1 ]; then
	if ! grep -qs '^DELOG_FUZZ:BOOL=ON' "$build/CMakeCache.txt" ||
	   ! grep -qs '^CMAKE_C_COMPILER_ID:.*Clang\|CMAKE_C_COMPILER:.*clang' "$build/CMakeCache.txt"; then
		command -v clang >/dev/null || { echo "fuzz.sh: clang is needed" >&2; exit 2; }
		CC=clang cmake -S "$src" -B "$build" -DDELOG_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo ||
			exit 2
	fi
	cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" || exit 2
fi
mkdir -p "$crashes" "$work"
crashes=$(cd "$crashes" && pwd)
work=$(cd "$work" && pwd)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run_target T: runs it (W workers), leaves "execs secs crashes corpus status" in
# $work/T.result.
run_target() {
	local t=$1 bin=$build/tests/fuzz/fuzz_$1 log=$work/$1.log
	local before after t0 t1 status=0 execs=0 e i wp=() limit
	[ -x "$bin" ] || { echo "fuzz.sh: $bin not built" >&2; return 2; }
	mkdir -p "$work/corpus/$t"
	before=$(ls "$crashes" | grep -c "^$t-" || true)
	t0=$(date +%s.%N)
	for ((i = 0; i < workers; i++)); do
		if [ -n "$time_budget" ]; then
			limit=(-max_total_time="$time_budget")
		else # the first worker takes the remainder
			limit=(-runs=$((runs / workers + (i == 0 ? runs % workers : 0))))
		fi
		[ "$workers" = 1 ] || log=$work/$t.$i.log
		echo "fuzz.sh: $t: ${limit[*]} -seed=$((seed + i)), log $log"
		"$bin" "${limit[@]}" -seed=$((seed + i)) -print_final_stats=1 \
			-artifact_prefix="$crashes/$t-" "${extra[@]}" \
			"$work/corpus/$t" "$src/tests/fuzz/corpus/$t" >"$log" 2>&1 &
		wp+=($!)
	done
	for i in "${!wp[@]}"; do
		wait "${wp[$i]}" || status=$?
	done
	t1=$(date +%s.%N)
	after=$(ls "$crashes" | grep -c "^$t-" || true)
	for ((i = 0; i < workers; i++)); do
		[ "$workers" = 1 ] || log=$work/$t.$i.log
		# stat::number_of_executed_units counts every input run, seeds included.
		e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		[ -n "$e" ] || e=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
		execs=$((execs + ${e:-0}))
		if grep -q "ERROR: \|==ERROR\|deadly signal\|check failed" "$log"; then
			echo "fuzz.sh: $t: failure in $log; its end:" >&2
			tail -40 "$log" >&2
		fi
	done
	echo "$execs $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $((after - before)) $(ls "$work/corpus/$t" | wc -l) $status" \
		>"$work/$t.result"
	[ "$status" = 0 ] || echo "fuzz.sh: $t exited with status $status" >&2
}

pids=()
for t in "${targets[@]}"; do
	if [ "$jobs" -gt 1 ]; then
		run_target "$t" &
		pids+=($!)
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
	else
		run_target "$t" || true
	fi
done
for p in "${pids[@]}"; do wait "$p" || true; done

rc=0
printf '\n%-8s %12s %10s %10s %8s %8s\n' target execs seconds exec/s corpus crashes
for t in "${targets[@]}"; do
	read -r execs secs new corpus status <"$work/$t.result"
	printf '%-8s %12s %10.1f %10.0f %8s %8s\n' "$t" "$execs" "$secs" \
		"$(awk -v e="$execs" -v s="$secs" 'BEGIN { print (s > 0 ? e / s : 0) }')" "$corpus" "$new"
	if [ "$new" != 0 ] || [ "$status" != 0 ]; then rc=1; fi
done
[ $rc = 0 ] || echo "fuzz.sh: crash inputs in $crashes" >&2
exit $rc
