#!/usr/bin/env bash
# probe_test.sh DELOG TESTDIR - drives the real `delog` binary: help and usage errors,
# a probe of a temporary file with --json (parsed, keys checked, the file removed
# afterwards), refusal of an existing file without --force, and of tmpfs.
set -u
delog=$1
dir=$2
fail=0
check() { # check DESCRIPTION EXPECTED_STATUS COMMAND...
	local what=$1 want=$2
	shift 2
	"$@" >"$dir/out.$$" 2>"$dir/err.$$"
	local rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: $what: exit $rc, expected $want"; cat "$dir/err.$$"; fail=1
	else
		echo "ok: $what"
	fi
}

check "delog --help" 0 "$delog" --help
grep -q probe "$dir/out.$$" || { echo "FAIL: --help does not list probe"; fail=1; }
check "delog --version" 0 "$delog" --version
check "delog probe --help" 0 "$delog" probe --help
check "unknown command" 2 "$delog" no-such-command
check "probe without PATH" 2 "$delog" probe
check "probe with a bad option" 2 "$delog" probe --no-such-option x

f="$dir/probe-test-$$.img"
rm -f "$f"
check "probe --json on a new file" 0 "$delog" probe --json --ops 200 --size 16M --passes 1 --no-fio "$f"
cp "$dir/out.$$" "$dir/probe.json"
python3 - "$dir/probe.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("path", "device", "auto_backend", "backends"):
    assert k in d, "missing key " + k
assert d["auto_backend"] in ("uring", "aio", "psync"), d["auto_backend"]
assert d["backends"], "no backend results"
for b in d["backends"]:
    assert b["ok"], b
    for t in ("write", "write_flush", "fua_write", "flush"):
        lat = b["latency_us"][t]
        assert lat["ops"] >= 200 and 0 < lat["median"] <= lat["p99"], (b["name"], t, lat)
    bw = b["bandwidth_mbs"]
    assert bw["seq_write"] > 0 and bw["seq_read"] > 0, bw
print("ok: json parses, %d backends measured" % len(d["backends"]))
PY
[ ! -e "$f" ] || { echo "FAIL: probe left $f behind"; fail=1; }

head -c 4096 /dev/zero >"$f"
check "existing file without --force" 1 "$delog" probe "$f"
grep -q -- --force "$dir/err.$$" || { echo "FAIL: refusal does not mention --force"; fail=1; }
[ -s "$f" ] || { echo "FAIL: refused probe touched the file"; fail=1; }
rm -f "$f"

if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	check "probe on tmpfs" 1 "$delog" probe /dev/shm/delog-probe-$$.img
	grep -q "/dev/shm/delog-probe-$$.img" "$dir/err.$$" && grep -q "O_DIRECT\|memory" "$dir/err.$$" ||
		{ echo "FAIL: tmpfs message does not name the path and reason:"; cat "$dir/err.$$"; fail=1; }
	rm -f /dev/shm/delog-probe-$$.img
else
	echo "skip: /dev/shm is not tmpfs here"
fi
rm -f "$dir/out.$$" "$dir/err.$$"
exit $fail
