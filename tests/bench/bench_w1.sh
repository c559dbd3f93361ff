#!/usr/bin/env bash
# W1 of ../shared/WORKLOADS.md: one FCNN (d -> 64 -> ReLU -> 64 -> ReLU -> k,
# Adam lr 1e-3, batch 128, 40 epochs, no early stopping), seeds 0, 1, 2 on
# 2 processes, on the train/test split make_data.py wrote, for cfl, PyTorch
# (w1_torch.py) and scikit-learn (w1_sklearn.py), side by side.  Reports per
# dataset the mean and std over the seeds of accuracy and AUC (or RMSE and
# R2), the median train time per seed, the wall time of the whole command
# (medians over W1_REPEATS runs), and for synth_clf_100k the GFLOP/s of cfl's
# training beside a plain sgemm loop of the same shapes (sgemm_w1.c), run
# alternately one process at a time.
# W1_DATASETS and W1_REPEATS (default 3; QUICK: 1) narrow it down; the
# peers run once (their train time: the median over the run's 3 seeds).
set -u
: "${ROOT:?}" "${CFL:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
. "$ROOT/tests/bench/lib.sh"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
DATASETS=${W1_DATASETS:-iris breast_cancer digits synth_clf_100k diabetes}
REPEATS=${W1_REPEATS:-$(reps 3 1)}
SETS="--set hidden=64,64 --set optimizer=adam --set lr=0.001 --set batch_size=128 --set epochs=40 --set patience=0"
REC="$BENCH_DIR/w1_records.txt"
: > "$REC"

cc -O2 -o "$BENCH_DIR/sgemm_w1" "$ROOT/tests/bench/sgemm_w1.c" \
	$(pkg-config --cflags --libs openblas) || { echo "bench_w1: cannot build sgemm_w1"; exit 1; }

now() { date +%s.%N; }

for name in $DATASETS; do
	tr="$BENCH_DIR/$name.train.csv" te="$BENCH_DIR/$name.test.csv"
	[ -f "$tr" ] && [ -f "$te" ] || { echo "bench_w1: $tr or $te is missing"; exit 1; }
	metrics=acc,auc
	case $name in diabetes|synth_reg_100k) metrics=rmse,r2 ;; esac
	for rep in $(seq 1 "$REPEATS"); do
		# cfl: three seeds on two processes
		t0=$(now)
		printf '0\n1\n2\n' | xargs -P 2 -I{} sh -c \
			"\"$CFL\" train \"$tr\" --test \"$te\" --valid-frac 0 $SETS --metrics $metrics \
			 --seed {} -o \"$BENCH_DIR/w1_$name.{}.cfl\" > \"$BENCH_DIR/w1_$name.{}.out\" 2>/dev/null" ||
			{ echo "bench_w1: cfl train failed on $name"; exit 1; }
		t1=$(now)
		for s in 0 1 2; do
			awk -v n="$name" -v r="$rep" -v s="$s" '
				$1 == "fit_seconds" { t = $2 }
				$1 ~ /^test_/ && $1 != "test_rows" { sub("test_", "", $1); m = m " " $1 " " $2 }
				END { print "cfl", n, r, "seed", s, m, "train_s", t }' "$BENCH_DIR/w1_$name.$s.out" >> "$REC"
		done
		echo "cfl $name $rep wall_s $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >> "$REC"
		# the peers run once (3 seeds; their train time per seed is the
		# median of the three), to keep make bench in 15 minutes: 15-17 s a
		# run on synth_clf_100k (a quiet 2-core machine), 1-3 s elsewhere,
		# mostly start-up, 7-40x cfl's; QUICK=1 reuses their figures of the
		# last full run (peer_kept in lib.sh)
		[ "$rep" -gt 1 ] && continue
		for peer in torch sklearn; do
			if peer_kept "w1-$name-$peer"; then
				cp "$(peer_kept_file "w1-$name-$peer")" "$BENCH_DIR/w1_peer.out" || exit 1
				echo "note $peer $name $(peer_kept_note "w1-$name-$peer")" >> "$REC"
			else
				(cd "$ROOT/tests/bench" && "$PY" "w1_$peer.py" "$BENCH_DIR" "$name") > "$BENCH_DIR/w1_peer.out" ||
					{ echo "bench_w1: w1_$peer.py failed on $name"; exit 1; }
				peer_keep "w1-$name-$peer" "$BENCH_DIR/w1_peer.out" || exit 1
			fi
			awk -v r="$rep" '{ $3 = r " " $3; print }' "$BENCH_DIR/w1_peer.out" |
				sed -E 's/^([a-z]+) ([a-z_0-9]+) ([0-9]+) seed/\1 \2 \3 seed/' >> "$REC"
		done
	done
