#!/bin/sh
# logtool_test.sh - end-to-end tests of `delog format`, `delog print` and `delog recover`,
# run by ctest (tests/tools/CMakeLists.txt).
#
#   logtool_test.sh MODE DELOG MKLOG TESTDIR
#
# MODE is one of:
#   format         new file (mode 0600, --mode), refusal to overwrite a log or data
#                  without --force, symlinks refused, usage errors, --json; a format of a
#                  new file killed at rising delays leaves no PATH or a log, and its
#                  temporary goes with the next format
#   print_recover  a log written by the real writer (mklog good/clean): print shows every
#                  record, op and checkpoint, --json agrees with the report, print writes
#                  nothing, recover is idempotent, an unmounted log reports clean
#   badinput       the bad-input catalogue (tests/tools/mklog.c): each damaged log gives
#                  its own error code, the offset of the damage, exit 1, for print,
#                  recover --dry-run and recover, and a refused log is left unchanged;
#                  a torn write at the head is dropped (exit 0, torn bytes reported)
#   salvage        recover --salvage NEWLOG (issue 29 item 4) on the crafted damaged logs:
#                  a flipped record byte, a lost commit, a moved tail with a flipped
#                  byte keep exactly the checkpoints before the damage (same sequence
#                  numbers and item CRCs as the intact log), report the damage's code,
#                  offset and field and what was dropped, write a new log that recovers
#                  strictly and clean, and leave the damaged file byte-identical; a bad
#                  superblock field is refused naming it, nothing written; --to N (point
#                  in time) with and without --salvage; --dry-run; NEWLOG refusals
#                  (exists without --force, PATH itself, a symlink) and usage errors
#   loop           format, print and recover on a loop device (root, losetup)
#   sector         sectors against the physical block (root, losetup): 512-byte sectors
#                  formatted and recovered on a loop device of 512-byte blocks, refused
#                  (format, --force, --json, device unchanged) on one of 4096-byte
#                  blocks where 4096 is taken; where the test directory's file system
#                  has 512-byte logical blocks on a larger physical block (a 512e disk),
#                  also format, delog_open CREATE (mklog create512) and every writing
#                  open of a 512-byte-sector log (and salvage's new log from it)
#                  refused naming both sizes, and its read-only open, print and recover
#                  --dry-run allowed, the log unchanged
#   readonly       recover on a read-only bind mount (root, unshare): a clean log and a
#                  crashed one with nothing past the head recover without writing (exit
#                  0, a note), a torn head that needs stamping exits 1 naming the
#                  read-only file system and --dry-run, --dry-run and a corrupt log
#                  behave as anywhere, no file changes, and what the read-only run said
#                  it must stamp is what a writing run then stamps
#   writer         beside a live writer (`delog stress` committing, forcing and releasing
#                  on a 16 MiB log, so it wraps): recover, recover --json, format --force
#                  and a second stress are refused (exit 1) naming the writer's pid and
#                  the log is left as it was; recover --dry-run and print work every time
#                  (20 runs each: a reader of a live log is never told it is corrupt);
#                  once the writer is killed, recover takes the log at once
# Exit 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE), with the reason on stderr.
set -u

MODE=${1:?mode}
DELOG=${2:?path to delog}
MKLOG=${3:?path to mklog}
DIR=${4:?test directory}
TMP=$(mktemp -d "${DIR}/logtool_test.XXXXXX") || exit 1
LOOPDEV=
trap 'test -n "$LOOPDEV" && losetup -d "$LOOPDEV"; rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# jcheck FILE DESCRIPTION PYTHON-EXPR : FILE parses as JSON and EXPR (over `d`) is true.
jcheck() {
	python3 - "$1" "$3" <<'EOF' || fail "$2: JSON check '$3' failed"
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    sys.exit("false: %s\n%s" % (sys.argv[2], json.dumps(d)[:2000]))
EOF
}

need_python() {
	command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (needed to parse --json)"
}

sum() {
	cksum "$1" | cut -d' ' -f1,2
}

# ro_run CMD... : run CMD where $TMP/mnt is a read-only bind mount of $TMP/src, in a
# mount namespace of its own (nothing to undo afterwards); exit 99 if it cannot be made.
ro_run() {
	unshare -m sh -c 'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" || exit 99
		shift 2
		exec "$@"' sh "$TMP/src" "$TMP/mnt" "$@"
}

# blocks PATH : "LOGICAL PHYSICAL", the block sizes of the block device PATH or of the
# one holding the file system of PATH, from sysfs; nothing if there is none.
blocks() {
	if [ -b "$1" ]; then
		d=$(stat -L -c '%Hr:%Lr' "$1")
	else
		d=$(stat -c '%Hd:%Ld' "$1")
	fi
	for q in "/sys/dev/block/$d/queue" "/sys/dev/block/$d/../queue"; do
		if [ -r "$q/physical_block_size" ]; then
			echo "$(cat "$q/logical_block_size") $(cat "$q/physical_block_size")"
			return
		fi
	done
}

# mk CASE FILE : build a test log; sets VICTIM to the damaged record's byte offset.
mk() {
	"$MKLOG" "$1" "$2" >"$TMP/mk.out" 2>"$TMP/mk.err" || {
		fail "mklog $1: $(cat "$TMP/mk.err")"
		VICTIM=0
		return 1
	}
	VICTIM=$(sed -n 's/.*victim_offset=\([0-9]*\).*/\1/p' "$TMP/mk.out")
}

