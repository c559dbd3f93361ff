#!/usr/bin/env bash
# cfl auto against defaults: `cfl auto TRAIN --test TEST
# --time-limit L` (L = 30 s, W8's limit; QUICK=1: 10 s) on the peers' split of the five
# datasets of datasets/ and of the W1 synthetic set (synth_clf_100k),
# against the best single cfl model with its defaults (`cfl repeat --models
# fcnn,linear,tree,forest,gbdt`, seed 0, the best chosen on TEST, which
# favours it) and against each scikit-learn default model (w7_peers.py,
# random_state 0).  Prints per dataset the leaderboard's first entry (chosen
# on validation) with its test accuracy (RMSE for diabetes), the figures it
# is compared with, and "ok" when auto is at least as good as the best of
# them, else "below"; then auto's leaderboards.  The load average is printed
# with the table: every figure here is wall-clock bound.
# AUTO_SETS="iris ..." picks datasets (QUICK=1: the four small ones);
# AUTO_LIMIT=S sets the limit.  The peers' figures come from sk_defaults
# (tests/bench/lib.sh), shared with bench_w7.sh and kept for the run
# (scikit-learn's MLP on the synthetic set takes minutes).
# The best cfl default times nothing either: AUTO_PART=defaults computes
# only it, for the same datasets (run.sh does so ahead, in the quality-only
# lane, and exports AUTO_DEFAULTS_AHEAD=1 so that the timed run takes its
# figures from $BENCH_DIR/auto/def-DATASET.csv and runs only `cfl auto`).
set -u
: "${ROOT:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
CFL_BIN=${CFL:-$ROOT/cfl}
. "$ROOT/tests/bench/lib.sh"
if [ "${QUICK:-0}" = 1 ]; then
	LIMIT=${AUTO_LIMIT:-10}
	SETS=${AUTO_SETS:-iris wine breast_cancer diabetes}
else
	LIMIT=${AUTO_LIMIT:-30}
	SETS=${AUTO_SETS:-iris wine breast_cancer digits diabetes synth_clf_100k}
fi
MODELS="fcnn linear tree forest gbdt"
B="$BENCH_DIR/auto"
mkdir -p "$B"
rm -f "$B"/auto.db*

task_of() { case "$1" in diabetes | synth_reg*) echo reg ;; *) echo clf ;; esac; }

# defaults DS METRIC: the five cfl models with their defaults, seed 0, on
# DS's split, their test figures in $B/def-DS.csv (cfl report's csv)
defaults() {
	CFL=$CFL_BIN cfl_defaults "$BENCH_DIR/$1.train.csv" "$BENCH_DIR/$1.test.csv" "$2" \
		"$B/defaults.db" "def-$1" "$B/def-$1.csv" ||
		{ echo "bench_auto: cfl's defaults on $1 failed: $(tail -3 "$B/def-$1.csv.err")"; return 1; }
}

if [ "${AUTO_PART:-all}" = defaults ]; then
	rm -f "$B"/defaults.db* "$B"/def-*.csv
	status=0
	for ds in $SETS; do
		[ -f "$BENCH_DIR/$ds.train.csv" ] || { echo "bench_auto: $BENCH_DIR/$ds.train.csv is missing (run tests/bench/make_data.py)"; exit 1; }
		metric=acc
		[ "$(task_of "$ds")" = reg ] && metric=rmse
		defaults "$ds" "$metric" || status=1
	done
	exit $status
fi
[ "${AUTO_DEFAULTS_AHEAD:-0}" = 1 ] || rm -f "$B"/defaults.db* "$B"/def-*.csv

{
	echo "### cfl auto --time-limit $LIMIT against defaults (test accuracy, RMSE for diabetes; one seed; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg))"
	echo
	echo "| dataset | cfl auto: first entry | test | took (s) | best cfl default | test | scikit-learn defaults (fcnn linear tree forest gbdt) | auto - best other | verdict |"
	echo "|---|---|---|---|---|---|---|---|---|"
} > "$B/table.md"
: > "$B/boards.md"

