#!/bin/sh
# cli_user_test.sh - a new user's path through `delog` (issue 16, section 4), run by ctest
# (tools.user_MODE): every wrong input gets its exit status and a message naming the
# problem, and leaves the file as it found it.
#
#   cli_user_test.sh MODE DELOG MKLOG SRCDIR TESTDIR
#
# MODE is one of:
#   paths       a directory, /dev/null, a missing path, a tmpfs file (print, recover,
#               stress): the real problem is named (not O_DIRECT, not "misaligned"), and
#               the path printed once
#   format      an empty file without --size is a usage error (2) naming --size, the file
#               untouched (size, mtime); then --size 4M formats it; a file format grew is
#               cut back when the format fails after (on tmpfs); a too-small file and a
#               file holding data are refused untouched
#   options     getopt's messages carry "delog COMMAND:" for every command (and
#               "delog:" for delog's own, "delog bench:" for every workload); -n is
#               --dry-run only; --size is the log size in format and stress; an unknown
#               --backend is a usage error everywhere
#   sizes       --size 0 and --size 1 say the same thing, quote the size and the minimum
#               (4 MiB), in a unit form; a size off the sector says so, with its exact
#               value and the two nearest that would do (format, stress, probe's 1 MiB,
#               bench recovery), refused rather than rounded
#   stress      `stress --help` and its man page say what a kill must leave (released
#               ids excepted), not "every printed id"; a dangling symbolic link, an empty
#               file, a file too small for --format and one that is no log are refused
#               (exit 1) saying what is wrong and what to do, each left as it was
#   readme      README's synopsis lists every command, every bench workload, and every
#               option of format, print, recover, probe and stress
#   progress    format shows its progress on a terminal (script(1)) and nothing on a
#               non-terminal stderr; recover of an empty, a cleanly closed and an
#               already recovered log leaves the file byte for byte (and its mtime)
#   superblock  each superblock field refused gets its own offset and names the field,
#               without the records' "torn-write window" wording
#   device      a loop device too small for the command (root, losetup): bench, probe and
#               format say it is too small, with or without --force, before asking for
#               --force, and leave it as it was; one large enough asks for --force
#   layers      tools/ depends downward only: no file under tools/bench, tools/crash or
#               tools/common includes a header of tools/cli (by "cli/NAME.h" or by a
#               name only tools/cli has), and tools/common none of bench/ or crash/
#   json        format --json answers every refusal with one JSON document (exit 1,
#               "superblock": null, "error" naming what stderr names), on hostile
#               targets left as they were, and so do probe and crash; a usage error
#               (exit 2) under --json prints nothing on stdout, in every command that has
#               --json (delog(1))
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
set -u

MODE=${1:?mode}
DELOG=${2:?path to delog}
MKLOG=${3:?path to mklog}
SRC=${4:?source directory}
DIR=${5:?test directory}
TMP=$(mktemp -d "${DIR}/cli_user_test.XXXXXX") || exit 1
SHM=
LOOPS=
trap 'for l in $LOOPS; do losetup -d "$l"; done; rm -rf "$TMP"; test -n "$SHM" && rm -f "$SHM"' EXIT
. "$(dirname "$0")/../lib.sh"

# state FILE: size, mtime (ns) and checksum, to compare before and after.
state() {
	if [ -e "$1" ]; then
		echo "$(stat -c '%s %.9Y' "$1") $(cksum <"$1")"
	else
		echo "absent"
	fi
}

# once FILE TEXT WHAT: TEXT occurs exactly once in FILE.
once() {
	n=$(grep -oF -- "$2" "$1" | wc -l)
	[ "$n" -eq 1 ] || fail "$3: '$2' occurs $n times in $(basename "$1"), expected once"
}

# not_in FILE TEXT WHAT
not_in() {
	! grep -qF -- "$2" "$1" || fail "$3: '$2' should not be in $(basename "$1")"
}

