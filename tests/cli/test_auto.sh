# cfl auto (search, bags, ensembles within a time limit) and cfl repeat
# --time-limit.  Timing checks read the stored times (runs.created and
# runs.finished: what cfl itself measured), with margins wide enough for a
# loaded machine; CFL_TEST_FAULT (docs/repeat.md) makes trials hang or slow.

# A run that must finish its bags in its time limit gets $(lim S): S
# seconds, what the plain build needs on a loaded 2-core machine, times 4
# under the sanitizers (cfl-san trains 3-10 times slower; with S alone
# wine's tree bag did not finish at load 7)
lim() { case "$CFL" in *-san) echo $(($1 * 4)) ;; *) echo "$1" ;; esac; }

# the ranks' out-of-fold scores of auto's leaderboard, one a line
auto_oof_column() {
	awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $4} /^$/ {on = 0}' <<<"$1"
}

# the rows of iris.csv, every fifth to $2 and the others to $1, each with
# the header
iris_split() {
	awk -v tr="$1" -v te="$2" 'NR == 1 { print > tr; print > te; next }
	     { print > ((NR - 1) % 5 == 0 ? te : tr) }' "$ROOT/datasets/iris.csv"
}

# each row $3 (one a line) of bundle $2, applied to test.csv, gives the test
# auc the run stored in $1 for that entry
expect_rows_give_test_auc() {
	local e want got
	for e in $3; do
		want=$(sqlite3 "$1" "select printf('%.10g', m.value) from ensemble_metrics m
			join ensembles e on e.id = m.ensemble where e.name = '$e'
			and m.split = 'test' and m.metric = 'auc'")
		got=$("$CFL" predict "$2" test.csv --row "$e" -o /dev/null | awk '$1 == "auc" { print $2 }')
		[ -n "$want" ] && [ "$got" = "$want" ] || fail "$e: predict $got, stored $want"
	done
}

# fails unless the stored run took at most $2 seconds (and at least $3)
expect_run_seconds() {
	local took
	took=$(sqlite3 "$1" "select finished - created from runs")
	awk -v t="$took" -v hi="$2" -v lo="${3:-0}" 'BEGIN { exit !(t != "" && t <= hi && t >= lo) }' ||
		fail "the run took $took s, expected between ${3:-0} and $2"
}

test_auto_help() {
	run "$CFL" auto --help
	expect_rc 0
	for o in --time-limit --max-trials --models --folds --metric --bag-sets --prune --save --use-all-time --num-jobs --db --name --resume -q Examples:; do
		expect_out "$o"
	done
	run "$CFL" --help
	expect_out "auto"
}

test_auto_usage_errors() {
	run "$CFL" auto
	expect_rc 2
	expect_err "missing DATA"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models nosuch --db x.db
	expect_rc 2
	expect_err "unknown model 'nosuch'"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,linear --db x.db
	expect_rc 2
	expect_err "listed twice"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models baseline --db x.db
	expect_rc 2
	expect_err "nothing to tune"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --folds 1 --db x.db
	expect_rc 2
	expect_err "--folds"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --time-limit 0 --db x.db
	expect_rc 2
	expect_err "--time-limit"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --time-limit soon --db x.db
	expect_rc 2
	expect_err "--time-limit"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --metric mae --db x.db
	expect_rc 2
	expect_err "--metric"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --folds 100 --test-frac 0.5 --db x.db
	expect_rc 2
	expect_err "training part has only"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --time-limt 3
	expect_rc 2
	expect_err "--time-limit"
	run "$CFL" auto missing.csv --models linear --db x.db
	expect_rc 1
	expect_err "missing.csv"
	[ ! -e x.db ] || [ "$(sqlite3 x.db "select count(*) from runs")" = 0 ] ||
		fail "a usage error stored a run"
}

# one run of the pool and the store: on small data every candidate is a
# bag of --folds fold trials scored out of fold; the leaderboard holds each
# family's best bag, their mean and stacking, and greedy over every bag
test_auto_end_to_end() {
	local col
	run "$CFL" auto "$ROOT/datasets/wine.csv" --models linear,tree --max-trials 4 \
		--bag-sets 3 --num-jobs 2 --db a.db --name w
	expect_rc 0
	expect_out "Leaderboard by acc"
	tr '\n' ' ' <<<"$out" | grep -q "ranks first; the other entries follow by logloss on the out-of-fold predictions of the training rows, lowest first, with acc beside" ||
		fail "the ranking sentence: $out"
	expect_out "stacking"
	expect_out "linear:"
	expect_out "tree:"
	expect_err "cfl auto --resume w --db a.db"
	[ "$(sqlite3 a.db "select kind || ' ' || status from runs")" = "auto done" ] ||
		fail "run: $(sqlite3 a.db "select kind, status from runs")"
	# each family: its defaults (no params) first, then its portfolio
	[ "$(sqlite3 a.db "select count(*) from candidates where params = '{}'")" = 2 ] ||
		fail "the defaults are not candidates of both families"
	[ "$(sqlite3 a.db "select model from candidates where seq = 0")" = linear ] ||
		fail "the first candidate is not linear's"
	[ "$(sqlite3 a.db "select count(*) from candidates where model = 'tree'")" = 2 ] ||
		fail "tree: $(sqlite3 a.db "select count(*) from candidates where model = 'tree'") candidates"
	# four bags of 5 folds with out-of-fold predictions, each in 3 bag
	# sets (trial repeats 0, 2 and 3), no search
	# trial on the validation part
	[ "$(sqlite3 a.db "select group_concat(n, ',') from (select count(*) n from trials t
		join predictions p on p.trial = t.id where t.fold >= 0 and t.status = 'done'
		and p.split = 'oof' group by t.repeat order by t.repeat)")" = 20,20,20 ] ||
		fail "not 3 sets of 20 fold trials with out-of-fold predictions"
	[ "$(sqlite3 a.db "select count(*) from trials where fold < 0")" = 0 ] ||
		fail "trials on the validation part"
	[ "$(sqlite3 a.db "select group_concat(method, ',') from (select method from ensembles order by method)")" = "bag,bag,greedy,mean,stacking" ] ||
		fail "ensembles: $(sqlite3 a.db "select name, method from ensembles")"
	sqlite3 a.db "select members from ensembles where name = 'stacking'" | grep -q "on [0-9]* oof rows" ||
		fail "stacking not fitted on the out-of-fold predictions: $(sqlite3 a.db "select members from ensembles where name = 'stacking'")"
	# greedy first, the others by log loss out of fold
	[ "$(awk '/^Leaderboard/ {on = 1} on && /^1 / {print $2}' <<<"$out")" = greedy ] ||
		fail "rank 1 is not greedy: $out"
	col=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / && $1 > 1 {print $4} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$col")" = 4 ] || fail "leaderboard rows: $out"
	[ "$col" = "$(sort -g <<<"$col")" ] || fail "leaderboard not sorted by log loss: $col"
	# the out-of-fold scores, log loss among them, are stored with the
	# bags and ensembles
	[ "$(sqlite3 a.db "select count(distinct m.ensemble) from ensemble_metrics m where
		m.split = 'oof' and m.metric = 'logloss' and m.value is not null")" = 5 ] ||
		fail "out-of-fold log loss not stored"
	# a run stored before log loss was: ranked by its metric out of fold
	sqlite3 a.db "delete from ensemble_metrics where metric = 'logloss'"
	run "$CFL" report w --db a.db
	expect_rc 0
	tr '\n' ' ' <<<"$out" | grep -q 'follow by acc on the out-of-fold' ||
		fail "the old run's ranking sentence: $out"
	col=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / && $1 > 1 {print $5} /^$/ {on = 0}' <<<"$out")
	[ "$col" = "$(sort -gr <<<"$col")" ] || fail "the old run is not sorted by acc: $col"
}

