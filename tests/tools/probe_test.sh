#!/bin/sh
# probe_test.sh - end-to-end tests of `delog` and `delog probe`, run by ctest.
#
#   probe_test.sh MODE DELOG TESTDIR
#
# MODE is one of:
#   cli    --help, --version, help COMMAND, usage errors (exit 2), refusals (exit 1)
#   file   probe a new file in TESTDIR with --json: the output parses (python3 -m
#          json.tool), has the expected keys (the recommendation too: a safe policy,
#          logbufs 2..8, logbsize a power of two in 16K..256K, a reason), and the file
#          is removed afterwards; the human output has the recommendation
#   tmpfs  a path on /dev/shm (tmpfs) fails with exit 1 and a message naming the path
#          and O_DIRECT, and leaves no file behind
#   loop   a loop device (root, losetup): refused without --force, probed with it
#   sim    the simulated disk (--backend sim) with --json
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
# The probes use small sizes and the minimum op count, to stay fast; the numbers are not
# checked, only the shape of the output.
set -u

MODE=${1:?mode}
DELOG=${2:?path to delog}
DIR=${3:?test directory}
TMP=$(mktemp -d "${DIR}/probe_test.XXXXXX") || exit 1
LOOPDEV=
trap 'test -n "$LOOPDEV" && losetup -d "$LOOPDEV"; rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

need_python() {
	command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (needed to parse --json)"
}

# check_json FILE KIND : FILE is one JSON document with the keys the probe promises.
check_json() {
	python3 -m json.tool "$1" >/dev/null || { fail "--json output does not parse"; return; }
	python3 - "$1" "$2" <<'EOF' || fail "--json output lacks expected keys"
import json, sys
doc = json.load(open(sys.argv[1]))
kind = sys.argv[2]
def need(obj, keys, where):
    missing = [k for k in keys if k not in obj]
    if missing:
        sys.exit("missing in %s: %s" % (where, ", ".join(missing)))
need(doc, ["path", "device", "auto_backend", "backends", "target", "params", "elapsed_s"], "top level")
need(doc["device"], ["size_bytes", "logical_block", "physical_block", "dio_mem_align",
                     "dio_off_align", "dioalign_from_statx", "volatile_cache", "fua",
                     "fs_type", "is_blockdev"], "device")
assert doc["target"]["kind"] == kind, doc["target"]["kind"]
assert doc["backends"], "no backends"
ok = [b for b in doc["backends"] if b["ok"]]
assert ok, "no backend succeeded: %s" % [b.get("error") for b in doc["backends"]]
# A backend may be missing only because this system refuses it (io_uring disabled by a
# seccomp filter, say); any other failure is a bug.
for b in doc["backends"]:
    if not b["ok"]:
        assert "not usable on this system" in b.get("error", ""), (b["name"], b.get("error"))
for b in ok:
    need(b, ["name", "ok", "latency_us", "bandwidth_mbs"], "backend " + b["name"])
    need(b["latency_us"], ["write", "write_flush", "fua_write", "flush"], "latency_us")
    for t, s in b["latency_us"].items():
        need(s, ["median", "p99", "mean", "ops"], t)
        assert s["ops"] >= 200, (t, s["ops"])
        assert 0 < s["median"] <= s["p99"], (t, s)
    need(b["bandwidth_mbs"], ["seq_write", "seq_read"], "bandwidth_mbs")
    assert b["bandwidth_mbs"]["seq_write"] > 0 and b["bandwidth_mbs"]["seq_read"] > 0
    if "fio" in b and b["fio"]["installed"]:
        need(b["fio"], ["seq_write_mbs", "seq_read_mbs", "ratio_write", "ratio_read"], "fio")
# The recommendation (tools/common/recommend.c): a safe policy, the log's limits, a reason.
need(doc, ["recommendation"], "top level")
rec = doc["recommendation"]
assert isinstance(rec, dict), "recommendation is %r although a backend succeeded" % (rec,)
need(rec, ["policy", "logbufs", "logbsize", "reason", "backend"], "recommendation")
assert rec["policy"] in ("sync", "async", "single"), rec["policy"]
assert 2 <= rec["logbufs"] <= 8, rec["logbufs"]
bs = rec["logbsize"]
assert 16 << 10 <= bs <= 256 << 10 and bs & (bs - 1) == 0, bs
assert isinstance(rec["reason"], str) and rec["reason"].strip(), rec["reason"]
assert rec["backend"] in [b["name"] for b in ok], rec["backend"]
if kind != "sim":
    assert doc["auto_backend"] in [b["name"] for b in doc["backends"]] + ["uring", "aio", "psync"]
EOF
}

SMALL="--size 16M --ops 200 --passes 1"