case $MODE in
paths)
	mkdir "$TMP/dir"
	for cmd in format "format --size 8M" print recover "recover --dry-run" probe stress; do
		# shellcheck disable=SC2086 # $cmd is the command and its options
		{
			expect_rc 1 "$cmd DIR" timeout 20 "$DELOG" $cmd "$TMP/dir"
			expect_in "$TMP/err" "$TMP/dir: not a regular file or block device (a directory)" "$cmd DIR"
			not_in "$TMP/err" "O_DIRECT" "$cmd DIR"
			once "$TMP/err" "$TMP/dir" "$cmd DIR"
			expect_rc 1 "$cmd /dev/null" timeout 20 "$DELOG" $cmd /dev/null
			expect_in "$TMP/err" "/dev/null: not a regular file or block device (a character device)" "$cmd /dev/null"
			not_in "$TMP/err" "tmpfs" "$cmd /dev/null"
			not_in "$TMP/err" "O_DIRECT" "$cmd /dev/null"
		}
	done
	# A missing file: named once, as missing.
	for cmd in print recover "recover --dry-run"; do
		# shellcheck disable=SC2086
		expect_rc 1 "$cmd missing" "$DELOG" $cmd "$TMP/missing"
		expect_in "$TMP/err" "$TMP/missing: No such file or directory" "$cmd missing"
		once "$TMP/err" "$TMP/missing" "$cmd missing"
	done
	for cmd in "format --size 8M" probe "stress --count 1"; do
		# shellcheck disable=SC2086
		expect_rc 1 "$cmd in a missing directory" timeout 20 "$DELOG" $cmd "$TMP/nodir/f"
		expect_in "$TMP/err" "o such file or directory" "$cmd in a missing directory"
		once "$TMP/err" "$TMP/nodir/f" "$cmd in a missing directory"
	done
	expect_rc 2 "format missing, no --size" "$DELOG" format "$TMP/missing"
	expect_in "$TMP/err" "--size is needed" "format missing, no --size"
	once "$TMP/err" "$TMP/missing" "format missing, no --size"
	[ -e "$TMP/missing" ] && fail "a refused command created $TMP/missing"
	# A file on tmpfs: the iolayer's reason, with the path once.
	if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
		SHM=/dev/shm/delog_cli_user_test.$$
		truncate -s 8M "$SHM"
		for cmd in print recover; do
			expect_rc 1 "$cmd on tmpfs" "$DELOG" $cmd "$SHM"
			expect_in "$TMP/err" "(tmpfs) keeps data only in memory" "$cmd on tmpfs"
			once "$TMP/err" "$SHM" "$cmd on tmpfs"
			expect_rc 1 "$cmd --json on tmpfs" "$DELOG" $cmd --json "$SHM"
			expect_in "$TMP/out" "keeps data only in memory" "$cmd --json on tmpfs: error.what"
		done
		# stress: delog_open's code alone said "misaligned or out-of-range I/O?".
		before=$(state "$SHM")
		expect_rc 1 "stress on tmpfs" timeout 20 "$DELOG" stress --count 1 "$SHM"
		expect_in "$TMP/err" "(tmpfs) keeps data only in memory" "stress on tmpfs"
		not_in "$TMP/err" "misaligned" "stress on tmpfs"
		once "$TMP/err" "$SHM" "stress on tmpfs"
		[ "$(state "$SHM")" = "$before" ] || fail "stress changed the tmpfs file"
		rm -f "$SHM"
		expect_rc 1 "stress on a new tmpfs file" timeout 20 "$DELOG" stress --count 1 "$SHM"
		expect_in "$TMP/err" "(tmpfs) keeps data only in memory" "stress on a new tmpfs file"
		[ -e "$SHM" ] && fail "stress left $SHM behind"
	fi
	;;
format)
	F=$TMP/empty
	: >"$F"
	touch -d "2020-01-02 03:04:05" "$F"
	before=$(state "$F")
	expect_rc 2 "format of an empty file without --size" "$DELOG" format "$F"
	expect_in "$TMP/err" "--size" "format of an empty file without --size"
	expect_in "$TMP/err" "empty" "format of an empty file without --size"
	[ "$(state "$F")" = "$before" ] || fail "format without --size changed the empty file: $(state "$F")"
	expect_rc 0 "format --size 4M of the empty file after" "$DELOG" format --size 4M "$F"
	[ "$(stat -c %s "$F")" -eq $((4 * 1048576 + 4096)) ] || fail "format --size 4M: size $(stat -c %s "$F")"

	# Too small to use whole: refused, untouched.
	G=$TMP/small
	head -c 2097152 /dev/zero >"$G"
	touch -d "2020-01-02 03:04:05" "$G"
	before=$(state "$G")
	expect_rc 1 "format of a 2 MiB file" "$DELOG" format "$G"
	expect_in "$TMP/err" "too small" "format of a 2 MiB file"
	expect_in "$TMP/err" "4 MiB" "format of a 2 MiB file"
	[ "$(state "$G")" = "$before" ] || fail "refused format changed the 2 MiB file"
	expect_rc 1 "format --size 8M of a 2 MiB file" "$DELOG" format --size 8M "$G"
	expect_in "$TMP/err" "--force" "format --size 8M of a 2 MiB file"
	[ "$(state "$G")" = "$before" ] || fail "refused format --size changed the 2 MiB file"

	# Data: refused, untouched.
	H=$TMP/data
	head -c 8392704 /dev/zero >"$H"
	printf 'hello' | dd of="$H" bs=1 seek=100 conv=notrunc 2>/dev/null
	touch -d "2020-01-02 03:04:05" "$H"
	before=$(state "$H")
	expect_rc 1 "format of a file holding data" "$DELOG" format "$H"
	expect_in "$TMP/err" "holds data (non-zero byte at offset 100)" "format of a file holding data"
	[ "$(state "$H")" = "$before" ] || fail "refused format changed the file holding data"

	# Grown, then refused by the device (tmpfs): cut back to its size and times.
	if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
		SHM=/dev/shm/delog_cli_user_test.$$
		: >"$SHM"
		touch -d "2020-01-02 03:04:05" "$SHM"
		before=$(state "$SHM")
		expect_rc 1 "format --size 4M of an empty file on tmpfs" "$DELOG" format --size 4M "$SHM"
		expect_in "$TMP/err" "tmpfs" "format on tmpfs"
		[ "$(state "$SHM")" = "$before" ] ||
			fail "a failed format left the tmpfs file changed: $(state "$SHM") (was $before)"
	fi
	;;
