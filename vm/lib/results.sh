# shellcheck shell=bash
# Count the TAP results in a guest console log.
#
# Counted: lines that, after dropping carriage returns, start at column 0
# with "ok N " or "not ok N " (N a number): kselftest-harness top-level
# results and the guest scripts' own lines. Indented or "# "-prefixed lines
# (subtests, diagnostics, "# Totals:") are not counted.
#   ok N name # SKIP reason   -> skipped
#   ok N name ...             -> passed (including "# XFAIL")
#   not ok N name ...         -> failed (a "# SKIP" there is still a skip)

# som_count_results LOG: sets SOM_PASSED, SOM_FAILED, SOM_SKIPPED and the
# array SOM_FAILED_NAMES.
som_count_results() {
	local log=$1 kind rest
	SOM_PASSED=0 SOM_FAILED=0 SOM_SKIPPED=0
	SOM_FAILED_NAMES=()
	while IFS=' ' read -r kind rest; do
		case $kind in
		pass) SOM_PASSED=$((SOM_PASSED + 1)) ;;
		skip) SOM_SKIPPED=$((SOM_SKIPPED + 1)) ;;
		fail) SOM_FAILED=$((SOM_FAILED + 1)); SOM_FAILED_NAMES+=("$rest") ;;
		esac
	done < <(tr -d '\r' <"$log" | awk '
		/^(not )?ok [0-9]+( |$)/ {
			failed = /^not /
			line = $0
			sub(/^(not )?ok [0-9]+ ?/, "", line)
			if (line ~ /#[ \t]*SKIP/)  print "skip", line
			else if (failed)           print "fail", line
			else                       print "pass", line
		}')
}

# An extra result computed on the host (e.g. "guest log clean").
som_add_failure() {
	SOM_FAILED=$((SOM_FAILED + 1))
	SOM_FAILED_NAMES+=("$1")
}
