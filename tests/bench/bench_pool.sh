# The pool: overhead per no-op trial with and without the store,
# fork-per-trial cost, parallel efficiency on synth_clf_100k, and W1
# end to end against PyTorch (tests/bench/w1_e2e_torch.py) when fcnn is built in.
# Medians of 3 runs (QUICK: 1); ratios are taken in the same run.
set -u
. "$ROOT/tests/bench/lib.sh"
RUNS=$(reps 3 1)
B="$BENCH_DIR/pool"
mkdir -p "$B"
# the driver is built by the Makefile, linked like cfl
make -s --no-print-directory -C "$ROOT" "build/bench-bin/pool_bench" >/dev/null && cp "$ROOT/build/bench-bin/pool_bench" "$B/" || exit 1

IRIS="$ROOT/datasets/iris.csv"

# 1. no-op trials: J=2 workers reused for every trial, with the store (as
#    cfl repeat does it) and without (the pool alone); then a fresh child
#    per trial (--trials-per-worker 1)
runs() {	# runs DB N J TPW -> median us per trial
	for _ in $(seq "$RUNS"); do
		rm -f "$B/p.db" "$B/p.db-wal" "$B/p.db-shm"
		"$B/pool_bench" "$IRIS" "$1" "$2" "$3" "$4" || exit 1
	done | median
}
with_store=$(runs "$B/p.db" 10000 2 0)
no_store=$(runs - 10000 2 0)
# a fork per trial costs 0.4-6 ms a trial by the machine's load: 250
# trials (1000 took 6 s a run at load 2, for the same cost per trial)
fork_each=$(runs "$B/p.db" 250 2 1)
store_cost=$(awk -v a="$with_store" -v b="$no_store" 'BEGIN { printf "%.1f", a - b }')
echo "pool, 10000 no-op trials, 2 workers: ${with_store} us per trial with the store" \
	"(target <= 100), ${no_store} us without: store ${store_cost} us per committed trial" \
	"(target <= 500); fork per trial: ${fork_each} us per trial"
emit "pool no-op trials" "us per trial, 2 workers, with the store / without" "$with_store" "$no_store" \
	"$(ratio "$with_store" "$no_store")" "" "<= 100 us"
emit "pool no-op trials" "us per trial, a fresh worker per trial / reused workers" "$fork_each" "$with_store" \
	"$(ratio "$fork_each" "$with_store")"

# 2. parallel efficiency: N trials on synth_clf_100k, J=1 vs J=2, measured
#    on the trial phase the store records (first lease to last result).  On
#    a shared or virtual 2-core machine two processes rarely get two whole
#    cores, so the same N trials also run as two independent J=1 commands
#    side by side (N/2 each): that is the ceiling the hardware allows, and
#    the pool is judged against it too.
SYN="$BENCH_DIR/synth_clf_100k.csv"
EFF_ARGS=(--models linear --num-repeat 16)
HALF_ARGS=(--models linear --num-repeat 8)
EFF_MODEL=linear
if "$CFL" --version 2>/dev/null | grep -qw fcnn; then
	# fcnn: the W1 net with 20 epochs (about a second per trial)
	EFF_MODEL=fcnn
	F=(--models fcnn --set fcnn.hidden=64,64 --set fcnn.batch_size=128 --set fcnn.epochs=20 --set fcnn.patience=0)
	EFF_ARGS=("${F[@]}" --num-repeat 4)
	HALF_ARGS=("${F[@]}" --num-repeat 2)
fi
span() {	# span DB -> seconds from the first lease to the last result
	sqlite3 "$1" "select max(finished) - min(started) from trials"
}
phase() {	# phase J -> seconds, median of RUNS
	for _ in $(seq "$RUNS"); do
		rm -f "$B/e.db" "$B/e.db-wal" "$B/e.db-shm"
		"$CFL" repeat "$SYN" "${EFF_ARGS[@]}" --num-jobs "$1" --ensemble none \
			--db "$B/e.db" -q >/dev/null 2>&1 || exit 1
		span "$B/e.db"
	done | median
}
ceiling() {	# two J=1 commands side by side -> seconds, median of RUNS
	for _ in $(seq "$RUNS"); do
		rm -f "$B"/h[12].db*
		"$CFL" repeat "$SYN" "${HALF_ARGS[@]}" --num-jobs 1 --ensemble none \
			--db "$B/h1.db" -q >/dev/null 2>&1 &
		"$CFL" repeat "$SYN" "${HALF_ARGS[@]}" --seed 1 --num-jobs 1 --ensemble none \
			--db "$B/h2.db" -q >/dev/null 2>&1
		wait
		a=$(span "$B/h1.db") b=$(span "$B/h2.db")
		awk -v a="$a" -v b="$b" 'BEGIN { print (a > b ? a : b) }'
	done | median
}
t1=$(phase 1)
t2=$(phase 2)
tc=$(ceiling)
eff=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", a / (2 * b) * 100 }')
ceil=$(awk -v a="$t1" -v b="$tc" 'BEGIN { printf "%.0f", a / (2 * b) * 100 }')
rel=$(awk -v c="$tc" -v b="$t2" 'BEGIN { printf "%.0f", c / b * 100 }')
echo "parallel efficiency, $EFF_MODEL on synth_clf_100k: J=1 ${t1} s, J=2 ${t2} s:" \
	"${eff}% of twice J=1's throughput (target >= 90%); two independent J=1" \
	"processes: ${tc} s (${ceil}%): the pool reaches ${rel}% of that ceiling"
