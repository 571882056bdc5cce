#!/bin/sh
# man_test.sh - the man pages (docs/man/) and `delog --help` agree, run by ctest.
#
#   man_test.sh DELOG MANDIR [PROGRAM...]
#
# For the top level (delog.1 against `delog --help`) and for every command listed under
# "commands:" in `delog --help` (delog-CMD.1 against `delog CMD --help`, plus
# `delog CMD --workload W --help` for each W a "workloads:" section lists):
#   - the man page exists and its .TH names it (DELOG-CMD, section 1);
#   - every long option (--name) in the help's option sections (a line ending in
#     "options:" up to the next blank line) appears in the page's OPTIONS sections (any
#     .SH or .SS heading containing "OPTIONS"), and every long option there is one the
#     help lists.  Prose on either side (the command summaries, examples) is not compared.
# Also: delog.1 names every command (delog-CMD), and every delog-*.1 page in MANDIR is a
# command the tool has (no page for a command that is gone), or a program of its own
# that a command runs (delog-bench-peers, for `delog bench --peers`): such a page is
# checked against the program's --help when it was built (beside DELOG, or a PROGRAM
# given), and otherwise must at least be named by the help of the command that runs it,
# or be one of OPTIONAL_PROGS: programs built only with an optional part (delog-raft-kv,
# raft/: C-Raft and libuv).
# Exit 0 pass, 1 fail, with each difference on stderr.
set -u
OPTIONAL_PROGS="delog-raft-kv"

DELOG=${1:?path to delog}
MANDIR=${2:?man page directory}
shift 2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/man_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# troff to text, enough for option names: \- is -, font changes and \& vanish.
detroff() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\&//g' -e 's/\\(em/--/g' "$1"
}

# long_opts: the --options in stdin, one a line, sorted.
long_opts() {
	grep -oE -- '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u
}

# help_opts FILE: the long options in the option sections of a --help output.
help_opts() {
	awk '/^([A-Za-z][A-Za-z -]* )?options:$/ { inopt = 1; next } /^$/ { inopt = 0 } inopt { print }' "$1" |
		long_opts
}

# man_opts PAGE: the long options in the OPTIONS sections of PAGE.
man_opts() {
	detroff "$1" | awk '
		/^\.S[HS] / { inopt = (toupper($0) ~ /OPTIONS/); next }
		inopt { print }' | long_opts
}

# check NAME PAGE HELPFILE: compare the options of HELPFILE with those of PAGE.
check() {
	name=$1
	page=$2
	if [ ! -f "$page" ]; then
		fail "$name: no man page $page"
		return
	fi
	title=$(echo "$name" | tr 'a-z ' 'A-Z-')
	sed -n 's/\\-/-/g; s/^\.TH  *"\{0,1\}\([^" ]*\)"\{0,1\}  *"\{0,1\}\([^" ]*\).*/\1 \2/p' "$page" |
		head -n 1 >"$TMP/th"
	[ "$(cat "$TMP/th")" = "$title 1" ] ||
		fail "$name: $(basename "$page") has .TH '$(cat "$TMP/th")', expected '$title 1'"
	help_opts "$3" >"$TMP/help.opts"
	man_opts "$page" >"$TMP/man.opts"
	comm -23 "$TMP/help.opts" "$TMP/man.opts" >"$TMP/only_help"
	comm -13 "$TMP/help.opts" "$TMP/man.opts" >"$TMP/only_man"
	[ -s "$TMP/only_help" ] &&
		fail "$name: in --help but not in the OPTIONS of $(basename "$page"): $(tr '\n' ' ' <"$TMP/only_help")"
	[ -s "$TMP/only_man" ] &&
		fail "$name: in the OPTIONS of $(basename "$page") but not in --help: $(tr '\n' ' ' <"$TMP/only_man")"
	echo "$name: $(wc -l <"$TMP/help.opts") long options agree with $(basename "$page")"
}

"$DELOG" --help >"$TMP/top" || { fail "delog --help exited $?"; exit 1; }
: >"$TMP/allhelp"
CMDS=$(awk '/^commands:/ { c = 1; next } /^$/ { c = 0 } c { print $1 }' "$TMP/top")
[ -n "$CMDS" ] || fail "no commands: section in delog --help"
check delog "$MANDIR/delog.1" "$TMP/top"

for c in $CMDS; do
	"$DELOG" "$c" --help >"$TMP/help" 2>"$TMP/err" ||
		fail "delog $c --help exited $?: $(cat "$TMP/err")"
	# Workload-specific options (delog bench --workload W --help); a workload that is a
	# program of its own ("[the program delog-X]" on its line) is checked against its own
	# page below.
	for w in $(awk '/^workloads:/ { c = 1; next } /^$/ { c = 0 } c && !/\[the program delog-/ { print $1 }' "$TMP/help"); do
		"$DELOG" "$c" --workload "$w" --help >>"$TMP/help" 2>"$TMP/err" ||
			fail "delog $c --workload $w --help exited $?: $(cat "$TMP/err")"
	done
	check "delog $c" "$MANDIR/delog-$c.1" "$TMP/help"
	cat "$TMP/help" >>"$TMP/allhelp"
	detroff "$MANDIR/delog.1" | grep -q -- "delog-$c" ||
		fail "delog.1 does not mention delog-$c"
done

for page in "$MANDIR"/delog-*.1; do
	[ -e "$page" ] || continue
	c=$(basename "$page" .1)
	c=${c#delog-}
	echo "$CMDS" | grep -qx -- "$c" && continue
	prog=$(dirname "$DELOG")/delog-$c
	for p in "$@"; do
		[ "$(basename "$p")" = "delog-$c" ] && prog=$p
	done
	if [ -x "$prog" ]; then
		"$prog" --help >"$TMP/help" 2>"$TMP/err" || fail "delog-$c --help exited $?: $(cat "$TMP/err")"
		check "delog-$c" "$page" "$TMP/help"
	elif echo " $OPTIONAL_PROGS " | grep -q " delog-$c "; then
		echo "delog-$c: built only with an optional part, not here"
	elif ! grep -q -- "delog-$c" "$TMP/allhelp"; then
		fail "$(basename "$page"): delog has no command '$c', and no command's help names a program delog-$c"
	else
		echo "delog-$c: not built here; named by delog's help"
	fi
done

finish "man_test"
