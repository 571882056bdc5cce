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
#    --csv (--policy sync,single,none --logbufs 2) has the header and equal field counts;
#    --plot (on the first run) writes a PNG (skipped without gnuplot).  Then two short
#    runs (--clients 1 --policy sync) with the buffers the --json run recommended, text
#    and --json, and one with --policy none on the nvme profile (--json).
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
# probe's recommendation (tools/common/recommend.c, measured with probe's code on the same
# target): in the human output its line, the per-client ratio table and the verdict line;
# in --json the "recommendation" object (a safe policy, the log's limits, the four costs,
# one check per client count whose "met" agrees with ratio >= 0.95).  The geometry check
# (the recommended policy once more per client count with the recommended --logbufs and
# --logbsize, over its BW with the run's): where the recommendation differs from the
# run's buffers (sata's ~850 KiB per round trip gives 6 x 256 KiB, not the default 8;
# --logbufs 2 is never recommended with 256 KiB buffers), the "recommended log buffers"
# line, one row per client count whose ratio is BW / run's BW and whose verdict agrees,
# and the count met (text); "geometry" with the run's buffers, one check per client
# count whose run_mb_per_s is the policy's dbench row and whose point follows the flush
# rules (--json, sim and file); the recommend, recommend_policy (ref the best safe
# policy, ratio against the dbench rows) and recommend_geometry rows (--csv).  With the
# run's buffers recommended: the line saying so and no extra rows (text), "geometry"
# null and "geometry_skipped" same_geometry (--json); when the recommended policy was not
# run: no checks and "geometry_skipped" policy_not_run.  Each run measures its own
# costs, so a rare run recommends other buffers than the one before: then a note, and
# the geometry check that ran instead is checked.  Values of the ratios are a benchmark
# result, not asserted.
# 3. Usage errors exit 2 with a "delog bench:" message; --workload dbench and fsmark run.
# 4. Progress: with stderr not a terminal (the --json run of 1.), one line per finished
#    point and none redrawn; on a terminal (script(1), when installed) the line redrawn
#    in place and no line per point.
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
def check_row(r):
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
    # Flushes for log space (cover records, the unflushed window), not for a checkpoint:
    # how many depends on the log's size and the releases, not on the policy.
    sp = r["space_flushes"]
    assert 0 <= sp <= r["flushes"], (what, sp)
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
        assert 0 < fl <= ck + sp + edge and fua == 0, (what, ck, fl, sp, fua)
    elif p == "none":
        assert fl == 0 and fua == 0, (what, fl, fua)
    elif doc["backend"] == "sim":
        assert ck - edge <= fl <= 2 * ck + sp + edge and fua > 0, (what, ck, fl, sp, fua)
    else:
        # On a file the flush gate shares flushes between checkpoints: no lower bound
        # per checkpoint, but at least one.
        assert 0 < fl + r["fua_flushes"] and fl <= 2 * ck + sp + edge and fua > 0, \
            (what, ck, fl, sp, fua)
for r in kinds.get("dbench", []) + kinds.get("fsmark", []):
    check_row(r)
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
    # The geometry check: the recommended policy once more per client count with the
    # recommended buffers, over its dbench row (the run's buffers); none when they are
    # the run's.
    params = doc["params"]
    run_geo = (params["logbufs"], params["logbsize"])
    assert "geometry" in rec, "recommendation lacks geometry"
    g = rec["geometry"]
    if (rec["logbufs"], rec["logbsize"]) == run_geo:
        assert g is None and rec["geometry_skipped"] == "same_geometry", rec
    else:
        assert isinstance(g, dict) and "geometry_skipped" not in rec, rec
        for k in ("policy", "logbufs", "logbsize", "run_logbufs", "run_logbsize", "target",
                  "checks", "met"):
            assert k in g, "geometry lacks " + k
        assert (g["policy"], g["logbufs"], g["logbsize"]) == \
            (rec["policy"], rec["logbufs"], rec["logbsize"]), g
        assert (g["run_logbufs"], g["run_logbsize"]) == run_geo, g
        assert g["target"] == 0.95, g
        assert [c["clients"] for c in g["checks"]] == [1, 8], g["checks"]
        bw = {(r["policy"], r["clients"]): r["mb_per_s"] for r in kinds["dbench"]}
        for c in g["checks"]:
            assert c["run_mb_per_s"] == bw[(g["policy"], c["clients"])], c
            assert abs(c["ratio"] * c["run_mb_per_s"] / c["mb_per_s"] - 1) < 1e-4, c
            assert c["met"] == (c["ratio"] >= 0.95), c
            check_row(dict(c, workload="dbench", policy=g["policy"], unsafe=False))
        assert g["met"] == all(c["met"] for c in g["checks"]), g