# on small data the candidates are scored out of fold with log loss (a
# proper score: on wine's 14 validation rows most of them tied at 1.0 acc)
test_auto_small_data_scores_out_of_fold() {
	run "$CFL" auto "$ROOT/datasets/wine.csv" --models linear --max-trials 3 --folds 3 \
		--db a.db --name w
	expect_rc 0
	expect_err "each scored out of fold"
	expect_out "Search (candidates scored by logloss out of fold)"
	[ "$(sqlite3 a.db "select group_concat(n, ',') from (select count(*) n from trials
		where fold >= 0 and repeat = 0 group by candidate)")" = "3,3,3" ] ||
		fail "every candidate is not a bag of 3 folds"
	# the search table's best is the candidate of the lowest log loss out
	# of fold, the linear bag's row
	awk '/^Search/ {on = 1; next} on && $1 == "linear" {print $6}' <<<"$out" |
		grep -q "$(awk '/^[0-9]+ +linear:/ {print $4}' <<<"$out")" ||
		fail "the search's best is not the bag's log loss: $out"
}

# big.csv: 14,000 rows of three columns and a two-class target, enough for
# auto's path with a validation part
big_csv() {
	awk 'BEGIN { srand(3); print "a,b,c,y"
		for (i = 0; i < 14000; i++) { a = rand(); b = rand(); c = rand()
			print a "," b "," c "," ((a + b + 0.3 * rand() > 1.1) ? "hi" : "lo") } }' > big.csv
}

# on larger data (10,000 training rows or more) a candidate is one trial
# on the validation part, ranked by log loss there too, and each family's
# best is bagged afterwards
test_auto_large_data_log_loss_on_valid() {
	big_csv
	run "$CFL" auto big.csv --models linear,tree --max-trials 4 --folds 3 --db b.db --name b
	expect_rc 0
	expect_err "each on the validation part"
	expect_out "Search (candidates scored by logloss on the validation part)"
	[ "$(sqlite3 b.db "select count(*) from trials where fold = -1 and phase = 'search'")" = 4 ] ||
		fail "not 4 search trials on valid"
	[ "$(sqlite3 b.db "select count(*) from trials where fold >= 0")" = 6 ] ||
		fail "not two bags of 3 folds"
	[ "$(awk '/^Leaderboard/ {on = 1} on && /^1 / {print $2}' <<<"$out")" = greedy ] ||
		fail "rank 1 is not greedy: $out"
	expect_err "14000 rows: 10080 train, 1120 valid, 2800 test"
	# the search needs the validation part here
	run "$CFL" auto big.csv --models linear --max-trials 1 --valid-frac 0 --db x.db
	expect_rc 2
	expect_err "validation part"
}

# on larger data under a time limit the search says in one line why it
# ended, before the bags: its rounds ended silently when its time was spent
# (25,000 rows at --time-limit 30: a third of the limit unused and nothing
# said).  Slowed trials and 10 folds make the bags' estimate take the
# search's time, the end this run takes (another, on a loaded machine,
# must say its own).  And the bags the search set that time aside for all
# run: planned in the time left as the search went on, a bag that no
# longer fitted dropped out of the search's estimate, the search took its
# time, and 9 runs of 20 on 25,250 rows left a family unbagged (a tree of
# 0.1 s a fold among them).  8 s, not 6: the tree's defaults run whole
# even when its turn starts past the search's end, and stopping the
# cancelled trials takes 0.1 s, so at 6 s the bags of 3.1 s had about 10 ms
# to spare and the last tree fold missed the limit in 2 runs of 5 on an
# idle 2-core machine
test_auto_large_data_says_why_the_search_ends() {
	big_csv
	CFL_TEST_FAULT=slow run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 8)" \
		--folds 10 --db w.db --name w
	expect_rc 0
	local why
	why=$(awk '/^the search ends: / { why = $0 } /^bagging the best of each model/ { print why; exit }' <<<"$err")
	grep -qE "^the search ends: (its time is spent \([0-9]+ candidates\); the [0-9.]+ s left are the bags' \(their estimate\)|a whole round improved no family's best|every family's space is exhausted \([0-9]+ candidates\)|no family asked another candidate \([0-9]+ candidates\))$" <<<"$why" ||
		fail "no line says why the search ended before the bags: $err"
	! grep -q "would not finish" <<<"$err" || fail "a family's bag was left out: $err"
	[ "$(sqlite3 w.db "select count(*) from (select candidate from trials where fold between 0 and 9
		and status = 'done' group by candidate having count(*) = 10)")" = 2 ] ||
		fail "not both families bagged on their 10 folds: $err"
}

# and when its bags end before the limit it says so, with the estimate
# the search set aside for them, rather than exit early in silence (the
# bags of 25,250 rows took 9.5 s of the 19 s set aside and the run ended
# 9.4 s early with nothing said).  linear and tree stop searching early
# here and their bags are quick: the run ends seconds early
test_auto_large_data_says_when_the_bags_end() {
	big_csv
	run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 6)" --db e.db --name e
	expect_rc 0
	grep -qE "^bagging the best of each model with 5 folds: 10 trials in at most [0-9.]+ s \(their estimate: [0-9.]+ s\)$" <<<"$err" ||
		fail "the bags' line gives no estimate: $err"
	grep -qE "^the bags are done after [0-9.]+ s, [0-9.]+ s before the time limit: nothing is left to run but the ensembles$" <<<"$err" ||
		fail "the run does not say its bags are done: $err"
	# after the bags' line, before the leaderboard
	[ "$(awk '/^bagging the best/ {b = NR} /^the bags are done/ {d = NR} END {print (b && d > b)}' <<<"$err")" = 1 ] ||
		fail "the bags' end is not said after they start: $err"
}

# on larger data a family whose best is no better than the constant
# prediction on the validation part (a tree grown to single rows on noisy
# labels: log loss about 2.6 against 0.69) gets no time set aside in the
# search for its bag, which runs last, only in the time the others leave,
# and the run says so (on 25,250 rows an fcnn of log loss 1.5 held a third
# of the 30 s in its bag that greedy selection never picked)
test_auto_large_data_bags_a_family_no_better_than_constant_last() {
	big_csv
	mkdir params
	cp "$ROOT/params/linear.params" params/
	printf 'max_depth = int(30, 32)\nmin_samples_leaf = int(1, 2)\n' > params/tree.params
	run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 6)" --db c.db --name c
	expect_rc 0
	grep -qE "^cfl: tree: its best is no better than the constant prediction on the validation part \(logloss [0-9.]+, the constant's 0\.[0-9]+\): bagged last, in the time the others leave$" <<<"$err" ||
		fail "no line says the tree's bag runs last: $err"
	grep -q "linear: its best is no better" <<<"$err" && fail "linear called no better than the constant: $err"
	expect_out "tree:"
	# each trial 0.3 s longer: the search takes the time its estimate
	# leaves, which sets none aside for the tree's bag (5 folds of the
	# linear model's seconds over 2 workers, not of both models')
	CFL_TEST_FAULT=slow run "$CFL" auto big.csv --models linear,tree --time-limit "$(lim 6)" \
		--db s.db --name s
	expect_rc 0
	grep -qE "^cfl: tree: its best is no better than the constant prediction on the validation part \(logloss [0-9.]+, the constant's 0\.[0-9]+\): (bagged last|not bagged)" <<<"$err" ||
		fail "no line says what became of the tree's bag: $err"
	local est lin tre
	est=$(sed -nE "s/^bagging the best of each model with 5 folds: [0-9]+ trials in at most [0-9.]+ s \(their estimate: ([0-9.]+) s\)$/\1/p" <<<"$err")
	[ -n "$est" ] || fail "no estimate of the bags: $err"
	lin=$(sqlite3 s.db "select max(t.duration) from trials t join candidates c on c.id = t.candidate
		where c.model = 'linear' and t.fold = -1 and t.repeat = 0")
	tre=$(sqlite3 s.db "select max(t.duration) from trials t join candidates c on c.id = t.candidate
		where c.model = 'tree' and t.fold = -1 and t.repeat = 0")
	awk -v e="$est" -v l="$lin" -v t="$tre" 'BEGIN { both = 5 * (l + t) / 2 + (l > t ? l : t) / 2
		exit !(e < both - 0.3) }' || fail "the bags' estimate $est s counts the tree's bag (linear $lin s, tree $tre s a fit)"
	# when no family beats the constant, the bags are planned as ever:
	# the run still gives a model
	run "$CFL" auto big.csv --models tree --time-limit "$(lim 3)" --db n.db --name n
	expect_rc 0
	grep -q "no better than the constant" <<<"$err" && fail "the only family's bag was put last: $err"
	expect_out "tree:"
}

