#!/bin/sh
# kv_test.sh - docs/examples/crashtest_kv end to end, run by ctest (crashtest.kv).
#
#   kv_test.sh CRASHTEST_KV TESTDIR [STATES]
#
# 1. The correct kv: a campaign of STATES states (default 100000) per safe policy (sync,
#    async, single) finds no failure.
# 2. --broken (a put acknowledged after its commit, before its force) is found on every
#    safe policy within the default budget; the run prints FAILED, a handle and a minimal
#    state.
# 3. Each handle replayed 100 times fails 100 times with one reason; the minimised handle
#    fails when replayed; --minimise on the handle writes a handle that fails.
# 4. A file that is no handle is refused with exit 2 and a reason.
# 5. The serial mode: two campaigns of the broken kv with one seed find the same failure
#    at the same point (one handle name, one reason, one trace hash).  (Traces of correct
#    campaigns are compared by the crashtest suite, on each policy.)
# Exit 0 pass, 1 fail.
set -u

CT=${1:?crashtest_kv}
DIR=${2:?test directory}
STATES=${3:-100000}
TMP=$(mktemp -d "${DIR}/crashtest_kv.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

SEED=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
echo "seed $SEED"

for p in sync async single; do
	expect_rc 0 "correct kv, $p" "$CT" --policy "$p" --states "$STATES" --seed "$SEED" --dir "$TMP"
	expect_in "$TMP/out" "no failure" "correct kv, $p"
done

for p in sync async single; do
	expect_rc 1 "broken kv, $p" "$CT" --broken --policy "$p" --seed "$SEED" --dir "$TMP"
	expect_in "$TMP/out" "FAILED" "broken kv, $p"
	expect_in "$TMP/out" "was acknowledged" "broken kv, $p"
	h=$(sed -n 's/^handle: //p' "$TMP/out")
	m=$(sed -n 's/^minimal: //p' "$TMP/out")
	if [ ! -f "$h" ] || [ ! -f "$m" ]; then
		fail "broken kv, $p: no handle or no minimal handle: $(cat "$TMP/out")"
		continue
	fi
	expect_rc 1 "replay of $h" "$CT" --replay "$h" --times 100
	expect_in "$TMP/out" "failed 100, passed 0, reasons that differ 0" "replay of $h"
	expect_rc 1 "replay of $m" "$CT" --replay "$m"
	expect_in "$TMP/out" "failed 1, passed 0" "replay of $m"
	expect_rc 0 "--minimise $h" "$CT" --minimise "$h" "$TMP/again.ctf"
	expect_rc 1 "replay of the re-minimised handle" "$CT" --replay "$TMP/again.ctf"
done

echo "not a handle" >"$TMP/bad.ctf"
expect_rc 2 "a file that is no handle" "$CT" --replay "$TMP/bad.ctf"
expect_in "$TMP/err" "not a crash-test handle" "a file that is no handle"

for i in 1 2; do
	expect_rc 1 "serial broken kv, run $i" "$CT" --serial --broken --policy single \
		--seed "$SEED" --dir "$TMP"
	sed -n 's/^\(handle\|trace hash\|reason\): //p; s/^trace hash //p' "$TMP/out" >"$TMP/found$i"
done
cmp -s "$TMP/found1" "$TMP/found2" ||
	fail "serial mode: one seed found two failures: $(cat "$TMP/found1" "$TMP/found2")"

finish "crashtest.kv"
