# cfl report --format html: one self-contained page with the table and SVG
# plots; rendered by headless Chromium (Debian's chromium) to a PNG that
# must not be blank, and to a DOM that must hold the table.  The Chromium
# tests are skipped (counted so) when chromium is not installed.

html_fixture() {
	"$ROOT/${CFL_BUILD:-build}/tests/fixture_store" "$1" ||
		fail "fixture_store failed"
}

chromium_bin() {
	command -v chromium || command -v chromium-browser || true
}

# chromium with the flags the tests use; its own profile in $TMP, no
# network, no GPU.
run_chromium() {
	HOME="$TMP" timeout -k 5 90 "$(chromium_bin)" --headless --no-sandbox \
		--disable-background-networking --disable-gpu --no-first-run \
		--user-data-dir="$TMP/chromium-profile" "$@"
}

# Share of pixels of a PNG that are not white (8-bit RGB or RGBA), printed
# in per mille.  Pure python3 (zlib), no imaging library.
png_ink() {
	python3 - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), 'unexpected PNG format'
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, ink, i = bytearray(stride), 0, 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        if line[x] < 245 or line[x + 1] < 245 or line[x + 2] < 245:
            ink += 1
    prev = line
print(ink * 1000 // (w * h))
EOF
}

test_report_html_is_self_contained() {
	html_fixture fx.db
	run "$CFL" report --db fx.db --format html
	expect_rc 0
	expect_out "reports/fix-repeat.html"
	f=reports/fix-repeat.html
	[ -s "$f" ] || fail "no $f"
	grep -q '<table class="results">' "$f" || fail "no results table"
	[ "$(grep -c '<svg' "$f")" -ge 2 ] || fail "fewer than 2 plots (one per metric)"
	grep -q '<tr class="ens"><td>stacking</td>' "$f" || fail "no ensemble row"
	grep -q '<h2>Ensembles</h2>' "$f" || fail "no ensembles section"
	if grep -Eqi '<script|https?:|src=|href=|@import|url\(' "$f"; then
		fail "the page refers to something outside itself"
	fi
	# the table carries the same numbers as the text report
	grep -q '>0.933333<' "$f" || fail "tree's acc mean missing"
}

test_report_html_tune_plots() {
	html_fixture fx.db
	run "$CFL" report fix-tune --db fx.db --format html --out out
	expect_rc 0
	f=out/fix-tune.html
	grep -q 'candidate scores in the order' "$f" || fail "no order plot"
	grep -q 'score against lr' "$f" || fail "no plot against lr"
	grep -q 'score against optimizer' "$f" || fail "no plot against optimizer"
	grep -q '>rmsprop<' "$f" || fail "categories not labelled"
	grep -q '>1e-4<' "$f" || fail "lr not on a log axis"
}

test_report_html_renders_in_chromium() {
	[ -n "$(chromium_bin)" ] || skip "chromium is not installed (make test-deps installs it)"
	html_fixture fx.db
	run "$CFL" report fix-repeat --db fx.db --format html --out out
	expect_rc 0
	page="file://$TMP/out/fix-repeat.html"
	run_chromium --window-size=1000,1400 --screenshot="$TMP/shot.png" \
		"$page" >/dev/null 2>"$TMP/chromium.err" ||
		fail "chromium failed: $(tail -3 "$TMP/chromium.err")"
	[ -s shot.png ] || fail "no screenshot"
	if command -v python3 >/dev/null; then
		ink=$(png_ink shot.png) || fail "cannot read the screenshot"
		# text, table borders and plots: a few percent of the page
		[ "$ink" -ge 20 ] || fail "the page looks blank ($ink per mille inked)"
	else
		[ "$(stat -c %s shot.png)" -gt 20000 ] || fail "screenshot too small: blank?"
	fi
	dom=$(run_chromium --dump-dom "$page" 2>/dev/null) || fail "chromium --dump-dom failed"
	grep -q '<table class="results">' <<<"$dom" || fail "no table in the rendered DOM"
	grep -q '<td>stacking</td>' <<<"$dom" || fail "no stacking row in the DOM"
	grep -q '<svg' <<<"$dom" || fail "no SVG in the DOM"
}

# The check above can fail: an empty page gives a blank screenshot.
test_report_html_blank_page_is_caught() {
	if [ -z "$(chromium_bin)" ] || ! command -v python3 >/dev/null; then
		return 0
	fi
	printf '<!DOCTYPE html><html><body></body></html>\n' >blank.html
	run_chromium --window-size=400,300 --screenshot="$TMP/blank.png" \
		"file://$TMP/blank.html" >/dev/null 2>&1 || fail "chromium failed"
	ink=$(png_ink blank.png) || fail "cannot read the screenshot"
	[ "$ink" -lt 20 ] || fail "a blank page measured $ink per mille"
}

# A real tune run: the search on validation (the refit's seeds left out),
# the plots against the parameter, the refit on test.
test_report_html_of_a_tune_run() {
	"$CFL" tune --help >/dev/null 2>&1 || skip "cfl tune is not built in"
	run "$CFL" tune "$ROOT/datasets/iris.csv" --model linear --num-search 4 \
		--num-repeat 2 --db t.db --name t -q
	expect_rc 0
	run "$CFL" report t --db t.db --format html --out out
	expect_rc 0
	f=out/t.html
	grep -q 'score against l2' "$f" || fail "no plot against l2"
	grep -q 'The best candidate refit, on the test part' "$f" || fail "no refit table"
	# 4 candidates x 2 seeds: every box of the search has 2 points
	[ "$(grep -c '<tr><td class="num">[0-3]</td><td>' "$f")" = 4 ] || fail "not 4 candidates"
	if grep -Eqi '<script|https?:|src=|href=' "$f"; then
		fail "the page refers to something outside itself"
	fi
}

