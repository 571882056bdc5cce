# kv_lib.sh - helpers of the delog-raft-kv process tests (cli, config, kill and deposed),
# sourced after ../lib.sh; KV (the daemon), CLIENT (kvclient.py) and TMP set before use.
#
#   kv_ports             pick this run's Raft ports P1..P3 (clients at +1000, all below
#                        Linux's ephemeral range, 32768 up, where outgoing connections
#                        could hold them), all six free when chosen (bound and released
#                        once), and set CLUSTER and NODES (client addresses);
#                        PY is the python3 interpreter itself (no shim: it runs often)
#   kv_start I [ARGS]    start node I (pid in $TMP/pid.I, stderr appended to $TMP/log.I)
#   kv_kill I            SIGKILL node I and reap it
#   kv_stop_all          SIGTERM every running node; a node that does not exit 0 fails
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
	# a base whose six ports (Raft P1..P3, clients +1000) are free now: drawn, then
	# checked by binding each one, up to 50 draws
	n=0
	while :; do
		base=$((10000 + $(rnd 100) * 100))
		[ -n "$PY" ] || break # no python3: drawn only (the tests that need it skip)
		"$PY" -c 'import socket,sys
b = int(sys.argv[1])
for p in (b + 1, b + 2, b + 3, b + 1001, b + 1002, b + 1003):
    s = socket.socket(); s.bind(("127.0.0.1", p)); s.close()' "$base" 2>/dev/null && break
		n=$((n + 1))
		[ $n -lt 50 ] || { fail "no free ports found in 50 draws"; break; }
	done
	P1=$((base + 1)); P2=$((base + 2)); P3=$((base + 3))
	CLUSTER="1=127.0.0.1:$P1,2=127.0.0.1:$P2,3=127.0.0.1:$P3"
	NODES="127.0.0.1:$((P1 + 1000)),127.0.0.1:$((P2 + 1000)),127.0.0.1:$((P3 + 1000))"
}

kv_start() {
	i=$1
	shift
	LIBRAFT_TRACE=${KV_TRACE:-} "$KV" --id "$i" --cluster "$CLUSTER" --dir "$TMP/n$i" "$@" >>"$TMP/log.$i" 2>&1 &
	echo $! >"$TMP/pid.$i"
}

kv_kill() {
	if [ -s "$TMP/pid.$1" ]; then
		kill -KILL "$(cat "$TMP/pid.$1")" 2>/dev/null
		wait "$(cat "$TMP/pid.$1")" 2>/dev/null
		: >"$TMP/pid.$1"
	fi
}

kv_stop_all() {
	for i in 1 2 3; do
		[ -s "$TMP/pid.$i" ] && kill -TERM "$(cat "$TMP/pid.$i")" 2>/dev/null
	done
	for i in 1 2 3; do
		if [ -s "$TMP/pid.$i" ]; then
			wait "$(cat "$TMP/pid.$i")"
			rc=$?
			[ "$rc" -eq 0 ] || fail "node $i exited $rc after SIGTERM (see $TMP/log.$i)"
			: >"$TMP/pid.$i"
		fi
	done
}

kv_up() {
	"$PY" "$CLIENT" status "$(echo "$NODES" | cut -d, -f"$1")" --wait 10 >/dev/null
}

kv_leader() {
	"$PY" "$CLIENT" leader "$NODES" --wait 15
}

kv_cleanup() {
	for i in 1 2 3; do
		[ -s "$TMP/pid.$i" ] && kill -KILL "$(cat "$TMP/pid.$i")" 2>/dev/null
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