options)
	for cmd in format print recover probe stress bench crash; do
		expect_rc 2 "$cmd -Z" "$DELOG" $cmd -Z
		expect_in "$TMP/err" "delog $cmd: invalid option -- 'Z'" "$cmd -Z"
		expect_rc 2 "$cmd --no-such-option" "$DELOG" $cmd --no-such-option
		expect_in "$TMP/err" "delog $cmd: unrecognized option '--no-such-option'" "$cmd --no-such-option"
	done
	expect_rc 2 "format --size (no argument)" "$DELOG" format --size
	expect_in "$TMP/err" "delog format: option '--size' requires an argument" "format --size"
	# delog's own options, and bench's workloads (peers is a program of its own, which
	# `delog bench --peers` runs): signed "delog:" / "delog bench:", never a path.
	expect_rc 2 "delog -Z" "$DELOG" -Z
	grep -q "^delog: invalid option -- 'Z'" "$TMP/err" ||
		fail "delog -Z: not signed 'delog:': $(head -1 "$TMP/err")"
	expect_rc 2 "delog --no-such-option" "$DELOG" --no-such-option
	grep -q "^delog: unrecognized option '--no-such-option'" "$TMP/err" ||
		fail "delog --no-such-option: not signed 'delog:': $(head -1 "$TMP/err")"
	for w in "--peers" "--workload peers" "--compare-flush" "--workload recovery" \
		 "--workload commit" "--workload stream" "--workload dbench" "--workload fsmark"; do
		# shellcheck disable=SC2086 # $w is an option and its value
		"$DELOG" bench $w -Z >"$TMP/out" 2>"$TMP/err"
		rc=$?
		if grep -q "which was not built\|which is not beside" "$TMP/err"; then
			continue # delog-bench-peers is not here: tools.bench_peers checks that
		fi
		[ "$rc" -eq 2 ] || fail "bench $w -Z: exit $rc, expected 2"
		grep -q "^delog bench: invalid option -- 'Z'" "$TMP/err" ||
			fail "bench $w -Z: not signed 'delog bench:': $(head -1 "$TMP/err")"
	done
	expect_rc 0 "help format" "$DELOG" help format
	# -n is --dry-run and nothing else.
	for cmd in format print recover probe stress; do
		expect_rc 0 "$cmd --help" "$DELOG" $cmd --help
		if grep -q '^ *-n, ' "$TMP/out"; then
			grep -q '^ *-n, --dry-run' "$TMP/out" || fail "$cmd --help: -n is not --dry-run: $(grep '^ *-n, ' "$TMP/out")"
		fi
		case $cmd in
		format | stress | probe)
			expect_in "$TMP/out" "-s, --size N" "$cmd --help: -s is --size" ;;
		esac
		case $cmd in
		format | print | recover | stress)
			expect_in "$TMP/out" "default: best available" "$cmd --help: --backend's default" ;;
		esac
		not_in "$TMP/out" "--create-size" "$cmd --help"
		not_in "$TMP/out" "--log-size" "$cmd --help"
	done
	# --backend: one check, a usage error, in every command on a real device.
	for cmd in "format --size 4M" print recover "stress --count 1"; do
		# shellcheck disable=SC2086
		expect_rc 2 "$cmd --backend foo" timeout 20 "$DELOG" $cmd --backend foo "$TMP/x"
		cmd=${cmd%% *}
		expect_in "$TMP/err" "delog $cmd: --backend: 'foo' is not a built-in device backend" "$cmd --backend foo"
	done
	expect_rc 2 "print -n" "$DELOG" print -n "$TMP/x"
	expect_rc 2 "probe -n 200" timeout 60 "$DELOG" probe -n 200 --size 8M --passes 1 --no-fio "$TMP/x"
	expect_rc 2 "stress --create-size" timeout 20 "$DELOG" stress --create-size 8M --count 1 "$TMP/x"
	[ -e "$TMP/x" ] && fail "a usage error created $TMP/x"
	expect_rc 0 "stress -s 8M" timeout 60 "$DELOG" stress -s 8M --count 3 --threads 1 "$TMP/s"
	[ "$(stat -c %s "$TMP/s")" -eq $((8 * 1048576 + 4096)) ] || fail "stress -s 8M: size $(stat -c %s "$TMP/s")"
	expect_rc 0 "print --no-ops" "$DELOG" print --no-ops "$TMP/s"
	not_in "$TMP/out" "  op " "print --no-ops"
	;;
