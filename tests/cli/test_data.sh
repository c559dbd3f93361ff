# CLI tests of `cfl data`: help, describe on every dataset, each bad input.

test_data_help() {
	run "$CFL" data --help
	expect_rc 0
	expect_out "cfl data describe FILE"
	expect_out "--target NAME"
	expect_out "Examples:"
	run "$CFL" data describe --help
	expect_rc 0
	expect_out "--test-frac F"
	run "$CFL" data
	expect_rc 2
	run "$CFL" data frobnicate x.csv
	expect_rc 2
	expect_err "unknown subcommand 'frobnicate'"
}

test_data_usage_errors() {
	run "$CFL" data describe
	expect_rc 2
	expect_err "missing FILE"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --bogus
	expect_rc 2
	expect_err "unknown option '--bogus'"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --target
	expect_rc 2
	expect_err "option '--target' needs a value"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --task maybe
	expect_rc 2
	expect_err "--task must be clf or reg"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --test-frac 2
	expect_rc 2
	run "$CFL" data describe a.csv b.csv
	expect_rc 2
}

test_data_describe_iris() {
	run "$CFL" data describe "$ROOT/datasets/iris.csv"
	expect_rc 0
	expect_out "rows      150"
	expect_out "task      classification (inferred)"
	expect_out "target           target             0         3  3 classes"
	grep -qE '^setosa +0 +50 ' <<<"$out" || fail "setosa count: $out"
	grep -qE '^virginica +2 +50 ' <<<"$out" || fail "virginica count"
	expect_out "train 108, valid 12, test 30"
	expect_out "encoded   4 features"
	grep -qE '^sha256    [0-9a-f]{64}$' <<<"$out" || fail "no sha256"
}

test_data_describe_wine() {
	run "$CFL" data describe "$ROOT/datasets/wine.csv"
	expect_rc 0
	expect_out "rows      178"
	expect_out "3 classes"
	grep -qE '^class_1 +1 +71 ' <<<"$out" || fail "class_1 count"
}

test_data_describe_breast_cancer() {
	run "$CFL" data describe "$ROOT/datasets/breast_cancer.csv"
	expect_rc 0
	expect_out "rows      569"
	expect_out "target    diagnosis"
	expect_out "2 classes"
	expect_out "30 numeric, 0 categorical, 0 dropped"
}

test_data_describe_digits() {
	run "$CFL" data describe "$ROOT/datasets/digits.csv"
	expect_rc 0
	expect_out "rows      1797"
	expect_out "10 classes"
	expect_out "61 numeric, 0 categorical, 3 dropped"
	expect_out "dropped: constant"
	# classes sorted numerically
	grep -A3 '^class' <<<"$out" | grep -qE '^1 +1 +182 ' || fail "classes not in numeric order"
}

test_data_describe_diabetes() {
	run "$CFL" data describe "$ROOT/datasets/diabetes.csv"
	expect_rc 0
	expect_out "rows      442"
	expect_out "task      regression (inferred)"
	grep -q '^class' <<<"$out" && fail "a regression has no class table"
	run "$CFL" data describe "$ROOT/datasets/diabetes.csv" --task clf
	expect_rc 0
	expect_out "forced by --task"
}

test_data_describe_options() {
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --drop '^sepal' --valid-frac 0 --seed 3
	expect_rc 0
	expect_out "dropped: --drop"
	expect_out "valid 0, test 30"
	expect_out "encoded   2 features"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --only 'width' --target petal_length_cm
	expect_rc 0
	expect_out "task      regression"
	expect_out "dropped: not in --only"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --target nope
	expect_rc 1
	expect_err "no column named 'nope'"
}

test_data_test_file() {
	head -1 "$ROOT/datasets/iris.csv" > te.csv
	sed -n '2,11p' "$ROOT/datasets/iris.csv" >> te.csv
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --test te.csv
	expect_rc 0
	expect_out "test 10 (test from --test)"
	printf 'sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,target\n5.1,abc,1.4,0.2,setosa\n' > bad.csv
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --test bad.csv
	expect_rc 1
	expect_err "bad.csv:2: text 'abc' in numeric column 'sepal_width_cm'"
	printf 'sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,target\n5.1,3,1.4,0.2,rose\n' > bad2.csv
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --valid bad2.csv
	expect_rc 1
	expect_err "bad2.csv:2: unknown class 'rose'"
	printf 'sepal_length_cm,target\n5.1,setosa\n' > bad3.csv
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --test bad3.csv
	expect_rc 1
	expect_err "no column 'sepal_width_cm'"
}

