#!/usr/bin/env bash
# W4 optimiser quality (../shared/WORKLOADS.md): Branin, Hartmann6 and
# Rosenbrock, 100 evaluations (regret also read at 30), seeds 0..19 (QUICK:
# 0..3; W4_SEEDS=N for 0..N), cfl's bo and random (through the library:
# tests/bench/w4_driver.c) side by side with Optuna's TPE and random
# samplers; and cfl's bo with 4 candidates in flight (as `cfl tune
# --num-parallel 4`) against its own sequential search.  Prints the median
# and quartiles of simple regret, the median proposal time at 100 trials
# (wall and CPU), the ratios, and emits them.  The seeds run in two
# halves side by side, one per core (see half() below).
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BENCH_DIR=${BENCH_DIR:-$ROOT/build/bench}
PY=${PY:-/usr/bin/python3}
. "$ROOT/tests/bench/lib.sh"
SEEDS=${W4_SEEDS:-$(reps 19 3)}
export OPENBLAS_NUM_THREADS=1
cd "$ROOT"
mkdir -p "$BENCH_DIR/w4"
# the driver is built by the Makefile, linked like cfl
make -s --no-print-directory -C "$ROOT" "build/bench-bin/w4_driver" >/dev/null && cp "$ROOT/build/bench-bin/w4_driver" "$BENCH_DIR/" || exit 1

# The seeds in two halves, one per core: each half runs the same samplers
# in the same order, so each proposal time is measured beside the same kind
# of work on the other core, cfl's and Optuna's alike (half the wall time
# of one process running all seeds; the regrets do not depend on it)
half() {	# half SEED0 SEED1 TAG
	local f m
	for f in branin hartmann6 rosenbrock; do
		for m in bo random; do
			"$BENCH_DIR/w4_driver" $f $m 100 "$1" "$2" > "$BENCH_DIR/w4/cfl_${m}_$f.$3" || return 1
		done
		"$BENCH_DIR/w4_driver" $f bo 100 "$1" "$2" 4 > "$BENCH_DIR/w4/cfl_bo4_$f.$3" || return 1
		for m in tpe random; do
			$PY tests/bench/w4_optuna.py $f $m 100 "$1" "$2" > "$BENCH_DIR/w4/optuna_${m}_$f.$3" || return 1
		done
	done
}
mid=$(((SEEDS + 1) / 2))
half 0 $((mid - 1)) a &
pid=$!
half "$mid" "$SEEDS" b || { wait $pid; exit 1; }
wait $pid || exit 1
for f in branin hartmann6 rosenbrock; do
	for m in cfl_bo cfl_random cfl_bo4 optuna_tpe optuna_random; do
		cat "$BENCH_DIR/w4/${m}_$f.a" "$BENCH_DIR/w4/${m}_$f.b" > "$BENCH_DIR/w4/${m}_$f.txt" || exit 1
	done
done

$PY - "$BENCH_DIR/w4" "$BENCH_DIR/results.md" >"$BENCH_DIR/w4/emit.txt" <<'PYEOF' || exit 1
import statistics, sys
d, md = sys.argv[1], sys.argv[2]
def load(name):
    rows = [list(map(float, l.split())) for l in open("%s/%s.txt" % (d, name)) if l.strip()]
    return [[r[k] for r in rows] for k in (1, 2, 3, 4)]
def quart(v):
    v = sorted(v)
    qs = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return qs[0], qs[2]
def q(v):
    lo, hi = quart(v)
    return "%.3g [%.3g, %.3g]" % (statistics.median(v), lo, hi)
med = statistics.median
out, emit = [], []
n_seeds = len(load("cfl_bo_branin")[0])
out.append("\n## W4 optimiser quality (%d seeds; median [quartiles] of simple regret)\n" % n_seeds)
out.append("| function | sampler | regret @30 | regret @100 | ms/proposal @100 | CPU ms |")
out.append("|---|---|---|---|---|---|")
ratios = []
for f in ["branin", "hartmann6", "rosenbrock"]:
    res = {}
    for name, label in [("cfl_bo", "cfl bo"), ("cfl_bo4", "cfl bo, 4 in flight"),
                        ("cfl_random", "cfl random"), ("optuna_tpe", "Optuna TPE"),
                        ("optuna_random", "Optuna random")]:
        res[name] = load("%s_%s" % (name, f))
        r30, r100, ms, cpu = res[name]
        out.append("| %s | %s | %s | %s | %.2f | %.2f |" % (f, label, q(r30), q(r100), med(ms), med(cpu)))
    b, b4, t = res["cfl_bo"], res["cfl_bo4"], res["optuna_tpe"]
    ratios.append((f, med(b[0]) / max(med(t[0]), 1e-300), med(b[1]) / max(med(t[1]), 1e-300),
                   med(b[2]), med(t[2]), med(b4[0]) / max(med(b[0]), 1e-300)))
    spread = lambda v: "quartiles %.3g-%.3g" % quart(v)
    emit.append(("W4 %s" % f, "regret @30, cfl bo / Optuna TPE", med(b[0]), med(t[0]),
                 ratios[-1][1], spread(b[0]), "<= 0.5"))
    emit.append(("W4 %s" % f, "regret @100, cfl bo / Optuna TPE", med(b[1]), med(t[1]),
                 ratios[-1][2], spread(b[1]), "<= 0.5"))
    emit.append(("W4 %s" % f, "ms per proposal @100, cfl bo / Optuna TPE", med(b[2]), med(t[2]),
                 med(b[2]) / med(t[2]), "range %.3g-%.3g" % (min(b[2]), max(b[2])), "<= 5 ms"))
    emit.append(("W4 %s" % f, "CPU ms per proposal @100, cfl bo / Optuna TPE", med(b[3]), med(t[3]),
                 med(b[3]) / med(t[3]), "range %.3g-%.3g" % (min(b[3]), max(b[3])), ""))
    emit.append(("W4 %s" % f, "regret @30, bo with 4 in flight / sequential bo", med(b4[0]), med(b[0]),
                 ratios[-1][5], spread(b4[0]), "<= 2"))
    emit.append(("W4 %s" % f, "regret @100, bo with 4 in flight / sequential bo", med(b4[1]), med(b[1]),
                 med(b4[1]) / max(med(b[1]), 1e-300), spread(b4[1]), ""))
out.append("\n| function | cfl bo / TPE regret @30 | @100 | cfl bo ms | TPE ms | 4 in flight / sequential @30 |")
out.append("|---|---|---|---|---|---|")
for f, r30, r100, bm, tm, par in ratios:
    out.append("| %s | %.3gx | %.3gx | %.2f | %.2f | %.3gx |" % (f, r30, r100, bm, tm, par))
out.append("\ntargets: regret ratio <= 0.5x at 30 and 100; <= 5 ms per proposal at 100 trials;"
           " 4 in flight within 2x of sequential at 30")
text = "\n".join(out)
sys.stderr.write(text + "\n")
with open(md, "a") as fh:
    fh.write(text + "\n")
for e in emit:
    print("\x1f".join("%.4g" % v if isinstance(v, float) else str(v) for v in e))
PYEOF
emit_file "$BENCH_DIR/w4/emit.txt"
