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
	[ -n "$(chromium_bin)" ] || skip "chromium is not installed"
	command -v python3 >/dev/null || skip "no python3"
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
# database written before stacking was constrained (stacking's linear coefficients, one
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
	grep -q '<details class="members"><summary>' "$f" || fail "members not collapsed"
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
	# the members text of a cfl before constrained stacking: linear coefficients
	c='0.5 -0.25/1 2/-3 0.125'
	sqlite3 r.db "UPDATE ensembles SET members = 'trials 1,2,3,4; meta linear l2=1 on valid; coefs $c,$c,$c,$c'
		WHERE name = 'stacking'"
	run "$CFL" report m --db r.db --format html --out coefs
	expect_rc 0
	grep -q '<th>mean<br>weight</th><th>stacking<br>share</th>' coefs/m.html ||
		fail "old text: no share column"
	# equal coefficients: a share of 0.25 each, the raw ones behind a click
	[ "$(grep -Ec '<td class="num">0.25</td><td class="num">0.25</td></tr>' coefs/m.html)" = 4 ] ||
		fail "old text: shares missing: $(grep -A6 '<table class="members">' coefs/m.html)"
	[ "$(grep -Ec '^<tr><td class="num">[1-4]</td><td class="num">class 0: 0.5 -0.25<br>class 1: 1 2<br>class 2: -3 0.125</td></tr>' coefs/m.html)" = 4 ] ||
		fail "old text: coefficients missing: $(grep -A6 '<table class="coefs">' coefs/m.html)"
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
		shown=$(LC_ALL=C printf '%.6g' "$linear")
		grep -q "<td>linear</td>.*<td class=\"num\">$shown</td></tr>" "out/$d.html" ||
			fail "$d: linear's weight $shown not on the page"
	done
}

# The page shows the command as typed (getopt_long reorders argv: the
# dataset used to move to the end), and the config without empty keys and
# with short floats.
test_report_html_command_as_typed() {
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl has no repeat command"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear --num-repeat 1 \
		--db r.db --name c -q
	expect_rc 0
	run "$CFL" report c --db r.db --format html --out out
	expect_rc 0
	grep -qF "<dt>command</dt><dd>cfl repeat $ROOT/datasets/iris.csv --models linear --num-repeat 1 --db r.db --name c -q</dd>" out/c.html ||
		fail "command not as typed: $(grep '<dt>command' out/c.html)"
	grep -q '^test_frac=0.2$' out/c.html || fail "test_frac not short: $(grep test_frac out/c.html)"
	grep -Eq '^[a-z_.]+=$' out/c.html && fail "an empty config key: $(grep -E '^[a-z_.]+=$' out/c.html)"
	return 0
}

# The failed attempts of a run, in the HTML page: model, repeat, attempt,
# worker, reason.
test_report_html_failures_table() {
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl has no repeat command"
	CFL_TEST_FAULT=error:1 run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear \
		--num-repeat 3 --num-jobs 1 --db f.db --name f -q
	expect_rc 0
	run "$CFL" report f --db f.db --format html --out out
	expect_rc 0
	f=out/f.html
	grep -q '<table class="failures">' "$f" || fail "no failures table"
	[ "$(grep -Ec '^<tr><td>linear</td><td>[0-9a-f]{8}</td><td class="num">1</td><td class="num">-</td><td class="num">[12]</td><td>local:1</td><td>(retried|failed)</td><td>injected model error</td></tr>$' "$f")" = 2 ] ||
		fail "not two failed attempts: $(grep -A4 '<table class="failures">' "$f")"
}

# Page height at 1280 px, measured by Chromium on a copy of the page with
# a script that writes document height into the DOM (the report itself
# has no script).  Prints the height in CSS px.
page_height() {
	sed 's|</body>|<script>document.body.setAttribute("data-h", document.documentElement.scrollHeight)</script></body>|' \
		"$1" >"$TMP/measure.html"
	run_chromium --window-size=1280,900 --dump-dom "file://$TMP/measure.html" 2>/dev/null |
		grep -o 'data-h="[0-9]*"' | tr -dc 0-9
}