case "$MODE" in
format)
	need_python
	L=$TMP/a.log
	expect_rc 0 "format a new file" "$DELOG" format "$L" --size 8M --sector 4096
	expect_in "$TMP/out" "8 MiB" "format names the size"
	[ "$(stat -c %a "$L")" = 600 ] || fail "new log has mode $(stat -c %a "$L"), expected 600"
	[ "$(stat -c %s "$L")" = $((8 * 1024 * 1024 + 4096)) ] || fail "file is $(stat -c %s "$L") bytes"
	expect_rc 1 "format over an existing log" "$DELOG" format "$L" --size 8M
	expect_in "$TMP/err" "holds a delog log" "refusal says what is there"
	expect_in "$TMP/err" "--force" "refusal names --force"
	expect_rc 0 "format --force --json" "$DELOG" format "$L" --force --json
	jcheck "$TMP/out" "format --json" 'd["superblock"]["log_size"] == 8 << 20 and d["superblock"]["sector"] == 4096 and d["created"] is False'
	expect_rc 0 "print of a fresh log" "$DELOG" print "$L"
	expect_in "$TMP/out" "state: empty" "fresh log is empty"
	(umask 022 && "$DELOG" format "$TMP/b.log" --size 8M --mode 0644 >/dev/null) ||
		fail "format --mode 0644"
	[ "$(stat -c %a "$TMP/b.log")" = 644 ] || fail "--mode 0644 gave $(stat -c %a "$TMP/b.log")"
	ln -s "$L" "$TMP/link"
	expect_rc 1 "format through a symlink to a file" "$DELOG" format "$TMP/link" --size 8M --force
	expect_in "$TMP/err" "symbolic link" "symlink refusal"
	head -c 9437184 /dev/urandom >"$TMP/data"
	expect_rc 1 "format over a file holding data" "$DELOG" format "$TMP/data" --size 8M
	expect_in "$TMP/err" "holds data" "data refusal"
	: >"$TMP/empty"
	expect_rc 0 "format an existing empty file" "$DELOG" format "$TMP/empty" --size 8M
	expect_rc 2 "a new file without --size" "$DELOG" format "$TMP/c.log"
	[ -e "$TMP/c.log" ] && fail "a refused format left a file"
	expect_rc 2 "--sector 1024" "$DELOG" format "$TMP/c.log" --size 8M --sector 1024
	expect_rc 2 "--size below the minimum" "$DELOG" format "$TMP/c.log" --size 1M
	expect_rc 2 "--size not a size" "$DELOG" format "$TMP/c.log" --size lots
	expect_rc 2 "--mode not octal" "$DELOG" format "$TMP/c.log" --size 8M --mode 9
	expect_rc 1 "a path in a missing directory" "$DELOG" format "$TMP/no/such.log" --size 8M
	expect_rc 0 "format --help" "$DELOG" format --help
	expect_in "$TMP/out" "--force" "format --help lists --force"
	# A format of a new file killed at rising delays: whenever the kill lands, PATH is
	# absent (and a format without --force makes it) or a log that print reads.
	for d in 0 0.005 0.01 0.02 0.04 0.08; do
		K="$TMP/killed.log"
		"$DELOG" format "$K" --size 64M >/dev/null 2>&1 &
		kpid=$!
		sleep $d
		kill -KILL $kpid 2>/dev/null
		wait $kpid 2>/dev/null
		if [ -e "$K" ]; then
			expect_rc 0 "print of a format killed after ${d}s" "$DELOG" print "$K"
		else
			expect_rc 0 "format after a format killed after ${d}s" "$DELOG" format "$K" --size 8M
		fi
		rm -f "$K"
	done
	expect_rc 0 "format after the killed ones" "$DELOG" format "$TMP/killed.log" --size 8M
	ls -a "$TMP" | grep -q '^\.killed\.log\.delog-new\.' &&
		fail "a killed format's temporary outlived the next format"
	;;
print_recover)
	need_python
	L=$TMP/good.log
	mk good "$L" || exit 1
	before=$(sum "$L")
	expect_rc 0 "print" "$DELOG" print "$L"
	expect_in "$TMP/out" "checkpoint 40 complete" "print shows the last checkpoint"
	expect_in "$TMP/out" "WAS_CONT" "print shows continued ops"
	expect_in "$TMP/out" "COMMIT" "print shows commit ops"
	expect_in "$TMP/out" "not cleanly unmounted" "a crashed log is not clean"
	expect_rc 0 "print --json" "$DELOG" print --json "$L"
	jcheck "$TMP/out" "print --json" 'len(d["checkpoints"]) == 40 and d["report"]["checkpoints"] == 40 and len(d["records"]) == d["report"]["records"] and all(len(r["ops"]) == r["num_ops"] for r in d["records"]) and d["error"] is None'
	jcheck "$TMP/out" "print --json checkpoint order" '[c["seq"] for c in d["checkpoints"]] == list(range(1, 41))'
	expect_rc 0 "print --no-ops --json" "$DELOG" print --no-ops --json "$L"
	jcheck "$TMP/out" "print --no-ops" 'all(r["ops"] == [] for r in d["records"])'
	[ "$(sum "$L")" = "$before" ] || fail "print changed the log"
	expect_rc 0 "recover --dry-run --json" "$DELOG" recover --dry-run --json "$L"
	jcheck "$TMP/out" "recover --dry-run" 'd["report"]["checkpoints"] == 40 and d["report"]["stamped_bytes"] == 0 and not d["report"]["clean"] and d["dry_run"]'
	[ "$(sum "$L")" = "$before" ] || fail "recover --dry-run changed the log"
	expect_rc 0 "recover --json" "$DELOG" recover --json --reads-in-flight 4 --read-chunk 1M "$L"
	cp "$TMP/out" "$TMP/first.json"
	jcheck "$TMP/out" "recover" 'd["report"]["checkpoints"] == 40 and d["report"]["stamped_bytes"] == 0 and d["report"]["items"] == 120'
	expect_rc 0 "recover again" "$DELOG" recover --json "$L"
	python3 - "$TMP/first.json" "$TMP/out" <<'EOF' || fail "recovery is not idempotent"
