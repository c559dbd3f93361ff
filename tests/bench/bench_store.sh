# W5 storage overhead: the store's cost per trial (ensure + lease + result,
# one transaction each, with metrics and predictions) against Optuna's
# SQLite storage on 1000 trivial trials, in the same run.  Median of 3
# (QUICK: 1).
set -u
. "$ROOT/tests/bench/lib.sh"
N=1000
B="$BENCH_DIR/store"
mkdir -p "$B"
# the driver is built by the Makefile, linked like cfl
make -s --no-print-directory -C "$ROOT" "build/bench-bin/store_bench" >/dev/null && cp "$ROOT/build/bench-bin/store_bench" "$B/" || exit 1


: > "$B/cfl.txt"
for i in $(seq "$(reps 3 1)"); do
	rm -f "$B/cfl.db" "$B/cfl.db-wal" "$B/cfl.db-shm"
	"$B/store_bench" "$B/cfl.db" $N >>"$B/cfl.txt" || exit 1
done
cfl_life=$(cut -d' ' -f1 "$B/cfl.txt" | median)
cfl_result=$(cut -d' ' -f2 "$B/cfl.txt" | median)

rm -f "$B/optuna.db"
optuna_ms=$($PY - "$B/optuna.db" $N <<'PY'
import sys, time
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
path, n = sys.argv[1], int(sys.argv[2])
study = optuna.create_study(storage="sqlite:///" + path,
                            sampler=optuna.samplers.RandomSampler(seed=0))
t = time.perf_counter()
study.optimize(lambda tr: tr.suggest_float("x", -10, 10) ** 2, n_trials=n)
print("%.3f" % ((time.perf_counter() - t) / n * 1000))
PY
) || optuna_ms=""

ratio=$(awk -v o="${optuna_ms:-0}" -v c="$cfl_life" 'BEGIN { if (o > 0) printf "%.0f", o * 1000 / c; else print "-" }')
emit "W5 store" "us per trial, cfl vs Optuna SQLite (Optuna / cfl)" "$cfl_life" \
	"$(awk -v o="${optuna_ms:-}" 'BEGIN { if (o != "") print o * 1000 }')" "$ratio" \
	"range $(cut -d' ' -f1 "$B/cfl.txt" | range)" "<= 500 us"
echo "store, $N trials: cfl ${cfl_life} us per trial (result commit ${cfl_result} us; median of 3)," \
	"Optuna SQLite ${optuna_ms:-n/a} ms per trial: ${ratio}x"
{
	echo "### W5 storage overhead ($N trials)"
	echo
	echo "| store | per trial | result commit | ratio |"
	echo "|---|---|---|---|"
	echo "| cfl (SQLite, WAL) | ${cfl_life} us | ${cfl_result} us | ${ratio}x faster |"
	echo "| Optuna 3 (SQLite, random sampler) | ${optuna_ms:-n/a} ms | | 1 |"
	echo
} >>"$BENCH_DIR/results.md"
