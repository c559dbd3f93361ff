# What a person sees at a terminal: tables and progress that fit its width
# (checked in a real 80-column tmux pane), colour, leaderboard order, the
# parameters of tune's candidates, `cfl runs` at 80 columns, and one clear
# message with a suggestion for a mistyped command or option.

# The widest line of stdin, in characters (UTF-8 aware).
widest() { LC_ALL=C.UTF-8 awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }'; }

# Runs "$@" in a detached 80x50 tmux pane of a private server and waits for
# it; the pane's text (wrapped lines joined, escapes with -e) is in
# pane.txt and pane-e.txt.
in_tmux_80() {
	local sock="$TMP/tmux.sock" i
	command -v tmux >/dev/null || skip "tmux is not installed (apt-get install tmux)"
	printf '%q ' "$@" > cmd.sh
	tmux -S "$sock" -f /dev/null new-session -d -x 80 -y 50 \
		"cd '$TMP' && env -u COLUMNS TERM=xterm-256color bash cmd.sh; echo CFL-EXIT=\$?; sleep 120" ||
		skip "tmux cannot start a server here"
	for i in $(seq 1 600); do
		tmux -S "$sock" capture-pane -p -J -S - > pane.txt 2>/dev/null
		grep -q '^CFL-EXIT=' pane.txt && break
		sleep 0.2
	done
	tmux -S "$sock" capture-pane -p -e -J -S - > pane-e.txt
	tmux -S "$sock" kill-server
	grep -q '^CFL-EXIT=0' pane.txt || fail "did not finish well in tmux: $(cat pane.txt)"
}

test_terminal_repeat_in_80_column_tmux() {
	# three models: the progress line with per-model counts and the
	# best is wider than 80, and so is the full table of four metrics
	in_tmux_80 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline,tree \
		--num-repeat 30 --num-jobs 2 --db t.db --metrics acc,auc,f1,logloss
	w=$(widest < pane.txt)
	[ "$w" -le 80 ] || fail "a line of $w columns (wrapped) in an 80-column pane: $(cat pane.txt)"
	# the last redraw of the progress line stays, alone: nothing left
	# behind by earlier, wrapped ones
	n=$(grep -cE '^[0-9]+/[0-9]+ (done|ETA)' pane.txt)
	[ "$n" = 1 ] || fail "$n progress lines left in the pane: $(cat pane.txt)"
	grep -qE '^90/90 done' pane.txt || fail "no final progress line: $(cat pane.txt)"
	# the compact table, with the same numbers as the full one in a pipe
	grep -q '±' pane.txt || fail "no compact table: $(cat pane.txt)"
	run "$CFL" report --db t.db --format table
	for num in $(grep -oE '[0-9]+\.[0-9]{6}' <<<"$out" | sort -u); do
		grep -qF "$num" pane.txt || fail "$num of the full table is not in the compact one"
	done
	# a colour terminal: best cells in bold, no '*' marks
	grep -q $'\033\\[1' pane-e.txt || fail "no bold best cells on a colour terminal"
	grep -q '^\* the best' pane.txt && fail "plain marks on a colour terminal"
	true
}

test_terminal_no_color_keeps_plain_marks() {
	in_tmux_80 env NO_COLOR=1 "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--num-repeat 2 --num-jobs 1 --db t.db -q --metrics acc,auc,f1
	grep -q $'\033\\[1' pane-e.txt && fail "colour with NO_COLOR set: $(cat -v pane-e.txt)"
	grep -q '^\* the best of its column' pane.txt || fail "no plain marks: $(cat pane.txt)"
	w=$(widest < pane.txt)
	[ "$w" -le 80 ] || fail "a line of $w columns"
}

test_terminal_pipe_keeps_full_table_and_width_option() {
	"$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline --num-repeat 2 \
		--num-jobs 1 --db t.db -q --metrics acc,auc,f1,logloss >/dev/null 2>&1 || fail "repeat failed"
	run "$CFL" report --db t.db
	expect_rc 0
	full=$out
	[ "$(widest <<<"$full")" -gt 80 ] || fail "the full table fits 80: test too weak"
	grep -q '±' <<<"$full" && fail "a pipe got the compact form"
	COLUMNS=60 run "$CFL" report --db t.db
	[ "$out" = "$full" ] || fail "COLUMNS changed the table in a pipe"
	run "$CFL" report --db t.db --width 80
	expect_out "±"
	[ "$(widest <<<"$out")" -le 80 ] || fail "--width 80 gave $(widest <<<"$out") columns"
	run "$CFL" report --db t.db --width 80 --format table
	[ "$out" = "$full" ] || fail "--format table is not the full table"
	run "$CFL" report --db t.db --format compact
	expect_out "±"
	run "$CFL" report --db t.db --width 5
	expect_rc 2
	expect_err "--width"
	run "$CFL" report --db t.db --sort name
	expect_rc 2
	expect_err "--sort knows 'score'"
}

