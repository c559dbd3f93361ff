#!/usr/bin/env bash
# The real public sets of tests/bench/make_real.R, for auto_splits.sh and
# auto_xgb.sh (REAL=1):
#
#     bash tests/bench/real_sets.sh DIR
#
# writes them to DIR/real (once) and prints their paths, comma-separated;
# without Rscript and R's mlbench and MASS packages it prints nothing and
# says on stderr that they are skipped.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=${1:?usage: real_sets.sh DIR}
if ! Rscript -e 'suppressMessages({library(mlbench); library(MASS)})' >/dev/null 2>&1; then
	echo "real_sets: the real sets skipped: they need Rscript with mlbench and MASS" \
		"(apt-get install r-base-core r-cran-mlbench r-cran-mass)" >&2
	exit 0
fi
[ -f "$D/real/real_zoo.csv" ] || Rscript "$ROOT/tests/bench/make_real.R" "$D/real" >&2 || exit 1
ls "$D"/real/real_*.csv | tr '\n' ',' | sed 's/,$//'
