#!/bin/sh
# bench_stream_test.sh - smoke test of `delog bench --workload stream`, run by ctest.
#
#   bench_stream_test.sh DELOG TESTDIR
#
# 1. A tiny run on a new file in a temporary directory of TESTDIR (--time 0.3 --passes 1
#    --size 16M --tx-size 256K --clients 2 --policy single,sync --json): exit 0, the
#    JSON parses (python3 -m json.tool and json.load), one delog row per policy with the
#    keys of the issue and sane values (mb_per_s > 0 and = tx/s x tx size, 0 < p50 <= p99
#    <= max, flush counts that fit the policy), when fio is installed a fio row next to
#    each delog row (and the ratio then set), and the file it created is removed.
#    Flush accounting: device_flushes <= preflushes + flushes + fua_flushes (FUA writes
#    on a disk without FUA; = on sim, shared by the flush gate on a file), and the disk's own counter (disk_flushes) is a number on
#    every delog row when the document names a disk, else null (its agreement with
#    delog's count is a benchmark result: other processes flush the same disk).
#    The same on the sim's SATA profile (--backend sim), whose fio job and fio+flush run
#    on another sim disk: both rows there, and the flush target (single) in the document.
# 2. The human output with --no-fio: the table, and that fio was skipped.
# 3. Usage errors exit 2 and create nothing.
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
# A smoke test of the tool: no speed is asserted.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
TMP=$(mktemp -d "${DIR}/bench_stream_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed" >&2; exit 77; }
cd "$TMP" || exit 1
if command -v fio >/dev/null 2>&1; then HAVE_FIO=1; else HAVE_FIO=0; fi
TINY="--workload stream --time 0.3 --passes 1 --size 16M --tx-size 256K --clients 2"

# 1. A file: created, streamed with two policies (and fio when installed), removed.
expect_rc 0 "stream bench on a new file" "$DELOG" bench $TINY --policy single,sync --json \
	"$TMP/stream.log"
python3 -m json.tool "$TMP/out" >/dev/null || fail "--json output is not JSON"
python3 - "$TMP/out" "$HAVE_FIO" <<'EOF' || fail "--json output has bad values"
import json, math, sys
doc = json.load(open(sys.argv[1]))
have_fio = sys.argv[2] == "1"
for k in ["tool", "version", "workload", "backend", "params", "fio", "rows", "summary",
          "target_ratio", "target_met", "error", "elapsed_s"]:
    assert k in doc, "missing %s" % k
assert doc["workload"] == "stream", doc["workload"]
assert doc["error"] is None, doc["error"]
assert doc["target"]["created"], doc["target"]
p = doc["params"]
assert p["tx_size"] == 262144 and p["clients"] == 2 and p["passes"] == 1, p
need = ["workload", "policy", "clients", "tx_size", "mb_per_s", "fio_mb_per_s", "ratio",
        "lat_p50_us", "lat_p99_us", "lat_max_us", "flushes_per_checkpoint", "disk_flushes"]
disk = doc["disk"]
assert (disk["name"] is None) == (disk["why"] is not None), disk
rows = doc["rows"]
for r in rows:
    missing = [k for k in need if k not in r]
    assert not missing, (r.get("policy"), missing)
    assert r["workload"] == "stream", r
delog = [r for r in rows if r["policy"] not in ("fio", "fio-flush")]
fio = [r for r in rows if r["policy"] == "fio"]
fiofl = [r for r in rows if r["policy"] == "fio-flush"]
assert sorted(r["policy"] for r in delog) == ["single", "sync"], [r["policy"] for r in rows]
for r in delog:
    what = r["policy"]
    assert r["clients"] == 2 and r["tx_size"] == 262144, what
    assert r["mb_per_s"] > 0 and r["transactions_durable"] > 0, (what, r["mb_per_s"])
    assert math.isclose(r["mb_per_s"], r["tx_per_s"] * 262144 / 1e6, rel_tol=1e-4), what
    assert 0 < r["lat_p50_us"] <= r["lat_p99_us"] <= r["lat_max_us"], what
    ck, fl = r["checkpoints"], r["device_flushes"]
    assert ck > 0 and r["record_bytes"] >= ck * 4096, (what, ck)
    # Counts, not speed: single flushes at least once and at most once per checkpoint
    # (one chained flush may cover several; at each window edge a checkpoint may be
    # counted apart from its flush: up to one per client), sync at most twice
    # (PREFLUSH on the first write, PREFLUSH|FUA on the last).
    if what == "single":
        assert 0 < fl <= ck + 2 * max(1, r["clients"]) and r["fua_writes"] == 0, (what, fl, ck)
    asked = r["preflushes"] + r["flushes"] + r["fua_flushes"]
    # The flushes delog asked for, shared by the flush gate on a file (at most that
    # many, none only when none was asked for); on sim one each.  device_flushes counts
    # a flush when it starts, the journal its requests when their results are in: at
    # each window edge up to one per log buffer and client in flight may fall apart.
    slack = 8 + 2 * max(1, r.get("clients") or 1)
    assert fl <= asked + slack and (fl > 0) == (asked > 0), (what, fl, asked)
    if doc["backend"] == "sim":
        assert abs(fl - asked) <= slack, (what, fl, asked)
    assert r["fua_flushes"] in (0, r["fua_writes"]), what
    if disk["name"] is None:
        assert r["disk_flushes"] is None and r["disk_flushes_per_commit"] is None, what
    else:
        assert r["disk_flushes"] >= 0 and r["disk_flushes_per_checkpoint"] >= 0, what
    assert math.isclose(r["device_flushes_per_commit"], fl / r["transactions"],
                        rel_tol=1e-5), what
    if what == "sync":
        # a disk without FUA adds the commit write's flush (fua_flushes)
        assert fl - r["fua_flushes"] <= 2 * ck + 2, (what, fl, ck)
    assert r["bytes_per_flush"] > 0, what
    # 256 KiB items own their buffer (cil.c CIL7): two copies each, into the
    # transaction and into a log buffer
    assert math.isclose(r["copies_per_logged_byte"], 2.0, rel_tol=0.1), (what, r["copies_per_logged_byte"])
    if have_fio:
        assert r["fio_mb_per_s"] > 0 and r["ratio"] > 0, (what, r["ratio"])
        assert math.isclose(r["ratio"], r["mb_per_s"] / r["fio_mb_per_s"], rel_tol=1e-2,
                            abs_tol=1e-3), what
        assert r["fio_flush_mb_per_s"] > 0, what
        assert math.isclose(r["ratio_flush"], r["mb_per_s"] / r["fio_flush_mb_per_s"],
                            rel_tol=1e-2, abs_tol=1e-3), what
    else:
        assert r["fio_mb_per_s"] is None and r["ratio"] is None, what
        assert r["fio_flush_mb_per_s"] is None and r["ratio_flush"] is None, what
