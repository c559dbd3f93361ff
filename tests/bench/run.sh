#!/usr/bin/env bash
# make bench: generates the synthetic datasets once, then runs every
# tests/bench/bench_*.sh in turn (BENCH=NAME: only the scripts whose name
# holds NAME).  Each prints its figures and records each one with `emit`
# (tests/bench/lib.sh) in build/bench/results.jsonl; at the end
# gen_results.py turns that file into build/bench/RESULTS.md and, on a full
# run (not QUICK=1), into tests/bench/RESULTS.md, the table the docs link.
# A run with BENCH= replaces only its own scripts' figures in the file.
# QUICK=1: the same tables on fewer repeats (about 3 minutes).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export ROOT CFL="$ROOT/cfl" BENCH_DIR="$ROOT/build/bench" PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export QUICK=${QUICK:-0}
[ "$QUICK" = 0 ] || QUICK=1
. "$ROOT/tests/bench/lib.sh"
mkdir -p "$BENCH_DIR"
$PY tests/bench/make_data.py "$BENCH_DIR" || exit 1
: > "$BENCH_DIR/results.md"
# the peers' seeded quality figures (sk_defaults in lib.sh): fresh on a full
# run, kept by QUICK=1 or BENCH_REUSE_PEERS=1
if [ "${BENCH_REUSE_PEERS:-$QUICK}" != 1 ]; then rm -rf "$BENCH_DIR/peers"; fi
JSONL="$BENCH_DIR/results.jsonl"
scripts=()
for b in tests/bench/bench_*.sh; do
	[ -e "$b" ] || continue
	[ -n "${BENCH:-}" ] && [[ "$b" != *"$BENCH"* ]] && continue
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
cpu_total=0
start=$(date +%s)
for b in "${scripts[@]}"; do
	echo "== $b"
	# wall and CPU seconds (user + system of the script and everything it
	# waited for): the CPU figure says what the script costs whatever the load
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %U %S' -o "$BENCH_DIR/time.txt" bash "$b" || { echo "bench $b failed"; status=1; }
		read -r w u s < <(tail -1 "$BENCH_DIR/time.txt")
		cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u + s }')
		cpu_total=$((cpu_total + cpu))
		echo "== $b: ${w%.*} s wall, $cpu s CPU"
	else
		t0=$(date +%s)
		bash "$b" || { echo "bench $b failed"; status=1; }
		echo "== $b: $(($(date +%s) - t0)) s"
	fi
done
echo "== bench: $(($(date +%s) - start)) s wall, ${cpu_total} s CPU on $(getconf _NPROCESSORS_ONLN) cores, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
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
