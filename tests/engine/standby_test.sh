#!/bin/sh
# standby_test.sh - docs/examples/standby following docs/examples/kv, end to end, run by
# ctest as engine.standby:
#
#   standby_test.sh KV STANDBY TESTDIR
#
# What it proves:
#   - a new standby (`standby P S --once`) copies a primary kv store exactly: `kv P dump`
#     and `standby P S dump` print the same; get answers from the standby's own log;
#   - a standby run again resumes after the last primary checkpoint it applied: it
#     applies only the new ones (its summary line counts them), and the copy is exact;
#   - a standby following a live primary (no --once) sees a put within seconds and
#     exits 0 on SIGTERM;
#   - a standby killed with SIGKILL while it follows a primary being written leaves a
#     copy that opens and is the primary's state at some checkpoint (a prefix of the
#     bench's puts); run again with --once after the primary finished, the copy is exact;
#   - a new standby of a primary that has already released its first checkpoints (kv's
#     write-back) refuses to start in the middle: exit 1, saying it must be rebuilt from
#     a copy of the primary's data file;
#   - usage errors exit 2, a missing key or a missing standby log exits 1.
# Space: kv forces each put into a checkpoint of its own, about 8 KiB of its 16 MiB log,
# and the standby logs each one again in its 16 MiB log, which it never releases.  The
# primary here runs with KV_WRITEBACK_EVERY=0 and makes about 1000 checkpoints, so it
# never writes back (its push callback starts at 75% full, a kv open at 50%) before the
# standby has them, and the standby's log stays about half full.
# Exit 0 pass, 1 fail, 77 skip.
set -u

KV=${1:?path to kv}
SB=${2:?path to standby}
DIR=${3:?test directory}
TMP=$(mktemp -d "${DIR}/standby_test.XXXXXX") || exit 1
BENCH_PID=
SB_PID=
trap 'test -n "$BENCH_PID" && kill -9 "$BENCH_PID" 2>/dev/null
	test -n "$SB_PID" && kill -9 "$SB_PID" 2>/dev/null
	rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"
P=$TMP/primary
S=$TMP/standby
export KV_WRITEBACK_EVERY=0
TO=
command -v timeout >/dev/null 2>&1 && TO="timeout 120"

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

# once WHAT: `standby P S --once` (bounded by timeout); sets $applied from its summary.
once() {
	applied=
	# shellcheck disable=SC2086 # $TO is empty or "timeout 120": splitting intended
	if expect 0 "$1: standby --once" $TO "$SB" "$P" "$S" --once; then
		applied=$(sed -n 's/^standby: \([0-9]*\) checkpoints applied.*/\1/p' "$TMP/err" |
			tail -n 1)
		[ -n "$applied" ] || fail "$1: no summary line: $(cat "$TMP/err")"
	fi
}

