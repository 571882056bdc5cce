#!/bin/sh
# deposed_test.sh KV CLIENT DIR - raft.kv.deposed: a deposed leader's stale suffix.
#
# Three nodes; 20 keys committed.  Both followers are SIGKILLed and at once 10 SETs of
# "stale" keys go to the leader, which appends them to its log but cannot commit them
# (STATUS must show its last index past its commit index); then the leader is killed
# too.  The two followers restart, elect a leader among themselves and commit 30 "new"
# keys, which take the indexes the stale entries had.  The old leader restarts as a
# follower: its stale suffix must be truncated and never applied.  Checked: every new
# and base key readable, no stale key readable through the leader, all three maps
# identical (so the old leader applied exactly the committed log), every node exits 0.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kv_lib.sh"
KV=$1
CLIENT=$2
TMP=$(mktemp -d "$3/raft-deposed.XXXXXX") || exit 1
LPID=
trap kv_cleanup EXIT
command -v python3 >/dev/null || skip "python3 is needed for the client"
kv_ports
OPTS="--election-timeout 1000 --heartbeat 50"
for i in 1 2 3; do kv_start $i $OPTS; done
old=$(kv_leader)
[ "$old" != 0 ] || { fail "no leader elected"; finish raft.kv.deposed; }
i=0
while [ $i -lt 20 ]; do
	"$PY" "$CLIENT" set "$NODES" "base-$i" "b$i" || fail "SET base-$i"
	echo "base-$i b$i" >>"$TMP/ok"
	i=$((i + 1))
done
f1=$((old % 3 + 1))
f2=$((f1 % 3 + 1))
kv_kill $f1
kv_kill $f2
lines=
i=0
while [ $i -lt 10 ]; do
	lines="$lines SET stale-$i s$i"
	i=$((i + 1))
done
addr=$(echo "$NODES" | cut -d, -f"$old")
# shellcheck disable=SC2086 (one word per request line is what we want split here)
set -- $lines
"$PY" "$CLIENT" send "$addr" "$1 $2 $3" "$4 $5 $6" "$7 $8 $9" --wait 0.3
shift 9
while [ $# -ge 3 ]; do
	"$PY" "$CLIENT" send "$addr" "$1 $2 $3" --wait 0.05
	shift 3
done
st=$("$PY" "$CLIENT" status "$addr")
echo "old leader $old before its kill: $st"
last=$(echo "$st" | tr ' ' '\n' | sed -n 's/^last=//p')
commit=$(echo "$st" | tr ' ' '\n' | sed -n 's/^commit=//p')
[ -n "$last" ] && [ -n "$commit" ] && [ "$last" -gt "$commit" ] ||
	fail "the old leader holds no uncommitted entries (STATUS: $st)"
kv_kill "$old"
stale=$(seq 0 9 | sed 's/^/stale-/' | tr '\n' ' ')

kv_start $f1 $OPTS
kv_start $f2 $OPTS
new=$(kv_leader)
[ "$new" != 0 ] && [ "$new" != "$old" ] || fail "no new leader among $f1 and $f2 (got $new)"
i=0
while [ $i -lt 30 ]; do
	"$PY" "$CLIENT" set "$NODES" "new-$i" "n$i" || fail "SET new-$i"
	echo "new-$i n$i" >>"$TMP/ok"
	i=$((i + 1))
done
st=$("$PY" "$CLIENT" status "$(echo "$NODES" | cut -d, -f"$new")")
echo "new leader $new: $st"
[ "$(echo "$st" | tr ' ' '\n' | sed -n 's/^commit=//p')" -ge "$last" ] ||
	fail "the new entries do not reach the stale entries' indexes ($st, stale up to $last)"
kv_start "$old" $OPTS
kv_up "$old" || fail "old leader did not restart"
# shellcheck disable=SC2086
"$PY" "$CLIENT" verify "$NODES" --log "$TMP/ok" --absent $stale --timeout 30 ||
	fail "verification failed"
kv_stop_all
finish raft.kv.deposed