# Resumes run NAME of DB (fcnn alone) for one more candidate with LINE taken
# out of its stored plan, as a cfl from before LINE stored it: that
# candidate, fcnn's defaults, must come back with no parameter set.
resume_without_plan_line() {
	sqlite3 "$1" "update runs set config = replace(config, '$3' || char(10), '')"
	run "$CFL" auto --resume "$2" --db "$1" --max-trials 2
	expect_rc 0
	[ "$(sqlite3 "$1" "select count(*) from candidates where params = '{}'")" = 1 ] ||
		fail "the resume of a run stored without '$3': $(sqlite3 "$1" "select params from candidates")"
}

# on larger data an fcnn candidate stops early on the validation part
# (patience 10) unless it sets patience itself: its search trial and its
# bag's folds keep their best epoch (small data: the test after it)
test_auto_large_data_fcnn_stops_early_on_valid() {
	big_csv
	run "$CFL" auto big.csv --models fcnn --max-trials 1 --folds 2 --db f.db --name f
	expect_rc 0
	[ "$(sqlite3 f.db "select params from candidates where model = 'fcnn'")" = '{"patience":10}' ] ||
		fail "fcnn's defaults on larger data: $(sqlite3 f.db "select params from candidates")"
	# every trial (the search's and the two folds') stopped on the
	# validation part: its kept epoch is stored, within the 40 it may run
	[ "$(sqlite3 f.db "select count(*) from trials t join trial_iters i on i.trial = t.id
		where t.status = 'done' and i.n_iter between 1 and 40")" = 3 ] ||
		fail "not three trials stopped early: $(sqlite3 f.db "select t.fold, t.status, i.n_iter
			from trials t left join trial_iters i on i.trial = t.id")"
	# a run stored before this (its config has no fcnn_patience line)
	# resumes as it was made: its fcnn defaults without patience
	resume_without_plan_line f.db f 'fcnn_patience=10'
	# a space that sets patience keeps its own
	mkdir params
	printf 'patience = int(2, 3)\n' > params/fcnn.params
	# (the defaults and the three of the portfolio get 10, the Bayesian
	# optimiser's candidates their own)
	run "$CFL" auto big.csv --models fcnn --max-trials 6 --folds 2 --db g.db --name g
	expect_rc 0
	[ "$(sqlite3 g.db "select count(*) from candidates where model = 'fcnn' and params like '%\"patience\":10%'")" = 4 ] ||
		fail "not the defaults and the portfolio alone got patience 10: $(sqlite3 g.db "select params from candidates")"
	[ "$(sqlite3 g.db "select count(*) from candidates where model = 'fcnn'
		and (params like '%\"patience\":2%' or params like '%\"patience\":3%')")" = 2 ] ||
		fail "the space's patience was overridden: $(sqlite3 g.db "select params from candidates")"
}

# on small data (out of fold, no validation part) an fcnn candidate that
# sets no patience stops early too, each fold trial on a tenth of its own
# training rows (valid_frac), so its out-of-fold rows stay unseen
test_auto_small_data_fcnn_stops_early_on_held_out_rows() {
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models fcnn --max-trials 1 --folds 2 --db i.db --name i
	expect_rc 0
	[ "$(sqlite3 i.db "select params from candidates")" = '{"patience":10,"valid_frac":0.1}' ] ||
		fail "fcnn's defaults on small data: $(sqlite3 i.db "select params from candidates")"
	# both folds stored the epoch they kept, as only a fit that watches
	# held-out rows does (iris's 60 rows a fold run at most 500 epochs)
	[ "$(sqlite3 i.db "select count(*) from trials t join trial_iters i on i.trial = t.id
		where t.status = 'done' and t.fold >= 0 and i.n_iter between 1 and 500")" = 2 ] ||
		fail "the folds did not stop early: $(sqlite3 i.db "select t.fold, t.status, i.n_iter
			from trials t left join trial_iters i on i.trial = t.id")"
	# a run stored before this (no fcnn_valid_frac in its config) resumes
	# as it was made: its fcnn defaults as they were
	resume_without_plan_line i.db i 'fcnn_valid_frac=0.1'
	# a space that sets patience keeps it, and gets the held-out rows
	mkdir params
	printf 'patience = int(2, 3)\n' > params/fcnn.params
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models fcnn --max-trials 6 --folds 2 --db g.db --name g
	expect_rc 0
	[ "$(sqlite3 g.db "select count(*) from candidates where model = 'fcnn'
		and (params like '%\"patience\":2,%' or params like '%\"patience\":3,%')
		and params like '%\"valid_frac\":0.1}'")" = 2 ] ||
		fail "the space's patience: $(sqlite3 g.db "select params from candidates")"
}

# on small data nothing uses a validation part, so none is held out: the
# fold models train on (K-1)/K of every training row (a 10% part left them
# 72% of the rows where a default trained by `cfl train` sees 80%)
test_auto_small_data_holds_out_no_validation_part() {
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --max-trials 2 --folds 5 \
		--bag-sets 3 --db a.db --name i
	expect_rc 0
	expect_err "150 rows: 120 train, 30 test"
	[ "$(sqlite3 a.db "select count(*) from metrics where split = 'valid'") $(sqlite3 a.db \
		"select count(*) from predictions where split = 'valid'")" = "0 0" ] ||
		fail "scores or predictions on a validation part"
	# each bag set's folds predict every one of the 120 training rows once
	[ "$(sqlite3 a.db "select group_concat(n, ',') from (select sum(p.n) n from trials t
		join predictions p on p.trial = t.id and p.split = 'oof' where t.fold >= 0
		group by t.candidate, t.repeat)")" = "120,120,120,120,120,120" ] ||
		fail "the folds do not cover the 120 training rows in each of 3 bag sets"
	# asked for, a validation part is still held out (and harms nothing)
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --max-trials 1 --valid-frac 0.1 \
		--db b.db --name i
	expect_rc 0
	expect_err "150 rows: 108 train, 12 valid, 30 test"
	# a run of an older cfl (a validation part on small data too, no
	# valid_min_rows in its plan) resumes on the split it was made with
	sqlite3 a.db "update runs set config = replace(config, 'valid_min_rows=10000' || char(10), '')"
	run "$CFL" auto --resume i --db a.db --max-trials 3
	expect_rc 0
	expect_err "150 rows: 108 train, 12 valid, 30 test"
}

# the portfolio: after its defaults each family tries pre-chosen diverse
# configurations before its Bayesian optimisation; every one of them is
# valid for its model (no candidate fails)
test_auto_portfolio_before_bo() {
	run "$CFL" auto "$ROOT/datasets/iris.csv" --max-trials 25 --folds 2 --num-jobs 2 \
		--db p.db --name p -q
	expect_rc 0
	[ "$(sqlite3 p.db "select count(*) from trials where status <> 'done'")" = 0 ] ||
		fail "trials not done: $(sqlite3 p.db "select c.model, c.params, t.error from trials t
			join candidates c on c.id = t.candidate where t.status <> 'done' limit 3")"
	# linear's: its defaults, then l2 = 0.01, 100, 0.1 and 10, in rounds
	[ "$(sqlite3 p.db "select group_concat(params, ' ') from (select params from candidates
		where model = 'linear' order by seq)")" = '{} {"l2":0.01} {"l2":100} {"l2":0.1} {"l2":10}' ] ||
		fail "linear's candidates: $(sqlite3 p.db "select params from candidates where model = 'linear'")"
	[ "$(sqlite3 p.db "select count(*) from candidates where model = 'gbdt' and params like '%learning_rate%0.05%'")" = 1 ] ||
		fail "gbdt's portfolio: $(sqlite3 p.db "select params from candidates where model = 'gbdt'")"
}

