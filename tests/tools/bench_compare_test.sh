#!/bin/sh
# bench_compare_test.sh - smoke test of `delog bench --compare-flush` (and of the dbench
# and fsmark workloads it runs), run by ctest.
#
#   bench_compare_test.sh DELOG TESTDIR
#
# Why: the comparison is delog's main job for a newcomer (the README's first command),
# and its tables are only worth reading if the flush counts behind them follow the
# policies' rules (docs/FLUSH-POLICIES.md).  So, on short runs (no speed asserted):
# 1. The sim disk, sata profile (--time 0.2 --clients 1,8 --files 100 --size 16M): the
#    human output has both tables (dbench: clients x policy BW/avg/max, the flush table,
#    the raw-baseline ratios; fsmark: create/chown/unlink x policy) and none is marked
#    UNSAFE; the same run with --json parses (python3 -m json.tool, then the rows), with
#    --csv has the header and equal field counts; --plot (on the first run) writes a
#    PNG (skipped without gnuplot).
# 2. A new file in TESTDIR (the same options, --json): the same JSON
#    checks, and the file is removed.
# Flush rules checked on every policy row that has checkpoints: single at least one and
# at most 1 device flush per checkpoint (one chained flush may cover several; in dbench
# up to one more per client at each window edge: the counters are read a moment apart)
# and no FUA; none 0 flushes
# and no FUA; sync and async between 1 and 2 per checkpoint, with FUA on the commit, and
# one more (fua_flushes, each FUA write) on a disk without FUA: device_flushes <=
# preflushes + flushes + fua_flushes (= on sim; on a file the flush gate shares them).  The disk's own counter (disk_flushes) is a number
# on every row when "disk" names one (a file here), null on sim; its agreement with
# delog's count is a benchmark result, not asserted (other processes flush the disk too).
# probe's recommendation (tools/cli/recommend.c, measured with probe's code on the same
# target): in the human output its line, the per-client ratio table and the verdict line;
# in --json the "recommendation" object (a safe policy, the log's limits, the four costs,
# one check per client count whose "met" agrees with ratio >= 0.95).  Values of the
# ratios are a benchmark result, not asserted.
# 3. Usage errors exit 2 with a "delog bench:" message; --workload dbench and fsmark run.
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
TMP=$(mktemp -d "${DIR}/bench_compare_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# check_json FILE WORKLOADS : a successful run with --clients 1,8 and all four policies.
check_json() {
	python3 -m json.tool "$1" >/dev/null || { fail "--json output does not parse"; return; }
	python3 - "$1" "$2" <<'EOF' || fail "--json rows are missing or break a flush rule"
import json, sys
doc = json.load(open(sys.argv[1]))
want = sys.argv[2].split(",")
assert doc["error"] is None, doc["error"]
disk = doc["disk"]
assert (disk["name"] is None) == (disk["why"] is not None), disk
if doc["backend"] == "sim":
    assert disk["name"] is None, disk
rows = doc["rows"]
pols = ["sync", "async", "single", "none"]
kinds = {}
for r in rows:
    kinds.setdefault(r["workload"], []).append(r)
if "dbench" in want:
    got = sorted((r["clients"], r["policy"]) for r in kinds["dbench"])
    assert got == sorted((c, p) for c in (1, 8) for p in pols), got
    assert sorted(r["clients"] for r in kinds["raw"]) == [1, 8], kinds.get("raw")
    for r in kinds["raw"]:
        assert r["syncs"] > 0 and r["lat_avg_ms"] > 0, r
if "fsmark" in want:
    got = sorted((r["policy"], r["phase"]) for r in kinds["fsmark"])
    assert got == sorted((p, ph) for p in pols for ph in ("create", "chown", "unlink")), got
for r in kinds.get("dbench", []) + kinds.get("fsmark", []):
    what = "%s %s %s" % (r["workload"], r["policy"], r.get("clients", r.get("phase")))
    assert r["unsafe"] == (r["policy"] == "none"), what
    assert r["mb_per_s"] > 0 and r["transactions"] > 0, what
    ck, fl, fua = r["checkpoints"], r["device_flushes"], r["fua_writes"]
    assert ck > 0, what
    asked = r["preflushes"] + r["flushes"] + r["fua_flushes"]
    # The flushes delog asked for, shared by the flush gate on a file (at most that
    # many, none only when none was asked for); on sim one each.  device_flushes counts
    # a flush when it starts, the journal its requests when their results are in: at
    # each window edge up to one per log buffer and client in flight may fall apart.
    slack = 8 + 2 * max(1, r.get("clients") or 1)
    assert fl <= asked + slack and (fl > 0) == (asked > 0), (what, fl, asked)
    if doc["backend"] == "sim":
        assert abs(fl - asked) <= slack, (what, fl, asked)
    assert r["fua_flushes"] in (0, fua), what
    if doc["backend"] == "sim":
        assert r["fua_flushes"] == 0, what
    if disk["name"] is None:
        assert r["disk_flushes"] is None and r["disk_flushes_per_checkpoint"] is None, what
    else:
        assert r["disk_flushes"] >= 0, what
    fl -= r["fua_flushes"]
    # dbench: the counters are read a moment apart at each window edge, and single's
    # flushes are chained behind its writes, so each edge may split up to one checkpoint
    # per client from its flush.
    edge = 1 if r["workload"] == "dbench" else 0
    if r["workload"] == "dbench" and r["policy"] == "single":
        edge = 2 * r["clients"]
    if r["workload"] == "dbench":
        assert r["ops"] > 0 and r["forces"] > 0 and 0 < r["lat_avg_ms"] <= r["lat_max_ms"], what
        assert r["vs_raw"] > 0, what
    else:
        assert r["phase_s"] > 0, what
    p = r["policy"]
    if p == "single":
        assert 0 < fl <= ck + edge and fua == 0, (what, ck, fl, fua)
    elif p == "none":
        assert fl == 0 and fua == 0, (what, fl, fua)
    elif doc["backend"] == "sim":
        assert ck - edge <= fl <= 2 * ck + edge and fua > 0, (what, ck, fl, fua)
    else:
        # On a file the flush gate shares flushes between checkpoints: no lower bound
        # per checkpoint, but at least one.
        assert 0 < fl + r["fua_flushes"] and fl <= 2 * ck + edge and fua > 0, (what, ck, fl, fua)
# probe's recommendation, measured on the same target and checked per client count
# (compare-flush only; the ratios are reported, their values not asserted).
if "dbench" in want and "fsmark" in want:
    rec = doc["recommendation"]
    assert isinstance(rec, dict), (rec, doc.get("recommendation_error"))
    for k in ("policy", "logbufs", "logbsize", "reason", "backend", "costs_us",
              "seq_write_mbs", "target", "checks", "met"):
        assert k in rec, "recommendation lacks " + k
    assert rec["policy"] in ("sync", "async", "single"), rec["policy"]
    assert 2 <= rec["logbufs"] <= 8, rec
    assert 16 << 10 <= rec["logbsize"] <= 256 << 10, rec
    assert rec["logbsize"] & (rec["logbsize"] - 1) == 0, rec
    assert rec["reason"].strip(), rec
    for k in ("write", "write_flush", "fua_write", "flush"):
        assert rec["costs_us"][k] > 0, (k, rec["costs_us"])
    assert rec["seq_write_mbs"] > 0, rec
    assert rec["target"] == 0.95, rec
    assert [c["clients"] for c in rec["checks"]] == [1, 8], rec["checks"]
    for c in rec["checks"]:
        assert c["ratio"] > 0 and c["best"] in ("sync", "async", "single"), c
        assert c["met"] == (c["ratio"] >= 0.95), c
        if c["best"] == rec["policy"]:
            assert c["ratio"] == 1, c
    assert rec["met"] == all(c["met"] for c in rec["checks"]), rec
EOF
}

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed" >&2; exit 77; }
cd "$TMP" || exit 1
SHORT="--time 0.2 --clients 1,8 --files 100 --size 16M"
PLOT=
command -v gnuplot >/dev/null 2>&1 && PLOT="--plot $TMP/p.png"
SIM="--backend sim --sim-profile sata"

# 1. The sim disk: human tables and the plot, JSON, CSV.  The plot's temporary data and
#    script files go to $TMPDIR and are removed.
mkdir -p "$TMP/tmpdir"
expect_rc 0 "compare-flush on sim" env TMPDIR="$TMP/tmpdir" "$DELOG" bench --compare-flush \
	$SIM $SHORT $PLOT
if [ -n "$PLOT" ]; then
	[ -s "$TMP/p.png" ] || fail "--plot wrote no PNG"
	[ -z "$(ls -A "$TMP/tmpdir")" ] || fail "--plot left files in \$TMPDIR: $(ls -A "$TMP/tmpdir")"
	rm -rf "$TMP/tmpdir"
	head -c 8 "$TMP/p.png" | od -An -c | grep -q 'P   N   G' || fail "--plot: not a PNG"
	expect_in "$TMP/out" "plot written to $TMP/p.png" "human output"
	rm -f "$TMP/p.png"
else
	echo "note: gnuplot not installed, --plot not tested" >&2
	rm -rf "$TMP/tmpdir"
fi
for s in "dbench: BW = MB/s" "clients" "device flushes per checkpoint" "vs the raw device" \
	"fsmark: 32 threads x 100 files" "create" "chown" "unlink" "none (UNSAFE)" \
	"latency profile sata" "probe's recommendation: " "the best safe policy" \
	"target >= 0.95: " "target met at "; do
	expect_in "$TMP/out" "$s" "human output"
done
# ... and the plot's temporary files only go to $TMPDIR: one that does not exist fails the
# plot, with a reason.
if [ -n "$PLOT" ]; then
	expect_rc 1 "--plot, \$TMPDIR missing" env TMPDIR="$TMP/missing" "$DELOG" bench \
		--compare-flush $SIM $SHORT --plot "$TMP/p2.png"
	expect_in "$TMP/err" "--plot: cannot create a temporary file" "--plot, \$TMPDIR missing"
fi
expect_rc 0 "compare-flush on sim, --json" "$DELOG" bench --compare-flush $SIM $SHORT --json
check_json "$TMP/out" "dbench,fsmark"
expect_rc 0 "compare-flush on sim, --csv" "$DELOG" bench --compare-flush $SIM $SHORT \
	--policy single,none --csv
head -n 1 "$TMP/out" | grep -q '^workload,policy,unsafe,clients,phase,' ||
	fail "--csv: no header"
awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad || NR < 10 }' "$TMP/out" ||
	fail "--csv: rows missing or of unequal field counts"

