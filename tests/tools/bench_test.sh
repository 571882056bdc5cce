#!/bin/sh
# bench_test.sh - smoke tests of `delog bench`, run by ctest.
#
#   bench_test.sh MODE DELOG TESTDIR
#
# MODE is one of:
#   usage     --help (exit 0) and usage errors (exit 2): no or an unknown workload, bad
#             option values, two PATHs, an unknown option; none creates a file
#   recovery  --workload recovery on a small log (--size 64M --passes 1 --no-fio --json)
#             in a temporary file of the current directory: the JSON parses and has the
#             promised keys with sane values, and the file is removed; then with a PATH
#             and --keep (the file stays), and an existing file without --force (exit 1,
#             still one JSON document, naming the error); with fio installed, one run
#             with fio, whose figures must be filled in; the smallest size the options
#             allow (12M by default) fills >= 95% on an empty file, and one below it is a
#             usage error (exit 2) naming that minimum, the file untouched; a run that
#             fails after growing an empty file (its stdout closed: SIGPIPE) leaves it
#             empty, with its times, and one on a file with data given --force leaves
#             its size
#   spacewait --workload spacewait on sim (two policies) and on a temporary file: every
#             round measured on a log that was full, latencies ordered, the file
#             removed; the human table; usage errors (exit 2)
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
# A smoke test of the tool: no timing is asserted.
set -u

