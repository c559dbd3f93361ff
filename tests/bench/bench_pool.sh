# The pool (issue 6): overhead per no-op trial with and without the store,
# fork-per-trial cost, parallel efficiency on synth_clf_100k, and W1 end to
# end against PyTorch when the fcnn model and tests/bench/w1_torch.py exist.
# Medians of 3 runs; ratios are taken in the same run.
set -u
B="$BENCH_DIR/pool"
mkdir -p "$B"
PC_LIBS=$(pkg-config --libs openblas libpcre2-8 sqlite3 gsl | sed 's/-lgslcblas//')
cc -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/include" -o "$B/pool_bench" \
	"$ROOT/tests/bench/pool_bench.c" -Wl,--whole-archive "$ROOT/build/libcfl.a" \
	-Wl,--no-whole-archive $PC_LIBS -lm -lpthread || exit 1

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
IRIS="$ROOT/datasets/iris.csv"

# 1. no-op trials: J=2 workers reused for every trial, with the store (as
#    cfl repeat does it) and without (the pool alone); then a fresh child
#    per trial (--trials-per-worker 1)
runs() {	# runs DB N J TPW -> median us per trial
	for _ in 1 2 3; do
		rm -f "$B/p.db" "$B/p.db-wal" "$B/p.db-shm"
		"$B/pool_bench" "$IRIS" "$1" "$2" "$3" "$4" || exit 1
	done | median
}
with_store=$(runs "$B/p.db" 10000 2 0)
no_store=$(runs - 10000 2 0)
fork_each=$(runs "$B/p.db" 1000 2 1)
store_cost=$(awk -v a="$with_store" -v b="$no_store" 'BEGIN { printf "%.1f", a - b }')
echo "pool, 10000 no-op trials, 2 workers: ${with_store} us per trial with the store" \
	"(target <= 100), ${no_store} us without: store ${store_cost} us per committed trial" \
	"(target <= 500); fork per trial: ${fork_each} us per trial"

# 2. parallel efficiency: 16 linear trials on synth_clf_100k, J=1 vs J=2,
#    measured on the trial phase the store records (first start to last end)
SYN="$BENCH_DIR/synth_clf_100k.csv"
phase() {	# phase J -> seconds
	for _ in 1 2 3; do
		rm -f "$B/e.db" "$B/e.db-wal" "$B/e.db-shm"
		"$CFL" repeat "$SYN" --models "$EFF_MODEL" --num-repeat 16 --num-jobs "$1" \
			--db "$B/e.db" -q >/dev/null 2>&1 || exit 1
		sqlite3 "$B/e.db" "select max(finished) - min(started) from trials"
	done | median
}
EFF_MODEL=linear
"$CFL" --version 2>/dev/null | grep -qw fcnn && EFF_MODEL=fcnn
if [ "$EFF_MODEL" = fcnn ]; then
	# fcnn: fewer, longer trials (W1 net, fewer epochs to keep bench short)
	phase() {
		for _ in 1 2 3; do
			rm -f "$B/e.db" "$B/e.db-wal" "$B/e.db-shm"
			"$CFL" repeat "$SYN" --models fcnn --num-repeat 4 --num-jobs "$1" \
				--db "$B/e.db" -q >/dev/null 2>&1 || exit 1
			sqlite3 "$B/e.db" "select max(finished) - min(started) from trials"
		done | median
	}
fi
t1=$(phase 1)
t2=$(phase 2)
eff=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", a / (2 * b) * 100 }')
echo "parallel efficiency, $EFF_MODEL on synth_clf_100k: J=1 ${t1} s, J=2 ${t2} s:" \
	"${eff}% of twice J=1's throughput (target >= 90%)"

# 3. W1 end to end (wall time including start-up) against PyTorch
w1=""
if [ "$EFF_MODEL" = fcnn ] && [ -e "$ROOT/tests/bench/w1_torch.py" ]; then
	w1="| dataset | cfl wall s | PyTorch wall s | speed-up |\n|---|---|---|---|\n"
	for ds in iris breast_cancer digits synth_clf_100k diabetes; do
		f="$ROOT/datasets/$ds.csv"
		[ -e "$f" ] || f="$BENCH_DIR/$ds.csv"
		c=$(for _ in 1 2 3; do
			s=$(date +%s.%N)
			"$CFL" repeat "$f" --models fcnn --num-repeat 3 --num-jobs 2 \
				--set fcnn.epochs=40 --db "$B/w1.db" -q >/dev/null 2>&1
			e=$(date +%s.%N)
			awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
		done | median)
		t=$(for _ in 1 2 3; do
			s=$(date +%s.%N)
			$PY "$ROOT/tests/bench/w1_torch.py" "$ds" >/dev/null 2>&1
			e=$(date +%s.%N)
			awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
		done | median)
		x=$(awk -v c="$c" -v t="$t" 'BEGIN { printf "%.1f", t / c }')
		echo "W1 $ds: cfl ${c} s, PyTorch ${t} s: ${x}x (target 10x small, 5x synth_clf_100k)"
		w1="$w1| $ds | $c | $t | ${x}x |\n"
	done
else
	echo "W1 end to end: skipped (needs the fcnn model and tests/bench/w1_torch.py)"
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
	echo
	if [ -n "$w1" ]; then printf "%b\n" "$w1"; fi
} >>"$BENCH_DIR/results.md"
