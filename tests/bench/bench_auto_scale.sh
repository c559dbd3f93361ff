#!/usr/bin/env bash
# cfl auto at scale (issue 33 part 1; W9 of ../shared/WORKLOADS.md):
# `cfl auto DATA --time-limit 60` on a 1,000,000 x 20 numeric CSV from W6's
# generator (20 normal columns of random scales and offsets) with W9's
# target, which needs interactions: z0 + 0.5 z1 z2 - z3^2 + noise > -0.5 on
# the standardised columns (make_w6.py's `w9`; generated here when missing;
# QUICK: 200,000 rows and 20 s).  Prints, per family: whether it got a bag,
# and why not (the run's own "no score" lines, or its folds interrupted);
# the run's wall time (the whole command, the load of the CSV included)
# against its limit; auto's first entry's test accuracy against the best
# default that fits in the limit: each family's defaults trained alone
# (`cfl repeat --num-jobs 1`) on all the training rows with the same test
# part, killed at the limit (--trial-timeout), the best of those that
# finished, and the two's paired difference on the test rows in standard
# errors (paired_acc.py).  With the load and the CPU, at the start and the end.
#
# It takes about 6 minutes (the defaults, one after another, up to the
# limit each), so it runs only when asked for: BENCH=auto_scale make bench.
set -u
: "${ROOT:?}" "${CFL:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
. "$ROOT/tests/bench/lib.sh"
case " ${BENCH:-} " in
*auto_scale*) ;;
*) echo "bench_auto_scale: skipped (about 6 minutes: BENCH=auto_scale make bench runs it)"; exit 0 ;;
esac
ROWS=$(reps 1000000 200000)
LIMIT=$(reps 60 20)
DATA="$BENCH_DIR/w9_${ROWS}.csv"
B="$BENCH_DIR/auto_scale"
mkdir -p "$B" || exit 1
rm -f "$B"/*.db

if [ ! -f "$DATA" ]; then
	"$PY" "$ROOT/tests/bench/make_w6.py" "$DATA" "$ROWS" w9 || { echo "bench_auto_scale: cannot write $DATA"; exit 1; }
fi
cat "$DATA" >/dev/null	# into the page cache
mb=$(awk -v s="$(stat -L -c %s "$DATA")" 'BEGIN { printf "%.0f", s / 1048576 }')
cpu=$(bench_cpu_model)
blas=$("$CFL" --version | awk -F': ' '$1 == "blas" { print $2 }')
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. auto, timed as a whole command
t0=$(date +%s.%N)
"$CFL" auto "$DATA" --time-limit "$LIMIT" --db "$B/auto.db" --name auto \
	> "$B/auto.out" 2> "$B/auto.err"
rc=$?
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
load1=$(cut -d' ' -f1-3 /proc/loadavg)
[ $rc = 0 ] || echo "bench_auto_scale: cfl auto exited $rc: $(tail -2 "$B/auto.err")"
first=$(awk '/^Leaderboard/ {on = 1} on && /^1 / { print $2, $6; exit }' "$B/auto.out")
first_name=${first% *} first_test=${first#* }

# 2. each default alone on every training row, killed at the limit
"$CFL" repeat "$DATA" --models fcnn,linear,tree,forest,gbdt --num-repeat 1 --num-jobs 1 \
	--trial-timeout "$LIMIT" --max-retries 0 --db "$B/dflt.db" --name dflt > /dev/null 2> "$B/dflt.err"
load2=$(cut -d' ' -f1-3 /proc/loadavg)
sqlite3 -separator ' ' "$B/dflt.db" "select c.model, t.status, printf('%.2f', coalesce(t.duration, 0)),
	(select printf('%.6f', m.value) from metrics m where m.trial = t.id and m.split = 'test'
	 and m.metric = 'acc') from trials t join candidates c on c.id = t.candidate" > "$B/dflt.txt"
best=$(awk '$2 == "done" && $4 != "" && ($4 > b || b == "") { b = $4; m = $1 } END { if (m != "") print m, b }' \
	"$B/dflt.txt")
best_name=${best% *} best_test=${best#* }

# the difference in standard errors of the paired difference (paired_acc.py)
paired="- - - -"
if [ -n "$best_name" ] && [ -n "$first_name" ]; then
	paired=$("$PY" "$ROOT/tests/bench/paired_acc.py" "$B/auto.db" "$first_name" "$B/dflt.db" \
		"$best_name" "$first_test" "$best_test") || paired="- - - -"
fi
read -r p_d p_diff p_se p_z <<<"$paired"

{
	echo "### cfl auto at scale (W9: W6's generator, an interaction target, $ROWS x 20, $mb MiB; \`cfl auto DATA --time-limit $LIMIT\`)"
	echo
	echo "$cpu, $(getconf _NPROCESSORS_ONLN) cores, BLAS: $blas; load average at the start $load0, after auto $load1, after the defaults $load2."
	echo
	echo "| family | bag | why not | default alone (all training rows) | its test acc | its seconds |"
	echo "|---|---|---|---|---|---|"
	for f in fcnn linear tree forest gbdt; do
		bag=$(awk -v f="$f" '/^Leaderboard/ {on = 1} on && $2 ~ "^" f ":" && $3 == "bag" { print "yes (test " $6 ")"; exit }' "$B/auto.out")
		why=$(grep -E "^$f: " "$B/auto.out" | grep -v "cancelled at the end of its share" | head -1 | sed "s/^$f: //; s/|/\\\\|/g")
		if [ -z "$bag" ] && [ -z "$why" ]; then
			n=$(sqlite3 "$B/auto.db" "select count(*) from trials t join candidates c on c.id = t.candidate
				where c.model = '$f' and t.fold >= 0 and t.status != 'done'")
			why="$n of its fold trials not done at the limit"
		fi
		read -r st sec acc < <(awk -v f="$f" '$1 == f { print $2, $3, $4 }' "$B/dflt.txt")
		[ "$st" = done ] || { acc="- (stopped at the ${LIMIT} s limit)"; sec=">= $LIMIT"; }
		echo "| $f | ${bag:-no} | ${why:--} | ${st:-?} | ${acc:--} | ${sec:--} |"
	done
	echo
	echo "Wall time of the whole command (the CSV's load included): $wall s against --time-limit $LIMIT ($(ratio "$wall" "$LIMIT" %.3f) of it; exit $rc)."
	echo "First entry: $first_name, test acc $first_test; best default that fits in $LIMIT s: $best_name, test acc $best_test (difference $(awk -v a="$first_test" -v b="$best_test" 'BEGIN { printf "%+.6f", a - b }'): $p_diff test rows; the two disagree on $p_d rows, so the paired difference's standard error is $p_se rows: $p_z SE)."
	echo
	echo "auto's own lines:"
	echo
	grep -E "^(the search|cfl: |bagging|  cfl auto --resume)" "$B/auto.err" | sed 's/^/    /'
	echo
} > "$B/table.md"
cat "$B/table.md"
cat "$B/table.md" >> "$BENCH_DIR/results.md"

n_bags=$(awk '/^Leaderboard/ {on = 1} on && $3 == "bag" { n++ } END { print n + 0 }' "$B/auto.out")
W="auto scale W9 ${ROWS}x20 --time-limit $LIMIT"
emit "$W" "families with a bag (of 5)" "$n_bags" 5 "$(ratio "$n_bags" 5)" "" "5"
emit "$W" "wall s, whole command" "$wall" "$LIMIT" "$(ratio "$wall" "$LIMIT")" "" "<= 1.05 x limit"
emit "$W" "first entry test acc vs best default that fits ($best_name)" "$first_test" "$best_test" \
	"$(ratio "$first_test" "$best_test" %.6f)" "" ">= 1"
emit "$W" "first entry - best default ($best_name), test rows in paired SE" "$p_z" "0" "$p_z" \
	"$p_diff rows of $p_d disagreeing, SE $p_se rows" ">= -1 (level within noise)"
[ $rc = 0 ]
