# Shared helpers of the bench scripts (sourced by tests/bench/run.sh and by
# every bench_*.sh): one way to record a figure, the QUICK switch, medians.
#
#     emit WORKLOAD METRIC CFL PEER RATIO [SPREAD] [TARGET]
#
# appends one JSON object to $BENCH_DIR/results.jsonl (QUICK=1 runs:
# results.quick.jsonl, $BENCH_JSONL, so that they never replace a full
# run's figures): the figure of cfl,
# the peer's figure measured in the same run (or the baseline it is compared
# with), their ratio, the spread (a range "lo-hi" or a std), the target, the
# load average, the CPU model, the OpenBLAS kernels (run.sh's BENCH_BLAS),
# the date and the script that measured it.
# An empty or "-" field is written as null; a number as a JSON number.
# tests/bench/gen_results.py turns the file into tests/bench/RESULTS.md.
#
# QUICK=1 (make bench QUICK=1) asks every script for the same tables on
# fewer repeats and seeds: `reps FULL QUICK` picks the count to use.

: "${BENCH_DIR:=${ROOT:-.}/build/bench}"
QUICK=${QUICK:-0}
[ "$QUICK" = 0 ] || QUICK=1

# reps FULL QUICK -> FULL, or QUICK when QUICK=1
reps() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# median of numbers on stdin (the lower middle of an even count)
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# "min-max" of numbers on stdin
range() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%s-%s\n", v[1], v[NR] }'; }

bench_cpu_model() {
	awk -F': *' '$1 ~ /^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null
}

# The OpenBLAS kernels cfl runs ("SkylakeX", as `cfl --version` names
# them), empty when it names none
bench_blas_kernels() {
	"${CFL:-cfl}" --version 2>/dev/null | sed -n 's/^blas: OpenBLAS, \(.*\) kernels$/\1/p'
}

# A JSON value of a shell string: null, a number, or a quoted string.
json_value() {
	JSON_S="$1" awk 'BEGIN {
		s = ENVIRON["JSON_S"]
		if (s == "" || s == "-") { print "null"; exit }
		if (s ~ /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) { print s; exit }
		if (s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) { printf "%.15g\n", s + 0; exit }
		gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, "\\t", s)
		printf "\"%s\"\n", s
	}'
}

emit() {
	if [ $# -lt 5 ] || [ $# -gt 7 ]; then
		echo "emit: usage: emit WORKLOAD METRIC CFL PEER RATIO [SPREAD] [TARGET]" >&2
		return 2
	fi
	local load cpu script blas
	load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
	cpu=$(bench_cpu_model)
	blas=${BENCH_BLAS-$(bench_blas_kernels)}
	script=$(basename "${BENCH_SCRIPT:-$0}")
	mkdir -p "$BENCH_DIR" || return 1
	printf '{"workload": %s, "metric": %s, "cfl": %s, "peer": %s, "ratio": %s, "spread": %s, "target": %s, "load": %s, "cpu": %s, "blas": %s, "date": %s, "quick": %s, "script": %s}\n' \
		"$(json_value "$1")" "$(json_value "$2")" "$(json_value "$3")" \
		"$(json_value "$4")" "$(json_value "$5")" "$(json_value "${6:-}")" \
		"$(json_value "${7:-}")" "$(json_value "$load")" "$(json_value "$cpu")" \
		"$(json_value "$blas")" \
		"$(json_value "$(date -u +%Y-%m-%dT%H:%M:%SZ)")" "$QUICK" \
		"$(json_value "$script")" >>"$BENCH_DIR/${BENCH_JSONL:-results.jsonl}"
}

# ratio A B [FORMAT] -> A / B (empty when either is not a positive number)
ratio() {
	awk -v a="$1" -v b="$2" -v f="${3:-%.3g}" 'BEGIN {
		if (a ~ /^[-+.0-9eE]+$/ && b ~ /^[-+.0-9eE]+$/ && b + 0 != 0) printf f "\n", a / b }'
}

# emit_file FILE: one emit per line of FILE, its fields separated by the
# unit separator \x1f (so a helper in Python can print the figures)
emit_file() {
	local w m c p r s t
	while IFS=$'\x1f' read -r w m c p r s t; do
		emit "$w" "$m" "$c" "$p" "$r" "$s" "$t" || return 1
	done <"$1"
}

