#!/usr/bin/env bash
# CLI test runner: sources every tests/cli/test_*.sh; each defines functions
# named test_*, run here one at a time in a subshell, in a fresh temp folder,
# under a time limit.  Ends with "N passed, N failed, N skipped".
#
# Helpers for tests: run CMD... (captures $out, $err, $rc), expect_rc N,
# expect_out TEXT, expect_err TEXT, fail MSG, skip WHY (the test cannot run
# here: counted as skipped, not passed).  $CFL is the binary, $ROOT the
# repository.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CFL=${CFL:-./cfl}
case "$CFL" in /*) ;; *) CFL="$ROOT/${CFL#./}" ;; esac
export ROOT CFL
FILTER=${1:-}
passed=0 failed=0 skipped=0
SKIP_EXIT=77	# a test's exit code for "skipped" (automake's)

run() {
	out=$("$@" 2>"$TMP/.err"); rc=$?
	err=$(cat "$TMP/.err")
}
fail() { echo "    $*" >&2; exit 1; }
skip() { echo "    skipped: $*" >&2; exit "$SKIP_EXIT"; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit $rc, expected $1; stderr: ${err:0:400}"; }
expect_out() { grep -qF -- "$1" <<<"$out" || fail "stdout lacks '$1': ${out:0:400}"; }
expect_err() { grep -qF -- "$1" <<<"$err" || fail "stderr lacks '$1': ${err:0:400}"; }
export SKIP_EXIT
export -f run fail skip expect_rc expect_out expect_err

for f in "$ROOT"/tests/cli/test_*.sh; do
	[ -e "$f" ] || continue
	# shellcheck source=/dev/null
	source "$f"
done

# Every function, in a file each test's shell sources: all of them in one
# argument would pass the kernel's limit on one argument's length (128 KiB).
FUNCS=$(mktemp)
trap 'rm -f "$FUNCS"' EXIT
declare -f >"$FUNCS"
export FUNCS

for t in $(declare -F | awk '{print $3}' | grep '^test_' | sort); do
	[ -n "$FILTER" ] && [[ "$t" != *"$FILTER"* ]] && continue
	TMP=$(mktemp -d)
	(cd "$TMP" && export TMP && timeout -k 5 300 bash -c ". \"\$FUNCS\"; $t")
	case $? in
	0) passed=$((passed + 1)); echo "  ok   $t" ;;
	"$SKIP_EXIT") skipped=$((skipped + 1)); echo "  skip $t" ;;
	*) failed=$((failed + 1)); echo "  FAIL $t" ;;
	esac
	rm -rf "$TMP"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
