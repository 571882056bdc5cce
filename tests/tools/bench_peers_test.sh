#!/bin/sh
# bench_peers_test.sh - smoke test of `delog bench --workload peers` (`--peers`), which
# runs the program delog-bench-peers from delog's directory, run by ctest.  That program
# is built only when RocksDB, SQLite or LMDB was found, each peer only when its library
# was; a missing peer is listed as missing and the others run.
#
#   bench_peers_test.sh DELOG TESTDIR
#
# 0. A copy of DELOG alone in a directory: --peers exits 1 naming delog-bench (the
#    benchmarks' program, not beside it); a copy of DELOG and delog-bench: --peers and
#    --workload peers exit 1 with a message naming delog-bench-peers (not beside, or not
#    built); so does DELOG itself when the program was not built, and then the test
#    stops there (skip, 77).
# 1. A very short run in a new directory of TESTDIR (--peers --dir D --time 0.3
#    --clients 1,4 --json): exit 0, the JSON parses, has one row per (thread count,
#    system) for every system the run lists, and every built peer is among them (a
#    missing one is listed under "missing"); every row has commits/s > 0, MB/s =
#    commits/s x payload, 0 < p50 <= p99 <= max, device flush counts that are null (no
#    counter) or >= 0; the ratios name a delog and a peer row; and D is empty afterwards
#    (delog's file and the peers' databases removed).
# 2. The human output of a shorter run names every system and the target lines; the
#    program run directly (no --workload) gives the same rows.
# 3. Bad options exit 2 and leave nothing behind.
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
# It measures nothing: no timing is asserted.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
PEERS=$(dirname "$DELOG")/delog-bench-peers

