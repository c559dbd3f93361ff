# CLI tests: what token holders can make the coordinator hold.  (The hogs
# join with a slot each, so they hold leases when they are dropped:
# --max-retries 100 keeps those trials for the honest worker whatever the
# pool makes of such a drop.)  fixture_hog
# joins N times and sends from each connection the header of a large frame
# and all of its payload but the last byte; the coordinator refuses a frame
# type no worker sends from its header, and reads large RESULT frames only
# as far as a budget shared by all connections allows (the others wait).
# Its peak RSS (VmHWM) is checked against 100 MB, except in sanitizer
# builds, and printed.

# hog_hwm: the coordinator's peak RSS in kB.
hog_hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$COORD_PID/status"; }

# hog_check_hwm WHAT: prints the peak RSS; fails above 100 MB (not under
# a sanitizer, whose shadow memory counts too).
hog_check_hwm() {
	local kb
	kb=$(hog_hwm)
	printf "    coordinator peak RSS %s: %.1f MB (load: %s)\n" "$1" "$(echo "$kb / 1024" | bc -l)" \
		"$(cut -d" " -f1-3 /proc/loadavg)" >&2
	grep -qa __asan_init "$CFL" && return 0
	[ "$kb" -lt 102400 ] || fail "peak RSS $kb kB $1"
}