EOF
}

# check_geometry_text FILE LOGBUFS LOGBSIZE_KIB : the human output's geometry check (a
# run with --clients 1,8 whose recommended policy ran, buffers LOGBUFS x LOGBSIZE_KIB):
# the "recommended log buffers" line, then either the line saying they are the run's or
# one ratio row per client count (ratio = BW / run's BW, the verdict agreeing) and the
# count of client counts met.  Prints "same" or "differs".
check_geometry_text() {
	python3 - "$@" <<'EOF' || fail "human output: the geometry check is missing or wrong"
import re, sys
t = open(sys.argv[1]).read()
run = (int(sys.argv[2]), int(sys.argv[3]))
m = re.search(r"^recommended log buffers: (\d+) x (\d+) KiB \(--logbufs (\d+) --logbsize "
              r"(\d+)K\); this run's: (\d+) x (\d+) KiB$", t, re.M)
assert m, "no 'recommended log buffers' line"
rb, rs, fb, fs, wb, ws = map(int, m.groups())
assert (rb, rs) == (fb, fs) and (wb, ws) == run, m.group(0)
if (rb, rs) == run:
    assert "  geometry check: the recommended geometry is this run's, so the policy table " \
        "above already measured it (no extra points)\n" in t
    assert "dbench BW of sync with" not in t and "geometry target met at" not in t
    print("same")
    sys.exit(0)
assert re.search(r"^dbench BW of (sync|async|single) with %d x %d KiB / with this run's "
                 r"%d x %d KiB \(the table above\)" % (rb, rs, wb, ws), t, re.M)
rows = re.findall(r"^ +(\d+) +([0-9.]+)x +([0-9.]+) +([0-9.]+)  ([0-9.]+) / (\S+) / "
                  r"([0-9.]+) +target >= 0\.95: (met|MISSED)$", t, re.M)
assert [int(r[0]) for r in rows] == [1, 8], rows
for r in rows:
    x, bw, ref = float(r[1]), float(r[2]), float(r[3])
    assert abs(x - bw / ref) <= 0.003 * x + 0.0006, r
    assert abs(x - 0.95) < 0.001 or (x >= 0.95) == (r[7] == "met"), r
    assert float(r[4]) > 0 and float(r[6]) > 0, r
met = sum(r[7] == "met" for r in rows)
assert re.search(r"^  geometry target met at %d of 2 client counts: %s " %
                 (met, "met" if met == 2 else "MISSED"), t, re.M), met
print("differs")
EOF
}