# 2. A real file, created and removed by the bench.
expect_rc 0 "compare-flush on a file" "$DELOG" bench --compare-flush $SHORT --json \
	"$TMP/cmp.log"
check_json "$TMP/out" "dbench,fsmark"
[ -e "$TMP/cmp.log" ] && fail "the bench file was not removed"

# 3. The workloads alone, and usage errors.
expect_rc 0 "--workload dbench on sim" "$DELOG" bench --workload dbench --backend sim \
	--time 0.1 --clients 2 --policy none --force-every 2
expect_in "$TMP/out" "dbench: BW" "dbench alone"
expect_rc 0 "--workload fsmark on sim" "$DELOG" bench --workload fsmark --backend sim \
	--threads 4 --files 50 --policy single
expect_in "$TMP/out" "fsmark: 4 threads x 50 files" "fsmark alone"
for bad in "--clients 0" "--clients 1,1" "--policy sync,bogus" "--time 0" "--plot x.jpg" \
	"--sim-profile sata" "--backend sim --sim-profile hdd" "--json --csv" \
	"--device $TMP" "--force-every 0" "--logbsize 3K" "--workload commit"; do
	# shellcheck disable=SC2086
	expect_rc 2 "usage error $bad" "$DELOG" bench --compare-flush $bad
	grep -q '^delog bench: ' "$TMP/err" || fail "usage error $bad: no message"
done
expect_rc 2 "sim with a PATH" "$DELOG" bench --compare-flush --backend sim "$TMP/nope"
[ -z "$(ls -A "$TMP" | grep -v '^out$' | grep -v '^err$')" ] ||
	fail "a run left a file: $(ls -A "$TMP")"

finish "bench_compare"
