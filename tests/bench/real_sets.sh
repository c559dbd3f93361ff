#!/usr/bin/env bash
# The real public sets of tests/bench/make_real.R, for auto_splits.sh and
# auto_xgb.sh (REAL=1; REAL=b: the second panel):
#
#     bash tests/bench/real_sets.sh DIR [b]
#
# writes them to DIR/real (panel B: DIR/realb) once and prints their paths,
# comma-separated; without Rscript and R's mlbench and MASS packages it
# prints nothing and says on stderr that they are skipped.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=${1:?usage: real_sets.sh DIR [b]}
case "${2:-}" in
'') sub=real last=real_zoo ;;
b) sub=realb last=realb_vowel ;;
*) echo "usage: real_sets.sh DIR [b]" >&2; exit 2 ;;
esac
if ! Rscript -e 'suppressMessages({library(mlbench); library(MASS)})' >/dev/null 2>&1; then
	echo "real_sets: the real sets skipped: they need Rscript with mlbench and MASS" \
		"(apt-get install r-base-core r-cran-mlbench r-cran-mass)" >&2
	exit 0
fi
[ -f "$D/$sub/$last.csv" ] || Rscript "$ROOT/tests/bench/make_real.R" "$D/$sub" ${2:-} >&2 || exit 1
ls "$D/$sub/${sub}"_*.csv | tr '\n' ',' | sed 's/,$//'
