#!/usr/bin/env bash
# make bench: generates the synthetic datasets once, then runs every
# tests/bench/bench_*.sh in turn (BENCH=NAME: only the scripts whose name
# holds NAME; BENCH="NAME1 NAME2": any of them).  Each prints its figures
# and records each one with `emit` (tests/bench/lib.sh) in
# build/bench/results.jsonl (QUICK=1: results.quick.jsonl); at the end
# gen_results.py turns that file into build/bench/RESULTS.md and, on a full
# run (not QUICK=1), into tests/bench/RESULTS.md, the table the docs link.
# A run with BENCH= replaces only its own scripts' figures in the file.
# QUICK=1: the same tables on fewer repeats.
#
# Budget: a whole run is meant to take at most 15 minutes wall on a quiet
# 2-core machine (QUICK=1: 3 minutes; BENCH_BUDGET=S sets another); the
# last lines give each script's wall and CPU seconds, the total, and
# whether a whole run met the budget (also recorded as a figure).  Timed
# scripts run one at a time on an otherwise idle machine.  The work that
# only scores quality and times nothing shares the two cores, ahead of
# them: bench_quality.sh and then bench_w3.sh's quality runs
# (W3_PART=quality) and bench_auto.sh's cfl defaults (AUTO_PART=defaults)
# run beside scikit-learn's seeded defaults for bench_w7.sh and
# bench_auto.sh (sk_defaults) and then bench_w7.sh itself.
# QUICK=1 also reuses the 100k sets' peer timings of the last full run
# (peer_kept in lib.sh; BENCH_REUSE_PEER_TIMES=0 times them afresh) and
# its quality-only figures (quality_kept; BENCH_REUSE_QUALITY=0: afresh).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export ROOT CFL="$ROOT/cfl" BENCH_DIR="$ROOT/build/bench" PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export QUICK=${QUICK:-0}
[ "$QUICK" = 0 ] || QUICK=1
. "$ROOT/tests/bench/lib.sh"
# PyTorch, numpy and sgemm_w1 load Debian's OpenBLAS too, which runs its
# generic fallback kernels on a CPU it does not know: every process of the
# bench runs the kernels cfl picks for itself (src/models/blas.c; the
# user's OPENBLAS_CORETYPE wins), so that no peer is slowed by what cfl
# works around; each figure records them (BENCH_BLAS)
BENCH_BLAS=$(bench_blas_kernels)
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -n "$BENCH_BLAS" ]; then
	export OPENBLAS_CORETYPE=$BENCH_BLAS
fi
export BENCH_BLAS
mkdir -p "$BENCH_DIR"
$PY tests/bench/make_data.py "$BENCH_DIR" || exit 1
: > "$BENCH_DIR/results.md"
# the peers' seeded quality figures (sk_defaults in lib.sh): fresh on a full
# run, kept by QUICK=1 or BENCH_REUSE_PEERS=1
if [ "${BENCH_REUSE_PEERS:-$QUICK}" != 1 ]; then rm -rf "$BENCH_DIR/peers"; fi
# a QUICK=1 run records its figures in a file of its own: a full BENCH= run
# after it then merges into the last full run's figures, not QUICK's
export BENCH_JSONL=results.jsonl
[ "$QUICK" = 1 ] && BENCH_JSONL=results.quick.jsonl
JSONL="$BENCH_DIR/$BENCH_JSONL"
scripts=()
for b in tests/bench/bench_*.sh; do
	[ -e "$b" ] || continue
	if [ -n "${BENCH:-}" ]; then
		hit=0
		for w in $BENCH; do [[ "$b" == *"$w"* ]] && hit=1; done
		[ $hit = 1 ] || continue
	fi
	scripts+=("$b")
done
if [ -n "${BENCH:-}" ] && [ -s "$JSONL" ]; then
	# keep the figures of the scripts not run now
	keep=$(for b in "${scripts[@]}"; do basename "$b"; done)
	$PY - "$JSONL" "$keep" <<'PYEOF' || exit 1
import json, sys
path, drop = sys.argv[1], set(sys.argv[2].split())
with open(path) as f:
    kept = [l for l in f if l.strip() and json.loads(l).get('script') not in drop]
with open(path, 'w') as f:
    f.writelines(kept)
PYEOF
else
	: > "$JSONL"
