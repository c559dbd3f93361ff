# cfl auto --prune asha (issue 33; off by default): on larger data under a time limit, asha
# stops gbdt's (and fcnn's) Bayesian candidates whose validation score while
# training is poor; they are stored as pruned with their step and score,
# shown in the search table, never bagged, and kept as they are by
# --resume.  One job, so the scores reach the pruner in one order; pruning
# starts with the first Bayesian candidates, seconds before the limit
# (a pruned candidate does not count towards the 10 in a row that end a
# family's search, so the search runs to the end of its share), and nothing
# checks a time.  lim is test_auto.sh's margin for the sanitizer build.

# 14,000 rows of 4 inputs: 10,080 training rows, scored on the validation part
prune_data() {
	awk 'BEGIN { srand(3); print "a,b,c,d,y"
		for (i = 0; i < 14000; i++) { a = rand(); b = rand(); c = rand(); d = rand()
			print a "," b "," c "," d "," ((a + b * c + 0.3 * rand() > 0.9) ? "hi" : "lo") } }' > big.csv
}

prune_auto() {
	run "$CFL" auto big.csv --models gbdt --folds 2 --time-limit "$(lim 5)" --num-jobs 1 \
		--db p.db "$@"
	expect_rc 0
}

test_auto_prune_asha_stored_and_shown() {
	prune_data
	prune_auto --name a --prune asha
	expect_err "pruning (asha): gbdt's Bayesian candidates stop"
	n=$(sqlite3 p.db "select count(*) from trials where status = 'pruned'")
	[ "$n" -ge 1 ] || fail "nothing pruned: $(sqlite3 p.db 'select status, count(*) from trials group by status')"
	# each with its step (a rung: 30, 90 or 270 rounds) and score
	[ "$(sqlite3 p.db "select count(*) from trial_pruned p join trials t on t.id = p.trial
		where t.status = 'pruned' and p.step in (30, 90, 270) and p.score is not null")" = "$n" ] ||
		fail "pruned trials without their rung and score: $(sqlite3 p.db 'select * from trial_pruned')"
	# only the search's Bayesian candidates: the defaults (no params) never
	[ "$(sqlite3 p.db "select count(*) from trials t join candidates c on c.id = t.candidate
		where t.status = 'pruned' and (c.params = '{}' or t.phase <> 'search' or t.fold >= 0)")" = 0 ] ||
		fail "a default, a fold or a refit was pruned"
	# no score, never bagged
	[ "$(sqlite3 p.db "select count(*) from candidates c join trials t on t.candidate = c.id
		where t.status = 'pruned' and c.score is not null")" = 0 ] || fail "a pruned candidate has a score"
	[ "$(sqlite3 p.db "select count(*) from trials b where b.fold >= 0 and b.candidate in
		(select candidate from trials where status = 'pruned')")" = 0 ] || fail "a pruned candidate was bagged"
	# the leaderboard has its bag and greedy first; the search table counts them
	[ "$(awk '/^Leaderboard/ {on = 1} on && /^1 / {print $2}' <<<"$out")" = greedy ] ||
		[ "$(awk '/^Leaderboard/ {on = 1} on && /^1 / {print $3}' <<<"$out")" = bag ] ||
		fail "no leaderboard: $out"
	awk '/^Search/ {on = 1; next} on && $1 == "model" {h = $0} on && $1 == "gbdt" {print h; print}' <<<"$out" >tab.txt
	[ "$(awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "pruned") c = i} NR == 2 {print $c}' tab.txt)" = "$n" ] ||
		fail "the search table does not count $n pruned: $(cat tab.txt)"
	run "$CFL" report a --db p.db --format json
	expect_out "\"pruned\": $n,"
	run "$CFL" runs --db p.db
	expect_out "$n pruned"
	# --resume keeps them as they are: final, not run again
	sqlite3 p.db "select id || ':' || attempt from trials where status = 'pruned'" | sort >before.txt
	prune_auto --resume a --time-limit "$(lim 3)"
	expect_err "resuming:"
	sqlite3 p.db "select id || ':' || attempt from trials where status = 'pruned'" | sort >after.txt
	[ "$(comm -23 before.txt after.txt | wc -l)" = 0 ] ||
		fail "pruned trials changed by --resume: $(comm -23 before.txt after.txt | head -5)"
	[ "$(sqlite3 p.db "select count(*) from trial_attempts a join trials t on t.id = a.trial
		where t.status = 'pruned' group by t.id order by 1 desc limit 1")" = 1 ] ||
		fail "a pruned trial ran again"
}

test_auto_prune_none_and_usage() {
	prune_data
	prune_auto --name n --prune none
	[ "$(sqlite3 p.db "select count(*) from trials where status = 'pruned'")" = 0 ] ||
		fail "pruned with --prune none: $(sqlite3 p.db 'select status, count(*) from trials group by status')"
	grep -q "pruning" <<<"$err" && fail "a pruning line with --prune none: $err"
	# none by default, under a time limit too
	prune_auto --name d
	[ "$(sqlite3 p.db "select count(*) from trials t join runs r on r.id = t.run
		where r.name = 'd' and t.status = 'pruned'")" = 0 ] || fail "pruned by default"
	grep -q "pruning" <<<"$err" && fail "a pruning line by default: $err"
	awk '/^Search/ {on = 1; next} on && $1 == "model"' <<<"$out" | grep -q pruned &&
		fail "a pruned column with nothing pruned: $out"
	# none by default under a count budget (a run of the seed alone)
	prune_auto --name m --max-trials 6
	[ "$(sqlite3 p.db "select count(*) from trials t join runs r on r.id = t.run
		where r.name = 'm' and t.status = 'pruned'")" = 0 ] || fail "pruned under --max-trials"
	run "$CFL" auto big.csv --prune bogus
	expect_rc 2
	expect_err "--prune must be none or asha, got 'bogus'"
	run "$CFL" auto big.csv --prune median
	expect_rc 2
	run "$CFL" auto big.csv --prune asha --max-trials 5
	expect_rc 2
	expect_err "--prune asha needs --time-limit"
}
