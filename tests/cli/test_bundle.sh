# CLI tests of bundles: `cfl repeat --save`, `cfl predict BUNDLE --row`,
# `cfl bundle show` / `cfl predict --list`, the save key kept by --resume,
# a remote worker's models, and bad input (unknown rows, truncated and
# foreign files, data with wrong columns).  The bit-for-bit equality of
# every row with the stored predictions is tests/unit/test_bundle.c's; here
# each row's printed metrics on the run's own test file must equal the
# metrics the run stored for it.

# b_split: train.csv and test.csv from iris (every fifth row to test).
b_split() {
	awk 'NR == 1 { print > "train.csv"; print > "test.csv"; next }
	     { print > ((NR - 1) % 5 == 0 ? "test.csv" : "train.csv") }' \
		"$ROOT/datasets/iris.csv"
}

# b_metric ROW METRIC: what predict prints for ROW of m.cfl on test.csv.
b_metric() {
	"$CFL" predict m.cfl test.csv --row "$1" -o /dev/null | awk -v m="$2" '$1 == m { print $2 }'
}

test_bundle_repeat_save_rows_match_the_run() {
	b_split
	run "$CFL" repeat train.csv --test test.csv --models linear,tree --num-repeat 2 \
		--ensemble mean,vote,stacking,greedy --save m.cfl --db r.db --name r -q
	expect_rc 0
	expect_err "bundle written to 'm.cfl'"
	[ -s m.cfl ] || fail "no bundle"
	ls | grep -q 'm.cfl.tmp' && fail "temporary file left: $(ls)"
	# every trial kept its model in the store
	[ "$(sqlite3 r.db 'select count(*) from trial_models')" = 4 ] || fail "trial_models"
	# each ensemble row reproduces the ensemble's stored test metrics
	for e in mean vote stacking greedy; do
		want=$(sqlite3 r.db "select printf('%.10g', m.value) from ensemble_metrics m
			join ensembles e on e.id = m.ensemble where e.name = '$e'
			and m.split = 'test' and m.metric = 'auc'")
		got=$(b_metric "$e" auc)
		[ -n "$want" ] && [ "$got" = "$want" ] || fail "$e: predict $got, stored $want"
	done
	# a repeat row reproduces its trial's
	want=$(sqlite3 r.db "select printf('%.10g', m.value) from metrics m join trials t
		on t.id = m.trial join candidates c on c.id = t.candidate where
		c.model = 'tree' and t.repeat = 1 and m.split = 'test' and m.metric = 'auc'")
	got=$(b_metric 'tree#1' auc)
	[ -n "$want" ] && [ "$got" = "$want" ] || fail "tree#1: predict $got, stored $want"
	# the default row is the recommended one, said on stderr
	rec=$(sqlite3 m.cfl "select value from meta where key = 'recommended'")
	run "$CFL" predict m.cfl test.csv -o p.csv
	expect_rc 0
	expect_err "row '$rec'"
	[ "$(wc -l <p.csv)" = 31 ] || fail "rows: $(wc -l <p.csv)"
	run "$CFL" predict m.cfl test.csv --row linear --proba
	expect_rc 0
	expect_out "prediction,proba_setosa"
	# the manifest: format, version, dataset hash, rows
	[ "$(sqlite3 m.cfl "select value from meta where key = 'format'")" = cfl-bundle ] ||
		fail "format"
	[ "$(sqlite3 m.cfl "select value from meta where key = 'dataset_sha256'")" = \
	  "$(sha256sum train.csv | cut -d' ' -f1)" ] || fail "sha256"
	[ "$(sqlite3 m.cfl "select group_concat(name, ' ') from (select name from rows order by id)")" = \
	  "linear linear#0 linear#1 tree tree#0 tree#1 mean vote stacking greedy" ] ||
		fail "rows: $(sqlite3 m.cfl 'select group_concat(name, " ") from rows')"
	# a model extracted from the bundle is a model file cfl predict takes
	sqlite3 m.cfl "select text from models where id = 1" >one.cfl
	run "$CFL" predict one.cfl test.csv -o /dev/null
	expect_rc 0
	expect_out "acc"
}

test_bundle_show_and_list() {
	b_split
	run "$CFL" repeat train.csv --models linear,baseline --num-repeat 2 --folds 3 \
		--save m.cfl --db r.db -q
	expect_rc 0
	run "$CFL" bundle show m.cfl
	expect_rc 0
	expect_out "bundle of repeat run"
	expect_out "linear#1"
	expect_out "stacking"
	expect_out "test acc"
	expect_out "models (id trial model repeat fold):"
	# with --folds a repeat's member is its 3 fold models
	grep -q '^  linear#0 .* 1+2+3$' <<<"$out" || fail "fold members: $out"
	show=$out
	run "$CFL" predict m.cfl --list
	expect_rc 0
	[ "$out" = "$show" ] || fail "--list differs from bundle show"
	run "$CFL" bundle --help
	expect_rc 0
	expect_out "usage: cfl bundle show FILE"
	run "$CFL" --help
	expect_out "bundle"
}

test_bundle_bad_input() {
	b_split
	run "$CFL" repeat train.csv --models linear --num-repeat 2 --save m.cfl --db r.db -q
	expect_rc 0
	run "$CFL" predict m.cfl test.csv --row lineer
	expect_rc 2
	expect_err "has no row 'lineer'; did you mean 'linear'?"
	run "$CFL" predict m.cfl test.csv --row zzzzzz
	expect_rc 2
	expect_err "has no row 'zzzzzz'"
	# data with the wrong columns
	cut -d, -f2- test.csv >cols.csv
	run "$CFL" predict m.cfl cols.csv
	expect_rc 1
	expect_err "sepal_length"
	# truncated, foreign, empty, missing
	head -c 3000 m.cfl >cut.cfl
	run "$CFL" predict cut.cfl test.csv
	expect_rc 1
	expect_err "cut.cfl"
	run "$CFL" bundle show cut.cfl
	expect_rc 1
	sqlite3 other.db "create table t (x)"
	run "$CFL" predict other.db test.csv
	expect_rc 1
	expect_err "not a cfl bundle"
	run "$CFL" bundle show other.db
	expect_rc 1
	expect_err "not a cfl bundle"
	run "$CFL" bundle show nosuch.cfl
	expect_rc 1
	expect_err "nosuch.cfl"
	run "$CFL" bundle shwo m.cfl
	expect_rc 2
	expect_err "did you mean 'show'"
	# --row and --list belong to bundles; a model file still works as ever
	"$CFL" train train.csv --model linear -o lin.cfl -q 2>/dev/null ||
		"$CFL" train train.csv --model linear -o lin.cfl >/dev/null 2>&1
	run "$CFL" predict lin.cfl test.csv --row linear
	expect_rc 2
	expect_err "--row needs a bundle"
	run "$CFL" predict lin.cfl test.csv -o /dev/null
	expect_rc 0
	expect_out "acc"
	run "$CFL" predict lin.cfl --list
	expect_rc 1
	expect_err "not a cfl bundle"
	run "$CFL" repeat train.csv --models linear --save "" --db r.db
	expect_rc 2
}

# The save key is part of the plan: --resume writes the bundle again with
# the same file, and another --save is another plan.
test_bundle_resume_keeps_save() {
	b_split
	run "$CFL" repeat train.csv --models linear --num-repeat 2 --save m.cfl --db r.db \
		--name r -q
	expect_rc 0
	grep -q '^save=m.cfl$' <<<"$(sqlite3 r.db "select config from runs")" ||
		fail "no save key: $(sqlite3 r.db 'select config from runs')"
	rm m.cfl
	# a complete run resumed changes nothing, the bundle file included
	run "$CFL" repeat --resume r --db r.db -q
	expect_rc 0
	[ -e m.cfl ] && fail "a complete run's resume wrote the bundle again"
	# grown by a repeat, it writes the bundle it kept in its plan
	run "$CFL" repeat --resume r --num-repeat 3 --db r.db -q
	expect_rc 0
	[ -s m.cfl ] || fail "resume wrote no bundle: $err"
	run "$CFL" predict m.cfl --list
	expect_rc 0
	expect_out "linear#2"
	run "$CFL" repeat train.csv --models linear --num-repeat 2 --save other.cfl \
		--db r.db --resume r -q
	expect_rc 1
	expect_err "another plan"
	# a run without --save kept no models
	run "$CFL" repeat train.csv --models linear --num-repeat 2 --db r.db --name plain -q
	expect_rc 0
	[ "$(sqlite3 r.db "select count(*) from trial_models m join trials t on t.id = m.trial
		join runs r on r.id = t.run where r.name = 'plain'")" = 0 ] || fail "models kept"
}

# A remote worker's trials bring their models back over TCP.
test_bundle_remote_worker_models() {
	b_split
	printf 'bundle-test-token-0123456789abcdef\n' >tok
	chmod 600 tok
	trap 'kill -9 $(jobs -p) 2>/dev/null' EXIT
	rm -f coord.err
	timeout -k 5 120 "$CFL" repeat train.csv --models linear,tree --num-repeat 2 \
		--num-jobs 0 --listen 127.0.0.1:0 --token-file tok --db r.db --save m.cfl \
		-q >coord.out 2>coord.err &
	local coord=$! port=
	for _ in $(seq 100); do
		port=$(grep -o -m1 'connect 127.0.0.1:[0-9]*' coord.err 2>/dev/null | cut -d: -f2)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "no worker line: $(cat coord.err)"
	CFL_CACHE_DIR="$TMP/cache" timeout -k 5 120 "$CFL" worker --connect "127.0.0.1:$port" \
		--token-file tok --retry-for 30 --jobs 2 -q 2>worker.err
	wait $coord || fail "coordinator: $(cat coord.err) worker: $(cat worker.err)"
	[ "$(sqlite3 r.db 'select count(*) from trial_models')" = 4 ] || fail "trial_models"
	run "$CFL" predict m.cfl test.csv --row tree -o /dev/null
	expect_rc 0
	expect_out "acc"
}

# cfl tune --save: the refit as a bundle; each seed's row gives its trial's
# test figure, so their mean is the refit table's.  The single model file
# of today is still written.
test_bundle_tune_save_reproduces_the_refit() {
	awk 'NR == 1 { print > "train.csv"; print > "test.csv"; next }
	     { print > ((NR - 1) % 4 == 0 ? "test.csv" : "train.csv") }' \
		"$ROOT/datasets/wine.csv"
	run "$CFL" tune train.csv --test test.csv --model tree --method random \
		--num-search 3 --num-repeat 3 --db t.db --name t --save b.cfl -q
	expect_rc 0
	expect_out "The refit saved as bundle b.cfl"
	[ -s t.cfl ] || fail "no single model file"
	[ "$(sqlite3 b.cfl "select group_concat(name, ' ') from (select name from rows order by id)")" = \
	  "best best#0 best#1 best#2" ] || fail "rows: $(sqlite3 b.cfl 'select name from rows')"
	sum=0
	for k in 0 1 2; do
		got=$("$CFL" predict b.cfl test.csv --row "best#$k" -o /dev/null | awk '$1 == "acc" { print $2 }')
		want=$(sqlite3 t.db "select printf('%.10g', m.value) from metrics m join trials t
			on t.id = m.trial where t.candidate = (select candidate from trials
			where repeat = 3) and t.repeat = $((3 + k)) and m.split = 'test' and m.metric = 'acc'")
		[ -n "$got" ] && [ "$got" = "$want" ] || fail "best#$k: predict $got, stored $want"
		sum=$(awk -v a="$sum" -v b="$got" 'BEGIN { printf "%.12g", a + b }')
	done
	# the refit table's test acc mean, to its 6 digits
	mean=$(awk -v s="$sum" 'BEGIN { printf "%.6f", s / 3 }')
	grep -E '^\| best \(' <<<"$out" | grep -qF " $mean " ||
		fail "refit table lacks $mean: $(grep -E '^\| best' <<<"$out")"
	run "$CFL" predict b.cfl test.csv -o /dev/null
	expect_rc 0
	expect_err "row 'best'"
	run "$CFL" tune --command 'echo 1' --params p.params --save x.cfl
	expect_rc 2
	expect_err "--save writes models"
}

# A repeat run without a validation part: `bundle show` does not say its
# default row was the best on valid, nor list "valid acc nan" scores
test_bundle_show_without_validation() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,tree --num-repeat 2 \
		--db r.db --name r --save r.cfl -q
	expect_rc 0
	run "$CFL" bundle show r.cfl
	expect_rc 0
	expect_out "default row 'mean' (the mean: no validation part to choose on)"
	grep -q "on valid" <<<"$out" && fail "says 'on valid': $out"
	grep -q "nan" <<<"$out" && fail "lists nan scores: $out"
	true
}