# without a count budget, small data uses its time limit (the rounds go
# on) and says in one line why the search ended
test_auto_small_data_uses_its_time() {
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 4)" \
		--bag-sets 3 --num-jobs 2 --db e.db --name e
	expect_rc 0
	expect_err "searching 2 families until the time limit"
	grep -E "^the search ends: [0-9]+ candidates; families stopped: [0-9]+ as another round would not finish in the time left, [0-9]+ with their space exhausted, [0-9]+ at 300 candidates$|^the search ends: the time limit stopped it \([0-9]+ candidates scored\)$" <<<"$err" >/dev/null ||
		fail "no line saying why the search ended: $(grep "search ends" <<<"$err")"
	# and, unless the time limit stopped the search, one saying what the
	# bag sets did
	grep -q "^the search ends: the time limit stopped it" <<<"$err" ||
	[ "$(grep -cE "^bag sets: ([0-9]+ for the [0-9]+ best bags; another \([0-9.]+ s\) would not finish in [0-9.]+ s|the time limit stopped set [0-9]+ for the [0-9]+ best bags|20 of 5 folds for the [0-9]+ best bags \([0-9]+ trials\))$" <<<"$err")" = 1 ] ||
		fail "no line saying what the bag sets did: $(grep "bag sets" <<<"$err")"
	[ "$(sqlite3 e.db "select count(*) from candidates where model = 'linear'")" -gt 5 ] ||
		fail "linear went no further than its portfolio"
	# it uses its time unless its work ran out first and it said so: both
	# families at their 300 candidates (or their space exhausted) and the
	# 20 bag sets done (a quick machine, ASan or not, gets there in
	# 10 s of 16)
	local least
	least=$(awk -v l="$(lim 4)" 'BEGIN { print 0.7 * l }')
	if grep -qE "^the search ends: [0-9]+ candidates; families stopped: 0 as another round would not finish in the time left, [0-9]+ with their space exhausted, [0-9]+ at 300 candidates$" <<<"$err" &&
		grep -qE "^bag sets: 20 of 5 folds for the [0-9]+ best bags \([0-9]+ trials\)$" <<<"$err"; then
		least=0
	fi
	expect_run_seconds e.db "$(lim 4).5" "$least"
}

# a model that never returns: the search waits for the first round until
# the limit, records the trials interrupted (none lost, none left running),
# and the run ends within the limit with a clear error
test_auto_time_limit_with_hanging_trials() {
	CFL_TEST_FAULT=hang run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree \
		--time-limit 4 --num-jobs 2 --db h.db --name h --save h.cfl
	expect_rc 1
	expect_err "no model finished its folds within the time limit"
	expect_err "no bundle written to 'h.cfl'"
	[ -e h.cfl ] && fail "a bundle without rows was written"
	ls | grep -q 'h.cfl.tmp' && fail "temporary file left: $(ls)"
	expect_run_seconds h.db 6
	[ "$(sqlite3 h.db "select count(*) from trials where status = 'running'")" = 0 ] ||
		fail "trials left running"
	# on small data a candidate is a bag: its folds still running at the
	# limit are interrupted (run again by --resume), never failed
	[ "$(sqlite3 h.db "select count(*) from trials where status = 'interrupted'")" -ge 1 ] ||
		fail "no interrupted trial: $(sqlite3 h.db "select status, error from trials")"
	[ "$(sqlite3 h.db "select count(*) from trials where status = 'failed'")" = 0 ] ||
		fail "the time limit counted as failures: $(sqlite3 h.db "select status, error from trials")"
	# cfl runs counts no failure, and the report says why a family has no score
	run "$CFL" runs --db h.db
	expect_rc 0
	grep -q ", [0-9]* failed" <<<"$out" && fail "cfl runs counts failed trials: $out"
	run "$CFL" report h --db h.db
	expect_out "linear: no score: its defaults did not finish before the time limit"
	expect_out "tree: no score: its defaults did not finish"
}

# --resume: done trials are kept, the search goes on from the stored
# candidates, and the ensembles are built again over the bags
test_auto_resume() {
	local n1 n2 done1 kept
	# a count budget, not a time limit: within 4 s both families can reach
	# their 300-candidate cap (601 seen), leaving a resume nothing to ask
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --max-trials 8 \
		--num-jobs 2 --db r.db --name r
	expect_rc 0
	n1=$(sqlite3 r.db "select count(*) from candidates")
	done1=$(sqlite3 r.db "select group_concat(id || ':' || finished, ',') from trials where status = 'done'")
	# the replay asks the search again for each stored candidate: more
	# time than the first run had, so it can go beyond them under load
	run "$CFL" auto --resume r --db r.db --max-trials 16 --num-jobs 2
	expect_rc 0
	expect_err "resuming"
	expect_out "Leaderboard"
	n2=$(sqlite3 r.db "select count(*) from candidates")
	[ "$n2" -gt "$n1" ] || fail "the search did not go on: $n1 then $n2 candidates"
	# the trials done before were not run again
	# (each trial done before, by id: trials interrupted at the first
	# run's limit, with lower ids, may be done now)
	kept=$(sqlite3 r.db "select group_concat(id || ':' || finished, ',') from trials where status = 'done' and id in ($(tr ',' '\n' <<<"$done1" | cut -d: -f1 | paste -sd,))")
	[ "$kept" = "$done1" ] || fail "done trials changed on resume"
	[ "$(sqlite3 r.db "select count(*) from runs")" = 1 ] || fail "resume made a new run"
	[ "$(sqlite3 r.db "select status from runs")" = done ] || fail "run not done"
	[ "$(sqlite3 r.db "select count(*) from ensembles where name = 'stacking'")" = 1 ] ||
		fail "stacking missing or twice after resume"
	# resuming it as another command is refused
	run "$CFL" repeat --resume r --db r.db
	expect_rc 1
}

# --save: one bundle with a row per leaderboard entry, the default row its
# rank 1; each row's predictions on the run's own test file give the test
# figure the run stored for that entry (bit-identity of the predictions is
# tests/unit/test_bundle.c's); cfl report prints the leaderboard again
test_auto_save_bundle_and_report() {
	local names rows rank1
	iris_split train.csv test.csv
	run "$CFL" auto train.csv --test test.csv --models linear,tree --max-trials 4 \
		--bag-sets 3 --num-jobs 2 --db s.db --name s --save s.cfl
	expect_rc 0
	expect_err "bundle written to 's.cfl'"
	grep -q '^save=s.cfl$' <<<"$(sqlite3 s.db "select config from runs")" ||
		fail "no save key: $(sqlite3 s.db 'select config from runs')"
	# the bags' fold trials (every candidate is a bag) kept their models
	[ "$(sqlite3 s.db "select count(*) from trial_models m join trials t on t.id = m.trial
		where t.fold < 0")" = 0 ] || fail "trials without folds kept models"
	# (4 bags of 3 bag sets of 5 folds)
	[ "$(sqlite3 s.db "select count(*) from trial_models")" = 60 ] ||
		fail "fold models kept: $(sqlite3 s.db 'select count(*) from trial_models')"
	# the bundle holds the models its rows use, no other
	[ "$(sqlite3 s.cfl "select count(*) from models")" -lt 60 ] ||
		fail "the bundle holds every bag: $(sqlite3 s.cfl "select count(*) from models")"
	# the rows are the leaderboard's entries; the default is its rank 1
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	rank1=$(head -1 <<<"$names")
	rows=$(sqlite3 s.cfl "select name from rows order by name")
	[ "$(sort <<<"$names")" = "$rows" ] || fail "rows '$rows', leaderboard '$names'"
	[ "$(sqlite3 s.cfl "select value from meta where key = 'recommended'")" = "$rank1" ] ||
		fail "default row is not the rank 1 '$rank1'"
	[ "$(sqlite3 s.cfl "select kind from rows where name like 'linear:%'")" = bag ] ||
		fail "the linear bag's kind"
	[ "$(sqlite3 s.cfl "select count(*) from scores where split = 'oof' and metric = 'acc'")" = 5 ] ||
		fail "out-of-fold scores missing from the bundle"
	# each row reproduces its entry's stored test figure
	expect_rows_give_test_auc s.db s.cfl "$names"
	local board=$out
	run "$CFL" predict s.cfl test.csv -o /dev/null
	expect_rc 0
	expect_err "row '$rank1' (the run's leaderboard's rank 1"
	run "$CFL" bundle show s.cfl
	expect_rc 0
	expect_out "default row '$rank1' (rank 1"
	expect_out "oof acc"
	# cfl report prints what the run printed
	run "$CFL" report s --db s.db
	expect_rc 0
	[ "$out" = "$board" ] || fail "report differs from the run's output: $(diff <(echo "$board") <(echo "$out"))"
}

