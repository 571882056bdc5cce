# kv_lib.sh - helpers of the delog-raft-kv process tests (cli, config, kill, deposed, full
# and members),
# sourced after ../lib.sh; KV (the daemon), CLIENT (kvclient.py) and TMP set before use.
#
#   kv_ports [N]         pick this run's Raft ports P1..PN (N: 3 unless given, at most 9;
#                        clients at +1000, all below Linux's ephemeral range, 32768 up,
#                        where outgoing connections could hold them), all free when
#                        chosen (bound and released once), and set CLUSTER and NODES
#                        (client addresses) of nodes 1-3, ALL (every client address);
#                        PY is the python3 interpreter itself (no shim: it runs often)
#   kv_start I [ARGS]    start node I of CLUSTER (pid in $TMP/pid.I, stderr appended to
#                        $TMP/log.I)
#   kv_join I [ARGS]     start node I (any of 1..N) in an empty $TMP/nI with --join
#                        $JOIN (Raft addresses of members), pid and log as kv_start
#   kv_raft I, kv_client I   node I's Raft and client addresses
#   kv_kill I            SIGKILL node I and reap it
#   kv_stop I            SIGTERM node I; fails unless it exits 0
#   kv_stop_all          kv_stop every running node
#   kv_up I              wait (10 s at most) until node I answers STATUS
#   kv_leader            print the leader's id, waiting up to 15 s for one (0: none)
#   kv_hold PORT         a python3 listener on 127.0.0.1:PORT (pid in HPID), listening
#                        before it returns, however loaded the machine
#   kv_bounded ARGS      the daemon where a check expects it to exit: killed after 30 s
#                        (status 124, a failed check) if it starts serving instead
#   rnd N                a random number in 0..N-1
# Processes are only ever signalled by the pids this script recorded.
# POSIX sh.

rnd() {
	r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
	echo $((r % $1))
}

kv_ports() {
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
	KV_N=${1:-3}
	# a base whose ports (Raft P1..PN, clients +1000) are free now: drawn, then checked
	# by binding each one, up to 50 draws
	n=0
	while :; do
		base=$((10000 + $(rnd 100) * 100))
		[ -n "$PY" ] || break # no python3: drawn only (the tests that need it skip)
		"$PY" -c 'import socket,sys
b, n = int(sys.argv[1]), int(sys.argv[2])
for p in [b + i for i in range(1, n + 1)] + [b + 1000 + i for i in range(1, n + 1)]:
    s = socket.socket(); s.bind(("127.0.0.1", p)); s.close()' "$base" "$KV_N" 2>/dev/null && break
		n=$((n + 1))
		[ $n -lt 50 ] || { fail "no free ports found in 50 draws"; break; }
	done
	KV_BASE=$base
	P1=$((base + 1)); P2=$((base + 2)); P3=$((base + 3))
	CLUSTER="1=127.0.0.1:$P1,2=127.0.0.1:$P2,3=127.0.0.1:$P3"
	NODES="127.0.0.1:$((P1 + 1000)),127.0.0.1:$((P2 + 1000)),127.0.0.1:$((P3 + 1000))"
	ALL=
	i=1
	while [ $i -le "$KV_N" ]; do
		ALL="$ALL${ALL:+,}$(kv_client $i)"
		i=$((i + 1))
	done
}

kv_raft() {
	echo "127.0.0.1:$((KV_BASE + $1))"
}

kv_client() {
	echo "127.0.0.1:$((KV_BASE + 1000 + $1))"
}

kv_start() {
	i=$1
	shift
	LIBRAFT_TRACE=${KV_TRACE:-} "$KV" --id "$i" --cluster "$CLUSTER" --dir "$TMP/n$i" "$@" >>"$TMP/log.$i" 2>&1 &
	echo $! >"$TMP/pid.$i"
}

kv_join() {
	i=$1
	shift
	"$KV" --id "$i" --address "$(kv_raft "$i")" --join "$JOIN" --dir "$TMP/n$i" "$@" >>"$TMP/log.$i" 2>&1 &
	echo $! >"$TMP/pid.$i"
}

kv_kill() {
	if [ -s "$TMP/pid.$1" ]; then
		kill -KILL "$(cat "$TMP/pid.$1")" 2>/dev/null
		wait "$(cat "$TMP/pid.$1")" 2>/dev/null
		: >"$TMP/pid.$1"
	fi
}

kv_stop() {
	[ -s "$TMP/pid.$1" ] && kill -TERM "$(cat "$TMP/pid.$1")" 2>/dev/null
	kv_reap "$1"
}

# wait for node I (signalled once: a second SIGTERM could find its handler closed)
kv_reap() {
	if [ -s "$TMP/pid.$1" ]; then
		wait "$(cat "$TMP/pid.$1")"
		rc=$?
		[ "$rc" -eq 0 ] || fail "node $1 exited $rc after SIGTERM (see $TMP/log.$1)"
		: >"$TMP/pid.$1"
	fi
}

kv_stop_all() {
	for f in "$TMP"/pid.*; do
		[ -s "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null
	done
	for f in "$TMP"/pid.*; do
		[ -e "$f" ] && kv_reap "${f##*.}"
	done
}

kv_up() {
	"$PY" "$CLIENT" status "$(kv_client "$1")" --wait 10 >/dev/null
}

kv_leader() {
	"$PY" "$CLIENT" leader "$NODES" --wait 15
}

kv_cleanup() {
	for f in "$TMP"/pid.*; do
		[ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	[ -n "${LPID:-}" ] && kill -KILL "$LPID" 2>/dev/null
	wait 2>/dev/null
	if [ "$FAILS" -eq 0 ]; then
		rm -rf "$TMP"
	else
		echo "kept $TMP for inspection" >&2
	fi
}

kv_hold() {
	: >"$TMP/held"
	python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").write("held\n"); time.sleep(60)' "$1" "$TMP/held" &
	HPID=$!
	n=0
	while [ ! -s "$TMP/held" ] && [ $n -lt 600 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	[ -s "$TMP/held" ] || fail "could not hold port $1"
}

kv_bounded() {
	timeout 30 "$KV" "$@"
}
