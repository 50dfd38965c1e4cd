# The number of results a kselftest binary plans ("1..N"), from what
# `BINARY -l` lists: per fixture, its tests times its variants (or 1).
# The columns are those of test_harness_list_tests() in
# kselftest_harness.h: fixture (20 wide), variant (25), test.
#
#   awk -v name=NAME -f plans.awk <listing    prints "NAME N"

/^# FIXTURE/ || /^---/ { next }
{
	f = substr($0, 1, 20); v = substr($0, 22, 25); t = substr($0, 48)
	gsub(/ /, "", f); gsub(/ /, "", v); gsub(/ /, "", t)
	if (f != "") {
		total += (nv ? nv : 1) * nt
		nv = nt = 0
	}
	nv += v != ""
	nt += t != ""
}
END { print name, total + (nv ? nv : 1) * nt }
