#!/bin/sh
# follow_test.sh - `delog follow`, the `tail -f` of a log, end to end, run by ctest
# (tools.follow).
#
#   follow_test.sh DELOG TESTDIR
#
# On logs `delog stress` writes (forced checkpoints of ids, in files of TESTDIR):
#   - --count 3 prints 3 checkpoint lines ("checkpoint SEQ lsn C/S items N bytes B", an
#     indented "key K len L" per item), from the oldest, consecutive, and exits 0;
#     --from 2 starts at 2; --backend psync reads the same; the log is never written
#     (size, mtime and checksum unchanged by every run);
#   - --json --count 2: two lines, each a JSON object with consecutive seq, items whose
#     data is lowercase hex of len bytes, the same seq and lsn as the text (python3;
#     without it the lines are only counted);
#   - a closed pipe ends it with exit 0: `follow --json | head -1` (the write meets
#     EPIPE), and a follow waiting past the last checkpoint whose reader goes away;
#   - SIGINT and SIGTERM, at a checkpoint stream's end, exit 0 (SIGINT needs
#     `env --default-signal`: the shell starts a background job with SIGINT ignored,
#     and follow leaves an ignored stop signal ignored, like bench and probe);
#   - live: a follow started beside a writer prints each checkpoint the writer makes
#     durable, in order, once, up to the last (then SIGTERM);
#   - behind: on a 4 MiB log that stress wrapped (its push callback released the old
#     checkpoints), --from 1 exits 1 naming the log, DELOG_EBEHIND, checkpoint 1 and
#     --from 0 (with --json, the error object), and --from 0 starts at the oldest held;
#   - a missing LOG exits 1 naming it (--json: the error object), a FIFO exits 1 at
#     once naming the kind; usage errors (--from x, --count -1, no LOG, an unknown
#     option, --backend sim) exit 2 and print nothing on stdout.
# Every follow runs under timeout(1): a hang fails (exit 124) instead of stalling ctest.
# The writer's pages (/dev/shm/delog-UUID) of the logs made here are removed at the end.
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
TMP=$(mktemp -d "${DIR}/follow_test.XXXXXX") || exit 1
BGPID=
SPID=