MODE=${1:?mode}
DELOG=${2:?path to delog}
DIR=${3:?test directory}
TMP=$(mktemp -d "${DIR}/bench_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# check_json FILE SIZE : one JSON document of a successful recovery bench of SIZE bytes.
check_json() {
	python3 -c 'import json,sys; json.load(sys.stdin)' <"$1" ||
		{ fail "--json output does not parse"; return; }
	python3 - "$1" "$2" <<'EOF' || fail "--json output lacks expected keys or values"
import json, sys
doc = json.load(open(sys.argv[1]))
size = int(sys.argv[2])
need = ["workload", "size", "bytes_read", "recovery_mb_per_s", "fio_mb_per_s", "ratio",
        "passes", "checkpoints", "checkpoints_per_s", "items", "bytes_replayed",
        "read_reqs", "max_reads_in_flight", "fill", "report", "error", "cpu_s",
        "open_mb_per_s", "read_amplification", "held_bytes", "reread"]
missing = [k for k in need if k not in doc]
assert not missing, "missing: %s" % missing
assert doc["workload"] == "recovery", doc["workload"]
assert doc["size"] == size, doc["size"]
assert doc["error"] is None, doc["error"]
# --no-fio: no fio figures
assert doc["fio_mb_per_s"] is None and doc["ratio"] is None, (doc["fio_mb_per_s"], doc["ratio"])
fill = doc["fill"]
assert fill["live_fraction"] >= 0.95, fill["live_fraction"]
assert doc["bytes_read"] >= 0.95 * size, doc["bytes_read"]
# Read once (journal/recover_hold.c R16): the checkpoints are held, not read again (a
# small log's head search adds a third here; --recover-mem 1 below adds a whole read).
assert doc["read_amplification"] < 1.5 and not doc["reread"], doc["read_amplification"]
assert doc["held_bytes"] >= doc["bytes_replayed"], doc["held_bytes"]
assert doc["open_mb_per_s"] > 0, doc["open_mb_per_s"]
assert doc["recovery_mb_per_s"] > 0, doc["recovery_mb_per_s"]
assert doc["checkpoints"] == fill["checkpoints"] > 0, (doc["checkpoints"], fill["checkpoints"])
assert doc["items"] == fill["items"] > 0
assert doc["bytes_replayed"] == fill["item_bytes"] > 0
assert doc["read_reqs"] > 0 and 1 <= doc["max_reads_in_flight"] <= 16
p = doc["passes"]
for k in ["recovery_mb_per_s", "recovery_s", "cpu_s", "fio_mb_per_s", "open_mb_per_s"]:
    assert isinstance(p[k], list) and len(p[k]) == 1, (k, p[k])
assert p["recovery_mb_per_s"][0] > 0 and p["fio_mb_per_s"][0] is None
rep = doc["report"]
assert rep["corruption"] is None and not rep["clean"] and not rep["empty"], rep
assert rep["checkpoints"] == doc["checkpoints"] and rep["dropped"] == 0
assert rep["stamped_bytes"] == 0, "read-only recovery stamped"
EOF
}

SMALL="--workload recovery --size 64M --passes 1 --no-fio"

case $MODE in
usage)
	expect_rc 0 "bench --help" "$DELOG" bench --help
	expect_in "$TMP/out" "recovery" "bench --help lists the workloads"
	expect_rc 0 "bench --workload recovery --help" "$DELOG" bench --workload recovery --help
	expect_in "$TMP/out" "--read-chunk" "the workload's options in --help"
	expect_in "$TMP/out" "--keep" "the common options in --help"
	expect_rc 0 "delog help bench" "$DELOG" help bench
	expect_in "$TMP/out" "usage: delog bench" "delog help bench"
	cd "$TMP" || exit 1
	expect_rc 2 "bench without --workload" "$DELOG" bench
	expect_in "$TMP/err" "--workload" "missing workload message"
	expect_rc 2 "unknown workload" "$DELOG" bench --workload no-such-workload
	expect_in "$TMP/err" "no-such-workload" "unknown workload message"
	expect_rc 2 "--sector 1000" "$DELOG" bench --workload recovery --sector 1000
	expect_in "$TMP/err" "delog bench: --sector" "error format"
	expect_rc 2 "--size garbage" "$DELOG" bench --workload recovery --size 12X
	expect_rc 2 "--size too small" "$DELOG" bench --workload recovery --size 1M
	expect_rc 2 "--read-chunk too small" "$DELOG" bench --workload recovery --read-chunk 4K
	expect_rc 2 "--reads-in-flight 1" "$DELOG" bench --workload recovery --reads-in-flight 1
	expect_rc 2 "--passes 0" "$DELOG" bench --workload recovery --passes 0
	expect_rc 2 "unknown backend" "$DELOG" bench --workload recovery --backend nope
	expect_rc 2 "two PATHs" "$DELOG" bench --workload recovery "$TMP/a" "$TMP/b"
	expect_rc 2 "PATH and --path" "$DELOG" bench --workload recovery --path "$TMP/a" "$TMP/b"
	expect_rc 2 "unknown option" "$DELOG" bench --workload recovery --no-such-option
	expect_rc 2 "another workload's spelling" "$DELOG" bench --workload recovery --work other
	[ -z "$(ls -A "$TMP" | grep -v '^out$' | grep -v '^err$')" ] ||
		fail "a usage error left a file: $(ls -A "$TMP")"
	;;
recovery)
	command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (needed to parse --json)"
	cd "$TMP" || exit 1
	# Default target: a temporary file in the current directory, removed afterwards.
	expect_rc 0 "bench of a temporary file" "$DELOG" bench $SMALL --json
	check_json "$TMP/out" $((64 * 1024 * 1024))
	ls "$TMP"/delog-bench-* >/dev/null 2>&1 && fail "the temporary bench file was not removed"
	# A new PATH with --keep: the file stays, holding the superblock area and the log.
	expect_rc 0 "bench of a new PATH with --keep" "$DELOG" bench $SMALL --json --keep \
		--logbsize 32K --item-size 512 --ckpt-items 7 --sector 4096 "$TMP/kept.log"
	check_json "$TMP/out" $((64 * 1024 * 1024))
	[ "$(stat -c %s "$TMP/kept.log" 2>/dev/null)" = $((64 * 1024 * 1024 + 4096)) ] ||
		fail "--keep did not leave a 64 MiB + 4 KiB file"
	# Human output.
	expect_rc 0 "bench with human output" "$DELOG" bench $SMALL --force "$TMP/kept.log"
	expect_in "$TMP/out" "recovery MB/s" "human table"
	expect_in "$TMP/out" "median" "human table"
	expect_in "$TMP/out" "--no-fio" "the ratio line says fio was skipped"
	expect_in "$TMP/out" "open MB/s" "human table: delog_open's column"
	# --recover-mem 1 holds nothing: the log is read twice, and still recovered whole.
	expect_rc 0 "--recover-mem 1" "$DELOG" bench $SMALL --json --recover-mem 1
	python3 - "$TMP/out" <<'EOF' || fail "--recover-mem 1 did not read the log twice"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["reread"] and d["read_amplification"] >= 2.0, (d["reread"], d["read_amplification"])
