#!/bin/sh
# badpath_test.sh - every `delog` command that takes a PATH refuses one that is not a
# regular file or a block device, before anything opens it, run by ctest (tools.badpath).
#
#   badpath_test.sh DELOG TESTDIR
#
# The paths: a FIFO (mkfifo; a read-only open(2) of one blocks until a writer comes, so a
# command that opens it first hangs), a directory and /dev/null (a character device).
# Each command given one must exit 1 within 10 seconds (run under timeout(1): a hang is
# a failure, exit 124), say "not a regular file or block device" and name the kind ("a
# FIFO", "a directory", "a character device"), and leave the path as it was: the FIFO
# still a FIFO, the directory still empty, /dev/null still a character device.
# The commands: format (with and without --size), print (also --json), recover (also
# --dry-run and --json), probe, stress, and bench with each workload that takes a PATH.
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
TMP=$(mktemp -d "${DIR}/badpath_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

command -v timeout >/dev/null 2>&1 || skip "timeout(1) is not installed"
command -v mkfifo >/dev/null 2>&1 || skip "mkfifo(1) is not installed"
mkfifo "$TMP/fifo" || skip "cannot make a FIFO in $TMP"
mkdir "$TMP/dir" || exit 1
[ -c /dev/null ] || skip "/dev/null is not a character device"

# refused PATH KIND CMD... : `delog CMD... PATH` exits 1 promptly, naming PATH and KIND.
refused() {
	path=$1
	kind=$2
	shift 2
	what="delog $* $(basename "$path")"
	expect_rc 1 "$what" timeout 10 "$DELOG" "$@" "$path"
	[ "$rc" -eq 124 ] && fail "$what: hung (killed after 10 s)"
	expect_in "$TMP/err" "$path: not a regular file or block device ($kind)" "$what"
}

for cmd in "format" "format --size 16M" "format --force" "print" "print --json" "recover" \
	   "recover --dry-run" "recover --json" "probe" "probe --force" "stress" \
	   "bench --workload recovery" "bench --workload commit" "bench --workload dbench" \
	   "bench --workload fsmark" "bench --workload stream" "bench --compare-flush" \
	   "bench --workload commit --force"; do
	# shellcheck disable=SC2086 # $cmd is the command and its options, split on purpose
	{
		refused "$TMP/fifo" "a FIFO" $cmd
		[ -p "$TMP/fifo" ] || fail "delog $cmd: the FIFO is gone or replaced"
		refused "$TMP/dir" "a directory" $cmd
		[ -d "$TMP/dir" ] && [ -z "$(ls -A "$TMP/dir")" ] ||
			fail "delog $cmd: the directory was changed"
		refused /dev/null "a character device" $cmd
		[ -c /dev/null ] || fail "delog $cmd: /dev/null is no longer a character device"
	}
done

# --json keeps stdout one document: the refusal is its error.
expect_rc 1 "print --json fifo" timeout 10 "$DELOG" print --json "$TMP/fifo"
expect_in "$TMP/out" '"what": "not a regular file or block device (a FIFO)"' "print --json fifo"
expect_rc 1 "recover --json fifo" timeout 10 "$DELOG" recover --json "$TMP/fifo"
expect_in "$TMP/out" '"what": "not a regular file or block device (a FIFO)"' "recover --json fifo"

# Nothing was created beside them (format, probe, bench and stress create a missing PATH).
[ "$(ls -A "$TMP" | sort | tr '\n' ' ')" = "dir err fifo out " ] ||
	fail "files left in the test directory: $(ls -A "$TMP" | tr '\n' ' ')"

finish badpath_test
