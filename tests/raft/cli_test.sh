#!/bin/sh
# cli_test.sh KV DIR - raft.kv.cli: delog-raft-kv's command line: --help, usage errors
# (exit 2, with the reason), a port in use, a bad directory and a refused log (exit 1,
# naming them).
# Ports: a random base checked free (kv_lib.sh kv_ports), never a fixed one.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kv_lib.sh"
KV=$1
TMP=$(mktemp -d "$2/raft-cli.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
kv_ports
C=$CLUSTER

expect_rc 0 "--help" kv_bounded --help
expect_in "$TMP/out" "usage: delog-raft-kv" "--help"
expect_in "$TMP/out" "--storage" "--help"
expect_in "$TMP/out" "Exit status" "--help"
# delog's vocabulary: -p/--policy and -s/--size as in `delog`; the old names are gone
expect_in "$TMP/out" "-p, --policy" "--help"
expect_in "$TMP/out" "-s, --size" "--help"
expect_rc 2 "old --flush" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" --flush sync
expect_rc 2 "old --log-size" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" --log-size 8M
expect_rc 2 "-s is the size" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" -s uv
expect_in "$TMP/err" "--size" "-s is the size"
expect_rc 2 "no arguments" kv_bounded
expect_in "$TMP/err" "required" "no arguments"
expect_rc 2 "unknown option" kv_bounded --bogus
expect_rc 2 "bad cluster" kv_bounded --id 1 --cluster "1=127.0.0.1" --dir "$TMP/d"
expect_in "$TMP/err" "bad --cluster" "bad cluster"
expect_rc 2 "bad cluster id" kv_bounded --id 1 --cluster "x=127.0.0.1:$P1" --dir "$TMP/d"
expect_in "$TMP/err" "not a node id" "bad cluster id"
expect_rc 2 "duplicate id" kv_bounded --id 1 --cluster "1=127.0.0.1:$P1,1=127.0.0.1:$P2" --dir "$TMP/d"
expect_in "$TMP/err" "listed twice" "duplicate id"
expect_rc 2 "hostname" kv_bounded --id 1 --cluster "1=localhost:$P1" --dir "$TMP/d"
expect_in "$TMP/err" "not IPV4:PORT" "hostname"
expect_rc 2 "bad IPv4" kv_bounded --id 1 --cluster "1=300.1.1.1:$P1" --dir "$TMP/d"
expect_rc 2 "empty entry" kv_bounded --id 1 --cluster "1=127.0.0.1:$P1,,2=127.0.0.1:$P2" --dir "$TMP/d"
expect_in "$TMP/err" "empty entry" "empty entry"
expect_rc 2 "trailing comma" kv_bounded --id 1 --cluster "1=127.0.0.1:$P1," --dir "$TMP/d"
expect_rc 2 "policy sync with uv" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" --storage uv --policy sync
expect_rc 2 "port out of range" kv_bounded --id 1 --cluster "1=127.0.0.1:65000" --dir "$TMP/d"
expect_rc 2 "id not in cluster" kv_bounded --id 4 --cluster "$C" --dir "$TMP/d"
expect_in "$TMP/err" "not in --cluster" "id not in cluster"
expect_rc 2 "address mismatch" kv_bounded --id 1 --address 127.0.0.1:9 --cluster "$C" --dir "$TMP/d"
expect_rc 2 "bad storage" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" --storage sqlite
expect_rc 2 "policy none" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" --policy none
expect_rc 2 "policy with uv" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d" --storage uv --policy single
: >"$TMP/file"
expect_rc 1 "dir is a file" kv_bounded --id 1 --cluster "$C" --dir "$TMP/file"
expect_in "$TMP/err" "$TMP/file" "dir is a file"
# a log the io refuses: the daemon gives the io's reason (raft_bootstrap fills no
# message of its own; before, "bootstrap in DIR: " ended there)
mkdir -p "$TMP/bad" && yes "not a delog log" | head -c 1048576 >"$TMP/bad/delog.log"
expect_rc 1 "refused log" kv_bounded --id 1 --cluster "$C" --dir "$TMP/bad"
expect_in "$TMP/err" "DELOG_ENOTLOG" "refused log"

# a port in use: hold the client port (Raft port + 1000), then the Raft port
command -v python3 >/dev/null || skip "python3 is needed to hold a port"
kv_hold $((P1 + 1000))
expect_rc 1 "client port in use" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d1"
expect_in "$TMP/err" "127.0.0.1:$((P1 + 1000))" "client port in use"
expect_in "$TMP/err" "in use" "client port in use"
kill "$HPID"; wait "$HPID" 2>/dev/null
kv_hold "$P1"
expect_rc 1 "Raft port in use" kv_bounded --id 1 --cluster "$C" --dir "$TMP/d2"
expect_in "$TMP/err" "127.0.0.1:$P1" "Raft port in use"
expect_in "$TMP/err" "in use" "Raft port in use"
kill "$HPID"; wait "$HPID" 2>/dev/null
finish raft.kv.cli
