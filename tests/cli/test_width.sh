# Every line cfl prints on a terminal fits 80 columns: each command's
# --help (and train's per-model help), the man page as man renders it, and
# what train, repeat, tune, auto, report, export and predict print in a
# tty of 80 columns (script(1) gives the commands a terminal; stty sets
# its width).  The figures before: train's first stderr line 124
# wide, tune's progress and parameter lines up to 170, fcnn's help 295,
# the man page 302.

# Lines of file $1 wider than 80 columns (carriage returns end a line too,
# colour escapes take no columns), after the label $2.
over_80() {
	tr '\r' '\n' < "$1" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' |
		awk -v what="$2" 'length($0) > 80 { printf "%s: %d columns: %s\n", what, length($0), $0 }'
}

test_width_help_texts() {
	: > wide.txt
	for c in "" data train predict repeat tune auto runs report export worker bundle; do
		"$CFL" $c --help > help.txt 2>&1 || fail "cfl $c --help failed"
		over_80 help.txt "cfl $c --help" >> wide.txt
	done
	models=$("$CFL" --version | sed -n 's/^models: *//p' | tr ',' ' ')
	[ -n "$models" ] || fail "cfl --version lists no models"
	for m in $models; do
		"$CFL" train --model "$m" --help > help.txt 2>&1 || fail "cfl train --model $m --help failed"
		grep -q "^$m: " help.txt || fail "no '$m:' section in its help"
		over_80 help.txt "cfl train --model $m --help" >> wide.txt
	done
	[ ! -s wide.txt ] || fail "$(head -20 wide.txt)"
}

test_width_man_page() {
	command -v man > /dev/null || skip "no man(1)"
	[ -e "$ROOT/${CFL_BUILD:-build}/cfl.1" ] || skip "no built man page"
	MANWIDTH=80 man -l "$ROOT/${CFL_BUILD:-build}/cfl.1" > man.txt 2>/dev/null ||
		fail "man cannot render cfl.1"
	grep -q "cfl train" man.txt || fail "the page lacks cfl train: $(head -5 man.txt)"
	over_80 man.txt "man cfl" > wide.txt
	[ ! -s wide.txt ] || fail "$(head -20 wide.txt)"
}

# Runs the shell command $1 in a terminal of 80 columns; its output
# (stdout and stderr both, as the terminal shows them) goes to tty.txt.
in_80_tty() {
	command -v script > /dev/null || skip "no script(1)"
	script -qfec "stty cols 80 rows 24; $1" /dev/null > tty.txt 2>&1 < /dev/null
}

test_width_commands_in_a_terminal() {
	local d="$ROOT/datasets"
	awk -F, 'NR == 1 { print "a_long_customer_identifier_column," $0; next }
		{ printf "%05d,%s\n", NR - 1, $0 }' "$d/iris.csv" > ids.csv
	in_80_tty "'$CFL' data describe '$d/wine.csv' && '$CFL' data describe '$d/digits.csv' &&
		'$CFL' train '$d/wine.csv' --model gbdt -o w.cfl --importance=5 &&
		'$CFL' train ids.csv --model fcnn --set epochs=3 -o f.cfl &&
		'$CFL' train ids.csv --model linear --target a_long_customer_identifer_column;
		'$CFL' predict f.cfl ids.csv --keep-all --proba -o p.csv &&
		'$CFL' repeat '$d/iris.csv' --models linear,tree --num-repeat 2 --db r.db &&
		'$CFL' tune '$d/iris.csv' --model gbdt --num-search 4 --num-repeat 1 --db r.db --name tg &&
		'$CFL' report tg --db r.db &&
		'$CFL' export tg --db r.db --format optuna --out study.db &&
		'$CFL' auto '$d/wine.csv' --time-limit 6 --db a.db" ||
		fail "a command failed: $(tr '\r' '\n' < tty.txt | tail -5)"
	grep -q "target 'target' (last column): classification, 3" tty.txt || fail "no target line: $(head -5 tty.txt)"
	grep -q "Parameters that vary" tty.txt || fail "no tune table: $(tail -5 tty.txt)"
	grep -q "you mean 'a_long_customer_identifier_column'" tty.txt || fail "no suggestion: $(grep -A2 'no column' tty.txt)"
	over_80 tty.txt "in an 80-column terminal" > wide.txt
	[ ! -s wide.txt ] || fail "$(head -20 wide.txt)"
}