# --refit: each family's best bag's candidate is trained once more on
# every training row (repeat 1, fold -1) and the bag predicts with it
# (greedy chooses among those bags only): the bundle holds the two refits'
# models only, a bag entry's stored test predictions are its
# refit's, and each row of the bundle gives its entry's test figure again
test_auto_refit() {
	local names e
	iris_split train.csv test.csv
	run "$CFL" auto train.csv --test test.csv --models linear,tree --max-trials 4 \
		--bag-sets 3 --num-jobs 2 --db s.db --name s --save s.cfl --refit -v
	expect_rc 0
	expect_err "refit on every training row: done"
	grep -q '^refit=1$' <<<"$(sqlite3 s.db "select config from runs")" ||
		fail "no refit key: $(sqlite3 s.db 'select config from runs')"
	[ "$(sqlite3 s.db "select count(*) from trials where repeat = 1 and fold = -1
		and phase = 'refit' and status = 'done'")" = 2 ] ||
		fail "refits: $(sqlite3 s.db "select repeat, fold, status from trials where repeat = 1")"
	# 60 fold models (4 bags, 3 bag sets of 5 folds) and 2 refits kept;
	# the bundle takes the refits only
	[ "$(sqlite3 s.db "select count(*) from trial_models")" = 62 ] ||
		fail "models kept: $(sqlite3 s.db 'select count(*) from trial_models')"
	[ "$(sqlite3 s.cfl "select group_concat(repeat || ':' || fold, ' ') from models")" = "1:-1 1:-1" ] ||
		fail "bundle models: $(sqlite3 s.cfl "select group_concat(repeat || ':' || fold, ' ') from models")"
	for e in linear tree; do
		[ "$(sqlite3 s.db "select hex(p.data) = hex(q.data) from ensemble_predictions p
			join ensembles e on e.id = p.ensemble, predictions q join trials t on t.id = q.trial
			join candidates c on c.id = t.candidate where e.name like '$e:%'
			and c.model = '$e' and c.hex = substr(e.name, length('$e') + 2)
			and t.repeat = 1 and t.fold = -1 and p.split = 'test' and q.split = 'test'")" = 1 ] ||
			fail "the $e bag's test predictions are not its refit's"
	done
	# the search table counts the search's trials only
	awk '/^Search/ {on = 1; next} on && $1 ~ /^(linear|tree)$/ && $2 != $3 + $4 {bad = 1}
	     END {exit bad}' <<<"$out" || fail "search table counts the refits: $out"
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$names")" = 5 ] || fail "leaderboard entries: $names"
	expect_rows_give_test_auc s.db s.cfl "$names"
}

# with --refit, a bag whose refit failed predicts with its folds' mean: the
# run, its leaderboard and its bundle go on without it (CFL_TEST_FAULT=
# error:1 fails every trial of repeat 1, the refits only)
test_auto_refit_failed_falls_back_to_folds() {
	local names
	iris_split train.csv test.csv
	CFL_TEST_FAULT=error:1 run "$CFL" auto train.csv --test test.csv --models linear,tree \
		--max-trials 4 --num-jobs 2 --db f.db --name f --save f.cfl --refit
	expect_rc 0
	expect_err "(refit): failed"
	[ "$(sqlite3 f.db "select count(*) from trials where repeat = 1 and status = 'done'")" = 0 ] ||
		fail "a refit was done despite the fault"
	[ "$(sqlite3 f.db "select count(*) from trials where repeat = 1")" = 2 ] ||
		fail "refit trials: $(sqlite3 f.db "select count(*) from trials where repeat = 1")"
	# the bags' members are their 5 folds, and so are the bundle's models
	[ "$(sqlite3 f.db "select count(*) from ensembles where method = 'bag'
		and members glob 'trials [0-9]*+[0-9]*+[0-9]*+[0-9]*+[0-9]*; *'")" = 2 ] ||
		fail "bag members: $(sqlite3 f.db "select members from ensembles where method = 'bag'")"
	[ "$(sqlite3 f.cfl "select count(*) from models where fold < 0")" = 0 ] &&
	[ "$(( $(sqlite3 f.cfl "select count(*) from models") % 5 ))" = 0 ] ||
		fail "bundle models: $(sqlite3 f.cfl "select group_concat(repeat || ':' || fold, ' ') from models")"
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$names")" = 5 ] || fail "leaderboard entries: $names"
	expect_rows_give_test_auc f.db f.cfl "$names"
}

# a resumed run with --save writes the bundle of its final leaderboard;
# a path that cannot be written fails before any work
test_auto_save_resume_and_bad_path() {
	local names
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --max-trials 4 \
		--num-jobs 2 --db r.db --name r --save r.cfl -q
	expect_rc 0
	rm -f r.cfl
	run "$CFL" auto --resume r --db r.db --max-trials 6 --num-jobs 2 -q
	expect_rc 0
	expect_err "bundle written to 'r.cfl'"
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	[ "$(sort <<<"$names")" = "$(sqlite3 r.cfl "select name from rows order by name")" ] ||
		fail "the resumed bundle is not the final leaderboard: $names"
	[ "$(sqlite3 r.cfl "select value from meta where key = 'recommended'")" = "$(head -1 <<<"$names")" ] ||
		fail "default row after resume"
	[ "$(sqlite3 r.db "select count(*) from candidates")" = 6 ] ||
		fail "the resume did not search on to 6 candidates"
	[ "$(sqlite3 r.cfl "select count(*) from models where fold >= 0")" -ge 10 ] ||
		fail "the bundle's models are not the bags' folds"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --save nosuch/x.cfl --db b.db
	expect_rc 1
	expect_err "cannot write bundle 'nosuch/x.cfl': No such file or directory"
	mkdir -p folder.cfl
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --save folder.cfl --db b.db
	expect_rc 1
	expect_err "cannot write bundle 'folder.cfl': it is a folder"
	[ ! -e b.db ] || fail "a run was stored before the bad --save was found"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --save "" --db b.db
	expect_rc 2
	expect_err "--save needs a file name"
}

test_auto_old_database_is_migrated_for_auto_runs() {
	# a schema 1 file made before 'auto' runs existed (its runs table
	# refused them): the migration makes the table again, rows kept
	cp "$ROOT/tests/golden/v1/cfl.db" old.db || fail "no v1 fixture"
	sqlite3 old.db "select sql from sqlite_master where name = 'runs'" | grep -q "'auto'" &&
		fail "the fixture already takes auto runs"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --max-trials 2 --db old.db --name a
	expect_rc 0
	[ "$(sqlite3 old.db "select group_concat(name || ':' || kind, ' ') from runs")" = \
	  "v1-tune:tune v1-repeat:repeat a:auto" ] || fail "runs: $(sqlite3 old.db 'select name, kind from runs')"
	[ "$(sqlite3 old.db 'pragma foreign_key_check' | wc -l)" = 0 ] || fail "dangling references"
	run "$CFL" report v1-tune --db old.db
	expect_rc 0
	diff <(printf '%s\n' "$out") "$ROOT/tests/golden/v1/tune.txt" >/dev/null ||
		fail "the old tune run reports differently"
}

