#!/usr/bin/env bash
# W4 optimiser quality (../shared/WORKLOADS.md): Branin, Hartmann6 and
# Rosenbrock, 100 evaluations (regret also read at 30), seeds 0..19 (W4_SEEDS
# to change), cfl's bo and random (through the library: tests/bench/
# w4_driver.c) side by side with Optuna's TPE and random samplers.  Prints
# the median and quartiles of simple regret, the median proposal time at
# 100 trials, and cfl bo / TPE ratios; appends them to results.md.
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BENCH_DIR=${BENCH_DIR:-$ROOT/build/bench}
PY=${PY:-/usr/bin/python3}
SEEDS=${W4_SEEDS:-19}
export OPENBLAS_NUM_THREADS=1
cd "$ROOT"
mkdir -p "$BENCH_DIR/w4"
# the driver is built by the Makefile, linked like cfl
make -s --no-print-directory -C "$ROOT" "build/bench-bin/w4_driver" >/dev/null && cp "$ROOT/build/bench-bin/w4_driver" "$BENCH_DIR/" || exit 1

for f in branin hartmann6 rosenbrock; do
	for m in bo random; do
		"$BENCH_DIR/w4_driver" $f $m 100 0 "$SEEDS" > "$BENCH_DIR/w4/cfl_${m}_$f.txt" || exit 1
	done
	for m in tpe random; do
		$PY tests/bench/w4_optuna.py $f $m 100 0 "$SEEDS" > "$BENCH_DIR/w4/optuna_${m}_$f.txt" || exit 1
	done
done

$PY - "$BENCH_DIR/w4" <<'PYEOF' | tee -a "$BENCH_DIR/results.md"
import statistics, sys
d = sys.argv[1]
def load(name):
    rows = [list(map(float, l.split())) for l in open("%s/%s.txt" % (d, name)) if l.strip()]
    return [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]
def q(v):
    v = sorted(v); n = len(v)
    qs = statistics.quantiles(v, n=4) if n > 1 else [v[0]] * 3
    return "%.3g [%.3g, %.3g]" % (statistics.median(v), qs[0], qs[2])
print("\n## W4 optimiser quality (%s seeds; median [quartiles] of simple regret)\n" % len(load("cfl_bo_branin")[0]))
print("| function | sampler | regret @30 | regret @100 | ms/proposal @100 |")
print("|---|---|---|---|---|")
ratios = []
for f in ["branin", "hartmann6", "rosenbrock"]:
    res = {}
    for name, label in [("cfl_bo", "cfl bo"), ("cfl_random", "cfl random"),
                        ("optuna_tpe", "Optuna TPE"), ("optuna_random", "Optuna random")]:
        r30, r100, ms = load("%s_%s" % (name, f))
        res[name] = (r30, r100, ms)
        print("| %s | %s | %s | %s | %.2f |" % (f, label, q(r30), q(r100), statistics.median(ms)))
    b, t = res["cfl_bo"], res["optuna_tpe"]
    ratios.append((f, statistics.median(b[0]) / max(statistics.median(t[0]), 1e-300),
                   statistics.median(b[1]) / max(statistics.median(t[1]), 1e-300),
                   statistics.median(b[2]), statistics.median(t[2])))
print("\n| function | cfl bo / TPE regret @30 | @100 | cfl bo ms | TPE ms |")
print("|---|---|---|---|---|")
for f, r30, r100, bm, tm in ratios:
    print("| %s | %.3gx | %.3gx | %.2f | %.2f |" % (f, r30, r100, bm, tm))
print("\ntargets: regret ratio <= 0.5x at 30 and 100; <= 20 ms per proposal at 100 trials")
PYEOF