# The pages of the logs made here, then the directory.
cleanup() {
	for p in $BGPID $SPID; do
		kill -KILL "$p" 2>/dev/null
	done
	for l in "$TMP"/*.log; do
		[ -f "$l" ] || continue
		u=$("$DELOG" print --no-ops "$l" 2>/dev/null |
			sed -n 's/^  uuid \([0-9a-f-]*\),.*/\1/p' | tr -d -)
		[ -n "$u" ] && rm -f "/dev/shm/delog-$u" "/dev/shm/delog-$u"-*
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../lib.sh"

command -v timeout >/dev/null 2>&1 || skip "timeout(1) is not installed"
HAVE_PY=1
command -v python3 >/dev/null 2>&1 || HAVE_PY=

state() {
	echo "$(stat -c '%s %.9Y' "$1") $(cksum <"$1")"
}

not_in() {
	! grep -qF -- "$2" "$1" || fail "$3: '$2' should not be in $(basename "$1")"
}

# follow WANT WHAT ARGS... : `delog follow ARGS...` under timeout, like expect_rc.
follow() {
	want=$1
	what=$2
	shift 2
	expect_rc "$want" "$what" timeout 20 "$DELOG" follow "$@"
	# shellcheck disable=SC2154 # rc is expect_rc's (lib.sh)
	[ "$rc" -eq 124 ] && fail "$what: hung (killed after 20 s)"
}

# seqs FILE : the sequences of FILE's checkpoint lines, one a line.
seqs() {
	sed -n 's/^checkpoint \([0-9]*\) .*/\1/p' "$1"
}

# consecutive FILE FIRST WHAT : FILE's checkpoint lines start at FIRST, one apart.
consecutive() {
	seqs "$1" >"$TMP/seqs"
	want=$2
	while read -r s; do
		[ "$s" -eq "$want" ] || {
			fail "$3: checkpoint $s where $want was next"
			return
		}
		want=$((want + 1))
	done <"$TMP/seqs"
}

# stop_bg SIG WHAT : send SIG to $BGPID, which must exit 0 within 10 s.
stop_bg() {
	kill "-$1" "$BGPID"
	i=0
	while kill -0 "$BGPID" 2>/dev/null && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$BGPID" 2>/dev/null; then
		fail "$2: still running 10 s after SIG$1"
		kill -KILL "$BGPID"
	fi
	wait "$BGPID"
	bgrc=$?
	BGPID=
	[ "$bgrc" -eq 0 ] || fail "$2: exit $bgrc after SIG$1, expected 0"
}

# wait_output FILE WHAT : wait up to 20 s until FILE is not empty.
wait_output() {
	i=0
	while [ ! -s "$1" ] && [ "$i" -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$1" ] || fail "$2: printed nothing in 20 s"
}

L=$TMP/a.log
"$DELOG" stress "$L" --threads 2 --count 50 --size 8M >/dev/null 2>"$TMP/stress.err" || {
	grep -q "ENODIRECT\|O_DIRECT" "$TMP/stress.err" &&
		skip "$DIR cannot hold a log (no O_DIRECT): $(tail -1 "$TMP/stress.err")"
	fail "stress: $(tail -1 "$TMP/stress.err")"
	finish follow_test
}
before=$(state "$L")

# --count, the text format, --from, --backend.
follow 0 "--count 3" "$L" --count 3
[ "$(grep -c '^checkpoint ' "$TMP/out")" -eq 3 ] ||
	fail "--count 3: $(grep -c '^checkpoint ' "$TMP/out") checkpoint lines"
grep -v '^checkpoint [0-9]* lsn [0-9]*/[0-9]* items [0-9]* bytes [0-9]*$' "$TMP/out" |
	grep -v '^  key [0-9]* len [0-9]*$' >"$TMP/odd" && fail "--count 3: odd lines: $(head -3 "$TMP/odd")"
consecutive "$TMP/out" 1 "--count 3"
cp "$TMP/out" "$TMP/text3"
follow 0 "--from 2 --count 2" "$L" --from 2 --count 2
consecutive "$TMP/out" 2 "--from 2"
[ "$(seqs "$TMP/out" | wc -l)" -eq 2 ] || fail "--from 2 --count 2: $(seqs "$TMP/out" | wc -l) checkpoints"
follow 0 "--backend psync --count 3" "$L" --backend psync --count 3
cmp -s "$TMP/out" "$TMP/text3" || fail "--backend psync printed other checkpoints"

# --json.
follow 0 "--json --count 2" "$L" --json --count 2
[ "$(wc -l <"$TMP/out")" -eq 2 ] || fail "--json --count 2: $(wc -l <"$TMP/out") lines"
[ -s "$TMP/err" ] && fail "--json --count 2: stderr: $(cat "$TMP/err")"
if [ -n "$HAVE_PY" ]; then
	python3 - "$TMP/out" "$TMP/text3" <<'PY' 2>"$TMP/py.err" || fail "--json: $(tail -1 "$TMP/py.err")"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
text = {}
for l in open(sys.argv[2]):
    m = re.match(r"checkpoint (\d+) lsn (\d+)/(\d+) items (\d+) bytes (\d+)$", l)
    if m:
        text[int(m.group(1))] = tuple(int(g) for g in m.groups()[1:])
assert [d["seq"] for d in lines] == [1, 2], "seqs %r" % [d["seq"] for d in lines]
for d in lines:
    assert set(d) == {"seq", "lsn", "items"}, "members %r" % sorted(d)
    cyc, sec, n, b = text[d["seq"]]
    assert (d["lsn"] >> 32, d["lsn"] & 0xffffffff) == (cyc, sec), "lsn %r" % d["lsn"]
    assert len(d["items"]) == n and sum(i["len"] for i in d["items"]) == b, "items"
    for i in d["items"]:
        assert set(i) == {"key", "len", "data"}, "item members %r" % sorted(i)
        assert re.fullmatch("[0-9a-f]*", i["data"]), "data not lowercase hex"
        assert len(i["data"]) == 2 * i["len"], "data of %d hex digits, len %d" % (len(i["data"]), i["len"])
PY
else
	echo "python3 is not installed: the JSON lines are counted, not parsed" >&2
fi

# A closed pipe: the write that meets it (EPIPE), and none to make (nothing more comes).
{
	timeout 20 "$DELOG" follow "$L" --json 2>"$TMP/pipe.err"
	echo $? >"$TMP/pipe.rc"
} | head -1 >"$TMP/head"
[ "$(cat "$TMP/pipe.rc")" = 0 ] || fail "follow --json | head -1: exit $(cat "$TMP/pipe.rc"), expected 0: $(cat "$TMP/pipe.err")"
grep -q '^{"seq":1,' "$TMP/head" || fail "follow --json | head -1: printed $(cut -c1-80 "$TMP/head")"
{
	timeout 20 "$DELOG" follow "$L" --from 1000000 2>"$TMP/pipe.err"
	echo $? >"$TMP/pipe.rc"
} | true
[ "$(cat "$TMP/pipe.rc")" = 0 ] || fail "a waiting follow | true: exit $(cat "$TMP/pipe.rc"), expected 0: $(cat "$TMP/pipe.err")"

# SIGTERM and SIGINT, once it printed (the whole log, then waiting for more).
# (A file each: the shell empties a job's file in the job, after `&` returned.)
timeout 60 "$DELOG" follow "$L" >"$TMP/term.out" 2>"$TMP/term.err" &
BGPID=$!
wait_output "$TMP/term.out" "follow in the background"
stop_bg TERM "follow"
if env --default-signal=INT true 2>/dev/null; then
	env --default-signal=INT timeout 60 "$DELOG" follow "$L" --json >"$TMP/int.out" \
		2>"$TMP/int.err" &
	BGPID=$!
	wait_output "$TMP/int.out" "follow --json in the background"
	stop_bg INT "follow --json"
else
	echo "env has no --default-signal: SIGINT is not checked (ignored in a background job)" >&2
fi

# Live: a follow started before the writer opens the log (it maps the writer's page as
# the writer creates it) prints what the writer makes durable, once, in order, up to the
# last checkpoint.
F=$TMP/live.log
"$DELOG" format --size 8M "$F" >/dev/null || fail "format $F"
timeout 60 "$DELOG" follow "$F" >"$TMP/live.out" 2>"$TMP/live.err" &
BGPID=$!
sleep 0.2
# One thread, one commit per force: a checkpoint per id.
"$DELOG" stress "$F" --threads 1 --batch 1 --count 200 >/dev/null 2>"$TMP/live.stress" &
SPID=$!
wait "$SPID" || fail "stress on $F: $(tail -1 "$TMP/live.stress")"
SPID=
n=$("$DELOG" print --no-ops "$F" | sed -n 's/.* checkpoints \([0-9]*\) replayed.*/\1/p')
[ "${n:-0}" -ge 200 ] || fail "stress on $F made ${n:-no} checkpoints, expected 200 or more"
i=0
while [ "$(grep -c '^checkpoint ' "$TMP/live.out")" -lt "${n:-0}" ] && [ "$i" -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
stop_bg TERM "live follow"
consecutive "$TMP/live.out" 1 "live follow"
[ "$(seqs "$TMP/live.out" | wc -l)" -eq "${n:-0}" ] ||
	fail "live follow: $(seqs "$TMP/live.out" | wc -l) checkpoints, the log has ${n:-0}"
follow 0 "follow after the writer" "$F" --count "${n:-1}"
cmp -s "$TMP/out" "$TMP/live.out" || fail "live follow and a later one printed other checkpoints"

# Behind: a 4 MiB log that stress wrapped, releasing checkpoint 1 and many more.
B=$TMP/behind.log
"$DELOG" stress "$B" --threads 1 --count 2000 --size 4M >/dev/null 2>"$TMP/stress.err" ||
	fail "stress on $B: $(tail -1 "$TMP/stress.err")"
if grep -q "^released" "$TMP/stress.err"; then
	follow 1 "behind: --from 1" "$B" --from 1
	expect_in "$TMP/err" "delog follow: $B: DELOG_EBEHIND" "behind: --from 1"
	expect_in "$TMP/err" "checkpoint 1 " "behind: --from 1 names the sequence"
	expect_in "$TMP/err" "--from 0" "behind: --from 1 says what to do"
	[ -s "$TMP/out" ] && fail "behind: --from 1 printed on stdout: $(head -1 "$TMP/out")"
	follow 1 "behind: --from 1 --json" "$B" --from 1 --json
	expect_in "$TMP/err" "DELOG_EBEHIND" "behind: --from 1 --json: stderr"
	expect_in "$TMP/out" '"name":"DELOG_EBEHIND"' "behind: --from 1 --json: stdout"
	[ "$(wc -l <"$TMP/out")" -eq 1 ] || fail "behind: --from 1 --json: $(wc -l <"$TMP/out") lines"
	follow 0 "behind: --from 0" "$B" --from 0 --count 1
	s=$(seqs "$TMP/out")
	if [ -z "$s" ] || [ "$s" -le 1 ]; then
		fail "behind: --from 0 started at '$s', not after 1"
	fi
else
	fail "stress released nothing on a 4 MiB log: no checkpoint to fall behind"
fi

# Refusals (exit 1) and usage errors (exit 2, nothing on stdout).
follow 1 "a missing LOG" "$TMP/none.log"
expect_in "$TMP/err" "delog follow: $TMP/none.log: No such file or directory" "a missing LOG"
follow 1 "a missing LOG --json" "$TMP/none.log" --json
expect_in "$TMP/out" '{"error":{"code":-2,"name":"ENOENT"' "a missing LOG --json"
if command -v mkfifo >/dev/null 2>&1 && mkfifo "$TMP/fifo"; then
	follow 1 "a FIFO" "$TMP/fifo"
	expect_in "$TMP/err" "$TMP/fifo: not a regular file or block device (a FIFO)" "a FIFO"
fi
for args in "--from x" "--from -1" "--count -1" "--count x" "-Z" "--no-such"; do
	# shellcheck disable=SC2086 # $args is options and values
	follow 2 "$args" "$L" $args
	[ -s "$TMP/out" ] && fail "$args: printed on stdout"
	expect_in "$TMP/err" "usage: delog follow" "$args"
done
follow 2 "--backend sim" "$L" --backend sim
expect_in "$TMP/err" "delog follow: --backend: 'sim' is not a built-in device backend" "--backend sim"
[ -s "$TMP/out" ] && fail "--backend sim: printed on stdout"
follow 2 "no LOG" --count 1
expect_in "$TMP/err" "LOG is missing" "no LOG"
follow 2 "two LOGs" "$L" "$L"
follow 0 "--help" --help
expect_in "$TMP/out" "usage: delog follow LOG" "--help"
not_in "$TMP/err" "usage" "--help"

[ "$(state "$L")" = "$before" ] || fail "follow changed the log"
finish follow_test