import json, sys
a, b = (json.load(open(p))["report"] for p in sys.argv[1:3])
for k in ("head", "tail", "last", "records", "checkpoints", "items", "bytes_replayed", "dropped"):
    assert a[k] == b[k], (k, a[k], b[k])
EOF
	expect_rc 0 "recover (text)" "$DELOG" recover "$L"
	expect_in "$TMP/out" "checkpoints 40 replayed" "recover's report"
	mk clean "$TMP/clean.log" || exit 1
	expect_rc 0 "recover of an unmounted log" "$DELOG" recover --json "$TMP/clean.log"
	jcheck "$TMP/out" "unmounted log" 'd["report"]["clean"] and d["report"]["checkpoints"] == 40'
	expect_rc 2 "recover without PATH" "$DELOG" recover
	expect_rc 2 "recover --reads-in-flight 1" "$DELOG" recover --reads-in-flight 1 "$L"
	expect_rc 1 "print of a missing file" "$DELOG" print "$TMP/nope"
	expect_in "$TMP/err" "nope" "missing file named"
	;;
badinput)
	need_python
	# case  code  offset-check ("victim": the damaged record's offset, "sb:N", or "-")
	while read -r c code where; do
		L=$TMP/$c.log
		mk "$c" "$L" || continue
		case "$where" in
		victim) off=$VICTIM ;;
		sb:*) off=${where#sb:} ;;
		*) off= ;;
		esac
		before=$(sum "$L")
		for cmd in "print" "recover --dry-run" "recover"; do
			# shellcheck disable=SC2086
			expect_rc 1 "$cmd of '$c'" "$DELOG" $cmd "$L"
			expect_in "$TMP/err" "$code" "$cmd of '$c' names $code"
			expect_in "$TMP/err" "$L" "$cmd of '$c' names the path"
			expect_in "$TMP/err" "at offset ${off}" "$cmd of '$c' names the offset"
			# shellcheck disable=SC2086
			expect_rc 1 "$cmd --json of '$c'" "$DELOG" $cmd --json "$L"
			jcheck "$TMP/out" "$cmd --json of '$c'" "d['error']['name'] == 'DELOG_$code'${off:+ and d['error']['offset'] == $off}"
		done
		[ "$(sum "$L")" = "$before" ] || fail "a refused recovery changed '$c'"
	done <<'EOF'
zero ETRUNCATED sb:0
truncated ETRUNCATED -
random ENOTLOG sb:0
magic ENOTLOG sb:0
sbcrc ECHECKSUM sb:508
version EVERSION sb:8
incompat EFEATURE sb:12
geometry ECORRUPT sb:20
corrupt ECHECKSUM victim
foreign EFOREIGN victim
recversion EVERSION victim
oplen EBADOP -
orphan EORPHAN -
commitcont EBADOP -
lostcommit ECORRUPT -
sector EGEOMETRY -
EOF
	# Every case above gives a different (code, where) pair, and so a different message.
	# A damaged last record is a torn write: dropped, not an error.
	mk torn "$TMP/torn.log" || exit 1
	expect_rc 0 "print of a torn head" "$DELOG" print --json "$TMP/torn.log"
	jcheck "$TMP/out" "torn head (print)" 'd["error"] is None and d["report"]["torn_bytes"] > 0 and d["report"]["checkpoints"] < 40 and d["report"]["corruption"] is None'
	expect_rc 0 "recover of a torn head" "$DELOG" recover --json "$TMP/torn.log"
	cp "$TMP/out" "$TMP/torn1.json"
	expect_rc 0 "recover of a torn head, again" "$DELOG" recover --json "$TMP/torn.log"
	python3 - "$TMP/torn1.json" "$TMP/out" <<'EOF' || fail "torn head: second recovery differs"
import json, sys
a, b = (json.load(open(p))["report"] for p in sys.argv[1:3])
assert a["torn_bytes"] > 0 and b["torn_bytes"] == 0, (a["torn_bytes"], b["torn_bytes"])
for k in ("head", "tail", "checkpoints", "items"):
    assert a[k] == b[k], (k, a[k], b[k])
EOF
	;;
salvage)
	need_python
	mk good "$TMP/good.log" || exit 1
	"$DELOG" print --json "$TMP/good.log" >"$TMP/good.json" || fail "print of the good log"
	# commits GOOD.json VICTIM : "K X": K checkpoints commit in records before the record
	# at byte VICTIM, X the one whose COMMIT is in it (0 if none).
	commits() {
		python3 - "$1" "$2" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1])); v = int(sys.argv[2])
k = x = 0
for r in d["records"]:
    for op in r["ops"]:
        if op["type"] == "COMMIT":
            if r["offset"] < v: k += 1
            elif r["offset"] == v and not x: x = op["seq"]
