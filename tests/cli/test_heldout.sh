# Held-out rows: a validation part is carved out of train only when
# something in the command uses it (early stopping, tune's candidate
# scoring, an ensemble fitted without --folds); --valid-frac given always
# wins; the command says what it held out and why.  tune refits the chosen
# candidate on train + validation.  Data: the messy fixture, with a
# separate --test file as the benchmarks give.

messy() {
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_messy" "$@" || fail "fixture_messy failed"
}

# the table rows of a run's output (the run's name line left out)
rows_of() { grep -E '^\|' <<<"$1"; }

test_heldout_repeat_trains_on_all_rows_when_nothing_uses_validation() {
	messy clf 300 3 > m.csv
	messy clf 100 4 > t.csv
	run "$CFL" repeat m.csv --test t.csv --models tree,forest,gbdt --num-repeat 2 \
		--ensemble mean --db r.db --name a
	expect_rc 0
	expect_err "train 300 rows, validation 0 (nothing in this run uses one), test 100 (--test)"
	grep -qE '^\| +mean +\|' <<<"$out" || fail "no mean row without a validation part: $out"
	local a="$out"
	# the same as asking for no validation part: the models saw the same rows
	run "$CFL" repeat m.csv --test t.csv --models tree,forest,gbdt --num-repeat 2 \
		--ensemble mean --valid-frac 0 --db r.db --name b
	expect_rc 0
	expect_err "validation 0 (--valid-frac 0)"
	[ "$(rows_of "$a")" = "$(rows_of "$out")" ] ||
		fail "default and --valid-frac 0 differ: $(rows_of "$a") / $(rows_of "$out")"
	# --valid-frac given wins: 30 rows held out although nothing uses them
	run "$CFL" repeat m.csv --test t.csv --models tree,forest,gbdt --num-repeat 2 \
		--ensemble mean --valid-frac 0.1 --db r.db --name c
	expect_rc 0
	expect_err "train 270 rows, validation 30 (--valid-frac 0.1)"
	[ "$(rows_of "$a")" != "$(rows_of "$out")" ] ||
		fail "training on 270 rows gave the table of 300"
	command -v sqlite3 >/dev/null || return 0
	[ "$(sqlite3 r.db "SELECT config FROM runs WHERE name = 'a'" | grep '^valid_frac=')" = "valid_frac=0" ] ||
		fail "run a's stored config: $(sqlite3 r.db "SELECT config FROM runs WHERE name = 'a'")"
}

# The default command of the benchmarks (every model, no options): fcnn
# stops on its training loss and the default ensemble is the mean, so no
# row is held out and no stacking row is built.
test_heldout_default_repeat_holds_out_nothing() {
	messy clf 300 3 > m.csv
	run "$CFL" repeat m.csv --models fcnn,linear,tree,forest,gbdt --num-repeat 1 \
		--set fcnn.hidden=8 --db r.db
	expect_rc 0
	expect_err "train 240 rows, validation 0 (nothing in this run uses one), test 60"
	grep -qE '^\| +mean +\|' <<<"$out" || fail "no mean row: $out"
	! grep -qE '^\| +stacking +\|' <<<"$out" || fail "a stacking row without --folds: $out"
}