# hog_wait_lines FILE N: waits (up to 60 s) until FILE has N lines.
hog_wait_lines() {
	for _ in $(seq 1200); do
		[ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "$1 has $(wc -l <"$1") lines, not $2: $(cat hog.err)"
}

# 32 connections with the token each announce a 63 MiB CHUNK (a frame only
# a coordinator sends): each is dropped from the header; then an honest
# worker finishes the run.  Before, the coordinator read them all (2 GB).
test_hog_chunk_refused_from_header() {
	(umask 077; head -c 32 /dev/urandom | base64 >tok)
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 4 -q --num-jobs 0 \
		--max-retries 100 --listen 127.0.0.1:0 --token-file tok --max-workers 40 --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_hog" "$PORT" 32 9 $((63 << 20)) tok >hog.out 2>hog.err &
	local hog=$!
	hog_wait_lines hog.out 32
	[ "$(grep -c dropped hog.out)" = 32 ] || fail "not all dropped: $(sort hog.out | uniq -c)"
	hog_check_hwm "with 32 connections sending 63 MiB CHUNK frames"
	kill $(pgrep -P $hog) $hog 2>/dev/null
	grep -q "a CHUNK frame, which a worker never sends" coord.err || fail "not logged: $(cat coord.err)"
	w_worker --name honest --token-file tok -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 4 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
}

# With --save a RESULT may carry a model: 700 trees of a forest on iris
# may take 33 MB of text, so a RESULT may be about 66 MB.  32 connections
# each send all but the last byte of a 30 MiB RESULT.  One fits the 32 MiB budget and is read;
# the others wait unread (in the kernel's socket buffers, which may take
# much of a frame), so the coordinator holds about 30 MiB, not 960: its
# peak RSS stays under 100 MB (checked) even in the seconds the others'
# frames would have taken to come in.
# Once they are gone an honest worker finishes the run.
test_hog_results_share_one_budget() {
	(umask 077; head -c 32 /dev/urandom | base64 >tok)
	w_coord "$ROOT/datasets/iris.csv" --models forest --set n_estimators=700 --num-repeat 2 -q \
		--num-jobs 0 --max-retries 100 --listen 127.0.0.1:0 --token-file tok --max-workers 40 \
		--save b.cflb --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_hog" "$PORT" 32 4 $((30 << 20)) tok >hog.out 2>hog.err &
	local hog=$!
	hog_wait_lines hog.out 1
	sleep 6
	hog_check_hwm "with 32 connections sending 30 MiB RESULT frames"
	kill $(pgrep -P $hog) $hog 2>/dev/null
	w_worker --name honest --token-file tok -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 2 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
}

# With --save a RESULT's model text is bounded by what the run's models can
# make (a baseline on iris: a few hundred bytes, so about 200 KB in all with
# the predictions), not by the codec's 256 MiB: a 1 MiB RESULT is dropped
# from its header; an honest worker then saves the bundle.
test_hog_save_result_bounded_by_the_models() {
	w_coord "$ROOT/datasets/iris.csv" --models baseline --num-repeat 2 -q --num-jobs 0 \
		--max-retries 100 --listen 127.0.0.1:0 --save b.cflb --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_hog" "$PORT" 2 4 $((1 << 20)) >hog.out 2>hog.err &
	local hog=$!
	hog_wait_lines hog.out 2
	kill $(pgrep -P $hog) $hog 2>/dev/null
	grep -q "a RESULT of 1048576 bytes, more than this run's results can be" coord.err ||
		fail "not dropped: $(cat coord.err)"
	w_worker --name honest -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	[ -s b.cflb ] || fail "no bundle: $(cat coord.err)"
}

# A held frame must keep coming (256 KiB/s after 30 s): a connection that
# sends all of a 1 MiB RESULT but its last byte, then stalls, is dropped
# after about 34 s, so it cannot keep the budget, and the connections
# waiting for it, for ever.  (While a large frame comes in, the missed
# heartbeats rule waits: an honest result may take longer than 5 s.)
test_hog_stalled_frame_dropped() {
	w_coord "$ROOT/datasets/iris.csv" --models forest --num-repeat 2 -q --num-jobs 0 \
		--max-retries 100 --listen 127.0.0.1:0 --save b.cflb --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_hog" "$PORT" 1 4 $((1 << 20)) >hog.out 2>hog.err &
	local hog=$!
	for _ in $(seq 1200); do
		grep -q "still incomplete after" coord.err && break
		sleep 0.1
	done
	kill $(pgrep -P $hog) $hog 2>/dev/null
	grep -q "worker 'hog0'.*a frame of 1048596 bytes still incomplete after 3[0-9] s" coord.err ||
		fail "not dropped: $(cat coord.err)"
	w_worker --name honest -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
}

# hog_fake ANNOUNCE [WORKER ARGS...]: a fake coordinator announcing a
# dataset of ANNOUNCE bytes (served as 'x's) and a worker against it; sets
# worker_rc.
hog_fake() {
	local announce=$1 fake port=
	shift
	(umask 077; head -c 32 /dev/urandom | base64 >fake.tok)
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_fakecoord" "$ROOT/datasets/iris.csv" "$TMP/ran" \
		"announce:$announce" fake.tok >fake.out 2>fake.err &
	fake=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/^port //p' fake.out)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "the fake coordinator did not start: $(cat fake.err)"
	CFL_CACHE_DIR="$TMP/cache" timeout -k 5 60 "$CFL" worker --connect "127.0.0.1:$port" \
		--token-file fake.tok --retry-for 2 "$@" >worker.out 2>worker.err
	worker_rc=$?
	w_wait $fake 30
}

# A fake coordinator announcing 2 GiB to a worker that accepts 1 MiB: the
# worker refuses before fetching a byte, and nothing is left in its cache.
# With the default (8 GiB) a 16 GiB announcement is refused the same way.
test_hog_worker_max_dataset_size() {
	hog_fake $((2 << 30)) --max-dataset-size 1M
	[ "$worker_rc" = 1 ] || fail "worker exit $worker_rc: $(cat worker.err)"
	grep -q "announces a dataset of 2147483648 bytes, more than this worker accepts (1048576" \
		worker.err || fail "not refused: $(cat worker.err)"
	grep -q "^served 0$" fake.out || fail "the worker fetched: $(cat fake.out fake.err)"
	[ -z "$(find cache -type f 2>/dev/null)" ] || fail "cache: $(find cache -type f)"
	hog_fake $((16 << 30))
	[ "$worker_rc" = 1 ] || fail "worker exit $worker_rc: $(cat worker.err)"
	grep -q "announces a dataset of 17179869184 bytes, more than this worker accepts (8589934592" \
		worker.err || fail "not refused by default: $(cat worker.err)"
	run "$CFL" worker --connect 127.0.0.1:1 --max-dataset-size 0
	expect_rc 2
	expect_err "--max-dataset-size must be a size"
}

# 64 MiB of the wrong bytes: fetched, found not to match the announced hash
# at the end, and removed (no entry, no temporary file).
test_hog_worker_wrong_dataset_removed() {
	hog_fake $((64 << 20))
	[ "$worker_rc" = 1 ] || fail "worker exit $worker_rc: $(cat worker.err)"
	grep -q "do not match their SHA-256" worker.err || fail "not refused: $(cat worker.err)"
	[ -z "$(find cache -type f 2>/dev/null)" ] || fail "cache: $(find cache -type f)"
}
