# CLI tests: the commands a run prints for the user to paste ("see it again
# with: cfl report NAME", "finish it with: cfl repeat --resume NAME") quote
# the run name and the database path for a shell when they need it, so a
# hostile name pasted back runs nothing.

# Runs each "  cfl ..." hint line of $1 (a file of stderr) in sh with cfl
# being $CFL; fails when one ran anything but cfl or when cfl failed.
hints_paste() {
	local n=0
	cfl() { "$CFL" "$@"; }
	export -f cfl
	while IFS= read -r line; do
		n=$((n + 1))
		bash -c "${line# }" >paste.out 2>paste.err ||
			fail "'$line' failed: $(cat paste.err)"
		grep -q 'linear' paste.out || fail "'$line' printed no table: $(cat paste.out paste.err)"
	done < <(grep '^  cfl report ' "$1")
	[ "$n" -ge 1 ] || fail "no hint printed: $(cat "$1")"
	[ ! -e pwned ] && [ ! -e pwned2 ] && [ ! -e pwned3 ] || fail "a pasted hint ran a command"
}

test_hints_quote_hostile_run_name() {
	local name='a;touch pwned;b`touch pwned2`$(touch pwned3)'"'x y"
	mkdir 'd b;x'
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 --num-jobs 1 \
		--name "$name" --db 'd b;x/t.db' -q
	expect_rc 0
	printf '%s\n' "$err" >hint.err
	grep -qF "cfl report 'a;touch pwned;b\`touch pwned2\`\$(touch pwned3)'\\''x y' --db 'd b;x/t.db'" hint.err ||
		fail "the hint is not quoted: $err"
	hints_paste hint.err
	# a second run of a complete run prints the same hint
	run "$CFL" repeat --resume "$name" --db 'd b;x/t.db' -q
	expect_rc 0
	expect_err "(cfl report 'a;touch"
	# the same name again without --resume: the error's hint is quoted too
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 --num-jobs 1 \
		--name "$name" --db 'd b;x/t.db' -q
	expect_rc 1
	expect_err "use --resume 'a;touch pwned;b\`touch pwned2\`\$(touch pwned3)'\\''x y' or another --name"
}

# A plain name and the default database print as they are: no quotes.
test_hints_plain_name_unquoted() {
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 2 --num-jobs 1 \
		--name plain-1.x -q
	expect_rc 0
	expect_err "  cfl report plain-1.x"
}
