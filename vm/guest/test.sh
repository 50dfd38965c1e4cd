#!/bin/sh
# Guest side of `vm/run test`, on either tier. First the tests that load
# som.ko themselves (/som/bin/*_load_test, run with the module not loaded);
# on the debug tier then the pool's KUnit suite; then load som.ko with the
# reserved range, run every other /som/bin/*_test one after the other,
# and unload; on the debug tier last a kmemleak scan. The host counts the
# TAP lines ("ok N name", "not ok N name", "... # SKIP") that the tests
# and this script print. A non-zero exit status with no failed line is
# counted as a failure too.
#
# Every test binary must run whole: /som/manifest (tests/manifest) names
# each binary this tier runs with the number of results it plans; after
# each binary one line says whether it printed that many and exited
# cleanly, and a binary the manifest names that is not here fails.

# shellcheck source=vm/guest/lib/tap.sh
. /som/guest/lib/tap.sh

# A failure for each binary of the manifest that is not in /som/bin:
# missing_binaries load (the load tests) or missing_binaries GLOB (the
# others that GLOB selects).
missing_binaries() {
	for name in $(manifest_names); do
		# shellcheck disable=SC2254  # the glob is the point
		case $1:$name in
		*:kunit.*) continue ;;
		load:*_load_test) ;;
		load:* | *:*_load_test) continue ;;
		*) case $name in $1) ;; *) continue ;; esac ;;
		esac
		[ -x "/som/bin/$name" ] && continue
		tap 1 "$name ran whole: not in the guest (/som/bin/$name missing)"
		status=1
	done
}

# bytes SIZE: 2G, 512M, 4096 -> bytes; empty if SIZE is none of those.
bytes() {
	case $1 in
	*[!0-9GM]* | "" | [GM]*) ;;
	*G) echo $((${1%G} << 30)) ;;
	*M) echo $((${1%M} << 20)) ;;
	*[0-9]) echo "$1" ;;
	esac
}

# The KUnit suites of som_pool_kunit.ko: the pool's over the reserved
# range, with som.ko loaded but not using it, the region table's and the
# ages'. One TAP line per case from each suite's debugfs results, and a
# failure unless every planned case reported.
kunit_suite() {
	suite=$1
	results=/sys/kernel/debug/kunit/$suite/results
	planned=
	: >/tmp/kunit.tap
	if [ -r "$results" ]; then
		sed 's/^/# kunit: /' "$results"
		grep -E '^[[:space:]]+(not )?ok [0-9]+ ' "$results" |
			sed -E 's/^[[:space:]]+//' >/tmp/kunit.tap
		planned=$(grep -E '^[[:space:]]+1\.\.[0-9]+' "$results" |
			  sed -E 's/.*1\.\.//' | head -n 1)
	fi
	while read -r kind rest; do
		[ "$kind" = not ] && rest=${rest#ok }
		num=${rest%% *}
		name=${rest#"$num "}
		case "$kind $name" in
		*"# SKIP"*) n=$((n + 1)); echo "ok $n kunit.$suite.$name" ;;
		"not "*) tap 1 "kunit.$suite.$name" ;;
		*) tap 0 "kunit.$suite.$name" ;;
		esac
	done </tmp/kunit.tap
	ran_whole "kunit.$suite" "$planned" "$(wc -l </tmp/kunit.tap)" ||
		status=1
}

kunit_pool() {
	base=$(bytes "${SOM_RANGES#*@}")
	size=$(bytes "${SOM_RANGES%@*}")
	if [ -z "$base" ] || [ -z "$size" ]; then
		tap 1 "kunit.som_pool (cannot use SOM_RANGES=$SOM_RANGES)"
		return
	fi
	insmod /som/som.ko || { tap 1 kunit.som_pool.load; return; }
	insmod /som/som_pool_kunit.ko base="$base" chunks=$((size >> 30))
	tap $? kunit.som_pool.load
	kunit_suite som_pool
	kunit_suite som_table
	kunit_suite som_ages
	rmmod som_pool_kunit
	rmmod som
	tap $? kunit.som_pool.unload
}