sizes)
	for s in 0 1; do
		expect_rc 2 "format --size $s" "$DELOG" format --size $s "$TMP/f"
		expect_in "$TMP/err" "delog format: --size: '$s' is $s B, below the smallest log (4 MiB)" "format --size $s"
		not_in "$TMP/err" "bytes:" "format --size $s"
		expect_rc 2 "stress --size $s" "$DELOG" stress --size $s "$TMP/f"
		expect_in "$TMP/err" "delog stress: --size: '$s' is $s B, below the smallest log (4 MiB)" "stress --size $s"
	done
	expect_rc 2 "format --size 2M" "$DELOG" format --size 2M "$TMP/f"
	expect_in "$TMP/err" "'2M' is 2 MiB, below the smallest log (4 MiB)" "format --size 2M"
	expect_rc 2 "format --size 5000000" "$DELOG" format --size 5000000 "$TMP/f"
	expect_in "$TMP/err" "'5000000' is 5000000 B, not a multiple of 4 KiB: give 4880 KiB or 4884 KiB" \
		"format --size 5000000"
	# Off the sector by 1 KiB: the exact size and the two nearest, never "4.0 MiB"; and a
	# size that is refused is not rounded instead (probe: whole 1 MiB requests).
	for cmd in format stress; do
		expect_rc 2 "$cmd --size 4097K" "$DELOG" $cmd --size 4097K "$TMP/f"
		expect_in "$TMP/err" "delog $cmd: --size: '4097K' is 4097 KiB, not a multiple of 4 KiB: give 4 MiB or 4100 KiB" \
			"$cmd --size 4097K"
		not_in "$TMP/err" "4.0 MiB" "$cmd --size 4097K"
		expect_rc 2 "$cmd --size 4095K" "$DELOG" $cmd --size 4095K "$TMP/f"
		expect_in "$TMP/err" "'4095K' is 4095 KiB, below the smallest log (4 MiB)" "$cmd --size 4095K"
	done
	expect_rc 2 "probe --size 16385K" "$DELOG" probe --size 16385K "$TMP/f"
	expect_in "$TMP/err" "'16385K' is 16385 KiB, not a multiple of 1 MiB: give 16 MiB or 17 MiB" \
		"probe --size 16385K"
	expect_rc 2 "probe --bw-bytes 8193K" "$DELOG" probe --bw-bytes 8193K "$TMP/f"
	expect_in "$TMP/err" "not a multiple of 1 MiB: give 8 MiB or 9 MiB" "probe --bw-bytes 8193K"
	expect_rc 2 "bench recovery --size 16385K" "$DELOG" bench --workload recovery --size 16385K "$TMP/f"
	expect_in "$TMP/err" "--size: 16385 KiB is not a multiple of the 4096-byte sector (--sector): give 16 MiB or 16388 KiB" \
		"bench recovery --size 16385K"
	expect_rc 2 "format --sector 512 --size 4194816" "$DELOG" format --size 4194817 --sector 512 "$TMP/f"
	expect_in "$TMP/err" "not a multiple of 512 B" "format --size 4194817 --sector 512"
	expect_rc 2 "stress --size 5000000" "$DELOG" stress --size 5000000 "$TMP/f"
	expect_in "$TMP/err" "not a multiple of 4 KiB" "stress --size 5000000"
	not_in "$TMP/err" "misaligned" "stress --size 5000000"
	expect_rc 2 "format --window 100K" "$DELOG" format --size 8M --window 100K "$TMP/f"
	expect_in "$TMP/err" "'100K' is 100 KiB, below the least window (512 KiB)" "format --window 100K"
	expect_rc 1 "format --window 5M --size 8M" "$DELOG" format --size 8M --window 5M "$TMP/f"
	expect_in "$TMP/err" "--window 5242880: more than half the 8388608-byte log" "format --window 5M"
	[ -e "$TMP/f" ] && fail "a refused --window left $TMP/f"
	expect_rc 0 "format --window 3M --size 8M --json" "$DELOG" format --size 8M --window 3M --json "$TMP/f"
	expect_in "$TMP/out" '"window_bytes": 3145728' "format --window 3M --json"
	expect_rc 0 "print of a log with --window 3M" "$DELOG" print "$TMP/f"
	expect_in "$TMP/out" "unflushed window 3 MiB (named in the superblock)" "print --window 3M"
	rm -f "$TMP/f"
	expect_rc 2 "format --size 1x" "$DELOG" format --size 1x "$TMP/f"
	expect_in "$TMP/err" "'1x' is not a size" "format --size 1x"
	expect_rc 2 "probe --size 1" "$DELOG" probe --size 1 "$TMP/f"
	expect_in "$TMP/err" "'1' is 1 B, below the minimum of 8 MiB" "probe --size 1"
	expect_rc 2 "recover --read-chunk 1K" "$DELOG" recover --read-chunk 1K "$TMP/f"
	expect_in "$TMP/err" "'1K' is 1 KiB, below the minimum of 1 MiB" "recover --read-chunk 1K"
	[ -e "$TMP/f" ] && fail "a usage error created $TMP/f"
	;;