TMP=$(mktemp -d "${DIR}/bench_peers_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# 0. without the program beside it, delog says where it looked and why it is not there:
# delog alone names delog-bench (the benchmarks' program), delog with delog-bench and
# without delog-bench-peers names that one
mkdir "$TMP/solo" && cp "$DELOG" "$TMP/solo/delog" || exit 1
expect_rc 1 "solo: --peers" "$TMP/solo/delog" bench --peers --time 0.1
expect_in "$TMP/err" "delog-bench, which is not beside" "solo: --peers names delog-bench"
mkdir "$TMP/alone" && cp "$DELOG" "$(dirname "$DELOG")/delog-bench" "$TMP/alone/" || exit 1
for spelling in "--peers" "--workload peers"; do
	# shellcheck disable=SC2086 # the spelling is two words or one
	expect_rc 1 "alone: $spelling" "$TMP/alone/delog" bench $spelling --time 0.1
	expect_in "$TMP/err" "delog-bench-peers" "alone: $spelling names the program"
	grep -q "not beside\|not built" "$TMP/err" || fail "alone: $spelling does not say why: $(cat "$TMP/err")"
done
[ -s "$TMP/out" ] && fail "alone: output on stdout: $(cat "$TMP/out")"
if [ ! -x "$PEERS" ]; then
	expect_rc 1 "not built: --peers" "$DELOG" bench --peers --time 0.1
	expect_in "$TMP/err" "delog-bench-peers, which was not built" "not built: the message"
	grep -q "RocksDB, SQLite and LMDB\|DELOG_BENCH_PEERS=OFF" "$TMP/err" ||
		fail "not built: does not say why: $(cat "$TMP/err")"
	[ "$FAILS" -eq 0 ] || finish "bench_peers_test"
	skip "delog-bench-peers was not built; delog says so (checked above)"
fi
if ! command -v python3 >/dev/null 2>&1; then
	skip "python3 is needed to check the JSON"
fi
mkdir "$TMP/run" || exit 1

expect_empty_dir() {
	left=$(ls -A "$TMP/run")
	[ -z "$left" ] || fail "$1: left behind in the directory: $left"
}

# 1. JSON
expect_rc 0 "--peers --json" "$DELOG" bench --peers --dir "$TMP/run" --time 0.3 \
	--clients 1,4 --json
cp "$TMP/out" "$TMP/peers.json"
python3 - "$TMP/peers.json" <<'EOF' || fail "--json output does not parse or has bad values"
import json, math, sys
doc = json.load(open(sys.argv[1]))
for k in ["tool", "version", "workload", "dir", "params", "missing", "versions", "device",
          "rows", "ratios", "targets", "error", "elapsed_s"]:
    assert k in doc, "missing %s" % k
assert doc["workload"] == "peers", doc["workload"]
assert doc["error"] is None, doc["error"]
p = doc["params"]
assert p["clients"] == [1, 4], p["clients"]
assert p["payload_bytes"] == 512, p
systems = p["systems"]
want_all = ["raw-fdatasync", "delog-sync", "delog-async", "delog-single", "rocksdb",
            "sqlite", "lmdb"]
for s in want_all:
    assert (s in systems) != (s in doc["missing"]), (s, systems, doc["missing"])
nopeer = not any(s in systems for s in ("rocksdb", "sqlite", "lmdb"))
rows = doc["rows"]
got = sorted((r["clients"], r["system"]) for r in rows)
want = sorted((c, s) for c in (1, 4) for s in systems)
assert got == want, (got, want)
for r in rows:
    what = "%s/%d" % (r["system"], r["clients"])
    assert r["workload"] == "peers", what
    assert r["kind"] in ("delog", "peer", "baseline"), what
    assert (r["kind"] == "delog") == (r["policy"] is not None), what
    assert r["commits"] > 0 and r["commits_per_s"] > 0, (what, r["commits_per_s"])
    assert math.isclose(r["mb_per_s"], r["commits_per_s"] * 512 / 1e6, rel_tol=1e-4), what
    assert 0 < r["lat_p50_us"] <= r["lat_p99_us"] <= r["lat_max_us"], what
    assert 0.1 < r["window_s"] < 10, (what, r["window_s"])
    if r["device_flushes"] is None:
        assert r["device_flushes_per_commit"] is None, what
    else:
        assert r["device_flushes"] >= 0 and r["device_flushes_per_commit"] >= 0, what
    if r["kind"] == "delog":
        assert r["engine_checkpoints"] > 0 and r["engine_transactions"] > 0, what
    else:
        assert r["engine_checkpoints"] is None, what
for q in doc["ratios"]:
    assert q["clients"] in (1, 4), q
    assert q["best_delog"].startswith("delog-"), q
    if nopeer:
        assert q["best_peer"] is None and q["delog_vs_best_peer"] is None, q
        continue
    assert q["best_peer"] in ("rocksdb", "sqlite", "lmdb"), q
    assert q["delog_vs_best_peer"] > 0, q
assert sorted(q["clients"] for q in doc["ratios"]) == [1, 4], doc["ratios"]
t = doc["targets"]["ratio_1_thread"]
assert t["target"] == 1.0 and t["op"] == ">=", t
assert isinstance(t["met"], bool) or (nopeer and t["met"] is None), t
assert "ratio_64_threads" not in doc["targets"], doc["targets"]
EOF
python3 -m json.tool "$TMP/peers.json" >/dev/null || fail "python3 -m json.tool rejects the output"
expect_empty_dir "--json run"

# 2. human output, one thread count, the long spelling
expect_rc 0 "--workload peers" "$DELOG" bench --workload peers --dir "$TMP/run" --time 0.1 \
	--clients 1
for s in raw-fdatasync delog-sync delog-async delog-single; do
	grep -q "^  $s " "$TMP/out" || fail "human output: no row for $s"
done
for s in rocksdb sqlite lmdb; do
	grep -q "^  $s " "$TMP/out" || grep -q "missing .*$s" "$TMP/out" ||
		fail "human output: $s neither run nor listed as missing"
done
if grep -q "^  \(rocksdb\|sqlite\|lmdb\) " "$TMP/out"; then
	grep -q "best delog (delog-.*) / best peer" "$TMP/out" || fail "human output: no ratio line"
fi
grep -q "1 thread: best delog" "$TMP/out" || fail "human output: no target line"
expect_empty_dir "human run"
cp "$TMP/out" "$TMP/human.delog"
expect_rc 0 "delog-bench-peers directly" "$PEERS" --dir "$TMP/run" --time 0.1 --clients 1
for s in raw-fdatasync delog-sync delog-async delog-single; do
	grep -q "^  $s " "$TMP/out" || fail "delog-bench-peers: no row for $s"
done
expect_empty_dir "delog-bench-peers run"

# 3. usage errors: exit 2, nothing created
expect_rc 2 "--clients 0" "$DELOG" bench --peers --dir "$TMP/run" --clients 0
expect_rc 2 "--clients x" "$DELOG" bench --peers --dir "$TMP/run" --clients 1,x
expect_rc 2 "--systems bogus" "$DELOG" bench --peers --dir "$TMP/run" --systems delog,bogus
expect_rc 2 "--time 0" "$DELOG" bench --peers --dir "$TMP/run" --time 0
expect_rc 2 "--items 0" "$DELOG" bench --peers --dir "$TMP/run" --items 0
expect_rc 2 "--item-size 0" "$DELOG" bench --peers --dir "$TMP/run" --item-size 0
expect_rc 2 "--dir missing" "$DELOG" bench --peers --dir "$TMP/run/nope"
expect_rc 2 "a PATH" "$DELOG" bench --peers "$TMP/run/file"
expect_rc 2 "--backend sim" "$DELOG" bench --peers --dir "$TMP/run" --backend sim
expect_rc 2 "--peers with another workload" "$DELOG" bench --peers --workload commit
expect_rc 2 "unknown option" "$DELOG" bench --peers --dir "$TMP/run" --bogus
expect_rc 2 "delog-bench-peers: unknown option" "$PEERS" --dir "$TMP/run" --bogus
expect_rc 2 "delog-bench-peers: another workload" "$PEERS" --workload commit
expect_empty_dir "usage errors"

finish "bench_peers_test"
