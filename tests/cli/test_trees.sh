# CLI tests of the tree models through `cfl train` and `cfl predict`: the
# saved file reproduces train's test metrics for tree, forest and gbdt (both
# tasks), W3's settings are expressible, word values and bad parameters.

# tr.csv / te.csv: every fourth row of $1 held out
trees_split() {
	head -1 "$1" > tr.csv
	head -1 "$1" > te.csv
	tail -n +2 "$1" | awk 'NR % 4 == 0' >> te.csv
	tail -n +2 "$1" | awk 'NR % 4 != 0' >> tr.csv
}

# trees_roundtrip MODEL [--set K=V ...] METRICS: train on tr.csv, predict
# te.csv from the file: the metrics must be the same ($trained keeps
# train's output)
trees_roundtrip() {
	local model=$1 metrics=${*: -1} m
	set -- "${@:2:$#-2}"
	run "$CFL" train tr.csv --test te.csv --model "$model" --seed 4 -o m.cfl \
		--metrics "$metrics" "$@"
	expect_rc 0
	expect_out "model_file"
	trained=$out
	run "$CFL" predict m.cfl te.csv --metrics "$metrics" -o p.csv
	expect_rc 0
	for m in ${metrics//,/ }; do
		v=$(awk -v k="test_$m" '$1 == k { print $2 }' <<<"$trained")
		[ -n "$v" ] || fail "train printed no test_$m: $trained"
		grep -qE "^$m +$v\$" <<<"$out" || fail "$model: predict $m differs from train's $v: $out"
	done
	[ "$(wc -l < p.csv)" = "$(wc -l < te.csv)" ] || fail "row count of p.csv"
}

test_trees_classification_roundtrip() {
	trees_split "$ROOT/datasets/wine.csv"
	for spec in "tree" "forest --set n_estimators=20 --set threads=2" \
		    "forest --set n_estimators=20 --set splitter=random --set bootstrap=false" \
		    "gbdt --set n_rounds=20"; do
		# shellcheck disable=SC2086
		trees_roundtrip $spec acc,auc
		grep -qE '^test_acc +0\.[89]' <<<"$trained" || fail "$spec accuracy: $trained"
	done
}

test_trees_regression_roundtrip() {
	trees_split "$ROOT/datasets/diabetes.csv"
	for spec in "tree --set max_depth=5" "forest --set n_estimators=10" \
		    "tree --set splitter=random" "forest --set n_estimators=10 --set splitter=random" \
		    "gbdt --set n_rounds=20 --set max_depth=3"; do
		# shellcheck disable=SC2086
		trees_roundtrip $spec rmse,r2
	done
}

# W3's parameter names, as WORKLOADS.md writes them, on breast_cancer
test_trees_w3_settings() {
	run "$CFL" train "$ROOT/datasets/breast_cancer.csv" --model forest \
		--set n_estimators=100 --set threads=2 -o f.cfl
	expect_rc 0
	grep -qE '^test_acc +0\.9' <<<"$out" || fail "forest accuracy: $out"
	run "$CFL" train "$ROOT/datasets/breast_cancer.csv" --model gbdt --set n_rounds=100 \
		--set max_depth=6 --set learning_rate=0.3 --set threads=2 -o g.cfl
	expect_rc 0
	grep -qE '^test_acc +0\.9' <<<"$out" || fail "gbdt accuracy: $out"
	grep -q '^gbdt logistic 1 100$' g.cfl || fail "g.cfl: $(grep '^gbdt' g.cfl)"
	run "$CFL" train "$ROOT/datasets/breast_cancer.csv" --model tree \
		--set max_depth=none --set max_features=sqrt --set criterion=entropy -o t.cfl
	expect_rc 0
	grep -q '^param max_features sqrt$' t.cfl || fail "t.cfl lacks the param"
}

test_trees_help_lists_params() {
	run "$CFL" train --model gbdt --help
	expect_rc 0
	for p in n_rounds learning_rate max_depth max_leaves min_child_weight lambda \
		 subsample colsample_bytree max_bins early_stopping_rounds threads; do
		expect_out "$p"
	done
	run "$CFL" train --model forest --help
	expect_rc 0
	expect_out "n_estimators"
	expect_out "oob_score"
	run "$CFL" train --model tree --help
	expect_rc 0
	expect_out "min_samples_leaf"
}

test_trees_bad_params() {
	run "$CFL" train "$ROOT/datasets/iris.csv" --model tree --set max_depth=deep
	expect_rc 2
	expect_err "max_depth"
	run "$CFL" train "$ROOT/datasets/iris.csv" --model forest --set n_estimators=0
	expect_rc 2
	expect_err "n_estimators"
	run "$CFL" train "$ROOT/datasets/iris.csv" --model gbdt --set subsample=0
	expect_rc 2
	expect_err "subsample"
	run "$CFL" train "$ROOT/datasets/iris.csv" --model forest --set splitter=foo
	expect_rc 2
	expect_err "splitter must be one of best|random, got 'foo'"
	# a loss that does not fit the data fails at fit, naming it
	run "$CFL" train "$ROOT/datasets/iris.csv" --model gbdt --set loss=logistic -o x.cfl
	expect_rc 1
	expect_err "logistic"
	[ ! -e x.cfl ] || fail "a model file was written for a failed fit"
	run "$CFL" train "$ROOT/datasets/diabetes.csv" --model tree --set criterion=gini
	expect_rc 1
	expect_err "criterion"
}

test_trees_bad_model_file() {
	run "$CFL" train "$ROOT/datasets/iris.csv" --model tree -o m.cfl
	expect_rc 0
	sed 's/^s \([0-9]*\) \([^ ]*\) [0-9]* /s \1 \2 0 /' m.cfl > loop.cfl
	run "$CFL" predict loop.cfl "$ROOT/datasets/iris.csv"
	expect_rc 1
	expect_err "loop.cfl:"
}
