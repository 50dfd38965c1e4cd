# shellcheck shell=bash
# Count the TAP results in a guest console log, and judge its skips.
#
# Counted: lines that, after dropping carriage returns, start at column 0
# with "ok N " or "not ok N " (N a number): kselftest-harness top-level
# results and the guest scripts' own lines. Indented or "# "-prefixed lines
# (subtests, diagnostics, "# Totals:") are not counted.
#   ok N name # SKIP reason   -> skipped
#   ok N name ...             -> passed (including "# XFAIL")
#   not ok N name ...         -> failed, whatever follows; the name gets
#                                the first two "# FILE.c:LINE:" lines of
#                                the test (its failed assertions), so that
#                                a FAILED line says why
#
# A skip is for a feature the machine lacks, and each tier's are listed in
# tests/expected-skips (SOM_EXPECTED_SKIPS): any other skip fails the run.

SOM_EXPECTED_SKIPS=${SOM_EXPECTED_SKIPS:-$SOM_TESTS_DIR/expected-skips}

# som_count_results LOG: sets SOM_PASSED, SOM_FAILED, SOM_SKIPPED and the
# arrays SOM_FAILED_NAMES and SOM_SKIPS ("name<TAB>reason" each).
som_count_results() {
	local log=$1 kind rest
	SOM_PASSED=0 SOM_FAILED=0 SOM_SKIPPED=0
	SOM_FAILED_NAMES=() SOM_SKIPS=()
	while IFS=' ' read -r kind rest; do
		case $kind in
		pass) SOM_PASSED=$((SOM_PASSED + 1)) ;;
		skip) SOM_SKIPPED=$((SOM_SKIPPED + 1)); SOM_SKIPS+=("$rest") ;;
		fail) SOM_FAILED=$((SOM_FAILED + 1)); SOM_FAILED_NAMES+=("$rest") ;;
		esac
	done < <(tr -d '\r' <"$log" | awk '
		/^# +RUN / { why = ""; nwhy = 0 }
		/^# [A-Za-z0-9_.-]+\.c:[0-9]+:/ && nwhy < 2 {
			d = $0
			sub(/^# /, "", d)
			why = why (nwhy++ ? " / " : "") substr(d, 1, 320)
		}
		/^(not )?ok [0-9]+( |$)/ {
			failed = /^not /
			line = $0
			sub(/^(not )?ok [0-9]+ ?/, "", line)
			if (failed) {
				print "fail", line (why == "" ? "" : " [" why "]")
				why = ""; nwhy = 0
			} else if (match(line, /[ \t]*#[ \t]*SKIP[ \t]*/)) {
				name = substr(line, 1, RSTART - 1)
				print "skip", name "\t" substr(line, RSTART + RLENGTH)
			} else {
				print "pass", line
			}
		}')
}

# som_check_skips TIER: print each skip of SOM_SKIPS with its reason, and
# add a failure for each that SOM_EXPECTED_SKIPS does not list for TIER.
# Its lines are "TIER NAME REASON...", TIER stock, debug, all or
# stock-SERIES (the stock tier on that kernel; TIER stock-7.3 also takes
# the plain stock lines), NAME a shell glob matched against the result's
# name.
som_check_skips() {
	local tier=$1 skip name reason t pattern rest expected
	for skip in "${SOM_SKIPS[@]}"; do
		name=${skip%%$'\t'*} reason=${skip#*$'\t'}
		expected=
		while read -r t pattern rest; do
			[[ -n $t && $t != \#* ]] || continue
			[[ $t == "$tier" || $t == all || $tier == "$t"-* ]] ||
				continue
			# shellcheck disable=SC2053  # the pattern is a glob
			if [[ $name == $pattern ]]; then
				expected=1
				break
			fi
		done <"$SOM_EXPECTED_SKIPS"
		if [[ -n $expected ]]; then
			echo "skipped (expected): $name: $reason"
		else
			echo "skipped (NOT expected): $name: $reason"
			som_add_failure "unexpected skip: $name: $reason (not in ${SOM_EXPECTED_SKIPS#"$REPO"/} for the $tier tier)"
		fi
	done
}

# An extra result computed on the host (e.g. "guest log clean").
som_add_failure() {
	SOM_FAILED=$((SOM_FAILED + 1))
	SOM_FAILED_NAMES+=("$1")
}
