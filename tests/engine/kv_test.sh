#!/bin/sh
# kv_test.sh - docs/examples/kv end to end, run by ctest as engine.kv:
#
#   kv_test.sh KV TESTDIR
#
# What it proves:
#   - put / get / del / dump behave, usage errors exit 2, a missing key exits 1;
#   - every acknowledged put and del survives the process (reopen: a new process
#     replays the log), also across a write-back (data file + delog_release) and a
#     reopen after it;
#   - enough puts to fill the 16 MiB log many times over run through (the push callback
#     wakes the write-back, which releases the log: back-pressure never deadlocks);
#   - a `kv bench` killed with SIGKILL mid-run leaves a store that opens and holds
#     exactly a prefix bench-0 .. bench-(m-1) of the puts, with the right values, and at
#     least every put the bench had reported acknowledged ("acked I" lines).
# Why a shell script: kv is a command-line program, and the crash under test is a kill
# of the whole process (the log's writes are O_DIRECT, so they survive the process;
# power cuts are the sim disk's business, tests/engine/api.c).
# Exit 0 pass, 1 fail, 77 skip.
set -u

KV=${1:?path to kv}
DIR=${2:?test directory}
TMP=$(mktemp -d "${DIR}/kv_test.XXXXXX") || exit 1
BENCH_PID=
trap 'test -n "$BENCH_PID" && kill -9 "$BENCH_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"
DB=$TMP/db

# expect RC DESCRIPTION CMD... : run CMD, stdout to $TMP/out, stderr to $TMP/err.
expect() {
	want=$1
	what=$2
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, expected $want; stderr: $(cat "$TMP/err")"
		return 1
	fi
	return 0
}

# get_is KEY VALUE
get_is() {
	if expect 0 "get $1" "$KV" "$DB" get "$1"; then
		[ "$(cat "$TMP/out")" = "$2" ] || fail "get $1: '$(cat "$TMP/out")', expected '$2'"
	fi
}

# check_prefix FILE M: FILE is exactly "bench-%08d<TAB>value-I-..." for I = 0 .. M-1.
check_prefix() {
	awk -F '\t' -v m="$2" '
		{ want = sprintf("bench-%08d", NR - 1)
		  if ($1 != want) { print "line " NR ": key " $1 ", expected " want; bad = 1; exit }
		  split($2, v, "-")
		  if (v[1] != "value" || v[2] != NR - 1) { print "key " $1 ": value " $2; bad = 1; exit } }
		END { if (!bad && NR != m) print "count " NR " != " m }
	' "$1" >"$TMP/prefix"
	[ ! -s "$TMP/prefix" ]
}

# ---- usage ----
expect 2 "no arguments" "$KV"
expect 2 "unknown command" "$KV" "$DB" frob
expect 2 "put without value" "$KV" "$DB" put k
expect 2 "bench without count" "$KV" "$DB" bench
expect 2 "bench 0" "$KV" "$DB" bench 0

# ---- basic operations, each in its own process ----
expect 0 "put a" "$KV" "$DB" put a 1
[ -f "$DB/log" ] || fail "no log file after a put"
expect 0 "put b" "$KV" "$DB" put b "two words"
expect 0 "put c" "$KV" "$DB" put c 3
expect 0 "overwrite a" "$KV" "$DB" put a 11
get_is a 11
get_is b "two words"
expect 1 "get of a missing key" "$KV" "$DB" get zz
expect 0 "del c" "$KV" "$DB" del c
expect 1 "get of a deleted key" "$KV" "$DB" get c
expect 1 "del of a missing key" "$KV" "$DB" del c
expect 0 "dump" "$KV" "$DB" dump
printf 'a\t11\nb\ttwo words\n' >"$TMP/want"
cmp -s "$TMP/out" "$TMP/want" || fail "dump: $(cat "$TMP/out")"

# ---- many puts: the log (16 MiB) fills and is written back and released ----
# 6000 forced puts, one checkpoint each, take more than one lap of the log.  With the
# bench's periodic write-back off, only delog's push callback can start one: without
# it the log would fill and the bench block (bounded here by timeout).
TO=
command -v timeout >/dev/null 2>&1 && TO="timeout 120"
# shellcheck disable=SC2086 # $TO is empty or "timeout 120": splitting intended
expect 0 "bench 6000 (write-back on push only)" env KV_WRITEBACK_EVERY=0 $TO "$KV" "$DB" bench 6000
tail -n 1 "$TMP/out" | grep -qx "acked 6000" || fail "bench 6000: $(tail -n 1 "$TMP/out")"
[ -f "$DB/data" ] || fail "no data file after 6000 puts (write-back never ran)"
grep -q ', [1-9][0-9]* write-backs$' "$TMP/err" || fail "bench 6000: no write-back: $(cat "$TMP/err")"
get_is a 11
expect 0 "dump after bench" "$KV" "$DB" dump
n=$(grep -c '^bench-' "$TMP/out")
[ "$n" -eq 6000 ] || fail "dump after bench 6000: $n bench keys"
grep '^bench-' "$TMP/out" >"$TMP/bench.dump"
check_prefix "$TMP/bench.dump" 6000 || fail "bench 6000: $(cat "$TMP/prefix")"
expect 0 "del a after write-back" "$KV" "$DB" del a
expect 1 "a deleted after write-back" "$KV" "$DB" get a
get_is b "two words"

# ---- kill -9 mid-bench ----
DB=$TMP/crash
"$KV" "$DB" bench 100000000 >"$TMP/bench.out" 2>"$TMP/bench.err" &
BENCH_PID=$!
# Wait for some progress (bounded: 60 s), then kill without warning.
i=0
while [ $i -lt 600 ]; do
	acked=$(grep '^acked' "$TMP/bench.out" 2>/dev/null | tail -n 1 | cut -d' ' -f2)
	[ -n "$acked" ] && [ "$acked" -ge 3000 ] && break
	if ! kill -0 "$BENCH_PID" 2>/dev/null; then
		break
	fi
	sleep 0.1
	i=$((i + 1))
done
kill -9 "$BENCH_PID" 2>/dev/null
wait "$BENCH_PID" 2>/dev/null
BENCH_PID=
acked=$(grep '^acked' "$TMP/bench.out" | tail -n 1 | cut -d' ' -f2)
[ -n "$acked" ] || { fail "bench never acknowledged a put: $(cat "$TMP/bench.err")"; acked=0; }
if expect 0 "open after SIGKILL (dump)" "$KV" "$DB" dump; then
	# Exactly a prefix bench-0 .. bench-(m-1), each with its value.
	m=$(grep -c '^bench-' "$TMP/out")
	[ "$m" -ge "$acked" ] || fail "after SIGKILL: $m puts recovered, $acked were acknowledged"
	check_prefix "$TMP/out" "$m" || fail "after SIGKILL, not a prefix: $(cat "$TMP/prefix")"
	echo "kv_test: SIGKILL after $acked acknowledged puts: $m recovered"
	# The store keeps working after the crash, and the recovered state is stable.
	expect 0 "put after SIGKILL" "$KV" "$DB" put after crash
	get_is after crash
	expect 0 "dump after the put" "$KV" "$DB" dump
	m2=$(grep -c '^bench-' "$TMP/out")
	[ "$m2" -eq "$m" ] || fail "recovered $m bench puts, then $m2"
fi

# ---- self-test mode ----
expect 0 "self-test" "$KV" "$TMP/self"
grep -qx "kv: ok" "$TMP/out" || fail "self-test: $(cat "$TMP/out")"

finish "kv_test"