# ---- cfl repeat --time-limit ----

# trials of repeat 1 hang: at the limit they are stopped and kept as
# interrupted (one worker hangs on linear's, the other runs linear's
# repeat 2 and baseline's repeat 0, then hangs on baseline's repeat 1, so
# baseline's repeat 2 is not started), the table shows what is done; the
# stored times show the limit was kept; --resume finishes the run and its
# table equals an uninterrupted run's
test_repeat_time_limit_then_resume() {
	local ref t0 t1
	t0=$(date +%s.%N)
	CFL_TEST_FAULT=hang:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none \
		--num-jobs 2 --time-limit 3 --db t.db --name t
	t1=$(date +%s.%N)
	expect_rc 0
	# the limit counts from the command's start, before the run is stored
	# (its `created`): that it did not stop early is judged on the
	# command's own wall time, that it kept the limit on the stored one
	awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 2.8) }' ||
		fail "the command took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s, expected at least 2.8 (its limit, 3)"
	expect_err "stopped at its time limit"
	expect_err "3 of 6 trials done at the time limit (2 interrupted, 1 not started)"
	expect_err "cfl repeat --resume t --db t.db"
	expect_out "linear"
	expect_run_seconds t.db 5
	[ "$(sqlite3 t.db "select status from runs")" = interrupted ] || fail "run not interrupted"
	[ "$(sqlite3 t.db "select group_concat(repeat || status, ',') from (select repeat, status from trials order by candidate, repeat)")" = \
		"0done,1interrupted,2done,0done,1interrupted,2queued" ] ||
		fail "trial statuses: $(sqlite3 t.db "select repeat, status from trials")"
	[ "$(sqlite3 t.db "select count(*) from trial_attempts where outcome = 'interrupted'")" = 2 ] ||
		fail "the interrupted attempts are not recorded"
	# the stored command has --time-limit 3; 0 given after it lifts it
	run "$CFL" repeat --resume t --db t.db --time-limit 0 -q
	expect_rc 0
	ref=$(grep -E '^[|=-]' "$ROOT/tests/golden/repeat_iris.txt")
	[ "$(grep -E '^[|=-]' <<<"$out")" = "$ref" ] || fail "resumed table differs: $out"
	[ "$(sqlite3 t.db "select status from runs")" = done ] || fail "run not done"
}

# the ensembles of a run stopped at its limit come from the trials done;
# on --resume they are built again over every trial
test_repeat_time_limit_ensembles_rebuilt() {
	CFL_TEST_FAULT=hang:2 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear \
		--bootstrap --num-repeat 3 --ensemble mean --num-jobs 2 --time-limit 3 \
		--db e.db --name e -q
	expect_rc 0
	expect_out "mean"
	[ "$(sqlite3 e.db "select members from ensembles where name = 'mean'" | cut -d';' -f1)" = "trials 1,2" ] ||
		fail "mean of the done trials: $(sqlite3 e.db "select members from ensembles")"
	run "$CFL" repeat --resume e --db e.db --time-limit 0 -q
	expect_rc 0
	[ "$(sqlite3 e.db "select members from ensembles where name = 'mean'" | cut -d';' -f1)" = "trials 1,2,3" ] ||
		fail "mean not built again: $(sqlite3 e.db "select members from ensembles")"
}

test_repeat_time_limit_usage() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --time-limit -1 --db x.db
	expect_rc 2
	expect_err "--time-limit"
	run "$CFL" repeat --help
	expect_out "--time-limit"
}

# auto's stderr: by default, on small data (families at their own pace),
# a line per family each time its best by the proper score improves, with
# its candidates so far and the metric beside (-v: one per candidate); on
# a terminal a live line (phase, family, candidates, elapsed, time left)
# drawn first when the pool starts, before any candidate is scored, within
# 80 columns; none with -q or in a pipe
test_auto_progress_lines() {
	local lines n prev
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 6)" \
		--num-jobs 2 --db p.db --name p
	expect_rc 0
	grep -q '^linear: 1 candidate, best logloss [0-9.]* out of fold (acc [0-9.]*)$' <<<"$err" ||
		fail "no first family line: ${err:0:600}"
	grep -q '^  linear [0-9a-f]*: ' <<<"$err" && fail "a line per candidate without -v"
	grep -q 'round [0-9]' <<<"$err" && fail "round lines for families at their own pace: ${err:0:600}"
	# a line only when the best improves: counts grow, each best is new
	# and lower than the one before
	prev=
	while read -r n lines; do
		[ -z "$prev" ] || awk -v a="$lines" -v b="$prev" 'BEGIN { exit !(a < b) }' ||
			fail "linear's best did not improve: $lines after $prev"
		prev=$lines
	done < <(sed -n 's/^linear: \([0-9]*\) candidates\?, best logloss \([0-9.]*\) .*/\1 \2/p' <<<"$err")
	lines=$(grep -c '^linear: ' <<<"$err")
	n=$(sqlite3 p.db "select count(*) from candidates c join runs r on r.id = c.run where r.name = 'p' and c.model = 'linear'")
	[ "$lines" -ge 1 ] && [ "$lines" -lt "$n" ] || fail "$lines lines for linear's $n candidates"
	grep -q $'\033' <<<"$err" && fail "escapes into a pipe"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 6)" \
		--num-jobs 2 --db p.db --name p2 -v
	expect_rc 0
	grep -q '^  linear [0-9a-f]*: logloss [0-9.]* out of fold, acc [0-9.]* (best logloss [0-9.]*)$' <<<"$err" ||
		fail "-v: no candidate lines"
	command -v script >/dev/null || skip "no script(1) for a terminal"
	script -qfec "stty cols 80 rows 24; $CFL auto $ROOT/datasets/iris.csv --models linear,tree --time-limit $(lim 6) --num-jobs 2 --db p.db --name p3 >/dev/null" tty.log >/dev/null 2>&1 ||
		fail "cfl auto on a terminal failed: $(cat tty.log)"
	tr '\r' '\n' <tty.log | sed 's/^\x1b\[K//' >tty.txt
	grep -q '^auto: search linear, [0-9]* candidates so far, [0-9:]* elapsed, [0-9:]* left' tty.txt ||
		fail "no live line: $(head -c 600 tty.txt)"
	# small data: every candidate is a bag, no bagging phase after the
	# search; the ensembles are the phase after it
	grep -q '^auto: ensembles' tty.txt || fail "no ensembles in the live line: $(grep '^auto: ' tty.txt | tail -3)"
	# the first live line comes when the pool starts, before any
	# candidate is scored
	[ "$(grep -m1 '^auto: ' tty.txt)" = "$(grep -m1 '^auto: search' tty.txt)" ] || fail "first live line"
	grep -m1 '^auto: ' tty.txt | grep -q '^auto: search, 00:0[0-9] elapsed' ||
		fail "the first live line is not drawn at the start: $(grep -m1 '^auto: ' tty.txt)"
	grep '^auto: ' tty.txt | awk 'length > 79 {exit 1}' || fail "a live line over 79 columns"
	script -qfec "stty cols 80 rows 24; $CFL auto $ROOT/datasets/iris.csv --models linear,tree --time-limit $(lim 6) --num-jobs 2 --db p.db --name p4 -q >/dev/null" q.log >/dev/null 2>&1 ||
		fail "cfl auto -q on a terminal failed"
	tr '\r' '\n' <q.log | grep -q '^auto: ' && fail "-q: a live line: $(cat q.log)"
	true
}

