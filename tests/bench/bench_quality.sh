#!/usr/bin/env bash
# Quality at the peers' settings (../shared/WORKLOADS.md, "Quality
# comparisons: means over seeds"): cfl against each peer as 10-seed means
# with their standard deviations, on the peers' train/test split, through
# the cfl commands a user runs with `--test TEST` and nothing that needs
# held-out rows (no early stopping, no ensemble), and no --valid-frac: cfl
# trains on exactly the peers' rows by itself.
#   W1: `cfl train --seed S` (S = 0..9) of fcnn at the W1 settings (64,64,
#       Adam 1e-3, batch 128, 40 epochs, patience 0) against PyTorch
#       (torch.manual_seed S) and scikit-learn's MLP (random_state S)
#       (quality_peers.py).  cfl draws PyTorch's initialisation and
#       shuffles from the same seed, so "paired" (the mean and std of the
#       per-seed differences) shows how close the two runs of each seed are.
#   W3: `cfl repeat --models tree,forest,gbdt --num-repeat 10 --ensemble
#       none` (its trial seeds) with forest 100 trees, gbdt 100 rounds,
#       depth 6, learning rate 0.3, against DecisionTree, RandomForest and
#       XGBoost hist (random_state 0..9) (w3_peers.py).
# A row is "ok"
# when cfl's mean is at or above the peer's mean minus half the peer's seed
# std (in the metric's good direction), else "below".  "z" is the gap in
# standard errors of the difference of the two means.  Prints one JSON
# line per row (prefix "QUALITY ") and appends them to
# $BENCH_DIR/quality.jsonl; the Markdown table goes to results.md.
# QUALITY_SEEDS (10), QUALITY_W1_SETS and QUALITY_W3_SETS pick a subset;
# QUALITY_REUSE_PEERS=1 keeps the peers' per-seed figures of an earlier run
# in $BENCH_DIR/quality (they are seeded, so the same); QUICK=1 keeps them
# unless QUALITY_REUSE_PEERS=0.  A full run keeps its table and figures;
# QUICK=1 prints and records those of the last full run instead of
# computing them (quality_kept in lib.sh; the rows say so).
set -u
: "${ROOT:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
CFL_BIN=${CFL:-$ROOT/cfl}
. "$ROOT/tests/bench/lib.sh"
SEEDS=${QUALITY_SEEDS:-10}
W1_SETS=${QUALITY_W1_SETS:-iris breast_cancer digits diabetes}
W3_SETS=${QUALITY_W3_SETS:-digits breast_cancer diabetes}
W1_ARGS="--set hidden=64,64 --set optimizer=adam --set lr=0.001 --set batch_size=128 --set epochs=40 --set patience=0"
W3_ARGS="--set forest.n_estimators=100 --set gbdt.n_rounds=100 --set gbdt.max_depth=6 --set gbdt.learning_rate=0.3"
B="$BENCH_DIR/quality"
mkdir -p "$B"
rm -f "$B/q.db" "$B/rows.txt"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
if quality_kept quality; then
	K=$(quality_kept_dir quality)
	note=$(quality_kept_note quality)
	[ -s "$K/table.md" ] && [ -s "$K/emit.txt" ] || { echo "bench_quality: $K is incomplete"; exit 1; }
	echo "bench_quality: the figures $note"
	{ echo "(the table below: $note)"; echo; cat "$K/table.md"; } >> "$BENCH_DIR/results.md"
	awk -F'\x1f' -v n="$note" 'BEGIN { OFS = FS } { $2 = $2 ", " n; print }' "$K/emit.txt" > "$B/emit.txt" &&
		emit_file "$B/emit.txt" || exit 1
	exit 0
fi

task_of() { case "$1" in diabetes|synth_reg*) echo reg ;; *) echo clf ;; esac; }
metric_of() { [ "$(task_of "$1")" = reg ] && echo rmse || echo acc; }
peer_name() { case "$1" in tree) echo DecisionTree ;; forest) echo RandomForest ;; gbdt) echo XGBoost ;; esac; }

