# Feature importance: `cfl train --importance` (impurity for the tree
# models, permutation on the validation part for any model).

# "column value" lines of the impurity column of train's importance table.
imp_lines() { sed -n '/^importance of/,$p' <<<"$1" | awk 'NR > 2 && NF >= 2 && $1 != "(permutation:" {print $1, $2}'; }

# A python3 with scikit-learn, or nothing.
imp_python() {
	local p
	for p in python3 /usr/bin/python3; do
		command -v "$p" >/dev/null && "$p" -c 'import sklearn' 2>/dev/null && { echo "$p"; return; }
	done
}

# A depth-3 CART on diabetes (no tied splits there): the importances equal
# scikit-learn's DecisionTreeRegressor.feature_importances_ on the same
# rows (the whole file is train: --test and --valid are other files), and a
# forest of that tree without bootstrap gives the same.
test_importance_tree_matches_sklearn() {
	local py
	py=$(imp_python)
	[ -n "$py" ] || skip "no python3 with scikit-learn"
	head -30 "$ROOT/datasets/diabetes.csv" > part.csv
	run "$CFL" train "$ROOT/datasets/diabetes.csv" --model tree --set max_depth=3 \
		--test part.csv --valid part.csv --importance=0 -o t.cfl
	expect_rc 0
	imp_lines "$out" | awk '$2 > 0' | sort > cfl.txt
	[ -s cfl.txt ] || fail "no importances: $out"
	"$py" - "$ROOT/datasets/diabetes.csv" > sk.txt <<'EOF' || fail "scikit-learn failed"
import csv, sys
import numpy as np
from sklearn.tree import DecisionTreeRegressor
rows = list(csv.reader(open(sys.argv[1])))
X = np.array([[float(v) for v in r[:-1]] for r in rows[1:]], dtype=np.float32)
y = np.array([float(r[-1]) for r in rows[1:]])
imp = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).feature_importances_
for name, v in sorted(zip(rows[0][:-1], imp)):
    if v > 0:
        print(name, "%.6f" % v)
EOF
	[ "$(cat cfl.txt)" = "$(cat sk.txt)" ] || fail "cfl: $(cat cfl.txt) // sklearn: $(cat sk.txt)"
	run "$CFL" train "$ROOT/datasets/diabetes.csv" --model forest --set max_depth=3 \
		--set bootstrap=false --set max_features=all --set n_estimators=3 \
		--test part.csv --valid part.csv --importance=0 -o f.cfl
	expect_rc 0
	[ "$(imp_lines "$out" | awk '$2 > 0' | sort)" = "$(cat sk.txt)" ] ||
		fail "forest of one tree differs: $out"
}

# One-hot columns are folded back into their source column; the impurity
# column sums to 1; the permutation column is seeded (same output twice);
# a model without impurity importance gets permutation only.
test_importance_columns_and_models() {
	{
		echo "size,color,weight,label"
		for i in $(seq 1 120); do
			c=$(( i % 3 )); case $c in 0) col=red ;; 1) col=green ;; *) col=blue ;; esac
			lab=$(( (c == 0) ^ (i % 7 == 0) ))
			echo "$(( i % 11 )),$col,$(( (i * 37) % 50 )),$lab"
		done
	} > c.csv
	run "$CFL" train c.csv --model gbdt --importance -o g.cfl
	expect_rc 0
	expect_out "importance of 3 of 3 input columns"
	grep -q "color=" <<<"$out" && fail "one-hot columns not folded: $out"
	[ "$(imp_lines "$out" | head -1 | cut -d' ' -f1)" = color ] || fail "color is not first: $out"
	awk '{s += $2} END {exit !(s > 0.999999 && s < 1.000001)}' <<<"$(imp_lines "$out")" ||
		fail "impurity does not sum to 1: $out"
	first=$(sed -n '/^importance of/,$p' <<<"$out")
	run "$CFL" train c.csv --model gbdt --importance -o g.cfl
	[ "$(sed -n '/^importance of/,$p' <<<"$out")" = "$first" ] || fail "not reproducible: $out"
	run "$CFL" train c.csv --model linear --importance=2 -o l.cfl
	expect_rc 0
	expect_out "importance of 2 of 3 input columns (the model has no impurity importance)"
	expect_out "(permutation: the drop of valid acc"
	run "$CFL" train c.csv --model tree --importance=x -o t.cfl
	expect_rc 2
	expect_err "--importance=N wants a count >= 0, got 'x'"
}

# A run's trials keep their importance: impurity for the tree models
# always, permutation for every model with --importance; the run prints it
# after the table and `cfl report` prints the same; a database without the
# table (made before it) reports without it.
test_importance_stored_with_a_runs_trials() {
	command -v sqlite3 >/dev/null || skip "no sqlite3 shell"
	run "$CFL" repeat "$ROOT/datasets/wine.csv" --models linear,tree --num-repeat 2 --db r.db --name a -q
	expect_rc 0
	expect_out "Feature importance by input column"
	expect_out "  tree       impurity    "
	grep -q "permutation" <<<"$out" && fail "permutation without --importance: $out"
	[ "$(sqlite3 r.db "select count(*) from trial_importance i join trials t on t.id = i.trial
		join candidates c on c.id = t.candidate where c.model = 'tree' and i.kind = 'impurity'")" = 26 ] ||
		fail "not 13 columns x 2 tree trials: $(sqlite3 r.db "select * from trial_importance limit 5")"
	[ "$(sqlite3 r.db "select round(sum(value), 9) from trial_importance where kind = 'impurity' group by trial" | sort -u)" = 1.0 ] ||
		fail "a trial's impurity does not sum to 1"
	run "$CFL" repeat "$ROOT/datasets/wine.csv" --models linear,tree --num-repeat 2 --importance --db r.db --name b -q
	expect_rc 0
	expect_out "  linear     permutation "
	expect_out "  tree       permutation "
	ran=$out
	[ "$(sqlite3 r.db "select count(distinct i.trial) from trial_importance i join trials t on t.id = i.trial
		join runs r on r.id = t.run where r.name = 'b' and i.kind = 'permutation'")" = 4 ] ||
		fail "permutation importance missing for some trials"
	run "$CFL" report b --db r.db
	expect_rc 0
	[ "$out" = "$ran" ] || fail "cfl report differs from the run: $out // $ran"
	# a narrow terminal gets fewer columns per line, never a longer line
	run "$CFL" report b --db r.db --width 60
	expect_rc 0
	expect_out "  tree       impurity    proline"
	[ "$(sed -n '/^Feature importance/,$p' <<<"$out" | awk '{ if (length($0) > m) m = length($0) } END {print m}')" -le 60 ] ||
		fail "an importance line wider than 60: $out"
	run "$CFL" report b --db r.db --format html --out h
	expect_rc 0
	grep -q "<h2>Feature importance</h2>" h/b.html || fail "no importance section in the HTML report"
	grep -q "tree: impurity importance by input column" h/b.html || fail "no tree bars in the HTML report"
	grep -q "linear: impurity" h/b.html && fail "bars for a model without impurity importance"
	sqlite3 r.db "drop table trial_importance"
	chmod a-w r.db
	run "$CFL" report b --db r.db
	chmod u+w r.db
	expect_rc 0
	grep -q "Feature importance" <<<"$out" && fail "importance from nowhere: $out"
	grep -qE '^\| +linear +\|' <<<"$out" || fail "no linear row: $out"
}
