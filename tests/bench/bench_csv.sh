#!/usr/bin/env bash
# CSV loading, W6 of ../shared/WORKLOADS.md: `cfl data load` (read, type,
# split, encode, hash) of a 1,000,000 x 21 numeric CSV (20 normal columns of
# random scales and offsets written %.6g, a 0/1 target; generated here,
# seeded; QUICK: 200,000 rows) against pandas.read_csv alone, the file read
# from the page cache.  Per tool: CPU seconds (user + system), wall seconds
# and the peak resident set of the whole process, also as a ratio to the
# file's size.  cfl is timed as a whole process (start-up included, through
# os.wait4); pandas inside its process around read_csv (interpreter start and
# import left out).  Runs alternate; medians of 5 (QUICK: 3).
set -u
: "${ROOT:?}" "${CFL:?}" "${BENCH_DIR:?}" "${PY:=/usr/bin/python3}"
. "$ROOT/tests/bench/lib.sh"
N=$(reps 5 3)
ROWS=$(reps 1000000 200000)
DATA="$BENCH_DIR/w6_${ROWS}.csv"
mkdir -p "$BENCH_DIR" || exit 1

if [ ! -f "$DATA" ]; then
	"$PY" "$ROOT/tests/bench/make_w6.py" "$DATA" "$ROWS" || { echo "bench_csv: cannot write $DATA"; exit 1; }
fi
size=$(stat -c %s "$DATA")
cat "$DATA" >/dev/null	# into the page cache

# One run of a tool: prints "CPU_S WALL_S MAXRSS_KB".
measure() {
	"$PY" - "$1" "$CFL" "$DATA" <<'PYEOF'
import os, resource, subprocess, sys, time
tool, cfl, path = sys.argv[1:4]
if tool == 'cfl':
    t = time.perf_counter()
    p = subprocess.Popen([cfl, 'data', 'load', path], stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        sys.exit('cfl data load failed')
    print('%.4f %.4f %d' % (ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss))
else:
    import pandas as pd
    c, t = time.process_time(), time.perf_counter()
    pd.read_csv(path)
    cpu, wall = time.process_time() - c, time.perf_counter() - t
    print('%.4f %.4f %d' % (cpu, wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
PYEOF
}

"$PY" -c 'import pandas' 2>/dev/null || { echo "bench_csv: $PY has no pandas"; exit 1; }
c_cpu=() c_wall=() c_rss=() p_cpu=() p_wall=() p_rss=()
for _ in $(seq "$N"); do
	read -r a b c < <(measure cfl) && [ -n "$c" ] || { echo "bench_csv: cfl data load failed"; exit 1; }
	c_cpu+=("$a") c_wall+=("$b") c_rss+=("$c")
	read -r a b c < <(measure pandas) && [ -n "$c" ] || { echo "bench_csv: pandas.read_csv failed"; exit 1; }
	p_cpu+=("$a") p_wall+=("$b") p_rss+=("$c")
done
med() { printf '%s\n' "$@" | median; }
rng() { printf '%s\n' "$@" | range; }
cc=$(med "${c_cpu[@]}") pc=$(med "${p_cpu[@]}")
cw=$(med "${c_wall[@]}") pw=$(med "${p_wall[@]}")
cr=$(med "${c_rss[@]}") pr=$(med "${p_rss[@]}")
div() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { printf f, a / b }'; }
cr_mib=$(div "$cr" 1024 "%.1f") pr_mib=$(div "$pr" 1024 "%.1f")
c_x=$(div "$((cr * 1024))" "$size" "%.2f") p_x=$(div "$((pr * 1024))" "$size" "%.2f")
mb=$(div "$size" 1048576 "%.0f")
W="csv load W6 ${ROWS} x 21 (${mb} MiB)"

emit "$W" "CPU s, cfl data load vs pandas.read_csv (peer / cfl)" "$cc" "$pc" \
	"$(div "$pc" "$cc" "%.2f")" "cfl $(rng "${c_cpu[@]}"), pandas $(rng "${p_cpu[@]}")" ">= 1"
emit "$W" "wall s, cfl data load vs pandas.read_csv (peer / cfl)" "$cw" "$pw" \
	"$(div "$pw" "$cw" "%.2f")" "cfl $(rng "${c_wall[@]}"), pandas $(rng "${p_wall[@]}")" ">= 1"
emit "$W" "peak RSS MiB, cfl data load vs pandas.read_csv (peer / cfl)" "$cr_mib" "$pr_mib" \
	"$(div "$pr" "$cr" "%.2f")" "" ""
emit "$W" "peak RSS / file size, cfl vs pandas (cfl / file)" "$c_x" "$p_x" "$c_x" "" "<= 2"
echo "csv load, W6 ($ROWS x 21, $mb MiB): CPU cfl $cc s, pandas $pc s; wall cfl $cw s, pandas $pw s;" \
	"peak RSS cfl $cr_mib MiB (${c_x}x the file), pandas $pr_mib MiB (${p_x}x)"
{
	echo "### CSV loading (W6: $ROWS rows x 21 columns, $mb MiB)"
	echo
	echo "| what | CPU s | wall s | peak RSS MiB | RSS / file |"
	echo "|---|---|---|---|---|"
	echo "| cfl data load (read + type + split + encode + hash) | $cc | $cw | $cr_mib | $c_x |"
	echo "| pandas.read_csv (parse only) | $pc | $pw | $pr_mib | $p_x |"
	echo
} >> "$BENCH_DIR/results.md"
