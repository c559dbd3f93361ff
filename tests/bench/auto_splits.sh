#!/usr/bin/env bash
# cfl auto against cfl's defaults over many splits of the small datasets:
#
#     bash tests/bench/auto_splits.sh [SPLITS] [DATASET ...]
#
# (SPLITS 20; the datasets: iris wine breast_cancer diabetes).  bench_auto.sh
# compares `cfl auto --time-limit 60` with the best default on the one split
# of ../shared/WORKLOADS.md (random_state 0), where the test part of iris or
# wine is 30 or 36 rows: one row is 3%.  This script repeats the comparison
# on the splits random_state 0..SPLITS-1 (train_test_split, test_size 0.2,
# stratified for classification, as make_data.py) and prints, per dataset,
# the mean test accuracy (RMSE for diabetes) of auto's leaderboard's first
# entry, of its `top`, `mean`, `stacking` and `greedy` entries, and of each default model of
# `cfl repeat --models fcnn,linear,tree,forest,gbdt` (seed 0), the best of
# them picked on the mean over the splits (with hindsight: it favours the
# defaults).  Not part of `make bench`: on the small sets auto ends when
# its search stops improving (seconds, not its limit), but 4 x 20 runs of
# auto and of the five defaults still take about 3 minutes (02:41-02:44
# on 2026-11-27, load 1.2-2.4).
# Files go to build/bench/auto_splits/ (SPLITS_DIR=DIR for another);
# AUTO_ARGS="--folds 10" adds options to every `cfl auto`; SPLIT_FIRST=K
# takes the splits random_state K..K+SPLITS-1 instead (fresh splits, to
# check on other rows a choice made on the first ones).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CFL_BIN=${CFL:-$ROOT/cfl}
PY=${PY:-/usr/bin/python3}
N=${1:-20}
shift 2>/dev/null
SETS=${*:-iris wine breast_cancer diabetes}
D=${SPLITS_DIR:-$ROOT/build/bench/auto_splits}
. "$ROOT/tests/bench/lib.sh"
[ -x "$CFL_BIN" ] || { echo "auto_splits: $CFL_BIN is missing (run make)" >&2; exit 1; }
FIRST=${SPLIT_FIRST:-0}
case "$N$FIRST" in '' | *[!0-9]*) echo "auto_splits: SPLITS and SPLIT_FIRST must be numbers, got '$N' and '$FIRST'" >&2; exit 2 ;; esac
mkdir -p "$D" || exit 1
rm -f "$D"/runs.db*
export OPENBLAS_NUM_THREADS=1

echo "### cfl auto --time-limit 60${AUTO_ARGS:+ $AUTO_ARGS} against cfl's defaults, mean test figure over $N splits (load at the start: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| dataset | metric | auto: first entry | auto: top | auto: mean | auto: stacking | auto: greedy | fcnn | linear | tree | forest | gbdt | best default | first entry - best default |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
status=0
for ds in $SETS; do
	src="$ROOT/datasets/$ds.csv"
	[ -f "$src" ] || { echo "auto_splits: $src is missing" >&2; status=1; continue; }
	metric=acc task=clf
	[ "$ds" = diabetes ] && metric=rmse task=reg
	"$PY" - "$src" "$D/$ds" "$N" "$task" "$FIRST" <<'PYEOF' || { status=1; continue; }
import csv, sys
from sklearn.model_selection import train_test_split
src, out, n, task, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
with open(src) as f:
    rows = list(csv.reader(f))
header, body = rows[0], rows[1:]
y = [r[-1] for r in body]
for rs in range(first, first + n):
    a, b = train_test_split(body, test_size=0.2, random_state=rs,
                            stratify=y if task == 'clf' else None)
    for suffix, part in (('train', a), ('test', b)):
        with open('%s.%d.%s.csv' % (out, rs, suffix), 'w', newline='') as f:
            w = csv.writer(f, lineterminator='\n')
            w.writerow(header)
            w.writerows(part)
PYEOF
	: > "$D/$ds.lines"
	for ((rs = FIRST; rs < FIRST + N; rs++)); do
		tr="$D/$ds.$rs.train.csv" te="$D/$ds.$rs.test.csv"
		# shellcheck disable=SC2086
		"$CFL_BIN" auto "$tr" --test "$te" --time-limit 60 --metric "$metric" ${AUTO_ARGS:-} \
			--db "$D/runs.db" --name "auto-$ds-$rs" -q > "$D/auto-$ds-$rs.txt" 2> "$D/auto-$ds-$rs.err" ||
			{ echo "auto_splits: cfl auto on $ds split $rs failed: $(tail -2 "$D/auto-$ds-$rs.err")" >&2; status=1; continue; }
		CFL=$CFL_BIN cfl_defaults "$tr" "$te" "$metric" "$D/runs.db" "def-$ds-$rs" "$D/def-$ds-$rs.csv" ||
			{ echo "auto_splits: the defaults on $ds split $rs failed: $(tail -2 "$D/def-$ds-$rs.csv.err")" >&2; status=1; continue; }
		# one line per split: key value pairs
		{
			awk '/^Leaderboard/ { on = 1; next }
			     on && /^[0-9]+ / { if ($1 == 1) print "first", $6; if ($2 == "top" || $2 == "mean" || $2 == "stacking" || $2 == "greedy") print $2, $6 }
			     on && /^$/ { on = 0 }' "$D/auto-$ds-$rs.txt"
			awk -F, 'NR > 1 { print $1, $3 }' "$D/def-$ds-$rs.csv"
		} | awk '{ printf "%s=%s ", $1, $2 } END { print "" }' >> "$D/$ds.lines"
	done
	awk -v ds="$ds" -v metric="$metric" -v s="$([ "$metric" = rmse ] && echo -1 || echo 1)" '
	{ for (i = 1; i <= NF; i++) { split($i, kv, "="); sum[kv[1]] += kv[2]; cnt[kv[1]]++ } }
	function m(k) { return cnt[k] ? sum[k] / cnt[k] : "" }
	function f(k) { return cnt[k] ? sprintf("%.4f", m(k)) : "-" }
	END {
		nm = split("fcnn linear tree forest gbdt", models, " ")
		for (i = 1; i <= nm; i++)
			if (cnt[models[i]] && (best == "" || s * m(models[i]) > s * m(best))) best = models[i]
		printf "| %s (%d splits) | %s | %s | %s | %s | %s | %s |", ds, cnt["first"], metric, f("first"), f("top"), f("mean"), f("stacking"), f("greedy")
		for (i = 1; i <= nm; i++) printf " %s |", f(models[i])
		printf " %s %s | %+.4f |\n", best, f(best), s * (m("first") - m(best))
	}' "$D/$ds.lines"
done
exit $status