print(k, x)
EOF2
	}
	# same_items NEW.json GOOD.json FIRST LAST [TOP] : checkpoints FIRST..LAST carry the
	# same COMMIT (nitems, payload_bytes, item crc) in both: the same items, byte for
	# byte; LAST+1..TOP (default LAST) are in NEW empty, carrying the numbering on.
	same_items() {
		python3 - "$@" <<'EOF2' || fail "salvaged items differ from the intact log's ($3..$4)"
import json, sys
def commits(p):
    d = json.load(open(p))
    return {op["seq"]: (op["nitems"], op["payload_bytes"], op["crc"])
            for r in d["records"] for op in r["ops"] if op["type"] == "COMMIT"}
a, b = commits(sys.argv[1]), commits(sys.argv[2])
lo, hi = int(sys.argv[3]), int(sys.argv[4])
top = int(sys.argv[5]) if len(sys.argv) > 5 else hi
assert sorted(a) == list(range(lo, top + 1)), sorted(a)
for s in range(lo, hi + 1):
    assert a[s] == b[s], (s, a[s], b[s])
for s in range(hi + 1, top + 1):
    assert a[s][:2] == (0, 0), (s, a[s])
EOF2
	}

	# A flipped byte in a middle record (behind the durable point: ECHECKSUM).
	L=$TMP/corrupt.log
	mk corrupt "$L" || exit 1
	lsum=$(sum "$L")
	set -- $(commits "$TMP/good.json" "$VICTIM")
	K=$1
	[ "$K" -gt 0 ] && [ "$K" -lt 40 ] || fail "corrupt: $K checkpoints before the victim"
	expect_rc 0 "salvage of 'corrupt'" "$DELOG" recover --salvage "$TMP/c.new" --json "$L"
	jcheck "$TMP/out" "salvage of 'corrupt'" "d['error'] is None and d['salvage']['damage']['name'] == 'DELOG_ECHECKSUM' and d['salvage']['damage']['offset'] == $VICTIM and d['salvage']['damage']['field'] == 'rec.crc' and d['salvage']['kept']['checkpoints'] == $K and d['salvage']['kept']['first_seq'] == 1 and d['salvage']['kept']['last_seq'] == $K and d['salvage']['dropped']['offset'] == $VICTIM and d['salvage']['dropped']['bytes'] > 0 and d['salvage']['dropped']['commits_after_damage'] > 0 and d['salvage']['dropped']['last_seq'] == 40 and d['salvage']['dropped']['from_seq'] == $K + 1 and d['salvage']['dropped']['to_seq'] == 40 and d['salvage']['numbering']['high_seq'] == 40 and d['salvage']['numbering']['next_seq'] == 41 and d['salvage']['new_log']['written'] and d['salvage']['new_log']['log_size'] == 4 << 20 and d['salvage']['new_log']['sector'] == 4096"
	[ "$(sum "$L")" = "$lsum" ] || fail "salvage changed the damaged log"
	expect_rc 0 "strict recovery of the salvaged log" "$DELOG" recover --json "$TMP/c.new"
	jcheck "$TMP/out" "salvaged log" "d['error'] is None and d['report']['clean'] and d['report']['checkpoints'] == 40 and d['report']['first_seq'] == 1 and d['report']['last_seq'] == 40"
	"$DELOG" print --json "$TMP/c.new" >"$TMP/c.json" || fail "print of the salvaged log"
	same_items "$TMP/c.json" "$TMP/good.json" 1 "$K" 40
	expect_rc 0 "salvage of 'corrupt' (text)" "$DELOG" recover --salvage "$TMP/c2.new" "$L"
	expect_in "$TMP/out" "kept: checkpoints 1..$K" "salvage text names what was kept"
	expect_in "$TMP/out" "DELOG_ECHECKSUM at byte $VICTIM" "salvage text names the damage"
	expect_in "$TMP/out" "only read" "salvage text says PATH was only read"
	# The default stays strict: the damaged log is still refused, and unchanged.
	expect_rc 1 "recover of 'corrupt' after salvage" "$DELOG" recover "$L"
	expect_rc 1 "recover --to of 'corrupt': the whole log is verified" \
		"$DELOG" recover --to 2 "$L"
	expect_in "$TMP/err" "ECHECKSUM" "recover --to still refuses damage after N"
	[ "$(sum "$L")" = "$lsum" ] || fail "recover changed the damaged log"

	# A lost COMMIT: checkpoint X never committed, X+1 did (ECORRUPT at X+1's COMMIT).
	mk lostcommit "$TMP/lost.log" || exit 1
	before=$(sum "$TMP/lost.log")
	set -- $(commits "$TMP/good.json" "$VICTIM")
	X=$2
	[ "$X" -gt 1 ] || fail "lostcommit: no COMMIT in the victim record"
	expect_rc 0 "salvage of 'lostcommit'" "$DELOG" recover --salvage "$TMP/l.new" --json "$TMP/lost.log"
	jcheck "$TMP/out" "salvage of 'lostcommit'" "d['salvage']['damage']['name'] == 'DELOG_ECORRUPT' and 'never committed' in d['salvage']['damage']['what'] and d['salvage']['kept']['last_seq'] == $X - 1 and d['salvage']['dropped']['incomplete'] == 2 and d['salvage']['dropped']['first_seq'] == $X + 1 and d['salvage']['new_log']['written']"
	[ "$(sum "$TMP/lost.log")" = "$before" ] || fail "salvage changed 'lostcommit'"
	"$DELOG" print --json "$TMP/l.new" >"$TMP/l.json" || fail "print of the salvaged log"
	same_items "$TMP/l.json" "$TMP/good.json" 1 $((X - 1)) 40

	# Checkpoints 1-10 released (the tail moved): the kept ones keep their numbers.
	mk tailcorrupt "$TMP/tail.log" || exit 1
	expect_rc 0 "salvage of 'tailcorrupt'" "$DELOG" recover --salvage "$TMP/t.new" --json "$TMP/tail.log"
	jcheck "$TMP/out" "salvage of 'tailcorrupt'" "d['salvage']['kept']['first_seq'] == 11 and d['salvage']['kept']['last_seq'] == $K"
	expect_rc 0 "strict recovery of 't.new'" "$DELOG" recover --json "$TMP/t.new"
	jcheck "$TMP/out" "'t.new' continues the sequence" "d['report']['first_seq'] == 11 and d['report']['last_seq'] == 40 and d['report']['checkpoints'] == 30 and d['report']['clean']"

	# Numbering (issue 35 item 5): 100 checkpoints, the record holding checkpoint 51's
	# COMMIT damaged.  The salvaged log keeps 1..50 and must number on past 100, the
	# highest sequence the old log gave out, and the report must name 51..100 dropped.
	mk corrupt100 "$TMP/c100.log" || exit 1
	expect_rc 0 "salvage of 'corrupt100'" "$DELOG" recover --salvage "$TMP/c100.new" --json "$TMP/c100.log"
	jcheck "$TMP/out" "salvage of 'corrupt100'" "d['salvage']['kept']['last_seq'] == 50 and d['salvage']['dropped']['from_seq'] == 51 and d['salvage']['dropped']['to_seq'] == 100 and d['salvage']['numbering']['verified_seq'] == 50 and d['salvage']['numbering']['damaged_record_seq'] >= 51 and d['salvage']['numbering']['high_seq'] == 100 and d['salvage']['numbering']['empty_first_seq'] == 51 and d['salvage']['numbering']['empty_last_seq'] == 100 and d['salvage']['numbering']['next_seq'] == 101"
	next=$("$MKLOG" nextseq "$TMP/c100.new") || fail "nextseq on the salvaged log"
	[ "$next" = "seq=101" ] || fail "the first commit after salvage got $next, not seq=101"
	expect_rc 0 "salvage of 'corrupt100' (text)" "$DELOG" recover --salvage "$TMP/c100b.new" "$TMP/c100.log"
	expect_in "$TMP/out" "dropped: checkpoints 51..100" "salvage text names every dropped checkpoint"
	expect_in "$TMP/out" "next checkpoint is 101" "salvage text names the new log's next sequence"
	# A point in time is numbered on the same way: --to 10 of 40 continues at 41.
	expect_rc 0 "salvage --to 10 (numbering)" "$DELOG" recover --salvage "$TMP/g10n.new" --to 10 --json "$TMP/good.log"
	next=$("$MKLOG" nextseq "$TMP/g10n.new") || fail "nextseq on the --to 10 log"
	[ "$next" = "seq=41" ] || fail "the first commit after salvage --to 10 got $next, not seq=41"

	# A bad superblock field: nothing can be verified, so nothing is salvaged.
	while read -r c code field; do
		mk "$c" "$TMP/$c.log" || continue
		before=$(sum "$TMP/$c.log")
		expect_rc 1 "salvage of '$c'" "$DELOG" recover --salvage "$TMP/$c.new" "$TMP/$c.log"
		expect_in "$TMP/err" "$code" "salvage of '$c' names the code"
		expect_in "$TMP/err" "cannot salvage: the superblock is refused ($field)" \
			"salvage of '$c' names the field"
		[ -e "$TMP/$c.new" ] && fail "a refused salvage of '$c' left $c.new"
		expect_rc 1 "salvage --json of '$c'" "$DELOG" recover --salvage "$TMP/$c.new" --json "$TMP/$c.log"
		jcheck "$TMP/out" "salvage --json of '$c'" "d['error']['name'] == 'DELOG_$code' and d['error']['field'] == '$field' and d['salvage'] is None"
		[ "$(sum "$TMP/$c.log")" = "$before" ] || fail "salvage changed '$c'"
	done <<'EOF2'
