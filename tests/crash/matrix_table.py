#!/usr/bin/env python3
"""matrix_table.py LASTTEST_LOG: docs/TESTING.md's per-cell coverage table of the crash
matrix, from ctest's log of a run of it (ctest -L crash_matrix writes every test's output
to Testing/Temporary/LastTest.log).  One row per cell, the fixed-seed run and the
commit-seed run summed (least free space: the least of the two).  Reads the report
`delog crash` prints (tools/crash/command.c print_text); a test whose report is missing
(it failed before printing one) shows as such."""
import re
import sys

NUM = r"([0-9]+)"
FIELDS = {
    "states": r"^  states +" + NUM,
    "viol": r"^  violations +" + NUM,
    "secs": r"^  time +([0-9.]+) s",
    "bound": r"L13 bound flushes " + NUM,
    "bound_cps": r"L13 bound flushes [0-9]+ \(" + NUM,
    "cover": r"L12 cover flushes " + NUM,
    "cover_cps": r"L12 cover flushes [0-9]+ \(" + NUM,
    "wraps": NUM + r" records split at the log's end",
    "least_free": r"laps, least free " + NUM,
    "laps": NUM + r" laps, least free",
    "gate": r"flush gate: " + NUM + " generations",
    "inline": r"generations \(" + NUM + " inline\)",
    "edeadlk": NUM + r" growers told -EDEADLK",
    "sessions": r"chains, [0-9]+\.\." + NUM + " sessions each",
    "vcps": r"versions: " + NUM + " crash points",
    "stalls": r"^  liveness +" + NUM + " stalls",
    "idle": NUM + r" open/close cycles",
}
SUM = ("states", "viol", "secs", "bound", "bound_cps", "cover", "cover_cps", "wraps", "laps",
       "gate", "inline", "vcps", "stalls", "edeadlk", "idle")


def parse(path):
    """Each test's name and its report's figures."""
    text = open(path, encoding="utf-8", errors="replace").read()
    out = {}
    for m in re.finditer(r'^[0-9]+/[0-9]+ Test: (\S+)\n(.*?)<end of output>', text, re.S | re.M):
        name, body = m.group(1), m.group(2)
        if not name.startswith("crash."):
            continue
        rec = {}
        for key, rx in FIELDS.items():
            f = re.search(rx, body, re.M)
            if f:
                rec[key] = float(f.group(1)) if key == "secs" else int(f.group(1))
        seed = re.search(r"crash_cell: seed ([0-9]+)", body)
        rec["seed"] = seed.group(1) if seed else "?"
        rec["kinds"] = re.findall(r"^kind: [0-9]+ x (.*)$", body, re.M)
        out[name] = rec
    return out


def merge(runs):
    """A cell's row: the runs' figures summed, the least free space the least."""
    row = {k: sum(r.get(k, 0) for r in runs) for k in SUM}
    frees = [r["least_free"] for r in runs if "least_free" in r]
    row["least_free"] = min(frees) if frees else None
    row["sessions"] = max((r.get("sessions", 0) for r in runs), default=0)
    row["complete"] = all("states" in r for r in runs)
    row["kinds"] = sorted({k[:60] for r in runs for k in r["kinds"]})
    row["seeds"] = "/".join(r["seed"] for r in runs)
    return row


def render(cells):
    print("| cell (workload.policy.profile) | seeds | states | s | violations | L13 bound "
          "flushes (points after one) | L12 cover flushes (points after one) | wraps | laps | "
          "least free KiB | gate generations (inline) | sessions per chain | version points | "
          "stalls | growers told -EDEADLK | open/close cycles |")
    print("|" + "---|" * 16)
    for cell, row in cells:
        free = "%d" % (row["least_free"] // 1024) if row["least_free"] is not None else "-"
        viol = str(row["viol"]) if row["complete"] else "%d (no report)" % row["viol"]
        print("| %s | %s | %d | %.0f | %s | %d (%d) | %d (%d) | %d | %d | %s | %d (%d) | %s | "
              "%d | %d | %d | %d |" % (cell, row["seeds"], row["states"], row["secs"], viol,
                                       row["bound"], row["bound_cps"], row["cover"],
                                       row["cover_cps"], row["wraps"], row["laps"], free,
                                       row["gate"], row["inline"], row["sessions"] or "-",
                                       row["vcps"], row["stalls"], row["edeadlk"], row["idle"]))
    kinds = [(cell, k) for cell, row in cells for k in row["kinds"]]
    if kinds:
        print("\nViolations by kind (numbers folded to #):\n")
        for cell, k in kinds:
            print("- %s: %s" % (cell, k))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: matrix_table.py BUILD/Testing/Temporary/LastTest.log\n")
        return 2
    tests = parse(sys.argv[1])
    cells = {}
    for name, rec in tests.items():
        base = name[:-len(".commit")] if name.endswith(".commit") else name
        if base.count(".") == 3:
            cells.setdefault(base, []).append(rec)
    render([(c[len("crash."):], merge(r)) for c, r in sorted(cells.items())])
    return 0


if __name__ == "__main__":
    sys.exit(main())
