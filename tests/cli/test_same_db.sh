# Two runs started at the same moment on one database: the first open of a
# new file creates the schema once, and default run names never collide.

# A tiny two-class dataset: 20 rows of each of iris's first two classes.
same_db_data() {
	head -21 "$ROOT/datasets/iris.csv" >tiny.csv
	sed -n 52,71p "$ROOT/datasets/iris.csv" >>tiny.csv
}

same_db_repeat() {
	"$CFL" repeat tiny.csv --models linear --num-repeat 1 --num-jobs 1 -q \
		--db "$1" >/dev/null 2>"$2"
}

# 50 pairs, 5 databases at a time; $1: fresh (the file does not exist yet)
# or existing (it holds one run already).  Each pair must both succeed and
# leave its database with every run done under its own name.
same_db_pairs() {
	local mode=$1 batch i k db want pids
	same_db_data
	want=2
	[ "$mode" = existing ] && want=3
	for batch in 0 1 2 3 4 5 6 7 8 9; do
		for k in 1 2 3 4 5; do
			db=p$batch-$k.db
			if [ "$mode" = existing ]; then
				same_db_repeat "$db" setup.err || fail "setup: $(cat setup.err)"
			fi
		done
		pids=""
		for k in 1 2 3 4 5; do
			same_db_repeat p$batch-$k.db a$batch-$k.err & pids="$pids $!"
			same_db_repeat p$batch-$k.db b$batch-$k.err & pids="$pids $!"
		done
		i=0
		for p in $pids; do wait "$p" || i=$((i + 1)); done
		[ "$i" = 0 ] || fail "$mode: $i runs of batch $batch failed: $(cat a$batch-*.err b$batch-*.err | grep -v 'stored in')"
		for k in 1 2 3 4 5; do
			db=p$batch-$k.db
			[ "$(sqlite3 "$db" "SELECT count(DISTINCT name) || ' ' || count(*) FROM runs WHERE status = 'done'")" = "$want $want" ] ||
				fail "$mode: $db: $(sqlite3 "$db" 'SELECT name, status FROM runs')"
		done
	done
}

test_same_db_two_runs_on_a_new_file() {
	same_db_pairs fresh
}

test_same_db_two_runs_on_an_existing_file() {
	same_db_pairs existing
}
