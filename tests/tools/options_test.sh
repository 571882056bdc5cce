#!/bin/sh
# options_test.sh - the option names `delog bench` and `delog crash` share with every
# delog command, run by ctest (tools.options):
#   -s/--size the log size, -p/--policy the flush policy, -t/--threads, -n only ever
#   --dry-run, -b/--backend defaulting to the best available.
#
#   options_test.sh DELOG TESTDIR
#
# 1. bench: --size (was --log-size) and -s, --policy and -p, -t for --threads reach the
#    workload (the JSON's params on the sim disk); --path (long only) runs on a file; the
#    default backend is the best available (the JSON names the same backend as
#    --backend auto, not "auto").
# 2. The old spellings are usage errors (exit 2, with the usage): bench --log-size, bench
#    -p PATH (now --policy: PATH is no policy), a letter whose long option the workload
#    lacks (-p on recovery) names it; crash -n N and -s S (now --states, --seed only).
# 3. crash --states and --seed still run (a tiny bounded run, no violation).
# Exit 0 pass, 1 fail, 77 skip (no python3), with the reason on stderr.
set -u

DELOG=${1:?path to delog}
DIR=${2:?test directory}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to read the JSON" >&2; exit 77; }
TMP=$(mktemp -d "${DIR}/options_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/../lib.sh"

# json_is FILE EXPR WHAT: the Python expression EXPR over the document `d` is true.
json_is() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$1" "$2" 2>"$TMP/py.err" || fail "$3: not $2 ($(tail -1 "$TMP/py.err"))"
}

SIM="--workload commit --backend sim --time 0.05 --clients 1 --json"

# ---- 1. the new names reach the workload -----------------------------------------------
# shellcheck disable=SC2086 # $SIM is a list of options
expect_rc 0 "bench --size --policy" "$DELOG" bench $SIM --size 16M --policy single
json_is "$TMP/out" 'd["params"]["log_size"] == 16 << 20' "bench --size 16M"
json_is "$TMP/out" 'd["params"]["policies"] == ["single"]' "bench --policy single"
# shellcheck disable=SC2086
expect_rc 0 "bench -s -p" "$DELOG" bench $SIM -s 32M -p async
json_is "$TMP/out" 'd["params"]["log_size"] == 32 << 20' "bench -s 32M"
json_is "$TMP/out" 'd["params"]["policies"] == ["async"]' "bench -p async"
expect_rc 0 "bench fsmark -t" "$DELOG" bench --workload fsmark --backend sim -t 3 \
	--files 20 -p none -s 16M --json
json_is "$TMP/out" 'd["params"]["threads"] == 3' "bench fsmark -t 3"
# --path, long only, on a file; the default backend is the best available.
expect_rc 0 "bench --path" "$DELOG" bench --workload commit --path "$TMP/f" --time 0.05 \
	--clients 1 -p single -s 16M --no-baselines --json
json_is "$TMP/out" 'd["path"].endswith("/f")' "bench --path names the file"
[ -e "$TMP/f" ] && fail "bench --path: the file it created is still there"
cp "$TMP/out" "$TMP/default.json"
expect_rc 0 "bench --backend auto" "$DELOG" bench --workload commit --path "$TMP/f" \
	--time 0.05 --clients 1 -p single -s 16M --no-baselines --backend auto --json
auto=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["backend"])' "$TMP/out")
json_is "$TMP/default.json" "d['backend'] == '$auto' and d['backend'] != 'auto'" \
	"bench without --backend (the best available: $auto)"

# ---- 2. the old spellings are usage errors ----------------------------------------------
expect_rc 2 "bench --log-size" "$DELOG" bench --workload commit --backend sim --log-size 16M
expect_in "$TMP/err" "usage: delog bench" "bench --log-size: the usage"
expect_rc 2 "bench -p PATH" "$DELOG" bench --workload commit -p "$TMP/g"
expect_in "$TMP/err" "--policy" "bench -p PATH: names --policy"
[ -e "$TMP/g" ] && fail "bench -p PATH created $TMP/g"
expect_rc 2 "bench recovery -p" "$DELOG" bench --workload recovery -p sync
expect_in "$TMP/err" "recovery takes no --policy" "bench recovery -p: the message"
expect_rc 2 "bench recovery -t" "$DELOG" bench --workload recovery -t 2
expect_in "$TMP/err" "recovery takes no --threads" "bench recovery -t: the message"
expect_rc 2 "bench -s without --workload" "$DELOG" bench -s 16M
expect_in "$TMP/err" "give --workload first" "bench -s without --workload: the message"
expect_rc 2 "crash -n" "$DELOG" crash --workload small -n 5
expect_in "$TMP/err" "usage: delog crash" "crash -n: the usage"
expect_rc 2 "crash -s" "$DELOG" crash --workload small -s 5
expect_in "$TMP/err" "usage: delog crash" "crash -s: the usage"

# ---- 3. crash's long forms ----------------------------------------------------------------
expect_rc 0 "crash --states --seed" "$DELOG" crash --workload small --states 20 --seed 3 \
	--jobs 1 --json
json_is "$TMP/out" 'd["seed"] == 3' "crash --seed 3"
json_is "$TMP/out" 'd["violations"] == 0 and d["states_target"] == 20' "crash --states 20, no violation"

finish "options_test"
