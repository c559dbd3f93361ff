# Remote workers: no-op trials per second through 2 loopback
# `cfl worker` processes against the local pool's 2 forked workers, and W1
# (fcnn when built in, else linear; 3 seeds) on synth_clf_100k through 2
# loopback workers against the local pool, wall time of the whole command
# (the workers' dataset fetch and load included).  Each through plain TCP
# (no token) and TLS 1.3 (a token).  Medians of 3 runs (QUICK: 1), with
# their range, and the range of the ratios of the interleaved runs.
set -u
. "$ROOT/tests/bench/lib.sh"
RUNS=$(reps 3 1)
B="$BENCH_DIR/tcp"
mkdir -p "$B"
# the driver is built by the Makefile, linked like cfl
make -s --no-print-directory -C "$ROOT" "build/bench-bin/tcp_bench" >/dev/null && cp "$ROOT/build/bench-bin/tcp_bench" "$B/" || exit 1
export CFL_CACHE_DIR="$B/cache"
TOK="$B/bench.tok"
(umask 077; head -c 32 /dev/urandom | base64 >"$TOK")

# 1. no-op trials per second: 5,000 a run (tcp_bench times the trials
#    once both workers have joined: about 1 s at 5,000-6,000 a second,
#    where 20,000 took 3-4 s a run for the same rate)
NOOP_N=${TCP_NOOP_TRIALS:-5000}
tput() { for _ in $(seq "$RUNS"); do "$B/tcp_bench" "$CFL" "$ROOT/datasets/iris.csv" "$NOOP_N" "$@" || exit 1; done | median; }
tcp=$(tput tcp)
tls=$(tput tcp "$TOK")
loc=$(tput local)
echo "no-op trials through 2 loopback workers: ${tcp}/s plain, ${tls}/s TLS (target >= 2000);" \
	"local pool: ${loc}/s (ratios $(awk -v a="$tcp" -v b="$loc" 'BEGIN { printf "%.2f", a / b }')," \
	"$(awk -v a="$tls" -v b="$loc" 'BEGIN { printf "%.2f", a / b }'))"

# 2. W1 on synth_clf_100k: local pool (J=2) vs 2 loopback workers (1 slot each)
SYN="$BENCH_DIR/synth_clf_100k.csv"
rm -f "$B/l.times" "$B/r.times" "$B/s.times"
M=(--models linear)
if "$CFL" --version | grep -qw fcnn; then
	M=(--models fcnn --set fcnn.hidden=64,64 --set fcnn.batch_size=128 --set fcnn.epochs=40 --set fcnn.patience=0 --ensemble none)
fi
w1_local() {
	rm -f "$B/l.db"*
	local t0; t0=$(date +%s.%N)
	"$CFL" repeat "$SYN" "${M[@]}" --num-repeat 3 --seed 0 --num-jobs 2 --db "$B/l.db" -q \
		>"$B/local.out" 2>/dev/null || exit 1
	echo "$(date +%s.%N) - $t0" | bc
}
# w1_tcp [--token-file F]: through plain TCP, or TLS with a token
w1_tcp() {
	rm -rf "$B/r.db"* "$CFL_CACHE_DIR"
	local t0 port pid; t0=$(date +%s.%N)
	"$CFL" repeat "$SYN" "${M[@]}" --num-repeat 3 --seed 0 --num-jobs 0 --listen 127.0.0.1:0 \
		--db "$B/r.db" -q "$@" >"$B/tcp.out" 2>"$B/tcp.err" &
	pid=$!
	for _ in $(seq 300); do
		port=$(grep -o -m1 'connect 127.0.0.1:[0-9]*' "$B/tcp.err" | cut -d: -f2)
		[ -n "$port" ] && break
		sleep 0.02
	done
	"$CFL" worker --connect "127.0.0.1:$port" --jobs 1 -q "$@" &
	"$CFL" worker --connect "127.0.0.1:$port" --jobs 1 -q "$@" &
	wait || exit 1
	echo "$(date +%s.%N) - $t0" | bc
}
# interleaved, so both see the same machine load
for _ in $(seq "$RUNS"); do
	w1_local >>"$B/l.times"
	w1_tcp >>"$B/r.times"
	w1_tcp --token-file "$TOK" >>"$B/s.times"
done
l=$(median <"$B/l.times")
r=$(median <"$B/r.times")
s=$(median <"$B/s.times")
# ratio of each interleaved pair: LIST_A LIST_B -> "lo-hi"
pair_range() { paste "$1" "$2" | awk '{ printf "%.3f\n", $1 / $2 }' | range; }
emit "TCP no-op trials" "trials/s, 2 loopback workers plain / local pool" "$tcp" "$loc" "$(ratio "$tcp" "$loc")" "" ">= 2000/s"
emit "TCP no-op trials" "trials/s, 2 loopback workers TLS / plain" "$tls" "$tcp" "$(ratio "$tls" "$tcp")"
emit "TCP W1 synth_clf_100k" "${M[1]} x3 wall s, 2 loopback workers plain / local pool" "$r" "$l" \
	"$(ratio "$r" "$l")" "pairs $(pair_range "$B/r.times" "$B/l.times")" "<= 1.10"
emit "TCP W1 synth_clf_100k" "${M[1]} x3 wall s, 2 loopback workers TLS / local pool" "$s" "$l" \
	"$(ratio "$s" "$l")" "pairs $(pair_range "$B/s.times" "$B/l.times")" "<= 1.10"
emit "TCP W1 synth_clf_100k" "${M[1]} x3 wall s, TLS / plain" "$s" "$r" \
	"$(ratio "$s" "$r")" "pairs $(pair_range "$B/s.times" "$B/r.times")"
cmp -s <(grep -E '^[|=-]' "$B/local.out") <(grep -E '^[|=-]' "$B/tcp.out") && same=same || same=DIFFERENT
echo "W1 ${M[1]} x3 on synth_clf_100k: local pool ${l} s ($(range <"$B/l.times")), 2 loopback" \
	"workers ${r} s plain ($(range <"$B/r.times")), ${s} s TLS ($(range <"$B/s.times"))" \
	"(ratios to local $(awk -v a="$r" -v b="$l" 'BEGIN { printf "%.2f", a / b }') plain," \
	"$(awk -v a="$s" -v b="$l" 'BEGIN { printf "%.2f", a / b }') TLS; target <= 1.10;" \
	"TLS/plain $(awk -v a="$s" -v b="$r" 'BEGIN { printf "%.2f", a / b }')); tables ${same}"
{
	echo "| tcp: no-op trials/s, 2 loopback workers | ${tcp} | local pool ${loc} |"
	echo "| tcp: W1 ${M[1]} synth_clf_100k wall s, 2 loopback workers | ${r} | local pool ${l} |"
	echo "| tcp: no-op trials/s, 2 loopback workers over TLS | ${tls} | plain ${tcp} |"
	echo "| tcp: W1 ${M[1]} synth_clf_100k wall s, 2 loopback workers over TLS | ${s} | plain ${r} |"
} >>"$BENCH_DIR/results.md"