# check_csv FILE : a --csv run with --clients 1,8, --logbufs 2 (which the rule never
# recommends with 256 KiB buffers, so the geometry check runs) and the policies sync,
# single and none: the run's buffers on the dbench and fsmark rows, then the
# recommendation's rows (one recommend, recommend_policy and recommend_geometry per
# client count), with ratios that agree with the dbench rows.
check_csv() {
	python3 - "$1" <<'EOF' || fail "--csv: the recommendation rows are missing or wrong"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
kinds = {}
for r in rows:
    assert None not in r and None not in r.values(), r
    kinds.setdefault(r["workload"], []).append(r)
assert set(kinds) == {"raw", "dbench", "fsmark", "recommend", "recommend_policy",
                      "recommend_geometry"}, set(kinds)
for r in kinds["dbench"] + kinds["fsmark"]:
    assert (r["logbufs"], r["logbsize"]) == ("2", "262144"), r
    assert r["ref"] == r["ratio"] == r["target"] == r["met"] == r["note"] == "", r
bw = {(r["policy"], r["clients"]): float(r["mb_per_s"]) for r in kinds["dbench"]}
rec, = kinds["recommend"]
assert rec["policy"] in ("sync", "single") and rec["note"] == "", rec
assert rec["logbufs"] != "2" and int(rec["logbsize"]) & (int(rec["logbsize"]) - 1) == 0, rec
assert rec["target"] == "0.95" and rec["clients"] == rec["ratio"] == rec["met"] == "", rec
pol = kinds["recommend_policy"]
assert [r["clients"] for r in pol] == ["1", "8"], pol
for r in pol:
    best = max(("sync", "single"), key=lambda p: bw[(p, r["clients"])])
    assert r["policy"] == rec["policy"] and r["ref"] == best, r
    assert float(r["mb_per_s"]) == bw[(rec["policy"], r["clients"])], r
    x = float(r["ratio"])
    assert abs(x - bw[(rec["policy"], r["clients"])] / bw[(best, r["clients"])]) < 1e-4 * x, r
    assert r["target"] == "0.95" and r["met"] == ("true" if x >= 0.95 else "false"), r
    assert (r["logbufs"], r["logbsize"]) == ("2", "262144") and r["note"] == "", r
geo = kinds["recommend_geometry"]
assert [r["clients"] for r in geo] == ["1", "8"], geo
for r in geo:
    assert r["policy"] == r["ref"] == rec["policy"] and r["unsafe"] == "false", r
    assert (r["logbufs"], r["logbsize"]) == (rec["logbufs"], rec["logbsize"]), r
    x, mb = float(r["ratio"]), float(r["mb_per_s"])
    assert abs(x - mb / bw[(rec["policy"], r["clients"])]) < 1e-4 * x, r
    assert r["target"] == "0.95" and r["met"] == ("true" if x >= 0.95 else "false"), r
    ck, fl, sp = int(r["checkpoints"]), int(r["device_flushes"]), int(r["space_flushes"])
    assert int(r["ops"]) > 0 and int(r["forces"]) > 0 and ck > 0, r
    if rec["policy"] == "single":
        assert 0 < fl <= ck + sp + 2 * int(r["clients"]), r
    else:
        assert ck - 1 <= fl <= 2 * ck + sp + 1, r
    assert float(r["vs_raw"]) > 0 and r["disk_flushes"] == "" and r["note"] == "", r
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
# The sata disk's recommended buffers (B = MB/s x WF ~ 850 KiB: 6 x 256 KiB) are not the
# default 8 x 256 KiB, so the geometry check runs here.
check_geometry_text "$TMP/out" 8 256 >"$TMP/geo"
grep -qx same "$TMP/geo" && echo "note: sim sata recommended 8 x 256 KiB: no geometry points" >&2
rm -f "$TMP/geo"
# ... and the plot's temporary files only go to $TMPDIR: one that does not exist fails the
# plot, with a reason.
if [ -n "$PLOT" ]; then
	expect_rc 1 "--plot, \$TMPDIR missing" env TMPDIR="$TMP/missing" "$DELOG" bench \
		--compare-flush $SIM $SHORT --plot "$TMP/p2.png"
	expect_in "$TMP/err" "--plot: cannot create a temporary file" "--plot, \$TMPDIR missing"
fi
expect_rc 0 "compare-flush on sim, --json" "$DELOG" bench --compare-flush $SIM $SHORT --json
check_json "$TMP/out" "dbench,fsmark"
# Its stderr was a file, not a terminal: no redrawn progress, one line per finished point
# ("[k/N] ...: done, S s", k from 1 to N in order), and one for the costs measured first.
python3 - "$TMP/err" <<'EOF' || fail "compare-flush, stderr not a terminal: not one line per point"
import re, sys
t = open(sys.argv[1], newline="").read()
assert "\r" not in t and "\033" not in t, "a progress redraw in a non-terminal stderr"
pts = [(int(m.group(1)), int(m.group(2)))
       for m in re.finditer(r"^delog bench: \[(\d+)/(\d+)\] .*: done, [0-9.]+ s$", t, re.M)]
assert pts and pts == [(k + 1, pts[0][1]) for k in range(pts[0][1])], pts
assert re.search(r"^delog bench: measuring the costs .*: done, [0-9.]+ s$", t, re.M), t
EOF
# On a terminal (script(1)) the progress is drawn in place instead, and no line per point.
if command -v script >/dev/null 2>&1; then
	script -qec "'$DELOG' bench --workload dbench --backend sim --time 0.1 --clients 1,2 \
		--policy none" /dev/null >"$TMP/tty" 2>&1 || fail "dbench under script(1) failed"
	grep -q "$(printf '\r')" "$TMP/tty" || fail "dbench on a terminal: no progress drawn"
	! grep -q ": done, " "$TMP/tty" || fail "dbench on a terminal: a line per point"
	rm -f "$TMP/tty"
else
	echo "note: script(1) not installed: the terminal's progress is not checked" >&2
fi
# The buffers recommended there ("--logbufs N --logbsize SK"), for a run with them below.
recgeo=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["recommendation"]
print("--logbufs %d --logbsize %dK" % (r["logbufs"], r["logbsize"] >> 10))' "$TMP/out") ||
	fail "--json: no recommended geometry"
expect_rc 0 "compare-flush on sim, --csv" "$DELOG" bench --compare-flush $SIM $SHORT \
	--policy sync,single,none --logbufs 2 --csv
head -n 1 "$TMP/out" |
	grep -q '^workload,policy,unsafe,clients,phase,.*,disk_flushes,space_flushes,logbufs,logbsize,ref,ratio,target,met,note$' ||
	fail "--csv: no header"
awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad || NR < 10 }' "$TMP/out" ||
	fail "--csv: rows missing or of unequal field counts"