# cfl's per-repeat values of metric $3 for row $2 of run $1, comma-separated
cfl_values() {
	"$CFL_BIN" report "$1" --db "$B/q.db" --format json |
		"$PY" -c 'import json, sys
d = json.load(sys.stdin)
print(",".join(repr(v) for r in d["rows"] if r["name"] == sys.argv[1] for v in r["metrics"][sys.argv[2]]["values"]))' "$2" "$3"
}
# true when peer file $1 must be (re)made: not reusing, or not SEEDS lines
need_peer() {
	[ "${QUALITY_REUSE_PEERS:-$QUICK}" != 1 ] || [ ! -s "$1" ] || [ "$(cat "$1.seeds" 2>/dev/null)" != "$SEEDS" ]
}

status=0
for ds in $W1_SETS; do
	tr="$BENCH_DIR/$ds.train.csv" te="$BENCH_DIR/$ds.test.csv"
	[ -f "$tr" ] || { echo "bench_quality: $tr is missing (run tests/bench/make_data.py)"; exit 1; }
	metric=$(metric_of "$ds")
	metrics=acc,auc
	[ "$metric" = rmse ] && metrics=rmse,r2
	: > "$B/cfl-w1-$ds.txt"
	for ((s = 0; s < SEEDS; s++)); do
		# shellcheck disable=SC2086
		"$CFL_BIN" train "$tr" --test "$te" --model fcnn $W1_ARGS --metrics "$metrics" --seed "$s" \
			-o "$B/w1.cfl" 2> "$B/cfl-w1-$ds.err" | awk -v m="test_$metric" '$1 == m { print $2 }' >> "$B/cfl-w1-$ds.txt"
	done
	[ "$(grep -c . "$B/cfl-w1-$ds.txt")" = "$SEEDS" ] ||
		{ echo "bench_quality: cfl train on $ds failed: $(tail -3 "$B/cfl-w1-$ds.err")"; status=1; continue; }
	c=$(paste -sd, "$B/cfl-w1-$ds.txt")
	if need_peer "$B/peer-w1-$ds.txt"; then
		(cd "$ROOT/tests/bench" && "$PY" quality_peers.py "$BENCH_DIR" "$ds" "$SEEDS") > "$B/peer-w1-$ds.txt" ||
			{ echo "bench_quality: peers on $ds failed"; rm -f "$B/peer-w1-$ds.txt"; status=1; continue; }
		echo "$SEEDS" > "$B/peer-w1-$ds.txt.seeds"
	fi
	for peer in torch sklearn; do
		p=$(awk -v p="$peer" '$1 == p { print $6 }' "$B/peer-w1-$ds.txt" | paste -sd,)
		echo "W1 $ds fcnn $([ "$peer" = torch ] && echo PyTorch || echo sklearn-MLP) $metric $c $p" >> "$B/rows.txt"
	done
done
for ds in $W3_SETS; do
	tr="$BENCH_DIR/$ds.train.csv" te="$BENCH_DIR/$ds.test.csv"
	[ -f "$tr" ] || { echo "bench_quality: $tr is missing (run tests/bench/make_data.py)"; exit 1; }
	task=$(task_of "$ds")
	metric=$(metric_of "$ds")
	# shellcheck disable=SC2086
	"$CFL_BIN" repeat "$tr" --test "$te" --models tree,forest,gbdt $W3_ARGS --num-repeat "$SEEDS" \
		--ensemble none --metrics "$metric" --db "$B/q.db" --name "w3-$ds" -q \
		> /dev/null 2> "$B/cfl-w3-$ds.err" ||
		{ echo "bench_quality: cfl on $ds failed: $(tail -3 "$B/cfl-w3-$ds.err")"; status=1; continue; }
	for model in tree forest gbdt; do
		c=$(cfl_values "w3-$ds" "$model" "$metric")
		f="$B/peer-w3-$ds-$model.txt"
		if need_peer "$f"; then
			"$PY" "$ROOT/tests/bench/w3_peers.py" "$model" "$task" "$tr" "$te" "$SEEDS" 1 > "$f" ||
				{ echo "bench_quality: peer $model on $ds failed"; rm -f "$f"; status=1; continue; }
			echo "$SEEDS" > "$f.seeds"
		fi
		p=$(awk '{ print $2 }' "$f" | paste -sd,)
		echo "W3 $ds $model $(peer_name "$model") $metric $c $p" >> "$B/rows.txt"
	done
