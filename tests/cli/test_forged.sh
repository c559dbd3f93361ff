# What a token holder sends cannot end or poison a run (docs/worker.md,
# "What a token holder can do"): forged RESULTs for leases it holds are
# failed attempts, never stored (tests/cli/fixture_forged.c proxy), bad
# rows already in a database do not break report, --resume or the bundle,
# and connections that take every lease and vanish burn no attempt.
# Uses test_worker.sh's helpers (w_coord, w_worker, w_wait, w_table).

# fg_local: sets FG_ARGS (the run: variables do not reach a test's shell,
# functions do) and writes the local run's table into local.table.
fg_local() {
	FG_ARGS=(--models linear,tree --num-repeat 2 --folds 3 --ensemble mean,stacking -q)
	run "$CFL" repeat "$ROOT/datasets/iris.csv" "${FG_ARGS[@]}" --num-jobs 2 \
		--db local.db --save local.cflb
	expect_rc 0
	w_table <(echo "$out") >local.table
	[ -s local.table ] || fail "no local table"
}

# fg_forge KIND: a worker behind fixture_forged's proxy, whose first two
# results are forged (KIND), runs the whole run: two failed attempts, the
# run ends 0 with the local run's table and a bundle.
fg_forge() {
	fg_local
	w_coord "$ROOT/datasets/iris.csv" "${FG_ARGS[@]}" --num-jobs 0 \
		--listen 127.0.0.1:0 --db r.db --save r.cflb
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_forged" proxy 0 "$PORT" "$1" 2 \
		>proxy.out 2>proxy.err &
	local px=$! pport=
	for _ in $(seq 100); do
		pport=$(grep -o -m1 'listening [0-9]*' proxy.out 2>/dev/null | cut -d' ' -f2)
		[ -n "$pport" ] && break
		sleep 0.05
	done
	[ -n "$pport" ] || fail "no proxy: $(cat proxy.err)"
	CFL_CACHE_DIR="$TMP/cache" "$CFL" worker --connect "127.0.0.1:$pport" \
		--retry-for 5 --jobs 1 --name liar -q 2>>workers.err &
	local a=$!
	w_wait $COORD_PID 120
	[ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	w_wait $a; w_wait $px
	grep -q "^forged 2$" proxy.out || fail "proxy: $(cat proxy.out proxy.err)"
	w_table coord.out >remote.table
	diff local.table remote.table >&2 || fail "tables differ"
	[ "$(sqlite3 r.db "select count(*) from trial_attempts where reason like 'refused result: %'")" = 2 ] ||
		fail "attempts: $(sqlite3 r.db 'select outcome, reason from trial_attempts')"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done'")" = 12 ] ||
		fail "trials: $(sqlite3 r.db 'select status from trials')"
	[ -s r.cflb ] || fail "no bundle: $(cat coord.err)"
	run "$CFL" report --db r.db
	expect_rc 0
}

test_forged_result_metric_name() {
	fg_forge metric
	sqlite3 r.db "select reason from trial_attempts" | grep -q "metric 'accuracy' on test, the lease asked for 'acc'" ||
		fail "reason: $(sqlite3 r.db 'select reason from trial_attempts')"
}

test_forged_result_prediction_shape() {
	fg_forge shape
	sqlite3 r.db "select reason from trial_attempts" | grep -q "3 x 1 predictions on test, the data has 30 x 3" ||
		fail "reason: $(sqlite3 r.db 'select reason from trial_attempts')"
}

test_forged_result_oof_rows() {
	fg_forge rows
	sqlite3 r.db "select reason from trial_attempts" | grep -q "out-of-fold row 0 is not row" ||
		fail "reason: $(sqlite3 r.db 'select reason from trial_attempts')"
}

test_forged_result_model_text() {
	fg_forge model
	sqlite3 r.db "select reason from trial_attempts" | grep -q "a model that does not load" ||
		fail "reason: $(sqlite3 r.db 'select reason from trial_attempts')"
}

test_forged_result_unasked_predictions() {
	fg_forge extra
	sqlite3 r.db "select reason from trial_attempts" | grep -q "predictions on valid, the lease asked for none" ||
		fail "reason: $(sqlite3 r.db 'select reason from trial_attempts')"
}

# fg_vanish hb|nohb: 22 connections that each say HELLO with 64 slots,
# take every lease (12 trials) and reset, one HEARTBEAT after the leases
# or none, burn no attempt: an honest worker then runs every trial once
# and the table is the local one.  Before, both poisoned all 12 trials
# (the heartbeat made each vanish count at once).
fg_vanish() {
	local args=("$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 6
		    --max-retries 1 -q)
	run "$CFL" repeat "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	w_table <(echo "$out") >local.table
	w_coord "${args[@]}" --num-jobs 0 --listen 127.0.0.1:0 --db r.db
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_forged" vanish "$PORT" 22 "$1" \
		>vanish.out 2>vanish.err || fail "vanish: $(cat vanish.err)"
	local leases
	leases=$(sed -n 's/^leases //p' vanish.out)
	[ "${leases:-0}" -ge 22 ] || fail "the attack took too few leases: $(cat vanish.out)"
	[ "$(sqlite3 r.db "select count(*) from trials where status in ('poison','failed')")" = 0 ] ||
		fail "trials: $(sqlite3 r.db 'select status, attempt from trials')"
	w_worker --jobs 2 --name honest -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	w_table coord.out >remote.table
	diff local.table remote.table >&2 || fail "tables differ"
	[ "$(sqlite3 r.db "select count(*) from trials where status='done' and worker='honest'")" = 12 ] ||
		fail "trials: $(sqlite3 r.db 'select status, worker from trials')"
	# no attempt was counted against a trial: each ran once, honestly
	[ "$(sqlite3 r.db "select count(*) from trial_attempts where outcome in ('failed','poison')")" = 0 ] ||
		fail "attempts: $(sqlite3 r.db 'select outcome, reason from trial_attempts' | sort | uniq -c)"
}

test_forged_vanishing_workers_with_heartbeat() { fg_vanish hb; }
test_forged_vanishing_workers_without_heartbeat() { fg_vanish nohb; }

# fg_importance DB: a database's importance rows by (model, repeat, kind,
# feature), values to 17 digits.
fg_importance() {
	sqlite3 "$1" "select c.model, t.repeat, t.fold, i.kind, i.feature, printf('%.17g', i.value)
		      from trial_importance i join trials t on t.id = i.trial
		      join candidates c on c.id = t.candidate order by 1, 2, 3, 4, 5"
}

# The same run stores the same feature importance wherever its trials ran:
# locally, on a TCP worker and (when mpirun is here) on MPI ranks.  Before,
# remote workers had no encoder to name the columns with and stored none.
test_forged_importance_same_on_every_backend() {
	local args=("$ROOT/datasets/iris.csv" --models tree,linear --num-repeat 2
		    --importance --seed 5 -q)
	run "$CFL" repeat "${args[@]}" --num-jobs 2 --db local.db
	expect_rc 0
	fg_importance local.db >local.imp
	[ "$(wc -l <local.imp)" -ge 16 ] || fail "local importance: $(cat local.imp)"
	w_coord "${args[@]}" --num-jobs 0 --listen 127.0.0.1:0 --db tcp.db
	w_worker --jobs 2 --name w1 -q; local a=$!
	w_wait $a; [ "$w_rc" = 0 ] || fail "worker exit $w_rc: $(cat workers.err)"
	w_wait $COORD_PID; [ "$w_rc" = 0 ] || fail "coordinator exit $w_rc: $(cat coord.err)"
	fg_importance tcp.db >tcp.imp
	diff local.imp tcp.imp >&2 || fail "TCP importance differs"
	grep -q "Feature importance" coord.out || fail "no importance section: $(cat coord.out)"
	command -v mpirun >/dev/null 2>&1 || skip "mpirun is not installed (local and TCP agree)"
	"$CFL" --version | grep -q '^backends:.* mpi' || skip "built without MPI (local and TCP agree)"
	run mpi_run -n 3 "$(mpi_rc)" "$CFL" repeat "${args[@]}" --num-jobs 1 --db mpi.db
	mpi_rank0_rc
	expect_rc 0
	fg_importance mpi.db >mpi.imp
	diff local.imp mpi.imp >&2 || fail "MPI importance differs"
}

# Bad rows already in a database (stored by an older cfl or by hand; a
# check now keeps them out): each kind leaves `cfl report`, `--resume`
# and the bundle working -- readers leave that trial (or its member, its
# model) out.  Before, the metric made report and resume fail, the shapes
# made resume fail, the model texts made the bundle fail.
test_forged_stored_bad_rows_are_skipped() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,tree --num-repeat 2 \
		--folds 3 --ensemble mean,stacking --save b.cflb --db good.db --name good -q
	expect_rc 0
	local kind sql
	for kind in metric shape size rows model state; do
		case $kind in
		metric) sql="update metrics set metric='accuracy' where trial=1 and metric='acc'" ;;
		shape) sql="update predictions set n=3, n_out=1, data=zeroblob(24) where trial=1 and split='test'" ;;
		size) sql="update predictions set data=zeroblob(24) where trial=2 and split='test'" ;;
		rows) sql="update predictions set rows=x'0f270000' || substr(rows, 5) where trial=1 and split='oof'" ;;
		model) sql="update trial_models set text='garbage' where trial=1" ;;
		state) sql="update trial_models set text=replace(text, 'state', 'state
zzz') where trial=7" ;;
		esac
		cp good.db $kind.db
		# the bad row, and the last trial to run again on --resume
		sqlite3 $kind.db "$sql; update trials set status='interrupted' where id=12;
			delete from metrics where trial=12; delete from predictions where trial=12;
			delete from trial_models where trial=12; update runs set status='interrupted'" ||
			fail "$kind: cannot store the row"
		run "$CFL" report good --db $kind.db
		expect_rc 0
		expect_out "linear"
		rm -f b.cflb
		run "$CFL" repeat --resume good --db $kind.db -q
		[ "$rc" = 0 ] || fail "$kind: resume exit $rc: $err"
		grep -q "^|  *linear  *|" <<<"$out" || fail "$kind: no table: $out"
		[ "$(sqlite3 $kind.db "select count(*) from trials where status='done'")" = 12 ] ||
			fail "$kind: trials: $(sqlite3 $kind.db 'select id, status from trials')"
		[ -s b.cflb ] || fail "$kind: no bundle: $err"
		run "$CFL" predict b.cflb "$ROOT/datasets/iris.csv"
		[ "$rc" = 0 ] || fail "$kind: predict exit $rc: $err"
	done
}
