# CLI tests: connections still in their handshake cannot shut an honest
# worker out.  fixture_flood keeps 8 idle sockets open from each of 8
# loopback addresses (127.0.0.2..9: 64 against the coordinator's 32
# pending places), opening again each one the coordinator closes; a worker
# from another address (127.0.0.1) must still join and finish the run
# while the flood goes on.  Needs no token on the flood's side: its
# sockets never send a byte.

# flood_run ARGS...: the coordinator (w_coord ARGS, test_worker.sh), the
# flood against it, then the honest worker with WORKER_ARGS; checks that
# the worker joined, the run finished while the flood was still running,
# and prints how long the worker took to join.
flood_run() {
	local flood a t0 t1
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 4 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --db r.db "$@"
	# the flood outlives any wait below: the run must end while it runs
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_flood" "$PORT" 8 8 120 >flood.out 2>flood.err &
	flood=$!
	for _ in $(seq 100); do
		grep -q flooding flood.out && break
		kill -0 $flood 2>/dev/null || break
		sleep 0.05
	done
	grep -q flooding flood.out || fail "no flood: $(cat flood.err)"
	# the coordinator's 32 places are full: it is dropping flood sockets
	for _ in $(seq 200); do
		grep -q "in their handshake" coord.err && break
		sleep 0.05
	done
	grep -q "in their handshake" coord.err || fail "the flood did not fill the places: $(cat coord.err)"
	t0=$(date +%s.%N)
	w_worker --name honest -q --retry-for 100 "${WORKER_ARGS[@]}"; a=$!
	for _ in $(seq 1200); do
		grep -q "worker 'honest' joined" coord.err && break
		kill -0 $a 2>/dev/null || break
		sleep 0.05
	done
	t1=$(date +%s.%N)
	w_wait $a 110; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID 10; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	kill -0 $flood 2>/dev/null || fail "the run ended only after the flood: $(cat flood.out)"
	kill $flood
	grep -q "worker 'honest' joined" coord.err || fail "the worker never joined: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done' and worker='honest'")" = 4 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
	printf "    the worker joined after %.2f s under the flood (load: %s)\n" "$(echo "$t1 - $t0" | bc)" \
		"$(cut -d" " -f1-3 /proc/loadavg)" >&2
}

flood_check_addresses() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.9", 0))' 2>/dev/null ||
		skip "127.0.0.9 cannot be bound here"
}

# With a token: the flood's sockets wait in their TLS handshake.
test_flood_tls_worker_joins() {
	flood_check_addresses
	(umask 077; head -c 32 /dev/urandom | base64 >tok)
	WORKER_ARGS=(--token-file tok)
	flood_run --token-file tok
}

# Without a token (loopback): the flood's sockets wait before their HELLO.
test_flood_plain_worker_joins() {
	flood_check_addresses
	WORKER_ARGS=()
	flood_run
}