done

[ -s "$B/rows.txt" ] || exit 1
"$PY" - "$B/rows.txt" "$SEEDS" "$B/table.md" "$BENCH_DIR/quality.jsonl" "$B/emit.txt" <<'PYEOF' || exit 1
import json, math, sys
rows, n, md, jl, ef = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], open(sys.argv[5], 'w')
import statistics as st
out = ['### Quality at the peers\' settings (--test, nothing held out; mean +- std over %d seeds; '
       'ok: cfl >= peer mean - peer std / 2; z: the gap in standard errors; paired: per-seed '
       'cfl - peer, mean +- std, where the seeds are the same)' % n, '',
       '| workload | dataset | model | peer | metric | cfl | peer | cfl - peer | z | paired | verdict |',
       '|---|---|---|---|---|---|---|---|---|---|---|']
with open(jl, 'a') as jf:
    for line in open(rows):
        w, ds, model, peer, metric, cv, pv = line.split()
        cv = [float(v) for v in cv.split(',')]
        pv = [float(v) for v in pv.split(',')]
        cm, cs, pm, ps = st.mean(cv), st.pstdev(cv), st.mean(pv), st.pstdev(pv)
        sign = -1 if metric == 'rmse' else 1
        paired = [sign * (round(a, 6) - round(b, 6)) for a, b in zip(cv, pv)] if w == 'W1' else None
        # to 6 decimals: equal figures are equal, not a last bit apart
        d = sign * (round(cm, 6) - round(pm, 6))
        se = math.sqrt((cs * cs + ps * ps) / n)
        # both without seed spread (a deterministic fit): no z
        z = d / se if se > 1e-9 * max(abs(cm), abs(pm), 1.0) else None
        verdict = 'ok' if d >= -ps / 2 - 1e-7 else 'below'
        rec = dict(bench='quality', workload=w, dataset=ds, model=model, peer=peer, metric=metric,
                   seeds=n, cfl_mean=cm, cfl_std=cs, peer_mean=pm, peer_std=ps, diff=d, z=z,
                   paired_mean=st.mean(paired) if paired else None,
                   paired_std=st.pstdev(paired) if paired else None, verdict=verdict)
        print('QUALITY ' + json.dumps(rec))
        jf.write(json.dumps(rec) + '\n')
        # one row for results.jsonl (tests/bench/lib.sh's emit_file)
        ef.write('\x1f'.join(['quality %s %s %s vs %s (%d seeds)' % (w, ds, model, peer, n),
                               'test %s mean' % metric, '%.6f' % cm, '%.6f' % pm,
                               '%.4f' % (cm / pm if pm else 0), 'std %.4f / %.4f' % (cs, ps),
                               '%s peer mean %s peer std/2 (%s)' % ('>=' if sign > 0 else '<=',
                                                                   '-' if sign > 0 else '+', verdict)]) + '\n')
        out.append('| %s | %s | %s | %s | %s | %.4f +- %.4f | %.4f +- %.4f | %+.4f | %s | %s | %s |'
                   % (w, ds, model, peer, metric, cm, cs, pm, ps, d,
                      '%+.1f' % z if z is not None else '-',
                      '%+.4f +- %.4f' % (st.mean(paired), st.pstdev(paired)) if paired else '-',
                      verdict))
out.append('')
print('\n'.join(out))
with open(md, 'w') as f:
    f.write('\n'.join(out) + '\n')
PYEOF
cat "$B/table.md" >> "$BENCH_DIR/results.md"
emit_file "$B/emit.txt" || status=1
# a full run's figures, for QUICK=1 (all of them: not a subset or other seeds)
if [ $status = 0 ] && [ -z "${QUALITY_SEEDS:-}${QUALITY_W1_SETS:-}${QUALITY_W3_SETS:-}" ]; then
	quality_keep quality "$B/table.md" "$B/emit.txt" || status=1
fi
exit $status
