# lib.sh - the helpers the shell tests under tests/ share, sourced by each of them
# (". "$(dirname "$0")/../lib.sh""), after it has made $TMP, its temporary directory (which
# its own EXIT trap removes) where it uses expect_rc.
#
#   fail MSG...                 count a failed check, say why on stderr
#   skip MSG...                 exit 77 (ctest's SKIP_RETURN_CODE) with the reason
#   expect_rc WANT WHAT CMD...  run CMD, stdout to $TMP/out and stderr to $TMP/err; a
#                               status other than WANT fails, showing the stderr
#   expect_in FILE TEXT WHAT    TEXT (fixed string) must be in FILE
#   finish NAME                 the verdict: exit 1 after any failure, else 0
# POSIX sh.

FAILS=0

fail() {
	echo "FAIL: $*" >&2
	FAILS=$((FAILS + 1))
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

expect_rc() {
	want=$1
	what=$2
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, expected $want"
		sed 's/^/  stderr: /' "$TMP/err" >&2
	fi
}

expect_in() {
	grep -qF -- "$2" "$1" || fail "$3: '$2' not in $(basename "$1")"
}

finish() {
	if [ "$FAILS" -ne 0 ]; then
		echo "$1: $FAILS check(s) failed" >&2
		exit 1
	fi
	echo "$1: ok"
	exit 0
}
