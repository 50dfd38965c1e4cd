#!/bin/sh
# Real programs under somrun, sourced by test.sh after the selftests (som.ko
# loaded, `tap` defined): Debian's memcached with a multi-GiB cache, filled
# and read back by Debian's memaslap (libmemcached-tools), and stress-ng's
# vm, mmap and madvise stressors. Each checks its own results, that its
# memory came from the pool, and that the pool got every byte back.
#
# SOM_TEST_ONLY selects them as somrun_memcached and somrun_stress_ng.
# Knobs (SOM_GUEST_ENV): SOM_MEMCACHED_MB (cache size, default 2048),
# SOM_MEMCACHED_OPS (memaslap operations, default 32000 of 128 KiB values),
# SOM_STRESS_NG_SECONDS (per stressor, default 15).

sysfs=/sys/kernel/mm/som

pool_used() {
	echo $(($(cat $sysfs/total_bytes) - $(cat $sysfs/free_bytes) - $(cat $sysfs/reserved_bytes)))
}

# field NAME FILE: the value of NAME=... in a summary line
field() {
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2" | tail -n 1
}

app_memcached() {
	if [ ! -e /proc/net/tcp ]; then
		# The debug tier's kernel is built without networking.
		n=$((n + 1))
		echo "ok $n somrun_memcached # SKIP no TCP/IP in this kernel"
		return
	fi
	mb=${SOM_MEMCACHED_MB:-2048}
	ops=${SOM_MEMCACHED_OPS:-32000}
	# The boot range holds 2 GiB; the spare range makes room for the
	# cache and memcached's other large blocks.
	spare=${SOM_SPARE_RANGES%% *}
	added=
	if [ -n "$spare" ] &&
	   somctl add reserved "$spare" --name memcached-spare >/dev/null; then
		added=1
	fi
	free0=$(cat $sysfs/free_bytes)
	rm -f /tmp/memcached.summary
	memcached_start "$mb" somrun --summary=/tmp/memcached.summary --
	up=$?
	pid=$memcached_pid
	tap $up "memcached -m $mb -L started under somrun"
	if [ $up -ne 0 ]; then
		sed 's/^/# memcached: /' /tmp/memcached.log
		[ -z "$added" ] || somctl remove memcached-spare
		return
	fi

	cat >/tmp/memaslap.cfg <<-CFG
	key
	64 64 1
	value
	131072 131072 1
	cmd
	0 0.7
	1 0.3
	CFG
	start=$(date +%s)
	memcaslap -s 127.0.0.1:11211 -T 2 -c 4 -w 5k -x "$ops" -v 1.0 \
		-F /tmp/memaslap.cfg >/tmp/memaslap.out 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	grep -E 'cmd_get|cmd_set|get_misses|verify|Run time' /tmp/memaslap.out |
		sed 's/^/# memaslap: /'
	failed=$(sed -n 's/^verify_failed: *//p' /tmp/memaslap.out)
	gets=$(sed -n 's/^cmd_get: *//p' /tmp/memaslap.out)
	misses=$(sed -n 's/^get_misses: *//p' /tmp/memaslap.out)
	[ $rc -eq 0 ] && [ "$failed" = 0 ] && [ "${gets:-0}" -gt "${misses:-0}" ]
	tap $? "memaslap: $ops operations in ${secs}s, $((gets - misses)) values read back and verified, ${failed:-?} wrong"

	memcstat --servers=127.0.0.1:11211 >/tmp/memcstat.out 2>&1
	bytes=$(sed -n 's/^[[:space:]]*bytes: *//p' /tmp/memcstat.out)
	items=$(sed -n 's/^[[:space:]]*curr_items: *//p' /tmp/memcstat.out)
	evictions=$(sed -n 's/^[[:space:]]*evictions: *//p' /tmp/memcstat.out)
	used=$(pool_used)
	rss=$(awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$pid/status")
	echo "# memcached: $items items, $bytes bytes of items"
	echo "# memcached: som pool used $used bytes; ordinary resident (VmRSS) $rss bytes; som share of its memory $((100 * used / (used + rss)))%"
	# Filled: memcached evicted items to make room, and they live in som
	# memory (the process has less ordinary memory than its items).
	[ "${evictions:-0}" -gt 0 ] && [ "$used" -ge "$bytes" ] &&
		[ "$rss" -lt "$bytes" ]
	tap $? "memcached's cache filled ($evictions evictions) and on som: $bytes bytes of items, $used bytes of som"

	# What the administrator sees meanwhile.
	somctl ps >/tmp/somctl-ps.out 2>&1
	somctl status >>/tmp/somctl-ps.out 2>&1
	sed 's/^/# somctl: /' /tmp/somctl-ps.out
	grep -qE "^ *$pid memcached +1 +2 GiB +2 GiB +2 +0 +0$" /tmp/somctl-ps.out
	tap $? "somctl ps shows memcached with 2 GiB on two 1 GiB entries"

	memcached_stop
	rc=$?
	cat /tmp/memcached.summary | sed 's/^/# /'
	echo "# memcached: mapping sizes at exit: $(field entries_1g /tmp/memcached.summary) x 1 GiB, $(field entries_2m /tmp/memcached.summary) x 2 MiB, $(field entries_4k /tmp/memcached.summary) x 4 KiB"
	[ $rc -eq 0 ] && [ "$(cat $sysfs/free_bytes)" -eq "$free0" ] &&
		[ "$(cat $sysfs/reserved_bytes)" -eq 0 ]
	tap $? "memcached exited ($rc) and the pool is back to $free0 free bytes ($(cat $sysfs/free_bytes))"
	if [ -n "$added" ]; then
		somctl remove memcached-spare
		tap $? "spare range removed after memcached"
	fi
}

# What the processes named $1 are waiting for, when a run hangs.
stuck() {
	for p in $(pidof "$1"); do
		echo "# stuck: $p $(cat /proc/$p/wchan 2>/dev/null)"
		sed "s/^/# stuck: $p /" /proc/$p/stack 2>/dev/null
	done
}

# Is process $1 running (not gone, and not a zombie waiting for `wait`)?
running() {
	[ -r "/proc/$1/status" ] && ! grep -q '^State:.*Z' "/proc/$1/status"
}

# The most pool memory in use while process $1 runs, every second.
peak_while() {
	peak=0
	while running "$1"; do
		u=$(pool_used)
		[ "$u" -gt "$peak" ] && peak=$u
		sleep 1
	done
	echo "$peak"
}

# An unprivileged user in the group som, which owns /dev/som the way the
# udev rule installed with som sets it up (root:som 0660).
som_user() {
	chgrp som /dev/som && chmod 0660 /dev/som
}

# stress-ng runs as that user: as root, its madvise stressor poisons pages
# (MADV_HWPOISON) and is killed by the SIGBUS that follows, with or without
# som. Its workers leave with _exit(), so the shim's summary would speak
# only for the parent; the pool's fault counters and usage show the
# workers' som memory.
app_stress_ng() {
	secs=${SOM_STRESS_NG_SECONDS:-15}
	som_user
	for s in vm mmap madvise; do
		free0=$(cat $sysfs/free_bytes)
		faults0=$(($(cat $sysfs/faults_pud) + $(cat $sysfs/faults_pmd) + $(cat $sysfs/faults_pte)))
		case $s in
		vm) args="--vm 2 --vm-bytes 256M --vm-keep --verify" ;;
		# 16 MiB rounds: on the debug tier a 64 MiB round (ordinary
		# mappings included, each page checked) outlasts 15 s.
		mmap) args="--mmap 2 --mmap-bytes 16M --verify" ;;
		# Each round maps a file or anonymous memory at random: seed 1
		# starts with anonymous memory, which the debug tier's few
		# rounds need.
		madvise) args="--madvise 2 --seed 1" ;;
		esac
		timeout $((secs + 120)) su -s /bin/sh somuser -c \
			"somrun -- stress-ng $args --timeout ${secs}s --metrics-brief --temp-path /tmp" \
			>/tmp/stress.out 2>&1 &
		pid=$!
		peak=$(peak_while $pid)
		wait $pid
		rc=$?
		sed 's/^/# stress-ng: /' /tmp/stress.out
		[ $rc -eq 124 ] && stuck stress-ng
		faults=$(($(cat $sysfs/faults_pud) + $(cat $sysfs/faults_pmd) + $(cat $sysfs/faults_pte) - faults0))
		echo "# stress-ng --$s: $faults som faults, up to $peak bytes of som in use"
		[ $rc -eq 0 ] && [ "$faults" -gt 0 ] &&
			[ "$(cat $sysfs/free_bytes)" -eq "$free0" ]
		tap $? "stress-ng --$s ${secs}s under somrun as a som group member: exit $rc, on som, pool back to $free0 free bytes"
	done
	chgrp root /dev/som && chmod 0600 /dev/som
}

# The loopback interface, for memcached; users and groups, for memcached's
# -u root and for running stress-ng as a member of the group som.
# shellcheck source=vm/guest/lib/memcached.sh
. /som/guest/lib/memcached.sh
memcached_net

# shellcheck disable=SC2254  # the glob is the point
case somrun_memcached in ${SOM_TEST_ONLY:-*})
	echo "# ==== memcached under somrun"
	app_memcached ;;
esac
# shellcheck disable=SC2254
case somrun_stress_ng in ${SOM_TEST_ONLY:-*})
	echo "# ==== stress-ng under somrun"
	app_stress_ng ;;
esac
