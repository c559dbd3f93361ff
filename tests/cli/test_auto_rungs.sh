# cfl auto on larger data under a time limit: successive halving on rows
# (issue 33).  The search's row sample (--search-rows 4000 here, of 10,080
# training rows) is the top rung; the Bayesian candidates start on a
# quarter of it and the top half of a rung trains again on twice the rows
# (trial repeat j + 1, fold -1, for rung j >= 1; docs/database.md).  The
# rows each trial trained on are checked through its scores: a candidate's
# trial on a rung scores what the same candidate scores in a run whose
# whole search trains on that rung's rows (--search-rungs 1).  Nothing
# checks a time; lim is test_auto.sh's margin for the sanitizer build.

rungs_data() {
	awk 'BEGIN { srand(5); print "a,b,c,y"
		for (i = 0; i < 14000; i++) { a = rand(); b = rand(); c = rand()
			print a "," b "," c "," ((a + b + 0.3 * rand() > 1.1) ? "hi" : "lo") } }' > big.csv
}

# run name, then "hex repeat auc" of each search trial (fold -1) done of a
# Bayesian candidate (not the defaults), one a line
rungs_scores() {
	sqlite3 -separator ' ' r.db "select c.hex, t.repeat, printf('%.12f', m.value) from trials t
		join candidates c on c.id = t.candidate join runs r on r.id = c.run
		join metrics m on m.trial = t.id and m.split = 'valid' and m.metric = 'auc'
		where r.name = '$1' and t.fold = -1 and t.status = 'done' and c.params <> '{}'"
}

# the number of rows in file 2 that file 1 has too, once both are sorted
rungs_common() {
	comm -12 <(sort "$1") <(sort "$2") | wc -l
}

test_auto_rungs_halving_on_rows() {
	rungs_data
	run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 8)" --folds 2 --db r.db \
		--name h --search-rows 4000
	expect_rc 0
	expect_err "the search runs successive halving on rows: 1000/2000/4000 of the 10080 training rows"
	local board=$out
	# rungs: every Bayesian candidate has its first trial (repeat 0); some,
	# not all, went on to 2000 rows (repeat 2), fewer or as many to 4000
	# (repeat 3); the defaults start on the top rung and go nowhere
	local n0 n1 n2
	n0=$(sqlite3 r.db "select count(*) from trials t join candidates c on c.id = t.candidate
		where c.params <> '{}' and t.fold = -1 and t.repeat = 0 and t.status = 'done'")
	n1=$(sqlite3 r.db "select count(*) from trials where fold = -1 and repeat = 2 and status = 'done'")
	n2=$(sqlite3 r.db "select count(*) from trials where fold = -1 and repeat = 3 and status = 'done'")
	[ "$n0" -ge 4 ] && [ "$n1" -ge 1 ] && [ "$n1" -lt "$n0" ] && [ "$n2" -ge 1 ] &&
		[ "$n2" -le "$n1" ] || fail "rungs of $n0, $n1, $n2 trials done"
	[ "$(sqlite3 r.db "select count(*) from trials t join candidates c on c.id = t.candidate
		where t.fold = -1 and t.repeat >= 2 and (c.params = '{}' or t.phase <> 'search')")" = 0 ] ||
		fail "a default went up a rung, or a rung trial is not the search's"
	# a candidate goes up one rung at a time
	[ "$(sqlite3 r.db "select count(*) from trials t where t.fold = -1 and t.repeat = 3 and
		not exists (select 1 from trials u where u.candidate = t.candidate and u.fold = -1
		and u.repeat = 2 and u.status = 'done')")" = 0 ] || fail "rung 2 without rung 1"
	# the bags are of candidates scored on the top rung: the defaults, or
	# one that reached it; and only such candidates have a score
	[ "$(sqlite3 r.db "select count(distinct t.candidate) from trials t join candidates c
		on c.id = t.candidate where t.fold >= 0")" -ge 2 ] || fail "fewer than two bags"
	[ "$(sqlite3 r.db "select count(*) from candidates c where (c.score is not null or
		c.id in (select candidate from trials where fold >= 0)) and c.params <> '{}' and
		not exists (select 1 from trials u where u.candidate = c.id and u.fold = -1 and
		u.repeat = 3)")" = 0 ] || fail "a candidate scored or bagged below the top rung"
	# cfl report prints what the run printed
	run "$CFL" report h --db r.db
	expect_rc 0
	[ "$out" = "$board" ] || fail "report differs from the run's output: $(diff <(echo "$board") <(echo "$out"))"
	# the rows: the first rung's trials score as a search on 1000 rows
	# does, the top rung's as one on 4000 (the same candidates, by their
	# ids: the GP's first proposals do not depend on the scores)
	run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 5)" --folds 2 --db r.db \
		--name r1 --search-rows 1000 --search-rungs 1
	expect_rc 0
	grep -q "successive halving" <<<"$err" && fail "halving with --search-rungs 1: $err"
	run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 5)" --folds 2 --db r.db \
		--name r4 --search-rows 4000 --search-rungs 1
	expect_rc 0
	rungs_scores h | awk '$2 == 0 {print $1, $3}' >h0.txt
	rungs_scores h | awk '$2 == 3 {print $1, $3}' >h2.txt
	rungs_scores r1 | awk '{print $1, $3}' >r1.txt
	rungs_scores r4 | awk '{print $1, $3}' >r4.txt
	local ids0 ids2
	ids0=$(comm -12 <(cut -d' ' -f1 h0.txt | sort) <(cut -d' ' -f1 r1.txt | sort) | wc -l)
	ids2=$(comm -12 <(cut -d' ' -f1 h2.txt | sort) <(cut -d' ' -f1 r4.txt | sort) | wc -l)
	[ "$ids0" -ge 1 ] && [ "$ids2" -ge 1 ] || fail "no candidates in common: $ids0, $ids2"
	[ "$(rungs_common h0.txt r1.txt)" = "$ids0" ] ||
		fail "first rung not on 1000 rows: $(join <(sort h0.txt) <(sort r1.txt) | head -3)"
	[ "$(rungs_common h2.txt r4.txt)" = "$ids2" ] ||
		fail "top rung not on 4000 rows: $(join <(sort h2.txt) <(sort r4.txt) | head -3)"
	# and they differ from the top rung's (other rows)
	[ "$(rungs_common h0.txt r4.txt)" -lt "$(wc -l <h0.txt)" ] || fail "every score the same"
}