# A repeat run with mean and stacking: the page lists every member (model,
# repeat) once, with the mean's weights and stacking's (on iris's 12
# validation rows stacking keeps the mean's weights and says so); a
# database written before issue 18 (stacking's linear coefficients, one
# line per class score on iris) and one written before stacking stored its
# coefficients still list the members.  The text table is untouched.
test_report_html_lists_ensemble_members() {
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl repeat is not built in"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,baseline \
		--num-repeat 2 --ensemble mean,stacking --db r.db --name m -q
	expect_rc 0
	printed=$out
	run "$CFL" report m --db r.db --format html --out out
	expect_rc 0
	f=out/m.html
	grep -q '<summary>Members: 4</summary>' "$f" || fail "not 4 members"
	grep -q '<th>mean<br>weight</th><th>stacking<br>weight</th>' "$f" ||
		fail "no weight columns"
	for m in linear baseline; do
		for r in 0 1; do
			grep -Eq "<tr><td class=\"num\">[1-4]</td><td>$m</td><td class=\"num\">$r</td>" "$f" ||
				fail "no member $m repeat $r"
		done
	done
	[ "$(grep -c '<td class="num">0.25</td><td class="num">0.25</td></tr>' "$f")" = 4 ] ||
		fail "weights missing: $(grep -A6 '<table class="members">' "$f")"
	grep -q "<dd>4 members; the mean&#39;s: only 12 valid rows, stacking fits on 20 or more" "$f" ||
		grep -q "<dd>4 members; the mean's: only 12 valid rows, stacking fits on 20 or more" "$f" ||
		fail "stacking's fallback not described: $(grep '<dd>4 members' "$f")"
	if grep -Eqi '<script|https?:|src=|href=' "$f"; then
		fail "the page refers to something outside itself"
	fi
	run "$CFL" report m --db r.db
	[ "$out" = "$printed" ] || fail "the text table changed"
	command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
	# the members text of a cfl before issue 18: linear coefficients
	c='0.5 -0.25/1 2/-3 0.125'
	sqlite3 r.db "UPDATE ensembles SET members = 'trials 1,2,3,4; meta linear l2=1 on valid; coefs $c,$c,$c,$c'
		WHERE name = 'stacking'"
	run "$CFL" report m --db r.db --format html --out coefs
	expect_rc 0
	grep -q '<th>mean<br>weight</th><th>stacking<br>coefficients</th>' coefs/m.html ||
		fail "old text: no coefficient column"
	[ "$(grep -Ec '<td class="num">0.25</td><td class="num">class 0: 0.5 -0.25<br>class 1: 1 2<br>class 2: -3 0.125</td></tr>' coefs/m.html)" = 4 ] ||
		fail "old text: coefficients missing: $(grep -A6 '<table class="members">' coefs/m.html)"
	# and of an older cfl still: no coefficients
	sqlite3 r.db "UPDATE ensembles SET members = 'trials 1,2,3,4; meta linear l2=1 on valid'
		WHERE name = 'stacking'"
	run "$CFL" report m --db r.db --format html --out old
	expect_rc 0
	grep -q '<th>mean<br>weight</th><th>stacking</th>' old/m.html ||
		fail "old text: no stacking column"
	[ "$(grep -c '<td class="num">0.25</td><td class="in">&#10003;</td></tr>' old/m.html)" = 4 ] ||
		fail "old text: members not listed"
}

# Two classes and a regression: one stacking weight per member, fitted on
# enough validation rows (30% of train); the linear model, the informative
# member, gets most of the weight, the baseline little.
test_report_html_stacking_coefficient_per_member() {
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl repeat is not built in"
	command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
	for d in breast_cancer diabetes; do
		run "$CFL" repeat "$ROOT/datasets/$d.csv" --models linear,baseline --valid-frac 0.3 \
			--num-repeat 1 --ensemble stacking --db "$d.db" --name "$d" -q
		expect_rc 0
		members=$(sqlite3 "$d.db" "SELECT members FROM ensembles")
		grep -Eq '^trials 1,2; weights [0-9.e-]+,[0-9.e-]+; meta non-negative weights summing to 1 on [0-9]+ valid rows$' <<<"$members" ||
			fail "$d: not one weight per member: $members"
		linear=$(sed 's/.*weights \([^,]*\),.*/\1/' <<<"$members")
		awk -v c="$linear" 'BEGIN { exit !(c > 0.6 && c <= 1) }' ||
			fail "$d: linear's weight $linear"
		run "$CFL" report "$d" --db "$d.db" --format html --out out
		expect_rc 0
		shown=$(LC_ALL=C printf '%.4g' "$linear")
		grep -q "<td>linear</td>.*<td class=\"num\">$shown</td></tr>" "out/$d.html" ||
			fail "$d: linear's weight $shown not on the page"
	done
}