# same WHAT: `kv P dump` and `standby P S dump` print the same, and something.
same() {
	expect 0 "$1: kv dump" "$KV" "$P" dump || return
	mv "$TMP/out" "$TMP/primary.dump"
	expect 0 "$1: standby dump" "$SB" "$P" "$S" dump || return
	if ! cmp -s "$TMP/primary.dump" "$TMP/out"; then
		fail "$1: the standby differs from the primary:"
		diff "$TMP/primary.dump" "$TMP/out" | head -n 10 >&2
	elif [ ! -s "$TMP/out" ]; then
		fail "$1: both dumps are empty"
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

# ---- usage and missing things ----
expect 2 "no arguments" "$SB"
expect 2 "one argument" "$SB" "$P"
expect 2 "unknown command" "$SB" "$P" "$S" frob
expect 2 "get without key" "$SB" "$P" "$S" get
expect 2 "get with an empty key" "$SB" "$P" "$S" get ""
expect 1 "dump without a standby log" "$SB" "$P" "$S" dump
expect 1 "--once without a primary log" "$SB" "$P" "$S" --once

# ---- a new standby copies the primary ----
# shellcheck disable=SC2086
expect 0 "bench 200" $TO "$KV" "$P" bench 200
expect 0 "put a" "$KV" "$P" put a 1
expect 0 "put b" "$KV" "$P" put b "two words"
expect 0 "put c" "$KV" "$P" put c 3
expect 0 "overwrite a" "$KV" "$P" put a 11
expect 0 "del c" "$KV" "$P" del c
expect 0 "del bench-00000007" "$KV" "$P" del bench-00000007
once "new standby"
[ "$applied" = 206 ] || fail "new standby: applied $applied checkpoints, expected 206"
same "new standby"
if expect 0 "standby get b" "$SB" "$P" "$S" get b; then
	[ "$(cat "$TMP/out")" = "two words" ] || fail "standby get b: '$(cat "$TMP/out")'"
fi
expect 1 "standby get of a deleted key" "$SB" "$P" "$S" get c
expect 1 "standby get of a missing key" "$SB" "$P" "$S" get zz

# ---- run again: it resumes after the last checkpoint it applied ----
once "nothing new"
[ "$applied" = 0 ] || fail "nothing new: applied $applied checkpoints, expected 0"
expect 0 "put d" "$KV" "$P" put d 4
expect 0 "del b" "$KV" "$P" del b
expect 0 "put b again" "$KV" "$P" put b again
expect 0 "put bench-00000007 again" "$KV" "$P" put bench-00000007 seven
once "resume"
[ "$applied" = 4 ] || fail "resume: applied $applied checkpoints, expected 4"
same "resume"

# ---- following a live primary; SIGTERM ends it with exit 0 ----
"$SB" "$P" "$S" >"$TMP/sb.out" 2>"$TMP/sb.err" &
SB_PID=$!
expect 0 "put live" "$KV" "$P" put live yes
i=0
while [ $i -lt 100 ]; do
	"$SB" "$P" "$S" get live >"$TMP/out" 2>/dev/null && break
	sleep 0.1
	i=$((i + 1))
done
[ "$(cat "$TMP/out")" = yes ] || fail "the following standby did not apply a put within 10 s"
kill -TERM "$SB_PID"
wait "$SB_PID"
rc=$?
SB_PID=
[ "$rc" -eq 0 ] || fail "standby after SIGTERM: exit $rc, expected 0: $(cat "$TMP/sb.err")"
same "after SIGTERM"

# ---- kill -9 while following a primary being written ----
# The bench puts bench-0 .. bench-799 again: the first 200 (bench-7 back to its value),
# then 600 new ones.  The standby is killed once it has applied bench-300 (the standby
# keeps pace with the primary, so that is usually mid-stream: the test says where).
"$SB" "$P" "$S" >"$TMP/sb.out" 2>"$TMP/sb.err" &
SB_PID=$!
sleep 0.3
"$KV" "$P" bench 800 >"$TMP/bench.out" 2>"$TMP/bench.err" &
BENCH_PID=$!
i=0
while [ $i -lt 600 ]; do
	"$SB" "$P" "$S" get bench-00000300 >/dev/null 2>&1 && break
	kill -0 "$BENCH_PID" 2>/dev/null || break
	sleep 0.02
	i=$((i + 1))
done
kill -9 "$SB_PID" 2>/dev/null
wait "$SB_PID" 2>/dev/null
SB_PID=
wait "$BENCH_PID"
rc=$?
BENCH_PID=
[ "$rc" -eq 0 ] || fail "bench 800 beside the standby: exit $rc: $(cat "$TMP/bench.err")"
# The killed standby's copy opens and is the primary's state at some checkpoint: the
# bench's puts up to some m (at least the 200 it had before).
if expect 0 "standby dump after SIGKILL" "$SB" "$P" "$S" dump; then
	grep '^bench-' "$TMP/out" >"$TMP/bench.dump"
	m=$(grep -c . "$TMP/bench.dump")
	[ "$m" -ge 200 ] || fail "after SIGKILL: $m bench keys in the standby, expected >= 200"
	check_prefix "$TMP/bench.dump" "$m" || fail "after SIGKILL, not a prefix: $(cat "$TMP/prefix")"
	echo "standby_test: standby killed with $m of the bench's 800 keys applied"
fi
once "restart after SIGKILL"
same "restart after SIGKILL"
expect 0 "kv dump at the end" "$KV" "$P" dump
n=$(grep -c '^bench-' "$TMP/out")
[ "$n" -eq 800 ] || fail "the primary holds $n bench keys, expected 800"

# ---- a new standby of a primary that released its first checkpoints ----
# kv writes back every 2048 puts of a bench (and when its log fills) and releases the
# log: checkpoint 1 is then only in the data file.
unset KV_WRITEBACK_EVERY
# shellcheck disable=SC2086
expect 0 "bench 2100 (with write-back)" $TO "$KV" "$TMP/p2" bench 2100
[ -f "$TMP/p2/data" ] || fail "bench 2100: no data file (no write-back)"
# shellcheck disable=SC2086
if expect 1 "standby of a released primary" $TO "$SB" "$TMP/p2" "$TMP/s2" --once; then
	expect_in "$TMP/err" "rebuilt from a copy of the primary's data file" "behind"
	expect_in "$TMP/err" "released checkpoint 1 " "behind"
fi

finish "standby_test"