test_heldout_repeat_keeps_validation_when_used() {
	messy clf 300 3 > m.csv
	# fcnn stops early on validation when given a patience
	run "$CFL" repeat m.csv --models tree,fcnn --set fcnn.patience=10 --num-repeat 1 \
		--ensemble mean --db r.db -q
	expect_rc 0
	run "$CFL" repeat m.csv --models tree,fcnn --set fcnn.patience=10 --num-repeat 1 \
		--ensemble mean --db r.db
	expect_rc 0
	expect_err "train 216 rows, validation 24 (0.1 of train: fcnn stops early on it, patience=10), test 60"
	# without early stopping (the default), nothing uses it
	run "$CFL" repeat m.csv --models tree,fcnn --num-repeat 1 --ensemble mean --db r.db
	expect_rc 0
	expect_err "train 240 rows, validation 0 (nothing in this run uses one)"
	# gbdt's early stopping uses it
	run "$CFL" repeat m.csv --models gbdt --set early_stopping_rounds=5 --num-repeat 1 --db r.db
	expect_rc 0
	expect_err "validation 24 (0.1 of train: gbdt stops early on it, early_stopping_rounds=5)"
	# the default ensembles fit nothing without --folds ...
	run "$CFL" repeat m.csv --models tree,forest --num-repeat 1 --db r.db
	expect_rc 0
	expect_err "validation 0 (nothing in this run uses one)"
	! grep -q stacking <<<"$out" || fail "default stacking without --folds: $out"
	# ... stacking asked for without them is fitted on validation rows ...
	run "$CFL" repeat m.csv --models tree,forest --num-repeat 1 --ensemble stacking --db r.db
	expect_rc 0
	expect_err "validation 24 (0.1 of train: ensemble 'stacking' is fitted on it without --folds)"
	expect_out "stacking"
	# ... the default stacks on out-of-fold predictions with --folds, and
	# nothing is built with one model
	run "$CFL" repeat m.csv --models tree,forest --num-repeat 1 --folds 3 --db r.db
	expect_rc 0
	expect_err "validation 0 (nothing in this run uses one)"
	expect_out "stacking"
	run "$CFL" repeat m.csv --models tree --num-repeat 1 --db r.db
	expect_rc 0
	expect_err "validation 0 (nothing in this run uses one)"
	# greedy is scored on it
	run "$CFL" repeat m.csv --models tree,forest --num-repeat 1 --ensemble greedy --db r.db
	expect_rc 0
	expect_err "validation 24 (0.1 of train: ensemble 'greedy' is fitted on it)"
}

test_heldout_train_and_tune_say_what_they_hold_out() {
	messy clf 300 3 > m.csv
	run "$CFL" train m.csv --model gbdt -o g.cfl
	expect_rc 0
	expect_err "240 train rows, 0 valid (nothing in this run uses one)"
	expect_out "valid_rows   0"
	run "$CFL" train m.csv --model gbdt --valid-frac 0.2 -o g.cfl
	expect_rc 0
	expect_out "valid_rows   48"
	run "$CFL" train m.csv --model fcnn --set epochs=2 -o f.cfl
	expect_rc 0
	expect_out "valid_rows   0"
	run "$CFL" train m.csv --model fcnn --set epochs=2 --set patience=3 -o f.cfl
	expect_rc 0
	expect_out "valid_rows   24"
	run "$CFL" tune m.csv --model tree --num-search 2 --num-repeat 1 --db r.db
	expect_rc 0
	expect_err "train 216 rows, validation 24 (0.1 of train: tune scores its candidates on it), test 60"
}

test_heldout_data_describe_says_when_validation_is_held_out() {
	run "$CFL" data describe "$ROOT/datasets/iris.csv"
	expect_rc 0
	expect_out "split     seed 0: train 108, valid 12, test 30"
	expect_out "valid     held out only by a command that uses it"
	expect_out "otherwise every model trains on all 120 rows"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --valid-frac 0.2
	expect_rc 0
	expect_out "valid     --valid-frac 0.2: held out by every command"
}

