# cfl auto on every backend (issue 32 part 5): make bench BENCH=auto_backends
# (BENCH=auto runs it with bench_auto.sh).
#
# 1. `cfl auto` with a count budget (--max-trials, --seed: the leaderboard
#    depends on neither the workers nor the clock) on W1's synth_clf_100k:
#    wall time of the whole command on the local pool (2 slots), through two
#    loopback `cfl worker`s (1 slot each, TLS: --token-file) and under
#    `mpirun -n 3` (rank 0 coordinates, 2 worker ranks x 1 slot), each as a
#    ratio to the local pool's (target <= 1.10).  Runs interleaved, so that
#    each backend sees the same load; medians of 3 (QUICK=1: 1, on a
#    smaller budget).  The three leaderboards (stdout less the seconds
#    columns) must be identical: the script says so, or fails.
# 2. auto's coordinator throughput: candidates and fold trials per second
#    through the coordinating process (the local pool's, and rank 0 of
#    mpirun -n 3) with models that cost nothing: the `baseline` family
#    (class frequencies: it fits in microseconds) on iris, 5 folds a
#    candidate, its one parameter `smoothing` searched by auto's Bayesian
#    optimisation over uniform(0, 100).  auto refuses baseline ("nothing to
#    tune"); the environment variable CFL_BENCH_AUTO_BASELINE=1, which only
#    this script sets, lets it through (src/study/cmdline.c), and the space
#    is a params/baseline.params in the script's own folder (cfl looks in
#    ./params first).  The rate is taken over the search alone: (N - 1)
#    candidates over the wall time of a --max-trials N run less that of a
#    --max-trials 1 run (start-up, data, the ensembles at the end), at
#    N = 50 and N = 200: the search asks its GP once a candidate, and the
#    GP's cost grows with the candidates it has seen, so the rate depends
#    on N.  Target: >= 1,000 fold trials per second.
# Skips the TCP part in a build without it, the MPI part without mpirun or
# a build without MPI (saying so).
set -u
. "$ROOT/tests/bench/lib.sh"
RUNS=$(reps 3 1)
B="$BENCH_DIR/auto_backends"
rm -rf "$B"
mkdir -p "$B/params"
export CFL_CACHE_DIR="$B/cache"
TOK="$B/bench.tok"
(umask 077; head -c 32 /dev/urandom | base64 >"$TOK")
CPU=$(bench_cpu_model)

have_mpi=1
if ! command -v mpirun >/dev/null 2>&1 || ! "$CFL" --version | grep -q '^backends:.* mpi'; then
	have_mpi=0
	echo "auto_backends: mpirun -n 3 skipped (no mpirun, or cfl built without MPI)"
fi
have_tcp=1
"$CFL" auto --help | grep -q -- '--listen' || { have_tcp=0; echo "auto_backends: TCP skipped (no --listen)"; }
"$CFL" auto --help | grep -q -- '--max-trials' || { echo "auto_backends: cfl auto has no --max-trials"; exit 1; }
ROOTOPT=()
[ "$(id -u)" = 0 ] && ROOTOPT=(--allow-run-as-root)
mpi() { timeout -k 5 900 mpirun "${ROOTOPT[@]}" --oversubscribe "$@"; }
now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.3f\n", e - s }'; }
# stdout less the clock's columns (the leaderboard's and the search's seconds)
board() { awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9]$/) $i = ""; print }' "$1"; }

# ---- 1. a count budget on synth_clf_100k, three backends ----
SYN="$BENCH_DIR/synth_clf_100k.csv"
[ -f "$SYN" ] || { echo "auto_backends: $SYN is missing (run tests/bench/make_data.py)"; exit 1; }
if [ "$QUICK" = 1 ]; then
	FAM=linear,tree TRIALS=6
else
	FAM=linear,tree,gbdt TRIALS=6
fi
ARGS=("$SYN" --models "$FAM" --max-trials "$TRIALS" --seed 0 --name ab --db "$B/w.db" -q)
DESC="auto --models $FAM --max-trials $TRIALS"

