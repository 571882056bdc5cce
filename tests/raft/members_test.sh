#!/bin/sh
# members_test.sh KV CLIENT DIR grow|replace|move - raft.kv.grow, raft.kv.replace and
# raft.kv.move: membership changes of delog-raft-kv under a client's load, through
# delog-raft-kvclient add, promote and remove.  In each, every SET answered OK must be
# readable through the leader afterwards and every member's map identical.
#   grow     one node, then 3, then 5 (each joins empty with --join, is added and
#            promoted); a node that joined restarts with its own command; the first
#            node, whose --cluster the cluster has moved on from, restarts only without
#            it, and knows every voter as seen again; an empty node with an outdated
#            --cluster is refused
#   replace  three nodes; node 2's log is damaged: its start is refused with the io's
#            reason; wiped, it is refused again (a voter the cluster has seen, with
#            --cluster or --join: it forgot its vote), naming the safe procedure; the
#            procedure (remove 2, join 4 empty, add, promote) restores three voters
#   move     three nodes on ports P1-P3 move one by one to P4-P6 (new ids 4-6 join,
#            the old ones are removed and stopped; the leader first whenever an old
#            node leads)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/kv_lib.sh"
KV=$1
CLIENT=$2
MODE=$4
TMP=$(mktemp -d "$3/raft-$MODE.XXXXXX") || exit 1
LPID=
trap kv_cleanup EXIT
command -v python3 >/dev/null || skip "python3 is needed for the client"
OPTS="--snapshot-every 200 --trailing 50 --election-timeout 600 --heartbeat 60 --size 16M"

cl() {
	"$PY" "$CLIENT" "$@"
}

# add I: node I (started with kv_join) becomes a voter
add() {
	kv_up "$1" || fail "node $1 did not answer after --join (see $TMP/log.$1)"
	cl add "$ALL" "$1" "$(kv_raft "$1")" >/dev/null || fail "add $1"
	cl promote "$ALL" "$1" >/dev/null || fail "promote $1"
}

# seen I: wait (15 s at most) until the cluster has recorded voter I as taking part
seen() {
	n=0
	until cl members "$ALL" | grep -q "^$1 .* voter seen"; do
		n=$((n + 1))
		[ $n -lt 75 ] || { fail "node $1 never recorded as seen"; return; }
		sleep 0.2
	done
}

load_start() {
	"$PY" "$CLIENT" load "$ALL" --log "$TMP/ok" --inflight 16 --duration 300 2>"$TMP/load.err" &
	LPID=$!
	sleep 1
}

# verify CLIENTS VOTERS: stop the load, check every acknowledged SET and the maps, and
# that the voters are exactly VOTERS ("1 2 3")
verify() {
	sleep 1
	kill -TERM "$LPID"
	wait "$LPID"
	LPID=
	oks=$(wc -l <"$TMP/ok")
	[ "$oks" -ge 100 ] || fail "only $oks SETs answered OK: the cluster made too little progress"
	cl verify "$1" --log "$TMP/ok" --timeout 60 || fail "verification failed"
	got=$(cl members "$1" | awk '$3 == "voter" { printf "%s%s", s, $1; s = " " }')
	[ "$got" = "$2" ] || fail "voters are '$got', expected '$2'"
	echo "raft.kv.$MODE: $oks SETs answered OK, voters $got"
}