done

# throughput: one cfl training of synth_clf_100k (seed 0, alone) and then a
# plain sgemm loop of the same shapes (alone), alternated, so both see the
# same machine; GFLOP/s of each and their ratio per pair, and the training
# time over that of the loop's sgemm calls without the products of the
# 2-wide output layer (which fcnn makes by plain loops, not sgemm)
gemm=""
if [[ " $DATASETS " == *" synth_clf_100k "* ]]; then
	n_train=$(($(wc -l < "$BENCH_DIR/synth_clf_100k.train.csv") - 1))
	flop=$(awk -v n="$n_train" 'BEGIN { d = 20; h = 64; k = 2; f = d * h + h * h + h * k;
		printf "%.0f", 2 * n * 40 * (2 * f + h * h + h * k) }')
	for rep in $(seq 1 "$REPEATS"); do
		t=$("$CFL" train "$BENCH_DIR/synth_clf_100k.train.csv" --test "$BENCH_DIR/synth_clf_100k.test.csv" \
			--valid-frac 0 $SETS --seed 0 -o "$BENCH_DIR/w1_gemm.cfl" 2>/dev/null |
			awk '$1 == "fit_seconds" { print $2 }')
		g=$("$BENCH_DIR/sgemm_w1" "$n_train" 40 128 20 64,64 2 | awk '{ print $6, $4 - $8 }')
		echo "sgemm $(awk -v f="$flop" -v t="$t" 'BEGIN { printf "%.2f", f * 1e-9 / t }') $g $flop $t" >> "$REC"
	done
	gemm=$n_train
fi

"$PY" - "$REC" "$BENCH_DIR/results.md" "$gemm" "$BENCH_DIR/w1_emit.txt" <<'PYEOF' || exit 1
import statistics as st, sys
rec, md, n_train = sys.argv[1], sys.argv[2], sys.argv[3]
emit = open(sys.argv[4], "w")
def fig(*f):
    emit.write("\x1f".join("%.4g" % v if isinstance(v, float) else str(v) for v in f) + "\n")
runs, wall, gemm, note = {}, {}, [], {}
for line in open(rec):
    f = line.split()
    if f[0] == 'note':
        note[(f[1], f[2])] = ' '.join(f[3:])
    elif f[0] == 'sgemm':
        gemm.append((float(f[1]), float(f[2]), float(f[4]), float(f[5]), float(f[3])))
    elif f[3] == 'wall_s':
        wall.setdefault((f[0], f[1]), []).append(float(f[4]))
    else:
        tool, name, rep, seed = f[0], f[1], int(f[2]), int(f[4])
        kv = dict(zip(f[5::2], f[6::2]))
        runs.setdefault((tool, name), []).append((rep, seed, kv))
names = list(dict.fromkeys(n for _, n in runs))
out = ['### W1: one FCNN, seeds 0, 1, 2, two processes (medians of %d runs)' % max(r for v in runs.values() for r, _, _ in v), '',
       '| dataset | tool | %s | %s | train s/seed | wall s | train time / PyTorch |' % ('metric 1', 'metric 2'),
       '|---|---|---|---|---|---|---|']