# Objects som leaked: note the jiffies before som is first loaded, then,
# at the end, wait out kmemleak's 5 s minimum age and scan twice (an
# object is reported once it stayed unreferenced and unchanged across a
# scan) and count the objects allocated since the note. What the boot
# leaked (allocated before it) is listed and not counted: no scan is
# spent on it up front (a scan of 16 GiB takes over a minute under TCG).
# The result lines never say "kmemleak": the host fails any log line
# that does, as the kernel's own kmemleak warnings do.
leak_scan_start() {
	km=/sys/kernel/debug/kmemleak
	leak_since=$(awk '/^jiffies: / { print $2; exit }' /proc/timer_list)
	[ -n "$leak_since" ]
	tap $? "leak scan: armed at jiffies $leak_since"
}

leak_scan_end() {
	sleep 6
	if ! { echo scan >"$km" && echo scan >"$km"; }; then
		tap 1 "leak scan: scanning refused (the detector disabled itself?)"
		return
	fi
	# Each report whole into one of the two files, by its allocation's
	# jiffies (its "  comm ..., jiffies N" line).
	if ! awk -v since="${leak_since:-0}" '
		function flush(  i, f) {
			f = j >= since ? "/tmp/leaks.txt" : "/tmp/leaks-boot.txt"
			for (i = 0; i < n; i++)
				print obj[i] >f
			n = 0
		}
		/^unreferenced object / && n { flush() }
		{ obj[n++] = $0 }
		/^  comm / {
			j = since
			if (match($0, /jiffies [0-9]+/))
				j = substr($0, RSTART + 8, RLENGTH - 8) + 0
		}
		END { if (n) flush() }' "$km"; then
		tap 1 "leak scan: its report could not be read"
		return
	fi
	if [ -s /tmp/leaks-boot.txt ]; then
		echo "# not counted, allocated before the tests: $(grep -c '^unreferenced object' /tmp/leaks-boot.txt) objects, by task:"
		grep -A1 '^unreferenced object' /tmp/leaks-boot.txt |
			sed -n 's/^  comm \(".*"\), pid .*/\1/p' | sort | uniq -c |
			sed 's/^/# boot: /'
	fi
	if [ -s /tmp/leaks.txt ]; then
		sed 's/^/# leak: /' /tmp/leaks.txt
		tap 1 "leak scan: $(grep -c '^unreferenced object' /tmp/leaks.txt) leaked objects"
	else
		tap 0 "leak scan: no leaks"
	fi
}

# The legacy pmem range (memmap=SIZE!START) as the device DAX instance
# dax0.0, 1 GiB aligned, for som_source_test: what an administrator does
# with ndctl on a machine with persistent memory.
make_dax() {
	[ -n "$SOM_PMEM" ] || return 0
	ndctl create-namespace --force --reconfig=namespace0.0 --mode=devdax \
		--align=1G >/tmp/ndctl.out 2>&1
	rc=$?
	sed 's/^/# ndctl: /' /tmp/ndctl.out
	[ -e /dev/dax0.0 ] || rc=1
	tap "$rc" "device DAX dax0.0 from legacy pmem $SOM_PMEM"
}

# The coverage of som.ko (debug tier, where it is built with gcov): the
# kernel keeps a module's counters across unloads (gcov_persist) and adds
# every load's to them, so after the last unload they hold the whole
# suite. Each .gcda file goes to the host as hex between marker lines (hex
# cannot spell a word the host's log scan fails on; base64 can), with its
# size; vm/lib/coverage.sh turns them into the report. Kernel messages
# would break the hex lines: the console is quiet meanwhile, and what the
# kernel logged is printed after.
coverage_send() {
	gcda=$(find /sys/kernel/debug/gcov -name vma.gcda 2>/dev/null | head -n 1)
	if [ -z "$gcda" ]; then
		tap 1 "coverage: no gcov counters of som.ko in /sys/kernel/debug/gcov"
		return
	fi
	files=0
	dmesg -c >/dev/null
	read -r level rest </proc/sys/kernel/printk
	echo 1 >/proc/sys/kernel/printk
	for f in "${gcda%/*}"/*.gcda; do
		cat "$f" >/tmp/cov.gcda
		echo "SOM-GCOV-FILE ${f##*/} $(wc -c </tmp/cov.gcda)"
		od -An -v -tx1 /tmp/cov.gcda | tr -d ' '
		files=$((files + 1))
	done
	echo "SOM-GCOV-END"
	echo "$level" >/proc/sys/kernel/printk
	dmesg
	tap 0 "coverage: counters of $files files of som.ko sent"
}