test_data_bad_inputs() {
	run "$CFL" data describe missing.csv
	expect_rc 1
	expect_err "cfl: cannot open 'missing.csv'"
	: > empty.csv
	run "$CFL" data describe empty.csv
	expect_rc 1
	expect_err "empty.csv: empty file"
	printf 'a,b,c\n1,2,x\n3,4\n' > ragged.csv
	run "$CFL" data describe ragged.csv
	expect_rc 1
	expect_err "ragged.csv:3: row has 2 fields, the header has 3"
	printf 'a,b\n1.5,x\n2.5,x\n3.5,x\n' > one.csv
	run "$CFL" data describe one.csv
	expect_rc 1
	expect_err "target 'b' has one class ('x')"
	printf 'a,b\n1,"open\n' > quote.csv
	run "$CFL" data describe quote.csv
	expect_rc 1
	expect_err "quote.csv:2: unclosed quote"
	{ echo "a,b"; for i in $(seq 1 30); do if [ "$i" = 12 ]; then echo "oops,$((i % 2))"; else echo "$i.5,$((i % 2))"; fi; done; } > text.csv
	run "$CFL" data describe text.csv
	expect_rc 1
	expect_err "text.csv:13: text 'oops' in numeric column 'a'"
	# a name a regular expression would read otherwise: the option alone
	{ echo "a.b,c"; for i in $(seq 1 30); do if [ "$i" = 12 ]; then echo "oops,$((i % 2))"; else echo "$i.5,$((i % 2))"; fi; done; } > dot.csv
	run "$CFL" data describe dot.csv
	expect_rc 1
	expect_err "in numeric column 'a.b' (29 of 30 values are numbers); fix it, write a missing value (NA), or read the column as labels with --categorical"
	grep -q -- "--categorical '" <<<"$err" && fail "a regular expression spelt out for 'a.b': $err"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --drop '('
	expect_rc 1
	expect_err "--drop '(': bad regular expression"
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --only '[a'
	expect_rc 1
	expect_err "--only '[a'"
	printf 'a,b\n1.5,x\n' > tiny.csv
	run "$CFL" data describe tiny.csv
	expect_rc 1
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --target sepal_width_cm --task reg --only xyz
	expect_rc 1
	expect_err "no usable feature columns"
	run "$CFL" data describe .
	expect_rc 1
}

test_data_csv_dialects() {
	printf '\xef\xbb\xbfcolor;size;"note; free";label\r\nred;1,5;"a;b";yes\r\nblue;2,5;"x""y";no\r\nred;NA;"";yes\r\ngreen;3,5;?;no\r\n' > semi.csv
	run "$CFL" data describe semi.csv --test-frac 0.25 --valid-frac 0
	expect_rc 0
	expect_out "semicolon-separated"
	grep -qE '^size +numeric +1 +3 +1.5 .. 3.5' <<<"$out" || fail "decimal comma: $out"
	grep -qE '^color +categorical +0 +3 ' <<<"$out" || fail "color: $out"
	grep -qE '^note; free +categorical +2 +2 ' <<<"$out" || fail "note: $out"
	grep -qE '^yes +1 +2 ' <<<"$out" || fail "classes: $out"
	printf 'a\tb\n1.5\tx\n2.5\ty\n' > tab.csv
	run "$CFL" data describe tab.csv --test-frac 0.5 --valid-frac 0
	expect_rc 0
	expect_out "tab-separated"
}

test_data_load_mode() {
	run "$CFL" data load "$ROOT/datasets/digits.csv"
	expect_rc 0
	expect_out "rows 1797 cols 65 features 61"
}