stress)
	expect_rc 0 "stress --help" "$DELOG" stress --help
	not_in "$TMP/out" "must include every printed" "stress --help"
	expect_in "$TMP/out" "released thread T through id C" "stress --help names the release line"
	expect_in "$TMP/out" "may be missing" "stress --help: released ids may be missing"
	expect_in "$TMP/out" "consecutive" "stress --help: per-thread runs"
	P=$SRC/docs/man/delog-stress.1
	not_in "$P" "must list every printed id" "delog-stress.1"
	expect_in "$P" "may be missing" "delog-stress.1: released ids may be missing"
	ln -s nowhere "$TMP/dangling"
	expect_rc 1 "stress on a dangling link" timeout 20 "$DELOG" stress --count 1 "$TMP/dangling"
	expect_in "$TMP/err" "$TMP/dangling: is a dangling symbolic link" "stress on a dangling link"
	not_in "$TMP/err" "File exists" "stress on a dangling link"
	[ -L "$TMP/dangling" ] && [ ! -e "$TMP/nowhere" ] || fail "stress changed the dangling link"
	: >"$TMP/empty"
	head -c 2097152 /dev/zero >"$TMP/small"
	head -c 100000 /dev/zero >"$TMP/notlog"
	for f in empty small notlog; do
		touch -d "2020-01-02 03:04:05" "$TMP/$f"
	done
	kept="$(state "$TMP/empty") $(state "$TMP/small") $(state "$TMP/notlog")"
	for fl in "" "--format"; do
		# shellcheck disable=SC2086 # $fl is an option or nothing
		expect_rc 1 "stress $fl on an empty file" timeout 20 "$DELOG" stress $fl --count 1 "$TMP/empty"
		expect_in "$TMP/err" "$TMP/empty: the file is empty, so it holds no log" "stress $fl on an empty file"
		expect_in "$TMP/err" "delog format $TMP/empty --size N" "stress $fl on an empty file: what to do"
		not_in "$TMP/err" "DELOG_ETRUNCATED" "stress $fl on an empty file"
	done
	expect_rc 1 "stress --format on a 2 MiB file" timeout 20 "$DELOG" stress --format --count 1 "$TMP/small"
	expect_in "$TMP/err" "smaller than the 32 MiB log --format makes" "stress --format on a 2 MiB file"
	expect_in "$TMP/err" "--size 32768K --force" "stress --format on a 2 MiB file: what to do"
	not_in "$TMP/err" "misaligned" "stress --format on a 2 MiB file"
	expect_rc 1 "stress on a file that is no log" timeout 20 "$DELOG" stress --count 1 "$TMP/notlog"
	expect_in "$TMP/err" "DELOG_ENOTLOG" "stress on a file that is no log"
	expect_in "$TMP/err" "--format makes a log in it" "stress on a file that is no log: what to do"
	[ "$(state "$TMP/empty") $(state "$TMP/small") $(state "$TMP/notlog")" = "$kept" ] ||
		fail "a refused stress changed a file"
	;;
readme)
	R=$SRC/README.md
	sed -n '/^## The `delog` command/,/^## /p' "$R" | sed -n '/^```$/,/^```$/p' >"$TMP/syn"
	[ -s "$TMP/syn" ] || fail "no synopsis in README.md"
	expect_rc 0 "delog --help" "$DELOG" --help
	sed -n '/^commands:/,/^$/p' "$TMP/out" | awk 'NR > 1 && NF { print $1 }' >"$TMP/cmds"
	[ -s "$TMP/cmds" ] || fail "no commands in delog --help"
	while read -r c; do
		grep -q "^delog $c\b" "$TMP/syn" || fail "README synopsis: no 'delog $c' line"
	done <"$TMP/cmds"
	grep -q '^delog help' "$TMP/syn" || fail "README synopsis: no 'delog help' line"
	expect_rc 0 "bench --help" "$DELOG" bench --help
	sed -n '/^workloads:/,/^$/p' "$TMP/out" | awk 'NR > 1 && NF { print $1 }' >"$TMP/wl"
	[ "$(wc -l <"$TMP/wl")" -ge 7 ] || fail "bench --help lists $(wc -l <"$TMP/wl") workloads"
	while read -r w; do
		grep '^delog bench' "$TMP/syn" | grep -q -- "[ |]$w[ |]" ||
			fail "README synopsis: bench workload '$w' missing"
	done <"$TMP/wl"
	for c in format print recover probe stress; do
		"$DELOG" $c --help >"$TMP/h"
		# The options of the option list (not the ones the prose mentions).
		grep -oE -- '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' "$TMP/h" | grep -oE -- '--[a-z-]+' |
			sort -u | grep -v -- '--help' >"$TMP/opts"
		[ -s "$TMP/opts" ] || fail "no options found in $c --help"
		while read -r o; do
			grep "^delog $c " "$TMP/syn" | grep -q -- "$o\b" ||
				fail "README synopsis of $c lacks $o"
		done <"$TMP/opts"
	done
	grep '^delog recover' "$TMP/syn" | grep -q -- '--ids' || fail "README synopsis: recover --ids"
	;;
