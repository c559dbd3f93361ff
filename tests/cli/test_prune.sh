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
# cfl_pruner_seed_report), not one seed against the same seed of the
# others.  On one job the seeds run one after another: the first trains
# whole, and the second is judged on the mean at the rungs (epoch 3 here),
# so no candidate's seed 0 is pruned and none is stopped before a rung.
# Each seed was judged alone before: seed 0 pruned at epoch 3, and its
# sibling stopped at its first report (epoch 1).
test_prune_asha_judges_the_candidate() {
	run "$CFL" tune "$ROOT/datasets/breast_cancer.csv" --model fcnn --set epochs=8 \
		--num-search 12 --num-repeat 2 --num-jobs 1 --prune asha --db p.db --name two
	expect_rc 0
	n=$(sqlite3 p.db "select count(*) from trials where status = 'pruned'")
	[ "$n" -ge 1 ] || fail "nothing pruned: $(sqlite3 p.db 'select status from trials')"
	[ "$(sqlite3 p.db "select group_concat(t.repeat || ':' || p.step, ' ') from trials t
		join trial_pruned p on p.trial = t.id where t.repeat <> 1 or p.step <> 3")" = "" ] ||
		fail "a seed judged alone: $(sqlite3 p.db "select t.repeat, p.step from trials t
			join trial_pruned p on p.trial = t.id")"
	# every pruned candidate's first seed trained whole, and it has no score
	[ "$(sqlite3 p.db "select count(*) from trials t join trials u on u.candidate = t.candidate
		and u.repeat = 0 and u.status = 'done' where t.status = 'pruned'")" = "$n" ] ||
		fail "a pruned candidate's first seed did not finish"
	[ "$(sqlite3 p.db "select count(*) from candidates c join trials t on t.candidate = c.id
		where t.status = 'pruned' and c.score is not null")" = 0 ] || fail "a pruned candidate has a score"
}
