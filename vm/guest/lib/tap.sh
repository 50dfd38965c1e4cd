# shellcheck shell=sh
# What the guest scripts that run test binaries share (test.sh, mce.sh):
# TAP result lines, the plans in /som/manifest (tests/manifest), and
# running one binary with a check that it ran whole.

n=0
tap() { # tap STATUS NAME
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
}

manifest=/som/manifest
export SOM_KO=/som/som.ko
# The manifest's tier column to read: the boot's tier, or what a guest
# script sets (mce.sh: "mce").
manifest_tier=$SOM_TIER

# The plan tests/manifest gives NAME on this tier; empty if none.
manifest_plan() {
	awk -v name="$1" -v tier="$manifest_tier" '
		!/^#/ && NF >= 3 && $2 == name && ($1 == tier || $1 == "all") {
			print $3; exit
		}' "$manifest"
}

# The binaries (or KUnit suites) tests/manifest names for this tier.
manifest_names() {
	awk -v tier="$manifest_tier" '
		!/^#/ && NF >= 3 && ($1 == tier || $1 == "all") { print $2 }
	' "$manifest"
}

# ran_whole NAME PLANNED REPORTED [PROBLEM]: the result that NAME ran
# whole: it planned what tests/manifest says and reported that many
# results, and PROBLEM (how it ended, if badly) is empty. Fails if not.
ran_whole() {
	want=$(manifest_plan "$1")
	why=$4
	if [ -z "$want" ]; then
		why="${why:+$why; }not in tests/manifest (it plans ${2:-nothing})"
	elif [ -z "$2" ]; then
		why="${why:+$why; }printed no plan (tests/manifest: $want)"
	elif [ "$2" -ne "$want" ]; then
		why="${why:+$why; }plans $2 results, tests/manifest says $want"
	fi
	if [ -n "$2" ] && [ "$3" -lt "$2" ]; then
		why="${why:+$why; }reported $3 of $2 planned results"
	fi
	if [ -n "$why" ]; then
		tap 1 "$1 ran whole: $why"
		return 1
	else
		tap 0 "$1 ran whole: $3 of $2 planned results"
	fi
}

# run_test PATH: run one test binary, its output on the console, with a
# "# time" line after each of its results (seconds since the result
# before, or since the binary started), and in /tmp/test.out; then the
# result of ran_whole.
run_test() {
	name=${1##*/}
	echo "# ==== $1"
	: >/tmp/test.out
	{ "$1"; echo $? >/tmp/test.rc; } 2>&1 | awk '
		function now(  line, f) {
			getline line <"/proc/uptime"
			close("/proc/uptime")
			split(line, f, " ")
			return f[1]
		}
		BEGIN { start = last = now() }
		{ print; print >"/tmp/test.out"; fflush() }
		/^#  RUN / { last = now() }
		/^(not )?ok [0-9]+ / {
			t = now()
			printf "# time %.1f s\n", t - last
			last = t
			fflush()
		}
		END { printf "# time %.1f s for the whole binary\n", now() - start }'
	rc=$(cat /tmp/test.rc 2>/dev/null)
	planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' /tmp/test.out | head -n 1)
	reported=$(grep -cE '^(not )?ok [0-9]+( |$)' /tmp/test.out)
	failed=$(grep -cE '^not ok [0-9]+( |$)' /tmp/test.out)
	rm -f /tmp/test.out /tmp/test.rc
	problem=
	if [ -z "$rc" ]; then
		problem="no exit status"
	elif [ "$rc" -gt 128 ]; then
		problem="killed by signal $((rc - 128))"
	elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		problem="exit status $rc with no failed result"
	fi
	ran_whole "$name" "$planned" "$reported" "$problem" &&
		[ "$rc" -eq 0 ]
}