progress)
	if command -v script >/dev/null 2>&1; then
		script -qec "'$DELOG' format --size 64M '$TMP/tty.log'" /dev/null >"$TMP/tty" 2>&1 ||
			fail "format under script(1) failed: $(cat "$TMP/tty")"
		expect_in "$TMP/tty" "zeroing the log" "format on a terminal shows progress"
		expect_in "$TMP/tty" "(100%)" "format on a terminal reaches 100%"
	else
		echo "script(1) not installed: the terminal half is not checked" >&2
	fi
	expect_rc 0 "format to a pipe" "$DELOG" format --size 64M "$TMP/pipe.log"
	[ -s "$TMP/err" ] && fail "format wrote to a non-terminal stderr: $(cat "$TMP/err")"
	not_in "$TMP/out" "zeroing" "format's stdout"
	# recover writes nothing to a log that needs nothing.
	L=$TMP/pipe.log
	touch -d "2020-01-02 03:04:05" "$L"
	before=$(state "$L")
	for i in 1 2; do
		expect_rc 0 "recover $i of an empty log" "$DELOG" recover "$L"
		expect_in "$TMP/out" "stamped past the head: 0 bytes" "recover $i of an empty log"
	done
	[ "$(state "$L")" = "$before" ] || fail "recover of an empty log changed it"
	"$MKLOG" clean "$TMP/clean.log" >/dev/null || fail "mklog clean"
	"$MKLOG" good "$TMP/crashed.log" >/dev/null || fail "mklog good"
	expect_rc 0 "first recover of a crashed log" "$DELOG" recover "$TMP/crashed.log"
	for L in "$TMP/clean.log" "$TMP/crashed.log"; do
		touch -d "2020-01-02 03:04:05" "$L"
		before=$(state "$L")
		expect_rc 0 "recover of $(basename "$L")" "$DELOG" recover "$L"
		expect_in "$TMP/out" "stamped past the head: 0 bytes" "recover of $(basename "$L")"
		[ "$(state "$L")" = "$before" ] || fail "recover of $(basename "$L") changed it"
	done
	;;
superblock)
	# case offset field-text
	while read -r c off text; do
		"$MKLOG" "$c" "$TMP/$c.log" >/dev/null || { fail "mklog $c"; continue; }
		for cmd in print "recover --dry-run" recover; do
			# shellcheck disable=SC2086
			expect_rc 1 "$cmd of '$c'" "$DELOG" $cmd "$TMP/$c.log"
			expect_in "$TMP/err" "at offset $off: $text" "$cmd of '$c'"
			not_in "$TMP/err" "torn-write window" "$cmd of '$c'"
		done
		# shellcheck disable=SC2086
		expect_rc 1 "print --json of '$c'" "$DELOG" print --json "$TMP/$c.log"
		expect_in "$TMP/out" "\"offset\": $off," "print --json of '$c'"
		not_in "$TMP/out" "torn-write window" "print --json of '$c'"
	done <<'EOF'
version0 8 format version 0
version 8 format version 2
incompat 12 incompatible feature bits
geometry 20 sector_size 1024: must be 512 or 4096
logstart 24 log_start 8192: must be 4096
logsize 32 log_size 4194404: not a multiple of the 4096-byte sector
smalllog 32 log_size 1048576: below the smallest log
magic 0 magic
sbcrc 508 crc
EOF
	;;
layers)
	# included FILE: the headers FILE includes with quotes, one per line.
	included() {
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
	}
	for f in "$SRC"/tools/bench/*.[ch] "$SRC"/tools/crash/*.[ch] "$SRC"/tools/common/*.[ch]; do
		dir=$(dirname "$f")
		for h in $(included "$f"); do
			case $h in
			cli/*) fail "${f#"$SRC"/} includes $h: a header of tools/cli, above it" ;;
			bench/* | crash/*)
				case $f in
				*/tools/common/*) fail "${f#"$SRC"/} includes $h: common/ uses no wing" ;;
				esac ;;
			*/*) ;;
			*)
				# A bare name: its own directory's, or a layer's; not one only cli/ has.
				if [ ! -e "$dir/$h" ] && [ -e "$SRC/tools/cli/$h" ]; then
					fail "${f#"$SRC"/} includes \"$h\", a header of tools/cli"
				fi ;;
			esac
		done
	done
	;;