case $MODE in
grow)
	kv_ports 5
	"$KV" --id 1 --cluster "1=$(kv_raft 1)" --dir "$TMP/n1" $OPTS >>"$TMP/log.1" 2>&1 &
	echo $! >"$TMP/pid.1"
	kv_up 1 || fail "node 1 did not answer (see $TMP/log.1)"
	load_start
	expect_rc 1 "an empty node with an outdated --cluster" \
		kv_bounded --id 2 --cluster "1=$(kv_raft 1),2=$(kv_raft 2)" --dir "$TMP/n2" $OPTS
	expect_in "$TMP/err" "it has changed since, and a node added to it starts with --join" \
		"outdated --cluster"
	JOIN=$(kv_raft 1)
	for i in 2 3; do
		kv_join $i $OPTS
		add $i
	done
	JOIN="$(kv_raft 1),$(kv_raft 2),$(kv_raft 3)"
	for i in 4 5; do
		kv_join $i $OPTS
		add $i
	done
	# node 3 restarts with the command it joined with; node 1 only without --cluster
	kv_stop 3
	kv_join 3 $OPTS
	kv_up 3 || fail "node 3 did not restart with its --join command (see $TMP/log.3)"
	kv_stop 1
	expect_rc 1 "node 1 restarted with its first --cluster" \
		kv_bounded --id 1 --cluster "1=$(kv_raft 1)" --dir "$TMP/n1" $OPTS
	expect_in "$TMP/err" "restart this node with --address instead of --cluster" \
		"node 1's old --cluster"
	"$KV" --id 1 --address "$(kv_raft 1)" --dir "$TMP/n1" $OPTS >>"$TMP/log.1" 2>&1 &
	echo $! >"$TMP/pid.1"
	kv_up 1 || fail "node 1 did not restart with --address (see $TMP/log.1)"
	# the voters seen, kept in snapshots and entries, are node 1's again after restart
	n=0
	until [ "$(cl members "$(kv_client 1)" | grep -c ' voter seen$')" = 5 ]; do
		n=$((n + 1))
		[ $n -lt 75 ] || { fail "node 1 lost its seen voters across a restart"; break; }
		sleep 0.2
	done
	verify "$ALL" "1 2 3 4 5"
	;;
replace)
	kv_ports 4
	for i in 1 2 3; do kv_start $i $OPTS; done
	[ "$(kv_leader)" != 0 ] || fail "no leader elected"
	load_start
	seen 2
	kv_kill 2
	# the superblock overwritten: recovery refuses the log, and the daemon says why
	dd if=/dev/urandom of="$TMP/n2/delog.log" bs=4096 count=1 conv=notrunc 2>/dev/null
	expect_rc 1 "a damaged log" kv_bounded --id 2 --cluster "$CLUSTER" --dir "$TMP/n2" $OPTS
	expect_in "$TMP/err" "delog" "the io's reason"
	grep -q ': $' "$TMP/err" && fail "the refusal ends in an empty reason: $(cat "$TMP/err")"
	rm -rf "$TMP/n2"
	expect_rc 1 "node 2 wiped, with --cluster" \
		kv_bounded --id 2 --cluster "$CLUSTER" --dir "$TMP/n2" $OPTS
	expect_in "$TMP/err" "remove $(kv_client 1) 2" "the safe procedure"
	expect_rc 1 "node 2 wiped, with --join" kv_bounded --id 2 --address "$(kv_raft 2)" \
		--join "$(kv_raft 3)" --dir "$TMP/n2" $OPTS
	expect_in "$TMP/err" "as a voter that has taken part" "wiped voter joining"
	[ -e "$TMP/n2/delog.log" ] && fail "a refused start wrote $TMP/n2/delog.log"
	cl remove "$ALL" 2 >/dev/null || fail "remove 2"
	JOIN="$(kv_raft 1),$(kv_raft 3)"
	kv_join 4 $OPTS
	add 4
	verify "$(kv_client 1),$(kv_client 3),$(kv_client 4)" "1 3 4"
	;;
move)
	kv_ports 6
	for i in 1 2 3; do kv_start $i $OPTS; done
	[ "$(kv_leader)" != 0 ] || fail "no leader elected"
	load_start
	leaders=0
	old="1 2 3"
	for j in 4 5 6; do
		JOIN=
		for m in $old; do JOIN="$JOIN${JOIN:+,}$(kv_raft "$m")"; done
		kv_join $j $OPTS
		add $j
		# the leader goes first whenever an old node leads
		l=$(cl leader "$ALL" --wait 15)
		victim=${old%% *}
		for m in $old; do [ "$m" = "$l" ] && victim=$m && leaders=$((leaders + 1)); done
		cl remove "$ALL" "$victim" >/dev/null || fail "remove $victim"
		kv_stop "$victim"
		old=$(echo " $old " | sed "s/ $victim / /; s/^ //; s/ $//")
	done
	verify "$(kv_client 4),$(kv_client 5),$(kv_client 6)" "4 5 6"
	echo "raft.kv.move: the leader was removed $leaders time(s)"
	;;
*)
	echo "usage: members_test.sh KV CLIENT DIR grow|replace|move" >&2
	exit 2
	;;
esac
kv_stop_all
finish "raft.kv.$MODE"
