#!/bin/sh
# labels_test.sh - the invariant labels of the source and their index in
# docs/ARCHITECTURE.md agree, run by ctest.
#
#   labels_test.sh SRCDIR
#
# A label is defined where a block comment line of a .c or .h file under engine/,
# journal/, iolayer/, raft/, tools/ or crashtest/ starts with it in parentheses and a capitalised
# sentence follows: " *  (L13) A record never ends ...".  Checked:
#   - every label is defined in one file only (a citation elsewhere is "file label");
#   - every defined label is in the table under "### Invariant labels", in the row of
#     the file that defines it (a row: "| L1–L16, L18 | journal/log.c | ... |");
#   - every label a row names for a source file is defined in that file (no stale row).
# Rows for a document (docs/DESIGN.md §5) are not checked.
# Exit 0 pass, 1 fail, 77 skip (no python3), with the differences on stderr.
set -u
SRC=${1:?source directory}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed" >&2; exit 77; }
exec python3 - "$SRC" <<'EOF'
import os, re, sys

src = sys.argv[1]
fails = []
defined = {}  # label -> set of files
defre = re.compile(r'^\s*\*\s+\(([A-Z]+[0-9]+)\)\s+[\w`"]')
for top in ("engine", "journal", "iolayer", "raft", "tools", "crashtest"):
    for dirpath, _, names in os.walk(os.path.join(src, top)):
        for n in names:
            if not n.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = defre.match(line)
                    if m:
                        defined.setdefault(m.group(1), set()).add(rel)

for label, files in sorted(defined.items()):
    if len(files) > 1:
        fails.append(f"{label} is defined in {len(files)} files: {', '.join(sorted(files))}")

arch = open(os.path.join(src, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
sect = arch.split("### Invariant labels", 1)
if len(sect) < 2:
    print("FAIL: docs/ARCHITECTURE.md has no '### Invariant labels' table", file=sys.stderr)
    sys.exit(1)
indexed = {}  # label -> file of its row
for line in sect[1].split("\n## ", 1)[0].splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 3 or not re.match(r"^[A-Z]", cells[0]):
        continue
    where = cells[1]
    if not where.endswith((".c", ".h")):
        continue
    for item in cells[0].split(","):
        item = item.strip()
        m = re.fullmatch(r"([A-Z]+)([0-9]+)(?:[–-]\1?([0-9]+))?", item)
        if not m:
            fails.append(f"index row '{cells[0]}': cannot read '{item}'")
            continue
        lo = int(m.group(2))
        hi = int(m.group(3)) if m.group(3) else lo
        for k in range(lo, hi + 1):
            label = f"{m.group(1)}{k}"
            indexed[label] = where
            if where not in defined.get(label, set()):
                fails.append(f"index: {label} is listed for {where}, which does not define it"
                             + (f" ({', '.join(sorted(defined[label]))} does)" if label in defined else ""))

for label, files in sorted(defined.items()):
    if label not in indexed:
        fails.append(f"{label} ({', '.join(sorted(files))}) is not in ARCHITECTURE.md's index")

for f in fails:
    print("FAIL: " + f, file=sys.stderr)
if fails:
    print(f"labels_test: {len(fails)} check(s) failed", file=sys.stderr)
    sys.exit(1)
print(f"labels_test: ok ({len(defined)} labels)")
EOF
