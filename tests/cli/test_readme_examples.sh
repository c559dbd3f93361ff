# The example commands of README.md and docs/*.md run as written, from a
# folder laid out like a fresh clone (datasets/, params/, examples/; no
# reports/), in the order the pages give them, so the documentation cannot
# drift from the commands.  Examples are the `cfl ...` cells of README.md's
# commands table and the indented `cfl ...` or `$ cfl ...` lines of a page
# (a line ending in '\' continues on the next).  Left out: synopses ('...' or
# a placeholder such as DATA or NAME), printed output ("cfl tune: ..."), and
# what needs a second machine or a launcher (--listen and cfl worker in
# docs/, mpirun, srun; tests/cli/test_worker.sh and test_mpi.sh cover
# those).  One substitution: README's worker example connects to a loopback
# coordinator started here instead of 10.0.0.5:7070, with its token file made
# as docs/worker.md says.

# doc_examples FILE: the runnable example commands of a page, one a line.
doc_examples() {
	if [ "${1##*/}" = README.md ]; then
		# the example column of the commands table: a row's last cell
		grep -E '^\|' "$1" | grep -oE '`cfl [^`]+` \|$' | sed -E 's/^`//; s/` \|$//'
	fi
	awk '
		/^    (\$ )?cfl [a-z]/ || cont {
			line = $0
			sub(/^ +(\$ )?/, "", line)
			buf = cont ? buf " " line : line
			if (buf ~ /\\$/) { sub(/ *\\$/, "", buf); cont = 1; next }
			cont = 0
			sub(/ +# .*$/, "", buf)
			print buf
		}' "$1" |
		grep -vE '\.\.\.|--listen|^cfl [a-z]+:|(^| )[A-Z]{3,}( |$)'
}

# examples_clone: a fresh-clone-like folder (cwd), cfl on PATH, HOME apart.
examples_clone() {
	mkdir -p clone/bin home
	ln -s "$ROOT/datasets" clone/datasets
	ln -s "$ROOT/params" clone/params
	ln -s "$ROOT/examples" clone/examples
	ln -s "$CFL" clone/bin/cfl
	cd clone || fail "no clone folder"
	export PATH="$PWD/bin:$PATH" HOME="$TMP/home" CFL_CACHE_DIR="$TMP/cache"
}

# run_example CMD: runs one example, bounded; a failure names it.  Under
# the sanitizers (cfl-san trains 3-10 times slower) an example's
# --time-limit is 4 times longer, so what the page shows after it (a bag
# of each model, a stacking row) still finishes.
run_example() {
	local cmd=$1
	case "$CFL" in *-san) cmd=$(perl -pe 's/--time-limit (\d+)/"--time-limit " . $1 * 4/ge' <<<"$cmd") ;; esac
	run timeout 120 bash -c "$cmd"
	[ "$rc" = 0 ] || fail "example '$cmd': exit $rc: ${err:0:600}"
}

# worker_example CMD: README's `cfl worker --connect ADDR ...` against a
# coordinator on loopback.
worker_example() {
	local cmd=$1 coord port
	(umask 077; head -c 32 /dev/urandom | base64 >~/.cfl-token)
	cfl repeat datasets/iris.csv --models linear --num-repeat 2 --num-jobs 0 \
		--listen 127.0.0.1:0 --token-file ~/.cfl-token -q >coord.out 2>coord.err &
	coord=$!
	port=
	for _ in $(seq 100); do
		port=$(grep -o -m1 'connect 127.0.0.1:[0-9]*' coord.err | cut -d: -f2)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "no worker line from the coordinator: $(cat coord.err)"
	run_example "$(sed -E "s/--connect [0-9.]+:[0-9]+/--connect 127.0.0.1:$port/" <<<"$cmd")"
	wait "$coord" || fail "the coordinator of the worker example failed: $(cat coord.err)"
	grep -q '^|' coord.out || fail "the coordinator printed no table: $(cat coord.out)"
}

test_readme_examples_run() {
	local cmd n=0
	examples_clone
	trap 'kill -9 $(jobs -p) 2>/dev/null' EXIT
	while IFS= read -r cmd; do
		n=$((n + 1))
		case "$cmd" in
		"cfl worker --connect "*) worker_example "$cmd" ;;
		*) run_example "$cmd" ;;
		esac
	done < <(doc_examples "$ROOT/README.md")
	[ "$n" -ge 8 ] || fail "only $n README examples found: the extraction is broken"
	# what the examples promise to leave behind
	[ -s wine.cfl ] || fail "the train example wrote no wine.cfl"
	head -1 pred.csv | grep -q prediction || fail "pred.csv has no prediction column"
	[ -s reports/cfl.db ] || fail "no reports/cfl.db"
	ls reports/*.html >/dev/null 2>&1 || fail "the report example wrote no HTML page"
}

# The pages in the order a reader meets them (report.md names tune.md's run).
test_docs_examples_run() {
	local f cmd n=0 pages
	examples_clone
	pages=$(cd "$ROOT" && for p in data train predict repeat tune ensembles models params report runs; do
		echo "docs/$p.md"; done; ls docs/*.md)
	for f in $(awk '!seen[$0]++' <<<"$pages"); do
		while IFS= read -r cmd; do
			n=$((n + 1))
			run_example "$cmd"
		done < <(doc_examples "$ROOT/$f" | grep -v '^cfl worker ')
	done
	[ "$n" -ge 20 ] || fail "only $n examples found in docs/: the extraction is broken"
	[ -s predictions.csv ] || fail "the predict example wrote no predictions.csv"
}