# tune refits the chosen candidate on train + validation: the baseline
# predicts the mean target of the rows it is fitted on, so with --test the
# refit's test MSE is that of the mean of every row of the data file
# (before: of the 90% left after the validation part)
test_heldout_tune_refits_on_train_and_validation() {
	messy reg 300 3 > m.csv
	messy reg 100 4 > t.csv
	echo 'smoothing = choice(0, 1)' > b.params
	run "$CFL" tune m.csv --test t.csv --model baseline --params b.params --num-search 2 \
		--num-repeat 2 --db r.db --name b -q
	expect_rc 0
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	local got want
	got=$(sqlite3 r.db "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial
		WHERE t.repeat = 2 AND m.split = 'test' AND m.metric = 'mse'")
	want=$(awk -F, 'NR == FNR { if (FNR > 1) { s += $NF; n++ } next }
		FNR > 1 { mu = s / n; d = $NF - mu; q += d * d; k++ }
		END { printf "%.9g", q / k }' m.csv t.csv)
	[ -n "$got" ] || fail "no refit trial with a test MSE"
	awk -v g="$got" -v w="$want" 'BEGIN { exit !(g - w < 1e-6 * w && w - g < 1e-6 * w) }' ||
		fail "refit test MSE $got, the mean of all 300 rows gives $want"
	# the refit trained on the validation rows: it is not scored there
	[ "$(sqlite3 r.db "SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial
		WHERE t.repeat >= 2 AND m.split = 'valid'")" = 0 ] || fail "refit trials scored on validation"
}

# a model that stopped early refits with the epochs or rounds its search
# repeats kept (the median), early stopping off: there is nothing left to
# stop on
test_heldout_tune_refit_keeps_the_best_round_count() {
	messy clf 300 3 > m.csv
	run "$CFL" tune m.csv --model gbdt --set early_stopping_rounds=3 --set n_rounds=400 \
		--num-search 2 --num-repeat 3 --db r.db --name g -q
	expect_rc 0
	grep -qx 'param early_stopping_rounds 0' g.cfl || fail "saved model: $(grep '^param' g.cfl)"
	local k
	k=$(awk '$1 == "param" && $2 == "n_rounds" { print $3 }' g.cfl)
	[ -n "$k" ] && [ "$k" -ge 1 ] && [ "$k" -lt 400 ] || fail "saved model's n_rounds '$k'"
	run "$CFL" tune m.csv --model fcnn --set patience=2 --set epochs=60 --set hidden=8 \
		--num-search 1 --num-repeat 1 --db r.db --name f -q
	expect_rc 0
	grep -qx 'param patience 0' f.cfl || fail "saved model: $(grep '^param' f.cfl)"
	k=$(awk '$1 == "param" && $2 == "epochs" { print $3 }' f.cfl)
	[ -n "$k" ] && [ "$k" -ge 1 ] && [ "$k" -le 60 ] || fail "saved model's epochs '$k'"
}

# the iterations a trial kept are stored (trial_iters), so a refit run by
# --resume after its search repeats were done (the refit trials lost here
# as by a kill before them) counts the same rounds as the run that was
# not stopped, not the search's own early stopping
test_heldout_tune_refit_after_resume_keeps_the_round_count() {
	local first
	messy clf 300 3 > m.csv
	run "$CFL" tune m.csv --model gbdt --set early_stopping_rounds=3 --set n_rounds=400 \
		--num-search 2 --num-repeat 3 --db r.db --name g -q
	expect_rc 0
	first=$(grep '^param' g.cfl)
	[ "$(sqlite3 r.db "SELECT count(*) FROM trial_iters i JOIN trials t ON t.id = i.trial
		WHERE t.repeat < 3 AND i.n_iter BETWEEN 1 AND 400")" = 6 ] ||
		fail "iterations stored: $(sqlite3 r.db 'SELECT * FROM trial_iters')"
	sqlite3 r.db "PRAGMA foreign_keys = ON; DELETE FROM trials WHERE repeat >= 3;
		UPDATE runs SET status = 'interrupted', finished = NULL" || fail "sqlite3"
	rm -f g.cfl
	run "$CFL" tune --resume g --db r.db -q
	expect_rc 0
	[ "$(sqlite3 r.db "SELECT count(*) FROM trials WHERE repeat >= 3 AND status = 'done'")" = 3 ] ||
		fail "the refit did not run again"
	[ "$(grep '^param' g.cfl)" = "$first" ] ||
		fail "refit after resume: $(grep '^param' g.cfl | tr '\n' ' '), before: $(tr '\n' ' ' <<<"$first")"
}