# the leaderboard of $1 (a `cfl auto` or `cfl report` stdout) without the
# seconds column, the one figure a count budget leaves to the clock
auto_board_no_seconds() {
	awk '/^Leaderboard/ {on = 1} on && /^[0-9]+ / {$(NF - 1) = ""} on {print} /^Search/ {exit}' <<<"$1"
}

# a count budget: the same candidates, leaderboard and bundle bytes on one
# worker and on two (the rounds are told whole, never in finishing order)
test_auto_max_trials_same_on_1_and_2_jobs() {
	local b1
	run "$CFL" auto "$ROOT/datasets/wine.csv" --max-trials 12 --num-jobs 1 \
		--db a.db --name r --save r1.cfl
	expect_rc 0
	expect_err "the search ends: --max-trials reached (12 candidates)"
	b1=$(auto_board_no_seconds "$out")
	[ "$(sqlite3 a.db "select count(*) from candidates")" = 12 ] ||
		fail "candidates: $(sqlite3 a.db "select count(*) from candidates")"
	run "$CFL" auto "$ROOT/datasets/wine.csv" --max-trials 12 --num-jobs 2 \
		--db b.db --name r --save r2.cfl
	expect_rc 0
	[ -n "$b1" ] && [ "$b1" = "$(auto_board_no_seconds "$out")" ] ||
		fail "leaderboards differ: $b1 // $out"
	cmp -s r1.cfl r2.cfl || fail "the bundles differ"
	[ "$(sqlite3 a.db "select group_concat(hex) from (select hex from candidates order by seq)")" = \
	  "$(sqlite3 b.db "select group_concat(hex) from (select hex from candidates order by seq)")" ] ||
		fail "the candidates differ"
	run "$CFL" auto "$ROOT/datasets/wine.csv" --max-trials 0 --db c.db
	expect_rc 2
	expect_err "--max-trials"
}

# a count budget: kill -9 of cfl mid-search, then --resume, gives the
# leaderboard and the bundle of the run that was never stopped
test_auto_max_trials_kill_then_resume() {
	local job n b1
	run "$CFL" auto "$ROOT/datasets/wine.csv" --max-trials 12 --num-jobs 2 \
		--db a.db --name r --save r1.cfl
	expect_rc 0
	b1=$(auto_board_no_seconds "$out")
	CFL_TEST_FAULT=slow "$CFL" auto "$ROOT/datasets/wine.csv" --max-trials 12 \
		--num-jobs 2 --db k.db --name r --save r2.cfl >/dev/null 2>&1 &
	job=$!
	for _ in $(seq 300); do
		n=$(sqlite3 k.db "select count(*) from trials where status = 'done'" 2>/dev/null)
		[ "${n:-0}" -ge 6 ] && break
		sleep 0.1
	done
	kill -9 "$job"
	wait "$job" 2>/dev/null
	[ "${n:-0}" -ge 6 ] || fail "the run did 6 trials in 30 s: $n"
	[ ! -e r2.cfl ] || fail "the killed run wrote its bundle"
	[ "$(sqlite3 k.db "select count(*) from trials where status <> 'done'")" -gt 0 ] ||
		fail "the run had finished when killed"
	run "$CFL" auto --resume r --db k.db
	expect_rc 0
	[ "$b1" = "$(auto_board_no_seconds "$out")" ] ||
		fail "leaderboards differ: $b1 // $out"
	cmp -s r1.cfl r2.cfl || fail "the bundles differ"
}

# each row $4 (one a line) of bundle $2, applied to test.csv, gives the
# test $3 the run stored in $1 for that entry
expect_rows_give_test() {
	local e want got
	for e in $4; do
		want=$(sqlite3 "$1" "select printf('%.10g', m.value) from ensemble_metrics m
			join ensembles e on e.id = m.ensemble where e.name = '$e'
			and m.split = 'test' and m.metric = '$3'")
		got=$("$CFL" predict "$2" test.csv --row "$e" -o /dev/null | awk -v m="$3" '$1 == m { print $2 }')
		[ -n "$want" ] && [ "$got" = "$want" ] || fail "$e: predict $3 $got, stored $want"
	done
}

# --bag-sets 2: each bag is trained on two fold partitions (trial repeat 0
# and 2; repeat 1 stays the refit's), the sets' partitions differ, the
# bag's out-of-fold figure is that of the mean of its two out-of-fold
# predictions of every training row, its members are its 10 fold models,
# and the bundle's rows give the leaderboard's test figures again
test_auto_bag_sets_average_two_partitions() {
	local names
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	awk 'NR <= 301 { print > "train.csv" } NR == 1 || NR > 301 { print > "test.csv" }' \
		"$ROOT/datasets/diabetes.csv"
	run "$CFL" auto train.csv --test test.csv --models linear,tree --max-trials 2 \
		--bag-sets 2 --metric rmse --num-jobs 2 --db b.db --name b --save b.cfl
	expect_rc 0
	expect_err "bag sets: 1 more of 5 folds for the 2 best bags: 10 trials"
	expect_out "Bag sets: 2 bags with up to 2 sets of 5 folds, scored on their mean"
	[ "$(sqlite3 b.db "select group_concat(repeat || ':' || n, ' ') from (select repeat,
		count(*) n from trials where fold >= 0 and status = 'done' group by repeat)")" = "0:10 2:10" ] ||
		fail "trials: $(sqlite3 b.db "select repeat, fold, status from trials")"
	[ "$(awk '/^[0-9]+ +linear:/ {print $NF}' <<<"$out")" = 10 ] ||
		fail "the linear bag's members: $out"
	/usr/bin/python3 - b.db train.csv >py.out 2>&1 <<'PYEOF' || fail "$(cat py.out)"
import csv, math, sqlite3, struct, sys
db = sqlite3.connect(sys.argv[1])
y = [float(r[-1]) for r in list(csv.reader(open(sys.argv[2])))[1:]]
for name, members in db.execute("select name, members from ensembles where method = 'bag'"):
    ids = [int(t) for t in members.split(';')[0].split()[1].split('+')]
    sets = {}
    for t in ids:
        rep, fold = db.execute('select repeat, fold from trials where id = ?', (t,)).fetchone()
        n, data, rows = db.execute("select n, data, rows from predictions where trial = ? "
                                   "and split = 'oof'", (t,)).fetchone()
        vals = struct.unpack('<%dd' % n, data)
        idx = struct.unpack('<%dI' % n, rows) if rows else range(n)
        sets.setdefault(rep, {})[fold] = dict(zip(idx, vals))
    assert sorted(sets) == [0, 2], (name, sorted(sets))
    for rep, folds in sets.items():
        got = sorted(r for f in folds.values() for r in f)
        assert got == list(range(len(y))), (name, rep, 'not a partition')
    assert sorted(sets[0][0]) != sorted(sets[2][0]), (name, 'the sets share a partition')
    pred = {}
    for folds in sets.values():
        for f in folds.values():
            for r, v in f.items():
                pred[r] = pred.get(r, 0.0) + v / 2
    rmse = math.sqrt(sum((y[r] - pred[r]) ** 2 for r in pred) / len(y))
    stored = db.execute("select m.value from ensemble_metrics m join ensembles e on "
                        "e.id = m.ensemble where e.name = ? and m.split = 'oof' and "
                        "m.metric = 'rmse'", (name,)).fetchone()[0]
    assert abs(rmse - stored) <= 1e-9 * stored, (name, rmse, stored)
    print(name, rmse, stored)
PYEOF
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$names")" = 5 ] || fail "leaderboard entries: $names"
	expect_rows_give_test b.db b.cfl mse "$names"
	# the bundle's linear bag averages its 10 fold models
	[ "$(sqlite3 b.cfl "select count(*) from models where repeat = 2")" -ge 5 ] ||
		fail "bundle models: $(sqlite3 b.cfl "select group_concat(repeat || ':' || fold, ' ') from models")"
}

