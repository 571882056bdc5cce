#!/bin/sh
# bench_commit_test.sh - smoke test of `delog bench --workload commit`, run by ctest.
#
#   bench_commit_test.sh DELOG TESTDIR
#
# 1. A short run on a new file in a temporary directory of TESTDIR (--time 1
#    --clients 1,2 --policy single,none --size 16M --json): exit 0, the JSON parses,
#    has one row per (client count, system) with sane values (commits/s > 0, MB/s =
#    commits/s x payload, 0 < p50 <= p99 <= max, flush counts that fit the policy), and
#    the file it created is removed.  Flush accounting: device_flushes <= preflushes +
#    flushes + fua_flushes (= on sim; the flush gate shares them), fua_flushes = fua_writes unless device_fua is 1, the per-commit
#    figure is device_flushes / transactions; the disk's counter (disk_flushes) is a
#    number on every row when the document names a disk, null on every row when it does
#    not (then "disk"."why" says why).  Its agreement with delog's count is a benchmark
#    result, not asserted here (other processes flush the same disk).
#    With --loop, rows POLICY/loop too (loop: true), checked alike.
# 2. The same on the in-memory disk (--backend sim): no baselines, no disk counter; --loop
#    there too, and its row and legend in the human output.
# 3. Usage errors exit 2 and create nothing (bad --rate lists among them).
# 4. The open loop (--rate) on sim and on a file, --json: a point per (rate, system),
#    every arrival of the window a latency sample, completions bounded by arrivals + the
#    queue and workers before the window, p50 <= p99 <= p99.9 <= max; human output with
#    --plot (drawn with gnuplot, else skipped with a note).
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
# A smoke test of the tool: no speed is asserted.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
TMP=$(mktemp -d "${DIR}/bench_commit_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# check_json FILE SYSTEMS : the document of a successful run with --clients 1,2, payload
# 4 x 128 B, and rows for each of the comma-separated SYSTEMS.
check_json() {
	python3 - "$1" "$2" <<'EOF' || fail "--json output does not parse or has bad values"
import json, math, sys
doc = json.load(open(sys.argv[1]))
systems = sys.argv[2].split(",")
for k in ["tool", "version", "workload", "backend", "params", "rows", "acceptance",
          "error", "elapsed_s"]:
    assert k in doc, "missing %s" % k
assert doc["workload"] == "commit", doc["workload"]
assert doc["error"] is None, doc["error"]
assert doc["params"]["clients"] == [1, 2], doc["params"]["clients"]
assert doc["params"]["payload_bytes"] == 512, doc["params"]
rows = doc["rows"]
got = sorted((r["clients"], r["policy"]) for r in rows)
want = sorted((c, s) for c in (1, 2) for s in systems)
assert got == want, (got, want)
need = ["workload", "policy", "clients", "commits_per_s", "mb_per_s", "lat_p50_us",
        "lat_p99_us", "lat_max_us", "flushes_per_checkpoint", "txs_per_checkpoint",
        "checkpoints", "device_flushes", "fua_writes", "fua_flushes", "space_flushes",
        "device_fua",
        "device_flushes_per_commit", "disk_flushes", "disk_flushes_per_commit"]
disk = doc["disk"]
assert set(disk) == {"name", "stat", "why", "idle_flushes_per_s_before",
                     "idle_flushes_per_s_after"}, disk
assert (disk["name"] is None) == (disk["stat"] is None) == (disk["why"] is not None), disk
for k in ("idle_flushes_per_s_before", "idle_flushes_per_s_after"):
    assert (disk[k] is None) == (disk["name"] is None), disk
    assert disk[k] is None or disk[k] >= 0, disk
if doc["backend"] == "sim":
    assert disk["name"] is None and disk["why"], disk
for r in rows:
    what = "%s/%d" % (r["policy"], r["clients"])
    missing = [k for k in need if k not in r]
    assert not missing, (what, missing)
    assert r["workload"] == "commit", what
    assert r["commits"] > 0 and r["commits_per_s"] > 0, (what, r["commits_per_s"])
    assert math.isclose(r["mb_per_s"], r["commits_per_s"] * 512 / 1e6, rel_tol=1e-4), what
    assert 0 < r["lat_p50_us"] <= r["lat_p99_us"] <= r["lat_max_us"], what
    assert 0.1 < r["window_s"] < 10, (what, r["window_s"])
    if disk["name"] is None:
        assert r["disk_flushes"] is None and r["disk_flushes_per_commit"] is None, what
    else:
        assert r["disk_flushes"] >= 0 and r["disk_flushes_per_commit"] >= 0, what
    baseline = r["policy"] in ("raw-fdatasync", "ideal-group")
    if baseline:
        assert r["checkpoints"] is None and r["flushes_per_checkpoint"] is None, what
        assert r["fua_flushes"] is None and r["device_flushes_per_commit"] is None, what
        assert r["fdatasyncs"] > 0 and r["commits_per_fdatasync"] >= 1, what
        if r["policy"] == "raw-fdatasync":
            assert r["fdatasyncs"] == r["commits"], (what, r["fdatasyncs"], r["commits"])
        continue
    base = r["policy"].split("/")[0]
    assert r["unsafe"] == (base == "none"), what
    assert r["loop"] == r["policy"].endswith("/loop"), what
    ck, fl = r["checkpoints"], r["device_flushes"]
    assert ck > 0 and r["transactions"] > 0, (what, ck)
    assert r["txs_per_checkpoint"] > 0, (what, r["txs_per_checkpoint"])
    assert r["device_fua"] in (1, 0, -1), (what, r["device_fua"])
    if doc["backend"] == "sim":
        assert r["device_fua"] == 1, what
    assert r["fua_flushes"] == (0 if r["device_fua"] == 1 else r["fua_writes"]), what
    asked = r["preflushes"] + r["flushes"] + r["fua_flushes"]
    # The flushes delog asked for, shared by the flush gate on a file (at most that
    # many, none only when none was asked for); on sim one each.  device_flushes counts
    # a flush when it starts, the journal its requests when their results are in: at
    # each window edge up to one per log buffer and client in flight may fall apart.
    slack = 8 + 2 * max(1, r.get("clients") or 1)
    assert fl <= asked + slack and (fl > 0) == (asked > 0), (what, fl, asked)
    if doc["backend"] == "sim":
        assert abs(fl - asked) <= slack, (what, fl, asked)
    assert math.isclose(r["device_flushes_per_commit"], fl / r["transactions"],
                        rel_tol=1e-5), what
    # Counts, not speed: single flushes at most once per checkpoint (one chained flush
    # may cover several; at each window edge a checkpoint may be counted apart from its
    # flush: up to one per client), besides the flushes for log space (cover records,
    # the unflushed window), and at least once; none never.
    sp = r["space_flushes"]
    assert 0 <= sp <= r["flushes"], (what, sp)
    if base == "single":
        assert 0 < fl <= ck + sp + 2 * max(1, r["clients"]), (what, fl, ck, sp)
        assert r["fua_writes"] == 0, what
    if base == "none":
        assert fl == 0 and r["fua_writes"] == 0, (what, fl)
    assert r["open_s"] >= 0, what
EOF
}

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed" >&2; exit 77; }
cd "$TMP" || exit 1
SHORT="--workload commit --time 1 --clients 1,2 --size 16M"

# 1. A file: created, measured with both baselines and the event loop (--loop), removed.
expect_rc 0 "commit bench on a new file" "$DELOG" bench $SHORT --policy single,none --loop \
	--json "$TMP/commit.log"
check_json "$TMP/out" "raw-fdatasync,ideal-group,single,none,single/loop,none/loop"
[ -e "$TMP/commit.log" ] && fail "the bench file was not removed"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["target"]["created"], d["target"]' \
	<"$TMP/out" || fail "target.created is not true"

# Human output: the table, the UNSAFE mark, the ratio line.
expect_rc 0 "commit bench, human output" "$DELOG" bench $SHORT --clients 1 --policy none \
	--no-baselines
expect_in "$TMP/out" "commits/s" "human table"
expect_in "$TMP/out" "none (UNSAFE)" "none is marked UNSAFE"

# 2. The simulated disk: no PATH, no baselines.
expect_rc 0 "commit bench on sim" "$DELOG" bench $SHORT --backend sim --policy none --json
check_json "$TMP/out" "none"
expect_rc 0 "commit bench on sim, --loop" "$DELOG" bench $SHORT --backend sim --policy sync \
	--loop --json
check_json "$TMP/out" "sync,sync/loop"
# stderr is a file: one line per finished point, [1/4] .. [4/4], none redrawn.
python3 - "$TMP/err" <<'EOF' || fail "commit bench, stderr not a terminal: not one line per point"
import re, sys
t = open(sys.argv[1], newline="").read()
assert "\r" not in t, "a progress redraw in a non-terminal stderr"
pts = [int(m.group(1)) for m in re.finditer(r"^delog bench: \[(\d+)/4\] .*: done, [0-9.]+ s$", t, re.M)]
assert pts == [1, 2, 3, 4], (pts, t)
EOF
expect_rc 0 "commit bench on sim, --loop, human output" "$DELOG" bench $SHORT --backend sim \
	--clients 4 --policy single --loop
expect_in "$TMP/out" "single/loop" "the loop's row"
expect_in "$TMP/out" "POLICY/loop: the same count as requests in flight" "the loop's legend"

# 4. The open loop (--rate): on sim (no baseline) and on a file (raw-fdatasync too).
# check_open FILE RATES SYSTEMS : one point per (rate, system) with consistent counts
# and ordered percentiles; relations only, no speed.
check_open() {
	python3 - "$1" "$2" "$3" <<'EOF2' || fail "open-loop --json output does not parse or has bad values"
import json, math, sys
doc = json.load(open(sys.argv[1]))
rates = [float(x) for x in sys.argv[2].split(",")]
systems = sys.argv[3].split(",")
assert doc["error"] is None, doc["error"]
assert doc["workload"] == "commit" and doc["mode"] == "open-loop", doc.get("mode")
par = doc["params"]
assert par["rates"] == rates, par["rates"]
assert par["workers"] == 8 and par["seed"] == 7, par
pts = doc["points"]
got = sorted((p["offered_per_s"], p["policy"]) for p in pts)
want = sorted((r, s) for r in rates for s in systems)
assert got == want, (got, want)
for p in pts:
    what = "%s/%g" % (p["policy"], p["offered_per_s"])
    assert p["arrivals"] > 0 and p["commits"] > 0 and p["samples"] > 0, what
    # every arrival of the window is a latency sample: completed or still queued
    assert p["samples"] == p["arrivals"], (what, p["samples"], p["arrivals"])
    assert p["unserved"] <= p["queue_end"] <= p["queue_max"], what
    assert p["queue_start"] <= p["queue_max"], what
    # completed in the window: the window's arrivals, those queued or running before it
    assert p["commits"] <= p["arrivals"] + p["queue_start"] + par["workers"], what
    w = p["window_s"]
    assert math.isclose(p["achieved_per_s"], p["commits"] / w, rel_tol=1e-5), what
    assert math.isclose(p["arrivals_per_s"], p["arrivals"] / w, rel_tol=1e-5), what
    slack = (par["workers"] + p["queue_start"]) / w
    assert p["achieved_per_s"] <= max(p["offered_per_s"], p["arrivals_per_s"]) * 1.2 + slack, what
    assert 0 < p["lat_p50_us"] <= p["lat_p99_us"] <= p["lat_p999_us"] <= p["lat_max_us"], what
    assert isinstance(p["saturated"], bool), what
    assert p["unsafe"] == (p["policy"] == "none"), what
EOF2
}
expect_rc 0 "open loop on sim" "$DELOG" bench --workload commit --backend sim --rate 200,2000 \
	--policy single,none --time 0.3 --workers 8 --seed 7 --json
check_open "$TMP/out" "200,2000" "single,none"
expect_rc 0 "open loop on a file" "$DELOG" bench --workload commit --rate 300 --policy single \
	--time 0.3 --workers 8 --seed 7 --size 16M --json "$TMP/open.log"
check_open "$TMP/out" "300" "single,raw-fdatasync"
[ -e "$TMP/open.log" ] && fail "the open-loop bench file was not removed"
# Human output, and --plot: drawn with gnuplot, else skipped with a note (still exit 0).
expect_rc 0 "open loop, human output with --plot" "$DELOG" bench --workload commit \
	--backend sim --rate 500 --policy none --time 0.2 --workers 4 --plot "$TMP/ol.png"
expect_in "$TMP/out" "p99.9 us" "open-loop table"
expect_in "$TMP/out" "saturated" "open-loop saturation column"
if command -v gnuplot >/dev/null 2>&1; then
	[ -s "$TMP/ol.png" ] || fail "--plot drew no $TMP/ol.png"
	expect_in "$TMP/out" "written to $TMP/ol.png" "plot note"
else
	expect_in "$TMP/out" "plot skipped" "no gnuplot: the plot is skipped"
fi
rm -f "$TMP/ol.png"

# 3. Usage errors.
expect_rc 2 "--clients 0" "$DELOG" bench --workload commit --clients 0
expect_in "$TMP/err" "delog bench: --clients" "error format"
expect_rc 2 "--loop --no-force" "$DELOG" bench --workload commit --backend sim --loop --no-force
expect_in "$TMP/err" "delog bench: --loop measures durable commits" "--loop's usage error"
expect_rc 2 "--policy bogus" "$DELOG" bench --workload commit --policy sync,bogus
expect_rc 2 "--time 0" "$DELOG" bench --workload commit --time 0
expect_rc 2 "--rate 0" "$DELOG" bench --workload commit --backend sim --rate 0
expect_in "$TMP/err" "delog bench: --rate" "--rate error format"
expect_rc 2 "--rate 1,x" "$DELOG" bench --workload commit --backend sim --rate 1,x
expect_rc 2 "--rate 1,,2" "$DELOG" bench --workload commit --backend sim --rate 1,,2
expect_rc 2 "--rate 20000000" "$DELOG" bench --workload commit --backend sim --rate 20000000
expect_rc 2 "--workers 0" "$DELOG" bench --workload commit --backend sim --rate 10 --workers 0
expect_in "$TMP/err" "delog bench: --workers" "--workers error format"
expect_rc 2 "--seed without --rate" "$DELOG" bench --workload commit --backend sim --seed 3
expect_rc 2 "--plot not a .png" "$DELOG" bench --workload commit --backend sim --rate 10 \
	--plot x.jpg
expect_rc 2 "--backend sim with a PATH" "$DELOG" bench --workload commit --backend sim \
	"$TMP/nope"
[ -z "$(ls -A "$TMP" | grep -v '^out$' | grep -v '^err$')" ] ||
	fail "a run left a file: $(ls -A "$TMP")"

finish "bench_commit"
