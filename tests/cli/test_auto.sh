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
	for o in --time-limit --max-trials --models --folds --metric --save --use-all-time --num-jobs --db --name --resume -q Examples:; do
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
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --valid-frac 0 --db x.db
	expect_rc 2
	expect_err "validation part"
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

# one run of the pool and the store: bags of each family's best, their mean
# and stacking, ranked by validation score, within the limit
test_auto_end_to_end() {
	local col credit
	run "$CFL" auto "$ROOT/datasets/wine.csv" --models linear,tree --time-limit "$(lim 6)" \
		--num-jobs 2 --db a.db --name w
	expect_rc 0
	expect_out "Leaderboard"
	expect_out "stacking"
	expect_out "linear:"
	expect_out "tree:"
	expect_err "cfl auto --resume w --db a.db"
	[ "$(sqlite3 a.db "select kind || ' ' || status from runs")" = "auto done" ] ||
		fail "run: $(sqlite3 a.db "select kind, status from runs")"
	# each family: its defaults (no params) first, then the search
	[ "$(sqlite3 a.db "select count(*) from candidates where params = '{}'")" = 2 ] ||
		fail "the defaults are not candidates of both families"
	[ "$(sqlite3 a.db "select model from candidates where seq = 0")" = linear ] ||
		fail "the first candidate is not linear's"
	[ "$(sqlite3 a.db "select count(*) from candidates where model = 'tree'")" -ge 2 ] ||
		fail "tree was not searched"
	# two bags of 5 folds with out-of-fold predictions, ranked with the
	# ensembles built on them
	[ "$(sqlite3 a.db "select count(*) from trials t join predictions p on p.trial = t.id
		where t.fold >= 0 and t.status = 'done' and p.split = 'oof'")" = 10 ] ||
		fail "not 10 fold trials with out-of-fold predictions"
	[ "$(sqlite3 a.db "select count(*) from trials where phase <> case when fold < 0
		then 'search' else 'refit' end")" = 0 ] || fail "phases of the search and the bags"
	# no refit without --refit
	[ "$(sqlite3 a.db "select count(*) from trials where repeat <> 0")" = 0 ] ||
		fail "trials of repeat 1 without --refit"
	[ "$(sqlite3 a.db "select group_concat(method, ',') from (select method from ensembles order by method)")" = "bag,bag,greedy,mean,stacking,top" ] ||
		fail "ensembles: $(sqlite3 a.db "select name, method from ensembles")"
	sqlite3 a.db "select members from ensembles where name = 'stacking'" | grep -q "on [0-9]* oof rows" ||
		fail "stacking not fitted on the out-of-fold predictions: $(sqlite3 a.db "select members from ensembles where name = 'stacking'")"
	# sorted by the out-of-fold score, top's with the credit the table
	# says, the one stored (tests/unit/test_bundle.c works its value out
	# again from the stored predictions)
	credit=$(sed -n 's/^ best entry.s, \([0-9.]*\), added to its oof.*/\1/p' <<<"$out")
	[ -n "$credit" ] || fail "no credit line: $out"
	[ "$(sqlite3 a.db "select printf('%.6f', c.credit) from ensemble_credit c
		join ensembles e on e.id = c.ensemble where e.name = 'top'")" = "$credit" ] ||
		fail "top's stored credit: $(sqlite3 a.db "select * from ensemble_credit")"
	col=$(awk -v c="$credit" '/^Leaderboard/ {on = 1; next}
		on && /^[0-9]+ / {print ($2 == "top" ? $4 + c : $4)} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$col")" = 6 ] || fail "leaderboard rows: $out"
	[ "$col" = "$(sort -gr <<<"$col")" ] || fail "leaderboard not sorted by the out-of-fold score: $col"
	# the out-of-fold scores are stored with the bags and ensembles
	[ "$(sqlite3 a.db "select count(distinct m.ensemble) from ensemble_metrics m where m.split = 'oof' and m.value is not null")" = 6 ] ||
		fail "out-of-fold scores not stored"
	expect_run_seconds a.db "$(lim 6).5"
	# a run by a cfl before top (no credit stored, no top): its report
	# ranks `mean` as that cfl did, with one binomial standard error of
	# the best oof accuracy over the training rows the line names (none
	# when the best is 1: no line)
	sqlite3 a.db "delete from ensemble_credit; delete from ensembles where name = 'top'"
	run "$CFL" report w --db a.db
	expect_rc 0
	credit=$(sed -n 's/^(mean ranks with one standard error, \([0-9.]*\),.*/\1/p' <<<"$out")
	awk -v c="${credit:-0}" -v n="$(sed -n 's/^ best.s accuracy over \([0-9]*\) training rows.*/\1/p' <<<"$out")" '
		/^Leaderboard/ {on = 1; next}
		on && /^[0-9]+ / {if ($4 > p) p = $4} /^$/ {on = 0}
		END {if (c == 0) exit !(p == 1); se = sqrt(p * (1 - p) / n)
		     exit !(n > 100 && c > se - 1e-6 && c < se + 1e-6)}' <<<"$out" ||
		fail "the old run's credit ${credit:-none} is not sqrt(p (1 - p) / n): $out"
	col=$(awk -v c="${credit:-0}" '/^Leaderboard/ {on = 1; next}
		on && /^[0-9]+ / {print ($2 == "mean" ? $4 + c : $4)} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$col")" = 5 ] || fail "the old run's leaderboard rows: $out"
	[ "$col" = "$(sort -gr <<<"$col")" ] || fail "the old run's leaderboard is not sorted with mean's credit: $col"
}