sbcrc ECHECKSUM sb.crc
version0 ECORRUPT sb.version
geometry ECORRUPT sb.sector_size
magic ENOTLOG sb.magic
EOF2

	# A point in time: verified whole, replayed up to N, nothing written.
	G=$TMP/good.log
	before=$(sum "$G")
	expect_rc 0 "recover --to 10" "$DELOG" recover --to 10 --json "$G"
	jcheck "$TMP/out" "recover --to 10" "d['to'] == 10 and d['error'] is None and d['report']['checkpoints'] == 10 and d['report']['last_seq'] == 10 and d['report']['held_back'] == 30 and d['report']['items'] == 30 and d['report']['stamped_bytes'] == 0"
	expect_rc 0 "recover --to 10 (text)" "$DELOG" recover --to 10 "$G"
	expect_in "$TMP/out" "point in time 10: checkpoints 1..10 replayed, 30 after it" "recover --to text"
	expect_rc 0 "salvage --to 10 of an intact log" "$DELOG" recover --salvage "$TMP/g10.new" --to 10 --json "$G"
	jcheck "$TMP/out" "salvage --to 10" "d['salvage']['damage'] is None and d['salvage']['kept']['last_seq'] == 10 and d['salvage']['dropped']['held_back'] == 30"
	expect_rc 0 "strict recovery of 'g10.new'" "$DELOG" recover --json "$TMP/g10.new"
	jcheck "$TMP/out" "'g10.new'" "d['report']['checkpoints'] == 40 and d['report']['last_seq'] == 40 and d['report']['items'] == 30"
	[ "$(sum "$G")" = "$before" ] || fail "--to changed the log"

	# --dry-run says what would be kept and writes nothing; --size sets NEWLOG's size.
	expect_rc 0 "salvage --dry-run" "$DELOG" recover --salvage "$TMP/dry.new" --dry-run --json "$L"
	jcheck "$TMP/out" "salvage --dry-run" "d['dry_run'] and d['salvage']['kept']['last_seq'] == $K and not d['salvage']['new_log']['written']"
	[ -e "$TMP/dry.new" ] && fail "salvage --dry-run wrote NEWLOG"
	expect_rc 0 "salvage --size 8M" "$DELOG" recover --salvage "$TMP/s8.new" --size 8M --json "$L"
	jcheck "$TMP/out" "salvage --size 8M" "d['salvage']['new_log']['log_size'] == 8 << 20"
	[ "$(stat -c %s "$TMP/s8.new")" = $((8 * 1024 * 1024 + 4096)) ] || fail "--size 8M: $(stat -c %s "$TMP/s8.new") bytes"

	# NEWLOG refusals: an existing file (unless --force), PATH itself, a symlink.
	nb=$(sum "$TMP/c.new")
	expect_rc 1 "salvage over an existing NEWLOG" "$DELOG" recover --salvage "$TMP/c.new" "$L"
	expect_in "$TMP/err" "--force" "existing NEWLOG: names --force"
	[ "$(sum "$TMP/c.new")" = "$nb" ] || fail "a refused salvage changed NEWLOG"
	expect_rc 0 "salvage --force over an existing NEWLOG" "$DELOG" recover --salvage "$TMP/c.new" --force --to 3 "$L"
	expect_rc 0 "strict recovery of the replaced NEWLOG" "$DELOG" recover --json "$TMP/c.new"
	jcheck "$TMP/out" "replaced NEWLOG" "d['report']['last_seq'] == 40 and d['report']['items'] == 9"
	ln "$L" "$TMP/hard.log"
	ln -s "$L" "$TMP/sym.log"
	for n in "$L" "$TMP/hard.log"; do
		expect_rc 1 "salvage onto PATH itself ($n)" "$DELOG" recover --salvage "$n" --force "$L"
		expect_in "$TMP/err" "itself" "salvage onto PATH itself"
	done
	expect_rc 1 "salvage onto a symlink" "$DELOG" recover --salvage "$TMP/sym.log" --force "$L"
	[ "$(sum "$L")" = "$lsum" ] || fail "a refused salvage changed PATH"
	ls "$TMP" | grep -q 'salvage-' && fail "a temporary file was left: $(ls "$TMP" | grep salvage-)"
	expect_rc 2 "--size without --salvage" "$DELOG" recover --size 8M "$L"
	expect_rc 2 "--force without --salvage" "$DELOG" recover --force "$L"
	expect_rc 2 "--salvage with --ids" "$DELOG" recover --salvage "$TMP/x.new" --ids "$L"
	expect_rc 2 "--to 0" "$DELOG" recover --to 0 "$L"
	expect_rc 2 "--to not a number" "$DELOG" recover --to ten "$L"
	expect_rc 2 "--salvage --size below the smallest log" "$DELOG" recover --salvage "$TMP/x.new" --size 1M "$L"
	[ -e "$TMP/x.new" ] && fail "a usage error left NEWLOG"
	;;
