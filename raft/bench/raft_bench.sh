#!/bin/sh
# raft_bench.sh KV KVBENCH CLIENT DIR [SECONDS] - delog-raft-kv on delog storage against C-Raft's
# own storage (--storage uv): a benchmark, not a test (it prints, it never fails on a
# number).
#
# For each clients-in-flight count (1, 16, 64) and value size (128 B, 4 KiB), the two
# storages run one after the other (interleaved, so drift in the machine hits both),
# each as a fresh 3-node cluster on 127.0.0.1 with its directories under DIR (one disk).
# Each run: SETs for SECONDS (default 5) through the leader from KVBENCH (kvbench.c: one
# thread and connection per request in flight; CLIENT, kvclient.py, only finds the
# leader); committed writes per
# second, p50/p99 latency, and device flushes per committed write from the disk's
# /sys/class/block/DEV/stat (field 16: flush requests completed; counts every process on the
# disk, so run it on a quiet machine), and the CPU time (user + system, /proc/PID/stat) the
# three daemons spent in the window per committed write.  delog runs with --policy
# single.  Then the ratios delog / uv for each row: writes per second, and CPU per write.
set -u
KV=$1
KVBENCH=$2
CLIENT=$3
BASE=$4
SECS=${5:-5}
PY=$(python3 -c 'import sys; print(sys.executable)')
TMP=$(mktemp -d "$BASE/raft-bench.XXXXXX") || exit 1
PIDS=
cleanup() {
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

dev=$(df -P "$BASE" | awk 'NR == 2 { print $1 }')
stat=/sys/class/block/$(basename "$dev")/stat
[ -r "$stat" ] || stat=
flushes() {
	if [ -n "$stat" ]; then awk '{ print ($16 == "" ? 0 : $16) }' "$stat"; else echo 0; fi
}

# cputicks PID... : user + system clock ticks of the processes so far.
cputicks() {
	t=0
	for p in "$@"; do
		v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
		t=$((t + ${v:-0}))
	done
	echo $t
}
HZ=$(getconf CLK_TCK)

port=$((20000 + $$ % 50 * 20))
run() { # storage inflight size -> prints "writes/s p50 p99 flushes/write"
	port=$((port + 3))
	[ $port -gt 21900 ] && port=20003
	cl="1=127.0.0.1:$((port + 1)),2=127.0.0.1:$((port + 2)),3=127.0.0.1:$((port + 3))"
	nodes="127.0.0.1:$((port + 1001)),127.0.0.1:$((port + 1002)),127.0.0.1:$((port + 1003))"
	extra=
	[ "$1" = delog ] && extra="--policy single --size 256M"
	rm -rf "$TMP/n1" "$TMP/n2" "$TMP/n3"
	PIDS=
	for i in 1 2 3; do
		# shellcheck disable=SC2086
		"$KV" --id $i --cluster "$cl" --dir "$TMP/n$i" --storage "$1" $extra \
			--snapshot-every 4096 --trailing 1024 2>>"$TMP/log" &
		PIDS="$PIDS $!"
	done
	"$PY" "$CLIENT" leader "$nodes" --wait 15 >/dev/null
	f0=$(flushes)
	# shellcheck disable=SC2086
	c0=$(cputicks $PIDS)
	out=$("$KVBENCH" "$nodes" "$2" "$3" "$SECS")
	# shellcheck disable=SC2086
	c1=$(cputicks $PIDS)
	f1=$(flushes)
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	PIDS=
	echo "$out" | awk -v f=$((f1 - f0)) -v hs="${stat:+1}" -v c=$((c1 - c0)) -v hz="$HZ" '{
		n = $6; r = $10; sub("/s", "", r); p50 = $12; p99 = $15
		printf "%s %s %s %s %s\n", r, p50, p99, (hs && n > 0) ? sprintf("%.2f", f / n) : "n/a",
			(n > 0) ? sprintf("%.1f", c / hz / n * 1e6) : "n/a" }'
}

echo "delog-raft-kv, 3 nodes on 127.0.0.1, $SECS s per run, directories on $dev (${stat:-no stat})"
printf "%-6s %8s %6s %10s %9s %9s %13s %13s\n" storage inflight size "writes/s" "p50 ms" "p99 ms" \
	"flushes/write" "cpu us/write"
for inflight in 1 16 64; do
	for size in 128 4096; do
		for s in delog uv; do
			set -- $(run $s $inflight $size)
			printf "%-6s %8s %6s %10s %9s %9s %13s %13s\n" $s $inflight $size "$1" "$2" \
				"$3" "$4" "$5"
			echo "$s $inflight $size $1 $5" >>"$TMP/res"
		done
	done
done
echo
echo "ratio delog / uv (committed writes per second; CPU time per committed write):"
awk '{ k = $2 " " $3; if ($1 == "delog") { d[k] = $4; dc[k] = $5 } else { u[k] = $4; uc[k] = $5 }
       ks[k] = 1 }
     END { for (k in ks) { split(k, a, " ");
	printf "  inflight %3s size %5s: %.2fx writes/s, %.2fx CPU per write\n", a[1], a[2],
		(u[k] > 0 ? d[k] / u[k] : 0), (uc[k] > 0 ? dc[k] / uc[k] : 0) } }' \
	"$TMP/res" | sort -k2n -k4n
