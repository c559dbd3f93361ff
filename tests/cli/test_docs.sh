# CLI tests of the documentation: docs/models.md's parameter tables equal
# what the models' schemas generate (tests/docs/gen_models_md.c, `make docs`),
# and every relative link of README.md and docs/*.md reaches a file and, with
# a #fragment, a heading of it.

gen_models_md() { "$ROOT/${CFL_BUILD:-build}/tests/gen_models_md" "$@"; }

test_docs_models_md_up_to_date() {
	[ -x "$ROOT/${CFL_BUILD:-build}/tests/gen_models_md" ] || fail "gen_models_md not built"
	run gen_models_md "$ROOT/docs/models.md"
	expect_rc 0
	printf '%s\n' "$out" >new.md
	diff -u "$ROOT/docs/models.md" new.md >diff.txt ||
		fail "docs/models.md is out of date with the models' parameter tables; run 'make docs': $(head -c 600 diff.txt)"
	# every model cfl lists has its block
	for m in $(gen_models_md --list); do
		grep -q "^<!-- BEGIN params $m[: ]" "$ROOT/docs/models.md" || fail "no table for model '$m'"
	done
}

test_docs_models_md_generator_catches_drift() {
	cp "$ROOT/docs/models.md" page.md
	# a hand edit inside a block is overwritten
	sed -i 's/^| `lr` | 0.001 |/| `lr` | 0.5 |/' page.md
	grep -q '^| `lr` | 0.5 |' page.md || fail "test setup: the lr row was not edited"
	run gen_models_md page.md
	expect_rc 0
	expect_out '| `lr` | 0.001 |'
	grep -q '0\.5' <<<"$(grep '^| `lr`' <<<"$out")" && fail "hand edit survived"
	# a model without its block, an unknown model, a block never ended
	grep -v 'params baseline' "$ROOT/docs/models.md" >missing.md
	run gen_models_md missing.md
	expect_rc 1
	expect_err "no parameter table for model 'baseline'"
	{ cat "$ROOT/docs/models.md"; printf '<!-- BEGIN params nosuch -->\n<!-- END params nosuch -->\n'; } >unknown.md
	run gen_models_md unknown.md
	expect_rc 1
	expect_err "no model 'nosuch' is built in"
	grep -v '^<!-- END params gbdt' "$ROOT/docs/models.md" >open.md
	run gen_models_md open.md
	expect_rc 1
	expect_err "not ended"
	run gen_models_md nosuch.md
	expect_rc 1
	expect_err "cannot read 'nosuch.md'"
}

# GitHub's heading anchor: lower case, punctuation dropped, spaces to '-'.
docs_anchors() {
	grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ //' | tr 'A-Z' 'a-z' |
		sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

test_docs_links_resolve() {
	local f link target frag n=0
	for f in "$ROOT"/README.md "$ROOT"/docs/*.md; do
		# ](target) links, skipping absolute URLs
		while read -r link; do
			[ -n "$link" ] || continue
			case "$link" in http:* | https:* | mailto:*) continue ;; esac
			target=${link%%#*}
			frag=
			[[ "$link" == *"#"* ]] && frag=${link#*#}
			if [ -n "$target" ]; then
				target="$(dirname "$f")/$target"
				[ -e "$target" ] || fail "${f#"$ROOT"/}: link '$link': no such file"
			else
				target=$f
			fi
			if [ -n "$frag" ]; then
				docs_anchors "$target" | grep -qxF -- "$frag" ||
					fail "${f#"$ROOT"/}: link '$link': no heading with that anchor"
			fi
			n=$((n + 1))
		done < <(grep -oE '\]\([^) ]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//')
	done
	[ "$n" -ge 20 ] || fail "only $n links found: the link scan is broken"
}