# a family's search stops once 10 candidates in a row (2 workers) scored no
# better than its best, and the families after it get the time it left:
# linear on iris stops within a second of its share, so fcnn's share is
# about all the search time left, not half of it as when linear kept asking
test_auto_family_stops_when_no_better() {
	local lin fc after
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,fcnn --time-limit "$(lim 10)" \
		--num-jobs 2 --db s.db --name s
	expect_rc 0
	expect_err "linear: 10 candidates in a row no better than its best; its search stops"
	# linear's first round: after its best (the first of the best
	# score), the 10 that stopped it and at most the 2 in flight then
	after=$(awk '/^linear: searching for/ { on = 1; next } /^fcnn: searching for/ { exit }
		on && /^  linear [0-9a-f]+: acc/ { n++; b = $NF; if (b != last) { at = n; last = b } }
		END { print n - at }' <<<"$err")
	[ "$after" -ge 10 ] && [ "$after" -le 12 ] ||
		fail "linear: $after candidates after its best in its first round, expected 10 to 12: ${err:0:800}"
	lin=$(sed -n 's/^linear: searching for \([0-9.]*\) s$/\1/p' <<<"$err")
	fc=$(sed -n 's/^fcnn: searching for \([0-9.]*\) s$/\1/p' <<<"$err")
	[ -n "$lin" ] && [ -n "$fc" ] || fail "no shares in: ${err:0:600}"
	# fcnn's share: what linear left too (1.3: linear's candidates take
	# some of its share on a loaded machine)
	awk -v l="$lin" -v f="$fc" 'BEGIN { exit !(f > 1.3 * l) }' ||
		fail "fcnn's share $fc s is not more than linear's $lin s: linear's unused time was not handed on"
	# what both left goes to further rounds, so the search goes on
	expect_err "another round for the families"
	[ "$(sqlite3 s.db "select count(*) from candidates where model = 'linear'")" -gt 12 ] ||
		fail "linear had no second round"
}

# a round after the first that improves no family's best ends the search
# (on iris every linear and tree candidate scores the same on the
# validation part), so the run ends long before its limit; --use-all-time
# searches on until the search's share of the time ends
test_auto_search_ends_when_a_round_improves_nothing() {
	local n lo
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 60)" \
		--num-jobs 2 --db e.db --name e
	expect_rc 0
	expect_err "rounds go on until one improves no family's best or the search's time ends"
	expect_err "the search ends: a whole round improved no family's best"
	expect_out "Leaderboard by acc"
	# two rounds, each: the best, 10 no better, at most 2 in flight
	n=$(sqlite3 e.db "select count(*) from candidates where model = 'linear'")
	[ "$n" -ge 20 ] && [ "$n" -le 26 ] || fail "linear asked $n candidates, expected two rounds (20 to 26)"
	expect_run_seconds e.db "$(lim 20)"
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 4)" \
		--use-all-time --num-jobs 2 --db f.db --name f
	expect_rc 0
	grep -q "the search ends" <<<"$err" && fail "--use-all-time: the search ended early: ${err:0:600}"
	expect_err "rounds go on until the search's time ends (--use-all-time)"
	# the search's share is 0.8 of the limit less a small reserve
	lo=$(awk -v l="$(lim 4)" 'BEGIN { print 0.7 * l }')
	expect_run_seconds f.db "$(lim 6)" "$lo"
}