# Integer codes (an ordinal 1..10 rating, a count of
# legs) stay numeric, text stays categorical, --categorical one-hot encodes
# the named columns; describe says which and why.  Data: the messy fixture.
test_data_integers_stay_numeric() {
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_messy" clf 300 3 > messy.csv || fail "fixture_messy failed"
	run "$CFL" data describe messy.csv
	expect_rc 0
	grep -qE '^rating +numeric +0 +10 +1 \.\. 10, integers$' <<<"$out" || fail "rating: $out"
	expect_out "(integers: kept numeric; --categorical REGEX one-hot encodes such columns)"
	grep -qE '^legs +numeric ' <<<"$out" || fail "legs: $out"
	grep -qE '^colour +categorical +0 +5 +one-hot, text' <<<"$out" || fail "colour: $out"
	expect_out "5 numeric, 2 categorical, 0 dropped"
	run "$CFL" data describe messy.csv --categorical '^(rating|legs)$'
	expect_rc 0
	grep -qE '^rating +categorical +0 +10 +one-hot, --categorical' <<<"$out" || fail "rating: $out"
	grep -qE '^legs +categorical ' <<<"$out" || fail "legs: $out"
	expect_out "3 numeric, 4 categorical, 0 dropped"
	run "$CFL" data describe messy.csv --categorical '(('
	expect_rc 1
	expect_err "--categorical '((': bad regular expression"
	# a text cell among integer codes: a broken cell, unless they are labels
	{ echo "code,y"; for i in $(seq 1 40); do echo "$((i % 5)),$((i % 2))"; done; echo "x9,1"; } > st.csv
	run "$CFL" data describe st.csv
	expect_rc 1
	expect_err "text 'x9' in numeric column 'code'"
	# the error names the option that reads such a column as labels
	expect_err "or read the column as labels with --categorical '^code\$'"
	run "$CFL" data describe st.csv --categorical '^code$'
	expect_rc 0
	grep -qE '^code +categorical +0 +6 +one-hot, --categorical' <<<"$out" || fail "code: $out"
	run "$CFL" train messy.csv --model linear --categorical '^rating$' -o m.cfl
	expect_rc 0
	grep -q '^cat rating 1 10' m.cfl || fail "no one-hot rating in the model file"
}

# Rows whose target is missing are dropped with a
# warning that counts them (the data file and a --test file alike); a file
# with no target value at all is an error.
test_data_missing_target_rows_dropped() {
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_messy" reg 200 2 3 > mt.csv || fail "fixture_messy failed"
	[ "$(grep -c ',$' mt.csv)" = 3 ] || fail "the fixture wrote $(grep -c ',$' mt.csv) rows without a target"
	run "$CFL" data describe mt.csv
	expect_rc 0
	expect_out "rows      197 (3 without a target value dropped)"
	expect_err "warning: 'mt.csv': 3 rows without a target value dropped"
	run "$CFL" train mt.csv --model linear -o m.cfl --test mt.csv
	expect_rc 0
	expect_out "test_rows    197"
	expect_err "warning: 'mt.csv': 3 rows without a target value dropped"
	[ "$(grep -c 'without a target value' <<<"$err")" = 2 ] || fail "one warning per file: $err"
	printf 'x,y\n1,\n2,NA\n' > none.csv
	run "$CFL" data describe none.csv
	expect_rc 1
	expect_err "every row's target 'y' is missing"
}

test_data_reads_gzip_and_stdin() {
	gzip -c "$ROOT/datasets/iris.csv" > iris.csv.gz
	cp iris.csv.gz iris_gz.csv
	run "$CFL" data describe "$ROOT/datasets/iris.csv"
	expect_rc 0
	plain=$(grep -v '^file\|^sha256' <<<"$out")
	for f in iris.csv.gz iris_gz.csv; do
		run "$CFL" data describe "$f"
		expect_rc 0
		expect_out "file      $f (gzip)"
		[ "$(grep -v '^file\|^sha256' <<<"$out")" = "$plain" ] || fail "$f read otherwise than the CSV: $out"
	done
	out=$("$CFL" data describe - < "$ROOT/datasets/iris.csv" 2>&1) || fail "stdin: $out"
	[ "$(grep -v '^file\|^sha256' <<<"$out")" = "$plain" ] || fail "stdin read otherwise: $out"
	out=$(cat iris.csv.gz | "$CFL" train - --model linear 2>&1) || fail "gzip on stdin: $out"
	grep -q "target 'target' (last column): classification, 3 classes; 150 rows" <<<"$out" || fail "$out"
	[ -e stdin.cfl ] || fail "train from stdin did not write stdin.cfl"
	run "$CFL" train iris.csv.gz --model linear
	expect_rc 0
	[ -e iris.cfl ] || fail "train on iris.csv.gz did not write iris.cfl"
	# predict reads them too
	out=$("$CFL" predict iris.cfl - < iris.csv.gz 2>/dev/null) || fail "predict from stdin failed"
	[ "$(wc -l <<<"$out")" = 151 ] || fail "predict from stdin: $(wc -l <<<"$out") lines"
	[ "$out" = "$("$CFL" predict iris.cfl "$ROOT/datasets/iris.csv" 2>/dev/null)" ] ||
		fail "predict on gzip from stdin differs from the plain file"
	head -c 400 iris.csv.gz > cut.csv.gz
	run "$CFL" data describe cut.csv.gz
	expect_rc 1
	expect_err "cut.csv.gz: gzip data cut short"
}