run_local() {	# -> seconds; the leaderboard in $B/local.out
	rm -f "$B"/w.db*
	local t0; t0=$(now)
	"$CFL" auto "${ARGS[@]}" --num-jobs 2 >"$B/local.out" 2>"$B/local.err" ||
		{ echo "auto_backends: local run failed: $(tail -3 "$B/local.err")" >&2; return 1; }
	since "$t0"
}
run_tcp() {	# -> seconds; the leaderboard in $B/tcp.out
	rm -rf "$B"/w.db* "$CFL_CACHE_DIR"
	local t0 port pid a b rc=0; t0=$(now)
	rm -f "$B/tcp.err"
	timeout -k 5 900 "$CFL" auto "${ARGS[@]}" --num-jobs 0 --listen 127.0.0.1:0 \
		--token-file "$TOK" >"$B/tcp.out" 2>"$B/tcp.err" &
	pid=$!
	port=
	for _ in $(seq 500); do
		port=$(grep -o -m1 'connect 127.0.0.1:[0-9]*' "$B/tcp.err" 2>/dev/null | cut -d: -f2)
		[ -n "$port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	[ -n "$port" ] || { echo "auto_backends: no port from the coordinator: $(tail -3 "$B/tcp.err")" >&2; kill "$pid" 2>/dev/null; return 1; }
	timeout -k 5 900 "$CFL" worker --connect "127.0.0.1:$port" --token-file "$TOK" --jobs 1 -q 2>>"$B/workers.err" &
	a=$!
	timeout -k 5 900 "$CFL" worker --connect "127.0.0.1:$port" --token-file "$TOK" --jobs 1 -q 2>>"$B/workers.err" &
	b=$!
	wait "$pid" || rc=1
	wait "$a" || rc=1
	wait "$b" || rc=1
	[ $rc = 0 ] || { echo "auto_backends: TCP run failed: $(tail -3 "$B/tcp.err") $(tail -3 "$B/workers.err")" >&2; return 1; }
	since "$t0"
}
run_mpi() {	# -> seconds; the leaderboard in $B/mpi.out
	rm -f "$B"/w.db*
	local t0; t0=$(now)
	mpi -n 3 "$CFL" auto "${ARGS[@]}" --num-jobs 1 >"$B/mpi.out" 2>"$B/mpi.err" ||
		{ echo "auto_backends: mpirun -n 3 run failed: $(tail -3 "$B/mpi.err")" >&2; return 1; }
	since "$t0"
}

status=0
: >"$B/l.times"; : >"$B/t.times"; : >"$B/m.times"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in $(seq "$RUNS"); do
	run_local >>"$B/l.times" || exit 1
	if [ $have_tcp = 1 ]; then run_tcp >>"$B/t.times" || exit 1; fi
	if [ $have_mpi = 1 ]; then run_mpi >>"$B/m.times" || exit 1; fi
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# the leaderboards: identical, or the bench fails
same="identical"
board "$B/local.out" >"$B/local.board"
grep -q '^Leaderboard' "$B/local.board" || { echo "auto_backends: no leaderboard in the local run"; exit 1; }
for k in tcp mpi; do
	[ -s "$B/$k.out" ] || continue
	board "$B/$k.out" >"$B/$k.board"
	if ! cmp -s "$B/local.board" "$B/$k.board"; then
		same="DIFFERENT"
		status=1
		echo "auto_backends: the $k leaderboard differs from the local pool's:"
		diff "$B/local.board" "$B/$k.board"
	fi
done
pair_range() { paste "$1" "$2" | awk '{ printf "%.3f\n", $1 / $2 }' | range; }
l=$(median <"$B/l.times")
echo "$DESC on synth_clf_100k (seed 0; medians of $RUNS; load $load0 -> $load1; $CPU):"
echo "  local pool (2 slots): ${l} s ($(range <"$B/l.times"))"
rows=""
for k in t m; do
	[ -s "$B/$k.times" ] || continue
	if [ $k = t ]; then
		name="2 loopback TCP workers (TLS)"
	else
		name="mpirun -n 3"
	fi
	v=$(median <"$B/$k.times")
	r=$(ratio "$v" "$l" "%.2f")
	echo "  $name: ${v} s ($(range <"$B/$k.times")): ${r}x local (target <= 1.10)"
	emit "auto backends synth_clf_100k" "$DESC wall s, $name / local pool" "$v" "$l" "$r" \
		"pairs $(pair_range "$B/$k.times" "$B/l.times")" "<= 1.10"
	rows="$rows| $name | ${v} ($(range <"$B/$k.times")) | ${r}x | <= 1.10x |
"
done
echo "  leaderboards: $same (local pool$([ $have_tcp = 1 ] && echo ", TCP")$([ $have_mpi = 1 ] && echo ", mpirun -n 3"))"
emit "auto backends synth_clf_100k" "$DESC: leaderboards of the backends equal to the local pool's" \
	"$([ "$same" = identical ] && echo 1 || echo 0)" 1 "" "$same" "= 1"

# ---- 2. the coordinator's throughput with no-op models ----
echo 'smoothing = uniform(0, 100)' >"$B/params/baseline.params"
IRIS="$ROOT/datasets/iris.csv"
noop_run() {	# noop_run N local|mpi -> seconds of one run
	local t0 rc=0
	rm -f "$B"/n.db*
	t0=$(now)
	if [ "$2" = local ]; then
		(cd "$B" && CFL_BENCH_AUTO_BASELINE=1 "$CFL" auto "$IRIS" --models baseline --max-trials "$1" \
			--seed 0 --folds 5 --num-jobs 2 --db n.db -q >n.out 2>n.err) || rc=1
	else
		(cd "$B" && CFL_BENCH_AUTO_BASELINE=1 mpi -n 3 -x CFL_BENCH_AUTO_BASELINE "$CFL" auto "$IRIS" \
			--models baseline --max-trials "$1" --seed 0 --folds 5 --num-jobs 1 --db n.db -q >n.out 2>n.err) || rc=1
	fi
	[ $rc = 0 ] && grep -q '^Leaderboard' "$B/n.out" ||
		{ echo "auto_backends: baseline run ($2, $1 candidates) failed: $(tail -3 "$B/n.err")" >&2; return 1; }
	[ "$(sqlite3 "$B/n.db" "select count(*) from trials where fold >= 0 and status = 'done'" 2>/dev/null || echo "$((5 * $1))")" = "$((5 * $1))" ] ||
		{ echo "auto_backends: baseline run ($2, $1 candidates): not $((5 * $1)) fold trials done" >&2; return 1; }
	since "$t0"
}
tput_rows=""
for mode in local mpi; do
	[ $mode = mpi ] && [ $have_mpi = 0 ] && continue
	for n in 1 50 200; do
		[ $mode = mpi ] && [ $n = 50 ] && continue
		for _ in $(seq "$RUNS"); do noop_run $n $mode || exit 1; done | median >"$B/noop.$mode.$n"
	done
	t1=$(cat "$B/noop.$mode.1")
	for n in 50 200; do
		[ -s "$B/noop.$mode.$n" ] || continue
		tn=$(cat "$B/noop.$mode.$n")
		c=$(awk -v n="$n" -v a="$tn" -v b="$t1" 'BEGIN { if (a > b) printf "%.0f", (n - 1) / (a - b) }')
		f=$(awk -v c="$c" 'BEGIN { if (c != "") printf "%.0f", 5 * c }')
		[ $mode = local ] && who="local pool (2 slots)" || who="rank 0 of mpirun -n 3"
		echo "auto baseline on iris, $n candidates x 5 folds, $who: ${c} candidates/s, ${f} fold trials/s" \
			"(run ${tn} s, less ${t1} s of a 1-candidate run; target >= 1000 folds/s)"
		emit "auto coordinator, no-op models" "fold trials/s, $n candidates x 5 folds, $who" "$f" "" "" \
			"${c} candidates/s; ${tn} s less ${t1} s" ">= 1000"
		tput_rows="$tput_rows| $who, $n candidates | ${c} | ${f} | ${tn} - ${t1} | >= 1000 folds/s |
"
	done
done
load2=$(cut -d' ' -f1-3 /proc/loadavg)

{
	echo "### cfl auto on every backend (load $load0 -> $load2; $CPU)"
	echo
	echo "$DESC --seed 0 on synth_clf_100k, wall s of the whole command, medians of $RUNS (range);" \
		"leaderboards $same."
	echo
	echo "| backend | wall s | / local pool | target |"
	echo "|---|---|---|---|"
	echo "| local pool, 2 slots | ${l} ($(range <"$B/l.times")) | 1 | |"
	printf '%s' "$rows"
	echo
	echo "auto's coordinator with no-op models (baseline on iris, 5 folds a candidate;" \
		"CFL_BENCH_AUTO_BASELINE=1): the search's rate, a N-candidate run's wall less a 1-candidate run's."
	echo
	echo "| coordinator | candidates/s | fold trials/s | s (N - 1) | target |"
	echo "|---|---|---|---|---|"
	printf '%s' "$tput_rows"
	echo
} >>"$BENCH_DIR/results.md"
exit $status