assert d["checkpoints"] == d["fill"]["checkpoints"] and d["params"]["recover_mem"] == 1
EOF
	expect_rc 2 "--recover-mem garbage" "$DELOG" bench $SMALL --recover-mem 12X
	# With fio installed: its figures and the ratio are filled in.
	if command -v fio >/dev/null 2>&1; then
		expect_rc 0 "bench with fio" "$DELOG" bench --workload recovery --size 64M \
			--passes 1 --json
		python3 - "$TMP/out" <<'EOF' || fail "fio's figures missing with fio installed"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["fio"]["installed"] and d["fio"]["ran"] and d["fio"]["error"] is None, d["fio"]
assert d["fio_mb_per_s"] > 0 and d["ratio"] > 0, (d["fio_mb_per_s"], d["ratio"])
assert d["fio"]["iodepths"] == [2, 8, 32] and d["fio_best_depth"] in (2, 8, 32), d["fio"]
assert d["passes"]["fio_mb_per_s"][0] > 0
EOF
	fi
	# An existing non-empty file is refused without --force, left alone, and --json still
	# prints one document naming the error.
	echo precious >"$TMP/keep"
	expect_rc 1 "existing file without --force" "$DELOG" bench $SMALL --json "$TMP/keep"
	expect_in "$TMP/err" "$TMP/keep" "refusal names the path"
	expect_in "$TMP/err" "--force" "refusal names --force"
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["error"]["message"], d' \
		<"$TMP/out" || fail "the refusal's --json document lacks an error"
	[ "$(cat "$TMP/keep")" = precious ] || fail "the refused file was modified"
	# The smallest log the fill can cover to 95%: 12 MiB with the default buffers and
	# items; below it, refused before the file is touched, naming the minimum.
	: >"$TMP/empty"
	touch -d "2020-01-02 03:04:05" "$TMP/empty"
	before=$(stat -c '%s %Y' "$TMP/empty")
	expect_rc 2 "--size 8M (below the minimum)" "$DELOG" bench --workload recovery --size 8M \
		--passes 1 --no-fio --json "$TMP/empty"
	expect_in "$TMP/err" "--size: 8 MiB is too small for the recovery workload" "--size 8M"
	expect_in "$TMP/err" "at least 12 MiB" "--size 8M names the minimum"
	[ -s "$TMP/out" ] && fail "--size 8M: a usage error printed on stdout"
	[ "$(stat -c '%s %Y' "$TMP/empty")" = "$before" ] || fail "--size 8M changed the empty file"
	expect_rc 2 "--size 11M" "$DELOG" bench --workload recovery --size 11M "$TMP/empty"
	expect_in "$TMP/err" "at least 12 MiB" "--size 11M names the minimum"
	expect_rc 0 "--size 12M (the minimum)" "$DELOG" bench --workload recovery --size 12M \
		--passes 1 --no-fio --json "$TMP/empty"
	check_json "$TMP/out" $((12 * 1024 * 1024))
	expect_rc 0 "--size 4M --no-durable-point" "$DELOG" bench --workload recovery --size 4M \
		--no-durable-point --passes 1 --no-fio --json "$TMP/small.log"
	# A run that fails after it grew the file (stdout closed: SIGPIPE at the report)
	# leaves an empty file empty, with its times; one holding data (--force) its size.
	: >"$TMP/empty"
	touch -d "2020-01-02 03:04:05" "$TMP/empty"
	before=$(stat -c '%s %Y' "$TMP/empty")
	{ "$DELOG" bench $SMALL --json "$TMP/empty" 2>"$TMP/err"; echo $? >"$TMP/rc"; } | true
	[ "$(cat "$TMP/rc")" -ne 0 ] || fail "a bench whose stdout was closed exited 0"
	[ "$(stat -c '%s %Y' "$TMP/empty")" = "$before" ] ||
		fail "a failed bench left the empty file changed: $(stat -c '%s %Y' "$TMP/empty") (was $before)"
	head -c 1048576 /dev/urandom >"$TMP/data"
	{ "$DELOG" bench $SMALL --force --json "$TMP/data" 2>"$TMP/err"; echo $? >"$TMP/rc"; } | true
	[ "$(cat "$TMP/rc")" -ne 0 ] || fail "a bench whose stdout was closed exited 0 (--force)"
	[ "$(stat -c %s "$TMP/data")" = 1048576 ] ||
		fail "a failed bench left the 1 MiB file at $(stat -c %s "$TMP/data") bytes"
	;;