test_terminal_sort_score_is_a_leaderboard() {
	"$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline,linear --num-repeat 2 \
		--num-jobs 1 --db t.db -q >/dev/null 2>&1 || fail "repeat failed"
	run "$CFL" report --db t.db --format csv
	[ "$(sed -n 2p <<<"$out" | cut -d, -f1)" = baseline ] || fail "run order changed: $out"
	run "$CFL" report --db t.db --format csv --sort score
	expect_rc 0
	# acc_score is the 5th field; descending, NaN last
	scores=$(tail -n +2 <<<"$out" | cut -d, -f5)
	[ "$scores" = "$(sort -g -r <<<"$scores")" ] || fail "not best first: $out"
	[ "$(sed -n 2p <<<"$out" | cut -d, -f1)" != baseline ] || fail "baseline first: $out"
	# repeat takes it too
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline,linear --num-repeat 1 \
		--num-jobs 1 --db t.db -q --sort score
	expect_rc 0
	[ "$(grep -E '^\| ' <<<"$out" | sed -n 2p | awk '{print $2}')" != baseline ] ||
		fail "repeat --sort score left baseline first: $out"
}

test_terminal_tune_shows_candidate_parameters() {
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --num-search 3 --num-repeat 1 \
		--num-jobs 1 --db t.db -q
	expect_rc 0
	expect_out "Parameters that vary between the candidates:"
	for hex in $(grep -oE '^\| [0-9a-f]{8} ' <<<"$out" | awk '{print $2}'); do
		grep -qE "^  $hex  l2=" <<<"$out" || fail "no parameters of $hex: $out"
	done
}

test_terminal_runs_fits_80_columns() {
	long=a-rather-long-run-name-that-takes-room-1
	"$CFL" repeat "$ROOT/datasets/iris.csv" --models baseline --num-repeat 1 \
		--num-jobs 1 --db r.db -q --name "$long" >/dev/null 2>&1 || fail "repeat failed"
	run "$CFL" runs --db r.db
	expect_rc 0
	expect_out "$long"
	expect_out "1/1"
	[ "$(widest <<<"$out")" -le 80 ] || fail "runs is $(widest <<<"$out") columns wide: $out"
	run "$CFL" runs --db r.db --width 200
	expect_out "iris.csv"
	expect_out "repeat"
}

test_terminal_unknown_command_suggests() {
	run "$CFL" reapet
	expect_rc 2
	expect_err "'reapet' is not a cfl command; did you mean 'repeat'?"
	[ "$(wc -l <<<"$err")" = 2 ] || fail "more than one message: $err"
	run "$CFL" zzzzzz
	expect_rc 2
	grep -q "did you mean" <<<"$err" && fail "suggested for nothing close: $err"
	true
}

test_terminal_unknown_option_one_message() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --num-repaet 2
	expect_rc 2
	expect_err "cfl repeat: unknown option '--num-repaet'; did you mean '--num-repeat'?"
	[ "$(wc -l <<<"$err")" = 2 ] || fail "not one message: $err"
	grep -q "unrecognized" <<<"$err" && fail "getopt's own message too: $err"
	run "$CFL" report --fromat md
	expect_rc 2
	expect_err "did you mean '--format'?"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models
	expect_rc 2
	expect_err "option '--models' needs a value"
	[ "$(wc -l <<<"$err")" = 2 ] || fail "not one message: $err"
	run "$CFL" tune "$ROOT/datasets/iris.csv" -z
	expect_rc 2
	expect_err "unknown option '-z'"
	[ "$(wc -l <<<"$err")" = 2 ] || fail "not one message: $err"
	# a bad letter inside a cluster, after a good long option
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --quiet -zq
	expect_rc 2
	expect_err "unknown option '-z'"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --quiet=1
	expect_rc 2
	expect_err "option '--quiet' takes no value"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --t 1
	expect_rc 2
	expect_err "option '--t' is ambiguous"
}

test_terminal_train_help_of_unknown_model_is_an_error() {
	run "$CFL" train --model nosuch --help
	expect_rc 2
	expect_err "unknown model 'nosuch'"
	run "$CFL" train --model linear --help
	expect_rc 0
	expect_out "linear"
}

# ---- the front door: man page, bash completion, install ----

