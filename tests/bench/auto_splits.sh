#!/usr/bin/env bash
# cfl auto against cfl's five defaults and against the default a user would
# pick by 5-fold cross-validation, over many splits of every set in
# datasets/ and of messy synthetic sets (tests/bench/make_messy.py: string
# labels, missing cells, categorical columns, duplicates, imbalance):
#
#     bash tests/bench/auto_splits.sh [SPLITS] [SET ...]
#
# (SPLITS 20; the sets: iris wine breast_cancer diabetes digits and the
# held-in synthetic ones; the held-out synthetic sets are measured last and
# reported in a table of their own).  auto runs with a count budget,
# `--max-trials 20` (AUTO_TRIALS=N for another), so its figures do not
# depend on the machine's load; the defaults are seeded.  The driver is
# tests/bench/auto_splits.py (its docstring says what is compared and how);
# it prints Markdown: per set the paired differences auto - X over the
# splits with their standard errors.  Not part of `make bench` (the short
# form is in bench_auto.sh): 11 sets x 20 splits take about 40 minutes on
# the 2-core machine.  Files go to build/bench/auto_splits/ (SPLITS_DIR=DIR
# for another); AUTO_ARGS="--refit" adds options to every `cfl auto`;
# SPLIT_FIRST=K takes the splits random_state K..K+SPLITS-1 instead;
# HELD_OUT=0 leaves the held-out sets out (HELD_OUT=only: only them).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CFL_BIN=${CFL:-$ROOT/cfl}
PY=${PY:-/usr/bin/python3}
N=${1:-20}
shift 2>/dev/null
D=${SPLITS_DIR:-$ROOT/build/bench/auto_splits}
[ -x "$CFL_BIN" ] || { echo "auto_splits: $CFL_BIN is missing (run make)" >&2; exit 1; }
case "$N${SPLIT_FIRST:-0}" in '' | *[!0-9]*) echo "auto_splits: SPLITS and SPLIT_FIRST must be numbers" >&2; exit 2 ;; esac
mkdir -p "$D/messy" || exit 1
"$PY" "$ROOT/tests/bench/make_messy.py" "$D/messy" || exit 1
export OPENBLAS_NUM_THREADS=1
path_of() { case "$1" in messy_*) echo "$D/messy/$1.csv" ;; *) echo "$1" ;; esac; }
list() { local s out=; for s in "$@"; do out="$out${out:+,}$(path_of "$s")"; done; echo "$out"; }
if [ $# -gt 0 ]; then
	IN=$(list "$@") OUT=
else
	IN=$(list iris wine breast_cancer diabetes digits $("$PY" "$ROOT/tests/bench/make_messy.py" --list in))
	OUT=$(list $("$PY" "$ROOT/tests/bench/make_messy.py" --list out))
fi
case "${HELD_OUT:-1}" in 0) OUT= ;; only) IN= ;; esac
echo "### cfl auto against cfl's defaults over $N splits (load at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ))"
echo
exec "$PY" "$ROOT/tests/bench/auto_splits.py" "$D" --cfl "$CFL_BIN" --sets "$IN" --held-out "$OUT" \
	--splits "$N" --first "${SPLIT_FIRST:-0}" --trials "${AUTO_TRIALS:-20}" --auto-args "${AUTO_ARGS:-}"
