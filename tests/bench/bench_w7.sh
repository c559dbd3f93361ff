#!/usr/bin/env bash
# W7 defaults against defaults (../shared/WORKLOADS.md):
# `cfl repeat TRAIN --test TEST --models fcnn,linear,tree,forest,gbdt` with
# the models' defaults against scikit-learn's defaults (w7_peers.py) on the
# peers' split of the five datasets of datasets/, seeds 0..W7_REPEATS-1
# (default 3) on both sides.  Prints, model by model, the mean test accuracy
# (RMSE for diabetes) and its std over the seeds, cfl minus the peer in the
# metric's good direction, and "below" when cfl is worse than the peer's
# mean by more than half the larger of the two seed spreads, and by more
# than 1e-4 of the peer's figure (else "ok");
# then cfl's default ensembles (mean: no --folds) against cfl's best member.
# W7_SETS="iris ..." picks datasets; CFL_W7=path runs another cfl binary
# (to measure a build before a change side by side).  The peers' figures
# come from sk_defaults (tests/bench/lib.sh), shared with bench_auto.sh and
# kept for the run (scikit-learn's MLP on digits takes a minute).  QUICK: 2
# seeds.
set -u
: "${ROOT:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
. "$ROOT/tests/bench/lib.sh"
CFL_BIN=${CFL_W7:-${CFL:-$ROOT/cfl}}
REPS=${W7_REPEATS:-$(reps 3 2)}
SETS=${W7_SETS:-iris wine breast_cancer digits diabetes}
MODELS="fcnn linear tree forest gbdt"
B="$BENCH_DIR/w7"
mkdir -p "$B"
rm -f "$B/w7.db"

task_of() { case "$1" in diabetes) echo reg ;; *) echo clf ;; esac; }

{
	echo "### W7 defaults against defaults (cfl repeat --models fcnn,linear,tree,forest,gbdt, no model options, against scikit-learn's defaults; test accuracy, RMSE for diabetes; mean +- std over seeds 0..$((REPS - 1)); below: worse than the peer by more than half the larger seed std and by more than 1e-4 of its figure)"
	echo
	echo "| dataset | model | cfl | scikit-learn | cfl - peer | verdict |"
	echo "|---|---|---|---|---|---|"
} > "$B/table.md"
: > "$B/ens.md"
: > "$B/emit.txt"

status=0
for ds in $SETS; do
	task=$(task_of "$ds")
	metric=acc sign=1
	[ "$task" = reg ] && metric=rmse sign=-1
	tr="$BENCH_DIR/$ds.train.csv"
	te="$BENCH_DIR/$ds.test.csv"
	[ -f "$tr" ] || { echo "bench_w7: $tr is missing (run tests/bench/make_data.py)"; exit 1; }
	"$CFL_BIN" repeat "$tr" --test "$te" --models fcnn,linear,tree,forest,gbdt \
		--num-repeat "$REPS" --metrics "$metric" --db "$B/w7.db" --name "w7-$ds" -q \
		> /dev/null 2> "$B/cfl-$ds.err" ||
		{ echo "bench_w7: cfl on $ds failed: $(tail -3 "$B/cfl-$ds.err")"; status=1; continue; }
	"$CFL_BIN" report "w7-$ds" --db "$B/w7.db" --format csv > "$B/cfl-$ds.csv" ||
		{ echo "bench_w7: cfl report on $ds failed"; status=1; continue; }
	# the peers' mean and population std over the seeds, per model
	sk_defaults "$task" "$ds" "$REPS" | awk '{ n[$1]++; s[$1] += $3; q[$1] += $3 * $3 }
		END { for (m in n) { mu = s[m] / n[m]; v = q[m] / n[m] - mu * mu
			printf "%s %.10f %.10f\n", m, mu, (v > 0 ? sqrt(v) : 0) } }' > "$B/peer-$ds.txt" &&
		[ -s "$B/peer-$ds.txt" ] ||
		{ echo "bench_w7: peers on $ds failed"; rm -f "$B/peer-$ds.txt"; status=1; continue; }
	for model in $MODELS; do
		c=$(awk -F, -v m="$model" '$1 == m { print $3, $4 }' "$B/cfl-$ds.csv")
		p=$(awk -v m="$model" '$1 == m { print $2, $3 }' "$B/peer-$ds.txt")
		[ -n "$c" ] && [ -n "$p" ] || { echo "bench_w7: no $model figure on $ds"; status=1; continue; }
		awk -v ds="$ds" -v m="$model" -v s="$sign" -v c="$c" -v p="$p" -v metric="$metric" \
			-v reps="$REPS" -v ef="$B/emit.txt" 'BEGIN {
			split(c, a, " "); split(p, b, " ")
			# to 6 decimals: equal figures are equal, not a last-bit apart
			d = s * (sprintf("%.6f", a[1]) - sprintf("%.6f", b[1]))
			# and figures equal to 4 significant digits are equal (both
			# models deterministic: the seed spreads are 0)
			tol = 0.5 * (a[2] > b[2] ? a[2] : b[2])
			if (tol < 1e-4 * (b[1] < 0 ? -b[1] : b[1])) tol = 1e-4 * (b[1] < 0 ? -b[1] : b[1])
			printf "| %s | %s | %.4f +- %.4f | %.4f +- %.4f | %+.4f | %s |\n", ds, m,
			       a[1], a[2], b[1], b[2], d, d < -tol - 1e-7 ? "below" : "ok"
			printf "W7 %s\037%s %s (mean of %d seeds), cfl vs scikit-learn default\037%.6g\037%.6g\037%.4g\037std %.4g / %.4g: %s\037%s\n",
			       ds, m, metric, reps, a[1], b[1], b[1] != 0 ? a[1] / b[1] : 0, a[2], b[2],
			       d < -tol - 1e-7 ? "below" : "ok", "not below by > half a std" >> ef
		}' >> "$B/table.md"
	done
	awk -F, -v ds="$ds" -v s="$sign" -v models="$MODELS" -v metric="$metric" -v ef="$B/emit.txt" 'BEGIN {
		n = split(models, ms, " "); for (i = 1; i <= n; i++) member[ms[i]] = 1
	}
	NR > 1 && ($1 in member) && (best == "" || s * $3 > s * bestv) { best = $1; bestv = $3 }
	NR > 1 && !($1 in member) { ens[++k] = $1; ev[k] = $3 }
	END {
		for (i = 1; i <= k; i++) {
			printf "| %s | %s | %.4f | %s %.4f | %+.4f |\n", ds, ens[i], ev[i], best, bestv, s * (ev[i] - bestv)
			printf "W7 %s\037ensemble %s %s, cfl vs its best member (%s)\037%.6g\037%.6g\037%.4g\037\037\n",
			       ds, ens[i], metric, best, ev[i], bestv, bestv != 0 ? ev[i] / bestv : 0 >> ef
		}
	}' "$B/cfl-$ds.csv" >> "$B/ens.md"
done
{
	echo
	echo "| dataset | cfl ensemble | cfl | best member | ensemble - best |"
	echo "|---|---|---|---|---|"
	cat "$B/ens.md"
	echo
} >> "$B/table.md"
cat "$B/table.md"
cat "$B/table.md" >> "$BENCH_DIR/results.md"
emit_file "$B/emit.txt" || status=1
exit $status
