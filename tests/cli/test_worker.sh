# cfl worker and --listen: remote workers over loopback TCP.  Each test
# starts a coordinator (`cfl repeat --listen 127.0.0.1:0 --num-jobs 0`) in
# the background, reads the port from its `cfl worker` line, and bounds
# every process with `timeout`.  Small data (iris), fast models.

# w_coord ARGS...: starts `cfl repeat ARGS` (`cfl $W_CMD ARGS` when W_CMD
# is set) in the background; sets COORD_PID and PORT (from the printed
# worker line).  With W_TIMEOUT=S it runs under `timeout S`: COORD_PID is
# then timeout's pid and COORD_CFL the cfl process (to stop and continue).
w_coord() {
	# whatever a failed test leaves running is killed with it
	trap 'kill -9 $(jobs -p) 2>/dev/null' EXIT
	# an old coord.err would give an old port before the new one is written
	rm -f coord.out coord.err
	${W_TIMEOUT:+timeout -k 5 $W_TIMEOUT} "$CFL" "${W_CMD:-repeat}" "$@" >coord.out 2>coord.err &
	COORD_PID=$!
	COORD_CFL=$COORD_PID
	[ -n "${W_TIMEOUT:-}" ] && for _ in $(seq 50); do
		COORD_CFL=$(pgrep -P $COORD_PID) && break
		sleep 0.05
	done
	PORT=
	for _ in $(seq 100); do
		PORT=$(grep -o -m1 'connect 127.0.0.1:[0-9]*' coord.err 2>/dev/null | cut -d: -f2)
		[ -n "$PORT" ] && return 0
		kill -0 "$COORD_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "no worker line from the coordinator: $(cat coord.err)"
}

