#!/bin/sh
# api_test.sh - docs/API.md documents every function of the public header, run by ctest.
#
#   api_test.sh HEADER_DIR API_MD [nopush]
#
# Every function declared in HEADER_DIR/*.h (a line in column 0 naming delog_x( that is
# not a typedef: the rule package/CMakeLists.txt uses for the export list) must name a
# "###" heading of API_MD, and every delog_* name in such a heading must still exist in
# the headers.  The thread-safety summary's "from the push callback" row names exactly the
# functions whose own section says they may be called from the push callback (not with
# "nopush": a page without that summary, docs/CRASHTEST.md).  Exit 0
# pass, 1 fail, with the differences on stderr.
set -u

HDRS=${1:?header directory}
API=${2:?API.md}
. "$(dirname "$0")/../lib.sh"

[ -f "$API" ] || { fail "$API does not exist"; exit 1; }
declared=$(cat "$HDRS"/*.h | grep -E '^[A-Za-z_].*[ *]delog_[A-Za-z0-9_]+ *\(' |
	grep -v '^typedef' | sed -E 's/^[^(]*[ *](delog_[A-Za-z0-9_]+) *\(.*/\1/' | sort -u)
headed=$(grep '^###' "$API" | grep -oE 'delog_[A-Za-z0-9_]+' | sort -u)
[ -n "$declared" ] || fail "no functions found in $HDRS/*.h"

for f in $declared; do
	echo "$headed" | grep -qx "$f" || fail "$f (declared in $(basename "$HDRS")/) has no ### heading in API.md"
done
for n in $headed; do
	cat "$HDRS"/*.h | grep -qw "$n" || fail "API.md documents $n, which the headers no longer declare"
done
# Sections that allow the push callback, against the summary's row.
[ "${3:-}" = nopush ] && { [ "$FAILS" -eq 0 ] && echo "api_test: $API ok" && exit 0; exit 1; }
allowed=$(awk '/^### `delog_/ { f = $0; gsub(/^### `|`.*$/, "", f) }
	/may be called from the push callback/ { if (f != "") print f }' "$API" | sort -u)
row=$(grep '^| from the push callback |' "$API" | grep -oE 'delog_[A-Za-z0-9_]+' | sort -u)
[ -n "$row" ] || fail "API.md's thread-safety summary has no 'from the push callback' row"
for f in $allowed; do
	echo "$row" | grep -qx "$f" || fail "$f may be called from the push callback (its section), but the summary's row omits it"
done
for f in $row; do
	echo "$allowed" | grep -qx "$f" || fail "the summary's push-callback row names $f, whose section does not allow it"
done
if [ "$FAILS" -ne 0 ]; then
	echo "api_test: $FAILS failure(s)" >&2
	exit 1
fi
echo "api_test: $(echo "$declared" | wc -w) functions documented"
exit 0
