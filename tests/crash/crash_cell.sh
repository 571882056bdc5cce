#!/bin/sh
# crash_cell.sh DELOG SRCDIR SEED CELL ARGS...: one cell of the crash matrix
# (tests/crash/CMakeLists.txt): `DELOG crash --seed S ARGS...`.  SEED is a number, or
# "commit": then S is the first 48 bits of the commit being tested (`git rev-parse HEAD`
# in SRCDIR, read now, at test time) plus CELL, so every commit explores states no
# earlier one saw and each cell its own; without git (a source tarball) it falls back to
# 900000 + CELL and says so.  The seed and the command that reruns the cell are printed
# first, so a failure can be rerun as it ran.
set -u
delog=$1 src=$2 seed=$3 cell=$4
shift 4
from="fixed"
if [ "$seed" = commit ]; then
  head=$(git -C "$src" rev-parse --verify -q HEAD 2>/dev/null || true)
  case $head in
  [0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]*)
    seed=$(( 0x$(printf '%s' "$head" | cut -c1-12) + cell ))
    from="commit $head + cell $cell" ;;
  *)
    seed=$(( 900000 + cell ))
    from="no git commit in $src: the fallback 900000 + cell $cell" ;;
  esac
fi
echo "crash_cell: seed $seed ($from)"
echo "crash_cell: rerun: delog crash --seed $seed $*"
exec "$delog" crash --seed "$seed" "$@"
