#!/usr/bin/env bash
# CSV loading: `cfl data load` (read, type, split, encode; the time it
# reports itself, so process start-up is left out) on the 100k x 20
# synthetic classification set, beside pandas.read_csv when /usr/bin/python3
# has pandas, else numpy.loadtxt (parse only).  Median of 5 runs each
# (QUICK: 3).
set -u
: "${ROOT:?}" "${CFL:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
. "$ROOT/tests/bench/lib.sh"
N=$(reps 5 3)
DATA="$BENCH_DIR/synth_clf_100k.csv"
[ -f "$DATA" ] || { echo "bench_csv: $DATA is missing (run tests/bench/make_data.py)"; exit 1; }

cfl_times=()
for _ in $(seq "$N"); do
	line=$("$CFL" data load "$DATA") || { echo "bench_csv: cfl data load failed"; exit 1; }
	cfl_times+=("$(awk '{ for (i = 1; i < NF; i++) if ($i == "seconds") print $(i + 1) }' <<<"$line")")
done
cfl_med=$(printf '%s\n' "${cfl_times[@]}" | median)

peer_out=$("$PY" - "$DATA" "$N" <<'PYEOF'
import sys, time
path = sys.argv[1]
try:
    import pandas as pd
    name = "pandas.read_csv"
    load = lambda: pd.read_csv(path)
except ImportError:
    import numpy as np
    name = "numpy.loadtxt"
    load = lambda: np.loadtxt(path, delimiter=",", skiprows=1)
ts = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    load()
    ts.append(time.perf_counter() - t)
ts.sort()
print(name, "%.4f" % ts[(len(ts) - 1) // 2])
PYEOF
) || { echo "bench_csv: the peer failed"; exit 1; }
peer_name=${peer_out% *}
peer_med=${peer_out##* }
ratio=$(awk -v a="$peer_med" -v b="$cfl_med" 'BEGIN { printf "%.1f", a / b }')
size=$(du -m "$DATA" | cut -f1)

emit "csv load synth_clf_100k" "s, cfl data load vs $peer_name (peer / cfl)" "$cfl_med" "$peer_med" "$ratio" \
	"range $(printf '%s\n' "${cfl_times[@]}" | range)" ">= 1"
echo "csv load, synth_clf_100k (100000 x 21, ${size} MB): cfl ${cfl_med} s, $peer_name ${peer_med} s, cfl is ${ratio}x faster"
{
	echo "### CSV loading (synth_clf_100k: 100000 rows x 21 columns, ${size} MB)"
	echo
	echo "| what | median of $N (s) |"
	echo "|---|---|"
	echo "| cfl data load (read + type + split + encode) | $cfl_med |"
	echo "| $peer_name (parse only) | $peer_med |"
	echo "| ratio (peer / cfl) | $ratio |"
	echo
} >> "$BENCH_DIR/results.md"