# a model that never returns: the search waits for a first score until its
# budget ends, cancels, records the trials (none lost), and the run ends
# within the limit with a clear error
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
	[ "$(sqlite3 h.db "select count(*) from trials where status = 'failed' and error = 'cancelled'")" -ge 1 ] ||
		fail "no cancelled trial: $(sqlite3 h.db "select status, error from trials")"
}

# --resume: done trials are kept, the search goes on from the stored
# candidates, and the ensembles are built again over the bags
test_auto_resume() {
	local n1 n2 done1 kept
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 4)" \
		--num-jobs 2 --db r.db --name r
	expect_rc 0
	n1=$(sqlite3 r.db "select count(*) from candidates")
	done1=$(sqlite3 r.db "select group_concat(id || ':' || finished, ',') from trials where status = 'done'")
	# the replay asks the search again for each stored candidate: more
	# time than the first run had, so it can go beyond them under load
	run "$CFL" auto --resume r --db r.db --time-limit "$(lim 12)" --num-jobs 2
	expect_rc 0
	expect_err "resuming"
	expect_out "Leaderboard"
	n2=$(sqlite3 r.db "select count(*) from candidates")
	[ "$n2" -gt "$n1" ] || fail "the search did not go on: $n1 then $n2 candidates"
	# the trials done before were not run again
	kept=$(sqlite3 r.db "select group_concat(id || ':' || finished, ',') from trials where status = 'done' and id in (select id from trials where status = 'done' order by id limit $(tr ',' '\n' <<<"$done1" | wc -l))")
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
	run "$CFL" auto train.csv --test test.csv --models linear,tree --time-limit "$(lim 5)" \
		--num-jobs 2 --db s.db --name s --save s.cfl
	expect_rc 0
	expect_err "bundle written to 's.cfl'"
	grep -q '^save=s.cfl$' <<<"$(sqlite3 s.db "select config from runs")" ||
		fail "no save key: $(sqlite3 s.db 'select config from runs')"
	# the bags' fold trials kept their models, the search's none
	[ "$(sqlite3 s.db "select count(*) from trial_models m join trials t on t.id = m.trial
		where t.fold < 0")" = 0 ] || fail "search trials kept models"
	[ "$(sqlite3 s.db "select count(*) from trial_models")" = 10 ] ||
		fail "fold models kept: $(sqlite3 s.db 'select count(*) from trial_models')"
	# the rows are the leaderboard's entries; the default is its rank 1
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	rank1=$(head -1 <<<"$names")
	rows=$(sqlite3 s.cfl "select name from rows order by name")
	[ "$(sort <<<"$names")" = "$rows" ] || fail "rows '$rows', leaderboard '$names'"
	[ "$(sqlite3 s.cfl "select value from meta where key = 'recommended'")" = "$rank1" ] ||
		fail "default row is not the rank 1 '$rank1'"
	[ "$(sqlite3 s.cfl "select kind from rows where name like 'linear:%'")" = bag ] ||
		fail "the linear bag's kind"
	[ "$(sqlite3 s.cfl "select count(*) from scores where split = 'oof' and metric = 'acc'")" = 6 ] ||
		fail "out-of-fold scores missing from the bundle"
	# each row reproduces its entry's stored test figure
	expect_rows_give_test_auc s.db s.cfl "$names"
	local board=$out
	run "$CFL" predict s.cfl test.csv -o /dev/null
	expect_rc 0
	expect_err "row '$rank1' (the run's leaderboard's rank 1"
	run "$CFL" bundle show s.cfl
	expect_rc 0
	expect_out "default row '$rank1' (rank 1 by acc out of fold)"
	expect_out "oof acc"
	# cfl report prints what the run printed
	run "$CFL" report s --db s.db
	expect_rc 0
	[ "$out" = "$board" ] || fail "report differs from the run's output: $(diff <(echo "$board") <(echo "$out"))"
}

