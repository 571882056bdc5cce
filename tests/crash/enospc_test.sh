#!/bin/sh
# enospc_test.sh DELOG - a file-backed log on a filesystem that is out of space
# (docs/DESIGN.md section 5, T8 and G9), on a small ext4 filesystem on a
# loop device (needs root, losetup, mkfs.ext4 and mount; otherwise exit 77: skipped):
#   1. `delog format` of a log larger than the free space fails with exit status 1 and
#      a message naming ENOSPC ("No space left on device"), and leaves nothing that
#      `delog print` takes for a log: the file it created is removed; an existing empty
#      file it was asked to grow stays, but is refused as no log;
#   2. a log that fits formats, and `delog print` reads it;
#   3. the filesystem is then filled to the last block by another file: the log was
#      preallocated and zeroed at format, so `delog stress LOG --threads 2` (wrapping
#      the log several times) never meets ENOSPC, closes cleanly, and `delog recover
#      --ids` recovers only acknowledged ids, each thread's a run without holes, up to
#      the last one acknowledged;
#   4. with the filesystem still full, the log reopens and continues (a second stress
#      run recovers and appends).
set -u
DELOG=$1
SIZE_MB=${ENOSPC_FS_MB:-16}
COUNT=${ENOSPC_COUNT:-3000}

skip() { echo "enospc_test: $*: skipped"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root"
for c in losetup mount umount mkfs.ext4 python3; do
	command -v $c >/dev/null 2>&1 || skip "$c not found"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/delog-enospc.XXXXXX") || exit 1
MNT=$T/mnt
LOOP=
cleanup() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "enospc_test: FAIL: $*"; exit 1; }

mkdir "$MNT" || exit 1
truncate -s ${SIZE_MB}M "$T/fs.img" || exit 1
mkfs.ext4 -q -F -m 0 "$T/fs.img" >/dev/null 2>&1 || skip "mkfs.ext4 failed"
LOOP=$(losetup -f --show "$T/fs.img" 2>/dev/null) || skip "losetup failed"
mount "$LOOP" "$MNT" 2>/dev/null || skip "mount of an ext4 loop device failed"
free_kb=$(df -Pk "$MNT" | awk 'NR == 2 { print $4 }')
echo "enospc_test: ${SIZE_MB} MiB ext4 on $LOOP, $free_kb KiB free"

# 1. Too large: a new file.
big=$(( (free_kb / 1024 + 8) / 4 * 4 ))M
"$DELOG" format "$MNT/big.log" --size $big >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "format --size $big on $free_kb KiB free: exit $rc, want 1"
grep -q "No space left on device" "$T/err" || fail "format message does not name ENOSPC: $(cat "$T/err")"
echo "enospc_test: format --size $big: exit 1: $(cat "$T/err")"
if [ -e "$MNT/big.log" ]; then
	"$DELOG" print "$MNT/big.log" >/dev/null 2>&1 && fail "a failed format left a log that delog print reads"
	fail "a failed format left $MNT/big.log behind"
fi
# ... and an existing empty file (as from mktemp), which format grows.
: >"$MNT/empty.log"
"$DELOG" format "$MNT/empty.log" --size $big >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "format of an empty file to $big: exit $rc, want 1"
grep -q "No space left on device" "$T/err" || fail "format message does not name ENOSPC: $(cat "$T/err")"
echo "enospc_test: format of an existing empty file to $big: exit 1: $(cat "$T/err")"
"$DELOG" print "$MNT/empty.log" >"$T/out" 2>"$T/err" && fail "delog print reads the file a failed format grew"
echo "enospc_test: delog print of it: $(head -1 "$T/err")"
rm -f "$MNT/empty.log"

# 2. A log that fits.
"$DELOG" format "$MNT/log" --size 4M >/dev/null 2>"$T/err" || fail "format --size 4M: $(cat "$T/err")"
"$DELOG" print "$MNT/log" >/dev/null 2>"$T/err" || fail "delog print of the new log: $(cat "$T/err")"

# 3. Fill the filesystem, then run on the log.
dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null
sync -f "$MNT" 2>/dev/null || sync
left=$(df -Pk "$MNT" | awk 'NR == 2 { print $4 }')
[ "$left" -le 64 ] || fail "could not fill the filesystem ($left KiB left)"
echo "enospc_test: filesystem filled ($left KiB left)"
: >"$T/ids"
for run in 1 2; do
	"$DELOG" stress "$MNT/log" --threads 2 --count $COUNT >>"$T/ids" 2>"$T/err"
	rc=$?
	[ $rc = 0 ] || fail "stress run $run on the full filesystem: exit $rc: $(cat "$T/err")"
	grep -q "No space left\|ENOSPC:" "$T/err" && fail "stress run $run met ENOSPC: $(cat "$T/err")"
done
"$DELOG" recover "$MNT/log" --ids >"$T/rec" 2>"$T/err" || fail "recover --ids: $(cat "$T/err")"
python3 - "$T/ids" "$T/rec" $COUNT <<'EOF' || exit 1
import sys
acked = [int(l) for l in open(sys.argv[1]) if l.strip()]
rec = [int(l) for l in open(sys.argv[2]) if l.strip()]
count = int(sys.argv[3])
SHIFT = 40
def fail(m):
    print("enospc_test: FAIL: " + m)
    sys.exit(1)
if len(acked) != 2 * 2 * count or len(set(acked)) != len(acked):
    fail("stress acknowledged %d ids (%d distinct), want %d" % (len(acked), len(set(acked)), 4 * count))
sa = set(acked)
extra = [i for i in rec if i not in sa]
if extra:
    fail("%d recovered ids were never acknowledged (first %#x)" % (len(extra), extra[0]))
by = {}
for i in rec:
    by.setdefault(i >> SHIFT, []).append(i & ((1 << SHIFT) - 1))
for t, v in sorted(by.items()):
    v.sort()
    if v != list(range(v[0], v[0] + len(v))):
        fail("thread %d: recovered ids have a hole" % t)
    last = max(i & ((1 << SHIFT) - 1) for i in acked if i >> SHIFT == t)
    if v[-1] != last:
        fail("thread %d: last recovered %d, last acknowledged %d" % (t, v[-1], last))
print("enospc_test: %d ids acknowledged on the full filesystem over 2 runs, %d recovered "
      "(the rest released), no hole, none invented" % (len(acked), len(rec)))
EOF
echo "enospc_test: ok"
