#!/bin/sh
# bench_doc_test.sh - tools/bench/bench-doc, the regeneration of docs/BENCH.md's measured
# blocks, run by ctest.  No timing is asserted.
#
#   bench_doc_test.sh DELOG BENCH_DOC PAGE
#
# - PAGE (docs/BENCH.md) has well-formed markers (--check) and at least one block per
#   benchmark section the page keeps (machine, recovery, commit, spacewait, stream,
#   compare-flush, probe);
# - on a page of its own in a temporary directory: a block whose command is a short sim
#   commit bench is replaced by the command, its commit and the bench's output; a block
#   whose command fails keeps its old contents and is named (exit 1); everything outside
#   the blocks is byte for byte as it was; nothing is left in the directory; --only runs
#   one block and refuses a name the page does not have (exit 2); a command that reads
#   its standard input does not eat the blocks after it; what a command prints of the
#   page's folder and of its current directory is written docs/ and . (no absolute
#   path of the machine), and PAGE names the source tree by no absolute path;
# - a page with an unclosed block, a duplicate name or a stray closing marker is refused
#   by --check (exit 1) with its line, and left as it was.
set -u
DELOG=${1:?path to delog}
DOC=${2:?path to bench-doc}
PAGE=${3:?path to docs/BENCH.md}
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
DELOG=$(abs "$DELOG")
DOC=$(abs "$DOC")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_doc_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# The page of the tree.
expect_rc 0 "--check on $PAGE" sh "$DOC" --check "$PAGE"
sh "$DOC" --list "$PAGE" >"$TMP/list" 2>/dev/null
for want in machine recovery commit spacewait stream compare-flush probe; do
	grep -q "^$want" "$TMP/list" || fail "$PAGE has no block named $want..."
done

# A page of our own.
W=$TMP/work
mkdir "$W"
cat >"$W/page.md" <<'EOF'
# A page
text before
<!-- bench: sim: delog bench --workload commit --backend sim --policy none --clients 1 --time 0.05 --no-baselines -->
old sim contents
<!-- /bench: sim -->
text between
<!-- bench: broken: delog bench --workload nosuch -->
old broken contents
<!-- /bench: broken -->
text after
EOF
cp "$W/page.md" "$TMP/orig.md"
outside() { awk '/^<!-- bench: /{print; s=1; next} /^<!-- \/bench: /{s=0} !s' "$1"; }

(cd "$W" && sh "$DOC" --delog "$DELOG" page.md >"$TMP/out" 2>"$TMP/err")
rc=$?
[ "$rc" -eq 1 ] || fail "a page with a failing block: exit $rc, expected 1"
expect_in "$TMP/err" 'failed: broken' "the failing block named"
awk '/^<!-- bench: sim/,/^<!-- \/bench: sim/' "$W/page.md" >"$TMP/sim"
expect_in "$TMP/sim" '`delog bench --workload commit --backend sim' "the command above the output"
expect_in "$TMP/sim" '(commit ' "the commit the block ran at"
expect_in "$TMP/sim" 'commits/s' "the bench's table"
expect_in "$TMP/sim" 'none (UNSAFE)' "the bench's row"
grep -q 'old sim contents' "$TMP/sim" && fail "the old contents of a regenerated block stayed"
awk '/^<!-- bench: broken/,/^<!-- \/bench: broken/' "$W/page.md" >"$TMP/broken"
expect_in "$TMP/broken" 'old broken contents' "a failed block keeps its contents"
outside "$TMP/orig.md" >"$TMP/o1"
outside "$W/page.md" >"$TMP/o2"
cmp -s "$TMP/o1" "$TMP/o2" || fail "text outside the blocks changed"
left=$(ls -A "$W" | grep -v '^page.md$')
[ -z "$left" ] || fail "left behind: $left"

# --only: one block; an unknown one is a usage error.
cp "$TMP/orig.md" "$W/page.md"
expect_rc 0 "--only sim" sh -c "cd '$W' && sh '$DOC' --delog '$DELOG' --only sim page.md"
grep -q 'old broken contents' "$W/page.md" || fail "--only sim touched another block"
grep -q 'old sim contents' "$W/page.md" && fail "--only sim did not regenerate it"
cp "$TMP/orig.md" "$W/page.md"
expect_rc 2 "--only nosuch" sh "$DOC" --delog "$DELOG" --only nosuch "$W/page.md"
expect_in "$TMP/err" 'no block "nosuch"' "--only names the missing block"
cmp -s "$TMP/orig.md" "$W/page.md" || fail "--only nosuch changed the page"

# A command that reads its standard input reads nothing (not the list of blocks after it).
printf '%s\n' '<!-- bench: reader: cat -->' '<!-- /bench: reader -->' \
	'<!-- bench: after: echo the block after a reader -->' '<!-- /bench: after -->' >"$W/stdin.md"
expect_rc 0 "a block that reads stdin" sh "$DOC" --delog "$DELOG" "$W/stdin.md"
grep -qx "the block after a reader" "$W/stdin.md" || fail "the block after a reader did not run"

# This machine's paths are written relative: the page's folder as docs/, the directory
# the command ran in as "." (BENCH.md carries no absolute path of the machine).
mkdir "$W/doc"
printf '%s\n' '<!-- bench: paths: echo "plot written to $DOCDIR/img/x.png"; echo "in $PWD"; echo "$PWD/f.tmp" -->' \
	'<!-- /bench: paths -->' >"$W/doc/paths.md"
expect_rc 0 "a block printing paths" sh -c "cd '$W' && sh '$DOC' --delog '$DELOG' doc/paths.md"
grep -qx "plot written to docs/img/x.png" "$W/doc/paths.md" || fail "the page's folder not written docs/: $(cat "$W/doc/paths.md")"
grep -qx "in \." "$W/doc/paths.md" || fail "the current directory not written .: $(cat "$W/doc/paths.md")"
grep -qx "\./f.tmp" "$W/doc/paths.md" || fail "a path under the current directory not made relative: $(cat "$W/doc/paths.md")"
grep -q "$W" "$W/doc/paths.md" && fail "an absolute path left in the block: $(cat "$W/doc/paths.md")"
rm -rf "$W/doc"
SRCROOT=$(cd "$(dirname "$PAGE")/.." && pwd)
grep -nF "$SRCROOT/" "$PAGE" && fail "$PAGE names the source tree by its absolute path ($SRCROOT)"

# Malformed pages: refused with the line, unchanged.
bad() {
	printf '%s\n' "$2" >"$W/bad.md"
	cp "$W/bad.md" "$TMP/bad.orig"
	expect_rc 1 "$1" sh "$DOC" --delog "$DELOG" "$W/bad.md"
	expect_in "$TMP/err" "$3" "$1: the message"
	cmp -s "$TMP/bad.orig" "$W/bad.md" || fail "$1: the page changed"
	expect_rc 1 "$1 (--check)" sh "$DOC" --check "$W/bad.md"
}
bad "an unclosed block" '<!-- bench: a: true -->
x' 'block "a" is never closed'
bad "a name twice" '<!-- bench: a: true -->
<!-- /bench: a -->
<!-- bench: a: true -->
<!-- /bench: a -->' 'bad.md:3: block "a" appears twice'
bad "a stray closing marker" 'x
<!-- /bench: a -->' 'bad.md:2: closing marker of "a" without its opening one'
bad "a block closed under another name" '<!-- bench: a: true -->
<!-- /bench: b -->' 'block "a" is closed as "b"'

finish bench_doc_test