status=0
for ds in $SETS; do
	task=$(task_of "$ds")
	metric=acc sign=1
	[ "$task" = reg ] && metric=rmse sign=-1
	tr="$BENCH_DIR/$ds.train.csv"
	te="$BENCH_DIR/$ds.test.csv"
	[ -f "$tr" ] || { echo "bench_auto: $tr is missing (run tests/bench/make_data.py)"; exit 1; }

	# cfl auto: the leaderboard's first entry, chosen on validation
	t0=$(date +%s.%N)
	"$CFL_BIN" auto "$tr" --test "$te" --time-limit "$LIMIT" --metric "$metric" \
		--db "$B/auto.db" --name "auto-$ds" -q > "$B/auto-$ds.txt" 2> "$B/auto-$ds.err" ||
		{ echo "bench_auto: cfl auto on $ds failed: $(tail -3 "$B/auto-$ds.err")"; status=1; continue; }
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	first=$(awk '/^Leaderboard/ {on = 1; next} on && /^1 / {print $2, $6; exit}' "$B/auto-$ds.txt")
	[ -n "$first" ] || { echo "bench_auto: no leaderboard on $ds"; status=1; continue; }
	{ echo "#### $ds"; echo; echo '```'; cat "$B/auto-$ds.txt"; echo '```'; echo; } >> "$B/boards.md"

	# the best single cfl model with its defaults (on test): computed
	# ahead, else now
	[ -s "$B/def-$ds.csv" ] || defaults "$ds" "$metric" || { status=1; continue; }
	best_def=$(awk -F, -v s="$sign" 'NR > 1 && (b == "" || s * $3 > s * v) { b = $1; v = $3 } END { print b, v }' "$B/def-$ds.csv")

	# scikit-learn's defaults, random_state 0
	sk_defaults "$task" "$ds" 1 | awk '{ print $1, $3 }' > "$B/peer-$ds.txt" && [ -s "$B/peer-$ds.txt" ] ||
		{ echo "bench_auto: peers on $ds failed"; rm -f "$B/peer-$ds.txt"; status=1; continue; }
	peers=$(for m in $MODELS; do awk -v m="$m" '$1 == m { printf "%.4f ", $2 }' "$B/peer-$ds.txt"; done)
	best_peer=$(awk -v s="$sign" '(b == "" || s * $2 > s * v) { b = $1; v = $2 } END { print b, v }' "$B/peer-$ds.txt")

	awk -v ds="$ds" -v s="$sign" -v first="$first" -v took="$took" -v def="$best_def" \
	    -v peers="$peers" -v bp="$best_peer" 'BEGIN {
		split(first, a, " "); split(def, d, " "); split(bp, p, " ")
		other = s * d[2] > s * p[2] ? d[2] : p[2]
		diff = s * (sprintf("%.6f", a[2]) - sprintf("%.6f", other))
		printf "| %s | %s | %.4f | %s | %s | %.4f | %s| %+.4f | %s |\n", ds, a[1], a[2], took,
		       d[1], d[2], peers, diff, diff < -1e-7 ? "below" : "ok"
	}' >> "$B/table.md"
	# one JSON line: auto's test figure against the best other (a cfl
	# default chosen on test, or a scikit-learn default); ratio auto/other
	read -r e_name e_val <<<"$(awk -v s="$sign" -v def="$best_def" -v bp="$best_peer" 'BEGIN {
		split(def, d, " "); split(bp, p, " ")
		if (s * d[2] > s * p[2]) print "cfl-" d[1], d[2]; else print "sklearn-" p[1], p[2] }')"
	auto_val=${first#* }
	emit "auto $ds (${LIMIT}s) vs best default ($e_name)" "test $metric" "$auto_val" "$e_val" \
		"$(awk -v a="$auto_val" -v b="$e_val" 'BEGIN { printf "%.4f", b ? a / b : 0 }')" "" \
		"$([ "$sign" = 1 ] && echo ">= 1" || echo "<= 1")"
done
{ echo; cat "$B/boards.md"; } >> "$B/table.md"
cat "$B/table.md"
cat "$B/table.md" >> "$BENCH_DIR/results.md"

# The short form of tests/bench/auto_splits.sh: auto's first entry with a
# count budget (so the figures do not depend on the load) against the
# default a user would pick by 5-fold cross-validation, paired over a few
# splits of three small sets, a held-in messy synthetic set, a held-out
# one and two real public sets (tests/bench/make_real.R: R's mlbench, held
# out, never tuned on); one line per set: auto's mean test figure against the chosen
# default's, the spread the standard error of their difference.  The long
# form (20 splits, every set) is generated into docs/auto.md.
SPLITS=$(reps 4 2)
mkdir -p "$B/splits/messy"
"$PY" "$ROOT/tests/bench/make_messy.py" "$B/splits/messy" || status=1
REAL_SETS="$B/splits/real/real_sonar.csv,$B/splits/real/real_boston.csv"
[ -n "$(bash "$ROOT/tests/bench/real_sets.sh" "$B/splits")" ] ||
	{ echo "bench_auto: no real sets (make bench-deps installs R's mlbench and MASS)"
	  REAL_SETS= status=1; }
"$PY" "$ROOT/tests/bench/auto_splits.py" "$B/splits" --cfl "$CFL_BIN" --splits "$SPLITS" --trials 10 \
	--sets iris,wine,diabetes,"$B/splits/messy/messy_clf_a.csv" \
	--held-out "$B/splits/messy/messy_clf_d.csv" \
	--real "$REAL_SETS" \
	--json "$B/splits.json" > "$B/splits.md" 2> "$B/splits.err" ||
	{ echo "bench_auto: auto_splits.py failed: $(tail -3 "$B/splits.err")"; status=1; }
if [ -s "$B/splits.json" ]; then
	cat "$B/splits.md" | tee -a "$BENCH_DIR/results.md"
	"$PY" - "$B/splits.json" > "$B/splits.emit" <<'PYEOF' && emit_file "$B/splits.emit" || status=1
import json, sys
for s in json.load(open(sys.argv[1])):
    print('\x1f'.join(['auto splits %s (%d splits, max-trials 10%s)' % (s['name'], s['splits'],
                        ('', ', held out', ', real, held out')[s['held_out']]),
                        'test %s, auto vs CV-chosen default' % s['metric'], '%.4f' % s['auto'],
                        '%.4f' % s['cv'], '%.4f' % (s['auto'] / s['cv'] if s['cv'] else 0),
                        'diff %+.4f se %.4f' % (s['diff_cv'], s['se_cv']),
                        '>= 1' if s['sign'] > 0 else '<= 1']))
PYEOF
fi
exit $status