# w_wait PID [SECONDS]: waits (bounded) for a background process; sets w_rc.
w_wait() {
	local i
	for i in $(seq $((${2:-60} * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { kill -9 "$1"; fail "process $1 still running"; }
	wait "$1"; w_rc=$?
}

# w_worker ARGS...: a worker in the background (its pid in $!); the time
# limits are w_wait's and --retry-for's (generous: a loaded or
# sanitized coordinator may take seconds before it answers).
w_worker() {
	CFL_CACHE_DIR="$TMP/cache" "$CFL" worker --connect "127.0.0.1:$PORT" --retry-for 30 "$@" 2>>workers.err &
}

# w_until SQL VALUE DB: waits until the query gives VALUE.
w_until() {
	for _ in $(seq 150); do
		[ "$(sqlite3 "$3" "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	fail "'$1' never gave '$2' (last: $(sqlite3 "$3" "$1" 2>&1))"
}

w_table() { grep -E '^[|=-]' "$1"; }

test_worker_help_and_usage() {
	run "$CFL" worker --help
	expect_rc 0
	for o in --connect --jobs --token-file --cache-dir --name --retry-for Examples: ssh; do
		expect_out "$o"
	done
	run "$CFL" worker
	expect_rc 2
	expect_err "--connect HOST:PORT is required"
	run "$CFL" worker --connect nohostport
	expect_rc 2
	run "$CFL" worker --connect 10.1.2.3:7070
	expect_rc 2
	expect_err "needs --token-file"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --listen 0.0.0.0:0 --num-jobs 0
	expect_rc 2
	expect_err "needs --token-file"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --num-jobs 0
	expect_rc 2
	expect_err "--num-jobs 0 needs --listen"
	run "$CFL" repeat --help
	expect_out "--listen ADDR:PORT"
	# a token file others can read is refused on both sides
	head -c 32 /dev/urandom | base64 >tok
	chmod 644 tok
	run "$CFL" worker --connect 127.0.0.1:1 --token-file tok
	expect_rc 1
	expect_err "readable by others (mode 0644)"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --listen 127.0.0.1:0 --token-file tok
	expect_rc 1
	expect_err "chmod 600"
}

# Two workers finish a run; the table is the local run's.
test_worker_two_workers_same_table_as_local() {
	local args=("$ROOT/datasets/iris.csv" --models linear,baseline --bootstrap
		    --num-repeat 4 --seed 3 --metrics acc,logloss -q)
	run "$CFL" repeat "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	w_table <(echo "$out") >local.table
	w_coord "${args[@]}" --num-jobs 0 --listen 127.0.0.1:0 --db remote.db
	# the coordinator is paused while both workers connect (the kernel
	# queues their connections), so both are in, holding leases, before
	# the fast trials are over
	kill -STOP $COORD_PID
	# and the trials take 0.3 s each, so a worker whose handshake a loaded
	# machine delays still joins before the run is over
	export CFL_TEST_FAULT=slow
	w_worker --jobs 1 --name w1 -q; local a=$!
	w_worker --jobs 2 --name w2 -q; local b=$!
	unset CFL_TEST_FAULT
	for _ in $(seq 100); do
		[ "$(ss -Htn state established "( dport = :$PORT )" | wc -l)" -ge 2 ] && break
		sleep 0.05
	done
	kill -CONT $COORD_PID
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker 1 exit $w_rc: $(cat workers.err)"
	w_wait $b; [ "$w_rc" = 0 ] || fail "worker 2 exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	w_table coord.out >remote.table
	[ -s remote.table ] || fail "no table"
	diff local.table remote.table >&2 || fail "tables differ"
	grep -q "worker 'w1' joined" coord.err || fail "w1 never joined"
	grep -q "worker 'w2' joined" coord.err || fail "w2 never joined"
	[ "$(sqlite3 remote.db "select count(*) from trials where status='done'")" = 8 ] ||
		fail "not all done"
	# the dataset was fetched once into the shared cache, by its hash
	[ "$(ls cache | grep -c '\.data$')" = 1 ] || fail "cache: $(ls cache)"
	[ "$(ls cache | grep -c tmp)" = 0 ] || fail "temporary files left"
}

# Two workers finish a `cfl tune` run (the refit too); its whole output
# equals the local run's.  Each run in its own directory, so the saved
# model's path and the run name print the same.  Every process is bounded
# by `timeout`.
test_worker_tune_same_output_as_local() {
	local args=("$ROOT/datasets/iris.csv" --model linear --method random
		    --num-search 4 --num-repeat 2 --seed 3 --name t --db t.db -q)
	mkdir local remote
	(cd local && timeout -k 5 60 "$CFL" tune "${args[@]}" --num-jobs 2 >out 2>err) ||
		fail "local tune: $(cat local/err)"
	[ -s local/out ] || fail "no local output"
	cd remote
	W_CMD=tune W_TIMEOUT=60 w_coord "${args[@]}" --num-jobs 0 --listen 127.0.0.1:0
	local coord=$COORD_PID
	# paused while both workers connect, so both get trials
	kill -STOP $COORD_CFL
	CFL_CACHE_DIR="$TMP/cache" timeout -k 5 60 "$CFL" worker --connect "127.0.0.1:$PORT" \
		--retry-for 30 --jobs 1 --name w1 -q 2>>workers.err & local a=$!
	CFL_CACHE_DIR="$TMP/cache" timeout -k 5 60 "$CFL" worker --connect "127.0.0.1:$PORT" \
		--retry-for 30 --jobs 1 --name w2 -q 2>>workers.err & local b=$!
	for _ in $(seq 100); do
		[ "$(ss -Htn state established "( dport = :$PORT )" | wc -l)" -ge 2 ] && break
		sleep 0.05
	done
	kill -CONT $COORD_CFL
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker 1 exit $w_rc: $(cat workers.err)"
	w_wait $b; [ "$w_rc" = 0 ] || fail "worker 2 exit $w_rc: $(cat workers.err)"
	w_wait $coord; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ -s coord.out ] || fail "no output"
	diff ../local/out coord.out >&2 || fail "outputs differ"
	grep -q "worker 'w1' joined" coord.err || fail "w1 never joined"
	grep -q "worker 'w2' joined" coord.err || fail "w2 never joined"
	# 4 candidates x 2 seeds + the refit's 2, all run by the workers
	[ "$(sqlite3 t.db "select count(distinct worker) from trials where status='done'")" = 2 ] ||
		fail "trials: $(sqlite3 t.db 'select worker, status from trials')"
	[ -s t.cfl ] || fail "no model saved"
}

test_worker_tune_usage() {
	run "$CFL" tune --help
	expect_out "--listen ADDR:PORT"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --num-jobs 0
	expect_rc 2
	expect_err "--num-jobs 0 needs --listen"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --listen 0.0.0.0:0
	expect_rc 2
	expect_err "needs --token-file"
	echo 'x float 0 1' >p.params
	run "$CFL" tune --command 'echo {x}' --params p.params --listen 127.0.0.1:0
	expect_rc 2
	expect_err "--listen does not run --command trials"
}

# kill -9 a worker holding leases: they are requeued, the run completes,
# nothing is stored twice.
test_worker_kill9_requeues() {
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 4 --seed 5 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --heartbeat 0.5 --db r.db
	CFL_TEST_FAULT=hang w_worker --jobs 2 --name hanger -q; local a=$!
	w_until "select count(*) from trials where status='running' and worker='hanger'" 2 r.db
	w_worker --jobs 2 --name good -q; local b=$!
	local kids
	kids=$(pgrep -P $a)
	[ -n "$kids" ] || fail "the worker has no local processes"
	kill -9 $a
	wait $a 2>/dev/null
	w_wait $b; [ "$w_rc" = 0 ] || fail "good worker exit $w_rc"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done' and worker='good'")" = 4 ] ||
		fail "trials: $(sqlite3 r.db 'select * from trials')"
	[ "$(sqlite3 r.db "select count(*) from trials where attempt=2")" = 2 ] ||
		fail "requeued trials: $(sqlite3 r.db 'select * from trials')"
	[ "$(sqlite3 r.db "select count(*) from trial_attempts where worker='hanger'")" = 2 ] ||
		fail "attempts: $(sqlite3 r.db 'select * from trial_attempts')"
	# one set of metrics per trial: 4 trials x test x 2 metrics (nothing
	# holds out validation rows)
	[ "$(sqlite3 r.db "select count(*) from metrics")" = 8 ] || fail "metrics stored twice?"
	# the killed worker's local processes died with it (long since: the
	# run has completed; a moment more is allowed)
	local k st gone
	for k in $kids; do
		gone=
		for _ in $(seq 50); do
			st=$(ps -o stat= -p "$k" 2>/dev/null)
			[ -z "$st" ] || [[ "$st" == Z* ]] && { gone=1; break; }
			sleep 0.1
		done
		[ -n "$gone" ] || fail "local process $k outlived its worker ($st)"
	done
	return 0
}

# A SIGSTOPped worker sends no heartbeats: dropped, its trials requeued.
test_worker_sigstop_caught_by_heartbeats() {
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 --seed 5 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --heartbeat 0.2 --db r.db
	CFL_TEST_FAULT=hang w_worker --jobs 1 --name stopped -q --retry-for 10; local a=$!
	w_until "select count(*) from trials where status='running' and worker='stopped'" 1 r.db
	kill -STOP $a
	w_worker --jobs 1 --name good -q; local b=$!
	w_wait $b; [ "$w_rc" = 0 ] || fail "good worker exit $w_rc"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	grep -q "dropped worker 'stopped'.*missed heartbeats" coord.err ||
		fail "not caught: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 3 ] ||
		fail "trials: $(sqlite3 r.db 'select * from trials')"
	# once resumed it finds its coordinator gone and gives up
	kill -CONT $a
	w_wait $a 20
	[ "$w_rc" = 1 ] || fail "stopped worker exit $w_rc"
}

# The coordinator listens before it loads its data: a worker started from
# the printed line connects while the data is still being read (here a FIFO
# that stays empty for 11 s, longer than a worker's connect timeout), waits
# in the kernel's queue, and is served as soon as the data is in, on its
# first connection, plain and over TLS.
test_worker_connects_while_the_coordinator_loads() {
	(umask 077; head -c 32 /dev/urandom | base64 >tok)
	local tls
	for tls in "" --token-file; do
		rm -f data.csv r.db* workers.err
		mkfifo data.csv
		w_coord data.csv --models linear --num-repeat 2 --num-jobs 0 \
			--listen 127.0.0.1:0 --db r.db ${tls:+$tls tok}
		w_worker --jobs 1 ${tls:+$tls tok}; local a=$!
		sleep 11
		grep -q "train 120 rows" coord.err &&
			fail "the data was loaded before it was written: $(cat coord.err)"
		cat "$ROOT/datasets/iris.csv" >data.csv
		w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
		w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
		grep -q "train 120 rows" coord.err || fail "no data facts: $(cat coord.err)"
		grep -q "the run is over (2 trials here)" workers.err ||
			fail "the worker did not run both trials: $(cat workers.err)"
		grep -q "reconnecting\|lost the coordinator\|refused\|within" workers.err &&
			fail "the worker needed a second connection: $(cat workers.err)"
		[ "$(grep -c "joined" coord.err)" = 1 ] || fail "not one join: $(cat coord.err)"
	done
}

# A wrong token is refused with a message on both sides; the right one works.
test_worker_wrong_token_refused() {
	(umask 077; head -c 32 /dev/urandom | base64 >good.tok; head -c 32 /dev/urandom | base64 >bad.tok)
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 2 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --token-file good.tok --db r.db
	run timeout 30 env CFL_CACHE_DIR="$TMP/cache" "$CFL" worker --connect "127.0.0.1:$PORT" \
		--token-file bad.tok
	expect_rc 1
	expect_err "authentication failed"
	expect_err "wrong token"
	# without a token at all (empty key): refused too
	run timeout 30 env CFL_CACHE_DIR="$TMP/cache" "$CFL" worker --connect "127.0.0.1:$PORT"
	expect_rc 1
	expect_err "authentication failed"
	w_worker --token-file good.tok -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err) / $(cat coord.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc"
	grep -q "refused connection from 127.0.0.1:[0-9]*: TLS handshake failed: .*(a worker with another token?)" coord.err ||
		fail "coordinator did not log the refusal: $(cat coord.err)"
	grep -q "refused connection from 127.0.0.1:[0-9]*: authentication failed (a worker without a token)" coord.err ||
		fail "coordinator did not log the refusal of a worker without a token: $(cat coord.err)"
}

# Garbage, a frame other than HELLO first, a HELLO over its 1 KiB limit,
# and 200 idle connections are refused and logged; an honest worker still
# gets in and finishes the run.
test_worker_hostile_connections() {
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 2 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --db r.db
	exec 3<>"/dev/tcp/127.0.0.1/$PORT"
	printf 'GET / HTTP/1.0\r\n\r\n' >&3
	exec 4<>"/dev/tcp/127.0.0.1/$PORT"
	# a HEARTBEAT before any HELLO
	printf 'CFLW\003\006\000\000\000\000\000\000\000\000\000\000\014\000\000\000' >&4
	exec 5<>"/dev/tcp/127.0.0.1/$PORT"
	# a HELLO of 1025 bytes
	printf 'CFLW\003\001\000\000\000\000\000\000\000\000\000\000\001\004\000\000' >&5
	local fds=() i fd
	# the coordinator listens before it loads and accepts once it has: the
	# three are refused before the idle flood, which would otherwise make
	# them give way unread (the oldest in their handshake goes first)
	for i in $(seq 100); do
		[ "$(grep -c 'refused connection from' coord.err)" -ge 3 ] && break
		sleep 0.1
	done
	for i in $(seq 200); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$PORT" || break
		fds+=("$fd")
	done
	w_worker -q; local a=$!
	w_wait $a 60; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat coord.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc"
	for fd in "${fds[@]}"; do exec {fd}>&-; done
	exec 3>&- 4>&- 5>&-
	grep -q "refused connection from .*bad magic" coord.err || fail "garbage not logged: $(cat coord.err)"
	grep -q "refused connection from .*HEARTBEAT frame before HELLO" coord.err ||
		fail "a frame before HELLO not logged: $(cat coord.err)"
	grep -q "refused connection from .*HELLO payload of 1025 bytes exceeds the limit of 1024" coord.err ||
		fail "a long HELLO not logged: $(cat coord.err)"
	grep -q "already in their handshake (the oldest gives way" coord.err || fail "cap not logged"
	[ "$(grep -c 'refused connection\|dropped a connection' coord.err)" -lt 100 ] || fail "the log was flooded"
}

# The coordinator killed and restarted with --resume: the worker reconnects
# and the run completes, every trial once.
test_worker_coordinator_restart_resume() {
	local args=("$ROOT/datasets/iris.csv" --models linear --num-repeat 4 --seed 2 -q
		    --num-jobs 0 --heartbeat 0.2 --trial-timeout 3 --db r.db --name rr)
	w_coord "${args[@]}" --listen 127.0.0.1:0
	# repeat 1 hangs on its first attempt only
	CFL_TEST_FAULT=hang:1:1 w_worker --jobs 2 --name w -q; local a=$!
	w_until "select count(*) from trials where status='done'" 3 r.db
	kill -9 $COORD_PID
	wait $COORD_PID 2>/dev/null
	local port=$PORT
	"$CFL" repeat "${args[@]}" --resume rr --listen "127.0.0.1:$port" \
		>coord.out 2>coord2.err &
	COORD_PID=$!
	w_wait $COORD_PID 60; [ "$w_rc" = 0 ] || fail "resumed coordinator exit $w_rc: $(cat coord2.err)"
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err) / $(cat coord.err)"
	grep -q "worker 'w' joined" coord2.err || fail "worker did not reconnect: $(cat coord2.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 4 ] ||
		fail "trials: $(sqlite3 r.db 'select * from trials')"
	[ "$(sqlite3 r.db "select status from runs")" = done ] || fail "run not done"
	# 4 trials x test x 2 metrics (nothing holds out validation rows)
	[ "$(sqlite3 r.db "select count(*) from metrics")" = 8 ] || fail "metrics: $(sqlite3 r.db 'select count(*) from metrics')"
}

# Where root and `ip netns` are available: a worker in a network namespace
# whose link goes down is caught by missed heartbeats, its trial requeued.
test_worker_netns_link_down() {
	[ "$(id -u)" = 0 ] && command -v ip >/dev/null || skip "needs root and ip"
	local ns=cfl$$ vh=vh$$ vn=vn$$ net=10.$((RANDOM % 200 + 20)).$((RANDOM % 250))
	ip netns add $ns 2>/dev/null || skip "no ip netns"
	trap 'kill -9 $(jobs -p) 2>/dev/null; ip netns del '$ns' 2>/dev/null; ip link del '$vh' 2>/dev/null' EXIT
	ip link add $vh type veth peer name $vn &&
	ip link set $vn netns $ns &&
	ip addr add $net.1/24 dev $vh && ip link set $vh up &&
	ip netns exec $ns ip addr add $net.2/24 dev $vn &&
	ip netns exec $ns ip link set $vn up || fail "cannot set up the veth pair"
	(umask 077; head -c 32 /dev/urandom | base64 >tok)
	"$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 -q --num-jobs 0 \
		--listen 0.0.0.0:0 --token-file tok --heartbeat 0.2 --db r.db >coord.out 2>coord.err &
	COORD_PID=$!
	for _ in $(seq 100); do
		PORT=$(grep -o -m1 'connect 0.0.0.0:[0-9]*' coord.err | cut -d: -f2)
		[ -n "$PORT" ] && break
		sleep 0.1
	done
	[ -n "$PORT" ] || fail "no worker line: $(cat coord.err)"
	CFL_TEST_FAULT=hang CFL_CACHE_DIR="$TMP/cache" ip netns exec $ns "$CFL" worker \
		--connect "$net.1:$PORT" --token-file tok --name far --jobs 1 --retry-for 3 -q 2>far.err &
	local far=$!
	w_until "select count(*) from trials where status='running' and worker='far'" 1 r.db
	ip link set $vh down
	w_worker --token-file tok --name near -q; local near=$!
	w_wait $near; [ "$w_rc" = 0 ] || fail "near worker exit $w_rc"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	grep -q "dropped worker 'far'.*missed heartbeats" coord.err || fail "not caught: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done' and worker='near'")" = 3 ] ||
		fail "trials: $(sqlite3 r.db 'select * from trials')"
	w_wait $far 30
	[ "$w_rc" = 1 ] || fail "far worker exit $w_rc"
}

# A remote worker's local process that crashes is a retried attempt, and
# poison when it keeps crashing; a model error that keeps failing ends
# failed: the same outcomes as with local workers.
test_worker_remote_crash_is_retried() {
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --db r.db
	CFL_TEST_FAULT=segv:1:1 w_worker --jobs 1 -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err) / $(cat coord.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc"
	[ "$(sqlite3 r.db "select status, attempt from trials where repeat=1")" = "done|2" ] ||
		fail "not retried: $(sqlite3 r.db 'select * from trials')"
	[ "$(sqlite3 r.db "select reason from trial_attempts")" = "signal SIGSEGV" ] ||
		fail "attempts: $(sqlite3 r.db 'select * from trial_attempts')"
	rm -f r.db*
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --db r.db
	CFL_TEST_FAULT=segv:1 w_worker --jobs 1 -q; a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err) / $(cat coord.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc"
	[ "$(sqlite3 r.db "select status, attempt from trials where repeat=1")" = "poison|2" ] ||
		fail "not poison: $(sqlite3 r.db 'select * from trials')"
	rm -f r.db*
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --db r.db
	CFL_TEST_FAULT=error:1 w_worker --jobs 1 -q; a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err) / $(cat coord.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc"
	[ "$(sqlite3 r.db "select status, attempt from trials where repeat=1")" = "failed|2" ] ||
		fail "model error: $(sqlite3 r.db 'select * from trials')"
}

# A worker that served one run and finds another run behind the address
# after a reconnect leaves, saying why on both sides.
test_worker_another_run_refused() {
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 3 -q --num-jobs 0 \
		--listen 127.0.0.1:0 --heartbeat 0.2 --trial-timeout 30 --db r.db --name first
	CFL_TEST_FAULT=hang:1 w_worker --jobs 1 --name w -q; local a=$!
	w_until "select count(*) from trials where status='running' and repeat=1" 1 r.db
	kill -9 $COORD_PID
	wait $COORD_PID 2>/dev/null
	"$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline --num-repeat 2 -q --num-jobs 0 \
		--listen "127.0.0.1:$PORT" --db r.db --name second >coord.out 2>coord2.err &
	COORD_PID=$!
	w_wait $a 30; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	grep -q "now serves another run" workers.err || fail "worker: $(cat workers.err)"
	for _ in $(seq 50); do
		grep -q "worker 'w' refused: this worker served another run" coord2.err && break
		sleep 0.1
	done
	grep -q "worker 'w' refused: this worker served another run" coord2.err ||
		fail "coordinator: $(cat coord2.err)"
	kill $COORD_PID
}

# A damaged entry in the worker's dataset cache is never used: bytes that
# still load (one digit changed) and bytes that do not (garbage) are each
# removed and fetched again, and the run completes with the right data;
# an intact entry is used as it is.
test_worker_damaged_cache_refetched() {
	local data="$ROOT/datasets/iris.csv" entry good garbage
	w_cache_run() {	# one run with one worker on the shared cache
		rm -f r.db* workers.err
		w_coord "$data" --models baseline --num-repeat 2 -q --num-jobs 0 \
			--listen 127.0.0.1:0 --db r.db
		w_worker --jobs 1 --name w; local a=$!
		w_wait $a; [ "$w_rc" = 0 ] || fail "$1: worker exit $w_rc: $(cat workers.err)"
		w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "$1: coordinator exit $w_rc: $(cat coord.err)"
		[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 2 ] ||
			fail "$1: trials: $(sqlite3 r.db 'select * from trials')"
		grep -q "dataset [0-9a-f]*\.\.\. (.* bytes) ready" workers.err ||
			fail "$1: no dataset: $(cat workers.err)"
	}
	# a first run fills the cache with the coordinator's encoded parts
	w_cache_run first
	entry=$(ls cache/*.data)
	[ "$(wc -w <<<"$entry")" = 1 ] || fail "cache: $(ls cache)"
	good=$(mktemp)
	cp "$entry" "$good"
	garbage=$(mktemp)
	head -c "$(stat -c %s "$good")" /dev/zero | tr '\0' '"' >"$garbage"
	for damaged in byte garbage intact; do
		case $damaged in
		byte)	# the same size, one byte of a value changed
			cp "$good" "$entry"
			printf '\x7f' | dd of="$entry" bs=1 seek=$(($(stat -c %s "$good") - 9)) \
				conv=notrunc 2>/dev/null
			! cmp -s "$entry" "$good" || fail "the damage did nothing" ;;
		garbage) cp "$garbage" "$entry" ;;
		intact) cp "$good" "$entry" ;;
		esac
		w_cache_run "$damaged"
		cmp -s "$entry" "$good" || fail "$damaged: the cache entry is not the dataset"
		if [ $damaged = intact ]; then
			! grep -q "damaged" workers.err || fail "intact entry refused: $(cat workers.err)"
		else
			grep -q "cached dataset '.*' was damaged (removed); fetching it again" workers.err ||
				fail "$damaged: not refused: $(cat workers.err)"
		fi
	done
	rm -f "$garbage" "$good"
	[ "$(ls cache | grep -c tmp)" = 0 ] || fail "temporary files left: $(ls cache)"
}

# --trial-timeout on a remote worker: the coordinator sends CANCEL and the
# worker kills the local process of that trial at once (its own timeout,
# 1.1 x the coordinator's + 2 heartbeats = 7.3 s here, is only a safety
# net), so its one slot runs the next lease at once: no trial but the hung
# one fails an attempt.  Without the CANCEL, the next leases would wait
# behind the hung process and time out in turn.  (3 s: far more than a
# healthy trial takes on a loaded machine.)
test_worker_cancel_kills_hung_trial() {
	w_coord "$ROOT/datasets/iris.csv" --models linear --num-repeat 4 --seed 5 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --trial-timeout 3 --heartbeat 2 --db r.db
	CFL_TEST_FAULT=hang:1 w_worker --jobs 1 --name w -q; local a=$!
	w_until "select count(*) from trials where status='running' and repeat=1" 1 r.db
	local kid st gone=
	kid=$(pgrep -P $a)
	[ "$(wc -w <<<"$kid")" = 1 ] || fail "the worker's local processes: '$kid'"
	# the coordinator failed attempt 1 and sent CANCEL at the same moment
	w_until "select count(*) from trial_attempts where reason like 'timeout%'" 1 r.db
	for _ in $(seq 30); do
		st=$(ps -o stat= -p "$kid" 2>/dev/null)
		[ -z "$st" ] || [[ "$st" == Z* ]] && { gone=1; break; }
		sleep 0.1
	done
	[ -n "$gone" ] || fail "the hung trial's process $kid outlived the CANCEL by 3 s"
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(sqlite3 r.db "select status, attempt from trials where repeat=1")" = "poison|2" ] ||
		fail "hung trial: $(sqlite3 r.db 'select * from trials')"
	[ "$(sqlite3 r.db "select count(*) from trials where repeat<>1 and status='done' and attempt=1")" = 3 ] ||
		fail "other trials: $(sqlite3 r.db 'select * from trials')"
	[ "$(sqlite3 r.db "select group_concat(t.repeat || ':' || a.reason, ',') from trial_attempts a
		join trials t on t.id = a.trial")" = "1:timeout after 3 s,1:timeout after 3 s" ] ||
		fail "failed attempts: $(sqlite3 r.db 'select * from trial_attempts')"
}

# --test / --valid files with --listen: the worker gets the coordinator's
# encoded parts (it parses nothing and needs none of the files, here run
# from a folder without them), and the table equals the local run's.
test_worker_test_valid_files() {
	awk 'NR == 1 || NR % 5 >= 2' "$ROOT/datasets/iris.csv" >train.csv
	awk 'NR == 1 || NR % 5 == 0' "$ROOT/datasets/iris.csv" >test.csv
	awk 'NR == 1 || NR % 5 == 1' "$ROOT/datasets/iris.csv" >valid.csv
	local args=(train.csv --test test.csv --valid valid.csv --models linear,baseline
		    --num-repeat 2 --seed 2 --metrics acc,logloss -q)
	run "$CFL" repeat "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	w_table <(echo "$out") >local.table
	w_coord "${args[@]}" --num-jobs 0 --listen 127.0.0.1:0 --db remote.db
	mkdir elsewhere
	cd elsewhere
	w_worker --jobs 2 --name w -q; local a=$!
	cd ..
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat elsewhere/workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	w_table coord.out >remote.table
	[ -s remote.table ] || fail "no table: $(cat coord.err)"
	diff local.table remote.table >&2 || fail "tables differ"
	[ "$(sqlite3 remote.db "select count(*) from trials where status='done' and worker = 'w'")" = 4 ] ||
		fail "not all done by the worker: $(sqlite3 remote.db 'select status, worker from trials')"
}

# A fake coordinator that completes the TLS handshake and sends a LEASE whose
# model is a shell command: the worker refuses it (a failed RESULT naming
# why, logged), drops the connection and stops; the command never runs.
# "late" first has the worker run an ordinary trial, so the fake is a
# coordinator the worker does serve.
w_fake_command() {
	(umask 077; head -c 32 /dev/urandom | base64 >fake.tok)
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_fakecoord" "$ROOT/datasets/iris.csv" "$TMP/ran" "$1" \
		fake.tok >fake.out 2>fake.err &
	local fake=$! port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^port //p' fake.out)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "the fake coordinator did not start: $(cat fake.err)"
	CFL_CACHE_DIR="$TMP/cache" timeout -k 5 60 "$CFL" worker --connect "127.0.0.1:$port" \
		--token-file fake.tok --retry-for 5 >worker.out 2>worker.err
	local worker_rc=$?
	w_wait $fake 30
	[ "$worker_rc" = 1 ] || fail "worker exit $worker_rc, expected 1: $(cat worker.err)"
	[ -e "$TMP/ran" ] && fail "the worker ran the command it was sent"
	grep -q "refused trial .*shell command" worker.err || fail "no refusal logged: $(cat worker.err)"
	grep -q "status 1: refused: a TCP worker never runs a shell command" fake.out ||
		fail "no failed RESULT for the command: $(cat fake.out) $(cat fake.err)"
}

test_worker_refuses_command_lease_during_fetch() {
	w_fake_command early
}

test_worker_refuses_command_lease_after_running_trials() {
	w_fake_command late
	grep -q "^result 1 status 0: ok" fake.out || fail "the ordinary trial did not run: $(cat fake.out)"
}

# --max-workers 1: a second worker is refused with the reason while the
# first runs the whole run.
test_worker_max_workers() {
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 6 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --max-workers 1 --db r.db
	CFL_TEST_FAULT=slow w_worker --jobs 1 --name w1 -q; local a=$!
	for _ in $(seq 200); do
		grep -q "worker 'w1' joined" coord.err && break
		sleep 0.05
	done
	run timeout 30 env CFL_CACHE_DIR="$TMP/cache" "$CFL" worker --connect "127.0.0.1:$PORT" \
		--name w2 --retry-for 5
	expect_rc 1
	expect_err "maximum of 1 workers (--max-workers)"
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	grep -q "refused worker 'w2'.*maximum of 1 workers" coord.err || fail "not logged: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done' and worker='w1'")" = 6 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
}

# 22 connections that each join, take a lease and vanish without a word
# do not poison 12 trials (--max-retries 1): an honest worker runs them
# all.  Before, 22 such connections poisoned 11 of 12.
test_worker_vanishing_workers_do_not_poison() {
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 12 -q \
		--num-jobs 0 --max-retries 1 --listen 127.0.0.1:0 --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_ghost" "$PORT" 22 ghost >ghost.out 2>ghost.err ||
		fail "ghosts: $(cat ghost.err)"
	grep -q "^leases 22$" ghost.out || fail "the ghosts took no leases: $(cat ghost.out)"
	w_worker --jobs 2 --name honest -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 12 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
}

# A worker that announces a RESULT larger than this run's data can make
# (iris: about 90 KB) is dropped from the frame's header, before the
# coordinator holds its bytes; an honest worker then runs the trials.
test_worker_oversized_result_dropped() {
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 4 -q \
		--num-jobs 0 --listen 127.0.0.1:0 --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_ghost" "$PORT" 2 big >ghost.out 2>ghost.err &
	local g=$!
	for _ in $(seq 200); do
		[ "$(grep -c 'more than this run' coord.err)" = 2 ] && break
		sleep 0.05
	done
	kill $(pgrep -P $g) $g 2>/dev/null
	grep -q "dropped worker 'ghost[01]' .*a RESULT of 67108864 bytes, more than this run's results can be" \
		coord.err || fail "not dropped: $(cat coord.err)"
	w_worker --jobs 1 --name honest -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done' and worker='honest'")" = 4 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
}

# `cfl auto --listen --token-file` with two `cfl worker`s over TLS: one
# run, its search and its bags' folds run by the workers (the coordinator
# has no workers of its own), a leaderboard.
test_worker_auto_completes() {
	(umask 077; head -c 32 /dev/urandom | base64 >tok)
	W_CMD=auto W_TIMEOUT=120 w_coord "$ROOT/datasets/iris.csv" --models linear,tree --time-limit 6 \
		--folds 3 --num-jobs 0 --listen 127.0.0.1:0 --token-file tok --db a.db --name a -q
	local coord=$COORD_PID
	grep -q "^  cfl worker --connect 127.0.0.1:$PORT --token-file tok" coord.err ||
		fail "no worker line: $(cat coord.err)"
	w_worker --jobs 1 --name w1 --token-file tok -q; local a=$!
	w_worker --jobs 1 --name w2 --token-file tok -q; local b=$!
	w_wait $a 120; [ "$w_rc" = 0 ] || fail "worker 1 exit $w_rc: $(cat workers.err)"
	w_wait $b 120; [ "$w_rc" = 0 ] || fail "worker 2 exit $w_rc: $(cat workers.err)"
	w_wait $coord 120; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	grep -q '^Leaderboard' coord.out || fail "no leaderboard: $(cat coord.out) $(cat coord.err)"
	[ "$(sqlite3 a.db "select count(*) || status from runs")" = 1done ] ||
		fail "not one run done: $(sqlite3 a.db 'select name, status from runs')"
	[ "$(sqlite3 a.db "select count(*) from trials where worker not in ('w1', 'w2')")" = 0 ] ||
		fail "trials outside the workers: $(sqlite3 a.db 'select worker, count(*) from trials group by worker')"
	[ "$(sqlite3 a.db "select count(*) from trials where fold >= 0 and status = 'done'")" -ge 3 ] ||
		fail "no bag finished its folds"
}

# With a count budget, two loopback workers give the leaderboard and the
# bundle bytes of the local run.
test_worker_auto_budget_equals_local() {
	"$CFL" auto --help | grep -q -- --max-trials || skip "no count budget (--max-trials) in this build"
	local args=("$ROOT/datasets/iris.csv" --models linear,tree --max-trials 8 --time-limit 600
		    --folds 3 --seed 5 --name a -q) ref
	run "$CFL" auto "${args[@]}" --num-jobs 2 --db local.db --save local.cfl
	expect_rc 0
	ref=$(awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9]$/) $i = ""; print }' <<<"$out")
	W_CMD=auto W_TIMEOUT=120 w_coord "${args[@]}" --num-jobs 0 --listen 127.0.0.1:0 \
		--db remote.db --save remote.cfl
	local coord=$COORD_PID
	w_worker --jobs 1 --name w1 -q; local a=$!
	w_worker --jobs 1 --name w2 -q; local b=$!
	w_wait $a 120; [ "$w_rc" = 0 ] || fail "worker 1 exit $w_rc: $(cat workers.err)"
	w_wait $b 120; [ "$w_rc" = 0 ] || fail "worker 2 exit $w_rc: $(cat workers.err)"
	w_wait $coord 120; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9]$/) $i = ""; print }' coord.out)" = "$ref" ] ||
		fail "the workers' leaderboard differs from the local one:
$(cat coord.out)
--- local:
$ref"
	cmp local.cfl remote.cfl || fail "the bundles differ"
}

# --prune over TCP: a remote worker's trials send their intermediate
# scores through its relay to the coordinator, whose pruner stops them
# there (before, the relay dropped them and remote trials ran whole)
test_worker_tune_prune_remote() {
	W_CMD=tune W_TIMEOUT=120 w_coord "$ROOT/datasets/breast_cancer.csv" --model fcnn \
		--set epochs=8 --num-search 10 --num-repeat 1 --prune asha --db r.db --name pr \
		--num-jobs 0 --listen 127.0.0.1:0
	local coord=$COORD_PID
	CFL_CACHE_DIR="$TMP/cache" timeout -k 5 120 "$CFL" worker --connect "127.0.0.1:$PORT" \
		--retry-for 30 --jobs 1 --name w1 -q 2>>workers.err & local a=$!
	w_wait $a 120; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $coord 120; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	# --num-jobs 0: every trial ran on the worker
	[ "$(sqlite3 r.db "select count(*) from trials where status not in ('done', 'pruned')")" = 0 ] ||
		fail "not every trial ended: $(sqlite3 r.db 'select status from trials')"
	n=$(sqlite3 r.db "select count(*) from trials where status = 'pruned'")
	[ "$n" -ge 1 ] || fail "nothing pruned on the remote worker: $(sqlite3 r.db 'select status from trials')"
	[ "$(sqlite3 r.db "select count(*) from trial_pruned")" = "$n" ] ||
		fail "pruned trials without their step: $(sqlite3 r.db 'select * from trial_pruned')"
}
