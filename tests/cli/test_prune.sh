# cfl tune --prune (issue 33): a candidate whose validation score while
# training is poor is stopped, stored as pruned with its step and score,
# counted apart in `cfl runs`, shown in the report and exported to Optuna
# as PRUNED.  One job, so the reports reach the pruner in one order.

prune_run() {
	run "$CFL" tune "$ROOT/datasets/breast_cancer.csv" --model fcnn --set epochs=8 \
		--num-search 10 --num-repeat 1 --num-jobs 1 --prune "$1" --db p.db --name "$1"
	expect_rc 0
}

test_prune_asha_stored_reported_exported() {
	prune_run asha
	n=$(sqlite3 p.db "select count(*) from trials where status = 'pruned'")
	[ "$n" -ge 1 ] || fail "nothing pruned: $(sqlite3 p.db 'select status from trials')"
	[ "$(sqlite3 p.db "select count(*) from trials where status = 'done' and phase = 'search'")" -ge 1 ] ||
		fail "every candidate pruned"
	[ "$(sqlite3 p.db "select count(*) from trial_pruned p join trials t on t.id = p.trial
		where t.status = 'pruned' and p.step >= 1 and p.step <= 8 and p.score is not null")" = "$n" ] ||
		fail "pruned trials without their step and score: $(sqlite3 p.db 'select * from trial_pruned')"
	# the worker stops a pruned trial at its next report and serves on: one
	# job, one worker process for the whole run (it was killed and forked
	# again for each pruned trial)
	[ "$(sqlite3 p.db "select count(distinct worker) from trials")" = 1 ] ||
		fail "pruned trials cost their worker: $(sqlite3 p.db 'select distinct worker from trials' | tr '\n' ' ')"
	# a pruned candidate has no score; the best is one that finished
	[ "$(sqlite3 p.db "select count(*) from candidates c join trials t on t.candidate = c.id
		where t.status = 'pruned' and c.score is not null")" = 0 ] || fail "a pruned candidate has a score"
	run "$CFL" runs --db p.db
	expect_out "$n pruned"
	run "$CFL" report asha --db p.db
	expect_rc 0
	expect_out "pruned at step"
	if /usr/bin/python3 -c 'import optuna' 2>/dev/null; then
		run "$CFL" export asha --db p.db --format optuna --out study.db
		expect_rc 0
		run /usr/bin/python3 -c '
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
s = optuna.load_study(study_name="asha", storage="sqlite:///study.db")
print("pruned", sum(t.state == optuna.trial.TrialState.PRUNED for t in s.trials))
print("fail", sum(t.state == optuna.trial.TrialState.FAIL for t in s.trials))'
		expect_rc 0
		expect_out "pruned $n"
		expect_out "fail 0"
	fi
}

test_prune_median_and_none() {
	prune_run median
	# median needs 5 finished candidates first: the first five never pruned
	[ "$(sqlite3 p.db "select count(*) from trials t join candidates c on c.id = t.candidate
		where c.seq < 5 and t.status = 'pruned'")" = 0 ] || fail "pruned before 5 finished"
	[ "$(sqlite3 p.db "select config from runs where name = 'median'" | grep -c '^prune=median$')" = 1 ] ||
		fail "prune not in the run's config"
	run "$CFL" tune "$ROOT/datasets/breast_cancer.csv" --model fcnn --set epochs=8 \
		--num-search 4 --num-repeat 1 --num-jobs 1 --db p.db --name plain
	expect_rc 0
	[ "$(sqlite3 p.db "select count(*) from trials t join runs r on r.id = t.run
		where r.name = 'plain' and t.status <> 'done'")" = 0 ] || fail "pruned without --prune"
	run "$CFL" tune "$ROOT/datasets/breast_cancer.csv" --model fcnn --prune sometimes
	expect_rc 2
	expect_err "--prune must be none, median or asha, got 'sometimes'"
}

# A candidate is judged on the mean of its seeds (cfl/hpo.h's
# cfl_pruner_seed_report), not seed r against seed r of the others.  On one
# job the seeds run one after another, and a seed that has not reported is
# not waited for: the first is judged alone at the rungs (epoch 3 here);
# when it is pruned, the second stops at its first report; when it passed,
# the candidate was judged on every step the second reaches, which is not
# judged again.  Before, each seed had a pruner of its own: a second seed
# was judged against the other second seeds, and pruned after its first
# had finished.
test_prune_asha_judges_the_candidate() {
	run "$CFL" tune "$ROOT/datasets/breast_cancer.csv" --model fcnn --set epochs=8 \
		--num-search 20 --num-repeat 2 --num-jobs 1 --prune asha --db p.db --name two
	expect_rc 0
	n=$(sqlite3 p.db "select count(*) from trials where status = 'pruned'")
	[ "$n" -ge 2 ] || fail "nothing pruned: $(sqlite3 p.db 'select status from trials')"
	pairs=$(sqlite3 p.db "select group_concat(t.repeat || ':' || t.status || ':' || coalesce(p.step, ''), ' ')
		from trials t left join trial_pruned p on p.trial = t.id where t.phase = 'search'
		group by t.candidate order by t.candidate")
	# a candidate is whole, or its first seed pruned at the rung and its
	# second at its first report
	bad=$(grep -v -x -e '0:done: 1:done:' -e '0:pruned:3 1:pruned:1' <<<"$pairs")
	[ -z "$bad" ] || fail "a seed judged on its own: $bad"
	[ "$(sqlite3 p.db "select count(*) from candidates c join trials t on t.candidate = c.id
		where t.status = 'pruned' and c.score is not null")" = 0 ] || fail "a pruned candidate has a score"
}