check_csv "$TMP/out"
# The recommended buffers as the run's: no extra points, and a line (text) or
# "geometry_skipped" (JSON) says so.  Each run measures again, so a rare one may
# recommend other buffers: then its geometry check runs, and only that is checked.  Both
# policies a recommendation can name are run (on a loaded machine the measurement may
# name single, which a sync-only run would leave "policy_not_run").
ONE="--time 0.2 --clients 1 --threads 4 --files 100 --size 16M --no-baseline --policy sync,single"
# shellcheck disable=SC2086
expect_rc 0 "compare-flush on sim, the recommended buffers" "$DELOG" bench --compare-flush \
	$SIM $ONE $recgeo
bufs=$(echo "$recgeo" | awk '{ sub("K", "", $4); print $2 " x " $4 " KiB" }')
if grep -qF "recommended log buffers: $bufs (" "$TMP/out"; then
	expect_in "$TMP/out" "; this run's: $bufs" "the recommended buffers"
	expect_in "$TMP/out" "  geometry check: the recommended geometry is this run's, so the policy table above already measured it (no extra points)" \
		"the recommended buffers"
	! grep -q "dbench BW of [a-z]* with\|geometry target met" "$TMP/out" ||
		fail "the recommended buffers: a geometry check ran"
else
	echo "note: the measurement recommended other buffers than $bufs this time" >&2
	expect_in "$TMP/out" "geometry target met at " "the recommended buffers"
fi
# shellcheck disable=SC2086
expect_rc 0 "compare-flush on sim, the recommended buffers, --json" "$DELOG" bench \
	--compare-flush $SIM $ONE $recgeo --json
python3 - "$TMP/out" "$recgeo" <<'EOF' || fail "--json, the recommended buffers: wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
rec, p = doc["recommendation"], doc["params"]
a = sys.argv[2].split()
assert (p["logbufs"], p["logbsize"]) == (int(a[1]), int(a[3][:-1]) << 10), p
assert [c["clients"] for c in rec["checks"]] == [1], rec
if (rec["logbufs"], rec["logbsize"]) == (p["logbufs"], p["logbsize"]):
    assert rec["geometry"] is None and rec["geometry_skipped"] == "same_geometry", rec
else:
    print("note: the measurement recommended other buffers this time", file=sys.stderr)
    assert [c["clients"] for c in rec["geometry"]["checks"]] == [1], rec
    assert "geometry_skipped" not in rec, rec
EOF
# The recommended policy not among those run: neither check runs, and the JSON says why.
expect_rc 0 "compare-flush on sim, --policy none" "$DELOG" bench --compare-flush \
	--backend sim --sim-profile nvme --time 0.1 --clients 1 --threads 4 --files 100 \
	--size 16M --no-baseline --policy none --json
python3 - "$TMP/out" <<'EOF' || fail "--json, --policy none: the checks are not skipped"
import json, sys
rec = json.load(open(sys.argv[1]))["recommendation"]
assert rec["policy"] in ("sync", "single") and rec["checks"] == [] and rec["met"] is None, rec
assert rec["geometry"] is None and rec["geometry_skipped"] == "policy_not_run", rec
EOF

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