test_data_names_binary_files() {
	printf 'PAR1\025\000\025\000' > a.parquet
	run "$CFL" data describe a.parquet
	expect_rc 1
	expect_err "a.parquet: not a CSV file: it looks like a Parquet file; convert it to CSV"
	printf 'PK\003\004\024\000\000\000' > book.xlsx
	run "$CFL" train book.xlsx --model linear
	expect_rc 1
	expect_err "book.xlsx: not a CSV file: it looks like a zip archive"
	printf '[{"a": 1, "b": 2}]\n' > rows.json
	run "$CFL" data describe rows.json
	expect_rc 1
	expect_err "rows.json: not a CSV file: it looks like JSON"
	printf 'a,b\n1,\000\n' > nul.csv
	run "$CFL" data describe nul.csv
	expect_rc 1
	expect_err "nul.csv: binary file (a NUL byte at byte offset 6)"
}

# Windows-1252 (Latin-1) throughout is read with a warning; a file that
# mixes it with UTF-8 is refused at its first bad byte.  Before, both were
# read silently and their bytes written raw into UTF-8 HTML.
test_data_not_utf8() {
	{ printf 'city,x,y\n'; for i in $(seq 1 20); do printf 'M\374nchen,%d,%d\nK\366ln,%d,%d\n' "$i" $((i % 2)) "$i" $(((i + 1) % 2)); done; } > latin.csv
	run "$CFL" data describe latin.csv
	expect_rc 0
	expect_out "encoding  not UTF-8 (line 2 first): read as Windows-1252"
	grep -q "^city .* 2 " <<<"$out" || fail "city: $out"
	run "$CFL" train latin.csv --model linear -o l.cfl
	expect_rc 0
	expect_err "warning: 'latin.csv' is not UTF-8 (line 2 first): read as Windows-1252"
	run "$CFL" predict l.cfl latin.csv
	expect_rc 0
	expect_err "warning: 'latin.csv' is not UTF-8"
	{ cat latin.csv; printf 'Z\303\274rich,3,1\n'; } > mixed.csv
	run "$CFL" data describe mixed.csv
	expect_rc 1
	expect_err "mixed.csv:2: byte 0xFC at byte offset 10 is not UTF-8"
}

# A name that is not there gets the closest one and the candidates: a
# column (--target) and a run (report, export, --resume).
test_data_wrong_names_suggest() {
	run "$CFL" data describe "$ROOT/datasets/iris.csv" --target petal_lenght_cm
	expect_rc 1
	expect_err "no column named 'petal_lenght_cm' (--target); did you mean 'petal_length_cm'?"
	expect_err "(columns: 'sepal_length_cm', 'sepal_width_cm',"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 1 --db r.db --name iris-linear -q
	expect_rc 0
	run "$CFL" report iris-lnear --db r.db
	expect_rc 1
	expect_err "no run 'iris-lnear' in 'r.db'; did you mean 'iris-linear'? (the latest: 'iris-linear'; 'cfl runs' lists them)"
	run "$CFL" export zzz --db r.db
	expect_rc 1
	expect_err "no run 'zzz' in 'r.db' (the latest: 'iris-linear'; 'cfl runs' lists them)"
}