spacewait)
	command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (needed to parse --json)"
	cd "$TMP" || exit 1
	# The in-memory disk: a row per policy, every round measured, on a log that was full.
	expect_rc 0 "spacewait on sim" "$DELOG" bench --workload spacewait --backend sim \
		--rounds 20 --policy single,none --json
	python3 - "$TMP/out" 2 20 "single,none" <<'EOF2' || fail "spacewait --json (sim)"
import json, sys
doc = json.load(open(sys.argv[1]))
nrows, rounds, policies = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
assert doc["workload"] == "spacewait" and doc["error"] is None, doc
p = doc["params"]
assert p["rounds"] == rounds and p["reservation"] == 65536 and p["log_size"] >= 16 << 20, p
rows = doc["rows"]
assert [r["policy"] for r in rows] == policies, rows
for r in rows:
    assert r["rounds"] == rounds, r
    # the log was full: more than an eighth of it was held in 64 KiB reservations
    assert r["held"] * 65536 > p["log_size"] // 8, r
    assert 0 < r["lat_p50_us"] <= r["lat_p99_us"] <= r["lat_max_us"], r
    assert r["unsafe"] == (r["policy"] == "none"), r
EOF2
	# A file in the current directory, created and removed; the human table.
	expect_rc 0 "spacewait on a file" "$DELOG" bench --workload spacewait --rounds 10 \
		--policy sync --json
	python3 - "$TMP/out" 1 10 "sync" <<'EOF2' || fail "spacewait --json (file)"
import json, sys
doc = json.load(open(sys.argv[1]))
assert [r["policy"] for r in doc["rows"]] == ["sync"] and doc["rows"][0]["rounds"] == 10, doc
assert doc["target"]["created"] and not doc["target"]["kept"], doc
EOF2
	ls "$TMP"/delog-bench-* >/dev/null 2>&1 && fail "spacewait left its temporary file"
	expect_rc 0 "spacewait, human" "$DELOG" bench --workload spacewait --backend sim --rounds 5 \
		--policy sync
	expect_in "$TMP/out" "p50 us" "spacewait's table"
	expect_in "$TMP/out" "sync" "spacewait's row"
	# Usage errors.
	expect_rc 2 "--rounds 0" "$DELOG" bench --workload spacewait --backend sim --rounds 0
	expect_rc 2 "--reservation 3K" "$DELOG" bench --workload spacewait --backend sim \
		--reservation 3K
	expect_rc 2 "--reservation over an eighth" "$DELOG" bench --workload spacewait \
		--backend sim --size 16M --reservation 4M
	expect_in "$TMP/err" "more than an eighth" "--reservation over an eighth names why"
	expect_rc 2 "--settle 200000" "$DELOG" bench --workload spacewait --backend sim \
		--settle 200000
	;;
*)
	echo "unknown mode $MODE" >&2
	exit 1
	;;
esac

finish "$MODE"