# greedy is Caruana's selection over every bag, as the help says: its
# weights are those of greedy run again here over all the bags' out-of-fold
# predictions (by MSE, the earlier bag on ties, the picks of the best of 25
# rounds).  On this run greedy's best is at round 13; built again with all
# 25 rounds over only the bags it picked (as cfl did), the picks after
# round 13 went another way, to weights 0.6,0.25,0.15 where greedy's are
# 8/13,3/13,2/13.  The bundle builds it again with 13 rounds and gives its
# test figure again.
test_auto_greedy_is_caruanas_over_every_bag() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	awk 'NR == 1 { print > "train.csv"; print > "test.csv"; next }
	     { print > (NR % 5 == 0 ? "test.csv" : "train.csv") }' "$ROOT/datasets/diabetes.csv"
	run "$CFL" auto train.csv --test test.csv --models tree,forest,gbdt --max-trials 12 \
		--folds 3 --seed 6 --num-jobs 2 --db g.db --name g --save g.cfl -q
	expect_rc 0
	/usr/bin/python3 - g.db train.csv >py.out 2>&1 <<'PYEOF' || fail "$(cat py.out)"
import csv, sqlite3, struct, sys
db = sqlite3.connect(sys.argv[1])
y = [float(r[-1]) for r in list(csv.reader(open(sys.argv[2])))[1:]]
bags, first = [], {}
for (cid,) in db.execute("select id from candidates order by id"):
    ts = db.execute("select id from trials where candidate = ? and fold >= 0 and "
                    "repeat = 0 and status = 'done' order by fold", (cid,)).fetchall()
    oof = {}
    for (t,) in ts:
        first.setdefault(t, cid)
        n, data, rows = db.execute("select n, data, rows from predictions where trial = ? "
                                   "and split = 'oof'", (t,)).fetchone()
        idx = struct.unpack('<%dI' % n, rows) if rows else range(n)
        oof.update(zip(idx, struct.unpack('<%dd' % n, data)))
    if ts:
        assert sorted(oof) == list(range(len(y))), (cid, 'not every training row')
        bags.append((cid, [oof[i] for i in range(len(y))]))
def mse(p):
    return sum((a - b) ** 2 for a, b in zip(p, y)) / len(y)
bags.sort(key=lambda b: mse(b[1]))  # stable: the earlier bag on ties
bags = bags[:50]
s, cnt, best = [0.0] * len(y), [0] * len(bags), (float('inf'), None, 0)
for r in range(1, 26):
    v, j = min((mse([(a + b) / r for a, b in zip(s, p)]), j) for j, (_, p) in enumerate(bags))
    s = [a + b for a, b in zip(s, bags[j][1])]
    cnt[j] += 1
    if v < best[0]:
        best = (v, list(cnt), r)
want = {bags[j][0]: c / best[2] for j, c in enumerate(best[1]) if c}
members = db.execute("select members from ensembles where name = 'greedy'").fetchone()[0]
groups = members.split(';')[0].split()[1].split(',')
ws = [float(w) for w in members.split('; weights ')[1].split(';')[0].split(',')]
got = {first[int(g.split('+')[0])]: w for g, w in zip(groups, ws)}
assert sorted(got) == sorted(want), ('bags', got, want)
assert all(abs(got[c] - want[c]) < 1e-5 for c in want), ('weights', got, want, members)
print(members, want)
PYEOF
	[ "$(sqlite3 g.db "select members like '%; the best at round 13 of 25' from ensembles
		where name = 'greedy'")" = 1 ] || fail "greedy: $(cat py.out)"
	expect_rows_give_test g.db g.cfl mse greedy
}

# --bag-sets 1, the default, is auto as it was before bag sets: one
# partition for every bag, the figures of docs/auto.md's example
test_auto_bag_sets_1_unchanged() {
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --max-trials 6 \
		--bag-sets 1 --num-jobs 2 --db o.db --name quick
	expect_rc 0
	[ "$(sqlite3 o.db "select count(*) from trials where repeat <> 0")" = 0 ] ||
		fail "trials of another set: $(sqlite3 o.db "select repeat, fold from trials where repeat <> 0")"
	grep -Eq '^3 +linear:bcbebec4 +bag +0\.035562 +0\.983333 +0\.933333 .* 5$' <<<"$out" ||
		fail "the linear bag is not as it was: $out"
	grep -Eq '^1 +greedy +ensemble +0\.035070 +0\.983333 +0\.933333 ' <<<"$out" ||
		fail "greedy is not as it was: $out"
	grep -q "Bag sets" <<<"$out" && fail "a bag sets line with one set: $out"
	grep -q "bag sets:" <<<"$err" && fail "a bag sets phase with one set: $err"
	# and so is the default
	local b1
	b1=$(auto_board_no_seconds "$out")
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --max-trials 6 \
		--num-jobs 2 --db d.db --name quick
	expect_rc 0
	[ "$b1" = "$(auto_board_no_seconds "$out")" ] || fail "the default is not one set: $out"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --bag-sets 0 --db x.db
	expect_rc 2
	expect_err "--bag-sets must be an integer in [1, 100]"
}

# a count budget with bag sets: the same leaderboard and bundle bytes on
# one worker and on two, and after a kill -9 in the middle of a set and a
# --resume, which keeps the sets' folds done before the kill
# (CFL_TEST_FAULT=slow:3 slows the third set's trials, repeat 3)
test_auto_bag_sets_same_on_jobs_and_after_kill() {
	local job n b1 done1 kept
	run "$CFL" auto "$ROOT/datasets/wine.csv" --models linear,tree --max-trials 4 \
		--bag-sets 3 --num-jobs 2 --db a.db --name r --save r1.cfl
	expect_rc 0
	expect_err "bag sets: 2 more of 5 folds for the 4 best bags: 40 trials"
	b1=$(auto_board_no_seconds "$out")
	run "$CFL" auto "$ROOT/datasets/wine.csv" --models linear,tree --max-trials 4 \
		--bag-sets 3 --num-jobs 1 --db o.db --name r --save r0.cfl
	expect_rc 0
	[ -n "$b1" ] && [ "$b1" = "$(auto_board_no_seconds "$out")" ] ||
		fail "leaderboards differ on 1 and 2 jobs: $b1 // $out"
	cmp -s r0.cfl r1.cfl || fail "the bundles differ on 1 and 2 jobs"
	CFL_TEST_FAULT=slow:3 "$CFL" auto "$ROOT/datasets/wine.csv" --models linear,tree \
		--max-trials 4 --bag-sets 3 --num-jobs 2 --db k.db --name r --save r2.cfl \
		>/dev/null 2>&1 &
	job=$!
	for _ in $(seq 300); do
		n=$(sqlite3 k.db "select count(*) from trials where repeat = 3 and status = 'done'" 2>/dev/null)
		[ "${n:-0}" -ge 2 ] && break
		sleep 0.1
	done
	kill -9 "$job"
	wait "$job" 2>/dev/null
	[ "${n:-0}" -ge 2 ] || fail "the run did 2 trials of its third set in 30 s: $n"
	[ "$(sqlite3 k.db "select count(*) from trials where repeat = 3 and status <> 'done'")" -gt 0 ] ||
		fail "the run had finished its sets when killed"
	done1=$(sqlite3 k.db "select group_concat(id || ':' || finished, ',') from trials
		where status = 'done' and repeat >= 2")
	run "$CFL" auto --resume r --db k.db
	expect_rc 0
	[ "$b1" = "$(auto_board_no_seconds "$out")" ] ||
		fail "leaderboards differ after the resume: $b1 // $out"
	cmp -s r1.cfl r2.cfl || fail "the bundles differ after the resume"
	kept=$(sqlite3 k.db "select group_concat(id || ':' || finished, ',') from trials
		where status = 'done' and id in ($(tr ',' '\n' <<<"$done1" | cut -d: -f1 | paste -sd,))")
	[ "$kept" = "$done1" ] || fail "the sets' folds done before the kill ran again"
}