# The stock tier runs the time-boxed race and stress tests for about half
# their default time (som_tier_test's stress, 10 s, runs 4 s too): what
# they race is the debug tier's to check
# (KASAN, lockdep, DEBUG_VM), and it runs them whole; here they check the
# data. Values from SOM_GUEST_ENV stay.
if [ "$SOM_TIER" = stock ]; then
	: "${SOM_RACE_SECONDS:=5}" "${SOM_MIGRATE_SECONDS:=10}"
	: "${SOM_AGE_RACE_SECONDS:=10}" "${SOM_STRESS_SECONDS:=4}"
	export SOM_RACE_SECONDS SOM_MIGRATE_SECONDS SOM_AGE_RACE_SECONDS \
		SOM_STRESS_SECONDS
fi

status=0
echo "# tier: $SOM_TIER ($(uname -r))"
echo "# NUMA: $(ls -d /sys/devices/system/node/node* | wc -l) nodes; 1 GiB hugetlb pages free: $(cat /sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages 2>/dev/null); ZONE_MOVABLE MiB per node: $(awk '/zone +Movable/ { m = 1 } m && /present/ { printf "%d ", $2 / 256; m = 0 }' /proc/zoneinfo)"
if [ "$SOM_TIER" = debug ]; then
	[ -w /sys/kernel/debug/kmemleak ] && leak_scan_start ||
		tap 1 "leak scan: no leak detector on the debug tier"
fi
missing_binaries load
for t in /som/bin/*_load_test; do
	[ -x "$t" ] || continue
	run_test "$t" || status=1
done
# A load test that failed half-way may have left som.ko loaded.
rmmod som 2>/dev/null

if [ "$SOM_TIER" = debug ]; then
	if [ -f /som/som_pool_kunit.ko ]; then
		kunit_pool
	else
		tap 1 "kunit.som_pool ran whole: som_pool_kunit.ko missing on the debug tier"
		status=1
	fi
fi

make_dax

insmod /som/som.ko ranges="${SOM_RANGES:-2G@4G}"
rc=$?
tap "$rc" module_load
[ "$rc" -eq 0 ] || exit 1

# SOM_TEST_ONLY=<glob> (through SOM_GUEST_ENV) runs only the matching
# tests, e.g. SOM_TEST_ONLY=som_source_test while working on one; the
# manifest's other binaries are then not looked for. A glob that selects
# nothing (no binary, no program under somrun) fails.
only=${SOM_TEST_ONLY:-*}
selected=0
for name in $(manifest_names) /som/bin/*_test somrun_memcached somrun_redis somrun_stress_ng; do
	# shellcheck disable=SC2254  # the glob is the point
	case ${name##*/} in *_load_test | *_mce_test | kunit.*) ;; $only) selected=1 ;; esac
done
if [ "$selected" -ne 1 ]; then
	tap 1 "SOM_TEST_ONLY=$only selects no test"
	status=1
fi
missing_binaries "$only"
for t in /som/bin/*_test; do
	# The machine-check tests run in a guest of their own (mce.sh).
	case "$t" in *_load_test | *_mce_test) continue ;; esac
	# shellcheck disable=SC2254  # the glob is the point
	case "${t##*/}" in $only) ;; *) continue ;; esac
	[ -x "$t" ] || continue
	run_test "$t" || status=1
done

# Real programs under somrun (vm/guest/apps.sh).
. /som/guest/apps.sh

rmmod som
rc=$?
tap "$rc" module_unload
[ "$rc" -eq 0 ] || status=1

[ -n "$km" ] && leak_scan_end
[ -d /sys/kernel/debug/gcov ] && coverage_send
exit "$status"
