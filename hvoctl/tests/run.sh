#!/bin/sh
# Runs each cmocka test binary given as argument, shows its normal output,
# and ends with exactly one summary line "hvoctl: N passed, N failed".
# A binary that crashes or exits non-zero without a cmocka summary counts
# as one failed test.
passed=0
failed=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
for t in "$@"; do
	"$t" >"$tmp" 2>&1
	rc=$?
	cat "$tmp"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$tmp" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' "$tmp" | tail -n 1)
	[ -n "$p" ] || p=0
	[ -n "$f" ] || f=0
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "run.sh: $t exited with status $rc without a cmocka failure summary" >&2
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "hvoctl: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
