# Finished runs that grow: `cfl repeat --resume NAME --num-repeat N` and
# `cfl tune --resume NAME --num-search N` with a larger count, a complete run
# resumed with the same count (nothing changes), and what stays refused.

# The stored predictions of run $2 in database $1, by what they are (model,
# repeat, fold, split; ensembles by name), not by row ids: two runs with the
# same plan give the same lines.
grow_preds() {
	sqlite3 "$1" "select c.model, t.repeat, t.fold, p.split, p.n, p.n_out, hex(p.data),
		hex(coalesce(p.rows, '')) from predictions p join trials t on p.trial = t.id
		join candidates c on t.candidate = c.id join runs r on t.run = r.id
		where r.name = '$2' order by 1, 2, 3, 4;
		select e.name, e.repeat, p.split, p.n, p.n_out, hex(p.data), hex(coalesce(p.rows, ''))
		from ensemble_predictions p join ensembles e on p.ensemble = e.id
		join runs r on e.run = r.id where r.name = '$2' order by 1, 2, 3"
}

# repeat 2 seeds, grown to 4 (--resume alone plus the new count): the table
# and every stored prediction (trials and the rebuilt ensembles) equal a run
# that asked for 4 from the start.
test_grow_repeat_equals_a_run_asked_for_more() {
	local data="$ROOT/datasets/wine.csv" opts
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	opts="--models linear,tree --bootstrap --ensemble mean,stacking,greedy --seed 3 --num-jobs 2 --db r.db -q"
	# shellcheck disable=SC2086
	run "$CFL" repeat "$data" $opts --num-repeat 2 --name a
	expect_rc 0
	small=$out
	run "$CFL" repeat --resume a --db r.db --num-repeat 4 --num-jobs 2
	expect_rc 0
	grown=$out
	# shellcheck disable=SC2086
	run "$CFL" repeat "$data" $opts --num-repeat 4 --name b
	expect_rc 0
	[ "$grown" = "$out" ] || fail "grown table differs from a 4-seed run:
$grown
--
$out"
	[ "$small" != "$out" ] || fail "2 and 4 seeds print the same table: the test proves nothing"
	[ "$(grow_preds r.db a)" = "$(grow_preds r.db b)" ] || fail "stored predictions differ"
	[ "$(sqlite3 r.db "select count(*) from ensembles e join runs r on e.run = r.id where r.name = 'a'")" = 3 ] ||
		fail "ensembles not rebuilt once each"
	[ "$(sqlite3 r.db "select count(*) from trials t join runs r on t.run = r.id where r.name = 'a'")" = 8 ] ||
		fail "trials duplicated"
	# the stored plan and command are the grown run's: --resume alone
	# finds it complete (it does not shrink back to 2)
	sqlite3 r.db "select config from runs where name = 'a'" | grep -qx "num_repeat=4" ||
		fail "stored config not grown: $(sqlite3 r.db "select config from runs where name = 'a'")"
	run "$CFL" repeat --resume a --db r.db
	expect_rc 0
	expect_err "run 'a' is complete; nothing to do"
	[ -z "$out" ] || fail "a complete run printed: $out"
}

# With --folds: the out-of-fold predictions and the stacking on them, grown.
test_grow_repeat_with_folds() {
	local data="$ROOT/datasets/iris.csv" opts
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	opts="--models linear,tree --folds 3 --seed 5 --num-jobs 2 --db r.db -q"
	# shellcheck disable=SC2086
	run "$CFL" repeat "$data" $opts --num-repeat 1 --name a
	expect_rc 0
	# shellcheck disable=SC2086
	run "$CFL" repeat "$data" $opts --num-repeat 3 --resume a
	expect_rc 0
	grown=$out
	# shellcheck disable=SC2086
	run "$CFL" repeat "$data" $opts --num-repeat 3 --name b
	expect_rc 0
	[ "$grown" = "$out" ] || fail "grown table differs: $grown // $out"
	[ "$(grow_preds r.db a)" = "$(grow_preds r.db b)" ] || fail "stored predictions differ"
	[ -n "$(grow_preds r.db a | grep -w oof)" ] || fail "no out-of-fold predictions compared"
}

# A complete run resumed with the same count: says so, exits 0, and leaves
# the database and tune's model file as they were (byte for byte, mtime).
test_grow_complete_run_changes_nothing() {
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 --db r.db --name a -q
	expect_rc 0
	run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --method random --num-search 3 \
		--num-repeat 1 --num-jobs 2 --db r.db --name t -q
	expect_rc 0
	[ -f t.cfl ] || fail "tune saved no model: $(ls)"
	sqlite3 r.db .dump > before.sql
	cp t.cfl t.before
	touch -d '2001-01-01 00:00:00' t.cfl
	mt=$(stat -c %Y t.cfl)
	run "$CFL" repeat --resume a --db r.db
	expect_rc 0
	expect_err "cfl repeat: run 'a' is complete; nothing to do"
	run "$CFL" tune --resume t --db r.db --num-search 3
	expect_rc 0
	expect_err "cfl tune: run 't' is complete; nothing to do"
	[ -z "$out" ] || fail "a complete run printed: $out"
	sqlite3 r.db .dump > after.sql
	cmp -s before.sql after.sql || fail "the database changed: $(diff before.sql after.sql | head -20)"
	cmp -s t.cfl t.before || fail "the model file was rewritten"
	[ "$(stat -c %Y t.cfl)" = "$mt" ] || fail "the model file's mtime changed"
	# a run that did not finish is still finished by --resume
	sqlite3 r.db "update runs set status = 'interrupted' where name = 'a'"
	run "$CFL" repeat --resume a --db r.db
	expect_rc 0
	! grep -q "complete" <<<"$err" || fail "an unfinished run called complete: $err"
	[ "$(sqlite3 r.db "select status from runs where name = 'a'")" = done ] || fail "the run was not finished"
}

