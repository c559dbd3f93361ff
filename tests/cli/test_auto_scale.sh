# cfl auto on larger data: the search on a row sample (--search-rows), the
# bags on the rows their time allows.  Small generated data and small
# budgets; the figures on 1,000,000 rows are tests/bench/bench_auto_scale.sh's.

# 14,000 rows of three columns, a noisy threshold target
scale_data() {
	awk 'BEGIN { srand(5); print "a,b,c,y"
		for (i = 0; i < 14000; i++) { a = rand(); b = rand(); c = rand()
			print a "," b "," c "," ((a + b + 0.3 * rand() > 1.1) ? "hi" : "lo") } }' > "$1"
}

# a candidate's stored metric: model, split, metric, phase (search: its
# search trial; else the mean over its bag's folds)
scale_metric() {
	sqlite3 "$1" "select printf('%.9f', avg(m.value)) from metrics m join trials t on t.id = m.trial
		join candidates c on c.id = t.candidate where c.model = '$2' and m.split = '$3'
		and m.metric = '$4' and t.phase = '$5' and c.params = '{}'"
}

# --search-rows N: every search candidate trains on the same seeded sample
# of N training rows (its scores on the validation part change), while the
# bags, under a count budget, train on every row (their folds' scores are
# those of a run searching on every row)
test_auto_scale_search_on_a_sample() {
	scale_data big.csv
	run "$CFL" auto big.csv --models linear,tree --max-trials 2 --folds 3 --db s.db --name s \
		--search-rows 2000
	expect_rc 0
	expect_err "the search trains each candidate on 2000 of the 10080 training rows"
	expect_err "the bags on every row"
	run "$CFL" auto big.csv --models linear,tree --max-trials 2 --folds 3 --db a.db --name a \
		--search-rows all
	expect_rc 0
	grep -q "the search trains each candidate" <<<"$err" && fail "a sample with --search-rows all"
	# the defaults: other scores on valid, trained on 2000 rows
	for m in linear tree; do
		s=$(scale_metric s.db $m valid auc search)
		a=$(scale_metric a.db $m valid auc search)
		[ -n "$s" ] && [ -n "$a" ] && [ "$s" != "$a" ] ||
			fail "$m's search trial scored '$s' on a sample, '$a' on every row"
		# their bags' folds: on every row either way
		s=$(scale_metric s.db $m oof auc refit)
		a=$(scale_metric a.db $m oof auc refit)
		[ -n "$s" ] && [ "$s" = "$a" ] || fail "$m's folds scored '$s' and '$a'"
	done
	# the sample is the same for every candidate of every run: the linear
	# defaults again, alone
	run "$CFL" auto big.csv --models linear --max-trials 1 --folds 3 --db s2.db --name s2 \
		--search-rows 2000
	expect_rc 0
	[ "$(scale_metric s.db linear valid auc search)" = \
	  "$(scale_metric s2.db linear valid auc search)" ] || fail "another sample"
}

test_auto_scale_search_rows_usage() {
	scale_data big.csv
	for bad in 0 -3 abc 2.5; do
		run "$CFL" auto big.csv --search-rows "$bad" --db u.db
		expect_rc 2
		expect_err "--search-rows must be 'all' or an integer"
	done
	[ ! -e u.db ] || fail "a usage error made a database"
	# 'all' and a number are taken (and no other option's check follows)
	for good in all 500; do
		run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --search-rows "$good" \
			--max-trials 1 --folds 2 --db g.db -q
		expect_rc 0
	done
	run "$CFL" auto --help
	expect_out "--search-rows N|all"
}

# under a time limit on a row sample every family's defaults are scored
# and every family is bagged (each fold on the rows its share allows);
# the run says what it kept for the ensembles
test_auto_scale_time_limit_bags_every_family() {
	scale_data big.csv
	run "$CFL" auto big.csv --models linear,tree,gbdt --time-limit 20 --folds 3 --db t.db \
		--name t --search-rows 2000
	expect_rc 0
	expect_err "the bags on the rows their time allows"
	expect_err "kept for the ensembles"
	for m in linear tree gbdt; do
		grep -qE "^[0-9]+ +$m:[0-9a-f]{8} +bag " <<<"$out" || fail "no $m bag: $out"
	done
	grep -q "no score" <<<"$out" && fail "a family without a score: $out"
	[ "$(sqlite3 t.db "select count(*) from trials where fold >= 0 and status = 'done'")" = 9 ] ||
		fail "not 3 bags of 3 folds done"
}

# a family with a score but no bag says why under the search table, from
# the store: its folds never made or never started (left out: they would
# not finish), or some stopped by the time limit
test_auto_scale_family_without_a_bag_says_why() {
	scale_data big.csv
	run "$CFL" auto big.csv --models linear,tree --max-trials 2 --folds 3 --db n.db --name n \
		--search-rows 2000
	expect_rc 0
	grep -q "no bag" <<<"$out" && fail "a note of no bag when every family has one: $out"
	sqlite3 n.db "pragma foreign_keys = on; delete from ensembles where name like 'tree:%';
		update trials set status = 'interrupted' where fold = 1 and candidate in
		(select id from candidates where model = 'tree')"
	run "$CFL" report n --db n.db
	expect_rc 0
	expect_out "tree: no bag: the time limit stopped its folds (2 of 3 done)"
	grep -q "linear: no bag" <<<"$out" && fail "linear has its bag: $out"
	# left out before they started: queued, never leased
	sqlite3 n.db "update trials set status = 'queued' where fold >= 0 and candidate in
		(select id from candidates where model = 'tree')"
	run "$CFL" report n --db n.db
	expect_rc 0
	expect_out "tree: no bag: its folds would not finish in the time left"
	sqlite3 n.db "pragma foreign_keys = on; delete from trials where fold >= 0 and candidate in
		(select id from candidates where model = 'tree')"
	run "$CFL" report n --db n.db
	expect_rc 0
	expect_out "tree: no bag: its folds would not finish in the time left"
}