# sk_defaults clf|reg DATASET SEEDS: scikit-learn's default models
# (w7_peers.py) on the peers' split of DATASET with random_state
# 0..SEEDS-1, one line per model and seed, "name seed value".  They are
# seeded, so a bench run computes each seed once: the lines are kept in
# $BENCH_DIR/peers/DATASET.txt, bench_auto.sh (seed 0) and bench_w7.sh
# (seeds 0-2) share them, and only missing seeds run.  run.sh empties the
# folder at the start of a full run (BENCH_REUSE_PEERS=1 keeps it; QUICK=1
# keeps it unless BENCH_REUSE_PEERS=0).
sk_defaults() {
	local task=$1 ds=$2 n=$3 f="$BENCH_DIR/peers/$2.txt" have
	mkdir -p "$BENCH_DIR/peers" || return 1
	have=$(awk '$2 + 1 > m { m = $2 + 1 } END { print m + 0 }' "$f" 2>/dev/null || echo 0)
	if [ "$have" -lt "$n" ]; then
		"${PY:-/usr/bin/python3}" "$ROOT/tests/bench/w7_peers.py" "$task" "$BENCH_DIR/$ds.train.csv" \
			"$BENCH_DIR/$ds.test.csv" "$n" "$have" > "$f.part" || { rm -f "$f.part"; return 1; }
		cat "$f.part" >> "$f" && rm -f "$f.part"
	fi
	awk -v n="$n" '$2 < n' "$f"
}

# Peers timed on the 100k sets take minutes even once, more than QUICK=1's
# 3 minutes allow, and W1's PyTorch and MLP start in 1-3 s on every set.
# A full run keeps such a peer's output (its timings and
# figures) in $BENCH_DIR/peer_times/KEY.txt, with when and at what load it
# was measured in KEY.when; QUICK=1 reuses it (BENCH_REUSE_PEER_TIMES=0:
# never; =1: a full run too, which then measures no 100k peer), and the row
# says so.
#   peer_kept KEY       true when this run reuses KEY's kept output
#   peer_kept_file KEY  the file of KEY's kept output
#   peer_keep KEY FILE  on a full run, keeps FILE as KEY's output
#   peer_kept_note KEY  "timed by the full run of DATE, load L"
peer_kept_file() { echo "$BENCH_DIR/peer_times/$1.txt"; }
peer_kept() {
	[ "${BENCH_REUSE_PEER_TIMES:-$QUICK}" = 1 ] &&
		[ -s "$(peer_kept_file "$1")" ] && [ -s "$BENCH_DIR/peer_times/$1.when" ]
}
peer_keep() {
	[ "$QUICK" = 0 ] || return 0
	mkdir -p "$BENCH_DIR/peer_times" || return 1
	cp "$2" "$(peer_kept_file "$1")" &&
		echo "$(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1 /proc/loadavg)" > "$BENCH_DIR/peer_times/$1.when"
}
peer_kept_note() { echo "timed by the full run of $(cat "$BENCH_DIR/peer_times/$1.when")"; }

# The quality-only figures (they time nothing; cfl's and the peers' are
# seeded) take a minute of QUICK=1's 3 even on fewer seeds: a full run
# keeps them (bench_quality.sh's table and figures, W3's 30-seed quality
# runs of the small sets) in $BENCH_DIR/quality_kept/KEY, with when and at
# what load in KEY.when; QUICK=1 reuses them (BENCH_REUSE_QUALITY=0: never;
# a full run always computes them afresh), and the rows say so.  They are
# the figures of the tree of that full run: a QUICK=1 run after a change to
# a model scores nothing new until BENCH_REUSE_QUALITY=0 or a full run.
#   quality_kept KEY       true when this run reuses KEY's kept figures
#   quality_kept_dir KEY   the folder of KEY's kept figures
#   quality_keep KEY FILE...  on a full run, keeps a copy of the files as KEY's
#   quality_kept_note KEY  "kept from the full run of DATE, load L"
quality_kept_dir() { echo "$BENCH_DIR/quality_kept/$1"; }
quality_kept() {
	[ "$QUICK" = 1 ] && [ "${BENCH_REUSE_QUALITY:-1}" = 1 ] &&
		[ -d "$(quality_kept_dir "$1")" ] && [ -s "$BENCH_DIR/quality_kept/$1.when" ]
}
quality_keep() {
	[ "$QUICK" = 0 ] || return 0
	local d; d=$(quality_kept_dir "$1")
	shift
	rm -rf "$d" "$d.when" && mkdir -p "$d" && cp -p "$@" "$d"/ &&
		echo "$(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1 /proc/loadavg)" > "$d.when"
}
quality_kept_note() { echo "kept from the full run of $(cat "$BENCH_DIR/quality_kept/$1.when")"; }

# cfl_defaults TRAIN TEST METRIC DB NAME CSV: `cfl repeat` of the five models
# with their defaults (seed 0, no ensemble) trained on TRAIN and scored on
# TEST, run NAME in DB; cfl report's csv of it (a model a line, its test
# figure in the third column) in CSV, its stderr in CSV.err
cfl_defaults() {
	rm -f "$6"
	"${CFL:-$ROOT/cfl}" repeat "$1" --test "$2" --models fcnn,linear,tree,forest,gbdt --num-repeat 1 \
		--metrics "$3" --ensemble none --db "$4" --name "$5" -q > /dev/null 2> "$6.err" || return 1
	"${CFL:-$ROOT/cfl}" report "$5" --db "$4" --format csv > "$6.part" 2>> "$6.err" && mv "$6.part" "$6" ||
		{ rm -f "$6.part"; return 1; }
}