fi
status=0
TIMES="$BENCH_DIR/times.txt"
: > "$TIMES"
# run_one SCRIPT [TAG [PART]]: runs it, then prints and records ("name wall
# cpu" in $TIMES; the name "bench_x:PART" with a PART) its wall and CPU
# seconds (user + system of the script and everything it waited for: what
# the script costs whatever the load); status 1 if it failed
run_one() {
	local b=$1 tf="$BENCH_DIR/time.$$.$BASHPID.txt" rc=0 w u s cpu t0
	echo "== $b${2:+ ($2)}"
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %U %S' -o "$tf" bash "$b" || rc=1
		read -r w u s < <(tail -1 "$tf")
		rm -f "$tf"
		w=${w%.*}
		cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u + s }')
	else
		t0=$(date +%s)
		bash "$b" || rc=1
		w=$(($(date +%s) - t0)) cpu=-
	fi
	[ $rc = 0 ] || echo "bench $b failed"
	echo "== $b: $w s wall, $cpu s CPU${2:+ ($2)}"
	echo "$(basename "$b" .sh)${3:+:$3} $w $cpu" >> "$TIMES"
	return $rc
}
# scikit-learn's seeded default models of bench_w7.sh (seeds 0-2; QUICK:
# 0-1) and bench_auto.sh (seed 0, and synth_clf_100k on a full run), so
# that neither computes them while it runs; the order: what w7 needs first
prefetch_peers() {
	local n ds task t0 rc=0
	n=$(reps 3 2)
	t0=$(date +%s)
	for ds in iris wine breast_cancer digits diabetes; do
		[ $ds = diabetes ] && task=reg || task=clf
		sk_defaults $task $ds "$n" > /dev/null || rc=1
	done
	if [ $# -gt 0 ]; then "$@" || rc=1; fi
	if [ "$QUICK" = 0 ]; then sk_defaults clf synth_clf_100k 1 > /dev/null || rc=1; fi
	echo "== scikit-learn defaults for bench_w7/bench_auto computed ahead: $(($(date +%s) - t0)) s wall"
	return $rc
}
has() { local b; for b in "${scripts[@]}"; do [[ "$b" == *"/bench_$1.sh" ]] && return 0; done; return 1; }
start=$(date +%s)
lane=""
if has quality || has w7 || has auto; then
	# the quality-only work side by side, before the timed scripts: one
	# lane runs bench_quality.sh, W3's quality runs of the small sets and
	# bench_auto.sh's cfl defaults, the other scikit-learn's seeded
	# defaults and then bench_w7.sh
	lane=tests/bench/bench_w7.sh beside=""
	has w7 || lane=""
	if [ -n "$lane" ]; then
		prefetch_peers run_one "$lane" "beside bench_quality.sh" > "$BENCH_DIR/lane.log" 2>&1 &
		beside="beside the scikit-learn defaults and bench_w7.sh"
	elif has auto; then
		prefetch_peers > "$BENCH_DIR/lane.log" 2>&1 &
		beside="beside the scikit-learn defaults"
	else
		: > "$BENCH_DIR/lane.log" &
	fi
	lane_pid=$!
	if has quality; then
		run_one tests/bench/bench_quality.sh "$beside" || status=1
		lane="tests/bench/bench_quality.sh $lane"
	fi
	if has w3; then
		W3_PART=quality run_one tests/bench/bench_w3.sh "its quality runs, ahead${beside:+, $beside}" quality &&
			export W3_QUALITY_AHEAD=1
	fi
	if has auto; then
		AUTO_PART=defaults run_one tests/bench/bench_auto.sh "its cfl defaults, ahead${beside:+, $beside}" defaults &&
			export AUTO_DEFAULTS_AHEAD=1
	fi
	wait $lane_pid || { status=1; echo "bench: the scikit-learn defaults or bench_w7.sh failed"; }
	cat "$BENCH_DIR/lane.log"
fi
for b in "${scripts[@]}"; do
	[[ " $lane " == *" $b "* ]] && continue
	run_one "$b" || status=1
done
total=$(($(date +%s) - start))
cpu_total=$(awk '$3 != "-" { s += $3 } END { print s + 0 }' "$TIMES")
budget=${BENCH_BUDGET:-$(reps 900 180)}
echo "== per script (wall s, CPU s): $(awk '{ printf "%s%s %s/%s", (NR > 1 ? ", " : ""), $1, $2, $3 }' "$TIMES")"
echo "== bench: $total s wall, ${cpu_total} s CPU on $(getconf _NPROCESSORS_ONLN) cores, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "${BENCH:-}" ]; then
	if [ "$total" -le "$budget" ]; then
		echo "== budget: met ($total s of $budget s$([ "$QUICK" = 1 ] && echo ", QUICK=1"))"
	else
		echo "== budget: MISSED by $((total - budget)) s ($total s against $budget s$([ "$QUICK" = 1 ] && echo ", QUICK=1"); a quiet 2-core machine is assumed)"
	fi
	BENCH_SCRIPT=run.sh emit "make bench" "wall s of the whole run / the budget$([ "$QUICK" = 1 ] && echo " (QUICK=1)")" \
		"$total" "$budget" "$(ratio "$total" "$budget")" "CPU ${cpu_total} s" "<= 1"
else
	echo "== budget: $budget s applies to a whole run (BENCH= ran a part)"
fi
if [ -s "$JSONL" ]; then
	$PY tests/bench/gen_results.py "$JSONL" "$BENCH_DIR/RESULTS.md" || status=1
	if [ "$QUICK" = 0 ] && [ $status = 0 ]; then
		cp "$BENCH_DIR/RESULTS.md" tests/bench/RESULTS.md
		echo "table: tests/bench/RESULTS.md (from $JSONL)"
	else
		echo "table: $BENCH_DIR/RESULTS.md (from $JSONL)"
	fi
fi
echo "details: $BENCH_DIR/results.md"
exit $status
