#!/bin/sh
# full_test.sh KV CLIENT DIR - raft.kv.full: a full delog log does not take the cluster down.
#
# 1. Three nodes with 8 MiB logs that snapshot only every 100,000 entries
#    (--snapshot-entries-only): 80,000-byte values fill every log.  No node may stop
#    (a follower whose append finds no space waits for it, it does not fail), and the
#    leader must answer SETs "ERR log-full" once its appends wait.
# 2. Restarted with the defaults (snapshots follow the log's size; node 1 with --size 16M,
#    so its log moves to a larger one): a leader is elected
#    (term and vote take the log's reserve), it commits (its barrier takes the reserve
#    too), the entries are applied and snapshotted, space is released, and new SETs of
#    the same size are answered OK.
# 3. Every SET answered OK in either phase is readable with its value, and all three
#    maps are identical.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kv_lib.sh"
KV=$1
CLIENT=$2
TMP=$(mktemp -d "$3/raft-full.XXXXXX") || exit 1
LPID=
trap kv_cleanup EXIT
command -v python3 >/dev/null || skip "python3 is needed for the client"
kv_ports
OPTS="--size 8M --election-timeout 600 --heartbeat 60"

for i in 1 2 3; do kv_start $i $OPTS --snapshot-every 100000 --snapshot-entries-only; done
[ "$(kv_leader)" != 0 ] || { fail "no leader elected"; finish raft.kv.full; }
"$PY" "$CLIENT" load "$NODES" --log "$TMP/ok" --inflight 8 --duration 15 --size 80000 \
	--prefix a 2>"$TMP/load1.err"
full=$(wc -l <"$TMP/ok")
echo "raft.kv.full: phase 1: $full SETs of 80,000 bytes answered OK before the logs filled"
[ "$full" -ge 50 ] || fail "only $full SETs answered OK before the logs filled"
"$PY" "$CLIENT" set "$NODES" probe "$(head -c 80000 /dev/zero | tr '\0' v)" --once \
	--timeout 5 >"$TMP/probe" 2>&1
expect_in "$TMP/probe" "log-full" "a SET on a full log"
for i in 1 2 3; do
	kill -0 "$(cat "$TMP/pid.$i")" 2>/dev/null || fail "node $i stopped on a full log (see $TMP/log.$i)"
	if grep -q "Raft stopped" "$TMP/log.$i"; then fail "node $i: $(grep 'Raft stopped' "$TMP/log.$i" | head -1)"; fi
done
for i in 1 2 3; do kv_kill $i; done

# node 1 as the message advises ("make it larger"): its log moves to a 16 MiB one
kv_start 1 --size 16M --election-timeout 600 --heartbeat 60
for i in 2 3; do kv_start $i $OPTS; done
[ "$(kv_leader)" != 0 ] || fail "no leader elected after the restart of full logs"
"$PY" "$CLIENT" load "$NODES" --log "$TMP/ok" --inflight 8 --duration 15 --size 80000 \
	--prefix b 2>"$TMP/load2.err"
after=$(($(wc -l <"$TMP/ok") - full))
echo "raft.kv.full: phase 2: $after SETs of 80,000 bytes answered OK after the restart"
[ "$after" -ge 50 ] || fail "only $after SETs answered OK after the restart"
"$PY" "$CLIENT" verify "$NODES" --log "$TMP/ok" --timeout 60 || fail "verification failed"
for i in 1 2 3; do
	if grep -q "Raft stopped" "$TMP/log.$i"; then fail "node $i: $(grep 'Raft stopped' "$TMP/log.$i" | head -1)"; fi
done
sz=$(stat -c %s "$TMP/n1/delog.log")
[ "$sz" -eq $((16 * 1048576 + 4096)) ] || fail "node 1's log is $sz bytes, not 16 MiB and its superblock"
[ -e "$TMP/n1/delog.log.grow" ] && fail "node 1 kept delog.log.grow"
kv_stop_all
finish raft.kv.full