device)
	[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
	command -v losetup >/dev/null 2>&1 || skip "losetup is not installed"
	head -c 2097152 /dev/urandom >"$TMP/small.img"
	L=$(losetup --find --show "$TMP/small.img" 2>"$TMP/err") || skip "losetup failed: $(cat "$TMP/err")"
	LOOPS=$L
	before=$(cksum <"$L")
	for f in "" "--force"; do
		# shellcheck disable=SC2086 # $f is an option or nothing
		{
			expect_rc 1 "bench commit $f on a 2 MiB device" "$DELOG" bench --workload commit $f \
				--size 16M --time 0.05 --clients 1 "$L"
			expect_in "$TMP/err" "$L: holds 2 MiB; the bench needs" "bench commit $f on a 2 MiB device"
			not_in "$TMP/err" "--force" "bench commit $f on a 2 MiB device"
			expect_rc 1 "bench recovery $f on a 2 MiB device" "$DELOG" bench --workload recovery $f \
				--size 16M --json "$L"
			expect_in "$TMP/err" "$L: holds 2 MiB; the bench needs 16388 KiB (see --size)" \
				"bench recovery $f on a 2 MiB device"
			expect_in "$TMP/out" '"kind": "blockdev"' "bench recovery --json $f on a 2 MiB device"
			expect_rc 1 "probe $f on a 2 MiB device" "$DELOG" probe $f --no-fio "$L"
			expect_in "$TMP/err" "$L: holds 2 MiB, less than the 8 MiB a probe needs" "probe $f on a 2 MiB device"
			not_in "$TMP/err" "--force" "probe $f on a 2 MiB device"
			expect_rc 1 "format $f on a 2 MiB device" "$DELOG" format $f "$L"
			expect_in "$TMP/err" "too small for a minimal log" "format $f on a 2 MiB device"
			not_in "$TMP/err" "--force" "format $f on a 2 MiB device"
		}
	done
	[ "$(cksum <"$L")" = "$before" ] || fail "a refused command changed the 2 MiB device"
	truncate -s 96M "$TMP/big.img"
	L=$(losetup --find --show "$TMP/big.img" 2>"$TMP/err") || skip "losetup failed: $(cat "$TMP/err")"
	LOOPS="$LOOPS $L"
	expect_rc 1 "bench on a device large enough" "$DELOG" bench --workload recovery --size 16M "$L"
	expect_in "$TMP/err" "$L: is a block device; the bench overwrites its first 16388 KiB (add --force" \
		"bench on a device large enough"
	;;
json)
	command -v python3 >/dev/null 2>&1 || skip "python3 is needed to read the JSON"
	# refused_json WHAT TEXT CMD...: exit 1, stderr has TEXT, stdout is one document with
	# superblock null and error.what holding TEXT too.
	refused_json() {
		what=$1
		text=$2
		shift 2
		expect_rc 1 "$what" timeout 20 "$@"
		expect_in "$TMP/err" "$text" "$what: stderr"
		python3 - "$TMP/out" "$text" <<'PY' 2>"$TMP/py.err" || fail "$what: $(tail -1 "$TMP/py.err")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["superblock"] is None, "superblock is not null"
assert d["created"] is False, "created is not false"
e = d["error"]
assert isinstance(e, dict), "no error object: %r" % (e,)
assert isinstance(e["code"], int) and e["code"] < 0, "code %r" % (e["code"],)
assert e["name"] and e["message"], "name or message empty"
assert sys.argv[2] in e["what"], "error.what %r lacks %r" % (e["what"], sys.argv[2])
PY
	}
	mkdir "$TMP/dir"
	ln -s nowhere "$TMP/dangling"
	mkfifo "$TMP/fifo"
	head -c 2097152 /dev/zero >"$TMP/small"
	head -c 8392704 /dev/zero >"$TMP/data"
	printf 'hello' | dd of="$TMP/data" bs=1 seek=100 conv=notrunc 2>/dev/null
	ln -s data "$TMP/link"
	"$DELOG" format --size 4M "$TMP/log" >/dev/null || fail "format of the log to refuse"
	for f in small data log; do
		touch -d "2020-01-02 03:04:05" "$TMP/$f"
	done
	kept="$(state "$TMP/small") $(state "$TMP/data") $(state "$TMP/log")"
	for sz in "" "--size 4M"; do
		# shellcheck disable=SC2086 # $sz is an option and its value, or nothing
		{
			refused_json "format --json $sz DIR" "not a regular file or block device (a directory)" \
				"$DELOG" format --json $sz "$TMP/dir"
			refused_json "format --json $sz /dev/null" "not a regular file or block device (a character device)" \
				"$DELOG" format --json $sz /dev/null
			refused_json "format --json $sz FIFO" "not a regular file or block device (a FIFO)" \
				"$DELOG" format --json $sz "$TMP/fifo"
			refused_json "format --json $sz dangling link" "dangling symbolic link" \
				"$DELOG" format --json $sz "$TMP/dangling"
			refused_json "format --json $sz link to a file" "symbolic link not to a block device" \
				"$DELOG" format --json $sz "$TMP/link"
			refused_json "format --json $sz log" "it holds a delog log" \
				"$DELOG" format --json $sz "$TMP/log"
			refused_json "format --json $sz data" "holds data (non-zero byte at offset 100)" \
				"$DELOG" format --json $sz "$TMP/data"
		}
	done
	refused_json "format --json small" "too small for the smallest log" \
		"$DELOG" format --json "$TMP/small"
	refused_json "format --json --size 4M small" "use --force to grow it" \
		"$DELOG" format --json --size 4M "$TMP/small"
	refused_json "format --json in a missing directory" "o such file or directory" \
		"$DELOG" format --json --size 4M "$TMP/nodir/f"
	[ -L "$TMP/dangling" ] && [ ! -e "$TMP/nowhere" ] || fail "the dangling link was changed"
	[ -d "$TMP/dir" ] && [ -z "$(ls -A "$TMP/dir")" ] || fail "the directory was changed"
	[ -p "$TMP/fifo" ] || fail "the FIFO was changed"
	[ "$(state "$TMP/small") $(state "$TMP/data") $(state "$TMP/log")" = "$kept" ] ||
		fail "a refused format changed a file"
	if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
		SHM=/dev/shm/delog_cli_user_test.$$
		refused_json "format --json on tmpfs" "(tmpfs) keeps data only in memory" \
			"$DELOG" format --json --size 4M "$SHM"
		[ -e "$SHM" ] && fail "format --json on tmpfs left $SHM behind"
		: >"$SHM"
		touch -d "2020-01-02 03:04:05" "$SHM"
		before=$(state "$SHM")
		refused_json "format --json on an empty tmpfs file" "(tmpfs) keeps data only in memory" \
			"$DELOG" format --json --size 4M "$SHM"
		[ "$(state "$SHM")" = "$before" ] || fail "format --json changed the tmpfs file"
	fi
	# probe and crash answer their refusals in JSON too (bench's shape: error.message).
	# error_json WHAT TEXT CMD...: exit 1, TEXT on stderr and in error.message.
	error_json() {
		what=$1
		text=$2
		shift 2
		expect_rc 1 "$what" timeout 20 "$@"
		expect_in "$TMP/err" "$text" "$what: stderr"
		python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; sys.exit(0 if e["code"] < 0 and e["name"] and sys.argv[2] in e["message"] else 1)' \
			"$TMP/out" "$text" 2>"$TMP/py.err" ||
			fail "$what: no JSON error naming '$text' ($(tail -1 "$TMP/py.err"))"
	}
	error_json "probe --json DIR" "not a regular file or block device (a directory)" \
		"$DELOG" probe --json "$TMP/dir"
	error_json "probe --json data" "exists and holds" "$DELOG" probe --json "$TMP/data"
	error_json "crash --json --save" "--save: $TMP/nodir/s" \
		"$DELOG" crash --json --save "$TMP/nodir/s" --states 5 --workload small
	[ "$(state "$TMP/small") $(state "$TMP/data") $(state "$TMP/log")" = "$kept" ] ||
		fail "a refused probe changed a file"
	# Usage errors are the exception: exit 2, nothing on stdout, the message on stderr.
	for cmd in "format --size 1" "format" "print --backend foo" "recover --ids" "probe --size 1" \
		   "bench --workload recovery --size 1" "bench --workload nosuch" "crash --states 0" \
		   "format --bogus" "bench --compare-flush --bogus"; do
		# shellcheck disable=SC2086 # $cmd is the command and its options
		expect_rc 2 "$cmd --json (usage)" timeout 20 "$DELOG" $cmd --json "$TMP/missing"
		[ -s "$TMP/out" ] && fail "$cmd --json (usage): stdout is not empty: $(head -3 "$TMP/out")"
		grep -q "^delog ${cmd%% *}: " "$TMP/err" || fail "$cmd --json (usage): no 'delog ${cmd%% *}:' message"
	done
	[ -e "$TMP/missing" ] && fail "a usage error created $TMP/missing"
	;;
*)
	echo "unknown mode $MODE" >&2
	exit 2
	;;
esac

finish "cli_user_test $MODE"
