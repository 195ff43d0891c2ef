#!/bin/sh
# Runs each cmocka test binary given as argument with TAP output
# (CMOCKA_MESSAGE_OUTPUT=TAP, the format of every hvokit suite, see
# scripts/tap.sh), shows it, and ends with exactly one summary line
# "hvoctl: N passed, N failed".  Tests a binary announced in its plan
# ("1..N") but never reported (a crash) count as failed, and so does a
# binary that exits non-zero without any failed test.
passed=0
failed=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
for t in "$@"; do
	CMOCKA_MESSAGE_OUTPUT=TAP "$t" > "$tmp" 2>&1
	rc=$?
	echo "# ${t##*/}"
	cat "$tmp"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp" | head -n 1)
	p=$(grep -c '^ok ' "$tmp")
	f=$(grep -c '^not ok ' "$tmp")
	if [ -n "$plan" ] && [ $((p + f)) -lt "$plan" ]; then
		echo "run.sh: ${t##*/}: $((plan - p - f)) of $plan tests never reported (crash?)" >&2
		f=$((plan - p))
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "run.sh: ${t##*/} exited with status $rc without a failed test" >&2
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "hvoctl: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
