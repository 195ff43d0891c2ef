# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0
#
# tap.sh - the one result printer of hvokit's test suites, sourced by each
# (lint-shell, kcheck, kpkgcheck, packaging/tests/check, the nested
# acceptance test; hvoctl's cmocka tests print TAP themselves).
#
# Results are TAP lines: "ok N - NAME" and "not ok N - NAME: expected X,
# got Y", so prove(1) or any TAP consumer can read a suite's log.  The last
# lines are the plan "1..N" and "SUITE: N passed, N failed", the line that
# scripts/check sums.  A suite may define tap_record NAME OK [EXPECTED GOT]
# to keep its own record of each result (the acceptance report does).
#
#   ok NAME                      a passed check
#   notok NAME EXPECTED GOT      a failed one
#   check NAME EXPECTED GOT      ok when EXPECTED = GOT ("NAME (GOT)")
#   tap_summary SUITE            plan and summary; status 0 iff none failed

tap_pass=0 tap_fail=0

ok() {
	tap_pass=$((tap_pass + 1))
	echo "ok $((tap_pass + tap_fail)) - $1"
	if command -v tap_record > /dev/null 2>&1; then tap_record "$1" ok; fi
}

notok() {
	tap_fail=$((tap_fail + 1))
	echo "not ok $((tap_pass + tap_fail)) - $1: expected $2, got $3"
	if command -v tap_record > /dev/null 2>&1; then tap_record "$1" "not ok" "$2" "$3"; fi
}

check() {
	if [ "$2" = "$3" ]; then ok "$1 ($3)"; else notok "$1" "$2" "$3"; fi
}

tap_summary() {
	echo "1..$((tap_pass + tap_fail))"
	echo "$1: $tap_pass passed, $tap_fail failed"
	[ "$tap_fail" = 0 ]
}