# --refit: each bag's candidate is trained once more on every training row
# (repeat 1, fold -1) and the bag predicts with it: the bundle holds the
# two refits' models only, a bag entry's stored test predictions are its
# refit's, and each row of the bundle gives its entry's test figure again
test_auto_refit() {
	local names e
	iris_split train.csv test.csv
	run "$CFL" auto train.csv --test test.csv --models linear,tree --time-limit "$(lim 5)" \
		--num-jobs 2 --db s.db --name s --save s.cfl --refit
	expect_rc 0
	expect_err "refit on every training row: done"
	grep -q '^refit=1$' <<<"$(sqlite3 s.db "select config from runs")" ||
		fail "no refit key: $(sqlite3 s.db 'select config from runs')"
	[ "$(sqlite3 s.db "select count(*) from trials where repeat = 1 and fold = -1
		and phase = 'refit' and status = 'done'")" = 2 ] ||
		fail "refits: $(sqlite3 s.db "select repeat, fold, status from trials where repeat = 1")"
	# 10 fold models and 2 refits kept; the bundle takes the refits only
	[ "$(sqlite3 s.db "select count(*) from trial_models")" = 12 ] ||
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
	[ "$(wc -l <<<"$names")" = 6 ] || fail "leaderboard entries: $names"
	expect_rows_give_test_auc s.db s.cfl "$names"
}

# with --refit, a bag whose refit failed predicts with its folds' mean: the
# run, its leaderboard and its bundle go on without it (CFL_TEST_FAULT=
# error:1 fails every trial of repeat 1, the refits only)
test_auto_refit_failed_falls_back_to_folds() {
	local names
	iris_split train.csv test.csv
	CFL_TEST_FAULT=error:1 run "$CFL" auto train.csv --test test.csv --models linear,tree \
		--time-limit "$(lim 5)" --num-jobs 2 --db f.db --name f --save f.cfl --refit
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
	[ "$(sqlite3 f.cfl "select count(*) from models where fold >= 0")" = 10 ] ||
		fail "bundle models: $(sqlite3 f.cfl "select group_concat(repeat || ':' || fold, ' ') from models")"
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	[ "$(wc -l <<<"$names")" = 6 ] || fail "leaderboard entries: $names"
	expect_rows_give_test_auc f.db f.cfl "$names"
}

# a resumed run with --save writes the bundle of its final leaderboard;
# a path that cannot be written fails before any work
test_auto_save_resume_and_bad_path() {
	local names
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear,tree --time-limit "$(lim 3)" \
		--num-jobs 2 --db r.db --name r --save r.cfl -q
	expect_rc 0
	rm -f r.cfl
	run "$CFL" auto --resume r --db r.db --time-limit "$(lim 4)" --num-jobs 2 -q
	expect_rc 0
	expect_err "bundle written to 'r.cfl'"
	names=$(awk '/^Leaderboard/ {on = 1; next} on && /^[0-9]+ / {print $2} /^$/ {on = 0}' <<<"$out")
	[ "$(sort <<<"$names")" = "$(sqlite3 r.cfl "select name from rows order by name")" ] ||
		fail "the resumed bundle is not the final leaderboard: $names"
	[ "$(sqlite3 r.cfl "select value from meta where key = 'recommended'")" = "$(head -1 <<<"$names")" ] ||
		fail "default row after resume"
	[ "$(sqlite3 r.cfl "select count(*) from models")" = \
	  "$(sqlite3 r.db "select count(*) from trials where fold >= 0 and status = 'done'")" ] ||
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
	run "$CFL" auto "$ROOT/datasets/iris.csv" --models linear --time-limit "$(lim 6)" --db old.db --name a
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
	local ref
	CFL_TEST_FAULT=hang:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--bootstrap --num-repeat 3 --seed 1 --metrics acc,logloss --ensemble none \
		--num-jobs 2 --time-limit 3 --db t.db --name t
	expect_rc 0
	expect_err "stopped at its time limit"
	expect_err "3 of 6 trials done at the time limit (2 interrupted, 1 not started)"
	expect_err "cfl repeat --resume t --db t.db"
	expect_out "linear"
	expect_run_seconds t.db 5 2.8
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

# the leaderboard of $1 (a `cfl auto` or `cfl report` stdout) without the
# seconds column, the one figure a count budget leaves to the clock
auto_board_no_seconds() {
	awk '/^Leaderboard/ {on = 1} on && /^[0-9]+ / {$NF = ""} on {print} /^Search/ {exit}' <<<"$1"
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