# What a resume cannot change stays refused, with the option that differs
# named; a count cannot shrink.
test_grow_refusals() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 2 --db r.db --name a -q
	expect_rc 0
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 4 --db r.db --resume a
	expect_rc 1
	expect_err "cannot resume run 'a': it was started with another plan (models 'linear,baseline', now 'linear')"
	expect_err "cfl repeat $ROOT/datasets/iris.csv --models linear,baseline"
	run "$CFL" repeat --resume a --db r.db --num-repeat 4 --set linear.l2=3
	expect_rc 1
	expect_err "(params.linear '', now 'l2=3')"
	run "$CFL" repeat --resume a --db r.db --num-repeat 1
	expect_rc 1
	expect_err "cannot resume run 'a': it has --num-repeat 2; a resume can grow it, not shrink it"
	run "$CFL" repeat "$ROOT/datasets/wine.csv" --models linear,baseline --num-repeat 4 --db r.db --resume a
	expect_rc 1
	expect_err "another dataset"
	# nothing of that touched the run
	[ "$(sqlite3 r.db "select count(*) from trials")" = 4 ] || fail "trials were added"
	[ "$(sqlite3 r.db "select status from runs")" = done ] || fail "the run's status changed"
}

# tune 4 candidates grown to 8: the search is fed the 4 stored ones (none is
# asked again) and the 8 are those of a search that asked for 8 from the
# start; the refit is the new best's.
test_grow_tune_continues_the_history() {
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	printf 'l2 = loguniform(0.001, 100)\n' > l.params
	for m in random bo; do
		run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --params l.params --method $m \
			--num-search 4 --num-repeat 1 --num-jobs 2 --num-parallel 2 --seed 4 --db $m.db --name a -q
		expect_rc 0
		sqlite3 $m.db "select hex from candidates order by seq" > first.txt
		run "$CFL" tune --resume a --db $m.db --num-search 8
		expect_rc 0
		grown=$out
		run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --params l.params --method $m \
			--num-search 8 --num-repeat 1 --num-jobs 2 --num-parallel 2 --seed 4 --db $m.db --name b -q
		expect_rc 0
		[ "$(sqlite3 $m.db "select count(*) from candidates c join runs r on c.run = r.id where r.name = 'a'")" = 8 ] ||
			fail "$m: not 8 candidates: $(sqlite3 $m.db "select seq, hex from candidates")"
		[ "$(sqlite3 $m.db "select hex from candidates c join runs r on c.run = r.id where r.name = 'a' order by seq limit 4")" = "$(cat first.txt)" ] ||
			fail "$m: the first 4 candidates changed"
		[ "$(sqlite3 $m.db "select seq, hex, score from candidates c join runs r on c.run = r.id where r.name = 'a' order by seq")" = \
		  "$(sqlite3 $m.db "select seq, hex, score from candidates c join runs r on c.run = r.id where r.name = 'b' order by seq")" ] ||
			fail "$m: the grown search differs from an 8-candidate one"
		grown=${grown//run \'a\'/run X}; grown=${grown//a.cfl/X.cfl}
		out=${out//run \'b\'/run X}; out=${out//b.cfl/X.cfl}
		[ "$grown" = "$out" ] ||
			fail "$m: the grown report differs: $grown // $out"
	done
}

# A grid with a budget below its size: grown, the first picks are replayed
# (the run's first budget stays) and the rest of the grid follows.
test_grow_tune_grid_keeps_its_picks() {
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	printf 'l2 = choice(0.001, 0.01, 0.1, 1, 10, 100)\n' > g.params
	run "$CFL" tune "$ROOT/datasets/wine.csv" --model linear --params g.params --method grid \
		--num-search 3 --num-repeat 1 --num-jobs 2 --db g.db --name g -q
	expect_rc 0
	run "$CFL" tune --resume g --db g.db --num-search 6 -q
	expect_rc 0
	[ "$(sqlite3 g.db "select count(*) from candidates")" = 6 ] ||
		fail "not the 6 grid points: $(sqlite3 g.db "select seq, params from candidates")"
	[ "$(sqlite3 g.db "select count(distinct params) from candidates")" = 6 ] || fail "a grid point twice"
	run "$CFL" tune --resume g --db g.db --num-search 7
	expect_rc 0	# the grid is exhausted: nothing new to ask
	[ "$(sqlite3 g.db "select count(*) from candidates")" = 6 ] || fail "candidates past the grid"
}
