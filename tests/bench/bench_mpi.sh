# The MPI backend: W1 on synth_clf_100k under `mpirun -n 3`
# (rank 0 coordinates, two worker ranks with one trial slot each) against
# the local pool with two slots, wall time of the whole command; and no-op
# trial throughput through MPI against the local pool (tests/bench/mpi_bench.c).
# Medians of 3 runs (QUICK: 1), ratios taken in the same run (W1: the two
# alternately).  Skipped without mpirun or in a build without MPI.
set -u
. "$ROOT/tests/bench/lib.sh"
RUNS=$(reps 3 1)
B="$BENCH_DIR/mpi"
mkdir -p "$B"
if ! command -v mpirun >/dev/null 2>&1 || ! "$CFL" --version | grep -q '^backends:.* mpi'; then
	echo "mpi: skipped (no mpirun, or cfl built without MPI)"
	exit 0
fi
make -s -C "$ROOT" build/tests/mpi_bench >/dev/null || exit 1
ROOTOPT=()
[ "$(id -u)" = 0 ] && ROOTOPT=(--allow-run-as-root)
mpi() { timeout -k 5 900 mpirun "${ROOTOPT[@]}" --oversubscribe "$@"; }

# 1. no-op trials: 2 slots either way; 5,000 trials (mpi_bench times the
#    trials, not the start-up): 2 s through MPI at about 2,600 a second,
#    where 20,000 took 8 s a run for the same rate
IRIS="$ROOT/datasets/iris.csv"
NOOP_N=${MPI_NOOP_TRIALS:-5000}
noop() {	# noop CMD... -> trials/s, median of RUNS
	for _ in $(seq "$RUNS"); do
		"$@" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i == "trials/s") print $(i - 1) }'
	done | median
}
n_local=$(noop "$ROOT/build/tests/mpi_bench" "$IRIS" "$NOOP_N" 2)
n_mpi=$(noop mpi -n 3 "$ROOT/build/tests/mpi_bench" "$IRIS" "$NOOP_N" 1)
echo "no-op trials/s, 2 slots: local pool ${n_local}, through MPI (mpirun -n 3) ${n_mpi}"
emit "MPI no-op trials" "trials/s, mpirun -n 3 / local pool (2 slots)" "$n_mpi" "$n_local" "$(ratio "$n_mpi" "$n_local")"

# 2. W1 on synth_clf_100k (the W1 net when fcnn is built in, else linear)
SYN="$BENCH_DIR/synth_clf_100k.csv"
MODEL=(--models linear)
name=linear
if "$CFL" --version | grep -qw fcnn; then
	MODEL=(--models fcnn --set fcnn.hidden=64,64 --set fcnn.batch_size=128 --set fcnn.epochs=40 --set fcnn.patience=0)
	name="fcnn (W1 net, 40 epochs)"
fi
ARGS=("$SYN" "${MODEL[@]}" --num-repeat 3 --seed 0 --ensemble none --db "$B/w.db" -q)
# the local pool and mpirun alternately, so that the machine's load hits
# both alike: medians, and the range of the pairs' ratios
one() {	# one CMD... -> seconds of one run
	local s e
	rm -f "$B"/w.db*
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}
: > "$B/w1.pairs"
for _ in $(seq "$RUNS"); do
	a=$(one "$CFL" repeat "${ARGS[@]}" --num-jobs 2) || exit 1
	b=$(one mpi -n 3 "$CFL" repeat "${ARGS[@]}" --num-jobs 1) || exit 1
	echo "$a $b" >> "$B/w1.pairs"
done
t_local=$(awk '{ print $1 }' "$B/w1.pairs" | median)
t_mpi=$(awk '{ print $2 }' "$B/w1.pairs" | median)
pairs=$(awk '{ printf "%.3f\n", $2 / $1 }' "$B/w1.pairs" | range)
ratio=$(awk -v a="$t_mpi" -v b="$t_local" 'BEGIN { printf "%.2f", a / b }')
emit "MPI W1 synth_clf_100k" "$name x3 wall s, mpirun -n 3 / local pool, alternately" "$t_mpi" "$t_local" "$ratio" \
	"pairs $pairs" "<= 1.10"
echo "W1 $name on synth_clf_100k, 3 seeds: local pool (2 slots) ${t_local} s," \
	"mpirun -n 3 ${t_mpi} s: ${ratio}x the local wall time (pairs ${pairs}; target <= 1.10)"

{
	echo "### MPI backend"
	echo
	echo "| figure | local pool, 2 slots | mpirun -n 3 (2 worker ranks x 1 slot) | target |"
	echo "|---|---|---|---|"
	echo "| no-op trials/s | ${n_local} | ${n_mpi} | |"
	echo "| W1 $name, synth_clf_100k, wall s | ${t_local} | ${t_mpi} (${ratio}x) | <= 1.10x |"
	echo
} >>"$BENCH_DIR/results.md"
