#!/bin/sh
# kill_test.sh KV CLIENT DIR [KILLS] - raft.kv.kill: load and kill.
#
# Three delog-raft-kv nodes on delog storage (snapshots every 200 entries, so snapshots
# and log releases happen under the kills); a client keeps 32 SETs of unique keys in
# flight and records every key answered OK.  KILLS times (default 20), at a random
# moment, one node is SIGKILLed (the leader every other time, so at least half) and
# restarted.  Afterwards every SET answered OK must be readable with its value through
# the leader, all three maps must be identical, and every node must exit 0 on SIGTERM.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kv_lib.sh"
KV=$1
CLIENT=$2
KILLS=${4:-20}
TMP=$(mktemp -d "$3/raft-kill.XXXXXX") || exit 1
LPID=
trap kv_cleanup EXIT
command -v python3 >/dev/null || skip "python3 is needed for the client"
kv_ports
OPTS="--snapshot-every 200 --trailing 50 --election-timeout 600 --heartbeat 60 --size 16M"
for i in 1 2 3; do kv_start $i $OPTS; done
[ "$(kv_leader)" != 0 ] || { fail "no leader elected"; finish raft.kv.kill; }

"$PY" "$CLIENT" load "$NODES" --log "$TMP/ok" --inflight 32 --duration 300 2>"$TMP/load.err" &
LPID=$!
leader_kills=0
k=1
while [ $k -le "$KILLS" ]; do
	sleep "0.$((2 + $(rnd 5)))"
	victim=$(($(rnd 3) + 1))
	l=$(kv_leader)
	[ $((k % 2)) -eq 1 ] && [ "$l" != 0 ] && victim=$l
	[ "$victim" = "$l" ] && leader_kills=$((leader_kills + 1))
	kv_kill "$victim"
	sleep "0.$(($(rnd 3) + 1))"
	kv_start "$victim" $OPTS
	kv_up "$victim" || fail "node $victim did not come back after kill $k (see $TMP/log.$victim)"
	k=$((k + 1))
done
sleep 1
kill -TERM "$LPID"
wait "$LPID"
LPID=
oks=$(wc -l <"$TMP/ok")
echo "raft.kv.kill: $KILLS kills ($leader_kills of the leader), $oks SETs answered OK"
[ "$leader_kills" -ge $((KILLS / 2)) ] || fail "only $leader_kills of $KILLS kills hit the leader"
[ "$oks" -ge 200 ] || fail "only $oks SETs answered OK: the cluster made too little progress"
"$PY" "$CLIENT" verify "$NODES" --log "$TMP/ok" --timeout 60 || fail "verification failed"
kv_stop_all
finish raft.kv.kill