test_auto_rungs_usage() {
	rungs_data
	for bad in 0 7 abc; do
		run "$CFL" auto big.csv --search-rungs "$bad" --db u.db
		expect_rc 2
		expect_err "--search-rungs must be an integer in [1, 6]"
	done
	[ ! -e u.db ] || fail "a usage error made a database"
	run "$CFL" auto --help
	expect_out "--search-rungs N"
}

# --resume replays the stored rung trials (none trained again) and goes on
test_auto_rungs_resume_keeps_rung_trials() {
	rungs_data
	run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 6)" --folds 2 --db r.db \
		--name k --search-rows 4000
	expect_rc 0
	sqlite3 r.db "select id || ':' || attempt || ':' || started from trials
		where fold = -1 and repeat >= 2 and status = 'done'" | sort >before.txt
	[ "$(wc -l <before.txt)" -ge 1 ] || fail "no rung trials to keep"
	local n_before
	n_before=$(sqlite3 r.db "select count(*) from trials")
	run "$CFL" auto --resume k --db r.db --time-limit "$(lim 6)"
	expect_rc 0
	expect_err "resuming:"
	sqlite3 r.db "select id || ':' || attempt || ':' || started from trials
		where fold = -1 and repeat >= 2 and status = 'done'" | sort >after.txt
	[ "$(comm -23 before.txt after.txt | wc -l)" = 0 ] ||
		fail "rung trials trained again: $(comm -23 before.txt after.txt | head -3)"
	[ "$(sqlite3 r.db "select count(*) from trials")" -gt "$n_before" ] ||
		fail "the resumed search did not go on"
	# another ladder (or sample) would read the rung trials at other rows
	run "$CFL" auto --resume k --db r.db --time-limit "$(lim 6)" --search-rungs 2
	expect_rc 1
	expect_err "cannot resume run 'k': it was started with another plan (search_rungs '(none)', now '2')"
	run "$CFL" auto --resume k --db r.db --time-limit "$(lim 6)" --search-rows 3000
	expect_rc 1
	expect_err "(search_rows '4000', now '3000')"
	# the run's candidates' rung trials: one a rung each
	[ "$(sqlite3 r.db "select count(*) from (select candidate, repeat, fold from trials
		group by 1, 2, 3 having count(*) > 1)")" = 0 ] || fail "a trial stored twice"
}