case $MODE in
cli)
	expect_rc 0 "delog --help" "$DELOG" --help
	expect_in "$TMP/out" probe "delog --help lists probe"
	expect_rc 0 "delog --version" "$DELOG" --version
	expect_in "$TMP/out" "delog " "delog --version"
	expect_rc 0 "delog probe --help" "$DELOG" probe --help
	expect_in "$TMP/out" "--json" "delog probe --help"
	expect_in "$TMP/out" "--force" "delog probe --help"
	expect_rc 0 "delog help probe" "$DELOG" help probe
	expect_in "$TMP/out" "usage: delog probe" "delog help probe"
	expect_rc 2 "no command" "$DELOG"
	expect_rc 2 "unknown command" "$DELOG" no-such-command
	expect_in "$TMP/err" "no-such-command" "unknown command message"
	expect_rc 2 "delog help unknown" "$DELOG" help no-such-command
	expect_rc 2 "unknown global option" "$DELOG" --no-such-option
	expect_rc 2 "probe without PATH" "$DELOG" probe
	expect_rc 2 "probe with two PATHs" "$DELOG" probe "$TMP/a" "$TMP/b"
	expect_rc 2 "probe --ops below 200" "$DELOG" probe --ops 10 "$TMP/a"
	expect_rc 2 "probe --size garbage" "$DELOG" probe --size 12X "$TMP/a"
	expect_rc 2 "probe unknown backend" "$DELOG" probe --backend nope "$TMP/a"
	expect_rc 2 "probe unknown option" "$DELOG" probe --no-such-option "$TMP/a"
	expect_rc 2 "probe --bw-bytes above --size" "$DELOG" probe --size 16M --bw-bytes 32M "$TMP/a"
	[ -e "$TMP/a" ] && fail "a usage error created the probe file"
	# An existing non-empty file is refused (and left alone) without --force.
	echo precious >"$TMP/keep"
	expect_rc 1 "probe of a non-empty file without --force" "$DELOG" probe $SMALL "$TMP/keep"
	expect_in "$TMP/err" "$TMP/keep" "refusal names the path"
	expect_in "$TMP/err" "--force" "refusal names --force"
	[ "$(cat "$TMP/keep")" = precious ] || fail "the refused file was modified"
	expect_rc 1 "probe of a directory" "$DELOG" probe "$TMP"
	expect_rc 1 "probe in a missing directory" "$DELOG" probe "$TMP/missing/x"
	expect_in "$TMP/err" "$TMP/missing/x" "missing directory message names the path"
	;;
file)
	need_python
	expect_rc 0 "probe of a new file" "$DELOG" probe $SMALL --json "$TMP/probe.img"
	check_json "$TMP/out" file
	[ -e "$TMP/probe.img" ] && fail "the probe file was not removed"
	# Human output on an existing empty file: the table, and the file is truncated back.
	: >"$TMP/empty.img"
	expect_rc 0 "probe of an empty existing file" "$DELOG" probe $SMALL --no-fio "$TMP/empty.img"
	expect_in "$TMP/out" "write 4K + flush" "human table"
	expect_in "$TMP/out" "flush (idle)" "human table"
	expect_in "$TMP/out" "write MB/s" "human table"
	expect_in "$TMP/out" "recommendation" "human output"
	expect_in "$TMP/out" "flush policy" "human recommendation"
	expect_in "$TMP/out" "log buffers" "human recommendation"
	[ -s "$TMP/empty.img" ] && fail "the empty file was not truncated back"
	;;
tmpfs)
	[ -d /dev/shm ] || skip "/dev/shm does not exist"
	fstype=$(stat -f -c %T /dev/shm 2>/dev/null)
	[ "$fstype" = tmpfs ] || skip "/dev/shm is $fstype, not tmpfs"
	p=/dev/shm/delog-probe-test.$$
	expect_rc 1 "probe on tmpfs" "$DELOG" probe $SMALL "$p"
	expect_in "$TMP/err" "$p" "tmpfs message names the path"
	expect_in "$TMP/err" "O_DIRECT" "tmpfs message names O_DIRECT"
	[ -s "$TMP/out" ] && fail "an error printed to stdout"
	[ -e "$p" ] && { fail "the tmpfs probe file was left behind"; rm -f "$p"; }
	;;
loop)
	need_python
	[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
	command -v losetup >/dev/null 2>&1 || skip "losetup is not installed"
	truncate -s 64M "$TMP/loop.img" || exit 1
	LOOPDEV=$(losetup --find --show --direct-io=on "$TMP/loop.img" 2>"$TMP/err") ||
		skip "losetup failed: $(cat "$TMP/err")"
	expect_rc 1 "probe of a block device without --force" "$DELOG" probe $SMALL "$LOOPDEV"
	expect_in "$TMP/err" "--force" "block device refusal names --force"
	expect_rc 0 "probe of a loop device" "$DELOG" probe $SMALL --force --json "$LOOPDEV"
	check_json "$TMP/out" blockdev
	;;
sim)
	need_python
	expect_rc 0 "probe of the sim backend" "$DELOG" probe --backend sim --sim-profile none \
		--ops 200 --size 16M --json
	check_json "$TMP/out" sim
	expect_rc 2 "sim with a PATH" "$DELOG" probe --backend sim "$TMP/x"
	expect_rc 2 "--sim-profile without sim" "$DELOG" probe --sim-profile nvme "$TMP/x"
	;;
*)
	echo "unknown mode $MODE" >&2
	exit 1
	;;
esac

finish "$MODE"