emit "pool parallel efficiency" "$EFF_MODEL synth_clf_100k: J=2 s, J=1 s, efficiency J=1 / (2 x J=2)" "$t2" "$t1" \
	"$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", a / (2 * b) }')" "" ">= 0.90"
emit "pool parallel efficiency" "J=2 s, two independent J=1 processes side by side s (the machine's ceiling, ${ceil}% efficient), ceiling / J=2" "$t2" "$tc" \
	"$(awk -v c="$tc" -v b="$t2" 'BEGIN { printf "%.3f", c / b }')"

# 3. W1 end to end (wall time of the whole command, start-up included)
#    against tests/bench/w1_e2e_torch.py, on the split make_data.py wrote:
#    cfl and PyTorch alternately, RUNS times each (so that the machine's
#    load hits both alike), medians and the range of the pairs' ratios.
#    PyTorch runs the OpenBLAS kernels cfl runs (run.sh's OPENBLAS_CORETYPE)
#    and one thread a process, as cfl does
wall1() {	# wall1 CMD... -> seconds of one run
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}
w1=""
if [ "$EFF_MODEL" = fcnn ]; then
	w1="| dataset | cfl wall s (median of $RUNS) | PyTorch wall s (median of $RUNS) | speed-up (pairs) | target |\n|---|---|---|---|---|\n"
	for ds in iris breast_cancer digits diabetes synth_clf_100k; do
		tr="$BENCH_DIR/$ds.train.csv" te="$BENCH_DIR/$ds.test.csv"
		task=""
		[ "$ds" = diabetes ] && task="--task reg"
		# PyTorch takes about 20 s a run on synth_clf_100k on a quiet 2-core
		# machine and 1-1.5 s elsewhere (mostly start-up); QUICK=1 reuses
		# the 100k figure of the last full run (peer_kept in lib.sh)
		kept=0 note=""
		if [ "$ds" = synth_clf_100k ] && peer_kept "pool-w1-$ds"; then
			kept=1
			note=" (PyTorch: $(peer_kept_note "pool-w1-$ds"))"
		fi
		: > "$B/w1.pairs"
		for _ in $(seq "$RUNS"); do
			c=$(wall1 "$CFL" repeat "$tr" --test "$te" $task --models fcnn \
				--set fcnn.hidden=64,64 --set fcnn.batch_size=128 --set fcnn.epochs=40 --set fcnn.patience=0 \
				--valid-frac 0 --num-repeat 3 --num-jobs 2 --ensemble none \
				--db "$B/w1.db" -q) || exit 1
			if [ $kept = 1 ]; then
				t=$(cat "$(peer_kept_file "pool-w1-$ds")")
			else
				t=$(wall1 $PY "$ROOT/tests/bench/w1_e2e_torch.py" "$tr" "$te") || exit 1
			fi
			echo "$c $t" >> "$B/w1.pairs"
		done
		c=$(awk '{ print $1 }' "$B/w1.pairs" | median)
		t=$(awk '{ print $2 }' "$B/w1.pairs" | median)
		pairs=$(awk '{ printf "%.1f\n", $2 / $1 }' "$B/w1.pairs" | range)
		if [ "$ds" = synth_clf_100k ] && [ $kept = 0 ]; then
			echo "$t" > "$B/torch.txt" && peer_keep "pool-w1-$ds" "$B/torch.txt"
		fi
		x=$(awk -v c="$c" -v t="$t" 'BEGIN { printf "%.1f", t / c }')
		goal=10
		echo "W1 $ds: cfl ${c} s, PyTorch ${t} s: ${x}x (pairs ${pairs}; target ${goal}x)$note"
		emit "W1 end to end $ds" "wall s, cfl repeat vs PyTorch, alternately (medians of $RUNS) (PyTorch / cfl)" \
			"$c" "$t" "$x" "pairs ${pairs}${note}" ">= $goal"
		w1="$w1| $ds | $c | $t$note | ${x}x (${pairs}) | ${goal}x |\n"
	done
else
	echo "W1 end to end: skipped (needs the fcnn model)"
fi

{
	echo "### Pool overhead and parallel efficiency"
	echo
	echo "| figure | value | target |"
	echo "|---|---|---|"
	echo "| no-op trial, 2 workers, with store | ${with_store} us | <= 100 us |"
	echo "| no-op trial, 2 workers, no store | ${no_store} us | |"
	echo "| store cost per committed trial | ${store_cost} us | <= 500 us |"
	echo "| no-op trial, fork per trial | ${fork_each} us | |"
	echo "| parallel efficiency J=2 ($EFF_MODEL, synth_clf_100k) | ${eff}% | >= 90% |"
	echo "| two independent J=1 processes (the machine's ceiling) | ${ceil}% | |"
	echo "| the pool against that ceiling | ${rel}% | |"
	echo
	if [ -n "$w1" ]; then printf "%b\n" "$w1"; fi
} >>"$BENCH_DIR/results.md"