loop)
	need_python
	[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
	command -v losetup >/dev/null 2>&1 || skip "losetup is not installed"
	truncate -s 32M "$TMP/loop.img" || exit 1
	LOOPDEV=$(losetup --find --show --direct-io=on "$TMP/loop.img" 2>"$TMP/err") ||
		skip "losetup failed: $(cat "$TMP/err")"
	expect_rc 0 "format a zeroed loop device" "$DELOG" format "$LOOPDEV" --json
	jcheck "$TMP/out" "loop format" 'd["superblock"]["log_size"] == (32 << 20) - 4096'
	expect_rc 1 "format the loop device again" "$DELOG" format "$LOOPDEV"
	expect_in "$TMP/err" "--force" "loop refusal names --force"
	expect_rc 0 "format --force --size" "$DELOG" format "$LOOPDEV" --force --size 16M
	expect_rc 0 "print a loop device" "$DELOG" print --json "$LOOPDEV"
	jcheck "$TMP/out" "loop print" 'd["report"]["empty"] and d["superblock"]["log_size"] == 16 << 20'
	expect_rc 0 "recover a loop device" "$DELOG" recover "$LOOPDEV"
	losetup -d "$LOOPDEV"
	LOOPDEV=
	# A device holding a written log, recovered through the loop device.
	mk good "$TMP/good.log" || exit 1
	LOOPDEV=$(losetup --find --show --direct-io=on "$TMP/good.log" 2>"$TMP/err") ||
		skip "losetup failed: $(cat "$TMP/err")"
	expect_rc 0 "recover a written log on a loop device" "$DELOG" recover --json "$LOOPDEV"
	jcheck "$TMP/out" "loop recover" 'd["report"]["checkpoints"] == 40'
	dd if=/dev/urandom of="$LOOPDEV" bs=4096 count=1 conv=notrunc,fsync 2>/dev/null
	expect_rc 1 "format over a device holding data" "$DELOG" format "$LOOPDEV"
	expect_in "$TMP/err" "holds data" "loop data refusal"
	;;
sector)
	need_python
	# A loop device of 512-byte blocks (physical too) takes 512-byte sectors.
	[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
	command -v losetup >/dev/null 2>&1 || skip "losetup is not installed"
	truncate -s 16M "$TMP/l512.img" "$TMP/l4096.img" || exit 1
	LOOPDEV=$(losetup --find --show --direct-io=on "$TMP/l512.img" 2>"$TMP/err") ||
		skip "losetup failed: $(cat "$TMP/err")"
	L512=$LOOPDEV
	[ "$(blocks "$L512")" = "512 512" ] || skip "$L512 has blocks $(blocks "$L512"), not 512 512"
	expect_rc 0 "format --sector 512 on a 512-byte physical block" "$DELOG" format "$L512" --sector 512 --json
	jcheck "$TMP/out" "512 on 512" 'd["superblock"]["sector"] == 512 and d["error"] is None'
	expect_rc 0 "recover (writing) a 512-byte-sector log there" "$DELOG" recover "$L512"
	dd if="$L512" of="$TMP/log512" bs=1M 2>/dev/null || fail "copy of the 512-byte-sector log"
	losetup -d "$L512"
	# A loop device of 4096-byte blocks refuses them, --force or not, and is left as found.
	LOOPDEV=$(losetup --find --show --direct-io=on --sector-size 4096 "$TMP/l4096.img" 2>"$TMP/err") ||
		skip "losetup --sector-size 4096 failed: $(cat "$TMP/err")"
	[ "$(blocks "$LOOPDEV")" = "4096 4096" ] || skip "$LOOPDEV has blocks $(blocks "$LOOPDEV"), not 4096 4096"
	before=$(sum "$TMP/l4096.img")
	for force in "" --force; do
		# shellcheck disable=SC2086
		expect_rc 1 "format --sector 512 $force on a 4096-byte physical block" "$DELOG" format "$LOOPDEV" --sector 512 $force
		expect_in "$TMP/err" "512-byte sectors on a device whose physical block is 4096 bytes" "the refusal names both sizes"
	done
	expect_rc 1 "format --sector 512 --json on a 4096-byte physical block" "$DELOG" format "$LOOPDEV" --sector 512 --json
	jcheck "$TMP/out" "512 on 4096, --json" 'd["superblock"] is None and d["error"]["name"] == "DELOG_EGEOMETRY" and "physical block is 4096" in d["error"]["what"]'
	[ "$(sum "$TMP/l4096.img")" = "$before" ] || fail "a refused format changed the device"
	expect_rc 0 "format --sector 4096 on a 4096-byte physical block" "$DELOG" format "$LOOPDEV" --sector 4096
	losetup -d "$LOOPDEV"
	LOOPDEV=
	# The unsafe case proper, where the checks above are the only refusal: a file system
	# of 512-byte logical blocks on a larger physical block (a 512e disk).  Such a device
	# cannot be made here, so this runs only where the test directory is on one.
	set -- $(blocks "$TMP")
	if [ $# -ne 2 ] || [ "$1" != 512 ] || [ "$2" -le 512 ]; then
		echo "sector: $TMP is not on a 512e device (blocks: ${*:-unknown}): the file cases are not run" >&2
		finish "$MODE"
	fi
	P=$2
	expect_rc 1 "format --sector 512 of a new file (physical $P)" "$DELOG" format "$TMP/f.log" --size 8M --sector 512
	expect_in "$TMP/err" "512-byte sectors on a device whose physical block is $P bytes" "file: the refusal names both sizes"
	[ -e "$TMP/f.log" ] && fail "a refused format left a file"
	"$MKLOG" create512 "$TMP/f.log" >"$TMP/out" 2>&1
	expect_in "$TMP/out" "open=DELOG_EGEOMETRY field= message=512-byte sectors on a device whose physical block is $P bytes" "delog_open CREATE sector 512"
	[ -e "$TMP/f.log" ] && fail "a refused delog_open CREATE left a file"
	"$MKLOG" create4096 "$TMP/f.log" >"$TMP/out" 2>&1
	expect_in "$TMP/out" "open=0 " "delog_open CREATE sector 4096"
	# A 512-byte-sector log brought here: read, never written.
	cp "$TMP/log512" "$TMP/g.log" || exit 1
	before=$(sum "$TMP/g.log")
	"$MKLOG" openrw "$TMP/g.log" >"$TMP/out" 2>&1
	expect_in "$TMP/out" "open=DELOG_EGEOMETRY field=sb.sector_size message=512-byte sectors on a device whose physical block is $P bytes" "delog_open of a 512-byte-sector log"
	"$MKLOG" openro "$TMP/g.log" >"$TMP/out" 2>&1
	expect_in "$TMP/out" "open=0 " "delog_open DELOG_OPEN_RDONLY of a 512-byte-sector log"
	expect_rc 1 "recover of a 512-byte-sector log" "$DELOG" recover "$TMP/g.log"
	expect_in "$TMP/err" "DELOG_EGEOMETRY" "recover names the code"
	expect_in "$TMP/err" "512-byte sectors on a device whose physical block is $P bytes" "recover names both sizes"
	expect_rc 1 "recover --json of a 512-byte-sector log" "$DELOG" recover --json "$TMP/g.log"
	jcheck "$TMP/out" "recover --json, 512 on $P" 'd["error"]["name"] == "DELOG_EGEOMETRY" and d["error"]["field"] == "sb.sector_size"'
	expect_rc 0 "recover --dry-run of a 512-byte-sector log" "$DELOG" recover --dry-run "$TMP/g.log"
	expect_rc 1 "recover --salvage of a 512-byte-sector log here" "$DELOG" recover --salvage "$TMP/g.new" "$TMP/g.log"
	expect_in "$TMP/err" "512-byte sectors on a device whose physical block is $P bytes" "salvage's new log names both sizes"
	[ -e "$TMP/g.new" ] && fail "a refused salvage left NEWLOG"
	ls "$TMP" | grep -q 'salvage-' && fail "a refused salvage left a temporary file"
	expect_rc 0 "print of a 512-byte-sector log" "$DELOG" print "$TMP/g.log"
	[ "$(sum "$TMP/g.log")" = "$before" ] || fail "a refused writing open changed the log"
	;;
readonly)
	need_python
	[ "$(id -u)" -eq 0 ] || skip "a read-only bind mount needs root"
	command -v unshare >/dev/null 2>&1 || skip "unshare is not installed"
	mkdir "$TMP/src" "$TMP/mnt" || exit 1
	ro_run true 2>"$TMP/err" || skip "no read-only bind mount here: $(cat "$TMP/err")"
	ro_run touch "$TMP/mnt/x" 2>/dev/null && fail "the bind mount is not read-only"
	mk clean "$TMP/src/clean.log" || exit 1
	mk good "$TMP/src/crashed.log" || exit 1
	mk torn "$TMP/src/torn.log" || exit 1
	mk corrupt "$TMP/src/corrupt.log" || exit 1
	for c in clean crashed torn corrupt; do
		eval "before_$c=\$(sum \"\$TMP/src/\$c.log\")"
	done
	# Nothing to write: recovered as DELOG_OPEN_RDONLY would, exit 0.
	for c in clean crashed; do
		expect_rc 0 "recover of the $c log on a read-only mount" \
			ro_run "$DELOG" recover "$TMP/mnt/$c.log"
		expect_in "$TMP/out" "checkpoints 40 replayed" "recover of the $c log (read-only)"
		expect_in "$TMP/err" "recovered without writing" "recover of the $c log (read-only)"
		expect_rc 0 "recover --json of the $c log on a read-only mount" \
			ro_run "$DELOG" recover --json "$TMP/mnt/$c.log"
		jcheck "$TMP/out" "$c log, read-only" 'd["read_only"] and not d["dry_run"] and d["error"] is None and d["report"]["checkpoints"] == 40 and d["report"]["stamp_needed"] == 0 and d["report"]["stamped_bytes"] == 0'
	done
	# A torn head: recovery must stamp, which it cannot here.
	expect_rc 1 "recover of a torn head on a read-only mount" \
		ro_run "$DELOG" recover "$TMP/mnt/torn.log"
	expect_in "$TMP/err" "read-only file system" "torn head (read-only): names the cause"
	expect_in "$TMP/err" "--dry-run" "torn head (read-only): names --dry-run"
	expect_rc 1 "recover --json of a torn head on a read-only mount" \
		ro_run "$DELOG" recover --json "$TMP/mnt/torn.log"
	jcheck "$TMP/out" "torn head, read-only" 'd["read_only"] and d["error"]["name"] == "EROFS" and "--dry-run" in d["error"]["what"] and d["report"]["torn_bytes"] > 0 and d["report"]["stamp_needed"] > 0'
	need=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["report"]["stamp_needed"])' "$TMP/out")
	expect_rc 0 "recover --dry-run of a torn head on a read-only mount" \
		ro_run "$DELOG" recover --dry-run "$TMP/mnt/torn.log"
	# Corruption is corruption, read-only or not.
	expect_rc 1 "recover of a corrupt log on a read-only mount" \
		ro_run "$DELOG" recover "$TMP/mnt/corrupt.log"
	expect_in "$TMP/err" "DELOG_ECHECKSUM" "corrupt log (read-only)"
	for c in clean crashed torn corrupt; do
		eval "b=\$before_$c"
		[ "$(sum "$TMP/src/$c.log")" = "$b" ] || fail "recover on a read-only mount changed $c.log"
	done
	# Off the read-only mount a writing run stamps what the read-only one counted.
	expect_rc 0 "recover of the torn head, writable" "$DELOG" recover --json "$TMP/src/torn.log"
	jcheck "$TMP/out" "torn head, writable" "d['report']['stamped_bytes'] == $need and not d['read_only']"
	;;