if have_fio:
    # one fio run next to each delog point
    assert sorted(f["paired_with"] for f in fio) == ["single", "sync"], fio
    assert all(f["mb_per_s"] > 0 and f["ratio"] is None for f in fio), fio
    # and one fio run with the flusher job beside it
    assert sorted(f["paired_with"] for f in fiofl) == ["single", "sync"], fiofl
    assert all(f["mb_per_s"] > 0 and f["mb_per_s"] == f["fio_flush_mb_per_s"] for f in fiofl), fiofl
    assert doc["fio"]["flusher_offset"] == doc["fio"]["offset"] + doc["fio"]["size"], doc["fio"]
    assert doc["fio_flush_median_mb_per_s"] > 0, doc
    assert doc["fio"]["ran"] and doc["fio"]["bs"] == 262144 and doc["fio"]["iodepth"] == 8, doc["fio"]
    assert isinstance(doc["target_met"], bool), doc["target_met"]
else:
    assert not fio and not fiofl and doc["fio"]["skipped"] == "not installed", doc["fio"]
assert sorted(s["policy"] for s in doc["summary"]) == ["single", "sync"], doc["summary"]
EOF
[ -e "$TMP/stream.log" ] && fail "the bench file was not removed"
[ "$HAVE_FIO" = 1 ] || echo "note: fio is not installed; the fio row was not checked" >&2

# 1b. The sim's SATA profile: fio's job runs on another sim disk, so both references are
#    there whether fio is installed or not; the flush target names single.
expect_rc 0 "stream bench on the sim" "$DELOG" bench $TINY --backend sim --policy single --json
python3 - "$TMP/out" <<'EOF' || fail "--backend sim --json output has bad values"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["error"] is None and doc["backend"] == "sim", doc["error"]
assert doc["sim_profile"] == "sata" and doc["fio"]["on_sim"] and doc["fio"]["ran"], doc["fio"]
rows = doc["rows"]
for kind in ("fio", "fio-flush"):
    got = [r for r in rows if r["policy"] == kind]
    assert len(got) == 1 and got[0]["mb_per_s"] > 0, (kind, got)
d = [r for r in rows if r["policy"] == "single"]
assert len(d) == 1 and d[0]["mb_per_s"] > 0 and d[0]["ratio"] > 0, d
ft = doc["flush_target"]
assert ft["policy"] == "single" and ft["target_flushes_per_checkpoint"] == 1.5, ft
assert ft["flushes_per_checkpoint"] == doc["summary"][0]["flushes_per_checkpoint"], ft
assert isinstance(ft["met"], bool) and isinstance(doc["target_met"], bool), ft
EOF

# 2. Human output without fio.
expect_rc 0 "stream bench, human output, --no-fio" "$DELOG" bench $TINY --policy single \
	--no-fio
expect_in "$TMP/out" "flush/ckpt" "human table"
expect_in "$TMP/out" "skipped (--no-fio)" "fio skipped"
expect_in "$TMP/out" "payload made durable" "legend"

# 3. Usage errors.
expect_rc 2 "--clients 0" "$DELOG" bench --workload stream --clients 0
expect_in "$TMP/err" "delog bench: --clients" "error format"
expect_rc 2 "--tx-size 1K" "$DELOG" bench --workload stream --tx-size 1K
expect_rc 2 "--tx-size over an eighth of the log" "$DELOG" bench --workload stream \
	--size 16M --tx-size 4M
expect_rc 2 "--passes 0" "$DELOG" bench --workload stream --passes 0
expect_rc 2 "--policy bogus" "$DELOG" bench --workload stream --policy single,bogus
expect_rc 2 "--time 0" "$DELOG" bench --workload stream --time 0
expect_rc 2 "--logbsize 3K" "$DELOG" bench --workload stream --logbsize 3K
expect_rc 2 "--backend sim with a PATH" "$DELOG" bench --workload stream --backend sim "$TMP/x"
expect_rc 2 "--sim-profile without --backend sim" "$DELOG" bench --workload stream \
	--sim-profile sata
expect_rc 2 "--sim-profile bogus" "$DELOG" bench --workload stream --backend sim \
	--sim-profile bogus
[ -z "$(ls -A "$TMP" | grep -v '^out$' | grep -v '^err$')" ] ||
	fail "a run left a file: $(ls -A "$TMP")"

finish "bench_stream"
