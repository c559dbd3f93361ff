#!/usr/bin/env bash
# make bench: generates the synthetic datasets once, then runs every
# tests/bench/bench_*.sh in turn.  Each prints its figures (medians and
# ratios against the peer measured in the same run) and appends them to
# build/bench/results.md.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export ROOT CFL="$ROOT/cfl" BENCH_DIR="$ROOT/build/bench" PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mkdir -p "$BENCH_DIR"
$PY tests/bench/make_data.py "$BENCH_DIR" || exit 1
: > "$BENCH_DIR/results.md"
status=0
for b in tests/bench/bench_*.sh; do
	[ -e "$b" ] || continue
	[ -n "${BENCH:-}" ] && [[ "$b" != *"$BENCH"* ]] && continue
	echo "== $b"
	bash "$b" || { echo "bench $b failed"; status=1; }
done
echo "figures: $BENCH_DIR/results.md"
exit $status