# A 60-member run's page is a few screens tall: the members are collapsed.
test_report_html_60_members_fits() {
	if [ -z "$(chromium_bin)" ]; then
		skip "chromium is not installed"
	fi
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl has no repeat command"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,tree,forest \
		--num-repeat 20 --db r.db --name big -q
	expect_rc 0
	run "$CFL" report big --db r.db --format html --out out
	expect_rc 0
	grep -q '<summary>Members: 60</summary>' out/big.html || fail "not 60 members"
	h=$(page_height out/big.html)
	[ -n "$h" ] || fail "no height measured"
	# a screen is about 800 px: three screens at most (it was 4800)
	[ "$h" -le 2400 ] || fail "the page is $h px tall"
	# the members open: the same page grows by their rows (the
	# measurement sees what it should)
	sed 's|<details class="members">|<details open class="members">|' out/big.html >open.html
	h2=$(page_height open.html)
	[ "$h2" -gt $((h + 60 * 15)) ] || fail "opened members: $h2 px vs $h px"
}

# Coloured pixels (the data marks: the charts draw axes, grid and text in
# greys) per mille of boxes "x y w h" (CSS px = PNG px) of a PNG, one line
# per box.
png_ink_boxes() {
	python3 - "$@" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
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
rows, prev, i = [], bytearray(stride), 0
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
    rows.append(bytes(line))
    prev = line
for box in sys.argv[2:]:
    x0, y0, bw, bh = (int(float(v)) for v in box.split())
    ink = tot = 0
    for y in range(max(y0, 0), min(y0 + bh, h)):
        r = rows[y]
        for x in range(max(x0, 0), min(x0 + bw, w)):
            tot += 1
            px = r[x * bpp:x * bpp + 3]
            if max(px) - min(px) > 40:
                ink += 1
    print(ink * 1000 // max(tot, 1))
PY
}

# Screenshot at 1280 px of a tune run with failures: each new plot
# (parameter importance, parallel coordinates, the timeline, the slices)
# is drawn, not a blank area: below its title, its box holds coloured
# marks (bars, lines, points), not only axes and labels.  The
# boxes come from the same page with a script that writes each chart's
# position into the DOM.  A chart with a title and nothing else reads as
# blank (the check can fail).
test_report_html_new_plots_render() {
	if [ -z "$(chromium_bin)" ]; then
		skip "chromium is not installed"
	fi
	command -v python3 >/dev/null || skip "no python3"
	"$CFL" tune --help >/dev/null 2>&1 || skip "cfl has no tune command"
	CFL_TEST_FAULT=error:0:1 run "$CFL" tune "$ROOT/datasets/iris.csv" --model fcnn \
		--num-search 8 --num-repeat 1 --db t.db --name t -q
	expect_rc 0
	run "$CFL" report t --db t.db --format html --out out
	expect_rc 0
	grep -q '<table class="failures">' out/t.html || fail "no failures in this run"
	# a control: a chart of the same size with its title only
	sed 's|</body>|<svg class="chart" width="760" height="200" aria-label="blank control"><rect width="100%" height="100%" fill="#fff"/><text x="8" y="18">blank control</text></svg></body>|' \
		out/t.html >page.html
	sed 's|</body>|<script>document.body.setAttribute("data-boxes", Array.from(document.querySelectorAll("svg")).map(function (s) { var r = s.getBoundingClientRect(); return s.getAttribute("aria-label") + "=" + Math.round(r.left) + " " + Math.round(r.top + window.scrollY + 24) + " " + Math.round(r.width) + " " + Math.round(r.height - 24); }).join("~")); document.body.setAttribute("data-h", document.documentElement.scrollHeight)</script></body>|' \
		page.html >measure.html
	dom=$(run_chromium --window-size=1280,900 --dump-dom "file://$TMP/measure.html" 2>/dev/null) ||
		fail "chromium --dump-dom failed"
	h=$(grep -o 'data-h="[0-9]*"' <<<"$dom" | tr -dc 0-9)
	boxes=$(grep -o 'data-boxes="[^"]*"' <<<"$dom" | sed 's/^data-boxes="//; s/"$//')
	[ -n "$h" ] && [ -n "$boxes" ] || fail "no chart positions: ${dom:0:300}"
	run_chromium --window-size=1280,"$h" --force-device-scale-factor=1 \
		--hide-scrollbars --screenshot="$TMP/page.png" "file://$TMP/measure.html" \
		>/dev/null 2>"$TMP/chromium.err" || fail "chromium failed: $(tail -3 chromium.err)"
	local want seen=0 i=0 all=() inks
	local names=("parameter importance" "parallel coordinates" "trials per worker"
		"score against lr" "score against optimizer" "blank control")
	for want in "${names[@]}"; do
		box=$(tr '~' '\n' <<<"$boxes" | grep -F "$want" | head -1 | sed 's/.*=//')
		[ -n "$box" ] && [ -z "${box//[0-9 ]/}" ] || fail "box $box: no chart '$want' on the page"
		all+=("$box")
	done
	# the screenshot is decoded once for every box (a loaded machine took
	# minutes decoding it once per box)
	inks=($(png_ink_boxes page.png "${all[@]}")) || fail "cannot read the screenshot"
	[ "${#inks[@]}" = "${#names[@]}" ] || fail "${#inks[@]} figures for ${#names[@]} boxes"
	for want in "${names[@]}"; do
		box=${all[$i]} ink=${inks[$i]}
		i=$((i + 1))
		echo "    $want: box $box, $ink per mille inked" >&2
		if [ "$want" = "blank control" ]; then
			[ "$ink" -lt 5 ] || fail "the blank control measured $ink per mille"
		else
			[ "$ink" -ge 2 ] || fail "'$want' looks blank: $ink per mille"
			seen=$((seen + 1))
		fi
	done
	[ "$seen" = 5 ] || fail "$seen charts checked"
}

# An auto run's page: the leaderboard first (its table and the chart of
# out-of-fold against test), the search per family, one importance panel
# per bag (not per candidate searched: 111 panels and 38,700 px before),
# the ensembles' members; a few screens tall in Chromium.
test_report_html_of_an_auto_run() {
	"$CFL" auto --help >/dev/null 2>&1 || skip "cfl has no auto command"
	run "$CFL" auto "$ROOT/datasets/wine.csv" --time-limit 10 --db a.db --name w -q
	expect_rc 0
	n_bags=$(awk '/^rank entry/ {on = 1; next} on && $3 == "bag" {n++} /^$/ {on = 0} END {print n + 0}' <<<"$out")
	[ "$n_bags" -ge 1 ] || fail "no bag: $out"
	run "$CFL" report w --db a.db --format html --out out
	expect_rc 0
	grep -q '<h2>Leaderboard</h2>' out/w.html || fail "no leaderboard"
	grep -q '<table class="leaderboard">' out/w.html || fail "no leaderboard table"
	grep -q 'out of fold (what ranked it) and on test' out/w.html || fail "no leaderboard chart"
	grep -q '<table class="search">' out/w.html || fail "no search table"
	grep -q 'the search: each candidate' out/w.html || fail "no search chart"
	grep -q '<table class="results">' out/w.html && fail "the mixed results table is back"
	panels=$(grep -o 'aria-label="[^"]*impurity importance by input column' out/w.html | wc -l)
	# trees, forests and gbdt store impurity importance: one panel per
	# such bag at most
	[ "$panels" -le "$n_bags" ] || fail "$panels importance panels for $n_bags bags"
	[ "$panels" -ge 1 ] || fail "no importance panel"
	grep -q '<details class="members">' out/w.html || fail "no ensemble members"
	[ -n "$(chromium_bin)" ] || skip "chromium is not installed (the page height is not measured)"
	h=$(page_height out/w.html)
	[ -n "$h" ] || fail "no height measured"
	# a screen is about 900 px: four at most
	[ "$h" -le 3600 ] || fail "the page is $h px tall"
}

# A repeat run without a validation part: its ensembles table has no valid
# column of "nan" (it had one)
test_report_html_no_valid_column_without_validation() {
	"$CFL" repeat --help >/dev/null 2>&1 || skip "cfl has no repeat command"
	run "$CFL" repeat "$ROOT/datasets/iris.csv" --models linear,tree --num-repeat 2 \
		--db r.db --name r -q
	expect_rc 0
	run "$CFL" report r --db r.db --format html --out out
	expect_rc 0
	sed -n '/<table class="ensembles">/,/<\/table>/p' out/r.html >ens.html
	grep -q '<td>mean</td>' ens.html || fail "no ensembles table: $(cat ens.html)"
	grep -q '>nan<' ens.html && fail "nan in the ensembles table: $(cat ens.html)"
	grep -q '<th>valid</th>' ens.html && fail "a valid column without a validation part"
	grep -q 'no validation part' out/r.html || fail "the page does not say why"
}