ratios = {}
for name in names:
    tt = {}
    for tool in ('cfl', 'torch', 'sklearn'):
        v = runs.get((tool, name))
        if not v:
            continue
        first = [kv for rep, _, kv in v if rep == 1]
        keys = [k for k in first[0] if k != 'train_s']
        cells = []
        for k in keys:
            xs = [float(kv[k]) for kv in first]
            cells.append('%s %.4f ± %.4f' % (k, st.mean(xs), st.pstdev(xs)))
        tt[tool] = st.median(float(kv['train_s']) for _, _, kv in v)
        w = st.median(wall[(tool, name)])
        ratio = tt[tool] / tt['torch'] if 'torch' in tt else float('nan')
        if tool == 'cfl':
            cfl_row = len(out)
        out.append('| %s | %s%s | %s | %s | %.4f | %.2f | %s |' % (name, tool,
                   ' (%s)' % note[(tool, name)] if (tool, name) in note else '', cells[0], cells[1], tt[tool], w,
                   '%.3f' % (tt[tool] / tt['torch']) if 'torch' in tt else ''))
    if 'torch' in tt:
        out[cfl_row] = out[cfl_row].rsplit('|', 2)[0] + '| %.3f |' % (tt['cfl'] / tt['torch'])
        ts = [float(kv['train_s']) for _, _, kv in runs[('cfl', name)]]
        fig('W1 %s' % name, 'train s per seed, cfl / PyTorch', tt['cfl'], tt['torch'], tt['cfl'] / tt['torch'],
            'cfl range %.3g-%.3g%s' % (min(ts), max(ts), '; PyTorch: ' + note[('torch', name)]
                                       if ('torch', name) in note else ''), '')
        for k in keys:
            c = st.mean(float(kv[k]) for rep, _, kv in runs[('cfl', name)] if rep == 1)
            t = st.mean(float(kv[k]) for rep, _, kv in runs[('torch', name)] if rep == 1)
            fig('W1 %s' % name, '%s (mean of seeds 0-2), cfl vs PyTorch' % k, c, t, c / t if t else '', '', '')
out.append('')
if gemm and n_train:
    cfl_g = st.median(g[0] for g in gemm)
    peak = st.median(g[1] for g in gemm)
    ratio = st.median(g[0] / g[1] for g in gemm)
    wide = [t / w for _, _, _, t, w in gemm]
    out.append('synth_clf_100k training (one process, seed 0): %.1f GFLOP of sgemm at %.1f GFLOP/s; a plain '
               'sgemm loop of the same shapes, run alternately: %.1f GFLOP/s; cfl reaches %.0f%% of it '
               '(median of %d pairs); its training takes %.2fx the time of the loop\'s sgemm calls without '
               'the 2-wide output layer\'s (fcnn does those by plain loops).'
               % (gemm[0][2] * 1e-9, cfl_g, peak, 100 * ratio, len(gemm), st.median(wide)))
    out.append('')
    fig('W1 synth_clf_100k', 'fcnn fit GFLOP/s, cfl / a plain sgemm loop of the same shapes', cfl_g, peak, ratio,
        'pairs %.3g-%.3g' % (min(g[0] / g[1] for g in gemm), max(g[0] / g[1] for g in gemm)), '>= 0.91')
    fig('W1 synth_clf_100k', 'fcnn fit s / the loop\'s sgemm calls but the 2-wide layer\'s (fcnn loops those)',
        st.median(g[3] for g in gemm), st.median(g[4] for g in gemm), st.median(wide),
        'pairs %.3g-%.3g' % (min(wide), max(wide)), '')
emit.close()
text = '\n'.join(out)
print(text)
with open(md, 'a') as f:
    f.write(text + '\n\n')
PYEOF
emit_file "$BENCH_DIR/w1_emit.txt"
# the fit's GFLOP/s (median of the pairs) against single-thread sgemm at
# 1024^3 (best of 5, after the pairs): the large-shape peak of this core
if [ -n "$gemm" ]; then
	pk=$("$BENCH_DIR/sgemm_w1" peak | awk '$1 == "peak_gflops" { print $2 }')
	fit=$(awk '$1 == "sgemm" { print $2 }' "$REC" | median)
	[ -n "$pk" ] && [ -n "$fit" ] || { echo "bench_w1: the sgemm peak failed"; exit 1; }
	echo "W1 synth_clf_100k: fcnn fit $fit GFLOP/s, single-thread sgemm at 1024^3 $pk GFLOP/s" | tee -a "$BENCH_DIR/results.md"
	emit "W1 synth_clf_100k" "fcnn fit GFLOP/s / single-thread sgemm at 1024^3" "$fit" "$pk" \
		"$(ratio "$fit" "$pk" %.3f)" "" ">= 0.75"
fi