test_terminal_man_and_completion_match_the_binary() {
	local b="$ROOT/${CFL_BUILD:-build}" c o opts
	sh "$ROOT/tools/gen-man.sh" "$CFL" > cfl.1 || fail "gen-man.sh failed"
	sh "$ROOT/tools/gen-completion.sh" "$CFL" > cfl.bash || fail "gen-completion.sh failed"
	# the built files are the ones this binary gives (make regenerates
	# them when the binary changes)
	[ -e "$b/cfl.1" ] && [ -e "$b/cfl.bash" ] || fail "no $b/cfl.1 or $b/cfl.bash: run make"
	diff -u "$b/cfl.1" cfl.1 >&2 || fail "$b/cfl.1 is stale"
	diff -u "$b/cfl.bash" cfl.bash >&2 || fail "$b/cfl.bash is stale"
	# every command and every option of its --help is in both
	run "$CFL" --help
	cmds=$(sed -n '/^Commands:/,/^$/p' <<<"$out" | awk 'NF > 1 && $1 != "Commands:" { print $1 }')
	[ -n "$cmds" ] || fail "no commands"
	for c in $cmds; do
		grep -qF ".SH \"cfl $c\"" cfl.1 || fail "no section for $c in the man page"
		opts=$(grep -oE '^  --[a-z][a-z0-9-]*' <<<"$("$CFL" "$c" --help)" | sed 's/^ *//')
		[ -n "$opts" ] || fail "no options in cfl $c --help"
		line=$(grep -E "^	$c\) " cfl.bash) || fail "no completion for $c"
		for o in $opts; do
			grep -qF -- "${o//-/\\-}" cfl.1 || fail "$c $o is not in the man page"
			grep -qE -- " $o( |')" <<<" ${line#*echo \'}" || fail "$c $o is not completed: $line"
		done
	done
	run "$CFL" --version
	for m in $(sed -n 's/^models: *//p' <<<"$out"); do
		grep -q "^_cfl_models=.*\b$m\b" cfl.bash || fail "model $m is not completed"
	done
	# the page reads without groff warnings
	if command -v groff >/dev/null; then
		w=$(groff -man -Tutf8 -ww -z cfl.1 2>&1)
		[ -z "$w" ] || fail "groff warns: $w"
	fi
	# and the completion completes
	comp() { bash -c 'source ./cfl.bash; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cfl; echo "${COMPREPLY[*]}"' _ "$@"; }
	[ "$(comp cfl rep)" = "repeat report" ] || fail "cfl rep -> '$(comp cfl rep)'"
	[ "$(comp cfl repeat --num-rep)" = --num-repeat ] || fail "--num-rep -> '$(comp cfl repeat --num-rep)'"
	[ "$(comp cfl train --model lin)" = linear ] || fail "--model lin -> '$(comp cfl train --model lin)'"
	[ "$(comp cfl repeat x.csv --models linear,tr)" = linear,tree ] ||
		fail "--models linear,tr -> '$(comp cfl repeat x.csv --models linear,tr)'"
	[ "$(comp cfl report --format c)" = "compact csv" ] || fail "--format c -> '$(comp cfl report --format c)'"
}

test_terminal_make_install_and_uninstall() {
	# only with the plain build up to date (make would build otherwise)
	[ "$CFL" = "$ROOT/cfl" ] || skip "runs with the plain build's ./cfl only"
	make -s -q -C "$ROOT" cfl build/cfl.1 build/cfl.bash 2>/dev/null || skip "the plain build is not up to date"
	make -s -C "$ROOT" install PREFIX="$TMP/pfx" >/dev/null || fail "make install failed"
	[ -x pfx/bin/cfl ] || fail "no pfx/bin/cfl"
	[ -s pfx/share/bash-completion/completions/cfl ] || fail "no completion installed"
	if command -v man >/dev/null; then
		page=$(MANPATH="$TMP/pfx/share/man" MANWIDTH=80 man cfl 2>&1) || fail "man cfl: $page"
		grep -q "cfl repeat" <<<"$page" || fail "man cfl lacks repeat: ${page:0:300}"
	else
		[ -s pfx/share/man/man1/cfl.1 ] || fail "no man page installed"
	fi
	make -s -C "$ROOT" uninstall PREFIX="$TMP/pfx" >/dev/null || fail "make uninstall failed"
	left=$(find pfx -type f)
	[ -z "$left" ] || fail "left after uninstall: $left"
}

# repeat's progress line after a resume: the elapsed time from the first
# line on, and an ETA from the trial times the run stored (it showed
# "ETA --:--" and no elapsed time until a trial of the resumed run ended)
test_terminal_repeat_resume_eta() {
	command -v script >/dev/null || skip "no script(1) for a terminal"
	CFL_TEST_FAULT=hang:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--num-repeat 2 --seed 1 --ensemble none --num-jobs 2 --time-limit 2 \
		--db t.db --name t
	expect_rc 0
	[ "$(sqlite3 t.db "select status from runs")" = interrupted ] || fail "run not interrupted"
	# the resumed trials (repeat 1) hang until --trial-timeout kills them:
	# a second of lines before any trial of this run ends
	CFL_TEST_FAULT=hang:1 script -qfc "stty cols 100 rows 24; $CFL repeat --resume t --db t.db \
		--time-limit 0 --trial-timeout 1.5 --max-retries 0 >/dev/null" tty.log >/dev/null 2>&1
	tr '\r' '\n' <tty.log | sed 's/^\x1b\[K//' | grep -E '^[0-9]+/[0-9]+ done' >lines.txt
	[ -s lines.txt ] || fail "no progress line: $(cat tty.log)"
	first=$(head -1 lines.txt)
	grep -qE '^0/2 done' <<<"$first" || fail "the first line came after a trial: $first"
	grep -q 'elapsed' <<<"$first" || fail "no elapsed time in the first line: $first"
	grep -q 'ETA --:--' <<<"$first" && fail "no ETA after the resume: $first"
	true
}