writer)
	need_python
	L="$TMP/live.log"
	"$DELOG" stress "$L" --size 16M >"$TMP/ids" 2>"$TMP/stress.err" &
	SPID=$!
	# Wait for the writer to hold the log: it says so once open (bounded, not timed).
	i=0
	while ! grep -q committing "$TMP/stress.err" 2>/dev/null; do
		kill -0 $SPID 2>/dev/null || break
		i=$((i + 1))
		[ $i -gt 1200 ] && break
		sleep 0.05
	done
	grep -q committing "$TMP/stress.err" || {
		kill -KILL $SPID 2>/dev/null
		fail "delog stress did not start: $(cat "$TMP/stress.err")"
		finish "$MODE"
	}
	expect_rc 1 "recover beside a writer" "$DELOG" recover "$L"
	expect_in "$TMP/err" "process $SPID" "recover beside a writer names it"
	expect_rc 1 "recover --json beside a writer" "$DELOG" recover --json "$L"
	jcheck "$TMP/out" "recover --json beside a writer" 'd["error"]["name"] == "EBUSY" and "process" in d["error"]["what"]'
	expect_rc 1 "format --force of a held log" "$DELOG" format --force "$L"
	expect_in "$TMP/err" "process $SPID" "format --force beside a writer names it"
	expect_rc 1 "format --force --size of a held log" "$DELOG" format --force --size 32M "$L"
	expect_in "$TMP/err" "process $SPID" "format --force --size beside a writer names it"
	[ "$(stat -c %s "$L")" -eq $((4096 + 16777216)) ] || fail "a refused format changed the log's size"
	expect_rc 1 "a second stress on a held log" "$DELOG" stress "$L" --count 1
	expect_in "$TMP/err" "process $SPID" "a second stress names the writer"
	n=0
	while [ $n -lt 20 ]; do
		expect_rc 0 "recover --dry-run beside a writer ($n)" "$DELOG" recover --dry-run "$L"
		expect_rc 0 "print beside a writer ($n)" "$DELOG" print "$L"
		n=$((n + 1))
	done
	kill -KILL $SPID
	wait $SPID 2>/dev/null
	expect_rc 0 "recover once the writer was killed" "$DELOG" recover "$L"
	;;
*)
	echo "unknown mode $MODE" >&2
	exit 1
	;;
esac

finish "$MODE"
