#!/bin/sh
# symbols_test.sh - libdelog exports only the delog_* functions of delog.h, run by ctest.
#
#   symbols_test.sh SO A TESTDIR CC AIO_INCLUDE_DIR [LIBS...]
#
# 1. The dynamic symbols of SO (libdelog.so) and the global defined symbols of A
#    (libdelog.a) are all delog_* names, delog_open among them, and the two sets are the
#    same (both come from one list, package/CMakeLists.txt).
# 2. A program that uses libaio itself (tests/install/aio_user.c: io_setup,
#    io_prep_pwrite, io_submit, io_getevents on a file in TESTDIR), built with CC against
#    A and LIBS (libaio, liburing, ISA-L, pthreads), runs and its write lands.  Skipped
#    (the rest still checked) when AIO_INCLUDE_DIR is empty: delog was built without
#    libaio.
# Exit 0 pass, 1 fail, 77 skip (nm missing), with the reason on stderr.
set -u

SO=${1:?libdelog.so}
A=${2:?libdelog.a}
DIR=${3:?test directory}
CC=${4:?C compiler}
AIO_INC=${5?libaio include directory, or empty}
shift 5
TMP=$(mktemp -d "${DIR}/symbols_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

command -v nm >/dev/null 2>&1 || skip "nm is not installed"

# ---- 1. the exported names -----------------------------------------------------------
# check_names WHAT FILE : every name in FILE is delog_*, and delog_open is one of them.
check_names() {
	if [ ! -s "$2" ]; then
		fail "$1: no exported symbols found"
		return
	fi
	grep -qx delog_open "$2" || fail "$1 does not export delog_open"
	if grep -v '^delog_' "$2" >"$TMP/leaked"; then
		fail "$1 exports $(wc -l <"$TMP/leaked") names that are not delog_*:" \
			"$(head -n 40 "$TMP/leaked" | tr '\n' ' ')"
	fi
}

nm -D --defined-only "$SO" >"$TMP/nm.so" || fail "nm -D $SO failed"
awk 'NF == 3 { print $3 }' "$TMP/nm.so" | sed 's/@.*//' | sort -u >"$TMP/so.names"
check_names "libdelog.so (dynamic symbols)" "$TMP/so.names"

nm -g --defined-only "$A" >"$TMP/nm.a" || fail "nm -g $A failed"
awk 'NF == 3 { print $3 }' "$TMP/nm.a" | sort -u >"$TMP/a.names"
check_names "libdelog.a (global defined symbols)" "$TMP/a.names"

if ! cmp -s "$TMP/so.names" "$TMP/a.names"; then
	fail "libdelog.so and libdelog.a export different names (< .so only, > .a only):"
	diff "$TMP/so.names" "$TMP/a.names" | grep '^[<>]' | head -n 40 | sed 's/^/  /' >&2
fi
echo "libdelog.so: $(wc -l <"$TMP/so.names") names, libdelog.a: $(wc -l <"$TMP/a.names") names"

# ---- 2. a libaio program linked with libdelog.a --------------------------------------
if [ -z "$AIO_INC" ]; then
	echo "delog built without libaio: the libaio program is not built"
else
	INC=$(cd "$(dirname "$0")/../../engine/include" && pwd)
	if ! "$CC" -o "$TMP/aio_user" "$(dirname "$0")/aio_user.c" -I"$INC" -I"$AIO_INC" \
		"$A" "$@" >"$TMP/cc.log" 2>&1; then
		fail "building aio_user.c with libdelog.a $*"
		sed 's/^/  | /' "$TMP/cc.log" | tail -40 >&2
	else
		"$TMP/aio_user" "$TMP/aio.dat" >"$TMP/out" 2>"$TMP/err"
		rc=$?
		sed 's/^/  aio_user: /' "$TMP/out" "$TMP/err"
		if [ "$rc" -gt 128 ]; then
			fail "aio_user (libaio program linked with libdelog.a) died of signal $((rc - 128))" \
				"$(kill -l $((rc - 128)) 2>/dev/null)"
		elif [ "$rc" -ne 0 ]; then
			fail "aio_user (libaio program linked with libdelog.a) exited $rc"
		fi
	fi
fi

finish "symbols_test"
